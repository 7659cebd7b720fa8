"""aot_eager: an in-place add on a view (t().t()) taken with grad on of a tensor computed under set_grad_enabled(False) raises the no_grad-view error; eager allows it.

First mismatch: exception at call 0: eager returned:  | compiled RuntimeError: A view was created in no_grad mode and is being modified inplace with grad mode enabled. Given that this use case is ambiguous and error-prone, it is forbidden. You can clarify your code by moving bot
Cause: the view (t().t() of an intermediate) is made inside aot's
forward, which runs with grad off: a no_grad view, where eager's (made with
grad on) is a normal one. Fixed: the runtime gives view outputs the
creation mode of the capture's example (_output_creation_meta).
Found by fuzz seed 6228249 (H100 run of 2026-11-24, 3.12.3 + torch 2.11; reproduces on 3.11 + torch 2.13)."""
REASON = 'aot_eager: an in-place add on a view (t().t()) taken with grad on of a tensor computed under set_grad_enabled(False) raises the no_grad-view error; eager allows it'
BACKEND = 'aot_eager'
BODY = """
with torch.set_grad_enabled(b0):
    t1 = t1 * 3
t1 = t1.t().t()
if bool((t0 < 0).any()):
    t1 += t0
else:
    pass
"""
CALLS = [
    {'shape': (3, 5), 'requires_grad': True, 'n': 2, 'fl': 0.0},
]
