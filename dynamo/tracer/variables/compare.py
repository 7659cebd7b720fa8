"""Identity, equality and membership of traced values: `is`, the six
comparisons, `in` and the element test list.count / list.index share.

Each answer is decided at trace time together with the guards it rests
on, or refused with Unsupported (the caller graph-breaks and the operation
runs eagerly). Python's rules are followed as CPython runs them: a
comparison tries the reflected method of a subclass operand first, then
the left operand's, then the right one's reflected method, and `==` / `!=`
fall back to identity; `in` over a list or tuple asks `e is x or e == x`
of each element e, the element on the left. A user `__eq__` is inlined.
Must not touch the fx graph except through `tx.output`.
"""
import operator
import types

import torch

from ...exc import Unsupported
from ..lookup import getattr_static
from .base import ConstantVariable, FunctionObjectVariable, OpaqueVariable, is_nan, nan_inside
from .containers import DictVariable
from .tensor import ScalarOutputVariable, TensorVariable


def is_user_object(var):
    """Is `var` an instance of a user class (passed in, or made by the trace)?"""
    from .misc import NewObjectVariable, UserDefinedObjectVariable
    return isinstance(var, (NewObjectVariable, UserDefinedObjectVariable))


def _is_data(var):
    """A value whose == is a graph op (its truth needs the data)."""
    return isinstance(var, (TensorVariable, ScalarOutputVariable))


# ------------------------------------------------------------------ identity

_MISSING = object()

# constants of these types are singletons: equal values are one object
_SINGLETON_CONSTANTS = (type(None), bool, type(Ellipsis), type(NotImplemented), torch.dtype,
                        torch.layout, torch.memory_format)


def _object_of(var):
    """The real object a non-tensor VT stands for, or _MISSING (builtins
    and functions are held as `fn`, classes and user objects as `value`)."""
    from .functions import UserFunctionVariable
    if isinstance(var, (FunctionObjectVariable, UserFunctionVariable)):
        return var.fn
    return getattr(var, "value", _MISSING)


def _guard_identity(tx, var, obj, by_type):
    """A fold on `obj is ...` holds only for this very object: ID_MATCH on
    var's source (TYPE_MATCH alone lets another instance, e.g. another Enum
    member, hit the stale fold); TYPE_MATCH when the types alone decided."""
    if tx is None or var.source is None or isinstance(var, ConstantVariable):
        return
    from ...guards import ID_MATCH, TYPE_MATCH
    if by_type:
        tx.output.add_guard(var.source, TYPE_MATCH, type(obj))
    else:
        tx.output.add_guard(var.source, ID_MATCH, obj)


def identical(a, b, tx=None):
    """`a is b` decided at trace time, or None if unknown. With `tx`, a
    decision that rests on which objects the operands are adds guards:
    SAME_OBJECT between two sources (the relation: fresh objects that
    relate the same way hit), ID_MATCH on the source of one compared with
    an object the trace holds, TYPE_MATCH when the types alone decided."""
    if a is b:
        return True
    if isinstance(a, TensorVariable) and isinstance(b, TensorVariable):
        if a.node is b.node:
            return True
        if a.source is not None and b.source is not None:
            return a.source == b.source
        return False
    if isinstance(a, TensorVariable) or isinstance(b, TensorVariable):
        return False
    from .misc import NewObjectVariable
    if isinstance(a, NewObjectVariable) or isinstance(b, NewObjectVariable):
        return False      # made by the trace: no other VT stands for it
    if isinstance(a, ConstantVariable) and isinstance(b, ConstantVariable):
        return _identical_constants(tx, a, b)
    va, vb = _object_of(a), _object_of(b)
    if va is not _MISSING and vb is not _MISSING:
        by_type = type(va) is not type(vb)      # objects of two types are never one
        if not by_type and a.source is not None and b.source is not None:
            return _same_object(tx, a, b, va is vb)
        _guard_identity(tx, a, va, by_type)
        _guard_identity(tx, b, vb, by_type)
        return va is vb
    if isinstance(a, ConstantVariable) or isinstance(b, ConstantVariable):
        return False      # a constant (e.g. None) is never a container or function
    return None


def _same_object(tx, a, b, same):
    """`a is b` for two values read from the frame: SAME_OBJECT states the
    relation (either object may change, the answer may not)."""
    if tx is None:
        return None
    from ...guards import SAME_OBJECT
    tx.output.add_guard(b.source, SAME_OBJECT, a.source, same)
    return same


