"""torch.optim optimizers as the tracer sees them: `opt.step()` traced into
the graph, the optimizer's per-parameter state reached through a live view.

What a traced step does, and why:
- `step` is the class's own step function (an LR scheduler's call counter
  on the instance traced as the attribute store it makes), unwrapped from torch's profiling
  wrapper and `_use_grad_for_differentiable`, inlined with grad mode set to
  `defaults["differentiable"]` (what the wrapper does).  torch.compile
  breaks twice inside that wrapper (so AOT sees an inference graph); here
  the graph switches grad mode off around the step instead, as it does for
  any `torch.no_grad()` block.  Step hooks (global or the optimizer's own)
  are Unsupported; their counts are guarded.
- `capturable` reads True in the traced param groups (torch.compile's
  choice too): the step count and step size stay tensors in the graph.
- `_init_group(group, lists...)` runs on the real objects at trace time:
  the lazy state init of the first step happens then (zeros and step 0,
  exactly what eager's first step would create before updating), and the
  lists it fills become lists of traced values: parameters (the group's own
  VTs), their `.grad`, and the state tensors, read at run time through
  `OptimizerState` (installed in the frame's globals) so a state replaced
  by `load_state_dict` is the one the graph reads.  Guards: each
  parameter's grad is None or a matching tensor, each state dict's keys,
  the view's optimizer is the frame's.
- Everything else an optimizer's step calls in torch.optim is inlined
  (skipfiles.INLINED_TORCH_CODE), so the foreach and single-tensor paths
  land in the graph as `torch._foreach_*` and tensor ops.
A float `lr` is a graph input (see _trace_groups): LR schedulers change it
without a recompile.  The other hyperparameters in `param_groups` (betas,
weight_decay, ...) are constants guarded by value (EQUALS_MATCH).
"""
import inspect
import itertools
import types
import weakref

import torch

from ...exc import Unsupported
from ...guards import (DICT_KEYS, ID_MATCH, LENGTH, NONE_MATCH, SAME_OBJECT, AttrSource,
                       GlobalSource, ItemSource, StaticAttrSource)
from ..lookup import getattr_static
from .base import ConstantVariable, VariableTracker
from .misc import UserDefinedObjectVariable

_view_ids = itertools.count()
_VIEWS = weakref.WeakKeyDictionary()    # OutputGraph -> {id(optimizer): (name, OptimizerState)}


class OptimizerState:
    """Run time: the live state dicts of an optimizer's parameters, by a
    number fixed at trace time (`view[k]` is `opt.state[param]` of slot k,
    param read from `opt.param_groups` now).  Holds the optimizer weakly; a
    dead optimizer or a parameter without state raises KeyError, which
    fails the guard that reads it."""

    def __init__(self, optimizer, slots):
        self._ref = weakref.ref(optimizer)
        self._slots = list(slots)            # k -> (group index, param index), filled by the trace

    @property
    def optimizer(self):
        return self._ref()

    def __getitem__(self, k):
        opt = self._ref()
        if isinstance(k, str):
            return self._lr(opt, k)
        if opt is None or not 0 <= k < len(self._slots):
            raise KeyError(k)
        g, j = self._slots[k]
        try:
            param = opt.param_groups[g]["params"][j]
        except (IndexError, KeyError, TypeError):
            raise KeyError(k) from None
        state = opt.state.get(param)
        if state is None:
            raise KeyError(k)
        return state

    @staticmethod
    def _lr(opt, key):
        """`view["lr<g>"]`: param group g's float lr now, as a float64 0-d
        tensor (a graph input: a scheduler's change recompiles nothing);
        KeyError once it is no float (the guard fails, the trace sees it)."""
        try:
            lr = opt.param_groups[int(key[2:])]["lr"]
        except (AttributeError, IndexError, KeyError, TypeError, ValueError):
            raise KeyError(key) from None
        if type(lr) is not float:
            raise KeyError(key)
        return torch.tensor(lr, dtype=torch.float64)

    def __repr__(self):
        return f"<optimizer state view of {len(self._slots)} parameters>"


def is_optimizer(value):
    return isinstance(value, torch.optim.Optimizer)


def _hook_dicts(opt):
    import torch.optim.optimizer as om
    return [("_optimizer_step_pre_hooks", opt._optimizer_step_pre_hooks),
            ("_optimizer_step_post_hooks", opt._optimizer_step_post_hooks)], \
        [("_global_optimizer_pre_hooks", om._global_optimizer_pre_hooks),
         ("_global_optimizer_post_hooks", om._global_optimizer_post_hooks)]


