/* inspect/snapshot.c — decoding a compact image of the region (image.h)
 * into a DrSnapshot (snapshot.h): the record, tree and event schemas of
 * layout.h and record.h,
 * linking entries, records, codes and resume functions, deduplicating
 * breaks; and the lookups inside a snapshot.
 *
 * Owns: every read of an image's bytes after image_check_header accepted
 * its header.  Input is untrusted: every ref, length and index is checked;
 * bad data yields empty fields, never a crash.  It must not reach a
 * process or a file: reader.c (attach) hands it the bytes.
 */
#include <stdio.h>      /* snprintf */
#include <stdlib.h>     /* calloc, free, qsort */
#include <string.h>     /* memcpy, memset, strcmp, strnlen */
#include <time.h>       /* clock_gettime: a live region's snapshot time */

#include "snapshot.h"
#include "snapshot_int.h"   /* RdOrigin, rd_decode */
#include "layout.h"
#include "value.h"

/* ---- decoding ------------------------------------------------------------------------ */

typedef struct {
    const uint8_t *img;
    const DtHeader *h;
    DvArena *arena;
} Dec;

/* Payload of a blob ref of `type`, or NULL when absent/invalid. */
static const uint8_t *
blob_payload(const Dec *d, DtRef ref, uint16_t type, size_t *len)
{
    if (ref.len < sizeof(DtBlob) || ref.off > d->h->blob_used
            || ref.len > d->h->blob_used - ref.off)
        return NULL;
    const uint8_t *p = d->img + d->h->blob_off + ref.off;
    DtBlob b;
    memcpy(&b, p, sizeof b);
    if (b.magic != DT_BLOB_MAGIC || b.type != type || b.len != ref.len - sizeof(DtBlob))
        return NULL;
    *len = b.len;
    return p + sizeof(DtBlob);
}

static const char *
text(const Dec *d, DtRef ref)
{
    size_t len;
    const uint8_t *p = blob_payload(d, ref, DT_BLOB_TEXT, &len);
    return p != NULL ? dv_strndup(d->arena, (const char *)p, len) : "";
}

/* A fixed char field, NUL-terminated within its size or not. */
static const char *
field(const Dec *d, const char *s, size_t cap)
{
    return dv_strndup(d->arena, s, strnlen(s, cap));
}

static const char *
fmt(const Dec *d, const char *f, unsigned a, unsigned b)
{
    char buf[48];
    int n = snprintf(buf, sizeof buf, f, a, b);
    return dv_strndup(d->arena, buf, n > 0 ? (size_t)n : 0);
}

static const char **
strings(const Dec *d, const DvVal *list, size_t *n)
{
    *n = dv_len(list);
    const char **out = dv_alloc(d->arena, (*n ? *n : 1) * sizeof *out);
    if (out == NULL) {
        *n = 0;
        return NULL;
    }
    for (size_t i = 0; i < *n; i++)
        out[i] = dv_str(d->arena, dv_item(list, i));
    return out;
}

static void *
array(const Dec *d, size_t n, size_t size)
{
    return dv_alloc(d->arena, (n ? n : 1) * size);
}

