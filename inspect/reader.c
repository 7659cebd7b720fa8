/* inspect/reader.c — the telemetry reader library (reader.h): attaching.
 *
 * Owns: the three ways to reach a region (shm file by pid, the anchor
 * symbol through /proc/PID/maps + libelf + process_vm_readv, a snapshot
 * file), consistent copies of it (image.h), the error codes and messages,
 * listing processes and the diagnosis; snapshot.c turns the compact image
 * into a DrSnapshot.  Input is untrusted: every ref, length and
 * index is checked; bad data yields empty fields or DR_ECORRUPT, never a
 * crash.  It never writes to the watched process, but for the one
 * flag dr_set_guard_timing sets when the user asks (DtHeader.guard_timing).
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE     /* process_vm_readv, pread */
#endif
#include <dirent.h>     /* opendir: /proc and /dev/shm scans (dr_list) */
#include <errno.h>      /* errno */
#include <fcntl.h>      /* open */
#include <gelf.h>       /* GElf_Sym, GElf_Phdr */
#include <libelf.h>     /* elf_begin */
#include <signal.h>     /* kill */
#include <stdarg.h>     /* va_list */
#include <stdio.h>      /* FILE, snprintf */
#include <stdlib.h>     /* malloc, free */
#include <string.h>     /* memcpy, strcmp */
#include <sys/file.h>   /* flock: a live writer holds its shm file */
#include <sys/stat.h>   /* fstat */
#include <sys/uio.h>    /* process_vm_readv */
#include <time.h>       /* clock_gettime */
#include <unistd.h>     /* pread, close */

#include "reader.h"
#include "layout.h"
#include "image.h"
#include "procid.h"     /* procid_start, procid_uids: is a shm file the live process's? */
#include "strutil.h"    /* str_clean: the target's text in dr_diagnose's lines */
#include "snapshot_int.h" /* rd_decode: the image's bytes to a DrSnapshot (snapshot.c) */

enum { SRC_SHM, SRC_ANCHOR, SRC_FILE };

struct DrReader {
    int kind;                   /* SRC_* */
    pid_t pid;                  /* 0 for files */
    int fd;                     /* SRC_SHM: read-only fd of the shm file, else -1 */
    uint64_t remote_addr;       /* SRC_ANCHOR: region address in the target */
    uint64_t remote_size;       /* SRC_ANCHOR: bytes */
    uint8_t *image;             /* owned: last good compact image */
    size_t image_len;
    int exited;                 /* the process was seen gone / exiting */
    char source[320];
};

/* ---- errors -------------------------------------------------------------------- */

const char *
dr_strerror(DrError code)
{
    switch (code) {
    case DR_OK: return "ok";
    case DR_ENOPROC: return "no such process";
    case DR_ENODYNAMO: return "no dynamo telemetry in that process";
    case DR_EPERM: return "permission denied";
    case DR_EVERSION: return "telemetry layout version mismatch";
    case DR_ECORRUPT: return "corrupt or truncated telemetry data";
    case DR_EIO: return "I/O error";
    case DR_ENOMEM: return "out of memory";
    case DR_EBUSY: return "telemetry region busy";
    case DR_EINTR: return "interrupted";
    case DR_EFOREIGN: return "not the process's own telemetry file";
    }
    return "unknown error";
}

int
dr_exit_code(DrError code)
{
    switch (code) {
    case DR_OK: return 0;
    case DR_ENOPROC: return 3;
    case DR_ENODYNAMO: return 4;
    case DR_EPERM: return 5;
    case DR_EVERSION: return 6;
    case DR_ECORRUPT: return 7;
    case DR_EFOREIGN: return 8;
    case DR_EINTR: return 130;
    default: return 1;
    }
}

void
dr_set_interrupt(const volatile int *flag)
{
    image_set_interrupt(flag);
}

static int
interrupted(void)
{
    return image_interrupted();
}

__attribute__((format(printf, 3, 4)))
static DrError
set_status(DrStatus *st, DrError code, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    st->code = code;
    vsnprintf(st->msg, sizeof st->msg, fmt, ap);
    va_end(ap);
    return code;
}

static const char perm_hint[] =
    "run the tool as the same user as the process, or as root";
static const char ptrace_hint[] =
    "reading process memory needs ptrace access: run as the same user with "
    "kernel.yama.ptrace_scope <= 1 (0 if the tool is not the process's ancestor; "
    "sysctl kernel.yama.ptrace_scope=0), or as root / with CAP_SYS_PTRACE";

static int
process_alive(pid_t pid)
{
    return kill(pid, 0) == 0 || errno == EPERM;
}

/* ---- reading ------------------------------------------------------------------- */

static int
read_fd(void *ctx, uint64_t off, void *dst, size_t len)
{
    int fd = *(int *)ctx;
    uint8_t *p = dst;
    while (len > 0) {
        ssize_t n = pread(fd, p, len, (off_t)off);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0) {
            if (n == 0)
                errno = EIO;    /* short file */
            return -1;
        }
        p += n;
        off += (uint64_t)n;
        len -= (size_t)n;
    }
    return 0;
}

