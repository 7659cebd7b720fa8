"""The "cudagraphs" backend: AOT autograd graphs replayed as CUDA graphs.

Contract:
  * Forward and backward graphs come from AOT autograd (functional, so a
    replay has no side effect the runtime wrapper does not redo). Each one is
    captured into a `torch.cuda.CUDAGraph` on its first call and replayed on
    every later call: one launch instead of one per kernel.
  * A graph whose inputs are not all CUDA tensors (CPU tensors, numbers) is
    not captured: it runs as a plain fx graph (counted in `stats`).
  * Inputs: the capture reads fixed addresses. The module's own tensors
    (the parameters and buffers AOT autograd lifts into the forward graph's
    leading inputs, e.g. BatchNorm's running statistics) and any other
    `nn.Parameter` input are captured in place (no copy per call); their
    address is checked on every call, and one whose storage moved
    (`p.data = ...`) makes the graph be captured again. Every other input is
    copied into a buffer the backend owns before each replay (counted in
    `stats["input_copies"]`).
  * Outputs live in the graph's memory pool, which the next replay
    overwrites: each call returns fresh copies, so results the caller keeps
    stay valid (the price is one device copy per output).

Ownership: a compiled callable owns its static input buffers, the CUDA graph
and its pool, and references the captured parameters (their storages stay
alive while the graph may read them). `stats` counts captures, recaptures,
replays and uncaptured (non-CUDA) graphs for tests and benchmarks.
"""
import torch

from .registry import register_backend

stats = {"captures": 0, "recaptures": 0, "replays": 0, "uncaptured": 0, "input_copies": 0}


def reset_stats():
    for k in stats:
        stats[k] = 0


def _boxed(fn):
    fn._boxed_call = True          # AOT autograd passes the arguments as one list
    return fn


def _capturable(example_inputs):
    return bool(example_inputs) and all(
        isinstance(x, torch.Tensor) and x.is_cuda for x in example_inputs)


def _span(t):
    """The stretch of `t`'s storage its elements occupy, as a 1-d view: an
    input is copied span to span, which also works when its elements
    overlap (an expanded tensor, stride 0), where an element copy cannot."""
    n = 1 + sum((size - 1) * stride for size, stride in zip(t.size(), t.stride())) \
        if t.numel() else 0
    return t.as_strided((n,), (1,), t.storage_offset())


class _Captured:
    """One CUDA graph of `gm` over fixed input addresses; the first
    `num_fixed` inputs (and every nn.Parameter) are read in place."""

    def __init__(self, gm, args, num_fixed=0):
        self.param = [i < num_fixed or isinstance(a, torch.nn.Parameter)
                      for i, a in enumerate(args)]
        self.static = [a if p else torch.empty_strided(a.size(), a.stride(), dtype=a.dtype,
                                                        device=a.device)
                       for a, p in zip(args, self.param)]
        self.ptrs = [a.data_ptr() for a in self.static]
        for dst, src, p in zip(self.static, args, self.param):
            if not p:
                _span(dst).copy_(_span(src))
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side), torch.no_grad():
            for _ in range(2):             # lazy inits (cuBLAS handles, workspaces) stay out of the graph
                gm(*self.static)
        torch.cuda.current_stream().wait_stream(side)
        self.graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(self.graph), torch.no_grad():
            out = gm(*self.static)
        self.single = not isinstance(out, (list, tuple))
        self.out = [out] if self.single else list(out)

    def matches(self, args):
        """Whether every input read in place is still at its captured address."""
        for a, p, ptr in zip(args, self.param, self.ptrs):
            if p and a.data_ptr() != ptr:
                return False
        return True

    def run(self, args):
        for dst, src, p in zip(self.static, args, self.param):
            if not p:
                _span(dst).copy_(_span(src))
                stats["input_copies"] += 1
        self.graph.replay()
        stats["replays"] += 1
        out = [o.clone() if isinstance(o, torch.Tensor) else o for o in self.out]
        return out[0] if self.single else out


def cudagraphify(gm, example_inputs, num_fixed=0):
    """A boxed callable running `gm` as a CUDA graph (captured on its first
    call), or plainly when its inputs are not all CUDA tensors. Its first
    `num_fixed` inputs have fixed addresses (read in place)."""
    if not _capturable(example_inputs):
        stats["uncaptured"] += 1
        return _boxed(lambda args: gm(*args))
    state = []

    def run(args):
        if not state or not state[0].matches(args):
            stats["recaptures" if state else "captures"] += 1
            state[:] = [_Captured(gm, args, num_fixed)]
        return state[0].run(args)
    return _boxed(run)


@register_backend("cudagraphs")
def cudagraphs(gm, example_inputs):
    """AOT autograd with both graphs captured as CUDA graphs. The forward
    graph's inputs before the captured graph's own are the parameters and
    buffers AOT lifted: fixed addresses, read in place."""
    from torch._functorch.aot_autograd import aot_module_simplified
    from torch._inductor.utils import num_fw_fixed_arguments
    num_graph_inputs = len(example_inputs)

    def forward(fw_gm, fw_inputs):
        return cudagraphify(fw_gm, fw_inputs,
                            max(num_fw_fixed_arguments(num_graph_inputs, len(fw_inputs)), 0))
    return aot_module_simplified(gm, example_inputs, fw_compiler=forward,
                                 bw_compiler=cudagraphify)
