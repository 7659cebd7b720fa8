/* gtree.c — the guard decision tree picture of dynamo-dot (see gtree.h).
 *
 * Owns the look of guard trees.  Reads DrCode.tree, the code's entries and
 * their records; rendering is gv.c's job.  Tree node i is the dot node
 * "t<i>"; a cache entry is "entry [F/C]"; the last-failure note is
 * "last failure".
 */
#include "gtree.h"

#include <stdint.h>     /* uint64_t */
#include <stdio.h>      /* snprintf */
#include <stdlib.h>     /* free */
#include <string.h>     /* strstr, strchr */

#include "gv.h"
#include "vstr.h"

/* Tests shown in a decision node; the tooltip lists all of them. */
#define MAX_TESTS_SHOWN 14
#define TEST_CHARS 64

#define RED "#c62828"

/* The cache entry whose guard failed last, and that guard. */
typedef struct {
    const DrEntry *entry;       /* borrowed; NULL: no failure recorded */
    const DrGuard *guard;       /* borrowed; NULL if the index is out of range */
} LastFail;

static LastFail find_last_failure(const DrCode *code)
{
    LastFail lf = {NULL, NULL};
    for (size_t i = 0; i < code->n_entries; i++) {
        const DrEntry *e = code->entries[i];
        if (e->last_fail_ns == 0 || (lf.entry && lf.entry->last_fail_ns >= e->last_fail_ns))
            continue;
        lf.entry = e;
    }
    if (lf.entry != NULL && lf.entry->last_fail_guard >= 0
        && (size_t)lf.entry->last_fail_guard < lf.entry->record->n_guards)
        lf.guard = &lf.entry->record->guards[lf.entry->last_fail_guard];
    return lf;
}

/* Does text `t` test the failing guard's (source, property)?  Tests read
 * "L['x'].size()[0] == 5", "type(L['x']) == Tensor". */
static int mentions_failure(const char *t, const LastFail *lf)
{
    if (lf->guard == NULL || *t == '\0' || *lf->guard->source == '\0')
        return 0;
    return strstr(t, lf->guard->source) != NULL
           && strstr(t, lf->entry->last_fail_property) != NULL;
}

/* "[F/C]" at the start of a leaf text "[0/1] 3 tests"; 0 if none. */
static size_t leaf_id_len(const char *leaf)
{
    const char *close = leaf[0] == '[' ? strchr(leaf, ']') : NULL;
    return close ? (size_t)(close - leaf) + 1 : 0;
}

static const DrEntry *entry_of_leaf(const DrCode *code, const char *leaf)
{
    size_t n = leaf_id_len(leaf);
    for (size_t i = 0; n && i < code->n_entries; i++)
        if (strncmp(code->entries[i]->id, leaf, n) == 0 && code->entries[i]->id[n] == '\0')
            return code->entries[i];
    return NULL;
}

static const char *test_origin(const DrCode *code, const char *test, char *buf, size_t len);

/* ---- checks every branch makes, drawn once --------------------------------- */

/* Tests (texts, borrowed from the tree) that every root-to-entry path
 * makes below the root: the tree defers them (value and key tests run after
 * the switches), so each branch repeats them.  The picture draws them once,
 * in a box hanging from the root, and leaves them out of the branches. */
typedef struct {
    const char **v;             /* owned array of borrowed texts */
    size_t n;
} Shared;

/* "[F/C] +n tests: t1; t2" -> does the leaf's own test list hold `test`? */
static int leaf_has(const char *leaf, const char *test)
{
    size_t n = strlen(test);
    for (const char *t = strstr(leaf, " tests: ") ? strstr(leaf, " tests: ") + 8 : ""; *t;) {
        const char *end = strstr(t, "; ");
        size_t len = end ? (size_t)(end - t) : strlen(t);
        if (len == n && memcmp(t, test, n) == 0)
            return 1;
        t += len + (end ? 2 : 0);
    }
    return 0;
}

/* Does the path from the root (excluded) to node i, or leaf `leaf` of it, test `test`? */
static int path_has(const DrTree *tree, size_t i, const char *leaf, const char *test)
{
    if (leaf != NULL && leaf_has(leaf, test))
        return 1;
    for (size_t depth = 0; i < tree->n_nodes && tree->nodes[i].parent >= 0
                           && depth < tree->n_nodes; depth++) {
        const DrTreeNode *t = &tree->nodes[i];
        for (size_t k = 0; k < t->n_tests; k++)
            if (strcmp(t->tests[k], test) == 0)
                return 1;
        if ((size_t)t->parent >= i)         /* depth-first: parents come first */
            break;
        i = (size_t)t->parent;
    }
    return 0;
}

