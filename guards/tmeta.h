/* guards/tmeta.h — tensor metadata read through libtorch, behind a C interface.
 *
 * Implemented by guards/tmeta.cpp, the one C++ translation unit of the
 * extension (built against the installed torch's headers and libraries).
 * Lets the guard evaluator read a tensor's Python class, dtype, device,
 * requires_grad, dispatch keys (with the thread-local include/exclude sets
 * applied), ndim, sizes and strides without Python attribute lookups and
 * without allocating. Must not call Python code or raise on the read path.
 */
#ifndef DYNAMO_GUARDS_TMETA_H
#define DYNAMO_GUARDS_TMETA_H

#include <Python.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct {
    PyTypeObject *cls;          /* borrowed: Py_TYPE of the tensor object */
    int32_t dtype;              /* c10::ScalarType value */
    int32_t device_type;        /* c10::DeviceType value */
    int32_t device_index;       /* -1 when the device has no index */
    int32_t requires_grad;      /* 0 or 1 */
    int32_t ndim;
    uint64_t dispatch_keys;     /* raw DispatchKeySet, TLS include/exclude applied */
    const int64_t *sizes;       /* borrowed from the TensorImpl; ndim entries */
    const int64_t *strides;     /* borrowed from the TensorImpl; ndim entries */
    const void *storage;        /* compared only: the c10::StorageImpl the tensor
                                   views (what untyped_storage()._cdata names),
                                   NULL when it has none (STORAGE_MATCH) */
} TmetaView;

/* Once at module init.  Imports torch (a no-op when it is already imported,
 * as dynamo/__init__.py does) and checks that its major.minor version is the
 * one the extension was compiled against.  0, or -1 with an exception. */
int tmeta_init(void);

/* 1 if obj is a torch.Tensor (or subclass) instance, else 0. Never raises. */
int tmeta_is_tensor(PyObject *obj);

/* The calling thread's local dispatch-key include/exclude sets (raw
 * DispatchKeySet words), read once so several tensors can share them. */
typedef struct {
    uint64_t included;
    uint64_t excluded;
} TmetaTls;

/* Fill *tls from the calling thread's c10 state.  Never fails. */
void tmeta_read_tls(TmetaTls *tls);

/* Fill *out for tensor obj. 0 on success; -1 if obj is not a tensor or its
 * metadata cannot be read without calling Python or risking a C++ throw:
 * symbolic or custom sizes/strides (sparse, nested, mkldnn, vmap-batched),
 * __torch_dispatch__ subclasses (device/sizes may come from Python), an
 * undefined tensor.  On -1 the caller falls back to Python-level reads.
 * No exception is set either way.  The sizes/strides pointers stay valid
 * while obj is alive and not resized/restrided (read them right away). */
int tmeta_read(PyObject *obj, TmetaView *out);

/* tmeta_read with the thread's include/exclude sets given (read earlier in
 * the same call by tmeta_read_tls): the guard tree's per-call path. */
int tmeta_read_with(PyObject *obj, const TmetaTls *tls, TmetaView *out);

/* at::GradMode::is_enabled() of the calling thread. */
int tmeta_grad_enabled(void);

/* Bit positions in the global-state word (GLOBAL_STATE guards): the
 * process-wide and thread-local flags that change what ops compute or
 * which dtypes they produce, and that a traced op or a folded query does
 * not re-read at run time.  dynamo/guards.py (global_state_word) builds the
 * same word from Python; keep the two in step.  The float32 matmul
 * precision is left out on purpose: its accessor costs ~20 flag reads, the
 * matmul kernels read it at run time, and the tracer does not fold
 * torch.get_float32_matmul_precision() (docs/USER_GUIDE.md). */
enum {
    TMETA_GS_DETERMINISTIC = 0,         /* torch.use_deterministic_algorithms */
    TMETA_GS_DETERMINISTIC_WARN_ONLY = 1,
    TMETA_GS_FILL_UNINITIALIZED = 2,    /* torch.utils.deterministic.fill_uninitialized_memory */
    TMETA_GS_INFERENCE_MODE = 3,        /* torch.inference_mode (thread-local) */
    TMETA_GS_CUDNN_ENABLED = 4,         /* torch.backends.cudnn.enabled */
    TMETA_GS_CUDNN_DETERMINISTIC = 5,
    TMETA_GS_CUDNN_BENCHMARK = 6,
    TMETA_GS_MKLDNN_ENABLED = 7,        /* torch.backends.mkldnn.enabled */
    TMETA_GS_AUTOCAST_CPU = 10,         /* torch.is_autocast_enabled("cpu") (thread-local) */
    TMETA_GS_AUTOCAST_CUDA = 11,
    TMETA_GS_DEFAULT_DTYPE = 16,        /* 8 bits: c10::ScalarType of torch.get_default_dtype() */
    TMETA_GS_AUTOCAST_CPU_DTYPE = 24,   /* 8 bits: torch.get_autocast_dtype("cpu"), 0 when off */
    TMETA_GS_AUTOCAST_CUDA_DTYPE = 32,  /* 8 bits, 0 when off */
};

/* The global-state word of the calling thread (bits above); tls: its
 * dispatch-key sets (tmeta_read_tls), where autocast shows.  Reads plain
 * fields of c10/ATen state: no Python, no allocation, never throws. */
uint64_t tmeta_global_state(const TmetaTls *tls);

/* Expected-value conversions, used when guards are compiled (cold path).
 * 0, or -1 with a Python exception set: TypeError for a wrong type,
 * ValueError for a device string c10 cannot parse. */
int tmeta_dtype_from_py(PyObject *dtype, int32_t *out);
int tmeta_device_from_py(PyObject *device, int32_t *type, int32_t *index);

/* Adds the test hooks _tensor_meta, _tensor_meta_loop, _grad_enabled,
 * _dtype_code, _device_code (guards/tmeta_py.c) to module (borrowed).
 * 0, or -1 with an exception. */
int tmeta_add_test_functions(PyObject *module);

#ifdef __cplusplus
}
#endif
#endif
