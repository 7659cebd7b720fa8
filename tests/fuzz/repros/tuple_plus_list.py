"""`l0 + [i0]` where the argument is a tuple: eager
raises TypeError (can only concatenate tuple (not "list") to tuple); the
tracer concatenated any two sequences, so the compiled function returned.
Found by fuzz seed 1 (features in_types, list). Fixed on branch fuzz
(tracer/variables/builtin.py: binary_op checks the sequence kinds)."""
REASON = "tracer: tuple + list / list + tuple concatenated instead of TypeError"
BACKEND = "eager"
BODY = """
t0 = t0 + len(t0)
l0 = l0 + [i0]
"""
CALLS = [
    {"lst": (0, 3, 3), "n": 3, "fl": 1, "shape": (3, 5)},
]
