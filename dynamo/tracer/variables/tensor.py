"""TensorVariable: a tensor whose value is an fx node plus a fake example.

Metadata (shape, dtype, device, ndim, requires_grad, ...) is read from the
fake example and folded to constants; operations become fx nodes through
`tx.output`. Anything that needs the tensor's data (item, tolist, numpy,
bool, iteration) is Unsupported, which the caller turns into a graph break,
except on a tensor the graph made from Python numbers alone, whose value is
known at trace time (known_value: item(), tolist(), int(), a branch fold).
Exception: with `config.capture_scalar_outputs`, `Tensor.item()` is a graph
node whose value (a Python number) is a graph output. A float, bool or
complex one is a ScalarOutputVariable, which may be returned, stored,
passed on and used in arithmetic, but any other use that needs the number
itself (a branch, a shape) breaks the graph where it is used. An integer
one is an unbacked SymInt of the shape env (a SymNodeVariable, as
torch.compile makes it): also a size (`torch.zeros(n)`) or a slice bound;
a branch on it ends the graph with the relation as an output.
"""
import operator

import torch

from ...exc import Unsupported
from .base import ConstantVariable, VariableTracker

# read from the example and folded to constants
_META_ATTRS = {"dtype", "device", "ndim", "layout", "is_cuda", "is_sparse", "is_quantized",
               "is_meta", "requires_grad", "is_leaf", "is_mkldnn", "is_nested"}
# attributes that are tensors: recorded as getattr nodes
_TENSOR_ATTRS = {"T", "mT", "H", "mH", "real", "imag"}
# need data or autograd state the graph cannot provide
_DATA_METHODS = {"item", "tolist", "numpy", "backward", "__bool__", "data_ptr",
                 "__int__", "__float__", "__index__", "nonzero", "unique", "register_hook",
                 "retain_grad", "untyped_storage", "storage", "__len__", "__iter__",
                 "masked_select", "equal"}

# of those, the ones folded to a Python value when the tensor's value is
# known at trace time (TensorVariable.known_value)
_FOLDABLE = {"item", "tolist", "__bool__", "__int__", "__float__", "__index__"}


def _python_value(value):
    """The variable of `value` (a number or a nested list of numbers, from
    Tensor.item()/tolist()): lists are ListVariables, mutable as eager's."""
    if isinstance(value, list):
        from .containers import ListVariable
        return ListVariable([_python_value(v) for v in value])
    return ConstantVariable(value)


# ops whose output strides follow from the input's sizes and strides alone
# (views, and reshapes that copy into a contiguous tensor when they must)
_VIEW_OPS = frozenset({
    "view", "reshape", "flatten", "unflatten", "transpose", "swapaxes", "swapdims", "permute",
    "movedim", "unsqueeze", "squeeze", "expand", "t", "select", "narrow", "as_strided",
    "unfold", "diagonal", "getitem", "contiguous"})


def _strides_trusted(example):
    """A computed tensor's strides are the fake kernel's and eager's alike
    when no dim has size 0 or 1 (the rule _check_stride_known applies)."""
    return isinstance(example, torch.Tensor) and \
        all(type(d) is int and d > 1 for d in example.shape) and \
        all(type(d) is int for d in example.stride())


# factories whose result is contiguous with the standard strides (a size-1
# dim's stride the product of the sizes after it) on every device, unless
# a memory_format is asked for
_FACTORY_METHODS = frozenset({"new_ones", "new_zeros", "new_full", "new_empty"})
_FACTORY_FUNCTIONS = frozenset({"ones", "zeros", "full", "empty", "rand", "randn"})


# dtype conversions and clone: empty_like(preserve_format) then a copy in
# C++ code every device shares, so replayed on a meta tensor they give
# eager's strides (tests/test_conformance.py checks this on random strides)
_COPY_OPS = frozenset({"type_as", "to", "float", "double", "half", "bfloat16", "bool", "long",
                       "int", "short", "clone"})


def _contiguous_factory(node):
    if "memory_format" in node.kwargs:
        return False
    if node.op == "call_method":
        # out-of-place masked_fill clones its (broadcast) input into a
        # contiguous tensor on every device (checked like _COPY_OPS)
        return node.target in _FACTORY_METHODS or node.target == "masked_fill"
    name = getattr(node.target, "__name__", None)
    return node.op == "call_function" and name in _FACTORY_FUNCTIONS \
        and getattr(torch, name) is node.target


