"""Dynamic shapes table of `make bench` (issue 24): a model called over a
sweep of input shapes, dynamo vs torch.compile with the same backend.

Cases: a 2-layer MLP over 20 batch sizes; a tiny BERT (2 layers, hidden 64)
over 20 (batch, sequence) shapes; a small conv net over 20 image sizes.
Each (case, compiler, backend) runs in its own fresh process (nothing
compiled before it; for inductor a new empty Inductor/FX cache directory),
so no compiler ever sees another's entries. In that process the sweep runs
once (round 1: every shape new) and then `--rounds` more times (steady
state: every shape seen). Figures:

  * graphs: graphs handed to the backend over the whole run (dynamo: its
    compile records' graphs; torch.compile: counters["stats"]["unique_graphs"]),
    and cache-limit warnings;
  * compile s: round 1's CPU time minus the steady time of the same calls
    (tracing, compiling, guard building, recompiles), children's CPU time
    (the C++ compiler) included;
  * steady ms/call: median over the steady rounds of the mean CPU time per
    call (one intra-op thread; CPU time, not wall: on a shared machine wall
    time measures the neighbours), eager's measured in the same process;
  * equal: every output of every call equal to eager's (rtol 1e-4 for
    eager/aot_eager, 1e-3 for inductor).

    python bench/dynamic.py [--cases mlp,bert,gpt2,conv] [--backends eager,inductor]
                            [--rounds R] [--out FILE.json]

Only bench/ may import torch's own compiler, and only to compare against it.
"""
import argparse
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
import warnings

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)


# ---------------------------------------------------------------- the cases
def _mlp():
    import torch
    torch.manual_seed(0)
    m = torch.nn.Sequential(torch.nn.Linear(32, 64), torch.nn.ReLU(), torch.nn.Linear(64, 8)).eval()
    inputs = [((torch.randn(b, 32),), {}) for b in range(2, 22)]
    return m, inputs


def _bert():
    import torch
    import transformers
    torch.manual_seed(0)
    cfg = transformers.BertConfig(vocab_size=100, hidden_size=64, num_hidden_layers=2,
                                  num_attention_heads=2, intermediate_size=128,
                                  max_position_embeddings=64)
    m = transformers.BertModel(cfg).eval()
    shapes = [(b, s) for b in (1, 2, 3, 4) for s in (5, 8, 11, 16, 23)]
    random.Random(0).shuffle(shapes)
    inputs = [((), {"input_ids": torch.randint(0, 100, (b, s)),
                    "attention_mask": torch.ones(b, s, dtype=torch.long)}) for b, s in shapes]
    return m, inputs


def _gpt2():
    # transformers' Conv1D builds its output size as x.size()[:-1] + (nf,):
    # the idiom that once recompiled per batch size
    import torch
    import transformers
    torch.manual_seed(0)
    cfg = transformers.GPT2Config(vocab_size=100, n_embd=64, n_layer=2, n_head=2, n_positions=64)
    m = transformers.GPT2Model(cfg).eval()
    shapes = [(b, s) for b in (1, 2, 3, 4) for s in (5, 8, 11, 16, 23)]
    random.Random(1).shuffle(shapes)
    inputs = [((), {"input_ids": torch.randint(0, 100, (b, s))}) for b, s in shapes]
    return m, inputs


