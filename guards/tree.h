/* guards/tree.h — one guard decision tree per code object.
 *
 * Owns: the decomposition of the compiled guards (GirSet) of every cache
 * entry of one code object into (source, property, expected value) tests,
 * the decision tree built from them, its evaluation against a frame (the
 * hot path of every call), the closest-entry report on a miss, the per-node
 * counters, and the Python views of all that (tree_info).  It must not know
 * about caches, frames or modes: entries come in as (guards, payload, tag)
 * triples and the caller maps a hit back to its own entry by `tag`.
 *
 * Flat semantics are the contract: the entry chosen is exactly the one the
 * newest-first walk over the entries' guard lists would choose.
 */
#ifndef DYNAMO_GUARDS_TREE_H
#define DYNAMO_GUARDS_TREE_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>     /* PyObject, Py_ssize_t */
#include <stdint.h>     /* uint64_t */
#include "ir.h"         /* GirSet, GirRuntime */

/* The frame as the guards see it. */
typedef struct {
    PyObject *const *locals;    /* borrowed: argument slots */
    Py_ssize_t nlocals;         /* valid slots in locals */
    PyObject *globals;          /* borrowed: dict */
    PyObject *builtins;         /* borrowed: dict */
    PyObject *closure;          /* borrowed: tuple of cells, or NULL */
    const uint64_t *generation; /* borrowed, or NULL: the walk stops (result
                                   GTREE_ABORTED) as soon as *generation !=
                                   generation0, i.e. when Python code run by
                                   a check dropped cache entries */
    uint64_t generation0;
    int64_t backend;            /* the caller's backend key (BACKEND_MATCH
                                   tests pass when it is the expected key or
                                   0: "any", RUN mode) */
} GevalFrame;

/* One entry handed to gtree_build, newest first. */
typedef struct {
    GirSet *guards;             /* borrowed; the tree takes its own reference */
    PyObject *payload;          /* borrowed; the tree takes a strong reference */
    void *tag;                  /* opaque to the tree (the caller's entry) */
} GtreeInput;

typedef struct GTree GTree;

/* Results of gtree_lookup besides a hit index (>= 0). */
#define GTREE_MISS     (-1)
#define GTREE_ERROR    (-2)     /* an exception is set */
#define GTREE_ABORTED  (-3)     /* the caller's generation changed mid-walk */

/* Build the tree of n entries (in[0] is the newest).  Takes references on
 * every GirSet and payload.  rt is borrowed and must outlive the tree.
 * Returns a tree with one reference, or NULL with an exception.  May run
 * Python code only for == of simple constants (no user code). */
GTree *gtree_build(const GtreeInput *in, Py_ssize_t n, GirRuntime *rt);

static inline GTree *gtree_incref(GTree *t);
/* Drop a reference; the last one frees the tree (dropping its references
 * on GirSets and payloads, which may run Python code).  NULL accepted. */
void gtree_decref(GTree *t);

/* Evaluate the tree against fr.  Returns the index (as given to
 * gtree_build) of the newest entry whose guards all pass, GTREE_MISS,
 * GTREE_ERROR (exception set: a check raised something other than "value
 * missing"), or GTREE_ABORTED.  On GTREE_MISS, when failures is not NULL,
 * *failures is a new list (see ARCHITECTURE.md, contract 1, "failures"):
 * the closest entry's (payload, guard_index, property, expected, actual)
 * first, then (payload, guard_index) of each other live entry, newest first.
 * A hit allocates nothing and, for the kinds listed in ARCHITECTURE.md,
 * calls no Python code. */
Py_ssize_t gtree_lookup(GTree *t, const GevalFrame *fr, PyObject **failures);

/* gtree_lookup, timed: *ns is the walk's time (CLOCK_MONOTONIC, ns; the
 * miss report excluded), and every node it enters adds its own tests' time
 * to its timed/timed_ns counters.  For 1 of every N lookups (the caller
 * samples): it reads the clock four times per node.  Same results,
 * allocations and errors as gtree_lookup. */
Py_ssize_t gtree_lookup_timed(GTree *t, const GevalFrame *fr, PyObject **failures,
                              uint64_t *ns);

/* Flat evaluation of entry i alone, in its guards' order (eval_guards):
 * -1 when every guard passes, the index of the first failing guard, or -2
 * with an exception. */
Py_ssize_t gtree_first_failure(GTree *t, Py_ssize_t i, const GevalFrame *fr);

/* Number of entries, and the tag / payload (borrowed) of entry i. */
Py_ssize_t gtree_size(const GTree *t);
void *gtree_tag(const GTree *t, Py_ssize_t i);
PyObject *gtree_payload(const GTree *t, Py_ssize_t i);

/* Counters per node (TREE_NODE_COUNTERS, in this order): evaluations
 * (walks that entered it), failures (walks that found no candidate below
 * it), timed (sampled walks that entered it: gtree_lookup_timed) and
 * timed_ns (their time spent in the node's own tests, children excluded,
 * ns).  inspect/layout.h's DT_TREE_NODE_COUNTERS is pinned to it. */
