"""A property redefined on the class after compile (issue 12 item 3).
Found by fuzz seed 18 (features method,mut_class)."""
REASON = "guards: property redefined on the class (issue 12 item 3, guards branch)"
BACKEND = "eager"
BODY = """
t1 = t1 + a.p
"""
CALLS = [
    {},
    {"muts": ["A.p = property(lambda self: 1000.0)"]},
]
