/* main.c — dynamo-dot: Graphviz pictures of what dynamo captured in a
 * process (by pid) or in a snapshot file: fx graphs, guard decision trees,
 * graph-break maps, a --list index of the ids to ask for,
 * --list-processes (the processes that have dynamo, through dr_list), and
 * --timeline (compiles over time, from a run record or a process's event
 * ring: timeline.c, written as SVG or HTML without Graphviz).
 *
 * Owns the command line, the DrReader/DrSnapshot of the run and the error
 * convention of the tool: one line "dynamo-dot: <message>" on stderr and an
 * exit status (0 ok, 1 output or render failure, 2 usage: bad option,
 * unknown id or format; reader failures use dr_exit_code: 3 no such
 * process, 4 no dynamo in it, 5 permission, 6 version, 7 corrupt, 8 foreign
 * shm file).
 */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>      /* errno */
#include <getopt.h>     /* getopt_long */
#include <stdarg.h>     /* va_list */
#include <stdio.h>      /* fprintf */
#include <stdlib.h>     /* strtol, exit */
#include <string.h>     /* strcmp */

#include "breaks.h"
#include "graph.h"
#include "gtree.h"
#include "gv.h"
#include "list.h"
#include "reader.h"
#include "select.h"
#include "timeline.h"
#include "vstr.h"

#define EXIT_RENDER 1
#define EXIT_USAGE 2

static const char USAGE[] =
    "usage: dynamo-dot (-p PID | --file SNAPSHOT) [--list] [--graph ID | --guards FRAME |\n"
    "                  --breaks FRAME] [-T dot|svg|png|pdf|...] [-o FILE]\n"
    "       dynamo-dot --timeline (RECORD | -p PID | --file SNAPSHOT) [-T svg|html] [-o FILE]\n"
    "       dynamo-dot --list-processes\n"
    "\n"
    "Draws what dynamo captured in a running process or a snapshot file\n"
    "(dynamo.save_snapshot) with Graphviz.\n"
    "\n"
    "  -p, --pid PID        read the live process PID\n"
    "  -f, --file SNAPSHOT  read a snapshot file\n"
    "  -l, --list           list frames, compiles [F/C], graphs, breaks and resume\n"
    "                       functions with the ids to pass on (the default)\n"
    "  -P, --list-processes list the running processes that have dynamo (pid, frames,\n"
    "                       compiles, command line) and exit\n"
    "  -g, --graph ID       an fx graph: F/C, [F/C], F/C:i or __compiled_fn_N\n"
    "      --guards FRAME   the guard decision tree of frame FRAME (number or name)\n"
    "      --breaks FRAME   the graph-break map of frame FRAME and its resume functions\n"
    "      --timeline       compiles and recompiles over time, one row per frame, from\n"
    "                       the run record RECORD (dynamo-top --record, DYNAMO_TRACE) or\n"
    "                       from the events a process or snapshot still holds; -T svg\n"
    "                       (default) or html (a self-contained page)\n"
    "  -T FORMAT            output format (default dot = graph source without layout;\n"
    "                       svg, png, pdf and every other Graphviz format are laid out)\n"
    "  -o, --output FILE    write to FILE instead of stdout\n"
    "  -h, --help           this text\n"
    "\n"
    "Exit status: 0 ok, 1 output/render failure, 2 usage (bad option, unknown id or\n"
    "format), 3 no such process, 4 no dynamo telemetry in it, 5 permission denied,\n"
    "6 telemetry or record version mismatch, 7 corrupt snapshot or record, 8 the pid's /dev/shm file is\n"
    "not that process's (planted or stale): refused.\n";

typedef enum { WHAT_LIST, WHAT_GRAPH, WHAT_GUARDS, WHAT_BREAKS, WHAT_PROCESSES, WHAT_TIMELINE } What;

typedef struct {
    const char *pid_text;   /* borrowed from argv, NULL if --file */
    const char *file;       /* borrowed from argv, NULL if --pid */
    What what;
    const char *id;         /* borrowed: the argument of --graph/--guards/--breaks */
    const char *format;     /* borrowed */
    const char *output;     /* borrowed; NULL = stdout */
    const char *record;     /* borrowed: --timeline's run record, NULL: -p / --file */
} Options;

static void die(int status, const char *fmt, ...) __attribute__((format(printf, 2, 3), noreturn));

