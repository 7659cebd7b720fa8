/* model.c — construction, destruction and the reset baseline of Models.
 * Pure data: no curses, no reader.  Arrays grow by doubling; a Model owns
 * everything reachable from it. */
#include "model.h"

#include <stdlib.h>
#include <string.h>

#include "util.h"

Model *model_new(void)
{
    return xcalloc(1, sizeof(Model));
}

/* Grows the array `*vp` of `*n` elements of `size` bytes by one zeroed
 * element.  The capacity is implied by n (8, then powers of two), so the
 * array reallocates exactly when n is 0 or a power of two >= 8. */
static void *grow(void *vp, size_t *n, size_t size)
{
    void **v = vp;
    if (*n == 0 || (*n >= 8 && (*n & (*n - 1)) == 0))
        *v = xrealloc(*v, (*n ? *n * 2 : 8) * size);
    char *elem = (char *)*v + *n * size;
    memset(elem, 0, size);
    (*n)++;
    return elem;
}

MFrame *model_add_frame(Model *m)
{
    MFrame *f = grow(&m->frames, &m->n_frames, sizeof *f);
    f->id = -1;
    return f;
}

MEntry *mframe_add_entry(MFrame *f)
{
    MEntry *e = grow(&f->entries, &f->n_entries, sizeof *e);
    e->frame_id = f->id;
    e->compile_id = -1;
    return e;
}

MGraph *mentry_add_graph(MEntry *e) { return grow(&e->graphs, &e->n_graphs, sizeof(MGraph)); }
MNode *mgraph_add_node(MGraph *g) { return grow(&g->nodes, &g->n_nodes, sizeof(MNode)); }
MGuard *mentry_add_guard(MEntry *e) { return grow(&e->guards, &e->n_guards, sizeof(MGuard)); }

MResume *mentry_add_resume(MEntry *e)
{
    MResume *r = grow(&e->resumes, &e->n_resumes, sizeof(MResume));
    r->frame_id = -1;
    return r;
}

static int same(const char *a, const char *b)
{
    return strcmp(a ? a : "", b ? b : "") == 0;
}

static size_t break_hash(const char *reason, const char *file, int line)
{
    uint64_t h = 14695981039346656037u ^ (uint32_t)line;
    for (const char *p = reason ? reason : ""; *p; p++)
        h = (h ^ (unsigned char)*p) * 1099511628211u;
    for (const char *p = file ? file : ""; *p; p++)
        h = (h ^ (unsigned char)*p) * 1099511628211u;
    return (size_t)h;
}

/* The slot of brk_index for (reason, file, line): its break or an empty one. */
static size_t *break_slot(MFrame *f, const char *reason, const char *file, int line)
{
    size_t k = break_hash(reason, file, line) & (f->brk_cap - 1);
    while (f->brk_index[k]) {
        MBreak *b = &f->brks[f->brk_index[k] - 1];
        if (b->line == line && same(b->reason, reason) && same(b->file, file))
            break;
        k = (k + 1) & (f->brk_cap - 1);
    }
    return &f->brk_index[k];
}

/* Deduplication through a hash index: linear in the breaks of the frame
 * (a scan per break made a frame with many breaks quadratic). */
MBreak *mframe_add_break(MFrame *f, const char *reason, const char *file, int line,
                         const char *user_stack, const char *meaning, const char *hint)
{
    if (2 * (f->n_brks + 1) > f->brk_cap) {
        f->brk_cap = f->brk_cap ? 2 * f->brk_cap : 16;
        free(f->brk_index);
        f->brk_index = xcalloc(f->brk_cap, sizeof *f->brk_index);
        for (size_t i = 0; i < f->n_brks; i++)
            *break_slot(f, f->brks[i].reason, f->brks[i].file, f->brks[i].line) = i + 1;
    }
    size_t *slot = break_slot(f, reason, file, line);
    if (*slot) {
        MBreak *b = &f->brks[*slot - 1];
        b->count++;     /* seen before: deduplicate */
        return b;
    }
    MBreak *b = grow(&f->brks, &f->n_brks, sizeof *b);
    *slot = f->n_brks;
    b->reason = xstrdup(reason);
    b->file = xstrdup(file);
    b->line = line;
    b->count = 1;
    b->user_stack = xstrdup(user_stack);
    b->meaning = xstrdup(meaning);
    b->hint = xstrdup(hint);
    return b;
}

