"""copy.deepcopy and copy.copy in traced code: the copy made of
VariableTrackers, not run for real (issue 31: transformers' `get_text_config`
deep-copies the model's config inside every encoder-decoder forward; the
per-layer configs of heterogeneous models are shallow copies).

Owns the deep copy of the kinds whose copy is a fresh value made of the
copied items: constants (themselves, as deepcopy returns them), tuples,
lists, dicts, classes and functions (atomic to deepcopy), and instances of
plain Python classes that use the default copy protocol (copyreg's
__reduce_ex__(4): a new object of the class, without __init__, given a
deep copy of the instance __dict__). Such an instance read from the frame
becomes a NewObjectVariable whose attributes are the copies of its
__dict__ items, each guarded where it came from (the dict's keys and every
value), so the copy is known at trace time and may be changed freely by
the traced code (a new object; rebuilt after the graph if it outlives
it). copy.copy is the same walk one level deep: the new list, dict or
object holds the very items of the original. Anything else (a tensor, a
class with __deepcopy__ / __copy__, __reduce__,
__getstate__/__setstate__ or __slots__ of its own) is Unsupported: the
call runs eagerly after a graph break, as before.

Must not run the real copy.deepcopy / copy.copy or any user code: only
the items' trackers are copied.
"""
import collections
import copy
import copyreg

from ...exc import Unsupported
from ..lookup import getattr_static
from .base import ClassVariable, ConstantVariable, FunctionObjectVariable

# what object.__reduce_ex__ copies by __dict__ only (3.11+: object has a __getstate__)
_OBJECT_COPY_PROTOCOL = {name: object.__dict__.get(name) for name in
                         ("__reduce_ex__", "__reduce__", "__getstate__")}


def deepcopy_var(tx, var, memo=None, deep=True):
    """The tracker of copy.deepcopy(<var's value>) (copy.copy's when not
    `deep`): a fresh value for lists, dicts and plain objects, `var` itself
    for immutable constants, classes and functions. `memo` (id of a tracker
    or of the real object it holds -> copy) keeps shared items shared, as
    deepcopy's memo does. Raises Unsupported for a value whose copy the
    tracer cannot make."""
    from .containers import DictVariable, ListVariable, NamedTupleVariable, SizeVariable, TupleVariable
    from .misc import NewObjectVariable, UserDefinedObjectVariable
    memo = {} if memo is None else memo
    what = "copy.deepcopy" if deep else "copy.copy"

    def item(v):
        return deepcopy_var(tx, v, memo) if deep else v
    key = id(getattr(var, "value", var)) if isinstance(var, UserDefinedObjectVariable) else id(var)
    if key in memo:
        return memo[key]
    if isinstance(var, ConstantVariable):
        copied = ConstantVariable(set(var.value)) if type(var.value) is set else var
    elif isinstance(var, (ClassVariable, FunctionObjectVariable)) or _is_function_var(var):
        copied = var
    elif isinstance(var, SizeVariable):
        copied = var
    elif isinstance(var, NamedTupleVariable):
        copied = NamedTupleVariable([item(v) for v in var.items], var.fields, cls=var.cls) \
            if deep else var
    elif type(var) is TupleVariable:
        copied = TupleVariable([item(v) for v in var.items]) if deep else var
    elif type(var) is ListVariable:
        copied = memo[key] = ListVariable([])       # before the items: a list inside itself
        copied.items.extend(item(v) for v in var.items)
    elif type(var) is DictVariable and var.user_cls in (dict, collections.OrderedDict):
        copied = memo[key] = DictVariable({}, user_cls=var.user_cls)
        copied.items.update((k, item(v)) for k, v in var.items.items())
    elif isinstance(var, NewObjectVariable) and not var.is_module:
        _check_copy_protocol(var.cls, deep)
        copied = memo[key] = NewObjectVariable(var.cls, var.cls_vt)
        copied.attrs.update((k, item(v)) for k, v in var.attrs.items())
    elif type(var) is UserDefinedObjectVariable and var.source is not None:
        copied = _copy_object(tx, var, memo, key, item, deep)
    else:
        raise Unsupported(f"{what} of {var} (runs eagerly)")
    memo[key] = copied
    return copied


