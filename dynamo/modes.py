"""The thread's hook mode (docs/ARCHITECTURE.md, contract 1): the MODE_*
numbers and ModeContext, the one Python object that sets the mode of the C
hook (`_C.set_mode`) for a block and restores it.  eval_frame builds
optimize()/run()/disable() on it; the rooms below the compile path (the
tracer's real-value runs, backends' result checks, generated helpers) run
code with the hook off through `hook_off()` / `without_hook(fn)`, so they
never import the public API back.  It imports nothing of dynamo but _C,
config and mutation_guard.
"""
from . import _C, config

MODE_OFF, MODE_COMPILE, MODE_RUN = 0, 1, 2


class ModeContext:
    """Context manager that sets the thread's hook mode (and callback) for
    the block; reentrant (one saved state per entry)."""

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


def hook_off():
    """A context in which frames are neither compiled nor looked up (what
    `with dynamo.disable():` is)."""
    return ModeContext(MODE_OFF, None)


def without_hook(fn):
    """fn wrapped so that its calls run with the hook off (what
    dynamo.disable(fn) is for a plain function, without the copied
    __name__/__doc__)."""
    return _C.OptimizedCallable(fn, None, MODE_OFF)
