"""Public API surface and bad input: clear errors, no crash, no lost result."""
import warnings

import pytest
import torch

import dynamo
from dynamo.testing import CompileCounter, rand_strided, same


def add(a, b):
    return a + b


def test_optimize_non_callable():
    with pytest.raises(TypeError, match="expects a function"):
        dynamo.optimize("eager")(42)


def test_unknown_backend_lists_available():
    with pytest.raises(ValueError) as info:
        dynamo.optimize("no-such-backend")
    for name in ("eager", "aot_eager", "inductor"):
        assert name in str(info.value)


def test_list_backends():
    assert {"eager", "aot_eager", "inductor"} <= set(dynamo.list_backends())


def test_config_unknown_name_raises():
    with pytest.raises(AttributeError, match="no setting"):
        dynamo.config.no_such_setting
    with pytest.raises(AttributeError, match="no setting"):
        dynamo.config.no_such_setting = 1
    assert dynamo.config.cache_size_limit == 8


def test_backend_raises_warns_and_runs_eagerly():
    def broken(gm, example_inputs):
        raise RuntimeError("boom")
    opt = dynamo.optimize(broken)(add)
    a = torch.randn(3)
    with pytest.warns(RuntimeWarning, match="broken"):
        assert same(opt(a, a), a + a)


def test_backend_raises_with_raise_on_backend_error():
    def broken(gm, example_inputs):
        raise RuntimeError("boom")
    dynamo.config.raise_on_backend_error = True
    opt = dynamo.optimize(broken)(add)
    with pytest.raises(dynamo.exc.BackendCompilerFailed, match="boom"):
        opt(torch.randn(3), torch.randn(3))


def test_disable():
    cnt = CompileCounter()

    @dynamo.disable
    def eager_only(x):
        return x * 2

    opt = dynamo.optimize(cnt)(eager_only)
    assert same(opt(torch.ones(2)), torch.ones(2) * 2)
    assert cnt.frame_count == 0
    with dynamo.disable():
        assert same(dynamo.optimize(cnt)(add)(torch.ones(1), torch.ones(1)), torch.ones(1) * 2)


def test_method_decoration():
    cnt = CompileCounter()

    class Thing:
        def __init__(self):
            self.scale = 3

        @dynamo.optimize(cnt)
        def f(self, x):
            return x * self.scale

    t = Thing()
    assert same(t.f(torch.ones(2)), torch.ones(2) * 3)
    assert cnt.frame_count == 1


def test_cache_size_limit_warns_with_failing_guard():
    dynamo.config.cache_size_limit = 2
    dynamo.config.automatic_dynamic_shapes = False     # one entry per size
    cnt = CompileCounter()
    opt = dynamo.optimize(cnt)(add)
    for n in (1, 2):
        opt(torch.randn(n), torch.randn(n))
    with pytest.warns(RuntimeWarning, match="cache_size_limit") as rec:
        r = opt(torch.randn(3), torch.randn(3))
    assert r.shape == (3,)
    assert cnt.frame_count == 2
    msg = str(rec[0].message)
    assert "expected" in msg and "actual" in msg


def test_testing_helpers():
    t = rand_strided((2, 3), (1, 2))
    assert t.shape == (2, 3) and t.stride() == (1, 2)
    assert same([torch.ones(2), 3], [torch.ones(2), 3])
    assert not same(torch.ones(2), torch.zeros(2))


@pytest.mark.parametrize("version", [(3, 10, 13), (3, 14, 0)])
def test_import_on_other_python_fails_clearly(version):
    import subprocess
    import sys
    code = ("import sys\n"
            "class V(tuple):\n"
            "    pass\n"
            f"sys.version_info = V({version + ('final', 0)!r})\n"
            "import dynamo\n")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert r.returncode != 0
    assert "dynamo supports CPython 3.11, 3.12, 3.13 only" in r.stderr