def _eager_view_strides(node):
    """The strides eager gives `node`'s value when it is a chain of _VIEW_OPS
    and _COPY_OPS over a root whose eager strides are known: a placeholder
    or get_attr node, a computed tensor with no dim of size 0 or 1
    (_strides_trusted), or a factory's result (standard contiguous
    strides: _contiguous_factory). The chain is replayed on a meta tensor
    of the root's sizes and strides (C++ view, reshape and copy rules,
    which every device shares); else None. Arguments are constants, except
    that a view/reshape may take its sizes from graph values (Longformer's
    `view(b, torch.div(n, 2 * w), ...)`): its result's static shape is
    then the size it was given."""
    from torch.fx.node import Node, map_aggregate
    end = node.meta.get("example_value")
    chain = []
    while node.op in ("call_method", "call_function"):
        if node.op == "call_method":
            name = node.target
        elif node.target is operator.getitem:
            name = "getitem"
        else:
            name = getattr(node.target, "__name__", None)
            if getattr(torch, name or "", None) is not node.target:
                break
        if name not in _VIEW_OPS and name not in _COPY_OPS or not node.args \
                or not isinstance(node.args[0], Node):
            break
        found = []
        map_aggregate((node.args[1:], node.kwargs),
                      lambda a: found.append(a) if isinstance(a, Node) else a)
        args, kwargs = node.args[1:], dict(node.kwargs)
        if name in _COPY_OPS and "memory_format" in kwargs:
            break
        if name == "type_as":
            other = node.args[1].meta.get("example_value") if len(node.args) == 2 \
                and isinstance(node.args[1], Node) else None
            if not isinstance(other, torch.Tensor):
                break
            name, args, found = "to", (other.dtype,), []
        if found:
            shape = getattr(node.meta.get("example_value"), "shape", None)
            if name not in ("view", "reshape") or kwargs or shape is None \
                    or not all(type(d) is int for d in shape):
                return None
            args = (tuple(shape),)
        chain.append((name, args, kwargs))
        node = node.args[0]
    root = node.meta.get("example_value")
    if not isinstance(root, torch.Tensor):
        return None
    factory = bool(chain) and _contiguous_factory(node) and all(type(d) is int for d in root.shape)
    if node.op not in ("placeholder", "get_attr") and not factory \
            and not (chain and _strides_trusted(root)):
        return None
    try:
        if factory:
            t = torch.empty(tuple(root.shape), dtype=root.dtype, device="meta")
        else:
            t = torch.empty_strided(tuple(root.shape), root.stride(), dtype=root.dtype, device="meta")
        for name, args, kwargs in reversed(chain):
            t = operator.getitem(t, *args) if name == "getitem" else \
                getattr(torch.Tensor, name)(t, *args, **kwargs)
    except Exception:           # a replay the meta kernels refuse: not known here
        return None
    if not isinstance(end, torch.Tensor) or tuple(t.shape) != tuple(end.shape):
        return None
    return tuple(t.stride())


def _exprs(values):
    """Ints and SymInts as comparable values (a SymInt by its expression:
    comparing SymInts themselves would install guards)."""
    return tuple(v.node.expr if isinstance(v, torch.SymInt) else v for v in values)


def static_shape(example):
    """example.shape as ints: a symbolic size of an input is specialized
    (the ShapeEnv guards its value); a size computed from the data
    (nonzero's length, an unbacked symbol of the fake run) is not a
    constant: a break."""
    shape = example.shape
    if all(type(d) is int for d in shape):
        return shape
    from torch.fx.experimental.symbolic_shapes import free_unbacked_symbols
    if free_unbacked_symbols(tuple(shape)):
        raise Unsupported(f"size of a tensor whose shape depends on its data {tuple(shape)}")
    from .symbolic import specialize
    return torch.Size(specialize(d) for d in shape)


def _has_symbolic_size(example):
    return not all(type(d) is int for d in example.shape)


