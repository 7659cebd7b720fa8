"""Backends that generate no code: for checking a capture, or AOT autograd's
decompositions, apart from a compiler.

`eager` runs the captured graph as it is (the reference every other backend
is compared with); `aot_inductor_debug` runs AOT autograd's graphs, made with
TorchInductor's decompositions, with eager kernels (the AOT adapter of
backends/aot/).
"""
from .aot import _aot
from .registry import register_backend


@register_backend("eager")
def eager(gm, example_inputs):
    """Run the captured graph with PyTorch eager kernels."""
    return gm.forward


@register_backend("aot_inductor_debug")
def aot_inductor_debug(gm, example_inputs):
    """AOT autograd with TorchInductor's decompositions, graphs run with
    eager kernels (checks the decompositions without compiling code)."""
    from torch._inductor.decomposition import select_decomp_table
    return _aot(gm, example_inputs, decompositions=select_decomp_table())
