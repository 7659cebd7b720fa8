"""torch's higher-order functions as libraries call them under compile
(issue 31): transformers' Mamba scan through torch._higher_order_ops'
associative_scan. Each counted: graphs and breaks of the first call,
outputs equal eager (torch's own implementation of the function)."""
import pytest
import torch

import dynamo
from dynamo import records
from dynamo.testing import CompileCounter, same

associative_scan = pytest.importorskip("torch._higher_order_ops.associative_scan").associative_scan


def run(fn, *args, graphs=1, breaks=0):
    """Compiled result of fn(*args), checked against eager, with (graphs,
    breaks) of its first call counted."""
    dynamo.reset()
    expected = fn(*args)
    cnt = CompileCounter()
    start = records.mark()
    got = dynamo.optimize(cnt)(fn)(*args)
    reasons = [b.reason for r in records.records_since(start) for b in r.break_reasons]
    assert (cnt.frame_count, len(reasons)) == (graphs, breaks), reasons
    assert same(expected, got)
    return cnt, reasons


# ------------------------------------------------ associative_scan
def selective_scan(a, b):
    # transformers' Mamba (modeling_mamba.py) when is_torchdynamo_compiling()
    def combine_fn(left, right):
        a_left, b_left = left
        a_right, b_right = right
        return a_left * a_right, a_right * b_left + b_right
    _, states = associative_scan(combine_fn, (a, b), dim=2, combine_mode="generic")
    return states.transpose(1, 2) * 2


def test_associative_scan_of_a_pytree_is_one_graph():
    a, b = torch.rand(2, 3, 5, 4), torch.randn(2, 3, 5, 4)
    cnt, _ = run(selective_scan, a, b)
    # one select per leaf and element, one combine (2 mul, 1 add) per step,
    # one stack per leaf, and the transpose and mul after
    assert cnt.op_count == 2 * 5 + 3 * 4 + 2 + 2
    # the recurrence the sequential loop computes, exactly
    state, states = torch.zeros(2, 3, 4), []
    for i in range(5):
        state = a[:, :, i] * state + b[:, :, i]
        states.append(state)
    assert torch.equal(dynamo.optimize(CompileCounter())(selective_scan)(a, b),
                       torch.stack(states, 1) * 2)


def test_associative_scan_reverse_and_negative_dim():
    def suffix_sums(x):
        return associative_scan(lambda l, r: l + r, x, dim=-1, reverse=True, combine_mode="generic")
    x = torch.randn(3, 6)
    run(suffix_sums, x)
    got = dynamo.optimize(CompileCounter())(suffix_sums)(x)
    assert same(got, x.flip(-1).cumsum(-1).flip(-1))

    def prefix_max_list(x, y):
        out = associative_scan(lambda l, r: [torch.maximum(l[0], r[0]), l[1] * r[1]], [x, y], 0,
                               combine_mode="generic")
        return out[0], out[1]
    run(prefix_max_list, torch.randn(4, 3), torch.rand(4, 3))


def test_associative_scan_torch_rejects_runs_eagerly():
    # pointwise mode needs CUDA: torch raises, so the call runs eagerly
    def pointwise_on_cpu(x):
        y = x * 2
        try:
            y = associative_scan(lambda l, r: l + r, y, dim=0)
        except ValueError:
            pass
        return y + 1
    _, reasons = run(pointwise_on_cpu, torch.randn(4), graphs=2, breaks=1)
    assert "pointwise mode" in reasons[0]
