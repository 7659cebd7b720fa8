"""Builtins, operator.* and math.* as traced callables, and the shared
binary/unary operation helpers the opcodes use (comparisons, identity and
`in`: compare.py).

On constants these fold (run at trace time); on tensors they become fx
nodes; on containers they work on the item lists. `setattr` is an attribute
store, `copy.deepcopy` and `copy.copy` a copy of the trackers (copying.py); `print` and
friends are Unsupported: the caller graph-breaks and runs them eagerly.
"""
import builtins
import collections
import copy
import functools
import inspect
import math
import itertools
import operator
import types
import typing

import torch

from ...exc import Unsupported
from ..lookup import getattr_static
from .base import (ClassVariable, ConstantVariable, FunctionObjectVariable, NullVariable,
                   VariableTracker, is_constant_value)
from .containers import (BaseListVariable, DictVariable, GeneratorVariable, LazyIteratorVariable,
                         ListIteratorVariable, ListVariable, TupleVariable)
from .tensor import TensorVariable, static_shape
from .compare import compare_op, contains, identical, is_user_object


class ObservedAttributeError(Unsupported):
    """getattr of a missing attribute: hasattr()/getattr(default) catch it."""
    user_raise = True


def any_tensor(values):
    return any(isinstance(v, TensorVariable) for v in values)


def all_constant(values):
    return all(v.is_python_constant() for v in values)


def seq_items(tx, vt):
    if isinstance(vt, BaseListVariable):
        return list(vt.items)
    return vt.unpack(tx)


def _concat_kind(vt):
    """list or tuple for a traced sequence that `+` concatenates, else None."""
    if isinstance(vt, TupleVariable):
        return tuple
    if isinstance(vt, ListVariable):
        return list
    if isinstance(vt, ConstantVariable) and isinstance(vt.value, (tuple, list)):
        return tuple if isinstance(vt.value, tuple) else list


_DUNDERS = {operator.add: "add", operator.sub: "sub", operator.mul: "mul",
            operator.truediv: "truediv", operator.floordiv: "floordiv", operator.mod: "mod",
            operator.pow: "pow", operator.matmul: "matmul", operator.and_: "and",
            operator.or_: "or", operator.xor: "xor", operator.lshift: "lshift",
            operator.rshift: "rshift"}


def _user_dunder(tx, fn, a, b):
    """a <fn> b where an operand is an instance of a user class (made by
    the traced code or passed in, its type guarded): its __op__ / __rop__
    (or __iop__) inlined, Python's dispatch order."""
    base = _INPLACE_TO_BINARY.get(fn, fn)
    name = _DUNDERS.get(base)
    if name is None:
        return None
    tries = []
    if fn in _INPLACE_TO_BINARY and is_user_object(a):
        tries.append((a, f"__i{name}__", b))
    if is_user_object(a):
        tries.append((a, f"__{name}__", b))
    if is_user_object(b):
        tries.append((b, f"__r{name}__", a))
    for obj, method, other in tries:
        if hasattr(obj.python_type(), method):
            result = obj.call_method(tx, method, [other], {})
            if not (result.is_python_constant() and result.as_python_constant() is NotImplemented):
                return result
    return None


def sym_operands(tx, fn, args):
    """Operator `fn` on operands of which one is a symbolic size
    (SymNodeVariable) and none a tensor: (result, None) when it is a node
    or constant (OutputGraph.sym_op), else (None, the operands with the
    sizes specialized)."""
    from .symbolic import SymNodeVariable
    if not any(isinstance(v, SymNodeVariable) for v in args) or \
            any(isinstance(v, TensorVariable) for v in args):
        return None, args
    out = tx.output.sym_op(tx, fn, args)
    if out is not None:
        return out, None
    return None, [ConstantVariable(v.as_python_constant()) if isinstance(v, SymNodeVariable) else v
                  for v in args]


