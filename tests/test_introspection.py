"""Issue 30: guard provenance, explain_miss, the recompile-storm warning and
frame labels (in process; the tools' views are in tests/test_dynamo_top.py
and tests/test_dynamo_dot.py).  Each test counts which guard, which line."""
import functools
import inspect
import re
import warnings

import pytest
import torch

import dynamo
from dynamo import guards as G
from dynamo import records
from dynamo.debug import format_compile
from dynamo.testing import CompileCounter


@pytest.fixture(autouse=True)
def fresh():
    dynamo.reset()
    yield
    dynamo.reset()


def line_of(fn, text):
    """The line number of the first source line of `fn` containing `text`."""
    lines, first = inspect.getsourcelines(fn)
    return first + next(i for i, t in enumerate(lines) if text in t)


def scaled(x, scale):
    y = x + 1
    if x.size(0) > 4:
        y = y * scale
    return y


def helper(t):
    return t.sum(0) if t.dim() == 2 else t     # an inlined function's guard


def calls_helper(x, k):
    return helper(x) * k


def by_kind(record, kind):
    return [g for g in record.guards if g.kind == kind]


# ---- provenance ---------------------------------------------------------------

def test_each_guard_names_the_line_that_installed_it():
    cnt = CompileCounter()
    dynamo.optimize(cnt)(scaled)(torch.randn(6), 3)
    (rec,) = records.all_records()
    (tm,) = by_kind(rec, G.TENSOR_MATCH)
    (eq,) = by_kind(rec, G.EQUALS_MATCH)
    assert tm.origin.lineno == line_of(scaled, "y = x + 1")         # the first read of x
    assert eq.origin.lineno == line_of(scaled, "y = y * scale")     # the first use of scale
    assert tm.origin.filename == __file__ and eq.origin.line() == "y = y * scale"
    # the global-state guards and the backend's come from no line, and say so
    assert all(g.origin is None for g in rec.guards
               if g.kind in (G.GRAD_MODE, G.GLOBAL_STATE, G.BACKEND_MATCH))
    assert by_kind(rec, G.BACKEND_MATCH)[0].origin_text().startswith("the optimize()")


def test_a_relation_guards_repr_names_both_sources():
    """Three same-shaped inputs give three SAME_OBJECT guards, two on one
    source: each repr names its other source, so none reads as a duplicate."""
    def f(a, b, c):
        return a + b + c
    dynamo.optimize(CompileCounter())(f)(torch.randn(3), torch.randn(3), torch.randn(3))
    (rec,) = records.all_records()
    same = by_kind(rec, G.SAME_OBJECT)
    assert len(same) == 3 and len({repr(g) for g in same}) == 3, [repr(g) for g in same]
    assert all(re.fullmatch(r"Guard\(L\['[abc]'\], SAME_OBJECT, not L\['[abc]'\]\)", repr(g))
               for g in same), [repr(g) for g in same]


def test_inlined_guard_names_its_line_and_the_frames():
    dynamo.optimize(CompileCounter())(calls_helper)(torch.randn(3, 2), 2)
    (rec,) = records.all_records()
    (eq,) = by_kind(rec, G.EQUALS_MATCH)
    assert eq.origin.lineno == line_of(calls_helper, "helper(x) * k")
    (tm,) = by_kind(rec, G.TENSOR_MATCH)
    # x is first read in calls_helper's own line (passed to helper)
    assert tm.origin.lineno == line_of(calls_helper, "helper(x) * k")
    fn = by_kind(rec, G.FUNCTION_MATCH)
    helper_guard = [g for g in fn if "helper" in g.source.name()]
    assert helper_guard and helper_guard[0].origin.lineno == line_of(calls_helper, "helper(x)")


def test_shape_guard_points_to_the_branch():
    cnt = CompileCounter()
    opt = dynamo.optimize(cnt)(scaled)
    opt(torch.randn(6), 3)
    opt(torch.randn(7), 3)          # automatic dynamic: a symbolic size, SHAPE_GUARDs
    rec = records.all_records()[-1]
    shapes = by_kind(rec, G.SHAPE_GUARD)
    assert shapes, [g.describe() for g in rec.guards]
    branch = line_of(scaled, "if x.size(0) > 4:")
    assert {g.origin.lineno for g in shapes} == {branch}, [(g.describe(), g.origin) for g in shapes]


def test_recompile_reason_and_debug_listing_name_the_line():
    cnt = CompileCounter()
    opt = dynamo.optimize(cnt)(scaled)
    opt(torch.randn(6), 3)
    opt(torch.randn(6), 4)
    rec = records.all_records()[-1]
    assert rec.recompile_reason == (
        f"L['scale']: expected 3, actual 4 (EQUALS_MATCH of entry [0/0]); guarded at "
        f"test_introspection.py:{line_of(scaled, 'y = y * scale')}: y = y * scale")
    listing = format_compile(rec)
    assert f"# test_introspection.py:{line_of(scaled, 'y = x + 1')}: y = x + 1" in listing
    text = str(dynamo.explain(scaled)(torch.randn(6), 3))
    assert re.search(rf"EQUALS_MATCH +# test_introspection.py:{line_of(scaled, 'y = y * scale')}",
                     text), text


# ---- explain_miss -------------------------------------------------------------

