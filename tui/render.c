/* render.c — Model -> Lines for the header, the frame table, the tree and
 * the detail tabs.  Shared by the interactive view and the --once report,
 * so both always show the same facts in the same words. */
#include "render.h"
#include "reader.h"     /* dr_resume_kind_label */

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>    /* strcasecmp: tab names */

/* ---- header ---- */

const char *proc_state_label(ProcState st)
{
    switch (st) {
    case PS_LIVE: return "LIVE";
    case PS_PAUSED: return "PAUSED";
    case PS_EXITED: return "EXITED";
    case PS_SNAPSHOT: return "SNAPSHOT";
    }
    return "?";
}

void render_header(Lines *out, const Model *m, ProcState st, int show_state)
{
    char up[32], hit[16], cns[32], calls[16], state[32] = "";
    if (show_state)
        snprintf(state, sizeof state, "  [%s]", proc_state_label(st));
    lines_addf(out, C_HEADER, "dynamo-top  pid %d  Python %s  torch %s  uptime %s%s",
               m->pid, *m->python ? m->python : "?", *m->torch ? m->torch : "?",
               fmt_duration(up, sizeof up, m->uptime_s), state);
    lines_addf(out, C_VALUE,
               "calls %s  hit %s  compiles %llu  recompiles %llu  breaks %llu  compile time %s",
               fmt_count(calls, sizeof calls, m->calls), fmt_percent(hit, sizeof hit, m->hits, m->calls),
               (unsigned long long)m->compiles, (unsigned long long)m->recompiles,
               (unsigned long long)m->breaks, fmt_ns(cns, sizeof cns, m->compile_ns));
    if (m->guard_timing)        /* guard cost sampling on: say so, it costs a little */
        lines_addf(out, C_VALUE, "guard timing on: 1 of every %u lookups timed (g: off)",
                   m->guard_timing);
}

/* ---- frame table ---- */

static const char *const sort_names[SORT_COUNT] = {
    "FUNCTION", "FILE:LINE", "CALLS", "HIT%", "ENTRIES", "RECOMP", "BREAKS", "COMPILE", "STATUS",
};
/* column widths; FUNCTION takes what is left (at least its minimum) */
static const int col_width[SORT_COUNT] = { 24, 30, 9, 7, 8, 7, 7, 10, 15 };

const char *sort_key_name(SortKey k)
{
    return k < SORT_COUNT ? sort_names[k] : "?";
}

static int function_width(int width)
{
    int rest = 0;
    for (int k = 1; k < SORT_COUNT; k++)
        rest += col_width[k] + 1;
    int w = width - rest - 1;
    return w < col_width[0] ? col_width[0] : w > 48 ? 48 : w;
}

/* Appends `text` in a cell of `w` columns; numbers right-aligned. */
static void cell(StrBuf *sb, const char *text, int w, int right)
{
    size_t tw = utf8_width(text);
    if ((int)tw > w) {  /* keep the end of paths, the start of names */
        if (right || strchr(text, '/') || strchr(text, ':')) {
            const char *p = text;
            size_t pw = tw;     /* width of p, kept as p moves: linear in the text */
            while (pw > (size_t)w - 1) {
                if (((unsigned char)*p & 0xC0) != 0x80)
                    pw--;
                p++;
            }
            while (((unsigned char)*p & 0xC0) == 0x80)
                p++;
            sb_add(sb, "~");
            sb_add(sb, p);
            sb_pad(sb, 0);
        } else {
            sb_addn(sb, text, utf8_prefix(text, (size_t)w - 1));
            sb_add(sb, "~");
        }
    } else {
        if (right)
            for (size_t i = tw; i < (size_t)w; i++)
                sb_add(sb, " ");
        sb_add(sb, text);
        if (!right)
            for (size_t i = tw; i < (size_t)w; i++)
                sb_add(sb, " ");
    }
    sb_add(sb, " ");
}

