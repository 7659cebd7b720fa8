"""A float argument traced as 0.0 and then passed as -0.0: the EQUALS guard
(==) holds, the compiled entry is reused and the result has the wrong sign
(issue 12 item 4). Found by fuzz seeds 100161, 100255, 100352, 100457."""
REASON = "guards: float -0.0 vs 0.0 (issue 12 item 4, being fixed in the guards branch)"
BACKEND = "eager"
BODY = """
t0 = A(f0).m(t0)
"""
CALLS = [
    {"fl": 0.0},
    {"fl": -0.0},
]
