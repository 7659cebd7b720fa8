"""The TorchDynamo-compatible API (docs/USER_GUIDE.md): each name does what
code written for TorchDynamo expects, checked by counting frames, graphs,
ops and breaks."""
import copy
import dis

import pytest
import torch

import dynamo
from dynamo import config
from dynamo.testing import CompileCounter, same
from dynamo.utils import counters


@pytest.fixture(autouse=True)
def clear_counters():
    counters.clear()
    yield
    counters.clear()


def plus_one(x):
    return x + 1


def test_allow_in_graph_puts_the_call_in_one_graph():
    def fn(a):
        return plus_one(torch.relu(a)) * 2

    cnt = CompileCounter()
    dynamo.allow_in_graph(plus_one)
    try:
        x = torch.randn(4)
        assert same(dynamo.optimize(cnt)(fn)(x), fn(x))
    finally:
        dynamo.decorators._allowed.clear()
    # one frame: plus_one is a node of the graph, not an inlined + nor a frame of its own
    assert cnt.frame_count == 1
    assert cnt.op_count == 3
    targets = [n.target for n in cnt.graphs[0].graph.nodes if n.op == "call_function"]
    assert plus_one in targets


def test_disallow_in_graph_breaks_at_a_torch_function():
    def fn(a):
        x = torch.add(a, 1)
        x = torch.sub(x, 1)
        return torch.add(x, 1)

    cnt = CompileCounter()
    dynamo.disallow_in_graph(torch.sub)
    try:
        x = torch.randn(4)
        assert same(dynamo.optimize(cnt)(fn)(x), fn(x))
    finally:
        dynamo.allow_in_graph(torch.sub)
        dynamo.decorators._allowed.clear()
    assert (cnt.frame_count, cnt.op_count) == (2, 2)
    assert sum(counters["graph_break"].values()) == 1


def test_skip_never_compiles_the_frame_but_inner_frames_are():
    def inner(x):
        return x * 3

    @dynamo.skip
    def skipped(x):
        return inner(x - 1)

    cnt = CompileCounter()
    x = torch.randn(4)
    out = dynamo.optimize(cnt)(skipped)(x)
    assert same(out, (x - 1) * 3)
    # skipped's own frame is not compiled; inner's is (one graph: the mul)
    assert (cnt.frame_count, cnt.op_count) == (1, 1)

    def outer(x):
        return skipped(torch.sin(x))

    cnt2 = CompileCounter()
    dynamo.reset()
    assert same(dynamo.optimize(cnt2)(outer)(x), outer(x))
    # outer: a graph (sin) and a break at the call of skipped; inner: a graph
    assert cnt2.frame_count == 2
    assert counters["graph_break"]


def test_assume_constant_result_folds_to_a_graph_constant():
    calls = []

    @dynamo.assume_constant_result
    def positions(x):
        calls.append(1)
        return torch.nonzero(x)       # data dependent: would break the graph otherwise

    def fn(x):
        return positions(x + 0) * 2

    x = torch.tensor([[1.0, 0.0], [0.0, 3.0]])
    cnt = CompileCounter()
    opt = dynamo.optimize_assert(cnt)(fn)
    assert same(opt(x), fn(x))
    assert cnt.frame_count == 1 and len(calls) == 2      # once eagerly, once at trace time
    # the constant is a get_attr of the graph, not a call
    ops = [n.op for n in cnt.graphs[0].graph.nodes]
    assert "get_attr" in ops
    # it stays constant: a different input gives the traced result
    y = torch.zeros(2, 2)
    assert same(opt(y), fn(x))
    assert cnt.frame_count == 1


def test_counters_count_frames_graphs_and_breaks():
    def fn(a):
        b = a + 1
        print("break")
        return b * 2

    cnt = CompileCounter()
    dynamo.optimize(cnt)(fn)(torch.randn(3))
    assert counters["frames"]["total"] >= 2          # fn and its resume function
    assert counters["frames"]["ok"] == counters["frames"]["total"]
    assert counters["stats"]["unique_graphs"] == cnt.frame_count == 2
    assert counters["stats"]["calls_captured"] == cnt.op_count == 2
    assert sum(counters["graph_break"].values()) == 1


