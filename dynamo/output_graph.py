"""The fx graph under construction for one compile, its inputs, guards and
example values, and the bytecode that calls the compiled graph.

OutputGraph owns: the torch.fx.Graph, the FakeTensorMode that computes
example values, graph inputs (placeholders, each with the Source to load it
from at run time), parameters/buffers/leaf modules (get_attr / call_module
targets on the GraphModule), the guards recorded while tracing, the traced
grad mode, and `compile_graph()` which hands the graph to the backend and
installs `__compiled_fn_<n>` in the frame's globals. PyCodegen emits the
instructions that load inputs, call the graph and rebuild values from its
outputs. Neither decides *where* to break: that is the translator's job.
An op is captured only if it runs on the fake example values and, where
fake tensors accept what kernels refuse (unusual dtypes, empty or
mixed-dtype inputs: OutputGraph._probe), on real ones of their shapes;
otherwise it is Unsupported (a break: it runs eagerly).
"""
import contextlib
import copy
import itertools
import logging
import operator
import threading
import warnings
import types
import weakref

import traceback

import torch
import torch.fx
from torch._subclasses.fake_tensor import FakeTensorMode
from torch.fx.experimental.symbolic_shapes import ShapeEnv

from . import config
from .bytecode import (NULL_ABOVE_CALLABLE, arg_slot_count, create_call, create_call_function,
                       create_instruction, create_load_method)
from .exc import Unsupported
from .guards import (GLOBAL_STATE, GRAD_MODE, SAME_OBJECT, TENSOR_MATCH, AttrSource, ClosureSource, GlobalSource, Guard,
                     ItemSource, LocalSource, NoSource, _rank, global_state_word, ordered, tensor_expected)

_graph_counter = itertools.count()


def restart_names():
    """Number `__compiled_fn_<n>` from 0 again (convert_frame.restart_names)."""
    global _graph_counter
    _graph_counter = itertools.count()


# torch logs an ERROR with a traceback when a meta kernel fails; for the
# tracer that failure is an ordinary graph break (or the user's own error)
_FAKE_TENSOR_LOGGERS = ("torch._subclasses.fake_tensor", "torch._subclasses.fake_impls")


def _check_inplace_cast(name, ex_args, ex_kw):
    """Eager refuses an in-place op whose result type cannot be cast back
    to the tensor's dtype (int64 *= 0.5: "result type Float can't be cast
    to the desired output type Long"); fake tensors do not check it, and
    aot_eager's functionalized graph then casts silently. Raise the eager
    error from the op's out-of-place twin's result dtype (which becomes a
    break, so the op runs eagerly and raises there)."""
    if not name.endswith("_") or name.startswith("_") or not ex_args:
        return
    this = ex_args[0]
    plain = getattr(torch.Tensor, name[:-1], None)
    if not isinstance(this, torch.Tensor) or plain is None:
        return
    try:
        out = plain(*ex_args, **ex_kw)
    except Exception:  # noqa: BLE001 - no twin to compare with: nothing to check
        return
    if isinstance(out, torch.Tensor) and not torch.can_cast(out.dtype, this.dtype):
        raise RuntimeError(f"result type {out.dtype} can't be cast to the desired output type {this.dtype}")


# Ops whose eager kernels require their tensor arguments to share one
# dtype (float32 @ float64 raises "expected m1 and m2 to have the same
# dtype") while their meta kernels accept mixed dtypes: name -> positions
# of the arguments compared (None: every tensor argument).
_SAME_DTYPE_OPS = dict.fromkeys(
    ("matmul", "__matmul__", "__rmatmul__", "mm", "mv", "addmm", "addmm_", "addmv", "addmv_",
     "cross", "linalg_cross", "cdist", "layer_norm"))
_SAME_DTYPE_OPS.update(index_add=(0, 3), index_add_=(0, 3))


def _check_same_dtypes(name, ex_args, ex_kw, autocast):
    """Raise eager's error for a _SAME_DTYPE_OPS op on tensors of different
    dtypes (the fake run would accept it: the graph would then raise at
    run time, after the frame's earlier side effects were skipped, where
    eager applied them). Under autocast the op casts: not checked."""
    if name not in _SAME_DTYPE_OPS or autocast:
        return
    where = _SAME_DTYPE_OPS[name]
    args = ex_args if where is None else [ex_args[i] for i in where if i < len(ex_args)]
    if where is None:
        args = [*args, *ex_kw.values()]
    dtypes = {a.dtype for a in args if isinstance(a, torch.Tensor)}
    if len(dtypes) > 1:
        raise RuntimeError(f"{name}: expected tensors of one dtype, got {sorted(map(str, dtypes))}")


_PROBE_MAX_NUMEL = 4096
_PLAIN_FLOATS = (torch.float32, torch.float64)


def _probe_inputs(ex_args, ex_kw):
    """Real stand-ins for a probe of an op on fake examples: ones of each
    tensor's shape, strides, dtype and requires_grad (top level, or in a
    list or tuple), or None when the op needs no probe: every tensor a
    non-empty float32/float64 one of one dtype without internal overlap
    (an expanded tensor: in-place ops refuse to write it), which fake
    tensors describe well; a tensor not on the CPU, more than
    _PROBE_MAX_NUMEL elements, or tensors anywhere else (a dict)."""
    tensors = []

    def real(v, depth=0):
        if isinstance(v, torch.Tensor):
            if v.device.type != "cpu" or v.layout != torch.strided or v.is_quantized or \
                    not all(type(d) is int for d in (*v.shape, *v.stride())):   # symbolic sizes: no probe
                raise LookupError
            tensors.append(v)
            span = 1 + sum((n - 1) * st for n, st in zip(v.shape, v.stride())) if v.numel() else 0
            if span > _PROBE_MAX_NUMEL:
                raise LookupError
            grad = v.requires_grad and (v.is_floating_point() or v.is_complex())
            if grad and not v.is_leaf:          # a computed value: in-place ops on it are allowed
                return (torch.ones(span, dtype=v.dtype, requires_grad=True) * 1).as_strided(v.shape, v.stride())
            r = torch.ones(span, dtype=v.dtype).as_strided(v.shape, v.stride())    # the strides too
            return r.requires_grad_(True) if grad else r
        if isinstance(v, (list, tuple)) and depth < 2:
            items = [real(x, depth + 1) for x in v]
            return items if isinstance(v, list) else tuple(items)
        if isinstance(v, dict):
            if any(isinstance(x, torch.Tensor) for x in v.values()):
                raise LookupError
        return v
    try:
        args = [real(a) for a in ex_args]
        kw = {k: real(v) for k, v in ex_kw.items()}
    except LookupError:
        return None
    if not tensors or sum(t.numel() for t in tensors) > _PROBE_MAX_NUMEL:
        return None
    dtypes = {t.dtype for t in tensors}
    if len(dtypes) == 1 and dtypes <= set(_PLAIN_FLOATS) and all(t.numel() for t in tensors) and \
            not any(torch._debug_has_internal_overlap(t) == 1 for t in tensors):
        return None
    return args, kw


