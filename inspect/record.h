/* inspect/record.h — the compile record's vocabulary, declared once.
 *
 * Owns: the field order of every positional schema of a RECORD blob
 * (layout.h's "RECORD", "GRAPH", "NODE", "GUARD", "BREAK", "FRAME",
 * "RESUME"), the record statuses, the resume kinds and the event kinds,
 * as X-macro lists.  Everything else is generated from them: the index
 * enums the reader decodes with (inspect/snapshot.c), the enums the tools
 * switch on (DtRecStatus, DtResumeKind, DtEventKind), the name tables, and
 * what dynamo._C exports to Python (core/telemetry_py.c: RECORD_SCHEMAS,
 * RECORD_STATUSES, RESUME_KINDS, EVENT_KINDS), which dynamo/telemetry.py
 * builds records from by name.  tests/test_layering.py pins both sides.
 *
 * A new field is one X(...) line at the end of its list (readers treat a
 * missing trailing item as empty, so old snapshots still decode), plus the
 * code that fills it (dynamo/telemetry.py, by name) and the code that shows
 * it (the reader's struct, the tools).  Plain C11 and <string.h>: the
 * writer, the reader and the tools all include it.
 */
#ifndef DYNAMO_INSPECT_RECORD_H
#define DYNAMO_INSPECT_RECORD_H

#include <stdint.h>     /* uint32_t */
#include <string.h>     /* strlen, memcmp: names to enums */

/* ---- schemas: X(INDEX_NAME, field_name), in payload order ------------------- */

#define DT_RECORD_FIELDS(X) \
    X(FRAME_ID, frame_id)                   /* i */ \
    X(COMPILE_ID, compile_id)               /* i */ \
    X(STATUS, status)                       /* s: DT_REC_STATUSES */ \
    X(BACKEND, backend)                     /* s */ \
    X(NAME, name)                           /* s: co_name */ \
    X(FILENAME, filename)                   /* s */ \
    X(FIRSTLINENO, firstlineno)             /* i */ \
    X(START_NS, start_ns)                   /* i: CLOCK_REALTIME ns */ \
    X(COMPILE_NS, compile_ns)               /* i: ns */ \
    X(BACKEND_NS, backend_ns)               /* i: ns */ \
    X(RECOMPILE_REASON, recompile_reason)   /* s */ \
    X(ERROR, error)                         /* s */ \
    X(ORIGINAL_BYTECODE, original_bytecode) /* s: dis listing */ \
    X(MODIFIED_BYTECODE, modified_bytecode) /* s: dis listing */ \
    X(GRAPHS, graphs)                       /* [GRAPH] */ \
    X(GUARDS, guards)                       /* [GUARD] */ \
    X(BREAKS, breaks)                       /* [BREAK] */ \
    X(OP_COUNT, op_count)                   /* i: count */ \
    X(RESUMES, resumes)                     /* [RESUME] */ \
    X(CONTEXT, context)                     /* s: who the frame runs for, "" plain: \
                                               "GPT2Model.forward" behind a decorator's wrapper */

#define DT_GRAPH_FIELDS(X) \
    X(NAME, name)                           /* s: "__compiled_fn_3" */ \
    X(OP_COUNT, op_count)                   /* i: count */ \
    X(NODES, nodes)                         /* [NODE] */ \
    X(BACKEND_NOTE, backend_note)           /* s: how the backend chose for it ("autotune: inductor (tuned; ...)"), "" */ \
    X(DDP_BUCKETS, ddp_buckets)             /* [[s]]: per DDP bucket piece, first first, the
                                               parameter names it holds; [] when not cut */

#define DT_NODE_FIELDS(X) \
    X(OP, op)                               /* s: placeholder, call_function, ... */ \
    X(NAME, name)                           /* s */ \
    X(TARGET, target)                       /* s */ \
    X(ARGS, args)                           /* s: text of args and kwargs */ \
    X(DTYPE, dtype)                         /* s */ \
    X(SHAPE, shape)                         /* s: "[2, 3]" */ \
    X(STRIDE, stride)                       /* s */ \
    X(DEVICE, device)                       /* s */ \
    X(MODULE_PATH, module_path)             /* s: "layer1.0.conv1" */ \
    X(USERS, users)                         /* [s]: node names */ \
    X(INPUTS, inputs)                       /* [s]: node names */ \
    X(MODULE_CLASS, module_class)           /* s: "Conv2d" */ \
    X(DDP_BUCKET, ddp_bucket)               /* i: 1 + the index of its DDP bucket piece in
                                               GRAPH ddp_buckets; 0 when not cut */

