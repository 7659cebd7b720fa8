"""torch's higher-order functions met by the trace, rewritten into plain
graph ops the tracer already records: torch._higher_order_ops'
associative_scan (transformers' Mamba under compile), as its recurrence,
and torch.vmap of a function whose every op computes per element what it
computes on the batch (transformers' vmapped mask functions, T5Gemma2),
traced once on the batch (VmapScope checks each op).

Each is traced only where the rewrite computes what eager computes, from
the function's documented semantics; any other use is Unsupported, so the
call runs eagerly after a graph break.  This module must not record a
higher-order node of its own nor run the function it is handed eagerly.
"""
import torch

from ...exc import Unsupported
from ...rng import draws_random
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
    return (ASSOCIATIVE_SCAN is not None and value is ASSOCIATIVE_SCAN) or value is torch.vmap


def wrap_higher_order(value, source):
    """The VT of a function of is_higher_order_function."""
    if value is torch.vmap:
        return VmapMakerVariable(value, source)
    return AssociativeScanVariable(value, source)


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
        first_node = len(out.graph.nodes)
        acc = [element(leaf, order[0]) for leaf in leaves]
        steps = [acc]
        for i in order[1:]:
            result = combine.call(tx, [rebuild(acc), rebuild([element(leaf, i) for leaf in leaves])], {})
            acc, _ = _leaves(result)
            if len(acc) != len(leaves):
                raise Unsupported("associative_scan's combine_fn returned another structure than xs")
            steps.append(acc)
        if any(draws_random(n.target if n.op == "call_method" else getattr(n.target, "__name__", ""))
               for n in list(out.graph.nodes)[first_node:]):
            # eager runs combine_fn under vmap (randomness="error"): it raises
            raise Unsupported("associative_scan's combine_fn draws random numbers")
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


# ---------------------------------------------------------------- torch.vmap
#
# vmap(f)(*args) is traced by calling f once on the arguments with their
# batch dimensions moved in front (one per nested vmap, size 1 for an
# argument not mapped at that level), where that provably computes what f
# computes per element (VmapScope.check): every op f makes on a mapped
# tensor is elementwise, so the batch dims broadcast through it as one
# more leading dim each.  The result is then expanded to the batch sizes,
# as vmap's out_dims=0 stacks it.

_ELEMENTWISE = frozenset((
    "add", "sub", "subtract", "mul", "multiply", "div", "divide", "true_divide", "floor_divide",
    "remainder", "fmod", "pow", "eq", "ne", "lt", "le", "gt", "ge", "greater", "greater_equal",
    "less", "less_equal", "not_equal", "logical_and", "logical_or", "logical_xor", "logical_not",
    "bitwise_and", "bitwise_or", "bitwise_xor", "bitwise_not", "where", "maximum", "minimum",
    "abs", "absolute", "neg", "negative", "exp", "log", "sqrt", "rsqrt", "sin", "cos", "tanh",
    "sigmoid", "clamp", "clip", "sign", "floor", "ceil", "round", "trunc", "isnan", "isinf",
    "isfinite", "and_", "or_", "xor", "truediv", "floordiv", "mod", "invert", "pos",
    "__and__", "__or__", "__xor__", "__invert__", "__eq__", "__ne__", "__lt__", "__le__",
    "__gt__", "__ge__", "__add__", "__sub__", "__mul__", "__truediv__", "__floordiv__",
    "__mod__", "__pow__", "__neg__", "__abs__", "__radd__", "__rsub__", "__rmul__",
    "__rtruediv__", "__rand__", "__ror__", "__rxor__"))
# methods that only change dtype or device: shape-preserving, one operand
_CONVERSIONS = frozenset(("to", "type", "bool", "long", "int", "float", "double", "half",
                          "short", "clone", "contiguous"))
# methods making a new tensor from constant sizes: not mapped (vmap returns
# an unbatched tensor from them too)
_FACTORIES = frozenset(("new_ones", "new_zeros", "new_full", "new_empty", "new_tensor"))
_INT_DTYPES = (torch.int64, torch.int32, torch.int16, torch.int8, torch.uint8)


def _op_name(fn):
    """The elementwise name of call target `fn` (a method name, an operator
    function, a torch function), or None."""
    import builtins
    import operator
    if isinstance(fn, str):
        return fn
    name = getattr(fn, "__name__", None)
    if name is None:
        return None
    if any(getattr(home, name, None) is fn for home in (operator, torch, builtins)):
        return name
    return None


def _tensor_operands(values):
    """The TensorVariables among `values`, looking into tuples and lists."""
    out = []
    for v in values:
        if isinstance(v, TensorVariable):
            out.append(v)
        elif isinstance(v, BaseListVariable):
            out.extend(_tensor_operands(v.items))
    return out


