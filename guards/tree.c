/* guards/tree.c — one decision tree over the guards of all cache entries of
 * a code object; its evaluation is the hook's lookup.
 *
 * The tree is four files: tree.h (the public face), tree_int.h (its
 * private types), tree_build.c (decomposition of GirSets into tests and the
 * build: shared tests, switches, default branches, leaves), tree_py.c (the
 * Python views and the live counters) and this file, the per-call path in
 * one translation unit.
 *
 * Owns: source fetching with a per-call
 * scratch (each source at most once per call, tensor metadata once per
 * tensor source), the global-lookup memo keyed on dict versions, the
 * nn.Module attribute emulation, the closest-entry report on a miss, and
 * the counters (and, for the lookups the caller samples, gtree_lookup_timed:
 * the same walk with a clock per node).  It must not allocate on a hit, must not call Python code
 * on a hit for the simple kinds (see ARCHITECTURE.md), and must not keep
 * state between calls other than counters and the global memo (checks may
 * run Python code that re-enters the hook and this evaluator).
 *
 * Design (also in ARCHITECTURE.md, "Guard trees"):
 * - A test is (source, property, expected): TYPE, ID, IS_NONE, GRAD, LEN,
 *   GLOBAL_STATE, BACKEND, DTYPE, DEVICE, REQUIRES_GRAD, DISPATCH_KEYS, NDIM, SIZE[i],
 *   STRIDE[i], SAME_OBJECT and SAME_STORAGE (with another source) (int64
 *   values: pointers or numbers), VALUE (same type and
 *   equal; floats bit for bit) and KEYS
 *   (dict keys tuple).  The (source, property) pair is the test's key.
 * - A node first runs the tests every entry in it shares (cheap properties
 *   first: TYPE before the properties that depend on it), then switches on
 *   one key.  Entries that constrain the key go to the branch of their
 *   expected value; entries that do not constrain it go to the node's
 *   DEFAULT branch, which is walked in addition to the matching branch.
 *   An entry is never copied into two subtrees, so the tree has O(tests)
 *   size; the walk prunes a subtree whose newest entry is not newer than
 *   the best hit found so far.
 * - Key choice: among switchable keys (int64 properties; VALUE when every
 *   expected value is a simple constant: int, float, str, bytes, bool,
 *   None, tuples of those), minimise the expected number of candidates left
 *   after the switch, c/d + w (c entries constrain the key with d distinct
 *   values, w do not); ties: cheaper property, then lower key.  A
 *   dependent property (anything but TYPE/ID/IS_NONE/GRAD) is eligible
 *   only when every entry constraining it has already consumed its TYPE
 *   test on that source, so a switch never compares values of another type.
 * - A node with one entry, or without a key that separates (d >= 2), is a
 *   leaf: its entries (newest first) with their remaining tests.
 * - Every test of an entry is consumed exactly once on any root-to-leaf
 *   path through it (shared, switch or leaf), so an entry is chosen iff
 *   all its tests pass: flat semantics.
 */
#include "tree_int.h"  /* the tree's types; tree.h */

#include <stddef.h>     /* offsetof */
#include <string.h>     /* memset */
#include <time.h>       /* clock_gettime */

#include "tmeta.h"      /* tmeta_read_with, tmeta_read_tls, tmeta_grad_enabled */
#include "pyversion.h"        /* dyn_lookup_attr, dyn_dict_version */

const char *const prop_names[NPROPS] = {
    "type", "id", "is_none", "grad_mode", "global_state", "backend", "same_object", "len", "dtype", "device",
    "requires_grad", "dispatch_keys", "ndim", "size()", "stride()", "same_storage", "value", "keys",
    "shape",
};

/* ---- per-call scratch ------------------------------------------------------ */

PyObject *missing_obj;          /* strong: the reported `actual` of a missing source */
PyObject *dead_obj;             /* strong: the reported `expected` of an object that died */

/* Marker in a slot: the source was fetched and is missing. */
static char missing_marker;
#define MISSING ((PyObject *)&missing_marker)

typedef struct {
    PyObject *value;    /* NULL unfetched, MISSING, or strong */
    int tstate;         /* tensor metadata: 0 unread, 1 read, -1 not readable */
    TmetaView tm;
    int64_t *py_dims;   /* owned or NULL: sizes + strides of a Python-read tm */
} Slot;

/* Thread-local stack of slot chunks.  Walks take and release slots LIFO
 * (a check may run Python code that re-enters the hook), chunks never move,
 * and a chunk is only allocated the first time a walk needs more room than
 * the thread ever needed: a hit does not allocate. */
typedef struct Chunk {
    struct Chunk *prev, *next;  /* owned next, borrowed prev */
    Py_ssize_t cap, top;        /* slots */
    Slot slots[];
} Chunk;

static _Thread_local Chunk *scratch;

static Slot *
scratch_take(Py_ssize_t n)
{
    Chunk *c = scratch;
    if (c != NULL && c->cap - c->top >= n) {        /* room here? */
        Slot *s = c->slots + c->top;
        c->top += n;
        return s;
    }
    Chunk *next = c != NULL ? c->next : NULL;
    if (next == NULL || next->cap < n) {            /* grow: drop too small ones */
        while (next != NULL) {
            Chunk *after = next->next;
            PyMem_RawFree(next);
            next = after;
        }
        Py_ssize_t cap = n > 256 ? n : 256;
        next = PyMem_RawMalloc(sizeof(Chunk) + cap * sizeof(Slot));
        if (next == NULL) {
            if (c != NULL)
                c->next = NULL;
            PyErr_NoMemory();
            return NULL;
        }
        next->prev = c;
        next->next = NULL;
        next->cap = cap;
        if (c != NULL)
            c->next = next;
    }
    next->top = n;
    scratch = next;
    return next->slots;
}

/* Give back the n slots taken last from chunk c (the walk's own chunk,
 * so the thread-local is only touched when the walk leaves it empty). */
static void
scratch_drop(Chunk *c, Py_ssize_t n)
{
    c->top -= n;
    if (c->top == 0 && c->prev != NULL)
        scratch = c->prev;
}

/* One lookup. */
typedef struct {
    GTree *t;               /* borrowed */
    const GevalFrame *fr;   /* borrowed */
    Slot *slots;            /* per tree source */
    Chunk *chunk;           /* borrowed: the scratch chunk holding slots, or NULL (stack) */
    int best;               /* best hit so far (entry index), nentries if none */
    int aborted;            /* the caller's generation changed */
    uint64_t visited;
    uint64_t clk;           /* timed walks: the last clock read (mono_ns), ns */
    /* Thread state read at most once per lookup, like each tensor's
     * metadata (a check running Python code that changes it mid-walk is
     * not seen by later tests of the same walk, as for tensor views). */
    const uint64_t *generation; /* borrowed: fr->generation, or a constant 0 */
    uint64_t generation0;
    int grad;               /* GradMode: -1 unread, else 0 / 1 */
    int gstate_read;        /* gstate is valid */
    uint64_t gstate;        /* tmeta_global_state() */
    int tls_read;           /* tls is valid */
    TmetaTls tls;           /* dispatch-key include/exclude sets */
} Walk;

static inline int
walk_grad(Walk *w)
{
    if (UNLIKELY(w->grad < 0))
        w->grad = tmeta_grad_enabled() != 0;
    return w->grad;
}

