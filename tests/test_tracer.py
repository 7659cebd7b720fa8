"""Tracer pipeline tests without the C hook: compile_frame is called with a
call's arguments, the rewritten code runs as a plain function (resume
functions then run the original bytecode eagerly) and results, graphs, ops,
breaks and guards are compared with what the seeds show."""
import builtins
import inspect
import types

import pytest
import scipy.fft  # noqa: F401 - f3 uses scipy.fft like the seed tutorial
import torch
import torch.nn.functional as F

from dynamo import config
from dynamo.convert_frame import compile_frame
from dynamo.exc import Unsupported
from dynamo.testing import CompileCounter, same
from seed_examples import toy_example
import guard_ref  # the plain-Python guard evaluator (a test oracle)


# ---------------------------------------------------------------- helpers

def call_compiled(fn, *args, backend=None, nopython=False, code=None, **kwargs):
    """compile_frame on fn(*args, **kwargs), then run the rewritten code.
    Returns (CompileOutput, counter, result)."""
    cc = backend or CompileCounter()
    code = code or fn.__code__
    if code is fn.__code__:
        bound = inspect.signature(fn).bind(*args, **kwargs)
        bound.apply_defaults()
        f_locals = dict(bound.arguments)
    else:
        f_locals = dict(zip(code.co_varnames, args))
    out = compile_frame(code, f_locals, fn.__globals__, builtins.__dict__, fn, cc,
                        nopython=nopython)
    new_fn = types.FunctionType(out.new_code, fn.__globals__, code.co_name,
                                fn.__defaults__ if code is fn.__code__ else None, fn.__closure__)
    new_fn.__kwdefaults__ = fn.__kwdefaults__ if code is fn.__code__ else None
    return out, cc, new_fn(*args, **kwargs)


def graph_ops(gm):
    return [n.target for n in gm.graph.nodes if n.op.startswith("call_")]


def placeholders(gm):
    return [n.name for n in gm.graph.nodes if n.op == "placeholder"]


# ---------------------------------------------------------------- seeds

def cos_sin(x, y):
    a = torch.cos(x)
    b = torch.sin(y)
    return a + b


def test_cos_sin_one_graph_three_ops():
    x, y = torch.randn(10), torch.randn(10)
    out, cc, res = call_compiled(cos_sin, x, y)
    assert cc.frame_count == 1 and cc.op_count == 3
    import operator
    assert graph_ops(cc.graphs[0]) == [torch.cos, torch.sin, operator.add]
    assert placeholders(cc.graphs[0]) == ["x", "y"]
    assert same(res, cos_sin(x, y))
    assert out.break_reasons == [] and out.resume_codes == []
    assert out.graphs[0].name.startswith("__compiled_fn_") and out.graphs[0].op_count == 3


