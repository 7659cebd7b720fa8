"""y (requires grad) is added in place into a clone of x and also returned
itself; the loss sums both. Eager: y.grad == 2; aot_eager: 1. The gating
of unreached inputs computed each output's inputs from its node's
arguments only: the clone's set missed y, brought in by the later add_,
so y's gradient through the clone was dropped (same cause as
aot_grad_lost_through_setitem_of_returned_input). Found by fuzz seeds
5000619 (and 5018527, 5000068, 5011328, 5011475, 5014143) on 3.12."""
REASON = "aot_eager: gradient through an in-place op on a clone dropped by the gating"
BACKEND = "aot_eager"
BODY = """
t0 = t0.clone()
t0.add_(t1)
"""
CALLS = [
    {"shape": (3, 5), "requires_grad": True, "n": 4, "fl": -1.5},
]
