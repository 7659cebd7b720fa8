/* core/telemetry.c — the telemetry writer (part of dynamo._C).
 *
 * Owns the region of this process (layout.h) and everything written to it:
 * creation at module load (never a file it did not create; its space
 * reserved, so that a full /dev/shm cannot SIGBUS the process), the anchor
 * symbol, slots, blobs, events, the
 * seqlock, snapshots, EXITED + unlink at exit, and the detachment of forked
 * children.  Structural writes happen under the GIL between seq_begin() and
 * seq_end(); counters are bumped by the hook with the inline functions of
 * telemetry.h.  Its Python functions (_telemetry_*) are telemetry_py.c,
 * which reaches the region through telemetry_int.h only.  It must never
 * make a compile or a call fail: what the bindings call raises
 * (dynamo/telemetry.py catches everything), the hook-facing functions
 * swallow their own errors.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <errno.h>      /* errno */
#include <fcntl.h>      /* open */
#include <pthread.h>    /* pthread_atfork */
#include <signal.h>     /* sigaction: removal on fatal signals */
#include <stdio.h>      /* snprintf */
#include <stdlib.h>     /* atexit, getenv */
#include <string.h>     /* memcpy, memset */
#include <sys/file.h>   /* flock: a live writer holds its shm file */
#include <sys/mman.h>   /* mmap */
#include <sys/stat.h>   /* fchmod, fstat */
#include <sys/statvfs.h> /* fstatvfs: the region is sized from the free space */
#include <time.h>       /* clock_gettime */
#include <unistd.h>     /* unlink, getpid, close */

#include "telemetry.h"
#include "telemetry_int.h" /* what the bindings (telemetry_py.c) reach */
#include "../inspect/image.h"  /* image_capture, image_save */
#include "../inspect/procid.h" /* procid_start: the header's proc_start */
#include "cache.h"          /* CodeCache, CacheEntry: slots hang off them */
#include "teletext.h"       /* the published texts: a guard tree's TREE payload */

/* Found by readers through the dynamic symbol table (layout.h). */
__attribute__((visibility("default"), used))
DtAnchor dynamo_telemetry_anchor = {
    .magic = {'D', 'Y', 'N', 'A', 'N', 'C', 'H', 'R'},
    .version = DT_VERSION,
    .size = sizeof(DtAnchor),
};

static DtHeader *region;        /* owned mapping; NULL: telemetry off */
static size_t region_len;       /* bytes mapped */
static int region_is_file;      /* mapped from shm_path */
static int region_fd = -1;      /* the shm file, open and flock'ed (LOCK_SH) while the region
                                   lives, so that no cleaner removes it; -1 when anonymous */
static char init_warning[240];  /* why the region is not a shm file, one line; "" when it is
                                   (dynamo/telemetry.py logs it once) */
static pid_t region_pid;        /* the process that created it */
static CodeCache **slot_caches; /* owned array, borrowed items: code slot -> cache while alive */

/* Space of the blob area set aside for one code's guard tree (TREE) or its
 * node counters (COUNTERS): a republished tree that fits is rewritten in
 * place (inside the seqlock), else a new reservation twice its size is
 * made.  Without it every compile of a recompile storm appended the whole
 * tree again: the blob area grew with the square of the entries. */
typedef struct {
    uint32_t off;               /* bytes from the blob area start */
    uint32_t cap;               /* bytes reserved, 0 = none */
} BlobRes;
static BlobRes (*code_res)[2];  /* owned array: code slot -> {tree, counters} reservations */
static int tree_broken;         /* encoding a tree failed once: trees are no longer published */
static int redact;              /* DYNAMO_TELEMETRY_REDACT=1: no string values in the region */
static const CacheWatcher cache_watcher;    /* below: what cache.c tells the writer */
/* Cache entries holding a slot (attached, not yet dead), count: reset()
 * reclaims the region only when none is left. */
static Py_ssize_t entries_held;

/* The closest entry's failure noted on the last COMPILE-mode miss; a
 * RECOMPILE/LIMIT event published for the same code carries it. */
static struct {
    const void *code;           /* compared only */
    uint32_t guard;
    char property[24], expected[80], actual[80];
} last_failure;

/* Guard cost sampling period while no region holds it (telemetry.h). */
static uint32_t timing_local;
uint32_t *telemetry_timing = &timing_local;

_Static_assert(GTREE_NODE_COUNTERS == DT_TREE_NODE_COUNTERS,
               "the tree's node counters are the region's (layout.h)");
_Static_assert(GTREE_SLOT_COUNTERS == DT_TREE_SLOT_COUNTERS,
               "the tree's test slot counters are the region's (layout.h)");

static uint64_t
now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static inline DtCode *
code_table(void)
{
    return (DtCode *)((char *)region + region->codes_off);
}

static inline DtEntry *
entry_table(void)
{
    return (DtEntry *)((char *)region + region->entries_off);
}

static inline uint32_t
code_index(const DtCode *d)
{
    return (uint32_t)(d - code_table());
}

static inline uint32_t
entry_index(const DtEntry *e)
{
    return (uint32_t)(e - entry_table());
}

/* ---- seqlock ------------------------------------------------------------------ */

static void
seq_begin(void)
{
    __atomic_store_n(&region->seq, region->seq + 1, __ATOMIC_RELAXED);    /* odd */
    __atomic_thread_fence(__ATOMIC_RELEASE);
}

static void
seq_end(void)
{
    __atomic_store_n(&region->seq, region->seq + 1, __ATOMIC_RELEASE);    /* even */
}

/* ---- blobs (inside the seqlock) ------------------------------------------------------ */

/* Append a blob of `type` with len payload bytes copied from data (zeros
 * when data is NULL).  The ref, or {0, 0} when it does not fit. */
