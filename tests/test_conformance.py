"""Behaviours code written for TorchDynamo relies on (frame filtering, state
carried across breaks, recompile reporting), each checked by counting
compile records, frames, graphs and ops."""
import logging

import pytest
import torch

import dynamo
from dynamo import config, records
from dynamo.testing import CompileCounter, same, unsupported


def _compiled_names():
    return [r.name for r in records.all_records()]


# ------------------------------------------------ frames with no torch work

def add_plain(a, b):
    return a + b


def identity(x):
    return x


def test_frame_without_tensors_is_not_compiled_inside_a_block():
    cnt = CompileCounter()
    with dynamo.optimize(cnt):
        assert add_plain(2, 3) == 5
        assert add_plain(torch.ones(2), 1).tolist() == [2.0, 2.0]
    # the int call made no compile record and no cache entry; the tensor call did
    assert _compiled_names().count("add_plain") == 1
    assert len(dynamo._C.cache_entries(add_plain.__code__)) == 1
    assert (cnt.frame_count, cnt.op_count) == (1, 1)


def test_list_containing_itself_is_skipped_not_a_recursion_error():
    x = []
    x.append(x)
    cnt = CompileCounter()
    with dynamo.optimize(cnt, nopython=True):
        assert identity(x) is x
    assert cnt.frame_count == 0
    assert "identity" not in _compiled_names()


def test_list_subclass_is_not_iterated_by_the_filter():
    class Strict(list):
        def __iter__(self):
            raise AssertionError("iterated")

        def __len__(self):
            raise AssertionError("len() taken")

    def first_two(x):
        return x[0] + x[1]

    x = Strict()
    list.append(x, torch.ones(2))
    list.append(x, torch.ones(2))
    cnt = CompileCounter()
    with dynamo.optimize(cnt, nopython=True):
        assert first_two(x).tolist() == [2.0, 2.0]
    assert cnt.frame_count == 0 and "first_two" not in _compiled_names()


def test_tensor_found_in_nested_containers_objects_and_closures():
    class Box:
        def __init__(self, t):
            self.t = t

    c = torch.ones(2)

    def from_closure(n):
        return c + n

    def from_box(d):
        return d["k"][0].t + 1

    cnt = CompileCounter()
    with dynamo.optimize(cnt):
        from_closure(1)
        from_box({"k": (Box(torch.ones(2)),)})
    assert cnt.frame_count == 2
    assert {"from_closure", "from_box"} <= set(_compiled_names())


def test_function_handed_to_optimize_is_compiled_even_without_tensors():
    cnt = CompileCounter()
    fn = dynamo.optimize(cnt)(add_plain)
    assert fn(2, 3) == 5
    assert _compiled_names() == ["add_plain"]
    assert cnt.frame_count == 0


def test_self_containing_list_with_a_tensor_is_unsupported_not_recursion():
    def fn(x, lst):
        return x + lst[0]

    lst = [torch.ones(1)]
    lst.append(lst)
    with pytest.raises(dynamo.exc.Unsupported, match="contains itself"):
        dynamo.optimize_assert(CompileCounter())(fn)(torch.ones(2), lst)


# ------------------------------------------------ globals, closures, dunders

counter = 0
tape = []


def bump():
    global counter
    counter += 1
    return counter


def test_global_assignment_is_traced_and_written_back():
    global counter

    def fn(x):
        a = bump()
        b = bump()          # reads the value the trace assigned
        return x * a + b

    counter = 0
    cnt = CompileCounter()
    out = dynamo.optimize(cnt)(fn)(torch.ones(2))
    assert out.tolist() == [3.0, 3.0] and counter == 2
    # one graph, no break; the int is specialized: counter == 2 now recompiles
    assert (cnt.frame_count, cnt.op_count) == (1, 2)
    assert [r.break_reasons for r in records.all_records()] == [[]]
    counter = 0
    dynamo.optimize(cnt)(fn)(torch.ones(2))
    assert counter == 2 and cnt.frame_count == 1       # a hit: same guards


def test_global_list_mutation_is_written_back():
    def fn(x):
        tape.clear()
        tape.append(x + 1)
        tape.append("tag")
        return x * 2

    tape[:] = ["old"]
    cnt = CompileCounter()
    out = dynamo.optimize(cnt)(fn)(torch.ones(2))
    assert out.tolist() == [2.0, 2.0]
    assert tape[0].tolist() == [2.0, 2.0] and tape[1] == "tag" and len(tape) == 2
    assert (cnt.frame_count, cnt.op_count) == (1, 2)


