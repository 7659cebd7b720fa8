"""The stale-hit matrix: for every guardable thing a trace reads, change it
after the first compile and compare the optimized function with eager.

Each case builds a fresh function (and the classes, modules or globals it
reads), calls the optimized version once, applies one change, then requires
(1) the same result as eager, and (2) that the change was noticed the way
the case says: a recompile (one more compiled frame, and the first entry's
guards fail on the changed input), or a hit where the change must not
matter (a NaN argument must not recompile on every call).  A case that
restores process state (flags, default dtype) does so in a finally block.
"""
import enum
import math
from dataclasses import dataclass
from typing import Any, Callable, Optional

import pytest
import torch
import torch.nn as nn

import dynamo
from dynamo.testing import CompileCounter

X = torch.arange(6, dtype=torch.float32).reshape(2, 3) + 1

# ---------------------------------------------------------------- globals read by the cases
G_SCALE = 2
G_LIST = [1, 2]
G_DICT = {"k": 3}


class Mode(enum.Enum):
    A = 1
    B = 2


@dataclass
class Case:
    fn: Callable                    # the function to optimize
    before: tuple                   # arguments of the first call
    change: Callable[[], None]      # the mutation after the first compile
    after: Optional[tuple] = None   # arguments after the change (default: before)
    restore: Callable[[], None] = lambda: None
    frames: int = 2                 # compiled frames expected after the second call
    calls_after: int = 1            # optimized calls after the change


def same(a: Any, b: Any) -> bool:
    """Equal results: tensors by dtype, shape, device and values (NaN equal,
    zeros by sign too); other values by ==."""
    if isinstance(a, torch.Tensor) or isinstance(b, torch.Tensor):
        if not (isinstance(a, torch.Tensor) and isinstance(b, torch.Tensor)):
            return False
        if (a.dtype, a.shape, a.device.type) != (b.dtype, b.shape, b.device.type):
            return False
        if a.device.type == "meta":
            return True
        if a.is_floating_point():
            return torch.equal(torch.signbit(a), torch.signbit(b)) and \
                bool(torch.allclose(a, b, equal_nan=True, rtol=0, atol=0))
        return torch.equal(a, b)
    if isinstance(a, (tuple, list)):
        return type(a) is type(b) and len(a) == len(b) and all(same(x, y) for x, y in zip(a, b))
    return a == b


# ---------------------------------------------------------------- the cases

def case_global():
    def f(x):
        return x * G_SCALE
    return Case(f, (X,), lambda: globals().__setitem__("G_SCALE", 5),
                restore=lambda: globals().__setitem__("G_SCALE", 2))


def case_closure_cell():
    k = 2

    def f(x):
        return x * k

    def change():
        nonlocal k
        k = 7
    return Case(f, (X,), change)


def case_class_attribute_constant():
    class A:
        k = 2
    a = A()

    def f(x):
        return x * a.k
    return Case(f, (X,), lambda: setattr(A, "k", 9))


def case_instance_attribute():
    class A:
        def __init__(self):
            self.k = 2
    a = A()

    def f(x):
        return x * a.k
    return Case(f, (X,), lambda: setattr(a, "k", 4))


def case_method_replaced_on_class():
    class A:
        def g(self, x):
            return x + 1
    a = A()

    def f(x):
        return a.g(x)
    return Case(f, (X,), lambda: setattr(A, "g", lambda self, x: x - 1))


def case_instance_attribute_shadows_method():
    class A:
        def g(self, x):
            return x + 1
    a = A()

    def f(x):
        return a.g(x)
    return Case(f, (X,), lambda: setattr(a, "g", lambda x: x * 10))


def case_property_redefined():
    class C:
        def __init__(self):
            self.b = 2

        @property
        def p(self):
            return self.b
    c = C()

    def f(x):
        return x * c.p
    return Case(f, (X,), lambda: setattr(C, "p", property(lambda self: 1000)))


