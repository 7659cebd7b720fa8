"""compile_frame: trace one frame, compile its graph, rewrite its code.

Owns the compile pipeline of contract 3: run the InstructionTranslator
(restarting once when a call must become a graph break), collect guards,
graphs, break reasons and resume codes, assemble the rewritten code (same
signature, varnames prefix, cells and free variables as the original, the
usual 3.11 prologue) and install `__compiled_fn_<n>` / `__resume_at_*` in
the frame's globals (remembered: dynamo.reset() removes them). The hook's
callback (`_Callback`, at the end) decides whether a frame is compiled (skip
rules, frames that cannot use torch, the cache limit and its warning), keeps
the compile record (`_add_record`, `describe_failure` for recompile
reasons) and applies the error policy; nothing here runs on a cache hit.
"""
import builtins
import dataclasses
import dis
import logging
import sys
import time
import traceback
import types
import warnings
import weakref
from typing import Any, Callable, List, Optional

import torch

from . import _C, backends, break_hints, config, decorators, logs, records, recompiles, resume
from . import skipfiles, stance, telemetry
from .bytecode import HAS_PRECALL, arg_slot_count, assemble, prologue
from .exc import ENVIRONMENT_ERRORS, BackendCompilerFailed, Unsupported, environment_error
from .guards import BACKEND_MATCH, Guard, NoSource, SourceError, backend_key
from . import output_graph
from .output_graph import GraphInfo, OutputGraph

log = logging.getLogger("dynamo")

MAX_RESTARTS = 3


@dataclasses.dataclass
class BreakReason:
    """Why and where a graph broke: `reason` text, the user's file:line of
    the innermost frame, and the user stack (outermost first); `kind`,
    `meaning` (the reason in user words) and `hint` (what the user can do)
    are dynamo.break_hints' words for the reason."""
    reason: str
    filename: Optional[str]
    lineno: Optional[int]
    user_stack: List[traceback.FrameSummary]
    kind: str = "other"
    meaning: str = ""
    hint: str = ""
    # the _C.BreakProbe counting and timing the break's eager region (the
    # code run between its graph and the resume function), None when
    # config.break_timing was off or the break ran nothing (nopython)
    probe: Any = dataclasses.field(default=None, repr=False, compare=False)

    def cost(self):
        """What the break's eager region cost so far: {"calls": runs,
        "samples": runs timed, "ns": their total, "max_ns": the longest,
        "ns_per_call": the mean of the timed runs (None without one),
        "total_ns": that mean times the runs (the estimate the tools rank
        by)}; None without a probe."""
        if self.probe is None:
            return None
        st = self.probe.stats()
        per = st["ns"] / st["samples"] if st["samples"] else None
        st["ns_per_call"] = per
        st["total_ns"] = per * st["calls"] if per is not None else None
        return st


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
    want = (["PRECALL"] if HAS_PRECALL else []) + ["CALL", "STORE_FAST", "LOAD_FAST", "LOAD_CONST",
                                                   "BINARY_SUBSCR", "RETURN_VALUE"]
    nargs = arg_slot_count(new_code)
    most = 1 + nargs + len(want)          # LOAD_GLOBAL, the argument loads, the tail
    # a longer code is no plan: said without disassembling it (a frame
    # with breaks has thousands of instructions; 32 units is more than
    # any instruction with its caches and EXTENDED_ARGs takes)
    if len(new_code.co_code) > 64 * (most + 2 + len(new_code.co_cellvars)):
        return None
    insts = []
    for inst in dis.get_instructions(new_code):
        if inst.opname not in _PROLOGUE_OPS:
            insts.append(inst)
            if len(insts) > most:
                return None
    if len(insts) < len(want) + 1:
        return None
    head, loads, tail = insts[0], insts[1:-len(want)], insts[-len(want):]
    if head.opname != "LOAD_GLOBAL" or not head.arg & 1 or head.argval not in f_globals:
        return None
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
    from .tracer.variables.builder import GraphBuilder
    closure = getattr(func, "__closure__", None) if func is not None else None
    frame = FrameInfo(code, f_locals, f_globals, f_builtins, closure)
    break_offset, break_error, break_before = None, None, False
    for _ in range(MAX_RESTARTS):
        output = GraphBuilder(frame, compiler_fn)
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
        reasons[-1].probe = tx.break_probe
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


# > 0 while dynamo.reset() runs its locked part (eval_frame.reset), on the
# thread holding the compile lock, the only one that can reach the
# callback then. A frame started there by what reset() frees (a finalizer,
# a weakref callback) runs eagerly: a compile between _C.reset() and
# uninstall_globals() made an entry whose globals the uninstall then took
# back, and its next hit raised NameError (issue 29, the reset stress).
_reset_depth = 0


