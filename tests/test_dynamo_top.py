"""dynamo-top (tui/): the report, the interactive view in tmux, every error.

A real workload process (tests/workloads/dynamo_workload.py) compiles,
breaks a graph, recompiles and hits the cache limit; the tool attaches to
it by pid.  The interactive view is driven in a detached tmux session
(200x50) with send-keys and read back with capture-pane; the same drive runs
against the AddressSanitizer build with leak detection.
"""
import os
import re
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
import time
import uuid
PYVER = "%d.%d" % sys.version_info[:2]

import pytest

from shm_util import kill_and_remove_shm, remove_shm

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BIN = os.path.join(ROOT, "build", "bin", "dynamo-top")
ASAN_BIN = os.path.join(ROOT, "build", "asan", "bin", "dynamo-top")
WORKLOAD = os.path.join(ROOT, "tests", "workloads", "dynamo_workload.py")
PYTHON = sys.executable

# Exit statuses (dynamo-top --help, inspect/reader.h dr_exit_code).
EXIT_USAGE, EXIT_NOPROC, EXIT_NODYNAMO, EXIT_PERM, EXIT_VERSION, EXIT_CORRUPT = 2, 3, 4, 5, 6, 7

needs_tmux = pytest.mark.skipif(shutil.which("tmux") is None,
                                reason="tmux is not installed (make deps installs it)")


def make(*targets):
    """Builds targets; returns the combined output (raises on failure)."""
    out = subprocess.run(["make", "-C", ROOT, *targets], capture_output=True, text=True)
    assert out.returncode == 0, out.stdout + out.stderr
    return out.stdout + out.stderr


@pytest.fixture(scope="module")
def tool():
    make("build/bin/dynamo-top")
    return BIN


def start_workload(*args):
    env = dict(os.environ, PYTHONPATH=ROOT, PYTHONUNBUFFERED="1")
    proc = subprocess.Popen([PYTHON, WORKLOAD, *args], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=env)
    line = proc.stdout.readline()          # "READY <pid>" once everything compiled
    if not line.startswith("READY"):
        kill_and_remove_shm(proc)
        raise AssertionError(f"workload did not start: {line!r} {proc.stderr.read()}")
    return proc


def stop(proc):
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
    remove_shm(proc.pid)    # SIGTERM's handler removed it; SIGKILL (timeout) leaves it


@pytest.fixture(scope="module")
def workload():
    proc = start_workload()
    yield proc
    stop(proc)


def run(tool, *args, **kw):
    return subprocess.run([tool, *map(str, args)], capture_output=True, text=True, timeout=60, **kw)


# ---- the build ------------------------------------------------------------------

def test_builds_warning_free():
    # -W pretends the source changed: recompiles dynamo-top (only) with -Werror
    out = make("-W", "tui/main.c", "build/bin/dynamo-top")
    assert "warning" not in out.lower()
    assert os.access(BIN, os.X_OK)


def test_help(tool):
    r = run(tool, "--help")
    assert r.returncode == 0
    for word in ("--once", "--iterations", "-p PID", "--save", "--file", "Exit status"):
        assert word in r.stdout
    r = run(tool, "--bogus")
    assert r.returncode == EXIT_USAGE


# ---- the report -----------------------------------------------------------------

def test_once_report_names_everything(tool, workload):
    r = run(tool, "--once", "-p", workload.pid)
    assert r.returncode == 0, r.stderr
    out = r.stdout
    # header
    assert f"pid {workload.pid}" in out and f"Python {PYVER}" in out and "[LIVE]" in out
    # frames: the three functions and the resume functions of the break
    for name in ("toy_example", "mlp_step", "churn", "__resume_at_"):
        assert name in out
    # graph ops with shapes
    assert "call_function" in out and "abs" in out and "relu" in out
    assert "float32[10]" in out
    # guards
    assert "TENSOR_MATCH" in out and "L['a']" in out
    # the break reason and its user frame
    assert "generic_jump" in out and "dynamo_workload.py:" in out
    # the recompile trigger of mlp_step and the cache limit of churn
    assert "expected 5, actual 7" in out
    assert "LIMIT \u2192 eager" in out
    assert "cache_size_limit hit" in out
    # entries live/limit: the limit (3) is published per code, known for every frame
    frames = out.split("\nFRAMES\n", 1)[1].split("\nTREE\n", 1)[0]
    rows = {name: line for line in frames.splitlines() for name in ("churn", "toy_example")
            if re.match(rf"\s*{name}\s", line)}
    assert re.search(r"\s3/3\s", rows["churn"]) and re.search(r"\s1/3\s", rows["toy_example"])
    assert "/?" not in frames
    # bytecode side by side
    assert "ORIGINAL BYTECODE" in out and "MODIFIED BYTECODE" in out
    # tree: entries to graphs and resume functions
    assert "[0/0]" in out and "graph __compiled_fn" in out and "resume __resume_at_" in out
    # which side of the break each resume function continues, and its frame
    # (warm_up ran both sides)
    resumes = re.findall(r"resume (__resume_at_(\d+)_\d+)  (branch taken|fall-through) @(\d+)"
                         r"  -> frame \[(\d+)\]", out)
    assert sorted(kind for _, _, kind, _, _ in resumes) == ["branch taken", "fall-through"]
    assert all(at_name == at for _, at_name, _, at, _ in resumes)
    for name, _, _, _, fid in resumes:
        assert f"==== FRAME [{fid}] {name} " in out
    # graph tab: qualified module paths and classes of TinyNet's nodes
    assert re.search(r"call_module\s+self_block_proj\s.*\sblock\.proj \(Linear\)", out)
    assert re.search(r"call_function\s+relu\s.*\sblock \(Block\)", out)
    assert re.search(r"call_module\s+self_head\s.*\shead \(Linear\)", out)
    # events
    assert "recompile" in out and "EVENTS" in out


