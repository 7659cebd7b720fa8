"""Constructs that ended the graph on models of the zoo (issue 31:
transformers' AutoModel mapping, timm families, torchvision), each written
as the library writes it (the library's own code where transformers has
it) and counted: graphs and breaks of the first call, outputs equal eager,
and where the construct leaves state behind, the recompiles of a second
call."""
import collections
import copy
import functools
import math
from types import FunctionType, UnionType

import numpy as np
import pytest
import torch

import dynamo
from dynamo import records
from dynamo.testing import CompileCounter, same

X = torch.randn(2, 4)


def run(fn, *args, graphs=1, breaks=0, check=True, **kwargs):
    """Compiled result of fn(*args, **kwargs), checked against eager and
    with (graphs, breaks) of its first call counted."""
    dynamo.reset()
    expected = fn(*args, **kwargs)
    cnt = CompileCounter()
    start = records.mark()
    got = dynamo.optimize(cnt)(fn)(*args, **kwargs)
    reasons = [b.reason for r in records.records_since(start) for b in r.break_reasons]
    assert (cnt.frame_count, len(reasons)) == (graphs, breaks), reasons
    assert not check or same(expected, got)
    return got


# ------------------------------------------------ __class__ of a function
def _log_api_usage_once(obj):
    # torchvision.utils._log_api_usage_once, as torchvision 0.2x writes it
    module = obj.__module__
    if not module.startswith("torchvision"):
        module = f"torchvision.internal.{module}"
    name = obj.__class__.__name__
    if isinstance(obj, FunctionType):
        name = obj.__name__
    torch._C._log_api_usage_once(f"{module}.{name}")


def stochastic_depth(x, p):
    if not torch.jit.is_scripting() and not torch.jit.is_tracing():
        _log_api_usage_once(stochastic_depth)
    return x * p


def test_class_of_a_function_is_its_type():
    run(stochastic_depth, X, 0.5)

    def f(x):
        inner = lambda y: y + 1        # noqa: E731 (a function made in the frame)
        assert inner.__class__ is FunctionType and getattr(stochastic_depth, "__class__") is FunctionType
        return inner(x)

    run(f, X)


# ------------------------------------------------ functools.partial
def test_partial_of_torch_functions_with_keywords():
    from transformers.activations import GELUTanh
    run(GELUTanh(), X)                       # self.act = partial(F.gelu, approximate="tanh")

    from transformers import FNetConfig
    from transformers.models.fnet.modeling_fnet import FNetBasicFourierTransform
    cfg = FNetConfig(hidden_size=8, use_tpu_fourier_optimizations=False)
    run(FNetBasicFourierTransform(cfg), torch.randn(2, 3, 8))    # partial(torch.fft.fftn, dim=(1, 2))

    def made_in_frame(x):
        act = functools.partial(torch.nn.functional.gelu, approximate="tanh")
        scale = functools.partial(torch.mul, other=2.0)
        twice = functools.partial(scale)             # a partial of a partial
        return twice(act(x)), act(x + 1)

    run(made_in_frame, X)

    def returns_it(x):
        return torch.relu(x), functools.partial(torch.nn.functional.gelu, approximate="tanh")

    _, act = run(returns_it, X, check=False)     # the partial is rebuilt by the rewritten code
    assert act.func is torch.nn.functional.gelu and act.keywords == {"approximate": "tanh"}


def test_partial_is_guarded_on_its_arguments():
    def f(x, act):
        return act(x)

    dynamo.reset()
    cnt = CompileCounter()
    opt = dynamo.optimize(cnt)(f)
    tanh = functools.partial(torch.nn.functional.gelu, approximate="tanh")
    exact = functools.partial(torch.nn.functional.gelu, approximate="none")
    assert same(opt(X, tanh), f(X, tanh)) and same(opt(X, tanh), f(X, tanh))
    assert cnt.frame_count == 1
    assert same(opt(X, exact), f(X, exact)) and cnt.frame_count == 2


# ------------------------------------------------ dict.fromkeys, OrderedDict
def test_dict_fromkeys():
    def f(x):
        # transformers' LinearAttentionLayer caches: dict.fromkeys(range(n), False)
        states = dict.fromkeys(range(2))
        ready = dict.fromkeys(range(2), False)
        states[0], ready[0] = x * 2, True
        named = collections.OrderedDict.fromkeys("ab", 1)
        return states[0] + (1 if ready[0] and not ready[1] and states[1] is None else 0), named

    out = run(f, X)
    assert type(out[1]) is collections.OrderedDict and list(out[1]) == ["a", "b"]


