"""y (a leaf, requires grad) is viewed under no_grad and returned. Eager:
the view has no grad_fn, a loss through it leaves y.grad None; aot_eager
returns it with a ViewBackward to y, so y.grad is ones (the eager backend
agrees with eager). Found by fuzz seed 5001282 on 3.12 (loop of
no_grad views)."""
REASON = "aot_eager: a view taken under no_grad is returned with a grad_fn to its input"
BACKEND = "aot_eager"
BODY = """
with torch.no_grad():
    t1 = t1.view(-1)
"""
CALLS = [
    {"shape": (3, 3), "requires_grad": True, "n": 5, "fl": 1.0},
]
