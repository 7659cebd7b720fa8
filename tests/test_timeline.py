"""The record of a whole run (inspect/trace.{h,c}): `dynamo-top --record`,
DYNAMO_TRACE=dir, and `dynamo-dot --timeline` (viz/timeline.c).

One workload subprocess (module fixture) runs with DYNAMO_TRACE set, so a
`dynamo-top -p PID --record` child records it live until it exits; it makes
a recompile storm (one function called with 20 int values, ints specialized,
automatic dynamic off: 1 compile, 7 recompiles, then the cache limit), a
graph break with its resume function, and writes its compile records'
counts and a snapshot.  The tests compare the records (live and from the
snapshot) with those counts, the timeline's SVG and HTML with the records,
every bad input with its one-line error, and, when a Chromium is installed,
the page as a real browser loads it.
"""
import json
import os
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET

import pytest


ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TOP = os.path.join(ROOT, "build", "bin", "dynamo-top")
DOT = os.path.join(ROOT, "build", "bin", "dynamo-dot")
ASAN_DOT = os.path.join(ROOT, "build", "asan", "dynamo-dot")
SVG_NS = "{http://www.w3.org/2000/svg}"
COMPILE_MARKS = {"first", "recompile", "failed", "skipped", "limit"}

pytestmark = pytest.mark.skipif(not (os.path.exists(TOP) and os.path.exists(DOT)),
                                reason="build/bin/dynamo-top or dynamo-dot not built (make all)")

WORKLOAD = r'''
import json, sys, time
sys.path.insert(0, sys.argv[1])
import torch
import dynamo
from dynamo import records, run_record

dynamo.config.automatic_dynamic_shapes = False
dynamo.config.specialize_int = True


@dynamo.optimize("eager")
def step(x, n):
    y = x * n
    if n == 3:
        print("three")             # a graph break on one of the values
    return y + 1


x = torch.randn(4)
for i in range(20):
    step(x, i)
    time.sleep(0.01)
recs = records.all_records()
counts = {"compiles": sum(r.status != "limit" for r in recs),
          "recompiles": sum(bool(r.recompile_reason) and r.status == "ok" for r in recs),
          "limits": sum(r.status == "limit" for r in recs),
          "frames": len({r.frame_id for r in recs}),
          "record": run_record.path}
dynamo.save_snapshot(sys.argv[2] + "/run.dyn")
with open(sys.argv[2] + "/counts.json", "w") as f:
    json.dump(counts, f)
'''


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    d = tmp_path_factory.mktemp("timeline")
    script = d / "storm.py"
    script.write_text(WORKLOAD)
    env = dict(os.environ, DYNAMO_TRACE=str(d / "trace"), PYTHONUNBUFFERED="1")
    p = subprocess.run([sys.executable, str(script), ROOT, str(d)], env=env, capture_output=True,
                       text=True, timeout=240)
    assert p.returncode == 0, p.stderr[-3000:]
    counts = json.loads((d / "counts.json").read_text())
    live = counts["record"]
    for _ in range(100):                    # the recorder ends after the process's exit
        if live and os.path.exists(live) and '"end"' in open(live).read().splitlines()[-1]:
            break
        subprocess.run(["sleep", "0.1"])
    return d, counts


def tool(binary, *args, **kw):
    return subprocess.run([binary, *map(str, args)], capture_output=True, text=True, timeout=60,
                          **kw)


def load(path):
    """The lines of a record as dicts: header, events, end (None if absent)."""
    lines = [json.loads(line) for line in open(path, encoding="utf-8")]
    end = lines.pop() if "end" in lines[-1] else None
    return lines[0], lines[1:], end


def kinds(events):
    out = {}
    for e in events:
        out[e["kind"]] = out.get(e["kind"], 0) + 1
    return out


