"""PyCodegen: the instruction emitter for rewritten code (the bytecode that
loads graph inputs by source, calls the compiled graph and rebuilds values
from its outputs).  It emits instructions only: where to break is the
translator's decision, what the graph holds is OutputGraph's.
"""
import itertools

from .bytecode import (NULL_ABOVE_CALLABLE, create_call, create_call_function, create_instruction,
                       create_load_method)
from .exc import Unsupported
from .guards import AttrSource, ClosureSource, GenericAttrSource, GlobalSource, ItemSource, LocalSource


def _holds_symbolic(value):
    """value is, or a tuple/frozenset holding, a torch SymInt/SymFloat/SymBool."""
    if isinstance(value, (tuple, frozenset)):
        return any(_holds_symbolic(v) for v in value)
    return type(value).__name__ in ("SymInt", "SymFloat", "SymBool") and \
        type(value).__module__ == "torch"


def _shared_chains(sources):
    """Names of the attribute/item chains (the sources themselves and their
    bases) that two or more of `sources` branch from: read once, each
    saves the reads of its own chain for the others."""
    branches = {}                     # chain name -> the distinct next links read from it
    for i, src in enumerate(sources):
        below = ("input", i)
        while isinstance(src, (AttrSource, ItemSource)):
            name = src.name()
            branches.setdefault(name, set()).add(below)
            below = name
            src = src.base
    return frozenset(name for name, links in branches.items() if len(links) >= 2)