class OptimizerVariable(UserDefinedObjectVariable):
    """A torch.optim.Optimizer passed into the frame (TYPE_MATCH on it)."""

    def var_getattr(self, tx, name):
        if name == "step":
            return OptimizerStepVariable(self)
        if name == "_init_group":
            return InitGroupVariable(self)
        if name == "state" and "state" in self.value.__dict__ and self.source is not None:
            tx.output.add_guard(AttrSource(self.source, "state"), ID_MATCH, self.value.state)
            return OptimizerStateVariable(self)
        stored = tx.output.attr_stores.get((id(self.value), name))
        if stored is not None:
            return stored[1]
        try:
            static = getattr_static(self.value, name)
        except AttributeError:
            static = None
        if inspect.isfunction(static) and name not in self.value.__dict__:
            from ...skipfiles import is_inlined_torch_code
            if is_inlined_torch_code(static.__code__):
                from .misc import class_attribute
                return class_attribute(tx, self, name, static)
        return super().var_getattr(tx, name)

    def __repr__(self):
        return f"OptimizerVariable({type(self.value).__name__})"


class OptimizerStateVariable(VariableTracker):
    """`opt.state` (guarded by identity: load_state_dict replaces it),
    indexed by one of the optimizer's parameters: that parameter's state
    dict, read and written through the OptimizerState view (SGD stores its
    momentum buffers after the update)."""
    tensor_keys = True          # builtin.getitem hands a tensor key to __getitem__

    def __init__(self, opt_var):
        super().__init__(None)
        self.opt_var = opt_var

    def python_type(self):
        return type(self.opt_var.value.state)

    def call_method(self, tx, name, args, kwargs):
        from .tensor import TensorVariable
        opt = self.opt_var.value
        if name != "__getitem__" or len(args) != 1 or kwargs or \
                not isinstance(args[0], TensorVariable) or args[0].source is None:
            raise Unsupported(f"optimizer.state.{name}(...) inside the compiled frame: only "
                              "`opt.state[param]` of one of its parameters is traced")
        want = args[0].source.name()
        for g, group in enumerate(opt.param_groups):
            for j in range(len(group["params"])):
                psrc = ItemSource(ItemSource(ItemSource(AttrSource(self.opt_var.source,
                                                                   "param_groups"), g), "params"), j)
                if psrc.name() != want:
                    continue
                param = group["params"][j]
                if param not in opt.state:
                    raise Unsupported("optimizer.state[param] of a parameter without state")
                name_, view = InitGroupVariable._state_view(tx, opt, self.opt_var.source)
                if (g, j) not in view._slots:
                    view._slots.append((g, j))
                k = view._slots.index((g, j))
                return tx.wrap(opt.state[param], ItemSource(GlobalSource(name_), k))
        raise Unsupported("optimizer.state[t] of a tensor the trace does not know as one of the "
                          "optimizer's parameters")

    def __repr__(self):
        return f"OptimizerStateVariable({type(self.opt_var.value).__name__})"


def _unwrap_step(fn):
    """(the step function the class defines, whether torch's
    `_use_grad_for_differentiable` wraps it)."""
    use_grad = False
    while hasattr(fn, "__wrapped__"):
        if getattr(fn, "__code__", None) is not None and fn.__code__.co_name == "_use_grad":
            use_grad = True
        fn = fn.__wrapped__
    return fn, use_grad


class OptimizerMethodVariable(VariableTracker):
    """A method of an OptimizerVariable (`opt_var`) the tracer runs its own
    way: a bound method, always true; the subclass says what calling it
    does."""

    def __init__(self, opt_var):
        super().__init__(None)
        self.opt_var = opt_var

    def python_type(self):
        return types.MethodType

    def truth(self, tx):
        return True


