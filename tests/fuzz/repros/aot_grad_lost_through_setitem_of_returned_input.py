"""y (requires grad, shape (1, 1)) is returned itself and also copied into
a clone of x by setitem; the loss sums both. Eager: y.grad == 2; aot_eager:
1 (the path through the setitem is lost). Also on the code before this
session (not a regression). Found by fuzz seed 3000322 on 3.12 (open)."""
REASON = "aot_eager: gradient through a setitem of a returned input lost"
BACKEND = "aot_eager"
BODY = """
t0 = t0.clone()
t0[:, 0] = t1[:, -1]
"""
CALLS = [
    {"shape": (1, 1), "requires_grad": True, "n": -1, "fl": 1},
]
