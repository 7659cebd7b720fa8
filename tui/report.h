/* report.h — the plain-text report of dynamo-top (--once, --iterations):
 * header, frame table, and per frame its graphs, guards, breaks,
 * recompile triggers and bytecode, then the event log; or, with
 * --summary, only the frames that cost most (compile time, misses,
 * breaks).  Uses the same renderers as the interactive tabs (render.h). */
#ifndef TUI_REPORT_H
#define TUI_REPORT_H

#include <stdio.h>

#include "model.h"
#include "render.h"

/* What a report shows. */
typedef struct ReportOpts {
    int width;              /* columns */
    const char *frame;      /* --frame: case-insensitive substring of a frame's name, file or
                               context; NULL/"" every frame */
    Tab tab;                /* --tab: the one detail tab per frame; TAB_COUNT every tab */
    int summary;            /* --summary: the top frames only, no per-frame sections */
    int top;                /* rows per summary table (> 0) */
} ReportOpts;

/* Writes the report of `m` (state `st`) to `out` as `o` says.
 * Returns 0, or -1 when writing failed (errno set). */
int report_write(FILE *out, const Model *m, ProcState st, const ReportOpts *o);

#endif
