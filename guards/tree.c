/* guards/tree.c — one decision tree over the guards of all cache entries of
 * a code object; its evaluation is the hook's lookup.
 *
 * Owns: decomposition of GirSets into tests, the tree build (shared tests,
 * switches, default branches, leaves), source fetching with a per-call
 * scratch (each source at most once per call, tensor metadata once per
 * tensor source), the global-lookup memo keyed on dict versions, the
 * nn.Module attribute emulation, the closest-entry report on a miss, and
 * the counters.  It must not allocate on a hit, must not call Python code
 * on a hit for the simple kinds (see ARCHITECTURE.md), and must not keep
 * state between calls other than counters and the global memo (checks may
 * run Python code that re-enters the hook and this evaluator).
 *
 * Design (also in ARCHITECTURE.md, "Guard trees"):
 * - A test is (source, property, expected): TYPE, ID, IS_NONE, GRAD, LEN,
 *   GLOBAL_STATE, DTYPE, DEVICE, REQUIRES_GRAD, DISPATCH_KEYS, NDIM, SIZE[i],
 *   STRIDE[i] (int64 values: pointers or numbers), VALUE (same type and
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
#include "tree.h"

#include <stddef.h>     /* offsetof */
#include <string.h>     /* memset */

#include "tmeta.h"      /* tmeta_read_with, tmeta_read_tls, tmeta_grad_enabled */
#include "../core/pyversion.h"  /* dyn_lookup_attr, dyn_dict_version */

/* Deepest node chain; deeper parts become leaves (bounds the recursion). */
#define GTREE_MAX_DEPTH 512

/* Branch hints for the per-call walk (GCC/Clang). */
#define LIKELY(x) __builtin_expect(!!(x), 1)
#define UNLIKELY(x) __builtin_expect(!!(x), 0)

/* ---- tests ------------------------------------------------------------------ */

/* Properties, in evaluation-cost order (shared and leaf tests run in this
 * order: TYPE first, so dependent properties see the expected type). */
typedef enum {
    P_TYPE, P_ID, P_NONE, P_GRAD, P_GSTATE, P_SAME, P_LEN, P_DTYPE, P_DEVICE, P_REQGRAD, P_DKEYS,
    P_NDIM, P_SIZE, P_STRIDE, P_VALUE, P_KEYS, NPROPS
} Prop;

static const char *const prop_names[NPROPS] = {
    "type", "id", "is_none", "grad_mode", "global_state", "same_object", "len", "dtype", "device",
    "requires_grad", "dispatch_keys", "ndim", "size()", "stride()", "value", "keys",
};

static inline int
is_tensor_prop(int p)
{
    return p >= P_DTYPE && p <= P_STRIDE;
}

/* Needs the TYPE test of its source consumed before it may be switched on. */
static inline int
is_dependent(int p)
{
    return p >= P_LEN;
}

static inline int
is_scalar_prop(int p)
{
    return p < P_VALUE;
}

typedef struct {
    int src;            /* tree source */
    int prop;           /* Prop */
    int dim;            /* SIZE/STRIDE dimension; SAME: the other tree source; else 0 */
} Key;

typedef struct {
    int key;            /* index into GTree.keys */
    int src, prop, dim; /* copy of keys[key]: the walk reads the test alone */
    int entry;          /* owning entry (0 = newest) */
    int guard;          /* index of the guard in the entry's list */
    int switchable;     /* `bits` may route a switch */
    int64_t bits;       /* int64 properties: the value; VALUE: its hash */
    PyObject *obj;      /* borrowed from the entry's GirSet: expected object
                           of TYPE, ID, VALUE, KEYS, DTYPE, DEVICE; or NULL */
} Test;

typedef struct {
    GirSet *gs;         /* reference */
    PyObject *payload;  /* strong */
    void *tag;          /* opaque */
    int first, ntests;  /* tests[first .. first + ntests): guard order */
} TEntry;

typedef struct {
    int kind;           /* GirSourceKind */
    int base;           /* tree source of the base, or -1 */
    Py_ssize_t index;   /* LOCAL slot, CLOSURE index, ITEM int key */
    PyObject *name;     /* borrowed (from a GirSet the tree holds) */
    PyObject *spec;     /* borrowed: the source tuple */
    /* GLOBAL memo: the lookup result stays valid while both dicts are the
     * same objects at the same version (dict versions are global, so a new
     * dict at the same address never matches). */
    PyObject *g_dict, *b_dict;  /* borrowed, compared only */
    uint64_t g_ver, b_ver;
    PyObject *g_value;  /* borrowed (alive while g_dict/b_dict unchanged), or MISSING */
    /* ATTR memo: whether the base's type reads attributes as nn.Module does
     * (see fetch_attr), valid while the type has the same version tag (tags
     * are never reused, so a new type at the same address never matches). */
    PyTypeObject *a_type;   /* borrowed, compared only, or NULL */
    unsigned int a_tag;
    int a_module;
} TSource;

/* A test list compiled for the walk.  OP_TEST runs one test; OP_TENSOR
 * runs every tensor-metadata test of one source in the list at once (at
 * the position of the first: they run no Python code once the source's
 * view is read, so their order among themselves cannot change the
 * decision).  Lists are sorted by property, so a source's TYPE test still
 * runs before its tensor op.  OP_SAME runs every SAME_OBJECT test between
 * two argument slots (the aliasing checks: one per pair of like tensors) at
 * once: they only compare values fetched before the walk. */
enum { OP_TEST, OP_TENSOR, OP_SAME };
enum { TM_DTYPE = 1, TM_DEVICE = 2, TM_REQGRAD = 4, TM_DKEYS = 8, TM_NDIM = 16 };

typedef struct {
    int stride;             /* 0: size()[dim], 1: stride()[dim] */
    int dim;
    int64_t value;
} DimTest;

typedef struct {
    int a, b;               /* tree sources (borrowed-value kinds) */
    int64_t same;           /* expected `a is b` */
} SamePair;

typedef struct {
    int kind;               /* OP_TEST, OP_TENSOR or OP_SAME */
    int src;                /* tree source */
    const Test *test;       /* OP_TEST: borrowed from GTree.tests (fixed after decompose) */
    unsigned mask;          /* OP_TENSOR: TM_* properties checked */
    int32_t dtype, ndim;
    int64_t reqgrad, device, dkeys;
    int ndims;
    DimTest *dims;          /* owned: OP_TENSOR size/stride tests, or NULL */
    int npairs;
    SamePair *pairs;        /* owned: OP_SAME tests, or NULL */
} Op;

