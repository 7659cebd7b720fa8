"""aot_eager: an input's gradient is NaN where eager's is finite: a loop value (exp, overflowing to inf, then clamp) is overwritten by the next iteration after a break.

First mismatch: grad at call 2: grads[0]: values differ
  eager   [96.28648376464844, 96.28648376464844, 96.28648376464844, 51.67735290527344, ...]
  compiled [nan, nan, nan, nan, ...]
Cause (as aot_grad_through_std_of_one_row_before_grad_switch): the graph up to
the break at bool() returns t0 = t1.exp().clamp(max=10) and t1; the next
iteration overwrites t0, so eager's autograd never runs that t0's backward.
aot's node takes a gradient for every output, zeros for the unreached t0, and
its backward multiplied them by exp's inf result: NaN in t1's, so x's and y's,
gradients. The gate now recomputes eager's gradients (the captured graph run
again op by op) when an output was not reached and aot's are not finite.
Needs this seed's input values (t1 must reach exp's overflow): SEED below.
Found by fuzz seed 6235761 (3.12.3 + torch 2.11; reproduces on 3.11 + torch 2.13)."""
REASON = "aot_eager: NaN gradient through an unreached output whose backward meets inf (exp overflowed, clamped)"
BACKEND = 'aot_eager'
SEED = 6235761
BODY = """
lst.append(1)
print('lb', len(l0))
t0 = t0 + len(l0)
t1 = torch.mm(t0.t(), t0).sum() + t1
for v0 in list(l0):
    t0 = t1.exp().clamp(max=10.0)
    b0 = bool(t0.mean() > 0)
    t1 = t1 * 0.9 + v0
"""
CALLS = [
    {'shape': (3, 3), 'n': 4},
    {'shape': (3, 3), 'n': 4},
    {'shape': (3, 3), 'requires_grad': True, 'n': 4, 'fl': 0.5, 'lst': [1]},
]
