"""torch as seen by the tracer: the torch modules, torch functions (recorded
as call_function nodes), and grad-mode context managers.

Calls of torch functions run on fake tensors to get example values; results
that are tensors become nodes, Python values fold to constants. Functions
with effects the graph cannot express (RNG seeding, numpy bridges, autograd
entry points, I/O) are Unsupported.
"""
import inspect
import types

import torch

from ...exc import Unsupported
from .base import ConstantVariable, FunctionObjectVariable, VariableTracker, is_constant_value
from .misc import ModuleVariable


def _torch_name(fn):
    return f"{getattr(fn, '__module__', None) or 'torch'}.{getattr(fn, '__qualname__', getattr(fn, '__name__', fn))}"


_DENY = {torch.from_numpy, torch.manual_seed, torch.save, torch.load, torch.set_default_dtype,
         torch.autograd.backward, torch.autograd.grad, torch.Tensor.backward,
         torch.set_default_device, torch.use_deterministic_algorithms, torch.Tensor.item,
         torch.Tensor.tolist, torch.Tensor.numpy, torch.seed, torch.initial_seed}
_FALSE_CONSTANT = {torch.jit.is_scripting, torch.jit.is_tracing, torch._C._get_tracing_state}
try:
    _FALSE_CONSTANT.add(torch.onnx.is_in_onnx_export)
except AttributeError:
    pass
try:
    _FALSE_CONSTANT.add(torch.fx._symbolic_trace.is_fx_tracing)
except AttributeError:
    pass
if hasattr(torch.compiler, "is_exporting"):          # Mamba's cache: "not torch.export"
    _FALSE_CONSTANT.add(torch.compiler.is_exporting)
# "is this code being compiled?": True for the code dynamo traces, as under
# torch.compile (libraries use it to skip warnings and data-dependent checks)
_TRUE_CONSTANT = set()
for _name in ("is_compiling", "is_dynamo_compiling"):
    if hasattr(torch.compiler, _name):
        _TRUE_CONSTANT.add(getattr(torch.compiler, _name))
if hasattr(torch._utils, "is_compiling"):     # torch.optim's older spelling of the same question
    _TRUE_CONSTANT.add(torch._utils.is_compiling)


# ---------------------------------------------------------------- state queries
# Pure queries of torch's global state that model code branches on (the
# MultiheadAttention / TransformerEncoderLayer fast-path checks). They are
# called at trace time and folded to constants. How each stays valid:
#  - get_fastpath_enabled: EQUALS_MATCH on the module global it reads
#    (through the `___globals_torch_backends_mha` alias);
#  - autocast queries: autocast toggles the thread-local dispatch key
#    exclude set, which every TENSOR_MATCH guard checks, so a frame with a
#    tensor input recompiles when autocast is entered;
#  - dispatch-mode stack: an active mode adds the Python dispatch key, also
#    part of TENSOR_MATCH;
#  - deterministic-algorithm flags and autocast state: the GLOBAL_STATE
#    guard every compile carries (guards.global_state_word);
#  - sdp priority, privateuse1 name: NOT guarded; assumed constant for the
#    process, as set-up code sets them once before running models.
def _state_queries():
    import torch.backends.mha as mha
    import torch.utils._python_dispatch as pydispatch
    guarded = {mha.get_fastpath_enabled: (mha.__dict__, "_is_fastpath_enabled")}
    unguarded = [torch.is_autocast_enabled, torch._C._is_any_autocast_enabled,
                 torch.are_deterministic_algorithms_enabled,
                 torch.is_deterministic_algorithms_warn_only_enabled,
                 pydispatch._get_current_dispatch_mode_stack,
                 torch._C._get_privateuse1_backend_name]
    for name in ("is_autocast_cpu_enabled", "get_autocast_dtype", "get_autocast_cpu_dtype",
                 "is_autocast_cache_enabled"):
        if hasattr(torch, name):
            unguarded.append(getattr(torch, name))
    return guarded, set(unguarded)


