"""l0 (the argument list) is appended to, then float32 @ float64 raises in
eager after the append. The fake run accepted the mixed-dtype matmul, so
it was captured; the graph raised at run time before the append (applied
after the graph) was written back: lst stayed empty. Found by fuzz seeds
1000213, 1000037, 1000590 (fixed: a mixed-dtype matmul is a break)."""
REASON = "tracer: matmul of mixed dtypes captured; the graph raised before the list append was applied"
BACKEND = "eager"
BODY = """
l0.append(i0)
t0 = t0.to(torch.float64)
t0 = (t1 @ t1.t()) @ t0 * 0.1
"""
CALLS = [
    {"n": 2, "fl": 0.0},
]
