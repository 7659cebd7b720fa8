/* graph.c — the fx graph picture of dynamo-dot (see graph.h).
 *
 * Owns the look of graph pictures: colours per op kind, label layout, the
 * module clusters, and for a graph cut at DistributedDataParallel's
 * gradient buckets the bucket-piece clusters around them.  Reads DrRecord/DrGraph only; rendering is gv.c's job.
 */
#include "graph.h"

#include <stdio.h>      /* snprintf */
#include <stdlib.h>     /* free */
#include <string.h>     /* strcmp, strrchr */

#include "gv.h"
#include "vstr.h"

/* Fill colour, op kind: pastel so that black text stays legible. */
static const struct {
    const char *op;
    const char *fill;
} OP_COLORS[] = {
    {"placeholder", "#c8e6c9"},
    {"get_attr", "#fff3b0"},
    {"call_function", "#cfe2f3"},
    {"call_method", "#e1d5f0"},
    {"call_module", "#fad2b4"},
    {"output", "#e0e0e0"},
};
#define N_OP_COLORS (sizeof OP_COLORS / sizeof OP_COLORS[0])

static const char *op_fill(const char *op)
{
    for (size_t i = 0; i < N_OP_COLORS; i++)
        if (strcmp(OP_COLORS[i].op, op) == 0)
            return OP_COLORS[i].fill;
    return "#ffffff";
}

char *vgraph_short_target(const char *target, char *buf, size_t len)
{
    static const struct {
        const char *prefix, *replacement;
    } SHORT[] = {
        {"torch._VariableFunctionsClass.", "torch."},
        {"torch._C._VariableFunctions.", "torch."},
        {"torch.nn.functional.", "F."},
        {"operator.", ""},
        {"_operator.", ""},
        {"builtins.", ""},
    };
    for (size_t i = 0; i < sizeof SHORT / sizeof SHORT[0]; i++) {
        size_t n = strlen(SHORT[i].prefix);
        if (strncmp(target, SHORT[i].prefix, n) == 0 && target[n] != '\0') {
            snprintf(buf, len, "%s%s", SHORT[i].replacement, target + n);
            return buf;
        }
    }
    snprintf(buf, len, "%s", target);
    return buf;
}

/* Label texts are cut so that a node stays readable; tooltips carry all. */
#define LABEL_MAX 44

/* "float32[10, 4]" without the "torch." prefix; "" when unknown. */
static void add_meta_short(StrBuf *b, const DrNode *n)
{
    const char *dt = n->dtype;
    if (strncmp(dt, "torch.", 6) == 0)
        dt += 6;
    vs_add_html(b, dt, 16, 0);
    vs_add_html(b, n->shape, LABEL_MAX, 0);
}

/* Is the args text worth a line?  "()" and "" are not. */
static int has_args(const DrNode *n)
{
    return *n->args && strcmp(n->args, "()") != 0 && strcmp(n->args, "() {}") != 0;
}

static char *node_label(const DrNode *n)
{
    StrBuf b;
    vs_init(&b);
    sb_add(&b, "<TABLE BORDER=\"0\" CELLBORDER=\"0\" CELLSPACING=\"0\" CELLPADDING=\"1\">");
    sb_add(&b, "<TR><TD ALIGN=\"LEFT\"><FONT POINT-SIZE=\"8\" COLOR=\"#444444\">");
    vs_add_html(&b, n->op, 0, 0);
    sb_add(&b, "</FONT>  <B>");
    vs_add_html(&b, n->name, LABEL_MAX, 0);
    sb_add(&b, "</B></TD></TR>");
    char t[256];
    vgraph_short_target(n->target, t, sizeof t);
    if (strcmp(n->op, "call_module") == 0 && *n->module_path) {
        /* the module called: its class and qualified path, not the flattened target */
        sb_add(&b, "<TR><TD ALIGN=\"LEFT\"><B>");
        vs_add_html(&b, *n->module_class ? n->module_class : "module", LABEL_MAX, 0);
        sb_add(&b, "</B> <FONT COLOR=\"#555555\">");
        vs_add_html(&b, n->module_path, LABEL_MAX, 0);
        sb_add(&b, "</FONT></TD></TR>");
    } else if (*t && strcmp(t, n->name) != 0) { /* the name does not already say it? */
        sb_add(&b, "<TR><TD ALIGN=\"LEFT\">");
        vs_add_html(&b, t, LABEL_MAX, 0);
        sb_add(&b, "</TD></TR>");
    }
    if (has_args(n)) {
        sb_add(&b, "<TR><TD ALIGN=\"LEFT\"><FONT FACE=\"Courier\" POINT-SIZE=\"9\">");
        vs_add_html(&b, n->args, LABEL_MAX, 0);
        sb_add(&b, "</FONT></TD></TR>");
    }
    if (*n->dtype || *n->shape) {
        sb_add(&b, "<TR><TD ALIGN=\"LEFT\"><FONT COLOR=\"#1a4d80\">");
        add_meta_short(&b, n);
        if (*n->stride) {
            sb_add(&b, " stride ");
            vs_add_html(&b, n->stride, 24, 0);
        }
        if (*n->device && strcmp(n->device, "cpu") != 0) {
            sb_add(&b, " ");
            vs_add_html(&b, n->device, 16, 0);
        }
        sb_add(&b, "</FONT></TD></TR>");
    }
    if (strcmp(n->op, "output") != 0)
        sb_addf(&b, "<TR><TD ALIGN=\"LEFT\"><FONT POINT-SIZE=\"8\" COLOR=\"#444444\">%zu user%s"
                "</FONT></TD></TR>", n->n_users, n->n_users == 1 ? "" : "s");
    sb_add(&b, "</TABLE>");
    return sb_steal(&b);
}

