/* inspect/image.c — geometry checks and compact captures of a region.
 *
 * Owns what image.h declares.  It must not interpret blobs (reader.c does)
 * and must not write to the region it captures.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE     /* open, fsync, nanosleep, mkostemp under -std=c11 */
#endif
#include <errno.h>      /* errno */
#include <fcntl.h>      /* open */
#include <stdio.h>      /* snprintf */
#include <stdlib.h>     /* malloc */
#include <string.h>     /* memcmp, memcpy */
#include <sys/stat.h>   /* lstat */
#include <time.h>       /* nanosleep */
#include <unistd.h>     /* write, fsync, close, unlink */

#include "image.h"

#define CAPTURE_TRIES 2000      /* x 100 us = 200 ms */

static const volatile int *interrupt_flag;   /* borrowed, or NULL */

void
image_set_interrupt(const volatile int *flag)
{
    interrupt_flag = flag;
}

int
image_interrupted(void)
{
    return interrupt_flag != NULL && *interrupt_flag;
}

static DrError
fail(DrError code, char *msg, size_t msglen, const char *text, uint64_t a, uint64_t b)
{
    if (msg != NULL && msglen > 0)
        snprintf(msg, msglen, text, (unsigned long long)a, (unsigned long long)b);
    return code;
}

/* [off, off + size) inside [lo, hi)? */
static int
span_ok(uint64_t off, uint64_t size, uint64_t lo, uint64_t hi)
{
    return off >= lo && off <= hi && size <= hi - off;
}

DrError
image_check_header(const DtHeader *h, uint64_t total, char *msg, size_t msglen)
{
    if (memcmp(h->magic, DT_MAGIC, 8) != 0)
        return fail(DR_ECORRUPT, msg, msglen, "bad magic: not a dynamo telemetry region%.0llu%.0llu", 0, 0);
    if (h->version != DT_VERSION)
        return fail(DR_EVERSION, msg, msglen,
                    "layout version %llu, this reader understands version %llu", h->version, DT_VERSION);
    if (h->header_size != DT_HEADER_SIZE)
        return fail(DR_ECORRUPT, msg, msglen, "header size %llu, expected %llu", h->header_size,
                    DT_HEADER_SIZE);
    if (h->region_size > DT_REGION_MAX)
        return fail(DR_ECORRUPT, msg, msglen, "header claims %llu bytes, more than any telemetry "
                    "region (%llu)", h->region_size, DT_REGION_MAX);
    if (h->region_size > total)
        return fail(DR_ECORRUPT, msg, msglen, "truncated: header says %llu bytes, only %llu available",
                    h->region_size, total);
    uint64_t end = h->region_size;
    uint64_t codes = (uint64_t)h->codes_cap * sizeof(DtCode);
    uint64_t entries = (uint64_t)h->entries_cap * sizeof(DtEntry);
    uint64_t events = (uint64_t)h->events_cap * sizeof(DtEvent);
    if (!span_ok(h->codes_off, codes, DT_HEADER_SIZE, end)
            || !span_ok(h->entries_off, entries, h->codes_off + codes, end)
            || !span_ok(h->events_off, events, h->entries_off + entries, end)
            || !span_ok(h->blob_off, h->blob_cap, h->events_off + events, end)
            || (h->codes_off | h->entries_off | h->events_off | h->blob_off) % 8 != 0)
        return fail(DR_ECORRUPT, msg, msglen, "tables outside the region (size %llu)%.0llu", end, 0);
    if (h->n_codes > h->codes_cap || h->n_entries > h->entries_cap || h->blob_used > h->blob_cap)
        return fail(DR_ECORRUPT, msg, msglen, "fill levels beyond capacity (%llu codes, %llu entries)",
                    h->n_codes, h->n_entries);
    return DR_OK;
}

static void
pause_briefly(void)
{
    struct timespec ts = {0, 100000};
    nanosleep(&ts, NULL);
}

