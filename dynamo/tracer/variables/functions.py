"""Callables the tracer can follow: user functions and closures (inlined),
methods bound to traced values, methods of constants.

Inlining itself is the translator's job (`tx.inline_call`); these classes
only carry what it needs: code, globals, closure cells, defaults and the
bound `self`.
"""
import collections.abc
import types

import torch

from ...bytecode import create_make_function
from ...exc import Unsupported
from ...guards import AttrSource, ItemSource
from .base import ClassVariable, ConstantVariable, VariableTracker, is_nan, nan_inside


class BaseUserFunctionVariable(VariableTracker):
    """Something with a code object to inline."""

    def get_code(self):
        raise NotImplementedError

    def python_type(self):
        return types.FunctionType

    def truth(self, tx):
        return True

    def call(self, tx, args, kwargs):
        return tx.inline_call(self, list(args), dict(kwargs))


# attributes of a function object that are plain constants of the function
# (its identity is guarded, FUNCTION_MATCH, wherever it came from a source)
_FUNCTION_CONST_ATTRS = ("__name__", "__qualname__", "__module__", "__doc__", "__code__")


def function_attr(fn_var, fn, name):
    """`fn.<name>` for the constant attributes above and `__class__` (a
    function's type cannot change: torchvision's API-usage logging reads it),
    or None."""
    if name in _FUNCTION_CONST_ATTRS:
        return ConstantVariable(getattr(fn, name))
    if name == "__class__":
        return ClassVariable(type(fn))
    return None


class UserFunctionVariable(BaseUserFunctionVariable):
    """A Python function object that exists outside the trace."""

    def var_getattr(self, tx, name):
        out = function_attr(self, self.fn, name)
        if out is not None:
            return out
        if name == "__wrapped__" and hasattr(self.fn, "__wrapped__"):
            return tx.wrap(self.fn.__wrapped__,
                        AttrSource(self.source, name) if self.source is not None else None)
        return super().var_getattr(tx, name)

    def __init__(self, fn, source=None):
        super().__init__(source)
        self.fn = fn

    def get_code(self):
        return self.fn.__code__

    def get_globals(self):
        return self.fn.__globals__

    def get_defaults(self):
        return self.fn.__defaults__ or (), self.fn.__kwdefaults__ or {}

    def closure_cells(self, tx):
        """CellVariables for the function's free variables."""
        from .base import CellVariable
        cells = {}
        for i, (name, cell) in enumerate(zip(self.fn.__code__.co_freevars,
                                             self.fn.__closure__ or ())):
            known = tx.output.closure_cells.get(id(cell))
            if known is not None and known[0] is cell:
                cells[name] = known[1]
                continue
            src = None
            if self.source is not None:
                src = AttrSource(ItemSource(AttrSource(self.source, "__closure__"), i),
                                 "cell_contents")
            try:
                contents = cell.cell_contents
            except ValueError:
                cells[name] = CellVariable(None)
                continue
            cells[name] = CellVariable(tx.wrap(contents, src), src)
            cells[name].cell = cell
            tx.output.closure_cells[id(cell)] = (cell, cells[name])
        return cells

    def as_python_constant(self):
        return self.fn

    def __repr__(self):
        return f"UserFunctionVariable({self.fn.__qualname__})"


_LRU_WARNED = set()       # codes of lru_cache'd functions whose bypass was logged


def is_lru_cache_wrapper(value):
    """A functools.lru_cache / functools.cache wrapper of a Python function."""
    import functools
    return isinstance(value, functools._lru_cache_wrapper) and \
        isinstance(getattr(value, "__wrapped__", None), types.FunctionType)


