"""config.inductor_kernel_timing = "device" (dynamo/backends/kernel_timing.py):
the Triton autotuners of the modules Inductor loads for our graphs are
timed by CUDA-graph replays; anything else keeps Inductor's timing, and a
failure falls back to it. The CPU tests check which autotuners are patched
and when Inductor's timing is kept; the CUDA ones time real launches."""
import math
import types

import pytest
import torch

import dynamo
from dynamo.backends import kernel_timing
from dynamo.backends.registry import lookup
from torch._inductor.runtime.triton_heuristics import CachingAutotuner

cuda = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")


def counting_inductor(graphs):
    """The inductor backend, recording each graph it is given."""
    inductor = lookup("inductor")[1]

    def backend(gm, example_inputs):
        graphs.append(gm)
        return inductor(gm, example_inputs)
    return backend


def fake_autotuner(device="cuda", mutated=(), reset=(), custom=False):
    """A CachingAutotuner without Inductor's constructor, whose own timing
    returns the sentinel 123.0 and records its calls."""
    class Tuner(CachingAutotuner):
        def bench(self, launcher, *args, with_profiler=False, **kwargs):
            self.inductor_calls.append((launcher, args))
            return 123.0

    t = Tuner.__new__(Tuner)
    t.inductor_calls = []
    t.device_props = types.SimpleNamespace(type=device)
    t.mutated_arg_names = list(mutated)
    t.reset_to_zero_arg_names = list(reset)
    t.custom_kernel = custom
    t.inductor_meta = {"spill_threshold": 16}
    return t


class PicklableTuner(CachingAutotuner):
    """fake_autotuner's timing on a class pickle finds by name."""
    def bench(self, launcher, *args, with_profiler=False, **kwargs):
        self.inductor_calls.append((launcher, args))
        return 123.0


def loaded_module(monkeypatch, **values):
    """A module appended to Inductor's code cache, as a compile loads one."""
    from torch._inductor.codecache import PyCodeCache
    mod = types.ModuleType("fake_inductor_output")
    vars(mod).update(values)
    monkeypatch.setattr(PyCodeCache, "modules", list(PyCodeCache.modules) + [mod])
    return mod


def test_only_the_autotuners_of_modules_loaded_after_the_start_are_patched(monkeypatch):
    before = loaded_module(monkeypatch, old=fake_autotuner())
    start = kernel_timing.module_count()
    loaded_module(monkeypatch, k1=fake_autotuner(), k2=fake_autotuner(), other=object(), n=3)
    assert kernel_timing.instrument_new_modules(start) == 2
    assert "bench" not in vars(before.old)
    assert kernel_timing.instrument_new_modules(start) == 0      # never patched twice
    assert kernel_timing.instrument_new_modules(None) == 0       # no code cache: nothing


@pytest.mark.parametrize("tuner", [dict(device="cpu"), dict(custom=True)], ids=["cpu", "user-kernel"])
def test_inductor_times_user_kernels_and_other_devices(monkeypatch, tuner):
    t = fake_autotuner(**tuner)
    start = kernel_timing.module_count()
    loaded_module(monkeypatch, k=t)
    kernel_timing.instrument_new_modules(start)
    launched = []
    assert t.bench(lambda *a, stream=None: launched.append(a), 1, 2) == 123.0
    assert len(t.inductor_calls) == 1 and launched == []


