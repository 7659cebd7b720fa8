/* report.c — one plain-text report of a Model.  No curses, no reader:
 * everything comes from render.c so the report and the screen agree.
 * The summary's rankings are its own (they order frames by one counter
 * each); the lines they print are render.c's. */
#include "report.h"

#include <stdlib.h>
#include <string.h>

static void put_lines(FILE *out, const Lines *ls, const char *indent)
{
    for (size_t i = 0; i < ls->n; i++) {
        const char *t = ls->v[i].text;
        size_t n = strlen(t);
        while (n && t[n - 1] == ' ')     /* no trailing blanks */
            n--;
        fprintf(out, "%s%.*s\n", n ? indent : "", (int)n, t);
    }
}

static void section(FILE *out, const char *title)
{
    fprintf(out, "\n%s\n", title);
}

static void tab_section(FILE *out, Lines *ls, const Model *m, const MFrame *f, Tab tab, int width)
{
    char upper[32];
    const char *name = tab_classes[tab].name;
    size_t k = 0;
    for (; name[k] && k + 1 < sizeof upper; k++)
        upper[k] = (char)(name[k] >= 'a' && name[k] <= 'z' ? name[k] - 32 : name[k]);
    upper[k] = '\0';
    fprintf(out, "\n-- %s --\n", upper);
    lines_clear(ls);
    if (tab == TAB_EVENTS)
        render_events(ls, m, f, 1);
    else
        tab_classes[tab].render(ls, m, f, -1, width);
    put_lines(out, ls, "");
}

/* ---- summary: frames ranked by one counter ---- */

typedef uint64_t (*FrameKey)(const MFrame *f);
static uint64_t key_compile(const MFrame *f) { return f->compile_ns; }
static uint64_t key_misses(const MFrame *f) { return f->misses; }
static uint64_t key_breaks(const MFrame *f) { return f->breaks; }
static uint64_t key_recompiles(const MFrame *f) { return f->recompiles; }

static FrameKey rank_key;       /* qsort has no context argument */

static int by_key_desc(const void *pa, const void *pb)
{
    const MFrame *a = *(const MFrame *const *)pa, *b = *(const MFrame *const *)pb;
    uint64_t x = rank_key(a), y = rank_key(b);
    if (x != y)
        return x < y ? 1 : -1;
    return (a->id > b->id) - (a->id < b->id);
}

/* The `o->top` frames passing the filter with the largest key (non-zero only). */
static void ranked(FILE *out, Lines *ls, const Model *m, const ReportOpts *o, const TableOpts *all,
                   const char *title, FrameKey key, SortKey column)
{
    TableOpts view = *all;      /* the title marks the ranked column, largest first */
    view.sort = column;
    view.ascending = 0;
    const TableOpts *to = &view;
    const MFrame **v = xcalloc(m->n_frames + 1, sizeof *v);
    size_t n = 0;
    for (size_t i = 0; i < m->n_frames; i++)
        if (render_frame_passes(&m->frames[i], to) && key(&m->frames[i]))
            v[n++] = &m->frames[i];
    rank_key = key;
    qsort(v, n, sizeof *v, by_key_desc);
    rank_key = NULL;
    fprintf(out, "\n%s (%zu frame%s, top %d)\n", title, n, n == 1 ? "" : "s", o->top);
    lines_clear(ls);
    if (!n) {
        lines_add(ls, C_DIM, -1, -1, "  none");
    } else {
        char *t = render_table_title(to);
        lines_add(ls, C_TITLE, -1, -1, t);
        free(t);
    }
    Model one = *m;             /* render_frames over one frame at a time, in rank order */
    for (size_t i = 0; i < n && i < (size_t)o->top; i++) {
        one.frames = (MFrame *)v[i];
        one.n_frames = 1;
        render_frames(ls, &one, to);
    }
    put_lines(out, ls, "");
    free(v);
}

static uint64_t guard_ns_per_lookup(const MFrame *f)
{
    return f->lookup_timed ? f->lookup_ns / f->lookup_timed : 0;
}

/* Frames by guard ns per lookup (sampled), each with its costliest node. */
static void guard_cost_ranking(FILE *out, const Model *m, const ReportOpts *o, const TableOpts *to)
{
    const MFrame **v = xcalloc(m->n_frames + 1, sizeof *v);
    size_t n = 0;
    for (size_t i = 0; i < m->n_frames; i++)
        if (render_frame_passes(&m->frames[i], to) && m->frames[i].lookup_timed)
            v[n++] = &m->frames[i];
    rank_key = guard_ns_per_lookup;
    qsort(v, n, sizeof *v, by_key_desc);
    rank_key = NULL;
    fprintf(out, "\nTOP FRAMES BY GUARD COST (ns per lookup, sampled; %zu frame%s, top %d)\n",
            n, n == 1 ? "" : "s", o->top);
    if (!n)
        fprintf(out, "  none%s\n", m->guard_timing ? "" : " (guard timing off: "
                "dynamo.config.guard_timing = 64, DYNAMO_GUARD_TIMING=64 or g in dynamo-top)");
    for (size_t i = 0; i < n && i < (size_t)o->top; i++) {
        const MFrame *f = v[i];
        char ns[32], cnt[16];
        char *label = render_frame_label(f);
        fprintf(out, "  [%lld] %s\n      %s per lookup (%s timed)", (long long)f->id, label,
                fmt_ns(ns, sizeof ns, guard_ns_per_lookup(f)),
                fmt_count(cnt, sizeof cnt, f->lookup_timed));
        if (f->n_costly)
            fprintf(out, "; costliest node %lld (%s): %s per walk: %s", (long long)f->costly[0].index,
                    f->costly[0].via, fmt_ns(ns, sizeof ns, f->costly[0].timed_ns / f->costly[0].timed),
                    f->costly[0].tests);
        fputc('\n', out);
        for (size_t k = 0; k < f->n_costly_tests && k < 3; k++) {     /* the costliest guards */
            const MCostTest *c = &f->costly_tests[k];
            char share[16];
            fmt_percent(share, sizeof share, c->timed_ns, f->lookup_ns);
            fprintf(out, "      %s guard: %s per lookup (%s): %s %s%s%s\n", k ? "next" : "costliest",
                    fmt_ns(ns, sizeof ns, c->timed_ns / f->lookup_timed), share, c->entry, c->test,
                    *c->origin ? "  <- " : "", c->origin);
        }
        free(label);
    }
    free(v);
}

