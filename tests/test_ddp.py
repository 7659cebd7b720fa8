"""DistributedDataParallel and FSDP2 on 2 processes (gloo, CPU) under dynamo
(issue 27, items 3 and 4): the wrapped module's forward is captured (graphs
>= 1, no break in the model), DDP's own forward and FSDP's hooks stay eager,
gradients and parameters equal an eager run's, and each rank compiles the
same, once.  All the cases run in one subprocess running
tests/workloads/ddp_train.py (torch.multiprocessing, a free port, a
timeout): one process group for all of them; the workload checks gradients
itself after every step."""
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


SPECS = ["mlp:eager", "mlp:aot_eager", "sequential:aot_eager", "inside:aot_eager",
         "no_sync:aot_eager", "unused:aot_eager", "split:aot_eager",
         "fsdp_regional:aot_eager", "fsdp_whole:aot_eager"]


@pytest.fixture(scope="module")
def cases(tmp_path_factory):
    """Every case of SPECS run once, in one 2-process group (spawning it
    costs far more than a case): {spec: rank 0's counts}, after checking
    that both ranks compiled the same (guards do not depend on the rank)."""
    out = tmp_path_factory.mktemp("dist")
    # no telemetry region: nothing of the workers' can be left in /dev/shm
    env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""),
               DYNAMO_TELEMETRY="0")
    proc = subprocess.run([sys.executable, SCRIPT, ",".join(SPECS), str(out)], env=env,
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-4000:]
    return [json.loads((out / f"rank{r}.json").read_text()) for r in range(2)]


def run_case(case, backend, cases):
    spec = f"{case}:{backend}"
    ranks = [r[spec] for r in cases]
    for got in ranks:
        assert "error" not in got, got["error"]
    assert ranks[0] == ranks[1]
    return ranks[0]


@pytest.mark.parametrize("backend", ["eager", "aot_eager"])
def test_ddp_model_forward_is_captured(backend, cases):
    got = run_case("mlp", backend, cases)
    # one compile of the wrapped MLP's forward, whole: DDP's forward eager
    assert got["names"] == ["forward"]
    assert (got["compiles"], got["graphs"], got["breaks"]) == (1, 1, [])


def test_ddp_of_a_torch_sequential_is_captured(cases):
    got = run_case("sequential", "aot_eager", cases)
    assert (got["compiles"], got["graphs"], got["breaks"]) == (1, 1, [])


def test_ddp_called_inside_a_compiled_step(cases):
    """The step's frame breaks at the DDP call (DDP's forward runs
    eagerly), the wrapped forward compiles on its own, the loss after it
    is the resume function's graph."""
    got = run_case("inside", "aot_eager", cases)
    assert got["names"][:2] == ["step", "forward"]
    assert got["graphs"] == 2
    assert len(got["breaks"]) == 1 and "DistributedDataParallel" in got["breaks"][0]


def test_ddp_no_sync_accumulates_locally(cases):
    got = run_case("no_sync", "aot_eager", cases)
    assert (got["compiles"], got["graphs"], got["breaks"]) == (1, 1, [])


def test_ddp_find_unused_parameters(cases):
    got = run_case("unused", "aot_eager", cases)
    assert (got["compiles"], got["graphs"], got["breaks"]) == (1, 1, [])


def test_ddp_graph_is_cut_at_bucket_boundaries(cases):
    """10 KB buckets (a layer is 4.1 KB): the captured graph is cut where
    DDP's buckets end, counted from the graph's end, each piece compiled by
    the backend on its own; gradients still equal eager DDP's."""
    got = run_case("split", "aot_eager", cases)
    assert (got["compiles"], got["graphs"], got["breaks"]) == (1, 1, [])
    (buckets,) = got["buckets"]
    assert [len(b) for b in buckets] == [4, 6, 6]      # layers 0-1 | 2-4 | 5-7
    assert buckets[0][0] == "self_layers_0.bias" and buckets[-1][-1] == "self_layers_7.weight"


def test_fsdp2_regional_compile_per_block(cases):
    """FSDP2, fully_shard per block then the root, each block wrapped by
    optimize(): each block's forward is one graph with no break (FSDP's
    all-gather before it and reduce-scatter after its backward run as FSDP
    defines them, eagerly, around the compiled forward); gradient and
    parameter shards equal eager FSDP2's.  Two compiles for three blocks:
    block 0's entry is guarded on the block, block 1 recompiles generic
    (config.generic_module_frames: the blocks' unsharded parameters are
    graph inputs) and block 2 hits it."""
    got = run_case("fsdp_regional", "aot_eager", cases)
    assert got["names"] == ["forward"] * 2
    assert (got["compiles"], got["graphs"], got["breaks"]) == (2, 2, [])