def check_record(events, counts):
    k = kinds(events)
    assert k["compile"] == counts["compiles"], k
    assert k["recompile"] == counts["recompiles"] == 7, k
    assert k.get("limit", 0) == counts["limits"] == 1, k
    assert k["break"] == 1, k                   # print() on n == 3: cut once
    recompiles = [e for e in events if e["kind"] == "recompile"]
    assert all(e["property"] == "value" and e["guard"] == "- local 'n' EQUALS_MATCH"
               for e in recompiles), recompiles
    assert [int(e["actual"]) for e in recompiles] == list(range(1, 8))
    assert sum(e["count"] for e in events if e["kind"] == "guard_fail") >= 12
    times = [e["t_ns"] for e in events if e["seq"] > 0]
    assert times == sorted(times)


def test_live_record_by_dynamo_trace(run):
    """DYNAMO_TRACE: a dynamo-top child recorded the whole run by pid, to the end."""
    d, counts = run
    head, events, end = load(counts["record"])
    assert head["format"] == "dynamo-trace" and head["version"] == 1
    assert head["source"].startswith("shm ") and "storm.py" in head["argv"]
    assert end is not None and end["end"] == "exited" and end["lost"] == 0
    check_record(events, counts)


def test_record_from_snapshot(run, tmp_path):
    d, counts = run
    out = tmp_path / "snap.jsonl"
    r = tool(TOP, "--file", d / "run.dyn", "--record", out)
    assert r.returncode == 0, r.stderr
    assert r.stderr.startswith("dynamo-top: recorded ") and "(snapshot)" in r.stderr
    head, events, end = load(out)
    assert end["end"] == "snapshot"
    check_record(events, counts)


def svg_marks(root):
    return [g for g in root.iter(SVG_NS + "g") if g.get("class") == "mark"]


def test_timeline_svg(run, tmp_path):
    d, counts = run
    out = tmp_path / "t.svg"
    r = tool(DOT, "--timeline", counts["record"], "-o", out)
    assert r.returncode == 0, r.stderr
    root = ET.parse(out).getroot()
    marks = svg_marks(root)
    by_kind = kinds([{"kind": m.get("data-kind")} for m in marks])
    assert sum(n for k, n in by_kind.items() if k in COMPILE_MARKS) \
        == counts["compiles"] + counts["limits"] == int(root.get("data-compiles"))
    assert by_kind["recompile"] == 7 and by_kind["limit"] == 1 and by_kind["break"] == 1
    assert by_kind["first"] == counts["compiles"] - 7
    rows = [g for g in root.iter(SVG_NS + "g") if g.get("class") == "row"]
    assert len(rows) == counts["frames"] == int(root.get("data-frames"))
    assert {m.get("data-frame") for m in marks} <= {g.get("data-frame") for g in rows}
    titles = [m.find(SVG_NS + "title").text for m in marks if m.get("data-kind") == "recompile"]
    assert [t.split("failing guard: ")[1].split(" (")[0] for t in titles] \
        == [f"L['n']: expected {i}, actual {i + 1}" for i in range(7)], titles
    assert all("guarded at storm.py:14: y = x * n" in t for t in titles), titles
    storm = [t for t in root.iter(SVG_NS + "text") if t.get("class") == "storm"]
    assert [t.text for t in storm] == ["recompile storm: 7× - local 'n' EQUALS_MATCH"]


def test_timeline_html_is_self_contained(run, tmp_path):
    d, counts = run
    out = tmp_path / "t.html"
    r = tool(DOT, "--timeline", "-T", "html", counts["record"], "-o", out)
    assert r.returncode == 0, r.stderr
    page = out.read_text()
    assert page.startswith("<!DOCTYPE html>")
    for outside in ("<link", "src=", "url(", "@import", "https:"):
        assert outside not in page
    assert page.count("http://") == page.count('xmlns="http://www.w3.org/2000/svg"') == 1
    svg = page[page.index("<svg"):page.index("</svg>") + 6]
    marks = svg_marks(ET.fromstring(svg))
    assert sum(m.get("data-kind") in COMPILE_MARKS for m in marks) \
        == counts["compiles"] + counts["limits"]
    table = page[page.index('<table id="compiles">'):page.index("</table>")]
    assert table.count("<tr>") - 1 == counts["compiles"] + counts["limits"]
    assert table.count('class="k-recompile"') == 7