typedef struct {
    int n;
    Op *ops;                /* owned */
} Prog;

typedef struct Node {
    int ntests;
    int *tests;             /* owned: shared tests, evaluation order */
    Prog prog;              /* tests compiled for the walk */
    int key;                /* switch key, or -1 for a leaf */
    int nbranch;
    int64_t *bits;          /* owned: sorted switch values (VALUE: hashes) */
    PyObject **vals;        /* owned array, borrowed items: VALUE switch keys */
    struct Node **child;    /* owned */
    struct Node *deflt;     /* owned, or NULL */
    int nleaf;
    int *leaf;              /* owned: entries, newest first */
    int *leaf_off;          /* owned: nleaf + 1 offsets into leaf_tests */
    int *leaf_tests;        /* owned: each leaf entry's remaining tests */
    Prog *leaf_progs;       /* owned: nleaf compiled leaf_tests lists */
    int newest;             /* lowest entry index in the subtree */
    /* ctr[0]: walks that entered the node, ctr[1]: walks that found no
     * candidate below, counts.  ctr is own_ctr, or a pair of the telemetry
     * region's live counters (gtree_bind_counters). */
    uint64_t *ctr;
    uint64_t own_ctr[2];
} Node;

struct GTree {
    Py_ssize_t refs;        /* C references; first member (tree.h) */
    GirRuntime *rt;         /* borrowed */
    int nentries;
    TEntry *entries;        /* owned */
    int ntests;
    Test *tests;            /* owned */
    int nkeys;
    Key *keys;              /* owned */
    int nsources;
    TSource *sources;       /* owned */
    Node *root;             /* owned, or NULL (no entries) */
    int nnodes;
    uint64_t lookups, hits, misses;     /* counts */
    uint64_t visited_last;  /* nodes entered by the last lookup */
    uint64_t visited_total; /* nodes entered by all lookups */
    int bound;              /* node counters live in the telemetry region (counted in gtree_bound_alive) */
};

Py_ssize_t gtree_bound_alive;

_Static_assert(offsetof(struct GTree, refs) == 0, "refs must come first (tree.h)");

/* ---- per-call scratch ------------------------------------------------------ */

static PyObject *missing_obj;   /* strong: the reported `actual` of a missing source */

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

/* Does the slot of source s hold a borrowed value?  LOCAL values are the
 * argument slots of a frame that has not started: nothing can rebind them
 * before the lookup ends (no Python code can reach a frame that is not
 * linked yet), and the frame holds a reference throughout.  NONE is
 * Py_None.  Every other fetch returns a new reference. */
static inline int
borrowed_value(const TSource *s)
{
    return s->kind == GIR_SRC_LOCAL || s->kind == GIR_SRC_NONE;
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

static inline int64_t
device_bits(int32_t type, int32_t index)
{
    return ((int64_t)type << 32) | (uint32_t)index;
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
    }
    return 0;
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

/* EQUALS_MATCH's value test: `type(v) is type(e)` and, for exact tuples,
 * the same rule item by item, for exact floats and complex numbers the same
 * bits (0.0 is not -0.0, which 1/x or copysign tell apart; a NaN matches a
 * NaN of the same bits, so it does not recompile on every call), else
 * `v == e`.  Stricter than tuple == (a tuple holding 1.0 does not match one
 * holding 1), and never calls an item's __eq__ unless its type is the
 * expected item's type.  Recursion is bounded by the expected constant's
 * depth.  -1 error, 0 fail, 1 pass. */
static int
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
    case P_VALUE:
        return value_match(v, t->obj);
    case P_KEYS:
        return dict_keys_match(v, t->obj);
    default: {                                      /* LEN */
        int64_t actual;
        int rc = scalar_actual(w, &w->t->keys[t->key], v, &actual);
        return rc <= 0 ? rc : actual == t->bits;
    }
    }
}

/* ---- the walk -------------------------------------------------------------- */

static int is_simple_constant(PyObject *o, int depth);

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

/* Every op of p passes?  -1 error, 0 no (or the walk went stale after a
 * check that may have run Python code), 1 yes. */
static inline int
prog_pass(Walk *w, const Prog *p)
{
    for (int i = 0; i < p->n; i++) {
        const Op *o = &p->ops[i];
        int ok = o->kind == OP_TENSOR ? tensor_op_pass(w, o)
                 : o->kind == OP_SAME ? same_op_pass(w, o) : test_pass(w, o->test);
        if (ok <= 0)
            return ok;
        if (walk_stale(w))
            return 0;
    }
    return 1;
}

/* All remaining tests of leaf entry j pass?  -1 error, 0 no, 1 yes. */
static int
leaf_entry_passes(Walk *w, const Node *n, int j)
{
    return prog_pass(w, &n->leaf_progs[j]);
}

/* Node counters may live in the shared telemetry region, read by other
 * processes: whole-word relaxed stores, as the hook's other counters. */
static inline void
ctr_bump(uint64_t *c)
{
    __atomic_store_n(c, __atomic_load_n(c, __ATOMIC_RELAXED) + 1, __ATOMIC_RELAXED);
}

static inline uint64_t
ctr_read(const uint64_t *c)
{
    return __atomic_load_n(c, __ATOMIC_RELAXED);
}

/* Walk node n: lowers w->best to the newest passing entry below n.
 * 0, or -1 with an exception.  Recursion depth is bounded by the build. */
