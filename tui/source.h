/* source.h — where a Model comes from: a live process or a snapshot file,
 * read through the inspect reader library (inspect/reader.h).
 *
 * The only module of dynamo-top that includes reader.h besides main.c
 * (which maps reader errors to messages and exit statuses) and recorder.c
 * (which hands the reader's snapshots to inspect/trace.c).  Turns each
 * DrSnapshot into a fully owned Model, so the views never hold reader
 * memory across refreshes.
 */
#ifndef TUI_SOURCE_H
#define TUI_SOURCE_H

#include <sys/types.h>

#include "model.h"
#include "reader.h"     /* DrStatus, DrError */

typedef struct Source Source;

/* Attach to `pid` / open the snapshot `path`.  NULL with *st filled. */
Source *source_open_pid(pid_t pid, DrStatus *st);
Source *source_open_file(const char *path, DrStatus *st);
/* Wraps an open reader (owned from now on; NULL gives NULL): the fuzz
 * harness (readerfuzz/) reads snapshots from memory this way. */
Source *source_from_reader(DrReader *r, int is_file);
void source_delete(Source *src);    /* NULL accepted */

/* Reads the current state.  Returns a new Model (caller owns it; free with
 * model_delete) and sets *exited to 1 when the process is gone (the Model
 * is then its last state).  NULL with *st on a hard error. */
Model *source_read(Source *src, int *exited, DrStatus *st);

/* Writes a snapshot file of the current state (dr_save).  0 / -1 with *st. */
int source_save(Source *src, const char *path, DrStatus *st);

/* Sets the process's guard cost sampling period (1 of every `period`
 * lookups timed, 0 off; dr_set_guard_timing).  0 / -1 with *st. */
int source_set_guard_timing(Source *src, uint32_t period, DrStatus *st);

/* Nonzero when reading a snapshot file. */
int source_is_file(const Source *src);

/* The reader behind src (borrowed, lives with src): recorder.c's snapshots. */
DrReader *source_reader(Source *src);

/* How the data was reached ("shm /dev/shm/dynamo-123"); borrowed. */
const char *source_describe(const Source *src);

#endif