class LruCacheWrapperVariable(VariableTracker):
    """A functools.lru_cache / functools.cache wrapper (`wrapper`, the object
    itself, guarded by FUNCTION_MATCH) of a Python function. A call traces
    the wrapped function, as torch.compile does: the cache is neither read
    nor filled, so a cached function whose result can change for the same
    arguments (one that reads state) is traced for what it returns now. A
    wrapped function marked constant (dynamo.assume_constant_result, or
    torch's `_dynamo_marked_constant`, which transformers 5.x puts under
    the lru_cache of its install probes) is run at trace time and folded.
    As a value (stored, returned) it stays the wrapper."""

    def __init__(self, wrapper, source=None):
        super().__init__(source)
        self.wrapper = wrapper

    def python_type(self):
        return type(self.wrapper)

    def as_python_constant(self):
        return self.wrapper

    def truth(self, tx):
        return True

    def _wrapped(self):
        src = AttrSource(self.source, "__wrapped__") if self.source is not None else None
        return UserFunctionVariable(self.wrapper.__wrapped__, src)

    def call(self, tx, args, kwargs):
        from ... import decorators
        if decorators.is_assumed_constant(self.wrapper):    # the directive on the wrapper itself
            return tx.output.fold_constant_call(tx, self.wrapper, args, kwargs)
        fn = self.wrapper.__wrapped__
        if not decorators.is_assumed_constant(fn) and fn.__code__ not in _LRU_WARNED:
            _LRU_WARNED.add(fn.__code__)
            import logging
            logging.getLogger("dynamo").warning(
                "%s is wrapped by functools.lru_cache; the trace follows the function "
                "and bypasses its cache (a cached result that can change for the same "
                "arguments is read when the frame is compiled; mark a function whose result "
                "never changes with dynamo.assume_constant_result to fold it)",
                fn.__qualname__)
        return tx.inline_call(self._wrapped(), list(args), dict(kwargs))

    def var_getattr(self, tx, name):
        if name == "__wrapped__":
            return self._wrapped()
        if name in ("__name__", "__qualname__", "__module__", "__doc__"):
            return ConstantVariable(getattr(self.wrapper, name))
        raise Unsupported(f"attribute {name} of the lru_cache wrapper of "
                          f"{self.wrapper.__wrapped__.__qualname__}")

    def reconstruct(self, cg):
        if self.source is not None:
            cg.load_source(self.source)
        else:
            cg.load_const(self.wrapper)

    def __repr__(self):
        return f"LruCacheWrapperVariable({self.wrapper.__wrapped__.__qualname__})"


class NestedFunctionVariable(BaseUserFunctionVariable):
    """A function made by MAKE_FUNCTION inside traced code (lambda, nested
    def, comprehension). Its cells are the tracer's CellVariables."""
    built_once = True

    def __init__(self, code, f_globals, globals_source, defaults, kwdefaults, closure,
                 annotations=None):
        super().__init__(None)
        self.code = code
        self.f_globals = f_globals
        self.globals_source = globals_source
        self.defaults = defaults          # list of VTs
        self.kwdefaults = kwdefaults      # dict name -> VT
        self.closure = closure            # list of CellVariable
        self.annotations = annotations    # the tuple VT MAKE_FUNCTION took, or None

    def get_code(self):
        return self.code

    def get_globals(self):
        return self.f_globals

    def get_defaults(self):
        return tuple(self.defaults), dict(self.kwdefaults)

    def closure_cells(self, tx):
        return dict(zip(self.code.co_freevars, self.closure))

    def var_getattr(self, tx, name):
        if name in ("__name__", "__qualname__"):
            return ConstantVariable(getattr(self.code, "co_" + name.strip("_")))
        if name == "__code__":
            return ConstantVariable(self.code)
        if name == "__module__":
            return ConstantVariable(self.f_globals.get("__name__"))
        if name == "__class__":
                return ClassVariable(types.FunctionType)
        return super().var_getattr(tx, name)

    def reconstruct(self, cg):
        """The function again, in the rewritten code, over the same cells
        (CellVariable.reconstruct: the frame's own cells with the values
        traced into them, the real cells of functions passed in, one new
        cell per codegen for cells made by inlined code): MAKE_FUNCTION for a
        function of the compiled frame's module; for another module's,
        types.FunctionType over that module's globals (keyword-only
        defaults and annotations are not rebuilt there)."""
        if self.globals_source is not None:
            self._reconstruct_foreign(cg)
            return
        if self.f_globals is not getattr(cg, "f_globals", None):
            raise Unsupported(f"cannot rebuild nested function {self.code.co_name} of another module")
        flags = 0
        if self.defaults:
            for d in self.defaults:
                cg.reconstruct(d)
            cg.emit("BUILD_TUPLE", arg=len(self.defaults))
            flags |= 0x01
        if self.kwdefaults:
            for k, v in self.kwdefaults.items():
                cg.load_const(k)
                cg.reconstruct(v)
            cg.emit("BUILD_MAP", arg=len(self.kwdefaults))
            flags |= 0x02
        if self.annotations is not None:
            cg.reconstruct(self.annotations)
            flags |= 0x04
        if self.closure:
            for cell in self.closure:
                cg.reconstruct(cell)
            cg.emit("BUILD_TUPLE", arg=len(self.closure))
            flags |= 0x08
        cg.load_const(self.code)
        for inst in create_make_function(flags):
            cg.append(inst)

    def _reconstruct_foreign(self, cg):
        if self.kwdefaults:
            raise Unsupported(f"cannot rebuild nested function {self.code.co_name} "
                              "of another module with keyword-only defaults")
        cg.load_const(types.FunctionType)
        cg.load_const(self.code)
        cg.load_source(self.globals_source)
        cg.load_const(self.code.co_name)
        if self.defaults:
            for v in self.defaults:
                cg.reconstruct(v)
            cg.emit("BUILD_TUPLE", arg=len(self.defaults))
        else:
            cg.load_const(None)
        if self.closure:
            for cell in self.closure:
                cg.reconstruct(cell)
            cg.emit("BUILD_TUPLE", arg=len(self.closure))
        else:
            cg.load_const(None)
        cg.call(5)

    def __repr__(self):
        return f"NestedFunctionVariable({self.code.co_name})"


