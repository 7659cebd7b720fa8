"""DYNAMO_TRACE=dir: the record of this run, kept by a `dynamo-top --record` child.

At import, when $DYNAMO_TRACE names a folder, dynamo starts the tool
(`dynamo-top -p <this pid> --record <dir>/dynamo-trace-<pid>.jsonl`, in its
own session so that Ctrl-C of the application does not stop it first) and
waits until it has attached (its header line is written, at most a few
seconds).  The tool polls this process's telemetry region and writes every
compile, recompile, graph break, cache-limit hit and guard failure with its
time until the process exits (the format: inspect/trace.h); `dynamo-dot
--timeline FILE` draws it.  One writer of the format (inspect/trace.c):
this module only starts the tool.

Never raises: a missing tool, telemetry off or an unwritable folder give
one RuntimeWarning and the run goes on unrecorded.  The tool is looked up
in $DYNAMO_TOP, then build/bin/ of the source tree, then $PATH.
"""
import os
import subprocess
import time
import warnings

from . import _C
from .utils import find_tool

recorder = None         # the Popen of the dynamo-top child, None when not recording
path = None             # the record file, None when not recording


def tool_path():
    """The dynamo-top executable, or None."""
    return find_tool("dynamo-top", "DYNAMO_TOP")


def from_environment(wait_s=5.0, delay_s=0.2):
    """Start recording when $DYNAMO_TRACE is set (see the module's text);
    returns the record's path or None."""
    global recorder, path
    folder = os.environ.get("DYNAMO_TRACE")
    if not folder or recorder is not None:
        return path
    tool = tool_path()
    why = ("dynamo-top not found (run `make all` or set $DYNAMO_TOP)" if tool is None
           else "telemetry is off (DYNAMO_TELEMETRY=0)" if not _C._telemetry_enabled() else None)
    target = os.path.join(folder, f"dynamo-trace-{os.getpid()}.jsonl")
    try:
        if why is None:
            os.makedirs(folder, exist_ok=True)
            recorder = subprocess.Popen([tool, "-p", str(os.getpid()), "--record", target,
                                         "--delay", str(delay_s)],
                                        stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                        stderr=subprocess.DEVNULL, start_new_session=True)
    except OSError as e:
        why = str(e)
    if why is not None:
        warnings.warn(f"dynamo: DYNAMO_TRACE={folder}: not recording this run: {why}",
                      RuntimeWarning)
        return None
    deadline = time.monotonic() + wait_s
    while time.monotonic() < deadline and recorder.poll() is None:
        if os.path.exists(target) and os.path.getsize(target) > 0:
            break
        time.sleep(0.01)
    path = target
    return path
