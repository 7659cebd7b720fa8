"""wrap(): turn a real value read from the frame into a VariableTracker and
record the guards that make the trace valid for it.

Guards per kind: tensors TENSOR_MATCH (and become graph inputs), constants
EQUALS_MATCH (None: ID_MATCH), tuples/lists LENGTH plus per-item guards,
dicts DICT_KEYS plus per-value guards, modules and functions
FUNCTION_MATCH/ID_MATCH, nn.Modules ID_MATCH plus `training`, other objects
TYPE_MATCH. Values without a source (made by traced code) get no guard.
"""
import collections
import functools
import itertools
import operator
import sys
import types
import typing

import torch

from ...exc import Unsupported
from ... import config, dynamic_shapes
from ...guards import (DICT_KEYS, EQUALS_MATCH, FUNCTION_MATCH, ID_MATCH, LENGTH, SAME_OBJECT,
                       TENSOR_MATCH, TYPE_MATCH, Guard, ItemSource, LocalSource, _identifier, _mangle,
                       _rank, module_path)
from ...modes import hook_off
from ...rng import draws_random
from ...output_graph import OutputGraph, _check_inplace_cast, _check_same_dtypes, _has_node
from .base import ClassVariable, ConstantVariable, OpaqueVariable, is_constant_value
from .builtin import BuiltinVariable, is_builtin_callable
from .containers import DictVariable, ListVariable, SizeVariable, TupleVariable, wrap_sequence_items
from .higher_order import getitem_as_index, is_higher_order_function, wrap_higher_order
from .functions import (LruCacheWrapperVariable, UserFunctionVariable, UserMethodVariable,
                        is_lru_cache_wrapper)
from .misc import (PythonModuleVariable, SkippedFunctionVariable, TypingAliasVariable, TypingCastVariable,
                   UserDefinedObjectVariable, is_typing_alias)
from .nn_module import NNModuleVariable
from ...skipfiles import is_inlined_torch_code
from .optimizer import OptimizerVariable, is_optimizer
from .tensor import TensorVariable
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


# the torch dtype a Python type stands for as a `dtype=` argument
_PYTHON_DTYPES = {int: torch.int64, float: torch.float64, bool: torch.bool,
                  complex: torch.complex128}


def _qualified(fn):
    return f"{getattr(fn, '__module__', None)}.{getattr(fn, '__qualname__', None)}"


# the names of the functions CPython makes for comprehensions (3.11)
_COMPREHENSIONS = frozenset({"<listcomp>", "<setcomp>", "<dictcomp>", "<genexpr>"})


def _guard(tx, source, kind, *expected):
    if source is not None:
        tx.output.add_guard(source, kind, *expected)


def wrap(tx, value, source):
    """A VariableTracker for `value` found at `source` (None: no guards).
    A tuple, list or dict that contains itself is Unsupported."""
    if type(value) in (tuple, list, dict, collections.OrderedDict) or isinstance(value, tuple):
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
        if torch._C._functorch.is_functorch_wrapped_tensor(value):
            # a frame called by an eager torch.vmap / torch.func.grad: its
            # tensors have no storage a guard or a fake copy could read
            raise Unsupported("a tensor of a running functorch transform (vmap, grad)")
        return tx.output.add_input(source, value)
    if value is None:
        _guard(tx, source, ID_MATCH, None)
        return ConstantVariable(None, source)
    if type(value) is int and value not in (0, 1) and dynamic_shapes.int_source(source) and \
            not config.verify_correctness and dynamic_shapes.dynamic_int(tx.output.frame.code, source.name()):
        return tx.output.add_int_input(source, value)
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
    if type(value) in (list, dict, collections.OrderedDict):
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
    if type(value) in (dict, collections.OrderedDict) and all(type(k) in (str, int) for k in value):
        # an OrderedDict (a backbone's features into an FPN) keeps its class;
        # its keys are guarded in its own order, given as an OrderedDict
        ordered = type(value) is collections.OrderedDict
        _guard(tx, source, DICT_KEYS, collections.OrderedDict.fromkeys(value) if ordered else tuple(value))
        items = {k: wrap(tx, v, ItemSource(source, k) if source is not None else None)
                 for k, v in value.items()}
        var = DictVariable(items, source, user_cls=type(value))
        tx.output.remember_container(source, value, var)
        return var
    if type(value) is dict and value and all(map(_is_identity_constant, value)) and \
            all(_is_identity_constant(v) or type(v) is types.FunctionType for v in value.values()):
        # a table keyed by classes or typing forms (huggingface_hub's
        # validators by typing origin): its items compare by identity, so
        # the table is guarded whole by equality with a copy
        _guard(tx, source, EQUALS_MATCH, dict(value))
        return DictVariable({k: wrap(tx, v, None) for k, v in value.items()}, source)
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
        if isinstance(source, LocalSource) and \
                dynamic_shapes.generic_module(tx.output.frame.code, source.name()):
            # another instance of its class came before: any instance will do
            _guard(tx, source, TYPE_MATCH, type(value))
            var = NNModuleVariable(value, source, generic=True)
        else:
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
            return SkippedFunctionVariable(value, source, "marked dynamo.disable")
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
    if value is typing.cast:
        _guard(tx, source, FUNCTION_MATCH, value)
        return TypingCastVariable(source)
    if type(value) is functools.partial and not value.__dict__:
        return _wrap_partial(tx, value, source)
    if is_lru_cache_wrapper(value) and not is_skipped_function(value.__wrapped__) and \
            not is_torch_object(value.__wrapped__):
        # the wrapper's identity; the function it wraps is fixed with it
        # (torch's and skipped libraries' cached functions stay opaque)
        _guard(tx, source, FUNCTION_MATCH, value)
        return LruCacheWrapperVariable(value, source)
    if is_builtin_callable(value):
        # folded at trace time: the trace is only valid for this very callable
        _guard(tx, source, FUNCTION_MATCH, value)
        return BuiltinVariable(value, source)
    if isinstance(value, types.FunctionType) and (_qualified(value) in _INLINABLE_TORCH_HELPERS
                                                  or is_inlined_torch_code(value.__code__)):
        _guard(tx, source, FUNCTION_MATCH, value)
        return UserFunctionVariable(value, source)
    if is_higher_order_function(value):
        _guard(tx, source, FUNCTION_MATCH, value)
        return wrap_higher_order(value, source)
    if is_torch_object(value):
        if is_graphable_torch_callable(value) or is_state_query(value):
            # recorded into the graph (or folded): valid for this callable only
            _guard(tx, source, FUNCTION_MATCH, value)
            return TorchFunctionVariable(value, source)
        return SkippedFunctionVariable(value, source)
    if isinstance(value, types.FunctionType):
        if is_skipped_function(value):
            return SkippedFunctionVariable(value, source)
        if value.__code__.co_name in _COMPREHENSIONS and source is not None:
            # a comprehension's own function (before 3.12: made by
            # MAKE_FUNCTION ahead of its iterable, so a break there hands it
            # to the resume function): a new object on every call, which no
            # user code sees; its code is what the trace depends on (its
            # closure cells are read through their own sources)
            from ...guards import AttrSource
            _guard(tx, AttrSource(source, "__code__"), ID_MATCH, value.__code__)
        else:
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
                and (not is_torch_object(value.__func__)
                     or is_inlined_torch_code(value.__func__.__code__)):
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
    if is_optimizer(value) and source is not None:
        _guard(tx, source, TYPE_MATCH, type(value))
        return OptimizerVariable(value, source)
    _guard(tx, source, TYPE_MATCH, type(value))
    return UserDefinedObjectVariable(value, source)


