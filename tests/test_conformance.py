"""Behaviours code written for TorchDynamo relies on (frame filtering, state
carried across breaks, recompile reporting), each checked by counting
compile records, frames, graphs and ops."""
import logging

import pytest
import torch

import dynamo
from dynamo import config, records
from dynamo.testing import CompileCounter, same, unsupported


def _compiled_names():
    return [r.name for r in records.all_records()]


# ------------------------------------------------ frames with no torch work

def add_plain(a, b):
    return a + b


def identity(x):
    return x


def test_frame_without_tensors_is_not_compiled_inside_a_block():
    cnt = CompileCounter()
    with dynamo.optimize(cnt):
        assert add_plain(2, 3) == 5
        assert add_plain(torch.ones(2), 1).tolist() == [2.0, 2.0]
    # the int call made no compile record and no cache entry; the tensor call did
    assert _compiled_names().count("add_plain") == 1
    assert len(dynamo._C.cache_entries(add_plain.__code__)) == 1
    assert (cnt.frame_count, cnt.op_count) == (1, 1)


def test_list_containing_itself_is_skipped_not_a_recursion_error():
    x = []
    x.append(x)
    cnt = CompileCounter()
    with dynamo.optimize(cnt, nopython=True):
        assert identity(x) is x
    assert cnt.frame_count == 0
    assert "identity" not in _compiled_names()


def test_list_subclass_is_not_iterated_by_the_filter():
    class Strict(list):
        def __iter__(self):
            raise AssertionError("iterated")

        def __len__(self):
            raise AssertionError("len() taken")

    def first_two(x):
        return x[0] + x[1]

    x = Strict()
    list.append(x, torch.ones(2))
    list.append(x, torch.ones(2))
    cnt = CompileCounter()
    with dynamo.optimize(cnt, nopython=True):
        assert first_two(x).tolist() == [2.0, 2.0]
    assert cnt.frame_count == 0 and "first_two" not in _compiled_names()


def test_tensor_found_in_nested_containers_objects_and_closures():
    class Box:
        def __init__(self, t):
            self.t = t

    c = torch.ones(2)

    def from_closure(n):
        return c + n

    def from_box(d):
        return d["k"][0].t + 1

    cnt = CompileCounter()
    with dynamo.optimize(cnt):
        from_closure(1)
        from_box({"k": (Box(torch.ones(2)),)})
    assert cnt.frame_count == 2
    assert {"from_closure", "from_box"} <= set(_compiled_names())


def test_function_handed_to_optimize_is_compiled_even_without_tensors():
    cnt = CompileCounter()
    fn = dynamo.optimize(cnt)(add_plain)
    assert fn(2, 3) == 5
    assert _compiled_names() == ["add_plain"]
    assert cnt.frame_count == 0


def test_self_containing_list_with_a_tensor_is_unsupported_not_recursion():
    def fn(x, lst):
        return x + lst[0]

    lst = [torch.ones(1)]
    lst.append(lst)
    with pytest.raises(dynamo.exc.Unsupported, match="contains itself"):
        dynamo.optimize_assert(CompileCounter())(fn)(torch.ones(2), lst)
