"""Python modules, user-defined objects, functions the tracer must not
enter, and frame values passed through untouched.
"""
import inspect
import types

import torch

from ...exc import Unsupported
from ..lookup import getattr_static
from ...guards import (FUNCTION_MATCH, ID_MATCH, AttrSource, GenericAttrSource, ItemSource,
                       StaticAttrSource)
from .base import (GENERIC_GETATTRIBUTE, ClassVariable, ConstantVariable, VariableTracker,
                   reconstruct_source_or_const, user_getattribute)


class ModuleVariable(VariableTracker):
    """A Python module; its attributes are read from the module object and
    wrapped by `wrap_attr` (the subclass says how)."""

    def __init__(self, module, source=None):
        super().__init__(source)
        self.module = module

    def python_type(self):
        return types.ModuleType

    def truth(self, tx):
        return True

    def var_getattr(self, tx, name):
        from .kinds import ObservedAttributeError
        if not hasattr(self.module, name):
            raise ObservedAttributeError(f"module {self.module.__name__} has no attribute {name}")
        value = getattr(self.module, name)
        src = AttrSource(self.source, name) if self.source is not None else None
        return self.wrap_attr(tx, value, src)

    def wrap_attr(self, tx, value, source):
        """The VariableTracker for attribute `value` of the module."""
        raise NotImplementedError

    def reconstruct(self, cg):
        reconstruct_source_or_const(self, cg, self.module)


class PythonModuleVariable(ModuleVariable):
    """A non-torch Python module (math, numpy, a user module)."""

    @property
    def value(self):
        return self.module

    def wrap_attr(self, tx, value, source):
        return tx.wrap(value, source)

    def __repr__(self):
        return f"PythonModuleVariable({self.module.__name__})"


class SkippedFunctionVariable(VariableTracker):
    """A callable the tracer must not enter (stdlib, numpy, scipy, unknown
    C functions, print): calling it is Unsupported, so the call runs
    eagerly after a graph break.  `why`: what the break reason says of it
    ("marked torch.compiler.disable" for a directive; default "not
    traceable"), read by dynamo.break_hints to word the break."""

    def __init__(self, fn, source=None, why="not traceable"):
        super().__init__(source)
        self.fn = fn
        self.why = why

    @property
    def value(self):
        return self.fn

    def python_type(self):
        return type(self.fn)

    def truth(self, tx):
        return True

    def call(self, tx, args, kwargs):
        folded = _fold_numpy_ufunc(tx, self, args, kwargs)
        if folded is not None:
            return folded
        if is_logging_call(self.fn) and all(a.is_python_constant() for a in (*args, *kwargs.values())):
            # the message is made of constants: the rewritten code logs it
            # after the graph (warning_once's cache keeps its "once" there)
            tx.output.replayed_calls.append((self, list(args), dict(kwargs)))
            return ConstantVariable(None)
        module = getattr(self.fn, "__module__", None) or "?"
        name = getattr(self.fn, "__qualname__", None) or getattr(self.fn, "__name__", repr(self.fn))
        raise Unsupported(f"call to {module}.{name} ({self.why}; runs eagerly)")

    def var_getattr(self, tx, name):
        if self.source is None:
            raise Unsupported(f"attribute {name} of {self.fn!r:.40}")
        return SkippedFunctionVariable(getattr(self.fn, name), AttrSource(self.source, name))

    def reconstruct(self, cg):
        reconstruct_source_or_const(self, cg, self.fn)

    def __repr__(self):
        return f"SkippedFunctionVariable({getattr(self.fn, '__name__', self.fn)!s:.40})"


# methods of a logging.Logger that only emit a record (transformers adds
# warning_once / info_once, lru_cache'd, to logging.Logger itself)
_LOGGING_METHODS = {"debug", "info", "warning", "warn", "error", "critical", "exception", "log",
                    "warning_once", "info_once", "warning_advice"}


def _is_logger(obj):
    import logging
    return isinstance(obj, (logging.Logger, logging.LoggerAdapter))


