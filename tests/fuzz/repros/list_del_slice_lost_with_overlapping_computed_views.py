"""del l0[:1] on the argument list, then x.copy_(y) with x and y
overlapping views of one computed tensor that requires grad (rows 0-1 and
1-2). Eager: the copy is refused (partial overlap) after lst lost its
element; compiled: lst kept it. Found by fuzz seed 8706535 (3.11, local
run on 920fe7e; the `t0 = t0 + 1` added so that the frame still
compiles a graph). The probe gave each view of a computed value its own
`* 1` stand-in, so the stand-ins did not overlap and the probe passed.
Fixed: one stand-in per storage (test_write_overlapping_views_of_a_computed_value_is_a_break)."""
REASON = "del of a list slice lost when overlapping views of a computed value are written"
BACKEND = "eager"
BODY = """
t0 = t0 + 1
del l0[:1]
x.copy_(t1.to(x.dtype))
"""
CALLS = [
    {"requires_grad": True, "n": 5, "fl": 0.5, "lst": [2], "alias": "overlap"},
]