static inline int64_t
walk_gstate(Walk *w)
{
    if (UNLIKELY(!w->gstate_read)) {
        if (!w->tls_read) {                         /* shared with the tensor reads */
            tmeta_read_tls(&w->tls);
            w->tls_read = 1;
        }
        w->gstate = tmeta_global_state(&w->tls);
        w->gstate_read = 1;
    }
    return (int64_t)w->gstate;
}

static inline int
walk_stale(Walk *w)
{
    if (UNLIKELY(*w->generation != w->generation0))
        w->aborted = 1;
    return w->aborted;
}

/* ---- fetching -------------------------------------------------------------- */

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

/* base[key] as a new reference, MISSING, or NULL on error. */
static PyObject *
fetch_item(const TSource *s, PyObject *base /* borrowed */)
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
    /* TypeError too: the tree may fetch base[key] before the TYPE test of
     * base that the flat walk would have failed first (base is None...). */
    v = PyObject_GetItem(base, s->name);
    if (v == NULL && (clear_missing(PyExc_KeyError, PyExc_IndexError) == 0
                      || clear_missing(PyExc_TypeError, NULL) == 0))
        return MISSING;
    return v;
}

/* Module.__getattr__ in C: the instance's _parameters, _buffers, _modules.
 * Returns a new reference, MISSING, or NULL on error. */
static PyObject *
module_dicts_lookup(GirRuntime *rt, PyObject *base, PyObject *name)
{
    PyObject **dictptr = _PyObject_GetDictPtr(base);
    if (dictptr == NULL || *dictptr == NULL)
        return MISSING;
    for (int i = 0; i < 3; i++) {
        PyObject *d = PyDict_GetItemWithError(*dictptr, rt->s_module_dicts[i]);
        if (d == NULL) {
            if (PyErr_Occurred())
                return NULL;
            continue;
        }
        if (!PyDict_Check(d))
            continue;
        PyObject *v = PyDict_GetItemWithError(d, name);
        if (v != NULL)
            return Py_NewRef(v);
        if (PyErr_Occurred())
            return NULL;
    }
    return MISSING;
}

/* getattr(base, name) as a new reference, MISSING, or NULL on error.
 * Instances of classes whose __getattr__ is torch.nn.Module's and whose
 * __getattribute__ is object's are read in C (no Python frame). */
static inline int
module_like(GirRuntime *rt, TSource *s, PyTypeObject *type)
{
    if (s->a_type == type && (type->tp_flags & Py_TPFLAGS_VALID_VERSION_TAG)
            && type->tp_version_tag == s->a_tag)
        return s->a_module;
    int module = rt != NULL && rt->module_getattr != NULL
                 && _PyType_Lookup(type, rt->s_getattr) == rt->module_getattr
                 && _PyType_Lookup(type, rt->s_getattribute) == rt->object_getattribute;
    if (type->tp_flags & Py_TPFLAGS_VALID_VERSION_TAG) {    /* tagged by the lookups */
        s->a_type = type;
        s->a_tag = type->tp_version_tag;
        s->a_module = module;
    }
    return module;
}

static PyObject *
fetch_attr(GirRuntime *rt, TSource *s, PyObject *base)
{
    PyObject *v = NULL;
    if (module_like(rt, s, Py_TYPE(base))) {
        v = _PyObject_GenericGetAttrWithDict(base, s->name, NULL, 1);
        if (v != NULL)
            return v;
        if (PyErr_Occurred()) {
            if (clear_missing(PyExc_AttributeError, NULL) < 0)
                return NULL;
        }
        return module_dicts_lookup(rt, base, s->name);
    }
    if (dyn_lookup_attr(base, s->name, &v) < 0)
        return NULL;
    return v != NULL ? v : MISSING;                 /* AttributeError was cleared */
}

/* The object attribute lookup on base starts from, calling no descriptor
 * and no Python code (STATIC_ATTR): a data descriptor of type(base) wins,
 * then base's instance dict, then whatever type(base)'s MRO holds.  Guarded
 * by identity, it catches a method or property replaced on the class, an
 * instance attribute shadowing a method, a classmethod swapped.  The MRO
 * lookup is CPython's type attribute cache, keyed by the type's version
 * tag.  A new reference, MISSING, or NULL on error. */
static PyObject *
fetch_static_attr(const TSource *s, PyObject *base /* borrowed */)
{
    PyObject *found = _PyType_Lookup(Py_TYPE(base), s->name);     /* borrowed, no error */
    if (found == NULL || Py_TYPE(found)->tp_descr_set == NULL) {  /* may be shadowed? */
        PyObject **dictptr = _PyObject_GetDictPtr(base);
        if (dictptr != NULL && *dictptr != NULL && PyDict_Check(*dictptr)) {
            PyObject *own = PyDict_GetItemWithError(*dictptr, s->name);
            if (own != NULL)
                return Py_NewRef(own);
            if (PyErr_Occurred())
                return NULL;
        }
    }
    return found != NULL ? Py_NewRef(found) : MISSING;
}

/* object.__getattribute__(base, name) (GENERIC_ATTR): CPython's generic
 * lookup, in C, whatever the class's own __getattribute__ is — the tracer
 * emits this source only where the trace proved that one delegates to
 * object's for this name.  Reads the type attribute cache and the instance
 * dict; on a hit nothing is allocated (a managed __dict__ is materialized
 * by its first read only).  A descriptor found on the class is called, as
 * object's lookup calls it: the trace only uses instance attributes, C
 * descriptors (__dict__, __class__) and plain class attributes.  A new
 * reference, MISSING, or NULL on error. */
static PyObject *
fetch_generic_attr(const TSource *s, PyObject *base /* borrowed */)
{
    PyObject *v = _PyObject_GenericGetAttrWithDict(base, s->name, NULL, 1);
    if (v != NULL)
        return v;
    if (PyErr_Occurred() && clear_missing(PyExc_AttributeError, NULL) < 0)
        return NULL;                                /* not a plain miss */
    return MISSING;
}

/* f_globals[name], else f_builtins[name], through the source's memo.
 * Returns a new reference, MISSING, or NULL on error. */
static PyObject *
fetch_global(TSource *s, const GevalFrame *fr)
{
    PyDictObject *g = (PyDictObject *)fr->globals, *b = (PyDictObject *)fr->builtins;
    if (s->g_value != NULL && s->g_dict == fr->globals && s->g_ver == dyn_dict_version(g)
            && s->b_dict == fr->builtins && s->b_ver == dyn_dict_version(b))  /* unchanged? */
        return s->g_value == MISSING ? MISSING : Py_NewRef(s->g_value);
    PyObject *v = PyDict_GetItemWithError(fr->globals, s->name);
    if (v == NULL && !PyErr_Occurred())             /* not a global: builtin? */
        v = PyDict_GetItemWithError(fr->builtins, s->name);
    if (v == NULL && PyErr_Occurred())
        return NULL;
    /* A lookup of str keys runs no Python code, so the versions read now
     * are the ones the value belongs to. */
    s->g_dict = fr->globals;
    s->g_ver = dyn_dict_version(g);
    s->b_dict = fr->builtins;
    s->b_ver = dyn_dict_version(b);
    s->g_value = v != NULL ? v : MISSING;
    return v != NULL ? Py_NewRef(v) : MISSING;
}

