/* readerfuzz/reader_fuzz.c — fuzz target for the telemetry reader and
 * the tool code that walks what it decodes.
 *
 * One input = the bytes of a snapshot file.  It is opened from memory
 * (dr_open_memory), decoded (dr_snapshot), every string and borrowed
 * pointer of the DrSnapshot is touched, and the same input goes through
 * dynamo-top's model and plain-text report (tui/source.c, report.c) and
 * dynamo-dot's listing (viz/list.c), the run recorder and the timeline
 * (inspect/trace.c's dr_trace_poll, viz/timeline.c).  Any input must end with a clean
 * error or a result: a crash, a sanitizer report or a hang is a bug.
 *
 * Two builds (readerfuzz/readerfuzz.mk):
 *   make fuzz-reader   clang -fsanitize=fuzzer,address,undefined: the
 *                      libFuzzer target (LLVMFuzzerTestOneInput), seeded
 *                      from real snapshots (build/fuzz/seeds).
 *   make fuzz-replay   gcc -fsanitize=address,undefined with main() below
 *                      (-DREPLAY_MAIN): runs each file named on the command
 *                      line through dr_open_file, then the same walk;
 *                      tests/test_reader_fuzz.py feeds it crafted inputs.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "reader.h"
#include "../tui/report.h"
#include "../tui/source.h"
#include "../viz/list.h"
#include "../viz/timeline.h"

static volatile size_t sink;    /* keeps the walks from being optimized away */

static void
touch(const char *s)
{
    sink += strlen(s);
}

static void
touch_strings(const char **v, size_t n)
{
    for (size_t i = 0; i < n; i++)
        touch(v[i]);
}

static void
walk_record(const DrRecord *r)
{
    touch(r->id); touch(r->status_name); touch(r->backend); touch(r->name); touch(r->filename);
    touch(r->recompile_reason); touch(r->error); touch(r->original_bytecode);
    touch(r->modified_bytecode);
    for (size_t g = 0; g < r->n_graphs; g++) {
        const DrGraph *gr = &r->graphs[g];
        touch(gr->name);
        for (size_t k = 0; k < gr->n_nodes; k++) {
            const DrNode *n = &gr->nodes[k];
            touch(n->op); touch(n->name); touch(n->target); touch(n->args); touch(n->dtype);
            touch(n->shape); touch(n->stride); touch(n->device); touch(n->module_path);
            touch(n->module_class);
            touch_strings(n->users, n->n_users);
            touch_strings(n->inputs, n->n_inputs);
            sink += n->ddp_bucket;
        }
        for (size_t b = 0; b < gr->n_buckets; b++)
            touch_strings(gr->buckets[b].params, gr->buckets[b].n_params);
    }
    for (size_t i = 0; i < r->n_guards; i++) {
        touch(r->guards[i].text); touch(r->guards[i].kind); touch(r->guards[i].source);
        touch(r->guards[i].detail);
        sink += r->guards[i].fail_count;
    }
    for (size_t i = 0; i < r->n_breaks; i++) {
        touch(r->breaks[i].reason); touch(r->breaks[i].filename);
        for (size_t k = 0; k < r->breaks[i].n_frames; k++) {
            touch(r->breaks[i].user_stack[k].filename); touch(r->breaks[i].user_stack[k].name);
            touch(r->breaks[i].user_stack[k].line);
        }
    }
    for (size_t i = 0; i < r->n_resumes; i++) {
        touch(r->resumes[i].name); touch(r->resumes[i].kind_name);
        if (r->resumes[i].code != NULL)
            touch(r->resumes[i].code->name);
    }
    if (r->entry != NULL)
        touch(r->entry->id);
    if (r->code != NULL)
        touch(r->code->name);
}

