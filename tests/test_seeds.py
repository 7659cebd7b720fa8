"""The seed documents' examples, verbatim except for the import line."""
import contextlib
import io
import traceback as tb
from typing import List

import numpy as np
import pytest
import scipy.fft
import torch

import dynamo
import dynamo as torchdynamo
from dynamo.testing import CompileCounter, same
from seed_examples import toy_example


def graphs_of(counter):
    return [[n.target if n.op != "call_method" else n.target for n in gm.graph.nodes
             if n.op.startswith("call_")] for gm in counter.graphs]


# ---------------------------------------------------------------- seed 001

def test_readme_cos_sin_one_graph_three_ops():
    printed = io.StringIO()

    def my_compiler(gm: torch.fx.GraphModule, example_inputs: List[torch.Tensor]):
        with contextlib.redirect_stdout(printed):
            print("my_compiler() called with FX graph:")
            gm.graph.print_tabular()
        return gm.forward

    cnt = CompileCounter()

    def both(gm, ex):
        cnt(gm, ex)
        return my_compiler(gm, ex)

    @torchdynamo.optimize(both)
    def fn(x, y):
        a = torch.cos(x)
        b = torch.sin(y)
        return a + b

    x, y = torch.randn(10), torch.randn(10)
    assert same(fn(x, y), torch.cos(x) + torch.sin(y))
    assert cnt.frame_count == 1 and cnt.op_count == 3
    text = printed.getvalue()
    assert "placeholder" in text and "cos" in text and "sin" in text and "add" in text


