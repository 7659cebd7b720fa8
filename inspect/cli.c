/* inspect/cli.c — dynamo-inspect: a small command-line reader of dynamo
 * telemetry, for tests, diagnostics and scripts.
 *
 *   dynamo-inspect -p PID [--dump] [--anchor | --shm-only]   JSON of a snapshot
 *   dynamo-inspect --file FILE [--dump]                      same, from a snapshot file
 *   dynamo-inspect -p PID --save FILE                        write a snapshot file
 *   dynamo-inspect -p PID --diagnose                         check both channels
 *   dynamo-inspect ... --summary                             one line per frame
 *   dynamo-inspect -p PID --wait-exit SECS                   poll until the process
 *                                  exits (or SECS pass), then dump the last state
 *   dynamo-inspect --list                                    pids of the processes
 *                                  with dynamo (dr_list), one per line
 *
 * Owns only argument parsing and printing; all reading is the reader
 * library's, all escaping of the snapshot's strings strutil's.  Errors: the reader's message on stderr, exit status
 * dr_exit_code() (usage: 2).
 */
#include <stdio.h>      /* printf */
#include <stdlib.h>     /* strtol */
#include <string.h>     /* strcmp */
#include <time.h>       /* nanosleep */

#include "reader.h"
#include "strutil.h"    /* fput_escaped: every string of a snapshot is escaped */

static void
usage(void)
{
    fprintf(stderr,
            "usage: dynamo-inspect (-p PID [--anchor|--shm-only] | --file FILE)\n"
            "                      [--dump | --summary | --save FILE | --diagnose | --wait-exit SECS]\n"
            "       dynamo-inspect --list\n");
    exit(2);
}

/* ---- JSON output -------------------------------------------------------------- */

/* A JSON string of text from the region or snapshot: escaped by the shared
 * walker (controls, invalid UTF-8 and bidi overrides never go out raw). */
static void
jstr(const char *s)
{
    putchar('"');
    fput_escaped(stdout, s, STR_JSON);
    putchar('"');
}

static void
key(const char *k, int first)
{
    if (!first)
        putchar(',');
    jstr(k);
    putchar(':');
}

static void kstr(const char *k, const char *v) { key(k, 0); jstr(v); }
static void kint(const char *k, long long v) { key(k, 0); printf("%lld", v); }
static void kuint(const char *k, unsigned long long v) { key(k, 0); printf("%llu", v); }

static void
strlist(const char *k, const char **items, size_t n)
{
    key(k, 0);
    putchar('[');
    for (size_t i = 0; i < n; i++) {
        if (i)
            putchar(',');
        jstr(items[i]);
    }
    putchar(']');
}

static void
dump_break(const DrBreak *b)
{
    printf("{");
    key("reason", 1);
    jstr(b->reason);
    kstr("filename", b->filename);
    kuint("lineno", b->lineno);
    kuint("count", b->count);
    kstr("first_record", b->first_record);
    kstr("kind", b->kind);
    kstr("meaning", b->meaning);
    kstr("hint", b->hint);
    kuint("calls", b->calls);
    kuint("samples", b->samples);
    kuint("sampled_ns", b->sampled_ns);
    kuint("max_ns", b->max_ns);
    kuint("est_ns", b->est_ns);
    key("user_stack", 0);
    putchar('[');
    for (size_t i = 0; i < b->n_frames; i++) {
        const DrFrame *f = &b->user_stack[i];
        printf("%s{", i ? "," : "");
        key("filename", 1);
        jstr(f->filename);
        kuint("lineno", f->lineno);
        kstr("name", f->name);
        kstr("line", f->line);
        putchar('}');
    }
    printf("]}");
}

