"""The aot_eager runtime's outputs match eager's where a user can see it:
a view's autograd creation mode (which in-place ops eager refuses on it),
an output only a break's `.item()` reads (kept out of aot's autograd node),
and the strides of size-1 dims. Each test counts the graphs compiled and
checks that aot's compiled function ran (not an eager fallback)."""
import numpy
import pytest
import torch

import dynamo
from dynamo import backends


class AotCounter:
    """aot_eager, counting graphs and keeping what aot_eager returned."""

    def __init__(self):
        self.frame_count = 0
        self.compiled = []

    def __call__(self, gm, example_inputs):
        self.frame_count += 1
        out = backends.lookup("aot_eager")[1](gm, example_inputs)
        self.compiled.append(out)
        return out

    def aot_ran(self):
        return all(isinstance(c, backends._AotRuntime) for c in self.compiled)


@pytest.fixture(autouse=True)
def _reset():
    dynamo.reset()
    yield
    dynamo.reset()


def test_view_of_no_grad_intermediate_accepts_inplace_with_grad():
    """(repro aot_inplace_on_view_of_no_grad_result_refused, fuzz seed
    6228249) `t = y * 3` under no_grad, then `t.t().t()` with grad on: eager's
    view is a normal one (created with grad on), and `view += x` with x
    requiring grad records the op. aot made the view inside its forward,
    which runs with grad off: a no_grad view, and the in-place op raised.
    The runtime gives the output eager's creation mode."""
    def f(y, n):
        with torch.set_grad_enabled(n > 2):
            t = y * 3
        return t.t().t()

    y = torch.randn(3, 5, requires_grad=True)
    cnt = AotCounter()
    got = dynamo.optimize(cnt)(f)(y, 2)
    want = f(y, 2)
    x = torch.randn(3, 5, requires_grad=True)
    want += x
    got += x                        # raised "A view was created in no_grad mode"
    assert (cnt.frame_count, cnt.aot_ran()) == (1, True)
    assert got.requires_grad and type(got.grad_fn) is type(want.grad_fn)
    torch.testing.assert_close(got, want)
    gx, = torch.autograd.grad(got.sum(), x)
    assert gx.tolist() == [[1.0] * 5] * 3


def test_view_made_under_no_grad_refuses_inplace_with_grad():
    """The reverse: a view of an input taken inside a no_grad block is a
    no_grad view in eager, which an in-place op with grad on refuses; aot
    regenerated it outside its forward as a normal view and the op ran."""
    def f(x):
        with torch.no_grad():
            v = x.t()
        return v

    x = torch.randn(3, 5)
    cnt = AotCounter()
    got = dynamo.optimize(cnt)(f)(x)
    w = torch.randn(5, 3, requires_grad=True)
    with pytest.raises(RuntimeError, match="no_grad mode"):
        f(x).add_(w)
    with pytest.raises(RuntimeError, match="no_grad mode"):
        got.add_(w)
    assert (cnt.frame_count, cnt.aot_ran()) == (1, True)


def _graph_has(gm, target):
    return any(n.op == "call_method" and n.target == target for n in gm.graph.nodes)


def test_output_only_item_reads_leaves_the_autograd_node():
    """(repro aot_output_read_by_item_keeps_a_saved_value_checked) `.item()`
    is a break, so t0.abs().max() was a graph output requiring grad: aot's
    one autograd node kept abs's input t0 and checked it in every backward.
    t1 += t0 (t1 is t0's memory) then made the compiled backward raise
    ('modified by an inplace operation') where eager's, which never reaches
    abs, ran. The break now hands on max().detach(): 2 graphs, the first
    with a detach."""
    def f(x):
        t0 = x + x.sum()
        t1 = t0.t().contiguous().t()
        i = int(t0.abs().max().item() > 1)
        t1 += t0
        return t0, t1, i

    x = torch.randn(5, 3, requires_grad=True)
    cnt = AotCounter()
    graphs = []
    seen = dynamo.optimize(lambda gm, ex: (graphs.append(gm), cnt(gm, ex))[1])
    t0, t1, i = seen(f)(x)
    (t0 + t1).sum().backward()            # raised before
    got, x.grad = x.grad, None
    e0, e1, ei = f(x)
    (e0 + e1).sum().backward()
    assert i == ei and torch.equal(got, x.grad)
    assert (cnt.frame_count, cnt.aot_ran()) == (2, True)
    assert _graph_has(graphs[0], "detach")