static Shared find_shared(const DrTree *tree)
{
    Shared sh = {NULL, 0};
    size_t first = tree->n_nodes, paths = 0;
    for (size_t i = 0; i < tree->n_nodes; i++)
        if (tree->nodes[i].n_leaf) {
            paths += tree->nodes[i].n_leaf;
            if (first == tree->n_nodes)
                first = i;
        }
    if (paths < 2 || first == tree->n_nodes || tree->nodes[first].parent < 0)
        return sh;
    /* candidates: the tests on the first entry's path (nodes above it; its
     * own leaf tests are compared by text too) */
    size_t cap = 0;
    for (size_t i = first, d = 0; tree->nodes[i].parent >= 0 && d < tree->n_nodes; d++) {
        cap += tree->nodes[i].n_tests;
        if ((size_t)tree->nodes[i].parent >= i)
            break;
        i = (size_t)tree->nodes[i].parent;
    }
    if (!cap)
        return sh;
    sh.v = xcalloc(cap, sizeof *sh.v);
    for (size_t i = first, d = 0; tree->nodes[i].parent >= 0 && d < tree->n_nodes; d++) {
        const DrTreeNode *t = &tree->nodes[i];
        for (size_t k = 0; k < t->n_tests; k++) {
            int everywhere = 1;
            for (size_t j = 0; j < tree->n_nodes && everywhere; j++)
                for (size_t l = 0; l < tree->nodes[j].n_leaf && everywhere; l++)
                    everywhere = path_has(tree, j, tree->nodes[j].leaf[l], t->tests[k]);
            for (size_t s = 0; s < sh.n && everywhere; s++)
                everywhere = strcmp(sh.v[s], t->tests[k]) != 0;
            if (everywhere)
                sh.v[sh.n++] = t->tests[k];
        }
        if ((size_t)t->parent >= i)
            break;
        i = (size_t)t->parent;
    }
    return sh;
}

static int is_shared(const Shared *sh, const char *test)
{
    for (size_t i = 0; i < sh->n; i++)
        if (strcmp(sh->v[i], test) == 0)
            return 1;
    return 0;
}

/* What a test checks, for the summary of tests not drawn: "type", "id",
 * "len" for "type(...) == ...", else the attribute after the source
 * (".training", ".keys()", ".dtype"), else "value". */
static void test_class(const char *test, char *buf, size_t len)
{
    const char *paren = strchr(test, '(');
    const char *eq = strstr(test, " == ");
    if (paren != NULL && paren > test && (eq == NULL || paren < eq)
        && strspn(test, "abcdefghijklmnopqrstuvwxyz_") == (size_t)(paren - test)) {
        snprintf(buf, len, "%.*s", (int)(paren - test), test);
        return;
    }
    const char *end = eq ? eq : test + strlen(test);
    const char *p = end;            /* the last ".name" after the source: the property */
    if (end - test > 2 && strncmp(end - 2, "()", 2) == 0)
        p -= 2;                     /* ".keys()" */
    while (p > test && p[-1] != '.' && p[-1] != ']' && p[-1] != ')')
        p--;
    if (p > test && p[-1] == '.' && p < end)
        snprintf(buf, len, "%.*s", (int)(end - p + 1), p - 1);
    else
        snprintf(buf, len, "value");
}

/* "… 42 more tests: 30 type, 8 id, 4 .training" for tests[from..n). */
static void add_remainder(StrBuf *b, const char **tests, size_t from, size_t n)
{
    enum { KINDS = 12 };
    char kind[KINDS][32];
    size_t count[KINDS] = {0}, nk = 0, other = 0;
    for (size_t i = from; i < n; i++) {
        char c[32];
        test_class(tests[i], c, sizeof c);
        size_t k = 0;
        while (k < nk && strcmp(kind[k], c) != 0)
            k++;
        if (k == nk && nk < KINDS)
            snprintf(kind[nk++], sizeof kind[0], "%s", c);
        if (k < nk)
            count[k]++;
        else
            other++;
    }
    sb_addf(b, "… %zu more tests:", n - from);
    for (size_t k = 0; k < nk; k++) {
        sb_addf(b, "%s %zu ", k ? "," : "", count[k]);
        vs_add_html(b, kind[k], 24, 0);
    }
    if (other)
        sb_addf(b, ", %zu other", other);
    sb_add(b, " (all in the tooltip)");
}

