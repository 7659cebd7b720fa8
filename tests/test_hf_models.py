"""Real models: transformers architectures built from small configs
(tests/hf_zoo.py: random weights, 2 layers, batch 2, no hub access),
compiled whole.

Per model: the graphs and graph breaks of one capture (EXPECTED: the counts
reached, goal 1 graph and 0 breaks), every tensor leaf of the output equal
to eager (rtol 1e-4, atol 1e-5), and a second call that hits the cache (no
compile, no new graph, no Python __getattribute__ frame: the guards read
configs in C). Four models also take one training step with the
aot_eager backend: loss and every parameter's gradient equal to eager's.
"""
import copy
import cProfile

import pytest
import torch

pytest.importorskip("transformers")

import dynamo  # noqa: E402
from dynamo import records  # noqa: E402
from dynamo.testing import CompileCounter  # noqa: E402

import hf_zoo  # noqa: E402

# model -> (graphs, breaks) of one capture
EXPECTED = {
    "bert": (1, 0),
    "roberta": (1, 0),
    "distilbert": (1, 0),
    "gpt2": (1, 0),
    "llama": (1, 0),
    "qwen2": (1, 0),
    # transformers 5.x: the experts run through the custom op
    # transformers::grouped_mm_fallback, whose Python kernel (offs.tolist())
    # the graph runs uncompiled (it was 7 graphs / 2 breaks: the kernel was
    # compiled as a frame). 4.46.3: routing's torch.where(mask) has a
    # data-dependent size, kept in the graph as a symbolic size
    # (config.capture_dynamic_output_shape_ops; it was 16 graphs / 13 breaks)
    "mixtral": (1, 0),
    "t5": (1, 0),
    "bart": (1, 0),
    "vit": (1, 0),
    "resnet": (1, 0),
    "convnext": (1, 0),
    "whisper": (1, 0),
    "wav2vec2": (1, 0),
}

RTOL, ATOL = 1e-4, 1e-5


def _equal(ref, got):
    a, b = hf_zoo.tensor_leaves(ref), hf_zoo.tensor_leaves(got)
    assert a and len(a) == len(b), (len(a), len(b))
    for x, y in zip(a, b):
        assert x.shape == y.shape and torch.allclose(x, y, rtol=RTOL, atol=ATOL), \
            (x.shape, (x - y).abs().max())


def _python_getattribute_calls(fn, kwargs):
    """(fn(**kwargs), how many Python __getattribute__ frames it ran),
    counted by cProfile (a C profiler: no Python frame of its own)."""
    prof = cProfile.Profile()
    prof.enable()
    try:
        out = fn(**kwargs)
    finally:
        prof.disable()
    return out, sum(e.callcount for e in prof.getstats()
                    if getattr(e.code, "co_name", None) == "__getattribute__")


@pytest.mark.parametrize("name", list(hf_zoo.MODELS))
def test_model_inference(name):
    model, inputs = hf_zoo.build(name)
    with torch.no_grad():
        expected = model(**inputs)
        dynamo.reset()
        start = records.mark()
        cnt = CompileCounter()
        opt = dynamo.optimize(cnt)(model)
        got = opt(**inputs)
        first = records.records_since(start)
        graphs = cnt.frame_count
        breaks = sum(len(r.break_reasons) for r in first)
        _equal(expected, got)
        # the second call runs the cached code: no compile, no new graph,
        # and no config __getattribute__ in Python (the guards read the
        # config through object's lookup, in C: GENERIC_ATTR)
        second_start = records.mark()
        again, getattribute_calls = _python_getattribute_calls(opt, inputs)
        assert records.records_since(second_start) == []
        assert cnt.frame_count == graphs
        assert getattribute_calls == 0
        _equal(expected, again)
    assert (graphs, breaks) == EXPECTED[name], [b.reason for r in first for b in r.break_reasons][:5]


def _kv_pairs(cache):
    """Per layer (key, value) of a KV cache: the legacy tuple of tuples, a
    4.x DynamicCache (key_cache/value_cache lists) or a 5.x one (layers)."""
    if hasattr(cache, "layers"):
        return [(layer.keys, layer.values) for layer in cache.layers]
    if hasattr(cache, "key_cache"):
        return list(zip(cache.key_cache, cache.value_cache))
    return [tuple(kv) for kv in cache]


