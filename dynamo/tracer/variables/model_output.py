"""transformers' ModelOutput (an OrderedDict-backed dataclass) as a traced
value, without importing transformers.

A ModelOutput built by `Cls(a=..., b=...)` holds every dataclass field as an
attribute and, as keys in field order, the fields whose value is not None
(its __post_init__). The tracer models exactly that: it maps every
field to a VT in `items` (None fields as constant None), `keys()` are the non-None
fields. Reads: attributes, `out["name"]`, `out[i]` / `out[a:b]` (through
to_tuple()), to_tuple(), keys()/values()/items(), len(), `in`, iteration
(over keys), truth; `__dict__` of an output passed in. Rebuilt in
generated code as `Cls(**{key: value})`, run with the hook off.
The rare __post_init__ form where only the first field is given and it is
a dict or iterator of pairs is Unsupported (the call then runs eagerly).
"""
import collections
import dataclasses
import operator

from ...exc import Unsupported
from .base import ConstantVariable, VariableTracker


def is_model_output_class(cls):
    """A dataclass subclass of transformers.utils.generic.ModelOutput."""
    if not isinstance(cls, type) or not dataclasses.is_dataclass(cls):
        return False
    return any(b.__name__ == "ModelOutput" and (b.__module__ or "").startswith("transformers.")
               for b in cls.__mro__)


def _build(cls, kwargs, setitems=(), attrs=()):
    sig = (cls, tuple(kwargs), type(next(iter(kwargs.values()), None)))
    direct = _direct_ok.get(sig)
    if direct:
        out = _direct(cls, kwargs)
    else:
        out = cls(**kwargs)
        if direct is None:
            _direct_ok[sig] = _same_state(out, _direct(cls, kwargs))
    for k, v in setitems:          # keys added by `out[k] = v`, in order
        out[k] = v
    for k, v in attrs:             # fields set by `out.k = v` that are not keys
        setattr(out, k, v)
    return out


# (class, keyword names, type of the first value) -> does _direct() give
# what cls(**kwargs) gives? Learned at the first build of each signature
# (both are made and compared; the __init__ one is returned)
_direct_ok = {}
_field_defaults = {}
_ordered_setitem = collections.OrderedDict.__setitem__


def _direct(cls, kwargs):
    """The end state of cls(**kwargs) made without running __init__ and
    __post_init__ (a tenth of their cost, paid on every call of a compiled
    forward): every field an attribute (its default when not given), the
    non-None ones keys in field order. None when it cannot be made so."""
    fields = _field_defaults.get(cls)
    if fields is None:
        fields = _field_defaults[cls] = tuple((f.name, f.default) for f in dataclasses.fields(cls))
    try:
        out = cls.__new__(cls)
        state = out.__dict__
        for name, default in fields:
            state[name] = kwargs.get(name, default)
        for name, _ in fields:
            value = kwargs.get(name)
            if value is not None:
                _ordered_setitem(out, name, value)
    except Exception:  # noqa: BLE001 - not an OrderedDict, no __dict__: __init__ it is
        return None
    return out


def _same_state(a, b):
    """Same class, same keys in order, same attributes in order, each the
    same object."""
    if b is None or type(a) is not type(b) or list(a.keys()) != list(b.keys()):
        return False
    if any(a[k] is not b[k] for k in a.keys()):
        return False
    da, db = a.__dict__, b.__dict__
    return list(da) == list(db) and all(da[k] is db[k] for k in da)


_builder = []


def builder():
    """`cls(**kwargs)` run with the frame hook off (dynamo.disable): the
    ModelOutput's own __init__/__post_init__ bookkeeping, modelled by this
    file, is not compiled when generated code rebuilds an output. Once the
    first build of a signature has shown that a direct build (fields and
    keys set without __init__) ends in the same state, later ones build
    directly, as torch.compile does."""
    if not _builder:
        from ...modes import without_hook
        _builder.append(without_hook(_build))
    return _builder[0]


_setattr_adds_key = {}


