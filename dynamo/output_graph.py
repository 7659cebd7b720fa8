"""The fx graph under construction for one compile, its inputs, guards and
example values.

OutputGraph owns: the torch.fx.Graph, the FakeTensorMode that computes
example values, graph inputs (placeholders, each with the Source to load it
from at run time), parameters/buffers/leaf modules (get_attr / call_module
targets on the GraphModule), the guards recorded while tracing, the traced
grad mode, and `compile_nodes()` which hands the graph to the backend and
installs `__compiled_fn_<n>` in the frame's globals. It handles fx nodes
and example values only and imports nothing of the tracer: the ops and
inputs as VariableTrackers (add_input, call_function, compile_graph, ...)
are tracer/variables/builder.py's GraphBuilder, the OutputGraph subclass
the translator works with. codegen.PyCodegen
emits the instructions that load inputs, call the graph and rebuild values
from its outputs. Neither decides *where* to break: that is the translator's job.
An op is captured only if it runs on the fake example values and, where
fake tensors accept what kernels refuse (unusual dtypes, empty or
mixed-dtype inputs: OutputGraph._probe), on real ones of their shapes;
otherwise it is Unsupported (a break: it runs eagerly).
"""
import contextlib
import copy
import itertools
import logging
import threading
import warnings
import weakref

import traceback

import torch
from torch._dispatch.python import enable_python_dispatcher
import torch.fx
from torch._subclasses.fake_tensor import FakeTensorMode
from torch.fx.experimental.symbolic_shapes import ShapeEnv

from . import config, rng
from .exc import Unsupported
from .guards import (GLOBAL_STATE, GRAD_MODE, ID_MATCH, SAME_OBJECT, STORAGE_MATCH, TENSOR_MATCH,
                     Guard, NoSource, global_state_word, ordered, origin_of_tx, storage_key,
                     tensor_expected)
from .guards import _identifier
from .input_writes import defer_input_writes

_graph_counter = itertools.count()


def _weak_method(method):
    """A callable calling bound `method` without keeping its object alive
    (the ShapeEnv it goes into must not hold the OutputGraph); None once
    the object is gone."""
    ref = weakref.WeakMethod(method)

    def call():
        m = ref()
        return None if m is None else m()
    return call


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
# ops whose integer tensor arguments are indices (probed with zeros)
_INDEXING_OPS = frozenset({"getitem", "setitem", "Tensor.__getitem__", "Tensor.__setitem__"})
# ops whose integer tensor arguments are indices (scatter_, gather,
# index_select, index_add_, take_along_dim, embedding, ...): probed with
# zeros, a valid index into any non-empty dim, where ones are not
_INDEX_ARGUMENT_WORDS = ("scatter", "gather", "index", "take", "embedding", "put")


def _takes_indices(what):
    """Whether the op named `what` ("Tensor.scatter_", "torch.gather",
    "getitem") reads integer tensors as indices."""
    if what in _INDEXING_OPS:
        return True
    words = what.rsplit(".", 1)[-1].lower().split("_")      # index_put_ -> index, put
    return any(word in _INDEX_ARGUMENT_WORDS for word in words)


_PLAIN_FLOATS = (torch.float32, torch.float64)


def example_is_leaf(v):
    """`v.is_leaf` of example tensor `v`, without reading a view's autograd
    state: a view is a leaf exactly when it does not require grad. After a
    write through a view or its base, reading the view's is_leaf or
    grad_fn regenerates its grad_fn, which fails on a fake view (the
    fake's base does not require grad: `y.view(-1)[0] = 5` in a no_grad
    frame raised) and leaves the fake without requires_grad (a later
    `y.requires_grad` read False: seed 9310358)."""
    return not v.requires_grad if v._is_view() else v.is_leaf