static int
walk_node(Walk *w, Node *n)
{
    if (n == NULL || n->newest >= w->best || w->aborted)   /* cannot improve? */
        return 0;
    int found_before = w->best;
    w->visited++;
    ctr_bump(&n->ctr[0]);
    int ok = prog_pass(w, &n->prog);
    if (ok < 0)
        return -1;
    if (ok == 0) {
        ctr_bump(&n->ctr[1]);
        return 0;
    }
    if (n->key < 0) {                               /* leaf */
        for (int j = 0; j < n->nleaf && n->leaf[j] < w->best; j++) {
            if (w->t->entries[n->leaf[j]].gs->dead)
                continue;
            int ok = leaf_entry_passes(w, n, j);
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
        Node *first = b >= 0 ? n->child[b] : NULL, *second = n->deflt;
        if (second != NULL && (first == NULL || second->newest < first->newest)) {
            Node *swap = first;                     /* newer subtree first: prunes more */
            first = second;
            second = swap;
        }
        if (walk_node(w, first) < 0 || walk_node(w, second) < 0)
            return -1;
    }
    if (w->best == found_before)
        ctr_bump(&n->ctr[1]);
    return 0;
}

/* ---- miss report ----------------------------------------------------------- */

/* Expected value of test t as a new Python object. */
static PyObject *
expected_obj(const GTree *tr, const Test *t)
{
    switch (tr->keys[t->key].prop) {
    case P_TYPE: case P_ID: case P_VALUE: case P_KEYS: case P_DTYPE: case P_DEVICE:
        return Py_NewRef(t->obj);
    case P_NONE: case P_GRAD: case P_REQGRAD: case P_SAME:
        return PyBool_FromLong(t->bits != 0);
    case P_DKEYS:
        return PyLong_FromUnsignedLongLong((uint64_t)t->bits);
    default:
        return PyLong_FromLongLong(t->bits);
    }
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
        return PyDict_CheckExact(v) ? PySequence_Tuple(v) : Py_NewRef(v);
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
    case P_NONE: case P_GRAD: case P_REQGRAD: case P_SAME:
        return PyBool_FromLong(bits != 0);
    case P_DKEYS:
        return PyLong_FromUnsignedLongLong((uint64_t)bits);
    default:
        return PyLong_FromLongLong(bits);
    }
}

/* "size()[0]", "dtype", ... for test t. */
static PyObject *
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

