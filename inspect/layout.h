/* inspect/layout.h — the telemetry region: the one contract between a
 * process running dynamo (the writer, core/telemetry.c inside dynamo._C) and
 * the tools that read it (inspect/reader.c, dynamo-top, dynamo-dot).
 *
 * Owns: the byte layout of the region, of a snapshot file (the same bytes,
 * cut after the used part of the blob area), of the anchor symbol, and of
 * the blobs.  Plain C11, no Python, no libc beyond <stdint.h>: both sides
 * include it.  Every field is fixed width, little endian (x86-64 only), and
 * every counter says its unit.  Changing any struct, constant or blob schema
 * here means bumping DT_VERSION: readers refuse other versions.
 *
 * Region (one per process; /dev/shm/dynamo-<pid>, mode 0600, created with
 * O_EXCL by the writer, its space reserved, mapped MAP_SHARED and held with
 * a shared flock while the writer lives; or anonymous memory found through
 * the anchor):
 *
 *   [0, DT_HEADER_SIZE)        DtHeader
 *   [codes_off, ...)           DtCode   codes[codes_cap]     one per code object
 *   [entries_off, ...)         DtEntry  entries[entries_cap] one per cache entry
 *   [events_off, ...)          DtEvent  events[events_cap]   ring, by seq % cap
 *   [blob_off, blob_off+blob_cap)  blobs, append-only; blob_used bytes used
 *
 * Concurrency.  One writer at a time (the writer runs under the GIL).
 * Structural changes (new slots, new blobs, events, last-failure texts,
 * flags) happen between two increments of DtHeader.seq: odd while writing,
 * even when stable (a seqlock).  Counters (hits, misses, ...) are bumped
 * without the seqlock, each a naturally aligned 64-bit store: a reader sees
 * each counter whole and monotonic, but not all counters of one instant.
 * Readers copy the region, then re-read seq: equal and even = consistent.
 * Blobs are append-only and never rewritten, except DT_BLOB_COUNTERS
 * payloads (arrays of u64 counters bumped or refreshed in place) and a
 * code's TREE and COUNTERS blobs, which the writer rewrites in place inside
 * the seqlock while a republished tree fits the space it reserved for them
 * (so the blob area grows linearly in a recompile storm).  A reader follows
 * refs only: bytes between blobs are unspecified.
 *
 * dynamo.reset() starts the region over (inside the seqlock) when no cache
 * entry or guard tree holding a slot is alive: n_codes, n_entries and the
 * blob area go back to zero, and the events of the ring keep their seq,
 * kind and times, their texts moved to the start of the blob area, their
 * code_slot / entry_slot set to UINT32_MAX.  Header totals (publishes,
 * *_dropped, n_events) are kept.  So compile/reset cycles reuse the same
 * pages instead of filling the region.
 *
 * Guard-tree node counters: once a tree is published, DtCode.tree_counters
 * are its live counters, bumped by every walk (DT_C_LIVE_TREE set).  A tree
 * rebuilt without a publish clears the flag: tree_counters are then a copy
 * as of DtCode.counters_ns, refreshed at each compile record published by
 * the process and at each dynamo.save_snapshot / dynamo.telemetry.refresh().
 */
#ifndef DYNAMO_INSPECT_LAYOUT_H
#define DYNAMO_INSPECT_LAYOUT_H

#include <stdint.h>

#include "record.h"     /* the record's schemas and statuses, DT_EV_* */

#define DT_MAGIC        "DYNTELEM"  /* 8 bytes, no NUL: DtHeader.magic */
#define DT_VERSION      4u          /* 4: guard cost: DtHeader.guard_timing, DtCode.
                                       lookup_timed/lookup_ns (144 bytes), DtEntry.
                                       hit_timed/hit_ns, 4 tree counters per node.
                                       3: DtHeader.proc_start; capacities sized from
                                       the free space of /dev/shm.  2: DtCode.
                                       cache_size_limit, tree_counters; RECORD resumes,
                                       NODE module_class */
#define DT_HEADER_SIZE  4096u       /* bytes; DtHeader is padded to this */

/* Default capacities (the header carries the real ones: readers must use
 * those).  Region ~ 54 MiB.  A /dev/shm file is reserved whole
 * (posix_fallocate: a full tmpfs must not kill the writer with SIGBUS), so
 * the writer divides every capacity by the same power of two, down to
 * 1/64, until the region takes at most a quarter of the free space. */