def test_disable_cache_limit():
    from dynamo.utils import disable_cache_limit

    def fn(a):
        return a * 2

    cnt = CompileCounter()
    opt = dynamo.optimize(cnt)(fn)
    limit = config.cache_size_limit
    config.automatic_dynamic_shapes = False     # one entry per size
    with disable_cache_limit():
        assert config.cache_size_limit > 1000
        for n in range(1, limit + 4):
            opt(torch.randn(n))
    assert cnt.frame_count == limit + 3
    assert config.cache_size_limit == 8


def test_unsupported_forces_a_break():
    from dynamo.eval_frame import unsupported

    def fn(a, b):
        return unsupported(a - b, b - a) * 2

    cnt = CompileCounter()
    a, b = torch.randn(3), torch.randn(3)
    assert same(dynamo.optimize(cnt)(fn)(a, b), fn(a, b))
    assert (cnt.frame_count, cnt.op_count) == (2, 3)
    assert dynamo.testing.unsupported(a, b) is b     # its second argument, as TorchDynamo's


def test_bytecode_transformation_assemble_round_trips():
    from dynamo import bytecode_transformation

    def fn(a):
        b = a + 1
        return f"{b} done"

    code, linetable = bytecode_transformation.assemble(dis.get_instructions(fn),
                                                       fn.__code__.co_firstlineno)
    assert code == fn.__code__.co_code
    assert linetable == fn.__code__.co_linetable


def test_optimizations_backends_registry():
    from dynamo.optimizations import BACKENDS, backends
    assert BACKENDS["eager"] is backends.eager
    assert set(dynamo.list_backends()) == set(BACKENDS)
    with pytest.raises(AttributeError, match="no backend"):
        backends.no_such_backend
    cnt = CompileCounter()
    BACKENDS["counting_compat"] = cnt
    try:
        dynamo.optimize("counting_compat")(lambda x: x + 1)(torch.randn(2))
    finally:
        del BACKENDS["counting_compat"]
    assert cnt.frame_count == 1


def test_nnc_and_ts_backends_run_the_graph():
    def fn(a, b):
        return torch.sigmoid(a) * b + 1

    a, b = torch.randn(5), torch.randn(5)
    for name in ("ts", "nnc"):
        dynamo.reset()
        assert same(dynamo.optimize(name)(fn)(a, b), fn(a, b))


def test_verify_correctness_catches_a_wrong_backend():
    import operator

    def wrong(gm, example_inputs):
        for node in gm.graph.nodes:
            if node.target in (operator.mul, torch.mul):
                node.target = operator.add
        gm.recompile()
        return gm.forward

    def fn(a, b):
        return a * b

    a, b = torch.randn(4), torch.randn(4)
    config.verify_correctness = True
    with pytest.raises(RuntimeError, match="verify_correctness"):
        dynamo.optimize(wrong)(fn)(a, b)
    config.verify_correctness = False
    dynamo.reset()
    assert not same(dynamo.optimize(wrong)(fn)(a, b), fn(a, b))


def test_raise_on_ctx_manager_usage():
    config.raise_on_ctx_manager_usage = True
    with pytest.raises(RuntimeError, match="context manager"):
        with dynamo.optimize("eager"):
            pass
    config.raise_on_ctx_manager_usage = False
    with dynamo.optimize("eager"):
        pass


def test_generation_tracker_tags_modules_by_context_entry():
    from dynamo.mutation_guard import GenerationTracker
    with dynamo.optimize("eager"):
        pass
    m1 = torch.nn.Linear(2, 2)
    g = GenerationTracker.get_generation_value(m1)
    assert g == GenerationTracker.generation
    with dynamo.optimize("eager"):
        m2 = torch.nn.Linear(2, 2)
    assert GenerationTracker.get_generation_value(m1) == g
    assert GenerationTracker.get_generation_value(m2) == g + 1
    assert GenerationTracker.get_generation_value(copy.deepcopy(m1)) == g + 1
    assert GenerationTracker.get_generation_value(object()) == -1


