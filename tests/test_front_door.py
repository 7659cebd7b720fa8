"""The torch.compile front door (issue 25): the backend guard, torch's
directives read from functions, stances, dynamo.compile's arguments, and
logs switched on from the environment.  Each test counts compiles, graphs,
hits or guards, not only results."""
import re

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


def _compiled_for_two_backends_of_one_name():
    """f compiled by two wrappers whose backends are two objects named
    "same": the second call misses the first entry's BACKEND_MATCH."""
    calls = []
    b1, b2 = counting_backend("same", calls), counting_backend("same", calls)

    def f(x):
        return x - 1
    x = torch.randn(2)
    dynamo.optimize(b1)(f)(x)
    dynamo.optimize(b2)(f)(x)
    assert calls == ["same", "same"]
    return f


def test_two_backend_objects_of_one_name_read_apart_in_the_miss():
    """A new CompileCounter() per optimize() is a new backend: the entry of
    the first does not serve the second, and the recompile reason must not
    read "expected 'b', actual 'b'"."""
    f = _compiled_for_two_backends_of_one_name()
    reason = _C.cache_entries(f.__code__)[0].recompile_reason
    assert re.search(r"expected 'same' \(backend #(\d+)\), actual 'same' \(backend #(?!\1\))\d+\)",
                     reason), reason


def test_two_backend_objects_of_one_name_read_apart_in_dynamo_top(tmp_path):
    """The same for the last failure dynamo-top shows (written in C)."""
    import os
    import subprocess
    bindir = _tools_built()
    _compiled_for_two_backends_of_one_name()
    snap = str(tmp_path / "same.dyn")
    dynamo.save_snapshot(snap)
    top = subprocess.run([os.path.join(bindir, "dynamo-top"), "--file", snap, "--once"],
                         capture_output=True, text=True)
    assert top.returncode == 0, top.stderr
    assert re.search(r"last failure: backend: expected 'same' \(backend #\d+\), "
                     r"actual 'same' \(backend #\d+\)", top.stdout), top.stdout


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


# ---------------------------------------------------------------- B. directives

def _compiled_codes():
    """Names of the codes that compiled graphs (records with graphs)."""
    return [r.code.co_name for r in dynamo.records.all_records() if r.graphs]


def test_torch_compiler_disable_is_not_compiled():
    calls = []

    @torch.compiler.disable
    def must_not_compile(t):
        return t + 1

    def f(t):
        return must_not_compile(t * 2) * 3
    t = torch.randn(3)
    for _ in range(2):
        assert same(dynamo.optimize(counting_backend("b", calls))(f)(t), (t * 2 + 1) * 3)
    assert "must_not_compile" not in _compiled_codes()
    assert set(_compiled_codes()) <= {"f"} or all("resume" in n or n == "f" for n in _compiled_codes())


def test_torch_compiler_disable_recursive_covers_callees():
    def helper(t):
        return t.cos()

    @torch.compiler.disable
    def outer(t):
        return helper(t) + 1
    opt = dynamo.optimize("eager")(lambda t: outer(t) * 2)
    t = torch.randn(3)
    assert same(opt(t), (t.cos() + 1) * 2)
    names = [r.code.co_name for r in dynamo.records.all_records()]
    assert "helper" not in names and "outer" not in names, names


def test_torch_compiler_disable_non_recursive_compiles_callees():
    def helper(t):
        return t.cos()

    @torch.compiler.disable(recursive=False)
    def outer(t):
        return helper(t) + 1
    opt = dynamo.optimize("eager")(lambda t: outer(t) * 2)
    t = torch.randn(3)
    assert same(opt(t), (t.cos() + 1) * 2)
    compiled = _compiled_codes()
    assert "outer" not in compiled and "helper" in compiled, compiled


def test_torch_disable_on_a_method():
    class M(torch.nn.Module):
        @torch.compiler.disable
        def side(self, x):
            return x.sum().item()

        def forward(self, x):
            return x * self.side(x)
    m = M()
    x = torch.randn(3)
    assert same(dynamo.optimize("eager")(m)(x), m(x))
    assert "side" not in [r.code.co_name for r in dynamo.records.all_records()]


