/* breaks.c — the graph-break map of dynamo-dot (see breaks.h).
 *
 * Owns the look of break maps and the walk from a function to its resume
 * functions (breadth-first over an explicit queue with a visited list:
 * resume functions of loops call each other in cycles).  Compile [F/C] is
 * the dot node "[F/C]"; a resume function that never ran is "<name>".
 * Break edges are coloured by what the break costs: the estimated time of
 * its eager region (the code run between its graph and the resume call,
 * sampled by the process), as a share of the costliest break drawn, with a
 * legend node; their labels rank them ("#1 of 2").
 */
#include "breaks.h"

#include <stdint.h>     /* UINT32_MAX */
#include <stdio.h>      /* snprintf */
#include <stdlib.h>     /* free */
#include <string.h>     /* strncmp */    

#include "graph.h"
#include "gv.h"
#include "select.h"
#include "vstr.h"

#define MAX_OPS_SHOWN 10

/* A break edge drawn, coloured once every break is known. */
typedef struct {
    Agedge_t *edge;     /* borrowed (the graph owns it) */
    const DrRecord *rec;        /* borrowed: the compile whose break it is */
    const DrResume *res;        /* borrowed */
} BreakEdge;

typedef struct {
    BreakEdge *v;
    size_t n, cap;
} EdgeList;

static void edges_add(EdgeList *l, Agedge_t *e, const DrRecord *rec, const DrResume *res)
{
    if (l->n == l->cap) {
        l->cap = l->cap ? 2 * l->cap : 8;
        l->v = xrealloc(l->v, l->cap * sizeof *l->v);
    }
    l->v[l->n++] = (BreakEdge){e, rec, res};
}

/* Cost classes, costliest first: share of the costliest break (per mille) at
 * least `min_pm`; the last one is "never timed". */
static const struct {
    int min_pm;
    const char *color, *penwidth, *text;
} cost_class[] = {
    {500, "#b71c1c", "4.5", "at least half of the costliest"},
    {100, "#e53935", "3", "10 % to 50 %"},
    {10, "#fb8c00", "2", "1 % to 10 %"},
    {0, "#c9a227", "1.25", "below 1 %"},
    {-1, "#9e9e9e", "1", "not timed (no run sampled)"},
};
#define N_COST_CLASSES (sizeof cost_class / sizeof cost_class[0])

static size_t cost_class_of(const DrBreak *b, uint64_t max_ns)
{
    if (b == NULL || !b->samples || max_ns == 0)
        return N_COST_CLASSES - 1;
    uint64_t pm = (uint64_t)((double)b->est_ns * 1000.0 / (double)max_ns);
    size_t k = 0;
    while (k + 2 < N_COST_CLASSES && (uint64_t)cost_class[k].min_pm > pm)
        k++;            /* the last timed class (min 0) takes the rest */
    return k;
}

/* Codes to draw, in discovery order. */
typedef struct {
    const DrCode **v;   /* borrowed */
    size_t n, cap;
} CodeList;

/* Appends code unless present; returns 1 when it was new. */
static int codes_add(CodeList *l, const DrCode *code)
{
    for (size_t i = 0; i < l->n; i++)
        if (l->v[i] == code)
            return 0;
    if (l->n == l->cap) {
        l->cap = l->cap ? 2 * l->cap : 8;
        l->v = xrealloc(l->v, l->cap * sizeof *l->v);
    }
    l->v[l->n++] = code;
    return 1;
}

static const char *status_fill(DtRecStatus status)
{
    switch (status) {
    case DT_RS_OK: return "#cfe2f3";
    case DT_RS_SKIPPED: return "#eeeeee";
    case DT_RS_LIMIT: return "#fff3b0";
    default: return "#ffcdd2";                  /* error, unsupported, unknown */
    }
}

