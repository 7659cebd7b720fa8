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


@pytest.fixture(autouse=True)
def _cut_loops(monkeypatch):
    # the iteration tests cut their loops at each break and resume inside
    # them (config.skip_frame_on_loop_break off; by default such a frame
    # runs eagerly, as torch.compile's does, and there is nothing to check)
    monkeypatch.setattr(config, "skip_frame_on_loop_break", False)


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
    # the count is guarded, never shared across counts: one compile per
    # distinct size, except where the ShapeEnv proves the same count for a
    # range of sizes (chunk(3) of 6 and 7 rows: 3 parts each)
    assert cnt.frame_count == {"chunk": 3, "tensor_split": 3}.get(name, 4)


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


# ------------------------------------------------------------ try blocks
# A graph runs outside the user's try blocks. Ops inside one are traced
# (config.trace_try_regions) when the frame can be re-run eagerly from its
# start if the graph raises (then the handlers see the exceptions of its
# ops, raised by the real kernels); an op whose kernel is known to refuse
# the inputs (softmax on int64: the probe on real values) or that fails on
# the example values (shape mismatch), and any break inside the try, make
# the try region run eagerly, keeping the graph of what came before it.
# Both reach the handler.

I64 = torch.arange(4)
log = []


def softmax_or_zero(x):
    y = x + 1
    try:
        y = y.softmax(-1)
    except RuntimeError:
        y = y * 0
    return y + 2


def test_try_runtime_only_op_error_reaches_handler():
    exp, got, cnt = run_both(softmax_or_zero, I64)
    assert exp[0] == "ok" and same(exp[1], torch.full((4,), 2))
    assert_same_outcome(exp, got)
    # x + 1 before the try, y + 2 after it (in the resume function called
    # where the try statement ends); the try statement itself runs eagerly
    assert cnt.frame_count == 2 and cnt.op_count == 2


def test_try_issue_case_nothing_before_the_try():
    def f(a):
        try:
            a = a.softmax(-1)
        except RuntimeError:
            a = a * 0
        return a
    exp, got, cnt = run_both(f, I64)
    assert_same_outcome(exp, got)
    assert cnt.frame_count == 0          # only the try and after: eager


def test_try_no_exception_same_result_prefix_graph():
    exp, got, cnt = run_both(softmax_or_zero, torch.randn(4))
    assert_same_outcome(exp, got)
    # float: the try is traced, one graph for the frame
    assert cnt.frame_count == 1 and cnt.op_count == 3


def test_try_first_statement_code_after_it_compiles():
    def f(a):
        try:
            a = a.softmax(-1)
        except RuntimeError:
            a = a * 0
        return a + 1, a * 2
    for x in (I64, torch.randn(4)):
        exp, got, cnt = run_both(f, x)
        assert_same_outcome(exp, got)
        # int64: nothing before the try, the rewritten frame starts with it
        # and compiles what follows; float: one graph of the whole frame
        assert cnt.frame_count == 1 and cnt.op_count == (2 if x.dtype == torch.int64 else 3)


def test_try_trace_time_op_error_reaches_handler():
    def f(x):
        y = x * 2
        try:
            y = y @ y                     # (2, 3) @ (2, 3): shape error
        except RuntimeError:
            y = y + 9
        return y
    exp, got, cnt = run_both(f, torch.ones(2, 3))
    assert_same_outcome(exp, got)
    assert cnt.frame_count == 1


