"""`t0 * 1` of a (1, 4) input with strides (1, 1) keeps (1, 1) in eager;
the fake (meta) kernel says (4, 1), and the tracer folded `t0.stride(0)`
to 4 (eager: 1). The stride of a size-0/1 dim is the kernel's free choice.
Found by fuzz seed 300291 (eager backend)."""
REASON = "stride() of a size-1 dim of a computed tensor folded from the fake kernel's choice"
BACKEND = "eager"
BODY = """
t0 = t0 * 1
i0 = i0 + t0.stride(0)
"""
CALLS = [
    {"shape": (1, 4), "noncontig": True, "n": 0},
]
