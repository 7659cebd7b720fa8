"""Behaviour that torchdynamo 1.13's test_misc checks (the peer suite in
../shared/peer), written as our own tests: each counts frames, graphs and
ops, not just outputs."""
import pytest
import torch

import dynamo
from dynamo.testing import CompileCounter, same


def test_is_tensor_like_folds_from_the_value_type():
    def f(x):
        if torch.overrides.is_tensor_like(x):
            return x * 2
        return torch.ones(3) + x

    cnt = CompileCounter()
    opt = dynamo.optimize(cnt, nopython=True)(f)
    x = torch.randn(3)
    assert same(opt(x), x * 2)
    assert same(opt(4), torch.ones(3) + 4)
    # one frame per input kind (mul; ones + add), no break under nopython
    assert (cnt.frame_count, cnt.op_count) == (2, 3)


# ---------------------------------------------------------------- Tensor.item() capture

def test_item_is_captured_into_the_graph_with_capture_scalar_outputs(monkeypatch):
    monkeypatch.setattr(dynamo.config, "capture_scalar_outputs", True)

    def fn(a, b):
        return (a + b).sum().item()

    cnt = CompileCounter()
    opt = dynamo.optimize(cnt, nopython=True)(fn)
    a, b = torch.randn(4, 4), torch.randn(4, 4)
    assert opt(a, b) == pytest.approx(fn(a, b))
    # the number is computed by the graph on each call, never baked in
    c = torch.randn(4, 4)
    assert opt(a, c) == pytest.approx(fn(a, c))
    assert isinstance(opt(a, c), float)
    assert (cnt.frame_count, cnt.op_count) == (1, 3)     # add, sum, item
    i = torch.tensor([[10.6, 11.7, -2.2]])
    f2 = dynamo.optimize("eager", nopython=True)(lambda x: torch.max(x).int().item())
    assert f2(i) == 11 and f2(torch.tensor([[6.0, 61.0, 2.0]])) == 61
    assert type(f2(i)) is int


def test_item_without_capture_breaks_the_graph():
    def fn(a, b):
        return (a + b).sum().item()

    cnt = CompileCounter()
    a, b = torch.randn(4), torch.randn(4)
    assert dynamo.optimize(cnt)(fn)(a, b) == pytest.approx(fn(a, b))
    assert (cnt.frame_count, cnt.op_count) == (1, 2)     # add, sum; item() runs eagerly


def test_captured_item_breaks_where_its_number_is_used(monkeypatch):
    monkeypatch.setattr(dynamo.config, "capture_scalar_outputs", True)

    def fn(x):
        s = x.sum().item()
        y = x * 2
        if s > 0:
            return y + s
        return y - 1

    cnt = CompileCounter()
    opt = dynamo.optimize(cnt)(fn)
    pos, neg = torch.ones(3), -torch.ones(3)
    assert same(opt(pos), fn(pos)) and same(opt(neg), fn(neg))
    # graph 1: sum, item, mul, gt (the branch needs the number: the graph
    # ends with the comparison as an output); the resume function compiles
    # once per branch taken
    assert cnt.frame_count == 3
    assert cnt.op_count == 4 + 1 + 1


def test_arithmetic_on_captured_items_stays_in_the_graph(monkeypatch):
    monkeypatch.setattr(dynamo.config, "capture_scalar_outputs", True)

    def fn(a, b, c):
        s = a[0].item() + b[0].item() * 2
        s -= c[0].item()
        return s, a * s, s > 1.5

    cnt = CompileCounter()
    opt = dynamo.optimize(cnt, nopython=True)(fn)
    for args in ([torch.randn(3) for _ in range(3)], [torch.randn(3) for _ in range(3)]):
        got, ref = opt(*args), fn(*args)
        assert got[0] == pytest.approx(ref[0]) and same(got[1], ref[1]) and got[2] == ref[2]
        assert type(got[0]) is float and type(got[2]) is bool
    # 3 getitem + 3 item, mul, add, sub, a * s, gt
    assert (cnt.frame_count, cnt.op_count) == (1, 11)
    gm, _ = dynamo.export(fn, *[torch.zeros(3)] * 3)
    xs = [torch.full((3,), v) for v in (1.0, 2.0, 3.0)]
    assert gm(*xs)[0] == 2.0 and gm(*xs)[2] is True


