"""Library idioms that ended the graph under transformers 5.x (issue 9),
each written out in plain Python (no transformers import) and traced as
general semantics: a class's own __getattribute__ (a config that renames
keys through a class map), a dict passed in that the frame mutates
(`kwargs.pop`, `kwargs[k] = v`: written back after the graph), hasattr of
an attribute a tensor does not have, `in` on a dict-like registry
(collections.abc.Mapping), a module class with its own __call__ that ends
in super().__call__, `with contextlib.nullcontext():`, hasattr on None.
Each test counts graphs and breaks and compares with eager."""
import contextlib
from collections.abc import MutableMapping

import pytest
import torch

import dynamo
from dynamo import records
from dynamo.testing import CompileCounter, same

X = torch.randn(2, 4)


def run(fn, *args, graphs=1, breaks=0, **kwargs):
    """Compiled result of fn(*args, **kwargs), checked against eager and
    with (graphs, breaks) of its first call counted."""
    dynamo.reset()
    expected = fn(*args, **kwargs)
    cnt = CompileCounter()
    start = records.mark()
    got = dynamo.optimize(cnt)(fn)(*args, **kwargs)
    reasons = [b.reason for r in records.records_since(start) for b in r.break_reasons]
    assert (cnt.frame_count, len(reasons)) == (graphs, breaks), reasons
    assert same(expected, got)
    return got


# ------------------------------------------------------- __getattribute__
class Config:
    """As transformers 5.x's PreTrainedConfig: reads go through a class-level
    rename map in a Python __getattribute__."""
    attribute_map = {"n_embd": "hidden_size"}

    def __init__(self, hidden_size, scale):
        self.hidden_size = hidden_size
        self.scale = scale

    def __getattribute__(self, key):
        if key != "attribute_map" and key in super().__getattribute__("attribute_map"):
            key = super().__getattribute__("attribute_map")[key]
        return super().__getattribute__(key)


class Plain:
    def __init__(self):
        self.w = 3

    def __getattribute__(self, key):
        if key == "doubled":
            return object.__getattribute__(self, "w") * 2
        return object.__getattribute__(self, key)


def test_user_getattribute_is_inlined():
    def f(x, cfg):
        extra = 1.0 if hasattr(cfg, "missing") else 0.0
        return x * cfg.n_embd + cfg.scale + extra

    run(f, X, Config(4, 0.5))
    # a renamed key's target and the map are guarded: new values recompile
    dynamo.reset()
    cnt = CompileCounter()
    opt = dynamo.optimize(cnt)(f)
    opt(X, Config(4, 0.5))
    assert same(opt(X, Config(4, 0.5)), f(X, Config(4, 0.5))) and cnt.frame_count == 1
    assert same(opt(X, Config(6, 0.5)), f(X, Config(6, 0.5))) and cnt.frame_count == 2


def test_object_getattribute_in_user_getattribute():
    def f(x, p):
        return x * p.doubled + p.w

    run(f, X, Plain())


def test_replacing_getattribute_recompiles():
    class C:
        def __init__(self):
            self.v = 2

        def __getattribute__(self, key):
            return object.__getattribute__(self, key)

    def f(x, c):
        return x * c.v

    c = C()
    cnt = CompileCounter()
    dynamo.reset()
    opt = dynamo.optimize(cnt)(f)
    assert same(opt(X, c), X * 2)
    C.__getattribute__ = lambda self, key: 5 if key == "v" else object.__getattribute__(self, key)
    assert same(opt(X, c), X * 5) and cnt.frame_count == 2


# ------------------------------------------------------- dicts passed in
def test_dict_passed_in_is_mutated_and_written_back():
    def f(x, d):
        flag = d.pop("return_dict", True)
        d["out"] = x * 2
        d.setdefault("n", 3)
        d.update(k=1)
        del d["drop"]
        return x + d.get("k", 0) + d["n"], flag

    d_eager = {"return_dict": False, "drop": 0, "a": 1}
    d_ours = dict(d_eager)
    expected = f(X, d_eager)
    dynamo.reset()
    cnt = CompileCounter()
    start = records.mark()
    got = dynamo.optimize(cnt)(f)(X, d_ours)
    reasons = [b.reason for r in records.records_since(start) for b in r.break_reasons]
    assert (cnt.frame_count, reasons) == (1, [])
    assert same(expected, got)
    assert list(d_ours) == list(d_eager) == ["a", "out", "n", "k"]
    assert same(d_ours["out"], d_eager["out"]) and d_ours["n"] == 3 and d_ours["k"] == 1


def test_kwargs_mutated_and_passed_on():
    def inner(x, **kwargs):
        return x * kwargs["scale"]

    def f(x, **kwargs):
        kwargs.pop("return_dict", None)
        kwargs["scale"] = kwargs.get("scale", 2)
        return inner(x, **kwargs), kwargs

    run(f, X, return_dict=True, other=1)


