"""Minimized reproducers the differential fuzzer found (tests/fuzz/repros/):
each runs eagerly and compiled and must agree. Strict xfail while its bug is
open: when a fix lands the case XPASSes and fails here — then drop its
entry from OPEN (and, for a KNOWN_OPEN class, the switch in fuzzgen)."""
import glob
import os
import sys

import pytest

HERE = os.path.dirname(__file__)
sys.path.insert(0, os.path.join(HERE, "fuzz"))

import fuzzrun  # noqa: E402

REPROS = sorted(glob.glob(os.path.join(HERE, "fuzz", "repros", "*.py")))

# repro name -> still open (strict xfail)
OPEN = set()
# repros of a break inside a loop, found when the frame was cut there on
# every iteration: run so (config.skip_frame_on_loop_break off; by default
# such a frame now runs eagerly and compiles nothing)
LOOP_CUT = {"aot_grad_nan_through_overflowed_exp_of_overwritten_loop_value"}


def _cases():
    for path in REPROS:
        name = os.path.splitext(os.path.basename(path))[0]
        prog, reason = fuzzrun.load_repro(path)
        marks = [pytest.mark.xfail(strict=True, reason=reason)] if name in OPEN else []
        yield pytest.param(prog, name in LOOP_CUT, id=name, marks=marks)


@pytest.mark.parametrize("prog,loop_cut", list(_cases()))
def test_fuzz_repro(prog, loop_cut, monkeypatch):
    import dynamo
    if loop_cut:
        monkeypatch.setattr(dynamo.config, "skip_frame_on_loop_break", False)
    out = fuzzrun.run_program(prog, timeout=60)
    assert out.compiles >= 1          # the function was compiled, not skipped
    assert out.calls == len(prog.calls) or out.mismatch is not None
    assert out.mismatch is None, out.mismatch


def test_every_open_repro_exists():
    names = {os.path.splitext(os.path.basename(p))[0] for p in REPROS}
    assert OPEN <= names, OPEN - names


def test_inplace_op_with_uncastable_result_breaks_the_graph():
    """int64 `t.mul_(0.5)` raises in eager; the fake-tensor run does not
    check the cast, so before the fix it was captured (2 ops) and aot_eager
    returned a truncated tensor. Now the op is a break: the graph holds only
    `x * 1` and the op raises eagerly (repro inplace_int_float_aot)."""
    import torch
    import dynamo
    from dynamo.testing import CompileCounter

    def f(x):
        t = x * 1
        t.mul_(0.5)
        return t

    cnt = CompileCounter()
    with pytest.raises(RuntimeError, match="can't be cast"):
        dynamo.optimize(cnt)(f)(torch.arange(4))
    assert (cnt.frame_count, cnt.op_count) == (1, 1)
    dynamo.reset()
    with pytest.raises(RuntimeError, match="can't be cast"):
        dynamo.optimize("aot_eager")(f)(torch.arange(4))
    # a castable in-place op stays in the graph
    cnt = CompileCounter()
    g = dynamo.optimize(cnt)(lambda x: (x * 1).add_(2))
    assert g(torch.arange(4)).tolist() == [2, 3, 4, 5]
    assert (cnt.frame_count, cnt.op_count) == (1, 2)


def test_matmul_of_mixed_dtypes_breaks_the_graph():
    """float32 @ float64 raises in eager; the fake run accepts it, so the
    graph raised at run time and the list append before it (written back
    after the graph) was lost (repro mixed_dtype_matmul_side_effect_lost).
    Now the op is a break: the graph holds only the .to(), the append is
    applied, the matmul raises eagerly. Same dtypes stay in the graph."""
    import torch
    import dynamo
    from dynamo.testing import CompileCounter

    def f(x, y, lst):
        lst.append(1)
        x = x.to(torch.float64)
        return torch.mm(y, x) + 1

    cnt = CompileCounter()
    lst = []
    with pytest.raises(RuntimeError, match="same dtype"):
        dynamo.optimize(cnt)(f)(torch.ones(2, 2), torch.ones(2, 2), lst)
    assert lst == [1] and (cnt.frame_count, cnt.op_count) == (1, 1)
    dynamo.reset()
    cnt = CompileCounter()
    lst = []
    out = dynamo.optimize(cnt)(f)(torch.ones(2, 2, dtype=torch.float64), torch.ones(2, 2, dtype=torch.float64), lst)
    assert out.tolist() == [[3.0, 3.0]] * 2 and lst == [1]
    assert (cnt.frame_count, cnt.op_count) == (1, 2)      # .to() of the same dtype is no op


def test_inplace_op_on_an_expanded_tensor_is_a_break():
    """(repro inplace_on_expanded_input_side_effect_lost, fuzz seed 1001196)
    eager refuses to write an expanded tensor in place; fake tensors do
    not: the op raised inside the graph and the list append before it was
    lost. The probe on real tensors of the same strides makes it a break."""
    import torch
    import dynamo
    from dynamo.testing import CompileCounter

    def f(x, y, seen):
        seen.append(1)
        x = x + 1
        y.mul_(2)
        return x

    cnt = CompileCounter()
    seen = []
    base = torch.ones(1, 3)
    with pytest.raises(RuntimeError, match="single memory location"):
        dynamo.optimize(cnt)(f)(torch.ones(3, 3), base.expand(3, 3), seen)
    assert seen == [1] and base.tolist() == [[1.0] * 3]
    assert (cnt.frame_count, cnt.op_count) == (1, 1)        # x + 1; mul_ ran eagerly
    cnt = CompileCounter()
    y = torch.ones(3, 3)
    dynamo.optimize(cnt)(f)(torch.ones(3, 3), y, seen)        # not expanded: in the graph
    assert y.tolist() == [[2.0] * 3] * 3 and seen == [1, 1]
    assert (cnt.frame_count, cnt.op_count) == (1, 2)


