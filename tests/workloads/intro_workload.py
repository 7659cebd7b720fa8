"""A workload for the introspection views (issue 30): guard provenance,
frame labels behind a decorator's wrapper, a frame at the cache limit that
keeps being called.  Prints "READY <pid>" once everything has compiled,
then calls its functions until killed (or --exit-after SECONDS).

- Model.forward is wrapped by `logged` (functools.wraps), as transformers
  wraps its forwards: the compiled frame is `wrapper`, labelled
  "Model.forward";
- branchy: a size branch (SHAPE_GUARD from `if x.size(0) > 4:`) and an
  int argument guarded by value at `y = y * scale`;
- churn: one entry per size up to the cache limit, then eager calls;
- stack: a ModuleList walked per call, two entries (scale 1, 2): the key
  test of the list is made on every branch of its guard tree.
"""
import argparse
import functools
import os
import sys
import time

import torch

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
import dynamo  # noqa: E402

CACHE_LIMIT = 2


def logged(fn):
    @functools.wraps(fn)
    def wrapper(self, *args, **kwargs):
        return fn(self, *args, **kwargs)
    return wrapper


class Model(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = torch.nn.Linear(4, 4)

    @logged
    def forward(self, x):
        return torch.relu(self.proj(x))


@dynamo.optimize("eager")
def branchy(x, scale):
    y = x + 1
    if x.size(0) > 4:
        y = y * scale
    return y


@dynamo.optimize("eager")
def churn(x):
    return torch.sin(x) + torch.cos(x)


class Stack(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.blocks = torch.nn.ModuleList([torch.nn.Linear(4, 4) for _ in range(2)])

    def forward(self, x, scale):
        for block in self.blocks:
            x = block(x)
        return x * scale


model = dynamo.optimize("eager")(Model())
stack = dynamo.optimize("eager")(Stack())


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--exit-after", type=float, default=0)
    args = parser.parse_args()
    dynamo.config.cache_size_limit = CACHE_LIMIT
    dynamo.config.automatic_dynamic_shapes = False     # churn: a storm of sizes
    model(torch.randn(2, 4))
    branchy(torch.randn(6), 2)
    for n in range(1, CACHE_LIMIT + 3):
        churn(torch.randn(n))
    stack(torch.randn(2, 4), 1)
    stack(torch.randn(2, 4), 2)
    print("READY", os.getpid(), flush=True)
    start = time.time()
    while not args.exit_after or time.time() - start < args.exit_after:
        model(torch.randn(2, 4))
        branchy(torch.randn(6), 2)
        churn(torch.randn(CACHE_LIMIT + 5))              # misses every entry: eager
        time.sleep(0.02)


if __name__ == "__main__":
    main()