/* The box of the shared checks, hanging from the root (dashed). */
static void draw_shared(Agraph_t *g, Agnode_t *root, const DrCode *code, const Shared *sh)
{
    StrBuf b;
    vs_init(&b);
    sb_add(&b, "<TABLE BORDER=\"0\" CELLBORDER=\"0\" CELLSPACING=\"0\" CELLPADDING=\"1\">");
    sb_addf(&b, "<TR><TD ALIGN=\"LEFT\"><B>checked on every branch</B><FONT POINT-SIZE=\"8\" "
                "COLOR=\"#555555\">  %zu test%s each entry makes below the switches "
                "(left out of the branches)</FONT></TD></TR>", sh->n, sh->n == 1 ? "" : "s");
    for (size_t i = 0; i < sh->n && i < MAX_TESTS_SHOWN; i++) {
        sb_add(&b, "<TR><TD ALIGN=\"LEFT\"><FONT FACE=\"Courier\" POINT-SIZE=\"9\">");
        vs_add_html(&b, sh->v[i], TEST_CHARS, 0);
        char where[256];
        if (test_origin(code, sh->v[i], where, sizeof where)) {
            sb_add(&b, "</FONT><FONT POINT-SIZE=\"8\" COLOR=\"#777777\">  \xe2\x86\x90 ");
            vs_add_html(&b, where, 48, 0);
        }
        sb_add(&b, "</FONT></TD></TR>");
    }
    if (sh->n > MAX_TESTS_SHOWN) {
        sb_add(&b, "<TR><TD ALIGN=\"LEFT\"><FONT POINT-SIZE=\"8\" COLOR=\"#555555\">");
        add_remainder(&b, sh->v, MAX_TESTS_SHOWN, sh->n);
        sb_add(&b, "</FONT></TD></TR>");
    }
    sb_add(&b, "</TABLE>");
    Agnode_t *v = vgv_node(g, "shared checks");
    vgv_set_html(v, "label", b.s);
    vgv_set(v, "shape", "box");
    vgv_set(v, "style", "rounded,filled");
    vgv_set(v, "fillcolor", "#fff8e1");
    vgv_set(v, "color", "#f9a825");
    sb_clear(&b);
    for (size_t i = 0; i < sh->n; i++) {
        if (i)
            sb_add(&b, "\\n");
        vs_add_cut(&b, sh->v[i], 0);
    }
    vgv_set(v, "tooltip", b.s);
    Agedge_t *e = vgv_edge(g, root, v);
    vgv_set(e, "style", "dashed");
    vgv_set(e, "color", "#f9a825");
    vgv_set(e, "arrowhead", "none");
    sb_free(&b);
}

/* Where a tree test comes from: the origin ("file.py:12", base name) of the
 * guard of `code` whose source the test reads (the longest such source, in
 * the newest record that has one), or NULL.  Tests name their source
 * ("L['x'].size()[0] == 5"), guards carry the user line that installed
 * them (issue 30). */
static const char *test_origin(const DrCode *code, const char *test, char *buf, size_t len)
{
    const DrGuard *best = NULL;
    size_t best_n = 0;
    for (size_t r = code->n_records; r-- > 0 && best == NULL;) {
        const DrRecord *rec = code->records[r];
        for (size_t i = 0; i < rec->n_guards; i++) {
            const DrGuard *gd = &rec->guards[i];
            size_t n = strlen(gd->source);
            if (!*gd->origin || n <= best_n || !strstr(test, gd->source))
                continue;
            best = gd;
            best_n = n;
        }
    }
    if (best == NULL)
        return NULL;
    const char *file = strrchr(best->origin, '/');
    snprintf(buf, len, "%s", file ? file + 1 : best->origin);
    return buf;
}

