"""A live process for guard cost pictures (issue 30.2): tiny BERT and GPT-2
(tests/hf_zoo.py) compiled with the eager backend and called in a loop, so
dynamo-top can switch guard timing on (the g key, --guard-timing) and show
each frame's ns per lookup and its costliest guard-tree nodes.

    python tests/workloads/hf_guard_cost.py [--exit-after SECS] [--period SECS]

Prints "READY <pid>" once both models compiled.
"""
import argparse
import os
import sys
import time

import torch

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import hf_zoo  # noqa: E402

import dynamo  # noqa: E402


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--exit-after", type=float, default=None)
    ap.add_argument("--period", type=float, default=0.02)
    args = ap.parse_args(argv)
    models = []
    for name in ("bert", "gpt2"):
        model, inputs = hf_zoo.build(name)
        models.append((dynamo.optimize("eager")(model), inputs))
    with torch.no_grad():
        for opt, inputs in models:
            opt(**inputs)
        print(f"READY {os.getpid()}", flush=True)
        start = time.monotonic()
        while args.exit_after is None or time.monotonic() - start < args.exit_after:
            for opt, inputs in models:
                opt(**inputs)
            time.sleep(args.period)
    return 0


if __name__ == "__main__":
    sys.exit(main())
