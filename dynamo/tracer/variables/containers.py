"""Tuples, lists, dicts and iterators of traced values.

Containers made by the traced code are mutable here (their `items` change
as the bytecode appends or stores); containers read from the frame (with a
source) are read-only: mutating them is a side effect on user data and
raises Unsupported so the caller graph-breaks and runs it eagerly.
"""
import collections
import operator
import types

import torch

from ...exc import Unsupported
from ...guards import ItemSource
from .base import ConstantVariable, VariableTracker, is_constant_value


class BaseListVariable(VariableTracker):
    """Shared behaviour of tuples and lists: `items` is a list of VTs."""
    py_type = tuple
    build_op = "BUILD_TUPLE"

    def __init__(self, items, source=None):
        super().__init__(source)
        self.items = list(items)

    def python_type(self):
        return self.py_type

    def as_python_constant(self):
        return self.py_type(v.as_python_constant() for v in self.items)

    def is_python_constant(self):
        # Asking never specializes: the base's answer tries
        # as_python_constant, which guards a symbolic size inside to its
        # value (`x.size()[:-1] + (n,)` then recompiled per batch size).
        return all(v.is_python_constant() for v in self.items)

    def truth(self, tx):
        return bool(self.items)

    def unpack(self, tx):
        return list(self.items)

    def getitem(self, tx, key):
        key = key.as_python_constant()
        if isinstance(key, slice):
            return type(self)(self.items[key])
        return self.items[key]

    def reconstruct(self, cg):
        if self.source is not None:
            cg.load_source(self.source)
            return
        for item in self.items:
            cg.reconstruct(item)
        cg.emit(self.build_op, arg=len(self.items))

    def call_method(self, tx, name, args, kwargs):
        from .kinds import BuiltinVariable
        if name == "__getitem__":
            return self.getitem(tx, args[0])
        if name == "__len__":
            return ConstantVariable(len(self.items))
        if name == "__reversed__" and not args and not kwargs:
            return ListIteratorVariable.reversed_over(tx, self)
        if name == "index" and len(args) == 1 and not kwargs:
            from .kinds import element_matches
            for i, v in enumerate(self.items):
                if element_matches(tx, v, args[0]):
                    return ConstantVariable(i)
            raise Unsupported("list.index of a value not found at trace time")
        if name == "count" and len(args) == 1 and not kwargs:
            from .kinds import element_matches
            return ConstantVariable(sum(1 for v in list(self.items) if element_matches(tx, v, args[0])))
        if name == "numel" and self.py_type is torch.Size and not args and not kwargs:
            from .kinds import binary_op
            n = ConstantVariable(1)                 # symbolic sizes stay symbolic
            for item in self.items:
                n = binary_op(tx, operator.mul, n, item)
            return n
        return super().call_method(tx, name, args, kwargs)

    def var_getattr(self, tx, name):
        from .kinds import BoundMethodVariable
        return BoundMethodVariable(self, name)

    def __repr__(self):
        return f"{type(self).__name__}(len={len(self.items)})"


class TupleVariable(BaseListVariable):
    py_type = tuple
    build_op = "BUILD_TUPLE"


class SizeVariable(TupleVariable):
    """torch.Size holding non-constant items (rare: sizes are constants)."""
    py_type = torch.Size

    def reconstruct(self, cg):
        cg.load_const(torch.Size)
        super().reconstruct(cg)
        cg.call(1)


class NamedTupleVariable(TupleVariable):
    """A tuple with field names: torch.return_types results and
    collections.namedtuple instances (`cls` set: rebuilt by calling it)."""

    def __init__(self, items, fields, source=None, cls=None):
        super().__init__(items, source)
        self.fields = tuple(fields)
        self.cls = cls

    def python_type(self):
        return self.cls or tuple

    def as_python_constant(self):
        if self.cls is None:
            return super().as_python_constant()
        return self.cls(*[v.as_python_constant() for v in self.items])

    def reconstruct(self, cg):
        if self.source is not None or self.cls is None:
            return super().reconstruct(cg)
        cg.load_const(self.cls)
        for item in self.items:
            cg.reconstruct(item)
        cg.emit("BUILD_TUPLE", arg=len(self.items))
        cg.call_ex()

    def var_getattr(self, tx, name):
        if name in self.fields:
            return self.items[self.fields.index(name)]
        return super().var_getattr(tx, name)