def test_const_dict_variable_python_type():
    import collections
    from dynamo.variables import ConstDictVariable
    assert ConstDictVariable({"a": 1}, dict).python_type() is dict
    assert ConstDictVariable({}, collections.OrderedDict).python_type() is collections.OrderedDict


def test_same_two_models():
    from dynamo.debug_utils import same_two_models
    mod = torch.nn.Sequential(torch.nn.Linear(3, 3), torch.nn.ReLU())
    cnt = CompileCounter()
    assert same_two_models(mod, dynamo.optimize(cnt)(mod), [torch.randn(2, 3)])
    assert cnt.frame_count >= 1
    other = copy.deepcopy(mod)
    with torch.no_grad():
        # +10 on the bias: every output differs (a +1 on the weight left
        # both models' outputs all zero after the ReLU for some inputs)
        other[0].bias.add_(10)
    assert not same_two_models(mod, other, [torch.randn(2, 3)])


def test_noop_config_names_are_accepted():
    for name, default in (("fake_tensor_propagation", True), ("specialize_int_float", True),
                          ("replay_record_enabled", False)):
        assert getattr(config, name) == default
        setattr(config, name, not default)


# ---------------------------------------------------------------- semantics behind the peer suite

def test_export_nested_returns_and_aten_graph():
    def fn(x, y):
        z = x + y
        return {"z": z, "pair": (x, z), "n": 3}

    x, y = torch.randn(3), torch.randn(3)
    gm, guards = dynamo.export(fn, x, y)
    out = gm(x, y)
    assert out["pair"][0] is x and out["n"] == 3 and same(out["z"], x + y)
    assert guards
    gm_aten, _ = dynamo.export(fn, x, y, aten_graph=True)
    targets = [n.target for n in gm_aten.graph.nodes if n.op == "call_function"]
    assert targets == [torch.ops.aten.add.Tensor]
    assert all(n.stack_trace for n in gm_aten.graph.nodes if n.op == "call_function")
    with pytest.raises(AssertionError):
        dynamo.export(fn, x, y, decomposition_table={})


def test_export_returns_the_same_output_twice():
    def fn(x):
        y = x * 2
        return y, y, [x]

    x = torch.randn(4)
    gm, _ = dynamo.export(fn, x)
    a, b, (c,) = gm(x)
    assert a is b and c is x and same(a, x * 2)


def test_mutation_of_an_argument_list_is_written_back():
    def fn(x, lst):
        lst.append(x + 1)
        return lst[-1] * 2, lst

    x = torch.randn(3)
    lst = [x]
    cnt = CompileCounter()
    out, back = dynamo.optimize_assert(cnt)(fn)(x, lst)
    assert back is lst and len(lst) == 2 and same(lst[1], x + 1)
    assert same(out, (x + 1) * 2)
    assert (cnt.frame_count, cnt.op_count) == (1, 2)


def test_tensor_len_iteration_and_minmax_stay_in_the_graph():
    def fn(a, b):
        rows = [r * 2 for r in a]
        return max(a.sum(), 0) + min(b.sum(), a.sum()) + len(a) + rows[1].sum()

    a, b = torch.randn(3, 2), torch.randn(3, 2)
    cnt = CompileCounter()
    assert same(dynamo.optimize_assert(cnt)(fn)(a, b), fn(a, b))
    assert cnt.frame_count == 1


def test_finfo_iinfo_chain_islice_fold():
    import itertools

    def fn(a):
        xs = list(itertools.islice(itertools.chain([a + 1, a + 2], [a + 3]), 1, 3))
        if torch.iinfo(torch.int32).bits == 32:
            return (xs[0] - xs[1]) * torch.finfo(a.dtype).eps
        return a

    a = torch.randn(3)
    cnt = CompileCounter()
    assert same(dynamo.optimize_assert(cnt)(fn)(a), fn(a))
    assert cnt.frame_count == 1


