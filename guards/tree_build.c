/* guards/tree_build.c — building a guard tree from the cache entries'
 * GirSets: decomposition into tests, shared tests, the switch key choice,
 * switches with default branches, leaves, the compiled test lists (Prog)
 * of the walk, and freeing a tree.  Runs once per cache change, never per
 * call: it may allocate and call Python (hashes of switch values).  The
 * design is in tree.c's opening comment and ARCHITECTURE.md.
 */
#include "tree_int.h"   /* the tree's types; tree.h */

#include <string.h>     /* memset */

/* ---- build ----------------------------------------------------------------- */

/* Build state. */
typedef struct {
    GTree *t;               /* under construction */
    PyObject *src_memo;     /* strong: dict source tuple -> tree source */
    PyObject *key_memo;     /* strong: dict packed key -> key index */
    PyObject *shape_memo;   /* strong: dict program tuple -> GTree.shapes index */
    int cap_sources, cap_keys, cap_tests, cap_shapes;
    char *consumed;         /* owned: per test, consumed on the current path */
} Build;

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

/* Index in GTree.shapes of SHAPE_GUARD program sh (map: tree source of
 * each source of the entry's set), added when new; -1 on error. */
static int
shape_of(Build *b, const GirShape *sh, const int *map)
{
    PyObject *known = PyDict_GetItemWithError(b->shape_memo, sh->spec);
    if (known != NULL)
        return (int)PyLong_AsLong(known);
    if (PyErr_Occurred())
        return -1;
    GTree *t = b->t;
    if (grow((void **)&t->shapes, &b->cap_shapes, t->nshapes + 1, sizeof(TShape)) < 0)
        return -1;
    GirShapeStep *steps = PyMem_Malloc((size_t)sh->n * sizeof(GirShapeStep));
    if (steps == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    for (int i = 0; i < sh->n; i++) {
        steps[i] = sh->steps[i];
        if (steps[i].source >= 0)
            steps[i].source = map[steps[i].source];
    }
    t->shapes[t->nshapes] = (TShape){.n = sh->n, .steps = steps};
    PyObject *boxed = PyLong_FromLong(t->nshapes++);    /* owned by the tree from here */
    if (boxed == NULL || PyDict_SetItem(b->shape_memo, sh->spec, boxed) < 0) {
        Py_XDECREF(boxed);
        return -1;
    }
    Py_DECREF(boxed);
    return t->nshapes - 1;
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
    else if (prop == P_KEYS || prop == P_BACKEND || prop == P_SHAPE)
        x->switchable = 0;      /* BACKEND: key 0 (RUN mode) matches every branch */
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
    case GIR_BACKEND_MATCH:
        return add_test(b, entry, g, src, P_BACKEND, 0, (int64_t)c->n, NULL);
    case GIR_DICT_KEYS: {
        PyObject *type = (PyObject *)(c->n ? &PyODict_Type : &PyDict_Type);
        if (add_test(b, entry, g, src, P_TYPE, 0, ptr_bits(type), type) < 0)
            return -1;
        return add_test(b, entry, g, src, P_KEYS, 0, 0, c->obj);
    }
    case GIR_NONE_MATCH:
        return add_test(b, entry, g, src, P_NONE, 0, c->n != 0, NULL);
    case GIR_SAME_OBJECT:                           /* key dim: the other source */
        return add_test(b, entry, g, src, P_SAME, map[c->n], c->obj == Py_True, NULL);
    case GIR_STORAGE_MATCH:                         /* key dim: the other source */
        return add_test(b, entry, g, src, P_STORAGE, map[c->n], c->obj == Py_True, NULL);
    case GIR_SHAPE_GUARD: {                         /* key dim: the relation */
        int shape = shape_of(b, c->shape, map);
        return shape < 0 ? -1 : add_test(b, entry, g, src, P_SHAPE, shape, 1, c->obj);
    }
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
    if (is_scalar_prop(prop) || prop == P_SHAPE)    /* SHAPE: one key, one program */
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
                *same = (Op){.kind = OP_SAME, .slot = i};
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
            *o = (Op){.kind = OP_TENSOR, .src = x->src, .slot = -1};
        }
        int folded = o != NULL ? fold_tensor_test(o, x, n) : 0;
        if (folded < 0)
            return -1;
        if (!folded)
            p->ops[p->n++] = (Op){.kind = OP_TEST, .src = x->src, .test = x, .slot = i};
        else if (o->slot < 0)                       /* opened by this test? */
            o->slot = i;
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
        n->switch_slot = -1;
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

/* ---- test slots -------------------------------------------------------------- */

/* Slots of node n's own tests: shared, switch, leaf. */
static int
own_slots(const Node *n)
{
    return n->ntests + (n->key >= 0 ? 1 : n->leaf_off != NULL ? n->leaf_off[n->nleaf] : 0);
}

static int
count_slots(const Node *n)
{
    if (n == NULL)
        return 0;
    int total = own_slots(n);
    for (int b = 0; n->key >= 0 && b < n->nbranch; b++)
        total += count_slots(n->child[b]);
    return total + (n->key >= 0 ? count_slots(n->deflt) : 0);
}

/* Give prog p's ops the slots from `base` on (prog_compile numbered them
 * from 0 in its test list), the list being xs[0 .. n). */
static void
number_prog(GTree *t, Prog *p, const int *xs, int n, int node)
{
    int base = t->nslots;
    for (int i = 0; i < p->n; i++)
        p->ops[i].slot += base;
    for (int i = 0; i < n; i++) {
        t->slot_test[base + i] = xs[i];
        t->slot_node[base + i] = node;
    }
    t->nslots += n;
}

/* Number the slots of n's subtree in gtree_visit's order (*node: the
 * depth-first index of n). */
static void
number_node(GTree *t, Node *n, int *node)
{
    if (n == NULL)
        return;
    int me = (*node)++;
    number_prog(t, &n->prog, n->tests, n->ntests, me);
    if (n->key >= 0) {
        n->switch_slot = t->nslots++;
        t->slot_test[n->switch_slot] = -1 - n->key;
        t->slot_node[n->switch_slot] = me;
        for (int b = 0; b < n->nbranch; b++)
            number_node(t, n->child[b], node);
        number_node(t, n->deflt, node);
        return;
    }
    for (int j = 0; j < n->nleaf; j++)
        number_prog(t, &n->leaf_progs[j], n->leaf_tests + n->leaf_off[j],
                    n->leaf_off[j + 1] - n->leaf_off[j], me);
}

/* The test slots of t and their counters (zero).  0 or -1 (no memory). */
static int
number_slots(GTree *t)
{
    int total = count_slots(t->root), node = 0;
    t->slot_test = PyMem_Malloc((size_t)(total ? total : 1) * sizeof(int));
    t->slot_node = PyMem_Malloc((size_t)(total ? total : 1) * sizeof(int));
    t->own_slot_ctr = PyMem_Calloc((size_t)(total ? total : 1) * GTREE_SLOT_COUNTERS,
                                   sizeof(uint64_t));
    if (t->slot_test == NULL || t->slot_node == NULL || t->own_slot_ctr == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    t->slot_ctr = t->own_slot_ctr;
    t->nslots = 0;
    number_node(t, t->root, &node);
    return 0;
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
            || (b.shape_memo = PyDict_New()) == NULL || decompose_entries(&b) < 0)
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
    if (number_slots(t) < 0)
        goto error;
    PyMem_Free(all);
    PyMem_Free(b.consumed);
    Py_DECREF(b.src_memo);
    Py_DECREF(b.key_memo);
    Py_DECREF(b.shape_memo);
    return t;
error:
    PyMem_Free(all);
    PyMem_Free(b.consumed);
    Py_XDECREF(b.src_memo);
    Py_XDECREF(b.key_memo);
    Py_XDECREF(b.shape_memo);
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
    PyMem_Free(t->slot_test);
    PyMem_Free(t->slot_node);
    PyMem_Free(t->own_slot_ctr);
    PyMem_Free(t->tests);
    PyMem_Free(t->keys);
    PyMem_Free(t->sources);
    for (int i = 0; i < t->nshapes; i++)
        PyMem_Free(t->shapes[i].steps);
    PyMem_Free(t->shapes);
    TEntry *entries = t->entries;
    int n = t->nentries;
    PyMem_Free(t);
    for (int i = 0; i < n; i++) {                   /* may run Python code: last */
        gir_free(entries[i].gs);
        Py_DECREF(entries[i].payload);
    }
    PyMem_Free(entries);
}
