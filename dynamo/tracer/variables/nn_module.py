"""nn.Module values: submodules, parameters and buffers, and module calls.

Policy (documented in ARCHITECTURE.md, contract 3):
- the module reached from a frame value is guarded by ID_MATCH and an
  EQUALS_MATCH on its `training` flag; every submodule the trace reaches
  (attribute, container item, children/modules()) gets one ID_MATCH on
  `<parent>._modules[<key>]` (a dict item: no Module.__getattr__ call at
  guard time), so replacing a submodule recompiles; iterating or taking the
  len() of a container adds DICT_KEYS on its `_modules`; leaf modules called
  as call_module and every `training` read add a `training` guard;
- parameters and buffers become get_attr nodes on the GraphModule (shared
  objects, so optimizers and BatchNorm running stats see the same tensors),
  each guarded by ID_MATCH on `<module>._parameters[<name>]` (or
  `_buffers`): the graph holds the object itself, so a replaced Parameter
  must recompile, while in-place updates keep the object and hit;
- a generic module (config.generic_module_frames: an nn.Module argument
  that recompiled for another instance of its class) is guarded by
  TYPE_MATCH instead, its submodules too; its parameters and buffers are
  graph inputs read from `<module>._parameters[<name>]` (TENSOR_MATCH), so
  one entry serves every instance, and its leaf modules are inlined (a
  call_module node would name one instance);
- calling a standard torch.nn leaf module (class defined in torch.nn.modules,
  not a container) records a call_module node; calling any other module
  inlines its forward;
- a module's own forward pre-hooks and forward hooks are inlined around
  its call in the order nn.Module.__call__ runs them (a hook's non-None
  result replaces the arguments / the output, `with_kwargs` hooks get and
  give the keyword arguments too); the hook tables are guarded by type
  and length and each hook by identity through its key (a hook added or
  removed recompiles). Hooks added to a module that had none when it was compiled are
  not seen, as under torch.compile (whose hook guards are off by default).
  Backward hooks, global hooks and hooks defined in torch itself (FSDP's
  collectives) are Unsupported at the call: the call runs eagerly after a
  graph break.
"""
import functools
import inspect

import torch

from ...exc import Unsupported
from ..lookup import getattr_static
from ...guards import (DICT_KEYS, EQUALS_MATCH, ID_MATCH, LENGTH, SAME_OBJECT, TYPE_MATCH,
                       AttrSource, ItemSource, StaticAttrSource)
from .base import ClassVariable, ConstantVariable, VariableTracker, require_plain_getattribute

_STATE_TABLES = ("_parameters", "_buffers", "_modules")
_CONTAINERS = (torch.nn.Sequential, torch.nn.ModuleList, torch.nn.ModuleDict,
               torch.nn.ParameterList, torch.nn.ParameterDict)


def is_leaf_module(mod):
    """Standard torch.nn modules recorded as call_module nodes."""
    return type(mod).__module__.startswith("torch.nn.modules") and not isinstance(mod, _CONTAINERS)


def _hook_module(hook):
    """The module that defined `hook` (a function, bound method, partial or
    callable object)."""
    while isinstance(hook, functools.partial):
        hook = hook.func
    fn = getattr(hook, "__func__", hook)
    return getattr(fn, "__module__", None) or type(hook).__module__ or ""


def has_untraced_hooks(mod):
    """Backward hooks of `mod`, or any global module hook: the tracer does
    not inline these (module_call breaks)."""
    from torch.nn.modules import module as m
    return bool(mod._backward_hooks or getattr(mod, "_backward_pre_hooks", None)
                or m._global_forward_hooks or m._global_forward_pre_hooks
                or m._global_backward_hooks or getattr(m, "_global_backward_pre_hooks", None))


def submodule_source(parent_source, key):
    """Where submodule `key` of the module at `parent_source` lives."""
    return ItemSource(AttrSource(parent_source, "_modules"), key)


