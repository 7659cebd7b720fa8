"""Guard cost (issue 30, item 2): sampled timing of guard lookups, per
frame, per cache entry and per guard-tree node; switched at run time by
dynamo.config.guard_timing, DYNAMO_GUARD_TIMING or a reader (dynamo-top's
`g`, --guard-timing).  The tests count timed lookups and rank nodes; none
asserts an absolute time."""
import os
import re
import subprocess
import sys
import time

import pytest
import torch

import dynamo
from dynamo import _C

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TOP = os.path.join(ROOT, "build", "bin", "dynamo-top")
WORKLOAD = os.path.join(ROOT, "tests", "workloads", "dynamo_workload.py")

# A deliberately expensive guard source: reading len() of a dict guards
# every key of it (2,000 TYPE/VALUE tests), against a one-key dict.
BIG = {f"k{i}": i for i in range(2000)}
SMALL = {"a": 1}


def branchy(x, mode):
    if mode == 0:
        return x + len(SMALL)
    return x + len(BIG)


@pytest.fixture(autouse=True)
def fresh():
    dynamo.reset()
    dynamo.config.guard_timing = 0
    yield
    dynamo.config.guard_timing = 0
    dynamo.reset()


def nodes(code):
    """Every node of code's guard tree (tree_info), depth-first."""
    out, todo = [], [_C.tree_info(code)["root"]]
    while todo:
        n = todo.pop()
        if n is None:
            continue
        out.append(n)
        todo.extend(child for _, child in n.get("branches") or [])
        todo.append(n.get("default"))
    return out


def test_config_is_the_live_switch():
    assert dynamo.config.guard_timing == 0 and _C._guard_timing() == 0
    dynamo.config.guard_timing = 8
    assert _C._guard_timing() == 8
    _C._set_guard_timing(3)                 # what a reader's write looks like from here
    assert dynamo.config.guard_timing == 3
    assert dynamo.config.defaults()["guard_timing"] == 0
    with pytest.raises(ValueError):
        dynamo.config.guard_timing = -1
    with pytest.raises(TypeError):
        dynamo.config.guard_timing = 1.5


def test_one_lookup_of_every_n_is_timed():
    def add(a, b):
        return a + b

    opt = dynamo.optimize("eager")(add)
    a, b = torch.ones(3), torch.ones(3)
    opt(a, b)
    for _ in range(20):                     # off: nothing timed
        opt(a, b)
    stats = _C.tree_stats(add.__code__)
    assert stats["timed"] == 0 and stats["lookups"] == 20
    dynamo.config.guard_timing = 4
    for _ in range(40):
        opt(a, b)
    stats = _C.tree_stats(add.__code__)
    assert stats["timed"] == 10 and stats["timed_ns"] > 0
    root = _C.tree_info(add.__code__)["root"]
    assert root["timed"] == 10 and root["evaluations"] == 60 and root["timed_ns"] > 0
    counters = _C._telemetry_counters(add.__code__)
    if counters is not None:                # telemetry on: the region has them too
        assert counters["lookup_timed"] == 10 and counters["lookup_ns"] > 0
    dynamo.config.guard_timing = 0
    for _ in range(12):
        opt(a, b)
    assert _C.tree_stats(add.__code__)["timed"] == 10


def test_frames_called_in_turn_are_each_sampled():
    """Sampling counts per code: two frames called in turn with an even
    period are both timed (one process-wide count timed only one)."""
    def f(x):
        return x + 1

    def g(x):
        return x * 2

    of, og = dynamo.optimize("eager")(f), dynamo.optimize("eager")(g)
    x = torch.ones(2)
    of(x)
    og(x)
    dynamo.config.guard_timing = 2
    for _ in range(20):
        of(x)
        og(x)
    assert _C.tree_stats(f.__code__)["timed"] == 10
    assert _C.tree_stats(g.__code__)["timed"] == 10


def test_costliest_node_is_the_expensive_guard():
    opt = dynamo.optimize("eager")(branchy)
    x = torch.ones(2)
    opt(x, 0)
    opt(x, 1)
    # a measurement outside the tree: wall time of the calls of each branch
    wall = {}
    for mode in (0, 1):
        t0 = time.perf_counter_ns()
        for _ in range(30):
            opt(x, mode)
        wall[mode] = time.perf_counter_ns() - t0
    dynamo.config.guard_timing = 1
    for _ in range(30):
        opt(x, 0)
        opt(x, 1)
    timed = [n for n in nodes(branchy.__code__) if n["timed"]]
    assert len(timed) >= 3                  # the root and both branches were walked
    costliest = max(timed, key=lambda n: n["timed_ns"])
    cheapest_branch = [n for n in timed if any("SMALL" in str(t[0]) for t in n["tests"])]
    assert any("BIG" in str(t[0]) for t in costliest["tests"])
    assert cheapest_branch and cheapest_branch[0]["timed_ns"] < costliest["timed_ns"]
    assert costliest["timed"] == 30
    # the ranking agrees with the wall-clock measurement of the two branches
    assert wall[1] > wall[0]
    # and per entry: the entry behind BIG costs more per hit
    counters = _C._telemetry_counters(branchy.__code__)
    if counters is not None:
        assert counters["lookup_timed"] == 60