def binary_op(tx, fn, a, b):
    """a <fn> b for traced values (fn from the operator module)."""
    from .tensor import ScalarOutputVariable
    out, specialized = sym_operands(tx, fn, [a, b])
    if out is not None:
        return out
    a, b = specialized
    if isinstance(a, ScalarOutputVariable) or isinstance(b, ScalarOutputVariable):
        return tx.output.scalar_op(tx, fn, a, b)
    if isinstance(b, TensorVariable) and not isinstance(a, TensorVariable) and fn in _INPLACE_TO_BINARY:
        # `n += t` for a Python number n: numbers have no in-place methods,
        # so Python computes n + t (t.__radd__) and rebinds n
        fn = _INPLACE_TO_BINARY[fn]
    if is_user_object(a) or is_user_object(b):
        result = _user_dunder(tx, fn, a, b)
        if result is not None:
            return result
    if isinstance(a, TensorVariable) or isinstance(b, TensorVariable):
        return tx.output.call_function(tx, fn, [a, b], {})
    if fn in (operator.iadd,) and isinstance(a, ListVariable):
        a.check_mutable(tx)
        a.items.extend(b.unpack(tx))
        return a
    if fn in (operator.add, operator.iadd):
        ka, kb = _concat_kind(a), _concat_kind(b)
        if ka is not None and kb is not None and ka is not kb:
            # list + tuple, tuple + list: a TypeError in Python; let it run
            raise Unsupported(f"can only concatenate {ka.__name__} (not {kb.__name__!r}) to {ka.__name__}")
    if fn in (operator.add, operator.iadd) and isinstance(a, BaseListVariable) and \
            isinstance(b, (BaseListVariable, ConstantVariable)) and not (
                a.is_python_constant() and b.is_python_constant() and isinstance(a, TupleVariable)):
        if isinstance(b, ConstantVariable) and not isinstance(b.value, (tuple, list)):
            raise Unsupported(f"{a} + {b}")
        return type(a)(list(a.items) + seq_items(tx, b))
    if fn in (operator.add, operator.iadd) and isinstance(b, BaseListVariable) and \
            isinstance(a, ConstantVariable) and isinstance(a.value, tuple) and not b.is_python_constant():
        return TupleVariable(seq_items(tx, a) + list(b.items))
    if fn in (operator.mul, operator.imul) and isinstance(a, BaseListVariable) and b.is_python_constant():
        return type(a)(list(a.items) * b.as_python_constant())
    if fn in (operator.or_, operator.ior) and isinstance(a, DictVariable) and isinstance(b, DictVariable):
        return DictVariable({**a.items, **b.items})
    if a.is_python_constant() and b.is_python_constant():
        return ConstantVariable(fn(a.as_python_constant(), b.as_python_constant()))
    raise Unsupported(f"binary operation {fn.__name__} on {a} and {b}")


_INPLACE_TO_BINARY = {
    operator.iadd: operator.add, operator.isub: operator.sub, operator.imul: operator.mul,
    operator.itruediv: operator.truediv, operator.ifloordiv: operator.floordiv,
    operator.imod: operator.mod, operator.ipow: operator.pow, operator.imatmul: operator.matmul,
    operator.iand: operator.and_, operator.ior: operator.or_, operator.ixor: operator.xor,
    operator.ilshift: operator.lshift, operator.irshift: operator.rshift,
}


def unary_op(tx, fn, a):
    out, specialized = sym_operands(tx, fn, [a])
    if out is not None:
        return out
    a, = specialized
    if isinstance(a, TensorVariable):
        return tx.output.call_function(tx, fn, [a], {})
    if a.is_python_constant():
        return ConstantVariable(fn(a.as_python_constant()))
    raise Unsupported(f"unary operation {fn.__name__} on {a}")



# ---------------------------------------------------------------- builtins

# fold when every argument is a constant
_PURE = {abs, min, max, len, int, float, bool, str, round, divmod, pow, repr, format,
         sorted, any, all, sum, hash, chr, ord, complex, isinstance, issubclass}


class BuiltinVariable(FunctionObjectVariable):
    """A builtin function or type, or a function of operator/math."""

    def reconstruct(self, cg):
        cg.load_const(self.fn)      # builtins are constants: no source needed

    def var_getattr(self, tx, name):
        if self.fn is dict and name == "fromkeys":
            from .containers import DictFromKeysVariable
            return DictFromKeysVariable(dict)
        if name in ("__name__", "__qualname__", "__module__"):
            return ConstantVariable(getattr(self.fn, name))     # fixed for a builtin
        return super().var_getattr(tx, name)

    def call(self, tx, args, kwargs):
        fn = self.fn
        if fn not in _SIZE_AWARE and getattr(fn, "__module__", None) not in ("_operator", "operator"):
            # a symbolic size passed to a builtin: its value, guarded
            args = [_specialized(a) for a in args]
            kwargs = {k: _specialized(v) for k, v in kwargs.items()}
        handler = _HANDLERS.get(fn)
        if handler is not None:
            out = handler(tx, *args, **kwargs)
            if out is not None:
                return out
        module = getattr(fn, "__module__", None)
        if module in ("_operator", "operator"):
            return call_operator(tx, fn, args, kwargs)
        if (fn in _PURE or module == "math") and all_constant(args) and all_constant(kwargs.values()):
            return ConstantVariable(fn(*[a.as_python_constant() for a in args],
                                       **{k: v.as_python_constant() for k, v in kwargs.items()}))
        raise Unsupported(f"call to builtin {getattr(fn, '__qualname__', fn)}")

    def __repr__(self):
        return f"BuiltinVariable({getattr(self.fn, '__name__', self.fn)})"


