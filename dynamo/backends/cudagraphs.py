"""The "cudagraphs" backend: AOT autograd graphs replayed as CUDA graphs.

Contract:
  * Forward and backward graphs come from AOT autograd (functional, so a
    replay has no side effect the runtime wrapper does not redo). Each one is
    captured into a `torch.cuda.CUDAGraph` on its first call and replayed on
    every later call: one launch instead of one per kernel.
  * A graph whose inputs are not all CUDA tensors (CPU tensors, numbers) is
    not captured: it runs as a plain fx graph (counted in `stats`).
  * Inputs: the capture reads fixed addresses. `nn.Parameter` inputs are
    captured in place (no copy per call); their address is checked on every
    call, and a parameter whose storage moved (`p.data = ...`) makes the graph
    be captured again. Every other input is copied into a buffer the backend
    owns before each replay.
  * Outputs live in the graph's memory pool, which the next replay
    overwrites: each call returns fresh copies, so results the caller keeps
    stay valid (the price is one device copy per output).

Ownership: a compiled callable owns its static input buffers, the CUDA graph
and its pool, and references the captured parameters (their storages stay
alive while the graph may read them). `stats` counts captures, recaptures,
replays and uncaptured (non-CUDA) graphs for tests and benchmarks.
"""
import torch

stats = {"captures": 0, "recaptures": 0, "replays": 0, "uncaptured": 0}


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
    """One CUDA graph of `gm` over fixed input addresses."""

    def __init__(self, gm, args):
        self.param = [isinstance(a, torch.nn.Parameter) for a in args]
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
        """Whether every captured parameter is still at its captured address."""
        for a, p, ptr in zip(args, self.param, self.ptrs):
            if p and a.data_ptr() != ptr:
                return False
        return True

    def run(self, args):
        for dst, src, p in zip(self.static, args, self.param):
            if not p:
                _span(dst).copy_(_span(src))
        self.graph.replay()
        stats["replays"] += 1
        out = [o.clone() if isinstance(o, torch.Tensor) else o for o in self.out]
        return out[0] if self.single else out


def cudagraphify(gm, example_inputs):
    """A boxed callable running `gm` as a CUDA graph (captured on its first
    call), or plainly when its inputs are not all CUDA tensors."""
    if not _capturable(example_inputs):
        stats["uncaptured"] += 1
        return _boxed(lambda args: gm(*args))
    state = []

    def run(args):
        if not state or not state[0].matches(args):
            stats["recaptures" if state else "captures"] += 1
            state[:] = [_Captured(gm, args)]
        return state[0].run(args)
    return _boxed(run)


def cudagraphs(gm, example_inputs):
    """AOT autograd with both graphs captured as CUDA graphs."""
    from torch._functorch.aot_autograd import aot_module_simplified
    return aot_module_simplified(gm, example_inputs, fw_compiler=cudagraphify,
                                 bw_compiler=cudagraphify)
