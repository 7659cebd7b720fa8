"""A fixed-seed sample of the differential fuzzer (tests/fuzz): programs run
eagerly and compiled must agree. Known-open bug classes (fuzzgen.KNOWN_OPEN)
are switched off here; `make fuzz` runs everything. A failure prints the
minimized reproducer."""
import os
import sys

import pytest
import torch

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "fuzz"))

import fuzzgen  # noqa: E402
import fuzzrun  # noqa: E402

N_PROGRAMS = 200
CHUNK = 25
AOT_EVERY = 25     # every 25th program uses aot_eager (slower), the rest eager


def _program(seed):
    prog = fuzzgen.generate(seed, fuzzgen.SAFE_FEATURES)
    prog.backend = "aot_eager" if seed % AOT_EVERY == 0 else "eager"
    return prog


@pytest.mark.parametrize("start", range(0, N_PROGRAMS, CHUNK))
def test_fuzz_sample(start):
    calls = compiles = compiled_programs = 0
    failures = []
    for seed in range(start, start + CHUNK):
        prog = _program(seed)
        out = fuzzrun.run_program(prog, timeout=60)
        calls += out.calls
        compiles += out.compiles
        compiled_programs += out.compiles > 0
        if out.mismatch is not None:
            small, _ = fuzzrun.minimize(prog, out.mismatch.kind, timeout=60, budget=150)
            m = fuzzrun.run_program(small, 60).mismatch or out.mismatch
            failures.append(fuzzrun.render_repro(small, m))
    assert not failures, "eager and compiled differ:\n\n" + "\n".join(failures)
    # the sample exercises the compiler: most programs compile graphs, with
    # several graphs per program on average (breaks, recompiles)
    assert calls >= 2 * CHUNK
    assert compiled_programs >= CHUNK * 3 // 4, compiled_programs
    assert compiles >= CHUNK, compiles


def test_generator_is_deterministic_and_switchable():
    a, b = fuzzgen.generate(1234), fuzzgen.generate(1234)
    assert a.source() == b.source()
    assert [c.describe() for c in a.calls] == [c.describe() for c in b.calls]
    assert fuzzgen.generate(1235).source() != a.source()
    for seed in range(300):
        assert not (fuzzgen.generate(seed, fuzzgen.SAFE_FEATURES).kinds() & set(fuzzgen.KNOWN_OPEN))


def test_fuzzer_reports_a_planted_miscompile():
    """A backend that returns wrong values must be caught, minimized to the
    statement that produced the graph, and counted as one compile."""
    seen = []

    def wrong(gm, example_inputs):
        seen.append(gm)

        def run(*args):
            outs = gm.forward(*args)
            return [o + 1 if isinstance(o, torch.Tensor) and o.is_floating_point() else o for o in outs]
        return run

    prog = fuzzgen.Program(7, [fuzzgen.Stmt("ew", ["t0 = t0 * 2 + t1"])],
                           [fuzzgen.CallSpec((2, 3), "float32", False, False, True, 1, 1.0, [], [])],
                           wrong)
    out = fuzzrun.run_program(prog)
    assert out.mismatch is not None and out.mismatch.kind == "result", out.mismatch
    assert out.compiles == 1 and len(seen) == 1
    prog.body.insert(0, fuzzgen.Stmt("int", ["i0 = i0 + 1"]))
    small, runs = fuzzrun.minimize(prog, "result")
    assert [s.lines for s in small.body] == [["t0 = t0 * 2 + t1"]] and runs > 0


def test_eager_only_run_compiles_nothing():
    """The driver's check of a crashed worker (did plain Python crash too?)
    runs the program's plain calls alone: no compile, no comparison, so a
    wrong backend is not reached."""
    seen = []

    def wrong(gm, example_inputs):
        seen.append(gm)
        return lambda *args: [o + 1 for o in gm.forward(*args)]

    prog = fuzzgen.Program(7, [fuzzgen.Stmt("ew", ["t0 = t0 * 2 + t1"])],
                           [fuzzgen.CallSpec((2, 3), "float32", False, False, True, 1, 1.0, [], [])] * 2,
                           wrong)
    out = fuzzrun.run_program(prog, eager_only=True)
    assert out.mismatch is None and out.compiles == 0 and out.calls == 0 and out.phase == "eager"
    assert not seen
    assert fuzzrun.run_program(prog).mismatch is not None and seen   # the same program, compared, is caught


