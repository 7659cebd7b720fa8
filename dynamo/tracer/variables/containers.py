"""Tuples, lists, dicts and iterators of traced values.

Containers made by the traced code are mutable here (their `items` change
as the bytecode appends or stores); containers read from the frame (with a
source) are read-only: mutating them is a side effect on user data and
raises Unsupported so the caller graph-breaks and runs it eagerly.
"""
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
        from .builtin import BuiltinVariable
        if name == "__getitem__":
            return self.getitem(tx, args[0])
        if name == "__len__":
            return ConstantVariable(len(self.items))
        if name == "index" and not kwargs:
            target = args[0].as_python_constant()
            for i, v in enumerate(self.items):
                if v.is_python_constant() and v.as_python_constant() == target:
                    return ConstantVariable(i)
            raise Unsupported("list.index of a value not found at trace time")
        if name == "count" and not kwargs:
            target = args[0].as_python_constant()
            return ConstantVariable(sum(1 for v in self.items if v.is_python_constant()
                                        and v.as_python_constant() == target))
        return super().call_method(tx, name, args, kwargs)

    def var_getattr(self, tx, name):
        from .functions import BoundMethodVariable
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


class ListVariable(BaseListVariable):
    py_type = list
    build_op = "BUILD_LIST"

    def as_python_constant(self):
        raise Unsupported("a list is not a constant")

    def check_mutable(self, tx=None):
        """A list made by the traced code may change freely. A list passed
        in as an argument (a local of the frame, so every read of it in the
        trace is this one VT) may too: the generated code writes its final
        items back (OutputGraph.mutated_lists). Any other list: Unsupported."""
        if self.source is None:
            return
        from ...guards import LocalSource
        if tx is None or not isinstance(self.source, LocalSource):
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
            raise Unsupported(f"KeyError {k!r} at trace time")
        return self.items[k]

    def check_mutable(self):
        if self.source is not None:
            raise Unsupported("mutation of a dict passed into the compiled frame")

    def var_getattr(self, tx, name):
        from .functions import BoundMethodVariable
        return BoundMethodVariable(self, name)

    def call_method(self, tx, name, args, kwargs):
        if name in ("__setitem__", "update", "pop", "clear", "setdefault", "__delitem__"):
            self.check_mutable()
        if name == "__getitem__":
            return self.getitem(tx, args[0])
        if name == "__len__":
            return ConstantVariable(len(self.items))
        if name == "__contains__":
            return ConstantVariable(args[0].as_python_constant() in self.items)
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
        if name == "copy":
            return DictVariable(self.items)
        raise Unsupported(f"dict.{name}")

    def reconstruct(self, cg):
        if self.source is not None:
            cg.load_source(self.source)
            return
        for k, v in self.items.items():
            cg.load_const(k)
            cg.reconstruct(v)
        cg.emit("BUILD_MAP", arg=len(self.items))

    def __repr__(self):
        return f"DictVariable(keys={list(self.items)!r:.60})"


class ListIteratorVariable(VariableTracker):
    """An iterator over a list of VTs known at trace time; rebuilt as
    iter((remaining items)) when a graph break needs it on the stack."""

    def __init__(self, items, index=0):
        super().__init__(None)
        self.items = list(items)
        self.index = index

    def python_type(self):
        return type(iter(()))

    def next(self):
        """The next item, or None when exhausted."""
        if self.index >= len(self.items):
            return None
        self.index += 1
        return self.items[self.index - 1]

    def unpack(self, tx):
        rest = self.items[self.index:]
        self.index = len(self.items)
        return rest

    def reconstruct(self, cg):
        cg.load_const(iter)
        for item in self.items[self.index:]:
            cg.reconstruct(item)
        cg.emit("BUILD_TUPLE", arg=len(self.items) - self.index)
        cg.call(1)


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
    from .builder import wrap
    return [wrap(tx, v, ItemSource(source, i) if source is not None else None)
            for i, v in enumerate(value)]


def const_or_tuple(values):
    """A ConstantVariable when every value is a constant, else a tuple VT."""
    if all(is_constant_value(v) for v in values):
        return ConstantVariable(tuple(values))
    raise Unsupported("non-constant tuple")
