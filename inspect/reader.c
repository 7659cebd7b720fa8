/* inspect/reader.c — the telemetry reader library (reader.h).
 *
 * Owns: the three ways to reach a region (shm file by pid, the anchor
 * symbol through /proc/PID/maps + libelf + process_vm_readv, a snapshot
 * file), the error codes and messages, and the decoding of a compact image
 * (image.h) into a DrSnapshot.  Input is untrusted: every ref, length and
 * index is checked; bad data yields empty fields or DR_ECORRUPT, never a
 * crash.  It never writes to the watched process.
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
#include "value.h"

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
dr_resume_kind_label(const char *kind)
{
    if (strcmp(kind, "branch") == 0)
        return "branch taken";
    if (strcmp(kind, "fallthrough") == 0)
        return "fall-through";
    if (strcmp(kind, "after") == 0)
        return "after break";
    return *kind ? kind : "?";
}

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

/* ---- decoding ------------------------------------------------------------------------ */

typedef struct {
    const uint8_t *img;
    const DtHeader *h;
    DvArena *arena;
} Dec;

/* Payload of a blob ref of `type`, or NULL when absent/invalid. */
static const uint8_t *
blob_payload(const Dec *d, DtRef ref, uint16_t type, size_t *len)
{
    if (ref.len < sizeof(DtBlob) || ref.off > d->h->blob_used
            || ref.len > d->h->blob_used - ref.off)
        return NULL;
    const uint8_t *p = d->img + d->h->blob_off + ref.off;
    DtBlob b;
    memcpy(&b, p, sizeof b);
    if (b.magic != DT_BLOB_MAGIC || b.type != type || b.len != ref.len - sizeof(DtBlob))
        return NULL;
    *len = b.len;
    return p + sizeof(DtBlob);
}

static const char *
text(const Dec *d, DtRef ref)
{
    size_t len;
    const uint8_t *p = blob_payload(d, ref, DT_BLOB_TEXT, &len);
    return p != NULL ? dv_strndup(d->arena, (const char *)p, len) : "";
}

/* A fixed char field, NUL-terminated within its size or not. */
static const char *
field(const Dec *d, const char *s, size_t cap)
{
    return dv_strndup(d->arena, s, strnlen(s, cap));
}

static const char *
fmt(const Dec *d, const char *f, unsigned a, unsigned b)
{
    char buf[48];
    int n = snprintf(buf, sizeof buf, f, a, b);
    return dv_strndup(d->arena, buf, n > 0 ? (size_t)n : 0);
}

static const char **
strings(const Dec *d, const DvVal *list, size_t *n)
{
    *n = dv_len(list);
    const char **out = dv_alloc(d->arena, (*n ? *n : 1) * sizeof *out);
    if (out == NULL) {
        *n = 0;
        return NULL;
    }
    for (size_t i = 0; i < *n; i++)
        out[i] = dv_str(d->arena, dv_item(list, i));
    return out;
}

static void *
array(const Dec *d, size_t n, size_t size)
{
    return dv_alloc(d->arena, (n ? n : 1) * size);
}

static void
decode_graph(const Dec *d, const DvVal *v, DrGraph *g)
{
    g->name = dv_str(d->arena, dv_item(v, 0));
    g->op_count = (uint64_t)dv_int(dv_item(v, 1));
    const DvVal *nodes = dv_item(v, 2);
    g->nodes = array(d, dv_len(nodes), sizeof(DrNode));
    g->n_nodes = g->nodes ? dv_len(nodes) : 0;
    for (size_t i = 0; i < g->n_nodes; i++) {
        const DvVal *nv = dv_item(nodes, i);
        DrNode *n = &g->nodes[i];
        const char **fields[] = {&n->op, &n->name, &n->target, &n->args, &n->dtype, &n->shape,
                                 &n->stride, &n->device, &n->module_path};
        for (size_t k = 0; k < sizeof fields / sizeof *fields; k++)
            *fields[k] = dv_str(d->arena, dv_item(nv, k));
        n->users = strings(d, dv_item(nv, 9), &n->n_users);
        n->inputs = strings(d, dv_item(nv, 10), &n->n_inputs);
        n->module_class = dv_str(d->arena, dv_item(nv, 11));
    }
}