/* "abs → add → truediv → sum → lt": the ops of a graph, in order. */
static void add_ops(StrBuf *b, const DrGraph *graph)
{
    size_t shown = 0, ops = 0;
    for (size_t i = 0; i < graph->n_nodes; i++) {
        const DrNode *n = &graph->nodes[i];
        if (strncmp(n->op, "call_", 5) != 0)
            continue;
        if (ops++ >= MAX_OPS_SHOWN)
            continue;
        char t[128];
        vgraph_short_target(*n->target ? n->target : n->name, t, sizeof t);
        sb_add(b, shown++ ? " → " : "");
        if (shown == 6)
            sb_add(b, "<BR ALIGN=\"LEFT\"/>");
        vs_add_html(b, t, 24, 0);
    }
    if (ops > MAX_OPS_SHOWN)
        sb_addf(b, " … (%zu more)", ops - MAX_OPS_SHOWN);
    if (ops == 0)
        sb_add(b, "(no ops)");
}

static Agnode_t *draw_record(Agraph_t *cluster, const DrRecord *rec)
{
    char t[32], id[48];
    Agnode_t *v = vgv_node(cluster, rec->id);
    StrBuf b;
    vs_init(&b);
    sb_add(&b, "<TABLE BORDER=\"0\" CELLBORDER=\"0\" CELLSPACING=\"0\" CELLPADDING=\"1\">");
    sb_add(&b, "<TR><TD ALIGN=\"LEFT\"><B>");
    vs_add_html(&b, rec->id, 0, 0);
    sb_add(&b, "</B>  ");
    vs_add_html(&b, rec->status_name, 0, 0);
    if (rec->entry != NULL)
        sb_addf(&b, " · %llu hit%s%s", (unsigned long long)rec->entry->hits,
                rec->entry->hits == 1 ? "" : "s", rec->entry->dead ? " · dropped" : "");
    sb_addf(&b, " · compile %s</TD></TR>", vs_fmt_ns(t, sizeof t, rec->compile_ns));
    for (size_t i = 0; i < rec->n_graphs; i++) {
        const DrGraph *g = &rec->graphs[i];
        sb_add(&b, "<TR><TD ALIGN=\"LEFT\"><B>");
        vs_add_html(&b, g->name, 40, 0);
        sb_addf(&b, "</B>  <FONT POINT-SIZE=\"8\" COLOR=\"#555555\">%zu nodes · --graph %s"
                "</FONT></TD></TR><TR><TD ALIGN=\"LEFT\"><FONT POINT-SIZE=\"9\">",
                g->n_nodes, vsel_graph_id(rec, i, id, sizeof id));
        add_ops(&b, g);
        sb_add(&b, "</FONT></TD></TR>");
    }
    if (rec->n_graphs == 0)
        sb_add(&b, "<TR><TD ALIGN=\"LEFT\"><FONT POINT-SIZE=\"9\">no graph</FONT></TD></TR>");
    if (*rec->error) {
        sb_add(&b, "<TR><TD ALIGN=\"LEFT\"><FONT POINT-SIZE=\"9\" COLOR=\"#c62828\">");
        vs_add_html(&b, rec->error, 60, 0);
        sb_add(&b, "</FONT></TD></TR>");
    }
    sb_add(&b, "</TABLE>");
    vgv_set_html(v, "label", b.s);
    vgv_set(v, "style", "rounded,filled");
    vgv_set(v, "fillcolor", status_fill(rec->status));
    vgv_set(v, "color", "#5c6b7a");
    sb_clear(&b);
    vs_add_cut(&b, rec->id, 0);
    sb_add(&b, " ");
    vs_add_cut(&b, rec->status_name, 0);
    if (*rec->error) {
        sb_add(&b, "\\n");
        vs_add_cut(&b, rec->error, 0);
    }
    sb_add(&b, "\\n");
    vs_add_cut(&b, rec->modified_bytecode, 0);
    vgv_set(v, "tooltip", b.s);
    sb_free(&b);
    return v;
}

