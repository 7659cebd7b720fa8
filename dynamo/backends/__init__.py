"""Backends: the compilers a captured fx graph is handed to.

A backend is a callable `(gm: torch.fx.GraphModule, example_inputs: list)
-> callable`. Named backends live in a registry; `lookup` resolves a name or
passes a callable through; `wrap` adds the error policy (warn and run the
graph eagerly, or raise when config.raise_on_backend_error). The registry is
the only place that knows the built-in names.
"""
import functools
import logging
import warnings

from .. import _C, config
from .. import rng as _rng
from ..exc import BackendCompilerFailed

log = logging.getLogger("dynamo")
_BACKENDS = {}


def register_backend(name=None):
    """Decorator: register `fn` under `name` (default: its __name__)."""
    def deco(fn):
        _BACKENDS[name or fn.__name__] = fn
        return fn
    return deco


def list_backends():
    """Names accepted by dynamo.optimize(), sorted."""
    return sorted(_BACKENDS)


def lookup(backend):
    """Return (name, callable) for a backend name or callable.

    Raises ValueError naming the available backends for an unknown name and
    TypeError for anything that is neither a str nor callable.
    """
    if isinstance(backend, str):
        fn = _BACKENDS.get(backend)
        if fn is None:
            raise ValueError(f"unknown backend {backend!r}; available: {', '.join(list_backends())}")
        return backend, fn
    if callable(backend):
        return getattr(backend, "__name__", type(backend).__name__), backend
    raise TypeError(f"backend must be a name or a callable (gm, example_inputs) -> callable, "
                    f"got {type(backend).__name__}")


def wrap(name, fn):
    """Wrap backend `fn` with the error policy; the result never raises
    unless config.raise_on_backend_error (then BackendCompilerFailed)."""
    @functools.wraps(fn)
    def compile_with_policy(gm, example_inputs):
        outputs = graph_outputs(gm)         # read before the backend: it may rewrite gm
        reference = _reference_copy(gm) if config.verify_correctness else None
        grad = _grad_enabled()
        try:
            compiled = fn(gm, example_inputs)
            if compiled is None or not callable(compiled):
                raise TypeError(f"backend returned {type(compiled).__name__}, expected a callable")
            returned = graph_outputs(getattr(compiled, "__self__", None)) \
                if _fx_forward_code(compiled) is not None else None
            if outputs is not None and returned is not None and returned != outputs:
                raise TypeError(f"backend returned the forward of a graph with {returned} "
                                f"output(s) for a graph with {outputs}")
            if reference is not None:
                _verify(name, reference, compiled, example_inputs)
        except BackendCompilerFailed:
            raise
        except Exception as e:  # noqa: BLE001 - every backend failure takes the same path
            if config.raise_on_backend_error:
                raise BackendCompilerFailed(name, e) from e
            warnings.warn(f"dynamo: backend {name!r} failed ({type(e).__name__}: {e}); "
                          f"running the graph eagerly", RuntimeWarning, stacklevel=2)
            compiled = gm.forward
        finally:
            # a backend that runs the graph (aot's trace) and fails inside a
            # no_grad/enable_grad region of it leaves that mode set: the
            # frame would go on (and run the graph eagerly) in the wrong mode
            _set_grad_enabled(grad)
        # The compiled graph and whatever code the backend generated run
        # without the hook: they are ours, not the user's, to compile.
        # An fx GraphModule's own forward only needs its code skip-marked
        # (cheaper per call than switching the hook off and on around it);
        # anything else a backend returns is wrapped with the hook off, and
        # its results are checked to have one item per graph output (the
        # calling code indexes them: a wrong count is a TypeError naming
        # the backend, not an IndexError in the user's frame).
        # A graph that switches grad mode (a no_grad block) and raises inside
        # the block would leave the block's mode set for the caller, where
        # eager's `with` puts the entry mode back: on_error restores it.
        code = _fx_forward_code(compiled)
        on_error = _restore_grad_mode(grad) if _switches_grad_mode(gm) else None
        if code is not None and not _calls_user_code(gm) and on_error is None:
            _C.set_skip(code)
            return compiled
        if outputs is None:
            return _C.OptimizedCallable(compiled, None, 0, on_error=on_error)
        return _C.OptimizedCallable(compiled, None, 0, outputs, f"backend {name!r}", on_error=on_error)
    compile_with_policy.backend_name = name
    return compile_with_policy


def _grad_enabled():
    import torch
    return torch.is_grad_enabled()


def _set_grad_enabled(mode):
    import torch
    torch._C._set_grad_enabled(mode)


def _switches_grad_mode(gm):
    """Does the fx graph of `gm` call torch._C._set_grad_enabled?"""
    import torch
    import torch.fx
    return isinstance(gm, torch.fx.GraphModule) and any(
        n.op == "call_function" and n.target is torch._C._set_grad_enabled for n in gm.graph.nodes)


def _restore_grad_mode(mode):
    """A no-argument callable setting grad mode `mode` (no Python frame)."""
    import torch
    return functools.partial(torch._C._set_grad_enabled, mode)


def graph_outputs(gm):
    """How many values the fx graph of `gm` returns (its output node's
    tuple or list), or None when it is not a GraphModule returning one."""
    import torch.fx
    if not isinstance(gm, torch.fx.GraphModule):
        return None
    for node in reversed(gm.graph.nodes):
        if node.op == "output":
            value = node.args[0] if node.args else None
            return len(value) if isinstance(value, (tuple, list)) else None
    return None


def _reference_copy(gm):
    """A copy of the captured graph that the backend cannot modify."""
    import copy
    return copy.deepcopy(gm)


def _verify(name, reference, compiled, example_inputs):
    """config.verify_correctness: run the captured graph and the backend's
    result on copies of the example inputs; BackendCompilerFailed (a
    RuntimeError) if they differ. Raised whatever raise_on_backend_error says:
    wrong results must never be run silently."""
    import torch
    from .. import testing

    def fresh():
        return [x.clone() if isinstance(x, torch.Tensor) else x for x in example_inputs]
    with _no_hook():
        expected = reference(*fresh())
        got = compiled(*fresh())
    if not testing.same(expected, got):
        raise BackendCompilerFailed(name, RuntimeError(
            "config.verify_correctness: the compiled graph's results differ from the "
            "captured graph's on the example inputs"))