class ResetWindow:
    """`with ResetWindow():` around reset()'s locked part (see _reset_depth)."""

    def __enter__(self):
        global _reset_depth
        _reset_depth += 1

    def __exit__(self, *exc):
        global _reset_depth
        _reset_depth -= 1


# What compile_frame put into user globals, for reset() to take back:
# (globals dict, name, value), strong until then (the values are the
# compiled graphs and resume functions the installed code calls).
_installed = []
# The compile lock (reentrant; every caller below but reset()'s already
# holds it): a plain Lock here was held while a dict store or a list
# comprehension could free a value or start a GC pass, and a finalizer
# run then that compiles comes back here on the same thread (issue 29).
_installed_lock = _C.compile_lock
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


def release_globals(codes):
    """The cache entries of `codes` (their new_code) were dropped: remove the
    names their compiles installed (the compiled graphs they hold) unless
    a frame running now loads the name (those stay until reset()), or
    another compile still alive installed the same name in the same
    globals: a resume function keeps its name (`__resume_at_<offset>_<n>`
    of one code and offset) across compiles, each with its own function
    object, and the code of the live compile loads the name. The name is
    then bound to that compile's object again.  Returns the names removed."""
    running = _running_frames()
    removed, rebound = [], []
    with _installed_lock:
        doomed = []
        for code in codes:
            ref, items = _installed_by.get(id(code), (None, ()))
            if ref is not None and ref() is code:
                del _installed_by[id(code)]
                doomed.extend(items)
        live = {(id(g), name): (g, v) for _ref, items in _installed_by.values() for g, name, v in items}
        for item in doomed:
            f_globals, name, value = item
            if _loaded_by(running, item):
                continue
            other = live.get((id(f_globals), name))
            if other is not None and other[1] is value:
                continue        # the live compile installed this very object
            for i, entry in enumerate(_installed):
                if entry[0] is f_globals and entry[1] == name and entry[2] is value:
                    del _installed[i]
                    break
            if other is not None:
                rebound.append((f_globals, name, value, other[1]))
            else:
                removed.append(item)
    for f_globals, name, value, keep in rebound:     # frees graphs: user code may run
        if f_globals.get(name, None) is value:
            f_globals[name] = keep
    names = []
    for f_globals, name, value in removed:
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
    kind, meaning, hint = break_hints.describe(reason)
    return BreakReason(reason=reason, filename=inner.filename if inner else None,
                       lineno=inner.lineno if inner else None, user_stack=list(user_stack),
                       kind=kind, meaning=meaning, hint=hint)


# ---------------------------------------------------------------- callback

def _add_record(record):
    """Keep a compile record and publish it to the live telemetry (which
    never raises)."""
    records.add(record)
    telemetry.publish(record)
    from .utils import count_record
    count_record(record)


# code -> (compiles failed for an environmental reason in a row, misses
# still to run eagerly before the next try): each such failure doubles the
# wait (0, 1, 3, 7, ... up to 1023 misses), so a failure that is not so
# transient after all costs a few compiles, not one per call; a compile
# that succeeds forgets it. reset() clears it.
_environment_failures = {}


def _note_environment_failure(code):
    failures = _environment_failures.get(code, (0, 0))[0] + 1
    _environment_failures[code] = (failures, min(2 ** (failures - 1) - 1, 1023))


def _may_try_again(code):
    """False while `code` waits out its backoff (counting this miss)."""
    state = _environment_failures.get(code)
    if state is None or state[1] == 0:
        return True
    _environment_failures[code] = (state[0], state[1] - 1)
    return False


# Codes that reached cache_size_limit: they compile nothing more until
# reset() (one warning per code, whichever optimize() wrapper reached it).
_limit_warned = set()
# Entry codes (handed to optimize()) that could not be compiled at all and
# were reported once; until reset().
_eager_warned = set()

# Walk budget of frame_may_use_torch: past it, assume torch is reachable
# (compile as usual; the tracer decides).
_SCAN_BUDGET = 10000
_NO_TENSOR_TYPES = (type(None), bool, int, float, complex, str, bytes)


