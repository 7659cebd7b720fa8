"""Break impact pictures on real models (issue 30, item 4): a graph break
placed as a user hits one, in code around a transformers model.

- `--model bert`: a tiny BERT (tests/hf_zoo.py) called from a user's
  `classify(batch)` that logs a scalar (`.item()`) and prints it between
  the encoder and the pooling: two breaks after the model's graph;
- `--model gpt2-generate`: a user's greedy decoding loop over a tiny GPT-2
  that stops at an end token, checked with `.item()` each step (the
  data-dependent stop breaks every iteration's graph).

Guard timing is on (1 of every 4 lookups) and every break's eager region
timed (break_sample_period 1).  Prints "READY <pid>" after the first
rounds, then runs until killed (or --exit-after SECONDS).  Used to make
docs/img/dynamo-top-breaks-bert.txt, dynamo-dot-breaks-bert.png and their
gpt2-generate twins.
"""
import argparse
import os
import sys
import time

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(os.path.dirname(HERE)))
sys.path.insert(0, os.path.dirname(HERE))
import dynamo  # noqa: E402
import hf_zoo  # noqa: E402


def bert():
    model, inputs = hf_zoo.build("bert")
    model.eval()

    def classify(batch):
        out = model(**batch)
        score = out.last_hidden_state[:, 0].norm().item()   # break 1: a scalar to log
        print(f"score {score:.3f}", file=sys.stderr)         # break 2: the log line
        return out.last_hidden_state.mean(1)
    return classify, (inputs,)


def gpt2_generate(eos=-1, new_tokens=8):
    model, inputs = hf_zoo.build("gpt2")
    model.eval()

    def generate(ids):
        for _ in range(new_tokens):
            logits = model(input_ids=ids).logits
            nxt = logits[:, -1].argmax(-1, keepdim=True)
            ids = torch.cat([ids, nxt], 1)
            if nxt[0, 0].item() == eos:                      # break: the stop test
                break
        return ids
    return generate, (inputs["input_ids"],)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", choices=("bert", "gpt2-generate"), default="bert")
    ap.add_argument("--exit-after", type=float, default=None)
    ap.add_argument("--rounds", type=int, default=5)
    args = ap.parse_args()
    dynamo.config.break_sample_period = 1
    fn, call_args = bert() if args.model == "bert" else gpt2_generate()
    compiled = dynamo.optimize("eager")(fn)
    with torch.no_grad():
        for _ in range(args.rounds):
            compiled(*call_args)
        dynamo.config.guard_timing = 4
        for _ in range(args.rounds):
            compiled(*call_args)
        print("READY", os.getpid(), flush=True)
        end = None if args.exit_after is None else time.monotonic() + args.exit_after
        while end is None or time.monotonic() < end:
            compiled(*call_args)
            time.sleep(0.02)


if __name__ == "__main__":
    main()
