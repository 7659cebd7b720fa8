"""aot_eager: the gradient of an input added in place into a clone is None (eager: zeros) when the result leaves through numpy.

First mismatch: grad at call 0: grads[0]: type NoneType vs Tensor (None vs tensor([[0., 0., 0.],         [0., 0., 0.],         [0., ...)
Open: not root-caused this session; torch's own compiler (backend aot_eager) not
checked on it. Found by fuzz seed 6233164 (H100 run of 2026-11-24, 3.12.3 + torch 2.11; reproduces on 3.11 + torch 2.13)."""
REASON = 'aot_eager: the gradient of an input added in place into a clone is None (eager: zeros) when the result leaves through numpy'
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