Py_ssize_t
gtree_lookup(GTree *t, const GevalFrame *fr, PyObject **failures)
{
    Walk w;
    Slot local[WALK_LOCAL_SLOTS];
    if (walk_begin(&w, t, fr, local) < 0)
        return GTREE_ERROR;
    Py_ssize_t result;
    t->lookups++;
    if (walk_node(&w, t->root) < 0)
        result = GTREE_ERROR;
    else if (w.aborted)
        result = GTREE_ABORTED;
    else if (w.best < t->nentries)
        result = w.best;
    else
        result = GTREE_MISS;
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

/* ---- build ----------------------------------------------------------------- */

/* Build state. */
typedef struct {
    GTree *t;               /* under construction */
    PyObject *src_memo;     /* strong: dict source tuple -> tree source */
    PyObject *key_memo;     /* strong: dict packed key -> key index */
    int cap_sources, cap_keys, cap_tests;
    char *consumed;         /* owned: per test, consumed on the current path */
} Build;

/* A constant whose hash and value_match are C code and agree (equal
 * values hash alike): switchable VALUE.  Not a NaN, whose hash is its
 * address while value_match compares bits. */
static int
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

static int
grow(void **arr, int *cap, int need, size_t size)
{
    if (need <= *cap)
        return 0;
    int cap2 = *cap ? 2 * *cap : 16;
    while (cap2 < need)
        cap2 *= 2;
    void *p = PyMem_Realloc(*arr, (size_t)cap2 * size);
    if (p == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    *arr = p;
    *cap = cap2;
    return 0;
}

/* Tree source of GirSet source j (map holds the already mapped bases). */
static int
map_source(Build *b, const GirSource *gsrc, const int *map)
{
    PyObject *known = PyDict_GetItemWithError(b->src_memo, gsrc->spec);
    if (known != NULL)
        return (int)PyLong_AsLong(known);
    if (PyErr_Occurred())
        return -1;
    GTree *t = b->t;
    if (grow((void **)&t->sources, &b->cap_sources, t->nsources + 1, sizeof(TSource)) < 0)
        return -1;
    TSource *s = &t->sources[t->nsources];
    *s = (TSource){.kind = gsrc->kind, .base = gsrc->base >= 0 ? map[gsrc->base] : -1,
                   .index = gsrc->index, .name = gsrc->name, .spec = gsrc->spec};
    PyObject *boxed = PyLong_FromLong(t->nsources);
    if (boxed == NULL || PyDict_SetItem(b->src_memo, gsrc->spec, boxed) < 0) {
        Py_XDECREF(boxed);
        return -1;
    }
    Py_DECREF(boxed);
    return t->nsources++;
}

static int
key_of(Build *b, int src, int prop, int dim)
{
    long long packed = ((long long)src * NPROPS + prop) * 1000003LL + dim;
    PyObject *boxed = PyLong_FromLongLong(packed);
    if (boxed == NULL)
        return -1;
    PyObject *known = PyDict_GetItemWithError(b->key_memo, boxed);
    if (known != NULL) {
        Py_DECREF(boxed);
        return (int)PyLong_AsLong(known);
    }
    GTree *t = b->t;
    PyObject *index = NULL;
    if (PyErr_Occurred()
            || grow((void **)&t->keys, &b->cap_keys, t->nkeys + 1, sizeof(Key)) < 0
            || (index = PyLong_FromLong(t->nkeys)) == NULL
            || PyDict_SetItem(b->key_memo, boxed, index) < 0) {
        Py_DECREF(boxed);
        Py_XDECREF(index);
        return -1;
    }
    Py_DECREF(boxed);
    Py_DECREF(index);
    t->keys[t->nkeys] = (Key){.src = src, .prop = prop, .dim = dim};
    return t->nkeys++;
}

/* Append a test of entry `entry`, guard `guard`. */
static int
add_test(Build *b, int entry, int guard, int src, int prop, int dim, int64_t bits,
         PyObject *obj /* borrowed */)
{
    int key = key_of(b, src, prop, dim);
    if (key < 0)
        return -1;
    GTree *t = b->t;
    if (grow((void **)&t->tests, &b->cap_tests, t->ntests + 1, sizeof(Test)) < 0)
        return -1;
    Test *x = &t->tests[t->ntests];
    *x = (Test){.key = key, .src = src, .prop = prop, .dim = dim, .entry = entry,
                .guard = guard, .switchable = 1, .bits = bits, .obj = obj};
    if (prop == P_VALUE) {
        x->switchable = is_simple_constant(obj, 0);
        if (x->switchable) {
            Py_hash_t h = PyObject_Hash(obj);
            if (h == -1 && PyErr_Occurred())
                return -1;
            x->bits = h;
        }
    }
    else if (prop == P_KEYS)
        x->switchable = 0;
    t->ntests++;
    return 0;
}

static inline int64_t
ptr_bits(PyObject *o)
{
    return (int64_t)(intptr_t)o;
}

/* Decompose check c (guard g) of entry `entry` into tests; map: tree
 * source of each source of the entry's set. */
static int
decompose(Build *b, int entry, int g, const GirCheck *c, const int *map)
{
    int src = map[c->source];
    switch (c->kind) {
    case GIR_TYPE_MATCH:
        return add_test(b, entry, g, src, P_TYPE, 0, ptr_bits(c->obj), c->obj);
    case GIR_ID_MATCH:
    case GIR_FUNCTION_MATCH:
        return add_test(b, entry, g, src, P_ID, 0, ptr_bits(c->obj), c->obj);
    case GIR_EQUALS_MATCH: {
        PyObject *type = (PyObject *)Py_TYPE(c->obj);
        if (add_test(b, entry, g, src, P_TYPE, 0, ptr_bits(type), type) < 0)
            return -1;
        return add_test(b, entry, g, src, P_VALUE, 0, 0, c->obj);
    }
    case GIR_LENGTH:
        if (add_test(b, entry, g, src, P_TYPE, 0, ptr_bits(c->obj), c->obj) < 0)
            return -1;
        return add_test(b, entry, g, src, P_LEN, 0, c->n, NULL);
    case GIR_GRAD_MODE:
        return add_test(b, entry, g, src, P_GRAD, 0, c->n != 0, NULL);
    case GIR_GLOBAL_STATE:
        return add_test(b, entry, g, src, P_GSTATE, 0, (int64_t)c->n, NULL);
    case GIR_DICT_KEYS: {
        PyObject *type = (PyObject *)&PyDict_Type;
        if (add_test(b, entry, g, src, P_TYPE, 0, ptr_bits(type), type) < 0)
            return -1;
        return add_test(b, entry, g, src, P_KEYS, 0, 0, c->obj);
    }
    case GIR_NONE_MATCH:
        return add_test(b, entry, g, src, P_NONE, 0, c->n != 0, NULL);
    case GIR_SAME_OBJECT:                           /* key dim: the other source */
        return add_test(b, entry, g, src, P_SAME, map[c->n], c->obj == Py_True, NULL);
    case GIR_TENSOR_MATCH: {
        const GirTensor *e = c->tensor;
        if (add_test(b, entry, g, src, P_TYPE, 0, ptr_bits(e->cls), e->cls) < 0
                || add_test(b, entry, g, src, P_DTYPE, 0, e->dtype_code, e->dtype) < 0
                || add_test(b, entry, g, src, P_DEVICE, 0,
                            device_bits(e->device_type, e->device_index), e->device) < 0
                || add_test(b, entry, g, src, P_REQGRAD, 0, e->requires_grad != 0, NULL) < 0
                || add_test(b, entry, g, src, P_DKEYS, 0, (int64_t)e->dispatch_keys, NULL) < 0
                || add_test(b, entry, g, src, P_NDIM, 0, e->ndim, NULL) < 0)
            return -1;
        for (int pass = 0; pass < 2; pass++) {
            const Py_ssize_t *dims = pass == 0 ? e->sizes : e->strides;
            for (Py_ssize_t i = 0; dims != NULL && i < e->ndim; i++) {
                if (dims[i] >= 0
                        && add_test(b, entry, g, src, pass == 0 ? P_SIZE : P_STRIDE, (int)i,
                                    dims[i], NULL) < 0)
                    return -1;
            }
        }
        return 0;
    }
    }
    PyErr_SetString(PyExc_SystemError, "dynamo: unknown guard kind in a compiled set");
    return -1;
}

/* Decompose every entry's checks, in guard order. */
static int
decompose_entries(Build *b)
{
    GTree *t = b->t;
    for (int i = 0; i < t->nentries; i++) {
        GirSet *gs = t->entries[i].gs;
        int *map = PyMem_Calloc(gs->nsources ? gs->nsources : 1, sizeof(int));
        if (map == NULL) {
            PyErr_NoMemory();
            return -1;
        }
        for (Py_ssize_t j = 0; j < gs->nsources; j++) {
            if ((map[j] = map_source(b, &gs->sources[j], map)) < 0) {
                PyMem_Free(map);
                return -1;
            }
        }
        t->entries[i].first = t->ntests;
        for (Py_ssize_t g = 0; g < gs->nchecks; g++) {
            if (decompose(b, i, (int)g, &gs->checks[g], map) < 0) {
                PyMem_Free(map);
                return -1;
            }
        }
        t->entries[i].ntests = t->ntests - t->entries[i].first;
        PyMem_Free(map);
    }
    return 0;
}

/* Same expected value?  Without running user code: identity, or
 * value_match of simple constants of the same type (floats bit for bit:
 * merging the tests of 0.0 and -0.0, which are ==, let a call with -0.0
 * pass the entry traced with 0.0). */
static int
same_expected(const GTree *t, const Test *a, const Test *b)
{
    int prop = t->keys[a->key].prop;
    if (is_scalar_prop(prop))
        return a->bits == b->bits;
    if (a->obj == b->obj)
        return 1;
    if (Py_TYPE(a->obj) != Py_TYPE(b->obj) || !a->switchable || !b->switchable
            || a->bits != b->bits)
        return 0;
    int eq = value_match(a->obj, b->obj);
    if (eq < 0)
        PyErr_Clear();                              /* simple constants: cannot raise */
    return eq > 0;
}

/* First unconsumed test of entry e with key k (and, if like != NULL, the
 * same expected value), or -1. */
static int
find_test(Build *b, int e, int k, const Test *like)
{
    const TEntry *en = &b->t->entries[e];
    for (int x = en->first; x < en->first + en->ntests; x++) {
        const Test *t = &b->t->tests[x];
        if (!b->consumed[x] && t->key == k && (like == NULL || same_expected(b->t, t, like)))
            return x;
    }
    return -1;
}

/* Has entry e an unconsumed TYPE test on source src? */
static int
type_pending(Build *b, int e, int src)
{
    const TEntry *en = &b->t->entries[e];
    for (int x = en->first; x < en->first + en->ntests; x++) {
        const Key *k = &b->t->keys[b->t->tests[x].key];
        if (!b->consumed[x] && k->src == src && k->prop == P_TYPE)
            return 1;
    }
    return 0;
}

/* Sort tests by cost (property order), then guard order. */
static const GTree *sort_tree;
static int
cmp_cost(const void *pa, const void *pb)
{
    int a = *(const int *)pa, b = *(const int *)pb;
    int ca = sort_tree->keys[sort_tree->tests[a].key].prop;
    int cb = sort_tree->keys[sort_tree->tests[b].key].prop;
    if (ca != cb)
        return ca < cb ? -1 : 1;
    return a < b ? -1 : a > b;
}

static void
sort_by_cost(const GTree *t, int *tests, int n)
{
    sort_tree = t;
    qsort(tests, n, sizeof(int), cmp_cost);
}

static void free_node(Node *n);

static void
prog_free(Prog *p)
{
    for (int i = 0; i < p->n; i++) {
        PyMem_Free(p->ops[i].dims);
        PyMem_Free(p->ops[i].pairs);
    }
    PyMem_Free(p->ops);
    p->ops = NULL;
    p->n = 0;
}

/* Fold tensor test t into op o; 0 when o already checks that property
 * (the test then stays a separate OP_TEST), 1 when folded, -1 no memory. */
static int
fold_tensor_test(Op *o, const Test *t, int room)
{
    unsigned bit = t->prop == P_DTYPE ? TM_DTYPE : t->prop == P_DEVICE ? TM_DEVICE
                 : t->prop == P_REQGRAD ? TM_REQGRAD : t->prop == P_DKEYS ? TM_DKEYS
                 : t->prop == P_NDIM ? TM_NDIM : 0;
    if (bit != 0) {
        if (o->mask & bit)
            return 0;
        o->mask |= bit;
        switch (bit) {
        case TM_DTYPE: o->dtype = (int32_t)t->bits; break;
        case TM_DEVICE: o->device = t->bits; break;
        case TM_REQGRAD: o->reqgrad = t->bits; break;
        case TM_DKEYS: o->dkeys = t->bits; break;
        default: o->ndim = (int32_t)t->bits; break;
        }
        return 1;
    }
    if (o->dims == NULL && (o->dims = PyMem_Malloc((size_t)room * sizeof(DimTest))) == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    o->dims[o->ndims++] = (DimTest){.stride = t->prop == P_STRIDE, .dim = t->dim,
                                    .value = t->bits};
    return 1;
}

/* Compile the test list xs[0 .. n) (sorted by cost) into *p.  0 or -1. */
static int
prog_compile(const GTree *t, const int *xs, int n, Prog *p)
{
    p->n = 0;
    p->ops = PyMem_Calloc(n ? (size_t)n : 1, sizeof(Op));
    if (p->ops == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    Op *same = NULL;
    for (int i = 0; i < n; i++) {
        const Test *x = &t->tests[xs[i]];
        if (x->prop == P_SAME && borrowed_value(&t->sources[x->src])
                && borrowed_value(&t->sources[x->dim])) {
            if (same == NULL) {
                same = &p->ops[p->n++];
                *same = (Op){.kind = OP_SAME};
                if ((same->pairs = PyMem_Malloc((size_t)n * sizeof(SamePair))) == NULL) {
                    PyErr_NoMemory();
                    return -1;
                }
            }
            same->pairs[same->npairs++] = (SamePair){.a = x->src, .b = x->dim, .same = x->bits};
            continue;
        }
        Op *o = NULL;
        for (int j = 0; is_tensor_prop(x->prop) && j < p->n && o == NULL; j++) {
            if (p->ops[j].kind == OP_TENSOR && p->ops[j].src == x->src)
                o = &p->ops[j];
        }
        if (is_tensor_prop(x->prop) && o == NULL) {
            o = &p->ops[p->n++];
            *o = (Op){.kind = OP_TENSOR, .src = x->src};
        }
        int folded = o != NULL ? fold_tensor_test(o, x, n) : 0;
        if (folded < 0)
            return -1;
        if (!folded)
            p->ops[p->n++] = (Op){.kind = OP_TEST, .src = x->src, .test = x};
    }
    return 0;
}

static Node *
new_node(Build *b)
{
    Node *n = PyMem_Calloc(1, sizeof(Node));
    if (n == NULL)
        PyErr_NoMemory();
    else {
        n->key = -1;
        n->ctr = n->own_ctr;
        b->t->nnodes++;
    }
    return n;
}

/* Shared tests of the entries: consumed, returned as an owned array. */
static int
take_shared(Build *b, Node *n, const int *ents, int nent)
{
    const TEntry *e0 = &b->t->entries[ents[0]];
    int *shared = PyMem_Malloc((e0->ntests ? e0->ntests : 1) * sizeof(int));
    int *found = PyMem_Malloc((size_t)nent * sizeof(int));
    if (shared == NULL || found == NULL) {
        PyMem_Free(shared);
        PyMem_Free(found);
        PyErr_NoMemory();
        return -1;
    }
    /* Pass 0 takes TYPE/ID/IS_NONE/GRAD; pass 1 the dependent properties
     * whose TYPE test every entry has consumed by then (a shared len() must
     * not run before a TYPE test that is still pending deeper down). */
    for (int pass = 0; pass < 2; pass++)
    for (int x = e0->first; x < e0->first + e0->ntests; x++) {
        const Test *t = &b->t->tests[x];
        const Key *key = &b->t->keys[t->key];
        if (b->consumed[x] || is_dependent(key->prop) != pass)
            continue;
        int all = 1;
        for (int i = 0; i < nent && all && pass == 1; i++)
            all = !type_pending(b, ents[i], key->src);
        for (int i = 1; i < nent && all; i++)
            all = (found[i] = find_test(b, ents[i], t->key, t)) >= 0;
        if (!all)
            continue;
        b->consumed[x] = 1;
        for (int i = 1; i < nent; i++)
            b->consumed[found[i]] = 1;
        shared[n->ntests++] = x;
    }
    PyMem_Free(found);
    sort_by_cost(b->t, shared, n->ntests);
    n->tests = shared;
    return prog_compile(b->t, shared, n->ntests, &n->prog);
}

/* Undo take_shared for the entries (after building the subtree). */
static void
give_back_shared(Build *b, const Node *n, const int *ents, int nent)
{
    for (int s = 0; s < n->ntests; s++) {
        const Test *t = &b->t->tests[n->tests[s]];
        b->consumed[n->tests[s]] = 0;
        for (int i = 1; i < nent; i++) {
            /* The consumed twin of entry i: same key and value. */
            const TEntry *en = &b->t->entries[ents[i]];
            for (int x = en->first; x < en->first + en->ntests; x++) {
                if (b->consumed[x] && b->t->tests[x].key == t->key
                        && same_expected(b->t, &b->t->tests[x], t)) {
                    b->consumed[x] = 0;
                    break;
                }
            }
        }
    }
}

/* (value, entry, test) of one constraining entry, for the key choice. */
typedef struct {
    int64_t bits;
    int entry;
    int test;
} Cand;

static int
cmp_cand(const void *pa, const void *pb)
{
    const Cand *a = pa, *b = pb;
    if (a->bits != b->bits)
        return a->bits < b->bits ? -1 : 1;
    return a->entry < b->entry ? -1 : a->entry > b->entry;
}

/* Candidates of key k among ents (first unconsumed test per entry) into
 * out, sorted by value.  Returns their number, or -1 when the key is not
 * switchable/eligible here. */
static int
gather(Build *b, int k, const int *ents, int nent, Cand *out)
{
    const Key *key = &b->t->keys[k];
    int c = 0;
    for (int i = 0; i < nent; i++) {
        int x = find_test(b, ents[i], k, NULL);
        if (x < 0)
            continue;
        const Test *t = &b->t->tests[x];
        if (!t->switchable || (is_dependent(key->prop) && type_pending(b, ents[i], key->src)))
            return -1;
        out[c++] = (Cand){.bits = t->bits, .entry = ents[i], .test = x};
    }
    qsort(out, c, sizeof(Cand), cmp_cand);
    return c;
}

/* Distinct values in sorted candidates (VALUE: distinct hashes). */
static int
distinct(const Cand *c, int n)
{
    int d = n > 0;
    for (int i = 1; i < n; i++)
        d += c[i].bits != c[i - 1].bits;
    return d;
}

/* The key to switch on, or -1 (leaf).  Minimises c/d + w. */
static int
choose_key(Build *b, const int *ents, int nent, Cand *scratch_cands)
{
    GTree *t = b->t;
    int best = -1;
    double best_score = 0;
    char *seen = PyMem_Calloc(t->nkeys ? t->nkeys : 1, 1);
    if (seen == NULL) {
        PyErr_NoMemory();
        return -2;
    }
    for (int i = 0; i < nent; i++) {
        const TEntry *en = &t->entries[ents[i]];
        for (int x = en->first; x < en->first + en->ntests; x++) {
            int k = t->tests[x].key;
            if (b->consumed[x] || seen[k])
                continue;
            seen[k] = 1;
            int c = gather(b, k, ents, nent, scratch_cands);
            if (c < 0)
                continue;
            int d = distinct(scratch_cands, c);
            if (d < 2)
                continue;
            double score = (double)c / d + (nent - c);
            int prop = t->keys[k].prop, best_prop = best >= 0 ? t->keys[best].prop : NPROPS;
            if (best < 0 || score < best_score
                    || (score == best_score && (prop < best_prop || (prop == best_prop && k < best)))) {
                best = k;
                best_score = score;
            }
        }
    }
    PyMem_Free(seen);
    return best;
}

/* Leaf: entries with their remaining tests. */
static int
make_leaf(Build *b, Node *n, const int *ents, int nent)
{
    int total = 0;
    for (int i = 0; i < nent; i++) {
        const TEntry *en = &b->t->entries[ents[i]];
        for (int x = en->first; x < en->first + en->ntests; x++)
            total += !b->consumed[x];
    }
    n->nleaf = nent;
    n->leaf = PyMem_Malloc((size_t)nent * sizeof(int));
    n->leaf_off = PyMem_Malloc((size_t)(nent + 1) * sizeof(int));
    n->leaf_tests = PyMem_Malloc((size_t)(total ? total : 1) * sizeof(int));
    n->leaf_progs = PyMem_Calloc((size_t)nent, sizeof(Prog));
    if (n->leaf == NULL || n->leaf_off == NULL || n->leaf_tests == NULL || n->leaf_progs == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    int at = 0;
    for (int i = 0; i < nent; i++) {
        const TEntry *en = &b->t->entries[ents[i]];
        n->leaf[i] = ents[i];
        n->leaf_off[i] = at;
        for (int x = en->first; x < en->first + en->ntests; x++) {
            if (!b->consumed[x])
                n->leaf_tests[at++] = x;
        }
        sort_by_cost(b->t, n->leaf_tests + n->leaf_off[i], at - n->leaf_off[i]);
        if (prog_compile(b->t, n->leaf_tests + n->leaf_off[i], at - n->leaf_off[i],
                         &n->leaf_progs[i]) < 0)
            return -1;
    }
    n->leaf_off[nent] = at;
    return 0;
}

static Node *build_node(Build *b, const int *ents, int nent, int depth);

/* Switch node n on key k over the candidates; wildcards go to the default. */
static int
make_switch(Build *b, Node *n, int k, const int *ents, int nent, Cand *cands, int c, int depth)
{
    int d = 0;
    int *members = PyMem_Malloc((size_t)nent * sizeof(int));
    n->key = k;
    n->bits = PyMem_Malloc((size_t)c * sizeof(int64_t));
    n->vals = PyMem_Calloc((size_t)c, sizeof(PyObject *));
    n->child = PyMem_Calloc((size_t)c, sizeof(Node *));
    if (members == NULL || n->bits == NULL || n->vals == NULL || n->child == NULL) {
        PyMem_Free(members);
        PyErr_NoMemory();
        return -1;
    }
    /* Groups of equal expected values: equal bits, and for VALUE equal
     * objects (distinct constants may share a hash). */
    char *done = PyMem_Calloc((size_t)c, 1);
    if (done == NULL) {
        PyMem_Free(members);
        PyErr_NoMemory();
        return -1;
    }
    for (int i = 0; i < c; i++) {
        if (done[i])
            continue;
        const Test *rep = &b->t->tests[cands[i].test];
        int m = 0;
        for (int j = i; j < c && cands[j].bits == cands[i].bits; j++) {
            if (!done[j] && same_expected(b->t, &b->t->tests[cands[j].test], rep)) {
                done[j] = 1;
                members[m++] = cands[j].entry;
                b->consumed[cands[j].test] = 1;
            }
        }
        /* members are in candidate order (bits, entry): entry order within a group */
        n->bits[d] = cands[i].bits;
        n->vals[d] = rep->obj;
        n->child[d] = build_node(b, members, m, depth + 1);
        for (int j = i; j < c && cands[j].bits == cands[i].bits; j++) {
            if (done[j] == 1 && same_expected(b->t, &b->t->tests[cands[j].test], rep)) {
                done[j] = 2;
                b->consumed[cands[j].test] = 0;
            }
        }
        n->nbranch = ++d;
        if (n->child[d - 1] == NULL) {
            PyMem_Free(done);
            PyMem_Free(members);
            return -1;
        }
    }
    PyMem_Free(done);
    int w = 0;
    for (int i = 0; i < nent; i++) {                /* wildcards, newest first */
        int constrains = 0;
        for (int j = 0; j < c && !constrains; j++)
            constrains = cands[j].entry == ents[i];
        if (!constrains)
            members[w++] = ents[i];
    }
    if (w > 0 && (n->deflt = build_node(b, members, w, depth + 1)) == NULL) {
        PyMem_Free(members);
        return -1;
    }
    PyMem_Free(members);
    return 0;
}

/* Build the subtree of entries ents (ascending = newest first). */
static Node *
build_node(Build *b, const int *ents, int nent, int depth)
{
    Node *n = new_node(b);
    if (n == NULL)
        return NULL;
    n->newest = ents[0];
    Cand *cands = NULL;
    if (take_shared(b, n, ents, nent) < 0)
        goto error;
    int k = -1;
    if (nent > 1 && depth < GTREE_MAX_DEPTH) {
        cands = PyMem_Malloc((size_t)nent * sizeof(Cand));
        if (cands == NULL) {
            PyErr_NoMemory();
            goto error_shared;
        }
        if ((k = choose_key(b, ents, nent, cands)) == -2)
            goto error_shared;
    }
    if (k < 0) {
        if (make_leaf(b, n, ents, nent) < 0)
            goto error_shared;
    }
    else {
        int c = gather(b, k, ents, nent, cands);
        if (make_switch(b, n, k, ents, nent, cands, c, depth) < 0)
            goto error_shared;
    }
    PyMem_Free(cands);
    give_back_shared(b, n, ents, nent);
    /* Children may have sorted the sort_tree global; nothing else to undo. */
    return n;
error_shared:
    give_back_shared(b, n, ents, nent);
error:
    PyMem_Free(cands);
    free_node(n);
    return NULL;
}

/* Free a subtree (depth bounded by the build). */
static void
free_node(Node *n)
{
    if (n == NULL)
        return;
    for (int i = 0; i < n->nbranch; i++)
        free_node(n->child[i]);
    free_node(n->deflt);
    PyMem_Free(n->tests);
    PyMem_Free(n->bits);
    PyMem_Free(n->vals);
    PyMem_Free(n->child);
    PyMem_Free(n->leaf);
    PyMem_Free(n->leaf_off);
    PyMem_Free(n->leaf_tests);
    prog_free(&n->prog);
    for (int i = 0; n->leaf_progs != NULL && i < n->nleaf; i++)
        prog_free(&n->leaf_progs[i]);
    PyMem_Free(n->leaf_progs);
    PyMem_Free(n);
}

GTree *
gtree_build(const GtreeInput *in, Py_ssize_t n, GirRuntime *rt)
{
    Build b = {0};
    int *all = NULL;
    if (n > INT_MAX / 2) {
        PyErr_SetString(PyExc_OverflowError, "too many cache entries for one guard tree");
        return NULL;
    }
    GTree *t = PyMem_Calloc(1, sizeof(GTree));
    if (t == NULL) {
        PyErr_NoMemory();
        return NULL;
    }
    t->refs = 1;
    t->rt = rt;
    t->entries = PyMem_Calloc(n ? n : 1, sizeof(TEntry));
    if (t->entries == NULL) {
        PyErr_NoMemory();
        goto error;
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        t->entries[i] = (TEntry){.gs = gir_incref(in[i].guards),
                                 .payload = Py_NewRef(in[i].payload), .tag = in[i].tag};
        t->nentries++;
    }
    b.t = t;
    if ((b.src_memo = PyDict_New()) == NULL || (b.key_memo = PyDict_New()) == NULL
            || decompose_entries(&b) < 0)
        goto error;
    b.consumed = PyMem_Calloc(t->ntests ? t->ntests : 1, 1);
    all = PyMem_Malloc((n ? n : 1) * sizeof(int));
    if (b.consumed == NULL || all == NULL) {
        PyErr_NoMemory();
        goto error;
    }
    for (int i = 0; i < n; i++)
        all[i] = i;
    if (n > 0 && (t->root = build_node(&b, all, (int)n, 0)) == NULL)
        goto error;
    PyMem_Free(all);
    PyMem_Free(b.consumed);
    Py_DECREF(b.src_memo);
    Py_DECREF(b.key_memo);
    return t;
error:
    PyMem_Free(all);
    PyMem_Free(b.consumed);
    Py_XDECREF(b.src_memo);
    Py_XDECREF(b.key_memo);
    gtree_decref(t);
    return NULL;
}

void
gtree_decref(GTree *t)
{
    if (t == NULL || --t->refs > 0)
        return;
    if (t->bound)
        gtree_bound_alive--;
    free_node(t->root);
    PyMem_Free(t->tests);
    PyMem_Free(t->keys);
    PyMem_Free(t->sources);
    TEntry *entries = t->entries;
    int n = t->nentries;
    PyMem_Free(t);
    for (int i = 0; i < n; i++) {                   /* may run Python code: last */
        gir_free(entries[i].gs);
        Py_DECREF(entries[i].payload);
    }
    PyMem_Free(entries);
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

/* ---- Python views -------------------------------------------------------------- */

/* (source, property, expected) of test x. */
static PyObject *
test_info(const GTree *t, int x)
{
    const Test *test = &t->tests[x];
    return Py_BuildValue("(ONN)", t->sources[t->keys[test->key].src].spec,
                         property_text(t, test), expected_obj(t, test));
}

static PyObject *
test_list(const GTree *t, const int *xs, int n)
{
    PyObject *list = PyList_New(n);
    for (int i = 0; list != NULL && i < n; i++) {
        PyObject *item = test_info(t, xs[i]);
        if (item == NULL)
            Py_CLEAR(list);
        else
            PyList_SET_ITEM(list, i, item);
    }
    return list;
}

static PyObject *
node_info(const GTree *t, const Node *n)
{
    if (n == NULL)
        Py_RETURN_NONE;
    PyObject *d = Py_BuildValue("{s:N,s:K,s:K,s:i}", "tests", test_list(t, n->tests, n->ntests),
                                "evaluations", (unsigned long long)ctr_read(&n->ctr[0]),
                                "failures", (unsigned long long)ctr_read(&n->ctr[1]),
                                "newest", n->newest);
    if (d == NULL)
        return NULL;
    PyObject *sw = Py_None, *branches = NULL, *leaf = NULL, *deflt = NULL;
    if (n->key >= 0) {
        const Key *k = &t->keys[n->key];
        Test probe = {.key = n->key};
        sw = Py_BuildValue("(ON)", t->sources[k->src].spec, property_text(t, &probe));
        branches = PyList_New(0);
        for (int i = 0; sw != NULL && branches != NULL && i < n->nbranch; i++) {
            probe.bits = n->bits[i];
            probe.obj = n->vals[i];
            PyObject *item = Py_BuildValue("(NN)", expected_obj(t, &probe),
                                           node_info(t, n->child[i]));
            if (item == NULL || PyList_Append(branches, item) < 0)
                Py_CLEAR(branches);
            Py_XDECREF(item);
        }
        deflt = node_info(t, n->deflt);
    }
    else {
        Py_INCREF(sw);
        branches = PyList_New(0);
        deflt = Py_NewRef(Py_None);
        leaf = PyList_New(0);
        for (int j = 0; leaf != NULL && j < n->nleaf; j++) {
            PyObject *item = Py_BuildValue("(OiN)", t->entries[n->leaf[j]].payload, n->leaf[j],
                                           test_list(t, n->leaf_tests + n->leaf_off[j],
                                                     n->leaf_off[j + 1] - n->leaf_off[j]));
            if (item == NULL || PyList_Append(leaf, item) < 0)
                Py_CLEAR(leaf);
            Py_XDECREF(item);
        }
    }
    if (leaf == NULL)
        leaf = n->key >= 0 ? Py_NewRef(Py_None) : NULL;
    if (sw == NULL || branches == NULL || deflt == NULL || leaf == NULL
            || PyDict_SetItemString(d, "switch", sw) < 0
            || PyDict_SetItemString(d, "branches", branches) < 0
            || PyDict_SetItemString(d, "default", deflt) < 0
            || PyDict_SetItemString(d, "leaf", leaf) < 0)
        Py_CLEAR(d);
    Py_XDECREF(sw);
    Py_XDECREF(branches);
    Py_XDECREF(deflt);
    Py_XDECREF(leaf);
    return d;
}

PyObject *
gtree_info(const GTree *t)
{
    PyObject *payloads = PyList_New(t->nentries);
    for (int i = 0; payloads != NULL && i < t->nentries; i++)
        PyList_SET_ITEM(payloads, i, Py_NewRef(t->entries[i].payload));
    return Py_BuildValue("{s:N,s:i,s:N}", "entries", payloads, "nodes", t->nnodes,
                         "root", node_info(t, t->root));
}

PyObject *
gtree_stats(const GTree *t)
{
    return Py_BuildValue("{s:K,s:K,s:K,s:K,s:K,s:i,s:i,s:i}",
                         "last_visited", (unsigned long long)t->visited_last,
                         "visited_total", (unsigned long long)t->visited_total,
                         "lookups", (unsigned long long)t->lookups,
                         "hits", (unsigned long long)t->hits,
                         "misses", (unsigned long long)t->misses,
                         "nodes", t->nnodes, "entries", t->nentries, "tests", t->ntests);
}

PyObject *
gtree_missing(void)
{
    return missing_obj;
}

/* repr of the missing marker object. */
static PyObject *
missing_repr(PyObject *self)
{
    return PyUnicode_FromString("<missing>");
}

static PyTypeObject MissingType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "dynamo._C.MissingType",
    .tp_basicsize = sizeof(PyObject),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_repr = missing_repr,
    .tp_doc = "The `actual` value reported for a source that cannot be fetched.",
};

int
gtree_module_init(void)
{
    if (missing_obj != NULL)
        return 0;
    if (PyType_Ready(&MissingType) < 0)
        return -1;
    missing_obj = PyType_GenericNew(&MissingType, NULL, NULL);
    return missing_obj == NULL ? -1 : 0;
}

/* ---- live counters ---------------------------------------------------------- */

/* Point the counters of n's subtree, depth-first from index *i, at
 * slots (u64 pairs), carrying their counts over. */
static void
bind_node(Node *n, uint64_t *slots, size_t npairs, size_t *i)
{
    if (n == NULL)
        return;
    size_t k = (*i)++;
    if (k < npairs) {
        uint64_t *to = &slots[2 * k];
        __atomic_store_n(&to[0], ctr_read(&n->ctr[0]), __ATOMIC_RELAXED);
        __atomic_store_n(&to[1], ctr_read(&n->ctr[1]), __ATOMIC_RELAXED);
        n->ctr = to;
    }
    if (n->key >= 0) {
        for (int b = 0; b < n->nbranch; b++)
            bind_node(n->child[b], slots, npairs, i);
        bind_node(n->deflt, slots, npairs, i);
    }
}

int
gtree_bind_counters(GTree *t, uint64_t *slots, size_t npairs)
{
    if (t == NULL || slots == NULL || npairs != (size_t)t->nnodes)
        return 0;
    size_t i = 0;
    bind_node(t->root, slots, npairs, &i);
    if (!t->bound) {
        t->bound = 1;
        gtree_bound_alive++;
    }
    return 1;
}