def test_once_iterations(tool, workload):
    r = run(tool, "--once", "--iterations", "2", "--delay", "0.1", workload.pid)
    assert r.returncode == 0, r.stderr
    assert r.stdout.count("dynamo-top  pid") == 2


def test_list_processes(tool, workload):
    r = run(tool)
    assert r.returncode == 0, r.stderr
    assert str(workload.pid) in r.stdout and PYVER in r.stdout


def test_save_and_file(tool, workload, tmp_path):
    snap = tmp_path / "w.snap"
    r = run(tool, "-p", workload.pid, "--save", snap)
    assert r.returncode == 0, r.stderr
    assert snap.exists()
    r = run(tool, "--once", "--file", snap)
    assert r.returncode == 0, r.stderr
    assert "[SNAPSHOT]" in r.stdout and "toy_example" in r.stdout and "generic_jump" in r.stdout


# ---- errors ---------------------------------------------------------------------

def free_pid():
    pid = 4_000_000
    while os.path.exists(f"/proc/{pid}"):
        pid -= 1
    return pid


def test_no_such_pid(tool):
    pid = free_pid()
    r = run(tool, "--once", "-p", pid)
    assert r.returncode == EXIT_NOPROC
    assert str(pid) in r.stderr
    assert "no process" in r.stderr.lower() or "no such process" in r.stderr.lower()


def test_pid_without_dynamo(tool):
    sleeper = subprocess.Popen(["sleep", "60"])
    try:
        r = run(tool, "--once", "-p", sleeper.pid)
    finally:
        sleeper.kill()
        sleeper.wait()
    assert r.returncode == EXIT_NODYNAMO
    assert str(sleeper.pid) in r.stderr and "dynamo" in r.stderr