def call_operator(tx, fn, args, kwargs):
    if kwargs:
        raise Unsupported(f"operator.{fn.__name__} with keywords")
    if fn is operator.getitem:
        return getitem(tx, args[0], args[1])
    if fn is operator.setitem:
        return args[0].call_method(tx, "__setitem__", list(args[1:]), {})
    if fn is operator.contains:
        return ConstantVariable(contains(tx, args[1], args[0]))
    if fn in (operator.is_, operator.is_not):
        same = identical(args[0], args[1], tx)
        if same is None:
            raise Unsupported("identity test of untracked values")
        return ConstantVariable(same if fn is operator.is_ else not same)
    if fn is operator.not_:
        return ConstantVariable(not args[0].truth(tx))
    if fn is operator.truth:
        return ConstantVariable(args[0].truth(tx))
    if len(args) == 2:
        return binary_op(tx, fn, args[0], args[1])
    if len(args) == 1:
        return unary_op(tx, fn, args[0])
    raise Unsupported(f"operator.{fn.__name__}")


def _typing_value(var):
    """The real value of `var` when it is a type expression operand (a
    constant, a class, a typing construct, a tuple of those), else raises
    Unsupported."""
    from .base import ClassVariable, OpaqueVariable
    if isinstance(var, ConstantVariable):
        return var.value
    if isinstance(var, ClassVariable):
        return var.value
    if isinstance(var, BuiltinVariable) and isinstance(var.fn, type):
        return var.fn
    from .torch import TorchFunctionVariable
    if isinstance(var, TorchFunctionVariable) and isinstance(var.fn, type):    # list[torch.Tensor]
        return var.fn
    if isinstance(var, OpaqueVariable) and _is_typing_object(var.value):
        return var.value
    if isinstance(var, TupleVariable):
        return tuple(_typing_value(v) for v in var.items)
    from .misc import TypingAliasVariable
    if isinstance(var, TypingAliasVariable):
        return var.value
    raise Unsupported(f"type expression operand {var}")


def _typing_query(query):
    """typing.get_origin / get_args of a type expression the trace knows:
    pure, folded (a validator reading a field's annotation)."""
    def handler(tx, tp):
        return tx.wrap(query(_typing_value(tp)), None)
    return handler


def _is_typing_object(value):
    import types
    return isinstance(value, types.GenericAlias) or type(value).__module__ == "typing"


def getitem(tx, obj, key):
    from .base import ClassVariable, OpaqueVariable
    if (isinstance(obj, OpaqueVariable) and _is_typing_object(obj.value)) or (
            isinstance(obj, ClassVariable) and obj.value in (list, dict, tuple, set, type)) or (
            isinstance(obj, BuiltinVariable) and obj.fn in (list, dict, tuple, set, type)):
        # List[Variable], list[int], Optional["T"]: a type expression (an
        # annotation), pure; evaluated now, kept as an opaque value
        return OpaqueVariable(_typing_value(obj)[_typing_value(key)])
    if isinstance(obj, TensorVariable):
        return tx.output.call_function(tx, operator.getitem, [obj, key], {})
    if isinstance(key, TensorVariable) and not getattr(obj, "tensor_keys", False):
        raise Unsupported("indexing a container with a tensor")
    return obj.call_method(tx, "__getitem__", [key], {}) if not isinstance(obj, ConstantVariable) \
        else ConstantVariable(obj.value[key.as_python_constant()]) \
        if is_constant_value(obj.value[key.as_python_constant()]) \
        else _unsupported(f"item of constant {type(obj.value).__name__}")


def _unsupported(msg):
    raise Unsupported(msg)


def _specialized(v):
    from .symbolic import SymNodeVariable
    return ConstantVariable(v.as_python_constant()) if isinstance(v, SymNodeVariable) else v


