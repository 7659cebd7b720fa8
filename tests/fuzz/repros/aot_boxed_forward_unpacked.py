"""t1 is (1, 1); aot_eager returned shape (1,): the forward wrapper that
marks a failing forward graph unpacked aot's boxed list of inputs, so the
graph got the rows of the (1, 1) input (any other shape failed and was
replayed eagerly). Found by fuzz seed 3000107 (3.12; also 3.11), fixed."""
REASON = "aot_eager: forward wrapper broke aot's boxed calling convention"
BACKEND = "aot_eager"
BODY = """
for v0 in l0[:4]:
    t1 = t1 * 0.9 + v0
"""
CALLS = [
    {"shape": (1, 1), "n": 2, "fl": 0.5, "lst": [3]},
]
