"""The compiler's stance (torch.compiler.set_stance's meaning): what a
wrapper from optimize()/compile() does on a call.

Owns the process-wide stance and `set_stance`, which applies at once and
also works as a context manager or a decorator.  "force_eager" is read in C
on every call (`_C._set_forced_off`: wrappers set mode OFF, so nothing is
compiled or looked up); the two recompile stances are read by the hook's
callback on a miss only (convert_frame._Callback).  Nothing here runs on a
cache hit.  It imports nothing of dynamo but _C.

- "default": compile on a miss, as configured;
- "force_eager": run everything eagerly, compiled entries unused;
- "eager_on_recompile": compile nothing new; a miss runs eagerly (torch
  turns its callback into run-only mode; here the wrapper's backend guard
  still holds, so another backend's entry is never taken);
- "fail_on_recompile": a miss that would compile raises RuntimeError
  naming the frame and the closest entry's failing guard.
"""
import functools

from . import _C

STANCES = ("default", "force_eager", "eager_on_recompile", "fail_on_recompile")

_current = ["default"]


def current() -> str:
    """The stance in force."""
    return _current[0]


def _apply(stance):
    _current[0] = stance
    _C._set_forced_off(stance == "force_eager")


class set_stance:
    """Set the stance now (`dynamo.set_stance("force_eager")`), for a block
    (`with dynamo.set_stance(...):`, the previous one back at its end), or
    around each call of a function (`@dynamo.set_stance(...)`).
    `force_backend` and `skip_guard_eval_unsafe` (torch's other arguments)
    are not supported yet: ValueError when given."""

    def __init__(self, stance="default", *, skip_guard_eval_unsafe=False, force_backend=None):
        if stance not in STANCES:
            raise ValueError(f"unknown stance {stance!r}; one of {', '.join(STANCES)}")
        if force_backend is not None or skip_guard_eval_unsafe:
            raise ValueError("dynamo.set_stance: force_backend and skip_guard_eval_unsafe are "
                             "not supported yet")
        self.stance = stance
        self._saved = [current()]
        _apply(stance)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        if self._saved:
            _apply(self._saved.pop())
        return False

    def __call__(self, fn):
        """Decorator: the stance holds during each call of fn only (the
        one set by constructing this object is taken back)."""
        if self._saved:
            _apply(self._saved.pop())
        stance = self.stance

        @functools.wraps(fn)
        def with_stance(*args, **kwargs):
            prev = current()
            _apply(stance)
            try:
                return fn(*args, **kwargs)
            finally:
                _apply(prev)
        return with_stance
