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


def test_import_on_other_python_fails_clearly():
    import subprocess
    import sys
    code = ("import sys\n"
            "class V(tuple):\n"
            "    pass\n"
            "sys.version_info = V((3, 12, 0, 'final', 0))\n"
            "import dynamo\n")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert r.returncode != 0
    assert "CPython 3.11 only" in r.stderr


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
