"""dynamo-dot (viz/): Graphviz pictures of captured graphs, guard trees and
graph-break maps, from a snapshot file and from a live process.

One workload subprocess (module fixture) compiles the seed toy example
(called with both signs: 3 graphs, 2 resume functions), a function that
recompiles on a new size, and a small CNN with BatchNorm and a custom head
module (underscored names, no container index); it writes the
expected counts computed from the GraphModules and the cache entries
(`dynamo._C.cache_entries`) to a JSON file next to its snapshot, then stays
alive so the same state can be read by pid.
"""
import html
import json
import os
import re
import subprocess
import sys
import xml.etree.ElementTree as ET

import pytest

from shm_util import kill_and_remove_shm, layout_version

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DOT_BIN = os.path.join(ROOT, "build", "bin", "dynamo-dot")
ASAN_BIN = os.path.join(ROOT, "build", "asan", "dynamo-dot")

pytestmark = pytest.mark.skipif(not os.path.exists(DOT_BIN),
                                reason="build/bin/dynamo-dot not built (make all)")

WORKLOAD = r'''
import json, os, sys
sys.path.insert(0, sys.argv[1])
import torch
import dynamo
from dynamo import records

dynamo.config.automatic_dynamic_shapes = False     # scale: one entry per size (a size switch)


@dynamo.optimize("eager")
def toy_example(a, b):
    x = a / (torch.abs(a) + 1)
    if b.sum() < 0:
        b = b * -1
    return x * b


@dynamo.optimize("eager")
def scale(x):
    return torch.relu(x) * 2


class Head(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.out_proj = torch.nn.Linear(8, 4)

    def forward(self, x):
        return torch.softmax(self.out_proj(x), dim=-1)


class SmallCNN(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.features = torch.nn.Sequential(
            torch.nn.Conv2d(3, 8, 3, padding=1), torch.nn.BatchNorm2d(8), torch.nn.ReLU())
        self.final_head = Head()

    def forward(self, x):
        x = self.features(x)
        x = x.mean(dim=(2, 3))
        return self.final_head(x)


def main(out_dir):
    torch.manual_seed(0)
    toy_example(torch.randn(10), torch.ones(10))
    toy_example(torch.randn(10), -torch.ones(10))      # the other branch
    scale(torch.randn(5))
    scale(torch.randn(7))                              # recompile: size()[0] 5 -> 7
    scale(torch.randn(5))
    model = dynamo.optimize("eager")(SmallCNN().eval())
    model(torch.randn(2, 3, 8, 8))
    graphs, frames = {}, {}
    for rec in records.all_records():
        for g in rec.graphs:
            nodes = list(g.gm.graph.nodes)
            graphs[g.name] = {
                "record": rec.id, "frame": rec.frame_id, "function": rec.name,
                "guards": len(rec.guards),
                "nodes": [n.name for n in nodes],
                "edges": sorted([n.name, u.name] for n in nodes for u in n.users),
                "modules": sorted({n.target for n in nodes if n.op == "call_module"}),
                "module_stacks": {n.name: n.meta.get("dynamo_module_stack", ()) for n in nodes},
            }
        frames.setdefault(str(rec.frame_id), {
            "name": rec.name,
            "entries": sorted(p.id for p in dynamo._C.cache_entries(rec.code)),
            "resumes": [[r.name, r.offset, r.kind] for r in rec.resumes],
        })
    snap = os.path.join(out_dir, "workload.dyn")
    dynamo.save_snapshot(snap)
    with open(os.path.join(out_dir, "expected.json"), "w") as f:
        json.dump({"graphs": graphs, "frames": frames}, f)
    print("READY", os.getpid(), flush=True)
    sys.stdin.read()                                   # until the test closes stdin


main(sys.argv[2])
'''


