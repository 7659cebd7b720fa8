"""Break impact: each graph break's eager region (the code the rewritten
bytecode runs between the end of its graph and the call of the resume
function) is counted and sampled by a C probe (core/breakprobe.c), and
explain(), dynamo-top and dynamo-dot rank breaks by that cost.

The function below breaks twice: first at a cheap call, then at an
expensive one (a Python loop), so the order of the breaks (and their equal
counts) says nothing about their cost; the ranking must name the second.
The same regions are timed by cProfile in an eager run of the same
function, and the tests assert the ranking only, never a duration.
"""
import cProfile
import json
import os
import pstats
import re
import subprocess
import sys
import types

import pytest
import torch

import dynamo
from dynamo import _C, records

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TOP_BIN = os.path.join(ROOT, "build", "bin", "dynamo-top")
DOT_BIN = os.path.join(ROOT, "build", "bin", "dynamo-dot")
INSPECT_BIN = os.path.join(ROOT, "build", "bin", "dynamo-inspect")

SOURCE = r'''
import torch


@torch.compiler.disable
def cheap(x):
    return 1


@torch.compiler.disable
def expensive(x):
    s = 0
    for i in range(30000):
        s += i
    return s


def two_breaks(x):
    x = x + 1
    cheap(x)                 # break 1: cheap
    x = x * 2
    expensive(x)             # break 2: expensive
    return x - 1
'''


def load(name="break_cost_user"):
    """The user module (a file of its own, so breaks have a user line)."""
    mod = types.ModuleType(name)
    mod.__file__ = f"<{name}>"
    exec(compile(SOURCE, mod.__file__, "exec"), mod.__dict__)
    return mod


@pytest.fixture(autouse=True)
def fresh():
    dynamo.reset()
    with dynamo.config.overrides({"break_sample_period": 1}):
        yield
    dynamo.reset()


def breaks_of(filename):
    """The breaks of the user module, in compile order."""
    return [br for r in records.all_records() for br in r.break_reasons if br.filename == filename]


def line_of(text):
    return SOURCE.splitlines().index(text) + 1


def cprofile_order(mod, x, calls):
    """The two eager regions' functions, costliest first, by cProfile's
    cumulative time over an eager run of the same function."""
    prof = cProfile.Profile()
    prof.enable()
    for _ in range(calls):
        mod.two_breaks(x)
    prof.disable()
    stats = pstats.Stats(prof).stats
    cum = {fn[2]: row[3] for fn, row in stats.items() if fn[2] in ("cheap", "expensive")}
    return sorted(cum, key=cum.get, reverse=True)


def test_costliest_break_named_as_cprofile_times_it():
    mod = load()
    x = torch.randn(8)
    compiled = dynamo.optimize("eager")(mod.two_breaks)
    calls = 12
    for _ in range(calls):
        assert torch.equal(compiled(x), mod.two_breaks(x))
    brs = breaks_of("<break_cost_user>")
    assert [br.lineno for br in brs] == [line_of("    cheap(x)                 # break 1: cheap"),
                                         line_of("    expensive(x)             # break 2: expensive")]
    costs = [br.cost() for br in brs]
    assert [c["calls"] for c in costs] == [calls, calls]
    assert [c["samples"] for c in costs] == [calls, calls]      # period 1: every run timed
    assert all(0 < c["max_ns"] <= c["ns"] for c in costs)
    from dynamo.explain import ranked_breaks
    dynamo_order = ["cheap" if br.lineno == brs[0].lineno else "expensive"
                    for _, br, _ in ranked_breaks(brs)]
    assert dynamo_order == cprofile_order(mod, x, calls) == ["expensive", "cheap"]


def test_explain_ranks_breaks_by_cost_not_order():
    mod = load()
    out = dynamo.explain(mod.two_breaks)(torch.randn(4))
    assert out.graph_break_count == 2
    text = str(out)
    section = text[text.index("Break Cost"):text.index("Ops per Graph")]
    first, second = section.index("Break 2 at"), section.index("Break 1 at")
    assert first < second, section                  # the expensive (second) break first
    assert f"<break_cost_user>:{line_of('    expensive(x)             # break 2: expensive')}" \
        in section[first:second]
    assert section.count(" x 1 runs (1 timed, max ") == 2     # explain's one call, timed
    assert "Break cost" in out.summary()