class OptimizerStepVariable(OptimizerMethodVariable):
    """`opt.step` of an OptimizerVariable; calling it inlines the step."""

    def call(self, tx, args, kwargs):
        from .functions import UserMethodVariable
        from .torch import GradModeVariable
        opt_var = self.opt_var
        opt, src = opt_var.value, opt_var.source
        if src is None:
            raise Unsupported("optimizer.step() of an optimizer made inside the compiled frame: "
                              "make the optimizer outside it")
        own, global_ = _hook_dicts(opt)
        for name, hooks in own + global_:
            if hooks:
                raise Unsupported(f"optimizer.step() with a step hook registered ({name}): the "
                                  "step runs eagerly; remove the hook to compile it")
        for name, hooks in own:
            tx.output.add_guard(AttrSource(src, name), LENGTH, type(hooks), 0)
        import torch.optim.optimizer as om
        alias = tx.output.globals_alias(om.__dict__)
        for name, hooks in global_:
            tx.output.add_guard(ItemSource(GlobalSource(alias), name), LENGTH, type(hooks), 0)
        wrapper = getattr_static(type(opt), "step")
        if not inspect.isfunction(wrapper):
            raise Unsupported(f"{type(opt).__name__}.step is not a plain method")
        tx.output.add_guard(AttrSource(AttrSource(src, "__class__"), "step"), ID_MATCH, wrapper)
        tx.output.add_guard(StaticAttrSource(src, "step"), ID_MATCH,
                            opt.__dict__.get("step", wrapper))
        if "step" in opt.__dict__:
            _scheduler_counted_step(tx, opt_var, wrapper)
        fn, use_grad = _unwrap_step(wrapper)
        end_groups = _trace_groups(tx, opt_var)
        if not use_grad:
            out = UserMethodVariable(fn, opt_var).call(tx, args, kwargs)
            end_groups()
            return out
        differentiable = tx.wrap(opt.defaults["differentiable"],
                                 ItemSource(AttrSource(src, "defaults"), "differentiable"))
        ctx = GradModeVariable(bool(differentiable.as_python_constant()))
        ctx.enter(tx)
        out = UserMethodVariable(fn, opt_var).call(tx, args, kwargs)
        tx.output.set_grad_enabled(ctx.prev)
        end_groups()
        return out

    def reconstruct(self, cg):
        cg.reconstruct(self.opt_var)
        cg.emit("LOAD_ATTR", argval="step")

    def __repr__(self):
        return f"OptimizerStepVariable({type(self.opt_var.value).__name__})"


def _scheduler_counted_step(tx, opt_var, wrapper):
    """An LR scheduler replaced `opt.step` on the instance by a wrapper that
    notes the call (`opt._opt_called = True`) and calls the class's step:
    the note is traced as an attribute store (written back after the
    graph); any other instance `step` is Unsupported."""
    opt = opt_var.value
    inst = opt.__dict__["step"]
    cells = {}
    if inspect.isfunction(inst) and inst.__closure__:
        cells = {n: c.cell_contents for n, c in zip(inst.__code__.co_freevars, inst.__closure__)}
    opt_ref = cells.get("opt_ref")
    if not (getattr(inst, "_wrapped_by_lr_sched", False) and getattr(inst, "__wrapped__", None)
            is wrapper and callable(opt_ref) and opt_ref() is opt and opt_var.can_store_attr("_opt_called")):
        raise Unsupported(f"{type(opt).__name__}.step replaced on the instance by "
                          f"{getattr(inst, '__qualname__', type(inst).__name__)}: the step runs "
                          "eagerly (only an LR scheduler's call counter is traced)")
    tx.output.attr_stores[(id(opt), "_opt_called")] = (opt_var, ConstantVariable(True), opt)


def _trace_groups(tx, opt_var):
    """What the step's trace reads in the param groups, where it differs
    from the real groups (which keep their values); returns the function
    that ends it after the step (later reads in the frame see the groups
    as they are, with their own guards):
    - `capturable` is True in every group that has the flag, as under
      torch.compile: the capturable paths keep step counts and step sizes
      as tensors, which fake tensors can run (the other paths call
      `.item()` or hand a CPU tensor of scalars to a foreach kernel);
    - a float `lr` is a graph input, read through the OptimizerState view
      at each call as a float64 0-d tensor, not a guarded constant: an LR
      scheduler changing it recompiles nothing (torch.compile recompiles
      once, then makes the float dynamic).  A group whose lr stops being a
      float fails the view's guard.  When the frame read the groups before
      the step, lr stays the guarded constant it already is."""
    from ...guards import EQUALS_MATCH
    from .containers import DictVariable, ListVariable
    opt, out = opt_var.value, tx.output
    fresh = id(opt.param_groups) not in out.container_objs
    first_guard = len(out.guards)
    groups = opt_var.var_getattr(tx, "param_groups")
    if not isinstance(groups, ListVariable) or len(groups.items) != len(opt.param_groups):
        raise Unsupported(f"{type(opt).__name__}.param_groups is not a list the trace can read")
    saved = []
    for g, group in enumerate(groups.items):
        if not isinstance(group, DictVariable):
            continue
        saved.append((group, dict(group.items)))
        if "capturable" in group.items:
            group.items["capturable"] = ConstantVariable(True)
        if fresh and type(opt.param_groups[g].get("lr")) is float:
            lr_name = group.items["lr"].source.name() if group.items["lr"].source else None
            out.guards[first_guard:] = [
                gd for gd in out.guards[first_guard:]
                if not (gd.kind == EQUALS_MATCH and gd.source.name() == lr_name)]
            name, _view = InitGroupVariable._state_view(tx, opt, opt_var.source)
            group.items["lr"] = out.add_input(
                ItemSource(GlobalSource(name), f"lr{g}"),
                torch.tensor(opt.param_groups[g]["lr"], dtype=torch.float64))

    def end():
        for group, items in saved:
            group.items.clear()
            group.items.update(items)
        if fresh:          # later reads wrap the groups again, with their guards
            for value in [opt.param_groups, *opt.param_groups]:
                out.container_objs.pop(id(value), None)
    return end


