"""Steady-state time per call, dynamo(inductor) vs torch.compile(inductor),
interleaved: the figures behind the README's GPU paragraph.

bench/gpu.py times each compiler in its own block of calls, one after the
other; on a shared host the machine's speed drifts between blocks by more
than the difference measured. Here, per model (tests/hf_zoo.py, eval,
no_grad, on `cuda` when there is one, else the CPU): both are compiled
first, then ROUNDS rounds each time eager, ours and torch.compile's NCALLS
calls (synchronized), in gpu_real's ROUND_ORDERS (eager first, the
compilers swapping places every other round); the medians,
the minima and how many rounds ours was faster. Then, from cProfile over
100 calls of each, the Python functions whose calls per step or time per
step differ (what each compiler's per-call path runs beyond the kernels).
Only bench/ may import torch's own compiler, and only to compare with it.

Usage: python bench/gpu_steady.py [bert,llama]    (ROUNDS=15 NCALLS=200)
"""
import cProfile
import os
import pstats
import statistics
import sys
import time
import warnings

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, ".."))
sys.path.insert(0, os.path.join(HERE, "..", "tests"))

import torch  # noqa: E402
import dynamo  # noqa: E402
from torch import _dynamo as torch_dynamo  # noqa: E402  (bench/ only: the comparison)
import hf_zoo  # noqa: E402
from gpu_real import ROUND_ORDERS  # noqa: E402

warnings.filterwarnings("ignore")
DEV = "cuda" if torch.cuda.is_available() else "cpu"
sync = torch.cuda.synchronize if DEV == "cuda" else (lambda: None)
ROUNDS = int(os.environ.get("ROUNDS", 15))
NCALLS = int(os.environ.get("NCALLS", 200))


def run(fn, inp, n):
    """(wall ms, host CPU ms) per call over n calls."""
    sync()
    c0, w0 = time.process_time(), time.perf_counter()
    for _ in range(n):
        fn(**inp)
    sync()
    return (time.perf_counter() - w0) / n * 1e3, (time.process_time() - c0) / n * 1e3


def counts(fn, inp):
    """{function: (calls per step, ms per step)} and ms per step, cProfile over 100 calls."""
    pr = cProfile.Profile()
    pr.enable()
    for _ in range(100):
        fn(**inp)
    sync()
    pr.disable()
    st = pstats.Stats(pr)
    return ({f"{os.path.basename(k[0])}:{k[1]}({k[2]})": (v[1] / 100, v[2] / 100 * 1e3)
             for k, v in st.stats.items()}, st.total_tt / 100 * 1e3)


def main():
    names = (sys.argv[1] if len(sys.argv) > 1 else "bert,llama").split(",")
    print(f"device: {torch.cuda.get_device_name() if DEV == 'cuda' else 'cpu'}; torch {torch.__version__}; "
          f"Python {sys.version.split()[0]}; {ROUNDS} rounds of {NCALLS} calls", flush=True)
    for name in names:
        model, inp = hf_zoo.build(name)
        model = model.to(DEV).eval()
        inp = {k: v.to(DEV) if isinstance(v, torch.Tensor) else v for k, v in inp.items()}
        with torch.no_grad():
            dynamo.reset()
            ours = dynamo.optimize("inductor")(model)
            ours(**inp)
            torch_dynamo.reset()
            tc = torch.compile(model, backend="inductor")
            tc(**inp)
            fns = {"eager": model, "ours": ours, "tc": tc}
            for f in fns.values():
                run(f, inp, 50)
            res = {k: [] for k in fns}
            for r in range(ROUNDS):
                for k in ROUND_ORDERS[r % 2]:
                    res[k].append(run(fns[k], inp, NCALLS))
            for k, v in res.items():
                print(f"{name} {k}: wall median {statistics.median(x[0] for x in v):.3f} ms "
                      f"(min {min(x[0] for x in v):.3f}) host cpu median "
                      f"{statistics.median(x[1] for x in v):.3f} ms", flush=True)
            wins = sum(1 for a, b in zip(res["ours"], res["tc"]) if a[0] < b[0])
            print(f"{name}: ours faster than tc in {wins}/{ROUNDS} rounds", flush=True)
            co, to = counts(ours, inp)
            ct, tt = counts(tc, inp)
            print(f"{name} profiled ms/call ours {to:.3f} tc {tt:.3f}")
            for k in sorted(set(co) | set(ct), key=lambda k: -abs(co.get(k, (0, 0))[1] - ct.get(k, (0, 0))[1])):
                a, b = co.get(k, (0, 0)), ct.get(k, (0, 0))
                if a[0] != b[0] or abs(a[1] - b[1]) > 0.005:
                    print(f"  {k[:110]:110s} ours {a[0]:5.1f} calls {a[1]:.4f} ms | tc {b[0]:5.1f} calls {b[1]:.4f} ms")


if __name__ == "__main__":
    main()
