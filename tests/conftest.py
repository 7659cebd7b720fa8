"""Shared fixtures: every test starts from empty caches and default config.
Session check: no process this test session started left its
/dev/shm/dynamo-<pid> behind."""
import os
import subprocess
import tempfile

import pytest

import dynamo
from dynamo import config
from shm_util import leftover_shm_files, shm_files


@pytest.fixture(autouse=True)
def fresh_dynamo():
    dynamo.reset()
    saved = {k: getattr(config, k) for k in config.defaults()}
    yield
    for k, v in saved.items():
        setattr(config, k, v)
    dynamo.reset()


_shm_before = set()     # /dev/shm/dynamo-* present when the session started
_children = set()       # pids of the processes this session started (subprocess.Popen)
_forks = None           # file the session's forked children append their pid to


def _record_children():
    """Records the pid of every process the session starts: subprocess.Popen
    (subprocess.run and friends go through it) and os.fork (multiprocessing,
    pty: the child appends its pid to a file, the parent's memory being out
    of its reach).  The session check looks at these pids only: a file of a
    dead process that another session or program on the machine left in
    /dev/shm is none of this run's business."""
    global _forks
    _forks = tempfile.NamedTemporaryFile(prefix="dynamo-test-forks-", delete=False)
    _forks.close()
    path = _forks.name
    init = subprocess.Popen.__init__

    def popen_init(self, *args, **kwargs):
        init(self, *args, **kwargs)
        _children.add(self.pid)

    def after_fork_in_child():
        try:
            fd = os.open(path, os.O_WRONLY | os.O_APPEND)
            os.write(fd, b"%d\n" % os.getpid())
            os.close(fd)
        except OSError:
            pass

    subprocess.Popen.__init__ = popen_init
    os.register_at_fork(after_in_child=after_fork_in_child)


def session_children():
    """The pids recorded so far (Popen and forks)."""
    pids = set(_children)
    try:
        with open(_forks.name) as f:
            pids.update(int(line) for line in f if line.strip().isdigit())
    except (OSError, AttributeError):
        pass
    return pids


def pytest_sessionstart(session):
    _shm_before.update(shm_files())
    _record_children()


def pytest_sessionfinish(session, exitstatus):
    """Fails the session when a process it started is gone and its file
    appeared during the session: a test ended a workload without atexit and
    without the fatal-signal handler (SIGKILL, or DYNAMO_TELEMETRY_KEEP=1)
    and did not remove the file (tests/shm_util.py).  Files of processes the
    session did not start (another test run on the machine) are ignored."""
    left = leftover_shm_files(_shm_before, session_children())
    if _forks is not None:
        try:
            os.unlink(_forks.name)
        except OSError:
            pass
    if not left:
        return
    reporter = session.config.pluginmanager.get_plugin("terminalreporter")
    if reporter is not None:
        reporter.write_line(f"\nERROR: telemetry files left behind by dead test processes: "
                            f"{', '.join(left)}", red=True)
    session.exitstatus = pytest.ExitCode.TESTS_FAILED


def pytest_configure(config):
    """DYNAMO_TEST_DEVICE=cuda runs the tests with that default device for
    new tensors (torch.set_default_device): the seed examples on a GPU."""
    device = os.environ.get("DYNAMO_TEST_DEVICE")
    if device:
        import torch
        torch.set_default_device(device)