static char *decision_label(const DrCode *code, const DrTreeNode *t, size_t index,
                            const LastFail *lf, int hot, const Shared *sh)
{
    StrBuf b;
    vs_init(&b);
    sb_add(&b, "<TABLE BORDER=\"0\" CELLBORDER=\"0\" CELLSPACING=\"0\" CELLPADDING=\"1\">");
    sb_addf(&b, "<TR><TD ALIGN=\"LEFT\"><B>%s</B>", t->parent < 0 ? "root" : "node");
    sb_addf(&b, "<FONT POINT-SIZE=\"8\" COLOR=\"#555555\">  #%zu", index);
    sb_addf(&b, "  walks %llu  no match %llu", (unsigned long long)t->evaluations,
            (unsigned long long)t->failures);
    sb_add(&b, "</FONT></TD></TR>");
    size_t drawn = 0, hidden = 0;
    for (size_t i = 0; i < t->n_tests && drawn < MAX_TESTS_SHOWN; i++) {
        if (t->parent >= 0 && is_shared(sh, t->tests[i])) {
            hidden++;
            continue;
        }
        drawn++;
        int red = mentions_failure(t->tests[i], lf);
        sb_addf(&b, "<TR><TD ALIGN=\"LEFT\"><FONT FACE=\"Courier\" POINT-SIZE=\"9\"%s>",
                red ? " COLOR=\"" RED "\"" : "");
        vs_add_html(&b, t->tests[i], TEST_CHARS, 0);
        char where[256];
        if (test_origin(code, t->tests[i], where, sizeof where)) {
            sb_add(&b, "</FONT><FONT POINT-SIZE=\"8\" COLOR=\"#777777\">  \xe2\x86\x90 ");
            vs_add_html(&b, where, 48, 0);
        }
        sb_add(&b, "</FONT></TD></TR>");
    }
    size_t seen = drawn + hidden;               /* tests looked at so far */
    if (seen < t->n_tests) {
        sb_add(&b, "<TR><TD ALIGN=\"LEFT\"><FONT POINT-SIZE=\"8\" COLOR=\"#555555\">");
        add_remainder(&b, t->tests, seen, t->n_tests);
        sb_add(&b, "</FONT></TD></TR>");
    }
    for (size_t i = seen; i < t->n_tests; i++)
        hidden += t->parent >= 0 && is_shared(sh, t->tests[i]);
    if (hidden)
        sb_addf(&b, "<TR><TD ALIGN=\"LEFT\"><FONT POINT-SIZE=\"8\" COLOR=\"#f57f17\">+ %zu "
                "check%s on every branch (box at the root)</FONT></TD></TR>", hidden,
                hidden == 1 ? "" : "s");
    if (*t->switch_on) {
        sb_addf(&b, "<TR><TD ALIGN=\"LEFT\" BGCOLOR=\"%s\"><FONT%s>switch on <B>",
                hot ? "#ffcdd2" : "#bbdefb", hot ? " COLOR=\"" RED "\"" : "");
        vs_add_html(&b, t->switch_on, TEST_CHARS, 0);
        sb_add(&b, "</B></FONT></TD></TR>");
    }
    sb_add(&b, "</TABLE>");
    return sb_steal(&b);
}

static char *decision_tooltip(const DrTreeNode *t)
{
    StrBuf b;
    vs_init(&b);
    sb_addf(&b, "node %lld, depth %u: %llu walks entered, %llu found no entry below",
            (long long)t->id, t->depth, (unsigned long long)t->evaluations,
            (unsigned long long)t->failures);
    for (size_t i = 0; i < t->n_tests; i++) {
        sb_add(&b, "\\n");
        vs_add_cut(&b, t->tests[i], 0);
    }
    if (*t->switch_on) {
        sb_add(&b, "\\nswitch on ");
        vs_add_cut(&b, t->switch_on, 0);
    }
    return sb_steal(&b);
}

/* Leaf `leaf` ("[F/C] n tests") of a decision node: the entry tried
 * `rank`-th (newest first) of the node's `n_leaf`. */
/* The tests a leaf entry still runs: "[2/0] +2 tests: t1; t2" -> "t1; t2". */
static const char *leaf_tests(const char *leaf)
{
    const char *colon = strstr(leaf, " tests: ");
    return colon ? colon + 8 : "";
}

#define LEAF_TESTS_SHOWN 6

