/* core/callable.c — thread-local mode/callback and OptimizedCallable.
 *
 * Owns: the C11 thread-local state read by the hook and the C type that sets
 * it around one call: __call__ swaps (mode, callback) in, vectorcalls fn,
 * and swaps the old state back whatever the outcome.  It adds no Python
 * frame.  It must not inspect frames or caches.
 */
#include "callable.h"
#include "hook.h"       /* hook_install */

#include <stddef.h>     /* offsetof */
#include <structmember.h>  /* PyMemberDef, T_OBJECT */

static _Thread_local int tl_mode;              /* MODE_* of this thread */
static _Thread_local PyObject *tl_callback;    /* strong, or NULL */

int
callable_mode(void)
{
    return tl_mode;
}

PyObject *
callable_callback(void)
{
    return tl_callback;
}

void
callable_swap(int mode, PyObject *callback, int *prev_mode, PyObject **prev_callback)
{
    *prev_mode = tl_mode;
    *prev_callback = tl_callback;               /* ownership moves out */
    tl_mode = mode;
    tl_callback = (callback == NULL || callback == Py_None) ? NULL : Py_NewRef(callback);
}

void
callable_restore(int mode, PyObject *callback)
{
    PyObject *old = tl_callback;
    tl_mode = mode;
    tl_callback = callback;
    Py_XDECREF(old);                            /* last: may run Python code */
}

/* ---- OptimizedCallable ------------------------------------------------ */

typedef struct {
    PyObject_HEAD
    PyObject *fn;           /* strong: the wrapped callable */
    PyObject *callback;     /* strong: compile callback, or None */
    int mode;               /* MODE_* set around each call */
    PyObject *dict;         /* strong: instance __dict__, or NULL */
    vectorcallfunc vectorcall;
} OptimizedCallable;

static PyObject *
oc_vectorcall(PyObject *self_, PyObject *const *args, size_t nargsf, PyObject *kwnames)
{
    OptimizedCallable *self = (OptimizedCallable *)self_;
    int prev_mode;
    PyObject *prev_callback;
    if (self->mode != MODE_OFF)
        hook_install();
    callable_swap(self->mode, self->callback, &prev_mode, &prev_callback);
    PyObject *result = PyObject_Vectorcall(self->fn, args, nargsf, kwnames);
    callable_restore(prev_mode, prev_callback);
    return result;
}

static PyObject *
oc_new(PyTypeObject *type, PyObject *args, PyObject *kwargs)
{
    static char *kwlist[] = {"fn", "callback", "mode", NULL};
    PyObject *fn, *callback;
    int mode;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "OOi:OptimizedCallable", kwlist,
                                     &fn, &callback, &mode))
        return NULL;
    if (!PyCallable_Check(fn)) {
        PyErr_SetString(PyExc_TypeError, "OptimizedCallable: fn must be callable");
        return NULL;
    }
    if (mode < MODE_OFF || mode > MODE_LAST) {
        PyErr_Format(PyExc_ValueError, "OptimizedCallable: mode must be 0, 1 or 2, not %d", mode);
        return NULL;
    }
    OptimizedCallable *self = (OptimizedCallable *)type->tp_alloc(type, 0);
    if (self == NULL)
        return NULL;
    self->fn = Py_NewRef(fn);
    self->callback = Py_NewRef(callback);
    self->mode = mode;
    self->vectorcall = oc_vectorcall;
    /* __wrapped__ lives in __dict__ so functools.update_wrapper can set it. */
    self->dict = PyDict_New();
    if (self->dict == NULL || PyDict_SetItemString(self->dict, "__wrapped__", fn) < 0) {
        Py_DECREF(self);
        return NULL;
    }
    return (PyObject *)self;
}

static int
oc_traverse(OptimizedCallable *self, visitproc visit, void *arg)
{
    Py_VISIT(self->fn);
    Py_VISIT(self->callback);
    Py_VISIT(self->dict);
    return 0;
}

static int
oc_clear(OptimizedCallable *self)
{
    Py_CLEAR(self->fn);
    Py_CLEAR(self->callback);
    Py_CLEAR(self->dict);
    return 0;
}

static void
oc_dealloc(OptimizedCallable *self)
{
    PyObject_GC_UnTrack(self);
    oc_clear(self);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

/* Bind like a function: instance access gives a bound method. */
static PyObject *
oc_descr_get(PyObject *self, PyObject *obj, PyObject *type)
{
    if (obj == NULL || obj == Py_None)
        return Py_NewRef(self);
    return PyMethod_New(self, obj);
}

static PyObject *
oc_repr(OptimizedCallable *self)
{
    return PyUnicode_FromFormat("<dynamo._C.OptimizedCallable mode=%d wrapping %R>",
                                self->mode, self->fn);
}

static PyObject *
oc_get_mode(OptimizedCallable *self, void *closure)
{
    return PyLong_FromLong(self->mode);
}

static PyMemberDef oc_members[] = {
    {"_callback", T_OBJECT, offsetof(OptimizedCallable, callback), READONLY,
     "the compile callback set around each call"},
    {"_fn", T_OBJECT, offsetof(OptimizedCallable, fn), READONLY, "the wrapped callable"},
    {NULL},
};

static PyGetSetDef oc_getset[] = {
    {"_mode", (getter)oc_get_mode, NULL, "the thread mode set around each call", NULL},
    {"__dict__", PyObject_GenericGetDict, PyObject_GenericSetDict, NULL, NULL},
    {NULL},
};

PyTypeObject OptimizedCallable_Type = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "dynamo._C.OptimizedCallable",
    .tp_doc = "OptimizedCallable(fn, callback, mode): call fn with the thread's "
              "dynamo mode and callback set, restoring them afterwards.",
    .tp_basicsize = sizeof(OptimizedCallable),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC | Py_TPFLAGS_HAVE_VECTORCALL
                | Py_TPFLAGS_METHOD_DESCRIPTOR,
    .tp_new = oc_new,
    .tp_dealloc = (destructor)oc_dealloc,
    .tp_traverse = (traverseproc)oc_traverse,
    .tp_clear = (inquiry)oc_clear,
    .tp_call = PyVectorcall_Call,
    .tp_vectorcall_offset = offsetof(OptimizedCallable, vectorcall),
    .tp_descr_get = oc_descr_get,
    .tp_dictoffset = offsetof(OptimizedCallable, dict),
    .tp_repr = (reprfunc)oc_repr,
    .tp_members = oc_members,
    .tp_getset = oc_getset,
};
