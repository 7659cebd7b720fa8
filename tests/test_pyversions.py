"""The constructs whose bytecode changed in CPython 3.12 (inlined
comprehensions, LOAD_SUPER_ATTR, BINARY_SLICE/STORE_SLICE, RETURN_CONST,
LOAD_FAST_AND_CLEAR, END_FOR, CALL_INTRINSIC_1, generators wrapped in a
StopIteration handler): each is traced into the graphs 3.11 gets, counted
by frames and ops, on every supported version."""
import sys

import pytest

import torch

import dynamo
from dynamo.testing import CompileCounter, same


def compile_count(fn):
    cnt = CompileCounter()
    return dynamo.optimize(cnt)(fn), cnt


def test_comprehension_with_tensor_ops_is_one_graph():
    # 3.12 inlines the comprehension into the frame, under an exception
    # table entry that restores `v`: that entry is not a user try block
    def f(x, y):
        out = [v * y for v in (x, x + 1, x + 2)]
        return out[0] + out[1] + out[2]

    opt, cnt = compile_count(f)
    x, y = torch.randn(4), torch.randn(4)
    assert same(opt(x, y), f(x, y))
    assert cnt.frame_count == 1 and cnt.op_count == 7


def test_comprehension_restores_the_outer_name():
    # LOAD_FAST_AND_CLEAR / STORE_FAST around the inlined comprehension:
    # the outer `v` (bound or not) is what it was before
    def bound(x):
        v = x + 1
        ys = [v * 2 for v in (x, x)]
        return v + ys[0] + ys[1]

    def unbound(x):
        ys = [v * 2 for v in (x, x)]
        try:
            return v                       # noqa: F821  (NameError: still unbound)
        except NameError:
            return ys[0] - ys[1]

    opt, cnt = compile_count(bound)
    x = torch.randn(3)
    assert same(opt(x), bound(x)) and cnt.frame_count == 1
    opt2 = dynamo.optimize("eager")(unbound)
    assert same(opt2(x), unbound(x))


def test_break_inside_comprehension_runs_the_statement_eagerly():
    calls = []

    def side(t):
        calls.append(1)
        return t.numpy().sum()            # numpy: a graph break

    def f(x):
        a = x * 2
        s = [side(v) for v in (a, a + 1)]
        return a + float(s[0]) + float(s[1])

    opt, cnt = compile_count(f)
    x = torch.randn(3)
    assert same(opt(x), f(x))
    assert len(calls) == 4                 # once per item, eager and compiled
    assert cnt.frame_count >= 1            # `a = x * 2` (and the rest) still compiled


