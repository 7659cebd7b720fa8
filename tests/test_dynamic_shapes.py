"""Shapes that change from call to call (issue 24): the cache limit policy,
automatic dynamic shapes, mark_dynamic, shape guards. Every test counts
compiles and hits."""
import random
import warnings

import pytest
import torch

import dynamo
from dynamo import _C
from dynamo import guards as G
from dynamo.testing import CompileCounter, same

SIZES = list(range(2, 22))          # 20 batch sizes


def mlp():
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Linear(32, 64), torch.nn.ReLU(),
                               torch.nn.Linear(64, 8)).eval()


def forward_code(m):
    return type(m).forward.__code__


def test_cache_limit_keeps_serving_the_compiled_shapes():
    """Static shapes only: 8 compiles, the limit, then the 8 compiled batch
    sizes still hit in the second round and only the others run eagerly;
    the warning names the dimension and suggests mark_dynamic."""
    dynamo.config.automatic_dynamic_shapes = False
    m = mlp()
    cnt = CompileCounter()
    cm = dynamo.optimize(cnt)(m)
    with warnings.catch_warnings(record=True) as w, torch.no_grad():
        warnings.simplefilter("always")
        for _ in range(2):
            for b in SIZES:
                x = torch.randn(b, 32)
                assert same(cm(x), m(x))
    msgs = [str(x.message) for x in w if "cache_size_limit" in str(x.message)]
    assert len(msgs) == 1
    assert "L['input'].size()[0]" in msgs[0] and "dimension 0 keeps changing" in msgs[0]
    assert "compiled for 2, 3, 4, 5, 6, 7, 8, 9" in msgs[0] and "this call 10" in msgs[0]
    assert "dynamo.mark_dynamic(input, 0)" in msgs[0]
    assert cnt.frame_count == 8
    stats = _C.tree_stats(forward_code(m))
    assert stats["entries"] == 8 and stats["hits"] == 8     # round 2: sizes 2..9


# ---------------------------------------------------------------- automatic dynamic shapes

def _sweep(cm, m, grad=False, rounds=2):
    """Call `cm` over SIZES `rounds` times, comparing with `m` (and the
    parameters' gradients with grad); returns the cache-limit warnings."""
    with warnings.catch_warnings(record=True) as w, torch.set_grad_enabled(grad):
        warnings.simplefilter("always")
        for _ in range(rounds):
            for b in SIZES:
                x = torch.randn(b, 32)
                out, ref = cm(x), m(x)
                assert same(out, ref), b
                if grad:
                    out.sum().backward()
                    got = [p.grad.clone() for p in m.parameters()]
                    m.zero_grad()
                    ref.sum().backward()
                    assert all(same(a, p.grad) for a, p in zip(got, m.parameters())), b
                    m.zero_grad()
    return [str(x.message) for x in w if "cache_size_limit" in str(x.message)]


def test_mlp_over_20_batch_sizes_compiles_twice():
    """Static first; the second batch size makes dimension 0 symbolic: one
    graph serves every later size (40 calls: 2 compiles, 38 hits)."""
    m = mlp()
    cnt = CompileCounter()
    assert _sweep(dynamo.optimize(cnt)(m), m) == []
    assert cnt.frame_count == 2
    stats = _C.tree_stats(forward_code(m))
    assert stats["entries"] == 2 and stats["hits"] == 38 and stats["misses"] == 0
    first, second = dynamo.records.all_records()
    assert second.recompile_reason.startswith("L['input'].size()[0]: expected 2, actual 3")
    tm = [g for g in second.guards if g.kind == G.TENSOR_MATCH and g.source.name() == "L['input']"]
    assert tm[0].expected[6:] == ((None, 32), (32, 1))         # size 0 unchecked there
    shapes = [g.expected[0] for g in second.guards if g.kind == G.SHAPE_GUARD]
    assert shapes == ["2 <= L['input'].size()[0]"]
    listing = [g.describe() for g in second.guards]
    assert " - local 'input' SHAPE_GUARD 2 <= L['input'].size()[0]" in listing


def test_mlp_over_20_batch_sizes_aot_eager_with_backward():
    m = mlp().train()
    cnt = CompileCounter()
    assert _sweep(dynamo.optimize(_counting("aot_eager", cnt))(m), m, grad=True) == []
    assert cnt.frame_count == 2


