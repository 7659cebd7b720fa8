"""After a .item() break, a helper writing a global, and list inserts in a
loop, `l0 = l0[1:]` then `i0 = l0[i0]` in a try with a non-matching
except (RuntimeError). Eager raises IndexError; compiled returns, with
i0 and l0 as they were before the slice (the code after the loop is not
run). Found by fuzz seed 5015966 on 3.12. Cause: at the break before the
try, the argument list's write-back ran a second time after the locals
were stored, into the slice `l0` now named (fixed;
test_list_rebound_before_a_statement_run_eagerly_keeps_its_value)."""
REASON = "IndexError in a try after list ops in a loop: swallowed, later statements skipped"
BACKEND = "eager"
BODY = """
i0 = i0 + t0.numel() + int(t0.abs().max().item() > 1)
i0 = i0 + hg()
l0.append(i0)
for j0 in range(3):
    l0.insert(0, len(l0))
i0 = i0 // 2 - 1
l0 = l0[1:]
try:
    i0 = l0[i0]
except RuntimeError:
    pass
"""
CALLS = [
    {"shape": (4, 2), "n": 1, "fl": 2.0, "lst": [3, 3, 3]},
]