def test_zero_argument_super_in_forward():
    # 3.12: super().forward(x) is LOAD_SUPER_ATTR (global super, __class__, self)
    class Base(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = torch.nn.Linear(4, 4)

        def forward(self, x):
            return self.lin(x).relu()

    class Child(Base):
        def forward(self, x):
            return super().forward(x) * 2

    m = Child()
    opt, cnt = compile_count(m)
    x = torch.randn(2, 4)
    assert same(opt(x), m(x))
    assert cnt.frame_count == 1 and cnt.op_count == 3


def test_slices_and_return_const():
    # 3.12: x[1:3] is BINARY_SLICE, lst[0:2] = ... STORE_SLICE, `return None`
    # RETURN_CONST, +x CALL_INTRINSIC_1
    def f(x, out):
        y = x[1:3] * 2
        lst = [x, x, x]
        lst[0:2] = [y, +y]
        out.append(lst[0] + lst[1] + lst[2][1:3])

    def g(x):
        out = []
        f(x, out)
        return out[0]

    opt, cnt = compile_count(g)
    x = torch.randn(5)
    assert same(opt(x), g(x))
    assert cnt.frame_count == 1


def test_generator_body_is_not_a_try_block():
    # 3.12 wraps generator bodies in a StopIteration -> RuntimeError handler
    def gen(x):
        for i in range(3):
            yield x * i

    def f(x):
        return sum(gen(x))

    opt, cnt = compile_count(f)
    x = torch.randn(3)
    assert same(opt(x), f(x))
    assert cnt.frame_count == 1


def test_for_loop_end_for_and_tensor_branch_resume():
    def f(x):
        acc = x
        for k in range(3):
            acc = acc + k
        if acc.sum() > 0:                  # a break: two resume functions
            return acc * 2
        return acc - 1

    opt, cnt = compile_count(f)
    for x in (torch.ones(3), -torch.ones(3) * 10):
        assert same(opt(x), f(x))
    assert cnt.frame_count == 3


def test_version_constants_match_the_interpreter():
    from dynamo.bytecode import HAS_PRECALL, PY312
    assert PY312 == (sys.version_info >= (3, 12))
    assert HAS_PRECALL == (sys.version_info < (3, 12))


def test_statement_run_eagerly_sees_list_mutations_traced_before():
    # a break inside a try (or, on 3.12, an inlined comprehension) runs the
    # whole statement eagerly after the graph: argument lists the trace
    # mutated before it are written back first (fuzz seed 35)
    def f(x, lst):
        y = x * 2
        del lst[:1]
        try:
            print("", end="")
            n = len(lst)
        except ValueError:
            n = -1
        return y + n, [v % 3 for v in lst if print("", end="") is None]

    opt, cnt = compile_count(f)
    x = torch.randn(2)
    want, got = f(x, [2, 5]), opt(x, [2, 5])
    assert same(got[0], want[0]) and got[1] == want[1] == [2]
    assert cnt.frame_count >= 1


def test_list_rebound_before_a_statement_run_eagerly_keeps_its_value():
    # (fuzz seed 5015966, repro index_error_in_try_after_list_ops_swallowed)
    # the argument list is mutated, then its local rebound to a slice of it:
    # the write-back before the try ran again after the locals were stored,
    # and wrote the argument's items into the slice (n read the wrong item;
    # the fuzz program's IndexError was not raised)
    def f(x, lst, i):
        y = x * 2
        lst.append(5)
        lst = lst[1:]
        try:                               # a tensor op inside: run eagerly
            n = y.sum() * 0 + lst[i]
        except RuntimeError:
            n = -1
        return y + n, lst

    opt, cnt = compile_count(f)
    x = torch.randn(2)
    arg_e, arg_c = [1, 2], [1, 2]
    want, got = f(x, arg_e, 0), opt(x, arg_c, 0)
    assert got[1] == want[1] == [2, 5] and arg_c == arg_e == [1, 2, 5]
    assert same(got[0], want[0])
    with pytest.raises(IndexError):
        opt(x, [1, 2], 2)                  # lst[1:] has two items
    assert cnt.frame_count == 2            # y = x * 2 (once per i); the try runs eagerly


@pytest.mark.skipif(sys.version_info < (3, 12), reason="sys.monitoring (PEP 669) is 3.12+")
def test_sys_monitoring_sees_every_call_of_a_compiled_function():
    # a frame captured whole is called without its frame (a direct call)
    # unless a tracer, profiler or sys.monitoring tool watches starts
    def f(x):
        return x * 2 + 1

    opt, cnt = compile_count(f)
    x = torch.randn(3)
    opt(x)
    mon = sys.monitoring
    tool = next(t for t in range(1, 6) if mon.get_tool(t) is None)
    seen = []
    mon.use_tool_id(tool, "dynamo-test")
    try:
        mon.register_callback(tool, mon.events.PY_START, lambda code, off: seen.append(code.co_name))
        mon.set_events(tool, mon.events.PY_START)
        for _ in range(3):
            assert same(opt(x), f(x))
        mon.set_events(tool, 0)
    finally:
        mon.register_callback(tool, mon.events.PY_START, None)
        mon.free_tool_id(tool)
    assert seen.count("f") == 6            # 3 compiled calls (shadow frames) + 3 eager
    assert cnt.frame_count == 1
    seen.clear()
    opt(x)                                  # nobody watching: no event, still a hit
    assert seen == [] and cnt.frame_count == 1


@pytest.mark.skipif(sys.version_info < (3, 12), reason="3.12 method loads carry a flag bit")
def test_no_break_at_a_312_method_load():
    # LOAD_ATTR / LOAD_SUPER_ATTR with the method bit leave NULL|self under
    # the method: a break there handed the NULL to the resume function and
    # CPython crashed (BERT under transformers 5.17: super().__setitem__ in
    # ModelOutput.__setattr__)
    from dynamo.bytecode import decode
    from dynamo.tracer.translator import InstructionTranslatorBase

    class A:
        def f(self, x):
            super().g(x)
            return x.foo(1) + x.bar

    t = object.__new__(InstructionTranslatorBase)
    t.with_stack = []
    loads = {(i.opname, i.argval): t.can_break_at(i) for i in decode(A.f.__code__)
             if i.opname in ("LOAD_ATTR", "LOAD_SUPER_ATTR")}
    assert loads == {("LOAD_SUPER_ATTR", "g"): False, ("LOAD_ATTR", "foo"): False,
                     ("LOAD_ATTR", "bar"): True}