@pytest.mark.skipif(not os.access(TOP, os.X_OK), reason="dynamo-top not built (make all)")
def test_dynamo_top_switches_sampling_and_names_the_costliest_node(tmp_path):
    env = dict(os.environ, PYTHONPATH=ROOT, PYTHONUNBUFFERED="1")
    proc = subprocess.Popen([sys.executable, WORKLOAD, "--period", "0.01"], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=env)
    try:
        line = proc.stdout.readline()
        assert line.startswith("READY"), proc.stderr.read()
        pid = str(proc.pid)
        run = lambda *a: subprocess.run([TOP, "-p", pid, *a], capture_output=True, text=True,
                                        timeout=60)
        before = run("--once", "--summary")
        assert before.returncode == 0, before.stderr
        assert "TOP FRAMES BY GUARD COST" in before.stdout and "guard timing off" in before.stdout
        on = run("--guard-timing", "1", "--once", "--summary")
        assert on.returncode == 0 and "guard timing of pid" in on.stderr
        deadline = time.monotonic() + 60
        while True:                         # rounds of the workload run meanwhile
            guards = run("--once", "--tab", "guards", "--frame", "toy_example")
            if "per lookup" in guards.stdout or time.monotonic() > deadline:
                break
            time.sleep(0.3)
        assert re.search(r"guard cost: \S+ \S?s per lookup  \(\d+ timed of \d+ calls; sampling 1 of 1\)",
                         guards.stdout), guards.stdout
        assert "NS/WALK" in guards.stdout and "lookup per hit" in guards.stdout
        r = run("--once", "--summary")
        ranking = r.stdout.split("TOP FRAMES BY GUARD COST", 1)[1]
        assert "guard timing on: 1 of every 1 lookups" in r.stdout
        assert re.search(r"\[0\] toy_example .*\n +\S+ \S?s per lookup \(\d+ timed\); "
                         r"costliest node 0 \(root\)", ranking), ranking
        off = run("--guard-timing", "0", "--once", "--summary")
        assert off.returncode == 0 and "guard timing on" not in off.stdout
    finally:
        proc.terminate()
        proc.wait(10)


# ---- per test (issue 30: the costliest guard named, not only its node) ----

SLOW_WORKLOAD = os.path.join(ROOT, "tests", "workloads", "slow_getattr_workload.py")
DOT = os.path.join(ROOT, "build", "bin", "dynamo-dot")


def _slow_module():
    import importlib.util
    spec = importlib.util.spec_from_file_location("slow_getattr_workload", SLOW_WORKLOAD)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    mod.SIZE = 4_000_000
    return mod


def test_timing_off_leaves_the_test_slots_alone():
    def add(a, b):
        return a + b

    opt = dynamo.optimize("eager")(add)
    a = torch.ones(3)
    for _ in range(10):
        opt(a, a)
    slots = _C.tree_info(add.__code__)["slots"]
    assert slots and all(s[4:] == (0, 0, 0) for s in slots)
    assert {s[0] for s in slots} == {0}     # one node: every test is the root's
    assert all(s[2] == 0 for s in slots)    # each of entry 0


def test_costliest_test_is_the_long_string_comparison():
    """A config whose `slow` string was replaced by an equal copy after the
    compile: the guard on L['cfg'].slow compares 4 MB per lookup and ranks
    first, as a timer around the same comparisons says."""
    mod = _slow_module()
    opt = dynamo.optimize("eager")(mod.step)
    x, cfg = torch.ones(4), mod.SlowConfig()
    opt(x, cfg)
    seen = {name: getattr(cfg, name) for name in ("slow", "fast", "scale")}
    cfg.copy_slow()
    wall = {}                                # the measurement outside the tree
    for name, value in seen.items():
        t0 = time.perf_counter_ns()
        for _ in range(5):
            assert getattr(cfg, name) == value
        wall[name] = time.perf_counter_ns() - t0
    dynamo.config.guard_timing = 1
    for _ in range(10):
        opt(x, cfg)
    slots = [s for s in _C.tree_info(mod.step.__code__)["slots"] if s[4]]
    assert all(s[4] == 10 and 0 < s[6] <= s[5] for s in slots)   # each run by every timed lookup
    source = lambda s: _C._telemetry_source_text(mod.step.__code__, s[1][0])
    by_source = {}
    for s in slots:
        by_source[source(s)] = by_source.get(source(s), 0) + s[5]
    ranked = sorted(by_source, key=by_source.get, reverse=True)
    assert ranked[0] == "L['cfg'].slow"
    assert max(wall, key=wall.get) == "slow"
    assert by_source["L['cfg'].slow"] > by_source["L['cfg'].fast"]
    # the per-test counters sum to at most the walks' time
    assert sum(s[5] for s in slots) <= _C.tree_stats(mod.step.__code__)["timed_ns"]
    costs = dynamo.guard_costs(opt, x, cfg, repeat=4)
    assert costs[0].source == "L['cfg'].slow" and costs[0].entry == "[0/0]"
    assert costs[0].guard.source.name() == "L['cfg'].slow"
    assert "slow_getattr_workload.py:" in costs[0].origin
    assert costs[0].test.startswith("L['cfg'].slow == 'xxx")
    # explain() compiles afresh (its guard holds the copy itself: identity,
    # cheap) and still reports the costliest tests of its call
    text = str(dynamo.explain(mod.step)(x, cfg))
    assert "<- " in text.split("Guard Cost", 1)[1]


