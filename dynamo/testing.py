"""Helpers for tests of dynamo and of code using it.

CompileCounter is a backend that counts what it was given; `same` compares
nested results with a tolerance; `rand_strided` makes a tensor with given
sizes and strides.
"""
import torch


class CompileCounter:
    """A backend counting compiled graphs (frame_count) and their ops
    (op_count: call_function/call_method/call_module nodes)."""

    def __init__(self):
        self.frame_count = 0
        self.op_count = 0
        self.graphs = []

    def __call__(self, gm, example_inputs):
        self.frame_count += 1
        self.graphs.append(gm)
        self.op_count += sum(1 for n in gm.graph.nodes if n.op.startswith("call_"))
        return gm.forward

    def clear(self):
        self.frame_count = 0
        self.op_count = 0
        self.graphs = []


def same(a, b, tol=1e-4, equal_nan=False):
    """True if `a` and `b` are equal: tensors within `tol` (relative and
    absolute), containers element-wise, other values by ==."""
    if isinstance(a, (list, tuple)):
        return (isinstance(b, (list, tuple)) and len(a) == len(b)
                and all(same(x, y, tol, equal_nan) for x, y in zip(a, b)))
    if isinstance(a, dict):
        return (isinstance(b, dict) and a.keys() == b.keys()
                and all(same(a[k], b[k], tol, equal_nan) for k in a))
    if isinstance(a, torch.Tensor):
        if not isinstance(b, torch.Tensor) or a.shape != b.shape or a.dtype != b.dtype:
            return False
        if a.is_floating_point() or a.is_complex():
            return torch.allclose(a, b, rtol=tol, atol=tol, equal_nan=equal_nan)
        return torch.equal(a, b)
    return type(a) is type(b) and a == b


def rand_strided(size, stride, dtype=torch.float32, device="cpu"):
    """A random tensor with the given sizes and strides (storage just large
    enough to hold every element)."""
    needed = 1 + sum((s - 1) * st for s, st in zip(size, stride) if s > 0)
    if any(s == 0 for s in size):
        needed = 0
    if dtype.is_floating_point:
        storage = torch.randn(needed, dtype=dtype, device=device)
    else:
        storage = torch.zeros(needed, dtype=dtype, device=device)
    return torch.as_strided(storage, size, stride)


def unsupported(a, b):
    """Returns `b` (its second argument, as TorchDynamo's helper of the same
    name does), run where the tracer cannot follow it: a call of it inside a
    compiled frame always breaks the graph (it lives in dynamo's own code,
    which is never inlined nor compiled). Tests use it to force a break;
    dynamo.eval_frame.unsupported is this function."""
    return b