def case_classmethod_replaced():
    class K:
        @classmethod
        def cm(cls, x):
            return x + 1
    k = K()

    def f(x):
        return k.cm(x)
    return Case(f, (X,), lambda: setattr(K, "cm", classmethod(lambda cls, x: x - 3)))


def case_staticmethod_replaced():
    class K:
        @staticmethod
        def sm(x):
            return x + 1
    k = K()

    def f(x):
        return k.sm(x)
    return Case(f, (X,), lambda: setattr(K, "sm", staticmethod(lambda x: x * 3)))


def case_method_defaults_changed():
    class A:
        def g(self, x, k=2):
            return x * k
    a = A()

    def f(x):
        return a.g(x)
    return Case(f, (X,), lambda: setattr(A.g, "__defaults__", (5,)))


def case_function_code_replaced():
    def helper(x):
        return x + 1

    def f(x):
        return helper(x)
    return Case(f, (X,), lambda: setattr(helper, "__code__", (lambda x: x - 1).__code__))


def _mlp():
    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = nn.Linear(3, 3)
            self.register_buffer("shift", torch.ones(3))
            self.scale = nn.Parameter(torch.ones(3))
            self.drop = nn.Dropout(0.5)

        def helper(self, x):
            return x * self.scale + self.shift

        def forward(self, x):
            return self.drop(self.helper(self.lin(x)))
    torch.manual_seed(0)
    return Net().eval()


def _module_case(change):
    m = _mlp()

    def f(x):
        return m(x)
    return Case(f, (X,), lambda: change(m))


def case_module_parameter_replaced():
    return _module_case(lambda m: setattr(m, "scale", nn.Parameter(torch.full((3,), 4.0))))


def case_leaf_module_parameter_replaced():
    # a standard leaf module is a call_module node: the graph calls the
    # module object, which reads its current weight (no recompile needed)
    m = _module_case(lambda m: setattr(m.lin, "weight", nn.Parameter(torch.zeros(3, 3))))
    m.frames = 1
    return m


def case_module_buffer_replaced():
    return _module_case(lambda m: setattr(m, "shift", torch.full((3,), 5.0)))


def case_module_submodule_replaced():
    return _module_case(lambda m: setattr(m, "lin", nn.Identity()))


def case_module_training_flag():
    def change(m):
        m.train()
        m.drop.p = 0.0          # dropout active but deterministic: a result to compare
    return _module_case(change)


def case_module_method_replaced_on_class():
    return _module_case(lambda m: setattr(type(m), "helper", lambda self, x: x - 100))


def case_module_method_set_on_instance():
    return _module_case(lambda m: setattr(m, "helper", lambda x: x * 0))


def case_module_forward_replaced_on_class():
    class Outer(nn.Module):
        def __init__(self):
            super().__init__()
            self.inner = _mlp()

        def forward(self, x):
            return self.inner(x)
    o = Outer()

    def f(x):
        return o(x)
    return Case(f, (X,), lambda: setattr(type(o.inner), "forward", lambda self, x: x * 3))


def case_dict_contents():
    def f(x):
        return x * G_DICT["k"]
    return Case(f, (X,), lambda: G_DICT.__setitem__("k", 8), restore=lambda: G_DICT.__setitem__("k", 3))


def case_list_contents():
    def f(x):
        return x * G_LIST[1]
    return Case(f, (X,), lambda: G_LIST.__setitem__(1, 6), restore=lambda: G_LIST.__setitem__(1, 2))


def case_grad_mode():
    def f(x):
        return (x * 2).requires_grad
    x = X.clone().requires_grad_(True)
    return Case(f, (x,), lambda: torch.set_grad_enabled(False),
                restore=lambda: torch.set_grad_enabled(True))


def case_deterministic_algorithms():
    def f(x):
        return x * (2 if torch.are_deterministic_algorithms_enabled() else 3)
    return Case(f, (X,), lambda: torch.use_deterministic_algorithms(True),
                restore=lambda: torch.use_deterministic_algorithms(False))