# the decoders with their KV cache on: transformers builds a DynamicCache
# inside the forward and fills it layer by layer (4.46.3: a state-only
# nn.Module subclass with key/value lists, returned as tuples; 5.x: a list of
# layer objects, returned as the cache) (torch.compile: 1 graph, 0 breaks for
# each too)
@pytest.mark.parametrize("name", ["llama", "qwen2", "gpt2"])
def test_decoder_with_kv_cache(name):
    model, inputs = hf_zoo.build(name)
    inputs = dict(inputs, use_cache=True)
    with torch.no_grad():
        expected = model(**inputs)
        dynamo.reset()
        start = records.mark()
        cnt = CompileCounter()
        opt = dynamo.optimize(cnt)(model)
        got = opt(**inputs)
        first = records.records_since(start)
        breaks = [b.reason for r in first for b in r.break_reasons]
        assert (cnt.frame_count, len(breaks)) == (1, 0), breaks[:5]
        _equal(expected, got)
        # past_key_values: per layer (key, value), equal to eager's
        got_kv, expected_kv = _kv_pairs(got.past_key_values), _kv_pairs(expected.past_key_values)
        assert len(got_kv) == len(expected_kv) == 2
        for (k, v), (ek, ev) in zip(got_kv, expected_kv):
            assert torch.equal(k, ek) and torch.equal(v, ev)
        second = records.mark()
        _equal(expected, opt(**inputs))
        assert records.records_since(second) == [] and cnt.frame_count == 1


# a generation step: the DynamicCache of the previous step is passed in and
# grows in place (its counter and per-layer key/value lists are written back
# after the graph; torch.compile: 1 graph, 0 breaks too)
@pytest.mark.parametrize("name", ["llama", "qwen2"])
def test_decoder_generation_step_with_cache_passed_in(name):
    from transformers import DynamicCache
    model, inputs = hf_zoo.build(name)
    with torch.no_grad():
        cache = DynamicCache()
        first = model(input_ids=inputs["input_ids"], past_key_values=cache, use_cache=True)
        nxt = first.logits[:, -1:].argmax(-1)
        c_eager, c_ours = copy.deepcopy(cache), copy.deepcopy(cache)
        expected = model(input_ids=nxt, past_key_values=c_eager, use_cache=True)
        dynamo.reset()
        start = records.mark()
        cnt = CompileCounter()
        got = dynamo.optimize(cnt)(model)(input_ids=nxt, past_key_values=c_ours, use_cache=True)
        recs = records.records_since(start)
        breaks = [b.reason for r in recs for b in r.break_reasons]
        assert (cnt.frame_count, len(breaks)) == (1, 0), breaks[:5]
        _equal(expected.logits, got.logits)
        assert got.past_key_values is c_ours
        assert c_ours.get_seq_length() == c_eager.get_seq_length() == 9
        ours_kv, eager_kv = _kv_pairs(c_ours), _kv_pairs(c_eager)
        assert len(ours_kv) == len(eager_kv) == 2
        for a, b in zip([t for kv in ours_kv for t in kv], [t for kv in eager_kv for t in kv]):
            assert a.shape[-2] == 9 and torch.equal(a, b)


TRAIN = ["bert", "llama", "vit", "resnet"]


def _loss(out):
    return sum(t.float().pow(2).mean() for t in hf_zoo.tensor_leaves(out))


@pytest.mark.parametrize("name", TRAIN)
def test_model_training_step_aot_eager(name):
    # eval() keeps dropout off so eager and compiled runs are deterministic;
    # autograd runs as in training (grad enabled, backward through the graph)
    model, inputs = hf_zoo.build(name)
    ref = copy.deepcopy(model)
    loss_ref = _loss(ref(**inputs))
    loss_ref.backward()
    dynamo.reset()
    start = records.mark()
    opt = dynamo.optimize("aot_eager")(model)
    loss = _loss(opt(**inputs))
    loss.backward()
    recs = records.records_since(start)
    assert sum(len(r.graphs) for r in recs) == EXPECTED[name][0]
    assert sum(len(r.break_reasons) for r in recs) == EXPECTED[name][1]
    assert torch.allclose(loss, loss_ref, rtol=RTOL, atol=ATOL)
    n = 0
    for (pname, p), (_, q) in zip(model.named_parameters(), ref.named_parameters()):
        if q.grad is None:
            assert p.grad is None, pname
            continue
        assert p.grad is not None, pname
        assert torch.allclose(p.grad, q.grad, rtol=RTOL, atol=ATOL), (pname, (p.grad - q.grad).abs().max())
        n += 1
    assert n > 0
