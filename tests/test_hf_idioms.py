"""Library idioms that used to end the graph (issue 9, item 4), each in a
small frame: config reads, ModelOutput construction and reads, function
attribute reads, functools.reduce, inspect.signature, @torch.no_grad()
functions, autocast(enabled=False) blocks, tracing-state queries, objects
of plain classes built in the frame, `n += tensor` on a number, sets of
constants. Each test counts graphs and breaks and compares with eager."""
import dataclasses
import functools
import inspect
from typing import Optional

import pytest
import torch

import dynamo
from dynamo.testing import CompileCounter, same

transformers = pytest.importorskip("transformers")
from transformers import BertConfig  # noqa: E402
from transformers.modeling_outputs import BaseModelOutput, BaseModelOutputWithPooling  # noqa: E402

X = torch.randn(2, 4)


def run(fn, *args, graphs=1, breaks=0, **kwargs):
    dynamo.reset()
    expected = fn(*args, **kwargs)
    cnt = CompileCounter()
    got = dynamo.optimize(cnt)(fn)(*args, **kwargs)
    assert same(expected, got) if not hasattr(got, "to_tuple") else \
        same(expected.to_tuple(), got.to_tuple())
    dynamo.reset()
    e = dynamo.explain(fn)(*args, **kwargs)
    assert (e.graph_count, e.graph_break_count) == (graphs, breaks), str(e)
    return got


def test_config_reads_are_guarded_constants():
    cfg = BertConfig(hidden_size=8, num_attention_heads=2)

    def f(x, config):
        scale = config.hidden_size // config.num_attention_heads
        # a property of PretrainedConfig (use_return_dict, used before, is
        # deprecated in transformers 5.x: it logs through logger.warning_once)
        if config.num_labels == 2:
            return x * scale
        return x

    run(f, X, cfg)
    # a changed config value fails its guard and recompiles
    dynamo.reset()
    cnt = CompileCounter()
    opt = dynamo.optimize(cnt)(f)
    opt(X, cfg)
    cfg2 = BertConfig(hidden_size=12, num_attention_heads=2)
    assert same(opt(X, cfg2), f(X, cfg2))
    assert cnt.frame_count == 2


def test_config_attribute_map_is_followed():
    from transformers import GPT2Config
    cfg = GPT2Config(n_embd=8, n_head=2, n_layer=1)

    def f(x, config):
        return x * config.hidden_size + config.num_attention_heads   # mapped to n_embd / n_head
    run(f, X, cfg)


def test_model_output_built_read_and_returned():
    def f(x):
        out = BaseModelOutput(last_hidden_state=x * 2, hidden_states=None)
        y = out.last_hidden_state + out[0] + out["last_hidden_state"] + out.to_tuple()[0]
        if out.attentions is None and len(out) == 1 and "last_hidden_state" in out.keys():
            y = y + 1
        return BaseModelOutputWithPooling(last_hidden_state=y, pooler_output=y.mean(0))

    got = run(f, X)
    assert type(got) is BaseModelOutputWithPooling and list(got.keys()) == ["last_hidden_state",
                                                                             "pooler_output"]


def test_model_output_rebuilt_directly_after_one_checked_build():
    """The compiled frame's output is rebuilt without __init__ once the first
    build of that signature showed both end in the same state: same keys in
    order, same attributes, each the same object (as eager's __init__)."""
    import dataclasses as dc
    from dynamo.tracer.variables import model_output

    inits = []

    @dc.dataclass
    class Counted(BaseModelOutputWithPooling):
        def __post_init__(self):
            inits.append(1)
            super().__post_init__()

    def f(x):
        y = torch.relu(x)
        return Counted(last_hidden_state=y, pooler_output=y.mean(0))

    opt = dynamo.optimize("eager")(f)
    exp = f(X)
    inits.clear()
    outs = [opt(X) for _ in range(4)]
    assert len(inits) == 1                       # the checked build only
    assert model_output._direct_ok[(Counted, ("last_hidden_state", "pooler_output"), torch.Tensor)]
    for got in outs:
        assert type(got) is Counted and list(got.keys()) == list(exp.keys())
        assert list(vars(got)) == list(vars(exp)) and got.hidden_states is None
        assert same(got.to_tuple(), exp.to_tuple()) and got[0] is got.last_hidden_state


def test_model_output_with_extra_init_state_keeps_init():
    """A class whose __post_init__ leaves more state than the fields is
    rebuilt through __init__ every time (the check found a difference)."""
    import dataclasses as dc

    inits = []

    @dc.dataclass
    class Tagged(BaseModelOutput):
        def __post_init__(self):
            inits.append(1)
            super().__post_init__()
            object.__setattr__(self, "_tag", len(inits))

    def f(x):
        return Tagged(last_hidden_state=x + 1)

    opt = dynamo.optimize("eager")(f)
    inits.clear()
    outs = [opt(X) for _ in range(3)]
    assert len(inits) == 3 and [o._tag for o in outs] == [1, 2, 3]


def test_model_output_passed_in():
    def f(out):
        return out.last_hidden_state * 2 + out[0]
    run(f, BaseModelOutput(last_hidden_state=X))


def test_model_output_instance_dict_read():
    # ModelOutput.__post_init__ (transformers 5.x) reads `self.__dict__.get(name)`;
    # compiled as a frame of its own it sees the output as a frame value
    def f(x, out):
        if all(out.__dict__.get(k) is None for k in ("hidden_states", "attentions")):
            x = x + 1
        return x * out.__dict__["last_hidden_state"]

    run(f, X, BaseModelOutput(last_hidden_state=X))
    # a field that changes from None fails a guard of the dict's values: recompiles
    dynamo.reset()
    cnt = CompileCounter()
    opt = dynamo.optimize(cnt)(f)
    opt(X, BaseModelOutput(last_hidden_state=X))
    other = BaseModelOutput(last_hidden_state=X, hidden_states=(X,))
    assert same(opt(X, other), f(X, other)) and cnt.frame_count == 2