MEvent *model_add_event(Model *m)
{
    MEvent *ev = grow(&m->events, &m->n_events, sizeof *ev);
    ev->frame_id = ev->compile_id = -1;
    return ev;
}

const MFrame *model_find_frame(const Model *m, int64_t id)
{
    for (size_t i = 0; m && i < m->n_frames; i++)
        if (m->frames[i].id == id)
            return &m->frames[i];
    return NULL;
}

/* ---- finishing: no NULL strings, derived fields ---- */

static void fix(char **s)
{
    if (!*s)
        *s = xstrdup("");
}

static void finish_entry(MEntry *e)
{
    fix(&e->status); fix(&e->backend); fix(&e->recompile_reason); fix(&e->error);
    fix(&e->orig_bytecode); fix(&e->mod_bytecode);
    for (size_t g = 0; g < e->n_graphs; g++) {
        MGraph *gr = &e->graphs[g];
        fix(&gr->name); fix(&gr->backend_note);
        uint64_t ops = 0;
        for (size_t k = 0; k < gr->n_nodes; k++) {
            MNode *n = &gr->nodes[k];
            fix(&n->op); fix(&n->name); fix(&n->target); fix(&n->args); fix(&n->meta);
            fix(&n->module);
            if (strncmp(n->op, "call_", 5) == 0)
                ops++;
        }
        if (!gr->n_ops)
            gr->n_ops = ops;
        for (size_t b = 0; b < gr->n_buckets; b++)
            fix(&gr->buckets[b]);
    }
    for (size_t g = 0; g < e->n_guards; g++) {
        MGuard *gd = &e->guards[g];
        fix(&gd->kind); fix(&gd->source); fix(&gd->text);
        fix(&gd->last_property); fix(&gd->last_expected); fix(&gd->last_actual); fix(&gd->origin);
    }
    for (size_t r = 0; r < e->n_resumes; r++) {
        fix(&e->resumes[r].name); fix(&e->resumes[r].kind);
    }
}

/* Status from the newest compile: a limit or an error wins over breaks. */
static FrameStatus derive_status(const MFrame *f)
{
    for (size_t i = f->n_entries; i-- > 0;) {
        switch (f->entries[i].status_id) {
        case DT_RS_LIMIT:
            return FS_LIMIT;
        case DT_RS_ERROR:
        case DT_RS_UNSUPPORTED:
            return FS_ERROR;
        case DT_RS_OK:
            return f->breaks || f->n_brks ? FS_BREAK : FS_OK;
        default:            /* skipped or unknown: an older compile decides */
            break;
        }
    }
    return f->breaks || f->n_brks ? FS_BREAK : FS_OK;
}

void model_finish(Model *m)
{
    fix(&m->python); fix(&m->torch); fix(&m->origin);
    uint64_t calls = 0, hits = 0, compiles = 0, recompiles = 0, breaks = 0, cns = 0;
    for (size_t i = 0; i < m->n_frames; i++) {
        MFrame *f = &m->frames[i];
        fix(&f->name); fix(&f->file); fix(&f->context);
        for (size_t k = 0; k < f->n_costly; k++) {
            fix(&f->costly[k].via); fix(&f->costly[k].tests);
        }
        for (size_t k = 0; k < f->n_costly_tests; k++) {
            MCostTest *ct = &f->costly_tests[k];
            fix(&ct->test); fix(&ct->source); fix(&ct->entry); fix(&ct->kind); fix(&ct->origin);
        }
        for (size_t k = 0; k < f->n_entries; k++)
            finish_entry(&f->entries[k]);
        for (size_t k = 0; k < f->n_brks; k++) {
            f->brks[k].frame = f;
            fix(&f->brks[k].reason); fix(&f->brks[k].file); fix(&f->brks[k].user_stack);
            fix(&f->brks[k].meaning); fix(&f->brks[k].hint);
        }
        if (f->status == FS_OK)
            f->status = derive_status(f);
        calls += f->calls; hits += f->hits; compiles += f->n_entries;
        recompiles += f->recompiles; breaks += f->breaks; cns += f->compile_ns;
    }
    for (size_t i = 0; i < m->n_events; i++) {
        fix(&m->events[i].kind); fix(&m->events[i].text);
    }
    /* totals the source did not provide come from the frames */
    if (!m->calls) m->calls = calls;
    if (!m->hits) m->hits = hits;
    if (!m->compiles) m->compiles = compiles;
    if (!m->recompiles) m->recompiles = recompiles;
    if (!m->breaks) m->breaks = breaks;
    if (!m->compile_ns) m->compile_ns = cns;
}

