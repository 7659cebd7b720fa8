/* guards/tmeta.cpp — tensor metadata read through libtorch, behind tmeta.h.
 *
 * Owns: the extension's only C++ and its only torch includes.  The read
 * path (tmeta_is_tensor, tmeta_read, tmeta_grad_enabled) runs on every
 * guard evaluation: it must not call Python, allocate, or let a C++
 * exception cross the extern "C" boundary.  It touches only plain fields
 * of the TensorImpl; a tensor whose metadata would go through a virtual
 * "custom" accessor (which may throw or call back into Python) is refused
 * with -1 and the caller falls back to Python-level reads.
 */
#include <torch/csrc/autograd/python_variable.h>   /* THPVariable, THPVariableClass */
#include <torch/csrc/Device.h>                      /* THPDevice, THPDevice_Check */
#include <torch/csrc/Dtype.h>                       /* THPDtype, THPDtype_Check */
#include <torch/headeronly/version.h>               /* TORCH_VERSION_MAJOR/MINOR */
#include <ATen/Context.h>                           /* at::globalContext: global flags */
#include <ATen/autocast_mode.h>                     /* at::autocast::is_autocast_enabled */
#include <c10/core/DefaultDtype.h>                  /* c10::get_default_dtype */
#include <c10/core/GradMode.h>                      /* c10::GradMode */
#include <c10/core/InferenceMode.h>                 /* c10::InferenceMode */
#include <c10/core/impl/LocalDispatchKeySet.h>      /* thread-local include/exclude */

#include <cstdio>
#include <cstring>

#include "tmeta.h"

namespace {

/* TensorImpl keeps its sizes/strides policy private and tests it with the
 * protected matches_policy().  A pointer to that member, named inside a
 * derived class, is the standard-conforming way to ask any TensorImpl; the
 * class is never instantiated.  The policy is non-default for symbolic
 * shapes, sparse, nested, batched, opaque (mkldnn) tensors and Python
 * wrapper subclasses: exactly the tensors whose sizes()/strides() are
 * virtual calls that may throw or run Python. */
struct PolicyPeek : c10::TensorImpl {
    static bool custom_sizes_or_strides(const c10::TensorImpl *impl)
    {
        constexpr auto matches = &PolicyPeek::matches_policy;
        return (impl->*matches)(SizesStridesPolicy::CustomStrides);  /* >= CustomStrides */
    }
};

/* The TensorImpl behind a tensor object, or NULL if its metadata cannot be
 * read from plain fields.  obj must pass tmeta_is_tensor. */
const c10::TensorImpl *
plain_impl(PyObject *obj)
{
    const at::Tensor &t = THPVariable_Unpack(obj);
    if (!t.defined())
        return nullptr;
    const c10::TensorImpl *impl = t.unsafeGetTensorImpl();
    /* __torch_dispatch__ subclasses may answer device() from Python
     * (dispatch_device=True), and that choice is not observable from here. */
    if (impl->is_python_dispatch() || PolicyPeek::custom_sizes_or_strides(impl))
        return nullptr;
    return impl;
}

/* TENSOR_MATCH's dispatch key word: c10's (keys | include) - exclude,
 * where `-` removes functionality bits only (backend bits stay). */
uint64_t
effective_keys(const c10::TensorImpl *impl, const TmetaTls *tls)
{
    c10::DispatchKeySet inc(c10::DispatchKeySet::RAW, tls->included);
    c10::DispatchKeySet exc(c10::DispatchKeySet::RAW, tls->excluded);
    return ((impl->key_set() | inc) - exc).raw_repr();
}

/* *out from impl's plain fields (impl from plain_impl, obj its owner).  0;
 * may throw for a tensor without a device, so only tmeta_read calls it. */
int
fill(const c10::TensorImpl *impl, PyObject *obj, const TmetaTls *tls, TmetaView *out)
{
    /* Plain field read: only Python subclasses (refused above) customise
     * the device; a tensor without one throws, caught by tmeta_read. */
    c10::Device device = impl->device();
    c10::IntArrayRef sizes = impl->sizes();
    c10::IntArrayRef strides = impl->strides();
    out->cls = Py_TYPE(obj);
    out->dtype = static_cast<int32_t>(impl->dtype().toScalarType());
    out->device_type = static_cast<int32_t>(device.type());
    out->device_index = device.has_index() ? device.index() : -1;
    out->requires_grad = impl->requires_grad() ? 1 : 0;
    out->ndim = static_cast<int32_t>(sizes.size());
    out->dispatch_keys = effective_keys(impl, tls);
    out->sizes = sizes.data();
    out->strides = strides.data();
    /* plain field: storage() would throw for the tensors that forbid it */
    out->storage = impl->unsafe_storage().unsafeGetStorageImpl();
    return 0;
}

/* torch.__version__ must name the major.minor these headers describe: the
 * inline accessors above bake in TensorImpl's and THPVariable's layout. */
int
check_torch_version(PyObject *torch)
{
    PyObject *v = PyObject_GetAttrString(torch, "__version__");
    if (v == nullptr)
        return -1;
    const char *s = PyUnicode_Check(v) ? PyUnicode_AsUTF8(v) : nullptr;
    char want[32];
    int n = std::snprintf(want, sizeof want, "%d.%d.", TORCH_VERSION_MAJOR, TORCH_VERSION_MINOR);
    int ok = s != nullptr && std::strncmp(s, want, static_cast<size_t>(n)) == 0;
    if (!ok && !PyErr_Occurred())
        PyErr_Format(PyExc_ImportError,
                     "dynamo._C was built against torch %s*, but torch %R is installed: "
                     "rebuild it with `make`", want, v);
    Py_DECREF(v);
    return ok ? 0 : -1;
}

/* A device string parsed by c10, as torch.device(str) does.  0, or -1 with
 * ValueError (unknown type, bad index). */
int
parse_device(PyObject *str, c10::Device *out)
{
    const char *s = PyUnicode_AsUTF8(str);
    if (s == nullptr)
        return -1;
    try {
        *out = c10::Device(std::string(s));
        return 0;
    } catch (const c10::Error &e) {
        PyErr_Format(PyExc_ValueError, "bad device string %R: %s", str, e.what_without_backtrace());
    } catch (const std::exception &e) {
        PyErr_Format(PyExc_ValueError, "bad device string %R: %s", str, e.what());
    }
    return -1;
}

}  /* namespace */