/* Value of source i (its base first), cached in the walk's slot.
 * Returns a borrowed value, MISSING, or NULL with an exception. */
static PyObject *
fetch(Walk *w, int i)
{
    Slot *slot = &w->slots[i];
    if (slot->value != NULL)                        /* fetched this call? */
        return slot->value;
    TSource *s = &w->t->sources[i];
    const GevalFrame *fr = w->fr;
    PyObject *v = MISSING, *base = NULL;
    if (s->base >= 0) {
        base = fetch(w, s->base);
        if (base == NULL)
            return NULL;
        if (base == MISSING)
            return slot->value = MISSING;
    }
    switch (s->kind) {
    case GIR_SRC_LOCAL:                             /* borrowed: see borrowed_value */
        if (s->index < fr->nlocals && fr->locals[s->index] != NULL)
            v = fr->locals[s->index];
        break;
    case GIR_SRC_GLOBAL:
        v = fetch_global(s, fr);
        break;
    case GIR_SRC_CLOSURE:
        if (fr->closure != NULL && s->index < PyTuple_GET_SIZE(fr->closure)) {
            PyObject *cell = PyTuple_GET_ITEM(fr->closure, s->index);
            if (PyCell_Check(cell) && PyCell_GET(cell) != NULL)
                v = Py_NewRef(PyCell_GET(cell));
        }
        break;
    case GIR_SRC_ATTR:
        v = fetch_attr(w->t->rt, s, base);
        break;
    case GIR_SRC_ITEM:
        v = fetch_item(s, base);
        break;
    case GIR_SRC_STATIC_ATTR:
        v = fetch_static_attr(s, base);
        break;
    case GIR_SRC_GENERIC_ATTR:
        v = fetch_generic_attr(s, base);
        break;
    default:                                        /* GIR_SRC_NONE: global state */
        v = Py_None;                                /* borrowed: see borrowed_value */
        break;
    }
    if (v == NULL)
        return NULL;
    return slot->value = v;
}

/* v.size() or v.stride() into dims[0 .. ndim): 1 read, 0 the tensor has
 * none (RuntimeError: sparse strides, nested sizes), -1 error. */
static int
python_dims(PyObject *v, PyObject *method /* borrowed */, Py_ssize_t ndim, int64_t *dims)
{
    PyObject *seq = PyObject_CallMethodNoArgs(v, method), *fast = NULL;
    if (seq == NULL)
        return clear_missing(PyExc_RuntimeError, NULL) == 0 ? 0 : -1;
    fast = PySequence_Fast(seq, "size()/stride() must return a sequence");
    Py_DECREF(seq);
    if (fast == NULL)
        return -1;
    int rc = PySequence_Fast_GET_SIZE(fast) == ndim;
    for (Py_ssize_t d = 0; rc == 1 && d < ndim; d++) {
        dims[d] = PyLong_AsLongLong(PySequence_Fast_GET_ITEM(fast, d));
        if (dims[d] == -1 && PyErr_Occurred())
            rc = -1;
    }
    Py_DECREF(fast);
    return rc;
}

/* ((_dispatch_keys(v) | tls_include) - tls_exclude).raw_repr(), as the
 * Python side defines TENSOR_MATCH's dispatch_keys.  0, or -1 on error. */
static int
python_dispatch_keys(GirRuntime *rt, PyObject *v, uint64_t *out)
{
    int rc = -1;
    PyObject *keys = NULL, *inc = NULL, *exc = NULL, *with = NULL, *eff = NULL, *raw = NULL;
    if ((keys = PyObject_CallOneArg(rt->dispatch_keys, v)) == NULL
            || (inc = PyObject_CallNoArgs(rt->tls_include)) == NULL
            || (exc = PyObject_CallNoArgs(rt->tls_exclude)) == NULL
            || (with = PyNumber_Or(keys, inc)) == NULL
            || (eff = PyNumber_Subtract(with, exc)) == NULL
            || (raw = PyObject_CallMethodNoArgs(eff, rt->s_raw_repr)) == NULL)
        goto error;
    *out = PyLong_AsUnsignedLongLong(raw);
    if (*out == (uint64_t)-1 && PyErr_Occurred())
        goto error;
    rc = 0;
error:
    Py_XDECREF(keys);
    Py_XDECREF(inc);
    Py_XDECREF(exc);
    Py_XDECREF(with);
    Py_XDECREF(eff);
    Py_XDECREF(raw);
    return rc;
}

/* Slow path for tensors tmeta refuses (sparse, nested, __torch_dispatch__
 * subclasses): fill slot->tm through Python attribute reads and calls, so
 * their TENSOR_MATCH passes and fails like anyone else's.  Sizes/strides
 * the tensor does not have stay NULL (their tests fail).  0, or -1 with an
 * exception (an internal error, like any raising check). */
static int
python_view(GirRuntime *rt, PyObject *v, Slot *slot)
{
    TmetaView *tm = &slot->tm;
    PyObject *dtype = NULL, *device = NULL, *flag = NULL, *dim = NULL;
    int rc = -1;
    memset(tm, 0, sizeof(*tm));
    tm->cls = Py_TYPE(v);
    if ((dtype = PyObject_GetAttr(v, rt->s_dtype)) == NULL
            || tmeta_dtype_from_py(dtype, &tm->dtype) < 0
            || (device = PyObject_GetAttr(v, rt->s_device)) == NULL
            || tmeta_device_from_py(device, &tm->device_type, &tm->device_index) < 0
            || (flag = PyObject_GetAttr(v, rt->s_requires_grad)) == NULL
            || (tm->requires_grad = PyObject_IsTrue(flag)) < 0
            || (dim = PyObject_CallMethodNoArgs(v, rt->s_dim)) == NULL
            || python_dispatch_keys(rt, v, &tm->dispatch_keys) < 0)
        goto error;
    long ndim = PyLong_AsLong(dim);
    if (ndim == -1 && PyErr_Occurred())
        goto error;
    if (ndim < 0 || ndim > INT32_MAX) {
        PyErr_SetString(PyExc_ValueError, "dynamo: tensor dim() out of range");
        goto error;
    }
    tm->ndim = (int32_t)ndim;
    slot->py_dims = PyMem_Malloc((2 * (size_t)ndim + 1) * sizeof(int64_t));
    if (slot->py_dims == NULL) {
        PyErr_NoMemory();
        goto error;
    }
    int has_sizes = python_dims(v, rt->s_size, ndim, slot->py_dims);
    int has_strides = has_sizes < 0 ? -1 : python_dims(v, rt->s_stride, ndim, slot->py_dims + ndim);
    if (has_strides < 0)
        goto error;
    tm->sizes = has_sizes ? slot->py_dims : NULL;
    tm->strides = has_strides ? slot->py_dims + ndim : NULL;
    rc = 0;
error:
    Py_XDECREF(dtype);
    Py_XDECREF(device);
    Py_XDECREF(flag);
    Py_XDECREF(dim);
    return rc;
}

/* Tensor metadata of source i's value v, read once per call (through
 * Python for tensors tmeta refuses); NULL when v is not a tensor, or with
 * an exception when the Python read raised. */
