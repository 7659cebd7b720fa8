/* recorder.c — `dynamo-top --record FILE` (see recorder.h).
 *
 * Owns the polling loop of a recording and its end line; the format, the
 * recorder state and the writing are inspect/trace.c's.  Must not touch the
 * terminal beyond one line on stderr (it runs under nohup, in CI, from
 * DYNAMO_TRACE's child).
 */
#include "recorder.h"

#include <errno.h>      /* errno */
#include <stdio.h>      /* FILE, fopen */
#include <string.h>     /* strcmp, strerror */
#include <time.h>       /* clock_gettime, nanosleep */

#include "crt.h"        /* crt_interrupted: SIGINT/SIGTERM end the recording */
#include "trace.h"      /* DrTrace, dr_trace_poll, dr_trace_write_* */

static int64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static void sleep_ms(int ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR && !crt_interrupted())
        ;
}

static int write_failed(const char *path)
{
    fprintf(stderr, "dynamo-top: cannot write the run record %s: %s\n", path, strerror(errno));
    return 1;
}

int record_run(Source *src, const RecordOpts *o, DrStatus *st)
{
    int to_stdout = strcmp(o->path, "-") == 0;
    FILE *out = to_stdout ? stdout : fopen(o->path, "w");
    if (out == NULL)
        return write_failed(o->path);
    DrTrace t;
    dr_trace_init(&t);
    const char *why = "interrupted";
    size_t total = 0;
    int rc = 0;
    for (long i = 0;; i++) {
        DrSnapshot *s = dr_snapshot(source_reader(src), st);
        if (s == NULL) {
            if (i == 0) {                           /* nothing recorded: the reader's error */
                rc = -1;
                goto done;
            }
            fprintf(stderr, "dynamo-top: %s\n", st->msg);
            why = "lost";                           /* keep what was recorded */
            break;
        }
        int started = t.started;
        total += dr_trace_poll(&t, s, source_describe(src));
        int exited = s->process.exited;
        dr_snapshot_free(s);
        if ((!started && dr_trace_write_header(out, &t) != 0)
            || dr_trace_write_events(out, &t, 0) != 0) {
            rc = write_failed(o->path);
            goto done;
        }
        dr_trace_drop_events(&t);
        if (source_is_file(src) || exited || (o->iterations > 0 && i + 1 >= o->iterations)) {
            why = source_is_file(src) ? "snapshot" : exited ? "exited" : "iterations";
            break;
        }
        sleep_ms(o->interval_ms);
        if (crt_interrupted())
            break;
    }
    if (dr_trace_write_end(out, &t, why, now_ns()) != 0) {
        rc = write_failed(o->path);
        goto done;
    }
    fprintf(stderr, "dynamo-top: recorded %zu event%s of pid %lld to %s (%s%s)\n", total,
            total == 1 ? "" : "s", (long long)t.head.pid, o->path, why,
            t.lost ? ", some lost: the ring was overwritten between two polls" : "");
done:
    if (!to_stdout && fclose(out) != 0 && rc == 0)
        rc = write_failed(o->path);
    dr_trace_free(&t);
    return rc;
}
