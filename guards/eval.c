/* guards/eval.c — run a GirSet against a frame: -1 on pass, else the index
 * of the first failing check.
 *
 * Owns: source fetching (each source at most once per run, cached in a
 * stack buffer) and the check semantics of ARCHITECTURE.md.  A source that
 * cannot be fetched fails its guard; only the error that means "missing"
 * for that source kind is cleared.  It must not keep state between runs:
 * checks may call back into Python, which may re-enter the evaluator.
 */
#include "eval.h"

#include <string.h>     /* memset */

/* Marker in the value cache: the source was fetched and is missing. */
static char missing_marker;
#define MISSING ((PyObject *)&missing_marker)

/* One run: frame view, runtime and the per-source value cache. */
typedef struct {
    const GirSet *gs;           /* borrowed */
    const GevalFrame *fr;       /* borrowed */
    GirRuntime *rt;             /* borrowed */
    PyObject **values;          /* per source: NULL unfetched, MISSING, or strong */
    int have_tls;               /* tls_or / tls_and below are valid */
    uint64_t tls_or;            /* thread-local include set */
    uint64_t tls_and;           /* backend_mask | ~exclude set */
} Run;

/* Clear the current exception if it is one of `a` / `b` (b may be NULL).
 * Returns 0 when cleared (value missing), -1 when it must propagate. */
static int
clear_missing(PyObject *a, PyObject *b)
{
    if (PyErr_ExceptionMatches(a) || (b != NULL && PyErr_ExceptionMatches(b))) {
        PyErr_Clear();
        return 0;
    }
    return -1;
}

static PyObject *fetch(Run *r, int i);

/* Fetch base[key] into a new reference, MISSING, or NULL on error. */
static PyObject *
fetch_item(const GirSource *s, PyObject *base /* borrowed */)
{
    PyObject *v;
    if (PyDict_CheckExact(base)) {                  /* no exception on a miss */
        v = PyDict_GetItemWithError(base, s->name);
        if (v != NULL)
            return Py_NewRef(v);
        return PyErr_Occurred() ? NULL : MISSING;
    }
    if ((PyList_CheckExact(base) || PyTuple_CheckExact(base)) && PyLong_Check(s->name)) {
        Py_ssize_t n = PySequence_Fast_GET_SIZE(base), k = s->index;
        if (k < 0)
            k += n;
        return (k >= 0 && k < n) ? Py_NewRef(PySequence_Fast_GET_ITEM(base, k)) : MISSING;
    }
    v = PyObject_GetItem(base, s->name);
    if (v == NULL && clear_missing(PyExc_KeyError, PyExc_IndexError) == 0)
        return MISSING;
    return v;
}

/* Fetch source i (its base first); result is cached in r->values.
 * Returns a borrowed value, MISSING, or NULL with an exception. */
static PyObject *
fetch(Run *r, int i)
{
    if (r->values[i] != NULL)                       /* fetched this run? */
        return r->values[i];
    const GirSource *s = &r->gs->sources[i];
    const GevalFrame *fr = r->fr;
    PyObject *v = MISSING, *base = NULL;
    if (s->base >= 0) {
        base = fetch(r, s->base);
        if (base == NULL)
            return NULL;
        if (base == MISSING)
            return r->values[i] = MISSING;
    }
    switch (s->kind) {
    case GIR_SRC_LOCAL:
        if (s->index < fr->nlocals && fr->locals[s->index] != NULL)
            v = Py_NewRef(fr->locals[s->index]);
        break;
    case GIR_SRC_GLOBAL:
        v = PyDict_GetItemWithError(fr->globals, s->name);
        if (v == NULL && !PyErr_Occurred())         /* not a global: builtin? */
            v = PyDict_GetItemWithError(fr->builtins, s->name);
        if (v == NULL)
            return PyErr_Occurred() ? NULL : (r->values[i] = MISSING);
        Py_INCREF(v);
        break;
    case GIR_SRC_CLOSURE:
        if (fr->closure != NULL && s->index < PyTuple_GET_SIZE(fr->closure)) {
            PyObject *cell = PyTuple_GET_ITEM(fr->closure, s->index);
            if (PyCell_Check(cell) && PyCell_GET(cell) != NULL)
                v = Py_NewRef(PyCell_GET(cell));
        }
        break;
    case GIR_SRC_ATTR:
        if (_PyObject_LookupAttr(base, s->name, &v) < 0)
            return NULL;
        if (v == NULL)                              /* AttributeError was cleared */
            v = MISSING;
        break;
    case GIR_SRC_ITEM:
        v = fetch_item(s, base);
        if (v == NULL)
            return NULL;
        break;
    default:                                        /* GIR_SRC_NONE */
        break;
    }
    return r->values[i] = v;
}