def test_ordered_dict_built_in_the_frame():
    class Features(torch.nn.Module):
        # timm's FeatureDictNet / torchvision's IntermediateLayerGetter shape:
        # an OrderedDict filled layer by layer and returned
        def __init__(self):
            super().__init__()
            self.layers = torch.nn.ModuleDict({"a": torch.nn.Linear(4, 4), "b": torch.nn.Linear(4, 4)})

        def forward(self, x):
            out = collections.OrderedDict()
            for name, layer in self.layers.items():
                x = layer(x)
                out[name] = x
            result = collections.OrderedDict([("first", out["a"])], last=x)
            result.move_to_end("first")
            return out, result

    out, result = run(Features(), X)
    assert type(out) is type(result) is collections.OrderedDict
    assert list(out) == ["a", "b"] and list(result) == ["last", "first"]



def fpn(features, x):
    # torchvision's FeaturePyramidNetwork / RPN: the backbone's OrderedDict
    # passed in, read by keys(), values() and items(), and extended
    names, maps = list(features.keys()), list(features.values())
    out = [m + x for m in maps] + [v * 2 for _, v in features.items()]
    features["pool"] = maps[-1].sum()
    return names, out


def test_ordered_dict_passed_in():
    feats = lambda: collections.OrderedDict([("0", X + 1), ("1", X * 3)])   # noqa: E731
    dynamo.reset()
    cnt = CompileCounter()
    opt = dynamo.optimize(cnt)(fpn)
    start = records.mark()
    mine, ref = feats(), feats()
    got, expected = opt(mine, X), fpn(ref, X)
    assert cnt.frame_count == 1
    assert not [b for r in records.records_since(start) for b in r.break_reasons]
    assert same(expected, got)
    assert type(mine) is collections.OrderedDict and list(mine) == list(ref) == ["0", "1", "pool"]
    assert same(mine["pool"], ref["pool"])
    opt(feats(), X)                                   # the same keys in the same order: a hit
    assert cnt.frame_count == 1
    reordered = feats()
    reordered.move_to_end("0")                        # its own order, not the dict's
    assert same(opt(reordered, X), fpn(_moved(feats()), X))
    assert cnt.frame_count == 2
    assert same(opt(dict(feats()), X), fpn(dict(feats()), X))   # a plain dict: another entry
    assert cnt.frame_count == 3


def _moved(d):
    d.move_to_end("0")
    return d

# ------------------------------------------------ numpy scalar math, str Enums
def test_numpy_ufunc_of_python_numbers_folds():
    def f(x, d):
        x = x * np.sqrt(d)                 # CTRL: inputs_embeds *= np.sqrt(self.d_model_size)
        return x / np.log(4.0) + np.maximum(d, 2)

    run(f, X, 16)
    run(f, X, 9)


def test_ctrl_whole():
    # np.sqrt(d_model), deprecate_kwarg's ExplicitEnum comparisons, and
    # `self.pos_encoding = self.pos_encoding.to(...)` (a buffer assigned)
    from transformers import CTRLConfig, CTRLModel
    cfg = CTRLConfig(vocab_size=64, n_embd=16, dff=32, n_layer=2, n_head=2, n_positions=32)
    model = CTRLModel(cfg).eval()
    ids = torch.randint(0, 64, (2, 6), generator=torch.Generator().manual_seed(0))

    def f(ids):
        return model(input_ids=ids, use_cache=False).last_hidden_state

    run(f, ids)
    opt = dynamo.optimize("eager")(f)       # its own backend: compiled once for it
    assert same(opt(ids), f(ids))
    again = records.mark()
    assert same(opt(ids), f(ids)) and records.records_since(again) == []


# ------------------------------------------------ attribute assignment on a module
class Block(torch.nn.Module):
    # the shape of Swin's layers: a setting fixed up in forward
    def __init__(self):
        super().__init__()
        self.shift_size, self.window_size = 3, 4
        self.proj = torch.nn.Linear(4, 4)

    def forward(self, x):
        if x.shape[-1] <= self.window_size:
            self.shift_size = 0
            self.window_size = x.shape[-1]
        self.seen = getattr(self, "seen", None) is not None or x.shape[0]   # a new attribute
        return torch.roll(self.proj(x), self.shift_size, -1) * self.window_size


