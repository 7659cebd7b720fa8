/* model.h — what dynamo-top knows about one process, in its own terms.
 *
 * A Model is a self-contained, fully owned copy of one reading of the
 * telemetry (source.c fills it from the reader library).  The views and the
 * report read only Models, never the reader, so a paused or exited process
 * keeps its last Model untouched.  Every char * field is owned by the
 * struct holding it and never NULL once filled (empty string instead).
 */
#ifndef TUI_MODEL_H
#define TUI_MODEL_H

#include <stddef.h>
#include <stdint.h>

#include "record.h"     /* DtRecStatus, DtResumeKind, DtEventKind: what the views switch on */

typedef enum FrameStatus {
    FS_OK = 0,      /* compiled, no break */
    FS_BREAK,       /* compiled with at least one graph break */
    FS_LIMIT,       /* cache_size_limit hit: misses run eagerly */
    FS_ERROR,       /* the last compile failed: runs eagerly */
    FS_COUNT
} FrameStatus;

typedef enum ProcState {
    PS_LIVE = 0,    /* refreshing from a running process */
    PS_PAUSED,      /* the user froze the view */
    PS_EXITED,      /* the process went away; last state kept */
    PS_SNAPSHOT     /* read from a snapshot file (--file) */
} ProcState;

/* One fx node of a captured graph. */
typedef struct MNode {
    char *op;       /* placeholder, call_function, call_method, call_module, get_attr, output */
    char *name;     /* node name */
    char *target;   /* "torch.abs", "add", ... */
    char *args;     /* printed args */
    char *meta;     /* tensor meta, e.g. "f32[10, 4]"; "" when none */
    char *module;   /* "layer1.0.conv1 (Linear)": the module it calls / whose forward
                       made it; "" at the frame's top level */
    uint32_t bucket;/* 1 + its DDP bucket piece (MGraph.buckets); 0: graph not cut */
} MNode;

typedef struct MGraph {
    char *name;     /* __compiled_fn_N */
    MNode *nodes;   /* owned array */
    size_t n_nodes;
    uint64_t n_ops; /* call_* nodes */
    char *backend_note; /* the backend's word on this graph (autotune's choice), "" */
    char **buckets; /* owned: per DDP bucket piece, first first, "4 params: a, b, ..." */
    size_t n_buckets;/* 0: the graph was not cut at DDP's buckets */
} MGraph;

typedef struct MGuard {
    char *kind;         /* TENSOR_MATCH, ID_MATCH, ... */
    char *source;       /* L['x'], G['torch'], ... */
    char *text;         /* full human-readable guard */
    uint64_t fails;     /* times it was the failing guard (since reset) */
    char *last_property;/* failing property of the entry's last failure, when it was this guard */
    char *last_expected;/* "" when it was not the last failure */
    char *last_actual;
    char *origin;       /* "file.py:12  source text": the user line that installed it; "" */
} MGuard;

/* A resume function a compile generated: where the frame continues after
 * its graph break. */
typedef struct MResume {
    char *name;         /* __resume_at_<offset>_<n> */
    char *kind;         /* "branch" (jump taken), "fallthrough" (not taken), "after" (after
                           the instruction run eagerly at the break): kind_id's text */
    DtResumeKind kind_id;   /* DT_RK_*, DT_RK_UNKNOWN */
    uint32_t offset;    /* bytecode offset it resumes at */
    int64_t frame_id;   /* its frame once it ran, -1 before */
} MResume;

/* One node of a frame's guard tree, as guard cost sampling timed it (the
 * frame keeps its MFRAME_COSTLY costliest: most time in its own tests). */
typedef struct MCostNode {
    int64_t index;          /* depth-first position in the tree (root 0) */
    char *via;              /* branch leading to it: "root", "= 1", "default" */
    char *tests;            /* its tests (or the leaf's entries), "; "-joined, cut */
    uint64_t evaluations;   /* walks that entered it, count */
    uint64_t timed;         /* timed walks that entered it, count */
    uint64_t timed_ns;      /* their time in its own tests, ns */
} MCostNode;