class PyCodegen:
    """Instruction emitter for rewritten code: loads by source, rebuilds
    values from graph outputs, keeps containers' identity (each traced
    container is built once and reloaded from a temporary)."""

    def __init__(self, code, graph_out=None):
        self.code = code
        self.insts = []
        self.graph_out = graph_out       # (local name, {node: index}) or None
        self.built = {}                  # id(var) -> temp local holding it
        self.keep = []                   # vars referenced by `built`
        self.temps = itertools.count()
        self.temp_names = []             # temporaries stored, in creation order
        self.cells = set(code.co_cellvars) | set(code.co_freevars)
        self.shared_sources = frozenset()    # names of chains loaded once (call_graph)
        self.source_temps = {}               # source name -> temp local holding it

    def emit(self, opname, **kw):
        inst = create_instruction(opname, **kw)
        self.insts.append(inst)
        return inst

    def append(self, inst):
        self.insts.append(inst)

    def load_method(self, name):
        """[obj] -> [method, self] or [NULL, attribute], for emit_call."""
        self.insts.append(create_load_method(name))

    def emit_call(self, nargs):
        """The call instructions for the stack a call takes: [NULL|self,
        callable, args] (3.13: [callable, NULL|self, args])."""
        self.insts.extend(create_call(nargs))

    def push_call_null(self, loaded):
        """The NULL of a call, where it goes: under the callable (3.11,
        3.12: emitted before the callable is loaded, `loaded` False), above
        it (3.13: emitted right after, `loaded` True)."""
        if loaded == NULL_ABOVE_CALLABLE:
            self.emit("PUSH_NULL")

    def load_const(self, value):
        if _holds_symbolic(value):
            # a traced size taken for a number: the code would return the
            # trace's SymInt. Refuse, so the frame runs eagerly.
            raise Unsupported(f"a symbolic size taken for a constant ({value!r})")
        self.emit("LOAD_CONST", argval=value)

    def load_local(self, name):
        self.emit("LOAD_DEREF" if name in self.cells else "LOAD_FAST", argval=name)

    def store_local(self, name):
        self.emit("STORE_DEREF" if name in self.cells else "STORE_FAST", argval=name)

    def new_temp(self, prefix="___tmp"):
        name = f"{prefix}_{next(self.temps)}"
        self.temp_names.append(name)
        return name

    def delete_temps(self):
        """DELETE_FAST every temporary stored so far (the graph output
        included), so user code run in this frame afterwards (a call run
        eagerly at a break) sees only its own names in locals()."""
        for name in self.temp_names:
            self.emit("DELETE_FAST", argval=name)
        self.temp_names = []

    def call(self, nargs):
        """Call with stack [callable, args...]: a NULL goes into the call's
        NULL|self slot."""
        self.insts.extend(create_call_function(nargs, push_null=True))

    def call_probe(self, fn):
        """fn() for its effect, stack-neutral: a break probe's bound C
        start/stop (core/breakprobe.h), no Python frame."""
        if not NULL_ABOVE_CALLABLE:
            self.emit("PUSH_NULL")
        self.load_const(fn)
        if NULL_ABOVE_CALLABLE:
            self.emit("PUSH_NULL")
        self.emit_call(0)
        self.emit("POP_TOP")

    def call_ex(self):
        """Call with stack [callable, args_tuple]."""
        self.emit("PUSH_NULL")
        if NULL_ABOVE_CALLABLE:             # 3.13: [callable, NULL, args_tuple]
            self.emit("SWAP", arg=2)
        else:                               # [NULL, callable, args_tuple]
            self.emit("SWAP", arg=3)
            self.emit("SWAP", arg=2)
        self.emit("CALL_FUNCTION_EX", arg=0)

    def load_source(self, source):
        if isinstance(source, (AttrSource, ItemSource)) and self.shared_sources:
            name = source.name()
            temp = self.source_temps.get(name)
            if temp is not None:
                self.load_local(temp)
                return
            if name in self.shared_sources:
                self._load_source(source)
                temp = self.new_temp("___src")
                self.emit("COPY", arg=1)
                self.store_local(temp)
                self.source_temps[name] = temp
                return
        self._load_source(source)

    def _load_source(self, source):
        if isinstance(source, LocalSource):
            self.load_local(source.local_name)
        elif isinstance(source, GlobalSource):
            self.emit("LOAD_GLOBAL", argval=source.global_name)
        elif isinstance(source, ClosureSource):
            self.emit("LOAD_DEREF", argval=source.var_name)
        elif isinstance(source, GenericAttrSource):     # the class's own lookup skipped
            self.load_const(object.__getattribute__)
            self.load_source(source.base)
            self.load_const(source.attr)
            self.call(2)
        elif isinstance(source, AttrSource):
            self.load_source(source.base)
            self.emit("LOAD_ATTR", argval=source.attr)
        elif isinstance(source, ItemSource):
            self.load_source(source.base)
            self.load_const(source.key)
            self.emit("BINARY_SUBSCR")
        else:
            raise Unsupported(f"cannot load {source.name()}")

    def load_tensor(self, var):
        if self.graph_out is not None:
            name, index = self.graph_out
            i = index.get(var.node)
            if i is not None:
                self.load_local(name)
                self.load_const(i)
                self.emit("BINARY_SUBSCR")
                return
        if var.source is not None:
            self.load_source(var.source)
            return
        raise Unsupported("a tensor that is neither a graph input nor a graph output")

    def reconstruct(self, var):
        """Leave `var`'s run-time value on the stack."""
        temp = self.built.get(id(var))
        if temp is not None:
            self.load_local(temp)
            return
        var.reconstruct(self)
        # mutable values made by the traced code are built once: every
        # reference (a call's argument, a local passed to a resume
        # function) must be the same object
        if var.built_once and var.source is None:
            temp = self.new_temp()
            self.emit("COPY", arg=1)
            self.store_local(temp)
            self.built[id(var)] = temp
            self.keep.append(var)

    def call_graph(self, info, input_sources, out_name):
        """__compiled_fn_<n>(*inputs) -> local `out_name`.  An attribute or
        item chain that two inputs or more start with (a generic module's
        `self._modules['lin']._parameters`, read for its weight and bias)
        is read once, into a temporary: each read of a module attribute is
        a full getattr (nn.Module's __getattr__ keeps CPython from
        specializing it), so a layer's inputs cost one read per link."""
        self.emit("LOAD_GLOBAL", argval=info.name, push_null=True)
        self.shared_sources, self.source_temps = _shared_chains(input_sources), {}
        try:
            for src in input_sources:
                self.load_source(src)
        finally:
            self.shared_sources, self.source_temps = frozenset(), {}
        self.emit_call(len(input_sources))
        self.store_local(out_name)
        self.temp_names.append(out_name)
