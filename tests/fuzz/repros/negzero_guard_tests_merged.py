"""Two entries guard the float argument with 0.0 and -0.0 (and the list's
length with 1 and 0): the C tree's build merged the two float tests
(0.0 == -0.0), so the third call (-0.0, [2]) passed the 0.0 entry and
returned 0.0. Found by fuzz seed 1000160 (fixed: same_expected compares
floats bit for bit, as value_match)."""
REASON = "guard tree: tests of 0.0 and -0.0 merged at build"
BACKEND = "eager"
BODY = """
if bool((t0 < 0).any()):
    pass
else:
    pass
"""
CALLS = [
    {"n": 3, "fl": 0.0, "lst": [2]},
    {"n": 3, "fl": -0.0},
    {"n": 3, "fl": -0.0, "lst": [2]},
]
