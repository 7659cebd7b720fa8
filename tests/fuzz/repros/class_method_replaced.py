"""A method replaced on the class after compile: the compiled function
keeps calling the old one (issue 12 item 1). Found by the fuzzer with
feature mut_class (seed 29 of --features method,ew,mut_class,...)."""
REASON = "guards: class attribute replaced after compile (issue 12 item 1, guards branch)"
BACKEND = "eager"
BODY = """
t0 = a.m(t0)
"""
CALLS = [
    {},
    {"muts": ["A.m = lambda self, t: t - 1"]},
]
