"""aot_eager: gradients after the program wrote a saved input through numpy: eager NaN, compiled 42.

First mismatch: grad at call 0: grads[0]: eager [nan, nan, nan, 0, ...] vs compiled [42.0, 42.0, 42.0, 0, ...]
Cause: not a bug of ours; the program is outside autograd's contract. y is
a row of x expanded; t1 = y * y.amax(1) saves y, then `arr_ = x.detach().numpy();
arr_[0] = 7` rewrites that memory with no version bump. Eager's amax
backward rebuilds its mask from the overwritten y and divides by a zero
count (NaN); aot saved the mask itself. The fuzzer compares the results,
inputs and globals of programs that write an input through numpy, not
their gradients (fuzzrun.writes_behind_autograd). Found by fuzz seed
8211472 (H100 run, 3.12.3 + torch 2.11; reproduces on 3.11 + torch 2.13)."""
REASON = "fuzzer: gradients compared after a write autograd cannot see (numpy into a saved input)"
BACKEND = 'aot_eager'
SEED = 8211472
BODY = """
t1 = t1 * t1.amax(dim=1, keepdim=True)
t0 = t0 * f0
arr_ = x.detach().numpy()
arr_[0] = 7
"""
CALLS = [
    {'shape': (3, 3), 'requires_grad': True, 'n': 0, 'fl': -0.0, 'alias': 'row'},
]
