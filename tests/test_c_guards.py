"""Tests of dynamo._C's guard IR and evaluator (guards/ir.c, guards/tree*.c).

Each guard kind passes and fails through `_C.eval_guards`; sources are
fetched from locals (by slot = position in f_locals), globals with the
builtins fallback, closure cells, attributes and items; a source that is
missing fails its guard without raising.  The end of the file checks the
same guards through the hook (failing index reported to the callback).
"""
import collections
import os
import sys

import pytest
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from test_c_core import C, Recorder, add, clean_state, mul  # noqa: E402,F401

LOCAL, GLOBAL, CLOSURE, ATTR, ITEM, NONE = range(6)
(TYPE_MATCH, ID_MATCH, EQUALS_MATCH, LENGTH, TENSOR_MATCH, GRAD_MODE, DICT_KEYS,
 FUNCTION_MATCH, NONE_MATCH) = range(9)
BUILTINS = __builtins__ if isinstance(__builtins__, dict) else __builtins__.__dict__


def run(guards, f_locals=None, f_globals=None, closure=None, builtins=BUILTINS):
    return C.eval_guards(guards, f_locals or {}, f_globals if f_globals is not None else {},
                         builtins, closure)


def cell(value):
    return (lambda: value).__closure__[0]


class Thing:
    def __init__(self, **kw):
        self.__dict__.update(kw)


# ---- each kind: pass and fail -------------------------------------------------

def test_empty_guard_list_passes():
    assert run([]) == -1


def test_type_match():
    assert run([(TYPE_MATCH, (LOCAL, 0), int)], {"a": 3}) == -1
    assert run([(TYPE_MATCH, (LOCAL, 0), int)], {"a": True}) == 0      # exact type


def test_id_and_function_match():
    o = object()
    for kind in (ID_MATCH, FUNCTION_MATCH):
        assert run([(kind, (LOCAL, 0), o)], {"a": o}) == -1
        assert run([(kind, (LOCAL, 0), o)], {"a": object()}) == 0


def test_equals_match():
    g = [(EQUALS_MATCH, (LOCAL, 0), 5)]
    assert run(g, {"a": 5}) == -1
    assert run(g, {"a": 6}) == 0
    assert run(g, {"a": 5.0}) == 0                                      # type differs
    assert run([(EQUALS_MATCH, (LOCAL, 0), "x" * 3)], {"a": "xxx"}) == -1


def test_length():
    g = [(LENGTH, (LOCAL, 0), list, 2)]
    assert run(g, {"a": [1, 2]}) == -1
    assert run(g, {"a": [1]}) == 0
    assert run(g, {"a": (1, 2)}) == 0
    assert run([(LENGTH, (LOCAL, 0), dict, 1)], {"a": {"k": 1}}) == -1


def test_dict_keys():
    g = [(DICT_KEYS, (LOCAL, 0), ("x", "y"))]
    assert run(g, {"a": {"x": 1, "y": 2}}) == -1
    assert run(g, {"a": {"y": 2, "x": 1}}) == 0                         # order matters
    assert run(g, {"a": {"x": 1}}) == 0
    assert run(g, {"a": [("x", 1), ("y", 2)]}) == 0
    assert run(g, {"a": collections.OrderedDict(x=1, y=2)}) == 0         # not a dict


def test_dict_keys_of_an_ordered_dict():
    # keys given as an OrderedDict: type(v) is OrderedDict, its keys in its own order
    g = [(DICT_KEYS, (LOCAL, 0), collections.OrderedDict.fromkeys("xy"))]
    od = collections.OrderedDict(x=1, y=2)
    assert run(g, {"a": od}) == -1
    assert run(g, {"a": {"x": 1, "y": 2}}) == 0                         # a dict is not one
    od.move_to_end("x")                     # reorders the OrderedDict, not the dict under it
    assert run(g, {"a": od}) == 0
    od.move_to_end("y")
    assert run(g, {"a": od}) == -1
    od["z"] = 3
    assert run(g, {"a": od}) == 0


