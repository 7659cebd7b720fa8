"""Callables the tracer can follow: user functions and closures (inlined),
methods bound to traced values, methods of constants.

Inlining itself is the translator's job (`tx.inline_call`); these classes
only carry what it needs: code, globals, closure cells, defaults and the
bound `self`.
"""
import types

from ...exc import Unsupported
from ...guards import AttrSource, ItemSource
from .base import ConstantVariable, VariableTracker


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


class UserFunctionVariable(BaseUserFunctionVariable):
    """A Python function object that exists outside the trace."""

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
        from .builder import wrap
        cells = {}
        for i, (name, cell) in enumerate(zip(self.fn.__code__.co_freevars,
                                             self.fn.__closure__ or ())):
            src = None
            if self.source is not None:
                src = AttrSource(ItemSource(AttrSource(self.source, "__closure__"), i),
                                 "cell_contents")
            try:
                contents = cell.cell_contents
            except ValueError:
                cells[name] = CellVariable(None)
                continue
            cells[name] = CellVariable(wrap(tx, contents, src), src)
        return cells

    def as_python_constant(self):
        return self.fn

    def __repr__(self):
        return f"UserFunctionVariable({self.fn.__qualname__})"


class NestedFunctionVariable(BaseUserFunctionVariable):
    """A function made by MAKE_FUNCTION inside traced code (lambda, nested
    def, comprehension). Its cells are the tracer's CellVariables."""

    def __init__(self, code, f_globals, globals_source, defaults, kwdefaults, closure):
        super().__init__(None)
        self.code = code
        self.f_globals = f_globals
        self.globals_source = globals_source
        self.defaults = defaults          # list of VTs
        self.kwdefaults = kwdefaults      # dict name -> VT
        self.closure = closure            # list of CellVariable

    def get_code(self):
        return self.code

    def get_globals(self):
        return self.f_globals

    def get_defaults(self):
        return tuple(self.defaults), dict(self.kwdefaults)

    def closure_cells(self, tx):
        return dict(zip(self.code.co_freevars, self.closure))

    def reconstruct(self, cg):
        raise Unsupported(f"cannot rebuild nested function {self.code.co_name} after a graph break")

    def __repr__(self):
        return f"NestedFunctionVariable({self.code.co_name})"


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
        fn_vt = UserFunctionVariable(self.fn, self.fn_source)
        return tx.inline_call(fn_vt, [self.obj, *args], dict(kwargs))

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
        return ConstantVariable(getattr(self.obj.value, self.name)(*a, **k))

    def reconstruct(self, cg):
        cg.reconstruct(self.obj)
        cg.emit("LOAD_ATTR", argval=self.name)
