"""optimize / run / disable: the Python side of the frame hook's modes.

Owns the objects users get back from dynamo.optimize(), dynamo.run() and
dynamo.disable(). Per-call work is in C (`_C.OptimizedCallable`); nothing here
runs on a cache hit. The callback the C hook calls on a cache miss
(`_Callback`: whether to compile, the compile record, the error policy) and
compiling itself are convert_frame's.
"""
import functools
import logging

import torch

from . import _C, backends, distributed, records, resume, skipfiles
from .testing import unsupported  # noqa: F401  (dynamo.eval_frame.unsupported, as in TorchDynamo)

log = logging.getLogger("dynamo")

from .modes import MODE_COMPILE, MODE_OFF, MODE_RUN, ModeContext  # noqa: E402,F401


# ---------------------------------------------------------------- the callback
# The hook's callback lives in convert_frame.
from .convert_frame import _Callback, _eager_warned, _environment_failures, _limit_warned  # noqa: E402


# ---------------------------------------------------------------- wrappers

class _ModeContext(ModeContext):
    """Context manager and decorator that sets the thread's hook mode."""

    def __call__(self, fn):
        return _wrap(fn, self.mode, self.callback)


def _report_after_first(callback, fn, code):
    """The function a wrapper's C callable calls once, after its first call:
    when that call compiled frames (cache misses) but no graph at all, say
    so once on the "dynamo" logger with the reason (skipped frames, frames
    that could not be compiled, frames without tensor operations). A first
    call that only hit entries compiled before reports nothing; nor does
    one made at the edge of the recursion limit, where the logging call
    itself overflows (a first call that deep compiled nothing for that
    reason: the callback let it run eagerly, exc.ENVIRONMENT_ERRORS)."""
    misses, graphs, noted = callback.misses, callback.graphs, len(callback.notes)

    def after_first():
        try:
            _report_no_graph(callback, fn, code, misses, graphs, noted)
        except RecursionError:
            pass
    return after_first


def _report_no_graph(callback, fn, code, misses, graphs, noted):
    """The log line of _report_after_first, once per entry code."""
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


def _entry_code(fn):
    """The code object a call of `fn` runs first, if it is Python code."""
    if isinstance(fn, torch.nn.Module):
        # a DDP model: its forward stays eager, the wrapped module's is compiled
        fn = type(distributed.compiled_module(fn)).forward
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

    As torch.compile's: attribute reads fall through to the original module
    (parameters, submodules, methods), attribute writes and deletions of
    names the wrapper does not own go to it, `training` is the original's,
    len() and dir() are its; state_dict keys carry the `_orig_mod.` prefix.
    """

    # names the wrapper keeps itself; every other write goes to _orig_mod
    _own_attributes = frozenset({"_orig_mod", "forward", "__dict__"})

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

    @property
    def training(self):
        return self._orig_mod.training

    @training.setter
    def training(self, value):
        # nn.Module.__init__ sets it before _orig_mod exists: nothing to mirror yet
        modules = self.__dict__.get("_modules")
        if modules is not None and "_orig_mod" in modules:
            modules["_orig_mod"].training = value

    def __setattr__(self, name, value):
        if name in self._own_attributes or hasattr(type(self), name):
            return super().__setattr__(name, value)
        return setattr(self._modules["_orig_mod"], name, value)

    def __delattr__(self, name):
        if name in self._own_attributes or hasattr(type(self), name):
            return super().__delattr__(name)
        return delattr(self._modules["_orig_mod"], name)

    def __len__(self):
        return len(self._orig_mod)

    def __bool__(self):         # a module is true even when len() does not apply
        return True

    def __dir__(self):
        mine = self._orig_mod.__dir__()
        return mine + [a for a in super().__dir__() if a not in mine]

    def __repr__(self):
        return f"OptimizedModule({self._orig_mod!r})"


def _check_backend(backend, what):
    """A model where the backend goes is a mistake said at once (it is
    callable, so it would otherwise fail at the first call)."""
    if isinstance(backend, torch.nn.Module):
        raise TypeError(f"dynamo.{what}() got a torch.nn.Module ({type(backend).__name__}) as its "
                        f"backend; the model goes to the wrapper: dynamo.{what}(backend)(model)"
                        if what == "optimize" else
                        f"dynamo.{what}() got a torch.nn.Module ({type(backend).__name__}) as "
                        f"backend=; pass the model first: dynamo.{what}(model, backend=...)")


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
    _check_backend(backend, "optimize")
    if disable:
        backends.lookup(backend)        # still a clear error for a bad backend
        return _ModeContext(MODE_OFF, None)
    from . import mutation_guard
    mutation_guard.install_generation_tagging()
    return _ModeContext(MODE_COMPILE, _Callback(backend, nopython))


def compile(model_or_fn=None, *, fullgraph=False, dynamic=None, backend="inductor", mode=None,
            options=None, disable=False):
    """torch.compile's signature and meaning: `model_or_fn` wrapped so that
    its frames are compiled by `backend` (a registered name or a callable
    (gm, example_inputs) -> callable); an nn.Module gives an
    OptimizedModule.  Without `model_or_fn` it returns a decorator
    (`@dynamo.compile(fullgraph=True)`; plain `@dynamo.compile` works too).

    fullgraph: a graph break raises dynamo.exc.Unsupported (nopython).
    dynamic: True traces sizes symbolically from the first compile, False
      specializes every size, None (default) leaves config as set
      (config.dynamic_overrides: the settings this wrapper compiles with).
    mode: "default", "reduce-overhead" (Inductor with CUDA graphs; CPU
      graphs run without them), "max-autotune", "max-autotune-no-cudagraphs".
    options: Inductor config settings for this wrapper's compiles only
      (not with mode).  A backend other than Inductor gets mode= and
      options= as keyword arguments, as torch.compile passes them.
    disable: return model_or_fn unchanged (compilation switched off).
    Entries compiled for one (backend, mode, options) serve only wrappers of
    the same three (the BACKEND_MATCH guard)."""
    from .backends.compile_options import check
    if not isinstance(fullgraph, bool):
        raise TypeError(f"fullgraph must be a bool, got {type(fullgraph).__name__}")
    if dynamic is not None and not isinstance(dynamic, bool):
        raise TypeError(f"dynamic must be True, False or None, got {type(dynamic).__name__}")
    _check_backend(backend, "compile")
    check(mode, options)

    def wrap(target):
        if disable:
            return target
        from . import mutation_guard
        mutation_guard.install_generation_tagging()
        callback = _Callback(backend, fullgraph, mode=mode, options=options, dynamic=dynamic)
        return _wrap(target, MODE_COMPILE, callback)
    if model_or_fn is None:
        backends.lookup(backend)            # a bad backend is said at the decorator
        return wrap
    return wrap(model_or_fn)


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


def reset():
    """Forget every compiled entry, skip mark and compile record, and remove
    the `__compiled_fn_<n>` / `__resume_at_*` globals compiles installed.
    Waits for a compile running in another thread to finish first."""
    from .convert_frame import ResetWindow, uninstall_globals
    from . import dynamic_shapes, recompiles
    with _C.compile_lock, ResetWindow():
        _C.reset()
        uninstall_globals()
        records.clear()
        skipfiles.clear()
        _limit_warned.clear()
        _eager_warned.clear()
        _environment_failures.clear()
        dynamic_shapes.clear()
        recompiles.clear()
    try:
        from . import resume
        if hasattr(resume, "clear"):
            resume.clear()
    except ImportError:
        pass
    from .convert_frame import restart_names
    with _C.compile_lock:
        restart_names()             # generated names from 0 again when nothing loads the old