def setattr_adds_key(cls):
    """Whether `out.f = v` (v not None) on a field `f` that is not a key
    adds the key, as transformers 5.x's ModelOutput.__setattr__ does (4.x
    sets the attribute only). Probed once per class on a real instance
    (first field an empty tensor, a None field set), with the hook off;
    None when the class cannot be probed (a field without a default)."""
    if cls not in _setattr_adds_key:
        from ...modes import without_hook

        def probe():
            import torch
            names = [f.name for f in dataclasses.fields(cls)]
            if len(names) < 2:
                return None
            try:
                out = cls(**{names[0]: torch.empty(0)})
                if names[1] in out.keys():
                    return None
                setattr(out, names[1], torch.empty(0))
            except Exception:
                return None
            return names[1] in out.keys()
        _setattr_adds_key[cls] = without_hook(probe)()
    return _setattr_adds_key[cls]


def _is_empty_sequence(var):
    from .containers import BaseListVariable
    if isinstance(var, BaseListVariable):
        return not var.items
    return isinstance(var, ConstantVariable) and type(var.value) is tuple and not var.value


def _check_lone_first_field(tx, out_cls, first):
    """__post_init__ with only the first field given, and not a tensor,
    reads it as an iterator of (name, value) pairs when it is one: the
    forms traced are a value that does not iterate and a tuple or list
    whose first item is not a (str, value) pair (BackboneOutput's
    `feature_maps=(t1, t2)`), which end as an ordinary first key (or as
    no key when empty). Anything else is Unsupported."""
    from .containers import BaseListVariable, DictVariable
    if isinstance(first, DictVariable):
        raise Unsupported(f"{out_cls.__name__}() with a dict as its only field (its items become fields)")
    if isinstance(first, BaseListVariable):
        items = first.items
    elif isinstance(first, ConstantVariable) and isinstance(first.value, (tuple, list)):
        items = [ConstantVariable(v) for v in first.value]
    elif isinstance(first, ConstantVariable) and isinstance(first.value, (int, float, bool)):
        return
    else:
        raise Unsupported(f"{out_cls.__name__}() with only a non-tensor first field "
                          f"({first}): it may be read as (name, value) pairs")
    if not items:
        return
    head = items[0]
    pair = head.unpack(tx) if isinstance(head, BaseListVariable) else None
    if isinstance(head, ConstantVariable) and isinstance(head.value, (tuple, list)):
        pair = [ConstantVariable(v) for v in head.value]
    if pair is not None and len(pair) == 2 and isinstance(pair[0], ConstantVariable) and \
            isinstance(pair[0].value, str):
        raise Unsupported(f"{out_cls.__name__}() with (name, value) pairs as its only field")


def _is_none(var):
    return isinstance(var, ConstantVariable) and var.value is None


