"""Inside a no_grad block (a helper with a tensor branch breaks the
graph first), t1 = y.transpose(0, 1) and t1.add_(t1) write the leaf y
that requires grad through a view; after the block the view feeds a
stack with grad on. Eager allows all of it. aot_eager failed to trace
the resume graph ('A view was created in no_grad mode and its base ...
has been modified inplace with grad mode enabled'), and the failed trace
left grad mode on: the graph's fallback then ran add_ with grad on and
raised 'a view of a leaf Variable that requires grad is being used in an
in-place operation'. Found by fuzz seed 5104435 (3.12 + torch 2.11 on
the device; reproduced on 3.11 + torch 2.13)."""
REASON = "aot_eager: a view made under no_grad used with grad on fails aot's trace, which leaks grad mode"
BACKEND = "aot_eager"
BODY = """
with torch.no_grad():
    t1 = hb(t1)
    t1 = y.transpose(0, 1)
    t1.add_(t1)
t0 = torch.stack([t1, t1], dim=2).mean(dim=2)
"""
CALLS = [
    {"shape": (1, 4), "noncontig": True, "requires_grad": True, "n": 0, "fl": 0.0},
]
