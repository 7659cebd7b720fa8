"""Live telemetry (inspect/): a real workload read from outside.

A workload subprocess compiles, breaks, recompiles and hits the cache
limit, then stays alive; build/bin/dynamo-inspect (the reader library's CLI)
dumps it as JSON through the shm file and through the anchor symbol.
Snapshots (in-process and from outside), every reader error, file mode and
removal, DYNAMO_TELEMETRY=0, the reader under AddressSanitizer on live and
corrupted data, and the per-call cost of the counters (printed, not
asserted: timings are for `make bench`).
"""
import json
import os
import signal
import stat
import struct
import subprocess
import sys
import time

import pytest

from shm_util import kill_and_remove_shm, layout_version

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CLI = os.path.join(ROOT, "build", "bin", "dynamo-inspect")
ASAN_CLI = os.path.join(ROOT, "build", "asan", "dynamo-inspect")
PY = sys.executable

WORKLOAD = r'''
import sys, time, warnings
import torch, dynamo
warnings.simplefilter("ignore")
dynamo.config.cache_size_limit = 3
dynamo.config.automatic_dynamic_shapes = False      # one entry per size: the recompiles below

def toy(a, b):
    x = a / (torch.abs(a) + 1)
    if b.sum() < 0:
        b = b * -1
    return x * b

def add(a, b):
    return a + b

f = dynamo.optimize("eager")(toy)
for sign in (1, -1, 1):                    # both sides of the break
    f(torch.ones(10), sign * torch.ones(10))
g = dynamo.optimize("eager")(add)
for n in range(2, 5):                      # 3 compiles, each entry then used once
    g(torch.randn(n), torch.randn(n))
    g(torch.randn(n), torch.randn(n))
for n in range(5, 8):                      # the limit (used entries stay)
    g(torch.randn(n), torch.randn(n))
for i in range(5):
    g(torch.randn(3), torch.randn(3))      # hits of [F/1]
m = dynamo.optimize("eager")(torch.nn.Sequential(torch.nn.Linear(4, 3), torch.nn.ReLU()))
m(torch.randn(2, 4))
if sys.argv[1] != "-":
    dynamo.save_snapshot(sys.argv[1])
print("READY", flush=True)
time.sleep(float(sys.argv[2]))
'''

BREAK_LINE = WORKLOAD.splitlines().index("    if b.sum() < 0:") + 1


def env(**extra):
    e = dict(os.environ)
    e["PYTHONPATH"] = ROOT + os.pathsep + e.get("PYTHONPATH", "")
    e.pop("DYNAMO_TELEMETRY", None)
    e.update(extra)
    return e


def start_workload(tmp_path, snapshot="-", linger=120.0, **extra):
    script = tmp_path / "workload.py"
    script.write_text(WORKLOAD)
    p = subprocess.Popen([PY, str(script), str(snapshot), str(linger)], stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True, env=env(**extra), cwd=str(tmp_path))
    line = p.stdout.readline()
    if "READY" not in line:
        kill_and_remove_shm(p)
        raise AssertionError(f"workload failed: {line}{p.stderr.read()}")
    return p


def stop(p):
    """End a workload the way a user would (Ctrl-C): atexit runs, the shm
    file goes.  SIGKILL would leave /dev/shm/dynamo-<pid> behind: the
    fallback removes it."""
    if p.poll() is None:
        p.send_signal(signal.SIGINT)
        try:
            p.wait(timeout=30)
        except subprocess.TimeoutExpired:
            kill_and_remove_shm(p)


def inspect(*args, cli=CLI, user=None):
    preexec = None
    if user is not None:
        def preexec():
            os.setgid(user)
            os.setuid(user)
    return subprocess.run([cli, *map(str, args)], capture_output=True, text=True, timeout=60,
                          errors="replace",
                          preexec_fn=preexec)


def dump(*args, cli=CLI):
    r = inspect(*args, cli=cli)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)


