"""Telemetry against a hostile machine (issue 29, items 3, 4, 5, 8, 9, 10).

- Small /dev/shm (item 3): the region's space is reserved (posix_fallocate)
  and sized from what is free; when even the smallest region does not fit,
  telemetry goes to anonymous memory with one warning line.  Filling
  /dev/shm afterwards (DataLoader workers) no longer kills the process
  with SIGBUS.  Runs in a private mount namespace over an 8 MiB tmpfs
  (`unshare -m`, root only; skipped otherwise).
- Terminal injection (item 4): command line, co_name and co_filename full
  of ESC/CSI/OSC, C1 controls (raw and UTF-8), BEL and a bidi override, in
  the region of another user's process; no byte of them reaches root's
  terminal from any tool or output format, and the JSON still round-trips
  the original text.
- Squatted region (item 5): a file another user plants under a process's
  name is refused by the writer (one warning line, anonymous memory) and by
  the readers (owner uid, pid and start time checked; the anchor is read
  instead); a file left by an earlier process with the same pid is refused.
- Leftovers (item 8): dynamo-top's process list removes the caller's files
  of dead processes and leaves other users' files and live ones alone;
  the writer removes a stale file of its own uid at its own name, but not
  one a live writer holds (flock: another pid namespace).
- `make asan` builds build/asan/dynamo-inspect (item 9).
- The test session's leftover check looks at its own children only (item 10).

Security tests run the other side as throwaway users (`useradd`, removed
afterwards); they are skipped with the reason where that is not allowed.
"""
import fcntl
import json
import os
import pwd
import re
import secrets
import shutil
import subprocess
import sys

import pytest

from shm_util import remove_shm, shm_path

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "readerfuzz"))
import crafted  # noqa: E402 - readerfuzz/crafted.py: DtHeader offsets, proc_start

ARGV = 264      # DtHeader.argv (char[512])
TOP = os.path.join(ROOT, "build", "bin", "dynamo-top")
DOT = os.path.join(ROOT, "build", "bin", "dynamo-dot")
CLI = os.path.join(ROOT, "build", "bin", "dynamo-inspect")

pytestmark = pytest.mark.skipif(not all(map(os.path.exists, (TOP, DOT, CLI))),
                                reason="tools not built (make all)")


def env(**extra):
    e = dict(os.environ)
    e["PYTHONPATH"] = ROOT + os.pathsep + e.get("PYTHONPATH", "")
    for k in ("DYNAMO_TELEMETRY", "DYNAMO_TELEMETRY_REDACT", "DYNAMO_TELEMETRY_KEEP"):
        e.pop(k, None)
    e.update(extra)
    return e


def run(cmd, timeout=120, **kw):
    return subprocess.run(list(map(str, cmd)), capture_output=True, timeout=timeout, **kw)


# ---------------------------------------------------------------- other users

class User:
    """A throwaway account.  It runs no Python (the interpreter may live
    where other users cannot reach it, e.g. under a 0700 /root): it plants
    files in /dev/shm and runs `sleep`, which is all an attacker needs."""

    def __init__(self, name):
        pw = pwd.getpwnam(name)
        self.name, self.uid, self.gid = name, pw.pw_uid, pw.pw_gid

    def _as(self):
        return dict(user=self.uid, group=self.gid, extra_groups=[])

    def plant(self, path, data):
        """Creates `path` (O_EXCL, 0644) holding `data`, as this user."""
        r = subprocess.run(["sh", "-c", 'set -C; umask 022; cat > "$0"', path], input=data,
                           capture_output=True, timeout=60, **self._as())
        assert r.returncode == 0, r.stderr

    def sleep(self):
        return subprocess.Popen(["sleep", "300"], **self._as())


def _useradd():
    if os.geteuid() != 0:
        pytest.skip("a second uid needs root (useradd)")
    if shutil.which("useradd") is None or shutil.which("userdel") is None:
        pytest.skip("no useradd/userdel on this machine")
    name = f"dynamo-test-{secrets.token_hex(3)}"
    r = run(["useradd", "--no-create-home", "--shell", "/usr/sbin/nologin", name])
    if r.returncode != 0:
        pytest.skip(f"useradd refused: {r.stderr.decode(errors='replace').strip()}")
    return User(name)