def _no_hook():
    from ..modes import hook_off
    return hook_off()


# operator namespaces whose kernels are torch's own C++ (no Python frame)
_TORCH_OP_NAMESPACES = frozenset({"aten", "prims"})


def _calls_user_code(gm):
    """Does the graph call Python code that is not torch's: functions put
    into it by dynamo.allow_in_graph, or operators of another namespace
    (`torch.ops.mylib.op`, made by torch.library.custom_op, whose kernel
    is usually a Python function: transformers 5.x's grouped-mm fallback
    loops over `offs.tolist()`)? Their frames must run with the hook off
    too: they are the graph's, not the user's, to compile (torch.compile
    runs its compiled graphs with its frame hook disabled as well)."""
    import torch
    from .. import decorators
    op_types = (torch._ops.OpOverload, torch._ops.OpOverloadPacket)
    for n in gm.graph.nodes:
        if n.op != "call_function":
            continue
        if decorators.is_allowed(n.target):
            return True
        if isinstance(n.target, op_types) and _op_namespace(n.target) not in _TORCH_OP_NAMESPACES:
            return True
    return False


def _op_namespace(op):
    """"aten" for torch.ops.aten.add and torch.ops.aten.add.Tensor."""
    if hasattr(op, "namespace"):                     # OpOverload
        return op.namespace
    return op._qualified_op_name.split("::")[0]      # OpOverloadPacket


def _fx_forward_code(compiled):
    """The code of `compiled` if it is a GraphModule's generated forward
    (calls only torch code), else None."""
    import torch.fx
    owner = getattr(compiled, "__self__", None)
    func = getattr(compiled, "__func__", None)
    if isinstance(owner, torch.fx.GraphModule) and func is not None:
        code = getattr(func, "__code__", None)
        if code is not None and code.co_filename.startswith("<eval_with_key>"):
            return code
    return None


@register_backend("eager")
def eager(gm, example_inputs):
    """Run the captured graph with PyTorch eager kernels."""
    return gm.forward


def _nop_compiler(gm, example_inputs):
    from torch._functorch.compilers import nop  # returns gm itself, boxed-call aware
    return nop(gm, example_inputs)


def _aot_inputs(gm, example_inputs, dynamic=False):
    """The inputs AOT autograd traces with: the real ones, unless a node's
    size depends on data (nonzero, torch.where(mask); an unbacked symbol of
    the capture; `dynamic`: such an op whose size the capture knew, on an
    empty input): then fakes of them (_fake_inputs), which AOT adopts and
    which let such ops keep a symbolic size."""
    import torch
    dynamic = dynamic or any(isinstance(v, torch.Tensor) and any(type(d) is not int for d in v.shape)
                             for v in (n.meta.get("example_value") for n in gm.graph.nodes))
    return _fake_inputs(example_inputs) if dynamic else example_inputs


def _fake_inputs(example_inputs):
    """Fakes of the tensor inputs (same sizes, strides, dtype, device;
    static shapes) from one fake mode with a shape env; other inputs as
    they are."""
    import torch
    from torch._subclasses.fake_tensor import FakeTensorMode
    from torch.fx.experimental.symbolic_shapes import ShapeEnv
    mode = FakeTensorMode(shape_env=ShapeEnv(allow_scalar_outputs=False))
    return [mode.from_tensor(x, static_shapes=True) if isinstance(x, torch.Tensor) else x
            for x in example_inputs]


@register_backend("aot_eager")
def aot_eager(gm, example_inputs):
    """AOT autograd (forward and backward graphs) run with eager kernels."""
    return _aot(gm, example_inputs)


