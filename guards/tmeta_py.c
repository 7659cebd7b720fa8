/* guards/tmeta_py.c — Python test hooks over guards/tmeta.cpp.
 *
 * Owns: _C._tensor_meta, _C._tensor_meta_loop, _C._grad_enabled, _C._global_state,
 * _C._dtype_code, _C._device_code, used by tests/test_tmeta.py to compare
 * the libtorch reads with Python-level values.  Test-only: nothing in the
 * runtime calls these, and they may allocate freely.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include "tmeta.h"      /* tmeta_read and the conversions under test */
#include "pyversion.h"        /* dyn_check_positional */

/* A new tuple of n int64 values. */
static PyObject *
int64_tuple(const int64_t *v, int32_t n)
{
    PyObject *t = PyTuple_New(n);
    for (int32_t i = 0; t != NULL && i < n; i++) {
        PyObject *x = PyLong_FromLongLong(v[i]);
        if (x == NULL)
            Py_CLEAR(t);
        else
            PyTuple_SET_ITEM(t, i, x);
    }
    return t;
}

PyDoc_STRVAR(tensor_meta_doc,
"_tensor_meta(obj) -> (cls, dtype, device_type, device_index, requires_grad,\n"
"                     ndim, dispatch_keys, sizes, strides) or None\n\n"
"None if obj is not a tensor; ValueError if tmeta_read refuses the tensor.");

static PyObject *
tensor_meta(PyObject *module, PyObject *obj /* borrowed */)
{
    TmetaView v;
    if (!tmeta_is_tensor(obj))          /* not a tensor? */
        Py_RETURN_NONE;
    if (tmeta_read(obj, &v) < 0) {
        PyErr_Format(PyExc_ValueError, "tmeta_read refused a %.100s", Py_TYPE(obj)->tp_name);
        return NULL;
    }
    PyObject *sizes = int64_tuple(v.sizes, v.ndim);
    PyObject *strides = int64_tuple(v.strides, v.ndim);
    PyObject *result = NULL;
    if (sizes != NULL && strides != NULL)
        result = Py_BuildValue("(OiiiNiKOO)", (PyObject *)v.cls, v.dtype, v.device_type,
                               v.device_index, PyBool_FromLong(v.requires_grad), v.ndim,
                               (unsigned long long)v.dispatch_keys, sizes, strides);
    Py_XDECREF(sizes);
    Py_XDECREF(strides);
    return result;
}

PyDoc_STRVAR(tensor_meta_loop_doc,
"_tensor_meta_loop(obj, n) -> int\n\n"
"Calls tmeta_read(obj) n times (timing); returns how many succeeded.");

static PyObject *
tensor_meta_loop(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    if (!dyn_check_positional("_tensor_meta_loop", nargs, 2, 2))
        return NULL;
    Py_ssize_t n = PyLong_AsSsize_t(args[1]);
    if (n == -1 && PyErr_Occurred())
        return NULL;
    Py_ssize_t ok = 0;
    TmetaView v;
    for (Py_ssize_t i = 0; i < n; i++)
        ok += tmeta_read(args[0], &v) == 0;
    return PyLong_FromSsize_t(ok);
}

PyDoc_STRVAR(global_state_doc, "_global_state() -> int: tmeta_global_state().");

static PyObject *
global_state(PyObject *module, PyObject *unused)
{
    TmetaTls tls;
    tmeta_read_tls(&tls);
    return PyLong_FromUnsignedLongLong(tmeta_global_state(&tls));
}

PyDoc_STRVAR(grad_enabled_doc, "_grad_enabled() -> bool: tmeta_grad_enabled().");

static PyObject *
grad_enabled(PyObject *module, PyObject *unused)
{
    return PyBool_FromLong(tmeta_grad_enabled());
}

PyDoc_STRVAR(dtype_code_doc, "_dtype_code(dtype) -> int: the c10::ScalarType value.");

static PyObject *
dtype_code(PyObject *module, PyObject *dtype /* borrowed */)
{
    int32_t code;
    if (tmeta_dtype_from_py(dtype, &code) < 0)
        return NULL;
    return PyLong_FromLong(code);
}

PyDoc_STRVAR(device_code_doc,
"_device_code(device) -> (device_type, device_index); index -1 when absent.");

static PyObject *
device_code(PyObject *module, PyObject *device /* borrowed */)
{
    int32_t type, index;
    if (tmeta_device_from_py(device, &type, &index) < 0)
        return NULL;
    return Py_BuildValue("(ii)", type, index);
}

static PyMethodDef test_methods[] = {
    {"_tensor_meta", tensor_meta, METH_O, tensor_meta_doc},
    {"_tensor_meta_loop", (PyCFunction)(void (*)(void))tensor_meta_loop, METH_FASTCALL,
     tensor_meta_loop_doc},
    {"_grad_enabled", grad_enabled, METH_NOARGS, grad_enabled_doc},
    {"_global_state", global_state, METH_NOARGS, global_state_doc},
    {"_dtype_code", dtype_code, METH_O, dtype_code_doc},
    {"_device_code", device_code, METH_O, device_code_doc},
    {NULL, NULL, 0, NULL},
};

int
tmeta_add_test_functions(PyObject *module)
{
    return PyModule_AddFunctions(module, test_methods);
}
