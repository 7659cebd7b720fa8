"""y an expanded row view of x (a leaf requiring grad, the view made with
grad on); in a call with grad off, a while loop runs `y.zero_()` and then
reads `t1.requires_grad` (t1 is y): eager True, compiled False (both
backends). The kernel probe of zero_ read the fake view's is_leaf after
the write; that regenerates the view's grad_fn, which fails on a fake
view (its fake base does not require grad) and left the example without
requires_grad. Found by fuzz seed 9310358 (device run on 0b35510);
test_autograd_state_of_a_view_written_in_a_no_grad_frame."""
REASON = "requires_grad of a view read as False after a write under no_grad"
BACKEND = "aot_eager"
BODY = """
w0 = 0
while w0 < i0 % 3 + 1:
    w0 += 1
    y.zero_()
    b0 = t1.requires_grad
"""
CALLS = [
    {"shape": (3, 5), "noncontig": True, "requires_grad": True, "grad_mode": False, "n": 0, "fl": -1.5,
     "lst": [], "alias": "row"},
]