static void
decode_graph(const Dec *d, const DvVal *v, DrGraph *g)
{
    g->name = dv_str(d->arena, dv_item(v, DT_GRAPH_NAME));
    g->op_count = (uint64_t)dv_int(dv_item(v, DT_GRAPH_OP_COUNT));
    g->backend_note = dv_str(d->arena, dv_item(v, DT_GRAPH_BACKEND_NOTE));
    const DvVal *nodes = dv_item(v, DT_GRAPH_NODES);
    g->nodes = array(d, dv_len(nodes), sizeof(DrNode));
    g->n_nodes = g->nodes ? dv_len(nodes) : 0;
    for (size_t i = 0; i < g->n_nodes; i++) {
        const DvVal *nv = dv_item(nodes, i);
        DrNode *n = &g->nodes[i];
        n->op = dv_str(d->arena, dv_item(nv, DT_NODE_OP));
        n->name = dv_str(d->arena, dv_item(nv, DT_NODE_NAME));
        n->target = dv_str(d->arena, dv_item(nv, DT_NODE_TARGET));
        n->args = dv_str(d->arena, dv_item(nv, DT_NODE_ARGS));
        n->dtype = dv_str(d->arena, dv_item(nv, DT_NODE_DTYPE));
        n->shape = dv_str(d->arena, dv_item(nv, DT_NODE_SHAPE));
        n->stride = dv_str(d->arena, dv_item(nv, DT_NODE_STRIDE));
        n->device = dv_str(d->arena, dv_item(nv, DT_NODE_DEVICE));
        n->module_path = dv_str(d->arena, dv_item(nv, DT_NODE_MODULE_PATH));
        n->users = strings(d, dv_item(nv, DT_NODE_USERS), &n->n_users);
        n->inputs = strings(d, dv_item(nv, DT_NODE_INPUTS), &n->n_inputs);
        n->module_class = dv_str(d->arena, dv_item(nv, DT_NODE_MODULE_CLASS));
        int64_t piece = dv_int(dv_item(nv, DT_NODE_DDP_BUCKET));
        n->ddp_bucket = piece > 0 && piece <= UINT32_MAX ? (uint32_t)piece : 0;
    }
    const DvVal *buckets = dv_item(v, DT_GRAPH_DDP_BUCKETS);
    g->buckets = array(d, dv_len(buckets), sizeof(DrBucket));
    g->n_buckets = g->buckets ? dv_len(buckets) : 0;
    for (size_t i = 0; i < g->n_buckets; i++)
        g->buckets[i].params = strings(d, dv_item(buckets, i), &g->buckets[i].n_params);
    for (size_t i = 0; i < g->n_nodes; i++)     /* a piece past the list: none (hostile input) */
        if (g->nodes[i].ddp_bucket > g->n_buckets)
            g->nodes[i].ddp_bucket = 0;
}

static void
decode_break(const Dec *d, const DvVal *v, DrBreak *b)
{
    b->reason = dv_str(d->arena, dv_item(v, DT_BREAK_REASON));
    b->filename = dv_str(d->arena, dv_item(v, DT_BREAK_FILENAME));
    b->lineno = (uint32_t)dv_int(dv_item(v, DT_BREAK_LINENO));
    b->kind = dv_str(d->arena, dv_item(v, DT_BREAK_KIND));
    b->meaning = dv_str(d->arena, dv_item(v, DT_BREAK_MEANING));
    b->hint = dv_str(d->arena, dv_item(v, DT_BREAK_HINT));
    const DvVal *stack = dv_item(v, DT_BREAK_USER_STACK);
    b->user_stack = array(d, dv_len(stack), sizeof(DrFrame));
    b->n_frames = b->user_stack ? dv_len(stack) : 0;
    for (size_t i = 0; i < b->n_frames; i++) {
        const DvVal *fv = dv_item(stack, i);
        b->user_stack[i] = (DrFrame){
            .filename = dv_str(d->arena, dv_item(fv, DT_FRAME_FILENAME)),
            .lineno = (uint32_t)dv_int(dv_item(fv, DT_FRAME_LINENO)),
            .name = dv_str(d->arena, dv_item(fv, DT_FRAME_NAME)),
            .line = dv_str(d->arena, dv_item(fv, DT_FRAME_LINE)),
        };
    }
    b->count = 1;
    b->first_record = "";
}

