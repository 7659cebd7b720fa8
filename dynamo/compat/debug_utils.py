"""TorchDynamo-compatible debugging helpers.

same_two_models(gm, opt_gm, example_inputs, only_fwd=False): run both models
on copies of the inputs and compare the outputs (dynamo.testing.same) and,
unless `only_fwd`, the gradients of every parameter after a backward pass of
the summed floating outputs. Used to check a compiled module against its
original.
"""
import copy

import torch

from ..testing import same


def _clone(inputs):
    out = []
    for x in inputs:
        if isinstance(x, torch.Tensor):
            y = x.detach().clone()
            y.requires_grad_(x.requires_grad)
            out.append(y)
        else:
            out.append(copy.deepcopy(x))
    return out


def _flat_tensors(value):
    if isinstance(value, torch.Tensor):
        return [value]
    if isinstance(value, (list, tuple)):
        return [t for v in value for t in _flat_tensors(v)]
    if isinstance(value, dict):
        return [t for v in value.values() for t in _flat_tensors(v)]
    return []


def _run(model, inputs, only_fwd):
    if hasattr(model, "zero_grad"):
        model.zero_grad(set_to_none=True)
    out = model(*inputs)
    if only_fwd:
        return out, None
    loss = sum(t.sum() for t in _flat_tensors(out) if t.requires_grad and t.is_floating_point())
    if not isinstance(loss, torch.Tensor):
        return out, None
    loss.backward()
    params = model.parameters() if hasattr(model, "parameters") else []
    return out, [p.grad for p in params]


def same_two_models(gm, opt_gm, example_inputs, only_fwd=False):
    """True if `opt_gm` gives the results (and gradients) of `gm`."""
    ref, ref_grads = _run(gm, _clone(example_inputs), only_fwd)
    res, res_grads = _run(opt_gm, _clone(example_inputs), only_fwd)
    if not same(ref, res):
        return False
    if ref_grads is None or res_grads is None:
        return True
    return all((a is None and b is None) or (a is not None and b is not None and same(a, b))
               for a, b in zip(ref_grads, res_grads))
