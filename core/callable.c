/* core/callable.c — thread-local mode/callback and OptimizedCallable.
 *
 * Owns: the C11 thread-local state read by the hook, the count of threads
 * whose mode is not OFF (which decides whether the eval-frame hook is
 * installed at all), and the C type that sets the state around one call:
 * __call__ swaps (mode, callback) in, vectorcalls fn, and swaps the old
 * state back whatever the outcome (then, if fn raised, calls on_error).
 * It adds no Python frame.  It must not inspect frames or caches.
 */
#include "callable.h"
#include "hook.h"       /* hook_install, hook_uninstall */

#include <stddef.h>     /* offsetof */
#include <structmember.h>  /* PyMemberDef, T_OBJECT */

/* One thread-local block: a single TLS address computation per access
 * site (a shared object pays a __tls_get_addr call for each). */
static _Thread_local CallableState tl_state;

/* Threads whose mode is not OFF.  While it is 0 the hook is uninstalled,
 * so eager code runs with CPython's default evaluator (3.11 only inlines
 * Python-to-Python calls when no PEP 523 hook is set).  Read and changed
 * only with the GIL held, which orders every access: a plain counter (a
 * locked read-modify-write here cost ~25 ns per call, twice). */
static long active_threads;

/* The force_eager stance: modes other than OFF are set as OFF (GIL held). */
static int forced_off;

void
callable_set_forced_off(int on)
{
    forced_off = on != 0;
}

int
callable_forced_off(void)
{
    return forced_off;
}

CallableState *
callable_state(void)
{
    return &tl_state;
}

int
callable_mode(void)
{
    return tl_state.mode;
}

PyObject *
callable_callback(void)
{
    return tl_state.callback;
}

long
callable_active_threads(void)
{
    return active_threads;
}

/* Set st->mode, keeping active_threads and the hook in step: the hook is
 * installed while some thread is not OFF (re-installed on every switch on,
 * in case something replaced it), uninstalled when the last one goes OFF. */
static inline void
set_mode(CallableState *st, int mode)
{
    int was_on = st->mode != MODE_OFF, on = mode != MODE_OFF;
    st->mode = mode;
    if (on) {
        if (!was_on)
            active_threads++;
        hook_install();
    }
    else if (was_on && --active_threads == 0)
        hook_uninstall();
}

static inline void
state_swap(CallableState *st, int mode, PyObject *callback, int64_t backend, CallableSaved *prev)
{
    prev->mode = st->mode;
    prev->callback = st->callback;              /* ownership moves out */
    prev->backend = st->backend;
    st->callback = (callback == NULL || callback == Py_None) ? NULL : Py_NewRef(callback);
    st->backend = st->callback != NULL ? backend : 0;
    set_mode(st, mode);
}

static inline void
state_restore(CallableState *st, CallableSaved *prev)
{
    PyObject *old = st->callback;
    st->callback = prev->callback;
    st->backend = prev->backend;
    set_mode(st, prev->mode);
    Py_XDECREF(old);                            /* last: may run Python code */
}

int64_t
callable_backend_key(PyObject *callback)
{
    if (callback == NULL || callback == Py_None)
        return 0;
    PyObject *key = PyObject_GetAttrString(callback, "backend_key");
    if (key == NULL) {
        PyErr_Clear();                          /* no key: any entry serves it */
        return 0;
    }
    long long v = PyLong_Check(key) ? PyLong_AsLongLong(key) : 0;
    Py_DECREF(key);
    if (v == -1 && PyErr_Occurred())
        PyErr_Clear();
    return v > 0 ? (int64_t)v : 0;
}

void
callable_swap(int mode, PyObject *callback, int64_t backend, CallableSaved *prev)
{
    state_swap(&tl_state, mode, callback, backend, prev);
}

void
callable_restore(CallableSaved *prev)
{
    state_restore(&tl_state, prev);
}

/* ---- OptimizedCallable ------------------------------------------------ */

typedef struct {
    PyObject_HEAD
    PyObject *fn;           /* strong: the wrapped callable */
    PyObject *callback;     /* strong: compile callback, or None */
    int64_t backend;        /* callback's backend key, read once (callable_backend_key) */
    int mode;               /* MODE_* set around each call */
    PyObject *dict;         /* strong: instance __dict__, or NULL */
    Py_ssize_t outputs;     /* items each result must have (a tuple or list), or -1 */
    PyObject *what;         /* strong: str naming fn in that check's error, or NULL */
    PyObject *after_first;  /* strong: called with no arguments once, after the first
                             * call that returns normally; then NULL (NULL: none) */
    PyObject *on_error;     /* strong: called with no arguments after a call of fn that
                             * raised, the exception kept (a graph that failed inside
                             * a no_grad block puts the grad mode back), or NULL */
    vectorcallfunc vectorcall;
} OptimizedCallable;

