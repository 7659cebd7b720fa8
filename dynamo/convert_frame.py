"""compile_frame: trace one frame, compile its graph, rewrite its code.

Owns the compile pipeline of contract 3: run the InstructionTranslator
(restarting once when a call must become a graph break), collect guards,
graphs, break reasons and resume codes, assemble the rewritten code (same
signature, varnames prefix, cells and free variables as the original, the
usual 3.11 prologue) and install `__compiled_fn_<n>` / `__resume_at_*` in
the frame's globals (remembered: dynamo.reset() removes them). It does not decide whether a frame should be compiled
(filters, cache limits, records, warnings): that is the hook callback's job.
"""
import builtins
import dataclasses
import dis
import sys
import threading
import traceback
import types
import weakref
from typing import Any, Callable, List, Optional

from .bytecode import HAS_PRECALL, arg_slot_count, assemble, prologue
from .exc import Unsupported
from .guards import Guard, SourceError
from . import output_graph
from .output_graph import GraphInfo, OutputGraph

MAX_RESTARTS = 3


@dataclasses.dataclass
class BreakReason:
    """Why and where a graph broke: `reason` text, the user's file:line of
    the innermost frame, and the user stack (outermost first)."""
    reason: str
    filename: Optional[str]
    lineno: Optional[int]
    user_stack: List[traceback.FrameSummary]


@dataclasses.dataclass
class CompileOutput:
    """What compile_frame produced for one frame (see contract 3)."""
    new_code: types.CodeType
    guards: List[Guard]
    graphs: List[GraphInfo]
    break_reasons: List[BreakReason]
    resume_codes: List[types.CodeType]
    original_code: types.CodeType
    direct: Optional[tuple] = None


_PROLOGUE_OPS = ("RESUME", "COPY_FREE_VARS", "MAKE_CELL", "NOP")


def direct_plan(new_code, f_globals):
    """The hook's direct-call plan `(fn, slots, index, line)` when
    `new_code` does nothing but call one compiled graph with argument slots
    and return item `index` of its result (a frame captured whole), else
    None.  Read off the assembled code itself, so the plan is exactly what
    the code would do; the hook then skips the frame (contract 1, "Direct
    calls")."""
    insts = [i for i in dis.get_instructions(new_code) if i.opname not in _PROLOGUE_OPS]
    want = (["PRECALL"] if HAS_PRECALL else []) + ["CALL", "STORE_FAST", "LOAD_FAST", "LOAD_CONST",
                                                   "BINARY_SUBSCR", "RETURN_VALUE"]
    if len(insts) < len(want) + 1:
        return None
    head, loads, tail = insts[0], insts[1:-len(want)], insts[-len(want):]
    if head.opname != "LOAD_GLOBAL" or not head.arg & 1 or head.argval not in f_globals:
        return None
    nargs = arg_slot_count(new_code)
    slots = []
    for inst in loads:
        if inst.opname != "LOAD_FAST" or inst.arg >= nargs:
            return None
        slots.append(inst.arg)
    call, store, load, const, subscr, ret = tail[-6:]
    if ([i.opname for i in tail] != want
            or any(i.arg != len(slots) for i in tail[:-5]) or store.arg != load.arg
            or type(const.argval) is not int or const.argval < 0):
        return None
    line = call.positions.lineno if call.positions and call.positions.lineno else \
        new_code.co_firstlineno
    return f_globals[head.argval], tuple(slots), const.argval, line


class FrameInfo:
    """The frame being compiled: code, argument values by name, globals,
    builtins and the function's closure."""

    def __init__(self, code, f_locals, f_globals, f_builtins, closure):
        self.code = code
        self.f_locals = f_locals
        self.f_globals = f_globals
        self.f_builtins = f_builtins if f_builtins is not None else builtins.__dict__
        self.closure = closure

    def fetch(self, source):
        """Current value at `source` (Unsupported if it cannot be read)."""
        try:
            return source.get(self.f_locals, self.f_globals, self.f_builtins, self.closure)
        except SourceError as e:
            raise Unsupported(f"cannot read {e}") from None


def compile_frame(code, f_locals, f_globals, f_builtins, func, compiler_fn, *,
                  nopython=False, frame_id=None) -> CompileOutput:
    """Trace `code` called with arguments `f_locals` (dict by name) and
    compile it with `compiler_fn(gm, example_inputs) -> callable`.

    Returns a CompileOutput whose new_code is `code` itself when the frame
    has no tensor operation and no graph break. Raises Unsupported when the
    frame cannot be compiled at all (nopython: at the first graph break),
    with `break_reasons` attached when known.
    """
    first_fx = _fx_next_id()
    try:
        return _compile_frame(code, f_locals, f_globals, f_builtins, func, compiler_fn,
                              nopython=nopython)
    finally:
        _note_fx_sources(first_fx)


