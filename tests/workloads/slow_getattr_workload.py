"""A live process whose costliest guard is known (issue 30, guard cost per
test): a config object whose Python __getattribute__ spins on one
attribute, `slow`, outside tracing (as a transformers PretrainedConfig's
Python __getattribute__ costs each guard fetched through it), read by a
compiled function beside two cheap attributes.  Guard timing is on (1 of
every 1 lookups), so dynamo-top's Guards tab, --summary and dynamo-dot
--guards name `L['cfg'].slow` as the costliest guard.

    python tests/workloads/slow_getattr_workload.py [--exit-after SECS] [--spin-us US]

Prints "READY <pid>" once compiled and called a few times.
"""
import argparse
import os
import sys
import time

import torch

import dynamo

SPIN_NS = 50_000


class SlowConfig:
    """`slow` costs SPIN_NS per read outside tracing; `fast`, `scale` none."""

    def __init__(self):
        self.fast = 2
        self.slow = 3
        self.scale = 0.5

    def __getattribute__(self, name):
        if name == "slow" and not torch.compiler.is_compiling():
            t0 = time.perf_counter_ns()
            while time.perf_counter_ns() - t0 < SPIN_NS:
                pass
        return object.__getattribute__(self, name)


def step(x, cfg):
    y = x * cfg.fast
    y = y + cfg.slow
    return y * cfg.scale


def main(argv=None):
    global SPIN_NS
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--exit-after", type=float, default=None)
    ap.add_argument("--spin-us", type=float, default=50.0)
    ap.add_argument("--period", type=float, default=0.01)
    args = ap.parse_args(argv)
    SPIN_NS = int(args.spin_us * 1000)
    opt = dynamo.optimize("eager")(step)
    x, cfg = torch.ones(4), SlowConfig()
    opt(x, cfg)
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