def _tensor_args(args, kwargs):
    from .tracer.variables import TensorVariable
    return [a for a in (*args, *kwargs.values()) if isinstance(a, TensorVariable)]


def _versions(args, kwargs):
    """Version counters of the tensor arguments' examples (an in-place op
    on a fake tensor, or on a view of it, bumps them)."""
    return [a.example._version for a in _tensor_args(args, kwargs)]


def _returned_input(args, kwargs, example, versions):
    """The argument variable the op returned as its result, when it is a
    pure identity: the fake run returned that very argument object
    (dropout(training=False), contiguous() of a contiguous tensor, .to()
    of the same dtype, nn.Identity, Dropout in eval) and wrote to none of
    the arguments. Eager returns the same object, so the traced value is
    that variable and no node is recorded: a backend that rebuilds the
    graph (aot_eager decomposes dropout into a clone) cannot turn the
    object into a copy. None otherwise (in-place ops keep their node)."""
    if not isinstance(example, torch.Tensor):
        return None
    tensors = _tensor_args(args, kwargs)
    if [a.example._version for a in tensors] != versions:
        return None
    for a in tensors:
        if a.example is example:
            return a
    return None


class _ProbeFilter(logging.Filter):
    """Drops the fake-tensor loggers' records while this thread probes an op
    (installed once; setting the loggers' levels per op cleared every
    logger's cache each time: half a second per model)."""

    def __init__(self):
        super().__init__()
        self.local = threading.local()

    def filter(self, record):
        return not getattr(self.local, "depth", 0)


_PROBE_FILTER = _ProbeFilter()
for _name in _FAKE_TENSOR_LOGGERS:
    logging.getLogger(_name).addFilter(_PROBE_FILTER)


@contextlib.contextmanager
def _quiet_fake_tensor_log():
    """Silence torch's fake-tensor loggers (this thread) while probing an
    op; levels and handlers stay untouched."""
    local = _PROBE_FILTER.local
    local.depth = getattr(local, "depth", 0) + 1
    try:
        yield
    finally:
        local.depth -= 1


class GraphInfo:
    """One compiled graph of a compile: `name` (`__compiled_fn_<n>`), `gm`
    (the fx.GraphModule), `compiled_fn` (what the backend returned),
    `example_inputs` (real tensors, placeholder order), `op_count`
    (call_function/call_method/call_module nodes)."""

    def __init__(self, name, gm, compiled_fn, example_inputs, op_count):
        self.name, self.gm, self.compiled_fn = name, gm, compiled_fn
        self.op_count = op_count
        # weak: records live forever and must not keep the caller's tensors
        self._inputs = [_weak_or_strong(t) for t in example_inputs]

    @property
    def example_inputs(self):
        """The example tensors, None for those that died since."""
        return [ref() for ref in self._inputs]

    def __repr__(self):
        return f"GraphInfo({self.name}, ops={self.op_count})"


def _weak_or_strong(obj):
    """A zero-argument callable returning obj: a weakref when obj supports one."""
    try:
        return weakref.ref(obj)
    except TypeError:
        return lambda: obj


def _mangle(source):
    """A Python identifier naming `source`: L['self'].layer[0] -> self_layer_0."""
    if isinstance(source, LocalSource):
        return source.local_name
    if isinstance(source, GlobalSource):
        return source.global_name.lstrip("_") or "g"
    if isinstance(source, ClosureSource):
        return source.var_name
    if isinstance(source, AttrSource):
        return f"{_mangle(source.base)}_{source.attr}"
    if isinstance(source, ItemSource):
        key = "".join(c if c.isalnum() else "_" for c in str(source.key))
        base = source.base
        if isinstance(base, AttrSource) and base.attr == "_modules":
            base = base.base        # self._modules['lin'] reads as self_lin
        return f"{_mangle(base)}_{key}"
    return "v"


def module_path(source):
    """Qualified nn.Module path of the module (or attribute) at `source`:
    L['self']._modules['layer1']._modules['0'] -> "layer1.0"; a root other
    than the frame's `self` keeps its name (G['model']._modules['fc'] ->
    "model.fc"); "" for `self` itself or a source it cannot name."""
    if isinstance(source, LocalSource):
        return "" if source.local_name == "self" else source.local_name
    if isinstance(source, GlobalSource):
        return source.global_name
    if isinstance(source, ClosureSource):
        return source.var_name
    if isinstance(source, AttrSource):
        if source.attr in ("_modules", "_parameters", "_buffers"):
            return module_path(source.base)     # the table; its item names the child
        base = module_path(source.base)
        return f"{base}.{source.attr}" if base else source.attr
    if isinstance(source, ItemSource):
        base = module_path(source.base)
        return f"{base}.{source.key}" if base else str(source.key)
    return ""


def _identifier(name):
    name = "".join(c if c.isalnum() or c == "_" else "_" for c in name) or "v"
    return name if not name[0].isdigit() else "_" + name


