/* recorder.h — `dynamo-top --record FILE`: the record of a whole run.
 *
 * Polls a process (or reads a snapshot once) and appends every new
 * compile, recompile, graph break, cache-limit hit and guard failure to a
 * run record (inspect/trace.h's JSON lines) until the process exits or
 * the tool is interrupted.  No curses: it runs without a terminal.
 */
#ifndef TUI_RECORDER_H
#define TUI_RECORDER_H

#include "source.h"     /* Source, DrStatus */

typedef struct {
    const char *path;       /* the record file ("-": stdout); created or truncated */
    int interval_ms;        /* between two polls */
    long iterations;        /* stop after this many polls; 0 no limit */
} RecordOpts;

/* Records `src` to o->path, one line per event, flushed after each poll,
 * and prints one summary line to stderr at the end.  0 (the process
 * exited, the snapshot was read, the iterations were done, or SIGINT /
 * SIGTERM), 1 when the file cannot be written (message printed), or -1
 * with *st when the reader failed before anything was recorded. */
int record_run(Source *src, const RecordOpts *o, DrStatus *st);

#endif