static char *entry_label(const DrEntry *e, const char *leaf, size_t idn, int failed,
                         const Shared *sh)
{
    StrBuf b;
    vs_init(&b);
    sb_add(&b, "<TABLE BORDER=\"0\" CELLBORDER=\"0\" CELLSPACING=\"0\" CELLPADDING=\"1\">"
               "<TR><TD><FONT POINT-SIZE=\"12\"><B>");
    char *id = xstrndup(leaf, idn);
    vs_add_html(&b, id, 0, 0);
    free(id);
    sb_add(&b, "</B></FONT></TD></TR><TR><TD>");
    if (e != NULL)
        sb_addf(&b, "%llu hit%s", (unsigned long long)e->hits, e->hits == 1 ? "" : "s");
    else
        sb_add(&b, "(entry not in the snapshot)");
    sb_add(&b, "</TD></TR>");
    size_t shown = 0, common = 0;
    for (const char *t = leaf_tests(leaf); *t;) {      /* "t1; t2; t3" */
        const char *end = strstr(t, "; ");
        size_t n = end ? (size_t)(end - t) : strlen(t);
        char *one = xmalloc(n + 1);
        memcpy(one, t, n);
        one[n] = '\0';
        if (is_shared(sh, one)) {
            common++;
        } else if (shown++ < LEAF_TESTS_SHOWN) {
            sb_add(&b, "<TR><TD ALIGN=\"LEFT\"><FONT FACE=\"Courier\" POINT-SIZE=\"9\">");
            vs_add_html(&b, one, TEST_CHARS, 0);
            sb_add(&b, "</FONT></TD></TR>");
        }
        free(one);
        t += n + (end ? 2 : 0);
    }
    if (common)
        sb_addf(&b, "<TR><TD><FONT POINT-SIZE=\"8\" COLOR=\"#f57f17\">+ %zu on every branch"
                "</FONT></TD></TR>", common);
    if (shown > LEAF_TESTS_SHOWN)
        sb_addf(&b, "<TR><TD><FONT POINT-SIZE=\"8\">… %zu more tests</FONT></TD></TR>",
                shown - LEAF_TESTS_SHOWN);
    if (e != NULL && (e->guard_failures || e->dead)) {
        sb_add(&b, "<TR><TD><FONT POINT-SIZE=\"8\" COLOR=\"");
        sb_add(&b, failed ? RED "\">" : "#555555\">");
        if (e->guard_failures)
            sb_addf(&b, "closest entry of %llu miss%s", (unsigned long long)e->guard_failures,
                    e->guard_failures == 1 ? "" : "es");
        sb_add(&b, e->dead ? (e->guard_failures ? " · dropped" : "dropped") : "");
        sb_add(&b, "</FONT></TD></TR>");
    }
    sb_add(&b, "</TABLE>");
    return sb_steal(&b);
}

/* Leaf `leaf` ("[F/C] +n tests: ...") hanging from dot node `parent` with
 * edge label `via` (may be ""): the entry tried `rank`-th (newest first) of
 * `n_leaf`. */
static void draw_entry(Agraph_t *g, Agnode_t *parent, const char *via, const DrCode *code,
                       const char *leaf, size_t rank, size_t n_leaf, const LastFail *lf,
                       const Shared *sh)
{
    const DrEntry *e = entry_of_leaf(code, leaf);
    size_t idn = leaf_id_len(leaf);
    int failed = e != NULL && e == lf->entry;
    StrBuf b;
    vs_init(&b);
    sb_add(&b, "entry ");
    sb_addn(&b, leaf, idn ? idn : strlen(leaf));
    Agnode_t *v = vgv_node(g, b.s);
    char *label = entry_label(e, leaf, idn, failed, sh);
    vgv_set_html(v, "label", label);
    free(label);
    vgv_set(v, "shape", "box");
    vgv_set(v, "style", e != NULL && e->dead ? "rounded,filled,dashed" : "rounded,filled");
    vgv_set(v, "fillcolor", e != NULL && e->dead ? "#eeeeee" : "#c8e6c9");
    vgv_set(v, "color", failed ? RED : "#2e7d32");
    vgv_set(v, "penwidth", failed ? "2.5" : "1.2");
    sb_clear(&b);
    vs_add_cut(&b, leaf, 0);
    if (e != NULL) {
        sb_addf(&b, "\\nhits %llu, closest entry on %llu misses, %zu guards",
                (unsigned long long)e->hits, (unsigned long long)e->guard_failures,
                e->record->n_guards);
        for (size_t i = 0; i < e->record->n_guards; i++) {
            const DrGuard *gd = &e->record->guards[i];
            sb_add(&b, "\\n");
            vs_add_cut(&b, gd->text, 0);
            if (*gd->origin) {
                sb_add(&b, "  <- ");
                vs_add_cut(&b, gd->origin, 0);
            }
        }
    }
    vgv_set(v, "tooltip", b.s);
    Agedge_t *edge = vgv_edge(g, parent, v);
    sb_clear(&b);
    vs_add_cut(&b, via, 0);
    if (n_leaf > 1)                             /* several entries: say the order */
        sb_addf(&b, "%stry %zu", *via ? "\\n" : "", rank);
    vgv_set(edge, "label", b.s);
    vgv_set(edge, "color", "#2e7d32");
    sb_free(&b);
}