def test_none_match():
    assert run([(NONE_MATCH, (LOCAL, 0), True)], {"a": None}) == -1
    assert run([(NONE_MATCH, (LOCAL, 0), True)], {"a": 0}) == 0
    assert run([(NONE_MATCH, (LOCAL, 0), False)], {"a": 0}) == -1
    assert run([(NONE_MATCH, (LOCAL, 0), False)], {"a": None}) == 0


def test_grad_mode():
    assert run([(GRAD_MODE, (NONE,), True)]) == -1
    assert run([(GRAD_MODE, (NONE,), False)]) == 0
    with torch.no_grad():
        assert run([(GRAD_MODE, (NONE,), False)]) == -1
        assert run([(GRAD_MODE, (NONE,), True)]) == 0


def expected_keys(t):
    """The documented dispatch_keys value (ARCHITECTURE.md, TENSOR_MATCH)."""
    ks = (torch._C._dispatch_keys(t) | torch._C._dispatch_tls_local_include_set()) \
        - torch._C._dispatch_tls_local_exclude_set()
    return ks.raw_repr()


def tensor_guard(t, sizes="static", strides="static", **over):
    fields = dict(cls=type(t), dtype=t.dtype, device=t.device, requires_grad=t.requires_grad,
                  keys=expected_keys(t), ndim=t.dim(),
                  sizes=tuple(t.size()) if sizes == "static" else sizes,
                  strides=tuple(t.stride()) if strides == "static" else strides)
    fields.update(over)
    return (TENSOR_MATCH, (LOCAL, 0), fields["cls"], fields["dtype"], fields["device"],
            fields["requires_grad"], fields["keys"], fields["ndim"], fields["sizes"],
            fields["strides"])


def test_tensor_match_passes():
    t = torch.randn(2, 3)
    assert run([tensor_guard(t)], {"a": torch.randn(2, 3)}) == -1
    tg = torch.randn(2, 3, requires_grad=True)
    assert run([tensor_guard(tg)], {"a": torch.randn(2, 3, requires_grad=True)}) == -1


@pytest.mark.parametrize("other", [
    lambda: torch.randn(2, 4),                          # size
    lambda: torch.randn(3, 2).t(),                      # stride
    lambda: torch.randn(2, 3, dtype=torch.float64),     # dtype
    lambda: torch.randn(2, 3, requires_grad=True),      # requires_grad + keys
    lambda: torch.randn(2, 3, 1),                       # ndim
    lambda: torch.nn.Parameter(torch.randn(2, 3)),      # class
    lambda: [1, 2],                                     # not a tensor
])
def test_tensor_match_fails(other):
    assert run([tensor_guard(torch.randn(2, 3))], {"a": other()}) == 0


def test_tensor_match_device_and_keys_fields():
    t = torch.randn(2)
    assert run([tensor_guard(t, device=torch.device("meta"))], {"a": t}) == 0
    assert run([tensor_guard(t, keys=expected_keys(t) ^ 1)], {"a": t}) == 0
    with torch.inference_mode():                      # TLS include/exclude change keys
        inside = expected_keys(t)
    assert run([tensor_guard(t, keys=inside)], {"a": t}) == (-1 if inside == expected_keys(t)
                                                               else 0)


def test_tensor_match_dynamic_sizes():
    g = tensor_guard(torch.randn(2, 3), sizes=None, strides=None)
    assert run([g], {"a": torch.randn(5, 7)}) == -1
    assert run([g], {"a": torch.randn(5)}) == 0                         # ndim still checked
    g = tensor_guard(torch.randn(2, 3), sizes=(None, 3), strides=None)
    assert run([g], {"a": torch.randn(9, 3)}) == -1
    assert run([g], {"a": torch.randn(9, 4)}) == 0


def test_first_failing_index():
    guards = [(TYPE_MATCH, (LOCAL, 0), int), (EQUALS_MATCH, (LOCAL, 1), "s"),
              (TYPE_MATCH, (LOCAL, 1), str)]
    assert run(guards, {"a": 1, "b": "s"}) == -1
    assert run(guards, {"a": 1, "b": "t"}) == 1
    assert run(guards, {"a": "x", "b": "t"}) == 0


# ---- sources ------------------------------------------------------------------

