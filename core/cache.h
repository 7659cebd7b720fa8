/* core/cache.h — the per-code cache kept in co_extra.
 *
 * Owns: cache entries (new code, compiled guards, payload) per code object,
 * newest first; the skip mark; the list of every code object the module has
 * touched, so reset() can clear them all; the guard tree of each cache
 * (built lazily from the entries, dropped when they change).  It must not evaluate guards or
 * run frames (core/hook.c does), and it never holds a strong reference to
 * the code object a cache belongs to (the cache dies with the code).
 */
#ifndef DYNAMO_CORE_CACHE_H
#define DYNAMO_CORE_CACHE_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>     /* PyObject, PyCodeObject */
#include "ir.h"         /* GirSet */
#include "tree.h"       /* GTree: the lookup structure of a cache */
#include "../inspect/layout.h"  /* DtCode, DtEntry: telemetry slots */

/* One compiled version of a code object.  Reference counted in C because a
 * lookup may run Python code (guard checks) that clears the cache while the
 * lookup still walks the chain: a lookup holds a reference on the entry it
 * is looking at, and every entry holds one on its `next`. */
/* A hit that needs no frame: the entry's code does nothing but call `fn`
 * with some argument slots and return one item of the result (docs/
 * ARCHITECTURE.md, "Direct calls").  Built by core/hook.c from the
 * callback's plan; owned by its entry. */
#define DIRECT_MAX_ARGS 32
typedef struct {
    PyObject *fn;               /* strong: the compiled graph */
    PyObject *func, *self;      /* strong: fn's function and self when fn is a
                                   bound method, else fn and NULL */
    int nargs;                  /* 0 .. DIRECT_MAX_ARGS */
    int slots[DIRECT_MAX_ARGS]; /* argument slots passed, in order */
    Py_ssize_t index;           /* item of fn's result returned */
    int line;                   /* traceback line of the call in the entry's code */
} DirectCall;

typedef struct CacheEntry {
    struct CacheEntry *next;    /* owned reference: next older entry, or NULL */
    Py_ssize_t refs;            /* C references: chain link + lookups */
    PyObject *code;             /* strong: the code to run on a hit */
    PyObject *payload;          /* strong: opaque to C, returned by cache_entries */
    GirSet *guards;             /* owned */
    DirectCall *direct;         /* owned (PyMem), or NULL: run `code` in a shadow frame */
    DtEntry *tele;              /* borrowed: telemetry slot (shared region), or NULL */
    uint64_t hits;              /* lookups that picked this entry, count (not the
                                   call that compiled it) */
} CacheEntry;

/* How many argument-type signatures of eager calls a code remembers. */
#define CACHE_EAGER_SIGS 4

/* Calls the callback found nothing of torch in (convert_frame.
 * frame_may_use_torch False) and that a later call may be told apart from
 * by cheap tests only.  Being wrong costs a compile that does not happen,
 * never a wrong result: the frame runs as it would without dynamo. */
typedef struct {
    PyObject *types;            /* strong: tuple, the exact type of each
                                   argument slot; NULL = unused */
    const void *closure;        /* identity only, never dereferenced: the
                                   function's __closure__ tuple, or NULL */
} EagerSig;

/* The co_extra record of one code object. */
typedef struct CodeCache {
    CacheEntry *entries;        /* owned reference: newest first, or NULL */
    int skip;                   /* always run the default evaluator: SKIP_FRAME, or
                                   SKIP_RECURSIVE (with the thread mode OFF, so
                                   nothing the frame calls is looked up either:
                                   torch.compiler.disable's wrapper) */
    /* filled from [0], types NULL after the last (cache_remember_eager):
     * a miss that matches one runs the default evaluator without asking */
    EagerSig eager_sigs[CACHE_EAGER_SIGS];
    GTree *tree;                /* owned reference: tree of `entries`, or NULL (stale) */
    uint64_t dead_epoch;        /* gir_dead_epoch when dead entries were last pruned */
    uint64_t rebuilds;          /* trees built for this code, count */
    PyObject *code;             /* borrowed: the owner (cache dies with it) */
    DtCode *tele;               /* borrowed: telemetry slot (shared region), or NULL */
    DtEntry *tele_pending;      /* borrowed: slot published for the next cache_push, or NULL */
    struct CodeCache *prev;     /* touched list, borrowed links */
    struct CodeCache *next;
    uint32_t timing_tick;       /* lookups since this code's last timed one, count
                                   (guard cost sampling: core/hook.c timing_due) */
} CodeCache;

/* Bumped whenever entries are dropped (clear, reset): a lookup that ran
 * Python code compares it to know its chain is still the live one. */
extern uint64_t cache_generation;

/* Bumped by each cache_reset_all (dynamo.reset()): a compile that saw it
 * change while it ran was made for globals reset() has taken back, and
 * must not become an entry (issue 29). */
extern uint64_t cache_resets;

/* The co_extra index reserved by cache_init (-1 before): core/hook.c reads
 * the slot in place on the per-call path. */