static void draw_last_failure(Agraph_t *g, const LastFail *lf,
                              Agnode_t *anchor, uint64_t start_ns)
{
    const DrEntry *e = lf->entry;
    StrBuf b;
    vs_init(&b);
    sb_add(&b, "<TABLE BORDER=\"0\" CELLBORDER=\"0\" CELLSPACING=\"0\" CELLPADDING=\"1\">"
               "<TR><TD ALIGN=\"LEFT\"><FONT COLOR=\"" RED "\"><B>last guard failure</B></FONT>");
    sb_addf(&b, "  <FONT POINT-SIZE=\"8\">closest entry %s", e->id);
    if (start_ns && e->last_fail_ns > start_ns)
        sb_addf(&b, ", %.1f s after start", (double)(e->last_fail_ns - start_ns) / 1e9);
    sb_add(&b, "</FONT></TD></TR><TR><TD ALIGN=\"LEFT\"><FONT FACE=\"Courier\" POINT-SIZE=\"9\">");
    vs_add_html(&b, lf->guard ? lf->guard->text : "(guard not in the record)", 70, 0);
    sb_add(&b, "</FONT></TD></TR><TR><TD ALIGN=\"LEFT\">");
    vs_add_html(&b, lf->guard ? lf->guard->source : "", 40, 0);
    sb_add(&b, *e->last_fail_property ? " <B>" : "");
    vs_add_html(&b, e->last_fail_property, 30, 0);
    sb_add(&b, *e->last_fail_property ? "</B>: " : ": ");
    sb_add(&b, "expected <B>");
    vs_add_html(&b, e->last_fail_expected, 40, 0);
    sb_add(&b, "</B>, actual <FONT COLOR=\"" RED "\"><B>");
    vs_add_html(&b, e->last_fail_actual, 40, 0);
    sb_add(&b, "</B></FONT></TD></TR>");
    if (lf->guard != NULL && (*lf->guard->origin || *lf->guard->origin_text)) {
        const char *file = strrchr(lf->guard->origin, '/');
        sb_add(&b, "<TR><TD ALIGN=\"LEFT\"><FONT POINT-SIZE=\"9\">guarded at <B>");
        vs_add_html(&b, file ? file + 1 : lf->guard->origin, 60, 0);
        sb_add(&b, "</B>  <FONT FACE=\"Courier\">");
        vs_add_html(&b, lf->guard->origin_text, 70, 0);
        sb_add(&b, "</FONT></FONT></TD></TR>");
    }
    sb_add(&b, "</TABLE>");
    Agnode_t *v = vgv_node(g, "last failure");
    vgv_set_html(v, "label", b.s);
    vgv_set(v, "shape", "note");
    vgv_set(v, "style", "filled");
    vgv_set(v, "fillcolor", "#ffebee");
    vgv_set(v, "color", RED);
    sb_clear(&b);
    vs_add_cut(&b, lf->guard ? lf->guard->text : "", 0);
    sb_add(&b, "\\nexpected: ");
    vs_add_cut(&b, e->last_fail_expected, 0);
    sb_add(&b, "\\nactual: ");
    vs_add_cut(&b, e->last_fail_actual, 0);
    vgv_set(v, "tooltip", b.s);
    Agedge_t *edge = vgv_edge(g, anchor, v);
    vgv_set(edge, "color", RED);
    vgv_set(edge, "style", "dashed");
    vgv_set(edge, "arrowhead", "none");
    sb_free(&b);
}

/* The costliest guards (tests the timed walks spent most time in: the test
 * and its source's first fetch) in a note tied to the node that runs the
 * costliest: ns per lookup, share, the test and the line behind its guard.
 * Nothing when no lookup of the code was timed. */
