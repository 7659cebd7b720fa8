"""The cache-size limit dropped an entry and deleted a resume function's global name that a kept entry loads: NameError.

First mismatch: exception at call 4: eager returned:  | compiled NameError: name '__resume_at_162_1493' is not defined
Cause: two compiles of one frame that break at the same place share the
resume function's name (__resume_at_<offset>_<n>), each binding its own
function object. At the limit the later compile's entry, which served no
call, was dropped with the names it installed: the name went, and the
kept entry's code (nd_(nd_(t0)) (print breaks)) raised NameError on its next hit.
release_globals now keeps a name another live compile installed, bound to
that compile's function. Found by fuzz seed 8104322 (H100 run, 3.12.3 + torch 2.11; reproduces on 3.11 + torch 2.13)."""
REASON = "the cache-size limit deleted a resume function name a kept entry loads"
BACKEND = 'eager'
SEED = 8104322
BODY = """
w0 = 0
while w0 < i0 % 3 + 1:
    w0 += 1
    def nb_(t):
        nonlocal i0
        i0 += 1
        print('nb', i0)
        return t + i0
    t0 = nb_(t0)
acc_ = []
def nd_(t):
    acc_.append(t.sum())
    print(len(acc_))
    return t * 2
t0 = nd_(nd_(t0))
t1 = t1 + acc_[0]
"""
CALLS = [
    {'shape': (3, 3), 'n': 3, 'fl': 2.0},
    {'shape': (3, 3), 'n': 3, 'fl': 2.0},
    {'shape': (3, 3), 'noncontig': True, 'n': 3, 'fl': 2.0},
    {'shape': (4, 2), 'n': 3, 'fl': 2.0},
    {'shape': (3, 3), 'n': 3, 'fl': 2.0},
]
