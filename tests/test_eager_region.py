"""Frames of the eager region (called from code that runs without a graph,
e.g. after a break) that hold nothing of torch: the callback decides so once
per argument-type signature, and the hook remembers it in C (issue 26: T5's
config `__getattribute__` reached the callback 197 times per step)."""
import pytest
import torch

import dynamo
from dynamo import _C, convert_frame
from dynamo.testing import CompileCounter


@pytest.fixture
def asked(monkeypatch):
    """Counts frame_may_use_torch calls per code name."""
    counts = {}
    real = convert_frame.frame_may_use_torch

    def spy(code, f_locals, f_globals, func=None):
        counts[code.co_name] = counts.get(code.co_name, 0) + 1
        return real(code, f_locals, f_globals, func)
    monkeypatch.setattr(convert_frame, "frame_may_use_torch", spy)
    return counts


class Config:
    def __init__(self):
        self.width = 4
        self.names = ["a", "b"]

    def get(self, key):
        return self.__dict__[key]


def scale(n, k):
    return n * k


def total(values):
    return sum(values)


def run_eager_region(cfg, n):
    """Called from an optimized frame through dynamo-untraceable code (a
    generator drives the calls, which the callback sees as frames)."""
    return [scale(cfg.get("width"), i) for i in range(n)]


def test_no_torch_frame_asks_once_per_signature(asked):
    cfg = Config()
    opt = dynamo.optimize(CompileCounter())(run_eager_region)
    for _ in range(5):
        assert opt(cfg, 3) == run_eager_region(cfg, 3)
    # one callback for each no-torch code, whatever the number of calls
    assert asked["get"] == 1 and asked["scale"] == 1
    codes = [Config.get.__code__, scale.__code__]
    assert all(_C.cache_entries(c) == [] for c in codes)     # no entries made


def test_same_code_with_tensor_arguments_still_compiles(asked):
    cnt = CompileCounter()
    opt = dynamo.optimize(cnt)(scale)
    inner = dynamo.optimize(cnt)(lambda a, b: scale(a, b))
    assert inner(2, 3) == 6                         # no torch: remembered by types (int, int)
    x = torch.ones(3)
    assert torch.equal(opt(x, 2), x * 2)            # another signature: compiled
    assert cnt.frame_count == 1
    assert torch.equal(inner(x, 3), x * 3)          # lambda frame compiles, scale inlined
    assert cnt.frame_count == 2


def test_containers_are_asked_every_call(asked):
    opt = dynamo.optimize(CompileCounter())(lambda vs: total(vs))
    for _ in range(3):
        assert opt([1, 2, 3]) == 6
    assert asked["total"] == 3                      # a list of ints may hold tensors next call
    cnt = CompileCounter()
    out = dynamo.optimize(cnt)(total)([torch.ones(2), torch.ones(2)])
    assert torch.equal(out, torch.full((2,), 2.0)) and cnt.frame_count == 1


def make_adder(k):
    def add(n):
        return n + k
    return add


def test_closures_are_told_apart_by_identity(asked):
    add_one, add_two = make_adder(1), make_adder(2)
    opt = dynamo.optimize(CompileCounter())(lambda f, n: f(n))
    for _ in range(3):
        assert opt(add_one, 1) == 2
        assert opt(add_two, 1) == 3
    assert asked["add"] == 2                        # one per closure, then remembered
    cnt = CompileCounter()
    add_t = make_adder(torch.ones(2))               # a tensor in the cell: compiled
    assert torch.equal(dynamo.optimize(cnt)(lambda f, n: f(n))(add_t, 1), torch.full((2,), 2.0))
    assert cnt.frame_count == 1


def test_reset_forgets_the_signatures(asked):
    opt = dynamo.optimize(CompileCounter())(lambda n: scale(n, 2))
    opt(1), opt(1)
    assert asked["scale"] == 1
    dynamo.reset()
    opt = dynamo.optimize(CompileCounter())(lambda n: scale(n, 2))
    opt(1), opt(1)
    assert asked["scale"] == 2


def test_remember_eager_refuses_bad_input():
    with pytest.raises(TypeError, match="not a type"):
        _C.remember_eager(scale.__code__, (int, 3), None)
    with pytest.raises(TypeError, match="closure"):
        _C.remember_eager(scale.__code__, (int, int), [1])
    with pytest.raises(TypeError):
        _C.remember_eager("not code", (int,), None)
    assert _C.remember_eager(scale.__code__, (int, int), None) is True
    assert _C.remember_eager(scale.__code__, (int, int), None) is False     # known already
    for t in (float, str, bytes):
        _C.remember_eager(scale.__code__, (t, t), None)
    assert _C.remember_eager(scale.__code__, (complex, complex), None) is False  # all 4 taken