STATE_QUERY_GUARDED, STATE_QUERIES = _state_queries()
STATE_QUERIES |= set(STATE_QUERY_GUARDED)
HAS_TORCH_FUNCTION = {torch.overrides.has_torch_function, torch.overrides.has_torch_function_unary,
                      torch.overrides.has_torch_function_variadic}


def is_state_query(value):
    """Queries folded to constants at trace time: torch's global-state
    queries (above) and the "am I being traced/scripted/exported" ones,
    which are False for the code dynamo runs."""
    try:
        return (value in STATE_QUERIES or value in HAS_TORCH_FUNCTION or value in _FALSE_CONSTANT
                or value in _TRUE_CONSTANT or value is torch.overrides.is_tensor_like)
    except TypeError:            # unhashable
        return False


def fold_state_query(tx, fn, args, kwargs):
    """The value of state query `fn` now, as a constant (see the table above)."""
    from ...guards import EQUALS_MATCH, GlobalSource, ItemSource
    if fn in HAS_TORCH_FUNCTION:
        return ConstantVariable(_has_torch_function(tx, args))
    if fn is torch.overrides.is_tensor_like:
        if len(args) != 1 or kwargs:
            raise Unsupported("torch.overrides.is_tensor_like takes one argument")
        return ConstantVariable(_is_tensor_like(args[0]))
    try:
        a = [v.as_python_constant() for v in args]
        k = {n: v.as_python_constant() for n, v in kwargs.items()}
    except Unsupported:
        raise Unsupported(f"{_torch_name(fn)} with non-constant arguments")
    value = fn(*a, **k)
    if fn in STATE_QUERY_GUARDED:
        module_globals, name = STATE_QUERY_GUARDED[fn]
        alias = tx.output.globals_alias(module_globals)
        src = ItemSource(GlobalSource(alias), name)
        tx.output.add_guard(src, EQUALS_MATCH, module_globals[name])
    if is_constant_value(value):
        return ConstantVariable(value)
    return tx.wrap(value, None)


def _is_tensor_like(var):
    """torch.overrides.is_tensor_like decided from the traced value's type:
    a tensor's class is part of its TENSOR_MATCH guard, a constant's of its
    EQUALS_MATCH; anything else is Unsupported."""
    from .tensor import TensorVariable
    if isinstance(var, TensorVariable):
        return True
    if var.is_python_constant():
        value = var.as_python_constant()
        return type(value) is torch.Tensor or hasattr(value, "__torch_function__")
    raise Unsupported(f"torch.overrides.is_tensor_like on {var}")


def _has_torch_function(tx, args):
    """has_torch_function*(...) decided from the traced values' types: plain
    tensors and Parameters have no __torch_function__ override."""
    from .containers import BaseListVariable
    from .tensor import TensorVariable
    items = []
    for a in args:
        items.extend(a.items if isinstance(a, BaseListVariable) else [a])
    for v in items:
        if isinstance(v, TensorVariable):
            tf = getattr(v.cls, "__torch_function__", None)
            if v.cls is not torch.Tensor and tf is not torch._C._disabled_torch_function_impl:
                raise Unsupported(f"has_torch_function on a {v.cls.__name__} (tensor subclass)")
        elif not v.is_python_constant():
            raise Unsupported(f"has_torch_function on {v}")
    return False


# Python functions from these modules are pure tensor functions: recorded as
# graph nodes. Python code elsewhere in torch (optim, utils, autograd, ...)
# may touch hidden state and is never run on fake values: calls to it break.
_GRAPHABLE_MODULES = {"torch", "torch.functional", "torch.nn.functional", "torch._tensor",
                      "torch.linalg", "torch.fft", "torch.special", "torch.nn.modules.utils",
                      "torch._VF", "torch._C._nn", "torch._C._linalg", "torch._C._fft",
                      "torch._C._special", "torch._C._VariableFunctions"}


_CALLABLE_KINDS = (types.FunctionType, types.BuiltinFunctionType, types.MethodDescriptorType,
                   types.WrapperDescriptorType, types.MethodWrapperType, types.GetSetDescriptorType,
                   types.ClassMethodDescriptorType, type)


