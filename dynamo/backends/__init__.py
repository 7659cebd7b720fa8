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
        # The compiled graph and whatever code the backend generated run
        # without the hook: they are ours, not the user's, to compile.
        # An fx GraphModule's own forward only needs its code skip-marked
        # (cheaper per call than switching the hook off and on around it);
        # anything else a backend returns is wrapped with the hook off, and
        # its results are checked to have one item per graph output (the
        # calling code indexes them: a wrong count is a TypeError naming
        # the backend, not an IndexError in the user's frame).
        code = _fx_forward_code(compiled)
        if code is not None and not _calls_user_code(gm):
            _C.set_skip(code)
            return compiled
        if outputs is None:
            return _C.OptimizedCallable(compiled, None, 0)
        return _C.OptimizedCallable(compiled, None, 0, outputs, f"backend {name!r}")
    compile_with_policy.backend_name = name
    return compile_with_policy


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
    from ..eval_frame import disable
    return disable()


def _calls_user_code(gm):
    """Does the graph call Python functions put into it by
    dynamo.allow_in_graph? Their frames must run with the hook off too."""
    from .. import decorators
    return any(n.op == "call_function" and decorators.is_allowed(n.target)
               for n in gm.graph.nodes)


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


def _aot_inputs(gm, example_inputs):
    """The inputs AOT autograd traces with: the real ones, unless a node's
    size depends on data (nonzero, torch.where(mask); an unbacked symbol of
    the capture): then fakes of them (same sizes) from a fake mode with a
    shape env, which AOT adopts and which lets such ops keep a symbolic size."""
    import torch
    dynamic = any(isinstance(v, torch.Tensor) and any(type(d) is not int for d in v.shape)
                  for v in (n.meta.get("example_value") for n in gm.graph.nodes))
    if not dynamic:
        return example_inputs
    from torch._subclasses.fake_tensor import FakeTensorMode
    from torch.fx.experimental.symbolic_shapes import ShapeEnv
    mode = FakeTensorMode(shape_env=ShapeEnv(allow_scalar_outputs=False))
    return [mode.from_tensor(x, static_shapes=True) if isinstance(x, torch.Tensor) else x
            for x in example_inputs]


@register_backend("aot_eager")
def aot_eager(gm, example_inputs):
    """AOT autograd (forward and backward graphs) run with eager kernels."""
    from torch._functorch.aot_autograd import aot_module_simplified
    return aot_module_simplified(gm, _aot_inputs(gm, example_inputs), fw_compiler=_nop_compiler,
                                 bw_compiler=_nop_compiler)


@register_backend("inductor")
def inductor(gm, example_inputs):
    """TorchInductor through its public fx-graph entry point."""
    from torch._inductor.compile_fx import compile_fx
    return compile_fx(gm, example_inputs)


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
    from torch._functorch.aot_autograd import aot_module_simplified
    from torch._inductor.decomposition import select_decomp_table
    return aot_module_simplified(gm, _aot_inputs(gm, example_inputs), fw_compiler=_nop_compiler,
                                 bw_compiler=_nop_compiler, decompositions=select_decomp_table())
