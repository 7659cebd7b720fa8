"""Tests of dynamo._C's core (Contract 1): hook, cache, shadow frames, modes.

The hook is driven directly, without the tracer: a Python callback returns
(new_code, guards, payload) where new_code is another function's code with
the same signature.  Counts matter as much as results: how often the
callback ran, which guard index it was told failed.
"""
import functools
import gc
import os
import subprocess
import sys
import textwrap
import threading

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


from asan_util import load_c  # noqa: E402

C = load_c()
OFF, COMPILE, RUN = C.MODE_OFF, C.MODE_COMPILE, C.MODE_RUN
LOCAL, GLOBAL, CLOSURE, ATTR, ITEM, NONE = range(6)
TYPE_MATCH, ID_MATCH, EQUALS_MATCH = 0, 1, 2


@pytest.fixture(autouse=True)
def clean_state():
    C.reset()
    assert C.get_mode() == (OFF, None)
    yield
    C.set_mode(OFF, None)
    C.reset()


class Recorder:
    """A compile callback: records each call, returns a scripted answer."""

    def __init__(self, answer, only=None):
        self.answer = answer          # callable(code, f_locals, ...) -> result
        self.only = only              # answer for this code only, None for others
        self.calls = []
        self.modes = []

    def __call__(self, code, f_locals, f_globals, f_builtins, func, failures):
        if self.only is not None and code is not self.only:
            return None
        self.calls.append(dict(code=code, f_locals=dict(f_locals), func=func,
                               failures=list(failures), f_globals=f_globals,
                               f_builtins=f_builtins))
        self.modes.append(C.get_mode())
        return self.answer(code, f_locals, f_globals, f_builtins, func, failures)


def replace_with(fn, guards=(), payload="entry", orig=None):
    """Callback answering (fn's code, guards, payload); with orig, only for
    orig's code (frames of other codes run unchanged and are not recorded)."""
    return Recorder(lambda *a: (fn.__code__, list(guards), payload),
                    orig.__code__ if orig is not None else None)


# ---- the basic cycle --------------------------------------------------------

def add(a, b):
    return a + b


def mul(a, b):
    return a * b


def test_compile_then_hit():
    cb = replace_with(mul, [(TYPE_MATCH, (LOCAL, 0), int)], "p0")
    oc = C.OptimizedCallable(add, cb, COMPILE)
    assert oc(3, 4) == 12
    assert oc(5, 6) == 30
    assert oc(7, 1) == 7
    assert len(cb.calls) == 1
    call = cb.calls[0]
    assert call["code"] is add.__code__
    assert call["f_locals"] == {"a": 3, "b": 4}
    assert call["func"] is add
    assert call["failures"] == []
    assert call["f_globals"] is add.__globals__
    assert isinstance(call["f_builtins"], dict) and "len" in call["f_builtins"]
    assert cb.modes == [(OFF, None)]          # the hook is off inside the callback
    assert C.cache_entries(add.__code__) == ["p0"]
    assert add(3, 4) == 7                     # outside the callable: mode OFF


def test_failing_guard_recompiles_and_names_the_guard():
    answers = iter([("e1", [(TYPE_MATCH, (LOCAL, 1), int), (TYPE_MATCH, (LOCAL, 0), int)]),
                    ("e2", [(TYPE_MATCH, (LOCAL, 0), float)])])

    def answer(*args):
        payload, guards = next(answers)
        return (mul.__code__, guards, payload)
    cb = Recorder(answer)
    oc = C.OptimizedCallable(add, cb, COMPILE)
    assert oc(2, 3) == 6
    assert oc(2.0, 3) == 6.0                  # guard 1 of e1 fails
    assert len(cb.calls) == 2
    assert cb.calls[1]["failures"] == [("e1", 1, "type", int, float)]
    assert C.cache_entries(add.__code__) == ["e2", "e1"]
    assert oc(2, 5) == 10 and oc(1.5, 2) == 3.0
    assert len(cb.calls) == 2
    with pytest.raises(StopIteration):        # third miss: callback raises
        oc("x", 2)
    # closest first: e1 passed one test (type of b), e2 none; then the rest
    assert cb.calls[2]["failures"] == [("e1", 1, "type", int, str), ("e2", 0)]


def test_callback_none_runs_original_every_time():
    cb = Recorder(lambda *a: None)
    oc = C.OptimizedCallable(add, cb, COMPILE)
    assert oc(1, 2) == 3 and oc(1, 2) == 3
    assert len(cb.calls) == 2
    assert C.cache_entries(add.__code__) == []


def test_callback_exception_propagates_and_state_restored():
    def boom(*a):
        raise RuntimeError("nopython")
    oc = C.OptimizedCallable(add, Recorder(boom), COMPILE)
    with pytest.raises(RuntimeError, match="nopython"):
        oc(1, 2)
    assert C.get_mode() == (OFF, None)


@pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning")  # on_error's own failure
def test_on_error_runs_once_per_raising_call_and_keeps_the_exception():
    """on_error (a graph that raised inside a no_grad block puts the grad
    mode back with it) runs after a call that raised, not after one that
    returned; the caller sees fn's exception, also when on_error fails."""
    calls = []

    def div(a, b):
        return a / b
    oc = C.OptimizedCallable(div, None, OFF, on_error=lambda: calls.append(1))
    assert oc(6, 3) == 2 and calls == []
    with pytest.raises(ZeroDivisionError):
        oc(1, 0)
    assert calls == [1]

    def fails():
        calls.append(2)
        raise ValueError("on_error failed")
    oc = C.OptimizedCallable(div, None, OFF, 1, "div", on_error=fails)
    with pytest.raises(ZeroDivisionError):
        oc(1, 0)
    assert calls == [1, 2]
    with pytest.raises(TypeError, match="on_error must be callable"):
        C.OptimizedCallable(div, None, OFF, on_error=3)


def test_run_mode_never_calls_callback():
    cb = replace_with(mul)
    C.OptimizedCallable(add, cb, COMPILE)(2, 3)
    run = C.OptimizedCallable(add, cb, RUN)
    assert run(4, 5) == 20                     # hit
    C.clear_cache(add.__code__)
    assert run(4, 5) == 9                      # miss: original, no callback
    assert len(cb.calls) == 1


def test_off_mode_ignores_cache():
    cb = replace_with(mul)
    C.OptimizedCallable(add, cb, COMPILE)(2, 3)
    assert C.OptimizedCallable(add, cb, OFF)(4, 5) == 9
    assert len(cb.calls) == 1


def test_set_skip_and_reset():
    cb = replace_with(mul)
    C.set_skip(add.__code__)
    assert C.is_skip(add.__code__)
    oc = C.OptimizedCallable(add, cb, COMPILE)
    assert oc(2, 3) == 5 and cb.calls == []
    C.reset()
    assert not C.is_skip(add.__code__)
    assert oc(2, 3) == 6 and len(cb.calls) == 1
    assert C.cache_entries(add.__code__) == ["entry"]
    C.reset()
    assert C.cache_entries(add.__code__) == []
    assert oc(2, 3) == 6 and len(cb.calls) == 2


def test_clear_cache_keeps_other_codes():
    def other(a, b):
        return a - b
    C.OptimizedCallable(add, replace_with(mul), COMPILE)(1, 1)
    C.OptimizedCallable(other, replace_with(mul), COMPILE)(1, 1)
    C.clear_cache(add.__code__)
    assert C.cache_entries(add.__code__) == []
    assert C.cache_entries(other.__code__) == ["entry"]


def test_api_type_errors():
    with pytest.raises(TypeError):
        C.set_skip(add)
    with pytest.raises(ValueError):
        C.set_mode(7, None)
    with pytest.raises(ValueError):
        C.OptimizedCallable(add, None, 3)
    with pytest.raises(TypeError):
        C.OptimizedCallable(1, None, 1)


def test_set_mode_get_mode():
    cb = replace_with(mul)
    assert C.set_mode(RUN, cb) == (OFF, None)
    assert C.get_mode() == (RUN, cb)
    assert C._hook_installed()
    assert C.set_mode(OFF, None) == (RUN, cb)


def test_set_mode_drives_the_hook_without_callable():
    cb = replace_with(mul)
    prev = C.set_mode(COMPILE, cb)
    try:
        r1 = add(3, 3)
        r2 = add(4, 4)
    finally:
        C.set_mode(*prev)
    assert (r1, r2) == (9, 16) and len(cb.calls) == 1


def test_nested_frames_are_compiled_separately():
    def outer(x):
        return inner(x) + 1

    def inner(x):
        return x * 2

    def inner2(x):
        return x * 100
    seen = []

    def answer(code, *a):
        seen.append(code.co_name)
        return (inner2.__code__, [], None) if code is inner.__code__ else None
    oc = C.OptimizedCallable(outer, Recorder(answer), COMPILE)
    assert oc(2) == 201
    assert seen == ["outer", "inner"]


# ---- internal errors: reported, frame runs normally ------------------------

@pytest.fixture
def unraisable(monkeypatch):
    got = []
    monkeypatch.setattr(sys, "unraisablehook", lambda u: got.append(u))
    return got


@pytest.mark.parametrize("answer", [
    lambda *a: 42,
    lambda *a: ("not code", [], None),
    lambda *a: ((lambda a: a).__code__, [], None),                 # wrong signature
    lambda *a: ((lambda x, y: x).__code__, [], None),              # argument names differ
    lambda *a: (mul.__code__, [(99, (LOCAL, 0), int)], None),      # bad guard
    lambda *a: (mul.__code__, [(TYPE_MATCH, (LOCAL,), int)], None),
])
def test_bad_callback_result_is_reported_and_frame_runs(unraisable, answer):
    oc = C.OptimizedCallable(add, Recorder(answer), COMPILE)
    assert oc(2, 3) == 5
    assert len(unraisable) == 1
    assert C.cache_entries(add.__code__) == []


