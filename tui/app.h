/* app.h — the interactive dynamo-top: state, refresh loop, keys.
 *
 * Owns the displayed Model, the reset baseline and the two panels (frame
 * table or tree above, detail tab below).  Reads through source.h, draws
 * through panel.h and crt.h.
 */
#ifndef TUI_APP_H
#define TUI_APP_H

#include "source.h"

typedef struct AppOptions {
    int interval_ms;        /* refresh interval */
    long iterations;        /* quit after this many refreshes; 0 = never */
    const char *save_dir;   /* where the 's' key writes snapshots ("." default) */
    int exited;             /* the first reading already found the process gone */
} AppOptions;

/* Runs the interactive view on `src` (borrowed) starting from `first`
 * (taken: the app frees it).  Returns the process exit status. */
int app_run(Source *src, Model *first, const AppOptions *opts);

#endif
