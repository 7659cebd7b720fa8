"""Called with grad mode off, an enable_grad block clones the input (a
leaf that requires grad) and fills a column of the clone in place (the
fill_ is a break). Eager: the clone and its view are made with grad on,
so the fill_ is allowed. aot_eager ran the graph (entered with grad off)
as inference: its view output came back as a no_grad view, and the
fill_ raised 'A view was created in no_grad mode and is being modified
inplace with grad mode enabled'. Found by fuzz seed 5106094 (3.12 +
torch 2.11 on the device; reproduced on 3.11 + torch 2.13)."""
REASON = "aot_eager: a graph entered with grad off that turns it on runs as inference"
BACKEND = "aot_eager"
BODY = """
with torch.enable_grad():
    t0 = t0.clone()
    t0[:, 0].fill_(i0)
"""
CALLS = [
    {"shape": (1, 1), "dtype": "bfloat16", "requires_grad": True, "grad_mode": False, "fl": 0.0},
]