#define DT_CODES_CAP    4096u
#define DT_ENTRIES_CAP  16384u
#define DT_EVENTS_CAP   4096u
#define DT_BLOB_CAP     (48u << 20)

/* The largest region the writer makes (the default capacities): readers
 * refuse a header, file or anchor claiming more (bytes).  Not part of the
 * layout: a writer with other capacities must stay below it. */
#define DT_REGION_MAX   ((uint64_t)DT_HEADER_SIZE + (uint64_t)DT_CODES_CAP * 144u \
                         + (uint64_t)DT_ENTRIES_CAP * 320u + (uint64_t)DT_EVENTS_CAP * 128u \
                         + DT_BLOB_CAP)

/* DtHeader.flags */
#define DT_F_EXITED     0x1u        /* atexit ran: the process is going away */
#define DT_F_SNAPSHOT   0x2u        /* this is a saved snapshot file */
#define DT_F_ANON       0x4u        /* region is anonymous memory (no shm file) */
#define DT_F_BLOB_FULL  0x8u        /* a blob did not fit; see blobs_dropped */
#define DT_F_SLOTS_FULL 0x10u       /* a code or entry slot was refused */

/* A reference into the blob area: offset from blob_off, length in bytes.
 * {0, 0} is "none".  A reader must check off + len <= blob_used. */
typedef struct {
    uint32_t off;                   /* bytes from the start of the blob area */
    uint32_t len;                   /* bytes */
} DtRef;
_Static_assert(sizeof(DtRef) == 8, "DtRef");

typedef struct {
    char magic[8];                  /* DT_MAGIC */
    uint32_t version;               /* DT_VERSION */
    uint32_t header_size;           /* bytes: DT_HEADER_SIZE */
    uint64_t region_size;           /* bytes: whole region (snapshot: file size) */
    uint64_t seq;                   /* seqlock: odd while the writer changes structure */
    uint64_t pid;                   /* writer's process id */
    uint64_t start_ns;              /* writer init time, CLOCK_REALTIME ns since epoch */
    uint64_t snapshot_ns;           /* snapshot files: save time, CLOCK_REALTIME ns; else 0 */
    uint64_t exit_ns;               /* DT_F_EXITED: exit time, CLOCK_REALTIME ns; else 0 */
    uint32_t flags;                 /* DT_F_* */
    uint32_t reserved0;
    /* geometry: offsets in bytes from the region start, capacities in slots */
    uint64_t codes_off;
    uint64_t entries_off;
    uint64_t events_off;
    uint64_t blob_off;
    uint32_t codes_cap;             /* slots */
    uint32_t entries_cap;           /* slots */
    uint32_t events_cap;            /* slots */
    uint32_t blob_cap;              /* bytes */
    /* fill levels (written inside the seqlock) */
    uint32_t n_codes;               /* slots used, count */
    uint32_t n_entries;             /* slots used, count */
    uint64_t n_events;              /* events ever written, count; next seq = n_events + 1 */
    uint32_t blob_used;             /* bytes */
    uint32_t reserved1;
    uint64_t blobs_dropped;         /* blobs refused for lack of space, count */
    uint64_t slots_dropped;         /* code/entry slots refused, count */
    uint64_t publishes;             /* compile records published, count */
    /* process identity, NUL-terminated UTF-8 */
    char python_version[32];        /* "3.11.9" */
    char torch_version[32];         /* "2.13.0+cpu" or "" until torch is imported */
    char dynamo_version[32];
    char argv[512];                 /* command line, arguments separated by ' ' */
    char shm_path[64];              /* "/dev/shm/dynamo-<pid>" or "" (anonymous) */
    uint64_t proc_start;            /* writer's process start: clock ticks after boot, field 22
                                       of /proc/PID/stat (inspect/procid.h); readers refuse a
                                       shm file whose pid is alive with another start time */
    uint32_t guard_timing;          /* guard cost sampling: 1 of every guard_timing lookups
                                       is timed (DtCode.lookup_*, DtEntry.hit_*, the tree's
                                       timed counters); 0 off.  Written by the process
                                       (dynamo.config.guard_timing, DYNAMO_GUARD_TIMING) and
                                       by a reader (dynamo-top's `g`: dr_set_guard_timing),
                                       read by the hook at every lookup */
    uint32_t reserved2;
    uint8_t pad[4096 - 856];
} DtHeader;
_Static_assert(sizeof(DtHeader) == DT_HEADER_SIZE, "DtHeader must fill its page");
_Static_assert(__builtin_offsetof(DtHeader, proc_start) == 840, "DtHeader.proc_start: after shm_path");
_Static_assert(__builtin_offsetof(DtHeader, guard_timing) == 848, "DtHeader.guard_timing: after proc_start");