static void
walk(DrSnapshot *s)
{
    const DrProcess *p = &s->process;
    touch(p->python_version); touch(p->torch_version); touch(p->dynamo_version); touch(p->argv);
    touch(p->shm_path);
    for (size_t i = 0; i < s->n_codes; i++) {
        const DrCode *c = &s->codes[i];
        touch(c->name); touch(c->filename);
        for (size_t k = 0; k < c->n_entries; k++)
            touch(c->entries[k]->id);
        for (size_t k = 0; k < c->n_records; k++)
            touch(c->records[k]->id);
        for (size_t k = 0; k < c->tree.n_nodes; k++) {
            const DrTreeNode *t = &c->tree.nodes[k];
            touch(t->via); touch(t->switch_on);
            touch_strings(t->tests, t->n_tests);
            touch_strings(t->leaf, t->n_leaf);
            if (t->parent >= 0)
                sink += c->tree.nodes[t->parent].depth;
        }
        sink += dr_find_code(s, c->frame_id) != NULL;
    }
    for (size_t i = 0; i < s->n_entries; i++) {
        const DrEntry *e = &s->entries[i];
        touch(e->id); touch(e->last_fail_property); touch(e->last_fail_expected);
        touch(e->last_fail_actual);
        touch(e->record->id);
        if (e->code != NULL)
            touch(e->code->name);
        if (e->last_fail_guard >= 0 && (size_t)e->last_fail_guard < e->record->n_guards)
            touch(e->record->guards[e->last_fail_guard].text);
    }
    for (size_t i = 0; i < s->n_records; i++)
        walk_record(&s->records[i]);
    for (size_t i = 0; i < s->n_events; i++) {
        const DrEvent *ev = &s->events[i];
        touch(ev->kind_name); touch(ev->id); touch(ev->text); touch(ev->where);
        touch(ev->property); touch(ev->expected); touch(ev->actual);
        if (ev->code != NULL)
            touch(ev->code->name);
        if (ev->entry != NULL)
            touch(ev->entry->id);
    }
    for (size_t i = 0; i < s->n_breaks; i++) {
        touch(s->breaks[i].reason); touch(s->breaks[i].first_record);
    }
}

/* The reader, dynamo-dot's listing, and dynamo-top's model and report on
 * one open reader (consumed).  0 when decoded, -1 with *st otherwise. */
static int
run(DrReader *r, DrStatus *st)
{
    DrSnapshot *s = dr_snapshot(r, st);
    if (s == NULL) {
        dr_close(r);
        return -1;
    }
    walk(s);
    FILE *null = fopen("/dev/null", "w");
    if (null != NULL)
        vlist_print(null, s);
    DrTrace t;                          /* the recorder and the timeline over it */
    dr_trace_init(&t);
    dr_trace_poll(&t, s, "fuzz");
    dr_trace_poll(&t, s, "fuzz");       /* a second poll of the same state adds nothing */
    if (null != NULL) {
        dr_trace_write_header(null, &t);
        dr_trace_write_events(null, &t, 0);
        vtimeline_write(null, &t, VTL_HTML);
    }
    dr_trace_free(&t);
    dr_snapshot_free(s);
    Source *src = source_from_reader(r, 1);
    int exited = 0;
    Model *m = source_read(src, &exited, st);
    if (m != NULL) {
        if (null != NULL) {
            ReportOpts full = {.width = 160, .tab = TAB_COUNT, .top = 10};
            ReportOpts brief = {.width = 160, .tab = TAB_COUNT, .top = 3, .summary = 1};
            report_write(null, m, PS_SNAPSHOT, &full);
            report_write(null, m, PS_SNAPSHOT, &brief);
        }
        model_delete(m);
    }
    source_delete(src);
    if (null != NULL)
        fclose(null);
    return m != NULL ? 0 : -1;
}

#ifdef REPLAY_MAIN
/* Each file: "PATH: ok" or "PATH: error N: message"; exit 0 unless a file
 * could not be handled at all (a crash or sanitizer report exits non-0). */
int
main(int argc, char **argv)
{
    for (int i = 1; i < argc; i++) {
        DrStatus st;
        DrReader *r = dr_open_file(argv[i], &st);
        if (r != NULL && run(r, &st) == 0)
            printf("%s: ok\n", argv[i]);
        else
            printf("%s: error %d: %s\n", argv[i], dr_exit_code(st.code), st.msg);
        fflush(stdout);
    }
    return 0;
}
#else
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    DrStatus st;
    DrReader *r = dr_open_memory(data, size, "fuzz input", &st);
    if (r != NULL)
        run(r, &st);
    return 0;
}
#endif