def test_item_of_a_value_kept_alive_is_not_detached():
    """The value `.item()` reads is also a live local: it is handed on as
    it is (it requires grad and has its grad_fn after the break)."""
    def f(x):
        m = (x * 2).max()
        v = m.item()
        return m, v

    x = torch.randn(4, requires_grad=True)
    graphs = []
    m, v = dynamo.optimize(lambda gm, ex: (graphs.append(gm), gm.forward)[1])(f)(x)
    assert m.requires_grad and m.grad_fn is not None and v == m.item()
    assert len(graphs) == 1 and not _graph_has(graphs[0], "detach")


def test_inplace_op_on_computed_size1_tensor_keeps_eager_strides():
    """(repro aot_output_stride_of_size1_dim_after_inplace_op, fuzz seed
    7320195) `x + 0` of a (1, 4) x with strides (1, 1) keeps them in eager
    and clamp_ keeps t's; aot's out-of-place clamp returned (4, 1). Such a
    graph runs its captured ops eagerly; the same graph on a (2, 4) input
    (no size-1 dim) stays aot's."""
    def f(x):
        t = x + 0
        t.clamp_(-1.0, 1.0)
        return t

    x = torch.randn(4, 1).t()
    cnt = AotCounter()
    got = dynamo.optimize(cnt)(f)(x)
    assert got.stride() == f(x).stride() == (1, 1)
    assert (cnt.frame_count, cnt.aot_ran()) == (1, False)
    x2 = torch.randn(4, 2).t()
    got = dynamo.optimize(cnt)(f)(x2)
    assert got.stride() == f(x2).stride()
    assert cnt.frame_count == 2 and isinstance(cnt.compiled[1], backends._AotRuntime)


def test_inplace_op_on_computed_empty_tensor_keeps_eager_strides():
    """(repro aot_output_stride_of_empty_tensor_after_inplace_op, fuzz seed
    9508618) the strides of an empty tensor are the kernel's choice too:
    x.clone() of empty(3, 0).t() keeps (1, 1) in eager and add_ keeps
    them; aot's out-of-place add returned (3, 1), and a later stride(0)
    read differed. Such a graph runs its captured ops eagerly."""
    def f(x):
        t = x.clone()
        t.add_(t)
        return t

    x = torch.empty(3, 0).t()
    cnt = AotCounter()
    got = dynamo.optimize(cnt)(f)(x)
    assert got.stride() == f(x).stride() == (1, 1) and got.shape == (0, 3)
    assert (cnt.frame_count, cnt.aot_ran()) == (1, False)


def test_view_of_intermediate_with_size1_dim_keeps_eager_strides():
    """(fuzz seed 6008916) cat(..).narrow(..) of (1, 1) inputs requiring
    grad is a view with strides (2, 1) in eager; aot hands an output view of
    an intermediate back through aten._unsafe_view: (1, 1). The graph runs
    its captured ops eagerly (gradients as eager's); without grad it stays
    aot's (its view is regenerated with eager's strides)."""
    def f(x, y):
        return torch.cat([y, x], 1).narrow(1, 0, x.shape[1])

    x, y = torch.randn(1, 1, requires_grad=True), torch.randn(1, 1, requires_grad=True)
    cnt = AotCounter()
    got = dynamo.optimize(cnt)(f)(x, y)
    assert got.stride() == f(x, y).stride() == (2, 1)
    assert (cnt.frame_count, cnt.aot_ran()) == (1, False)
    got.sum().backward()
    assert (y.grad.tolist(), x.grad.tolist()) == ([[1.0]], [[0.0]])     # eager's (cat's backward)
    with torch.no_grad():
        got = dynamo.optimize(cnt)(f)(x, y)
    assert got.stride() == (2, 1)
    assert cnt.frame_count == 2 and isinstance(cnt.compiled[1], backends._AotRuntime)