/* Fill rec from its DtEntry slot and RECORD blob (absent blob: slot fields only). */
static void
decode_record(const Dec *d, const DtEntry *e, DrRecord *rec)
{
    DvVal v = {0};
    size_t len;
    const uint8_t *p = blob_payload(d, e->record, DT_BLOB_RECORD, &len);
    if (p != NULL && dv_parse(d->arena, p, len, &v) < 0)
        memset(&v, 0, sizeof v);
    DvArena *a = d->arena;
    rec->frame_id = e->frame_id;
    rec->compile_id = e->compile_id;
    rec->id = fmt(d, "[%u/%u]", e->frame_id, e->compile_id);
    rec->status_name = dv_str(a, dv_item(&v, DT_REC_STATUS));
    rec->status = dt_rec_status_of(rec->status_name, strlen(rec->status_name));
    rec->backend = dv_str(a, dv_item(&v, DT_REC_BACKEND));
    rec->name = dv_str(a, dv_item(&v, DT_REC_NAME));
    rec->filename = dv_str(a, dv_item(&v, DT_REC_FILENAME));
    rec->firstlineno = (uint32_t)dv_int(dv_item(&v, DT_REC_FIRSTLINENO));
    rec->start_ns = (uint64_t)dv_int(dv_item(&v, DT_REC_START_NS));
    rec->compile_ns = e->compile_ns;    /* the slot's (DT_REC_COMPILE_NS is the same number) */
    rec->backend_ns = (uint64_t)dv_int(dv_item(&v, DT_REC_BACKEND_NS));
    rec->recompile_reason = dv_str(a, dv_item(&v, DT_REC_RECOMPILE_REASON));
    rec->error = dv_str(a, dv_item(&v, DT_REC_ERROR));
    rec->context = dv_str(a, dv_item(&v, DT_REC_CONTEXT));
    rec->original_bytecode = dv_str(a, dv_item(&v, DT_REC_ORIGINAL_BYTECODE));
    rec->modified_bytecode = dv_str(a, dv_item(&v, DT_REC_MODIFIED_BYTECODE));
    rec->op_count = (uint64_t)dv_int(dv_item(&v, DT_REC_OP_COUNT));
    const DvVal *graphs = dv_item(&v, DT_REC_GRAPHS), *guards = dv_item(&v, DT_REC_GUARDS);
    const DvVal *breaks = dv_item(&v, DT_REC_BREAKS);
    rec->graphs = array(d, dv_len(graphs), sizeof(DrGraph));
    rec->n_graphs = rec->graphs ? dv_len(graphs) : 0;
    for (size_t i = 0; i < rec->n_graphs; i++)
        decode_graph(d, dv_item(graphs, i), &rec->graphs[i]);
    rec->guards = array(d, dv_len(guards), sizeof(DrGuard));
    rec->n_guards = rec->guards ? dv_len(guards) : 0;
    size_t nc = 0;
    const uint8_t *counts = blob_payload(d, e->fail_counts, DT_BLOB_COUNTERS, &nc);
    nc = counts != NULL ? nc / 8 : 0;
    for (size_t i = 0; i < rec->n_guards; i++) {
        const DvVal *gv = dv_item(guards, i);
        DrGuard *g = &rec->guards[i];
        g->text = dv_str(a, dv_item(gv, DT_GUARD_TEXT));
        g->kind = dv_str(a, dv_item(gv, DT_GUARD_KIND));
        g->source = dv_str(a, dv_item(gv, DT_GUARD_SOURCE));
        g->detail = dv_str(a, dv_item(gv, DT_GUARD_DETAIL));
        g->origin = dv_str(a, dv_item(gv, DT_GUARD_ORIGIN));
        g->origin_text = dv_str(a, dv_item(gv, DT_GUARD_ORIGIN_TEXT));
        if (i < nc && i < e->n_guards)
            memcpy(&g->fail_count, counts + 8 * i, 8);
        g->last_failed = e->last_fail_guard == i;
    }
    rec->breaks = array(d, dv_len(breaks), sizeof(DrBreak));
    rec->n_breaks = rec->breaks ? dv_len(breaks) : 0;
    for (size_t i = 0; i < rec->n_breaks; i++)
        decode_break(d, dv_item(breaks, i), &rec->breaks[i]);
    if (rec->n_breaks > 0) {            /* a compile breaks once: its eager region's counters */
        DrBreak *b = &rec->breaks[0];
        b->calls = e->break_time[DT_BT_CALLS];
        b->samples = e->break_time[DT_BT_SAMPLES];
        b->sampled_ns = e->break_time[DT_BT_NS];
        b->max_ns = e->break_time[DT_BT_MAX_NS];
        double est = b->samples ? (double)b->sampled_ns / (double)b->samples * (double)b->calls : 0;
        b->est_ns = est < 18446744073709549568.0 ? (uint64_t)est : UINT64_MAX;  /* hostile input */
    }
    const DvVal *resumes = dv_item(&v, DT_REC_RESUMES);
    rec->resumes = array(d, dv_len(resumes), sizeof(DrResume));
    rec->n_resumes = rec->resumes ? dv_len(resumes) : 0;
    for (size_t i = 0; i < rec->n_resumes; i++) {
        const DvVal *rv = dv_item(resumes, i);
        int64_t offset = dv_int(dv_item(rv, DT_RESUME_OFFSET));
        const char *kind = dv_str(a, dv_item(rv, DT_RESUME_KIND));
        rec->resumes[i] = (DrResume){
            .name = dv_str(a, dv_item(rv, DT_RESUME_NAME)),
            .offset = offset >= 0 && offset <= UINT32_MAX ? (uint32_t)offset : 0,
            .kind = dt_resume_kind_of(kind, strlen(kind)),
            .kind_name = kind,
        };
    }
}

/* Newer node counters from the code's DT_BLOB_COUNTERS copy, when it
 * matches the tree (a refresh after a republish may not have run yet). */