class VmapScope:
    """The mapped tensors of one vmap call being traced (OutputGraph.vmap_scope):
    `batched` holds the nodes whose `levels` leading dims are batch dims."""

    def __init__(self, levels, nodes):
        self.levels = levels
        self.batched = set(nodes)

    def is_batched(self, var):
        return isinstance(var, TensorVariable) and var.node in self.batched

    def check_meta(self, var, name):
        """Reading `name` of mapped tensor `var` (its shape, rank, ...):
        eager's f sees the element's, not the batch's: Unsupported."""
        if self.is_batched(var) and name in ("shape", "ndim", "size", "dim", "numel", "__len__",
                                             "stride", "__iter__", "T", "mT", "H", "mH", "item",
                                             "tolist", "unbind", "split", "chunk"):
            raise Unsupported(f"vmap: {name} of a mapped tensor inside the vmapped function")

    def check_opaque(self, what, args, kwargs):
        """A call the scope cannot see into (a module) on mapped tensors:
        Unsupported."""
        if any(self.is_batched(t) for t in _tensor_operands([*args, *kwargs.values()])):
            raise Unsupported(f"vmap: {what} called on a mapped tensor")
        if draws_random(what.lower()):
            raise Unsupported(f"vmap: {what} draws random numbers inside the vmapped function")

    def check(self, fn, args, kwargs, unsqueeze):
        """May op `fn` (a method name or a callable) on these operands be
        recorded: (True when its result is mapped, the arguments to record
        it with); Unsupported where the op is not provably the same per
        element. Mapped operands of lower element rank than the others get
        size-1 dims after the batch dims (`unsqueeze(var, dim)` records one
        on a mapped tensor), as broadcasting pads an element's shape on
        the left."""
        name = _op_name(fn)
        if draws_random(name or getattr(fn, "__name__", "")):
            # eager draws per element ("different") or raises ("error")
            raise Unsupported(f"vmap: {name} draws random numbers inside the vmapped function")
        operands = _tensor_operands([*args, *kwargs.values()])
        batched = [t for t in operands if self.is_batched(t)]
        if not batched:
            return False, args, kwargs
        if name in _FACTORIES and len(batched) == 1 and batched[0] is args[0] and len(operands) == 1:
            return False, args, kwargs
        if name in _CONVERSIONS and self.is_batched(args[0]):
            return True, args, kwargs
        if fn is torch.ops.aten.index.Tensor:
            return True, self._index_args(args, unsqueeze), kwargs
        if name not in _ELEMENTWISE or "out" in kwargs or \
                name == "where" and len(args) + len(kwargs) != 3:      # where(c): nonzero
            raise Unsupported(f"vmap: {name or fn} on a mapped tensor (only elementwise ops, "
                              "conversions and indexing an unmapped tensor are traced)")
        if len(operands) > 1:
            self._check_promotion(fn, args, kwargs)
        rank = self._element_rank(operands)
        args = [self._align(v, rank, unsqueeze) for v in args]
        kwargs = {n: self._align(v, rank, unsqueeze) for n, v in kwargs.items()}
        return True, args, kwargs

    def _element_rank(self, tensors):
        """The rank of the elements an elementwise op on `tensors` makes."""
        return max(t.example.dim() - (self.levels if self.is_batched(t) else 0) for t in tensors)

    def _align(self, var, rank, unsqueeze):
        if not self.is_batched(var):
            return var
        for _ in range(rank - (var.example.dim() - self.levels)):
            var = unsqueeze(var, self.levels)
        return var

    def _index_args(self, args, unsqueeze):
        """aten.index(x, indices) with an unmapped x and integer tensor
        indices: per element it gathers x at the element's indices
        (broadcast together), which is what it gathers at once."""
        x, indices = args[0], args[1]
        if self.is_batched(x) or not isinstance(indices, BaseListVariable) or \
                len(indices.items) > x.example.dim():
            raise Unsupported("vmap: indexing a mapped tensor")
        items = indices.items
        if not all(isinstance(t, TensorVariable) and t.example.dtype in _INT_DTYPES for t in items):
            raise Unsupported("vmap: indexing with indices that are not integer tensors")
        rank = self._element_rank(items)
        return [x, ListVariable([self._align(t, rank, unsqueeze) for t in items]), *args[2:]]

    def _check_promotion(self, fn, args, kwargs):
        """Type promotion tells 0-d tensors from others: the result dtype
        of the op on the elements (mapped tensors at their element's rank)
        must be the one on the batch (mapped tensors of at least one dim)."""
        def stand_in(v, per_element):
            if isinstance(v, TensorVariable):
                rank = v.example.dim()
                if self.is_batched(v):
                    rank = rank - self.levels if per_element else max(rank, self.levels + 1)
                return torch.empty([1] * rank, dtype=v.example.dtype, device="meta")
            if isinstance(v, BaseListVariable):
                return v.python_type()(stand_in(i, per_element) for i in v.items)
            return v.as_python_constant()

        def run(per_element):
            a = [stand_in(v, per_element) for v in args]
            k = {n: stand_in(v, per_element) for n, v in kwargs.items()}
            return getattr(a[0], fn)(*a[1:], **k) if isinstance(fn, str) else fn(*a, **k)
        try:
            same = run(True).dtype == run(False).dtype
        except Exception:  # noqa: BLE001 - not decidable on stand-ins: not traced
            same = False
        if not same:
            raise Unsupported(f"vmap: {_op_name(fn)} promotes types differently per element")