def submodule(tx, parent, key):
    """The VT of `parent.module._modules[key]`, guarded by identity (a
    replaced submodule must recompile: the graph calls the object itself),
    or by type under a generic parent (its own state is read from it)."""
    sub = parent.module._modules[key]
    src = submodule_source(parent.source, key)
    if sub is not None and parent.generic:
        tx.output.add_guard(src, TYPE_MATCH, type(sub))
        return NNModuleVariable(sub, src, generic=True)
    tx.output.add_guard(src, ID_MATCH, sub)
    return ConstantVariable(None, src) if sub is None else NNModuleVariable(sub, src)


def tensor_attr(tx, module_source, table, key, value, source=None, generic=False):
    """The get_attr VT of parameter/buffer `value` stored at
    `<module_source>.<table>[key]`, guarded by identity (an ITEM of the
    instance-dict table: read in C at guard time); of a generic module, a
    graph input read from there (TENSOR_MATCH)."""
    item = ItemSource(AttrSource(module_source, table), key)
    if generic:
        return tx.output.add_input(item, value)
    tx.output.add_guard(item, ID_MATCH, value)
    return tx.output.get_attr(value, source or AttrSource(module_source, key))


def container_item(tx, var, key, value, source):
    """Item `key` (str) of a ParameterList/ParameterDict: guarded like any
    parameter when it lives in `_parameters`/`_buffers` (plain values set as
    attributes are wrapped from the instance dict by var_getattr)."""
    d = var.module.__dict__
    for table in ("_parameters", "_buffers"):
        if key in d.get(table, {}):
            return tensor_attr(tx, var.source, table, key, value, source, var.generic)
    return var.var_getattr(tx, key)


# per-module hook tables a trace may read (TransformerEncoderLayer's fast-path check)
_HOOK_TABLES = ("_forward_hooks", "_forward_pre_hooks", "_backward_hooks",
                "_backward_pre_hooks", "_forward_hooks_with_kwargs",
                "_forward_pre_hooks_with_kwargs", "_forward_hooks_always_called")


# Module methods that generate over the module tree (generators with a memo
# set): the tracer answers them from the real tree, with guards, when called
# without arguments on a module that does not override them
_NATIVE_METHODS = ("modules", "named_modules", "children", "named_children", "parameters",
                   "named_parameters", "buffers", "named_buffers")


_MODULE_CALL = torch.nn.Module.__dict__["__call__"]


def _class_has(cls, name):
    try:
        getattr_static(cls, name)
        return True
    except AttributeError:
        return False


def _tree_walk_args(name, args, kwargs):
    """(recurse, prefix) of a parameters()/buffers()/named_*() call whose
    arguments are constants the walk models, else None."""
    if name not in ("parameters", "named_parameters", "buffers", "named_buffers"):
        return None
    named = name.startswith("named_")
    params = ["prefix", "recurse", "remove_duplicate"] if named else ["recurse"]
    if len(args) > len(params):
        return None
    bound = dict(zip(params, args))
    for k, v in kwargs.items():
        if k not in params or k in bound:
            return None
        bound[k] = v
    try:
        values = {k: v.as_python_constant() for k, v in bound.items()}
    except Unsupported:
        return None
    if values.get("remove_duplicate", True) is not True:
        return None
    recurse, prefix = values.get("recurse", True), values.get("prefix", "")
    if not isinstance(recurse, bool) or not isinstance(prefix, str):
        return None
    return recurse, prefix


