"""x (requires grad) is only written in place under no_grad; the single
graph output depends on y alone. Eager leaves x.grad None; aot's backward
node returned zeros for x, and the gating skipped graphs whose outputs all
depend on the same inputs (it must compare them with every input that
needs grad). Found by fuzz seed 301922."""
REASON = "aot_eager: zero .grad for an input only mutated under no_grad"
BACKEND = "aot_eager"
BODY = """
with torch.no_grad():
    x.add_(1)
t0 = torch.relu(t1) * 0.5
"""
CALLS = [
    {"shape": (4, 2), "requires_grad": True, "n": 4},
]
