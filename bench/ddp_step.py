"""A DistributedDataParallel training step (forward, backward, SGD step):
samples/s of eager DDP, dynamo and torch.compile, and the loss curve of each
against eager's.  Only bench/ may import torch's own compiler (to compare).

    python bench/ddp_step.py [--world 2] [--device cpu|cuda] [--steps 20]
                             [--runs eager,dynamo:aot_eager,dynamo:inductor,torch:inductor]
                             [--width 512] [--layers 8] [--batch 64] [--bucket-mb 25]

CPU runs use gloo, CUDA runs NCCL (one GPU per rank).  Every rank trains
the same model from the same seed on rank-specific data; rank 0 prints one
line per run: samples/s over all ranks (after 3 warm-up steps, compile
included in those), the largest relative loss difference from eager over
the steps, and, for dynamo, graphs and DDP bucket pieces.
"""
import argparse
import os
import socket
import sys
import time

import torch
import torch.distributed as dist
import torch.multiprocessing as mp

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

WARMUP = 3


class MLP(torch.nn.Module):
    def __init__(self, width, layers):
        super().__init__()
        self.layers = torch.nn.ModuleList(torch.nn.Linear(width, width) for _ in range(layers))
        self.head = torch.nn.Linear(width, 1)

    def forward(self, x):
        for layer in self.layers:
            x = torch.nn.functional.gelu(layer(x))
        return self.head(x)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wrap(run, model):
    kind, _, backend = run.partition(":")
    if kind == "eager":
        return model
    if kind == "dynamo":
        import dynamo
        return dynamo.optimize(backend)(model)
    return torch.compile(model, backend=backend)


def train(rank, a, run, device):
    from torch.nn.parallel import DistributedDataParallel as DDP
    torch.manual_seed(0)
    model = MLP(a.width, a.layers).to(device)
    ddp = DDP(model, device_ids=[rank] if device.type == "cuda" else None,
              bucket_cap_mb=a.bucket_mb)
    step_fn = wrap(run, ddp)
    opt = torch.optim.SGD(ddp.parameters(), lr=0.01)
    gen = torch.Generator().manual_seed(1 + rank)
    data = [torch.randn(a.batch, a.width, generator=gen).to(device) for _ in range(a.steps)]
    losses = []
    for i, x in enumerate(data):
        if i == WARMUP:
            if device.type == "cuda":
                torch.cuda.synchronize()
            dist.barrier()
            t0 = time.perf_counter()
        loss = step_fn(x).pow(2).mean()
        loss.backward()
        opt.step()
        opt.zero_grad()
        losses.append(loss.item())
    if device.type == "cuda":
        torch.cuda.synchronize()
    dist.barrier()
    elapsed = time.perf_counter() - t0
    return losses, (a.steps - WARMUP) * a.batch * a.world / elapsed


def dynamo_counts():
    import dynamo
    from dynamo import records
    recs = records.all_records()
    pieces = [len(g.gm.meta.get("ddp_buckets") or [None]) for r in recs for g in r.graphs]
    dynamo.reset()
    return f"graphs {sum(len(r.graphs) for r in recs)} pieces {pieces}"


def worker(rank, a, port):
    os.environ["MASTER_ADDR"] = "127.0.0.1"
    os.environ["MASTER_PORT"] = str(port)
    if a.device == "cuda":
        torch.cuda.set_device(rank)
    dist.init_process_group("nccl" if a.device == "cuda" else "gloo", rank=rank,
                            world_size=a.world)
    device = torch.device(a.device, rank) if a.device == "cuda" else torch.device("cpu")
    ref = None
    for run in a.runs.split(","):
        losses, rate = train(rank, a, run, device)
        if ref is None:
            ref = losses
        diff = max(abs(x - y) / max(abs(y), 1e-12) for x, y in zip(losses, ref))
        extra = dynamo_counts() if run.startswith("dynamo") else ""
        if rank == 0:
            print(f"{run:22} {rate:10.1f} samples/s  loss max rel diff {diff:.2e}  {extra}",
                  flush=True)
    dist.destroy_process_group()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--world", type=int, default=2)
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--runs", default="eager,dynamo:aot_eager,dynamo:inductor,torch:inductor")
    ap.add_argument("--width", type=int, default=512)
    ap.add_argument("--layers", type=int, default=8)
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--bucket-mb", type=float, default=25.0)
    a = ap.parse_args()
    where = torch.cuda.get_device_name(0) if a.device == "cuda" else "CPU (gloo)"
    print(f"DDP training step, {a.world} ranks on {where}: MLP {a.layers}x{a.width}, "
          f"batch {a.batch}/rank, {a.steps} steps, buckets {a.bucket_mb} MB")
    mp.spawn(worker, args=(a, free_port()), nprocs=a.world)


if __name__ == "__main__":
    main()