class ConvNet:
    @staticmethod
    def make():
        import torch

        class Net(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.c1 = torch.nn.Conv2d(3, 8, 3, padding=1)
                self.c2 = torch.nn.Conv2d(8, 16, 3, stride=2, padding=1)
                self.head = torch.nn.Linear(16, 10)

            def forward(self, x):
                x = torch.relu(self.c1(x))
                x = torch.relu(self.c2(x))
                return self.head(x.mean(dim=(2, 3)))
        return Net()


def _conv():
    import torch
    torch.manual_seed(0)
    m = ConvNet.make().eval()
    inputs = [((torch.randn(2, 3, s, s),), {}) for s in range(12, 32)]
    return m, inputs


CASES = {"mlp": ("MLP, 20 batch sizes", _mlp),
         "bert": ("tiny BERT, 20 (batch, seq)", _bert),
         "gpt2": ("tiny GPT-2, 20 (batch, seq)", _gpt2),
         "conv": ("conv net, 20 image sizes", _conv)}


# ---------------------------------------------------------------- one process
def _first_tensor(out):
    import torch
    if isinstance(out, torch.Tensor):
        return out
    if hasattr(out, "last_hidden_state"):
        return out.last_hidden_state
    return out[0]


def _cpu():
    """CPU seconds of this process and of its waited-for children (Inductor's
    C++ compiler): on a shared machine wall time measures the neighbours."""
    t = os.times()
    return time.process_time() + t.children_user + t.children_system


def _sweep(fn, inputs):
    outs = []
    t0 = _cpu()
    for args, kwargs in inputs:
        outs.append(_first_tensor(fn(*args, **kwargs)))
    return _cpu() - t0, outs


def run_one(case, compiler, backend, rounds):
    """The figures of one (case, compiler, backend) in this process (which
    must be fresh)."""
    import torch
    torch.set_num_threads(1)
    warnings.simplefilter("always")
    model, inputs = CASES[case][1]()
    rtol = 1e-3 if backend == "inductor" else 1e-4
    with torch.no_grad():
        _, ref = _sweep(model, inputs)
        eager = [_sweep(model, inputs)[0] for _ in range(rounds)]
        if compiler == "dynamo":
            sys.path.insert(0, ROOT)
            import dynamo
            from dynamo import records
            compiled = dynamo.optimize(backend)(model)

            def graphs():
                recs = records.all_records()
                return sum(len(r.graphs) for r in recs), sum(len(r.break_reasons) for r in recs)
        else:
            import torch._dynamo as ref_dynamo      # comparison only
            from torch._dynamo.utils import counters
            ref_dynamo.reset()
            compiled = torch.compile(model, backend=backend)

            def graphs():
                return counters["stats"]["unique_graphs"], sum(counters["graph_break"].values())
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            first, outs = _sweep(compiled, inputs)
            steady, equal = [], True
            for _ in range(rounds):
                t, again = _sweep(compiled, inputs)
                steady.append(t)
                outs += again
    equal = all(o.shape == r.shape and torch.allclose(o, r, rtol=rtol, atol=rtol)
                for o, r in zip(outs, ref * (rounds + 1)))
    limit = [w for w in caught if "cache_size_limit" in str(w.message) or "recompile_limit" in str(w.message)]
    n = len(inputs)
    steady_s = statistics.median(steady)
    g, breaks = graphs()
    return {"case": case, "compiler": compiler, "backend": backend, "graphs": g, "breaks": breaks,
            "limit_warnings": len(limit), "compile_s": first - steady_s,
            "steady_ms": 1e3 * steady_s / n, "eager_ms": 1e3 * statistics.median(eager) / n,
            "equal": equal, "calls": n * (rounds + 1)}


def _spawn(case, compiler, backend, rounds, timeout):
    with tempfile.TemporaryDirectory(prefix="dynbench-") as cache:
        env = dict(os.environ, OMP_NUM_THREADS="1", TORCHINDUCTOR_CACHE_DIR=cache,
                   TRITON_CACHE_DIR=os.path.join(cache, "triton"),
                   PYTHONPATH=os.pathsep.join([ROOT, os.environ.get("PYTHONPATH", "")]),
                   TRANSFORMERS_VERBOSITY="error", HF_HUB_OFFLINE="1")
        cmd = [sys.executable, os.path.abspath(__file__), "--one", case, compiler, backend,
               "--rounds", str(rounds)]
        try:
            p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=env)
        except subprocess.TimeoutExpired:
            return {"case": case, "compiler": compiler, "backend": backend, "error": f"timeout {timeout} s"}
    for line in reversed(p.stdout.splitlines()):
        if line.startswith("{"):
            return json.loads(line)
    return {"case": case, "compiler": compiler, "backend": backend,
            "error": (p.stderr or "no output").strip().splitlines()[-1][:200]}


def table(cases, backends, rounds=5, timeout=600):
    """Rows of the table, one per (case, backend, compiler), each from its
    own process."""
    rows = []
    for case in cases:
        for backend in backends:
            for compiler in ("dynamo", "torch.compile"):
                rows.append(_spawn(case, compiler, backend, rounds, timeout))
    return rows


def print_table(rows):
    from tabulate import tabulate
    body = []
    for r in rows:
        if "error" in r:
            body.append([CASES[r["case"]][0], r["backend"], r["compiler"], "error: " + r["error"]])
            continue
        body.append([CASES[r["case"]][0], r["backend"], r["compiler"], r["graphs"], r["breaks"],
                     r["limit_warnings"], f"{r['compile_s']:.2f}", f"{r['steady_ms']:.3f}",
                     f"{r['eager_ms']:.3f}", "yes" if r["equal"] else "NO"])
    print(tabulate(body, headers=["case", "backend", "compiler", "graphs", "breaks", "limit warnings",
                                  "compile s", "steady ms/call", "eager ms/call", "equal"]))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--cases", default="mlp,bert,gpt2,conv")
    ap.add_argument("--backends", default="eager,inductor")
    ap.add_argument("--rounds", type=int, default=5, help="steady rounds after the first")
    ap.add_argument("--timeout", type=int, default=600, help="seconds per process")
    ap.add_argument("--out", default=os.path.join(HERE, "dynamic.json"))
    ap.add_argument("--one", nargs=3, metavar=("CASE", "COMPILER", "BACKEND"), help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.one:
        print(json.dumps(run_one(*args.one, rounds=args.rounds)))
        return
    rows = table(args.cases.split(","), args.backends.split(","), args.rounds, args.timeout)
    print("Dynamic shapes: a sweep of input shapes, each compiler in a fresh process "
          f"(round 1 compiles, then {args.rounds} steady rounds)")
    print_table(rows)
    with open(args.out, "w") as f:
        json.dump(rows, f, indent=2)
    print(f"\nwrote {args.out}")


if __name__ == "__main__":
    main()
