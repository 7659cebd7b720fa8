/* inspect/reader.h — read the telemetry of a running dynamo process or of a
 * saved snapshot file (build/libdynamo_inspect.a; link with -lelf).
 *
 * Owns: finding a process's region (shm file by pid, else the anchor symbol
 * through /proc/PID/maps + libelf + process_vm_readv), consistent copies of
 * it (seqlock retry), validation of every offset and length, and decoding
 * into the plain structs below.  It never writes to the watched process
 * (but for dr_set_guard_timing, one flag, on the user's request) and
 * never crashes on corrupt input: bad data gives DR_ECORRUPT or, inside an
 * otherwise valid region, empty fields.  Not thread-safe per DrReader; use
 * one reader per thread.  No curses, no graphviz: tools do the drawing.
 *
 * Typical use (dynamo-top's refresh loop):
 *
 *     DrStatus st;
 *     DrReader *r = dr_open_pid(pid, 0, &st);
 *     if (r == NULL) { fprintf(stderr, "%s\n", st.msg); exit(dr_exit_code(st.code)); }
 *     for (;;) {
 *         DrSnapshot *s = dr_snapshot(r, &st);     // NULL only on a hard error
 *         if (s == NULL) { ...print st.msg...; break; }
 *         ... draw s->codes, s->events ...;  if (s->process.exited) show "EXITED"
 *         dr_snapshot_free(s);
 *         sleep(1);
 *     }
 *     dr_close(r);
 *
 * Ownership: a DrSnapshot owns every string and array reachable from it
 * (all freed by dr_snapshot_free); pointers between its objects (entry ->
 * code, guard -> entry) are borrowed and valid while the snapshot lives.
 * Strings are never NULL ("" when absent) and are NUL-terminated UTF-8.
 */
#ifndef DYNAMO_INSPECT_READER_H
#define DYNAMO_INSPECT_READER_H

#include <stddef.h>     /* size_t */
#include <stdint.h>     /* uint64_t */
#include <sys/types.h>  /* pid_t */
#include "errors.h"     /* DrError, DR_* */
#include "snapshot.h"   /* DrSnapshot and what it holds, dr_snapshot_free, lookups */

/* ---- errors ------------------------------------------------------------------ */

typedef struct {
    DrError code;
    char msg[512];      /* one line for the user, e.g. "pid 123: permission denied
                           reading /dev/shm/dynamo-123: run as the same user or root" */
} DrStatus;

/* Short name of an error code ("no such process", ...); static string. */
const char *dr_strerror(DrError code);

/* Conventional process exit status for a tool failing with `code`:
 * ENOPROC 3, ENODYNAMO 4, EPERM 5, EVERSION 6, ECORRUPT 7, EFOREIGN 8, EINTR 130,
 * others 1. */
int dr_exit_code(DrError code);

/* A flag the tool's SIGINT/SIGTERM handler sets (NULL: none).  Every loop
 * of the library that may wait or scan (capture retries, process scans)
 * checks it and stops with DR_EINTR; decoding is bounded by the input's
 * size and needs no check. */
void dr_set_interrupt(const volatile int *flag);

/* ---- opening ----------------------------------------------------------------- */

/* dr_open_pid flags */
#define DR_OPEN_SHM_ONLY    0x1 /* do not fall back to the anchor */
#define DR_OPEN_ANCHOR_ONLY 0x2 /* skip the shm file: read process memory via the anchor */

typedef struct DrReader DrReader;

/* Attach to process `pid`: /dev/shm/dynamo-<pid> (opened read-only; the fd
 * keeps the last state readable after the process exits and unlinks it),
 * else the anchor path.  Validates magic, version, geometry.  A shm file
 * of a live process must be owned by one of its uids (or root) and carry
 * its pid and start time: another one (planted under its name, or left by
 * an earlier process with the same pid) is refused, and the anchor is
 * tried instead (without DR_OPEN_SHM_ONLY); when that fails too, *st is
 * the refusal (DR_EFOREIGN).  Returns a reader, or NULL with *st filled
 * (ENOPROC, ENODYNAMO, EPERM, EVERSION, ECORRUPT, EFOREIGN, EIO, ENOMEM).
 * st may not be NULL. */
DrReader *dr_open_pid(pid_t pid, int flags, DrStatus *st);

