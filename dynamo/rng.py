"""The random-number state a re-run puts back: torch's CPU generator and,
when CUDA is initialized, every CUDA device's default generator.

A graph that raises after drawing random numbers is re-run eagerly (a
deopt in resume.run_original, aot_eager's op-by-op replay); to draw what
eager draws, the re-run starts from the state before the graph. Saving only
the CPU state let a CUDA dropout re-run draw a different mask. Imports
nothing of dynamo.
"""
import torch


def save():
    """(CPU state, CUDA states or None): an opaque value for restore()."""
    cuda = None
    if torch.cuda.is_available() and torch.cuda.is_initialized():
        cuda = torch.cuda.get_rng_state_all()
    return torch.get_rng_state(), cuda


def restore(state):
    """Put back what save() returned."""
    cpu, cuda = state
    torch.set_rng_state(cpu)
    if cuda is not None:
        torch.cuda.set_rng_state_all(cuda)


_seeded = {}        # name -> draws_random(name)


def draws_random(name):
    """Is `name` (a torch function's or method's, or a module class's in
    lower case) the name of an aten op that draws random numbers (tagged
    nondeterministic_seeded: rand, dropout, bernoulli_, ...)? A name-based
    reading: a torch function named unlike its aten op is missed."""
    if name not in _seeded:
        try:
            op = getattr(torch.ops.aten, name.lstrip("_"), None)
        except Exception:  # noqa: BLE001 - no such op
            op = None
        _seeded[name] = op is not None and any(
            torch.Tag.nondeterministic_seeded in getattr(op, o).tags for o in op.overloads())
    return _seeded[name]
