"""x.to(float64) is the single output of a first graph (a break at
random.randint follows); the second graph outputs its .float() and y * 3,
then inference_mode cuts the first from the loss. Eager leaves x.grad
None; the second graph's gate dropped the gradient of its input, but the
first graph (one output: never gated) still ran its backward on that
missing gradient and gave x zeros. Found by fuzz seed 5015440 (and
5012450) on 3.12."""
REASON = "aot_eager: zero .grad from an earlier graph whose outputs no gradient reached"
BACKEND = "aot_eager"
BODY = """
t0 = t0.to(torch.float64)
i0 = i0 + random.randint(0, 3)
t1 = t1 * 3
t0 = t0.float()
with torch.inference_mode():
    t0 = t0 + 1
"""
CALLS = [
    {"requires_grad": True, "n": 3, "fl": 0.5},
]
