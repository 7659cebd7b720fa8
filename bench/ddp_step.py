"""A distributed training step (forward, backward, SGD step) under
DistributedDataParallel or FSDP2: samples/s (MLP) or tokens/s (GPT-2) of
eager, dynamo and torch.compile, and the loss curve of each against
eager's.  Only bench/ may import torch's own compiler (to compare).

    python bench/ddp_step.py [--world 2] [--device cpu|cuda] [--steps 20]
                             [--runs eager,dynamo:aot_eager,dynamo:inductor,torch:inductor]
                             [--model mlp|gpt2] [--fsdp]
                             [--width W] [--layers L] [--batch B] [--bucket-mb 25]
                             [--seq 512] [--heads 12] [--vocab 50257]

--model mlp (default): an L x W MLP (default 8 x 512), batch 64/rank, the
loss the output's mean square.  --model gpt2: transformers' GPT2LMHeadModel
built in-process from a GPT2Config (GPT-2 small by default: 12 layers, 768
wide, 12 heads, vocab 50257; seq 512, batch 8/rank; dropout off so every
run computes the same thing), the causal LM loss of random tokens.

DDP (default): the model is wrapped by DistributedDataParallel and the DDP
model compiled whole (dynamo cuts the graph at DDP's buckets, torch.compile
its DDPOptimizer likewise).  --fsdp: FSDP2, fully_shard per block (the
MLP's layers, GPT-2's transformer blocks) then the root, and each block
compiled on its own (regional compile: FSDP's all-gather / reduce-scatter
hooks run eagerly around the compiled block forward).

On a 2-GPU host (DDP, then --fsdp apart: each meant to end within 8 minutes,
inductor compiles of both compilers included):

    python bench/ddp_step.py --world 2 --device cuda --model gpt2 \
        --runs eager,dynamo:inductor,torch:inductor [--fsdp]

and on this machine, small:

    python bench/ddp_step.py --world 2 --device cpu --model gpt2 --layers 2 --width 64 --heads 4 \
        --seq 32 --vocab 256 --batch 2 [--fsdp]

CPU runs use gloo, CUDA runs NCCL (one GPU per rank).  Every rank trains
the same model from the same seed on rank-specific data; rank 0 prints one
line per run: samples/s or tokens/s over all ranks (after 3 warm-up steps,
compile included in those), the largest relative loss difference from the
first run's (eager's) over the steps, and for dynamo the compiles, graphs,
breaks and the DDP bucket pieces of each graph.
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
DEFAULTS = {"mlp": dict(width=512, layers=8, batch=64),
            "gpt2": dict(width=768, layers=12, batch=8, seq=512, heads=12, vocab=50257)}


class MLP(torch.nn.Module):
    def __init__(self, width, layers):
        super().__init__()
        self.layers = torch.nn.ModuleList(torch.nn.Linear(width, width) for _ in range(layers))
        self.head = torch.nn.Linear(width, 1)

    def forward(self, x):
        for layer in self.layers:
            x = torch.nn.functional.gelu(layer(x))
        return self.head(x).pow(2).mean()

    def blocks(self):
        return self.layers


class GPT2(torch.nn.Module):
    """GPT2LMHeadModel returning its causal LM loss (labels = the inputs,
    shifted inside)."""

    def __init__(self, a):
        super().__init__()
        from transformers import GPT2Config, GPT2LMHeadModel
        cfg = GPT2Config(vocab_size=a.vocab, n_positions=max(a.seq, 1024), n_embd=a.width,
                         n_layer=a.layers, n_head=a.heads, resid_pdrop=0.0, embd_pdrop=0.0,
                         attn_pdrop=0.0, use_cache=False)
        self.lm = GPT2LMHeadModel(cfg)

    def forward(self, ids):
        return self.lm(input_ids=ids, labels=ids).loss

    def blocks(self):
        return self.lm.transformer.h


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def compiler(run):
    """The function that compiles a module for `run` ("eager",
    "dynamo:BACKEND", "torch:BACKEND")."""
    kind, _, backend = run.partition(":")
    if kind == "eager":
        return lambda m: m
    if kind == "dynamo":
        import dynamo
        return dynamo.optimize(backend)
    return lambda m: torch.compile(m, backend=backend)


def build(a, run, rank, device):
    """The model to step (DDP or FSDP2, compiled for `run`) and its
    parameters."""
    torch.manual_seed(0)
    model = (GPT2(a) if a.model == "gpt2" else MLP(a.width, a.layers)).to(device)
    wrap = compiler(run)
    if a.fsdp:
        from torch.distributed.fsdp import fully_shard
        blocks = model.blocks()
        if run.startswith("dynamo"):
            # one compile per block: their forward shares one code object,
            # whose entries are guarded on the block (torch.compile's
            # inline_inbuilt_nn_modules makes parameters graph inputs instead)
            import dynamo
            dynamo.config.cache_size_limit = max(dynamo.config.cache_size_limit, len(blocks))
        for i, block in enumerate(blocks):
            fully_shard(block)
            blocks[i] = wrap(block)
        fully_shard(model)
        return model, model.parameters()
    from torch.nn.parallel import DistributedDataParallel as DDP
    ddp = DDP(model, device_ids=[rank] if device.type == "cuda" else None,
              bucket_cap_mb=a.bucket_mb)
    return wrap(ddp), ddp.parameters()


def batches(a, rank, device):
    gen = torch.Generator().manual_seed(1 + rank)
    if a.model == "gpt2":
        return [torch.randint(0, a.vocab, (a.batch, a.seq), generator=gen).to(device)
                for _ in range(a.steps)]
    return [torch.randn(a.batch, a.width, generator=gen).to(device) for _ in range(a.steps)]


def train(rank, a, run, device):
    step_fn, params = build(a, run, rank, device)
    opt = torch.optim.SGD(params, lr=0.01)
    losses = []
    for i, x in enumerate(batches(a, rank, device)):
        if i == WARMUP:
            if device.type == "cuda":
                torch.cuda.synchronize()
            dist.barrier()
            t0 = time.perf_counter()
        loss = step_fn(x)
        loss.backward()
        opt.step()
        opt.zero_grad()
        losses.append(loss.item())
    if device.type == "cuda":
        torch.cuda.synchronize()
    dist.barrier()
    elapsed = time.perf_counter() - t0
    per_step = a.batch * (a.seq if a.model == "gpt2" else 1)
    return losses, (a.steps - WARMUP) * per_step * a.world / elapsed


def dynamo_counts():
    import dynamo
    from dynamo import records
    recs = records.all_records()
    pieces = [len(g.gm.meta.get("ddp_buckets") or [None]) for r in recs for g in r.graphs]
    breaks = sum(len(r.break_reasons) for r in recs)
    dynamo.reset()
    return (f"compiles {len(recs)} graphs {sum(len(r.graphs) for r in recs)} breaks {breaks}"
            f" pieces {pieces}")


def worker(rank, a, port):
    os.environ["MASTER_ADDR"] = "127.0.0.1"
    os.environ["MASTER_PORT"] = str(port)
    if a.device == "cuda":
        torch.cuda.set_device(rank)
    dist.init_process_group("nccl" if a.device == "cuda" else "gloo", rank=rank,
                            world_size=a.world)
    device = torch.device(a.device, rank) if a.device == "cuda" else torch.device("cpu")
    unit = "tokens/s" if a.model == "gpt2" else "samples/s"
    ref = None
    for run in a.runs.split(","):
        t0 = time.perf_counter()
        losses, rate = train(rank, a, run, device)
        wall = time.perf_counter() - t0
        if ref is None:
            ref = losses
        diff = max(abs(x - y) / max(abs(y), 1e-12) for x, y in zip(losses, ref))
        extra = dynamo_counts() if run.startswith("dynamo") else ""
        if run.startswith("torch"):
            torch.compiler.reset()
        if rank == 0:
            print(f"{run:18} {rate:10.1f} {unit}  loss max rel diff {diff:.2e}  "
                  f"(loss {losses[0]:.4f} -> {losses[-1]:.4f}, run {wall:.0f}s)  {extra}",
                  flush=True)
    dist.destroy_process_group()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--world", type=int, default=2)
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--runs", default="eager,dynamo:aot_eager,dynamo:inductor,torch:inductor")
    ap.add_argument("--model", choices=sorted(DEFAULTS), default="mlp")
    ap.add_argument("--fsdp", action="store_true", help="FSDP2 per block, regional compile")
    for name in ("width", "layers", "batch", "seq", "heads", "vocab"):
        ap.add_argument(f"--{name}", type=int, default=None)
    ap.add_argument("--bucket-mb", type=float, default=25.0)
    a = ap.parse_args()
    for name, value in DEFAULTS[a.model].items():
        if getattr(a, name) is None:
            setattr(a, name, value)
    where = torch.cuda.get_device_name(0) if a.device == "cuda" else "CPU (gloo)"
    shape = (f"GPT-2 {a.layers} layers x {a.width} ({a.heads} heads, vocab {a.vocab}), "
             f"seq {a.seq}" if a.model == "gpt2" else f"MLP {a.layers}x{a.width}")
    how = "FSDP2 per block, regional compile" if a.fsdp else f"DDP, buckets {a.bucket_mb} MB"
    print(f"training step, {a.world} ranks on {where}: {shape}, batch {a.batch}/rank, "
          f"{a.steps} steps, {how}", flush=True)
    mp.spawn(worker, args=(a, free_port()), nprocs=a.world)


if __name__ == "__main__":
    main()