def is_logging_call(fn):
    """`logger.warning` and the like, bound to a logging.Logger."""
    name = getattr(fn, "__name__", None) or getattr(getattr(fn, "__func__", None), "__name__", None)
    return _is_logger(getattr(fn, "__self__", None)) and name in _LOGGING_METHODS


def replay_call(fn, args, kwargs):
    """Run time: a call the trace deferred to after the graph."""
    return fn(*args, **kwargs)


def _fold_numpy_ufunc(tx, fn_var, args, kwargs):
    """`numpy.sqrt(3)` and the other numpy ufuncs of Python numbers (CTRL's
    `embeds *= np.sqrt(d_model)`): computed at trace time, the function
    guarded by identity. The numpy scalar becomes the Python number of the
    same value (np.float64 is a float subclass; a graph operation takes the
    number), so only code that asks for its numpy type sees a difference.
    None when the call is anything else."""
    fn = fn_var.fn
    if type(fn).__name__ != "ufunc" or type(fn).__module__ != "numpy" or kwargs:
        return None
    if not all(isinstance(a, ConstantVariable) and type(a.value) in (int, float, bool) for a in args):
        return None
    import numpy
    try:
        value = fn(*[a.value for a in args])
    except (FloatingPointError, TypeError):     # under numpy.errstate(all="raise"): eagerly
        return None
    if not isinstance(value, (numpy.floating, numpy.integer, numpy.bool_)):
        return None
    if fn_var.source is not None:
        tx.output.add_guard(fn_var.source, FUNCTION_MATCH, fn)
    return ConstantVariable(value.item())


def class_attribute(tx, obj_var, name, static):
    """The VT of `obj.name` found on the class as `static` (what
    inspect.getattr_static returned: a function, staticmethod, classmethod
    or property), guarded by identity of what lookup starts from
    (StaticAttrSource): replacing the method, property or classmethod on the
    class, or shadowing it with an instance attribute, recompiles.  Functions
    it returns carry sources, so their __code__, defaults and closure cells
    are guarded when inlined."""
    from .functions import UserFunctionVariable, UserMethodVariable
    src = None
    if obj_var.source is not None:
        src = StaticAttrSource(obj_var.source, name)
        tx.output.add_guard(src, ID_MATCH, static)
    cls = type(obj_var.value)
    if isinstance(static, staticmethod):
        return UserFunctionVariable(static.__func__, src and AttrSource(src, "__func__"))
    if isinstance(static, classmethod):
        return UserMethodVariable(static.__func__, ClassVariable(cls),
                                  fn_source=src and AttrSource(src, "__func__"))
    if isinstance(static, property):
        return UserFunctionVariable(static.fget, src and AttrSource(src, "fget")).call(tx, [obj_var], {})
    return UserMethodVariable(static, obj_var, fn_source=src)


def is_typing_alias(value):
    """typing's generic aliases and special forms (List, List[int],
    Optional, ...), builtin generic aliases (list[int]) and unions made by
    `|` (int | None): immutable
    values, used as annotations."""
    import typing
    return isinstance(value, (types.GenericAlias, types.UnionType)) or (
        type(value).__module__ == "typing" and isinstance(value, typing._Final)
        and not isinstance(value, type))


class TypingAliasVariable(VariableTracker):
    """A typing alias (an annotation such as typing.List[Variable]):
    subscripting it with constants is folded (aliases are immutable)."""

    def __init__(self, value, source=None):
        super().__init__(source)
        self.value = value

    def python_type(self):
        return type(self.value)

    def as_python_constant(self):
        return self.value

    def truth(self, tx):
        return True

    def call_method(self, tx, name, args, kwargs):
        if name == "__getitem__" and len(args) == 1 and not kwargs:
            key = args[0]
            if key.is_python_constant():
                return TypingAliasVariable(self.value[key.as_python_constant()])
            from .containers import BaseListVariable
            if isinstance(key, BaseListVariable) and all(v.is_python_constant() for v in key.items):
                return TypingAliasVariable(self.value[tuple(v.as_python_constant() for v in key.items)])
        return super().call_method(tx, name, args, kwargs)

    def reconstruct(self, cg):
        reconstruct_source_or_const(self, cg, self.value)

    def __repr__(self):
        return f"TypingAliasVariable({self.value!r:.40})"