def test_generator_new_code_rejected(unraisable):
    def gen(a, b):
        yield a
    oc = C.OptimizedCallable(add, Recorder(lambda *a: (gen.__code__, [], None)), COMPILE)
    assert oc(2, 3) == 5 and len(unraisable) == 1


def test_guard_error_is_reported_and_frame_runs(unraisable):
    class Bad:
        def __eq__(self, other):
            raise ZeroDivisionError
        __hash__ = object.__hash__
    cb = replace_with(mul, [(EQUALS_MATCH, (LOCAL, 0), Bad())], orig=add)
    assert C.OptimizedCallable(add, cb, COMPILE)(2, 3) == 6     # entry added, no guard run
    with pytest.raises(TypeError):            # guard raised -> original add(Bad(), 1) ran
        C.OptimizedCallable(add, cb, RUN)(Bad(), 1)
    assert len(unraisable) == 1 and unraisable[0].exc_type is ZeroDivisionError
    assert len(cb.calls) == 1


# ---- OptimizedCallable --------------------------------------------------------

def test_optimized_callable_restores_on_exception():
    def fails():
        assert C.get_mode()[0] == RUN
        raise KeyError("x")
    oc = C.OptimizedCallable(fails, None, RUN)
    with pytest.raises(KeyError):
        oc()
    assert C.get_mode() == (OFF, None)


def test_optimized_callable_nests_and_restores():
    inner_cb = replace_with(mul)
    seen = []

    def inner():
        seen.append(C.get_mode())

    def outer():
        seen.append(C.get_mode())
        C.OptimizedCallable(inner, inner_cb, RUN)()
        seen.append(C.get_mode())
    outer_cb = Recorder(lambda *a: None)
    C.OptimizedCallable(outer, outer_cb, COMPILE)()
    assert seen == [(COMPILE, outer_cb), (RUN, inner_cb), (COMPILE, outer_cb)]


def test_optimized_callable_attributes_and_wraps():
    cb = Recorder(lambda *a: None)
    oc = C.OptimizedCallable(add, cb, COMPILE)
    assert oc.__wrapped__ is add and oc._callback is cb and oc._mode == COMPILE
    functools.update_wrapper(oc, add)
    assert oc.__name__ == "add" and oc.__qualname__ == "add"
    assert oc.__module__ == add.__module__ and oc.__wrapped__ is add
    oc.extra = 1
    assert oc.__dict__["extra"] == 1
    assert oc(a=1, b=2) == 3 and cb.calls[0]["f_locals"] == {"a": 1, "b": 2}


def test_optimized_callable_adds_no_python_frame():
    def probe():
        return sys._getframe(1)
    oc = C.OptimizedCallable(probe, None, OFF)
    assert oc() is sys._getframe()


def test_optimized_callable_binds_as_method():
    class K:
        def __init__(self):
            self.v = 10

        def m(self, x):
            return self.v + x

        def m2(self, x):
            return self.v * x
    cb = replace_with(K.m2)
    K.om = C.OptimizedCallable(K.m, cb, COMPILE)
    k = K()
    assert k.om(3) == 30 and k.om(4) == 40
    assert len(cb.calls) == 1 and cb.calls[0]["f_locals"] == {"self": k, "x": 3}
    bound = k.om
    assert bound(5) == 50
    assert K.om(k, 2) == 20


def test_hook_installed_only_while_a_thread_is_on():
    seen = []

    def probe(x):
        seen.append(C._hook_installed())
        return x

    assert not C._hook_installed()
    oc = C.OptimizedCallable(probe, None, RUN)
    assert oc(1) == 1
    assert seen == [True] and not C._hook_installed()
    # nested OFF region inside an optimized call: no thread is on there
    inner = C.OptimizedCallable(probe, None, OFF)
    outer = C.OptimizedCallable(lambda: (probe(0), inner(0), probe(0)), None, RUN)
    seen.clear()
    outer()
    assert seen == [True, False, True] and not C._hook_installed()
    prev = C.set_mode(COMPILE, None)
    assert C._hook_installed()
    C.set_mode(*prev)
    assert not C._hook_installed()


# ---- shadow frames: signatures, closures, cells -------------------------------

def test_varargs_kwonly_kwargs():
    def f(a, /, b, *args, c, d=4, **kw):
        return ("orig", a, b, args, c, d, kw)

    def g(a, /, b, *args, c, d=4, **kw):
        extra = len(args) + len(kw)
        return ("new", a, b, args, c, d, kw, extra)
    cb = replace_with(g)
    oc = C.OptimizedCallable(f, cb, COMPILE)
    r = oc(1, 2, 3, 5, c=6, e=7)
    assert r == ("new", 1, 2, (3, 5), 6, 4, {"e": 7}, 3)
    assert cb.calls[0]["f_locals"] == {"a": 1, "b": 2, "args": (3, 5), "c": 6, "d": 4,
                                       "kw": {"e": 7}}
    assert oc(1, 2, c=3, d=9) == ("new", 1, 2, (), 3, 9, {}, 0)