def test_mlp_over_20_batch_sizes_inductor():
    m = mlp()
    cnt = CompileCounter()
    assert _sweep(dynamo.optimize(_counting("inductor", cnt))(m), m, rounds=1) == []
    assert cnt.frame_count == 2


def test_dynamic_shapes_alias_inductor_second_size():
    """The issue's crash: config.dynamic_shapes with inductor raised
    `expected size 6==4` on the second size. One symbolic graph now."""
    dynamo.config.dynamic_shapes = True
    m = mlp()
    cnt = CompileCounter()
    cm = dynamo.optimize(_counting("inductor", cnt))(m)
    with torch.no_grad():
        for b in (4, 6, 9):
            x = torch.randn(b, 32)
            assert same(cm(x), m(x))
    assert cnt.frame_count == 1


def _counting(backend, cnt):
    """`backend` by name, counting its compiles in `cnt`."""
    _, fn = dynamo.backends.lookup(backend)

    def compile_and_count(gm, example_inputs):
        cnt(gm, example_inputs)
        return fn(gm, example_inputs)
    return compile_and_count


# ---------------------------------------------------------------- sizes in Python code

def size_arith(x):
    b = x.size(0)
    y = x.view(b * 2, -1)
    return y * len(x), b, x.shape


def test_size_arithmetic_and_view_stay_symbolic():
    cnt = CompileCounter()
    opt = dynamo.optimize(cnt)(size_arith)
    for n in (2, 3, 4, 7, 12):
        x = torch.randn(n, 4)
        got, want = opt(x), size_arith(x)
        assert same(got[0], want[0]) and got[1] == want[1] and got[2] == want[2]
        assert type(got[1]) is int and type(got[2]) is torch.Size
    assert cnt.frame_count == 2
    code = dynamo.records.all_records()[-1].graphs[0].gm.code
    assert "x.size(0)" in code and "view(mul, -1)" in code, code


def conv1d_like(x, w):
    # transformers' Conv1D (GPT-2): the output size is the input's minus its
    # last dim, plus a constant or another tensor's size
    size_out = x.size()[:-1] + (w.shape[1],)
    y = torch.addmm(torch.zeros(w.shape[1]), x.view(-1, x.size(-1)), w)
    return y.view(size_out), x.shape[:-1] + (4,), tuple(x.size()) + (1,)


def test_a_size_concatenated_with_a_tuple_stays_symbolic():
    """`x.size()[:-1] + (n,)` used to ask whether the size tuple was a
    constant, which guarded its symbolic batch size to its value: each new
    batch size recompiled (GPT-2: 8 shapes, 8 compiles). Now one static and
    one dynamic graph serve every batch size."""
    cnt = CompileCounter()
    opt = dynamo.optimize(cnt)(conv1d_like)
    w = torch.randn(8, 5)
    for b in (2, 3, 5, 7, 11):
        x = torch.randn(b, 6, 8)
        got, want = opt(x, w), conv1d_like(x, w)
        assert same(got[0], want[0]) and got[1:] == want[1:]
        assert type(got[1]) is torch.Size and type(got[2]) is tuple
    assert cnt.frame_count == 2
    assert not any(g.kind == G.SHAPE_GUARD and "==" in g.expected[0]
                   for g in dynamo.records.all_records()[-1].guards)


# Everyday uses of a size that must not specialize it (each once recompiled
# per batch size, broke the graph, or crashed the trace):
SIZE_IDIOMS = {
    "unpack_into_view": lambda x: x.view(*x.shape[:-1], -1, 2),
    "size_equals_a_tuple": lambda x: x * (2 if x.shape == (x.shape[0], 6, 8) else 3),
    "tuple_of_size_equals": lambda x: x * (1 if tuple(x.shape[1:]) == (6, 8) else 2),
    "size_numel": lambda x: x.view(x.size().numel()),
    "list_of_size": lambda x: x.view(list(x.size())[:-1] + [4, 2]),
    "sizes_concatenated": lambda x: torch.zeros(x.shape[:1] + x.shape[2:]) + x.sum(1),
    "size_times_tuple": lambda x: x.view(x.shape[:1] + (2,) * 1 + (-1,)),
    "reversed_size": lambda x: x.permute(2, 1, 0).contiguous().view(x.shape[::-1]),
    "torch_size_of_sizes": lambda x: x.view(torch.Size([x.shape[0], -1])),
}


