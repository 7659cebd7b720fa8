"""A live process whose costliest guard is known (issue 30, guard cost per
test): a config object whose `slow` attribute is a long string that was
replaced, after the compile, by an equal copy, so its EQUALS_MATCH guard
compares SIZE bytes on every lookup (the kind of guard that costs: a
Python __getattribute__ on a config used to be one, but guards now read
such attributes in C, GENERIC_ATTR), read by a compiled function beside
two cheap attributes. Guard timing is on (1 of every 1 lookups), so
dynamo-top's Guards tab, --summary and dynamo-dot --guards name
`L['cfg'].slow` as the costliest guard.

    python tests/workloads/slow_getattr_workload.py [--exit-after SECS] [--size BYTES]

Prints "READY <pid>" once compiled and called a few times.
"""
import argparse
import os
import sys
import time

import torch

import dynamo

SIZE = 4_000_000


class SlowConfig:
    """`slow` a SIZE-byte string (each guard lookup compares it); `fast`,
    `scale` small numbers."""

    def __init__(self):
        self.fast = 2
        self.slow = "x" * SIZE
        self.scale = 0.5

    def copy_slow(self):
        """An equal string, another object: the guard's comparison can no
        longer stop at identity."""
        self.slow = "".join(["x" * (SIZE // 2), "x" * (SIZE - SIZE // 2)])


def step(x, cfg):
    y = x * cfg.fast
    y = y + len(cfg.slow)
    return y * cfg.scale


def main(argv=None):
    global SIZE
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--exit-after", type=float, default=None)
    ap.add_argument("--size", type=int, default=SIZE)
    ap.add_argument("--period", type=float, default=0.01)
    args = ap.parse_args(argv)
    SIZE = args.size
    opt = dynamo.optimize("eager")(step)
    x, cfg = torch.ones(4), SlowConfig()
    opt(x, cfg)
    cfg.copy_slow()
    dynamo.config.guard_timing = 1
    for _ in range(5):
        opt(x, cfg)
    print(f"READY {os.getpid()}", flush=True)
    start = time.monotonic()
    while args.exit_after is None or time.monotonic() - start < args.exit_after:
        opt(x, cfg)
        time.sleep(args.period)
    return 0


if __name__ == "__main__":
    sys.exit(main())
