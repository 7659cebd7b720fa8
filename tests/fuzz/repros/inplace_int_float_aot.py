"""In-place arithmetic whose result type cannot be cast back to the tensor's
dtype (int64 *= 0.5): eager raises RuntimeError ("result type Float can't
be cast to the desired output type Long"); under aot_eager the compiled
function returns a truncated int tensor instead. The fake-tensor run of
`mul_` during tracing does not check the cast, and functionalization turns
the in-place op into mul + copy_ (which casts). Found by fuzz seed 100361."""
REASON = "tracer: in-place op with an uncastable result type is not rejected (aot_eager returns instead of raising)"
BACKEND = "aot_eager"
BODY = """
t0 = t0 * 1
t0.mul_(0.5)
"""
CALLS = [
    {"shape": (4, 2), "dtype": "int64"},
]