def _mapping_get(tx, obj, args):
    """collections.abc.Mapping.get (`try: return self[key]` / `except
    KeyError: return default`) of a user mapping: its __getitem__ inlined, a
    missing key (known at trace time, guarded where the mapping's data came
    from) answering the default. transformers' AttentionInterface.get_interface
    reaches it through super().get."""
    from .containers import ObservedKeyError
    try:
        return obj.call_method(tx, "__getitem__", [args[0]], {})
    except ObservedKeyError:
        return args[1] if len(args) > 1 else ConstantVariable(None)


class UserMethodVariable(BaseUserFunctionVariable):
    """`fn` bound to the traced value `obj` (a user method of a module or
    object): calls inline fn(obj, *args). `fn_source`, when known, is where
    the function itself lives (guards on its code, defaults, closure)."""

    def __init__(self, fn, obj, source=None, fn_source=None):
        super().__init__(source)
        self.fn = fn
        self.obj = obj
        self.fn_source = fn_source

    def call(self, tx, args, kwargs):
        if self.fn is collections.abc.Mapping.get and not kwargs and 1 <= len(args) <= 2:
            return _mapping_get(tx, self.obj, args)
        fn_vt = UserFunctionVariable(self.fn, self.fn_source)
        return tx.inline_call(fn_vt, [self.obj, *args], dict(kwargs))

    def var_getattr(self, tx, name):
        out = function_attr(self, self.fn, name)
        if out is not None:
            return out
        if name == "__func__":
            return UserFunctionVariable(self.fn)
        if name == "__self__":
            return self.obj
        return super().var_getattr(tx, name)

    def reconstruct(self, cg):
        if self.source is not None:
            cg.load_source(self.source)
            return
        cg.reconstruct(self.obj)
        cg.emit("LOAD_ATTR", argval=self.fn.__name__)

    def __repr__(self):
        return f"UserMethodVariable({self.fn.__qualname__})"


class BoundMethodVariable(VariableTracker):
    """`obj.name` for a traced value whose methods the tracer implements
    itself (tensors, lists, dicts): calling it is obj.call_method(name)."""

    def __init__(self, obj, name):
        super().__init__(None)
        self.obj = obj
        self.name = name

    def call(self, tx, args, kwargs):
        return self.obj.call_method(tx, self.name, list(args), dict(kwargs))

    def truth(self, tx):
        return True

    def reconstruct(self, cg):
        cg.reconstruct(self.obj)
        cg.emit("LOAD_ATTR", argval=self.name)

    def __repr__(self):
        return f"BoundMethodVariable({self.obj}.{self.name})"