def _len(tx, obj):
    if isinstance(obj, TensorVariable):
        return obj.call_method(tx, "__len__", [], {})
    if isinstance(obj, (BaseListVariable, DictVariable)):
        return ConstantVariable(len(obj.items))
    if obj.is_python_constant():
        return ConstantVariable(len(obj.as_python_constant()))
    from .misc import NewObjectVariable, UserDefinedObjectVariable
    if isinstance(obj, (UserDefinedObjectVariable, NewObjectVariable)):
        import inspect
        import types
        if isinstance(getattr_static(obj.python_type(), "__len__", None), types.FunctionType):
            return obj.call_method(tx, "__len__", [], {})   # a user __len__: inlined
    return ConstantVariable(len(obj.unpack(tx)))


def _isinstance(tx, obj, cls):
    classinfo = cls.as_python_constant()
    try:
        t = obj.python_type()
    except Unsupported:
        raise Unsupported(f"isinstance of {obj}")
    if isinstance(obj, TensorVariable) and isinstance(classinfo, type) and \
            classinfo in torch._tensor_classes:
        # legacy types (torch.FloatTensor, ...): decided by dtype/device/layout
        return ConstantVariable(isinstance(obj.example, classinfo))
    if isinstance(obj, TensorVariable) and t is torch.Tensor and isinstance(classinfo, type) \
            and issubclass(classinfo, torch.Tensor) and classinfo is not torch.Tensor:
        return ConstantVariable(False)
    if isinstance(obj, ConstantVariable):
        return ConstantVariable(isinstance(obj.value, classinfo))
    if not isinstance(obj, TensorVariable) and _own_instancecheck(classinfo):
        # decided per object by the metaclass (torch.BoolStorage: the storage's
        # dtype), not by the type issubclass sees
        raise Unsupported(f"isinstance with {classinfo!r}, whose metaclass decides it per object")
    return ConstantVariable(issubclass(t, classinfo))


def _own_instancecheck(classinfo):
    """Does isinstance(x, classinfo) run a metaclass __instancecheck__ that
    may disagree with issubclass(type(x), classinfo)? (type's, ABCMeta's and
    a union's agree with it.)"""
    import abc
    import types as pytypes
    agreeing = (type.__instancecheck__, abc.ABCMeta.__instancecheck__,
                pytypes.UnionType.__instancecheck__)
    if isinstance(classinfo, tuple):
        return any(_own_instancecheck(c) for c in classinfo)
    check = getattr(type(classinfo), "__instancecheck__", None)
    return check is not None and check not in agreeing


def _getattr(tx, obj, name, *default):
    name = name.as_python_constant()
    try:
        return obj.var_getattr(tx, name)
    except ObservedAttributeError:
        if default:
            return default[0]
        raise


def _hasattr(tx, obj, name):
    try:
        obj.var_getattr(tx, name.as_python_constant())
        return ConstantVariable(True)
    except ObservedAttributeError:
        return ConstantVariable(False)


def _object_getattribute(tx, obj, name):
    """object.__getattribute__(obj, name): the generic lookup, without the
    class's own __getattribute__ or __getattr__ (what a user
    __getattribute__ falls back to)."""
    from .misc import NewObjectVariable, UserDefinedObjectVariable
    if not name.is_python_constant() or type(name.as_python_constant()) is not str:
        raise Unsupported("object.__getattribute__ with a non-constant name")
    if isinstance(obj, UserDefinedObjectVariable):
        return obj.generic_getattr(tx, name.as_python_constant(), with_getattr=False)
    if isinstance(obj, NewObjectVariable):
        return obj.generic_getattr(tx, name.as_python_constant())
    raise Unsupported(f"object.__getattribute__ on {obj}")


def _object_setattr(tx, obj, name, value):
    """object.__setattr__(obj, name, value) of an object the trace made: the
    plain store, without the class's own __setattr__ (a strict dataclass's
    validator calls it once the value passed)."""
    from .misc import NewObjectVariable
    if not isinstance(obj, NewObjectVariable) or obj.is_module:
        raise Unsupported(f"object.__setattr__ on {obj}")
    if not name.is_python_constant() or type(name.as_python_constant()) is not str:
        raise Unsupported("object.__setattr__ with a non-constant name")
    obj.plain_store(tx, name.as_python_constant(), value)
    return ConstantVariable(None)


def _dataclass_fields(tx, obj):
    """dataclasses.fields(obj) of a dataclass instance or class the trace
    knows the type of (guarded where it came from): its Field objects,
    fixed when the class was made, as read-only objects."""
    import dataclasses
    from .base import ClassVariable
    from .misc import UserDefinedObjectVariable
    cls = obj.value if isinstance(obj, ClassVariable) else obj.python_type()
    if not (isinstance(cls, type) and dataclasses.is_dataclass(cls)):
        raise Unsupported(f"dataclasses.fields of {obj}")
    return TupleVariable([UserDefinedObjectVariable(f) for f in dataclasses.fields(cls)])


