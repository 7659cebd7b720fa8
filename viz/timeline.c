/* timeline.c — the timeline of dynamo-dot (see timeline.h).
 *
 * Owns the look of the timeline and its two containers (SVG, HTML page).
 * Written by hand, not through Graphviz: a time axis is a fixed layout.
 * Reads a DrTrace only; never the reader or the process.  Every text from
 * the process goes through sb_add_escaped (STR_HTML: valid in XML too).
 */
#include "timeline.h"

#include <stdint.h>     /* int64_t */
#include <stdlib.h>     /* free */
#include <string.h>     /* strcmp */

#include "vstr.h"       /* StrBuf, vs_fmt_ns, vs_basename */

#define WIDTH 1280      /* px */
#define LABEL_W 330     /* the frame names' column, px */
#define COUNT_W 250     /* the per-row counts' column, px */
#define ROW_H 46        /* px: name, file, storm line */
#define TOP 74          /* title and axis, px */
#define LEGEND_H 40     /* px */
#define X0 (LABEL_W + 14)
#define X1 (WIDTH - COUNT_W - 14)
#define MAX_TEXT 200    /* characters of a reason in a hover text */

/* What a compile's mark says. */
typedef enum { MK_FIRST, MK_RECOMPILE, MK_FAILED, MK_SKIPPED, MK_LIMIT, MK_COUNT } MarkKind;

static const char *const MARK_NAME[MK_COUNT] = {"first", "recompile", "failed", "skipped", "limit"};
static const char *const MARK_LABEL[MK_COUNT] = {"first compile", "recompile", "compile failed",
                                                 "skipped", "cache limit hit"};
static const char *const MARK_FILL[MK_COUNT] = {"#1f77b4", "#ff7f0e", "#8e24aa", "#9e9e9e",
                                                "#d62728"};

/* One frame's row. */
typedef struct {
    int64_t frame;
    int64_t epoch;                  /* resets before its first event: frame ids restart */
    const DrTraceEvent *first;      /* borrowed: its first event (name, file, line) */
    size_t marks[MK_COUNT];         /* compiles by kind, count */
    size_t breaks;                  /* count */
    int64_t guard_fails;            /* count */
    const char *top_reason;         /* borrowed: its most frequent recompile reason, or NULL */
    size_t top_reason_n;            /* count */
} Row;

typedef struct {
    const DrTrace *t;
    Row *rows;                      /* owned; first seen first */
    size_t n_rows;
    size_t *row_ix;                 /* owned: per event, its row (SIZE_MAX: none) */
    int64_t t0, t1;                 /* ns: the axis */
} Timeline;

/* The recompile event of compile event i (same [F/C], published with it), or NULL. */
static const DrTraceEvent *recompile_of(const DrTrace *t, size_t i)
{
    const DrTraceEvent *c = &t->ev[i];
    for (size_t j = i + 1; j < t->n && j <= i + 64; j++) {
        const DrTraceEvent *e = &t->ev[j];
        if (e->kind_id == DT_EV_RECOMPILE && e->frame == c->frame && e->compile == c->compile)
            return e;
        if (e->kind_id == DT_EV_COMPILE || e->kind_id == DT_EV_LIMIT)   /* the next publish */
            break;
    }
    return NULL;
}

/* The mark of event i, or MK_COUNT when it is no compile. */
static MarkKind mark_of(const DrTrace *t, size_t i)
{
    const DrTraceEvent *e = &t->ev[i];
    if (e->kind_id == DT_EV_LIMIT)
        return MK_LIMIT;
    if (e->kind_id != DT_EV_COMPILE)
        return MK_COUNT;
    DtRecStatus st = dt_rec_status_of(e->status, strlen(e->status));
    if (st == DT_RS_SKIPPED)
        return MK_SKIPPED;
    if (st != DT_RS_OK && st != DT_RS_UNKNOWN)
        return st == DT_RS_LIMIT ? MK_LIMIT : MK_FAILED;
    return recompile_of(t, i) ? MK_RECOMPILE : MK_FIRST;
}