def _is_identity_constant(value):
    """A hashable value that equals only itself or equal constants: None,
    str, bytes, int, bool, a class, a typing form. (A dict of bytes is
    os.environ's store: an environment variable read is guarded by the
    environment's equality with a copy.)"""
    return value is None or type(value) in (str, bytes, int, bool) or isinstance(value, type) or \
        is_typing_alias(value)


def _is_state_module(value):
    from .misc import is_state_module_class
    return is_state_module_class(type(value)) and not value._parameters and \
        not value._buffers and not value._modules


def _directive(tx, value, source):
    """The VT for a callable under a dynamo.allow_in_graph /
    disallow_in_graph / skip directive or torch's spelling of one
    (dynamo.decorators), else None."""
    from ... import decorators
    if not callable(value) or isinstance(value, torch.nn.Module):
        return None
    try:
        if decorators.is_disallowed(value):
            return SkippedFunctionVariable(value, source, "marked dynamo.disallow_in_graph")
        if decorators.torch_disable_kind(value) is not None:
            return SkippedFunctionVariable(value, source, "marked torch.compiler.disable")
        if decorators.is_allowed(value):
            _guard(tx, source, FUNCTION_MATCH, value)
            return TorchFunctionVariable(value, source)
        code = getattr(value, "__code__", None)
        if code is not None and decorators.is_skipped_code(code):
            return SkippedFunctionVariable(value, source, "marked dynamo.skip")
    except TypeError:
        return None
    return None


def _wrap_partial(tx, value, source):
    """A functools.partial: its type guarded, its function, arguments and
    keywords wrapped from their attributes (each with its own guards)."""
    from ...guards import AttrSource
    from .functions import PartialVariable
    _guard(tx, source, TYPE_MATCH, functools.partial)
    attr = (lambda name: AttrSource(source, name)) if source is not None else (lambda name: None)
    func = wrap(tx, value.func, attr("func"))
    args, keywords = wrap(tx, value.args, attr("args")), wrap(tx, value.keywords, attr("keywords"))
    if isinstance(args, ConstantVariable):           # a tuple of constants is one constant
        args = [ConstantVariable(v) for v in value.args]
    else:
        args = args.items
    if isinstance(keywords, ConstantVariable):
        keywords = {k: ConstantVariable(v) for k, v in value.keywords.items()}
    else:
        keywords = keywords.items
    return PartialVariable(func, args, keywords, source)


def _func_source(source):
    from ...guards import AttrSource
    return AttrSource(source, "__func__")


def wrap_torch_attr(tx, value, source):
    """Attributes of torch modules: not guarded."""
    from ... import decorators
    if callable(value) and not isinstance(value, type) and decorators.is_disallowed(value):
        return SkippedFunctionVariable(value, source, "marked dynamo.disallow_in_graph")
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
        if is_higher_order_function(value):
            return wrap_higher_order(value, source)
        if is_graphable_torch_callable(value) or is_state_query(value):
            return TorchFunctionVariable(value, source)
        if isinstance(value, types.FunctionType) and is_inlined_torch_code(value.__code__):
            return UserFunctionVariable(value, source)
        return SkippedFunctionVariable(value, source)
    return OpaqueVariable(value, source)


def wrap_const(value):
    """A VT for a LOAD_CONST operand (tuples become TupleVariables)."""
    if type(value) is tuple:
        return TupleVariable([wrap_const(v) for v in value])
    return ConstantVariable(value)


__all__ = ["wrap", "wrap_torch_attr", "wrap_const", "is_skipped_function", "sys"]


# ---------------------------------------------------------------- graph values
# (moved from output_graph.py: the OutputGraph as the tracer uses it, fx
# nodes and example values in, VariableTrackers out)

def _tensor_args(args, kwargs):
    return [a for a in (*args, *kwargs.values()) if isinstance(a, TensorVariable)]


def _versions(args, kwargs):
    """Version counters of the tensor arguments' examples (an in-place op
    on a fake tensor, or on a view of it, bumps them)."""
    return [a.example._version for a in _tensor_args(args, kwargs)]


def _layout(t):
    """Sizes, strides and storage offset of tensor `t` as text (symbolic
    ones as their expressions: comparing them records no guard)."""
    return (tuple(map(str, t.shape)), tuple(map(str, t.stride())), str(t.storage_offset()))


