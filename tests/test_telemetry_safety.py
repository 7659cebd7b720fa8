"""Telemetry that cannot be turned against its user (issue 14, items 2 and 7).

- Snapshots: dynamo.save_snapshot, dynamo-top --save and dynamo-inspect
  --save write a new temporary file (O_EXCL, never a planted name) and only
  ever replace a regular file: a symlink, FIFO, directory or device at the
  target is refused and left as it was.
- Redaction: DYNAMO_TELEMETRY_REDACT=1 keeps the string values guards
  specialize on out of the region and snapshots (they are copied verbatim
  otherwise, as the last test shows).
- Signals: the shm file goes on SIGTERM, SIGHUP and SIGSEGV (a handler over
  SIG_DFL re-raises), stays on SIGKILL (post-mortem) and with
  DYNAMO_TELEMETRY_KEEP=1; an application's own handler is left alone.
- Growth: a recompile storm costs the blob area the same bytes per entry at
  the 100th compile as at the 10th (it grew with the square of the entries).
"""
import json
import os
import signal
import stat
import subprocess
import sys

import pytest

from shm_util import remove_shm, shm_path

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TOP = os.path.join(ROOT, "build", "bin", "dynamo-top")
CLI = os.path.join(ROOT, "build", "bin", "dynamo-inspect")


def env(**extra):
    e = dict(os.environ)
    e["PYTHONPATH"] = ROOT + os.pathsep + e.get("PYTHONPATH", "")
    for k in ("DYNAMO_TELEMETRY", "DYNAMO_TELEMETRY_REDACT", "DYNAMO_TELEMETRY_KEEP"):
        e.pop(k, None)
    e.update(extra)
    return e


def python(script, *args, cwd, **extra):
    r = subprocess.run([sys.executable, "-c", script, *map(str, args)], capture_output=True,
                       text=True, env=env(**extra), cwd=str(cwd), timeout=300)
    assert r.returncode == 0, r.stderr[-3000:]
    return r.stdout


def is_snapshot(path):
    with open(path, "rb") as f:
        return f.read(8) == b"DYNTELEM"


# ---------------------------------------------------------------- saving

SAVE = r'''
import json, os, stat, sys, torch, dynamo
tmp = sys.argv[1]
f = dynamo.optimize("eager")(lambda x: x + 1)
f(torch.ones(2))
out = {}
victim = os.path.join(tmp, "victim")
# a symlink planted at the temporary name the old code used: <path>.tmp<pid>
target = os.path.join(tmp, "snap.dyn")
os.symlink(victim, f"{target}.tmp{os.getpid()}")
dynamo.save_snapshot(target)
out["planted"] = open(victim).read()
# targets that are no regular file
fifo = os.path.join(tmp, "fifo.dyn"); os.mkfifo(fifo)
link = os.path.join(tmp, "link.dyn"); os.symlink(victim, link)
d = os.path.join(tmp, "dir.dyn"); os.mkdir(d)
cases = {"fifo": fifo, "symlink": link, "dir": d}
if os.getuid() == 0:
    dev = os.path.join(tmp, "null.dyn")
    os.mknod(dev, stat.S_IFCHR | 0o600, os.makedev(1, 3))
    cases["chardev"] = dev
for name, path in cases.items():
    try:
        dynamo.save_snapshot(path)
        out[name] = "saved"
    except OSError as e:
        out[name] = str(e)
    out[name + "_mode"] = stat.S_IFMT(os.lstat(path).st_mode)
out["victim"] = open(victim).read()
print(json.dumps(out))
'''


def test_save_snapshot_never_follows_or_replaces_non_regular_files(tmp_path):
    (tmp_path / "victim").write_text("precious")
    out = json.loads(python(SAVE, tmp_path, cwd=tmp_path))
    assert out["planted"] == "precious"         # the planted symlink was not followed
    assert is_snapshot(tmp_path / "snap.dyn")
    planted = [n for n in os.listdir(tmp_path) if n.startswith("snap.dyn.tmp")]
    assert len(planted) == 1 and os.readlink(tmp_path / planted[0]) == str(tmp_path / "victim")
    modes = {"fifo": stat.S_IFIFO, "symlink": stat.S_IFLNK, "dir": stat.S_IFDIR,
             "chardev": stat.S_IFCHR}
    for name, mode in modes.items():
        if name not in out:
            continue                            # chardev: needs root
        assert "refusing to replace" in out[name], (name, out[name])
        assert out[name + "_mode"] == mode, name   # still what it was
    assert out["victim"] == "precious"
    assert not [n for n in os.listdir(tmp_path) if ".tmp" in n and n not in planted]


