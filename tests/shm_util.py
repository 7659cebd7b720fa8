"""The /dev/shm/dynamo-<pid> telemetry files of workload subprocesses.

The runtime removes its file at a normal exit (atexit) and on fatal signals
that have no application handler (SIGTERM, SIGHUP, SIGSEGV, ...: its own
handler unlinks and re-raises).  It stays on purpose after SIGKILL (and
with DYNAMO_TELEMETRY_KEEP=1), so that a post-mortem reader can still open
it.
Tests that end a workload that way remove the file with these helpers once
the process is dead; conftest.py checks at session end that no file of a
dead process the session started appeared during the session.
"""
import glob
import os
import re

SHM_PATTERN = "/dev/shm/dynamo-*"
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def layout_version():
    """DT_VERSION of inspect/layout.h (the one declaration of it)."""
    with open(os.path.join(ROOT, "inspect", "layout.h")) as f:
        return int(re.search(r"#define DT_VERSION\s+(\d+)u", f.read()).group(1))


def shm_path(pid):
    return f"/dev/shm/dynamo-{pid}"


def remove_shm(pid):
    """Removes the file of the (dead) process pid, if it left one."""
    try:
        os.unlink(shm_path(pid))
    except FileNotFoundError:
        pass


def kill_and_remove_shm(proc):
    """SIGKILLs the subprocess proc, waits for it, then removes its file."""
    proc.kill()
    proc.wait()
    remove_shm(proc.pid)


def shm_files():
    return set(glob.glob(SHM_PATTERN))


def pid_alive(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:     # someone else's live process
        return True
    return True


def leftover_shm_files(before, pids=None):
    """Files not in `before` (a shm_files() result) whose process is gone;
    only those of `pids` (the processes a test session started) when given."""
    left = []
    for path in sorted(shm_files() - before):
        pid = path.rsplit("-", 1)[1]
        if pid.isdigit() and (pids is None or int(pid) in pids) and not pid_alive(int(pid)):
            left.append(path)
    return left
