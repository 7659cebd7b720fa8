"""`F.dropout(t, training=False)` returns its input object in eager; under
aot_eager the compiled function returns another tensor (same values), so
`result is x` differs (and so does every later identity check or in-place
write through it). The eager backend returns x. Found by fuzz seed 201231.
(`t1 + 1` keeps a graph to compile once the dropout is no graph op.)"""
REASON = "aot_eager: an op that returns its input object (dropout, training=False) returns a new tensor"
BACKEND = "aot_eager"
BODY = """
t1 = t1 + 1
t0 = torch.nn.functional.dropout(t0, p=0.5, training=False)
"""
CALLS = [
    {},
]
