"""make bench-gpu: transformers models (tests/hf_zoo.py) on a CUDA device,
dynamo side by side with eager and torch.compile in one process.

Per model (batch 2, small configs from hf_zoo, weights and inputs on `cuda`):
  * inference (eval, no_grad): graphs / breaks of dynamo's capture; every
    tensor leaf equal to eager (rtol 1e-4, atol 1e-5) for the backends eager,
    aot_eager, inductor and cudagraphs;
  * one training step with aot_eager: loss and every gradient equal to eager;
  * steady state per call (median of `--repeat` runs of `--calls` calls,
    synchronized): eager, dynamo(inductor), torch.compile(inductor),
    dynamo(cudagraphs), torch.compile(cudagraphs); speedups over eager;
  * what one steady call runs, for dynamo and torch.compile (inductor and
    cudagraphs): host CPU ms per call (wall well above it: the host waits
    for the device), and from torch.profiler per call: kernel launches,
    memcpys, synchronizations, aten ops (second table; `profile` in the
    JSON).
Only bench/ may import torch's own compiler, and only to compare against it.
Prints a table and writes --out (JSON).

Usage: python bench/gpu.py [--models gpt2,bert,llama] [--calls 50] [--out gpu.json]
"""
import argparse
import copy
import json
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
from torch import _dynamo as torch_dynamo  # noqa: E402  (bench/ only: the comparison)
from dynamo import records  # noqa: E402
import hf_zoo  # noqa: E402

RTOL, ATOL = 1e-4, 1e-5


def to_cuda(inputs):
    return {k: v.cuda() if isinstance(v, torch.Tensor) else v for k, v in inputs.items()}


def equal(a, b):
    x, y = hf_zoo.tensor_leaves(a), hf_zoo.tensor_leaves(b)
    return bool(x) and len(x) == len(y) and all(
        p.shape == q.shape and torch.allclose(p, q, rtol=RTOL, atol=ATOL) for p, q in zip(x, y))


def steady_ms(fn, inputs, calls, repeat):
    for _ in range(5):
        fn(**inputs)
    torch.cuda.synchronize()
    runs = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        for _ in range(calls):
            fn(**inputs)
        torch.cuda.synchronize()
        runs.append((time.perf_counter() - t0) / calls * 1e3)
    return statistics.median(runs)


_LAUNCH = ("cudaLaunchKernel", "cuLaunchKernel", "cuLaunchKernelEx", "cudaLaunchKernelExC",
           "cudaGraphLaunch")
_SYNC = ("cudaStreamSynchronize", "cudaDeviceSynchronize", "cudaEventSynchronize")


def per_call_profile(fn, inputs, calls=10):
    """What one steady call runs: host CPU ms per call (time.process_time,
    unprofiled) and, from torch.profiler, launches / memcpys / syncs /
    aten ops per call."""
    from torch.profiler import ProfilerActivity, profile
    for _ in range(3):
        fn(**inputs)
    sync = torch.cuda.synchronize if torch.cuda.is_available() else (lambda: None)
    sync()
    c0 = time.process_time()
    for _ in range(calls):
        fn(**inputs)
    sync()
    row = {"cpu_ms": (time.process_time() - c0) / calls * 1e3}
    acts = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if torch.cuda.is_available() else [])
    with profile(activities=acts) as prof:
        for _ in range(calls):
            fn(**inputs)
        sync()
    counts = {"launches": 0, "memcpys": 0, "syncs": 0, "aten_ops": 0}
    for e in prof.events():
        name = e.name
        if name.startswith(_LAUNCH):
            counts["launches"] += 1
        elif name.startswith(("cudaMemcpy", "cuMemcpy")):
            counts["memcpys"] += 1
        elif name.startswith(_SYNC):
            counts["syncs"] += 1
        elif name.startswith("aten::"):
            counts["aten_ops"] += 1
    row.update({k: v / calls for k, v in counts.items()})
    return row


def loss_of(out):
    return sum(t.float().pow(2).mean() for t in hf_zoo.tensor_leaves(out))


def training_step_equal(name):
    """One aot_eager training step: (loss equal, all gradients equal, graphs)."""
    model, inputs = hf_zoo.build(name)
    model, inputs = model.cuda(), to_cuda(inputs)
    ref = copy.deepcopy(model)
    loss_ref = loss_of(ref(**inputs))
    loss_ref.backward()
    dynamo.reset()
    start = records.mark()
    loss = loss_of(dynamo.optimize("aot_eager")(model)(**inputs))
    loss.backward()
    graphs = sum(len(r.graphs) for r in records.records_since(start))
    grads = all((p.grad is None) == (q.grad is None) and
                (p.grad is None or torch.allclose(p.grad, q.grad, rtol=RTOL, atol=ATOL))
                for p, q in zip(model.parameters(), ref.parameters()))
    return bool(torch.allclose(loss, loss_ref, rtol=RTOL, atol=ATOL)), grads, graphs


