"""wrap(): turn a real value read from the frame into a VariableTracker and
record the guards that make the trace valid for it.

Guards per kind: tensors TENSOR_MATCH (and become graph inputs), constants
EQUALS_MATCH (None: ID_MATCH), tuples/lists LENGTH plus per-item guards,
dicts DICT_KEYS plus per-value guards, modules and functions
FUNCTION_MATCH/ID_MATCH, nn.Modules ID_MATCH plus `training`, other objects
TYPE_MATCH. Values without a source (made by traced code) get no guard.
"""
import sys
import types

import torch

from ...exc import Unsupported
from ...guards import (DICT_KEYS, EQUALS_MATCH, FUNCTION_MATCH, ID_MATCH, LENGTH, TYPE_MATCH,
                       ItemSource)
from .base import ClassVariable, ConstantVariable, OpaqueVariable, is_constant_value
from .builtin import BuiltinVariable, is_builtin_callable
from .containers import DictVariable, ListVariable, TupleVariable, wrap_sequence_items
from .functions import UserFunctionVariable, UserMethodVariable
from .misc import (PythonModuleVariable, SkippedFunctionVariable, TypingAliasVariable,
                   UserDefinedObjectVariable, is_typing_alias)
from .nn_module import NNModuleVariable
from .torch import (TorchFunctionVariable, TorchModuleVariable, is_graphable_torch_callable,
                    is_state_query, is_torch_object)

_SKIP_ROOTS = {"numpy", "scipy", "pandas", "sympy", "PIL", "matplotlib", "tabulate",
               "dynamo", "_pytest", "pytest", "functools", "typing"}


def is_skipped_function(fn):
    """Functions the tracer does not inline: stdlib, numpy/scipy/..., dynamo
    itself. torch functions are handled before this check."""
    module = (getattr(fn, "__module__", None) or "").split(".")[0]
    if module in _SKIP_ROOTS:
        return True
    from ...skipfiles import is_stdlib_file
    code = getattr(fn, "__code__", None)
    return code is not None and is_stdlib_file(code.co_filename)


# Plain-Python torch helpers the tracer inlines (nn.MultiheadAttention's and
# TransformerEncoderLayer's fast-path checks on self-attention inputs).
_INLINABLE_TORCH_HELPERS = {
    "torch.nn.modules.activation._check_arg_device",
    "torch.nn.modules.activation._arg_requires_grad",
    "torch.nn.modules.activation._is_make_fx_tracing",
}


def _qualified(fn):
    return f"{getattr(fn, '__module__', None)}.{getattr(fn, '__qualname__', None)}"


def _guard(tx, source, kind, *expected):
    if source is not None:
        tx.output.add_guard(source, kind, *expected)


def wrap(tx, value, source):
    """A VariableTracker for `value` found at `source` (None: no guards).
    A tuple, list or dict that contains itself is Unsupported."""
    if type(value) in (tuple, list, dict) or isinstance(value, tuple):
        active = tx.output.wrapping
        if id(value) in active:
            raise Unsupported(f"a {type(value).__name__} that contains itself")
        active.add(id(value))
        try:
            return _wrap(tx, value, source)
        finally:
            active.discard(id(value))
    return _wrap(tx, value, source)