char *render_table_title(const TableOpts *o)
{
    StrBuf sb;
    sb_init(&sb);
    sb_add(&sb, " ");
    for (int k = 0; k < SORT_COUNT; k++) {
        char t[40];
        const char *mark = k != (int)o->sort ? "" : o->ascending ? (o->utf8 ? "\xe2\x96\xb2" : "^")
                                                                 : (o->utf8 ? "\xe2\x96\xbc" : "v");
        snprintf(t, sizeof t, "%s%s", sort_names[k], mark);
        int w = k == 0 ? function_width(o->width) : col_width[k];
        cell(&sb, t, w, k >= SORT_CALLS && k <= SORT_COMPILE);
    }
    return sb_steal(&sb);
}

static const char *base_name(const char *path)
{
    const char *s = strrchr(path, '/');
    return s ? s + 1 : path;
}

static char *frame_row(const MFrame *f, const TableOpts *o, const char *prefix)
{
    StrBuf sb;
    char buf[64], fl[512], ent[32], calls[16], hit[16], name[256];
    sb_init(&sb);
    sb_add(&sb, " ");
    /* a decorator's wrapper, or a module's forward: who it runs for */
    if (*f->context)
        snprintf(name, sizeof name, "%s%s [%s]", prefix, f->name, f->context);
    else
        snprintf(name, sizeof name, "%s%s", prefix, f->name);
    cell(&sb, name, function_width(o->width), 0);
    snprintf(fl, sizeof fl, "%s:%d", base_name(f->file), f->line);
    cell(&sb, fl, col_width[SORT_FILE], 0);
    cell(&sb, fmt_count(calls, sizeof calls, f->calls), col_width[SORT_CALLS], 1);
    cell(&sb, fmt_percent(hit, sizeof hit, f->hits, f->calls), col_width[SORT_HIT], 1);
    if (f->limit)
        snprintf(ent, sizeof ent, "%llu/%llu", (unsigned long long)f->n_live,
                 (unsigned long long)f->limit);
    else
        snprintf(ent, sizeof ent, "%llu/?", (unsigned long long)f->n_live);
    cell(&sb, ent, col_width[SORT_ENTRIES], 1);
    snprintf(buf, sizeof buf, "%llu", (unsigned long long)f->recompiles);
    cell(&sb, buf, col_width[SORT_RECOMPILES], 1);
    snprintf(buf, sizeof buf, "%llu", (unsigned long long)f->breaks);
    cell(&sb, buf, col_width[SORT_BREAKS], 1);
    cell(&sb, fmt_ns(buf, sizeof buf, f->compile_ns), col_width[SORT_COMPILE], 1);
    sb_add(&sb, frame_status_label(f->status, o->utf8));
    return sb_steal(&sb);
}

static Color status_color(FrameStatus s)
{
    switch (s) {
    case FS_BREAK: return C_BREAK;
    case FS_LIMIT: return C_LIMIT;
    case FS_ERROR: return C_ERROR;
    default: return C_DEFAULT;
    }
}

static int cmp_u64(uint64_t a, uint64_t b) { return a < b ? -1 : a > b; }

/* qsort has no context argument: the sort options live here for one call. */
static const TableOpts *sort_opts;

static int cmp_frames(const void *pa, const void *pb)
{
    const MFrame *a = *(const MFrame *const *)pa, *b = *(const MFrame *const *)pb;
    int c = 0;
    switch (sort_opts->sort) {
    case SORT_FUNCTION: c = strcmp(a->name, b->name); break;
    case SORT_FILE:
        c = strcmp(base_name(a->file), base_name(b->file));
        if (!c)
            c = (a->line > b->line) - (a->line < b->line);   /* no overflow on any line */
        break;
    case SORT_CALLS: c = cmp_u64(a->calls, b->calls); break;
    case SORT_HIT: {
        /* compare hits/calls without floating point: a.h*b.c vs b.h*a.c */
        unsigned __int128 x = (unsigned __int128)a->hits * (b->calls ? b->calls : 1);
        unsigned __int128 y = (unsigned __int128)b->hits * (a->calls ? a->calls : 1);
        c = x < y ? -1 : x > y;
        break;
    }
    case SORT_ENTRIES: c = cmp_u64(a->n_live, b->n_live); break;
    case SORT_RECOMPILES: c = cmp_u64(a->recompiles, b->recompiles); break;
    case SORT_BREAKS: c = cmp_u64(a->breaks, b->breaks); break;
    case SORT_COMPILE: c = cmp_u64(a->compile_ns, b->compile_ns); break;
    case SORT_STATUS: c = (int)a->status - (int)b->status; break;
    default: break;
    }
    if (!sort_opts->ascending)
        c = -c;
    return c ? c : cmp_u64((uint64_t)a->id, (uint64_t)b->id);   /* stable: by frame id */
}