/* The default of DtHeader.guard_timing when sampling is switched on without
 * a period (dynamo-top's `g`, DYNAMO_GUARD_TIMING=1 means every lookup). */
#define DT_GUARD_TIMING_DEFAULT 64u

/* DtCode.flags / DtEntry.flags */
#define DT_C_DEAD       0x1u        /* code object freed (counters frozen) */
#define DT_C_LIMIT      0x2u        /* hit config.cache_size_limit */
#define DT_C_SKIP       0x4u        /* marked skip (unsupported in nopython, errors) */
#define DT_C_LIVE_TREE  0x8u        /* tree_counters are the live counters of the tree
                                       `tree` describes, bumped by every walk (clear:
                                       a copy as of counters_ns) */
#define DT_E_DEAD       0x1u        /* entry dropped (reset, clear_cache, dead weakref) */
#define DT_E_RECORD     0x2u        /* record only: a compile that made no cache entry
                                       (status skipped/error/limit/unsupported) */

/* One code object that has compile records.  Counters from the hook. */
typedef struct {
    uint32_t frame_id;              /* F of [F/C]; UINT32_MAX until a record names it */
    uint32_t flags;                 /* DT_C_* */
    uint64_t calls;                 /* frames of this code seen by the hook with a cache, count */
    uint64_t hits;                  /* of those, guard tree hits, count */
    uint64_t misses;                /* of those, misses, count */
    uint64_t guard_failures;        /* misses with a closest entry (a guard failed), count */
    uint64_t compiles;              /* compile records published, count */
    uint64_t compile_ns;            /* cumulative compile time, ns */
    uint64_t first_ns;              /* slot creation, CLOCK_REALTIME ns */
    DtRef name;                     /* DT_BLOB_TEXT: co_name */
    DtRef filename;                 /* DT_BLOB_TEXT: co_filename */
    uint32_t firstlineno;           /* line */
    uint32_t n_entries;             /* entry slots made for this code, count */
    DtRef tree;                     /* DT_BLOB_TREE: latest guard tree, or none */
    uint32_t last_entry;            /* newest entry slot index + 1, 0 = none */
    uint32_t cache_size_limit;      /* entries: config.cache_size_limit at the last compile */
    DtRef tree_counters;            /* DT_BLOB_COUNTERS: u64[DT_TREE_NODE_COUNTERS * TREE
                                       nodes], per node in TREE order (evaluations,
                                       failures, counts; timed, count, timed_ns, ns: see
                                       DT_TREE_NODE_COUNTERS), then u64[DT_TREE_SLOT_COUNTERS
                                       * TREE tests] per test slot; bumped in place
                                       (DT_C_LIVE_TREE) or rewritten by each refresh; none
                                       until the first tree */
    uint64_t counters_ns;           /* last refresh of tree_counters, CLOCK_REALTIME ns; 0 never */
    uint8_t pad[8];
    uint64_t lookup_timed;          /* lookups timed (DtHeader.guard_timing sampling), count */
    uint64_t lookup_ns;             /* their guard-tree walks, cumulative, ns (CLOCK_MONOTONIC;
                                       ns per lookup = lookup_ns / lookup_timed) */
} DtCode;
_Static_assert(sizeof(DtCode) == 144, "DtCode");

/* Counters per guard-tree node in DtCode.tree_counters, in this order:
 * evaluations (walks that entered the node), failures (walks that found no
 * candidate below it), counts; timed (timed walks that entered it), count;
 * timed_ns (their time in the node's own tests, children excluded), ns.
 * The names are _C.TREE_NODE_COUNTERS (guards/tree_py.c); core/telemetry.c
 * pins GTREE_NODE_COUNTERS to this. */
#define DT_TREE_NODE_COUNTERS 4u

/* Counters per test slot in DtCode.tree_counters, after the nodes' (a
 * slot is a test a walk runs: TREE's `tests` list, in its order): timed
 * (timed walks that ran it), count; timed_ns (their time in it: the test
 * and the first fetch of its source), ns; max_ns (the longest run, ns:
 * readers leave it out of their estimate, a run the scheduler preempted
 * lands there).  The names are
 * _C.TREE_SLOT_COUNTERS; core/telemetry.c pins GTREE_SLOT_COUNTERS to it.
 * A writer before them published the node counters alone. */
