"""Leaks: compile/reset cycles and cache hits leave nothing behind.

Runs tests/workloads/leak_cycles.py in a subprocess (a clean interpreter,
its own telemetry file removed at exit) with a bounded count: warm-up
cycles, then measured compile/reset cycles (a graph break with its
__resume_at_ function, a recompile, an nn.Module) and hits.  Per cycle and
per hit: no live gc object more, traced Python-heap bytes bounded, resident
memory (after malloc_trim, read without tracemalloc) bounded, and the
telemetry region's slots and blobs not growing.  The long run (10,000
cycles, 1,000,000 hits, telemetry on and off) is the same script with larger
counts: `make leak-figures` (tests/workloads/leak_figures.py).
"""
import json
import os
import subprocess
import sys
import warnings

import pytest

import dynamo
from dynamo import _C
from dynamo.testing import CompileCounter

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SCRIPT = os.path.join(ROOT, "tests", "workloads", "leak_cycles.py")

# CPython 3.11 keeps the file name of every compile() with a new name (68-72
# bytes), and torch.fx compiles each GraphModule under a new
# "<eval_with_key>.<n>": about 350 bytes per cycle (5 graphs) that dynamo
# cannot give back; torch's fake-tensor internals still settle for the first
# thousand cycles or so (under 1 KB per cycle after 40).  Before reset()
# removed what compiles installed in user globals, a cycle kept ~250
# objects and ~50 KB.
TRACED_BYTES_PER_CYCLE = 4096
# Resident bytes a measured stretch may gain without being growth: heap
# pages malloc_trim cannot give back (a live block at the top of an arena),
# the page-granular shm ring of telemetry events.
RSS_SLACK = 1 << 20


def _run(*args):
    env = dict(os.environ)
    env.pop("DYNAMO_TELEMETRY", None)       # on, as by default
    proc = subprocess.run([sys.executable, SCRIPT, *args], capture_output=True, text=True,
                          timeout=600, cwd=ROOT, env=env)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


@pytest.fixture(scope="module")
def cycles_run():
    """One run for both tests below: 150 warm-up cycles, 100 measured
    (objects, RSS, telemetry fill), 60 under tracemalloc, 200,000 hits."""
    return _run("--warmup", "150", "--cycles", "100", "--traced-cycles", "60", "--hits", "200000")


# Issue 29: on 3.12 the live-object count per cycle swung with the window
# (+4.97, -35.1, +3.98 objects per cycle after 150, 300, 450 warm-up
# cycles) and the test was xfail there; 3.11 and 3.13 swung too (3.11:
# +3.3, -2.02, +4.97; 3.13: -9.97, +1.69, -1.65), passing only when the
# sign came out negative.  No cache: leak_cycles.py counted after one
# gc.collect(), and a dead compile's ShapeEnv survives the first pass
# because c10::SymInts in its FakeTensors' sizes (Node.meta of the dead
# GraphModule) hold their Python SymNodes through C++, out of the
# collector's sight; the next pass frees it.  How many wait at a mark (0
# to ~50 on 3.12) depends on when the automatic full collections ran.
# leak_cycles.py now collects until a pass frees nothing (collect_all):
# +0.02 objects per cycle after 150, 300 and 450 warm-up cycles on 3.11,
# 3.12 and 3.13 (2 objects in the first half, one-off).
# The 37 ShapeEnvs live at every mark are the last 256 calls of torch's
# class-wide lru_cache(256) on ShapeEnv._inner_evaluate_expr: bounded and
# the same at every mark, so not growth.
def test_compile_reset_cycles_and_hits_do_not_grow(cycles_run):
    out = cycles_run
    assert out["left_in_globals"] == []
    # none per cycle: fewer than 10 over all cycles (a one-off lazy object
    # somewhere is not growth; one kept object per cycle would be 100)
    assert out["cycle"]["objects"] * out["cycles"] < 10, out
    # bytes: in the lower of the two halves (a dict table rebuilt once is
    # not growth: see leak_cycles.py); recurring growth shows in both
    assert min(h["traced_bytes"] for h in out["traced_halves"]) < TRACED_BYTES_PER_CYCLE, out
    assert out["hits"] >= 199998
    assert out["hit"]["objects"] * out["hits"] < 10, out      # none kept per hit
    # bytes: from the first hit mark (a tenth of the hits: one-off lazy
    # allocations of the first calls are not growth) to the last, under
    # 0.01 per hit (one kept byte per call would be 180,000)
    first, last = out["hit_samples"][0], out["hit_samples"][-1]
    n = last["hits"] - first["hits"]
    assert n >= 150000, out["hit_samples"]
    late = {k: (last["absolute"][k] - first["absolute"][k]) / n for k in last["absolute"]}
    assert late["traced_bytes"] < 0.01, out["hit_samples"]
    assert late["rss_trim_bytes"] * n < RSS_SLACK, out["hit_samples"]
    # bytes malloc has out (C, C++ and Python's large blocks; mallinfo2) and
    # Python's small blocks: a hit allocates nothing it keeps
    if last["absolute"]["heap_used_bytes"]:
        assert late["heap_used_bytes"] < 0.05, out["hit_samples"]
    assert late["py_blocks"] * n < 100, out["hit_samples"]


