"""The cache-size limit dropped an entry and deleted a resume function's global name that a kept entry loads: NameError.

First mismatch: exception at call 1: eager returned:  | compiled NameError: name '__resume_at_80_1665' is not defined
Cause: two compiles of one frame that break at the same place share the
resume function's name (__resume_at_<offset>_<n>), each binding its own
function object. At the limit the later compile's entry, which served no
call, was dropped with the names it installed: the name went, and the
kept entry's code (hb(*args_) (hb breaks on its data)) raised NameError on its next hit.
release_globals now keeps a name another live compile installed, bound to
that compile's function. Found by fuzz seed 8109257 (H100 run, 3.12.3 + torch 2.11; reproduces on 3.11 + torch 2.13)."""
REASON = "the cache-size limit deleted a resume function name a kept entry loads"
BACKEND = 'eager'
SEED = 8109257
BODY = """
w0 = 0
while w0 < i0 % 3 + 1:
    w0 += 1
    for j1 in range(3):
        t0 = t0[1:]
        t0 += 1
        args_ = (t0, 2)
        t1 = hb(*args_)
        t0 = t0 + j1
"""
CALLS = [
    {'shape': (4, 2), 'n': 5},
    {'shape': (4, 2), 'noncontig': True, 'n': 5, 'fl': 0.0},
]
