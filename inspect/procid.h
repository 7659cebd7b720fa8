/* inspect/procid.h — who a process is, read from /proc: its start time and
 * its user ids.
 *
 * Owns nothing.  Compiled into dynamo._C (the writer stamps its own start
 * time into the region header) and into the reader library (which checks a
 * /dev/shm file against the live process it claims to describe: same start
 * time, owned by one of its uids).  Plain libc; no Python, no allocation,
 * async-signal-unsafe only through open/read.
 */
#ifndef DYNAMO_INSPECT_PROCID_H
#define DYNAMO_INSPECT_PROCID_H

#include <stdint.h>     /* uint64_t */
#include <sys/types.h>  /* pid_t, uid_t */

/* Start time of process `pid` (0: the caller) in clock ticks after boot:
 * field 22 of /proc/PID/stat, unique with the pid (a reused pid starts
 * later).  0 and *ticks, or -1 with errno (ENOENT: no such process; EIO:
 * unparsable). */
int procid_start(pid_t pid, uint64_t *ticks);

/* The real, effective, saved and filesystem uids of `pid` (0: the caller),
 * from the "Uid:" line of /proc/PID/status.  0, or -1 with errno. */
int procid_uids(pid_t pid, uid_t uids[4]);

#endif /* DYNAMO_INSPECT_PROCID_H */