static void
apply_tree_counters(const Dec *d, const DtCode *c, DrTree *t)
{
    size_t len;
    const uint8_t *p = blob_payload(d, c->tree_counters, DT_BLOB_COUNTERS, &len);
    const size_t per = 8 * DT_TREE_NODE_COUNTERS;    /* bytes per node */
    const size_t per_test = 8 * DT_TREE_SLOT_COUNTERS;
    if (p == NULL || t->n_nodes == 0)
        return;
    if (len == t->n_nodes * per + t->n_tests * per_test) {      /* test slots after the nodes */
        const uint8_t *q = p + t->n_nodes * per;
        for (size_t i = 0; i < t->n_tests; i++) {
            memcpy(&t->tests[i].timed, q + per_test * i, 8);
            memcpy(&t->tests[i].timed_ns, q + per_test * i + 8, 8);
            memcpy(&t->tests[i].max_ns, q + per_test * i + 16, 8);
        }
    }
    else if (len != t->n_nodes * per)                   /* an older writer: nodes only */
        return;
    for (size_t i = 0; i < t->n_nodes; i++) {
        memcpy(&t->nodes[i].evaluations, p + per * i, 8);
        memcpy(&t->nodes[i].failures, p + per * i + 8, 8);
        memcpy(&t->nodes[i].timed, p + per * i + 16, 8);
        memcpy(&t->nodes[i].timed_ns, p + per * i + 24, 8);
    }
    t->counters_ns = c->counters_ns;
    t->live = (c->flags & DT_C_LIVE_TREE) != 0;
}

static void
decode_tree(const Dec *d, const DtCode *c, DrTree *t)
{
    size_t len;
    const uint8_t *p = blob_payload(d, c->tree, DT_BLOB_TREE, &len);
    DvVal v;
    if (p == NULL || dv_parse(d->arena, p, len, &v) < 0)
        return;
    const DvVal *nodes = dv_item(&v, 1);
    t->nodes = array(d, dv_len(nodes), sizeof(DrTreeNode));
    t->n_nodes = t->nodes ? dv_len(nodes) : 0;
    for (size_t i = 0; i < t->n_nodes; i++) {
        const DvVal *nv = dv_item(nodes, i);
        DrTreeNode *n = &t->nodes[i];
        n->id = dv_int(dv_item(nv, 0));
        n->parent = dv_int(dv_item(nv, 1));
        if (n->parent < -1 || n->parent >= (int64_t)t->n_nodes)
            n->parent = -1;
        n->depth = (uint32_t)dv_int(dv_item(nv, 2));
        n->via = dv_str(d->arena, dv_item(nv, 3));
        n->tests = strings(d, dv_item(nv, 4), &n->n_tests);
        n->switch_on = dv_str(d->arena, dv_item(nv, 5));
        n->leaf = strings(d, dv_item(nv, 6), &n->n_leaf);
        n->evaluations = (uint64_t)dv_int(dv_item(nv, 7));
        n->failures = (uint64_t)dv_int(dv_item(nv, 8));
    }
    const DvVal *tests = dv_item(&v, DT_TREE_ITEM_TESTS);
    t->tests = t->n_nodes ? array(d, dv_len(tests), sizeof(DrTreeTest)) : NULL;
    t->n_tests = t->tests ? dv_len(tests) : 0;
    for (size_t i = 0; i < t->n_tests; i++) {
        const DvVal *tv = dv_item(tests, i);
        int64_t node = dv_int(dv_item(tv, DT_TTEST_NODE));
        t->tests[i] = (DrTreeTest){
            .node = node >= 0 && node < (int64_t)t->n_nodes ? node : -1,
            .text = dv_str(d->arena, dv_item(tv, DT_TTEST_TEXT)),
            .source = dv_str(d->arena, dv_item(tv, DT_TTEST_SOURCE)),
            .entry = dv_str(d->arena, dv_item(tv, DT_TTEST_ENTRY)),
            .guard_index = dv_int(dv_item(tv, DT_TTEST_GUARD)),
        };
    }
    apply_tree_counters(d, c, t);
}