def is_torch_object(value):
    """Functions, builtins, descriptors and classes that belong to torch
    (never instances: an optimizer or a module is data, not a function)."""
    if not isinstance(value, _CALLABLE_KINDS):
        return False
    module = getattr(value, "__module__", None) or ""
    if module == "torch" or module.startswith("torch."):
        return True
    objclass = getattr(value, "__objclass__", None)
    return objclass is not None and objclass in (torch._C.TensorBase, torch.Tensor)


# Getters of state no guard covers (docs/USER_GUIDE.md, "Global state"):
# never folded into a trace; a call runs eagerly after a graph break.
_RUNTIME_STATE_GETTERS = {getattr(torch, "get_float32_matmul_precision", None),
                          getattr(torch._C, "_get_float32_matmul_precision", None),
                          getattr(torch._C, "_get_cublas_allow_tf32", None),
                          getattr(torch._C, "_get_cudnn_allow_tf32", None)} - {None}


def is_graphable_torch_callable(value):
    """May a call of torch object `value` become a graph node? C functions
    and descriptors of torch (pure on their tensor arguments), classes (handled
    by TorchFunctionVariable.call) and Python functions of the modules above."""
    try:
        if value in _RUNTIME_STATE_GETTERS:
            return False
    except TypeError:            # unhashable
        pass
    if isinstance(value, type) or not isinstance(value, types.FunctionType):
        return not inspect.ismethod(value)
    return (getattr(value, "__module__", None) or "") in _GRAPHABLE_MODULES


def _symbolic_size(tx, seq):
    """torch.Size(seq) of a traced list or tuple holding symbolic sizes (and
    ints): a SizeVariable, the sizes kept symbolic (turning them into
    constants would guard each to its value). None otherwise."""
    from .containers import BaseListVariable, SizeVariable
    from .symbolic import SymNodeVariable
    if not isinstance(seq, BaseListVariable) or seq.is_python_constant():
        return None
    items = seq.unpack(tx)
    if not all(isinstance(i, SymNodeVariable)
               or (i.is_python_constant() and type(i.as_python_constant()) is int) for i in items):
        return None
    return SizeVariable(items)


class TorchModuleVariable(ModuleVariable):
    """The torch package or one of its submodules (torch.nn.functional, ...).
    Attributes are not guarded: torch is assumed not to be monkey-patched."""

    def as_python_constant(self):
        return self.module

    def wrap_attr(self, tx, value, source):
        from .kinds import wrap_torch_attr
        return wrap_torch_attr(tx, value, source)

    def __repr__(self):
        return f"TorchModuleVariable({self.module.__name__})"