typedef struct {
    pid_t pid;
    uint64_t base, size;
} Remote;

static int
read_remote(void *ctx, uint64_t off, void *dst, size_t len)
{
    const Remote *rm = ctx;
    if (off > rm->size || len > rm->size - off) {
        errno = EFAULT;
        return -1;
    }
    uint8_t *p = dst;
    uint64_t addr = rm->base + off;
    while (len > 0) {
        struct iovec local = {p, len};
        struct iovec remote = {(void *)(uintptr_t)addr, len};
        ssize_t n = process_vm_readv(rm->pid, &local, 1, &remote, 1, 0);
        if (n <= 0) {
            if (n == 0)
                errno = EFAULT;
            return -1;
        }
        p += n;
        addr += (uint64_t)n;
        len -= (size_t)n;
    }
    return 0;
}

static int
read_memory(void *ctx, uint64_t off, void *dst, size_t len)
{
    const DrReader *r = ctx;
    if (off > r->image_len || len > r->image_len - off) {
        errno = EFAULT;
        return -1;
    }
    memcpy(dst, r->image + off, len);
    return 0;
}

/* Capture r's source into r->image.  DR_OK or an error in *st. */
static DrError
refresh(DrReader *r, DrStatus *st)
{
    uint8_t *img = NULL;
    size_t len = 0;
    DrError e;
    char msg[256] = "";
    if (r->kind == SRC_SHM) {
        struct stat sb;
        if (fstat(r->fd, &sb) < 0)
            return set_status(st, DR_EIO, "%s: %s", r->source, strerror(errno));
        e = image_capture(read_fd, &r->fd, (uint64_t)sb.st_size, &img, &len, msg, sizeof msg);
    }
    else if (r->kind == SRC_ANCHOR) {
        Remote rm = {r->pid, r->remote_addr, r->remote_size};
        e = image_capture(read_remote, &rm, r->remote_size, &img, &len, msg, sizeof msg);
        if (e == DR_EIO && (errno == ESRCH || !process_alive(r->pid))) {
            r->exited = 1;      /* gone: keep the last state */
            return r->image != NULL ? DR_OK
                                    : set_status(st, DR_ENOPROC, "pid %d exited", (int)r->pid);
        }
        if (e == DR_EIO && errno == EPERM)
            return set_status(st, DR_EPERM, "pid %d: permission denied reading its memory: %s",
                              (int)r->pid, ptrace_hint);
    }
    else
        return DR_OK;           /* files never change */
    if (e != DR_OK)
        return set_status(st, e, "%s: %s", r->source, msg);
    free(r->image);
    r->image = img;
    r->image_len = len;
    const DtHeader *h = (const DtHeader *)img;
    if ((h->flags & DT_F_EXITED) || !process_alive(r->pid))
        r->exited = 1;
    return DR_OK;
}

/* ---- opening --------------------------------------------------------------------- */

static DrReader *
reader_new(int kind, pid_t pid)
{
    DrReader *r = calloc(1, sizeof *r);
    if (r != NULL) {
        r->kind = kind;
        r->pid = pid;
        r->fd = -1;
    }
    return r;
}

void
dr_close(DrReader *r)
{
    if (r == NULL)
        return;
    if (r->fd >= 0)
        close(r->fd);
    free(r->image);
    free(r);
}

const char *
dr_source(const DrReader *r)
{
    return r->source;
}

static const char *
file_kind(mode_t mode)
{
    return S_ISDIR(mode) ? "a directory" : S_ISFIFO(mode) ? "a FIFO" : S_ISCHR(mode) ? "a character device"
         : S_ISBLK(mode) ? "a block device" : S_ISSOCK(mode) ? "a socket" : S_ISLNK(mode) ? "a symlink"
         : "not a regular file";
}

/* fd (opened O_NONBLOCK) is a regular file of at most DT_REGION_MAX bytes:
 * anything else is refused before a byte is read (a FIFO would block, a
 * device or a huge sparse file would be read without end).  DR_OK or an
 * error in *st. */
static DrError
check_regular(int fd, const char *path, DrStatus *st)
{
    struct stat sb;
    if (fstat(fd, &sb) < 0)
        return set_status(st, DR_EIO, "%s: %s", path, strerror(errno));
    if (!S_ISREG(sb.st_mode))
        return set_status(st, DR_EIO, "%s: %s, not a telemetry file: refused", path,
                          file_kind(sb.st_mode));
    if ((uint64_t)sb.st_size > DT_REGION_MAX)
        return set_status(st, DR_ECORRUPT, "%s: %lld bytes, larger than any telemetry region "
                          "(%llu bytes): refused", path, (long long)sb.st_size,
                          (unsigned long long)DT_REGION_MAX);
    int fl = fcntl(fd, F_GETFL);
    if (fl >= 0)
        fcntl(fd, F_SETFL, fl & ~O_NONBLOCK);
    return DR_OK;
}