def test_timeline_from_snapshot_matches_record(run, tmp_path):
    """--timeline --file SNAPSHOT: the same marks from the event ring."""
    d, counts = run
    a = tool(DOT, "--timeline", "--file", d / "run.dyn")
    b = tool(DOT, "--timeline", counts["record"])
    assert a.returncode == 0 and b.returncode == 0, a.stderr + b.stderr
    ka = kinds([{"kind": m.get("data-kind")} for m in svg_marks(ET.fromstring(a.stdout))])
    kb = kinds([{"kind": m.get("data-kind")} for m in svg_marks(ET.fromstring(b.stdout))])
    ka.pop("guard_fail"), kb.pop("guard_fail")  # live polls split the counts over time
    assert ka == kb


# ---- bad input: one line, a nonzero status, never a crash ---------------------------------

def one_line_error(r, status, *words):
    assert r.returncode == status, (r.returncode, r.stderr)
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(("dynamo-dot: ", "dynamo-top: ")), r.stderr
    for w in words:
        assert w in lines[0], lines[0]


def bad_records(run, tmp_path):
    d, counts = run
    good = open(counts["record"], "rb").read()
    head, second = good.split(b"\n")[:2]
    cases = {
        "truncated": (good[:len(head) + 1 + len(second) // 2], 7, ":2: truncated line"),
        "not json": (b"hello\n", 7, ":1: not a JSON object"),
        "no header": (second + b"\n", 7, "not a dynamo run record"),
        "version": (head.replace(b'"version":1', b'"version":99') + b"\n", 6, "version 99"),
        "empty": (b"", 7, "empty file"),
        "wrong type": (head + b'\n{"kind":"compile","frame":"x"}\n', 7, "wrong type"),
        "binary": (open(d / "run.dyn", "rb").read(), 7, "binary data"),
        "bad escape": (head + b'\n{"kind":"compile","name":"\\q"}\n', 7, "bad escape"),
    }
    for name, (data, status, words) in cases.items():
        path = tmp_path / name.replace(" ", "_")
        path.write_bytes(data)
        yield name, path, status, words


def test_bad_records(run, tmp_path):
    for name, path, status, words in bad_records(run, tmp_path):
        one_line_error(tool(DOT, "--timeline", path), status, words, str(path))


def test_bad_records_under_asan(run, tmp_path):
    if not os.path.exists(ASAN_DOT):
        pytest.skip("build/asan/dynamo-dot not built (make asan)")
    env = dict(os.environ, ASAN_OPTIONS="detect_leaks=1")
    for name, path, status, words in bad_records(run, tmp_path):
        one_line_error(tool(ASAN_DOT, "--timeline", path, env=env), status, words)
    d, counts = run
    r = tool(ASAN_DOT, "--timeline", "-T", "html", counts["record"], env=env)
    assert r.returncode == 0 and r.stderr == "", r.stderr


def test_every_cut_of_a_record(run, tmp_path):
    """A record cut anywhere reads whole (a cut at a line end) or fails with one line."""
    d, counts = run
    good = open(counts["record"], "rb").read()
    path = tmp_path / "cut.jsonl"
    for cut in range(0, len(good), max(1, len(good) // 120)):
        path.write_bytes(good[:cut])
        r = tool(DOT, "--timeline", path)
        at_line_end = cut > 0 and good[cut - 1:cut] == b"\n"
        whole_last_line = good[cut:cut + 1] == b"\n"      # only the newline cut off
        if at_line_end:
            assert r.returncode == 0, (cut, r.stderr)
        elif whole_last_line and r.returncode == 0:
            pass                    # a complete last object without its newline reads whole
        else:
            one_line_error(r, 7)


def test_unreadable_and_usage(run, tmp_path):
    d, counts = run
    one_line_error(tool(DOT, "--timeline", tmp_path / "missing.jsonl"), 1, "No such file")
    one_line_error(tool(DOT, "--timeline", tmp_path), 1, "not a regular file")
    one_line_error(tool(DOT, "--timeline", "-p", "12x"), 2, "bad pid")
    one_line_error(tool(DOT, "--timeline", "-p", "4000000"), 3)
    one_line_error(tool(DOT, "--timeline", "-T", "png", counts["record"]), 2, "svg or -T html")
    one_line_error(tool(DOT, "--timeline", counts["record"], "--file", d / "run.dyn"), 2)
    one_line_error(tool(TOP, "--record", tmp_path / "x.jsonl"), 2, "--record needs a pid")
    one_line_error(tool(TOP, "-p", "4000000", "--record", tmp_path / "x.jsonl"), 3)
    assert not os.path.exists(tmp_path / "x.jsonl")
    r = tool(TOP, "--file", d / "run.dyn", "--record", tmp_path / "no" / "dir.jsonl")
    one_line_error(r, 1, "cannot write the run record")


# ---- a real browser ----------------------------------------------------------------

def browser():
    for name in ("chromium", "chromium-browser", "google-chrome"):
        found = shutil.which(name)
        if found:
            return found
    return None


@pytest.mark.skipif(browser() is None,
                    reason="no headless Chromium installed (apt-get install chromium)")
def test_page_in_a_headless_browser(run, tmp_path):
    """Chromium loads the page offline, runs its script, draws every mark; a screenshot is made."""
    d, counts = run
    page = tmp_path / "t.html"
    assert tool(DOT, "--timeline", "-T", "html", counts["record"], "-o", page).returncode == 0
    flags = ["--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
             "--user-data-dir=" + str(tmp_path / "profile")]
    dom = subprocess.run([browser(), *flags, "--dump-dom", page.as_uri()], capture_output=True,
                         text=True, timeout=120)
    assert dom.returncode == 0, dom.stderr[-2000:]
    assert dom.stdout.count('class="mark"') == open(page).read().count('class="mark"') > 0
    assert 'id="detail"' in dom.stdout
    shot = tmp_path / "t.png"
    r = subprocess.run([browser(), *flags, "--window-size=1320,900", "--screenshot=" + str(shot),
                        page.as_uri()], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0 and shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n", r.stderr[-2000:]
    assert shot.stat().st_size > 20000      # a drawn page, not a blank one


def test_python_to_dot_timeline(tmp_path):
    """dynamo.viz.to_dot(timeline=True): this process's ring as a timeline."""
    import torch
    import dynamo
    from dynamo import records, viz

    @dynamo.optimize("eager")
    def twice(x):
        return x * 2

    mark = records.mark()
    twice(torch.ones(3))
    twice(torch.ones(3, 2))                 # a new rank: a recompile
    mine = [r for r in records.records_since(mark)]
    svg = viz.to_dot(timeline=True)
    root = ET.fromstring(svg)
    marks = [m for m in svg_marks(root) if m.get("data-kind") in COMPILE_MARKS]
    # frame ids start again after each reset: the row is the last one of
    # this frame id (rows are drawn first seen first)
    frame = str(mine[0].frame_id)
    rows = [g for g in root.iter(SVG_NS + "g") if g.get("class") == "row"
            and g.get("data-frame") == frame]
    row = rows[-1].get("data-row")
    assert "twice" in "".join(rows[-1].itertext())
    assert len([m for m in marks if m.get("data-row") == row]) == len(mine) == 2
    assert viz.to_dot(timeline=True, format="html").startswith("<!DOCTYPE html>")
    dynamo.reset()