def _layouts(args, kwargs):
    """_layout() of the tensor arguments' examples (before an in-place op)."""
    out = []
    for a in _tensor_args(args, kwargs):
        try:
            out.append(_layout(a.example))
        except RuntimeError:        # no strides (sparse): compared as unchanged
            out.append(None)
    return out


def _returned_input(args, kwargs, example, versions):
    """The argument variable the op returned as its result, when it is a
    pure identity: the fake run returned that very argument object
    (dropout(training=False), contiguous() of a contiguous tensor, .to()
    of the same dtype, nn.Identity, Dropout in eval) and wrote to none of
    the arguments. Eager returns the same object, so the traced value is
    that variable and no node is recorded: a backend that rebuilds the
    graph (aot_eager decomposes dropout into a clone) cannot turn the
    object into a copy. None otherwise (in-place ops keep their node)."""
    if not isinstance(example, torch.Tensor):
        return None
    tensors = _tensor_args(args, kwargs)
    if [a.example._version for a in tensors] != versions:
        return None
    for a in tensors:
        if a.example is example:
            return a
    return None


def _storage_shared(t):
    """Another tensor (a view of `t`, perhaps another input) holds t's
    storage. A symbolic example has a storage of its own, which would cut
    the alias the fake views of the other input keep (a write through one
    no longer seen by the other: a graph that raises where eager does, at
    another point). Such inputs stay static; the aliasing is guarded."""
    count = getattr(torch._C, "_storage_Use_Count", None)
    if count is None:           # a torch without it: every input may be symbolic, as before
        return False
    return count(t.untyped_storage()._cdata) > 2    # t's own reference and this call's


def _dense_order(t):
    """Dimensions of `t` innermost first when its strides are those of a
    dense tensor of its sizes laid out in that order (contiguous: the last
    dimension first; channels-last: the channel one), else None."""
    if t.is_contiguous():
        return list(range(t.dim() - 1, -1, -1))
    if t.dim() == 4 and t.is_contiguous(memory_format=torch.channels_last):
        return [1, 3, 2, 0]
    if t.dim() == 5 and t.is_contiguous(memory_format=torch.channels_last_3d):
        return [1, 4, 3, 2, 0]
    return None


def _dense_strides(sizes, order):
    """Strides of a dense tensor of `sizes` laid out innermost-first in
    `order` (ints or SymInts)."""
    strides = [0] * len(sizes)
    step = 1
    for d in order:
        strides[d] = step
        step = step * sizes[d]
    return tuple(strides)


def _shape_source_class():
    """The ShapeEnv names each symbol by an object of its Source class (the
    type create_symbol requires); ours only carries the leaf's text."""
    from torch.fx.experimental import symbolic_shapes

    class ShapeSource(symbolic_shapes.Source):
        def __init__(self, text):
            self.text = text

        @property
        def _name_template(self):
            return self.text

        def __hash__(self):
            return hash(self.text)

        def __eq__(self, other):
            return type(other) is type(self) and other.text == self.text
    return ShapeSource


_ShapeSource = None


def _make_shape_source(text):
    global _ShapeSource
    if _ShapeSource is None:
        _ShapeSource = _shape_source_class()
    return _ShapeSource(text)


def _storage_id(example):
    """The identity of a fake tensor's storage (None for anything else)."""
    if not isinstance(example, torch.Tensor):
        return None
    try:
        return example.untyped_storage()._cdata
    except Exception:  # noqa: BLE001 - no storage (a sparse or nested example)
        return None