/* The row of event e: frame ids start again after a reset (epoch), so a
 * row is one (epoch, frame id) pair, never two code objects. */
static size_t row_of(Timeline *tl, const DrTraceEvent *e, int64_t epoch)
{
    for (size_t i = 0; i < tl->n_rows; i++)
        if (tl->rows[i].frame == e->frame && tl->rows[i].epoch == epoch)
            return i;
    tl->rows = xrealloc(tl->rows, (tl->n_rows + 1) * sizeof *tl->rows);
    Row *r = &tl->rows[tl->n_rows];
    memset(r, 0, sizeof *r);
    r->frame = e->frame;
    r->epoch = epoch;
    r->first = e;
    return tl->n_rows++;
}

/* What a recompile event blames: the failing guard ("- local 'n'
 * EQUALS_MATCH", the same for every value of a storm), else its text. */
static const char *trigger(const DrTraceEvent *e)
{
    return *e->guard ? e->guard : e->text;
}

static int cmp_text(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* The most frequent recompile trigger of row r: the row's triggers sorted,
 * the longest run (O(n log n): a record may hold thousands of recompiles). */
static void top_reason(Timeline *tl, Row *r)
{
    const DrTrace *t = tl->t;
    const char **v = xmalloc((r->marks[MK_RECOMPILE] + 1) * sizeof *v);
    size_t n = 0;
    for (size_t i = 0; i < t->n && n < r->marks[MK_RECOMPILE]; i++)
        if (t->ev[i].kind_id == DT_EV_COMPILE && tl->row_ix[i] == (size_t)(r - tl->rows)
            && mark_of(t, i) == MK_RECOMPILE && *trigger(recompile_of(t, i)))
            v[n++] = trigger(recompile_of(t, i));
    qsort(v, n, sizeof *v, cmp_text);
    for (size_t i = 0, j; i < n; i = j) {
        for (j = i + 1; j < n && strcmp(v[j], v[i]) == 0; j++)
            ;
        if (j - i > r->top_reason_n) {
            r->top_reason = v[i];
            r->top_reason_n = j - i;
        }
    }
    free(v);
}

static void build(Timeline *tl, const DrTrace *t)
{
    memset(tl, 0, sizeof *tl);
    tl->t = t;
    tl->row_ix = xmalloc((t->n + 1) * sizeof *tl->row_ix);
    int any = 0;
    int64_t epoch = 0;
    for (size_t i = 0; i < t->n; i++) {
        const DrTraceEvent *e = &t->ev[i];
        tl->row_ix[i] = SIZE_MAX;
        if (e->t_ns <= 0)
            continue;
        if (!any || e->t_ns < tl->t0)
            tl->t0 = e->t_ns;
        if (!any || e->t_ns > tl->t1)
            tl->t1 = e->t_ns;
        any = 1;
        if (e->frame < 0) {                         /* a reset: a line across the rows */
            epoch++;
            continue;
        }
        tl->row_ix[i] = row_of(tl, e, epoch);
        Row *r = &tl->rows[tl->row_ix[i]];
        MarkKind k = mark_of(t, i);
        if (k != MK_COUNT)
            r->marks[k]++;
        else if (e->kind_id == DT_EV_BREAK)
            r->breaks++;
        else if (e->kind_id == DT_EV_GUARD_FAIL)
            r->guard_fails += e->count > 0 ? e->count : 0;
    }
    if (tl->t1 - tl->t0 < 1000000) {                /* at least 1 ms */
        if (tl->t0 > INT64_MAX - 1000000)
            tl->t0 = tl->t1 - 1000000;
        else
            tl->t1 = tl->t0 + 1000000;
    }
    for (size_t i = 0; i < tl->n_rows; i++)
        top_reason(tl, &tl->rows[i]);
}

static double x_of(const Timeline *tl, int64_t t_ns)
{
    return X0 + (double)(t_ns - tl->t0) * (X1 - X0) / (double)(tl->t1 - tl->t0);
}

/* The y of event i's row. */
static double y_of(const Timeline *tl, size_t i)
{
    size_t row = tl->row_ix[i];
    return row == SIZE_MAX ? TOP : TOP + ROW_H * (double)row + ROW_H / 2.0;
}

static int height(const Timeline *tl)
{
    return TOP + ROW_H * (int)(tl->n_rows ? tl->n_rows : 1) + LEGEND_H;
}

static void text(StrBuf *b, const char *s, size_t max)
{
    sb_add_escaped(b, s, STR_HTML, max);
}

/* ---- the axis -------------------------------------------------------------------- */

/* A round step (1, 2, 5 x 10^k ns) giving about 8 ticks over span. */
static int64_t tick_step(int64_t span)
{
    int64_t step = 1;
    while (step <= span / 80)
        step *= 10;
    if (step * 5 <= span / 6)
        return step * 5;
    return step * 2 <= span / 6 ? step * 2 : step;
}

static void draw_axis(StrBuf *b, const Timeline *tl)
{
    int64_t step = tick_step(tl->t1 - tl->t0);
    int bottom = height(tl) - LEGEND_H;
    for (int64_t k = 0; k <= (tl->t1 - tl->t0) / step; k++) {
        int64_t d = k * step;
        double x = x_of(tl, tl->t0 + d);
        char lab[32];
        sb_addf(b, "<line class=\"tick\" x1=\"%.1f\" y1=\"%d\" x2=\"%.1f\" y2=\"%d\"/>", x, TOP - 6,
                x, bottom);
        sb_addf(b, "<text class=\"ticklabel\" x=\"%.1f\" y=\"%d\" text-anchor=\"middle\">+%s</text>\n",
                x, TOP - 10, vs_fmt_ns(lab, sizeof lab, (uint64_t)d));
    }
}

/* ---- rows and marks ---------------------------------------------------------------- */

static void draw_row(StrBuf *b, const Timeline *tl, size_t i)
{
    const Row *r = &tl->rows[i];
    const DrTraceEvent *e = r->first;
    double y = TOP + ROW_H * (double)i + ROW_H / 2.0;
    sb_addf(b, "<g class=\"row\" data-frame=\"%lld\" data-row=\"%zu\">", (long long)r->frame, i);
    if (i % 2)
        sb_addf(b, "<rect class=\"band\" x=\"0\" y=\"%.1f\" width=\"%d\" height=\"%d\"/>",
                y - ROW_H / 2.0, WIDTH, ROW_H);
    sb_addf(b, "<line class=\"base\" x1=\"%d\" y1=\"%.1f\" x2=\"%d\" y2=\"%.1f\"/>", X0, y, X1, y);
    sb_addf(b, "<text class=\"frame\" x=\"8\" y=\"%.1f\"><tspan class=\"fid\">%lld</tspan> ",
            y - 7, (long long)r->frame);
    text(b, *e->context ? e->context : e->name, 34);
    sb_add(b, "</text>");
    sb_addf(b, "<text class=\"where\" x=\"8\" y=\"%.1f\">", y + 6);
    if (*e->context) {
        text(b, e->name, 24);
        sb_add(b, " · ");
    }
    text(b, vs_basename(e->file), 34);
    if (e->line >= 0)
        sb_addf(b, ":%lld", (long long)e->line);
    sb_add(b, "</text>");
    size_t compiles = 0;
    for (int k = 0; k < MK_COUNT; k++)
        compiles += r->marks[k];
    sb_addf(b, "<text class=\"counts\" x=\"%d\" y=\"%.1f\">%zu compile%s", X1 + 16, y - 3,
            compiles, compiles == 1 ? "" : "s");
    if (r->marks[MK_RECOMPILE])
        sb_addf(b, " · <tspan class=\"re\">%zu recompile%s</tspan>", r->marks[MK_RECOMPILE],
                r->marks[MK_RECOMPILE] == 1 ? "" : "s");
    if (r->marks[MK_LIMIT])
        sb_add(b, " · <tspan class=\"lim\">limit</tspan>");
    sb_addf(b, "</text><text class=\"where\" x=\"%d\" y=\"%.1f\">%zu break%s · %lld guard "
            "failure%s", X1 + 16, y + 10, r->breaks, r->breaks == 1 ? "" : "s",
            (long long)r->guard_fails, r->guard_fails == 1 ? "" : "s");
    sb_add(b, "</text>");
    if (r->top_reason_n >= 3) {                     /* a storm: name its trigger */
        sb_addf(b, "<text class=\"storm\" x=\"8\" y=\"%.1f\">recompile storm: %zu× ", y + 19,
                r->top_reason_n);
        text(b, r->top_reason, 44);
        sb_add(b, "</text>");
    }
    sb_add(b, "</g>\n");
}

/* The hover text of event i into b (plain text, escaped). */

/* sep, then "property: expected E, got A" of the failing guard of `why`,
 * when it names one. */
static void add_values(StrBuf *b, const DrTraceEvent *why, const char *sep)
{
    if (!*why->property)
        return;
    sb_add(b, sep);
    text(b, why->property, 40);
    sb_add(b, ": expected ");
    text(b, why->expected, 60);
    sb_add(b, ", got ");
    text(b, why->actual, 60);
}

static void hover(StrBuf *b, const Timeline *tl, size_t i, const char *what)
{
    const DrTraceEvent *e = &tl->t->ev[i];
    char d[32], c[32];
    sb_addf(b, "+%s  ", vs_fmt_ns(d, sizeof d, (uint64_t)(e->t_ns - tl->t0)));
    if (e->frame >= 0 && e->compile >= 0)
        sb_addf(b, "[%lld/%lld] ", (long long)e->frame, (long long)e->compile);
    text(b, e->name, 60);
    sb_add(b, ": ");
    sb_add(b, what);
    if (e->compile_ns > 0)
        sb_addf(b, " in %s", vs_fmt_ns(c, sizeof c, (uint64_t)e->compile_ns));
    const DrTraceEvent *re = e->kind_id == DT_EV_COMPILE ? recompile_of(tl->t, i) : NULL;
    const DrTraceEvent *why = re ? re : e;
    if (*why->text && e->kind_id != DT_EV_COMPILE) {
        sb_add(b, "\n");
        text(b, why->text, MAX_TEXT);
    } else if (re != NULL) {
        sb_add(b, "\nfailing guard: ");
        text(b, re->text, MAX_TEXT);
    }
    add_values(b, why, "\n");
    if (*e->where && e->kind_id == DT_EV_BREAK) {
        sb_add(b, "\nat ");
        text(b, e->where, 100);
    }
}

static void draw_mark(StrBuf *b, const Timeline *tl, size_t i)
{
    const DrTraceEvent *e = &tl->t->ev[i];
    double x = x_of(tl, e->t_ns), y = y_of(tl, i);
    MarkKind k = mark_of(tl->t, i);
    const char *kind = k != MK_COUNT ? MARK_NAME[k]
                     : e->kind_id == DT_EV_BREAK ? "break"
                     : e->kind_id == DT_EV_GUARD_FAIL ? "guard_fail" : NULL;
    if (kind == NULL)                               /* recompile/error: shown by their compile */
        return;
    sb_addf(b, "<g class=\"mark\" data-kind=\"%s\" data-frame=\"%lld\" data-compile=\"%lld\" "
            "data-row=\"%zu\"><title>", kind, (long long)e->frame, (long long)e->compile,
            tl->row_ix[i]);
    char what[64] = "";
    if (e->kind_id == DT_EV_GUARD_FAIL)
        snprintf(what, sizeof what, "%lld guard failure%s", (long long)e->count,
                 e->count == 1 ? "" : "s");
    hover(b, tl, i, k != MK_COUNT ? MARK_LABEL[k] : e->kind_id == DT_EV_BREAK ? "graph break"
                                  : what);
    sb_add(b, "</title>");
    if (k == MK_LIMIT)
        sb_addf(b, "<rect x=\"%.1f\" y=\"%.1f\" width=\"12\" height=\"12\" fill=\"%s\"/>", x - 6,
                y - 6, MARK_FILL[k]);
    else if (k != MK_COUNT)
        sb_addf(b, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"6\" fill=\"%s\"/>", x, y, MARK_FILL[k]);
    else if (e->kind_id == DT_EV_BREAK)
        sb_addf(b, "<path d=\"M%.1f %.1fl-5 8h10z\" fill=\"#546e7a\"/>", x, y + 6);
    else
        sb_addf(b, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#e57373\" "
                "stroke-width=\"2\"/>", x, y - 14, x, y - 7);
    sb_add(b, "</g>\n");
}

static void draw_resets(StrBuf *b, const Timeline *tl)
{
    for (size_t i = 0; i < tl->t->n; i++) {
        const DrTraceEvent *e = &tl->t->ev[i];
        if (e->kind_id != DT_EV_RESET || e->t_ns <= 0)
            continue;
        double x = x_of(tl, e->t_ns);
        sb_addf(b, "<line class=\"reset\" x1=\"%.1f\" y1=\"%d\" x2=\"%.1f\" y2=\"%d\"><title>"
                "dynamo.reset()</title></line>\n", x, TOP - 4, x, height(tl) - LEGEND_H);
    }
}

static void draw_legend(StrBuf *b, const Timeline *tl)
{
    int y = height(tl) - LEGEND_H / 2 + 4, x = 12;
    for (int k = 0; k < MK_COUNT; k++) {
        if (k == MK_LIMIT)
            sb_addf(b, "<rect x=\"%d\" y=\"%d\" width=\"12\" height=\"12\" fill=\"%s\"/>", x,
                    y - 10, MARK_FILL[k]);
        else
            sb_addf(b, "<circle cx=\"%d\" cy=\"%d\" r=\"6\" fill=\"%s\"/>", x + 6, y - 4,
                    MARK_FILL[k]);
        sb_addf(b, "<text class=\"legend\" x=\"%d\" y=\"%d\">%s</text>", x + 18, y, MARK_LABEL[k]);
        x += 150;
    }
    sb_addf(b, "<path d=\"M%d %dl-5 8h10z\" fill=\"#546e7a\"/><text class=\"legend\" x=\"%d\" "
            "y=\"%d\">graph break</text>", x + 6, y - 8, x + 18, y);
    x += 130;
    sb_addf(b, "<line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\" stroke=\"#e57373\" stroke-width=\"2\"/>"
            "<text class=\"legend\" x=\"%d\" y=\"%d\">guard failures</text>", x + 6, y - 10, x + 6,
            y - 2, x + 18, y);
}

static const char STYLE[] =
    "svg.dynamo-timeline{font-family:'DejaVu Sans',Verdana,sans-serif;background:#fff}"
    ".band{fill:#f5f7fa}.base{stroke:#b0bec5;stroke-width:1}"
    ".tick{stroke:#eceff1;stroke-width:1}.ticklabel{font-size:10px;fill:#607d8b}"
    ".frame{font-size:12px;font-weight:bold;fill:#263238}.fid{fill:#78909c;font-weight:normal}"
    ".where{font-size:10px;fill:#607d8b}.counts{font-size:11px;fill:#37474f}"
    ".re{fill:#e65100;font-weight:bold}.lim{fill:#c62828;font-weight:bold}"
    ".storm{font-size:10px;fill:#e65100}.title{font-size:15px;font-weight:bold;fill:#263238}"
    ".sub{font-size:11px;fill:#607d8b}.legend{font-size:11px;fill:#37474f}"
    ".reset{stroke:#616161;stroke-width:1;stroke-dasharray:4 3}"
    ".mark{cursor:pointer}.mark:hover circle,.mark:hover rect{stroke:#000;stroke-width:2}";

static void draw_svg(StrBuf *b, const Timeline *tl)
{
    const DrTrace *t = tl->t;
    char span[32];
    size_t compiles = 0, recompiles = 0;
    for (size_t i = 0; i < tl->n_rows; i++) {
        for (int k = 0; k < MK_COUNT; k++)
            compiles += tl->rows[i].marks[k];
        recompiles += tl->rows[i].marks[MK_RECOMPILE];
    }
    sb_addf(b, "<svg xmlns=\"http://www.w3.org/2000/svg\" class=\"dynamo-timeline\" "
            "width=\"%d\" height=\"%d\" viewBox=\"0 0 %d %d\" data-compiles=\"%zu\" "
            "data-frames=\"%zu\">\n<style>%s</style>\n", WIDTH, height(tl), WIDTH, height(tl),
            compiles, tl->n_rows, STYLE);
    sb_addf(b, "<rect x=\"0\" y=\"0\" width=\"%d\" height=\"%d\" fill=\"#fff\"/>", WIDTH,
            height(tl));
    sb_addf(b, "<text class=\"title\" x=\"8\" y=\"20\">dynamo timeline · pid %lld · %zu "
            "frame%s · %zu compile%s · %zu recompile%s · over %s</text>", (long long)t->head.pid,
            tl->n_rows, tl->n_rows == 1 ? "" : "s", compiles, compiles == 1 ? "" : "s",
            recompiles, recompiles == 1 ? "" : "s",
            vs_fmt_ns(span, sizeof span, (uint64_t)(tl->t1 - tl->t0)));
    sb_add(b, "<text class=\"sub\" x=\"8\" y=\"38\">");
    text(b, t->head.argv, 150);
    if (t->lost)
        sb_addf(b, " · %llu events lost (ring overwritten)", (unsigned long long)t->lost);
    sb_add(b, "</text>\n");
    draw_axis(b, tl);
    for (size_t i = 0; i < tl->n_rows; i++)
        draw_row(b, tl, i);
    draw_resets(b, tl);
    for (int pass = 0; pass < 2; pass++)            /* compiles over breaks and ticks */
        for (size_t i = 0; i < t->n; i++)
            if (t->ev[i].frame >= 0 && t->ev[i].t_ns > 0
                && (mark_of(t, i) != MK_COUNT) == pass)
                draw_mark(b, tl, i);
    if (tl->n_rows == 0)
        sb_addf(b, "<text class=\"sub\" x=\"%d\" y=\"%d\">no compile in this record</text>", X0,
                TOP + ROW_H / 2);
    draw_legend(b, tl);
    sb_add(b, "</svg>\n");
}

/* ---- the HTML page ------------------------------------------------------------------ */

static const char PAGE_STYLE[] =
    "body{font-family:'DejaVu Sans',Verdana,sans-serif;margin:16px;color:#263238}"
    "h1{font-size:18px;margin:0 0 4px}p.meta{font-size:12px;color:#607d8b;margin:0 0 10px}"
    "#detail{font-size:12px;white-space:pre-wrap;background:#fffde7;border:1px solid #fff59d;"
    "padding:6px 8px;min-height:3.6em;margin:8px 0;font-family:'DejaVu Sans Mono',monospace}"
    "table{border-collapse:collapse;font-size:12px;margin-top:8px}"
    "td,th{border-bottom:1px solid #eceff1;padding:3px 8px;text-align:left;vertical-align:top}"
    "th{background:#eceff1}td.k-recompile{color:#e65100;font-weight:bold}"
    "td.k-limit{color:#c62828;font-weight:bold}td.k-failed{color:#8e24aa}"
    "td{white-space:nowrap}td.mono{font-family:'DejaVu Sans Mono',monospace;white-space:normal}";

static const char PAGE_SCRIPT[] =
    "(function(){var d=document.getElementById('detail');"
    "document.querySelectorAll('svg .mark').forEach(function(m){"
    "var t=m.querySelector('title');"
    "m.addEventListener('mouseenter',function(){d.textContent=t?t.textContent:'';});"
    "});})();";

/* The table of compiles (every mark but breaks and guard failures). */
static void add_table(StrBuf *b, const Timeline *tl)
{
    const DrTrace *t = tl->t;
    sb_add(b, "<table id=\"compiles\"><tr><th>time</th><th>[F/C]</th><th>frame</th><th>kind</th>"
              "<th>compile</th><th>reason</th></tr>\n");
    for (size_t i = 0; i < t->n; i++) {
        const DrTraceEvent *e = &t->ev[i];
        MarkKind k = mark_of(t, i);
        if (k == MK_COUNT || e->frame < 0)
            continue;
        const DrTraceEvent *re = k == MK_RECOMPILE ? recompile_of(t, i) : NULL;
        char d[32], c[32];
        sb_addf(b, "<tr><td>+%s</td><td>[%lld/%lld]</td><td>",
                vs_fmt_ns(d, sizeof d, (uint64_t)(e->t_ns - tl->t0)), (long long)e->frame,
                (long long)e->compile);
        text(b, *e->context ? e->context : e->name, 40);
        sb_addf(b, "</td><td class=\"k-%s\">%s</td><td>%s</td><td class=\"mono\">", MARK_NAME[k],
                MARK_LABEL[k], e->compile_ns > 0 ? vs_fmt_ns(c, sizeof c, (uint64_t)e->compile_ns)
                                                 : "");
        const DrTraceEvent *why = re ? re : k == MK_LIMIT ? e : NULL;
        if (why != NULL) {
            text(b, why->text, MAX_TEXT);
            add_values(b, why, "<br>");
        }
        sb_add(b, "</td></tr>\n");
    }
    sb_add(b, "</table>\n");
}

static void draw_html(StrBuf *b, const Timeline *tl)
{
    const DrTrace *t = tl->t;
    sb_addf(b, "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
            "<title>dynamo timeline · pid %lld</title><style>%s</style></head><body>\n",
            (long long)t->head.pid, PAGE_STYLE);
    sb_addf(b, "<h1>dynamo timeline · pid %lld</h1><p class=\"meta\">", (long long)t->head.pid);
    text(b, t->head.argv, 300);
    sb_add(b, " · python ");
    text(b, t->head.python, 20);
    sb_add(b, " · torch ");
    text(b, t->head.torch, 30);
    sb_add(b, *t->end ? " · record ended: " : " · record still open");
    text(b, t->end, 20);
    sb_add(b, "</p>\n");
    draw_svg(b, tl);
    sb_add(b, "<div id=\"detail\">hover a mark for its compile, recompile reason or break"
              "</div>\n");
    add_table(b, tl);
    sb_addf(b, "<script>%s</script>\n</body></html>\n", PAGE_SCRIPT);
}

int vtimeline_write(FILE *out, const DrTrace *t, VtlFormat format)
{
    Timeline tl;
    StrBuf b;
    build(&tl, t);
    vs_init(&b);
    if (format == VTL_HTML)
        draw_html(&b, &tl);
    else {
        sb_add(&b, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
        draw_svg(&b, &tl);
    }
    int rc = fwrite(b.s, 1, b.len, out) == b.len ? 0 : -1;
    sb_free(&b);
    free(tl.rows);
    free(tl.row_ix);
    return rc;
}