/* A cluster for `code` with one node per compile; returns its first node. */
static Agnode_t *draw_code(Agraph_t *g, const DrCode *code)
{
    char name[48];
    snprintf(name, sizeof name, "cluster_frame_%u", code->frame_id);
    Agraph_t *c = vgv_subg(g, name);
    StrBuf b;
    vs_init(&b);
    sb_add(&b, "<B>");
    vs_add_html(&b, code->name, 50, 0);
    sb_addf(&b, "</B>  frame %u  <FONT COLOR=\"#555555\">", code->frame_id);
    vs_add_html(&b, vs_basename(code->filename), 40, 0);
    sb_addf(&b, ":%u · calls %llu · hits %llu</FONT>", code->firstlineno,
            (unsigned long long)code->calls, (unsigned long long)code->hits);
    vgv_set_html(c, "label", b.s);
    vgv_set(c, "style", "rounded,filled");
    vgv_set(c, "fillcolor", strncmp(code->name, "__resume_at_", 12) == 0 ? "#f3f8ee" : "#f5f5f5");
    vgv_set(c, "color", "#9e9e9e");
    sb_free(&b);
    Agnode_t *first = NULL, *prev = NULL;
    for (size_t r = 0; r < code->n_records; r++) {
        const DrRecord *rec = code->records[r];
        Agnode_t *v = draw_record(c, rec);
        if (prev != NULL) {                     /* a recompile of the same code */
            Agedge_t *e = vgv_edge(g, prev, v);
            vgv_set(e, "style", "dashed");
            vs_init(&b);
            sb_add(&b, "recompile");
            if (*rec->recompile_reason) {
                sb_add(&b, ":\\n");
                vs_add_cut(&b, rec->recompile_reason, 60);
            }
            vgv_set(e, "label", b.s);
            sb_free(&b);
        }
        first = first ? first : v;
        prev = v;
    }
    if (first == NULL) {                        /* code without records (should not happen) */
        snprintf(name, sizeof name, "frame %u", code->frame_id);
        first = vgv_node(c, name);
        vgv_set(first, "label", "no compile recorded");
    }
    return first;
}

/* The "reason\nfile.py:33  if b.sum() < 0:\nhint: ...\n→ name (branch taken
 * @112)" label of a break edge: the reason in user words, the hint cut
 * (break_tooltip has them whole). */
static char *break_label(const DrRecord *rec, const DrResume *res, size_t rank, size_t n_ranked)
{
    StrBuf b;
    vs_init(&b);
    for (size_t i = 0; i < rec->n_breaks; i++) {
        const DrBreak *br = &rec->breaks[i];
        char t1[32], t2[32], t3[32];
        sb_add(&b, i ? "\\n" : "");
        if (i == 0 && br->samples)
            sb_addf(&b, "#%zu of %zu · eager %s (%s/run × %llu, max %s)\\n", rank, n_ranked,
                    vs_fmt_ns(t1, sizeof t1, br->est_ns),
                    vs_fmt_ns(t2, sizeof t2, dr_break_ns_per_run(br)),
                    (unsigned long long)br->calls, vs_fmt_ns(t3, sizeof t3, br->max_ns));
        else if (i == 0)
            sb_addf(&b, "eager: not timed (%llu run%s)\\n", (unsigned long long)br->calls,
                    br->calls == 1 ? "" : "s");
        sb_add(&b, "graph break: ");
        vs_add_cut(&b, *br->meaning ? br->meaning : br->reason, 64);
        sb_add(&b, "\\n");
        vs_add_cut(&b, vs_basename(br->filename), 40);
        sb_addf(&b, ":%u", br->lineno);
        if (br->n_frames > 0 && *br->user_stack[br->n_frames - 1].line) {
            sb_add(&b, "  ");
            vs_add_cut(&b, br->user_stack[br->n_frames - 1].line, 40);
        }
        if (*br->hint) {
            sb_add(&b, "\\nhint: ");
            vs_add_cut(&b, br->hint, 60);
        }
    }
    sb_add(&b, rec->n_breaks ? "\\n→ " : "→ ");
    vs_add_cut(&b, res->name, 0);
    sb_add(&b, " (");
    vs_add_cut(&b, dr_resume_kind_label(res->kind, res->kind_name), 0);
    sb_addf(&b, " @%u)", res->offset);
    return sb_steal(&b);
}

/* The tooltip of a break edge: per break, the reason in user words, the
 * tracer's own text and the hint, whole. */