@pytest.mark.parametrize("var,value,words", [
    ("Py_GIL_DISABLED", 1, "free-threaded"),
    ("PY_CORE_CFLAGS", "-O2 -D_Py_JIT", "experimental JIT"),
])
def test_import_on_free_threaded_or_jit_build_fails_clearly(var, value, words):
    import subprocess
    import sys
    code = ("import sysconfig\n"
            "real = sysconfig.get_config_var\n"
            f"sysconfig.get_config_var = lambda n: {value!r} if n == {var!r} else real(n)\n"
            "import dynamo\n")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert r.returncode != 0
    assert words in r.stderr and "ImportError" in r.stderr


def test_frame_that_cannot_compile_runs_eagerly_and_explain_shows_why():
    import contextlib
    ctx = contextlib.nullcontext()

    def guarded(x):
        with ctx:                          # only grad-mode `with` blocks are traced
            y = x * 2
        return y + 1

    x = torch.randn(3)
    res = dynamo.explain(guarded)(x)
    assert res.failures and "guarded" in res.failures[0]
    opt = dynamo.optimize("eager")(guarded)
    assert same(opt(x), x * 2 + 1)


def test_log_level_info_reports_compiles_and_breaks(caplog):
    import logging

    def f(x):
        y = x + 1
        print(end="")
        return y * 2

    dynamo.config.log_level = logging.INFO
    with caplog.at_level(logging.INFO, logger="dynamo"):
        assert same(dynamo.optimize("eager")(f)(torch.ones(2)), (torch.ones(2) + 1) * 2)
    text = caplog.text
    assert "compiled [0/0] f" in text
    assert "graph break in f" in text


# ---------------------------------------------------------------- config validation (issue 14.8)

@pytest.mark.parametrize("value, error", [(-1, ValueError), ("8", TypeError), (None, TypeError),
                                          (8.0, TypeError), (True, TypeError)])
def test_config_cache_size_limit_validated_at_assignment(value, error):
    with pytest.raises(error, match="cache_size_limit"):
        dynamo.config.cache_size_limit = value
    assert dynamo.config.cache_size_limit == 8          # unchanged
    cnt = CompileCounter()
    assert same(dynamo.optimize(cnt)(add)(torch.ones(2), torch.ones(2)), torch.full((2,), 2.0))
    assert cnt.frame_count == 1


def test_config_cache_size_limit_zero_compiles_nothing():
    """0 means: compile nothing new; every miss runs eagerly, without the
    IndexError it used to raise inside the call, recorded as LIMIT."""
    dynamo.config.cache_size_limit = 0
    cnt = CompileCounter()
    opt = dynamo.optimize(cnt)(add)
    with warnings.catch_warnings():
        warnings.simplefilter("error")                   # asked for: no warning
        for n in (2, 3, 2):
            assert same(opt(torch.ones(n), torch.ones(n)), torch.full((n,), 2.0))
    assert cnt.frame_count == 0
    assert [r.status for r in dynamo.records.all_records()] == ["limit"]


@pytest.mark.parametrize("name", ["debug", "verbose", "output_code", "raise_on_backend_error"])
@pytest.mark.parametrize("value", [1, "yes", None])
def test_config_bool_settings_take_only_bools(name, value):
    with pytest.raises(TypeError, match=f"config.{name} must be True or False"):
        setattr(dynamo.config, name, value)
    assert getattr(dynamo.config, name) is False
    setattr(dynamo.config, name, True)
    assert getattr(dynamo.config, name) is True


def test_config_dynamic_shapes_is_torch_compiles_dynamic():
    """None (automatic dynamic), True (every size symbolic) or False (every
    size static, TorchDynamo 1.13's meaning): anything else is refused."""
    assert dynamo.config.dynamic_shapes is None
    for bad in (1, "yes", 0.0):
        with pytest.raises(TypeError, match="config.dynamic_shapes must be None, True or False"):
            dynamo.config.dynamic_shapes = bad
    cnt = CompileCounter()
    dynamo.config.dynamic_shapes = False
    opt = dynamo.optimize(cnt)(lambda a: a * 2)
    for n in range(2, 6):
        assert same(opt(torch.ones(n)), torch.full((n,), 2.0))
    assert cnt.frame_count == 4                         # static: one entry per size
    dynamo.reset()
    dynamo.config.dynamic_shapes = None
    cnt = CompileCounter()
    opt = dynamo.optimize(cnt)(lambda a: a * 2)
    for n in range(2, 6):
        assert same(opt(torch.ones(n)), torch.full((n,), 2.0))
    assert cnt.frame_count == 2                         # static, then automatic dynamic


