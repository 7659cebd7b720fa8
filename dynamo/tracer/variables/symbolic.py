"""SymNodeVariable: a Python int (float, bool) computed from symbolic sizes.

`x.size(0)`, `x.shape[1]`, `len(x)` of a dimension traced as a symbolic size
(dynamo/dynamic_shapes.py) are graph nodes whose example is a torch.SymInt
of the trace's ShapeEnv; arithmetic and comparisons on them and on
constants are nodes too (OutputGraph.sym_op), so `x.view(x.size(0) * 2, -1)`
keeps the size symbolic.  A branch on one (`if x.size(1) > 16`) is decided
on the example's value and the ShapeEnv records the relation that held: a
SHAPE_GUARD of the compile (shape_guards.produce), not a break.  Any other
use that needs the number (`range(n)`, a call into Python code that is not
traced, a container index) specializes it: `as_python_constant()` returns
the value and the ShapeEnv records `size == value`.  A number the graph
computes from data (an unbacked symbol) cannot be specialized: Unsupported.
"""
import torch

from ...exc import Unsupported
from .base import VariableTracker


class SymNodeVariable(VariableTracker):
    """`node`: the fx node computing the value; `example`: its SymInt,
    SymFloat or SymBool."""

    def __init__(self, node, example):
        super().__init__(None)
        self.node = node
        self.example = example

    def python_type(self):
        if isinstance(self.example, torch.SymBool):
            return bool
        return float if isinstance(self.example, torch.SymFloat) else int

    def is_python_constant(self):
        return False            # asking never specializes; as_python_constant does

    def as_python_constant(self):
        return specialize(self.example)

    def truth(self, tx):
        try:
            return bool(self.example)       # the ShapeEnv guards the relation that held
        except Exception as e:  # noqa: BLE001 - data-dependent: only the graph knows it
            raise Unsupported(f"branch on a size computed from data ({e.__class__.__name__})") from e

    def reconstruct(self, cg):
        cg.load_tensor(self)                # a graph output, like a computed tensor

    def __repr__(self):
        return f"SymNodeVariable({self.example})"


class SliceVariable(VariableTracker):
    """A slice with a symbolic bound (`t[:, :x.size(1)]`): indexing a
    tensor with it is a node whose slice holds the size nodes; any other
    use specializes the bounds."""

    def __init__(self, parts):
        super().__init__(None)
        self.parts = list(parts)            # start, stop[, step]: VTs

    def python_type(self):
        return slice

    def is_python_constant(self):
        return False

    def as_python_constant(self):
        return slice(*[p.as_python_constant() for p in self.parts])

    def reconstruct(self, cg):
        for p in self.parts:
            cg.reconstruct(p)
        cg.emit("BUILD_SLICE", arg=len(self.parts))

    def __repr__(self):
        return f"SliceVariable({self.parts})"


def make_slice(parts):
    """BUILD_SLICE / slice(): a constant slice, or a SliceVariable when a
    bound is a symbolic size."""
    from .base import ConstantVariable
    if any(isinstance(p, SymNodeVariable) for p in parts):
        return SliceVariable(parts)
    return ConstantVariable(slice(*[p.as_python_constant() for p in parts]))


def specialize(example):
    """The Python value of a SymInt/SymFloat/SymBool (the ShapeEnv records
    the equality as a guard); Unsupported for a value only the graph knows."""
    try:
        if isinstance(example, torch.SymBool):
            return bool(example)
        if isinstance(example, torch.SymFloat):
            return float(example)
        return int(example)
    except Exception as e:  # noqa: BLE001 - an unbacked symbol (from data)
        raise Unsupported(f"a size computed from data used as a Python number "
                          f"({e.__class__.__name__})") from e


def is_data_dependent(var):
    """Is `var` a SymNodeVariable whose value the graph computes from data
    (an integer Tensor.item(), or arithmetic on one): a branch on it ends
    the graph with it as an output, like a branch on a tensor."""
    if not isinstance(var, SymNodeVariable):
        return False
    from torch.fx.experimental.symbolic_shapes import free_unbacked_symbols
    return bool(free_unbacked_symbols(var.example))


def is_symbolic(value):
    """A SymInt/SymFloat/SymBool whose value is not a constant."""
    return isinstance(value, (torch.SymInt, torch.SymFloat, torch.SymBool)) and \
        not value.node.is_constant()