class ModelOutputVariable(VariableTracker):
    def __init__(self, cls, values, source=None):
        super().__init__(source)
        self.cls = cls
        self.fields = [f.name for f in dataclasses.fields(cls)]
        self.items = values           # field name -> VT, every field (walked for graph outputs)
        # the dict's keys in insertion order: the non-None fields at
        # construction, then those `out[k] = v` added (made in the frame only)
        self._keys = [f for f in self.fields if not _is_none(values[f])]
        self._init_keys = list(self._keys)

    @classmethod
    def create(cls, tx, out_cls, args, kwargs):
        """The value of `out_cls(*args, **kwargs)` (dataclass __init__ binding)."""
        fields = dataclasses.fields(out_cls)
        init = [f for f in fields if f.init]
        if len(args) > len(init):
            raise Unsupported(f"{out_cls.__name__}() takes {len(init)} arguments")
        values = {}
        for f, a in zip(init, args):
            values[f.name] = a
        for k, v in kwargs.items():
            if k in values or k not in {f.name for f in init}:
                raise Unsupported(f"{out_cls.__name__}() got an unexpected or repeated argument {k!r}")
            values[k] = v
        for f in fields:
            if f.name in values:
                continue
            if f.default is not dataclasses.MISSING:
                values[f.name] = tx.wrap(f.default, None)
            elif f.default_factory is not dataclasses.MISSING:
                raise Unsupported(f"{out_cls.__name__}.{f.name} has a default_factory")
            else:
                raise Unsupported(f"{out_cls.__name__}() missing argument {f.name!r}")
        from .tensor import TensorVariable
        first = values[fields[0].name]
        others_none = all(_is_none(values[f.name]) for f in fields[1:])
        if others_none and not isinstance(first, TensorVariable) and not _is_none(first):
            _check_lone_first_field(tx, out_cls, first)
            if _is_empty_sequence(first):     # no pairs to set: the first field ends None
                values[fields[0].name] = ConstantVariable(None)
        return cls(out_cls, values)

    # --- what is known
    def keys(self):
        return list(self._keys)

    # --- mutation (outputs made by the traced code: rebuilt as they end up)
    def store_attr(self, tx, name, value):
        """`out.name = value`: ModelOutput.__setattr__ updates the key too
        when `name` is already a key and value is not None; under
        transformers 5.x it also adds the key of a field that is not one
        (setattr_adds_key)."""
        if name not in self.items:
            raise Unsupported(f"assignment to {self.cls.__name__}.{name} (not a field)")
        if name in self._keys and _is_none(value):
            raise Unsupported(f"assigning None to key {name!r} of a {self.cls.__name__}")
        if name not in self._keys and not _is_none(value):
            adds = setattr_adds_key(self.cls)
            if adds is None:
                raise Unsupported(f"assignment to {self.cls.__name__}.{name}: its __setattr__ not probed")
            if adds:
                self._keys.append(name)
        self.items[name] = value
        self._replay(tx, setattr, name, value)

    def store_item(self, tx, key_var, value):
        """`out[key] = value`: sets the key (appended when new) and the attribute."""
        key = key_var.as_python_constant()
        if key not in self.items or _is_none(value):
            raise Unsupported(f"{self.cls.__name__}[{key!r}] = ... (not a field, or None)")
        self.items[key] = value
        if key not in self._keys:
            self._keys.append(key)
        self._replay(tx, operator.setitem, key, value)

    def _replay(self, tx, fn, name, value):
        """An output passed in (or made before a break) changed by the trace:
        the store is made again on the real object after the graph (its
        ModelOutput.__setitem__ / __setattr__ keep key and attribute in
        step), in trace order with the frame's other deferred calls. The
        trace reads the new value from this VT meanwhile (the output is one
        VT per object: wrap_model_output)."""
        if self.source is None:
            return
        from .builtin import BuiltinVariable
        tx.output.replayed_calls.append((BuiltinVariable(fn), [self, ConstantVariable(name), value], {}))

    def python_type(self):
        return self.cls

    def truth(self, tx):
        return bool(self.keys())

    def unpack(self, tx):
        return [ConstantVariable(k) for k in self.keys()]

    def to_tuple(self):
        from .containers import TupleVariable
        return TupleVariable([self.items[k] for k in self.keys()])

    # --- operations
    def var_getattr(self, tx, name):
        from .functions import BoundMethodVariable
        if name in self.items:
            return self.items[name]
        if name in ("to_tuple", "keys", "values", "items", "get", "__getitem__", "__contains__",
                    "__len__"):
            return BoundMethodVariable(self, name)
        if name == "__class__":
            from .base import ClassVariable
            return ClassVariable(self.cls)
        if name == "__dict__" and self.source is not None:
            # the instance dict of an output passed in (its __post_init__
            # reads `self.__dict__.get(field)`): the real dict, wrapped with
            # its own guards (keys, and each value read)
            from ...guards import AttrSource
            src = AttrSource(self.source, "__dict__")
            return tx.wrap(tx.output.frame.fetch(src), src)
        from ..lookup import getattr_static
        try:
            getattr_static(self.cls, name)
        except AttributeError:
            # no field and nothing of that name on the class: the attribute
            # is missing (hasattr() / getattr(default) fold; else a break)
            from .builtin import ObservedAttributeError
            raise ObservedAttributeError(
                f"'{self.cls.__name__}' object has no attribute '{name}'") from None
        raise Unsupported(f"attribute {name} of {self.cls.__name__}")

    def call_method(self, tx, name, args, kwargs):
        from .containers import TupleVariable
        keys = self.keys()
        if kwargs:
            raise Unsupported(f"{self.cls.__name__}.{name} with keywords")
        if name == "to_tuple":
            return self.to_tuple()
        if name == "keys":
            return TupleVariable([ConstantVariable(k) for k in keys])
        if name == "values":
            return TupleVariable([self.items[k] for k in keys])
        if name == "items":
            return TupleVariable([TupleVariable([ConstantVariable(k), self.items[k]]) for k in keys])
        if name == "__len__":
            return ConstantVariable(len(keys))
        if name == "__contains__":
            return ConstantVariable(args[0].as_python_constant() in keys)
        if name == "get":
            k = args[0].as_python_constant()
            if k in keys:
                return self.items[k]
            return args[1] if len(args) > 1 else ConstantVariable(None)
        if name == "__getitem__":
            k = args[0].as_python_constant()
            if isinstance(k, str):
                if k not in keys:
                    raise Unsupported(f"KeyError {k!r} on {self.cls.__name__}")
                return self.items[k]
            return self.to_tuple().getitem(tx, args[0])
        raise Unsupported(f"method {self.cls.__name__}.{name}")

    def reconstruct(self, cg):
        if self.source is not None:
            cg.load_source(self.source)
            return
        cg.push_call_null(loaded=False)
        cg.load_const(builder())
        cg.push_call_null(loaded=True)
        cg.load_const(self.cls)
        keys = self._init_keys
        for k in keys:
            cg.reconstruct(self.items[k])
        cg.load_const(tuple(keys))
        cg.emit("BUILD_CONST_KEY_MAP", arg=len(keys))
        added = self._keys[len(keys):]
        attrs = [f for f in self.fields if f not in self._keys and not _is_none(self.items[f])]
        for names in (added, attrs):
            for k in names:
                cg.load_const(k)
                cg.reconstruct(self.items[k])
                cg.emit("BUILD_TUPLE", arg=2)
            cg.emit("BUILD_TUPLE", arg=len(names))
        cg.emit_call(4)

    def __repr__(self):
        return f"ModelOutputVariable({self.cls.__name__}, keys={self.keys()})"