def _probe_inputs(ex_args, ex_kw, wrote=False, index=False):
    """Real stand-ins for a probe of an op on fake examples: ones of each
    tensor's shape, strides, dtype and requires_grad (top level, or in a
    list or tuple), tensors that share a storage (a view of another
    argument) sharing one buffer at the same offsets, or None when the op
    needs no probe: every tensor a non-empty float32/float64 one of one
    dtype without internal overlap (an expanded tensor: in-place ops refuse
    to write it) and, for an op that `wrote` an argument, no two sharing a
    storage (a write that partly overlaps another argument is refused),
    and no Python bool operand (`t - True` is refused), which fake tensors
    describe well; a tensor not on the CPU, more than _PROBE_MAX_NUMEL
    elements, or tensors anywhere else (a dict). `index`: the op indexes
    (getitem, setitem): integer tensors are zeros, not ones."""
    tensors = []

    def walk(v, fn, depth=0):
        if isinstance(v, torch.Tensor):
            return fn(v)
        if isinstance(v, (torch.SymInt, torch.SymFloat, torch.SymBool)):
            return _hint(v)                     # a symbolic size argument: this call's value
        if isinstance(v, slice):
            return slice(walk(v.start, fn, depth), walk(v.stop, fn, depth), walk(v.step, fn, depth))
        if isinstance(v, (list, tuple)) and depth < 2:
            items = [walk(x, fn, depth + 1) for x in v]
            return items if isinstance(v, list) else tuple(items)
        if isinstance(v, dict):
            if any(isinstance(x, torch.Tensor) for x in v.values()):
                raise LookupError
        return v

    def extent(v):
        if v.device.type != "cpu" or v.layout != torch.strided or v.is_quantized:
            raise LookupError
        shape, stride, offset = _hints(v)       # symbolic sizes: this call's values
        tensors.append(v)
        span = 1 + sum((n - 1) * st for n, st in zip(shape, stride)) if 0 not in shape else 0
        if span > _PROBE_MAX_NUMEL:
            raise LookupError
        key = (v.untyped_storage()._cdata, v.dtype)     # views as two dtypes: two buffers
        lo, hi = storages.get(key, (offset, 0))
        storages[key] = (min(lo, offset), max(hi, offset + span))

    def real(v):
        key = (v.untyped_storage()._cdata, v.dtype)
        shape, stride, offset = _hints(v)
        offset -= storages[key][0]
        grad = v.requires_grad and (v.is_floating_point() or v.is_complex())
        leaf = example_is_leaf(v)
        if grad and not leaf:           # a computed value: in-place ops on it are allowed
            if key not in computed:     # one per storage: views of one value still overlap
                computed[key] = buffers[key].detach().requires_grad_(True) * 1
            return computed[key].as_strided(shape, stride, offset)
        r = buffers[key].as_strided(shape, stride, offset)
        return r.requires_grad_(True) if grad else r
    storages, computed = {}, {}
    try:
        for a in (*ex_args, *ex_kw.values()):
            walk(a, extent)
        if not tensors or sum(hi - lo for lo, hi in storages.values()) > _PROBE_MAX_NUMEL:
            return None
        dtypes = {t.dtype for t in tensors}
        if len(dtypes) == 1 and dtypes <= set(_PLAIN_FLOATS) and \
                all(0 not in _hints(t)[0] for t in tensors) and \
                not any(_overlaps(t) for t in tensors) and \
                (not wrote or len(storages) == len({id(t) for t in tensors})) and \
                not any(type(a) is bool for a in ex_args):
            return None             # decided before any real tensor is made
        # integer tensors of an indexing op are indices: zeros are valid for
        # every non-empty dim, where ones fail on a dim of size 1 (a padding
        # mask indexed by arange(batch) at batch 1: a spurious break)
        fill = {k: 0 if index and not k[1].is_floating_point and not k[1].is_complex
                and k[1] is not torch.bool else 1 for k in storages}
        buffers = {k: torch.full((hi - lo,), fill[k], dtype=k[1]) for k, (lo, hi) in storages.items()}
        args = [walk(a, real) for a in ex_args]
        kw = {k: walk(v, real) for k, v in ex_kw.items()}
    except LookupError:
        return None
    return args, kw