static int passes(const MFrame *f, const TableOpts *o);

int render_frame_passes(const MFrame *f, const TableOpts *o)
{
    return passes(f, o);
}

char *render_frame_label(const MFrame *f)
{
    if (*f->context)
        return xasprintf("%s [%s]  %s:%d", f->name, f->context, base_name(f->file), f->line);
    return xasprintf("%s  %s:%d", f->name, base_name(f->file), f->line);
}

Tab tab_by_name(const char *name)
{
    for (int t = 0; t < TAB_COUNT; t++)
        if (strcasecmp(tab_classes[t].name, name) == 0)
            return (Tab)t;
    return TAB_COUNT;
}

static int passes(const MFrame *f, const TableOpts *o)
{
    return str_contains_ci(f->name, o->filter) || str_contains_ci(f->file, o->filter)
        || str_contains_ci(f->context, o->filter);
}

/* The frames to show, filtered and sorted; caller frees the array. */
static const MFrame **ordered(const Model *m, const TableOpts *o, size_t *n)
{
    const MFrame **v = xcalloc(m->n_frames + 1, sizeof *v);
    *n = 0;
    for (size_t i = 0; i < m->n_frames; i++)
        if (passes(&m->frames[i], o))
            v[(*n)++] = &m->frames[i];
    sort_opts = o;
    qsort(v, *n, sizeof *v, cmp_frames);
    sort_opts = NULL;
    return v;
}

void render_frames(Lines *out, const Model *m, const TableOpts *o)
{
    size_t n;
    const MFrame **v = ordered(m, o, &n);
    for (size_t i = 0; i < n; i++) {
        char *row = frame_row(v[i], o, "");
        lines_add(out, status_color(v[i]->status), v[i]->id, -1, row);
        free(row);
    }
    free(v);
}

/* ---- tree ---- */

void render_tree(Lines *out, const Model *m, const TableOpts *o)
{
    const char *mid = o->utf8 ? "\xe2\x94\x9c\xe2\x94\x80 " : "|- ";
    const char *last = o->utf8 ? "\xe2\x94\x94\xe2\x94\x80 " : "`- ";
    const char *bar = o->utf8 ? "\xe2\x94\x82  " : "|  ";
    size_t n;
    const MFrame **v = ordered(m, o, &n);
    for (size_t i = 0; i < n; i++) {
        const MFrame *f = v[i];
        char *row = frame_row(f, o, "");
        lines_add(out, status_color(f->status), f->id, -1, row);
        free(row);
        for (size_t k = 0; k < f->n_entries; k++) {
            const MEntry *e = &f->entries[k];
            int is_last = k + 1 == f->n_entries;
            char t[64];
            StrBuf sb;
            sb_init(&sb);
            sb_addf(&sb, "   %s[%lld/%lld] %s  hits %llu  compile %s", is_last ? last : mid,
                    (long long)e->frame_id, (long long)e->compile_id, e->status,
                    (unsigned long long)e->hits, fmt_ns(t, sizeof t, e->compile_ns));
            if (*e->backend)
                sb_addf(&sb, "  backend %s", e->backend);
            sb_addf(&sb, "  guards %zu", e->n_guards);
            if (*e->recompile_reason)
                sb_addf(&sb, "  trigger: %s", e->recompile_reason);
            lines_add(out, e->status_id != DT_RS_OK ? C_LIMIT : C_DEFAULT, f->id, e->compile_id, sb.s);
            size_t kids = e->n_graphs + e->n_resumes;
            for (size_t g = 0; g < kids; g++) {
                sb_clear(&sb);
                sb_addf(&sb, "   %s%s", is_last ? "   " : bar, g + 1 == kids ? last : mid);
                if (g < e->n_graphs) {
                    sb_addf(&sb, "graph %s  (%llu ops)", e->graphs[g].name,
                            (unsigned long long)e->graphs[g].n_ops);
                    if (e->graphs[g].n_buckets)
                        sb_addf(&sb, "  cut at DDP buckets: %zu pieces", e->graphs[g].n_buckets);
                } else {
                    const MResume *r = &e->resumes[g - e->n_graphs];
                    sb_addf(&sb, "resume %s  %s @%u", r->name, dr_resume_kind_label(r->kind_id, r->kind),
                            r->offset);
                    if (r->frame_id >= 0)
                        sb_addf(&sb, "  -> frame [%lld]", (long long)r->frame_id);
                    else
                        sb_add(&sb, "  (not run yet)");
                }
                lines_add(out, C_DIM, f->id, e->compile_id, sb.s);
            }
            sb_free(&sb);
        }
    }
    free(v);
}