static void
decode_events(const Dec *d, DrSnapshot *s)
{
    const DtHeader *h = d->h;
    const DtEvent *ring = (const DtEvent *)(d->img + h->events_off);
    uint64_t cap = h->events_cap, n = h->n_events < cap ? h->n_events : cap;
    s->events = array(d, (size_t)n, sizeof(DrEvent));
    if (s->events == NULL)
        return;
    for (uint64_t i = 0; i < n; i++) {      /* n <= events_cap: bounded whatever n_events says */
        uint64_t seq = h->n_events - n + 1 + i;
        const DtEvent *ev = &ring[seq % cap];
        if (ev->seq != seq)
            continue;
        DrEvent *out = &s->events[s->n_events++];
        out->seq = seq;
        out->time_ns = ev->time_ns;
        out->kind = (DrEventKind)ev->kind;
        out->kind_name = dt_event_kind_name(ev->kind);
        out->frame_id = ev->frame_id == UINT32_MAX ? -1 : (int64_t)ev->frame_id;
        out->compile_id = ev->compile_id == UINT32_MAX ? -1 : (int64_t)ev->compile_id;
        out->id = ev->frame_id == UINT32_MAX ? "" : fmt(d, "[%u/%u]", ev->frame_id, ev->compile_id);
        out->text = text(d, ev->text);
        out->where = text(d, ev->where);
        out->guard_index = ev->guard_index == UINT32_MAX ? -1 : (int64_t)ev->guard_index;
        out->property = text(d, ev->property);
        out->expected = text(d, ev->expected);
        out->actual = text(d, ev->actual);
        out->code = ev->code_slot < s->n_codes ? &s->codes[ev->code_slot] : NULL;
        if (ev->entry_slot < h->n_entries && s->records != NULL) {
            /* records are in slot order: record i is slot i */
            out->entry = s->records[ev->entry_slot].entry;
        }
    }
}

static uint64_t
hash_str(uint64_t h, const char *p)
{
    for (; *p; p++)
        h = (h ^ (unsigned char)*p) * 1099511628211u;      /* FNV-1a */
    return h;
}

static uint64_t
break_hash(const DrBreak *b)
{
    return hash_str(hash_str(14695981039346656037u ^ b->lineno, b->reason), b->filename);
}

typedef struct {
    uint64_t est_ns;            /* estimated eager time, ns */
    uint64_t count;
    size_t first;               /* first-seen position */
} BreakOrder;

static int
break_order_cmp(const void *a, const void *b)
{
    const BreakOrder *x = a, *y = b;
    if (x->est_ns != y->est_ns)
        return x->est_ns < y->est_ns ? 1 : -1;             /* costliest first */
    if (x->count != y->count)
        return x->count < y->count ? 1 : -1;               /* most frequent first */
    return (x->first > y->first) - (x->first < y->first);  /* then first seen */
}

/* Deduplicate every record's breaks by (reason, filename, lineno) through
 * a hash table: linear in the number of breaks, whatever the input holds. */
static void
dedup_breaks(const Dec *d, DrSnapshot *s)
{
    size_t total = 0;
    for (size_t i = 0; i < s->n_records; i++)
        total += s->records[i].n_breaks;
    s->breaks = array(d, total, sizeof(DrBreak));
    size_t cap = 16;
    while (cap < 2 * total)
        cap *= 2;
    size_t *table = array(d, cap, sizeof(size_t));     /* break index + 1, 0 = empty */
    if (s->breaks == NULL || table == NULL)
        return;
    for (size_t i = 0; i < s->n_records; i++)
        for (size_t j = 0; j < s->records[i].n_breaks; j++) {
            const DrBreak *b = &s->records[i].breaks[j];
            size_t k = (size_t)break_hash(b) & (cap - 1);
            while (table[k] != 0) {
                DrBreak *o = &s->breaks[table[k] - 1];
                if (o->lineno == b->lineno && strcmp(o->reason, b->reason) == 0
                        && strcmp(o->filename, b->filename) == 0)
                    break;
                k = (k + 1) & (cap - 1);
            }
            if (table[k] != 0) {
                DrBreak *o = &s->breaks[table[k] - 1];
                o->count++;
                o->calls += b->calls;
                o->samples += b->samples;
                o->sampled_ns += b->sampled_ns;
                o->est_ns = o->est_ns > UINT64_MAX - b->est_ns ? UINT64_MAX : o->est_ns + b->est_ns;
                o->max_ns = b->max_ns > o->max_ns ? b->max_ns : o->max_ns;
                continue;
            }
            s->breaks[s->n_breaks] = *b;
            s->breaks[s->n_breaks].count = 1;
            s->breaks[s->n_breaks].first_record = s->records[i].id;
            table[k] = ++s->n_breaks;
        }
    /* Costliest first (estimated eager time), then most frequent, then first seen. */
    BreakOrder *order = array(d, s->n_breaks, sizeof(BreakOrder));
    DrBreak *sorted = array(d, s->n_breaks, sizeof(DrBreak));
    if (order == NULL || sorted == NULL)
        return;
    for (size_t i = 0; i < s->n_breaks; i++)
        order[i] = (BreakOrder){s->breaks[i].est_ns, s->breaks[i].count, i};
    qsort(order, s->n_breaks, sizeof *order, break_order_cmp);
    for (size_t i = 0; i < s->n_breaks; i++)
        sorted[i] = s->breaks[order[i].first];
    s->breaks = sorted;
}