def test_a_kernel_that_writes_its_inputs_is_timed_on_clones_refilled_before_each_launch(monkeypatch):
    """What the graph would hold, run eagerly on the CPU: each launch sees
    the original values of the written argument (in a clone) and zeroed
    reset arguments; the caller's written tensor keeps its values; the
    preparation's time is measured once per argument set and subtracted."""
    timed = []

    def fake_graph_time(launch, launches=3, replays=1):
        for _ in range(launches):
            launch(None)
        timed.append(launch)
        return 5.0 if len(timed) == 1 else 7.0 + len(timed)     # baseline first, then candidates

    monkeypatch.setattr(kernel_timing, "_plain_launch", lambda tuner, launcher: True)
    monkeypatch.setattr(kernel_timing, "graph_time_ms", fake_graph_time)
    t = fake_autotuner(mutated=["in_out_ptr0"], reset=["out_ptr1"])
    t.fn = types.SimpleNamespace(arg_names=["in_out_ptr0", "in_ptr1", "out_ptr1", "xnumel"])
    t.optimize_mem = False                          # no memory check: CPU tensors here
    start = kernel_timing.module_count()
    loaded_module(monkeypatch, k=t)
    kernel_timing.instrument_new_modules(start)
    buf, inp, acc = torch.ones(4), torch.full((4,), 2.0), torch.full((4,), 9.0)
    seen = []

    def launcher(io, i, out, n, stream=None):
        seen.append((io is buf, io.clone(), out.clone()))
        io.mul_(i)                                  # writes its input: the clone's
        out.add_(1)                                 # accumulates into a reset argument

    assert t.bench(launcher, buf, inp, acc, 4) == 9.0 - 5.0        # candidate 1 minus the baseline
    assert t.bench(launcher, buf, inp, acc, 4) == 10.0 - 5.0       # baseline not measured again
    assert len(timed) == 3 and t.inductor_calls == []
    assert all(not same and torch.equal(io, torch.ones(4)) and torch.equal(out, torch.zeros(4))
               for same, io, out in seen) and len(seen) == 6
    assert torch.equal(buf, torch.ones(4))                          # the caller's tensor untouched


def test_a_failed_device_timing_falls_back_to_inductors(monkeypatch):
    def broken(launch, *a, **k):
        raise RuntimeError("capture failed")

    monkeypatch.setattr(kernel_timing, "_plain_launch", lambda tuner, launcher: True)
    monkeypatch.setattr(kernel_timing, "graph_time_ms", broken)
    t = fake_autotuner()
    start = kernel_timing.module_count()
    loaded_module(monkeypatch, k=t)
    kernel_timing.instrument_new_modules(start)
    assert t.bench(lambda *a, stream=None: None, 1) == 123.0
    assert len(t.inductor_calls) == 1


def test_a_patched_autotuner_still_pickles_and_comes_back_patched(monkeypatch):
    """Inductor pickles autotuners with their instance dict (FX graph cache,
    compile workers): on the GPU a closure there failed the cache's write
    ("Can't pickle local object"). The patch pickles as a patch of the
    unpickled autotuner."""
    import pickle
    t = PicklableTuner.__new__(PicklableTuner)
    vars(t).update(vars(fake_autotuner(device="cpu")))
    t.launchers = []
    start = kernel_timing.module_count()
    loaded_module(monkeypatch, k=t)
    assert kernel_timing.instrument_new_modules(start) == 1
    back = pickle.loads(pickle.dumps(t))
    assert type(back) is PicklableTuner and back is not t
    assert isinstance(vars(back)["bench"], kernel_timing._DeviceTimeBench)
    assert vars(back)["bench"].autotuner is back
    back.inductor_calls = []
    assert back.bench(lambda *a, stream=None: None, 1) == 123.0    # cpu: Inductor's timing
    assert len(back.inductor_calls) == 1 and t.inductor_calls == []


def test_the_setting_is_checked_and_a_cpu_compile_is_unchanged():
    with pytest.raises(ValueError, match="inductor_kernel_timing"):
        dynamo.config.inductor_kernel_timing = "gpu"
    from torch._inductor.utils import fresh_inductor_cache

    def f(x):
        return (x.t() * 2).sin() + 1

    x = torch.randn(16, 8)
    with dynamo.config.overrides({"inductor_kernel_timing": "device"}), fresh_inductor_cache():
        dynamo.reset()
        graphs = []
        opt = dynamo.optimize(counting_inductor(graphs))(f)
        torch.testing.assert_close(opt(x), f(x))
        torch.testing.assert_close(opt(x), f(x))
    assert len(graphs) == 1


