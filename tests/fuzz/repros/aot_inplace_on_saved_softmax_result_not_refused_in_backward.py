"""t0 = x.softmax(-1); t0 = t0[1:]; t0 += 1 on an empty x that requires
grad: the += overwrites softmax's result, which softmax saved for the
backward, so eager's backward raises ('one of the variables needed for
gradient computation has been modified by an inplace operation'). On the
empty input the op-probe's stand-in for the computed t0 was a leaf, which
refused the +=: a break, and the += ran on aot's output, which its
functionalized backward does not read; with the += in the graph aot's
backward would not raise either. Found by fuzz seed 5212495 (early device
run, 3.12 + torch 2.11; reproduced on 3.11 + torch 2.13)."""
REASON = "aot_eager: an in-place op on a value saved for the backward does not make the backward raise"
BACKEND = "aot_eager"
BODY = """
t0 = t0.softmax(dim=-1)
t0 = t0[1:]
t0 += 1
"""
CALLS = [
    {"shape": (2, 0), "requires_grad": True},
]
