"""guards/tmeta.cpp: tensor metadata read through libtorch, against Python.

_C._tensor_meta(t) is the C read (tmeta_read) made visible; the reference is
what Python says about the same tensor (dtype, device, requires_grad, dim,
size(), stride(), and TENSOR_MATCH's dispatch key word from dynamo.guards).
Also: which tensors the C read refuses (the caller then falls back to
Python), the grad-mode read, and the expected-value conversions.
"""
import os
import subprocess
import sys
import threading
import time
import warnings

import pytest
import torch

from asan_util import load_c, run_pytest_under_asan

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


_C = load_c()
from dynamo.guards import dispatch_keys  # noqa: E402

pytestmark = pytest.mark.skipif(
    not hasattr(_C, "_tensor_meta"),
    reason="dynamo._C lacks the tmeta hooks: core/module.c must call tmeta_init() "
           "and tmeta_add_test_functions(m)")

# c10::ScalarType / c10::DeviceType values (c10/core/ScalarType.h, DeviceType.h).
SCALAR_TYPE = {torch.uint8: 0, torch.int8: 1, torch.int16: 2, torch.int32: 3,
               torch.int64: 4, torch.float16: 5, torch.float32: 6, torch.float64: 7,
               torch.complex32: 8, torch.complex64: 9, torch.complex128: 10,
               torch.bool: 11, torch.bfloat16: 15}
CPU, CUDA, META = 0, 1, 14


def python_meta(t):
    """The tuple _C._tensor_meta(t) must return, from Python-level reads."""
    return (type(t), SCALAR_TYPE[t.dtype], *_C._device_code(t.device), t.requires_grad,
            t.dim(), dispatch_keys(t), tuple(t.size()), tuple(t.stride()))


class MyTensor(torch.Tensor):
    """A plain subclass (no __torch_dispatch__): readable, its own class."""


class LoggingTensor(torch.Tensor):
    """A subclass with __torch_function__: Python reads go through it."""
    calls = 0

    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        cls.calls += 1
        return super().__torch_function__(func, types, args, kwargs or {})


class WrapperTensor(torch.Tensor):
    """A __torch_dispatch__ wrapper subclass: its metadata may come from
    Python, so tmeta_read refuses it."""

    @staticmethod
    def __new__(cls, elem):
        return torch.Tensor._make_wrapper_subclass(cls, elem.shape, dtype=elem.dtype,
                                                   device=elem.device)

    def __init__(self, elem):
        self.elem = elem

    @classmethod
    def __torch_dispatch__(cls, func, types, args=(), kwargs=None):
        raise NotImplementedError(func)


def base_tensors():
    """(name, tensor) pairs covering dtypes, shapes and views."""
    out = []
    for dt in SCALAR_TYPE:
        if dt is torch.complex32:
            continue                    # few kernels: zeros only
        out.append((f"dtype {dt}", torch.zeros(2, 3, dtype=dt)))
    with warnings.catch_warnings():     # "ComplexHalf support is experimental"
        warnings.simplefilter("ignore", UserWarning)
        out.append(("complex32", torch.zeros(2, dtype=torch.complex32)))
    x = torch.randn(4, 6)
    out += [
        ("0-dim", torch.tensor(3.5)),
        ("0-dim int", torch.tensor(7)),
        ("empty", torch.empty(0)),
        ("empty 3d", torch.empty(2, 0, 3)),
        ("1d", torch.arange(5)),
        ("transposed", x.t()),
        ("column slice", x[:, ::2]),
        ("row (offset)", x[2]),
        ("narrow", x.narrow(1, 1, 3)),
        ("expanded", torch.randn(1, 6).expand(5, 6)),
        ("unsqueezed", x.unsqueeze(1)),
        ("permuted", torch.randn(2, 3, 4).permute(2, 0, 1)),
        ("as_strided", torch.arange(20.).as_strided((3, 3), (5, 2), 1)),
        ("channels_last", torch.randn(2, 3, 4, 5).to(memory_format=torch.channels_last)),
        ("channels_last_3d", torch.randn(1, 2, 3, 4, 5).to(memory_format=torch.channels_last_3d)),
        ("meta", torch.empty(3, 4, device="meta")),
        ("meta transposed", torch.empty(3, 4, device="meta").t()),
        ("requires_grad", torch.randn(3, requires_grad=True)),
        ("non-leaf", torch.randn(3, requires_grad=True) * 2),
        ("detached", torch.randn(3, requires_grad=True).detach()),
        ("parameter", torch.nn.Parameter(torch.randn(2, 2))),
        ("parameter no grad", torch.nn.Parameter(torch.randn(2), requires_grad=False)),
        ("subclass", torch.randn(2, 3).as_subclass(MyTensor)),
        ("subclass grad", torch.randn(2, requires_grad=True).as_subclass(MyTensor)),
        ("torch_function subclass", torch.randn(3).as_subclass(LoggingTensor)),
    ]
    with torch.no_grad():
        out.append(("made under no_grad", torch.randn(3, requires_grad=True) * 2))
    with torch.inference_mode():
        out.append(("inference tensor", torch.randn(2, 2)))
        out.append(("inference view", torch.randn(3, 4)[1:]))
    return out


