"""CUDA: the guards of CUDA tensors, the backends on `cuda`, and the
"cudagraphs" backend (dynamo/backends/cudagraphs.py).

The tests that need a GPU skip without one; the first ones run everywhere
(cudagraphs on CPU inputs runs the graph plainly)."""
import pytest
import torch

import dynamo
import dynamo.backends.cudagraphs as cg
from dynamo.testing import CompileCounter

cuda = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")


class MLP(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.l1 = torch.nn.Linear(16, 32)
        self.l2 = torch.nn.Linear(32, 8)

    def forward(self, x):
        return self.l2(torch.relu(self.l1(x))).softmax(-1)


def counted(backend):
    """A CompileCounter that hands each graph on to a named backend."""
    cnt = CompileCounter()
    _, fn = dynamo.backends.lookup(backend)

    def compile_(gm, example_inputs):
        cnt(gm, example_inputs)
        return fn(gm, example_inputs)
    return cnt, compile_


def test_cudagraphs_is_a_backend_name():
    assert "cudagraphs" in dynamo.list_backends()


def test_cudagraphs_runs_cpu_graphs_plainly():
    cg.reset_stats()
    m = MLP().eval().to("cpu")      # CPU even under DYNAMO_TEST_DEVICE=cuda
    cnt, backend = counted("cudagraphs")
    opt = dynamo.optimize(backend)(m)
    x = torch.randn(4, 16, device="cpu")
    with torch.no_grad():
        for _ in range(3):
            torch.testing.assert_close(opt(x), m(x))
    assert cnt.frame_count == 1
    assert cg.stats["captures"] == 0 and cg.stats["replays"] == 0
    assert cg.stats["uncaptured"] == 1


# ------------------------------------------------------------------ on a GPU

@cuda
def test_cuda_tensor_guard_recompiles_for_cpu_and_back():
    def f(x):
        return x.sin() + 1
    cnt = CompileCounter()
    opt = dynamo.optimize(cnt)(f)
    xc = torch.randn(5, device="cuda")
    torch.testing.assert_close(opt(xc), f(xc))
    torch.testing.assert_close(opt(xc.cpu()), f(xc.cpu()))
    torch.testing.assert_close(opt(xc), f(xc))
    assert cnt.frame_count == 2
    assert opt(xc).device.type == "cuda" and opt(xc.cpu()).device.type == "cpu"


@cuda
@pytest.mark.parametrize("backend", ["eager", "aot_eager", "inductor", "cudagraphs"])
def test_backends_on_cuda_equal_eager(backend):
    torch.manual_seed(0)
    m = MLP().cuda().eval()
    cnt, compile_ = counted(backend)
    opt = dynamo.optimize(compile_)(m)
    with torch.no_grad():
        for _ in range(3):
            x = torch.randn(4, 16, device="cuda")
            torch.testing.assert_close(opt(x), m(x), rtol=1e-4, atol=1e-5)
    assert cnt.frame_count == 1


@cuda
def test_cudagraphs_replays_new_inputs_and_keeps_old_outputs():
    cg.reset_stats()
    torch.manual_seed(0)
    m = MLP().cuda().eval()
    opt = dynamo.optimize("cudagraphs")(m)
    xs = [torch.randn(4, 16, device="cuda") for _ in range(4)]
    with torch.no_grad():
        outs = [opt(x) for x in xs]
        for x, o in zip(xs, outs):      # an earlier result is not overwritten by a later replay
            torch.testing.assert_close(o, m(x))
    assert cg.stats["captures"] == 1
    assert cg.stats["replays"] == 4
    assert cg.stats["recaptures"] == 0


@cuda
def test_cudagraphs_takes_expanded_and_strided_inputs():
    cg.reset_stats()

    def f(a, b):
        return (a * b).sum(0) + b.t()

    opt = dynamo.optimize("cudagraphs")(f)
    for k in range(3):
        a = torch.randn(1, 4, device="cuda").expand(4, 4)     # stride 0: overlapping elements
        b = torch.randn(4, 4, device="cuda").t()               # transposed
        torch.testing.assert_close(opt(a, b), f(a, b))
    assert cg.stats["captures"] == 1 and cg.stats["replays"] == 3


@cuda
def test_cudagraphs_recaptures_when_a_parameter_moves():
    cg.reset_stats()
    torch.manual_seed(0)
    m = MLP().cuda().eval()
    opt = dynamo.optimize("cudagraphs")(m)
    x = torch.randn(4, 16, device="cuda")
    with torch.no_grad():
        opt(x)
        m.l1.weight.data = torch.randn_like(m.l1.weight)   # new storage, same shape
        torch.testing.assert_close(opt(x), m(x))
    assert cg.stats["recaptures"] == 1


@cuda
def test_cudagraphs_training_step_gradients_equal_eager():
    cg.reset_stats()
    torch.manual_seed(0)
    m = MLP().cuda()
    ref = MLP().cuda()
    ref.load_state_dict(m.state_dict())
    opt = dynamo.optimize("cudagraphs")(m)
    for step in range(3):
        x = torch.randn(4, 16, device="cuda")
        opt(x).pow(2).sum().backward()
        ref(x).pow(2).sum().backward()
        for (name, p), q in zip(m.named_parameters(), ref.parameters()):
            torch.testing.assert_close(p.grad, q.grad, rtol=1e-4, atol=1e-5, msg=name)
    assert cg.stats["captures"] == 2          # the forward graph and the backward graph
    assert cg.stats["replays"] == 6


class ConvBN(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = torch.nn.Conv2d(3, 8, 3)
        self.bn = torch.nn.BatchNorm2d(8)

    def forward(self, x):
        return self.bn(self.conv(x)).relu()


@cuda
def test_cudagraphs_reads_buffers_in_place_and_copies_only_user_inputs():
    # BatchNorm's running statistics are buffers, not nn.Parameters: they
    # were copied into the graph's memory on every replay (3 per BatchNorm)
    cg.reset_stats()
    torch.manual_seed(0)
    m = ConvBN().cuda().eval()
    cnt, compile_ = counted("cudagraphs")
    opt = dynamo.optimize(compile_)(m)
    with torch.no_grad():
        for _ in range(3):
            x = torch.randn(2, 3, 8, 8, device="cuda")
            torch.testing.assert_close(opt(x), m(x), rtol=1e-4, atol=1e-5)
        m.bn.running_mean.add_(0.5)         # in place: the replay reads the new values
        x = torch.randn(2, 3, 8, 8, device="cuda")
        torch.testing.assert_close(opt(x), m(x), rtol=1e-4, atol=1e-5)
        m.bn.running_var.data = m.bn.running_var * 2     # moved: captured again
        torch.testing.assert_close(opt(x), m(x), rtol=1e-4, atol=1e-5)
    assert cnt.frame_count == 1
    assert cg.stats["captures"] == 1 and cg.stats["recaptures"] == 1
    assert cg.stats["replays"] == 5
    assert cg.stats["input_copies"] == 5          # x alone, once per replay


def masked_attention(q, k, v, mask):
    return torch.nn.functional.scaled_dot_product_attention(q, k, v, attn_mask=mask, scale=0.125)


@cuda
def test_sdpa_with_a_mask_over_growing_kv_lengths_is_one_dynamic_graph():
    """generate() with a DynamicCache on CUDA: the key length grows by one
    per token. CUDA's kernel choice read concrete sizes on the symbolic
    example values (a break per token, 44 breaks per run on an H200); the
    fake run now goes through the Python dispatcher when that happens."""
    dynamo.config.dynamic_shapes = True
    cnt = CompileCounter()
    opt = dynamo.optimize(cnt)(masked_attention)
    q = torch.randn(1, 4, 1, 64, device="cuda")
    for n in range(9, 14):
        k, v = torch.randn(1, 4, n, 64, device="cuda"), torch.randn(1, 4, n, 64, device="cuda")
        mask = torch.zeros(1, 1, 1, n, device="cuda")
        torch.testing.assert_close(opt(q, k, v, mask), masked_attention(q, k, v, mask))
    assert cnt.frame_count == 1 and cnt.op_count >= 1