/* Is the shm file r (just captured) the region of the live process r->pid?
 * Anyone may create /dev/shm/dynamo-<pid> before that pid exists (the
 * directory is world-writable), and a file may outlive its process until
 * the pid is reused, so the name proves nothing.  The file's owner must be
 * one of the process's uids (or root, who could write anything anyway: a
 * process that dropped root after importing dynamo keeps its root-owned
 * file), and the header's pid and start time must be the process's.  A
 * file whose process is gone is only checked for its pid: it is read
 * post-mortem, as the file of an exited process.  DR_OK, or DR_EFOREIGN /
 * DR_EIO in *st. */
static DrError
check_owner(const DrReader *r, const char *path, DrStatus *st)
{
    const DtHeader *h = (const DtHeader *)r->image;
    struct stat sb;
    if (fstat(r->fd, &sb) < 0)
        return set_status(st, DR_EIO, "%s: %s", path, strerror(errno));
    uid_t uids[4];
    uint64_t start;
    if (h->pid != (uint64_t)r->pid)
        return set_status(st, DR_EFOREIGN, "%s was written by pid %llu, not by pid %d: refused",
                          path, (unsigned long long)h->pid, (int)r->pid);
    if (!process_alive(r->pid))
        return DR_OK;
    if (procid_uids(r->pid, uids) < 0 || procid_start(r->pid, &start) < 0) {
        if (!process_alive(r->pid))
            return DR_OK;       /* it exited meanwhile */
        return set_status(st, DR_EFOREIGN, "%s: cannot read /proc/%d to check that the file is "
                          "that process's (%s): refused", path, (int)r->pid, strerror(errno));
    }
    int owner_ok = sb.st_uid == 0;
    for (int i = 0; i < 4; i++)
        owner_ok |= sb.st_uid == uids[i];
    if (!owner_ok)
        return set_status(st, DR_EFOREIGN, "%s is owned by uid %u, but pid %d runs as uid %u: "
                          "not its telemetry (a file planted under its name): refused", path,
                          (unsigned)sb.st_uid, (int)r->pid, (unsigned)uids[1]);
    if (h->proc_start != start)
        return set_status(st, DR_EFOREIGN, "%s was written by an earlier process with pid %d "
                          "(started at tick %llu, the running one at tick %llu): refused", path,
                          (int)r->pid, (unsigned long long)h->proc_start,
                          (unsigned long long)start);
    return DR_OK;
}

/* Open through the shm file; NULL with *st (ENOENT gives DR_ENODYNAMO). */
static DrReader *
open_shm(pid_t pid, DrStatus *st)
{
    char path[64];
    snprintf(path, sizeof path, "/dev/shm/dynamo-%d", (int)pid);
    /* O_NONBLOCK: a FIFO planted under that name must not block the open. */
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
    if (fd < 0) {
        if (errno == EACCES || errno == EPERM) {
            struct stat sb;
            int owner = stat(path, &sb) == 0 ? (int)sb.st_uid : -1;
            set_status(st, DR_EPERM, "pid %d: permission denied reading %s (owner uid %d, mode 0600): %s",
                       (int)pid, path, owner, perm_hint);
        }
        else if (errno == ENOENT)
            set_status(st, DR_ENODYNAMO, "pid %d: no %s", (int)pid, path);
        else
            set_status(st, DR_EIO, "%s: %s", path, strerror(errno));
        return NULL;
    }
    if (check_regular(fd, path, st) != DR_OK) {
        close(fd);
        return NULL;
    }
    DrReader *r = reader_new(SRC_SHM, pid);
    if (r == NULL) {
        close(fd);
        set_status(st, DR_ENOMEM, "out of memory");
        return NULL;
    }
    r->fd = fd;
    snprintf(r->source, sizeof r->source, "shm %s", path);
    if (refresh(r, st) != DR_OK || check_owner(r, path, st) != DR_OK) {
        dr_close(r);
        return NULL;
    }
    return r;
}

typedef struct {
    char path[4096];            /* the mapped _C shared object */
    uint64_t base;              /* address of its offset-0 mapping */
    uint64_t anchor;            /* runtime address of the anchor symbol */
} AnchorLoc;

