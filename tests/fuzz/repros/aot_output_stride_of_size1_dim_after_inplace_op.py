"""t0 = x + 0 on a (1, 4) x of strides (1, 1) keeps x's strides in eager,
and t0.clamp_ keeps t0. aot's functionalized graph returns the result of
an out-of-place clamp, contiguous: strides (4, 1). Reading t0.stride(0)
(a break: size-1 dims' strides are read eagerly) then gives 4 where eager
gives 1. torch's own compiler (backend aot_eager) gives 4 too (checked with
torch 2.13). Fixed: eager's strides are known only by running eager's
kernels; a graph with an in-place op on a computed tensor with a size-1
dim and an output with one runs its captured ops eagerly
(backends._size1_stride_hazard).
Found by fuzz seed 7320195 (local
run, 3.11 + torch 2.13)."""
REASON = "aot_eager: an output's stride of a size-1 dim after an in-place op differs from eager's"
BACKEND = "aot_eager"
BODY = """
t0 = t0 + 0
t0.clamp_(-1.0, 1.0)
i0 = i0 + t0.stride(0)
"""
CALLS = [
    {"shape": (1, 4), "noncontig": True, "n": 5, "fl": 2.0},
]