def frame_may_use_torch(code, f_locals, f_globals, func=None):
    """Can a frame of `code` called with arguments `f_locals` do any torch
    work itself? True when a global it names is torch (a torch module,
    function or class), a tensor or an nn.Module; when a closure cell or an
    argument holds a tensor or an nn.Module, looked for through plain
    tuples, lists, sets and dicts, named tuples and the `__dict__` of other
    objects (never by iterating a container subclass, which would run user
    code). Cycles are walked once. A frame for which this is False would
    compile to no graph at all, so the callback leaves it to run eagerly
    without a cache entry (frames called with no tensor, such as a helper
    called on ints, or a list that contains itself)."""
    from .tracer.variables.torch import is_torch_object
    for name in code.co_names:
        value = f_globals.get(name, None) if f_globals is not None else None
        if value is None:
            continue
        if isinstance(value, types.ModuleType):
            if value is torch or value.__name__.startswith("torch."):
                return True
        elif isinstance(value, (torch.Tensor, torch.nn.Module)) or is_torch_object(value):
            return True
    roots = list(f_locals.values()) if f_locals else []
    for cell in getattr(func, "__closure__", None) or ():
        try:
            roots.append(cell.cell_contents)
        except ValueError:          # an empty cell
            pass
    seen = set()
    todo = roots
    budget = _SCAN_BUDGET
    while todo:
        obj = todo.pop()
        budget -= 1
        if budget < 0:
            return True
        if isinstance(obj, _NO_TENSOR_TYPES):
            continue
        if isinstance(obj, (torch.Tensor, torch.nn.Module)) or (
                isinstance(obj, type) and issubclass(obj, torch.nn.Module)):
            return True
        if id(obj) in seen:
            continue
        seen.add(id(obj))
        kind = type(obj)
        if kind in (tuple, list, set, frozenset):
            todo.extend(obj)
        elif kind is dict:
            todo.extend(list(obj.values()))
        elif isinstance(obj, tuple) and hasattr(kind, "_fields"):
            todo.extend(tuple.__iter__(obj))
        else:
            try:
                attrs = object.__getattribute__(obj, "__dict__")
            except (AttributeError, TypeError):
                continue
            if type(attrs) is dict:
                todo.extend(list(attrs.values()))
    return False


# Arguments whose contents frame_may_use_torch walks item by item: a call
# with one of these is looked at again each time (a list of ints now may
# hold tensors next call), never remembered by its types.
_WALKED_CONTAINERS = (tuple, list, set, frozenset, dict)


def eager_signature(code, f_locals):
    """The exact types of the argument slots of a call in which
    frame_may_use_torch found nothing of torch, as `_C.remember_eager`
    takes them (with the function's closure, matched by identity); None
    when an argument is a container whose items the answer depended on.
    Objects are remembered by type: a later call with an object of the
    same type that has since gained a tensor attribute runs eagerly
    (torch.compile does not look into objects at all) — never a wrong
    result, only a compile that does not happen."""
    try:
        values = [f_locals[name] for name in code.co_varnames[:arg_slot_count(code)]]
    except KeyError:
        return None
    if any(isinstance(v, _WALKED_CONTAINERS) for v in values):
        return None
    return tuple(type(v) for v in values)


