/* inspect/reader_int.h — between the reader's two halves: reader.c
 * (attach: transports, libelf, /proc) hands decode.c the bytes of a
 * checked image and how it reached them.  Not for the tools.
 */
#ifndef DYNAMO_INSPECT_READER_INT_H
#define DYNAMO_INSPECT_READER_INT_H

#include <stdint.h>     /* uint8_t */
#include "reader.h"     /* DrSnapshot, DrStatus */

/* How the image was reached (DrProcess's flags). */
typedef struct {
    int exited;                 /* the process was seen gone / exiting */
    int from_file;              /* a snapshot file */
    int anonymous;              /* read through the anchor (no shm file) */
} RdOrigin;

/* Decode `image` (a compact image whose header image_check_header
 * accepted; borrowed) into a new snapshot (free with dr_snapshot_free).
 * NULL with *st (DR_ENOMEM) only when memory runs out. */
DrSnapshot *rd_decode(const uint8_t *image, const RdOrigin *origin, DrStatus *st);

#endif /* DYNAMO_INSPECT_READER_INT_H */