/* Find the dynamo._C mapping of pid.  DR_OK, or an error in *st. */
static DrError
find_module(pid_t pid, AnchorLoc *loc, DrStatus *st)
{
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/maps", (int)pid);
    FILE *f = fopen(path, "re");
    if (f == NULL) {
        if (errno == ENOENT)
            return set_status(st, DR_ENOPROC, "no process with pid %d", (int)pid);
        if (errno == EACCES || errno == EPERM)
            return set_status(st, DR_EPERM, "pid %d: permission denied reading %s: %s", (int)pid,
                              path, ptrace_hint);
        return set_status(st, DR_EIO, "%s: %s", path, strerror(errno));
    }
    char line[4400];
    int found = 0, lines = 0;
    while (fgets(line, sizeof line, f) != NULL) {
        lines++;
        unsigned long long start, end, off;
        int name_at = 0;
        if (sscanf(line, "%llx-%llx %*s %llx %*s %*s %n", &start, &end, &off, &name_at) < 3
                || name_at == 0)
            continue;
        char *name = line + name_at;
        name[strcspn(name, "\n")] = '\0';
        const char *base = strrchr(name, '/');
        base = base != NULL ? base + 1 : name;
        if (strncmp(base, "_C.", 3) != 0 || strstr(base, ".so") == NULL || off != 0)
            continue;
        if (!found || start < loc->base) {
            loc->base = start;
            snprintf(loc->path, sizeof loc->path, "%s", name);
        }
        found = 1;
    }
    int read_failed = ferror(f);
    fclose(f);
    if (read_failed || (lines == 0 && !process_alive(pid)))
        return process_alive(pid)
            ? set_status(st, DR_EPERM, "pid %d: permission denied reading %s: %s", (int)pid, path,
                         ptrace_hint)
            : set_status(st, DR_ENOPROC, "no process with pid %d", (int)pid);
    if (!found)
        return set_status(st, DR_ENODYNAMO,
                          "pid %d has not loaded dynamo._C (no dynamo telemetry)", (int)pid);
    return DR_OK;
}

