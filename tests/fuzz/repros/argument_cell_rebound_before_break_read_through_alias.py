"""y is x (one tensor passed as both arguments). After a print break the
resume function gets t0 and t1 as arguments, t1 a cell (nc_ writes it
with `nonlocal`). The tensor's variable has one source, L['t1']; the
trace rebinds t1, then nc_'s tensor branch breaks: rebuilding nc_'s
closure stored t1's new value in its cell before the call's argument t0
was loaded from L['t1'], so nc_ got the new t1 (result[0] requires grad,
eager's does not). Both backends. Found by fuzz seed 5109758 (3.12 +
torch 2.11 on the device; reproduced on 3.11 + torch 2.13)."""
REASON = "an argument cell rebound before a break is read through its source after its new value is stored"
BACKEND = "aot_eager"
BODY = """
print('p', i0, b0, len(l0))
t1 = t1 * sum(p.sum() for p in mod.parameters())
def nc_(t):
    nonlocal t1
    if t.sum() > 0:
        t1 = t1 * 2
    return t - 1
t0 = nc_(t0)
"""
CALLS = [
    {"shape": (3, 3), "fl": 0.5, "alias": "same"},
]