class TensorVariable(VariableTracker):
    """A tensor in the graph: `node` (fx.Node), `example` (a fake tensor),
    `source` (graph inputs and parameters: where to reload it from)."""

    def __init__(self, node, example, source=None, cls=torch.Tensor):
        super().__init__(source)
        self.node = node
        self.example = example
        self.cls = cls

    def python_type(self):
        return self.cls

    def unpack(self, tx):
        """Iteration: one getitem node per row (the first dimension's size is
        a constant: a symbolic one is specialized)."""
        if tx.output.vmap_scope is not None:
            tx.output.vmap_scope.check_meta(self, "__iter__")
        if self.example.dim() == 0:
            raise Unsupported("iteration over a 0-d tensor")
        return [tx.output.call_function(tx, operator.getitem, [self, ConstantVariable(i)], {})
                for i in range(static_shape(self.example)[0])]

    def var_getattr(self, tx, name):
        from .functions import BoundMethodVariable
        if tx.output.vmap_scope is not None:
            tx.output.vmap_scope.check_meta(self, name)
        if name == "__class__":
            from .base import ClassVariable
            return ClassVariable(self.cls)
        if name == "shape":
            if _has_symbolic_size(self.example):
                return tx.output.call_method(tx, "size", [self], {})
            return ConstantVariable(static_shape(self.example))
        if name == "is_leaf":
            from ...output_graph import example_is_leaf
            return ConstantVariable(example_is_leaf(self.example))
        if name in _META_ATTRS:
            return ConstantVariable(getattr(self.example, name))
        if name in _TENSOR_ATTRS:
            return tx.output.call_function(tx, getattr, [self, ConstantVariable(name)], {})
        if name in ("grad", "data", "grad_fn", "_version", "_base"):
            raise Unsupported(f"tensor attribute .{name}")
        if callable(getattr(torch.Tensor, name, None)):
            return BoundMethodVariable(self, name)
        if not hasattr(self.cls, name) and not name.startswith("__") and \
                name not in getattr(self.real_tensor(tx), "__dict__", {}):
            # neither the tensor's class (TENSOR_MATCH guards it) nor, when
            # the trace holds it, the tensor object itself has it:
            # AttributeError, which hasattr() and getattr(t, name, default)
            # fold to a constant (an attribute set on the object after the
            # compile is not seen: docs/USER_GUIDE.md, "Known limits")
            from .kinds import ObservedAttributeError
            raise ObservedAttributeError(f"{self.cls.__name__} has no attribute {name!r}")
        raise Unsupported(f"tensor attribute .{name}")

    def known_value(self, tx):
        """The value of a tensor the graph computes from constants alone
        (GraphBuilder.input_free_value: no input, parameter, module, random
        draw; the numbers it was made from are constants of this trace,
        guarded where they were read), else None. Its item(), tolist(),
        int() and a branch on it fold to that value, as torch.compile's do
        (hf:tapas: `values.reshape(shape.tolist())` of `shape =
        torch.cat([torch.as_tensor([-1]), torch.as_tensor(size)])`; a
        distribution's argument check on Normal(0, 1))."""
        return tx.output.input_free_value(self)

    def known_truth(self, tx):
        """bool() of the tensor when its value is known (known_value) and
        has one element, else None."""
        value = self.known_value(tx)
        return bool(value) if value is not None and value.numel() == 1 else None

    def truth(self, tx):
        value = self.known_value(tx)
        if value is None:
            raise Unsupported("generic_jump TensorVariable()")
        if value.numel() != 1:
            raise Unsupported("truth of a tensor of more than one element")     # eager raises
        return bool(value)

    def real_tensor(self, tx):
        """The real tensor of a graph input or parameter/buffer (None for
        one the graph computes)."""
        node = self.node
        if node.op == "placeholder":
            return node.meta.get("real")
        if node.op == "get_attr":
            return tx.output.root.get(node.target)
        return None

    def call_method(self, tx, name, args, kwargs):
        if tx.output.vmap_scope is not None:
            tx.output.vmap_scope.check_meta(self, name)
        if name == "__len__":
            if self.example.dim() == 0:
                raise Unsupported("len() of a 0-d tensor")
            if type(self.example.shape[0]) is not int:
                return tx.output.call_method(tx, "size", [self, ConstantVariable(0)], {})
            return ConstantVariable(static_shape(self.example)[0])
        if name == "item" and not args and not kwargs and self.example.numel() == 1:
            from ... import config
            if config.capture_scalar_outputs:
                return tx.output.capture_item(tx, self)
        if name in _FOLDABLE and not args and not kwargs:
            value = self.known_value(tx)
            if value is not None:
                return _python_value(getattr(value, name)())
        if name in _DATA_METHODS:
            raise Unsupported(f"Tensor.{name}() needs the tensor's data")
        if name == "stride":
            known = self._stride_of_view(tx, args)
            if known is not None:
                return known
            self._check_stride_known(args)
        if name == "__getitem__":
            return tx.output.call_function(tx, operator.getitem, [self, args[0]], {})
        if name == "__setitem__":
            return tx.output.call_function(tx, operator.setitem, [self, *args], {})
        if name == "requires_grad_" and self._fresh_under_no_grad(tx):
            return tx.output.call_method(tx, name, [self, *args], kwargs)
        if name in ("requires_grad_", "retain_grad") or name.startswith("_"):
            if not name.startswith("__"):
                raise Unsupported(f"Tensor.{name}()")
        return tx.output.call_method(tx, name, [self, *args], kwargs)

    def _fresh_under_no_grad(self, tx):
        """`t.requires_grad_()` is a node of the graph when `t` is computed
        by the graph (not an input, parameter or buffer: flipping theirs is
        a write to the caller's tensor) and grad mode is off where it runs
        (a guarded part of the trace): `t` then has no autograd history
        and the call makes it a leaf exactly as eager does (transformers'
        MRA: `torch.zeros_like(q).requires_grad_()` under torch.no_grad()).
        The AOT backends and Inductor drop the call: they run such a graph's
        captured ops eagerly (backends/aot/hazards._requires_grad_hazard).
        With grad mode on it stays a break (the ops after it record autograd
        history from a leaf the graph made)."""
        return self.source is None and self.node.op not in ("placeholder", "get_attr") \
            and not tx.output.grad_enabled

    def _stride_of_view(self, tx, args):
        """`t.stride()` / `t.stride(d)` of a tensor made from a graph input or
        parameter by view and reshape ops with constant arguments
        (`x.view(...)`, `x[0]`, `x.transpose(0, 1)`): the strides eager
        gives, found by replaying those ops on a meta tensor with the
        input's sizes and strides (the C++ stride rules every device
        shares; fake tensors run Python reference kernels, which choose
        other strides for size-1 dims). None when `t` is not such a view,
        or when the stride asked for is the same either way."""
        if self.node.op == "placeholder" or len(args) > 1:
            return None
        strides = _eager_view_strides(self.node)
        if strides is None:
            return None
        if not all(type(s) is int for s in strides):
            # symbolic sizes: a stride is a SymInt of the input's sizes, so
            # never a constant. Where the fake kernel agrees, the stride is
            # read in the graph (a size node); where it does not, the
            # eager one is specialized (the ShapeEnv guards its value).
            if _exprs(strides) == _exprs(self.example.stride()):
                return None
            from .symbolic import specialize
            strides = tuple(specialize(s) for s in strides)
        if not args:
            return ConstantVariable(tuple(strides))
        d = args[0].as_python_constant() if args[0].is_python_constant() else None
        if not isinstance(d, int) or not -len(strides) <= d < len(strides):
            return None
        return ConstantVariable(strides[d])

    def _check_stride_known(self, args):
        """The stride of a size-0/1 dim of a computed tensor is the
        kernel's free choice: the fake (meta) kernels and eager's differ
        (`x * 1` of a (1, 4) tensor with strides (1, 1): meta says (4, 1),
        eager keeps (1, 1)). Reading one is a break, so it is read from
        the real tensor. Graph inputs' strides are guarded, so known."""
        if self.node.op == "placeholder":
            return
        shape = self.example.shape
        from torch.fx.experimental.symbolic_shapes import free_unbacked_symbols
        if free_unbacked_symbols(tuple(shape)):
            # whether a size computed from data is 0/1 is not known here
            raise Unsupported("stride of a tensor whose shape depends on its data")
        if len(args) == 1 and args[0].is_python_constant():
            d = args[0].as_python_constant()
            if isinstance(d, int) and -len(shape) <= d < len(shape) and shape[d] > 1 \
                    and 0 not in shape:
                return
        elif args or all(s > 1 for s in shape):
            return
        raise Unsupported("stride of a size-0/1 dim of a computed tensor (the kernel chooses it)")

    def reconstruct(self, cg):
        cg.load_tensor(self)

    def __repr__(self):
        return "TensorVariable()"


def _item_type(dtype):
    if dtype is torch.bool:
        return bool
    if dtype.is_complex:
        return complex
    return float if dtype.is_floating_point else int


class ScalarOutputVariable(VariableTracker):
    """The Python number `Tensor.item()` returns, captured as a call_method
    node (config.capture_scalar_outputs), or a number computed from such
    numbers by arithmetic. Its value exists only when the graph runs: it is
    a graph output (rebuilt like a computed tensor). Arithmetic and
    comparisons with numbers, other captured numbers and tensors are nodes
    (OutputGraph.scalar_op: their result's kind and shape do not depend on
    the value); anything else needing the number (a branch, a shape, a
    call) is Unsupported (the inherited defaults raise), which breaks the
    graph there."""

    def __init__(self, node, cls):
        super().__init__(None)
        self.node = node
        self.cls = cls                  # int, float, bool or complex

    def python_type(self):
        return self.cls

    def truth(self, tx):
        raise Unsupported("branch on a captured Tensor.item() value (its number is only "
                          "known when the graph runs)")

    def reconstruct(self, cg):
        cg.load_tensor(self)

    def __repr__(self):
        return f"ScalarOutputVariable({self.cls.__name__})"
