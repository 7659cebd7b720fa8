"""DistributedDataParallel under dynamo, 2 processes, gloo on CPU (run by
tests/test_ddp.py; also by hand: `python tests/workloads/ddp_train.py
CASE:BACKEND[,CASE:BACKEND...] [OUT_DIR]`).  All the cases given run in one
process group, one after the other (spawning 2 processes that import torch
costs far more than a case).

Each rank trains an eager DDP model and a dynamo-compiled DDP copy side by
side on the same rank-specific inputs, checks after every step that the
(all-reduced) gradients and the parameters agree, and writes one JSON file
per rank: per case, the compile counts of its process or the error.

CASE: "mlp" (optimize(DDP(MLP))), "sequential" (optimize(DDP(nn.Sequential))),
"inside" (a training step that calls the DDP model, compiled whole),
"no_sync" (gradient accumulation under ddp.no_sync()), "unused"
(find_unused_parameters=True, one layer unused), "split" (10 KB buckets:
the graph is cut at the bucket boundaries, config.optimize_ddp);
"fsdp_regional", "fsdp_whole": FSDP2, tests/workloads/fsdp_train.py.
"""
import json
import os
import socket
import sys

import torch
import torch.distributed as dist
import torch.multiprocessing as mp

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
STEPS = 3


class MLP(torch.nn.Module):
    def __init__(self, layers=8, unused=False):
        super().__init__()
        self.layers = torch.nn.ModuleList(torch.nn.Linear(32, 32) for _ in range(layers))
        self.unused = torch.nn.Linear(32, 32) if unused else None

    def forward(self, x):
        for layer in self.layers:
            x = torch.relu(layer(x))
        return x


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def make_model(case):
    if case == "sequential":
        return torch.nn.Sequential(*[m for _ in range(4) for m in (torch.nn.Linear(32, 32),
                                                                   torch.nn.ReLU())])
    return MLP(unused=case == "unused")


def ddp(model, case):
    from torch.nn.parallel import DistributedDataParallel as DDP
    kw = {"find_unused_parameters": True} if case == "unused" else {}
    if case == "split":
        kw["bucket_cap_mb"] = 0.01        # 10 KB buckets: several for this model
    return DDP(model, **kw)


def check_same(ref, mine, what):
    for (name, p), q in zip(ref.named_parameters(), mine.parameters()):
        a, b = (p.grad, q.grad) if what == "grad" else (p, q)
        if (a is None) != (b is None):
            raise AssertionError(f"{what} of {name}: one is None")
        if a is not None:
            torch.testing.assert_close(b, a, rtol=1e-5, atol=1e-6, msg=f"{what} of {name}")


def run_case(case, backend, rank):
    """Train eager DDP and dynamo DDP side by side for STEPS steps (raises
    when they differ); the compile counts of this process."""
    import dynamo
    from dynamo import records
    torch.manual_seed(0)
    ref_model = make_model(case)
    model = make_model(case)
    model.load_state_dict(ref_model.state_dict())
    ref, mine = ddp(ref_model, case), ddp(model, case)
    ref_opt = torch.optim.SGD(ref.parameters(), lr=0.1)
    opt = torch.optim.SGD(mine.parameters(), lr=0.1)
    if case == "inside":
        def step(x):
            loss = mine(x).pow(2).mean()
            return loss
        compiled = dynamo.optimize(backend)(step)
        run = lambda x: compiled(x)                       # noqa: E731
    else:
        compiled = dynamo.optimize(backend)(mine)
        run = lambda x: compiled(x).pow(2).mean()         # noqa: E731
    torch.manual_seed(1 + rank)
    for _ in range(STEPS):
        x = torch.randn(4, 32)
        if case == "no_sync":      # one local micro-batch, then a synced one
            with ref.no_sync():
                ref(x).pow(2).mean().backward()
            with mine.no_sync():
                run(x).backward()
            check_same(ref, mine, "grad")
        ref(x).pow(2).mean().backward()
        run(x).backward()
        check_same(ref, mine, "grad")
        ref_opt.step()
        opt.step()
        ref_opt.zero_grad()
        opt.zero_grad()
        check_same(ref, mine, "param")
    return counts(records.all_records())


def counts(recs):
    """What a case compiled: records, graphs, break reasons, frame names,
    the DDP bucket cut of each graph."""
    return {"compiles": len(recs),
            "graphs": sum(len(r.graphs) for r in recs),
            "breaks": [br.reason for r in recs for br in r.break_reasons],
            "names": [r.name for r in recs],
            "buckets": [g.gm.meta.get("ddp_buckets") for r in recs for g in r.graphs]}


def worker(rank, world, port, specs, out_dir):
    """Run each "CASE:BACKEND" of `specs` in this one process group
    (dynamo.reset() between them); a case that fails records its error and
    the next one runs."""
    import traceback
    os.environ["MASTER_ADDR"] = "127.0.0.1"
    os.environ["MASTER_PORT"] = str(port)
    dist.init_process_group("gloo", rank=rank, world_size=world)
    sys.path.insert(0, ROOT)
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import dynamo
    import fsdp_train
    results = {}
    for spec in specs:
        case, _, backend = spec.partition(":")
        dynamo.reset()
        try:
            if case.startswith("fsdp_"):
                results[spec] = fsdp_train.run_case(case[len("fsdp_"):], backend, rank)
            else:
                results[spec] = run_case(case, backend, rank)
        except Exception:          # noqa: BLE001 - the test shows it; the next case runs
            # the checks compare all-reduced values: a failing one fails on
            # both ranks at the same step, and they go on to the next case together
            results[spec] = {"error": traceback.format_exc()}
    with open(os.path.join(out_dir, f"rank{rank}.json"), "w") as f:
        json.dump(results, f)
    dist.destroy_process_group()


def main():
    specs = sys.argv[1].split(",") if len(sys.argv) > 1 else ["mlp:aot_eager"]
    out_dir = sys.argv[2] if len(sys.argv) > 2 else "."
    mp.spawn(worker, args=(2, free_port(), specs, out_dir), nprocs=2)
    for rank in range(2):
        with open(os.path.join(out_dir, f"rank{rank}.json")) as f:
            print(f.read())


if __name__ == "__main__":
    main()