@pytest.mark.parametrize("name", SIZE_IDIOMS)
def test_everyday_size_idioms_stay_symbolic(name):
    """One static and one dynamic graph for five batch sizes, no break,
    eager's results."""
    f = SIZE_IDIOMS[name]
    cnt = CompileCounter()
    opt = dynamo.optimize(cnt)(f)
    for b in (2, 3, 5, 7, 9):
        x = torch.randn(b, 6, 8)
        assert same(opt(x), f(x))
    assert cnt.frame_count == 2
    assert not any(r.break_reasons for r in dynamo.records.all_records())


def size_branch(x):
    if x.size(0) > 4:
        return x * 2
    return x - 1


def test_branch_on_a_size_becomes_a_shape_guard():
    """A branch on a symbolic size is a guard on the relation that held,
    not a graph break; the other side of it recompiles once, naming the
    relation and the actual size."""
    cnt = CompileCounter()
    opt = dynamo.optimize(cnt)(size_branch)
    for n in (2, 3, 4, 5, 9, 3, 16):
        x = torch.randn(n, 3)
        assert same(opt(x), size_branch(x))
    assert cnt.frame_count == 3
    recs = dynamo.records.all_records()
    assert all(not r.break_reasons for r in recs)
    small = [g.expected[0] for g in recs[1].guards if g.kind == G.SHAPE_GUARD]
    assert small == ["2 <= L['x'].size()[0]", "L['x'].size()[0] <= 4"]
    assert recs[2].recompile_reason.startswith(
        "L['x'].size()[0] <= 4: expected True, actual False with L['x'].size()[0] = 5 "
        "(SHAPE_GUARD of entry [0/1]); guarded at test_dynamic_shapes.py:")
    # the guard's provenance: the line of the size branch (issue 30)
    assert recs[2].recompile_reason.endswith(
        f"test_dynamic_shapes.py:{size_branch.__code__.co_firstlineno + 1}: if x.size(0) > 4:")
    big = [g.expected[0] for g in recs[2].guards if g.kind == G.SHAPE_GUARD]
    assert "4 < L['x'].size()[0]" in big


def test_range_over_a_size_specializes_it():
    def f(x):
        out = x[0] * 0
        for i in range(x.size(0)):
            out = out + x[i]
        return out
    cnt = CompileCounter()
    opt = dynamo.optimize(cnt)(f)
    for n in (2, 3, 3, 4):
        x = torch.randn(n, 3)
        assert same(opt(x), f(x))
    assert cnt.frame_count == 3         # one per size: the loop count is a constant
    last = dynamo.records.all_records()[-1]
    assert "L['x'].size()[0] == 4" in [g.expected[0] for g in last.guards if g.kind == G.SHAPE_GUARD]


# ---------------------------------------------------------------- marks and policy

def double(x):
    return x * 2


def test_mark_dynamic_makes_the_first_compile_symbolic():
    x = torch.randn(5, 3)
    dynamo.mark_dynamic(x, 0)
    assert x._dynamo_dynamic_indices == {0}       # torch's attribute
    cnt = CompileCounter()
    opt = dynamo.optimize(cnt)(double)
    assert same(opt(x), x * 2)
    for n in (2, 7, 30):
        y = torch.randn(n, 3)
        assert same(opt(y), y * 2)
    assert cnt.frame_count == 1
    y = torch.randn(7, 4)               # dim 1 was static
    assert same(opt(y), y * 2) and cnt.frame_count == 2


def test_torch_marker_attributes_are_honoured():
    """Tensors marked by torch's own functions carry the same attributes."""
    x = torch.randn(6, 3)
    x._dynamo_weak_dynamic_indices = {0}        # what torch's maybe_mark_dynamic sets
    cnt = CompileCounter()
    opt = dynamo.optimize(cnt)(double)
    opt(x)
    y = torch.randn(9, 3)
    assert same(opt(y), y * 2)
    assert cnt.frame_count == 1