TENSORS = base_tensors()


@pytest.mark.parametrize("name,t", TENSORS, ids=[n for n, _ in TENSORS])
def test_matches_python(name, t):
    meta = _C._tensor_meta(t)
    assert meta == python_meta(t)
    assert meta[0] is type(t)


@pytest.mark.parametrize("name,t", TENSORS, ids=[n for n, _ in TENSORS])
@pytest.mark.parametrize("ctx", ["no_grad", "enable_grad", "inference_mode"])
def test_matches_python_under_grad_modes(name, t, ctx):
    """The dispatch key word picks up the calling thread's TLS sets."""
    with getattr(torch, ctx)():
        assert _C._tensor_meta(t) == python_meta(t)


def test_tls_sets_change_the_key_word():
    t = torch.randn(2, requires_grad=True)
    plain = _C._tensor_meta(t)[6]
    with torch.inference_mode():        # excludes the autograd keys
        inference = _C._tensor_meta(t)[6]
    assert inference != plain
    autograd_cpu = torch._C.DispatchKeySet(torch._C.DispatchKey.AutogradCPU)
    with torch._C._ExcludeDispatchKeyGuard(autograd_cpu):
        assert _C._tensor_meta(t)[6] == dispatch_keys(t) != plain
    with torch._C._IncludeDispatchKeyGuard(torch._C.DispatchKey.Python):
        assert _C._tensor_meta(t)[6] == dispatch_keys(t) != plain
    assert _C._tensor_meta(t)[6] == plain


def test_tls_is_per_thread():
    """Another thread reads its own (empty) TLS sets, not the main thread's."""
    t = torch.randn(2)
    got = {}

    def worker():
        got["c"], got["py"] = _C._tensor_meta(t)[6], dispatch_keys(t)

    with torch.inference_mode():
        th = threading.Thread(target=worker)
        th.start()
        th.join()
        assert _C._tensor_meta(t)[6] == dispatch_keys(t) != got["c"]
    assert got["c"] == got["py"] == _C._tensor_meta(t)[6]


def test_subclass_reads_do_not_run_python():
    t = torch.randn(3).as_subclass(LoggingTensor)
    LoggingTensor.calls = 0
    _C._tensor_meta_loop(t, 100)
    assert LoggingTensor.calls == 0
    python_meta(t)
    assert LoggingTensor.calls > 0


def test_views_follow_metadata_changes():
    t = torch.randn(2, 3)
    before = _C._tensor_meta(t)
    t.resize_(4, 5)
    t.requires_grad_(True)
    assert _C._tensor_meta(t) == python_meta(t) != before


@pytest.mark.filterwarnings("ignore::UserWarning")    # beta/prototype layouts
@pytest.mark.parametrize("make", [
    lambda: torch.randn(3, 3).to_sparse(),
    lambda: torch.randn(3, 3).to_sparse_csr(),
    lambda: torch.nested.nested_tensor([torch.randn(2), torch.randn(3)]),
    lambda: WrapperTensor(torch.randn(2)),
], ids=["sparse_coo", "sparse_csr", "nested", "torch_dispatch wrapper"])
def test_refused(make):
    """Custom sizes/strides or Python-provided metadata: tmeta_read is -1
    without raising; the test hook turns that into ValueError."""
    t = make()
    with pytest.raises(ValueError, match="refused"):
        _C._tensor_meta(t)
    assert _C._tensor_meta_loop(t, 10) == 0


@pytest.mark.parametrize("obj", [None, 1, 2.5, "t", [torch.randn(1)], torch.Size([2]),
                                 torch.float32, torch.device("cpu"), torch.Tensor, object()])
def test_non_tensors(obj):
    assert _C._tensor_meta(obj) is None
    assert _C._tensor_meta_loop(obj, 3) == 0


