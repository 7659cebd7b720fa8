"""The "inductor" backend: TorchInductor through its public fx-graph entry point.

Inductor's modules are imported when a graph is compiled, not when dynamo is
imported: loading them takes seconds.
"""
from .. import config
from . import kernel_timing
from .aot.hazards import _requires_grad_hazard
from .common import _fake_inputs
from .registry import register_backend


@register_backend("inductor")
def inductor(gm, example_inputs):
    """TorchInductor through its public fx-graph entry point, called as
    torch.compile calls it: with fake example inputs from a fake mode with
    a shape env (real ones make Inductor and AOT autograd bypass their
    on-disk caches, so every process compiled every graph again), and with
    the module's parameters and buffers, which AOT autograd lifts into
    leading inputs of the forward graph, marked static (see
    _static_lifted_inputs)."""
    from torch._inductor.compile_fx import compile_fx
    if _requires_grad_hazard(gm) is not None:
        return gm.forward       # Inductor drops it as aot does: the captured ops run eagerly
    try:
        inputs = _fake_inputs(example_inputs)
    except Exception:  # noqa: BLE001 - a tensor fake tensors cannot copy: the real inputs (no cache)
        inputs = example_inputs
    return compile_fx(gm, inputs, inner_compile=_static_lifted_inputs(len(example_inputs)))


def _static_lifted_inputs(num_graph_inputs):
    """Inductor's inner compiler, told that the forward graph's leading
    inputs (the parameters and buffers AOT autograd lifted out of the
    captured graph: every input before the captured graph's own
    `num_graph_inputs`) are static. AOT reports no static inputs for a
    graph it does not know as torch's own capture, and Inductor then
    treats every parameter as a user input: on a GPU each one gets an
    alignment check (and a clone when misaligned) on every call, and with
    Inductor's CUDA graphs a copy into the graph's memory per call. The
    backward graph keeps what Inductor computes for it."""
    def inner_compile(gm, example_inputs, **kwargs):
        from torch._inductor import compile_fx as cfx
        from torch._inductor.utils import num_fw_fixed_arguments
        if not kwargs.get("is_backward", False):
            fixed = num_fw_fixed_arguments(num_graph_inputs, len(example_inputs))
            kwargs["static_input_idxs"] = sorted(set(kwargs.get("static_input_idxs") or ())
                                                 | set(range(max(fixed, 0))))
        device_timing = config.inductor_kernel_timing == "device"
        start = kernel_timing.module_count() if device_timing else None
        compiled = cfx.compile_fx_inner(gm, example_inputs, **kwargs)
        if device_timing:
            kernel_timing.instrument_new_modules(start)
        return compiled
    return inner_compile