const char *frame_status_label(FrameStatus s, int utf8)
{
    switch (s) {
    case FS_OK: return "ok";
    case FS_BREAK: return "break";
    case FS_LIMIT: return utf8 ? "LIMIT \xe2\x86\x92 eager" : "LIMIT -> eager";
    case FS_ERROR: return "error";
    default: return "?";
    }
}

/* ---- deletion ---- */

static void entry_free(MEntry *e)
{
    free(e->status); free(e->backend); free(e->recompile_reason); free(e->error);
    free(e->orig_bytecode); free(e->mod_bytecode);
    for (size_t g = 0; g < e->n_graphs; g++) {
        MGraph *gr = &e->graphs[g];
        for (size_t k = 0; k < gr->n_nodes; k++) {
            MNode *n = &gr->nodes[k];
            free(n->op); free(n->name); free(n->target); free(n->args); free(n->meta);
            free(n->module);
        }
        free(gr->nodes);
        for (size_t b = 0; b < gr->n_buckets; b++)
            free(gr->buckets[b]);
        free(gr->buckets);
        free(gr->name);
        free(gr->backend_note);
    }
    free(e->graphs);
    for (size_t g = 0; g < e->n_guards; g++) {
        MGuard *gd = &e->guards[g];
        free(gd->kind); free(gd->source); free(gd->text);
        free(gd->last_property); free(gd->last_expected); free(gd->last_actual); free(gd->origin);
    }
    free(e->guards);
    for (size_t r = 0; r < e->n_resumes; r++) {
        free(e->resumes[r].name);
        free(e->resumes[r].kind);
    }
    free(e->resumes);
}

void model_delete(Model *m)
{
    if (!m)
        return;
    for (size_t i = 0; i < m->n_frames; i++) {
        MFrame *f = &m->frames[i];
        free(f->name); free(f->file); free(f->context);
        for (size_t k = 0; k < f->n_costly; k++) {
            free(f->costly[k].via); free(f->costly[k].tests);
        }
        free(f->costly);
        for (size_t k = 0; k < f->n_costly_tests; k++) {
            MCostTest *ct = &f->costly_tests[k];
            free(ct->test); free(ct->source); free(ct->entry); free(ct->kind); free(ct->origin);
        }
        free(f->costly_tests);
        for (size_t k = 0; k < f->n_entries; k++)
            entry_free(&f->entries[k]);
        free(f->entries);
        for (size_t k = 0; k < f->n_brks; k++) {
            free(f->brks[k].reason); free(f->brks[k].file); free(f->brks[k].user_stack);
            free(f->brks[k].meaning); free(f->brks[k].hint);
        }
        free(f->brks);
        free(f->brk_index);
    }
    free(m->frames);
    for (size_t i = 0; i < m->n_events; i++) {
        free(m->events[i].kind); free(m->events[i].text);
    }
    free(m->events);
    free(m->python); free(m->torch); free(m->origin);
    free(m);
}

/* ---- baseline ---- */

static uint64_t sub(uint64_t a, uint64_t b) { return a > b ? a - b : 0; }

static BaselineFrame *base_frame(Baseline *b, int64_t id, int create)
{
    for (size_t i = 0; i < b->n_frames; i++)
        if (b->frames[i].id == id)
            return &b->frames[i];
    if (!create)
        return NULL;
    BaselineFrame *bf = grow(&b->frames, &b->n_frames, sizeof *bf);
    bf->id = id;
    return bf;
}

static uint64_t *base_ctr(Baseline *b, int64_t f, int64_t c, int64_t g, int create)
{
    for (size_t i = 0; i < b->n_ctr; i++)
        if (b->ctr[i].f == f && b->ctr[i].c == c && b->ctr[i].g == g)
            return &b->ctr[i].v;
    if (!create)
        return NULL;
    struct BaselineCounter *bc = grow(&b->ctr, &b->n_ctr, sizeof *bc);
    bc->f = f; bc->c = c; bc->g = g;
    return &bc->v;
}

