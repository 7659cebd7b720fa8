"""Cost of one passing guard lookup of tiny BERT's wrapper frame (issue 26).

    python bench/wrapper_guards.py [--calls N] [--rounds R] [--per-guard]

Compiles tests/hf_zoo.py's BertModel with `dynamo.optimize("eager")`, takes
the entry of the frame the hook sees first (transformers' outermost
decorator wrapper of `BertModel.forward`, utils/generic.py), rebuilds its
guards as a one-entry C tree (`_C._tree_new`) and times `_C._tree_lookup`
on the call's arguments: best of R rounds of N lookups by thread CPU time,
less the lookup of an empty tree (the call's own cost). Also times the
guards whose source goes through the model's config (`.config`) as a tree
of their own. `--per-guard`: the costliest single guards (a one-guard tree
each, its source chain included). Not `config.guard_timing`: it sums the
hook's walks by wall clock, and on a loaded machine that mean is made by
the few walks the scheduler interrupted.
"""
import argparse
import os
import sys
import time
import types

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tests"))

import torch  # noqa: E402

import dynamo  # noqa: E402
from dynamo import _C  # noqa: E402
from dynamo.explain_miss import _bind  # noqa: E402


def best_us(tree, args, calls, rounds):
    """Best of `rounds` per-lookup times in us, by this thread's CPU time
    (a shared machine's other processes cost it less than wall time)."""
    best = float("inf")
    for _ in range(rounds):
        t = time.thread_time()
        for _ in range(calls):
            _C._tree_lookup(tree, *args)
        best = min(best, (time.thread_time() - t) / calls)
    return best * 1e6


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--calls", type=int, default=20000)
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--per-guard", action="store_true")
    opts = ap.parse_args()
    import hf_zoo
    model, inputs = hf_zoo.bert()
    opt = dynamo.optimize("eager")(model)
    with torch.no_grad():
        opt(**inputs)
        opt(**inputs)
    fwd = type(model).forward
    code = fwd.__code__
    record = _C.cache_entries(code)[0]
    f_locals = _bind(fwd, code, (model,), inputs)
    builtins = fwd.__globals__["__builtins__"]
    builtins = builtins.__dict__ if isinstance(builtins, types.ModuleType) else builtins
    args = (f_locals, fwd.__globals__, builtins, fwd.__closure__)
    lowered = [g.lower() for g in record.guards]
    config = [g.lower() for g in record.guards if ".config" in g.source.name()
              or "L['self'].config" in g.source.name()]
    generic = sum(1 for g in record.guards if "object.__getattribute__(" in g.source.name())
    with torch.no_grad():
        tree = _C._tree_new([(lowered, None)])
        assert _C._tree_lookup(tree, *args)[0] == 0, "the entry must pass"
        empty = best_us(_C._tree_new([([], None)]), args, opts.calls, opts.rounds)
        full = best_us(tree, args, opts.calls, opts.rounds) - empty
        cfg = best_us(_C._tree_new([(config, None)]), args, opts.calls, opts.rounds) - empty
        print(f"{code.co_filename}:{code.co_firstlineno}: {len(lowered)} guards, "
              f"{generic} through object.__getattribute__ sources")
        print(f"lookup {full:.2f} us (empty tree {empty:.2f} us subtracted); "
              f"the {len(config)} config guards alone {cfg:.2f} us")
        if opts.per_guard:
            costs = []
            for g, low in zip(record.guards, lowered):
                one = best_us(_C._tree_new([([low], None)]), args, 2000, 3) - empty
                costs.append((one, g.describe()))
            for one, text in sorted(costs, reverse=True)[:15]:
                print(f"{one * 1000:8.0f} ns {text[:160]}")


if __name__ == "__main__":
    main()