static void
decode_break(const Dec *d, const DvVal *v, DrBreak *b)
{
    b->reason = dv_str(d->arena, dv_item(v, 0));
    b->filename = dv_str(d->arena, dv_item(v, 1));
    b->lineno = (uint32_t)dv_int(dv_item(v, 2));
    const DvVal *stack = dv_item(v, 3);
    b->user_stack = array(d, dv_len(stack), sizeof(DrFrame));
    b->n_frames = b->user_stack ? dv_len(stack) : 0;
    for (size_t i = 0; i < b->n_frames; i++) {
        const DvVal *fv = dv_item(stack, i);
        b->user_stack[i] = (DrFrame){
            .filename = dv_str(d->arena, dv_item(fv, 0)), .lineno = (uint32_t)dv_int(dv_item(fv, 1)),
            .name = dv_str(d->arena, dv_item(fv, 2)), .line = dv_str(d->arena, dv_item(fv, 3)),
        };
    }
    b->count = 1;
    b->first_record = "";
}

/* Fill rec from its DtEntry slot and RECORD blob (absent blob: slot fields only). */
static void
decode_record(const Dec *d, const DtEntry *e, DrRecord *rec)
{
    DvVal v = {0};
    size_t len;
    const uint8_t *p = blob_payload(d, e->record, DT_BLOB_RECORD, &len);
    if (p != NULL && dv_parse(d->arena, p, len, &v) < 0)
        memset(&v, 0, sizeof v);
    DvArena *a = d->arena;
    rec->frame_id = e->frame_id;
    rec->compile_id = e->compile_id;
    rec->id = fmt(d, "[%u/%u]", e->frame_id, e->compile_id);
    rec->status = dv_str(a, dv_item(&v, 2));
    rec->backend = dv_str(a, dv_item(&v, 3));
    rec->name = dv_str(a, dv_item(&v, 4));
    rec->filename = dv_str(a, dv_item(&v, 5));
    rec->firstlineno = (uint32_t)dv_int(dv_item(&v, 6));
    rec->start_ns = (uint64_t)dv_int(dv_item(&v, 7));
    rec->compile_ns = e->compile_ns;
    rec->backend_ns = (uint64_t)dv_int(dv_item(&v, 9));
    rec->recompile_reason = dv_str(a, dv_item(&v, 10));
    rec->error = dv_str(a, dv_item(&v, 11));
    rec->original_bytecode = dv_str(a, dv_item(&v, 12));
    rec->modified_bytecode = dv_str(a, dv_item(&v, 13));
    rec->op_count = (uint64_t)dv_int(dv_item(&v, 17));
    const DvVal *graphs = dv_item(&v, 14), *guards = dv_item(&v, 15), *breaks = dv_item(&v, 16);
    rec->graphs = array(d, dv_len(graphs), sizeof(DrGraph));
    rec->n_graphs = rec->graphs ? dv_len(graphs) : 0;
    for (size_t i = 0; i < rec->n_graphs; i++)
        decode_graph(d, dv_item(graphs, i), &rec->graphs[i]);
    rec->guards = array(d, dv_len(guards), sizeof(DrGuard));
    rec->n_guards = rec->guards ? dv_len(guards) : 0;
    size_t nc = 0;
    const uint8_t *counts = blob_payload(d, e->fail_counts, DT_BLOB_COUNTERS, &nc);
    nc = counts != NULL ? nc / 8 : 0;
    for (size_t i = 0; i < rec->n_guards; i++) {
        const DvVal *gv = dv_item(guards, i);
        DrGuard *g = &rec->guards[i];
        g->text = dv_str(a, dv_item(gv, 0));
        g->kind = dv_str(a, dv_item(gv, 1));
        g->source = dv_str(a, dv_item(gv, 2));
        g->detail = dv_str(a, dv_item(gv, 3));
        if (i < nc && i < e->n_guards)
            memcpy(&g->fail_count, counts + 8 * i, 8);
        g->last_failed = e->last_fail_guard == i;
    }
    rec->breaks = array(d, dv_len(breaks), sizeof(DrBreak));
    rec->n_breaks = rec->breaks ? dv_len(breaks) : 0;
    for (size_t i = 0; i < rec->n_breaks; i++)
        decode_break(d, dv_item(breaks, i), &rec->breaks[i]);
    const DvVal *resumes = dv_item(&v, 18);
    rec->resumes = array(d, dv_len(resumes), sizeof(DrResume));
    rec->n_resumes = rec->resumes ? dv_len(resumes) : 0;
    for (size_t i = 0; i < rec->n_resumes; i++) {
        const DvVal *rv = dv_item(resumes, i);
        int64_t offset = dv_int(dv_item(rv, 1));
        rec->resumes[i] = (DrResume){
            .name = dv_str(a, dv_item(rv, 0)),
            .offset = offset >= 0 && offset <= UINT32_MAX ? (uint32_t)offset : 0,
            .kind = dv_str(a, dv_item(rv, 2)),
        };
    }
}