def test_clones_that_would_crowd_the_free_memory_leave_the_timing_to_inductor(monkeypatch):
    monkeypatch.setattr(kernel_timing, "_plain_launch", lambda tuner, launcher: True)
    monkeypatch.setattr(torch.cuda, "max_memory_allocated", lambda *a: 1000)
    monkeypatch.setattr(torch.cuda, "memory_allocated", lambda *a: 900)   # 100 bytes under the peak
    monkeypatch.setattr(torch.cuda, "memory_reserved", lambda *a: 950)
    monkeypatch.setattr(torch.cuda, "mem_get_info", lambda *a: (150, 10_000))  # half of 50 + 150 free
    timed = []
    monkeypatch.setattr(kernel_timing, "graph_time_ms", lambda launch, **k: timed.append(launch) or 1.0)
    t = fake_autotuner(mutated=["in_out_ptr0"])
    t.fn = types.SimpleNamespace(arg_names=["in_out_ptr0", "xnumel"])
    t.optimize_mem = True
    start = kernel_timing.module_count()
    loaded_module(monkeypatch, k=t)
    kernel_timing.instrument_new_modules(start)
    big = torch.ones(8, 4).t()                      # 32 floats, 128 bytes: does not fit
    assert t.bench(lambda *a, stream=None: None, big, 32) == 123.0
    assert len(t.inductor_calls) == 1 and timed == []
    small = torch.ones(5, 5)                        # 100 bytes: fits, device-timed
    assert t.bench(lambda *a, stream=None: None, small, 25) == 1e-6     # 1.0 - 1.0, floored
    assert len(t.inductor_calls) == 1 and len(timed) == 2      # the refill baseline, the candidate
    assert kernel_timing._span(big) == 32 and kernel_timing._span(torch.ones(4, 8)[:, :2]) == 26
    assert kernel_timing._clones_fit(t, [torch.ones(25)])            # 100 bytes fit
    monkeypatch.setattr(torch.cuda, "mem_get_info", lambda *a: (10_000, 20_000))
    assert kernel_timing._clones_fit(t, [big])                       # fits in half the free memory


@cuda
def test_graph_time_is_the_gpus_time_per_launch():
    x = torch.randn(1 << 20, device="cuda")
    y = torch.empty_like(x)
    ms = kernel_timing.graph_time_ms(lambda stream: torch.mul(x, 2, out=y))
    assert 0 < ms < 1 and math.isfinite(ms)
    assert torch.equal(y, x * 2)


@cuda
def test_device_timed_triton_kernels_give_eagers_results():
    from torch._inductor.codecache import PyCodeCache
    from torch._inductor.runtime.triton_heuristics import CachingAutotuner
    from torch._inductor.utils import fresh_inductor_cache

    def f(x, b):
        return ((x + b).transpose(1, 2) * 0.5).contiguous()

    x, b = torch.randn(8, 128, 768, device="cuda"), torch.randn(768, device="cuda")
    with dynamo.config.overrides({"inductor_kernel_timing": "device"}), fresh_inductor_cache():
        dynamo.reset()
        start = kernel_timing.module_count()
        graphs = []
        opt = dynamo.optimize(counting_inductor(graphs))(f)
        torch.testing.assert_close(opt(x, b), f(x, b))
        tuners = [v for m in PyCodeCache.modules[start:] for v in vars(m).values()
                  if isinstance(v, CachingAutotuner)]
        assert tuners and all("bench" in vars(t) for t in tuners)
        torch.testing.assert_close(opt(x, b), f(x, b))
    assert len(graphs) == 1


@cuda
def test_device_timed_kernels_that_write_their_inputs_write_them_once_per_call():
    from torch._inductor.utils import fresh_inductor_cache

    def f(x, y):
        x.add_(y)
        return (x * 2).sum(dim=1)

    x0, y = torch.randn(256, 512, device="cuda"), torch.randn(256, 512, device="cuda")
    with dynamo.config.overrides({"inductor_kernel_timing": "device"}), fresh_inductor_cache():
        dynamo.reset()
        graphs = []
        opt = dynamo.optimize(counting_inductor(graphs))(f)
        xa, xb = x0.clone(), x0.clone()
        # the sums' order differs from eager's (512 terms): a sum's tolerance
        torch.testing.assert_close(opt(xa, y), f(xb, y), rtol=1e-4, atol=1e-4)
        assert torch.equal(xa, xb)                       # written once, by the call itself
        torch.testing.assert_close(opt(xa, y), f(xb, y), rtol=1e-4, atol=1e-4)
        assert torch.equal(xa, xb)
        torch.testing.assert_close(xa, x0 + 2 * y)
    assert len(graphs) == 1