@pytest.mark.skipif(not (os.access(TOP, os.X_OK) and os.access(DOT, os.X_OK)),
                    reason="dynamo-top / dynamo-dot not built (make all)")
def test_tools_name_the_costliest_guard_with_its_line():
    env = dict(os.environ, PYTHONPATH=ROOT, PYTHONUNBUFFERED="1")
    proc = subprocess.Popen([sys.executable, SLOW_WORKLOAD, "--size", "4000000"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    try:
        line = proc.stdout.readline()
        assert line.startswith("READY"), proc.stderr.read()
        pid = str(proc.pid)
        run = lambda *a: subprocess.run(a, capture_output=True, text=True, timeout=60)
        guards = run(TOP, "-p", pid, "--once", "--tab", "guards")
        assert guards.returncode == 0, guards.stderr
        rows = guards.stdout.split("GUARD TEST (costliest guards", 1)[1].splitlines()
        assert "L['cfg'].slow == 'xxx" in rows[1], guards.stdout
        assert "slow_getattr_workload.py:" in rows[1] and "[0/0]" in rows[1]
        summary = run(TOP, "-p", pid, "--summary").stdout
        assert re.search(r"costliest guard: \S+ \S?s per lookup \([\d.]+%\): \[0/0\] "
                         r"L\['cfg'\]\.slow == 'x+\S*  <- slow_getattr_workload\.py:\d+",
                         summary), summary
        dot = run(DOT, "-p", pid, "--guards", "step", "-T", "dot")
        assert dot.returncode == 0, dot.stderr
        note = dot.stdout.split("costliest guards", 1)[1]
        assert note.index("L['cfg'].slow") < note.index("L['cfg'].fast")
    finally:
        proc.terminate()
        proc.wait(10)


def test_switches_and_leaves_have_their_slots():
    """A tree with a switch: the switch is a slot of its node (charged by
    every timed walk through it), after the node's shared tests."""
    def pick(x, mode):
        return x + mode

    opt = dynamo.optimize("eager")(pick)
    x = torch.ones(2)
    for mode in (0, 1, 2):
        opt(x, mode)
    info = _C.tree_info(pick.__code__)
    assert info["nodes"] >= 3
    dynamo.config.guard_timing = 1
    for _ in range(6):
        for mode in (0, 1, 2):
            opt(x, mode)
    slots = _C.tree_info(pick.__code__)["slots"]
    switches = [s for s in slots if len(s[1]) == 2]
    assert len(switches) == 1 and switches[0][2:4] == (-1, -1)
    assert switches[0][4] == 18             # every timed lookup switched at the root
    assert switches[0] is slots[-1]         # after the root's shared tests
    # the branches are leaves with no test left (the switch consumed them)
    assert {s[0] for s in slots} == {0}
    assert all(s[4] == 18 for s in slots if s[4])


def test_leaf_tests_are_slots_of_their_node():
    """Entries told apart by a size, each with its int argument left to its
    leaf: each leaf's test is a slot of its node, of its entry, charged
    only by the lookups that reach it."""
    def pick(x, mode):
        return x + mode

    opt = dynamo.optimize("eager")(pick)
    was = dynamo.config.dynamic_shapes
    dynamo.config.dynamic_shapes = False
    try:
        for mode in (0, 1, 2):
            opt(torch.ones(mode + 2), mode)
        dynamo.config.guard_timing = 1
        for _ in range(5):
            opt(torch.ones(3), 1)           # entry [0/1] only
    finally:
        dynamo.config.dynamic_shapes = was
    info = _C.tree_info(pick.__code__)
    slots = info["slots"]
    nodes = [s[0] for s in slots]
    assert nodes == sorted(nodes) and set(nodes) == set(range(info["nodes"]))
    leaves = [s for s in slots if s[0] > 0]
    assert sorted(s[2] for s in leaves) == [0, 1, 2]        # one leaf test per entry
    payloads = info["entries"]
    ran = [s for s in leaves if s[4]]
    assert len(ran) == 1 and ran[0][4] == 5 and payloads[ran[0][2]].id == "[0/1]"
