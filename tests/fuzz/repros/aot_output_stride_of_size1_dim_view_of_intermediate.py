"""torch.cat([t1, t0], 1).narrow(1, 0, 1) of (1, 1) inputs requiring grad
is a view of the cat with strides (2, 1) in eager; reading t0.stride(0)
(a break) gives 2. aot hands an output that is a view of an intermediate
and requires grad back through aten._unsafe_view, with contiguous strides
(1, 1): 1. torch's own compiler (backend aot_eager) gives 1 too (checked
with torch 2.13). Fixed: such a graph (an output of 2+ dims with a size-1
dim) runs its captured ops eagerly (backends._size1_stride_hazard).
Found by fuzz seed 6008916 (device run, 3.12 + torch 2.11; reproduced on
3.11 + torch 2.13)."""
REASON = "aot_eager: an output view of an intermediate with a size-1 dim comes back with contiguous strides"
BACKEND = 'aot_eager'
BODY = """
t0 = torch.cat([t1, t0], 1).narrow(1, 0, t0.shape[1])
i0 = i0 + t0.stride(0)
"""
CALLS = [
    {'shape': (1, 1), 'requires_grad': True, 'fl': 2.0},
]