# ---- AOT autograd with eager semantics --------------------------------------
# aot_module_simplified's compiled function differs from running the graph
# op by op in two ways a user can see; _AotRuntime restores eager's:
#  - its forward is functionalized: mutations of inputs are written back at
#    the end. When an op fails at run time (an int64 softmax, which the
#    fake-tensor trace accepted) the earlier mutations are lost, while
#    eager has applied them. Nothing has been written back when the
#    forward raises, so the captured graph is then run again op by op
#    (the torch RNG state restored first when the forward graph draws
#    random numbers): the user sees eager's mutations and eager's error.
#    Input mutations aot keeps in the graph (keep_inference_input_mutations:
#    trailing copy_ nodes; aot bumps those inputs' versions before running
#    it) are not written when the graph raises, so a raise inside the
#    forward graph is always replayed; one outside it only when no input's
#    version moved (else aot failed after writing back).
#  - the backward reads what eager's saves: a mutated input's new value is
#    saved as the input itself, not as a functional copy
#    (_partition_saving_mutated_inputs).
#    Graphs with in-place ops (augmented assignments `t += u` included)
#    called on inputs that share storage run their captured ops eagerly:
#    aot's synthetic bases for such inputs have failed after writing back
#    (regenerating an output view) and return a new tensor where eager's
#    in-place op returns the input object itself.
#  - its compiled function is one autograd node, recorded or not by the
#    grad mode of the call: it cannot give eager's autograd metadata where
#    the graph itself switches grad mode. A graph entered with grad off
#    that turns it on (an enable_grad block, or a resume function that
#    leaves a no_grad block) ran as inference: its outputs lost their
#    grad_fn, and views of inputs came back as no_grad views. A view made
#    under no_grad of a tensor that requires grad is, in eager, a leaf-like
#    tensor without grad_fn; returned, or used by an op with grad on, aot
#    gave it a grad_fn to its base (or failed to trace). Such graphs run
#    their captured ops eagerly (_grad_mode_hazard). So do graphs whose
#    in-place op overwrites a value eager's autograd saved for the
#    backward (eager's backward raises; aot's trace of it failed): found
#    on the capture's fake autograd graph (_saved_value_overwritten).
#  - one autograd node computes every input's gradient, and an output the
#    loss never reaches gets a zero gradient, so an input that only feeds
#    such outputs gets a zero .grad where eager leaves None. Where the
#    outputs do not all depend on the same inputs, a hook on that node
#    drops the gradients of the inputs that no reached output depends on.
#    An input the graph writes in place is one more output of that node
#    (its new value, copied back after the call), and its autograd edge
#    is the one it had before the call.
#    The zero gradient of an unreached output also runs through aot's
#    backward, where eager's autograd never goes: times an inf or NaN of
#    the graph (std of one row, an exp that overflowed) it makes NaN. When
#    an output was not reached and the node's gradients are not finite,
#    the hook recomputes eager's (_AotRuntime._eager_grads).
#  - its outputs are made while its forward runs with grad off: an output
#    that is a view comes back as a no_grad view, which refuses an in-place
#    op with grad on where eager's view accepts it (and the reverse). The
#    runtime gives view outputs the creation mode of the capture's example
#    (_output_creation_meta).
#  - the strides of size-1 dims: aot's out-of-place version of an in-place
#    op and its _unsafe_view of an output view of an intermediate choose
#    others than eager's kernels; such graphs run their captured ops
#    eagerly (_size1_stride_hazard).
#  - an output `v.detach()` next to an output `v` that is a view: aot
#    regenerates the detached output from v's base with the detach alone,
#    without v's own view steps, and fails on the shape (`t = a.t();
#    return t, t.detach()` - torch.compile's aot_eager fails the same
#    way). Such detaches run after the compiled function, on its output
#    v (_hoist_output_detach): the same tensor eager's detach returns.
#  - the values its backward reads are its own choice: where eager saved
#    an input, or an output, of the graph (or a view on its memory) and
#    the program writes that memory in place after the call, eager's
#    backward raises and aot's ran. The runtime checks those tensors'
#    versions in the backward (_saved_inputs, _AotRuntime._watch_saved).
#    The reverse: its one node reads all it saved whichever output the
#    loss reaches (and runs, with no gradient, when the loss reaches
#    none), where eager's reached nodes may have saved nothing on that
#    memory: aot's version check raised where eager's backward ran. Its
#    saved tensors are held through hooks for the call (_SavedTensors).

def _aot(gm, example_inputs, **kw):
    import torch
    from torch._functorch.aot_autograd import aot_module_simplified
    hazard = _grad_mode_hazard(gm) or _saved_value_overwritten(gm) or _size1_stride_hazard(gm)
    if hazard is not None:
        log.debug("aot: %s; the graph's ops run eagerly", hazard)
        return gm.forward
    deps = _grad_deps(gm)
    eager_forward = gm.forward
    views = _output_creation_meta(gm)
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
    from torch._subclasses.fake_tensor import DynamicOutputShapeException
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
    runtime.saved = saved
    runtime.views = views
    runtime.fw_failed = fw_failed
    return runtime


def _is_detach(n):
    import torch
    return isinstance(n, torch.fx.Node) and len(n.args) == 1 and not n.kwargs and isinstance(n.args[0], torch.fx.Node) and (
        (n.op == "call_method" and n.target == "detach") or
        (n.op == "call_function" and n.target in (torch.detach, torch.Tensor.detach, torch.ops.aten.detach.default)))


def _hoist_output_detach(gm):
    """(graph module for aot, ((j, i), ...)): where output j is
    `detach(v)` of a value v that is output i too, a copy of `gm` whose
    output j is v itself (the runtime detaches output i after the call:
    see above); `gm` and () when no output is such. The copy shares gm's
    parameters and buffers."""
    import torch
    out = next((n for n in reversed(gm.graph.nodes) if n.op == "output"), None)
    values = out.args[0] if out is not None and out.args else None
    if not isinstance(values, (tuple, list)):
        return gm, ()
    first = {}
    for i, v in enumerate(values):
        if isinstance(v, torch.fx.Node):
            first.setdefault(v, i)
    hoist = tuple((j, first[v.args[0]]) for j, v in enumerate(values)
                  if _is_detach(v) and v.args[0] in first)
    if not hoist:
        return gm, ()
    graph, env = torch.fx.Graph(), {}
    for n in gm.graph.nodes:
        if n is out:
            moved = list(values)
            for j, _ in hoist:
                moved[j] = values[j].args[0]
            graph.output(torch.fx.node.map_arg(type(values)(moved), env.__getitem__))
        else:
            env[n] = graph.node_copy(n, env.__getitem__)
    return torch.fx.GraphModule(gm, graph), hoist


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
    import torch

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


def _contiguous_strides(shape):
    strides, acc = [], 1
    for size in reversed(tuple(shape)):
        strides.append(acc)
        acc *= max(size, 1)
    return tuple(reversed(strides))


def _output_creation_meta(gm):
    """((j, meta), ...) for the graph outputs j whose value is a view:
    meta is the CreationMeta eager gives it (its example's: the capture ran
    the ops in the call's grad mode). aot returns a view of an intermediate
    made while its forward runs with grad off: a no_grad view, which an
    in-place op with grad on refuses where eager's view allows it (or the
    reverse). Empty when no output is a view."""
    import torch
    out = next((n for n in reversed(gm.graph.nodes) if n.op == "output"), None)
    values = out.args[0] if out is not None and out.args else None
    if not isinstance(values, (tuple, list)):
        return ()
    metas = []
    for j, v in enumerate(values):
        ex = v.meta.get("example_value") if isinstance(v, torch.fx.Node) else None
        if isinstance(ex, torch.Tensor) and ex._is_view():
            try:
                metas.append((j, torch._C._autograd._get_creation_meta(ex)))
            except Exception:  # noqa: BLE001 - a view without autograd view metadata: nothing to restore
                pass
    return tuple(metas)


