"""aot_eager: a backward eager runs raised (a node reached with no gradient read a written input).

First mismatch: globals at call 1: mod.w.grad 5.29 vs eager's 4.54 (the
compiled run's backward had raised at that call).
Cause: the first graph computes t0 = mod(x), saving x (no grad) for w's
gradient; the next graph writes x[0] in place and returns t0 + 1 and
y * w.sum(); the loss reaches the second only. Its node's gate gives t0
no gradient, and autograd still calls the first node with none; eager
never runs t0's backward. aot's read the written x and raised. A
backward that reaches no output now reads its saved tensors as they are
(its results are dropped, _SavedTensors). Found by fuzz seed 10315084
(device run, 3.12 + torch 2.11, 2026-11-24)."""
REASON = "aot: a node the loss reaches with no gradient still ran its backward, reading an input written after the call, and raised"
BACKEND = 'aot_eager'
SEED = 10315084
BODY = """
t0 = mod(t0)
if t1.sum() > 0:
    pass
else:
    t0 = t0 + d0['k']
x[0].add_(1)
t1 = t1 * sum(p.sum() for p in mod.parameters())
try:
    if b0:
        return {'a': t1, 'b': t1.view(-1)}
except Exception:
    pass
"""
CALLS = [
    {'shape': (4, 2), 'n': 3, 'fl': 0.0},
    {'n': 3, 'fl': -0.0},
]
