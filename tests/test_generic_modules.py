"""Generic module frames (config.generic_module_frames, issue 31): a frame
reached from a compiled one (each layer's forward a frame of its own after
a graph break in the model's loop) traces its nn.Module arguments as any
instance of their class from its first compile, so every layer hits that
entry; the function handed to optimize() keeps its module's identity
until another instance of the same class comes, and is generic from then
on. Counts compiles and graphs, and
checks the guards that still hold per instance: parameters by value and
shape, submodules by type, `training`."""
import torch

import dynamo
from dynamo import config
from dynamo.testing import CompileCounter

import pytest


@dynamo.disable
def _eager(h):
    """Runs eagerly: a graph break inside each block."""
    return h + 0


class Block(torch.nn.Module):
    def __init__(self, d=8, act=None):
        super().__init__()
        self.lin = torch.nn.Linear(d, d)
        self.norm = torch.nn.LayerNorm(d)
        self.act = act or torch.nn.GELU()
        self.register_buffer("scale", torch.full((d,), 0.5))

    def forward(self, x):
        h = _eager(self.act(self.lin(self.norm(x))))
        return x + h * self.scale


class Stack(torch.nn.Module):
    def __init__(self, n=4, **kw):
        super().__init__()
        self.blocks = torch.nn.ModuleList([Block(**kw) for _ in range(n)])

    def forward(self, x):
        for b in self.blocks:
            x = b(x)
        return x


def _run(model, x, cnt=None):
    dynamo.reset()
    cnt = cnt or CompileCounter()
    out = dynamo.optimize(cnt)(model)(x)
    return out, cnt


@pytest.fixture(autouse=True)
def _fresh():
    dynamo.reset()
    yield
    dynamo.reset()


def test_layers_share_one_entry_after_the_second_instance():
    torch.manual_seed(0)
    model, x = Stack(6).eval(), torch.randn(3, 8)
    with torch.no_grad():
        ref = model(x)
        opt = dynamo.optimize(cnt := CompileCounter())(model)
        out = opt(x)
        graphs = cnt.frame_count
        torch.testing.assert_close(out, ref)
        opt(x)
        assert cnt.frame_count == graphs            # a second call compiles nothing
    with config.overrides({"generic_module_frames": False}):
        dynamo.reset()
        per_instance = CompileCounter()
        with torch.no_grad():
            torch.testing.assert_close(dynamo.optimize(per_instance)(model)(x), ref)
    # Block.forward and its resume function: once, generic; blocks 1-5 hit.
    # Per instance: 6 each.
    assert graphs == 2 and per_instance.frame_count == 2 * 6


def test_a_generic_entry_reads_each_instances_parameters():
    """Parameters are graph inputs of the generic entry: another block's
    values, a replaced Parameter and an in-place update are all seen."""
    torch.manual_seed(1)
    model, x = Stack(3).eval(), torch.randn(2, 8)
    with torch.no_grad():
        opt = dynamo.optimize(cnt := CompileCounter())(model)
        opt(x)
        graphs = cnt.frame_count
        model.blocks[2].lin.weight = torch.nn.Parameter(torch.randn(8, 8))
        model.blocks[1].lin.bias.add_(3.0)
        model.blocks[0].scale.mul_(2.0)
        torch.testing.assert_close(opt(x), model(x))
        assert cnt.frame_count == graphs


def test_generic_entry_still_guards_type_shape_and_training():
    torch.manual_seed(2)
    model, x = Stack(3).eval(), torch.randn(2, 8)
    with torch.no_grad():
        opt = dynamo.optimize(cnt := CompileCounter())(model)
        opt(x)
        graphs = cnt.frame_count
        # a submodule of another type: the TYPE_MATCH on it fails
        model.blocks[2].act = torch.nn.ReLU()
        torch.testing.assert_close(opt(x), model(x))
        assert cnt.frame_count > graphs
        graphs = cnt.frame_count
        # a parameter of another shape: its TENSOR_MATCH fails
        model.blocks[2].scale = torch.ones(1)
        torch.testing.assert_close(opt(x), model(x))
        assert cnt.frame_count > graphs
    model.train()
    torch.testing.assert_close(opt(x), model(x))


def test_gradients_reach_each_instances_parameters():
    torch.manual_seed(3)
    model, x = Stack(4), torch.randn(2, 8)
    ref_model = Stack(4)
    ref_model.load_state_dict(model.state_dict())
    ref_model(x).sum().backward()
    dynamo.optimize("aot_eager")(model)(x).sum().backward()
    for (name, p), q in zip(model.named_parameters(), ref_model.parameters()):
        assert p.grad is not None, name
        torch.testing.assert_close(p.grad, q.grad, msg=name)


