"""aot_eager: the gradient of an input added in place into a clone is zeros (eager: None) when the result leaves through numpy.

First mismatch: grad at call 0: grads[0]: type NoneType vs Tensor (None vs tensor([[0., 0., 0.],         [0., 0., 0.],         [0., ...)
Cause: the graph returns clone (x's clone, y added in place) and t1 (from y);
the clone only leaves through numpy, so eager's autograd never reaches x.
The gating of unreached inputs gave up on any graph whose in-place op
brings in a new input (the add_), so aot's node gave x a zero gradient.
The in-place op's inputs now reach every value on the written storage,
and the graph is gated. Found by fuzz seed 6233164 (H100 run of 2026-11-24, 3.12.3 + torch 2.11; reproduces on 3.11 + torch 2.13)."""
REASON = 'aot_eager: the gradient of an input added in place into a clone is zeros (eager: None) when the result leaves through numpy'
BACKEND = 'aot_eager'
BODY = """
t0 = t0.clone()
t0.add_(t1)
for v1 in (i0, f0):
    t1 = t1 * 0.9 + v1
with torch.enable_grad():
    t0 = torch.from_numpy(np.tanh(t0.detach().numpy()))
"""
CALLS = [
    {'shape': (3, 3), 'requires_grad': True, 'n': 3, 'fl': 0.0},
]