def test_explain_miss_compiles_nothing_and_names_each_entrys_guard(monkeypatch):
    monkeypatch.setattr(dynamo.config, "specialize_int", True)   # ints constant: one entry per value
    cnt = CompileCounter()
    opt = dynamo.optimize(cnt)(scaled)
    opt(torch.randn(6), 3)
    opt(torch.randn(6), 5)
    n_records, frames = len(records.all_records()), cnt.frame_count
    miss = dynamo.explain_miss(opt, torch.randn(6), 7)
    assert (len(records.all_records()), cnt.frame_count) == (n_records, frames)
    assert miss.would_compile and miss.hit is None
    assert [v.entry for v in miss.entries] == ["[0/1]", "[0/0]"]       # lookup order
    assert [(v.guard.kind, v.property, v.expected, v.actual) for v in miss.entries] == \
        [(G.EQUALS_MATCH, "value", 5, 7), (G.EQUALS_MATCH, "value", 3, 7)]
    assert all(v.origin.endswith(f":{line_of(scaled, 'y = y * scale')}: y = y * scale")
               for v in miss.entries)
    hit = dynamo.explain_miss(opt, torch.randn(6), 3)
    assert hit.hit == "[0/0]" and not hit.would_compile
    assert "would hit entry [0/0]" in str(hit) and "expected 3, actual 7" in str(miss)


def test_explain_miss_dynamic_shapes_case():
    opt = dynamo.optimize(CompileCounter())(scaled)
    opt(torch.randn(6), 3)
    opt(torch.randn(7), 3)                      # [0/1]: symbolic size, 4 < s0
    miss = dynamo.explain_miss(opt, torch.randn(3), 3)
    first = miss.entries[0]
    assert first.entry == "[0/1]" and first.guard.kind == G.SHAPE_GUARD == 13
    assert first.property == "shape" and first.actual == (3,)
    assert first.origin.endswith(f":{line_of(scaled, 'if x.size(0)')}: if x.size(0) > 4:")
    assert (miss.entries[1].guard.kind, miss.entries[1].property) == (G.TENSOR_MATCH, "size()[0]")


def test_explain_miss_backend_change_case():
    dynamo.optimize(CompileCounter())(scaled)(torch.randn(6), 3)
    other = dynamo.optimize("eager")(scaled)
    miss = dynamo.explain_miss(other, torch.randn(6), 3)
    (v,) = miss.entries
    assert v.guard.kind == G.BACKEND_MATCH == 12 and v.property == "backend"
    assert "another optimize()/compile() wrapper" in v.text
    assert v.origin == "the optimize()/compile() wrapper's backend"
    # the plain function (no wrapper: any backend, as dynamo.run()) would hit it
    assert dynamo.explain_miss(scaled, torch.randn(6), 3).hit == "[0/0]"


def logged(fn):
    @functools.wraps(fn)
    def wrapper(self, *args, **kwargs):
        return fn(self, *args, **kwargs)
    return wrapper


class Wrapped(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(3, 3)

    @logged
    def forward(self, x):
        return self.lin(x)


def test_explain_miss_module_behind_a_wrapper_and_its_label():
    mod = dynamo.optimize(CompileCounter())(Wrapped())
    mod(torch.randn(2, 3))
    (rec,) = records.all_records()
    assert rec.name == "wrapper" and rec.context == "Wrapped.forward"
    miss = dynamo.explain_miss(mod, torch.randn(5, 3))
    assert [(v.guard.kind, v.property, v.expected, v.actual) for v in miss.entries] == \
        [(G.TENSOR_MATCH, "size()[0]", 2, 5)]
    assert dynamo.explain_miss(mod, torch.randn(2, 3)).hit == "[0/0]"


def test_explain_miss_bad_input():
    with pytest.raises(TypeError, match="explain_miss expects"):
        dynamo.explain_miss(42)
    with pytest.raises(TypeError, match="do not bind"):
        dynamo.explain_miss(scaled, 1, 2, 3)
    assert "no cache entries" in str(dynamo.explain_miss(scaled, torch.randn(2), 1))


# ---- the recompile storm ------------------------------------------------------

def storm_warnings(fn, calls):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for args in calls:
            fn(*args)
    return [str(w.message) for w in caught if "keeps changing" in str(w.message)]


def test_storm_of_an_int_warns_once_with_the_line_and_the_fix(monkeypatch):
    monkeypatch.setattr(dynamo.config, "specialize_int", True)   # ints constant: one entry per value
    opt = dynamo.optimize(CompileCounter())(scaled)
    texts = storm_warnings(opt, [(torch.randn(6), n) for n in range(1, 7)])
    assert len(texts) == 1, texts
    (text,) = texts
    assert "recompiled 3 times because L['scale'] keeps changing (compiled for 1, 2, 3; " \
           "this call 4)" in text
    assert f"test_introspection.py:{line_of(scaled, 'y = y * scale')}: y = y * scale" in text
    assert "torch.tensor(scale)" in text


def test_storm_of_a_size_names_mark_dynamic(monkeypatch):
    monkeypatch.setattr(dynamo.config, "automatic_dynamic_shapes", False)
    opt = dynamo.optimize(CompileCounter())(scaled)
    texts = storm_warnings(opt, [(torch.randn(n), 2) for n in range(5, 10)])
    assert len(texts) == 1, texts
    assert "L['x'].size()[0] keeps changing" in texts[0]
    assert "dynamo.mark_dynamic(x, 0)" in texts[0]


def test_two_changes_are_no_storm():
    opt = dynamo.optimize(CompileCounter())(scaled)
    assert storm_warnings(opt, [(torch.randn(6), n) for n in (1, 2, 3)]) == []