def test_permission_denied(tool, workload, tmp_path):
    if os.geteuid() != 0 or shutil.which("setpriv") is None:
        pytest.skip("needs root and setpriv to run the tool as another user")
    copy = tmp_path / "dynamo-top"
    shutil.copy(tool, copy)
    os.chmod(tmp_path, 0o755)
    os.chmod(copy, 0o755)
    r = subprocess.run(["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups",
                        str(copy), "--once", "-p", str(workload.pid)],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == EXIT_PERM, r.stderr
    assert "permission denied" in r.stderr.lower()
    assert "root" in r.stderr                       # how to grant it


@pytest.fixture
def snapshot(tool, workload, tmp_path):
    snap = tmp_path / "good.snap"
    r = run(tool, "-p", workload.pid, "--save", snap)
    assert r.returncode == 0, r.stderr
    return snap


def test_version_mismatch(tool, snapshot, tmp_path):
    data = bytearray(snapshot.read_bytes())
    data[8:12] = (99).to_bytes(4, "little")        # DtHeader.version
    bad = tmp_path / "v99.snap"
    bad.write_bytes(bytes(data))
    r = run(tool, "--once", "--file", bad)
    assert r.returncode == EXIT_VERSION
    assert "version" in r.stderr and "99" in r.stderr


def test_truncated_snapshot(tool, snapshot, tmp_path):
    data = snapshot.read_bytes()
    bad = tmp_path / "cut.snap"
    bad.write_bytes(data[: len(data) // 2])
    r = run(tool, "--once", "--file", bad)
    assert r.returncode == EXIT_CORRUPT, r.stdout + r.stderr
    assert r.stderr.startswith("dynamo-top: ")


def test_corrupt_snapshot(tool, snapshot, tmp_path):
    data = bytearray(snapshot.read_bytes())
    for off in range(4096, len(data), 61):          # scribble over tables and blobs
        data[off] = 0xFF
    bad = tmp_path / "scribbled.snap"
    bad.write_bytes(bytes(data))
    r = run(tool, "--once", "--file", bad)
    # the reader validates every offset: either a clear error or a report, never a crash
    assert r.returncode in (0, EXIT_CORRUPT), r.stderr
    assert r.returncode >= 0
    garbage = tmp_path / "garbage.snap"
    garbage.write_bytes(b"not a snapshot at all" * 100)
    r = run(tool, "--once", "--file", garbage)
    assert r.returncode in (EXIT_CORRUPT, EXIT_NODYNAMO), r.stderr
    assert "garbage.snap" in r.stderr


def test_missing_snapshot_file(tool, tmp_path):
    r = run(tool, "--once", "--file", tmp_path / "nope.snap")
    assert r.returncode != 0 and "nope.snap" in r.stderr


def test_interactive_needs_a_terminal(tool, workload):
    r = run(tool, "-p", workload.pid, stdin=subprocess.DEVNULL)
    assert r.returncode == 1 and "--once" in r.stderr


# ---- the interactive view in tmux -----------------------------------------------

class Tmux:
    """One detached tmux server+session (own socket) running one command."""

    def __init__(self, command, cwd, env=None):
        self.socket = f"dyntop-{uuid.uuid4().hex[:8]}"
        self.cwd = cwd
        full_env = dict(os.environ, LANG="C.UTF-8", LC_ALL="C.UTF-8", TERM="xterm-256color")
        full_env.pop("TMUX", None)
        full_env.update(env or {})
        self.tmux(["new-session", "-d", "-x", "200", "-y", "50", "-s", "t", command],
                  env=full_env)

    def tmux(self, args, env=None, check=True):
        return subprocess.run(["tmux", "-L", self.socket, "-f", "/dev/null", *args],
                              capture_output=True, text=True, cwd=self.cwd, env=env,
                              check=check, timeout=30)

    def keys(self, *keys):
        for k in keys:
            self.tmux(["send-keys", "-t", "t", k])
            time.sleep(0.15)

    def type(self, text):
        self.tmux(["send-keys", "-t", "t", "-l", text])
        time.sleep(0.15)

    def screen(self):
        r = self.tmux(["capture-pane", "-p", "-t", "t"], check=False)
        return r.stdout

    def wait_for(self, *texts, timeout=15.0):
        """The screen once every one of `texts` is on it (a capture can
        land mid-repaint: the top lines drawn, the footer not yet)."""
        deadline = time.monotonic() + timeout
        screen = ""
        while time.monotonic() < deadline:
            screen = self.screen()
            if all(text in screen for text in texts):
                return screen
            time.sleep(0.1)
        raise AssertionError(f"{texts!r} not all on screen:\n{screen}")

    def wait_gone(self, text, timeout=10.0):
        deadline = time.monotonic() + timeout
        screen = ""
        while time.monotonic() < deadline:
            screen = self.screen()
            if text not in screen:
                return screen
            time.sleep(0.1)
        raise AssertionError(f"{text!r} still on screen:\n{screen}")

    def alive(self):
        return self.tmux(["has-session", "-t", "t"], check=False).returncode == 0

    def close(self):
        self.tmux(["kill-server"], check=False)


def table_part(screen):
    """The frame table: the lines above the tab bar."""
    lines = screen.splitlines()
    for i, line in enumerate(lines):
        if "1 Graph" in line and "2 Bytecode" in line:
            return "\n".join(lines[:i])
    return screen


def detail_part(screen):
    lines = screen.splitlines()
    for i, line in enumerate(lines):
        if "1 Graph" in line and "2 Bytecode" in line:
            return "\n".join(lines[i + 1:])
    return ""


def drive_session(binary, pid, workdir, env=None):
    """Walks through every tab, search, filter, tree, sort, pause (scrolling
    while paused), help, reset, interval, save, quit.  Returns (exit status,
    stderr text, screens dict)."""
    status = os.path.join(workdir, "status")
    errfile = os.path.join(workdir, "stderr")
    cmd = f"{binary} -p {pid} --delay 0.25 2>{errfile}; echo $? > {status}; sleep 30"
    t = Tmux(cmd, cwd=workdir, env=env)
    screens = {}
    try:
        s = t.wait_for("toy_example", "F10Quit")
        assert "LIVE" in s and f"pid {pid}" in s
        for tab in ("1 Graph", "2 Bytecode", "3 Guards", "4 Breaks", "5 Recompiles", "6 Events"):
            assert tab in s
        assert "F1Help" in s and "F10Quit" in s

        # search: jump to toy_example and drill through every tab
        t.keys("/")
        t.wait_for("Search:")
        t.type("toy_ex")
        t.keys("Enter")
        t.wait_for("search: toy_ex")
        t.keys("1")
        screens["graph"] = s = t.wait_for("OPCODE")
        assert "call_function" in detail_part(s) and "float32[10]" in detail_part(s)
        t.keys("2")
        screens["bytecode"] = s = t.wait_for("ORIGINAL BYTECODE")
        assert "MODIFIED BYTECODE" in s
        t.keys("3")
        screens["guards"] = s = t.wait_for("TENSOR_MATCH")
        assert "FAILS" in detail_part(s)
        t.keys("4")
        screens["breaks"] = s = t.wait_for("generic_jump")
        assert "dynamo_workload.py:" in detail_part(s)
        t.keys("6")
        screens["events"] = s = t.wait_for("compile ")
        assert "recompile" in detail_part(s)
        t.keys("Tab")       # wraps to the first tab
        t.wait_for("OPCODE")

        # search with F3 for mlp_step, then its recompile trigger
        t.keys("F3")
        t.wait_for("Search:")
        t.type("mlp_step")
        t.keys("Enter")
        t.keys("5")
        screens["recompiles"] = s = t.wait_for("expected 5, actual 7")

        # Enter drills into the detail panel, Esc comes back
        t.keys("3", "Enter")
        t.wait_for("(Esc: back)")
        t.keys("Escape")
        t.wait_gone("(Esc: back)")

        # filter
        t.keys("\\")
        t.wait_for("Filter:")
        t.type("churn")
        t.keys("Enter")
        s = t.wait_for("filter: churn")
        table = table_part(s)
        assert "churn" in table and "toy_example" not in table and "mlp_step" not in table
        assert "LIMIT \u2192 eager" in table
        screens["filter"] = s
        t.keys("Escape")                      # Esc in the table clears the filter
        t.wait_for("filter cleared")
        t.keys("F4")
        t.wait_for("Filter:")
        t.keys("Escape")
        s = t.wait_for("toy_example", "F10Quit")

        # tree
        t.keys("t")
        screens["tree"] = s = t.wait_for("tree view")
        table = table_part(s)
        assert re.search(r"\[\d+/1\] ok .* trigger: L\['x'\]", table)     # entries below frames
        assert "graph __compiled_fn" in table
        t.keys("F5")
        t.wait_for("table view")

        # sort
        t.keys(">")
        s = t.wait_for("sorted by FILE:LINE")
        t.keys("F6")
        s = t.wait_for("sorted by CALLS")
        assert "sort CALLS" in s
        t.keys("<")
        t.wait_for("sorted by FILE:LINE")
        t.keys("<")
        t.wait_for("sorted by FUNCTION")
        t.keys("I")
        t.wait_for("sort order inverted")

        # pause: frozen but still scrollable
        t.keys("Space")
        s = t.wait_for("PAUSED")
        t.keys("2")                           # bytecode: long text
        before = detail_part(t.wait_for("ORIGINAL BYTECODE"))
        t.keys("Enter", "PageDown")
        after = detail_part(t.screen())
        assert after != before, "PageDown while paused did not scroll"
        assert "PAUSED" in t.screen()
        t.keys("Escape", "Down", "Up")
        assert "PAUSED" in t.screen()
        screens["paused"] = t.screen()
        # reset while paused: the frozen view shows zeros (the tool's baseline,
        # the process keeps its counters)
        t.keys("r")
        s = t.wait_for("counters reset")
        assert re.search(r"^calls 0  hit -  compiles 0  recompiles 0  breaks 0", s, re.M), s
        t.keys("Space")
        t.wait_for("resumed")
        t.wait_for("LIVE")

        # help
        t.keys("F1")
        screens["help"] = t.wait_for("dynamo-top keys")
        t.keys("x")
        t.wait_gone("dynamo-top keys")
        t.keys("?")
        t.wait_for("dynamo-top keys")
        t.keys("Escape")
        t.wait_gone("dynamo-top keys")

        # after the reset the numbers count again from zero: fewer calls than the process made
        s = t.screen()
        calls_after_reset = int(re.search(r"^calls (\d+)", s, re.M).group(1))
        r = run(binary, "--once", "-p", pid)
        assert calls_after_reset < int(re.search(r"^calls (\d+)", r.stdout, re.M).group(1))

        # refresh interval
        t.keys("+")
        t.wait_for("refresh interval 0.5 s")
        t.keys("-", "-")
        t.wait_for("refresh interval 0.1 s")

        # save
        t.keys("s")
        s = t.wait_for("saved snapshot to")
        screens["saved"] = s
        snaps = [f for f in os.listdir(workdir) if f.endswith(".snap")]
        assert len(snaps) == 1

        screens["main"] = t.screen()
        t.keys("q")
        deadline = time.monotonic() + 10
        while not os.path.exists(status) and time.monotonic() < deadline:
            time.sleep(0.1)
        with open(status) as f:
            rc = int(f.read().strip())
        with open(errfile) as f:
            err = f.read()
        return rc, err, screens, os.path.join(workdir, snaps[0])
    finally:
        t.close()


@needs_tmux
def test_tmux_session(tool, workload, tmp_path):
    rc, err, screens, snap = drive_session(tool, workload.pid, str(tmp_path))
    assert rc == 0, err
    assert err == ""
    r = run(tool, "--once", "--file", snap)
    assert r.returncode == 0 and "toy_example" in r.stdout


@needs_tmux
def test_tmux_session_under_asan(workload, tmp_path):
    make("build/asan/bin/dynamo-top")
    env = {"ASAN_OPTIONS": "detect_leaks=1:abort_on_error=1",
           "UBSAN_OPTIONS": "print_stacktrace=1:halt_on_error=1"}
    rc, err, _, _ = drive_session(ASAN_BIN, workload.pid, str(tmp_path), env=env)
    assert rc == 0, err
    assert "Sanitizer" not in err and "runtime error" not in err, err


@needs_tmux
def test_tmux_iterations_quits_by_itself(tool, workload, tmp_path):
    status = tmp_path / "status"
    t = Tmux(f"{tool} -p {workload.pid} --iterations 3 --delay 0.1; echo $? > {status}; sleep 30",
             cwd=str(tmp_path))
    try:
        deadline = time.monotonic() + 15
        while not status.exists() and time.monotonic() < deadline:
            time.sleep(0.1)
        assert status.read_text().strip() == "0"
    finally:
        t.close()


@needs_tmux
def test_tmux_process_exits_while_watched(tool, tmp_path):
    proc = start_workload("--exit-after", "3")
    t = Tmux(f"{tool} -p {proc.pid} --delay 0.2; sleep 30", cwd=str(tmp_path))
    try:
        s = t.wait_for("toy_example", "F10Quit")
        assert "LIVE" in s
        proc.wait(60)
        s = t.wait_for("EXITED", timeout=20)
        assert "toy_example" in s and "mlp_step" in s      # the last state is kept
        assert "exited" in s
        t.keys("2")
        t.wait_for("ORIGINAL BYTECODE")                     # still browsable
        t.keys("q")
    finally:
        t.close()
        stop(proc)


def pane_child(t):
    """Pid of the tool: the child of the shell running in the tmux pane."""
    shell = t.tmux(["list-panes", "-t", "t", "-F", "#{pane_pid}"]).stdout.split()[0]
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        children = []
        task_dir = f"/proc/{shell}/task"
        for tid in os.listdir(task_dir):
            with open(f"{task_dir}/{tid}/children") as f:
                children += f.read().split()
        if children:
            return int(children[0])
        time.sleep(0.1)
    raise AssertionError("the tool did not start in the pane")


@needs_tmux
@pytest.mark.parametrize("sig,expected", [(signal.SIGTERM, 0), (signal.SIGINT, 0),
                                          (signal.SIGSEGV, 128 + signal.SIGSEGV)])
def test_tmux_signal_restores_terminal(tool, workload, tmp_path, sig, expected):
    status = tmp_path / "status"
    t = Tmux(f"{tool} -p {workload.pid} --delay 0.25 2>{tmp_path}/err; echo $? > {status}; "
             f"stty -a > {tmp_path}/stty; sleep 30", cwd=str(tmp_path))
    try:
        t.wait_for("toy_example")
        os.kill(pane_child(t), sig)
        deadline = time.monotonic() + 10
        while not (tmp_path / "stty").exists() and time.monotonic() < deadline:
            time.sleep(0.1)
        assert int(status.read_text()) == expected
        # the terminal is back in canonical (line) mode with echo
        flags = (tmp_path / "stty").read_text().split()
        assert "icanon" in flags and "echo" in flags
        assert "toy_example" not in t.screen()          # left the alternate screen
        if sig == signal.SIGSEGV:
            assert "terminal restored" in (tmp_path / "err").read_text()
    finally:
        t.close()