class _Callback:
    """Called by the C hook on a cache miss in COMPILE mode (hook is off).

    Returns None (run the frame eagerly) or (new_code, lowered_guards,
    record). Raises only Unsupported in nopython mode.
    """

    def __init__(self, backend, nopython, mode=None, options=None, dynamic=None):
        from .backends.compile_options import with_options
        self.backend_name, fn = backends.lookup(backend)
        # DDPSplit hands graphs on whole unless a DDP forward is running
        self.compiler_fn = backends.wrap(self.backend_name, backends.ddp_split(
            with_options(self.backend_name, fn, mode, options)))
        self.nopython = nopython
        # BACKEND_MATCH: each entry this callback makes serves only callers
        # whose callback has the same key (the C side reads it once, when an
        # OptimizedCallable or set_mode installs this callback)
        self.backend_key = backend_key(fn, repr(self.backend_name), mode, options)
        # dynamo.compile(dynamic=...): the settings this callback's compiles
        # run with (config.dynamic_overrides; {} for None)
        self.config_overrides = config.dynamic_overrides(dynamic)
        # Codes the user handed to optimize() directly: compiled even when
        # they live in a skipped file (an nn.Sequential's forward, say).
        self.forced_codes = set()
        # what this callback saw (for the "compiles no graph" report after a
        # wrapper's first call): misses, graphs, and why frames gave none
        self.misses = 0
        self.graphs = 0
        self.notes = []         # "name (file:line): why", skips and failures
        self.report_no_graph = True     # explain() reports it its own way

    def _note(self, code, why):
        if len(self.notes) < 64:
            self.notes.append(f"{code.co_name} ({code.co_filename}:{code.co_firstlineno}): {why}")

    def __call__(self, code, f_locals, f_globals, f_builtins, func, failures):
        try:
            return self._callback(code, f_locals, f_globals, f_builtins, func, failures)
        except ENVIRONMENT_ERRORS:
            # raised outside the compile (the first compile's lazy imports
            # at the edge of the recursion limit): this call runs eagerly,
            # nothing is remembered. No function call here: near the
            # recursion limit it could raise again.
            if self.nopython:
                raise
            return None

    def _callback(self, code, f_locals, f_globals, f_builtins, func, failures):
        if _reset_depth:                # started inside reset() (see _reset_depth)
            return None
        self.misses += 1
        if code in _limit_warned:       # at the limit: the miss runs eagerly
            return None
        if decorators.is_skipped_code(code):      # dynamo.skip
            self._note(code, "dynamo.skip")
            _C.set_skip(code)
            return None
        if self._torch_disabled(code, func):
            return None
        if code not in self.forced_codes:
            why = skipfiles.skip_reason(code.co_filename)
            if why is not None and resume.base_code(code) not in self.forced_codes:
                skipfiles.note(code, why)
                self._note(code, f"skipped ({why})")
                _C.set_skip(code)
                return None
        if code not in self.forced_codes and resume.base_code(code) not in self.forced_codes \
                and not frame_may_use_torch(code, f_locals, f_globals, func):
            # nothing of torch reachable: no graph to capture; runs eagerly,
            # looked at again on its next call (other arguments may differ)
            skipfiles.note(code, "no tensor, module or torch name in its arguments, "
                                 "globals or closure")
            sig = eager_signature(code, f_locals)
            if sig is not None:     # later calls like this one: no callback at all
                _C.remember_eager(code, sig, getattr(func, "__closure__", None))
            return None
        if stance.current() != "default" or (failures and config.error_on_recompile):
            return self._stance_refuses(code, failures, f_locals, f_globals, f_builtins, func)
        limit = min(config.cache_size_limit, config.accumulated_recompile_limit)
        if failures and len(failures) >= limit and config.fail_on_recompile_limit_hit:
            raise RuntimeError(f"dynamo: {code.co_name} ({code.co_filename}:{code.co_firstlineno}) "
                               f"hit the cache limit ({limit} entries) and "
                               f"config.fail_on_recompile_limit_hit is set. Failing guard: "
                               + describe_failure(failures[0], f_locals, f_globals, f_builtins,
                                                  func))
        if code in _limit_warned or len(failures) >= limit:
            if code not in _limit_warned:
                self._reach_limit(code, failures, f_locals, f_globals, f_builtins, func)
            _eager_warned.add(code)     # the cache-limit warning said why it runs eagerly
            return None
        if not _may_try_again(code):
            return None
        from . import debug
        record = records.new_record(code)
        record.backend = self.backend_name
        record.context = frame_context(code, func, f_locals)
        if not failures and code not in self.forced_codes and \
                resume.base_code(code) not in self.forced_codes:
            _generic_modules_first(code, f_locals)
        if failures:
            record.recompile_reason = describe_failure(failures[0], f_locals, f_globals,
                                                       f_builtins, func)
            _note_size_change(code, failures[0], f_locals, f_globals, f_builtins, func)
            storm = recompiles.note_recompile(code, failures[0])
            if storm and logs.enabled("recompiles"):
                logs.artifact("recompiles").info("%s", storm[len("dynamo: "):])
            log.info("recompiling %s (%s:%d), entry %d of at most %d: %s", code.co_name,
                     code.co_filename, code.co_firstlineno, len(failures) + 1,
                     config.cache_size_limit, record.recompile_reason)
        t0 = time.perf_counter_ns()
        resets = _C.reset_count()
        try:
            with config.overrides(self.config_overrides):
                out = compile_frame(code, f_locals, f_globals, f_builtins, func,
                                    self._timed_compiler(record), nopython=self.nopython,
                                    frame_id=record.frame_id)
        except Unsupported as e:
            record.compile_ns = time.perf_counter_ns() - t0
            if self._failed_for_environment(code, record, e):
                return None
            record.status, record.error = records.STATUS["UNSUPPORTED"], str(e)
            self._note(code, str(e).splitlines()[0] if str(e) else "unsupported")
            if hasattr(e, "break_reasons"):
                record.break_reasons = list(e.break_reasons)
            _add_record(record)
            logs.on_compile(record, len(failures), limit)
            if self.nopython:
                raise
            if code in self.forced_codes and code not in _eager_warned:
                # the function handed to optimize() captures nothing: say so
                # once (on the "dynamo" logger: a warning a user sees on stderr)
                _eager_warned.add(code)
                log.warning("%s (%s:%d) was handed to optimize() but compiles no graph and "
                            "runs eagerly: %s", code.co_name, code.co_filename,
                            code.co_firstlineno, str(e).splitlines()[0])
            _C.set_skip(code)
            return None
        except Exception as e:  # noqa: BLE001 - any tracer failure: run eagerly, keep why
            record.compile_ns = time.perf_counter_ns() - t0
            if self._failed_for_environment(code, record, e):
                return None
            record.status, record.error = records.STATUS["ERROR"], f"{type(e).__name__}: {e}"
            self._note(code, record.error.splitlines()[0])
            _add_record(record)
            if self.nopython or isinstance(e, BackendCompilerFailed):
                raise
            detail = record.error
            if config.verbose:
                import traceback
                detail += "\n" + "".join(traceback.format_exception(e))
            warnings.warn(f"dynamo: could not compile {code.co_name} "
                          f"({code.co_filename}:{code.co_firstlineno}); running it eagerly: "
                          f"{detail}", RuntimeWarning)
            log.debug("compile failure", exc_info=True)
            _C.set_skip(code)
            return None
        record.compile_ns = time.perf_counter_ns() - t0
        if _C.reset_count() != resets:
            # reset() ran during the compile (a finalizer or a weakref
            # callback of this thread; other threads wait for the compile
            # lock): it took back the globals installed before it, so the
            # new code would load names no longer there (NameError). This
            # call runs eagerly; the next one compiles again (the C hook
            # makes the same check up to the entry's creation).
            release_globals([out.new_code])
            self._note(code, "dynamo.reset() ran during the compile: this call ran eagerly")
            return None
        _environment_failures.pop(code, None)
        self.graphs += len(out.graphs)
        if not out.graphs:
            self._note(code, "compiled, but traced no tensor operation"
                       + (f" (graph break: {out.break_reasons[0].reason})" if out.break_reasons else ""))
        record.graphs = list(out.graphs)
        out.guards.append(Guard(NoSource(), BACKEND_MATCH, (self.backend_key,)))
        record.guards = list(out.guards)
        record.break_reasons = list(out.break_reasons)
        record.new_code = out.new_code
        record.resume_codes = list(out.resume_codes)
        _add_record(record)
        logs.on_compile(record, len(failures), limit)
        log.info("compiled %s %s (%s:%d): %d graph(s), %d op(s), %d guard(s) in %.1f ms",
                 record.id, code.co_name, code.co_filename, code.co_firstlineno,
                 len(record.graphs), record.op_count, len(record.guards), record.compile_ns / 1e6)
        for br in record.break_reasons:
            log.info("graph break in %s at %s:%s: %s", code.co_name, br.filename, br.lineno,
                     br.reason)
        if config.debug or config.output_code:
            debug.report_compile(record)
        # This call's frame object may outlive it (torch's first-use imports
        # leave frames in reference cycles, reaching this one by f_back): its
        # locals must not keep the compiled graph (out.direct) once the entry
        # is dropped at the cache limit.
        box, out = [out], None
        return _entry_of(box.pop(), record)

    def _stance_refuses(self, code, failures, f_locals, f_globals, f_builtins, func):
        """A miss that would compile under a recompile stance
        (dynamo.set_stance) or config.error_on_recompile: None (run
        eagerly, "eager_on_recompile") or RuntimeError naming the frame and
        the closest entry's failing guard."""
        now = stance.current()
        if now == "eager_on_recompile":
            self._note(code, "stance eager_on_recompile: nothing new is compiled")
            return None
        why = "torch.compile stance is 'fail_on_recompile'" if now == "fail_on_recompile" \
            else "config.error_on_recompile is set"
        text = (f"dynamo: {code.co_name} ({code.co_filename}:{code.co_firstlineno}) would "
                f"compile, and {why}")
        if failures:
            text += "; failing guard: " + describe_failure(failures[0], f_locals, f_globals,
                                                          f_builtins, func)
        raise RuntimeError(text)

    def _torch_disabled(self, code, func):
        """torch's disable directives (decorators.torch_disable_kind): the
        recursive wrapper's code is skip-marked recursively (its frames run
        with the mode OFF: nothing they call is compiled), the other marks
        skip the frame alone; a frame called by a recursive=False wrapper
        runs eagerly this once (its callees still compile), as torch
        decides it from the calling frame.  True when the frame runs eagerly."""
        kind = decorators.torch_disable_kind(func)
        if kind is not None:
            if decorators.is_nonrecursive_disable_wrapper(func):
                decorators.note_nonrecursive_wrapper(code)
            self._note(code, "torch.compiler.disable" + ("" if kind == "recursive"
                                                           else " (recursive=False)"))
            _C.set_skip(code, kind == "recursive")
            return True
        # the hook calls the callback from C: the first frame above the
        # callback's own (this file's) is the caller of the frame being
        # compiled (none: a thread's first frame)
        caller = sys._getframe(1)
        while caller is not None and caller.f_code.co_filename == __file__:
            caller = caller.f_back
        if decorators.called_by_nonrecursive_wrapper(caller):
            self._note(code, "called by a torch.compiler.disable(recursive=False) wrapper")
            return True
        return False

    def _failed_for_environment(self, code, record, e):
        """Did the compile fail for the environment of this call (exc.py,
        ENVIRONMENT_ERRORS)? Then it is recorded and warned about, and
        `code` is not skip-marked: a later call compiles it again (after a
        backoff if it keeps failing). Call from the except block (nopython
        re-raises the exception being handled). A backend's failure the
        user asked to see (BackendCompilerFailed) is never one."""
        env = None if isinstance(e, BackendCompilerFailed) else environment_error(e)
        if env is None:
            return False
        record.status, record.error = records.STATUS["ERROR"], f"{type(env).__name__}: {env}"
        self._note(code, record.error.splitlines()[0])
        _add_record(record)
        if self.nopython:
            raise                   # noqa: PLE0704 - the caller's exception
        _note_environment_failure(code)
        warnings.warn(f"dynamo: could not compile {code.co_name} ({code.co_filename}:"
                      f"{code.co_firstlineno}) this time; this call runs eagerly, a later one "
                      f"compiles it again: {record.error}", RuntimeWarning)
        return True

    def _timed_compiler(self, record):
        compiler_fn = self.compiler_fn

        def compile_graph(gm, example_inputs):
            t0 = time.perf_counter_ns()
            try:
                return compiler_fn(gm, example_inputs)
            finally:
                record.backend_ns += time.perf_counter_ns() - t0
        compile_graph.backend_name = self.backend_name
        return compile_graph

    def _reach_limit(self, code, failures, f_locals, f_globals, f_builtins, func):
        """The limit policy (docs/USER_GUIDE.md, "Guards and recompiles"):
        `code` compiles nothing more until reset(); every entry it has keeps
        serving the calls its guards accept, and only the calls none of them
        matches run eagerly.  One record, one warning, which names the size
        that keeps changing when a size guard is what failed."""
        _limit_warned.add(code)
        if not failures:        # cache_size_limit 0: asked for, so recorded but not warned
            why = "config.cache_size_limit is 0: nothing new is compiled"
        else:
            why = describe_failure(failures[0], f_locals, f_globals, f_builtins, func)
        record = records.new_record(code)
        record.status, record.recompile_reason = records.STATUS["LIMIT"], why
        record.backend = self.backend_name
        _add_record(record)
        if not failures:
            return
        kept = len(failures)
        now = (f"its {kept} compiled entr{'y keeps' if kept == 1 else 'ies keep'} serving the "
               f"calls {'it matches' if kept == 1 else 'they match'}; a call none matches runs "
               f"eagerly")
        text = (f"dynamo: {code.co_name} ({code.co_filename}:{code.co_firstlineno}) hit "
                f"config.cache_size_limit={config.cache_size_limit} and compiles no more until "
                f"dynamo.reset(): {now}. Last failing guard: {why}")
        hint = _changing_size_hint(code, failures[0])
        if hint:
            text += ". " + hint
        warnings.warn(text, RuntimeWarning)
        logs.on_cache_limit(code, text[len("dynamo: "):])
        if logs.enabled("recompiles"):
            logs.artifact("recompiles").info("%s", text[len("dynamo: "):])
        if log.hasHandlers():
            # also a WARNING record for whoever configured logging (the
            # warning above already reaches stderr: not printed twice when
            # nobody did)
            log.warning("%s", text)