@pytest.fixture(scope="module", autouse=True)
def built():
    assert os.access(CLI, os.X_OK), "run `make all` first (builds build/bin/dynamo-inspect)"


@pytest.fixture(scope="module")
def workload(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("telemetry")
    p = start_workload(tmp, snapshot=tmp / "inproc.dyn")
    yield p, tmp
    stop(p)
    assert not os.path.exists(f"/dev/shm/dynamo-{p.pid}")


def frame(d, name):
    return next(f for f in d["frames"] if f["name"] == name)


def check_workload_dump(d, pid):
    proc = d["process"]
    assert proc["pid"] == pid and proc["version"] == layout_version()
    assert proc["python_version"] == "%d.%d.%d" % sys.version_info[:3] and proc["torch_version"].startswith("2.13.0")
    assert proc["start_ns"] > 0
    names = [f["name"] for f in d["frames"]]
    assert names[0] == "toy" and "add" in names and "forward" in names
    assert sum(n.startswith("__resume_at_") for n in names) == 2

    toy = frame(d, "toy")
    assert (toy["calls"], toy["hits"], toy["misses"]) == (3, 2, 1)
    rec = toy["records"][0]
    assert rec["id"] == "[0/0]" and rec["status"] == "ok" and rec["entry"]["hits"] == 2
    ops = [(n["op"], n["target"]) for n in rec["graphs"][0]["nodes"]]
    assert ("call_function", "torch.abs") in ops and ("call_method", "sum") in ops
    a = rec["graphs"][0]["nodes"][0]
    assert (a["op"], a["name"], a["dtype"], a["shape"], a["stride"], a["device"]) == \
        ("placeholder", "a", "torch.float32", "[10]", "[1]", "cpu")
    assert set(a["users"]) == {"abs_1", "truediv"}
    kinds = {g["kind"] for g in rec["guards"]}
    assert {"TENSOR_MATCH", "GRAD_MODE"} <= kinds
    assert any(g["source"] == "L['a']" for g in rec["guards"])
    assert "RESUME" in rec["original_bytecode"] and "__compiled_fn" in rec["modified_bytecode"]
    (brk,) = rec["breaks"]
    assert brk["lineno"] == BREAK_LINE and brk["user_stack"][-1]["line"] == "if b.sum() < 0:"
    assert [b["reason"] for b in d["breaks"]] == [brk["reason"]] and d["breaks"][0]["count"] == 1
    assert toy["tree"][0]["parent"] == -1 and toy["tree"][0]["evaluations"] >= 1
    # the record names its resume functions: which side of the jump each continues
    by_name = {f["name"]: f for f in d["frames"]}
    fall, branch = rec["resumes"]
    assert (fall["kind"], branch["kind"]) == ("fallthrough", "branch")
    assert fall["offset"] < branch["offset"]
    for res in (fall, branch):
        assert res["name"] == f"__resume_at_{res['offset']}_{res['name'].rsplit('_', 1)[1]}"
        assert res["frame_id"] == by_name[res["name"]]["frame_id"]
    # b >= 0 twice (the jump over `b = b * -1` taken), b < 0 once
    assert (by_name[branch["name"]]["calls"], by_name[fall["name"]]["calls"]) == (2, 1)
    assert all(f["cache_size_limit"] == 3 for f in d["frames"])
    assert all(r["resumes"] == [] for f in d["frames"] if f["name"] != "toy" for r in f["records"])

    add = frame(d, "add")
    assert add["limit_hit"] == 1 and add["compiles"] == 4 and len(add["entries"]) == 3
    assert (add["calls"], add["hits"], add["misses"]) == (14, 8, 6)
    statuses = [r["status"] for r in add["records"]]
    assert statuses == ["ok", "ok", "ok", "limit"]
    second = add["records"][1]
    assert second["recompile_reason"].startswith("L['a'].size()[0]: expected 2, actual 3")
    assert second["entry"]["hits"] == 6
    # per-guard failure counts and the last failure of the newest entry
    newest = add["records"][2]
    assert newest["guards"][0]["fail_count"] == 3 and newest["guards"][0]["last_failed"] == 1
    assert (newest["entry"]["last_fail_property"], newest["entry"]["last_fail_expected"],
            newest["entry"]["last_fail_actual"]) == ("size()[0]", "4", "7")
    assert add["guard_failures"] == 5
    tree = add["tree"]
    assert tree[0]["switch"] == "L['a'].size()[0]"
    assert sorted(n["via"] for n in tree[1:]) == ["= 2", "= 3", "= 4"]
    # node counters as of the last publish (forward's compile): the 5 hits
    # after the limit (the one before went through the 2-entry tree)
    assert {n["via"]: n["evaluations"] for n in tree[1:]}["= 3"] == 5
    assert tree[0]["failures"] == 3 and add["tree_counters_ns"] > 0

    kinds = [e["kind"] for e in d["events"]]
    assert kinds.count("break") == 1 and kinds.count("recompile") == 2 and kinds.count("limit") == 1
    rc = [e for e in d["events"] if e["kind"] == "recompile"][0]
    assert (rc["id"], rc["guard_index"], rc["property"], rc["expected"], rc["actual"]) == \
        ("[3/1]", 0, "size()[0]", "2", "3")
    lim = [e for e in d["events"] if e["kind"] == "limit"][0]
    assert "expected 4, actual 5" in lim["text"] and lim["actual"] == "5"
    seqs = [e["seq"] for e in d["events"]]
    assert seqs == sorted(seqs) and seqs[0] == 1

    fwd = frame(d, "forward")
    mods = [(n["target"], n["module_path"], n["module_class"])
            for n in fwd["records"][0]["graphs"][0]["nodes"] if n["op"] == "call_module"]
    assert mods == [("self_0", "0", "Linear"), ("self_1", "1", "ReLU")]


REFRESH = r'''
import gc, json, os, subprocess, sys
import torch, dynamo
from dynamo import _C, telemetry

def read(name):
    out = subprocess.run([sys.argv[1], "-p", str(os.getpid())], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    f = next(f for f in json.loads(out.stdout)["frames"] if f["name"] == name)
    return f["tree"][0]["evaluations"], f["tree_counters_ns"], f["tree_counters_live"]

@dynamo.optimize("eager")
def add(a, b):
    return a + b

x = torch.ones(3)
for _ in range(3):
    add(x, x)
before = read("add")
for _ in range(10):
    add(x, x)
live = read("add")
used = _C._telemetry_info()["blob_used"]
n = telemetry.refresh()
after = read("add")
grown = _C._telemetry_info()["blob_used"] - used

class Scale(torch.nn.Module):
    def forward(self, x):
        return x * 2

@dynamo.optimize("eager")
def use(m, x):
    return m(x)

m1, m2 = Scale(), Scale()
use(m1, x); use(m2, x); use(m2, x)
two = read("use")
del m1
gc.collect()
use(m2, x)                 # the dead entry is pruned: the tree is rebuilt, not published
pruned = read("use")
telemetry.refresh()        # republished: live again
use(m2, x)
republished = read("use")
print(json.dumps([before, live, after, n, grown, two, pruned, republished]))
'''


def test_tree_counters_live(tmp_path):
    """Guard-tree node counters are bumped in the region by every walk once
    the tree is published; a tree rebuilt without a publish (entries
    pruned) has stale copies until refresh() republishes it."""
    out = subprocess.run([PY, "-c", REFRESH, CLI], capture_output=True, text=True, env=env(),
                         cwd=str(tmp_path), timeout=300)
    assert out.returncode == 0, out.stderr
    before, live, after, codes, grown, two, pruned, republished = \
        json.loads(out.stdout.splitlines()[-1])
    # the first call compiled (no walk); each later call is one walk of the root
    assert before[0] == 2 and before[2] == 1
    assert live[0] == 12 and live[1] == before[1] and live[2] == 1       # no refresh needed
    assert after[0] == 12 and after[1] > before[1] and after[2] == 1
    assert codes == 1 and grown == 0                 # refresh(): no new blob for a live tree
    assert two[2] == 1 and pruned[2] == 0            # rebuilt: copies, as of the publish
    assert pruned[0] == two[0]
    assert republished[2] == 1 and republished[0] >= 1


STORAGE = r'''
import json, os, subprocess, sys
import torch, dynamo

@dynamo.optimize("eager")
def write(a, b):
    a.add_(1)
    return b * 2

x = torch.ones(2, 4)
write(x, torch.ones(2, 4))
write(x, x.view(2, 4))          # one storage now: a recompile
out = subprocess.run([sys.argv[1], "-p", str(os.getpid())], capture_output=True, text=True)
assert out.returncode == 0, out.stderr
f = next(f for f in json.loads(out.stdout)["frames"] if f["name"] == "write")
print(json.dumps([[[g["kind"], g["text"]] for g in r["guards"]] for r in f["records"]]
                 + [f["records"][1]["recompile_reason"]]))
'''


def test_storage_match_published(tmp_path):
    """STORAGE_MATCH guards reach telemetry (kind, text) and the recompile
    reason a changed storage relation gives, as dynamo-inspect reads them."""
    out = subprocess.run([PY, "-c", STORAGE, CLI], capture_output=True, text=True, env=env(),
                         cwd=str(tmp_path), timeout=300)
    assert out.returncode == 0, out.stderr
    first, second, reason = json.loads(out.stdout.splitlines()[-1])
    assert ["STORAGE_MATCH", "- local 'b' STORAGE_MATCH shares no storage with L['a']"] in first
    assert ["STORAGE_MATCH", "- local 'b' STORAGE_MATCH shares a storage with L['a']"] in second
    assert reason.startswith("L['b'] shares a storage with L['a']: expected False, actual True "
                             "(STORAGE_MATCH of entry [0/0]); guarded at ")


RESUME_KINDS = r'''
import json, warnings
import torch, dynamo
from dynamo import records
warnings.simplefilter("ignore")
dynamo.config.skip_frame_on_loop_break = False   # the loop is cut (its resume functions)

def loop(a):
    while a.sum() < 3:      # a forward jump on entry, a backward jump at the end
        a = a + 1
    return a

def outer():
    k = torch.ones(1)
    def inner(a):           # a closure: its resume functions are made, not installed
        if a.sum() > 0:
            a = a + k
        return a * 2
    return inner

def calls_print(a):
    a = a + 1
    print("", end="")
    return a * 2

dynamo.optimize("eager")(loop)(torch.ones(1))
dynamo.optimize("eager")(outer())(torch.ones(1))
dynamo.optimize("eager")(calls_print)(torch.ones(1))
print(json.dumps({r.id + " " + r.name: [[x.name, x.offset, x.kind] for x in r.resumes]
                  for r in records.all_records() if r.resume_codes}))
'''


def test_resume_kinds(tmp_path):
    """CompileRecord.resumes: which side of the break each resume function
    continues, for a loop (a jump each way between the same two offsets),
    a closure and a call that breaks."""
    script = tmp_path / "resume_kinds.py"      # a file: "<string>" frames are not compiled
    script.write_text(RESUME_KINDS)
    out = subprocess.run([PY, str(script)], capture_output=True, text=True, env=env(),
                         timeout=300)
    assert out.returncode == 0, out.stderr
    got = json.loads(out.stdout.splitlines()[-1])
    for resumes in got.values():
        for name, offset, _ in resumes:
            assert name.startswith(f"__resume_at_{offset}_")
    (loop_fall, _, k1), (loop_exit, _, k2) = [(o, n, k) for n, o, k in got["[0/0] loop"]]
    assert (k1, k2) == ("fallthrough", "branch") and loop_fall < loop_exit
    # in the resume function of the loop body, the break is the backward jump
    body = next(v for k, v in got.items() if k.startswith("[1/0] __resume_at_"))
    if sys.version_info >= (3, 12):
        # 3.12 has no backward conditional jump: the loop test at the end
        # jumps forward to the exit and falls through to a JUMP_BACKWARD
        (fall, k1), (taken, k2) = [(o, k) for _, o, k in body]
        assert (k1, k2) == ("fallthrough", "branch") and taken == loop_exit and fall < loop_exit
    else:
        assert [(o, k) for _, o, k in body] == [(loop_exit, "fallthrough"), (loop_fall, "branch")]
    inner = next(v for k, v in got.items() if k.endswith(" inner"))
    assert [k for _, _, k in inner] == ["fallthrough", "branch"]
    brk = next(v for k, v in got.items() if k.endswith(" calls_print"))
    assert [k for _, _, k in brk] == ["after"]


def test_list_processes(workload):
    p, _ = workload
    other = subprocess.Popen(["sleep", "60"])       # a process without dynamo
    try:
        r = inspect("--list")
    finally:
        other.kill()
        other.wait()
    assert r.returncode == 0, r.stderr
    pids = [int(x) for x in r.stdout.split()]
    assert p.pid in pids and other.pid not in pids and pids == sorted(set(pids))


def test_live_dump_shm(workload):
    p, _ = workload
    d = dump("-p", p.pid)
    assert d["process"]["source"] == f"shm /dev/shm/dynamo-{p.pid}"
    assert d["process"]["exited"] == 0 and d["process"]["shm_path"] == f"/dev/shm/dynamo-{p.pid}"
    check_workload_dump(d, p.pid)


def test_live_dump_anchor(workload):
    p, _ = workload
    d = dump("-p", p.pid, "--anchor")
    assert d["process"]["source"].startswith(f"anchor pid {p.pid} @0x")
    check_workload_dump(d, p.pid)


def test_diagnose(workload):
    p, _ = workload
    r = inspect("-p", p.pid, "--diagnose")
    assert r.returncode == 0, r.stderr
    assert "shm: /dev/shm/dynamo-" in r.stdout and "dynamo_telemetry_anchor at 0x" in r.stdout
    assert "region readable" in r.stdout and "result: telemetry readable" in r.stdout


def test_file_mode(workload):
    p, _ = workload
    st = os.stat(f"/dev/shm/dynamo-{p.pid}")
    assert stat.S_IMODE(st.st_mode) == 0o600 and st.st_uid == os.getuid()


def test_snapshot_in_process_round_trip(workload):
    p, tmp = workload
    path = tmp / "inproc.dyn"
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    d = dump("--file", path)
    assert d["process"]["from_file"] == 1 and d["process"]["exited"] == 0
    assert d["process"]["snapshot_ns"] >= d["process"]["start_ns"]
    check_workload_dump(d, p.pid)


def test_snapshot_from_outside_round_trip(workload):
    p, tmp = workload
    path = tmp / "outside.dyn"
    r = inspect("-p", p.pid, "--save", path)
    assert r.returncode == 0, r.stderr
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    live, saved = dump("-p", p.pid), dump("--file", path)
    check_workload_dump(saved, p.pid)
    strip = lambda d: [{k: v for k, v in f.items()} for f in d["frames"]]  # noqa: E731
    assert strip(saved) == strip(live)      # the workload is idle: identical state


def test_asan_reader_live_and_snapshot(workload):
    p, tmp = workload
    r = subprocess.run(["make", "-s", "inspect-asan"], cwd=ROOT, capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    check_workload_dump(dump("-p", p.pid, cli=ASAN_CLI), p.pid)
    check_workload_dump(dump("-p", p.pid, "--anchor", cli=ASAN_CLI), p.pid)
    check_workload_dump(dump("--file", tmp / "inproc.dyn", cli=ASAN_CLI), p.pid)


def test_corrupt_snapshots_never_crash_the_reader(workload):
    """Flipped bytes anywhere: exit 0 (fields emptied) or 7 (corrupt), no
    sanitizer report; truncation and a bumped version are reported."""
    _, tmp = workload
    if not os.access(ASAN_CLI, os.X_OK):
        subprocess.run(["make", "-s", "inspect-asan"], cwd=ROOT, check=True)
    data = bytearray((tmp / "inproc.dyn").read_bytes())
    bad = tmp / "bad.dyn"

    bad.write_bytes(data[:len(data) // 2])
    r = inspect("--file", bad, cli=ASAN_CLI)
    assert r.returncode == 7 and "truncated" in r.stderr
    bad.write_bytes(data[:100])
    assert inspect("--file", bad, cli=ASAN_CLI).returncode == 7

    v = bytearray(data)
    v[8:12] = struct.pack("<I", 99)
    bad.write_bytes(v)
    r = inspect("--file", bad, cli=ASAN_CLI)
    assert r.returncode == 6 and "version 99" in r.stderr
    v[8:12] = struct.pack("<I", 1)              # the layout before cache_size_limit & co
    bad.write_bytes(v)
    r = inspect("--file", bad, cli=ASAN_CLI)
    assert r.returncode == 6 and \
        f"layout version 1, this reader understands version {layout_version()}" in r.stderr

    import random
    rng = random.Random(1234)
    for trial in range(120):
        c = bytearray(data)
        lo = 0 if trial % 3 == 0 else 4096          # header too, sometimes
        for _ in range(rng.randint(1, 40)):
            c[rng.randrange(lo, len(c))] = rng.randrange(256)
        bad.write_bytes(c)
        r = inspect("--file", bad, cli=ASAN_CLI)
        assert r.returncode in (0, 6, 7), (trial, r.returncode, r.stderr[-2000:])
        assert "Sanitizer" not in r.stderr and "runtime error" not in r.stderr, r.stderr[-2000:]


# ---------------------------------------------------------------- errors

def test_error_no_such_pid():
    pid = 4_000_000                     # above pid_max
    r = inspect("-p", pid)
    assert r.returncode == 3 and "no such process" in r.stderr


def test_error_pid_without_dynamo():
    p = subprocess.Popen(["sleep", "30"])
    try:
        r = inspect("-p", p.pid)
        assert r.returncode == 4 and "has not loaded dynamo._C" in r.stderr
    finally:
        p.kill()
        p.wait()


def test_error_permission_denied(workload):
    if os.getuid() != 0:
        pytest.skip("needs root to run the reader as another user")
    p, _ = workload
    nobody = 65534
    r = inspect("-p", p.pid, user=nobody)
    assert r.returncode == 5, r.stderr
    assert "permission denied" in r.stderr and "same user" in r.stderr
    r = inspect("-p", p.pid, "--anchor", user=nobody)
    assert r.returncode == 5 and "ptrace" in r.stderr


def test_error_exit_while_watched_keeps_last_state(tmp_path):
    for mode in ([], ["--anchor"]):
        p = start_workload(tmp_path, linger=1.5)
        r = inspect("-p", p.pid, *mode, "--wait-exit", 60)
        p.wait()
        assert r.returncode == 0, r.stderr
        d = json.loads(r.stdout)
        assert d["process"]["exited"] == 1
        assert "toy" in [f["name"] for f in d["frames"]]       # the last state
        assert not os.path.exists(f"/dev/shm/dynamo-{p.pid}")  # removed at exit


def test_removed_at_normal_exit(tmp_path):
    p = start_workload(tmp_path, linger=0)
    assert p.wait(timeout=60) == 0
    assert not os.path.exists(f"/dev/shm/dynamo-{p.pid}")
    assert inspect("-p", p.pid).returncode == 3


def test_disabled_creates_nothing(tmp_path):
    p = start_workload(tmp_path, linger=60, DYNAMO_TELEMETRY="0")
    try:
        assert not os.path.exists(f"/dev/shm/dynamo-{p.pid}")
        r = inspect("-p", p.pid)
        assert r.returncode == 4 and "telemetry is off" in r.stderr
    finally:
        stop(p)
    out = subprocess.run([PY, "-c", "import dynamo, sys\ntry:\n dynamo.save_snapshot('x')\n"
                          "except RuntimeError as e: print('off', e)"],
                         capture_output=True, text=True, env=env(DYNAMO_TELEMETRY="0"),
                         cwd=str(tmp_path))
    assert out.stdout.startswith("off") and not (tmp_path / "x").exists()


def test_anonymous_region_found_through_the_anchor(tmp_path):
    """No shm file (DYNAMO_TELEMETRY=anon, as when /dev/shm is unusable)."""
    p = start_workload(tmp_path, snapshot=tmp_path / "anon.dyn", linger=60, DYNAMO_TELEMETRY="anon")
    try:
        assert not os.path.exists(f"/dev/shm/dynamo-{p.pid}")
        d = dump("-p", p.pid)
        assert d["process"]["anonymous"] == 1 and d["process"]["shm_path"] == ""
        check_workload_dump(d, p.pid)
        assert inspect("-p", p.pid, "--shm-only").returncode == 4
    finally:
        stop(p)


# ---------------------------------------------------------------- cost

BENCH = r'''
import time, torch, dynamo
def add(a, b):
    return a + b
f = dynamo.optimize("eager")(add)
a, b = torch.randn(2), torch.randn(2)
f(a, b); f(a, b)
best = 1e9
for _ in range(15):
    t0 = time.perf_counter_ns()
    for _ in range(20000):
        f(a, b)
    best = min(best, (time.perf_counter_ns() - t0) / 20000)
eager = 1e9
for _ in range(15):
    t0 = time.perf_counter_ns()
    for _ in range(20000):
        add(a, b)
    eager = min(eager, (time.perf_counter_ns() - t0) / 20000)
print(best, eager)
'''


def test_counter_cost_is_printed(tmp_path):
    """Optimized add(a, b): ns/call with telemetry off and on (printed; the
    budget is checked by `make bench`, never by a timed test)."""
    res, eager = {}, 1e9
    for flag in ("0", "1") * 3:
        out = subprocess.run([PY, "-c", BENCH], capture_output=True, text=True,
                             env=env(DYNAMO_TELEMETRY=flag), cwd=str(tmp_path), timeout=300)
        assert out.returncode == 0, out.stderr
        ns, e = map(float, out.stdout.split())
        res[flag], eager = min(res.get(flag, 1e9), ns), min(eager, e)
    overhead = res["0"] - eager
    print(f"\ntelemetry cost: add(a,b) {res['0']:.0f} ns/call off, {res['1']:.0f} ns/call on "
          f"(eager {eager:.0f}); delta {res['1'] - res['0']:+.1f} ns = "
          f"{100 * (res['1'] - res['0']) / max(overhead, 1):+.1f}% of dispatch overhead")


# ---------------------------------------------------------------- guard trees published in C

TREE_IN_C = r'''
import json, sys
import torch, dynamo
from dynamo import _C, telemetry

def f(x, n):
    return x + n

dynamo.config.specialize_int = True          # an entry per n: a switch on it
opt = dynamo.optimize("eager")(f)
callback = opt._callback.__call__.__func__.__code__
events, window = [], [False]

def profile(frame, event, arg):
    code = frame.f_code
    if event == "return" and code is callback:
        window[0] = True            # the hook now pushes the entry and publishes the tree
    elif event == "call" and code.co_name == "f":
        window[0] = False           # ... until the compiled code runs
    elif event == "call" and window[0]:
        events.append(f"{code.co_filename.rsplit('/', 1)[-1]}:{code.co_name}")

sys.setprofile(profile)
opt(torch.ones(2), 1)
opt(torch.ones(2), 2)
sys.setprofile(None)
pair = _C._telemetry_tree(f.__code__)
print(json.dumps([events, pair is not None, hasattr(telemetry, "encode_tree"),
                  _C.tree_stats(f.__code__)["nodes"]]))
'''


def test_tree_is_published_without_python(tmp_path):
    """Publishing a guard tree after a compile runs no Python function
    (core/teletext.c encodes it from the built tree): between the callback's
    return and the compiled code's first call no Python frame starts (before,
    the hook called telemetry.encode_tree, which read _C.tree_info back)."""
    out = subprocess.run([PY, "-c", TREE_IN_C], capture_output=True, text=True, env=env(),
                         cwd=str(tmp_path), timeout=300)
    assert out.returncode == 0, out.stderr
    events, published, python_encoder, nodes = json.loads(out.stdout.splitlines()[-1])
    assert events == []
    assert published and not python_encoder and nodes >= 2      # two entries: a switch on n


NO_BUILD = r'''
import json
import torch, dynamo
from dynamo import _C

def f(x):
    return x + 1

opt = dynamo.optimize("eager")(f)
opt(torch.ones(2))
before = _C._telemetry_tree(f.__code__)     # telemetry off: no tree built after the push
_C._telemetry_refresh()
still = _C._telemetry_tree(f.__code__)
opt(torch.ones(2))                          # the lookup builds it
after = _C._telemetry_tree(f.__code__)
print(json.dumps([before is None, still is None, after is not None,
                  _C.tree_stats(f.__code__)["lookups"]]))
'''


def test_tree_encoding_never_builds_a_tree(tmp_path):
    """The published form is read off the tree as built: with no tree built
    (DYNAMO_TELEMETRY=0: the hook does not build it after the push) neither
    the encoder nor refresh() builds one; the next lookup does."""
    out = subprocess.run([PY, "-c", NO_BUILD], capture_output=True, text=True,
                         env=env(DYNAMO_TELEMETRY="0"), cwd=str(tmp_path), timeout=300)
    assert out.returncode == 0, out.stderr
    before_none, still_none, after_built, lookups = json.loads(out.stdout.splitlines()[-1])
    assert before_none and still_none and after_built
    assert lookups == 1


def test_c_encoder_matches_its_python_twin():
    """_C._telemetry_encode (telemetry.encode) gives encode_py's bytes: on
    the records of a real capture (every graph node, guard and listing) and
    on the edges: int64 ends and beyond, bools, None, lone surrogates,
    other objects by str(), int and str subclasses, empty lists, nesting."""
    import enum
    import torch
    import dynamo
    from dynamo import records, telemetry

    class Color(enum.IntEnum):
        RED = 3

    class Name(str):
        pass

    edges = [0, -1, 2**63 - 1, 2**63, -2**63, -2**63 - 1, 10**40, True, False, None, "",
             "é\ud800x", Name("n"), Color.RED, 1.5, object.__new__(object).__class__, [],
             (), [[[]]], ("a", [1, ("b", None)], 2.0), torch.float32]
    for value in edges + [edges]:
        assert telemetry.encode(value) == telemetry.encode_py(value), value
    with pytest.raises(ValueError):
        deep = []
        for _ in range(40):
            deep = [deep]
        telemetry.encode(deep)

    def fn(x, y):
        if x.sum() > 0:
            return torch.relu(x) * y
        return x - y

    dynamo.reset()
    dynamo.optimize("eager")(fn)(torch.randn(4), torch.randn(4))
    recs = [r for r in records.all_records() if r.status == "ok"]
    assert recs
    for r in recs:
        payload = telemetry.record_value(r)
        assert len(payload[14]) >= 1 and len(payload[15]) >= 1       # graphs, guards
        assert telemetry.encode_record(r) == telemetry.encode_py(payload)
