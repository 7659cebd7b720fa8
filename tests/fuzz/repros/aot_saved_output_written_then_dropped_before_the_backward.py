"""aot_eager: a backward that eager refuses (softmax's result, an output of
the first graph, was written in place by the next graph and then dropped)
ran.

First mismatch: grad at call 0: backward 'RuntimeError' vs (tensor([[4., 4., 4.], ...]), ...)
Cause: t0 + 0 and t1.softmax(-1) are outputs of the first graph (the
data-dependent `if` breaks it), and softmax saves its result for t1's
backward only, so aot's node reads a copy of it (_SavedTensors) and its
own version check cannot fire. The resume graph's `t1 += t0` moves the
result's version and `t1 = t1 * 3` drops the tensor. Eager's saved value
keeps the version counter, and its backward raises. The runtime's check
of saved outputs (_AotRuntime._watch_saved) held them by weak references,
so once the tensor was dropped nothing was checked. It now holds a
detached alias, which shares the version counter.
Found by fuzz seed 102002363 (development machine, 3.11 + torch 2.13)."""
REASON = "aot_eager: a backward that eager refuses (a saved output written in place, then dropped) ran"
BACKEND = 'aot_eager'
SEED = 102002363
BODY = """
t0 = t0 + 0
t1 = t1.softmax(dim=-1)
if t1.max() > 1:
    pass
else:
    t1 += t0
t1 = t1 * 3
"""
CALLS = [
    {'shape': (2, 3), 'requires_grad': True, 'n': 3, 'fl': 2.0},
]
