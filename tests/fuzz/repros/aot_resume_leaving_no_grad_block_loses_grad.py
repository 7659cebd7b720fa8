"""A tensor branch inside a no_grad block breaks the graph; the resume
function (entered with grad off) leaves the block and takes x.t() with
grad on, then x.t().mul_ (a break) writes the view of the leaf x that
requires grad. Eager raises 'a view of a leaf Variable that requires
grad is being used in an in-place operation'; aot_eager ran the resume
graph as inference, so its x.t() output had no autograd history and the
mul_ went through. Found by fuzz seed 5110458 (3.12 + torch 2.11 on the
device; reproduced on 3.11 + torch 2.13)."""
REASON = "aot_eager: a resume graph entered with grad off that leaves a no_grad block runs as inference"
BACKEND = "aot_eager"
BODY = """
with torch.no_grad():
    if t1[0, 0] > 0:
        pass
    else:
        pass
x.t().mul_(2)
"""
CALLS = [
    {"noncontig": True, "requires_grad": True, "n": 3, "fl": -1.5},
]