def _hint(d):
    """A number, or the value a symbolic one (SymInt, SymFloat, SymBool)
    has in this trace's call (LookupError for one computed from data: no
    probe)."""
    if type(d) in (int, float, bool):
        return d
    hint = d.node.hint
    if hint is None:
        raise LookupError
    return {torch.SymFloat: float, torch.SymBool: bool}.get(type(d), int)(hint)


def _overlaps(v):
    """Has example `v` internal overlap (an expanded tensor)?  Read on a
    meta tensor of its call's sizes and strides when they are symbolic
    (no guard on them)."""
    if all(type(d) is int for d in (*v.shape, *v.stride())):
        return torch._debug_has_internal_overlap(v) == 1
    shape, stride, _ = _hints(v)
    return torch._debug_has_internal_overlap(
        torch.empty_strided(shape, stride, dtype=v.dtype, device="meta")) == 1


def _hints(v):
    """(sizes, strides, storage offset) of example `v` as this call's ints,
    without guarding on them."""
    return ([_hint(d) for d in v.shape], [_hint(d) for d in v.stride()],
            _hint(v.storage_offset()))


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


def _has_symbols(env):
    """The trace made a symbolic size (backed, or computed from data)."""
    return bool(env.var_to_range)


class OutputGraph:
    """Graph, inputs and guards of one compile (see module docstring)."""

    def __init__(self, frame, compiler_fn):
        self.frame = frame                      # convert_frame.FrameInfo
        self.compiler_fn = compiler_fn
        self.graph = torch.fx.Graph()
        # a vmapped function being traced (tracer/variables/higher_order.py
        # VmapScope), and the open TransformGetItemToIndex blocks
        self.vmap_scope = None
        self.getitem_to_index = 0
        # storages (fake) any op wrote in place, input or not: a tensor
        # made from constants is not folded once one of its storages is
        # (GraphBuilder.input_free_value); None: a write nobody could place
        self.every_written_storage = set()
        # the dynamic dimensions of inputs are symbols of this shape env
        # (dynamic_shapes.dynamic_dims; the others stay constants), and
        # data-dependent output sizes unbacked ones (or a break when
        # capture_dynamic_output_shape_ops is off)
        from .shape_guards import release_shape_env_caches
        release_shape_env_caches()      # an earlier compile's ShapeEnv lives in them
        self.shape_env = ShapeEnv(allow_scalar_outputs=config.capture_scalar_outputs, duck_shape=False,
                                  allow_dynamic_output_shape_ops=config.capture_dynamic_output_shape_ops)
        self.fake_mode = FakeTensorMode(shape_env=self.shape_env)
        # each guard the ShapeEnv records keeps the user line that made it
        from .shape_guards import OriginList
        self.shape_env.guards = OriginList(_weak_method(self.origin))
        # symbol -> shape_guards.Leaf: the input size each symbol stands for;
        # (Leaf, sympy expr): input strides the examples hold as expressions
        self.shape_leaves = {}
        self.stride_facts = []
        self.symbolic_inputs = {}               # source name -> symbolic example
        self.guards = []
        self.inputs = {}                        # source name -> TensorVariable
        self.int_inputs = {}                    # source name -> SymNodeVariable (a symbolic int)
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
        # (callable VT, argument VTs, keyword VTs): calls with no result the
        # trace uses (logging: tracer/variables/misc.py, replayed_call),
        # made by the rewritten code after the graph, in trace order
        self.replayed_calls = []
        # a graph op ran where a user handler (try/except/finally) covers it:
        # the rewritten code re-runs the frame eagerly if the graph raises
        # (tracer/frame.py, emit_guarded_graph_call); sound only while the
        # graph's writes to its inputs wait for its end (input_writes.py)
        self.deopt = False
        # the trace called torch.compiler.is_compiling() (True here, False
        # in eager): code after a break may then see values only a compiled
        # run makes (a mask left None "because compiling"), so user code that
        # raises at trace time makes the frame run eagerly (tracer/frame.py)
        self.saw_is_compiling = False
        self.mutates_inputs = False
        # id(example) -> (example, why): graph inputs that are views whose
        # autograd history eager refuses (builder._check_views_for_autograd)
        self.refused_history = {}
        # why a write of the graph to an input cannot wait for the graph's
        # end (input_written), or None: then no op may run inside a try
        self.undeferred_write = None
        # storages (untyped_storage()._cdata of the example values) the
        # graphs wrote in place; None: a write whose storage could not be
        # read (every input then counts as written). See _storage_guards.
        self.written_storages = set()
        self.uses_autocast = False
        self.add_guard(NoSource(), GRAD_MODE, self.initial_grad)
        # deterministic algorithms, default dtype, autocast, backend flags,
        # inference mode (docs/USER_GUIDE.md, "Global state")
        self.add_guard(NoSource(), GLOBAL_STATE, global_state_word())

    # ------------------------------------------------------------ guards
    def add_guard(self, source, kind, *expected):
        self.guards.append(Guard(source, kind, tuple(expected), self.origin()))

    def origin(self):
        """The user line being traced now (guards.Origin), None before the
        first instruction: the provenance of a guard installed now."""
        return origin_of_tx(self.current_tx)

    def final_guards(self):
        """Guards in print order, with TENSOR_MATCH sizes decided now (kept
        when dynamic_shapes is off or the trace read any size)."""
        out = []
        for g in self.guards:
            if g.kind == TENSOR_MATCH:
                g = Guard(g.source, TENSOR_MATCH, self._tensor_expected(g.source, g.expected[0]),
                          g.origin)
            out.append(g)
        out += self._distinct_input_guards([g for g in out if g.kind == TENSOR_MATCH])
        if self.shape_leaves:
            from .shape_guards import produce, release_shape_env_caches
            out += produce(self.shape_env, self.shape_leaves, self.stride_facts,
                           self._input_origins(out))
            release_shape_env_caches()
        storage = self._storage_guards()
        # GLOBAL_STATE, then GRAD_MODE last (as printed since the seeds)
        grad = ([g for g in out if g.kind == GLOBAL_STATE] + [g for g in out if g.kind == GRAD_MODE])
        alias = [g for g in out if g.kind == SAME_OBJECT]       # relations last, as printed
        rest = [g for g in out if g.kind not in (GRAD_MODE, GLOBAL_STATE, SAME_OBJECT)]
        return ordered(rest) + ordered(alias) + ordered(storage) + grad

    @staticmethod
    def _input_origins(guards):
        """source name -> the Origin of its TENSOR_MATCH (the line that first
        read the tensor): what guards about the input as a whole point to."""
        return {g.source.name(): g.origin for g in guards if g.kind == TENSOR_MATCH}

    def _tensor_expected(self, source, tensor):
        """TENSOR_MATCH's fields for input `tensor`: sizes and strides the
        example holds as symbols are unchecked there (None: SHAPE_GUARDs
        relate them)."""
        expected = tensor_expected(tensor, False)
        example = self.symbolic_inputs.get(source.name())
        if example is None:
            return expected
        sizes = tuple(None if type(e) is not int else d
                      for d, e in zip(expected[6], example.shape))
        strides = tuple(None if type(e) is not int else d
                        for d, e in zip(expected[7], example.stride()))
        return (*expected[:6], sizes, strides)

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
                    out.append(Guard(gb.source, SAME_OBJECT, (ga.source, False), gb.origin))
        return out

    def _storage_guards(self):
        """STORAGE_MATCH(o, w, same) between each tensor w the graphs write
        in place (directly or through a view: a graph input, or a parameter
        or buffer) and each other tensor input o, `same` as the example
        values have it. Only for a trace that writes an input: a write is
        then seen, or not, through every tensor sharing its storage, and
        the trace decided by the storages it saw (the fake example values
        share storages as the inputs did: what an op after the write reads,
        the real-tensor probes of writes to shared storages, and aot
        autograd's functionalization, which writes a mutated input back at
        the end and makes a synthetic base only for inputs it saw aliased).
        A relation that differs on a later call recompiles. A trace that
        writes no input gets none: reads alone do not depend on aliasing
        (aot regenerates an output view from its own base), so frames
        without writes pay nothing. Pairs on two devices cannot share a
        storage and get none; tensors without a storage (sparse) neither."""
        if not self.mutates_inputs:
            return []
        written = self.written_storages
        inputs = []                     # (source, real tensor, example value)
        for g in self.guards:
            if g.kind == TENSOR_MATCH:
                var = self.inputs.get(g.source.name())
                if var is not None:
                    inputs.append((g.source, g.expected[0], var.example))
        writes = [i for i in inputs if written is None or storage_key(i[2]) in written]
        if written:
            # parameters/buffers written in place, by the source whose
            # identity is guarded already (ID_MATCH): fetched once per call
            by_id = {id(g.expected[0]): g.source for g in self.guards
                     if g.kind == ID_MATCH and isinstance(g.expected[0], torch.Tensor)}
            for var in self.attr_nodes.values():
                real = self.root.get(var.node.target)
                source = by_id.get(id(real))
                if source is not None and storage_key(var.example) in written:
                    writes.append((source, real, var.example))
        origins = self._input_origins(self.guards)
        out, done = [], set()
        for ws, wt, _ in writes:
            wkey = storage_key(wt)
            for os_, ot, _ in inputs:
                pair = frozenset((ws.name(), os_.name()))
                if os_.name() == ws.name() or pair in done or ot.device != wt.device:
                    continue
                okey = storage_key(ot)
                if wkey is None or okey is None:
                    continue
                done.add(pair)
                out.append(Guard(os_, STORAGE_MATCH, (ws, okey == wkey), origins.get(os_.name())))
        return out

    # ------------------------------------------------------------ inputs
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
            self.note_new_input(fake)
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
    def _autocast_on(self):
        return any(enabled for _, _, enabled, _ in self.autocast_stack)

    def _probe(self, what, call, ex_args, ex_kw, wrote=False):
        """Fake tensors accept ops that the kernels reject for a dtype or an
        empty input (int64 rand_like, bool abs, max() of an empty tensor,
        float16 kernels missing on the CPU): captured, such an op raised
        inside the graph at run time, after which the frame's earlier Python
        side effects (written back after the graph) were lost. For inputs
        of such dtypes or sizes, or a write to an argument sharing a storage
        with another (see _probe_inputs), the op is also run on real ones
        of the same shapes (the RNG state restored); if that
        raises, the op is a break and runs eagerly, raising there. Ones
        may fail where the real values would not (an index into a dim of
        size 1): then the op only runs eagerly."""
        if self._autocast_on():
            return
        probe = _probe_inputs(ex_args, ex_kw, wrote, index=_takes_indices(what))
        if probe is None:
            return
        args, kw = probe
        state = rng.save()
        try:
            with _quiet_fake_tensor_log(), torch.set_grad_enabled(self.grad_enabled), warnings.catch_warnings():
                warnings.simplefilter("ignore")
                call(args, kw)
        except Exception as e:  # noqa: BLE001 - the kernel's refusal: a break
            raise Unsupported(f"{what} fails on real tensors like the example values "
                              f"({type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''})") from e
        finally:
            rng.restore(state)

    def _run_fake(self, what, fn, python_dispatcher=False):
        """fn() on the example values. With symbolic sizes, an op whose C++
        kernel reads concrete sizes (CUDA scaled_dot_product_attention's
        backend choice and mask padding) fails; it is run again through
        the Python dispatcher, whose registrations keep sizes symbolic.
        Only then: the Python decompositions differ in aliasing (dropout
        with training=False returns a new tensor there, the input itself
        in eager), so ops that run as they are keep their own result."""
        try:
            with _quiet_fake_tensor_log(), self.fake_mode, torch.set_grad_enabled(self.grad_enabled), \
                    contextlib.ExitStack() as blocks:
                if python_dispatcher:
                    blocks.enter_context(enable_python_dispatcher())
                for device, dtype, enabled, cache in self.autocast_stack:
                    blocks.enter_context(torch.autocast(device, dtype, enabled, cache))
                return fn()
        except Unsupported:
            raise
        except Exception as e:  # noqa: BLE001 - any failure on fake values is a break
            if not python_dispatcher and _has_symbols(self.shape_env):
                return self._run_fake(what, fn, python_dispatcher=True)
            raise Unsupported(f"{what} cannot run on example values "
                              f"({type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''})") from e

    def check_not_in_try(self, tx):
        """A graph op where a handler could see its exception (a try
        block, of this frame or of a caller being inlined). The graph runs
        outside the try, so such an op is traced only when the frame can be
        re-run eagerly from its start if the graph raises (config.
        trace_try_regions, and a graph that writes to none of its inputs:
        a re-run would see the write). Otherwise Unsupported, and the try
        runs eagerly (its handlers see the operation's exceptions)."""
        if tx is None or not tx.in_try_region():
            return
        if not config.trace_try_regions:
            raise Unsupported("tensor operation inside a try block (the try runs eagerly "
                              "so that its handlers see the operation's exceptions)")
        self._make_rerunnable("tensor operation inside a try block (the try runs eagerly")

    def may_raise_at_run_time(self, what):
        """`what`, a graph op that can raise when the graph runs though it
        did not on the examples (a division by a symbolic size or a
        captured Tensor.item() number that is zero on a later call): the
        side effects traced before it are replayed only after the graph, so
        a raise inside the graph would lose them. The graph becomes one
        that re-runs the frame eagerly when it raises (as check_not_in_try
        makes it); Unsupported where that cannot be (the op runs eagerly)."""
        self._make_rerunnable(f"{what} (it runs eagerly")

    def _make_rerunnable(self, what):
        if self.undeferred_write is not None or self.uses_autocast:
            why = self.undeferred_write or "the graph enters torch.autocast"
            raise Unsupported(f"{what}: it can raise at run time in a graph that writes to "
                              "its inputs or enters torch.autocast, and a graph that raised "
                              f"could not be re-run eagerly after that; {why})")
        self.deopt = True

    def note_autocast(self, tx):
        """An autocast block enters the graph: a graph that raised inside
        it leaves autocast on, so it cannot be re-run (check_not_in_try)."""
        if self.deopt or (tx is not None and tx.in_try_region()):
            raise Unsupported("torch.autocast block in a graph with operations inside a try "
                              "block (the try runs eagerly)")
        self.uses_autocast = True

    def input_written(self, undeferrable=None):
        """The graph writes to one of its inputs (see note_input_writes).
        `undeferrable`: None when the write can wait for the graph's end
        (input_writes.defer_input_writes does that for a graph with ops
        inside a try), else why it cannot: such a write inside a try, or
        any op inside a try after it, is Unsupported."""
        if undeferrable is not None:
            if self.deopt:
                raise Unsupported("in-place write to a graph input in a graph with operations "
                                  f"inside a try block (the write runs eagerly: {undeferrable})")
            self.undeferred_write = self.undeferred_write or undeferrable
        self.mutates_inputs = True

    def input_write_owner(self, keys):
        """Why writes to the input storages `keys` (storage_key values) cannot
        wait for the graph's end, or None when each belongs to exactly one
        graph input, a placeholder whose example requires no grad."""
        owners = {}
        examples = [v.example for v in self.inputs.values()] + \
            [v.example for v in self.attr_nodes.values()] + list(self.fake_params.values())
        for e in examples:
            k = storage_key(e)
            if k in keys:
                owners.setdefault(k, {})[id(e)] = e
        placeholders = {id(v.example) for v in self.inputs.values()}
        for k in keys:
            found = list(owners.get(k, {}).values())
            if len(found) != 1:
                return "the written storage is shared by several inputs"
            if id(found[0]) not in placeholders:
                return "the write is to a parameter or buffer"
            if found[0].requires_grad:
                return "the written input requires grad"
        return None

    def note_new_input(self, example):
        """A graph input (placeholder, parameter, buffer) made after a write:
        one sharing a written storage makes that write undeferrable."""
        written = self.written_storages
        if self.mutates_inputs and written and storage_key(example) in written:
            self.input_written("the written storage is shared by several inputs")

    # ------------------------------------------------------------ constants
    # ------------------------------------------------------------ compile
    def only_int_arithmetic(self):
        """The graph so far has operations and every node is a Python
        number (a symbolic int input and arithmetic on it): no tensor."""
        nodes = [n for n in self.graph.nodes if n.op != "output"]
        return any(n.op.startswith("call_") for n in nodes) and not self.graphs and all(
            isinstance(n.meta.get("example_value"), (torch.SymInt, torch.SymFloat, torch.SymBool))
            for n in nodes if n.target is not torch._C._set_grad_enabled)

    def op_count(self):
        return sum(1 for n in self.graph.nodes if n.op.startswith("call_")
                   and n.target is not torch._C._set_grad_enabled)

    def compile_nodes(self, outputs, index, branch_node=None):
        """compile_graph's fx half: finish the graph with output nodes
        `outputs` ({node: position} in `index`) and compile it; with no op
        and no output, `branch_node` (an input read from its source, or None)
        becomes the graph's output (a graph ending at a tensor branch).
        Returns (GraphInfo or None, {node: output index}, [input sources])."""
        if self.op_count() == 0 and not outputs:
            if branch_node is None:
                return None, {}, []
            outputs.append(branch_node)        # not in `index`: read from its source
        if self.grad_enabled != self.initial_grad:
            self.graph.call_function(torch._C._set_grad_enabled, (self.initial_grad,))
        self.graph.output(tuple(outputs))
        if _insert_unbacked_checks(self.graph, self.shape_env):
            try:
                # a call whose data breaks an assumption runs eagerly, as
                # eager would (a (1,) tensor broadcast where the trace assumed 3)
                self.may_raise_at_run_time("a check of what the trace assumed of a size "
                                           "computed from data")
            except Unsupported:
                pass        # a write that cannot wait: the failed check raises instead
        if self.deopt and self.mutates_inputs:
            defer_input_writes(self.graph, [
                n for n in self.graph.nodes if n.op == "placeholder"
                and isinstance(n.meta["example_value"], torch.Tensor)     # not an int input
                and storage_key(n.meta["example_value"]) in self.written_storages])
        for node in reversed(list(self.graph.nodes)):
            if not node.users and _is_size_node(node):     # a size read only at trace time
                self.graph.erase_node(node)
        for node in list(self.graph.nodes):
            if node.op == "placeholder" and not node.users:
                self.graph.erase_node(node)
        placeholders = [n for n in self.graph.nodes if n.op == "placeholder"]
        gm = torch.fx.GraphModule(self.root, self.graph)
        gm.meta = {}
        example_inputs = [n.meta.pop("real") for n in placeholders]   # gm keeps no real inputs
        name = f"__compiled_fn_{next(_graph_counter)}"
        # a graph with symbolic sizes gets the fake examples of this trace
        # (one fake mode and shape env), as torch.compile hands them to
        # AOT autograd and Inductor: a backend that traces again keeps the
        # sizes symbolic instead of specializing on the real ones
        symbolic = any(n.meta["source"].name() in self.symbolic_inputs for n in placeholders) or \
            any(_is_unbacked(n) for n in self.graph.nodes)
        if symbolic:
            # sizes computed from data by this trace's fake run (nonzero's
            # length) belong to its nodes: a backend tracing again under the
            # same shape env makes its own, and refuses to find ours pending
            self.shape_env.pending_fresh_unbacked_symbols.clear()
        compiled = self.compiler_fn(gm, [n.meta["example_value"] for n in placeholders]
                                    if symbolic else example_inputs)
        self.install[name] = compiled
        info = GraphInfo(name, gm, compiled, example_inputs, self.op_count())
        return info, index, [n.meta["source"] for n in placeholders]


