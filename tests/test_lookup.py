"""dynamo.tracer.lookup.getattr_static answers as inspect.getattr_static
does: over every class and a sample of instances torch, transformers and
the stdlib hold, and over the odd shapes (a class replacing the instance
`__dict__`, slots, metaclass attributes, data descriptors against
instance attributes, an MRO changed by assigning `__bases__`)."""
import collections
import enum
import functools
import inspect
import sys
import types

import pytest
import torch

from dynamo.tracer.lookup import getattr_static

_NONE = object()
NAMES = ("__getattribute__", "__getattr__", "__call__", "__eq__", "__len__", "__getitem__",
         "__contains__", "__dict__", "__init__", "forward", "weight", "training", "_parameters",
         "config", "__slots__", "value", "x", "nope", "mro", "__get__")


def same_answer(obj, name):
    try:
        want = ("ok", inspect.getattr_static(obj, name, _NONE))
    except Exception as e:  # noqa: BLE001 - the exception type is the answer
        want = ("raise", type(e))
    try:
        got = ("ok", getattr_static(obj, name, _NONE))
    except Exception as e:  # noqa: BLE001
        got = ("raise", type(e))
    assert want[0] == got[0] and (want[1] is got[1] or want[1] == got[1] is not None), \
        (obj, name, want, got)
    # without a default: the same AttributeError
    if want == ("ok", _NONE):
        with pytest.raises(AttributeError):
            getattr_static(obj, name)


def corpus():
    objs = []
    for modname in ("torch.nn", "torch", "collections", "enum", "functools", "types",
                    "transformers", "transformers.modeling_outputs",
                    "transformers.configuration_utils"):
        mod = sys.modules.get(modname)
        if mod is None:
            continue
        for value in list(vars(mod).values()):
            if isinstance(value, type):
                objs.append(value)
    objs += [torch.nn.Linear(2, 2), torch.nn.Sequential(torch.nn.ReLU()), torch.randn(2),
             torch.nn.Parameter(torch.randn(2)), collections.OrderedDict(a=1),
             functools.partial(len), types.SimpleNamespace(x=1), enum.Enum("E", "A").A, 3, "s",
             len, [1], torch.float32, torch.device("cpu")]
    try:
        from transformers import BertConfig
        from transformers.modeling_outputs import BaseModelOutput
        objs += [BertConfig(), BaseModelOutput(last_hidden_state=torch.randn(1))]
    except ImportError:
        pass
    return objs


def test_same_as_inspect_over_library_objects():
    n = 0
    for obj in corpus():
        for name in NAMES:
            same_answer(obj, name)
            n += 1
    assert n > 2000


class Meta(type):
    tag = "meta"

    @property
    def prop(cls):
        return 1


class Plain(metaclass=Meta):
    value = 1


class Slots:
    __slots__ = ("x",)

    def __init__(self):
        self.x = 1


class DictProperty:
    """Replaces the instance __dict__: static lookup must not read it."""
    @property
    def __dict__(self):
        raise AssertionError("read")


class DataDescr:
    def __get__(self, obj, kind=None):
        return 1

    def __set__(self, obj, value):
        pass


class HasDescr:
    value = DataDescr()
    x = 2


def test_odd_shapes():
    p = Plain()
    p.__dict__["value"] = 5
    d = DictProperty()
    h = HasDescr()
    h.__dict__.update(value=7, x=8)
    cases = [Plain, p, Slots(), Slots, d, DictProperty, h, HasDescr, Meta, type, object]
    for obj in cases:
        for name in NAMES + ("tag", "prop"):
            same_answer(obj, name)
    assert getattr_static(h, "value").__class__ is DataDescr       # data descriptor wins
    assert getattr_static(h, "x") == 8                              # plain class attr does not
    assert getattr_static(Plain, "tag") == "meta"                   # from the metaclass


def test_mro_change_is_seen():
    class A:
        pass

    class Shadow:
        __dict__ = property(lambda self: {})   # replaces the instance dict

    class B(A):
        pass

    b = B()
    b.__dict__["x"] = 1
    same_answer(b, "x")
    assert getattr_static(b, "x") == 1
    B.__bases__ = (Shadow,)
    same_answer(b, "x")
    assert getattr_static(b, "x", None) is None
