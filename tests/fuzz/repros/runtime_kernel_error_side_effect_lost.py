"""GL.append(9), then t1.max() of an empty tensor: eager raises after the
append. The fake run accepts max() of an empty tensor (and, likewise,
kernels missing for a dtype: int64 rand_like / std / softmax, bool abs /
argmax, an int64 Tensor.max() > ...), so the op is captured; the graph
raises at run time before the append (written back after the graph) is
applied: GL differs. Found by fuzz seeds 1000754, 1000507, 1000514 (fixed:
for unusual dtypes, empty or mixed-dtype inputs the op is also probed on
real ones; a refusal is a break)."""
REASON = "an op that fails only on real tensors raises inside the graph: the frame's earlier Python side effects are lost"
BACKEND = "eager"
BODY = """
t0 = t0 * 2
GL.append(9)
if t1.max() > 1:
    pass
"""
CALLS = [
    {"shape": (0, 3)},
]
