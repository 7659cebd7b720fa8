/* gv.h — the Graphviz side of dynamo-dot: attribute helpers over libcgraph
 * and rendering through libgvc.
 *
 * The drawing modules (graph.c, gtree.c, breaks.c) create nodes, edges and
 * clusters with cgraph directly and set attributes through these helpers
 * (cgraph's API takes `char *` where it means `const char *`).  Only this
 * module talks to libgvc.
 */
#ifndef VIZ_GV_H
#define VIZ_GV_H

#include <graphviz/cgraph.h>    /* Agraph_t, Agnode_t, Agedge_t */

#include "vstr.h"

/* A new directed root graph named `name` with dynamo-dot's default look
 * (font, colours, rankdir TB).  Never NULL (out of memory ends the tool).
 * Free with agclose. */
Agraph_t *vgv_open(const char *name);

/* The node `name` of g, created when absent (strict: one node per name).
 * Names and values given to these helpers may be text from the watched
 * process: each is cleaned (sb_add_escaped, STR_TEXT) before cgraph sees
 * it, so lookups must go through vgv_find_node / vgv_find_subg too. */
Agnode_t *vgv_node(Agraph_t *g, const char *name);

/* The node `name` of g, or NULL (never creates). */
Agnode_t *vgv_find_node(Agraph_t *g, const char *name);

/* An edge tail -> head of g (a new one each call). */
Agedge_t *vgv_edge(Agraph_t *g, Agnode_t *tail, Agnode_t *head);

/* The subgraph `name` of g, created when absent.  Names starting with
 * "cluster" are drawn as boxes by the dot layout. */
Agraph_t *vgv_subg(Agraph_t *g, const char *name);

/* The subgraph `name` of g, or NULL (never creates). */
Agraph_t *vgv_find_subg(Agraph_t *g, const char *name);

/* Set attribute `attr` of a graph, node or edge to the plain string `value`
 * (declared with default "" when new). */
void vgv_set(void *obj, const char *attr, const char *value);

/* Same, with an HTML-like value (`html` without the outer <>, e.g.
 * "<TABLE>...</TABLE>"): written as label=<...>. */
void vgv_set_html(void *obj, const char *attr, const char *html);

/* Output formats: 1 when Graphviz on this machine can write `format` to a
 * file ("dot" always; window devices such as x11 never), else 0 and *valid gets the list of the ones it can
 * ("bmp canon dot gif ... svg", owned by the caller: sb_free). */
int vgv_format_ok(const char *format, StrBuf *valid);

/* Write g in `format` to `path` ("-" or NULL: stdout).  "dot" and "gv" write
 * the graph source without layout (run `dot -T...` on it later); every other
 * format is laid out with dot first.  0, or -1 with a one-line message in
 * *err (unwritable path, unknown format, layout/render failure); a file that
 * could not be completed is removed. */
int vgv_render(Agraph_t *g, const char *format, const char *path, StrBuf *err);

#endif /* VIZ_GV_H */