def case_default_dtype():
    def f(x):
        return torch.ones(3) + x.sum()
    return Case(f, (X,), lambda: torch.set_default_dtype(torch.float64),
                restore=lambda: torch.set_default_dtype(torch.float32))


def case_autocast():
    def f(x):
        return x @ x.t()
    state = {}

    def change():
        state["ctx"] = torch.autocast("cpu", dtype=torch.bfloat16)
        state["ctx"].__enter__()

    def restore():
        if "ctx" in state:
            state.pop("ctx").__exit__(None, None, None)
    return Case(f, (X,), change, restore=restore)


def case_inference_mode():
    def f(x):
        return x * (2 if torch.is_inference_mode_enabled() else 3)
    state = {}

    def change():
        state["ctx"] = torch.inference_mode()
        state["ctx"].__enter__()

    def restore():
        if "ctx" in state:
            state.pop("ctx").__exit__(None, None, None)
    return Case(f, (X,), change, restore=restore)


def case_mkldnn_flag():
    def f(x):
        return x * (2 if torch.backends.mkldnn.is_available() and torch._C._get_mkldnn_enabled() else 3)
    return Case(f, (X,), lambda: torch._C._set_mkldnn_enabled(False),
                restore=lambda: torch._C._set_mkldnn_enabled(True))


def case_matmul_precision():
    # not guarded (read by the matmul kernels at run time); the query is not
    # folded: it runs eagerly after a graph break, so the result follows
    def f(x):
        return x * (2 if torch.get_float32_matmul_precision() == "highest" else 3)
    return Case(f, (X,), lambda: torch.set_float32_matmul_precision("medium"),
                restore=lambda: torch.set_float32_matmul_precision("highest"), frames=2)


def _tensor_case(after):
    def f(x):
        return x * 2 + x.shape[0]
    return Case(f, (X,), lambda: None, after=(after,))


def case_tensor_shape():
    return _tensor_case(torch.ones(4, 3))


def case_tensor_dtype():
    return _tensor_case(X.double())


def case_tensor_stride():
    def f(x):
        return x.view(-1) if x.is_contiguous() else x.reshape(-1) * 10
    return Case(f, (X,), lambda: None, after=(X.t().contiguous().t(),))


def case_tensor_requires_grad():
    def f(x):
        return (x * 2).requires_grad
    return Case(f, (X,), lambda: None, after=(X.clone().requires_grad_(True),))


def case_tensor_device_type():
    return _tensor_case(torch.empty(2, 3, device="meta"))


def case_float_negative_zero():
    def f(x, c):
        return x * math.copysign(1.0, c), torch.full((2,), c), 1 / c if c else 0.0
    return Case(f, (X, 0.0), lambda: None, after=(X, -0.0))


def case_float_nan_hits():
    def f(x, c):
        return torch.full((2,), c) + x.sum()
    # the same NaN object each call: one compile, then hits
    nan = float("nan")
    return Case(f, (X, nan), lambda: None, after=(X, nan), frames=1, calls_after=3)


def case_bool_is_not_int():
    def f(x, c):
        return x * len(str(c))          # True == 1, but "True" is not "1"
    return Case(f, (X, True), lambda: None, after=(X, 1))


def case_int_is_not_float():
    def f(x, c):
        return x * len(str(c))          # 1 == 1.0, but "1" is not "1.0"
    return Case(f, (X, 1), lambda: None, after=(X, 1.0))


def case_bool_type_identity():
    def f(x, c):
        return x * 2 if type(c) is bool else x * 3
    return Case(f, (X, True), lambda: None, after=(X, 1))


def case_enum_is():
    def f(x, m):
        return x * (2 if m is Mode.A else 3)
    return Case(f, (X, Mode.A), lambda: None, after=(X, Mode.B))


def case_enum_equals():
    def f(x, m):
        return x * (2 if m == Mode.A else 3)
    return Case(f, (X, Mode.A), lambda: None, after=(X, Mode.B))