def _insert_unbacked_checks(graph, shape_env):
    """What the fake run assumed of sizes computed from data (unbacked
    symbols), checked when the graph runs: for each of the ShapeEnv's
    deferred runtime asserts (`u0 == 3` when a (u0,) tensor was added to
    a (3,) one; `u0 % 2 == 0` for a view), nodes computing it from the
    sizes of the tensors that carry the symbols and an aten._assert_scalar before
    the output. The trace may have folded a decision on such a fact (the
    ShapeEnv then replaces u0 by 3): the check makes a call whose data
    breaks it raise instead of taking the folded path silently (and the
    caller makes the frame re-run eagerly then). Returns whether it added
    a check; Unsupported when a fact names a symbol no node's size carries."""
    from torch.fx.experimental.symbolic_shapes import free_unbacked_symbols
    facts = []
    for ras in shape_env.deferred_runtime_asserts.values():
        for ra in ras:
            if free_unbacked_symbols(ra.expr) and ra.expr not in facts \
                    and not _min_max_tautology(ra.expr):
                facts.append(ra.expr)
    if not facts:
        return False
    import sympy
    from torch.utils._sympy.interp import sympy_interp
    from torch.utils._sympy.reference import PythonReferenceAnalysis
    def symbol(v):              # the symbol a SymInt was made as, before replacements
        expr = getattr(v.node, "_expr", None) if isinstance(v, torch.SymInt) else None
        return expr if isinstance(expr, sympy.Symbol) else None
    output = next(n for n in graph.nodes if n.op == "output")
    tracer = torch.fx.proxy.GraphAppendingTracer(graph)
    env = {}
    with graph.inserting_before(output):
        for node in list(graph.nodes):
            ex = node.meta.get("example_value")
            if symbol(ex) is not None:
                env.setdefault(symbol(ex), torch.fx.Proxy(node, tracer))
            elif isinstance(ex, torch.Tensor):
                for d, size in enumerate(ex.shape):
                    if symbol(size) is not None and symbol(size) not in env:
                        size_node = graph.call_method("size", (node, d))
                        size_node.meta["example_value"] = size
                        env[symbol(size)] = torch.fx.Proxy(size_node, tracer)
        for fact in facts:
            if not fact.free_symbols <= set(env):
                raise Unsupported(f"a size computed from data with an assumption no node "
                                  f"can check ({fact})")
            cond = sympy_interp(PythonReferenceAnalysis, env, fact)
            # an op, not torch._check: a backend that traces the graph again
            # (AOT autograd, Inductor) keeps it
            graph.call_function(torch.ops.aten._assert_scalar.default, (
                cond.node if isinstance(cond, torch.fx.Proxy) else cond,
                f"the graph was traced assuming {fact} of sizes computed from data"))
    return True


