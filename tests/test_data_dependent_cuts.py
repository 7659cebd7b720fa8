"""Cuts that transformers models of the zoo made where torch.compile made
none or fewer (issue 31: hf:mra, ...), each written in plain torch as the
model writes it and counted: graphs and breaks of the first call, outputs
equal eager, and the recompiles of a second identical call."""
import torch

import dynamo
from dynamo import records
from dynamo.testing import CompileCounter, same


def compiled(fn, backend=None):
    """(optimized fn, its CompileCounter, a function giving the break
    reasons since it was made), on a fresh cache."""
    dynamo.reset()
    cnt = CompileCounter()
    start = records.mark()
    opt = dynamo.optimize(backend or cnt)(fn)
    return opt, cnt, lambda: [b.reason for r in records.records_since(start) for b in r.break_reasons]


# ------------------ requires_grad_() of a tensor the graph makes (hf:mra)
def mra_attention(query):
    # transformers' MRA without its CUDA kernel: a fresh tensor that requires grad
    scores = query * 2
    out = torch.zeros_like(scores).requires_grad_()
    return out + scores, out


def test_requires_grad_of_a_fresh_tensor_under_no_grad():
    q = torch.randn(2, 4)
    opt, cnt, reasons = compiled(mra_attention)
    with torch.no_grad():
        got, ref = opt(q), mra_attention(q)
        assert same(got, ref)
        assert (cnt.frame_count, reasons()) == (1, [])
        assert (got[1].requires_grad, got[1].is_leaf, got[0].requires_grad) == \
            (ref[1].requires_grad, ref[1].is_leaf, ref[0].requires_grad) == (True, True, False)
        opt(q)
    assert cnt.frame_count == 1


def test_requires_grad_with_grad_on_still_breaks():
    # the ops after it record autograd history: run eagerly, as before
    q = torch.randn(2, 4)
    opt, cnt, reasons = compiled(mra_attention)
    got, ref = opt(q), mra_attention(q)
    assert same(got, ref)
    assert (cnt.frame_count, reasons()) == (2, ["Tensor.requires_grad_()"])
    assert got[0].requires_grad and got[0].grad_fn is not None and got[1].is_leaf


def test_requires_grad_of_an_input_still_breaks():
    def f(x):
        return x.requires_grad_() * 2
    x = torch.randn(3)
    opt, cnt, reasons = compiled(f)
    with torch.no_grad():
        out = opt(x)
    assert x.requires_grad and same(out, x.detach() * 2)
    assert (cnt.frame_count, reasons()) == (1, ["Tensor.requires_grad_()"])


def test_requires_grad_through_aot_runs_the_captured_ops():
    # aot's functionalized trace drops requires_grad_(): such a graph runs eagerly
    q = torch.randn(2, 4)
    opt, _, reasons = compiled(mra_attention, backend="aot_eager")
    with torch.no_grad():
        got, ref = opt(q), mra_attention(q)
    assert same(got, ref) and reasons() == []
    assert got[1].requires_grad and got[1].is_leaf


# --------------- a tensor made from Python numbers has a known value (hf:tapas)
def segment_reduce(values, n):
    # transformers' TAPAS _segment_reduce: a shape built as a tensor, read back
    vector_shape = values.size()[1:]
    shape = torch.cat([torch.as_tensor([-1], dtype=torch.long),
                       torch.as_tensor(vector_shape, dtype=torch.long)], dim=0)
    flat = values.reshape(shape.tolist())
    k = torch.as_tensor(n)
    if k > 2:                                      # a branch on it folds too
        flat = flat + int(k)
    return flat * torch.as_tensor([n]).item()     # (one element: FakeTensorMode keeps no larger)


def test_value_of_a_tensor_made_from_numbers_is_known():
    x = torch.randn(4)
    opt, cnt, reasons = compiled(segment_reduce)
    assert same(opt(x, 3), segment_reduce(x, 3))
    assert (cnt.frame_count, reasons()) == (1, [])
    opt(x, 3)
    assert cnt.frame_count == 1
    assert same(opt(x, 1), segment_reduce(x, 1))   # n is guarded: the other side
    assert cnt.frame_count == 2