def test_sampling_period_and_counting_only():
    mod = load()
    x = torch.randn(3)
    compiled = dynamo.optimize("eager")(mod.two_breaks)
    dynamo.config.break_sample_period = 4
    for _ in range(10):
        compiled(x)
    costs = [br.cost() for br in breaks_of("<break_cost_user>")]
    assert [c["calls"] for c in costs] == [10, 10]
    assert [c["samples"] for c in costs] == [3, 3]              # runs 1, 5, 9
    dynamo.config.break_sample_period = 0                       # count only: no clock read
    for _ in range(5):
        compiled(x)
    costs = [br.cost() for br in breaks_of("<break_cost_user>")]
    assert [(c["calls"], c["samples"]) for c in costs] == [(15, 3), (15, 3)]
    with pytest.raises(ValueError):
        dynamo.config.break_sample_period = -1
    with pytest.raises(TypeError):
        dynamo.config.break_sample_period = 1.5


def probes_in(code):
    return [c for c in code.co_consts
            if isinstance(c, types.BuiltinMethodType) and isinstance(c.__self__, _C.BreakProbe)]


def test_probes_are_c_calls_and_break_timing_off_emits_none():
    mod = load()
    compiled = dynamo.optimize("eager")(mod.two_breaks)
    compiled(torch.randn(2))
    rec = next(r for r in records.all_records() if r.name == "two_breaks")
    probes = probes_in(rec.new_code)
    # start once, stop before the one resume call: bound C methods, no Python frame
    assert sorted(p.__name__ for p in probes) == ["start", "stop"]
    assert probes[0].__self__ is probes[1].__self__ is rec.break_reasons[0].probe
    dynamo.reset()
    with dynamo.config.overrides({"break_timing": False}):
        compiled = dynamo.optimize("eager")(load("break_cost_off").two_breaks)
        compiled(torch.randn(2))
    rec = next(r for r in records.all_records() if r.name == "two_breaks")
    assert probes_in(rec.new_code) == []
    assert rec.break_reasons[0].cost() is None


def test_a_break_on_a_tensor_branch_times_both_resume_calls():
    def branchy(x):
        y = x + 1
        if y.sum() > 0:
            return y * 2
        return y - 2
    compiled = dynamo.optimize("eager")(branchy)
    for sign in (1, -1, 1):
        compiled(torch.ones(3) * sign)
    rec = next(r for r in records.all_records() if r.name == "branchy")
    assert sorted(p.__name__ for p in probes_in(rec.new_code)) == ["start", "stop", "stop"]
    cost = rec.break_reasons[0].cost()
    assert cost["calls"] == cost["samples"] == 3


WORKLOAD = r'''
import sys, types
sys.path.insert(0, sys.argv[1])
import torch
import dynamo
dynamo.config.break_sample_period = 1
mod = types.ModuleType("user")
mod.__file__ = "user.py"
exec(compile(sys.argv[3], "user.py", "exec"), mod.__dict__)
f = dynamo.optimize("eager")(mod.two_breaks)
for _ in range(10):
    f(torch.randn(4))
dynamo.save_snapshot(sys.argv[2])
'''


@pytest.fixture(scope="module")
def snapshot(tmp_path_factory):
    for b in (TOP_BIN, DOT_BIN, INSPECT_BIN):
        if not os.path.exists(b):
            pytest.skip(f"{b} not built (make all)")
    path = str(tmp_path_factory.mktemp("bcost") / "run.dyn")
    env = dict(os.environ, PYTHONPATH=ROOT)
    subprocess.run([sys.executable, "-c", WORKLOAD, ROOT, path, SOURCE], check=True, env=env,
                   timeout=120)
    return path