/* One attempt: DR_OK, DR_EBUSY (retry), or a hard error. */
static DrError
capture_once(ImageReadFn read, void *ctx, uint64_t total, uint8_t **out, size_t *outlen,
             char *msg, size_t msglen)
{
    DtHeader h;
    if (read(ctx, 0, &h, sizeof h) < 0)
        return fail(DR_EIO, msg, msglen, "cannot read the header%.0llu%.0llu", 0, 0);
    DrError e = image_check_header(&h, total, msg, msglen);
    if (e != DR_OK)
        return h.seq % 2 ? DR_EBUSY : e;
    if (h.seq % 2)
        return DR_EBUSY;
    uint32_t nev = h.n_events < h.events_cap ? (uint32_t)h.n_events : h.events_cap;
    uint32_t blob = (h.blob_used + 7u) & ~7u;
    if (blob > h.blob_cap)
        blob = h.blob_used;
    size_t codes = (size_t)h.n_codes * sizeof(DtCode);
    size_t entries = (size_t)h.n_entries * sizeof(DtEntry);
    size_t events = (size_t)nev * sizeof(DtEvent);
    size_t len = DT_HEADER_SIZE + codes + entries + events + blob;
    uint8_t *img = calloc(1, len);
    if (img == NULL)
        return fail(DR_ENOMEM, msg, msglen, "out of memory (%llu bytes)%.0llu", len, 0);
    DtHeader *nh = (DtHeader *)img;
    uint8_t *p = img + DT_HEADER_SIZE;
    int bad = read(ctx, h.codes_off, p, codes) < 0
              || read(ctx, h.entries_off, p + codes, entries) < 0
              || read(ctx, h.blob_off, p + codes + entries + events, h.blob_used) < 0;
    /* Events: copy the valid ones to slot seq % nev of the compact ring. */
    DtEvent *ring = (DtEvent *)(p + codes + entries);
    for (uint32_t i = 0; !bad && i < nev; i++) {     /* nev <= events_cap: bounded */
        uint64_t seq = h.n_events - nev + 1 + i;
        DtEvent ev;
        if (read(ctx, h.events_off + (seq % h.events_cap) * sizeof(DtEvent), &ev, sizeof ev) < 0)
            bad = 1;
        else if (ev.seq == seq)
            ring[seq % nev] = ev;
    }
    uint64_t seq2 = 0;
    if (!bad && read(ctx, offsetof(DtHeader, seq), &seq2, sizeof seq2) < 0)
        bad = 1;
    if (bad) {
        free(img);
        return fail(DR_EIO, msg, msglen, "cannot read the region%.0llu%.0llu", 0, 0);
    }
    if (seq2 != h.seq) {
        free(img);
        return DR_EBUSY;
    }
    *nh = h;
    nh->region_size = len;
    nh->codes_off = DT_HEADER_SIZE;
    nh->codes_cap = h.n_codes;
    nh->entries_off = DT_HEADER_SIZE + codes;
    nh->entries_cap = h.n_entries;
    nh->events_off = nh->entries_off + entries;
    nh->events_cap = nev;
    nh->blob_off = nh->events_off + events;
    nh->blob_cap = blob;
    *out = img;
    *outlen = len;
    return DR_OK;
}

DrError
image_capture(ImageReadFn read, void *ctx, uint64_t total, uint8_t **out, size_t *outlen,
              char *msg, size_t msglen)
{
    for (int i = 0; i < CAPTURE_TRIES; i++) {
        DrError e = capture_once(read, ctx, total, out, outlen, msg, msglen);
        if (e != DR_EBUSY)
            return e;
        if (image_interrupted())
            return fail(DR_EINTR, msg, msglen, "interrupted%.0llu%.0llu", 0, 0);
        pause_briefly();
    }
    return fail(DR_EBUSY, msg, msglen, "the writer kept changing the region; try again%.0llu%.0llu", 0, 0);
}

static int
write_all(int fd, const uint8_t *p, size_t len)
{
    while (len > 0) {
        ssize_t n = write(fd, p, len);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return -1;
        p += n;
        len -= (size_t)n;
    }
    return 0;
}

/* What a non-regular file is, for messages. */
static const char *
kind_of(mode_t mode)
{
    return S_ISLNK(mode) ? "a symlink" : S_ISDIR(mode) ? "a directory" : S_ISFIFO(mode) ? "a FIFO"
         : S_ISCHR(mode) ? "a character device" : S_ISBLK(mode) ? "a block device"
         : S_ISSOCK(mode) ? "a socket" : "not a regular file";
}

int
image_save(uint8_t *image, size_t len, const char *path, uint64_t snapshot_ns,
           char *msg, size_t msglen)
{
    DtHeader *h = (DtHeader *)image;
    h->flags |= DT_F_SNAPSHOT;
    h->snapshot_ns = snapshot_ns;
    h->seq &= ~(uint64_t)1;
    /* Only a regular file is ever replaced: a symlink (followed, it would
     * overwrite its target), a device, a FIFO or a directory is refused,
     * untouched. */
    struct stat sb;
    if (lstat(path, &sb) == 0 && !S_ISREG(sb.st_mode)) {
        errno = S_ISDIR(sb.st_mode) ? EISDIR : S_ISLNK(sb.st_mode) ? ELOOP : EEXIST;
        snprintf(msg, msglen, "%s is %s: refusing to replace it with a snapshot "
                 "(give the path of a regular file or a new one)", path, kind_of(sb.st_mode));
        return -1;
    }
    /* The temporary file: a new name made with O_CREAT|O_EXCL (mkostemp),
     * in the target's directory; a planted file or symlink of any name is
     * never opened. */
    char tmp[4096];
    if (snprintf(tmp, sizeof tmp, "%s.tmpXXXXXX", path) >= (int)sizeof tmp) {
        errno = ENAMETOOLONG;
        snprintf(msg, msglen, "%s: %s", path, strerror(errno));
        return -1;
    }
    int fd = mkostemp(tmp, O_CLOEXEC);      /* mode 0600 */
    if (fd < 0) {
        snprintf(msg, msglen, "%s: cannot create a temporary file next to it: %s", path,
                 strerror(errno));
        return -1;
    }
    if (write_all(fd, image, len) < 0 || fsync(fd) < 0) {
        int saved = errno;
        close(fd);
        unlink(tmp);
        errno = saved;
        snprintf(msg, msglen, "%s: %s", tmp, strerror(errno));
        return -1;
    }
    if (close(fd) < 0 || rename(tmp, path) < 0) {
        int saved = errno;
        unlink(tmp);
        errno = saved;
        snprintf(msg, msglen, "%s: %s", path, strerror(errno));
        return -1;
    }
    return 0;
}
