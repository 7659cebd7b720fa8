/* gtree.h — `dynamo-dot --guards FRAME`: the guard decision tree of one code
 * object as a Graphviz graph.
 *
 * Decision nodes (the tests they run, the (source, property) they switch
 * on, walk counters) linked parent -> child by edges labelled with the
 * branch value ("= 10", "default"); leaves are the cache entries "[F/C]"
 * with their hit counts, one dot node each, named "entry [F/C]".  The guard
 * that failed last (newest DrEntry.last_fail_ns) gets a red note with its
 * property, expected and actual values, tied to the decision node that
 * switches on its source (or to its entry).
 */
#ifndef VIZ_GTREE_H
#define VIZ_GTREE_H

#include <graphviz/cgraph.h>    /* Agraph_t */

#include "reader.h"             /* DrSnapshot, DrCode */

/* Build the picture of code->tree (n_nodes > 0).  `s` is the snapshot code
 * lives in (to find entries).  Returns a new root graph (agclose); never
 * NULL. */
Agraph_t *vtree_draw(DrSnapshot *s, const DrCode *code);

#endif /* VIZ_GTREE_H */