static const TmetaView *
tensor_view(Walk *w, int i, PyObject *v)
{
    Slot *slot = &w->slots[i];
    if (slot->tstate == 0) {
        slot->tstate = -1;
        if (tmeta_is_tensor(v)) {
            GirRuntime *rt = w->t->rt;
            if (!w->tls_read) {                     /* once per lookup, not per tensor */
                tmeta_read_tls(&w->tls);
                w->tls_read = 1;
            }
            if (tmeta_read_with(v, &w->tls, &slot->tm) == 0)
                slot->tstate = 1;
            else if (rt != NULL && rt->loaded)      /* slow path, this tensor only */
                slot->tstate = python_view(rt, v, slot) == 0 ? 1 : -1;
        }
    }
    return slot->tstate == 1 ? &slot->tm : NULL;
}

/* The storage tensor v (source i) views, for STORAGE_MATCH: the tmeta
 * view's, or for a tensor read through Python (python_view: py_dims set)
 * untyped_storage()._cdata, read here so other tensor tests never pay for
 * it.  1 with *out, 0 when v has no storage to compare, -1 on error. */
static int
slot_storage(Walk *w, int i, PyObject *v, const void **out)
{
    const TmetaView *tm = tensor_view(w, i, v);
    if (tm == NULL)
        return PyErr_Occurred() ? -1 : 0;
    *out = tm->storage;
    if (w->slots[i].py_dims != NULL) {
        GirRuntime *rt = w->t->rt;
        PyObject *st = PyObject_CallMethodNoArgs(v, rt->s_untyped_storage);
        if (st == NULL) {                           /* sparse, nested: no storage */
            if (!PyErr_ExceptionMatches(PyExc_RuntimeError)
                    && !PyErr_ExceptionMatches(PyExc_TypeError))
                return -1;
            PyErr_Clear();
            return 0;
        }
        PyObject *cdata = PyObject_GetAttr(st, rt->s_cdata);
        Py_DECREF(st);
        if (cdata == NULL)
            return -1;
        *out = PyLong_AsVoidPtr(cdata);
        Py_DECREF(cdata);
        if (*out == NULL && PyErr_Occurred())
            return -1;
    }
    return *out != NULL;
}

/* Value of an int64 property of v (source k->src).  Returns 1 with *out,
 * 0 when the property does not exist for v, -1 on error. */
static int
scalar_actual(Walk *w, const Key *k, PyObject *v, int64_t *out)
{
    switch (k->prop) {
    case P_TYPE:
        *out = (int64_t)(intptr_t)Py_TYPE(v);
        return 1;
    case P_ID:
        *out = (int64_t)(intptr_t)v;
        return 1;
    case P_NONE:
        *out = v == Py_None;
        return 1;
    case P_GRAD:
        *out = walk_grad(w);
        return 1;
    case P_GSTATE:
        *out = walk_gstate(w);
        return 1;
    case P_BACKEND:
        *out = w->fr->backend;
        return 1;
    case P_SAME: {
        PyObject *other = fetch(w, k->dim);
        if (other == NULL)
            return -1;
        if (other == MISSING)
            return 0;
        *out = v == other;
        return 1;
    }
    case P_LEN: {
        Py_ssize_t n;
        if (PyList_CheckExact(v) || PyTuple_CheckExact(v))
            n = Py_SIZE(v);
        else if (PyDict_CheckExact(v))
            n = PyDict_GET_SIZE(v);
        else if ((n = PyObject_Length(v)) < 0)
            return -1;
        *out = n;
        return 1;
    }
    default:
        break;
    }
    const TmetaView *tm = tensor_view(w, k->src, v);
    if (tm == NULL)
        return PyErr_Occurred() ? -1 : 0;
    switch (k->prop) {
    case P_DTYPE:
        *out = tm->dtype;
        return 1;
    case P_DEVICE:
        *out = device_bits(tm->device_type, tm->device_index);
        return 1;
    case P_REQGRAD:
        *out = tm->requires_grad != 0;
        return 1;
    case P_DKEYS:
        *out = (int64_t)tm->dispatch_keys;
        return 1;
    case P_NDIM:
        *out = tm->ndim;
        return 1;
    case P_SIZE:
    case P_STRIDE:
        if (k->dim >= tm->ndim || (k->prop == P_SIZE ? tm->sizes : tm->strides) == NULL)
            return 0;
        *out = (k->prop == P_SIZE ? tm->sizes : tm->strides)[k->dim];
        return 1;
    case P_STORAGE: {                               /* dim: the other source */
        PyObject *other = fetch(w, k->dim);
        if (other == NULL)
            return -1;
        if (other == MISSING)
            return 0;
        const void *mine = NULL, *theirs = NULL;
        int rc = slot_storage(w, k->src, v, &mine);
        if (rc > 0)
            rc = slot_storage(w, k->dim, other, &theirs);
        if (rc <= 0)                                /* none to compare: fails */
            return rc;
        *out = mine == theirs;
        return 1;
    }
    }
    return 0;
}

/* An OrderedDict's keys in its own order (move_to_end reorders them, not
 * the dict underneath) equal `keys`; -1 error, 0 fail, 1 pass. */
static int
odict_keys_match(PyObject *v, PyObject *keys /* tuple */)
{
    if (PyDict_GET_SIZE(v) != PyTuple_GET_SIZE(keys))
        return 0;
    PyObject *have = PySequence_Tuple(v);
    if (have == NULL)
        return -1;
    int eq = PyObject_RichCompareBool(have, keys, Py_EQ);
    Py_DECREF(have);
    return eq;
}

/* `type(v) in (dict, OrderedDict) and tuple(v) == keys` (the type itself is
 * the P_TYPE test's); -1 error, 0 fail, 1 pass. */
static int
dict_keys_match(PyObject *v, PyObject *keys /* tuple */)
{
    if (PyODict_CheckExact(v))
        return odict_keys_match(v, keys);
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

/* EQUALS_MATCH's value test: `type(v) is type(e)` and, for exact tuples,
 * the same rule item by item, for exact floats and complex numbers the same
 * bits (0.0 is not -0.0, which 1/x or copysign tell apart; a NaN matches a
 * NaN of the same bits, so it does not recompile on every call), else
 * `v == e`.  Stricter than tuple == (a tuple holding 1.0 does not match one
 * holding 1), and never calls an item's __eq__ unless its type is the
 * expected item's type.  Recursion is bounded by the expected constant's
 * depth.  -1 error, 0 fail, 1 pass. */
int
value_match(PyObject *v, PyObject *e)
{
    if (Py_TYPE(v) != Py_TYPE(e))
        return 0;
    if (v == e)
        return 1;
    if (PyFloat_CheckExact(e)) {
        double a = PyFloat_AS_DOUBLE(v), b = PyFloat_AS_DOUBLE(e);
        return memcmp(&a, &b, sizeof(double)) == 0;
    }
    if (PyComplex_CheckExact(e)) {
        Py_complex a = ((PyComplexObject *)v)->cval, b = ((PyComplexObject *)e)->cval;
        return memcmp(&a.real, &b.real, sizeof(double)) == 0
               && memcmp(&a.imag, &b.imag, sizeof(double)) == 0;
    }
    if (!PyTuple_CheckExact(e))
        return PyObject_RichCompareBool(v, e, Py_EQ);
    Py_ssize_t n = PyTuple_GET_SIZE(e);
    if (PyTuple_GET_SIZE(v) != n)
        return 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        int ok = value_match(PyTuple_GET_ITEM(v, i), PyTuple_GET_ITEM(e, i));
        if (ok <= 0)
            return ok;
    }
    return 1;
}

