"""Leak probe: compile/reset cycles and cache hits, measured in one process.

A cycle optimizes a function with a graph break (a compiled graph and a
__resume_at_ function installed in this module's globals), recompiles it
for a second shape, optimizes an nn.Module (parameters, leaf submodules),
calls everything, then calls dynamo.reset().  After `--warmup` cycles it
measures `--cycles` more, then `--hits` calls of compiled entries (direct
calls and shadow frames).  Prints one JSON line with, per cycle and per
hit, the growth in live gc objects, bytes traced by tracemalloc and RSS,
plus the names compiles left in this module's globals.

RSS is read twice at each mark: as is, and after glibc's malloc_trim(0)
(`rss_trim`), which gives back free heap pages: what stays after a trim is
memory in use, the rest is free space malloc kept.  The telemetry region's
fill levels (code and entry slots, blob bytes) are read at each mark too.
`--samples 1000,5000,10000` adds marks at those cycles (the figures of
`make leak-figures`), each with its growth per cycle since the first mark
and since the previous one.

Two more counters tell real growth from resident-page noise: the bytes
malloc hands out and has not had back (`heap_used_bytes`: glibc's
mallinfo2 uordblks + hblkhd, over every arena: C, C++ and Python's large
objects) and the blocks of Python's small-object allocator in use
(`py_blocks`).  RSS after a trim moves by whole pages and whole mappings
(a 1 MiB pymalloc arena, a heap page that keeps one live chunk), so over a
few thousand cycles it wanders by a few hundred KB either way while these
two stay flat; growth that is a leak shows in them.

`--phase cycles` or `--phase hits` runs one half only (leak_figures.py runs
them as separate processes, in parallel).
"""
import argparse
import ctypes
import gc
import json
import os
import sys
import time
import tracemalloc

import torch

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
import dynamo  # noqa: E402


class _Mallinfo2(ctypes.Structure):
    _fields_ = [(name, ctypes.c_size_t) for name in (
        "arena", "ordblks", "smblks", "hblks", "hblkhd", "usmblks", "fsmblks", "uordblks",
        "fordblks", "keepcost")]


try:
    _libc = ctypes.CDLL("libc.so.6")
    _malloc_trim = _libc.malloc_trim
except (OSError, AttributeError):      # not glibc
    _libc = _malloc_trim = None
try:
    _mallinfo2 = _libc.mallinfo2       # glibc >= 2.33
    _mallinfo2.restype = _Mallinfo2
    _mallinfo2.argtypes = []
except AttributeError:
    _mallinfo2 = None


def heap_used_bytes():
    """Bytes malloc has handed out and not had back (all arenas and mmapped
    chunks); 0 without glibc's mallinfo2."""
    if _mallinfo2 is None:
        return 0
    info = _mallinfo2()
    return info.uordblks + info.hblkhd


def rss_bytes():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def with_break(x):
    y = x * 2
    if y.sum() > 0:             # a graph break: the rest runs in __resume_at_*
        return y + 1
    return y - 1


def whole(x, w):
    return (x @ w).relu() + 1   # captured whole: a direct call on a hit


def make_module():
    return torch.nn.Sequential(torch.nn.Linear(8, 8), torch.nn.ReLU(), torch.nn.Linear(8, 2))


X4, X5, XM, W = torch.ones(4), torch.ones(5), torch.randn(3, 8), torch.randn(8, 8)


def cycle():
    f = dynamo.optimize("eager")(with_break)
    f(X4)
    f(X5)                       # recompile: a second entry
    f(X4)
    m = dynamo.optimize("eager")(make_module())
    m(XM)
    m(XM)
    dynamo.reset()


def rss_shmem_bytes():
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("RssShmem:"):
                return int(line.split()[1]) * 1024
    return 0


def telemetry_fill():
    info = dynamo._C._telemetry_info()
    return [info.get("n_codes", 0), info.get("n_entries", 0), info.get("blob_used", 0)]


def collect_all():
    """Collect until a pass frees nothing (at most 10 passes): what is
    counted then is live.  One gc.collect() is not enough with torch: a
    c10::SymInt in a FakeTensor's sizes holds its Python SymNode through
    C++ (PythonSymNodeImpl), a reference the collector cannot see, so a
    SymNode whose FakeTensor is garbage (Node.meta["example_value"] of a
    dead compile's GraphModule) counts as a root in that pass, and with it
    the ShapeEnv it points to (its symbols, fake-tensor cache entries,
    OriginList...).  The pass frees the FakeTensor; the ShapeEnv is
    garbage from then on and goes in the next pass.  How many such
    ShapeEnvs wait at a mark depends on when the automatic full
    collections last ran (0 to ~50 on 3.12): a single pass made the
    per-cycle object count swing with the window on every Python (3.12:
    +4.97, -35.1, +3.98 objects per cycle after 150, 300, 450 warm-up
    cycles; 3.11: +3.3, -2.02, +4.97; 3.13: -9.97, +1.69, -1.65)."""
    for _ in range(10):
        if gc.collect() == 0:
            break


def snapshot():
    collect_all()
    rss = rss_bytes()
    if _malloc_trim is not None:
        _malloc_trim(0)
    return (len(gc.get_objects()), tracemalloc.get_traced_memory()[0], rss, rss_bytes(),
            rss_shmem_bytes(), *telemetry_fill(), heap_used_bytes(), sys.getallocatedblocks())


KEYS = ("objects", "traced_bytes", "rss_bytes", "rss_trim_bytes", "rss_shmem_bytes",
        "tele_codes", "tele_entries", "tele_blob_bytes", "heap_used_bytes", "py_blocks")


def growth(before, after, n):
    return {k: (a - b) / n for k, a, b in zip(KEYS, after, before)}