/* Newer node counters from the code's DT_BLOB_COUNTERS copy, when it
 * matches the tree (a refresh after a republish may not have run yet). */
static void
apply_tree_counters(const Dec *d, const DtCode *c, DrTree *t)
{
    size_t len;
    const uint8_t *p = blob_payload(d, c->tree_counters, DT_BLOB_COUNTERS, &len);
    if (p == NULL || t->n_nodes == 0 || len != t->n_nodes * 16)
        return;
    for (size_t i = 0; i < t->n_nodes; i++) {
        memcpy(&t->nodes[i].evaluations, p + 16 * i, 8);
        memcpy(&t->nodes[i].failures, p + 16 * i + 8, 8);
    }
    t->counters_ns = c->counters_ns;
    t->live = (c->flags & DT_C_LIVE_TREE) != 0;
}

static void
decode_tree(const Dec *d, const DtCode *c, DrTree *t)
{
    size_t len;
    const uint8_t *p = blob_payload(d, c->tree, DT_BLOB_TREE, &len);
    DvVal v;
    if (p == NULL || dv_parse(d->arena, p, len, &v) < 0)
        return;
    const DvVal *nodes = dv_item(&v, 1);
    t->nodes = array(d, dv_len(nodes), sizeof(DrTreeNode));
    t->n_nodes = t->nodes ? dv_len(nodes) : 0;
    for (size_t i = 0; i < t->n_nodes; i++) {
        const DvVal *nv = dv_item(nodes, i);
        DrTreeNode *n = &t->nodes[i];
        n->id = dv_int(dv_item(nv, 0));
        n->parent = dv_int(dv_item(nv, 1));
        if (n->parent < -1 || n->parent >= (int64_t)t->n_nodes)
            n->parent = -1;
        n->depth = (uint32_t)dv_int(dv_item(nv, 2));
        n->via = dv_str(d->arena, dv_item(nv, 3));
        n->tests = strings(d, dv_item(nv, 4), &n->n_tests);
        n->switch_on = dv_str(d->arena, dv_item(nv, 5));
        n->leaf = strings(d, dv_item(nv, 6), &n->n_leaf);
        n->evaluations = (uint64_t)dv_int(dv_item(nv, 7));
        n->failures = (uint64_t)dv_int(dv_item(nv, 8));
    }
    apply_tree_counters(d, c, t);
}

static const char *const event_names[] = {"?", "compile", "break", "recompile", "limit", "error", "reset"};

static void
decode_events(const Dec *d, DrSnapshot *s)
{
    const DtHeader *h = d->h;
    const DtEvent *ring = (const DtEvent *)(d->img + h->events_off);
    uint64_t cap = h->events_cap, n = h->n_events < cap ? h->n_events : cap;
    s->events = array(d, (size_t)n, sizeof(DrEvent));
    if (s->events == NULL)
        return;
    for (uint64_t i = 0; i < n; i++) {      /* n <= events_cap: bounded whatever n_events says */
        uint64_t seq = h->n_events - n + 1 + i;
        const DtEvent *ev = &ring[seq % cap];
        if (ev->seq != seq)
            continue;
        DrEvent *out = &s->events[s->n_events++];
        out->seq = seq;
        out->time_ns = ev->time_ns;
        out->kind = (DrEventKind)ev->kind;
        out->kind_name = ev->kind < sizeof event_names / sizeof *event_names ? event_names[ev->kind] : "?";
        out->frame_id = ev->frame_id == UINT32_MAX ? -1 : (int64_t)ev->frame_id;
        out->compile_id = ev->compile_id == UINT32_MAX ? -1 : (int64_t)ev->compile_id;
        out->id = ev->frame_id == UINT32_MAX ? "" : fmt(d, "[%u/%u]", ev->frame_id, ev->compile_id);
        out->text = text(d, ev->text);
        out->where = text(d, ev->where);
        out->guard_index = ev->guard_index == UINT32_MAX ? -1 : (int64_t)ev->guard_index;
        out->property = text(d, ev->property);
        out->expected = text(d, ev->expected);
        out->actual = text(d, ev->actual);
        out->code = ev->code_slot < s->n_codes ? &s->codes[ev->code_slot] : NULL;
        if (ev->entry_slot < h->n_entries && s->records != NULL) {
            /* records are in slot order: record i is slot i */
            out->entry = s->records[ev->entry_slot].entry;
        }
    }
}