def test_mark_static_wins_over_the_dynamic_shapes_alias():
    dynamo.config.dynamic_shapes = True
    x = torch.randn(5, 3)
    dynamo.mark_static(x, 0)
    cnt = CompileCounter()
    opt = dynamo.optimize(cnt)(double)
    opt(x)
    tm = [g for g in dynamo.records.all_records()[0].guards if g.kind == G.TENSOR_MATCH]
    assert tm[0].expected[6] == (5, None)


def test_sizes_zero_and_one_are_specialized():
    """Marked dynamic, a size of 1 or 0 is still a constant (as torch
    does): the dynamic graph requires 2 <= size, and sizes 1 and 0 get
    graphs of their own."""
    cnt = CompileCounter()
    opt = dynamo.optimize(cnt)(double)
    x = torch.randn(1, 3)
    dynamo.mark_dynamic(x, 0)
    opt(x)
    tm = [g for g in dynamo.records.all_records()[0].guards if g.kind == G.TENSOR_MATCH]
    assert tm[0].expected[6] == (1, 3)
    y = torch.randn(4, 3)
    dynamo.mark_dynamic(y, 0)
    for t in (y, torch.randn(5, 3), torch.randn(1, 3), torch.randn(0, 3), torch.randn(0, 3)):
        assert same(opt(t), t * 2)
    assert cnt.frame_count == 3         # 1 (static), 4.. (symbolic), 0 (static)


def test_automatic_dynamic_off_compiles_per_size():
    dynamo.config.automatic_dynamic_shapes = False
    cnt = CompileCounter()
    opt = dynamo.optimize(cnt)(double)
    for n in (2, 3, 4):
        opt(torch.randn(n))
    assert cnt.frame_count == 3


def test_assume_static_by_default_off_starts_symbolic():
    dynamo.config.assume_static_by_default = False
    cnt = CompileCounter()
    opt = dynamo.optimize(cnt)(double)
    for n in (2, 3, 4):
        opt(torch.randn(n, 2))
    assert cnt.frame_count == 1


def test_two_inputs_changing_together_stay_related():
    """Both inputs' sizes change at the first recompile: both become
    symbolic, and the graph's `a + b` relates them (a guard), instead of
    tying a's symbol to b's constant."""
    def add(a, b):
        return a + b
    cnt = CompileCounter()
    opt = dynamo.optimize(cnt)(add)
    for n in (2, 3, 4, 5):
        a, b = torch.randn(n), torch.randn(n)
        assert same(opt(a, b), a + b)
    assert cnt.frame_count == 2
    shapes = [g.expected[0] for g in dynamo.records.all_records()[1].guards
              if g.kind == G.SHAPE_GUARD]
    assert sorted(shapes) == ["2 <= L['b'].size()[0]", "L['a'].size()[0] == L['b'].size()[0]"]
    with pytest.raises(RuntimeError):       # the relation fails: eager's error, after a compile
        opt(torch.randn(3), torch.randn(4))


# ---------------------------------------------------------------- the wrong results

def contiguous_of(a, b):
    t = a * b
    return a.contiguous()


def test_contiguous_of_a_non_contiguous_input_in_dynamic_mode():
    dynamo.config.dynamic_shapes = True
    opt = dynamo.optimize("eager")(contiguous_of)
    a = torch.randn(4, 6)
    assert opt(a, torch.randn(4, 6)) is a
    a2 = torch.randn(6, 5).t()
    r = opt(a2, torch.randn(5, 6))
    assert r is not a2 and r.is_contiguous() and torch.equal(r, a2)


def stride_of_views(x, n):
    return n + x.unsqueeze(0).squeeze(0).stride(0), x.t().stride()


def test_stride_of_a_view_is_an_int_not_the_trace_symint():
    """Dynamic fuzz seed 54002723: the stride of a view of an input was
    replayed on the input's symbolic sizes and returned as a constant, so
    the call returned the trace's SymInt (`s27 + 5`) instead of 8."""
    dynamo.config.dynamic_shapes = True
    cnt = CompileCounter()
    opt = dynamo.optimize(cnt)(stride_of_views)
    for s in (3, 4, 7):
        r = opt(torch.randn(s, s), 5)
        assert r == stride_of_views(torch.randn(s, s), 5)
        assert type(r[0]) is int and all(type(v) is int for v in r[1])
    assert cnt.frame_count == 1


