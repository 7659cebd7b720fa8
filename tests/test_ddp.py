"""DistributedDataParallel on 2 processes (gloo, CPU) under dynamo (issue 27,
item 3): the wrapped module's forward is captured (graphs >= 1, no break in
the model), DDP's own forward stays eager, gradients and parameters equal
an eager DDP run's, and each rank compiles the same, once.  Each case runs
tests/workloads/ddp_train.py in a subprocess (torch.multiprocessing, a free
port, a timeout); the workload checks gradients itself after every step."""
import json
import os
import subprocess
import sys

import pytest
import torch

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SCRIPT = os.path.join(ROOT, "tests", "workloads", "ddp_train.py")

pytestmark = pytest.mark.skipif(
    not torch.distributed.is_available() or not torch.distributed.is_gloo_available(),
    reason="torch.distributed with gloo is not built")


def run_case(case, backend, tmp_path):
    env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    proc = subprocess.run([sys.executable, SCRIPT, case, backend, str(tmp_path)], env=env,
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-4000:]
    ranks = [json.loads((tmp_path / f"rank{r}.json").read_text()) for r in range(2)]
    # guards do not depend on the rank: both compile the same
    assert {k: v for k, v in ranks[0].items() if k != "rank"} == \
        {k: v for k, v in ranks[1].items() if k != "rank"}
    return ranks[0]


@pytest.mark.parametrize("backend", ["eager", "aot_eager"])
def test_ddp_model_forward_is_captured(backend, tmp_path):
    got = run_case("mlp", backend, tmp_path)
    # one compile of the wrapped MLP's forward, whole: DDP's forward eager
    assert got["names"] == ["forward"]
    assert (got["compiles"], got["graphs"], got["breaks"]) == (1, 1, [])


def test_ddp_of_a_torch_sequential_is_captured(tmp_path):
    got = run_case("sequential", "aot_eager", tmp_path)
    assert (got["compiles"], got["graphs"], got["breaks"]) == (1, 1, [])


def test_ddp_called_inside_a_compiled_step(tmp_path):
    """The step's frame breaks at the DDP call (DDP's forward runs
    eagerly), the wrapped forward compiles on its own, the loss after it
    is the resume function's graph."""
    got = run_case("inside", "aot_eager", tmp_path)
    assert got["names"] == ["step", "forward", "__resume_at_24_0"] or \
        got["names"][:2] == ["step", "forward"]
    assert got["graphs"] == 2
    assert len(got["breaks"]) == 1 and "DistributedDataParallel" in got["breaks"][0]


def test_ddp_no_sync_accumulates_locally(tmp_path):
    got = run_case("no_sync", "aot_eager", tmp_path)
    assert (got["compiles"], got["graphs"], got["breaks"]) == (1, 1, [])


def test_ddp_find_unused_parameters(tmp_path):
    got = run_case("unused", "aot_eager", tmp_path)
    assert (got["compiles"], got["graphs"], got["breaks"]) == (1, 1, [])