def test_off_keeps_one_entry_per_instance():
    torch.manual_seed(4)
    model, x = Stack(4).eval(), torch.randn(2, 8)
    with config.overrides({"generic_module_frames": False}), torch.no_grad():
        opt = dynamo.optimize(cnt := CompileCounter())(model)
        torch.testing.assert_close(opt(x), model(x))
        first = cnt.frame_count
    dynamo.reset()
    with torch.no_grad():
        opt = dynamo.optimize(cnt2 := CompileCounter())(model)
        torch.testing.assert_close(opt(x), model(x))
    assert (first, cnt2.frame_count) == (2 * 4, 2)


def test_the_optimized_module_keeps_its_identity_until_a_second_instance():
    """optimize(block): its forward's `self` is guarded by identity (the
    parameters are graph constants); a second Block through the same code
    recompiles once, generic, and a third hits."""
    torch.manual_seed(5)
    blocks, x = [Block().eval() for _ in range(3)], torch.randn(2, 8)
    cnt = CompileCounter()
    with torch.no_grad():
        for i, b in enumerate(blocks):
            torch.testing.assert_close(dynamo.optimize(cnt)(b)(x), b(x))
            assert cnt.frame_count == 2 * min(i + 1, 2), (i, cnt.frame_count)
        first = dynamo.optimize(cnt)(blocks[0])
        torch.testing.assert_close(first(x), blocks[0](x))
    assert cnt.frame_count == 4


class Tagged(torch.nn.Module):
    """Keys a table by id(self), as some libraries cache per module."""
    table = {}

    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(8, 8)

    def forward(self, x):
        h = _eager(self.lin(x))
        return h + Tagged.table.get(id(self), 0.0)


def test_id_of_a_generic_module_pins_the_instance():
    """id(self) folded to a constant needs that instance: the generic entry
    then guards it by identity (each layer its own entry, values right)."""
    layers = torch.nn.Sequential(Tagged(), Tagged(), Tagged())
    for k, m in enumerate(layers):
        Tagged.table[id(m)] = float(k + 1)
    x = torch.randn(2, 8)
    with torch.no_grad():
        torch.testing.assert_close(dynamo.optimize(CompileCounter())(layers)(x), layers(x))