def test_try_python_errors_on_constants_reach_handler():
    def f(x, d):
        y = x + 1
        try:
            y = y / (1 // 0)
        except ZeroDivisionError:
            y = y - 1
        try:
            y = y + d["missing"]
        except KeyError:
            y = y * 3
        try:
            y = y + int("nope")
        except ValueError:
            y = y + 5
        return y
    exp, got, cnt = run_both(f, torch.ones(3), {"a": 1})
    assert_same_outcome(exp, got)
    assert cnt.frame_count == 1


def test_python_error_outside_try_raises_at_run_time():
    def f(x, d):
        y = x + 1
        return y + d["missing"]
    exp, got, cnt = run_both(f, torch.ones(3), {"a": 1})
    assert exp[1] is KeyError
    assert_same_outcome(exp, got)
    assert cnt.frame_count == 1          # the graph before the failing lookup


def test_try_finally_runs_on_op_error():
    def f(x):
        y = x + 1
        try:
            y = y.softmax(-1)
        finally:
            log.append("finally")
        return y
    log.clear()
    exp, got, cnt = run_both(f, I64)
    assert exp[0] == "raise" and exp[1] is NotImplementedError
    assert_same_outcome(exp, got)
    assert log == ["finally", "finally"]
    assert cnt.frame_count == 1


def test_nested_try_outer_handler_catches():
    def f(x):
        y = x + 1
        try:
            try:
                y = y.softmax(-1)
            except KeyError:
                y = y - 100
        except RuntimeError:
            y = y + 100
        return y * 2
    exp, got, cnt = run_both(f, I64)
    assert same(exp[1], (I64 + 101) * 2)
    assert_same_outcome(exp, got)
    assert cnt.frame_count == 2


def test_grad_mode_with_inside_try():
    def f(x):
        y = x + 1
        try:
            with torch.no_grad():
                y = y.softmax(-1)
        except RuntimeError:
            y = y + 7
        return y
    exp, got, cnt = run_both(f, I64)
    assert_same_outcome(exp, got)
    assert cnt.frame_count == 1
    assert torch.is_grad_enabled()


def _softmax_helper(a):
    return a.softmax(-1)


def test_error_in_inlined_function_called_inside_try():
    def f(x):
        y = x + 1
        try:
            y = _softmax_helper(y)
        except RuntimeError:
            y = y + 8
        return y * 2
    exp, got, cnt = run_both(f, I64)
    assert same(exp[1], (I64 + 9) * 2)
    assert_same_outcome(exp, got)
    # the prefix graph and y * 2 after; the helper, called from the eager
    # try, compiles no graph: its int64 softmax is refused by the kernel
    # probe (output_graph._probe), so it runs eagerly and raises into the
    # real handler
    assert cnt.frame_count == 2


def _guarded_softmax(a):
    try:
        return a.softmax(-1)
    except RuntimeError:
        return a * 0


def test_try_inside_inlined_function():
    def f(x):
        y = x + 1
        y = _guarded_softmax(y)
        return y + 3
    exp, got, cnt = run_both(f, I64)
    assert same(exp[1], torch.full((4,), 3))
    assert_same_outcome(exp, got)
    # the call breaks: graph before it, the helper eager (its try has no
    # op before it), `y + 3` in the resume function's graph
    assert cnt.frame_count == 2


def test_graph_break_inside_try_keeps_prefix_graph():
    def f(x):
        y = x + 1
        try:
            print("break")
            y = y @ y
        except RuntimeError:
            y = y + 9
        return y * 2
    exp, got, cnt = run_both(f, torch.ones(2, 3))
    assert_same_outcome(exp, got)
    assert cnt.frame_count == 2           # before and after the try


def test_try_inside_loop_exception_each_iteration():
    def f(x, n):
        y = x + 1
        for i in range(n):
            try:
                y = y.softmax(-1) if i % 2 else y + i
            except RuntimeError:
                y = y * 2
        return y
    exp, got, cnt = run_both(f, I64, 4)
    assert_same_outcome(exp, got)
    assert cnt.frame_count == 1


def test_try_in_nopython_mode_is_unsupported_without_trace_try_regions(monkeypatch):
    def f(x):
        try:
            y = x + 1
        except RuntimeError:
            y = x
        return y
    cnt = CompileCounter()
    assert same(dynamo.optimize(cnt, nopython=True)(f)(torch.ones(2)), torch.full((2,), 2.0))
    assert cnt.frame_count == 1
    dynamo.reset()
    monkeypatch.setattr(dynamo.config, "trace_try_regions", False)
    with pytest.raises(dynamo.exc.Unsupported, match="inside a try block"):
        dynamo.optimize(CompileCounter(), nopython=True)(f)(torch.ones(2))


# ------------------------------------------------------------ iteration
# A list iterator indexes the live list: items appended (or removed) while
# iterating are seen, also across a graph break (the resume function gets
# the list and the position, not a snapshot). A dict changed while iterated
# raises RuntimeError like eager. Containers only an iterator can reach
# keep the snapshot (nothing can change them), so such loops keep compiling.

def _brk():
    print("break")


def test_list_appended_while_iterated_across_break_issue_case():
    def f(lst, x):
        for e in lst:
            _brk()
            if len(lst) < 6:
                lst.append(e + 100)
        return x + sum(lst)
    lst = [1, 2]
    exp, got, cnt = run_both(f, lst, torch.zeros(1))
    assert same(exp[1], torch.tensor([1 + 2 + 101 + 102 + 201 + 202.]))
    assert_same_outcome(exp, got)
    assert cnt.frame_count == 1           # x + sum(lst) after the loop


def test_local_list_appended_while_iterated_across_break():
    def f(x):
        lst = [1, 2]
        for e in lst:
            x = x + e
            _brk()
            if len(lst) < 6:
                lst.append(e + 100)
        return x, lst
    exp, got, cnt = run_both(f, torch.zeros(1))
    assert exp[1][1] == [1, 2, 101, 102, 201, 202]
    assert_same_outcome(exp, got)
    # one graph before the first break, then one per resumed iteration
    assert cnt.frame_count == 6


def test_list_appended_while_iterated_without_break():
    def f(x):
        lst = [1, 2]
        for e in lst:
            x = x + e
            if len(lst) < 6:
                lst.append(e + 100)
        return x, lst
    exp, got, cnt = run_both(f, torch.zeros(1))
    assert_same_outcome(exp, got)
    assert cnt.frame_count == 1 and cnt.op_count == 6


def test_list_popped_while_iterated_across_break():
    def f(x):
        lst = [1, 2, 3]
        for e in lst:
            x = x + e
            _brk()
            lst.pop()
        return x, lst
    exp, got, cnt = run_both(f, torch.zeros(1))
    assert exp[1][1] == [1]
    assert_same_outcome(exp, got)
    assert cnt.frame_count == 2


def test_enumerate_and_zip_over_mutated_list():
    def f(x):
        lst = [1, 2]
        for i, e in enumerate(lst):
            x = x + e * i
            if len(lst) < 5:
                lst.append(e + 10)
        for a, b in zip(lst, range(100)):
            x = x * 2 + a + b
            if len(lst) < 7:
                lst.append(a)
        return x, lst
    exp, got, cnt = run_both(f, torch.zeros(1))
    assert_same_outcome(exp, got)
    assert cnt.frame_count == 1


def test_enumerate_over_mutated_list_across_break():
    def f(x):
        lst = [1, 2]
        for i, e in enumerate(lst):
            x = x + e * i
            _brk()
            if len(lst) < 6:
                lst.append(e + 100)
        return x, lst
    exp, got, cnt = run_both(f, torch.zeros(1))
    assert exp[1][1] == [1, 2, 101, 102, 201, 202]
    assert_same_outcome(exp, got)
    # the enumerate over a list code after the break can reach is handed on
    # as the real object: the resumed loop runs eagerly
    assert cnt.frame_count == 1


def test_dict_changed_while_iterated_raises_like_eager():
    def f(x):
        d = {"a": 1}
        for k in d:
            x = x + d[k]
            d[k + "x"] = 1
        return x
    exp, got, cnt = run_both(f, torch.zeros(1))
    assert exp[1] is RuntimeError
    assert_same_outcome(exp, got)
    assert cnt.frame_count == 0           # the loop cannot be cut: eager


def test_dict_changed_across_break_raises_like_eager():
    def f(x, d):
        for k in d:
            x = x + d[k]
            _brk()
            d[k + "x"] = 1
        return x
    exp, got, cnt = run_both(f, torch.zeros(1), {"a": 1, "b": 2})
    assert exp[1] is RuntimeError and "changed size" in exp[2]
    assert_same_outcome(exp, got)
    assert cnt.frame_count == 1


def test_dict_iterated_unchanged_across_break():
    def f(x, d):
        for k in d:
            x = x + d[k]
            _brk()
        return x * 2
    exp, got, cnt = run_both(f, torch.zeros(1), {"a": 1, "b": 2})
    assert_same_outcome(exp, got)
    assert cnt.frame_count == 1


def test_range_tuple_zip_loops_keep_compiling_across_breaks():
    def f(x, t):
        for i in range(3):
            _brk()
            x = x + t[i]
        for a, b in zip(t, [4, 5, 6]):
            _brk()
            x = x * a + b
        return x
    exp, got, cnt = run_both(f, torch.zeros(1), (1, 2, 3))
    assert_same_outcome(exp, got)
    # snapshots (nothing else reaches range/tuple/the literal list): every
    # resumed iteration is traced, one graph per iteration
    assert cnt.frame_count == 6


def test_try_finally_normal_path_then_code_after_compiles():
    def f(x):
        y = x + 1
        try:
            y = y.softmax(-1)
        finally:
            log.append("finally")
        return y * 3
    log.clear()
    x = torch.randn(4)
    exp, got, cnt = run_both(f, x)
    assert_same_outcome(exp, got)
    assert log == ["finally", "finally"]
    assert cnt.frame_count == 1           # the try traced: one graph


def test_try_in_while_loop_each_iteration():
    def f(x, n):
        y = x + 1
        i = 0
        while i < n:
            try:
                y = y.softmax(-1) if i % 2 else y + i
            except RuntimeError:
                y = y * 2
            i += 1
        return y - 1
    exp, got, cnt = run_both(f, I64, 4)
    assert_same_outcome(exp, got)
    # the graph before the loop, then one per resumed iteration and the tail
    assert cnt.frame_count >= 2


def test_try_return_inside_body():
    def f(x):
        y = x + 1
        try:
            return y.softmax(-1)
        except RuntimeError:
            y = y * 5
        return y + 1
    for x in (I64, torch.randn(4)):
        exp, got, cnt = run_both(f, x)
        assert_same_outcome(exp, got)


def test_try_local_unbound_after_handler_raises_like_eager():
    def f(x):
        y = x + 1
        try:
            z = y.softmax(-1)
        except RuntimeError:
            pass
        return z * 2
    exp, got, cnt = run_both(f, I64)
    assert exp[1] is UnboundLocalError
    assert_same_outcome(exp, got)
    # z may be unbound where the try ends: the rest runs eagerly instead
    assert cnt.frame_count == 1


def test_grad_mode_with_block_containing_break():
    def f(x):
        with torch.no_grad():
            y = x * 2
            _brk()
            y = y + 1
        return y * x
    x = torch.randn(3, requires_grad=True)
    dynamo.reset()
    cnt = CompileCounter()
    got = dynamo.optimize(cnt)(f)(x)
    exp = f(x)
    assert same(got, exp) and got.requires_grad == exp.requires_grad
    # x * 2; then y + 1, the block's exit (traced: it restores the grad
    # mode in the graph) and y * x, all in the resume function's graph
    assert cnt.frame_count == 2 and torch.is_grad_enabled()


def test_nested_zip_enumerate_snapshot_across_break():
    def f(x, t):
        out = []
        for (i, a), b in zip(enumerate(t), (10, 20, 30)):
            _brk()
            x = x + a * i + b
            out.append(i)
        return x, out
    exp, got, cnt = run_both(f, torch.zeros(1), (1, 2, 3))
    assert_same_outcome(exp, got)
    # nothing but the iterators reaches the tuples: snapshots, and every
    # resumed iteration is compiled
    assert cnt.frame_count == 3


def test_one_list_under_two_names_across_a_break():
    """`l0 = lst`, then a break: the resume function gets both names; a
    mutation through one must be seen through the other (one variable,
    guarded SAME_OBJECT), and a call passing two lists must not reuse a
    trace that took them as one (and the reverse)."""
    def f(x, lst):
        l0 = lst
        print("n", len(l0))
        lst.append(1)
        return x + len(l0)

    def g(x, a, b):
        a.append(1)
        return x + len(b)

    cnt = CompileCounter()
    of, og = dynamo.optimize(cnt)(f), dynamo.optimize(cnt)(g)
    assert of(torch.zeros(1), []).item() == f(torch.zeros(1), []).item() == 1
    assert og(torch.zeros(1), [0], [0]).item() == 1
    one = [0]
    assert og(torch.zeros(1), one, one).item() == 2 and one == [0, 1]
    assert og(torch.zeros(1), [0], [0]).item() == 1
    assert cnt.frame_count == 3      # the graph of f's resume function; g twice (distinct, aliased)


# ------------------------------------------------------------ writes under no_grad

def test_write_through_a_view_in_a_no_grad_frame_compiles():
    """(fuzz tracer error, seed 8300028: 0.8 % of the device runs' programs
    fell back to eager with it) `y.view(-1)[0] = 5` in a frame entered
    under no_grad, y a leaf requiring grad: reading the autograd state of
    the view's example afterwards raises in any grad mode, and the kernel
    probe of the write did, so the frame ran eagerly with a warning. It
    compiles now, one graph, with eager's result and eager's write to y."""
    def f(y):
        y.view(-1)[0] = 5
        return y + 1

    def leaf():
        return torch.arange(6.0).reshape(2, 3).clone().requires_grad_(True)   # not a view
    cnt = CompileCounter()
    a, b = leaf(), leaf()
    with torch.no_grad(), warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        want = f(a)
        got = dynamo.optimize(cnt)(f)(b)
    assert not [x for x in w if "dynamo" in str(x.message)], [str(x.message) for x in w]
    assert (cnt.frame_count, cnt.op_count) == (1, 3)
    assert same(got, want) and got[0, 0].item() == 6.0
    assert same(a, b) and b[0, 0].item() == 5.0 and b.requires_grad


@pytest.mark.parametrize("read_leaf", [False, True])
def test_autograd_state_of_a_view_written_in_a_no_grad_frame(read_leaf):
    """(repro view_of_leaf_written_under_no_grad_loses_requires_grad, fuzz
    seed 9310358) y = x[:1] made with grad on (x a leaf requiring grad),
    then `y.zero_()` in a no_grad frame: eager's y still requires grad and
    is not a leaf. The kernel probe read the fake view's is_leaf after the
    write, which regenerates its grad_fn, fails on a fake view and left
    the example without requires_grad: y.requires_grad was folded to False
    (and a traced `y.is_leaf` to True). Neither is read from a view now."""
    def f(x, y):
        y.zero_()
        leaf = y.is_leaf if read_leaf else None
        return y.requires_grad, leaf, y * 2

    def inputs():
        x = torch.randn(5, 3).t().requires_grad_()
        return x, x[:1]
    cnt = CompileCounter()
    a, b = inputs(), inputs()          # the views made with grad on
    with torch.no_grad():
        want = f(*a)
        got = dynamo.optimize(cnt)(f)(*b)
    assert want[:2] == got[:2] == (True, False if read_leaf else None)
    assert (cnt.frame_count, cnt.op_count) == (1, 2)


# ------------------------------------------------------------ `in` and ==
# list/tuple `in` asks `e is x or e == x` of each element e (the element on
# the left, as CPython's PyObject_RichCompareBool): a user __eq__ is
# inlined, identity comes first (a NaN is in a list holding that very NaN
# object), and a tensor's == needs its data (a break, or eager's error).
# Issue 29.1: the tracer answered by identity alone.

def _each_call(fn, *argsets):
    """Run eager and one optimized wrapper of fn on each argument set in
    turn (the wrapper keeps its cache; lists are copied, their items and
    everything else passed as they are: identity matters here); assert
    equal outcomes; return the counter."""
    dynamo.reset()
    cnt = CompileCounter()
    opt = dynamo.optimize(cnt)(fn)

    def outcome(f, args):
        try:
            return ("ok", f(*[list(a) if type(a) is list else a for a in args]))
        except Exception as e:  # noqa: BLE001 - compared with eager below
            return ("raise", type(e), str(e))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for args in argsets:
            assert_same_outcome(outcome(fn, args), outcome(opt, args))
    return cnt


class _P:
    def __init__(self, v):
        self.v = v

    def __eq__(self, other):
        return isinstance(other, _P) and other.v == self.v

    __hash__ = None


class _Never:
    def __eq__(self, other):
        return False


class _EqInt:
    """== against ints, whichever side it is on."""
    def __init__(self, v):
        self.v = v

    def __eq__(self, other):
        return other == self.v


_GLOBAL_PS = [_P(0), _P(5)]
_NAN = float("nan")
_X = torch.zeros(1)


def test_in_calls_user_eq_issue_case():
    def g(x, e, lst):
        return x + (1 if e in lst else 2)
    cnt = _each_call(g, (_X, _P(0), [_P(0), _P(5)]), (_X, _P(9), [_P(0), _P(5)]),
                     (_X, _P(0), [_P(0), _P(5)]), (_X, _P(5), [_P(0), _P(5)]))
    assert g(_X, _P(0), [_P(0), _P(5)]).item() == 1
    # the fields __eq__ read are guarded, not the objects: fresh equal
    # objects hit; one entry per outcome of the comparisons
    assert cnt.frame_count == 3 and cnt.op_count == 3


def test_not_in_tuple_and_global_list_call_user_eq():
    def g(x, e, lst):
        return x + (1 if e not in tuple(lst) else 2) * 10 + (1 if e in _GLOBAL_PS else 2)
    cnt = _each_call(g, (_X, _P(0), [_P(0), _P(5)]), (_X, _P(9), [_P(0), _P(5)]),
                     (_X, _P(5), [_P(1)]))
    assert g(_X, _P(5), [_P(1)]).item() == 11
    assert cnt.frame_count == 3


def test_in_asks_identity_before_eq():
    """An object whose __eq__ is always False is in a list holding it."""
    def g(x, e, lst):
        return x + (1 if e in lst else 2)
    never = _Never()
    cnt = _each_call(g, (_X, never, [never]), (_X, _Never(), [never]), (_X, never, [never]))
    assert g(_X, never, [never]).item() == 1
    assert cnt.frame_count == 2           # ID_MATCH: the other object recompiles


def test_nan_in_list_is_the_same_object():
    def g(x, e, lst):
        return x + (1 if e in lst else 2)
    other_nan = float("nan")
    cnt = _each_call(g, (_X, _NAN, [_NAN]), (_X, other_nan, [_NAN]), (_X, _NAN, [1.0, _NAN]),
                     (_X, _NAN, [_NAN]))
    assert g(_X, _NAN, [_NAN]).item() == 1 and g(_X, other_nan, [_NAN]).item() == 2
    # EQUALS_MATCH takes any NaN for a NaN: SAME_OBJECT tells the objects apart
    assert cnt.frame_count == 3


def test_nan_in_constant_tuple_runs_eagerly_with_the_real_objects():
    """A tuple of constants is one constant; its items have no source of
    their own, so `in` with a NaN breaks the graph, and the break runs it
    on the call's own objects (not the trace's)."""
    def g(x, e, t):
        return x + (1 if e in t else 2)
    _each_call(g, (_X, _NAN, (_NAN, 2.0)), (_X, float("nan"), (_NAN, 2.0)),
               (_X, _NAN, (_NAN, 2.0)))


def test_in_compares_element_on_the_left_and_reflects():
    def g(x, e, lst):
        return x + (1 if e in lst else 2)
    cnt = _each_call(g, (_X, 3, [_EqInt(3)]), (_X, 4, [_EqInt(3)]),
                     (_X, _EqInt(3), [1, 3]), (_X, _EqInt(4), [1, 3]))
    assert g(_X, 4, [_EqInt(3)]).item() == 2 and g(_X, _EqInt(3), [1, 3]).item() == 1
    assert cnt.frame_count == 4


def test_list_count_and_index_call_user_eq():
    def g(x, lst, e):
        return x + lst.count(e) * 10 + lst.index(e)
    cnt = _each_call(g, (_X, [_P(1), _P(0), _P(0)], _P(0)), (_X, [_P(1), _P(0), _P(2)], _P(2)),
                     (_X, [_NAN, 1.0, _NAN], _NAN))
    assert cnt.frame_count == 3


def test_eq_and_ne_dispatch_like_python():
    class Sub(_P):
        def __eq__(self, other):
            return "sub"                   # the subclass's reflected method goes first

    def g(x, a, b):
        return x + (1 if a == b else 2) * 10 + (1 if a != b else 2) + (4 if (a == b) == "sub" else 0)
    never = _Never()
    cnt = _each_call(g, (_X, _P(1), _P(1)), (_X, _P(1), _P(2)), (_X, never, never),
                     (_X, _P(1), Sub(1)), (_X, object(), object()))
    assert g(_X, never, never).item() == 21        # __ne__ inverts the class's __eq__
    assert cnt.frame_count == 5


def _raised(fn, *args):
    try:
        fn(*args)
    except Exception as e:  # noqa: BLE001 - the test looks at it
        return e
    raise AssertionError("no exception")


def test_in_over_tensors_identity_then_data():
    def g(x, t, lst):
        return x + (1 if t in lst else 2)
    t, u = torch.ones(3), torch.ones(3)
    cnt = _each_call(g, (_X, t, [t]), (_X, t, [None, t]), (_X, t, [None]))
    assert cnt.frame_count == 3 and cnt.op_count == 3      # no break: identity and None decide
    # t == u is a tensor of 3 items: eager raises at bool(); so must the compiled call
    assert isinstance(_raised(g, _X, t, [u, t]), RuntimeError)
    _each_call(g, (_X, t, [u, t]))
    s = torch.ones(1)
    _each_call(g, (_X, s, [torch.ones(1)]), (_X, s, [torch.zeros(1)]))


def test_is_between_constants_is_guarded():
    def g(x, a, b):
        return x + (1 if a is b else 2)
    big = 10 ** 6
    cnt = _each_call(g, (_X, big, big), (_X, big, int(str(big))), (_X, _NAN, _NAN),
                     (_X, _NAN, float("nan")), (_X, big, big))
    assert g(_X, big, big).item() == 1 and g(_X, big, int(str(big))).item() == 2
    assert cnt.frame_count == 4           # SAME_OBJECT(b, a) both ways, for ints and NaNs


# ------------------------------------------------------------ reversed() of a live list
# CPython's reversed list iterator reads the list by index at each step:
# writes to items not yet visited are seen, and it stops once its index is
# outside a list that shrank. Issue 29.2: the tracer iterated a snapshot.

def _rev_write(lst):
    out = []
    for e in reversed(lst):
        lst[0] = e + 100          # writes the list being iterated
        out.append(e)
    return out[-1]


@pytest.mark.parametrize("dynamic", [False, True])
def test_reversed_sees_writes_issue_case(dynamic):
    config.dynamic_shapes = dynamic
    exp, got, cnt = run_both(_rev_write, [torch.zeros(2), torch.ones(2)])
    assert same(exp[1], torch.full((2,), 101.))
    assert_same_outcome(exp, got)
    assert cnt.frame_count == 1 and cnt.op_count == 2


@pytest.mark.parametrize("dynamic", [False, True])
def test_reversed_stops_when_the_list_shrinks(dynamic):
    def f(x, lst):
        for e in reversed(lst):
            x = x * 2 + e
            lst.pop()
            if lst:
                lst.pop()
        return x, lst
    config.dynamic_shapes = dynamic
    cnt = _each_call(f, (_X, [1, 2, 3, 4, 5]), (_X, [1, 2, 3]), (_X, [1, 2, 3, 4, 5]))
    assert cnt.frame_count == 2            # one per length


def test_reversed_list_written_across_breaks():
    """A break in the loop hands the resume function the live list and the
    reversed position (resume.REVERSED_LIST_ITER): each resumed iteration
    is traced and sees the write."""
    def f(x, lst):
        for e in reversed(lst):
            x = x + e
            _brk()
            lst[0] = e + 100
        return x, lst
    exp, got, cnt = run_both(f, torch.zeros(1), [1, 2, 3])
    assert exp[1][1] == [202, 2, 3] and exp[1][0].item() == 3 + 2 + 102
    assert_same_outcome(exp, got)
    assert cnt.frame_count == 3            # one graph before the first break, one per resume

    def g(x):
        lst = [1, 2, 3]
        for e in reversed(lst):
            x = x + e
            _brk()
            lst[0] = e + 100
        return x, lst
    exp, got, cnt = run_both(g, torch.zeros(1))
    assert_same_outcome(exp, got)
    assert cnt.frame_count == 3


def test_reversed_iterator_advanced_then_list_written_after_break():
    def f(x, lst):
        it = reversed(lst)
        a = next(it)
        _brk()
        lst[0] = 50
        for e in it:
            x = x + e
        return x + a
    exp, got, _ = run_both(f, torch.zeros(1), [1, 2, 3])
    assert exp[1].item() == 50 + 2 + 3
    assert_same_outcome(exp, got)


@pytest.mark.parametrize("dynamic", [False, True])
def test_iter_enumerate_zip_see_writes_to_the_list(dynamic):
    def fwd(lst):
        out = []
        for e in lst:
            lst[-1] = e + 100
            out.append(e)
        return out[-1]

    def enum(x, lst):
        for i, e in enumerate(lst):
            x = x + e * i
            if i + 1 < len(lst):
                lst[i + 1] = lst[i + 1] + 10
        return x, lst

    def zips(x, lst):
        for a, b in zip(reversed(lst), lst):
            x = x + a * b
            lst[0] = a + 7
            lst[-1] = b + 3
        return x, lst
    config.dynamic_shapes = dynamic
    for fn, args in ((fwd, ([torch.zeros(2), torch.ones(2)],)), (enum, (_X, [1, 2, 3])),
                     (zips, (_X, [1, 2, 3]))):
        exp, got, cnt = run_both(fn, *args)
        assert_same_outcome(exp, got)
        assert cnt.frame_count == 1, fn.__name__


def test_reversed_of_dict_tuple_and_iterator_like_eager():
    def of_dict(x, d):
        for k in reversed(d):
            x = x + d[k]
            d[k + "x"] = 1              # RuntimeError in eager
        return x

    def of_tuple(x, t):
        for e in reversed(t):
            x = x * 2 + e
        return x

    def of_iterator(x, lst):
        return [x + e for e in reversed(iter(lst))]     # TypeError in eager
    for fn, args in ((of_dict, (_X, {"a": 1, "b": 2})), (of_tuple, (_X, (1, 2, 3))),
                     (of_iterator, (_X, [1, 2]))):
        exp, got, _ = run_both(fn, *args)
        assert_same_outcome(exp, got)


def test_in_and_eq_over_enum_members_fold():
    """Enum members with a builtin __eq__ (a str Enum's, as transformers'
    ExplicitEnum) fold, against members and constants, without a break."""
    import enum

    class Action(str, enum.Enum):
        NONE = "none"
        NOTIFY = "notify"
        RAISE = "raise"

    def g(x, a):
        r = x + (1 if a in (Action.NOTIFY, Action.RAISE) else 2)
        return r + (10 if a == "none" else 20)
    cnt = _each_call(g, *[(_X, a) for a in Action], (_X, Action.NONE))
    assert cnt.frame_count == 3 and cnt.op_count == 6       # one whole graph per member


def test_index_arguments_probed_with_valid_indices():
    """An op whose kernel is probed on real stand-ins (an int64 index
    tensor is not a plain float) gets zeros for its integer tensors when
    it reads them as indices: ones are out of bounds in a dim of size 1.
    GLM-4 MoE's router (scatter_ into a (tokens, 1 group) mask) broke there
    in every layer: 8 graphs instead of 1."""
    def f(scores):
        idx = torch.topk(scores, k=1, dim=-1, sorted=False)[1]
        mask = torch.zeros_like(scores)
        mask.scatter_(1, idx, 1)
        picked = scores.gather(1, idx) + scores.index_select(1, idx[0])
        return mask * 2, picked

    scores = torch.randn(4, 1)
    dynamo.reset()
    cnt = CompileCounter()
    got = dynamo.optimize(cnt)(f)(scores)
    assert same(got, f(scores))
    assert cnt.frame_count == 1              # was 2: a break at scatter_
