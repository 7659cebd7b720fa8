"""Ops whose output size depends on the data (torch.where(mask), nonzero,
boolean-mask indexing) stay in the graph with a symbolic size
(config.capture_dynamic_output_shape_ops, on by default). Reading such a
size gives an unbacked SymInt (a SymNodeVariable) as torch.compile makes
it: arithmetic, min/max (torch.sym_min/sym_max) and op arguments stay in
the graph; a branch it cannot decide ends the graph with the relation as
an output, and a use needing its number (range(), a Python int) breaks.
Counts graphs, breaks and compiles, and outputs against eager."""
import pytest
import torch

import dynamo
from dynamo import records
from dynamo.testing import CompileCounter


def _run(fn, *calls):
    dynamo.reset()
    start = records.mark()
    opt = dynamo.optimize("eager")(fn)
    for args in calls:
        torch.testing.assert_close(opt(*args), fn(*args))
    recs = records.records_since(start)
    return (len(recs), sum(len(r.graphs) for r in recs),
            sum(len(r.break_reasons) for r in recs))


def _route(x, mask, w):
    # the sparse-MoE routing loop of Mixtral, in small
    out = torch.zeros_like(x)
    for e in range(mask.shape[0]):
        idx, top = torch.where(mask[e])
        out.index_add_(0, top, x[top] * w[top, idx, None])
    return out


def _inputs(seed):
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(6, 4, generator=g)
    mask = torch.rand(3, 2, 6, generator=g) > 0.5
    return x, mask, torch.rand(6, 2, generator=g)


def test_where_mask_in_a_loop_is_one_graph_for_any_data():
    a, b = _inputs(0), _inputs(1)
    assert int(a[1].sum()) != int(b[1].sum())       # different nonzero counts
    compiles, graphs, breaks = _run(_route, a, b)
    assert (compiles, graphs, breaks) == (1, 1, 0)   # b reuses a's graph


def test_config_off_breaks_at_the_op():
    try:
        dynamo.config.capture_dynamic_output_shape_ops = False
        dynamo.config.skip_frame_on_loop_break = False     # the per-iteration cut
        compiles, graphs, breaks = _run(_route, _inputs(0))
    finally:
        dynamo.config.capture_dynamic_output_shape_ops = True
        dynamo.config.skip_frame_on_loop_break = True
    assert breaks >= 3 and graphs >= 2


def _read_size(x):
    n = x[x > 0]
    return n * 2, n.shape[0] + 1       # the size is data: not a constant


def _len_size(x):
    return torch.nonzero(x) + len(torch.nonzero(x))


def test_reading_a_data_dependent_size_stays_in_the_graph():
    # the size is a graph output (an int), computed when the graph runs:
    # the second call, with another count, reuses the graph
    x, y = torch.tensor([1.0, -1.0, 2.0]), torch.tensor([1.0, 3.0, 2.0])
    assert _run(_read_size, (x,), (y,)) == (1, 1, 0)
    assert _run(_len_size, (x,), (y,)) == (1, 1, 0)
    dynamo.reset()
    out = dynamo.optimize("eager")(_read_size)(y)
    assert type(out[1]) is int and out[1] == 4


def test_aot_eager_compiles_the_graph_with_a_symbolic_size(recwarn):
    # AOT autograd traces such a graph with fakes from a fake mode with a
    # shape env (dynamo.backends._aot_inputs): no backend failure, one compile
    a, b = _inputs(0), _inputs(1)
    dynamo.reset()
    start = records.mark()
    fn = dynamo.optimize("aot_eager")(_route)
    x = a[0].clone().requires_grad_(True)
    fn(x, a[1], a[2]).sum().backward()
    got_grad = x.grad.clone()
    x.grad = None
    _route(x, a[1], a[2]).sum().backward()
    torch.testing.assert_close(got_grad, x.grad)
    torch.testing.assert_close(fn(*b), _route(*b))
    recs = records.records_since(start)
    # x requires grad, b[0] does not: two compiles, each one graph, none failed
    assert [(r.status, len(r.graphs)) for r in recs] == [("ok", 1), ("ok", 1)]
    assert not [w for w in recwarn if "failed" in str(w.message)]