class ObservedKeyError(Unsupported):
    """d[k] of a key the dict does not have: a probe that catches KeyError
    (Mapping.__contains__, see builtin.contains) goes on with the answer."""


class ListVariable(BaseListVariable):
    built_once = True
    py_type = list
    build_op = "BUILD_LIST"

    def as_python_constant(self):
        raise Unsupported("a list is not a constant")

    def is_python_constant(self):
        return False

    def check_mutable(self, tx=None):
        """A list made by the traced code may change freely. A list passed
        in as an argument (a local of the frame, so every read of it in the
        trace is this one VT), an argument's attribute, or bound to a global
        (OutputGraph.known_container) may too: the generated code writes its
        final items back (OutputGraph.mutated_lists). Any other list: Unsupported."""
        if self.source is None:
            return
        if tx is None or not may_write_back(self.source, items_too=False):
            raise Unsupported("mutation of a list passed into the compiled frame")
        tx.output.mutated_lists[id(self)] = self

    def call_method(self, tx, name, args, kwargs):
        mutators = {"append", "extend", "insert", "pop", "clear", "__setitem__",
                    "reverse", "remove", "__delitem__"}
        if name in mutators:
            self.check_mutable(tx)
        if name == "append":
            self.items.append(args[0])
        elif name == "extend":
            self.items.extend(args[0].unpack(tx))
        elif name == "insert":
            self.items.insert(args[0].as_python_constant(), args[1])
        elif name == "pop":
            idx = args[0].as_python_constant() if args else -1
            return self.items.pop(idx)
        elif name == "clear":
            self.items.clear()
        elif name == "reverse":
            self.items.reverse()
        elif name == "__setitem__":
            key = args[0].as_python_constant()
            if isinstance(key, slice):
                self.items[key] = args[1].unpack(tx)
            else:
                self.items[key] = args[1]
        elif name == "__delitem__":
            del self.items[args[0].as_python_constant()]
        elif name == "copy":
            return ListVariable(self.items)
        else:
            return super().call_method(tx, name, args, kwargs)
        return ConstantVariable(None)