class OutputGraph:
    """Graph, inputs and guards of one compile (see module docstring)."""

    def __init__(self, frame, compiler_fn):
        self.frame = frame                      # convert_frame.FrameInfo
        self.compiler_fn = compiler_fn
        self.graph = torch.fx.Graph()
        # data-dependent output sizes become unbacked symbols of a shape env
        # (inputs stay static: from_tensor(static_shapes=True))
        self.fake_mode = FakeTensorMode(shape_env=ShapeEnv(allow_scalar_outputs=False)
                                        if config.capture_dynamic_output_shape_ops else None)
        self.guards = []
        self.inputs = {}                        # source name -> TensorVariable
        self.input_objs = {}                    # id(tensor) -> (tensor, TensorVariable)
        self.container_objs = {}                # id(list/dict) -> (object, its variable)
        self.wrapping = set()                   # ids of containers wrap() is inside (cycles)
        self.input_order = itertools.count()
        self.attr_nodes = {}                    # id(tensor) -> TensorVariable
        self.root = {}                          # GraphModule root: target -> object
        self.module_targets = {}                # id(module) -> target
        self.fake_params = {}                   # id(tensor) -> fake tensor
        self.fake_modules = {}                  # id(module) -> (module, fake copy)
        self.initial_grad = torch.is_grad_enabled()
        self.grad_enabled = self.initial_grad
        self.sizes_read = False
        self.tensor_guard_values = {}           # source name -> (source, tensor)
        self.install = {}                       # name -> object for f_globals
        self.graphs = []                        # GraphInfo compiled by this compile
        # (qualified path, class name) of each nn.Module whose forward is
        # being inlined, outermost first (the frame's own `self` excluded)
        self.module_stack = []
        self.current_tx = None                  # the translator running (stack traces)
        self._stack_texts = {}                  # ((code, line), ...) -> formatted stack
        self.mutated_lists = {}                 # id(VT) -> argument ListVariable changed by the trace
        # (id(object), attribute) -> (owner VT, value VT, object): attribute
        # stores on objects passed in, written back after the graph
        self.attr_stores = {}
        # id(cell) -> (cell, CellVariable): closure cells of the functions
        # the trace inlines, one VT per real cell, so a `nonlocal` write by
        # one call is what the next call (or another closure) reads
        self.closure_cells = {}
        # (device, dtype, enabled, cache) of the torch.autocast blocks the
        # trace is inside, outermost first: example values run under them
        self.autocast_stack = []
        # (id(globals dict), name) -> (globals dict, value VT): globals the
        # trace assigned (STORE_GLOBAL), read back by later loads and written
        # to the real dict after the graph
        self.global_stores = {}
        self.add_guard(NoSource(), GRAD_MODE, self.initial_grad)
        # deterministic algorithms, default dtype, autocast, backend flags,
        # inference mode (docs/USER_GUIDE.md, "Global state")
        self.add_guard(NoSource(), GLOBAL_STATE, global_state_word())

    # ------------------------------------------------------------ guards
    def add_guard(self, source, kind, *expected):
        self.guards.append(Guard(source, kind, tuple(expected)))

    def final_guards(self):
        """Guards in print order, with TENSOR_MATCH sizes decided now (kept
        when dynamic_shapes is off or the trace read any size)."""
        dynamic = config.dynamic_shapes and not self.sizes_read
        out = []
        for g in self.guards:
            if g.kind == TENSOR_MATCH:
                g = Guard(g.source, TENSOR_MATCH, tensor_expected(g.expected[0], dynamic))
            out.append(g)
        out += self._distinct_input_guards([g for g in out if g.kind == TENSOR_MATCH])
        # GLOBAL_STATE, then GRAD_MODE last (as printed since the seeds)
        grad = ([g for g in out if g.kind == GLOBAL_STATE] + [g for g in out if g.kind == GRAD_MODE])
        alias = [g for g in out if g.kind == SAME_OBJECT]       # relations last, as printed
        rest = [g for g in out if g.kind not in (GRAD_MODE, GLOBAL_STATE, SAME_OBJECT)]
        return ordered(rest) + ordered(alias) + grad

    def globals_alias(self, f_globals):
        """Name of a global of the frame bound to another module's globals
        dict (for guards on globals read by inlined functions)."""
        module = str(f_globals.get("__name__", "module"))
        name = "___globals_" + _identifier(module)
        self.install[name] = f_globals
        if self.frame.f_globals.get(name, f_globals) is not f_globals:
            name = f"{name}_{id(f_globals)}"
            self.install[name] = f_globals
        return name

    def _distinct_input_guards(self, tensor_guards):
        """SAME_OBJECT(b, a, False) for input sources a, b the trace took as
        two different tensors: the graph treats them as independent (an
        in-place op on one, `a is b`). Pairs whose TENSOR_MATCH cannot both
        pass on one object need no guard, which leaves few pairs in practice."""
        out = []
        for i, gb in enumerate(tensor_guards):
            for ga in tensor_guards[:i]:
                if _could_be_one_tensor(ga.expected, gb.expected):
                    out.append(Guard(gb.source, SAME_OBJECT, (ga.source, False)))
        return out

    # ------------------------------------------------------------ inputs
    def add_input(self, source, value):
        """A graph input for tensor `value` at `source` (one per source).
        A tensor already read from another source is the same variable
        (aliasing is guarded: SAME_OBJECT(source, first source, True))."""
        key = source.name()
        if key in self.inputs:
            return self.inputs[key]
        seen = self.input_objs.get(id(value))
        if seen is not None and seen[0] is value:
            self.add_guard(source, SAME_OBJECT, seen[1].source, True)
            self.inputs[key] = seen[1]
            return seen[1]
        from .tracer.variables import TensorVariable
        self.guards.append(Guard(source, TENSOR_MATCH, (value,)))   # lowered in final_guards
        rank = (_rank(source), next(self.input_order))
        before = None
        for node in self.graph.nodes:
            if node.op != "placeholder" or node.meta["rank"] > rank:
                before = node
                break
        with self.graph.inserting_before(before):
            node = self.graph.placeholder(_identifier(_mangle(source)))
        node.meta.update(rank=rank, source=source, real=value)
        example = self.fake_mode.from_tensor(value, static_shapes=True)
        node.meta["example_value"] = example
        var = TensorVariable(node, example, source, cls=type(value))
        self.inputs[key] = var
        self.input_objs[id(value)] = (value, var)
        return var

    def known_container(self, source, value):
        """The variable of list/dict `value` if the trace already holds it
        from another source (two names for one list: a mutation through one
        is seen through the other); aliasing is guarded both ways, as for
        tensors: SAME_OBJECT(source, first source, True) here, and
        SAME_OBJECT(.., False) between containers taken as distinct (see
        `remember_container`)."""
        seen = self.container_objs.get(id(value))
        if seen is None or seen[0] is not value or source is None or seen[1].source is None:
            return None
        if seen[1].source.name() != source.name():
            self.add_guard(source, SAME_OBJECT, seen[1].source, True)
        return seen[1]

    def remember_container(self, source, value, var):
        """Record list/dict `value` read at `source`; guard it distinct from
        the containers of its type read before (a later call passing one
        list under both names must not reuse this trace)."""
        if source is None:
            return
        for other, other_var in self.container_objs.values():
            if type(other) is type(value) and other_var.source is not None:
                self.add_guard(source, SAME_OBJECT, other_var.source, False)
        self.container_objs[id(value)] = (value, var)

    def get_attr(self, tensor, source):
        """A parameter/buffer reached from a module: a get_attr node on the
        GraphModule (shared object), reloadable from `source` if needed."""
        var = self.attr_nodes.get(id(tensor))
        if var is not None:
            return var
        from .tracer.variables import TensorVariable
        target = self._target(_mangle(source), tensor)
        node = self.graph.get_attr(target)
        self._tag(node)
        node.meta["example_value"] = example = self._fake(tensor)
        var = TensorVariable(node, example, source, cls=type(tensor))
        self.attr_nodes[id(tensor)] = var
        return var

    def _target(self, base, obj):
        name = _identifier(base)
        for i in itertools.count():
            cand = name if i == 0 else f"{name}_{i}"
            if cand not in self.root or self.root[cand] is obj:
                self.root[cand] = obj
                return cand

    def _fake(self, tensor):
        fake = self.fake_params.get(id(tensor))
        if fake is None:
            fake = self.fake_params[id(tensor)] = self.fake_mode.from_tensor(tensor, static_shapes=True)
        return fake

    def _fake_module(self, module):
        """A shallow copy of `module` and its submodules whose parameters
        and buffers are the fakes of the originals: the fake run calls the
        copy.  Tracing never writes to the live module (swapping tensors in
        and out of it would show fakes to any other thread running or
        tracing it meanwhile, and leave them there if two swaps interleave)."""
        seen = self.fake_modules.get(id(module))
        if seen is not None and seen[0] is module:
            return seen[1]
        clone = copy.copy(module)
        state = clone.__dict__          # a copy: the live module's stays untouched
        state["_parameters"] = {k: None if v is None else self._fake(v)
                                for k, v in module._parameters.items()}
        state["_buffers"] = {k: None if v is None else self._fake(v)
                             for k, v in module._buffers.items()}
        state["_modules"] = {k: None if v is None else self._fake_module(v)
                             for k, v in module._modules.items()}
        if isinstance(clone, torch.nn.RNNBase):     # keeps its weights in a list too
            clone._init_flat_weights()
        self.fake_modules[id(module)] = (module, clone)
        return clone

    def _tag(self, node, called=None):
        """Record in node.meta["dynamo_module_stack"] the modules whose
        forward made `node` (a call_module node also names the module it
        calls, `called`): tuples (qualified path, class name), outermost
        first.  Telemetry and the tools read it; graphs never do."""
        tx = self.current_tx
        if tx is not None and node.stack_trace is None:
            # the user's code that made the node (fx's stack_trace format),
            # formatted once per distinct stack (source lines are looked up)
            key = []
            while tx is not None:
                key.append((tx.code, tx.lineno))
                tx = tx.parent
            key = tuple(key)
            text = self._stack_texts.get(key)
            if text is None:
                text = self._stack_texts[key] = "".join(traceback.format_list(
                    [traceback.FrameSummary(c.co_filename, line, c.co_name)
                     for c, line in reversed(key)]))
            node.stack_trace = text
        stack = tuple(self.module_stack)
        if called is not None:
            stack += (called,)
        if stack:
            node.meta["dynamo_module_stack"] = stack

    # ------------------------------------------------------------ grad mode
    def set_grad_enabled(self, mode):
        if mode != self.grad_enabled:
            self._tag(self.graph.call_function(torch._C._set_grad_enabled, (mode,)))
            self.grad_enabled = mode

    # ------------------------------------------------------------ ops
    def _examples(self, value):
        from .tracer.variables import (ConstantVariable, DictVariable, TensorVariable,
                                       TupleVariable, ListVariable)
        if isinstance(value, TensorVariable):
            return value.example, value.node
        if isinstance(value, (TupleVariable, ListVariable)):
            pairs = [self._examples(v) for v in value.items]
            t = value.python_type()
            if t is torch.Size:
                t = tuple
            return t(p[0] for p in pairs), t(p[1] for p in pairs)
        if isinstance(value, DictVariable):
            pairs = {k: self._examples(v) for k, v in value.items.items()}
            return {k: p[0] for k, p in pairs.items()}, {k: p[1] for k, p in pairs.items()}
        if isinstance(value, ConstantVariable) or value.is_python_constant():
            c = value.as_python_constant()
            return c, c
        raise Unsupported(f"argument {value} to a graph operation")

    def _prepare(self, args, kwargs):
        ex_args, node_args = zip(*[self._examples(a) for a in args]) if args else ((), ())
        ex_kw = {k: self._examples(v) for k, v in kwargs.items()}
        return (list(ex_args), tuple(node_args), {k: p[0] for k, p in ex_kw.items()},
                {k: p[1] for k, p in ex_kw.items()})

    def _autocast_on(self):
        return any(enabled for _, _, enabled, _ in self.autocast_stack)

    def _probe(self, what, call, ex_args, ex_kw):
        """Fake tensors accept ops that the kernels reject for a dtype or an
        empty input (int64 rand_like, bool abs, max() of an empty tensor,
        float16 kernels missing on the CPU): captured, such an op raised
        inside the graph at run time, after which the frame's earlier Python
        side effects (written back after the graph) were lost. For inputs
        of such dtypes or sizes (see _probe_inputs) the op is also run on
        real ones of the same shapes (the RNG state restored); if that
        raises, the op is a break and runs eagerly, raising there. Ones
        may fail where the real values would not (an index into a dim of
        size 1): then the op only runs eagerly."""
        if self._autocast_on():
            return
        probe = _probe_inputs(ex_args, ex_kw)
        if probe is None:
            return
        args, kw = probe
        rng = torch.get_rng_state()
        try:
            with _quiet_fake_tensor_log(), torch.set_grad_enabled(self.grad_enabled), warnings.catch_warnings():
                warnings.simplefilter("ignore")
                call(args, kw)
        except Exception as e:  # noqa: BLE001 - the kernel's refusal: a break
            raise Unsupported(f"{what} fails on real tensors like the example values "
                              f"({type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''})") from e
        finally:
            torch.set_rng_state(rng)

    def _run_fake(self, what, fn):
        try:
            with _quiet_fake_tensor_log(), self.fake_mode, torch.set_grad_enabled(self.grad_enabled), \
                    contextlib.ExitStack() as blocks:
                for device, dtype, enabled, cache in self.autocast_stack:
                    blocks.enter_context(torch.autocast(device, dtype, enabled, cache))
                return fn()
        except Unsupported:
            raise
        except Exception as e:  # noqa: BLE001 - any failure on fake values is a break
            raise Unsupported(f"{what} cannot run on example values "
                              f"({type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''})") from e

    @staticmethod
    def check_not_in_try(tx):
        """A graph op must not run where a handler could see its exception:
        the graph runs outside the try (an op that fails at run time, or
        whose failure differs on example values, would skip the handler and
        the locals it would see). Unsupported makes the try run eagerly."""
        if tx is not None and tx.in_try_region():
            raise Unsupported("tensor operation inside a try block (the try runs eagerly "
                              "so that its handlers see the operation's exceptions)")

    def call_function(self, tx, fn, args, kwargs):
        self.check_not_in_try(tx)
        ex_args, n_args, ex_kw, n_kw = self._prepare(args, kwargs)
        name = getattr(fn, "__name__", str(fn))
        versions = _versions(args, kwargs)

        def run():
            _check_same_dtypes(name, ex_args, ex_kw, self._autocast_on())
            return fn(*ex_args, **ex_kw)
        example = self._run_fake(name, run)
        self._probe(name, lambda a, k: fn(*a, **k), ex_args, ex_kw)
        same = None if name.endswith("_") else _returned_input(args, kwargs, example, versions)
        if same is not None:
            return same
        if isinstance(example, types.FunctionType) and not _has_node((n_args, n_kw)):
            # a torch helper that makes a function from constants
            # (nn.modules.utils._ntuple(3)): the function itself, called
            # like its maker when it is graphable too
            from .tracer.variables.torch import TorchFunctionVariable, is_graphable_torch_callable
            if is_graphable_torch_callable(example):
                return TorchFunctionVariable(example)
        return self._wrap_result("call_function", fn, n_args, n_kw, example,
                                 effect=fn is operator.setitem or name.endswith("_"))

    def call_method(self, tx, name, args, kwargs):
        self.check_not_in_try(tx)
        ex_args, n_args, ex_kw, n_kw = self._prepare(args, kwargs)

        def run():
            _check_inplace_cast(name, ex_args, ex_kw)
            _check_same_dtypes(name, ex_args, ex_kw, self._autocast_on())
            return getattr(ex_args[0], name)(*ex_args[1:], **ex_kw)
        versions = _versions(args, kwargs)
        example = self._run_fake(f"Tensor.{name}", run)
        self._probe(f"Tensor.{name}", lambda a, k: getattr(a[0], name)(*a[1:], **k), ex_args, ex_kw)
        # an in-place method may change no data and still act (detach_())
        same = None if name.endswith("_") else _returned_input(args, kwargs, example, versions)
        if same is not None:
            return same
        return self._wrap_result("call_method", name, n_args, n_kw, example,
                                 effect=name.endswith("_") or name == "__setitem__")

    def capture_item(self, tx, tensor):
        """`tensor.item()` as a node (config.capture_scalar_outputs): its
        value is a graph output, read by the rewritten code."""
        from .tracer.variables.tensor import ScalarOutputVariable
        self.check_not_in_try(tx)
        node = self.graph.create_node("call_method", "item", (tensor.node,), {})
        self._tag(node)
        node.meta["example_value"] = None        # known only when the graph runs
        node.meta["scalar_output"] = True         # a Python number (export reads this)
        from .tracer.variables.tensor import _item_type
        return ScalarOutputVariable(node, _item_type(tensor.example.dtype))

    def scalar_op(self, tx, fn, a, b):
        """`a fn b` where an operand is a captured Tensor.item() number
        (ScalarOutputVariable): a node. Only arithmetic and comparisons,
        whose result (a number of a kind known from the operands' kinds, or
        a tensor shaped like the tensor operand) does not depend on the
        number's value; the example values use a stand-in of the right kind."""
        from .tracer.variables import ConstantVariable, TensorVariable
        from .tracer.variables.tensor import ScalarOutputVariable
        fn = _INPLACE_NUMBER_OPS.get(fn, fn)     # numbers have no in-place forms
        if fn not in _SCALAR_OPS:
            raise Unsupported(f"{getattr(fn, '__name__', fn)} on a captured Tensor.item() value")
        nodes, examples = [], []
        for v in (a, b):
            if isinstance(v, ScalarOutputVariable):
                nodes.append(v.node)
                examples.append(v.cls(1))
            elif isinstance(v, TensorVariable):
                nodes.append(v.node)
                examples.append(v.example)
            elif isinstance(v, ConstantVariable) and type(v.value) in (int, float, bool, complex):
                nodes.append(v.value)
                examples.append(v.value)
            else:
                raise Unsupported(f"{getattr(fn, '__name__', fn)} of a captured Tensor.item() "
                                  f"value and {v}")
        self.check_not_in_try(tx)
        if isinstance(a, TensorVariable) or isinstance(b, TensorVariable):
            example = self._run_fake(fn.__name__, lambda: fn(*examples))
            return self._wrap_result("call_function", fn, tuple(nodes), {}, example)
        try:
            kind = type(fn(*examples))
        except Exception as e:  # noqa: BLE001 - e.g. a constant zero divisor: let it run eagerly
            raise Unsupported(f"{fn.__name__} on a captured Tensor.item() value "
                              f"({type(e).__name__})") from e
        node = self.graph.call_function(fn, tuple(nodes))
        self._tag(node)
        node.meta["example_value"] = None
        node.meta["scalar_output"] = True
        return ScalarOutputVariable(node, kind)

    def call_module(self, tx, module, source, args, kwargs):
        self.check_not_in_try(tx)
        target = self.module_targets.get(id(module))
        if target is None:
            target = self.module_targets[id(module)] = self._target(_mangle(source), module)
        ex_args, n_args, ex_kw, n_kw = self._prepare(args, kwargs)
        fake_module = self._fake_module(module)
        versions = _versions(args, kwargs)
        example = self._run_fake(type(module).__name__, lambda: fake_module(*ex_args, **ex_kw))
        same = _returned_input(args, kwargs, example, versions)
        if same is not None:
            return same
        return self._wrap_result("call_module", target, n_args, n_kw, example,
                                 called=(module_path(source), type(module).__name__))

    def _wrap_result(self, op, target, n_args, n_kw, example, effect=False, called=None):
        from .tracer.variables import ConstantVariable, TensorVariable, TupleVariable, ListVariable
        from .tracer.variables.containers import NamedTupleVariable
        from .tracer.variables.base import is_constant_value
        if isinstance(example, torch.Tensor):
            node = self.graph.create_node(op, target, n_args, n_kw)
            self._tag(node, called)
            node.meta["example_value"] = example
            return TensorVariable(node, example)
        if isinstance(example, (tuple, list)) and any(isinstance(e, torch.Tensor) for e in example):
            node = self.graph.create_node(op, target, n_args, n_kw)
            self._tag(node, called)
            node.meta["example_value"] = example
            items = []
            for i, e in enumerate(example):
                if isinstance(e, torch.Tensor):
                    item = self.graph.call_function(operator.getitem, (node, i))
                    self._tag(item)
                    item.meta["example_value"] = e
                    items.append(TensorVariable(item, e))
                elif is_constant_value(e):
                    items.append(ConstantVariable(e))
                else:
                    raise Unsupported(f"{target} returned a {type(e).__name__} item")
            fields = getattr(type(example), "_fields", None) or _structseq_fields(example)
            if not fields:
                # split/unbind/chunk/...: how many tensors come out depends
                # on the input sizes, and the trace bakes that count in
                self.sizes_read = True
            if isinstance(example, list):
                return ListVariable(items)
            return TupleVariable(items) if not fields else NamedTupleVariable(items, fields)
        if effect or example is None and op == "call_method":
            self._tag(self.graph.create_node(op, target, n_args, n_kw), called)
            return ConstantVariable(example) if is_constant_value(example) else ConstantVariable(None)
        if is_constant_value(example):
            return ConstantVariable(example)
        raise Unsupported(f"{getattr(target, '__name__', target)} returned {type(example).__name__}")

    # ------------------------------------------------------------ constants
    def real_value(self, var):
        """The real value of traced value `var` for this frame's inputs: a
        graph tensor is computed by running the graph so far on the real
        inputs (hook off, grad mode restored); containers item by item."""
        from .tracer.variables import (DictVariable, ListVariable, TensorVariable,
                                       TupleVariable)
        if isinstance(var, TensorVariable):
            if var.node.op == "placeholder":
                return var.node.meta["real"]
            if var.node.op == "get_attr":
                return self.root[var.node.target]
            graph = torch.fx.Graph()
            env = {}
            for node in self.graph.nodes:
                env[node] = graph.node_copy(node, lambda n: env[n])
                if node is var.node:
                    break
            graph.output(env[var.node])
            gm = torch.fx.GraphModule(self.root, graph)
            reals = [n.meta["real"] for n in self.graph.nodes if n.op == "placeholder"]
            live = {n.name for n in graph.nodes if n.op == "placeholder"}
            reals = [r for n, r in zip([n for n in self.graph.nodes if n.op == "placeholder"],
                                       reals) if n.name in live]
            from .eval_frame import disable
            with disable(), torch.set_grad_enabled(torch.is_grad_enabled()):
                torch._C._set_grad_enabled(self.initial_grad)
                return gm(*reals)
        if isinstance(var, (TupleVariable, ListVariable)):
            t = var.python_type()
            return (list if t is list else tuple)(self.real_value(v) for v in var.items)
        if isinstance(var, DictVariable):
            return {k: self.real_value(v) for k, v in var.items.items()}
        if var.is_python_constant():
            return var.as_python_constant()
        value = getattr(var, "value", None)
        if value is not None:
            return value
        module = getattr(var, "module", None)
        if module is not None:
            return module
        raise Unsupported(f"no real value for {var}")

    def fold_constant_call(self, tx, fn, args, kwargs):
        """dynamo.assume_constant_result: call `fn` now on the real values of
        `args` and put its result into the graph as a constant (a tensor
        becomes a get_attr of the GraphModule)."""
        from .tracer.variables import ConstantVariable
        from .tracer.variables.base import is_constant_value
        from .eval_frame import disable
        real_args = [self.real_value(a) for a in args]
        real_kw = {k: self.real_value(v) for k, v in kwargs.items()}
        with disable():
            result = fn(*real_args, **real_kw)
        if is_constant_value(result):
            return ConstantVariable(result)
        if isinstance(result, torch.Tensor):
            return self.constant_tensor(result, getattr(fn, "__name__", "constant"))
        from .tracer.variables import DictVariable, ListVariable, TupleVariable

        def item(r):
            if is_constant_value(r):
                return ConstantVariable(r)
            if isinstance(r, torch.Tensor):
                return self.constant_tensor(r, "constant")
            raise Unsupported(f"assume_constant_result: a {type(r).__name__} in the result")
        if type(result) in (list, tuple):
            return (ListVariable if type(result) is list else TupleVariable)([item(r) for r in result])
        if type(result) is dict and all(is_constant_value(k) for k in result):
            return DictVariable({k: item(v) for k, v in result.items()})
        raise Unsupported(f"assume_constant_result: {type(result).__name__} result")

    def constant_tensor(self, tensor, base):
        """A tensor constant of the graph: a get_attr node on a detached copy."""
        from .tracer.variables import TensorVariable
        value = tensor.detach().clone()
        target = self._target(f"_const_{_identifier(base)}_{len(self.root)}", value)
        node = self.graph.get_attr(target)
        self._tag(node)
        node.meta["example_value"] = example = self._fake(value)
        return TensorVariable(node, example)

    # ------------------------------------------------------------ compile
    def op_count(self):
        return sum(1 for n in self.graph.nodes if n.op.startswith("call_")
                   and n.target is not torch._C._set_grad_enabled)

    def compile_graph(self, output_vars, branch_on=None):
        """Finish the graph with the tensors among `output_vars` that must
        come out of it (computed tensors, not inputs) and compile it.
        `branch_on`: the tensor a data-dependent branch right after the
        graph tests; when it is an input and the graph would otherwise be
        empty, the graph is the input returned (the backend sees every
        graph that ends at a tensor branch, as under torch.compile; the
        generated code still reads the input from its source).
        Returns (GraphInfo or None, {node: output index}, [input sources])."""
        from .tracer.variables import TensorVariable
        from .tracer.variables.tensor import ScalarOutputVariable
        outputs, index = [], {}
        for var in output_vars:
            # a get_attr without a source is a constant of the graph (assume_constant_result)
            if isinstance(var, ScalarOutputVariable) and var.node not in index:
                index[var.node] = len(outputs)
                outputs.append(var.node)
            elif isinstance(var, TensorVariable) and var.node not in index and (
                    var.node.op not in ("placeholder", "get_attr")
                    or var.node.op == "get_attr" and var.source is None):
                index[var.node] = len(outputs)
                outputs.append(var.node)
        if self.op_count() == 0 and not outputs:
            if not isinstance(branch_on, TensorVariable) or branch_on.source is None:
                return None, {}, []
            outputs.append(branch_on.node)        # not in `index`: read from its source
        if self.grad_enabled != self.initial_grad:
            self.graph.call_function(torch._C._set_grad_enabled, (self.initial_grad,))
        self.graph.output(tuple(outputs))
        for node in list(self.graph.nodes):
            if node.op == "placeholder" and not node.users:
                self.graph.erase_node(node)
        placeholders = [n for n in self.graph.nodes if n.op == "placeholder"]
        gm = torch.fx.GraphModule(self.root, self.graph)
        gm.meta = {}
        example_inputs = [n.meta.pop("real") for n in placeholders]   # gm keeps no real inputs
        name = f"__compiled_fn_{next(_graph_counter)}"
        compiled = self.compiler_fn(gm, example_inputs)
        self.install[name] = compiled
        info = GraphInfo(name, gm, compiled, example_inputs, self.op_count())
        return info, index, [n.meta["source"] for n in placeholders]


