/* report.h — the plain-text report of dynamo-top (--once, --iterations):
 * header, frame table, and per frame its graphs, guards, breaks,
 * recompile triggers and bytecode, then the event log.  Uses the same
 * renderers as the interactive tabs (render.h). */
#ifndef TUI_REPORT_H
#define TUI_REPORT_H

#include <stdio.h>

#include "model.h"

/* Writes the report of `m` (state `st`) to `out`, `width` columns wide.
 * Returns 0, or -1 when writing failed (errno set). */
int report_write(FILE *out, const Model *m, ProcState st, int width);

#endif
