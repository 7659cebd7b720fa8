"""InstructionTranslator: the outermost frame of a compile.

Owns the frame's arguments (wrapped lazily on first use, so an argument the
trace never reads gets no guard), the graph breaks and the instructions of
the rewritten code:
- RETURN_VALUE: compile the graph, rebuild the return value, return it;
- POP_JUMP_IF_* on a tensor: compile the graph with the condition as an
  output, emit the original jump and, in each branch, a call of the resume
  function for that branch;
- an Unsupported raised while running a breakable instruction (a call,
  attribute store, ...): abort with RestartAnalysis; the next pass stops
  just before that instruction, compiles the graph so far, runs the
  instruction eagerly in the rewritten code and calls the resume function
  for the next instruction.
Graph ops inside try blocks are traced (config.trace_try_regions): the graph
runs outside the handler, so its call gets a handler of its own that re-runs
the frame eagerly from its start when it raises (emit_guarded_graph_call);
such a graph writes its inputs only at its end (dynamo/input_writes.py);
one with a write that cannot wait keeps such ops Unsupported
(output_graph.check_not_in_try). Breaks inside try blocks
cannot cut the block: any break inside one restarts the analysis to stop
before the statement instead, at the last instruction with an empty stack
outside every try/with: the graph so far, then the statement's own
instructions copied as they are (eager_island: exception table included,
on the real locals), each way out of it (back outside every handler, empty
stack) calling the resume function there. When the statement cannot be cut
out (eager_island is None) the resume function at that point runs the rest
eagerly; with nothing traced before either, the whole frame does.
Non-grad-mode `with` blocks are Unsupported for the whole frame.
"""
import dataclasses
import dis

from ..bytecode import (COND_JUMP, NULL_ABOVE_CALLABLE, arg_slot_count,
                        create_instruction, create_make_function, live_locals)
from ..bytecode.instruction import ExnTabEntry, takes_arg
from ..exc import Unsupported, environment_error
from ..guards import AttrSource, ClosureSource, GlobalSource, ItemSource, LocalSource
from ..codegen import PyCodegen
from .. import _C, config, resume
from ..rng import draws_random, save as rng_save
from .translator import InstructionTranslatorBase
from .variables import (CellVariable, ConstantVariable, LazyIteratorVariable, ListIteratorVariable,
                        NullVariable, PassthroughVariable, TensorVariable, TupleVariable)
from .variables.base import FrameCellOwner, VariableTracker
from .variables.containers import DictVariable, source_depth, write_back_dict
from .variables.misc import replay_call
from .variables.tensor import ScalarOutputVariable
from .variables.symbolic import SymNodeVariable, is_data_dependent

GRAPH_OUT = "___graph_out"
_OPMAP = dis.opmap


def replayed_arguments(output):
    """The argument VTs of the calls replayed after the graph (their tensors
    are graph outputs)."""
    return [a for _, args, kwargs in output.replayed_calls for a in (*args, *kwargs.values())]


# instructions that may run eagerly at a break: opname -> values popped
_BREAK_POPS = {
    "CALL": lambda arg: arg + 2,
    "CALL_KW": lambda arg: arg + 3,             # 3.13: the names tuple too
    "CALL_FUNCTION_EX": lambda arg: 3 + (arg & 1),
    "STORE_ATTR": lambda arg: 2, "DELETE_ATTR": lambda arg: 1,
    "STORE_SUBSCR": lambda arg: 3, "DELETE_SUBSCR": lambda arg: 2,
    "STORE_GLOBAL": lambda arg: 1, "LOAD_ATTR": lambda arg: 1,
    "BINARY_SUBSCR": lambda arg: 2, "BINARY_OP": lambda arg: 2,
    "COMPARE_OP": lambda arg: 2, "CONTAINS_OP": lambda arg: 2,
    "UNARY_NEGATIVE": lambda arg: 1, "UNARY_POSITIVE": lambda arg: 1,
    "UNARY_INVERT": lambda arg: 1, "GET_ITER": lambda arg: 1,
    "UNPACK_SEQUENCE": lambda arg: 1, "BUILD_STRING": lambda arg: arg,
    "FORMAT_VALUE": lambda arg: 1 + bool(arg & 0x04),
    "IMPORT_NAME": lambda arg: 2, "STORE_DEREF": lambda arg: 1,
    # 3.12
    "BINARY_SLICE": lambda arg: 3, "STORE_SLICE": lambda arg: 4,
    "LOAD_SUPER_ATTR": lambda arg: 3, "CALL_INTRINSIC_1": lambda arg: 1,
}

_JUMPS_KEEP_ON_TAKEN = {"JUMP_IF_TRUE_OR_POP", "JUMP_IF_FALSE_OR_POP"}
_TENSOR_JUMPS = {"POP_JUMP_FORWARD_IF_TRUE", "POP_JUMP_FORWARD_IF_FALSE",
                 "POP_JUMP_BACKWARD_IF_TRUE", "POP_JUMP_BACKWARD_IF_FALSE",
                 "POP_JUMP_IF_TRUE", "POP_JUMP_IF_FALSE",
                 "JUMP_IF_TRUE_OR_POP", "JUMP_IF_FALSE_OR_POP"}


def graph_draws_random(gm):
    """Does the torch-level graph `gm` call a function, method or module
    whose aten namesake draws random numbers (tagged nondeterministic_seeded:
    rand, dropout, bernoulli_, nn.Dropout, ...)? A name-based reading, so
    a torch function named unlike its aten op is missed. A dropout that is
    off (training=False, p=0, a Dropout module in eval mode, attention with
    dropout_p=0) draws nothing: eval-mode models keep no RNG save."""
    import torch
    for node in gm.graph.nodes:
        module = None
        if node.op == "call_function":
            name = getattr(node.target, "__name__", "")
        elif node.op == "call_method":
            name = node.target
        elif node.op == "call_module":
            module = gm.get_submodule(node.target)
            name = type(module).__name__.lower()
        else:
            continue
        if draws_random(name) and not _dropout_off(node, name, module):
            return True
    return False


