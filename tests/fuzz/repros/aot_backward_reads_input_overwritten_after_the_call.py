"""aot_eager: a backward that eager refuses (an input it saved was written in place after the call) ran.

First mismatch: grad at call 0: backward 'RuntimeError' vs (None, None)
Cause: x and y are overlapping views of one buffer; the first graph
does x.add_(1) and x + x.std(0) (eager's std saves x), then after the
break `t1 += t0` writes y, moving the shared version counter: eager's
backward raises. aot saved its own copy of x and ran. The runtime now
checks the version of each input eager saves, in the backward of the
outputs that read it. Found by fuzz seed 7611598 (3.11 + torch 2.13, 2026-11-24)."""
REASON = 'aot_eager: a backward that eager refuses (an input it saved was written in place after the call) ran'
BACKEND = 'aot_eager'
SEED = 7611598
BODY = """
a.cnt += 1
x.add_(1)
if b0:
    raise ValueError('b')
t0 = t0 + t0.std(dim=0)
f0 = f0 + float(mod.w)
t1 += t0
"""
CALLS = [
    {'requires_grad': True, 'n': 2.0, 'alias': 'overlap'},
]
