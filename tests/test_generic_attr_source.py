"""The generic-getattr guard source (GENERIC_ATTR, guards.GenericAttrSource):
attribute reads of an object whose class has a Python __getattribute__
that the trace saw delegate to object's are guarded (and reloaded by the
rewritten code) through `object.__getattribute__`, fetched in C: a hit runs
no Python __getattribute__. Each test counts compiles and the class's
__getattribute__ calls, and checks that a changed attribute, a changed
rename map, a replaced __getattribute__ or another class still recompiles
with eager's result. tests/test_c_core.py runs this file against the ASan
build too."""
import copy
import cProfile

import pytest
import torch

import dynamo
from dynamo import _C, guards, records
from dynamo.testing import CompileCounter, same

X = torch.randn(2, 4)
GENERIC = _C.SOURCE_KINDS["GENERIC_ATTR"]


class Counted:
    """Reads go through a Python __getattribute__ that delegates to
    object's (through super())."""

    def __init__(self, scale, bias):
        self.scale = scale
        self.bias = bias

    def __getattribute__(self, key):
        return super().__getattribute__(key)


class Renaming:
    """As transformers' PretrainedConfig: a class-level rename map."""
    attribute_map = {"n_embd": "hidden_size"}

    def __init__(self, hidden_size, scale):
        self.hidden_size = hidden_size
        self.scale = scale

    def __getattribute__(self, key):
        if key != "attribute_map" and key in object.__getattribute__(self, "attribute_map"):
            key = object.__getattribute__(self, "attribute_map")[key]
        return object.__getattribute__(self, key)


def getattribute_calls(cls, fn, *args):
    """(fn(*args), how many times cls.__getattribute__ ran meanwhile),
    counted by cProfile (a C profiler: no Python frame of its own)."""
    prof = cProfile.Profile()
    prof.enable()
    try:
        out = fn(*args)
    finally:
        prof.disable()
    code = cls.__getattribute__.__code__
    return out, sum(e.callcount for e in prof.getstats() if e.code is code)


def compiled(fn):
    dynamo.reset()
    cnt = CompileCounter()
    return dynamo.optimize(cnt)(fn), cnt


def guard_sources(start):
    """{source name: lowered kind} of every guard compiled since `start`."""
    return {g.source.name(): g.source.lower()[0]
            for r in records.records_since(start) for g in r.guards}


def test_delegating_getattribute_reads_are_generic_and_run_no_python_on_a_hit():
    def f(x, c):
        return x * c.scale + c.bias

    start = records.mark()
    opt, cnt = compiled(f)
    c = Counted(2.0, 1.0)
    assert same(opt(X, c), X * 2.0 + 1.0) and cnt.frame_count == 1
    srcs = guard_sources(start)
    assert srcs["object.__getattribute__(L['c'], 'scale')"] == GENERIC
    assert srcs["object.__getattribute__(L['c'], 'bias')"] == GENERIC
    assert "L['c'].scale" not in srcs and "L['c']" in srcs       # the type still guarded
    # the class's __getattribute__ runs once per call eagerly; not on a hit
    assert getattribute_calls(Counted, f, X, c)[1] == 2
    for _ in range(3):
        out, n = getattribute_calls(Counted, opt, X, c)
        assert same(out, X * 2.0 + 1.0) and n == 0               # guards fetched in C
    assert cnt.frame_count == 1
    # a changed attribute fails its guard: recompiles, eager's value
    c.scale = 3.0
    miss = dynamo.explain_miss(opt, X, c)
    assert miss.would_compile and "object.__getattribute__(L['c'], 'scale')" in str(miss)
    assert same(opt(X, c), X * 3.0 + 1.0) and cnt.frame_count == 2
    # another class (object's own lookup) re-checks: TYPE_MATCH fails
    class Other:
        def __init__(self):
            self.scale, self.bias = 5.0, 0.0
    assert same(opt(X, Other()), X * 5.0) and cnt.frame_count == 3


def test_tensor_attribute_is_a_graph_input_loaded_without_the_class_lookup():
    def f(x, c):
        return x * c.scale + c.bias

    opt, cnt = compiled(f)
    c = Counted(torch.full((4,), 2.0), torch.ones(4))
    assert same(opt(X, c), f(X, c)) and cnt.frame_count == 1
    c.scale = torch.full((4,), 5.0)                  # same metadata: a hit, a new value
    out, n = getattribute_calls(Counted, opt, X, c)
    assert same(out, X * 5.0 + 1.0) and cnt.frame_count == 1
    assert n == 0                                    # loaded by object.__getattribute__


def test_renamed_key_is_sourced_from_its_target_and_follows_the_map():
    def f(x, cfg):
        return x * cfg.n_embd + cfg.scale

    start = records.mark()
    opt, cnt = compiled(f)
    cfg = Renaming(4, 0.5)
    assert same(opt(X, cfg), X * 4 + 0.5) and cnt.frame_count == 1
    srcs = guard_sources(start)
    assert srcs["object.__getattribute__(L['cfg'], 'hidden_size')"] == GENERIC
    assert "object.__getattribute__(L['cfg'], 'n_embd')" not in srcs    # never the raw name
    assert srcs["object.__getattribute__(L['cfg'], 'attribute_map')"] == GENERIC
    out, n = getattribute_calls(Renaming, opt, X, cfg)
    assert same(out, X * 4 + 0.5) and n == 0 and cnt.frame_count == 1
    cfg.hidden_size = 6                              # the target changed: recompiles
    assert same(opt(X, cfg), X * 6 + 0.5) and cnt.frame_count == 2
    saved = dict(Renaming.attribute_map)
    try:
        Renaming.attribute_map["n_embd"] = "scale"   # the map changed: n_embd is now scale
        assert same(opt(X, cfg), f(X, cfg)) and same(f(X, cfg), X * 0.5 + 0.5)
        assert cnt.frame_count == 3
        del Renaming.attribute_map["n_embd"]         # no rename: the raw name, missing
        with pytest.raises(AttributeError):
            opt(X, cfg)
        cfg.n_embd = 7                               # now an instance attribute
        assert same(opt(X, cfg), X * 7 + 0.5)
    finally:
        Renaming.attribute_map.clear()
        Renaming.attribute_map.update(saved)


