"""An instance attribute set after compile that shadows a class method
(issue 12 item 2). Found by the fuzzer (feature mut_class)."""
REASON = "guards: instance attribute shadowing a method (issue 12 item 2, guards branch)"
BACKEND = "eager"
BODY = """
t0 = a.m(t0)
"""
CALLS = [
    {},
    {"muts": ["a.m = lambda t: t + 5"]},
]