def _min_max_tautology(fact):
    """Is `fact` `Min(.., a, ..) <= a` or `Max(.., a, ..) >= a` (either
    way round)? topk(min(k, n)) records `Min(k, u0) <= u0` for each call;
    true for any value, so not worth a check."""
    import sympy
    from torch.utils._sympy.functions import Max, Min
    if isinstance(fact, (sympy.Ge, sympy.Gt)):
        fact = sympy.Le(fact.rhs, fact.lhs, evaluate=False) if isinstance(fact, sympy.Ge) else None
    if not isinstance(fact, sympy.Le):
        return False
    small, big = fact.lhs, fact.rhs
    return isinstance(small, (sympy.Min, Min)) and big in small.args or \
        isinstance(big, (sympy.Max, Max)) and small in big.args


def _is_unbacked(node):
    """Is node a number computed from data (a captured integer .item():
    an unbacked SymInt)?"""
    from torch.fx.experimental.symbolic_shapes import free_unbacked_symbols
    ex = node.meta.get("example_value")
    return isinstance(ex, torch.SymInt) and bool(free_unbacked_symbols(ex))


def _is_size_node(node):
    """A node computing a size or a relation of sizes (its example a
    SymInt/SymBool, or a torch.Size): pure, so dropped when unused."""
    if node.op not in ("call_function", "call_method"):
        return False
    ex = node.meta.get("example_value")
    if isinstance(ex, (torch.SymInt, torch.SymBool, torch.SymFloat)):
        return True
    return type(ex) is torch.Size and node.op == "call_method" and node.target == "size"


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
