"""aot_eager: a backward that eager refuses (an output mm saved was written in place after the call) ran.

First mismatch: grad at call 0: backward 'RuntimeError' vs (tensor([[3.2395, ...]]), None)
Cause: t1 = cat([t0, t0], 1).narrow(...) is an output of the first graph
(random.choice breaks it) and mm saves it for `t1 @ t1.t()`; the resume
graph's `t1 += t0` moves its version, and eager's backward raises. aot saved
its own values and ran. The runtime now checks the version of each input
or output memory eager saves a value on, in the backward of the outputs
that read it (the input case: aot_backward_reads_input_overwritten_after_the_call).
Found by fuzz seed 8517980 (H100 run, 3.12.3 + torch 2.11; reproduces on 3.11 + torch 2.13)."""
REASON = "aot_eager: a backward that eager refuses (an output mm saved was written in place after the call) ran"
BACKEND = 'aot_eager'
SEED = 8517980
BODY = """
t1 = torch.cat([t0, t0], 1).narrow(1, 0, t0.shape[1])
t0 = (t1 @ t1.t()) @ t0 * 0.1
l0 = l0 + [random.choice([1, 2, 3])]
t1 += t0
"""
CALLS = [
    {'shape': (3, 5), 'requires_grad': True, 'n': 4, 'fl': 0.0},
]