/* ---- detail tabs ---- */

static int wanted(const MEntry *e, int64_t compile_id)
{
    return compile_id < 0 || e->compile_id == compile_id;
}

static void entry_title(Lines *out, const MEntry *e, const char *what)
{
    char t[32];
    StrBuf sb;
    sb_init(&sb);
    sb_addf(&sb, "[%lld/%lld] %s", (long long)e->frame_id, (long long)e->compile_id, what);
    sb_addf(&sb, "  (status %s, compile %s", e->status, fmt_ns(t, sizeof t, e->compile_ns));
    if (*e->backend)
        sb_addf(&sb, ", backend %s", e->backend);
    sb_add(&sb, ")");
    lines_add(out, C_SECTION, e->frame_id, e->compile_id, sb.s);
    sb_free(&sb);
}

static int widest(int w, const char *text, int limit)
{
    int n = (int)utf8_width(text);
    return n > w ? (n > limit ? limit : n) : w;
}

static void tab_graph(Lines *out, const Model *m, const MFrame *f, int64_t cid, int width)
{
    (void)m; (void)width;
    size_t shown = 0;
    for (size_t k = 0; k < f->n_entries; k++) {
        const MEntry *e = &f->entries[k];
        if (!wanted(e, cid))
            continue;
        for (size_t g = 0; g < e->n_graphs; g++) {
            const MGraph *gr = &e->graphs[g];
            char what[160];
            snprintf(what, sizeof what, "graph %s  %llu ops", gr->name, (unsigned long long)gr->n_ops);
            entry_title(out, e, what);
            if (gr->backend_note && *gr->backend_note)
                lines_addf(out, C_VALUE, "  %s", gr->backend_note);
            /* columns as wide as their widest cell, within limits */
            int w_op = 6, w_name = 4, w_target = 6, w_shape = 5, w_module = 6;
            for (size_t i = 0; i < gr->n_nodes; i++) {
                const MNode *n = &gr->nodes[i];
                w_op = widest(w_op, n->op, 16);
                w_name = widest(w_name, n->name, 24);
                w_target = widest(w_target, n->target, 48);
                w_shape = widest(w_shape, n->meta, 32);
                w_module = widest(w_module, n->module, 40);
            }
            /* a graph cut at DDP's buckets: the pieces, and a BUCKET column */
            for (size_t b = 0; b < gr->n_buckets; b++)
                lines_addf(out, C_DEFAULT, "  DDP bucket %zu: %s", b + 1, gr->buckets[b]);
            const char *bucket_title = gr->n_buckets ? "BUCKET " : "";
            lines_addf(out, C_TITLE, "  %s%-*s %-*s %-*s %-*s %-*s %s", bucket_title, w_op, "OPCODE",
                       w_name, "NAME", w_target, "TARGET", w_shape, "SHAPE", w_module, "MODULE",
                       "ARGS");
            for (size_t i = 0; i < gr->n_nodes; i++) {
                const MNode *n = &gr->nodes[i];
                char bucket[16] = "";
                if (gr->n_buckets && n->bucket)
                    snprintf(bucket, sizeof bucket, "%-6u ", n->bucket);
                else if (gr->n_buckets)
                    snprintf(bucket, sizeof bucket, "%-6s ", "-");
                lines_addf(out, C_DEFAULT, "  %s%-*s %-*s %-*s %-*s %-*s %s", bucket, w_op, n->op,
                           w_name, n->name, w_target, n->target, w_shape, *n->meta ? n->meta : "-",
                           w_module, *n->module ? n->module : "-", n->args);
            }
            lines_add(out, C_DEFAULT, -1, -1, "");
            shown++;
        }
        if (!e->n_graphs && (cid >= 0 || e->status_id != DT_RS_OK)) {
            entry_title(out, e, "no graph");
            if (*e->error)
                lines_addf(out, C_ERROR, "  error: %s", e->error);
            shown++;
        }
    }
    if (!shown)
        lines_add(out, C_DIM, -1, -1, "no graphs captured for this frame");
}