class TypingCastVariable(VariableTracker):
    """typing.cast: `cast(typ, value)` is `value` (torch.optim casts its
    lists for the type checker)."""

    def __init__(self, source=None):
        super().__init__(source)

    def python_type(self):
        return types.FunctionType

    def as_python_constant(self):
        import typing
        return typing.cast

    def truth(self, tx):
        return True

    def call(self, tx, args, kwargs):
        if len(args) != 2 or kwargs:
            raise Unsupported("typing.cast takes two positional arguments")
        return args[1]

    def reconstruct(self, cg):
        reconstruct_source_or_const(self, cg, self.as_python_constant())


class PassthroughVariable(VariableTracker):
    """A frame value the trace never looked at (an argument only handed on to
    a resume function): rebuilt from its source, no guard."""

    def __repr__(self):
        return f"PassthroughVariable({self.source.name()})"


class UserDefinedObjectVariable(VariableTracker):
    """An instance of a user class, read through its attributes (guarded by
    TYPE_MATCH on the object and guards on each attribute read)."""

    def __init__(self, value, source=None):
        super().__init__(source)
        self.value = value

    def python_type(self):
        return type(self.value)

    def truth(self, tx):
        cls = type(self.value)
        if hasattr(cls, "__bool__") or hasattr(cls, "__len__"):
            raise Unsupported(f"truth of {cls.__name__} instance")
        return True

    def var_getattr(self, tx, name):
        """`obj.name` as Python reads it: the class's own __getattribute__
        (a Python function: inlined, with `name` as a constant) or the
        generic lookup, then __getattr__ when that raised AttributeError."""
        from .kinds import ObservedAttributeError
        stored = tx.output.attr_stores.get((id(self.value), name))
        if stored is not None:
            return stored[1]
        if name in _LOGGING_METHODS and _is_logger(self.value):
            # the call is replayed after the graph (SkippedFunctionVariable.call)
            return SkippedFunctionVariable(getattr(self.value, name),
                                           AttrSource(self.source, name) if self.source else None)
        getattribute = user_getattribute(type(self.value))
        if getattribute is None:
            return self.generic_getattr(tx, name)
        from .base import ConstantVariable
        from .functions import UserMethodVariable
        fn_src = None
        if self.source is not None:
            # replacing the class's __getattribute__ recompiles
            fn_src = StaticAttrSource(self.source, "__getattribute__")
            tx.output.add_guard(fn_src, ID_MATCH, getattribute)
        try:
            return UserMethodVariable(getattribute, self, fn_source=fn_src).call(
                tx, [ConstantVariable(name)], {})
        except ObservedAttributeError:
            user_getattr = self._user_getattr()
            if user_getattr is None:
                raise
            return UserMethodVariable(user_getattr, self).call(tx, [ConstantVariable(name)], {})

    def _user_getattr(self):
        """The class's Python __getattr__ (None without one); Unsupported for
        one the trace cannot follow."""
        cls, obj = type(self.value), self.value
        if "__getattr__" in dir(cls) and not isinstance(getattr_static(cls, "__getattr__", None),
                                                        (types.WrapperDescriptorType, type(None))):
            if getattr(cls, "__getattr__", None) is not getattr(object, "__getattr__", None):
                user_getattr = getattr_static(cls, "__getattr__")
                if not isinstance(user_getattr, types.FunctionType) or self.source is None or \
                        not isinstance(getattr(obj, "__dict__", None), dict):
                    raise Unsupported(f"{cls.__name__} defines __getattr__")
                return user_getattr
        return None

    def generic_getattr(self, tx, name, with_getattr=True):
        """object.__getattribute__(obj, name) (then the class's __getattr__
        on a miss, unless `with_getattr` is False). Where the class has its
        own __getattribute__ (inlined by var_getattr, which reached here
        through object's), the values are read and sourced by object's
        lookup (GenericAttrSource: fetched by the guards in C)."""
        from .kinds import ObservedAttributeError
        from .functions import UserMethodVariable
        obj, cls = self.value, type(self.value)
        src = generic_attr_source(self.source, cls, name)
        stored = tx.output.attr_stores.get((id(obj), name))
        if stored is not None:
            return stored[1]
        user_getattr = self._user_getattr() if with_getattr else None
        own = instance_dict(obj)
        try:
            static = getattr_static(obj, name)
        except AttributeError:
            if user_getattr is not None:
                # ordinary lookup failed: Python calls __getattr__. Valid while
                # the instance keeps its attribute names (DICT_KEYS on __dict__)
                from ...guards import DICT_KEYS
                tx.output.add_guard(generic_attr_source(self.source, cls, "__dict__"), DICT_KEYS,
                                    tuple(own))
                from .base import ConstantVariable
                return UserMethodVariable(user_getattr, self).call(tx, [ConstantVariable(name)], {})
            if self.source is not None and isinstance(own, dict):
                # the trace goes on knowing the attribute is missing
                # (getattr's default, hasattr): valid while the instance
                # keeps its attribute names
                from ...guards import DICT_KEYS
                tx.output.add_guard(generic_attr_source(self.source, cls, "__dict__"), DICT_KEYS,
                                    tuple(own))
            raise ObservedAttributeError(f"{cls.__name__} has no attribute {name!r}") from None
        if isinstance(own, dict) and name in own:
            return tx.wrap(own[name], src)
        if isinstance(static, (staticmethod, classmethod, property)):
            return class_attribute(tx, self, name, static)
        if inspect.isfunction(static):
            from ...skipfiles import is_inlined_torch_code
            if (getattr(static, "__module__", "") or "").startswith("torch.") and \
                    not is_inlined_torch_code(static.__code__):
                return SkippedFunctionVariable(generic_read(obj, name), src)
            return class_attribute(tx, self, name, static)
        return tx.wrap(generic_read(obj, name), src)

    def can_store_attr(self, name):
        """May `obj.name = v` be traced (and written back after the graph)?
        For an object with a source, a plain __setattr__ and a __dict__, and
        no descriptor of that name on its class (a property would run code)."""
        cls = type(self.value)
        plain_setattr = cls.__setattr__ is object.__setattr__ or (
            is_state_module_class(cls) and name not in ("_parameters", "_buffers", "_modules"))
        if self.source is None or not plain_setattr or \
                not isinstance(getattr(self.value, "__dict__", None), dict):
            return False
        try:
            static = getattr_static(cls, name)
        except AttributeError:
            return True
        return not hasattr(type(static), "__set__") and not hasattr(type(static), "__get__")

    def call(self, tx, args, kwargs):
        from .functions import UserMethodVariable
        call = getattr_static(type(self.value), "__call__", None)
        if inspect.isfunction(call):
            return UserMethodVariable(call, self).call(tx, args, kwargs)
        python_fn = getattr(self.value, "_torchdynamo_inline", None) \
            if isinstance(self.value, torch.jit.ScriptFunction) else None
        if inspect.isfunction(python_fn) and self.source is not None:
            # a torch.jit.script function: torch.jit.script keeps the Python
            # function it compiled, which is traced in its place (the
            # ScriptFunction itself is guarded by where it came from)
            return tx.wrap(python_fn, AttrSource(self.source, "_torchdynamo_inline")).call(
                tx, args, kwargs)
        raise Unsupported(f"calling a {type(self.value).__name__} instance")

    def call_method(self, tx, name, args, kwargs):
        if name == "__getitem__" and len(args) == 1 and not kwargs:
            item = self.dict_item(tx, args[0])
            if item is not None:
                return item
        return super().call_method(tx, name, args, kwargs)

    def dict_item(self, tx, key_var):
        """`obj[key]` of a dict subclass that keeps dict's __getitem__ (and has
        no __missing__, which a guard's fetch would call), with a
        str or int constant key: read like any item of a frame value (the
        ITEM source fails, so the guard does, once the key is gone)."""
        obj = self.value
        if self.source is None or not isinstance(obj, dict) or hasattr(type(obj), "__missing__") \
                or getattr_static(type(obj), "__getitem__") is not dict.__getitem__:
            return None
        if not key_var.is_python_constant():
            return None
        key = key_var.as_python_constant()
        if type(key) not in (str, int) or key not in obj:
            return None
        return tx.wrap(dict.__getitem__(obj, key), ItemSource(self.source, key))

    def __repr__(self):
        return f"UserDefinedObjectVariable({type(self.value).__name__})"