class GraphBuilder(OutputGraph):
    """OutputGraph for the tracer: graph inputs, attributes, ops and
    constants as VariableTrackers (output_graph.py holds only fx nodes)."""

    def add_input(self, source, value):
        """A graph input for tensor `value` at `source` (one per source).
        A tensor already read from another source is the same variable
        (aliasing is guarded: SAME_OBJECT(source, first source, True))."""
        key = source.name()
        if key in self.inputs:
            return self.inputs[key]
        seen = self.input_objs.get(id(value))
        if seen is not None and seen[0] is value:
            self.add_guard(source, SAME_OBJECT, seen[1].source, True)
            self.inputs[key] = seen[1]
            return seen[1]
        self.guards.append(Guard(source, TENSOR_MATCH, (value,), self.origin()))  # lowered in final_guards
        node = self._ranked_placeholder(source, value)
        example = self._symbolic_example(source, value)
        if example is None:
            example = self.fake_mode.from_tensor(value, static_shapes=True)
        node.meta["example_value"] = example
        self.note_new_input(example)
        self.note_refused_history(value, example)
        var = TensorVariable(node, example, source, cls=type(value))
        self.inputs[key] = var
        self.input_objs[id(value)] = (value, var)
        return var

    def _ranked_placeholder(self, source, value):
        """A new placeholder for the input at `source` (real value `value`),
        placed among the others in input order (by source rank, then by
        first use)."""
        rank = (_rank(source), next(self.input_order))
        before = None
        for node in self.graph.nodes:
            if node.op != "placeholder" or node.meta["rank"] > rank:
                before = node
                break
        with self.graph.inserting_before(before):
            node = self.graph.placeholder(_identifier(_mangle(source)))
        node.meta.update(rank=rank, source=source, real=value)
        return node

    def add_int_input(self, source, value):
        """A graph input for int argument `value` at `source` traced as a
        symbolic int (dynamo.dynamic_shapes.dynamic_int: its value changed
        between compiles): TYPE_MATCH int, and the relations the trace
        needs of it as SHAPE_GUARDs (a use that needs the number, `range(n)`,
        specializes it: `L['n'] == 5`)."""
        from torch.fx.experimental.symbolic_shapes import DimDynamic
        from ...shape_guards import Leaf
        from .symbolic import SymNodeVariable
        key = source.name()
        if key in self.int_inputs:
            return self.int_inputs[key]
        self.add_guard(source, TYPE_MATCH, int)
        leaf = Leaf(source, None)
        env = self.shape_env
        sym = env.create_symbol(value, _make_shape_source(leaf.text()), dynamic_dim=DimDynamic.DYNAMIC,
                                positive=None)
        self.shape_leaves[sym] = leaf
        example = env.create_symintnode(sym, hint=value)
        node = self._ranked_placeholder(source, value)
        node.meta["example_value"] = example
        self.symbolic_inputs[key] = example
        var = self.int_inputs[key] = SymNodeVariable(node, example)
        return var

    def _symbolic_example(self, source, value):
        """The example of input `value` with symbolic sizes for its dynamic
        dimensions (dynamo.dynamic_shapes.dynamic_dims; a size of 0 or 1
        stays a constant, as torch specializes them), or None when it has
        none or is not a plain dense tensor whose strides follow from its
        sizes (contiguous or channels-last: strides become expressions of
        the sizes, related by SHAPE_GUARDs; other layouts stay static)."""
        from ... import config, dynamic_shapes, logs
        from ...shape_guards import Leaf
        if config.verify_correctness:
            return None     # the check runs the graphs on real example inputs: static ones
        if type(value) not in (torch.Tensor, torch.nn.Parameter) or value.layout != torch.strided \
                or value.is_quantized or value._is_view() or value.is_sparse \
                or _storage_shared(value):
            return None
        dims = dynamic_shapes.dynamic_dims(self.frame.code, source.name(), value)
        dims = [d for d in dims if value.size(d) >= 2]
        if not dims:
            return None
        order = _dense_order(value)
        if order is None or _dense_strides(value.shape, order) != tuple(value.stride()):
            return None                 # size-1 dims with other strides: kept static
        from torch.fx.experimental.symbolic_shapes import DimDynamic
        env = self.shape_env
        sizes = list(value.shape)
        for d in sorted(dims):
            leaf = Leaf(source, d)
            sym = env.create_symbol(sizes[d], _make_shape_source(leaf.text()),
                                    dynamic_dim=DimDynamic.DYNAMIC)
            self.shape_leaves[sym] = leaf
            logs.on_symbol(self.frame.code, sym, leaf.text(), sizes[d])
            sizes[d] = env.create_symintnode(sym, hint=sizes[d])
        strides = _dense_strides(sizes, order)
        with self.fake_mode:
            example = torch.empty_strided(sizes, strides, dtype=value.dtype, device=value.device)
        if value.requires_grad:
            example.requires_grad_(True)
        for i, st in enumerate(example.stride()):
            if type(st) is not int:
                self.stride_facts.append((Leaf(source, i, stride=True), st.node.expr))
        self.symbolic_inputs[source.name()] = example
        return example

    def get_attr(self, tensor, source):
        """A parameter/buffer reached from a module: a get_attr node on the
        GraphModule (shared object), reloadable from `source` if needed."""
        var = self.attr_nodes.get(id(tensor))
        if var is not None:
            return var
        target = self._target(_mangle(source), tensor)
        node = self.graph.get_attr(target)
        self._tag(node)
        node.meta["example_value"] = example = self._fake(tensor)
        var = TensorVariable(node, example, source, cls=type(tensor))
        self.attr_nodes[id(tensor)] = var
        return var

    def _examples(self, value):
        from .symbolic import SliceVariable, SymNodeVariable
        if isinstance(value, (TensorVariable, SymNodeVariable)):
            return value.example, value.node
        if isinstance(value, SliceVariable):
            pairs = [self._examples(p) for p in value.parts]
            return slice(*[p[0] for p in pairs]), slice(*[p[1] for p in pairs])
        if isinstance(value, (TupleVariable, ListVariable)):
            pairs = [self._examples(v) for v in value.items]
            t = value.python_type()
            if t is torch.Size:
                t = tuple
            return t(p[0] for p in pairs), t(p[1] for p in pairs)
        if isinstance(value, DictVariable):
            pairs = {k: self._examples(v) for k, v in value.items.items()}
            return {k: p[0] for k, p in pairs.items()}, {k: p[1] for k, p in pairs.items()}
        if isinstance(value, ConstantVariable) or value.is_python_constant():
            c = value.as_python_constant()
            return c, c
        raise Unsupported(f"argument {value} to a graph operation")

    def _prepare(self, args, kwargs):
        ex_args, node_args = zip(*[self._examples(a) for a in args]) if args else ((), ())
        ex_kw = {k: self._examples(v) for k, v in kwargs.items()}
        dtype = ex_kw.get("dtype", (None,))[0]
        if type(dtype) is type and dtype in _PYTHON_DTYPES:
            # `dtype=int`: torch's own spelling, which the graph's code can print
            ex_kw["dtype"] = (_PYTHON_DTYPES[dtype],) * 2
        if self.grad_enabled:
            self._check_views_for_autograd(ex_args, ex_kw)
        return (list(ex_args), tuple(node_args), {k: p[0] for k, p in ex_kw.items()},
                {k: p[1] for k, p in ex_kw.items()})

    def _check_views_for_autograd(self, ex_args, ex_kw):
        """An op in grad mode reads the autograd history of its view
        arguments; eager refuses (RuntimeError) a view whose history cannot
        be rebuilt: made in no_grad mode, then written in place. A graph
        input's example does not carry that state over from its real
        tensor (note_refused_history records it at add_input; torch 2.11's
        fake tensors then ran the op where eager raised: fuzz seed
        82,025,641). Such a use is a break: the op runs eagerly and raises
        as in eager. (Views made inside the trace keep their state on the
        fake; their grad_fn is not read here: reading it rebuilds the
        history, and a later in-place op on the fake then passed where
        eager's raised.)"""
        if not self.refused_history:
            return
        for t in itertools.chain(ex_args, ex_kw.values()):
            why = self.refused_history.get(id(t), (None, None))[1]
            if why is not None:
                raise Unsupported(f"a view whose autograd history eager refuses ({why})")

    def note_refused_history(self, value, example):
        """Input `value` (real) is a view whose autograd history eager
        refuses (see _check_views_for_autograd): remember it for `example`."""
        if value.requires_grad and value._is_view():
            try:
                value.grad_fn
            except RuntimeError as e:
                self.refused_history[id(example)] = (example, str(e).splitlines()[0][:120])

    def note_input_writes(self, args, kwargs, versions, layouts=None):
        """After an op's fake run: did it write to a graph input (a tensor
        argument whose version moved and which shares its storage with an
        input, a parameter or a buffer: a view, a detach())? Such a graph
        can be re-run eagerly after it raised only when the write waits for
        the graph's end (OutputGraph.input_written, check_not_in_try).
        `layouts`: the arguments' _layout() before an in-place op; one that
        changed the sizes or strides of an input (transpose_, resize_) is a
        write that cannot wait."""
        tensors = _tensor_args(args, kwargs)
        changed = [a.example for a, v in zip(tensors, versions) if a.example._version != v]
        moved = [a.example for a, lay in zip(tensors, layouts or ())
                 if lay is not None and _layout(a.example) != lay]
        if not changed and not moved:
            return
        if self.every_written_storage is not None:
            ids = {_storage_id(t) for t in changed + moved}
            self.every_written_storage = None if None in ids else self.every_written_storage | ids
        ins = [v.example for v in self.inputs.values()] + \
            [v.example for v in self.attr_nodes.values()] + list(self.fake_params.values())
        try:
            stores = {t.untyped_storage()._cdata for t in ins}
            hit = {t.untyped_storage()._cdata for t in changed} & stores
            written = bool(hit)
            if self.written_storages is not None:
                self.written_storages |= hit        # OutputGraph._storage_guards
            why = self.input_write_owner(hit) if hit else None
            if {t.untyped_storage()._cdata for t in moved} & stores:
                written, why = True, "the op changes an input's sizes or strides in place"
        except Exception:  # noqa: BLE001 - no storage to compare: count it as a write
            written, why = True, "the written storage could not be read"
            self.written_storages = None            # which one is unknown: all of them
        if written:
            self.input_written(why)

    def call_function(self, tx, fn, args, kwargs):
        if fn is operator.getitem and self.getitem_to_index and isinstance(args[0], TensorVariable):
            index = getitem_as_index(tx, args[0], args[1])      # TransformGetItemToIndex
            if index is not None:
                return index
        if self.vmap_scope is not None:
            batched, args, kwargs = self.vmap_scope.check(fn, args, kwargs, self._unsqueezer(tx))
            return self._mark_batched(batched, self._call_function(tx, fn, args, kwargs))
        return self._call_function(tx, fn, args, kwargs)

    def _mark_batched(self, batched, result):
        """The result of an op inside a vmapped function, its node noted as
        mapped when VmapScope.check said so."""
        if batched and isinstance(result, TensorVariable):
            self.vmap_scope.batched.add(result.node)
        return result

    def _unsqueezer(self, tx):
        """VmapScope.check's way to add a dim to a mapped tensor."""
        return lambda var, dim: self._mark_batched(
            True, self._call_method(tx, "unsqueeze", [var, ConstantVariable(dim)], {}))

    def _call_function(self, tx, fn, args, kwargs):
        self.check_not_in_try(tx)
        ex_args, n_args, ex_kw, n_kw = self._prepare(args, kwargs)
        name = getattr(fn, "__name__", str(fn))
        versions = _versions(args, kwargs)
        layouts = _layouts(args, kwargs) if name.endswith("_") else None

        def run():
            _check_same_dtypes(name, ex_args, ex_kw, self._autocast_on())
            return fn(*ex_args, **ex_kw)
        example = self._run_fake(name, run)
        self.note_input_writes(args, kwargs, versions, layouts)
        self._probe(name, lambda a, k: fn(*a, **k), ex_args, ex_kw, _versions(args, kwargs) != versions)
        same = None if name.endswith("_") else _returned_input(args, kwargs, example, versions)
        if same is not None:
            return same
        if isinstance(example, types.FunctionType) and not _has_node((n_args, n_kw)):
            # a torch helper that makes a function from constants
            # (nn.modules.utils._ntuple(3)): the function itself, called
            # like its maker when it is graphable too
            from .torch import TorchFunctionVariable, is_graphable_torch_callable
            if is_graphable_torch_callable(example):
                return TorchFunctionVariable(example)
        return self._wrap_result("call_function", fn, n_args, n_kw, example,
                                 effect=fn is operator.setitem or name.endswith("_"))

    def call_method(self, tx, name, args, kwargs):
        if self.vmap_scope is not None:
            batched, args, kwargs = self.vmap_scope.check(name, args, kwargs, self._unsqueezer(tx))
            return self._mark_batched(batched, self._call_method(tx, name, args, kwargs))
        return self._call_method(tx, name, args, kwargs)

    def _call_method(self, tx, name, args, kwargs):
        self.check_not_in_try(tx)
        if name in ("add", "add_", "sub", "sub_") and "alpha" in kwargs and len(args) == 2:
            args, kwargs = self._tensor_alpha(tx, args, kwargs)
        ex_args, n_args, ex_kw, n_kw = self._prepare(args, kwargs)

        def run():
            _check_inplace_cast(name, ex_args, ex_kw)
            _check_same_dtypes(name, ex_args, ex_kw, self._autocast_on())
            return getattr(ex_args[0], name)(*ex_args[1:], **ex_kw)
        versions = _versions(args, kwargs)
        layouts = _layouts(args, kwargs) if name.endswith("_") else None
        example = self._run_fake(f"Tensor.{name}", run)
        self.note_input_writes(args, kwargs, versions, layouts)
        self._probe(f"Tensor.{name}", lambda a, k: getattr(a[0], name)(*a[1:], **k), ex_args, ex_kw,
                    _versions(args, kwargs) != versions)
        # an in-place method may change no data and still act (detach_())
        same = None if name.endswith("_") else _returned_input(args, kwargs, example, versions)
        if same is not None:
            return same
        return self._wrap_result("call_method", name, n_args, n_kw, example,
                                 effect=name.endswith("_") or name == "__setitem__")

    def _tensor_alpha(self, tx, args, kwargs):
        """`x.add_(y, alpha=a)` with a 0-d tensor `a` (an optimizer's lr
        read as a graph input) as `x.add_(y * a)`: a Scalar argument made
        from a tensor would need its data.  Other calls are returned as
        they are."""
        from .tensor import TensorVariable
        alpha = kwargs["alpha"]
        if not isinstance(alpha, TensorVariable) or alpha.example.dim() != 0 or \
                not isinstance(args[1], TensorVariable):
            return args, kwargs
        kwargs = {k: v for k, v in kwargs.items() if k != "alpha"}
        return [args[0], self.call_function(tx, operator.mul, [args[1], alpha], {})], kwargs

    def capture_item(self, tx, tensor):
        """`tensor.item()` as a node (config.capture_scalar_outputs): its
        value is a graph output, read by the rewritten code. An integer
        tensor's number is an unbacked SymInt (a SymNodeVariable), the
        others a ScalarOutputVariable."""
        from .tensor import ScalarOutputVariable
        self.check_not_in_try(tx)
        node = self.graph.create_node("call_method", "item", (tensor.node,), {})
        self._tag(node)
        node.meta["scalar_output"] = True         # a Python number (export reads this)
        from .tensor import _item_type
        kind = _item_type(tensor.example.dtype)
        if kind is int:
            # an unbacked symbolic int of the shape env, as torch.compile
            # makes it: a size of torch.zeros(n), a slice bound, arithmetic;
            # a branch on it or a Python use of its number still breaks
            from .symbolic import SymNodeVariable
            example = self.shape_env.create_unbacked_symint()
            node.meta["example_value"] = example
            return SymNodeVariable(node, example)
        node.meta["example_value"] = None        # known only when the graph runs
        return ScalarOutputVariable(node, kind)

    def scalar_op(self, tx, fn, a, b):
        """`a fn b` where an operand is a captured Tensor.item() number
        (ScalarOutputVariable): a node. Only arithmetic and comparisons,
        whose result (a number of a kind known from the operands' kinds, or
        a tensor shaped like the tensor operand) does not depend on the
        number's value; the example values use a stand-in of the right kind."""
        from .tensor import ScalarOutputVariable
        fn = _INPLACE_NUMBER_OPS.get(fn, fn)     # numbers have no in-place forms
        if fn not in _SCALAR_OPS:
            raise Unsupported(f"{getattr(fn, '__name__', fn)} on a captured Tensor.item() value")
        nodes, examples = [], []
        for v in (a, b):
            if isinstance(v, ScalarOutputVariable):
                nodes.append(v.node)
                examples.append(v.cls(1))
            elif isinstance(v, TensorVariable):
                nodes.append(v.node)
                examples.append(v.example)
            elif isinstance(v, ConstantVariable) and type(v.value) in (int, float, bool, complex):
                nodes.append(v.value)
                examples.append(v.value)
            else:
                raise Unsupported(f"{getattr(fn, '__name__', fn)} of a captured Tensor.item() "
                                  f"value and {v}")
        self.check_not_in_try(tx)
        if isinstance(a, TensorVariable) or isinstance(b, TensorVariable):
            example = self._run_fake(fn.__name__, lambda: fn(*examples))
            return self._wrap_result("call_function", fn, tuple(nodes), {}, example)
        try:
            kind = type(fn(*examples))
        except Exception as e:  # noqa: BLE001 - e.g. a constant zero divisor: let it run eagerly
            raise Unsupported(f"{fn.__name__} on a captured Tensor.item() value "
                              f"({type(e).__name__})") from e
        if _may_divide_by_zero(fn, (a, b)):
            self.may_raise_at_run_time(f"{fn.__name__} by a captured Tensor.item() value")
        node = self.graph.call_function(fn, tuple(nodes))
        self._tag(node)
        node.meta["example_value"] = None
        node.meta["scalar_output"] = True
        return ScalarOutputVariable(node, kind)

    def call_module(self, tx, module, source, args, kwargs):
        if self.vmap_scope is not None:
            self.vmap_scope.check_opaque(type(module).__name__, args, kwargs)
        self.check_not_in_try(tx)
        target = self.module_targets.get(id(module))
        if target is None:
            target = self.module_targets[id(module)] = self._target(_mangle(source), module)
        ex_args, n_args, ex_kw, n_kw = self._prepare(args, kwargs)
        fake_module = self._fake_module(module)
        versions = _versions(args, kwargs)
        example = self._run_fake(type(module).__name__, lambda: fake_module(*ex_args, **ex_kw))
        self.note_input_writes(args, kwargs, versions)      # ReLU(inplace=True) on an input
        if module.training and next(module.buffers(), None) is not None:
            self.input_written("a module in training mode may update its buffers")   # BatchNorm
        same = _returned_input(args, kwargs, example, versions)
        if same is not None:
            return same
        return self._wrap_result("call_module", target, n_args, n_kw, example,
                                 called=(module_path(source), type(module).__name__))

    def sym_op(self, tx, fn, args):
        """`fn(*args)` where an argument is a SymNodeVariable and the others
        SymNodeVariables or numbers: a node whose example is computed on the
        examples (a constant result, `s0 * 0`, is a constant). None when an
        argument is something else (the caller specializes)."""
        from .symbolic import SymNodeVariable, is_symbolic, specialize
        fn = _INPLACE_NUMBER_OPS.get(fn, fn)
        nodes, examples = [], []
        for v in args:
            if isinstance(v, SymNodeVariable):
                nodes.append(v.node)
                examples.append(v.example)
            elif isinstance(v, ConstantVariable) and type(v.value) in (int, float, bool):
                nodes.append(v.value)
                examples.append(v.value)
            else:
                return None
        try:
            example = fn(*examples)
        except Exception as e:  # noqa: BLE001 - e.g. a zero divisor: let it run eagerly
            raise Unsupported(f"{getattr(fn, '__name__', fn)} on sizes "
                              f"({type(e).__name__}: {e})") from e
        if not is_symbolic(example):
            return ConstantVariable(specialize(example) if isinstance(
                example, (torch.SymInt, torch.SymFloat, torch.SymBool)) else example)
        if _may_divide_by_zero(fn, args):
            self.may_raise_at_run_time(f"{fn.__name__} by a symbolic size")
        node = self.graph.call_function(fn, tuple(nodes))
        self._tag(node)
        node.meta["example_value"] = example
        return SymNodeVariable(node, example)

    def _wrap_sizes(self, op, target, n_args, n_kw, example, called):
        """A symbolic size (or a torch.Size / tuple holding some) returned
        by an op: a node, and SymNodeVariables for its symbolic items. None
        when `example` holds no symbolic size."""
        from .symbolic import SymNodeVariable, is_symbolic
        items = example if type(example) in (torch.Size, tuple) else (example,)
        if not any(is_symbolic(e) for e in items):
            return None
        # a size computed from data (nonzero's length: an unbacked symbol)
        # is a SymNodeVariable too, as torch.compile keeps it: arithmetic,
        # min/max and op arguments stay nodes; a branch on it ends the graph
        # (frame.tensor_jump) and a use needing its number breaks (specialize)
        node = self.graph.create_node(op, target, n_args, n_kw)
        self._tag(node, called)
        node.meta["example_value"] = example
        if items is not example:
            return SymNodeVariable(node, example)
        out = []
        for i, e in enumerate(example):
            if not is_symbolic(e):
                out.append(ConstantVariable(int(e) if isinstance(e, torch.SymInt) else e))
                continue
            item = self.graph.call_function(operator.getitem, (node, i))
            self._tag(item)
            item.meta["example_value"] = e
            out.append(SymNodeVariable(item, e))
        return (SizeVariable if type(example) is torch.Size else TupleVariable)(out)

    def _wrap_result(self, op, target, n_args, n_kw, example, effect=False, called=None):
        from .containers import NamedTupleVariable
        from .base import is_constant_value
        if not isinstance(example, torch.Tensor) and not effect:
            sizes = self._wrap_sizes(op, target, n_args, n_kw, example, called)
            if sizes is not None:
                return sizes
        if isinstance(example, torch.Tensor):
            node = self.graph.create_node(op, target, n_args, n_kw)
            self._tag(node, called)
            node.meta["example_value"] = example
            return TensorVariable(node, example)
        if isinstance(example, (tuple, list)) and any(isinstance(e, torch.Tensor) for e in example):
            node = self.graph.create_node(op, target, n_args, n_kw)
            self._tag(node, called)
            node.meta["example_value"] = example
            items = self._result_items(target, node, example)
            fields = getattr(type(example), "_fields", None) or _structseq_fields(example)
            # split/unbind/chunk/...: how many tensors come out depends on
            # the input sizes; the fake run guarded it (static sizes are
            # checked by TENSOR_MATCH, symbolic ones by the ShapeEnv's guards)
            if isinstance(example, list):
                return ListVariable(items)
            return TupleVariable(items) if not fields else NamedTupleVariable(items, fields)
        if effect or example is None and op == "call_method":
            self._tag(self.graph.create_node(op, target, n_args, n_kw), called)
            return ConstantVariable(example) if is_constant_value(example) else ConstantVariable(None)
        if is_constant_value(example):
            return ConstantVariable(example)
        raise Unsupported(f"{getattr(target, '__name__', target)} returned {type(example).__name__}")

    def _result_items(self, target, node, example):
        """VTs of the items of a tuple or list result at `node`: tensors as
        getitem nodes, constants as they are, a nested tuple or list of
        those (an LSTM's `(output, (h, c))`) item by item in turn."""
        from .base import is_constant_value
        items = []
        for i, e in enumerate(example):
            if is_constant_value(e):
                items.append(ConstantVariable(e))
                continue
            if not isinstance(e, torch.Tensor) and type(e) not in (tuple, list):
                raise Unsupported(f"{getattr(target, '__name__', target)} returned a "
                                  f"{type(e).__name__} item")
            item = self.graph.call_function(operator.getitem, (node, i))
            self._tag(item)
            item.meta["example_value"] = e
            if isinstance(e, torch.Tensor):
                items.append(TensorVariable(item, e))
            else:
                inner = self._result_items(target, item, e)
                items.append(TupleVariable(inner) if type(e) is tuple else ListVariable(inner))
        return items

    def real_value(self, var):
        """The real value of traced value `var` for this frame's inputs: a
        graph tensor is computed by running the graph so far on the real
        inputs (hook off, grad mode restored); containers item by item."""
        if isinstance(var, TensorVariable):
            if var.node.op == "placeholder":
                return var.node.meta["real"]
            if var.node.op == "get_attr":
                return self.root[var.node.target]
            graph = torch.fx.Graph()
            env = {}
            for node in self.graph.nodes:
                env[node] = graph.node_copy(node, lambda n: env[n])
                if node is var.node:
                    break
            graph.output(env[var.node])
            gm = torch.fx.GraphModule(self.root, graph)
            reals = [n.meta["real"] for n in self.graph.nodes if n.op == "placeholder"]
            live = {n.name for n in graph.nodes if n.op == "placeholder"}
            reals = [r for n, r in zip([n for n in self.graph.nodes if n.op == "placeholder"],
                                       reals) if n.name in live]
            with hook_off(), torch.set_grad_enabled(torch.is_grad_enabled()):
                torch._C._set_grad_enabled(self.initial_grad)
                return gm(*reals)
        if isinstance(var, (TupleVariable, ListVariable)):
            t = var.python_type()
            return (list if t is list else tuple)(self.real_value(v) for v in var.items)
        if isinstance(var, DictVariable):
            return {k: self.real_value(v) for k, v in var.items.items()}
        if var.is_python_constant():
            return var.as_python_constant()
        value = getattr(var, "value", None)
        if value is not None:
            return value
        module = getattr(var, "module", None)
        if module is not None:
            return module
        raise Unsupported(f"no real value for {var}")

    def input_free_value(self, var):
        """The value of graph tensor `var` when the graph computes it from
        constants alone (no input, parameter, module, random draw, and no
        autocast block open): the same on every run, so it is computed now
        from the nodes it depends on. None otherwise, and when an op wrote
        into the storage of one of those nodes (its fake run moved a
        version counter there: note_input_writes): replaying only the nodes
        `var` depends on would miss the write."""
        if self.autocast_stack:
            return None
        needed, stack = set(), [var.node]
        while stack:
            node = stack.pop()
            if node in needed:
                continue
            name = node.target if node.op == "call_method" else getattr(node.target, "__name__", "")
            if node.op not in ("call_function", "call_method") or draws_random(str(name)) or \
                    str(name).startswith(("empty", "new_empty")):       # random or unset data
                return None
            needed.add(node)
            stack.extend(node.all_input_nodes)
        examples = [n.meta.get("example_value") for n in needed]
        storages = {_storage_id(e) for e in examples if isinstance(e, torch.Tensor)}
        if self.every_written_storage is None or None in storages or \
                storages & self.every_written_storage:
            return None
        graph, env = torch.fx.Graph(), {}
        for node in self.graph.nodes:
            if node in needed:
                env[node] = graph.node_copy(node, lambda n: env[n])
        graph.output(env[var.node])
        with hook_off(), torch.no_grad():
            return torch.fx.GraphModule(self.root, graph)()

    def fold_constant_call(self, tx, fn, args, kwargs):
        """dynamo.assume_constant_result: call `fn` now on the real values of
        `args` and put its result into the graph as a constant (a tensor
        becomes a get_attr of the GraphModule)."""
        from .base import is_constant_value
        real_args = [self.real_value(a) for a in args]
        real_kw = {k: self.real_value(v) for k, v in kwargs.items()}
        with hook_off():
            result = fn(*real_args, **real_kw)
        if is_constant_value(result):
            return ConstantVariable(result)
        if isinstance(result, torch.Tensor):
            return self.constant_tensor(result, getattr(fn, "__name__", "constant"))

        def item(r):
            if is_constant_value(r):
                return ConstantVariable(r)
            if isinstance(r, torch.Tensor):
                return self.constant_tensor(r, "constant")
            raise Unsupported(f"assume_constant_result: a {type(r).__name__} in the result")
        if type(result) in (list, tuple):
            return (ListVariable if type(result) is list else TupleVariable)([item(r) for r in result])
        if type(result) is dict and all(is_constant_value(k) for k in result):
            return DictVariable({k: item(v) for k, v in result.items()})
        raise Unsupported(f"assume_constant_result: {type(result).__name__} result")

    def constant_tensor(self, tensor, base):
        """A tensor constant of the graph: a get_attr node on a detached copy."""
        value = tensor.detach().clone()
        target = self._target(f"_const_{_identifier(base)}_{len(self.root)}", value)
        node = self.graph.get_attr(target)
        self._tag(node)
        node.meta["example_value"] = example = self._fake(value)
        return TensorVariable(node, example)

    def compile_graph(self, output_vars, branch_on=None):
        """Finish the graph with the tensors among `output_vars` that must
        come out of it (computed tensors, not inputs) and compile it.
        `branch_on`: the tensor a data-dependent branch right after the
        graph tests; when it is an input and the graph would otherwise be
        empty, the graph is the input returned (the backend sees every
        graph that ends at a tensor branch, as under torch.compile; the
        generated code still reads the input from its source).
        Returns (GraphInfo or None, {node: output index}, [input sources])."""
        from .symbolic import SymNodeVariable
        from .tensor import ScalarOutputVariable
        outputs, index = [], {}
        for var in output_vars:
            # a get_attr without a source is a constant of the graph (assume_constant_result)
            if isinstance(var, (ScalarOutputVariable, SymNodeVariable)) and var.node not in index:
                index[var.node] = len(outputs)
                outputs.append(var.node)
            elif isinstance(var, TensorVariable) and var.node not in index and (
                    var.node.op not in ("placeholder", "get_attr")
                    or var.node.op == "get_attr" and var.source is None):
                index[var.node] = len(outputs)
                outputs.append(var.node)
        branch_node = (branch_on.node if isinstance(branch_on, TensorVariable)
                       and branch_on.source is not None else None)
        return self.compile_nodes(outputs, index, branch_node)