static void add_list(StrBuf *b, const char *title, const char **items, size_t n)
{
    sb_addf(b, "\n%s (%zu):", title, n);
    for (size_t i = 0; i < n; i++) {
        sb_add(b, i ? ", " : " ");
        vs_add_cut(b, items[i], 0);
    }
}

static char *node_tooltip(const DrNode *n)
{
    StrBuf b;
    vs_init(&b);
    vs_add_cut(&b, n->op, 0);
    sb_add(&b, " ");
    vs_add_cut(&b, n->name, 0);
    static const char *const KEYS[] = {"target", "args", "dtype", "shape", "stride", "device",
                                       "module", "module class"};
    const char *vals[] = {n->target, n->args, n->dtype, n->shape, n->stride, n->device,
                          n->module_path, n->module_class};
    for (size_t i = 0; i < sizeof vals / sizeof vals[0]; i++)
        if (*vals[i]) {
            sb_addf(&b, "\\n%s: ", KEYS[i]);
            vs_add_cut(&b, vals[i], 0);
        }
    if (n->ddp_bucket)
        sb_addf(&b, "\\nDDP bucket: %u", n->ddp_bucket);
    add_list(&b, "users", n->users, n->n_users);
    add_list(&b, "inputs", n->inputs, n->n_inputs);
    return sb_steal(&b);
}

/* The cluster a node is drawn in, as a dotted module path ("" = none): its
 * module_path, except that a module call sits in the module that calls it
 * (its own path minus the last component), not alone in a cluster. */
static char *cluster_path(const DrNode *n)
{
    char *path = xstrdup(n->module_path);
    if (strcmp(n->op, "call_module") == 0) {
        char *dot = strrchr(path, '.');
        if (dot != NULL)
            *dot = '\0';
        else
            path[0] = '\0';
    }
    return path;
}

/* The class of the module at `path` when a node names it ("" if none). */
static const char *class_of(const DrGraph *graph, const char *path, size_t len)
{
    for (size_t i = 0; i < graph->n_nodes; i++) {
        const DrNode *n = &graph->nodes[i];
        if (*n->module_class && strlen(n->module_path) == len
            && strncmp(n->module_path, path, len) == 0)
            return n->module_class;
    }
    return "";
}

/* Depth-dependent cluster fill, so nested modules stay distinguishable. */
static const char *const CLUSTER_FILLS[] = {"#f7f7f7", "#ececec", "#e2e2e2", "#d8d8d8"};

/* The cluster of DDP bucket piece `bucket` (1-based) inside g, labelled
 * with the parameters its bucket holds; g itself for 0 (graph not cut). */