def test_torch_compiler_allow_in_graph_is_one_node():
    def my_op(x):
        return x.relu() + 1
    torch.compiler.allow_in_graph(my_op)
    graphs = []

    def backend(gm, ex):
        graphs.append(gm)
        return gm.forward

    def f(x):
        return my_op(x * 2) - 1
    x = torch.randn(4)
    assert same(dynamo.optimize(backend)(f)(x), f(x))
    assert len(graphs) == 1
    targets = [n.target for n in graphs[0].graph.nodes if n.op == "call_function"]
    assert my_op in targets, targets


def test_torch_compiler_assume_constant_result_folds():
    seen = []

    @torch.compiler.assume_constant_result
    def scale():
        seen.append(1)
        return 3
    graphs = []

    def backend(gm, ex):
        graphs.append(gm)
        return gm.forward

    def f(x):
        return x * scale()
    x = torch.randn(2)
    opt = dynamo.optimize(backend)(f)
    assert same(opt(x), x * 3) and same(opt(x), x * 3)
    assert len(graphs) == 1 and len(seen) == 1     # run once, at trace time


def test_is_compiling_true_only_while_tracing():
    def f(x):
        if torch.compiler.is_compiling() and torch.compiler.is_dynamo_compiling():
            return x + 1
        return x - 1
    x = torch.zeros(2)
    assert same(f(x), x - 1)
    assert same(dynamo.optimize("eager")(f)(x), x + 1)
    assert not torch.compiler.is_compiling() and not torch.compiler.is_dynamo_compiling()


# ---------------------------------------------------------------- B. stances

def test_stance_force_eager_runs_nothing_compiled():
    calls, runs = [], {}
    opt = dynamo.optimize(counting_backend("b", calls, runs))(lambda x: x + 2)
    x = torch.randn(2)
    opt(x)
    with dynamo.set_stance("force_eager"):
        for _ in range(3):
            assert same(opt(x), x + 2)
    assert calls == ["b"] and runs == {"b": 1}
    opt(x)
    assert runs == {"b": 2}


def test_stance_eager_on_recompile_and_fail_on_recompile():
    import pytest
    calls = []
    opt = dynamo.optimize(counting_backend("b", calls))(lambda x: x * 2)
    opt(torch.randn(2))
    dynamo.set_stance("eager_on_recompile")
    try:
        assert same(opt(torch.ones(5)), torch.ones(5) * 2)
        assert calls == ["b"]
    finally:
        dynamo.set_stance("default")

    @dynamo.set_stance("fail_on_recompile")
    def call(x):
        return opt(x)
    with pytest.raises(RuntimeError, match="fail_on_recompile.*size"):
        call(torch.ones(7))
    assert dynamo.stance.current() == "default"
    opt(torch.ones(2))                          # hits are fine under any stance
    with pytest.raises(ValueError, match="unknown stance"):
        dynamo.set_stance("sometimes")


def test_config_aliases_of_torch_names():
    dynamo.config.recompile_limit = 3
    assert dynamo.config.cache_size_limit == 3 and dynamo.config.recompile_limit == 3
    dynamo.config.accumulated_cache_size_limit = 2
    assert dynamo.config.accumulated_recompile_limit == 2
    dynamo.config.capture_scalar_outputs = True
    calls = []
    opt = dynamo.optimize(counting_backend("b", calls))(lambda x: x + 1)
    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for n in range(2, 7):
            opt(torch.randn(n))
    assert len(calls) == 2                      # the lower limit applies


def test_error_on_recompile_and_fail_on_limit():
    import pytest
    opt = dynamo.optimize("eager")(lambda x: x + 1)
    opt(torch.randn(2))
    dynamo.config.error_on_recompile = True
    with pytest.raises(RuntimeError, match="error_on_recompile"):
        opt(torch.randn(3))
    dynamo.config.error_on_recompile = False
    dynamo.config.recompile_limit = 1
    dynamo.config.fail_on_recompile_limit_hit = True
    with pytest.raises(RuntimeError, match="fail_on_recompile_limit_hit"):
        opt(torch.randn(4))


