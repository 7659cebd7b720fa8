"""torch.autograd.Function subclasses met by the trace.

`Fn.apply(*args)` (also through an instance, `Fn().apply`, or a stored
`Fn.apply`) is traced by inlining `Fn.forward` when no gradient can flow
through the call: grad mode is off, or no tensor argument requires grad.
Then the call's result is exactly forward's (apply attaches no backward
node), and the `ctx` forward receives only collects what backward would
need: saved tensors, attributes, marks, all of which are dropped. When a
gradient could flow, backward would have to be part of the graph:
Unsupported (the call runs eagerly after a graph break).
"""
import torch

from ...exc import Unsupported
from .base import ConstantVariable, VariableTracker


def is_autograd_function(cls):
    return isinstance(cls, type) and issubclass(cls, torch.autograd.Function) and \
        cls is not torch.autograd.Function


def _uses_setup_context(cls):
    """New-style Functions: forward(*args) without ctx, plus setup_context."""
    base = torch.autograd.function._SingleLevelFunction.setup_context
    return getattr(cls.setup_context, "__func__", cls.setup_context) is not \
        getattr(base, "__func__", base)


class AutogradFunctionVariable(VariableTracker):
    """An autograd.Function subclass (`cls`), or an instance of it made by
    the traced code (Fn()): only `.apply` is traced."""

    def __init__(self, cls, source=None):
        super().__init__(source)
        self.cls = cls

    def python_type(self):
        return type(self.cls)

    def truth(self, tx):
        return True

    def var_getattr(self, tx, name):
        if name == "apply":
            return AutogradFunctionApplyVariable(self.cls)
        raise Unsupported(f"attribute {name} of autograd.Function {self.cls.__name__}")

    def reconstruct(self, cg):
        if self.source is None:
            raise Unsupported(f"cannot rebuild an instance of {self.cls.__name__}")
        cg.load_source(self.source)


class AutogradFunctionApplyVariable(VariableTracker):
    """`cls.apply`: calls inline cls.forward when no gradient can flow."""

    def __init__(self, cls, source=None):
        super().__init__(source)
        self.cls = cls

    def truth(self, tx):
        return True

    def call(self, tx, args, kwargs):
        from .containers import BaseListVariable, DictVariable
        from .functions import UserFunctionVariable
        from .tensor import TensorVariable
        cls = self.cls
        if tx.output.grad_enabled:
            stack, seen = list(args) + list(kwargs.values()), []
            while stack:
                v = stack.pop()
                if isinstance(v, TensorVariable):
                    seen.append(v)
                elif isinstance(v, BaseListVariable):
                    stack.extend(v.items)
                elif isinstance(v, DictVariable):
                    stack.extend(v.items.values())
            if any(v.example.requires_grad for v in seen):
                raise Unsupported(f"{cls.__name__}.apply on tensors that require grad "
                                  "(its backward cannot be part of the graph)")
        forward = cls.forward
        if not callable(forward) or not hasattr(forward, "__code__"):
            raise Unsupported(f"{cls.__name__}.forward is not a Python function")
        fn = UserFunctionVariable(forward)
        if _uses_setup_context(cls):
            return fn.call(tx, list(args), dict(kwargs))
        return fn.call(tx, [FunctionCtxVariable(len(args))] + list(args), dict(kwargs))

    def __repr__(self):
        return f"AutogradFunctionApplyVariable({self.cls.__name__})"


_CTX_NOOPS = {"save_for_backward", "save_for_forward", "mark_dirty", "mark_non_differentiable",
              "set_materialize_grads"}


class FunctionCtxVariable(VariableTracker):
    """The `ctx` of a forward run without autograd: records for backward
    are accepted and dropped; attributes stored on it read back."""

    def __init__(self, nargs):
        super().__init__(None)
        self.nargs = nargs
        self.attrs = {}

    def python_type(self):
        return torch.autograd.function.FunctionCtx

    def truth(self, tx):
        return True

    def var_getattr(self, tx, name):
        if name in self.attrs:
            return self.attrs[name]
        if name in _CTX_NOOPS:
            return _CtxMethod(name)
        if name == "needs_input_grad":
            from .containers import TupleVariable
            return TupleVariable([ConstantVariable(False)] * self.nargs)
        raise Unsupported(f"ctx.{name} in autograd.Function.forward")

    def store_attr(self, tx, name, value):
        self.attrs[name] = value

    def __repr__(self):
        return "FunctionCtxVariable()"


class _CtxMethod(VariableTracker):
    def __init__(self, name):
        super().__init__(None)
        self.name = name

    def call(self, tx, args, kwargs):
        return ConstantVariable(None)
