"""optimize / run / disable: the Python side of the frame hook's modes.

Owns the objects users get back from dynamo.optimize(), dynamo.run() and
dynamo.disable(), and the callback the C hook calls on a cache miss
(`_Callback`). Per-call work is in C (`_C.OptimizedCallable`); nothing here
runs on a cache hit. Compiling itself is convert_frame.compile_frame's job;
this module decides *whether* to compile (filters, cache limit), keeps the
compile record and applies the error policy.
"""
import functools
import logging
import time
import types
import warnings

import torch

from . import _C, backends, config, decorators, records, resume, skipfiles, telemetry
from .exc import BackendCompilerFailed, Unsupported

log = logging.getLogger("dynamo")

MODE_OFF, MODE_COMPILE, MODE_RUN = 0, 1, 2


# ---------------------------------------------------------------- filtering
# The skip rules live in dynamo.skipfiles; is_skipped_file is re-exported here.
from .skipfiles import is_skipped_file  # noqa: E402,F401


# ---------------------------------------------------------------- callback

def _add_record(record):
    """Keep a compile record and publish it to the live telemetry (which
    never raises)."""
    records.add(record)
    telemetry.publish(record)
    from .utils import count_record
    count_record(record)


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


class _Callback:
    """Called by the C hook on a cache miss in COMPILE mode (hook is off).

    Returns None (run the frame eagerly) or (new_code, lowered_guards,
    record). Raises only Unsupported in nopython mode.
    """

    def __init__(self, backend, nopython):
        self.backend_name, fn = backends.lookup(backend)
        self.compiler_fn = backends.wrap(self.backend_name, fn)
        self.nopython = nopython
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
        self.misses += 1
        if decorators.is_skipped_code(code):      # dynamo.skip
            self._note(code, "dynamo.skip")
            _C.set_skip(code)
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
            return None
        if code in _limit_warned or len(failures) >= config.cache_size_limit:
            if code not in _limit_warned:
                self._reach_limit(code, failures, f_locals, f_globals, f_builtins, func)
            _eager_warned.add(code)     # the cache-limit warning said why it runs eagerly
            return None
        from .convert_frame import compile_frame
        from . import debug
        record = records.new_record(code)
        record.backend = self.backend_name
        if failures:
            record.recompile_reason = describe_failure(failures[0], f_locals, f_globals,
                                                       f_builtins, func)
            log.info("recompiling %s (%s:%d), entry %d of at most %d: %s", code.co_name,
                     code.co_filename, code.co_firstlineno, len(failures) + 1,
                     config.cache_size_limit, record.recompile_reason)
        t0 = time.perf_counter_ns()
        try:
            out = compile_frame(code, f_locals, f_globals, f_builtins, func,
                                self._timed_compiler(record), nopython=self.nopython,
                                frame_id=record.frame_id)
        except Unsupported as e:
            record.compile_ns = time.perf_counter_ns() - t0
            record.status, record.error = "unsupported", str(e)
            self._note(code, str(e).splitlines()[0] if str(e) else "unsupported")
            if hasattr(e, "break_reasons"):
                record.break_reasons = list(e.break_reasons)
            _add_record(record)
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
            record.status, record.error = "error", f"{type(e).__name__}: {e}"
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
        self.graphs += len(out.graphs)
        if not out.graphs:
            self._note(code, "compiled, but traced no tensor operation"
                       + (f" (graph break: {out.break_reasons[0].reason})" if out.break_reasons else ""))
        record.graphs = list(out.graphs)
        record.guards = list(out.guards)
        record.break_reasons = list(out.break_reasons)
        record.new_code = out.new_code
        record.resume_codes = list(out.resume_codes)
        _add_record(record)
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
        `code` compiles nothing more until reset(); its entries that served
        a call since their compile keep serving, the others (made for values
        seen once: the churn that reached the limit) are dropped with the
        graphs they hold; with none left the frame is skip-marked (no lookup
        at all from then on).  One record, one warning."""
        _limit_warned.add(code)
        if not failures:        # cache_size_limit 0: asked for, so recorded but not warned
            why = "config.cache_size_limit is 0: nothing new is compiled"
        else:
            why = describe_failure(failures[0], f_locals, f_globals, f_builtins, func)
        from .convert_frame import drop_unused_entries
        dropped, kept = drop_unused_entries(code)
        record = records.new_record(code)
        record.status, record.recompile_reason = "limit", why
        record.backend = self.backend_name
        _add_record(record)
        if not failures:
            return
        if kept:
            now = (f"it runs eagerly when none of its {kept} compiled "
                   f"entr{'y' if kept == 1 else 'ies'} that served calls matches")
        else:
            now = "it runs eagerly from now on"
        gone = (f"; {len(dropped)} entr{'y' if len(dropped) == 1 else 'ies'} that served no "
                f"call since compiled dropped") if dropped else ""
        text = (f"dynamo: {code.co_name} ({code.co_filename}:{code.co_firstlineno}) hit "
                f"config.cache_size_limit={config.cache_size_limit} and compiles no more until "
                f"dynamo.reset(): {now}{gone}. Last failing guard: {why}")
        warnings.warn(text, RuntimeWarning)
        if log.hasHandlers():
            # also a WARNING record for whoever configured logging (the
            # warning above already reaches stderr: not printed twice when
            # nobody did)
            log.warning("%s", text)


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
    from . import guards
    if len(failure) >= 5:
        prop, expected, actual = failure[2:5]
        kind = guards.KIND_NAMES.get(guard.kind, str(guard.kind))
        text = guards.property_text(guard.source.name(), prop)
        if guard.kind == guards.SAME_OBJECT:
            text = f"{guard.source.name()} is {guard.expected[0].name()}"
        if guard.kind == guards.GLOBAL_STATE and isinstance(expected, int) and isinstance(actual, int):
            return f"{text}: {guards.global_state_diff(expected, actual)} ({kind} of entry {record.id})"
        return (f"{text}: expected {_short(expected)}, "
                f"actual {_short(actual)} ({kind} of entry {record.id})")
    kind = guards.KIND_NAMES.get(guard.kind, str(guard.kind))
    return f"{guard.source.name()}: guard #{index} fails ({kind} of entry {entry})"


def _short(value):
    if value is _C.MISSING:
        return "<missing>"
    if isinstance(value, type):
        return value.__qualname__
    if isinstance(value, torch.nn.Module):     # a module's repr walks all its submodules
        return f"<{type(value).__qualname__} module at {id(value):#x}>"
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


# ---------------------------------------------------------------- wrappers

class _ModeContext:
    """Context manager and decorator that sets the thread's hook mode."""

    def __init__(self, mode, callback):
        self.mode, self.callback = mode, callback
        self._saved = []

    def __enter__(self):
        if self.mode == MODE_COMPILE:
            if config.raise_on_ctx_manager_usage:
                raise RuntimeError("dynamo.optimize(...) used as a context manager while "
                                   "config.raise_on_ctx_manager_usage is set; decorate the "
                                   "function or module instead: dynamo.optimize(backend)(fn)")
            from . import mutation_guard
            mutation_guard.new_generation()
        self._saved.append(_C.set_mode(self.mode, self.callback))
        return self

    def __exit__(self, *exc):
        _C.set_mode(*self._saved.pop())
        return False

    def __call__(self, fn):
        return _wrap(fn, self.mode, self.callback)