def test_fsdp2_whole_model_breaks_once_per_block(cases):
    """The root compiled whole: a call of an FSDP-managed block (its
    forward hooks are FSDP's collectives) is a break, once per block and
    not per parameter; the blocks' forward compiles as a frame of its own,
    the code after it is a resume function; shards equal eager FSDP2's."""
    got = run_case("fsdp_whole", "aot_eager", cases)
    assert len(got["breaks"]) == 3
    assert all("FSDPBlock" in b and "hooks" in b for b in got["breaks"])
    # the root, and the blocks' shared forward (a generic module frame:
    # compiled once, at block 0)
    assert got["names"].count("forward") == 2
    assert got["graphs"] == 3          # embed | the blocks' forward | head (after the last block)


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


# ---------------------------------------------------------------- the cut shown

@pytest.fixture
def one_rank_group(tmp_path):
    """A gloo process group of this process alone (world size 1: DDP runs
    its reducer and buckets as with more ranks, no process is spawned)."""
    import torch.distributed as dist
    dist.init_process_group("gloo", init_method=f"file://{tmp_path / 'store'}", rank=0,
                            world_size=1)
    yield
    dist.destroy_process_group()


def small_bucket_ddp():
    """DDP of Chain with buckets of two layers: its graph is cut in 3."""
    from torch.nn.parallel import DistributedDataParallel as DDP
    torch.manual_seed(0)
    layer_bytes = (16 * 16 + 16) * 4
    return DDP(Chain(), bucket_cap_mb=2 * layer_bytes / 2 ** 20)


CUT = [["self_layers_0.weight", "self_layers_0.bias", "self_layers_1.weight", "self_layers_1.bias"],
       ["self_layers_2.weight", "self_layers_2.bias", "self_layers_3.weight", "self_layers_3.bias"],
       ["self_layers_4.weight", "self_layers_4.bias", "self_layers_5.weight", "self_layers_5.bias"]]


def test_explain_shows_which_bucket_each_piece_holds(one_rank_group):
    import dynamo
    out = dynamo.explain(small_bucket_ddp())(torch.randn(4, 16))
    assert (out.graph_count, out.graph_break_count) == (1, 0)
    (pieces,) = out.ddp_pieces
    assert [sorted(params) for params, _ in pieces] == [sorted(b) for b in CUT]
    assert [ops for _, ops in pieces] == [4, 4, 5]     # (linear, tanh) x2 | ... | and sum
    text = str(out)
    assert "DDP Bucket Pieces:" in text and "Bucket 3: 5 ops, 4 params" in text
    assert "graph 1 into 3 pieces" in out.summary()


def test_tools_show_the_ddp_cut(one_rank_group, tmp_path):
    """The published record carries the cut (GRAPH ddp_buckets, NODE
    ddp_bucket: inspect/record.h); dynamo-inspect, dynamo-dot and dynamo-top
    show it from a snapshot."""
    import dynamo
    from dynamo import records, telemetry
    if not telemetry.enabled():
        pytest.skip("telemetry is off in this process")
    bins = {t: os.path.join(ROOT, "build", "bin", t)
            for t in ("dynamo-inspect", "dynamo-dot", "dynamo-top")}
    if not all(os.path.exists(b) for b in bins.values()):
        pytest.skip("the tools are not built (make all)")
    dynamo.reset()
    f = dynamo.optimize("eager")(small_bucket_ddp())
    f(torch.randn(4, 16))[0].backward()
    (rec,) = records.all_records()
    name = rec.graphs[0].name
    snap = tmp_path / "ddp.snap"
    dynamo.save_snapshot(snap)

    def tool(t, *args):
        proc = subprocess.run([bins[t], "--file", str(snap), *args], capture_output=True,
                              text=True, timeout=60)
        assert proc.returncode == 0, proc.stderr
        return proc.stdout

    dumped = json.loads(tool("dynamo-inspect"))
    graphs = [g for c in dumped["frames"] for r in c["records"] for g in r["graphs"]
              if g["name"] == name]
    (graph,) = graphs
    assert [sorted(b) for b in graph["ddp_buckets"]] == [sorted(b) for b in CUT]
    calls = [n["ddp_bucket"] for n in graph["nodes"] if n["op"].startswith("call_")]
    assert calls == sorted(calls) and set(calls) == {1, 2, 3}
    assert {n["ddp_bucket"] for n in graph["nodes"] if n["op"] in ("placeholder", "output")} == {0}

    listing = tool("dynamo-dot", "--list")
    assert "cut at DDP buckets: 3 pieces" in listing
    assert "DDP bucket 1: 4 params" in listing
    dot = tool("dynamo-dot", "--graph", name)
    assert all(f"cluster_ddp_bucket_{k}" in dot for k in (1, 2, 3))
    assert "DDP bucket 2 of 3" in dot

    report = tool("dynamo-top", "--once")
    assert "cut at DDP buckets: 3 pieces" in report
    assert "DDP bucket 3: 4 params:" in report and "BUCKET" in report
    dynamo.reset()