#define DT_GUARD_FIELDS(X) \
    X(TEXT, text)                           /* s: Guard.describe() */ \
    X(KIND, kind)                           /* s: "TENSOR_MATCH" (_C.GUARD_KINDS) */ \
    X(SOURCE, source)                       /* s: "L['a']" */ \
    X(DETAIL, detail)                       /* s: expected value text */ \
    X(ORIGIN, origin)                       /* s: "path/file.py:12", the user line whose \
                                               tracing installed the guard; "" none */ \
    X(ORIGIN_TEXT, origin_text)             /* s: that line's source, or what installed it */

#define DT_BREAK_FIELDS(X) \
    X(REASON, reason)                       /* s */ \
    X(FILENAME, filename)                   /* s */ \
    X(LINENO, lineno)                       /* i */ \
    X(USER_STACK, user_stack)               /* [FRAME], innermost last */ \
    X(KIND, kind)                           /* s: dynamo/break_hints.py's kind, "" old */ \
    X(MEANING, meaning)                     /* s: the reason in user words, "" = reason */ \
    X(HINT, hint)                           /* s: what the user can do, "" none */

#define DT_FRAME_FIELDS(X) \
    X(FILENAME, filename)                   /* s */ \
    X(LINENO, lineno)                       /* i */ \
    X(NAME, name)                           /* s: function */ \
    X(LINE, line)                           /* s: source line */

#define DT_RESUME_FIELDS(X) \
    X(NAME, name)                           /* s: "__resume_at_<offset>_<n>" */ \
    X(OFFSET, offset)                       /* i: bytecode offset it resumes at */ \
    X(KIND, kind)                           /* s: DT_RESUME_KINDS, "" unknown */

/* The index enums: DT_REC_STATUS, DT_NODE_MODULE_CLASS, ...; *_N_FIELDS counts. */
#define DT_FIELD_INDEX(prefix, upper, lower) prefix##upper,
#define DT_REC_INDEX(u, l)    DT_FIELD_INDEX(DT_REC_, u, l)
#define DT_GRAPH_INDEX(u, l)  DT_FIELD_INDEX(DT_GRAPH_, u, l)
#define DT_NODE_INDEX(u, l)   DT_FIELD_INDEX(DT_NODE_, u, l)
#define DT_GUARD_INDEX(u, l)  DT_FIELD_INDEX(DT_GUARD_, u, l)
#define DT_BREAK_INDEX(u, l)  DT_FIELD_INDEX(DT_BREAK_, u, l)
#define DT_FRAME_INDEX(u, l)  DT_FIELD_INDEX(DT_FRAME_, u, l)
#define DT_RESUME_INDEX(u, l) DT_FIELD_INDEX(DT_RESUME_, u, l)
enum { DT_RECORD_FIELDS(DT_REC_INDEX) DT_REC_N_FIELDS };
enum { DT_GRAPH_FIELDS(DT_GRAPH_INDEX) DT_GRAPH_N_FIELDS };
enum { DT_NODE_FIELDS(DT_NODE_INDEX) DT_NODE_N_FIELDS };
enum { DT_GUARD_FIELDS(DT_GUARD_INDEX) DT_GUARD_N_FIELDS };
enum { DT_BREAK_FIELDS(DT_BREAK_INDEX) DT_BREAK_N_FIELDS };
enum { DT_FRAME_FIELDS(DT_FRAME_INDEX) DT_FRAME_N_FIELDS };
enum { DT_RESUME_FIELDS(DT_RESUME_INDEX) DT_RESUME_N_FIELDS };

/* ---- record statuses: X(NAME, "text") ------------------------------------------ */

#define DT_REC_STATUSES(X) \
    X(OK, "ok")                             /* a cache entry was installed */ \
    X(SKIPPED, "skipped")                   /* nothing to compile */ \
    X(ERROR, "error")                       /* tracing failed: runs eagerly */ \
    X(LIMIT, "limit")                       /* cache_size_limit hit: runs eagerly */ \
    X(UNSUPPORTED, "unsupported")           /* nopython raised */

#define DT_RS_ENUM(name, text) DT_RS_##name,
typedef enum {
    DT_RS_UNKNOWN = 0,                      /* a text outside the list (a newer writer) */
    DT_REC_STATUSES(DT_RS_ENUM)
    DT_RS_COUNT
} DtRecStatus;

/* ---- resume kinds: X(NAME, "text", "label for people") ------------------------------ */