def _identical_constants(tx, a, b):
    """`a is b` for two constants. Their types and values are pinned (by
    EQUALS_MATCH for values read from the frame), so values of two types
    are never one object and singletons (None, bools, dtypes) are one
    object per value; otherwise equal values may or may not be one object:
    two values read from the frame are related by SAME_OBJECT, and any
    other pair is unknown (None): a constant without a source may be an
    item of one read from the frame (pinned by value, not as an object)."""
    va, vb = a.value, b.value
    if type(va) is not type(vb):
        return False
    if isinstance(va, _SINGLETON_CONSTANTS):
        return va is vb
    if a.source is not None and b.source is not None:
        return _same_object(tx, a, b, va is vb)
    return None


def _identity_or_unsupported(tx, a, b, what):
    same = identical(a, b, tx)
    if same is None:
        raise Unsupported(f"{what}: cannot tell at trace time whether {a} and {b} are one object")
    return same


# ------------------------------------------------------------------ NaN

def _same_bits(a, b):
    """Are floats / complex numbers `a` and `b` the same value bit for bit
    (what EQUALS_MATCH pins: only then may they be one object)?"""
    import struct
    def bits(v):
        v = complex(v)
        return type(v), struct.pack("<dd", v.real, v.imag)
    return type(a) is type(b) and bits(a) == bits(b)


def _identity_sensitive(value):
    """Does `x is e or x == e` with this constant depend on identity (a NaN
    here or inside)?"""
    return is_nan(value) or nan_inside(value)


# ---------------------------------------------------------------- comparison

_REFLECTED = {operator.eq: operator.eq, operator.ne: operator.ne, operator.lt: operator.gt,
              operator.gt: operator.lt, operator.le: operator.ge, operator.ge: operator.le}
_DUNDER = {operator.eq: "__eq__", operator.ne: "__ne__", operator.lt: "__lt__",
           operator.gt: "__gt__", operator.le: "__le__", operator.ge: "__ge__"}

# builtin constant types whose comparisons answer NotImplemented for an
# operand that is not a number, string, ... (an instance of a plain class)
_PLAIN_CONSTANTS = (type(None), bool, int, float, complex, str, bytes, tuple, frozenset)


def compare_op(tx, fn, a, b):
    """a <fn> b (fn one of operator's six comparisons) for traced values."""
    from .kinds import sym_operands
    out, specialized = sym_operands(tx, fn, [a, b])
    if out is not None:
        return out              # a relation of symbolic sizes: a SymBool node
    a, b = specialized
    if isinstance(a, ScalarOutputVariable) or isinstance(b, ScalarOutputVariable):
        return tx.output.scalar_op(tx, fn, a, b)
    if isinstance(a, TensorVariable) or isinstance(b, TensorVariable):
        return tx.output.call_function(tx, fn, [a, b], {})
    if a.is_python_constant() and b.is_python_constant():
        va, vb = a.as_python_constant(), b.as_python_constant()
        if nan_inside(va) or nan_inside(vb):
            raise Unsupported("comparison of containers holding a NaN: the answer depends on "
                              "which objects the NaNs are")
        return ConstantVariable(fn(va, vb))
    if fn in (operator.eq, operator.ne):
        oa, ob = _object_of(a), _object_of(b)
        if (_frozen_enum(oa) or isinstance(a, ConstantVariable)) and \
                (_frozen_enum(ob) or isinstance(b, ConstantVariable)):
            # members are fixed singletons and a builtin __eq__ (a str Enum's)
            # reads only their values (and a constant's, pinned by value):
            # folded, guarded on which members they are
            _guard_identity(tx, a, oa, False)
            _guard_identity(tx, b, ob, False)
            return ConstantVariable(fn(oa, ob))
    if is_user_object(a) or is_user_object(b):
        return _rich_compare(tx, fn, a, b)
    if fn in (operator.eq, operator.ne) and identity_eq(a) and identity_eq(b):
        same = identical(a, b, tx)
        if same is not None:
            return ConstantVariable(same if fn is operator.eq else not same)
    if fn in (operator.eq, operator.ne):
        equal = _sequences_equal(tx, a, b)
        if equal is not None:
            return ConstantVariable(equal if fn is operator.eq else not equal)
    raise Unsupported(f"comparison {fn.__name__} of {a} and {b}")


def _sequences_equal(tx, a, b):
    """`a == b` of two lists (or two tuples) the trace holds item by item,
    as list's comparison runs: lengths first, then each pair by identity,
    else by ==, whose answer must be known at trace time (a tensor's is
    not: Unsupported; a relation of symbolic sizes is decided and
    guarded). None when a and b are not two such sequences."""
    from .containers import BaseListVariable
    # torch.Size compares as the tuple it is (a size with symbolic items
    # against the tuple a model builds, say)
    compared_as = {list: list, tuple: tuple, torch.Size: tuple}
    kind = compared_as.get(a.python_type())
    if not (isinstance(a, BaseListVariable) and isinstance(b, BaseListVariable)) or \
            kind is None or kind is not compared_as.get(b.python_type()):
        return None
    if len(a.items) != len(b.items):
        return False
    for x, y in zip(a.items, b.items):
        if identical(x, y, tx):
            continue
        r = compare_op(tx, operator.eq, x, y)
        if isinstance(r, TensorVariable):
            raise Unsupported(f"comparison eq of {x} and {y} inside a {a.python_type().__name__}")
        if not r.truth(tx):             # a symbolic size's relation: guarded
            return False
    return True