/* Prints "dynamo-dot: <message>" and exits with `status`. */
static void die(int status, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fputs("dynamo-dot: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    exit(status);
}

static void die_reader(const DrStatus *st)
{
    die(dr_exit_code(st->code), "%s", *st->msg ? st->msg : dr_strerror(st->code));
}

static void set_what(Options *o, What what, const char *id)
{
    if (o->what != WHAT_LIST)                  /* a second selection? */
        die(EXIT_USAGE, "give at most one of --list, --list-processes, --graph, --guards, "
            "--breaks, --timeline");
    o->what = what;
    o->id = id;
}

static Options parse_args(int argc, char **argv)
{
    enum { OPT_GUARDS = 256, OPT_BREAKS, OPT_TIMELINE };
    static const struct option LONG[] = {
        {"pid", required_argument, NULL, 'p'},     {"file", required_argument, NULL, 'f'},
        {"list", no_argument, NULL, 'l'},          {"graph", required_argument, NULL, 'g'},
        {"list-processes", no_argument, NULL, 'P'},
        {"guards", required_argument, NULL, OPT_GUARDS},
        {"breaks", required_argument, NULL, OPT_BREAKS},
        {"timeline", no_argument, NULL, OPT_TIMELINE},
        {"format", required_argument, NULL, 'T'},  {"output", required_argument, NULL, 'o'},
        {"help", no_argument, NULL, 'h'},          {NULL, 0, NULL, 0},
    };
    Options o = {NULL, NULL, WHAT_LIST, NULL, NULL, NULL, NULL};
    int listed = 0, c;
    opterr = 0;
    while ((c = getopt_long(argc, argv, ":p:f:lPg:T:o:h", LONG, NULL)) != -1) {
        switch (c) {
        case 'p': o.pid_text = optarg; break;
        case 'f': o.file = optarg; break;
        case 'l': listed++; break;
        case 'P': set_what(&o, WHAT_PROCESSES, NULL); break;
        case 'g': set_what(&o, WHAT_GRAPH, optarg); break;
        case OPT_GUARDS: set_what(&o, WHAT_GUARDS, optarg); break;
        case OPT_BREAKS: set_what(&o, WHAT_BREAKS, optarg); break;
        case OPT_TIMELINE: set_what(&o, WHAT_TIMELINE, NULL); break;
        case 'T': o.format = optarg; break;
        case 'o': o.output = optarg; break;
        case 'h': fputs(USAGE, stdout); exit(0);
        case ':': die(EXIT_USAGE, "option %s needs an argument (see --help)", argv[optind - 1]);
        default: die(EXIT_USAGE, "unknown option %s (see --help)", argv[optind - 1]);
        }
    }
    if (o.what == WHAT_TIMELINE && optind + 1 == argc)     /* --timeline RECORD */
        o.record = argv[optind++];
    if (optind < argc)
        die(EXIT_USAGE, "unexpected argument '%s' (see --help)", argv[optind]);
    if (o.format == NULL)
        o.format = o.what == WHAT_TIMELINE ? "svg" : "dot";
    if (o.what == WHAT_TIMELINE) {
        if (strcmp(o.format, "svg") != 0 && strcmp(o.format, "html") != 0)
            die(EXIT_USAGE, "--timeline writes -T svg or -T html, not '%s'", o.format);
        if ((o.record != NULL) + (o.pid_text != NULL) + (o.file != NULL) != 1 || listed)
            die(EXIT_USAGE, "--timeline takes exactly one of RECORD, -p PID and --file SNAPSHOT "
                "(see --help)");
        return o;
    }
    if (o.what == WHAT_PROCESSES) {
        if (o.pid_text != NULL || o.file != NULL || listed)
            die(EXIT_USAGE, "--list-processes takes no -p, --file or --list");
        return o;
    }
    if ((o.pid_text == NULL) == (o.file == NULL))
        die(EXIT_USAGE, "give exactly one of -p PID and --file SNAPSHOT (see --help)");
    if (listed && o.what != WHAT_LIST)
        die(EXIT_USAGE, "give at most one of --list, --list-processes, --graph, --guards, "
            "--breaks, --timeline");
    return o;
}

static pid_t parse_pid(const char *text)
{
    char *end;
    long v = strtol(text, &end, 10);
    if (*text == '\0' || *end != '\0' || v <= 0 || v > 0x3fffffff)
        die(EXIT_USAGE, "bad pid '%s': expected a positive number", text);
    return (pid_t)v;
}

/* The picture the options ask for, or NULL with the message (unknown id)
 * in *err. */
static Agraph_t *draw(DrSnapshot *s, const Options *o, StrBuf *err)
{
    DrRecord *rec;
    DrGraph *graph;
    DrCode *code;
    switch (o->what) {
    case WHAT_GRAPH:
        return vsel_graph(s, o->id, &rec, &graph, err) == 0 ? vgraph_draw(rec, graph) : NULL;
    case WHAT_GUARDS:
        return vsel_frame(s, o->id, 1, &code, err) == 0 ? vtree_draw(s, code) : NULL;
    case WHAT_BREAKS:
        return vsel_frame(s, o->id, 0, &code, err) == 0 ? vbreaks_draw(code) : NULL;
    case WHAT_LIST:
    case WHAT_PROCESSES:
    case WHAT_TIMELINE:
        break;
    }
    sb_add(err, "nothing to draw");
    return NULL;
}

static void write_list(DrSnapshot *s, const char *path)
{
    FILE *out = path && strcmp(path, "-") != 0 ? fopen(path, "w") : stdout;
    if (out == NULL)
        die(EXIT_RENDER, "cannot write %s: %s", path, strerror(errno));
    if (vlist_print(out, s) != 0 || (out != stdout && fclose(out) != 0))
        die(EXIT_RENDER, "cannot write %s: %s", out == stdout ? "stdout" : path, strerror(errno));
}

/* --list-processes: one line per process dr_list finds (after removing
 * the files the caller's dead processes left: dr_remove_stale); 0, or
 * exits. */
static int list_processes(const char *path)
{
    pid_t *pids;
    size_t n, removed;
    DrStatus st;
    if (dr_remove_stale(&removed, &st) != 0 || dr_list(&pids, &n, &st) != 0)
        die_reader(&st);
    FILE *out = path && strcmp(path, "-") != 0 ? fopen(path, "w") : stdout;
    if (out == NULL)
        die(EXIT_RENDER, "cannot write %s: %s", path, strerror(errno));
    for (size_t i = 0; i < n; i++) {
        DrReader *r = dr_open_pid(pids[i], 0, &st);
        DrSnapshot *s = r != NULL ? dr_snapshot(r, &st) : NULL;
        if (s != NULL) {
            fprintf(out, "pid %d  %zu frame%s  %zu compile%s  telemetry v%u  ", pids[i],
                    s->n_codes, s->n_codes == 1 ? "" : "s", s->n_records,
                    s->n_records == 1 ? "" : "s", s->process.version);
            fput_escaped(out, s->process.argv, STR_LINE);   /* another process's text */
            fputc('\n', out);
        }
        else
            fprintf(out, "pid %d  (%s)\n", pids[i], st.msg);
        dr_snapshot_free(s);
        dr_close(r);
    }
    if (n == 0)
        fputs("no running process has dynamo loaded\n", out);
    if (removed)
        fprintf(out, "removed %zu telemetry file%s of your exited processes from /dev/shm\n",
                removed, removed == 1 ? "" : "s");
    free(pids);
    if (fflush(out) != 0 || ferror(out) || (out != stdout && fclose(out) != 0))
        die(EXIT_RENDER, "cannot write %s: %s", out == stdout ? "stdout" : path, strerror(errno));
    return 0;
}

/* --timeline: the record (read whole, or made from one snapshot of the
 * process) drawn to o->output; 0, or exits. */
static int timeline(const Options *o)
{
    DrTrace t;
    DrStatus st;
    if (o->record != NULL) {
        if (dr_trace_load(o->record, &t, &st) != 0)
            die_reader(&st);
    } else {
        DrReader *r = o->file ? dr_open_file(o->file, &st)
                              : dr_open_pid(parse_pid(o->pid_text), 0, &st);
        DrSnapshot *s = r != NULL ? dr_snapshot(r, &st) : NULL;
        if (s == NULL)
            die_reader(&st);
        dr_trace_init(&t);
        dr_trace_poll(&t, s, dr_source(r));
        dr_snapshot_free(s);
        dr_close(r);
    }
    const char *path = o->output && strcmp(o->output, "-") != 0 ? o->output : NULL;
    FILE *out = path ? fopen(path, "w") : stdout;
    if (out == NULL)
        die(EXIT_RENDER, "cannot write %s: %s", path, strerror(errno));
    int rc = vtimeline_write(out, &t, strcmp(o->format, "html") == 0 ? VTL_HTML : VTL_SVG);
    if (rc != 0 || fflush(out) != 0 || (path && fclose(out) != 0))
        die(EXIT_RENDER, "cannot write %s: %s", path ? path : "stdout", strerror(errno));
    dr_trace_free(&t);
    return 0;
}

int main(int argc, char **argv)
{
    Options o = parse_args(argc, argv);
    DrStatus st;
    StrBuf formats;
    if (o.what == WHAT_PROCESSES)
        return list_processes(o.output);
    if (o.what == WHAT_TIMELINE)
        return timeline(&o);
    if (o.what != WHAT_LIST && !vgv_format_ok(o.format, &formats))
        die(EXIT_USAGE, "Graphviz cannot render format '%s'; formats: %s", o.format, formats.s);
    if (o.what != WHAT_LIST)
        sb_free(&formats);
    DrReader *r = o.file ? dr_open_file(o.file, &st) : dr_open_pid(parse_pid(o.pid_text), 0, &st);
    if (r == NULL)
        die_reader(&st);
    DrSnapshot *s = dr_snapshot(r, &st);
    if (s == NULL)
        die_reader(&st);
    int status = 0;
    if (o.what == WHAT_LIST) {
        write_list(s, o.output);
    } else {
        StrBuf err;
        vs_init(&err);
        Agraph_t *g = draw(s, &o, &err);
        if (g == NULL) {                /* unknown id: free everything, then report */
            fprintf(stderr, "dynamo-dot: %s\n", err.s);
            status = EXIT_USAGE;
        } else {
            if (vgv_render(g, o.format, o.output, &err) != 0)
                die(EXIT_RENDER, "%s", err.s);
            agclose(g);
        }
        sb_free(&err);
    }
    dr_snapshot_free(s);
    dr_close(r);
    return status;
}