/* Resolve the anchor symbol in loc->path with libelf. */
static DrError
resolve_anchor(pid_t pid, AnchorLoc *loc, DrStatus *st)
{
    if (elf_version(EV_CURRENT) == EV_NONE)
        return set_status(st, DR_EIO, "libelf: %s", elf_errmsg(-1));
    /* Through /proc/PID/root so a process in another mount namespace works. */
    char path[4200];
    snprintf(path, sizeof path, "/proc/%d/root%s", (int)pid, loc->path);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        fd = open(loc->path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return set_status(st, errno == EACCES ? DR_EPERM : DR_EIO, "%s: %s", loc->path, strerror(errno));
    DrError e = DR_OK;
    Elf *elf = elf_begin(fd, ELF_C_READ, NULL);
    uint64_t min_vaddr = UINT64_MAX, value = 0;
    int have = 0;
    size_t nph = 0;
    if (elf == NULL || elf_kind(elf) != ELF_K_ELF || elf_getphdrnum(elf, &nph) != 0) {
        e = set_status(st, DR_ECORRUPT, "%s: not an ELF file", loc->path);
        goto done;
    }
    for (size_t i = 0; i < nph; i++) {
        GElf_Phdr ph;
        if (gelf_getphdr(elf, (int)i, &ph) != NULL && ph.p_type == PT_LOAD && ph.p_vaddr < min_vaddr)
            min_vaddr = ph.p_vaddr;
    }
    for (Elf_Scn *scn = elf_nextscn(elf, NULL); scn != NULL && !have; scn = elf_nextscn(elf, scn)) {
        GElf_Shdr sh;
        if (gelf_getshdr(scn, &sh) == NULL || sh.sh_type != SHT_DYNSYM || sh.sh_entsize == 0)
            continue;
        Elf_Data *data = elf_getdata(scn, NULL);
        size_t n = data != NULL ? sh.sh_size / sh.sh_entsize : 0;
        for (size_t k = 0; k < n; k++) {
            GElf_Sym sym;
            const char *name;
            if (gelf_getsym(data, (int)k, &sym) == NULL
                    || (name = elf_strptr(elf, sh.sh_link, sym.st_name)) == NULL
                    || strcmp(name, DT_ANCHOR_SYMBOL) != 0 || sym.st_shndx == SHN_UNDEF)
                continue;
            value = sym.st_value;
            have = 1;
            break;
        }
    }
    if (!have || min_vaddr == UINT64_MAX) {
        e = set_status(st, DR_ENODYNAMO, "%s has no %s symbol (built without telemetry?)",
                       loc->path, DT_ANCHOR_SYMBOL);
        goto done;
    }
    loc->anchor = loc->base - (min_vaddr & ~(uint64_t)0xfff) + value;
done:
    if (elf != NULL)
        elf_end(elf);
    close(fd);
    return e;
}

/* Read and check the anchor of pid into *a. */
static DrError
read_anchor(pid_t pid, DtAnchor *a, AnchorLoc *loc, DrStatus *st)
{
    DrError e = find_module(pid, loc, st);
    if (e == DR_OK)
        e = resolve_anchor(pid, loc, st);
    if (e != DR_OK)
        return e;
    Remote rm = {pid, loc->anchor, sizeof *a};
    if (read_remote(&rm, 0, a, sizeof *a) < 0) {
        if (errno == EPERM || errno == EACCES)
            return set_status(st, DR_EPERM, "pid %d: permission denied reading its memory: %s",
                              (int)pid, ptrace_hint);
        if (errno == ESRCH)
            return set_status(st, DR_ENOPROC, "no process with pid %d", (int)pid);
        return set_status(st, DR_EIO, "pid %d: reading the anchor at 0x%llx: %s", (int)pid,
                          (unsigned long long)loc->anchor, strerror(errno));
    }
    if (memcmp(a->magic, DT_ANCHOR_MAGIC, 8) != 0 || a->size != sizeof *a)
        return set_status(st, DR_ECORRUPT, "pid %d: bad anchor at 0x%llx", (int)pid,
                          (unsigned long long)loc->anchor);
    if (a->version != DT_VERSION)
        return set_status(st, DR_EVERSION, "pid %d: layout version %u, this reader understands %u",
                          (int)pid, a->version, DT_VERSION);
    if (!a->enabled || a->region_addr == 0)
        return set_status(st, DR_ENODYNAMO,
                          "pid %d: dynamo telemetry is off (DYNAMO_TELEMETRY=0%s%s)", (int)pid,
                          a->init_errno ? ", or region creation failed: " : "",
                          a->init_errno ? strerror((int)a->init_errno) : "");
    return DR_OK;
}

static DrReader *
open_anchor(pid_t pid, DrStatus *st)
{
    DtAnchor a;
    AnchorLoc loc = {0};
    if (read_anchor(pid, &a, &loc, st) != DR_OK)
        return NULL;
    DrReader *r = reader_new(SRC_ANCHOR, pid);
    if (r == NULL) {
        set_status(st, DR_ENOMEM, "out of memory");
        return NULL;
    }
    r->remote_addr = a.region_addr;
    r->remote_size = a.region_size;
    snprintf(r->source, sizeof r->source, "anchor pid %d @0x%llx", (int)pid,
             (unsigned long long)a.region_addr);
    if (refresh(r, st) != DR_OK) {
        dr_close(r);
        return NULL;
    }
    return r;
}

DrReader *
dr_open_pid(pid_t pid, int flags, DrStatus *st)
{
    set_status(st, DR_OK, "%s", "");
    if (pid <= 0) {
        set_status(st, DR_ENOPROC, "no process with pid %d", (int)pid);
        return NULL;
    }
    int alive = process_alive(pid);
    DrReader *r = NULL;
    DrStatus shm_st = {DR_ENODYNAMO, ""};
    if (!(flags & DR_OPEN_ANCHOR_ONLY)) {
        r = open_shm(pid, &shm_st);
        if (shm_st.code == DR_EFOREIGN && alive && !(flags & DR_OPEN_SHM_ONLY)) {
            /* not the process's file: its own region, if any, is in its memory */
            r = open_anchor(pid, st);
            if (r == NULL)
                *st = shm_st;   /* the refusal explains more than the anchor's failure */
            return r;
        }
        if (r != NULL || shm_st.code != DR_ENODYNAMO) {     /* found, or a real error */
            *st = shm_st;
            if (r != NULL && !alive)
                r->exited = 1;  /* a file left by a crashed process */
            return r;
        }
    }
    if (!alive) {
        set_status(st, DR_ENOPROC, "no process with pid %d", (int)pid);
        return NULL;
    }
    if (flags & DR_OPEN_SHM_ONLY) {
        set_status(st, DR_ENODYNAMO, "pid %d: no dynamo telemetry file /dev/shm/dynamo-%d "
                   "(dynamo not imported, or DYNAMO_TELEMETRY=0)", (int)pid, (int)pid);
        return NULL;
    }
    return open_anchor(pid, st);
}

DrReader *
dr_open_file(const char *path, DrStatus *st)
{
    set_status(st, DR_OK, "%s", "");
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);    /* a FIFO must not block */
    if (fd < 0) {
        set_status(st, errno == EACCES || errno == EPERM ? DR_EPERM : DR_EIO, "%s: %s%s%s", path,
                   strerror(errno), errno == EACCES ? ": " : "", errno == EACCES ? perm_hint : "");
        return NULL;
    }
    struct stat sb;
    DrReader *r = NULL;
    if (check_regular(fd, path, st) != DR_OK)
        goto done;
    if (fstat(fd, &sb) < 0) {
        set_status(st, DR_EIO, "%s: %s", path, strerror(errno));
        goto done;
    }
    if ((uint64_t)sb.st_size < DT_HEADER_SIZE) {
        set_status(st, DR_ECORRUPT, "%s: truncated snapshot (%lld bytes, the header alone is %u)",
                   path, (long long)sb.st_size, DT_HEADER_SIZE);
        goto done;
    }
    if ((r = reader_new(SRC_FILE, 0)) == NULL || (r->image = malloc((size_t)sb.st_size)) == NULL) {
        set_status(st, DR_ENOMEM, "out of memory");
        goto fail;
    }
    r->image_len = (size_t)sb.st_size;
    if (read_fd(&fd, 0, r->image, r->image_len) < 0) {
        set_status(st, DR_EIO, "%s: %s", path, strerror(errno));
        goto fail;
    }
    char msg[256];
    DrError e = image_check_header((const DtHeader *)r->image, r->image_len, msg, sizeof msg);
    if (e != DR_OK) {
        set_status(st, e, "%s: %s", path, msg);
        goto fail;
    }
    const DtHeader *h = (const DtHeader *)r->image;
    r->pid = (pid_t)h->pid;
    snprintf(r->source, sizeof r->source, "file %s", path);
    goto done;
fail:
    dr_close(r);
    r = NULL;
done:
    close(fd);
    return r;
}