def _frozen_enum(obj):
    """An Enum member whose == is a builtin type's (str, int) or object's."""
    import enum
    if not isinstance(obj, enum.Enum):
        return False
    return not isinstance(getattr_static(type(obj), "__eq__"), types.FunctionType)


def identity_eq(var):
    """Does == on var's object compare identity (its class keeps
    object.__eq__: Enum members, functions, classes)?"""
    obj = _object_of(var)
    return obj is _MISSING or isinstance(var, ConstantVariable) or type(obj).__eq__ is object.__eq__


def _rich_compare(tx, fn, a, b):
    """a <fn> b where an operand is a user object, dispatched as CPython
    does: the right operand's reflected method first when its class is a
    proper subclass of the left one's, then the left operand's method, then
    the right one's reflected method (unless tried first); each answering
    NotImplemented passes on; at the end == and != compare identity, the
    orderings are a TypeError (Unsupported: it is raised where it runs)."""
    ta, tb = a.python_type(), b.python_type()
    reflected_first = ta is not tb and isinstance(tb, type) and isinstance(ta, type) \
        and issubclass(tb, ta)
    tries = [(a, fn, b)]
    if reflected_first:
        tries.insert(0, (b, _REFLECTED[fn], a))
    else:
        tries.append((b, _REFLECTED[fn], a))
    for obj, op, other in tries:
        result = _compare_slot(tx, obj, op, other)
        if not _is_not_implemented(result):
            return result
    if fn in (operator.eq, operator.ne):
        same = _identity_or_unsupported(tx, a, b, "== falling back to identity")
        return ConstantVariable(same == (fn is operator.eq))
    raise Unsupported(f"{_DUNDER[fn]} between {ta.__name__} and {tb.__name__} (a TypeError)")


def _is_not_implemented(var):
    return isinstance(var, ConstantVariable) and var.value is NotImplemented


def _compare_slot(tx, obj, fn, other):
    """type(obj).__<fn>__(obj, other) as a comparison calls it: a Python
    method of a user class inlined, object's own run as CPython's (== is
    identity or NotImplemented; != inverts the class's __eq__), a builtin
    constant's answering NotImplemented for a plain user object."""
    name = _DUNDER[fn]
    if is_user_object(obj):
        method, src = _type_attribute(tx, obj, name)
        from .kinds import is_skipped_function
        if isinstance(method, types.FunctionType) and not is_skipped_function(method):
            from .functions import UserMethodVariable
            return UserMethodVariable(method, obj, fn_source=src).call(tx, [other], {})
        if method is not object.__dict__.get(name):
            raise Unsupported(f"{obj.python_type().__name__}.{name} is not a Python function "
                              f"the tracer can follow")
        if fn is operator.eq:
            same = _identity_or_unsupported(tx, obj, other, "object.__eq__")
            return ConstantVariable(True if same else NotImplemented)
        if fn is operator.ne:
            eq = _compare_slot(tx, obj, operator.eq, other)
            return eq if _is_not_implemented(eq) else ConstantVariable(not eq.truth(tx))
        return ConstantVariable(NotImplemented)
    if isinstance(obj, ConstantVariable) and type(obj.value) in _PLAIN_CONSTANTS and \
            is_user_object(other) and not issubclass(other.python_type(), _PLAIN_CONSTANTS):
        return ConstantVariable(NotImplemented)
    raise Unsupported(f"comparison {name} of {obj} and {other}")


def _type_attribute(tx, obj, name):
    """(type(obj).<name> as found on the class, its source or None): what
    an operator calls (the class's attribute, never the instance's),
    guarded by identity so that replacing it on the class recompiles."""
    from ...guards import ID_MATCH, AttrSource, StaticAttrSource
    from .misc import NewObjectVariable
    method = getattr_static(obj.python_type(), name, None)
    src = None
    if obj.source is not None:
        src = StaticAttrSource(obj.source, name)
    elif isinstance(obj, NewObjectVariable) and obj.cls_vt.source is not None:
        src = AttrSource(obj.cls_vt.source, name)
    if src is not None:
        tx.output.add_guard(src, ID_MATCH, method)
    return method, src