def test_rename_decided_by_instance_state_follows_it():
    class Switch:
        def __init__(self):
            self.use_b, self.a, self.b = False, 2.0, 3.0

        def __getattribute__(self, key):
            if key == "v":
                key = "b" if object.__getattribute__(self, "use_b") else "a"
            return object.__getattribute__(self, key)

    def f(x, s):
        return x * s.v

    start = records.mark()
    opt, cnt = compiled(f)
    s = Switch()
    assert same(opt(X, s), X * 2.0)
    srcs = guard_sources(start)
    assert srcs["object.__getattribute__(L['s'], 'use_b')"] == GENERIC
    assert srcs["object.__getattribute__(L['s'], 'a')"] == GENERIC
    s.b = 4.0                                        # not read: still a hit
    assert same(opt(X, s), X * 2.0) and cnt.frame_count == 1
    s.use_b = True                                   # the rename flips: recompiles
    assert same(opt(X, s), X * 4.0) and cnt.frame_count == 2


def test_getattribute_that_does_not_delegate_for_a_name_keeps_its_value():
    class Computed:
        def __init__(self):
            self.w = 3.0

        def __getattribute__(self, key):
            if key == "doubled":                     # never object's for this name
                return object.__getattribute__(self, "w") * 2
            return object.__getattribute__(self, key)

    def f(x, p):
        return x * p.doubled

    start = records.mark()
    opt, cnt = compiled(f)
    p = Computed()
    assert same(opt(X, p), X * 6.0)
    srcs = guard_sources(start)
    assert "object.__getattribute__(L['p'], 'w')" in srcs
    assert not any("doubled" in name for name in srcs)
    p.w = 4.0
    assert same(opt(X, p), X * 8.0) and cnt.frame_count == 2
    # a replaced __getattribute__ fails its ID_MATCH: the new one is traced
    Computed.__getattribute__ = lambda self, key: 10.0 if key == "doubled" \
        else object.__getattribute__(self, key)
    assert same(opt(X, p), X * 10.0) and cnt.frame_count == 3


def test_plain_class_keeps_the_plain_attribute_source():
    class Plain:
        def __init__(self):
            self.scale = 2.0

    def f(x, c):
        return x * c.scale

    start = records.mark()
    opt, _ = compiled(f)
    opt(X, Plain())
    srcs = guard_sources(start)
    assert srcs["L['c'].scale"] == guards.SRC_ATTR
    assert not any(kind == GENERIC for kind in srcs.values())


def test_deepcopy_reads_the_generic_dict():
    def f(x, c):
        d = copy.deepcopy(c)
        d.scale = d.scale + 1
        return x * d.scale

    start = records.mark()
    opt, cnt = compiled(f)
    c = Counted(2.0, 1.0)
    assert same(opt(X, c), X * 3.0) and cnt.frame_count == 1
    srcs = guard_sources(start)
    assert srcs["object.__getattribute__(L['c'], '__dict__')"] == GENERIC
    out, n = getattribute_calls(Counted, opt, X, c)
    assert same(out, X * 3.0) and n == 0
    c.scale = 5.0
    assert same(opt(X, c), X * 6.0) and cnt.frame_count == 2


def test_c_fetch_matches_object_getattribute():
    """_C.eval_guards over GENERIC_ATTR: object's lookup (instance dict, a
    class attribute, __dict__, a miss), never the class's."""
    c = Renaming(4, 0.5)
    local = (_C.SOURCE_KINDS["LOCAL"], 0)
    eq, id_match = _C.GUARD_KINDS["EQUALS_MATCH"], _C.GUARD_KINDS["ID_MATCH"]
    none = _C.GUARD_KINDS["NONE_MATCH"]

    def first_failure(*checks):
        return _C.eval_guards(list(checks), {"c": c}, {}, {}, None)

    own = object.__getattribute__(c, "__dict__")
    assert getattribute_calls(Renaming, first_failure,
                              (eq, (GENERIC, local, "hidden_size"), 4),
                              (id_match, (GENERIC, local, "attribute_map"), Renaming.attribute_map),
                              (id_match, (GENERIC, local, "__dict__"), own),
                              (none, (GENERIC, local, "n_embd"), False)) == (3, 0)  # missing


def test_transformers_config_reads_are_generic():
    transformers = pytest.importorskip("transformers")
    cfg = transformers.GPT2Config(n_embd=8, n_head=2, n_layer=1)

    def f(x, config):
        return x * config.hidden_size + config.num_attention_heads   # mapped to n_embd / n_head

    start = records.mark()
    opt, cnt = compiled(f)
    assert same(opt(X, cfg), f(X, cfg)) and cnt.frame_count == 1
    srcs = guard_sources(start)
    assert srcs["object.__getattribute__(L['config'], 'n_embd')"] == GENERIC
    assert srcs["object.__getattribute__(L['config'], 'n_head')"] == GENERIC
    cfg.n_embd = 12
    assert same(opt(X, cfg), f(X, cfg)) and cnt.frame_count == 2
    cfg.hidden_size = 16                             # written through the map: n_embd
    assert same(opt(X, cfg), f(X, cfg)) and cnt.frame_count == 3