#define MFRAME_COSTLY 5

/* One test of a frame's guard tree, as guard cost sampling timed it: the
 * frame keeps its MFRAME_COSTLY_TESTS costliest (most time in the test
 * and its source's first fetch). */
typedef struct MCostTest {
    char *test;             /* "L['c'].slow == 3", "switch on L['n']" */
    char *source;           /* "L['c'].slow" */
    char *entry;            /* "[F/C]" of its entry, "" for a switch */
    char *kind;             /* its guard's kind ("EQUALS_MATCH"), "" unknown */
    char *origin;           /* "file.py:12  the line" that installed the guard, "" unknown */
    uint64_t timed;         /* timed walks that ran it, count */
    uint64_t timed_ns;      /* their time in it, ns (dr_tree_test_est_ns: the longest run
                               counted as the mean of the others) */
} MCostTest;

#define MFRAME_COSTLY_TESTS 8

/* One compile of a frame: a cache entry [F/C] when it succeeded. */
typedef struct MEntry {
    int64_t frame_id;
    int64_t compile_id;
    char *status;           /* "ok", "limit", "error", "skipped", "unsupported": status_id's text */
    DtRecStatus status_id;  /* DT_RS_*, DT_RS_UNKNOWN */
    uint64_t hits;          /* calls that ran this entry (since reset) */
    uint64_t hit_timed;     /* timed lookups that selected it, count */
    uint64_t hit_ns;        /* their guard-tree walks, ns */
    uint64_t compile_ns;    /* time spent compiling it, ns */
    uint64_t when_ns;       /* compile time stamp, ns since process start; 0 unknown */
    char *backend;
    char *recompile_reason; /* failing guard of the closest entry; "" for the first compile */
    char *error;            /* "" unless status is "error" */
    char *orig_bytecode;    /* dis listing */
    char *mod_bytecode;
    MGraph *graphs;  size_t n_graphs;
    MGuard *guards;  size_t n_guards;
    MResume *resumes; size_t n_resumes;  /* in creation order */
} MEntry;

/* One graph break site, deduplicated by (reason, file, line). */
typedef struct MBreak {
    char *reason;
    char *file;         /* user frame of the break */
    int line;
    uint64_t count;     /* how many compiles broke here */
    char *user_stack;   /* "File ..., line ..., in ..." lines */
    char *meaning;      /* the reason in user words ("" = reason); dynamo/break_hints.py */
    char *hint;         /* what the user can do, "" none */
    /* its eager region (the code between its graph and the resume call),
     * summed over the compiles that broke here (inspect DrBreak) */
    uint64_t calls;     /* runs, count */
    uint64_t samples;   /* runs timed, count */
    uint64_t est_ns;    /* estimated total time, ns (0: never timed) */
    uint64_t max_ns;    /* longest timed run, ns */
    const struct MFrame *frame;     /* borrowed: the frame it belongs to (set by model_finish) */
} MBreak;

typedef struct MFrame {
    int64_t id;             /* frame id F of [F/C] */
    char *name;             /* co_name */
    char *context;          /* who it runs for: "GPT2Model.forward" behind a wrapper; "" */
    char *file;
    int line;               /* co_firstlineno */
    uint64_t calls, hits, misses;  /* since reset */
    uint64_t n_live;        /* cache entries installed now */
    uint64_t limit;         /* config.cache_size_limit at its last compile, entries */
    uint64_t recompiles;    /* compiles after the first */
    uint64_t breaks;        /* graph breaks recorded */
    uint64_t compile_ns;    /* total compile time, ns */
    FrameStatus status;
    MEntry *entries; size_t n_entries;  /* in compile order */
    MBreak *brks;    size_t n_brks;
    size_t *brk_index;      /* owned: hash of brks (index + 1, 0 empty), brk_cap slots */
    size_t brk_cap;
    uint64_t lookup_timed;  /* guard lookups timed (sampling), count */
    uint64_t lookup_ns;     /* their guard-tree walks, ns: lookup_ns / lookup_timed per call */
    MCostNode *costly; size_t n_costly; /* costliest guard-tree nodes, costliest first */
    MCostTest *costly_tests; size_t n_costly_tests; /* costliest tests, costliest first */
} MFrame;