def _dims_per_arg(dims, count, what):
    """in_dims / out_dims of one vmap as one int-or-None per argument."""
    if dims is None or type(dims) is int:
        return [dims] * count
    if isinstance(dims, (tuple, list)) and len(dims) == count and \
            all(d is None or type(d) is int for d in dims):
        return list(dims)
    raise Unsupported(f"vmap with {what}={dims!r} (only an int, None or a flat tuple of them)")


def _rebuild_vmap(func, in_dims, out_dims, randomness, chunk_size):
    """The rewritten code's way back to a vmap the trace made."""
    return torch.vmap(func, in_dims, out_dims, randomness, chunk_size=chunk_size)


class VmapVariable(VariableTracker):
    """torch.vmap(func, in_dims, out_dims, ...) made by the traced code; a
    call traces func once on the batch (see the section's comment)."""

    def __init__(self, func, in_dims, out_dims, options):
        super().__init__(None)
        self.func = func
        self.in_dims = in_dims
        self.out_dims = out_dims
        self.options = options          # randomness, chunk_size: constants

    def reconstruct(self, cg):
        cg.load_const(_rebuild_vmap)
        cg.reconstruct(self.func)
        cg.load_const(self.in_dims)
        cg.load_const(self.out_dims)
        for value in self.options:
            cg.load_const(value)
        cg.call(3 + len(self.options))

    def call(self, tx, args, kwargs):
        out = tx.output
        if out.vmap_scope is not None:
            raise Unsupported("vmap: a vmap inside a vmapped function")
        levels, f = [], self
        while isinstance(f, VmapVariable):
            levels.append(f)
            f = f.func
        dims = [_dims_per_arg(lvl.in_dims, len(args), "in_dims") for lvl in levels]
        if any(lvl.out_dims != 0 for lvl in levels):
            raise Unsupported("vmap with out_dims other than 0")
        sizes = [None] * len(levels)
        moved = [self._move(tx, a, [d[j] for d in dims], sizes) for j, a in enumerate(args)]
        if None in sizes:
            raise Unsupported("vmap: a level maps over no tensor")   # eager raises
        scope = VmapScope(len(levels), [a.node for a in moved if isinstance(a, TensorVariable)])
        out.vmap_scope = scope
        try:
            result = f.call(tx, moved, kwargs)
        finally:
            out.vmap_scope = None
        if isinstance(result, TupleVariable):
            return TupleVariable([self._stack(tx, scope, r, sizes) for r in result.items])
        return self._stack(tx, scope, result, sizes)

    @staticmethod
    def _move(tx, arg, col, sizes):
        """`arg` with one leading dim per level: its mapped dim moved there,
        or a new size-1 dim where that level does not map it."""
        if not isinstance(arg, TensorVariable):
            if any(d is not None for d in col):
                raise Unsupported("vmap over an argument that is not a tensor")
            return arg
        out, x = tx.output, arg
        for m, d in enumerate(col):
            rank = x.example.dim() - m
            if d is None:
                x = out.call_method(tx, "unsqueeze", [x, ConstantVariable(m)], {})
                continue
            if not -rank <= d < rank:
                raise Unsupported("vmap: in_dims out of range")       # eager raises
            d = m + d % rank
            size = static_shape(x.example)[d]
            if sizes[m] not in (None, size):
                raise Unsupported("vmap: mapped sizes differ")      # eager raises
            sizes[m] = size
            if d != m:
                x = out.call_method(tx, "movedim", [x, ConstantVariable(d), ConstantVariable(m)], {})
        return x

    @staticmethod
    def _stack(tx, scope, result, sizes):
        """vmap's output (out_dims 0 at every level) from f's result on
        the batch: expanded to the batch sizes (a result that does not
        depend on a level is the same for each of its elements)."""
        if not isinstance(result, TensorVariable):
            raise Unsupported("vmap: the function returned something other than tensors")
        out, levels = tx.output, len(sizes)
        if not scope.is_batched(result):
            for _ in range(levels):
                result = out.call_method(tx, "unsqueeze", [result, ConstantVariable(0)], {})
        shape = list(static_shape(result.example))
        target = list(sizes) + shape[levels:]
        if shape == target:
            return result
        return out.call_method(tx, "expand", [result, *map(ConstantVariable, target)], {})

    def __repr__(self):
        return f"VmapVariable({self.func}, in_dims={self.in_dims})"