# ---------------------------------------------------------------- __subclasses__

class _Base:
    pass


class _Sub1(_Base):
    pass


class _Sub2(_Base):
    pass


def test_class_subclasses_fold_to_a_list_without_a_break():
    def fn(x):
        subs = _Base.__subclasses__()
        return x + len(subs), subs

    cnt = CompileCounter()
    x = torch.zeros(2)
    out, subs = dynamo.optimize(cnt, nopython=True)(fn)(x)
    assert subs == [_Sub1, _Sub2] and same(out, x + 2)
    assert (cnt.frame_count, cnt.op_count) == (1, 1)

    def nested(classes):
        return classes[0].__subclasses__()

    class Leaf(_Sub1):
        pass
    assert dynamo.optimize(cnt, nopython=True)(nested)([_Sub1]) == [Leaf]
    assert (cnt.frame_count, cnt.op_count) == (1, 1)     # no graph: nothing compiled


# ---------------------------------------------------------------- missing attributes are guarded

def test_getattr_default_of_a_missing_attribute_recompiles_once_it_exists():
    class Cfg:
        def __init__(self):
            self.val = 0.5

    def fn(x, cfg):
        if getattr(cfg, "add_7", False):
            return x + 7
        return x + cfg.val

    cnt = CompileCounter()
    opt = dynamo.optimize(cnt)(fn)
    cfg, v = Cfg(), torch.zeros(1)
    assert opt(v, cfg)[0] == 0.5 and opt(v, cfg)[0] == 0.5
    cfg.add_7 = True
    assert opt(v, cfg)[0] == 7          # was 0.5: the absence was not guarded
    cfg.add_7 = False
    assert opt(v, cfg)[0] == 0.5
    assert cnt.frame_count == 3


def test_hasattr_of_a_missing_module_attribute_recompiles_once_it_exists():
    class M(torch.nn.Module):
        def forward(self, x):
            if hasattr(self, "extra"):
                return x + self.extra
            return x * 2

    cnt = CompileCounter()
    m = M()
    opt = dynamo.optimize(cnt)(m)
    x = torch.ones(2)
    assert same(opt(x), x * 2) and same(opt(x), x * 2)
    m.extra = torch.nn.Parameter(torch.full((2,), 3.0))
    assert same(opt(x), x + 3)
    assert cnt.frame_count == 2


# ---------------------------------------------------------------- dict subclasses

class _AttrDict(dict):
    def __getattr__(self, name):
        return self[name]


def test_dict_subclass_with_getattr_reads_items_without_a_break():
    def fn(cfg, x):
        return x * 2 + cfg.offset

    cnt = CompileCounter()
    opt = dynamo.optimize(cnt)(fn)
    x, cfg = torch.ones(3), _AttrDict(offset=5)
    assert same(opt(cfg, x), x * 2 + 5)
    assert (cnt.frame_count, cnt.op_count) == (1, 2)      # one graph: no break
    cfg["offset"] = 7                                     # the item is guarded
    assert same(opt(cfg, x), x * 2 + 7)
    del cfg["offset"]
    cfg["other"] = 1
    with pytest.raises(KeyError):
        opt(cfg, x)                                       # the missing key breaks: x * 2, then
    assert cnt.frame_count == 3                           # the lookup raises eagerly


# ---------------------------------------------------------------- grad mode set by a call