class DictVariable(VariableTracker):
    """A dict with constant keys: `items` maps the Python key to a VT;
    `user_cls` is the dict class it stands for (dict, OrderedDict, ...)."""
    built_once = True

    def __init__(self, items, source=None, user_cls=dict):
        super().__init__(source)
        self.items = dict(items)
        self.user_cls = user_cls

    def python_type(self):
        return self.user_cls

    def truth(self, tx):
        return bool(self.items)

    def unpack(self, tx):
        return [ConstantVariable(k) for k in self.items]

    def getitem(self, tx, key):
        k = key.as_python_constant()
        if k not in self.items:
            raise ObservedKeyError(f"KeyError {k!r} at trace time")
        return self.items[k]

    def check_mutable(self, tx=None):
        """A dict made by the traced code may change freely; a dict passed
        in (an argument, an argument's attribute or item, a global) too: the
        generated code gives it its final items, in order, at the end of the
        graph (OutputGraph.mutated_lists; `write_back_dict`)."""
        if self.source is None:
            return
        if tx is None or not may_write_back(self.source, items_too=True):
            raise Unsupported("mutation of a dict passed into the compiled frame")
        tx.output.mutated_lists[id(self)] = self

    def var_getattr(self, tx, name):
        from .kinds import BoundMethodVariable
        return BoundMethodVariable(self, name)

    def call_method(self, tx, name, args, kwargs):
        if name in ("__setitem__", "update", "pop", "clear", "setdefault", "__delitem__", "popitem"):
            self.check_mutable(tx)
        if name == "__getitem__":
            return self.getitem(tx, args[0])
        if name == "__len__":
            return ConstantVariable(len(self.items))
        if name == "__contains__":
            from .kinds import contains
            return ConstantVariable(contains(tx, args[0], self))
        if name == "get":
            k = args[0].as_python_constant()
            default = args[1] if len(args) > 1 else ConstantVariable(None)
            return self.items.get(k, default)
        if name == "keys":
            return TupleVariable([ConstantVariable(k) for k in self.items])
        if name == "values":
            return TupleVariable(list(self.items.values()))
        if name == "items":
            return TupleVariable([TupleVariable([ConstantVariable(k), v])
                                  for k, v in self.items.items()])
        if name == "__setitem__":
            self.items[args[0].as_python_constant()] = args[1]
            return ConstantVariable(None)
        if name == "__delitem__":
            del self.items[args[0].as_python_constant()]
            return ConstantVariable(None)
        if name == "update":
            other = args[0] if args else None
            if isinstance(other, DictVariable):
                self.items.update(other.items)
            elif other is not None:
                for pair in other.unpack(tx):
                    k, v = pair.unpack(tx)
                    self.items[k.as_python_constant()] = v
            for k, v in kwargs.items():
                self.items[k] = v
            return ConstantVariable(None)
        if name == "pop":
            k = args[0].as_python_constant()
            if k in self.items:
                return self.items.pop(k)
            if len(args) > 1:
                return args[1]
            raise Unsupported(f"KeyError {k!r} at trace time")
        if name == "setdefault":
            k = args[0].as_python_constant()
            if k not in self.items:
                self.items[k] = args[1] if len(args) > 1 else ConstantVariable(None)
            return self.items[k]
        if name == "clear":
            self.items.clear()
            return ConstantVariable(None)
        if name == "copy":
            return DictVariable(self.items, user_cls=self.user_cls)
        if name == "move_to_end" and self.user_cls is collections.OrderedDict:
            self.check_mutable(tx)
            k = args[0].as_python_constant()
            last = (args[1] if len(args) > 1 else kwargs.get("last", ConstantVariable(True))).truth(tx)
            v = self.items.pop(k)
            self.items = {k: v, **self.items} if not last else {**self.items, k: v}
            return ConstantVariable(None)
        raise Unsupported(f"{self.user_cls.__name__}.{name}")

    def reconstruct(self, cg):
        if self.source is not None:
            cg.load_source(self.source)
            return
        if self.user_cls is not dict:                # OrderedDict({...}): the class is kept
            cg.load_const(self.user_cls)
        for k, v in self.items.items():
            cg.load_const(k)
            cg.reconstruct(v)
        cg.emit("BUILD_MAP", arg=len(self.items))
        if self.user_cls is not dict:
            cg.call(1)

    def __repr__(self):
        return f"DictVariable(keys={list(self.items)!r:.60})"


# dict classes the trace builds itself: their constructor and fromkeys take
# dict's arguments and their instances behave as dicts with their keys in
# insertion order (OrderedDict's own methods are the ones in call_method)
BUILT_DICT_CLASSES = (dict, collections.OrderedDict)


class DictFromKeysVariable(VariableTracker):
    """`dict.fromkeys` / `OrderedDict.fromkeys` of a class the trace builds:
    every key of the iterable maps to the one value (the same object, as
    CPython shares it)."""

    def __init__(self, cls):
        super().__init__(None)
        self.cls = cls

    def truth(self, tx):
        return True

    def call(self, tx, args, kwargs):
        if kwargs or not 1 <= len(args) <= 2:
            raise Unsupported(f"{self.cls.__name__}.fromkeys() takes an iterable and a value")
        value = args[1] if len(args) == 2 else ConstantVariable(None)
        keys = [k.as_python_constant() for k in args[0].unpack(tx)]
        return DictVariable({k: value for k in keys}, user_cls=self.cls)

    def reconstruct(self, cg):
        cg.load_const(self.cls.fromkeys)

    def __repr__(self):
        return f"DictFromKeysVariable({self.cls.__name__})"


