"""Ops whose output size depends on the data (torch.where(mask), nonzero,
boolean-mask indexing) stay in the graph with a symbolic size
(config.capture_dynamic_output_shape_ops, on by default); a Python read of
such a size is a break. Counts graphs, breaks and compiles."""
import torch

import dynamo
from dynamo import records


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
        compiles, graphs, breaks = _run(_route, _inputs(0))
    finally:
        dynamo.config.capture_dynamic_output_shape_ops = True
    assert breaks >= 3 and graphs >= 2


def _read_size(x):
    n = x[x > 0]
    return n * 2, n.shape[0] + 1       # the size is data: not a constant


def _len_size(x):
    return torch.nonzero(x) + len(torch.nonzero(x))


def test_reading_a_data_dependent_size_breaks():
    x, y = torch.tensor([1.0, -1.0, 2.0]), torch.tensor([1.0, 3.0, 2.0])
    compiles, graphs, breaks = _run(_read_size, (x,), (y,))
    assert breaks == 1, breaks
    compiles, graphs, breaks = _run(_len_size, (x,), (y,))
    assert breaks == 1, breaks


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