def test_grad_enabled():
    assert _C._grad_enabled() is torch.is_grad_enabled() is True
    with torch.no_grad():
        assert _C._grad_enabled() is torch.is_grad_enabled() is False
        with torch.enable_grad():
            assert _C._grad_enabled() is torch.is_grad_enabled() is True
        with torch.set_grad_enabled(False):
            assert _C._grad_enabled() is False
    with torch.inference_mode():
        assert _C._grad_enabled() is torch.is_grad_enabled() is False
    assert _C._grad_enabled() is True


def test_grad_enabled_is_per_thread():
    got = []
    with torch.no_grad():
        th = threading.Thread(target=lambda: got.append((_C._grad_enabled(),
                                                         torch.is_grad_enabled())))
        th.start()
        th.join()
        assert _C._grad_enabled() is False
    assert got == [(True, True)]


@pytest.mark.parametrize("dtype,code", sorted(SCALAR_TYPE.items(), key=lambda kv: kv[1]))
def test_dtype_code(dtype, code):
    assert _C._dtype_code(dtype) == code


@pytest.mark.parametrize("device,code", [
    ("cpu", (CPU, -1)), ("cpu:0", (CPU, 0)), (torch.device("cpu"), (CPU, -1)),
    ("cuda", (CUDA, -1)), ("cuda:1", (CUDA, 1)), (torch.device("cuda", 3), (CUDA, 3)),
    ("meta", (META, -1)), (torch.device("meta"), (META, -1)),
])
def test_device_code(device, code):
    assert _C._device_code(device) == code


@pytest.mark.parametrize("fn,arg", [
    (_C._dtype_code, "float32"), (_C._dtype_code, float), (_C._dtype_code, None),
    (_C._dtype_code, torch.randn(1)), (_C._device_code, 0), (_C._device_code, None),
    (_C._device_code, torch.float32), (_C._device_code, b"cpu"),
])
def test_bad_conversions_raise_type_error(fn, arg):
    with pytest.raises(TypeError):
        fn(arg)


@pytest.mark.parametrize("bad", ["nodevice", "cpu:x", "cuda:-2", ""])
def test_bad_device_string_raises_value_error(bad):
    with pytest.raises(ValueError, match="bad device string"):
        _C._device_code(bad)


def test_no_reference_leaks():
    t = torch.randn(2, 3).as_subclass(MyTensor)
    before = sys.getrefcount(MyTensor), sys.getrefcount(t)
    for _ in range(1000):
        _C._tensor_meta(t)
        _C._tensor_meta_loop(t, 2)
    assert (sys.getrefcount(MyTensor), sys.getrefcount(t)) == before


def ns_per_call(fn, n):
    best = float("inf")
    for _ in range(5):
        start = time.perf_counter_ns()
        fn(n)
        best = min(best, (time.perf_counter_ns() - start) / n)
    return best


def test_cost_report():
    """Prints (does not assert) the cost of a read, for the report."""
    t = torch.randn(4, 5).t()
    n = 100_000

    def c_raw(n):
        _C._tensor_meta_loop(t, n)

    def c_tuple(n):
        meta = _C._tensor_meta
        for _ in range(n):
            meta(t)

    def py_three(n):
        for _ in range(n):
            t.dtype, t.shape, t.stride()

    def py_all(n):
        for _ in range(n):
            (type(t), t.dtype, t.device, t.requires_grad, t.dim(), t.shape, t.stride(),
             dispatch_keys(t))

    def py_loop(n):
        for _ in range(n):
            pass

    loop = ns_per_call(py_loop, n)
    print(f"\ntmeta cost, ns/call: tmeta_read {ns_per_call(c_raw, n * 10):.1f}; "
          f"_C._tensor_meta (builds tuples) {ns_per_call(c_tuple, n) - loop:.0f}; "
          f"Python t.dtype/t.shape/t.stride() {ns_per_call(py_three, n) - loop:.0f}; "
          f"Python all TENSOR_MATCH fields {ns_per_call(py_all, n // 10) - loop:.0f}")


def test_loaded_build():
    path = os.environ.get("DYNAMO_C_PATH")
    if path:
        assert os.path.samefile(_C.__file__, path)


def test_asan_build():
    """This file against the ASan/UBSan build (make asan), if present."""
    out = run_pytest_under_asan(
        [__file__], pytest_args=("--noconftest", "-k", "not asan and not cost_report"))
    assert "runtime error" not in out.stderr            # UBSan