# ------------------------------------------------------- tensor attributes
def test_hasattr_of_attribute_tensors_lack_is_constant_false():
    def is_jax(t):
        if not hasattr(t, "jax"):
            return False
        return True

    def f(x):
        if is_jax(x) or getattr(x, "jax", None) is not None:
            return x - 1
        return x + 1

    run(f, X)


# ------------------------------------------------------- `in` on a registry
def _sdpa(x):
    return x * 2


def _eager(x):
    return x + 1


class Registry(MutableMapping):
    """A class-wide mapping plus local overrides (transformers'
    AttentionInterface): `in` is Mapping.__contains__ (try self[key])."""
    _global_mapping = {"sdpa": _sdpa, "eager": _eager}

    def __init__(self):
        self._local_mapping = {}

    def __getitem__(self, key):
        if key in self._local_mapping:
            return self._local_mapping[key]
        return self._global_mapping[key]

    def __setitem__(self, key, value):
        self._local_mapping[key] = value

    def __delitem__(self, key):
        del self._local_mapping[key]

    def __iter__(self):
        return iter({**self._global_mapping, **self._local_mapping})

    def __len__(self):
        return len(self._global_mapping.keys() | self._local_mapping.keys())

    def get_interface(self, name, default):
        if name != "eager" and name not in self:
            raise KeyError(name)
        return default if "flash" in self else self[name]


REGISTRY = Registry()


def test_in_on_a_mapping_registry():
    def f(x, impl):
        return REGISTRY.get_interface(impl, _eager)(x)

    run(f, X, "sdpa")


def test_in_with_own_contains():
    class Bag:
        def __init__(self):
            self.names = ["a", "b"]

        def __contains__(self, item):
            return item in self.names

    def f(x, bag):
        return x + 1 if "b" in bag and "z" not in bag else x

    run(f, X, Bag())


# ------------------------------------------------------- module __call__
class Layer(torch.nn.Module):
    """A layer class with its own __call__ (transformers'
    GradientCheckpointingLayer): it may change the arguments, then calls
    nn.Module's."""
    checkpointing = True

    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(4, 4)

    def __call__(self, *args, **kwargs):
        if self.checkpointing:
            kwargs["bias"] = None
        return super().__call__(*args, **kwargs)

    def forward(self, x, bias=None):
        return self.lin(x) if bias is None else self.lin(x) + bias