def test_set_grad_enabled_call_outlives_the_frame_and_resume():
    def fn(a, b):
        prev = torch.is_grad_enabled()
        torch.set_grad_enabled(False)
        a = a + 1
        a.tolist()                      # graph break
        ret = a + b
        torch.set_grad_enabled(prev)
        return ret

    def off(a):
        torch.set_grad_enabled(False)
        return a * 2

    cnt = CompileCounter()
    opt = dynamo.optimize(cnt)(fn)
    a, b = torch.randn(3), torch.randn(3)
    try:
        for _ in range(5):
            assert same(opt(a, b), fn(a, b))
            assert torch.is_grad_enabled()          # was left False by the resume graph
        assert cnt.frame_count == 2                  # fn and its resume, no recompiles
        out = dynamo.optimize(cnt)(off)(a)
        assert same(out, a * 2) and not torch.is_grad_enabled()
        assert cnt.frame_count == 3
    finally:
        torch.set_grad_enabled(True)


# ---------------------------------------------------------------- torch helpers making functions

def test_ntuple_helper_made_in_the_frame_is_called_without_a_break():
    from torch.nn.modules.utils import _ntuple, _pair

    def fn(a):
        return torch.zeros(_pair(a.size())) + a + torch.ones(_ntuple(3)(3)).sum()

    cnt = CompileCounter()
    a = torch.randn(4, 4)
    assert same(dynamo.optimize(cnt, nopython=True)(fn)(a), fn(a))
    # zeros, add, ones, sum, add: the helpers fold to constant sizes
    assert (cnt.frame_count, cnt.op_count) == (1, 5)


# ---------------------------------------------------------------- closures

def test_nonlocal_write_in_an_inlined_closure_is_written_back():
    def make_counter():
        x = torch.zeros(3)

        def counter():
            nonlocal x
            x = x + 1
            return x

        return counter

    cnt = CompileCounter()
    opt = dynamo.optimize(cnt, nopython=True)(lambda c: c() + c())
    counter = make_counter()
    assert same(opt(counter), torch.full((3,), 3.0))       # 1 + 2: the second call saw the first write
    assert same(counter(), torch.full((3,), 3.0))          # the cell holds 2 after the frame
    assert same(opt(counter), torch.full((3,), 9.0))       # 4 + 5, same entry
    assert (cnt.frame_count, cnt.op_count) == (1, 3)


def test_returned_nested_function_is_rebuilt_on_the_traced_cells():
    def fn1():
        v1 = torch.randn(3)

        def fn2(k):
            v2 = torch.randn(3) + k

            def fn3(v3=torch.randn(3)):
                def fn4():
                    return v1 + v2 + v3 + 1
                return fn4
            return fn3

        return fn2(1)()

    cnt = CompileCounter()
    opt1 = dynamo.optimize(cnt, nopython=True)(fn1)
    f, g = opt1(), opt1()
    assert f.__name__ == "fn4" and [c.cell_contents.shape for c in f.__closure__] == [(3,)] * 3
    assert same(f(), f()) and not same(f(), g())      # fresh random cells per call of fn1
    assert (cnt.frame_count, cnt.op_count) == (1, 4)  # randn v1, randn + add (v2), randn v3
    # the rebuilt closure's cells hold the traced values: eager and compiled agree
    opt_f = dynamo.optimize(cnt, nopython=True)(f)
    assert same(opt_f(), f())
    assert (cnt.frame_count, cnt.op_count) == (2, 7)


def test_nonlocal_writes_of_the_compiled_frame_are_stored_after_the_graph():
    def make():
        total = torch.zeros(2)

        def add(x):
            nonlocal total
            total = total + x
            return total * 2
        return add

    add = make()
    cnt = CompileCounter()
    opt = dynamo.optimize(cnt, nopython=True)(add)      # no break at the STORE_DEREF
    x = torch.ones(2)
    assert same(opt(x), torch.full((2,), 2.0))
    assert same(opt(x), torch.full((2,), 4.0))          # the cell was updated
    assert same(add.__closure__[0].cell_contents, torch.full((2,), 2.0))
    assert (cnt.frame_count, cnt.op_count) == (1, 2)


def test_nested_function_with_typing_annotations_is_rebuilt_with_them():
    import typing

    class Item:
        pass

    def fn(x):
        x = x / 3.0

        def inner(y: typing.List[Item], z: "int" = 2):
            return x + z

        return inner

    cnt = CompileCounter()
    inner = dynamo.optimize(cnt, nopython=True)(fn)(torch.ones(2))
    assert inner.__annotations__ == {"y": typing.List[Item], "z": "int"}
    assert same(dynamo.optimize(cnt, nopython=True)(inner)([]), torch.ones(2) / 3 + 2)
    assert (cnt.frame_count, cnt.op_count) == (2, 2)