# ------------------------------------------------ unbacked sizes as SymInts
def _topk_per_class(boxes, scores):
    # the shape of SSD/RetinaNet's postprocess: per class, keep the boxes
    # over a threshold, then the top k of them (k = min(k, how many))
    out_b, out_s = [], []
    for label in range(1, scores.shape[1]):
        score = scores[:, label]
        keep = score > 0.5
        score, box = score[keep], boxes[keep]
        n = min(3, score.size(0))
        score, idx = score.topk(n)
        out_b.append(box[idx])
        out_s.append(score)
    b, s = torch.cat(out_b), torch.cat(out_s)
    return b.narrow(0, 0, max(b.shape[0] - 1, 0)) * 2, s + 1


def _boxes(seed, n=20):
    g = torch.Generator().manual_seed(seed)
    return torch.randn(n, 4, generator=g), torch.rand(n, 3, generator=g)


def test_min_max_of_a_data_dependent_size_stay_in_the_graph():
    a, b = _boxes(0), _boxes(1)
    none = (a[0], torch.zeros(20, 3))            # no score over the threshold: k = 0
    assert _run(_topk_per_class, a, b, none) == (1, 1, 0)
    dynamo.reset()
    ex = dynamo.explain(_topk_per_class)(*a)
    assert (ex.graph_count, ex.graph_break_count) == (1, 0)
    ops = {getattr(n.target, "__name__", n.target) for g in ex.graphs for n in g.graph.nodes}
    assert {"sym_min", "sym_max", "topk"} <= ops, ops
    # topk(min(3, n)) records Min(3, u) <= u per class: true for any u, not
    # checked; narrow's length <= size (a Max of a sum) is the one check
    checks = [n for g in ex.graphs for n in g.graph.nodes
              if n.target is torch.ops.aten._assert_scalar.default]
    assert len(checks) == 1, [c.args[1] for c in checks]


def _branch_on_count(x):
    idx = torch.nonzero(x > 0)
    if idx.numel() == 0:                         # undecidable at trace time
        return x * 0
    return x[idx[:, 0]] + idx.shape[0]


def test_branch_on_a_data_dependent_size_breaks_with_the_relation():
    pos, neg = (torch.tensor([1.0, -1.0, 2.0]),), (torch.tensor([-1.0, -2.0, -3.0]),)
    compiles, graphs, breaks = _run(_branch_on_count, pos, neg, pos)
    assert breaks == 1 and graphs == 3, (compiles, graphs, breaks)   # the graph, then each side
    dynamo.reset()
    ex = dynamo.explain(_branch_on_count)(*pos)
    assert [r.reason for r in ex.break_reasons] == ["generic_jump TensorVariable()"]


def _python_number(x):
    n = x[x > 0].shape[0]
    return x + sum(i for i in range(n))          # range() needs the number itself


def test_a_python_use_of_a_data_dependent_size_breaks():
    x, y = torch.tensor([1.0, -1.0, 2.0]), torch.tensor([1.0, 3.0, 2.0])
    compiles, graphs, breaks = _run(_python_number, (x,), (y,))
    assert breaks == 1, (compiles, graphs, breaks)
    dynamo.reset()
    ex = dynamo.explain(_python_number)(x)
    assert "computed from data" in ex.break_reasons[0].reason


def _clip(x):
    return x[: min(x.size(0), 4)] * 2, max(x.size(0), 4)


