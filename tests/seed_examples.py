"""The seed documents' toy example, one copy for every test file that runs
it (test_seeds.py, test_tracer.py): the function whose `if b.sum() < 0`
breaks the graph and gives the three graphs of the README."""
import torch


def toy_example(a, b):
    x = a / (torch.abs(a) + 1)
    if b.sum() < 0:
        b = b * -1
    return x * b
