"""Minimized reproducers the differential fuzzer found (tests/fuzz/repros/):
each runs eagerly and compiled and must agree. Strict xfail while its bug is
open: when a fix lands the case XPASSes and fails here — then drop its
entry from OPEN (and, for a KNOWN_OPEN class, the switch in fuzzgen)."""
import glob
import os
import sys

import pytest

HERE = os.path.dirname(__file__)
sys.path.insert(0, os.path.join(HERE, "fuzz"))

import fuzzrun  # noqa: E402

REPROS = sorted(glob.glob(os.path.join(HERE, "fuzz", "repros", "*.py")))

# repro name -> still open (strict xfail)
OPEN = set()


def _cases():
    for path in REPROS:
        name = os.path.splitext(os.path.basename(path))[0]
        prog, reason = fuzzrun.load_repro(path)
        marks = [pytest.mark.xfail(strict=True, reason=reason)] if name in OPEN else []
        yield pytest.param(prog, id=name, marks=marks)


@pytest.mark.parametrize("prog", list(_cases()))
def test_fuzz_repro(prog):
    out = fuzzrun.run_program(prog, timeout=60)
    assert out.compiles >= 1          # the function was compiled, not skipped
    assert out.calls == len(prog.calls) or out.mismatch is not None
    assert out.mismatch is None, out.mismatch


def test_every_open_repro_exists():
    names = {os.path.splitext(os.path.basename(p))[0] for p in REPROS}
    assert OPEN <= names, OPEN - names


def test_inplace_op_with_uncastable_result_breaks_the_graph():
    """int64 `t.mul_(0.5)` raises in eager; the fake-tensor run does not
    check the cast, so before the fix it was captured (2 ops) and aot_eager
    returned a truncated tensor. Now the op is a break: the graph holds only
    `x * 1` and the op raises eagerly (repro inplace_int_float_aot)."""
    import torch
    import dynamo
    from dynamo.testing import CompileCounter

    def f(x):
        t = x * 1
        t.mul_(0.5)
        return t

    cnt = CompileCounter()
    with pytest.raises(RuntimeError, match="can't be cast"):
        dynamo.optimize(cnt)(f)(torch.arange(4))
    assert (cnt.frame_count, cnt.op_count) == (1, 1)
    dynamo.reset()
    with pytest.raises(RuntimeError, match="can't be cast"):
        dynamo.optimize("aot_eager")(f)(torch.arange(4))
    # a castable in-place op stays in the graph
    cnt = CompileCounter()
    g = dynamo.optimize(cnt)(lambda x: (x * 1).add_(2))
    assert g(torch.arange(4)).tolist() == [2, 3, 4, 5]
    assert (cnt.frame_count, cnt.op_count) == (1, 2)


def test_concatenating_tuple_and_list_raises_as_in_python():
    """tuple + list and list + tuple are TypeErrors; the tracer used to
    build the concatenation (repro tuple_plus_list, fuzz seed 1)."""
    import torch
    import dynamo
    from dynamo.testing import CompileCounter

    def f(x, seq):
        seq = seq + [1]
        return x + len(seq)

    def g(x, seq):
        return x + len([1] + seq)

    for fn in (f, g):
        cnt = CompileCounter()
        opt = dynamo.optimize(cnt)(fn)
        assert opt(torch.ones(1), [1, 2]).item() == 4      # list + list: one graph, no break
        assert cnt.frame_count == 1
        with pytest.raises(TypeError, match="can only concatenate"):
            opt(torch.ones(1), (1, 2))
        assert cnt.frame_count == 1                        # the tuple call compiled no graph with a result
        dynamo.reset()

    def h(x, seq):
        seq += (3,)                                        # list += tuple extends: fine in Python
        return x + len(seq)

    cnt = CompileCounter()
    assert dynamo.optimize(cnt)(h)(torch.ones(1), [1, 2]).item() == 4
    assert cnt.frame_count >= 1


def test_user_error_while_tracing_does_not_disable_the_function():
    import warnings

    import torch
    import dynamo
    from dynamo.testing import CompileCounter

    def f(x, n):
        return x * (10 // n)

    cnt = CompileCounter()
    opt = dynamo.optimize(cnt)(f)
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        with pytest.raises(ZeroDivisionError):
            opt(torch.ones(2), 0)
    assert not [w for w in seen if "could not compile" in str(w.message)]
    for n in (1, 2):
        assert opt(torch.ones(2), n).tolist() == [10 // n] * 2
    assert cnt.frame_count == 2
