"""aot_eager: an input's gradient is zeros (eager: None) when a loop of swaps and slice writes is followed by an inference_mode block.

First mismatch: grad at call 0: grads[1]: type NoneType vs Tensor (None vs tensor([[0., 0.],         [0., 0.],         [0., 0.],    ...)
Cause: the graph returns mul (from x) and clone (a clone of y whose column 0
is written from mul by setitem); the clone only reaches an inference_mode
block, so eager's autograd never reaches y. The gating of unreached inputs
gave up on any graph whose in-place op brings in a new input (here the
setitem), so aot's node gave y a zero gradient. The in-place op's inputs
now reach every value on the written storage (views and bases), and the
graph is gated. Found by fuzz seed 6231617 (H100 run of 2026-11-24, 3.12.3 + torch 2.11; reproduces on 3.11 + torch 2.13)."""
REASON = "aot_eager: an input's gradient is zeros (eager: None) when a loop of swaps and slice writes is followed by an inference_mode block"
BACKEND = 'aot_eager'
BODY = """
g_ = torch.Generator().manual_seed(3)
t0 = t0 * torch.rand(t0.shape, generator=g_)
w0 = 0
while w0 < i0 % 3 + 1:
    w0 += 1
    p, q = t1, t0
    t0, t1 = p, q
    t0 = t0.clone()
    t0[:, 0] = t1[:, -1]
with torch.inference_mode():
    t0 = t0 + 1
t0 = t0.clone()
"""
CALLS = [
    {'shape': (4, 2), 'requires_grad': True, 'n': 0},
]
