"""Behaviour that torchdynamo 1.13's test_misc checks (the peer suite in
../shared/peer), written as our own tests: each counts frames, graphs and
ops, not just outputs."""
import pytest
import torch

import dynamo
from dynamo.testing import CompileCounter, same


def test_is_tensor_like_folds_from_the_value_type():
    def f(x):
        if torch.overrides.is_tensor_like(x):
            return x * 2
        return torch.ones(3) + x

    cnt = CompileCounter()
    opt = dynamo.optimize(cnt, nopython=True)(f)
    x = torch.randn(3)
    assert same(opt(x), x * 2)
    assert same(opt(4), torch.ones(3) + 4)
    # one frame per input kind (mul; ones + add), no break under nopython
    assert (cnt.frame_count, cnt.op_count) == (2, 3)