def frame_context(code, func, f_locals):
    """Who a frame runs for, for the tools' frame labels (issue 30): a
    decorator's `wrapper` is told apart by the function it wraps
    (`__wrapped__`, innermost), a method of an nn.Module by the module's
    class: "GPT2Model.forward", "Linear"; "" when the name says it all.
    Reads attributes only (no call of user code but `__wrapped__` lookups,
    whose failure leaves the label empty: a label never stops a compile)."""
    try:
        return _frame_context(code, func, f_locals)
    except Exception:  # noqa: BLE001 - a raising __getattr__ of user code
        return ""


def _frame_context(code, func, f_locals):
    target = func
    for _ in range(16):                     # a bounded __wrapped__ chain
        inner = getattr(target, "__wrapped__", None) if target is not None else None
        if inner is None or inner is target:
            break
        target = inner
    label = ""
    if target is not func and target is not None:
        label = getattr(target, "__qualname__", "") or ""
        if not isinstance(label, str):
            label = ""
    first = next(iter(f_locals.values()), None) if code.co_argcount else None
    if isinstance(first, torch.nn.Module):
        cls = type(first).__qualname__
        if not label:
            return cls if code.co_name == "forward" else ""
        if not label.startswith(cls + "."):
            label = f"{cls}: {label}"
    return label[:200]