class TorchFunctionVariable(FunctionObjectVariable):
    """A torch function, class or Tensor method descriptor."""

    def var_getattr(self, tx, name):
        value = getattr(self.fn, name)
        if is_constant_value(value):
            return ConstantVariable(value)
        from ...skipfiles import is_inlined_torch_code
        if isinstance(value, types.FunctionType) and is_inlined_torch_code(value.__code__):
            from .functions import UserFunctionVariable      # Optimizer's static helpers
            return UserFunctionVariable(value)
        if isinstance(value, type) or callable(value):
            return TorchFunctionVariable(value)
        raise Unsupported(f"attribute {name} of {_torch_name(self.fn)}")

    def call(self, tx, args, kwargs):
        fn = self.fn
        out = tx.output
        from ... import decorators
        if decorators.is_disallowed(fn):
            raise Unsupported(f"call to {_torch_name(fn)} (dynamo.disallow_in_graph)")
        if decorators.is_allowed(fn):
            return out.call_function(tx, fn, list(args), dict(kwargs))
        if fn is torch.jit.annotate and len(args) == 2 and not kwargs:
            return args[1]
        if fn is torch._check_tensor_all and args and type(args[0]).__name__ == "TensorVariable":
            return _check_tensor_all(tx, args[0])
        if fn in (torch.no_grad, torch.enable_grad):
            if args or kwargs:
                raise Unsupported(f"{fn.__name__} with arguments")
            return GradModeVariable(fn is torch.enable_grad)
        if fn is torch.set_grad_enabled:
            mode = args[0].as_python_constant()
            ctx = GradModeVariable(bool(mode))
            ctx.enter(tx)           # takes effect on construction, like eager
            ctx.entered_on_init = True
            return ctx
        if fn is torch.is_grad_enabled:
            return ConstantVariable(out.grad_enabled)
        if fn in _FALSE_CONSTANT:
            return ConstantVariable(None if fn is torch._C._get_tracing_state else False)
        if fn in _TRUE_CONSTANT:
            tx.output.saw_is_compiling = True
            return ConstantVariable(True)
        if is_state_query(fn):
            return fold_state_query(tx, fn, args, kwargs)
        if fn in _DENY or getattr(fn, "__module__", "") in ("torch.cuda", "torch.distributed",
                                                            "torch.random", "torch.serialization"):
            raise Unsupported(f"call to {_torch_name(fn)}")
        if fn is torch.Size and len(args) == 1 and not kwargs:
            size = _symbolic_size(tx, args[0])
            if size is not None:
                return size
        if fn in (torch.Size, torch.device, torch.dtype, torch.finfo, torch.iinfo):
            try:
                value = fn(*[_constant_arg(a) for a in args],
                           **{k: _constant_arg(v) for k, v in kwargs.items()})
            except Unsupported:
                raise Unsupported(f"{fn.__name__}() of non-constants")
            if fn in (torch.finfo, torch.iinfo):
                return NumericInfoVariable(value)
            if not is_constant_value(value):
                raise Unsupported(f"{fn.__name__}() value")
            return ConstantVariable(value)
        if fn is torch._shape_as_tensor and len(args) == 1 and not kwargs:
            return _shape_as_tensor(tx, args[0])
        if isinstance(fn, type) and issubclass(fn, torch.nn.Module):
            return _construct_stateless_module(tx, fn, args, kwargs)
        if isinstance(fn, type) and fn in (torch.Tensor, torch.nn.Parameter):
            raise Unsupported(f"constructing {fn.__name__} inside the compiled frame")
        if isinstance(fn, type) and not issubclass(fn, torch.Tensor):
            from .higher_order import getitem_to_index_block
            block = getitem_to_index_block(tx, fn, args, kwargs)
            if block is not None:
                return block
            raise Unsupported(f"constructing {_torch_name(fn)} inside the compiled frame")
        return out.call_function(tx, fn, list(args), dict(kwargs))

    def __repr__(self):
        return f"TorchFunctionVariable({_torch_name(self.fn)})"


class GradModeVariable(VariableTracker):
    """torch.no_grad() / enable_grad() / set_grad_enabled(b) as a context
    manager. Entering records torch._C._set_grad_enabled in the graph."""

    def __init__(self, target):
        super().__init__(None)
        self.target = target
        self.prev = None
        self.entered_on_init = False

    def enter(self, tx):
        self.prev = tx.output.grad_enabled
        tx.output.set_grad_enabled(self.target)

    def python_type(self):
        return torch.autograd.grad_mode._DecoratorContextManager

    def call(self, tx, args, kwargs):
        # used as a decorator on a function inside traced code
        raise Unsupported("grad-mode object used as a decorator inside the compiled frame")


class ProfilerContextVariable(GradModeVariable):
    """torch.profiler.profile() / record_function(name) (and their
    torch.autograd.profiler twins) made inside the compiled frame: a block
    traced like a grad-mode block that changes nothing. Compiled code is
    not profiled op by op: the block records nothing (profile around the
    compiled call instead; docs/USER_GUIDE.md, "Known limits")."""

    def __init__(self):
        super().__init__(None)

    def enter(self, tx):
        self.prev = None                 # nothing to restore at exit


def _profiler_classes():
    import torch.autograd.profiler as ap
    out = {ap.profile, ap.record_function, getattr(ap, "emit_nvtx", None)}
    try:
        import torch.profiler as tp
        out |= {tp.profile, tp.record_function}
    except ImportError:
        pass
    return tuple(c for c in out if isinstance(c, type))


_PROFILER_CLASSES = _profiler_classes()


