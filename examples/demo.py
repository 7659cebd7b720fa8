"""The seed toy example under dynamo, with config.debug printouts.

Prints, per compile, the captured fx graph, the original and the modified
bytecode and the guards; then checks 100 random calls against eager and
reports how many graphs were compiled (3: the code before the `if`, and one
graph for each branch's resume function).
"""
from typing import List

import torch

import dynamo
import dynamo.testing

counter = dynamo.testing.CompileCounter()


def my_compiler(gm: torch.fx.GraphModule, example_inputs: List[torch.Tensor]):
    # config.debug below prints each graph already; just count and run it
    return counter(gm, example_inputs)


def toy_example(a, b):
    x = a / (torch.abs(a) + 1)
    if b.sum() < 0:
        b = b * -1
    return x * b


def main():
    dynamo.config.debug = True
    opt = dynamo.optimize(my_compiler)(toy_example)
    torch.manual_seed(0)
    for i in range(100):
        a, b = torch.randn(10), torch.randn(10)
        assert dynamo.testing.same(opt(a, b), toy_example(a, b))
    dynamo.config.debug = False
    print(f"\n100 calls, results equal to eager; graphs compiled: {counter.frame_count}, "
          f"ops: {counter.op_count}")
    print()
    print(dynamo.explain(toy_example)(torch.randn(10), torch.randn(10)))


if __name__ == "__main__":
    main()
