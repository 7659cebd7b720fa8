/* inspect/snapshot.h — what the reader decodes a region into (reader.h's
 * dr_snapshot returns it): a process's codes, cache entries, compile
 * records, events and deduplicated breaks, as plain structs.
 *
 * Owns: those types, their freeing and the lookups inside one snapshot
 * (inspect/snapshot.c, which also decodes them).  Ownership: a DrSnapshot
 * owns every string and array reachable from it (all freed by
 * dr_snapshot_free); pointers between its objects (entry -> code, guard ->
 * entry) are borrowed and valid while the snapshot lives.  Strings are
 * never NULL ("" when absent) and are NUL-terminated UTF-8.  Statuses and
 * kinds come as the enums of record.h, with their texts beside them.
 */
#ifndef DYNAMO_INSPECT_SNAPSHOT_H
#define DYNAMO_INSPECT_SNAPSHOT_H

#include <stddef.h>     /* size_t */
#include <stdint.h>     /* uint64_t */
#include "record.h"     /* DtRecStatus, DtResumeKind, DtEventKind: what the tools switch on */

typedef struct DrCode DrCode;
typedef struct DrEntry DrEntry;
typedef struct DrRecord DrRecord;

typedef struct {
    int pid;
    int exited;                 /* 1: the process is gone or ran its atexit (last state kept) */
    int from_file;              /* 1: a snapshot file */
    int anonymous;              /* 1: region reached through the anchor (no shm file) */
    uint64_t start_ns;          /* process telemetry start, CLOCK_REALTIME ns */
    uint64_t snapshot_ns;       /* when this state was taken/saved, CLOCK_REALTIME ns */
    uint64_t exit_ns;           /* 0 unless known */
    uint32_t version;           /* layout version */
    const char *python_version, *torch_version, *dynamo_version, *argv, *shm_path;
    uint64_t publishes;         /* compile records published, count */
    uint64_t blobs_dropped;     /* region full: data lost, count */
    uint64_t slots_dropped;     /* code/entry slots refused, count */
    uint32_t blob_used, blob_cap; /* bytes */
    uint32_t guard_timing;      /* guard cost sampling: 1 of every N lookups timed, 0 off */
} DrProcess;

/* An fx node of a captured graph. */
typedef struct {
    const char *op;             /* placeholder, get_attr, call_function, call_method, call_module, output */
    const char *name;           /* unique within the graph */
    const char *target;         /* "torch.add", "relu", "layer1.0.conv1" */
    const char *args;           /* text of args and kwargs */
    const char *dtype, *shape, *stride, *device;   /* tensor meta, "" when unknown */
    const char *module_path;    /* qualified nn.Module path ("layer1.0.conv1"): the module a
                                   call_module calls, else the innermost module whose forward
                                   made the node; "" at the frame's top level */
    const char *module_class;   /* class name of that module ("Conv2d"), "" if none */
    const char **users;         /* names of nodes using this one */
    size_t n_users;
    const char **inputs;        /* names of nodes in args/kwargs (edges for dynamo-dot) */
    size_t n_inputs;
    uint32_t ddp_bucket;        /* 1 + index into its graph's buckets; 0: graph not cut */
} DrNode;

/* One piece of a graph cut at DistributedDataParallel's gradient buckets. */
typedef struct {
    const char **params;        /* qualified parameter names the piece's bucket holds */
    size_t n_params;
} DrBucket;

typedef struct {
    const char *name;           /* "__compiled_fn_3" */
    uint64_t op_count;          /* count */
    DrNode *nodes;              /* graph order */
    size_t n_nodes;
    const char *backend_note;   /* the backend's word on this graph (autotune's choice), "" */
    DrBucket *buckets;          /* DDP bucket pieces, first piece first; none when not cut */
    size_t n_buckets;
} DrGraph;

typedef struct {
    const char *text;           /* Guard.describe(): " - local 'a' TENSOR_MATCH ..." */
    const char *kind;           /* "TENSOR_MATCH" */
    const char *source;         /* "L['a']" */
    const char *detail;         /* expected value text, may be "" */
    const char *origin;         /* "path/file.py:12": the user line whose tracing installed it; "" */
    const char *origin_text;    /* that line's source (or what installed it), may be "" */
    uint64_t fail_count;        /* misses where this guard failed first in the closest entry, count */
    int last_failed;            /* 1: the entry's last recorded failure was this guard */
} DrGuard;

typedef struct {
    const char *filename;
    uint32_t lineno;
    const char *name;           /* function */
    const char *line;           /* source line text, may be "" */
} DrFrame;

