"""make bench-models: transformers models (tests/hf_zoo.py) under dynamo and
torch.compile, side by side in one process.

Per model (eval, no_grad, batch 2, small configs from hf_zoo):
  * graphs / breaks of dynamo's capture, outputs equal to eager;
  * capture time: the first call (trace + compile + run) with backend
    "eager", dynamo vs torch.compile(backend="eager"): --repeat rounds
    alternating who goes first, medians of wall and CPU time, the load
    average around them; torch runs --threads intra-op threads (default 1);
  * steady state: median time per call of eager, dynamo(eager),
    dynamo(inductor), torch.compile(inductor); speedups over eager;
  * inductor compile time (first call) for dynamo and torch.compile.
Geometric means of the ratios at the end. Only bench/ may import torch's own
compiler, and only to compare against it. Writes bench/models.json.

Usage: python bench/models.py [--models bert,gpt2] [--no-inductor] [--calls N]
                              [--repeat R] [--threads T]
"""
import argparse
import json
import math
import os
import statistics
import sys
import time
import warnings

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, ".."))
sys.path.insert(0, os.path.join(HERE, "..", "tests"))
import dynamo  # noqa: E402
from dynamo import records  # noqa: E402
import hf_zoo  # noqa: E402


def first_call(fn, inputs):
    t0 = time.perf_counter()
    out = fn(**inputs)
    return out, time.perf_counter() - t0


def capture(make, reset, inputs):
    """First call of a freshly reset compiler: (output, wall s, CPU s)."""
    reset()
    fn = make()
    t0, c0 = time.perf_counter(), time.process_time()
    out = fn(**inputs)
    return out, time.perf_counter() - t0, time.process_time() - c0


def steady(fn, inputs, calls, repeat=5):
    for _ in range(3):
        fn(**inputs)
    runs = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        for _ in range(calls):
            fn(**inputs)
        runs.append((time.perf_counter() - t0) / calls)
    return statistics.median(runs)


def equal(a, b):
    x, y = hf_zoo.tensor_leaves(a), hf_zoo.tensor_leaves(b)
    return len(x) == len(y) and all(torch.allclose(p, q, rtol=1e-4, atol=1e-5) for p, q in zip(x, y))


def bench_model(name, args):
    import torch._dynamo
    row = {"model": name}
    model, inputs = hf_zoo.build(name)
    with torch.no_grad():
        ref = model(**inputs)
        row["eager_ms"] = steady(model, inputs, args.calls) * 1e3

        # capture: `repeat` rounds, alternating who goes first (whoever runs
        # first after a model is built pays torch's one-time warm-up: meta
        # kernels, fake-tensor dispatch cache); medians of wall and CPU time
        times = {"ours": ([], []), "tc": ([], [])}
        row["load_before"] = os.getloadavg()[0]
        for rep in range(args.repeat):
            for who in (("ours", "tc") if rep % 2 == 0 else ("tc", "ours")):
                if who == "ours":
                    out, wall, cpu = capture(lambda: dynamo.optimize("eager")(model),
                                             dynamo.reset, inputs)
                    if rep == 0:
                        recs = records.all_records()        # reset() cleared the rest
                        row["graphs"] = sum(len(r.graphs) for r in recs)
                        row["breaks"] = sum(len(r.break_reasons) for r in recs)
                        row["equal"] = equal(ref, out)
                else:
                    out, wall, cpu = capture(lambda: torch.compile(model, backend="eager"),
                                             torch._dynamo.reset, inputs)
                    if rep == 0:
                        row["tc_equal"] = equal(ref, out)
                times[who][0].append(wall)
                times[who][1].append(cpu)
        row["load_after"] = os.getloadavg()[0]
        for who in times:
            row[f"capture_{who}_s"] = statistics.median(times[who][0])
            row[f"capture_{who}_cpu_s"] = statistics.median(times[who][1])
            row[f"capture_{who}_runs"] = times[who][0]
        dynamo.reset()
        ours = dynamo.optimize("eager")(model)
        ours(**inputs)
        row["ours_eager_ms"] = steady(ours, inputs, args.calls) * 1e3

        torch._dynamo.reset()
        theirs = torch.compile(model, backend="eager")
        theirs(**inputs)
        row["tc_eager_ms"] = steady(theirs, inputs, args.calls) * 1e3

        if args.inductor:
            dynamo.reset()
            ours_ind = dynamo.optimize("inductor")(model)
            out, row["inductor_compile_ours_s"] = first_call(ours_ind, inputs)
            row["ours_inductor_equal"] = equal(ref, out)
            row["ours_inductor_ms"] = steady(ours_ind, inputs, args.calls) * 1e3
            torch._dynamo.reset()
            tc_ind = torch.compile(model, backend="inductor")
            out, row["inductor_compile_tc_s"] = first_call(tc_ind, inputs)
            row["tc_inductor_ms"] = steady(tc_ind, inputs, args.calls) * 1e3
            torch._dynamo.reset()
            dynamo.reset()
    return row


