"""`l0 = lst` makes one list under two names; after a break (`.item()`),
`l0 = l0 + [i0]` gives l0 a new list and `lst.append(1)` mutates the
argument; at the next break (print) the mutated argument list was written
back through the source `l0`, which the break had already stored the new
list into: the new list became [1] and the argument stayed []. Found by
fuzz seed 7003 (eager backend)."""
REASON = "write-back of a mutated argument list read its source after the break had rebound that local"
BACKEND = "eager"
BODY = """
f0 = f0 + t0.sum().item()
l0 = l0 + [i0]
lst.append(1)
print('lb', len(l0))
t0 = t0 + len(l0)
"""
CALLS = [
    {"shape": (4, 2), "n": 4},
]