/* Open a snapshot file (written by dr_save or dynamo.save_snapshot).  The
 * whole file is read and validated now; later dr_snapshot calls decode it
 * again (it never changes).  Anything but a regular file (FIFO, device,
 * directory) is refused with EIO without blocking, a file larger than
 * DT_REGION_MAX with ECORRUPT without reading it.  NULL with *st (EIO,
 * EPERM, EVERSION, ECORRUPT, ENOMEM). */
DrReader *dr_open_file(const char *path, DrStatus *st);

/* The same for snapshot bytes already in memory (copied; `name` for
 * messages and dr_source).  The fuzz harness's entry point. */
DrReader *dr_open_memory(const void *data, size_t len, const char *name, DrStatus *st);

/* Close; NULL accepted. */
void dr_close(DrReader *r);

/* How the reader reached its data: "shm /dev/shm/dynamo-123",
 * "anchor pid 123 @0x7f...", "file snap.dyn".  Borrowed, lives with r. */
const char *dr_source(const DrReader *r);

/* ---- snapshots ----------------------------------------------------------------- */

/* The types (DrSnapshot, DrCode, DrRecord, ...), dr_snapshot_free and the
 * lookups inside a snapshot are snapshot.h's (included above). */

/* Take a consistent copy of the region and decode it.  Retries while the
 * writer is mid-change (a few ms at most); DR_EBUSY if it never settles.
 * When the process has exited, returns the last state with
 * process.exited = 1 (and *st = DR_OK).  NULL with *st on a hard error
 * (ENOMEM, ECORRUPT, EBUSY, EIO/EPERM on the anchor path). */
DrSnapshot *dr_snapshot(DrReader *r, DrStatus *st);

/* Write the reader's current consistent state to `path` (mode 0600) in the
 * snapshot file format (the same format dynamo.save_snapshot writes),
 * through a new temporary file beside it; an existing `path` that is not a
 * regular file (symlink, FIFO, device, directory) is refused, untouched.
 * 0, or -1 with *st. */
int dr_save(DrReader *r, const char *path, DrStatus *st);

/* The one write a reader makes, on request: set the watched process's guard
 * cost sampling period (DtHeader.guard_timing: time 1 of every `period`
 * guard lookups, 0 off), as dynamo.config.guard_timing does in the process.
 * Through the shm file the reader holds (reopened read-write from its own
 * descriptor, so the same file), or process_vm_writev on the anchor path.
 * A snapshot file or an exited process is refused (DR_EIO).  0, or -1 with
 * *st (EPERM, EIO, ENOPROC). */
int dr_set_guard_timing(DrReader *r, uint32_t period, DrStatus *st);

/* The period a tool switches sampling on with (layout.h's
 * DT_GUARD_TIMING_DEFAULT). */
uint32_t dr_guard_timing_default(void);

/* ---- finding processes ----------------------------------------------------------------- */

/* The running processes that expose dynamo telemetry, or may: those with a
 * /dev/shm/dynamo-<pid> file, and those mapping dynamo's extension
 * (.../dynamo/_C.*.so, anonymous regions; /proc/PID/maps of other users'
 * processes is unreadable without privileges).  Excludes the caller and
 * files left by dead processes.  *pids is a new ascending array (free()),
 * NULL when *n is 0.  0, or -1 with *st (EIO: /proc unreadable, ENOMEM).
 * Open each with dr_open_pid: a listed process may have telemetry off. */
int dr_list(pid_t **pids, size_t *n, DrStatus *st);

/* Remove the /dev/shm/dynamo-<pid> files left by processes that are gone
 * (SIGKILL, os._exit, a crash under faulthandler, a uid change before
 * exit) and that belong to the caller (its effective uid; root: root's
 * files only): the listings (dynamo-top without a pid, dynamo-dot
 * --list-processes) call it before dr_list.  A file is removed only when
 * its pid is not alive, it holds a region's magic, and no writer holds its
 * flock (a live process in another pid namespace sharing /dev/shm does).
 * *removed counts them.  0, or -1 with *st (EINTR). */
int dr_remove_stale(size_t *removed, DrStatus *st);

/* ---- diagnostics ------------------------------------------------------------------ */

/* Check both channels of `pid` and print one line per step to `out`
 * (process exists?, shm file present/readable/valid?, _C mapped at?, anchor
 * symbol found at?, anchor readable/valid?, region readable?).  Returns 0
 * if at least one channel works, else -1 with *st describing the first
 * blocking problem. */
int dr_diagnose(pid_t pid, void *out /* FILE * */, DrStatus *st);

#endif /* DYNAMO_INSPECT_READER_H */