static DtRef
blob_add(uint16_t type, const void *data, size_t len)
{
    uint64_t used = region->blob_used;
    uint64_t need = (sizeof(DtBlob) + len + 7) & ~(uint64_t)7;
    if (len > UINT32_MAX - 64 || used + need > region->blob_cap) {
        region->blobs_dropped++;
        region->flags |= DT_F_BLOB_FULL;
        return (DtRef){0, 0};
    }
    uint8_t *p = (uint8_t *)region + region->blob_off + used;
    DtBlob head = {.magic = DT_BLOB_MAGIC, .type = type, .version = 1, .len = (uint32_t)len};
    memcpy(p, &head, sizeof head);
    if (data != NULL)
        memcpy(p + sizeof head, data, len);
    else
        memset(p + sizeof head, 0, len);
    region->blob_used = (uint32_t)(used + need);
    return (DtRef){(uint32_t)used, (uint32_t)(sizeof head + len)};
}

static DtRef
blob_text(const char *s, size_t len)
{
    return len == 0 ? (DtRef){0, 0} : blob_add(DT_BLOB_TEXT, s, len);
}

static DtRef
blob_cstr(const char *s)
{
    return blob_text(s, strlen(s));
}

/* Put a blob of `type` (len payload bytes from data) into the reservation
 * *res: in place when it fits, else in a new reservation of twice its size
 * (exactly its size when the area has no room for twice).  The old space
 * of a moved reservation is never reused (a walk of a tree that is being
 * replaced may still bump counters there).  The ref, or {0, 0}. */
static DtRef
blob_put(BlobRes *res, uint16_t type, const void *data, size_t len)
{
    uint64_t need = (sizeof(DtBlob) + len + 7) & ~(uint64_t)7;
    if (len > UINT32_MAX / 4) {
        region->blobs_dropped++;
        region->flags |= DT_F_BLOB_FULL;
        return (DtRef){0, 0};
    }
    if (res->cap < need) {
        uint64_t used = region->blob_used, want = 2 * need;
        if (used + want > region->blob_cap)
            want = need;
        if (used + want > region->blob_cap) {
            region->blobs_dropped++;
            region->flags |= DT_F_BLOB_FULL;
            return (DtRef){0, 0};
        }
        res->off = (uint32_t)used;
        res->cap = (uint32_t)want;
        region->blob_used = (uint32_t)(used + want);
    }
    uint8_t *p = (uint8_t *)region + region->blob_off + res->off;
    DtBlob head = {.magic = DT_BLOB_MAGIC, .type = type, .version = 1, .len = (uint32_t)len};
    memcpy(p, &head, sizeof head);
    memcpy(p + sizeof head, data, len);
    memset(p + sizeof head + len, 0, res->cap - sizeof head - len);
    return (DtRef){res->off, (uint32_t)(sizeof head + len)};
}

/* The u64 counters of a DT_BLOB_COUNTERS ref, or NULL. */
static uint64_t *
blob_counters(DtRef ref)
{
    if (ref.len < sizeof(DtBlob))
        return NULL;
    return (uint64_t *)((uint8_t *)region + region->blob_off + ref.off + sizeof(DtBlob));
}

/* ---- slots (inside the seqlock) ----------------------------------------------------------- */

static const char *
utf8_or_empty(PyObject *s, Py_ssize_t *len)
{
    const char *p = s != NULL && PyUnicode_Check(s) ? PyUnicode_AsUTF8AndSize(s, len) : NULL;
    if (p == NULL) {
        PyErr_Clear();          /* only a failed UTF-8 encoding of a name */
        *len = 0;
        return "";
    }
    return p;
}

/* The slot of cache's code, created when missing; NULL when the table is full. */
static DtCode *
code_slot(CodeCache *cache)
{
    if (cache->tele != NULL)
        return cache->tele;
    if (region->n_codes >= region->codes_cap) {
        region->slots_dropped++;
        region->flags |= DT_F_SLOTS_FULL;
        return NULL;
    }
    PyCodeObject *co = (PyCodeObject *)cache->code;
    DtCode *d = &code_table()[region->n_codes];
    memset(d, 0, sizeof *d);
    d->frame_id = UINT32_MAX;
    d->first_ns = now_ns();
    Py_ssize_t n;
    const char *s = utf8_or_empty(co->co_name, &n);
    d->name = blob_text(s, (size_t)n);
    s = utf8_or_empty(co->co_filename, &n);
    d->filename = blob_text(s, (size_t)n);
    d->firstlineno = (uint32_t)co->co_firstlineno;
    d->calls = d->misses = 1;   /* the call whose miss compiled it */
    slot_caches[region->n_codes] = cache;
    region->n_codes++;
    cache->tele = d;
    return d;
}

static DtEntry *
entry_slot(void)
{
    if (region->n_entries >= region->entries_cap) {
        region->slots_dropped++;
        region->flags |= DT_F_SLOTS_FULL;
        return NULL;
    }
    DtEntry *e = &entry_table()[region->n_entries++];
    memset(e, 0, sizeof *e);
    e->last_fail_guard = UINT32_MAX;
    return e;
}

static void
event_add(const EventSpec *spec)
{
    uint64_t seq = region->n_events + 1;
    DtEvent *ring = (DtEvent *)((char *)region + region->events_off);
    DtEvent ev = {
        .seq = seq, .time_ns = now_ns(), .kind = spec->kind,
        .frame_id = spec->frame_id, .compile_id = spec->compile_id,
        .code_slot = spec->code_slot, .entry_slot = spec->entry_slot,
        .guard_index = UINT32_MAX,
    };
    if (spec->text != NULL)
        ev.text = blob_text(spec->text, (size_t)spec->text_len);
    if (spec->where != NULL)
        ev.where = blob_text(spec->where, (size_t)spec->where_len);
    int with_failure = spec->kind == DT_EV_RECOMPILE || spec->kind == DT_EV_LIMIT;
    if (with_failure && spec->code_slot != UINT32_MAX
            && last_failure.code == slot_caches[spec->code_slot]) {
        ev.guard_index = last_failure.guard;
        ev.property = blob_cstr(last_failure.property);
        ev.expected = blob_cstr(last_failure.expected);
        ev.actual = blob_cstr(last_failure.actual);
    }
    ring[seq % region->events_cap] = ev;
    region->n_events = seq;
}