static void
dump_record(const DrRecord *r)
{
    printf("{");
    key("id", 1);
    jstr(r->id);
    kstr("status", r->status_name);
    kstr("backend", r->backend);
    kstr("name", r->name);
    kstr("filename", r->filename);
    kuint("firstlineno", r->firstlineno);
    kuint("compile_ns", r->compile_ns);
    kuint("backend_ns", r->backend_ns);
    kuint("op_count", r->op_count);
    kstr("recompile_reason", r->recompile_reason);
    kstr("error", r->error);
    kstr("context", r->context);
    kstr("original_bytecode", r->original_bytecode);
    kstr("modified_bytecode", r->modified_bytecode);
    key("entry", 0);
    if (r->entry != NULL) {
        const DrEntry *e = r->entry;
        printf("{");
        key("slot", 1);
        printf("%u", e->slot);
        kint("dead", e->dead);
        kuint("hits", e->hits);
        kuint("guard_failures", e->guard_failures);
        kint("last_fail_guard", e->last_fail_guard);
        kstr("last_fail_property", e->last_fail_property);
        kstr("last_fail_expected", e->last_fail_expected);
        kstr("last_fail_actual", e->last_fail_actual);
        kuint("hit_timed", e->hit_timed);
        kuint("hit_ns", e->hit_ns);
        putchar('}');
    }
    else
        fputs("null", stdout);
    key("graphs", 0);
    putchar('[');
    for (size_t i = 0; i < r->n_graphs; i++) {
        const DrGraph *g = &r->graphs[i];
        printf("%s{", i ? "," : "");
        key("name", 1);
        jstr(g->name);
        kuint("op_count", g->op_count);
        kstr("backend_note", g->backend_note);
        key("nodes", 0);
        putchar('[');
        for (size_t k = 0; k < g->n_nodes; k++) {
            const DrNode *n = &g->nodes[k];
            printf("%s{", k ? "," : "");
            key("op", 1);
            jstr(n->op);
            kstr("name", n->name);
            kstr("target", n->target);
            kstr("args", n->args);
            kstr("dtype", n->dtype);
            kstr("shape", n->shape);
            kstr("stride", n->stride);
            kstr("device", n->device);
            kstr("module_path", n->module_path);
            strlist("users", n->users, n->n_users);
            strlist("inputs", n->inputs, n->n_inputs);
            kstr("module_class", n->module_class);
            kuint("ddp_bucket", n->ddp_bucket);
            putchar('}');
        }
        putchar(']');
        key("ddp_buckets", 0);
        putchar('[');
        for (size_t k = 0; k < g->n_buckets; k++) {
            if (k)
                putchar(',');
            putchar('[');
            for (size_t p = 0; p < g->buckets[k].n_params; p++) {
                if (p)
                    putchar(',');
                jstr(g->buckets[k].params[p]);
            }
            putchar(']');
        }
        printf("]}");
    }
    putchar(']');
    key("guards", 0);
    putchar('[');
    for (size_t i = 0; i < r->n_guards; i++) {
        const DrGuard *g = &r->guards[i];
        printf("%s{", i ? "," : "");
        key("text", 1);
        jstr(g->text);
        kstr("kind", g->kind);
        kstr("source", g->source);
        kstr("detail", g->detail);
        kstr("origin", g->origin);
        kstr("origin_text", g->origin_text);
        kuint("fail_count", g->fail_count);
        kint("last_failed", g->last_failed);
        putchar('}');
    }
    putchar(']');
    key("breaks", 0);
    putchar('[');
    for (size_t i = 0; i < r->n_breaks; i++) {
        if (i)
            putchar(',');
        dump_break(&r->breaks[i]);
    }
    putchar(']');
    key("resumes", 0);
    putchar('[');
    for (size_t i = 0; i < r->n_resumes; i++) {
        const DrResume *res = &r->resumes[i];
        printf("%s{", i ? "," : "");
        key("name", 1);
        jstr(res->name);
        kuint("offset", res->offset);
        kstr("kind", res->kind_name);
        key("frame_id", 0);
        printf("%lld", res->code != NULL ? (long long)res->code->frame_id : -1LL);
        putchar('}');
    }
    printf("]}");
}