# ---------------------------------------------------------------- C. dynamo.compile

def test_compile_decorator_with_and_without_arguments():
    calls = []
    b = counting_backend("b", calls)

    @dynamo.compile(backend=b)
    def f(x):
        return x * 2

    @dynamo.compile
    def g(x):
        return x + 0
    x = torch.randn(3)
    assert same(f(x), x * 2) and same(f(x), x * 2)
    assert calls == ["b"]
    assert isinstance(g, _C.OptimizedCallable) and g.__name__ == "g"


def test_compile_fullgraph_raises_at_a_break():
    import pytest

    def f(x):
        y = x + 1
        print("break")
        return y
    with pytest.raises(dynamo.exc.Unsupported):
        dynamo.compile(f, fullgraph=True, backend="eager")(torch.randn(2))
    assert same(dynamo.compile(f, backend="eager")(torch.ones(2)), torch.ones(2) + 1)


def test_compile_disable_returns_the_model():
    m = torch.nn.Linear(2, 2)
    assert dynamo.compile(m, disable=True) is m
    f = lambda x: x  # noqa: E731
    assert dynamo.compile(f, disable=True) is f


def test_compile_dynamic_sets_the_wrappers_config_only():
    seen = []

    def backend(gm, ex):
        seen.append(dynamo.config.dynamic_shapes)
        return gm.forward
    x = torch.randn(3)
    dynamo.compile(lambda x: x + 1, backend=backend, dynamic=True)(x)
    dynamo.compile(lambda x: x + 2, backend=backend, dynamic=False)(x)
    dynamo.compile(lambda x: x + 3, backend=backend)(x)
    assert seen == [True, False, None] and dynamo.config.dynamic_shapes is None
    assert dynamo.config.dynamic_overrides(None) == {}
    assert dynamo.config.dynamic_overrides(True)["dynamic_shapes"] is True


def test_compile_mode_and_options_validation():
    import pytest
    with pytest.raises(RuntimeError, match="Unrecognized mode"):
        dynamo.compile(lambda x: x, mode="fastest")
    with pytest.raises(RuntimeError, match="Either mode or options"):
        dynamo.compile(lambda x: x, mode="max-autotune", options={"max_autotune": True})
    with pytest.raises(TypeError, match="dynamic must be"):
        dynamo.compile(lambda x: x, dynamic="yes")


def test_compile_mode_options_reach_inductor_config_for_that_compile_only():
    from dynamo.backends.compile_options import with_options
    import torch._inductor.config as iconfig
    seen = []

    def fake_inductor(gm, ex):
        seen.append((iconfig.max_autotune, iconfig.triton.cudagraphs,
                     iconfig.coordinate_descent_tuning))
        return gm.forward
    gm = torch.fx.symbolic_trace(lambda x: x + 1)
    for mode, want in (("max-autotune", (True, True, True)),
                       ("max-autotune-no-cudagraphs", (True, False, True)),
                       ("reduce-overhead", (False, True, False))):
        with_options("inductor", fake_inductor, mode, None)(gm, [torch.randn(2)])
        assert seen[-1] == want, mode
        assert not iconfig.max_autotune and not iconfig.triton.cudagraphs
    with_options("inductor", fake_inductor, None, {"max_autotune": True})(gm, [torch.randn(2)])
    assert seen[-1][0] is True
    import pytest
    with pytest.raises(ValueError, match="no_such_option"):
        with_options("inductor", fake_inductor, None, {"no_such_option": 1})(gm, [])
    got = []

    def custom(gm, ex, **kw):
        got.append(kw)
        return gm.forward
    with_options("custom", custom, "max-autotune", None)(gm, [])
    with_options("custom", custom, None, {"a": 1})(gm, [])
    assert got == [{"mode": "max-autotune"}, {"options": {"a": 1}}]


