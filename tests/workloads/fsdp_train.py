"""FSDP2 (torch.distributed.fsdp.fully_shard) under dynamo, 2 processes,
gloo on CPU: the "fsdp_*" cases of tests/workloads/ddp_train.py, which
runs them in its process group (by hand: `python
tests/workloads/ddp_train.py fsdp_regional:aot_eager`).

The model is sharded per block, then at the root, as FSDP2's users do.
Each rank trains an eager FSDP2 model and a dynamo-compiled copy side by
side on the same rank-specific inputs and checks after every step that
the (reduce-scattered) gradient shards and the parameter shards agree.

CASE: "regional" (each block wrapped by optimize() after fully_shard: its
forward compiled, FSDP's hooks around it run eagerly), "whole" (the root
wrapped: the root's forward compiled, a break at each block call, whose
forward compiles on its own).
"""
import torch

STEPS = 3
WIDTH = 32


class Block(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.norm = torch.nn.LayerNorm(WIDTH)
        self.up = torch.nn.Linear(WIDTH, 2 * WIDTH)
        self.down = torch.nn.Linear(2 * WIDTH, WIDTH)

    def forward(self, x):
        return x + self.down(torch.nn.functional.gelu(self.up(self.norm(x))))


class Net(torch.nn.Module):
    def __init__(self, blocks=3):
        super().__init__()
        self.embed = torch.nn.Linear(8, WIDTH)
        self.blocks = torch.nn.ModuleList(Block() for _ in range(blocks))
        self.head = torch.nn.Linear(WIDTH, 1)

    def forward(self, x):
        x = self.embed(x)
        for block in self.blocks:
            x = block(x)
        return self.head(x)


def shard(model):
    """fully_shard per block, then the root (the embedding and the head)."""
    from torch.distributed.fsdp import fully_shard
    for block in model.blocks:
        fully_shard(block)
    fully_shard(model)
    return model


def local(t):
    return t.to_local() if hasattr(t, "to_local") else t


def check_same(ref, mine, what):
    for (name, p), q in zip(ref.named_parameters(), mine.parameters()):
        a, b = (p.grad, q.grad) if what == "grad" else (p, q)
        if (a is None) != (b is None):
            raise AssertionError(f"{what} of {name}: one is None")
        if a is not None:
            torch.testing.assert_close(local(b), local(a), rtol=1e-5, atol=1e-6,
                                       msg=f"{what} of {name}")


def run_case(case, backend, rank):
    """Train eager FSDP2 and dynamo FSDP2 side by side for STEPS steps
    (raises when they differ); the compile counts of this process."""
    import dynamo
    from dynamo import records
    from ddp_train import counts
    torch.manual_seed(0)
    ref_model = Net()
    model = Net()
    model.load_state_dict(ref_model.state_dict())
    ref, mine = shard(ref_model), shard(model)
    if case == "regional":
        for i, block in enumerate(mine.blocks):
            mine.blocks[i] = dynamo.optimize(backend)(block)
        run = mine
    else:
        run = dynamo.optimize(backend)(mine)
    ref_opt = torch.optim.SGD(ref.parameters(), lr=0.1)
    opt = torch.optim.SGD(mine.parameters(), lr=0.1)
    torch.manual_seed(1 + rank)
    # "whole": the root's loop over its blocks is cut at each block call
    # (by default a break inside a loop runs the root eagerly)
    with dynamo.config.overrides({"skip_frame_on_loop_break": case == "regional"}):
        for _ in range(STEPS):
            x = torch.randn(4, 8)
            ref(x).pow(2).mean().backward()
            run(x).pow(2).mean().backward()
            check_same(ref, mine, "grad")
            ref_opt.step()
            opt.step()
            ref_opt.zero_grad()
            opt.zero_grad()
            check_same(ref, mine, "param")
    return counts(records.all_records())
