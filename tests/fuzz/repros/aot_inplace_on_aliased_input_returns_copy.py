"""y is a view of x; `t1 += t0` adds in place into y and returns y itself in
eager (`result[1] is y`); under aot_eager the returned tensor is not the
input object. Found by fuzz seed 300804 (open)."""
REASON = "aot_eager: in-place op on an input aliasing another input returns a different tensor object"
BACKEND = "aot_eager"
BODY = """
t1 += t0
"""
CALLS = [
    {"alias": "view"},
]