def profiler_noop(tx, cls, args, kwargs):
    """ProfilerContextVariable for a profiler context made with constant
    arguments (or a contextlib.nullcontext() whose enter value is None),
    else None."""
    import contextlib
    if cls is contextlib.nullcontext and not kwargs and \
            all(v.is_python_constant() and v.as_python_constant() is None for v in args):
        return ProfilerContextVariable()      # `with nullcontext():` changes nothing either
    if cls not in _PROFILER_CLASSES:
        return None
    if not all(v.is_python_constant() for v in list(args) + list(kwargs.values())):
        return None
    return ProfilerContextVariable()


class AutocastVariable(VariableTracker):
    """torch.autocast(...) made inside the compiled frame with constant
    arguments: its block is recorded in the graph, between
    torch.amp._enter_autocast(device, dtype, enabled, cache) and
    _exit_autocast (as torch.export records it), and the block's ops run on
    example values under the same autocast, so their dtypes are right. A
    break inside the block is not supported (the graph cannot be cut there)."""

    def __init__(self, real):
        super().__init__(None)
        self.real = real                 # the torch.autocast object, never entered
        self.node = None

    @property
    def vals(self):
        r = self.real
        return (r.device, r.fast_dtype, r._enabled, r._cache_enabled)

    def python_type(self):
        return type(self.real)

    def enter(self, tx):
        import torch.amp.autocast_mode as am
        out = tx.output
        out.note_autocast(tx)
        self.node = out.graph.call_function(am._enter_autocast, self.vals)
        out._tag(self.node)
        out.autocast_stack.append(self.vals)

    def exit(self, tx):
        import torch.amp.autocast_mode as am
        out = tx.output
        out._tag(out.graph.call_function(am._exit_autocast, (self.node,)))
        out.autocast_stack.pop()

    def __repr__(self):
        return f"AutocastVariable({self.vals})"


def autocast_block(tx, cls, args, kwargs):
    """AutocastVariable for torch.autocast / torch.amp.autocast /
    torch.cpu.amp.autocast with constant arguments, else None."""
    if not _AUTOCAST_CLASSES or not (isinstance(cls, type) and issubclass(cls, _AUTOCAST_CLASSES)):
        return None
    try:
        a = [v.as_python_constant() for v in args]
        k = {n: v.as_python_constant() for n, v in kwargs.items()}
    except Unsupported:
        return None
    import warnings
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            real = cls(*a, **k)
    except Exception:  # noqa: BLE001 - a bad argument raises again when run eagerly
        return None
    if not hasattr(real, "fast_dtype") or not hasattr(real, "_cache_enabled"):
        return None
    return AutocastVariable(real)


class WithExitVariable(VariableTracker):
    """The __exit__ that BEFORE_WITH leaves on the stack for a grad-mode
    block. Calling it restores the previous grad mode."""

    def __init__(self, ctx):
        super().__init__(None)
        self.ctx = ctx

    def call(self, tx, args, kwargs):
        if hasattr(self.ctx, "exit"):           # autocast, TransformGetItemToIndex
            self.ctx.exit(tx)
        elif self.ctx.prev is not None:
            tx.output.set_grad_enabled(self.ctx.prev)
        tx.exit_with(self)
        return ConstantVariable(None)

    def reconstruct(self, cg):
        if hasattr(self.ctx, "exit"):
            raise Unsupported(f"graph break inside a {self.ctx.python_type().__name__} block")
        cg.load_const(GradModeExit(self.ctx.prev))


class GradModeExit:
    """Stands in for a grad-mode context's __exit__ after a graph break: the
    resume function's with-exit sequence calls it to restore the mode."""

    def __init__(self, prev):
        self.prev = prev

    def __call__(self, *exc_info):
        if self.prev is not None:        # None: a profiler block, nothing to restore
            torch._C._set_grad_enabled(self.prev)
        return False

    def __repr__(self):
        return f"<restore grad mode {self.prev}>"


