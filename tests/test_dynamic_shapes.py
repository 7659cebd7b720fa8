"""Shapes that change from call to call (issue 24): the cache limit policy,
automatic dynamic shapes, mark_dynamic, shape guards. Every test counts
compiles and hits."""
import warnings

import torch

import dynamo
from dynamo import _C
from dynamo.testing import CompileCounter, same

SIZES = list(range(2, 22))          # 20 batch sizes


def mlp():
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Linear(32, 64), torch.nn.ReLU(),
                               torch.nn.Linear(64, 8)).eval()


def forward_code(m):
    return type(m).forward.__code__


def test_cache_limit_keeps_serving_the_compiled_shapes():
    """Static shapes only: 8 compiles, the limit, then the 8 compiled batch
    sizes still hit in the second round and only the others run eagerly;
    the warning names the dimension and suggests mark_dynamic."""
    m = mlp()
    cnt = CompileCounter()
    cm = dynamo.optimize(cnt)(m)
    with warnings.catch_warnings(record=True) as w, torch.no_grad():
        warnings.simplefilter("always")
        for _ in range(2):
            for b in SIZES:
                x = torch.randn(b, 32)
                assert same(cm(x), m(x))
    msgs = [str(x.message) for x in w if "cache_size_limit" in str(x.message)]
    assert len(msgs) == 1
    assert "L['input'].size()[0]" in msgs[0] and "dimension 0 keeps changing" in msgs[0]
    assert "compiled for 2, 3, 4, 5, 6, 7, 8, 9" in msgs[0] and "this call 10" in msgs[0]
    assert "dynamo.mark_dynamic(input, 0)" in msgs[0]
    assert cnt.frame_count == 8
    stats = _C.tree_stats(forward_code(m))
    assert stats["entries"] == 8 and stats["hits"] == 8     # round 2: sizes 2..9
