"""Guards recorded while tracing and their lowering to the C guard IR.

Owns the Source classes (how to reach a value from a frame: local, global,
closure cell, attribute, item) and the names graph code gives them
(`_mangle`: a Python identifier, `module_path`: the qualified nn.Module
path, `_identifier`), the Guard record (source + kind + expected
values), `Guard.lower()` (the tuple IR of ARCHITECTURE.md contract 1) and
`Guard.describe()` (the " - local 'a' TENSOR_MATCH" line of the seeds),
and each guard's provenance (`Origin`: the user line whose tracing
installed it; `Guard.origin_text()`).
The kind numbers are the C module's (_C.GUARD_KINDS, _C.SOURCE_KINDS); the
plain-Python reference evaluator is a test oracle (tests/guard_ref.py).
It must not import the tracer.
"""
import linecache
import os
import struct
import weakref
from typing import Any, List, Optional, Tuple

import torch

from . import _C

# ---------------------------------------------------------------- kinds

# The guard-IR vocabulary is the C module's (guards/ir.h, guards/tree.c):
# imported here, never written again (tests/test_layering.py checks it).
TYPE_MATCH = _C.GUARD_KINDS["TYPE_MATCH"]
ID_MATCH = _C.GUARD_KINDS["ID_MATCH"]
EQUALS_MATCH = _C.GUARD_KINDS["EQUALS_MATCH"]
LENGTH = _C.GUARD_KINDS["LENGTH"]
TENSOR_MATCH = _C.GUARD_KINDS["TENSOR_MATCH"]
GRAD_MODE = _C.GUARD_KINDS["GRAD_MODE"]
DICT_KEYS = _C.GUARD_KINDS["DICT_KEYS"]
FUNCTION_MATCH = _C.GUARD_KINDS["FUNCTION_MATCH"]
NONE_MATCH = _C.GUARD_KINDS["NONE_MATCH"]      # NOT_NONE / IS_NONE: expected (is_none,)
SAME_OBJECT = _C.GUARD_KINDS["SAME_OBJECT"]    # expected (other: Source, same: bool): (v is other) == same
GLOBAL_STATE = _C.GUARD_KINDS["GLOBAL_STATE"]  # expected (word,): global_state_word() == word
# expected (other: Source, same: bool): both tensors, (one storage) == same
STORAGE_MATCH = _C.GUARD_KINDS["STORAGE_MATCH"]
# expected (key,): the calling wrapper's backend key (backend_key) is key
BACKEND_MATCH = _C.GUARD_KINDS["BACKEND_MATCH"]
# the kinds relating two sources: expected (other source, bool)
RELATION_KINDS = (SAME_OBJECT, STORAGE_MATCH)
# expected (text, program): a relation between tensor sizes (a ShapeEnv
# guard) as a postfix program of SHAPE_OPS steps whose leaves are
# (SIZE or STRIDE, Source, dim); its source is the first leaf's
SHAPE_GUARD = _C.GUARD_KINDS["SHAPE_GUARD"]
SHAPE_OPS = dict(_C.SHAPE_OPS)

KIND_NAMES = {number: name for name, number in _C.GUARD_KINDS.items()}

# Source kinds: the first item of a lowered source tuple.
SRC_LOCAL = _C.SOURCE_KINDS["LOCAL"]
SRC_GLOBAL = _C.SOURCE_KINDS["GLOBAL"]
SRC_CLOSURE = _C.SOURCE_KINDS["CLOSURE"]
SRC_ATTR = _C.SOURCE_KINDS["ATTR"]
SRC_ITEM = _C.SOURCE_KINDS["ITEM"]
SRC_NONE = _C.SOURCE_KINDS["NONE"]
SRC_STATIC_ATTR = _C.SOURCE_KINDS["STATIC_ATTR"]
SRC_GENERIC_ATTR = _C.SOURCE_KINDS["GENERIC_ATTR"]