DrReader *
dr_open_memory(const void *data, size_t len, const char *name, DrStatus *st)
{
    set_status(st, DR_OK, "%s", "");
    if (len < DT_HEADER_SIZE) {
        set_status(st, DR_ECORRUPT, "%s: truncated snapshot (%zu bytes, the header alone is %u)",
                   name, len, DT_HEADER_SIZE);
        return NULL;
    }
    if ((uint64_t)len > DT_REGION_MAX) {
        set_status(st, DR_ECORRUPT, "%s: %zu bytes, larger than any telemetry region", name, len);
        return NULL;
    }
    DrReader *r = reader_new(SRC_FILE, 0);
    if (r == NULL || (r->image = malloc(len)) == NULL) {
        dr_close(r);
        set_status(st, DR_ENOMEM, "out of memory");
        return NULL;
    }
    memcpy(r->image, data, len);
    r->image_len = len;
    char msg[256];
    DrError e = image_check_header((const DtHeader *)r->image, r->image_len, msg, sizeof msg);
    if (e != DR_OK) {
        set_status(st, e, "%s: %s", name, msg);
        dr_close(r);
        return NULL;
    }
    r->pid = (pid_t)((const DtHeader *)r->image)->pid;
    snprintf(r->source, sizeof r->source, "memory %s", name);
    return r;
}

DrSnapshot *
dr_snapshot(DrReader *r, DrStatus *st)
{
    set_status(st, DR_OK, "%s", "");
    DrStatus rst = {DR_OK, ""};
    if (refresh(r, &rst) != DR_OK) {
        /* The process vanished between two refreshes: keep the last state. */
        if (r->image == NULL || (rst.code != DR_ENOPROC && process_alive(r->pid))) {
            *st = rst;
            return NULL;
        }
        r->exited = 1;
    }
    char msg[256];
    DrError e = image_check_header((const DtHeader *)r->image, r->image_len, msg, sizeof msg);
    if (e != DR_OK) {
        set_status(st, e, "%s: %s", r->source, msg);
        return NULL;
    }
    RdOrigin origin = {r->exited, r->kind == SRC_FILE, r->kind == SRC_ANCHOR};
    DrSnapshot *s = rd_decode(r->image, &origin, msg, sizeof msg);
    if (s == NULL)
        set_status(st, DR_ENOMEM, "%s", msg);
    return s;
}

uint32_t
dr_guard_timing_default(void)
{
    return DT_GUARD_TIMING_DEFAULT;
}

int
dr_set_guard_timing(DrReader *r, uint32_t period, DrStatus *st)
{
    set_status(st, DR_OK, "%s", "");
    const uint64_t off = offsetof(DtHeader, guard_timing);
    if (r->kind == SRC_FILE || r->exited) {
        set_status(st, DR_EIO, "%s: %s", r->source,
                   r->exited ? "the process exited" : "a snapshot file cannot be changed");
        return -1;
    }
    if (r->kind == SRC_SHM) {
        char self[64];
        snprintf(self, sizeof self, "/proc/self/fd/%d", r->fd);
        int fd = open(self, O_WRONLY | O_CLOEXEC);
        if (fd < 0) {
            set_status(st, errno == EACCES ? DR_EPERM : DR_EIO, "%s: cannot open it for writing: %s",
                       r->source, strerror(errno));
            return -1;
        }
        ssize_t n = pwrite(fd, &period, sizeof period, (off_t)off);
        int err = errno;
        close(fd);
        if (n != (ssize_t)sizeof period) {
            set_status(st, DR_EIO, "%s: %s", r->source, n < 0 ? strerror(err) : "short write");
            return -1;
        }
        return 0;
    }
    struct iovec local = {.iov_base = &period, .iov_len = sizeof period};
    struct iovec remote = {.iov_base = (void *)(uintptr_t)(r->remote_addr + off),
                           .iov_len = sizeof period};
    if (process_vm_writev(r->pid, &local, 1, &remote, 1, 0) != (ssize_t)sizeof period) {
        set_status(st, errno == ESRCH ? DR_ENOPROC : errno == EPERM ? DR_EPERM : DR_EIO,
                   "pid %d: cannot write its memory: %s", (int)r->pid, strerror(errno));
        return -1;
    }
    return 0;
}

