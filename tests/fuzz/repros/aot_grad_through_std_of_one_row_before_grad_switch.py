"""aot_eager: gradient through std(dim=0) of a single row, in a graph that switches grad mode, is NaN where eager's is finite.

First mismatch: grad at call 0: grads[0]: values differ   eager   [4.0, 4.0, 4.0, 4.0]   compiled [nan, nan, nan, nan]
Cause: the graph before the break (random.randint) returns t1 = y + x[0].sum()
and t0 = x + x.std(dim=0) (NaN: one row); t0 then only feeds a no_grad block,
so eager's autograd never runs std's backward. aot's node takes a gradient for
every output, zeros for the unreached t0, and std's backward turned them into
NaN (0 * the NaN std) in x's gradient. torch's own compiler with the aot_eager backend gives
the same NaN. The gate now recomputes eager's gradients (the captured graph
run again op by op) when an output was not reached and aot's are not finite.
Found by fuzz seed 6021158 (H100 run of 2026-11-24, 3.12.3 + torch 2.11; reproduces on 3.11 + torch 2.13)."""
REASON = "aot_eager: gradient through std(dim=0) of a single row, in a graph that switches grad mode, is NaN where eager's is finite"
BACKEND = 'aot_eager'
BODY = """
for r0 in t0:
    t1 = t1 + r0.sum()
t0 = t0 + t0.std(dim=0)
i0 = i0 + random.randint(0, 3)
prev_ = torch.is_grad_enabled()
torch.set_grad_enabled(False)
t0 = t0 * 2
torch.set_grad_enabled(prev_)
"""
CALLS = [
    {'shape': (1, 4), 'requires_grad': True},
]