/* Tensor view of source i's value v: the slot's, once read. */
static inline const TmetaView *
slot_view(Walk *w, int i, PyObject *v)
{
    Slot *slot = &w->slots[i];
    if (LIKELY(slot->tstate == 1))
        return &slot->tm;
    return slot->tstate < 0 ? NULL : tensor_view(w, i, v);
}

/* Value of a SHAPE_GUARD leaf: size()[dim] or stride()[dim] of tree source
 * src, or (INT) its value.  1 with *out, 0 when the source is missing, not
 * a tensor (INT: not an exact int, or one beyond int64) or has no such dim
 * (the relation fails), -1 on error. */
static int
shape_leaf(Walk *w, const GirShapeStep *s, int64_t *out)
{
    PyObject *v = w->slots[s->source].value;
    if (UNLIKELY(v == NULL) && (v = fetch(w, s->source)) == NULL)
        return -1;
    if (v == MISSING)
        return 0;
    if (s->op == GIR_SH_INT) {
        if (!PyLong_CheckExact(v))
            return 0;
        int overflow;
        long long x = PyLong_AsLongLongAndOverflow(v, &overflow);
        if (overflow)
            return 0;
        *out = x;
        return 1;
    }
    const TmetaView *tm = slot_view(w, s->source, v);
    if (tm == NULL)
        return PyErr_Occurred() ? -1 : 0;
    const int64_t *dims = s->op == GIR_SH_SIZE ? tm->sizes : tm->strides;
    if (s->dim >= tm->ndim || dims == NULL)
        return 0;
    *out = dims[s->dim];
    return 1;
}

static inline int64_t
floor_div(int64_t a, int64_t b)
{
    int64_t q = a / b;
    return (a % b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q;
}

/* Evaluate SHAPE relation sh on a fixed stack (depth checked by
 * gir_compile): -1 error, 0 fail (false, a missing leaf, a zero divisor,
 * an overflow), 1 pass.  No allocation, no Python call for tmeta tensors. */
static int
shape_pass(Walk *w, const TShape *sh)
{
    int64_t st[GIR_SHAPE_MAX_STACK];
    int sp = 0;
    for (int i = 0; i < sh->n; i++) {
        const GirShapeStep *s = &sh->steps[i];
        int64_t a, b, r;
        switch (s->op) {
        case GIR_SH_SIZE: case GIR_SH_STRIDE: case GIR_SH_INT: {
            int rc = shape_leaf(w, s, &st[sp]);
            if (rc <= 0)
                return rc;
            sp++;
            continue;
        }
        case GIR_SH_CONST:
            st[sp++] = s->value;
            continue;
        case GIR_SH_NOT:
            st[sp - 1] = st[sp - 1] == 0;
            continue;
        case GIR_SH_NEG:
            if (st[sp - 1] == INT64_MIN)
                return 0;
            st[sp - 1] = -st[sp - 1];
            continue;
        default:
            break;
        }
        b = st[--sp];
        a = st[sp - 1];
        switch (s->op) {
        case GIR_SH_ADD:
            if (__builtin_add_overflow(a, b, &r))
                return 0;
            break;
        case GIR_SH_SUB:
            if (__builtin_sub_overflow(a, b, &r))
                return 0;
            break;
        case GIR_SH_MUL:
            if (__builtin_mul_overflow(a, b, &r))
                return 0;
            break;
        case GIR_SH_FLOORDIV:
            if (b == 0 || (a == INT64_MIN && b == -1))
                return 0;
            r = floor_div(a, b);
            break;
        case GIR_SH_MOD:
            if (b == 0 || (a == INT64_MIN && b == -1))
                return 0;
            r = a - floor_div(a, b) * b;
            break;
        case GIR_SH_EQ: r = a == b; break;
        case GIR_SH_NE: r = a != b; break;
        case GIR_SH_LT: r = a < b; break;
        case GIR_SH_LE: r = a <= b; break;
        case GIR_SH_AND: r = a != 0 && b != 0; break;
        case GIR_SH_OR: r = a != 0 || b != 0; break;
        case GIR_SH_MIN: r = a < b ? a : b; break;
        default: r = a > b ? a : b; break;         /* MAX */
        }
        st[sp - 1] = r;
    }
    return st[0] != 0;
}

/* Run one test; -1 error, 0 fail, 1 pass.  The per-call hot loop: the
 * common properties are compared inline, the rest go through
 * scalar_actual (the same reads the miss report uses). */
static inline __attribute__((always_inline)) int
test_pass(Walk *w, const Test *t)
{
    PyObject *v = w->slots[t->src].value;
    if (UNLIKELY(v == NULL) && (v = fetch(w, t->src)) == NULL)   /* first use this call? */
        return -1;
    if (UNLIKELY(v == MISSING))
        return 0;
    switch (t->prop) {
    case P_TYPE:
        return (int64_t)(intptr_t)Py_TYPE(v) == t->bits;
    case P_ID:
        return (int64_t)(intptr_t)v == t->bits;
    case P_NONE:
        return (v == Py_None) == t->bits;
    case P_GRAD:
        return walk_grad(w) == t->bits;
    case P_GSTATE:
        return walk_gstate(w) == t->bits;
    case P_BACKEND:                                 /* 0: RUN mode, any backend */
        return w->fr->backend == t->bits || w->fr->backend == 0;
    case P_SAME: {                                  /* dim: the other source */
        PyObject *other = w->slots[t->dim].value;
        if (UNLIKELY(other == NULL) && (other = fetch(w, t->dim)) == NULL)
            return -1;
        return other != MISSING && (v == other) == t->bits;
    }
    case P_DTYPE: case P_DEVICE: case P_REQGRAD: case P_DKEYS: case P_NDIM: {
        const TmetaView *tm = slot_view(w, t->src, v);
        if (UNLIKELY(tm == NULL))
            return PyErr_Occurred() ? -1 : 0;
        switch (t->prop) {
        case P_DTYPE:
            return tm->dtype == t->bits;
        case P_DEVICE:
            return device_bits(tm->device_type, tm->device_index) == t->bits;
        case P_REQGRAD:
            return (tm->requires_grad != 0) == t->bits;
        case P_DKEYS:
            return (int64_t)tm->dispatch_keys == t->bits;
        default:
            return tm->ndim == t->bits;
        }
    }
    case P_SIZE: case P_STRIDE: {
        const TmetaView *tm = slot_view(w, t->src, v);
        if (UNLIKELY(tm == NULL))
            return PyErr_Occurred() ? -1 : 0;
        const int64_t *dims = t->prop == P_SIZE ? tm->sizes : tm->strides;
        return t->dim < tm->ndim && dims != NULL && dims[t->dim] == t->bits;
    }
    case P_STORAGE: {                               /* dim: the other source */
        PyObject *other = w->slots[t->dim].value;
        if (UNLIKELY(other == NULL) && (other = fetch(w, t->dim)) == NULL)
            return -1;
        if (UNLIKELY(other == MISSING))
            return 0;
        const TmetaView *a = slot_view(w, t->src, v);
        const TmetaView *b = a != NULL ? slot_view(w, t->dim, other) : NULL;
        if (UNLIKELY(b == NULL))
            return PyErr_Occurred() ? -1 : 0;
        if (LIKELY(w->slots[t->src].py_dims == NULL && w->slots[t->dim].py_dims == NULL))
            return a->storage != NULL && b->storage != NULL && (a->storage == b->storage) == t->bits;
        int64_t actual;                             /* read through Python: slot_storage */
        int rc = scalar_actual(w, &w->t->keys[t->key], v, &actual);
        return rc <= 0 ? rc : actual == t->bits;
    }
    case P_VALUE:
        return value_match(v, t->obj);
    case P_KEYS:
        return dict_keys_match(v, t->obj);
    case P_SHAPE:
        return shape_pass(w, &w->t->shapes[t->dim]);
    default: {                                      /* LEN */
        int64_t actual;
        int rc = scalar_actual(w, &w->t->keys[t->key], v, &actual);
        return rc <= 0 ? rc : actual == t->bits;
    }
    }
}

/* ---- the walk -------------------------------------------------------------- */

/* A constant whose hash and value_match are C code and agree (equal
 * values hash alike): switchable VALUE.  Not a NaN, whose hash is its
 * address while value_match compares bits. */
int
is_simple_constant(PyObject *o, int depth)
{
    if (PyFloat_CheckExact(o))
        return !Py_IS_NAN(PyFloat_AS_DOUBLE(o));
    if (o == Py_None || PyBool_Check(o) || PyLong_CheckExact(o)
            || PyUnicode_CheckExact(o) || PyBytes_CheckExact(o))
        return 1;
    if (!PyTuple_CheckExact(o) || depth > 8)
        return 0;
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(o); i++) {
        if (!is_simple_constant(PyTuple_GET_ITEM(o, i), depth + 1))
            return 0;
    }
    return 1;
}