@pytest.fixture(scope="module")
def workload(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("save")
    p = subprocess.Popen([sys.executable, "-c", "import torch, dynamo, time\n"
                          "f = dynamo.optimize('eager')(lambda x: x + 1)\nf(torch.ones(2))\n"
                          "print('READY', flush=True)\ntime.sleep(120)\n"],
                         stdout=subprocess.PIPE, text=True, env=env(), cwd=str(tmp))
    assert "READY" in p.stdout.readline()
    yield p, tmp
    p.terminate()               # the SIGTERM handler removes the shm file
    p.wait()
    remove_shm(p.pid)


@pytest.mark.parametrize("tool", [TOP, CLI])
def test_tool_save_refuses_symlink_and_fifo(workload, tool, tmp_path):
    p, _ = workload
    victim = tmp_path / "victim"
    victim.write_text("precious")
    link = tmp_path / "link.dyn"
    link.symlink_to(victim)
    fifo = tmp_path / "fifo.dyn"
    os.mkfifo(fifo)
    for target in (link, fifo):
        r = subprocess.run([tool, "-p", str(p.pid), "--save", str(target)], capture_output=True,
                           text=True, timeout=60)
        assert r.returncode != 0 and "refusing to replace" in r.stderr, r.stderr
    assert victim.read_text() == "precious" and link.is_symlink()
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)
    good = tmp_path / "good.dyn"
    r = subprocess.run([tool, "-p", str(p.pid), "--save", str(good)], capture_output=True,
                       text=True, timeout=60)
    assert r.returncode == 0 and is_snapshot(good), r.stderr
    assert sorted(os.listdir(tmp_path)) == ["fifo.dyn", "good.dyn", "link.dyn", "victim"]


# ---------------------------------------------------------------- redaction

SECRETS = ("s3cr3t-Alpha", "s3cr3t-Bravo", "s3cr3t-Charlie")

REDACT = r'''
import os, sys, torch, dynamo
dynamo.config.cache_size_limit = 8
values = os.environ["VALUES"].split()     # not argv: the header keeps the command line
KEY = values[0]
def f(x, s):
    if s == KEY:
        return x + 1
    return x - 1
g = dynamo.optimize("eager")(f)
for s in values:
    g(torch.ones(2), s)
dynamo.save_snapshot(sys.argv[1])
print(dynamo.telemetry.REDACT)
'''


@pytest.mark.parametrize("redact", ["1", None])
def test_redaction_keeps_string_values_out_of_snapshots(tmp_path, redact):
    snap = tmp_path / "s.dyn"
    extra = {"DYNAMO_TELEMETRY_REDACT": redact} if redact else {}
    out = python(REDACT, snap, "--token", SECRETS[0], cwd=tmp_path, VALUES=" ".join(SECRETS),
                 **extra)
    assert out.strip() == ("True" if redact else "False")
    data = snap.read_bytes()
    d = json.loads(subprocess.run([CLI, "--file", str(snap)], capture_output=True, text=True,
                                  check=True).stdout)
    frame = next(fr for fr in d["frames"] if fr["name"] == "f")
    assert frame["compiles"] == 3                   # one per string value
    recompiles = [e for e in d["events"] if e["kind"] == "recompile"]
    assert len(recompiles) == 2
    found = [s for s in SECRETS if s.encode() in data]
    if redact:
        assert found == [], found
        assert d["process"]["argv"].endswith("<arguments redacted>")
        assert recompiles[0]["expected"].startswith("<redacted str")
        assert "<redacted str, 14 chars>" in recompiles[1]["text"]
    else:
        assert found == list(SECRETS)               # verbatim: what the docs warn about
        assert recompiles[0]["actual"] == repr(SECRETS[1])


# ---------------------------------------------------------------- signals

SLEEPER = r'''
import signal, sys, time
# the default dispositions a terminal gives: a parent run under nohup or in
# a shell's background passes SIGHUP / SIGINT / SIGQUIT on ignored
for s in (signal.SIGHUP, signal.SIGINT, signal.SIGQUIT, signal.SIGTERM):
    signal.signal(s, signal.SIG_IGN if sys.argv[1] == "ignore-hup" and s == signal.SIGHUP
                  else signal.SIG_DFL)
if sys.argv[1] == "handler":
    signal.signal(signal.SIGTERM, lambda *a: (print("APP HANDLER", flush=True), sys.exit(3)))
import torch, dynamo
f = dynamo.optimize("eager")(lambda x: x + 1)
f(torch.ones(2))
print("READY", flush=True)
time.sleep(120)
'''


