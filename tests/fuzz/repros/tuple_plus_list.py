"""`l0 + [i0]` where the argument is a tuple: eager
raises TypeError (can only concatenate tuple (not "list") to tuple); the
tracer concatenated any two sequences, so the compiled function returned.
Found by fuzz seed 1 (features in_types, list). Fixed on branch fuzz
(tracer/variables/builtin.py: binary_op checks the sequence kinds)."""
REASON = "tracer: tuple + list / list + tuple concatenated instead of TypeError"
BACKEND = "eager"
BODY = """
l0 = l0 + [i0]
t0 = t0 + len(l0)
"""
CALLS = [
    {"lst": (1, 2)},
]