def _restore_creation_meta(outs, metas):
    """Give the aot outputs listed in `metas` (_output_creation_meta)
    eager's CreationMeta where it differs; returns the outputs."""
    import torch
    get, put = torch._C._autograd._get_creation_meta, torch._C._autograd._set_creation_meta
    for j, meta in metas:
        o = outs[j]
        if isinstance(o, torch.Tensor) and not o._is_view() and o.requires_grad and \
                meta == torch._C._autograd.CreationMeta.MULTI_OUTPUT_NODE:
            # one of several views (unbind, split) of an intermediate: aot
            # returns a plain tensor, on which an in-place op ran where
            # eager's refuses it. A view of it carries eager's mode.
            if not isinstance(outs, list):
                outs = list(outs)
            o = outs[j] = o.view_as(o)
        if isinstance(o, torch.Tensor) and o._is_view():
            try:
                if get(o) != meta:
                    put(o, meta)
            except RuntimeError:    # no autograd view metadata (an inference tensor): left as it is
                pass
    return outs


def _grad_mode_hazard(gm):
    """Why aot's compiled function cannot reproduce eager's autograd
    metadata for graph `gm` (see above), or None. The graph is entered in
    the current grad mode (a guard of its frame). A no_grad view is a view
    made with grad off of a tensor that requires grad (its own
    requires_grad follows its base's: False for a leaf that is a view of a
    tensor that does not), or a view of such a view; a hazard when
    returned or used with grad on."""
    import torch
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


def _saved_value_overwritten(gm):
    """Why eager's backward through the graph's outputs would raise, or
    None: an in-place op of the graph wrote a value autograd saved for the
    backward (`t = x.softmax(-1); t[1:] += 1`: softmax saves its result).
    aot's functionalized graph saves its own copies, so its backward ran
    without the error. Found on the example outputs' autograd graph (the
    capture's fake tensors record one): reading a saved value that was
    overwritten raises."""
    import torch
    if not torch.is_grad_enabled() or not _mutates(gm):
        return None
    out = next((n for n in reversed(gm.graph.nodes) if n.op == "output"), None)
    if out is None:
        return None
    for fn, name, value in _saved_values(out.args):
        if isinstance(value, RuntimeError) and "modified by an inplace operation" in str(value):
            return f"an in-place op overwrites a value {type(fn).__name__} saved for the backward"
    return None


def _saved_values(outputs, stop=()):
    """(grad_fn, name, value) for each value saved for the backward on
    the autograd graph of the example values of the fx nodes in
    `outputs` (value: the exception when reading it raises), not going
    past the grad_fns in `stop`."""
    import torch
    todo, seen = [], set(stop)
    torch.fx.node.map_arg(outputs, lambda n: todo.append(getattr(n.meta.get("example_value"), "grad_fn", None)))
    while todo and len(seen) < 10000:
        fn = todo.pop()
        if fn is None or fn in seen:
            continue
        seen.add(fn)
        for name in dir(fn):
            if name.startswith("_saved_"):
                try:
                    value = getattr(fn, name)
                except Exception as e:  # noqa: BLE001 - reported to the caller
                    value = e
                yield fn, name, value
        todo.extend(f for f, _ in fn.next_functions)


def _saved_inputs(gm):
    """((where, k, outputs), ...): eager's autograd saves, for the backward
    of the graph outputs at positions `outputs`, a value on the memory of
    graph input k (where "arg") or of graph output k (where "out"): the
    value itself or a view of it. Found on the capture's fake autograd
    graph. aot saves values of its own choosing (std's backward: its own
    copy of x, where eager keeps x; mm's: its own, where eager keeps the
    output view it multiplied), so an in-place op on that memory after the
    call (`t = x + x.std(0)`, then `y += t` with y a view of x's storage;
    an output `t1` of the graph that mm read, then `t1 += t0`) makes
    eager's backward raise and aot's run. The runtime checks the version
    in the backward (_AotRuntime._watch_saved). Empty with grad off or
    when nothing saved is on an input's or output's memory."""
    import torch
    if not torch.is_grad_enabled():
        return ()
    out = next((n for n in reversed(gm.graph.nodes) if n.op == "output"), None)
    values = out.args[0] if out is not None and out.args else None
    if not isinstance(values, (tuple, list)):
        return ()
    memory, stop = {}, set()
    for i, n in enumerate(n for n in gm.graph.nodes if n.op == "placeholder"):
        key = _example_storage(n)
        if key is not None:
            memory.setdefault(key, []).append(("arg", i))
            fn = n.meta["example_value"].grad_fn
            if fn is not None:
                stop.add(fn)
    for j, v in enumerate(values):
        key = _example_storage(v) if isinstance(v, torch.fx.Node) else None
        if key is not None:
            memory.setdefault(key, []).append(("out", j))
    if not memory:
        return ()
    from torch.multiprocessing.reductions import StorageWeakRef
    saved = {}
    for j, v in enumerate(values):
        if not isinstance(v, torch.fx.Node):
            continue
        for fn, name, value in _saved_values([v], stop):
            if isinstance(value, torch.Tensor):
                try:
                    key = StorageWeakRef(value.untyped_storage())
                except Exception:  # noqa: BLE001 - no storage: not on an input's or output's memory
                    continue
                for at in memory.get(key, ()):
                    saved.setdefault(at, set()).add(j)
    return tuple((where, k, frozenset(js)) for (where, k), js in sorted(saved.items()))


def _example_requires_grad(gm, node):
    """Does the value of fx node `node` require grad (its example; a
    get_attr: the tensor itself)?"""
    import torch
    if node.op == "get_attr":
        obj = gm
        for part in node.target.split("."):
            obj = getattr(obj, part, None)
        return isinstance(obj, torch.Tensor) and obj.requires_grad
    ex = node.meta.get("example_value")
    return isinstance(ex, torch.Tensor) and ex.requires_grad


