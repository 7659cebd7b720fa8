"""Constructs that ended the graph on models of the zoo (issue 31:
transformers' AutoModel mapping, timm families, torchvision), each written
as the library writes it (the library's own code where transformers has
it) and counted: graphs and breaks of the first call, outputs equal eager,
and where the construct leaves state behind, the recompiles of a second
call."""
from types import FunctionType

import torch

import dynamo
from dynamo import records
from dynamo.testing import CompileCounter, same

X = torch.randn(2, 4)


def run(fn, *args, graphs=1, breaks=0, **kwargs):
    """Compiled result of fn(*args, **kwargs), checked against eager and
    with (graphs, breaks) of its first call counted."""
    dynamo.reset()
    expected = fn(*args, **kwargs)
    cnt = CompileCounter()
    start = records.mark()
    got = dynamo.optimize(cnt)(fn)(*args, **kwargs)
    reasons = [b.reason for r in records.records_since(start) for b in r.break_reasons]
    assert (cnt.frame_count, len(reasons)) == (graphs, breaks), reasons
    assert same(expected, got)
    return got


# ------------------------------------------------ __class__ of a function
def _log_api_usage_once(obj):
    # torchvision.utils._log_api_usage_once, as torchvision 0.2x writes it
    module = obj.__module__
    if not module.startswith("torchvision"):
        module = f"torchvision.internal.{module}"
    name = obj.__class__.__name__
    if isinstance(obj, FunctionType):
        name = obj.__name__
    torch._C._log_api_usage_once(f"{module}.{name}")


def stochastic_depth(x, p):
    if not torch.jit.is_scripting() and not torch.jit.is_tracing():
        _log_api_usage_once(stochastic_depth)
    return x * p


def test_class_of_a_function_is_its_type():
    run(stochastic_depth, X, 0.5)

    def f(x):
        inner = lambda y: y + 1        # noqa: E731 (a function made in the frame)
        assert inner.__class__ is FunctionType and getattr(stochastic_depth, "__class__") is FunctionType
        return inner(x)

    run(f, X)
