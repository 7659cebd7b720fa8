"""guard_cost: which guards a call's cache lookup spends its time in.

Owns `guard_costs(fn, *args, repeat=32, **kwargs)`: the guards of every
live cache entry of the frame a call of `fn` would run, built into one C
guard tree as the hook builds it (`_C._tree_new`), looked up `repeat` times
on the call's arguments with the hook's timed walk (`_C._tree_lookup(...,
timed=True)`: each test's time, its source's first fetch included, lands
in its test slot), and the tests ranked by time per lookup, each with its
guard and the user line whose tracing installed it.  Nothing is compiled
and `fn` is not called.  It must not time or check a guard itself (one
implementation: the tree's timed walk); the binding of the arguments is
explain_miss's.  The live process's sampled figures are the telemetry's
(`dynamo.config.guard_timing`, dynamo-top's Guards tab).
"""
import dataclasses
from typing import Any, List

from . import _C
from .explain_miss import frame_of
from .guards import property_text


@dataclasses.dataclass
class GuardCost:
    """One test of the guard tree and the time the timed lookups spent in
    it (the test and the first fetch of its source: a Python
    `__getattribute__` or property on the way is counted here, and the
    comparison itself: an equal copy of a long string compares every byte)."""
    test: str                       # "type(L['cfg'].slow) == int"; "switch on L['n']"
    source: str                     # "L['cfg'].slow"
    entry: str                      # "[F/C]" of the entry it is a guard of, "" for a switch
    guard: Any                      # dynamo.guards.Guard, or None (a switch)
    origin: str                     # "file.py:12: the line" that installed the guard, or ""
    ns_per_lookup: float            # its time over all lookups / lookups (the longest
                                    # run counted as the mean of the others: a preempted
                                    # run does not name a cheap test)
    ns_per_run: float               # its time / the lookups that ran it
    share: float                    # of the lookups' time, 0..1

    def __str__(self):
        where = f"  <- {self.origin}" if self.origin else ""
        return (f"{_ns(self.ns_per_lookup)} per lookup ({self.share:.0%}) {self.entry} "
                f"{self.test}{where}")


def _ns(ns):
    return f"{ns / 1000:.1f} us" if ns >= 1000 else f"{ns:.0f} ns"


def _expected_text(value):
    text = getattr(value, "__qualname__", None) if isinstance(value, type) else None
    text = text or repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def guard_costs(fn, *args, repeat: int = 32, **kwargs) -> List[GuardCost]:
    """The tests of the guards a call `fn(*args, **kwargs)` is looked up
    with, costliest first, from `repeat` timed lookups (tests no lookup ran
    are left out).  `fn` as for explain_miss; [] when its frame has no
    cache entry.  TypeError as explain_miss."""
    if not isinstance(repeat, int) or repeat < 1:
        raise ValueError("guard_costs: repeat must be an int >= 1")
    target, key, _, code, f_locals, f_globals, f_builtins = frame_of(fn, args, kwargs)
    records = list(_C.cache_entries(code))
    if not records:
        return []
    tree = _C._tree_new([([g.lower() for g in r.guards], r) for r in records])
    for _ in range(repeat):
        _C._tree_lookup(tree, f_locals, f_globals, f_builtins, target.__closure__, key, True)
    stats = _C._tree_info(tree, True)
    total = stats["timed_ns"] or 1
    out = []
    for _node, test, entry, index, timed, ns, max_ns in _C._tree_info(tree)["slots"]:
        if not timed or not ns:
            continue
        if timed > 1 and max_ns <= ns:      # the longest run as the mean of the others
            ns = (ns - max_ns) * timed / (timed - 1)
        source = _C._telemetry_source_text(code, test[0])
        record = records[entry] if entry >= 0 else None
        guard = record.guards[index] if record is not None and 0 <= index < len(record.guards) else None
        prop = property_text(source, test[1])
        text = f"switch on {prop}" if guard is None else f"{prop} == {_expected_text(test[2])}"
        origin = ""
        if guard is not None and guard.origin is not None:
            origin = f"{guard.origin.where()}: {guard.origin.line()}"
        out.append(GuardCost(test=text, source=source, entry=getattr(record, "id", ""),
                             guard=guard, origin=origin, ns_per_lookup=ns / stats["timed"],
                             ns_per_run=ns / timed, share=ns / total))
    out.sort(key=lambda c: -c.ns_per_lookup)
    return out
