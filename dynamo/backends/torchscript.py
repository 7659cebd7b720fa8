"""The TorchScript backends: "ts" (torch.jit.trace of the graph, the default
fuser) and "nnc" (the same traced graph run with the NNC / TensorExpr fuser)."""
import torch

from .registry import register_backend


@register_backend("ts")
def ts(gm, example_inputs):
    """TorchScript: torch.jit.trace of the graph on its example inputs (run
    with the default fuser)."""
    return torch.jit.trace(gm, tuple(example_inputs), check_trace=False, strict=False)


@register_backend("nnc")
def nnc(gm, example_inputs):
    """TorchScript traced graph run with the NNC (TensorExpr) fuser."""
    traced = ts(gm, example_inputs)

    def run(*args):
        with torch.jit.fuser("fuser1"):
            return traced(*args)
    return run