# ---------------------------------------------------------------- membership

def element_matches(tx, elem, item):
    """`elem is item or elem == item` decided at trace time: what list and
    tuple `in`, list.count and list.index ask of each element (CPython's
    PyObject_RichCompareBool(elem, item, Py_EQ)). Unsupported when the
    answer needs a tensor's data or an identity no guard can pin. A
    symbolic int is specialized first (membership needs its number and,
    for `is`, its object)."""
    if elem is item:
        return True
    elem, item = _specialized(elem), _specialized(item)
    if isinstance(elem, ConstantVariable) and isinstance(item, ConstantVariable):
        ve, vi = elem.value, item.value
        if not _identity_sensitive(ve) and not _identity_sensitive(vi):
            return bool(ve == vi)         # == is reflexive here: `is` adds nothing
        if nan_inside(ve) or nan_inside(vi):
            raise Unsupported("`in` over containers holding a NaN: the answer depends on "
                              "which objects the NaNs are")
        if not _same_bits(ve, vi):
            return False          # a NaN and another value: never one object, never ==
        return _identity_or_unsupported(tx, elem, item, "`in` with a NaN")
    if _is_data(elem) or _is_data(item):
        if identical(elem, item, tx):
            return True
        other = item if _is_data(elem) else elem
        if isinstance(other, ConstantVariable) and (other.value is None or
                                                    type(other.value) in (str, bytes)):
            return False      # Tensor.__eq__ answers NotImplemented: identity decides
        raise Unsupported("`in` compares a tensor with ==: the answer depends on its data")
    same = identical(elem, item, tx)
    if same:
        return True
    result = compare_op(tx, operator.eq, elem, item).truth(tx)
    if result or same is False:
        return bool(result)
    if elem.is_python_constant() and item.is_python_constant():
        return False          # folded above without a NaN: == is reflexive
    raise Unsupported(f"`in`: cannot tell at trace time whether {elem} and {item} are one object")


def _specialized(var):
    """A SymNodeVariable as the constant it holds now (its value guarded),
    anything else as it is."""
    from .symbolic import SymNodeVariable
    if isinstance(var, SymNodeVariable):
        return ConstantVariable(var.as_python_constant())
    return var


def contains(tx, item, container):
    """`item in container` decided at trace time (with its guards)."""
    if isinstance(container, DictVariable):
        return _hashed_contains(item, container.items)
    if isinstance(container, OpaqueVariable) and type(container.value) is frozenset \
            and container.source is not None:
        # immutable: the same object always has the same members
        from ...guards import ID_MATCH
        tx.output.add_guard(container.source, ID_MATCH, container.value)
        return _hashed_contains(item, container.value)
    if isinstance(container, TensorVariable):
        raise Unsupported("`in` on a tensor needs its data")
    if is_user_object(container):
        found = _user_contains(tx, item, container)
        if found is not None:
            return found
    if isinstance(container, ConstantVariable) and isinstance(container.value, (set, frozenset)):
        return _hashed_contains(item, container.value)
    if isinstance(container, ConstantVariable) and type(container.value) in (str, bytes):
        # a substring test (a TypeError for anything but a string)
        return item.as_python_constant() in container.value
    return any(element_matches(tx, v, item) for v in container.unpack(tx))


def _hashed_contains(item, members):
    """`item in` a dict's keys or a set of constants: hash, then identity or ==
    on the trace's objects (right for values equal to themselves)."""
    value = item.as_python_constant()
    if _identity_sensitive(value):
        raise Unsupported("`in` of a NaN in a set or dict: the answer depends on which "
                          "object the NaN is")
    return value in members


def _user_contains(tx, item, container):
    """`item in obj` for a user object: its class's own __contains__ inlined,
    or, for the one collections.abc.Mapping gives (`try: self[key]` /
    `except KeyError: False`), its __getitem__ inlined with a missing key
    answering False. None when neither applies."""
    import collections.abc
    from .kinds import is_skipped_function
    method = getattr_static(container.python_type(), "__contains__", None)
    if method is collections.abc.Mapping.__contains__:
        from .containers import ObservedKeyError
        try:
            container.call_method(tx, "__getitem__", [item], {})
        except ObservedKeyError:
            return False
        return True
    from .misc import followed_stdlib_class
    if isinstance(method, types.FunctionType) and (
            not is_skipped_function(method) or followed_stdlib_class(container.python_type())):
        return container.call_method(tx, "__contains__", [item], {}).truth(tx)
    if method is dict.__contains__ and isinstance(getattr(container, "value", None), dict):
        from .containers import guarded_dict_view
        view = guarded_dict_view(tx, container)
        if view is not None:
            return _hashed_contains(item, view.items)
    return None