def wrap_model_output(tx, value, source):
    """A ModelOutput read from the frame (e.g. `encoder_outputs` passed in):
    TYPE_MATCH on it, each field wrapped from its attribute."""
    from ...guards import TYPE_MATCH, AttrSource
    if source is None:
        raise Unsupported(f"a {type(value).__name__} without a source")
    known = tx.output.known_container(source, value)
    if known is not None:
        return known
    tx.output.add_guard(source, TYPE_MATCH, type(value))
    values = {f.name: tx.wrap(getattr(value, f.name), AttrSource(source, f.name))
              for f in dataclasses.fields(value)}
    var = ModelOutputVariable(type(value), values, source)
    tx.output.remember_container(source, value, var)
    return var


def mapping_items(tx, var):
    """The items `**var` unpacks (DICT_MERGE), key -> VT: a dict's, a
    ModelOutput's (its keys, in order, and their values), a dict subclass's
    read from the frame with dict's own keys() and __getitem__ (from a
    guarded snapshot of its items). Unsupported for anything else."""
    from .containers import DictVariable, guarded_dict_view
    if isinstance(var, DictVariable):
        return var.items
    if isinstance(var, ModelOutputVariable):
        return {k: var.items[k] for k in var.keys()}
    from .misc import UserDefinedObjectVariable
    value = getattr(var, "value", None)
    if isinstance(var, UserDefinedObjectVariable) and isinstance(value, dict) and \
            type(value).keys is dict.keys and type(value).__getitem__ is dict.__getitem__:
        view = guarded_dict_view(tx, var)
        if view is not None:
            return view.items
    raise Unsupported(f"** of {var}")