def test_min_max_of_a_dynamic_input_size_stay_symbolic():
    # a dynamic dimension: min/max are sym_min/sym_max nodes, so sizes on
    # both sides of 4 reuse one graph (specializing guarded the value)
    xs = [torch.randn(n) for n in (6, 3, 9, 2)]
    dynamo.reset()
    cnt = CompileCounter()
    opt = dynamo.optimize(cnt)(_clip)
    x0 = xs[0]
    dynamo.mark_dynamic(x0, 0)
    for x in xs:
        got, want = opt(x), _clip(x)
        torch.testing.assert_close(got[0], want[0])
        assert got[1] == want[1] and type(got[1]) is int
    assert cnt.frame_count == 1


def test_min_of_mixed_int_and_float_keeps_the_item_as_it_is():
    def f(x):
        return x * max(x.shape[0], 2.5)          # the builtin returns 3 (an int) or 2.5
    dynamo.reset()
    for n in (3, 2):
        x = torch.randn(n)
        torch.testing.assert_close(dynamo.optimize("eager")(f)(x), f(x))


def _assumed(x, y):
    t = x[x > 0]
    z = t + y                                    # the fake run assumes len(t) == 3
    if t.shape[0] == 3:                          # folded on that assumption
        return z * 10
    return z


@pytest.mark.parametrize("backend", ["eager", "aot_eager"])
def test_an_assumption_on_a_data_dependent_size_is_checked_when_the_graph_runs(backend):
    # eager broadcasts a length-1 t; the graph folded the branch on
    # len(t) == 3: the check fails and the frame re-runs eagerly (aot_eager
    # traces the graph again: the check is an op it keeps)
    y = torch.arange(3.0)
    three, one = torch.tensor([1.0, 2.0, 3.0, -1.0]), torch.tensor([1.0, -1.0, -2.0, -3.0])
    dynamo.reset()
    cnt = CompileCounter()
    opt = dynamo.optimize(cnt if backend == "eager" else backend)(_assumed)
    torch.testing.assert_close(opt(three, y), _assumed(three, y))
    torch.testing.assert_close(opt(one, y), _assumed(one, y))       # not 10x
    torch.testing.assert_close(opt(three, y), _assumed(three, y))
    if backend == "eager":
        assert cnt.frame_count == 1
    ex = dynamo.explain(_assumed)(three, y)
    assert (ex.graph_count, ex.graph_break_count) == (1, 0)
    checks = [n for g in ex.graphs for n in g.graph.nodes
              if n.target is torch.ops.aten._assert_scalar.default]
    assert len(checks) == 1


def _assumed_with_a_write(x, y, w):
    t = x[x > 0]
    z = t + y
    w.unsqueeze_(0)                 # changes an input's sizes: the frame cannot re-run
    if t.shape[0] == 3:
        return z * 10
    return z


def test_a_failed_assumption_raises_where_the_frame_cannot_re_run():
    y = torch.arange(3.0)
    three, one = torch.tensor([1.0, 2.0, 3.0, -1.0]), torch.tensor([1.0, -1.0, -2.0, -3.0])
    dynamo.reset()
    opt = dynamo.optimize("eager")(_assumed_with_a_write)
    torch.testing.assert_close(opt(three, y, torch.zeros(2)),
                               _assumed_with_a_write(three, y, torch.zeros(2)))
    with pytest.raises(RuntimeError, match="traced assuming"):
        opt(one, y, torch.zeros(2))         # never the folded path silently


def _stride_of_masked(x):
    t = x[x > 0]
    return t.stride(0), t * 2


def test_stride_of_a_data_dependent_tensor_is_a_break_not_a_failed_frame():
    # whether its size is 0/1 (the kernel's free stride choice) is not known
    x, y = torch.tensor([1.0, -1.0, 2.0]), torch.tensor([-1.0, -3.0, 2.0])
    assert _run(_stride_of_masked, (x,), (y,))[2] == 1
    dynamo.reset()
    ex = dynamo.explain(_stride_of_masked)(x)
    assert (ex.graph_count, ex.graph_break_count) == (2, 1)
    assert ex.break_reasons[0].reason == "stride of a tensor whose shape depends on its data"
