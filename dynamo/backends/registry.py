"""The backend registry: names, lookup, and the policy every backend runs under.

A backend is a callable `(gm: torch.fx.GraphModule, example_inputs: list)
-> callable`. Named backends are registered here (`register_backend`, by
the backend files of this folder and by users); `lookup` resolves a name or
passes a callable through; `wrap` adds the error policy (warn and run the
graph eagerly, or raise when config.raise_on_backend_error), checks what
the backend returned (a callable, one result per graph output),
config.verify_correctness (`_verify`), and how the compiled graph runs
without the frame hook. This file knows no backend: each lives in its
family's file and registers itself.
"""
import copy
import functools
import warnings

import torch
import torch.fx

from .. import _C, config, decorators, testing
from ..exc import BackendCompilerFailed
from ..modes import hook_off

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
        grad = torch.is_grad_enabled()
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
            torch._C._set_grad_enabled(grad)
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


def _switches_grad_mode(gm):
    """Does the fx graph of `gm` call torch._C._set_grad_enabled?"""
    return isinstance(gm, torch.fx.GraphModule) and any(
        n.op == "call_function" and n.target is torch._C._set_grad_enabled for n in gm.graph.nodes)


def _restore_grad_mode(mode):
    """A no-argument callable setting grad mode `mode` (no Python frame)."""
    return functools.partial(torch._C._set_grad_enabled, mode)


def graph_outputs(gm):
    """How many values the fx graph of `gm` returns (its output node's
    tuple or list), or None when it is not a GraphModule returning one."""
    if not isinstance(gm, torch.fx.GraphModule):
        return None
    for node in reversed(gm.graph.nodes):
        if node.op == "output":
            value = node.args[0] if node.args else None
            return len(value) if isinstance(value, (tuple, list)) else None
    return None


def _reference_copy(gm):
    """A copy of the captured graph that the backend cannot modify."""
    return copy.deepcopy(gm)


def _verify(name, reference, compiled, example_inputs):
    """config.verify_correctness: run the captured graph and the backend's
    result on copies of the example inputs; BackendCompilerFailed (a
    RuntimeError) if they differ. Raised whatever raise_on_backend_error says:
    wrong results must never be run silently."""
    def fresh():
        return [x.clone() if isinstance(x, torch.Tensor) else x for x in example_inputs]
    with hook_off():
        expected = reference(*fresh())
        got = compiled(*fresh())
    if not testing.same(expected, got):
        raise BackendCompilerFailed(name, RuntimeError(
            "config.verify_correctness: the compiled graph's results differ from the "
            "captured graph's on the example inputs"))


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
    owner = getattr(compiled, "__self__", None)
    func = getattr(compiled, "__func__", None)
    if isinstance(owner, torch.fx.GraphModule) and func is not None:
        code = getattr(func, "__code__", None)
        if code is not None and code.co_filename.startswith("<eval_with_key>"):
            return code
    return None