def test_module_attribute_assignment_is_written_back():
    eager, ours = Block(), Block()
    ours.load_state_dict(eager.state_dict())
    dynamo.reset()
    cnt = CompileCounter()
    start = records.mark()
    opt = dynamo.optimize(cnt)(ours)
    assert same(opt(X), eager(X))
    assert [b.reason for r in records.records_since(start) for b in r.break_reasons] == []
    assert (ours.shift_size, ours.window_size, ours.seen) == (eager.shift_size, eager.window_size, 2)
    # later calls see the new values: a compile per state the attributes
    # go through (guards on the values read: seen missing, 2, True), then hits
    for _ in range(3):
        assert same(opt(X), eager(X))
    assert cnt.frame_count == 3 and ours.seen is eager.seen is True


def test_module_state_assignment_still_breaks():
    class M(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = torch.nn.Linear(4, 4)

        def forward(self, x):
            x = x * 2
            self.lin = torch.nn.Identity()         # a submodule: registered eagerly
            return self.lin(x)

    run(M(), X, graphs=1, breaks=1)


# ------------------------------------------------ an instance's own forward
def test_instance_forward_attribute():
    class PartialConv(torch.nn.Module):
        # timm FasterNet's Partial_conv3: forward chosen in __init__
        def __init__(self, mode):
            super().__init__()
            self.conv = torch.nn.Conv2d(2, 2, 3, padding=1)
            self.forward = self.forward_slicing if mode == "slicing" else self.forward_split_cat

        def forward_slicing(self, x):
            x = x.clone()
            x[:, :2] = self.conv(x[:, :2])
            return x

        def forward_split_cat(self, x):
            x1, x2 = torch.split(x, [2, 2], dim=1)
            return torch.cat((self.conv(x1), x2), 1)

    class Net(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.a, self.b = PartialConv("slicing"), PartialConv("split_cat")

        def forward(self, x):
            return self.b(self.a(x)) + 1

    x = torch.randn(1, 4, 5, 5)
    net = Net()
    run(net, x)
    # another forward on the instance recompiles
    dynamo.reset()
    cnt = CompileCounter()
    opt = dynamo.optimize(cnt)(net)
    opt(x)
    net.a.forward = net.a.forward_split_cat
    assert same(opt(x), net(x)) and cnt.frame_count == 2


# ------------------------------------------------ RNN modules' nested tuples
@pytest.mark.parametrize("backend", ["counter", "aot_eager"])
def test_rnn_module_returns_nested_tuple(backend):
    class Sequencer(torch.nn.Module):
        # timm's Sequencer2d block: an LSTM over rows, (output, (h, c)) back
        def __init__(self):
            super().__init__()
            self.rnn = torch.nn.LSTM(4, 3, batch_first=True, bidirectional=True)
            self.fc = torch.nn.Linear(6, 4)

        def forward(self, x):
            out, (h, c) = self.rnn(x)
            return self.fc(out) + h.sum() + c.mean()

    m, x = Sequencer().eval(), torch.randn(2, 5, 4)
    if backend == "counter":
        run(m, x)
        return
    dynamo.reset()
    start = records.mark()
    assert same(dynamo.optimize("aot_eager")(m)(x), m(x))
    recs = records.records_since(start)
    assert sum(len(r.graphs) for r in recs) == 1 and not any(r.break_reasons for r in recs)


# ------------------------------------------------ logging helpers
def test_logging_calls_are_replayed_after_the_graph():
    import logging as pylogging
    from transformers.utils import logging
    logger = logging.get_logger("dynamo_zoo_idioms")
    seen = []

    class Keep(pylogging.Handler):
        def emit(self, record):
            seen.append(record.getMessage())

    logger.addHandler(Keep())

    def f(x):
        if x.shape[0] > 1:
            logger.warning_once("`use_cache=True` is incompatible with gradient checkpointing")
        logger.warning("plain %d", 3)
        return x + 1

    dynamo.reset()
    cnt = CompileCounter()
    start = records.mark()
    opt = dynamo.optimize(cnt)(f)
    for _ in range(2):
        assert same(opt(X), X + 1)
    assert [b.reason for r in records.records_since(start) for b in r.break_reasons] == []
    assert cnt.frame_count == 1
    # once stays once (its lru_cache is consulted at run time), the other twice
    assert seen == ["`use_cache=True` is incompatible with gradient checkpointing", "plain 3", "plain 3"]


# ------------------------------------------------ ModelOutput, math.prod
def test_backbone_output_with_a_tuple_first_field():
    from transformers.modeling_outputs import BackboneOutput

    def f(x):
        out = BackboneOutput(feature_maps=(x, x + 1))      # DAB-DETR, MaskFormer backbones
        empty = BackboneOutput(feature_maps=())
        return out, out.feature_maps[1] + out[0][0], len(empty), empty.feature_maps

    out = run(f, X)
    assert list(out[0].keys()) == ["feature_maps"] and out[3] is None


def test_math_prod():
    def f(x, strides):
        # Hiera's undo_windowing: math.prod of a list of sizes
        b, *rest = x.shape
        return x.reshape(b * math.prod(strides), -1, math.prod(rest) // math.prod(strides))

    run(f, torch.randn(2, 4, 4), [2, 2])


# ------------------------------------------------ Mapping.get of a user mapping
def test_attention_interface_get_falls_back_to_the_default():
    # transformers' get_interface: super().get(name, default), i.e.
    # collections.abc.Mapping.get over GeneralInterface.__getitem__, whose
    # missing key raises KeyError (GPT-OSS and others: a break per layer)
    from transformers.modeling_utils import AttentionInterface
    iface = AttentionInterface()

    def eager(x):
        return x * 2

    def f(x):
        return iface.get_interface("eager", eager)(x)

    run(f, X)
    dynamo.reset()
    cnt = CompileCounter()
    opt = dynamo.optimize(cnt)(f)
    assert same(opt(X), X * 2) and same(opt(X), X * 2) and cnt.frame_count == 1
    iface["eager"] = lambda x: x * 3          # the key appears: recompiles
    assert same(opt(X), X * 3) and cnt.frame_count == 2


# ------------------------------------------------ copy.deepcopy of a config
class RenamingConfig:
    """A config as transformers writes one: attribute_map renames on reads
    and writes (a Python __getattribute__ and __setattr__)."""
    attribute_map = {"hidden_size": "d_model"}

    def __init__(self):
        self.d_model = 4
        self.decoder_layers = 2
        self.layer_types = ["full", "sliding"]
        self.id2label = {0: "a"}
        self.is_encoder_decoder = True

    def __setattr__(self, key, value):
        if key in super().__getattribute__("attribute_map"):
            key = super().__getattribute__("attribute_map")[key]
        super().__setattr__(key, value)

    def __getattribute__(self, key):
        if key != "attribute_map" and key in super().__getattribute__("attribute_map"):
            key = super().__getattribute__("attribute_map")[key]
        return super().__getattribute__(key)

    def to_dict(self):
        out = copy.deepcopy(self.__dict__)
        out["model_type"] = type(self).__name__
        return out

    def get_text_config(self, decoder=True):
        # PreTrainedConfig.get_text_config's legacy branch, as 5.x writes it
        config = self
        if config.is_encoder_decoder:
            config = copy.deepcopy(config)
            prefix = "decoder" if decoder else "encoder"
            for key in config.to_dict():
                if key.startswith(prefix):
                    new_key = "num_hidden_layers" if key == prefix + "_layers" else key[len(prefix) + 1:]
                    if new_key in config.attribute_map:
                        new_key = config.attribute_map[new_key]
                    value = getattr(config, key)
                    delattr(config, key)
                    setattr(config, new_key, value)
        return config


def test_deepcopy_of_a_config_is_traced():
    cfg = RenamingConfig()

    def f(x, cfg):
        text = cfg.get_text_config(decoder=True)
        text.hidden_size = 8                         # written through attribute_map, on the copy
        text.layer_types.append("full")
        return x * text.d_model + text.num_hidden_layers + len(text.layer_types)

    run(f, X, cfg)
    # the original is untouched, by eager and by the compiled call alike
    assert cfg.__dict__ == RenamingConfig().__dict__ and not hasattr(cfg, "num_hidden_layers")


class T5LikeConfig(RenamingConfig):
    """__getattribute__ and __setattr__ inherited, as T5Config has them."""


def test_deepcopy_is_guarded_on_the_copied_state():
    cfg = T5LikeConfig()

    def f(x, cfg):
        return x * len(copy.deepcopy(cfg).layer_types)

    dynamo.reset()
    cnt = CompileCounter()
    opt = dynamo.optimize(cnt)(f)
    assert same(opt(X, cfg), X * 2) and same(opt(X, cfg), X * 2) and same(opt(X, cfg), X * 2)
    assert cnt.frame_count == 1
    cfg.layer_types.append("full")                   # a copied item changed: recompiles
    assert same(opt(X, cfg), X * 3) and cnt.frame_count == 2
    cfg.extra = 1                                    # a new attribute: the copy differs
    assert same(opt(X, cfg), X * 3) and cnt.frame_count == 3


def test_deepcopy_result_outlives_the_graph():
    cfg = RenamingConfig()

    def f(x, cfg):
        c = copy.deepcopy(cfg)
        c.hidden_size = 16
        pair = [c.layer_types, c.layer_types]        # shared items stay shared
        return x + 1, c, copy.deepcopy(pair)

    _, c, pair = run(f, X, cfg, check=False)
    assert type(c) is RenamingConfig and c is not cfg and c.d_model == 16 and cfg.d_model == 4
    assert c.layer_types == cfg.layer_types and c.layer_types is not cfg.layer_types
    assert pair[0] is pair[1] and pair[0] is not c.layer_types


class OwnCopy:
    def __init__(self):
        self.n = 3

    def __deepcopy__(self, memo):
        return OwnCopy()


def test_deepcopy_of_what_it_cannot_copy_still_breaks():
    def f(x, obj):
        x = x + 1
        return x * copy.deepcopy(obj).n

    run(f, X, OwnCopy(), graphs=2, breaks=1)         # __deepcopy__ of its own: runs eagerly
    run(lambda x: copy.deepcopy(x) + 1, X, graphs=1, breaks=1)      # a tensor: runs eagerly



def test_shallow_copy_of_a_config_is_traced():
    # transformers' heterogeneous configs (NeoMME): a per-layer config is
    # copy.copy(config) with a few attributes changed
    cfg = RenamingConfig()

    def f(x, cfg):
        c = copy.copy(cfg)
        c.hidden_size = 16
        items = copy.copy(c.layer_types)
        items.append("extra")
        return x * c.d_model + len(items), c

    _, c = run(f, X, cfg, check=False)
    assert type(c) is RenamingConfig and c is not cfg and c.d_model == 16 and cfg.d_model == 4
    assert c.layer_types is cfg.layer_types and "extra" not in cfg.layer_types   # shallow


class OwnShallowCopy:
    def __init__(self):
        self.n = 3

    def __copy__(self):
        return OwnShallowCopy()


def test_shallow_copy_of_what_it_cannot_copy_still_breaks():
    def f(x, obj):
        x = x + 1
        return x * copy.copy(obj).n

    run(f, X, OwnShallowCopy(), graphs=2, breaks=1)   # __copy__ of its own: runs eagerly

def test_typing_queries_fold():
    import typing

    def f(x, tp):
        # huggingface_hub's strict-dataclass validators read a field's annotation
        if typing.get_origin(tp) in (typing.Union, UnionType):
            return x * len(typing.get_args(tp))
        return x

    run(f, X, int | None)
    run(f, X, typing.Optional[int])


def _double(x):
    return x * 2


def _triple(x):
    return x * 3


_BY_TYPE = {list: _double, tuple: _triple, UnionType: _double}


def test_table_keyed_by_types_is_guarded_whole():
    def f(x, kind):
        return _BY_TYPE.get(kind, _triple)(x)

    dynamo.reset()
    cnt = CompileCounter()
    opt = dynamo.optimize(cnt)(f)
    assert same(opt(X, list), X * 2) and same(opt(X, list), X * 2) and cnt.frame_count == 1
    _BY_TYPE[list] = _triple                         # a value replaced: recompiles
    try:
        assert same(opt(X, list), X * 3) and cnt.frame_count == 2
    finally:
        _BY_TYPE[list] = _double


def test_deepcopy_of_a_strict_dataclass_config():
    # transformers 5.x configs are huggingface_hub strict dataclasses: their
    # __setattr__ runs each field's type validator (typing.get_origin and a
    # table of validators keyed by typing origin)
    import dataclasses
    from huggingface_hub.dataclasses import strict

    @strict
    @dataclasses.dataclass
    class StrictConfig:
        d_model: int = 4
        dropout: float | None = 0.1
        names: list[str] = dataclasses.field(default_factory=lambda: ["a"])

    cfg = StrictConfig()

    def f(x, cfg):
        c = copy.deepcopy(cfg)
        c.d_model = 8
        c.dropout = 0.2                              # float | None: the first member matches
        c.names = ["a", "b"]
        return x * c.d_model + len(c.names)

    run(f, X, cfg)
    assert cfg.d_model == 4 and cfg.dropout == 0.1 and cfg.names == ["a"]


# ------------------------------------------------ torch.jit.script functions
@torch.jit.script
def _scripted_softmax(x: torch.Tensor, dim: int) -> torch.Tensor:
    # DeBERTa's XSoftmax helpers are torch.jit.script functions called from Python
    return torch.softmax(x.masked_fill(x < -1.0, -1e4), dim)


def test_script_function_is_traced_through_its_python_source():
    def f(x):
        return _scripted_softmax(x * 2, -1) + 1

    run(f, X)                           # was 2 graphs, 1 break ("calling a ScriptFunction")
    cnt = CompileCounter()
    dynamo.reset()
    dynamo.optimize(cnt)(f)(X)
    assert cnt.op_count == 5            # mul, lt, masked_fill, softmax, add: inlined, not one opaque call


# ------------------------------------------------ module forward hooks
class _Block(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(4, 4)

    def forward(self, x, scale=1.0):
        return self.lin(x) * scale


class _Stack(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.blocks = torch.nn.ModuleList([_Block(), _Block()])

    def forward(self, x):
        for b in self.blocks:
            x = b(x, scale=2.0)
        return x


def test_forward_hooks_are_traced():
    # transformers' output capturing (PP-LCNet, every model with
    # output_hidden_states through hooks) and feature extractors register
    # forward hooks that append each block's output to a list
    net, feats = _Stack(), []
    net.blocks[0].register_forward_hook(lambda m, a, o: feats.append(o))
    net.blocks[0].register_forward_pre_hook(lambda m, a, k: (a, {"scale": 3.0}), with_kwargs=True)
    net.blocks[1].register_forward_pre_hook(lambda m, a: (a[0] + 1,))
    net.blocks[1].register_forward_hook(lambda m, a, k, o: o * k["scale"], with_kwargs=True)
    x = torch.randn(2, 4)
    expected = net(x)
    eager_feats = list(feats)
    feats.clear()
    dynamo.reset()
    cnt = CompileCounter()
    opt = dynamo.optimize(cnt)(net)
    assert same(opt(x), expected)
    assert (cnt.frame_count, len(feats)) == (1, 1) and same(feats[0], eager_feats[0])
    feats.clear()                       # a fresh list per call, as transformers' collector
    assert same(opt(x), expected) and cnt.frame_count == 1 and len(feats) == 1   # a hit


def test_removing_a_forward_hook_recompiles():
    net = _Stack()
    handle = net.blocks[1].register_forward_hook(lambda m, a, o: o * 0)
    x = torch.randn(2, 4)
    dynamo.reset()
    cnt = CompileCounter()
    opt = dynamo.optimize(cnt)(net)
    assert same(opt(x), torch.zeros(2, 4))
    handle.remove()
    assert same(opt(x), net(x)) and cnt.frame_count == 2


def test_backward_hooks_still_break(monkeypatch):
    net = _Stack()
    net.blocks[0].register_full_backward_hook(lambda m, gi, go: None)
    # the break is in _Stack's loop: by default the loop's frame runs
    # eagerly (each block a frame of its own: 2 graphs, no break) ...
    run(net.forward, torch.randn(2, 4), graphs=2, breaks=0)
    # ... and with config.skip_frame_on_loop_break off it is cut at the hooked call
    monkeypatch.setattr(dynamo.config, "skip_frame_on_loop_break", False)
    run(net.forward, torch.randn(2, 4), graphs=2, breaks=1)
