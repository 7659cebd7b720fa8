/* guards/tree_int.h — the guard tree's private types, shared by its three
 * files: tree.c (the per-call walk, lookup and miss report), tree_build.c
 * (decompose ... gtree_build) and tree_py.c (the Python views and the
 * live counters).  guards/tree.h stays the only public face: nothing
 * outside guards/tree*.c includes this file.
 *
 * The functions declared at the end are each defined in one of the three
 * files and used by another; they are not part of tree.h (hidden by
 * -fvisibility=hidden like every symbol of _C).
 */
#ifndef DYNAMO_GUARDS_TREE_INT_H
#define DYNAMO_GUARDS_TREE_INT_H

#include "tree.h"

#include <stddef.h>     /* offsetof */

/* Deepest node chain; deeper parts become leaves (bounds the recursion). */
#define GTREE_MAX_DEPTH 512

/* Branch hints for the per-call walk (GCC/Clang). */
#define LIKELY(x) __builtin_expect(!!(x), 1)
#define UNLIKELY(x) __builtin_expect(!!(x), 0)

/* ---- tests ------------------------------------------------------------------ */

/* Properties, in evaluation-cost order (shared and leaf tests run in this
 * order: TYPE first, so dependent properties see the expected type). */
typedef enum {
    P_TYPE, P_ID, P_NONE, P_GRAD, P_GSTATE, P_BACKEND, P_SAME, P_LEN, P_DTYPE, P_DEVICE, P_REQGRAD, P_DKEYS,
    P_NDIM, P_SIZE, P_STRIDE, P_STORAGE, P_VALUE, P_KEYS,
    P_SHAPE,            /* a SHAPE_GUARD relation (dim: its GTree.shapes index) */
    NPROPS
} Prop;

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
    int dim;            /* SIZE/STRIDE dimension; SAME, STORAGE: the other tree
                           source; SHAPE: the relation (GTree.shapes); else 0 */
} Key;

/* A SHAPE_GUARD program with tree sources: one per distinct program tuple
 * in the tree (entries guarding the same relation share it and its key). */
typedef struct {
    int n;
    GirShapeStep *steps;    /* owned: GirSet steps, `source` mapped to tree sources */
} TShape;

typedef struct {
    int key;            /* index into GTree.keys */
    int src, prop, dim; /* copy of keys[key]: the walk reads the test alone */
    int entry;          /* owning entry (0 = newest) */
    int guard;          /* index of the guard in the entry's list */
    int switchable;     /* `bits` may route a switch */
    int64_t bits;       /* int64 properties: the value; VALUE: its hash */
    PyObject *obj;      /* borrowed from the entry's GirSet: expected object
                           of TYPE, ID, VALUE, KEYS, DTYPE, DEVICE; SHAPE's
                           relation text; or NULL */
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
    int slot;               /* the test slot a timed walk charges this op's time to
                               (GTree.slot_ctr): the slot of the test that opened
                               the op (folded tests' slots stay at 0) */
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
    int switch_slot;        /* the test slot of the switch (key >= 0), else -1 */
    /* GTREE_NODE_COUNTERS (tree.h): ctr[0] walks that entered the node,
     * ctr[1] walks that found no candidate below, counts; ctr[2] timed
     * walks that entered it, count, ctr[3] their time in its own tests, ns.
     * ctr is own_ctr, or the telemetry region's live counters
     * (gtree_bind_counters). */
    uint64_t *ctr;
    uint64_t own_ctr[GTREE_NODE_COUNTERS];
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
    int nshapes;
    TShape *shapes;         /* owned: the SHAPE tests' programs */
    Node *root;             /* owned, or NULL (no entries) */
    int nnodes;
    uint64_t lookups, hits, misses;     /* counts */
    uint64_t visited_last;  /* nodes entered by the last lookup */
    uint64_t visited_total; /* nodes entered by all lookups */
    uint64_t timed;         /* lookups timed (gtree_lookup_timed), count */
    uint64_t timed_ns;      /* their walks' cumulative time, ns */
    int bound;              /* node counters live in the telemetry region (counted in gtree_bound_alive) */
    /* Test slots: every test a walk runs (each node's shared tests, its
     * switch, each leaf entry's tests), numbered in gtree_visit's node
     * order: a node's shared tests, then its switch, then its leaf tests
     * entry by entry.  slot_test[s] is the test's index in `tests`, or
     * -1 - key for a switch.  slot_ctr holds GTREE_SLOT_COUNTERS u64 per
     * slot (timed, timed_ns): own_slot_ctr, or the telemetry region's
     * (gtree_bind_counters); only timed walks touch them. */
    int nslots;
    int *slot_test;         /* owned */
    int *slot_node;         /* owned: the depth-first index of each slot's node */
    uint64_t *slot_ctr;
    uint64_t *own_slot_ctr; /* owned */
};

_Static_assert(offsetof(struct GTree, refs) == 0, "refs must come first (tree.h)");

/* ---- shared between the three files ------------------------------------------ */

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

static inline int64_t
device_bits(int32_t type, int32_t index)
{
    return ((int64_t)type << 32) | (uint32_t)index;
}

/* Node counters may live in the shared telemetry region, read by other
 * processes: whole-word relaxed stores, as the hook's other counters. */
static inline void
ctr_bump(uint64_t *c)
{
    __atomic_store_n(c, __atomic_load_n(c, __ATOMIC_RELAXED) + 1, __ATOMIC_RELAXED);
}

static inline void
ctr_add(uint64_t *c, uint64_t v)
{
    __atomic_store_n(c, __atomic_load_n(c, __ATOMIC_RELAXED) + v, __ATOMIC_RELAXED);
}

static inline uint64_t
ctr_read(const uint64_t *c)
{
    return __atomic_load_n(c, __ATOMIC_RELAXED);
}

/* tree.c: the name of each Prop ("size()" for SIZE: the miss report adds
 * "[dim]"), exported as _C.TREE_PROPERTIES. */
extern const char *const prop_names[NPROPS];

/* tree.c: the reported `actual` of a missing source, and the reported
 * `expected` of an ID test whose object died (strong; gtree_module_init). */
extern PyObject *missing_obj;
extern PyObject *dead_obj;

/* tree.c: v equals the expected simple constant e (same type, floats bit
 * for bit).  -1 error, 0 fail, 1 pass. */
int value_match(PyObject *v, PyObject *e);

/* tree.c: expected value of test t (t->entry names the entry whose set
 * holds t->obj: an ID test's object is reported only while that set is
 * not dead), and "size()[0]", "dtype", ... for it; new references, or NULL
 * with an exception. */
PyObject *expected_obj(const GTree *tr, const Test *t);
PyObject *property_text(const GTree *tr, const Test *t);

/* tree.c: a constant whose hash and value_match agree (switchable VALUE). */
int is_simple_constant(PyObject *o, int depth);

#endif /* DYNAMO_GUARDS_TREE_INT_H */