def _range(tx, *args):
    return ConstantVariable(range(*[a.as_python_constant() for a in args]))


def _lazy_inner(tx, iterable):
    """iter(iterable) when enumerate/zip can consume it lazily, else None."""
    if isinstance(iterable, GeneratorVariable):
        return None
    it = iterable if isinstance(iterable, ListIteratorVariable) else ListIteratorVariable.over(tx, iterable)
    return it if type(it) in (ListIteratorVariable, LazyIteratorVariable) else None


def _enumerate(tx, iterable, start=None):
    first = start.as_python_constant() if start is not None else 0
    inner = _lazy_inner(tx, iterable)
    if inner is not None and type(first) is int:
        return LazyIteratorVariable("enumerate", [inner], first)
    return ListIteratorVariable([TupleVariable([ConstantVariable(i), v])
                                 for i, v in enumerate(iterable.unpack(tx), first)])


def _zip(tx, *iterables, **kwargs):
    if not kwargs and iterables and not any(isinstance(i, GeneratorVariable) for i in iterables):
        inners = [_lazy_inner(tx, i) for i in iterables]
        if all(i is not None for i in inners):
            return LazyIteratorVariable("zip", inners)
    lists = [it.unpack(tx) for it in iterables]
    return ListIteratorVariable([TupleVariable(list(group)) for group in zip(*lists)])


def _map(tx, fn, *iterables):
    lists = [it.unpack(tx) for it in iterables]
    return ListIteratorVariable([fn.call(tx, list(group), {}) for group in zip(*lists)])


def _tuple(tx, iterable=None):
    if iterable is None:
        return TupleVariable([])
    if isinstance(iterable, TupleVariable) and iterable.python_type() is tuple:
        return iterable
    return TupleVariable(iterable.unpack(tx))   # tuple(x.shape): a tuple, not a torch.Size


def _list(tx, iterable=None):
    return ListVariable([] if iterable is None else iterable.unpack(tx))


def _to_set(kind):
    def handler(tx, iterable=None):
        """set(...) / frozenset(...) of constants (a config's list of layer
        names): a constant, like `{...}` displays (BUILD_SET); the result is
        rebuilt as a new set wherever it leaves the trace."""
        if iterable is None:
            return ConstantVariable(kind())
        items = seq_items(tx, iterable)
        if not all_constant(items):
            raise Unsupported(f"{kind.__name__}() of values that are not constants")
        try:
            return ConstantVariable(kind(i.as_python_constant() for i in items))
        except TypeError as e:          # an unhashable item: raised where it runs eagerly
            raise Unsupported(f"{kind.__name__}(): {e}") from None
    return handler


def _dict(tx, arg=None, **kwargs):
    return DictVariable(dict_items(tx, arg, kwargs))


def dict_items(tx, arg, kwargs):
    """The items of dict(arg, **kwargs), as a dict of VTs."""
    items = {}
    if isinstance(arg, DictVariable):
        items.update(arg.items)
    elif arg is not None:
        for pair in arg.unpack(tx):
            k, v = pair.unpack(tx)
            items[k.as_python_constant()] = v
    items.update(kwargs)
    return items


def _sum(tx, iterable, start=None):
    items = iterable.unpack(tx)
    acc = start if start is not None else ConstantVariable(0)
    if all_constant(items) and acc.is_python_constant():
        return ConstantVariable(sum((i.as_python_constant() for i in items), acc.as_python_constant()))
    for item in items:
        acc = binary_op(tx, operator.add, acc, item)
    return acc


def _prod(tx, iterable, start=None):
    """math.prod: a product of constants folds; of traced numbers (sizes)
    it is their products one by one, as _sum adds."""
    items = iterable.unpack(tx)
    acc = start if start is not None else ConstantVariable(1)
    if all_constant(items) and acc.is_python_constant():
        return ConstantVariable(math.prod((i.as_python_constant() for i in items),
                                          start=acc.as_python_constant()))
    for item in items:
        acc = binary_op(tx, operator.mul, acc, item)
    return acc


