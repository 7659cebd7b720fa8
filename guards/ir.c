/* guards/ir.c — compile the Python guard tuples into a GirSet.
 *
 * Owns: parsing and validation of the tuple IR (ARCHITECTURE.md, "Guard IR"),
 * deduplication of sources inside one set, and the lazily imported torch
 * callables (GirRuntime).  Every malformed guard is reported here, at compile
 * time, so the evaluator never sees a shape it does not know.  It must not
 * evaluate guards and must not keep any state outside the set / runtime.
 */
#include "ir.h"

#include <string.h>     /* memset */

#include "tmeta.h"      /* dtype / device codes of TENSOR_MATCH, tmeta_init */

uint64_t gir_dead_epoch;

/* Growing arrays and the dedup memo of one compile. */
typedef struct {
    GirSet *gs;             /* owned until returned */
    Py_ssize_t cap_sources;
    PyObject *memo;         /* strong: dict source tuple -> index */
    GirRuntime *rt;         /* borrowed */
    Py_ssize_t guard_index; /* for error messages */
    PyObject *died;         /* strong: weakref callback of this set, or NULL */
} Builder;

static int
fail(Builder *b, PyObject *exc, const char *what)
{
    PyErr_Format(exc, "guard %zd: %s", b->guard_index, what);
    return -1;
}

/* Append a source; steals nothing.  Returns its index or -1. */
static int
add_source(Builder *b, int kind, int base, Py_ssize_t index,
           PyObject *name /* borrowed, may be NULL */,
           PyObject *spec /* borrowed */)
{
    GirSet *gs = b->gs;
    if (gs->nsources == b->cap_sources) {
        Py_ssize_t cap = b->cap_sources ? 2 * b->cap_sources : 8;
        GirSource *grown = PyMem_Realloc(gs->sources, cap * sizeof(GirSource));
        if (grown == NULL) {
            PyErr_NoMemory();
            return -1;
        }
        gs->sources = grown;
        b->cap_sources = cap;
    }
    if (gs->nsources >= INT_MAX)
        return fail(b, PyExc_ValueError, "too many sources");
    GirSource *s = &gs->sources[gs->nsources];
    s->kind = kind;
    s->base = base;
    s->index = index;
    s->name = Py_XNewRef(name);
    s->spec = Py_NewRef(spec);
    return (int)gs->nsources++;
}

static int
nonneg_index(Builder *b, PyObject *o, Py_ssize_t *out)
{
    if (!PyLong_Check(o))
        return fail(b, PyExc_TypeError, "source index must be an int");
    *out = PyLong_AsSsize_t(o);
    if (*out == -1 && PyErr_Occurred())
        return -1;
    if (*out < 0)
        return fail(b, PyExc_ValueError, "source index must be >= 0");
    return 0;
}

/* Compile one source tuple (recursively for its base, at most
 * GIR_MAX_DEPTH deep).  Returns the source index or -1. */