#define COST_TESTS_SHOWN 6
#define ORANGE "#e65100"
static void draw_guard_cost(Agraph_t *g, const DrCode *code, Agnode_t *const *nodes)
{
    const DrTreeTest *top[COST_TESTS_SHOWN];
    size_t n = code->lookup_timed ? dr_tree_costliest(&code->tree, top, COST_TESTS_SHOWN) : 0;
    if (n == 0)
        return;
    char ns[32];
    StrBuf b;
    vs_init(&b);
    sb_add(&b, "<TABLE BORDER=\"0\" CELLBORDER=\"0\" CELLSPACING=\"0\" CELLPADDING=\"1\">"
               "<TR><TD ALIGN=\"LEFT\" COLSPAN=\"3\"><FONT COLOR=\"" ORANGE "\"><B>costliest guards</B></FONT>");
    sb_addf(&b, "  <FONT POINT-SIZE=\"8\">lookup %s (%llu timed); per lookup, share, test "
            "(with its source's fetch)</FONT></TD></TR>",
            vs_fmt_ns(ns, sizeof ns, code->lookup_ns / code->lookup_timed),
            (unsigned long long)code->lookup_timed);
    for (size_t k = 0; k < n; k++) {
        const DrTreeTest *t = top[k];
        sb_addf(&b, "<TR><TD ALIGN=\"RIGHT\">%s%s%s</TD>", k ? "" : "<B>",
                vs_fmt_ns(ns, sizeof ns, dr_tree_test_est_ns(t) / code->lookup_timed), k ? "" : "</B>");
        sb_addf(&b, "<TD ALIGN=\"RIGHT\">%.0f%%</TD><TD ALIGN=\"LEFT\"><FONT FACE=\"Courier\" "
                "POINT-SIZE=\"9\">", code->lookup_ns ? 100.0 * (double)dr_tree_test_est_ns(t)
                                                          / (double)code->lookup_ns : 0.0);
        vs_add_html(&b, t->text, TEST_CHARS, 0);
        sb_add(&b, "</FONT>");
        if (t->guard != NULL && *t->guard->origin) {
            sb_add(&b, "  <FONT POINT-SIZE=\"9\" COLOR=\"#555555\">\xe2\x86\x90 ");
            vs_add_html(&b, vs_basename(t->guard->origin), 40, 0);
            sb_add(&b, "</FONT>");
        }
        sb_add(&b, "</TD></TR>");
    }
    sb_add(&b, "</TABLE>");
    Agnode_t *v = vgv_node(g, "guard cost");
    vgv_set_html(v, "label", b.s);
    vgv_set(v, "shape", "note");
    vgv_set(v, "style", "filled");
    vgv_set(v, "fillcolor", "#fff3e0");
    vgv_set(v, "color", ORANGE);
    sb_clear(&b);
    for (size_t k = 0; k < n; k++) {
        sb_addf(&b, "%s%s: ", k ? "\n" : "", vs_fmt_ns(ns, sizeof ns, dr_tree_test_est_ns(top[k]) / top[k]->timed));
        sb_add(&b, "per run; ");
        vs_add_cut(&b, top[k]->text, 0);
        if (top[k]->guard != NULL) {
            sb_add(&b, " <- ");
            vs_add_cut(&b, top[k]->guard->origin, 0);
            sb_add(&b, " ");
            vs_add_cut(&b, top[k]->guard->origin_text, 0);
        }
    }
    vgv_set(v, "tooltip", b.s);
    Agnode_t *anchor = top[0]->node >= 0 ? nodes[top[0]->node] : NULL;
    if (anchor == NULL)
        anchor = nodes[0];
    if (anchor != NULL) {
        Agedge_t *edge = vgv_edge(g, anchor, v);
        vgv_set(edge, "color", ORANGE);
        vgv_set(edge, "style", "dashed");
        vgv_set(edge, "arrowhead", "none");
    }
    sb_free(&b);
}

/* Node counters are live (bumped in the region by every walk) from the
 * tree's publish on; a tree rebuilt since (entries pruned) has copies, taken
 * at refreshes (each compile, save_snapshot, dynamo.telemetry.refresh()):
 * say which. */
static void add_counters_age(StrBuf *b, const DrCode *code, uint64_t snapshot_ns)
{
    char t[32];
    if (code->tree.live)
        sb_add(b, "node counters live");
    else if (code->tree.counters_ns == 0)
        sb_add(b, "node counters as of the tree's publish");
    else if (snapshot_ns > code->tree.counters_ns)
        sb_addf(b, "node counters as of %s before this picture",
                vs_fmt_ns(t, sizeof t, snapshot_ns - code->tree.counters_ns));
    else
        sb_add(b, "node counters current");
}

static void set_tree_label(Agraph_t *g, const DrCode *code, uint64_t snapshot_ns)
{
    size_t live = 0;
    for (size_t i = 0; i < code->n_entries; i++)
        live += !code->entries[i]->dead;
    StrBuf b;
    vs_init(&b);
    sb_add(&b, "<FONT POINT-SIZE=\"14\"><B>guard tree</B>  ");
    sb_addf(&b, "frame %u ", code->frame_id);
    vs_add_html(&b, code->name, 60, 0);
    sb_add(&b, "</FONT>  <FONT COLOR=\"#555555\">");
    vs_add_html(&b, vs_basename(code->filename), 60, 0);
    sb_addf(&b, ":%u</FONT><BR ALIGN=\"LEFT\"/>%zu nodes · %zu live entries · calls %llu · "
            "hits %llu · misses %llu · guard failures %llu%s<BR ALIGN=\"LEFT\"/>",
            code->firstlineno, code->tree.n_nodes, live, (unsigned long long)code->calls,
            (unsigned long long)code->hits, (unsigned long long)code->misses,
            (unsigned long long)code->guard_failures,
            code->limit_hit ? " · cache limit hit (misses run eagerly)" : "");
    sb_add(&b, "<FONT POINT-SIZE=\"9\" COLOR=\"#555555\">");
    add_counters_age(&b, code, snapshot_ns);
    sb_add(&b, "</FONT><BR ALIGN=\"LEFT\"/>");
    vgv_set_html(g, "label", b.s);
    sb_free(&b);
}