/* Binary search of a sorted int64 array: index or -1. */
static int
find_bits(const int64_t *a, int n, int64_t x)
{
    int lo = 0, hi = n - 1;
    while (lo <= hi) {
        int mid = (lo + hi) / 2;
        if (a[mid] == x)
            return mid;
        if (a[mid] < x)
            lo = mid + 1;
        else
            hi = mid - 1;
    }
    return -1;
}

/* The branch of node n matching the actual value of its key: index, -1
 * when none matches, -2 on error. */
static int
switch_branch(Walk *w, const Node *n)
{
    const Key *k = &w->t->keys[n->key];
    PyObject *v = fetch(w, k->src);
    if (v == NULL)
        return -2;
    if (v == MISSING)
        return -1;
    if (k->prop != P_VALUE) {
        int64_t actual;
        int rc = scalar_actual(w, k, v, &actual);
        if (rc <= 0)
            return rc == 0 ? -1 : -2;
        return find_bits(n->bits, n->nbranch, actual);
    }
    /* VALUE: every branch holds a simple constant of v's type (eligibility);
     * a value that is not a simple constant (a tuple holding a tensor) can
     * match none, and hashing it could run Python code. */
    if (!is_simple_constant(v, 0))
        return -1;
    Py_hash_t h = PyObject_Hash(v);
    if (h == -1 && PyErr_Occurred())
        return -2;
    int i = find_bits(n->bits, n->nbranch, h);
    if (i < 0)
        return -1;
    while (i > 0 && n->bits[i - 1] == h)            /* first of equal hashes */
        i--;
    for (; i < n->nbranch && n->bits[i] == h; i++) {
        int eq = value_match(v, n->vals[i]);
        if (eq != 0)
            return eq < 0 ? -2 : i;
    }
    return -1;
}

/* All tensor tests of op o pass?  -1 error, 0 no, 1 yes. */
static inline __attribute__((always_inline)) int
tensor_op_pass(Walk *w, const Op *o)
{
    PyObject *v = w->slots[o->src].value;
    if (UNLIKELY(v == NULL) && (v = fetch(w, o->src)) == NULL)
        return -1;
    if (UNLIKELY(v == MISSING))
        return 0;
    const TmetaView *tm = slot_view(w, o->src, v);
    if (UNLIKELY(tm == NULL))
        return PyErr_Occurred() ? -1 : 0;
    unsigned m = o->mask;
    if (((m & TM_DTYPE) && tm->dtype != o->dtype)
            || ((m & TM_DEVICE) && device_bits(tm->device_type, tm->device_index) != o->device)
            || ((m & TM_REQGRAD) && (tm->requires_grad != 0) != o->reqgrad)
            || ((m & TM_DKEYS) && (int64_t)tm->dispatch_keys != o->dkeys)
            || ((m & TM_NDIM) && tm->ndim != o->ndim))
        return 0;
    for (int i = 0; i < o->ndims; i++) {
        const DimTest *d = &o->dims[i];
        const int64_t *dims = d->stride ? tm->strides : tm->sizes;
        if (d->dim >= tm->ndim || dims == NULL || dims[d->dim] != d->value)
            return 0;
    }
    return 1;
}

/* All SAME_OBJECT tests of op o pass?  0 or 1.  Their sources hold
 * borrowed values, set (a value or MISSING) by walk_begin. */
static inline int
same_op_pass(Walk *w, const Op *o)
{
    for (int i = 0; i < o->npairs; i++) {
        PyObject *a = w->slots[o->pairs[i].a].value, *b = w->slots[o->pairs[i].b].value;
        if (a == MISSING || b == MISSING || (a == b) != o->pairs[i].same)
            return 0;
    }
    return 1;
}

/* The clock of timed walks: CLOCK_MONOTONIC (vDSO: no system call), ns. */
static inline uint64_t
mono_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* A timed walk: charge the time since w->clk to test slot `slot` and move
 * the clock on (one clock read per test run). */
static inline void
charge_slot(Walk *w, int slot)
{
    uint64_t now = mono_ns();
    uint64_t *c = &w->t->slot_ctr[GTREE_SLOT_COUNTERS * (size_t)slot];
    uint64_t ns = now - w->clk;
    ctr_bump(&c[0]);
    ctr_add(&c[1], ns);
    if (ns > ctr_read(&c[2]))                       /* the longest run */
        __atomic_store_n(&c[2], ns, __ATOMIC_RELAXED);
    w->clk = now;
}

/* Every op of p passes?  -1 error, 0 no (or the walk went stale after a
 * check that may have run Python code), 1 yes.  `timed` is a constant of
 * each caller: the timed walk charges each op's time to its slot. */
static inline __attribute__((always_inline)) int
prog_pass_body(Walk *w, const Prog *p, const int timed)
{
    for (int i = 0; i < p->n; i++) {
        const Op *o = &p->ops[i];
        int ok = o->kind == OP_TENSOR ? tensor_op_pass(w, o)
                 : o->kind == OP_SAME ? same_op_pass(w, o) : test_pass(w, o->test);
        if (timed)
            charge_slot(w, o->slot);
        if (ok <= 0)
            return ok;
        if (walk_stale(w))
            return 0;
    }
    return 1;
}

static inline int
prog_pass(Walk *w, const Prog *p)
{
    return prog_pass_body(w, p, 0);
}

static int
prog_pass_timed(Walk *w, const Prog *p)
{
    return prog_pass_body(w, p, 1);
}