#define GTREE_NODE_COUNTERS 4

/* Counters per test slot (a test a walk runs: see gtree_slots), in this
 * order: timed (timed walks that ran it, count), timed_ns (their time in
 * it, ns: the test and the first fetch of its source, with the bases not
 * fetched before it), max_ns (the longest of those runs, ns: a run the
 * scheduler preempted shows there, and readers leave it out of their
 * estimate).  inspect/layout.h's DT_TREE_SLOT_COUNTERS is pinned to it. */
#define GTREE_SLOT_COUNTERS 3

/* Keep t's counters in `words` from now on: first GTREE_NODE_COUNTERS u64
 * per node in depth-first order (root, then each branch in switch order,
 * then the default), as gtree_info lists them, then GTREE_SLOT_COUNTERS
 * u64 per test slot in gtree_slots' order; their current counts are
 * copied there first.  For the telemetry region, which must outlive t.
 * Returns 1, or 0 (nothing bound) when nwords is not
 * gtree_counter_words(t). */
int gtree_bind_counters(GTree *t, uint64_t *words, size_t nwords);

/* The u64 words of t's counters (gtree_bind_counters' layout). */
size_t gtree_counter_words(const GTree *t);

/* New list of t's test slots, the tests a walk runs, in slot order (a
 * node's shared tests, then its switch, then its leaf entries' tests, node
 * by node in gtree_visit's order): (node, test, entry, guard, timed,
 * timed_ns, max_ns) with node its depth-first index, test (source, property,
 * expected) or for a switch (source, property), entry and guard the
 * test's entry index and its guard's index in that entry's list (-1, -1
 * for a switch), then its GTREE_SLOT_COUNTERS (timed, timed_ns, max_ns).  NULL with an
 * exception. */
PyObject *gtree_slots(const GTree *t);

/* Add TREE_PROPERTIES (the property names a miss report and tree_info
 * use, in evaluation-cost order), TREE_PROPERTY_FORMS (name -> the
 * str.format pattern gtree_property_text fills) and TREE_NODE_COUNTERS (the names of a
 * node's two counters, in the order of their u64 pair) to the module.
 * 0, or -1 with an exception. */
int gtree_add_vocabulary(PyObject *module);

/* Trees alive whose counters were bound (gtree_bind_counters), count:
 * telemetry reclaims its region on reset() only when none is left. */
extern Py_ssize_t gtree_bound_alive;

/* New nested dict describing the tree (nodes, tests, switches, counters,
 * leaves with payloads), or NULL with an exception. */
PyObject *gtree_info(const GTree *t);

/* One node of a tree as gtree_visit shows it; every object is borrowed
 * for the duration of the visit. */
typedef struct {
    int index;                  /* depth-first position (root 0): gtree_bind_counters' order */
    int parent;                 /* the parent's index, -1 for the root */
    int depth;                  /* 0 for the root */
    int via_default;            /* reached through the parent's default branch */
    PyObject *via;              /* the parent's switch value leading here, or NULL
                                   (the root, or a default branch) */
    PyObject *tests;            /* list of (source, property, expected): the shared tests */
    PyObject *switch_on;        /* (source, property) the node switches on, or NULL at a leaf */
    PyObject *leaf;             /* list of (payload, entry index, tests), or NULL */
    uint64_t counters[GTREE_NODE_COUNTERS]; /* TREE_NODE_COUNTERS, in that order */
    int newest;                 /* lowest entry index in the subtree */
} GtreeNodeView;

/* Called once per node; nonzero stops the walk (-1: with an exception). */
typedef int (*GtreeVisitor)(void *ctx, const GtreeNodeView *node);

/* Show every node of t to visit, depth-first (root, each branch in switch
 * order, then the default): the order of gtree_bind_counters and
 * gtree_info.  Builds nothing and reads no frame.  Returns 0, visit's first
 * nonzero result, or -1 with an exception (allocation). */
int gtree_visit(const GTree *t, GtreeVisitor visit, void *ctx);

/* The text a user reads for property `prop` (one of TREE_PROPERTIES, with
 * "[dim]" after "size()" and "stride()") of the source written `src`:
 * ("L['a']", "size()[0]") -> "L['a'].size()[0]", ("L['f']", "id") ->
 * "id(L['f'])".  New str, or NULL with an exception. */
PyObject *gtree_property_text(PyObject *src, PyObject *prop);

/* New dict of lookup statistics: nodes visited on the last lookup, totals,
 * timed lookups and their cumulative ns. */
PyObject *gtree_stats(const GTree *t);

/* The object reported as `actual` for a source that cannot be fetched
 * (borrowed; created by gtree_module_init). */
PyObject *gtree_missing(void);

/* Once at module init.  0, or -1 with an exception. */
int gtree_module_init(void);

/* ---- inline --------------------------------------------------------------- */

struct GTreeHead { Py_ssize_t refs; };  /* first member of struct GTree */

static inline GTree *
gtree_incref(GTree *t)
{
    ((struct GTreeHead *)t)->refs++;
    return t;
}

#endif /* DYNAMO_GUARDS_TREE_H */
