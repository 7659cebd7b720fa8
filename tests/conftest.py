"""Shared fixtures: every test starts from empty caches and default config.
Session check: no workload subprocess left its /dev/shm/dynamo-<pid> behind."""
import pytest

import dynamo
from dynamo import config
from shm_util import leftover_shm_files, shm_files


@pytest.fixture(autouse=True)
def fresh_dynamo():
    dynamo.reset()
    saved = {k: getattr(config, k) for k in config.defaults()}
    yield
    for k, v in saved.items():
        setattr(config, k, v)
    dynamo.reset()


_shm_before = set()     # /dev/shm/dynamo-* present when the session started


def pytest_sessionstart(session):
    _shm_before.update(shm_files())


def pytest_sessionfinish(session, exitstatus):
    """Fails the session when a file of a process that is gone appeared during
    it: a test ended a workload without atexit and without the fatal-signal
    handler (SIGKILL, or DYNAMO_TELEMETRY_KEEP=1) and did not remove the
    file (tests/shm_util.py)."""
    left = leftover_shm_files(_shm_before)
    if not left:
        return
    reporter = session.config.pluginmanager.get_plugin("terminalreporter")
    if reporter is not None:
        reporter.write_line(f"\nERROR: telemetry files left behind by dead test processes: "
                            f"{', '.join(left)}", red=True)
    session.exitstatus = pytest.ExitCode.TESTS_FAILED


def pytest_configure(config):
    """DYNAMO_TEST_DEVICE=cuda runs the tests with that default device for
    new tensors (torch.set_default_device): the seed examples on a GPU."""
    import os
    device = os.environ.get("DYNAMO_TEST_DEVICE")
    if device:
        import torch
        torch.set_default_device(device)