/* Splits `text` at newlines into an array of borrowed slices. */
typedef struct Slice { const char *s; size_t n; } Slice;

static Slice *split(const char *text, size_t *count)
{
    size_t cap = 1;
    for (const char *p = text; *p; p++)
        cap += *p == '\n';
    Slice *v = xcalloc(cap, sizeof *v);
    size_t n = 0;
    const char *p = text;
    while (*p) {
        const char *nl = strchr(p, '\n');
        size_t len = nl ? (size_t)(nl - p) : strlen(p);
        v[n].s = p;
        v[n].n = len;
        n++;
        p += len + (nl != NULL);
    }
    *count = n;
    return v;
}

/* One half of a side-by-side line: the slice clipped / padded to `w`. */
static void half(StrBuf *sb, const Slice *sl, int w)
{
    char *t = sl ? xstrndup(sl->s, sl->n) : xstrdup("");
    for (char *p = t; *p; p++)
        if (*p == '\t')
            *p = ' ';
    size_t cut = utf8_prefix(t, (size_t)w);
    size_t start = sb->len;
    sb_addn(sb, t, cut);
    size_t used = utf8_width(sb->s + start);
    for (; used < (size_t)w; used++)
        sb_add(sb, " ");
    free(t);
}

static void tab_bytecode(Lines *out, const Model *m, const MFrame *f, int64_t cid, int width)
{
    (void)m;
    int w = (width - 3) / 2;
    if (w < 20)
        w = 20;
    size_t shown = 0;
    for (size_t k = 0; k < f->n_entries; k++) {
        const MEntry *e = &f->entries[k];
        if (!wanted(e, cid))
            continue;
        entry_title(out, e, "bytecode");
        size_t no, nm;
        Slice *o = split(e->orig_bytecode, &no);
        Slice *md = split(e->mod_bytecode, &nm);
        StrBuf sb;
        sb_init(&sb);
        Slice t1 = {"ORIGINAL BYTECODE", 17}, t2 = {"MODIFIED BYTECODE", 17};
        half(&sb, &t1, w);
        sb_add(&sb, " | ");
        half(&sb, &t2, w);
        lines_add(out, C_TITLE, e->frame_id, e->compile_id, sb.s);
        for (size_t i = 0; i < no || i < nm; i++) {
            sb_clear(&sb);
            half(&sb, i < no ? &o[i] : NULL, w);
            sb_add(&sb, " | ");
            half(&sb, i < nm ? &md[i] : NULL, w);
            /* no trailing blanks: keeps reports and screen captures diffable */
            while (sb.len && sb.s[sb.len - 1] == ' ')
                sb.s[--sb.len] = '\0';
            lines_add(out, C_DEFAULT, e->frame_id, e->compile_id, sb.s);
        }
        if (!no && !nm)
            lines_add(out, C_DIM, -1, -1, "  (no bytecode recorded)");
        lines_add(out, C_DEFAULT, -1, -1, "");
        sb_free(&sb);
        free(o);
        free(md);
        shown++;
    }
    if (!shown)
        lines_add(out, C_DIM, -1, -1, "no compiles recorded for this frame");
}

#define FROM_WIDTH 44     /* columns of the Guards tab's FROM cell */

/* The costliest guards of frame f: the tests with the most time in them
 * (the test and its source's first fetch), per lookup, with the line that
 * installed each. */