def make_scaler(t, k):
    def scale(v: "list[torch.Tensor]") -> torch.Tensor:    # annotations are evaluated
        return v * k + t
    return scale


def test_closure_escaping_the_frame_is_rebuilt_with_shared_cells():
    from typing import List

    def fn(x):
        def get() -> List[int]:
            return box[0]

        def put(v):
            box[0] = v
        box = None
        tape.clear()
        f = make_scaler(x + 1, 3)
        tape.append(f)
        tape.append(get)
        tape.append(put)
        return f(x)

    box = None      # noqa: F841
    cnt = CompileCounter()
    # get/put close over fn's own variable `box`: they are rebuilt over the
    # frame's real cell (LOAD_CLOSURE), so they still share it
    out = dynamo.optimize_assert(cnt)(fn)(torch.ones(2))
    assert out.tolist() == [5.0, 5.0]
    f, get, put = tape
    cell = get.__closure__[0]
    assert cell is put.__closure__[0] and cell.cell_contents is None
    cell.cell_contents = [0]
    put(7)
    assert get() == 7
    assert cnt.frame_count == 1

    def fn2(x):
        tape.clear()
        f = make_scaler(x + 1, 3)
        tape.append(f)
        return f(x)

    dynamo.reset()
    cnt = CompileCounter()
    out = dynamo.optimize_assert(cnt)(fn2)(torch.ones(2))
    assert out.tolist() == [5.0, 5.0]
    (f,) = tape
    assert f.__name__ == "scale" and f.__code__ is make_scaler(0, 0).__code__
    cells = dict(zip(f.__code__.co_freevars, (c.cell_contents for c in f.__closure__)))
    assert cells["k"] == 3
    assert f(torch.zeros(2)).tolist() == [2.0, 2.0]     # t = x + 1 came out of the graph
    assert (cnt.frame_count, cnt.op_count) == (1, 3)


def make_box(v):
    def get():
        return v

    def put(n):
        nonlocal v
        v = n
    return get, put


def test_two_closures_over_one_cell_still_share_it():
    def fn(x):
        tape.clear()
        get, put = make_box(x * 2)
        tape.append(get)
        tape.append(put)
        return x + 1

    cnt = CompileCounter()
    dynamo.optimize_assert(cnt)(fn)(torch.ones(2))
    get, put = tape
    assert get().tolist() == [2.0, 2.0]
    assert get.__closure__[0] is put.__closure__[0]
    put(7)
    assert get() == 7
    assert (cnt.frame_count, cnt.op_count) == (1, 2)


class Num:
    def __init__(self, t):
        self.t = t

    def __add__(self, other):
        return Num(self.t + other.t)

    def __mul__(self, other):
        return Num(self.t * other)


def test_dunder_of_a_passed_in_user_object_is_inlined():
    def fn(a, b):
        return (a + b) * 2

    cnt = CompileCounter()
    out = dynamo.optimize_assert(cnt)(fn)(Num(torch.ones(2)), Num(torch.ones(2)))
    assert out.t.tolist() == [4.0, 4.0]
    assert (cnt.frame_count, cnt.op_count) == (1, 2)


# ------------------------------------------------ iterators across a break

def test_tuple_iterator_local_keeps_tracing_after_a_break():
    def fn(x):
        it = iter(tuple(range(10)))
        x = x + next(it)
        x = unsupported(x, x)
        x = x + next(it)
        x = x + next(it)
        return x, it

    v = torch.ones(3)
    expected, eit = fn(v)
    cnt = CompileCounter()
    opt = dynamo.optimize(cnt)(fn)
    for _ in range(2):
        got, git = opt(v)
        assert got.tolist() == expected.tolist()
        assert list(git) == [3, 4, 5, 6, 7, 8, 9]
    # before: the resume function saw an opaque iterator and broke at each next()
    assert (cnt.frame_count, cnt.op_count) == (2, 3)
    assert [len(r.break_reasons) for r in records.all_records()] == [1, 0]