class VmapMakerVariable(VariableTracker):
    """torch.vmap / torch.func.vmap itself."""

    def __init__(self, fn, source=None):
        super().__init__(source)
        self.fn = fn

    @property
    def value(self):
        return self.fn

    def python_type(self):
        return type(self.fn)

    def call(self, tx, args, kwargs):
        names = ("func", "in_dims", "out_dims", "randomness", "chunk_size")
        if len(args) > len(names) or set(kwargs) - set(names):
            raise Unsupported("vmap with unexpected arguments")
        bound = dict(zip(names, args))
        bound.update(kwargs)
        if "func" not in bound:
            raise Unsupported("vmap without a function")
        try:
            in_dims = bound["in_dims"].as_python_constant() if "in_dims" in bound else 0
            out_dims = bound["out_dims"].as_python_constant() if "out_dims" in bound else 0
            randomness = bound["randomness"].as_python_constant() if "randomness" in bound else "error"
            # chunks change the memory used, not the result
            chunk_size = bound["chunk_size"].as_python_constant() if "chunk_size" in bound else None
        except Unsupported:
            raise Unsupported("vmap with non-constant in_dims, out_dims or randomness")
        if randomness not in ("error", "different", "same"):
            raise Unsupported(f"vmap with randomness={randomness!r}")     # eager raises
        # random ops are not elementwise ops of VmapScope: never traced,
        # whatever `randomness` says
        return VmapVariable(bound["func"], in_dims, out_dims, (randomness, chunk_size))

    def __repr__(self):
        return "VmapMakerVariable()"


# ---------------------------------------------------------------- TransformGetItemToIndex
def is_getitem_to_index_mode(cls):
    """torch's TransformGetItemToIndex (a TorchFunctionMode that flex
    attention and transformers' vmapped masks run under), recognized by
    its name and home module."""
    from torch.overrides import TorchFunctionMode
    return isinstance(cls, type) and issubclass(cls, TorchFunctionMode) and \
        cls.__qualname__ == "TransformGetItemToIndex" and \
        (cls.__module__ or "").endswith("._trace_wrapped_higher_order_op")


class GetItemToIndexVariable(VariableTracker):
    """`with TransformGetItemToIndex():` made in the frame: inside the
    block a tensor indexed by tensors and ints (`x[i, j]`) is
    aten.index(x, [i, j]) with the ints made 0-d int64 tensors, as the
    mode's __torch_function__ does (OutputGraph.getitem_to_index counts
    the open blocks). Every other op is the mode's pass-through. No break
    inside the block (its state is not handed on)."""

    def __init__(self, cls):
        super().__init__(None)
        self.cls = cls

    def python_type(self):
        return self.cls

    def enter(self, tx):
        tx.output.getitem_to_index += 1

    def exit(self, tx):
        tx.output.getitem_to_index -= 1

    def __repr__(self):
        return "GetItemToIndexVariable()"


def getitem_to_index_block(tx, cls, args, kwargs):
    """GetItemToIndexVariable for TransformGetItemToIndex(), else None."""
    if not is_getitem_to_index_mode(cls) or args or kwargs:
        return None
    return GetItemToIndexVariable(cls)


def _index_leaves(key):
    """The leaves of an index as torch's pytree flattens it (tuples and
    lists opened, None dropped), or None if it holds anything else than
    tensors and int constants (a slice, Ellipsis, ...)."""
    if isinstance(key, BaseListVariable):
        out = []
        for item in key.items:
            leaves = _index_leaves(item)
            if leaves is None:
                return None
            out.extend(leaves)
        return out
    if isinstance(key, TensorVariable):
        return [key]
    if key.is_python_constant():
        value = key.as_python_constant()
        if value is None:
            return []
        if isinstance(value, int):
            return [key]
    return None


def getitem_as_index(tx, tensor, key):
    """`tensor[key]` inside a TransformGetItemToIndex block: the
    aten.index node the mode makes, or None where the mode passes the
    getitem through (an index that is not all tensors and ints)."""
    leaves = _index_leaves(key)
    if leaves is None:
        return None
    out = tx.output
    converted = [v if isinstance(v, TensorVariable) else out.call_function(
        tx, torch.tensor, [v], {"dtype": ConstantVariable(torch.int64),
                                "device": ConstantVariable(tensor.example.device)})
        for v in leaves]
    return out.call_function(tx, torch.ops.aten.index.Tensor, [tensor, ListVariable(converted)], {})
