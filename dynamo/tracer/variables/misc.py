"""Python modules, user-defined objects, functions the tracer must not
enter, and frame values passed through untouched.
"""
import inspect
import types

from ...exc import Unsupported
from ...guards import ID_MATCH, AttrSource, StaticAttrSource
from .base import (ClassVariable, VariableTracker, reconstruct_source_or_const,
                   require_plain_getattribute)


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
        from .builtin import ObservedAttributeError
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
        from .builder import wrap
        return wrap(tx, value, source)

    def __repr__(self):
        return f"PythonModuleVariable({self.module.__name__})"


class SkippedFunctionVariable(VariableTracker):
    """A callable the tracer must not enter (stdlib, numpy, scipy, unknown
    C functions, print): calling it is Unsupported, so the call runs
    eagerly after a graph break."""

    def __init__(self, fn, source=None):
        super().__init__(source)
        self.fn = fn

    @property
    def value(self):
        return self.fn

    def python_type(self):
        return type(self.fn)

    def truth(self, tx):
        return True

    def call(self, tx, args, kwargs):
        module = getattr(self.fn, "__module__", None) or "?"
        name = getattr(self.fn, "__qualname__", None) or getattr(self.fn, "__name__", repr(self.fn))
        raise Unsupported(f"call to {module}.{name} (not traceable; runs eagerly)")

    def var_getattr(self, tx, name):
        if self.source is None:
            raise Unsupported(f"attribute {name} of {self.fn!r:.40}")
        return SkippedFunctionVariable(getattr(self.fn, name), AttrSource(self.source, name))

    def reconstruct(self, cg):
        reconstruct_source_or_const(self, cg, self.fn)

    def __repr__(self):
        return f"SkippedFunctionVariable({getattr(self.fn, '__name__', self.fn)!s:.40})"


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
        from .builder import wrap
        from .builtin import ObservedAttributeError
        from .functions import UserFunctionVariable, UserMethodVariable
        obj, cls = self.value, type(self.value)
        src = AttrSource(self.source, name) if self.source is not None else None
        name = require_plain_getattribute(cls, name)     # the key a config maps it to
        if "__getattr__" in dir(cls) and not isinstance(inspect.getattr_static(cls, "__getattr__", None),
                                                        (types.WrapperDescriptorType, type(None))):
            if getattr(cls, "__getattr__", None) is not getattr(object, "__getattr__", None):
                raise Unsupported(f"{cls.__name__} defines __getattr__")
        try:
            static = inspect.getattr_static(obj, name)
        except AttributeError:
            raise ObservedAttributeError(f"{cls.__name__} has no attribute {name!r}") from None
        if isinstance(getattr(obj, "__dict__", None), dict) and name in obj.__dict__:
            return wrap(tx, obj.__dict__[name], src)
        if isinstance(static, (staticmethod, classmethod, property)):
            return class_attribute(tx, self, name, static)
        if inspect.isfunction(static):
            if (getattr(static, "__module__", "") or "").startswith("torch."):
                return SkippedFunctionVariable(getattr(obj, name), src)
            return class_attribute(tx, self, name, static)
        return wrap(tx, getattr(obj, name), src)

    def call(self, tx, args, kwargs):
        from .functions import UserMethodVariable
        call = inspect.getattr_static(type(self.value), "__call__", None)
        if inspect.isfunction(call):
            return UserMethodVariable(call, self).call(tx, args, kwargs)
        raise Unsupported(f"calling a {type(self.value).__name__} instance")

    def __repr__(self):
        return f"UserDefinedObjectVariable({type(self.value).__name__})"


def is_plain_class(cls):
    """A user class whose instances the tracer can build itself: default
    __new__, __setattr__, __getattribute__ and metaclass, no __slots__, no
    __getattr__, not a builtin/torch/dynamo type."""
    if type(cls) is not type or cls.__module__ in ("builtins",) or \
            (cls.__module__ or "").split(".")[0] in ("torch", "dynamo", "typing", "abc"):
        return False
    if any(b is not object and (b.__module__ == "builtins" or "__slots__" in vars(b))
           for b in cls.__mro__):
        return False
    get = inspect.getattr_static
    return (get(cls, "__new__") is object.__new__ and get(cls, "__setattr__") is object.__setattr__
            and get(cls, "__getattribute__") is object.__getattribute__
            and get(cls, "__getattr__", None) is None
            and (inspect.isfunction(get(cls, "__init__")) or get(cls, "__init__") is object.__init__))


class NewObjectVariable(VariableTracker):
    """An instance of a plain user class created by the traced code
    (`Cls(...)` with Cls.__init__ inlined). Its attributes live in `attrs`
    (STORE_ATTR writes them); methods and class attributes come from the
    class. It exists only inside the trace: it cannot be rebuilt in
    generated code, so it must not outlive the graph (a frame that returns
    it or keeps it across a break is not compiled)."""

    def __init__(self, cls):
        super().__init__(None)
        self.cls = cls
        self.attrs = {}

    @classmethod
    def create(cls, tx, klass, args, kwargs):
        from .functions import UserMethodVariable
        obj = cls(klass)
        init = inspect.getattr_static(klass, "__init__")
        if inspect.isfunction(init):
            UserMethodVariable(init, obj).call(tx, args, kwargs)
        elif args or kwargs:
            raise Unsupported(f"{klass.__name__}() takes no arguments")
        return obj

    def python_type(self):
        return self.cls

    def truth(self, tx):
        if hasattr(self.cls, "__bool__") or hasattr(self.cls, "__len__"):
            raise Unsupported(f"truth of {self.cls.__name__} instance")
        return True

    def store_attr(self, tx, name, value):
        self.attrs[name] = value

    def var_getattr(self, tx, name):
        from .builder import wrap
        from .builtin import ObservedAttributeError
        from .functions import UserFunctionVariable, UserMethodVariable
        if name in self.attrs:
            return self.attrs[name]
        if name == "__class__":
            return ClassVariable(self.cls)
        try:
            static = inspect.getattr_static(self.cls, name)
        except AttributeError:
            raise ObservedAttributeError(f"{self.cls.__name__} has no attribute {name!r}") from None
        if isinstance(static, staticmethod):
            return UserFunctionVariable(static.__func__)
        if isinstance(static, classmethod):
            return UserMethodVariable(static.__func__, ClassVariable(self.cls))
        if isinstance(static, property):
            return UserFunctionVariable(static.fget).call(tx, [self], {})
        if inspect.isfunction(static):
            return UserMethodVariable(static, self)
        return wrap(tx, getattr(self.cls, name), None)

    def call(self, tx, args, kwargs):
        from .functions import UserMethodVariable
        call = inspect.getattr_static(self.cls, "__call__", None)
        if inspect.isfunction(call):
            return UserMethodVariable(call, self).call(tx, args, kwargs)
        raise Unsupported(f"calling a {self.cls.__name__} instance")

    def __repr__(self):
        return f"NewObjectVariable({self.cls.__name__})"