def gmean(values):
    values = [v for v in values if v and v > 0]
    return math.exp(sum(math.log(v) for v in values) / len(values)) if values else float("nan")


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--models", default=",".join(hf_zoo.MODELS))
    p.add_argument("--calls", type=int, default=20)
    p.add_argument("--repeat", type=int, default=3, help="capture rounds per model (median)")
    p.add_argument("--threads", type=int, default=1,
                   help="torch intra-op threads (1: on a loaded machine, 2 threads made "
                        "a tiny linear take 40 ms of barrier waiting instead of 4 us)")
    p.add_argument("--no-inductor", dest="inductor", action="store_false")
    p.add_argument("--out", default=os.path.join(HERE, "models.json"))
    args = p.parse_args()
    warnings.filterwarnings("ignore")
    import torch._dynamo
    torch.set_num_threads(args.threads)
    torch._dynamo.config.cache_size_limit = 64
    rows = []
    for name in args.models.split(","):
        try:
            rows.append(bench_model(name, args))
        except Exception as e:  # noqa: BLE001 - report and go on with the next model
            rows.append({"model": name, "error": f"{type(e).__name__}: {e}"[:200]})
        print(json.dumps(rows[-1]), file=sys.stderr, flush=True)
    head = ("model", "graphs", "breaks", "equal", "capture ours s", "capture tc s", "ratio",
            "cpu ratio",
            "eager ms", "ours(eager) ms", "ours(ind) x", "tc(ind) x", "ind compile ours s",
            "ind compile tc s")
    table = []
    for r in rows:
        if "error" in r:
            table.append((r["model"], "error: " + r["error"][:60]) + ("",) * (len(head) - 2))
            continue
        cap_ratio = r["capture_ours_s"] / r["capture_tc_s"]
        r["capture_ratio"] = cap_ratio
        r["capture_cpu_ratio"] = r["capture_ours_cpu_s"] / r["capture_tc_cpu_s"]
        line = [r["model"], r["graphs"], r["breaks"], r["equal"], f"{r['capture_ours_s']:.2f}",
                f"{r['capture_tc_s']:.2f}", f"{cap_ratio:.2f}", f"{r['capture_cpu_ratio']:.2f}",
                f"{r['eager_ms']:.2f}",
                f"{r['ours_eager_ms']:.2f}"]
        if "ours_inductor_ms" in r:
            r["ours_inductor_speedup"] = r["eager_ms"] / r["ours_inductor_ms"]
            r["tc_inductor_speedup"] = r["eager_ms"] / r["tc_inductor_ms"]
            line += [f"{r['ours_inductor_speedup']:.2f}", f"{r['tc_inductor_speedup']:.2f}",
                     f"{r['inductor_compile_ours_s']:.1f}", f"{r['inductor_compile_tc_s']:.1f}"]
        else:
            line += ["-"] * 4
        table.append(tuple(line))
    ok = [r for r in rows if "error" not in r]
    geo = ["geomean", "", "", "", "", "", f"{gmean([r['capture_ratio'] for r in ok]):.2f}",
           f"{gmean([r['capture_cpu_ratio'] for r in ok]):.2f}", "", ""]
    if ok and all("ours_inductor_speedup" in r for r in ok):
        geo += [f"{gmean([r['ours_inductor_speedup'] for r in ok]):.2f}",
                f"{gmean([r['tc_inductor_speedup'] for r in ok]):.2f}", "", ""]
    else:
        geo += [""] * 4
    table.append(tuple(geo))
    print("| " + " | ".join(head) + " |")
    print("|" + "---|" * len(head))
    for line in table:
        print("| " + " | ".join(str(c) for c in line) + " |")
    with open(args.out, "w") as fh:
        json.dump({"torch": torch.__version__, "threads": args.threads, "repeat": args.repeat,
                   "rows": rows}, fh, indent=1)


if __name__ == "__main__":
    main()
