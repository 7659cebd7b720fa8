"""The torch.compile front door (issue 25): the backend guard, torch's
directives read from functions, stances, dynamo.compile's arguments, and
logs switched on from the environment.  Each test counts compiles, graphs,
hits or guards, not only results."""
import torch

import dynamo
from dynamo import _C, guards
from dynamo.testing import same


def counting_backend(name, calls, runs=None):
    """A backend that records its compiles in `calls` and, when `runs` is
    given, each run of a compiled graph in runs[name]."""
    def backend(gm, example_inputs):
        calls.append(name)
        if runs is None:
            return gm.forward

        def run(*args):
            runs[name] = runs.get(name, 0) + 1
            return gm.forward(*args)
        return run
    backend.__name__ = name
    return backend


# ---------------------------------------------------------------- A. the backend guard

def test_issue_repro_each_backend_compiles_its_own_entry():
    calls = []
    b1, b2 = counting_backend("b1", calls), counting_backend("b2", calls)

    def f(x):
        return x.sin() + 1
    x = torch.randn(4)
    dynamo.optimize(b1)(f)(x)
    dynamo.optimize(b2)(f)(x)
    assert calls == ["b1", "b2"]
    assert len(_C.cache_entries(f.__code__)) == 2


def test_two_wrappers_keep_their_hits_without_thrash():
    calls, runs = [], {}
    b1, b2 = counting_backend("b1", calls, runs), counting_backend("b2", calls, runs)

    def f(x):
        return x.cos() * 2
    o1, o2 = dynamo.optimize(b1)(f), dynamo.optimize(b2)(f)
    x = torch.randn(5)
    for _ in range(4):
        assert same(o1(x), f(x))
        assert same(o2(x), f(x))
    assert calls == ["b1", "b2"]                # one compile each, then hits only
    assert runs == {"b1": 4, "b2": 4}           # each ran its own graph every call
    stats = _C.tree_stats(f.__code__)
    assert stats["entries"] == 2 and stats["hits"] == 6     # 8 calls: 2 compiles, 6 hits
    # the same backend through another wrapper shares the entry
    o3 = dynamo.optimize(b1)(f)
    o3(x)
    assert calls == ["b1", "b2"] and runs["b1"] == 5


def test_backend_guard_is_listed_and_names_the_backends():
    calls = []
    b1, b2 = counting_backend("b1", calls), counting_backend("b2", calls)

    def f(x):
        return x + 1
    x = torch.randn(2)
    dynamo.optimize(b1)(f)(x)
    dynamo.optimize(b2)(f)(x)
    entries = _C.cache_entries(f.__code__)
    first, second = entries[1], entries[0]
    lines = [g.describe() for g in first.guards]
    assert any("BACKEND_MATCH 'b1'" in line for line in lines), lines
    assert "BACKEND_MATCH" in second.recompile_reason and "'b1'" in second.recompile_reason \
        and "'b2'" in second.recompile_reason, second.recompile_reason
    # the C tree tests it on every call: one BACKEND test per entry
    info = _C.tree_info(f.__code__)
    tests = []

    def walk(node):
        tests.extend(node["tests"])
        for _, leaf_tests in [(p, t) for p, _i, t in (node["leaf"] or [])]:
            tests.extend(leaf_tests)
        for _, child in node["branches"]:
            walk(child)
        if node["default"] is not None:
            walk(node["default"])
    walk(info["root"])
    assert sorted(t[2] for t in tests if t[1] == "backend") == sorted(
        g.expected[0] for e in entries for g in e.guards if g.kind == guards.BACKEND_MATCH)


def test_nn_module_wrapped_twice():
    calls = []
    b1, b2 = counting_backend("b1", calls), counting_backend("b2", calls)
    m = torch.nn.Linear(3, 3)
    m1, m2 = dynamo.optimize(b1)(m), dynamo.optimize(b2)(m)
    x = torch.randn(2, 3)
    for _ in range(3):
        assert same(m1(x), m(x)) and same(m2(x), m(x))
    assert calls == ["b1", "b2"]


def test_nested_optimize_with_different_backends():
    """The outer wrapper traces through the inner one (its backend wins
    inside the outer graph); the inner wrapper called on its own compiles
    for its own backend, and neither serves the other's entries."""
    calls = []
    outer_b, inner_b = counting_backend("outer", calls), counting_backend("inner", calls)

    def g(x):
        return x * 3
    inner = dynamo.optimize(inner_b)(g)

    def f(x):
        return inner(x) + 1
    outer = dynamo.optimize(outer_b)(f)
    x = torch.randn(3)
    assert same(outer(x), x * 3 + 1)
    assert calls == ["outer"]
    assert same(inner(x), x * 3)
    assert calls == ["outer", "inner"]
    for _ in range(2):
        outer(x)
        inner(x)
    assert calls == ["outer", "inner"]


def test_run_mode_serves_any_backend():
    """dynamo.run() has no backend: like torch's run-only mode it takes
    the entries of whichever backend compiled them, and compiles nothing."""
    calls = []

    def f(x):
        return x - 1
    x = torch.randn(3)
    dynamo.optimize(counting_backend("b1", calls))(f)(x)
    before = _C.tree_stats(f.__code__)["hits"]
    assert same(dynamo.run(f)(x), x - 1)
    assert _C.tree_stats(f.__code__)["hits"] == before + 1 and calls == ["b1"]