static int
compile_source(Builder *b, PyObject *spec /* borrowed */, int depth)
{
    if (depth > GIR_MAX_DEPTH)
        return fail(b, PyExc_ValueError, "source nested too deeply");
    if (!PyTuple_Check(spec) || PyTuple_GET_SIZE(spec) < 1
            || !PyLong_Check(PyTuple_GET_ITEM(spec, 0)))
        return fail(b, PyExc_TypeError, "source must be a tuple (kind, ...)");
    PyObject *known = PyDict_GetItemWithError(b->memo, spec);
    if (known != NULL)                          /* same source seen before? */
        return (int)PyLong_AsLong(known);
    if (PyErr_Occurred())                       /* unhashable key */
        return -1;

    long kind = PyLong_AsLong(PyTuple_GET_ITEM(spec, 0));
    Py_ssize_t n = PyTuple_GET_SIZE(spec);
    Py_ssize_t index = 0;
    int base = -1;
    PyObject *name = NULL;                      /* borrowed */
    switch (kind) {
    case GIR_SRC_LOCAL:
    case GIR_SRC_CLOSURE:
        if (n != 2)
            return fail(b, PyExc_ValueError, "LOCAL/CLOSURE source is (kind, index)");
        if (nonneg_index(b, PyTuple_GET_ITEM(spec, 1), &index) < 0)
            return -1;
        break;
    case GIR_SRC_GLOBAL:
        if (n != 2 || !PyUnicode_Check(PyTuple_GET_ITEM(spec, 1)))
            return fail(b, PyExc_TypeError, "GLOBAL source is (1, name: str)");
        name = PyTuple_GET_ITEM(spec, 1);
        break;
    case GIR_SRC_ATTR:
    case GIR_SRC_ITEM:
    case GIR_SRC_STATIC_ATTR:
    case GIR_SRC_GENERIC_ATTR:
        if (n != 3)
            return fail(b, PyExc_ValueError, "ATTR/ITEM source is (kind, base, name)");
        name = PyTuple_GET_ITEM(spec, 2);
        if (kind != GIR_SRC_ITEM && !PyUnicode_Check(name))
            return fail(b, PyExc_TypeError, "ATTR name must be a str");
        if (kind == GIR_SRC_ITEM) {
            if (PyLong_Check(name)) {
                index = PyLong_AsSsize_t(name);
                if (index == -1 && PyErr_Occurred())
                    return -1;
            }
            else if (!PyUnicode_Check(name))
                return fail(b, PyExc_TypeError, "ITEM key must be an int or a str");
        }
        base = compile_source(b, PyTuple_GET_ITEM(spec, 1), depth + 1);
        if (base < 0)
            return -1;
        break;
    case GIR_SRC_NONE:
        if (n != 1)
            return fail(b, PyExc_ValueError, "NONE source is (5,)");
        break;
    default:
        return fail(b, PyExc_ValueError, "unknown source kind");
    }
    int at = add_source(b, (int)kind, base, index, name, spec);
    if (at < 0)
        return -1;
    PyObject *boxed = PyLong_FromLong(at);
    if (boxed == NULL)
        return -1;
    int rc = PyDict_SetItem(b->memo, spec, boxed);
    Py_DECREF(boxed);
    return rc < 0 ? -1 : at;
}

/* Parse a sizes/strides field: None -> *out NULL; tuple of ndim ints or
 * None (dynamic dim) -> owned array. */