_SCALAR_OPS = {operator.add, operator.sub, operator.mul, operator.truediv, operator.floordiv,
               operator.mod, operator.pow, operator.lt, operator.le, operator.gt, operator.ge,
               operator.eq, operator.ne}
_INPLACE_NUMBER_OPS = {operator.iadd: operator.add, operator.isub: operator.sub,
                       operator.imul: operator.mul, operator.itruediv: operator.truediv,
                       operator.ifloordiv: operator.floordiv, operator.imod: operator.mod,
                       operator.ipow: operator.pow}


def _has_node(args):
    """Does the (nested) node-argument structure contain an fx.Node?"""
    found = []
    torch.fx.node.map_arg(args, lambda n: found.append(n))
    return bool(found)


def _could_be_one_tensor(a, b):
    """Could one tensor pass both TENSOR_MATCH expected tuples? (Fields both
    check must agree; None sizes/strides or dims are unchecked.)"""
    if a[:6] != b[:6]:
        return False
    for x, y in ((a[6], b[6]), (a[7], b[7])):
        if x is not None and y is not None and any(
                p is not None and q is not None and p != q for p, q in zip(x, y)):
            return False
    return True


def _structseq_fields(value):
    """Field names of a torch.return_types structseq, else None."""
    cls = type(value)
    if hasattr(cls, "n_fields") and hasattr(cls, "n_sequence_fields"):
        members = [k for k, v in cls.__dict__.items() if type(v).__name__ == "member_descriptor"]
        return tuple(members[:len(value)]) or None
    return None


