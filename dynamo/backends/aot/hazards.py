"""Why a captured graph cannot run through AOT autograd with eager's
semantics: each check returns a reason (a str) or None, and a graph with a
reason runs its captured ops eagerly (backends/aot/compile.py). The
differences they find are listed in backends/aot/__init__.py.

Reads the graph, its example values and the current grad mode (the mode the
graph is entered in: a guard of its frame); changes nothing.
"""
import torch
import torch.fx

from .graph import _contiguous_strides, _example_requires_grad, _inplace_operators, _is_inplace, \
    _mutates, _saved_values


def _grad_mode_hazard(gm):
    """Why aot's compiled function cannot reproduce eager's autograd
    metadata for graph `gm` (backends/aot/__init__.py), or None. The graph is entered in
    the current grad mode (a guard of its frame). A no_grad view is a view
    made with grad off of a tensor that requires grad (its own
    requires_grad follows its base's: False for a leaf that is a view of a
    tensor that does not), or a view of such a view; a hazard when
    returned or used with grad on."""
    entry = mode = torch.is_grad_enabled()
    nograd_views = set()
    for n in gm.graph.nodes:
        if n.op == "call_function" and n.target is torch._C._set_grad_enabled:
            mode = bool(n.args[0])
            if mode and not entry:
                return "the graph, entered with grad mode off, turns it on"
            continue
        used = []
        torch.fx.node.map_arg((n.args, n.kwargs), used.append)
        if n.op == "output":
            if nograd_views.intersection(used):
                return "the graph returns a view made under no_grad"
            continue
        if mode and nograd_views.intersection(used):
            return "an op with grad mode on uses a view made under no_grad"
        ex = n.meta.get("example_value")
        if isinstance(ex, torch.Tensor) and ex._is_view() and (
                nograd_views.intersection(used) or
                (not mode and any(_example_requires_grad(gm, u) for u in used))):
            nograd_views.add(n)
    return None


def _requires_grad_hazard(gm):
    """Why the graph's `t.requires_grad_()` would be lost, or None: the
    tracer records it on a tensor the graph computes under no_grad
    (TensorVariable._fresh_under_no_grad), which aot's functionalized
    trace and Inductor drop (the output came back with requires_grad
    False). Such graphs run their captured ops eagerly."""
    for n in gm.graph.nodes:
        if n.op == "call_method" and n.target == "requires_grad_":
            return "the graph calls requires_grad_() on a tensor it computes"
    return None


def _saved_value_overwritten(gm):
    """Why eager's backward through the graph's outputs would raise, or
    None: an in-place op of the graph wrote a value autograd saved for the
    backward (`t = x.softmax(-1); t[1:] += 1`: softmax saves its result).
    aot's functionalized graph saves its own copies, so its backward ran
    without the error. Found on the example outputs' autograd graph (the
    capture's fake tensors record one): reading a saved value that was
    overwritten raises."""
    if not torch.is_grad_enabled() or not _mutates(gm):
        return None
    out = next((n for n in reversed(gm.graph.nodes) if n.op == "output"), None)
    if out is None:
        return None
    for fn, name, value in _saved_values(out.args):
        if isinstance(value, RuntimeError) and "modified by an inplace operation" in str(value):
            return f"an in-place op overwrites a value {type(fn).__name__} saved for the backward"
    return None


def _size1_stride_hazard(gm):
    """Why aot's outputs may not have eager's strides, or None. The stride
    of a size-1 dim, and every stride of an empty tensor, is the kernel's
    free choice (it addresses the same memory either way), and a user can
    read it. aot runs eager's kernels,
    but not eager's ops in two places: (1) an in-place op on a computed
    tensor (`t = x + 0; t.clamp_(..)`) becomes an out-of-place op, whose
    result (and everything computed from it) gets that op's strides, where
    eager's keeps the target's; (2) an output that is a view of an
    intermediate and requires grad comes back through aten._unsafe_view,
    with contiguous strides (`cat(..).narrow(..)`: (1, 1) for eager's
    (2, 1)). Eager's strides are known only by running eager's kernels, so
    a graph with an output of 2+ dims with a size-1 or size-0 dim and
    either of these runs its captured ops eagerly; other graphs are not
    affected. (Empty: `t = x.clone(); t.add_(t)` of x = empty(3, 0).t(),
    eager's t keeps the clone's (1, 1), aot's out-of-place add gives
    (3, 1): fuzz seed 9508618.)"""

    def free(ex):
        return isinstance(ex, torch.Tensor) and ex.dim() >= 2 and \
            all(type(d) is int for d in ex.shape) and min(ex.shape) <= 1
    out = next((n for n in reversed(gm.graph.nodes) if n.op == "output"), None)
    outs = []
    if out is not None:
        torch.fx.node.map_arg(out.args, outs.append)
    outs = [o for o in outs if free(o.meta.get("example_value"))]
    if not outs:
        return None
    inplace = _inplace_operators()
    inputs = {id(n.meta.get("example_value")) for n in gm.graph.nodes if n.op == "placeholder"}
    for n in gm.graph.nodes:
        if not (_is_inplace(n, inplace) and n.args and isinstance(n.args[0], torch.fx.Node)) or \
                n.args[0].op in ("placeholder", "get_attr"):
            continue
        # the tensor written: a view's base is what aot recomputes out of place
        ex = n.args[0].meta.get("example_value")
        root = ex._base if isinstance(ex, torch.Tensor) and ex._is_view() else ex
        if free(root) and id(root) not in inputs and \
                (0 not in root.shape or tuple(root.stride()) != _contiguous_strides(root.shape)):
            # (an empty one only with other strides than contiguous ones,
            # which are what aot's out-of-place op gives it)
            return "an in-place op writes a computed tensor with a size-1 or size-0 dim (its strides)"
    if not torch.is_grad_enabled():
        return None
    for o in outs:
        ex = o.meta["example_value"]
        base = ex._base if ex._is_view() else None
        if ex.requires_grad and base is not None and base.grad_fn is not None and \
                tuple(ex.stride()) != _contiguous_strides(ex.shape):
            return "an output requiring grad is a view of an intermediate with a size-1 dim (its strides)"
    return None
