"""make bench: per-call cost of eager, dynamo and torch.compile, side by side.

Measured in one process and one run, so the ratios are comparable. Only this
directory may import torch's own compiler, and only to compare against it.
Prints a table and writes bench/results.json.
"""
import json
import os
import statistics
import sys
import time

import torch

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
import dynamo  # noqa: E402


def add(a, b):
    return a + b


def sum8(a, b, c, d, e, f, g, h):
    return a + b + c + d + e + f + g + h


class MLP(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.l1 = torch.nn.Linear(4, 4)
        self.l2 = torch.nn.Linear(4, 4)
        self.l3 = torch.nn.Linear(4, 4)

    def forward(self, x):
        return self.l3(torch.relu(self.l2(torch.relu(self.l1(x)))))


def per_call_ns(fn, args, n=20000, repeat=7):
    for _ in range(200):
        fn(*args)
    best = []
    for _ in range(repeat):
        t0 = time.perf_counter_ns()
        for _ in range(n):
            fn(*args)
        best.append((time.perf_counter_ns() - t0) / n)
    return statistics.median(best)


def main():
    import torch._dynamo as ref  # comparison only
    ref.config.cache_size_limit = 512
    dynamo.config.cache_size_limit = 512
    cases = [
        ("add(a, b)", add, (torch.randn(4), torch.randn(4))),
        ("sum of 8", sum8, tuple(torch.randn(4) for _ in range(8))),
        ("3-layer MLP", MLP().eval(), (torch.randn(2, 4),)),
    ]
    rows, out = [], {}
    with torch.no_grad():
        for name, fn, args in cases:
            eager = per_call_ns(fn, args)
            ours = per_call_ns(dynamo.optimize("eager")(fn), args)
            theirs = per_call_ns(torch.compile(fn, backend="eager", dynamic=False), args)
            out[name] = {"eager_ns": eager, "dynamo_ns": ours, "torch_compile_ns": theirs,
                         "dynamo_overhead_ns": ours - eager,
                         "torch_compile_overhead_ns": theirs - eager}
            rows.append([name, f"{eager:.0f}", f"{ours:.0f}", f"{theirs:.0f}",
                         f"{ours - eager:.0f}", f"{theirs - eager:.0f}",
                         f"{(theirs - eager) / max(ours - eager, 1):.1f}x"])
    from tabulate import tabulate
    print(tabulate(rows, headers=["case", "eager ns", "dynamo ns", "torch.compile ns",
                                  "dynamo overhead", "torch.compile overhead",
                                  "overhead ratio"]))
    path = os.path.join(os.path.dirname(__file__), "results.json")
    with open(path, "w") as f:
        json.dump(out, f, indent=2)
    print(f"\nwrote {path}")


if __name__ == "__main__":
    main()