def test_named_parameters_and_yield_from():
    mod = torch.nn.Sequential(torch.nn.Linear(2, 2), torch.nn.Linear(2, 2))

    def gen(xs):
        yield from xs

    def fn(x):
        for name, p in mod.named_parameters():
            x = x + p.sum()
        for p in mod.parameters(False):      # no parameters of its own
            x = x * 100
        for v in gen([x, x]):
            x = x + v
        return x

    x = torch.randn(2)
    cnt = CompileCounter()
    assert same(dynamo.optimize_assert(cnt)(fn)(x), fn(x))
    assert (cnt.frame_count, cnt.op_count) == (1, 10)


def test_relative_import_inside_the_frame():
    # a function of package `dynamo` (this test module has no package)
    code = compile("def f(x):\n    from . import testing\n    return x * testing.__name__.count('.')\n",
                   "<compat>", "exec")
    ns = {"__package__": "dynamo", "__name__": "dynamo._compat_probe"}
    exec(code, ns)
    cnt = CompileCounter()
    x = torch.randn(2)
    assert same(dynamo.optimize_assert(cnt)(ns["f"])(x), x * 1)
    assert cnt.frame_count == 1


def test_argument_list_write_back_comes_after_values_read_from_it():
    def fn(x, lst):
        res = lst.pop()           # res is rebuilt from lst[1] at the break
        print("break")
        return res * 2, len(lst)

    x = torch.randn(3)
    lst = [x, x + 1]
    cnt = CompileCounter()
    out, n = dynamo.optimize(cnt)(fn)(x, lst)
    assert same(out, (x + 1) * 2) and n == 1 and len(lst) == 1
    assert sum(counters["graph_break"].values()) == 1


def test_nested_optimize_and_run_wrappers_are_traced_into():
    cnt_inner, cnt_outer = CompileCounter(), CompileCounter()

    @dynamo.run()
    def f1(x):
        return torch.sin(x) * 10

    @dynamo.optimize(cnt_inner, nopython=True)
    def f2(x):
        return f1(x) + 1

    @dynamo.optimize(cnt_outer, nopython=True)
    def f3(x):
        return torch.relu(f2(x))

    x = torch.randn(4)
    assert same(f3(x), torch.relu(torch.sin(x) * 10 + 1))
    assert (cnt_outer.frame_count, cnt_outer.op_count, cnt_inner.frame_count) == (1, 4, 0)
    # optimize() of an optimized function wraps the original: the outer one decides
    cnt = CompileCounter()
    dynamo.reset()
    dynamo.optimize(cnt)(dynamo.optimize(cnt_inner)(lambda a: a + 1))(x)
    assert (cnt.frame_count, cnt_inner.frame_count) == (1, 0)


def test_objects_constructed_inside_the_frame():
    class Vec:
        def __init__(self, val):
            self.val = val

        def __add__(self, other):
            return Vec(self.val + other.val)

        def __rmul__(self, k):
            return Vec(self.val * k)

        @classmethod
        def twice(cls, x):
            return x + x

        @staticmethod
        def thrice(x):
            return x * 3

    def fn(a, b):
        v = Vec(a) + 2 * Vec(b)        # __add__ and __rmul__ inlined
        v.extra = Vec.twice(a) + Vec(a).thrice(b)
        return v

    a, b = torch.randn(3), torch.randn(3)
    cnt = CompileCounter()
    out = dynamo.optimize_assert(cnt)(fn)(a, b)
    ref = fn(a, b)
    # one graph; the object that escapes is rebuilt with its attributes
    assert (cnt.frame_count, cnt.op_count) == (1, 5)
    assert type(out) is Vec and same(out.val, ref.val) and same(out.extra, ref.extra)