def test_value_of_a_tensor_made_from_an_input_still_breaks():
    def f(x):
        k = torch.as_tensor([3]) + x[:1].long()    # one element, but from the input's data
        return x.reshape(k.tolist())
    x = torch.ones(4)
    opt, cnt, reasons = compiled(f)
    assert same(opt(x), f(x))
    # the resume function then calls the bound x.reshape it was handed: run eagerly
    # (torch.compile breaks twice here too: tolist, then a call marked as skipped)
    assert (cnt.frame_count, reasons()) == \
        (1, ["Tensor.tolist() needs the tensor's data",
             "call to ?.Tensor.reshape (not traceable; runs eagerly)"])


# ------------- a break inside a loop runs the frame eagerly (hf:jetmoe, ...)
class Layer(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(4, 4)

    def forward(self, x):
        y = self.lin(x)
        return y * int((y > 0).sum())          # a break (data-dependent)


class Stack(torch.nn.Module):
    # a decoder's `for layer in self.layers`, each layer breaking
    def __init__(self):
        super().__init__()
        self.layers = torch.nn.ModuleList([Layer() for _ in range(3)])

    def forward(self, x):
        x = x + 1
        for layer in self.layers:
            x = layer(x)
        return x - 1


def test_break_in_a_loop_runs_the_frame_eagerly():
    torch.manual_seed(0)
    model, x = Stack(), torch.randn(2, 4)
    opt, cnt, reasons = compiled(model)
    with torch.no_grad():
        assert same(opt(x), model(x))
        # Stack.forward runs eagerly (no cut per iteration, no resume
        # compiled per iteration); Layer.forward compiles as a frame of its
        # own, once for the three Layers (a generic module frame: reached
        # from a compiled frame): 1 graph before int(), 1 break; the resume
        # function after it compiles twice (the int's value changed: then
        # a symbolic int)
        assert (cnt.frame_count, len(reasons())) == (3, 1)
        assert set(reasons()) == {"int() of a tensor needs its data"}
        assert same(opt(x), model(x))
    assert cnt.frame_count == 3


def test_break_in_a_loop_cut_per_iteration_when_asked(monkeypatch):
    # config.skip_frame_on_loop_break off: the loop's frame is cut at the
    # break on every iteration (a resume function per iteration)
    monkeypatch.setattr(dynamo.config, "skip_frame_on_loop_break", False)
    torch.manual_seed(0)
    model, x = Stack(), torch.randn(2, 4)
    opt, cnt, reasons = compiled(model)
    with torch.no_grad():
        assert same(opt(x), model(x))
    # a cut in Stack.forward per iteration (3), Layer.forward's once (generic)
    assert len(reasons()) == 4


def test_jump_on_a_tensor_in_a_loop_runs_the_frame_eagerly():
    def f(x):
        for _ in range(3):
            if x.sum() > 0:
                x = x - 1
            else:
                x = x + 2
        return x
    x = torch.randn(4)
    opt, cnt, reasons = compiled(f)
    assert same(opt(x), f(x)) and same(opt(-x), f(-x))
    assert (cnt.frame_count, reasons()) == (0, [])
    assert records.all_records()[-1].status == records.STATUS["UNSUPPORTED"]


def test_break_after_a_loop_still_cuts():
    def f(x):
        for i in range(3):
            x = x + i
        n = int(x.sum() > 0)                    # after the loop: a plain cut
        return x * n
    x = torch.randn(4)
    opt, cnt, reasons = compiled(f)
    assert same(opt(x), f(x))
    assert (cnt.frame_count, reasons()) == (2, ["int() of a tensor needs its data"])


# ---- a break in a comprehension's iterable: no recompile per call (hf:tapas)
def view_as_listed(x, t):
    # transformers' TAPAS range_index_map: `[int(v) for v in t.tolist()]`
    shape = [int(v) * 2 for v in t.tolist()]
    return x.view(shape) + 1


def test_break_in_a_comprehension_iterable_hits_on_the_next_call():
    # before 3.12 the comprehension's function, made anew on every call, is
    # on the stack at the break: the resume function guards its code, not
    # the object
    x, t = torch.randn(24), torch.tensor([2, 3])
    opt, cnt, reasons = compiled(view_as_listed)
    assert same(opt(x, t), view_as_listed(x, t))
    assert (cnt.frame_count, reasons()) == (1, ["Tensor.tolist() needs the tensor's data"])
    assert same(opt(x, t), view_as_listed(x, t)) and cnt.frame_count == 1
    t2 = torch.tensor([3, 2])                      # other numbers: the shape is guarded
    assert same(opt(x, t2), view_as_listed(x, t2)) and cnt.frame_count == 2