def make_closures():
    k = 10

    def f(a):
        return a + k

    def g(a):
        return a * k
    return f, g


def test_closure_free_vars():
    f, g = make_closures()
    cb = replace_with(g, [(EQUALS_MATCH, (CLOSURE, 0), 10)])
    oc = C.OptimizedCallable(f, cb, COMPILE)
    assert oc(3) == 30 and oc(4) == 40 and len(cb.calls) == 1
    assert cb.calls[0]["func"].__closure__[0].cell_contents == 10


def test_cells_in_rewritten_code():
    def f(a, b):
        return a

    def g(a, b):
        def inner():
            return a + b          # a and b become cells (MAKE_CELL on arguments)
        c = 5

        def inner2():
            return c
        return inner() + inner2()
    oc = C.OptimizedCallable(f, replace_with(g, orig=f), COMPILE)
    assert oc(1, 2) == 8 and oc(10, 20) == 35


def test_closure_and_cells_together():
    def make():
        k = 3

        def f(a):
            return a + k

        def g(a):
            def inner():
                return a * k
            return inner()
        return f, g
    f, g = make()
    oc = C.OptimizedCallable(f, replace_with(g, orig=f), COMPILE)
    assert oc(7) == 21 and oc(2) == 6


# ---- shadow frames: frame objects that outlive the call -----------------------

def raiser_orig(a, b):
    return a


def raiser_new(a, b):
    local_marker = a * 2
    raise ValueError(local_marker + b)


def test_exception_traceback_frames_and_locals():
    oc = C.OptimizedCallable(raiser_orig, replace_with(raiser_new), COMPILE)
    for attempt in range(3):
        with pytest.raises(ValueError) as info:
            oc(5, attempt)
        tb = info.value.__traceback__
        frames = []
        while tb is not None:
            frames.append(tb.tb_frame)
            tb = tb.tb_next
        last = frames[-1]
        assert last.f_code is raiser_new.__code__
        assert last.f_locals == {"a": 5, "b": attempt, "local_marker": 10}
        assert last.f_lineno == raiser_new.__code__.co_firstlineno + 2
        assert last.f_back is sys._getframe()      # linked to the caller
        assert gc.is_tracked(last)
    del info, frames, last
    gc.collect()


kept_frames = []


def getframe_orig(a):
    return a


def getframe_new(a):
    b = a + 1
    kept_frames.append(sys._getframe())
    return b


def test_getframe_kept_alive():
    kept_frames.clear()
    oc = C.OptimizedCallable(getframe_orig, replace_with(getframe_new), COMPILE)
    results = []
    for i in range(5):
        results.append(oc(i))
    assert results == [1, 2, 3, 4, 5]
    [x for x in range(1000)]                  # reuse the data stack
    for i, fr in enumerate(kept_frames):
        assert fr.f_locals == {"a": i, "b": i + 1}
        assert fr.f_code is getframe_new.__code__
        assert fr.f_back.f_code is test_getframe_kept_alive.__code__
    kept_frames.clear()
    gc.collect()


def test_frame_locals_called_during_execution():
    def f(a):
        return a

    def g(a):
        x = [a]
        loc = dict(sys._getframe().f_locals)
        return loc
    oc = C.OptimizedCallable(f, replace_with(g), COMPILE)
    assert oc(3) == {"a": 3, "x": [3]}


def doubles(n):
    for i in range(n):
        yield i * 2


def test_generator_called_from_rewritten_code():
    def f(n):
        return n

    def g(n):
        it = doubles(n)
        first = next(it)
        return [first] + list(it)
    seen = []

    def answer(code, *a):
        seen.append(code.co_name)
        return (g.__code__, [], None) if code is f.__code__ else None
    oc = C.OptimizedCallable(f, Recorder(answer), COMPILE)
    assert oc(4) == [0, 2, 4, 6]
    assert "doubles" not in seen              # generator frames never reach the callback


def test_generator_kept_alive_across_calls():
    def f(n):
        return n

    def g(n):
        def counter():
            for i in range(n):
                yield i
        return counter()
    oc = C.OptimizedCallable(f, replace_with(g), COMPILE)
    gens = [oc(3) for _ in range(3)]
    assert [list(x) for x in gens] == [[0, 1, 2]] * 3


def rec_orig(n):
    return 0


def rec_new(n):
    pad = [n] * 3  # noqa: F841  (a few more locals per frame)
    if n == 0:
        return 0
    return 1 + rec_orig(n - 1)


def test_deep_recursion_crosses_datastack_chunks():
    depth = min(700, sys.getrecursionlimit() - 150)
    oc = C.OptimizedCallable(rec_orig, replace_with(rec_new, [(TYPE_MATCH, (LOCAL, 0), int)]),
                             COMPILE)
    for _ in range(3):
        assert oc(depth) == depth