class GradModeExitVariable(VariableTracker):
    """A GradModeExit met as a frame value: the exit of a grad-mode (or
    profiler) block that a resume function starts inside (the break cut
    the block). Calling it, at the block's end, restores the grad mode in
    the graph as the block's own exit would. `value` is the object (the
    try-region check recognises grad-mode blocks by it); its type and
    `prev` are guarded (variables/builder.py)."""

    def __init__(self, value, source=None):
        super().__init__(source)
        self.value = value

    def python_type(self):
        return GradModeExit

    def call(self, tx, args, kwargs):
        if self.value.prev is not None:
            tx.output.set_grad_enabled(self.value.prev)
        return ConstantVariable(False)

    def reconstruct(self, cg):
        if self.source is not None:
            cg.load_source(self.source)
        else:
            cg.load_const(self.value)


_DECORATE_CODE = []


def _decorate_context_code():
    """The code of torch.utils._contextlib's decorate_context wrapper."""
    if not _DECORATE_CODE:
        from torch.utils import _contextlib

        def probe():
            pass
        _DECORATE_CODE.append(_contextlib.context_decorator(torch.no_grad().clone, probe).__code__)
    return _DECORATE_CODE[0]


def grad_mode_decorated(fn):
    """(grad mode, wrapped function) when `fn` is the wrapper that
    `@torch.no_grad()` / `@torch.enable_grad()` put around a function
    (torch.utils._contextlib's decorate_context), else None."""
    code = getattr(fn, "__code__", None)
    if code is None or code is not _decorate_context_code() or not fn.__closure__:
        return None
    try:
        cells = {n: c.cell_contents for n, c in zip(code.co_freevars, fn.__closure__)}
    except ValueError:
        return None
    ctx = getattr(cells.get("ctx_factory"), "__self__", None)
    func = cells.get("func")
    if type(ctx) not in (torch.no_grad, torch.enable_grad) or not inspect.isfunction(func):
        return None
    return type(ctx) is torch.enable_grad, func


_AUTOCAST_CLASSES = tuple(c for c in (getattr(torch, "autocast", None),
                                      getattr(getattr(torch, "amp", None), "autocast", None))
                          if isinstance(c, type))


def autocast_noop(tx, cls, args, kwargs):
    """`torch.autocast(device, enabled=False)` while autocast is already off
    for that device changes nothing: traced as a grad-mode block keeping the
    current mode (autocast state is part of every TENSOR_MATCH guard's
    dispatch keys, so entering autocast later recompiles). None when the
    call is anything else."""
    if not _AUTOCAST_CLASSES or cls not in _AUTOCAST_CLASSES:
        return None
    try:
        a = [v.as_python_constant() for v in args]
        k = {n: v.as_python_constant() for n, v in kwargs.items()}
    except Unsupported:
        return None
    device = k.get("device_type", a[0] if a else None)
    enabled = k.get("enabled", a[2] if len(a) > 2 else True)
    if not isinstance(device, str) or enabled is not False:
        return None
    try:
        on = torch.is_autocast_enabled(device)
    except (TypeError, RuntimeError):
        return None
    if on:
        return None
    return GradModeVariable(tx.output.grad_enabled)


class NumericInfoVariable(VariableTracker):
    """torch.finfo(dtype) / torch.iinfo(dtype) made inside the frame: its
    fields (bits, min, max, eps, ...) are constants of the dtype."""

    def __init__(self, value):
        super().__init__(None)
        self.value = value

    def python_type(self):
        return type(self.value)

    def as_python_constant(self):
        return self.value

    def var_getattr(self, tx, name):
        value = getattr(self.value, name)
        if not is_constant_value(value):
            raise Unsupported(f"{type(self.value).__name__}.{name}")
        return ConstantVariable(value)

    def reconstruct(self, cg):
        cg.load_const(self.value)

    def __repr__(self):
        return f"NumericInfoVariable({self.value})"


def _shape_as_tensor(tx, var):
    """torch._shape_as_tensor(x) (torch.onnx.operators.shape_as_tensor): a
    graph node; its example (fake tensors have no data to run it on) is the
    int64 tensor of x's sizes, which the trace thus reads (symbolic ones
    are specialized)."""
    from .tensor import TensorVariable
    if not isinstance(var, TensorVariable):
        raise Unsupported(f"torch._shape_as_tensor of {var}")
    out = tx.output
    out.check_not_in_try(tx)
    with out.fake_mode:
        example = torch.tensor(list(var.example.shape), dtype=torch.int64)
    return out._wrap_result("call_function", torch._shape_as_tensor, (var.node,), {}, example)