/* The four rankings, then each frame's newest recompile trigger. */
static void summary(FILE *out, Lines *ls, const Model *m, const ReportOpts *o, const TableOpts *to)
{
    ranked(out, ls, m, o, to, "TOP FRAMES BY COMPILE TIME", key_compile, SORT_COMPILE);
    ranked(out, ls, m, o, to, "TOP FRAMES BY CACHE MISSES", key_misses,
           SORT_COUNT);             /* no column of its own: none marked */
    ranked(out, ls, m, o, to, "TOP FRAMES BY GRAPH BREAKS", key_breaks, SORT_BREAKS);
    fprintf(out, "\nTOP GRAPH BREAKS BY EAGER TIME (code run between a graph and its resume "
            "function; top %d)\n", o->top);
    lines_clear(ls);
    if (!render_costly_breaks(ls, m, o->top))
        lines_add(ls, C_DIM, -1, -1, "  none");
    put_lines(out, ls, "");
    ranked(out, ls, m, o, to, "TOP FRAMES BY RECOMPILES", key_recompiles, SORT_RECOMPILES);
    guard_cost_ranking(out, m, o, to);
    fputs("\nLAST RECOMPILE TRIGGER PER FRAME (frames with recompiles)\n", out);
    int any = 0;
    for (size_t i = 0; i < m->n_frames; i++) {
        const MFrame *f = &m->frames[i];
        if (!render_frame_passes(f, to) || !f->recompiles)
            continue;
        for (size_t k = f->n_entries; k-- > 0;) {
            if (!*f->entries[k].recompile_reason)
                continue;
            char *label = render_frame_label(f);
            fprintf(out, "  [%lld] %s\n      %s\n", (long long)f->id, label,
                    f->entries[k].recompile_reason);
            free(label);
            any = 1;
            break;
        }
    }
    if (!any)
        fputs("  none\n", out);
}

int report_write(FILE *out, const Model *m, ProcState st, const ReportOpts *o)
{
    Lines ls;
    lines_init(&ls);
    render_header(&ls, m, st, 1);
    put_lines(out, &ls, "");
    fprintf(out, "source: %s\n", m->origin);
    if (o->frame && *o->frame)
        fprintf(out, "frames matching: %s\n", o->frame);

    TableOpts to = {.sort = SORT_FILE, .ascending = 1, .utf8 = 1, .width = o->width,
                    .filter = o->frame};
    if (o->summary) {
        summary(out, &ls, m, o, &to);
        goto done;
    }
    if (o->tab == TAB_COUNT) {
        /* frames in source order (file, line); the sections below follow frame ids */
        section(out, "FRAMES");
        char *title = render_table_title(&to);
        lines_clear(&ls);
        lines_add(&ls, C_TITLE, -1, -1, title);
        free(title);
        render_frames(&ls, m, &to);
        put_lines(out, &ls, "");

        section(out, "TREE");
        lines_clear(&ls);
        render_tree(&ls, m, &to);
        put_lines(out, &ls, "");
    }
    int filtered = o->frame && *o->frame;
    if (o->tab == TAB_EVENTS && !filtered)
        goto events;
    for (size_t i = 0; i < m->n_frames; i++) {
        const MFrame *f = &m->frames[i];
        if (!render_frame_passes(f, &to))
            continue;
        char *label = render_frame_label(f);
        fprintf(out, "\n==== FRAME [%lld] %s  status %s ====\n", (long long)f->id, label,
                frame_status_label(f->status, 1));
        free(label);
        if (o->tab != TAB_COUNT) {
            tab_section(out, &ls, m, f, o->tab, o->width);
            continue;
        }
        static const Tab order[] = {TAB_GRAPH, TAB_GUARDS, TAB_BREAKS, TAB_RECOMPILES, TAB_BYTECODE};
        for (size_t t = 0; t < sizeof order / sizeof *order; t++)
            tab_section(out, &ls, m, f, order[t], o->width);
        if (filtered)
            tab_section(out, &ls, m, f, TAB_EVENTS, o->width);
    }
    if (filtered || o->tab != TAB_COUNT)
        goto done;
events:
    section(out, "EVENTS (newest first)");
    lines_clear(&ls);
    render_events(&ls, m, NULL, 0);
    put_lines(out, &ls, "");
done:
    lines_free(&ls);
    fflush(out);
    return ferror(out) ? -1 : 0;
}