def _wrap(tx, value, source):
    if isinstance(value, torch.Tensor):
        if source is None:
            raise Unsupported("a tensor the tracer cannot reload at run time (no source)")
        return tx.output.add_input(source, value)
    if value is None:
        _guard(tx, source, ID_MATCH, None)
        return ConstantVariable(None, source)
    if is_constant_value(value):
        _guard(tx, source, EQUALS_MATCH, value)
        return ConstantVariable(value, source)
    if type(value) is set and all(is_constant_value(v) for v in value):
        # a set of constants read from the frame (a module's pruned_heads):
        # its contents now, guarded by equality with a copy
        _guard(tx, source, EQUALS_MATCH, set(value))
        return ConstantVariable(value, source)
    if isinstance(value, tuple) and hasattr(type(value), "_fields") and hasattr(type(value), "_make"):
        from .containers import NamedTupleVariable
        _guard(tx, source, LENGTH, type(value), len(value))
        return NamedTupleVariable(wrap_sequence_items(tx, value, source), type(value)._fields,
                                  source, cls=type(value))
    if type(value) in (list, dict):
        known = tx.output.known_container(source, value)
        if known is not None:
            return known
    if type(value) in (tuple, list):
        _guard(tx, source, LENGTH, type(value), len(value))
        items = wrap_sequence_items(tx, value, source)
        if type(value) is tuple:
            return TupleVariable(items, source)
        var = ListVariable(items, source)
        tx.output.remember_container(source, value, var)
        return var
    if type(value) is dict and all(type(k) in (str, int) for k in value):
        _guard(tx, source, DICT_KEYS, tuple(value))
        items = {k: wrap(tx, v, ItemSource(source, k) if source is not None else None)
                 for k, v in value.items()}
        var = DictVariable(items, source)
        tx.output.remember_container(source, value, var)
        return var
    if isinstance(value, torch.nn.Module) and "_modules" not in value.__dict__:
        # its own __init__ is running and nn.Module.__init__ has not yet
        # (`self` of a module's __init__ frame): no state to trace
        raise Unsupported(f"a {type(value).__name__} before nn.Module.__init__ ran")
    if isinstance(value, torch.nn.Module) and source is not None and \
            _is_state_module(value):
        # a state-only module (a KV cache handed back in): a plain object
        # whose attribute stores and list mutations are written back
        _guard(tx, source, TYPE_MATCH, type(value))
        return UserDefinedObjectVariable(value, source)
    if isinstance(value, torch.nn.Module):
        if source is None:
            raise Unsupported("an nn.Module without a source")
        _guard(tx, source, ID_MATCH, value)
        var = NNModuleVariable(value, source)
        var.guard_training(tx)
        return var
    if isinstance(value, types.ModuleType):
        _guard(tx, source, FUNCTION_MATCH, value)
        if value.__name__ == "torch" or value.__name__.startswith("torch."):
            return TorchModuleVariable(value, source)
        return PythonModuleVariable(value, source)
    from ... import _C
    if isinstance(value, _C.OptimizedCallable):
        # a function wrapped by optimize()/run(): the outer compile traces
        # into it (the inner wrapper is ignored); a disable() wrapper breaks
        from ...guards import AttrSource
        if value._mode == 0:
            return SkippedFunctionVariable(value, source)
        return wrap(tx, value._fn, AttrSource(source, "_fn") if source is not None else None)
    from .torch import GradModeExit, GradModeExitVariable
    if type(value) is GradModeExit and (value.prev is None or type(value.prev) is bool):
        _guard(tx, source, TYPE_MATCH, GradModeExit)
        if source is not None:
            from ...guards import AttrSource
            _guard(tx, AttrSource(source, "prev"), ID_MATCH if value.prev is None else EQUALS_MATCH,
                   value.prev)
        return GradModeExitVariable(value, source)
    directive = _directive(tx, value, source)
    if directive is not None:
        return directive
    if is_builtin_callable(value):
        # folded at trace time: the trace is only valid for this very callable
        _guard(tx, source, FUNCTION_MATCH, value)
        return BuiltinVariable(value, source)
    if isinstance(value, types.FunctionType) and _qualified(value) in _INLINABLE_TORCH_HELPERS:
        _guard(tx, source, FUNCTION_MATCH, value)
        return UserFunctionVariable(value, source)
    if is_torch_object(value):
        if is_graphable_torch_callable(value) or is_state_query(value):
            # recorded into the graph (or folded): valid for this callable only
            _guard(tx, source, FUNCTION_MATCH, value)
            return TorchFunctionVariable(value, source)
        return SkippedFunctionVariable(value, source)
    if isinstance(value, types.FunctionType):
        if is_skipped_function(value):
            return SkippedFunctionVariable(value, source)
        _guard(tx, source, FUNCTION_MATCH, value)
        return UserFunctionVariable(value, source)
    if isinstance(value, types.MethodType) and value.__func__ is torch.autograd.Function.apply.__func__:
        from .autograd_function import AutogradFunctionApplyVariable, is_autograd_function
        if is_autograd_function(value.__self__):       # Fn.apply kept as a value
            if source is not None:
                from ...guards import AttrSource
                _guard(tx, _func_source(source), FUNCTION_MATCH, value.__func__)
                _guard(tx, AttrSource(source, "__self__"), ID_MATCH, value.__self__)
            return AutogradFunctionApplyVariable(value.__self__, source)
    if isinstance(value, types.MethodType):
        if isinstance(value.__func__, types.FunctionType) and not is_skipped_function(value.__func__) \
                and not is_torch_object(value.__func__):
            self_src = None
            if source is not None:
                from ...guards import AttrSource
                self_src = AttrSource(source, "__self__")
            _guard(tx, source and _func_source(source), FUNCTION_MATCH, value.__func__)
            return UserMethodVariable(value.__func__, wrap(tx, value.__self__, self_src), source)
        return SkippedFunctionVariable(value, source)
    if isinstance(value, type):
        _guard(tx, source, ID_MATCH, value)
        return ClassVariable(value, source)
    if callable(value) and type(value).__name__ in ("builtin_function_or_method", "method_descriptor",
                                                     "wrapper_descriptor", "ufunc", "cython_function_or_method",
                                                     "method-wrapper", "functools.partial", "partial"):
        return SkippedFunctionVariable(value, source)
    if is_typing_alias(value):
        _guard(tx, source, ID_MATCH, value)
        return TypingAliasVariable(value, source)
    from .model_output import is_model_output_class, wrap_model_output
    if is_model_output_class(type(value)):
        return wrap_model_output(tx, value, source)
    module = (type(value).__module__ or "").split(".")[0]
    if module in _SKIP_ROOTS or module == "builtins":
        return OpaqueVariable(value, source)
    _guard(tx, source, TYPE_MATCH, type(value))
    return UserDefinedObjectVariable(value, source)