def test_config_log_level_validated():
    import logging
    for bad, error in ((-5, ValueError), ("LOUD", ValueError), (None, TypeError), (2.5, TypeError)):
        with pytest.raises(error, match="log_level"):
            dynamo.config.log_level = bad
    dynamo.config.log_level = "DEBUG"
    assert logging.getLogger("dynamo").level == logging.DEBUG
    dynamo.config.log_level = logging.WARNING
    assert logging.getLogger("dynamo").level == logging.WARNING


# ---------------------------------------------------------------- backend output arity (issue 14.8)

def two_outputs(x):
    return x + 1, x * 2


def test_backend_returning_too_few_outputs_names_the_backend():
    """A backend whose callable returns fewer values than the graph has
    outputs: a TypeError naming the backend, not an IndexError."""
    def short(gm, example_inputs):
        forward = gm.forward
        return lambda *args: forward(*args)[:1]

    opt = dynamo.optimize(short)(two_outputs)
    with pytest.raises(TypeError, match=r"backend 'short' returned 1 output\(s\) for a graph with 2"):
        opt(torch.ones(2))
    assert len(dynamo.records.all_records()) == 1 and dynamo.records.all_records()[0].status == "ok"


def test_backend_returning_a_non_sequence_names_the_backend():
    def scalar(gm, example_inputs):
        return lambda *args: 0

    opt = dynamo.optimize(scalar)(two_outputs)
    with pytest.raises(TypeError, match="backend 'scalar' returned int, expected a tuple of 2"):
        opt(torch.ones(2))


def test_backend_returning_another_graphs_forward_fails_at_compile():
    """A GraphModule forward whose graph has another output count is a
    backend failure at compile time (warn, run the graph eagerly)."""
    import torch.fx

    def other(gm, example_inputs):
        return torch.fx.symbolic_trace(lambda x: (x,)).forward

    opt = dynamo.optimize(other)(two_outputs)
    with pytest.warns(RuntimeWarning, match="graph with 1 output.*for a graph with 2"):
        out = opt(torch.ones(2))
    assert same(out, two_outputs(torch.ones(2)))


def test_backend_with_right_arity_unaffected():
    calls = []

    def wrapped(gm, example_inputs):
        forward = gm.forward

        def run(*args):
            calls.append(1)
            return forward(*args)
        return run

    opt = dynamo.optimize(wrapped)(two_outputs)
    for _ in range(3):
        assert same(opt(torch.ones(2)), two_outputs(torch.ones(2)))
    assert len(calls) == 3


def _other_pythons():
    """Installed interpreters of unsupported versions (PATH or pyenv)."""
    import glob
    import os
    import shutil
    found = []
    for v in ("3.10", "3.14"):
        p = shutil.which(f"python{v}")
        cands = ([p] if p else []) + sorted(glob.glob(os.path.expanduser(
            f"~/.pyenv/versions/{v}.*/bin/python{v}")))
        for c in cands:
            import subprocess
            if subprocess.run([c, "-c", ""], capture_output=True).returncode == 0:
                found.append(c)
                break
    return found


@pytest.mark.skipif(not _other_pythons(), reason="no CPython 3.10/3.14 installed")
def test_import_on_a_real_unsupported_interpreter_fails_clearly():
    import os
    import subprocess
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    for py in _other_pythons():
        r = subprocess.run([py, "-c", "import dynamo"], capture_output=True, text=True,
                           env={**os.environ, "PYTHONPATH": root})
        assert r.returncode != 0
        assert "ImportError: dynamo supports CPython 3.11, 3.12, 3.13 only" in r.stderr, (py, r.stderr)
