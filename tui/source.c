/* source.c — DrSnapshot (inspect/reader.h) to Model (model.h).
 *
 * Owns the DrReader of the session.  Copies every string it keeps and frees
 * each DrSnapshot before returning.
 */
#include "source.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "util.h"

struct Source {
    DrReader *reader;   /* owned */
    int is_file;
};

static Source *wrap(DrReader *r, int is_file)
{
    if (!r)
        return NULL;
    Source *src = xcalloc(1, sizeof *src);
    src->reader = r;
    src->is_file = is_file;
    return src;
}

Source *source_from_reader(DrReader *r, int is_file)
{
    return wrap(r, is_file);
}

Source *source_open_pid(pid_t pid, DrStatus *st)
{
    return wrap(dr_open_pid(pid, 0, st), 0);
}

Source *source_open_file(const char *path, DrStatus *st)
{
    return wrap(dr_open_file(path, st), 1);
}

void source_delete(Source *src)
{
    if (!src)
        return;
    dr_close(src->reader);
    free(src);
}

int source_save(Source *src, const char *path, DrStatus *st)
{
    return dr_save(src->reader, path, st);
}

int source_is_file(const Source *src) { return src->is_file; }

int source_set_guard_timing(Source *src, uint32_t period, DrStatus *st)
{
    return dr_set_guard_timing(src->reader, period, st);
}
const char *source_describe(const Source *src) { return dr_source(src->reader); }

static uint64_t since(uint64_t t, uint64_t origin)
{
    return t > origin ? t - origin : 0;
}

/* "float32[10, 4]" from the node's tensor meta; "" when it has none. */
static char *node_meta(const DrNode *n)
{
    if (!*n->dtype && !*n->shape)
        return xstrdup_clean("");
    const char *dt = n->dtype;
    if (strncmp(dt, "torch.", 6) == 0)
        dt += 6;
    char *raw = xasprintf("%s%s%s%s", dt, n->shape, *n->device && strcmp(n->device, "cpu") ? " " : "",
                     strcmp(n->device, "cpu") ? n->device : "");
    char *clean = xstrdup_clean(raw);
    free(raw);
    return clean;
}

/* "layer1.0.conv1 (Linear)", "layer1.0" without a class, "" at the top level. */
static char *node_module(const DrNode *n)
{
    if (!*n->module_path)
        return xstrdup_clean("");
    char *raw = *n->module_class ? xasprintf("%s (%s)", n->module_path, n->module_class)
                                 : xstrdup(n->module_path);
    char *clean = xstrdup_clean(raw);
    free(raw);
    return clean;
}

/* The DDP bucket pieces of a cut graph, one text each: "4 params: a, b, ...". */
static void add_buckets(MGraph *mg, const DrGraph *dg)
{
    if (!dg->n_buckets)
        return;
    mg->buckets = xcalloc(dg->n_buckets, sizeof *mg->buckets);
    mg->n_buckets = dg->n_buckets;
    for (size_t i = 0; i < dg->n_buckets; i++) {
        const DrBucket *b = &dg->buckets[i];
        StrBuf sb;
        sb_init(&sb);
        sb_addf(&sb, "%zu param%s:", b->n_params, b->n_params == 1 ? "" : "s");
        for (size_t p = 0; p < b->n_params; p++)
            sb_addf(&sb, "%s %s", p ? "," : "", b->params[p]);
        mg->buckets[i] = xstrdup_clean(sb.s ? sb.s : "");
        sb_free(&sb);
    }
}

static void add_resumes(MEntry *e, const DrRecord *rec)
{
    for (size_t i = 0; i < rec->n_resumes; i++) {
        const DrResume *dr = &rec->resumes[i];
        MResume *r = mentry_add_resume(e);
        r->name = xstrdup_clean(dr->name);
        r->kind = xstrdup_clean(dr->kind_name);
        r->kind_id = dr->kind;
        r->offset = dr->offset;
        r->frame_id = dr->code && dr->code->frame_id != UINT32_MAX ? (int64_t)dr->code->frame_id : -1;
    }
}

