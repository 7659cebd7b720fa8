/* timeline.h — `dynamo-dot --timeline`: compiles and recompiles over time,
 * one row per frame, from a run record (inspect/trace.h) or from what a
 * process's event ring still holds.
 *
 * A mark per compile at its time, coloured by kind: first compile,
 * recompile (the failing guard on hover), compile that failed or was
 * skipped, cache-limit hit; a small triangle per graph break and a tick per
 * guard-failure count under and over the row's line; a dashed line per
 * dynamo.reset().  Each mark is an SVG element of class "mark" with
 * data-kind (first, recompile, failed, skipped, limit, break, guard_fail),
 * data-frame and data-compile, and a <title> (the hover text).  Written as
 * a standalone SVG or as a self-contained HTML page (the same SVG inline,
 * a legend, the table of compiles and recompiles with their reasons, a few
 * lines of inline script showing the hovered mark; no network resource).
 */
#ifndef VIZ_TIMELINE_H
#define VIZ_TIMELINE_H

#include <stdio.h>      /* FILE */

#include "trace.h"      /* DrTrace */

typedef enum { VTL_SVG, VTL_HTML } VtlFormat;

/* Writes the timeline of t to out.  Text from the process is escaped.
 * 0, or -1 when writing failed (errno set). */
int vtimeline_write(FILE *out, const DrTrace *t, VtlFormat format);

#endif /* VIZ_TIMELINE_H */
