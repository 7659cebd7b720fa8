"""bfloat16 call under aot_eager: a float32 parameter's accumulated .grad differs from eager's by one bfloat16 step of the call's contribution.

First mismatch: globals at call 4: globals['mod']['grads']['w']: eager 74.88622283935547, compiled 74.87841033935547
Cause: numerics, not a bug. The resume graph `t1.sin() - t1.cos()` run
through aot gives t1's gradient (and so w's contribution, 0.84375 for
eager's 0.8515625) one bfloat16 rounding apart; torch.compile's
aot_eager on the same graph gives the same bits as ours. The fuzzer now
compares module state and gradients with the half-precision rtol once a
half-precision call has run (bit-exact for the eager backend still).
Found by fuzz seed 8026131 (H100 run, 3.12.3 + torch 2.11; reproduces on 3.11 + torch 2.13)."""
REASON = "fuzzer: a float32 gradient fed by bfloat16 ops compared with a float32 tolerance"
BACKEND = 'aot_eager'
SEED = 8026131
BODY = """
try:
    t1 = mod.forward(t1) + mod.scale
    raise ValueError('v')
except ValueError:
    pass
finally:
    pass
t0 = t1.sin() - t1.cos()
"""
CALLS = [
    {'shape': (3, 5), 'n': 3, 'fl': -1.5},
    {'shape': (3, 5), 'n': 3, 'fl': -1.5},
    {'shape': (3, 5), 'n': 3, 'fl': -1.5},
    {'shape': (1, 1), 'n': 3, 'fl': -1.5},
    {'shape': (1, 1), 'dtype': 'bfloat16', 'n': 3, 'fl': -1.5},
]
