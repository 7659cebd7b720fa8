"""del l0[:1] on the argument list, then x.copy_(y) with y a view of x.
Eager: lst loses its first element; compiled: lst keeps both (the list
mutation is not applied). Found by fuzz seed 5010386 on 3.12."""
REASON = "del of a list slice lost when an aliased input is written in place"
BACKEND = "eager"
BODY = """
del l0[:1]
x.copy_(t1.to(x.dtype))
"""
CALLS = [
    {"shape": (1, 4), "noncontig": True, "n": 0, "fl": -0.0, "lst": [0, 1], "alias": "view"},
]
