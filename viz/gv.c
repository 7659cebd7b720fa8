/* gv.c — cgraph attribute helpers and libgvc rendering for dynamo-dot.
 *
 * Owns the Graphviz context of a render (made and freed per call: the tool
 * renders once).  Must not know about dynamo data: it gets finished
 * cgraph graphs.  Graphviz's own diagnostics go to stderr; errors that stop
 * the render come back as a message in *err.
 */
#include "gv.h"

#include <errno.h>              /* errno */
#include <stdio.h>              /* FILE, fopen */
#include <stdlib.h>             /* free */
#include <string.h>             /* strcmp, strerror */
#include <unistd.h>             /* unlink */

#include <graphviz/gvc.h>       /* gvContext, gvLayout, gvRender */

Agraph_t *vgv_open(const char *name)
{
    Agraph_t *g = agopen((char *)name, Agdirected, NULL);
    if (g == NULL) {
        fputs("dynamo-dot: out of memory\n", stderr);
        exit(1);
    }
    vgv_set(g, "fontname", "Helvetica");
    vgv_set(g, "fontsize", "12");
    vgv_set(g, "labelloc", "t");
    vgv_set(g, "labeljust", "l");
    vgv_set(g, "nodesep", "0.3");
    vgv_set(g, "ranksep", "0.4");
    vgv_set(g, "bgcolor", "white");
    agattr(g, AGNODE, (char *)"fontname", (char *)"Helvetica");
    agattr(g, AGNODE, (char *)"fontsize", (char *)"10");
    agattr(g, AGNODE, (char *)"shape", (char *)"box");
    agattr(g, AGEDGE, (char *)"fontname", (char *)"Helvetica");
    agattr(g, AGEDGE, (char *)"fontsize", (char *)"9");
    agattr(g, AGEDGE, (char *)"color", (char *)"#555555");
    agattr(g, AGEDGE, (char *)"fontcolor", (char *)"#333333");
    agattr(g, AGEDGE, (char *)"arrowsize", (char *)"0.7");
    return g;
}

/* Everything handed to cgraph passes here: names and values may hold text
 * from the watched process, and cgraph writes them out (the dot format,
 * tooltips and titles in svg) without removing controls.  The builders
 * escape for the format (vstr.h); this is the backstop that no terminal
 * control or invalid UTF-8 reaches any output, whatever a builder forgot.
 * Idempotent on text that is already clean; newlines stay (tooltips keep
 * theirs).  A new string (free()). */
static char *clean(const char *s)
{
    StrBuf b;
    sb_init(&b);
    sb_add_escaped(&b, s, STR_TEXT, 0);
    return sb_steal(&b);
}

Agnode_t *vgv_node(Agraph_t *g, const char *name)
{
    char *c = clean(name);
    Agnode_t *v = agnode(g, c, 1);
    free(c);
    return v;
}

Agnode_t *vgv_find_node(Agraph_t *g, const char *name)
{
    char *c = clean(name);
    Agnode_t *v = agnode(g, c, 0);
    free(c);
    return v;
}

Agedge_t *vgv_edge(Agraph_t *g, Agnode_t *tail, Agnode_t *head)
{
    return agedge(g, tail, head, NULL, 1);
}

Agraph_t *vgv_subg(Agraph_t *g, const char *name)
{
    char *c = clean(name);
    Agraph_t *sub = agsubg(g, c, 1);
    free(c);
    return sub;
}

Agraph_t *vgv_find_subg(Agraph_t *g, const char *name)
{
    char *c = clean(name);
    Agraph_t *sub = agsubg(g, c, 0);
    free(c);
    return sub;
}

void vgv_set(void *obj, const char *attr, const char *value)
{
    char *c = clean(value);
    agsafeset(obj, (char *)attr, c, (char *)"");
    free(c);
}

void vgv_set_html(void *obj, const char *attr, const char *html)
{
    /* cgraph keeps the HTML flag on the interned string: intern it as HTML
     * first, then the attribute shares that string. */
    Agraph_t *root = agroot(obj);
    char *c = clean(html);
    char *s = agstrdup_html(root, c);
    agsafeset(obj, (char *)attr, s, (char *)"");
    agstrfree(root, s);
    free(c);
}

/* Formats that need no layout: the graph source as built. */
static int is_source_format(const char *format)
{
    return strcmp(format, "dot") == 0 || strcmp(format, "gv") == 0;
}

/* Devices that open a window instead of writing a file. */
static int is_interactive(const char *format)
{
    return strcmp(format, "gtk") == 0 || strcmp(format, "x11") == 0
           || strcmp(format, "xlib") == 0;
}

int vgv_format_ok(const char *format, StrBuf *valid)
{
    int ok = is_source_format(format);
    GVC_t *gvc = gvContext();
    int n = 0;
    char **names = gvPluginList(gvc, "device", &n, NULL);
    vs_init(valid);
    sb_add(valid, "dot");
    for (int i = 0; i < n; i++) {
        if (!is_interactive(names[i]) && strcmp(names[i], format) == 0)
            ok = 1;
        if (!is_interactive(names[i]) && strcmp(names[i], "dot") != 0)
            sb_addf(valid, " %s", names[i]);
        free(names[i]);
    }
    free(names);
    gvFreeContext(gvc);
    return ok;
}

int vgv_render(Agraph_t *g, const char *format, const char *path, StrBuf *err)
{
    int to_stdout = path == NULL || strcmp(path, "-") == 0;
    FILE *out = to_stdout ? stdout : fopen(path, "wb");
    GVC_t *gvc = NULL;
    int laid_out = 0;
    if (out == NULL) {
        sb_addf(err, "cannot write %s: %s", path, strerror(errno));
        return -1;
    }
    if (is_source_format(format)) {
        if (agwrite(g, out) != 0) {
            sb_addf(err, "writing the graph to %s failed", to_stdout ? "stdout" : path);
            goto error;
        }
    } else {
        gvc = gvContext();
        if (gvLayout(gvc, g, "dot") != 0) {
            sb_add(err, "Graphviz could not lay the graph out (dot engine)");
            goto error;
        }
        laid_out = 1;
        if (gvRender(gvc, g, format, out) != 0) {
            sb_addf(err, "Graphviz could not render format '%s'", format);
            goto error;
        }
        gvFreeLayout(gvc, g);
        gvFreeContext(gvc);
        gvc = NULL;
    }
    if (fflush(out) != 0 || ferror(out)) {
        sb_addf(err, "cannot write %s: %s", to_stdout ? "stdout" : path, strerror(errno));
        goto error;
    }
    if (!to_stdout && fclose(out) != 0) {
        out = NULL;             /* closed, even on failure */
        sb_addf(err, "cannot write %s: %s", path, strerror(errno));
        goto error;
    }
    return 0;

error:
    if (gvc != NULL) {
        if (laid_out)
            gvFreeLayout(gvc, g);
        gvFreeContext(gvc);
    }
    if (!to_stdout) {           /* never leave a half-written file behind */
        if (out != NULL)
            fclose(out);
        unlink(path);
    }
    return -1;
}
