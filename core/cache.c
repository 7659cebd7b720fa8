/* core/cache.c — per-code caches in co_extra and the list of touched codes.
 *
 * Owns: allocation and release of CodeCache / CacheEntry, and the
 * doubly-linked list of every CodeCache alive (so reset() reaches them
 * without keeping code objects alive).  The interpreter calls free_extra
 * when a code object dies.  It must not call guards or run frames, nor
 * the telemetry writer: a slot's changes go to the CacheWatcher it set.
 */
#include "cache.h"
#include "pyversion.h"  /* dyn_request_code_extra_index, dyn_code_get/set_extra */
#include "breakprobe.h" /* bprobe_bind_code: a break's counters follow the entry's slot */

/* co_extra slot reserved at init; -1 until then. */
Py_ssize_t cache_extra_index = -1;
#define extra_index cache_extra_index

uint64_t cache_generation;
uint64_t cache_resets;

/* Every CodeCache alive, newest first (borrowed links). */
static CodeCache *touched;

/* Told of slot changes (the telemetry writer), or NULL; static storage. */
static const CacheWatcher *watcher;

void
cache_set_watcher(const CacheWatcher *w)
{
    watcher = w;
}

void
cache_entry_decref(CacheEntry *e)
{
    /* Iterative: freeing an entry drops its reference on the next one. */
    while (e != NULL && --e->refs == 0) {
        CacheEntry *next = e->next;
        if (e->tele != NULL) {
            bprobe_bind_code(e->code, NULL);    /* the slot may be reclaimed after this */
            if (watcher != NULL)
                watcher->entry_dead(e->tele);
        }
        gir_free(e->guards);
        cache_direct_free(e->direct);
        Py_XDECREF(e->code);
        Py_XDECREF(e->payload);
        PyMem_Free(e);
        e = next;
    }
}

static void
unlink_cache(CodeCache *c)
{
    if (c->prev != NULL)
        c->prev->next = c->next;
    else if (touched == c)
        touched = c->next;
    if (c->next != NULL)
        c->next->prev = c->prev;
    c->prev = c->next = NULL;
}

/* freefunc of our co_extra slot: the code object is being deallocated. */
static void
free_extra(void *extra)
{
    CodeCache *c = extra;
    if (c == NULL)
        return;
    unlink_cache(c);
    if (c->tele != NULL && watcher != NULL)
        watcher->code_dead(c);
    CacheEntry *entries = c->entries;
    GTree *tree = c->tree;
    PyObject *sigs[CACHE_EAGER_SIGS];
    for (int i = 0; i < CACHE_EAGER_SIGS; i++)
        sigs[i] = c->eager_sigs[i].types;
    PyMem_Free(c);
    gtree_decref(tree);             /* entries still hold what the tree holds */
    for (int i = 0; i < CACHE_EAGER_SIGS; i++)
        Py_XDECREF(sigs[i]);
    cache_entry_decref(entries);    /* may run Python code: do it last */
}

int
cache_init(void)
{
    if (extra_index >= 0)
        return 0;
    extra_index = dyn_request_code_extra_index(free_extra);
    if (extra_index < 0) {
        PyErr_SetString(PyExc_RuntimeError, "dynamo: no co_extra index left");
        return -1;
    }
    return 0;
}

CodeCache *
cache_get(PyObject *code)
{
    void *extra = NULL;
    if (dyn_code_get_extra(code, extra_index, &extra) < 0) {
        PyErr_Clear();              /* only fails for a bad index: no cache */
        return NULL;
    }
    return extra;
}

CodeCache *
cache_ensure(PyObject *code)
{
    CodeCache *c = cache_get(code);
    if (c != NULL)
        return c;
    c = PyMem_Calloc(1, sizeof(CodeCache));
    if (c == NULL) {
        PyErr_NoMemory();
        return NULL;
    }
    c->code = code;
    if (dyn_code_set_extra(code, extra_index, c) < 0) {
        PyMem_Free(c);
        return NULL;
    }
    c->next = touched;
    if (touched != NULL)
        touched->prev = c;
    touched = c;
    return c;
}

void
cache_direct_free(DirectCall *d)
{
    if (d == NULL)
        return;
    Py_XDECREF(d->fn);
    Py_XDECREF(d->func);
    Py_XDECREF(d->self);
    PyMem_Free(d);
}