def case_in_user_container():
    class Tag:
        pass
    t1, t2 = Tag(), Tag()
    box = [t1]

    def f(x, t):
        return x * (2 if t in box else 3)
    return Case(f, (X, t1), lambda: None, after=(X, t2))


def case_function_identity():
    def h1(x):
        return x

    def h2(x):
        return x

    def f(x, fn):
        return x * (2 if fn is h1 else 3)
    return Case(f, (X, h1), lambda: None, after=(X, h2))


CASES = {name[len("case_"):]: fn for name, fn in sorted(globals().items()) if name.startswith("case_")}


@pytest.mark.parametrize("name", sorted(CASES))
def test_no_stale_hit(name):
    case = CASES[name]()
    cnt = CompileCounter()
    opt = dynamo.optimize(cnt)(case.fn)
    try:
        first = opt(*case.before)
        assert same(first, case.fn(*case.before)), "wrong before the change"
        assert cnt.frame_count == 1
        case.change()
        args = case.after if case.after is not None else case.before
        for _ in range(case.calls_after):
            assert same(opt(*args), case.fn(*args)), f"{name}: stale result after the change"
        assert cnt.frame_count == case.frames, \
            f"{name}: {cnt.frame_count} compiled frames, expected {case.frames}"
    finally:
        case.restore()
        dynamo.reset()


# ---------------------------------------------------------------- aliasing of tensor inputs
#
# A graph that writes an input in place depends on which other inputs view
# the same storage (the write is seen through them, or not; aot_eager
# functionalizes the graph for the relation it traced). The relation is
# guarded (STORAGE_MATCH between a written input and the other tensor
# inputs; SAME_OBJECT for one object passed twice): changing it recompiles,
# keeping it hits. Fresh tensors each call: the functions write them.

def _writes_a(a, b):
    a.add_(1)
    return b * 2, a.sum()


_RELU_INPLACE = nn.ReLU(inplace=True)


def _module_writes_a(a, b):
    _RELU_INPLACE(a - 3)                # a temporary: no input written
    _RELU_INPLACE(a)                    # a leaf module writing its input
    return b * 2


def _reads_only(a, b):
    # no write: no storage guard; aot_eager regenerates each output view
    # from its own input, whatever the inputs share
    return a.view(-1), b[0], (a + b).sum()


def _args(relation):
    """(a, b) for one call: `b` relates to `a` as named."""
    a = torch.arange(8, dtype=torch.float32).reshape(2, 4)
    if relation == "distinct":
        return a, torch.arange(8, dtype=torch.float32).reshape(2, 4) * 3
    if relation == "view":              # the whole storage, another view object
        return a, a.view(2, 4)
    if relation == "same":              # one object twice
        return a, a
    if relation == "distinct_row":      # metadata of a[1], own storage
        return a, torch.arange(4, dtype=torch.float32) * 5
    if relation == "row":               # part of a's storage (offset 4)
        return a, a[1]
    raise ValueError(relation)


def _counting(backend):
    """A backend that counts its graphs and compiles them with `backend`."""
    from dynamo.backends import lookup
    _, inner = lookup(backend)
    calls = []

    def compile_fn(gm, example_inputs):
        calls.append(gm)
        return inner(gm, example_inputs)
    return compile_fn, calls