static char *stack_text(const DrBreak *b)
{
    StrBuf sb;
    sb_init(&sb);
    for (size_t i = 0; i < b->n_frames; i++) {
        const DrFrame *fr = &b->user_stack[i];
        sb_addf(&sb, "File \"%s\", line %u, in %s\n", fr->filename, fr->lineno, fr->name);
        if (*fr->line)
            sb_addf(&sb, "    %s\n", fr->line);
    }
    char *clean = xstrdup_clean(sb.s ? sb.s : "");
    sb_free(&sb);
    return clean;
}

/* "file.py:12  if x.size(0) > 4:" (the file's base name), the text alone
 * for guards no line installed, "" when the record has neither. */
static char *guard_origin(const DrGuard *g)
{
    const char *file = strrchr(g->origin, '/');
    file = file ? file + 1 : g->origin;
    char *raw = *g->origin ? xasprintf("%s  %s", file, g->origin_text) : xstrdup(g->origin_text);
    char *clean = xstrdup_clean(raw);
    free(raw);
    return clean;
}

static void fill_entry(MEntry *e, const DrRecord *rec, uint64_t origin_ns)
{
    e->frame_id = rec->frame_id;
    e->compile_id = rec->compile_id;
    e->status = xstrdup_clean(rec->status_name);
    e->status_id = rec->status;
    e->compile_ns = rec->compile_ns;
    e->when_ns = since(rec->start_ns, origin_ns);
    e->backend = xstrdup_clean(rec->backend);
    e->recompile_reason = xstrdup_clean(rec->recompile_reason);
    e->error = xstrdup_clean(rec->error);
    e->orig_bytecode = xstrdup_clean(rec->original_bytecode);
    e->mod_bytecode = xstrdup_clean(rec->modified_bytecode);
    const DrEntry *ent = rec->entry;
    e->hits = ent ? ent->hits : 0;
    e->hit_timed = ent ? ent->hit_timed : 0;
    e->hit_ns = ent ? ent->hit_ns : 0;
    for (size_t g = 0; g < rec->n_graphs; g++) {
        const DrGraph *dg = &rec->graphs[g];
        MGraph *mg = mentry_add_graph(e);
        mg->name = xstrdup_clean(dg->name);
        mg->n_ops = dg->op_count;
        mg->backend_note = xstrdup_clean(dg->backend_note);
        for (size_t k = 0; k < dg->n_nodes; k++) {
            const DrNode *dn = &dg->nodes[k];
            MNode *mn = mgraph_add_node(mg);
            mn->op = xstrdup_clean(dn->op);
            mn->name = xstrdup_clean(dn->name);
            mn->target = xstrdup_clean(dn->target);
            mn->args = xstrdup_clean(dn->args);
            mn->meta = node_meta(dn);
            mn->module = node_module(dn);
            mn->bucket = dn->ddp_bucket;
        }
        add_buckets(mg, dg);
    }
    for (size_t g = 0; g < rec->n_guards; g++) {
        const DrGuard *dg = &rec->guards[g];
        MGuard *mg = mentry_add_guard(e);
        mg->kind = xstrdup_clean(dg->kind);
        mg->source = xstrdup_clean(dg->source);
        /* the expected value (detail) belongs next to the guard it checks */
        if (*dg->detail && !strstr(dg->text, dg->detail)) {
            char *both = xasprintf("%s  [%s]", dg->text, dg->detail);
            mg->text = xstrdup_clean(both);
            free(both);
        } else {
            mg->text = xstrdup_clean(dg->text);
        }
        mg->origin = guard_origin(dg);
        mg->fails = dg->fail_count;
        int last = ent && ent->last_fail_guard == (int64_t)g;
        mg->last_property = xstrdup_clean(last ? ent->last_fail_property : "");
        mg->last_expected = xstrdup_clean(last ? ent->last_fail_expected : "");
        mg->last_actual = xstrdup_clean(last ? ent->last_fail_actual : "");
    }
    add_resumes(e, rec);
}

