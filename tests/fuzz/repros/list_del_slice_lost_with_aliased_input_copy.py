"""del l0[:1] on the argument list, then x.copy_(y) with y a view of x.
Eager: lst loses its first element; compiled: lst keeps both (the list
mutation is not applied). Found by fuzz seed 5010386 on 3.12 (the
`t0 = t0 + 1` added so that the frame still compiles a graph). Fixed: the
probe's stand-ins share a buffer where the examples share a storage, and
the refused write is a break (test_write_partly_overlapping_another_argument_is_a_break)."""
REASON = "del of a list slice lost when an aliased input is written in place"
BACKEND = "eager"
BODY = """
t0 = t0 + 1
del l0[:1]
x.copy_(t1.to(x.dtype))
"""
CALLS = [
    {"shape": (1, 4), "noncontig": True, "n": 0, "fl": -0.0, "lst": [0, 1], "alias": "view"},
]