@pytest.fixture(scope="module")
def attacker():
    """A throwaway user; removed (with its processes) at the end."""
    user = _useradd()
    try:
        yield user
    finally:
        run(["pkill", "-KILL", "-u", str(user.uid)])     # that throwaway uid's processes only
        run(["userdel", user.name])


def wait_ready(proc):
    """The first stdout line of a workload ("ready <json>"), as JSON."""
    line = proc.stdout.readline().decode()
    if not line.startswith("ready"):
        proc.kill()
        raise AssertionError(f"workload failed: {line}{proc.stderr.read().decode()[-3000:]}")
    return json.loads(line[5:] or "{}")


def finish(proc):
    out, err = proc.communicate(timeout=120)       # closes stdin: the workload ends
    assert proc.returncode == 0, err.decode()[-3000:]
    return out.decode(), err.decode()


def start(script, *args):
    return subprocess.Popen([sys.executable, "-c", script, *args], env=env(),
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)


def stop(*procs):
    for p in procs:
        if p is not None and p.poll() is None:
            p.kill()
            p.wait()


def forged(region, pid, argv=None):
    """A copy of a region's bytes passing for process `pid`: its pid and
    start time (anyone can read /proc/PID/stat), and optionally argv."""
    data = bytearray(crafted.patch(region, pid=pid, proc_start=crafted.proc_start(pid)))
    if argv is not None:
        data[ARGV:ARGV + 512] = argv.ljust(512, b"\0")[:512]
    return bytes(data)


SNAP_REGION = r'''
import sys, torch, dynamo


def attacker_fn(x):
    return x - 1


dynamo.optimize("eager")(attacker_fn)(torch.ones(2))
sys.stdout.buffer.write(open(dynamo.telemetry.info()["path"], "rb").read())
'''


@pytest.fixture(scope="module")
def attacker_region():
    """The bytes of a real region (one compile of attacker_fn)."""
    r = subprocess.run([sys.executable, "-c", SNAP_REGION], env=env(), capture_output=True,
                       timeout=300)
    assert r.returncode == 0, r.stderr[-2000:]
    return r.stdout


# ---------------------------------------------------------------- item 4: terminal injection

EVIL = "\x1b]0;owned\x07\x1b[2J\x1b[31m\u009b1m\u202eevil"   # OSC title, CSI, C1 CSI, bidi
EVIL_ARG = b"\x1b]52;c;Y3VybCBldmlsLnNoCg==\x07\x9b31m"         # OSC 52 clipboard, raw C1

HOSTILE = r'''
import json, sys, torch, dynamo
EVIL = %r
ns = {}
exec(compile("def f(x):\n    return x + 1\n", EVIL + ".py", "exec"), ns)
f = ns["f"]
f.__code__ = f.__code__.replace(co_name="f" + EVIL)
g = dynamo.optimize("eager")(f)
assert g(torch.ones(2)).tolist() == [2.0, 2.0]
print("ready", json.dumps({"path": dynamo.telemetry.info()["path"]}), flush=True)
sys.stdin.read()
''' % EVIL

FORBIDDEN = [b"\x1b", b"\x07", b"\x9b", "\u009b".encode(), "\u202e".encode()]


def assert_clean(what, data):
    for bad in FORBIDDEN:
        assert bad not in data, (what, bad, data[:3000])