def _partition_saving_mutated_inputs(joint, joint_inputs, **kw):
    """aot's default partition, then: a value the backward saves that is
    the new value of an input mutated in the forward graph (its trailing
    `copy_(input, value)`, kept in the graph by keep_inference_input_mutations)
    is saved as the input itself. Eager saves the input tensor: a later
    write to it through numpy (no version bump) shows in eager's backward,
    and a version-bumping write makes eager's backward raise; a saved
    functional copy did neither."""
    import torch
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
    import torch
    return isinstance(x, torch.Tensor)


def _unaliased(t):
    """A tensor like `t` (dtype, size, strides, offset, requires_grad,
    values) on a copy of its storage; `t` itself when it has no plain
    storage (a subclass, sparse): aot then traces the aliasing it sees."""
    import torch
    if type(t) not in (torch.Tensor, torch.nn.Parameter) or t.layout != torch.strided:
        return t
    with torch.no_grad():
        c = torch.empty(0, dtype=t.dtype, device=t.device)
        c.set_(t.untyped_storage().clone(), t.storage_offset(), t.size(), t.stride())
    return c.requires_grad_(t.requires_grad)


def _inplace_operators():
    """operator's in-place functions (`t += u` is captured as operator.iadd)
    and setitem: each writes into its first argument when it is a tensor."""
    import operator
    return (operator.setitem, operator.iadd, operator.isub, operator.imul, operator.itruediv,
            operator.ifloordiv, operator.imod, operator.ipow, operator.imatmul, operator.iand,
            operator.ior, operator.ixor, operator.ilshift, operator.irshift)


def _mutates(gm):
    """Does the graph hold an in-place op (a method or function named
    `..._`, an augmented assignment (operator.iadd, `__iadd__`), or a
    setitem)? Conservative: it may mutate an input."""
    inplace = _inplace_operators()
    return any(_is_inplace(n, inplace) for n in gm.graph.nodes)


def _is_inplace(n, inplace):
    """Is node `n` an in-place op (it writes its first argument)?"""
    if n.op == "call_method":
        return ((n.target.endswith("_") and not n.target.startswith("_")) or
                n.target == "__setitem__" or
                (n.target.startswith("__i") and n.target.endswith("__") and
                 n.target[2:-2] not in ("init", "index", "int", "invert", "iter")))
    if n.op == "call_function":
        return any(n.target is f for f in inplace) or getattr(n.target, "__name__", "").endswith("_")
    return False


def _draws_random(g):
    """Does the aten graph `g` call an op tagged nondeterministic_seeded?"""
    import torch
    for n in g.graph.nodes:
        if n.op == "call_function" and torch.Tag.nondeterministic_seeded in getattr(n.target, "tags", ()):
            return True
    return False


def _grad_deps(gm):
    """(per graph output, {i: ...} per placeholder i written in place):
    the inputs each value is differentiable in, keys ("arg", i) for the
    i-th placeholder, ("attr", target) for a parameter. aot's node has an
    output for each written input too (its new value, copied back into
    the input after the call), so those count as outputs. A path is
    followed only through values whose example requires grad (a
    comparison or a detach cuts it); a node without an example depends on
    all its inputs. None when the outputs that require grad all depend on
    the same inputs (no output can reach fewer inputs than another)."""
    import torch
    import torch.fx
    deps, nargs = {}, 0
    out = None
    inplace = _inplace_operators()
    storages = {}           # example storage -> the nodes seen on it (views and bases)
    unknown = []            # tensor nodes whose storage cannot be told
    placeholders, written = [], set()
    for n in gm.graph.nodes:
        ex = n.meta.get("example_value")
        grad = not isinstance(ex, torch.Tensor) or ex.requires_grad
        if isinstance(ex, torch.Tensor):
            key = _example_storage(n)
            (unknown if key is None else storages.setdefault(key, [])).append(n)
        if n.op == "placeholder":
            deps[n] = frozenset([("arg", nargs)]) if grad else frozenset()
            placeholders.append(n)
            nargs += 1
        elif n.op == "get_attr":
            deps[n] = frozenset([("attr", n.target)]) if grad else frozenset()
        elif n.op == "output":
            out = n.args[0]
        elif not grad:
            deps[n] = frozenset()
        else:
            acc = set()
            torch.fx.node.map_arg((n.args, n.kwargs), lambda a: acc.update(deps.get(a, ())))
            if n.op == "call_module":       # its parameters are inputs too
                acc.update(("attr", f"{n.target}.{k}") for k, p in
                           gm.get_submodule(n.target).named_parameters() if p.requires_grad)
            deps[n] = frozenset(acc)
            # an in-place op writes its first argument: a value it brings in
            # (y in `t.add_(y)`, `t[i] = y`) reaches t and every view of t
            # or base t is a view of: each value seen so far on the same
            # storage (the examples'; a tensor whose storage cannot be
            # told: any) takes it in. A target without a tensor example: no gating.
            target = n.args[0] if n.args and isinstance(n.args[0], torch.fx.Node) else None
            if target is not None and _is_inplace(n, inplace):
                key = _example_storage(target)
                if key is not None:
                    written.add(key)
                if acc <= deps.get(target, frozenset()):
                    continue
                if key is None:
                    return None
                for m in storages.get(key, []) + unknown:
                    if m in deps:
                        deps[m] = deps[m] | acc
    if not isinstance(out, (tuple, list)):
        return None
    per_out = [deps.get(o, frozenset()) if isinstance(o, torch.fx.Node) else frozenset() for o in out]
    per_mut = {i: deps[p] for i, p in enumerate(placeholders) if _example_storage(p) in written}
    # every input that needs grad (an input only written in place, under
    # no_grad, is one too): aot's node returns a gradient for each
    every = frozenset().union(*(d for n, d in deps.items() if n.op in ("placeholder", "get_attr")))
    for d in per_out:
        every |= {k for k in d if k[0] == "attr"}
    if all(d == every for d in (*per_out, *per_mut.values())):
        return None
    return per_out, per_mut


def _example_storage(node):
    """A key equal for fx nodes whose example tensors share storage (a
    view and its base), None when the node has no tensor example."""
    import torch
    from torch.multiprocessing.reductions import StorageWeakRef
    ex = node.meta.get("example_value")
    if not isinstance(ex, torch.Tensor):
        return None
    try:
        return StorageWeakRef(ex.untyped_storage())
    except Exception:  # noqa: BLE001 - no storage (a sparse or nested example): unknown
        return None