# where a call's dropout switches sit: (position of p, position of training)
# in the torch-level signature; None: keyword only
_DROPOUT_ARGS = {
    "dropout": (1, 2), "alpha_dropout": (1, 2), "feature_alpha_dropout": (1, 2),
    "dropout1d": (1, 2), "dropout2d": (1, 2), "dropout3d": (1, 2),
    "scaled_dot_product_attention": (4, None),
}


def _dropout_off(node, name, module):
    """Is this seeded call a dropout that is switched off (draws nothing)?"""
    if module is not None:
        return "dropout" in name and (not module.training or getattr(module, "p", None) == 0)
    where = _DROPOUT_ARGS.get(name)
    if where is None or node.op != "call_function":
        return False
    p_at, training_at = where

    def arg(pos, key):
        if pos is not None and len(node.args) > pos:
            return node.args[pos]
        return node.kwargs.get(key, _UNSET)
    p = arg(p_at, "dropout_p" if name == "scaled_dot_product_attention" else "p")
    training = arg(training_at, "training") if training_at is not None else _UNSET
    return training is False or (type(p) in (int, float) and p == 0)


_UNSET = object()


def _reads_frame_locals(var):
    """Is `var` a builtin that reads the calling frame's locals?"""
    import builtins
    value = getattr(var, "fn", None)
    return value in (builtins.locals, builtins.vars, builtins.dir)


class RestartAnalysis(Exception):
    """Trace again and break before the instruction at `offset`: run its
    group eagerly, or (`before`) call the resume function at it directly."""

    def __init__(self, offset, error, before=False):
        super().__init__(offset)
        self.offset = offset
        self.error = error
        self.before = before


class BreakInfo:
    """What the compile found about its graph break (for BreakReason)."""

    def __init__(self, reason, user_stack):
        self.reason = reason
        self.user_stack = user_stack