/* One graph break (per record), or a deduplicated one (DrSnapshot.breaks). */
typedef struct {
    const char *reason;
    const char *filename;
    uint32_t lineno;
    DrFrame *user_stack;        /* innermost last */
    size_t n_frames;
    uint64_t count;             /* dedup: records that broke here for this reason, count */
    const char *first_record;   /* dedup: "[F/C]" of the first record with it */
    const char *kind;           /* dynamo/break_hints.py's kind ("data_dependent_branch"), "" */
    const char *meaning;        /* the reason in user words; "" = the reason itself */
    const char *hint;           /* what the user can do; "" none (an older writer) */
    /* The eager region of the break (the code run between its graph and the
     * resume call; layout.h DT_BT_*), from its entry's DtEntry.break_time;
     * dedup: summed over the records (max_ns the largest). */
    uint64_t calls;             /* runs, count */
    uint64_t samples;           /* runs timed, count */
    uint64_t sampled_ns;        /* time of the timed runs, cumulative ns */
    uint64_t max_ns;            /* longest timed run, ns */
    uint64_t est_ns;            /* estimated total: sampled_ns / samples * calls, ns; 0 untimed */
} DrBreak;

/* The mean time of one run of a break's eager region (ns), 0 when none was
 * timed: est_ns / calls, which for one record is sampled_ns / samples. */
static inline uint64_t
dr_break_ns_per_run(const DrBreak *b)
{
    return b->calls && b->samples ? b->est_ns / b->calls : 0;
}

/* One node of a guard decision tree (as published with the newest compile of
 * the code).  Counters live (DrTree.live: bumped by every walk) or as of
 * DrTree.counters_ns (see layout.h). */
typedef struct {
    int64_t id;
    int64_t parent;             /* index into DrTree.nodes, -1 for the root */
    uint32_t depth;
    const char *via;            /* branch taken from the parent: "= 10", "default", "" */
    const char **tests;         /* "L['a'].dtype == torch.float32", ... */
    size_t n_tests;
    const char *switch_on;      /* "L['a'].size()[0]" or "" */
    const char **leaf;          /* entries tested at a leaf, "" if inner node */
    size_t n_leaf;
    uint64_t evaluations;       /* walks that entered the node, count */
    uint64_t failures;          /* walks that found no candidate below, count */
    uint64_t timed;             /* timed walks that entered the node, count (0: no timing) */
    uint64_t timed_ns;          /* their time in the node's own tests, cumulative, ns */
} DrTreeNode;

/* One test slot of a guard tree: a test the walk runs (a node's shared
 * test, its switch, a leaf entry's test), with the time timed walks spent
 * in it (the test and the first fetch of its source: a Python
 * __getattribute__ or property on the way shows here). */
typedef struct {
    int64_t node;               /* index into DrTree.nodes, -1 unknown */
    const char *text;           /* "L['x'].dtype == torch.float32"; "switch on L['n']" */
    const char *source;         /* "L['x']" */
    const char *entry;          /* "[F/C]" of the entry the test is of, "" for a switch */
    int64_t guard_index;        /* index into that entry's record guards, -1 none */
    const DrGuard *guard;       /* borrowed: that guard (its origin line), or NULL */
    uint64_t timed;             /* timed walks that ran it, count */
    uint64_t timed_ns;          /* their time in it, cumulative ns */
    uint64_t max_ns;            /* the longest of those runs, ns */
} DrTreeTest;

/* A tree test's time over its timed runs with the longest run counted as
 * the mean of the others (a run the scheduler preempted would otherwise
 * name a cheap test the costliest), ns; timed_ns for one run. */
static inline uint64_t
dr_tree_test_est_ns(const DrTreeTest *t)
{
    if (t->timed < 2 || t->max_ns > t->timed_ns)
        return t->timed_ns;
    double rest = (double)(t->timed_ns - t->max_ns);
    return (uint64_t)(rest * (double)t->timed / (double)(t->timed - 1));
}

typedef struct {
    DrTreeNode *nodes;          /* depth-first; nodes[0] is the root */
    size_t n_nodes;
    DrTreeTest *tests;          /* test slots in walk order (none from an older writer) */
    size_t n_tests;
    uint64_t counters_ns;       /* when the node counters were taken, CLOCK_REALTIME ns; 0 unknown */
    int live;                   /* the counters are the writer's live ones (bumped by every
                                   walk), read at the snapshot; counters_ns: when bound */
} DrTree;

/* A resume function a compile generated (it continues the frame after the
 * graph break).  `code` links to its compiles once it ran. */
typedef struct {
    const char *name;           /* "__resume_at_102_0" (co_name) */
    uint32_t offset;            /* bytecode offset it resumes at, in the function the break was cut from */
    DtResumeKind kind;          /* DT_RK_BRANCH (jump target), DT_RK_FALLTHROUGH (jump not
                                   taken), DT_RK_AFTER (after the instruction run eagerly at
                                   the break), DT_RK_UNKNOWN */
    const char *kind_name;      /* its text as written: "branch", ...; "" unknown */
    DrCode *code;               /* borrowed: the code of that name (the live one, else the
                                   newest), or NULL when it never ran */
} DrResume;

/* What a resume kind means, for people: "branch taken", "fall-through",
 * "after break"; an unknown kind as its text `name`, "" as "?".  Static or
 * `name` itself. */
const char *dr_resume_kind_label(DtResumeKind kind, const char *name);