# methods of constants that are safe to run at trace time
_PURE_CONSTANT_METHODS = {
    "format", "join", "split", "strip", "lower", "upper", "startswith", "endswith",
    "replace", "index", "count", "numel", "bit_length", "is_integer", "__getitem__",
    "__len__", "__contains__", "rstrip", "lstrip", "get", "keys", "values", "items",
    # str and bytes
    "encode", "decode", "find", "rfind", "rindex", "rsplit", "partition", "rpartition",
    "splitlines", "removeprefix", "removesuffix", "title", "capitalize", "casefold",
    "swapcase", "center", "ljust", "rjust", "zfill", "expandtabs", "isdigit", "isalpha",
    "isalnum", "isspace", "isupper", "islower", "isnumeric", "isdecimal", "isidentifier",
    "istitle", "isascii", "isprintable", "hex",
}


class ConstantMethodVariable(VariableTracker):
    """A method of a Python constant, run at trace time on constant args."""

    def __init__(self, obj, name):
        super().__init__(None)
        self.obj = obj
        self.name = name

    def call(self, tx, args, kwargs):
        if self.name not in _PURE_CONSTANT_METHODS and not isinstance(self.obj.value, (int, float)):
            raise Unsupported(f"method {type(self.obj.value).__name__}.{self.name}")
        try:
            a = [x.as_python_constant() for x in args]
            k = {n: v.as_python_constant() for n, v in kwargs.items()}
        except Unsupported:
            raise Unsupported(f"{type(self.obj.value).__name__}.{self.name} with non-constant arguments")
        if self.name in ("index", "count", "__contains__") and \
                any(is_nan(v) or nan_inside(v) for v in (self.obj.value, *a)):
            # they compare identity first: not the trace's objects' to decide
            raise Unsupported(f"{type(self.obj.value).__name__}.{self.name} with a NaN")
        return ConstantVariable(getattr(self.obj.value, self.name)(*a, **k))

    def reconstruct(self, cg):
        cg.reconstruct(self.obj)
        cg.emit("LOAD_ATTR", argval=self.name)


