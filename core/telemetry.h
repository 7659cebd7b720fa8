/* core/telemetry.h — the telemetry writer inside dynamo._C.
 *
 * Owns: the process's telemetry region (layout.h): its creation when the
 * module loads (/dev/shm/dynamo-<pid>, O_EXCL, 0600, its space reserved and
 * sized from what is free; anonymous memory as the fallback, with one
 * warning line), the anchor symbol, removal at exit and on fatal signals left
 * at SIG_DFL (DYNAMO_TELEMETRY_KEEP=1: never), redaction of string values
 * (DYNAMO_TELEMETRY_REDACT=1), the slots of codes and
 * cache entries, blobs, events (core/telemetry.c), and the Python functions
 * that publish compile records into it (_telemetry_*, core/telemetry_py.c).
 * core/cache.c never calls it: slot changes reach it through the
 * CacheWatcher telemetry_init sets (cache.h).  The hook (core/hook.c) only
 * bumps counters through the inline functions below: no locks, no
 * allocation, no Python; with DYNAMO_TELEMETRY=0 the slots are NULL and the
 * hook pays one predictable branch.  It must never make a compile or a call
 * fail: every internal problem disables the piece concerned.
 */
#ifndef DYNAMO_CORE_TELEMETRY_H
#define DYNAMO_CORE_TELEMETRY_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>     /* PyObject */
#include "../inspect/layout.h"  /* DtCode, DtEntry */

struct CodeCache;       /* core/cache.h */

/* Create the region (unless DYNAMO_TELEMETRY=0) and fill the anchor.  Never
 * fails: problems leave telemetry off and are recorded in the anchor. */
void telemetry_init(void);

/* Add the _telemetry_* functions to the module, and the record's
 * vocabulary of inspect/record.h: RECORD_SCHEMAS ({"RECORD": field names in
 * payload order, "GRAPH": ..., ...}), RECORD_STATUSES ({"OK": "ok", ...}),
 * RESUME_KINDS ({"BRANCH": "branch", ...}), EVENT_KINDS ({"COMPILE": 1,
 * ...}).  0, or -1 with an exception. */
int telemetry_add_functions(PyObject *module);

/* One hook lookup of a code that has a slot: a hit selecting `entry` (may
 * be NULL when the entry has no slot) or a miss (hit == 0). */
static inline void
telemetry_bump(uint64_t *counter)
{
    /* One writer (the GIL holder): a plain load + store, atomic per word
     * for readers in other processes. */
    __atomic_store_n(counter, __atomic_load_n(counter, __ATOMIC_RELAXED) + 1, __ATOMIC_RELAXED);
}

static inline void
telemetry_count_lookup(DtCode *code, DtEntry *entry, int hit)
{
    telemetry_bump(&code->calls);
    if (hit) {
        telemetry_bump(&code->hits);
        if (entry != NULL)
            telemetry_bump(&entry->hits);
    }
    else
        telemetry_bump(&code->misses);
}

/* Guard cost sampling: 1 of every *telemetry_timing lookups is timed, 0
 * off.  It points at DtHeader.guard_timing while the region exists (a
 * reader may flip it: dynamo-top's `g`), else at a process-local value;
 * DYNAMO_GUARD_TIMING sets it at init, dynamo.config.guard_timing
 * (telemetry_set_guard_timing) at run time.  Never NULL. */
extern uint32_t *telemetry_timing;

static inline uint32_t
telemetry_timing_period(void)
{
    return __atomic_load_n(telemetry_timing, __ATOMIC_RELAXED);
}

/* Set the sampling period (0 off); returns the previous one. */
uint32_t telemetry_set_guard_timing(uint32_t period);

/* One timed lookup of a code that has a slot: its walk took ns; `entry`
 * is the hit's slot, or NULL (a miss, or an entry without a slot). */
static inline void
telemetry_count_timing(DtCode *code, DtEntry *entry, uint64_t ns)
{
    telemetry_bump(&code->lookup_timed);
    __atomic_store_n(&code->lookup_ns, __atomic_load_n(&code->lookup_ns, __ATOMIC_RELAXED) + ns,
                     __ATOMIC_RELAXED);
    if (entry != NULL) {
        telemetry_bump(&entry->hit_timed);
        __atomic_store_n(&entry->hit_ns, __atomic_load_n(&entry->hit_ns, __ATOMIC_RELAXED) + ns,
                         __ATOMIC_RELAXED);
    }
}

/* A miss in COMPILE mode with the hook's failures list (borrowed): count
 * the closest entry's failing guard and keep its expected/actual text.
 * Allocates and runs Python code (repr), which may reset() everything;
 * cache stays alive (the caller holds its code).  Never leaves an
 * exception set. */
void telemetry_note_failure(struct CodeCache *cache, PyObject *failures);

/* An entry was pushed to cache (after a publish): publish its guard tree
 * as built (core/hook.c builds it first; nothing is built here).  Runs no
 * Python function of dynamo, only repr() of guarded values (core/teletext.c);
 * never leaves an exception. */
void telemetry_entry_added(struct CodeCache *cache);

/* dynamo.reset() ran (every cache entry dropped): start the code and
 * entry tables and the blob area over when nothing points into them any
 * more (the event ring keeps its events, their texts moved down), then
 * record a reset event. */
void telemetry_reset_event(void);

#endif /* DYNAMO_CORE_TELEMETRY_H */
