/* inspect/errors.h — the error codes of the telemetry image and reader code.
 *
 * Owns: DrError and its DR_* values, nothing else.  Its own header so that
 * the image code compiled into dynamo._C (image.h) says its errors without
 * including the reader's API (reader.h includes this file for the tools).
 */
#ifndef DYNAMO_INSPECT_ERRORS_H
#define DYNAMO_INSPECT_ERRORS_H

typedef enum {
    DR_OK = 0,
    DR_ENOPROC,         /* no process with that pid */
    DR_ENODYNAMO,       /* the process runs but exposes no dynamo telemetry (dynamo not
                           imported, DYNAMO_TELEMETRY=0, or a foreign file) */
    DR_EPERM,           /* permission denied; msg says how to grant it */
    DR_EVERSION,        /* layout version mismatch; msg has both versions */
    DR_ECORRUPT,        /* corrupt or truncated snapshot / region */
    DR_EIO,             /* other I/O error (msg has strerror) */
    DR_ENOMEM,          /* out of memory */
    DR_EBUSY,           /* the writer kept changing the region; try again */
    DR_EINTR,           /* stopped by the tool's interrupt flag (dr_set_interrupt) */
    DR_EFOREIGN,        /* the pid's /dev/shm file is not that process's region: owned by
                           a user the process does not run as (squatted), or written by
                           an earlier process with the same pid (its pid field or start
                           time differ): refused */
} DrError;

#endif /* DYNAMO_INSPECT_ERRORS_H */
