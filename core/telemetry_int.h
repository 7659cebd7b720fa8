/* core/telemetry_int.h — the telemetry writer's inside, between its two
 * files: core/telemetry.c (the region's lifecycle: creation, slots,
 * blobs, events, the seqlock, exit and fork) and core/telemetry_py.c (the
 * _telemetry_* functions of dynamo._C).  The bindings reach the region only
 * through these functions; nothing outside core/telemetry*.c includes it.
 * Every function runs under the GIL.
 */
#ifndef DYNAMO_CORE_TELEMETRY_INT_H
#define DYNAMO_CORE_TELEMETRY_INT_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>                 /* PyObject, Py_ssize_t */
#include "../inspect/errors.h"      /* DrError: tele_capture */
#include "../inspect/layout.h"      /* DtHeader, DtEntry; record.h: DtRecStatus */
#include "cache.h"                  /* CodeCache */

/* One event to add: kind and texts from the caller (borrowed), slots and
 * ids filled by tele_publish. */
typedef struct {
    uint32_t kind, frame_id, compile_id, code_slot, entry_slot;
    const char *text, *where;
    Py_ssize_t text_len, where_len;
} EventSpec;

/* One compile record to publish. */
typedef struct {
    uint32_t frame_id, compile_id;
    DtRecStatus status;             /* DT_RS_*; DT_RS_UNKNOWN for a text outside the list */
    uint64_t compile_ns;            /* ns */
    uint32_t n_guards;              /* count: the fail counters of an "ok" entry */
    const void *record;             /* borrowed: the DT_BLOB_RECORD payload */
    size_t record_len;              /* bytes */
    uint32_t cache_size_limit;      /* entries: config.cache_size_limit at this compile */
} TelePublish;

/* The region's header, NULL while telemetry is off; its mapped size
 * (bytes); DYNAMO_TELEMETRY_REDACT; why the region is no shm file ("" when
 * it is).  Borrowed. */
const DtHeader *tele_header(void);
size_t tele_region_len(void);
int tele_redact(void);
const char *tele_init_warning(void);
uint64_t tele_now_ns(void);         /* CLOCK_REALTIME, ns */
uint32_t tele_init_errno(void);     /* errno of a failed region creation, else 0 */

/* The header's identity strings (truncated to their fields); no-op while off. */
void tele_set_identity(const char *torch_version, const char *dynamo_version);

/* Publish one record of cache's code (region on): its slot, the events
 * of specs (n of them; their slots and ids are filled here), and, for
 * status ok, the slot the cache's next pushed entry takes.  The record's
 * slot index, or -1 when the table is full.  Never fails otherwise. */
long tele_publish(CodeCache *cache, const TelePublish *p, EventSpec *specs, Py_ssize_t n);

/* Make the node counters of every live code current (republishing a tree
 * rebuilt since); how many codes, or -1 with an exception. */
long tele_refresh(void);

/* A compact image of the region (region on): *image is malloc'ed (the
 * caller frees it).  DR_OK, or an error with msg. */
DrError tele_capture(uint8_t **image, size_t *len, char *msg, size_t cap);

/* An entry slot's fail counters (n_guards of them; NULL if none) and its
 * index in the entry table. */
const uint64_t *tele_fail_counts(const DtEntry *e);
uint32_t tele_entry_index(const DtEntry *e);

/* What a publish of cache's built tree (cache->tree != NULL) writes: new
 * TREE and COUNTERS payloads (bytes) of code.  0, or -1 with an exception. */
int tele_tree_payload(CodeCache *cache, PyObject *code, PyObject **tree, PyObject **counters);

#endif /* DYNAMO_CORE_TELEMETRY_INT_H */
