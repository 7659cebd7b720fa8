/* graph.h — `dynamo-dot --graph ID`: one captured fx graph as a Graphviz
 * graph.
 *
 * One dot node per fx node (named after it) with an HTML-like label (op
 * kind, name, target -- for a module call the module's class and qualified
 * path --, args, dtype/shape/stride/device, users), filled by op kind; one
 * edge per (producer, user) pair, labelled with the producer's shape; nodes
 * grouped in nested clusters by qualified nn.Module path (DrNode.module_path,
 * labelled with the module's class when a node names it); the graph label
 * carries the compile id, function, node/edge/guard counts and compile
 * time.  Full texts go into tooltips (SVG shows them on hover).  No other
 * nodes or edges are drawn, so the counts match the fx graph's.
 */
#ifndef VIZ_GRAPH_H
#define VIZ_GRAPH_H

#include <graphviz/cgraph.h>    /* Agraph_t */

#include "reader.h"             /* DrRecord, DrGraph */

/* Build the picture of `graph`, a graph of compile `rec`.  Returns a new
 * root graph (the caller closes it with agclose); never NULL (out of memory
 * ends the tool).  Reads rec and graph only. */
Agraph_t *vgraph_draw(const DrRecord *rec, const DrGraph *graph);

/* A node target as a reader wants it: "torch._VariableFunctionsClass.abs"
 * -> "torch.abs", "operator.add" -> "add", "torch.nn.functional.relu" ->
 * "F.relu"; others unchanged.  Writes into buf (truncating); returns buf. */
char *vgraph_short_target(const char *target, char *buf, size_t len);

#endif /* VIZ_GRAPH_H */