class InstructionTranslator(InstructionTranslatorBase):
    """The outermost frame (see module docstring). After run(): `body` is
    the rewritten code's instruction list after the prologue, or None when
    the original code can be kept; `break_info`, `resume_codes`."""

    def __init__(self, output, frame, *, nopython, break_offset=None, break_error=None,
                 break_before=False):
        code = frame.code
        args = {}
        nargs = arg_slot_count(code)
        for slot, name in enumerate(code.co_varnames[:nargs]):
            if name in frame.f_locals:
                args[name] = PassthroughVariable(LocalSource(name, slot))
        cells = {name: CellVariable(PassthroughVariable(ClosureSource(i, name)), ClosureSource(i, name))
                 for i, name in enumerate(code.co_freevars)}
        real = frame.closure or ()
        for i, (name, cell) in enumerate(cells.items()):
            cell.frame_name = name
            if i < len(real):
                # by the real cell: an inlined closure over the same cell
                # (UserFunctionVariable.closure_cells) gets this variable and
                # reads what the frame wrote to it
                output.closure_cells[id(real[i])] = (real[i], cell)
        super().__init__(output, code, frame.f_globals, args, cells)
        self.frame = frame
        self.nopython = nopython
        self.break_offset = break_offset
        self.break_error = break_error
        self.break_before = break_before
        self.safe_point = None         # (offset, op count): last point a try can be cut off at
        self.body = None
        self.deopt_tail = []           # emit_guarded_graph_call's handler, after the body
        self.break_info = None
        self.resume_codes = []
        self.iter_temps = {}           # stack temporary holding an iterator -> resume mask kind
        self.iter_local_temps = {}     # iterator local -> temporary holding its remaining items
        self.break_probe = None        # _C.BreakProbe timing the break's eager region, or None

    # ------------------------------------------------------------ driver
    def step(self, inst):
        if self.break_offset is not None and inst.offset == self.break_offset:
            if self.break_before:
                self.break_before_instruction(inst)
            else:
                self.break_at_instruction(inst)
            return
        if not self.stack and not self.with_stack and inst.exn_tab_entry is None:
            self.safe_point = (inst.offset, self.output.op_count())
        try:
            super().step(inst)
        except Unsupported as e:
            env = environment_error(e)
            if env is not None:
                raise env          # this call's environment, not the code: no break for it
            if self.nopython:
                raise
            if e.user_raise and self.output.saw_is_compiling and not self.in_try_region():
                # the raise may exist only because is_compiling() said True
                # (a value eager code would have set left unset): a break
                # here would hand that value to eager code, which raises
                # where eager does not. The frame runs eagerly, as a whole.
                err = Unsupported(f"{e.reason} (user code raises on a path it took because "
                                  f"torch.compiler.is_compiling() is True; the frame runs eagerly)",
                                  e.user_stack or self.user_stack())
                raise err from e
            start = self.break_group_start(inst)
            if start is not None and self.can_break_at(inst) and self.in_loop(inst):
                raise self.loop_break(e) from e
            if start is None or not self.can_break_at(inst):
                if not e.user_stack:
                    e.add_user_stack(self.user_stack())
                if (self.in_try_region() or self.in_comprehension()) and self.safe_point:
                    # the try cannot be cut: the graph so far ends before
                    # the statement, which runs eagerly (break_before_instruction)
                    raise RestartAnalysis(self.safe_point[0], e, before=True) from None
                raise
            if not e.user_stack:
                e.add_user_stack(self.user_stack())
            raise RestartAnalysis(start.offset, e) from None

    def in_loop(self, inst):
        """Is `inst` inside a loop of this frame, where config.
        skip_frame_on_loop_break has a break run the frame eagerly: some
        jump at or after it, before the first return, targets it or an
        instruction before it (torch.compile's test, a heuristic: a loop
        that returns from its body is missed, a jump back before an
        unrelated later return is taken for one)."""
        if not config.skip_frame_on_loop_break:
            return False
        # a comprehension inlined into the frame (3.12+) is a loop of its
        # own whose break runs the statement eagerly (in_comprehension): its
        # jumps back, covered by its cleanup handler, are not the frame's loop
        comp = inst.exn_tab_entry.target if self.in_comprehension() else None
        i = self.index_of[id(inst)]
        for later in self.instructions[i:]:
            if later.opname in ("RETURN_VALUE", "RETURN_CONST"):
                return False
            target = getattr(later, "target", None)
            if target is not None and self.index_of.get(id(target), i + 1) <= i:
                if comp is not None and later.exn_tab_entry is not None and \
                        later.exn_tab_entry.target is comp:
                    continue
                return True
        return False

    def loop_break(self, e):
        """The Unsupported that runs the frame eagerly for break `e`
        inside a loop (in_loop)."""
        err = Unsupported(f"{e.reason} (a graph break in a loop: the frame runs eagerly)",
                          e.user_stack or self.user_stack())
        return err

    def break_group_start(self, inst):
        """First instruction of the group that runs eagerly for a break at
        `inst` ([KW_NAMES] PRECALL CALL), or None if `inst` cannot break."""
        if inst.opname not in _BREAK_POPS:
            return None
        i = self.index_of[id(inst)]
        if inst.opname == "CALL":
            while i > 0 and self.instructions[i - 1].opname in ("PRECALL", "KW_NAMES"):
                i -= 1
        return self.instructions[i]

    # ------------------------------------------------------------ values
    def collect(self, var, out, seen):
        """Every VT reachable from `var` (for graph outputs)."""
        if id(var) in seen or not isinstance(var, VariableTracker):
            return
        seen.add(id(var))
        out.append(var)
        for attr in ("items", "obj", "value", "attrs", "defaults", "kwdefaults", "closure",
                     "annotations"):
            child = getattr(var, attr, None)
            if isinstance(child, dict):
                for v in child.values():
                    self.collect(v, out, seen)
            elif isinstance(child, list):
                for v in child:
                    self.collect(v, out, seen)
            elif isinstance(child, VariableTracker):
                self.collect(child, out, seen)

    def compile_graph(self, roots, branch_on=None):
        found, seen = [], set()
        mutated = list(self.output.mutated_lists.values()) + \
            [value for _, value, _ in self.output.attr_stores.values()] + \
            [value for _, value in self.output.global_stores.values()] + \
            replayed_arguments(self.output)
        for var in list(roots) + mutated:
            self.collect(var, found, seen)
        info, index, sources = self.output.compile_graph(
            [v for v in found if isinstance(v, (TensorVariable, ScalarOutputVariable, SymNodeVariable))],
            branch_on)
        if info is not None:
            self.output.graphs.append(info)
        cg = PyCodegen(self.code, (GRAPH_OUT, index))
        cg.f_globals = self.f_globals        # nested functions are rebuilt only with these
        if info is not None and self.output.deopt:
            self.emit_guarded_graph_call(cg, info, sources)
        elif info is not None:
            cg.call_graph(info, sources, GRAPH_OUT)
        return cg

    def emit_guarded_graph_call(self, cg, info, sources):
        """The graph call for a graph with ops a user handler covers
        (output.deopt): an exception (Exception, not BaseException) from it
        leaves the handler-less try the rewritten code puts around the call
        and re-runs this code eagerly from its start (resume.run_original),
        returning what that returns. Nothing Python-visible happened before
        the call (the traced side effects are replayed after it) and the
        graph writes its inputs only after its last op that can raise
        (input_writes.py; check_not_in_try refuses the others), so the
        re-run sees what the original call saw; a graph drawing random
        numbers saves the RNG states (CPU, CUDA) before the call for it. The
        handler goes in `deopt_tail`, after the body."""
        rng = None
        if graph_draws_random(info.gm):
            rng = cg.new_temp("___rng")
            cg.load_const(rng_save)
            cg.call(0)
            cg.store_local(rng)
        start = len(cg.insts)
        cg.call_graph(info, sources, GRAPH_OUT)
        handler = create_instruction("PUSH_EXC_INFO")
        entry = ExnTabEntry(cg.insts[start], cg.insts[-1], handler, 0, False)
        for inst in cg.insts[start:]:
            inst.exn_tab_entry = entry
        tail = PyCodegen(self.code)
        reraise = create_instruction("RERAISE", arg=0)
        cleanup = create_instruction("COPY", arg=3)
        tail.append(handler)                     # [prev exc, exc]
        tail.load_const(Exception)
        tail.emit("CHECK_EXC_MATCH")
        tail.append(create_instruction(COND_JUMP["FALSE"], target=reraise))
        tail.emit("POP_TOP")
        in_handler = ExnTabEntry(handler, tail.insts[-1], cleanup, 1, True)
        for inst in tail.insts:
            inst.exn_tab_entry = in_handler
        tail.emit("POP_EXCEPT")                  # out of the handler: no __context__
        tail.load_const(resume.run_original)
        tail.load_const(self.code)
        tail.load_const(self.f_globals)
        if self.code.co_freevars:
            for fv in self.code.co_freevars:
                tail.emit("LOAD_CLOSURE", argval=fv)
            tail.emit("BUILD_TUPLE", arg=len(self.code.co_freevars))
        else:
            tail.load_const(None)
        tail.load_const(self.output.initial_grad)
        if rng is None:
            tail.load_const(None)
        else:
            tail.load_local(rng)
        nargs = arg_slot_count(self.code)
        for name in self.code.co_varnames[:nargs]:
            tail.load_local(name)
        tail.emit("BUILD_TUPLE", arg=nargs)
        tail.call(6)
        tail.emit("RETURN_VALUE")
        reraise.exn_tab_entry = in_handler
        tail.append(reraise)
        tail.append(cleanup)
        tail.emit("POP_EXCEPT")
        tail.emit("RERAISE", arg=1)
        self.deopt_tail = tail.insts

    def write_back_lists(self, cg):
        """Argument lists the trace changed get their final items:
        `lst[:] = [items]`, objects passed in their stored attributes, globals
        the trace assigned their last value, cells of the frame that closures
        made by `cg` hold their value. Emitted after every other value was rebuilt
        (those may be read from the list through its source); stack-neutral."""
        # reloaded through containers the trace may also have changed: the
        # deepest first, their bases still hold them then
        for lst in sorted(self.output.mutated_lists.values(), key=lambda v: -source_depth(v.source)):
            if isinstance(lst, DictVariable):       # write_back_dict(d, {final items})
                cg.load_const(write_back_dict)
                cg.load_source(lst.source)
                cg.reconstruct(DictVariable(lst.items))
                cg.call(2)
                cg.emit("POP_TOP")
                continue
            for item in lst.items:
                cg.reconstruct(item)
            cg.emit("BUILD_LIST", arg=len(lst.items))
            cg.load_source(lst.source)
            cg.load_const(slice(None))
            cg.emit("STORE_SUBSCR")
        # every value (and target) is loaded before the first store: a value
        # may be read through a cell or global stored here (`a, b = b, a`
        # on two cells of the frame)
        stores = []
        closed = {inst.argval for inst in cg.insts if inst.opname == "LOAD_CLOSURE"}
        for name, cell in self.cells.items():
            # a cell of the frame a closure made here holds: the value the
            # trace gave it (a cell with a source is in attr_stores if written)
            if name in closed and getattr(cell, "frame_name", None) == name and \
                    cell.source is None and cell.value is not None:
                cg.reconstruct(cell.value)
                stores.append(create_instruction("STORE_DEREF", argval=name))
        for (_, name), (owner, value, _) in self.output.attr_stores.items():
            cg.reconstruct(value)           # obj.name = value
            if isinstance(owner, FrameCellOwner):
                stores.append(create_instruction("STORE_DEREF", argval=owner.name))
                continue
            cg.load_source(owner.source)
            stores.append(create_instruction("STORE_ATTR", argval=name))
        for (_, name), (f_globals, value) in self.output.global_stores.items():
            cg.reconstruct(value)           # the global = value, in its module
            if f_globals is self.output.frame.f_globals:
                stores.append(create_instruction("STORE_GLOBAL", argval=name))
            else:
                cg.load_source(GlobalSource(self.output.globals_alias(f_globals)))
                cg.load_const(name)
                stores.append(create_instruction("STORE_SUBSCR"))
        for inst in reversed(stores):
            cg.append(inst)
        for fn, args, kwargs in self.output.replayed_calls:      # logger.warning(...), once more
            cg.load_const(replay_call)
            cg.reconstruct(fn)
            cg.reconstruct(TupleVariable(list(args)))
            cg.reconstruct(DictVariable(dict(kwargs)))
            cg.call(3)
            cg.emit("POP_TOP")

    def live_values(self, index):
        """(name, VT) of the locals live at instruction `index` that have a
        value, in co_varnames order (cell variables included)."""
        live = live_locals(self.instructions, index, include_cells=True)
        lead = self.lead_local()
        if lead is not None:
            live = set(live) | {lead}      # zero-argument super() reads it implicitly
        order = {n: i for i, n in enumerate(self.code.co_varnames + self.code.co_cellvars)}
        out = []
        for name in sorted(live, key=lambda n: order.get(n, len(order))):
            if name in self.code.co_freevars:
                continue
            if name in self.cells:
                value = self.cells[name].value
            else:
                value = self.locals.get(name)
            if value is not None:
                out.append((name, value))
        return out

    def lead_local(self):
        """The local every resume function of this frame takes first (the
        method's first argument, for zero-argument super()), or None."""
        return resume.lead_local(resume.base_code(self.code))

    def load_lead(self, cg, names):
        """Push the lead local when it is among the resume function's
        `names` (it goes before the stack values); returns the names still
        to load after them."""
        lead = self.lead_local()
        if lead is None or lead not in names:
            return list(names)
        cg.load_local(lead)
        return [n for n in names if n != lead]

    def all_values(self):
        """(name, VT) of every local and cell variable that has a value, in
        co_varnames order."""
        out = []
        for name in self.code.co_varnames + self.code.co_cellvars:
            value = self.cells[name].value if name in self.cells else self.locals.get(name)
            if value is not None and not isinstance(value, PassthroughVariable):
                out.append((name, value))
        return out

    def iterator_locals(self, stack, named, shared):
        """{name: tuple VT of its remaining items} for the locals among
        `named` holding an iterator the trace made whose snapshot is exact
        (iterator_kind ITER) and that nothing but that local refers to (not
        on the stack, not inside another value, not a cell): resume
        functions get the tuple, and their prologue rebinds the local to
        iter(tuple) (resume_code's iter_locals), so next() on it keeps
        tracing instead of breaking on an opaque iterator."""
        reach, seen = [], set()
        for var in stack:
            self.collect(var, reach, seen)
        for _, var in named:
            for attr in ("items", "obj", "value", "attrs", "closure", "defaults", "kwdefaults"):
                child = getattr(var, attr, None)
                for c in (child.values() if isinstance(child, dict) else
                          child if isinstance(child, list) else [child]):
                    self.collect(c, reach, seen)
        counts = {}
        for _, var in named:
            counts[id(var)] = counts.get(id(var), 0) + 1
        out = {}
        for name, var in named:
            if (type(var) is ListIteratorVariable and var.source is None and name not in self.cells
                    and name in self.code.co_varnames and counts[id(var)] == 1
                    and id(var) not in seen and self.iterator_kind(var, shared) == resume.ITER):
                out[name] = TupleVariable(var.rest())
        return out

    def materialize(self, cg, stack, named, n_resume=None, iter_locals=True):
        """Rebuild `stack` (NULLs skipped) into temporaries and `named`
        locals into their variables; returns the temporaries (None for
        NULLs). Everything is loaded before anything is stored, so sources
        naming arguments still see the original arguments; the argument
        lists and objects the trace changed are written back in between. Iterators among
        the first `n_resume` stack values (those handed to a resume
        function; default all) are stored as iterator_kind says (the tuple
        of their remaining items; a list iterator as (list, position), so
        the resume function iterates the live list) and their temporaries
        added to `self.iter_temps`. With `iter_locals`, iterator locals
        only that local refers to are also saved as tuples of their
        remaining items (`self.iter_local_temps`, see iterator_locals)."""
        temps = []
        stores = []
        aliased = {id(v) for _, v in named}
        n_resume = len(stack) if n_resume is None else n_resume
        shared = self.reachable_containers(stack, named)
        self.iter_local_temps = {}
        if iter_locals:
            for name, rest in self.iterator_locals(stack, named, shared).items():
                rest.reconstruct(cg)
                # not a registered temporary: delete_temps() (before the
                # eager group) must leave it for the resume call after it
                self.iter_local_temps[name] = f"___iterlocal_{next(cg.temps)}"
                cg.store_local(self.iter_local_temps[name])
        for i, var in enumerate(stack):
            if isinstance(var, NullVariable):
                temps.append(None)
                continue
            kind = None
            if i < n_resume and id(var) not in aliased:
                kind = self.iterator_kind(var, shared)
            if kind in (resume.LIST_ITER, resume.REVERSED_LIST_ITER):   # the live list, the position
                TupleVariable([var.seq, ConstantVariable(var.index)]).reconstruct(cg)
            elif kind == resume.ITER:         # a snapshot is exact here
                rest = var.remaining() if isinstance(var, LazyIteratorVariable) else var.rest()
                TupleVariable(rest).reconstruct(cg)
            else:
                cg.reconstruct(var)
            temps.append(cg.new_temp("___stack"))
            stores.append(temps[-1])
            if kind is not None:
                self.iter_temps[temps[-1]] = kind
        for name, var in named:
            if isinstance(var.source, LocalSource) and var.source.local_name == name:
                continue          # the argument itself, still in its variable
            cg.reconstruct(var)
            stores.append(name)
        # before the stores: a mutated list's source may be a local given
        # a new value here (`l0 = l0 + [1]` where l0 named the list)
        self.write_back_lists(cg)
        for name in reversed(stores):
            cg.store_local(name)
        return temps

    def reachable_containers(self, stack, named):
        """ids of the VTs reachable from `named` and from the stack values
        other than iterators: the containers code run after the break can
        reach (and mutate) other than through an iterator over them."""
        found, seen = [], set()
        for _, var in named:
            self.collect(var, found, seen)
        for var in stack:
            if not isinstance(var, ListIteratorVariable):
                self.collect(var, found, seen)
        return seen

    @staticmethod
    def iterator_kind(var, shared):
        """How a resume function gets iterator `var` (resume_code's mask
        entry), or None: passed as the real object (a dict iterator, which
        must raise if the dict changes; enumerate/zip over a live one). A
        container only the iterator reaches (no source, not in `shared`)
        cannot change: the snapshot of its remaining items is exact."""
        def escapes(container):
            return container.source is not None or id(container) in shared
        if type(var) is ListIteratorVariable:
            if var.is_live_list() and escapes(var.seq):
                return resume.REVERSED_LIST_ITER if var.reverse else resume.LIST_ITER
            if var.dict_seq is not None and not var.exhausted and escapes(var.dict_seq):
                return None
            return resume.ITER
        if type(var) is LazyIteratorVariable:
            inners = list(var.inners)
            while inners:
                it = inners.pop()
                if isinstance(it, LazyIteratorVariable):
                    inners += it.inners
                elif not it.exhausted and any(c is not None and escapes(c) for c in (it.seq, it.dict_seq)):
                    return None
            return resume.ITER
        return None

    def load_resume_function(self, cg, target, null_mask, names):
        """Push NULL and __resume_at_<offset>_<n> for a resume at `target`
        with that stack shape and those locals."""
        base, offset = resume.origin(self.code, target.offset)
        iter_names = tuple(n for n in names if n in self.iter_local_temps)
        code, name = resume.resume_code(base, offset, tuple(null_mask), tuple(names), iter_names)
        self.resume_codes.append(code)
        if self.code.co_freevars:
            if not NULL_ABOVE_CALLABLE:
                cg.emit("PUSH_NULL")
            for fv in self.code.co_freevars:
                cg.emit("LOAD_CLOSURE", argval=fv)
            cg.emit("BUILD_TUPLE", arg=len(self.code.co_freevars))
            cg.load_const(code)
            for mk in create_make_function(0x08):
                cg.append(mk)
            if NULL_ABOVE_CALLABLE:
                cg.emit("PUSH_NULL")
        else:
            self.output.install[name] = resume.make_function(code, self.frame.f_globals, name)
            cg.emit("LOAD_GLOBAL", argval=name, push_null=True)

    def stack_kind(self, temp):
        """resume_code's mask entry for a stack temporary (None: a NULL)."""
        if temp is None:
            return True
        return self.iter_temps.get(temp, False)

    def emit_resume_call(self, cg, target, stack_temps, named):
        """Call the resume function at `target` with the stack held in
        `stack_temps` (None: a NULL) and the locals `named`; return its result."""
        names = [n for n, _ in named]
        self.load_resume_function(cg, target, [self.stack_kind(t) for t in stack_temps], names)
        rest = self.load_lead(cg, names)
        nargs = len(names) - len(rest)
        for temp in stack_temps:
            if temp is not None:
                cg.load_local(temp)
                nargs += 1
        self.finish_resume_call(cg, rest, nargs)

    def start_break_probe(self, cg):
        """The eager region of the break begins here (after the graph call):
        a BreakProbe (core/breakprobe.h) counts its runs and times a sample
        of them, up to each resume call (finish_resume_call). Two C calls
        per run, no Python frame; none with config.break_timing off."""
        if config.break_timing:
            self.break_probe = _C.BreakProbe()
            cg.call_probe(self.break_probe.start)

    def finish_resume_call(self, cg, names, nargs_on_stack):
        for n in names:
            cg.load_local(self.iter_local_temps.get(n, n))
        nargs = nargs_on_stack + len(names)
        if self.break_probe is not None:
            cg.call_probe(self.break_probe.stop)
        cg.emit_call(nargs)
        cg.emit("RETURN_VALUE")

    def set_run_time_grad_mode(self, cg):
        """The graph restores the entry grad mode; set the traced mode for
        the code that runs eagerly after it (inside a no_grad block), or for
        the caller after a return (a set_grad_enabled call outlives it)."""
        import torch
        if self.output.grad_enabled != self.output.initial_grad:
            cg.load_const(torch._C._set_grad_enabled)
            cg.load_const(self.output.grad_enabled)
            cg.call(1)
            cg.emit("POP_TOP")

    # ------------------------------------------------------------ breaks
    def RETURN_VALUE(self, inst):
        value = self.pop()
        if self.output.only_int_arithmetic():
            # ints made symbolic by a recompile, no tensor anywhere: a graph
            # would do in microseconds what the bytecode does in nanoseconds
            raise Unsupported("the frame computes with ints only (symbolic after a recompile "
                              "on their values): nothing for a graph; it runs eagerly")
        cg = self.compile_graph([value])
        if not self.output.graphs:
            self.body = None        # nothing compiled: keep the original code
        else:
            cg.reconstruct(value)
            self.write_back_lists(cg)
            # torch.set_grad_enabled(b) called (not a `with`) outlives the frame;
            # a resume function that left a grad-mode block it began inside
            # returns in the mode after the block, not its entry mode
            self.set_run_time_grad_mode(cg)
            cg.emit("RETURN_VALUE")
            self.body = cg.insts
        self.done = True

    # a branch on a value only the graph computes (a tensor, a captured
    # Tensor.item() number, an unbacked SymInt relation): the graph ends
    # with it as an output
    _GRAPH_VALUES = (TensorVariable, ScalarOutputVariable)

    def _is_graph_value(self, v):
        if isinstance(v, TensorVariable) and v.known_truth(self) is not None:
            return False        # made from constants alone: its truth is known (TensorVariable.truth)
        return isinstance(v, self._GRAPH_VALUES) or is_data_dependent(v)

    def _pop_jump(self, inst, jump_if):
        if not self._is_graph_value(self.stack[-1]):
            return super()._pop_jump(inst, jump_if)
        self.tensor_jump(inst)

    def JUMP_IF_TRUE_OR_POP(self, inst):
        if self._is_graph_value(self.stack[-1]):
            return self.tensor_jump(inst)
        return super().JUMP_IF_TRUE_OR_POP(inst)

    def JUMP_IF_FALSE_OR_POP(self, inst):
        if self._is_graph_value(self.stack[-1]):
            return self.tensor_jump(inst)
        return super().JUMP_IF_FALSE_OR_POP(inst)

    def tensor_jump(self, inst):
        if self.nopython or not self.can_break_at(inst):
            raise Unsupported("generic_jump TensorVariable()")
        if self.in_loop(inst):
            raise self.loop_break(Unsupported("generic_jump TensorVariable()"))
        self.break_info = BreakInfo("generic_jump TensorVariable()", self.user_stack())
        cond = self.pop()
        i = self.index_of[id(inst)]
        taken, fall = self.instructions.index(inst.target), i + 1
        live_taken, live_fall = self.live_values(taken), self.live_values(fall)
        named = dict(live_fall)
        named.update(live_taken)
        order = list(self.code.co_varnames + self.code.co_cellvars)
        named = sorted(named.items(), key=lambda kv: order.index(kv[0]) if kv[0] in order else len(order))
        cg = self.compile_graph([v for _, v in named] + self.stack + [cond], branch_on=cond)
        self.start_break_probe(cg)
        temps = self.materialize(cg, self.stack, named)
        keep = inst.opname in _JUMPS_KEEP_ON_TAKEN
        cond_temp = None
        if keep:
            cg.reconstruct(cond)
            cond_temp = cg.new_temp("___stack")
            cg.store_local(cond_temp)
            cg.load_local(cond_temp)
        else:
            cg.reconstruct(cond)
        self.set_run_time_grad_mode(cg)
        jump_name = inst.opname
        if keep:      # the cond was saved: a popping jump suffices
            jump_name = COND_JUMP["TRUE" if "TRUE" in inst.opname else "FALSE"]
        label = create_instruction("NOP")
        if "TO_BOOL" in _OPMAP and "NONE" not in jump_name:
            cg.emit("TO_BOOL")         # 3.13's jumps test an exact bool
        cg.append(create_instruction(jump_name, target=label))
        self.emit_resume_call(cg, self.instructions[fall], temps, [kv for kv in named if kv in live_fall])
        cg.append(label)
        taken_stack = temps + ([cond_temp] if keep else [])
        self.emit_resume_call(cg, inst.target, taken_stack, [kv for kv in named if kv in live_taken])
        self.body = cg.insts
        self.done = True

    def break_before_instruction(self, inst):
        """Second pass of a break before a try statement (the stack is
        empty at `inst`): the graph so far, then the statement run eagerly
        as an island with resume calls at its exits, or, without an island,
        the resume function at `inst` (its own trace finds the same try at
        its start with nothing traced before it, so it runs eagerly)."""
        err = self.break_error
        self.break_info = BreakInfo(err.reason if err else "graph break", err.user_stack if err else [])
        named = self.live_values(self.index_of[id(inst)])
        island = eager_island(self.instructions, self.index_of[id(inst)], {n for n, _ in named},
                              self.code.co_freevars)
        if self.stack or (self.output.op_count() == 0 and island is None):
            raise err or Unsupported("graph break before a try block")
        cg = self.compile_graph([v for _, v in named])
        self.start_break_probe(cg)
        # an island runs user code on the real locals: iterators stay real
        # materialize wrote the traced mutations back (before the stores: a
        # local rebound since may have named the list; writing again after
        # them wrote the argument list's items into the new value)
        temps = self.materialize(cg, [], named, iter_locals=island is None)
        self.set_run_time_grad_mode(cg)
        if island is None:
            self.emit_resume_call(cg, inst, temps, named)
        else:
            self.emit_island(cg, *island)
        self.body = cg.insts
        self.done = True

    def emit_island(self, cg, region, exits):
        """The try statement's own instructions (copies, exception table
        included) run here on the real locals; each way out of it calls the
        resume function at the instruction it leaves to."""
        cg.delete_temps()
        order = {n: i for i, n in enumerate(self.code.co_varnames + self.code.co_cellvars)}
        copies, stubs = {}, {}
        for n in region:
            copies[n] = dataclasses.replace(self.instructions[n], offset=None, target=None,
                                            exn_tab_entry=None, is_jump_target=False)
        for n, names in exits.items():
            # the exit's resume call reads, in tracebacks, as the line it leaves to
            stubs[n] = create_instruction("NOP")
            stubs[n].positions = self.instructions[n].positions
        entries = {}

        def mapped(n):
            return copies[n] if n in copies else stubs[n]
        for n in region:
            orig, c = self.instructions[n], copies[n]
            if orig.target is not None:
                c.target = mapped(self.index_of[id(orig.target)])
            e = orig.exn_tab_entry
            if e is not None:
                if id(e) not in entries:
                    from ..bytecode.instruction import ExnTabEntry
                    entries[id(e)] = ExnTabEntry(c, c, mapped(self.index_of[id(e.target)]),
                                                 e.depth, e.lasti)
                c.exn_tab_entry = entries[id(e)]
        ordered = sorted(region)
        for k, n in enumerate(ordered):
            cg.append(copies[n])
            orig = self.instructions[n]
            if orig.opname in _TERMINATORS:
                continue
            nxt = n + 1
            if k + 1 < len(ordered) and ordered[k + 1] == nxt:
                continue
            cg.append(create_instruction("JUMP_FORWARD", target=mapped(nxt)))
        for n, names in sorted(exits.items()):
            cg.append(stubs[n])
            names = sorted(names, key=lambda x: order.get(x, len(order)))
            self.load_resume_function(cg, self.instructions[n], [], names)
            self.finish_resume_call(cg, names, 0)

    def detach_data_read(self, last, operands, others):
        """A break at `t.item()` / `t.tolist()` of a computed tensor that
        requires grad, where nothing else left behind (`others`: the live
        locals and the stack under the call; the containers the trace
        wrote) holds t: the graph hands on `t.detach()` instead. Only the
        call reads it, so nobody can backward through it; a graph output
        that requires grad made aot's one autograd node keep the values
        t's backward needs and check them in every backward (eager's
        backward never reaches t: a later in-place write of such a value
        raised only in the compiled run)."""
        import torch
        from .variables.functions import BoundMethodVariable
        from .variables.tensor import TensorVariable
        if last.opname != "CALL" or last.arg or not self.output.grad_enabled:
            return
        k = next((i for i, v in enumerate(operands) if isinstance(v, BoundMethodVariable)), None)
        if k is None or operands[k].name not in ("item", "tolist"):
            return
        t = operands[k].obj
        if not isinstance(t, TensorVariable) or t.node.op in ("placeholder", "get_attr") or \
                t.cls is not torch.Tensor or not t.example.requires_grad:
            return
        found, seen = [], set()
        mutated = list(self.output.mutated_lists.values()) + \
            [value for _, value, _ in self.output.attr_stores.values()] + \
            [value for _, value in self.output.global_stores.values()] + \
            replayed_arguments(self.output) + \
            [cell for _, cell in self.output.closure_cells.values()] + list(self.cells.values())
        for var in list(others) + [v for i, v in enumerate(operands) if i != k] + mutated:
            self.collect(var, found, seen)
        if any(getattr(v, "node", None) is t.node for v in found):
            return
        detached = self.output.call_method(self, "detach", [t], {})
        if isinstance(detached, TensorVariable):
            pos = len(self.stack) - len(operands) + k
            self.stack[pos] = operands[k] = BoundMethodVariable(detached, operands[k].name)

    def break_at_instruction(self, inst):
        """Second pass: stop before `inst`, run its group eagerly."""
        err = self.break_error
        self.break_info = BreakInfo(err.reason if err else "graph break", err.user_stack if err else [])
        if not self.can_break_at(inst):
            raise err or Unsupported("graph break inside a try/with block")
        i = self.index_of[id(inst)]
        j = i
        while self.instructions[j].opname in ("KW_NAMES", "PRECALL"):
            j += 1
        group = self.instructions[i:j + 1]
        last = group[-1]
        npop = _BREAK_POPS[last.opname](last.arg or 0)
        # 3.11 splits a call's effect between PRECALL (-n) and CALL (-1)
        npush = npop + sum(dis.stack_effect(g.opcode, g.arg if takes_arg(g.opcode) else None)
                           for g in group)
        deep, operands = self.stack[:len(self.stack) - npop], self.stack[len(self.stack) - npop:]
        named = self.live_values(j + 1)
        reads_locals = last.opname in ("CALL", "CALL_KW") and any(_reads_frame_locals(v) for v in operands[:2])
        if reads_locals:
            named = self.all_values()      # locals()/vars()/dir() see dead locals too
        else:
            self.detach_data_read(last, operands, [v for _, v in named] + deep)
        cg = self.compile_graph([v for _, v in named] + self.stack)
        self.start_break_probe(cg)
        # the operands run in the eager group: iterators stay real iterators
        temps = self.materialize(cg, deep + operands, named, n_resume=len(deep),
                                 iter_locals=not reads_locals)
        deep_temps, operand_temps = temps[:len(deep)], temps[len(deep):]
        # the resume function goes under everything the break leaves behind
        names = [n for n, _ in named]
        self.load_resume_function(cg, self.instructions[j + 1],
                                  [self.stack_kind(t) for t in deep_temps] + [False] * npush, names)
        rest = self.load_lead(cg, names)
        n_deep = len(names) - len(rest)
        for temp in deep_temps:
            if temp is not None:
                cg.load_local(temp)
                n_deep += 1
        for temp in operand_temps:
            if temp is None:
                cg.emit("PUSH_NULL")
            else:
                cg.load_local(temp)
        cg.delete_temps()          # every temporary is on the stack now
        self.set_run_time_grad_mode(cg)
        for orig in group:
            copy = create_instruction(orig.opname, arg=orig.arg, argval=orig.argval)
            copy.positions = orig.positions
            cg.append(copy)
        self.finish_resume_call(cg, rest, n_deep + npush)
        self.body = cg.insts
        self.done = True



