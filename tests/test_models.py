"""Real model code: one graph, no breaks, eager's results and gradients."""
import copy
import math

import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F

import dynamo
from dynamo.testing import CompileCounter, same


class MLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(16, 32)
        self.fc2 = nn.Linear(32, 32)
        self.fc3 = nn.Linear(32, 4)

    def forward(self, x):
        x = F.relu(self.fc1(x))
        x = torch.tanh(self.fc2(x))
        return self.fc3(x)


class SmallCNN(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 8, 3, padding=1)
        self.bn1 = nn.BatchNorm2d(8)
        self.conv2 = nn.Conv2d(8, 16, 3, stride=2)
        self.bn2 = nn.BatchNorm2d(16)
        self.head = nn.Linear(16, 10)

    def forward(self, x):
        x = F.relu(self.bn1(self.conv1(x)))
        x = F.relu(self.bn2(self.conv2(x)))
        x = x.mean(dim=(2, 3))
        return self.head(x)


class SelfAttention(nn.Module):
    def __init__(self, dim, heads):
        super().__init__()
        self.heads = heads
        self.qkv = nn.Linear(dim, 3 * dim)
        self.proj = nn.Linear(dim, dim)

    def forward(self, x):
        b, t, d = x.shape
        q, k, v = self.qkv(x).chunk(3, dim=-1)
        hd = d // self.heads
        q = q.view(b, t, self.heads, hd).transpose(1, 2)
        k = k.view(b, t, self.heads, hd).transpose(1, 2)
        v = v.view(b, t, self.heads, hd).transpose(1, 2)
        att = (q @ k.transpose(-2, -1)) / math.sqrt(hd)
        att = att.softmax(dim=-1)
        y = (att @ v).transpose(1, 2).reshape(b, t, d)
        return self.proj(y)


class EncoderLayer(nn.Module):
    def __init__(self, dim=32, heads=4, ff=64):
        super().__init__()
        self.attn = SelfAttention(dim, heads)
        self.norm1 = nn.LayerNorm(dim)
        self.norm2 = nn.LayerNorm(dim)
        self.ff = nn.Sequential(nn.Linear(dim, ff), nn.GELU(), nn.Linear(ff, dim))

    def forward(self, x):
        x = x + self.attn(self.norm1(x))
        return x + self.ff(self.norm2(x))


MODELS = [
    (MLP, lambda: torch.randn(8, 16)),
    (SmallCNN, lambda: torch.randn(2, 3, 16, 16)),
    (EncoderLayer, lambda: torch.randn(2, 5, 32)),
]


@pytest.mark.parametrize("make,inp", MODELS, ids=[m[0].__name__ for m in MODELS])
def test_model_one_graph_equal_to_eager(make, inp):
    torch.manual_seed(0)
    model = make().eval()
    cnt = CompileCounter()
    opt = dynamo.optimize(cnt)(model)
    x = inp()
    with torch.no_grad():
        expected = model(x)
    with torch.no_grad():
        got = opt(x)
    assert same(got, expected)
    assert cnt.frame_count == 1
    res = dynamo.explain(model)(x)
    assert res.graph_count == 1 and res.graph_break_count == 0


@pytest.mark.parametrize("make,inp", MODELS, ids=[m[0].__name__ for m in MODELS])
@pytest.mark.parametrize("backend", ["eager", "aot_eager"])
def test_training_step_same_gradients(make, inp, backend):
    torch.manual_seed(0)
    model = make().train()
    twin = copy.deepcopy(model)
    x = inp()
    target = torch.randn_like(copy.deepcopy(model)(x).detach())

    def step(mod, x, target):
        loss = F.mse_loss(mod(x), target)
        loss.backward()
        return loss

    eager_loss = step(twin, x, target)
    opt_step = dynamo.optimize(backend)(step)
    loss = opt_step(model, x, target)
    assert same(loss, eager_loss)
    for (name, p), (_, q) in zip(model.named_parameters(), twin.named_parameters()):
        assert p.grad is not None, name
        assert same(p.grad, q.grad, tol=1e-4), name
    for (name, b), (_, c) in zip(model.named_buffers(), twin.named_buffers()):
        assert same(b, c), name


def test_inductor_mlp():
    torch.manual_seed(0)
    model = MLP().eval()
    opt = dynamo.optimize("inductor")(model)
    x = torch.randn(8, 16)
    with torch.no_grad():
        assert same(opt(x), model(x), tol=1e-4)
