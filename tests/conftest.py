"""Shared fixtures: every test starts from empty caches and default config."""
import pytest

import dynamo
from dynamo import config


@pytest.fixture(autouse=True)
def fresh_dynamo():
    dynamo.reset()
    saved = {k: getattr(config, k) for k in config.defaults()}
    yield
    for k, v in saved.items():
        setattr(config, k, v)
    dynamo.reset()
