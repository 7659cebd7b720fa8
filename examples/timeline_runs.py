"""Runs to record and draw with `dynamo-dot --timeline` (docs/img/timeline-*.png).

    DYNAMO_TRACE=/tmp/trace python examples/timeline_runs.py storm
    build/bin/dynamo-dot --timeline /tmp/trace/dynamo-trace-<pid>.jsonl -T html -o t.html
    chromium --headless --screenshot=t.png --window-size=1320,900 t.html

storm     one function called with 20 int values, ints specialized and
          automatic dynamic off: a first compile, 7 recompiles on L['n'],
          then the cache limit (and a graph break on n == 3)
static    tiny BERT (2 layers, hidden 64) on 6 batch/sequence shapes with
          automatic dynamic off: a recompile per shape
bert      the same calls with automatic dynamic on (the default): one
          recompile makes the sizes symbolic, then the cache hits
gpt2      GPT-2 (2 layers, hidden 64, bench/generate.py's builder): a forward,
          then 3 rounds of generate(12 tokens) with the forward compiled
"""
import os
import sys
import time

import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                                "bench"))
import dynamo  # noqa: E402


def storm():
    dynamo.config.automatic_dynamic_shapes = False
    dynamo.config.specialize_int = True

    @dynamo.optimize("eager")
    def step(x, n):
        y = x * n
        if n == 3:
            print("three")
        return y + 1

    x = torch.randn(4)
    for i in range(20):
        step(x, i)
        time.sleep(0.02)


def bert(dynamic=True):
    import transformers
    dynamo.config.automatic_dynamic_shapes = dynamic
    torch.manual_seed(0)
    cfg = transformers.BertConfig(vocab_size=100, hidden_size=64, num_hidden_layers=2,
                                  num_attention_heads=2, intermediate_size=128,
                                  max_position_embeddings=64)
    model = dynamo.optimize("eager")(transformers.BertModel(cfg).eval())
    with torch.no_grad():
        for b, s in [(1, 8), (1, 8), (2, 8), (2, 16), (3, 11), (4, 23), (4, 23), (1, 5)]:
            model(input_ids=torch.randint(0, 100, (b, s)),
                  attention_mask=torch.ones(b, s, dtype=torch.long))
            time.sleep(0.02)


def gpt2():
    import generate
    model = generate.build("gpt2")
    model.forward = dynamo.optimize("eager")(model.forward)
    with torch.no_grad():
        model(**generate.prompt())
    for _ in range(3):
        generate.generate(model, 12, "dynamic")


if __name__ == "__main__":
    what = sys.argv[1] if len(sys.argv) > 1 else "storm"
    {"storm": storm, "static": lambda: bert(False), "bert": bert, "gpt2": gpt2}[what]()
