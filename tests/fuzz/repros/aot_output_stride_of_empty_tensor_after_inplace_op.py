"""t0 = x.clone(); t0.add_(t0); i0 = i0 + t0.stride(0) with x an empty
(0, 3) transposed input (strides (1, 1)): eager's clone keeps (1, 1) and
the in-place add keeps them (i0 = 6); aot's out-of-place add returned
contiguous (3, 1) (i0 = 8). Like aot_output_stride_of_size1_dim_after_inplace_op,
for a size-0 dim: such graphs now run their captured ops eagerly. Found
by fuzz seed 9508618 (local run on faf4b17)."""
REASON = "aot_eager: strides of an empty tensor written in place"
BACKEND = "aot_eager"
BODY = """
t0 = t0.clone()
t0.add_(t0)
i0 = i0 + t0.stride(0)
"""
CALLS = [
    {"shape": (0, 3), "noncontig": True, "n": 5, "fl": -1.5, "lst": []},
]