def test_unbind_output_of_intermediate_refuses_inplace_like_eager():
    """An output of unbind (one of several views) of an intermediate that
    requires grad: eager refuses an in-place op on it; aot returned a plain
    tensor and the op ran. The runtime returns a view of it carrying eager's
    mode (the op raises); gradients are eager's."""
    def f(x):
        a, b = (x * 2).unbind(0)
        return a, b

    x = torch.randn(2, 3, requires_grad=True)
    cnt = AotCounter()
    a, b = dynamo.optimize(cnt)(f)(x)
    with pytest.raises(RuntimeError, match="returns multiple views"):
        f(x)[0].add_(1)
    with pytest.raises(RuntimeError, match="returns multiple views"):
        a.add_(1)
    assert (cnt.frame_count, cnt.aot_ran()) == (1, True)
    (a * 3 + b).sum().backward()
    assert x.grad.tolist() == [[6.0] * 3, [2.0] * 3]


def test_output_and_its_detach_when_it_is_a_view():
    """(repro aot_output_and_its_detach_of_a_view, fuzz seed 7608792)
    `t = a.t(); return t, t.detach()` with a requiring grad: aot
    regenerated the detached output from t's base by the detach alone and
    raised "incorrect out shape after application of ViewMeta sequence"
    (torch.compile's aot_eager does too). The runtime detaches after the
    call: shapes, strides, the shared storage and requires_grad as eager's."""
    def f(x):
        a = x * 2
        t = a.t().contiguous().t()
        return t, t.detach(), a.t(), a.t().detach()

    x = torch.randn(4, 2, requires_grad=True)
    cnt = AotCounter()
    got = dynamo.optimize(cnt)(f)(x)
    want = f(x)
    assert (cnt.frame_count, cnt.aot_ran()) == (1, True)
    for g, w in zip(got, want):
        assert (g.shape, g.stride(), g.requires_grad) == (w.shape, w.stride(), w.requires_grad)
        torch.testing.assert_close(g, w)
    assert got[1].untyped_storage().data_ptr() == got[0].untyped_storage().data_ptr()
    assert got[3].untyped_storage().data_ptr() == got[2].untyped_storage().data_ptr()
    got[0].sum().backward()
    assert x.grad.tolist() == [[2.0, 2.0]] * 4


def _overlapping_views():
    base = torch.arange(9.0).reshape(3, 3).requires_grad_(True) * 1
    return base[:2], base[1:3]


@pytest.mark.parametrize("loss_on", ["t", "u"])
def test_saved_input_written_after_the_call_raises_in_backward_like_eager(loss_on):
    """(repro aot_backward_reads_input_overwritten_after_the_call, fuzz
    seed 7611598) `x.add_(1); x + x.std(0)`: eager's std saves x; `y += t` after the
    graph, y sharing x's storage, moves x's version, and eager's backward
    through t raises. aot saved its own copy of x and ran. The runtime
    checks the saved input's version in the backward, and only for the
    outputs whose eager backward reads it (u does not)."""
    def f(x):
        x.add_(1)               # aot saves its functional copy of x, not x
        return x + x.std(dim=0), x * 3

    results = []
    for fn in (f, dynamo.optimize(cnt := AotCounter())(f)):
        x, y = _overlapping_views()
        t, u = fn(x)
        y += 1
        try:
            (t if loss_on == "t" else u).sum().backward()
            results.append(None)
        except RuntimeError as e:
            results.append("modified by an inplace operation" in str(e))
    assert (cnt.frame_count, cnt.aot_ran()) == (1, True)
    assert results == ([True, True] if loss_on == "t" else [None, None])


def test_saved_input_unchanged_backward_runs():
    """The version check of the test above lets an unchanged input through."""
    def f(x):
        return x + x.std(dim=0)

    cnt = AotCounter()
    x = torch.randn(2, 3, requires_grad=True)
    dynamo.optimize(cnt)(f)(x).sum().backward()
    got = x.grad.clone()
    x.grad = None
    f(x).sum().backward()
    assert (cnt.frame_count, cnt.aot_ran()) == (1, True)
    torch.testing.assert_close(got, x.grad)