int
dr_save(DrReader *r, const char *path, DrStatus *st)
{
    set_status(st, DR_OK, "%s", "");
    DrStatus rst = {DR_OK, ""};
    if (refresh(r, &rst) != DR_OK && r->image == NULL) {
        *st = rst;
        return -1;
    }
    uint8_t *copy = NULL;
    size_t len = 0;
    char msg[256];
    DrError e = image_capture(read_memory, r, r->image_len, &copy, &len, msg, sizeof msg);
    if (e != DR_OK) {
        set_status(st, e, "%s", msg);
        return -1;
    }
    DtHeader *h = (DtHeader *)copy;
    if (r->exited && !(h->flags & DT_F_EXITED))
        h->flags |= DT_F_EXITED;
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    uint64_t now = h->snapshot_ns ? h->snapshot_ns
                                  : (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
    int rc = image_save(copy, len, path, now, msg, sizeof msg);
    if (rc < 0)
        set_status(st, errno == EACCES ? DR_EPERM : DR_EIO, "%s", msg);
    free(copy);
    return rc;
}

/* ---- finding processes ---------------------------------------------------------------- */

/* The pid of a decimal name ("1234"), or 0. */
static pid_t
pid_of_name(const char *s)
{
    long v = 0;
    if (*s == '\0')
        return 0;
    for (; *s; s++) {
        if (*s < '0' || *s > '9' || v > 0x3fffffffL / 10)
            return 0;
        v = v * 10 + (*s - '0');
    }
    return (pid_t)v;
}

/* Does /proc/PID/maps map dynamo's extension (a "_C.*.so" in a "dynamo"
 * directory)?  0 when unreadable. */
static int
maps_dynamo(pid_t pid)
{
    char path[64], line[4400];
    snprintf(path, sizeof path, "/proc/%d/maps", (int)pid);
    FILE *f = fopen(path, "re");
    if (f == NULL)
        return 0;
    int found = 0;
    while (!found && fgets(line, sizeof line, f) != NULL) {
        const char *so = strstr(line, "/dynamo/_C.");
        found = so != NULL && strstr(so, ".so") != NULL;
    }
    fclose(f);
    return found;
}

typedef struct {
    pid_t *v;                   /* owned */
    size_t n, cap;
} PidSet;

/* Add pid unless present; -1 when out of memory. */
static int
pids_add(PidSet *set, pid_t pid)
{
    for (size_t i = 0; i < set->n; i++)
        if (set->v[i] == pid)
            return 0;
    if (set->n == set->cap) {
        size_t cap = set->cap ? 2 * set->cap : 16;
        pid_t *v = realloc(set->v, cap * sizeof *v);
        if (v == NULL)
            return -1;
        set->v = v;
        set->cap = cap;
    }
    set->v[set->n++] = pid;
    return 0;
}

static int
pid_cmp(const void *a, const void *b)
{
    pid_t x = *(const pid_t *)a, y = *(const pid_t *)b;
    return (x > y) - (x < y);
}

int
dr_list(pid_t **pids, size_t *n, DrStatus *st)
{
    PidSet set = {NULL, 0, 0};
    pid_t self = getpid();
    struct dirent *de;
    set_status(st, DR_OK, "%s", "");
    *pids = NULL;
    *n = 0;
    DIR *shm = opendir("/dev/shm");         /* absent /dev/shm: only the maps scan */
    while (shm != NULL && (de = readdir(shm)) != NULL) {
        if (interrupted())
            goto intr;
        pid_t pid = strncmp(de->d_name, "dynamo-", 7) == 0 ? pid_of_name(de->d_name + 7) : 0;
        if (pid > 0 && pid != self && process_alive(pid) && pids_add(&set, pid) < 0)
            goto nomem;
    }
    if (shm != NULL)
        closedir(shm);
    shm = NULL;
    DIR *proc = opendir("/proc");
    if (proc == NULL) {
        free(set.v);
        set_status(st, DR_EIO, "cannot read /proc: %s", strerror(errno));
        return -1;
    }
    while ((de = readdir(proc)) != NULL) {
        if (interrupted()) {
            closedir(proc);
            goto intr;
        }
        pid_t pid = pid_of_name(de->d_name);
        if (pid > 0 && pid != self && maps_dynamo(pid) && pids_add(&set, pid) < 0) {
            closedir(proc);
            goto nomem;
        }
    }
    closedir(proc);
    qsort(set.v, set.n, sizeof *set.v, pid_cmp);
    *pids = set.n ? set.v : NULL;
    *n = set.n;
    if (set.n == 0)
        free(set.v);
    return 0;
nomem:
    if (shm != NULL)
        closedir(shm);
    free(set.v);
    set_status(st, DR_ENOMEM, "out of memory");
    return -1;
intr:
    if (shm != NULL)
        closedir(shm);
    free(set.v);
    set_status(st, DR_EINTR, "interrupted");
    return -1;
}

/* Is the entry `name` of the open /dev/shm `dir` a telemetry file of a
 * dead process (pid), owned by `me`, that no writer holds?  It is then
 * removed: 1; else 0.  The checks run on an open descriptor, and the name
 * must still be that inode just before the unlink. */
static int
remove_if_stale(DIR *dir, const char *name, pid_t pid, uid_t me)
{
    int dfd = dirfd(dir);
    int fd = openat(dfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0)
        return 0;
    struct stat sb, now;
    char magic[8];
    int stale = fstat(fd, &sb) == 0 && S_ISREG(sb.st_mode) && sb.st_uid == me
                && pread(fd, magic, sizeof magic, 0) == (ssize_t)sizeof magic
                && memcmp(magic, DT_MAGIC, sizeof magic) == 0
                && flock(fd, LOCK_EX | LOCK_NB) == 0       /* no live writer (any pid namespace) */
                && !process_alive(pid)
                && fstatat(dfd, name, &now, AT_SYMLINK_NOFOLLOW) == 0
                && now.st_ino == sb.st_ino && now.st_dev == sb.st_dev
                && unlinkat(dfd, name, 0) == 0;
    close(fd);
    return stale;
}

int
dr_remove_stale(size_t *removed, DrStatus *st)
{
    struct dirent *de;
    uid_t me = geteuid();
    set_status(st, DR_OK, "%s", "");
    *removed = 0;
    DIR *shm = opendir("/dev/shm");
    while (shm != NULL && (de = readdir(shm)) != NULL) {
        if (interrupted()) {
            closedir(shm);
            set_status(st, DR_EINTR, "interrupted");
            return -1;
        }
        pid_t pid = strncmp(de->d_name, "dynamo-", 7) == 0 ? pid_of_name(de->d_name + 7) : 0;
        if (pid > 0 && !process_alive(pid))
            *removed += (size_t)remove_if_stale(shm, de->d_name, pid, me);
    }
    if (shm != NULL)
        closedir(shm);
    return 0;
}

/* ---- diagnostics ---------------------------------------------------------------------- */

int
dr_diagnose(pid_t pid, void *out, DrStatus *st)
{
    FILE *f = out;
    int ok = 0;
    set_status(st, DR_OK, "%s", "");
    int alive = pid > 0 && process_alive(pid);
    fprintf(f, "process %d: %s\n", (int)pid, alive ? "running" : "not found");
    DrStatus s1 = {DR_OK, ""};
    DrReader *r = dr_open_pid(pid, DR_OPEN_SHM_ONLY, &s1);
    if (r != NULL) {
        const DtHeader *h = (const DtHeader *)r->image;
        fprintf(f, "shm: %s ok (version %u, %u codes, %u records, %llu events, %u blob bytes%s)\n",
                r->source + 4, h->version, h->n_codes, h->n_entries,
                (unsigned long long)h->n_events, h->blob_used,
                (h->flags & DT_F_EXITED) ? ", EXITED" : "");
        ok = 1;
        dr_close(r);
    }
    else
        fprintf(f, "shm: %s\n", s1.msg);
    if (!alive) {
        if (!ok)
            *st = s1.code == DR_ENODYNAMO ? (DrStatus){DR_ENOPROC, ""} : s1;
        if (!ok && st->msg[0] == '\0')
            set_status(st, DR_ENOPROC, "no process with pid %d", (int)pid);
        return ok ? 0 : -1;
    }
    AnchorLoc loc = {0};
    DrStatus s2 = {DR_OK, ""};
    DtAnchor a;
    char clean[sizeof loc.path];    /* the path and the anchor are the process's text */
    if (find_module(pid, &loc, &s2) == DR_OK) {
        fprintf(f, "module: %s mapped at 0x%llx\n", str_clean(clean, sizeof clean, loc.path),
                (unsigned long long)loc.base);
        if (resolve_anchor(pid, &loc, &s2) == DR_OK)
            fprintf(f, "anchor: %s at 0x%llx\n", DT_ANCHOR_SYMBOL, (unsigned long long)loc.anchor);
    }
    if (s2.code == DR_OK && read_anchor(pid, &a, &loc, &s2) == DR_OK) {
        char shm[sizeof a.shm_path + 1];    /* not NUL-terminated when hostile */
        memcpy(shm, a.shm_path, sizeof a.shm_path);
        shm[sizeof a.shm_path] = '\0';
        fprintf(f, "anchor: version %u, region 0x%llx (%llu bytes), shm path \"%s\"\n", a.version,
                (unsigned long long)a.region_addr, (unsigned long long)a.region_size,
                str_clean(clean, sizeof clean, shm));
    }
    if (s2.code == DR_OK) {
        r = open_anchor(pid, &s2);
        if (r != NULL) {
            fprintf(f, "anchor: region readable (%zu bytes captured)\n", r->image_len);
            ok = 1;
            dr_close(r);
        }
    }
    if (s2.code != DR_OK)
        fprintf(f, "anchor: %s\n", s2.msg);
    fprintf(f, "result: %s\n", ok ? "telemetry readable" : "telemetry NOT readable");
    if (!ok)
        *st = s1.code != DR_ENODYNAMO ? s1 : s2;
    return ok ? 0 : -1;
}