def test_a_symint_never_becomes_a_constant_of_the_rewritten_code():
    """The codegen's own check: a SymInt that reaches LOAD_CONST (a bug
    elsewhere) makes the frame run eagerly, never returns the SymInt."""
    from dynamo.codegen import PyCodegen
    from dynamo.exc import Unsupported
    from torch._subclasses.fake_tensor import FakeTensorMode
    from torch.fx.experimental.symbolic_shapes import (DimDynamic, ShapeEnv,
                                                       StatelessSymbolicContext)
    fake = FakeTensorMode(shape_env=ShapeEnv()).from_tensor(
        torch.empty(5, 3), symbolic_context=StatelessSymbolicContext(
            dynamic_sizes=[DimDynamic.DYNAMIC] * 2))
    sym = fake.shape[0]
    cg = PyCodegen(stride_of_views.__code__)
    with pytest.raises(Unsupported, match="symbolic size"):
        cg.load_const((1, sym + 3))
    cg.load_const((1, 2))


def try_then_write(x, n):
    try:
        t = x * 2
    except Exception:
        t = x
    x.add_(1)
    return t + n


def test_graph_writing_its_input_with_a_symbolic_int_input():
    """Dynamic fuzz seed 54000512: a graph with ops in a try that writes an
    input (its writes deferred, dynamo/input_writes.py) failed to compile
    once an int argument had become a symbolic input (AttributeError:
    'SymInt' has no untyped_storage): the frame ran eagerly."""
    dynamo.config.dynamic_shapes = True
    cnt = CompileCounter()
    opt = dynamo.optimize(cnt)(try_then_write)
    with warnings.catch_warnings():
        warnings.simplefilter("error")          # "could not compile" is a RuntimeWarning
        for n in (4, 2, 7):
            a, b = torch.ones(4, 2), torch.ones(4, 2)
            assert torch.equal(opt(a, n), try_then_write(b, n)) and torch.equal(a, b)
    assert cnt.frame_count == 2                 # n static, then symbolic


def dropout_off(x, training):
    return torch.nn.functional.dropout(x, p=0.5, training=training), x * 2


def test_dropout_without_training_returns_its_input_with_symbolic_sizes():
    """Dynamic fuzz seeds 54013118, 54016837: with the Python dispatcher on
    for every fake run, dropout(training=False) became a new tensor where
    eager returns its input. The dispatcher is now only the retry of a
    fake run that failed."""
    dynamo.config.dynamic_shapes = True
    cnt = CompileCounter()
    aot_eager = dynamo.backends.lookup("aot_eager")[1]
    opt = dynamo.optimize(lambda gm, ex: (cnt(gm, ex), aot_eager(gm, ex))[1])(dropout_off)
    for s in (3, 5):
        x = torch.randn(s, 4)
        out, doubled = opt(x, False)
        assert out is x and torch.equal(doubled, x * 2)
    assert cnt.frame_count == 1


G_COUNT = [0]


def write_through_alias_then_raise(x, y, w):
    t = y * w
    x.copy_(t)
    G_COUNT[0] += 1
    y.zero_()           # y, a view of x, now of a tensor needing grad: raises
    return t


def test_aliased_inputs_stay_related_with_symbolic_sizes():
    """Dynamic fuzz seed 54013036: x got a symbolic example with a storage
    of its own while y, a view of x, was faked from its real base: the
    write to x no longer reached y, the trace accepted y.zero_(), and the
    graph raised at run time after the frame's earlier side effect had been
    left for after the graph (the global count lost). Inputs sharing a
    storage stay static and related; the call raises where eager does."""
    dynamo.config.dynamic_shapes = True
    w = torch.tensor(0.5, requires_grad=True)
    opt = dynamo.optimize("aot_eager")(write_through_alias_then_raise)
    for fn in (write_through_alias_then_raise, opt):
        G_COUNT[0] = 0
        x = torch.randn(3, 3)
        with pytest.raises(RuntimeError, match="in-place"):
            fn(x, x.view(3, 3), w)
        assert G_COUNT[0] == 1