static int
as_ssize(PyObject *o /* borrowed */, Py_ssize_t *out)
{
    *out = PyLong_AsSsize_t(o);
    return (*out == -1 && PyErr_Occurred()) ? -1 : 0;
}

/* Call obj.name() and convert the result to a Py_ssize_t. */
static int
call_ssize(PyObject *obj, PyObject *name, Py_ssize_t *out)
{
    PyObject *res = PyObject_CallMethodNoArgs(obj, name);
    if (res == NULL)
        return -1;
    int rc = as_ssize(res, out);
    Py_DECREF(res);
    return rc;
}

static int
raw_keys(GirRuntime *rt, PyObject *keyset /* strong, consumed */, uint64_t *out)
{
    if (keyset == NULL)
        return -1;
    PyObject *raw = PyObject_CallMethodNoArgs(keyset, rt->s_raw_repr);
    Py_DECREF(keyset);
    if (raw == NULL)
        return -1;
    *out = PyLong_AsUnsignedLongLong(raw);
    Py_DECREF(raw);
    return (*out == (uint64_t)-1 && PyErr_Occurred()) ? -1 : 0;
}

/* (keys | include) - exclude, as c10::DispatchKeySet computes it. */
static int
dispatch_keys(Run *r, PyObject *t /* borrowed */, uint64_t *out)
{
    GirRuntime *rt = r->rt;
    if (!r->have_tls) {                             /* once per run */
        uint64_t exclude;
        if (raw_keys(rt, PyObject_CallNoArgs(rt->tls_include), &r->tls_or) < 0
                || raw_keys(rt, PyObject_CallNoArgs(rt->tls_exclude), &exclude) < 0)
            return -1;
        r->tls_and = rt->backend_mask | ~exclude;
        r->have_tls = 1;
    }
    uint64_t keys;
    if (raw_keys(rt, PyObject_CallOneArg(rt->dispatch_keys, t), &keys) < 0)
        return -1;
    *out = (keys | r->tls_or) & r->tls_and;
    return 0;
}

/* Compare t.size() / t.stride() with dims; -1 error, 0 differ, 1 equal. */
static int
dims_match(PyObject *t, PyObject *method, const Py_ssize_t *dims, Py_ssize_t ndim)
{
    PyObject *actual = PyObject_CallMethodNoArgs(t, method);
    if (actual == NULL)
        return -1;
    int rc = 0;
    if (!PyTuple_Check(actual) || PyTuple_GET_SIZE(actual) != ndim)
        goto done;
    for (Py_ssize_t i = 0; i < ndim; i++) {
        Py_ssize_t d;
        if (as_ssize(PyTuple_GET_ITEM(actual, i), &d) < 0) {
            rc = -1;
            goto done;
        }
        if (dims[i] >= 0 && dims[i] != d)           /* static dim differs? */
            goto done;
    }
    rc = 1;
done:
    Py_DECREF(actual);
    return rc;
}

/* Attribute getter helper: -1 error, else 0 with *out strong. */
static int
get_attr(PyObject *o, PyObject *name, PyObject **out)
{
    *out = PyObject_GetAttr(o, name);
    return *out == NULL ? -1 : 0;
}

/* TENSOR_MATCH; -1 error, 0 fail, 1 pass.  Cheapest properties first. */
static int
tensor_match(Run *r, const GirTensor *e, PyObject *v)
{
    GirRuntime *rt = r->rt;
    PyObject *attr = NULL;
    Py_ssize_t ndim;
    uint64_t keys;
    int ok;
    if ((PyObject *)Py_TYPE(v) != e->cls)
        return 0;
    if (get_attr(v, rt->s_dtype, &attr) < 0)
        return -1;
    ok = attr == e->dtype;
    Py_DECREF(attr);
    if (!ok)
        return 0;
    if (get_attr(v, rt->s_requires_grad, &attr) < 0)
        return -1;
    ok = PyObject_IsTrue(attr);
    Py_DECREF(attr);
    if (ok < 0)
        return -1;
    if (ok != e->requires_grad)
        return 0;
    if (call_ssize(v, rt->s_dim, &ndim) < 0)
        return -1;
    if (ndim != e->ndim)
        return 0;
    if (get_attr(v, rt->s_device, &attr) < 0)
        return -1;
    ok = PyObject_RichCompareBool(attr, e->device, Py_EQ);
    Py_DECREF(attr);
    if (ok <= 0)
        return ok;
    if (dispatch_keys(r, v, &keys) < 0)
        return -1;
    if (keys != e->dispatch_keys)
        return 0;
    if (e->sizes != NULL && (ok = dims_match(v, rt->s_size, e->sizes, ndim)) <= 0)
        return ok;
    if (e->strides != NULL && (ok = dims_match(v, rt->s_stride, e->strides, ndim)) <= 0)
        return ok;
    return 1;
}