/* The result of a compiled graph must be a tuple or list with one item per
 * graph output: the code calling it indexes it.  Returns result, or NULL
 * with a TypeError naming the backend (result consumed either way). */
static PyObject *
check_outputs(OptimizedCallable *self, PyObject *result)
{
    Py_ssize_t n = PyTuple_Check(result) ? PyTuple_GET_SIZE(result)
                 : PyList_Check(result) ? PyList_GET_SIZE(result) : -1;
    if (n == self->outputs)                     /* the shape the caller indexes? */
        return result;
    if (n < 0)
        PyErr_Format(PyExc_TypeError,
                     "dynamo: %S returned %.100s, expected a tuple of %zd graph output(s)",
                     self->what, Py_TYPE(result)->tp_name, self->outputs);
    else
        PyErr_Format(PyExc_TypeError,
                     "dynamo: %S returned %zd output(s) for a graph with %zd; a backend must "
                     "return a callable whose result has one item per graph output "
                     "(as gm.forward's does)", self->what, n, self->outputs);
    Py_DECREF(result);
    return NULL;
}

static PyObject *
oc_vectorcall(PyObject *self_, PyObject *const *args, size_t nargsf, PyObject *kwnames)
{
    OptimizedCallable *self = (OptimizedCallable *)self_;
    CallableState *st = &tl_state;              /* one TLS lookup for the call */
    CallableSaved prev;
    int mode = __builtin_expect(forced_off, 0) ? MODE_OFF : self->mode;  /* force_eager? */
    state_swap(st, mode, self->callback, self->backend, &prev);  /* installs the hook */
    PyObject *result = mode != MODE_OFF ? hook_vectorcall(st, self->fn, args, nargsf, kwnames)
                                        : PyObject_Vectorcall(self->fn, args, nargsf, kwnames);
    state_restore(st, &prev);
    if (result == NULL && self->on_error != NULL) {
        PyObject *exc_type, *exc_value, *exc_tb;
        PyErr_Fetch(&exc_type, &exc_value, &exc_tb);
        PyObject *r = PyObject_CallNoArgs(self->on_error);
        if (r == NULL)                          /* the graph's error is the one raised */
            PyErr_WriteUnraisable(self->on_error);
        Py_XDECREF(r);
        PyErr_Restore(exc_type, exc_value, exc_tb);
    }
    if (self->after_first != NULL && result != NULL) {     /* the first call only */
        PyObject *after = self->after_first;
        self->after_first = NULL;
        PyObject *r = PyObject_CallNoArgs(after);
        if (r == NULL)                          /* a report must not fail the call */
            PyErr_WriteUnraisable(after);
        Py_XDECREF(r);
        Py_DECREF(after);
    }
    if (self->outputs >= 0 && result != NULL)  /* a backend's result, checked? */
        result = check_outputs(self, result);
    return result;
}

static PyObject *
oc_new(PyTypeObject *type, PyObject *args, PyObject *kwargs)
{
    static char *kwlist[] = {"fn", "callback", "mode", "outputs", "what", "after_first",
                             "on_error", NULL};
    PyObject *fn, *callback, *what = NULL, *after_first = NULL, *on_error = NULL;
    int mode;
    Py_ssize_t outputs = -1;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "OOi|nUOO:OptimizedCallable", kwlist,
                                     &fn, &callback, &mode, &outputs, &what, &after_first,
                                     &on_error))
        return NULL;
    if (after_first == Py_None)
        after_first = NULL;
    if (on_error == Py_None)
        on_error = NULL;
    if (on_error != NULL && !PyCallable_Check(on_error)) {
        PyErr_SetString(PyExc_TypeError, "OptimizedCallable: on_error must be callable");
        return NULL;
    }
    if (after_first != NULL && !PyCallable_Check(after_first)) {
        PyErr_SetString(PyExc_TypeError, "OptimizedCallable: after_first must be callable");
        return NULL;
    }
    if (outputs >= 0 && what == NULL) {
        PyErr_SetString(PyExc_TypeError, "OptimizedCallable: outputs needs what (a str)");
        return NULL;
    }
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
    self->backend = callable_backend_key(callback);
    self->mode = mode;
    self->outputs = outputs < 0 ? -1 : outputs;
    self->what = Py_XNewRef(what);
    self->after_first = Py_XNewRef(after_first);
    self->on_error = Py_XNewRef(on_error);
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
    Py_VISIT(self->after_first);
    Py_VISIT(self->on_error);
    return 0;
}

static int
oc_clear(OptimizedCallable *self)
{
    Py_CLEAR(self->fn);
    Py_CLEAR(self->callback);
    Py_CLEAR(self->dict);
    Py_CLEAR(self->what);
    Py_CLEAR(self->after_first);
    Py_CLEAR(self->on_error);
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
