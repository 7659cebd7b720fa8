"""Recompile storms: the same guarded value changing call after call.

Owns, per code object, the count of recompiles by what triggered them (the
closest entry's failing test in the C miss report: the guard's source and
the tree property, `size()[0]`, `value`, `id`, ...), and the one warning a
code gets when one trigger has caused STORM_RECOMPILES recompiles: it names
the value, the sizes or values compiled for, the user line that installed
the guard, and the fix (`dynamo.mark_dynamic`, a tensor instead of a
Python number, an object made once).  It evaluates no guard (the texts come
from the miss report) and never stops a compile: the cache limit does.
"""
import warnings
from typing import Dict, List, Optional, Tuple

from . import guards

STORM_RECOMPILES = 3            # recompiles by one trigger that make a storm

# code -> {(source name, property): [expected value texts of the failures, in order]}
_triggers: Dict[object, Dict[Tuple[str, str], List[str]]] = {}
_warned = set()                 # (code, trigger) warned about


def clear():
    """Forget every count (dynamo.reset())."""
    _triggers.clear()
    _warned.clear()


def note_recompile(code, failure) -> Optional[str]:
    """Count one recompile of `code` caused by `failure` (the hook's
    closest-entry item: (record, guard_index, property, expected, actual)).
    Returns the storm warning's text the first time one trigger reaches
    STORM_RECOMPILES (also issued as a RuntimeWarning), else None."""
    if len(failure) < 5 or not isinstance(failure[2], str):
        return None
    record, index, prop, expected, actual = failure[:5]
    try:
        guard = record.guards[index]
    except (AttributeError, IndexError, TypeError):
        return None
    trigger = (guard.source.name(), prop)
    seen = _triggers.setdefault(code, {}).setdefault(trigger, [])
    seen.append(_short(expected))
    if len(seen) < STORM_RECOMPILES or (code, trigger) in _warned:
        return None
    _warned.add((code, trigger))
    text = storm_text(code, guard, prop, seen, actual)
    if not _expected_storm(code, actual):
        warnings.warn(text, RuntimeWarning, stacklevel=2)
    return text


def _expected_storm(code, actual) -> bool:
    """Storms that are the design, not a mistake: only logged (the
    recompiles channel), never warned.  A resume function after a break
    inside a loop compiles once per iteration state (the break is what to
    fix, and the break is reported already); one forward compiled for each
    of several module instances (per-block regional compiles, FSDP) has an
    entry per instance, and the cache limit's warning says when they are
    too many."""
    if code.co_name.startswith("__resume_at_"):
        return True
    import torch
    return isinstance(actual, torch.nn.Module)


def storm_text(code, guard, prop, seen, actual) -> str:
    """The warning: what keeps changing, the values compiled for, where the
    guard comes from, and what to do about it."""
    if guard.kind == guards.SHAPE_GUARD:
        what = f"the size relation {guard.expected[0]}"
    else:
        what = guards.property_text(guard.source.name(), prop)
    values = ", ".join(dict.fromkeys(seen))         # distinct, in order
    text = (f"dynamo: {code.co_name} ({code.co_filename}:{code.co_firstlineno}) recompiled "
            f"{len(seen)} times because {what} keeps changing (compiled for {values}; this "
            f"call {_short(actual)}); the guard comes from {guard.origin_text()}. ")
    return text + fix_text(guard, prop, actual)


def fix_text(guard, prop, actual) -> str:
    """What a user can do about a trigger that keeps changing."""
    src = guard.source.name()
    arg = src[3:-2] if src.startswith("L['") and src.endswith("']") else src
    if prop.startswith("size()["):
        dim = prop[len("size()["):-1]
        return (f"Mark the dimension dynamic before the first call, dynamo.mark_dynamic({arg}, "
                f"{dim}), to compile one graph for every size.")
    if prop == "shape" or guard.kind == guards.SHAPE_GUARD:
        return ("A branch or a check on a symbolic size specializes it: mark the size "
                "dynamic (dynamo.mark_dynamic) and avoid branching on it, or accept "
                "one graph per side of the relation.")
    if prop == "value" and isinstance(actual, (int, float)) and not isinstance(actual, bool):
        return (f"A Python number is a constant of the graph: every value compiles its "
                f"own. Pass it as a tensor (torch.tensor({arg})) so that it is a graph input.")
    if prop == "value":
        return ("Every value compiles its own graph: if it takes a few values, raise "
                "dynamo.config.cache_size_limit; otherwise pass it as a tensor.")
    if prop == "id":
        return ("A new object reaches the guard on every call (a fresh lambda, closure, "
                "module or container): create it once, outside the compiled function.")
    if prop == "len":
        return ("The length of a container keeps changing: keep it fixed, or stack the "
                "items into one tensor.")
    if prop == "type":
        return "The value's type changes between calls: keep it one type."
    if prop == "backend":
        return ("The code is called through optimize()/compile() wrappers of different "
                "backends, and each compiles its own entries: use one wrapper.")
    if prop in ("grad_mode", "global_state"):
        return ("Global state (grad mode, default dtype, autocast, ...) toggles between "
                "calls: call the compiled function under one state.")
    return (f"The guard on {src} ({prop}) can be relaxed by keeping that property the "
            f"same between calls.")


def _short(value) -> str:
    from . import _C
    if value is _C.MISSING:
        return "<missing>"
    if isinstance(value, type):
        return value.__qualname__
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."