static void
dump_code(const DrCode *c)
{
    printf("{");
    key("frame_id", 1);
    printf("%lld", c->frame_id == UINT32_MAX ? -1LL : (long long)c->frame_id);
    kstr("name", c->name);
    kstr("filename", c->filename);
    kuint("firstlineno", c->firstlineno);
    kint("dead", c->dead);
    kint("limit_hit", c->limit_hit);
    kint("skipped", c->skipped);
    kuint("calls", c->calls);
    kuint("hits", c->hits);
    kuint("misses", c->misses);
    kuint("guard_failures", c->guard_failures);
    kuint("compiles", c->compiles);
    kuint("compile_ns", c->compile_ns);
    kuint("cache_size_limit", c->cache_size_limit);
    kuint("tree_counters_ns", c->tree.counters_ns);
    kuint("tree_counters_live", (unsigned long long)c->tree.live);
    kuint("lookup_timed", c->lookup_timed);
    kuint("lookup_ns", c->lookup_ns);
    key("entries", 0);
    putchar('[');
    for (size_t i = 0; i < c->n_entries; i++) {
        if (i)
            putchar(',');
        jstr(c->entries[i]->id);
    }
    putchar(']');
    key("records", 0);
    putchar('[');
    for (size_t i = 0; i < c->n_records; i++) {
        if (i)
            putchar(',');
        dump_record(c->records[i]);
    }
    putchar(']');
    key("tree", 0);
    putchar('[');
    for (size_t i = 0; i < c->tree.n_nodes; i++) {
        const DrTreeNode *n = &c->tree.nodes[i];
        printf("%s{", i ? "," : "");
        key("id", 1);
        printf("%lld", (long long)n->id);
        kint("parent", n->parent);
        kuint("depth", n->depth);
        kstr("via", n->via);
        strlist("tests", n->tests, n->n_tests);
        kstr("switch", n->switch_on);
        strlist("leaf", n->leaf, n->n_leaf);
        kuint("evaluations", n->evaluations);
        kuint("failures", n->failures);
        kuint("timed", n->timed);
        kuint("timed_ns", n->timed_ns);
        putchar('}');
    }
    putchar(']');
    key("tree_tests", 0);               /* the test slots (DrTreeTest), walk order */
    putchar('[');
    for (size_t i = 0; i < c->tree.n_tests; i++) {
        const DrTreeTest *t = &c->tree.tests[i];
        printf("%s{", i ? "," : "");
        key("node", 1);
        printf("%lld", (long long)t->node);
        kstr("test", t->text);
        kstr("source", t->source);
        kstr("entry", t->entry);
        kint("guard", t->guard_index);
        kstr("origin", t->guard ? t->guard->origin : "");
        kuint("timed", t->timed);
        kuint("timed_ns", t->timed_ns);
        kuint("max_ns", t->max_ns);
        putchar('}');
    }
    printf("]}");
}

static void
dump(const DrSnapshot *s, const char *source)
{
    const DrProcess *p = &s->process;
    printf("{");
    key("process", 1);
    printf("{");
    key("pid", 1);
    printf("%d", p->pid);
    kint("exited", p->exited);
    kint("from_file", p->from_file);
    kint("anonymous", p->anonymous);
    kuint("version", p->version);
    kuint("start_ns", p->start_ns);
    kuint("snapshot_ns", p->snapshot_ns);
    kuint("exit_ns", p->exit_ns);
    kstr("python_version", p->python_version);
    kstr("torch_version", p->torch_version);
    kstr("dynamo_version", p->dynamo_version);
    kstr("argv", p->argv);
    kstr("shm_path", p->shm_path);
    kstr("source", source);
    kuint("publishes", p->publishes);
    kuint("guard_timing", p->guard_timing);
    kuint("blobs_dropped", p->blobs_dropped);
    kuint("blob_used", p->blob_used);
    printf("}");
    kuint("total_calls", s->total_calls);
    kuint("total_hits", s->total_hits);
    kuint("total_misses", s->total_misses);
    key("frames", 0);
    putchar('[');
    for (size_t i = 0; i < s->n_codes; i++) {
        if (i)
            putchar(',');
        dump_code(&s->codes[i]);
    }
    putchar(']');
    key("events", 0);
    putchar('[');
    for (size_t i = 0; i < s->n_events; i++) {
        const DrEvent *e = &s->events[i];
        printf("%s{", i ? "," : "");
        key("seq", 1);
        printf("%llu", (unsigned long long)e->seq);
        kuint("time_ns", e->time_ns);
        kstr("kind", e->kind_name);
        kstr("id", e->id);
        kstr("text", e->text);
        kstr("where", e->where);
        kint("guard_index", e->guard_index);
        kstr("property", e->property);
        kstr("expected", e->expected);
        kstr("actual", e->actual);
        putchar('}');
    }
    putchar(']');
    key("breaks", 0);
    putchar('[');
    for (size_t i = 0; i < s->n_breaks; i++) {
        if (i)
            putchar(',');
        dump_break(&s->breaks[i]);
    }
    printf("]}\n");
}