def test_iterator_also_held_elsewhere_stays_the_real_object():
    def fn(x):
        it = iter((1, 2, 3, 4))
        keep = [it]
        x = x + next(it)
        x = unsupported(x, x)
        x = x + next(it)
        return x, keep

    v = torch.ones(2)
    cnt = CompileCounter()
    got, keep = dynamo.optimize(cnt)(fn)(v)
    assert got.tolist() == fn(v)[0].tolist()
    assert list(keep[0]) == [3, 4]          # the one iterator, advanced by both nexts


def test_global_assignment_written_back_before_a_try_block():
    def fn(x):
        global counter
        counter = counter + 1
        x = x + 1
        try:
            y = x * 2
        except RuntimeError:
            y = x
        return y

    global counter
    counter = 0
    cnt = CompileCounter()
    assert dynamo.optimize(cnt)(fn)(torch.ones(2)).tolist() == [4.0, 4.0]
    assert counter == 1
    assert cnt.frame_count >= 1


# ------------------------------------------------ grad-mode blocks across a break

def test_resume_function_leaves_a_no_grad_block_in_its_graph():
    def fn(a, b):
        x = a + b
        with torch.no_grad():
            x = x + 1
            x.sum().tolist()        # graph break inside the block
            x = x + 2
        x = x + 3
        return x

    a = torch.ones(3, requires_grad=True)
    b = torch.ones(3)
    cnt = CompileCounter()
    opt = dynamo.optimize(cnt)(fn)
    for _ in range(2):
        out = opt(a, b)
        assert torch.is_grad_enabled()          # the block's exit ran, mode restored
        assert out.tolist() == [8.0] * 3 and not out.requires_grad
    # before: the resume function broke again at the block's __exit__ (3 graphs)
    assert cnt.frame_count == 2
    names = [r.name for r in records.all_records()]
    assert len(names) == 2 and all(not r.break_reasons for r in records.all_records()[1:])
    targets = [n.target for n in cnt.graphs[1].graph.nodes if n.op == "call_function"]
    assert torch._C._set_grad_enabled in targets


def test_second_break_inside_a_no_grad_block_in_a_resume_function():
    def fn(a, b):
        x = a + b
        with torch.no_grad():
            x = x + 1
            x.sum().tolist()        # break in fn
            x = x * 2
            x.sum().tolist()        # break in the resume function, still in the block
            y = x + 3
        return y + a

    a = torch.ones(3, requires_grad=True)
    b = torch.ones(3)
    expected = fn(a, b)
    cnt = CompileCounter()
    opt = dynamo.optimize(cnt)(fn)
    for _ in range(2):
        out = opt(a, b)
        assert torch.is_grad_enabled()
        assert out.tolist() == expected.tolist() and out.requires_grad
    # before: the second break could not cut the block, so the whole first
    # resume function ran eagerly (2 graphs, the middle part uncompiled)
    assert cnt.frame_count == 3
    assert all(r.status == "ok" for r in records.all_records())


# ------------------------------------------------ recompile reporting

def test_cache_limit_hit_logs_one_warning_record_with_the_failing_guard(caplog):
    def model(x):
        return x + x

    config.cache_size_limit = 2
    config.automatic_dynamic_shapes = False     # one entry per size
    cnt = CompileCounter()
    with caplog.at_level(logging.INFO, logger="dynamo"), pytest.warns(RuntimeWarning):
        for n in range(2, 8):
            dynamo.optimize(cnt)(model)(torch.randn(n, 3))
    assert cnt.frame_count == 2
    warns = [r for r in caplog.records if r.name == "dynamo" and r.levelno >= logging.WARNING]
    assert len(warns) == 1
    msg = warns[0].getMessage()
    assert "model" in msg and "cache_size_limit=2" in msg
    assert "L['x'].size()[0]: expected 3, actual 4" in msg
    # the one recompile below the limit was logged with its reason
    recompiles = [r.getMessage() for r in caplog.records if r.getMessage().startswith("recompiling")]
    assert len(recompiles) == 1 and "L['x'].size()[0]: expected 2, actual 3" in recompiles[0]


# ------------------------------------------------ strides of views