static int walk_node(Walk *w, Node *n);
static int walk_node_timed(Walk *w, Node *n);

/* Walk node n: lowers w->best to the newest passing entry below n.
 * 0, or -1 with an exception.  Recursion depth is bounded by the build.
 * `timed` is a constant of each of its two callers (walk_node and
 * walk_node_timed are this body compiled twice), so the untimed walk has
 * no clock and no test of it; the timed one adds the time of the node's
 * own tests (its shared tests, switch and leaf tests, not its children)
 * to ctr[3], and each test's time to its slot (GTree.slot_ctr). */
static inline __attribute__((always_inline)) int
walk_node_body(Walk *w, Node *n, const int timed)
{
    if (n == NULL || n->newest >= w->best || w->aborted)   /* cannot improve? */
        return 0;
    uint64_t t0 = timed ? (w->clk = mono_ns()) : 0, own = 0;
    int found_before = w->best;
    w->visited++;
    ctr_bump(&n->ctr[0]);
    int ok = timed ? prog_pass_timed(w, &n->prog) : prog_pass(w, &n->prog);
    if (ok < 0)
        return -1;
    if (ok == 0) {
        ctr_bump(&n->ctr[1]);
        goto done;
    }
    if (n->key < 0) {                               /* leaf */
        for (int j = 0; j < n->nleaf && n->leaf[j] < w->best; j++) {
            if (w->t->entries[n->leaf[j]].gs->dead)
                continue;
            int ok = timed ? prog_pass_timed(w, &n->leaf_progs[j])
                           : prog_pass(w, &n->leaf_progs[j]);
            if (ok < 0)
                return -1;
            if (ok) {
                w->best = n->leaf[j];
                break;
            }
        }
    }
    else {
        int b = switch_branch(w, n);
        if (b == -2)
            return -1;
        if (timed)
            charge_slot(w, n->switch_slot);
        Node *first = b >= 0 ? n->child[b] : NULL, *second = n->deflt;
        if (second != NULL && (first == NULL || second->newest < first->newest)) {
            Node *swap = first;                     /* newer subtree first: prunes more */
            first = second;
            second = swap;
        }
        if (timed) {                                /* the children time themselves */
            own += w->clk - t0;                     /* read by charge_slot */
            if (walk_node_timed(w, first) < 0 || walk_node_timed(w, second) < 0)
                return -1;
            t0 = mono_ns();
        }
        else if (walk_node(w, first) < 0 || walk_node(w, second) < 0)
            return -1;
    }
    if (w->best == found_before)
        ctr_bump(&n->ctr[1]);
done:
    if (timed) {
        own += mono_ns() - t0;
        ctr_bump(&n->ctr[2]);
        ctr_add(&n->ctr[3], own);
    }
    return 0;
}

static int
walk_node(Walk *w, Node *n)
{
    return walk_node_body(w, n, 0);
}

static int
walk_node_timed(Walk *w, Node *n)
{
    return walk_node_body(w, n, 1);
}

/* ---- miss report ----------------------------------------------------------- */

/* Expected value of test t as a new Python object.  An ID test's object is
 * borrowed from entry t->entry's GirSet and valid only while that set is
 * not dead: once it is (one of its weakly held objects died, and no lookup
 * has pruned the entry yet), the object may be freed memory, so the dead
 * marker stands for it (issue 12: the telemetry refresh encoded trees of
 * caches not called since their guarded functions died, and read them). */
PyObject *
expected_obj(const GTree *tr, const Test *t)
{
    switch (tr->keys[t->key].prop) {
    case P_ID:
        return Py_NewRef(tr->entries[t->entry].gs->dead ? dead_obj : t->obj);
    case P_TYPE: case P_VALUE: case P_KEYS: case P_DTYPE: case P_DEVICE: case P_SHAPE:
        return Py_NewRef(t->obj);
    case P_NONE: case P_GRAD: case P_REQGRAD: case P_SAME: case P_STORAGE:
        return PyBool_FromLong(t->bits != 0);
    case P_DKEYS:
        return PyLong_FromUnsignedLongLong((uint64_t)t->bits);
    default:
        return PyLong_FromLongLong(t->bits);
    }
}

/* A SHAPE relation's actual leaf values in this call: a new tuple, one
 * item per leaf step in program order (None where it has none). */
static PyObject *
shape_actual(Walk *w, const TShape *sh)
{
    PyObject *out = PyList_New(0);
    for (int i = 0; out != NULL && i < sh->n; i++) {
        const GirShapeStep *s = &sh->steps[i];
        if (!gir_shape_is_leaf(s->op))
            continue;
        int64_t v;
        int rc = shape_leaf(w, s, &v);
        PyObject *item = rc < 0 ? NULL : rc == 0 ? Py_NewRef(Py_None) : PyLong_FromLongLong(v);
        if (item == NULL || PyList_Append(out, item) < 0)
            Py_CLEAR(out);
        Py_XDECREF(item);
    }
    if (out == NULL)
        return NULL;
    Py_SETREF(out, PyList_AsTuple(out));
    return out;
}

/* Actual value of test t's property in this call, as a new object (cold
 * path: may use Python attribute reads for dtype and device). */
static PyObject *
actual_obj(Walk *w, const Test *t)
{
    const Key *k = &w->t->keys[t->key];
    PyObject *v = fetch(w, k->src);
    if (v == NULL)
        return NULL;
    if (v == MISSING)
        return Py_NewRef(missing_obj);
    switch (k->prop) {
    case P_TYPE:
        return Py_NewRef((PyObject *)Py_TYPE(v));
    case P_ID: case P_VALUE:
        return Py_NewRef(v);
    case P_KEYS:
        return PyDict_CheckExact(v) || PyODict_CheckExact(v) ? PySequence_Tuple(v) : Py_NewRef(v);
    case P_SHAPE:
        return shape_actual(w, &w->t->shapes[k->dim]);
    case P_DTYPE: case P_DEVICE:
        if (tensor_view(w, k->src, v) == NULL) {
            if (PyErr_Occurred())
                return NULL;
            Py_RETURN_NONE;
        }
        return PyObject_GetAttrString(v, k->prop == P_DTYPE ? "dtype" : "device");
    default:
        break;
    }
    int64_t bits;
    int rc = scalar_actual(w, k, v, &bits);
    if (rc < 0)
        return NULL;
    if (rc == 0)
        Py_RETURN_NONE;
    switch (k->prop) {
    case P_NONE: case P_GRAD: case P_REQGRAD: case P_SAME: case P_STORAGE:
        return PyBool_FromLong(bits != 0);
    case P_DKEYS:
        return PyLong_FromUnsignedLongLong((uint64_t)bits);
    default:
        return PyLong_FromLongLong(bits);
    }
}

/* "size()[0]", "dtype", ... for test t. */
PyObject *
property_text(const GTree *tr, const Test *t)
{
    const Key *k = &tr->keys[t->key];
    if (k->prop == P_SIZE || k->prop == P_STRIDE)
        return PyUnicode_FromFormat("%s[%d]", prop_names[k->prop], k->dim);
    return PyUnicode_FromString(prop_names[k->prop]);
}

/* Position (within entry e's tests) of its first failing test, ntests when
 * all pass, -1 on error (also stops when the walk went stale). */
