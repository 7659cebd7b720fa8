"""float16 matmul under aot_eager: the gradient differs from eager's in
one float16 step (about 8.5e-4 relative); torch's own compiler with the
aot_eager backend gives the same bits as ours, eager is deterministic, and ours
is the closer of the two to a float64 reference. Numerics, not a bug: the
fuzzer compares half-precision tensors with torch.testing's default rtol
for their dtype. Found by fuzz seed 5000038 (device run, Python 3.12.3)."""
REASON = "fuzzer: half-precision results compared with a float32 tolerance"
BACKEND = "aot_eager"
BODY = """
t1 = (t0 @ t0.t()) @ t1 * 0.1
"""
CALLS = [
    {"shape": (3, 3), "dtype": "float16", "requires_grad": True, "n": 4, "fl": 2.0},
]