#define DT_RESUME_KINDS(X) \
    X(BRANCH, "branch", "branch taken")     /* the jump target of a jump on a tensor */ \
    X(FALLTHROUGH, "fallthrough", "fall-through") /* the not-taken side of that jump */ \
    X(AFTER, "after", "after break")        /* after the instruction run eagerly */

#define DT_RK_ENUM(name, text, label) DT_RK_##name,
typedef enum {
    DT_RK_UNKNOWN = 0,                      /* "" or a text outside the list */
    DT_RESUME_KINDS(DT_RK_ENUM)
    DT_RK_COUNT
} DtResumeKind;

/* ---- event kinds: X(NAME, number, "text") (DtEvent.kind) ------------------------------ */

#define DT_EVENT_KINDS(X) \
    X(COMPILE, 1, "compile")        /* a frame compiled: text = "status: name", ref the record */ \
    X(BREAK, 2, "break")            /* a graph break: text = reason, where = "file:line" */ \
    X(RECOMPILE, 3, "recompile")    /* a compile caused by a failing guard: text = failing guard */ \
    X(LIMIT, 4, "limit")            /* cache_size_limit hit: text = last failing guard */ \
    X(ERROR, 5, "error")            /* compile failed / unsupported: text = error */ \
    X(RESET, 6, "reset")            /* dynamo.reset(): entries dropped */ \
    X(GUARD_FAIL, 7, "guard_fail")  /* never in the ring: a run record's (inspect/trace.h) \
                                       misses of one entry, from its counters */

#define DT_EV_ENUM(name, number, text) DT_EV_##name = number,
typedef enum {
    DT_EV_UNKNOWN = 0,
    DT_EVENT_KINDS(DT_EV_ENUM)
} DtEventKind;

/* ---- names <-> enums --------------------------------------------------------------- */

static inline int
dt_name_is(const char *s, size_t len, const char *name)
{
    return strlen(name) == len && memcmp(s, name, len) == 0;
}

/* The status a record's text names (len bytes, not NUL-terminated), or DT_RS_UNKNOWN. */
static inline DtRecStatus
dt_rec_status_of(const char *s, size_t len)
{
#define DT_RS_MATCH(name, text) if (dt_name_is(s, len, text)) return DT_RS_##name;
    DT_REC_STATUSES(DT_RS_MATCH)
#undef DT_RS_MATCH
    return DT_RS_UNKNOWN;
}

/* The text of a status; "" for DT_RS_UNKNOWN.  Static. */
static inline const char *
dt_rec_status_name(DtRecStatus st)
{
    switch (st) {
#define DT_RS_NAME(name, text) case DT_RS_##name: return text;
    DT_REC_STATUSES(DT_RS_NAME)
#undef DT_RS_NAME
    default: return "";
    }
}

/* The resume kind a text names, or DT_RK_UNKNOWN. */
static inline DtResumeKind
dt_resume_kind_of(const char *s, size_t len)
{
#define DT_RK_MATCH(name, text, label) if (dt_name_is(s, len, text)) return DT_RK_##name;
    DT_RESUME_KINDS(DT_RK_MATCH)
#undef DT_RK_MATCH
    return DT_RK_UNKNOWN;
}

/* What a resume kind means for people ("branch taken"); NULL for DT_RK_UNKNOWN. */
static inline const char *
dt_resume_kind_label(DtResumeKind k)
{
    switch (k) {
#define DT_RK_LABEL(name, text, label) case DT_RK_##name: return label;
    DT_RESUME_KINDS(DT_RK_LABEL)
#undef DT_RK_LABEL
    default: return NULL;
    }
}

/* The event kind a text names (len bytes), or DT_EV_UNKNOWN. */
static inline DtEventKind
dt_event_kind_of(const char *s, size_t len)
{
#define DT_EV_MATCH(name, number, text) if (dt_name_is(s, len, text)) return DT_EV_##name;
    DT_EVENT_KINDS(DT_EV_MATCH)
#undef DT_EV_MATCH
    return DT_EV_UNKNOWN;
}

/* The text of an event kind ("compile"); "?" for a number outside the list. */
static inline const char *
dt_event_kind_name(uint32_t kind)
{
    switch (kind) {
#define DT_EV_NAME(name, number, text) case number: return text;
    DT_EVENT_KINDS(DT_EV_NAME)
#undef DT_EV_NAME
    default: return "?";
    }
}

#endif /* DYNAMO_INSPECT_RECORD_H */
