"""An input is mutated in the graph (x.unsqueeze(0).sub_(1)) and saved for
the backward of mod.forward(x); after the graph, x is written through a
numpy view (no version-counter bump). Eager's backward reads the written
x for mod.w's gradient; aot_eager's backward uses its own copy of the
updated input, so the accumulated mod.w.grad differs at the second call.
Found by fuzz seed 301376 (open)."""
REASON = "aot_eager: backward saved a functionalized copy of a mutated input; eager reads the input written later through numpy"
BACKEND = "aot_eager"
BODY = """
x.unsqueeze(0).sub_(1)
t1 = mod.forward(t0) + mod.scale
arr_ = x.detach().numpy()
arr_[0] = 7
"""
CALLS = [
    {"shape": (3, 3), "n": 2, "fl": -0.0},
    {"n": 2, "fl": -0.0},
]