def test_stride_of_a_view_of_an_input_is_eagers_not_a_break():
    """`x.view(...).stride()` over a graph input (Longformer's chunking
    reads it to build an as_strided): the strides eager gives, replayed
    on a meta tensor, even for size-1 dims where fake tensors disagree
    ((2, 1, 3) with strides (1, 2, 2) viewed as (2, 1, 3, 1): eager says
    (1, 6, 2, 2), a fake tensor (1, 2, 2, 2)). Before: a break there."""
    def f(x):
        v = x.view(2, 1, 3, 1)
        s = v.stride()
        return v.as_strided((2, 3), (s[0], s[2])) + 1, s, v.stride(1)

    x = torch.randn(3, 1, 2).permute(2, 1, 0)
    cnt = CompileCounter()
    out = dynamo.optimize(cnt)(f)(x)
    expected = f(x)
    assert out[1] == expected[1] == (1, 6, 2, 2) and out[2] == expected[2] == 6
    assert torch.equal(out[0], expected[0])
    assert (cnt.frame_count, cnt.op_count) == (1, 3)      # view, as_strided, add

    def g(x):                                             # not a view: still read eagerly
        t = x * 1
        return t + t.stride(0)

    cnt = CompileCounter()
    x = torch.randn(4, 1).t()
    assert torch.equal(dynamo.optimize(cnt)(g)(x), g(x))
    assert cnt.frame_count == 2


def _chunk(q, w):
    """Longformer's `_chunk`: overlapping chunks by as_strided over a view
    whose strides it reads."""
    h = q.view(q.size(0), torch.div(q.size(1), w * 2, rounding_mode="trunc"), w * 2, q.size(2))
    size, stride = list(h.size()), list(h.stride())
    size[1], stride[1] = size[1] * 2 - 1, stride[1] // 2
    return h.as_strided(size=size, stride=stride), h.stride()


def test_stride_of_a_view_of_a_computed_tensor_or_a_factory_is_eagers():
    """Longformer's `_chunk`: `q.view(b, torch.div(n, 2 * w), 2 * w, d)`
    over a computed tensor, then `.stride()` for an as_strided. The view
    chain is replayed on a meta tensor from its root when the root's
    strides are known: a computed tensor with no dim of size 0 or 1 (its
    strides are the fake kernel's and eager's alike), or a factory's
    contiguous result (`new_ones`); a view size given as a graph value
    (the 0-dim tensor of torch.div) is the view's static shape. One graph,
    eager's strides, where a size-1 dim used to break."""
    def f(x, w):
        q = (x * 2).transpose(0, 1).reshape(4, 8, 16)    # computed, no size-1 dim
        return _chunk(q, w)

    def g(m, w):
        ones = m.new_ones(m.size())                         # (2, 8, 1, 1), a factory
        return _chunk(ones.transpose(1, 2).reshape(2, 8, 1), w)

    for fn, arg in ((f, torch.randn(8, 4, 16)), (g, torch.ones(2, 8, 1, 1))):
        cnt = CompileCounter()
        out = dynamo.optimize(cnt)(fn)(arg, 4)
        expected = fn(arg, 4)
        assert out[1] == expected[1], fn.__name__
        assert out[0].stride() == expected[0].stride() and torch.equal(out[0], expected[0])
        assert cnt.frame_count == 1, fn.__name__

    def h(x, w):                                         # root with a size-1 dim: read eagerly
        return _chunk(x * 1, w)

    cnt = CompileCounter()
    x = torch.randn(1, 8, 16)
    out = dynamo.optimize(cnt)(h)(x, 4)
    assert out[1] == h(x, 4)[1] and cnt.frame_count == 2


def test_longformer_mask_chain_strides_are_eagers():
    """Longformer's diagonal mask: `(mask != 0)[:, :, None, None]`, then
    `type_as` and `masked_fill`, transposed, reshaped and chunked with a
    `.stride()` read. A dtype conversion replays on a meta tensor from the
    comparison's trusted strides; masked_fill's result is contiguous. One
    graph, eager's strides and values."""
    def f(attention_mask, q, w):
        remove = (attention_mask != 0)[:, :, None, None]
        float_mask = remove.type_as(q).masked_fill(remove, torch.finfo(q.dtype).min)
        b, n = float_mask.shape[:2]
        return _chunk(float_mask.transpose(1, 2).reshape(b, n, 1), w)

    am = torch.ones(2, 8)
    am[0, 5:] = 0
    q = torch.randn(2, 8, 4)
    cnt = CompileCounter()
    out = dynamo.optimize(cnt)(f)(am, q, 4)
    expected = f(am, q, 4)
    assert out[1] == expected[1] and torch.equal(out[0], expected[0])
    assert cnt.frame_count == 1


