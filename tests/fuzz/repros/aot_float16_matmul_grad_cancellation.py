"""float16 matmul gradients under aot_eager: elements that cancel differ from eager's by more than the float16 rtol of the element.

First mismatch: grad at call 0: grads[0]: values differ (-0.1373291015625 vs -0.1376953125, 1.810546875 vs 1.8095703125)
Cause: numerics, not a bug. On this graph's inputs aot's gradients of x
differ from eager's in 99 of 100 random cases, are the bits torch.compile's
aot_eager gives in 100 of 100, and are as close to a float64 reference as
eager's (mean max error 0.00818 vs 0.00818). The rounding of a half
sum scales with its terms: the fuzzer now compares half tensors with an
atol of the dtype's rtol times the tensor's largest magnitude (worst seen
here: 7.5e-4 of it). Found by fuzz seed 8124373 (H100 run, 3.12.3 + torch
2.11; reproduces on 3.11 + torch 2.13), with 8113144 and 8117271 (bfloat16)."""
REASON = "fuzzer: half-precision gradients that cancel compared elementwise, not at the tensor's scale"
BACKEND = 'aot_eager'
SEED = 8124373
BODY = """
t1 = (t0 @ t0.t()) @ t1 * 0.1
t1 = torch.matmul(t0, t1.transpose(0, 1)).diagonal().unsqueeze(1) + t1
"""
CALLS = [
    {'shape': (3, 5), 'dtype': 'float16', 'requires_grad': True, 'n': 3, 'fl': 2.0},
]