int
cache_push(CodeCache *cache, PyObject *new_code, GirSet *guards, PyObject *payload,
           DirectCall *direct)
{
    CacheEntry *e = PyMem_Calloc(1, sizeof(CacheEntry));
    if (e == NULL) {
        gir_free(guards);
        cache_direct_free(direct);
        PyErr_NoMemory();
        return -1;
    }
    e->refs = 1;                    /* the link from cache->entries */
    e->code = Py_NewRef(new_code);
    e->payload = Py_NewRef(payload);
    e->guards = guards;
    e->direct = direct;
    e->tele = cache->tele_pending;
    cache->tele_pending = NULL;
    if (e->tele != NULL) {
        bprobe_bind_code(new_code, e->tele->break_time);
        if (watcher != NULL)
            watcher->entry_attached(e->tele);
    }
    e->next = cache->entries;       /* takes over the cache's reference */
    cache->entries = e;
    GTree *stale = cache->tree;     /* rebuilt at the next lookup */
    cache->tree = NULL;
    gtree_decref(stale);
    return 0;
}

/* Unlink entries whose guards died; returns them as a chain to drop. */
static CacheEntry *
unlink_dead(CodeCache *c)
{
    CacheEntry *doomed = NULL, **link = &c->entries, *e;
    while ((e = *link) != NULL) {
        if (!e->guards->dead) {
            link = &e->next;
            continue;
        }
        *link = e->next;            /* the reference e held moves to the link */
        e->next = doomed;           /* e's link reference now comes from doomed */
        doomed = e;
    }
    return doomed;
}

GTree *
cache_tree(CodeCache *c, GirRuntime *rt)
{
    CacheEntry *doomed = NULL;
    GTree *old = NULL;
    if (c->dead_epoch != gir_dead_epoch) {          /* some guarded object died? */
        c->dead_epoch = gir_dead_epoch;
        if ((doomed = unlink_dead(c)) != NULL) {
            cache_generation++;
            old = c->tree;
            c->tree = NULL;
        }
    }
    if (c->tree == NULL && c->entries != NULL) {
        Py_ssize_t n = 0;
        for (CacheEntry *e = c->entries; e != NULL; e = e->next)
            n++;
        GtreeInput *in = PyMem_Malloc(n * sizeof(GtreeInput));
        if (in == NULL)
            PyErr_NoMemory();
        else {
            n = 0;
            for (CacheEntry *e = c->entries; e != NULL; e = e->next)
                in[n++] = (GtreeInput){.guards = e->guards, .payload = e->payload, .tag = e};
            c->tree = gtree_build(in, n, rt);
            PyMem_Free(in);
            c->rebuilds += c->tree != NULL;
            if (c->tree != NULL && c->tele != NULL && watcher != NULL)
                watcher->tree_built(c);
        }
    }
    GTree *result = c->tree != NULL ? gtree_incref(c->tree) : NULL;
    /* Python code run by the drops below may change c; result stays valid
     * (it holds its own references, and its tags are checked against
     * cache_generation by the caller). */
    gtree_decref(old);
    if (doomed != NULL) {
        PyObject *exc_type, *exc_value, *exc_tb;
        PyErr_Fetch(&exc_type, &exc_value, &exc_tb);
        cache_entry_decref(doomed);
        PyErr_Restore(exc_type, exc_value, exc_tb);
    }
    return result;
}

void
cache_clear(PyObject *code)
{
    CodeCache *c = cache_get(code);
    if (c == NULL)
        return;
    CacheEntry *entries = c->entries;
    GTree *tree = c->tree;
    c->entries = NULL;
    c->tree = NULL;
    cache_generation++;
    gtree_decref(tree);             /* entries still hold what the tree holds */
    cache_entry_decref(entries);
}

PyObject *
cache_drop_unused(PyObject *code)
{
    PyObject *dropped = PyList_New(0);
    CodeCache *c = cache_get(code);
    if (dropped == NULL || c == NULL)
        return dropped;
    CacheEntry *doomed = NULL, **link = &c->entries, *e;
    while ((e = *link) != NULL) {
        if (e->hits != 0 || e->guards->dead) {     /* used, or pruned at the next lookup */
            link = &e->next;
            continue;
        }
        if (PyList_Append(dropped, e->payload) < 0) {
            Py_CLEAR(dropped);
            break;
        }
        *link = e->next;            /* the reference e held moves to the link */
        e->next = doomed;           /* e's link reference now comes from doomed */
        doomed = e;
    }
    if (doomed != NULL) {
        /* A lookup still holding one of these entries sees the generation
         * change and stops walking, so it never follows the new links. */
        cache_generation++;
        GTree *tree = c->tree;
        c->tree = NULL;
        gtree_decref(tree);         /* entries still hold what the tree holds */
        PyObject *exc_type, *exc_value, *exc_tb;
        PyErr_Fetch(&exc_type, &exc_value, &exc_tb);
        cache_entry_decref(doomed); /* may run Python code: last */
        PyErr_Restore(exc_type, exc_value, exc_tb);
    }
    return dropped;
}