extern Py_ssize_t cache_extra_index;

/* Reserve the co_extra index.  Call once at module init; 0 or -1. */
int cache_init(void);

/* The cache of code, or NULL when it has none (no error). */
CodeCache *cache_get(PyObject *code /* borrowed */);

/* The cache of code, created and registered when missing; NULL on error. */
CodeCache *cache_ensure(PyObject *code /* borrowed */);

/* Add a new entry at the front.  new_code and payload are borrowed (new
 * references taken); guards and direct (NULL allowed) are consumed (freed
 * on error too).  The entry
 * takes cache->tele_pending as its telemetry slot.  0 or -1. */
int cache_push(CodeCache *cache, PyObject *new_code, GirSet *guards, PyObject *payload,
               DirectCall *direct);

/* Free a DirectCall (NULL allowed). */
void cache_direct_free(DirectCall *d);

/* Take / drop a C reference on an entry (NULL allowed for decref).
 * Dropping the last reference frees the entry and walks down its chain. */
static inline CacheEntry *
cache_entry_incref(CacheEntry *e)
{
    e->refs++;
    return e;
}
void cache_entry_decref(CacheEntry *e);

/* The guard tree of cache's entries, as a new reference: rebuilt when
 * entries were added, and after pruning entries whose guarded objects died
 * (which bumps cache_generation).  NULL with an exception when the build
 * failed, or NULL without one when the cache has no entries left. */
GTree *cache_tree(CodeCache *cache, GirRuntime *rt /* borrowed */);

/* Drop all entries of one code object (its skip mark stays). */
void cache_clear(PyObject *code /* borrowed */);

/* Drop the entries of code that no lookup has picked yet (hits == 0): the
 * cache-limit policy of dynamo/eval_frame.py.  New list of their payloads,
 * newest first (empty when none or code has no cache), or NULL with an
 * exception (the entries unlinked until then are dropped all the same). */
PyObject *cache_drop_unused(PyObject *code /* borrowed */);

/* Drop every entry, skip mark and eager signature the module ever set. */
void cache_reset_all(void);

/* Remember (types, closure) as a signature of calls of code that need no
 * compile: types (borrowed) a tuple of types, one per argument slot;
 * closure the function's __closure__ (borrowed, NULL allowed), kept by
 * identity only.  1 if recorded, 0 when known already or when
 * CACHE_EAGER_SIGS are taken; -1 on error. */
int cache_remember_eager(PyObject *code /* borrowed */, PyObject *types /* borrowed */,
                         PyObject *closure /* borrowed */);

/* Does a call with argument slots args[0 .. nargs) (borrowed) of a
 * function whose __closure__ is closure (borrowed) match one of c's eager
 * signatures: the same closure object, the exact type of every slot?  No
 * allocation, no Python code: the hook asks this on a miss before calling
 * back. */
static inline int
cache_eager_match(const CodeCache *c, PyObject *const *args, Py_ssize_t nargs,
                  const PyObject *closure)
{
    for (int i = 0; i < CACHE_EAGER_SIGS && c->eager_sigs[i].types != NULL; i++) {
        PyObject *sig = c->eager_sigs[i].types;
        if (PyTuple_GET_SIZE(sig) != nargs || c->eager_sigs[i].closure != closure)
            continue;
        Py_ssize_t k = 0;
        while (k < nargs && args[k] != NULL
               && (PyObject *)Py_TYPE(args[k]) == PyTuple_GET_ITEM(sig, k))
            k++;
        if (k == nargs)         /* every slot's type matched? */
            return 1;
    }
    return 0;
}

/* New list of the payloads of code's entries, newest first. */
PyObject *cache_payloads(PyObject *code /* borrowed */);

/* New list, one item per live entry newest first: its direct plan
 * (fn, slots, index, line), or None when hits run its code in a shadow
 * frame.  NULL on error. */
PyObject *cache_directs(PyObject *code /* borrowed */);

/* Values of CodeCache.skip besides 0. */
enum { SKIP_FRAME = 1, SKIP_RECURSIVE = 2 };

/* Who is told when a telemetry slot hanging off a cache changes: the
 * telemetry writer (core/telemetry.c) sets it at init.  cache.c calls no
 * function of the writer, so the two files depend one way (telemetry.c
 * reads caches); each callback runs under the GIL, only for a slot that is
 * not NULL, and must not fail or run Python code. */
typedef struct {
    void (*entry_attached)(DtEntry *slot);  /* cache_push gave an entry this slot */
    void (*entry_dead)(DtEntry *slot);      /* the entry holding it was freed */
    void (*code_dead)(CodeCache *cache);    /* its code object is being freed */
    void (*tree_built)(CodeCache *cache);   /* its guard tree was rebuilt (not published) */
} CacheWatcher;

/* Set the watcher (static storage, borrowed; NULL: none). */
void cache_set_watcher(const CacheWatcher *w);

#endif /* DYNAMO_CORE_CACHE_H */