def start_sleeper(tmp_path, mode="-", **extra):
    p = subprocess.Popen([sys.executable, "-c", SLEEPER, mode], stdout=subprocess.PIPE,
                         text=True, env=env(**extra), cwd=str(tmp_path))
    assert "READY" in p.stdout.readline()
    assert os.path.exists(shm_path(p.pid))
    return p


def signal_state(pid):
    """State and signal masks of each thread of pid (/proc), for a process
    that did not die when it should have."""
    lines = []
    for tid in sorted(os.listdir(f"/proc/{pid}/task")):
        try:
            with open(f"/proc/{pid}/task/{tid}/status") as f:
                keep = [ln.strip() for ln in f if ln.split(":")[0] in
                        ("Name", "State", "SigPnd", "ShdPnd", "SigBlk", "SigIgn", "SigCgt")]
            with open(f"/proc/{pid}/task/{tid}/wchan") as f:
                keep.append("wchan: " + f.read())
        except OSError as e:
            keep = [str(e)]
        lines.append(f"thread {tid}: " + ", ".join(keep))
    return "\n".join(lines)


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGHUP, signal.SIGSEGV])
def test_shm_file_removed_on_fatal_signal(tmp_path, sig):
    p = start_sleeper(tmp_path)
    try:
        p.send_signal(sig)
        try:
            code = p.wait(timeout=60)
        except subprocess.TimeoutExpired:
            pytest.fail(f"still alive 60 s after signal {sig!r}:\n{signal_state(p.pid)}")
        assert code == -sig                         # still dies of that signal
        assert not os.path.exists(shm_path(p.pid))
    finally:
        p.kill()
        p.wait()
        remove_shm(p.pid)


def test_sigkill_and_keep_leave_the_file_for_post_mortem(tmp_path):
    for sig, extra in ((signal.SIGKILL, {}), (signal.SIGTERM, {"DYNAMO_TELEMETRY_KEEP": "1"})):
        p = start_sleeper(tmp_path, **extra)
        try:
            p.send_signal(sig)
            assert p.wait(timeout=60) == -sig
            assert os.path.exists(shm_path(p.pid))
            r = subprocess.run([CLI, "--file", shm_path(p.pid)], capture_output=True, text=True,
                               timeout=60)
            assert r.returncode == 0 and json.loads(r.stdout)["frames"], r.stderr
        finally:
            p.kill()
            p.wait()
            remove_shm(p.pid)


def test_an_ignored_signal_stays_ignored(tmp_path):
    """A process started under nohup ignores SIGHUP: telemetry installs its
    cleanup only over SIG_DFL, so the process lives on and keeps its file."""
    p = start_sleeper(tmp_path, "ignore-hup")
    try:
        p.send_signal(signal.SIGHUP)
        with pytest.raises(subprocess.TimeoutExpired):
            p.wait(timeout=2)
        assert os.path.exists(shm_path(p.pid))
    finally:
        p.kill()
        p.wait()
        remove_shm(p.pid)


def test_application_sigterm_handler_is_left_alone(tmp_path):
    p = start_sleeper(tmp_path, "handler")
    try:
        p.send_signal(signal.SIGTERM)
        assert p.wait(timeout=60) == 3
        assert "APP HANDLER" in p.stdout.read()
        assert not os.path.exists(shm_path(p.pid))  # its sys.exit ran atexit
    finally:
        p.kill()
        p.wait()
        remove_shm(p.pid)


# ---------------------------------------------------------------- growth

STORM = r'''
import json, torch, dynamo
from dynamo import telemetry
dynamo.config.cache_size_limit = 1000
dynamo.config.specialize_int = True          # one entry per n
g = dynamo.optimize("eager")(lambda x, n: x + n)
x = torch.ones(2)
used = {}
for n in range(121):
    g(x, n)
    if n in (20, 70, 120):
        used[n] = telemetry.info()["blob_used"]
print(json.dumps({"used": used, "entries": telemetry.info()["n_entries"]}))
'''


def test_recompile_storm_grows_linearly(tmp_path):
    out = json.loads(python(STORM, cwd=tmp_path))
    used = {int(k): v for k, v in out["used"].items()}
    assert out["entries"] == 121                    # one compile per value
    early = (used[70] - used[20]) / 50              # bytes per entry, entries 21..70
    late = (used[120] - used[70]) / 50              # bytes per entry, entries 71..120
    # Quadratic growth made each entry ~110 B x entries dearer (late/early ~1.8).
    assert late < 1.3 * early, (early, late)
    assert late < 4096, late