def _note_size_change(code, failure, f_locals, f_globals, f_builtins, func):
    """Automatic dynamic shapes: the closest entry failed on the value of an
    int argument (its EQUALS_MATCH): later compiles trace it as a symbolic
    int; or it failed on a size (its
    TENSOR_MATCH, or a SHAPE_GUARD that specialized one): every dimension
    of its tensor inputs whose size differs in this call becomes symbolic
    in this compile (all at once: `a + b` with `a`'s size alone symbolic
    would tie it to `b`'s constant one)."""
    from . import dynamic_shapes, guards
    if _note_module_change(code, failure, f_locals):
        return
    if len(failure) >= 5 and failure[2] == "value" and type(failure[3]) is int and \
            type(failure[4]) is int:
        # an int argument's value: traced as a symbolic int from now on
        try:
            guard = failure[0].guards[failure[1]]
        except (AttributeError, IndexError, TypeError):
            return
        if guard.kind != guards.EQUALS_MATCH or not dynamic_shapes.int_source(guard.source):
            return
        # every int of the entry whose value differs in this call, at once
        # (the sizes a tolist() gave differ together from layer to layer)
        closure = getattr(func, "__closure__", None)
        for g in failure[0].guards:
            if g.kind != guards.EQUALS_MATCH or len(g.expected) != 1 or \
                    type(g.expected[0]) is not int or not dynamic_shapes.int_source(g.source):
                continue
            try:
                now = g.source.get(f_locals, f_globals, f_builtins, closure)
            except guards.SourceError:
                continue
            if type(now) is int and now != g.expected[0]:
                dynamic_shapes.note_int_change(code, g.source.name())
        return
    if len(failure) < 5 or not isinstance(failure[2], str) or \
            not (failure[2].startswith("size()[") or failure[2] == "shape"):
        return
    closure = getattr(func, "__closure__", None)
    for g in getattr(failure[0], "guards", ()):
        if g.kind != guards.TENSOR_MATCH or g.expected[6] is None:
            continue
        try:
            value = g.source.get(f_locals, f_globals, f_builtins, closure)
        except guards.SourceError:
            continue
        if not isinstance(value, torch.Tensor) or value.dim() != len(g.expected[6]):
            continue
        for dim, (was, now) in enumerate(zip(g.expected[6], value.shape)):
            if was is not None and was != now and \
                    dynamic_shapes.note_size_change(code, g.source.name(), dim):
                logs.on_size_change(code, g.source.name(), dim, was, now)