class NNModuleVariable(VariableTracker):
    """An nn.Module with the source it is reachable from."""

    def __init__(self, module, source, generic=False):
        super().__init__(source)
        self.module = module
        # any instance of its class (config.generic_module_frames): guarded
        # by type, its parameters and buffers graph inputs, leaf modules
        # inlined rather than called as the object
        self.generic = generic

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
        from .kinds import ObservedAttributeError
        from .functions import UserFunctionVariable, UserMethodVariable
        mod = self.module
        cls = type(mod)
        require_plain_getattribute(cls)
        src = AttrSource(self.source, name)
        if name == "training":
            self.guard_training(tx)
            return ConstantVariable(mod.training)
        if name == "__class__":
            return ClassVariable(type(mod))
        stored = tx.output.attr_stores.get((id(mod), name))
        if stored is not None:      # assigned earlier in the trace (store_attr)
            return stored[1]
        d = mod.__dict__
        # Python's lookup order: an attribute of the class (a method, say)
        # wins over a submodule/parameter/buffer of the same name, which
        # nn.Module.__getattr__ only finds when ordinary lookup fails
        shadowed = name not in d and _class_has(cls, name)
        for table in () if shadowed else ("_parameters", "_buffers"):
            if name in d.get(table, {}):
                value = d[table][name]
                if value is None:
                    tx.output.add_guard(ItemSource(AttrSource(self.source, table), name),
                                        ID_MATCH, None)
                    return ConstantVariable(None)
                return tensor_attr(tx, self.source, table, name, value, src, self.generic)
        if name in d.get("_modules", {}) and not shadowed:
            return submodule(tx, self, name)
        if name in _HOOK_TABLES and name in d and not d[name]:
            return self.empty_hook_table(tx, name)
        if name in d:
            return tx.wrap(d[name], src)
        try:
            static = getattr_static(mod, name)
        except AttributeError:
            if getattr_static(cls, "__getattr__") is not torch.nn.Module.__getattr__:
                raise Unsupported(f"{cls.__name__} defines __getattr__") from None
            # the trace goes on knowing it is missing (getattr's default,
            # hasattr): valid while none of the tables nn.Module's lookup
            # reads gains a name
            tx.output.add_guard(AttrSource(self.source, "__dict__"), DICT_KEYS, tuple(d))
            for table in ("_parameters", "_buffers", "_modules"):
                if type(d.get(table)) is dict:
                    tx.output.add_guard(AttrSource(self.source, table), DICT_KEYS, tuple(d[table]))
            raise ObservedAttributeError(f"{type(mod).__name__} has no attribute {name!r}") from None
        from .misc import class_attribute
        if isinstance(static, (staticmethod, classmethod, property)):
            return class_attribute(tx, self, name, static)
        if (name in _NATIVE_METHODS or name == "to") and static is getattr(torch.nn.Module, name):
            from .functions import BoundMethodVariable
            return BoundMethodVariable(self, name)      # call_method walks the tree itself
        if inspect.isfunction(static):
            return class_attribute(tx, self, name, static)
        return tx.wrap(getattr(mod, name), src)

    def store_attr(self, tx, name, value):
        """`mod.name = value` for a plain attribute (Swin's `self.shift_size
        = 0`, CTRL's `self.pos_encoding = self.pos_encoding.to(...)`): the
        trace reads the new value from here on and the rewritten code
        assigns it after the graph, through nn.Module.__setattr__ as eager
        does (a tensor to a buffer too). Parameters, submodules, `training` and names with a
        descriptor on the class stay Unsupported (the assignment runs eagerly
        after a graph break)."""
        mod, cls = self.module, type(self.module)
        d = mod.__dict__
        if isinstance(value, NNModuleVariable) and self.source is not None and \
                value.source is not None and d.get("_modules", {}).get(name) is value.module and \
                value.source.name() == submodule_source(self.source, name).name():
            return      # a submodule stored back where it was read (`self.c = self.c.to(dtype)`)
        kind = value.python_type() if not isinstance(value, NNModuleVariable) else torch.nn.Module
        # a buffer takes a tensor as a plain attribute does (Module.__setattr__
        # puts it in _buffers at run time)
        buffer = name in d.get("_buffers", {}) and isinstance(kind, type) and \
            issubclass(kind, torch.Tensor)
        if self.source is None or cls.__setattr__ is not torch.nn.Module.__setattr__ or \
                name == "training" or not buffer and any(name in d.get(t, {}) for t in _STATE_TABLES):
            raise Unsupported(f"assignment to attribute {name!r} of {type(mod).__name__}: only plain "
                              "attributes and tensors to buffers are traced (not a parameter, "
                              "submodule or training)")
        if isinstance(kind, type) and issubclass(kind, (torch.nn.Parameter, torch.nn.Module)):
            raise Unsupported(f"assignment of a {kind.__name__} to {type(mod).__name__}.{name}: "
                              "registering parameters or submodules runs eagerly")
        try:
            static = getattr_static(cls, name)
        except AttributeError:
            static = None
        if hasattr(type(static), "__set__"):
            raise Unsupported(f"assignment to {type(mod).__name__}.{name}, a descriptor of its class")
        tx.output.attr_stores[(id(mod), name)] = (self, value, mod)

    def empty_hook_table(self, tx, name):
        """An empty hook dict, guarded to stay empty (LENGTH on its type)."""
        from .containers import DictVariable
        table = self.module.__dict__[name]
        src = AttrSource(self.source, name)
        tx.output.add_guard(src, LENGTH, type(table), 0)
        return DictVariable({}, src)

    def guard_structure(self, tx):
        """DICT_KEYS on `_modules`: the trace depends on the set of children."""
        tx.output.add_guard(AttrSource(self.source, "_modules"), DICT_KEYS,
                            tuple(self.module._modules))

    def call(self, tx, args, kwargs):
        """`mod(*args)`: the class's own Python __call__ (a subclass that
        overrides nn.Module's and calls super().__call__) inlined, else
        nn.Module's call (`module_call`)."""
        user_call = getattr_static(type(self.module), "__call__", None)
        if inspect.isfunction(user_call) and user_call is not _MODULE_CALL and \
                not (user_call.__module__ or "").startswith("torch."):
            from .functions import UserMethodVariable
            call_src = StaticAttrSource(self.source, "__call__")
            tx.output.add_guard(call_src, ID_MATCH, user_call)
            return UserMethodVariable(user_call, self, fn_source=call_src).call(tx, args, kwargs)
        return self.module_call(tx, args, kwargs)

    def module_call(self, tx, args, kwargs):
        """nn.Module.__call__: hooks (Unsupported), then a leaf module into
        the graph or forward inlined."""
        mod = self.module
        from ... import distributed
        if distributed.is_ddp(mod):
            raise Unsupported("calling a DistributedDataParallel module: its forward runs eagerly "
                              "(DDP's per-call bookkeeping) and the module it wraps is compiled "
                              "as a frame of its own; hand the DDP model to dynamo.optimize() "
                              "to compile a torch-defined wrapped module (nn.Sequential) too")
        if has_untraced_hooks(mod):
            raise Unsupported(f"calling {type(mod).__name__} with backward hooks or global module hooks")
        if mod._forward_pre_hooks or mod._forward_hooks:
            return self.call_with_forward_hooks(tx, args, kwargs)
        return self.call_forward(tx, args, kwargs)

    def call_with_forward_hooks(self, tx, args, kwargs):
        """nn.Module.__call__'s forward pre-hooks, forward and forward hooks,
        each hook inlined (see the module docstring for the guards)."""
        from .containers import DictVariable, TupleVariable
        mod = self.module
        if self.source is None:
            raise Unsupported(f"calling {type(mod).__name__} with forward hooks (a module made "
                              f"in the frame)")

        def table(name):
            # an OrderedDict (DICT_KEYS pins a plain dict): its type and
            # length; each key is read by an ItemSource below, which fails
            # when the key is gone
            src = AttrSource(self.source, name)
            value = mod.__dict__[name]
            tx.output.add_guard(src, LENGTH, type(value), len(value))
            for key in value if name.endswith("_with_kwargs") else ():
                tx.output.add_guard(ItemSource(src, key), EQUALS_MATCH, value[key])
            return src, value

        def is_none(v):
            return isinstance(v, ConstantVariable) and v.value is None

        for hook in [*mod._forward_pre_hooks.values(), *mod._forward_hooks.values()]:
            owner = _hook_module(hook)
            if owner.startswith("torch."):
                # torch's own hooks (FSDP's all-gathers and reshards,
                # checkpointing) keep state the trace cannot replay
                raise Unsupported(f"calling {type(mod).__name__} with forward hooks of {owner} "
                                  f"(torch's own hooks run eagerly)")
        pre_src, pre = table("_forward_pre_hooks")
        _, pre_kw = table("_forward_pre_hooks_with_kwargs")
        args, kwargs = list(args), dict(kwargs)
        for hid, hook in list(pre.items()):
            fn = tx.wrap(hook, ItemSource(pre_src, hid))
            if hid in pre_kw:
                res = fn.call(tx, [self, TupleVariable(args), DictVariable(dict(kwargs))], {})
                if not is_none(res):
                    items = res.unpack(tx) if isinstance(res, TupleVariable) else None
                    if items is None or len(items) != 2 or not isinstance(items[1], DictVariable):
                        raise Unsupported("a forward pre-hook with kwargs returned something other "
                                          "than (args, kwargs)")
                    args = list(items[0].unpack(tx))
                    kwargs = dict(items[1].items)
            else:
                res = fn.call(tx, [self, TupleVariable(args)], {})
                if not is_none(res):
                    args = list(res.unpack(tx)) if isinstance(res, TupleVariable) else [res]
        out = self.call_forward(tx, args, kwargs, hooked=True)
        post_src, post = table("_forward_hooks")
        _, post_kw = table("_forward_hooks_with_kwargs")
        for hid, hook in list(post.items()):
            fn = tx.wrap(hook, ItemSource(post_src, hid))
            if hid in post_kw:
                res = fn.call(tx, [self, TupleVariable(args), DictVariable(dict(kwargs)), out], {})
            else:
                res = fn.call(tx, [self, TupleVariable(args), out], {})
            if not is_none(res):
                out = res
        return out

    def call_forward(self, tx, args, kwargs, hooked=False):
        """The module's forward, without hooks: a leaf module into the graph
        (unless `hooked`: a call_module node would run the module's hooks
        again at run time, so its forward is inlined), any other forward
        inlined."""
        mod = self.module
        if is_leaf_module(mod) and not hooked and not self.generic:
            self.guard_training(tx)
            return tx.output.call_module(tx, mod, self.source, list(args), dict(kwargs))
        if "forward" in mod.__dict__:
            # an instance attribute (timm: `self.forward = self.forward_slicing`):
            # wrapped from `mod.forward`, which reads it first (its guards:
            # the bound function's identity, or the callable's)
            own = tx.wrap(mod.__dict__["forward"], AttrSource(self.source, "forward"))
            return self.inline_forward(tx, own, args, kwargs)
        forward = type(mod).forward
        if not inspect.isfunction(forward):
            raise Unsupported(f"{type(mod).__name__}.forward is not a Python function")
        # forward replaced on the class, or set on the instance, recompiles
        fwd_src = StaticAttrSource(self.source, "forward")
        tx.output.add_guard(fwd_src, ID_MATCH, forward)
        return self.inline_forward(tx, forward, args, kwargs, fwd_src)

    def inline_forward(self, tx, forward, args, kwargs, forward_source=None):
        """Inline `forward` (the class's function, called with this module
        first, or a VT called as it is: an instance's own forward) with this
        module on the output's module stack, so the nodes it makes know their
        module (node.meta, telemetry)."""
        from ...guards import module_path
        from .functions import UserFunctionVariable
        path = module_path(self.source) if self.source is not None else ""
        stack = tx.output.module_stack
        if path:                    # the frame's own `self` is the top level
            stack.append((path, type(self.module).__name__))
        try:
            if isinstance(forward, VariableTracker):
                return forward.call(tx, list(args), dict(kwargs))
            return tx.inline_call(UserFunctionVariable(forward, forward_source), [self, *args],
                                  dict(kwargs))
        finally:
            if path:
                stack.pop()

    def call_method(self, tx, name, args, kwargs):
        mod = self.module
        tree_walk = _tree_walk_args(name, args, kwargs)
        if name in _NATIVE_METHODS and (args or kwargs) and tree_walk is None:
            # a variant (recurse=False, prefix=...) the walk below does not model
            from .functions import UserMethodVariable
            return UserMethodVariable(getattr(torch.nn.Module, name), self).call(tx, args, kwargs)
        if name == "forward" and (self.generic or not is_leaf_module(mod)):
            return self.call(tx, args, kwargs)
        if name in ("__getitem__",):
            return self.getitem(tx, args[0])
        if name in ("children", "values") and not kwargs and not args:
            from .containers import ListIteratorVariable
            return ListIteratorVariable(self.unpack_values(tx))
        if name == "named_children" or (name == "items" and isinstance(mod, torch.nn.ModuleDict)):
            from .containers import ListIteratorVariable, TupleVariable
            return ListIteratorVariable([TupleVariable([ConstantVariable(v.source.key), v])
                                         for v in self.unpack_values(tx)])
        if name == "keys" and isinstance(mod, torch.nn.ModuleDict):
            from .containers import ListIteratorVariable
            return ListIteratorVariable([ConstantVariable(k) for k in mod._modules])
        if tree_walk is not None:
            from .containers import ListIteratorVariable, TupleVariable
            recurse, top = tree_walk
            items = []
            table_name = "_parameters" if name.endswith("parameters") else "_buffers"
            # the list depends on every module's children and parameter
            # (buffer) names: DICT_KEYS on each, ID_MATCH on each tensor
            seen = {}           # id -> source of the first slot holding it
            walk = self.all_modules(tx) if recurse else [("", self)]
            for prefix, var in walk:
                prefix = ".".join(p for p in (top, prefix) if p)
                table = var.module.__dict__.get(table_name, {})
                tx.output.add_guard(AttrSource(var.source, table_name), DICT_KEYS, tuple(table))
                for key, p in table.items():
                    if p is None:
                        continue
                    item = ItemSource(AttrSource(var.source, table_name), key)
                    if id(p) in seen:
                        if var.generic:     # tied here: guard that it stays tied
                            tx.output.add_guard(item, SAME_OBJECT, seen[id(p)], True)
                        continue
                    seen[id(p)] = item
                    tvar = tensor_attr(tx, var.source, table_name, key, p, generic=var.generic)
                    if name.startswith("named_"):
                        qual = f"{prefix}.{key}" if prefix else key
                        tvar = TupleVariable([ConstantVariable(qual), tvar])
                    items.append(tvar)
            return ListIteratorVariable(items)
        if name in ("modules", "named_modules") and not args and not kwargs:
            from .containers import ListIteratorVariable, TupleVariable
            found = self.all_modules(tx)
            if name == "modules":
                return ListIteratorVariable([v for _, v in found])
            return ListIteratorVariable([TupleVariable([ConstantVariable(q), v]) for q, v in found])
        if name == "__len__":
            self.guard_structure(tx)
            return ConstantVariable(len(mod))
        if name == "to":
            if self.source is not None and self.converts_nothing(tx, args, kwargs):
                return self
            from .functions import UserMethodVariable     # converts: nn.Module.to traced
            return UserMethodVariable(torch.nn.Module.to, self).call(tx, args, kwargs)
        return super().call_method(tx, name, args, kwargs)

    def converts_nothing(self, tx, args, kwargs):
        """Is `mod.to(*args, **kwargs)` (constant device / dtype arguments)
        a no-op, every parameter and buffer of the tree already where and
        of the type it asks (SwitchTransformers' router casts its classifier
        to float32 on every call)? Then it returns the module itself; each
        tensor's `dtype` and `device` are guarded (EQUALS_MATCH)."""
        try:
            values = [a.as_python_constant() for a in args]
            kw = {k: v.as_python_constant() for k, v in kwargs.items()}
            device, dtype, _, memory_format = torch._C._nn._parse_to(*values, **kw)
        except (Unsupported, TypeError, RuntimeError, ValueError):
            return False
        if memory_format is not None:
            return False
        if device is not None and device.type == "cuda" and device.index is None:
            return False        # "cuda": the current device, read at run time
        checks = []
        for _, var in self.all_modules(tx):
            d = var.module.__dict__
            for table in ("_parameters", "_buffers"):
                for key, t in d.get(table, {}).items():
                    if t is None:
                        continue
                    src = ItemSource(AttrSource(var.source, table), key)
                    if device is not None:
                        if t.device != device:
                            return False
                        checks.append((AttrSource(src, "device"), t.device))
                    if dtype is not None and (t.is_floating_point() or t.is_complex()):
                        if t.dtype != dtype:
                            return False
                        checks.append((AttrSource(src, "dtype"), t.dtype))
        for src, value in checks:
            tx.output.add_guard(src, EQUALS_MATCH, value)
        return True

    def unpack_values(self, tx):
        self.guard_structure(tx)
        return [submodule(tx, self, k) for k, m in self.module._modules.items() if m is not None]

    def all_modules(self, tx):
        """(qualified name, VT) of self.named_modules(), each module once,
        depth first like torch; every `_modules` dict walked is guarded."""
        out, seen = [], set()

        def visit(var, prefix):
            if id(var.module) in seen:
                return
            seen.add(id(var.module))
            out.append((prefix, var))
            for child in var.unpack_values(tx):
                key = child.source.key
                visit(child, f"{prefix}.{key}" if prefix else key)
        visit(self, "")
        return out

    def unpack(self, tx):
        mod = self.module
        if isinstance(mod, torch.nn.ModuleDict):
            self.guard_structure(tx)
            return [ConstantVariable(k) for k in mod._modules]
        if isinstance(mod, (torch.nn.ModuleList, torch.nn.Sequential)):
            return self.unpack_values(tx)
        if isinstance(mod, (torch.nn.ParameterList,)):
            self.guard_structure(tx)
            tx.output.add_guard(AttrSource(self.source, "_parameters"), DICT_KEYS,
                                tuple(mod._parameters))
            return [container_item(tx, self, str(i), p, ItemSource(self.source, i))
                    for i, p in enumerate(mod)]
        raise Unsupported(f"iteration over {type(mod).__name__}")

    def getitem(self, tx, key):
        mod = self.module
        k = key.as_python_constant()
        if isinstance(k, slice):
            if type(mod) is not torch.nn.ModuleList:
                raise Unsupported(f"slicing {type(mod).__name__}")
            # a ModuleList's slice is a ModuleList of the same modules: what
            # traced code does with it (iterate, index, len) a list of them does
            from .containers import ListVariable
            self.guard_structure(tx)
            names = list(mod._modules)[k]
            return ListVariable([submodule(tx, self, n) for n in names])
        if isinstance(mod, (torch.nn.ModuleList, torch.nn.Sequential)):
            n = len(mod)
            if not -n <= k < n:
                raise Unsupported("module index out of range")
            self.guard_structure(tx)     # seq[-1] / seq[i] depend on the order
            return submodule(tx, self, list(mod._modules)[k % n])
        if isinstance(mod, torch.nn.ModuleDict):
            if k not in mod._modules:
                raise Unsupported(f"KeyError {k!r} on {type(mod).__name__}")
            return submodule(tx, self, k)
        if isinstance(mod, torch.nn.ParameterList):
            n = len(mod)
            if not isinstance(k, int) or not -n <= k < n:
                raise Unsupported("parameter index out of range")
            tx.output.add_guard(AttrSource(self.source, "_parameters"), DICT_KEYS,
                                tuple(mod._parameters))
            return container_item(tx, self, str(k % n), mod[k], ItemSource(self.source, k))
        if isinstance(mod, torch.nn.ParameterDict):
            if k not in mod:
                raise Unsupported(f"KeyError {k!r} on {type(mod).__name__}")
            return container_item(tx, self, k, mod[k], ItemSource(self.source, k))
        raise Unsupported(f"indexing {type(mod).__name__}")

    def __repr__(self):
        return f"NNModuleVariable({type(self.module).__name__})"
