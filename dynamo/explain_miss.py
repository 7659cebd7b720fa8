"""explain_miss: would this call hit the cache, and if not, why not.

Owns `explain_miss(fn, *args, **kwargs)`: for each live cache entry of the
code a call of `fn` would run, the entry's first failing guard with its
expected and actual values and the user line whose tracing installed it
(Guard.origin), or that the entry passes.  Nothing is compiled and `fn` is
not called: the guards are evaluated by the C guard tree (one tree per
entry, `_C._tree_new` / `_C._tree_lookup`: the hook's walk and miss report)
on the call's arguments bound as the frame would bind them, and the texts
are the recompile reasons' (convert_frame.describe_failure).  It must not
check a guard itself (one implementation of each check: the C tree).
"""
import dataclasses
import inspect
import types
from typing import Any, List, Optional

import torch

from . import _C
from .convert_frame import describe_failure
from .eval_frame import OptimizedModule


@dataclasses.dataclass
class EntryVerdict:
    """One cache entry's answer for the call: `passes`, or the first guard
    that fails (`guard`, its index, the tree's `property`, `expected`,
    `actual`, the recompile-reason `text`, and `origin`: the user line)."""
    entry: str                      # "[F/C]"
    passes: bool
    guard: Any = None               # dynamo.guards.Guard
    index: int = -1
    property: str = ""
    expected: Any = None
    actual: Any = None
    text: str = ""
    origin: str = ""

    def __str__(self):
        if self.passes:
            return f"{self.entry}: every guard passes"
        return f"{self.entry}: {self.text}"


@dataclasses.dataclass
class MissExplanation:
    """What `explain_miss` found.  `hit`: the entry the call would run (the
    newest whose guards all pass, as the hook picks) or None; `entries`:
    one EntryVerdict per live entry, in lookup order (newest first);
    `resume_functions`: "name: n entries" of the resume functions the
    entries' breaks continue in (their arguments exist only once the
    eager part ran: not evaluated)."""
    function: str
    hit: Optional[str]
    entries: List[EntryVerdict]
    resume_functions: List[str] = dataclasses.field(default_factory=list)

    @property
    def would_compile(self) -> bool:
        return self.hit is None

    def __str__(self):
        n = len(self.entries)
        if not n:
            head = f"{self.function}: no cache entries: this call would compile"
        elif self.hit is not None:
            head = f"{self.function}: this call would hit entry {self.hit}"
        else:
            head = (f"{self.function}: this call misses all {n} cache entr"
                    f"{'y' if n == 1 else 'ies'} (it would compile, or run eagerly at the "
                    f"cache limit)")
        out = [head]
        for v in self.entries:
            out.append(f"  {v}")
        if self.resume_functions:
            out.append("  resume functions (not evaluated: reached only after a graph break): "
                       + ", ".join(self.resume_functions))
        return "\n".join(out)


def explain_miss(fn, *args, **kwargs) -> MissExplanation:
    """Explain, without compiling or calling anything, how a call
    `fn(*args, **kwargs)` meets the cache entries of the frame it would run.

    `fn`: a function or method, an `optimize()`/`compile()` wrapper of one
    (its backend takes part: BACKEND_MATCH), an `nn.Module` or its
    OptimizedModule (the entries of its `forward`).  TypeError when `fn`
    is not one of those or the arguments do not bind to its signature."""
    target, key, name, code, f_locals, f_globals, f_builtins = frame_of(fn, args, kwargs)
    closure = target.__closure__
    verdicts, hit, resumes = [], None, []
    for record in _C.cache_entries(code):
        verdict = _verdict(record, f_locals, f_globals, f_builtins, closure, key, target)
        verdicts.append(verdict)
        if verdict.passes and hit is None:
            hit = verdict.entry
        for rc in getattr(record, "resume_codes", ()) or ():
            n = len(_C.cache_entries(rc))
            resumes.append(f"{rc.co_name}: {n} entr{'y' if n == 1 else 'ies'}")
    return MissExplanation(function=f"{name} ({code.co_filename}:{code.co_firstlineno})",
                           hit=hit, entries=verdicts, resume_functions=resumes)