/* A node with no tests (but those of the root box of shared checks) and no
 * switch that only holds entries adds nothing
 * to the picture: its entries hang directly from its parent.  has_child[i]:
 * some later node names i as its parent (computed once: linear). */
static int is_pass_through(const DrTree *tree, size_t i, const char *has_child, const Shared *sh)
{
    const DrTreeNode *t = &tree->nodes[i];
    for (size_t k = 0; k < t->n_tests; k++)     /* tests drawn at the root box don't count */
        if (!is_shared(sh, t->tests[k]))
            return 0;
    return t->parent >= 0 && !*t->switch_on && t->n_leaf != 0 && !has_child[i];
}

static Agnode_t *draw_decision(Agraph_t *g, const DrCode *code, size_t i, const LastFail *lf,
                               int *hot, const Shared *sh)
{
    const DrTreeNode *t = &code->tree.nodes[i];
    char name[32];
    *hot = *t->switch_on && mentions_failure(t->switch_on, lf);
    snprintf(name, sizeof name, "t%zu", i);
    Agnode_t *v = vgv_node(g, name);
    char *label = decision_label(code, t, i, lf, *hot, sh);
    char *tip = decision_tooltip(t);
    vgv_set_html(v, "label", label);
    vgv_set(v, "tooltip", tip);
    vgv_set(v, "style", "rounded,filled");
    vgv_set(v, "fillcolor", t->parent < 0 ? "#e3f2fd" : "#f5f9ff");
    vgv_set(v, "color", *hot ? RED : "#1565c0");
    vgv_set(v, "penwidth", *hot ? "2.5" : "1");
    free(label);
    free(tip);
    return v;
}

Agraph_t *vtree_draw(DrSnapshot *s, const DrCode *code)
{
    const DrTree *tree = &code->tree;
    LastFail lf = find_last_failure(code);
    Agnode_t **nodes = xcalloc(tree->n_nodes, sizeof *nodes);
    char *has_child = xcalloc(tree->n_nodes ? tree->n_nodes : 1, 1);
    for (size_t i = 0; i < tree->n_nodes; i++)
        if (tree->nodes[i].parent >= 0 && (size_t)tree->nodes[i].parent < i)
            has_child[tree->nodes[i].parent] = 1;
    Agnode_t *anchor = NULL;
    Agraph_t *g = vgv_open("guard_tree");
    vgv_set(g, "nodesep", "0.25");
    Shared shared = find_shared(tree);
    for (size_t i = 0; i < tree->n_nodes; i++) {
        const DrTreeNode *t = &tree->nodes[i];
        /* depth-first order: a parent comes before its children */
        int has_parent = t->parent >= 0 && (size_t)t->parent < i && nodes[t->parent] != NULL;
        if (has_parent && is_pass_through(tree, i, has_child, &shared)) {
            for (size_t k = 0; k < t->n_leaf; k++)
                draw_entry(g, nodes[t->parent], t->via, code, t->leaf[k], k + 1, t->n_leaf, &lf,
                           &shared);
            continue;
        }
        int hot;
        nodes[i] = draw_decision(g, code, i, &lf, &hot, &shared);
        if (hot && anchor == NULL)
            anchor = nodes[i];
        if (has_parent) {
            Agedge_t *e = vgv_edge(g, nodes[t->parent], nodes[i]);
            StrBuf via;
            vs_init(&via);
            vs_add_cut(&via, *t->via ? t->via : " ", 0);
            vgv_set(e, "label", via.s);
            sb_free(&via);
            vgv_set(e, "color", "#1565c0");
        }
        for (size_t k = 0; k < t->n_leaf; k++)
            draw_entry(g, nodes[i], "", code, t->leaf[k], k + 1, t->n_leaf, &lf, &shared);
    }
    if (lf.entry != NULL) {
        char name[48];
        snprintf(name, sizeof name, "entry %s", lf.entry->id);
        if (anchor == NULL)
            anchor = vgv_find_node(g, name);
        if (anchor == NULL)
            anchor = nodes[0] ? nodes[0] : agfstnode(g);
        if (anchor != NULL)
            draw_last_failure(g, &lf, anchor, s->process.start_ns);
    }
    if (shared.n && nodes[0] != NULL)
        draw_shared(g, nodes[0], code, &shared);
    draw_guard_cost(g, code, nodes);
    set_tree_label(g, code, s->process.snapshot_ns);
    free(shared.v);
    free(nodes);
    free(has_child);
    return g;
}