def _minmax(fn):
    def handler(tx, *args, **kwargs):
        if kwargs:              # key=, default=: folded on constants (sizes specialized)
            args = [_specialized(a) for a in args]
            kwargs = {k: _specialized(v) for k, v in kwargs.items()}
            if all_constant(args) and all_constant(kwargs.values()):
                return ConstantVariable(fn(*[a.as_python_constant() for a in args],
                                           **{k: v.as_python_constant() for k, v in kwargs.items()}))
            return None
        items = args[0].unpack(tx) if len(args) == 1 else list(args)
        if all_constant(items):
            return ConstantVariable(fn(i.as_python_constant() for i in items))
        sizes = _minmax_sizes(tx, fn, items)
        if sizes is not None:
            return sizes
        items = [_specialized(i) for i in items]
        if all_constant(items):
            return ConstantVariable(fn(i.as_python_constant() for i in items))
        if len(args) >= 2 and all(isinstance(i, TensorVariable) or i.is_python_constant()
                                  for i in items):
            return _minmax_tensors(tx, fn, items)
        raise Unsupported(f"{fn.__name__}() of tensors needs their data")
    return handler


def _minmax_sizes(tx, fn, items):
    """max(a, b, ...)/min(...) of numbers some of which are symbolic sizes
    (SymNodeVariables): torch.sym_max/sym_min nodes, as torch.compile
    makes them, so the size stays symbolic (a size computed from data has
    no value to specialize on). None when an item is anything else."""
    from .symbolic import SymNodeVariable
    if not any(isinstance(i, SymNodeVariable) for i in items) or not all(
            isinstance(i, (SymNodeVariable, ConstantVariable)) for i in items):
        return None
    kinds = {i.python_type() for i in items}
    if len(kinds) != 1 or kinds - {int, float}:
        return None             # mixed int/float: the builtin returns an item as it is
    sym_fn = torch.sym_max if fn is max else torch.sym_min
    acc = items[0]
    for other in items[1:]:
        if acc.is_python_constant() and other.is_python_constant():
            acc = ConstantVariable(fn(acc.as_python_constant(), other.as_python_constant()))
            continue
        acc = tx.output.sym_op(tx, sym_fn, [acc, other])
    return acc


def _minmax_tensors(tx, fn, items):
    """max(a, b, ...)/min(...) with a tensor among the arguments: an
    elementwise maximum/minimum (a number bounds the tensor by clamp). Equal
    to the builtin for one-element tensors, the only ones whose bool() the
    builtin can take; no data is read."""
    tensor_op = torch.maximum if fn is max else torch.minimum
    acc = items[0]
    for other in items[1:]:
        if isinstance(acc, TensorVariable) and isinstance(other, TensorVariable):
            acc = tx.output.call_function(tx, tensor_op, [acc, other], {})
        elif isinstance(acc, TensorVariable) or isinstance(other, TensorVariable):
            t, c = (acc, other) if isinstance(acc, TensorVariable) else (other, acc)
            bound = "min" if fn is max else "max"
            acc = tx.output.call_function(tx, torch.clamp, [t], {bound: c})
        else:
            acc = ConstantVariable(fn(acc.as_python_constant(), other.as_python_constant()))
    return acc


def _chain(tx, *iterables):
    """itertools.chain over traced sequences: an iterator over their items."""
    from .containers import ListIteratorVariable
    items = []
    for it in iterables:
        items.extend(seq_items(tx, it) if not isinstance(it, ListIteratorVariable)
                     else _drain(it))
    return ListIteratorVariable(items)


def _drain(it):
    out = []
    while (item := it.next()) is not None:
        out.append(item)
    return out


def _islice(tx, iterable, *bounds):
    """itertools.islice over a traced sequence or iterator (constant bounds)."""
    from .containers import ListIteratorVariable
    if not all_constant(bounds):
        raise Unsupported("islice() with non-constant bounds")
    items = _drain(iterable) if isinstance(iterable, ListIteratorVariable) else \
        seq_items(tx, iterable)
    b = [x.as_python_constant() for x in bounds]
    return ListIteratorVariable(list(itertools.islice(items, *b)))


def _abs(tx, x):
    if isinstance(x, TensorVariable):
        return tx.output.call_function(tx, abs, [x], {})
    return None


def _to_number(fn):
    def handler(tx, *args):
        if any_tensor(args):
            value = args[0].known_value(tx) if len(args) == 1 and isinstance(args[0], TensorVariable) else None
            if value is not None and value.numel() == 1:
                return ConstantVariable(fn(value))
            raise Unsupported(f"{fn.__name__}() of a tensor needs its data")
        if len(args) == 1 and not args[0].is_python_constant() and fn is bool:
            return ConstantVariable(args[0].truth(tx))
        return None
    return handler