def may_write_back(source, items_too):
    """May a container read at `source` be mutated by the trace and written
    back at the end of the graph? It is reloaded through `source` then, so
    the path must lead to the same object: a local of the frame (every read
    of it in the trace is one VT), an attribute of one (a cache's key list),
    with `items_too` an item of one (a nested dict of options), any chain of
    attributes and items below those (a cache layer's dict of states,
    `cache.layers[0].conv_states`: the write-backs run deepest first and
    before any attribute store, so each link still holds what the trace
    read), or a global (an item of another module's globals, or of an
    optimizer's state view: a parameter's state dict), or the contents of
    a closure cell: of the frame's own (ClosureSource) or of a function
    the trace reached (`<fn>.__closure__[i].cell_contents`, the function
    guarded by identity; a hook appending to a list it closes over). Lists
    are written back before any cell store of the trace
    (frame.write_back_lists), so the cell still holds the list then."""
    from ...guards import AttrSource, ClosureSource, GlobalSource, ItemSource, LocalSource
    if isinstance(source, ClosureSource):
        return True
    if isinstance(source, AttrSource) and source.attr == "cell_contents" and \
            isinstance(source.base, ItemSource) and isinstance(source.base.base, AttrSource) and \
            source.base.base.attr == "__closure__":
        return True
    src = source
    if isinstance(src, AttrSource) or items_too and isinstance(src, ItemSource):
        src = src.base
        while isinstance(src, (AttrSource, ItemSource)) and \
                not (isinstance(src, ItemSource) and isinstance(src.base, GlobalSource)):
            src = src.base
    is_global = isinstance(src, GlobalSource) or (
        isinstance(src, ItemSource) and isinstance(src.base, GlobalSource)
        and src.base.global_name.startswith(("___globals_", "___optimizer_state_")))
    return isinstance(src, LocalSource) or is_global


def guarded_dict_view(tx, obj):
    """A DictVariable of the items of `obj`, a UserDefinedObjectVariable
    of a dict (or OrderedDict) subclass read from the frame, for dict's own
    reads of it (super().__getitem__ in a subclass's __getitem__, `in`):
    valid while its items stay equal, which an EQUALS_MATCH guard against
    a snapshot of its class checks (without calling the subclass's
    __getitem__, as a guard's item fetch would). None without a source or
    for other than a table of constants, classes and functions."""
    snap = dict_snapshot(obj.value) if obj.source is not None else None
    if snap is None:
        return None
    from ...guards import EQUALS_MATCH
    tx.output.add_guard(obj.source, EQUALS_MATCH, snap)
    return DictVariable({k: tx.wrap(v, None) for k, v in dict.items(snap)},
                        user_cls=type(obj.value))


def dict_snapshot(value):
    """A copy of dict (or OrderedDict) subclass instance `value`, of its
    very class, made without its __init__ or __setitem__; None unless every
    key is a str or int and every value a table entry (_is_table_entry)."""
    if not all(type(k) in (str, int) for k in dict.keys(value)) or \
            not all(map(_is_table_entry, dict.values(value))):
        return None
    cls = type(value)
    base = collections.OrderedDict if isinstance(value, collections.OrderedDict) else dict
    try:
        snap = base.__new__(cls)
    except TypeError:
        return None
    for k, v in base.items(value):
        base.__setitem__(snap, k, v)
    return snap


def _is_table_entry(v, depth=0):
    """None, a bool, int, float (not a NaN: it would fail the equality
    guard on every call) or str, a class or a function, or a tuple or a
    str-keyed dict of those (a class and its keyword arguments)."""
    if v is None or type(v) in (bool, int, str) or isinstance(v, type) or \
            type(v) is types.FunctionType or type(v) is float and v == v:    # not a NaN
        return True
    if depth > 2:
        return False
    if type(v) is tuple:
        return all(_is_table_entry(x, depth + 1) for x in v)
    if type(v) is dict:
        return all(type(k) is str and _is_table_entry(x, depth + 1) for k, x in v.items())
    return False


def source_depth(source):
    """How many attribute and item links lead to `source` from its root."""
    from ...guards import AttrSource, ItemSource
    depth = 0
    while isinstance(source, (AttrSource, ItemSource)):
        source, depth = source.base, depth + 1
    return depth


def write_back_dict(target, items):
    """Run time: dict `target` (passed into a compiled frame) gets the items
    the trace left it, in their order."""
    if list(target) != list(items) or any(target[k] is not v for k, v in items.items()):
        target.clear()
        target.update(items)


