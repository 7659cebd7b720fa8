"""t1 = t0 * sum(mod.parameters()) saves t0 (the input x) for the
parameter's gradient, then the program writes x through numpy (no version
bump): eager's backward read the overwritten memory (w's gradient NaN),
aot's used its own saved values (159.17). Undefined behaviour, as in
aot_numpy_write_into_saved_input_grads_undefined: the fuzzer already
skipped the inputs' gradients of such programs; it now skips the module
parameters' gradients too (compare(grads=False)). Found by fuzz seed
9201461 (device run on faf4b17)."""
REASON = "fuzzer: module gradients compared after a numpy write autograd cannot see"
BACKEND = "aot_eager"
SEED = 9201461
BODY = """
t1 = t0 * sum(p.sum() for p in mod.parameters())
t0 = t1.abs().sqrt()
arr_ = x.detach().numpy()
arr_[0] = 7
"""
CALLS = [
    {"shape": (4, 2), "n": 0, "fl": 0.5},
    {"shape": (4, 2), "n": 2.0, "fl": True},
    {"shape": (1, 4), "dtype": "int64", "n": 2.0, "fl": 0.0},
]