#define DT_TREE_SLOT_COUNTERS 3u

/* DtEntry.break_time: the eager region of the entry's graph break (the code
 * its rewritten bytecode runs between the end of its graph call and the
 * call of a resume function), counted and sampled by core/breakprobe.c; all
 * zero for an entry without a break, and in a writer older than them. */
enum {
    DT_BT_CALLS,                    /* runs of the region, count */
    DT_BT_SAMPLES,                  /* runs timed (one in the sampling period), count */
    DT_BT_NS,                       /* time of the timed runs, cumulative ns (monotonic clock;
                                       compiles inside the region left out) */
    DT_BT_MAX_NS,                   /* longest timed run, ns */
    DT_BT_N
};

/* One compile record: a cache entry (status "ok"), or a record only
 * (DT_E_RECORD).  Slots are never reused: this table is the compile log. */
typedef struct {
    uint32_t frame_id;              /* F */
    uint32_t compile_id;            /* C */
    uint32_t code_slot;             /* index into codes */
    uint32_t flags;                 /* DT_E_* */
    uint64_t hits;                  /* guard tree hits selecting this entry, count */
    uint64_t guard_failures;        /* misses where this entry was the closest, count */
    uint64_t compile_ns;            /* compile time of this entry, ns */
    uint64_t created_ns;            /* CLOCK_REALTIME ns */
    DtRef record;                   /* DT_BLOB_RECORD of this compile */
    DtRef fail_counts;              /* DT_BLOB_COUNTERS: u64[n_guards], failures per guard, count */
    uint32_t n_guards;              /* count */
    uint32_t last_fail_guard;       /* index of the last failing guard; UINT32_MAX = never */
    uint64_t last_fail_ns;          /* CLOCK_REALTIME ns, 0 = never */
    char last_fail_property[24];    /* "size()[0]", "dtype", ... (NUL-terminated) */
    char last_fail_expected[80];    /* repr, truncated, NUL-terminated */
    char last_fail_actual[80];      /* repr, truncated, NUL-terminated; "<missing>" */
    uint64_t hit_timed;             /* timed lookups (DtHeader.guard_timing) selecting this
                                       entry, count */
    uint64_t hit_ns;                /* their guard-tree walks, cumulative, ns */
    uint64_t break_time[DT_BT_N];   /* DT_BT_*: the break's eager region, bumped live by the
                                       probe while the entry lives (core/breakprobe.c) */
    uint8_t pad[8];
} DtEntry;
_Static_assert(sizeof(DtEntry) == 320, "DtEntry");
_Static_assert(__builtin_offsetof(DtEntry, break_time) == 280, "DtEntry.break_time: in the old pad");

/* DtEvent.kind: DT_EV_* (DtEventKind), declared in record.h's DT_EVENT_KINDS. */

/* One event of the ring: slot seq % events_cap.  A reader keeps an event
 * only when its seq matches the one it expects for that slot. */
typedef struct {
    uint64_t seq;                   /* 1, 2, ...; 0 = empty slot */
    uint64_t time_ns;               /* CLOCK_REALTIME ns */
    uint32_t kind;                  /* DT_EV_* */
    uint32_t frame_id;              /* F, or UINT32_MAX */
    uint32_t compile_id;            /* C, or UINT32_MAX */
    uint32_t code_slot;             /* index into codes, or UINT32_MAX */
    uint32_t entry_slot;            /* index into entries, or UINT32_MAX */
    uint32_t guard_index;           /* RECOMPILE: failing guard of the closest entry, or UINT32_MAX */
    DtRef text;                     /* DT_BLOB_TEXT: see DT_EV_* */
    DtRef where;                    /* DT_BLOB_TEXT: "file:line" or none */
    DtRef expected;                 /* DT_BLOB_TEXT: RECOMPILE/LIMIT expected value, or none */
    DtRef actual;                   /* DT_BLOB_TEXT: RECOMPILE/LIMIT actual value, or none */
    DtRef property;                 /* DT_BLOB_TEXT: failing property ("dtype"), or none */
    uint8_t pad[48];
} DtEvent;
_Static_assert(sizeof(DtEvent) == 128, "DtEvent");

/* ---- blobs -----------------------------------------------------------------
 * Each blob starts with a DtBlob header (8-byte aligned); a DtRef points at
 * the header and its len covers header + payload. */

