"""Leak probe: compile/reset cycles and cache hits, measured in one process.

A cycle optimizes a function with a graph break (a compiled graph and a
__resume_at_ function installed in this module's globals), recompiles it
for a second shape, optimizes an nn.Module (parameters, leaf submodules),
calls everything, then calls dynamo.reset().  After `--warmup` cycles it
measures `--cycles` more, then `--hits` calls of compiled entries (direct
calls and shadow frames).  Prints one JSON line with, per cycle and per
hit, the growth in live gc objects, bytes traced by tracemalloc and RSS,
plus the names compiles left in this module's globals.
"""
import argparse
import gc
import json
import os
import sys
import time
import tracemalloc

import torch

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
import dynamo  # noqa: E402


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


def snapshot():
    gc.collect()
    return len(gc.get_objects()), tracemalloc.get_traced_memory()[0], rss_bytes()


def growth(before, after, n):
    return {"objects": (after[0] - before[0]) / n, "traced_bytes": (after[1] - before[1]) / n,
            "rss_bytes": (after[2] - before[2]) / n}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--warmup", type=int, default=200)
    ap.add_argument("--cycles", type=int, default=1000)
    ap.add_argument("--hits", type=int, default=200000)
    ap.add_argument("--no-tracemalloc", action="store_true",
                    help="measure objects and RSS only (tracemalloc slows compiles)")
    args = ap.parse_args()
    for _ in range(args.warmup):
        cycle()
    if not args.no_tracemalloc:
        tracemalloc.start()
    t0 = time.perf_counter()
    # two halves: CPython compacts a dict full of deleted keys (the interned
    # names of the compiles' unique `__compiled_fn_<n>` / `__resume_at_*`
    # identifiers) by allocating a new table; when the old one predates
    # tracemalloc, that one allocation (MBs) shows as growth in the half it
    # falls in. Growth that recurs shows in both halves.
    half = max(args.cycles // 2, 1)
    marks = [snapshot()]
    for i in range(args.cycles):
        cycle()
        if args.no_tracemalloc and (i + 1) % 1000 == 0:     # progress of long runs
            print(json.dumps({"done": i + 1, "objects": snapshot()[0], "rss": rss_bytes()}),
                  file=sys.stderr, flush=True)
        if i + 1 == half:
            marks.append(snapshot())
    marks.append(snapshot())
    halves = [growth(marks[0], marks[1], half),
              growth(marks[1], marks[2], max(args.cycles - half, 1))]
    out = {"cycles": args.cycles, "cycle": growth(marks[0], marks[2], max(args.cycles, 1)),
           "halves": halves, "cycle_s": (time.perf_counter() - t0) / max(args.cycles, 1)}

    f = dynamo.optimize("eager")(with_break)
    g = dynamo.optimize("eager")(whole)
    m = dynamo.optimize("eager")(make_module())
    for _ in range(100):        # warm: every entry compiled and hit
        f(X4), g(XM, W), m(XM)
    before = snapshot()
    for _ in range(args.hits // 3):
        f(X4)
        g(XM, W)
        m(XM)
    after = snapshot()
    out["hits"] = args.hits // 3 * 3
    out["hit"] = growth(before, after, max(out["hits"], 1))
    dynamo.reset()
    out["left_in_globals"] = sorted(k for k in globals()
                                    if k.startswith(("__compiled_fn", "__resume_at")))
    print(json.dumps(out), flush=True)


if __name__ == "__main__":
    main()
