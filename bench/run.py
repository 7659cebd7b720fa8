"""make bench: per-call cost of eager, dynamo and torch.compile, side by side.

Everything is measured in one process and one run so the ratios compare like
with like. Only bench/ may import torch's own compiler, and only to compare
against it. Prints tables and writes bench/results.json.

Figures:
  * per-call time and overhead over eager for add(a, b), a sum of 8 tensors
    and a 3-layer MLP module on tiny tensors (backend "eager" for both
    compilers, dynamic=False, cache limits raised);
  * lookup time with 1, 8, 64 and 256 cache entries of one function (one
    entry per input shape) called round robin, so the entry that hits
    changes on every call; and dynamo's guard-tree nodes visited per call;
  * guard cost on transformers models (tests/hf_zoo.py: tiny BERT,
    GPT-2): the guard-tree lookup of every compiled frame timed on every
    call (dynamo.config.guard_timing = 1), ns per call summed over the
    frames a model call looks up, the guards tested, and the costliest
    guard-tree node; torch.compile has no such figure (--guard-models none
    skips it);
  * dynamic shapes (bench/dynamic.py): an MLP, a tiny BERT and a conv net
    over 20 input shapes each, dynamo vs torch.compile with the same
    backend (eager, inductor), each in a fresh process: graphs compiled,
    breaks, cache-limit warnings, compile time, steady time per call,
    outputs equal to eager (--dynamic-cases none skips it).
"""
import argparse
import json
import os
import statistics
import sys
import time

import torch

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
import dynamo  # noqa: E402
from dynamo import _C  # noqa: E402


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