def has_own_getattribute(cls):
    """Does `cls` read attributes through something other than CPython's
    generic lookup (a __getattribute__ of its own, in Python or C)?"""
    return getattr_static(cls, "__getattribute__") not in GENERIC_GETATTRIBUTE


def generic_attr_source(source, cls, name):
    """The source of `object.__getattribute__(obj, name)` for an instance of
    `cls` at `source` (None without one): AttrSource where cls's own lookup
    is the generic one (the same value, fetched as before), else
    GenericAttrSource (the class's __getattribute__ skipped, in C)."""
    if source is None:
        return None
    if has_own_getattribute(cls):
        return GenericAttrSource(source, name)
    return AttrSource(source, name)


def generic_read(obj, name):
    """`object.__getattribute__(obj, name)` now, at trace time (getattr
    where the class has no lookup of its own: the same value)."""
    if has_own_getattribute(type(obj)):
        return object.__getattribute__(obj, name)
    return getattr(obj, name)


def instance_dict(obj):
    """obj's instance __dict__ as object's lookup reads it, or None."""
    try:
        return generic_read(obj, "__dict__")
    except (AttributeError, TypeError):
        return None


def store_attribute(tx, obj, name, value):
    """`obj.name = value` (STORE_ATTR, setattr): an object the traced code
    made takes it (its class's __setattr__ inlined), an object from the
    frame records it for the write-back after the graph; Unsupported
    otherwise."""
    if hasattr(obj, "store_attr"):       # an object created by the traced code
        obj.store_attr(tx, name, value)
        return
    if isinstance(obj, UserDefinedObjectVariable) and obj.can_store_attr(name):
        tx.output.attr_stores[(id(obj.value), name)] = (obj, value, obj.value)
        return
    raise Unsupported(f"assignment to attribute {name!r} of {obj}")