def test_compile_modes_are_separate_backends():
    """Two wrappers of one function with different modes each compile
    (BACKEND_MATCH keys on backend, mode and options)."""
    calls = []

    def custom(gm, ex, **kw):
        calls.append(kw.get("mode"))
        return gm.forward

    def f(x):
        return x * 5
    x = torch.randn(2)
    a = dynamo.compile(f, backend=custom, mode="max-autotune")
    b = dynamo.compile(f, backend=custom)
    c = dynamo.compile(f, backend=custom, mode="max-autotune")
    a(x), b(x), c(x), a(x), b(x)
    assert calls == ["max-autotune", None]


def test_compile_reduce_overhead_on_cpu_runs():
    """Inductor with CUDA graphs on a CPU graph: compiles and runs (the
    CUDA graphs are skipped), with the result of eager."""
    def f(x):
        return torch.sin(x) * 2 + 1
    x = torch.randn(8)
    opt = dynamo.compile(f, mode="reduce-overhead")
    assert same(opt(x), f(x)) and same(opt(x), f(x))
    assert len(_C.cache_entries(f.__code__)) == 1


def test_compile_module_behaves_as_torch_optimized_module():
    m = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.ReLU())
    opt = dynamo.compile(m, backend="eager")
    assert isinstance(opt, dynamo.OptimizedModule) and opt._orig_mod is m
    assert list(opt.state_dict()) == ["_orig_mod." + k for k in m.state_dict()]
    assert len(opt) == 2 and bool(opt)
    opt.eval()
    assert not m.training and not opt.training
    opt.train()
    assert m.training
    opt.extra_attr = 5                      # writes go to the original, as torch's
    assert m.extra_attr == 5 and opt.extra_attr == 5
    del opt.extra_attr
    assert not hasattr(m, "extra_attr")
    x = torch.randn(2, 3)
    assert same(opt(x), m(x))
    assert "_orig_mod" in dir(opt) and "0" in dir(opt) or hasattr(opt, "forward")


def test_model_passed_as_backend_is_a_type_error_at_once():
    import pytest
    m = torch.nn.Linear(2, 2)
    with pytest.raises(TypeError, match="backend"):
        dynamo.optimize(m)
    with pytest.raises(TypeError, match="backend"):
        dynamo.compile(lambda x: x, backend=m)


# ---------------------------------------------------------------- D. logs

LOG_SCRIPT = r'''
import torch
import dynamo


def toy(a, b):
    x = a / (torch.abs(a) + 1)
    if b.sum() < 0:
        b = b * -1
    return x * b


f = dynamo.optimize("eager")(toy)
f(torch.ones(4), torch.ones(4))
f(torch.ones(6), torch.ones(6))
print("DONE")
'''


def test_dynamo_logs_from_the_environment_print_breaks_and_recompiles(tmp_path):
    """DYNAMO_LOGS=recompiles,graph_breaks on an unchanged script: the break
    with its reason in user words, file:line, source line and hint; the
    recompile with the entry, the failing guard, expected and actual."""
    import os
    import subprocess
    import sys
    script = tmp_path / "script.py"
    script.write_text(LOG_SCRIPT)
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    env = dict(os.environ, DYNAMO_LOGS="recompiles,graph_breaks",
               PYTHONPATH=root + os.pathsep + os.environ.get("PYTHONPATH", ""))
    out = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, env=env,
                         timeout=300)
    assert out.returncode == 0 and "DONE" in out.stdout, out.stderr
    err = out.stderr
    line = LOG_SCRIPT.splitlines().index("    if b.sum() < 0:") + 1
    assert f"Graph break in toy at {script}:{line}" in err, err
    assert "data-dependent control flow" in err and "if b.sum() < 0:" in err
    assert "Hint: compute both sides and pick one with torch.where" in err
    assert "Recompiling toy" in err and "entry 2 of at most 8" in err
    assert "L['a'].size()[0]: expected 4, actual 6 (TENSOR_MATCH of entry [0/0])" in err
    assert err.count("[dynamo.graph_breaks]") == 2 and err.count("[dynamo.recompiles]") == 2
    # without the variable: nothing of it
    env.pop("DYNAMO_LOGS")
    quiet = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, env=env,
                           timeout=300)
    assert "Graph break" not in quiet.stderr and "Recompiling" not in quiet.stderr
    # config.log_level alone prints (no logging setup in the script)
    level = subprocess.run([sys.executable, "-c", "import torch, dynamo\n"
                            "dynamo.config.log_level = 'INFO'\n"
                            "dynamo.optimize('eager')(lambda x: x + 1)(torch.ones(2))"],
                           capture_output=True, text=True, env=env, timeout=300)
    assert "compiled [0/0] <lambda>" in level.stderr, level.stderr


