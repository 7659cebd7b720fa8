/* inspect/snapshot_int.h — the decoder's face toward the reader's other
 * half: reader.c (attach: transports, libelf, /proc) hands snapshot.c the
 * bytes of a checked image and how it reached them.  Not for the tools.
 */
#ifndef DYNAMO_INSPECT_SNAPSHOT_INT_H
#define DYNAMO_INSPECT_SNAPSHOT_INT_H

#include <stddef.h>     /* size_t */
#include <stdint.h>     /* uint8_t */
#include "snapshot.h"   /* DrSnapshot */

/* How the image was reached (DrProcess's flags). */
typedef struct {
    int exited;                 /* the process was seen gone / exiting */
    int from_file;              /* a snapshot file */
    int anonymous;              /* read through the anchor (no shm file) */
} RdOrigin;

/* Decode `image` (a compact image whose header image_check_header
 * accepted; borrowed) into a new snapshot (free with dr_snapshot_free).
 * NULL only when memory runs out, with the reason in msg (cap bytes). */
DrSnapshot *rd_decode(const uint8_t *image, const RdOrigin *origin, char *msg, size_t cap);

#endif /* DYNAMO_INSPECT_SNAPSHOT_INT_H */