#define DT_BLOB_MAGIC    0x31425444u /* "DTB1" */
#define DT_BLOB_TEXT     1u          /* payload: UTF-8 bytes (no NUL) */
#define DT_BLOB_RECORD   2u          /* payload: one DtValue, schema "RECORD" below */
#define DT_BLOB_TREE     3u          /* payload: one DtValue, schema "TREE" below */
#define DT_BLOB_COUNTERS 4u          /* payload: u64 counters (8-aligned), bumped in place */

typedef struct {
    uint32_t magic;                 /* DT_BLOB_MAGIC */
    uint16_t type;                  /* DT_BLOB_* */
    uint16_t version;               /* schema version of the payload: 1 */
    uint32_t len;                   /* payload bytes (after this header) */
    uint32_t reserved;
} DtBlob;
_Static_assert(sizeof(DtBlob) == 16, "DtBlob");

/* DtValue: the self-describing encoding of RECORD and TREE payloads.
 *   'i' int64 (8 bytes LE)                 integer
 *   's' u32 len, len bytes of UTF-8        string
 *   'l' u32 count, count DtValues          list
 * Nesting is at most DT_VALUE_MAX_DEPTH; readers enforce it and check every
 * length against the payload end.  Schemas are positional lists; a reader
 * treats a missing trailing item or an item of the wrong type as empty
 * ("" / 0 / []), so later versions may append items.
 *
 * RECORD, GRAPH, NODE, GUARD, BREAK, FRAME and RESUME: the field lists of
 * record.h (DT_RECORD_FIELDS, ...), their one declaration; statuses
 * DT_REC_STATUSES, resume kinds DT_RESUME_KINDS.  A NODE's module_path is
 * the qualified nn.Module path ("layer1.0.conv1": for call_module the
 * module called, else the innermost module whose forward made the node;
 * relative to the frame's `self`, other roots keep their name ("model.fc");
 * "" at the top level).
 * TREE   = [frame_id i, nodes [TNODE], tests [TTEST]], nodes in depth-first order;
 *   tests: every test a walk runs (its slot), node by node: a node's shared
 *   tests, its switch, its leaf entries' tests
 * TTEST  = [node i, test s ("L['x'].dtype == torch.float32"; a switch:
 *   "switch on <property>"), source s ("L['x']"), entry s ("[F/C]" of the
 *   test's entry, "" for a switch), guard i (index in that entry's record
 *   GUARD list, -1 for a switch)]
 * TNODE  = [id i, parent i (-1 root), depth i, via s ("=" value, "default",
 *   "" for the root), tests [s], switch s ("" if none), leaf [s] (entries
 *   "[F/C] n tests" when a leaf), evaluations i (count), failures i (count),
 *   newest i]; evaluations/failures as of the publish: DtCode.tree_counters
 *   carries newer values when its length matches the tree
 */
#define DT_VALUE_MAX_DEPTH 8

/* Item positions of TREE's test list and of a TTEST (the schemas above). */
enum { DT_TREE_ITEM_TESTS = 2 };
enum { DT_TTEST_NODE, DT_TTEST_TEXT, DT_TTEST_SOURCE, DT_TTEST_ENTRY, DT_TTEST_GUARD };

/* ---- the anchor --------------------------------------------------------------
 * Exported from dynamo._C (default visibility) as `dynamo_telemetry_anchor`.
 * Readers find it with libelf (dynamic symbol table of the mapped .so) and
 * read it with process_vm_readv; it locates the region in the writer's
 * address space when the shm file is not reachable. */
#define DT_ANCHOR_SYMBOL "dynamo_telemetry_anchor"
#define DT_ANCHOR_MAGIC  "DYNANCHR"

typedef struct {
    char magic[8];                  /* DT_ANCHOR_MAGIC */
    uint32_t version;               /* DT_VERSION */
    uint32_t size;                  /* bytes: sizeof(DtAnchor) */
    uint64_t region_addr;           /* writer's address of the region, 0 = none */
    uint64_t region_size;           /* bytes */
    uint32_t enabled;               /* 0: DYNAMO_TELEMETRY=0 or init failed */
    uint32_t init_errno;            /* errno of a failed region creation, else 0 */
    char shm_path[64];              /* as DtHeader.shm_path */
    uint8_t pad[8];
} DtAnchor;
_Static_assert(sizeof(DtAnchor) == 112, "DtAnchor");

#endif /* DYNAMO_INSPECT_LAYOUT_H */