static Agraph_t *bucket_cluster(Agraph_t *g, const DrGraph *graph, uint32_t bucket)
{
    if (bucket == 0 || bucket > graph->n_buckets)
        return g;
    char id[40];
    snprintf(id, sizeof id, "cluster_ddp_bucket_%u", bucket);
    Agraph_t *sub = vgv_find_subg(g, id);
    if (sub != NULL)
        return sub;
    const DrBucket *b = &graph->buckets[bucket - 1];
    sub = vgv_subg(g, id);
    StrBuf text;
    vs_init(&text);
    sb_addf(&text, "DDP bucket %u of %zu · %zu param%s", bucket, graph->n_buckets, b->n_params,
            b->n_params == 1 ? "" : "s");
    vgv_set(sub, "label", text.s);
    sb_add(&text, ":");
    for (size_t i = 0; i < b->n_params; i++) {
        sb_add(&text, i ? ", " : " ");
        vs_add_cut(&text, b->params[i], 0);
    }
    vgv_set(sub, "tooltip", text.s);
    vgv_set(sub, "style", "dashed");
    vgv_set(sub, "color", "#1a4d80");
    vgv_set(sub, "penwidth", "2");
    vgv_set(sub, "fontsize", "12");
    vgv_set(sub, "fontcolor", "#1a4d80");
    sb_free(&text);
    return sub;
}

/* The cluster subgraph for module path `path` inside g (the graph, or a
 * DDP bucket's cluster: `bucket`, 0 for none, keeps the names apart), with
 * all its ancestors ("a" contains "a.b" contains "a.b.c"), labelled with
 * the path and the module's class when the graph names it; g itself for "". */
static Agraph_t *module_cluster(Agraph_t *g, const DrGraph *graph, const char *path,
                                uint32_t bucket)
{
    Agraph_t *parent = g;
    StrBuf name;
    size_t depth = 0;
    if (*path == '\0')
        return g;
    vs_init(&name);
    for (const char *p = path;; p++) {
        if (*p != '.' && *p != '\0')
            continue;
        sb_clear(&name);
        if (bucket)
            sb_addf(&name, "cluster_b%u_", bucket);
        else
            sb_add(&name, "cluster_");
        sb_addn(&name, path, (size_t)(p - path));
        Agraph_t *sub = vgv_find_subg(parent, name.s);
        if (sub == NULL) {                         /* first node of this module? */
            sub = vgv_subg(parent, name.s);
            sb_clear(&name);
            char *prefix = xstrndup(path, (size_t)(p - path));
            vs_add_cut(&name, prefix, 0);
            free(prefix);
            const char *cls = class_of(graph, path, (size_t)(p - path));
            if (*cls) {
                sb_add(&name, " · ");
                vs_add_cut(&name, cls, 0);
            }
            vgv_set(sub, "label", name.s);
            vgv_set(sub, "style", "rounded,filled");
            vgv_set(sub, "color", "#9e9e9e");
            vgv_set(sub, "fillcolor", CLUSTER_FILLS[depth % 4]);
            vgv_set(sub, "fontsize", "10");
            vgv_set(sub, "fontcolor", "#424242");
            vgv_set(sub, "tooltip", name.s);
        }
        parent = sub;
        depth++;
        if (*p == '\0')
            break;
    }
    sb_free(&name);
    return parent;
}

/* Graph label: what the compile was, the counts, the colour legend. */
static void set_graph_label(Agraph_t *g, const DrRecord *rec, const DrGraph *graph)
{
    char t1[32], t2[32];
    StrBuf b;
    vs_init(&b);
    sb_add(&b, "<TABLE BORDER=\"0\" CELLSPACING=\"0\" CELLPADDING=\"2\"><TR><TD ALIGN=\"LEFT\">"
               "<FONT POINT-SIZE=\"14\"><B>");
    vs_add_html(&b, graph->name, 0, 0);
    sb_add(&b, "</B>  ");
    vs_add_html(&b, rec->id, 0, 0);
    sb_add(&b, " ");
    vs_add_html(&b, rec->name, 60, 0);
    sb_addf(&b, "</FONT>  <FONT COLOR=\"#555555\">");
    vs_add_html(&b, vs_basename(rec->filename), 60, 0);
    sb_addf(&b, ":%u</FONT></TD></TR><TR><TD ALIGN=\"LEFT\">", rec->firstlineno);
    sb_addf(&b, "%zu nodes · %zu edges · %llu ops · %zu guards · compile %s (backend %s",
            graph->n_nodes, (size_t)agnedges(g), (unsigned long long)graph->op_count,
            rec->n_guards, vs_fmt_ns(t1, sizeof t1, rec->compile_ns),
            vs_fmt_ns(t2, sizeof t2, rec->backend_ns));
    if (*rec->backend) {
        sb_add(&b, ", ");
        vs_add_html(&b, rec->backend, 30, 0);
    }
    sb_add(&b, ")");
    if (rec->entry != NULL)
        sb_addf(&b, " · %llu hit%s", (unsigned long long)rec->entry->hits,
                rec->entry->hits == 1 ? "" : "s");
    if (graph->n_buckets)
        sb_addf(&b, " · cut at DDP buckets: %zu pieces", graph->n_buckets);
    if (*graph->backend_note) {                 /* autotune's choice and its timings */
        sb_add(&b, "</TD></TR><TR><TD ALIGN=\"LEFT\">");
        vs_add_html(&b, graph->backend_note, 160, 0);
    }
    sb_add(&b, "</TD></TR><TR><TD ALIGN=\"LEFT\"><TABLE ALIGN=\"LEFT\" BORDER=\"0\" "
               "CELLSPACING=\"3\" CELLPADDING=\"2\"><TR>");
    for (size_t i = 0; i < N_OP_COLORS; i++)
        sb_addf(&b, "<TD BGCOLOR=\"%s\" BORDER=\"1\" COLOR=\"#9e9e9e\"><FONT POINT-SIZE=\"9\">%s"
                "</FONT></TD>", OP_COLORS[i].fill, OP_COLORS[i].op);
    sb_add(&b, "</TR></TABLE></TD></TR></TABLE>");
    vgv_set_html(g, "label", b.s);
    sb_clear(&b);
    vs_add_cut(&b, rec->id, 0);
    sb_add(&b, " ");
    vs_add_cut(&b, rec->name, 0);
    sb_add(&b, " ");
    vs_add_cut(&b, rec->filename, 0);
    sb_addf(&b, ":%u", rec->firstlineno);
    if (*rec->recompile_reason) {
        sb_add(&b, "\\nrecompiled because: ");
        vs_add_cut(&b, rec->recompile_reason, 0);
    }
    vgv_set(g, "tooltip", b.s);
    sb_free(&b);
}

