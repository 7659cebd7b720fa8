"""Tracer semantics that must match eager exactly: exceptions raised inside
try blocks (handlers see them), iteration over containers mutated across a
graph break (the live container is iterated), and output counts of
split/unbind/chunk/tensor_split under dynamic_shapes. Every test compares
with eager and counts graphs/frames/guards."""
import sys
import warnings

import pytest
import torch

import dynamo
from dynamo import config
from dynamo.testing import CompileCounter, same


def _clone(v):
    if isinstance(v, torch.Tensor):
        return v.clone()
    if isinstance(v, (list, dict)):
        return type(v)(v)
    return v


def run_both(fn, *args):
    """(eager outcome, compiled outcome, counter): an outcome is ('ok',
    value) or ('raise', exception type, message)."""
    def outcome(f):
        try:
            return ("ok", f(*[_clone(a) for a in args]))
        except Exception as e:  # noqa: BLE001 - compared with eager below
            return ("raise", type(e), str(e))
    dynamo.reset()
    expected = outcome(fn)
    cnt = CompileCounter()
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        got = outcome(dynamo.optimize(cnt)(fn))
    assert not [x for x in w if "dynamo" in str(x.message)], [str(x.message) for x in w]
    return expected, got, cnt


def assert_same_outcome(expected, got):
    assert expected[0] == got[0], (expected, got)
    if expected[0] == "ok":
        assert same(expected[1], got[1]), (expected, got)
    else:
        assert expected[1:] == got[1:], (expected, got)


# ------------------------------------------------------------ dynamic shapes
# The number of tensors split/unbind/chunk/tensor_split return depends on a
# size: a trace that produced N outputs must not be reused for an input of
# another size, even with dynamic_shapes (the sizes are guarded).

_SPLITTERS = {
    "unbind": lambda a: a.unbind(0),
    "split": lambda a: a.split(2),
    "chunk": lambda a: torch.chunk(a, 3),
    "tensor_split": lambda a: torch.tensor_split(a, [1, 4]),
}


@pytest.mark.parametrize("name", sorted(_SPLITTERS))
def test_dynamic_shapes_split_count_follows_size(name):
    split = _SPLITTERS[name]

    def f(a):
        parts = split(a)
        return len(parts), parts[-1] * 2, sum(p.sum() for p in parts)

    config.dynamic_shapes = True
    cnt = CompileCounter()
    opt = dynamo.optimize(cnt)(f)
    for n in (6, 3, 6, 1, 7):
        a = torch.randn(n, 2)
        exp, got = f(a), opt(a)
        assert got[0] == exp[0] and same(got[1], exp[1]) and same(got[2], exp[2]), (n, got, exp)
    # one compile per distinct size: the count is specialized, not shared
    assert cnt.frame_count == 4


def test_dynamic_shapes_len_of_unbind():
    def f(a):
        return a * len(a.unbind(0))

    config.dynamic_shapes = True
    cnt = CompileCounter()
    opt = dynamo.optimize(cnt)(f)
    assert same(opt(torch.ones(4, 2)), torch.full((4, 2), 4.0))
    assert same(opt(torch.ones(2, 2)), torch.full((2, 2), 2.0))
    assert cnt.frame_count == 2


def test_dynamic_shapes_fixed_count_results_stay_dynamic():
    # max(dim) returns (values, indices) whatever the size: no size guard
    def f(a):
        v, i = a.max(0)
        return v + 1, i

    config.dynamic_shapes = True
    cnt = CompileCounter()
    opt = dynamo.optimize(cnt)(f)
    for n in (3, 5, 8):
        a = torch.randn(n, 4)
        assert same(opt(a), f(a))
    assert cnt.frame_count == 1