class InitGroupVariable(OptimizerMethodVariable):
    """`opt._init_group` of an OptimizerVariable: run on the real objects
    at trace time (lazy state init), its lists filled with traced values."""

    def call(self, tx, args, kwargs):
        from .containers import DictVariable, ListVariable
        from ...modes import hook_off
        opt_var = self.opt_var
        opt, src = opt_var.value, opt_var.source
        if kwargs or not args or not isinstance(args[0], DictVariable) or args[0].source is None:
            raise Unsupported(f"{type(opt).__name__}._init_group called with a group the trace "
                              "cannot reload (call it from the optimizer's own step)")
        lists = args[1:]
        if not all(isinstance(v, ListVariable) and v.source is None and not v.items for v in lists):
            raise Unsupported(f"{type(opt).__name__}._init_group called with other than new "
                              "empty lists")
        group_var = args[0]
        group = tx.output.frame.fetch(group_var.source)
        group_index = next((i for i, g in enumerate(opt.param_groups) if g is group), None)
        if group_index is None:
            raise Unsupported("optimizer._init_group of a dict that is not one of its "
                              "param_groups")
        init = getattr_static(type(opt), "_init_group")
        tx.output.add_guard(StaticAttrSource(src, "_init_group"), ID_MATCH, init)
        real_lists = [[] for _ in lists]
        try:
            with hook_off(), torch.set_grad_enabled(tx.output.grad_enabled):
                result = init(opt, group, *real_lists)
        except Exception as e:  # noqa: BLE001 - eager's step raises it again, from its own init
            raise Unsupported(f"{type(opt).__name__}._init_group raised {type(e).__name__}: "
                              f"{str(e).splitlines()[0] if str(e) else ''} (the step runs "
                              "eagerly)") from e
        params_var = group_var.items.get("params")
        if not isinstance(params_var, ListVariable) or len(params_var.items) != len(group["params"]):
            raise Unsupported("optimizer param group whose 'params' the trace did not read")
        view_name, view = self._state_view(tx, opt, src)
        known = {}                      # id(real tensor) -> VT
        for j, (p, p_var) in enumerate(zip(group["params"], params_var.items)):
            known[id(p)] = p_var
            grad_src = AttrSource(p_var.source, "grad")
            if p.grad is None:
                tx.output.add_guard(grad_src, NONE_MATCH, True)
                continue
            known[id(p.grad)] = tx.wrap(p.grad, grad_src)
            state = opt.state.get(p)
            if state is None:
                continue
            if (group_index, j) not in view._slots:
                view._slots.append((group_index, j))
            k = view._slots.index((group_index, j))
            state_src = ItemSource(GlobalSource(view_name), k)
            tx.output.add_guard(state_src, DICT_KEYS, tuple(state))
            for key, value in state.items():
                if isinstance(value, torch.Tensor) and type(key) is str:
                    known[id(value)] = tx.wrap(value, ItemSource(state_src, key))
        for real, var in zip(real_lists, lists):
            for item in real:
                if item is None or isinstance(item, (bool, int, float)):
                    var.items.append(ConstantVariable(item))
                elif id(item) in known:
                    var.items.append(known[id(item)])
                else:
                    raise Unsupported(f"{type(opt).__name__}._init_group put a "
                                      f"{type(item).__name__} the trace cannot reload in a list")
        return tx.wrap(result, None) if result is not None else ConstantVariable(None)

    @staticmethod
    def _state_view(tx, opt, src):
        """(name, view) of this trace's OptimizerState for `opt`: installed
        in the frame's globals, its optimizer guarded to be the frame's."""
        views = _VIEWS.setdefault(tx.output, {})
        entry = views.get(id(opt))
        if entry is None:
            name = f"___optimizer_state_{next(_view_ids)}"
            view = OptimizerState(opt, ())
            tx.output.install[name] = view
            tx.output.add_guard(AttrSource(GlobalSource(name), "optimizer"), SAME_OBJECT, src, True)
            entry = views[id(opt)] = (name, view)
        return entry