def test_fuzzer_program_with_class_replaced_after_compile_recompiles():
    """A generated program of the class-mutation kind (a method replaced on
    the class between calls; a stale hit before the STATIC_ATTR guard):
    the second call recompiles and agrees with eager."""
    prog = fuzzgen.Program(9, [fuzzgen.Stmt("method", ["t0 = a.m(t0)"])],
                           [fuzzgen.CallSpec((2, 3), "float32", False, False, True, 1, 1.0, [], []),
                            fuzzgen.CallSpec((2, 3), "float32", False, False, True, 1, 1.0, [],
                                             [("mut_class", "A.m = lambda self, t: t - 1")])],
                           "eager")
    out = fuzzrun.run_program(prog)
    assert out.mismatch is None, out.mismatch
    assert out.compiles == 2


def test_half_precision_tolerance_is_the_tensors_scale_not_blind():
    """The aot_eager comparison of half tensors: a difference within the
    dtype's rtol times the tensor's largest magnitude passes (an element
    that cancels), one well past it fails, and bit-exactness (tol 0, the
    eager backend) is untouched."""
    e = torch.tensor([8.0, -0.1373, 1.8105], dtype=torch.float16)
    near = torch.tensor([8.0, -0.1377, 1.8096], dtype=torch.float16)   # 4e-4 and 9e-4 off, scale 8
    far = torch.tensor([8.0, -0.0600, 1.8105], dtype=torch.float16)    # 0.077 off
    assert fuzzrun._teq(e, near, 1e-5)
    assert not fuzzrun._teq(e, far, 1e-5)
    assert not fuzzrun._teq(e, near, 0)
    f32 = torch.tensor([74.88622283935547]), torch.tensor([74.87841033935547])
    assert not fuzzrun._teq(*f32, 1e-5)                     # float32: its own tolerance
    assert fuzzrun._teq(*f32, 1e-5, rtol=fuzzrun._HALF_RTOL[torch.bfloat16])   # after a bfloat16 call


def test_half_precision_gradients_are_compared_at_their_terms_scale():
    """Half gradients that cancel (2x - 2 near x = 1, summed from terms
    up to 4): 16 steps of the dtype at a scale of at least 1 pass (the
    seed 9119221 pair, 4.2 % apart relatively), a wrong gradient (a lost
    term, a sign) fails; a value that is not a gradient keeps one step."""
    e = torch.tensor([[0.466796875]], dtype=torch.float16)
    c = torch.tensor([[0.46875]], dtype=torch.float16)
    assert fuzzrun._teq(e, c, 1e-5, grad=True)
    assert not fuzzrun._teq(e, c, 1e-5)
    assert not fuzzrun._teq(e, torch.tensor([[0.5]], dtype=torch.float16), 1e-5, grad=True)
    assert not fuzzrun._teq(e, -e, 1e-5, grad=True)
    big = torch.tensor([100.0], dtype=torch.float16)
    assert fuzzrun._teq(big, big + 2, 1e-5, grad=True) and not fuzzrun._teq(big, big + 4, 1e-5, grad=True)
    f32 = torch.tensor([0.4668]), torch.tensor([0.4688])
    assert not fuzzrun._teq(*f32, 1e-5, grad=True)          # float32 gradients: their own tolerance


def test_no_grads_comparison_skips_the_module_parameters_gradients_too():
    """(seed 9201461) a program writing an input through numpy: eager's
    gradient of the module's parameter was NaN (its backward read the
    overwritten memory), aot's finite. With grads=False the parameters'
    gradients are not compared either; their values still are."""
    def rec(w_grad, w):
        mod = {"training": True, "flag": True, "params": {"w": torch.tensor(w)},
               "grads": {"w": torch.tensor(w_grad)}, "buffers": {}}
        return {"mut_exc": [], "exc": None, "stdout": "", "res": (), "x": None, "y": None, "lst": [],
                "state": {"G0": 0, "mod": mod}, "grads": []}
    e, c = rec(float("nan"), 0.5), rec(159.17, 0.5)
    assert fuzzrun.compare(e, c, 1e-5)[0] == "globals"
    assert fuzzrun.compare(e, c, 1e-5, grads=False) is None
    assert fuzzrun.compare(e, rec(159.17, 0.25), 1e-5, grads=False)[0] == "globals"


def test_numpy_write_into_an_input_is_detected():
    """writes_behind_autograd: the numpy write of an input is found (its
    gradients are then not compared), a numpy read is not."""
    def prog(*lines):
        return fuzzgen.Program(0, [fuzzgen.Stmt("repro", list(lines))], [], "aot_eager")
    assert fuzzrun.writes_behind_autograd(prog("arr_ = x.detach().numpy()", "arr_[0] = 7"))
    assert not fuzzrun.writes_behind_autograd(prog("arr_ = t0.detach().numpy()", "t1 = t1 + float(arr_.sum())"))
    assert not fuzzrun.writes_behind_autograd(prog("t0 = torch.from_numpy(y.detach().numpy()) * 2"))