def test_snapshot_breaks_costliest_first(snapshot):
    out = subprocess.run([INSPECT_BIN, "--file", snapshot], capture_output=True, text=True,
                         check=True)
    brs = json.loads(out.stdout)["breaks"]
    assert [b["lineno"] for b in brs] == [line_of("    expensive(x)             # break 2: expensive"),
                                          line_of("    cheap(x)                 # break 1: cheap")]
    assert [(b["calls"], b["samples"], b["count"]) for b in brs] == [(10, 10, 1)] * 2
    assert brs[0]["est_ns"] > brs[1]["est_ns"] > 0


def test_dynamo_top_breaks_tab_ranks_by_cost(snapshot):
    out = subprocess.run([TOP_BIN, "--file", snapshot, "--once", "--tab", "breaks",
                          "--frame", "two_breaks"], capture_output=True, text=True, check=True).stdout
    table = out[out.index("all breaks of the process, costliest first"):]
    rows = [ln for ln in table.splitlines() if "user.py:" in ln]
    assert [r.split("user.py:")[1].split()[0] for r in rows] == [
        str(line_of("    expensive(x)             # break 2: expensive")),
        str(line_of("    cheap(x)                 # break 1: cheap"))]
    summary = subprocess.run([TOP_BIN, "--file", snapshot, "--summary"], capture_output=True,
                             text=True, check=True).stdout
    assert "TOP GRAPH BREAKS BY EAGER TIME" in summary


def test_break_map_colours_and_ranks_by_cost(snapshot, tmp_path):
    path = str(tmp_path / "breaks.dot")
    subprocess.run([DOT_BIN, "--file", snapshot, "--breaks", "two_breaks", "-o", path], check=True)
    edges = subprocess.run(["gvpr", 'E{print($.color, "\t", $.label)}', path], capture_output=True,
                           text=True, check=True).stdout.splitlines()
    by_line = {}
    for e in edges:
        color, label = e.split("\t")
        line = int(re.search(r"user\.py:(\d+)", label).group(1))
        by_line[line] = (color.strip(), label)
    hot = by_line[line_of("    expensive(x)             # break 2: expensive")]
    cold = by_line[line_of("    cheap(x)                 # break 1: cheap")]
    assert hot[0] == "#b71c1c" and cold[0] != hot[0]            # the costliest class
    assert hot[1].lstrip().startswith("#1 of 2") and cold[1].lstrip().startswith("#2 of 2")
    nodes = subprocess.run(["gvpr", "N{print($.name)}", path], capture_output=True, text=True,
                           check=True).stdout
    assert "break cost legend" in nodes


def test_gpt2_step_costliest_break_named_as_cprofile_times_it():
    """Real: a tiny GPT-2 decoding step (tests/workloads/break_cost_workload.py)
    breaks at `.item()` (cheap) and then at a Python sampler (costly)."""
    sys.path.insert(0, os.path.join(ROOT, "tests", "workloads"))
    try:
        import break_cost_workload as wl
    finally:
        sys.path.pop(0)
    step, ids = wl.build()
    compiled = dynamo.optimize("eager")(step)
    calls = 4
    with torch.no_grad():
        for _ in range(calls):
            compiled(ids)
        prof = cProfile.Profile()
        prof.enable()
        for _ in range(calls):
            step(ids)
        prof.disable()
    cum = {fn[2]: row[3] for fn, row in pstats.Stats(prof).stats.items()}
    eager = {"item": cum["<method 'item' of 'torch._C.TensorBase' objects>"],
             "sample_in_python": cum["sample_in_python"]}
    brs = [br for r in records.all_records() for br in r.break_reasons
           if br.filename == wl.__file__]
    assert len(brs) == 2 and all(br.cost()["calls"] == calls for br in brs)
    from dynamo.explain import ranked_breaks
    src = open(wl.__file__).read().splitlines()
    named = ["sample_in_python" if "sample_in_python" in src[br.lineno - 1] else "item"
             for _, br, _ in ranked_breaks(brs)]
    assert named == sorted(eager, key=eager.get, reverse=True) == ["sample_in_python", "item"]