def test_saved_input_written_after_the_call_other_output_backward():
    """aot saves x itself (without an add_ before it): its one node's
    backward read x, and checked x's version, whichever output the loss
    reaches, where eager's std alone saved x. A write to x's memory after
    the call, then a backward through u alone, raised; now the saved x is
    copied at the call (eager saves it for t only, _SavedTensors) and the
    backward gives eager's gradient."""
    def f(x):
        return x + x.std(dim=0), x * 3

    grads = []
    cnt = AotCounter()
    for fn in (f, dynamo.optimize(cnt)(f)):
        base = torch.arange(9.0).reshape(3, 3).requires_grad_(True)
        mid = base * 1
        x, y = mid[:2], mid[1:3]
        t, u = fn(x)
        y += 1
        u.sum().backward()
        grads.append(base.grad)
    assert (cnt.frame_count, cnt.aot_ran()) == (1, True)
    torch.testing.assert_close(grads[0], grads[1])


@pytest.mark.parametrize("write", [True, False])
def test_saved_output_written_after_the_call_raises_in_backward_like_eager(write):
    """(repro aot_backward_reads_output_overwritten_after_the_call, fuzz
    seed 8517980) mm saves the output view t for `t @ t.t()`; `t += 1`
    after the call moves its version and eager's backward through u
    raises. aot saved its own values and ran. Unwritten, the backward runs
    and the gradients are eager's."""
    def f(x):
        t = torch.cat([x, x], 1).narrow(1, 0, 5)
        return t, (t @ t.t()) @ x * 0.1

    results, grads = [], []
    cnt = AotCounter()
    for fn in (f, dynamo.optimize(cnt)(f)):
        x = torch.arange(15.0).reshape(3, 5).div(10).requires_grad_(True)
        t, u = fn(x)
        if write:
            with torch.no_grad():
                t += 1
        try:
            u.sum().backward()
            results.append(None)
            grads.append(x.grad)
        except RuntimeError as e:
            results.append("modified by an inplace operation" in str(e))
    assert (cnt.frame_count, cnt.aot_ran()) == (1, True)
    assert results == ([True, True] if write else [None, None])
    if not write:
        torch.testing.assert_close(grads[1], grads[0])


def _written_input_program(kind):
    def out_only(x, t1):            # t1's new value depends on t1 alone
        t0 = x + 1
        t1 *= 2
        return t0

    def written_from_x(x, t1):      # ... on t1 and x
        t0 = x * 3
        t1.add_(x)
        return t0
    return {"out_only": out_only, "written_from_x": written_from_x}[kind]


@pytest.mark.parametrize("kind", ["out_only", "written_from_x"])
@pytest.mark.parametrize("loss_on", ["output", "written", "both"])
def test_grad_of_an_input_written_in_place_follows_eager(kind, loss_on):
    """(repro aot_zero_grad_for_input_only_written_in_place, fuzz seed
    8926009) aot's node has an output for an input the graph writes (its
    new value, copied back after the call). The gate neither counted it
    (one user output: no gating) nor matched the input's autograd edge
    (read after the call, when the input's grad_fn is the copy): y got a
    zero .grad where eager leaves None. Gradients of x and y equal
    eager's wherever the loss reaches."""
    fn = _written_input_program(kind)
    got = []
    for compiled in (False, True):
        cnt = AotCounter()
        run = dynamo.optimize(cnt)(fn) if compiled else fn
        x = torch.randn(2, 3, requires_grad=True)
        y = torch.randn(2, 3, requires_grad=True)
        t1 = y * 1
        out = run(x, t1)
        loss = {"output": out.sum(), "written": t1.sum(), "both": out.sum() + t1.sum()}[loss_on]
        loss.backward()
        got.append([None if g is None else g.clone() for g in (x.grad, y.grad)])
        if compiled:
            assert cnt.frame_count == 1 and cnt.aot_ran()
        dynamo.reset()
    for e, c in zip(*got):
        assert (e is None) == (c is None), (e, c)
        if e is not None:
            assert torch.allclose(e, c)


@pytest.mark.parametrize("shape", [(2, 3), (2, 0)])
def test_written_input_aliasing_another_is_found_when_empty(shape):
    """(repro aot_empty_aliased_inputs_written_backward_not_refused, fuzz
    seed 9010644) after a break, the graph takes x and t0 = x.detach()
    (one storage) and writes x. Such calls run the captured ops eagerly
    (aot would treat the two as unrelated); the aliasing was found by the
    storages' data pointers, which an empty storage does not have: aot
    ran, and a backward eager refuses (t0 * w saved t0, written through
    x) ran. Found by the storage itself now, empty or not."""
    w = torch.nn.Parameter(torch.tensor(0.5))

    def f(x, lst):
        t0 = x.detach()
        i = int(numpy.sum(lst))         # a break: t0 and x enter the next graph
        t0 = t0 * w
        x[0] = i
        return t0

    for compiled in (False, True):
        cnt = AotCounter()
        run = dynamo.optimize(cnt)(f) if compiled else f
        out = run(torch.ones(*shape), [])
        with pytest.raises(RuntimeError, match="modified by an inplace operation"):
            out.sum().backward()
        if compiled:
            assert cnt.frame_count == 2
        dynamo.reset()
    assert backends._share_storage([torch.ones(2, 0), torch.ones(2, 0)]) is False