def test_meta_replay_of_copy_ops_gives_eager_strides():
    """The premise of replaying dtype conversions and clone on meta tensors
    (tracer/variables/tensor._COPY_OPS) and of taking masked_fill's result
    as contiguous: checked against eager on random sizes (many of size 1)
    and strides (permuted, sliced, unsqueezed, expanded). An elementwise
    op's meta strides differ from eager's for size-1 dims, which is why
    those are not replayed."""
    import random
    from dynamo.tracer.variables.tensor import _COPY_OPS
    ops = {"to": lambda t: t.to(torch.float64), "float": lambda t: t.float(),
           "bool": lambda t: t.bool(), "long": lambda t: t.long(), "half": lambda t: t.half(),
           "double": lambda t: t.double(), "int": lambda t: t.int(), "clone": lambda t: t.clone(),
           "type_as": lambda t: t.type_as(torch.empty((), dtype=torch.float64, device=t.device))}
    assert set(ops) <= _COPY_OPS
    rng = random.Random(0)
    for _ in range(400):
        nd = rng.randint(1, 4)
        shape = [rng.choice([1, 1, 2, 3]) for _ in range(nd)]
        t = torch.randn(*[d * rng.choice([1, 2]) for d in shape])
        perm = list(range(nd))
        rng.shuffle(perm)
        t = t.permute(perm)[tuple(slice(0, max(1, d // rng.choice([1, 2]))) for d in t.shape)]
        if rng.random() < 0.3:
            t = t.unsqueeze(rng.randint(0, t.dim()))
        if rng.random() < 0.2:
            t = t.expand(*[2 if d == 1 and rng.random() < .5 else d for d in t.shape])
        m = torch.empty_strided(t.shape, t.stride(), dtype=t.dtype, device="meta")
        for name, op in ops.items():
            assert op(t).stride() == op(m).stride(), (name, tuple(t.shape), t.stride())
        for mask_shape in (t.shape, t.shape[-1:]):
            r = t.masked_fill(torch.zeros(mask_shape, dtype=torch.bool), 1.0)
            assert r.stride() == torch.empty(r.shape).stride(), (tuple(t.shape), t.stride())


# ------------------------------------------------ a branch on an input tensor

def test_branch_on_an_input_tensor_ends_a_graph_the_backend_sees():
    """`if check:` with `check` a tensor passed in (or handed to a resume
    function) and nothing traced before it: the graph that ends at the
    branch returns the input, and the backend is called with it, as it is
    when ops precede the branch (torch.compile does the same). Before: no
    backend call there (2 frames, not 3)."""
    graphs = []
    cnt = CompileCounter()

    def backend(gm, example_inputs):
        graphs.append(gm)
        return cnt(gm, example_inputs)

    def fn(a, b, check):
        if check:
            return a + b + 10
        return a + b - 10

    v1, v2 = torch.randn(10), torch.randn(10)
    t, f = torch.ones(1, dtype=torch.int32), torch.zeros(1, dtype=torch.int32)
    opt = dynamo.optimize(backend)(fn)
    assert same(opt(v1, v2, t), fn(v1, v2, t)) and same(opt(v1, v2, f), fn(v1, v2, f))
    assert (cnt.frame_count, cnt.op_count) == (3, 4)
    first = [n.op for n in graphs[0].graph.nodes]
    assert first == ["placeholder", "output"]

    def fn2(a, b):                    # `and` keeps the first tensor for the resume function
        tmp = a.sum() > b.sum() and a.sum() > 0
        return 1 if tmp else 2

    dynamo.reset()
    cnt = CompileCounter()
    opt = dynamo.optimize(cnt)(fn2)
    one, neg = torch.ones(10), torch.ones(10) * -2.0
    assert (opt(one, neg), opt(neg, one)) == (fn2(one, neg), fn2(neg, one)) == (1, 2)
    assert (cnt.frame_count, cnt.op_count) == (3, 5)


# ------------------------------------------------ set() of constants

class _LayerConfig:
    def __init__(self, layers):
        self.attn_layers = layers
        self.chunk = 64


def _min_chunk_len(cfg):
    kinds = set(cfg.attn_layers)
    if len(kinds) == 1:
        return cfg.chunk
    if kinds == frozenset(["lsh", "local"]):
        return cfg.chunk // 2
    raise NotImplementedError


def test_set_of_a_config_list_is_folded_and_guarded():
    """set(cfg.attn_layers) (Reformer's config check) folds to a constant
    set: one graph, no break; the list's items are guarded, so another
    list recompiles. Before: `set(...)` was a break (2 graphs)."""
    def fn(cfg, x):
        y = x * 1
        return y + _min_chunk_len(cfg)

    cnt = CompileCounter()
    opt = dynamo.optimize(cnt)(fn)
    x = torch.zeros(2)
    assert opt(_LayerConfig(["local", "lsh", "local"]), x).tolist() == [32.0, 32.0]
    assert (cnt.frame_count, cnt.op_count) == (1, 2)
    assert opt(_LayerConfig(["local", "lsh", "local"]), x).tolist() == [32.0, 32.0]
    assert cnt.frame_count == 1                         # equal items: the entry is reused
    assert opt(_LayerConfig(["lsh", "lsh", "lsh"]), x).tolist() == [64.0, 64.0]
    assert cnt.frame_count == 2

    def unhashable(x, items):                          # TypeError raised where it runs eagerly
        return x + len(set(items))

    with pytest.raises(TypeError):
        dynamo.optimize(CompileCounter())(unhashable)(x, [[1], [2]])


# ------------------------------------------------ dicts passed in, mutated

def test_argument_dict_mutations_are_traced_and_written_back():
    """`d[k] = v`, `del d[k]`, pop/update on a dict argument and on a dict
    inside it (a nested options dict): traced in one graph and written
    back in order at its end, also at a break. Before: each mutation was a
    break ("mutation of a dict passed into the compiled frame")."""
    def fn(x, d):
        y = x * 2
        d["y"] = y
        d["n"] = d["n"] + 1
        del d["gone"]
        d["inner"]["z"] = y + 1
        d.update(w=3)
        return y + d.pop("p")

    def make():
        return {"n": 1, "gone": 0, "p": torch.ones(2), "inner": {"a": 1}}

    x = torch.arange(2.0)
    cnt = CompileCounter()
    opt = dynamo.optimize(cnt)(fn)
    d1, d2 = make(), make()
    expected = fn(x, d1)
    inner = d2["inner"]
    out = opt(x, d2)
    assert (cnt.frame_count, cnt.op_count) == (1, 3)        # mul, add, add
    assert torch.equal(out, expected)
    assert list(d2) == list(d1) == ["n", "inner", "y", "w"] and d2["inner"] is inner
    assert d2["n"] == 2 and torch.equal(d2["y"], d1["y"]) and torch.equal(inner["z"], d1["inner"]["z"])

    def with_break(x, d):
        d["k"] = x + 1
        unsupported(x, x)                       # the write-back happens before it runs
        return d["k"] * 2

    def cleared(x, d):
        d.clear()
        d.setdefault("s", x)
        return x + 1

    cnt = CompileCounter()
    d = {}
    out = dynamo.optimize(cnt)(with_break)(x, d)
    assert torch.equal(d["k"], x + 1) and torch.equal(out, (x + 1) * 2)
    assert cnt.frame_count == 2

    cnt = CompileCounter()
    d = {"a": 1, "b": 2}
    dynamo.optimize(cnt)(cleared)(x, d)
    assert list(d) == ["s"] and d["s"] is x and cnt.frame_count == 1


def test_nested_dict_written_back_before_its_replaced_slot():
    """The trace mutates a nested dict after replacing its slot in the
    outer dict: the nested one is written back first, while the outer
    still holds it (reloaded through d["inner"])."""
    def fn(x, d):
        inner = d["inner"]
        d["inner"] = {"new": 1}
        inner["z"] = x + 1
        return x * 2

    x = torch.ones(2)
    d = {"inner": {"a": 1}}
    old = d["inner"]
    cnt = CompileCounter()
    dynamo.optimize(cnt)(fn)(x, d)
    assert cnt.frame_count == 1
    assert d["inner"] == {"new": 1} and list(old) == ["a", "z"] and torch.equal(old["z"], x + 1)