# ---------------------------------------------------------------- with blocks across a break

def test_break_inside_grad_mode_blocks_compiles_the_resume_function():
    def fn(x):
        y = x * 2
        with torch.no_grad():
            y = y + 2
            with torch.enable_grad():
                z = y * 3
                z.tolist()              # graph break inside both blocks
                z = z + 1
            w = z * 2
        return z, w

    cnt = CompileCounter()
    x = torch.randn(2, requires_grad=True)
    z, w = dynamo.optimize(cnt)(fn)(x)
    rz, rw = fn(x)
    assert same(z, rz) and same(w, rw)
    assert z.requires_grad == rz.requires_grad and w.requires_grad == rw.requires_grad
    assert torch.is_grad_enabled()
    # the resume function compiles (it used to run eagerly from the first
    # exit): graph 1 mul, set(False), add, set(True), mul; graph 2 add,
    # set(False) (inner exit), mul, set(True) (outer exit)
    assert cnt.frame_count == 2 and cnt.op_count == 9


def test_profiler_blocks_are_traced_as_blocks_that_change_nothing():
    def fn(x):
        y = x ** 2
        with torch.profiler.profile():
            y = y + 2
            with torch.autograd.profiler.record_function("mine"):
                z = y ** 3
                z.tolist()              # graph break
                z = z + 1
        return z

    cnt = CompileCounter()
    x = torch.randn(2, 2, requires_grad=True)
    assert same(dynamo.optimize(cnt)(fn)(x), fn(x))
    assert (cnt.frame_count, cnt.op_count) == (2, 4)


# ---------------------------------------------------------------- shape_as_tensor

def test_shape_as_tensor_is_a_graph_op_specialised_on_sizes():
    import torch.onnx.operators

    def f(x):
        return 1 + torch.onnx.operators.shape_as_tensor(x)[0]

    cnt = CompileCounter()
    opt = dynamo.optimize(cnt, nopython=True)(f)
    assert opt(torch.ones(6)) == 7
    assert opt(torch.ones(7, 4)) == 8 and opt(torch.ones(7, 4)) == 8
    # one compile per shape (the trace read the sizes): shape_as_tensor, getitem, add
    assert (cnt.frame_count, cnt.op_count) == (2, 6)
    gm, _ = dynamo.export(f, torch.ones(6))
    assert gm(torch.ones(6)) == 7


# ---------------------------------------------------------------- autograd.Function