_TERMINATORS = {"RETURN_VALUE", "RETURN_CONST", "RAISE_VARARGS", "RERAISE", "JUMP_FORWARD",
                "JUMP_BACKWARD", "JUMP_BACKWARD_NO_INTERRUPT"}
_DEL_OPS = {"DELETE_FAST", "DELETE_DEREF"}
_STORE_OPS = {"STORE_FAST", "STORE_DEREF"}


def eager_island(insts, start, bound, freevars=()):
    """The try/with statement starting at instruction `start` (empty stack,
    outside every handler) as (region, exits) for running it eagerly in the
    rewritten frame: `region` the indices of its instructions (reachable from
    `start` through jumps and exception edges without leaving the protected
    code), `exits` {index of the first instruction outside it reached: live
    locals there}. None when the statement cannot be cut out that way (no
    straight line into a protected block, a way out with values on the
    stack or with a live local that may be unbound there, `bound` being the
    locals bound at `start`)."""
    k = start
    while k < len(insts) and insts[k].exn_tab_entry is None:
        inst = insts[k]
        if inst.target is not None or inst.opname in _TERMINATORS or inst.opname == "FOR_ITER":
            return None
        k += 1
    if k >= len(insts):
        return None
    index_of = {id(inst): i for i, inst in enumerate(insts)}
    # 3.12+ inlined comprehensions: LOAD_FAST_AND_CLEAR saves a name that may
    # be unbound (NULL) and a later STORE_FAST puts that back, so a store to
    # such a name binds it only if it was bound at `start`
    cleared = {inst.argval for inst in insts if inst.opname == "LOAD_FAST_AND_CLEAR"} - set(bound)
    state = {start: (0, frozenset(bound))}
    work = [start]
    region, exits = set(), {}
    while work:
        n = work.pop()
        depth, names = state[n]
        inst = insts[n]
        if not start <= n < k and inst.exn_tab_entry is None and depth == 0:
            exits[n] = names         # back outside every handler, nothing pending
            continue
        region.add(n)
        after = names
        if inst.opname in _STORE_OPS and inst.argval not in cleared:
            after = names | {inst.argval}
        elif inst.opname in _DEL_OPS:
            after = names - {inst.argval}
        arg = inst.arg if takes_arg(inst.opcode) else None
        succ = []
        if inst.opname not in _TERMINATORS and n + 1 < len(insts):
            succ.append((n + 1, depth + dis.stack_effect(inst.opcode, arg, jump=False), after))
        if inst.target is not None:
            succ.append((index_of[id(inst.target)], depth + dis.stack_effect(inst.opcode, arg, jump=True),
                         after))
        e = inst.exn_tab_entry
        if e is not None:
            succ.append((index_of[id(e.target)], e.depth + int(bool(e.lasti)) + 1, names & after))
        for m, d, live in succ:
            old = state.get(m)
            if old is None:
                state[m] = (d, live)
                work.append(m)
            else:
                if old[0] != d:
                    return None
                merged = old[1] & live
                if merged != old[1]:
                    state[m] = (d, merged)
                    work.append(m)
    out = {}
    for n in exits:
        names = exits[n] = state[n][1]       # final (merged) state
        live = live_locals(insts, n, include_cells=True) - set(freevars)
        if not live <= names:
            return None
        out[n] = live
    if not out:
        out = {}
    return sorted(region), out