class SuperVariable(VariableTracker):
    """`super()` / `super(cls, obj)` in traced code: attribute reads look
    `name` up in type(obj).__mro__ after `cls` (or obj's own MRO when obj
    is a class, for classmethods) and bind what they find to `obj`, as
    super's own __getattribute__ does. Only functions, classmethods,
    staticmethods and properties are followed; anything else (slot
    wrappers such as object.__getattribute__) is Unsupported, so the
    read runs eagerly."""

    def __init__(self, cls, obj):
        super().__init__(None)
        self.cls = cls
        self.obj = obj

    def python_type(self):
        return super

    def truth(self, tx):
        return True

    def var_getattr(self, tx, name):
        import inspect
        from .kinds import ObservedAttributeError
        obj = self.obj
        if isinstance(obj, ClassVariable) and isinstance(obj.value, type) and \
                issubclass(obj.value, self.cls):
            owner = obj.value
        else:
            owner = obj.python_type()
        mro = owner.__mro__
        if self.cls not in mro:
            raise Unsupported(f"super({self.cls.__name__}, {obj}): obj is not an instance")
        for base in mro[mro.index(self.cls) + 1:]:
            if name in base.__dict__:
                attr = base.__dict__[name]
                break
        else:
            raise ObservedAttributeError(f"'super' object has no attribute {name!r}")
        from .kinds import (NewObjectVariable, NoopInitVariable, SkippedFunctionVariable,
                           UserDefinedObjectVariable)
        if name == "__init__" and isinstance(obj, NewObjectVariable) and \
                (base is object or (base is torch.nn.Module and obj.is_module)):
            # an object the frame made: nothing to do (a module's own state
            # is made when it is rebuilt, see misc._rebuild_module)
            return NoopInitVariable()
        if isinstance(attr, staticmethod):
            return UserFunctionVariable(attr.__func__)
        if isinstance(attr, classmethod):
            return UserMethodVariable(attr.__func__, ClassVariable(owner))
        if isinstance(attr, property) and inspect.isfunction(attr.fget):
            return UserFunctionVariable(attr.fget).call(tx, [obj], {})
        if inspect.isfunction(attr):
            from .kinds import is_skipped_function
            # torch's own methods run for real (Module.__setattr__ and the
            # like), except a torch.nn module's forward, which is traced
            from ...skipfiles import is_inlined_torch_code
            in_torch = (attr.__module__ or "").startswith("torch.") and \
                not is_inlined_torch_code(attr.__code__)
            if not is_skipped_function(attr) and (not in_torch or name == "forward"):
                if isinstance(obj, ClassVariable):
                    return UserFunctionVariable(attr)
                return UserMethodVariable(attr, obj)
        if isinstance(obj, NewObjectVariable) and not obj.is_module and \
                name in ("__getattribute__", "__setattr__", "__delattr__") and \
                attr is object.__dict__[name]:
            from .kinds import GenericAttrOpVariable
            return GenericAttrOpVariable(obj, name)
        # a torch or C method (a slot wrapper such as object.__getattribute__):
        # the real bound attribute, whose call breaks the graph and runs eagerly
        real = self._real_object()
        if real is None:
            raise Unsupported(f"super().{name} ({type(attr).__name__})")
        if name in SuperDictReadVariable.READS and isinstance(real, dict) and \
                base in (dict, collections.OrderedDict) and \
                isinstance(obj, UserDefinedObjectVariable):
            return SuperDictReadVariable(getattr(super(self.cls, real), name), self, name)
        from .base import GENERIC_GETATTRIBUTE
        from .kinds import NNModuleVariable
        if name == "__call__" and attr is torch.nn.Module.__dict__["__call__"] and \
                isinstance(obj, NNModuleVariable):
            return SuperModuleCallVariable(getattr(super(self.cls, real), name), self, name)
        if name == "__getattribute__" and attr in GENERIC_GETATTRIBUTE and \
                isinstance(obj, UserDefinedObjectVariable):
            return SuperGenericGetattributeVariable(getattr(super(self.cls, real), name), self, name)
        return SuperBoundVariable(getattr(super(self.cls, real), name), self, name)

    def _real_object(self):
        """The object super() binds, when the tracer holds the real one."""
        from .kinds import UserDefinedObjectVariable
        from .kinds import NNModuleVariable
        if isinstance(self.obj, NNModuleVariable):
            return self.obj.module
        if isinstance(self.obj, (UserDefinedObjectVariable, ClassVariable)):
            return self.obj.value
        return None

    def reconstruct(self, cg):
        cg.load_const(super)
        cg.load_const(self.cls)
        cg.reconstruct(self.obj)
        cg.call(2)

    def __repr__(self):
        return f"SuperVariable({self.cls.__name__}, {self.obj})"


class SuperBoundVariable(VariableTracker):
    """super().name that is a C method bound to the object (a slot wrapper
    such as object.__setattr__): calling it runs eagerly after a break, and
    the generated code rebuilds it as super(cls, obj).name from the frame's
    values. Never a constant: the bound method holds the object of the call
    that was traced, and a constant would act on that object on every later
    call."""

    def __init__(self, fn, sup, name):
        super().__init__(None)
        self.fn, self.sup, self.name = fn, sup, name

    def python_type(self):
        return type(self.fn)

    def truth(self, tx):
        return True

    def call(self, tx, args, kwargs):
        raise Unsupported(f"call to super().{self.name} (a C method; runs eagerly)")

    def reconstruct(self, cg):
        cg.reconstruct(self.sup)
        cg.emit("LOAD_ATTR", argval=self.name)

    def __repr__(self):
        return f"SuperBoundVariable({self.name})"