/* `type(v) is dict and tuple(v) == keys`; -1 error, 0 fail, 1 pass. */
static int
dict_keys_match(PyObject *v, PyObject *keys /* tuple */)
{
    if (!PyDict_CheckExact(v) || PyDict_GET_SIZE(v) != PyTuple_GET_SIZE(keys))
        return 0;
    Py_ssize_t pos = 0, i = 0;
    PyObject *key, *value;
    while (PyDict_Next(v, &pos, &key, &value)) {
        PyObject *want = PyTuple_GET_ITEM(keys, i++);
        if (key == want)
            continue;
        Py_INCREF(key);                             /* __eq__ may mutate v */
        int eq = PyObject_RichCompareBool(key, want, Py_EQ);
        Py_DECREF(key);
        if (eq <= 0)
            return eq;
        if (PyDict_GET_SIZE(v) != PyTuple_GET_SIZE(keys))
            return 0;
    }
    return 1;
}

/* One check; -1 error, 0 fail, 1 pass. */
static int
check(Run *r, const GirCheck *c)
{
    if (c->kind == GIR_GRAD_MODE) {
        PyObject *on = PyObject_CallNoArgs(r->rt->is_grad_enabled);
        if (on == NULL)
            return -1;
        Py_DECREF(on);                              /* a bool singleton */
        return (on == Py_True) == (c->n != 0);
    }
    PyObject *v = fetch(r, c->source);
    if (v == NULL)
        return -1;
    if (v == MISSING)
        return 0;
    switch (c->kind) {
    case GIR_TYPE_MATCH:
        return (PyObject *)Py_TYPE(v) == c->obj;
    case GIR_ID_MATCH:
    case GIR_FUNCTION_MATCH:
        return v == c->obj;
    case GIR_EQUALS_MATCH:
        if (Py_TYPE(v) != Py_TYPE(c->obj))
            return 0;
        return v == c->obj ? 1 : PyObject_RichCompareBool(v, c->obj, Py_EQ);
    case GIR_LENGTH: {
        if ((PyObject *)Py_TYPE(v) != c->obj)
            return 0;
        Py_ssize_t n = PyObject_Length(v);
        return n < 0 ? -1 : n == c->n;
    }
    case GIR_TENSOR_MATCH:
        return tensor_match(r, c->tensor, v);
    case GIR_DICT_KEYS:
        return dict_keys_match(v, c->obj);
    case GIR_NONE_MATCH:
        return (v == Py_None) == (c->n != 0);
    }
    PyErr_SetString(PyExc_SystemError, "dynamo: unknown guard kind in a compiled set");
    return -1;
}

Py_ssize_t
geval_run(const GirSet *gs, const GevalFrame *fr, GirRuntime *rt)
{
    PyObject *stack_values[GEVAL_STACK_SOURCES];
    Run r = {.gs = gs, .fr = fr, .rt = rt, .values = stack_values};
    Py_ssize_t result = -1;
    if (gs->nsources > GEVAL_STACK_SOURCES) {       /* large set: heap cache */
        r.values = PyMem_Calloc(gs->nsources, sizeof(PyObject *));
        if (r.values == NULL) {
            PyErr_NoMemory();
            return -2;
        }
    }
    else
        memset(stack_values, 0, gs->nsources * sizeof(PyObject *));
    if (gs->needs_torch && (rt == NULL || !rt->loaded)) {
        PyErr_SetString(PyExc_SystemError, "dynamo: torch runtime of the guards not loaded");
        result = -2;
        goto done;
    }
    for (Py_ssize_t i = 0; i < gs->nchecks; i++) {
        int ok = check(&r, &gs->checks[i]);
        if (ok < 0) {
            result = -2;
            goto done;
        }
        if (ok == 0) {
            result = i;
            goto done;
        }
    }
done:
    for (Py_ssize_t i = 0; i < gs->nsources; i++) {
        if (r.values[i] != MISSING)
            Py_XDECREF(r.values[i]);
    }
    if (r.values != stack_values)
        PyMem_Free(r.values);
    return result;
}