static void draw_nodes(Agraph_t *g, const DrGraph *graph)
{
    for (size_t i = 0; i < graph->n_nodes; i++) {
        const DrNode *n = &graph->nodes[i];
        char *path = cluster_path(n);
        Agraph_t *outer = bucket_cluster(g, graph, n->ddp_bucket);
        Agnode_t *v = vgv_node(module_cluster(outer, graph, path, n->ddp_bucket), n->name);
        char *label = node_label(n);
        char *tip = node_tooltip(n);
        vgv_set_html(v, "label", label);
        vgv_set(v, "tooltip", tip);
        vgv_set(v, "style", "rounded,filled");
        vgv_set(v, "fillcolor", op_fill(n->op));
        vgv_set(v, "color", "#757575");
        vgv_set(v, "margin", "0.08,0.04");
        free(path);
        free(label);
        free(tip);
    }
}

/* Was input `k` of node n already listed before (add(x, x) is one edge)? */
static int repeated_input(const DrNode *n, size_t k)
{
    for (size_t j = 0; j < k; j++)
        if (strcmp(n->inputs[j], n->inputs[k]) == 0)
            return 1;
    return 0;
}

static void draw_edges(Agraph_t *g, const DrGraph *graph)
{
    StrBuf b;
    vs_init(&b);
    for (size_t i = 0; i < graph->n_nodes; i++) {
        const DrNode *n = &graph->nodes[i];
        Agnode_t *head = vgv_find_node(g, n->name);
        for (size_t k = 0; k < n->n_inputs; k++) {
            Agnode_t *tail = vgv_find_node(g, n->inputs[k]);
            if (tail == NULL || head == NULL || repeated_input(n, k))
                continue;
            const DrNode *src = NULL;
            for (size_t j = 0; j < graph->n_nodes && src == NULL; j++)
                if (strcmp(graph->nodes[j].name, n->inputs[k]) == 0)
                    src = &graph->nodes[j];
            Agedge_t *e = vgv_edge(g, tail, head);
            if (src != NULL && *src->shape) {
                sb_clear(&b);
                vs_add_cut(&b, src->shape, 24);
                vgv_set(e, "label", b.s);
            }
            sb_clear(&b);
            vs_add_cut(&b, n->inputs[k], 0);
            sb_add(&b, " -> ");
            vs_add_cut(&b, n->name, 0);
            if (src != NULL && (*src->dtype || *src->shape)) {
                sb_add(&b, ": ");
                vs_add_cut(&b, src->dtype, 0);
                vs_add_cut(&b, src->shape, 0);
            }
            vgv_set(e, "tooltip", b.s);
        }
    }
    sb_free(&b);
}

Agraph_t *vgraph_draw(const DrRecord *rec, const DrGraph *graph)
{
    Agraph_t *g = vgv_open(graph->name);
    draw_nodes(g, graph);
    draw_edges(g, graph);
    set_graph_label(g, rec, graph);
    return g;
}
