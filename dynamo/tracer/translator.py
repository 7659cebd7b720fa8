"""The symbolic bytecode interpreter: one method per opcode (CPython 3.11
to 3.13; the 3.12- and 3.13-only opcodes are marked).

InstructionTranslatorBase runs a code object over VariableTrackers (its
stack, locals and cells). InliningTranslator runs a called user function or
forward() until RETURN_VALUE and hands back the return value; it never
breaks the graph itself — an Unsupported inside it propagates to the
outermost frame, whose call instruction then becomes the break.
InstructionTranslator (in frame.py) is the outermost frame: it owns the
graph breaks and the rewritten code. Nothing here calls the backend.
"""
import dis
import opcode
import operator
import traceback
import types

import torch

from ..bytecode import FOR_ITER_EXIT, NULL_ABOVE_CALLABLE, PY312, decode_shared, shared_index
from ..exc import Unsupported
from ..guards import ID_MATCH, AttrSource, GlobalSource, ItemSource
from .variables import (CellVariable, ConstantVariable, DictVariable, GeneratorVariable,
                        GradModeVariable, ListIteratorVariable, ListVariable, NestedFunctionVariable, NullVariable,
                        PassthroughVariable, TensorVariable, TupleVariable, UserFunctionVariable,
                        WithExitVariable,
                        wrap, wrap_const)
from .variables.base import BINARY_OPS, COMPARE_OPS, FrameCellOwner, VariableTracker
from .variables.model_output import mapping_items
from .variables.symbolic import is_data_dependent
from .variables.tensor import ScalarOutputVariable
from .variables.symbolic import make_slice
from .variables.builtin import (BuiltinVariable, binary_op, compare_op, contains, getitem,
                                identical, unary_op)

MAX_INLINE_DEPTH = 24
_CO_VARARGS, _CO_VARKEYWORDS = 0x04, 0x08
_CO_GENERATOR_LIKE = 0x20 | 0x80 | 0x100 | 0x200
_CO_GENERATOR = 0x20
_NB_SYMBOL = [sym for _, sym in opcode._nb_ops]
# COMPARE_OP's "result to bool" bit (3.13), or 0
COMPARE_TO_BOOL = 16 if "TO_BOOL" in opcode.opmap else 0
_INTRINSIC_1 = getattr(dis, "_intrinsic_1_descs", [])     # 3.12
# exceptions of a folded operation that become a break at its instruction
_USER_ERRORS = (ArithmeticError, LookupError, ValueError, TypeError)



def _own_python_method(obj, name):
    """Is `obj` an object the traced code made (NewObjectVariable) whose
    class has a Python method `name`, inlined when called?"""
    from .variables.misc import NewObjectVariable
    from .lookup import getattr_static
    return isinstance(obj, NewObjectVariable) and \
        isinstance(getattr_static(obj.cls, name, None), types.FunctionType)

class _Half:
    """One local of a 3.13 two-local instruction, as the one-local handlers
    read it."""
    __slots__ = ("argval",)

    def __init__(self, name):
        self.argval = name