class SourceError(LookupError):
    """A source could not be fetched (missing local, attribute or key)."""


# ---------------------------------------------------------------- sources

class Source:
    """How to reach a value from a frame. Hashable, compared by name()."""

    def name(self) -> str:
        raise NotImplementedError

    def lower(self) -> tuple:
        raise NotImplementedError

    def root(self) -> "Source":
        return self

    def get(self, f_locals, f_globals, f_builtins, closure):
        """The value this source names in the given frame; SourceError if it
        cannot be fetched."""
        raise NotImplementedError

    def __eq__(self, other):
        return type(other) is type(self) and other.name() == self.name()

    def __hash__(self):
        return hash(self.name())

    def __repr__(self):
        return self.name()


class LocalSource(Source):
    """An argument (or local) of the traced frame, by name and slot."""

    def __init__(self, local_name: str, slot: int):
        self.local_name, self.slot = local_name, slot

    def name(self):
        return f"L[{self.local_name!r}]"

    def lower(self):
        return (SRC_LOCAL, self.slot)

    def get(self, f_locals, f_globals, f_builtins, closure):
        try:
            return f_locals[self.local_name]
        except KeyError:
            raise SourceError(self.name()) from None


class GlobalSource(Source):
    """`f_globals[name]`, falling back to `f_builtins[name]`."""

    def __init__(self, global_name: str):
        self.global_name = global_name

    def name(self):
        return f"G[{self.global_name!r}]"

    def lower(self):
        return (SRC_GLOBAL, self.global_name)

    def get(self, f_locals, f_globals, f_builtins, closure):
        if self.global_name in f_globals:
            return f_globals[self.global_name]
        if f_builtins is not None and self.global_name in f_builtins:
            return f_builtins[self.global_name]
        raise SourceError(self.name())


class ClosureSource(Source):
    """Contents of `func.__closure__[index]` (a free variable of the frame)."""

    def __init__(self, index: int, var_name: str):
        self.index, self.var_name = index, var_name

    def name(self):
        return f"C[{self.var_name!r}]"

    def lower(self):
        return (SRC_CLOSURE, self.index)

    def get(self, f_locals, f_globals, f_builtins, closure):
        try:
            return closure[self.index].cell_contents
        except (IndexError, TypeError, ValueError):
            raise SourceError(self.name()) from None


class _ChainSource(Source):
    """A source reached from another (`base`): its name, lowered tuple and
    root are found once, at the first use (the tracer and the guard builder ask
    for them thousands of times per capture, and each asks its base's).
    base and the step never change after __init__."""
    _name = None
    _lowered = None
    _root = None

    def name(self):
        if self._name is None:
            self._name = self._make_name()
        return self._name

    def lower(self):
        if self._lowered is None:
            self._lowered = self._make_lower()
        return self._lowered

    def root(self):
        if self._root is None:
            self._root = self.base.root()
        return self._root


class AttrSource(_ChainSource):
    """`getattr(base, attr)`."""

    def __init__(self, base: Source, attr: str):
        self.base, self.attr = base, attr

    def _make_name(self):
        return f"{self.base.name()}.{self.attr}"

    def _make_lower(self):
        return (SRC_ATTR, self.base.lower(), self.attr)

    def get(self, f_locals, f_globals, f_builtins, closure):
        base = self.base.get(f_locals, f_globals, f_builtins, closure)
        try:
            return getattr(base, self.attr)
        except AttributeError:
            raise SourceError(self.name()) from None


class ItemSource(_ChainSource):
    """`base[key]` with an int or str constant key."""

    def __init__(self, base: Source, key):
        self.base, self.key = base, key

    def _make_name(self):
        return f"{self.base.name()}[{self.key!r}]"

    def _make_lower(self):
        return (SRC_ITEM, self.base.lower(), self.key)

    def get(self, f_locals, f_globals, f_builtins, closure):
        base = self.base.get(f_locals, f_globals, f_builtins, closure)
        try:
            return base[self.key]
        except (KeyError, IndexError, TypeError):
            raise SourceError(self.name()) from None


