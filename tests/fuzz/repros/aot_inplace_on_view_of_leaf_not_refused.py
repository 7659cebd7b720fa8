"""Under grad mode off, enable_grad() then a setitem into a view of the
leaf y (requires grad): eager raises 'a view of a leaf Variable that
requires grad is being used in an in-place operation'; aot_eager returns
normally. Also fuzz seed 5003565 (no_grad block, then y.transpose(0, 1)
.add_ on an empty non-contiguous y). Found by fuzz seed 5008639 on 3.12."""
REASON = "aot_eager: in-place op on a view of a leaf that requires grad does not raise"
BACKEND = "aot_eager"
BODY = """
with torch.enable_grad():
    y.view(-1)[0] = 5
"""
CALLS = [
    {"shape": (1, 4), "noncontig": True, "requires_grad": True, "grad_mode": False, "n": 2, "fl": 0.5},
]