def _share_storage(tensors):
    """Do two of `tensors` share a storage or its memory? By the storage
    itself as well as its data pointer: an empty storage has none (x and
    x.detach() of shape (2, 0) share a version counter all the same), and
    two storages may wrap one buffer (torch.from_numpy of one array)."""
    seen = set()
    for t in tensors:
        try:
            storage = t.untyped_storage()
            keys = [("storage", storage._cdata)] + ([("ptr", storage.data_ptr())] if storage.data_ptr() else [])
        except Exception:  # noqa: BLE001 - no storage (a subclass, meta): not compared
            continue
        if any(k in seen for k in keys):
            return True
        seen.update(keys)
    return False


def _attr_keys(gm):
    """id(tensor) -> {("attr", target)} for the graph's get_attr tensors and
    the parameters of the modules it calls."""
    keys = {}
    for n in gm.graph.nodes:
        if n.op == "get_attr":
            obj = gm
            for part in n.target.split("."):
                obj = getattr(obj, part, None)
            if obj is not None:
                keys[id(obj)] = frozenset([("attr", n.target)])
        elif n.op == "call_module":
            for k, p in gm.get_submodule(n.target).named_parameters():
                keys[id(p)] = keys.get(id(p), frozenset()) | {("attr", f"{n.target}.{k}")}
    return keys


def _compiled_node(outs):
    """(node, {output_nr: position}) of aot's autograd node among the
    outputs `outs`; (None, None) when no output has one."""
    import torch
    node, index = None, {}
    for j, o in enumerate(outs):
        if isinstance(o, torch.Tensor) and o.grad_fn is not None:
            if node is None:
                node = o.grad_fn
            if o.grad_fn is node:
                index[o.output_nr] = j
    if node is None or type(node).__name__ != "CompiledFunctionBackward":
        return None, None
    return node, index


class _SavedTensors:
    """The tensors aot's node saves in one call, held through saved-tensor
    hooks (pushed around the compiled call when grad is on and no hooks of
    the program's own are active, whose semantics then stand).

    aot's node computes every output's gradient in one backward, reading
    all it saved, where eager's autograd reads only what the reached
    outputs' own nodes saved. A program that writes an input or output in
    place after the call (a no_grad `x.sub_(1)`, an `x[0].add_(1)` in the
    next graph) makes aot's version check fail where eager's backward,
    which reaches no node that saved that memory, runs. So:
      - a saved tensor on the memory of an input or output of the call
        that eager saves for only some of the node's outputs (or none:
        _saved_inputs) is copied when the call returns; after a write, a
        backward reading it gets the copy: the value eager's own nodes
        would have computed with (where a reached output's eager backward
        reads that memory, _watch_saved raises eager's error first);
      - a backward that reaches no output of the node (every gradient
        None: its results are dropped, _AotRuntime._gate) reads the
        tensors as they are;
      - otherwise a written tensor raises autograd's version error, as
        without the hooks."""

    __slots__ = ("held", "reached")

    def __init__(self):
        self.held = []          # [tensor, version at the save, copy or None]
        self.reached = None     # output positions the current backward reaches (None: not known)

    @classmethod
    def push(cls):
        import torch
        A = torch._C._autograd
        if A._top_saved_tensors_default_hooks(True) is not None or not A._saved_tensors_hooks_is_enabled():
            return None
        kept = cls()
        A._push_saved_tensors_default_hooks(kept.pack, kept.unpack)
        return kept

    def pack(self, t):
        h = [t, t._version, None]
        self.held.append(h)
        return h

    def unpack(self, h):
        t, version, copy = h
        if t._version == version or self.reached == set():
            return t
        if copy is not None:
            return copy
        raise RuntimeError(
            "one of the variables needed for gradient computation has been modified by an inplace "
            f"operation: [{t.type()} {list(t.shape)}] is at version {t._version}; expected version "
            f"{version} instead")

    def settle(self, args, outs, node, index, saved):
        """After the call: copy what a later write could make eager's and
        aot's backward disagree on, and record each backward's reach."""
        import torch
        readers = {}            # storage -> output positions whose eager backward reads it
        for where, k, js in saved:
            t = args[k] if where == "arg" else outs[k]
            if isinstance(t, torch.Tensor):
                key = _storage_key(t)
                readers[key] = readers.get(key, frozenset()) | js
        exposed = {_storage_key(t) for t in (*args, *outs) if isinstance(t, torch.Tensor)}
        every = frozenset(index.values())
        for h in self.held:
            t, version, _ = h
            key = _storage_key(t)
            if key is not None and key in exposed and t._version == version and \
                    not every <= readers.get(key, frozenset()):
                h[2] = t.detach().clone()

        def reach(grad_outputs):
            self.reached = {index.get(f) for f, g in enumerate(grad_outputs) if g is not None}
        node.register_prehook(reach)


def _storage_key(t):
    """The identity of tensor t's storage (None: it has none)."""
    try:
        return t.untyped_storage()._cdata
    except Exception:  # noqa: BLE001 - no storage (a subclass, meta)
        return None