def _report_after_first(callback, fn, code):
    """The function a wrapper's C callable calls once, after its first call:
    when that call compiled frames (cache misses) but no graph at all, say
    so once on the "dynamo" logger with the reason (skipped frames, frames
    that could not be compiled, frames without tensor operations). A first
    call that only hit entries compiled before reports nothing."""
    misses, graphs, noted = callback.misses, callback.graphs, len(callback.notes)

    def after_first():
        if not callback.report_no_graph or callback.misses == misses or callback.graphs != graphs:
            return
        if code is not None and code in _eager_warned:       # already said, for the entry
            return
        if code is not None:
            _eager_warned.add(code)
        notes = callback.notes[noted:]
        name = getattr(fn, "__qualname__", None) or type(fn).__qualname__
        detail = "; ".join(notes[:3]) + (f"; and {len(notes) - 3} more" if len(notes) > 3 else "")
        log.warning("%s was handed to optimize() but its first call compiled no graph and ran "
                    "eagerly: %s", name, detail or "no frame could be compiled")
    return after_first


def _entry_code(fn):
    """The code object a call of `fn` runs first, if it is Python code."""
    if isinstance(fn, torch.nn.Module):
        fn = type(fn).forward
    fn = getattr(fn, "__func__", fn)
    return getattr(fn, "__code__", None)