def test_compile_reset_cycles_keep_resident_memory_and_telemetry_flat(cycles_run):
    """Issue 12: RSS grew 26.6 KB a cycle with telemetry on: each cycle took
    a new code slot, 5 entry slots and ~18 KB of blobs in the shared region
    (resident shm pages) until it was full (~2,700 cycles), after which
    telemetry recorded nothing more.  reset() now reclaims them."""
    out = cycles_run
    assert out["telemetry"] is True
    # the region's slots: none kept per cycle (were 1 code and 5 entries)
    assert out["end"]["tele_codes"] == out["start"]["tele_codes"] == 0, out
    assert out["end"]["tele_entries"] == out["start"]["tele_entries"] == 0, out
    # blobs: only the texts of the events the ring keeps (DT_EVENTS_CAP
    # events, ~130 bytes each), whatever the number of cycles (was ~18 KB
    # more per cycle: 1.8 MB here)
    assert out["end"]["tele_blob_bytes"] < 1 << 20, out
    # resident: shm pages by at most that ring; the process (after
    # malloc_trim: free heap pages malloc kept are not growth) by less than
    # RSS_SLACK over the lower half of 50 cycles (one-off settling of torch /
    # CPython tables is not growth): a steady 20 KB a cycle fails it; the
    # figures of `make leak-figures` measure the small steady rates
    assert (out["end"]["rss_shmem_bytes"] - out["start"]["rss_shmem_bytes"]) < 1 << 20, out
    assert min(h["rss_trim_bytes"] for h in out["halves"]) * 50 < RSS_SLACK, out
    # what the pages hold: bytes malloc has out (mallinfo2, every arena) and
    # Python's small blocks, in the lower half (torch's fake-tensor tables
    # still settle by tens of bytes a cycle here, flat after ~1,000 cycles);
    # a C or Python object kept per cycle (>= 1 KB with its compile's
    # texts) fails it
    if out["end"]["heap_used_bytes"]:
        assert min(h["heap_used_bytes"] for h in out["halves"]) < 512, out
    assert min(h["py_blocks"] for h in out["halves"]) < 2, out


def global_user(x):
    y = x + 1
    if y.sum() > 0:                 # a break: a __resume_at_ function too
        return y * 2
    return y