/* ---- creation, exit, fork ---------------------------------------------------------------- */

static void
at_exit(void)
{
    if (region == NULL || getpid() != region_pid)
        return;
    seq_begin();
    region->flags |= DT_F_EXITED;
    region->exit_ns = now_ns();
    seq_end();
    if (region_is_file)
        unlink(region->shm_path);
}

/* Fatal signals whose default action ends the process without atexit: the
 * handler marks the region EXITED and unlinks the shm file (both
 * async-signal-safe), then dies of the same signal with the default
 * action (SA_RESETHAND; the signal stays blocked until the handler
 * returns, then kills).  Installed only over SIG_DFL: a handler the
 * application (or faulthandler) set first is left alone, and one set later
 * replaces this one.  SIGKILL cannot be caught: its file stays. */
static const int cleanup_signals[] = {SIGTERM, SIGHUP, SIGQUIT, SIGSEGV, SIGBUS, SIGFPE,
                                      SIGILL, SIGABRT};

static void
on_fatal_signal(int sig)
{
    int saved = errno;
    DtHeader *h = region;
    if (h != NULL && getpid() == region_pid) {
        __atomic_fetch_or(&h->flags, DT_F_EXITED, __ATOMIC_RELAXED);
        struct timespec ts;
        if (clock_gettime(CLOCK_REALTIME, &ts) == 0)
            h->exit_ns = (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
        if (region_is_file)
            unlink(h->shm_path);
    }
    raise(sig);                 /* pending until we return; then the default action */
    errno = saved;
}

static void
install_signal_cleanup(void)
{
    const char *keep = getenv("DYNAMO_TELEMETRY_KEEP");
    if (keep != NULL && strcmp(keep, "1") == 0)
        return;                 /* keep the file for post-mortem reading */
    for (size_t i = 0; i < sizeof cleanup_signals / sizeof *cleanup_signals; i++) {
        struct sigaction old, sa;
        if (sigaction(cleanup_signals[i], NULL, &old) != 0 || (old.sa_flags & SA_SIGINFO)
                || old.sa_handler != SIG_DFL)
            continue;
        memset(&sa, 0, sizeof sa);
        sa.sa_handler = on_fatal_signal;
        sa.sa_flags = SA_RESETHAND | SA_RESTART;
        sigemptyset(&sa.sa_mask);
        sigaction(cleanup_signals[i], &sa, NULL);
    }
}

/* A forked child must not write into its parent's region: replace the
 * shared pages with private zeros (slots held by caches stay valid memory)
 * and turn telemetry off. */
static void
after_fork_child(void)
{
    if (region == NULL)
        return;
    if (region_is_file)
        mmap(region, region_len, PROT_READ | PROT_WRITE,
             MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
    if (region_fd >= 0)
        close(region_fd);       /* the parent's flock stays: it is the parent's file */
    region_fd = -1;
    region = NULL;
    dynamo_telemetry_anchor.enabled = 0;
    dynamo_telemetry_anchor.region_addr = 0;
}

static int
telemetry_disabled_by_env(int *anonymous)
{
    const char *v = getenv("DYNAMO_TELEMETRY");
    *anonymous = v != NULL && strcmp(v, "anon") == 0;
    return v != NULL && (strcmp(v, "0") == 0 || strcmp(v, "off") == 0
                         || strcmp(v, "false") == 0 || strcmp(v, "no") == 0);
}

/* Capacities of a region: layout.h's defaults divided by 2^shift. */
typedef struct {
    uint32_t codes_cap, entries_cap, events_cap, blob_cap;  /* slots, slots, slots, bytes */
} Geometry;

#define GEOMETRY_MAX_SHIFT 6    /* 1/64 of the defaults: ~0.9 MiB, 64 codes */

static Geometry
geometry(unsigned shift)
{
    return (Geometry){DT_CODES_CAP >> shift, DT_ENTRIES_CAP >> shift, DT_EVENTS_CAP >> shift,
                      DT_BLOB_CAP >> shift};
}

/* Bytes of a region of geometry g. */
static size_t
geometry_bytes(const Geometry *g)
{
    return DT_HEADER_SIZE + (size_t)g->codes_cap * sizeof(DtCode)
           + (size_t)g->entries_cap * sizeof(DtEntry) + (size_t)g->events_cap * sizeof(DtEvent)
           + g->blob_cap;
}

/* The file at path exists: is it a stale one of ours (a dead process that
 * had our pid and our uid: it cannot be alive, the pid is ours now) that
 * no live writer holds?  Then it is removed: 0.  Else -1 with a warning in
 * init_warning: another user's file (squatted, or left by a process of
 * another user), or one a writer in another pid namespace holds. */
static int
remove_stale_own(const char *path)
{
    int fd = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
    struct stat sb;
    int regular = fd >= 0 && fstat(fd, &sb) == 0 && S_ISREG(sb.st_mode);
    int ours = regular && sb.st_uid == geteuid();
    int unheld = ours && flock(fd, LOCK_EX | LOCK_NB) == 0;
    int removed = unheld && unlink(path) == 0;
    if (fd >= 0)
        close(fd);
    if (removed)
        return 0;
    if (!regular)
        snprintf(init_warning, sizeof init_warning, "%s exists and is not a regular file: "
                 "refused, telemetry kept in anonymous memory", path);
    else if (!ours)
        snprintf(init_warning, sizeof init_warning, "%s exists and belongs to uid %u, not to "
                 "this process: refused, telemetry kept in anonymous memory", path,
                 (unsigned)sb.st_uid);
    else
        snprintf(init_warning, sizeof init_warning, "%s is held by a live process (another pid "
                 "namespace?): telemetry kept in anonymous memory", path);
    errno = EEXIST;
    return -1;
}

/* Create the shm file at path (O_EXCL, 0600: a file we did not create is
 * never used), reserve its space for the largest geometry that takes at
 * most a quarter of the free space, hold it (flock LOCK_SH) and map it.
 * The mapping, *g and region_fd; NULL with init_warning set (the caller
 * falls back to anonymous memory). */
static void *
map_shm(const char *path, Geometry *g)
{
    int flags = O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC;
    int fd = open(path, flags, 0600);
    if (fd < 0 && errno == EEXIST && remove_stale_own(path) == 0)
        fd = open(path, flags, 0600);
    if (fd < 0) {
        int saved = errno;
        if (init_warning[0] == '\0')
            snprintf(init_warning, sizeof init_warning, "cannot create %s (%s): telemetry kept "
                     "in anonymous memory", path, strerror(saved));
        errno = saved;
        return NULL;
    }
    void *p = MAP_FAILED;
    struct statvfs vfs;
    unsigned long long avail = fstatvfs(fd, &vfs) == 0
                               ? (unsigned long long)vfs.f_bavail * vfs.f_frsize : 0;
    unsigned shift = 0;         /* the largest region that takes at most a quarter of it */
    for (; shift < GEOMETRY_MAX_SHIFT; shift++) {
        Geometry t = geometry(shift);
        if (geometry_bytes(&t) <= avail / 4)
            break;
    }
    *g = geometry(shift);
    size_t len = geometry_bytes(g);
    int err = 0;
    if (len > avail / 4)
        err = ENOSPC;
    else if (fchmod(fd, 0600) != 0 || flock(fd, LOCK_SH | LOCK_NB) != 0)
        err = errno;
    else if ((err = posix_fallocate(fd, 0, (off_t)len)) == 0) {
        p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
        err = p == MAP_FAILED ? errno : 0;
    }
    if (p == MAP_FAILED) {
        snprintf(init_warning, sizeof init_warning, "cannot reserve %zu KiB for %s (%s; %llu KiB "
                 "free): telemetry kept in anonymous memory", len >> 10, path, strerror(err),
                 avail >> 10);
        unlink(path);
        close(fd);
        errno = err;
        return NULL;
    }
    region_fd = fd;
    return p;
}

static void
read_cmdline(char *out, size_t cap)
{
    int fd = open("/proc/self/cmdline", O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return;
    ssize_t n = read(fd, out, cap - 1);
    close(fd);
    if (n <= 0)
        return;
    for (ssize_t i = 0; i < n; i++)
        if (out[i] == '\0')
            out[i] = ' ';
    while (n > 0 && out[n - 1] == ' ')
        n--;
    out[n] = '\0';
}

static void
fill_header(DtHeader *h, size_t len, const Geometry *g, const char *path)
{
    memcpy(h->magic, DT_MAGIC, 8);
    h->version = DT_VERSION;
    h->header_size = DT_HEADER_SIZE;
    h->region_size = len;
    h->pid = (uint64_t)getpid();
    h->start_ns = now_ns();
    h->flags = path[0] ? 0 : DT_F_ANON;
    h->codes_cap = g->codes_cap;
    h->entries_cap = g->entries_cap;
    h->events_cap = g->events_cap;
    h->blob_cap = g->blob_cap;
    h->codes_off = DT_HEADER_SIZE;
    h->entries_off = h->codes_off + (uint64_t)g->codes_cap * sizeof(DtCode);
    h->events_off = h->entries_off + (uint64_t)g->entries_cap * sizeof(DtEntry);
    h->blob_off = h->events_off + (uint64_t)g->events_cap * sizeof(DtEvent);
    uint64_t start;
    h->proc_start = procid_start(0, &start) == 0 ? start : 0;
    const char *v = Py_GetVersion();
    size_t n = strcspn(v, " ");
    memcpy(h->python_version, v, n < sizeof h->python_version ? n : sizeof h->python_version - 1);
    read_cmdline(h->argv, sizeof h->argv);
    if (redact) {               /* arguments may hold secrets: keep the program and script */
        char *sp = strchr(h->argv, ' ');
        if (sp != NULL && (sp = strchr(sp + 1, ' ')) != NULL) {
            size_t rest = sizeof h->argv - (size_t)(sp - h->argv);
            memset(sp, 0, rest);    /* no byte of them left after the NUL */
            snprintf(sp, rest, " <arguments redacted>");
        }
    }
    snprintf(h->shm_path, sizeof h->shm_path, "%s", path);
}

/* DYNAMO_GUARD_TIMING: "" or "0" off, "1" every lookup, N 1 of every N,
 * anything else DT_GUARD_TIMING_DEFAULT. */
static uint32_t
timing_from_env(void)
{
    const char *v = getenv("DYNAMO_GUARD_TIMING");
    if (v == NULL || *v == '\0')
        return 0;
    char *end;
    unsigned long n = strtoul(v, &end, 10);
    if (*end != '\0' || n > UINT32_MAX)
        return DT_GUARD_TIMING_DEFAULT;
    return (uint32_t)n;
}

uint32_t
telemetry_set_guard_timing(uint32_t period)
{
    return __atomic_exchange_n(telemetry_timing, period, __ATOMIC_RELAXED);
}

void
telemetry_init(void)
{
    int anonymous;
    if (telemetry_timing == &timing_local)
        timing_local = timing_from_env();
    if (region != NULL || telemetry_disabled_by_env(&anonymous))
        return;
    const char *rv = getenv("DYNAMO_TELEMETRY_REDACT");
    redact = rv != NULL && *rv != '\0' && strcmp(rv, "0") != 0;
    teletext_configure(redact, NULL, NULL);
    Geometry g = geometry(0);
    slot_caches = PyMem_Calloc(DT_CODES_CAP, sizeof(CodeCache *));
    code_res = PyMem_Calloc(DT_CODES_CAP, sizeof *code_res);
    if (slot_caches == NULL || code_res == NULL) {
        dynamo_telemetry_anchor.init_errno = ENOMEM;
        PyMem_Free(slot_caches);
        PyMem_Free(code_res);
        slot_caches = NULL;
        code_res = NULL;
        return;
    }
    char path[64] = "";
    void *p = NULL;
    if (!anonymous) {
        snprintf(path, sizeof path, "/dev/shm/dynamo-%d", (int)getpid());
        p = map_shm(path, &g);
        if (p == NULL) {
            dynamo_telemetry_anchor.init_errno = (uint32_t)errno;
            path[0] = '\0';
            g = geometry(0);
        }
    }
    size_t len = geometry_bytes(&g);
    if (p == NULL) {            /* no shm: anonymous memory (lazy pages), found via the anchor */
        p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (p == MAP_FAILED) {
            dynamo_telemetry_anchor.init_errno = (uint32_t)errno;
            PyMem_Free(slot_caches);
            PyMem_Free(code_res);
            slot_caches = NULL;
            code_res = NULL;
            return;
        }
    }
    fill_header(p, len, &g, path);
    ((DtHeader *)p)->guard_timing = timing_local;
    telemetry_timing = &((DtHeader *)p)->guard_timing;  /* readers may flip it there */
    region = p;
    region_len = len;
    region_is_file = path[0] != '\0';
    region_pid = getpid();
    snprintf(dynamo_telemetry_anchor.shm_path, sizeof dynamo_telemetry_anchor.shm_path, "%s", path);
    dynamo_telemetry_anchor.region_addr = (uint64_t)(uintptr_t)p;
    dynamo_telemetry_anchor.region_size = len;
    __atomic_store_n(&dynamo_telemetry_anchor.enabled, 1, __ATOMIC_RELEASE);
    cache_set_watcher(&cache_watcher);
    atexit(at_exit);
    pthread_atfork(NULL, NULL, after_fork_child);
    if (region_is_file)
        install_signal_cleanup();
}

/* ---- hook-facing --------------------------------------------------------------------------- */

/* Short text of a guard's expected/actual object into out (never fails). */
static void
describe_value(PyObject *v, char *out, size_t cap)
{
    if (v == gtree_missing()) {
        snprintf(out, cap, "<missing>");
        return;
    }
    if (PyType_Check(v)) {
        snprintf(out, cap, "%s", ((PyTypeObject *)v)->tp_name);
        return;
    }
    if (redact && PyUnicode_Check(v)) {
        snprintf(out, cap, "<redacted str, %zd chars>", PyUnicode_GET_LENGTH(v));
        return;
    }
    if (redact && PyBytes_Check(v)) {
        snprintf(out, cap, "<redacted bytes, %zd chars>", PyBytes_GET_SIZE(v));
        return;
    }
    PyObject *r = PyObject_Repr(v);
    const char *s = r != NULL ? PyUnicode_AsUTF8(r) : NULL;
    if (s == NULL) {
        PyErr_Clear();          /* only the repr we just asked for */
        s = "<unprintable>";
    }
    if (redact && (strchr(s, '\'') != NULL || strchr(s, '"') != NULL))
        s = "<redacted: holds text>";   /* a container with strings inside */
    snprintf(out, cap, "%s", s);
    Py_XDECREF(r);
}

/* describe_value of a failing guard's expected or actual value `v` of
 * property `prop`: a compile backend's key as its name (never fails). */
static void
describe_guard_value(const char *prop, PyObject *v, char *out, size_t cap)
{
    if (strcmp(prop, "backend") == 0) {
        PyObject *name = teletext_backend_name(v);
        const char *s = name != NULL ? PyUnicode_AsUTF8(name) : NULL;
        if (s != NULL)
            snprintf(out, cap, "%s", s);
        Py_XDECREF(name);
        if (s != NULL)
            return;
        if (PyErr_Occurred())
            PyErr_Clear();      /* only the lookup we just made: the key's number instead */
    }
    describe_value(v, out, cap);
}

/* Two backend objects of one name (two CompileCounter()s): each text gets
 * its key's number, as guards.backend_texts_apart does for the recompile
 * reason, so the last failure does not read "expected 'b', actual 'b'". */
static void
backend_names_apart(const char *prop, PyObject *ke, PyObject *ka,
                    char *expected, size_t ecap, char *actual, size_t acap)
{
    if (strcmp(prop, "backend") != 0 || strcmp(expected, actual) != 0
            || !PyLong_CheckExact(ke) || !PyLong_CheckExact(ka))
        return;
    long e = PyLong_AsLong(ke), a = PyLong_AsLong(ka);
    if (PyErr_Occurred()) {
        PyErr_Clear();          /* only the conversions just made */
        return;
    }
    if (e == a)
        return;
    size_t n = strlen(expected);
    snprintf(expected + n, ecap - n, " (backend #%ld)", e);
    n = strlen(actual);
    snprintf(actual + n, acap - n, " (backend #%ld)", a);
}

void
telemetry_note_failure(CodeCache *cache, PyObject *failures)
{
    if (region == NULL || cache->tele == NULL || !PyList_Check(failures)
            || PyList_GET_SIZE(failures) == 0)
        return;
    PyObject *first = PyList_GET_ITEM(failures, 0);
    if (!PyTuple_Check(first) || PyTuple_GET_SIZE(first) < 5)
        return;
    PyObject *exc_type, *exc_value, *exc_tb;
    PyErr_Fetch(&exc_type, &exc_value, &exc_tb);
    Py_ssize_t guard = PyLong_AsSsize_t(PyTuple_GET_ITEM(first, 1));
    if (guard < 0) {
        PyErr_Clear();          /* not an index: leave it out */
        guard = -1;
    }
    char prop[sizeof last_failure.property], expected[sizeof last_failure.expected],
         actual[sizeof last_failure.actual];
    Py_ssize_t n;
    snprintf(prop, sizeof prop, "%s", utf8_or_empty(PyTuple_GET_ITEM(first, 2), &n));
    describe_guard_value(prop, PyTuple_GET_ITEM(first, 3), expected, sizeof expected);
    describe_guard_value(prop, PyTuple_GET_ITEM(first, 4), actual, sizeof actual);
    backend_names_apart(prop, PyTuple_GET_ITEM(first, 3), PyTuple_GET_ITEM(first, 4),
                        expected, sizeof expected, actual, sizeof actual);
    /* repr() and the backend name's lookup ran Python code (a module's
     * repr is importlib's, a user class has its own; a GC pass or a
     * finalizer may run there, other threads too): a dynamo.reset() there
     * reclaimed the code's slot (cache->tele is NULL) and dropped the
     * entries.  Read both afresh (issue 29: the SIGSEGV of the reset
     * stress on 3.12). */
    if (cache->tele == NULL) {
        PyErr_Restore(exc_type, exc_value, exc_tb);
        return;
    }
    DtEntry *de = NULL;
    for (CacheEntry *e = cache->entries; e != NULL; e = e->next)
        if (e->payload == PyTuple_GET_ITEM(first, 0)) {
            de = e->tele;
            break;
        }

    seq_begin();
    telemetry_bump(&cache->tele->guard_failures);
    if (de != NULL) {
        telemetry_bump(&de->guard_failures);
        uint64_t *counts = blob_counters(de->fail_counts);
        if (counts != NULL && guard >= 0 && (uint64_t)guard < de->n_guards)
            telemetry_bump(&counts[guard]);
        de->last_fail_guard = guard >= 0 ? (uint32_t)guard : UINT32_MAX;
        de->last_fail_ns = now_ns();
        memcpy(de->last_fail_property, prop, sizeof de->last_fail_property);
        memcpy(de->last_fail_expected, expected, sizeof de->last_fail_expected);
        memcpy(de->last_fail_actual, actual, sizeof de->last_fail_actual);
    }
    seq_end();
    last_failure.code = cache;
    last_failure.guard = guard >= 0 ? (uint32_t)guard : UINT32_MAX;
    memcpy(last_failure.property, prop, sizeof prop);
    memcpy(last_failure.expected, expected, sizeof expected);
    memcpy(last_failure.actual, actual, sizeof actual);
    PyErr_Restore(exc_type, exc_value, exc_tb);
}

/* "[F/C]" of entry i of a cache's current tree, from its slot; NULL
 * (no exception) for an entry without one. */
static PyObject *
entry_name(const GTree *t, Py_ssize_t i)
{
    const CacheEntry *e = gtree_tag(t, i);
    if (e == NULL || e->tele == NULL)
        return NULL;
    return PyUnicode_FromFormat("[%u/%u]", e->tele->frame_id, e->tele->compile_id);
}

/* What an encoding of a cache's tree holds: the encoding (teletext_tree)
 * runs Python code (repr() of guarded values, the cycle collector, other
 * threads while it releases the GIL), which may drop entries (drop_unused,
 * the pruning of dead entries, clear, reset), replace or free the tree, or
 * let the code object and its cache die, while the walk still reads the
 * tree and entry_name reads the entries its tags point to.  Holding the
 * chain's head is not enough: drop_unused and the pruning unlink entries
 * from the middle of the chain, which frees them (issue 12). */
typedef struct {
    PyObject *code;             /* strong: keeps the cache alive */
    GTree *tree;                /* reference */
    CacheEntry **tags;          /* owned (PyMem) array of references: the tree's tags */
    Py_ssize_t ntags;
} TreeHold;

/* Hold cache's current tree (not NULL), its tags (the cache's entries the
 * tree was built from) and its code.  0, or -1 with an exception (memory;
 * nothing held). */
static int
tree_hold(TreeHold *h, CodeCache *cache)
{
    GTree *t = cache->tree;
    Py_ssize_t n = gtree_size(t);
    h->tags = PyMem_Calloc(n > 0 ? (size_t)n : 1, sizeof(CacheEntry *));
    if (h->tags == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        CacheEntry *e = gtree_tag(t, i);
        h->tags[i] = e != NULL ? cache_entry_incref(e) : NULL;
    }
    h->ntags = n;
    h->tree = gtree_incref(t);
    h->code = Py_NewRef(cache->code);
    return 0;
}

/* Drop what tree_hold took; the exception set (if any) is kept.  May run
 * Python code and free the cache. */
static void
tree_release(TreeHold *h)
{
    PyObject *exc_type, *exc_value, *exc_tb;
    PyErr_Fetch(&exc_type, &exc_value, &exc_tb);
    gtree_decref(h->tree);          /* before the entries that hold what it points to */
    for (Py_ssize_t i = 0; i < h->ntags; i++)
        cache_entry_decref(h->tags[i]);     /* may run Python code */
    PyMem_Free(h->tags);
    Py_DECREF(h->code);             /* may free the cache: last */
    PyErr_Restore(exc_type, exc_value, exc_tb);
}

/* Publish cache's guard tree as it is built (never building it): a TREE
 * blob and a COUNTERS blob its node counters then live in.  A cache whose
 * tree is not built (entries changed since) keeps what was published.
 * The encoding is done under a TreeHold, and only a tree that is still the
 * cache's own afterwards is published.  0, or -1 with an exception. */
static int
publish_tree(CodeCache *cache)
{
    if (region == NULL || tree_broken || cache->tele == NULL || cache->tree == NULL)
        return 0;
    TreeHold hold;
    if (tree_hold(&hold, cache) < 0)
        return -1;
    GTree *t = hold.tree;
    PyObject *tree = NULL, *counters = NULL;
    int rc = teletext_tree(t, hold.code, entry_name, &tree, &counters);
    if (rc == 0 && cache->tree == t && cache->tele != NULL) {
        DtCode *d = cache->tele;
        BlobRes *res = code_res[code_index(d)];
        seq_begin();
        DtRef ref = blob_put(&res[0], DT_BLOB_TREE, PyBytes_AS_STRING(tree),
                             (size_t)PyBytes_GET_SIZE(tree));
        if (ref.len != 0) {
            d->tree = ref;
            d->tree_counters = blob_put(&res[1], DT_BLOB_COUNTERS, PyBytes_AS_STRING(counters),
                                        (size_t)PyBytes_GET_SIZE(counters));
            d->counters_ns = now_ns();
            /* From now on the walks bump the region's copy themselves (blobs
             * are never freed or moved while the region exists). */
            uint64_t *slots = blob_counters(d->tree_counters);
            size_t nwords = (size_t)PyBytes_GET_SIZE(counters) / 8;
            if (gtree_bind_counters(t, slots, nwords))
                __atomic_fetch_or(&d->flags, DT_C_LIVE_TREE, __ATOMIC_RELAXED);
            else
                __atomic_fetch_and(&d->flags, ~DT_C_LIVE_TREE, __ATOMIC_RELAXED);
        }
        seq_end();
    }
    Py_XDECREF(tree);
    Py_XDECREF(counters);
    tree_release(&hold);            /* may free cache: last */
    return rc;
}

/* cache's guard tree was rebuilt (core/cache.c): its node counters are
 * no longer the published ones until the next publish.  No Python. */
static void
tree_built(CodeCache *cache)
{
    if (region != NULL && cache->tele != NULL)
        __atomic_fetch_and(&cache->tele->flags, ~DT_C_LIVE_TREE, __ATOMIC_RELAXED);
}

/* Make the region's node counters of cache current: a live tree only gets
 * its time stamp; a tree rebuilt since its publish (counting in the
 * process) is published again, which makes its counters live.  0, or -1
 * with an exception. */
static int
refresh_tree_counters(CodeCache *cache)
{
    DtCode *d = cache->tele;
    if (d != NULL && d->tree.len != 0
            && (__atomic_load_n(&d->flags, __ATOMIC_RELAXED) & DT_C_LIVE_TREE)) {
        __atomic_store_n(&d->counters_ns, now_ns(), __ATOMIC_RELAXED);  /* live already */
        return 0;
    }
    return publish_tree(cache);
}

void
telemetry_entry_added(CodeCache *cache)
{
    if (cache == NULL)
        return;
    PyObject *code = Py_NewRef(cache->code);    /* publish_tree may free cache */
    if (publish_tree(cache) < 0) {
        /* A tree that cannot be described: say so once and stop publishing trees. */
        PyErr_WriteUnraisable(code);
        tree_broken = 1;
    }
    Py_DECREF(code);
}

/* A code object with a slot is being freed (cache is its co_extra). */
static void
code_dead(CodeCache *cache)
{
    if (region == NULL || cache->tele == NULL)
        return;
    uint32_t i = code_index(cache->tele);
    if (i < region->n_codes)
        slot_caches[i] = NULL;
    if (last_failure.code == cache)
        last_failure.code = NULL;
    __atomic_fetch_or(&cache->tele->flags, DT_C_DEAD, __ATOMIC_RELAXED);
}

/* A cache entry took slot e (core/cache.c, cache_push). */
static void
entry_attached(DtEntry *e)
{
    (void)e;
    entries_held++;
}

/* A cache entry holding slot e was freed: mark the slot dropped. */
static void
entry_dead(DtEntry *e)
{
    entries_held--;
    __atomic_fetch_or(&e->flags, DT_E_DEAD, __ATOMIC_RELAXED);
}

/* What core/cache.c tells the writer (set at telemetry_init). */
static const CacheWatcher cache_watcher = {
    .entry_attached = entry_attached, .entry_dead = entry_dead,
    .code_dead = code_dead, .tree_built = tree_built,
};

/* Move the blob *ref refers to down to the end of the blob area (*used
 * bytes so far), or drop the ref when it is not a blob the area holds. */
static void
blob_move_down(DtRef *ref, uint64_t *used, uint64_t old_used)
{
    if (ref->len == 0)
        return;
    uint64_t need = ((uint64_t)ref->len + 7) & ~(uint64_t)7;
    if (ref->len < sizeof(DtBlob) || ref->off < *used || ref->off + need > old_used) {
        *ref = (DtRef){0, 0};
        return;
    }
    uint8_t *base = (uint8_t *)region + region->blob_off;
    memmove(base + *used, base + ref->off, need);
    ref->off = (uint32_t)*used;
    *used += need;
}

/* After reset(): every cache entry is dropped, so the code and entry slots
 * and the blobs of records, trees and counters describe nothing alive.
 * Start the tables and the blob area over (inside the seqlock), keeping the
 * event ring: each event's texts move down, its slot references are
 * dropped.  Without it, each compile/reset cycle of a long-running process
 * took new slots and ~18 KB of blobs until the region was full (issue 12:
 * resident memory grew with every cycle, then telemetry stopped).  Not
 * done while a cache entry or a guard tree with a slot is still alive (a
 * frame or lookup running across reset() holds it and may still bump
 * counters there): the next reset() reclaims. */
static void
reclaim_after_reset(void)
{
    if (entries_held != 0 || gtree_bound_alive != 0)
        return;
    uint32_t n_codes = region->n_codes;
    for (uint32_t i = 0; i < n_codes && i < region->codes_cap; i++) {
        CodeCache *c = slot_caches[i];
        if (c != NULL) {
            c->tele = NULL;
            c->tele_pending = NULL;
        }
        slot_caches[i] = NULL;
    }
    memset(code_res, 0, (size_t)region->codes_cap * sizeof *code_res);
    memset(code_table(), 0, (size_t)n_codes * sizeof(DtCode));
    memset(entry_table(), 0, (size_t)region->n_entries * sizeof(DtEntry));
    region->n_codes = region->n_entries = 0;

    /* Events oldest first: their blobs were appended in that order, so each
     * moves down (or stays). */
    DtEvent *ring = (DtEvent *)((char *)region + region->events_off);
    uint64_t last = region->n_events;
    uint64_t first = last > region->events_cap ? last - region->events_cap + 1 : 1;
    uint64_t old_used = region->blob_used, used = 0;
    for (uint64_t seq = first; seq <= last; seq++) {
        DtEvent *ev = &ring[seq % region->events_cap];
        ev->code_slot = ev->entry_slot = UINT32_MAX;
        blob_move_down(&ev->text, &used, old_used);
        blob_move_down(&ev->where, &used, old_used);
        blob_move_down(&ev->property, &used, old_used);
        blob_move_down(&ev->expected, &used, old_used);
        blob_move_down(&ev->actual, &used, old_used);
    }
    memset((uint8_t *)region + region->blob_off + used, 0, old_used - used);
    region->blob_used = (uint32_t)used;
    region->flags &= ~(DT_F_BLOB_FULL | DT_F_SLOTS_FULL);  /* the *_dropped counts stay */
}

void
telemetry_reset_event(void)
{
    if (region == NULL)
        return;
    static const char text[] = "dynamo.reset(): every cache entry dropped";
    EventSpec spec = {.kind = DT_EV_RESET, .frame_id = UINT32_MAX, .compile_id = UINT32_MAX,
                      .code_slot = UINT32_MAX, .entry_slot = UINT32_MAX,
                      .text = text, .text_len = sizeof text - 1};
    seq_begin();
    reclaim_after_reset();
    event_add(&spec);
    seq_end();
    last_failure.code = NULL;
}

/* ---- what the bindings reach (telemetry_int.h) ------------------------------------------ */

const DtHeader *
tele_header(void)
{
    return region;
}

size_t
tele_region_len(void)
{
    return region_len;
}

int
tele_redact(void)
{
    return redact;
}

const char *
tele_init_warning(void)
{
    return init_warning;
}

uint32_t
tele_init_errno(void)
{
    return dynamo_telemetry_anchor.init_errno;
}

uint64_t
tele_now_ns(void)
{
    return now_ns();
}

void
tele_set_identity(const char *torch_version, const char *dynamo_version)
{
    if (region == NULL)
        return;
    seq_begin();
    snprintf(region->torch_version, sizeof region->torch_version, "%s", torch_version);
    snprintf(region->dynamo_version, sizeof region->dynamo_version, "%s", dynamo_version);
    seq_end();
}

long
tele_publish(CodeCache *cache, const TelePublish *p, EventSpec *specs, Py_ssize_t nev)
{
    int ok = p->status == DT_RS_OK;
    uint32_t frame_id = p->frame_id, compile_id = p->compile_id;

    seq_begin();
    DtCode *d = code_slot(cache);
    DtEntry *e = entry_slot();
    uint32_t cslot = d != NULL ? code_index(d) : UINT32_MAX;
    uint32_t eslot = e != NULL ? entry_index(e) : UINT32_MAX;
    if (d != NULL) {
        d->frame_id = frame_id;
        d->compiles++;
        d->compile_ns += p->compile_ns;
        d->cache_size_limit = p->cache_size_limit;
        if (p->status == DT_RS_LIMIT)
            d->flags |= DT_C_LIMIT;
        else if (p->status == DT_RS_ERROR || p->status == DT_RS_UNSUPPORTED)
            d->flags |= DT_C_SKIP;
    }
    if (e != NULL) {
        e->frame_id = frame_id;
        e->compile_id = compile_id;
        e->code_slot = cslot;
        e->flags = ok ? 0 : DT_E_RECORD;
        e->compile_ns = p->compile_ns;
        e->created_ns = now_ns();
        e->record = blob_add(DT_BLOB_RECORD, p->record, p->record_len);
        if (ok) {
            e->n_guards = p->n_guards;
            e->fail_counts = blob_add(DT_BLOB_COUNTERS, NULL, (size_t)p->n_guards * 8);
            if (d != NULL) {
                d->n_entries++;
                d->last_entry = eslot + 1;
            }
        }
    }
    cache->tele_pending = ok ? e : NULL;
    for (Py_ssize_t i = 0; i < nev; i++) {
        specs[i].frame_id = frame_id;
        specs[i].compile_id = compile_id;
        specs[i].code_slot = cslot;
        specs[i].entry_slot = eslot;
        event_add(&specs[i]);
    }
    region->publishes++;
    seq_end();
    return e != NULL ? (long)eslot : -1;
}

long
tele_refresh(void)
{
    long n = 0;
    for (uint32_t i = 0; region != NULL && i < region->n_codes; i++) {
        CodeCache *c = slot_caches[i];
        if (c == NULL || c->entries == NULL)
            continue;
        if (refresh_tree_counters(c) < 0)
            return -1;
        n++;
    }
    return n;
}

static int
read_self(void *ctx, uint64_t off, void *dst, size_t len)
{
    if (off > region_len || len > region_len - off) {
        errno = EFAULT;
        return -1;
    }
    memcpy(dst, (char *)region + off, len);
    return 0;
}

DrError
tele_capture(uint8_t **image, size_t *len, char *msg, size_t cap)
{
    return image_capture(read_self, NULL, region_len, image, len, msg, cap);
}

const uint64_t *
tele_fail_counts(const DtEntry *e)
{
    return blob_counters(e->fail_counts);
}

uint32_t
tele_entry_index(const DtEntry *e)
{
    return entry_index(e);
}

int
tele_tree_payload(CodeCache *cache, PyObject *code, PyObject **tree, PyObject **counters)
{
    TreeHold hold;
    if (tree_hold(&hold, cache) < 0)
        return -1;
    int rc = teletext_tree(hold.tree, code, entry_name, tree, counters);
    tree_release(&hold);
    return rc;
}