def test_mask_of_an_empty_input_in_a_no_grad_block_keeps_grad_outside_it():
    """(repro aot_empty_mask_in_no_grad_block_drops_grad, fuzz seed
    9232197) a boolean mask of an empty input inside a no_grad block: aot's
    first trace (on real inputs) fails on the data-dependent size and is
    retried on fakes with a shape env, but the failure left grad mode off
    (the trace stopped inside the block), so the retry compiled an
    inference graph: t1, computed with grad on, came back without grad."""
    def f(x, y):
        t1 = y + x[:, -1:]
        with torch.no_grad():
            t0 = x + x[x > 0].sum()
        return t0, t1

    cnt = AotCounter()
    opt = dynamo.optimize(cnt)(f)
    for shape in [(0, 3), (2, 3)]:
        x, y = torch.randn(*shape, requires_grad=True), torch.randn(*shape, requires_grad=True)
        want, got = f(x, y), opt(x, y)
        assert [o.requires_grad for o in got] == [o.requires_grad for o in want] == [False, True]
        assert all(torch.equal(a, b) for a, b in zip(want, got))
        got[1].sum().backward()
        assert torch.equal(y.grad, torch.ones(*shape))
    assert cnt.aot_ran() and torch.is_grad_enabled()


def test_input_written_after_the_call_when_the_reached_output_does_not_read_it():
    """(repro aot_input_written_under_no_grad_after_saved_for_backward, fuzz
    seed 10300776) the graph saves x for t1's backward; a no_grad write to
    x after the call, then a backward through t0 alone: eager's AddBackward
    reads nothing and runs, aot's one node read the saved x and raised.
    The saved x is copied at the call (_SavedTensors): eager's gradient."""
    def f(x):
        t0 = x + 1
        return t0, x * t0.amax(dim=1, keepdim=True)

    grads = []
    cnt = AotCounter()
    for fn in (f, dynamo.optimize(cnt)(f)):
        x = torch.arange(8.0).reshape(4, 2).requires_grad_(True)
        t0, t1 = fn(x)
        with torch.no_grad():
            x.unsqueeze(0).sub_(1)
        t0.sum().backward()
        grads.append(x.grad)
        with pytest.raises(RuntimeError, match="modified by an inplace operation"):
            t1.sum().backward()          # t1's backward reads x: eager's error
    assert (cnt.frame_count, cnt.aot_ran()) == (1, True)
    torch.testing.assert_close(grads[0], grads[1])


def test_node_reached_with_no_gradient_reads_nothing_written():
    """(repro aot_module_param_grad_with_written_input, fuzz seed 10315084)
    graph g1 saves x (no grad) for w's gradient; x is written after it; a
    second graph's node takes g1's output t but the loss reaches only its
    output that depends on w: its gate gives t no gradient, and autograd
    still calls g1's node, with none. Eager never runs t's backward; aot's
    read the written x and raised. Such a backward reads its saved tensors
    as they are (its results are dropped)."""
    w = torch.nn.Parameter(torch.tensor(0.5))

    def g1(x):
        return x * w

    def g2(t):
        return t + 1, w.sum() * 2

    grads = []
    cnt = AotCounter()
    for a, b in ((g1, g2), (dynamo.optimize(cnt)(g1), dynamo.optimize(cnt)(g2))):
        w.grad = None
        x = torch.arange(6.0).reshape(3, 2)
        t = a(x)
        x[0].add_(1)
        _, s = b(t)
        s.backward()
        grads.append(w.grad.clone())
    assert (cnt.frame_count, cnt.aot_ran()) == (2, True)
    torch.testing.assert_close(grads[0], grads[1])
