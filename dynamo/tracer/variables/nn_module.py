"""nn.Module values: submodules, parameters and buffers, and module calls.

Policy (documented in the report and ARCHITECTURE.md):
- the module reached from a frame value is guarded by ID_MATCH and an
  EQUALS_MATCH on its `training` flag; submodules are reached through it and
  assumed not to be replaced between calls (like early TorchDynamo's
  NN_MODULE guard); leaf modules called as call_module and every `training`
  read add a `training` guard of their own;
- parameters and buffers become get_attr nodes on the GraphModule (shared
  objects, so optimizers and BatchNorm running stats see the same tensors);
- calling a standard torch.nn leaf module (class defined in torch.nn.modules,
  not a container) records a call_module node; calling any other module
  inlines its forward;
- a module with any forward hook or pre-hook (its own or global) is
  Unsupported at the call: the call runs eagerly after a graph break.
"""
import inspect

import torch

from ...exc import Unsupported
from ...guards import EQUALS_MATCH, AttrSource, ItemSource
from .base import ClassVariable, ConstantVariable, VariableTracker

_CONTAINERS = (torch.nn.Sequential, torch.nn.ModuleList, torch.nn.ModuleDict,
               torch.nn.ParameterList, torch.nn.ParameterDict)


def is_leaf_module(mod):
    """Standard torch.nn modules recorded as call_module nodes."""
    return type(mod).__module__.startswith("torch.nn.modules") and not isinstance(mod, _CONTAINERS)


def has_hooks(mod):
    from torch.nn.modules import module as m
    return bool(mod._forward_hooks or mod._forward_pre_hooks or mod._backward_hooks
                or getattr(mod, "_backward_pre_hooks", None)
                or m._global_forward_hooks or m._global_forward_pre_hooks
                or m._global_backward_hooks or getattr(m, "_global_backward_pre_hooks", None))


class NNModuleVariable(VariableTracker):
    """An nn.Module with the source it is reachable from."""

    def __init__(self, module, source):
        super().__init__(source)
        self.module = module

    def python_type(self):
        return type(self.module)

    def as_python_constant(self):
        raise Unsupported("a module is not a constant")

    def truth(self, tx):
        return True

    @property
    def value(self):
        return self.module

    def guard_training(self, tx):
        tx.output.add_guard(AttrSource(self.source, "training"), EQUALS_MATCH, self.module.training)

    def var_getattr(self, tx, name):
        from .builder import wrap
        from .builtin import ObservedAttributeError
        from .functions import UserFunctionVariable, UserMethodVariable
        mod = self.module
        src = AttrSource(self.source, name)
        if name == "training":
            self.guard_training(tx)
            return ConstantVariable(mod.training)
        if name == "__class__":
            return ClassVariable(type(mod))
        d = mod.__dict__
        for table in ("_parameters", "_buffers"):
            if name in d.get(table, {}):
                value = d[table][name]
                if value is None:
                    return ConstantVariable(None)
                return tx.output.get_attr(value, src)
        if name in d.get("_modules", {}):
            sub = d["_modules"][name]
            return ConstantVariable(None) if sub is None else NNModuleVariable(sub, src)
        if name in d:
            return wrap(tx, d[name], src)
        try:
            static = inspect.getattr_static(mod, name)
        except AttributeError:
            raise ObservedAttributeError(f"{type(mod).__name__} has no attribute {name!r}") from None
        if isinstance(static, staticmethod):
            return UserFunctionVariable(static.__func__)
        if isinstance(static, classmethod):
            return UserMethodVariable(static.__func__, ClassVariable(type(mod)))
        if isinstance(static, property):
            return UserFunctionVariable(static.fget).call(tx, [self], {})
        if inspect.isfunction(static):
            return UserMethodVariable(static, self)
        return wrap(tx, getattr(mod, name), src)

    def call(self, tx, args, kwargs):
        mod = self.module
        if has_hooks(mod):
            raise Unsupported(f"calling {type(mod).__name__} with forward/backward hooks")
        if is_leaf_module(mod):
            self.guard_training(tx)
            return tx.output.call_module(tx, mod, self.source, list(args), dict(kwargs))
        if "forward" in mod.__dict__:
            raise Unsupported(f"{type(mod).__name__} instance with its own forward attribute")
        from .functions import UserFunctionVariable
        forward = type(mod).forward
        if not inspect.isfunction(forward):
            raise Unsupported(f"{type(mod).__name__}.forward is not a Python function")
        return tx.inline_call(UserFunctionVariable(forward), [self, *args], dict(kwargs))

    def call_method(self, tx, name, args, kwargs):
        mod = self.module
        if name == "forward" and not is_leaf_module(mod):
            return self.call(tx, args, kwargs)
        if name in ("__getitem__",):
            return self.getitem(tx, args[0])
        if name in ("children", "values") and not kwargs and not args:
            from .containers import ListIteratorVariable
            return ListIteratorVariable(self.unpack_values(tx))
        if name == "named_children" or (name == "items" and isinstance(mod, torch.nn.ModuleDict)):
            from .containers import ListIteratorVariable, TupleVariable
            return ListIteratorVariable([TupleVariable([ConstantVariable(k), v])
                                         for k, v in zip(mod._modules, self.unpack_values(tx))])
        if name == "keys" and isinstance(mod, torch.nn.ModuleDict):
            from .containers import ListIteratorVariable
            return ListIteratorVariable([ConstantVariable(k) for k in mod._modules])
        if name == "parameters" and not args and not kwargs:
            from .containers import ListIteratorVariable
            items = []
            for qual, p in mod.named_parameters():
                src = self.source
                for part in qual.split("."):
                    src = AttrSource(src, part)
                items.append(tx.output.get_attr(p, src))
            return ListIteratorVariable(items)
        if name == "__len__":
            return ConstantVariable(len(mod))
        return super().call_method(tx, name, args, kwargs)

    def unpack_values(self, tx):
        return [NNModuleVariable(m, AttrSource(self.source, k)) for k, m in self.module._modules.items()
                if m is not None]

    def unpack(self, tx):
        mod = self.module
        if isinstance(mod, torch.nn.ModuleDict):
            return [ConstantVariable(k) for k in mod._modules]
        if isinstance(mod, (torch.nn.ModuleList, torch.nn.Sequential)):
            return [NNModuleVariable(m, ItemSource(self.source, i)) for i, m in enumerate(mod)]
        if isinstance(mod, (torch.nn.ParameterList,)):
            return [tx.output.get_attr(p, ItemSource(self.source, i)) for i, p in enumerate(mod)]
        raise Unsupported(f"iteration over {type(mod).__name__}")

    def getitem(self, tx, key):
        mod = self.module
        k = key.as_python_constant()
        if isinstance(k, slice):
            raise Unsupported(f"slicing {type(mod).__name__}")
        if isinstance(mod, (torch.nn.ModuleList, torch.nn.Sequential)):
            n = len(mod)
            if not -n <= k < n:
                raise Unsupported("module index out of range")
            k = k % n
            return NNModuleVariable(mod[k], ItemSource(self.source, k))
        if isinstance(mod, torch.nn.ModuleDict):
            return NNModuleVariable(mod[k], ItemSource(self.source, k))
        if isinstance(mod, (torch.nn.ParameterList, torch.nn.ParameterDict)):
            return tx.output.get_attr(mod[k], ItemSource(self.source, k))
        raise Unsupported(f"indexing {type(mod).__name__}")

    def __repr__(self):
        return f"NNModuleVariable({type(self.module).__name__})"
