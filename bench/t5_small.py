"""bench/gpu_real.py's T5 (T5Model with input_ids and decoder_input_ids)
on CPU at a small size, for counts (issue 26's T5 part, issue 31): graphs
and breaks of dynamo's capture, a second call's recompiles, outputs equal
eager, and Python function calls per step (cProfile over 20 calls) of
eager, dynamo and torch.compile, both compilers with the "eager" backend.
Only bench/ may import torch's own compiler, and only to compare.

Usage: python bench/t5_small.py
"""
import cProfile
import os
import pstats
import sys
import warnings

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
warnings.filterwarnings("ignore")

import torch  # noqa: E402
import dynamo  # noqa: E402
from dynamo import records  # noqa: E402
from dynamo.testing import CompileCounter  # noqa: E402


def py_calls(fn, inp, n=20):
    pr = cProfile.Profile()
    pr.enable()
    for _ in range(n):
        fn(**inp)
    pr.disable()
    return pstats.Stats(pr).total_calls // n


def main():
    from transformers import T5Config, T5Model
    torch.set_num_threads(1)
    cfg = T5Config(d_model=64, d_ff=128, d_kv=16, num_layers=2, num_decoder_layers=2, num_heads=4,
                   vocab_size=256)
    torch.manual_seed(0)
    model = T5Model(cfg).eval()
    g = torch.Generator().manual_seed(1)
    inp = dict(input_ids=torch.randint(0, 256, (2, 16), generator=g),
               decoder_input_ids=torch.randint(0, 256, (2, 16), generator=g))
    with torch.no_grad():
        ref = model(**inp).last_hidden_state
        cnt = CompileCounter()
        start = records.mark()
        ours = dynamo.optimize(cnt)(model)
        out = ours(**inp).last_hidden_state
        reasons = [b.reason for r in records.records_since(start) for b in r.break_reasons]
        graphs = cnt.frame_count
        ours(**inp)
        theirs = torch.compile(model, backend="eager")
        theirs(**inp)
        print(f"graphs {graphs} breaks {len(reasons)} recompiles {cnt.frame_count - graphs} "
              f"equal {torch.allclose(ref, out, rtol=1e-4, atol=1e-5)}; Python calls per step: "
              f"eager {py_calls(model, inp)} ours {py_calls(ours, inp)} "
              f"torch.compile {py_calls(theirs, inp)}")
        for reason in sorted(set(reasons)):
            print("  break:", reason)


if __name__ == "__main__":
    main()