static void render_guard_cost_tests(Lines *out, const MFrame *f)
{
    if (!f->n_costly_tests)
        return;
    lines_addf(out, C_TITLE, "  %10s %6s %10s  %-7s %-44s %s", "NS/LOOKUP", "SHARE", "NS/RUN",
               "ENTRY", "GUARD TEST (costliest guards: the test and its source's fetch)",
               "FROM (the line that installed it)");
    for (size_t k = 0; k < f->n_costly_tests; k++) {
        const MCostTest *c = &f->costly_tests[k];
        char per[32], run[32], share[16];
        fmt_percent(share, sizeof share, c->timed_ns, f->lookup_ns);
        StrBuf test;            /* cut to its column, as the FROM cell */
        sb_init(&test);
        if (utf8_width(c->test) > 44) {
            sb_addn(&test, c->test, utf8_prefix(c->test, 43));
            sb_add(&test, "~");
        } else
            sb_add(&test, c->test);
        lines_addf(out, k ? C_DEFAULT : C_BREAK, "  %10s %6s %10s  %-7s %-44s %s",
                   fmt_ns(per, sizeof per, c->timed_ns / f->lookup_timed), share,
                   fmt_ns(run, sizeof run, c->timed_ns / c->timed), c->entry,
                   test.s ? test.s : "", *c->origin ? c->origin : "-");
        sb_free(&test);
    }
}

void render_guard_cost(Lines *out, const Model *m, const MFrame *f)
{
    char per[32], ns[32], calls[16], sampling[32] = "off now";
    if (m->guard_timing)
        snprintf(sampling, sizeof sampling, "1 of %u", m->guard_timing);
    if (f->lookup_timed) {
        lines_addf(out, C_SECTION, "guard cost: %s per lookup  (%s timed of %s calls; sampling %s)",
                   fmt_ns(per, sizeof per, f->lookup_ns / f->lookup_timed),
                   fmt_count(ns, sizeof ns, f->lookup_timed),
                   fmt_count(calls, sizeof calls, f->calls), sampling);
    } else {
        lines_addf(out, C_DIM, "guard cost: no timed lookup%s",
                   m->guard_timing ? " yet (sampling on)"
                                   : " (sampling off: g in dynamo-top, dynamo.config.guard_timing)");
        return;
    }
    render_guard_cost_tests(out, f);
    if (!f->n_costly)
        return;
    lines_addf(out, C_TITLE, "  %-4s %10s %6s %8s  %-10s %s", "NODE", "NS/WALK", "SHARE", "WALKS",
               "VIA", "TESTS (costliest guard-tree nodes: time in their own tests)");
    for (size_t k = 0; k < f->n_costly; k++) {
        const MCostNode *c = &f->costly[k];
        char share[16];
        fmt_percent(share, sizeof share, c->timed_ns, f->lookup_ns);
        lines_addf(out, k ? C_DEFAULT : C_BREAK, "  %-4lld %10s %6s %8s  %-10s %s",
                   (long long)c->index, fmt_ns(ns, sizeof ns, c->timed_ns / c->timed), share,
                   fmt_count(calls, sizeof calls, c->evaluations), c->via, c->tests);
    }
}

static void tab_guards(Lines *out, const Model *m, const MFrame *f, int64_t cid, int width)
{
    (void)width;
    size_t shown = 0;
    render_guard_cost(out, m, f);
    lines_add(out, C_DEFAULT, -1, -1, "");
    for (size_t k = 0; k < f->n_entries; k++) {
        const MEntry *e = &f->entries[k];
        if (!wanted(e, cid) || !e->n_guards)
            continue;
        char what[96];
        char hns[32] = "";
        if (e->hit_timed)
            fmt_ns(hns, sizeof hns, e->hit_ns / e->hit_timed);
        snprintf(what, sizeof what, "guards: %zu, entry hits %llu%s%s", e->n_guards,
                 (unsigned long long)e->hits, *hns ? ", lookup per hit " : "", hns);
        entry_title(out, e, what);
        lines_addf(out, C_TITLE, "  %6s  %-14s %-28s %-*s %s", "FAILS", "KIND", "SOURCE",
                   FROM_WIDTH, "FROM (the line that installed it)", "GUARD");
        for (size_t g = 0; g < e->n_guards; g++) {
            const MGuard *gd = &e->guards[g];
            const char *text = gd->text;
            while (*text == ' ' || *text == '-')    /* describe() starts with " - " */
                text++;
            StrBuf from;                /* "file.py:12  the line", cut to its column */
            sb_init(&from);
            size_t fw = utf8_width(gd->origin);
            if (fw > FROM_WIDTH) {
                sb_addn(&from, gd->origin, utf8_prefix(gd->origin, FROM_WIDTH - 1));
                sb_add(&from, "~");
            } else {
                sb_add(&from, gd->origin);
                for (; fw < FROM_WIDTH; fw++)
                    sb_add(&from, " ");
            }
            lines_addf(out, gd->fails ? C_BREAK : C_DEFAULT, "  %6llu  %-14s %-28s %s %s",
                       (unsigned long long)gd->fails, gd->kind, gd->source, from.s ? from.s : "",
                       text);
            sb_free(&from);
            if (*gd->last_expected || *gd->last_actual)
                lines_addf(out, C_ERROR, "  %6s  last failure: %s%sexpected %s, actual %s", "",
                           gd->last_property, *gd->last_property ? ": " : "",
                           gd->last_expected, gd->last_actual);
        }
        lines_add(out, C_DEFAULT, -1, -1, "");
        shown++;
    }
    if (!shown)
        lines_add(out, C_DIM, -1, -1, "no guards recorded for this frame");
}