class MockModule(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.relu = torch.nn.ReLU()

    def forward(self, x):
        return self.relu(torch.cos(x))


def test_mock_module_one_graph():
    mod = MockModule()
    x = torch.randn(10)
    out, cc, res = call_compiled(MockModule.forward, mod, x)
    assert cc.frame_count == 1 and cc.op_count == 2
    assert same(res, mod(x))
    kinds = [g.describe() for g in out.guards]
    assert " - local 'self' ID_MATCH" in kinds and " - local 'x' TENSOR_MATCH" in kinds


def test_toy_example_break_and_resumes():
    import operator
    a, b = torch.randn(10), torch.randn(10)
    out, cc, res = call_compiled(toy_example, a, b)
    assert same(res, toy_example(a, b))
    gm = cc.graphs[0]
    assert graph_ops(gm) == [torch.abs, operator.add, operator.truediv, "sum", operator.lt]
    assert placeholders(gm) == ["a", "b"]
    assert len(out.break_reasons) == 1
    br = out.break_reasons[0]
    assert br.reason == "generic_jump TensorVariable()"
    assert br.filename == toy_example.__code__.co_filename and br.lineno == toy_example.__code__.co_firstlineno + 2
    assert [g.describe() for g in out.guards][:3] == [
        " - local 'a' TENSOR_MATCH", " - local 'b' TENSOR_MATCH", " - global 'torch' FUNCTION_MATCH"]
    names = [c.co_name for c in out.resume_codes]
    assert len(names) == 2 and all(n.startswith("__resume_at_") for n in names)
    for c in out.resume_codes:
        assert c.co_varnames[:c.co_argcount] == ("b", "x")
        assert c.co_filename == toy_example.__code__.co_filename
        assert c.co_firstlineno == toy_example.__code__.co_firstlineno
        assert c.co_name in toy_example.__globals__
    x = a / (torch.abs(a) + 1)
    ops = []
    for c in out.resume_codes:
        o2, cc2, r2 = call_compiled(toy_example, b, x, code=c)
        assert cc2.frame_count == 1
        ops.append(graph_ops(cc2.graphs[0]))
        assert placeholders(cc2.graphs[0]) == ["b", "x"]
    assert sorted(ops, key=len) == [[operator.mul], [operator.mul, operator.mul]]


def test_toy_example_matches_eager_over_random_inputs():
    torch.manual_seed(0)
    for _ in range(10):
        a, b = torch.randn(10), torch.randn(10)
        _, _, res = call_compiled(toy_example, a, b)
        assert same(res, toy_example(a, b))


def test_resume_code_is_cached():
    a, b = torch.randn(10), torch.randn(10)
    out1, _, _ = call_compiled(toy_example, a, b)
    out2, _, _ = call_compiled(toy_example, a, b)
    assert [id(c) for c in out1.resume_codes] == [id(c) for c in out2.resume_codes]


def test_nopython_raises_generic_jump():
    with pytest.raises(Unsupported) as info:
        call_compiled(toy_example, torch.randn(10), torch.randn(10), nopython=True)
    text = str(info.value)
    assert text.startswith("generic_jump TensorVariable()")
    assert "Processing original code:" in text
    assert f'File "{toy_example.__code__.co_filename}", line {toy_example.__code__.co_firstlineno + 2}, in toy_example' in text
    assert "if b.sum() < 0:" in text


def f2(x, y):
    return x + y


def test_int_argument_equals_match():
    x = torch.randn(5, 5)
    out, cc, res = call_compiled(f2, x, 3)
    assert same(res, x + 3) and cc.frame_count == 1
    eq = [g for g in out.guards if g.describe() == " - local 'y' EQUALS_MATCH"]
    assert len(eq) == 1 and eq[0].lower() == (2, (0, 1), 3)


def f3(x):
    x = x * 2
    x = scipy.fft.dct(x.numpy())
    x = torch.from_numpy(x)
    x = x * 2
    return x


def test_numpy_scipy_break():
    x = torch.randn(5, 5)
    out, cc, res = call_compiled(f3, x)
    assert same(res, f3(x))
    assert cc.frame_count == 1 and cc.op_count == 1
    assert len(out.break_reasons) == 1 and "numpy" in out.break_reasons[0].reason


# ---------------------------------------------------------------- models

class MLP(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.layers = torch.nn.ModuleList([torch.nn.Linear(8, 16), torch.nn.Linear(16, 16)])
        self.head = torch.nn.Linear(16, 4)
        self.drop = torch.nn.Dropout(0.0)

    def forward(self, x):
        for layer in self.layers:
            x = F.relu(layer(x))
        return self.head(self.drop(x))


class SmallCNN(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = torch.nn.Conv2d(3, 8, 3, padding=1)
        self.bn = torch.nn.BatchNorm2d(8)
        self.fc = torch.nn.Linear(8, 10)

    def forward(self, x):
        x = torch.relu(self.bn(self.conv(x)))
        x = F.adaptive_avg_pool2d(x, 1).flatten(1)
        return self.fc(x)


def attention(q, k, v, mask=None):
    scale = q.shape[-1] ** -0.5
    scores = (q @ k.transpose(-2, -1)) * scale
    if mask is not None:
        scores = scores.masked_fill(mask, float("-inf"))
    return torch.softmax(scores, dim=-1) @ v


class EncoderLayer(torch.nn.Module):
    def __init__(self, d=16, heads=2):
        super().__init__()
        self.heads = heads
        self.qkv = torch.nn.Linear(d, 3 * d)
        self.proj = torch.nn.Linear(d, d)
        self.ln1 = torch.nn.LayerNorm(d)
        self.ln2 = torch.nn.LayerNorm(d)
        self.ff = torch.nn.Sequential(torch.nn.Linear(d, 32), torch.nn.GELU(), torch.nn.Linear(32, d))

    def split(self, t):
        b, n, d = t.shape
        return t.view(b, n, self.heads, d // self.heads).transpose(1, 2)

    def forward(self, x, mask=None):
        b, n, d = x.shape
        q, k, v = self.qkv(self.ln1(x)).chunk(3, dim=-1)
        q, k, v = [self.split(t) for t in (q, k, v)]
        y = attention(q, k, v, mask=mask).transpose(1, 2).reshape(b, n, d)
        x = x + self.proj(y)
        return x + self.ff(self.ln2(x))


@pytest.mark.parametrize("model_cls,shape", [(MLP, (4, 8)), (SmallCNN, (2, 3, 8, 8)),
                                             (EncoderLayer, (2, 5, 16))])
def test_models_one_graph(model_cls, shape):
    torch.manual_seed(0)
    model = model_cls().eval()
    x = torch.randn(*shape)
    out, cc, res = call_compiled(type(model).forward, model, x)
    assert cc.frame_count == 1 and out.break_reasons == []
    assert same(res, model(x))


def test_batchnorm_running_stats_update_like_eager():
    from dynamo.backends import aot_eager
    torch.manual_seed(0)
    model = SmallCNN().train()
    ref = SmallCNN().train()
    ref.load_state_dict(model.state_dict())
    x = torch.randn(2, 3, 8, 8)
    out, cc, res = call_compiled(SmallCNN.forward, model, x, backend=aot_eager)
    assert same(res, ref(x))
    assert same(model.bn.running_mean, ref.bn.running_mean)
    assert int(model.bn.num_batches_tracked) == int(ref.bn.num_batches_tracked) == 1


def train_step(model, x, y):
    out = model(x)
    loss = F.mse_loss(out, y)
    loss.backward()
    return loss


@pytest.mark.parametrize("backend", ["eager", "aot_eager"])
def test_training_step_gradients_match_eager(backend):
    from dynamo import backends
    torch.manual_seed(0)
    model = MLP()
    ref = MLP()
    ref.load_state_dict(model.state_dict())
    x, y = torch.randn(4, 8), torch.randn(4, 4)
    _, fn = backends.lookup(backend)
    cc = CompileCounter()

    def compiler(gm, example_inputs):
        cc(gm, example_inputs)
        return fn(gm, example_inputs)
    out, _, loss = call_compiled(train_step, model, x, y, backend=compiler)
    ref_loss = train_step(ref, x, y)
    assert same(loss, ref_loss)
    assert cc.frame_count == 1
    assert len(out.break_reasons) == 1 and "backward" in out.break_reasons[0].reason
    for p, q in zip(model.parameters(), ref.parameters()):
        assert p.grad is not None and same(p.grad, q.grad)


def test_inductor_backend_on_mlp():
    from dynamo.backends import inductor
    torch.manual_seed(0)
    model = MLP().eval()
    x = torch.randn(4, 8)
    out, _, res = call_compiled(MLP.forward, model, x, backend=inductor)
    assert same(res, model(x))


# ---------------------------------------------------------------- language

def closures_and_comprehensions(x, scale=2.0, *extra, **opts):
    k = 3

    def inner(t, add=1):
        return t * k + add

    sq = lambda t: t * t  # noqa: E731
    parts = [inner(x, add=i) for i in range(3)]
    total = sum(parts[1:], parts[0])
    d = {"a": total, "b": sq(x)}
    for name, value in d.items():
        total = total + value * scale
    a, *rest = parts
    if opts.get("neg", False):
        total = -total
    return total + len(rest) + len(extra), d["b"]


def test_closures_lambdas_comprehensions_kwargs():
    x = torch.randn(3)
    out, cc, res = call_compiled(closures_and_comprehensions, x, 0.5, 1, 2, neg=True)
    assert same(res, closures_and_comprehensions(x, 0.5, 1, 2, neg=True))
    assert cc.frame_count == 1 and out.break_reasons == []


def grad_modes(x, w):
    y = x * w
    with torch.no_grad():
        z = y * 2
    return y + z, z.requires_grad


def test_no_grad_block():
    x, w = torch.randn(3), torch.randn(3, requires_grad=True)
    out, cc, res = call_compiled(grad_modes, x, w)
    ref = grad_modes(x, w)
    assert same(res[0], ref[0]) and res[1] is False and res[0].requires_grad
    assert cc.frame_count == 1 and torch.is_grad_enabled()


def print_in_no_grad(x):
    with torch.no_grad():
        y = x * 2
        print("inside", y.shape)
        z = y + 1
    return z


def test_break_inside_no_grad_block():
    x = torch.randn(3, requires_grad=True)
    out, cc, res = call_compiled(print_in_no_grad, x)
    assert same(res, print_in_no_grad(x)) and not res.requires_grad
    assert torch.is_grad_enabled()
    assert len(out.break_reasons) == 1


def unsupported_nested_call(x):
    y = x + 1
    z = torch.relu(helper_opaque(y))
    return z * 2


def helper_opaque(t):
    print("eager")
    return t


def test_break_with_null_below_call():
    x = torch.randn(4)
    out, cc, res = call_compiled(unsupported_nested_call, x)
    assert same(res, unsupported_nested_call(x))
    assert len(out.break_reasons) == 1 and "print" in out.break_reasons[0].reason
    assert out.break_reasons[0].user_stack[-1].name == "helper_opaque"


def no_tensor_ops(n, m):
    return n * m + 1


def test_no_tensor_op_keeps_original_code():
    out, cc, res = call_compiled(no_tensor_ops, 2, 3)
    assert res == 7 and out.new_code is no_tensor_ops.__code__ and cc.frame_count == 0
    assert {g.describe() for g in out.guards} >= {" - local 'n' EQUALS_MATCH", " - local 'm' EQUALS_MATCH"}


def containers_of_tensors(xs, cfg):
    out = []
    for i, (a, b) in enumerate(zip(xs, xs[1:])):
        out.append(a * b + i)
    if cfg["mode"] == "sum":
        return {"s": sum(out), "n": len(out)}
    return out


def test_containers_and_guards():
    xs = [torch.randn(2) for _ in range(3)]
    out, cc, res = call_compiled(containers_of_tensors, xs, {"mode": "sum"})
    assert same(res, containers_of_tensors(xs, {"mode": "sum"}))
    lowered = [g.lower() for g in out.guards]
    assert (3, (0, 0), list, 3) in lowered
    assert (6, (0, 1), ("mode",)) in lowered
    assert (2, (4, (0, 1), "mode"), "sum") in lowered


# ---------------------------------------------------------------- guards

def test_guard_lower_and_describe():
    from dynamo import guards as G
    t = torch.randn(2, 3)
    g = G.Guard(G.LocalSource("a", 0), G.TENSOR_MATCH, G.tensor_expected(t, False))
    low = g.lower()
    assert low[0] == 4 and low[1] == (0, 0) and low[2] is torch.Tensor
    assert low[3:] == (torch.float32, torch.device("cpu"), False, G.dispatch_keys(t), 2, (2, 3), (3, 1))
    assert g.describe() == " - local 'a' TENSOR_MATCH"
    assert G.Guard(G.GlobalSource("torch"), G.FUNCTION_MATCH, (torch,)).describe() == \
        " - global 'torch' FUNCTION_MATCH"
    src = G.AttrSource(G.ItemSource(G.LocalSource("self", 0), 0), "weight")
    assert src.name() == "L['self'][0].weight"
    assert src.lower() == (3, (4, (0, 0), 0), "weight")
    assert G.Guard(G.NoSource(), G.GRAD_MODE, (True,)).lower() == (5, (5,), True)


def test_reference_evaluator_and_explain():
    a, b = torch.randn(4), torch.randn(4)
    out, _, _ = call_compiled(toy_example, a, b)
    g = toy_example.__globals__
    from guard_ref import evaluate, explain_failure
    assert evaluate(out.guards, {"a": a, "b": b}, g, builtins.__dict__, None) == -1
    idx = evaluate(out.guards, {"a": torch.randn(8), "b": b}, g, builtins.__dict__, None)
    assert idx == 0
    assert explain_failure(out.guards[0], torch.randn(8)) == "L['a'].size()[0]: expected 4, actual 8"
    with torch.no_grad():
        assert evaluate(out.guards, {"a": a, "b": b}, g, builtins.__dict__, None) == len(out.guards) - 1


def test_dynamic_shapes_omits_sizes():
    old = config.dynamic_shapes
    config.dynamic_shapes = True
    try:
        out, _, _ = call_compiled(cos_sin, torch.randn(3), torch.randn(3))
    finally:
        config.dynamic_shapes = old
    # the alias of "every dimension symbolic from the first compile": sizes
    # unchecked by TENSOR_MATCH, related by SHAPE_GUARDs (0/1 specialized)
    t = [g for g in out.guards if g.kind == 4]
    assert len(t) == 2 and all(g.lower()[-2:] == ((None,), (1,)) for g in t)
    from dynamo import guards as G
    shapes = sorted(g.expected[0] for g in out.guards if g.kind == G.SHAPE_GUARD)
    assert shapes == ["2 <= L['y'].size()[0]", "L['x'].size()[0] == L['y'].size()[0]"], shapes


# ---------------------------------------------------------------- more breaks

def break_inside_loop(xs):
    total = xs[0] * 0
    for i, x in enumerate(xs):
        total = total + x * i
        print("step", i)
    return total


def test_break_inside_for_loop_rebuilds_iterator(monkeypatch):
    # the loop's resume functions (config.skip_frame_on_loop_break off)
    monkeypatch.setattr(config, "skip_frame_on_loop_break", False)
    xs = [torch.randn(3) for _ in range(3)]
    out, cc, res = call_compiled(break_inside_loop, xs)
    assert same(res, break_inside_loop(xs))
    assert len(out.break_reasons) == 1 and cc.frame_count == 1


class Counter(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.calls = 0
        self.lin = torch.nn.Linear(3, 3)

    def forward(self, x):
        y = self.lin(x)
        self.calls += 1
        return y * 2


def test_store_attr_on_module_is_written_back():
    # a plain attribute of a module is assigned after the graph (issue 31;
    # it was a break): one graph, no break, the counter moved once
    mod = Counter()
    x = torch.randn(2, 3)
    out, cc, res = call_compiled(Counter.forward, mod, x)
    assert mod.calls == 1 and same(res, mod.lin(x) * 2)
    assert out.break_reasons == [] and cc.frame_count == 1


def in_try_block(x):
    try:
        y = x + 1
        print("in try")
    except ValueError:
        y = x
    return y


def test_break_inside_try_runs_the_try_statement_eagerly():
    # the try statement is copied into the rewritten code as is (the op
    # inside it must raise where its handler sees it); the code after it
    # is a resume function
    x = torch.randn(3)
    out, cc, res = call_compiled(in_try_block, x)
    assert same(res, x + 1) and cc.frame_count == 0
    # the break is the print (x + 1 alone could be traced: config.trace_try_regions)
    assert len(out.break_reasons) == 1 and "print" in out.break_reasons[0].reason
    assert len(out.resume_codes) == 2     # where the body ends, where the handler ends
    with pytest.raises(Unsupported, match="print"):
        call_compiled(in_try_block, x, nopython=True)


def make_closure_writer():
    acc = torch.zeros(3)

    def f(x):
        nonlocal acc
        acc = acc + x
        return acc * 2
    return f


def test_write_to_frame_closure_is_stored_after_the_graph():
    f = make_closure_writer()
    x = torch.randn(3)
    out, cc, res = call_compiled(f, x)
    assert same(res, x * 2) and same(f.__closure__[0].cell_contents, x)
    # traced (one graph, no break): the rewritten code stores the cell
    assert out.break_reasons == [] and cc.frame_count == 1 and cc.op_count == 2


def namedtuple_result(x):
    import collections
    return NT(x + 1, x * 2), torch.max(x, dim=0).values


import collections  # noqa: E402
NT = collections.namedtuple("NT", ["a", "b"])


def test_namedtuples_built_and_returned():
    x = torch.randn(3, 2)
    out, cc, res = call_compiled(namedtuple_result, x)
    ref = namedtuple_result(x)
    assert type(res[0]) is NT and same(tuple(res[0]), tuple(ref[0])) and same(res[1], ref[1])
    assert cc.frame_count == 1 and out.break_reasons == []


class WithHook(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(3, 3)

    def forward(self, x):
        return self.lin(x).relu()


def test_module_with_backward_hooks_breaks_at_the_call():
    # forward hooks are inlined (test_zoo_idioms); backward hooks are not
    outer = torch.nn.Sequential(WithHook())
    seen = []
    outer[0].register_full_backward_pre_hook(lambda m, go: seen.append(1))

    def f(mod, x):
        return mod(x) + 1
    x = torch.randn(2, 3, requires_grad=True)
    out, cc, res = call_compiled(f, outer, x)
    res.sum().backward()
    assert seen == [1] and same(res, outer(x) + 1)
    assert "backward hooks" in out.break_reasons[0].reason


# ---------------------------------------------------------------- module / builtin guards

class Tree(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(3, 3)
        self.layers = torch.nn.ModuleList([torch.nn.ReLU(), torch.nn.Tanh()])
        self.heads = torch.nn.ModuleDict({"a": torch.nn.Linear(3, 1)})

    def forward(self, x):
        x = self.lin(x)
        for layer in self.layers:
            x = layer(x)
        return self.heads["a"](x) + self.layers[-1](x).sum()


def test_every_reached_submodule_has_one_id_guard():
    from dynamo import guards as G
    mod, x = Tree(), torch.randn(2, 3)
    out, cc, res = call_compiled(Tree.forward, mod, x)
    assert same(res, mod(x)) and cc.frame_count == 1
    ids = [g for g in out.guards if g.kind == G.ID_MATCH]
    # self, self.lin, self.layers, its 2 items, self.heads, heads['a']: one each
    assert len(ids) == 7, [g.source.name() for g in ids]
    lowered = [g.lower() for g in out.guards]
    assert (G.ID_MATCH, (4, (3, (0, 0), "_modules"), "lin"), mod.lin) in lowered
    assert (G.DICT_KEYS, (3, (4, (3, (0, 0), "_modules"), "layers"), "_modules"), ("0", "1")) in lowered
    assert [n.target for n in cc.graphs[0].graph.nodes if n.op == "call_module"][0] == "self_lin"
    args = ({"self": mod, "x": x}, Tree.forward.__globals__)
    assert guard_ref.evaluate(out.guards, *args, builtins.__dict__, None) == -1
    for replace in (lambda: setattr(mod, "lin", torch.nn.Linear(3, 3)),
                    lambda: mod.layers.__setitem__(1, torch.nn.Sigmoid()),
                    lambda: mod.layers.append(torch.nn.ReLU())):
        saved = (mod.lin, list(mod.layers))
        replace()
        failed = out.guards[guard_ref.evaluate(out.guards, *args, builtins.__dict__, None)]
        assert failed.kind in (G.ID_MATCH, G.DICT_KEYS), failed
        mod.lin, mod.layers = saved[0], torch.nn.ModuleList(saved[1])
        out, cc, _ = call_compiled(Tree.forward, mod, x)


def test_replaced_submodule_recompiles():
    import dynamo
    mod, x = Tree(), torch.randn(2, 3)
    cnt = CompileCounter()
    opt = dynamo.optimize(cnt)(mod)
    opt(x)
    mod.heads["a"] = torch.nn.Linear(3, 1)
    assert same(opt(x), mod(x)) and cnt.frame_count == 2
    opt(x)
    assert cnt.frame_count == 2


def uses_builtins(x):
    return x * len([1, 2]) + isinstance(x, torch.Tensor)


def test_builtins_get_a_global_function_match():
    from dynamo import guards as G
    x = torch.randn(3)
    out, cc, res = call_compiled(uses_builtins, x)
    lowered = [g.lower() for g in out.guards]
    assert (G.FUNCTION_MATCH, (1, "len"), len) in lowered
    assert (G.FUNCTION_MATCH, (1, "isinstance"), isinstance) in lowered
    assert " - global 'len' FUNCTION_MATCH" in [g.describe() for g in out.guards]
    shadowed = dict(uses_builtins.__globals__, len=lambda v: 10)
    idx = guard_ref.evaluate(out.guards, {"x": x}, shadowed, builtins.__dict__, None)
    assert out.guards[idx].source.name() == "G['len']"


# ---------------------------------------------------------------- generators, state queries

def lazy_generators(x):
    seen = []
    a, b = (t * 2 for t in (x, x + 1))
    g = (seen.append(i) or i for i in range(5))
    first = next(g)
    hit = any(seen.append(i) or i > 1 for i in range(10))
    return a + b + first + hit + len(seen) + sum(t.sum() for t in (x, a))


def test_generators_run_lazily_in_one_graph():
    x = torch.randn(3)
    out, cc, res = call_compiled(lazy_generators, x)
    assert same(res, lazy_generators(x))        # len(seen) == 1 + 3, as eager
    assert cc.frame_count == 1 and out.break_reasons == []


@pytest.mark.parametrize("train", [False, True])
@pytest.mark.parametrize("grad", [True, False])
def test_transformer_layer_root_one_graph(train, grad):
    import dynamo
    layer = torch.nn.TransformerEncoderLayer(32, 4, 64, batch_first=True).train(train)
    x = torch.randn(2, 3, 32)
    with torch.set_grad_enabled(grad):
        e = dynamo.explain(layer)(x)
        assert (e.graph_count, e.graph_break_count) == (1, 0), e.summary()
        dynamo.reset()
        torch.manual_seed(0)
        expected = layer(x)
        torch.manual_seed(0)
        cnt = CompileCounter()
        assert same(dynamo.optimize(cnt)(layer)(x), expected) and cnt.frame_count == 1
    fast = [g for g in e.out_guards if "_is_fastpath_enabled" in g.source.name()]
    assert len(fast) == 1 and fast[0].source.name().startswith("G['___globals_torch_backends_mha']")


def test_fastpath_flag_is_guarded():
    import dynamo
    import torch.backends.mha as mha
    layer = torch.nn.TransformerEncoderLayer(8, 2, 16, dropout=0.0, batch_first=True).eval()
    x = torch.randn(2, 3, 8)
    cnt = CompileCounter()
    opt = dynamo.optimize(cnt)(layer)
    with torch.no_grad():
        opt(x)
        mha.set_fastpath_enabled(False)
        try:
            assert same(opt(x), layer(x))
        finally:
            mha.set_fastpath_enabled(True)
    assert cnt.frame_count == 2


# ---------------------------------------------------------------- loops, logging

def loop_with_print(x):
    for i in range(5):
        x = x + i
        print(end="")
    return x


def test_break_in_loop_resumes_compile_with_one_resume_code(monkeypatch):
    # the loop's resume functions (config.skip_frame_on_loop_break off)
    monkeypatch.setattr(config, "skip_frame_on_loop_break", False)
    import dynamo
    x = torch.randn(3)
    cnt = CompileCounter()
    opt = dynamo.optimize(cnt)(loop_with_print)
    assert same(opt(x), loop_with_print(x))
    assert cnt.frame_count == 5 and cnt.op_count == 5
    assert same(opt(x), loop_with_print(x)) and cnt.frame_count == 5   # all cached
    e = dynamo.explain(loop_with_print)(x)
    assert e.graph_count == 5 and e.graph_break_count == 5
    out, _, _ = call_compiled(loop_with_print, x)
    (resume_code,) = out.resume_codes
    # the resume function takes the loop's remaining items as a tuple
    o2, cc2, r2 = call_compiled(loop_with_print, (2, 3, 4), None, x + 1, code=resume_code)
    assert same(r2, loop_with_print(x)) and cc2.frame_count == 1
    assert o2.resume_codes == [resume_code]         # a break in it resumes through it again


def test_failing_op_is_quiet_and_restores_logger_level():
    import logging
    lg = logging.getLogger("torch._subclasses.fake_tensor")
    before = lg.level

    def f(x):
        return (x + 1) @ torch.ones(3)
    with pytest.raises(RuntimeError):
        call_compiled(f, torch.ones(4))
    assert lg.level == before


def locals_after_op(x):
    y = x + 1  # noqa: F841
    return sorted(locals())


def test_break_code_deletes_its_temporaries():
    x = torch.randn(3)
    out, cc, res = call_compiled(locals_after_op, x)
    assert res == ["x", "y"] and cc.frame_count == 1 and len(out.break_reasons) == 1
    import dis
    insts = list(dis.get_instructions(out.new_code))
    stored = {i.argval for i in insts if i.opname == "STORE_FAST" and i.argval.startswith("___")}
    deleted = [i.argval for i in insts if i.opname == "DELETE_FAST"]
    # ___graph_out and the two ___stack temporaries, deleted before the eager call
    assert len(deleted) == 3 and set(deleted) == stored and "___graph_out" in stored
