/* core/telemetry.c — the telemetry writer (part of dynamo._C).
 *
 * Owns the region of this process (layout.h) and everything written to it:
 * creation at module load (never a file it did not create; its space
 * reserved, so that a full /dev/shm cannot SIGBUS the process), the anchor
 * symbol, slots, blobs, events, the
 * seqlock, snapshots (_telemetry_save), EXITED + unlink at exit, and the
 * detachment of forked children.  Structural writes happen under the GIL
 * between seq_begin() and seq_end(); counters are bumped by the hook with
 * the inline functions of telemetry.h.  It must never make a compile or a
 * call fail: the Python-facing functions raise (dynamo/telemetry.py catches
 * everything), the hook-facing ones swallow their own errors.
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
Py_ssize_t telemetry_entries_held;  /* telemetry.h */

/* The closest entry's failure noted on the last COMPILE-mode miss; a
 * RECOMPILE/LIMIT event published for the same code carries it. */
static struct {
    const void *code;           /* compared only */
    uint32_t guard;
    char property[24], expected[80], actual[80];
} last_failure;

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

typedef struct {
    uint32_t kind, frame_id, compile_id, code_slot, entry_slot;
    const char *text, *where;
    Py_ssize_t text_len, where_len;
} EventSpec;

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

void
telemetry_init(void)
{
    int anonymous;
    if (region != NULL || telemetry_disabled_by_env(&anonymous))
        return;
    const char *rv = getenv("DYNAMO_TELEMETRY_REDACT");
    redact = rv != NULL && *rv != '\0' && strcmp(rv, "0") != 0;
    teletext_configure(redact, NULL);
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
    region = p;
    region_len = len;
    region_is_file = path[0] != '\0';
    region_pid = getpid();
    snprintf(dynamo_telemetry_anchor.shm_path, sizeof dynamo_telemetry_anchor.shm_path, "%s", path);
    dynamo_telemetry_anchor.region_addr = (uint64_t)(uintptr_t)p;
    dynamo_telemetry_anchor.region_size = len;
    __atomic_store_n(&dynamo_telemetry_anchor.enabled, 1, __ATOMIC_RELEASE);
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
    describe_value(PyTuple_GET_ITEM(first, 3), expected, sizeof expected);
    describe_value(PyTuple_GET_ITEM(first, 4), actual, sizeof actual);
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
            size_t npairs = (size_t)PyBytes_GET_SIZE(counters) / 16;
            if (gtree_bind_counters(t, slots, npairs))
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

void
telemetry_tree_built(CodeCache *cache)
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

void
telemetry_code_dead(CodeCache *cache)
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
    if (telemetry_entries_held != 0 || gtree_bound_alive != 0)
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

/* ---- Python-facing --------------------------------------------------------------------------- */

PyDoc_STRVAR(t_enabled_doc, "_telemetry_enabled() -> bool: this process publishes telemetry.");

static PyObject *
t_enabled(PyObject *module, PyObject *unused)
{
    return PyBool_FromLong(region != NULL);
}

PyDoc_STRVAR(t_info_doc,
"_telemetry_info() -> dict: enabled, path ('' when anonymous), pid, region_size,\n"
"blob_used, blob_cap, n_codes, n_entries, n_events, events_cap, codes_cap, init_errno,\n"
"redact (DYNAMO_TELEMETRY_REDACT: string values are left out of the region), warning\n"
"(why the region is not a /dev/shm file, one line; '' when it is or was asked to be).");

static PyObject *
t_info(PyObject *module, PyObject *unused)
{
    DtHeader empty = {0};
    const DtHeader *h = region != NULL ? region : &empty;
    return Py_BuildValue("{s:O,s:s,s:i,s:K,s:I,s:K,s:I,s:I,s:K,s:I,s:I,s:O,s:s,s:I}",
                         "enabled", region != NULL ? Py_True : Py_False,
                         "path", h->shm_path, "pid", (int)getpid(),
                         "region_size", (unsigned long long)region_len,
                         "blob_used", h->blob_used, "blob_cap", (unsigned long long)h->blob_cap,
                         "n_codes", h->n_codes,
                         "n_entries", h->n_entries, "n_events", (unsigned long long)h->n_events,
                         "events_cap", h->events_cap,
                         "init_errno", dynamo_telemetry_anchor.init_errno,
                         "redact", redact ? Py_True : Py_False,
                         "warning", init_warning, "codes_cap", h->codes_cap);
}

PyDoc_STRVAR(t_set_info_doc,
"_telemetry_set_info(torch_version, dynamo_version, module_type=None)\n\n"
"Identity strings for the header; module_type: the class whose instances\n"
"published texts describe by class and address, not by repr\n"
"(torch.nn.Module: its repr walks every submodule).");

static PyObject *
t_set_info(PyObject *module, PyObject *args)
{
    const char *torch_version, *dynamo_version;
    PyObject *mtype = Py_None;
    if (!PyArg_ParseTuple(args, "ss|O:_telemetry_set_info", &torch_version, &dynamo_version,
                          &mtype))
        return NULL;
    if (mtype != Py_None && !PyType_Check(mtype)) {
        PyErr_SetString(PyExc_TypeError, "_telemetry_set_info: module_type must be a class or None");
        return NULL;
    }
    teletext_configure(redact, mtype == Py_None ? NULL : mtype);
    if (region != NULL) {
        seq_begin();
        snprintf(region->torch_version, sizeof region->torch_version, "%s", torch_version);
        snprintf(region->dynamo_version, sizeof region->dynamo_version, "%s", dynamo_version);
        seq_end();
    }
    Py_RETURN_NONE;
}

/* Event specs from the Python list of (kind, text, where); NULL with an
 * exception.  Strings are borrowed from the list (caller keeps it alive). */
static EventSpec *
parse_events(PyObject *events, Py_ssize_t *count)
{
    PyObject *seq = PySequence_Fast(events, "_telemetry_publish: events must be a sequence");
    if (seq == NULL)
        return NULL;
    Py_ssize_t n = PySequence_Fast_GET_SIZE(seq);
    EventSpec *specs = PyMem_Calloc(n ? (size_t)n : 1, sizeof(EventSpec));
    if (specs == NULL) {
        Py_DECREF(seq);
        PyErr_NoMemory();
        return NULL;
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        unsigned int kind;
        PyObject *text, *where;
        if (!PyArg_ParseTuple(PySequence_Fast_GET_ITEM(seq, i), "IUU;event must be (kind, text, where)",
                              &kind, &text, &where)
                || (specs[i].text = PyUnicode_AsUTF8AndSize(text, &specs[i].text_len)) == NULL
                || (specs[i].where = PyUnicode_AsUTF8AndSize(where, &specs[i].where_len)) == NULL) {
            PyMem_Free(specs);
            Py_DECREF(seq);
            return NULL;
        }
        specs[i].kind = kind;
    }
    Py_DECREF(seq);         /* items are the list's own: still alive */
    *count = n;
    return specs;
}

PyDoc_STRVAR(t_publish_doc,
"_telemetry_publish(code, frame_id, compile_id, status, compile_ns, n_guards,\n"
"                   record, events, cache_size_limit) -> int\n\n"
"Publish one compile record: `record` is a DT_BLOB_RECORD payload (bytes),\n"
"`events` a list of (kind, text, where) with DT_EV_* kinds, cache_size_limit\n"
"the configured limit (entries) at this compile.  A status 'ok'\n"
"record becomes the slot of the cache entry pushed next for code.  Returns\n"
"the record's slot, or -1 when telemetry is off or the region is full.");

static PyObject *
t_publish(PyObject *module, PyObject *args)
{
    PyObject *code, *events;
    unsigned int frame_id, compile_id, n_guards, limit;
    const char *status;
    unsigned long long compile_ns;
    Py_buffer record;
    if (!PyArg_ParseTuple(args, "O!IIsKIy*OI:_telemetry_publish", &PyCode_Type, &code, &frame_id,
                          &compile_id, &status, &compile_ns, &n_guards, &record, &events, &limit))
        return NULL;
    if (region == NULL) {
        PyBuffer_Release(&record);
        return PyLong_FromLong(-1);
    }
    Py_ssize_t nev = 0;
    EventSpec *specs = parse_events(events, &nev);
    CodeCache *cache = specs != NULL ? cache_ensure(code) : NULL;
    if (cache == NULL) {
        PyMem_Free(specs);
        PyBuffer_Release(&record);
        return NULL;
    }
    int ok = strcmp(status, "ok") == 0;

    seq_begin();
    DtCode *d = code_slot(cache);
    DtEntry *e = entry_slot();
    uint32_t cslot = d != NULL ? code_index(d) : UINT32_MAX;
    uint32_t eslot = e != NULL ? entry_index(e) : UINT32_MAX;
    if (d != NULL) {
        d->frame_id = frame_id;
        d->compiles++;
        d->compile_ns += compile_ns;
        d->cache_size_limit = limit;
        if (strcmp(status, "limit") == 0)
            d->flags |= DT_C_LIMIT;
        else if (strcmp(status, "error") == 0 || strcmp(status, "unsupported") == 0)
            d->flags |= DT_C_SKIP;
    }
    if (e != NULL) {
        e->frame_id = frame_id;
        e->compile_id = compile_id;
        e->code_slot = cslot;
        e->flags = ok ? 0 : DT_E_RECORD;
        e->compile_ns = compile_ns;
        e->created_ns = now_ns();
        e->record = blob_add(DT_BLOB_RECORD, record.buf, (size_t)record.len);
        if (ok) {
            e->n_guards = n_guards;
            e->fail_counts = blob_add(DT_BLOB_COUNTERS, NULL, (size_t)n_guards * 8);
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

    PyMem_Free(specs);
    PyBuffer_Release(&record);
    return PyLong_FromLong(e != NULL ? (long)eslot : -1);
}

PyDoc_STRVAR(t_refresh_doc,
"_telemetry_refresh() -> int: copy the current guard-tree node counters of\n"
"every live code with a cache into the region (in place; a tree whose shape\n"
"changed is republished); returns how many codes.");

static PyObject *
t_refresh(PyObject *module, PyObject *unused)
{
    long n = 0;
    for (uint32_t i = 0; region != NULL && i < region->n_codes; i++) {
        CodeCache *c = slot_caches[i];
        if (c == NULL || c->entries == NULL)
            continue;
        if (refresh_tree_counters(c) < 0)
            return NULL;
        n++;
    }
    return PyLong_FromLong(n);
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

PyDoc_STRVAR(t_save_doc,
"_telemetry_save(path): write this process's telemetry as a snapshot file\n"
"(mode 0600; the format dynamo-inspect --file and dynamo-top --file read).");

static PyObject *
t_save(PyObject *module, PyObject *arg)
{
    PyObject *path = NULL;
    if (!PyUnicode_FSConverter(arg, &path))
        return NULL;
    uint8_t *image = NULL;
    size_t len = 0;
    char msg[256];
    if (region == NULL) {
        PyErr_SetString(PyExc_RuntimeError,
                        "dynamo telemetry is off in this process (DYNAMO_TELEMETRY=0 or "
                        "the region could not be created)");
        goto error;
    }
    if (image_capture(read_self, NULL, region_len, &image, &len, msg, sizeof msg) != DR_OK) {
        PyErr_Format(PyExc_RuntimeError, "dynamo: cannot capture telemetry: %s", msg);
        goto error;
    }
    if (image_save(image, len, PyBytes_AS_STRING(path), now_ns(), msg, sizeof msg) < 0) {
        PyObject *exc = PyObject_CallFunction(PyExc_OSError, "isO", errno, msg, arg);
        if (exc != NULL) {
            PyErr_SetObject((PyObject *)Py_TYPE(exc), exc);
            Py_DECREF(exc);
        }
        goto error;
    }
    free(image);
    Py_DECREF(path);
    Py_RETURN_NONE;
error:
    free(image);
    Py_XDECREF(path);
    return NULL;
}

PyDoc_STRVAR(t_counters_doc,
"_telemetry_counters(code) -> dict or None: the counters of code's slot\n"
"(calls, hits, misses, guard_failures, compiles, compile_ns, frame_id) and\n"
"'entries': [(slot, hits, guard_failures, fail_counts)] newest first.");

static PyObject *
t_counters(PyObject *module, PyObject *code)
{
    if (!PyCode_Check(code)) {
        PyErr_SetString(PyExc_TypeError, "_telemetry_counters: expected a code object");
        return NULL;
    }
    CodeCache *c = cache_get(code);
    if (region == NULL || c == NULL || c->tele == NULL)
        Py_RETURN_NONE;
    DtCode *d = c->tele;
    PyObject *entries = PyList_New(0);
    for (CacheEntry *e = c->entries; entries != NULL && e != NULL; e = e->next) {
        if (e->tele == NULL)
            continue;
        uint64_t *counts = blob_counters(e->tele->fail_counts);
        PyObject *fails = PyList_New(0);
        for (uint32_t g = 0; fails != NULL && counts != NULL && g < e->tele->n_guards; g++) {
            PyObject *v = PyLong_FromUnsignedLongLong(counts[g]);
            if (v == NULL || PyList_Append(fails, v) < 0)
                Py_CLEAR(fails);
            Py_XDECREF(v);
        }
        PyObject *item = fails ? Py_BuildValue("(IKKN)", entry_index(e->tele),
                                               (unsigned long long)e->tele->hits,
                                               (unsigned long long)e->tele->guard_failures, fails)
                               : NULL;
        if (item == NULL || PyList_Append(entries, item) < 0)
            Py_CLEAR(entries);
        Py_XDECREF(item);
    }
    if (entries == NULL)
        return NULL;
    return Py_BuildValue("{s:K,s:K,s:K,s:K,s:K,s:K,s:I,s:N}",
                         "calls", (unsigned long long)d->calls, "hits", (unsigned long long)d->hits,
                         "misses", (unsigned long long)d->misses,
                         "guard_failures", (unsigned long long)d->guard_failures,
                         "compiles", (unsigned long long)d->compiles,
                         "compile_ns", (unsigned long long)d->compile_ns,
                         "frame_id", d->frame_id, "entries", entries);
}

PyDoc_STRVAR(t_redact_doc,
"_telemetry_redact(text) -> str: text with its quoted string literals\n"
"replaced when DYNAMO_TELEMETRY_REDACT=1 (names from the code kept), else text.");

static PyObject *
t_redact(PyObject *module, PyObject *text)
{
    return teletext_redact(text);
}

PyDoc_STRVAR(t_value_text_doc,
"_telemetry_value_text(value, limit) -> str: the short text telemetry\n"
"publishes for a guard value (types by qualified name, modules by class,\n"
"tensors by class and sizes).");

static PyObject *
t_value_text(PyObject *module, PyObject *args)
{
    PyObject *v;
    Py_ssize_t limit;
    if (!PyArg_ParseTuple(args, "On:_telemetry_value_text", &v, &limit))
        return NULL;
    return teletext_value(v, limit);
}

PyDoc_STRVAR(t_encode_doc,
"_telemetry_encode(value) -> bytes: the DtValue of ints, strs and (nested)\n"
"lists/tuples (None as \"\", other values as str()); dynamo.telemetry.encode_py\n"
"is its Python twin.");

static PyObject *
t_encode(PyObject *module, PyObject *value)
{
    return teletext_encode(value);
}

PyDoc_STRVAR(t_source_text_doc,
"_telemetry_source_text(code, source) -> str: how telemetry writes the\n"
"lowered guard source tuple `source` of code (\"L['x'].weight\").");

static PyObject *
t_source_text(PyObject *module, PyObject *args)
{
    PyObject *code, *spec;
    if (!PyArg_ParseTuple(args, "O!O:_telemetry_source_text", &PyCode_Type, &code, &spec))
        return NULL;
    return teletext_source(code, spec);
}

PyDoc_STRVAR(t_tree_doc,
"_telemetry_tree(code) -> (tree payload, counters payload) or None\n\n"
"What a publish of code's guard tree writes (DT_BLOB_TREE, DT_BLOB_COUNTERS),\n"
"from the tree as built; None when code has no built tree (nothing is built).");

static PyObject *
t_tree(PyObject *module, PyObject *code)
{
    if (!PyCode_Check(code))
        return PyErr_Format(PyExc_TypeError, "_telemetry_tree: a code object expected");
    CodeCache *cache = cache_get(code);
    if (cache == NULL || cache->tree == NULL)
        Py_RETURN_NONE;
    TreeHold hold;
    if (tree_hold(&hold, cache) < 0)
        return NULL;
    PyObject *tree, *counters;
    int rc = teletext_tree(hold.tree, code, entry_name, &tree, &counters);
    tree_release(&hold);
    if (rc < 0)
        return NULL;
    return Py_BuildValue("(NN)", tree, counters);
}

static PyMethodDef telemetry_methods[] = {
    {"_telemetry_enabled", t_enabled, METH_NOARGS, t_enabled_doc},
    {"_telemetry_info", t_info, METH_NOARGS, t_info_doc},
    {"_telemetry_set_info", t_set_info, METH_VARARGS, t_set_info_doc},
    {"_telemetry_publish", t_publish, METH_VARARGS, t_publish_doc},
    {"_telemetry_refresh", t_refresh, METH_NOARGS, t_refresh_doc},
    {"_telemetry_save", t_save, METH_O, t_save_doc},
    {"_telemetry_counters", t_counters, METH_O, t_counters_doc},
    {"_telemetry_redact", t_redact, METH_O, t_redact_doc},
    {"_telemetry_value_text", t_value_text, METH_VARARGS, t_value_text_doc},
    {"_telemetry_source_text", t_source_text, METH_VARARGS, t_source_text_doc},
    {"_telemetry_encode", t_encode, METH_O, t_encode_doc},
    {"_telemetry_tree", t_tree, METH_O, t_tree_doc},
    {NULL, NULL, 0, NULL},
};

int
telemetry_add_functions(PyObject *module)
{
    return PyModule_AddFunctions(module, telemetry_methods);
}