def test_global_with_builtins_fallback():
    assert run([(ID_MATCH, (GLOBAL, "x"), 7)], f_globals={"x": 7}) == -1
    assert run([(ID_MATCH, (GLOBAL, "len"), len)], f_globals={}) == -1
    shadow = object()
    assert run([(ID_MATCH, (GLOBAL, "len"), len)], f_globals={"len": shadow}) == 0
    assert run([(ID_MATCH, (GLOBAL, "missing_name"), None)], f_globals={}) == 0
    assert C.eval_guards([(ID_MATCH, (GLOBAL, "len"), len)], {}, {}, sys.modules["builtins"],
                         None) == -1


def test_closure_source():
    cl = (cell(10), cell("s"))
    assert run([(EQUALS_MATCH, (CLOSURE, 1), "s")], closure=cl) == -1
    assert run([(EQUALS_MATCH, (CLOSURE, 0), 11)], closure=cl) == 0
    assert run([(EQUALS_MATCH, (CLOSURE, 5), 11)], closure=cl) == 0      # out of range
    assert run([(EQUALS_MATCH, (CLOSURE, 0), 1)], closure=None) == 0      # no closure


def test_empty_cell_fails():
    def make():
        def inner():
            return later  # noqa: F821
        cl = inner.__closure__
        later = 1  # noqa: F841
        return cl
    cl = make()
    del_cell = type(cl[0])()                  # a cell with no contents
    assert run([(EQUALS_MATCH, (CLOSURE, 0), 1)], closure=cl) == -1
    assert run([(EQUALS_MATCH, (CLOSURE, 0), 1)], closure=(del_cell,)) == 0


def test_attr_and_item_chains():
    obj = Thing(layers=[Thing(w=1), Thing(w=2)], cfg={"k": "v"})
    loc = {"self": obj}
    w1 = (ATTR, (ITEM, (ATTR, (LOCAL, 0), "layers"), 1), "w")
    assert run([(EQUALS_MATCH, w1, 2)], loc) == -1
    assert run([(EQUALS_MATCH, w1, 1)], loc) == 0
    assert run([(EQUALS_MATCH, (ITEM, (ATTR, (LOCAL, 0), "cfg"), "k"), "v")], loc) == -1
    neg = (ATTR, (ITEM, (ATTR, (LOCAL, 0), "layers"), -1), "w")
    assert run([(EQUALS_MATCH, neg, 2)], loc) == -1


def test_item_on_custom_mapping_and_sequence():
    class M:
        def __getitem__(self, k):
            if k == "ok":
                return 1
            raise KeyError(k)
    assert run([(EQUALS_MATCH, (ITEM, (LOCAL, 0), "ok"), 1)], {"a": M()}) == -1
    assert run([(EQUALS_MATCH, (ITEM, (LOCAL, 0), "no"), 1)], {"a": M()}) == 0
    assert run([(EQUALS_MATCH, (ITEM, (LOCAL, 0), 9), 1)], {"a": range(3)}) == 0


@pytest.mark.parametrize("source", [
    (ATTR, (LOCAL, 0), "nope"),
    (ATTR, (ATTR, (LOCAL, 0), "nope"), "deeper"),
    (ITEM, (ATTR, (LOCAL, 0), "cfg"), "nokey"),
    (ITEM, (ATTR, (LOCAL, 0), "layers"), 7),
    (LOCAL, 3),
])
def test_missing_source_fails_without_raising(source):
    obj = Thing(layers=[1], cfg={})
    for kind, exp in ((TYPE_MATCH, int), (ID_MATCH, None), (NONE_MATCH, True)):
        assert run([(kind, source, exp)], {"self": obj}) == 0
    assert sys.exc_info() == (None, None, None)


def test_unexpected_errors_propagate():
    class Prop:
        @property
        def boom(self):
            raise ZeroDivisionError

    class Eq:
        def __eq__(self, other):
            raise ArithmeticError
        __hash__ = object.__hash__
    with pytest.raises(ZeroDivisionError):
        run([(TYPE_MATCH, (ATTR, (LOCAL, 0), "boom"), int)], {"a": Prop()})
    with pytest.raises(ArithmeticError):
        run([(EQUALS_MATCH, (LOCAL, 0), Eq())], {"a": Eq()})
    # not subscriptable: missing (the tree may fetch an item before the
    # TYPE test of its base that the flat order would have failed first)
    assert run([(TYPE_MATCH, (ITEM, (LOCAL, 0), "k"), int)], {"a": 5}) == 0


