"""aot_eager: a backward eager runs raised (an input saved for another output was written after the call).

First mismatch: grad at call 0: backward (ones, ones) vs 'RuntimeError'
Cause: y is x; the first graph computes t0 = x + 1 and t1 = y * t0.amax(1)
(saving x for t1's backward) and breaks at random.choice; the next one
writes x under no_grad and replaces t1 by a no-grad value. The loss
reaches t0 alone: eager's AddBackward saved nothing and ran; aot's one
node read the saved x, found its version moved, and raised. The runtime
now copies, at the call, saved tensors on an input's or output's memory
that eager saves for only some outputs (_SavedTensors). Found by fuzz
seed 10300776 (device run, 3.12 + torch 2.11, 2026-11-24)."""
REASON = "aot: its one node's backward read an input saved for another output, written after the call, and raised where eager's reached node saved nothing"
BACKEND = 'aot_eager'
SEED = 10300776
BODY = """
fs_ = [lambda t, k=k: t + k for k in range(2)]
t0 = fs_[1](t0)
t1 = t1 * t0.amax(dim=1, keepdim=True)
l0 = l0 + [random.choice([1, 2, 3])]
with torch.no_grad():
    x.unsqueeze(0).sub_(1)
    t1 = hb(t1, i0, 1, 2, scale=f0)
"""
CALLS = [
    {'shape': (4, 2), 'requires_grad': True, 'n': 2, 'fl': -1.5, 'alias': 'same'},
]