@pytest.fixture(scope="module")
def hostile(attacker, tmp_path_factory):
    """A process of another user (its `sleep`) whose region's command line,
    co_name and co_filename carry terminal controls: a real region of a
    hostile workload, planted by that user for its own process (owner,
    pid and start time all match: the readers accept it)."""
    script = tmp_path_factory.mktemp("hostile") / "hostile.py"
    script.write_text(HOSTILE)      # a file: the argument stays inside argv's 512 bytes
    work = subprocess.Popen([sys.executable, str(script), EVIL_ARG], env=env(),
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    victim = attacker.sleep()
    try:
        info = wait_ready(work)
        with open(info["path"], "rb") as f:
            attacker.plant(shm_path(victim.pid), forged(f.read(), victim.pid))
        finish(work)
        yield victim
    finally:
        stop(work, victim)
        remove_shm(victim.pid)


def test_no_tool_prints_another_process_text_raw(hostile, tmp_path):
    """dynamo-dot --list / --list-processes and dynamo-inspect --summary
    printed co_name, co_filename and the command line raw (root's terminal
    took the attacker's OSC/CSI sequences).  Every output is clean now, in
    every format."""
    pid = str(hostile.pid)
    snap = tmp_path / "hostile.dyn"
    assert run([CLI, "-p", pid, "--save", snap]).returncode == 0
    outputs = {}
    for name, cmd in {
        "dot --list": [DOT, "-p", pid, "--list"],
        "dot --list-processes": [DOT, "--list-processes"],
        "dot --guards dot": [DOT, "-p", pid, "--guards", "0", "-T", "dot"],
        "dot --breaks svg": [DOT, "-p", pid, "--breaks", "0", "-T", "svg"],
        "dot --graph dot": [DOT, "-p", pid, "--graph", "0/0", "-T", "dot"],
        "dot unknown frame": [DOT, "-p", pid, "--guards", "nope"],
        "inspect --summary": [CLI, "-p", pid, "--summary"],
        "inspect --file --summary": [CLI, "--file", snap, "--summary"],
        "inspect json": [CLI, "-p", pid],
        "inspect --diagnose": [CLI, "-p", pid, "--diagnose"],
        "top --once": [TOP, "--once", pid],
        "top list": [TOP],
    }.items():
        r = run(cmd)
        outputs[name] = r
        assert_clean(name, r.stdout + r.stderr)
    listing = outputs["dot --list"]
    assert listing.returncode == 0 and b"evil" in listing.stdout, listing
    assert b"Y3VybCBldmlsLnNo" in listing.stdout                     # the argument is shown
    assert pid.encode() in outputs["dot --list-processes"].stdout
    assert outputs["inspect --summary"].returncode == 0
    assert b"evil" in outputs["inspect --summary"].stdout
    assert outputs["dot unknown frame"].returncode == 2
    for name in ("dot --guards dot", "dot --breaks svg", "dot --graph dot", "top --once"):
        assert outputs[name].returncode == 0, (name, outputs[name])
    # JSON escapes instead of replacing: the text survives, byte for byte.
    d = json.loads(outputs["inspect json"].stdout)
    assert d["frames"][0]["name"] == "f" + EVIL and d["frames"][0]["filename"] == EVIL + ".py"
    assert "\x1b]52;c;Y3VybCBldmlsLnNoCg==\x07\ufffd31m" in d["process"]["argv"]


ASAN = {"dynamo-top": os.path.join(ROOT, "build", "asan", "bin", "dynamo-top"),
        "dynamo-dot": os.path.join(ROOT, "build", "asan", "dynamo-dot"),
        "dynamo-inspect": os.path.join(ROOT, "build", "asan", "dynamo-inspect")}


def test_hostile_text_under_asan(hostile):
    """The same process through the ASan/UBSan builds of all three tools
    (`make asan` builds them): clean output, no sanitizer report."""
    missing = [k for k, v in ASAN.items() if not os.path.exists(v)]
    if missing:
        pytest.skip(f"no ASan build of {', '.join(missing)}: run `make asan`")
    supp = os.path.join(ROOT, "viz", "lsan.supp")       # Graphviz/fontconfig keep caches
    asan_env = dict(os.environ, ASAN_OPTIONS="detect_leaks=1",
                    LSAN_OPTIONS=f"suppressions={supp}:print_suppressions=0",
                    UBSAN_OPTIONS="halt_on_error=1:print_stacktrace=1")
    pid = str(hostile.pid)
    for cmd in ([ASAN["dynamo-dot"], "-p", pid, "--list"], [ASAN["dynamo-dot"], "--list-processes"],
                [ASAN["dynamo-dot"], "-p", pid, "--guards", "0", "-T", "svg"],
                [ASAN["dynamo-inspect"], "-p", pid], [ASAN["dynamo-inspect"], "-p", pid, "--summary"],
                [ASAN["dynamo-top"], "--once", pid], [ASAN["dynamo-top"]]):
        r = run(cmd, env=asan_env)
        err = r.stderr.decode(errors="replace")
        assert r.returncode == 0 and "Sanitizer" not in err and "runtime error" not in err, (cmd, err)
        assert_clean(cmd, r.stdout + r.stderr)


def test_escaping_is_one_walker():
    """The tools share one escaping implementation (inspect/strutil.c):
    dynamo-top's cleaning moved there, dynamo-dot's label escaping and
    dynamo-inspect's JSON strings call it."""
    util = open(os.path.join(ROOT, "tui", "util.c")).read()
    vstr = open(os.path.join(ROOT, "viz", "vstr.c")).read()
    cli = open(os.path.join(ROOT, "inspect", "cli.c")).read()
    assert "xstrdup_clean" not in util and "utf8" not in vstr.lower()
    assert "sb_add_escaped" in vstr and "STR_JSON" in cli
    assert "char *xstrdup_clean" in open(os.path.join(ROOT, "inspect", "strutil.c")).read()


# ---------------------------------------------------------------- item 5: squatted region

VICTIM = r'''
import json, sys
sys.stdin.readline()                    # the test plants the file first
import torch, dynamo


def victim_fn(x):
    return x * 3


assert dynamo.optimize("eager")(victim_fn)(torch.ones(2)).tolist() == [3.0, 3.0]
i = dynamo.telemetry.info()
print("ready", json.dumps({"path": i["path"], "warning": i.get("warning", "")}), flush=True)
sys.stdin.read()
'''


def test_squatted_region_is_refused_by_writer_and_readers(attacker, attacker_region):
    """Another user creates /dev/shm/dynamo-<pid> (a real region, with the
    pid, start time and a command line of its choosing) for a process that
    is about to import dynamo.  The writer switched to anonymous memory
    silently (or, as root, deleted the file), and dynamo-top /
    dynamo-inspect showed the attacker's frames and command line as the
    process's.  Now the writer says so in one line, and the readers refuse
    the file (its owner is not the process's uid) and read the process's
    own region through its memory."""
    v = start(VICTIM)
    sleeper = subprocess.Popen(["sleep", "300"])
    try:
        for pid in (v.pid, sleeper.pid):
            attacker.plant(shm_path(pid), forged(attacker_region, pid, b"victim --secret"))
        v.stdin.write(b"go\n")
        v.stdin.flush()
        info = wait_ready(v)
        assert info["path"] == "" and "belongs to uid %d" % attacker.uid in info["warning"], info
        assert os.stat(shm_path(v.pid)).st_uid == attacker.uid
        r = run([CLI, "-p", v.pid])
        assert r.returncode == 0, r.stderr
        d = json.loads(r.stdout)
        assert [f["name"] for f in d["frames"]] == ["victim_fn"], d["frames"]
        assert d["process"]["source"].startswith("anchor") and "secret" not in d["process"]["argv"]
        r = run([CLI, "-p", v.pid, "--shm-only"])
        assert r.returncode == 8, r
        assert b"owned by uid %d" % attacker.uid in r.stderr and b"refused" in r.stderr
        for tool in ([TOP, "--once", v.pid], [DOT, "-p", v.pid, "--list"]):
            r = run(tool)
            assert r.returncode == 0 and b"attacker_fn" not in r.stdout, (tool, r)
            assert b"victim_fn" in r.stdout and b"secret" not in r.stdout, (tool, r)
        # A process without dynamo: nothing else to read, the refusal is the answer.
        for tool in ([CLI, "-p", sleeper.pid], [TOP, "--once", sleeper.pid],
                     [DOT, "-p", sleeper.pid, "--list"]):
            r = run(tool)
            assert r.returncode == 8 and b"owned by uid %d" % attacker.uid in r.stderr, (tool, r)
            assert b"attacker_fn" not in r.stdout
        _, err = finish(v)
        assert err.count("dynamo telemetry:") == 1, err     # the one warning line
    finally:
        stop(v, sleeper)
        remove_shm(v.pid)
        remove_shm(sleeper.pid)


def test_file_of_an_earlier_process_with_the_same_pid_is_refused(attacker_region):
    """A region whose pid is alive but started at another time (the pid was
    reused) is not that process's: it was shown as the new process's."""
    sleeper = subprocess.Popen(["sleep", "120"])
    try:
        data = crafted.patch(attacker_region, pid=sleeper.pid,
                             proc_start=crafted.proc_start(sleeper.pid) - 1)
        with open(shm_path(sleeper.pid), "wb") as f:
            f.write(data)
        for cmd in ([CLI, "-p", sleeper.pid], [TOP, "--once", sleeper.pid]):
            r = run(cmd)
            assert r.returncode == 8 and b"earlier process" in r.stderr, (cmd, r)
    finally:
        stop(sleeper)
        remove_shm(sleeper.pid)


# ---------------------------------------------------------------- item 8: leftovers

WAIT = r'''
import json, sys, dynamo
print("ready", json.dumps({"path": dynamo.telemetry.info()["path"]}), flush=True)
sys.stdin.read()
'''


def test_process_list_removes_the_callers_files_of_dead_processes(attacker, attacker_region):
    """Files left by SIGKILL (and os._exit, faulthandler aborts, uid
    changes) stayed for ever.  dynamo-top's process list removes the
    caller's, and leaves another user's and a live process's alone."""
    mine, live, theirs = start(WAIT), start(WAIT), attacker.sleep()
    try:
        for p in (mine, live):
            assert wait_ready(p)["path"] == shm_path(p.pid)
        attacker.plant(shm_path(theirs.pid), forged(attacker_region, theirs.pid))
        stop(mine, theirs)
        assert os.path.exists(shm_path(mine.pid)) and os.path.exists(shm_path(theirs.pid))
        r = run([TOP])
        assert r.returncode == 0, r.stderr
        assert not os.path.exists(shm_path(mine.pid)), r.stdout
        assert b"removed" in r.stdout and b"of your exited processes" in r.stdout
        assert os.path.exists(shm_path(theirs.pid)) and os.path.exists(shm_path(live.pid))
        assert str(live.pid).encode() in r.stdout
    finally:
        stop(mine, live, theirs)
        for p in (mine, live, theirs):
            remove_shm(p.pid)


EXEC_AGAIN = r'''
import os, sys
sys.stdin.readline()                    # the test prepares the file first
os.execv(sys.executable, [sys.executable, "-c", """
import json, sys, dynamo
i = dynamo.telemetry.info()
print("ready", json.dumps({"path": i["path"], "warning": i.get("warning", "")}), flush=True)
sys.stdin.read()
"""])
'''


@pytest.mark.parametrize("held", [False, True], ids=["stale", "held"])
def test_writer_takes_over_only_an_unheld_file_of_its_own_uid(held):
    """At its own name the writer finds a file of its uid: a dead process's
    (same pid, e.g. before an exec) is removed and replaced; one that a live
    writer holds (flock: a process in another pid namespace sharing
    /dev/shm) was deleted from under it, and is left alone now."""
    p = start(EXEC_AGAIN)
    holder = None
    try:
        with open(shm_path(p.pid), "wb") as f:
            f.write(b"DYNTELEM" + bytes(4088))
        if held:
            holder = open(shm_path(p.pid), "rb")
            fcntl.flock(holder, fcntl.LOCK_SH)
        p.stdin.write(b"go\n")
        p.stdin.flush()
        info = wait_ready(p)
        if held:
            assert info["path"] == "" and "held by a live process" in info["warning"], info
            assert os.path.getsize(shm_path(p.pid)) == 4096
        else:
            assert info["path"] == shm_path(p.pid) and info["warning"] == "", info
        finish(p)
    finally:
        if holder is not None:
            holder.close()
        stop(p)
        remove_shm(p.pid)


# ---------------------------------------------------------------- item 3: small /dev/shm

def in_small_shm(script, fill_kib=0, timeout=300):
    """Runs python -c script with /dev/shm an 8 MiB tmpfs of its own (a
    private mount namespace), fill_kib of it taken first."""
    if os.geteuid() != 0 or shutil.which("unshare") is None:
        pytest.skip("a private tmpfs needs root and unshare(1)")
    probe = run(["unshare", "-m", "sh", "-c", "mount -t tmpfs -o size=8m tmpfs /dev/shm"])
    if probe.returncode != 0:
        pytest.skip(f"this machine forbids mounts: {probe.stderr.decode().strip()}")
    fill = f"dd if=/dev/zero of=/dev/shm/other bs=1k count={fill_kib} status=none && " \
        if fill_kib else ""
    shell = f'mount -t tmpfs -o size=8m tmpfs /dev/shm && {fill}exec "$0" -c "$1"'
    return run(["unshare", "-m", "sh", "-c", shell, sys.executable, script], env=env(),
               timeout=timeout)


COMPILE_AFTER_FILL = r'''
import json, torch, dynamo
i = dynamo.telemetry.info()
out = {k: i.get(k, "") for k in ("path", "warning", "codes_cap", "region_size")}
with open("/dev/shm/dataloader", "wb", buffering=0) as f:   # someone fills /dev/shm
    try:
        while True:
            f.write(bytes(65536))
    except OSError:
        pass
results = [float(dynamo.optimize("eager")(eval("lambda x: x + %d" % k))(torch.ones(1)))
           for k in range(30)]
out["ok"] = results == [1.0 + k for k in range(30)]
out["n_codes"] = dynamo.telemetry.info()["n_codes"]
print(json.dumps(out))
'''


def test_region_reserved_and_sized_from_a_small_shm():
    """An 8 MiB /dev/shm: the region (54 MiB, sparse) died of SIGBUS as soon
    as someone else filled /dev/shm and a compile touched a new page.  It is
    now sized to at most a quarter of the free space and reserved whole."""
    r = in_small_shm(COMPILE_AFTER_FILL)
    assert r.returncode == 0, (r.returncode, r.stderr[-3000:])
    out = json.loads(r.stdout)
    assert out["ok"] and out["path"].startswith("/dev/shm/dynamo-") and out["warning"] == ""
    assert out["region_size"] <= 2 << 20 and out["codes_cap"] == 128 and out["n_codes"] == 30


def test_no_room_in_shm_means_anonymous_memory_and_one_warning():
    """/dev/shm nearly full: not even the smallest region fits.  Telemetry
    goes to anonymous memory, says so once, and compiling works."""
    r = in_small_shm(COMPILE_AFTER_FILL, fill_kib=8192 - 8)
    assert r.returncode == 0, (r.returncode, r.stderr[-3000:])
    out = json.loads(r.stdout)
    assert out["ok"] and out["path"] == "" and "cannot reserve" in out["warning"], out
    err = r.stderr.decode()
    assert err.count("dynamo telemetry:") == 1 and "anonymous memory" in err, err


# ---------------------------------------------------------------- item 9: make asan

def test_make_asan_builds_all_three_tools():
    """`make asan` built the ASan dynamo-top and dynamo-dot, not
    dynamo-inspect (tests ran a stale or missing one)."""
    r = run(["make", "-n", "-W", "inspect/cli.c", "asan", f"PYTHON={sys.executable}", "VENV=none"],
            cwd=ROOT, timeout=300)
    assert r.returncode == 0, r.stderr[-2000:]
    plan = r.stdout.decode()
    assert "-o build/asan/dynamo-inspect" in plan, plan[-3000:]


# ---------------------------------------------------------------- item 10: the session check

INNER = r'''
import os, signal, subprocess, sys


def dead_pid():
    pid = int(open("/proc/sys/kernel/pid_max").read()) - 1
    while True:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return pid
        except PermissionError:
            pass
        pid -= 1


def test_someone_else_leaves_a_file():
    """Another program on the machine leaves a file of a dead process."""
    path = f"/dev/shm/dynamo-{dead_pid()}"
    open(path, "wb").close()
    print("FOREIGN", path)


def test_own_child_leaves_a_file():
    if os.environ.get("INNER_OWN") != "1":
        return
    p = subprocess.Popen([sys.executable, "-c", "import dynamo, sys; print('up', flush=True); "
                          "sys.stdin.read()"], stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    p.stdout.readline()
    p.send_signal(signal.SIGKILL)
    p.wait()
    print("OWN", f"/dev/shm/dynamo-{p.pid}")
'''


@pytest.mark.parametrize("own", [False, True], ids=["foreign", "own-child"])
def test_session_check_looks_at_its_own_children(tmp_path, own):
    """The session check failed `make test` when any process on the machine
    left a /dev/shm/dynamo-* file during the run.  A foreign file is ignored
    now; a file of a process the session started still fails it."""
    for name in ("conftest.py", "shm_util.py"):
        shutil.copy(os.path.join(ROOT, "tests", name), tmp_path / name)
    (tmp_path / "test_inner.py").write_text(INNER)
    r = run([sys.executable, "-m", "pytest", "-q", "-s", "-p", "no:cacheprovider",
             "--rootdir", tmp_path, tmp_path / "test_inner.py"], cwd=tmp_path, timeout=300,
            env=env(INNER_OWN="1" if own else "0"))
    out = r.stdout.decode()
    left = dict(re.findall(r"(FOREIGN|OWN) (/dev/shm/dynamo-\d+)", out))
    for path in left.values():
        try:
            os.unlink(path)
        except FileNotFoundError:
            pass
    assert "FOREIGN" in left, out
    if own:
        assert r.returncode == 1 and "left behind by dead test processes" in out, out
        report = out.split("left behind by dead test processes")[1]
        assert left["OWN"] in report and left["FOREIGN"] not in report, out
    else:
        assert r.returncode == 0, out