class _AotRuntime:
    """The callable the aot backends return (see above)."""

    def __init__(self, compiled, eager_forward, seeded, deps, attr_keys):
        self.compiled = compiled
        self.eager_forward = eager_forward
        self.seeded = seeded
        self.deps = deps
        self.attr_keys = attr_keys

    mutates = True
    fw_failed = None        # [bool] cell the forward graph sets when it raises
    views = ()              # _output_creation_meta: outputs given eager's CreationMeta
    saved = ()              # _saved_inputs: ((where, k, outputs), ...) memory eager's backward reads
    detached = ()           # _hoist_output_detach: ((j, i), ...) output j is output i detached

    def __call__(self, *args):
        import torch
        tensors = [a for a in args if isinstance(a, torch.Tensor)]
        if self.mutates and len(tensors) > 1 and _share_storage(tensors):
            # mutated inputs that alias each other: aot's synthetic-base path
            # (which has failed after writing its mutations back); the
            # captured graph's ops run eagerly instead
            return self.eager_forward(*args)
        rng = _rng.save() if self.seeded else None
        versions = [t._version for t in tensors]
        if self.fw_failed is not None:
            self.fw_failed[0] = False
        grad = torch.is_grad_enabled()
        # the autograd edges of the inputs as the node records them: an
        # input the graph writes has a new grad_fn after the call
        edges = [(a.grad_fn, a.output_nr) if isinstance(a, torch.Tensor) else None for a in args] \
            if grad and self.mutates and self.deps is not None else None
        kept = _SavedTensors.push() if grad else None
        try:
            try:
                outs = self.compiled(*args)
            finally:
                if kept is not None:
                    torch._C._autograd._pop_saved_tensors_default_hooks()
        except Exception:  # noqa: BLE001 - replayed op by op: eager's effects, eager's error
            torch._C._set_grad_enabled(grad)    # the graph may have failed inside a no_grad region
            in_graph = self.fw_failed is not None and self.fw_failed[0]
            if not in_graph and versions != [t._version for t in tensors]:
                raise           # it failed after writing to an input: a replay would write twice
            if rng is not None:
                _rng.restore(rng)
            return self.eager_forward(*args)
        if self.detached:
            outs = list(outs)
            for j, i in self.detached:
                outs[j] = outs[i].detach()
        if torch.is_grad_enabled():
            node, index = _compiled_node(outs)
            if node is not None:
                self._gate(args, node, index, edges)
                if kept is not None:
                    kept.settle(args, outs, node, index, self.saved)
                if self.saved:
                    self._watch_saved(args, outs, node, index)
        if self.views:              # after the gate: it reads aot's own outputs' grad_fn
            outs = _restore_creation_meta(outs, self.views)
        return outs

    def _watch_saved(self, args, outs, node, index):
        """Make the node's backward raise eager's error when memory of an
        input or output that eager's autograd saved a value on
        (self.saved: _saved_inputs) was written in place after the call,
        and the backward reaches an output whose eager backward reads it.
        The tensors are held by weak references."""
        import weakref
        import torch
        held = []
        for where, k, outputs in self.saved:
            t = args[k] if where == "arg" else outs[k]
            if isinstance(t, torch.Tensor):
                held.append((weakref.ref(t), t._version, outputs))

        def check(grad_outputs):
            reached = {index.get(f) for f, g in enumerate(grad_outputs) if g is not None}
            for ref, version, outputs in held:
                t = ref()
                if t is not None and t._version != version and (None in reached or reached & outputs):
                    raise RuntimeError(
                        "one of the variables needed for gradient computation has been modified by an "
                        f"inplace operation: [{t.type()} {list(t.shape)}] is at version {t._version}; "
                        f"expected version {version} instead (a compiled graph's input or output, saved for "
                        "its backward, was written in place after the call)")
        node.register_prehook(check)

    def _gate(self, args, node, index, edges=None):
        import torch
        leaf, inner = dict(self.attr_keys), {}
        for i, a in enumerate(args):
            if isinstance(a, torch.Tensor) and a.requires_grad:
                fn, nr = edges[i] if edges is not None else (a.grad_fn, a.output_nr)
                if fn is None:
                    leaf[id(a)] = leaf.get(id(a), frozenset()) | {("arg", i)}
                else:
                    key = (fn, nr)
                    inner[key] = inner.get(key, frozenset()) | {("arg", i)}
        deps, mut_deps = self.deps or (None, None)
        mut_index = {}          # node output -> input i: its new value (copied back into the input)
        for i in mut_deps or ():
            a = args[i] if i < len(args) else None
            fn = getattr(a, "grad_fn", None)
            for nf, nr in (fn.next_functions if fn is not None else ()):
                if nf is node:
                    mut_index[nr] = i
        # with two outputs or more on the node, eager's gradients can be
        # recomputed (see _eager_grads); not when the graph mutates its
        # inputs (they would be written again) or draws random numbers
        redo = self._eager_grads(args, node, index) \
            if len(index) > 1 and not self.mutates and not self.seeded else None

        def drop_unreached(grad_inputs, grad_outputs):
            if all(g is None for g in grad_outputs):
                # no output reached (only an input's path from a later
                # graph whose gate dropped it): eager's inputs get no grad
                return tuple(None for _ in grad_inputs)
            new = list(grad_inputs)
            reached = set()
            for f, g in enumerate(grad_outputs):
                if g is None:
                    continue
                j = index.get(f)
                if deps is not None and j is None and f in mut_index:
                    reached |= mut_deps[mut_index[f]]
                    continue
                if j is None or deps is None:   # an output we cannot attribute: keep every gradient
                    reached = None
                    break
                reached |= deps[j]
            if reached is not None:
                for k, (fn, nr) in enumerate(node.next_functions):
                    if fn is None or new[k] is None:
                        continue
                    var = getattr(fn, "variable", None)
                    keys = leaf.get(id(var)) if var is not None else inner.get((fn, nr))
                    if keys and not (keys & reached):
                        new[k] = None
            # an output the loss does not reach still gets a gradient, zeros,
            # through aot's backward: where that path meets an inf or NaN
            # (the std of one row, an exp that overflowed) 0 * inf made NaN
            # in a gradient eager's autograd, which never runs that path,
            # computes finite. Then eager's gradients are recomputed.
            if redo is not None and any(g is None for g in grad_outputs) and not _finite(new):
                eager = redo(grad_outputs)
                if eager is not None:
                    new = eager
            return tuple(new)
        node.register_hook(drop_unreached)

    def _eager_grads(self, args, node, index):
        """A function of the node's grad_outputs giving eager's gradients
        for its inputs (one per next function, None where eager's autograd
        does not reach): the captured graph run again op by op on the
        call's inputs (detached: its own leaves), differentiated for the
        outputs reached. None from it, and aot's gradients are kept, when
        an input has gone or changed (its version) since the call, or the
        inputs cannot be matched to the node's edges. The inputs are held
        by weak references: the gate keeps nothing alive."""
        import weakref
        import torch
        held = [(weakref.ref(a), a._version) if isinstance(a, torch.Tensor) else (None, a) for a in args]
        attr_ids = self.attr_keys
        eager_forward = self.eager_forward

        def redo(grad_outputs):
            if torch.is_grad_enabled():
                # a backward with create_graph: the gradients recomputed here
                # would hang off the detached copies, not the inputs (aot's
                # own refuses the double backward)
                return None
            live = []
            for ref, v in held:
                if ref is None:
                    live.append(v)
                    continue
                a = ref()
                if a is None or a._version != v:
                    return None
                live.append(a)
            subs, inputs, owners, claimed = list(live), [], [], set()
            for fn, nr in node.next_functions:
                if fn is None:
                    owners.append(())
                    continue
                var = getattr(fn, "variable", None)
                pos = [i for i, a in enumerate(live) if isinstance(a, torch.Tensor) and a.requires_grad and
                       ((a.grad_fn is None and a is var) or (a.grad_fn is fn and a.output_nr == nr))]
                if not pos:
                    if var is None:
                        return None
                    subs_of = [var]             # a parameter the graph reads itself
                elif claimed.intersection(pos) or (var is not None and id(var) in attr_ids):
                    return None
                else:
                    claimed.update(pos)
                    for i in pos:
                        subs[i] = live[i].detach().requires_grad_(True)
                    subs_of = [subs[i] for i in pos]
                owners.append(tuple(range(len(inputs), len(inputs) + len(subs_of))))
                inputs.extend(subs_of)
            try:
                with torch.enable_grad(), _no_hook():
                    outs = eager_forward(*subs)
                targets, tangents = [], []
                for f, g in enumerate(grad_outputs):
                    if g is None:
                        continue
                    j = index.get(f)
                    o = outs[j] if j is not None else None
                    if not isinstance(o, torch.Tensor) or not o.requires_grad:
                        return None
                    targets.append(o)
                    tangents.append(g)
                got = torch.autograd.grad(targets, inputs, tangents, allow_unused=True)
            except Exception:  # noqa: BLE001 - the recomputation failed: aot's gradients stand
                return None
            result = []
            for owner in owners:
                gs = [got[i] for i in owner if got[i] is not None]
                result.append(sum(gs[1:], gs[0]) if gs else None)
            return result
        return redo


