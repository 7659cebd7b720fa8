/* report.c — one plain-text report of a Model.  No curses, no reader:
 * everything comes from render.c so the report and the screen agree. */
#include "report.h"

#include <stdlib.h>
#include <string.h>

#include "render.h"

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

int report_write(FILE *out, const Model *m, ProcState st, int width)
{
    Lines ls;
    lines_init(&ls);
    render_header(&ls, m, st, 1);
    put_lines(out, &ls, "");
    fprintf(out, "source: %s\n", m->origin);

    TableOpts o = {.sort = SORT_FILE, .ascending = 1, .utf8 = 1, .width = width};
    /* frames in source order (file, line); the sections below follow frame ids */
    section(out, "FRAMES");
    char *title = render_table_title(&o);
    lines_clear(&ls);
    lines_add(&ls, C_TITLE, -1, -1, title);
    free(title);
    render_frames(&ls, m, &o);
    put_lines(out, &ls, "");

    section(out, "TREE");
    lines_clear(&ls);
    render_tree(&ls, m, &o);
    put_lines(out, &ls, "");

    for (size_t i = 0; i < m->n_frames; i++) {
        const MFrame *f = &m->frames[i];
        fprintf(out, "\n==== FRAME [%lld] %s  %s:%d  status %s ====\n", (long long)f->id, f->name,
                f->file, f->line, frame_status_label(f->status, 1));
        static const Tab order[] = {TAB_GRAPH, TAB_GUARDS, TAB_BREAKS, TAB_RECOMPILES, TAB_BYTECODE};
        for (size_t t = 0; t < sizeof order / sizeof *order; t++) {
            char upper[32];
            const char *name = tab_classes[order[t]].name;
            size_t k = 0;
            for (; name[k] && k + 1 < sizeof upper; k++)
                upper[k] = (char)(name[k] >= 'a' && name[k] <= 'z' ? name[k] - 32 : name[k]);
            upper[k] = '\0';
            fprintf(out, "\n-- %s --\n", upper);
            lines_clear(&ls);
            tab_classes[order[t]].render(&ls, m, f, -1, width);
            put_lines(out, &ls, "");
        }
    }

    section(out, "EVENTS (newest first)");
    lines_clear(&ls);
    tab_classes[TAB_EVENTS].render(&ls, m, NULL, -1, width);
    put_lines(out, &ls, "");
    lines_free(&ls);
    fflush(out);
    return ferror(out) ? -1 : 0;
}