_SCALAR_OPS = {operator.add, operator.sub, operator.mul, operator.truediv, operator.floordiv,
               operator.mod, operator.pow, operator.lt, operator.le, operator.gt, operator.ge,
               operator.eq, operator.ne}


def _may_divide_by_zero(fn, args):
    """Whether number op `fn(*args)` (VariableTrackers, one of them a value
    known only when the graph runs) can raise ZeroDivisionError there: a
    division by such a value, or such a value raised to a power that may
    be negative. A constant divisor was checked on the examples."""
    def const(v):
        return isinstance(v, ConstantVariable) and type(v.value) in (int, float, bool)
    if fn in (operator.truediv, operator.floordiv, operator.mod):
        return not const(args[1])
    if fn is operator.pow:
        base, exp = args
        return not ((const(exp) and exp.value >= 0) or (const(base) and base.value != 0))
    return False


_INPLACE_NUMBER_OPS = {operator.iadd: operator.add, operator.isub: operator.sub,
                       operator.imul: operator.mul, operator.itruediv: operator.truediv,
                       operator.ifloordiv: operator.floordiv, operator.imod: operator.mod,
                       operator.ipow: operator.pow}


def _structseq_fields(value):
    """Field names of a torch.return_types structseq, else None."""
    cls = type(value)
    if hasattr(cls, "n_fields") and hasattr(cls, "n_sequence_fields"):
        members = [k for k, v in cls.__dict__.items() if type(v).__name__ == "member_descriptor"]
        return tuple(members[:len(value)]) or None
    return None
