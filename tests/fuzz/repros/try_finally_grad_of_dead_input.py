"""Under aot_eager, a function that breaks at a try/finally returns a
zero-filled .grad for an input the eager autograd graph never reaches
(eager: x.grad is None). The minimizer found every statement needed: the
in-place mul_, the dict side effect and the try/finally region. Area: the
tracer's try/except handling (open elsewhere). Found by fuzz seed 200212."""
REASON = "tracer (try/finally + break): dead value kept as an output; aot_eager materializes a zero grad where eager gives None"
BACKEND = "aot_eager"
BODY = """
t0 = t0 * G1
t1 = t1 * 1
t1.mul_(0.5)
GD['a'] = GD['a'] + 1
try:
    t0 = t1.reshape(-1).view(t1.shape)
except ValueError:
    pass
finally:
    pass
"""
CALLS = [
    {"shape": (3, 3), "n": 3, "fl": 0.5, "requires_grad": True},
]