def _verdict(record, f_locals, f_globals, f_builtins, closure, key, func):
    """One entry's verdict: its guards evaluated by a one-entry C tree, the
    failure described as a recompile reason would be."""
    entry = getattr(record, "id", "?")
    tree = _C._tree_new([([g.lower() for g in record.guards], record)])
    index, failures = _C._tree_lookup(tree, f_locals, f_globals, f_builtins, closure, key)
    if index >= 0 or not failures:
        return EntryVerdict(entry=entry, passes=True)
    failure = failures[0]
    guard = record.guards[failure[1]] if 0 <= failure[1] < len(record.guards) else None
    prop, expected, actual = (failure[2:5] if len(failure) >= 5 else ("", None, None))
    return EntryVerdict(
        entry=entry, passes=False, guard=guard, index=failure[1], property=prop,
        expected=expected, actual=actual,
        text=describe_failure(failure, f_locals, f_globals, f_builtins, func),
        origin="" if guard is None else guard.origin_text())


def frame_of(fn, args, kwargs):
    """(target function, backend key, name, code, f_locals, f_globals,
    f_builtins) of the frame `fn(*args, **kwargs)` would run, as the hook
    would see it, without running it (TypeError as explain_miss)."""
    target, key, name = _resolve(fn)
    code = target.__code__
    f_locals = _bind(target, code, args, kwargs)
    f_globals = target.__globals__
    f_builtins = getattr(target, "__builtins__", None) or f_globals.get("__builtins__", {})
    if isinstance(f_builtins, types.ModuleType):
        f_builtins = f_builtins.__dict__
    return target, key, name, code, f_locals, f_globals, f_builtins


def _resolve(fn):
    """(the function whose code runs, the caller's backend key, a name)."""
    key = 0
    if isinstance(fn, OptimizedModule):
        key = _backend_key(fn.__dict__.get("forward"))
        fn = fn._orig_mod
    elif isinstance(fn, _C.OptimizedCallable):
        key = _backend_key(fn)
        fn = fn._fn
        if isinstance(fn, OptimizedModule):
            fn = fn._orig_mod
    if isinstance(fn, torch.nn.Module):
        forward = fn.__dict__.get("forward") or type(fn).forward
        return _resolve_bound(forward, fn, key, type(fn).__qualname__ + ".forward")
    if isinstance(fn, types.MethodType):
        return _resolve_bound(fn.__func__, fn.__self__, key, fn.__func__.__qualname__)
    if isinstance(fn, types.FunctionType):
        return fn, key, fn.__qualname__
    raise TypeError(f"dynamo.explain_miss expects a function, method, nn.Module or an "
                    f"optimize()/compile() wrapper of one, got {type(fn).__name__}")


def _resolve_bound(func, self_obj, key, name):
    if isinstance(func, types.MethodType):         # an instance-level bound forward
        self_obj, func = func.__self__, func.__func__
    if not isinstance(func, types.FunctionType):
        raise TypeError(f"dynamo.explain_miss: {name} is not a Python function")
    return _BoundTarget(func, self_obj), key, name


class _BoundTarget:
    """A function with its first argument already given (a method)."""

    def __init__(self, func, self_obj):
        self.func, self.self_obj = func, self_obj

    def __getattr__(self, name):
        return getattr(self.func, name)


def _backend_key(wrapper):
    """The backend key an OptimizedCallable's calls carry (0: any, RUN mode)."""
    if wrapper is None or getattr(wrapper, "_mode", None) != _C.MODE_COMPILE:
        return 0
    key = getattr(getattr(wrapper, "_callback", None), "backend_key", 0)
    return key if isinstance(key, int) and key > 0 else 0


def _bind(target, code, args, kwargs):
    """The frame's argument slots by name, in co_varnames order (LOCAL
    source slot i is the i-th value)."""
    func = target.func if isinstance(target, _BoundTarget) else target
    if isinstance(target, _BoundTarget):
        args = (target.self_obj,) + tuple(args)
    try:
        bound = inspect.signature(func, follow_wrapped=False).bind(*args, **kwargs)
    except TypeError as e:
        raise TypeError(f"dynamo.explain_miss: the arguments do not bind to "
                        f"{func.__qualname__}: {e}") from None
    bound.apply_defaults()
    n = code.co_argcount + code.co_kwonlyargcount
    n += bool(code.co_flags & inspect.CO_VARARGS) + bool(code.co_flags & inspect.CO_VARKEYWORDS)
    return {name: bound.arguments[name] for name in code.co_varnames[:n]}