def _iter(tx, obj):
    if isinstance(obj, ListIteratorVariable):
        return obj
    return ListIteratorVariable.over(tx, obj)


def _next(tx, it, *default):
    if not isinstance(it, ListIteratorVariable):
        raise Unsupported(f"next() on {it}")
    v = it.next()
    if v is None:
        if default:
            return default[0]
        raise Unsupported("StopIteration at trace time")
    return v


def _reversed(tx, seq):
    return ListIteratorVariable.reversed_over(tx, seq)


def _type(tx, obj):
    return ClassVariable(obj.python_type())


def _callable(tx, obj):
    from .functions import BaseUserFunctionVariable, BoundMethodVariable
    from .nn_module import NNModuleVariable
    from .torch import TorchFunctionVariable
    if isinstance(obj, (BaseUserFunctionVariable, BoundMethodVariable, BuiltinVariable,
                        TorchFunctionVariable, NNModuleVariable, ClassVariable)):
        return ConstantVariable(True)
    if obj.is_python_constant():
        return ConstantVariable(callable(obj.as_python_constant()))
    if isinstance(obj, (TensorVariable, BaseListVariable, DictVariable)):
        return ConstantVariable(False)
    return None


def _slice(tx, *args):
    from .symbolic import make_slice
    return make_slice(list(args))


def _sorted(tx, iterable, **kwargs):
    if kwargs:
        return None
    items = iterable.unpack(tx)
    if all_constant(items):
        return ListVariable([ConstantVariable(v) for v in sorted(i.as_python_constant() for i in items)])
    raise Unsupported("sorted() of non-constants")


def _any_all(fn):
    stop_on = fn is any      # any() stops at the first true item, all() at the first false

    def handler(tx, iterable):
        it = iterable if isinstance(iterable, ListIteratorVariable) else \
            ListIteratorVariable(iterable.unpack(tx))
        while (item := it.next()) is not None:
            if item.truth(tx) == stop_on:
                return ConstantVariable(stop_on)
        return ConstantVariable(not stop_on)
    return handler


def _id(tx, obj):
    """id() of an object the guards pin to one identity (nn.Modules and
    classes carry ID_MATCH; other objects with a source get it here)."""
    from ...guards import ID_MATCH
    from .nn_module import NNModuleVariable
    if isinstance(obj, NNModuleVariable):
        if obj.generic:         # any instance of its class: pin this one
            tx.output.add_guard(obj.source, ID_MATCH, obj.module)
        return ConstantVariable(id(obj.module))
    value = getattr(obj, "value", None)
    if obj.source is not None and value is not None and not isinstance(obj, ConstantVariable):
        tx.output.add_guard(obj.source, ID_MATCH, value)
        return ConstantVariable(id(value))
    raise Unsupported(f"id() of {obj}")


def _super(tx, *args):
    """super(cls, obj), or zero-argument super() read off the calling
    frame: its `__class__` cell and its first local (what CPython reads)."""
    from .functions import SuperVariable
    if len(args) == 2:
        cls = args[0].as_python_constant()
        if not isinstance(cls, type):
            raise Unsupported("super() argument 1 must be a type")
        return SuperVariable(cls, args[1])
    if args:
        raise Unsupported("one-argument super()")
    from ... import resume
    code = tx.code
    first = resume.lead_local(resume.base_code(code))
    cell = tx.cells.get("__class__")
    if first is None or cell is None or cell.value is None:
        raise Unsupported("super(): no arguments or no __class__ cell")
    cell.value = tx.realize(cell.value)
    cls = cell.value.as_python_constant()
    if first in tx.cells:
        obj = tx.cells[first].value
        if obj is not None:
            obj = tx.cells[first].value = tx.realize(obj)
    else:
        obj = tx.locals.get(first)
        if obj is not None:
            obj = tx.locals[first] = tx.realize(obj)
    if obj is None:
        raise Unsupported("super(): first argument deleted")
    return SuperVariable(cls, obj)


def _signature(tx, fn, **kwargs):
    """inspect.signature of a user function or bound method: its
    `parameters` are read as a dict of parameter names (len, `in`, keys)."""
    import inspect
    from .functions import SignatureVariable, UserFunctionVariable, UserMethodVariable
    if kwargs or not isinstance(fn, (UserFunctionVariable, UserMethodVariable)):
        raise Unsupported(f"inspect.signature of {fn}")
    params = list(inspect.signature(fn.fn).parameters)
    if isinstance(fn, UserMethodVariable):
        params = params[1:]
    return SignatureVariable(params)