int
cache_remember_eager(PyObject *code, PyObject *types, PyObject *closure)
{
    CodeCache *c = cache_ensure(code);
    if (c == NULL)
        return -1;
    int i = 0;
    for (; i < CACHE_EAGER_SIGS && c->eager_sigs[i].types != NULL; i++) {
        if (c->eager_sigs[i].closure != closure)
            continue;
        int eq = PyObject_RichCompareBool(c->eager_sigs[i].types, types, Py_EQ);
        if (eq != 0)                /* known already, or an error */
            return eq < 0 ? -1 : 0;
    }
    if (i == CACHE_EAGER_SIGS)      /* all taken: later ones keep asking */
        return 0;
    c->eager_sigs[i].types = Py_NewRef(types);
    c->eager_sigs[i].closure = closure;
    return 1;
}

void
cache_reset_all(void)
{
    /* Detach first, free after: freeing runs Python code that may kill code
     * objects, which unlinks caches from the list we would be walking.  The
     * eager signatures go into one list, dropped at the end (when the list
     * cannot be made they stay: they only spare callbacks). */
    CacheEntry *doomed = NULL;
    PyObject *doomed_sigs = PyList_New(0);
    if (doomed_sigs == NULL)
        PyErr_WriteUnraisable(NULL);
    for (CodeCache *c = touched; c != NULL; c = c->next) {
        c->skip = 0;
        for (int i = 0; doomed_sigs != NULL && i < CACHE_EAGER_SIGS; i++) {
            if (c->eager_sigs[i].types == NULL)
                break;
            if (PyList_Append(doomed_sigs, c->eager_sigs[i].types) < 0) {
                PyErr_WriteUnraisable(NULL);
                break;
            }
            Py_CLEAR(c->eager_sigs[i].types);   /* the list holds it: no dealloc here */
            c->eager_sigs[i].closure = NULL;
        }
        /* No Python code runs here: the entries (freed below) hold their
         * own references on everything the tree references. */
        GTree *tree = c->tree;
        c->tree = NULL;
        gtree_decref(tree);
        CacheEntry *tail = c->entries;
        if (tail == NULL)
            continue;
        c->entries = NULL;
        /* Splice the chain in front of doomed; the link reference of the
         * cache moves to the previous chain's last entry.  A lookup still
         * holding one of these entries sees cache_generation change and
         * stops walking, so it never follows the splice. */
        CacheEntry *last = tail;
        while (last->next != NULL)
            last = last->next;
        last->next = doomed;        /* last held no reference on a next */
        doomed = tail;
    }
    cache_generation++;
    cache_resets++;
    cache_entry_decref(doomed);
    Py_XDECREF(doomed_sigs);
}

/* New list of item(e) (a new reference, or NULL on error) for each live
 * entry of code's cache, newest first.  NULL on error. */
static PyObject *
live_entries(PyObject *code, PyObject *(*item)(const CacheEntry *e))
{
    PyObject *list = PyList_New(0);
    CodeCache *c = cache_get(code);
    if (list == NULL || c == NULL)
        return list;
    for (CacheEntry *e = c->entries; e != NULL; e = e->next) {
        if (e->guards->dead)        /* pruned at the next lookup */
            continue;
        PyObject *x = item(e);
        if (x == NULL || PyList_Append(list, x) < 0) {
            Py_XDECREF(x);
            Py_DECREF(list);
            return NULL;
        }
        Py_DECREF(x);
    }
    return list;
}

static PyObject *
entry_payload(const CacheEntry *e)
{
    return Py_NewRef(e->payload);
}

/* The direct plan of an entry as Python data: (fn, slots, index, line),
 * or None. */
static PyObject *
entry_direct(const CacheEntry *e)
{
    const DirectCall *d = e->direct;
    if (d == NULL)
        Py_RETURN_NONE;
    PyObject *slots = PyTuple_New(d->nargs);
    if (slots == NULL)
        return NULL;
    for (int i = 0; i < d->nargs; i++) {
        PyObject *s = PyLong_FromLong(d->slots[i]);
        if (s == NULL) {
            Py_DECREF(slots);
            return NULL;
        }
        PyTuple_SET_ITEM(slots, i, s);
    }
    return Py_BuildValue("(ONni)", d->fn, slots, d->index, d->line);
}

PyObject *
cache_payloads(PyObject *code)
{
    return live_entries(code, entry_payload);
}

PyObject *
cache_directs(PyObject *code)
{
    return live_entries(code, entry_direct);
}