def _is_state_module(value):
    from .misc import is_state_module_class
    return is_state_module_class(type(value)) and not value._parameters and \
        not value._buffers and not value._modules


def _directive(tx, value, source):
    """The VT for a callable under a dynamo.allow_in_graph /
    disallow_in_graph / skip directive (dynamo.decorators), else None."""
    from ... import decorators
    if not callable(value) or isinstance(value, torch.nn.Module):
        return None
    try:
        if decorators.is_disallowed(value):
            return SkippedFunctionVariable(value, source)
        if decorators.is_allowed(value):
            _guard(tx, source, FUNCTION_MATCH, value)
            return TorchFunctionVariable(value, source)
        code = getattr(value, "__code__", None)
        if code is not None and decorators.is_skipped_code(code):
            return SkippedFunctionVariable(value, source)
    except TypeError:
        return None
    return None


def _func_source(source):
    from ...guards import AttrSource
    return AttrSource(source, "__func__")


def wrap_torch_attr(tx, value, source):
    """Attributes of torch modules: not guarded."""
    from ... import decorators
    if callable(value) and not isinstance(value, type) and decorators.is_disallowed(value):
        return SkippedFunctionVariable(value, source)
    if value is torch.jit.annotate:          # a type annotation: the value itself
        return TorchFunctionVariable(value, source)
    if isinstance(value, types.ModuleType):
        return TorchModuleVariable(value, source)
    if is_constant_value(value):
        return ConstantVariable(value)
    if isinstance(value, torch.Tensor):
        raise Unsupported("tensor attribute of a torch module")
    if isinstance(value, type):
        if value in (torch.no_grad, torch.enable_grad, torch.set_grad_enabled, torch.Size,
                     torch.device, torch.finfo, torch.iinfo):
            return TorchFunctionVariable(value, source)
        return ClassVariable(value, source)
    if callable(value):
        if is_graphable_torch_callable(value) or is_state_query(value):
            return TorchFunctionVariable(value, source)
        return SkippedFunctionVariable(value, source)
    return OpaqueVariable(value, source)


def wrap_const(value):
    """A VT for a LOAD_CONST operand (tuples become TupleVariables)."""
    if type(value) is tuple:
        return TupleVariable([wrap_const(v) for v in value])
    return ConstantVariable(value)


__all__ = ["wrap", "wrap_torch_attr", "wrap_const", "is_skipped_function", "sys"]