/* One compile record (any status). */
struct DrRecord {
    uint32_t frame_id, compile_id;
    const char *id;             /* "[F/C]" */
    DtRecStatus status;         /* DT_RS_OK, DT_RS_ERROR, ... (record.h); DT_RS_UNKNOWN */
    const char *status_name;    /* its text as written: "ok", "limit", ... */
    const char *backend;
    const char *name, *filename;
    uint32_t firstlineno;
    uint64_t start_ns;          /* CLOCK_REALTIME ns */
    uint64_t compile_ns, backend_ns; /* ns */
    uint64_t op_count;          /* count */
    const char *recompile_reason; /* "" unless a guard failure caused it */
    const char *error;
    const char *context;        /* who the frame runs for ("GPT2Model.forward"), may be "" */
    const char *original_bytecode, *modified_bytecode;  /* dis listings */
    DrGraph *graphs; size_t n_graphs;
    DrGuard *guards; size_t n_guards;
    DrBreak *breaks; size_t n_breaks;
    DrResume *resumes; size_t n_resumes;   /* in creation order */
    DrEntry *entry;             /* borrowed: its cache entry (status "ok"), or NULL */
    DrCode *code;               /* borrowed */
};

struct DrEntry {
    uint32_t slot;              /* entry slot in the region */
    uint32_t frame_id, compile_id;
    const char *id;             /* "[F/C]" */
    int dead;                   /* 1: dropped from the cache */
    uint64_t hits;              /* count */
    uint64_t guard_failures;    /* misses where this entry was the closest, count */
    uint64_t compile_ns;        /* ns */
    uint64_t created_ns;        /* CLOCK_REALTIME ns */
    int64_t last_fail_guard;    /* index into record->guards, -1 never */
    uint64_t last_fail_ns;      /* CLOCK_REALTIME ns, 0 never */
    const char *last_fail_property, *last_fail_expected, *last_fail_actual;
    uint64_t hit_timed;         /* timed lookups that selected it, count */
    uint64_t hit_ns;            /* their walks, cumulative, ns */
    DrRecord *record;           /* borrowed: never NULL */
    DrCode *code;               /* borrowed */
};

struct DrCode {
    uint32_t slot;              /* code slot in the region */
    uint32_t frame_id;          /* F; UINT32_MAX if unknown */
    const char *name, *filename;
    uint32_t firstlineno;
    int dead, limit_hit, skipped;
    uint64_t calls, hits, misses, guard_failures;  /* count */
    uint64_t compiles;          /* count */
    uint64_t compile_ns;        /* cumulative, ns */
    uint32_t cache_size_limit;  /* entries: config.cache_size_limit at its last compile */
    uint64_t lookup_timed;      /* lookups timed (guard cost sampling), count */
    uint64_t lookup_ns;         /* their guard-tree walks, cumulative, ns */
    DrEntry **entries;          /* borrowed; newest first (dead ones included, flagged) */
    size_t n_entries;
    DrRecord **records;         /* borrowed; every compile record of this code, oldest first */
    size_t n_records;
    DrTree tree;                /* latest published guard tree (n_nodes 0 if none) */
};

typedef DtEventKind DrEventKind;    /* DT_EV_* (record.h) */

typedef struct {
    uint64_t seq;               /* 1, 2, ... (gaps: overwritten by the ring) */
    uint64_t time_ns;           /* CLOCK_REALTIME ns */
    DrEventKind kind;
    const char *kind_name;      /* "compile", "break", "recompile", "limit", "error", "reset" */
    int64_t frame_id, compile_id; /* -1 if none */
    const char *id;             /* "[F/C]" or "" */
    const char *text;           /* reason / failing guard / status */
    const char *where;          /* "file:line" or "" */
    int64_t guard_index;        /* RECOMPILE/LIMIT: failing guard of the closest entry, -1 */
    const char *property, *expected, *actual; /* RECOMPILE/LIMIT, else "" */
    DrCode *code;               /* borrowed, or NULL */
    DrEntry *entry;             /* borrowed, or NULL */
} DrEvent;

typedef struct {
    DrProcess process;
    DrCode *codes; size_t n_codes;          /* slot order (first compiled first) */
    DrEntry *entries; size_t n_entries;     /* slot order */
    DrRecord *records; size_t n_records;    /* publish order */
    DrEvent *events; size_t n_events;       /* oldest first; at most events_cap */
    DrBreak *breaks; size_t n_breaks;       /* deduplicated over all records, by
                                               (reason, filename, lineno), most frequent first */
    uint64_t total_calls, total_hits, total_misses; /* sums over codes, count */
    void *priv;                 /* reader's arena; do not touch */
} DrSnapshot;

/* The at most `max` tests of tree t with the most time in them
 * (dr_tree_test_est_ns, ties: slot order) into out[], costliest first; tests never timed are left
 * out.  Returns how many. */
size_t dr_tree_costliest(const DrTree *t, const DrTreeTest **out, size_t max);

/* Free a snapshot and everything it owns; NULL accepted. */
void dr_snapshot_free(DrSnapshot *s);

/* Lookups inside a snapshot (borrowed results, NULL when absent). */
DrCode *dr_find_code(DrSnapshot *s, uint32_t frame_id);
DrEntry *dr_find_entry(DrSnapshot *s, uint32_t frame_id, uint32_t compile_id);

#endif /* DYNAMO_INSPECT_SNAPSHOT_H */