class GenericAttrSource(AttrSource):
    """`object.__getattribute__(base, attr)`: CPython's generic lookup,
    without the class's own (Python) __getattribute__ or __getattr__; the C
    tree fetches it without running a Python frame. Only where it is the
    value getattr(base, attr) gives: the trace inlined that class's
    __getattribute__ and saw it delegate to object's for `attr` (the base's
    TYPE_MATCH and the ID_MATCH of its __getattribute__ keep that proof), or
    the reader is object's own (copy.deepcopy's state is the generic
    __dict__). An AttrSource otherwise (module paths, mangled names, write
    back); the rewritten code loads it by calling object.__getattribute__."""

    def _make_name(self):
        return f"object.__getattribute__({self.base.name()}, {self.attr!r})"

    def _make_lower(self):
        return (SRC_GENERIC_ATTR, self.base.lower(), self.attr)

    def get(self, f_locals, f_globals, f_builtins, closure):
        base = self.base.get(f_locals, f_globals, f_builtins, closure)
        try:
            return object.__getattribute__(base, self.attr)
        except AttributeError:
            raise SourceError(self.name()) from None


_NOT_FOUND = object()


def static_lookup(obj, name):
    """The object `getattr(obj, name)` starts from, no descriptor called: a
    data descriptor on type(obj)'s MRO, else obj.__dict__[name], else what
    the MRO holds; _NOT_FOUND if none. The C tree's STATIC_ATTR fetch."""
    found = _NOT_FOUND
    for klass in type(obj).__mro__:
        if name in klass.__dict__:
            found = klass.__dict__[name]
            break
    ftype = type(found)
    if found is not _NOT_FOUND and (hasattr(ftype, "__set__") or hasattr(ftype, "__delete__")):
        return found
    try:
        own = object.__getattribute__(obj, "__dict__")
    except (AttributeError, TypeError):
        own = None
    if isinstance(own, dict) and name in own:
        return own[name]
    return found


class StaticAttrSource(_ChainSource):
    """What attribute lookup of `attr` on base starts from, calling no
    descriptor (see static_lookup): guarded by identity, a method, property,
    classmethod or staticmethod replaced on the class, or an instance
    attribute shadowing a method, fails the guard. Guards only: never a
    value the generated code loads."""

    def __init__(self, base: Source, attr: str):
        self.base, self.attr = base, attr

    def _make_name(self):
        return f"getattr_static({self.base.name()}, {self.attr!r})"

    def _make_lower(self):
        return (SRC_STATIC_ATTR, self.base.lower(), self.attr)

    def get(self, f_locals, f_globals, f_builtins, closure):
        base = self.base.get(f_locals, f_globals, f_builtins, closure)
        found = static_lookup(base, self.attr)
        if found is _NOT_FOUND:
            raise SourceError(self.name())
        return found


class NoSource(Source):
    """No value: global-state guards (grad mode)."""

    def name(self):
        return "global state"

    def lower(self):
        return (SRC_NONE,)

    def get(self, f_locals, f_globals, f_builtins, closure):
        return None


# ---------------------------------------------------------------- source names

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


# ---------------------------------------------------------------- global state

# Bit layout of the GLOBAL_STATE word: guards/tmeta.h (TMETA_GS_*).
_GS_FLAGS = (("deterministic_algorithms", 0), ("deterministic_warn_only", 1),
             ("fill_uninitialized_memory", 2), ("inference_mode", 3),
             ("cudnn.enabled", 4), ("cudnn.deterministic", 5), ("cudnn.benchmark", 6),
             ("mkldnn.enabled", 7), ("autocast_cpu", 10), ("autocast_cuda", 11))
_GS_FIELDS = (("default_dtype", 16, 0xff),
              ("autocast_cpu_dtype", 24, 0xff), ("autocast_cuda_dtype", 32, 0xff))