def _wrap(fn, mode, callback):
    while isinstance(fn, _C.OptimizedCallable) and fn._mode != MODE_OFF:
        fn = fn._fn         # the outermost optimize/run decides; disable() stays
    code = _entry_code(fn)
    after = None
    if isinstance(callback, _Callback):
        if code is not None:
            callback.forced_codes.add(code)
        after = _report_after_first(callback, fn, code)
    if isinstance(fn, torch.nn.Module):
        return OptimizedModule(fn, _C.OptimizedCallable(fn, callback, mode, after_first=after))
    if not callable(fn):
        raise TypeError(f"dynamo expects a function, method or torch.nn.Module, "
                        f"got {type(fn).__name__}: {fn!r:.80}")
    wrapped = _C.OptimizedCallable(fn, callback, mode, after_first=after)
    for attr in ("__module__", "__name__", "__qualname__", "__doc__"):
        try:
            setattr(wrapped, attr, getattr(fn, attr))
        except (AttributeError, TypeError):
            pass
    return wrapped


class OptimizedModule(torch.nn.Module):
    """An nn.Module whose calls run the original module under the hook.

    Attribute access falls through to the original module, so parameters,
    submodules and methods stay reachable; state_dict keys carry the
    `_orig_mod.` prefix.
    """

    def __init__(self, mod, call):
        super().__init__()
        self._orig_mod = mod
        self.__dict__["forward"] = call   # a C callable: no Python frame per call

    # Calling the wrapper calls `forward` (the C callable, which calls the
    # original module: its __call__ runs that module's hooks and the global
    # ones) directly, unless the wrapper has hooks of its own; then
    # nn.Module.__call__ runs them first. No Python frame either way.
    __call__ = _C.ModuleCall("forward", torch.nn.Module.__call__)

    def __getattr__(self, name):
        try:
            return super().__getattr__(name)
        except AttributeError:
            return getattr(self._modules["_orig_mod"], name)

    def __repr__(self):
        return f"OptimizedModule({self._orig_mod!r})"


def optimize(backend="inductor", nopython=False, disable=False):
    """Return a decorator / context manager that compiles with `backend`.

    `dynamo.optimize("eager")(fn)` wraps a function, method or nn.Module;
    `with dynamo.optimize(...):` compiles every frame run inside the block.
    `nopython=True` raises dynamo.exc.Unsupported instead of breaking graphs.
    `disable=True` gives dynamo.disable()'s wrapper instead: nothing compiles
    (switch compilation off with a flag, keeping the decorator in place).
    """
    if not isinstance(nopython, bool):
        raise TypeError(f"nopython must be a bool, got {type(nopython).__name__}")
    if not isinstance(disable, bool):
        raise TypeError(f"disable must be a bool, got {type(disable).__name__}")
    if disable:
        backends.lookup(backend)        # still a clear error for a bad backend
        return _ModeContext(MODE_OFF, None)
    from . import mutation_guard
    mutation_guard.install_generation_tagging()
    return _ModeContext(MODE_COMPILE, _Callback(backend, nopython))


def optimize_assert(backend="inductor"):
    """optimize(backend, nopython=True)."""
    return optimize(backend, nopython=True)


def run(fn=None):
    """Use compiled code only: never compile. As a context manager
    (`with dynamo.run():`) or a decorator (`dynamo.run(fn)`)."""
    ctx = _ModeContext(MODE_RUN, None)
    return ctx if fn is None else ctx(fn)


def disable(fn=None):
    """Run `fn` (or the `with` block) without the hook; frames inside it are
    neither compiled nor looked up."""
    ctx = _ModeContext(MODE_OFF, None)
    return ctx if fn is None else ctx(fn)


def unsupported(a, b):
    """Returns `b` (its second argument, as TorchDynamo's helper of the same
    name does), run where the tracer cannot follow it: a call of it inside a
    compiled frame always breaks the graph (it lives in dynamo's own code,
    which is never inlined nor compiled). Tests use it to force a break."""
    return b


def reset():
    """Forget every compiled entry, skip mark and compile record, and remove
    the `__compiled_fn_<n>` / `__resume_at_*` globals compiles installed.
    Waits for a compile running in another thread to finish first."""
    from .convert_frame import uninstall_globals
    with _C.compile_lock:
        _C.reset()
        uninstall_globals()
        records.clear()
        skipfiles.clear()
        from .bytecode.decode import clear_shared
        clear_shared()              # resume functions are new code objects per compile
        _limit_warned.clear()
        _eager_warned.clear()
    try:
        from . import resume
        if hasattr(resume, "clear"):
            resume.clear()
    except ImportError:
        pass
    from .convert_frame import restart_names
    with _C.compile_lock:
        restart_names()             # generated names from 0 again when nothing loads the old