def test_write_partly_overlapping_another_argument_is_a_break():
    """(repro list_del_slice_lost_with_aliased_input_copy, fuzz seed
    5010386) y = x.view_as(x) with other strides: x.copy_(y) raises in
    eager (partial overlap); fake tensors do not check overlap, so the op
    was captured, raised inside the graph and `del lst[:1]` before it
    (written back after the graph) was lost. The probe's stand-ins now
    share one buffer where the examples share a storage: the refusal makes
    the op a break. The same write between distinct tensors, or a tensor
    written from itself, stays in the graph."""
    import torch
    import dynamo
    from dynamo.testing import CompileCounter

    def f(x, y, lst):
        x = x.t()
        del lst[:1]
        x.copy_(y)
        return x

    cnt = CompileCounter()
    base, lst = torch.ones(4, 1), [0, 1]
    with pytest.raises(RuntimeError, match="single memory location"):
        dynamo.optimize(cnt)(f)(base, base.t().view(1, 4), lst)
    assert lst == [1] and (cnt.frame_count, cnt.op_count) == (1, 1)     # t(); copy_ ran eagerly
    dynamo.reset()
    cnt, lst = CompileCounter(), [0, 1]
    out = dynamo.optimize(cnt)(f)(torch.ones(4, 1), torch.full((1, 4), 2.0), lst)
    assert out.tolist() == [[2.0] * 4] and lst == [1]
    assert (cnt.frame_count, cnt.op_count) == (1, 2)                      # t() and copy_
    dynamo.reset()
    cnt = CompileCounter()
    g = dynamo.optimize(cnt)(lambda x: x.mul_(x.view_as(x)))
    assert g(torch.full((2, 2), 3.0)).tolist() == [[9.0] * 2] * 2
    assert (cnt.frame_count, cnt.op_count) == (1, 2)                      # same strides: allowed


def test_write_overlapping_views_of_a_computed_value_is_a_break():
    """(repro list_del_slice_lost_with_overlapping_computed_views, fuzz
    seed 8706535) x and y overlapping row views of one computed tensor
    that requires grad: eager refuses x.copy_(y). The probe made one `* 1`
    stand-in per view, not per storage, so its stand-ins did not overlap,
    the copy was captured and raised inside the graph, and `del lst[:1]`
    was lost. Views of one non-overlapping pair stay in the graph."""
    import torch
    import dynamo
    from dynamo.testing import CompileCounter

    def f(x, y, lst):
        del lst[:1]
        x.copy_(y)
        return lst

    cnt = CompileCounter()
    base, lst = torch.ones(3, 3, requires_grad=True) * 1, [2]
    with pytest.raises(RuntimeError, match="single memory location"):
        dynamo.optimize(cnt)(f)(base[:2], base[1:], lst)
    assert lst == [] and cnt.op_count == 0                 # copy_ ran eagerly
    dynamo.reset()
    cnt, lst = CompileCounter(), [2]
    base = torch.ones(4, 3, requires_grad=True) * 1
    with torch.no_grad():
        base[2:] = 2.0
    dynamo.optimize(cnt)(f)(base[:2], base[2:], lst)      # disjoint halves: in the graph
    assert lst == [] and base.tolist() == [[2.0] * 3] * 4
    assert (cnt.frame_count, cnt.op_count) == (1, 1)


def test_tensor_minus_a_python_bool_is_a_break():
    """(repro sub_python_bool_side_effect_lost, fuzz seed 5221378) eager
    refuses `t - True`; the fake run accepts it, so the op raised inside
    the graph and the append before it was lost. A Python bool operand
    makes the op probed: a break, the append applied. `t + True` and
    `t - 1` stay in the graph."""
    import torch
    import dynamo
    from dynamo.testing import CompileCounter

    def f(x, c, seen):
        x = x * 2
        seen.append(1)
        return x - c

    cnt, seen = CompileCounter(), []
    with pytest.raises(RuntimeError, match="bool"):
        dynamo.optimize(cnt)(f)(torch.ones(2), True, seen)
    assert seen == [1] and (cnt.frame_count, cnt.op_count) == (1, 1)      # x * 2; the - ran eagerly
    dynamo.reset()
    cnt = CompileCounter()
    assert dynamo.optimize(cnt)(f)(torch.ones(2), 1, seen).tolist() == [1.0, 1.0]
    assert seen == [1, 1] and (cnt.frame_count, cnt.op_count) == (1, 2)
    dynamo.reset()
    cnt = CompileCounter()
    assert dynamo.optimize(cnt)(lambda x: x * 2 + True)(torch.ones(2)).tolist() == [3.0, 3.0]
    assert (cnt.frame_count, cnt.op_count) == (1, 2)


def test_concatenating_tuple_and_list_raises_as_in_python():
    """tuple + list and list + tuple are TypeErrors; the tracer used to
    build the concatenation (repro tuple_plus_list, fuzz seed 1)."""
    import torch
    import dynamo
    from dynamo.testing import CompileCounter

    def f(x, seq):
        seq = seq + [1]
        return x + len(seq)

    def g(x, seq):
        return x + len([1] + seq)

    for fn in (f, g):
        cnt = CompileCounter()
        opt = dynamo.optimize(cnt)(fn)
        assert opt(torch.ones(1), [1, 2]).item() == 4      # list + list: one graph, no break
        assert cnt.frame_count == 1
        with pytest.raises(TypeError, match="can only concatenate"):
            opt(torch.ones(1), (1, 2))
        assert cnt.frame_count == 1                        # the tuple call compiled no graph with a result
        dynamo.reset()

    def h(x, seq):
        seq += (3,)                                        # list += tuple extends: fine in Python
        return x + len(seq)

    cnt = CompileCounter()
    assert dynamo.optimize(cnt)(h)(torch.ones(1), [1, 2]).item() == 4
    assert cnt.frame_count >= 1