def _check_tensor_all(tx, cond):
    """torch._check_tensor_all(cond, msg) of a traced tensor (transformers'
    torch_compilable_check while compiling): a graph op checking the data at
    run time, `torch._assert_async(cond.all())`, in place of reading it at
    trace time (a break). It raises RuntimeError as the check does, without
    its message."""
    out = tx.output
    out.check_not_in_try(tx)
    every = out.call_function(tx, torch.all, [cond], {})
    out._wrap_result("call_function", torch._assert_async, (every.node,), {}, None, effect=True)
    return ConstantVariable(None)


def _constant_arg(var):
    """The Python value of a constant argument; lists and tuples of
    constants made by the traced code count (torch.Size([10, 10]))."""
    from .containers import BaseListVariable
    if isinstance(var, BaseListVariable) and var.source is None:
        return [_constant_arg(v) for v in var.items]
    return var.as_python_constant()


_module_counter = __import__("itertools").count()

# what nn.Module.__init__ puts in every instance's __dict__
_MODULE_FIELDS = frozenset(vars(torch.nn.Module()))


def restart_names():
    """Number `___new_module_*_<n>` from 0 again (convert_frame.restart_names)."""
    global _module_counter
    _module_counter = __import__("itertools").count()


_FUNCTION_MODULE_OVERRIDES = ("__new__", "__getattribute__", "__setattr__", "__getattr__",
                              "__delattr__", "__slots__", "__call__", "_call_impl",
                              "__init_subclass__")


def is_function_module_class(cls):
    """A user nn.Module subclass that may be made at trace time like a
    torch.nn one (transformers' activations: `ACT2FN["silu"]` builds a
    SiLUActivation): of metaclass type, a Python forward, Python __init__s
    (none skipped) down to nn.Module's, and no attribute or call protocol
    of its own. _construct_stateless_module then checks the instance."""
    from .misc import plain_module_subclass
    if not plain_module_subclass(cls, _FUNCTION_MODULE_OVERRIDES):
        return False
    forward = getattr(cls, "forward", None)
    return type(forward) is types.FunctionType and forward is not torch.nn.Module.forward


def _construct_stateless_module(tx, cls, args, kwargs):
    """`torch.nn.Softmax(dim=-1)` inside the frame: a torch.nn module with
    constant constructor arguments and no parameters or buffers behaves the
    same whichever instance runs, so one is made at trace time and called
    as a submodule of the graph (reachable from a global of the frame for
    the code after a break). A user module of is_function_module_class
    too, when the instance holds no submodule and only constants of its
    own (its __init__ runs once, at trace time). Anything else is
    Unsupported."""
    from ...guards import GlobalSource
    user = not (cls.__module__ or "").startswith("torch.nn.")
    if user and not is_function_module_class(cls):
        raise Unsupported(f"constructing {cls.__name__} inside the compiled frame")
    try:
        a = [_constant_arg(v) for v in args]
        k = {n: _constant_arg(v) for n, v in kwargs.items()}
    except Unsupported:
        raise Unsupported(f"constructing {cls.__name__} with non-constant arguments")
    from ... import rng
    state = rng.save()          # an __init__ that draws (a weight init) leaves no trace
    try:
        module = cls(*a, **k)
    finally:
        rng.restore(state)
    if any(True for _ in module.parameters()) or any(True for _ in module.buffers()):
        raise Unsupported(f"constructing {cls.__name__} (it has parameters or buffers) "
                          "inside the compiled frame")
    if user and (module._modules or not all(
            is_constant_value(v) for k, v in vars(module).items() if k not in _MODULE_FIELDS)):
        raise Unsupported(f"constructing {cls.__name__} (it holds submodules or objects) "
                          "inside the compiled frame")
    name = f"___new_module_{cls.__name__}_{next(_module_counter)}"
    tx.output.install[name] = module
    return tx.wrap(module, GlobalSource(name))
