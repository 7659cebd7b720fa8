"""y is a leaf that requires grad and is itself a view (a transposed
tensor given requires_grad afterwards). Returned from a no_grad block,
y.t() follows its base, which does not require grad: eager's result has
requires_grad False; aot_eager's view of the input required grad. The
no_grad-view rule looked only at views whose own example required grad.
Found by fuzz seed 5228404 (early device run, 3.12 + torch 2.11;
reproduced on 3.11 + torch 2.13)."""
REASON = "aot_eager: a view under no_grad of a leaf view that requires grad is returned requiring grad"
BACKEND = "aot_eager"
BODY = """
with torch.no_grad():
    if b0:
        return [x, y.t(), x[0]]
"""
CALLS = [
    {"shape": (4, 2), "noncontig": True, "requires_grad": True, "n": 5, "fl": 0.5},
]