def _generic_modules_first(code, f_locals):
    """Generic module frames from the first compile for a frame reached
    from a compiled one (not the function handed to optimize() nor its
    resume functions): a module method run after a graph break in its
    caller (a decoder layer's forward, called once per layer) traces its
    nn.Module arguments as any instance of their class, so the layers
    share the first entry (torch.compile inlines modules the same way;
    FSDP2's blocks, whose class fully_shard makes at run time, too)."""
    from . import dynamic_shapes
    if not config.generic_module_frames:
        return
    for name in code.co_varnames[:code.co_argcount]:
        if isinstance(f_locals.get(name), torch.nn.Module):
            dynamic_shapes.note_module_change(code, f"L[{name!r}]")


def _note_module_change(code, failure, f_locals):
    """Generic module frames: the closest entry failed on the identity
    (ID_MATCH) of an nn.Module argument and this call brings another live
    instance of the same class: later compiles trace that argument as any
    instance of its class (dynamic_shapes.generic_module). True when the
    failure was such a change."""
    from . import dynamic_shapes, guards
    try:
        guard = failure[0].guards[failure[1]]
    except (AttributeError, IndexError, TypeError):
        return False
    if guard.kind != guards.ID_MATCH or not isinstance(guard.source, guards.LocalSource):
        return False
    old = guard.expected[0] if guard.expected else None
    now = f_locals.get(guard.source.local_name)
    if not isinstance(now, torch.nn.Module) or type(old) is not type(now) or old is now:
        return False
    if dynamic_shapes.note_module_change(code, guard.source.name()):
        logs.on_generic_module(code, guard.source.name(), type(now))
    return True