def test_readme_mock_module_one_graph():
    class MockModule(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.relu = torch.nn.ReLU()

        def forward(self, x):
            return self.relu(torch.cos(x))

    cnt = CompileCounter()
    mod = MockModule()
    optimized_mod = torchdynamo.optimize(cnt)(mod)
    x = torch.randn(10)
    assert same(optimized_mod(x), mod(x))
    assert cnt.frame_count == 1 and cnt.op_count == 2


def test_toy_example_100_calls_three_graphs():
    cnt = CompileCounter()
    opt = torchdynamo.optimize(cnt)(toy_example)
    torch.manual_seed(0)
    for _ in range(100):
        a, b = torch.randn(10), torch.randn(10)
        assert same(opt(a, b), toy_example(a, b))
    assert cnt.frame_count == 3
    ops = sorted(graphs_of(cnt), key=len, reverse=True)
    import operator
    assert ops[0] == [torch.abs, operator.add, operator.truediv, "sum", operator.lt]
    assert ops[1] == [operator.mul, operator.mul]
    assert ops[2] == [operator.mul]


def test_toy_example_debug_printout():
    torchdynamo.config.debug = True
    opt = torchdynamo.optimize("eager")(toy_example)
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        opt(torch.randn(10), torch.randn(10))
    text = out.getvalue()
    assert "__compiled_fn_" in text
    assert "opcode" in text and "placeholder" in text
    assert "ORIGINAL BYTECODE toy_example" in text
    assert "MODIFIED BYTECODE toy_example" in text
    assert "__resume_at_" in text
    assert "GUARDS:" in text
    assert " - local 'a' TENSOR_MATCH" in text
    assert " - local 'b' TENSOR_MATCH" in text
    assert " - global 'torch' FUNCTION_MATCH" in text


def test_nopython_raises_generic_jump():
    opt = torchdynamo.optimize("eager", nopython=True)(toy_example)
    with pytest.raises(dynamo.exc.Unsupported) as info:
        opt(torch.randn(10), torch.randn(10))
    msg = str(info.value)
    assert "generic_jump TensorVariable()" in msg
    assert "Processing original code:" in msg and "seed_examples.py" in msg
    assert "if b.sum() < 0:" in msg


# ---------------------------------------------------------------- seed 003

def test_fns(fn1, fn2, args):
    out1 = fn1(*args)
    out2 = fn2(*args)
    return torch.allclose(out1, out2)


test_fns.__test__ = False


def f1(x, y):
    if x.sum() < 0:
        return -y
    return y


def f2(x, y):
    return x + y


def f3(x):
    x = x * 2
    x = scipy.fft.dct(x.numpy())
    x = torch.from_numpy(x)
    x = x * 2
    return x


def bar(a, b):
    x = a / (torch.abs(a) + 1)
    if b.sum() < 0:
        b = b * -1
    return x * b


def test_tutorial_f1_both_branches():
    dynamo_f1 = dynamo.optimize("eager")(f1)
    inp1, inp2 = torch.randn(5, 5), torch.randn(5, 5)
    assert test_fns(f1, dynamo_f1, (inp1, inp2))
    assert test_fns(f1, dynamo_f1, (-inp1, inp2))


def test_tutorial_f2_int_argument():
    cnt = CompileCounter()
    dynamo_f2 = dynamo.optimize(cnt)(f2)
    assert test_fns(f2, dynamo_f2, (torch.randn(5, 5), 3))
    assert test_fns(f2, dynamo_f2, (torch.randn(5, 5), 3))
    assert cnt.frame_count == 1
    assert test_fns(f2, dynamo_f2, (torch.randn(5, 5), 4))   # new constant: recompile
    assert cnt.frame_count == 2


@pytest.mark.skipif(torch.empty(0).device.type != "cpu",
                    reason="f3 calls Tensor.numpy(), which eager runs on CPU tensors only "
                           "(DYNAMO_TEST_DEVICE)")
def test_tutorial_f3_numpy_call_breaks():
    cnt = CompileCounter()
    dynamo_f3 = dynamo.optimize(cnt)(f3)
    inp2 = torch.randn(5, 5)
    assert test_fns(f3, dynamo_f3, (inp2,))
    assert cnt.frame_count >= 2   # the graph before the numpy call, and after it


def test_tutorial_bar_three_graphs_two_calls():
    cnt = CompileCounter()
    opt_bar = dynamo.optimize(cnt)(bar)
    inp1, inp2 = torch.randn(10), torch.randn(10)
    assert same(opt_bar(inp1, inp2), bar(inp1, inp2))
    assert same(opt_bar(inp1, -inp2), bar(inp1, -inp2))
    assert cnt.frame_count == 3


def test_tutorial_explain_bar():
    explanation, out_guards, graphs, ops_per_graph, break_reasons, explanation_verbose = \
        dynamo.explain(bar, torch.randn(10), torch.randn(10))
    assert len(graphs) == 2
    assert len(break_reasons) == 1
    assert "generic_jump" in break_reasons[0].reason
    assert "2 graphs" in explanation and "1 graph break" in explanation
    assert len(ops_per_graph) == 2 and out_guards
    assert "bar" in explanation_verbose
    res = dynamo.explain(bar)(torch.randn(10), torch.randn(10))
    assert res.graph_count == 2 and res.graph_break_count == 1
    assert res.op_count == sum(len(o) for o in res.ops_per_graph)


def test_tutorial_nopython_bar():
    opt_bar = dynamo.optimize("eager", nopython=True)(bar)
    with pytest.raises(dynamo.exc.Unsupported):
        opt_bar(torch.randn(10), torch.randn(10))


def test_tutorial_export():
    with pytest.raises(dynamo.exc.Unsupported):
        dynamo.export(bar, torch.randn(10), torch.randn(10))

    model = torch.nn.Sequential(torch.nn.Linear(16, 8), torch.nn.ReLU(), torch.nn.Linear(8, 4))
    x = torch.randn(3, 16)
    gm, guards = dynamo.export(model, x)
    assert isinstance(gm, torch.fx.GraphModule)
    assert same(gm(x), model(x))
    y = torch.randn(3, 16)
    assert same(gm(y), model(y))
    assert guards


def test_tutorial_custom_backend_module():
    def custom_backend(gm: torch.fx.GraphModule, example_inputs: List[torch.Tensor]):
        return gm.forward

    class MyModule(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = torch.nn.Linear(100, 10)

        def forward(self, x):
            return torch.nn.functional.relu(self.lin(x))

    mod = MyModule()
    opt_mod = dynamo.optimize(custom_backend)(mod)
    x = torch.randn(10, 100)
    assert same(opt_mod(x), mod(x))


@pytest.mark.parametrize("backend", ["eager", "aot_eager", "inductor"])
def test_tutorial_foo_named_backends(backend):
    def foo(x, y):
        a = torch.sin(x)
        b = torch.cos(x)
        return a + b
    opt_foo1 = dynamo.optimize(backend)(foo)
    x, y = torch.randn(10, 10), torch.randn(10, 10)
    assert same(opt_foo1(x, y), foo(x, y))


# ---------------------------------------------------------------- run mode

def test_run_mode_uses_cache_never_compiles():
    cnt = CompileCounter()
    opt = torchdynamo.optimize(cnt)(f2)
    a = torch.randn(4)
    opt(a, a)
    assert cnt.frame_count == 1
    with torchdynamo.run():
        assert same(f2(a, a), a + a)                   # cached entry is used
        f2(torch.randn(3, 3), torch.randn(3, 3))        # would need a compile
    assert cnt.frame_count == 1
    run_f2 = torchdynamo.run(f2)
    run_f2(torch.randn(2, 2), torch.randn(2, 2))
    assert cnt.frame_count == 1


def test_new_dtype_or_shape_compiles_second_entry():
    cnt = CompileCounter()
    opt = torchdynamo.optimize(cnt)(f2)
    opt(torch.randn(4), torch.randn(4))
    opt(torch.randn(4), torch.randn(4))
    assert cnt.frame_count == 1
    opt(torch.randn(4, dtype=torch.float64), torch.randn(4, dtype=torch.float64))
    assert cnt.frame_count == 2
    opt(torch.randn(5), torch.randn(5))
    assert cnt.frame_count == 3
    opt(torch.randn(4), torch.randn(4))
    assert cnt.frame_count == 3
