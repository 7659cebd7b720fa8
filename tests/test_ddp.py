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
    # no telemetry region: nothing of the workers' can be left in /dev/shm
    env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""),
               DYNAMO_TELEMETRY="0")
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


def test_ddp_graph_is_cut_at_bucket_boundaries(tmp_path):
    """10 KB buckets (a layer is 4.1 KB): the captured graph is cut where
    DDP's buckets end, counted from the graph's end, each piece compiled by
    the backend on its own; gradients still equal eager DDP's."""
    got = run_case("split", "aot_eager", tmp_path)
    assert (got["compiles"], got["graphs"], got["breaks"]) == (1, 1, [])
    (buckets,) = got["buckets"]
    assert [len(b) for b in buckets] == [4, 6, 6]      # layers 0-1 | 2-4 | 5-7
    assert buckets[0][0] == "self_layers_0.bias" and buckets[-1][-1] == "self_layers_7.weight"


# ---------------------------------------------------------------- the cut, one process

class Chain(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.layers = torch.nn.ModuleList(torch.nn.Linear(16, 16) for _ in range(6))

    def forward(self, x):
        for layer in self.layers:
            x = torch.tanh(layer(x))
        return x.sum(), x


def test_ddp_split_pieces_compile_apart_and_keep_results():
    import dynamo
    from dynamo.testing import CompileCounter
    layer_bytes = (16 * 16 + 16) * 4
    torch.manual_seed(0)
    ref, model = Chain(), Chain()
    model.load_state_dict(ref.state_dict())
    cnt = CompileCounter()
    split = dynamo.backends.ddp_split(cnt, bucket_bytes=2 * layer_bytes,
                                      first_bucket_bytes=layer_bytes)
    seen = []

    def backend(gm, example_inputs):
        seen.append(gm)
        return split(gm, example_inputs)
    f = dynamo.optimize(backend)(model)
    x = torch.randn(4, 16)
    for _ in range(2):
        (loss, out), (ref_loss, ref_out) = f(x), ref(x)
        torch.testing.assert_close(out, ref_out)
        loss.backward()
        ref_loss.backward()
    for p, q in zip(model.parameters(), ref.parameters()):
        torch.testing.assert_close(p.grad, q.grad)
    # one graph, cut last layer first: [5] (first bucket) | [3, 4] | [1, 2] | [0]
    assert len(seen) == 1
    buckets = seen[0].meta["ddp_buckets"]
    assert [len(b) for b in buckets] == [2, 4, 4, 2]
    assert cnt.frame_count == 4                    # each piece compiled once


def test_ddp_split_without_a_ddp_forward_hands_the_graph_on_whole():
    import dynamo
    from dynamo.testing import CompileCounter
    cnt = CompileCounter()
    f = dynamo.optimize(dynamo.backends.ddp_split(cnt))(Chain())
    f(torch.randn(2, 16))
    assert cnt.frame_count == 1
