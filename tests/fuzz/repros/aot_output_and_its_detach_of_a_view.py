"""aot_eager: an output and its detach, the output a view of an intermediate, raised in aot's output regeneration.

First mismatch: exception at call 0: eager returned | compiled AssertionError: incorrect out shape after application of ViewMeta sequence: (2, 4) (actual) vs (4, 2) (expected)
Cause: the graph (broken at .numpy()) returns t0 = mod(x).t().contiguous().t()
and t0.detach(); aot regenerates the detached output from t0's base with
the detach alone, without t0's transposes (torch.compile's aot_eager fails
the same way). The runtime now returns t0 from aot and detaches it after
the call. Found by fuzz seed 7608792 (3.11 + torch 2.13, 2026-11-24)."""
REASON = 'aot_eager: an output and its detach, the output a view of an intermediate, raised in aot output regeneration'
BACKEND = 'aot_eager'
SEED = 7608792
BODY = """
t0 = mod(t0)
t0 = t0.t().contiguous().t()
y.mul_(2)
arr_ = t0.detach().numpy()
t1 = t1 + float(arr_.sum())
"""
CALLS = [
    {'shape': (4, 2), 'fl': 0.5},
]
