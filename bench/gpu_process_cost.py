"""What a compiled model costs the rest of the process: eager's speed on a
GPU model before and after a compiler compiled (and ran) the same model,
one fresh process per compiler and mode, so that no two compilers share a
process.

Why: in bench/gpu_real.py's `--ours autotune` runs (our reduce-overhead
chosen, torch.compile in default mode), eager BERT 1 x 32 measured 9-12 ms
against 4.1 ms in default-mode runs on the same card. This tells whether a
compile in reduce-overhead mode makes eager code of the process slower,
for either compiler.

Usage: python bench/gpu_process_cost.py [--model bert1] [--rounds 7] [--calls 50]
           [--conditions none,ours-default,ours-reduce-overhead,tc-default,tc-reduce-overhead]
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

CONDITIONS = ("none", "ours-default", "ours-reduce-overhead", "tc-default", "tc-reduce-overhead")


def measure(fn, inp, rounds, calls):
    import gpu_real
    gpu_real.run(fn, inp, 10)
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
        if condition != "none":
            who, mode = condition.split("-", 1)
            gpu_real.fresh_inductor_cache()
            compiled = (gpu_real.compile_ours if who == "ours" else gpu_real.compile_theirs)(model, mode)
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
