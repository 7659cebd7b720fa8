/* breaks.h — `dynamo-dot --breaks FRAME`: how a function was cut into graphs
 * and resume functions.
 *
 * One cluster per code object (the function, then every __resume_at_
 * function reached from it through the records' resume functions), holding
 * one node per compile [F/C] (graph name, ops, hits); compiles chained to
 * the resume functions they call by edges labelled with the graph-break
 * reason and line, and with where each resume function continues (branch
 * taken / fall-through / after break, at which offset); recompiles of one code chained by dashed edges labelled with
 * the guard failure that caused them.
 */
#ifndef VIZ_BREAKS_H
#define VIZ_BREAKS_H

#include <graphviz/cgraph.h>    /* Agraph_t */

#include "reader.h"             /* DrCode, DrResume */

/* Build the break map starting at `code`.  Returns a new root graph
 * (agclose); never NULL. */
Agraph_t *vbreaks_draw(const DrCode *code);

#endif /* VIZ_BREAKS_H */