class NormBlock(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(8, 8)
        self.bn = torch.nn.BatchNorm1d(8)

    def forward(self, x):
        return self.bn(_eager(self.lin(x))) + x


@pytest.mark.parametrize("backend", ["eager", "aot_eager"])
def test_training_batchnorm_updates_each_instances_buffers(backend):
    """Leaf modules of a generic module are inlined: a training BatchNorm's
    running statistics and counter, graph inputs now, are updated in each
    block's own buffers, and the gradients match eager's."""
    import copy
    torch.manual_seed(6)
    model = torch.nn.Sequential(NormBlock(), NormBlock(), NormBlock())
    ref, x = copy.deepcopy(model), torch.randn(4, 8)
    opt = dynamo.optimize(backend)(model)
    for _ in range(2):
        out, want = opt(x), ref(x)
        out.sum().backward()
        want.sum().backward()
        torch.testing.assert_close(out, want)
    for (name, a), b in zip(model.state_dict().items(), ref.state_dict().values()):
        torch.testing.assert_close(a, b, msg=name)
    for (name, p), q in zip(model.named_parameters(), ref.parameters()):
        torch.testing.assert_close(p.grad, q.grad, msg=name)


class Tied(torch.nn.Module):
    """Counts its parameters (a tied weight counts once)."""
    def __init__(self, tie):
        super().__init__()
        self.a = torch.nn.Linear(8, 8, bias=False)
        self.b = torch.nn.Linear(8, 8, bias=False)
        if tie:
            self.b.weight = self.a.weight

    def forward(self, x):
        h = _eager(self.a(x))          # b is reached through parameters() alone
        return h * len(list(self.parameters()))


def test_parameters_of_a_generic_module_keep_their_ties():
    """parameters() lists a tied weight once: a generic entry traced on a
    tied instance guards the tie (SAME_OBJECT), so an untied instance of
    the same class recompiles and counts two."""
    torch.manual_seed(7)
    layers = torch.nn.Sequential(Tied(True), Tied(True), Tied(False))
    x = torch.randn(2, 8)
    with torch.no_grad():
        torch.testing.assert_close(dynamo.optimize(CompileCounter())(layers)(x), layers(x))


# ------------------------------------------ random layers and changes, vs eager
class _Inner(torch.nn.Module):
    def __init__(self, k):
        super().__init__()
        self.k = k
        self.p = torch.nn.Parameter(torch.tensor(float(k)))

    def forward(self, t):
        return t * self.p + self.k


class _Lay(torch.nn.Module):
    def __init__(self, k, idx, inner=True):
        super().__init__()
        self.w = torch.nn.Parameter(torch.tensor(k))
        self.register_buffer("b", torch.full((3,), k / 2))
        self.idx = idx
        self.inner = _Inner(idx) if inner else None
        self.act = torch.nn.ReLU() if idx % 2 else torch.nn.Tanh()
        self.lin = torch.nn.Linear(3, 3)

    def forward(self, t):
        t = self.lin(t * self.w + self.b)
        if t.sum() > 0:                     # a data-dependent break in each layer
            t = t - self.idx
        if self.inner is not None:
            t = self.inner(t)
        return self.act(t) + len(list(self.parameters()))


class _Net(torch.nn.Module):
    def __init__(self, n):
        super().__init__()
        self.layers = torch.nn.ModuleList([_Lay(0.5 * (i + 1), i, i % 3 != 2) for i in range(n)])

    def forward(self, x):
        for layer in self.layers:
            x = layer(x)
        return x


_CHANGES = [
    lambda m, r: m.layers[0].w.data.fill_(r.uniform(-2, 2)),
    lambda m, r: setattr(m.layers[-1], "idx", r.randint(0, 5)),
    lambda m, r: setattr(m.layers[1], "inner", _Inner(r.randint(0, 3))),
    lambda m, r: setattr(m.layers[1], "inner", None),
    lambda m, r: setattr(m.layers[0], "act", torch.nn.Sigmoid()),
    lambda m, r: m.layers[-1].b.mul_(-1),
    lambda m, r: setattr(m.layers[0].lin, "weight", torch.nn.Parameter(torch.randn(3, 3))),
    lambda m, r: m.layers.append(_Lay(1.5, 7)),
    lambda m, r: setattr(m.layers[1].lin, "bias", None),
    lambda m, r: m.train(not m.training),
    lambda m, r: setattr(m.layers[-1], "b", torch.ones(3)),
]


@pytest.mark.parametrize("loop_cut", [False, True])
def test_random_layers_and_changes_equal_eager(loop_cut):
    """Models of 2-5 layers (a break in each), called five times with
    another batch size and one change between calls (a parameter's value,
    an int attribute, a submodule replaced or removed, a Parameter
    replaced, a layer appended, train/eval), under eager and aot_eager,
    against an eager copy given the same changes."""
    import copy
    import random
    for trial in range(12):
        rng = random.Random(trial)
        torch.manual_seed(trial)
        dynamo.reset()
        model = _Net(rng.randint(2, 5))
        ref = copy.deepcopy(model)
        opt = dynamo.optimize(rng.choice(["eager", "aot_eager"]))(model)
        with config.overrides({"skip_frame_on_loop_break": not loop_cut}), torch.no_grad():
            for call in range(5):
                x = torch.randn(rng.choice([2, 4]), 3)
                torch.testing.assert_close(opt(x), ref(x), msg=f"trial {trial} call {call}")
                change, seed = rng.choice(_CHANGES), rng.random()
                for m in (model, ref):
                    torch.manual_seed(call)
                    change(m, random.Random(seed))


def test_shared_chains_of_graph_inputs_are_read_once():
    """The rewritten code of a generic entry reads the parameters of each
    submodule through one `_modules[...]._parameters` read (the chain two
    inputs share is kept in a temporary), the temporaries are gone from
    the frame's locals when the eager code at the break runs, and every
    layer gets its own parameters."""
    import dis
    from dynamo import _C

    seen_locals = []

    @dynamo.disable
    def look(h):
        import sys
        seen_locals.append(sorted(sys._getframe(1).f_locals))
        return h + 0

    class Two(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = torch.nn.Linear(8, 8)
            self.norm = torch.nn.LayerNorm(8)

        def forward(self, x):
            h = self.norm(self.lin(x))
            h = look(h)
            return h * 2

    def run(block, x):
        return block(x)

    blocks = [Two() for _ in range(3)]
    x = torch.randn(2, 8)
    cnt = CompileCounter()
    opt = dynamo.optimize(cnt)(run)
    for b in blocks:
        assert torch.allclose(opt(b, x), b(x))
    for b in blocks:                         # hits: each block's own parameters
        assert torch.allclose(opt(b, x), b(x))
    generic = [e for e in _C.cache_entries(Two.forward.__code__)
               if any(g.kind == dynamo.guards.TYPE_MATCH for g in e.guards)]
    assert len(generic) == 1
    ops = [(i.opname, i.argval) for i in dis.get_instructions(generic[0].new_code)]
    assert ops.count(("LOAD_ATTR", "_modules")) == 1, ops
    assert ops.count(("LOAD_ATTR", "_parameters")) == 2, ops
    assert all(not any(n.startswith("___src") for n in names) for names in seen_locals)