def test_reset_removes_what_compiles_installed_in_user_globals():
    """Issue 14.7: reset() left __compiled_fn_<n> / __resume_at_* in the
    module's globals, each keeping a GraphModule alive."""
    import torch
    cnt = CompileCounter()
    opt = dynamo.optimize(cnt)(global_user)
    opt(torch.ones(3))
    installed = [k for k in globals() if k.startswith(("__compiled_fn", "__resume_at"))]
    assert cnt.frame_count == 2 and len(installed) >= 3     # 2 graphs, resume functions
    assert sum(k.startswith("__compiled_fn") for k in installed) == 2
    gm_refs = [__import__("weakref").ref(gm) for gm in cnt.graphs]
    cnt.graphs.clear()
    dynamo.reset()
    import gc
    gc.collect()
    assert [k for k in globals() if k.startswith(("__compiled_fn", "__resume_at"))] == []
    assert all(r() is None for r in gm_refs)
    opt(torch.ones(3))                  # compiles again after reset and still works
    assert cnt.frame_count == 4


def test_reset_leaves_a_user_rebound_name_alone():
    """A name the user rebound after the compile is the user's: reset()
    removes only what it installed."""
    import torch
    opt = dynamo.optimize(CompileCounter())(global_user)
    opt(torch.ones(3))
    name = next(k for k in globals() if k.startswith("__compiled_fn"))
    globals()[name] = "mine"
    try:
        dynamo.reset()
        assert globals()[name] == "mine"
    finally:
        del globals()[name]


def resets_in_a_try(x):
    y = x + 1
    try:                            # run eagerly: the exit calls a resume function
        dynamo.reset()
    except KeyError:
        pass
    return y * 2


def test_reset_inside_a_running_compiled_frame_keeps_the_names_it_still_loads():
    """Issue 12: reset() called from inside a compiled frame whose rewritten
    code still calls a resume function after the call deleted that
    `__resume_at_*` global under the running frame (NameError).  The names
    a running frame loads stay until a reset() that no such frame sees."""
    import torch
    cnt = CompileCounter()
    opt = dynamo.optimize(cnt)(resets_in_a_try)
    x = torch.ones(3)
    assert torch.equal(opt(x), (x + 1) * 2)
    # f's graph before the try, then (after the reset dropped every entry)
    # the resume function's graph, compiled when the running frame called it
    assert cnt.frame_count == 2 and len(cnt.graphs) == 2
    kept = [k for k in globals() if k.startswith("__resume_at")]
    assert kept, "the resume function the running frame called was kept"
    # the running frame's graph function and the resume function's graph
    assert sum(k.startswith("__compiled_fn") for k in globals()) == 2
    assert torch.equal(opt(x), (x + 1) * 2)     # compiles again, resets again
    assert cnt.frame_count == 4
    dynamo.reset()                  # no compiled frame runs now: all go
    assert [k for k in globals() if k.startswith(("__compiled_fn", "__resume_at"))] == []


def _in_fresh_interpreter(name):
    """Run function `name` of this file in a new interpreter (telemetry on):
    it counts process-wide state (the generated names' numbers, the
    telemetry region) that other tests' leftovers would hold (a stored
    traceback keeps a compiled frame's code alive; a held entry defers the
    region's reclaim to a later reset)."""
    env = dict(os.environ)
    env.pop("DYNAMO_TELEMETRY", None)
    proc = subprocess.run([sys.executable, "-c", f"import tests.test_leaks as t; t.{name}()"],
                          capture_output=True, text=True, timeout=600, cwd=ROOT, env=env)
    assert proc.returncode == 0, proc.stderr[-3000:]


def test_reset_numbers_the_generated_names_from_zero_again():
    _in_fresh_interpreter("_names_from_zero_again")


def test_generated_names_keep_counting_while_compiled_code_is_alive():
    _in_fresh_interpreter("_names_count_on_while_code_is_alive")


def test_event_texts_stop_growing_once_the_event_ring_is_full():
    _in_fresh_interpreter("_ring_texts_bounded")


def _generated_names():
    return sorted(k for k in globals() if k.startswith(("__compiled_fn", "__resume_at")))


