/* inspect/image.h — compact, consistent images of a telemetry region.
 *
 * Owns: the geometry checks of a DtHeader, and the capture of a region
 * (live, via any read function) into a compact image: the header, the used
 * code and entry slots, the valid events and the used blob bytes, with the
 * header's geometry rewritten to match.  A compact image is exactly the
 * snapshot file format.  Shared by the writer (dynamo.save_snapshot, inside
 * dynamo._C) and the reader library; no Python, no allocation other than
 * the image itself.
 */
#ifndef DYNAMO_INSPECT_IMAGE_H
#define DYNAMO_INSPECT_IMAGE_H

#include <stddef.h>     /* size_t */
#include <stdint.h>     /* uint8_t */
#include "layout.h"     /* DtHeader */
#include "errors.h"     /* DrError */

/* The interrupt flag of dr_set_interrupt (NULL: none), and whether it is set. */
void image_set_interrupt(const volatile int *flag);
int image_interrupted(void);

/* Copy len bytes at offset off of the source into dst.  0, or -1 with errno. */
typedef int (*ImageReadFn)(void *ctx, uint64_t off, void *dst, size_t len);

/* Check h against `total` bytes available (region size, file size):
 * magic, version, header size, every table inside region_size, region_size
 * <= total, fill levels within capacities.  DR_OK, or DR_ECORRUPT /
 * DR_EVERSION with a message in msg (msglen bytes). */
DrError image_check_header(const DtHeader *h, uint64_t total, char *msg, size_t msglen);

/* Capture the region behind `read` (total: bytes readable) as a compact
 * image: *out (malloc'd, caller frees) of *outlen bytes.  Retries while the
 * writer's seqlock is odd or moves (up to ~200 ms), then DR_EBUSY.  Read
 * failures give DR_EIO (errno kept), bad geometry DR_ECORRUPT/DR_EVERSION. */
DrError image_capture(ImageReadFn read, void *ctx, uint64_t total,
                      uint8_t **out, size_t *outlen, char *msg, size_t msglen);

/* Write image to path (created 0600, replaced atomically via a new
 * temporary file made with O_EXCL in the same directory), marking it a
 * snapshot taken at snapshot_ns.  An existing path that is not a regular
 * file (symlink, device, FIFO, directory) is refused and left untouched.
 * 0, or -1 with errno and a one-line message in msg (msglen bytes). */
int image_save(uint8_t *image, size_t len, const char *path, uint64_t snapshot_ns,
               char *msg, size_t msglen);

#endif /* DYNAMO_INSPECT_IMAGE_H */