# ---------------------------------------------------------------- codegen

class PyCodegen:
    """Instruction emitter for rewritten code: loads by source, rebuilds
    values from graph outputs, keeps containers' identity (each traced
    container is built once and reloaded from a temporary)."""

    def __init__(self, code, graph_out=None):
        self.code = code
        self.insts = []
        self.graph_out = graph_out       # (local name, {node: index}) or None
        self.built = {}                  # id(var) -> temp local holding it
        self.keep = []                   # vars referenced by `built`
        self.temps = itertools.count()
        self.temp_names = []             # temporaries stored, in creation order
        self.cells = set(code.co_cellvars) | set(code.co_freevars)
        self.entry_values = {}           # argument cell -> temp holding its value at entry

    def emit(self, opname, **kw):
        inst = create_instruction(opname, **kw)
        self.insts.append(inst)
        return inst

    def append(self, inst):
        self.insts.append(inst)

    def load_method(self, name):
        """[obj] -> [method, self] or [NULL, attribute], for emit_call."""
        self.insts.append(create_load_method(name))

    def emit_call(self, nargs):
        """The call instructions for the stack a call takes: [NULL|self,
        callable, args] (3.13: [callable, NULL|self, args])."""
        self.insts.extend(create_call(nargs))

    def push_call_null(self, loaded):
        """The NULL of a call, where it goes: under the callable (3.11,
        3.12: emitted before the callable is loaded, `loaded` False), above
        it (3.13: emitted right after, `loaded` True)."""
        if loaded == NULL_ABOVE_CALLABLE:
            self.emit("PUSH_NULL")

    def load_const(self, value):
        self.emit("LOAD_CONST", argval=value)

    def load_local(self, name):
        self.emit("LOAD_DEREF" if name in self.cells else "LOAD_FAST", argval=name)

    def store_local(self, name):
        self.emit("STORE_DEREF" if name in self.cells else "STORE_FAST", argval=name)

    def new_temp(self, prefix="___tmp"):
        name = f"{prefix}_{next(self.temps)}"
        self.temp_names.append(name)
        return name

    def delete_temps(self):
        """DELETE_FAST every temporary stored so far (the graph output
        included), so user code run in this frame afterwards (a call run
        eagerly at a break) sees only its own names in locals()."""
        for name in self.temp_names:
            self.emit("DELETE_FAST", argval=name)
        self.temp_names = []
        self.entry_values = {}           # their temporaries are gone

    def call(self, nargs):
        """Call with stack [callable, args...]: a NULL goes into the call's
        NULL|self slot."""
        self.insts.extend(create_call_function(nargs, push_null=True))

    def call_ex(self):
        """Call with stack [callable, args_tuple]."""
        self.emit("PUSH_NULL")
        if NULL_ABOVE_CALLABLE:             # 3.13: [callable, NULL, args_tuple]
            self.emit("SWAP", arg=2)
        else:                               # [NULL, callable, args_tuple]
            self.emit("SWAP", arg=3)
            self.emit("SWAP", arg=2)
        self.emit("CALL_FUNCTION_EX", arg=0)

    def keep_entry_value(self, name):
        """Before a STORE_DEREF giving the frame's cell `name` the value the
        trace put in it while values are still being loaded (a closure
        rebuilt at a break): when `name` is an argument, its value at entry
        into a temporary, which load_source reads from then on (a tensor
        passed as two arguments has the other's source: `nonlocal t1;
        t1 = ...` then gave `t0` t1's new value)."""
        if name in self.entry_values or name not in self.code.co_varnames[:arg_slot_count(self.code)]:
            return
        temp = self.new_temp("___entry")
        self.load_local(name)
        self.store_local(temp)
        self.entry_values[name] = temp

    def load_source(self, source):
        if isinstance(source, LocalSource):
            self.load_local(self.entry_values.get(source.local_name, source.local_name))
        elif isinstance(source, GlobalSource):
            self.emit("LOAD_GLOBAL", argval=source.global_name)
        elif isinstance(source, ClosureSource):
            self.emit("LOAD_DEREF", argval=source.var_name)
        elif isinstance(source, AttrSource):
            self.load_source(source.base)
            self.emit("LOAD_ATTR", argval=source.attr)
        elif isinstance(source, ItemSource):
            self.load_source(source.base)
            self.load_const(source.key)
            self.emit("BINARY_SUBSCR")
        else:
            raise Unsupported(f"cannot load {source.name()}")

    def load_tensor(self, var):
        if self.graph_out is not None:
            name, index = self.graph_out
            i = index.get(var.node)
            if i is not None:
                self.load_local(name)
                self.load_const(i)
                self.emit("BINARY_SUBSCR")
                return
        if var.source is not None:
            self.load_source(var.source)
            return
        raise Unsupported("a tensor that is neither a graph input nor a graph output")

    def reconstruct(self, var):
        """Leave `var`'s run-time value on the stack."""
        from .tracer.variables import DictVariable, ListVariable, TupleVariable
        from .tracer.variables.containers import ListIteratorVariable
        from .tracer.variables.misc import NewObjectVariable
        from .tracer.variables.base import CellVariable
        from .tracer.variables.functions import NestedFunctionVariable
        temp = self.built.get(id(var))
        if temp is not None:
            self.load_local(temp)
            return
        var.reconstruct(self)
        # mutable values made by the traced code are built once: every
        # reference (a call's argument, a local passed to a resume
        # function) must be the same object
        if isinstance(var, (ListVariable, DictVariable, NewObjectVariable, CellVariable,
                            NestedFunctionVariable, ListIteratorVariable)) and var.source is None:
            temp = self.new_temp()
            self.emit("COPY", arg=1)
            self.store_local(temp)
            self.built[id(var)] = temp
            self.keep.append(var)
        elif isinstance(var, TupleVariable):
            pass

    def call_graph(self, info, input_sources, out_name):
        """__compiled_fn_<n>(*inputs) -> local `out_name`."""
        self.emit("LOAD_GLOBAL", argval=info.name, push_null=True)
        for src in input_sources:
            self.load_source(src)
        self.emit_call(len(input_sources))
        self.store_local(out_name)
        self.temp_names.append(out_name)
