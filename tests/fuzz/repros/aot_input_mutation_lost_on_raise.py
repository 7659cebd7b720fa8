"""An in-place mutation of an input (through a view) followed, in the same
graph, by an op that fails at run time (softmax of an int64 tensor: the
fake-tensor run accepts it, the kernel raises). Eager mutates y, then
raises; under aot_eager both raise the same error but y is left unchanged:
the functionalized graph writes input mutations back only at its end.
Found by fuzz seed 200846 (the same run-time failure as issue 12 item 5,
but outside any try block)."""
REASON = "aot_eager: input mutations before an op that raises at run time are lost"
BACKEND = "aot_eager"
BODY = """
t1 = y.transpose(0, 1)
t1.add_(t1)
t0 = t0.softmax(dim=-1)
"""
CALLS = [
    {"shape": (3, 3), "dtype": "int64"},
]