def test_recursion_error_inside_rewritten_code():
    oc = C.OptimizedCallable(rec_orig, replace_with(rec_new), RUN)
    C.OptimizedCallable(rec_orig, replace_with(rec_new), COMPILE)(1)
    with pytest.raises(RecursionError):
        oc(sys.getrecursionlimit() + 100)
    assert oc(10) == 10


def deep_raise_orig(n):
    return n


def deep_raise_new(n):
    if n == 0:
        raise LookupError("bottom")
    return deep_raise_orig(n - 1)


def test_deep_exception_traceback():
    oc = C.OptimizedCallable(deep_raise_orig, replace_with(deep_raise_new), COMPILE)
    with pytest.raises(LookupError) as info:
        oc(300)
    tb, n = info.value.__traceback__, 0
    while tb is not None:
        if tb.tb_frame.f_code is deep_raise_new.__code__:
            assert tb.tb_frame.f_locals["n"] == 300 - n
            n += 1
        tb = tb.tb_next
    assert n == 301


# ---- threads ------------------------------------------------------------------

def test_mode_is_per_thread():
    cb = replace_with(mul, orig=add)
    barrier = threading.Barrier(2)
    out = {}

    def compiled():
        prev = C.set_mode(COMPILE, cb)
        barrier.wait()
        barrier.wait()
        out["compiled"] = add(3, 5)
        C.set_mode(*prev)

    def plain():
        barrier.wait()
        out["mode"] = C.get_mode()
        out["plain"] = add(3, 5)
        barrier.wait()
    ts = [threading.Thread(target=compiled), threading.Thread(target=plain)]
    [t.start() for t in ts]
    [t.join() for t in ts]
    assert out == {"compiled": 15, "plain": 8, "mode": (OFF, None)}
    assert len(cb.calls) == 1


def test_threads_hammering_the_cache():
    cb = replace_with(mul, [(TYPE_MATCH, (LOCAL, 0), int)])
    oc = C.OptimizedCallable(add, cb, COMPILE)
    errors = []

    def work():
        try:
            for i in range(2000):
                assert oc(i, 2) == 2 * i
        except BaseException as e:            # pragma: no cover - reported below
            errors.append(e)
    ts = [threading.Thread(target=work) for _ in range(4)]
    [t.start() for t in ts]
    [t.join() for t in ts]
    assert errors == [] and 1 <= len(cb.calls) <= 4



def test_hook_stays_while_another_thread_is_on():
    """One thread inside an optimized call, another running eager code and
    optimized calls of its own: the hook comes and goes with the count of
    threads that are on, and every call is answered by the right code."""
    cb = replace_with(mul, [(TYPE_MATCH, (LOCAL, 0), int)], orig=add)
    oc = C.OptimizedCallable(add, cb, COMPILE)
    inside, leave = threading.Event(), threading.Event()
    out, errors = {}, []

    def held(a, b):                           # runs inside thread A's optimized call
        inside.set()
        leave.wait(10)
        return ("held", add(a, b))

    def thread_a():
        try:
            out["a"] = C.OptimizedCallable(held, None, RUN)(3, 4)
            out["a_after"] = oc(3, 4)
        except BaseException as e:            # pragma: no cover - reported below
            errors.append(e)

    def thread_b():
        try:
            inside.wait(10)
            out["b_installed"] = C._hook_installed()     # A is on
            out["b_plain"] = [add(i, 2) for i in range(200)]
            out["b_mode"] = C.get_mode()
            out["b_oc"] = oc(5, 6)                       # B on too, then off again
            out["b_installed_after"] = C._hook_installed()
        except BaseException as e:            # pragma: no cover
            errors.append(e)
        finally:
            leave.set()
    ts = [threading.Thread(target=thread_a), threading.Thread(target=thread_b)]
    [t.start() for t in ts]
    [t.join() for t in ts]
    assert errors == []
    # A's add runs after B compiled it: RUN mode hits B's entry (mul)
    assert out["a"] == ("held", 12)
    assert out["b_installed"] and out["b_installed_after"]   # A still inside
    assert out["b_plain"] == [i + 2 for i in range(200)] and out["b_mode"] == (OFF, None)
    assert out["b_oc"] == 30 and out["a_after"] == 12
    assert len(cb.calls) == 1
    assert not C._hook_installed()            # everyone is OFF again


def test_hook_uninstall_restores_a_foreign_evaluator_only_if_ours():
    """set_mode on/off in a loop leaves the interpreter as it found it."""
    assert not C._hook_installed()
    for _ in range(3):
        prev = C.set_mode(RUN, None)
        assert C._hook_installed()
        prev2 = C.set_mode(COMPILE, None)     # on -> on: still one thread
        C.set_mode(*prev2)
        assert C._hook_installed()
        C.set_mode(*prev)
        assert not C._hook_installed()