typedef struct MEvent {
    uint64_t seq;       /* sequence number in the process's event ring */
    uint64_t when_ns;   /* ns since process start; 0 unknown */
    char *kind;         /* "compile", "break", "recompile", "limit", "error", ...: kind_id's text */
    DtEventKind kind_id;    /* DT_EV_* */
    int64_t frame_id;   /* -1 when not about a frame */
    int64_t compile_id;
    char *text;
} MEvent;

typedef struct Model {
    int pid;
    char *python;           /* "3.11.2" */
    char *torch;            /* "2.13.0" */
    char *origin;           /* "pid 1234" or "snapshot FILE" */
    uint64_t uptime_s;
    uint64_t calls, hits, compiles, recompiles, breaks, compile_ns;   /* since reset */
    uint64_t events_lost;   /* ring overwrote events we never saw */
    uint32_t guard_timing;  /* the process's guard cost sampling: 1 of every N lookups, 0 off */
    MFrame *frames; size_t n_frames;
    MEvent *events; size_t n_events;   /* oldest first */
} Model;

Model *model_new(void);
void model_delete(Model *m);

/* Accessors that grow the arrays and return the new zeroed element. */
MFrame *model_add_frame(Model *m);
MEntry *mframe_add_entry(MFrame *f);
MGraph *mentry_add_graph(MEntry *e);
MNode *mgraph_add_node(MGraph *g);
MGuard *mentry_add_guard(MEntry *e);
MResume *mentry_add_resume(MEntry *e);
/* Adds a break or bumps the count of the identical one already there
 * (meaning and hint: the first one's; NULL reads as ""). */
MBreak *mframe_add_break(MFrame *f, const char *reason, const char *file, int line,
                         const char *user_stack, const char *meaning, const char *hint);
MEvent *model_add_event(Model *m);

const MFrame *model_find_frame(const Model *m, int64_t id);
/* The breaks of frame `only` (NULL: of every frame), costliest first (estimated
 * eager time, then compiles): a new array in *out (free it; the breaks are
 * borrowed from m), its length returned.  Call after model_finish. */
size_t model_breaks_by_cost(const Model *m, const MFrame *only, const MBreak ***out);
/* Replaces every NULL string with "" and derives status / totals that the
 * source left at zero.  Call once after filling. */
void model_finish(Model *m);

/* "ok", "break", "LIMIT → eager" (or "LIMIT -> eager"), "error". */
const char *frame_status_label(FrameStatus s, int utf8);

/* ---- reset baseline: the tool's counters, never the process's ---- */

typedef struct BaselineFrame {
    int64_t id;
    uint64_t calls, hits, misses, recompiles, breaks, compile_ns;
} BaselineFrame;

typedef struct Baseline {
    int active;
    uint64_t calls, hits, compiles, recompiles, breaks, compile_ns;
    uint64_t last_seq;                  /* events up to here are hidden */
    BaselineFrame *frames; size_t n_frames;
    /* per-entry hits and per-guard fails, keyed by (frame, compile, guard) */
    struct BaselineCounter { int64_t f, c, g; uint64_t v; } *ctr; size_t n_ctr;
} Baseline;

/* Moves the zero to the counters `m` shows now.  `m` may already have this
 * baseline applied: what it shows is added to the baseline, so the next
 * baseline_apply on a fresh reading shows only what happened since. */
void baseline_take(Baseline *b, const Model *m);
/* Subtracts the baseline from `m` in place (saturating at 0). */
void baseline_apply(const Baseline *b, Model *m);
void baseline_free(Baseline *b);

#endif