def test_shared_sources_fetched_once():
    count = []

    class Counting:
        @property
        def x(self):
            count.append(1)
            return 3
    src = (ATTR, (LOCAL, 0), "x")
    guards = [(TYPE_MATCH, src, int), (EQUALS_MATCH, src, 3), (EQUALS_MATCH, (ATTR, (LOCAL, 0),
                                                                                  "x"), 3)]
    assert run(guards, {"a": Counting()}) == -1
    assert len(count) == 1


@pytest.mark.parametrize("bad, exc", [
    ([(99, (LOCAL, 0), int)], ValueError),
    ([(TYPE_MATCH, (LOCAL, 0), 3)], TypeError),
    ([(TYPE_MATCH, (LOCAL, 0))], ValueError),
    ([(TYPE_MATCH, (9, 0), int)], ValueError),
    ([(TYPE_MATCH, (LOCAL, -1), int)], ValueError),
    ([(TYPE_MATCH, (GLOBAL, 3), int)], TypeError),
    ([(TYPE_MATCH, (ITEM, (LOCAL, 0), 1.5), int)], TypeError),
    ([(GRAD_MODE, (LOCAL, 0), True)], ValueError),
    ([(TYPE_MATCH, (NONE,), int)], ValueError),
    ([(TENSOR_MATCH, (LOCAL, 0), torch.Tensor, torch.float32, torch.device("cpu"), False, 0,
       2, (1,), None)], TypeError),
    ([[0, (LOCAL, 0), int]], TypeError),
    (3, TypeError),
])
def test_malformed_guards_rejected(bad, exc):
    with pytest.raises(exc):
        run(bad, {"a": 1})


def test_deep_source_rejected():
    src = (LOCAL, 0)
    for _ in range(40):
        src = (ATTR, src, "x")
    with pytest.raises(ValueError, match="nested"):
        run([(TYPE_MATCH, src, int)], {"a": 1})


def test_many_sources_use_heap_cache():
    loc = {"a": Thing(**{f"f{i}": i for i in range(100)})}
    guards = [(EQUALS_MATCH, (ATTR, (LOCAL, 0), f"f{i}"), i) for i in range(100)]
    assert run(guards, loc) == -1
    guards[77] = (EQUALS_MATCH, (ATTR, (LOCAL, 0), "f77"), -1)
    assert run(guards, loc) == 77


# ---- through the hook --------------------------------------------------------

def tensor_add(x, y):
    return x + y


def tensor_sub(x, y):
    return x - y


scale = 2


def test_guards_through_the_hook():
    x, y = torch.ones(2), torch.ones(2)
    answers = []

    def answer(code, f_locals, f_globals, f_builtins, func, failures):
        answers.append(failures)
        return (tensor_sub.__code__,
                [tensor_guard(f_locals["x"]), (EQUALS_MATCH, (GLOBAL, "scale"), scale),
                 (GRAD_MODE, (NONE,), torch.is_grad_enabled())], len(answers))
    cb = Recorder(answer)
    oc = C.OptimizedCallable(tensor_add, cb, C.MODE_COMPILE)
    global scale
    assert torch.equal(oc(x, y), torch.zeros(2))
    assert torch.equal(oc(x, y), torch.zeros(2)) and len(answers) == 1
    oc(torch.ones(3), y[:1])                          # tensor guard fails
    assert answers[-1] == [(1, 0, "size()[0]", 2, 3)]
    scale = 3
    oc(x, y)                                          # global guard fails
    assert answers[-1] == [(1, 1, "value", 2, 3), (2, 0)]   # closest first
    with torch.no_grad():
        oc(x, y)                                      # grad mode fails on the newest
    assert answers[-1][0] == (3, 2, "grad_mode", True, False)
    assert len(answers) == 4
    assert C.cache_entries(tensor_add.__code__) == [4, 3, 2, 1]
    scale = 2
