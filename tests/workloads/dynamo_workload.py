"""A long-running dynamo workload for the telemetry tools (dynamo-top, dynamo-inspect, dynamo-dot).

It exercises every kind of compile event the tools must show, then keeps
calling the compiled functions (so the counters move) until it is killed:

- toy_example: a graph break (branch on a tensor's value) and its
  __resume_at_ functions;
- mlp_step: a recompile (a different input size fails TENSOR_MATCH);
- churn: hits config.cache_size_limit (one shape per call) and then runs
  eagerly ("LIMIT -> eager");
- TinyNet.forward: submodule calls with qualified paths ("block.proj") and
  classes in the graph.

Prints "READY <pid>" on stdout once everything above has compiled.
Options: --exit-after SECONDS (exit by itself; default: run until killed),
--period SECONDS between rounds of calls (default 0.05).
"""
import argparse
import os
import sys
import time

import torch

# Run from anywhere: the repository root holds the dynamo package.
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
import dynamo  # noqa: E402

CACHE_LIMIT = 3


@dynamo.optimize("eager")
def toy_example(a, b):
    x = a / (torch.abs(a) + 1)
    if b.sum() < 0:
        b = b * -1
    return x * b


@dynamo.optimize("eager")
def mlp_step(x, w):
    h = torch.relu(x @ w)
    return h.sum(dim=1)


@dynamo.optimize("eager")
def churn(x):
    return torch.sin(x) + torch.cos(x)


class Block(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = torch.nn.Linear(4, 4)

    def forward(self, x):
        return torch.relu(self.proj(x))


class TinyNet(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.block = Block()
        self.head = torch.nn.Linear(4, 2)

    def forward(self, x):
        return self.head(self.block(x))


net = dynamo.optimize("eager")(TinyNet())


def warm_up():
    """Compile everything once: a break, a recompile, the cache limit."""
    toy_example(torch.randn(10), torch.ones(10))        # b.sum() >= 0: the jump is taken
    toy_example(torch.randn(10), -torch.ones(10))       # the other branch
    w = torch.randn(8, 4)
    mlp_step(torch.randn(5, 8), w)
    mlp_step(torch.randn(7, 8), w)                       # recompile: size()[0] 5 -> 7
    for n in range(1, CACHE_LIMIT + 3):                  # one entry per size, then eager
        churn(torch.randn(n))
        churn(torch.randn(n))       # a hit: an entry that served a call stays at the limit
    with torch.no_grad():
        net(torch.randn(2, 4))


def one_round(i):
    toy_example(torch.randn(10), torch.randn(10))
    mlp_step(torch.randn(5 if i % 2 else 7, 8), torch.randn(8, 4))
    churn(torch.randn(1 + i % (CACHE_LIMIT + 2)))
    with torch.no_grad():
        net(torch.randn(2, 4))


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--exit-after", type=float, default=None)
    ap.add_argument("--period", type=float, default=0.05)
    args = ap.parse_args(argv)
    dynamo.config.cache_size_limit = CACHE_LIMIT
    dynamo.config.automatic_dynamic_shapes = False      # one entry per shape (churn, scale)
    import warnings
    warnings.simplefilter("ignore")
    warm_up()
    print(f"READY {os.getpid()}", flush=True)
    start = time.monotonic()
    i = 0
    while args.exit_after is None or time.monotonic() - start < args.exit_after:
        one_round(i)
        i += 1
        time.sleep(args.period)
    return 0


if __name__ == "__main__":
    sys.exit(main())