def bench_model(name, args):
    row = {"model": name}
    model, inputs = hf_zoo.build(name)
    model, inputs = model.cuda().eval(), to_cuda(inputs)
    with torch.no_grad():
        ref = model(**inputs)
        row["eager_ms"] = steady_ms(model, inputs, args.calls, args.repeat)
        for backend in ("eager", "aot_eager", "inductor", "cudagraphs"):
            dynamo.reset()
            start = records.mark()
            ours = dynamo.optimize(backend)(model)
            t0 = time.perf_counter()
            out = ours(**inputs)
            torch.cuda.synchronize()
            row[f"first_call_{backend}_s"] = time.perf_counter() - t0
            recs = records.records_since(start)
            if backend == "eager":
                row["graphs"] = sum(len(r.graphs) for r in recs)
                row["breaks"] = sum(len(r.break_reasons) for r in recs)
            row[f"equal_{backend}"] = equal(ref, out)
            if backend in ("inductor", "cudagraphs"):
                row[f"ours_{backend}_ms"] = steady_ms(ours, inputs, args.calls, args.repeat)
                row[f"equal_{backend}_steady"] = equal(ref, ours(**inputs))
                row.setdefault("profile", {})[f"ours_{backend}"] = per_call_profile(ours, inputs)
        dynamo.reset()
        for backend in ("inductor", "cudagraphs"):
            torch_dynamo.reset()
            theirs = torch.compile(model, backend=backend)
            row[f"tc_equal_{backend}"] = equal(ref, theirs(**inputs))
            row[f"tc_{backend}_ms"] = steady_ms(theirs, inputs, args.calls, args.repeat)
            row.setdefault("profile", {})[f"tc_{backend}"] = per_call_profile(theirs, inputs)
        torch_dynamo.reset()
    if name in args.train.split(","):
        row["train_loss_equal"], row["train_grads_equal"], row["train_graphs"] = training_step_equal(name)
    return row


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--models", default="gpt2,bert,llama,t5,vit,resnet")
    p.add_argument("--train", default="gpt2,bert,llama,resnet")
    p.add_argument("--calls", type=int, default=50)
    p.add_argument("--repeat", type=int, default=5)
    p.add_argument("--out", default=os.path.join(HERE, "gpu.json"))
    args = p.parse_args()
    if not torch.cuda.is_available():
        sys.exit("bench/gpu.py needs a CUDA device")
    warnings.filterwarnings("ignore")
    torch_dynamo.config.cache_size_limit = 64
    dev = torch.cuda.get_device_name()
    print(f"device: {dev}; torch {torch.__version__}; Python {sys.version.split()[0]}", flush=True)
    rows = []
    for name in args.models.split(","):
        try:
            rows.append(bench_model(name, args))
        except Exception as e:  # noqa: BLE001 - report and go on with the next model
            import traceback
            traceback.print_exc()
            rows.append({"model": name, "error": f"{type(e).__name__}: {e}"[:300]})
        print(json.dumps(rows[-1]), flush=True)
    head = ("model", "graphs", "breaks", "equal e/aot/ind/cg", "train loss/grads", "eager ms",
            "ours ind x", "tc ind x", "ours cg x", "tc cg x")
    print("\n| " + " | ".join(head) + " |\n|" + "---|" * len(head))
    for r in rows:
        if "error" in r:
            print(f"| {r['model']} | error: {r['error'][:80]} |")
            continue
        eq = "/".join("y" if r[f"equal_{b}"] else "N" for b in ("eager", "aot_eager", "inductor", "cudagraphs"))
        tr = (f"{'y' if r['train_loss_equal'] else 'N'}/{'y' if r['train_grads_equal'] else 'N'}"
              if "train_loss_equal" in r else "-")
        sp = [r["eager_ms"] / r[k] for k in ("ours_inductor_ms", "tc_inductor_ms", "ours_cudagraphs_ms",
                                             "tc_cudagraphs_ms")]
        print(f"| {r['model']} | {r['graphs']} | {r['breaks']} | {eq} | {tr} | {r['eager_ms']:.2f} | "
              + " | ".join(f"{s:.2f}" for s in sp) + " |")
    head = ("model", "run", "wall ms", "host CPU ms", "launches", "memcpys", "syncs", "aten ops")
    print("\nper steady call:\n| " + " | ".join(head) + " |\n|" + "---|" * len(head))
    for r in rows:
        for who, p in r.get("profile", {}).items():
            print(f"| {r['model']} | {who} | {r.get(who + '_ms', float('nan')):.3f} | {p['cpu_ms']:.3f} | "
                  f"{p['launches']:.0f} | {p['memcpys']:.0f} | {p['syncs']:.0f} | {p['aten_ops']:.0f} |")
    with open(args.out, "w") as f:
        json.dump({"device": dev, "torch": torch.__version__, "python": sys.version.split()[0],
                   "rows": rows}, f, indent=1)


if __name__ == "__main__":
    main()