static void
summary(const DrSnapshot *s)
{
    const DrProcess *p = &s->process;
    printf("pid %d python ", p->pid);
    fput_escaped(stdout, p->python_version, STR_LINE);
    fputs(" torch ", stdout);
    fput_escaped(stdout, p->torch_version, STR_LINE);
    printf("%s: %zu frames, %zu entries, %zu events\n", p->exited ? " EXITED" : "", s->n_codes,
           s->n_entries, s->n_events);
    for (size_t i = 0; i < s->n_codes; i++) {
        const DrCode *c = &s->codes[i];
        printf("  [%u] ", c->frame_id);
        fput_escaped(stdout, c->name, STR_LINE);
        putchar(' ');
        fput_escaped(stdout, c->filename, STR_LINE);
        printf(":%u calls %llu hits %llu misses %llu entries %zu\n", c->firstlineno,
               (unsigned long long)c->calls, (unsigned long long)c->hits,
               (unsigned long long)c->misses, c->n_entries);
    }
}

int
main(int argc, char **argv)
{
    const char *file = NULL, *save = NULL;
    long pid = 0;
    int flags = 0, diagnose = 0, want_summary = 0, list = 0;
    double wait_exit = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (strcmp(a, "-p") == 0 && i + 1 < argc) {
            char *end;
            pid = strtol(argv[++i], &end, 10);
            if (*end != '\0' || pid <= 0)
                usage();
        }
        else if (strcmp(a, "--file") == 0 && i + 1 < argc)
            file = argv[++i];
        else if (strcmp(a, "--save") == 0 && i + 1 < argc)
            save = argv[++i];
        else if (strcmp(a, "--wait-exit") == 0 && i + 1 < argc)
            wait_exit = strtod(argv[++i], NULL);
        else if (strcmp(a, "--dump") == 0)
            ;
        else if (strcmp(a, "--summary") == 0)
            want_summary = 1;
        else if (strcmp(a, "--diagnose") == 0)
            diagnose = 1;
        else if (strcmp(a, "--list") == 0)
            list = 1;
        else if (strcmp(a, "--anchor") == 0)
            flags |= DR_OPEN_ANCHOR_ONLY;
        else if (strcmp(a, "--shm-only") == 0)
            flags |= DR_OPEN_SHM_ONLY;
        else
            usage();
    }
    DrStatus st;
    if (list) {
        pid_t *pids;
        size_t n;
        if (file != NULL || pid != 0)
            usage();
        if (dr_list(&pids, &n, &st) < 0)
            goto fail;
        for (size_t i = 0; i < n; i++)
            printf("%d\n", (int)pids[i]);
        free(pids);
        return 0;
    }
    if ((file == NULL) == (pid == 0))
        usage();
    if (diagnose) {
        if (pid == 0)
            usage();
        if (dr_diagnose((pid_t)pid, stdout, &st) == 0)
            return 0;
        fprintf(stderr, "dynamo-inspect: %s\n", st.msg);
        return dr_exit_code(st.code);
    }
    DrReader *r = file != NULL ? dr_open_file(file, &st) : dr_open_pid((pid_t)pid, flags, &st);
    if (r == NULL)
        goto fail;
    if (save != NULL) {
        if (dr_save(r, save, &st) < 0)
            goto fail_close;
        fprintf(stderr, "dynamo-inspect: saved %s\n", save);
        dr_close(r);
        return 0;
    }
    DrSnapshot *s = dr_snapshot(r, &st);
    for (double waited = 0; s != NULL && !s->process.exited && waited < wait_exit; waited += 0.1) {
        struct timespec ts = {0, 100000000};
        nanosleep(&ts, NULL);
        dr_snapshot_free(s);
        s = dr_snapshot(r, &st);
    }
    if (s == NULL)
        goto fail_close;
    if (want_summary)
        summary(s);
    else
        dump(s, dr_source(r));
    dr_snapshot_free(s);
    dr_close(r);
    return 0;
fail_close:
    dr_close(r);
fail:
    fprintf(stderr, "dynamo-inspect: %s (%s)\n", st.msg[0] ? st.msg : dr_strerror(st.code),
            dr_strerror(st.code));
    return dr_exit_code(st.code);
}