def _is_function_var(var):
    from .functions import NestedFunctionVariable, UserFunctionVariable
    return type(var) in (UserFunctionVariable, NestedFunctionVariable)


def _check_copy_protocol(cls, deep=True):
    """Unsupported unless deepcopy (copy.copy when not `deep`) copies
    instances of `cls` by their __dict__ alone: no __deepcopy__ / __copy__,
    __reduce__/__reduce_ex__/__getstate__ of object's, no __setstate__, no
    copyreg entry, no __slots__, made by object.__new__."""
    why = None
    hook = "__deepcopy__" if deep else "__copy__"
    what = "copy.deepcopy" if deep else "copy.copy"
    if getattr_static(cls, hook, None) is not None:
        why = f"defines {hook}"
    elif any(getattr_static(cls, name, None) is not fn for name, fn in _OBJECT_COPY_PROTOCOL.items()):
        why = "defines its own __reduce__, __reduce_ex__ or __getstate__"
    elif getattr_static(cls, "__setstate__", None) is not None:
        why = "defines __setstate__"
    elif cls in copyreg.dispatch_table or cls in (copy._deepcopy_dispatch if deep
                                                  else copy._copy_dispatch):
        why = "has a copyreg entry"
    elif any("__slots__" in k.__dict__ for k in cls.__mro__[:-1]):
        why = "has __slots__"
    elif any(k.__new__ is not object.__new__ for k in cls.__mro__[:-1]) or type(cls) is not type:
        why = "is not made by object.__new__"
    if why is not None:
        raise Unsupported(f"{what} of a {cls.__name__}, which {why} (runs eagerly)")


def _copy_object(tx, var, memo, key, item, deep):
    """A plain object read from the frame: a NewObjectVariable given
    `item` (a deep copy, or the item itself) of each of its __dict__ items, read through `<source>.__dict__` (its
    keys and every value guarded), then any attribute the trace already
    stored on it."""
    from .containers import DictVariable
    from .misc import NewObjectVariable, generic_attr_source, instance_dict
    obj = var.value
    cls = type(obj)
    _check_copy_protocol(cls, deep)
    what = "copy.deepcopy" if deep else "copy.copy"
    # what the copy reads is object's: type(obj) and the generic __dict__,
    # whatever the class's own __getattribute__ says (GenericAttrSource then)
    state = instance_dict(obj)
    if type(state) is not dict or not all(type(k) is str for k in state):
        raise Unsupported(f"{what} of a {cls.__name__} without a plain __dict__ (runs eagerly)")
    cls_vt = tx.wrap(cls, generic_attr_source(var.source, cls, "__class__"))
    copied = memo[key] = NewObjectVariable(cls, cls_vt)
    state_var = tx.wrap(state, generic_attr_source(var.source, cls, "__dict__"))
    if not isinstance(state_var, DictVariable):
        raise Unsupported(f"{what} of a {cls.__name__}: its __dict__ is not traceable")
    items = dict(state_var.items)
    for (owner, name), (_, value, _) in tx.output.attr_stores.items():
        if owner == id(obj):                        # written earlier in this trace
            items[name] = value
    copied.attrs.update((k, item(v)) for k, v in items.items())
    return copied


def deepcopy_handler(tx, var, memo=None, *rest):
    """copy.deepcopy(x) with no memo argument (a caller's own memo dict is
    not followed)."""
    if memo is not None and not (isinstance(memo, ConstantVariable) and memo.value is None) or rest:
        raise Unsupported("copy.deepcopy with a memo argument (runs eagerly)")
    return deepcopy_var(tx, var)


def copy_handler(tx, var):
    """copy.copy(x): the shallow copy (deepcopy_var with deep=False)."""
    return deepcopy_var(tx, var, deep=False)


__all__ = ["deepcopy_var", "deepcopy_handler", "copy_handler"]