# c10::ScalarType codes of the dtypes a default / autocast dtype can be
_SCALAR_TYPE = {torch.float16: 5, torch.float32: 6, torch.float64: 7,
                torch.complex32: 8, torch.complex64: 9, torch.complex128: 10,
                torch.bfloat16: 15}


def global_state_flags() -> dict:
    """The flags the GLOBAL_STATE guard covers, read through torch's Python
    API (the C tree reads them from c10/ATen: tmeta_global_state)."""
    import torch.utils.deterministic as det
    cpu, cuda = torch.is_autocast_enabled("cpu"), torch.is_autocast_enabled("cuda")
    return {
        "deterministic_algorithms": torch.are_deterministic_algorithms_enabled(),
        "deterministic_warn_only": torch.is_deterministic_algorithms_warn_only_enabled(),
        "fill_uninitialized_memory": bool(det.fill_uninitialized_memory),
        "inference_mode": torch.is_inference_mode_enabled(),
        "cudnn.enabled": torch.backends.cudnn.enabled,
        "cudnn.deterministic": torch.backends.cudnn.deterministic,
        "cudnn.benchmark": torch.backends.cudnn.benchmark,
        "mkldnn.enabled": torch._C._get_mkldnn_enabled(),
        "autocast_cpu": cpu,
        "autocast_cuda": cuda,
        "default_dtype": _SCALAR_TYPE.get(torch.get_default_dtype(), 0xff),
        "autocast_cpu_dtype": _SCALAR_TYPE.get(torch.get_autocast_dtype("cpu"), 0xff) if cpu else 0,
        "autocast_cuda_dtype": _SCALAR_TYPE.get(torch.get_autocast_dtype("cuda"), 0xff) if cuda else 0,
    }


def global_state_word(flags: Optional[dict] = None) -> int:
    """GLOBAL_STATE's expected word for the current (or the given) flags."""
    flags = global_state_flags() if flags is None else flags
    word = 0
    for name, bit in _GS_FLAGS:
        word |= int(bool(flags[name])) << bit
    for name, shift, mask in _GS_FIELDS:
        word |= (int(flags[name]) & mask) << shift
    return word


def global_state_diff(expected: int, actual: int) -> str:
    """Which flags differ between two words: "deterministic_algorithms:
    expected False, actual True"."""
    out = []
    for name, bit in _GS_FLAGS:
        e, a = bool(expected >> bit & 1), bool(actual >> bit & 1)
        if e != a:
            out.append(f"{name}: expected {e}, actual {a}")
    for name, shift, mask in _GS_FIELDS:
        e, a = expected >> shift & mask, actual >> shift & mask
        if e != a:
            out.append(f"{name}: expected {e}, actual {a}")
    return "; ".join(out) or "no difference"


# ---------------------------------------------------------------- backends

# BACKEND_MATCH keys: one number per (backend callable, mode, options) a
# wrapper compiles for, never reused in the process (an old wrapper keeps
# its number: a new backend never takes it over).  The C side reads a
# callback's key once, when the callback is installed (its `backend_key`),
# and compares it with each entry's in the guard tree.
_backend_keys = {}          # (id(fn), mode, options text) -> key
_backend_texts = {}         # key -> what the listings print
_backend_next = [1]


def backend_key(fn, text: str, mode=None, options=None) -> int:
    """The BACKEND_MATCH key of compiling with backend callable `fn` (as
    backends.lookup returns it: one object per registered name) in `mode`
    with `options` (a dict, compared by its sorted items' repr).  `text`
    names the backend in guard listings.  A key dies with `fn` (a weakref
    callback forgets it; its number is not given out again)."""
    opts = repr(sorted(options.items(), key=lambda kv: str(kv[0]))) if options else ""
    ident = (id(fn), mode, opts)
    key = _backend_keys.get(ident)
    if key is not None:
        return key
    key = _backend_next[0]
    _backend_next[0] += 1
    _backend_keys[ident] = key
    extra = "".join(f", {k}={v!r}" for k, v in (("mode", mode), ("options", options)) if v)
    _backend_texts[key] = f"{text}{extra}"
    try:
        weakref.finalize(fn, _backend_keys.pop, ident, None)
    except TypeError:               # no weakref support: kept for the process
        pass
    return key


