"""torch.manual_seed(i0), then t0 and t1 swapped through a tuple, then a
closure rebinding t1 with `nonlocal` called on t0. Eager returns
t0 == y - 1 (the swapped value); compiled returns another value (about
90 for y ~ N(0, 1)). Needs all three: without the manual_seed or the
swap it agrees. Found by fuzz seed 5007189 on 3.12 (with a randn).
Cause: in the resume function after the seed's break t1 is a cell holding
its argument; rebuilding the closure stored the swapped value in the cell
before the call's argument, read through that cell, was loaded. Fixed:
frame cells are stored by the write-back after every load
(test_cell_swapped_with_a_local_after_a_break_keeps_both_values)."""
REASON = "tuple swap + nonlocal closure after torch.manual_seed: wrong result"
BACKEND = "eager"
BODY = """
torch.manual_seed(i0)
p, q = t1, t0
t0, t1 = p, q
def nc_(t):
    nonlocal t1
    if t.sum() > 0:
        t1 = t1 * 2
    return t - 1
t0 = nc_(t0)
"""
CALLS = [
    {"shape": (3, 3), "fl": 2.0},
]