class InstructionTranslatorBase:
    """Shared interpreter state and the opcode methods (see module doc)."""

    def __init__(self, output, code, f_globals, symbolic_locals, cells, parent=None):
        self.output = output
        self.code = code
        self.f_globals = f_globals
        self.instructions = decode_shared(code)     # read-only, shared
        self.index_of = shared_index(code)
        self.ip = 0
        self.stack = []
        self.locals = dict(symbolic_locals)
        self.cells = dict(cells)
        self.parent = parent
        self.depth = 0 if parent is None else parent.depth + 1
        self.kw_names = ()
        self.lineno = code.co_firstlineno
        self.current = None
        self.done = False
        self.with_stack = []           # active grad-mode `with` blocks
        self._with_handlers = None     # id(handler) -> BEFORE_WITH of its `with`

    # ------------------------------------------------------------ driver
    def run(self):
        while not self.done:
            inst = self.instructions[self.ip]
            self.ip += 1
            self.current = inst
            self.output.current_tx = self
            if inst.positions is not None and inst.positions.lineno is not None:
                self.lineno = inst.positions.lineno
            elif inst.starts_line is not None:
                self.lineno = inst.starts_line
            try:
                self.step(inst)
            except Unsupported as e:
                if not e.user_stack:
                    e.add_user_stack(self.user_stack())
                raise

    def step(self, inst):
        handler = getattr(self, inst.opname, None)
        if handler is None:
            raise Unsupported(f"opcode {inst.opname} is not supported")
        try:
            handler(inst)
        except _USER_ERRORS as e:
            # user code raising on constants (1/0, a missing key, int('x')):
            # the instruction must raise at run time, so it runs eagerly
            first = str(e).splitlines()[0] if str(e) else ""
            err = Unsupported(f"{type(e).__name__} raised at trace time: {first}")
            err.user_raise = True
            raise err from e

    def frame_summary(self):
        return traceback.FrameSummary(self.code.co_filename, self.lineno, self.code.co_name)

    def user_stack(self):
        chain, tx = [], self
        while tx is not None:
            chain.append(tx.frame_summary())
            tx = tx.parent
        return list(reversed(chain))

    # ------------------------------------------------------------ stack
    def push(self, var):
        assert isinstance(var, VariableTracker), var
        self.stack.append(var)

    def pop(self):
        return self.stack.pop()

    def popn(self, n):
        if n == 0:
            return []
        out = self.stack[-n:]
        del self.stack[-n:]
        return out

    def jump(self, inst):
        self.ip = self.index_of[id(inst.target)]

    # ------------------------------------------------------------ values
    def global_source(self, name):
        """Source of global `name` of this code (None: no guard possible)."""
        if self.f_globals is self.output.frame.f_globals:
            return GlobalSource(name)
        mangled = self.output.globals_alias(self.f_globals)
        return ItemSource(GlobalSource(mangled), name)

    def builtin_source(self, name):
        """Source of builtin `name` as LOAD_GLOBAL finds it, or None.

        A GLOBAL source resolves like LOAD_GLOBAL (f_globals, then
        f_builtins), so its guard also fails when a global later shadows the
        builtin. Only the compiled frame's own globals can be named that way:
        builtins read by functions inlined from other modules are assumed not
        to be shadowed later (no guard kind can test a missing dict key)."""
        if self.f_globals is self.output.frame.f_globals:
            return GlobalSource(name)
        return None

    def wrap(self, value, source):
        """The variable for a Python value met while tracing (builder.wrap);
        variables call it as tx.wrap so that none imports the builder."""
        return wrap(self, value, source)

    def realize(self, var):
        """Wrap a passthrough frame value on first real use."""
        if isinstance(var, PassthroughVariable):
            value = self.output.frame.fetch(var.source)
            return wrap(self, value, var.source)
        return var

    # ------------------------------------------------------------ inlining
    def inline_call(self, fn_var, args, kwargs):
        from .variables.torch import grad_mode_decorated
        deco = grad_mode_decorated(getattr(fn_var, "fn", None))
        if deco is not None:          # @torch.no_grad() / @torch.enable_grad() on a function
            ctx = GradModeVariable(deco[0])
            ctx.enter(self)
            out = self.inline_call(UserFunctionVariable(deco[1]), args, kwargs)
            self.output.set_grad_enabled(ctx.prev)
            return out
        code = fn_var.get_code()
        fn = getattr(fn_var, "fn", None)
        if fn is not None:
            from .. import decorators
            if decorators.is_skipped_code(code) or decorators.is_disallowed(fn):
                raise Unsupported(f"call to {code.co_name} (dynamo.skip / disallow_in_graph)")
            if decorators.torch_disable_kind(fn) is not None:
                raise Unsupported(f"call to {code.co_name} (torch.compiler.disable)")
            if decorators.is_assumed_constant(fn):
                return self.output.fold_constant_call(self, fn, args, kwargs)
        if isinstance(fn_var, UserFunctionVariable) and fn_var.source is not None:
            # FUNCTION_MATCH keeps the function object; `fn.__code__ = ...`
            # keeps it too, and the trace followed this code
            self.output.add_guard(AttrSource(fn_var.source, "__code__"), ID_MATCH, code)
        if self.depth + 1 > MAX_INLINE_DEPTH:
            raise Unsupported(f"inlining depth limit {MAX_INLINE_DEPTH} reached at {code.co_name}")
        if code.co_flags & _CO_GENERATOR_LIKE and not code.co_flags & _CO_GENERATOR:
            raise Unsupported(f"inlining coroutine {code.co_name}")
        defaults, kwdefaults = fn_var.get_defaults()
        bound = bind_args(self, fn_var, code, args, kwargs, defaults, kwdefaults)
        cls = GeneratorTranslator if code.co_flags & _CO_GENERATOR else InliningTranslator
        sub = cls(self.output, code, fn_var.get_globals(), bound, fn_var.closure_cells(self),
                  parent=self)
        if cls is GeneratorTranslator:
            return GeneratorVariable(sub)     # the body runs on each next()
        sub.run()
        return sub.returned

    # ------------------------------------------------------------ opcodes: misc
    def NOP(self, inst):
        pass

    def RESUME(self, inst):
        pass

    def PRECALL(self, inst):
        pass

    def COPY_FREE_VARS(self, inst):
        pass

    def MAKE_CELL(self, inst):
        name = inst.argval
        self.cells[name] = CellVariable(self.locals.pop(name, None))
        if self.parent is None:
            self.cells[name].frame_name = name   # the compiled frame's own cell

    def POP_TOP(self, inst):
        self.pop()

    def PUSH_NULL(self, inst):
        self.push(NullVariable())

    def COPY(self, inst):
        self.push(self.stack[-inst.arg])

    def SWAP(self, inst):
        n = inst.arg
        self.stack[-1], self.stack[-n] = self.stack[-n], self.stack[-1]

    def KW_NAMES(self, inst):
        self.kw_names = tuple(inst.argval)

    # ------------------------------------------------------------ locals
    def LOAD_FAST(self, inst):
        name = inst.argval
        if name not in self.locals:
            raise Unsupported(f"UnboundLocalError: local variable {name!r} referenced before assignment")
        var = self.locals[name] = self.realize(self.locals[name])
        self.push(var)

    LOAD_FAST_CHECK = LOAD_FAST                 # 3.12

    # 3.13: two locals in one instruction (argval: the pair of names), the
    # first half done before the second
    def LOAD_FAST_LOAD_FAST(self, inst):        # 3.13
        for name in inst.argval:
            self.LOAD_FAST(_Half(name))

    def STORE_FAST_LOAD_FAST(self, inst):       # 3.13
        self.STORE_FAST(_Half(inst.argval[0]))
        self.LOAD_FAST(_Half(inst.argval[1]))

    def STORE_FAST_STORE_FAST(self, inst):      # 3.13
        for name in inst.argval:
            self.STORE_FAST(_Half(name))

    def LOAD_FAST_AND_CLEAR(self, inst):        # 3.12: an inlined comprehension saves a name
        self.push(self.locals.pop(inst.argval, None) or NullVariable())

    def STORE_FAST(self, inst):
        value = self.pop()
        if isinstance(value, NullVariable):     # restoring a name that was unbound
            self.locals.pop(inst.argval, None)
        else:
            self.locals[inst.argval] = value

    def DELETE_FAST(self, inst):
        self.locals.pop(inst.argval, None)

    def LOAD_CONST(self, inst):
        self.push(wrap_const(inst.argval))

    def LOAD_GLOBAL(self, inst):
        if inst.arg & 1:                        # the NULL of a call: under the global (3.13: above)
            self._load_global(inst.argval)
            self.push_call_null()
        else:
            self._load_global(inst.argval)

    def push_call_null(self):
        """Push the NULL of a call whose callable is on top: under it on
        3.11/3.12 ([NULL, callable]), above it on 3.13 ([callable, NULL])."""
        if NULL_ABOVE_CALLABLE:
            self.push(NullVariable())
        else:
            self.stack.insert(len(self.stack) - 1, NullVariable())

    def _load_global(self, name):
        stored = self.output.global_stores.get((id(self.f_globals), name))
        if stored is not None:              # assigned earlier in the trace
            self.push(stored[1])
            return
        if name in self.f_globals:
            self.push(wrap(self, self.f_globals[name], self.global_source(name)))
            return
        builtins_dict = self.f_globals.get("__builtins__", self.output.frame.f_builtins)
        if isinstance(builtins_dict, types.ModuleType):
            builtins_dict = builtins_dict.__dict__
        if name not in builtins_dict:
            raise Unsupported(f"NameError: name {name!r} is not defined")
        self.push(wrap(self, builtins_dict[name], self.builtin_source(name)))

    def STORE_GLOBAL(self, inst):
        # recorded, seen by later LOAD_GLOBALs of the trace, and written to
        # the real globals dict after the graph (frame.write_back_lists)
        self.output.global_stores[(id(self.f_globals), inst.argval)] = (self.f_globals, self.pop())

    def DELETE_GLOBAL(self, inst):
        raise Unsupported(f"deletion of global {inst.argval!r}")

    def LOAD_DEREF(self, inst):
        cell = self.cells.get(inst.argval)
        if cell is None or cell.value is None:
            raise Unsupported(f"free variable {inst.argval!r} referenced before assignment")
        cell.value = self.realize(cell.value)
        self.push(cell.value)

    def STORE_DEREF(self, inst):
        cell = self.cells[inst.argval]
        real = getattr(cell, "cell", None)
        if cell.source is not None and real is not None:
            # a cell of a function passed in (`nonlocal x` in a closure the
            # frame calls): written back after the graph, cell.cell_contents = v
            value = self.pop()
            self.output.attr_stores[(id(real), "cell_contents")] = (
                VariableTracker(cell.source.base), value, real)
            cell.value = value
            return
        if cell.source is not None and getattr(cell, "frame_name", None) is not None:
            # a free variable of the compiled frame: STORE_DEREF after the graph
            value = self.pop()
            self.output.attr_stores[(id(cell), "cell_contents")] = (FrameCellOwner(cell), value, cell)
            cell.value = value
            cell.written = True
            return
        if cell.source is not None:
            raise Unsupported(f"assignment to closure variable {inst.argval!r} of the compiled frame")
        cell.value = self.pop()

    def LOAD_CLOSURE(self, inst):
        self.push(self.cells[inst.argval])

    def IMPORT_NAME(self, inst):
        import sys
        fromlist, level = self.pop(), self.pop()
        name = inst.argval
        level = level.as_python_constant()
        if level:       # relative: resolved against the importing code's package
            import importlib.util
            package = self.f_globals.get("__package__") or \
                getattr(self.f_globals.get("__spec__"), "parent", None)
            if not package:
                raise Unsupported(f"relative import of {name!r} outside a package")
            name = importlib.util.resolve_name("." * level + name, package)
        if name not in sys.modules:
            raise Unsupported(f"import of {name!r} inside the compiled frame (not yet imported)")
        top = fromlist.as_python_constant() is None and not level
        module = sys.modules[name.split(".")[0] if top else name]
        # the module is reached through a global of the frame bound to it, so
        # what the trace reads from it is guarded like any global's attribute
        from ..guards import _identifier
        alias = "___module_" + _identifier(module.__name__)
        self.output.install[alias] = module
        self.push(wrap(self, module, GlobalSource(alias)))

    def IMPORT_FROM(self, inst):
        self.push(self.stack[-1].var_getattr(self, inst.argval))

    # ------------------------------------------------------------ attributes
    def LOAD_ATTR(self, inst):
        obj = self.pop()
        self.push(obj.var_getattr(self, inst.argval))
        if PY312 and inst.arg & 1:              # 3.12: the method form (3.11's LOAD_METHOD)
            self.push_call_null()

    def LOAD_SUPER_ATTR(self, inst):            # 3.12: super().name with class and self pushed
        self_var, cls, fn = self.pop(), self.pop(), self.pop()
        sup = fn.call(self, [cls, self_var] if inst.arg & 2 else [], {})
        self.push(sup.var_getattr(self, inst.argval))
        if inst.arg & 1:
            self.push_call_null()

    def LOAD_METHOD(self, inst):
        obj = self.pop()
        self.push(obj.var_getattr(self, inst.argval))
        self.push_call_null()

    def STORE_ATTR(self, inst):
        obj, value = self.pop(), self.pop()
        from .variables.misc import store_attribute
        store_attribute(self, obj, inst.argval, value)

    # ------------------------------------------------------------ calls
    def CALL(self, inst):
        args = self.popn(inst.arg)
        upper, lower = self.pop(), self.pop()
        if NULL_ABOVE_CALLABLE:                 # 3.13: [callable, NULL|self, args]
            fn = lower
            if not isinstance(upper, NullVariable):
                args = [upper, *args]
        elif isinstance(lower, NullVariable):   # 3.11/3.12: [NULL|method, callable|self, args]
            fn = upper
        else:
            fn = lower
            args = [upper, *args]
        kwargs = {}
        if self.kw_names:
            n = len(self.kw_names)
            kwargs = dict(zip(self.kw_names, args[-n:]))
            args = args[:-n]
            self.kw_names = ()
        self.push(fn.call(self, args, kwargs))

    def CALL_KW(self, inst):                    # 3.13: the keyword names pushed last
        self.kw_names = tuple(self.pop().as_python_constant())
        self.CALL(inst)

    def CALL_FUNCTION_EX(self, inst):
        kwargs = self.pop() if inst.arg & 1 else None
        args = self.pop()
        fn, null = self.pop(), self.pop()
        if NULL_ABOVE_CALLABLE:                 # 3.13: [callable, NULL, args[, kwargs]]
            fn, null = null, fn
        if not isinstance(null, NullVariable):
            raise Unsupported("CALL_FUNCTION_EX without NULL")
        arg_list = args.unpack(self)
        kw = {}
        if kwargs is not None:
            if not isinstance(kwargs, DictVariable):
                raise Unsupported(f"**kwargs from {kwargs}")
            kw = dict(kwargs.items)
        self.push(fn.call(self, arg_list, kw))

    def MAKE_FUNCTION(self, inst):
        flags = inst.arg or 0                   # 3.13: none, SET_FUNCTION_ATTRIBUTE adds each
        code = self.pop().as_python_constant()
        closure = self.pop().items if flags & 0x08 else []
        annotations = self.pop() if flags & 0x04 else None
        kwdefaults = self.pop().items if flags & 0x02 else {}
        defaults = self.pop().unpack(self) if flags & 0x01 else []
        globals_source = None
        if self.f_globals is not self.output.frame.f_globals:
            globals_source = GlobalSource(self.output.globals_alias(self.f_globals))
        self.push(NestedFunctionVariable(code, self.f_globals, globals_source, defaults, kwdefaults,
                                         closure, annotations))

    def SET_FUNCTION_ATTRIBUTE(self, inst):     # 3.13: one MAKE_FUNCTION flag, on the new function
        fn, value = self.pop(), self.pop()
        if not isinstance(fn, NestedFunctionVariable):
            raise Unsupported(f"SET_FUNCTION_ATTRIBUTE on {fn}")
        if inst.arg == 0x08:
            fn.closure = value.items
        elif inst.arg == 0x04:
            fn.annotations = value
        elif inst.arg == 0x02:
            fn.kwdefaults = value.items
        elif inst.arg == 0x01:
            fn.defaults = value.unpack(self)
        else:
            raise Unsupported(f"SET_FUNCTION_ATTRIBUTE {inst.arg}")
        self.push(fn)

    # ------------------------------------------------------------ operators
    def BINARY_OP(self, inst):
        b, a = self.pop(), self.pop()
        self.push(binary_op(self, BINARY_OPS[_NB_SYMBOL[inst.arg]], a, b))

    def COMPARE_OP(self, inst):
        b, a = self.pop(), self.pop()
        self.push(compare_op(self, COMPARE_OPS[inst.argval], a, b))
        if COMPARE_TO_BOOL and inst.arg & COMPARE_TO_BOOL:     # 3.13: the result made a bool
            self.TO_BOOL(inst)

    def TO_BOOL(self, inst):                    # 3.13: before a conditional jump or `not`
        v = self.stack[-1]
        if (isinstance(v, (TensorVariable, ScalarOutputVariable)) or is_data_dependent(v)) and \
                not (isinstance(v, TensorVariable) and v.known_truth(self) is not None):
            return            # a graph value: the jump after it breaks the graph on it
        if isinstance(v, ConstantVariable) and type(v.value) is bool:
            return
        self.stack[-1] = ConstantVariable(bool(v.truth(self)))

    def IS_OP(self, inst):
        b, a = self.pop(), self.pop()
        same = identical(a, b, self)
        if same is None:
            raise Unsupported(f"`is` between {a} and {b}")
        self.push(ConstantVariable(same != bool(inst.arg)))

    def CONTAINS_OP(self, inst):
        container, item = self.pop(), self.pop()
        self.push(ConstantVariable(contains(self, item, container) != bool(inst.arg)))

    def UNARY_NEGATIVE(self, inst):
        self.push(unary_op(self, operator.neg, self.pop()))

    def UNARY_POSITIVE(self, inst):
        self.push(unary_op(self, operator.pos, self.pop()))

    def UNARY_INVERT(self, inst):
        self.push(unary_op(self, operator.invert, self.pop()))

    def UNARY_NOT(self, inst):
        self.push(ConstantVariable(not self.pop().truth(self)))

    def BINARY_SUBSCR(self, inst):
        key, obj = self.pop(), self.pop()
        self.push(getitem(self, obj, key))

    def _slice(self):
        stop, start = self.pop(), self.pop()
        return make_slice([start, stop])

    def BINARY_SLICE(self, inst):               # 3.12: obj[start:stop]
        key = self._slice()
        self.push(getitem(self, self.pop(), key))

    def STORE_SLICE(self, inst):                # 3.12: obj[start:stop] = value
        key = self._slice()
        self.push(key)
        self.STORE_SUBSCR(inst)

    def CALL_INTRINSIC_1(self, inst):           # 3.12
        name = _INTRINSIC_1[inst.arg] if inst.arg < len(_INTRINSIC_1) else str(inst.arg)
        if name == "INTRINSIC_UNARY_POSITIVE":
            self.push(unary_op(self, operator.pos, self.pop()))
        elif name == "INTRINSIC_LIST_TO_TUPLE":
            self.LIST_TO_TUPLE(inst)
        else:
            raise Unsupported(f"CALL_INTRINSIC_1 {name}")

    def STORE_SUBSCR(self, inst):
        key, obj, value = self.pop(), self.pop(), self.pop()
        if isinstance(obj, (TensorVariable, ListVariable, DictVariable)):
            obj.call_method(self, "__setitem__", [key, value], {})
            return
        if hasattr(obj, "store_item"):           # a ModelOutput made by the traced code
            obj.store_item(self, key, value)
            return
        if _own_python_method(obj, "__setitem__"):     # a UserDict made by the traced code
            obj.call_method(self, "__setitem__", [key, value], {})
            return
        raise Unsupported(f"item assignment on {obj}")

    def DELETE_SUBSCR(self, inst):
        key, obj = self.pop(), self.pop()
        if isinstance(obj, (ListVariable, DictVariable)) or _own_python_method(obj, "__delitem__"):
            obj.call_method(self, "__delitem__", [key], {})
            return
        raise Unsupported(f"item deletion on {obj}")

    # ------------------------------------------------------------ building
    def BUILD_TUPLE(self, inst):
        self.push(TupleVariable(self.popn(inst.arg)))

    def BUILD_LIST(self, inst):
        self.push(ListVariable(self.popn(inst.arg)))

    def BUILD_MAP(self, inst):
        flat = self.popn(2 * inst.arg)
        self.push(DictVariable({flat[i].as_python_constant(): flat[i + 1]
                                for i in range(0, len(flat), 2)}))

    def BUILD_CONST_KEY_MAP(self, inst):
        keys = self.pop().as_python_constant()
        values = self.popn(inst.arg)
        self.push(DictVariable(dict(zip(keys, values))))

    def BUILD_SLICE(self, inst):
        self.push(make_slice(self.popn(inst.arg)))

    def BUILD_STRING(self, inst):
        parts = self.popn(inst.arg)
        self.push(ConstantVariable("".join(p.as_python_constant() for p in parts)))

    def CONVERT_VALUE(self, inst):              # 3.13: str/repr/ascii before formatting
        conv = {1: str, 2: repr, 3: ascii}[inst.arg]
        self.push(ConstantVariable(conv(self.pop().as_python_constant())))

    def FORMAT_SIMPLE(self, inst):              # 3.13
        self.push(ConstantVariable(format(self.pop().as_python_constant(), "")))

    def FORMAT_WITH_SPEC(self, inst):           # 3.13
        spec = self.pop().as_python_constant()
        self.push(ConstantVariable(format(self.pop().as_python_constant(), spec)))

    def FORMAT_VALUE(self, inst):
        flags = inst.arg
        spec = self.pop().as_python_constant() if flags & 0x04 else ""
        value = self.pop().as_python_constant()
        conv = {1: str, 2: repr, 3: ascii}.get(flags & 0x03)
        if conv is not None:
            value = conv(value)
        self.push(ConstantVariable(format(value, spec)))

    def BUILD_SET(self, inst):
        # sets of constants only (a set comprehension over ints, say): 3.12
        # inlines set comprehensions into the frame
        items = self.popn(inst.arg)
        self.push(ConstantVariable({i.as_python_constant() for i in items}))

    def SET_ADD(self, inst):
        value = self.pop().as_python_constant()
        target = self.stack[-inst.arg]
        if not (isinstance(target, ConstantVariable) and type(target.value) is set):
            raise Unsupported(f"set.add on {target}")
        target.value.add(value)

    def SET_UPDATE(self, inst):
        items = self.pop().as_python_constant()
        target = self.stack[-inst.arg]
        if not (isinstance(target, ConstantVariable) and type(target.value) is set):
            raise Unsupported(f"set.update on {target}")
        target.value.update(items)

    def LIST_APPEND(self, inst):
        # the list may come from outside the trace: 3.12 inlines
        # comprehensions, so a resume function can start inside one and get
        # the list being built as an argument (written back at a break)
        v = self.pop()
        target = self.stack[-inst.arg]
        target.check_mutable(self)
        target.items.append(v)

    def LIST_EXTEND(self, inst):
        v = self.pop()
        target = self.stack[-inst.arg]
        target.check_mutable(self)
        target.items.extend(v.unpack(self))

    def LIST_TO_TUPLE(self, inst):
        self.push(TupleVariable(self.pop().items))

    def DICT_MERGE(self, inst):
        v = self.pop()
        target = self.stack[-inst.arg]
        target.items.update(mapping_items(self, v))

    DICT_UPDATE = DICT_MERGE

    def MAP_ADD(self, inst):
        value, key = self.pop(), self.pop()
        target = self.stack[-inst.arg]
        target.check_mutable(self)      # a dict from outside the trace (see LIST_APPEND)
        target.items[key.as_python_constant()] = value

    def UNPACK_SEQUENCE(self, inst):
        items = self.pop().unpack(self)
        if len(items) != inst.arg:
            raise Unsupported(f"unpacking {len(items)} values into {inst.arg}")
        for item in reversed(items):
            self.push(item)

    def UNPACK_EX(self, inst):
        before, after = inst.arg & 0xFF, inst.arg >> 8
        items = self.pop().unpack(self)
        if len(items) < before + after:
            raise Unsupported("not enough values to unpack")
        middle = ListVariable(items[before:len(items) - after])
        for item in reversed(items[:before] + [middle] + items[len(items) - after:]):
            self.push(item)

    # ------------------------------------------------------------ iteration
    def GET_ITER(self, inst):
        obj = self.pop()
        if isinstance(obj, ListIteratorVariable):
            self.push(obj)
            return
        self.push(ListIteratorVariable.over(self, obj))

    def FOR_ITER(self, inst):
        it = self.stack[-1]
        if not isinstance(it, ListIteratorVariable):
            raise Unsupported(f"iteration over {it}")
        item = it.next()
        if item is None:
            if PY312:        # the target is END_FOR, which pops the iterator and this
                self.push(ConstantVariable(None))
            else:
                self.pop()
            self.jump(inst)
        else:
            self.push(item)

    def END_FOR(self, inst):                    # 3.12; 3.13: pops one, a POP_TOP follows
        self.popn(3 - len(FOR_ITER_EXIT))      # the iterator and the None FOR_ITER left

    # ------------------------------------------------------------ jumps
    def JUMP_FORWARD(self, inst):
        self.jump(inst)

    JUMP_BACKWARD = JUMP_BACKWARD_NO_INTERRUPT = JUMP_ABSOLUTE = JUMP_FORWARD

    def _pop_jump(self, inst, jump_if):
        cond = self.pop()
        if cond.truth(self) == jump_if:
            self.jump(inst)

    def _pop_jump_none(self, inst, jump_if_none):
        v = self.pop()
        is_none = isinstance(v, ConstantVariable) and v.value is None
        if not is_none and not isinstance(v, ConstantVariable) and v.is_python_constant():
            is_none = v.as_python_constant() is None
        if is_none == jump_if_none:
            self.jump(inst)

    def POP_JUMP_FORWARD_IF_TRUE(self, inst):
        self._pop_jump(inst, True)

    def POP_JUMP_FORWARD_IF_FALSE(self, inst):
        self._pop_jump(inst, False)

    POP_JUMP_BACKWARD_IF_TRUE = POP_JUMP_FORWARD_IF_TRUE
    POP_JUMP_BACKWARD_IF_FALSE = POP_JUMP_FORWARD_IF_FALSE

    def POP_JUMP_FORWARD_IF_NONE(self, inst):
        self._pop_jump_none(inst, True)

    def POP_JUMP_FORWARD_IF_NOT_NONE(self, inst):
        self._pop_jump_none(inst, False)

    POP_JUMP_BACKWARD_IF_NONE = POP_JUMP_FORWARD_IF_NONE
    POP_JUMP_BACKWARD_IF_NOT_NONE = POP_JUMP_FORWARD_IF_NOT_NONE

    # 3.12's conditional jumps (relative, either direction)
    def POP_JUMP_IF_TRUE(self, inst):
        self._pop_jump(inst, True)

    def POP_JUMP_IF_FALSE(self, inst):
        self._pop_jump(inst, False)

    def POP_JUMP_IF_NONE(self, inst):
        self._pop_jump_none(inst, True)

    def POP_JUMP_IF_NOT_NONE(self, inst):
        self._pop_jump_none(inst, False)

    def JUMP_IF_TRUE_OR_POP(self, inst):
        if self.stack[-1].truth(self):
            self.jump(inst)
        else:
            self.pop()

    def JUMP_IF_FALSE_OR_POP(self, inst):
        if not self.stack[-1].truth(self):
            self.jump(inst)
        else:
            self.pop()

    # ------------------------------------------------------------ with
    def BEFORE_WITH(self, inst):
        from .variables.torch import AutocastVariable
        from .variables.higher_order import GetItemToIndexVariable
        ctx = self.pop()
        if not isinstance(ctx, (GradModeVariable, AutocastVariable, GetItemToIndexVariable)):
            raise Unsupported(f"`with` on {ctx} (only torch.no_grad/enable_grad/set_grad_enabled, "
                              "profiler blocks, torch.autocast and TransformGetItemToIndex)")
        body = self.instructions[self.ip]
        handler = body.exn_tab_entry.target if body.exn_tab_entry is not None else None
        # no break inside an autocast or getitem-mode block: its state cannot be handed on
        clean = self.can_break_at(inst) and not isinstance(ctx, (AutocastVariable,
                                                                 GetItemToIndexVariable))
        self.with_stack.append((ctx, handler, clean))
        if isinstance(ctx, (AutocastVariable, GetItemToIndexVariable)):
            ctx.enter(self)
            self.push(WithExitVariable(ctx))
            self.push(ConstantVariable(None))
            return
        if not ctx.entered_on_init:
            ctx.enter(self)
        self.push(WithExitVariable(ctx))
        self.push(ConstantVariable(None))

    def exit_with(self, exit_var):
        if self.with_stack and self.with_stack[-1][0] is exit_var.ctx:
            self.with_stack.pop()

    def can_break_at(self, inst):
        """May a graph break happen at `inst`: not inside a try block, and
        inside `with` blocks only if they are all grad-mode blocks, and not
        at a 3.12 method load (LOAD_ATTR / LOAD_SUPER_ATTR with the method
        bit): it leaves NULL|self under the method, and a NULL cannot be
        handed to a resume function (CPython crashed on it)."""
        if PY312 and inst.opname in ("LOAD_ATTR", "LOAD_SUPER_ATTR") and (inst.arg or 0) & 1:
            return False
        entry = inst.exn_tab_entry
        if not self.with_stack:
            # a resume function that starts inside grad-mode blocks: their
            # cleanups cover it, recognised by the exits on the stack
            return entry is None or not self.user_handler_covers(entry)
        _, handler, clean = self.with_stack[-1]
        return clean and entry is not None and entry.target is handler

    def in_try_region(self):
        """Could an exception raised by the current instruction reach a
        user handler (except/finally/a non-grad-mode `with`) of this frame
        or of a caller on the inlining chain? Grad-mode `with` blocks
        outside any try do not count: their cleanup only restores the mode."""
        tx = self
        while tx is not None:
            inst = tx.current
            if inst is not None and tx.user_handler_covers(inst.exn_tab_entry):
                return True
            tx = tx.parent
        return False

    def user_handler_covers(self, entry):
        """Is `entry` (an exception-table entry of this frame, or None) a
        try handler, or the cleanup of a `with` that is not a grad-mode
        block or that sits inside a try? Grad-mode blocks are recognised
        by the exit on the stack, so also in a resume function that starts
        inside the block."""
        from .variables.torch import GradModeExit
        if self._with_handlers is None:
            self._with_handlers = {}
            for i, inst in enumerate(self.instructions[:-1]):
                nxt = self.instructions[i + 1].exn_tab_entry
                if inst.opname == "BEFORE_WITH" and nxt is not None:
                    self._with_handlers[id(nxt.target)] = inst
        while entry is not None:
            reraise = self.compiler_cleanup(entry.target)
            if reraise is not None:             # not a user handler: look outside it
                entry = reraise.exn_tab_entry
                continue
            before_with = self._with_handlers.get(id(entry.target))
            if before_with is None or not 0 < entry.depth <= len(self.stack):
                return True
            exit_var = self.stack[entry.depth - 1]
            if not (isinstance(exit_var, WithExitVariable)
                    or isinstance(getattr(exit_var, "value", None), GradModeExit)):
                return True
            entry = before_with.exn_tab_entry
        return False

    def compiler_cleanup(self, handler):
        """The RERAISE ending `handler` when it is cleanup the compiler
        added around code with no try of its own (3.12: an inlined
        comprehension restoring its saved names, a generator turning
        StopIteration into RuntimeError), else None."""
        i = self.index_of.get(id(handler))
        if i is None:
            return None
        insts = self.instructions
        if insts[i].opname == "CALL_INTRINSIC_1" and \
                _INTRINSIC_1[insts[i].arg] == "INTRINSIC_STOPITERATION_ERROR":
            i += 1
        else:
            while i < len(insts) and insts[i].opname in ("SWAP", "POP_TOP", "STORE_FAST"):
                i += 1
        if i < len(insts) and insts[i].opname == "RERAISE" and i > self.index_of[id(handler)]:
            return insts[i]
        return None

    def in_comprehension(self):
        """Is the current instruction inside a comprehension inlined into
        this frame (3.12)? A break there runs the whole statement eagerly,
        as 3.11 runs a comprehension's call eagerly."""
        inst = self.current
        entry = inst.exn_tab_entry if inst is not None else None
        return entry is not None and self.instructions[self.index_of[id(entry.target)]].opname == "SWAP" \
            and self.compiler_cleanup(entry.target) is not None

    # ------------------------------------------------------------ return
    def RETURN_VALUE(self, inst):
        raise NotImplementedError

    def RETURN_CONST(self, inst):               # 3.12
        self.push(wrap_const(inst.argval))
        self.RETURN_VALUE(inst)