def _user_attr_method(cls, name):
    """The class's own Python __setattr__ / __delattr__ (None when it is
    object's); Unsupported for a C or skipped one."""
    from .kinds import is_skipped_function
    fn = getattr_static(cls, name)
    if fn is object.__dict__[name]:
        return None
    if isinstance(fn, types.FunctionType) and not is_skipped_function(fn) and \
            not (fn.__module__ or "").startswith("torch."):
        return fn
    raise Unsupported(f"{cls.__name__}.{name} is not traceable")


class GenericAttrOpVariable(VariableTracker):
    """object.__getattribute__ / __setattr__ / __delattr__ bound to an
    object the traced code made (what `super().__setattr__(k, v)` reaches
    in a class that renames attributes first): the plain operation on its
    attributes."""

    def __init__(self, obj, op):
        super().__init__(None)
        self.obj = obj
        self.op = op

    def call(self, tx, args, kwargs):
        if kwargs or not args or not args[0].is_python_constant() or \
                type(args[0].as_python_constant()) is not str:
            raise Unsupported(f"object.{self.op} with a non-constant name")
        name = args[0].as_python_constant()
        if self.op == "__getattribute__" and len(args) == 1:
            return self.obj.generic_getattr(tx, name)
        if self.op == "__setattr__" and len(args) == 2:
            self.obj.plain_store(tx, name, args[1])
            return ConstantVariable(None)
        if self.op == "__delattr__" and len(args) == 1:
            self.obj.plain_delete(name)
            return ConstantVariable(None)
        raise Unsupported(f"object.{self.op} with {len(args)} arguments")