/* Is tree node a costlier than b (more time in its own tests)? */
static int costlier(const DrTreeNode *a, const DrTreeNode *b)
{
    return a->timed_ns > b->timed_ns;
}

/* The MFRAME_COSTLY timed nodes of c's tree with the most time in their
 * own tests, costliest first. */
static void fill_costly(MFrame *f, const DrCode *c)
{
    const DrTreeNode *top[MFRAME_COSTLY];
    size_t n = 0;
    for (size_t i = 0; i < c->tree.n_nodes; i++) {
        const DrTreeNode *t = &c->tree.nodes[i];
        if (!t->timed)
            continue;
        size_t at = n < MFRAME_COSTLY ? n++ : MFRAME_COSTLY;
        if (at == MFRAME_COSTLY && !costlier(t, top[MFRAME_COSTLY - 1]))
            continue;
        if (at == MFRAME_COSTLY)
            at = MFRAME_COSTLY - 1;
        for (; at > 0 && costlier(t, top[at - 1]); at--)  /* insertion: keep the order */
            top[at] = top[at - 1];
        top[at] = t;
    }
    f->costly = n ? xcalloc(n, sizeof *f->costly) : NULL;
    f->n_costly = n;
    for (size_t k = 0; k < n; k++) {
        const DrTreeNode *t = top[k];
        MCostNode *cn = &f->costly[k];
        cn->index = t - c->tree.nodes;
        cn->via = xstrdup_clean(t->parent < 0 ? "root" : t->via);
        StrBuf sb;
        sb_init(&sb);
        const char **items = t->n_tests ? t->tests : t->leaf;
        size_t n_items = t->n_tests ? t->n_tests : t->n_leaf;
        for (size_t j = 0; j < n_items && j < 4; j++)
            sb_addf(&sb, "%s%s", j ? "; " : "", items[j]);
        if (n_items > 4)
            sb_addf(&sb, "; ... %zu more", n_items - 4);
        cn->tests = xstrdup_clean(sb.s ? sb.s : "");
        sb_free(&sb);
        cn->evaluations = t->evaluations;
        cn->timed = t->timed;
        cn->timed_ns = t->timed_ns;
    }
}

/* The MFRAME_COSTLY_TESTS tests of c's tree with the most time in them
 * (dr_tree_costliest), costliest first, with their guards' lines. */
static void fill_costly_tests(MFrame *f, const DrCode *c)
{
    const DrTreeTest *top[MFRAME_COSTLY_TESTS];
    size_t n = dr_tree_costliest(&c->tree, top, MFRAME_COSTLY_TESTS);
    f->costly_tests = n ? xcalloc(n, sizeof *f->costly_tests) : NULL;
    f->n_costly_tests = n;
    for (size_t k = 0; k < n; k++) {
        const DrTreeTest *t = top[k];
        MCostTest *ct = &f->costly_tests[k];
        ct->test = xstrdup_clean(t->text);
        ct->source = xstrdup_clean(t->source);
        ct->entry = xstrdup_clean(t->entry);
        ct->kind = xstrdup_clean(t->guard ? t->guard->kind : "");
        ct->origin = t->guard ? guard_origin(t->guard) : xstrdup("");
        ct->timed = t->timed;
        ct->timed_ns = dr_tree_test_est_ns(t);
    }
}