static uint64_t
hash_str(uint64_t h, const char *p)
{
    for (; *p; p++)
        h = (h ^ (unsigned char)*p) * 1099511628211u;      /* FNV-1a */
    return h;
}

static uint64_t
break_hash(const DrBreak *b)
{
    return hash_str(hash_str(14695981039346656037u ^ b->lineno, b->reason), b->filename);
}

typedef struct {
    uint64_t count;
    size_t first;               /* first-seen position */
} BreakOrder;

static int
break_order_cmp(const void *a, const void *b)
{
    const BreakOrder *x = a, *y = b;
    if (x->count != y->count)
        return x->count < y->count ? 1 : -1;               /* most frequent first */
    return (x->first > y->first) - (x->first < y->first);  /* then first seen */
}

/* Deduplicate every record's breaks by (reason, filename, lineno) through
 * a hash table: linear in the number of breaks, whatever the input holds. */
static void
dedup_breaks(const Dec *d, DrSnapshot *s)
{
    size_t total = 0;
    for (size_t i = 0; i < s->n_records; i++)
        total += s->records[i].n_breaks;
    s->breaks = array(d, total, sizeof(DrBreak));
    size_t cap = 16;
    while (cap < 2 * total)
        cap *= 2;
    size_t *table = array(d, cap, sizeof(size_t));     /* break index + 1, 0 = empty */
    if (s->breaks == NULL || table == NULL)
        return;
    for (size_t i = 0; i < s->n_records; i++)
        for (size_t j = 0; j < s->records[i].n_breaks; j++) {
            const DrBreak *b = &s->records[i].breaks[j];
            size_t k = (size_t)break_hash(b) & (cap - 1);
            while (table[k] != 0) {
                DrBreak *o = &s->breaks[table[k] - 1];
                if (o->lineno == b->lineno && strcmp(o->reason, b->reason) == 0
                        && strcmp(o->filename, b->filename) == 0)
                    break;
                k = (k + 1) & (cap - 1);
            }
            if (table[k] != 0) {
                s->breaks[table[k] - 1].count++;
                continue;
            }
            s->breaks[s->n_breaks] = *b;
            s->breaks[s->n_breaks].count = 1;
            s->breaks[s->n_breaks].first_record = s->records[i].id;
            table[k] = ++s->n_breaks;
        }
    /* Most frequent first, first-seen order among equals. */
    BreakOrder *order = array(d, s->n_breaks, sizeof(BreakOrder));
    DrBreak *sorted = array(d, s->n_breaks, sizeof(DrBreak));
    if (order == NULL || sorted == NULL)
        return;
    for (size_t i = 0; i < s->n_breaks; i++)
        order[i] = (BreakOrder){s->breaks[i].count, i};
    qsort(order, s->n_breaks, sizeof *order, break_order_cmp);
    for (size_t i = 0; i < s->n_breaks; i++)
        sorted[i] = s->breaks[order[i].first];
    s->breaks = sorted;
}

