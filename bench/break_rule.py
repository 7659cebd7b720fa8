"""How bench/zoo.py's break counts read each compiler, on small functions
whose cuts are known (issue 31: "one counting rule for both").

For each case: ours' graphs and breaks as zoo.py counts them (the break
reasons of every compile record, also of a record whose frame ran eagerly)
and only those of records whose frame was cut (status "ok"); torch.compile's
graphs, its counters["graph_break"] (zoo.py's count) and the cuts its
OutputGraph.compile_subgraph made with a graph-break reason (a wrapper of
that method here, only to count; nothing else changes). Where the two torch
columns differ, torch.compile cut its frame but zoo.py does not count it.

Usage: python bench/break_rule.py
"""
import os
import sys

import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))


def inner(y):
    if y.sum() > 0:              # a jump on a tensor in a called function
        y = y + 1
    return y * 2


def jump(x):
    y = x * 2
    if y.sum() > 0:              # a jump on a tensor
        y = y + 1
    return y - 1


def nested_jump(x):
    return inner(x * 2) - 1


def item(x):
    return x * int(x.sum())      # Tensor.item(): a call that breaks


def try_finally(x):
    y = x * 2
    try:
        y = y * int(y.sum())     # a break inside try/finally
    finally:
        pass
    return y + 1


CASES = [jump, nested_jump, item, try_finally]


def ours(fn, x):
    import dynamo
    from dynamo import records
    from dynamo.testing import CompileCounter
    dynamo.reset()
    cnt = CompileCounter()
    start = records.mark()
    dynamo.optimize(cnt)(fn)(x)
    recs = records.records_since(start)
    dynamo.reset()          # its resume functions out of this module's globals
    return (cnt.frame_count, sum(len(r.break_reasons) for r in recs),
            sum(len(r.break_reasons) for r in recs if r.status == records.STATUS["OK"]))


def torch_compile(fn, x):
    import torch._dynamo as td
    from torch._dynamo import output_graph
    from torch._dynamo.utils import counters
    cuts = []
    original = output_graph.OutputGraph.compile_subgraph

    def counted(self, tx, *args, **kwargs):
        reason = kwargs.get("reason")
        if reason is not None and reason.graph_break:
            cuts.append(reason.reason)
        return original(self, tx, *args, **kwargs)
    output_graph.OutputGraph.compile_subgraph = counted
    try:
        td.reset()
        counters.clear()
        seen = []

        def backend(gm, example_inputs):
            seen.append(gm)
            return gm.forward
        torch.compile(fn, backend=backend)(x)
        return len(seen), sum(counters["graph_break"].values()), len(cuts)
    finally:
        output_graph.OutputGraph.compile_subgraph = original


def main():
    import logging
    logging.disable(logging.WARNING)
    x = torch.ones(4)
    print(f"{'case':14s} {'ours g/breaks(zoo)/breaks(cut frames)':40s} "
          f"{'torch g/graph_break counter(zoo)/cuts':40s}")
    for fn in CASES:
        o, t = ours(fn, x), torch_compile(fn, x)
        print(f"{fn.__name__:14s} {'%d/%d/%d' % o:40s} {'%d/%d/%d' % t:40s}")
    import torch._dynamo as td
    td.reset()


if __name__ == "__main__":
    main()
