"""Tensor ops inside try blocks are traced (config.trace_try_regions): one
graph for the frame, and when that graph raises at run time the frame's
original code re-runs eagerly from its start (resume.run_original), so the
exception, the finally blocks and the handlers act as in eager. Each test
counts graphs, compiles and re-runs (counters["frames"]
["graph_raised_rerun_eagerly"])."""
import pytest
import torch

import dynamo
from dynamo.testing import CompileCounter, same
from dynamo.utils import counters

RERUN = "graph_raised_rerun_eagerly"
log = []
state = {"is_causal": True}


@pytest.fixture(autouse=True)
def _fresh():
    dynamo.reset()
    counters.clear()
    log.clear()
    yield
    dynamo.reset()


def outcome(fn, *args):
    try:
        return ("ok", fn(*args))
    except Exception as e:  # noqa: BLE001 - compared with eager
        return ("raise", type(e), str(e))


def same_outcome(a, b):
    if a[0] != b[0]:
        return False
    return same(a[1], b[1]) if a[0] == "ok" else a[1:] == b[1:]


GOOD = torch.tensor([0, 2])
BAD = torch.tensor([0, 9])          # out of range: only the real kernel sees it


def gather_finally(x, idx):
    global flag
    try:
        y = torch.gather(x.sin() + 1, 0, idx)
        log.append("body")
    finally:
        flag = x.shape[0]           # a global write in the finally block
        log.append("finally")
    return y * 2


def test_try_finally_is_one_graph_with_finally_effects():
    x = torch.randn(4)
    exp = gather_finally(x, GOOD)
    eager_log = list(log)
    log.clear()
    cnt = CompileCounter()
    opt = dynamo.optimize(cnt)(gather_finally)
    assert same(opt(x, GOOD), exp)
    assert log == eager_log == ["body", "finally"]
    assert flag == 4
    assert cnt.frame_count == 1 and cnt.op_count == 4      # sin, add, gather, mul
    assert counters["frames"][RERUN] == 0


def test_try_finally_graph_failing_at_run_time_reruns_eagerly():
    x = torch.randn(4)
    exp = outcome(gather_finally, x, BAD)
    eager_log = list(log)
    log.clear()
    cnt = CompileCounter()
    opt = dynamo.optimize(cnt)(gather_finally)
    opt(x, GOOD)
    log.clear()
    got = outcome(opt, x, BAD)
    assert exp[0] == "raise" and exp[1] is RuntimeError
    assert same_outcome(exp, got)
    assert log == eager_log == ["finally"]           # finally ran once, the body's append never
    assert cnt.frame_count == 1                       # same entry: no recompile
    assert counters["frames"][RERUN] == 1
    assert same(opt(x, GOOD), gather_finally(x, GOOD))
    assert counters["frames"][RERUN] == 1


def gather_or_handler(x, idx):
    global handled
    y = x * 3
    try:
        y = torch.gather(y, 0, idx)
    except RuntimeError as e:
        handled = type(e).__name__
        y = y.sum().reshape(1)
    return y + 1


def test_try_except_handler_runs_when_graph_raises():
    global handled
    x = torch.randn(4)
    exp = gather_or_handler(x, BAD)
    assert handled == "RuntimeError"
    handled = None
    cnt = CompileCounter()
    opt = dynamo.optimize(cnt)(gather_or_handler)
    assert same(opt(x, GOOD), gather_or_handler(x, GOOD))
    assert cnt.frame_count == 1 and cnt.op_count == 3
    handled = None
    assert same(opt(x, BAD), exp)
    assert handled == "RuntimeError"
    assert cnt.frame_count == 1 and counters["frames"][RERUN] == 1


class Config:
    is_causal = True


