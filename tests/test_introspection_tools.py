"""Issue 30 in the tools: guard provenance in dynamo-top's Guards tab (report
and tmux) and dynamo-dot's guard tree, dynamo-top's --summary / --frame /
--tab, frames behind a decorator labelled with what they wrap, a frame at
the cache limit that keeps counting its calls.  One workload process
(tests/workloads/intro_workload.py) for the whole file."""
import os
import re
import shutil
import subprocess
import sys
import time

import pytest

from test_dynamo_top import BIN, ROOT, Tmux, make, stop

WORKLOAD = os.path.join(ROOT, "tests", "workloads", "intro_workload.py")
DOT = os.path.join(ROOT, "build", "bin", "dynamo-dot")
needs_tmux = pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed")


def source_line(text):
    """The number of the workload's line that is `text` (stripped)."""
    with open(WORKLOAD) as f:
        return next(i for i, line in enumerate(f, 1) if line.strip() == text)


@pytest.fixture(scope="module")
def tool():
    make("build/bin/dynamo-top", "build/bin/dynamo-dot")
    return BIN


@pytest.fixture(scope="module")
def workload():
    env = dict(os.environ, PYTHONPATH=ROOT, PYTHONUNBUFFERED="1")
    proc = subprocess.Popen([sys.executable, WORKLOAD, "--exit-after", "300"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    line = proc.stdout.readline()
    assert line.startswith("READY"), proc.stderr.read()
    yield proc
    stop(proc)


def top(*args):
    r = subprocess.run([BIN, *map(str, args)], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    return r.stdout


def row(text, name):
    return next(line for line in text.splitlines() if re.match(rf"\s*{re.escape(name)}\s", line))


def test_guards_tab_names_the_line_that_installed_each_guard(tool, workload):
    out = top("--once", "-p", workload.pid, "--frame", "branchy", "--tab", "guards")
    assert "FROM (the line that installed it)" in out
    x_line, scale_line = source_line("y = x + 1"), source_line("y = y * scale")
    # FAILS KIND SOURCE FROM GUARD: the line, then the guard's text
    assert re.search(rf"TENSOR_MATCH +L\['x'\] +intro_workload.py:{x_line}  y = x \+ 1 +local 'x'",
                     out), out
    assert re.search(rf"EQUALS_MATCH +L\['scale'\] +intro_workload.py:{scale_line}  y = y \* scale"
                     rf" +local 'scale' EQUALS_MATCH", out), out
    assert "frame entry (global state)" in out
    # --frame and --tab: only branchy, only its Guards section
    assert "==== FRAME" in out and out.count("==== FRAME") == 1
    assert "-- GRAPH --" not in out and "EVENTS" not in out and "churn" not in out


def test_summary_ranks_frames_and_labels_the_wrapper(tool, workload):
    out = top("--summary", "-p", workload.pid, "--top", "2")
    for title in ("TOP FRAMES BY COMPILE TIME", "TOP FRAMES BY CACHE MISSES",
                  "TOP FRAMES BY GRAPH BREAKS", "TOP FRAMES BY RECOMPILES"):
        assert title in out
    assert "==== FRAME" not in out and "ORIGINAL BYTECODE" not in out       # no sections
    misses = out.split("TOP FRAMES BY CACHE MISSES", 1)[1].split("TOP FRAMES BY GRAPH", 1)[0]
    rows = [line for line in misses.splitlines()[2:] if line.strip()]
    assert len(rows) == 2 and rows[0].lstrip().startswith("churn")       # top 2, churn first
    # the decorator's wrapper is labelled with the forward it wraps
    assert "wrapper [Model.forward]" in out
    recompiles = out.split("LAST RECOMPILE TRIGGER", 1)[1]
    assert "L['x'].size()[0]: expected" in recompiles
    assert f"intro_workload.py:{source_line('return torch.sin(x) + torch.cos(x)')}" in recompiles


def test_frame_at_the_cache_limit_keeps_counting(tool, workload):
    first = row(top("--summary", "-p", workload.pid, "--frame", "churn"), "churn")
    assert "LIMIT" in first
    calls = lambda r: int(r.split()[2])     # noqa: E731 - FUNCTION FILE:LINE CALLS ...
    time.sleep(1.0)
    second = row(top("--summary", "-p", workload.pid, "--frame", "churn"), "churn")
    assert calls(second) > calls(first) > 4, (first, second)


def test_usage_of_the_new_options(tool):
    for args in (["--tab", "nosuch", "--once", "-p", "1"], ["--tab", "guards", "-p", "1"],
                 ["--summary", "--tab", "guards", "-p", "1"], ["--top", "0", "--summary"]):
        r = subprocess.run([BIN, *args], capture_output=True, text=True, timeout=30)
        assert r.returncode == 2, (args, r.stderr)


def test_guard_tree_picture_names_the_lines(tool, workload):
    dot = subprocess.run([DOT, "-p", str(workload.pid), "--guards", "branchy", "-T", "dot"],
                         capture_output=True, text=True, timeout=60)
    assert dot.returncode == 0, dot.stderr
    assert f"intro_workload.py:{source_line('y = y * scale')}" in dot.stdout
    assert f"intro_workload.py:{source_line('y = x + 1')}" in dot.stdout


def test_guard_tree_draws_the_checks_of_every_branch_once(tool, workload):
    dot = subprocess.run([DOT, "-p", str(workload.pid), "--guards", "forward", "-T", "dot"],
                         capture_output=True, text=True, timeout=60)
    if "no frame" in dot.stderr or dot.returncode != 0:     # the name is ambiguous: by id
        listing = subprocess.run([DOT, "-p", str(workload.pid), "--list"], capture_output=True,
                                 text=True, timeout=60).stdout
        fid = re.search(r"frame (\d+)  forward  intro_workload.py", listing).group(1)
        dot = subprocess.run([DOT, "-p", str(workload.pid), "--guards", fid, "-T", "dot"],
                             capture_output=True, text=True, timeout=60)
    assert dot.returncode == 0, dot.stderr
    out = dot.stdout
    assert out.count('"shared checks"') >= 1 and "checked on every branch" in out
    box = out.split('"shared checks"', 1)[1].split("];", 1)[0]
    assert "_modules.keys() ==" in box           # the ModuleList's key test, in the box
    # drawn once: the box's label and its tooltip, in no branch
    assert out.count("_modules.keys()") == 2, out
    assert "more tests:" in out and "(all in the tooltip)" in out   # the root's remainder
    m = re.search(r"(\d+) more tests:(.*?) \(all in the tooltip\)", out)
    assert sum(int(n) for n in re.findall(r"(\d+) [.\w]+", m.group(2))) == int(m.group(1))


@needs_tmux
def test_tmux_guards_tab_shows_provenance(tool, workload, tmp_path):
    t = Tmux(f"{BIN} -p {workload.pid} --delay 0.25; sleep 30", cwd=str(tmp_path))
    try:
        t.wait_for("branchy", "F10Quit")
        t.keys("/")
        t.wait_for("Search:")
        t.type("branchy")
        t.keys("Enter")
        t.keys("3")
        screen = t.wait_for("FROM (the line that installed it)", "y = y * scale")
        assert "wrapper [Model.forward]" in screen
        capture = os.environ.get("DYNAMO_CAPTURE_DIR")
        if capture:                         # docs/img/ captures: make the file by hand
            with open(os.path.join(capture, "dynamo-top-guards-provenance.txt"), "w") as f:
                f.write(screen)
        t.keys("q")
    finally:
        t.close()