def test_function_name_code_module_reads():
    def helper(a, b):
        return a + b

    def f(x):
        if helper.__name__ == "helper" and helper.__module__ == __name__:
            x = x + 1
        return x * helper.__code__.co_argcount
    run(f, X)


def test_functools_reduce():
    def f(x):
        return functools.reduce(lambda a, b: a * b, [x, x + 1, x + 2])
    run(f, X)


def test_inspect_signature_parameters():
    class M(torch.nn.Module):
        def chunk(self, a, b):
            return a * b

        def forward(self, x):
            n = len(inspect.signature(self.chunk).parameters)
            return self.chunk(x, x) * n
    run(M(), X)


def test_no_grad_decorated_method():
    class M(torch.nn.Module):
        @torch.no_grad()
        def forward(self, x):
            return x * 2

    class Outer(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.inner = M()

        def forward(self, x):
            return self.inner(x) + x

    x = torch.randn(3, requires_grad=True)
    got = run(Outer(), x)          # inlined like LlamaRotaryEmbedding.forward: one graph
    assert got.requires_grad
    # as the entry frame itself, the wrapper's `with ctx_factory()` breaks
    # once (the wrapped forward is then its own graph, under no_grad)
    got = run(M(), x, graphs=1, breaks=1)
    assert not got.requires_grad


def test_autocast_disabled_block():
    def f(x):
        with torch.autocast(device_type="cpu", enabled=False):
            y = x.float() * 2
        return y + 1
    run(f, X)


def test_tracing_state_queries_fold():
    def f(x):
        if torch.jit.is_tracing() or torch.onnx.is_in_onnx_export() or \
                torch.fx._symbolic_trace.is_fx_tracing():
            return x - 1
        if torch.compiler.is_compiling():       # True while dynamo traces, as under torch.compile
            return x + 1
        return x
    dynamo.reset()
    cnt = CompileCounter()
    got = dynamo.optimize(cnt)(f)(X)
    assert same(got, X + 1) and same(f(X), X)     # eager is not compiling: x
    assert cnt.frame_count == 1



def test_raise_only_on_the_compiling_path_runs_the_frame_eagerly():
    # LongT5's encoder: "if mask is None and not is_compiling(): mask = ones"
    # leaves the mask None under a compiler, and a helper then reads
    # mask.shape. Breaking at the helper's call would hand that None to
    # eager code, which raises where eager never does (it did: zoo hf:longt5)
    def blocks(m):
        return m.shape[1]

    def f(x, m=None):
        if m is None and not torch.compiler.is_compiling():
            m = torch.ones(2, 3)
        return (x + 1) * blocks(m)

    dynamo.reset()
    cnt = CompileCounter()
    got = dynamo.optimize(cnt)(f)(X)
    assert same(got, f(X))
    assert cnt.frame_count == 0            # f ran eagerly, as a whole, as under torch.compile
    assert same(dynamo.optimize(cnt)(f)(X), f(X))    # and keeps doing so


def test_raise_without_is_compiling_still_breaks_at_the_call():
    # the same raise with no is_compiling() in the trace: a break at the
    # call, the graph before it kept; the eager call raises as eager does
    def blocks(m):
        return m.shape[1]

    def f(x, m):
        return (x + 1) * blocks(m)

    dynamo.reset()
    cnt = CompileCounter()
    with pytest.raises(AttributeError):
        dynamo.optimize(cnt)(f)(X, None)
    assert cnt.frame_count == 1 and cnt.op_count == 1

def test_plain_object_built_in_frame():
    class Converter:
        def __init__(self, causal, window=None):
            self.causal = causal
            self.window = window

        def apply(self, x):
            return x.tril() if self.causal else x

    def f(x):
        c = Converter(True)
        return c.apply(x) * 2
    run(f, torch.randn(4, 4))


def test_inplace_op_on_python_number_with_tensor():
    def f(x):
        r = 0
        r += (x > 0).to(torch.long) * 3
        return r
    run(f, X)


def test_set_of_constants_from_module():
    class M(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.pruned = set()

        def forward(self, x):
            if self.pruned:
                return x - 1
            return x + len(self.pruned)
    m = M()
    run(m, X)
    m.pruned.add(1)              # the guard holds a copy: the mutation recompiles
    dynamo.reset()
    cnt = CompileCounter()
    opt = dynamo.optimize(cnt)(m)
    assert same(opt(X), m(X))
    m.pruned.clear()
    assert same(opt(X), m(X))
    assert cnt.frame_count == 2


def test_plain_dataclass_built_in_frame():
    # a plain (non-ModelOutput) dataclass is a plain class: built in the frame
    @dataclasses.dataclass
    class Out:
        a: torch.Tensor
        b: Optional[torch.Tensor] = None

    def f(x):
        o = Out(x * 2)
        return o.a + 1
    run(f, X)


def test_hasattr_of_a_missing_model_output_field_folds():
    # transformers' output capturing: hasattr(outputs, "vision_hidden_states")
    # on an output class without that field was a break
    def f(x):
        out = BaseModelOutput(last_hidden_state=x * 2)
        if hasattr(out, "vision_hidden_states"):
            return out.vision_hidden_states
        return out.last_hidden_state + int(hasattr(out, "last_hidden_state"))
    run(f, X)