def run_cycles(args, out):
    sample_at = sorted({int(x) for x in args.samples.split(",") if x.strip()})
    for _ in range(args.warmup):
        cycle()
    t0, c0 = time.perf_counter(), time.process_time()
    half = max(args.cycles // 2, 1)
    marks = [snapshot()]
    samples, prev = [], (0, marks[0])
    for i in range(args.cycles):
        cycle()
        if i + 1 == half:
            snap = snapshot()
            marks.append((snap[0] - len(samples),) + snap[1:])
        if i + 1 in sample_at:
            snap = snapshot()
            # the marks' own dicts (one gc-tracked dict per earlier mark,
            # kept in `samples`) are the measurement's, not the workload's
            snap = (snap[0] - len(samples),) + snap[1:]
            samples.append({"cycle": i + 1, "elapsed_s": time.perf_counter() - t0,
                            "absolute": dict(zip(KEYS, snap)),
                            "per_cycle_since_start": growth(marks[0], snap, i + 1),
                            "per_cycle_since_previous": growth(prev[1], snap, i + 1 - prev[0])})
            prev = (i + 1, snap)
            print(json.dumps(samples[-1]), file=sys.stderr, flush=True)   # progress of long runs
    elapsed, cpu = time.perf_counter() - t0, time.process_time() - c0
    snap = snapshot()
    marks.append((snap[0] - len(samples),) + snap[1:])
    if len(marks) == 2:         # no cycle measured: both halves empty
        marks.insert(1, marks[0])
    halves = [growth(marks[0], marks[1], half),
              growth(marks[1], marks[2], max(args.cycles - half, 1))]
    out.update({"cycles": args.cycles, "cycle": growth(marks[0], marks[2], max(args.cycles, 1)),
                "halves": halves, "cycle_s": elapsed / max(args.cycles, 1),
                "cycle_cpu_s": cpu / max(args.cycles, 1),
                "start": dict(zip(KEYS, marks[0])), "end": dict(zip(KEYS, marks[-1])),
                "samples": samples})

    if args.traced_cycles > 0:
        # two halves: CPython compacts a dict full of deleted keys (the
        # interned names of the compiles' unique `__compiled_fn_<n>` /
        # `__resume_at_*` identifiers) by allocating a new table; when the
        # old one predates tracemalloc, that one allocation (MBs) shows as
        # growth in the half it falls in. Growth that recurs shows in both.
        tracemalloc.start()
        n = args.traced_cycles
        tm = [snapshot()]
        for i in range(n):
            cycle()
            if i + 1 == max(n // 2, 1):
                tm.append(snapshot())
        tm.append(snapshot())   # tracemalloc stays on: the hits read traced bytes too
        out["traced_cycles"] = n
        out["traced_halves"] = [growth(tm[0], tm[1], max(n // 2, 1)),
                                growth(tm[1], tm[2], max(n - n // 2, 1))]


def run_hits(args, out):
    f = dynamo.optimize("eager")(with_break)
    g = dynamo.optimize("eager")(whole)
    m = dynamo.optimize("eager")(make_module())
    for _ in range(100):        # warm: every entry compiled and hit
        f(X4), g(XM, W), m(XM)
    before = snapshot()
    rounds = args.hits // 3
    hit_marks = sorted({r for r in (rounds // 10, rounds // 2, rounds) if r > 0})
    # the marks' tuples only (a list made beforehand): their dicts are made
    # after the loop, so the measurement keeps nothing of its own in it
    done, snaps, spent, cpu = 0, [None] * len(hit_marks), 0.0, 0.0
    for k, mark in enumerate(hit_marks):
        t0, c0 = time.perf_counter(), time.process_time()
        for _ in range(mark - done):
            f(X4)
            g(XM, W)
            m(XM)
        spent += time.perf_counter() - t0
        cpu += time.process_time() - c0
        done = mark
        snaps[k] = snapshot()
    out["hit_samples"] = [{"hits": 3 * mark, "absolute": dict(zip(KEYS, snap)),
                           "per_hit_since_start": growth(before, snap, 3 * mark)}
                          for mark, snap in zip(hit_marks, snaps)]
    after = snaps[-1] if hit_marks else before
    out["hits"] = rounds * 3
    out["hit"] = growth(before, after, max(out["hits"], 1))
    out["hit_s"] = spent / max(out["hits"], 1)
    out["hit_cpu_s"] = cpu / max(out["hits"], 1)
    out["hits_start"] = dict(zip(KEYS, before))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--warmup", type=int, default=200)
    ap.add_argument("--cycles", type=int, default=1000)
    ap.add_argument("--hits", type=int, default=200000)
    ap.add_argument("--traced-cycles", type=int, default=0,
                    help="after the measured cycles, this many more with tracemalloc on "
                         "(its own tables grow with each new file name: RSS is read without it)")
    ap.add_argument("--samples", default="",
                    help="comma-separated cycle counts at which to add a mark (e.g. 1000,5000,10000)")
    ap.add_argument("--phase", choices=("both", "cycles", "hits"), default="both",
                    help="run the compile/reset cycles, the hits, or both (in that order)")
    args = ap.parse_args()
    out = {"phase": args.phase, "telemetry": dynamo._C._telemetry_info().get("enabled", False),
           "python": sys.version.split()[0], "torch": torch.__version__,
           "torch_threads": torch.get_num_threads()}
    if args.phase in ("both", "cycles"):
        run_cycles(args, out)
    if args.phase in ("both", "hits"):
        run_hits(args, out)
    dynamo.reset()
    out["left_in_globals"] = sorted(k for k in globals()
                                    if k.startswith(("__compiled_fn", "__resume_at")))
    print(json.dumps(out), flush=True)


if __name__ == "__main__":
    main()