static void
decode_process(const Dec *d, const RdOrigin *r, DrProcess *p)
{
    const DtHeader *h = d->h;
    p->pid = (int)h->pid;
    p->exited = r->exited || (h->flags & DT_F_EXITED) != 0;
    p->from_file = r->from_file;
    p->anonymous = r->anonymous || (h->flags & DT_F_ANON) != 0;
    p->start_ns = h->start_ns;
    if (h->snapshot_ns != 0)
        p->snapshot_ns = h->snapshot_ns;
    else {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        p->snapshot_ns = (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
    }
    p->exit_ns = h->exit_ns;
    p->version = h->version;
    p->python_version = field(d, h->python_version, sizeof h->python_version);
    p->torch_version = field(d, h->torch_version, sizeof h->torch_version);
    p->dynamo_version = field(d, h->dynamo_version, sizeof h->dynamo_version);
    p->argv = field(d, h->argv, sizeof h->argv);
    p->shm_path = field(d, h->shm_path, sizeof h->shm_path);
    p->publishes = h->publishes;
    p->blobs_dropped = h->blobs_dropped;
    p->slots_dropped = h->slots_dropped;
    p->blob_used = h->blob_used;
    p->blob_cap = h->blob_cap;
    p->guard_timing = h->guard_timing;
}

static void
decode_codes(const Dec *d, DrSnapshot *s)
{
    const DtCode *codes = (const DtCode *)(d->img + d->h->codes_off);
    s->codes = array(d, d->h->n_codes, sizeof(DrCode));
    s->n_codes = s->codes ? d->h->n_codes : 0;
    for (size_t i = 0; i < s->n_codes; i++) {
        const DtCode *c = &codes[i];
        DrCode *out = &s->codes[i];
        out->slot = (uint32_t)i;
        out->frame_id = c->frame_id;
        out->name = text(d, c->name);
        out->filename = text(d, c->filename);
        out->firstlineno = c->firstlineno;
        out->dead = (c->flags & DT_C_DEAD) != 0;
        out->limit_hit = (c->flags & DT_C_LIMIT) != 0;
        out->skipped = (c->flags & DT_C_SKIP) != 0;
        out->calls = c->calls;
        out->hits = c->hits;
        out->misses = c->misses;
        out->guard_failures = c->guard_failures;
        out->compiles = c->compiles;
        out->compile_ns = c->compile_ns;
        out->cache_size_limit = c->cache_size_limit;
        out->lookup_timed = c->lookup_timed;
        out->lookup_ns = c->lookup_ns;
        decode_tree(d, c, &out->tree);
        s->total_calls += c->calls;
        s->total_hits += c->hits;
        s->total_misses += c->misses;
    }
}

static void
decode_entries(const Dec *d, DrSnapshot *s)
{
    const DtEntry *slots = (const DtEntry *)(d->img + d->h->entries_off);
    size_t n = d->h->n_entries, n_live = 0;
    s->records = array(d, n, sizeof(DrRecord));
    s->entries = array(d, n, sizeof(DrEntry));
    if (s->records == NULL || s->entries == NULL)
        return;
    s->n_records = n;
    for (size_t i = 0; i < n; i++) {
        const DtEntry *e = &slots[i];
        DrRecord *rec = &s->records[i];
        decode_record(d, e, rec);
        rec->code = e->code_slot < s->n_codes ? &s->codes[e->code_slot] : NULL;
        if (rec->code != NULL) {
            rec->code->n_records++;
            if (!*rec->name)
                rec->name = rec->code->name;
            if (!*rec->filename)
                rec->filename = rec->code->filename;
        }
        if (e->flags & DT_E_RECORD)
            continue;
        DrEntry *out = &s->entries[n_live++];
        out->slot = (uint32_t)i;
        out->frame_id = e->frame_id;
        out->compile_id = e->compile_id;
        out->id = rec->id;
        out->dead = (e->flags & DT_E_DEAD) != 0;
        out->hits = e->hits;
        out->guard_failures = e->guard_failures;
        out->compile_ns = e->compile_ns;
        out->created_ns = e->created_ns;
        out->last_fail_guard = e->last_fail_guard == UINT32_MAX ? -1 : (int64_t)e->last_fail_guard;
        out->last_fail_ns = e->last_fail_ns;
        out->last_fail_property = field(d, e->last_fail_property, sizeof e->last_fail_property);
        out->last_fail_expected = field(d, e->last_fail_expected, sizeof e->last_fail_expected);
        out->last_fail_actual = field(d, e->last_fail_actual, sizeof e->last_fail_actual);
        out->hit_timed = e->hit_timed;
        out->hit_ns = e->hit_ns;
        out->record = rec;
        out->code = rec->code;
        rec->entry = out;
        if (out->code != NULL)
            out->code->n_entries++;
    }
    s->n_entries = n_live;
}

/* Each tree test's guard: the record of its entry ("[F/C]"), guard
 * guard_index.  Tests of one entry come in runs: the last record found is
 * tried first. */
static void
link_tree_tests(DrSnapshot *s)
{
    for (size_t i = 0; i < s->n_codes; i++) {
        DrCode *c = &s->codes[i];
        const DrRecord *last = NULL;
        for (size_t k = 0; c->records != NULL && k < c->tree.n_tests; k++) {
            DrTreeTest *tt = &c->tree.tests[k];
            if (!*tt->entry || tt->guard_index < 0)
                continue;
            if (last == NULL || strcmp(last->id, tt->entry) != 0) {
                last = NULL;
                for (size_t r = 0; r < c->n_records && last == NULL; r++)
                    if (strcmp(c->records[r]->id, tt->entry) == 0)
                        last = c->records[r];
            }
            if (last != NULL && (uint64_t)tt->guard_index < last->n_guards)
                tt->guard = &last->guards[tt->guard_index];
        }
    }
}

static int
test_cost_cmp(const void *a, const void *b)
{
    const DrTreeTest *x = *(const DrTreeTest *const *)a, *y = *(const DrTreeTest *const *)b;
    uint64_t ex = dr_tree_test_est_ns(x), ey = dr_tree_test_est_ns(y);
    if (ex != ey)
        return ex < ey ? 1 : -1;
    return (x > y) - (x < y);
}

size_t
dr_tree_costliest(const DrTree *t, const DrTreeTest **out, size_t max)
{
    size_t n = 0;
    for (size_t i = 0; i < t->n_tests; i++) {
        const DrTreeTest *tt = &t->tests[i];
        if (!tt->timed || !tt->timed_ns)
            continue;
        if (n < max)
            out[n++] = tt;
        else if (max && test_cost_cmp(&tt, &out[max - 1]) < 0)
            out[max - 1] = tt;
        else
            continue;
        for (size_t j = n - 1; j > 0 && test_cost_cmp(&out[j], &out[j - 1]) < 0; j--) {
            const DrTreeTest *swap = out[j];        /* insertion: out stays sorted */
            out[j] = out[j - 1];
            out[j - 1] = swap;
        }
    }
    return n;
}

/* Per-code arrays: entries newest first, records oldest first.  One pass
 * over the entries and one over the records (a scan of all of them per
 * code was quadratic). */
static void
link_codes(const Dec *d, DrSnapshot *s)
{
    for (size_t i = 0; i < s->n_codes; i++) {
        DrCode *c = &s->codes[i];
        c->entries = array(d, c->n_entries, sizeof(DrEntry *));
        c->records = array(d, c->n_records, sizeof(DrRecord *));
        if (c->entries == NULL || c->records == NULL) {
            c->entries = NULL;
            c->records = NULL;
        }
    }
    /* n_entries/n_records were counted by decode_entries: they are the
     * capacities; refill them as the fill levels. */
    size_t *cap = array(d, 2 * s->n_codes, sizeof(size_t));
    if (cap == NULL)
        return;
    for (size_t i = 0; i < s->n_codes; i++) {
        cap[2 * i] = s->codes[i].entries ? s->codes[i].n_entries : 0;
        cap[2 * i + 1] = s->codes[i].records ? s->codes[i].n_records : 0;
        s->codes[i].n_entries = s->codes[i].n_records = 0;
    }
    for (size_t k = s->n_entries; k-- > 0;) {
        DrCode *c = s->entries[k].code;
        size_t i = c != NULL ? (size_t)(c - s->codes) : 0;
        if (c != NULL && c->n_entries < cap[2 * i])
            c->entries[c->n_entries++] = &s->entries[k];
    }
    for (size_t k = 0; k < s->n_records; k++) {
        DrCode *c = s->records[k].code;
        size_t i = c != NULL ? (size_t)(c - s->codes) : 0;
        if (c != NULL && c->n_records < cap[2 * i + 1])
            c->records[c->n_records++] = &s->records[k];
    }
}

static int
code_name_cmp(const void *a, const void *b)
{
    const DrCode *x = *(DrCode *const *)a, *y = *(DrCode *const *)b;
    int c = strcmp(x->name, y->name);
    return c != 0 ? c : (x->slot > y->slot) - (x->slot < y->slot);
}

/* The code a resume function name refers to: the live one, else the newest
 * (resume names are unique within a process; a dead code kept its slot).
 * byname: the codes with a frame id, sorted by (name, slot). */
static DrCode *
code_named(DrCode **byname, size_t n, const char *name)
{
    size_t lo = 0, hi = n;
    while (lo < hi) {           /* first index with name >= `name` */
        size_t mid = lo + (hi - lo) / 2;
        if (strcmp(byname[mid]->name, name) < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    DrCode *best = NULL;
    for (size_t i = lo; *name && i < n && strcmp(byname[i]->name, name) == 0; i++)
        if (best == NULL || !byname[i]->dead || best->dead)
            best = byname[i];
    return best;
}

/* Linking every resume name to its code: a sort and a binary search each
 * (linear scans made an input with many codes and resumes hang). */
static void
link_resumes(const Dec *d, DrSnapshot *s)
{
    DrCode **byname = array(d, s->n_codes, sizeof(DrCode *));
    size_t n = 0;
    if (byname == NULL)
        return;
    for (size_t i = 0; i < s->n_codes; i++)
        if (s->codes[i].frame_id != UINT32_MAX)
            byname[n++] = &s->codes[i];
    qsort(byname, n, sizeof *byname, code_name_cmp);
    for (size_t r = 0; r < s->n_records; r++)
        for (size_t i = 0; i < s->records[r].n_resumes; i++)
            s->records[r].resumes[i].code = code_named(byname, n, s->records[r].resumes[i].name);
}

/* Out of memory: msg says where. */
static DrSnapshot *
no_memory(char *out, size_t cap, const char *msg)
{
    snprintf(out, cap, "%s", msg);
    return NULL;
}

DrSnapshot *
rd_decode(const uint8_t *image, const RdOrigin *r, char *msg, size_t cap)
{
    DrSnapshot *s = calloc(1, sizeof *s);
    DvArena *arena = calloc(1, sizeof *arena);
    if (s == NULL || arena == NULL) {
        free(s);
        free(arena);
        return no_memory(msg, cap, "out of memory");
    }
    s->priv = arena;
    Dec d = {image, (const DtHeader *)image, arena};
    decode_process(&d, r, &s->process);
    decode_codes(&d, s);
    decode_entries(&d, s);
    link_codes(&d, s);
    link_tree_tests(s);
    link_resumes(&d, s);
    decode_events(&d, s);
    dedup_breaks(&d, s);
    if (arena->failed) {
        dr_snapshot_free(s);
        return no_memory(msg, cap, "out of memory decoding the snapshot");
    }
    return s;
}

void
dr_snapshot_free(DrSnapshot *s)
{
    if (s == NULL)
        return;
    DvArena *a = s->priv;
    if (a != NULL) {
        dv_arena_free(a);
        free(a);
    }
    free(s);
}

DrCode *
dr_find_code(DrSnapshot *s, uint32_t frame_id)
{
    for (size_t i = 0; i < s->n_codes; i++)
        if (s->codes[i].frame_id == frame_id)
            return &s->codes[i];
    return NULL;
}

DrEntry *
dr_find_entry(DrSnapshot *s, uint32_t frame_id, uint32_t compile_id)
{
    for (size_t i = 0; i < s->n_entries; i++)
        if (s->entries[i].frame_id == frame_id && s->entries[i].compile_id == compile_id)
            return &s->entries[i];
    return NULL;
}

const char *
dr_resume_kind_label(DtResumeKind kind, const char *name)
{
    const char *label = dt_resume_kind_label(kind);
    return label != NULL ? label : *name ? name : "?";
}
