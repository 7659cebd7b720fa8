/* list.c — the --list text of dynamo-dot.
 *
 * Owns nothing; reads a snapshot and prints.  One line per frame, compile,
 * graph and break, each ending with the option that draws it, so a user can
 * copy it.  Every string of the snapshot goes out through put() (escaped:
 * it was written by the watched process).
 */
#include "list.h"

#include <stdint.h>     /* UINT32_MAX */

#include "select.h"
#include "vstr.h"

/* Text from the snapshot, escaped for a terminal (one line). */
static void put(FILE *out, const char *s)
{
    fput_escaped(out, s, STR_LINE);
}

static void print_process(FILE *out, const DrSnapshot *s)
{
    const DrProcess *p = &s->process;
    const char *state = p->from_file ? "snapshot file" : p->exited ? "exited" : "running";
    fprintf(out, "pid %d (%s)  ", p->pid, state);
    put(out, p->argv);
    fputs("\npython ", out);
    put(out, p->python_version);
    fputs("  torch ", out);
    put(out, p->torch_version);
    fputs("  dynamo ", out);
    put(out, p->dynamo_version);
    fprintf(out, "  telemetry v%u\n", p->version);
    if (p->blobs_dropped || p->slots_dropped)
        fprintf(out, "warning: the telemetry region was full: %llu blobs and %llu slots dropped\n",
                (unsigned long long)p->blobs_dropped, (unsigned long long)p->slots_dropped);
}

/* "->  __resume_at_102_0 (fall-through @102, frame 2), __resume_at_40_2
 * (after break @40, not run yet)" */
static void print_resumes(FILE *out, const DrRecord *rec)
{
    for (size_t i = 0; i < rec->n_resumes; i++) {
        const DrResume *res = &rec->resumes[i];
        fputs(i ? ", " : "  ->  ", out);
        put(out, res->name);
        fputs(" (", out);
        put(out, dr_resume_kind_label(res->kind, res->kind_name));
        fprintf(out, " @%u, ", res->offset);
        if (res->code != NULL)
            fprintf(out, "frame %u)", res->code->frame_id);
        else
            fputs("not run yet)", out);
    }
}

static void print_record(FILE *out, const DrRecord *rec)
{
    char t[32], id[48];
    fputs("  ", out);
    put(out, rec->id);
    fputc(' ', out);
    put(out, rec->status_name);
    fputs("  ", out);
    put(out, *rec->backend ? rec->backend : "-");
    fprintf(out, "  compile %s  %zu guards", vs_fmt_ns(t, sizeof t, rec->compile_ns), rec->n_guards);
    if (rec->entry != NULL)
        fprintf(out, "  %llu hit%s%s", (unsigned long long)rec->entry->hits,
                rec->entry->hits == 1 ? "" : "s", rec->entry->dead ? "  (entry dropped)" : "");
    if (*rec->recompile_reason) {
        fputs("  recompiled: ", out);
        put(out, rec->recompile_reason);
    }
    if (*rec->error) {
        StrBuf cut;                 /* the first 120 characters */
        sb_init(&cut);
        sb_add_escaped(&cut, rec->error, STR_LINE, 120);
        fprintf(out, "  error: %s", cut.s);
        sb_free(&cut);
    }
    fputc('\n', out);
    for (size_t i = 0; i < rec->n_graphs; i++) {
        const DrGraph *g = &rec->graphs[i];
        vsel_graph_id(rec, i, id, sizeof id);
        fprintf(out, "    graph %-6s ", id);
        put(out, g->name);
        fprintf(out, "  %zu nodes  %llu ops", g->n_nodes, (unsigned long long)g->op_count);
        if (g->n_buckets)
            fprintf(out, "  cut at DDP buckets: %zu pieces", g->n_buckets);
        fprintf(out, "    --graph %s\n", id);
        for (size_t k = 0; k < g->n_buckets; k++) {
            const DrBucket *bk = &g->buckets[k];
            fprintf(out, "      DDP bucket %zu: %zu param%s", k + 1, bk->n_params,
                    bk->n_params == 1 ? "" : "s");
            if (bk->n_params) {     /* the first and last parameter it holds */
                fputs(" (", out);
                put(out, bk->params[0]);
                if (bk->n_params > 1) {
                    fputs(" .. ", out);
                    put(out, bk->params[bk->n_params - 1]);
                }
                fputc(')', out);
            }
            fputc('\n', out);
        }
        if (*g->backend_note) {
            fputs("        ", out);
            put(out, g->backend_note);
            fputc('\n', out);
        }
    }
    for (size_t i = 0; i < rec->n_breaks; i++) {
        const DrBreak *b = &rec->breaks[i];
        fputs("    break ", out);
        put(out, *b->meaning ? b->meaning : b->reason);
        if (*b->meaning) {
            fputs(" (", out);
            put(out, b->reason);
            fputc(')', out);
        }
        fputs(" at ", out);
        put(out, vs_basename(b->filename));
        fprintf(out, ":%u", b->lineno);
        if (i + 1 == rec->n_breaks)
            print_resumes(out, rec);
        fputc('\n', out);
    }
}

int vlist_print(FILE *out, DrSnapshot *s)
{
    size_t shown = 0;
    print_process(out, s);
    for (size_t i = 0; i < s->n_codes; i++) {
        const DrCode *code = &s->codes[i];
        if (code->frame_id == UINT32_MAX)
            continue;
        fprintf(out, "\nframe %u  ", code->frame_id);
        put(out, code->name);
        fputs("  ", out);
        put(out, vs_basename(code->filename));
        fprintf(out, ":%u%s%s%s\n", code->firstlineno, code->dead ? "  (dead)" : "",
                code->limit_hit ? "  (cache limit hit)" : "", code->skipped ? "  (skipped)" : "");
        fprintf(out, "  calls %llu  hits %llu  misses %llu  compiles %llu    --breaks %u",
                (unsigned long long)code->calls, (unsigned long long)code->hits,
                (unsigned long long)code->misses, (unsigned long long)code->compiles,
                code->frame_id);
        if (code->tree.n_nodes)
            fprintf(out, "  --guards %u (%zu tree node%s)\n", code->frame_id,
                    code->tree.n_nodes, code->tree.n_nodes == 1 ? "" : "s");
        else
            fputs("  (no guard tree)\n", out);
        for (size_t r = 0; r < code->n_records; r++)
            print_record(out, code->records[r]);
        shown++;
    }
    if (shown == 0)
        fputs("\nno frame compiled yet\n", out);
    return fflush(out) == 0 && !ferror(out) ? 0 : -1;
}