static char *break_tooltip(const DrRecord *rec)
{
    StrBuf b;
    vs_init(&b);
    for (size_t i = 0; i < rec->n_breaks; i++) {
        const DrBreak *br = &rec->breaks[i];
        sb_add(&b, i ? "\\n\\n" : "");
        vs_add_cut(&b, *br->meaning ? br->meaning : br->reason, 0);
        if (*br->meaning) {
            sb_add(&b, "\\n(");
            vs_add_cut(&b, br->reason, 0);
            sb_add(&b, ")");
        }
        if (*br->hint) {
            sb_add(&b, "\\nhint: ");
            vs_add_cut(&b, br->hint, 0);
        }
    }
    return sb_steal(&b);
}

/* A resume function that no snapshot code carries (never called yet). */
static Agnode_t *draw_missing(Agraph_t *g, const char *resume)
{
    Agnode_t *v = vgv_node(g, resume);
    StrBuf b;
    vs_init(&b);
    vs_add_cut(&b, resume, 0);
    sb_add(&b, "\\nnot run yet");
    vgv_set(v, "label", b.s);
    vgv_set(v, "style", "rounded,dashed");
    vgv_set(v, "color", "#9e9e9e");
    sb_free(&b);
    return v;
}

/* Edges from each compile of codes->v[at] to the resume functions it calls
 * (the fall-through with a hollow arrowhead); new resume codes
 * are appended to `codes` (drawn by the caller's loop). */
static void link_resumes(Agraph_t *g, CodeList *codes, size_t at, Agnode_t ***firsts,
                         EdgeList *edges)
{
    const DrCode *code = codes->v[at];
    for (size_t r = 0; r < code->n_records; r++) {
        const DrRecord *rec = code->records[r];
        for (size_t i = 0; i < rec->n_resumes; i++) {
            const DrResume *res = &rec->resumes[i];
            const DrCode *target = res->code;
            Agnode_t *head;
            if (target == NULL || target->frame_id == UINT32_MAX) {
                head = draw_missing(g, res->name);
            } else {
                if (codes_add(codes, target)) {
                    *firsts = xrealloc(*firsts, codes->cap * sizeof **firsts);
                    (*firsts)[codes->n - 1] = draw_code(g, target);
                }
                size_t k = 0;
                while (codes->v[k] != target)
                    k++;
                head = (*firsts)[k];
            }
            Agedge_t *e = vgv_edge(g, vgv_find_node(g, rec->id), head);
            edges_add(edges, e, rec, res);
            if (rec->n_breaks) {
                char *tip = break_tooltip(rec);
                vgv_set(e, "tooltip", tip);
                free(tip);
            }
            vgv_set(e, "fontcolor", "#8e1b1b");
            if (res->kind == DT_RK_FALLTHROUGH)
                vgv_set(e, "arrowhead", "empty");
            if (target != NULL && target->frame_id != UINT32_MAX) {
                char cl[48];
                snprintf(cl, sizeof cl, "cluster_frame_%u", target->frame_id);
                vgv_set(e, "lhead", cl);
            }
        }
    }
}

static void set_breaks_label(Agraph_t *g, const DrCode *code, const CodeList *codes)
{
    size_t graphs = 0, breaks = 0;
    for (size_t i = 0; i < codes->n; i++)
        for (size_t r = 0; r < codes->v[i]->n_records; r++) {
            graphs += codes->v[i]->records[r]->n_graphs;
            breaks += codes->v[i]->records[r]->n_breaks;
        }
    StrBuf b;
    vs_init(&b);
    sb_add(&b, "<FONT POINT-SIZE=\"14\"><B>graph breaks</B>  ");
    vs_add_html(&b, code->name, 60, 0);
    sb_addf(&b, "</FONT>  <FONT COLOR=\"#555555\">frame %u · %zu function%s · %zu graph%s · "
            "%zu break%s</FONT><BR ALIGN=\"LEFT\"/> ", code->frame_id, codes->n,
            codes->n == 1 ? "" : "s", graphs, graphs == 1 ? "" : "s", breaks,
            breaks == 1 ? "" : "s");
    vgv_set_html(g, "label", b.s);
    sb_free(&b);
}