def test_user_error_while_tracing_does_not_disable_the_function():
    import warnings

    import torch
    import dynamo
    from dynamo.testing import CompileCounter

    def f(x, n):
        return x * (10 // n)

    cnt = CompileCounter()
    opt = dynamo.optimize(cnt)(f)
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        with pytest.raises(ZeroDivisionError):
            opt(torch.ones(2), 0)
    assert not [w for w in seen if "could not compile" in str(w.message)]
    for n in (1, 2):
        assert opt(torch.ones(2), n).tolist() == [10 // n] * 2
    assert cnt.frame_count == 2


class _AotCounter:
    """aot_eager behind a counter: graphs compiled and how many times the
    compiled forward was entered."""

    def __init__(self):
        from dynamo.backends import aot_eager
        self.aot = aot_eager
        self.frame_count = 0
        self.graphs = []

    def __call__(self, gm, example_inputs):
        self.frame_count += 1
        self.graphs.append(gm)
        return self.aot(gm, example_inputs)


def _replay_counting(cnt, replays):
    """A backend: `cnt`'s aot_eager, each eager replay of its forward
    appended to `replays`."""
    def counting(gm, example_inputs):
        runtime = cnt(gm, example_inputs)
        eager = runtime.eager_forward
        runtime.eager_forward = lambda *a: replays.append(1) or eager(*a)
        return runtime
    return counting


def test_aot_input_mutation_before_an_op_failing_at_run_time_is_kept():
    """(a) y.add_ then an index_select whose index is out of range (the
    fake trace and a probe on ones accept it, the kernel raises on the
    real values): eager has mutated y when the error comes. The
    functionalized forward writes mutations back only at its end, so it
    is replayed op by op after it raises (repro aot_input_mutation_lost_on_raise,
    where the failing op was an int64 softmax: now a break, see
    test_op_the_kernel_rejects_for_its_dtype_or_size_is_a_break)."""
    import torch
    import dynamo

    def f(x, y, i):
        y.add_(1)
        return torch.index_select(x, 0, i) * 2

    cnt = _AotCounter()
    opt = dynamo.optimize(cnt)(f)
    x, y, bad = torch.ones(3), torch.zeros(2), torch.tensor([5])
    with pytest.raises(IndexError, match="out of range"):
        opt(x, y, bad)
    assert y.tolist() == [1, 1]                       # eager's mutation, once
    assert cnt.frame_count == 1 and len(list(cnt.graphs[0].graph.nodes)) >= 5
    with pytest.raises(IndexError):
        opt(x, y, bad)
    assert y.tolist() == [2, 2] and cnt.frame_count == 1     # cache hit, same semantics
    assert opt(x, y, torch.tensor([1])).tolist() == [2.0] and y.tolist() == [3, 3]   # no replay, applied once
    assert cnt.frame_count == 1


def test_aot_replay_restores_the_rng_of_a_graph_that_draws_random_numbers():
    """A failing forward that drew random numbers is replayed from the same
    RNG state: the generator ends where eager's does."""
    import torch
    import dynamo

    def f(x, y, i):
        y.add_(torch.rand(2))
        return torch.index_select(x, 0, i)

    cnt = _AotCounter()
    x, bad = torch.ones(3), torch.tensor([5])
    ye, yc = torch.zeros(2), torch.zeros(2)
    torch.manual_seed(5)
    with pytest.raises(IndexError):
        f(x, ye, bad)
    after_eager = torch.rand(1)
    torch.manual_seed(5)
    with pytest.raises(IndexError):
        dynamo.optimize(cnt)(f)(x, yc, bad)
    assert torch.equal(torch.rand(1), after_eager)
    assert torch.equal(ye, yc) and cnt.frame_count == 1


def test_op_the_kernel_rejects_for_its_dtype_or_size_is_a_break():
    """(repro runtime_kernel_error_side_effect_lost, fuzz seeds 1000754,
    1000507, 1000514) fake tensors accept max() of an empty tensor, an
    int64 softmax or rand_like: captured, the op raised inside the graph
    and the append before it (written back after the graph) was lost. Such
    ops are also run on real ones of the example shapes (only for
    non-float32/64 dtypes, empty or mixed-dtype inputs): a refusal is a break."""
    import torch
    import dynamo
    from dynamo.testing import CompileCounter

    seen = []

    def f(x, seen):
        x = x * 2
        seen.append(1)
        return x.max() + 1

    for bad, err in ((torch.ones(0, 3), "numel\(\) == 0"),):
        cnt = CompileCounter()
        with pytest.raises(RuntimeError, match=err):
            dynamo.optimize(cnt)(f)(bad, seen)
        assert seen == [1] and (cnt.frame_count, cnt.op_count) == (1, 1)   # x * 2; max() ran eagerly
        seen.clear()
        dynamo.reset()

    def g(x, seen):
        seen.append(1)
        return torch.rand_like(x) + x.softmax(-1)

    cnt = CompileCounter()
    with pytest.raises(RuntimeError, match="not implemented for 'Long'"):
        dynamo.optimize(cnt)(g)(torch.arange(3), seen)
    assert seen == [1] and cnt.frame_count == 0
    seen.clear()
    cnt = CompileCounter()
    out = dynamo.optimize(cnt)(f)(torch.ones(2, 3), seen)                  # float32: no probe, one graph
    assert out.item() == 3.0 and seen == [1] and (cnt.frame_count, cnt.op_count) == (1, 3)
    dynamo.reset()
    cnt = CompileCounter()
    assert dynamo.optimize(cnt)(f)(torch.ones(2, 3, dtype=torch.int64), seen).item() == 3   # probed, accepted
    assert (cnt.frame_count, cnt.op_count) == (1, 3)


def test_aot_forward_runs_compiled_not_replayed():
    """aot calls the forward in its boxed convention (one list of inputs):
    a wrapper that unpacked it handed a (1, 1) input's rows to the graph
    (result shape (1,), fuzz seeds 3000107, 3000126, 3000176, 3000060 on
    3.12 and 3.11) and made the forward of every other shape fail, which
    the runtime then replayed eagerly. The compiled forward runs; the
    replay is never entered."""
    import torch
    import dynamo

    cnt = _AotCounter()
    replays = []

    def f(x, y):
        return x, y * 0.9 + 3

    opt = dynamo.optimize(_replay_counting(cnt, replays))(f)
    for shape in ((1, 1), (3, 2)):
        y = torch.randn(shape)
        assert torch.allclose(opt(torch.ones(2), y)[1], y * 0.9 + 3)
        assert opt(torch.ones(2), y)[1].shape == shape
    assert replays == [] and cnt.frame_count == 2


def test_aot_input_the_loss_does_not_reach_keeps_grad_none():
    """(b) one graph returns x*2 and y+1; the loss uses only the first:
    eager leaves y.grad None, aot's single backward node returned zeros
    for y (repro aot_zero_grad_for_unreached_input; try_finally_grad_of_dead_input)."""
    import torch
    import dynamo

    def f(x, y):
        return x * 2, y + 1

    cnt = _AotCounter()
    opt = dynamo.optimize(cnt)(f)
    for call in range(2):
        x, y = torch.randn(3, requires_grad=True), torch.randn(3, requires_grad=True)
        a, b = opt(x, y)
        a.sum().backward(retain_graph=True)       # one aot node: kept for the second backward
        assert x.grad.tolist() == [2.0] * 3
        assert y.grad is None
        b.sum().backward()                            # now reached: a real gradient
        assert y.grad.tolist() == [1.0] * 3
    assert cnt.frame_count == 1


def test_aot_shared_input_still_gets_its_gradient():
    """Gating keeps every input some reached output depends on (x feeds both
    outputs; only y is dropped) and parameters of a module are gated too."""
    import torch
    import dynamo

    lin = torch.nn.Linear(3, 3)

    def f(x, y):
        return x * y, lin(x)

    cnt = _AotCounter()
    x, y = torch.randn(3, requires_grad=True), torch.randn(3, requires_grad=True)
    a, b = dynamo.optimize(cnt)(f)(x, y)
    b.sum().backward(retain_graph=True)
    assert x.grad is not None and y.grad is None
    assert lin.weight.grad is not None
    lin.zero_grad(set_to_none=True)
    x.grad = None
    a.sum().backward()
    assert y.grad is not None and lin.weight.grad is None
    assert cnt.frame_count == 1


def test_identity_op_is_its_input_variable_not_a_graph_op():
    """(d) dropout(training=False), .contiguous() of a contiguous tensor and
    nn.Dropout in eval return their argument: the traced value is that
    variable (no graph op), so aot_eager cannot turn it into a clone
    (repro aot_identity_op_returns_copy). In-place ops keep their node."""
    import torch
    import dynamo
    from dynamo.testing import CompileCounter

    drop = torch.nn.Dropout(0.5).eval()

    def f(x, y):
        a = torch.nn.functional.dropout(x, p=0.5, training=False)
        b = y.contiguous()
        c = drop(x)
        return a, b, c, x + 1

    cnt = CompileCounter()
    x, y = torch.randn(3), torch.randn(3)
    a, b, c, _ = dynamo.optimize(cnt)(f)(x, y)
    assert a is x and b is y and c is x
    assert (cnt.frame_count, cnt.op_count) == (1, 1)   # only x + 1
    dynamo.reset()
    a, b, c, _ = dynamo.optimize("aot_eager")(f)(x, y)
    assert a is x and b is y and c is x

    def g(x):
        return x.relu_()

    cnt = CompileCounter()
    x = torch.tensor([-1.0, 2.0])
    assert dynamo.optimize(cnt)(g)(x) is x and x.tolist() == [0.0, 2.0]
    assert (cnt.frame_count, cnt.op_count) == (1, 1)

    def h(x):
        y = x * 2
        y.detach_()                  # writes no data (no version bump) but acts: kept
        return y

    cnt = CompileCounter()
    assert dynamo.optimize(cnt)(h)(torch.ones(2, requires_grad=True)).requires_grad is False
    assert (cnt.frame_count, cnt.op_count) == (1, 2)


def test_list_written_back_before_its_local_is_rebound():
    """The mutated argument list is written back while every local still
    holds its value from before the break (repro list_source_rebound_at_break,
    fuzz seed 7003); before a try block it was not written back at all."""
    import torch
    import dynamo
    from dynamo.testing import CompileCounter

    def f(x, lst):
        l0 = lst
        l0 = l0 + [4]
        lst.append(1)
        print("lb", len(l0))                 # a break: l0 is stored, lst written back
        return x + len(l0), l0

    cnt = CompileCounter()
    lst = []
    out, l0 = dynamo.optimize(cnt)(f)(torch.ones(2), lst)
    assert (lst, l0, out.tolist()) == ([1], [4], [2.0, 2.0])
    assert cnt.frame_count == 1              # x + len(l0), after the print (nothing before it)

    def g(x, lst):
        lst.append(1)
        y = x + 1
        try:                                 # the graph ends before the try
            y = y * 2
        except ValueError:
            pass
        return y

    cnt = CompileCounter()
    lst = []
    assert dynamo.optimize(cnt)(g)(torch.ones(2), lst).tolist() == [4.0, 4.0]
    assert lst == [1] and cnt.frame_count >= 1


def test_stride_of_a_size_one_dim_of_a_computed_tensor_is_read_eagerly():
    """(repro stride_of_size1_dim, fuzz seed 300291) meta kernels choose
    other strides than eager for size-1 dims: reading one is a break."""
    import torch
    import dynamo
    from dynamo.testing import CompileCounter

    def f(x):
        t = x * 1
        return t, t.stride(0), t.stride(1), t.stride()

    x = torch.randn(4, 1).t()                          # (1, 4), strides (1, 1)
    cnt = CompileCounter()
    out = dynamo.optimize(cnt)(f)(x)
    assert out[1:] == f(x)[1:] == (1, 1, (1, 1))
    assert (cnt.frame_count, cnt.op_count) == (1, 1)   # x * 1; the strides read after the break

    def g(x):
        t = x * 2
        return t + t.stride(1)                         # size > 1 dim: known, one graph

    cnt = CompileCounter()
    x = torch.ones(3, 2)
    assert dynamo.optimize(cnt)(g)(x).tolist() == g(x).tolist()
    assert (cnt.frame_count, cnt.op_count) == (1, 2)


def test_aot_mutation_of_aliased_inputs_is_applied_once():
    """(repro aot_aliased_inputs_mutation_written_twice, fuzz seed 300231)"""
    import torch
    import dynamo

    def f(x, y, lst):
        t0 = x[:, 0]
        t0.mul_(3)
        t1 = torch.stack([y, y]).sum(0)
        return t0, t1, lst[0]

    cnt = _AotCounter()
    x = torch.ones(3, 2).t()
    with pytest.raises(IndexError):
        dynamo.optimize(cnt)(f)(x, x.view_as(x), [])
    assert x[:, 0].tolist() == [3.0, 3.0] and x[:, 1].tolist() == [1.0, 1.0]
    assert cnt.frame_count == 1
    x = torch.ones(3, 2).t()
    t0, t1, _ = dynamo.optimize(cnt)(f)(x, torch.ones(2, 3), [7])   # no aliasing: aot's path
    assert t0.untyped_storage().data_ptr() == x.untyped_storage().data_ptr()
    assert x[:, 0].tolist() == [3.0, 3.0] and t1.tolist() == [[2.0] * 3] * 2


def test_aot_augmented_assignment_on_aliased_input_returns_the_input():
    """(repro aot_inplace_on_aliased_input_returns_copy, fuzz seed 300804)
    `y += x` is captured as operator.iadd, which the aot runtime did not
    count as an in-place op: with y a view of x it took aot's
    synthetic-base path, which returned a new tensor, not y. Every
    augmented assignment now counts. A later call with distinct inputs
    fails the STORAGE_MATCH guard between y (written) and x and compiles
    its own graph, which must not write that call's `y += x` into x."""
    import operator

    import torch
    import dynamo
    from dynamo.backends import _mutates

    def f(x, y):
        y += x
        return x, y

    def g(x, y):
        y *= x
        return y

    cnt = _AotCounter()
    opt = dynamo.optimize(cnt)(f)
    x = torch.ones(2, 3)
    y = x.view_as(x)
    a, b = opt(x, y)
    assert a is x and b is y and x.tolist() == [[2.0] * 3] * 2      # added once, into x's storage
    assert cnt.frame_count == 1
    assert any(n.target is operator.iadd for n in cnt.graphs[0].graph.nodes)
    assert _mutates(cnt.graphs[0])
    x, y = torch.ones(2, 3), torch.ones(2, 3)
    a, b = opt(x, y)                                   # no aliasing: STORAGE_MATCH fails, a new graph
    assert b is y and y.tolist() == [[2.0] * 3] * 2 and x.tolist() == [[1.0] * 3] * 2
    assert cnt.frame_count == 2
    cnt = _AotCounter()
    x = torch.full((2, 3), 3.0)
    y = x.view_as(x)
    assert dynamo.optimize(cnt)(g)(x, y) is y and x.tolist() == [[9.0] * 3] * 2
    assert cnt.frame_count == 1 and _mutates(cnt.graphs[0])


def test_aot_backward_reads_the_mutated_input_itself():
    """(repro aot_saved_input_written_through_numpy, fuzz seed 301376) x is
    mutated in the graph and needed by w's gradient. Eager saves x itself:
    a later write through numpy (no version bump) shows in the backward,
    and a version-bumping write makes the backward raise. aot saved a
    functional copy of x's new value and did neither; it now keeps the
    mutation in its graph and saves the input."""
    import torch
    import dynamo

    w = torch.nn.Parameter(torch.tensor(0.5))

    def f(x):
        x.sub_(1)
        return x * w

    def run(fn, write):
        w.grad = None
        x = torch.ones(3)
        out = fn(x)
        write(x)
        out.sum().backward()
        return x, w.grad

    def through_numpy(x):
        x.detach().numpy()[0] = 7

    cnt = _AotCounter()
    replays = []

    opt = dynamo.optimize(_replay_counting(cnt, replays))(f)
    for write in (through_numpy, lambda x: None):
        xe, ge = run(f, write)
        xc, gc = run(opt, write)
        assert torch.equal(xe, xc) and torch.equal(ge, gc)
    assert ge.item() == 0.0 and run(f, through_numpy)[1].item() == 7.0
    for fn in (f, opt):
        with pytest.raises(RuntimeError, match="modified by an inplace operation"):
            run(fn, lambda x: x.add_(1))
    assert cnt.frame_count == 1 and replays == []        # aot's own forward and backward


def test_aot_gradient_brought_in_by_an_inplace_op_is_not_gated():
    """(repros aot_grad_lost_through_inplace_op_on_clone,
    aot_grad_lost_through_setitem_of_returned_input; fuzz seeds 5000619,
    5000068, 5011328, 5011475, 5014143, 5018527) `t.add_(y)` / `t[:, 0] = y`
    make the clone t depend on y, which the gating's per-node input sets
    did not see: y's gradient through t was dropped (None or too small).
    Such a graph is not gated; an in-place op that brings in no new
    input (under no_grad, of a constant) still is."""
    import torch
    import dynamo
    from dynamo.backends import _grad_deps

    def f(x, y):
        t = x.clone()
        t.add_(y)
        return (t,)

    def g(x, y):
        t = x.clone()
        t[:, 0] = y[:, -1]
        return t, y

    for fn, want_y in ((f, [1.0] * 3), (g, [1.0, 1.0, 2.0])):
        cnt = _AotCounter()
        opt = dynamo.optimize(cnt)(fn)
        x, y = torch.ones(2, 3, requires_grad=True), torch.ones(2, 3, requires_grad=True)
        sum(o.sum() for o in opt(x, y)).backward()
        assert y.grad[0].tolist() == want_y and x.grad is not None
        assert cnt.frame_count == 1 and _grad_deps(cnt.graphs[0]) is None
        dynamo.reset()

    def h(x, y):
        t = x.clone()
        t.add_(1)
        return t * 2, y + 1

    cnt = _AotCounter()
    x, y = torch.ones(3, requires_grad=True), torch.ones(3, requires_grad=True)
    a, _ = dynamo.optimize(cnt)(h)(x, y)
    a.sum().backward()
    assert x.grad.tolist() == [2.0] * 3 and y.grad is None          # still gated
    assert cnt.frame_count == 1 and _grad_deps(cnt.graphs[0]) is not None


def test_aot_graph_with_inplace_op_bringing_in_an_input_is_gated():
    """(repros aot_grad_lost_with_inference_mode_block_after_swaps,
    aot_grad_lost_for_input_added_in_place_before_numpy_break; fuzz seeds
    6231617, 6233164) a graph whose in-place op brings a new input into a
    value was not gated at all: an input reaching only an output the loss
    never reaches got zeros, eager None. The op's inputs now reach every
    value on the written storage: written through the view v, the base t
    depends on y too (its gradient is kept when t is reached), and x,
    which only t depends on, gets None when only the other output is."""
    import torch
    import dynamo
    from dynamo.backends import _grad_deps

    def f(x, y):
        t = x.clone()
        v = t[:, 0]
        v.add_(y[:, 0])
        return t, y * 2

    def run(fn, which):
        x, y = torch.ones(2, 3, requires_grad=True), torch.ones(2, 3, requires_grad=True)
        fn(x, y)[which].sum().backward()
        return x.grad, y.grad

    cnt = _AotCounter()
    opt = dynamo.optimize(cnt)(f)
    for which in (0, 1):
        (xe, ye), (xc, yc) = run(f, which), run(opt, which)
        assert (xe is None) == (xc is None) and (ye is None) == (yc is None)
        assert all(e is None or torch.equal(e, c) for e, c in ((xe, xc), (ye, yc)))
    assert run(opt, 1)[0] is None and run(opt, 0)[1][:, 0].tolist() == [1.0, 1.0]
    assert cnt.frame_count == 1
    assert _grad_deps(cnt.graphs[0]) == ([frozenset({("arg", 0), ("arg", 1)}), frozenset({("arg", 1)})], {})


def test_aot_nan_gradient_of_an_unreached_output_is_recomputed_eagerly(monkeypatch):
    """(repros aot_grad_through_std_of_one_row_before_grad_switch,
    aot_grad_nan_through_overflowed_exp_of_overwritten_loop_value; fuzz
    seeds 6021158, 6235761) the graph before the break returns t1 and the
    loop's first t0 = exp(y + 100).clamp(max=10), which the next iteration
    overwrites: eager never runs that t0's backward, aot's node ran it on
    a zero gradient, 0 * inf gave y a NaN gradient. Now eager's gradients
    are recomputed (one eager run of the graph, counted) when an output
    was not reached and aot's are not finite; finite ones are kept (no run)."""
    import random
    import warnings

    import torch
    import dynamo
    # f's break is in its loop: cut there on each iteration
    monkeypatch.setattr(dynamo.config, "skip_frame_on_loop_break", False)

    def f(x, y, shifts):
        t1 = y * 2
        for v in shifts:
            t0 = (y + v).exp().clamp(max=10.0)
            bool(t0.mean() > 0)                 # a break
        return t0, t1

    def g(x, y):
        t1 = y + x[0].sum()
        t0 = x + x.std(dim=0)                   # NaN: one row
        random.randint(0, 3)                    # a break
        with torch.no_grad():
            t0 = t0 * 2
        return t0, t1

    def run(fn, *args):
        x, y = torch.zeros(1, 3, requires_grad=True), torch.zeros(1, 3, requires_grad=True)
        outs = fn(x, y, *args)
        sum(o.sum() for o in outs if o.requires_grad).backward()
        return x.grad, y.grad

    assert run(f, (100.0, 0.0))[1].tolist() == [[3.0] * 3]
    cnt, replays = _AotCounter(), []
    opt = dynamo.optimize(_replay_counting(cnt, replays))(f)
    for k in (1, 2):
        xg, yg = run(opt, (100.0, 0.0))
        assert xg is None and yg.tolist() == [[3.0] * 3]
        assert cnt.frame_count == 2 and len(replays) == k       # one recomputation per backward
    xg, yg = run(opt, (1.0, 0.0))
    assert xg is None and yg.tolist() == [[3.0] * 3]
    assert cnt.frame_count == 3 and len(replays) == 2          # finite: aot's gradients, no run
    dynamo.reset()
    cnt, replays = _AotCounter(), []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")                         # std's degrees of freedom
        xe, ye = run(g)
        xg, yg = run(dynamo.optimize(_replay_counting(cnt, replays))(g))
    assert xg.tolist() == xe.tolist() == [[3.0] * 3] and yg.tolist() == ye.tolist() == [[1.0] * 3]
    assert cnt.frame_count == 2 and len(replays) == 1


def test_aot_graph_no_gradient_reaches_gives_its_inputs_none():
    """(repro aot_zero_grad_through_earlier_graph_of_unreached_input, fuzz
    seeds 5015440, 5012450) the first graph has one output, so it was never
    gated; the second graph's gate dropped t0's gradient, yet the first
    graph's backward still ran on the missing gradient and gave x zeros."""
    import random

    import torch
    import dynamo

    def f(x, y):
        t0 = x.to(torch.float64)
        random.randint(0, 3)                   # a break: two graphs
        t1 = y * 3
        t0 = t0.float()
        with torch.inference_mode():
            t0 = t0 + 1
        return t0, t1

    cnt = _AotCounter()
    x, y = torch.ones(2, 3, requires_grad=True), torch.ones(2, 3, requires_grad=True)
    t0, t1 = dynamo.optimize(cnt)(f)(x, y)
    assert not t0.requires_grad
    t1.sum().backward()
    assert x.grad is None and y.grad.tolist() == [[3.0] * 3] * 2
    assert cnt.frame_count == 2


def test_comprehension_in_an_eagerly_run_try_loop_does_not_crash():
    """(fuzz seed 5107254, a segfault on 3.12 and 3.13) an inlined
    comprehension (LOAD_FAST_AND_CLEAR v ... STORE_FAST v puts back a NULL
    when v was unbound) in a loop inside a try that runs eagerly, with a
    break in the loop: the exit to the resume function passed v, a NULL,
    by LOAD_FAST. A store that restores a cleared name no longer counts as
    binding it, so such a try is not cut out with v passed on. Run in a
    subprocess: before the fix the interpreter died."""
    import subprocess
    import textwrap
    src = textwrap.dedent('''
        import torch, dynamo
        from dynamo.testing import CompileCounter
        def g(t0, l0):
            try:
                w1 = 0
                while w1 < 2:
                    w1 += 1
                    s_ = {v % 3 for v in l0}
                    print("lb")
                    t0 = t0 + len(s_)
            except Exception:
                pass
            return t0
        cnt = CompileCounter()
        x = torch.ones(2)
        want = g(x, [1, 3])
        got = dynamo.optimize(cnt)(g)(x, [1, 3])
        assert torch.equal(want, got), (want, got)
        print("frames", cnt.frame_count)
    ''')
    root = os.path.dirname(HERE)
    out = subprocess.run([sys.executable, "-c", src], capture_output=True, text=True, timeout=120,
                         cwd=root, env=dict(os.environ, PYTHONPATH=root))
    assert out.returncode == 0, out.stderr[-2000:]
    assert "frames 0" in out.stdout, out.stdout      # the try runs eagerly: no graph


def test_aot_graph_switching_grad_mode_as_aot_cannot_runs_its_ops_eagerly():
    """aot's compiled function is one autograd node, recorded or not by the
    grad mode of the call. (a) grad on, a view of the leaf y made under
    no_grad and returned: eager's has no grad_fn (aot gave it a
    ViewBackward to y: repro aot_view_under_no_grad_returned_with_grad_fn).
    (b) grad off, an enable_grad block: eager's result has a grad_fn (aot
    ran it as inference: repros aot_enable_grad_block_in_graph_entered_without_grad,
    aot_inplace_on_view_of_leaf_not_refused). Both graphs run their ops
    eagerly; a no_grad block whose results are no views still goes
    through aot (a CompiledFunctionBackward)."""
    import torch
    import dynamo

    def view_under_no_grad(x, y):
        with torch.no_grad():
            v = y.view(-1)
        return x * 2, v

    def enable_grad_inside(x, y):
        with torch.enable_grad():
            return x * y

    def no_grad_values(x, y):
        with torch.no_grad():
            s = y.sum() * 2
        return x * y + s

    x, y = torch.ones(2, 2, requires_grad=True), torch.ones(2, 2, requires_grad=True)
    cnt = _AotCounter()
    a, v = dynamo.optimize(cnt)(view_under_no_grad)(x, y)
    assert cnt.frame_count == 1
    assert v.requires_grad and v.grad_fn is None and v._base is y       # eager's no_grad view
    assert type(a.grad_fn).__name__ == "MulBackward0"                   # the graph ran op by op
    dynamo.reset()
    cnt = _AotCounter()
    leaf_view = torch.ones(4, 1).t().requires_grad_()                   # a leaf, viewing a base without grad
    a, v = dynamo.optimize(cnt)(view_under_no_grad)(x, leaf_view)
    assert cnt.frame_count == 1 and not v.requires_grad                 # as eager's (repro ..._of_leaf_view_...)
    dynamo.reset()
    cnt = _AotCounter()
    with torch.no_grad():
        r = dynamo.optimize(cnt)(enable_grad_inside)(x, y)
    assert cnt.frame_count == 1 and type(r.grad_fn).__name__ == "MulBackward0"
    r.sum().backward()
    assert x.grad.tolist() == [[1.0, 1.0]] * 2
    dynamo.reset()
    cnt = _AotCounter()
    r = dynamo.optimize(cnt)(no_grad_values)(x, y)
    assert cnt.frame_count == 1 and type(r.grad_fn).__name__ == "CompiledFunctionBackward"
    assert r.tolist() == [[9.0, 9.0]] * 2


@pytest.mark.parametrize("backend", ["eager", "aot_eager"])
def test_graph_raising_inside_a_no_grad_block_restores_the_grad_mode(backend):
    """An op failing at run time inside a no_grad block of a graph (an
    index out of range, which the fake run accepts): eager's `with` puts
    grad mode back as the error leaves the block; the graph's
    _set_grad_enabled(True) after the block never ran, so the caller went
    on with grad off. The compiled graph's wrapper restores the entry mode
    when it raises (aot_eager also before its op-by-op replay)."""
    import torch
    import dynamo
    from dynamo.backends import lookup

    def f(x, i):
        y = x * 2
        with torch.no_grad():
            z = torch.index_select(y, 0, i)
        return z + y

    compiles = []

    def counting(gm, example_inputs):
        compiles.append(gm)
        return lookup(backend)[1](gm, example_inputs)
    opt = dynamo.optimize(counting)(f)
    x = torch.ones(3, requires_grad=True)
    try:
        for _ in range(2):
            with pytest.raises(IndexError):
                opt(x, torch.tensor([5]))
            assert torch.is_grad_enabled()
        assert len(compiles) == 1                   # the grad-mode guard still holds: no recompile
        assert opt(x, torch.tensor([1])).requires_grad
    finally:
        torch.set_grad_enabled(True)


def test_backend_failing_inside_a_grad_mode_block_does_not_leak_grad_mode():
    """A backend that runs the graph while compiling (aot's trace) and
    fails inside its enable_grad block left grad mode on: the frame,
    entered with grad off, then ran the graph's ops before the block with
    grad on (repro aot_no_grad_view_mutated_then_used_with_grad, where an
    add_ meant for no_grad then raised)."""
    import torch
    import dynamo

    compiles = []

    def fails_in_block(gm, example_inputs):
        compiles.append(gm)
        torch._C._set_grad_enabled(True)        # as a trace stopped inside the block
        raise RuntimeError("backend failed")

    def f(x):
        y = x * 2
        with torch.enable_grad():
            z = x * 3
        return y, z

    x = torch.ones(2, requires_grad=True)
    try:
        with torch.no_grad(), pytest.warns(RuntimeWarning, match="backend failed"):
            y, z = dynamo.optimize(fails_in_block)(f)(x)
            assert not torch.is_grad_enabled()
        assert len(compiles) == 1
        assert not y.requires_grad and type(z.grad_fn).__name__ == "MulBackward0"
    finally:
        torch.set_grad_enabled(True)


def test_argument_cell_rebound_before_a_break_keeps_the_other_arguments_value():
    """f(a, a): y's variable and x's are one, with one source. y is a cell
    (g writes it with `nonlocal`); the trace rebinds it, then g's tensor
    branch breaks the graph: the code rebuilding g's closure stored y's
    new value in its cell before g's argument x was loaded from y's
    source, so g got y * 2 (repro argument_cell_rebound_before_break_read_through_alias,
    fuzz seed 5109758). The argument's entry value is kept first."""
    import torch
    import dynamo
    from dynamo.testing import CompileCounter

    def f(x, y):
        y = y * 2
        def g(t):
            nonlocal y
            if t.sum() > 0:
                y = y * 3
            return t - 1
        return g(x), y

    a = -torch.ones(2)
    cnt = CompileCounter()
    r, y = dynamo.optimize(cnt)(f)(a, a)
    assert r.tolist() == [-2.0, -2.0] and y.tolist() == [-2.0, -2.0]
    assert (cnt.frame_count, cnt.op_count) == (3, 4)
    b = torch.ones(2)
    r, y = dynamo.optimize(cnt)(f)(b, b)          # the other branch: its own resume frame
    assert r.tolist() == [0.0, 0.0] and y.tolist() == [6.0, 6.0]


def test_aot_boolean_mask_of_an_empty_tensor_compiles():
    """x[x > 0] of an empty x: the capture's fake run knew the mask's
    result has size 0, so aot traced with the real inputs, where its fake
    nonzero raised DynamicOutputShapeException: the backend failed and
    warned (fuzz seed 7300583, a backend fallback). aot now traces such a
    graph again with a shape env."""
    import warnings

    import torch
    import dynamo

    def f(x):
        return x + x[x > 0].sum()

    cnt = _AotCounter()
    opt = dynamo.optimize(cnt)(f)
    with warnings.catch_warnings():
        warnings.simplefilter("error")          # no "backend failed" fallback
        for shape in ((0, 3), (2, 3)):
            x = torch.randn(shape)
            assert torch.equal(opt(x), f(x))
    assert cnt.frame_count == 2                 # one graph per shape, both through aot


@pytest.mark.parametrize("shape", [(2, 3), (2, 0)])
def test_aot_inplace_op_on_a_value_saved_for_backward_runs_the_graph_eagerly(shape):
    """softmax saves its result for the backward; `t[1:] += 1` overwrites
    it, so eager's backward raises. aot's functionalized graph saved its
    own values: its backward ran (or, with the += in the graph, aot's
    trace failed: a "backend failed" warning and the fallback). Such a
    graph (found on the capture's fake autograd graph) runs its ops
    eagerly, without the warning. On an empty input the op
    probe's leaf stand-in for the computed value refused the += (a break,
    repro aot_inplace_on_saved_softmax_result_not_refused_in_backward):
    the stand-in of a computed value is computed too, one graph of 3 ops."""
    import warnings

    import torch
    import dynamo

    def f(x):
        t = x.softmax(dim=-1)[1:]
        t += 1
        return t

    cnt = _AotCounter()
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)      # no backend fallback
        r = dynamo.optimize(cnt)(f)(torch.randn(shape, requires_grad=True))
    assert cnt.frame_count == 1 and len([n for n in cnt.graphs[0].graph.nodes if n.op == "call_method" or n.op == "call_function"]) == 3
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        r.sum().backward()

    def g(x):                   # no saved value overwritten: through aot
        t = (x * 2)[1:]
        t += 1
        return t
    r = dynamo.optimize(cnt)(g)(torch.randn(shape, requires_grad=True))
    assert cnt.frame_count == 2 and type(r.grad_fn).__name__ == "CompiledFunctionBackward"