class InliningTranslator(InstructionTranslatorBase):
    """Runs one inlined call; `returned` holds its value afterwards."""

    def __init__(self, output, code, f_globals, symbolic_locals, cells, parent):
        super().__init__(output, code, f_globals, symbolic_locals, cells, parent)
        self.returned = None

    def RETURN_VALUE(self, inst):
        self.returned = self.pop()
        self.done = True

    def can_break_at(self, inst):
        return False


class GeneratorTranslator(InliningTranslator):
    """The suspended frame of a generator made by traced code. next_item()
    runs it to its next YIELD_VALUE (like gen.__next__), so it is consumed
    lazily through GeneratorVariable; only the body's traced effects happen,
    in the same order as eager."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.yielded = None
        self.exhausted = False

    def next_item(self):
        """The next yielded VT, or None once the generator has returned."""
        if self.exhausted:
            return None
        self.done, self.yielded = False, None
        self.run()
        return None if self.exhausted else self.yielded

    def RETURN_GENERATOR(self, inst):
        self.push(ConstantVariable(None))

    # `yield from it`: GET_YIELD_FROM_ITER, LOAD_CONST None, SEND (loop with
    # YIELD_VALUE): each SEND takes the sub-iterator's next item; when it is
    # exhausted, its return value (None for the iterators traced) replaces
    # it and SEND jumps past the loop.
    def GET_YIELD_FROM_ITER(self, inst):
        self.GET_ITER(inst)

    def SEND(self, inst):
        self.pop()                          # the value sent: always None here
        it = self.stack[-1]
        if not isinstance(it, ListIteratorVariable):
            raise Unsupported(f"yield from {it}")
        item = it.next()
        if item is None:
            if PY312:                       # END_SEND at the target drops the iterator
                self.push(ConstantVariable(None))
            else:
                self.stack[-1] = ConstantVariable(None)
            self.jump(inst)
        else:
            self.push(item)

    def END_SEND(self, inst):               # 3.12
        value = self.pop()
        self.pop()
        self.push(value)

    def YIELD_VALUE(self, inst):
        self.yielded = self.pop()
        self.push(ConstantVariable(None))   # the value send() would deliver
        self.done = True                    # suspend until the next next_item()

    def RETURN_VALUE(self, inst):
        self.pop()
        self.exhausted = True
        self.done = True


def bind_args(tx, fn_var, code, args, kwargs, defaults, kwdefaults):
    """Map call arguments to `code`'s parameters (dict name -> VT). Real
    default values are wrapped (guarded through the function's source)."""
    from ..guards import AttrSource
    nargs, nkw, posonly = code.co_argcount, code.co_kwonlyargcount, code.co_posonlyargcount
    names = code.co_varnames
    pos_names, kw_names = names[:nargs], names[nargs:nargs + nkw]
    i = nargs + nkw
    varargs = names[i] if code.co_flags & _CO_VARARGS else None
    i += bool(varargs)
    varkw = names[i] if code.co_flags & _CO_VARKEYWORDS else None
    bound = dict(zip(pos_names, args))
    if len(args) > nargs:
        if varargs is None:
            raise Unsupported(f"{code.co_name}() takes {nargs} positional arguments but {len(args)} were given")
    if varargs is not None:
        bound[varargs] = TupleVariable(list(args[nargs:]))
    rest = {}
    for k, v in kwargs.items():
        if (k in pos_names[posonly:] or k in kw_names) and k not in bound:
            bound[k] = v
        elif varkw is not None:
            rest[k] = v
        else:
            raise Unsupported(f"{code.co_name}() got an unexpected keyword argument {k!r}")
    if varkw is not None:
        bound[varkw] = DictVariable(rest)
    fn_src = getattr(fn_var, "source", None)

    def default(value, src):
        return value if isinstance(value, VariableTracker) else wrap(tx, value, src)
    first_default = nargs - len(defaults)
    for idx, name in enumerate(pos_names):
        if name not in bound:
            d = idx - first_default
            if d < 0:
                raise Unsupported(f"{code.co_name}() missing argument {name!r}")
            src = ItemSource(AttrSource(fn_src, "__defaults__"), d) if fn_src is not None else None
            bound[name] = default(defaults[d], src)
    for name in kw_names:
        if name not in bound:
            if name not in kwdefaults:
                raise Unsupported(f"{code.co_name}() missing keyword argument {name!r}")
            src = ItemSource(AttrSource(fn_src, "__kwdefaults__"), name) if fn_src is not None else None
            bound[name] = default(kwdefaults[name], src)
    return bound


__all__ = ["InstructionTranslatorBase", "InliningTranslator", "bind_args", "dis", "torch"]