class Block(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.config = Config()
        self.lin = torch.nn.Linear(4, 4)

    def forward(self, x, idx):
        h = self.lin(x)
        return torch.gather(h, 1, idx) if self.config.is_causal else h


def with_config_defaults(fn):
    """The shape of transformers 5's merge_with_config_defaults: set a
    config attribute, call the forward, restore it in a finally block."""
    def wrapper(self, x, idx, is_causal=False):
        old = self.config.is_causal
        self.config.is_causal = is_causal
        try:
            out = fn(self, x, idx)
        finally:
            self.config.is_causal = old
        return out
    return wrapper


Block.forward = with_config_defaults(Block.forward)


def test_inlined_try_finally_wrapper_one_graph_and_restores_attribute():
    torch.manual_seed(0)
    m = Block()
    x, idx = torch.randn(2, 4), torch.tensor([[0], [3]])
    exp = m(x, idx, is_causal=True)
    cnt = CompileCounter()
    opt = dynamo.optimize(cnt)(m)
    assert same(opt(x, idx, is_causal=True), exp)
    assert m.config.is_causal is True
    assert cnt.frame_count == 1 and counters["graph_break"] == {}
    # a run-time failure inside the inlined forward: the attribute is
    # restored by the eager re-run's finally, the error is eager's
    bad = torch.tensor([[0], [7]])
    exp = outcome(m, x, bad, True)
    got = outcome(opt, x, bad, True)
    assert exp[0] == "raise" and same_outcome(exp, got)
    assert m.config.is_causal is True
    # the re-run calls the inner forward, compiled as a frame of its own
    # (the functions a re-run calls compile as usual); its graph raises
    # with no handler of its own frame: no second re-run
    assert cnt.frame_count == 2 and counters["frames"][RERUN] == 1


def inplace_in_try(x, idx):
    try:
        x.add_(1)
        y = torch.gather(x, 0, idx)
    except RuntimeError:
        y = x * 0
    return y


def test_inplace_write_to_input_waits_for_the_graphs_end():
    # the graph writes x only after its last op that can raise (x is cloned,
    # written back at the end: dynamo/input_writes.py): the gather raises, the
    # frame re-runs eagerly and x is incremented once, as in eager
    a, b = torch.zeros(4), torch.zeros(4)
    exp = inplace_in_try(a, BAD)
    cnt = CompileCounter()
    got = dynamo.optimize(cnt)(inplace_in_try)(b, BAD)
    assert same(got, exp) and same(a, b) and float(b[0]) == 1.0
    assert cnt.frame_count == 1 and counters["frames"][RERUN] == 1
    assert not counters["graph_break"]
    ops = [n.target for n in cnt.graphs[0].graph.nodes if n.op == "call_method"]
    assert ops[0] == "clone" and ops[-1] == "copy_"
    a, b = torch.zeros(4), torch.zeros(4)           # the entry serves a good index
    assert same(dynamo.optimize(cnt)(inplace_in_try)(b, GOOD), inplace_in_try(a, GOOD))
    assert same(a, b) and cnt.frame_count == 1 and counters["frames"][RERUN] == 1


def inplace_returned(x):
    try:
        x.add_(1)
        view = x[1:]
    finally:
        log.append("finally")
    return x, view


def test_written_input_returned_is_the_input_and_its_view_a_view_of_it():
    x = torch.zeros(3)
    cnt = CompileCounter()
    got, view = dynamo.optimize(cnt)(inplace_returned)(x)
    assert got is x and view._base is x and same(x, torch.ones(3)) and cnt.frame_count == 1
    x.add_(1)
    assert same(view, torch.full((2,), 2.0))      # the view sees later writes to x


def augmented_view_after_try(x, y):
    # (fuzz seeds 7000130, 7000128: the returned view's `+=` was made again
    # after the copy back, adding twice)
    try:
        y.view(-1)[0] = 5
    finally:
        log.append("finally")
    t = x[1:]
    t += 1
    return t


def test_returned_view_written_by_augmented_assignment_is_written_once():
    a, b = torch.zeros(3, 3), torch.zeros(3, 3)
    ya, yb = torch.zeros(3), torch.zeros(3)
    exp = augmented_view_after_try(a, ya)
    cnt = CompileCounter()
    got = dynamo.optimize(cnt)(augmented_view_after_try)(b, yb)
    assert same(got, exp) and same(a, b) and same(ya, yb) and cnt.frame_count == 1
    assert got._base is b and float(b[1, 0]) == 1.0


def write_through_alias(x, y, idx):
    try:
        x.add_(1)
        z = torch.gather(y, 0, idx)
    except RuntimeError:
        z = y * 0
    return z


def test_write_to_an_input_another_input_shares_keeps_the_try_eager():
    # y is a view of x: a write held back to the graph's end would not be
    # seen through y, so the try runs eagerly as before
    a, b = torch.zeros(4), torch.zeros(4)
    exp = write_through_alias(a, a[:], GOOD)
    cnt = CompileCounter()
    got = dynamo.optimize(cnt)(write_through_alias)(b, b[:], GOOD)
    assert same(got, exp) and same(a, b) and float(b[1]) == 1.0
    assert cnt.frame_count == 0 and counters["frames"][RERUN] == 0
    assert any("shared by several inputs" in r for r in counters["graph_break"])


def transpose_in_try(x):
    try:
        x.transpose_(0, 1)
        y = x + 1
    finally:
        log.append("finally")
    return y


def test_inplace_layout_change_of_an_input_keeps_the_try_eager():
    a, b = torch.zeros(2, 3), torch.zeros(2, 3)
    exp = transpose_in_try(a)
    cnt = CompileCounter()
    got = dynamo.optimize(cnt)(transpose_in_try)(b)
    assert same(got, exp) and b.shape == a.shape == (3, 2)
    assert any("sizes or strides in place" in r for r in counters["graph_break"])


def random_in_try(x, idx):
    try:
        r = torch.rand(4)
        y = torch.gather(x + r, 0, idx)
    except RuntimeError:
        y = torch.rand(2) + r.sum()
    return y


def test_random_graph_restores_rng_before_rerun():
    x = torch.randn(4)
    torch.manual_seed(1)
    exp = random_in_try(x, BAD)
    after_eager = torch.rand(1)
    cnt = CompileCounter()
    opt = dynamo.optimize(cnt)(random_in_try)
    opt(x, GOOD)
    torch.manual_seed(1)
    got = opt(x, BAD)
    assert same(got, exp) and same(torch.rand(1), after_eager)
    assert cnt.frame_count == 1 and counters["frames"][RERUN] == 1


def test_rerun_passes_closure_varargs_and_keyword_only_arguments():
    scale = torch.tensor(2.0)

    def f(x, *rest, idx, **kw):
        try:
            y = torch.gather(x * scale + rest[0], 0, idx) * kw["k"]
        finally:
            log.append(("finally", len(rest), sorted(kw)))
        return y
    x = torch.randn(4)
    cnt = CompileCounter()
    opt = dynamo.optimize(cnt)(f)
    assert same(opt(x, 1.0, 5, idx=GOOD, k=3.0), f(x, 1.0, 5, idx=GOOD, k=3.0))
    log.clear()                     # the trace guards len(log): empty at each call
    exp = outcome(lambda: f(x, 1.0, 5, idx=BAD, k=3.0))
    assert log == [("finally", 2, ["k"])]
    log.clear()
    got = outcome(lambda: opt(x, 1.0, 5, idx=BAD, k=3.0))
    assert exp[0] == "raise" and same_outcome(exp, got)
    assert log == [("finally", 2, ["k"])]
    assert cnt.frame_count == 1 and counters["frames"][RERUN] == 1


def break_then_try(x, idx):
    y = x + 1
    print("", end="")               # a graph break: the rest is a resume function
    try:
        y = torch.gather(y, 0, idx)
    except RuntimeError:
        log.append("handler")
        y = y * 0
    return y


def test_resume_function_graph_reruns_the_resume_code():
    x = torch.randn(4)
    exp = break_then_try(x, BAD)
    cnt = CompileCounter()
    opt = dynamo.optimize(cnt)(break_then_try)
    assert same(opt(x, GOOD), break_then_try(x, GOOD))
    log.clear()
    assert same(opt(x, BAD), exp) and log == ["handler"]
    assert cnt.frame_count == 2 and counters["frames"][RERUN] == 1


def test_trace_try_regions_off_runs_the_try_eagerly(monkeypatch):
    monkeypatch.setattr(dynamo.config, "trace_try_regions", False)
    x = torch.randn(4)
    cnt = CompileCounter()
    opt = dynamo.optimize(cnt)(gather_or_handler)
    assert same(opt(x, BAD), gather_or_handler(x, BAD))
    # x * 3 before the try, + 1 after it (a resume function)
    assert cnt.frame_count == 2 and cnt.op_count == 2
    assert counters["frames"][RERUN] == 0


def detached_write_in_try(x, idx):
    try:
        x.detach().mul_(2)          # no view (_base is None), same storage as x
        y = torch.gather(x, 0, idx)
    except RuntimeError:
        y = x + 0
    return y


def test_write_through_a_detached_alias_waits_for_the_graphs_end():
    # detach() of x's clone is written: x is written back once, at the end
    a, b = torch.ones(4), torch.ones(4)
    exp = detached_write_in_try(a, BAD)
    cnt = CompileCounter()
    got = dynamo.optimize(cnt)(detached_write_in_try)(b, BAD)
    assert same(got, exp) and same(a, b) and float(b[0]) == 2.0      # doubled once
    assert cnt.frame_count == 1 and counters["frames"][RERUN] == 1


def autocast_in_try(x, idx):
    try:
        with torch.autocast("cpu", dtype=torch.bfloat16):
            y = torch.gather(x @ x.t(), 0, idx)
    except RuntimeError:
        y = torch.is_autocast_cpu_enabled() + x.sum().reshape(1, 1)
    return y


def test_autocast_block_keeps_the_try_eager():
    # a graph raising inside its autocast block would leave autocast on for
    # the re-run: such a try runs eagerly
    x, good, bad = torch.randn(2, 2), torch.tensor([[0, 1]]), torch.tensor([[0, 5]])
    cnt = CompileCounter()
    opt = dynamo.optimize(cnt)(autocast_in_try)
    assert same(opt(x, good), autocast_in_try(x, good))
    assert same(opt(x, bad), autocast_in_try(x, bad))
    assert not torch.is_autocast_cpu_enabled()
    assert counters["frames"][RERUN] == 0
    assert any("inside a try block" in r for r in counters["graph_break"])


def random_then_linalg_error(x, a):
    try:
        r = torch.rand(4, device=x.device)
        y = torch.linalg.cholesky(a).sum() + (x + r).sum()
    except RuntimeError:        # LinAlgError: not positive-definite
        y = torch.rand(2, device=x.device) + r.sum()
    return y


@pytest.mark.parametrize("device", [
    "cpu", pytest.param("cuda", marks=pytest.mark.skipif(not torch.cuda.is_available(),
                                                          reason="needs a CUDA device"))])
def test_rerun_restores_the_rng_of_the_graphs_device(device):
    """The re-run draws what eager draws on CUDA too (only the CPU state
    was saved: a CUDA graph's re-run drew new numbers)."""
    x = torch.randn(4, device=device)
    good = torch.eye(3, device=device)
    bad = -torch.eye(3, device=device)
    gen = torch.cuda.manual_seed if device == "cuda" else torch.manual_seed
    gen(1)
    exp = random_then_linalg_error(x, bad)
    after_eager = torch.rand(1, device=device)
    cnt = CompileCounter()
    opt = dynamo.optimize(cnt)(random_then_linalg_error)
    opt(x, good)
    gen(1)
    got = opt(x, bad)
    assert same(got, exp) and same(torch.rand(1, device=device), after_eager)
    assert cnt.frame_count == 1 and counters["frames"][RERUN] == 1


def test_a_dropout_that_is_off_draws_nothing():
    """graph_draws_random: eval-mode dropout (training=False, p=0, a
    Dropout module in eval, attention with dropout_p=0) needs no RNG save
    before a graph call; a live one and torch.rand do."""
    import torch.nn.functional as F
    from dynamo.tracer.frame import graph_draws_random

    class M(torch.nn.Module):
        def __init__(self, p, training):
            super().__init__()
            self.drop = torch.nn.Dropout(p)
            self.train(training)

        def forward(self, x):
            return self.drop(x)

    def graph(fn):
        return torch.fx.symbolic_trace(fn)
    off = [lambda x: F.dropout(x, 0.1, False), lambda x: F.dropout(x, p=0.1, training=False),
           lambda x: F.dropout(x, p=0.0, training=True), lambda x: torch.relu(x),
           lambda x: F.scaled_dot_product_attention(x, x, x, dropout_p=0.0),
           M(0.1, False), M(0.0, True)]
    on = [lambda x: F.dropout(x, 0.1, True), lambda x: F.dropout(x, p=0.1),
          lambda x: x + torch.rand_like(x), lambda x: F.scaled_dot_product_attention(x, x, x, dropout_p=0.1),
          M(0.1, True)]
    assert [graph_draws_random(graph(f)) for f in off] == [False] * len(off)
    assert [graph_draws_random(graph(f)) for f in on] == [True] * len(on)


def test_listing_shows_the_globals_constant_by_its_size():
    """The deopt tail loads the frame's globals as a constant: the modified
    bytecode listing (config.debug, telemetry, dynamo-top) shows it as
    `<dict, N items>`, not its repr (this module's globals, every value)."""
    from dynamo import records

    def f(x, idx):
        try:
            return torch.gather(x + 1, 0, idx)
        except RuntimeError:
            return x
    dynamo.optimize("eager")(f)(torch.randn(4), GOOD)
    rec = [r for r in records.all_records() if r.status == "ok"][-1]
    listing = rec.modified_bytecode
    assert f"<dict, {len(globals())} items>" in listing
    assert "random_then_linalg_error" not in listing        # no repr of the globals
    assert "run_original" in listing


# A division by a value known only when the graph runs (a symbolic int, a
# captured Tensor.item() number) raises inside the graph when that value is
# zero; a list append traced before it is replayed only after the graph, so
# the graph re-runs the frame eagerly (fuzz seed 82,004,072, dynamic mode).

def append_then_divide_by_int(x, n, lst):
    lst.append(n)
    return x * (10 // (n % 3))


def append_then_divide_by_item(x, lst):
    v = x.sum().item()
    lst.append(v)
    return x * (10 // v)


@pytest.mark.parametrize("fn,make,values", [
    (append_then_divide_by_int, lambda k: (torch.ones(2), k), (1, 2, 3, 4)),
    (append_then_divide_by_item, lambda k: (torch.full((1,), k),), (1, 2, 0, 3)),
])
def test_division_by_zero_at_run_time_keeps_earlier_side_effects(fn, make, values):
    old = dynamo.config.dynamic_shapes
    dynamo.config.dynamic_shapes = True
    try:
        cnt = CompileCounter()
        opt = dynamo.optimize(cnt)(fn)
        raised = 0
        for k in values:
            exp_list, got_list = [], []
            exp = outcome(fn, *make(k), exp_list)
            got = outcome(opt, *make(k), got_list)
            assert same_outcome(got, exp), (k, got, exp)
            assert got_list == exp_list, (k, got_list, exp_list)
            raised += exp[0] == "raise"
    finally:
        dynamo.config.dynamic_shapes = old
    assert raised == 1
    assert counters["frames"][RERUN] == 1      # the zero came to the compiled graph once
    assert cnt.frame_count == (2 if fn is append_then_divide_by_int else 3)