@pytest.fixture(scope="module")
def workload(tmp_path_factory):
    out = tmp_path_factory.mktemp("dot")
    script = out / "workload.py"
    script.write_text(WORKLOAD)
    proc = subprocess.Popen([sys.executable, str(script), ROOT, str(out)], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    line = proc.stdout.readline()
    if not line.startswith("READY"):
        kill_and_remove_shm(proc)
        pytest.fail("workload failed: " + line + proc.stderr.read())
    with open(out / "expected.json") as f:
        expected = json.load(f)
    yield {"pid": proc.pid, "snapshot": str(out / "workload.dyn"), "dir": out, **expected}
    proc.stdin.close()
    proc.wait(timeout=30)


def run(*args, binary=DOT_BIN, check=True):
    p = subprocess.run([binary, *args], capture_output=True, timeout=120)
    if check:
        assert p.returncode == 0, p.stderr.decode()
    return p


def source_args(workload, source):
    return ["--file", workload["snapshot"]] if source == "file" else ["-p", str(workload["pid"])]


SOURCES = ["file", "pid"]


def graph_id(record):
    return record.strip("[]")


def frame_of(workload, name):
    return next(f for f, info in workload["frames"].items() if info["name"] == name)


# ---- parsing the outputs -----------------------------------------------------


def dot_counts(path):
    """(nodes, edges) of a dot file, counted by Graphviz's own `gc`."""
    out = subprocess.run(["gc", "-n", "-e", path], capture_output=True, text=True, check=True)
    nodes, edges = out.stdout.split()[:2]
    return int(nodes), int(edges)


def dot_edges(path):
    out = subprocess.run(["gvpr", 'E{print($.tail.name, "\t", $.head.name)}', path],
                         capture_output=True, text=True, check=True)
    return sorted(line.split("\t") for line in out.stdout.splitlines())


def dot_nodes(path):
    out = subprocess.run(["gvpr", "N{print($.name)}", path], capture_output=True, text=True,
                         check=True)
    return out.stdout.splitlines()


SVG = "{http://www.w3.org/2000/svg}"


def svg_items(data, kind):
    """Titles of the <g class=kind> elements of an SVG document, and the tooltips."""
    root = ET.fromstring(data)
    titles, tips = [], []
    for g in root.iter(SVG + "g"):
        if g.get("class") != kind:
            continue
        titles.append(html.unescape(g.find(SVG + "title").text or ""))
        for a in g.iter(SVG + "a"):
            tip = a.get("{http://www.w3.org/1999/xlink}title")
            if tip:
                tips.append(tip)
    return titles, tips


# ---- --list -------------------------------------------------------------------


@pytest.mark.parametrize("source", SOURCES)
def test_list_shows_every_frame_compile_graph_and_resume(workload, source):
    out = run(*source_args(workload, source), "--list").stdout.decode()
    for fid, info in workload["frames"].items():
        assert re.search(rf"^frame {fid}  {re.escape(info['name'])} ", out, re.M), out
    for name, g in workload["graphs"].items():
        assert re.search(rf"graph {re.escape(graph_id(g['record']))} +{name} ", out), out
        assert f"--graph {graph_id(g['record'])}" in out
    resumes = [i["name"] for i in workload["frames"].values() if i["name"].startswith("__resume")]
    assert len(resumes) == 2
    toy = frame_of(workload, "toy_example")
    break_line = next(line for line in out.splitlines()
                      if "break Python branches on a tensor's value" in line)
    assert "(generic_jump TensorVariable())" in break_line     # the tracer's words after the user's
    kinds = {"branch": "branch taken", "fallthrough": "fall-through"}
    listed = workload["frames"][toy]["resumes"]
    assert sorted(name for name, _, _ in listed) == sorted(resumes)
    assert sorted(kind for _, _, kind in listed) == ["branch", "fallthrough"]
    for name, offset, kind in listed:
        assert name == f"__resume_at_{offset}_" + name.rsplit("_", 1)[1]
        assert f"{name} ({kinds[kind]} @{offset}, frame {frame_of(workload, name)})" in break_line
    assert f"--guards {toy}" in out and f"--breaks {toy}" in out
    assert run(*source_args(workload, source)).stdout.decode() == out   # --list is the default


# ---- --graph ------------------------------------------------------------------


def test_toy_example_compiles_three_graphs(workload):
    toy = [g for g in workload["graphs"].values()
           if g["function"] == "toy_example" or g["function"].startswith("__resume_at_")]
    assert len(toy) == 3


@pytest.mark.parametrize("source", SOURCES)
def test_graph_dot_matches_fx_graph(workload, source, tmp_path):
    for name, g in workload["graphs"].items():
        path = str(tmp_path / f"{name}.dot")
        run(*source_args(workload, source), "--graph", graph_id(g["record"]), "-o", path)
        assert dot_counts(path) == (len(g["nodes"]), len(g["edges"])), name
        assert sorted(dot_nodes(path)) == sorted(g["nodes"])
        assert dot_edges(path) == g["edges"]


@pytest.mark.parametrize("source", SOURCES)
def test_graph_svg_nodes_edges_tooltips_and_label(workload, source):
    for name, g in workload["graphs"].items():
        svg = run(*source_args(workload, source), "--graph", name, "-T", "svg").stdout
        nodes, node_tips = svg_items(svg, "node")
        edges, _ = svg_items(svg, "edge")
        assert sorted(nodes) == sorted(g["nodes"])
        assert sorted(e.split("->") for e in edges) == g["edges"]
        assert len(node_tips) == len(g["nodes"])             # full text on hover
        assert all("users (" in t for t in node_tips)
        text = svg.decode()
        assert g["record"] in text and name in text and g["function"] in text
        assert f"{g['guards']} guards" in text and "compile " in text
        assert f"{len(g['nodes'])} nodes" in text


def test_graph_model_clusters_by_module(workload, tmp_path):
    g = next(g for g in workload["graphs"].values() if g["function"] == "forward")
    # fx targets stay flattened; the tracer records the qualified path and class
    assert g["modules"] == ["self_features_0", "self_features_1", "self_features_2",
                            "self_final_head_out_proj"]
    stacks = g["module_stacks"]
    assert stacks["self_features_0"] == [["features", "Sequential"], ["features.0", "Conv2d"]]
    assert stacks["self_final_head_out_proj"] == [["final_head", "Head"],
                                                  ["final_head.out_proj", "Linear"]]
    assert stacks["softmax"] == [["final_head", "Head"]] and stacks["mean"] == []
    path = str(tmp_path / "cnn.dot")
    run("--file", workload["snapshot"], "--graph", graph_id(g["record"]), "-o", path)
    text = open(path).read()
    assert "subgraph cluster_features" in text                # the Sequential's box
    assert "subgraph cluster_final_head" in text              # no index: found by path
    assert "final_head · Head" in text                        # cluster label: path · class
    svg = run("--file", workload["snapshot"], "--graph", graph_id(g["record"]), "-T", "svg").stdout
    clusters, tips = svg_items(svg, "cluster")
    assert sorted(clusters) == ["cluster_features", "cluster_final_head"]
    nodes = run("--file", workload["snapshot"], "--graph", graph_id(g["record"]), "-T", "svg").stdout
    _, node_tips = svg_items(nodes, "node")
    assert any("module: features.0" in t and "module class: Conv2d" in t for t in node_tips)
    assert "Conv2d" in svg.decode() and "final_head.out_proj" in svg.decode()
    for kind in ("placeholder", "call_module", "call_function", "output"):
        assert kind in svg.decode()


@pytest.mark.parametrize("fmt,magic", [("svg", b"<?xml"), ("png", b"\x89PNG"), ("pdf", b"%PDF")])
def test_every_kind_renders_to_images(workload, tmp_path, fmt, magic):
    toy = frame_of(workload, "toy_example")
    first = next(iter(workload["graphs"].values()))
    for what in (["--graph", graph_id(first["record"])], ["--guards", toy], ["--breaks", toy]):
        out = tmp_path / f"{what[0][2:]}.{fmt}"
        run("--file", workload["snapshot"], *what, "-T", fmt, "-o", str(out))
        assert out.read_bytes().startswith(magic)


# ---- --guards -----------------------------------------------------------------


@pytest.mark.parametrize("source", SOURCES)
def test_guard_tree_leaves_are_the_cache_entries(workload, source, tmp_path):
    for fid, info in workload["frames"].items():
        path = str(tmp_path / f"tree{fid}.dot")
        run(*source_args(workload, source), "--guards", fid, "-o", path)
        leaves = sorted(n[len("entry "):] for n in dot_nodes(path) if n.startswith("entry "))
        assert leaves == info["entries"], (fid, info)
        svg = run(*source_args(workload, source), "--guards", fid, "-T", "svg").stdout.decode()
        assert "hits" in svg and f"frame {fid}" in svg
        assert "walks" in svg and "node counters live" in svg      # bumped by every walk


def test_guard_tree_switch_branches_and_last_failure(workload, tmp_path):
    fid = frame_of(workload, "scale")
    assert workload["frames"][fid]["entries"] == [f"[{fid}/0]", f"[{fid}/1]"]
    path = str(tmp_path / "scale.dot")
    run("--file", workload["snapshot"], "--guards", "scale", "-o", path)   # by name
    text = open(path).read()
    assert "switch on" in text and "L[&#39;x&#39;].size()[0]" in text
    labels = subprocess.run(["gvpr", 'E{print($.label)}', path], capture_output=True,
                            text=True).stdout.split()
    assert "5" in labels and "7" in labels                      # "= 5", "= 7" branch values
    assert "last failure" in dot_nodes(path)
    assert "last guard failure" in text and "expected <B>5</B>, actual" in text
    assert re.search(r"actual <FONT[^>]*><B>7</B>", text)
    # the failing guard's entry [F/0] (size 5; the call with 7 missed it) is outlined red
    svg = run("--file", workload["snapshot"], "--guards", fid, "-T", "svg").stdout.decode()
    assert "last guard failure" in svg


# ---- --breaks -----------------------------------------------------------------


@pytest.mark.parametrize("source", SOURCES)
def test_break_map_chains_graphs_and_resume_functions(workload, source, tmp_path):
    toy = frame_of(workload, "toy_example")
    resumes = {f: i for f, i in workload["frames"].items() if i["name"].startswith("__resume_at")}
    path = str(tmp_path / "breaks.dot")
    run(*source_args(workload, source), "--breaks", toy, "-o", path)
    text = open(path).read()
    for fid in [toy, *resumes]:
        assert f"subgraph cluster_frame_{fid} " in text
    edges = dot_edges(path)
    assert sorted(head for tail, head in edges) == sorted(f"[{f}/0]" for f in resumes)
    assert all(tail == f"[{toy}/0]" for tail, head in edges)
    labels = subprocess.run(["gvpr", 'E{print($.label)}', path], capture_output=True,
                            text=True).stdout
    # the break in user words and its hint (dynamo/break_hints.py); the whole text in the tooltip
    assert labels.count("graph break: Python branches on a tensor's value") == 2
    assert labels.count("hint: compute both sides") == 2
    tips = subprocess.run(["gvpr", 'E{print($.tooltip)}', path], capture_output=True,
                          text=True).stdout
    assert tips.count("(generic_jump TensorVariable())") == 2
    # each edge says where its resume function continues
    for name, offset, kind in workload["frames"][toy]["resumes"]:
        side = {"branch": "branch taken", "fallthrough": "fall-through"}[kind]
        assert f"{name} ({side} @{offset})" in labels
    lineno = WORKLOAD.splitlines().index("    if b.sum() < 0:") + 1
    assert labels.count(f"workload.py:{lineno}") == 2 and "if b.sum() < 0:" in labels
    svg = run(*source_args(workload, source), "--breaks", "toy_example", "-T", "svg").stdout
    clusters, _ = svg_items(svg, "cluster")
    assert len(clusters) == 3


def test_break_map_of_a_function_without_breaks(workload, tmp_path):
    fid = frame_of(workload, "scale")
    path = str(tmp_path / "scale.dot")
    run("--file", workload["snapshot"], "--breaks", fid, "-o", path)
    assert sorted(dot_nodes(path)) == [f"[{fid}/0]", f"[{fid}/1]"]
    assert "recompile" in open(path).read()                   # [F/0] -> [F/1] with the reason


# ---- errors -------------------------------------------------------------------


def err(p):
    return p.stderr.decode()


def test_unknown_ids_list_the_valid_ones(workload):
    snap = ["--file", workload["snapshot"]]
    p = run(*snap, "--graph", "99/0", check=False)
    assert p.returncode == 2 and "no graph '99/0'" in err(p)
    for name, g in workload["graphs"].items():
        assert f"{graph_id(g['record'])} ({name} in {g['function']})" in err(p)
    for what in ("--guards", "--breaks"):
        p = run(*snap, what, "nosuchframe", check=False)
        assert p.returncode == 2 and "no frame 'nosuchframe'" in err(p)
        for fid, info in workload["frames"].items():
            assert f"{fid} ({info['name']})" in err(p)
    p = run(*snap, "--graph", "bogus", check=False)
    assert p.returncode == 2 and "valid graph ids" in err(p)
    assert err(p).count("\n") == 1 and err(p).startswith("dynamo-dot: ")


def test_no_such_pid(tmp_path):
    gone = subprocess.Popen(["true"])
    gone.wait()                                 # reaped: no process has this pid now
    pid = gone.pid
    p = run("-p", str(pid), "--list", check=False)
    assert p.returncode == 3 and "no process" in err(p) and str(pid) in err(p)


def test_process_without_dynamo():
    sleeper = subprocess.Popen(["sleep", "30"])
    try:
        p = run("-p", str(sleeper.pid), "--list", check=False)
    finally:
        sleeper.kill()
        sleeper.wait()
    assert p.returncode == 4 and str(sleeper.pid) in err(p) and "dynamo" in err(p)


def test_unwritable_output(workload, tmp_path):
    snap = ["--file", workload["snapshot"], "--graph", next(iter(workload["graphs"]))]
    for target in (tmp_path / "no" / "such" / "dir.svg", tmp_path):
        p = run(*snap, "-T", "svg", "-o", str(target), check=False)
        assert p.returncode == 1 and f"cannot write {target}" in err(p)
    assert not (tmp_path / "no").exists()
    p = run("--file", workload["snapshot"], "--list", "-o", str(tmp_path / "x" / "l"), check=False)
    assert p.returncode == 1 and "cannot write" in err(p)


def test_format_graphviz_cannot_render(workload, tmp_path):
    out = tmp_path / "x.nosuch"
    p = run("--file", workload["snapshot"], "--graph", next(iter(workload["graphs"])),
            "-T", "nosuch", "-o", str(out), check=False)
    assert p.returncode == 2 and "cannot render format 'nosuch'" in err(p)
    assert " svg" in err(p) and " png" in err(p)               # the formats it can
    assert not out.exists()


def test_bad_snapshot_files(tmp_path):
    bad = tmp_path / "bad.dyn"
    bad.write_bytes(b"DYNTELEM" + b"\0" * 100)
    p = run("--file", str(bad), check=False)
    assert p.returncode == 7 and str(bad) in err(p)
    p = run("--file", str(tmp_path / "missing.dyn"), check=False)
    assert p.returncode != 0 and "missing.dyn" in err(p)


@pytest.mark.parametrize("args", [[], ["-p", "1", "--file", "x"], ["-p", "abc"],
                                  ["--file", "x", "--graph", "0/0", "--guards", "0"],
                                  ["--file", "x", "--bogus"], ["--file"],
                                  ["--file", "x", "extra"]])
def test_usage_errors(args):
    p = run(*args, check=False)
    assert p.returncode == 2 and err(p).startswith("dynamo-dot: ")


def test_help():
    out = run("--help").stdout.decode()
    for opt in ("--pid", "--file", "--list", "--list-processes", "--graph", "--guards",
                "--breaks", "-T", "-o"):
        assert opt in out


def test_list_processes(workload):
    out = run("--list-processes").stdout.decode()
    line = next(line for line in out.splitlines() if line.startswith(f"pid {workload['pid']} "))
    assert f"{len(workload['frames'])} frames" in line and f"telemetry v{layout_version()}" in line
    assert "workload.py" in line
    p = run("--list-processes", "-p", str(workload["pid"]), check=False)
    assert p.returncode == 2 and "--list-processes takes no" in err(p)


# ---- sanitizers ---------------------------------------------------------------


@pytest.mark.skipif(not os.path.exists(ASAN_BIN), reason="make viz-asan not built")
def test_asan_build_draws_everything(workload, tmp_path):
    supp = os.path.join(ROOT, "viz", "lsan.supp")       # Graphviz/fontconfig keep caches
    env = dict(os.environ, ASAN_OPTIONS="detect_leaks=1",
               LSAN_OPTIONS=f"suppressions={supp}:print_suppressions=0",
               UBSAN_OPTIONS="halt_on_error=1:print_stacktrace=1")
    cases = [["--list"], ["--graph", "bogus"], ["--guards", "nosuch"]]
    cases += [["--graph", n, "-T", "svg"] for n in workload["graphs"]]
    cases += [[w, f, "-T", "svg"] for f in workload["frames"] for w in ("--guards", "--breaks")]
    for args in cases:
        for src in (["--file", workload["snapshot"]], ["-p", str(workload["pid"])]):
            p = subprocess.run([ASAN_BIN, *src, *args], capture_output=True, timeout=120, env=env)
            assert "Sanitizer" not in err(p) and "runtime error" not in err(p), err(p)
            assert p.returncode in (0, 2), err(p)


# ---- dynamo.viz (in this process, through a snapshot) ---------------------------


def test_python_to_dot_draws_this_process(tmp_path):
    import torch

    import dynamo
    from dynamo import records, viz

    @dynamo.optimize("eager")
    def toy_example(a, b):
        x = a / (torch.abs(a) + 1)
        if b.sum() < 0:
            b = b * -1
        return x * b

    toy_example(torch.randn(10), -torch.ones(10))
    rec = records.all_records()[0]
    gm = rec.graphs[0].gm
    dot = viz.to_dot(rec.id)
    path = tmp_path / "g.dot"
    path.write_text(dot)
    assert dot_counts(str(path)) == (len(gm.graph.nodes),
                                     sum(len(n.users) for n in gm.graph.nodes))
    assert rec.graphs[0].name in viz.to_dot()                      # the --list text
    assert viz.to_dot(breaks="toy_example", format="png").startswith(b"\x89PNG")
    out = viz.to_dot(guards=rec.frame_id, format="svg", output=tmp_path / "t.svg")
    assert "entry " + rec.id in out.read_text()
    with pytest.raises(RuntimeError, match="no graph '77/7'"):
        viz.to_dot("77/7")
    with pytest.raises(ValueError):
        viz.to_dot("0/0", guards=0)
