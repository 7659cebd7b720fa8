"""The "autotune" backend (backends/autotune.py): the fastest correct
candidate per graph, chosen by timing, stored on disk and reused by a
later process without timing; the trials leave no trace in the model, the
inputs or the random streams."""
import json
import os
import subprocess
import sys
import warnings

import pytest
import torch

import dynamo
from dynamo import config, records
from dynamo.backends import autotune as at
from dynamo.backends import register_backend
from dynamo.backends.registry import _BACKENDS

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


@pytest.fixture(autouse=True)
def store(tmp_path):
    saved = (config.autotune_dir, config.autotune_candidates, config.autotune_runs)
    config.autotune_dir = str(tmp_path / "store")
    config.autotune_candidates = "aot_eager,eager"      # fast to compile: inductor has its own test
    config.autotune_runs = 2
    dynamo.reset()
    at.reset_stats()
    yield tmp_path / "store"
    config.autotune_dir, config.autotune_candidates, config.autotune_runs = saved
    dynamo.reset()
    for name in [n for n in _BACKENDS if n.startswith("test_autotune_")]:
        del _BACKENDS[name]


def _choices():
    return [g.gm.meta.get("backend_choice") for r in records.all_records() for g in r.graphs]


def mlp():
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.ReLU(), torch.nn.Linear(32, 4))


def test_each_candidate_is_timed_and_the_choice_is_stored(store):
    m = mlp().eval()
    x = torch.randn(8, 16)
    with torch.no_grad():
        y = dynamo.optimize("autotune")(m)(x)
        assert torch.allclose(y, m(x))
    assert at.stats == {"tuned": 1, "reused": 0, "timed_calls": 2 * 2}
    [choice] = _choices()
    assert choice.startswith("autotune: ") and "tuned" in choice
    assert "aot_eager" in choice and "eager" in choice
    [stored] = os.listdir(store)
    data = json.loads((store / stored).read_text())
    assert data["choice"] in ("aot_eager", "eager")
    assert set(data["timings_ms"]) == {"aot_eager", "eager"} and data["errors"] == {}


def test_a_second_process_reuses_the_stored_choice_without_timing(store):
    script = f"""
import sys, torch, dynamo
sys.path.insert(0, {ROOT!r})
from dynamo import config
from dynamo.backends import autotune as at
config.autotune_dir = {str(store)!r}
config.autotune_candidates = "aot_eager,eager"
config.autotune_runs = 2
torch.manual_seed(0)
m = torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.ReLU(), torch.nn.Linear(32, 4)).eval()
with torch.no_grad():
    y = dynamo.optimize("autotune")(m)(torch.ones(8, 16))
    assert torch.allclose(y, m(torch.ones(8, 16)))
print(at.stats["tuned"], at.stats["reused"], at.stats["timed_calls"])
"""
    def run():
        out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                             timeout=300, env={**os.environ, "PYTHONPATH": ROOT})
        assert out.returncode == 0, out.stderr
        return out.stdout.split()
    m = mlp().eval()
    with torch.no_grad():
        dynamo.optimize("autotune")(m)(torch.ones(8, 16))      # tuned here, stored
    assert at.stats["tuned"] == 1
    assert run() == ["0", "1", "0"]          # the stored choice: no trial at all
    assert len(os.listdir(store)) == 1


def test_a_failing_or_wrong_candidate_is_dropped_with_its_reason(store):
    @register_backend("test_autotune_broken")
    def broken(gm, example_inputs):
        raise RuntimeError("cannot compile this")

    @register_backend("test_autotune_wrong")
    def wrong(gm, example_inputs):
        return lambda *args: tuple(t + 1 for t in gm.forward(*args))

    @register_backend("test_autotune_close")
    def close(gm, example_inputs):      # another summation order: 1e-4 off, accepted
        return lambda *args: tuple(t * (1 + 1e-4) for t in gm.forward(*args))

    config.autotune_candidates = "test_autotune_broken,test_autotune_wrong,test_autotune_close,eager"
    m = mlp().eval()
    x = torch.randn(8, 16)
    with torch.no_grad():       # the close candidate may win: 1e-4 off
        assert torch.allclose(dynamo.optimize("autotune")(m)(x), m(x), rtol=1e-3, atol=1e-3)
    [choice] = _choices()
    assert choice.startswith("autotune: ")
    assert "test_autotune_close " in choice and "test_autotune_close failed" not in choice
    assert "test_autotune_broken failed (RuntimeError: cannot compile this)" in choice
    assert "test_autotune_wrong failed (RuntimeError: results differ from eager's" in choice