def time_calls(fn, arg_sets, n, repeat):
    """Median over `repeat` runs of the mean ns per call; each run makes `n`
    calls cycling through `arg_sets`."""
    k = len(arg_sets)
    for i in range(max(200, 2 * k)):
        fn(*arg_sets[i % k])
    runs = []
    for _ in range(repeat):
        sets = (arg_sets * (n // k + 1))[:n]
        t0 = time.perf_counter_ns()
        for args in sets:
            fn(*args)
        runs.append((time.perf_counter_ns() - t0) / n)
    return statistics.median(runs)


def reference_compile(fn):
    return torch.compile(fn, backend="eager", dynamic=False)


def configure_reference(limit):
    import torch._dynamo as ref  # comparison only
    for name in ("cache_size_limit", "recompile_limit", "accumulated_cache_size_limit",
                 "accumulated_recompile_limit"):
        if hasattr(ref.config, name):
            setattr(ref.config, name, limit)
    return ref


def per_call_table(n, repeat):
    cases = [
        ("add(a, b)", add, (torch.randn(4), torch.randn(4))),
        ("sum of 8 tensors", sum8, tuple(torch.randn(4) for _ in range(8))),
        ("3-layer MLP", MLP().eval(), (torch.randn(2, 4),)),
    ]
    rows = {}
    for name, fn, args in cases:
        dynamo.reset()
        eager = time_calls(fn, [args], n, repeat)
        ours = time_calls(dynamo.optimize("eager")(fn), [args], n, repeat)
        theirs = time_calls(reference_compile(fn), [args], n, repeat)
        rows[name] = {"eager_ns": eager, "dynamo_ns": ours, "torch_compile_ns": theirs,
                      "dynamo_overhead_ns": ours - eager,
                      "torch_compile_overhead_ns": theirs - eager}
    return rows


def lookup_table(counts, n, repeat):
    rows = {}
    for count in counts:
        arg_sets = [(torch.randn(i + 1), torch.randn(i + 1)) for i in range(count)]
        dynamo.reset()
        # one static entry per shape, as torch.compile(dynamic=False) makes
        # (automatic dynamic shapes would fold them into one entry)
        dynamo.config.automatic_dynamic_shapes = False
        try:
            opt = dynamo.optimize("eager")(add)
            ours = time_calls(opt, arg_sets, n, repeat)
        finally:
            dynamo.config.automatic_dynamic_shapes = True
        entries = len(_C.cache_entries(add.__code__))
        visited = None
        if hasattr(_C, "tree_stats"):
            before = _C.tree_stats(add.__code__)
            for args in arg_sets:
                opt(*args)
            after = _C.tree_stats(add.__code__)
            lookups = after["lookups"] - before["lookups"]
            visited = (after["visited_total"] - before["visited_total"]) / max(lookups, 1)
        ref = configure_reference(max(1024, 2 * count))
        ref.reset()
        theirs = time_calls(reference_compile(add), arg_sets, n, repeat)
        eager = time_calls(add, arg_sets, n, repeat)
        rows[str(count)] = {"entries": entries, "eager_ns": eager, "dynamo_ns": ours,
                            "torch_compile_ns": theirs, "tree_nodes_visited_per_call": visited}
    base = rows[str(counts[0])]
    for row in rows.values():
        row["dynamo_vs_1_entry"] = row["dynamo_ns"] / base["dynamo_ns"]
        row["torch_compile_vs_1_entry"] = row["torch_compile_ns"] / base["torch_compile_ns"]
    return rows


_TELEMETRY_PROBE = """
import sys, time, statistics, torch, dynamo
def add(a, b):
    return a + b
a, b = torch.randn(4), torch.randn(4)
opt = dynamo.optimize("eager")(add)
n, repeat = int(sys.argv[1]), int(sys.argv[2])
def per_call(fn):
    for _ in range(500):
        fn(a, b)
    runs = []
    for _ in range(repeat):
        t0 = time.perf_counter_ns()
        for _ in range(n):
            fn(a, b)
        runs.append((time.perf_counter_ns() - t0) / n)
    return min(runs)
with torch.no_grad():
    print(per_call(add), per_call(opt))
"""


def telemetry_cost(n, repeat, rounds=5):
    """Per-call cost of the telemetry counters: optimized add(a, b) in
    subprocesses with DYNAMO_TELEMETRY=0 and =1, alternated `rounds` times."""
    import subprocess
    here = os.path.join(os.path.dirname(__file__), "..")
    result = {"0": [], "1": []}
    for _ in range(rounds):
        for flag in ("0", "1"):
            env = {**os.environ, "DYNAMO_TELEMETRY": flag,
                   "PYTHONPATH": os.path.abspath(here)}
            out = subprocess.run([sys.executable, "-c", _TELEMETRY_PROBE, str(n), str(repeat)],
                                 capture_output=True, text=True, env=env, check=True)
            eager, opt = map(float, out.stdout.split())
            result[flag].append((eager, opt))
    off = statistics.median(o - e for e, o in result["0"])
    on = statistics.median(o - e for e, o in result["1"])
    return {"dispatch_overhead_off_ns": off, "dispatch_overhead_on_ns": on,
            "telemetry_ns": on - off, "telemetry_share_of_overhead": (on - off) / off}


def guard_cost_table(names, calls):
    """Per model of tests/hf_zoo.py: the guard lookup cost of a cache hit,
    every lookup timed (dynamo.config.guard_timing = 1, the clock read
    around each guard-tree node), after two warm-up calls."""
    sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "tests"))
    import hf_zoo
    from dynamo import records
    rows = {}
    for name in names:
        dynamo.reset()
        model, inputs = hf_zoo.build(name)
        opt = dynamo.optimize("eager")(model)
        opt(**inputs)
        opt(**inputs)
        codes = {r.code for r in records.all_records() if r.status == "ok"}
        before = {c: _C.tree_stats(c) for c in codes}
        dynamo.config.guard_timing = 1
        try:
            for _ in range(calls):
                opt(**inputs)
        finally:
            dynamo.config.guard_timing = 0
        timed = ns = tests = 0
        costliest = (0, "")
        for c in codes:
            stats = _C.tree_stats(c)
            timed += stats["timed"] - before[c]["timed"]
            ns += stats["timed_ns"] - before[c]["timed_ns"]
            tests += stats["tests"]
            todo = [_C.tree_info(c)["root"]]
            while todo:
                n = todo.pop()
                if n is None:
                    continue
                if n["timed"] and n["timed_ns"] / calls > costliest[0]:
                    first = n["tests"][0] if n["tests"] else None
                    text = f"{c.co_name}: {len(n['tests'])} tests" + (
                        f", first {guards_text(c, first)}" if first else "")
                    costliest = (n["timed_ns"] / calls, text)
                todo.extend(child for _, child in n.get("branches") or [])
                todo.append(n.get("default"))
        rows[name] = {"frames": len(codes), "lookups_per_call": timed / calls,
                      "guard_ns_per_call": ns / calls, "guard_tests": tests,
                      "costliest_node_ns_per_call": costliest[0],
                      "costliest_node": costliest[1]}
    dynamo.reset()
    return rows


