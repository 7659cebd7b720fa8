"""The cache-size limit deleted a resume function name a kept entry loads (NameError): the bug of limit_drop_deleted_a_resume_name_a_kept_entry_loads, here in a while loop whose closures print.

First mismatch: exception at call 4: eager returned:  | compiled NameError: name '__resume_at_162_1493' is not defined
Found by fuzz seed 8104322 (H100 run, 3.12.3 + torch 2.11; reproduces on 3.11 + torch 2.13)."""
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
