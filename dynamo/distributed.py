"""DistributedDataParallel under dynamo: which code of a DDP model is
compiled, and which DDP is running a forward now.

DDP's own forward (broadcasting buffers, marking the reducer ready for a
backward, forward-sync flags, its profiling block) stays eager, as under
torch.compile: it is torch's code and its bookkeeping is per call.  What is
compiled is the forward of the module DDP wraps: optimize(ddp_model) forces
that code (a torch-defined module such as nn.Sequential included), and a
DDP module called inside a compiled frame is a graph break whose eager run
reaches the wrapped forward through the hook.  Gradients reach DDP's reducer
as eager's do: the compiled backward hands each parameter its gradient and
the reducer's hooks on gradient accumulation fire then.

Owns no state; reads torch's (`DistributedDataParallel._active_ddp_module`,
set by DDP around the wrapped module's call).  Must not import the tracer or
the backends (it is a service of both).
"""
import torch


def _ddp_class():
    """torch's DistributedDataParallel, or None where torch.distributed is
    not built."""
    if not torch.distributed.is_available():
        return None
    from torch.nn.parallel import DistributedDataParallel
    return DistributedDataParallel


def is_ddp(module):
    """True for a DistributedDataParallel instance."""
    cls = _ddp_class()
    return cls is not None and isinstance(module, cls)


def compiled_module(module):
    """The module whose forward optimize(module) compiles: the module DDP
    wraps (through nested wrappers), else `module` itself."""
    while is_ddp(module):
        module = module.module
    return module


def active_ddp_module():
    """The DDP whose forward is calling its wrapped module now (torch sets
    it around that call), else None."""
    cls = _ddp_class()
    if cls is None:
        return None
    return getattr(cls, "_active_ddp_module", None)
