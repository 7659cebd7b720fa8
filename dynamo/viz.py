"""Pictures of this process's captured graphs, guard trees and graph breaks.

A thin wrapper around the `dynamo-dot` tool (viz/): it saves this process's
telemetry to a temporary snapshot file (`dynamo.save_snapshot`) and runs
`dynamo-dot --file` on it, so the pictures come from the same C code as the
command line and no Graphviz binding is loaded into the process. The tool is
looked up in $DYNAMO_DOT, then build/bin/ of the source tree, then $PATH.
"""
import os
import subprocess
import tempfile

from .telemetry import save_snapshot
from .utils import find_tool

_TEXT_FORMATS = {"dot", "gv", "svg", "html", "plain", "plain-ext", "json", "json0", "dot_json",
                 "xdot", "xdot_json", "canon", "cmapx", "imap"}


def tool_path():
    """The dynamo-dot executable, or raise FileNotFoundError saying how to build it."""
    found = find_tool("dynamo-dot", "DYNAMO_DOT")
    if found is None:
        raise FileNotFoundError("dynamo-dot not found: run `make all` (or set $DYNAMO_DOT)")
    return found


def to_dot(graph=None, *, guards=None, breaks=None, timeline=False, format="dot", output=None):
    """Draw one thing this process compiled with dynamo-dot.

    graph: a graph id ("F/C", "[F/C]", "F/C:i" or "__compiled_fn_N");
    guards / breaks: a frame (number or function name) for its guard tree /
    graph-break map; timeline=True: the compiles over time of the events
    this process's ring holds (format "svg", the default then, or "html");
    none of them: the --list text. format: any -T format (default "dot"). output: a path to write to (returned), else the result
    is returned: str for text formats, bytes for images. Raises ValueError
    when more than one of graph/guards/breaks is given, RuntimeError with
    the tool's message when it fails (unknown id, format, telemetry off).
    """
    chosen = [(opt, v) for opt, v in (("--graph", graph), ("--guards", guards),
                                      ("--breaks", breaks)) if v is not None]
    if timeline:
        chosen.append(("--timeline", None))
        format = "svg" if format == "dot" else format
    if len(chosen) > 1:
        raise ValueError("give at most one of graph, guards, breaks, timeline")
    args = [a for a in chosen[0] if a is not None] if chosen else ["--list"]
    args = [str(a) for a in args]
    with tempfile.TemporaryDirectory(prefix="dynamo-viz-") as tmp:
        snap = os.path.join(tmp, "snapshot.dyn")
        save_snapshot(snap)
        cmd = [tool_path(), "--file", snap, *args, "-T", format]
        if output is not None:
            cmd += ["-o", os.fspath(output)]
        p = subprocess.run(cmd, capture_output=True)
    if p.returncode != 0:
        raise RuntimeError(p.stderr.decode(errors="replace").strip()
                           or f"dynamo-dot failed with status {p.returncode}")
    if output is not None:
        return output
    return p.stdout.decode() if format in _TEXT_FORMATS or not chosen else p.stdout
