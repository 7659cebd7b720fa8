/* list.h — `dynamo-dot --list`: a text index of what a process compiled,
 * with the ids to pass to --graph, --guards and --breaks.
 */
#ifndef VIZ_LIST_H
#define VIZ_LIST_H

#include <stdio.h>      /* FILE */

#include "reader.h"     /* DrSnapshot */

/* Print every frame (code object) of s with its compiles [F/C], their
 * graphs, graph breaks and the resume functions they call, to `out`.
 * Returns 0, or -1 when writing failed (errno set). */
int vlist_print(FILE *out, DrSnapshot *s);

#endif /* VIZ_LIST_H */