static int
parse_dims(Builder *b, PyObject *o, Py_ssize_t ndim, Py_ssize_t **out)
{
    *out = NULL;
    if (o == Py_None)
        return 0;
    if (!PyTuple_Check(o) || PyTuple_GET_SIZE(o) != ndim)
        return fail(b, PyExc_TypeError,
                    "TENSOR_MATCH sizes/strides must be None or a tuple of ndim items");
    Py_ssize_t *dims = PyMem_Calloc(ndim ? ndim : 1, sizeof(Py_ssize_t));
    if (dims == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    for (Py_ssize_t i = 0; i < ndim; i++) {
        PyObject *d = PyTuple_GET_ITEM(o, i);
        if (d == Py_None) {                     /* dynamic dimension? */
            dims[i] = -1;
            continue;
        }
        dims[i] = PyLong_Check(d) ? PyLong_AsSsize_t(d) : -2;
        if (dims[i] < 0) {
            PyMem_Free(dims);
            if (!PyErr_Occurred())
                fail(b, PyExc_ValueError, "TENSOR_MATCH dims must be ints >= 0 or None");
            return -1;
        }
    }
    *out = dims;
    return 0;
}

static int
parse_tensor(Builder *b, GirCheck *c, PyObject *g /* borrowed */)
{
    if (PyTuple_GET_SIZE(g) != 10)
        return fail(b, PyExc_ValueError,
                    "TENSOR_MATCH is (4, source, cls, dtype, device, requires_grad, "
                    "dispatch_keys, ndim, sizes, strides)");
    PyObject *cls = PyTuple_GET_ITEM(g, 2);
    if (!PyType_Check(cls))
        return fail(b, PyExc_TypeError, "TENSOR_MATCH cls must be a type");
    if (gir_runtime_load(b->rt) < 0)            /* tmeta conversions need torch */
        return -1;
    GirTensor *t = PyMem_Calloc(1, sizeof(GirTensor));
    if (t == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    c->tensor = t;
    t->cls = Py_NewRef(cls);
    t->dtype = Py_NewRef(PyTuple_GET_ITEM(g, 3));
    t->device = Py_NewRef(PyTuple_GET_ITEM(g, 4));
    if (tmeta_dtype_from_py(t->dtype, &t->dtype_code) < 0
            || tmeta_device_from_py(t->device, &t->device_type, &t->device_index) < 0)
        return -1;
    t->requires_grad = PyObject_IsTrue(PyTuple_GET_ITEM(g, 5));
    if (t->requires_grad < 0)
        return -1;
    t->dispatch_keys = PyLong_AsUnsignedLongLong(PyTuple_GET_ITEM(g, 6));
    if (t->dispatch_keys == (uint64_t)-1 && PyErr_Occurred())
        return -1;
    t->ndim = PyLong_AsSsize_t(PyTuple_GET_ITEM(g, 7));
    if (t->ndim == -1 && PyErr_Occurred())
        return -1;
    if (t->ndim < 0)
        return fail(b, PyExc_ValueError, "TENSOR_MATCH ndim must be >= 0");
    if (parse_dims(b, PyTuple_GET_ITEM(g, 8), t->ndim, &t->sizes) < 0
            || parse_dims(b, PyTuple_GET_ITEM(g, 9), t->ndim, &t->strides) < 0)
        return -1;
    b->gs->needs_torch = 1;
    return 0;
}

/* Weakref callback: the object of an ID/FUNCTION_MATCH died, so its set
 * can never pass again (and a new object may reuse the address).  self is
 * a capsule holding the GirSet; the set owns the weakref, so the callback
 * cannot outlive it. */
static PyObject *
identity_died(PyObject *self, PyObject *wref)
{
    GirSet *gs = PyCapsule_GetPointer(self, NULL);
    if (gs == NULL)
        return NULL;
    gs->dead = 1;
    gir_dead_epoch++;
    Py_RETURN_NONE;
}

static PyMethodDef identity_died_def = {"_dynamo_guard_died", identity_died, METH_O, NULL};

/* ID/FUNCTION_MATCH: keep e alive only if it cannot be watched by weakref. */
static int
watch_identity(Builder *b, GirCheck *c, PyObject *e /* borrowed */)
{
    if (!PyType_SUPPORTS_WEAKREFS(Py_TYPE(e))) {
        c->obj = Py_NewRef(e);
        return 0;
    }
    if (b->died == NULL) {
        PyObject *capsule = PyCapsule_New(b->gs, NULL, NULL);
        if (capsule == NULL)
            return -1;
        b->died = PyCFunction_New(&identity_died_def, capsule);
        Py_DECREF(capsule);
        if (b->died == NULL)
            return -1;
    }
    c->wref = PyWeakref_NewRef(e, b->died);
    if (c->wref == NULL)
        return -1;
    c->obj = e;                                 /* borrowed, watched */
    return 0;
}

/* Expected field count (including kind and source) per check kind. */
static const Py_ssize_t check_arity[GIR_NKINDS] = {
    [GIR_TYPE_MATCH] = 3, [GIR_ID_MATCH] = 3, [GIR_EQUALS_MATCH] = 3,
    [GIR_LENGTH] = 4, [GIR_TENSOR_MATCH] = 10, [GIR_GRAD_MODE] = 3,
    [GIR_DICT_KEYS] = 3, [GIR_FUNCTION_MATCH] = 3, [GIR_NONE_MATCH] = 3,
    [GIR_SAME_OBJECT] = 4, [GIR_GLOBAL_STATE] = 3, [GIR_STORAGE_MATCH] = 4,
    [GIR_BACKEND_MATCH] = 3,
    [GIR_SHAPE_GUARD] = 4,
};

/* Stack effect of each program step: values popped, values pushed. */
static int
shape_step_arity(int op, int *pops)
{
    if (op <= GIR_SH_CONST || gir_shape_is_leaf(op))
        *pops = 0;
    else if (op >= GIR_SH_NOT)
        *pops = 1;
    else
        *pops = 2;
    return op >= 0 && op < GIR_SH_NOPS;
}

/* Compile SHAPE_GUARD's program tuple into c->shape: every step known, its
 * leaves value sources, the stack never deeper than GIR_SHAPE_MAX_STACK and
 * exactly one value left.  c->source must be the first leaf's source. */
static int
parse_shape(Builder *b, GirCheck *c, PyObject *prog /* borrowed */)
{
    if (!PyTuple_Check(prog) || PyTuple_GET_SIZE(prog) == 0 || PyTuple_GET_SIZE(prog) > 4096)
        return fail(b, PyExc_TypeError, "SHAPE_GUARD expects (text, program tuple)");
    GirShape *sh = PyMem_Calloc(1, sizeof(GirShape));
    if (sh == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    c->shape = sh;
    sh->spec = Py_NewRef(prog);
    sh->n = (int)PyTuple_GET_SIZE(prog);
    sh->steps = PyMem_Calloc(sh->n, sizeof(GirShapeStep));
    if (sh->steps == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    int depth = 0, first_leaf = -1;
    for (int i = 0; i < sh->n; i++) {
        PyObject *st = PyTuple_GET_ITEM(prog, i);
        if (!PyTuple_Check(st) || PyTuple_GET_SIZE(st) < 1 || !PyLong_Check(PyTuple_GET_ITEM(st, 0)))
            return fail(b, PyExc_TypeError, "SHAPE_GUARD step must be a tuple (op, ...)");
        GirShapeStep *s = &sh->steps[i];
        long op = PyLong_AsLong(PyTuple_GET_ITEM(st, 0));
        int pops;
        if (!shape_step_arity((int)op, &pops) || (op == -1 && PyErr_Occurred()))
            return PyErr_Occurred() ? -1 : fail(b, PyExc_ValueError, "unknown SHAPE_GUARD step");
        s->op = (int)op;
        s->source = -1;
        Py_ssize_t want = op == GIR_SH_CONST ? 2 : gir_shape_is_leaf((int)op) ? 3 : 1;
        if (PyTuple_GET_SIZE(st) != want)
            return fail(b, PyExc_ValueError, "wrong number of fields in a SHAPE_GUARD step");
        if (op == GIR_SH_CONST) {
            s->value = PyLong_AsLongLong(PyTuple_GET_ITEM(st, 1));
            if (s->value == -1 && PyErr_Occurred())
                return -1;
        }
        else if (gir_shape_is_leaf((int)op)) {
            long dim = PyLong_AsLong(PyTuple_GET_ITEM(st, 2));
            if (dim == -1 && PyErr_Occurred())
                return -1;
            if (dim < 0 || dim > INT_MAX)
                return fail(b, PyExc_ValueError, "SHAPE_GUARD dimension out of range");
            s->dim = (int)dim;
            s->source = compile_source(b, PyTuple_GET_ITEM(st, 1), 0);
            if (s->source < 0)
                return -1;
            if (b->gs->sources[s->source].kind == GIR_SRC_NONE)
                return fail(b, PyExc_ValueError, "SHAPE_GUARD leaves need a value source");
            if (first_leaf < 0)
                first_leaf = s->source;
        }
        if (depth < pops)
            return fail(b, PyExc_ValueError, "SHAPE_GUARD program pops an empty stack");
        depth += 1 - pops;
        if (depth > GIR_SHAPE_MAX_STACK)
            return fail(b, PyExc_ValueError, "SHAPE_GUARD program too deep");
    }
    if (depth != 1)
        return fail(b, PyExc_ValueError, "SHAPE_GUARD program must leave one value");
    if (first_leaf != c->source)
        return fail(b, PyExc_ValueError, "SHAPE_GUARD source must be its first leaf's");
    b->gs->needs_torch = 1;                     /* sizes are read through tmeta */
    return gir_runtime_load(b->rt);
}

/* Fill check c from guard tuple g. */
static int
compile_check(Builder *b, GirCheck *c, PyObject *g /* borrowed */)
{
    if (!PyTuple_Check(g) || PyTuple_GET_SIZE(g) < 2
            || !PyLong_Check(PyTuple_GET_ITEM(g, 0)))
        return fail(b, PyExc_TypeError, "guard must be a tuple (kind, source, *expected)");
    long kind = PyLong_AsLong(PyTuple_GET_ITEM(g, 0));
    if (kind < 0 || kind >= GIR_NKINDS)
        return fail(b, PyExc_ValueError, "unknown guard kind");
    c->kind = (int)kind;
    if (PyTuple_GET_SIZE(g) != check_arity[kind])
        return fail(b, PyExc_ValueError, "wrong number of expected fields for this kind");
    c->source = compile_source(b, PyTuple_GET_ITEM(g, 1), 0);
    if (c->source < 0)
        return -1;
    int none_source = b->gs->sources[c->source].kind == GIR_SRC_NONE;
    if (none_source != (kind == GIR_GRAD_MODE || kind == GIR_GLOBAL_STATE
                        || kind == GIR_BACKEND_MATCH))
        return fail(b, PyExc_ValueError, "GRAD_MODE/GLOBAL_STATE/BACKEND_MATCH need source (5,), "
                                         "other kinds a value source");
    PyObject *e = PyTuple_GET_ITEM(g, 2);
    switch (kind) {
    case GIR_TYPE_MATCH:
        if (!PyType_Check(e))
            return fail(b, PyExc_TypeError, "TYPE_MATCH expects a type");
        c->obj = Py_NewRef(e);
        return 0;
    case GIR_ID_MATCH:
    case GIR_FUNCTION_MATCH:
        return watch_identity(b, c, e);
    case GIR_EQUALS_MATCH:
        c->obj = Py_NewRef(e);
        return 0;
    case GIR_LENGTH:
        if (!PyType_Check(e))
            return fail(b, PyExc_TypeError, "LENGTH expects (type, n)");
        c->obj = Py_NewRef(e);
        c->n = PyLong_AsSsize_t(PyTuple_GET_ITEM(g, 3));
        return (c->n == -1 && PyErr_Occurred()) ? -1 : 0;
    case GIR_TENSOR_MATCH:
        return parse_tensor(b, c, g);
    case GIR_GRAD_MODE:
    case GIR_NONE_MATCH:
        c->n = PyObject_IsTrue(e);
        b->gs->needs_torch |= kind == GIR_GRAD_MODE;
        return c->n < 0 ? -1 : 0;
    case GIR_GLOBAL_STATE:
        if (!PyLong_CheckExact(e))
            return fail(b, PyExc_TypeError, "GLOBAL_STATE expects an int state word");
        c->n = (Py_ssize_t)PyLong_AsLongLong(e);
        b->gs->needs_torch = 1;
        return (c->n == -1 && PyErr_Occurred()) ? -1 : 0;
    case GIR_BACKEND_MATCH:
        if (!PyLong_CheckExact(e))
            return fail(b, PyExc_TypeError, "BACKEND_MATCH expects an int backend key");
        c->n = (Py_ssize_t)PyLong_AsLongLong(e);
        if (c->n == -1 && PyErr_Occurred())
            return -1;
        if (c->n <= 0)                          /* 0 is "any": no entry is made for it */
            return fail(b, PyExc_ValueError, "BACKEND_MATCH expects a key > 0");
        return 0;
    case GIR_DICT_KEYS:                         /* n: 0 a dict, 1 an OrderedDict */
        if (PyODict_CheckExact(e)) {            /* its keys in its order, and its type */
            c->n = 1;
            c->obj = PySequence_Tuple(e);
            return c->obj == NULL ? -1 : 0;
        }
        if (!PyTuple_Check(e))
            return fail(b, PyExc_TypeError,
                        "DICT_KEYS expects a tuple of keys or an OrderedDict of them");
        c->obj = Py_NewRef(e);
        return 0;
    case GIR_SAME_OBJECT:                       /* e is the other source */
    case GIR_STORAGE_MATCH: {
        int same = PyObject_IsTrue(PyTuple_GET_ITEM(g, 3));
        if (same < 0)
            return -1;
        int other = compile_source(b, e, 0);
        if (other < 0)
            return -1;
        if (b->gs->sources[other].kind == GIR_SRC_NONE || other == c->source)
            return fail(b, PyExc_ValueError,
                        "SAME_OBJECT/STORAGE_MATCH needs another value source");
        if (kind == GIR_STORAGE_MATCH) {        /* storages are read through tmeta */
            if (gir_runtime_load(b->rt) < 0)
                return -1;
            b->gs->needs_torch = 1;
        }
        c->n = other;
        c->obj = Py_NewRef(same ? Py_True : Py_False);
        return 0;
    }
    case GIR_SHAPE_GUARD:
        if (!PyUnicode_Check(e))
            return fail(b, PyExc_TypeError, "SHAPE_GUARD expects (text, program)");
        c->obj = Py_NewRef(e);
        return parse_shape(b, c, PyTuple_GET_ITEM(g, 3));
    }
    return fail(b, PyExc_ValueError, "unknown guard kind");
}

GirSet *
gir_compile(PyObject *guards, GirRuntime *rt)
{
    Builder b = {.rt = rt, .guard_index = -1};
    PyObject *seq = PySequence_Fast(guards, "guards must be a list or a tuple");
    if (seq == NULL)
        return NULL;
    b.gs = PyMem_Calloc(1, sizeof(GirSet));
    if (b.gs != NULL)
        b.gs->refs = 1;
    b.memo = PyDict_New();
    if (b.gs == NULL || b.memo == NULL) {
        if (b.gs == NULL)
            PyErr_NoMemory();
        goto error;
    }
    Py_ssize_t n = PySequence_Fast_GET_SIZE(seq);
    b.gs->checks = PyMem_Calloc(n ? n : 1, sizeof(GirCheck));
    if (b.gs->checks == NULL) {
        PyErr_NoMemory();
        goto error;
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        b.guard_index = i;
        b.gs->nchecks = i + 1;                  /* so gir_free sees it */
        if (compile_check(&b, &b.gs->checks[i], PySequence_Fast_GET_ITEM(seq, i)) < 0)
            goto error;
    }
    if (b.gs->needs_torch && gir_runtime_load(rt) < 0)
        goto error;
    Py_DECREF(seq);
    Py_DECREF(b.memo);
    Py_XDECREF(b.died);
    return b.gs;

error:
    Py_DECREF(seq);
    Py_XDECREF(b.memo);
    Py_XDECREF(b.died);
    gir_free(b.gs);
    return NULL;
}

void
gir_free(GirSet *gs)
{
    if (gs == NULL || --gs->refs > 0)
        return;
    for (Py_ssize_t i = 0; i < gs->nchecks; i++) {
        GirCheck *c = &gs->checks[i];
        if (c->wref != NULL) {                  /* obj is borrowed */
            Py_CLEAR(c->wref);
            c->obj = NULL;
        }
        Py_CLEAR(c->obj);
        if (c->tensor != NULL) {
            Py_CLEAR(c->tensor->cls);
            Py_CLEAR(c->tensor->dtype);
            Py_CLEAR(c->tensor->device);
            PyMem_Free(c->tensor->sizes);
            PyMem_Free(c->tensor->strides);
            PyMem_Free(c->tensor);
            c->tensor = NULL;
        }
        if (c->shape != NULL) {
            Py_CLEAR(c->shape->spec);
            PyMem_Free(c->shape->steps);
            PyMem_Free(c->shape);
            c->shape = NULL;
        }
    }
    for (Py_ssize_t i = 0; i < gs->nsources; i++) {
        Py_CLEAR(gs->sources[i].name);
        Py_CLEAR(gs->sources[i].spec);
    }
    PyMem_Free(gs->checks);
    PyMem_Free(gs->sources);
    PyMem_Free(gs);
}

/* Backend bits of a DispatchKeySet: `x - x` keeps exactly them (c10's
 * operator- only removes functionality bits). */
static int
load_backend_mask(GirRuntime *rt, PyObject *keyset_type /* borrowed */)
{
    int rc = -1;
    PyObject *all = NULL, *diff = NULL, *raw = NULL;
    all = PyObject_CallMethod(keyset_type, "from_raw_repr", "K",
                              (unsigned long long)UINT64_MAX);
    if (all == NULL)
        goto error;
    diff = PyNumber_Subtract(all, all);
    if (diff == NULL)
        goto error;
    raw = PyObject_CallMethodNoArgs(diff, rt->s_raw_repr);
    if (raw == NULL)
        goto error;
    rt->backend_mask = PyLong_AsUnsignedLongLong(raw);
    if (rt->backend_mask == (uint64_t)-1 && PyErr_Occurred())
        goto error;
    rc = 0;
error:
    Py_XDECREF(all);
    Py_XDECREF(diff);
    Py_XDECREF(raw);
    return rc;
}

/* torch.nn.Module.__getattr__ and object.__getattribute__: the tree reads
 * attributes of modules that use exactly these in C (guards/tree.c). */
static int
load_module_getattr(GirRuntime *rt)
{
    PyObject *nn = PyImport_ImportModule("torch.nn");
    if (nn == NULL)
        return -1;
    PyObject *module_type = PyObject_GetAttrString(nn, "Module");
    Py_DECREF(nn);
    if (module_type == NULL)
        return -1;
    if (!PyType_Check(module_type)) {
        Py_DECREF(module_type);
        PyErr_SetString(PyExc_TypeError, "torch.nn.Module is not a type");
        return -1;
    }
    PyObject *fn = _PyType_Lookup((PyTypeObject *)module_type, rt->s_getattr);
    Py_XSETREF(rt->module_getattr, Py_XNewRef(fn));
    Py_DECREF(module_type);
    fn = _PyType_Lookup(&PyBaseObject_Type, rt->s_getattribute);
    Py_XSETREF(rt->object_getattribute, Py_XNewRef(fn));
    return 0;
}

static int
intern_names(GirRuntime *rt)
{
    struct { PyObject **slot; const char *text; } names[] = {
        {&rt->s_dtype, "dtype"}, {&rt->s_device, "device"},
        {&rt->s_requires_grad, "requires_grad"}, {&rt->s_dim, "dim"},
        {&rt->s_size, "size"}, {&rt->s_stride, "stride"},
        {&rt->s_raw_repr, "raw_repr"}, {&rt->s_getattr, "__getattr__"},
        {&rt->s_untyped_storage, "untyped_storage"}, {&rt->s_cdata, "_cdata"},
        {&rt->s_getattribute, "__getattribute__"},
        {&rt->s_module_dicts[0], "_parameters"}, {&rt->s_module_dicts[1], "_buffers"},
        {&rt->s_module_dicts[2], "_modules"},
    };
    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
        if (*names[i].slot == NULL
                && (*names[i].slot = PyUnicode_InternFromString(names[i].text)) == NULL)
            return -1;
    }
    return 0;
}

int
gir_runtime_load(GirRuntime *rt)
{
    if (rt->loaded)
        return 0;
    int rc = -1;
    PyObject *torch_c = NULL, *keys = NULL;
    if (intern_names(rt) < 0)
        goto error;
    torch_c = PyImport_ImportModule("torch._C");
    if (torch_c == NULL)
        goto error;
    struct { PyObject **slot; const char *name; } fns[] = {
        {&rt->dispatch_keys, "_dispatch_keys"},
        {&rt->tls_include, "_dispatch_tls_local_include_set"},
        {&rt->tls_exclude, "_dispatch_tls_local_exclude_set"},
        {&rt->is_grad_enabled, "is_grad_enabled"},
    };
    for (size_t i = 0; i < sizeof(fns) / sizeof(fns[0]); i++) {
        PyObject *fn = PyObject_GetAttrString(torch_c, fns[i].name);
        if (fn == NULL)
            goto error;
        Py_XSETREF(*fns[i].slot, fn);
    }
    keys = PyObject_CallNoArgs(rt->tls_include);
    if (keys == NULL || load_backend_mask(rt, (PyObject *)Py_TYPE(keys)) < 0)
        goto error;
    if (tmeta_init() < 0 || load_module_getattr(rt) < 0)
        goto error;
    rt->loaded = 1;
    rc = 0;
error:
    Py_XDECREF(torch_c);
    Py_XDECREF(keys);
    return rc;
}

void
gir_runtime_clear(GirRuntime *rt)
{
    Py_CLEAR(rt->dispatch_keys);
    Py_CLEAR(rt->tls_include);
    Py_CLEAR(rt->tls_exclude);
    Py_CLEAR(rt->is_grad_enabled);
    Py_CLEAR(rt->s_dtype);
    Py_CLEAR(rt->s_device);
    Py_CLEAR(rt->s_requires_grad);
    Py_CLEAR(rt->s_dim);
    Py_CLEAR(rt->s_size);
    Py_CLEAR(rt->s_stride);
    Py_CLEAR(rt->s_raw_repr);
    Py_CLEAR(rt->s_untyped_storage);
    Py_CLEAR(rt->s_cdata);
    Py_CLEAR(rt->s_getattr);
    Py_CLEAR(rt->s_getattribute);
    for (int i = 0; i < 3; i++)
        Py_CLEAR(rt->s_module_dicts[i]);
    Py_CLEAR(rt->module_getattr);
    Py_CLEAR(rt->object_getattribute);
    rt->loaded = 0;
}

/* ---- vocabulary ------------------------------------------------------------ */

/* Names of GirSourceKind and GirCheckKind, indexed by value: what Python
 * calls them (dynamo.guards imports the numbers from here). */
static const char *const source_kind_names[] = {
    "LOCAL", "GLOBAL", "CLOSURE", "ATTR", "ITEM", "NONE", "STATIC_ATTR", "GENERIC_ATTR",
};
_Static_assert(sizeof source_kind_names / sizeof *source_kind_names == GIR_SRC_GENERIC_ATTR + 1,
               "a name per source kind");
static const char *const check_kind_names[] = {
    "TYPE_MATCH", "ID_MATCH", "EQUALS_MATCH", "LENGTH", "TENSOR_MATCH", "GRAD_MODE",
    "DICT_KEYS", "FUNCTION_MATCH", "NONE_MATCH", "SAME_OBJECT", "GLOBAL_STATE",
    "STORAGE_MATCH", "BACKEND_MATCH", "SHAPE_GUARD",
};
_Static_assert(sizeof check_kind_names / sizeof *check_kind_names == GIR_NKINDS,
               "a name per check kind");
static const char *const shape_op_names[] = {
    "SIZE", "STRIDE", "CONST", "ADD", "SUB", "MUL", "FLOORDIV", "MOD", "EQ", "NE", "LT", "LE",
    "AND", "OR", "MIN", "MAX", "NOT", "NEG", "INT",
};
_Static_assert(sizeof shape_op_names / sizeof *shape_op_names == GIR_SH_NOPS,
               "a name per shape step");

/* New dict {names[i]: i}, or NULL with an exception. */
static PyObject *
kind_dict(const char *const *names, int n)
{
    PyObject *d = PyDict_New();
    for (int i = 0; d != NULL && i < n; i++) {
        PyObject *v = PyLong_FromLong(i);
        if (v == NULL || PyDict_SetItemString(d, names[i], v) < 0)
            Py_CLEAR(d);
        Py_XDECREF(v);
    }
    return d;
}

/* Add obj (a new reference, consumed; NULL: the error of making it) to
 * module as name.  0, or -1 with an exception. */
static int
add_new(PyObject *module, const char *name, PyObject *obj)
{
    int rc = obj != NULL ? PyModule_AddObjectRef(module, name, obj) : -1;
    Py_XDECREF(obj);
    return rc;
}

int
gir_add_vocabulary(PyObject *module)
{
    int n_src = (int)(sizeof source_kind_names / sizeof *source_kind_names);
    if (add_new(module, "SOURCE_KINDS", kind_dict(source_kind_names, n_src)) < 0)
        return -1;
    if (add_new(module, "SHAPE_OPS", kind_dict(shape_op_names, GIR_SH_NOPS)) < 0)
        return -1;
    return add_new(module, "GUARD_KINDS", kind_dict(check_kind_names, GIR_NKINDS));
}