def test_set_logs_in_process(capsys):
    import logging
    import pytest
    try:
        dynamo.set_logs(guards=True, graph_code=True, graph_breaks=True)

        def f(x):
            y = x.sum().item()
            return x * y
        dynamo.optimize("eager")(f)(torch.ones(2))
        err = capsys.readouterr().err
        assert "[dynamo.guards] GUARDS of f" in err and "TENSOR_MATCH" in err
        assert "BACKEND_MATCH 'eager'" in err
        assert "capture_scalar_outputs" in err          # the .item() hint
        with pytest.raises(ValueError, match="unknown log artifact"):
            dynamo.set_logs(no_such=True)
        from dynamo import logs
        assert logs.parse("+dynamo,recompiles") == {"dynamo": logging.DEBUG, "recompiles": True}
        assert logs.parse("dynamic,perf_hints") == {"dynamic": True, "perf_hints": True}
    finally:
        dynamo.set_logs(guards=False, graph_code=False, graph_breaks=False)
    dynamo.optimize("eager")(lambda x: x + 1)(torch.ones(2))
    assert "[dynamo." not in capsys.readouterr().err



# ---------------------------------------------------------------- directives without torch's dynamo

def test_allow_in_graph_is_recorded_by_the_public_function_not_read_from_torch():
    """torch.compiler.allow_in_graph is wrapped at import of dynamo: it calls
    torch's function and records into dynamo's own table; no module of
    dynamo reads torch's dynamo tables."""
    import pathlib
    from dynamo import decorators
    wrapper = torch.compiler.allow_in_graph
    assert getattr(wrapper, decorators._RECORDS_ATTR, False) and wrapper.__wrapped__ is not wrapper
    decorators.install_torch_directives()              # idempotent: not wrapped twice
    assert torch.compiler.allow_in_graph is wrapper

    def op_a(x):
        return x + 1

    def op_b(x):
        return x - 1
    assert not decorators.is_allowed(op_a)
    assert torch.compiler.allow_in_graph([op_a, op_b]) is not None      # a list, as torch takes
    assert decorators.is_allowed(op_a) and decorators.is_allowed(op_b)
    assert not decorators.is_allowed(torch.sin)          # torch's own: left to the torch rules
    root = pathlib.Path(decorators.__file__).parent
    for path in root.rglob("*.py"):
        text = path.read_text()
        assert "trace_rules" not in text and "_allowed_callable_ids" not in text, path


ALLOW_SCRIPT = r'''
import torch
def early(x):
    return x.relu() + 1
torch.compiler.allow_in_graph(early)          # before import dynamo: not seen (the limit)
import dynamo
def late(x):
    return x.relu() - 1
torch.compiler.allow_in_graph(late)
graphs = []
def backend(gm, ex):
    graphs.append(gm)
    return gm.forward
def f(x):
    return early(x) * late(x)
dynamo.optimize(backend)(f)(torch.randn(4))
targets = [n.target for n in graphs[0].graph.nodes if n.op == "call_function"]
print("early", early in targets, "late", late in targets, "graphs", len(graphs))
'''


def test_allow_in_graph_before_import_is_the_documented_limit(tmp_path):
    """A call after `import dynamo` makes one node; one made before is not
    seen (inlined instead: the limit docs/FROM_TORCH_COMPILE.md states)."""
    import os
    import subprocess
    import sys
    script = tmp_path / "allow.py"
    script.write_text(ALLOW_SCRIPT)
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    env = dict(os.environ, PYTHONPATH=root + os.pathsep + os.environ.get("PYTHONPATH", ""))
    env.pop("DYNAMO_LOGS", None)
    out = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, env=env,
                         timeout=300)
    assert out.returncode == 0, out.stderr
    assert "early False late True graphs 1" in out.stdout, out.stdout