class Stack(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.layers = torch.nn.ModuleList([Layer(), Layer()])

    def forward(self, x):
        for layer in self.layers:
            x = layer(x, bias=x)
        return x


def test_module_class_call_is_inlined_with_super_call():
    m = Stack().eval()
    with torch.no_grad():
        run(m, X)


def test_layer_call_compiled_alone():
    # the layer's own __call__ as the compiled frame: super().__call__ is
    # nn.Module's call, its forward inlined
    layer = Layer().eval()
    with torch.no_grad():
        run(layer.__call__, X, bias=X)


# ------------------------------------------------------- misc
def test_with_nullcontext_is_a_no_op_block():
    def ctx(enabled):
        return contextlib.nullcontext() if not enabled else torch.no_grad()

    def f(x):
        with ctx(False):
            y = x * 2
        return y + 1

    run(f, X)


def test_hasattr_on_none_is_false():
    def f(x, layer):
        if hasattr(layer, "is_sliding") and layer.is_sliding:
            return x - 1
        return x + 1

    run(f, X, None)


# ------------------------------------------------------- abc classes
import abc  # noqa: E402


class LayerCacheBase(abc.ABC):
    """An ABC base (transformers' CacheLayerMixin): its concrete
    subclasses are plain classes made by object.__new__."""

    def __init__(self):
        self.keys = None

    @abc.abstractmethod
    def update(self, k):
        ...


class LayerCache(LayerCacheBase):
    def update(self, k):
        self.keys = k if self.keys is None else torch.cat([self.keys, k])
        return self.keys


def test_object_of_an_abc_subclass_made_in_the_frame():
    def f(x):
        caches = [LayerCache() for _ in range(2)]
        for c in caches:
            c.update(x)
        return caches[0].update(x * 2), caches

    dynamo.reset()
    cnt = CompileCounter()
    start = records.mark()
    got, caches = dynamo.optimize(cnt)(f)(X)
    reasons = [b.reason for r in records.records_since(start) for b in r.break_reasons]
    assert (cnt.frame_count, reasons) == (1, [])
    assert same(got, torch.cat([X, X * 2]))
    assert [type(c) for c in caches] == [LayerCache, LayerCache]
    assert same(caches[0].keys, torch.cat([X, X * 2])) and same(caches[1].keys, X)


def test_abstract_class_construction_still_raises():
    def f(x):
        LayerCacheBase()
        return x + 1

    dynamo.reset()
    import pytest
    with pytest.raises(TypeError):
        dynamo.optimize(CompileCounter())(f)(X)


def test_attribute_set_on_a_tensor_object_is_not_folded_away():
    # the object itself has it (a library's tag on a parameter or input):
    # not folded to "missing"; the read runs for real
    class M(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.w = torch.nn.Parameter(torch.ones(4))
            self.w.tag = 2

        def forward(self, x, y):
            a = x * self.w if hasattr(self.w, "tag") else x
            return a + 1 if hasattr(y, "tag") else a - 1

    y = torch.ones(4)
    y.tag = 1
    m = M()
    with torch.no_grad():
        expected = m(X, y)
        dynamo.reset()
        got = dynamo.optimize(CompileCounter())(m)(X, y)
    assert same(expected, got)


# ------------------------------------------------------- dataclasses.fields
import dataclasses  # noqa: E402


@dataclasses.dataclass
class Out:
    first: torch.Tensor
    second: int = None
    scale: float = 2.0


def test_dataclasses_fields_folds():
    # as ModelOutput.__post_init__ / __setattr__ read them
    def f(x, out):
        names = [fl.name for fl in dataclasses.fields(out)]
        n_none = sum(1 for fl in dataclasses.fields(Out)[1:] if fl.default is None)
        return x * len(names) + n_none + out.scale

    run(f, X, Out(X))


# ------------------------------------------------------- functools.lru_cache
import functools  # noqa: E402

_probe_calls = []


@functools.lru_cache
def _marked_probe():
    # an install probe as transformers 5.x writes one (is_torch_distributed_available):
    # marked constant with torch's attribute, under the cache
    _probe_calls.append(1)
    return True


_marked_probe.__wrapped__._dynamo_marked_constant = True


@functools.lru_cache(maxsize=None)
def _cached_scale(n):
    return n * 3


def test_lru_cache_wrapper_marked_constant_is_folded():
    def f(x):
        if _marked_probe():
            return x + 1
        return x - 1

    _marked_probe.cache_clear()
    del _probe_calls[:]
    run(f, X)
    # eager once, once at trace time (the folded call); the compiled call runs nothing
    assert len(_probe_calls) == 2
    opt = dynamo.optimize(CompileCounter())(f)
    opt(X)
    n = len(_probe_calls)
    opt(X)
    assert len(_probe_calls) == n


def test_lru_cache_wrapper_is_traced_through(caplog):
    import logging

    def f(x, k):
        return x * _cached_scale(k) + _cached_scale.__wrapped__(1)

    with caplog.at_level(logging.WARNING, logger="dynamo"):
        run(f, X, 2)
    # the bypassed cache is said once, naming the function
    assert [r.getMessage() for r in caplog.records if "lru_cache" in r.getMessage()] != []
    assert all("_cached_scale" in r.getMessage() for r in caplog.records if "lru_cache" in r.getMessage())
    # the argument is guarded like any constant argument: another recompiles
    dynamo.reset()
    cnt = CompileCounter()
    opt = dynamo.optimize(cnt)(f)
    assert same(opt(X, 2), X * 6 + 3) and same(opt(X, 4), X * 12 + 3)
    assert cnt.frame_count == 2


def test_lru_cache_wrapper_returned_stays_the_wrapper():
    def f(x):
        return x + 1, _cached_scale

    got = run(f, X)
    assert got[1] is _cached_scale


# ------------------------------------------------------- custom ops
def _scaled_segments(x, offs):
    # the kernel of a custom op needs the data of `offs` (transformers 5.x's
    # grouped-mm fallback loops over `offs.tolist()` the same way)
    out = torch.zeros_like(x)
    start = 0
    for i, end in enumerate(offs.tolist()):
        out[start:end] = x[start:end] * (i + 1)
        start = end
    return out


torch.library.custom_op("dynamo_lib_idioms::scaled_segments", _scaled_segments, mutates_args=(),
                        schema="(Tensor x, Tensor offs) -> Tensor")
torch.library.register_fake("dynamo_lib_idioms::scaled_segments", lambda x, offs: torch.empty_like(x))


@pytest.mark.parametrize("backend", ["counter", "aot_eager"])
def test_custom_op_kernel_runs_uncompiled_inside_the_graph(backend):
    def f(x, offs):
        return torch.ops.dynamo_lib_idioms.scaled_segments(x * 2, offs) + 1

    x, offs = torch.randn(6), torch.tensor([2, 4, 6])
    expected = f(x, offs)
    dynamo.reset()
    start = records.mark()
    cnt = CompileCounter()
    opt = dynamo.optimize(cnt if backend == "counter" else backend)(f)
    got = opt(x, offs)
    # one frame compiled (f): the op is one node and its Python kernel,
    # run by the graph, is not compiled as a frame of its own
    recs = records.records_since(start)
    assert [r.code.co_name for r in recs] == ["f"], [r.code.co_name for r in recs]
    assert sum(len(r.graphs) for r in recs) == 1 and not any(r.break_reasons for r in recs)
    assert same(expected, got)
    again = records.mark()
    assert same(opt(x, torch.tensor([1, 1, 6])), f(x, torch.tensor([1, 1, 6])))
    assert records.records_since(again) == []