class _Twice(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        ctx.scale = 2
        return x * ctx.scale

    @staticmethod
    def backward(ctx, grad):
        return grad * 100          # deliberately not the true derivative


class _UsesTwice(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fn = _Twice.apply

    def forward(self, x):
        return self.fn(x) + _Twice().apply(x)


def test_autograd_function_forward_is_inlined_when_no_grad_can_flow():
    cnt = CompileCounter()
    m = _UsesTwice()
    opt = dynamo.optimize(cnt, nopython=True)(m)
    x = torch.ones(2, 3)
    assert same(opt(x), torch.full((2, 3), 4.0))
    assert (cnt.frame_count, cnt.op_count) == (1, 3)      # mul, mul, add
    with torch.no_grad():
        xr = torch.ones(2, requires_grad=True)
        assert same(opt(xr), torch.full((2,), 4.0))
    assert cnt.frame_count == 2                           # grad mode is guarded


def test_autograd_function_with_grad_inputs_runs_eagerly_with_its_backward():
    def fn(x):
        return _Twice.apply(x * 1.0).sum()

    cnt = CompileCounter()
    x = torch.ones(3, requires_grad=True)
    dynamo.optimize(cnt)(fn)(x).backward()
    assert same(x.grad, torch.full((3,), 100.0))          # the custom backward ran
    assert cnt.frame_count == 2                           # x * 1.0 | apply eagerly | sum
    dynamo.reset()
    with pytest.raises(dynamo.exc.Unsupported, match="require grad"):
        dynamo.optimize(CompileCounter(), nopython=True)(fn)(torch.ones(3, requires_grad=True))


# ---------------------------------------------------------------- torch.autocast blocks

def test_autocast_block_is_recorded_in_the_graph():
    def fn(a, b):
        with torch.autocast(device_type="cpu", dtype=torch.bfloat16):
            c = torch.mm(a, b)
        return c, c.float() + 1

    cnt = CompileCounter()
    a, b = torch.randn(4, 4), torch.randn(4, 4)
    c, d = dynamo.optimize(cnt, nopython=True)(fn)(a, b)
    rc, rd = fn(a, b)
    assert c.dtype == torch.bfloat16 and same(c.float(), rc.float()) and same(d, rd)
    assert not torch.is_autocast_enabled("cpu")
    # _enter_autocast, mm, _exit_autocast, float, add
    assert (cnt.frame_count, cnt.op_count) == (1, 5)
    gm, _ = dynamo.export(fn, a, b)
    assert gm(a, b)[0].dtype == torch.bfloat16


def test_break_inside_an_autocast_block_runs_the_frame_eagerly():
    def fn(a):
        with torch.autocast(device_type="cpu", dtype=torch.bfloat16):
            c = torch.mm(a, a)
            c.tolist()
            c = torch.mm(c, a)
        return c

    cnt = CompileCounter()
    a = torch.randn(3, 3)
    out = dynamo.optimize(cnt)(fn)(a)
    assert out.dtype == torch.bfloat16 and same(out.float(), fn(a).float())
    assert cnt.frame_count == 0 and not torch.is_autocast_enabled("cpu")


def test_export_of_a_captured_item(monkeypatch):
    monkeypatch.setattr(dynamo.config, "capture_scalar_outputs", True)

    def fn(x):
        return x.sum().item(), x + 1

    gm, _ = dynamo.export(fn, torch.ones(3))
    n, y = gm(torch.full((3,), 2.0))
    assert n == 6.0 and same(y, torch.full((3,), 3.0))
    with pytest.raises(dynamo.exc.Unsupported, match="item"):
        dynamo.export(fn, torch.ones(3), aten_graph=True)


# ---------------------------------------------------------------- ModelOutput made in the frame, then changed

def test_model_output_attribute_and_item_assignment():
    transformers = pytest.importorskip("transformers")
    from transformers.modeling_outputs import BaseModelOutput

    def fn(a, b):
        out = BaseModelOutput(last_hidden_state=b + 3)
        out.hidden_states = a + 7          # not a key: an attribute only
        out["attentions"] = a + b + 6      # a new key, and the attribute
        return out

    cnt = CompileCounter()
    a, b = torch.randn(4), torch.randn(4)
    got, ref = dynamo.optimize(cnt, nopython=True)(fn)(a, b), fn(a, b)
    # transformers 4.x: the attribute only; 5.x's __setattr__ adds the key
    assert list(got.keys()) == list(ref.keys())
    assert list(ref.keys()) in (["last_hidden_state", "attentions"],
                                ["last_hidden_state", "hidden_states", "attentions"])
    for name in ("last_hidden_state", "hidden_states", "attentions"):
        assert same(getattr(got, name), getattr(ref, name))
    assert same(got.to_tuple(), ref.to_tuple())
    assert (cnt.frame_count, cnt.op_count) == (1, 4)


def test_a_write_to_a_frame_cell_is_seen_by_a_closure_sharing_it():
    def make():
        acc = torch.zeros(2)

        def peek():
            return acc * 1

        def f(x):
            nonlocal acc
            acc = acc + x
            return peek()          # reads the cell f just wrote
        return f

    f = make()
    cnt = CompileCounter()
    opt = dynamo.optimize(cnt, nopython=True)(f)
    x = torch.ones(2)
    assert same(opt(x), x) and same(opt(x), 2 * x)
    assert cnt.frame_count == 1