def test_pure_python_loop_fast_after_optimized_call():
    """After an optimized call returns, plain Python calls are inlined again
    (no eval-frame hook): a Python-to-Python call loop is not slower than
    in a fresh process by more than noise.  Checked structurally: the hook
    is gone and a deep recursion that needs inlined frames works."""
    cb = replace_with(mul, [(TYPE_MATCH, (LOCAL, 0), int)], orig=add)
    assert C.OptimizedCallable(add, cb, COMPILE)(3, 4) == 12
    assert not C._hook_installed()

    def rec(n):
        return 0 if n == 0 else 1 + rec(n - 1)
    assert rec(500) == 500

# ---- leaks (subprocess) ----------------------------------------------------------

LEAK_SCRIPT = textwrap.dedent(r'''
    import gc, sys, tracemalloc
    sys.path.insert(0, {root!r})
    sys.path.insert(0, {tests!r})
    from test_c_core import C, LOCAL, TYPE_MATCH

    class Obj: pass
    def f(a, b, *args, k=1, **kw): return a
    def g(a, b, *args, k=1, **kw):
        if b == "raise":
            raise ValueError(a)
        if b == "frame":
            keep.append(sys._getframe())
        return (a, b, args, k, kw)
    keep = []
    def cb(code, f_locals, *a):
        if type(f_locals["a"]) is not Obj:
            return None       # miss that adds no entry: callback every time
        return (g.__code__, [(TYPE_MATCH, (LOCAL, 0), Obj)], "payload")
    oc = C.OptimizedCallable(f, cb, 1)
    o = Obj()

    def h(a, b): return a              # direct calls: a bound forward, skip-marked
    class G:
        def forward(self, x, y):
            if y == "raise":
                raise ValueError(x)
            return (x, y)
    gobj = G()
    def shadow(a, b): return gobj.forward(a, b)[0]
    def cb2(code, f_locals, *a):
        if code is not h.__code__:
            return None
        return (shadow.__code__, [(TYPE_MATCH, (LOCAL, 0), Obj)], "p2",
                (gobj.forward, (0, 1), 0, 1))
    oc2 = C.OptimizedCallable(h, cb2, 1)

    def run(n):
        C.set_skip(G.forward.__code__)
        for i in range(n):
            oc2(o, 1)
            try:
                oc2(o, "raise")
            except ValueError:
                pass
            oc(o, 1, 2, 3, k=4, z=5)
            try:
                oc(o, "raise")
            except ValueError:
                pass
            oc(o, "frame")
            oc(1, 2)          # miss -> callback -> None -> original code
        keep.clear()
    run(100)
    C.reset()
    run(100)
    gc.collect()
    rc0 = sys.getrefcount(o)
    tracemalloc.start()
    snap0 = tracemalloc.get_traced_memory()[0]
    run({n})
    gc.collect()
    C.reset()
    run(1)
    gc.collect()
    grown = tracemalloc.get_traced_memory()[0] - snap0
    rc1 = sys.getrefcount(o)
    print(rc0, rc1, grown)
''')


def test_no_leaks_in_subprocess():
    script = LEAK_SCRIPT.format(root=ROOT, tests=os.path.dirname(os.path.abspath(__file__)),
                                n=10000)
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                         timeout=600, env={**os.environ, "PYTHONPATH": ROOT})
    assert out.returncode == 0, out.stderr
    rc0, rc1, grown = map(int, out.stdout.split()[-3:])
    assert rc1 <= rc0 + 2        # the final cache entry may keep none: guards hold the type
    # 10000 iterations x 6 calls: anything per call would show as >= 600 kB
    assert grown < 200_000, grown


# ---- direct calls ---------------------------------------------------------------
# A 4th item of the callback's answer, (fn, slots, index, line), says that the
# entry's code only returns fn(*argument slots)[index]: a hit then calls fn
# without building the frame of the entry's code.

def direct_shadow(a, b):              # what the plan below stands for
    return direct_graph(b, a)[0]


def direct_graph(x, y):
    direct_graph.callers.append(sys._getframe(1).f_code.co_name)
    if x == "raise":
        raise KeyError("in graph")
    return (x * 10 + y, "second")


direct_graph.callers = []
SHADOW_LINE = direct_shadow.__code__.co_firstlineno + 1


def direct_answer(fn=direct_graph, slots=(1, 0), index=0, line=SHADOW_LINE, payload="d"):
    return Recorder(lambda *a: (direct_shadow.__code__, [(TYPE_MATCH, (LOCAL, 0), int)],
                                payload, (fn, slots, index, line)), add.__code__)


@pytest.fixture
def graph_calls():
    direct_graph.callers = []
    yield direct_graph.callers


def test_direct_hit_calls_the_graph_without_a_frame(graph_calls):
    cb = direct_answer()
    oc = C.OptimizedCallable(add, cb, COMPILE)
    assert oc(2, 3) == 32 and oc(4, 5) == 54
    # the miss ran direct_shadow in a frame; the hit called the graph from here
    assert graph_calls == ["direct_shadow", "test_direct_hit_calls_the_graph_without_a_frame"]
    assert len(cb.calls) == 1
    assert C.cache_direct(add.__code__) == [(direct_graph, (1, 0), 0, SHADOW_LINE)]
    assert oc(a=6, b=7) == 76               # keywords: the hook's own path, direct too
    assert graph_calls[-1] == "test_direct_hit_calls_the_graph_without_a_frame"


