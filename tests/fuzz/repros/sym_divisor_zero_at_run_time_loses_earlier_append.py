"""fuzz seed 82004072: inputs at call 3
input lst: len 2 vs 1
"""
REASON = "a division by a symbolic int in the graph raised at run time after a list append traced before it: the append, replayed after the graph, was lost"
BACKEND = 'eager'
SEED = 82004072
BODY = """
i0 = i0 + int(t1.argmax())
t1 = t1 + torch.as_tensor(np.arange(t1.shape[1]), dtype=t1.dtype)
lst.append(i0)
i0 = 10 // (i0 % 3)
"""
CALLS = [
    {'n': 2, 'fl': 0.5},
    {'noncontig': True, 'requires_grad': True, 'n': 2, 'fl': 0.5, 'lst': [2]},
    {'noncontig': True, 'requires_grad': True, 'n': 2, 'fl': 2.0, 'lst': [2]},
    {'noncontig': True, 'requires_grad': True, 'n': 2, 'fl': 2.0, 'lst': [2]},
]