FUNCS = frozenset([torch.add])


def test_id_frozenset_membership_and_size_fold():
    def fn(x, func):
        if func in FUNCS:                     # decided at trace time, guarded
            x = torch.add(x, 1.0)
        return torch.mul(x, 1.0).view(*torch.Size([1, 1]))

    x = torch.randn(1)
    cnt = CompileCounter()
    opt = dynamo.optimize_assert(cnt)(fn)
    opt(x, torch.add)
    assert (cnt.frame_count, cnt.op_count) == (1, 3)
    opt(x, torch.mul)                          # other function: recompiles
    assert (cnt.frame_count, cnt.op_count) == (2, 5)

    class M(torch.nn.Module):
        def forward(self, x, ref):
            if id(self) == ref:
                x = x * 2
            return x + 1

    m, cnt2 = M(), CompileCounter()
    dynamo.optimize_assert(cnt2)(m)(x, id(m))
    assert cnt2.op_count == 2


def test_stateless_torch_module_constructed_inside_the_frame():
    def fn(x, y):
        return torch.nn.Softmax(dim=-1)(x + y * 2)

    x, y = torch.randn(3, 4), torch.randn(3, 4)
    cnt = CompileCounter()
    opt = dynamo.optimize_assert(cnt)(fn)
    assert same(opt(x, y), fn(x, y)) and same(opt(y, x), fn(y, x))
    assert (cnt.frame_count, cnt.op_count) == (1, 3)
    kinds = [n.op for n in cnt.graphs[0].graph.nodes]
    assert "call_module" in kinds

    def with_params(x):
        return torch.nn.Linear(4, 4)(x)        # parameters: made per call, so it breaks
    with pytest.raises(dynamo.exc.Unsupported, match="parameters"):
        dynamo.optimize_assert(CompileCounter())(with_params)(x)


def test_module_attribute_lookup_follows_python_order():
    class Base(torch.nn.Module):
        def linear(self, x):
            return x * 2.0

    class Mod(Base):
        def __init__(self):
            super().__init__()
            self.linear = torch.nn.Linear(4, 4)     # in _modules: the method wins
            self.scale = 0.5                        # in __dict__: wins over the method

        def scale(self):
            return 2.0

        def forward(self, x):
            return self.linear(x) * self.scale

    m, x = Mod(), torch.randn(4)
    cnt = CompileCounter()
    assert same(dynamo.optimize_assert(cnt)(m)(x), m(x))
    assert same(m(x), x)                             # (x * 2.0) * 0.5
    assert not any(n.op == "call_module" for n in cnt.graphs[0].graph.nodes)