def guards_text(code, test):
    """"L['x'].size()[0]" of a tree_info test (source tuple, property,
    expected) of code's tree, as telemetry writes it."""
    from dynamo import guards
    return guards.property_text(_C._telemetry_source_text(code, test[0]), test[1])


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--calls", type=int, default=20000, help="calls per timing run")
    ap.add_argument("--repeat", type=int, default=7, help="timing runs (median taken)")
    ap.add_argument("--entries", default="1,8,64,256", help="cache entry counts for lookup")
    ap.add_argument("--dynamic-cases", default="mlp,bert,gpt2,conv",
                    help="dynamic-shapes table cases (bench/dynamic.py), 'none' to skip")
    ap.add_argument("--dynamic-backends", default="eager,inductor")
    ap.add_argument("--guard-models", default="bert,gpt2",
                    help="guard cost table models (tests/hf_zoo.py), 'none' to skip")
    ap.add_argument("--out", default=os.path.join(os.path.dirname(__file__), "results.json"))
    args = ap.parse_args()
    configure_reference(1024)
    dynamo.config.cache_size_limit = 1024
    from tabulate import tabulate
    with torch.no_grad():
        per_call = per_call_table(args.calls, args.repeat)
        lookup = lookup_table([int(c) for c in args.entries.split(",")], args.calls, args.repeat)
    guard_rows = {}
    if args.guard_models != "none":
        with torch.no_grad():
            guard_rows = guard_cost_table(args.guard_models.split(","), 200)
    telemetry = telemetry_cost(args.calls, args.repeat)
    dynamic_rows = []
    if args.dynamic_cases != "none":
        import dynamic as dynamic_bench
        dynamic_rows = dynamic_bench.table(args.dynamic_cases.split(","),
                                           args.dynamic_backends.split(","))
    print("Per-call time (ns), backend 'eager' for both compilers")
    print(tabulate([[k, f"{v['eager_ns']:.0f}", f"{v['dynamo_ns']:.0f}",
                     f"{v['torch_compile_ns']:.0f}", f"{v['dynamo_overhead_ns']:.0f}",
                     f"{v['torch_compile_overhead_ns']:.0f}"] for k, v in per_call.items()],
                   headers=["case", "eager", "dynamo", "torch.compile", "dynamo overhead",
                            "torch.compile overhead"]))
    print("\nLookup with N cache entries of add(a, b), called round robin (ns per call)")
    print(tabulate([[k, v["entries"], f"{v['eager_ns']:.0f}", f"{v['dynamo_ns']:.0f}",
                     f"{v['dynamo_vs_1_entry']:.2f}x", f"{v['torch_compile_ns']:.0f}",
                     f"{v['torch_compile_vs_1_entry']:.2f}x",
                     v["tree_nodes_visited_per_call"]] for k, v in lookup.items()],
                   headers=["N", "entries", "eager", "dynamo", "vs N=1", "torch.compile",
                            "vs N=1", "tree nodes/call"]))
    print("\nTelemetry counters on the per-call path (optimized add(a, b), subprocesses, "
          "DYNAMO_TELEMETRY=0 vs 1, median of 5 alternated runs)")
    print(tabulate([[f"{telemetry['dispatch_overhead_off_ns']:.0f}",
                     f"{telemetry['dispatch_overhead_on_ns']:.0f}",
                     f"{telemetry['telemetry_ns']:+.0f}",
                     f"{100 * telemetry['telemetry_share_of_overhead']:+.1f}%"]],
                   headers=["overhead off (ns)", "overhead on (ns)", "telemetry (ns)",
                            "share of overhead"]))
    if guard_rows:
        print("\nGuard cost of a cache hit on transformers models (tests/hf_zoo.py; every lookup "
              "timed, dynamo.config.guard_timing = 1; torch.compile reports no equivalent)")
        print(tabulate([[k, v["frames"], f"{v['lookups_per_call']:.1f}", v["guard_tests"],
                         f"{v['guard_ns_per_call']:.0f}", f"{v['costliest_node_ns_per_call']:.0f}",
                         v["costliest_node"]] for k, v in guard_rows.items()],
                       headers=["model", "frames", "lookups/call", "guard tests",
                                "guard ns/call", "costliest node ns", "costliest node"]))
    if dynamic_rows:
        print("\nDynamic shapes: 20 input shapes per case, each compiler in a fresh process "
              "(round 1 compiles, then 5 steady rounds; CPU time)")
        dynamic_bench.print_table(dynamic_rows)
    with open(args.out, "w") as f:
        json.dump({"per_call": per_call, "lookup": lookup, "telemetry": telemetry,
                   "guard_cost": guard_rows,
                   "dynamic_shapes": dynamic_rows,
                   "torch": torch.__version__, "python": sys.version.split()[0]}, f, indent=2)
    print(f"\nwrote {args.out}")


if __name__ == "__main__":
    main()