G_LOG = []


def log_then_max(x, n):
    G_LOG.append(n)
    return x.max()


def test_side_effect_before_an_op_raising_on_a_specialized_size():
    """max() of a 0-row tensor raises in eager after the append; the
    compiled frame must leave the same log (it lost it: the op was not
    probed on real tensors once sizes were symbolic)."""
    dynamo.config.dynamic_shapes = True
    opt = dynamo.optimize("eager")(log_then_max)
    opt(torch.randn(3, 4), 1)
    G_LOG.clear()
    with pytest.raises(RuntimeError):
        opt(torch.randn(0, 4), 2)
    assert G_LOG == [2]
    G_LOG.clear()


# ---------------------------------------------------------------- models

def test_tiny_bert_over_20_shapes():
    """(batch, sequence) over 20 shapes, twice: 3 compiles (static, then
    both dims symbolic, then batch 1 specialized), no break, no cache-limit
    warning, outputs equal to eager. Before: 230 compile records, 160
    graphs in 60 calls."""
    transformers = pytest.importorskip("transformers")
    torch.manual_seed(0)
    cfg = transformers.BertConfig(vocab_size=100, hidden_size=64, num_hidden_layers=2,
                                  num_attention_heads=2, intermediate_size=128,
                                  max_position_embeddings=64)
    m = transformers.BertModel(cfg).eval()
    cm = dynamo.optimize("eager")(m)
    shapes = [(b, s) for b in (1, 2, 3, 4) for s in (5, 8, 11, 16, 23)]
    random.Random(0).shuffle(shapes)        # the second shape changes both dims
    with warnings.catch_warnings(record=True) as w, torch.no_grad():
        warnings.simplefilter("always")
        for _ in range(2):
            for b, s in shapes:
                ids = torch.randint(0, 100, (b, s))
                mask = torch.ones(b, s, dtype=torch.long)
                got = cm(input_ids=ids, attention_mask=mask).last_hidden_state
                want = m(input_ids=ids, attention_mask=mask).last_hidden_state
                assert same(got, want), (b, s)
    assert not [x for x in w if "cache_size_limit" in str(x.message)]
    recs = dynamo.records.all_records()
    assert len(recs) <= 3 and sum(len(r.graphs) for r in recs) <= 3
    assert not any(r.break_reasons for r in recs)


def padding_mask(mask):
    b = torch.arange(mask.shape[0])[:, None]
    k = torch.arange(mask.shape[1])[None, :]
    return mask[b, k] & True


def test_padding_mask_indexing_at_batch_one_is_one_graph():
    """transformers' padding-mask idiom broke the graph at batch 1: the op
    was probed on real tensors of ones, and index 1 is out of range for a
    dim of size 1. Integer tensors of an indexing op are probed as zeros."""
    for batch in (1, 2):
        out = dynamo.explain(padding_mask)(torch.ones(batch, 8, dtype=torch.bool))
        assert (out.graph_count, out.graph_break_count) == (1, 0)


# ---------------------------------------------------------------- int arguments, .item()

def _kinds(code):
    return [[G.KIND_NAMES[g.kind] for g in e.guards] for e in _C.cache_entries(code)]


def test_int_argument_becomes_symbolic_after_its_value_changes():
    """An int argument is a constant (EQUALS_MATCH) at the first compile;
    the recompile its change causes traces it as a symbolic int (a graph
    input, TYPE_MATCH int): 20 values, 2 compiles, results of the right
    type."""
    def f(x, n):
        return x * n + n, n * 2

    cnt = CompileCounter()
    opt = dynamo.optimize(cnt)(f)
    x = torch.randn(3)
    for n in range(2, 22):
        got, want = opt(x, n), f(x, n)
        assert same(got[0], want[0]) and got[1] == want[1] and type(got[1]) is int, n
    assert cnt.frame_count == 2
    newest, oldest = _kinds(f.__code__)
    assert "EQUALS_MATCH" in oldest and "EQUALS_MATCH" not in newest and "TYPE_MATCH" in newest
    assert opt(x, 2.5)[1] == 5.0 and cnt.frame_count == 3        # a float: not the int entry


