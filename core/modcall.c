/* core/modcall.c — ModuleCall: the `__call__` of dynamo's OptimizedModule.
 *
 * Owns: one descriptor type.  `OptimizedModule.__call__ = ModuleCall(attr,
 * slow)`: looked up on an instance (as CPython does for every call of it),
 * it returns the instance's `__dict__[attr]` (an OptimizedCallable wrapping
 * the original module, whose own `nn.Module.__call__` runs that module's
 * hooks) when the wrapper itself has no forward/backward hooks and no
 * `_compiled_call_impl`; otherwise `slow` bound to the instance
 * (`nn.Module.__call__`, hooks and all).  So calling the wrapper runs the
 * module's `__call__` machinery once, as eager does, not twice, and adds
 * no Python frame.  It must not look at frames, caches or guards.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <structmember.h>   /* PyMemberDef */

#include "modcall.h"

typedef struct {
    PyObject_HEAD
    PyObject *attr;         /* strong: str, the fast callable's __dict__ key */
    PyObject *slow;         /* strong: descriptor bound when hooks exist */
} ModuleCall;

/* The wrapper's own hook dicts, all of which must be empty for the fast path
 * (nn.Module._call_impl checks the same four, plus the global ones, which
 * the wrapped module's own call checks). */
static const char *const hook_names[] = {
    "_forward_hooks", "_forward_pre_hooks", "_backward_hooks", "_backward_pre_hooks",
};
#define NHOOKS (sizeof hook_names / sizeof hook_names[0])
static PyObject *hook_keys[NHOOKS];     /* strong, interned */
static PyObject *compiled_key;          /* strong, interned: "_compiled_call_impl" */

/* The fast callable of obj's dict d, or NULL (no error) when obj must take
 * the slow path. */
static PyObject *
fast_callable(ModuleCall *self, PyObject *d)
{
    for (size_t i = 0; i < NHOOKS; i++) {
        PyObject *hooks = PyDict_GetItemWithError(d, hook_keys[i]);
        if (hooks == NULL || !PyDict_Check(hooks) || PyDict_GET_SIZE(hooks) != 0)
            return NULL;
    }
    PyObject *compiled = PyDict_GetItemWithError(d, compiled_key);
    if (compiled != NULL && compiled != Py_None)
        return NULL;
    return PyDict_GetItemWithError(d, self->attr);
}

static PyObject *
mc_get(PyObject *self_, PyObject *obj, PyObject *type)
{
    ModuleCall *self = (ModuleCall *)self_;
    if (obj == NULL || obj == Py_None)
        return Py_NewRef(self_);
    PyObject *d = PyObject_GenericGetDict(obj, NULL);
    PyObject *fast = NULL;
    if (d == NULL) {                            /* no __dict__: the slow path */
        if (!PyErr_ExceptionMatches(PyExc_AttributeError))
            return NULL;
        PyErr_Clear();
    }
    else if (PyDict_Check(d)) {
        fast = fast_callable(self, d);
        Py_XINCREF(fast);
    }
    Py_XDECREF(d);
    if (fast != NULL)
        return fast;
    if (PyErr_Occurred())
        return NULL;
    descrgetfunc get = Py_TYPE(self->slow)->tp_descr_get;
    return get != NULL ? get(self->slow, obj, type) : Py_NewRef(self->slow);
}

static PyObject *
mc_new(PyTypeObject *type, PyObject *args, PyObject *kwargs)
{
    static char *kwlist[] = {"attr", "slow", NULL};
    PyObject *attr, *slow;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "UO:ModuleCall", kwlist, &attr, &slow))
        return NULL;
    if (!PyCallable_Check(slow)) {
        PyErr_SetString(PyExc_TypeError, "ModuleCall: slow must be callable");
        return NULL;
    }
    ModuleCall *self = (ModuleCall *)type->tp_alloc(type, 0);
    if (self == NULL)
        return NULL;
    self->attr = Py_NewRef(attr);
    PyUnicode_InternInPlace(&self->attr);
    self->slow = Py_NewRef(slow);
    return (PyObject *)self;
}

static int
mc_traverse(PyObject *self_, visitproc visit, void *arg)
{
    ModuleCall *self = (ModuleCall *)self_;
    Py_VISIT(self->slow);
    return 0;
}

static int
mc_clear(PyObject *self_)
{
    ModuleCall *self = (ModuleCall *)self_;
    Py_CLEAR(self->slow);
    return 0;
}

static void
mc_dealloc(PyObject *self_)
{
    ModuleCall *self = (ModuleCall *)self_;
    PyObject_GC_UnTrack(self_);
    Py_CLEAR(self->attr);
    mc_clear(self_);
    Py_TYPE(self_)->tp_free(self_);
}

static PyMemberDef mc_members[] = {
    {"attr", T_OBJECT, offsetof(ModuleCall, attr), READONLY, "the fast callable's __dict__ key"},
    {"slow", T_OBJECT, offsetof(ModuleCall, slow), READONLY, "bound when the wrapper has hooks"},
    {NULL},
};

PyTypeObject ModuleCall_Type = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "dynamo._C.ModuleCall",
    .tp_doc = PyDoc_STR("ModuleCall(attr, slow): __call__ descriptor of an optimized module: "
                        "instance.__dict__[attr] when the instance has no forward/backward "
                        "hooks of its own, else slow bound to the instance."),
    .tp_basicsize = sizeof(ModuleCall),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC,
    .tp_new = mc_new,
    .tp_descr_get = mc_get,
    .tp_traverse = mc_traverse,
    .tp_clear = mc_clear,
    .tp_dealloc = mc_dealloc,
    .tp_members = mc_members,
};

int
modcall_init(void)
{
    for (size_t i = 0; i < NHOOKS; i++)
        if (hook_keys[i] == NULL && (hook_keys[i] = PyUnicode_InternFromString(hook_names[i])) == NULL)
            return -1;
    if (compiled_key == NULL
            && (compiled_key = PyUnicode_InternFromString("_compiled_call_impl")) == NULL)
        return -1;
    return PyType_Ready(&ModuleCall_Type);
}
