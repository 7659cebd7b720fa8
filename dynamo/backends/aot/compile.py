"""AOT autograd with eager semantics: `_aot` traces a captured graph
through aot_module_simplified and returns the runtime that calls it
(`_AotRuntime`), or the graph's own forward when a hazard says aot cannot
give eager's results; `aot_eager` is the backend that runs aot's graphs
with eager kernels.

AOT autograd's modules are imported when a graph is compiled, not when
dynamo is imported.
"""
import logging

import torch
from torch._subclasses.fake_tensor import DynamicOutputShapeException

from ..common import _fake_inputs
from ..registry import register_backend
from .analysis import _attr_keys, _grad_deps, _hoist_output_detach, _no_grad_outputs, _output_creation_meta, \
    _saved_inputs
from .graph import _mutates, _share_storage
from .hazards import _grad_mode_hazard, _requires_grad_hazard, _saved_value_overwritten, \
    _size1_stride_hazard
from .runtime import _AotRuntime

log = logging.getLogger("dynamo")


@register_backend("aot_eager")
def aot_eager(gm, example_inputs):
    """AOT autograd (forward and backward graphs) run with eager kernels."""
    return _aot(gm, example_inputs)


def _aot(gm, example_inputs, **kw):
    """The compile of the AOT backends: an _AotRuntime around
    aot_module_simplified's compiled function for `gm` (forward and
    backward graphs run by the nop compiler; `kw` goes to aot, e.g.
    decompositions), or gm.forward itself when a hazard says aot cannot
    give eager's results. Raises what aot's trace raises (registry.wrap's
    error policy takes it)."""
    from torch._functorch.aot_autograd import aot_module_simplified
    hazard = _grad_mode_hazard(gm) or _requires_grad_hazard(gm) or _saved_value_overwritten(gm) or \
        _size1_stride_hazard(gm)
    if hazard is not None:
        log.debug("aot: %s; the graph's ops run eagerly", hazard)
        return gm.forward
    deps = _grad_deps(gm)
    eager_forward = gm.forward
    views = _output_creation_meta(gm)
    no_grad = _no_grad_outputs(gm)
    saved = tuple(s for s in _saved_inputs(gm) if s[0] == "out" or _is_tensor(example_inputs[s[1]]))
    gm, detached = _hoist_output_detach(gm)
    seeded = []
    fw_failed = [False]     # set when the forward graph itself raised (see _AotRuntime)

    def fw_compiler(g, inputs):
        seeded.append(_draws_random(g))
        inner = _nop_compiler(g, inputs)

        def forward_graph(args):        # aot's boxed convention: one list of inputs
            try:
                return inner(args) if boxed else inner(*args)
            except BaseException:
                fw_failed[0] = True
                raise
        boxed = getattr(inner, "_boxed_call", False)
        forward_graph._boxed_call = True
        return forward_graph
    mutates = _mutates(gm)
    if mutates and _share_storage([x for x in example_inputs if _is_tensor(x)]):
        # aot specializes its compiled function to the aliasing of the inputs
        # it traced (a synthetic base for mutated aliased inputs): traced on
        # aliased inputs, it later wrote a call's mutation of y into x. Such
        # calls run eagerly (the runtime below), so trace it on unaliased copies.
        example_inputs = [_unaliased(x) if _is_tensor(x) else x for x in example_inputs]
    kw.setdefault("keep_inference_input_mutations", True)
    kw.setdefault("partition_fn", _partition_saving_mutated_inputs)
    grad = torch.is_grad_enabled()
    try:
        compiled = aot_module_simplified(gm, _aot_inputs(gm, example_inputs), fw_compiler=fw_compiler,
                                         bw_compiler=_nop_compiler, **kw)
    except DynamicOutputShapeException:
        # a boolean mask or nonzero of an empty tensor: the capture's
        # example had a known size 0, aot's fakes need a shape env. The
        # failed trace may have stopped inside the graph's no_grad region:
        # traced with grad off, aot would compile an inference graph
        torch._C._set_grad_enabled(grad)
        compiled = aot_module_simplified(gm, _aot_inputs(gm, example_inputs, dynamic=True),
                                         fw_compiler=fw_compiler, bw_compiler=_nop_compiler, **kw)
    runtime = _AotRuntime(compiled, eager_forward, any(seeded), deps, _attr_keys(gm))
    runtime.mutates = mutates
    runtime.detached = detached
    runtime.no_grad = no_grad
    runtime.saved = saved
    runtime.views = views
    runtime.fw_failed = fw_failed
    return runtime


def _aot_inputs(gm, example_inputs, dynamic=False):
    """The inputs AOT autograd traces with: the real ones, unless a node's
    size depends on data (nonzero, torch.where(mask); an unbacked symbol of
    the capture; `dynamic`: such an op whose size the capture knew, on an
    empty input): then fakes of them (_fake_inputs), which AOT adopts and
    which let such ops keep a symbolic size."""
    dynamic = dynamic or any(isinstance(v, torch.Tensor) and any(type(d) is not int for d in v.shape)
                             for v in (n.meta.get("example_value") for n in gm.graph.nodes))
    return _fake_inputs(example_inputs) if dynamic else example_inputs


def _nop_compiler(gm, example_inputs):
    from torch._functorch.compilers import nop  # returns gm itself, boxed-call aware
    return nop(gm, example_inputs)


def _partition_saving_mutated_inputs(joint, joint_inputs, **kw):
    """aot's default partition, then: a value the backward saves that is
    the new value of an input mutated in the forward graph (its trailing
    `copy_(input, value)`, kept in the graph by keep_inference_input_mutations)
    is saved as the input itself. Eager saves the input tensor: a later
    write to it through numpy (no version bump) shows in eager's backward,
    and a version-bumping write makes eager's backward raise; a saved
    functional copy did neither."""
    from torch._functorch.partitioners import default_partition
    fw, bw = default_partition(joint, joint_inputs, **kw)
    nfwd = kw.get("num_fwd_outputs")
    copied = {}
    for n in fw.graph.nodes:
        if n.op == "call_function" and n.target is torch.ops.aten.copy_.default and \
                n.args[0].op == "placeholder":
            copied[n.args[1]] = n.args[0]
    out = next(n for n in reversed(fw.graph.nodes) if n.op == "output")
    if not copied or nfwd is None or not isinstance(out.args[0], (tuple, list)):
        return fw, bw
    values = list(out.args[0])
    saved = [copied.get(v, v) if isinstance(v, torch.fx.Node) else v for v in values[nfwd:]]
    if saved != values[nfwd:]:
        out.args = (type(out.args[0])(values[:nfwd] + saved),)
        fw.graph.lint()
        fw.recompile()
    return fw, bw


def _is_tensor(x):
    return isinstance(x, torch.Tensor)


def _unaliased(t):
    """A tensor like `t` (dtype, size, strides, offset, requires_grad,
    values) on a copy of its storage; `t` itself when it has no plain
    storage (a subclass, sparse): aot then traces the aliasing it sees."""
    if type(t) not in (torch.Tensor, torch.nn.Parameter) or t.layout != torch.strided:
        return t
    with torch.no_grad():
        c = torch.empty(0, dtype=t.dtype, device=t.device)
        c.set_(t.untyped_storage().clone(), t.storage_offset(), t.size(), t.stride())
    return c.requires_grad_(t.requires_grad)


def _draws_random(g):
    """Does the aten graph `g` call an op tagged nondeterministic_seeded?"""
    for n in g.graph.nodes:
        if n.op == "call_function" and torch.Tag.nondeterministic_seeded in getattr(n.target, "tags", ()):
            return True
    return False