def _compile_frame(code, f_locals, f_globals, f_builtins, func, compiler_fn, *, nopython):
    from .tracer.frame import InstructionTranslator, RestartAnalysis
    closure = getattr(func, "__closure__", None) if func is not None else None
    frame = FrameInfo(code, f_locals, f_globals, f_builtins, closure)
    break_offset, break_error, break_before = None, None, False
    for _ in range(MAX_RESTARTS):
        output = OutputGraph(frame, compiler_fn)
        tx = InstructionTranslator(output, frame, nopython=nopython,
                                   break_offset=break_offset, break_error=break_error,
                                   break_before=break_before)
        try:
            tx.run()
            break
        except RestartAnalysis as restart:
            break_offset, break_error = restart.offset, restart.error
            break_before = restart.before
        except Unsupported as e:
            if break_error is not None and not hasattr(e, "break_reasons"):
                e.break_reasons = [_break_reason(break_error.reason, break_error.user_stack)]
            raise
        finally:
            output.current_tx = None     # no tx <-> output cycle keeping frame values alive
    else:
        raise Unsupported(f"{code.co_name}: graph break analysis did not settle")
    reasons = []
    if tx.break_info is not None:
        reasons.append(_break_reason(tx.break_info.reason, tx.break_info.user_stack))
    if tx.body is None:
        new_code = code
    else:
        head = prologue(code.co_varnames, code.co_cellvars, code.co_freevars,
                        firstlineno=code.co_firstlineno)
        new_code = assemble(head + tx.body + tx.deopt_tail, code)
    install_globals(f_globals, output.install, owner=new_code)
    # The tracer's objects and this frame form cycles (tracebacks of the
    # exceptions tracing caught) that only the cycle collector frees: no
    # compiled graph may stay reachable from them (not even from a local
    # here), or dropping an entry at the cache limit would not free it.
    output.install = {}
    if new_code is not code:
        _note_made_code(new_code)
    return CompileOutput(new_code=new_code, guards=output.final_guards(), graphs=list(output.graphs),
                         break_reasons=reasons, resume_codes=list(tx.resume_codes),
                         original_code=code,
                         direct=direct_plan(new_code, f_globals) if new_code is not code else None)


# What compile_frame put into user globals, for reset() to take back:
# (globals dict, name, value), strong until then (the values are the
# compiled graphs and resume functions the installed code calls).
_installed = []
_installed_lock = threading.Lock()
# The same items by the code whose compile installed them (the entry's
# new_code, for release_globals): id(code) -> (weak ref to code, [items]).
# Records keep those codes alive until reset(), so the ids stay theirs.
_installed_by = {}


def install_globals(f_globals, names, owner=None):
    """f_globals.update(names), remembered for uninstall_globals() and, when
    `owner` (the code that loads them) is given, for release_globals()."""
    with _installed_lock:
        items = [(f_globals, name, value) for name, value in names.items()]
        for f_globals_, name, value in items:
            f_globals_[name] = value
        _installed.extend(items)
        if owner is not None and items:
            _installed_by.setdefault(id(owner), (weakref.ref(owner), []))[1].extend(items)


def drop_unused_entries(code):
    """Drop the cache entries of `code` that served no call since their
    compile, with what holds their graphs: the globals their compiles
    installed (release_globals) and the backend's callable in their records
    (the records stay, for explain() and the tools).  With no entry left,
    skip-mark `code`.  Returns (dropped records, entries kept)."""
    from . import _C
    dropped = _C.drop_unused(code)
    release_globals([r.new_code for r in dropped if getattr(r, "new_code", None) is not None])
    for record in dropped:
        for info in getattr(record, "graphs", ()):
            info.compiled_fn = None
    kept = len(_C.cache_entries(code))
    if kept == 0:
        _C.set_skip(code)
    return dropped, kept


def release_globals(codes):
    """The cache entries of `codes` (their new_code) were dropped: remove the
    names their compiles installed (the compiled graphs they hold) unless
    another compile installed the same binding too, or a frame running now
    loads the name (those stay until reset()).  Returns the names removed."""
    running = _running_frames()
    removed = []
    with _installed_lock:
        doomed = []
        for code in codes:
            ref, items = _installed_by.get(id(code), (None, ()))
            if ref is not None and ref() is code:
                del _installed_by[id(code)]
                doomed.extend(items)
        shared = {(id(g), name, id(v)) for _ref, items in _installed_by.values()
                  for g, name, v in items}
        for item in doomed:
            f_globals, name, value = item
            if (id(f_globals), name, id(value)) in shared or _loaded_by(running, item):
                continue
            for i, other in enumerate(_installed):
                if other[0] is f_globals and other[1] == name and other[2] is value:
                    del _installed[i]
                    break
            removed.append(item)
    names = []
    for f_globals, name, value in removed:     # frees graphs: user code may run
        if f_globals.get(name, None) is value:
            del f_globals[name]
            names.append(name)
    return names