def _deepcopy(tx, obj, *memo):
    from .copying import deepcopy_handler
    return deepcopy_handler(tx, obj, *memo)


def _copy(tx, obj):
    from .copying import copy_handler
    return copy_handler(tx, obj)


def _setattr(tx, obj, name, value):
    """setattr(obj, name, value) with a constant name: the store
    `obj.name = value` is (misc.store_attribute)."""
    from .misc import store_attribute
    if not name.is_python_constant() or type(name.as_python_constant()) is not str:
        raise Unsupported("setattr with a non-constant name")
    store_attribute(tx, obj, name.as_python_constant(), value)
    return ConstantVariable(None)


def _delattr(tx, obj, name):
    """delattr(obj, name) of an object the trace made (or copied)."""
    from .misc import NewObjectVariable
    if not name.is_python_constant() or type(name.as_python_constant()) is not str:
        raise Unsupported("delattr with a non-constant name")
    if not isinstance(obj, NewObjectVariable):
        raise Unsupported(f"delattr on {obj}")
    obj.delete_attr(tx, name.as_python_constant())
    return ConstantVariable(None)


def _reduce(tx, fn, iterable, *initial):
    """functools.reduce over the traced items: fn is called (inlined,
    folded or recorded) once per item, as reduce would."""
    items = iterable.unpack(tx)
    if initial:
        acc = initial[0]
    elif items:
        acc, items = items[0], items[1:]
    else:
        raise Unsupported("reduce() of an empty iterable with no initial value")
    for item in items:
        acc = fn.call(tx, [acc, item], {})
    return acc


# builtins that read only the type of a symbolic size (no specialization)
_SIZE_AWARE = frozenset({isinstance, type, callable, id, hasattr, getattr, slice, min, max})

_HANDLERS = {
    len: _len, isinstance: _isinstance, getattr: _getattr, hasattr: _hasattr,
    range: _range, enumerate: _enumerate, zip: _zip, map: _map, tuple: _tuple,
    list: _list, dict: _dict, sum: _sum, min: _minmax(min), max: _minmax(max),
    abs: _abs, int: _to_number(int), float: _to_number(float), bool: _to_number(bool),
    iter: _iter, next: _next, reversed: _reversed, type: _type, callable: _callable,
    slice: _slice, sorted: _sorted, any: _any_all(any), all: _any_all(all),
    super: _super, functools.reduce: _reduce, inspect.signature: _signature,
    id: _id, math.prod: _prod, itertools.chain: _chain, itertools.islice: _islice,
    set: _to_set(set), frozenset: _to_set(frozenset),
    object.__getattribute__: _object_getattribute, object.__setattr__: _object_setattr,
    copy.deepcopy: _deepcopy, copy.copy: _copy, setattr: _setattr, delattr: _delattr,
    typing.get_origin: _typing_query(typing.get_origin), typing.get_args: _typing_query(typing.get_args),
    __import__("dataclasses").fields: _dataclass_fields,
}

BUILTIN_CALLABLES = set(_HANDLERS) | _PURE | {str, repr, format, round, divmod, pow}


def is_builtin_callable(value):
    """True for builtins/operator/math callables BuiltinVariable handles."""
    try:
        if value in BUILTIN_CALLABLES:
            return True
    except TypeError:
        return False
    module = getattr(value, "__module__", None)
    return callable(value) and module in ("_operator", "operator", "math") and \
        type(value).__name__ == "builtin_function_or_method"


def call_builtin_class(tx, cls_vt, args, kwargs):
    """Calling a class: only builtin types and torch value types fold."""
    cls = cls_vt.value
    if cls is collections.OrderedDict:
        if len(args) > 1:
            raise Unsupported("OrderedDict() takes at most one positional argument")
        return DictVariable(dict_items(tx, args[0] if args else None, kwargs), user_cls=cls)
    if cls in _HANDLERS or cls in _PURE:
        return BuiltinVariable(cls).call(tx, args, kwargs)
    if cls in (torch.Size, torch.device, torch.dtype) and all_constant(args) and \
            all_constant(kwargs.values()):
        return ConstantVariable(cls(*[a.as_python_constant() for a in args],
                                    **{k: v.as_python_constant() for k, v in kwargs.items()}))
    raise Unsupported(f"constructing {getattr(cls, '__qualname__', cls)} inside the compiled frame")


__all__ = ["BuiltinVariable", "binary_op", "compare_op", "unary_op", "contains", "getitem",
           "identical", "is_builtin_callable", "ObservedAttributeError", "NullVariable",
           "builtins", "math"]