def test_the_trials_leave_parameters_buffers_inputs_and_random_streams_as_they_were():
    """A training-mode BatchNorm updates its running statistics on every
    call, and the graph draws random numbers: after the compiled first
    call, the model, the input and the next random draw are eager's."""
    def build():
        torch.manual_seed(0)
        return torch.nn.Sequential(torch.nn.Linear(16, 16), torch.nn.BatchNorm1d(16)).train()

    def f(m, x):
        return torch.nn.functional.dropout(m(x), 0.5) + torch.rand(1)

    x = torch.randn(8, 16)
    eager_m, comp_m = build(), build()
    torch.manual_seed(5)
    expected = f(eager_m, x.clone())
    after_eager = torch.rand(3)
    x_before = x.clone()
    torch.manual_seed(5)
    got = dynamo.optimize("autotune")(f)(comp_m, x)
    after_compiled = torch.rand(3)
    assert at.stats["tuned"] == 1
    assert torch.equal(x, x_before)
    assert torch.allclose(eager_m[1].running_mean, comp_m[1].running_mean)
    assert torch.allclose(eager_m[1].running_var, comp_m[1].running_var)
    assert eager_m[1].num_batches_tracked == comp_m[1].num_batches_tracked == 1
    assert torch.allclose(got, expected)           # same seed, same draws (eager or aot_eager)
    assert torch.equal(after_eager, after_compiled)


def test_an_unreadable_stored_choice_is_a_warning_and_is_tuned_again(store):
    m = mlp().eval()
    with torch.no_grad():
        dynamo.optimize("autotune")(m)(torch.randn(8, 16))
    [name] = os.listdir(store)
    (store / name).write_text("{not json")
    dynamo.reset()
    at.reset_stats()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with torch.no_grad():
            dynamo.optimize("autotune")(m)(torch.randn(8, 16))
    assert any("ignoring unreadable stored choice" in str(w.message) for w in caught)
    assert at.stats["tuned"] == 1
    assert json.loads((store / name).read_text())["version"] == at.STORE_VERSION


def test_an_unknown_candidate_is_named():
    config.autotune_candidates = "inductor,warp-drive"
    config.raise_on_backend_error = True
    try:
        with pytest.raises(Exception, match="unknown candidate.*warp-drive"):
            dynamo.optimize("autotune")(lambda x: x + 1)(torch.ones(2))
    finally:
        config.raise_on_backend_error = False
    with pytest.raises(ValueError, match="autotune_runs must be >= 1"):
        config.autotune_runs = 0


def test_inductor_is_a_candidate_on_cpu_by_default():
    config.autotune_candidates = ""
    m = mlp().eval()
    x = torch.randn(8, 16)
    with torch.no_grad():
        assert torch.allclose(dynamo.optimize("autotune")(m)(x), m(x), atol=1e-5)
    [choice] = _choices()
    assert "inductor" in choice and "eager" in choice and "failed" not in choice


def test_the_tools_show_each_graphs_choice_and_timings(tmp_path):
    """dynamo-top's report and dynamo-dot's list and graph picture read
    autotune's choice from the published record (the GRAPH field
    backend_note)."""
    m = mlp().eval()
    with torch.no_grad():
        dynamo.optimize("autotune")(m)(torch.randn(8, 16))
    [choice] = _choices()
    snap = str(tmp_path / "at.dyn")
    dynamo.save_snapshot(snap)
    top = subprocess.run([os.path.join(ROOT, "build", "bin", "dynamo-top"), "--once", "--file", snap],
                         capture_output=True, text=True, timeout=60)
    assert top.returncode == 0, top.stderr
    assert choice in top.stdout
    dot = os.path.join(ROOT, "build", "bin", "dynamo-dot")
    listing = subprocess.run([dot, "--file", snap, "--list"], capture_output=True, text=True, timeout=60)
    assert listing.returncode == 0 and choice in listing.stdout, listing.stderr
    graph = subprocess.run([dot, "--file", snap, "--graph", "0/0", "-o", str(tmp_path / "g.dot")],
                           capture_output=True, text=True, timeout=60)
    assert graph.returncode == 0, graph.stderr
    assert "autotune: " in (tmp_path / "g.dot").read_text()


def test_config_debug_prints_the_choice_under_the_graph(capsys):
    config.debug = True
    try:
        with torch.no_grad():
            dynamo.optimize("autotune")(mlp().eval())(torch.randn(8, 16))
    finally:
        config.debug = False
    [choice] = _choices()
    out = capsys.readouterr().out
    assert choice in out and out.index(choice) < out.index("ORIGINAL BYTECODE")
