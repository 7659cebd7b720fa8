"""GL.append(9), then CL(t0) with CL = lambda t: t - G0 and G0 = True:
eager raises (subtraction with a bool is refused) after the append. Fake
tensors accept `t - True`, so the op was captured and raised inside the
graph, before the append (written back after the graph): GL differs.
Found by fuzz seed 5221378 on 3.12 (fixed: a Python bool operand makes
the op probed on real tensors; the refusal is a break)."""
REASON = "tensor minus a Python bool captured; raised in the graph, the list append lost"
BACKEND = "eager"
BODY = """
t1 = t1 * 2
GL.append(9)
t0 = CL(t0)
"""
CALLS = [
    {"shape": (1, 4), "muts": ["G0 = True", "CL = lambda t: t - G0"]},
]