/* One break row: eager time (estimated total, per run), runs, compiles, where, why. */
static void break_row(Lines *out, const MBreak *b, int with_frame)
{
    char total[32], per[32], where[512];
    if (b->samples) {
        fmt_ns(total, sizeof total, b->est_ns);
        fmt_ns(per, sizeof per, b->calls ? b->est_ns / b->calls : 0);
    } else {
        snprintf(total, sizeof total, "%s", b->calls ? "untimed" : "-");
        snprintf(per, sizeof per, "-");
    }
    snprintf(where, sizeof where, "%s:%d", base_name(b->file), b->line);
    if (with_frame) {
        char frame[96];
        if (b->frame != NULL)
            snprintf(frame, sizeof frame, "[%lld] %s", (long long)b->frame->id, b->frame->name);
        else                        /* a model not finished (model_finish sets it) */
            snprintf(frame, sizeof frame, "?");
        lines_addf(out, C_BREAK, "  %10s %10s %8llu %6llu  %-32s %-24.24s %s", total, per,
                   (unsigned long long)b->calls, (unsigned long long)b->count, where, frame,
                   *b->meaning ? b->meaning : b->reason);
        return;
    }
    lines_addf(out, C_BREAK, "  %10s %10s %8llu %6llu  %-32s %s", total, per,
               (unsigned long long)b->calls, (unsigned long long)b->count, where,
               *b->meaning ? b->meaning : b->reason);
}

/* The most costly breaks of the whole process shown under a frame's own. */
#define TOP_PROCESS_BREAKS 10

static void tab_breaks(Lines *out, const Model *m, const MFrame *f, int64_t cid, int width)
{
    (void)cid; (void)width;
    const MBreak **v;
    size_t n = model_breaks_by_cost(m, f, &v);
    if (!n) {
        lines_add(out, C_DIM, -1, -1, "no graph breaks in this frame");
    } else {
        lines_add(out, C_DIM, -1, -1, "costliest first: EAGER = time of the code run between the "
                  "graph and the resume function (a sample of runs timed), total and per run");
        lines_addf(out, C_TITLE, "  %10s %10s %8s %6s  %-32s %s", "EAGER", "PER RUN", "RUNS",
                   "COUNT", "USER FRAME", "REASON");
    }
    for (size_t i = 0; i < n; i++) {
        const MBreak *b = v[i];
        break_row(out, b, 0);
        if (*b->meaning)            /* the tracer's own words under the user's */
            lines_addf(out, C_DIM, "  %10s %10s %8s %6s  %-32s (%s)", "", "", "", "", "", b->reason);
        if (*b->hint)
            lines_addf(out, C_DEFAULT, "  %10s %10s %8s %6s  %-32s hint: %s", "", "", "", "", "",
                       b->hint);
        if (*b->user_stack) {
            Lines tmp;
            lines_init(&tmp);
            lines_add(&tmp, C_DIM, -1, -1, b->user_stack);
            for (size_t k = 0; k < tmp.n; k++)
                lines_addf(out, C_DIM, "          %s", tmp.v[k].text);
            lines_free(&tmp);
        }
    }
    free(v);
    if (m->breaks) {
        lines_add(out, C_DEFAULT, -1, -1, "");
        lines_add(out, C_TITLE, -1, -1, "  all breaks of the process, costliest first");
        render_costly_breaks(out, m, TOP_PROCESS_BREAKS);
    }
}