# The codes compile_frame made that are still alive: they load the
# generated names.  id -> weak reference whose callback drops the entry (a
# WeakSet would hash the code: its co_consts may hold a slice).
_made_codes = {}


def _note_made_code(code):
    key = id(code)
    _made_codes[key] = weakref.ref(code, lambda _ref, key=key: _made_codes.pop(key, None))


def restart_names():
    """After reset(), under the compile lock: number the generated global
    names (`__compiled_fn_<n>`, `__resume_at_<offset>_<n>`,
    `___new_module_*_<n>`) from 0 again when no code that loads such a name
    is alive any more (none can run and find a new function under an old
    name; a frame still running across reset() keeps the numbers going
    until a later reset).  CPython 3.12 makes every interned string, and so
    every name in co_names, immortal: with numbers that only grew, each
    compile/reset cycle kept its names for ever (issue 12: 7 names, ~450
    bytes of RSS a cycle of the leak workload).  True when restarted."""
    from . import resume
    from .tracer.variables import torch as torch_variables
    with _installed_lock:
        if _installed or len(_made_codes) != 0:
            return False
        output_graph.restart_names()
        resume.restart_names()
        torch_variables.restart_names()
    return True


def uninstall_globals():
    """Remove every name compile_frame installed in user globals and still
    bound to what it installed, and the generated source torch.fx kept for
    the graph modules made while compiling (dynamo.reset(): the compiled
    code that loads them is dropped too).  A name that a frame running now
    (on any thread's stack: reset() called from inside a compiled frame,
    say, whose rewritten code calls a resume function after the call) may
    still load stays installed and remembered: the next uninstall takes it
    back once no such frame is left."""
    running = _running_frames()
    with _installed_lock:
        doomed = [item for item in _installed if not _loaded_by(running, item)]
        _installed[:] = [item for item in _installed if _loaded_by(running, item)]
        _installed_by.clear()
        fx_ids = list(_fx_sources)
        _fx_sources.clear()
    for f_globals, name, value in doomed:
        if f_globals.get(name, None) is value:
            del f_globals[name]
    _forget_fx_sources(fx_ids)


def _running_frames():
    """(globals dict, co_names) of every frame on every thread's stack."""
    out = []
    for top in sys._current_frames().values():
        frame = top
        while frame is not None:
            out.append((frame.f_globals, frame.f_code.co_names))
            frame = frame.f_back
    del top, frame          # this frame's own object: no cycle through its locals
    return out


def _loaded_by(running, item):
    """Does a running frame load the installed (globals, name, value) item?"""
    f_globals, name, _ = item
    return any(g is f_globals and name in names for g, names in running)


# torch.fx keeps the source of every GraphModule it generates, for ever
# (its _EvalCacheLoader's eval_cache, and a lazy linecache entry per
# "<eval_with_key>.<n>" file name) so tracebacks can show it.  Ranges
# [first, end) of those numbers taken while compiling (compiles hold the
# compile lock; a GraphModule another thread made in the same window loses
# its traceback source at reset() too).
_fx_sources = []
_FX_KEY = "<eval_with_key>."


def _fx_loader():
    try:
        from torch.fx import graph_module
    except ImportError:             # pragma: no cover - torch without fx
        return None
    loader = getattr(graph_module, "_loader", None)
    return loader if hasattr(loader, "next_id") and hasattr(loader, "eval_cache") else None


def _fx_next_id():
    loader = _fx_loader()
    return loader.next_id if loader is not None else None


def _note_fx_sources(first):
    end = _fx_next_id()
    if first is not None and end is not None and end > first:
        with _installed_lock:
            _fx_sources.append((first, end))


def _forget_fx_sources(ranges):
    loader = _fx_loader()
    if loader is None or not ranges:
        return
    import linecache
    for key in list(loader.eval_cache):
        if not key.startswith(_FX_KEY):
            continue
        digits = key[len(_FX_KEY):].split(" ", 1)[0]
        if digits.isdigit() and any(a <= int(digits) < b for a, b in ranges):
            loader.eval_cache.pop(key, None)
            linecache.cache.pop(key, None)


def _break_reason(reason, user_stack):
    inner = user_stack[-1] if user_stack else None
    return BreakReason(reason=reason, filename=inner.filename if inner else None,
                       lineno=inner.lineno if inner else None, user_stack=list(user_stack))
