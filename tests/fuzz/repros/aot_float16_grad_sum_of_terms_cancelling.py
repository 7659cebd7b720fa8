"""float16 gradient of x (passed as both x and y) summed from terms up to
4 in size (t0 = -4x, t1 = x*x + x + x.sum()) that cancel to about 0.47:
eager 0.466796875, aot_eager 0.46875, 4.2 % apart.

Cause: numerics, not a bug. Over 200 random values of x, ours give the
bits torch.compile's aot_eager gives in 200 of 200, differ from eager's in
62 (relatively by up to 4.4 %: the result is near 0 where the terms are
not), and are about as close to a float64 reference (mean error 0.00073,
eager's 0.00067). The fuzzer now compares half-precision gradients at 16
steps of the dtype at a scale of at least 1 (fuzzrun._teq). Found by fuzz
seed 9119221 (device run on 9982cbe; reproduces on 3.11 + torch 2.13)."""
REASON = "fuzzer: half-precision gradient summed from cancelling terms compared at one rounding step"
BACKEND = "aot_eager"
SEED = 9119221
BODY = """
t1 = torch.matmul(t1, t0.transpose(0, 1)).diagonal().unsqueeze(1) + t1
acc_ = []
def nd_(t):
    acc_.append(t.sum())
    print(len(acc_))
    return t * 2
t0 = nd_(nd_(t0))
t1 = t1 + acc_[0]
t0 = -t0
"""
CALLS = [
    {"n": 1, "fl": 1.0},
    {"n": True, "fl": 1.0},
    {"shape": (1, 1), "dtype": "float16", "requires_grad": True, "n": 1, "fl": 2.0, "alias": "same"},
]
