/* list.c — the --list text of dynamo-dot.
 *
 * Owns nothing; reads a snapshot and prints.  One line per frame, compile,
 * graph and break, each ending with the option that draws it, so a user can
 * copy it.
 */
#include "list.h"

#include <stdint.h>     /* UINT32_MAX */

#include "select.h"
#include "vstr.h"

static void print_process(FILE *out, const DrSnapshot *s)
{
    const DrProcess *p = &s->process;
    const char *state = p->from_file ? "snapshot file" : p->exited ? "exited" : "running";
    fprintf(out, "pid %d (%s)  %s\n", p->pid, state, p->argv);
    fprintf(out, "python %s  torch %s  dynamo %s  telemetry v%u\n", p->python_version,
            p->torch_version, p->dynamo_version, p->version);
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
        fprintf(out, "%s%s (%s @%u, ", i ? ", " : "  ->  ", res->name, dr_resume_kind_label(res->kind),
                res->offset);
        if (res->code != NULL)
            fprintf(out, "frame %u)", res->code->frame_id);
        else
            fputs("not run yet)", out);
    }
}

static void print_record(FILE *out, const DrRecord *rec)
{
    char t[32], id[48];
    fprintf(out, "  %s %s  %s  compile %s  %zu guards", rec->id, rec->status,
            *rec->backend ? rec->backend : "-", vs_fmt_ns(t, sizeof t, rec->compile_ns),
            rec->n_guards);
    if (rec->entry != NULL)
        fprintf(out, "  %llu hit%s%s", (unsigned long long)rec->entry->hits,
                rec->entry->hits == 1 ? "" : "s", rec->entry->dead ? "  (entry dropped)" : "");
    if (*rec->recompile_reason)
        fprintf(out, "  recompiled: %s", rec->recompile_reason);
    if (*rec->error)
        fprintf(out, "  error: %.120s", rec->error);
    fputc('\n', out);
    for (size_t i = 0; i < rec->n_graphs; i++) {
        const DrGraph *g = &rec->graphs[i];
        vsel_graph_id(rec, i, id, sizeof id);
        fprintf(out, "    graph %-6s %s  %zu nodes  %llu ops    --graph %s\n", id, g->name,
                g->n_nodes, (unsigned long long)g->op_count, id);
    }
    for (size_t i = 0; i < rec->n_breaks; i++) {
        const DrBreak *b = &rec->breaks[i];
        fprintf(out, "    break %s at %s:%u", b->reason, vs_basename(b->filename), b->lineno);
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
        fprintf(out, "\nframe %u  %s  %s:%u%s%s%s\n", code->frame_id, code->name,
                vs_basename(code->filename), code->firstlineno, code->dead ? "  (dead)" : "",
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