def _changing_size_hint(code, failure):
    """When the closest entry failed on a tensor size, the sentence naming
    that dimension, the sizes the entries were compiled for, and the call
    that makes it dynamic; else None."""
    if len(failure) < 5 or not isinstance(failure[2], str) or not failure[2].startswith("size()["):
        return None
    record, index = failure[0], failure[1]
    try:
        guard = record.guards[index]
        dim = int(failure[2][len("size()["):-1])
    except (AttributeError, IndexError, TypeError, ValueError):
        return None
    from . import guards
    name = guard.source.name()
    seen = set()
    for payload in _C.cache_entries(code):
        for g in getattr(payload, "guards", ()):
            if g.kind == guards.TENSOR_MATCH and g.source.name() == name:
                sizes = g.expected[6]
                if sizes is not None and dim < len(sizes) and sizes[dim] is not None:
                    seen.add(sizes[dim])
    compiled = ", ".join(str(v) for v in sorted(seen)[:8]) + (", ..." if len(seen) > 8 else "")
    arg = name[3:-2] if name.startswith("L['") and name.endswith("']") else name
    return (f"The size of {name} in dimension {dim} keeps changing (compiled for {compiled}; "
            f"this call {_short(failure[4])}): mark it dynamic before the call, "
            f"dynamo.mark_dynamic({arg}, {dim}), to compile one graph for every size")


def _entry_of(out, record):
    """The hook's cache entry for CompileOutput `out` and its record."""
    return out.new_code, [g.lower() for g in out.guards], record, out.direct


def describe_failure(failure, f_locals, f_globals, f_builtins, func):
    """Text of the guard that failed for one cache entry, as
    "L['a'].size()[0]: expected 10, actual 7 (TENSOR_MATCH)".

    `failure` is an item of the hook's `failures` list: the text comes from
    the C guard tree's miss report alone.  The closest entry's item is
    (record, guard_index, property, expected, actual); other items are
    (record, guard_index), and guard_index is -1 when the entry passes again
    (a check's Python code changed what it reads)."""
    record, index = failure[0], failure[1]
    entry = getattr(record, "id", "?")
    if index is None or index < 0:
        return f"entry {entry} passes again (a guard check changed the state it reads)"
    try:
        guard = record.guards[index]
    except (AttributeError, IndexError, TypeError):
        return f"guard #{index} of entry {entry}"
    text = _guard_failure_text(guard, failure, record, index)
    origin = getattr(guard, "origin", None)
    # the user line whose tracing installed the guard (issue 30)
    return text if origin is None else f"{text}; guarded at {origin}"


def _guard_failure_text(guard, failure, record, index):
    """describe_failure's text for a known `guard`, without its origin."""
    from . import guards
    if len(failure) >= 5:
        prop, expected, actual = failure[2:5]
        kind = guards.KIND_NAMES.get(guard.kind, str(guard.kind))
        text = guards.property_text(guard.source.name(), prop)
        if guard.kind == guards.SAME_OBJECT:
            text = f"{guard.source.name()} is {guard.expected[0].name()}"
        elif guard.kind == guards.STORAGE_MATCH:
            text = f"{guard.source.name()} shares a storage with {guard.expected[0].name()}"
        if guard.kind == guards.BACKEND_MATCH and isinstance(expected, int) and isinstance(actual, int):
            was, now = guards.backend_texts_apart(expected, actual)
            return (f"{text}: expected {was}, actual {now} ({kind} of entry {record.id}: another "
                    f"optimize()/compile() wrapper of this code compiles for its own backend)")
        if guard.kind == guards.SHAPE_GUARD:
            values = actual if isinstance(actual, tuple) else ()
            now = ", ".join(f"{leaf} = {'<none>' if v is None else v}"
                            for leaf, v in zip(guard.shape_leaves(), values))
            return (f"{guard.expected[0]}: expected True, actual False with {now or _short(actual)} "
                    f"({kind} of entry {record.id})")
        if guard.kind == guards.GLOBAL_STATE and isinstance(expected, int) and isinstance(actual, int):
            return f"{text}: {guards.global_state_diff(expected, actual)} ({kind} of entry {record.id})"
        return (f"{text}: expected {_short(expected)}, "
                f"actual {_short(actual)} ({kind} of entry {record.id})")
    kind = guards.KIND_NAMES.get(guard.kind, str(guard.kind))
    return f"{guard.source.name()}: guard #{index} fails ({kind} of entry {getattr(record, 'id', '?')})"


def _short(value):
    if value is _C.MISSING:
        return "<missing>"
    if isinstance(value, type):
        return value.__qualname__
    if isinstance(value, torch.nn.Module):     # a module's repr walks all its submodules
        return f"<{type(value).__qualname__} module at {id(value):#x}>"
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."