class ListIteratorVariable(VariableTracker):
    """An iterator over a list of VTs known at trace time; rebuilt as
    iter((remaining items)) when a graph break needs it on the stack.

    With `seq` (a ListVariable) it is a live list iterator: each next()
    reads `seq.items` at `index` as it is then (items appended while
    iterating are visited, like CPython's list iterator), and it is rebuilt
    as a real iterator over the same list object at the same position.
    With `reverse` too it is reversed(list): `index` counts down from the
    last item and each next() reads the item there as it is then (a write
    to an item not yet visited is seen; it stops once `index` is outside
    the list, as CPython's list_reverseiterator does when the list shrank).
    With `dict_seq` (a DictVariable) it iterates the keys snapshot `items`
    and fails when the dict changed size, as CPython's dict iterator does."""
    built_once = True

    def __init__(self, items, index=0, seq=None, dict_seq=None, reverse=False):
        super().__init__(None)
        self.items = list(items)
        self.index = index
        self.seq = seq
        self.reverse = reverse
        self.dict_seq = dict_seq
        self.dict_len = len(dict_seq.items) if dict_seq is not None else None
        self.exhausted = False

    @classmethod
    def over(cls, tx, obj):
        """iter(obj) for a traced iterable."""
        if isinstance(obj, ListVariable):
            return cls([], seq=obj)
        if isinstance(obj, DictVariable):
            return cls(obj.unpack(tx), dict_seq=obj)
        return cls(obj.unpack(tx))

    @classmethod
    def reversed_over(cls, tx, obj):
        """reversed(obj) for a traced sequence."""
        if isinstance(obj, ListVariable):
            return cls([], index=len(obj.items) - 1, seq=obj, reverse=True)
        if isinstance(obj, DictVariable):
            return cls(obj.unpack(tx)[::-1], dict_seq=obj)
        if isinstance(obj, ListIteratorVariable):
            raise Unsupported("reversed() of an iterator (a TypeError)")
        return cls(obj.unpack(tx)[::-1])

    def python_type(self):
        return type(iter(()))

    def live_items(self):
        return self.seq.items if self.seq is not None else self.items

    def check_dict(self):
        if self.dict_seq is not None and len(self.dict_seq.items) != self.dict_len:
            # eager raises RuntimeError at this next(): run it eagerly
            raise Unsupported("dictionary changed size during iteration")

    def next(self):
        """The next item, or None when exhausted."""
        self.check_dict()
        items = self.live_items()
        if self.exhausted or not 0 <= self.index < len(items):
            self.exhausted = True
            return None
        self.index += -1 if self.reverse else 1
        return items[self.index + (1 if self.reverse else -1)]

    def rest(self):
        """The items next() would give from here if nothing changed."""
        items = self.live_items()
        if self.exhausted or not 0 <= self.index < len(items):
            return []
        return items[self.index::-1] if self.reverse else items[self.index:]

    def unpack(self, tx):
        self.check_dict()
        rest = self.rest()
        self.index = -1 if self.reverse else len(self.live_items())
        self.exhausted = True
        return rest

    def is_live_list(self):
        """Must a break hand the real list and position on (not a snapshot)?"""
        return self.seq is not None and not self.exhausted

    def var_getattr(self, tx, name):
        from .kinds import BoundMethodVariable
        if name == "__setstate__" and self.seq is not None:
            return BoundMethodVariable(self, name)
        raise Unsupported(f"attribute {name} of a traced iterator")

    def call_method(self, tx, name, args, kwargs):
        if name == "__setstate__" and self.seq is not None and not kwargs and len(args) == 1:
            index = args[0].as_python_constant()
            if type(index) is not int:
                raise Unsupported("list iterator __setstate__ of a non-int")
            if not self.exhausted:      # clamped as list_iterator / list_reverseiterator do
                low, high = (-1, len(self.seq.items) - 1) if self.reverse else (0, len(self.seq.items))
                self.index = min(max(index, low), high)
            return ConstantVariable(None)
        return super().call_method(tx, name, args, kwargs)

    def reconstruct(self, cg):
        if self.is_live_list():
            # iter(lst) / reversed(lst) positioned at index: the same list object, live
            cg.reconstruct(self.seq)
            if self.reverse:
                cg.load_method("__reversed__")
                cg.emit_call(0)
            else:
                cg.emit("GET_ITER")
            cg.emit("COPY", arg=1)
            cg.load_method("__setstate__")
            cg.load_const(self.index)
            cg.emit_call(1)
            cg.emit("POP_TOP")
            return
        if self.dict_seq is not None and not self.exhausted:
            # a real iterator over the dict, advanced past what was read:
            # it raises like eager when code run later changes the dict
            cg.reconstruct(self.dict_seq)
            cg.emit("GET_ITER")
            for _ in range(self.index):
                cg.emit("COPY", arg=1)
                cg.load_const(next)
                cg.emit("SWAP", arg=2)
                cg.call(1)
                cg.emit("POP_TOP")
            return
        cg.load_const(iter)
        rest = self.rest()
        for item in rest:
            cg.reconstruct(item)
        cg.emit("BUILD_TUPLE", arg=len(rest))
        cg.call(1)