static void fill_frame(MFrame *f, const DrCode *c, uint64_t origin_ns)
{
    f->id = c->frame_id == UINT32_MAX ? -1 - (int64_t)c->slot : (int64_t)c->frame_id;
    f->name = xstrdup_clean(c->name);
    f->file = xstrdup_clean(c->filename);
    f->line = (int)c->firstlineno;
    f->calls = c->calls;
    f->hits = c->hits;
    f->misses = c->misses;
    f->compile_ns = c->compile_ns;
    f->limit = c->cache_size_limit;
    f->lookup_timed = c->lookup_timed;
    f->lookup_ns = c->lookup_ns;
    fill_costly(f, c);
    fill_costly_tests(f, c);
    for (size_t i = 0; i < c->n_entries; i++)
        f->n_live += !c->entries[i]->dead;
    int failed = 0;
    for (size_t i = 0; i < c->n_records; i++) {
        const DrRecord *rec = c->records[i];
        fill_entry(mframe_add_entry(f), rec, origin_ns);
        if (*rec->context) {            /* the newest record's label */
            free(f->context);
            f->context = xstrdup_clean(rec->context);
        }
        f->recompiles += *rec->recompile_reason != '\0';
        f->breaks += rec->n_breaks;
        for (size_t b = 0; b < rec->n_breaks; b++) {
            const DrBreak *br = &rec->breaks[b];
            char *stack = stack_text(br);
            char *reason = xstrdup_clean(br->reason), *file = xstrdup_clean(br->filename);
            char *meaning = xstrdup_clean(br->meaning), *hint = xstrdup_clean(br->hint);
            MBreak *mb = mframe_add_break(f, reason, file, (int)br->lineno, stack, meaning, hint);
            mb->calls += br->calls;
            mb->samples += br->samples;
            mb->est_ns += br->est_ns;
            mb->max_ns = br->max_ns > mb->max_ns ? br->max_ns : mb->max_ns;
            free(stack);
            free(reason);
            free(file);
            free(meaning);
            free(hint);
        }
        failed = rec->status == DT_RS_ERROR || rec->status == DT_RS_UNSUPPORTED;
    }
    if (c->limit_hit)
        f->status = FS_LIMIT;
    else if (failed || c->skipped)
        f->status = FS_ERROR;
    else
        f->status = f->breaks ? FS_BREAK : FS_OK;
}

static void fill_events(Model *m, const DrSnapshot *s, uint64_t origin_ns)
{
    for (size_t i = 0; i < s->n_events; i++) {
        const DrEvent *de = &s->events[i];
        MEvent *ev = model_add_event(m);
        ev->seq = de->seq;
        ev->when_ns = since(de->time_ns, origin_ns);
        ev->kind = xstrdup_clean(de->kind_name);
        ev->kind_id = de->kind;
        ev->frame_id = de->frame_id;
        ev->compile_id = de->compile_id;
        StrBuf sb;
        sb_init(&sb);
        sb_add(&sb, de->text);
        if (*de->expected || *de->actual)
            sb_addf(&sb, " [%s%sexpected %s, actual %s]", de->property,
                    *de->property ? ": " : "", de->expected, de->actual);
        if (*de->where)
            sb_addf(&sb, " at %s", de->where);
        ev->text = xstrdup_clean(sb.s ? sb.s : "");
        sb_free(&sb);
    }
    if (s->n_events && s->events[0].seq > 1)
        m->events_lost = s->events[0].seq - 1;
}

DrReader *source_reader(Source *src)
{
    return src->reader;
}

Model *source_read(Source *src, int *exited, DrStatus *st)
{
    DrSnapshot *s = dr_snapshot(src->reader, st);
    if (!s)
        return NULL;
    const DrProcess *p = &s->process;
    Model *m = model_new();
    m->pid = p->pid;
    m->python = xstrdup_clean(p->python_version);
    m->torch = xstrdup_clean(p->torch_version);
    m->origin = xstrdup_clean(dr_source(src->reader));
    uint64_t end = p->exited && p->exit_ns ? p->exit_ns : p->snapshot_ns;
    m->uptime_s = since(end, p->start_ns) / 1000000000ull;
    m->guard_timing = p->guard_timing;
    for (size_t i = 0; i < s->n_codes; i++)
        fill_frame(model_add_frame(m), &s->codes[i], p->start_ns);
    fill_events(m, s, p->start_ns);
    m->calls = s->total_calls;
    m->hits = s->total_hits;
    m->compiles = s->n_records;
    *exited = p->exited;
    dr_snapshot_free(s);
    model_finish(m);
    return m;
}