extern "C" {

int
tmeta_init(void)
{
    PyObject *torch = PyImport_ImportModule("torch");
    if (torch == nullptr)
        return -1;
    int rc = check_torch_version(torch);
    Py_DECREF(torch);
    if (rc == 0 && THPVariableClass == nullptr) {   /* set by torch's own init */
        PyErr_SetString(PyExc_ImportError, "dynamo._C: torch.Tensor is not initialised");
        rc = -1;
    }
    return rc;
}

int
tmeta_is_tensor(PyObject *obj)
{
    PyObject *tensor = THPVariableClass;    /* NULL until torch is imported */
    if (tensor == nullptr)
        return 0;
    if (Py_TYPE(obj) == (PyTypeObject *)tensor)     /* plain torch.Tensor: the usual case */
        return 1;
    /* PyType_IsSubtype walks the MRO in C; isinstance() could run a
     * metaclass __instancecheck__, and only a real subtype is laid out as
     * a THPVariable. */
    return PyType_IsSubtype(Py_TYPE(obj), (PyTypeObject *)tensor);
}

void
tmeta_read_tls(TmetaTls *tls)
{
    c10::impl::LocalDispatchKeySet local = c10::impl::tls_local_dispatch_key_set();
    tls->included = local.included_.raw_repr();
    tls->excluded = local.excluded_.raw_repr();
}

int
tmeta_read_with(PyObject *obj, const TmetaTls *tls, TmetaView *out)
{
    if (!tmeta_is_tensor(obj))
        return -1;
    try {
        const c10::TensorImpl *impl = plain_impl(obj);
        return impl != nullptr ? fill(impl, obj, tls, out) : -1;
    } catch (...) {     /* defence only: the plain-field path does not throw */
        return -1;
    }
}

int
tmeta_read(PyObject *obj, TmetaView *out)
{
    TmetaTls tls;
    tmeta_read_tls(&tls);
    return tmeta_read_with(obj, &tls, out);
}

int
tmeta_grad_enabled(void)
{
    return c10::GradMode::is_enabled() ? 1 : 0;
}

/* Autocast for a device is on when its key is not in the thread's
 * dispatch exclude set (what torch.autocast toggles): read from the TLS
 * words the walk already holds, not through at::autocast's accessors. */
static inline bool
autocast_on(const TmetaTls *tls, c10::DispatchKey key)
{
    return !c10::DispatchKeySet(c10::DispatchKeySet::RAW, tls->excluded).has(key);
}

uint64_t
tmeta_global_state(const TmetaTls *tls)
{
    const at::Context &ctx = at::globalContext();
    uint64_t w = 0;
    w |= (uint64_t)ctx.deterministicAlgorithms() << TMETA_GS_DETERMINISTIC;
    w |= (uint64_t)ctx.deterministicAlgorithmsWarnOnly() << TMETA_GS_DETERMINISTIC_WARN_ONLY;
    w |= (uint64_t)ctx.deterministicFillUninitializedMemory() << TMETA_GS_FILL_UNINITIALIZED;
    w |= (uint64_t)c10::InferenceMode::is_enabled() << TMETA_GS_INFERENCE_MODE;
    w |= (uint64_t)ctx.userEnabledCuDNN() << TMETA_GS_CUDNN_ENABLED;
    w |= (uint64_t)ctx.deterministicCuDNN() << TMETA_GS_CUDNN_DETERMINISTIC;
    w |= (uint64_t)ctx.benchmarkCuDNN() << TMETA_GS_CUDNN_BENCHMARK;
    w |= (uint64_t)ctx.userEnabledMkldnn() << TMETA_GS_MKLDNN_ENABLED;
    w |= ((uint64_t)c10::typeMetaToScalarType(c10::get_default_dtype()) & 0xff)
         << TMETA_GS_DEFAULT_DTYPE;
    if (autocast_on(tls, c10::DispatchKey::AutocastCPU)) {      /* dtype only matters when on */
        w |= (uint64_t)1 << TMETA_GS_AUTOCAST_CPU;
        w |= ((uint64_t)at::autocast::get_autocast_dtype(at::kCPU) & 0xff)
             << TMETA_GS_AUTOCAST_CPU_DTYPE;
    }
    if (autocast_on(tls, c10::DispatchKey::AutocastCUDA)) {
        w |= (uint64_t)1 << TMETA_GS_AUTOCAST_CUDA;
        w |= ((uint64_t)at::autocast::get_autocast_dtype(at::kCUDA) & 0xff)
             << TMETA_GS_AUTOCAST_CUDA_DTYPE;
    }
    return w;
}

int
tmeta_dtype_from_py(PyObject *dtype, int32_t *out)
{
    if (!THPDtype_Check(dtype)) {
        PyErr_Format(PyExc_TypeError, "expected a torch.dtype, got %.100s", Py_TYPE(dtype)->tp_name);
        return -1;
    }
    *out = static_cast<int32_t>(reinterpret_cast<THPDtype *>(dtype)->scalar_type);
    return 0;
}

int
tmeta_device_from_py(PyObject *device, int32_t *type, int32_t *index)
{
    c10::Device d(c10::DeviceType::CPU);
    if (THPDevice_Check(device)) {
        d = reinterpret_cast<THPDevice *>(device)->device;
    } else if (PyUnicode_Check(device)) {
        if (parse_device(device, &d) < 0)
            return -1;
    } else {
        PyErr_Format(PyExc_TypeError, "expected a torch.device or a device string, got %.100s",
                     Py_TYPE(device)->tp_name);
        return -1;
    }
    *type = static_cast<int32_t>(d.type());
    *index = d.has_index() ? d.index() : -1;
    return 0;
}

}  /* extern "C" */