def backend_texts_apart(expected: int, actual: int) -> Tuple[str, str]:
    """backend_text of a failed BACKEND_MATCH's two keys, each followed by
    its number when both name alike (two CompileCounter() objects): a miss
    must not read "expected 'b', actual 'b'".  core/telemetry.c does the
    same for the last failure dynamo-top shows."""
    texts = backend_text(expected), backend_text(actual)
    if texts[0] != texts[1] or expected == actual:
        return texts
    return f"{texts[0]} (backend #{expected})", f"{texts[1]} (backend #{actual})"


def backend_text(key: int) -> str:
    """How BACKEND_MATCH's key reads in listings: "'eager'", "b1 (mode=...)"."""
    if key == 0:
        return "any (dynamo.run)"
    return _backend_texts.get(key, f"backend #{key}")


# ---------------------------------------------------------------- tensors

def dispatch_keys(t) -> int:
    """TENSOR_MATCH's dispatch key word: the tensor's keys with the
    thread-local include set added and the exclude set removed."""
    ks = ((torch._C._dispatch_keys(t) | torch._C._dispatch_tls_local_include_set())
          - torch._C._dispatch_tls_local_exclude_set())
    return ks.raw_repr()


def _dims(method):
    """tuple(t.size()) / tuple(t.stride()), or None (unchecked) for a tensor
    without them (sparse strides, nested sizes)."""
    try:
        return tuple(method())
    except RuntimeError:
        return None


def storage_key(t) -> Optional[int]:
    """What STORAGE_MATCH compares for tensor `t`: its storage's address
    (`untyped_storage()._cdata`, the c10::StorageImpl the C tree reads), or
    None for a tensor without one (sparse, nested): no guard is made on it."""
    try:
        return t.untyped_storage()._cdata
    except (RuntimeError, TypeError):
        return None


def tensor_expected(t, dynamic: bool) -> tuple:
    """The expected fields of TENSOR_MATCH for tensor `t`."""
    sizes = None if dynamic else _dims(t.size)
    strides = None if dynamic else _dims(t.stride)
    return (type(t), t.dtype, t.device, t.requires_grad, dispatch_keys(t),
            t.dim(), sizes, strides)


# ---------------------------------------------------------------- guard

class _Dead:
    """Stands for the expected object of an ID/FUNCTION_MATCH that died."""

    def __repr__(self):
        return "<dead>"


DEAD = _Dead()


class Origin:
    """Where a guard comes from: the user source line being traced when it
    was installed (`filename`, `lineno`, `name`: the innermost function,
    inlined or not) and, when that line is inside an inlined call, the line
    of the compiled frame's own code that led there (`frame_lineno`).
    Holds no code object (records live for the process)."""

    __slots__ = ("filename", "lineno", "name", "frame_filename", "frame_lineno")

    def __init__(self, filename, lineno, name, frame_filename=None, frame_lineno=None):
        self.filename, self.lineno, self.name = filename, lineno, name
        self.frame_filename, self.frame_lineno = frame_filename, frame_lineno

    def where(self) -> str:
        """"path/to/file.py:12" (the full path)."""
        return f"{self.filename}:{self.lineno}"

    def line(self) -> str:
        """The source text of the line, stripped; "" when unreadable."""
        return linecache.getline(self.filename, self.lineno).strip()

    def __str__(self):
        text = f"{os.path.basename(self.filename)}:{self.lineno}"
        line = self.line()
        if line:
            text += f": {line}"
        if self.frame_lineno is not None:
            text += f" (from {os.path.basename(self.frame_filename)}:{self.frame_lineno})"
        return text

    def __repr__(self):
        return f"Origin({self.where()})"