def test_direct_plan_is_not_used_under_a_profiler(graph_calls):
    oc = C.OptimizedCallable(add, direct_answer(), COMPILE)
    oc(2, 3)
    seen = []
    sys.setprofile(lambda frame, event, arg: seen.append((event, frame.f_code.co_name)))
    try:
        assert oc(4, 5) == 54
    finally:
        sys.setprofile(None)
    assert ("call", "direct_shadow") in seen  # the profiler sees the function's frame
    assert graph_calls[-1] == "direct_shadow"


def test_direct_exception_traceback_reads_as_through_the_frame(graph_calls):
    oc = C.OptimizedCallable(add, direct_answer(), COMPILE)
    oc(2, 3)
    cause = ValueError("outer")
    try:
        try:
            raise cause
        except ValueError:
            oc(1, "raise")                  # direct_graph("raise", 1)
    except KeyError as e:
        err = e
    assert graph_calls[-1] == "test_direct_exception_traceback_reads_as_through_the_frame"
    frames = [(t.filename, t.name, t.lineno) for t in
              __import__("traceback").extract_tb(err.__traceback__)]
    names = [f[1] for f in frames]
    assert names[-2:] == ["direct_shadow", "direct_graph"]
    assert frames[-2][0] == __file__ and frames[-2][2] == SHADOW_LINE
    assert err.__context__ is cause


@pytest.mark.parametrize("result, index, want", [
    ([5, 6], 1, 6),                          # a backend returning a list
    (range(3, 9), 2, 5),                     # any sequence: as BINARY_SUBSCR
    ({0: "zero"}, 0, "zero"),
])
def test_direct_result_item(result, index, want):
    oc = C.OptimizedCallable(add, direct_answer(fn=lambda x, y: result, index=index), COMPILE)
    oc(2, 3)                                  # the miss runs direct_shadow (its own answer)
    assert oc(4, 5) == want


def test_direct_result_too_short_raises_index_error():
    oc = C.OptimizedCallable(add, direct_answer(fn=lambda x, y: (1,), index=3), COMPILE)
    oc(2, 3)
    with pytest.raises(IndexError):
        oc(4, 5)


def test_direct_bound_method_of_a_skipped_function_runs_in_its_own_frame():
    callers = []

    class Graph:
        scale = 100

        def forward(self, x, y):
            callers.append(sys._getframe(1).f_code.co_name)
            return (self.scale * x + y,)
    C.set_skip(Graph.forward.__code__)       # as the backends mark fx forwards
    oc = C.OptimizedCallable(add, direct_answer(fn=Graph().forward), COMPILE)
    assert oc(2, 3) == 32                    # the miss runs the entry's code in a frame
    assert oc(4, 5) == 504 and oc(b=1, a=2) == 102     # forward(self, b, a)
    # no call machinery between this frame and forward's: its caller is us
    assert callers == ["test_direct_bound_method_of_a_skipped_function_runs_in_its_own_frame"] * 2


@pytest.mark.parametrize("plan", [
    "plan",
    (direct_graph, (1, 0), 0),                           # 3 items
    (42, (1, 0), 0, 1),                                  # not callable
    (direct_graph, [1, 0], 0, 1),                        # slots not a tuple
    (direct_graph, (2,), 0, 1),                          # not an argument slot
    (direct_graph, (-1,), 0, 1),
    (direct_graph, (0,) * 33, 0, 1),                     # too many
    (direct_graph, (1, 0), -1, 1),                       # negative index
    (direct_graph, (1, 0), 0, -5),
    (direct_graph, (1, "a"), 0, 1),
])
def test_bad_direct_plan_is_reported_and_frame_runs(unraisable, plan):
    cb = Recorder(lambda *a: (direct_shadow.__code__, [], "p", plan), add.__code__)
    assert C.OptimizedCallable(add, cb, COMPILE)(2, 3) == 5
    assert len(unraisable) == 1
    assert C.cache_entries(add.__code__) == []


def test_direct_plan_none_runs_the_frame(graph_calls):
    cb = Recorder(lambda *a: (direct_shadow.__code__, [], "p", None), add.__code__)
    oc = C.OptimizedCallable(add, cb, COMPILE)
    assert oc(2, 3) == 32 and oc(4, 5) == 54
    assert graph_calls == ["direct_shadow", "direct_shadow"]
    assert C.cache_direct(add.__code__) == [None]


# ---- ModuleCall ----------------------------------------------------------------