size_t render_costly_breaks(Lines *out, const Model *m, int top)
{
    const MBreak **v;
    size_t n = model_breaks_by_cost(m, NULL, &v);
    if (n)
        lines_addf(out, C_TITLE, "  %10s %10s %8s %6s  %-32s %-24s %s", "EAGER", "PER RUN", "RUNS",
                   "COUNT", "USER FRAME", "FRAME", "REASON");
    for (size_t i = 0; i < n && i < (size_t)top; i++)
        break_row(out, v[i], 1);
    free(v);
    return n;
}

static void tab_recompiles(Lines *out, const Model *m, const MFrame *f, int64_t cid, int width)
{
    (void)m; (void)width;
    size_t shown = 0;
    for (size_t k = 0; k < f->n_entries; k++) {
        const MEntry *e = &f->entries[k];
        if (!wanted(e, cid) || !*e->recompile_reason)
            continue;
        char t[32];
        int limit = e->status_id == DT_RS_LIMIT;
        lines_addf(out, limit ? C_LIMIT : C_BREAK,
                   "  [%lld/%lld] %-6s +%.3fs  compile %-9s trigger: %s%s", (long long)e->frame_id,
                   (long long)e->compile_id, e->status, (double)e->when_ns / 1e9,
                   fmt_ns(t, sizeof t, e->compile_ns), e->recompile_reason,
                   limit ? "  (cache_size_limit hit: runs eagerly)" : "");
        shown++;
    }
    if (!shown)
        lines_add(out, C_DIM, -1, -1, "no recompiles of this frame");
}

/* Breaks, limits and errors in their colors; the selected frame's other events stand out. */
static Color event_color(const MEvent *ev, const MFrame *f)
{
    switch (ev->kind_id) {
    case DT_EV_BREAK: return C_BREAK;
    case DT_EV_LIMIT: return C_LIMIT;
    case DT_EV_ERROR: return C_ERROR;
    default: return f && ev->frame_id == f->id ? C_SECTION : C_DEFAULT;
    }
}

static void tab_events(Lines *out, const Model *m, const MFrame *f, int64_t cid, int width)
{
    (void)cid; (void)width;
    render_events(out, m, f, 0);
}

void render_events(Lines *out, const Model *m, const MFrame *f, int only_f)
{
    if (!m->n_events) {
        lines_add(out, C_DIM, -1, -1, "no events (since reset)");
        return;
    }
    if (m->events_lost)
        lines_addf(out, C_DIM, "(%llu older events overwritten in the ring)",
                   (unsigned long long)m->events_lost);
    for (size_t i = m->n_events; i-- > 0;) {     /* newest first */
        const MEvent *ev = &m->events[i];
        if (only_f && (!f || ev->frame_id != f->id))
            continue;
        char id[48] = "";
        if (ev->frame_id >= 0 && ev->compile_id >= 0)
            snprintf(id, sizeof id, "[%lld/%lld]", (long long)ev->frame_id, (long long)ev->compile_id);
        else if (ev->frame_id >= 0)
            snprintf(id, sizeof id, "[%lld]", (long long)ev->frame_id);
        Color c = event_color(ev, f);
        lines_addf(out, c, "  #%-5llu +%9.3fs  %-9s %-8s %s", (unsigned long long)ev->seq,
                   (double)ev->when_ns / 1e9, ev->kind, id, ev->text);
    }
}

const TabClass tab_classes[TAB_COUNT] = {
    [TAB_GRAPH] = {"Graph", tab_graph},
    [TAB_BYTECODE] = {"Bytecode", tab_bytecode},
    [TAB_GUARDS] = {"Guards", tab_guards},
    [TAB_BREAKS] = {"Breaks", tab_breaks},
    [TAB_RECOMPILES] = {"Recompiles", tab_recompiles},
    [TAB_EVENTS] = {"Events", tab_events},
};