static int break_cost_desc(const void *a, const void *b)
{
    const DrRecord *x = *(const DrRecord *const *)a, *y = *(const DrRecord *const *)b;
    uint64_t ex = x->breaks[0].samples ? x->breaks[0].est_ns : 0;
    uint64_t ey = y->breaks[0].samples ? y->breaks[0].est_ns : 0;
    if (ex != ey)
        return ex < ey ? 1 : -1;
    return strcmp(x->id, y->id);
}

/* Ranks the breaks drawn by estimated eager time, then labels and colours
 * their edges; a legend node says what the colours mean. */
static void color_breaks(Agraph_t *g, const EdgeList *edges)
{
    const DrRecord **recs = xcalloc(edges->n + 1, sizeof *recs);
    size_t n = 0;
    for (size_t i = 0; i < edges->n; i++) {
        const DrRecord *rec = edges->v[i].rec;
        int seen = rec->n_breaks == 0;
        for (size_t k = 0; k < n && !seen; k++)
            seen = recs[k] == rec;
        if (!seen)
            recs[n++] = rec;
    }
    qsort(recs, n, sizeof *recs, break_cost_desc);
    uint64_t max_ns = n && recs[0]->breaks[0].samples ? recs[0]->breaks[0].est_ns : 0;
    for (size_t i = 0; i < edges->n; i++) {
        const BreakEdge *be = &edges->v[i];
        size_t rank = 0;
        while (rank < n && recs[rank] != be->rec)
            rank++;
        char *label = break_label(be->rec, be->res, rank + 1, n);
        vgv_set(be->edge, "label", label);
        free(label);
        size_t k = cost_class_of(be->rec->n_breaks ? &be->rec->breaks[0] : NULL, max_ns);
        vgv_set(be->edge, "color", cost_class[k].color);
        vgv_set(be->edge, "penwidth", cost_class[k].penwidth);
    }
    free(recs);
    if (n == 0)
        return;
    char t[32];
    StrBuf b;
    vs_init(&b);
    sb_add(&b, "<TABLE BORDER=\"1\" COLOR=\"#9e9e9e\" CELLBORDER=\"0\" CELLSPACING=\"2\" "
           "CELLPADDING=\"2\"><TR><TD COLSPAN=\"2\" ALIGN=\"LEFT\"><B>break cost</B>: eager time "
           "between a graph and its resume function,<BR ALIGN=\"LEFT\"/>estimated total (sampled "
           "runs' mean × runs), share of the costliest");
    if (max_ns)
        sb_addf(&b, " (%s)", vs_fmt_ns(t, sizeof t, max_ns));
    sb_add(&b, "</TD></TR>");
    for (size_t k = 0; k < N_COST_CLASSES; k++)
        sb_addf(&b, "<TR><TD BGCOLOR=\"%s\" WIDTH=\"36\" HEIGHT=\"%d\"></TD>"
                "<TD ALIGN=\"LEFT\"><FONT POINT-SIZE=\"9\">%s</FONT></TD></TR>",
                cost_class[k].color, 2 + (int)(2 * (N_COST_CLASSES - k)), cost_class[k].text);
    sb_add(&b, "</TABLE>");
    Agnode_t *legend = vgv_node(g, "break cost legend");
    vgv_set(legend, "shape", "plaintext");
    vgv_set_html(legend, "label", b.s);
    sb_free(&b);
}

Agraph_t *vbreaks_draw(const DrCode *code)
{
    Agraph_t *g = vgv_open("graph_breaks");
    CodeList codes = {NULL, 0, 0};
    Agnode_t **firsts = NULL;   /* first node of each drawn code, parallel to codes.v */
    vgv_set(g, "compound", "true");
    vgv_set(g, "ranksep", "0.6");
    codes_add(&codes, code);
    firsts = xrealloc(firsts, codes.cap * sizeof *firsts);
    firsts[0] = draw_code(g, code);
    EdgeList edges = {NULL, 0, 0};
    for (size_t at = 0; at < codes.n; at++)     /* breadth-first; codes grows */
        link_resumes(g, &codes, at, &firsts, &edges);
    color_breaks(g, &edges);
    set_breaks_label(g, code, &codes);
    free(edges.v);
    free(firsts);
    free(codes.v);
    return g;
}
