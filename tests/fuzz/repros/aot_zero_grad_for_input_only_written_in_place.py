"""hb(y) breaks (a data-dependent branch), so the next graph takes its
result t1 as an input and writes it (`t1 *= 2`); t1 is then replaced, so
the loss reaches only t0 (from x). Eager leaves y.grad None; aot's node
also outputs t1's new value (copied back into the input), which the gate
did not count, and it read t1's autograd edge after the call (by then
the copy's): y got a zero .grad. Found by fuzz seed 8926009 (device run
on e048fba)."""
REASON = "aot_eager: zero .grad of an input reached only through an input the graph writes in place"
BACKEND = "aot_eager"
BODY = """
kw_ = {'k': i0, 'scale': 0.5}
t1 = hb(t1, **kw_)
t0 = t0 + isinstance(t1, torch.Tensor)
t1 *= 2
args_ = (t0, 2)
t1 = hb(*args_)
"""
CALLS = [
    {"requires_grad": True, "n": 4, "fl": 2.0, "lst": []},
]
