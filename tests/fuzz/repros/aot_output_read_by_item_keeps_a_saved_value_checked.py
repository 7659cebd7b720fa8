"""t1 = t0.t().contiguous().t() is t0's memory (contiguous() of the
transposed t0 is itself); `.item()` of t0.abs().max() is a break, so that
max is an output of the graph; then t1 += t0 writes t0. Eager's backward
from the returned tensors never reaches abs (the max only fed .item()), so
abs's saved t0 is not checked: it returns gradients. aot's compiled
function is one autograd node for all the graph's outputs, and its saved
t0 (for abs) is at a newer version: its backward raises 'modified by an
inplace operation'. torch's own compiler (backend aot_eager) raises the same
(checked with torch 2.13). Fixed: a break at `.item()` of a computed
tensor nothing else holds hands on its detach() (tracer/frame.py,
detach_data_read), so no graph output needs abs's backward.
Found by fuzz seed 5226773 (early device run, 3.12 + torch 2.11;
reproduced on 3.11 + torch 2.13)."""
REASON = "aot_eager: an output only .item() reads keeps its saved values in aot's one autograd node"
BACKEND = "aot_eager"
BODY = """
t0 = t0 + t0.sum()
t1 = t0.t().contiguous().t()
i0 = i0 + t0.numel() + int(t0.abs().max().item() > 1)
t1 += t0
"""
CALLS = [
    {"shape": (3, 5), "noncontig": True, "requires_grad": True, "n": -1},
]