void baseline_take(Baseline *b, const Model *m)
{
    b->active = 1;
    b->calls += m->calls; b->hits += m->hits; b->compiles += m->compiles;
    b->recompiles += m->recompiles; b->breaks += m->breaks; b->compile_ns += m->compile_ns;
    for (size_t i = 0; i < m->n_events; i++)
        if (m->events[i].seq > b->last_seq)
            b->last_seq = m->events[i].seq;
    for (size_t i = 0; i < m->n_frames; i++) {
        const MFrame *f = &m->frames[i];
        BaselineFrame *bf = base_frame(b, f->id, 1);
        bf->calls += f->calls; bf->hits += f->hits; bf->misses += f->misses;
        bf->recompiles += f->recompiles; bf->breaks += f->breaks; bf->compile_ns += f->compile_ns;
        for (size_t k = 0; k < f->n_entries; k++) {
            const MEntry *e = &f->entries[k];
            *base_ctr(b, f->id, e->compile_id, -1, 1) += e->hits;
            for (size_t g = 0; g < e->n_guards; g++)
                *base_ctr(b, f->id, e->compile_id, (int64_t)g, 1) += e->guards[g].fails;
        }
    }
}

void baseline_apply(const Baseline *b, Model *m)
{
    if (!b->active)
        return;
    Baseline *mb = (Baseline *)b;   /* lookups only: never create */
    m->calls = sub(m->calls, b->calls); m->hits = sub(m->hits, b->hits);
    m->compiles = sub(m->compiles, b->compiles); m->recompiles = sub(m->recompiles, b->recompiles);
    m->breaks = sub(m->breaks, b->breaks); m->compile_ns = sub(m->compile_ns, b->compile_ns);
    for (size_t i = 0; i < m->n_frames; i++) {
        MFrame *f = &m->frames[i];
        BaselineFrame *bf = base_frame(mb, f->id, 0);
        if (bf) {
            f->calls = sub(f->calls, bf->calls); f->hits = sub(f->hits, bf->hits);
            f->misses = sub(f->misses, bf->misses); f->recompiles = sub(f->recompiles, bf->recompiles);
            f->breaks = sub(f->breaks, bf->breaks); f->compile_ns = sub(f->compile_ns, bf->compile_ns);
        }
        for (size_t k = 0; k < f->n_entries; k++) {
            MEntry *e = &f->entries[k];
            uint64_t *v = base_ctr(mb, f->id, e->compile_id, -1, 0);
            if (v)
                e->hits = sub(e->hits, *v);
            for (size_t g = 0; g < e->n_guards; g++) {
                v = base_ctr(mb, f->id, e->compile_id, (int64_t)g, 0);
                if (v)
                    e->guards[g].fails = sub(e->guards[g].fails, *v);
            }
        }
    }
    /* hide the events from before the reset */
    size_t keep = 0;
    for (size_t i = 0; i < m->n_events; i++) {
        if (m->events[i].seq <= b->last_seq) {
            free(m->events[i].kind); free(m->events[i].text);
            continue;
        }
        m->events[keep++] = m->events[i];
    }
    m->n_events = keep;
}

void baseline_free(Baseline *b)
{
    free(b->frames);
    free(b->ctr);
    memset(b, 0, sizeof *b);
}

/* Costliest first (estimated eager time), then the most compiles, then model order. */
static int break_cost_cmp(const void *a, const void *b)
{
    const MBreak *x = *(const MBreak *const *)a, *y = *(const MBreak *const *)b;
    if (x->est_ns != y->est_ns)
        return x->est_ns < y->est_ns ? 1 : -1;
    if (x->count != y->count)
        return x->count < y->count ? 1 : -1;
    return (x > y) - (x < y);   /* frames and their breaks are laid out in model order */
}

size_t model_breaks_by_cost(const Model *m, const MFrame *only, const MBreak ***out)
{
    size_t n = 0;
    for (size_t i = 0; i < m->n_frames; i++)
        if (only == NULL || &m->frames[i] == only)
            n += m->frames[i].n_brks;
    const MBreak **v = xcalloc(n + 1, sizeof *v);
    size_t k = 0;
    for (size_t i = 0; i < m->n_frames; i++)
        if (only == NULL || &m->frames[i] == only)
            for (size_t j = 0; j < m->frames[i].n_brks; j++)
                v[k++] = &m->frames[i].brks[j];
    qsort(v, n, sizeof *v, break_cost_cmp);
    *out = v;
    return n;
}
