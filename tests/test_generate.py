"""HF generate() with the model's forward compiled (issue 24, item 6):
tiny Llama and GPT-2 built from configs (2 layers, hidden 32, vocab 128,
seeded), greedy generation of a few tokens from a batch-1 prompt with its
attention mask, two rounds. Each test counts graphs, breaks, recompiles and
cache-limit records over both rounds and checks the tokens against eager.

DynamicCache: the prompt's graph, the first decode step's, then the cache
length becomes symbolic (automatic dynamic): 3 graphs, 2 recompiles, as
torch.compile makes. StaticCache: its `index_copy_` inside transformers'
`try` is traced (the write waits for the graph's end: dynamo/input_writes.py),
the prompt's graph and the decode step's: 2 graphs. A pure-torch cache object
passed in and returned shows the same mechanism without transformers.
bench/generate.py has the figures at 20 tokens and the timings.
"""
import pytest
import torch

import dynamo
from dynamo import records
from dynamo.testing import CompileCounter

PROMPT, TOKENS, ROUNDS = 6, 3, 2


@pytest.fixture(autouse=True)
def _fresh():
    dynamo.reset()
    yield
    dynamo.reset()


def build(name):
    tf = pytest.importorskip("transformers")
    tf.logging.set_verbosity_error()
    torch.manual_seed(0)
    if name == "llama":
        cfg = tf.LlamaConfig(vocab_size=128, hidden_size=32, intermediate_size=64,
                             num_hidden_layers=2, num_attention_heads=4,
                             num_key_value_heads=2, max_position_embeddings=64)
        model = tf.LlamaForCausalLM(cfg)
    else:
        model = tf.GPT2LMHeadModel(tf.GPT2Config(vocab_size=128, n_embd=32, n_layer=2,
                                                 n_head=4, n_positions=64))
    model.generation_config.pad_token_id = 0
    model.generation_config.disable_compile = True
    return model.eval()


def generate(model, cache):
    ids = torch.randint(1, 128, (1, PROMPT), generator=torch.Generator().manual_seed(1))
    kw = dict(max_new_tokens=TOKENS, min_new_tokens=TOKENS, do_sample=False)
    if cache == "static":
        kw["cache_implementation"] = "static"
    with torch.no_grad():
        return model.generate(input_ids=ids, attention_mask=torch.ones_like(ids), **kw)


def compiled_rounds(name, cache):
    """(eager tokens, [compiled tokens per round], counts over the rounds)."""
    model = build(name)
    ref = generate(model, cache)
    mark = records.mark()
    cnt = CompileCounter()
    model.forward = dynamo.optimize(cnt)(model.forward)
    outs = [generate(model, cache) for _ in range(ROUNDS)]
    recs = records.records_since(mark)
    limit = records.STATUS["LIMIT"]
    counts = dict(graphs=cnt.frame_count,
                  breaks=[b.reason for r in recs for b in r.break_reasons],
                  recompiles=[r.recompile_reason for r in recs
                              if r.recompile_reason is not None and r.status != limit],
                  limit=sum(1 for r in recs if r.status == limit))
    return ref, outs, counts


@pytest.mark.parametrize("name", ["llama", "gpt2"])
def test_dynamic_cache_generate_is_three_graphs_and_equal(name):
    ref, outs, c = compiled_rounds(name, "dynamic")
    assert all(torch.equal(o, ref) for o in outs)
    assert c["breaks"] == [] and c["limit"] == 0
    assert c["graphs"] == 3 and len(c["recompiles"]) == 2, c
    # prompt -> first step (the new length), then the cache length changes
    assert "input_ids" in c["recompiles"][0] and "keys" in c["recompiles"][1]


@pytest.mark.parametrize("name", ["llama", "gpt2"])
def test_static_cache_generate_traces_the_cache_writes_whole(name):
    ref, outs, c = compiled_rounds(name, "static")
    assert all(torch.equal(o, ref) for o in outs)
    assert c["breaks"] == [] and c["limit"] == 0
    assert c["graphs"] == 2 and len(c["recompiles"]) == 1, c


class Cache:
    """A static KV cache in small: written in place inside a try, like
    transformers' StaticLayer.update (index_copy_, slice write on failure)."""

    def __init__(self, length, width):
        self.keys = torch.zeros(length, width)

    def update(self, pos, value):
        try:
            self.keys.index_copy_(0, pos, value)
        except NotImplementedError:
            self.keys[pos] = value
        return self.keys


def step(x, cache, pos):
    keys = cache.update(pos, x)
    return (keys.sum(0) * x).sum(-1), cache


def test_cache_object_written_in_a_try_is_passed_in_and_returned():
    width, length = 4, 6
    eager_cache, cache = Cache(length, width), Cache(length, width)
    cnt = CompileCounter()
    opt = dynamo.optimize(cnt)(step)
    keys = cache.keys
    for i in range(length):
        x = torch.full((1, width), float(i + 1))
        pos = torch.tensor([i])
        ref, _ = step(x, eager_cache, pos)
        out, back = opt(x, cache, pos)
        assert back is cache and cache.keys is keys and torch.equal(out, ref)
    assert torch.equal(cache.keys, eager_cache.keys)
    assert cnt.frame_count == 1             # one graph, every position hits it
    ops = [n.target for n in cnt.graphs[0].graph.nodes if n.op == "call_method"]
    assert "index_copy_" in ops and ops[-1] == "copy_"


def test_cache_write_out_of_range_reruns_eagerly_and_raises_as_eager():
    """The graph raises at the write (an index only the kernel sees): the
    frame re-runs eagerly, which raises eager's error; the cache is untouched."""
    from dynamo.utils import counters
    counters.clear()
    cache = Cache(3, 2)
    opt = dynamo.optimize("eager")(step)
    opt(torch.ones(1, 2), cache, torch.tensor([0]))
    before = cache.keys.clone()
    with pytest.raises((IndexError, RuntimeError)) as compiled:
        opt(torch.ones(1, 2), cache, torch.tensor([5]))
    with pytest.raises((IndexError, RuntimeError)) as eager:
        step(torch.ones(1, 2), Cache(3, 2), torch.tensor([5]))
    assert type(compiled.value) is type(eager.value)
    assert torch.equal(cache.keys, before)
    # step's graph raised; its eager re-run compiles update(), whose graph raises too
    assert counters["frames"]["graph_raised_rerun_eagerly"] == 2