class LazyIteratorVariable(ListIteratorVariable):
    """enumerate()/zip() over traced iterators, consumed item by item like
    CPython (a list mutated while enumerating it is seen); rebuilt as a
    real enumerate/zip over the rebuilt inner iterators."""

    def __init__(self, kind, inners, count=0):
        super().__init__([])
        self.kind = kind               # "enumerate" or "zip"
        self.inners = list(inners)
        self.count = count

    def next(self):
        if self.exhausted:
            return None
        if self.kind == "enumerate":
            v = self.inners[0].next()
            if v is None:
                self.exhausted = True
                return None
            self.count += 1
            return TupleVariable([ConstantVariable(self.count - 1), v])
        group = []
        for it in self.inners:
            v = it.next()
            if v is None:
                self.exhausted = True
                return None
            group.append(v)
        return TupleVariable(group)

    def unpack(self, tx):
        out = []
        while (item := self.next()) is not None:
            out.append(item)
        return out

    def is_live_list(self):
        return False

    def is_live(self):
        """Does a break need the real object (an inner is a live list/dict
        iterator)? Otherwise the remaining items are a safe snapshot."""
        return not self.exhausted and any(
            it.is_live_list() or it.dict_seq is not None
            or (isinstance(it, LazyIteratorVariable) and it.is_live()) for it in self.inners)

    def remaining(self):
        """The remaining items, without consuming (only when not live)."""
        return _probe_copy(self).unpack(None)

    def var_getattr(self, tx, name):
        raise Unsupported(f"attribute {name} of {self.kind}()")

    def reconstruct(self, cg):
        if not self.is_live():
            TupleVariable(self.remaining()).reconstruct(cg)
            cg.load_const(iter)
            cg.emit("SWAP", arg=2)
            cg.call(1)
            return
        cg.load_const(enumerate if self.kind == "enumerate" else zip)
        for it in self.inners:
            cg.reconstruct(it)
        if self.kind == "enumerate":
            cg.load_const(self.count)
        cg.call(len(self.inners) + (self.kind == "enumerate"))

    def __repr__(self):
        return f"LazyIteratorVariable({self.kind})"


def _probe_copy(it):
    """A copy of iterator VT `it` that can be consumed without moving it."""
    import copy
    probe = copy.copy(it)
    if isinstance(it, LazyIteratorVariable):
        probe.inners = [_probe_copy(i) for i in it.inners]
    return probe


class GeneratorVariable(ListIteratorVariable):
    """A generator made by traced code (a genexpr or an inlined generator
    function), run lazily like CPython: each next() resumes its suspended
    translator `gen_tx` up to the next yield, so short-circuiting consumers
    (any/all, a `for` with `break`, next()) run exactly as many items as
    eager would. It cannot be rebuilt in generated code."""

    def __init__(self, gen_tx):
        super().__init__([])
        self.gen_tx = gen_tx

    def python_type(self):
        import types
        return types.GeneratorType

    def next(self):
        return self.gen_tx.next_item()

    def unpack(self, tx):
        out = []
        while (item := self.next()) is not None:
            out.append(item)
        return out

    def truth(self, tx):
        return True

    def reconstruct(self, cg):
        raise Unsupported(f"cannot rebuild generator {self.gen_tx.code.co_name} after a graph "
                          "break (it is not consumed before the break)")

    def __repr__(self):
        return f"GeneratorVariable({self.gen_tx.code.co_name})"


def wrap_sequence_items(tx, value, source):
    """VTs for the items of a tuple/list read from the frame (with guards)."""
    return [tx.wrap(v, ItemSource(source, i) if source is not None else None)
            for i, v in enumerate(value)]


def const_or_tuple(values):
    """A ConstantVariable when every value is a constant, else a tuple VT."""
    if all(is_constant_value(v) for v in values):
        return ConstantVariable(tuple(values))
    raise Unsupported("non-constant tuple")
