"""What a compiled model costs the rest of the process: eager's speed on a
GPU model before and after a compiler compiled (and ran) the same model,
one fresh process per compiler and mode, so that no two compilers share a
process.

First run (NVIDIA H200, torch 2.11, BERT 1 x 32, one process each): eager
after the compile 4.30 ms with no compile, 4.50 after ours default, 4.64
after torch.compile default, 6.80 after torch.compile reduce-overhead, 8.59
after ours reduce-overhead. The last three conditions bisect that.

Why: in bench/gpu_real.py's `--ours autotune` runs (our reduce-overhead
chosen, torch.compile in default mode), eager BERT 1 x 32 measured 9-12 ms
against 4.1 ms in default-mode runs on the same card. This tells whether a
compile in reduce-overhead mode makes eager code of the process slower,
for either compiler.

Usage: python bench/gpu_process_cost.py [--model bert1] [--rounds 7] [--calls 50]
           [--conditions none,ours-default,ours-reduce-overhead,tc-default,tc-reduce-overhead,
                         ours-cudagraphs,graph-only,cached-tensors]
Prints one line per condition: eager ms before / after, the compiled
model's ms, and the Python threads alive after the compile. Only bench/
may import torch's own compiler.
"""
import argparse
import gc
import json
import os
import statistics
import subprocess
import sys
import threading

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
sys.path.insert(0, HERE)

CONDITIONS = ("none", "ours-default", "ours-reduce-overhead", "tc-default", "tc-reduce-overhead",
              # to tell which part of reduce-overhead costs eager its speed:
              "ours-cudagraphs",        # AOT eager kernels in a CUDA graph, no Inductor
              "graph-only",             # the eager model captured by torch.cuda.graph, replayed
              "cached-tensors")         # only the flag Inductor's CUDA-graph trees set


def graph_only(model, inp):
    """The eager forward captured once into a CUDA graph and replayed (torch's
    documented whole-network capture), no compiler at all."""
    import torch
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for _ in range(3):
            model(**inp)
    torch.cuda.current_stream().wait_stream(side)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        model(**inp)

    def replay(**_):
        g.replay()
    return replay


def measure(fn, inp, rounds, calls):
    import gpu_real
    gpu_real.run(fn, inp, calls)
    return statistics.median(gpu_real.run(fn, inp, calls) for _ in range(rounds))


def one(condition, model_name, rounds, calls):
    import torch
    import gpu_real
    model, inp = gpu_real.MODELS[model_name]()
    model = model.cuda().eval()
    inp = {k: v.cuda() for k, v in inp.items()}
    row = {"condition": condition}
    with torch.no_grad():
        row["eager_before_ms"] = measure(model, inp, rounds, calls)
        if condition not in ("none", "graph-only", "cached-tensors"):
            gpu_real.fresh_inductor_cache()
        compiled = None
        if condition == "ours-cudagraphs":
            compiled = gpu_real.dynamo.optimize("cudagraphs")(model)
        elif condition == "graph-only":
            compiled = graph_only(model, inp)
        elif condition == "cached-tensors":
            torch._C._set_cached_tensors_enabled(True)
            compiled = model
        elif condition != "none":
            who, mode = condition.split("-", 1)
            compiled = (gpu_real.compile_ours if who == "ours" else gpu_real.compile_theirs)(model, mode)
        if compiled is not None:
            row["compiled_ms"] = measure(compiled, inp, rounds, calls)
        row["eager_after_ms"] = measure(model, inp, rounds, calls)
    row["threads"] = sorted(t.name for t in threading.enumerate())
    row["gc_objects"] = len(gc.get_objects())
    print("ROW " + json.dumps(row), flush=True)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--model", default="bert1")
    p.add_argument("--rounds", type=int, default=7)
    p.add_argument("--calls", type=int, default=50)
    p.add_argument("--conditions", default=",".join(CONDITIONS))
    p.add_argument("--one", default="")
    args = p.parse_args()
    if args.one:
        return one(args.one, args.model, args.rounds, args.calls)
    from gpu_real import MODELS
    if args.model not in MODELS:
        sys.exit(f"gpu_process_cost: unknown model {args.model!r}; choose from {', '.join(MODELS)}")
    conditions = args.conditions.split(",")
    bad = [c for c in conditions if c not in CONDITIONS]
    if bad:
        sys.exit(f"gpu_process_cost: unknown condition {bad[0]!r}; choose from {', '.join(CONDITIONS)}")
    for c in conditions:
        out = subprocess.run([sys.executable, __file__, "--one", c, "--model", args.model,
                              "--rounds", str(args.rounds), "--calls", str(args.calls)],
                             capture_output=True, text=True)
        rows = [json.loads(l[4:]) for l in out.stdout.splitlines() if l.startswith("ROW ")]
        if not rows:
            print(f"{c}: failed (exit {out.returncode}): {out.stderr[-800:]}")
            continue
        r = rows[0]
        print(f"{c:22s} eager before {r['eager_before_ms']:.2f} ms, after {r['eager_after_ms']:.2f} ms; "
              f"compiled {r.get('compiled_ms', float('nan')):.2f} ms; gc objects {r['gc_objects']}; "
              f"threads {r['threads']}", flush=True)


if __name__ == "__main__":
    main()
