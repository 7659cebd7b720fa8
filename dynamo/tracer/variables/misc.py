"""Python modules, user-defined objects, functions the tracer must not
enter, and frame values passed through untouched.
"""
import inspect
import types

from ...exc import Unsupported
from ...guards import AttrSource
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
        if isinstance(static, staticmethod):
            return UserFunctionVariable(static.__func__)
        if isinstance(static, classmethod):
            return UserMethodVariable(static.__func__, ClassVariable(cls))
        if isinstance(static, property):
            return UserFunctionVariable(static.fget).call(tx, [self], {})
        if inspect.isfunction(static):
            if (getattr(static, "__module__", "") or "").startswith("torch."):
                return SkippedFunctionVariable(getattr(obj, name), src)
            return UserMethodVariable(static, self)
        return wrap(tx, getattr(obj, name), src)

    def call(self, tx, args, kwargs):
        from .functions import UserMethodVariable
        call = inspect.getattr_static(type(self.value), "__call__", None)
        if inspect.isfunction(call):
            return UserMethodVariable(call, self).call(tx, args, kwargs)
        raise Unsupported(f"calling a {type(self.value).__name__} instance")

    def __repr__(self):
        return f"UserDefinedObjectVariable({type(self.value).__name__})"
