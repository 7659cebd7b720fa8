"""torch's higher-order functions met by the trace, rewritten into plain
graph ops the tracer already records: torch._higher_order_ops'
associative_scan (transformers' Mamba under compile).

Each is traced only where the rewrite computes what eager computes, from
the function's documented semantics; any other use is Unsupported, so the
call runs eagerly after a graph break.  This module must not record a
higher-order node of its own nor run the function it is handed eagerly.
"""
import torch

from ...exc import Unsupported
from .base import ConstantVariable, VariableTracker
from .containers import BaseListVariable, ListVariable, TupleVariable
from .tensor import TensorVariable, static_shape


def _associative_scan():
    try:
        from torch._higher_order_ops.associative_scan import associative_scan
    except ImportError:          # an older torch: nothing to recognize
        return None
    return associative_scan


ASSOCIATIVE_SCAN = _associative_scan()


def is_higher_order_function(value):
    """True for a torch higher-order function this module traces."""
    return ASSOCIATIVE_SCAN is not None and value is ASSOCIATIVE_SCAN


def _bind(args, kwargs, names, defaults):
    """The arguments of a call by parameter name (positional first), the
    defaults filled in; Unsupported for an argument the signature lacks."""
    if len(args) > len(names) or set(kwargs) - set(names):
        raise Unsupported("associative_scan with unexpected arguments")
    bound = dict(zip(names, args))
    for name, value in kwargs.items():
        if name in bound:
            raise Unsupported(f"associative_scan got {name} twice")
        bound[name] = value
    for name, value in defaults.items():
        bound.setdefault(name, ConstantVariable(value))
    missing = [n for n in names if n not in bound]
    if missing:
        raise Unsupported(f"associative_scan without {missing[0]}")
    return bound


def _leaves(tree):
    """(tensor leaves, rebuild) of `tree`: one tensor, or a tuple/list of
    tensors; rebuild(leaves) makes the same structure from new leaves."""
    if isinstance(tree, TensorVariable):
        return [tree], lambda leaves: leaves[0]
    if isinstance(tree, BaseListVariable) and all(isinstance(v, TensorVariable) for v in tree.items):
        kind = ListVariable if isinstance(tree, ListVariable) else TupleVariable
        return list(tree.items), lambda leaves: kind(list(leaves))
    raise Unsupported("associative_scan over xs that are not a tensor or a tuple/list of tensors")


class AssociativeScanVariable(VariableTracker):
    """torch._higher_order_ops.associative_scan.associative_scan(combine_fn,
    xs, dim, reverse=False, combine_mode="pointwise").

    Its result is the inclusive scan: out[0] = x[0], out[i] =
    combine_fn(out[i-1], x[i]) along `dim` (from the end when `reverse`).
    Traced as that recurrence, one combine_fn call per element on the
    elements themselves (x.select(dim, i)), the results stacked along
    `dim`.  In "generic" mode torch runs combine_fn under torch.vmap over
    the scan dimension, which hands it exactly those per-element values;
    in "pointwise" mode (CUDA/XPU only, as torch checks) combine_fn is
    required to be pointwise, so applying it per element is the same.  The
    association order of the combines differs from torch's tree (rounding
    only); it is the order of the sequential loop libraries fall back to.
    torch's argument checks are made here: an argument torch rejects is
    Unsupported, so eager raises its own error."""

    def __init__(self, fn, source=None):
        super().__init__(source)
        self.fn = fn

    @property
    def value(self):
        return self.fn

    def python_type(self):
        return type(self.fn)

    def truth(self, tx):
        return True

    def call(self, tx, args, kwargs):
        bound = _bind(args, kwargs, ("combine_fn", "xs", "dim", "reverse", "combine_mode"),
                      {"reverse": False, "combine_mode": "pointwise"})
        try:
            dim = bound["dim"].as_python_constant()
            reverse = bound["reverse"].as_python_constant()
            mode = bound["combine_mode"].as_python_constant()
        except Unsupported:
            raise Unsupported("associative_scan with a non-constant dim, reverse or combine_mode")
        leaves, rebuild = _leaves(bound["xs"])
        length = self._check(leaves, dim, reverse, mode)
        dim = dim % leaves[0].example.dim()
        combine = bound["combine_fn"]
        out = tx.output

        def element(leaf, i):
            return out.call_function(tx, torch.select, [leaf, ConstantVariable(dim),
                                                        ConstantVariable(i)], {})
        order = range(length - 1, -1, -1) if reverse else range(length)
        acc = [element(leaf, order[0]) for leaf in leaves]
        steps = [acc]
        for i in order[1:]:
            result = combine.call(tx, [rebuild(acc), rebuild([element(leaf, i) for leaf in leaves])], {})
            acc, _ = _leaves(result)
            if len(acc) != len(leaves):
                raise Unsupported("associative_scan's combine_fn returned another structure than xs")
            steps.append(acc)
        if reverse:
            steps.reverse()
        stacked = [out.call_function(tx, torch.stack, [TupleVariable([s[j] for s in steps])],
                                     {"dim": ConstantVariable(dim)})
                   for j in range(len(leaves))]
        return rebuild(stacked)

    @staticmethod
    def _check(leaves, dim, reverse, mode):
        """torch's own checks of the arguments; the length of the scan."""
        if type(dim) is not int or type(reverse) is not bool or mode not in ("pointwise", "generic"):
            raise Unsupported("associative_scan with an invalid dim, reverse or combine_mode")
        examples = [leaf.example for leaf in leaves]
        if mode == "pointwise" and not all(x.device.type in ("cuda", "xpu") for x in examples):
            raise Unsupported("associative_scan in pointwise mode on a tensor not on CUDA/XPU")
        ndim = examples[0].dim()
        if not -ndim <= dim < ndim or any(x.dim() != ndim or x.is_sparse for x in examples):
            raise Unsupported("associative_scan: leaves of another rank than dim or sparse")
        lengths = {static_shape(x)[dim] for x in examples}
        if len(lengths) != 1 or 0 in lengths:
            raise Unsupported("associative_scan over leaves of unequal or empty length")
        return lengths.pop()

    def __repr__(self):
        return "AssociativeScanVariable()"