def test_module_call_descriptor_fast_and_slow():
    def slow(self, *args):
        return ("slow", args)

    class W:
        __call__ = C.ModuleCall("fast", slow)

        def __init__(self):
            self._forward_hooks, self._forward_pre_hooks = {}, {}
            self._backward_hooks, self._backward_pre_hooks = {}, {}
            self._compiled_call_impl = None
            self.fast = lambda *args: ("fast", args)
    w = W()
    assert w(1, 2) == ("fast", (1, 2))
    for name in ("_forward_hooks", "_forward_pre_hooks", "_backward_hooks",
                 "_backward_pre_hooks"):
        getattr(w, name)[0] = "hook"
        assert w(3) == ("slow", (3,))
        getattr(w, name).clear()
    w._compiled_call_impl = print
    assert w(4) == ("slow", (4,))
    w._compiled_call_impl = None
    del w._backward_hooks                     # not a module as expected: slow path
    assert w(5) == ("slow", (5,))
    w._backward_hooks = []
    assert w(6) == ("slow", (6,))
    w._backward_hooks = {}
    del w.fast
    assert w(7) == ("slow", (7,))
    assert W.__dict__["__call__"].__get__(None, W) is W.__dict__["__call__"]

    class NoDict:
        __slots__ = ()
        __call__ = C.ModuleCall("fast", slow)
    assert NoDict()(8) == ("slow", (8,))


def test_frames_run_by_guard_checks_are_not_compiled():
    """Python code a check runs (a property here, a __getattribute__ or
    __eq__ in real code) runs normally: its frames never reach the callback,
    so a guard can neither recurse into itself nor compile code behind the
    user's back."""
    ran = []

    def helper():
        ran.append(1)
        return 7

    class P:
        @property
        def x(self):
            return helper()

    def first(a, b):
        return b

    def second(a, b):
        return b * 2
    cb = Recorder(lambda code, *a: (second.__code__, [(TYPE_MATCH, (ATTR, (LOCAL, 0), "x"), int)],
                                    "p") if code is first.__code__ else None)
    oc = C.OptimizedCallable(first, cb, COMPILE)
    assert oc(P(), 3) == 6                      # miss: compiled (no guard ran yet)
    assert oc(P(), 4) == 8 and ran == [1]       # hit: the check ran the property
    assert [c["code"] for c in cb.calls] == [first.__code__]


# ---- robustness ---------------------------------------------------------------

def test_reset_inside_guard_evaluation_stops_the_walk():
    class Resetting:
        def __eq__(self, other):
            C.reset()                          # drops the entries being walked
            return False
        __hash__ = object.__hash__
    answers = iter([[(TYPE_MATCH, (LOCAL, 0), int)],
                    [(EQUALS_MATCH, (LOCAL, 1), Resetting())],
                    [(TYPE_MATCH, (LOCAL, 0), int)]])
    cb = Recorder(lambda *a: (mul.__code__, next(answers), len(cb.calls)), add.__code__)
    oc = C.OptimizedCallable(add, cb, COMPILE)
    assert oc(2, 3) == 6                       # entry 1
    assert oc(2.0, 3) == 6.0                   # entry 2 (int guard failed)
    assert len(cb.calls) == 2
    with pytest.raises(TypeError):             # entry 2's guard resets, entry 1 is not
        oc(4.0, Resetting())                   # walked; entry 3 runs mul(4.0, Resetting())
    assert len(cb.calls) == 3
    assert cb.calls[-1]["failures"] == []      # the walk stopped: no stale entries
    assert C.cache_entries(add.__code__) == [3]


def test_non_function_frames_never_reach_the_callback():
    def f():
        class K:                               # class body: not CO_OPTIMIZED
            x = 1
        exec("y = 1", {})                       # module-level code
        g = (i for i in range(2))               # generator frames
        return K.x + sum(g)
    cb = Recorder(lambda *a: None)
    assert C.OptimizedCallable(f, cb, COMPILE)() == 2
    # only f's own frames count: an audit hook installed by a library
    # (filelock's, run at exec) is a function frame and may reach it too
    ours = [c["code"].co_name for c in cb.calls if c["code"].co_filename in (__file__, "<string>")]
    assert ours == ["f"]


def test_asan_build_subset():
    """Run the C unit tests (core, guards, guard trees, the generic-getattr
    source) against the ASan/UBSan build (make asan), if present."""
    from asan_util import run_pytest_under_asan
    run_pytest_under_asan([os.path.join(ROOT, "tests", f)
                           for f in ("test_c_core.py", "test_c_guards.py", "test_guard_tree.py",
                                     "test_generic_attr_source.py")],
                          pytest_args=("-k", "not leaks and not asan and not transformers"),
                          source_suffixes=(".c", ".h"))


def test_extension_path_matches_env():
    """Under DYNAMO_C_PATH (the ASan run) the whole package uses that build."""
    import dynamo._C as loaded
    want = os.environ.get("DYNAMO_C_PATH")
    if want:
        assert os.path.samefile(loaded.__file__, want)
    else:
        assert os.path.dirname(loaded.__file__) == os.path.join(ROOT, "dynamo")
