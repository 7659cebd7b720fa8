"""t1 = t1 + t0[:, -1:] with grad on, then `t0[t0 > 0]` inside a no_grad
block, on empty inputs (0, 3) that require grad: t1 came back without
requires_grad. aot's trace on the real inputs fails on the mask's
data-dependent size and is retried on fakes with a shape env; the failed
trace left grad mode off (it stopped inside the no_grad region), so the
retry compiled an inference graph. Found by fuzz seed 9232197 (device run
on faf4b17); test_mask_of_an_empty_input_in_a_no_grad_block_keeps_grad_outside_it."""
REASON = "aot_eager: retried trace of an empty mask in a no_grad block ran with grad off"
BACKEND = "aot_eager"
BODY = """
t1 = t1 + t0[:, -1:]
with torch.no_grad():
    t0 = t0 + t0[t0 > 0].sum()
"""
CALLS = [
    {"shape": (0, 3), "requires_grad": True, "n": 3, "fl": 0.5, "lst": []},
]