def origin_of_tx(tx) -> Optional[Origin]:
    """The Origin of a guard installed while translator `tx` (innermost;
    None outside tracing) runs: its line, and its outermost parent's."""
    if tx is None:
        return None
    top = tx
    while top.parent is not None:
        top = top.parent
    code = tx.code
    if top is tx:
        return Origin(code.co_filename, tx.lineno, code.co_name)
    return Origin(code.co_filename, tx.lineno, code.co_name, top.code.co_filename, top.lineno)


class Guard:
    """One check on one value: `kind` (a constant above) on `source`, with
    the kind's `expected` fields (see contract 1).

    ID/FUNCTION_MATCH hold their object through a weakref when its type
    supports one (compile records keep guards forever; a strong reference
    would keep the object, and so the C cache entry, alive): `expected`
    then reads `(DEAD,)` once it is gone."""

    __slots__ = ("source", "kind", "_expected", "_ref", "origin")

    def __init__(self, source: Source, kind: int, expected: Tuple[Any, ...] = (),
                 origin: Optional[Origin] = None):
        self.source, self.kind, self.origin = source, kind, origin
        self._expected, self._ref = tuple(expected), None
        if kind in (ID_MATCH, FUNCTION_MATCH) and len(self._expected) == 1:
            try:
                self._ref = weakref.ref(self._expected[0])
                self._expected = ()
            except TypeError:           # no weakref support: held strongly
                pass

    @property
    def expected(self) -> Tuple[Any, ...]:
        if self._ref is None:
            return self._expected
        obj = self._ref()
        return (DEAD,) if obj is None else (obj,)

    def key(self):
        if self.kind in RELATION_KINDS:
            return (self.source.name(), self.kind, self._expected[0].name())
        if self.kind == SHAPE_GUARD:
            return (self.source.name(), self.kind, self._expected[0])
        return (self.source.name(), self.kind)

    def lower(self) -> tuple:
        """The C guard IR tuple `(kind, source, *expected)`."""
        if self.kind in RELATION_KINDS:
            other, same = self._expected
            return (self.kind, self.source.lower(), other.lower(), bool(same))
        if self.kind == SHAPE_GUARD:
            text, program = self._expected
            return (self.kind, self.source.lower(), text,
                    tuple((s[0], s[1].lower(), s[2]) if s[0] in _SHAPE_LEAVES else s
                          for s in program))
        return (self.kind, self.source.lower(), *self.expected)

    def shape_leaves(self) -> List[str]:
        """SHAPE_GUARD: the texts of its leaves in program order, as the C
        miss report lists their actual values (`L['x'].size()[0]`)."""
        return [shape_leaf_text(s) for s in self._expected[1] if s[0] in _SHAPE_LEAVES]

    def describe(self) -> str:
        """` - local 'a' TENSOR_MATCH` style line."""
        src = self.source
        if isinstance(src, LocalSource):
            where = f"local {src.local_name!r}"
        elif isinstance(src, GlobalSource):
            where = f"global {src.global_name!r}"
        elif isinstance(src, ClosureSource):
            where = f"closure {src.var_name!r}"
        elif isinstance(src, NoSource):
            where = "global state"
        else:
            where = src.name()
        line = f" - {where} {KIND_NAMES[self.kind]}"
        if self.kind == BACKEND_MATCH:
            line += f" {backend_text(self._expected[0])}"
        if self.kind == SAME_OBJECT:
            line += f" {'is' if self._expected[1] else 'is not'} {self._expected[0].name()}"
        elif self.kind == STORAGE_MATCH:
            line += (f" {'shares a storage with' if self._expected[1] else 'shares no storage with'}"
                     f" {self._expected[0].name()}")
        elif self.kind == SHAPE_GUARD:
            line += f" {self._expected[0]}"
        elif self._ref is not None and self._ref() is None:
            line += " <dead>"
        return line

    def origin_text(self) -> str:
        """Where this guard comes from, for people: "toy.py:5: if b.sum() < 0:"
        for a guard a traced line installed; what installs the others."""
        if self.origin is not None:
            return str(self.origin)
        if self.kind == BACKEND_MATCH:
            return "the optimize()/compile() wrapper's backend"
        if self.kind in (GRAD_MODE, GLOBAL_STATE):
            return "frame entry (global state)"
        return "frame entry"

    def __eq__(self, other):
        return (type(other) is Guard and other.kind == self.kind and other.source == self.source
                and _same_expected(other.expected, self.expected))

    __hash__ = None

    def __repr__(self):
        if self.kind in RELATION_KINDS:     # two guards of one source differ by the other
            other, same = self._expected
            return (f"Guard({self.source.name()}, {KIND_NAMES[self.kind]}, "
                    f"{'' if same else 'not '}{other.name()})")
        return f"Guard({self.source.name()}, {KIND_NAMES[self.kind]})"


