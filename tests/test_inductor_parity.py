"""The inductor backend's contract with Inductor, matched to torch.compile's:
what Inductor is told about each forward input (static parameters and
buffers) and whether its FX graph cache can serve a compile. These decide
steady-state cost on a GPU (per-call alignment checks of non-static inputs)
and compile time, not results; the tests count what Inductor receives."""
import pytest
import torch

import dynamo
from dynamo.testing import CompileCounter


@pytest.fixture(autouse=True)
def fresh_inductor_caches():
    """Each test compiles into empty on-disk caches (a graph served from
    them is not compiled again: the spies below would see nothing)."""
    from torch._inductor import utils
    fresh_cache = getattr(utils, "fresh_cache", None) or utils.fresh_inductor_cache
    with fresh_cache():
        yield


class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(4, 4)
        self.bn = torch.nn.BatchNorm1d(4)

    def forward(self, x):
        return self.bn(self.lin(x)).relu()


def spied_inner(monkeypatch):
    """Record (number of inputs, static input indices) per graph
    Inductor compiles, read where Inductor decides which inputs to check
    for alignment on every call."""
    import torch._inductor.compile_fx as cfx
    seen, check = [], cfx.get_input_idxs_to_check

    def spy(inputs, static_input_idxs):
        seen.append((len(inputs), sorted(static_input_idxs)))
        return check(inputs, static_input_idxs)
    monkeypatch.setattr(cfx, "get_input_idxs_to_check", spy)
    return seen


def counted_inductor():
    cnt = CompileCounter()
    _, fn = dynamo.backends.lookup("inductor")

    def compile_(gm, example_inputs):
        cnt(gm, example_inputs)
        return fn(gm, example_inputs)
    return cnt, compile_


def test_inductor_gets_parameters_and_buffers_as_static_inputs(monkeypatch):
    seen = spied_inner(monkeypatch)
    torch.manual_seed(0)
    m = Net().eval()
    lifted = len(list(m.parameters())) + len(list(m.buffers()))       # 4 + 3
    cnt, backend = counted_inductor()
    opt = dynamo.optimize(backend)(m)
    with torch.no_grad():
        for _ in range(3):
            x = torch.randn(3, 4)
            torch.testing.assert_close(opt(x), m(x))
    assert cnt.frame_count == 1
    # one inference graph: the lifted tensors, then x; only x is not static
    assert seen == [(lifted + 1, list(range(lifted)))]


def test_inductor_training_forward_static_backward_untouched(monkeypatch):
    seen = spied_inner(monkeypatch)
    torch.manual_seed(0)
    m, ref = Net(), Net()
    ref.load_state_dict(m.state_dict())
    lifted = len(list(m.parameters())) + len(list(m.buffers()))
    cnt, backend = counted_inductor()
    x = torch.randn(3, 4)
    dynamo.optimize(backend)(m)(x).sum().backward()
    ref(x).sum().backward()
    for p, q in zip(m.parameters(), ref.parameters()):
        torch.testing.assert_close(p.grad, q.grad)
    assert cnt.frame_count == 1
    # forward (the lifted tensors, then x), then backward (Inductor's own choice)
    assert len(seen) == 2
    assert seen[0] == (lifted + 1, list(range(lifted)))


def test_inductor_compile_can_be_served_by_its_caches(monkeypatch):
    # Inductor bypasses its FX graph cache (and AOT autograd its own) for
    # a compile without a shape env, i.e. from real example inputs: every
    # process compiled every graph again (ResNet: 30 s, where
    # torch.compile, served by the caches, took 2 s)
    import torch._inductor.compile_fx as cfx
    keys, inner = [], cfx.compile_fx_inner

    def spy(gm, example_inputs, **kwargs):
        out = inner(gm, example_inputs, **kwargs)
        keys.append(getattr(out, "_fx_graph_cache_key", None))
        return out
    monkeypatch.setattr(cfx, "compile_fx_inner", spy)
    torch.manual_seed(0)
    m = Net().eval()
    cnt, backend = counted_inductor()
    x = torch.randn(3, 4)
    with torch.no_grad():
        for _ in range(2):              # the second time after a reset: a new compile
            dynamo.reset()
            opt = dynamo.optimize(backend)(m)
            torch.testing.assert_close(opt(x), m(x))
            torch.testing.assert_close(opt(x), m(x))
    assert cnt.frame_count == 2
    # compiled once, with a cache key; the second compile was served by the cache
    assert len(keys) == 1 and keys[0] is not None


def test_inductors_generated_backward_is_not_compiled_as_user_code():
    """loss.backward() in the frame breaks the graph; autograd then calls
    Inductor's compiled backward, a Python module in Inductor's cache
    directory: it runs as generated, never traced (issue 27: 9 of 10
    graphs of a training step came from tracing it)."""
    import os
    from dynamo import records
    torch.manual_seed(0)
    m = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Linear(16, 1))

    def step(x):
        loss = m(x).pow(2).mean()
        loss.backward()
        return loss
    opt = dynamo.optimize("inductor")(step)
    x = torch.randn(4, 8)
    for _ in range(2):
        opt(x)
    from torch._inductor.runtime.cache_dir_utils import cache_dir
    generated = os.path.realpath(cache_dir())
    mine = [r for r in records.all_records() if r.filename == __file__]
    assert [r.name for r in mine] == ["step", "__resume_at_" + mine[1].name.split("_at_")[1]]
    assert not [r for r in records.all_records()
                if os.path.realpath(r.filename).startswith(generated)]
    assert sum(len(r.graphs) for r in mine) == 1
    ref = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Linear(16, 1))
    ref.load_state_dict(m.state_dict())
    m.zero_grad(), ref.zero_grad()
    opt(x)
    ref(x).pow(2).mean().backward()
    for p, q in zip(m.parameters(), ref.parameters()):
        assert torch.allclose(p.grad, q.grad, atol=1e-6)