static int
first_failing_test(Walk *w, const TEntry *e)
{
    for (int j = 0; j < e->ntests; j++) {
        int ok = test_pass(w, &w->t->tests[e->first + j]);
        if (ok < 0)
            return -1;
        if (ok == 0 || walk_stale(w))
            return j;
    }
    return e->ntests;
}

/* The miss report: closest entry = longest passing prefix of its tests in
 * guard order (ties: newest).  New list, or NULL with an exception; an
 * empty list when the walk went stale. */
static PyObject *
miss_report(Walk *w)
{
    GTree *tr = w->t;
    int *fail = PyMem_Calloc(tr->nentries ? tr->nentries : 1, sizeof(int));
    PyObject *list = PyList_New(0), *item = NULL;
    if (fail == NULL || list == NULL)
        goto error;
    int closest = -1;
    for (int i = 0; i < tr->nentries; i++) {
        if (tr->entries[i].gs->dead) {
            fail[i] = -1;
            continue;
        }
        if ((fail[i] = first_failing_test(w, &tr->entries[i])) < 0)
            goto error;
        if (w->aborted) {
            PyMem_Free(fail);
            return list;
        }
        if (closest < 0 || fail[i] > fail[closest])
            closest = i;
    }
    for (int pass = 0; pass < 2; pass++) {          /* closest, then the rest */
        for (int i = 0; i < tr->nentries; i++) {
            if (fail[i] < 0 || (pass == 0) != (i == closest))
                continue;
            const TEntry *e = &tr->entries[i];
            if (fail[i] >= e->ntests) {             /* passes now (a check changed state) */
                item = Py_BuildValue("(On)", e->payload, (Py_ssize_t)-1);
            }
            else {
                const Test *t = &tr->tests[e->first + fail[i]];
                if (pass == 0)
                    item = Py_BuildValue("(OiNNN)", e->payload, t->guard, property_text(tr, t),
                                         expected_obj(tr, t), actual_obj(w, t));
                else
                    item = Py_BuildValue("(Oi)", e->payload, t->guard);
            }
            if (item == NULL || PyList_Append(list, item) < 0)
                goto error;
            Py_CLEAR(item);
        }
    }
    PyMem_Free(fail);
    return list;
error:
    PyMem_Free(fail);
    Py_XDECREF(item);
    Py_XDECREF(list);
    return NULL;
}

/* ---- lookup ---------------------------------------------------------------- */

/* Trees with at most this many sources keep their slots on the C stack. */
#define WALK_LOCAL_SLOTS 16

/* local: room for WALK_LOCAL_SLOTS slots, used when the tree needs no more. */
static int
walk_begin(Walk *w, GTree *t, const GevalFrame *fr, Slot *local)
{
    w->t = t;
    w->fr = fr;
    w->best = t->nentries;
    w->aborted = 0;
    w->visited = 0;
    static const uint64_t no_generation = 0;
    w->generation = fr->generation != NULL ? fr->generation : &no_generation;
    w->generation0 = fr->generation != NULL ? fr->generation0 : 0;
    w->grad = -1;
    w->gstate_read = 0;
    w->tls_read = 0;
    if (t->nsources <= WALK_LOCAL_SLOTS) {         /* the caller's stack: no TLS */
        w->slots = local;
        w->chunk = NULL;
    }
    else {
        w->slots = scratch_take(t->nsources);
        if (UNLIKELY(w->slots == NULL))
            return -1;
        w->chunk = scratch;
    }
    for (int i = 0; i < t->nsources; i++) {        /* tm stays garbage until read */
        Slot *slot = &w->slots[i];
        const TSource *s = &t->sources[i];
        /* Borrowed sources cost nothing to fetch and run no code: take
         * them now rather than through fetch() at their first test. */
        if (s->kind == GIR_SRC_LOCAL)
            slot->value = s->index < fr->nlocals && fr->locals[s->index] != NULL
                          ? fr->locals[s->index] : MISSING;
        else
            slot->value = s->kind == GIR_SRC_NONE ? Py_None : NULL;
        slot->tstate = 0;
        slot->py_dims = NULL;
    }
    return 0;
}

static void
walk_end(Walk *w)
{
    for (int i = 0; i < w->t->nsources; i++) {
        Slot *slot = &w->slots[i];
        PyObject *v = slot->value;
        slot->value = NULL;
        if (UNLIKELY(slot->py_dims != NULL)) {
            PyMem_Free(slot->py_dims);
            slot->py_dims = NULL;
        }
        if (v != NULL && v != MISSING && !borrowed_value(&w->t->sources[i]))
            Py_DECREF(v);
    }
    if (w->chunk != NULL)
        scratch_drop(w->chunk, w->t->nsources);
}

/* gtree_lookup and gtree_lookup_timed: `timed` is a constant of each
 * caller, so gtree_lookup has no clock and no test of it. */
static inline __attribute__((always_inline)) Py_ssize_t
lookup(GTree *t, const GevalFrame *fr, PyObject **failures, const int timed, uint64_t *ns)
{
    Walk w;
    Slot local[WALK_LOCAL_SLOTS];
    uint64_t t0 = timed ? mono_ns() : 0;
    if (walk_begin(&w, t, fr, local) < 0)
        return GTREE_ERROR;
    Py_ssize_t result;
    t->lookups++;
    if ((timed ? walk_node_timed(&w, t->root) : walk_node(&w, t->root)) < 0)
        result = GTREE_ERROR;
    else if (w.aborted)
        result = GTREE_ABORTED;
    else if (w.best < t->nentries)
        result = w.best;
    else
        result = GTREE_MISS;
    if (timed) {
        *ns = mono_ns() - t0;
        t->timed++;
        t->timed_ns += *ns;
    }
    t->visited_last = w.visited;
    t->visited_total += w.visited;
    if (result >= 0)
        t->hits++;
    else if (result == GTREE_MISS) {
        t->misses++;
        if (failures != NULL) {
            *failures = miss_report(&w);
            if (*failures == NULL)
                result = GTREE_ERROR;
            else if (w.aborted) {
                Py_CLEAR(*failures);
                result = GTREE_ABORTED;
            }
        }
    }
    walk_end(&w);
    return result;
}

Py_ssize_t
gtree_lookup(GTree *t, const GevalFrame *fr, PyObject **failures)
{
    return lookup(t, fr, failures, 0, NULL);
}

Py_ssize_t
gtree_lookup_timed(GTree *t, const GevalFrame *fr, PyObject **failures, uint64_t *ns)
{
    *ns = 0;
    return lookup(t, fr, failures, 1, ns);
}

Py_ssize_t
gtree_first_failure(GTree *t, Py_ssize_t i, const GevalFrame *fr)
{
    Walk w;
    Slot local[WALK_LOCAL_SLOTS];
    if (walk_begin(&w, t, fr, local) < 0)
        return -2;
    const TEntry *e = &t->entries[i];
    int j = first_failing_test(&w, e);
    walk_end(&w);
    if (j < 0)
        return -2;
    return j >= e->ntests ? -1 : t->tests[e->first + j].guard;
}

Py_ssize_t
gtree_size(const GTree *t)
{
    return t->nentries;
}

void *
gtree_tag(const GTree *t, Py_ssize_t i)
{
    return t->entries[i].tag;
}

PyObject *
gtree_payload(const GTree *t, Py_ssize_t i)
{
    return t->entries[i].payload;
}
