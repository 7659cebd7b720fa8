"""fuzz seed 83144144: result at call 1
result[0]: requires_grad False vs True
"""
REASON = "aot_eager with an int input: an output computed from x before the graph copied a grad-requiring value into x came back requiring grad (aot marks outputs differentiable from its own trace)"
BACKEND = 'aot_eager'
SEED = 83144144
BODY = """
o_ = A(i0)
setattr(o_, 'z', t1)
t0 = t0 + getattr(o_, 'z', 0)
t1 = t0 * sum(p.sum() for p in mod.parameters())
x.copy_(t1.to(x.dtype))
"""
CALLS = [
    {'shape': (3, 3), 'n': 4, 'fl': 2.0},
    {'shape': (3, 3), 'n': -1},
]