def _names_from_zero_again():
    """Issue 12: the names compiles install (`__compiled_fn_<n>`,
    `__resume_at_<offset>_<n>`) are in co_names, so interned, and CPython
    3.12 makes interned strings immortal: with numbers that only grew, each
    compile/reset cycle kept its names for ever (7 names, ~450 bytes of RSS
    a cycle of tests/workloads/leak_cycles.py on 3.12; 7.0 pymalloc blocks a
    cycle, 0.03 with the numbers restarted).  After a reset() with no
    compiled code left alive the numbers start over, so every cycle uses
    the same names."""
    import torch
    cnt = CompileCounter()
    opt = dynamo.optimize(cnt)(global_user)
    dynamo.reset()
    seen = []
    for _ in range(3):
        assert torch.equal(opt(torch.ones(3)), (torch.ones(3) + 1) * 2)
        seen.append(_generated_names())
        dynamo.reset()
    assert cnt.frame_count == 6             # a graph and its resume function each cycle
    assert len(seen[0]) == 4, seen          # 2 graphs, 2 resume functions (one a branch)
    assert seen[0] == seen[1] == seen[2], seen


def _names_count_on_while_code_is_alive():
    """A code compiled before a reset() that is still alive (a frame running
    it, or held elsewhere) may still load its names: the numbers go on, so
    no new function is installed under a name that code loads."""
    import torch
    from dynamo import convert_frame

    def add(x):
        return x + 1

    dynamo.reset()
    opt = dynamo.optimize(CompileCounter())(add)
    opt(torch.ones(3))
    first = _installed_names(convert_frame)
    held = [ref() for ref in convert_frame._made_codes.values()]   # as a running frame would
    assert len(held) == 1
    dynamo.reset()
    opt(torch.ones(3))
    second = _installed_names(convert_frame)
    assert first == ["__compiled_fn_0"] and second == ["__compiled_fn_1"], (first, second)
    del held
    dynamo.reset()                          # nothing alive: from 0 again
    opt(torch.ones(3))
    assert _installed_names(convert_frame) == ["__compiled_fn_0"]
    dynamo.reset()


def _installed_names(convert_frame):
    return sorted({name for _g, name, _v in convert_frame._installed})


CLI = os.path.join(ROOT, "build", "bin", "dynamo-inspect")
needs_telemetry = pytest.mark.skipif(not _C._telemetry_enabled(),
                                     reason="telemetry is off in this process")


def _fill():
    info = _C._telemetry_info()
    return info["n_codes"], info["n_entries"], info["blob_used"]