class SuperDictReadVariable(SuperBoundVariable):
    """super().__getitem__ (or another read of READS) of a dict subclass
    whose own method defers to dict's (a table that builds what it holds:
    transformers' ACT2FN): the read is answered from the dict's items at
    trace time. Valid while the items stay equal: the object is guarded by
    EQUALS_MATCH against a snapshot of its class, which compares them
    without calling the subclass's __getitem__ (which a guard's item fetch
    would). Only for a table of constants, classes and functions (and
    tuples and dicts of them); anything else runs eagerly, as before."""
    READS = frozenset({"__getitem__", "get", "__contains__", "__len__", "keys", "values",
                       "items"})

    def call(self, tx, args, kwargs):
        from .containers import guarded_dict_view
        view = guarded_dict_view(tx, self.sup.obj)
        if view is None:
            return super().call(tx, args, kwargs)
        return view.call_method(tx, self.name, args, kwargs)


class SuperGenericGetattributeVariable(SuperBoundVariable):
    """super().__getattribute__ of a user object where it is the generic
    lookup (object's): calling it with a constant name reads the attribute
    as object.__getattribute__ does (a user __getattribute__ that renames
    or filters, then defers to its base)."""

    def call(self, tx, args, kwargs):
        if len(args) != 1 or kwargs or not args[0].is_python_constant() or \
                type(args[0].as_python_constant()) is not str:
            return super().call(tx, args, kwargs)
        return self.sup.obj.generic_getattr(tx, args[0].as_python_constant(), with_getattr=False)


class SuperModuleCallVariable(SuperBoundVariable):
    """super().__call__ of a module whose class overrides __call__ (a
    layer that checks its flags first), reaching nn.Module's: calling it
    is the module's ordinary call (hooks, forward inlined)."""

    def call(self, tx, args, kwargs):
        return self.sup.obj.module_call(tx, args, kwargs)


class SignatureVariable(VariableTracker):
    """inspect.signature(fn) of a traced function: only `parameters` is
    read, as a dict from parameter name to an opaque Parameter."""

    def __init__(self, names):
        super().__init__(None)
        self.names = list(names)

    def truth(self, tx):
        return True

    def var_getattr(self, tx, name):
        from .containers import DictVariable
        if name == "parameters":
            return DictVariable({n: ConstantVariable(n) for n in self.names})
        raise Unsupported(f"attribute {name} of an inspect.Signature")


def _rebuild_partial(func, args, keywords):
    """The rewritten code's way back to a partial the trace made."""
    import functools
    return functools.partial(func, *args, **keywords)


class PartialVariable(VariableTracker):
    """functools.partial(func, *args, **keywords), passed in or made by the
    traced code: calling it calls `func` (any VT) with the stored arguments
    first, so `partial(F.gelu, approximate="tanh")` is traced as the gelu
    call it is. `args` is a list and `keywords` a dict of VTs."""

    def __init__(self, func, args, keywords, source=None):
        super().__init__(source)
        self.func = func
        self.args = list(args)
        self.keywords = dict(keywords)

    @classmethod
    def construct(cls, tx, args, kwargs):
        """`functools.partial(...)` called in the traced code."""
        if not args:
            raise Unsupported("functools.partial() without a function")
        func, rest = args[0], list(args[1:])
        if isinstance(func, PartialVariable):        # partial flattens a partial
            return cls(func.func, func.args + rest, {**func.keywords, **kwargs})
        return cls(func, rest, kwargs)

    def python_type(self):
        import functools
        return functools.partial

    def truth(self, tx):
        return True

    def call(self, tx, args, kwargs):
        return self.func.call(tx, [*self.args, *args], {**self.keywords, **kwargs})

    def var_getattr(self, tx, name):
        from .containers import DictVariable, TupleVariable
        if name == "func":
            return self.func
        if name == "args":
            return TupleVariable(list(self.args))
        if name == "keywords":
            return DictVariable({k: v for k, v in self.keywords.items()})
        raise Unsupported(f"attribute {name} of a functools.partial (func, args and keywords are "
                          "traced)")

    def reconstruct(self, cg):
        if self.source is not None:
            cg.load_source(self.source)
            return
        from .containers import DictVariable, TupleVariable
        cg.load_const(_rebuild_partial)
        cg.reconstruct(self.func)
        cg.reconstruct(TupleVariable(list(self.args)))
        cg.reconstruct(DictVariable(dict(self.keywords)))
        cg.call(3)

    def __repr__(self):
        return f"PartialVariable({self.func})"