def _rebuild_object(cls, attrs):
    """Run time: an instance of `cls` made inside a compiled frame, with the
    instance attributes the trace gave it (its __init__ ran at trace time)."""
    obj = object.__new__(cls)
    obj.__dict__.update(attrs)
    return obj


def _rebuild_module(cls, attrs):
    """Run time: a state-only nn.Module subclass made inside a compiled
    frame (transformers' DynamicCache): nn.Module's own state, then the
    instance attributes the trace gave it."""
    obj = object.__new__(cls)
    torch.nn.Module.__init__(obj)
    obj.__dict__.update(attrs)
    return obj


# the attributes nn.Module.__init__ gives an instance that traced code reads
_MODULE_INIT_ATTRS = {"training": True}
_MODULE_OVERRIDES = ("__new__", "__getattribute__", "__setattr__", "__getattr__", "__delattr__",
                     "__slots__", "__call__", "_call_impl", "forward", "__init_subclass__")


def is_state_module_class(cls):
    """A user subclass of nn.Module that only holds Python state, made and
    filled by the traced code (transformers' DynamicCache: lists of tensors
    and a counter): no forward, no attribute protocol of its own, Python
    __init__s down to nn.Module's. Its attributes must not be parameters,
    buffers or modules (NewObjectVariable.store_attr checks)."""
    return plain_module_subclass(cls, _MODULE_OVERRIDES) and \
        torch.nn.Module.__mro__ == cls.__mro__[-len(torch.nn.Module.__mro__):]


def plain_module_subclass(cls, overrides):
    """`cls` a user nn.Module subclass (metaclass type, not torch's or
    dynamo's own) whose classes down to nn.Module define none of
    `overrides` and only Python __init__s the tracer follows."""
    from .kinds import is_skipped_function
    if not isinstance(cls, type) or type(cls) is not type or not issubclass(cls, torch.nn.Module):
        return False
    if (cls.__module__ or "").split(".")[0] in ("torch", "dynamo"):
        return False
    for k in cls.__mro__:
        if k is torch.nn.Module:
            break
        if any(name in k.__dict__ for name in overrides):
            return False
        init = k.__dict__.get("__init__")
        if init is not None and (not isinstance(init, types.FunctionType) or is_skipped_function(init)):
            return False
    return True


def is_plain_user_class(cls):
    """Classes whose construction the tracer can follow: defined in Python
    by the user (not torch, not a skipped module; of metaclass type or
    abc.ABCMeta, with no abstract method left), made by object.__new__,
    with a plain instance __dict__ and attribute protocol."""
    import abc
    from .kinds import is_skipped_function
    if not isinstance(cls, type) or type(cls) not in (type, abc.ABCMeta) or cls.__module__ == "builtins":
        return False
    if getattr(cls, "__abstractmethods__", None):    # cannot be made: eager raises TypeError
        return False
    from ...skipfiles import is_inlined_torch_class
    if (cls.__module__ or "").split(".")[0] in ("torch", "dynamo") and \
            not is_inlined_torch_class(cls) or issubclass(cls, torch.nn.Module):
        return False
    if any(k.__new__ is not object.__new__ for k in cls.__mro__[:-1]) or \
            cls.__mro__[-1] is not object:
        return False
    if "__slots__" in cls.__dict__ or cls.__getattribute__ is not object.__getattribute__ \
            or cls.__setattr__ is not object.__setattr__:
        return False
    init = cls.__init__
    if init is not object.__init__ and (not isinstance(init, types.FunctionType)
                                        or is_skipped_function(init) and not followed_stdlib_class(cls)):
        return False
    return True