@needs_telemetry
def test_reset_gives_the_telemetry_region_back(tmp_path):
    """Issue 12: reset() left every code slot, entry slot and blob of the
    dropped entries in the shared region, so each compile/reset cycle took
    more (resident shm memory) until the region was full and telemetry
    stopped.  Now the slots start over; the event log keeps its texts."""
    import torch
    seq0 = _C._telemetry_info()["n_events"]     # events of earlier tests stay in the ring
    cnt = CompileCounter()
    opt = dynamo.optimize(cnt)(global_user)
    opt(torch.ones(3))
    codes, entries, blobs = _fill()
    assert cnt.frame_count == 2 and codes == 2 and entries == 2 and blobs > 0
    dynamo.reset()
    after = _fill()
    assert after[:2] == (0, 0) and after[2] < blobs
    opt(torch.ones(3))                      # compiles again, into slots from 0
    opt(torch.ones(3))                      # and hits, counted there
    assert cnt.frame_count == 4 and _fill()[:2] == (2, 2)
    dynamo.save_snapshot(tmp_path / "s.dyn")
    r = subprocess.run([CLI, "--file", str(tmp_path / "s.dyn")], capture_output=True,
                       text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    d = json.loads(r.stdout)
    names = sorted(f["name"] for f in d["frames"])
    assert names == sorted(["global_user", next(n for n in names if n.startswith("__resume_at"))])
    assert d["total_hits"] == 2             # the second call: a hit of each code
    kinds = [(e["kind"], e["text"]) for e in d["events"] if e["seq"] > seq0]
    # the events from before the reset keep their texts (moved down)
    compiles = [t for k, t in kinds if k == "compile"]
    assert compiles.count("ok: global_user") == 2, kinds
    assert ("reset", "dynamo.reset(): every cache entry dropped") in kinds


def _ring_texts_bounded():
    """Issue 12: events keep their texts across reset() (the blob area), in
    a ring of events_cap events.  Once the ring has wrapped, each reset()
    drops the texts of the events it overwrote, so a process that keeps
    compiling and resetting stops growing the area (and the shm pages behind
    it) when the ring is full.  Each reset() adds one event (its text 41
    bytes, one 8-aligned blob)."""
    import torch
    info = _C._telemetry_info()
    cap = info["events_cap"]
    opt = dynamo.optimize(CompileCounter())(global_user)
    opt(torch.ones(3))                      # events with texts of other lengths too
    dynamo.reset()
    blob = _fill()[2]
    for _ in range(cap // 8):
        dynamo.reset()
    assert _fill()[2] > blob                # the ring is not full: texts add up
    for _ in range(cap):
        dynamo.reset()                      # now full of reset events only
    full = _fill()[2]
    opt(torch.ones(3))
    for _ in range(64):                     # compiles between resets: the same
        dynamo.reset()
        opt(torch.ones(3))
        assert _fill()[:2] == (2, 2)
    dynamo.reset()
    for _ in range(cap):
        dynamo.reset()
    assert _fill()[2] == full, (full, _fill())
    assert _C._telemetry_info()["n_events"] > 2 * cap
    # the ring's texts only: its cap events, each one 64-byte blob here, and
    # the one the last reset() overwrote (dropped at the next reset)
    assert full <= (cap + 1) * 64, full


@needs_telemetry
def test_reset_inside_a_running_entry_reclaims_at_the_next_reset():
    """An entry running when reset() is called keeps its slot (it is marked
    dead when the call returns): nothing is reclaimed until a later reset()
    finds no entry alive."""
    import torch
    calls = []

    def backend(gm, example_inputs):
        def run(*args):
            calls.append(1)
            if len(calls) == 2:
                dynamo.reset()
            return gm.forward(*args)
        return run

    def add(x):
        return x + 1

    opt = dynamo.optimize(backend)(add)
    x = torch.ones(3)
    assert torch.equal(opt(x), x + 1)
    held = _fill()
    assert held[:2] == (1, 1)
    assert torch.equal(opt(x), x + 1)       # a hit whose graph calls reset()
    assert len(calls) == 2
    assert _fill()[:2] == (1, 1)            # still held by the running entry
    dynamo.reset()
    assert _fill()[:2] == (0, 0)
    assert torch.equal(opt(x), x + 1)       # compiles again
    assert len(calls) == 3 and _fill()[:2] == (1, 1)


def test_a_generated_code_with_a_slice_constant_compiles():
    """A generated code can hold a slice among its constants (unhashable
    on 3.11): keeping it weakly for reset()'s name numbering must not hash
    it (it did, through a WeakSet, and the frame ran eagerly with a
    warning instead of compiling: found with an expanded in-place input)."""
    import torch
    import dynamo
    from dynamo.testing import CompileCounter

    def f(x, y, seen):
        seen.append(1)
        x = x + 1
        y.mul_(2)
        return x

    dynamo.reset()
    cnt = CompileCounter()
    seen = []
    with pytest.raises(RuntimeError):
        dynamo.optimize(cnt)(f)(torch.ones(3, 3), torch.ones(1, 3).expand(3, 3), seen)
    y = torch.ones(3, 3)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        dynamo.optimize(cnt)(f)(torch.ones(3, 3), y, seen)
    assert cnt.frame_count == 2 and seen == [1, 1]
    dynamo.reset()