# ---------------------------------------------------------------- the backend's name in the tools

def _tools_built():
    import os
    import subprocess
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    out = subprocess.run(["make", "-C", root, "build/bin/dynamo-top", "build/bin/dynamo-dot"],
                         capture_output=True, text=True)
    assert out.returncode == 0, out.stdout + out.stderr
    return os.path.join(root, "build", "bin")


def test_published_tree_and_last_failure_name_the_backend(tmp_path):
    """The guard tree dynamo-dot --guards draws and the last failure both
    tools show name the compile backend ('b1'), not its BACKEND_MATCH key."""
    import os
    import subprocess
    bindir = _tools_built()
    calls = []
    b1 = counting_backend("b1", calls)

    def f(x):
        return x * 3
    x = torch.randn(2)
    dynamo.optimize(b1)(f)(x)
    dynamo.optimize("eager")(f)(x)
    assert calls == ["b1"]
    snap = str(tmp_path / "b.dyn")
    dynamo.save_snapshot(snap)
    dot = subprocess.run([os.path.join(bindir, "dynamo-dot"), "--file", snap, "--guards", "f"],
                         capture_output=True, text=True)
    assert dot.returncode == 0, dot.stderr
    assert "compile backend == 'b1'" in dot.stdout and "compile backend == 'eager'" in dot.stdout
    assert "expected <B>&#39;b1&#39;</B>, actual" in dot.stdout, dot.stdout
    top = subprocess.run([os.path.join(bindir, "dynamo-top"), "--file", snap, "--once"],
                         capture_output=True, text=True)
    assert top.returncode == 0, top.stderr
    assert "last failure: backend: expected 'b1', actual 'eager'" in top.stdout, top.stdout


# ---------------------------------------------------------------- break reasons in user words

def test_break_vocabulary_words_each_common_reason():
    """break_hints.describe on the tracer's own texts: every row is reached,
    the hints name dynamo's API, an unknown reason is shown as it is."""
    from dynamo import break_hints
    texts = {
        "generic_jump TensorVariable()": "data_dependent_branch",
        "Tensor.item() needs the tensor's data": "tensor_value_read",
        "Tensor.nonzero() needs the tensor's data": "dynamic_output_shape",
        "call to builtins.print (not traceable; runs eagerly)": "print",
        "call to _warnings.warn (not traceable; runs eagerly)": "warn_or_log",
        "call to m.f (marked torch.compiler.disable; runs eagerly)": "marked_eager",
        "call to numpy.asarray (not traceable; runs eagerly)": "untraceable_call",
        "opcode SETUP_WITH is not supported": "unsupported_construct",
    }
    for text, kind in texts.items():
        got, meaning, hint = break_hints.describe(text)
        assert got == kind and meaning != text and ("dynamo." in hint or "torch." in hint), \
            (text, got, hint)
    assert {k.kind for k in break_hints.BREAK_KINDS} == set(texts.values())
    assert break_hints.describe("something new") == ("other", "something new", break_hints.OTHER.hint)
    assert all("torch." + "_dynamo" not in k.hint for k in break_hints.BREAK_KINDS)