def followed_stdlib_class(cls):
    """collections.UserDict (and subclasses of it): a dict kept in
    `self.data` by plain Python methods of the standard library, made by
    model code (Gemma 3n's shared KV states) and followed like user code."""
    import collections
    return issubclass(cls, collections.UserDict)


class NewObjectVariable(VariableTracker):
    """An instance of a plain user class constructed by the traced code
    (`Foo(a)`): __init__ is inlined with this as `self`; attribute stores
    and reads are tracked in `attrs` (name -> VT); methods, class and static
    methods, properties and operator dunders are inlined. If the object
    outlives the trace it is rebuilt as a fresh instance with those
    attributes (no __init__ runs again)."""
    built_once = True

    def __init__(self, cls, cls_vt):
        super().__init__(None)
        self.cls = cls
        self.cls_vt = cls_vt
        self.attrs = {}
        # a state-only nn.Module subclass (is_state_module_class)
        self.is_module = issubclass(cls, torch.nn.Module)
        if self.is_module:
            from .base import ConstantVariable
            self.attrs.update({k: ConstantVariable(v) for k, v in _MODULE_INIT_ATTRS.items()})

    @classmethod
    def construct(cls, tx, cls_vt, args, kwargs):
        from .functions import UserMethodVariable
        obj = cls(cls_vt.value, cls_vt)
        init = cls_vt.value.__init__
        init_src = AttrSource(cls_vt.source, "__init__") if cls_vt.source is not None else None
        if init_src is not None:
            # __init__ replaced (or added) on the class recompiles
            tx.output.add_guard(init_src, ID_MATCH, init)
        if init is object.__init__:
            if args or kwargs:
                raise Unsupported(f"{cls_vt.value.__name__}() takes no arguments")
        else:
            UserMethodVariable(init, obj, fn_source=init_src).call(tx, args, kwargs)
        return obj

    def python_type(self):
        return self.cls

    def truth(self, tx):
        if hasattr(self.cls, "__bool__") or hasattr(self.cls, "__len__"):
            return self.call_method(tx, "__bool__" if hasattr(self.cls, "__bool__") else "__len__",
                                    [], {}).truth(tx)
        return True

    def var_getattr(self, tx, name):
        """`obj.name`: the class's own Python __getattribute__ inlined (a
        copied config that renames attributes), else the generic read."""
        getattribute = user_getattribute(self.cls)
        if getattribute is None:
            return self.generic_getattr(tx, name)
        from .functions import UserMethodVariable
        fn_src = None
        if self.cls_vt.source is not None:
            # the class's attribute (a plain function read off a class is itself)
            fn_src = AttrSource(self.cls_vt.source, "__getattribute__")
            tx.output.add_guard(fn_src, ID_MATCH, getattribute)
        return UserMethodVariable(getattribute, self, fn_source=fn_src).call(
            tx, [ConstantVariable(name)], {})

    def generic_getattr(self, tx, name):
        """object.__getattribute__(obj, name): instance attributes, then
        the class's."""
        from .kinds import ObservedAttributeError
        from .functions import UserFunctionVariable, UserMethodVariable
        if name in self.attrs:
            return self.attrs[name]
        if name == "__class__":
            return self.cls_vt
        if name == "__dict__" and not self.is_module:
            from .containers import DictVariable
            view = DictVariable({})
            view.items = self.attrs             # a live view: stores through it are the object's
            return view
        try:
            static = getattr_static(self.cls, name)
        except AttributeError:
            raise ObservedAttributeError(f"{self.cls.__name__} has no attribute {name!r}") from None
        src = AttrSource(self.cls_vt.source, name) if self.cls_vt.source is not None else None
        fn = self._class_function(tx, static, src)
        if isinstance(static, staticmethod):
            return UserFunctionVariable(static.__func__, fn)
        if isinstance(static, classmethod):
            return UserMethodVariable(static.__func__, self.cls_vt, fn_source=fn)
        if isinstance(static, property):
            return UserFunctionVariable(static.fget, fn).call(tx, [self], {})
        if isinstance(static, types.FunctionType):
            return UserMethodVariable(static, self, fn_source=fn)
        return tx.wrap(getattr(self.cls, name), src)

    @staticmethod
    def _class_function(tx, static, src):
        """The source of the function a class attribute found as `static`
        runs (a method, staticmethod, classmethod or property getter),
        guarded by identity: the instance is new on every call but its
        class is not, so replacing the method (or property, ...) on the
        class, or on a base class under it, recompiles. None without a
        source (a class the trace made) or for another kind of attribute."""
        if src is None:
            return None
        if isinstance(static, (types.FunctionType, staticmethod)):
            fn, fn_src = getattr(static, "__func__", static), src     # A.m is the function
        elif isinstance(static, classmethod):
            fn, fn_src = static.__func__, AttrSource(src, "__func__")  # A.m is a new bound method
        elif isinstance(static, property):
            tx.output.add_guard(src, ID_MATCH, static)                 # A.p is the property,
            return AttrSource(src, "fget")                             # its fget read-only
        else:
            return None
        tx.output.add_guard(fn_src, ID_MATCH, fn)
        return fn_src

    def store_attr(self, tx, name, value):
        """`obj.name = value`: the class's own Python __setattr__ inlined,
        else the plain store."""
        setattr_fn = None if self.is_module else _user_attr_method(self.cls, "__setattr__")
        if setattr_fn is None:
            self.plain_store(tx, name, value)
            return
        from .functions import UserMethodVariable
        UserMethodVariable(setattr_fn, self).call(tx, [ConstantVariable(name), value], {})

    def delete_attr(self, tx, name):
        """`del obj.name` / delattr: the class's own __delattr__ inlined, else
        the plain delete (Unsupported for a name the instance lacks)."""
        delattr_fn = None if self.is_module else _user_attr_method(self.cls, "__delattr__")
        if delattr_fn is None:
            self.plain_delete(name)
            return
        from .functions import UserMethodVariable
        UserMethodVariable(delattr_fn, self).call(tx, [ConstantVariable(name)], {})

    def plain_delete(self, name):
        if name not in self.attrs:
            raise Unsupported(f"deleting attribute {name!r} that a {self.cls.__name__} "
                              f"made in the frame lacks")
        del self.attrs[name]

    def plain_store(self, tx, name, value):
        """object.__setattr__: the attribute is `value` from now on."""
        if self.is_module:
            from .kinds import NNModuleVariable
            from .tensor import TensorVariable
            if isinstance(value, (NNModuleVariable, NewObjectVariable)) and \
                    issubclass(value.python_type(), torch.nn.Module) or \
                    isinstance(value, TensorVariable) or name.startswith("_parameters") or \
                    name.startswith(("_buffers", "_modules")):
                # nn.Module.__setattr__ would register it: not plain state
                raise Unsupported(f"storing a tensor or module as attribute {name!r} of a "
                                  f"{self.cls.__name__} made in the frame")
        self.attrs[name] = value

    def call_method(self, tx, name, args, kwargs):
        return self.var_getattr(tx, name).call(tx, args, kwargs)

    def call(self, tx, args, kwargs):
        return self.call_method(tx, "__call__", args, kwargs)

    def reconstruct(self, cg):
        from .containers import DictVariable
        cg.load_const(_rebuild_module if self.is_module else _rebuild_object)
        cg.reconstruct(self.cls_vt)
        cg.reconstruct(DictVariable(dict(self.attrs)))
        cg.call(2)

    def __repr__(self):
        return f"NewObjectVariable({self.cls.__name__})"


class NoopInitVariable(VariableTracker):
    """object.__init__ reached through super() by an object made in the
    frame: nothing to do."""

    def call(self, tx, args, kwargs):
        from .base import ConstantVariable
        return ConstantVariable(None)