def test_modulelist_slices_iterate_in_the_graph():
    class M(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.layers = torch.nn.ModuleList([torch.nn.Linear(4, 4), torch.nn.ReLU(),
                                               torch.nn.Linear(4, 4)])

        def forward(self, x):
            for idx, layer in enumerate(self.layers[::-1]):
                x = layer(x) * idx
            return self.layers[1:][0](x)

    m, x = M(), torch.randn(4)
    cnt = CompileCounter()
    assert same(dynamo.optimize_assert(cnt)(m)(x), m(x))
    assert (cnt.frame_count, cnt.op_count) == (1, 7)


def test_attribute_stores_on_an_argument_object_are_written_back():
    class Obj:
        def __init__(self, a):
            self.a = a

    def fn(obj):
        obj.b = obj.a * 2
        obj.a = obj.b + 1           # reads see the stored value
        print("break")              # written back before the break runs
        return obj.a - obj.b

    x = torch.randn(4)
    o = Obj(x)
    cnt = CompileCounter()
    out = dynamo.optimize(cnt)(fn)(o)
    assert same(o.b, x * 2) and same(o.a, x * 2 + 1) and same(out, torch.ones(4))
    assert cnt.frame_count == 2


def test_optimize_disable_flag():
    cnt = CompileCounter()

    @dynamo.optimize(cnt, disable=True)
    def f(x):
        return x + 1

    assert same(f(torch.ones(2)), torch.ones(2) * 2)
    assert cnt.frame_count == 0
    with pytest.raises(ValueError, match="unknown backend"):
        dynamo.optimize("no-such-backend", disable=True)


def test_len_of_a_user_object_inlines_its_len():
    class Boxes:
        def __init__(self, t):
            self.t = t

        def __len__(self):
            return self.t.shape[0]

    def fn(boxes):
        return len(boxes) + boxes.t

    b = Boxes(torch.randn(3, 2))
    cnt = CompileCounter()
    assert same(dynamo.optimize_assert(cnt)(fn)(b), b.t + 3)
    assert (cnt.frame_count, cnt.op_count) == (1, 1)


def test_user_getattr_fallback_is_inlined_and_guarded():
    class Cfg:
        on_class = 1

        def __init__(self):
            self.on_object = 2

        def __getattr__(self, name):
            return 3

    def fn(cfg, x):
        return x + cfg.on_class - cfg.on_object + cfg.missing

    x, cfg = torch.randn(4), Cfg()
    cnt = CompileCounter()
    opt = dynamo.optimize(cnt)(fn)
    assert same(opt(cfg, x), x + 2)
    assert (cnt.frame_count, cnt.op_count) == (1, 3)
    cfg.missing = 10                   # the instance's attribute names changed: recompile
    assert same(opt(cfg, x), x + 9)
    assert cnt.frame_count == 2


def test_super_calls_are_inlined():
    class Base(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = torch.nn.Linear(4, 4)

        def forward(self, x):
            return torch.relu(self.lin(x))

        @classmethod
        def twice(cls, x):
            return x + x

    class Child(Base):
        def forward(self, x):
            return super().forward(x) + super().twice(x)

    class Val:
        def __init__(self, v):
            super().__init__()          # object.__init__: nothing to trace
            self.v = v

    m, x = Child(), torch.randn(4)
    cnt = CompileCounter()
    assert same(dynamo.optimize_assert(cnt)(m)(x), m(x))
    assert (cnt.frame_count, cnt.op_count) == (1, 4)
    cnt2 = CompileCounter()
    out = dynamo.optimize_assert(cnt2)(lambda a: Val(a * 2))(x)
    assert type(out) is Val and same(out.v, x * 2) and cnt2.frame_count == 1


def test_isinstance_of_legacy_tensor_types():
    def fn(x):
        if isinstance(x, torch.DoubleTensor) and not isinstance(x, torch.FloatTensor):
            return x + 1
        return x - 1

    cnt = CompileCounter()
    x = torch.randn(3, dtype=torch.float64)
    assert same(dynamo.optimize_assert(cnt)(fn)(x), x + 1)
    assert (cnt.frame_count, cnt.op_count) == (1, 1)


def test_jit_annotate_is_the_value():
    from typing import Any

    def fn(x):
        y = torch.jit.annotate(Any, x + 1)
        return y + 2

    cnt = CompileCounter()
    x = torch.randn(3)
    assert same(dynamo.optimize_assert(cnt)(fn)(x), x + 3)
    assert (cnt.frame_count, cnt.op_count) == (1, 2)


def test_super_to_a_torch_method_breaks_instead_of_failing_the_frame():
    class Base(torch.nn.Module):
        def blah(self, x):
            return x + 1

    class Derived(Base):
        def __setattr__(self, name, value):
            super().__setattr__(name, value)        # Module.__setattr__: runs eagerly

        def forward(self, x):
            self.foo = 0
            return self.blah(x)

        def blah(self, x):
            return super().blah(x)

    mod, x = Derived(), torch.randn(3)
    cnt = CompileCounter()
    assert same(dynamo.optimize(cnt)(mod)(x), x + 1) and mod.foo == 0
    assert counters["frames"]["ok"] == counters["frames"]["total"] >= 3
    assert not counters["unimplemented"]
