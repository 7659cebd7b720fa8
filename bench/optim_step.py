"""A whole training step (forward, backward, optimizer step, zero_grad) of a
small MLP, compiled by dynamo and by torch.compile: frames compiled, graphs,
graph breaks and recompiles, and whether the parameters after N steps match
eager's.  Only bench/ may import torch's own compiler (to compare).

    python bench/optim_step.py [--compilers dynamo,torch] [--backends eager,aot_eager,inductor]
                               [--optims SGD,Adam,AdamW] [--steps 5] [--scheduler]

With --scheduler a StepLR halves `lr` every step (float lr), which shows
whether an lr change recompiles.  Each compiler runs in a process of its
own (torch.compile would trace dynamo's module-init tagging otherwise).
torch's "compiles" is its frames-compiled counter (frames with no graph
included); "graphs" counts forward graphs given to the backend.
"""
import argparse
import copy
import os
import sys

import torch

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
import dynamo  # noqa: E402
from dynamo import records  # noqa: E402


def make(kind, foreach, seed=0):
    torch.manual_seed(seed)
    m = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Linear(16, 1))
    name, _, extra = kind.partition("+")       # "SGD+momentum": SGD with momentum 0.9
    kw = {"momentum": 0.9} if extra == "momentum" else {}
    opt = getattr(torch.optim, name)(m.parameters(), lr=0.01, foreach=foreach, **kw)
    return m, opt


def run_steps(m, opt, wrap, steps, scheduler):
    sched = torch.optim.lr_scheduler.StepLR(opt, 1, 0.5) if scheduler else None

    def step(x):
        loss = m(x).pow(2).mean()
        loss.backward()
        opt.step()
        opt.zero_grad()
        return loss
    f = wrap(step)
    torch.manual_seed(1)
    for _ in range(steps):
        f(torch.randn(4, 8))
        if sched is not None:
            sched.step()
    return [p.detach().clone() for p in m.parameters()]


def dynamo_counts(backend, kind, foreach, steps, scheduler):
    dynamo.reset()
    m, opt = make(kind, foreach)
    start = records.mark()
    params = run_steps(m, opt, dynamo.optimize(backend), steps, scheduler)
    recs = records.records_since(start)
    return params, {"frames": len({r.code for r in recs}), "compiles": len(recs),
                    "graphs": sum(len(r.graphs) for r in recs),
                    "breaks": sum(len(r.break_reasons) for r in recs),
                    "generated": sum(1 for r in recs if "inductor" in r.filename
                                     or r.filename.startswith("<"))}


def torch_counts(backend, kind, foreach, steps, scheduler):
    import torch._dynamo as td
    from torch._dynamo.utils import counters
    td.reset()
    counters.clear()
    graphs = []

    def counting(gm, example_inputs):
        graphs.append(gm)
        return gm.forward
    be = counting if backend == "eager" else backend
    if backend == "aot_eager":
        from torch._dynamo.backends.common import aot_autograd
        be = aot_autograd(fw_compiler=counting, bw_compiler=lambda gm, _: gm.forward)
    m, opt = make(kind, foreach)
    params = run_steps(m, opt, lambda fn: torch.compile(fn, backend=be), steps, scheduler)
    breaks = sum(counters["graph_break"].values())
    return params, {"frames": "-", "compiles": counters["frames"]["ok"],
                    "graphs": len(graphs) if backend != "inductor"
                    else counters["stats"]["unique_graphs"], "breaks": breaks,
                    "generated": "-"}


def main():
    if "--compilers" not in sys.argv or "," in sys.argv[sys.argv.index("--compilers") + 1]:
        # each compiler in a process of its own: torch.compile traces what
        # dynamo installed (its module-init tagging) when both share one
        import subprocess
        rest = [a for i, a in enumerate(sys.argv[1:]) if a != "--compilers" and
                (i == 0 or sys.argv[i] != "--compilers")]
        wanted = "dynamo,torch"
        if "--compilers" in sys.argv:
            wanted = sys.argv[sys.argv.index("--compilers") + 1]
        for comp in wanted.split(","):
            subprocess.run([sys.executable, __file__, "--compilers", comp, *rest], check=True)
        return
    ap = argparse.ArgumentParser()
    ap.add_argument("--compilers", default="dynamo,torch")
    ap.add_argument("--backends", default="eager,aot_eager,inductor")
    ap.add_argument("--optims", default="SGD,SGD+momentum,Adam,AdamW")
    ap.add_argument("--foreach", default="0,1")
    ap.add_argument("--steps", type=int, default=5)
    ap.add_argument("--scheduler", action="store_true")
    a = ap.parse_args()
    print(f"{'compiler':8} {'backend':10} {'optim':12} {'foreach':7} {'frames':>6} {'compiles':>8} "
          f"{'graphs':>6} {'breaks':>6} {'gen':>4}  params==eager")
    for kind in a.optims.split(","):
        for fe in a.foreach.split(","):
            foreach = fe == "1"
            m, opt = make(kind, foreach)
            ref = run_steps(m, opt, lambda f: f, a.steps, a.scheduler)
            for comp in a.compilers.split(","):
                for backend in a.backends.split(","):
                    fn = dynamo_counts if comp == "dynamo" else torch_counts
                    params, c = fn(backend, kind, foreach, a.steps, a.scheduler)
                    ok = all(torch.allclose(p, q, rtol=1e-5, atol=1e-6) for p, q in zip(params, ref))
                    print(f"{comp:8} {backend:10} {kind:12} {fe:7} {c['frames']:>6} {c['compiles']!s:>8} "
                          f"{c['graphs']:>6} {c['breaks']:>6} {c['generated']:>4}  {ok}", flush=True)


if __name__ == "__main__":
    main()