static void
decode_process(const Dec *d, const DrReader *r, DrProcess *p)
{
    const DtHeader *h = d->h;
    p->pid = (int)h->pid;
    p->exited = r->exited || (h->flags & DT_F_EXITED) != 0;
    p->from_file = r->kind == SRC_FILE;
    p->anonymous = r->kind == SRC_ANCHOR || (h->flags & DT_F_ANON) != 0;
    p->start_ns = h->start_ns;
    if (h->snapshot_ns != 0)
        p->snapshot_ns = h->snapshot_ns;
    else {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        p->snapshot_ns = (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
    }
    p->exit_ns = h->exit_ns;
    p->version = h->version;
    p->python_version = field(d, h->python_version, sizeof h->python_version);
    p->torch_version = field(d, h->torch_version, sizeof h->torch_version);
    p->dynamo_version = field(d, h->dynamo_version, sizeof h->dynamo_version);
    p->argv = field(d, h->argv, sizeof h->argv);
    p->shm_path = field(d, h->shm_path, sizeof h->shm_path);
    p->publishes = h->publishes;
    p->blobs_dropped = h->blobs_dropped;
    p->slots_dropped = h->slots_dropped;
    p->blob_used = h->blob_used;
    p->blob_cap = h->blob_cap;
}

static void
decode_codes(const Dec *d, DrSnapshot *s)
{
    const DtCode *codes = (const DtCode *)(d->img + d->h->codes_off);
    s->codes = array(d, d->h->n_codes, sizeof(DrCode));
    s->n_codes = s->codes ? d->h->n_codes : 0;
    for (size_t i = 0; i < s->n_codes; i++) {
        const DtCode *c = &codes[i];
        DrCode *out = &s->codes[i];
        out->slot = (uint32_t)i;
        out->frame_id = c->frame_id;
        out->name = text(d, c->name);
        out->filename = text(d, c->filename);
        out->firstlineno = c->firstlineno;
        out->dead = (c->flags & DT_C_DEAD) != 0;
        out->limit_hit = (c->flags & DT_C_LIMIT) != 0;
        out->skipped = (c->flags & DT_C_SKIP) != 0;
        out->calls = c->calls;
        out->hits = c->hits;
        out->misses = c->misses;
        out->guard_failures = c->guard_failures;
        out->compiles = c->compiles;
        out->compile_ns = c->compile_ns;
        out->cache_size_limit = c->cache_size_limit;
        decode_tree(d, c, &out->tree);
        s->total_calls += c->calls;
        s->total_hits += c->hits;
        s->total_misses += c->misses;
    }
}

static void
decode_entries(const Dec *d, DrSnapshot *s)
{
    const DtEntry *slots = (const DtEntry *)(d->img + d->h->entries_off);
    size_t n = d->h->n_entries, n_live = 0;
    s->records = array(d, n, sizeof(DrRecord));
    s->entries = array(d, n, sizeof(DrEntry));
    if (s->records == NULL || s->entries == NULL)
        return;
    s->n_records = n;
    for (size_t i = 0; i < n; i++) {
        const DtEntry *e = &slots[i];
        DrRecord *rec = &s->records[i];
        decode_record(d, e, rec);
        rec->code = e->code_slot < s->n_codes ? &s->codes[e->code_slot] : NULL;
        if (rec->code != NULL) {
            rec->code->n_records++;
            if (!*rec->name)
                rec->name = rec->code->name;
            if (!*rec->filename)
                rec->filename = rec->code->filename;
        }
        if (e->flags & DT_E_RECORD)
            continue;
        DrEntry *out = &s->entries[n_live++];
        out->slot = (uint32_t)i;
        out->frame_id = e->frame_id;
        out->compile_id = e->compile_id;
        out->id = rec->id;
        out->dead = (e->flags & DT_E_DEAD) != 0;
        out->hits = e->hits;
        out->guard_failures = e->guard_failures;
        out->compile_ns = e->compile_ns;
        out->created_ns = e->created_ns;
        out->last_fail_guard = e->last_fail_guard == UINT32_MAX ? -1 : (int64_t)e->last_fail_guard;
        out->last_fail_ns = e->last_fail_ns;
        out->last_fail_property = field(d, e->last_fail_property, sizeof e->last_fail_property);
        out->last_fail_expected = field(d, e->last_fail_expected, sizeof e->last_fail_expected);
        out->last_fail_actual = field(d, e->last_fail_actual, sizeof e->last_fail_actual);
        out->record = rec;
        out->code = rec->code;
        rec->entry = out;
        if (out->code != NULL)
            out->code->n_entries++;
    }
    s->n_entries = n_live;
}

/* Per-code arrays: entries newest first, records oldest first.  One pass
 * over the entries and one over the records (a scan of all of them per
 * code was quadratic). */
static void
link_codes(const Dec *d, DrSnapshot *s)
{
    for (size_t i = 0; i < s->n_codes; i++) {
        DrCode *c = &s->codes[i];
        c->entries = array(d, c->n_entries, sizeof(DrEntry *));
        c->records = array(d, c->n_records, sizeof(DrRecord *));
        if (c->entries == NULL || c->records == NULL) {
            c->entries = NULL;
            c->records = NULL;
        }
    }
    /* n_entries/n_records were counted by decode_entries: they are the
     * capacities; refill them as the fill levels. */
    size_t *cap = array(d, 2 * s->n_codes, sizeof(size_t));
    if (cap == NULL)
        return;
    for (size_t i = 0; i < s->n_codes; i++) {
        cap[2 * i] = s->codes[i].entries ? s->codes[i].n_entries : 0;
        cap[2 * i + 1] = s->codes[i].records ? s->codes[i].n_records : 0;
        s->codes[i].n_entries = s->codes[i].n_records = 0;
    }
    for (size_t k = s->n_entries; k-- > 0;) {
        DrCode *c = s->entries[k].code;
        size_t i = c != NULL ? (size_t)(c - s->codes) : 0;
        if (c != NULL && c->n_entries < cap[2 * i])
            c->entries[c->n_entries++] = &s->entries[k];
    }
    for (size_t k = 0; k < s->n_records; k++) {
        DrCode *c = s->records[k].code;
        size_t i = c != NULL ? (size_t)(c - s->codes) : 0;
        if (c != NULL && c->n_records < cap[2 * i + 1])
            c->records[c->n_records++] = &s->records[k];
    }
}

static int
code_name_cmp(const void *a, const void *b)
{
    const DrCode *x = *(DrCode *const *)a, *y = *(DrCode *const *)b;
    int c = strcmp(x->name, y->name);
    return c != 0 ? c : (x->slot > y->slot) - (x->slot < y->slot);
}

/* The code a resume function name refers to: the live one, else the newest
 * (resume names are unique within a process; a dead code kept its slot).
 * byname: the codes with a frame id, sorted by (name, slot). */
static DrCode *
code_named(DrCode **byname, size_t n, const char *name)
{
    size_t lo = 0, hi = n;
    while (lo < hi) {           /* first index with name >= `name` */
        size_t mid = lo + (hi - lo) / 2;
        if (strcmp(byname[mid]->name, name) < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    DrCode *best = NULL;
    for (size_t i = lo; *name && i < n && strcmp(byname[i]->name, name) == 0; i++)
        if (best == NULL || !byname[i]->dead || best->dead)
            best = byname[i];
    return best;
}

/* Linking every resume name to its code: a sort and a binary search each
 * (linear scans made an input with many codes and resumes hang). */
static void
link_resumes(const Dec *d, DrSnapshot *s)
{
    DrCode **byname = array(d, s->n_codes, sizeof(DrCode *));
    size_t n = 0;
    if (byname == NULL)
        return;
    for (size_t i = 0; i < s->n_codes; i++)
        if (s->codes[i].frame_id != UINT32_MAX)
            byname[n++] = &s->codes[i];
    qsort(byname, n, sizeof *byname, code_name_cmp);
    for (size_t r = 0; r < s->n_records; r++)
        for (size_t i = 0; i < s->records[r].n_resumes; i++)
            s->records[r].resumes[i].code = code_named(byname, n, s->records[r].resumes[i].name);
}

static DrSnapshot *
decode(const DrReader *r, DrStatus *st)
{
    DrSnapshot *s = calloc(1, sizeof *s);
    DvArena *arena = calloc(1, sizeof *arena);
    if (s == NULL || arena == NULL) {
        free(s);
        free(arena);
        set_status(st, DR_ENOMEM, "out of memory");
        return NULL;
    }
    s->priv = arena;
    Dec d = {r->image, (const DtHeader *)r->image, arena};
    decode_process(&d, r, &s->process);
    decode_codes(&d, s);
    decode_entries(&d, s);
    link_codes(&d, s);
    link_resumes(&d, s);
    decode_events(&d, s);
    dedup_breaks(&d, s);
    if (arena->failed) {
        dr_snapshot_free(s);
        set_status(st, DR_ENOMEM, "out of memory decoding the snapshot");
        return NULL;
    }
    return s;
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
    return decode(r, st);
}

void
dr_snapshot_free(DrSnapshot *s)
{
    if (s == NULL)
        return;
    DvArena *a = s->priv;
    if (a != NULL) {
        dv_arena_free(a);
        free(a);
    }
    free(s);
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

DrCode *
dr_find_code(DrSnapshot *s, uint32_t frame_id)
{
    for (size_t i = 0; i < s->n_codes; i++)
        if (s->codes[i].frame_id == frame_id)
            return &s->codes[i];
    return NULL;
}

DrEntry *
dr_find_entry(DrSnapshot *s, uint32_t frame_id, uint32_t compile_id)
{
    for (size_t i = 0; i < s->n_entries; i++)
        if (s->entries[i].frame_id == frame_id && s->entries[i].compile_id == compile_id)
            return &s->entries[i];
    return NULL;
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