def test_int_argument_used_as_a_size_is_guarded_in_c():
    """`x.view(n, -1)`, `torch.ones(n, 1)`: the relations the trace needs
    of `n` are SHAPE_GUARDs over L['n'] (INT leaves); a value that breaks
    them (12 % 5 != 0) misses and recompiles, naming the relation."""
    def g(x, n):
        return x.view(n, -1) + torch.ones(n, 1)

    cnt = CompileCounter()
    opt = dynamo.optimize(cnt)(g)
    x = torch.randn(12)
    for n in (2, 3, 4, 6):
        assert same(opt(x, n), g(x, n)), n
    assert cnt.frame_count == 2
    texts = [g_.expected[0] for e in _C.cache_entries(g.__code__) for g_ in e.guards
             if g_.kind == G.SHAPE_GUARD]
    assert "(12 % L['n']) == 0" in texts
    start = dynamo.records.mark()
    with pytest.raises(RuntimeError):
        opt(x, 5)                           # eager raises too: view of 12 as (5, -1)
    reasons = [r.recompile_reason for r in dynamo.records.records_since(start)]
    assert reasons and "L['n']" in reasons[0] and "SHAPE_GUARD" in reasons[0]


def test_int_argument_specialized_by_range_and_automatic_dynamic_off():
    """A use that needs the number (`range(n)`) specializes the symbolic
    int (one entry per value, as before); with automatic_dynamic_shapes
    off an int stays a constant."""
    def k(x, n):
        for i in range(n):
            x = x + i
        return x

    cnt = CompileCounter()
    opt = dynamo.optimize(cnt)(k)
    x = torch.randn(3)
    for n in (2, 3, 4, 3, 2):
        assert same(opt(x, n), k(x, n))
    assert cnt.frame_count == 3
    dynamo.reset()
    dynamo.config.automatic_dynamic_shapes = False

    def f(x, n):
        return x * n

    cnt = CompileCounter()
    opt = dynamo.optimize(cnt)(f)
    for n in (2, 3, 4, 5):
        assert same(opt(x, n), f(x, n))
    assert cnt.frame_count == 4 and all("TYPE_MATCH" not in k_ for k_ in _kinds(f.__code__))


def test_integer_item_is_an_unbacked_symint(monkeypatch):
    """config.capture_scalar_outputs: an integer `.item()` is an unbacked
    SymInt: a size (`torch.zeros(n)`), a slice bound and arithmetic stay in
    one graph, with no recompile when the number changes (with aot_eager
    too); without the setting `.item()` breaks the graph."""
    def f(x, k):
        n = k.sum().item()
        return torch.zeros(n) + 1, x[:n] * 2, n + 1

    x = torch.randn(10)
    plain = dynamo.explain(f)(x, torch.tensor([1, 2]))
    assert plain.graph_break_count >= 1
    monkeypatch.setattr(dynamo.config, "capture_scalar_outputs", True)
    for backend in ("eager", "aot_eager"):
        dynamo.reset()
        out = dynamo.explain(f)(x, torch.tensor([1, 2]))
        assert (out.graph_count, out.graph_break_count) == (1, 0)
        cnt = CompileCounter()
        opt = dynamo.optimize(cnt if backend == "eager" else backend)(f)
        start = dynamo.records.mark()
        for k in ([1, 2], [3, 4], [0, 1], [2, 2]):
            kk = torch.tensor(k)
            got, want = opt(x, kk), f(x, kk)
            assert same(got[0], want[0]) and same(got[1], want[1]) and got[2] == want[2], k
            assert type(got[2]) is int
        if backend == "eager":
            assert cnt.frame_count == 1
        else:
            assert len(dynamo.records.records_since(start)) == 1


def test_branch_on_an_integer_item_still_breaks(monkeypatch):
    monkeypatch.setattr(dynamo.config, "capture_scalar_outputs", True)

    def f(x):
        n = x.sum().int().item()
        if n > 2:
            return x + n
        return x - n

    for v in (1.0, 2.0):
        x = torch.full((3,), v)
        out = dynamo.explain(f)(x)
        assert out.graph_break_count == 1
        assert same(dynamo.optimize("eager")(f)(x), f(x))