def _finite(tensors):
    """Are all the tensors (None skipped) free of inf and NaN?"""
    import torch
    return all(t is None or not (t.is_floating_point() or t.is_complex()) or bool(torch.isfinite(t).all())
               for t in tensors)


@register_backend("inductor")
def inductor(gm, example_inputs):
    """TorchInductor through its public fx-graph entry point, called as
    torch.compile calls it: with fake example inputs from a fake mode with
    a shape env (real ones make Inductor and AOT autograd bypass their
    on-disk caches, so every process compiled every graph again), and with
    the module's parameters and buffers, which AOT autograd lifts into
    leading inputs of the forward graph, marked static (see
    _static_lifted_inputs)."""
    from torch._inductor.compile_fx import compile_fx
    try:
        inputs = _fake_inputs(example_inputs)
    except Exception:  # noqa: BLE001 - a tensor fake tensors cannot copy: the real inputs (no cache)
        inputs = example_inputs
    return compile_fx(gm, inputs, inner_compile=_static_lifted_inputs(len(example_inputs)))


def _static_lifted_inputs(num_graph_inputs):
    """Inductor's inner compiler, told that the forward graph's leading
    inputs (the parameters and buffers AOT autograd lifted out of the
    captured graph: every input before the captured graph's own
    `num_graph_inputs`) are static. AOT reports no static inputs for a
    graph it does not know as torch's own capture, and Inductor then
    treats every parameter as a user input: on a GPU each one gets an
    alignment check (and a clone when misaligned) on every call, and with
    Inductor's CUDA graphs a copy into the graph's memory per call. The
    backward graph keeps what Inductor computes for it."""
    def inner_compile(gm, example_inputs, **kwargs):
        from torch._inductor import compile_fx as cfx
        from torch._inductor.utils import num_fw_fixed_arguments
        if not kwargs.get("is_backward", False):
            fixed = num_fw_fixed_arguments(num_graph_inputs, len(example_inputs))
            kwargs["static_input_idxs"] = sorted(set(kwargs.get("static_input_idxs") or ())
                                                 | set(range(max(fixed, 0))))
        return cfx.compile_fx_inner(gm, example_inputs, **kwargs)
    return inner_compile


@register_backend("ts")
def ts(gm, example_inputs):
    """TorchScript: torch.jit.trace of the graph on its example inputs (run
    with the default fuser)."""
    import torch
    return torch.jit.trace(gm, tuple(example_inputs), check_trace=False, strict=False)


@register_backend("nnc")
def nnc(gm, example_inputs):
    """TorchScript traced graph run with the NNC (TensorExpr) fuser."""
    import torch
    traced = ts(gm, example_inputs)

    def run(*args):
        with torch.jit.fuser("fuser1"):
            return traced(*args)
    return run


@register_backend("aot_inductor_debug")
def aot_inductor_debug(gm, example_inputs):
    """AOT autograd with TorchInductor's decompositions, graphs run with
    eager kernels (checks the decompositions without compiling code)."""
    from torch._inductor.decomposition import select_decomp_table
    return _aot(gm, example_inputs, decompositions=select_decomp_table())


@register_backend("cudagraphs")
def cudagraphs_backend(gm, example_inputs):
    """AOT autograd graphs replayed as CUDA graphs (dynamo/backends/cudagraphs.py);
    graphs whose inputs are not all CUDA tensors run plainly."""
    from .cudagraphs import cudagraphs as compile_cudagraphs
    return compile_cudagraphs(gm, example_inputs)
