/* inspect/trace.h — the record of a whole run: every compile, recompile,
 * graph break, cache-limit hit and guard failure of a process, with its
 * time, as JSON lines (`dynamo-top --record FILE`, DYNAMO_TRACE=dir; read
 * by `dynamo-dot --timeline`).
 *
 * Owns: the file format, declared once below (the header's and each
 * line's fields as X-macro lists: writer and parser both loop over them),
 * the recorder (successive snapshots of a process -> new trace events: the
 * ring's events past the last seq seen, plus a GUARD_FAIL event per cache
 * entry whose guard-failure counter grew), the writer and the loader.  It
 * must not draw or print for people (the tools do), and never crashes on a
 * bad file: every defect is a DR_ECORRUPT status naming the file and line.
 *
 * Format (version DT_TRACE_VERSION; one JSON object per line, UTF-8):
 *
 *   line 1       {"format":"dynamo-trace","version":1, header fields...}
 *   then         one event per line: DT_TRACE_EVENT_FIELDS, "kind" one of
 *                record.h's DT_EVENT_KINDS texts ("compile", "recompile",
 *                "break", "limit", "error", "reset", "guard_fail")
 *   last, maybe  {"end":"exited"|"interrupted"|"snapshot","t_ns":N,"lost":N}
 *
 * Values are strings or integers only.  A reader ignores a field it does
 * not know (later versions append fields), refuses another "version", and
 * an absent field reads as "" / -1.  Events are in the order the recorder
 * saw them; times are CLOCK_REALTIME ns.  A "compile" line carries the
 * compile's status, compile time and the frame's name/file/line; the
 * "recompile" line of the same [frame/compile] follows it and names the
 * failing guard (text); "guard_fail" lines count the misses of one cache
 * entry since the previous line of that entry (count), with the guard and
 * the values of its last failure.
 */
#ifndef DYNAMO_INSPECT_TRACE_H
#define DYNAMO_INSPECT_TRACE_H

#include <stddef.h>     /* size_t */
#include <stdint.h>     /* int64_t */
#include <stdio.h>      /* FILE */

#include "reader.h"     /* DrSnapshot, DrStatus */

#define DT_TRACE_FORMAT  "dynamo-trace"
#define DT_TRACE_VERSION 1

/* ---- the format: X(field, TYPE) with TYPE I (int64, -1 absent) or S (string) ---- */

#define DT_TRACE_HEADER_FIELDS(X) \
    X(pid, I)                   /* the recorded process */ \
    X(argv, S)                  /* its command line */ \
    X(python, S)                /* "3.11.9" */ \
    X(torch, S)                 /* "2.13.0+cpu" */ \
    X(start_ns, I)              /* its telemetry start, CLOCK_REALTIME ns */ \
    X(source, S)                /* how the recorder read it: "shm /dev/shm/dynamo-1" */

#define DT_TRACE_EVENT_FIELDS(X) \
    X(seq, I)                   /* the ring's seq; 0: a recorder event (guard_fail) */ \
    X(t_ns, I)                  /* CLOCK_REALTIME ns */ \
    X(kind, S)                  /* DT_EVENT_KINDS text */ \
    X(frame, I)                 /* F of [F/C], -1 none */ \
    X(compile, I)               /* C of [F/C], -1 none */ \
    X(name, S)                  /* the frame's co_name */ \
    X(file, S)                  /* its co_filename */ \
    X(line, I)                  /* its co_firstlineno */ \
    X(context, S)               /* who it runs for ("GPT2Model.forward"), may be "" */ \
    X(status, S)                /* compile/limit: DT_REC_STATUSES text */ \
    X(compile_ns, I)            /* compile: its compile time, ns */ \
    X(text, S)                  /* the ring event's text: break reason, failing guard, ... */ \
    X(where, S)                 /* "file:line" */ \
    X(guard, S)                 /* guard_fail: the failing guard's text */ \
    X(property, S)              /* recompile/limit/guard_fail: "size()[0]", "dtype", ... */ \
    X(expected, S)              /* its expected value */ \
    X(actual, S)                /* its actual value */ \
    X(count, I)                 /* guard_fail: misses since the entry's previous line, count */

#define DT_TRACE_FIELD_I(name) int64_t name;
#define DT_TRACE_FIELD_S(name) char *name;     /* owned, never NULL once filled */
#define DT_TRACE_FIELD(name, type) DT_TRACE_FIELD_##type(name)

typedef struct {
    DT_TRACE_HEADER_FIELDS(DT_TRACE_FIELD)
} DrTraceHeader;

typedef struct {
    DT_TRACE_EVENT_FIELDS(DT_TRACE_FIELD)
    DtEventKind kind_id;        /* kind as record.h's enum (DT_EV_UNKNOWN: a newer text) */
} DrTraceEvent;

/* A record in memory: read from a file, or being recorded. */
typedef struct {
    DrTraceHeader head;
    DrTraceEvent *ev;           /* owned; oldest first */
    size_t n, cap;
    uint64_t lost;              /* ring events overwritten before the recorder saw them, count */
    char *end;                  /* owned: the end line's reason, "" none (still running) */
    int64_t end_ns;             /* the end line's t_ns, -1 none */
    /* recorder state (dr_trace_poll) */
    uint64_t last_seq;          /* newest ring seq seen */
    uint64_t *fails;            /* owned: guard_failures per entry slot at the last poll */
    size_t n_fails;
    int started;                /* 1 once the header was filled */
} DrTrace;

/* An empty trace (no events, header fields "" / -1). */
void dr_trace_init(DrTrace *t);

/* Frees what t owns and zeroes it (dr_trace_init before using it again). */
void dr_trace_free(DrTrace *t);

/* Frees the events held (after they were written), keeping the header and
 * the recorder state: a long recording holds one poll's events at a time. */
void dr_trace_drop_events(DrTrace *t);

/* Appends to t what snapshot s shows that earlier polls did not: the ring
 * events with a seq past t->last_seq (the first poll: all the ring holds),
 * each "compile" completed from its record, and a "guard_fail" event per
 * cache entry whose guard-failure counter grew (a drop after a reset counts
 * from zero).  Fills t->head at the first poll (source: `source`, may be
 * NULL).  Returns the number of events appended. */
size_t dr_trace_poll(DrTrace *t, DrSnapshot *s, const char *source);

/* Write the header line / events [from, t->n) / the end line (why: "exited",
 * "interrupted", "snapshot") to out, text from the process escaped as JSON.
 * 0, or -1 when a write failed (errno set). */
int dr_trace_write_header(FILE *out, const DrTrace *t);
int dr_trace_write_events(FILE *out, const DrTrace *t, size_t from);
int dr_trace_write_end(FILE *out, const DrTrace *t, const char *why, int64_t t_ns);

/* Read a record file into t (initialized here).  0, or -1 with *st:
 * DR_EIO/DR_EPERM (cannot open or read: msg has the path and strerror),
 * DR_EVERSION (another format version), DR_ECORRUPT ("FILE:LINE: what is
 * wrong": not a record, bad JSON, a truncated last line, a field of the
 * wrong type); t is freed (zeroed) on failure. */
int dr_trace_load(const char *path, DrTrace *t, DrStatus *st);

#endif /* DYNAMO_INSPECT_TRACE_H */