ALIAS_ROWS = {
    # name: (function, relation of the first call, relation after, frames, guard the reason names)
    "distinct_to_view": (_writes_a, "distinct", "view", 2, "STORAGE_MATCH"),
    "view_to_distinct": (_writes_a, "view", "distinct", 2, "STORAGE_MATCH"),
    "distinct_to_row_of_same_storage": (_writes_a, "distinct_row", "row", 2, "STORAGE_MATCH"),
    "row_to_distinct": (_writes_a, "row", "distinct_row", 2, "STORAGE_MATCH"),
    "distinct_to_same_object": (_writes_a, "distinct", "same", 2, "SAME_OBJECT"),
    "same_object_to_view": (_writes_a, "same", "view", 2, "SAME_OBJECT"),
    "leaf_module_distinct_to_view": (_module_writes_a, "distinct", "view", 2, "STORAGE_MATCH"),
    "view_stays_view": (_writes_a, "view", "view", 1, None),            # new tensors, one relation: hits
    "distinct_stays_distinct": (_writes_a, "distinct", "distinct", 1, None),
    "reads_only_distinct_to_view": (_reads_only, "distinct", "view", 1, None),   # no write: no guard
    "reads_only_view_to_distinct": (_reads_only, "view", "distinct", 1, None),
}


@pytest.mark.parametrize("backend", ["eager", "aot_eager"])
@pytest.mark.parametrize("row", sorted(ALIAS_ROWS))
def test_aliasing_relation(row, backend):
    from dynamo import records
    fn, before, after, frames, guard = ALIAS_ROWS[row]
    compile_fn, graphs = _counting(backend)
    opt = dynamo.optimize(compile_fn)(fn)
    raising = dynamo.config.raise_on_backend_error
    dynamo.config.raise_on_backend_error = True     # a failing backend must not pass as eager
    try:
        first = records.mark()
        assert same(opt(*_args(before)), fn(*_args(before))), f"{row}: wrong before the change"
        assert len(graphs) == 1
        kinds = [g.kind for r in records.records_since(first) for g in (r.guards or ())]
        from dynamo.guards import STORAGE_MATCH
        # a frame that writes no input carries no storage guard (no per-call cost)
        assert (STORAGE_MATCH in kinds) == (fn is not _reads_only and before != "same"), kinds
        mark = records.mark()
        for _ in range(2):              # the second call after the change hits the new entry
            want_args, got_args = _args(after), _args(after)
            want = fn(*want_args)
            assert same(opt(*got_args), want), f"{row}: stale result after the change"
            assert same(got_args, want_args), f"{row}: inputs written differently than eager"
        assert len(graphs) == frames, f"{row}: {len(graphs)} graphs, expected {frames}"
        reasons = [r.recompile_reason for r in records.records_since(mark) if r.recompile_reason]
        if guard is None:
            assert reasons == []
        else:
            assert len(reasons) == 1 and f"({guard} of entry [0/0])" in reasons[0], reasons
    finally:
        dynamo.config.raise_on_backend_error = raising
        dynamo.reset()


@pytest.mark.parametrize("backend", ["eager", "aot_eager"])
def test_aliasing_written_buffer(backend):
    """A buffer the graph writes in place (a get_attr, not an input) is
    related to the tensor inputs through its guarded source: an argument
    that views the buffer's storage later recompiles, named in the reason."""
    from dynamo import records
    from dynamo.guards import STORAGE_MATCH

    class Acc(nn.Module):
        def __init__(self):
            super().__init__()
            self.register_buffer("acc", torch.zeros(4))

        def forward(self, x):
            self.acc.add_(x)
            return x * 2
    m, ref = Acc(), Acc()
    compile_fn, graphs = _counting(backend)
    opt = dynamo.optimize(compile_fn)(m)
    try:
        assert same(opt(torch.ones(4)), ref(torch.ones(4)))
        storage = [g.describe() for g in records.all_records()[-1].guards if g.kind == STORAGE_MATCH]
        assert storage == [" - local 'x' STORAGE_MATCH shares no storage with L['self']._buffers['acc']"]
        mark = records.mark()
        assert same(opt(m.acc.view(4)), ref(ref.acc.view(4)))
        assert same(m.acc, ref.acc) and len(graphs) == 2
        [rec] = [r for r in records.records_since(mark) if r.recompile_reason]
        assert rec.recompile_reason.startswith("L['x'] shares a storage with L['self']._buffers['acc']: "
                                               "expected False, actual True (STORAGE_MATCH")
    finally:
        dynamo.reset()