_SHAPE_LEAVES = (SHAPE_OPS["SIZE"], SHAPE_OPS["STRIDE"], SHAPE_OPS["INT"])


def shape_leaf_text(step):
    """Text of a SHAPE_GUARD leaf step: `L['x'].size()[0]`, `L['x'].stride()[1]`
    or, for an int argument traced as a symbolic int, `L['n']`."""
    if step[0] == SHAPE_OPS["INT"]:
        return step[1].name()
    return f"{step[1].name()}.{'size' if step[0] == SHAPE_OPS['SIZE'] else 'stride'}()[{step[2]}]"


def _same_expected(a, b):
    return len(a) == len(b) and all(x is y or same_constant(x, y) for x, y in zip(a, b))


def same_constant(value, expected) -> bool:
    """EQUALS_MATCH's rule: the same type, and for floats (and complex) the
    same bits (0.0 is not -0.0; a NaN equals a NaN of the same bits), for
    tuples the same rule item by item, else ==. The C tree's value_match."""
    if type(value) is not type(expected):
        return False
    if value is expected:
        return True
    if type(expected) is float:
        return struct.pack("<d", value) == struct.pack("<d", expected)
    if type(expected) is complex:
        return struct.pack("<dd", value.real, value.imag) == struct.pack("<dd", expected.real, expected.imag)
    if type(expected) is tuple:
        return len(value) == len(expected) and all(same_constant(a, b) for a, b in zip(value, expected))
    return value == expected


def _rank(source: Source):
    """Sort key: locals by slot, closure cells, globals, global state."""
    root = source.root()
    if isinstance(root, LocalSource):
        return (0, root.slot)
    if isinstance(root, ClosureSource):
        return (1, root.index)
    if isinstance(root, GlobalSource):
        return (2, 0)
    return (3, 0)


def ordered(guards: List[Guard]) -> List[Guard]:
    """Deduplicated guards, locals first (by slot), then closure cells,
    globals and global state; insertion order otherwise."""
    seen, out = set(), []
    for g in guards:
        key = g.key()
        if key not in seen:
            seen.add(key)
            out.append(g)
    return sorted(out, key=lambda g: _rank(g.source))


# How each guard-tree property (_C.TREE_PROPERTIES, guards/tree.c) of a
# source reads to a user; "{}" is the source's text (guards/tree_py.c).
PROPERTY_FORMS = dict(_C.TREE_PROPERTY_FORMS)


def property_text(src: str, prop: str) -> str:
    """How a guard-tree property of source text `src` reads to a user:
    ("L['a']", "size()[0]") -> "L['a'].size()[0]", ("L['f']", "id") -> "id(L['f'])".
    `prop` is one of _C.TREE_PROPERTIES, with "[dim]" after "size()" and
    "stride()" as the miss report gives them.  The C function the published
    guard trees use."""
    return _C.tree_property_text(src, prop)