def test_break_reasons_and_hints_are_the_same_in_explain_top_and_dot(tmp_path):
    """One function with four kinds of break: explain(), dynamo-top's Breaks
    tab and dynamo-dot (--breaks label and tooltip, --list) show each in
    the same user words with the same hint."""
    import os
    import subprocess
    from dynamo import break_hints
    bindir = _tools_built()

    @torch.compiler.disable
    def eager_helper(t):
        return t + 1

    def f(x):
        y = x.sin() + 1
        if y.sum() > 0:
            y = y * 2
        print("in the model")
        return eager_helper(y) * x.sum().item()
    x = torch.ones(4)
    dynamo.optimize("eager")(f)(x)
    snap = str(tmp_path / "brk.dyn")
    dynamo.save_snapshot(snap)
    ex = dynamo.explain(f)(x)
    kinds = [br.kind for br in ex.break_reasons]
    assert kinds == ["data_dependent_branch", "print", "marked_eager", "tensor_value_read"], kinds
    assert ex.graph_break_count == 4
    rows = {k.kind: k for k in break_hints.BREAK_KINDS}
    text = str(ex)
    for br in ex.break_reasons:
        assert br.meaning == rows[br.kind].meaning and br.hint == rows[br.kind].hint
        assert f"Reason: {br.meaning} ({br.reason})" in text and f"Hint: {br.hint}" in text
    assert "marked torch.compiler.disable" in ex.break_reasons[2].reason
    top = subprocess.run([os.path.join(bindir, "dynamo-top"), "--file", snap, "--once"],
                         capture_output=True, text=True)
    assert top.returncode == 0, top.stderr
    dot_list = subprocess.run([os.path.join(bindir, "dynamo-dot"), "--file", snap, "--list"],
                              capture_output=True, text=True)
    assert dot_list.returncode == 0, dot_list.stderr
    dots = ""
    for frame in range(4):
        out = subprocess.run([os.path.join(bindir, "dynamo-dot"), "--file", snap, "--breaks",
                              str(frame)], capture_output=True, text=True)
        assert out.returncode == 0, out.stderr
        dots += out.stdout
    dots = dots.replace("\\\n", "")           # dot's continuation lines
    for kind in kinds:
        row = rows[kind]
        assert row.meaning in top.stdout and f"hint: {row.hint}" in top.stdout, (kind, top.stdout)
        assert f"break {row.meaning} (" in dot_list.stdout, (kind, dot_list.stdout)
        assert f"graph break: {row.meaning[:40]}" in dots, kind
        assert f"hint: {row.hint}" in dots.replace("\\n", "\n"), kind      # the tooltip, whole


# ---------------------------------------------------------------- the dynamic and perf_hints channels

def test_dynamic_and_perf_hints_channels_print(capsys, monkeypatch):
    """dynamic: the dimension automatic dynamic makes symbolic, its symbol,
    the shape guards; perf_hints: a break inside a loop, a recompile storm,
    the eager fallback at the cache limit.  Off: nothing of them."""
    monkeypatch.setattr(dynamo.config, "specialize_int", True)   # ints constant: one entry per value
    monkeypatch.setattr(dynamo.config, "skip_frame_on_loop_break", False)   # the loop is cut
    import warnings

    def looped(x, n):
        for i in range(2):
            x = x + 1
            print("step", i)
        return x * n

    def sized(a, b):
        return a.sin() + b.cos()
    limit = dynamo.config.cache_size_limit
    try:
        dynamo.set_logs(dynamic=True, perf_hints=True)
        dynamo.config.cache_size_limit = 3
        opt_sized = dynamo.optimize("eager")(sized)
        for n in (3, 5, 7):
            opt_sized(torch.ones(n), torch.ones(n))
        opt_looped = dynamo.optimize("eager")(looped)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            for k in range(2, 7):
                opt_looped(torch.ones(2), k)          # a Python int that changes: recompiles
        err = capsys.readouterr().err
        assert "[dynamo.dynamic] automatic dynamic: L['a'].size()[0] of sized" in err, err
        assert "(3 -> 5)" in err
        assert "[dynamo.dynamic] create_symbol s" in err and "for L['b'].size()[0] in sized" in err
        assert "[dynamo.dynamic] shape guard of sized" in err and "SHAPE_GUARD" in err
        assert "[dynamo.perf_hints] graph break inside a loop of looped" in err, err
        assert "Hint: remove it, or print after" in err
        assert "[dynamo.perf_hints] recompile storm: looped" in err and "has compiled 3 entries" in err
        assert "[dynamo.perf_hints] eager fallback at the cache limit" in err
        assert err.count("recompile storm: looped") == 1
    finally:
        dynamo.config.cache_size_limit = limit
        dynamo.set_logs(dynamic=False, perf_hints=False)
    dynamo.reset()
    dynamo.optimize("eager")(sized)(torch.ones(3), torch.ones(3))
    dynamo.optimize("eager")(sized)(torch.ones(5), torch.ones(5))
    assert "[dynamo." not in capsys.readouterr().err
