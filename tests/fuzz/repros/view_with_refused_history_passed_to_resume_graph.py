"""fuzz seed 82025641: exception at call 0
eager RuntimeError: A view was created in no_grad mode and its base or another view of its base has been modified inplace with grad mode enabled. Given that this use case is ambiguous and error-prone, it is forbidden. Yo | compiled returned: 
"""
REASON = "torch 2.11: a view made in no_grad mode and written in place reached a resume function as an input; its example did not carry the refused autograd history, so the graph summed it where eager raised"
BACKEND = 'aot_eager'
SEED = 82025641
BODY = """
with torch.no_grad():
    t0 = t0[1:]
    t0 += 1
f0 = f0 + float(mod.w)
f0 = f0 + t0.sum().item()
"""
CALLS = [
    {'shape': (3, 3), 'requires_grad': True, 'n': 5, 'fl': -1.5},
]
