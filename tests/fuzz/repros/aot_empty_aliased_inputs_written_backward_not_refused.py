"""t0 = x.detach(), then a numpy break; the next graph takes x and t0
(one storage), multiplies t0 by the module's parameter (eager saves t0)
and writes x[0]. Of shape (2, 0): eager's backward refuses (t0's version
changed), ours ran, because the runtime's aliasing check of written
inputs compared data pointers, and empty storages have none, so aot ran
with the two as unrelated inputs. Found by fuzz seed 9010644 (device run
on 4be1d93); test_written_input_aliasing_another_is_found_when_empty."""
REASON = "aot_eager: aliasing of empty inputs unseen, a backward eager refuses ran"
BACKEND = "aot_eager"
BODY = """
t0 = t0.detach()
i0 = int(np.sum(l0)) % 7
t0 = mod(t0)
x[0] = i0
"""
CALLS = [
    {"shape": (2, 0), "requires_grad": False, "n": True, "fl": 1, "lst": []},
]
