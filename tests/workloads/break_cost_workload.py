"""A workload for break impact (issue 30, item 4): a tiny GPT-2
(tests/hf_zoo.py) decoding step with two graph breaks, one cheap and one
costly, so that ranking breaks by count or by order names the wrong one.

- break 1, `logits[:, -1].max().item()`: a scalar read for a log line (a
  sync, little eager work);
- break 2, `sample_in_python(logits)`: a sampler written in Python (a
  softmax over the vocabulary per row with `math.exp`), marked
  torch.compiler.disable as such helpers are: the costly eager code
  between the model's graph and the rest of the step.

Prints "READY <pid>" after the first steps, then steps until killed (or
--exit-after SECONDS); --snapshot FILE saves a snapshot and exits.  Used by
tests/test_break_cost.py and to make docs/img/dynamo-top-breaks-gpt2.txt
and docs/img/dynamo-dot-breaks-gpt2.png.
"""
import argparse
import math
import os
import sys
import time

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(os.path.dirname(HERE)))
sys.path.insert(0, os.path.dirname(HERE))
import dynamo  # noqa: E402
import hf_zoo  # noqa: E402


@torch.compiler.disable
def sample_in_python(logits):
    """Greedy pick through a Python softmax over each row's last logits."""
    picks = []
    for row in logits[:, -1].tolist():
        top = max(row)
        weights = [math.exp(v - top) for v in row]
        total = sum(weights)
        probs = [w / total for w in weights]
        picks.append(max(range(len(probs)), key=probs.__getitem__))
    return torch.tensor(picks).unsqueeze(1)


def build():
    torch.manual_seed(0)
    model, inputs = hf_zoo.gpt2()
    model.eval()

    def step(ids):
        logits = model(input_ids=ids).logits
        top = logits[:, -1].max().item()          # break 1: a scalar for the log
        nxt = sample_in_python(logits)            # break 2: the Python sampler
        return torch.cat([ids, nxt], 1), top
    return step, inputs["input_ids"]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--exit-after", type=float, default=None)
    ap.add_argument("--snapshot", default=None)
    ap.add_argument("--steps", type=int, default=20)
    args = ap.parse_args()
    dynamo.config.break_sample_period = 1
    step, ids = build()
    compiled = dynamo.optimize("eager")(step)
    with torch.no_grad():
        for _ in range(args.steps):
            compiled(ids)
        if args.snapshot:
            dynamo.save_snapshot(args.snapshot)
            return
        print("READY", os.getpid(), flush=True)
        end = None if args.exit_after is None else time.monotonic() + args.exit_after
        while end is None or time.monotonic() < end:
            compiled(ids)
            time.sleep(0.01)


if __name__ == "__main__":
    main()
