"""Under aot_eager, an input that the loss does not depend on gets a
zero-filled .grad instead of None when it feeds an output of a graph whose
other outputs are used: the graph before the break inside hb (a
data-dependent branch) outputs t0 (from x) and t1 (from y); t1 is then
replaced, so eager's autograd never reaches y, but
the compiled graph's backward returns a gradient for every input. Found by
fuzz seeds 200212 and 200940 (backward of the sum of the results)."""
REASON = "aot_eager: .grad of an input the loss does not reach is zeros, eager leaves None"
BACKEND = "aot_eager"
BODY = """
t0 = t0.softmax(dim=-1)
t1 = t1 + a.p
kw_ = {'k': i0, 'scale': 0.5}
t1 = hb(t1, **kw_)
t1 = t0.t().contiguous().t()
"""
CALLS = [
    {"requires_grad": True},
]
