/* main.c — dynamo-dot: Graphviz pictures of what dynamo captured in a
 * process (by pid) or in a snapshot file: fx graphs, guard decision trees,
 * graph-break maps, and a --list index of the ids to ask for.
 *
 * Owns the command line, the DrReader/DrSnapshot of the run and the error
 * convention of the tool: one line "dynamo-dot: <message>" on stderr and an
 * exit status (0 ok, 1 output or render failure, 2 usage: bad option,
 * unknown id or format; reader failures use dr_exit_code: 3 no such
 * process, 4 no dynamo in it, 5 permission, 6 version, 7 corrupt).
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
#include "vstr.h"

#define EXIT_RENDER 1
#define EXIT_USAGE 2

static const char USAGE[] =
    "usage: dynamo-dot (-p PID | --file SNAPSHOT) [--list] [--graph ID | --guards FRAME |\n"
    "                  --breaks FRAME] [-T dot|svg|png|pdf|...] [-o FILE]\n"
    "\n"
    "Draws what dynamo captured in a running process or a snapshot file\n"
    "(dynamo.save_snapshot) with Graphviz.\n"
    "\n"
    "  -p, --pid PID        read the live process PID\n"
    "  -f, --file SNAPSHOT  read a snapshot file\n"
    "  -l, --list           list frames, compiles [F/C], graphs, breaks and resume\n"
    "                       functions with the ids to pass on (the default)\n"
    "  -g, --graph ID       an fx graph: F/C, [F/C], F/C:i or __compiled_fn_N\n"
    "      --guards FRAME   the guard decision tree of frame FRAME (number or name)\n"
    "      --breaks FRAME   the graph-break map of frame FRAME and its resume functions\n"
    "  -T FORMAT            output format (default dot = graph source without layout;\n"
    "                       svg, png, pdf and every other Graphviz format are laid out)\n"
    "  -o, --output FILE    write to FILE instead of stdout\n"
    "  -h, --help           this text\n"
    "\n"
    "Exit status: 0 ok, 1 output/render failure, 2 usage (bad option, unknown id or\n"
    "format), 3 no such process, 4 no dynamo telemetry in it, 5 permission denied,\n"
    "6 telemetry version mismatch, 7 corrupt snapshot.\n";

typedef enum { WHAT_LIST, WHAT_GRAPH, WHAT_GUARDS, WHAT_BREAKS } What;

typedef struct {
    const char *pid_text;   /* borrowed from argv, NULL if --file */
    const char *file;       /* borrowed from argv, NULL if --pid */
    What what;
    const char *id;         /* borrowed: the argument of --graph/--guards/--breaks */
    const char *format;     /* borrowed */
    const char *output;     /* borrowed; NULL = stdout */
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
        die(EXIT_USAGE, "give at most one of --list, --graph, --guards, --breaks");
    o->what = what;
    o->id = id;
}

static Options parse_args(int argc, char **argv)
{
    enum { OPT_GUARDS = 256, OPT_BREAKS };
    static const struct option LONG[] = {
        {"pid", required_argument, NULL, 'p'},     {"file", required_argument, NULL, 'f'},
        {"list", no_argument, NULL, 'l'},          {"graph", required_argument, NULL, 'g'},
        {"guards", required_argument, NULL, OPT_GUARDS},
        {"breaks", required_argument, NULL, OPT_BREAKS},
        {"format", required_argument, NULL, 'T'},  {"output", required_argument, NULL, 'o'},
        {"help", no_argument, NULL, 'h'},          {NULL, 0, NULL, 0},
    };
    Options o = {NULL, NULL, WHAT_LIST, NULL, "dot", NULL};
    int listed = 0, c;
    opterr = 0;
    while ((c = getopt_long(argc, argv, ":p:f:lg:T:o:h", LONG, NULL)) != -1) {
        switch (c) {
        case 'p': o.pid_text = optarg; break;
        case 'f': o.file = optarg; break;
        case 'l': listed++; break;
        case 'g': set_what(&o, WHAT_GRAPH, optarg); break;
        case OPT_GUARDS: set_what(&o, WHAT_GUARDS, optarg); break;
        case OPT_BREAKS: set_what(&o, WHAT_BREAKS, optarg); break;
        case 'T': o.format = optarg; break;
        case 'o': o.output = optarg; break;
        case 'h': fputs(USAGE, stdout); exit(0);
        case ':': die(EXIT_USAGE, "option %s needs an argument (see --help)", argv[optind - 1]);
        default: die(EXIT_USAGE, "unknown option %s (see --help)", argv[optind - 1]);
        }
    }
    if (optind < argc)
        die(EXIT_USAGE, "unexpected argument '%s' (see --help)", argv[optind]);
    if ((o.pid_text == NULL) == (o.file == NULL))
        die(EXIT_USAGE, "give exactly one of -p PID and --file SNAPSHOT (see --help)");
    if (listed && o.what != WHAT_LIST)
        die(EXIT_USAGE, "give at most one of --list, --graph, --guards, --breaks");
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

/* The picture the options ask for; exits on an unknown id. */
static Agraph_t *draw(DrSnapshot *s, const Options *o)
{
    VStr err;
    DrRecord *rec;
    DrGraph *graph;
    DrCode *code;
    Agraph_t *g = NULL;
    vs_init(&err);
    switch (o->what) {
    case WHAT_GRAPH:
        if (vsel_graph(s, o->id, &rec, &graph, &err) == 0)
            g = vgraph_draw(rec, graph);
        break;
    case WHAT_GUARDS:
        if (vsel_frame(s, o->id, 1, &code, &err) == 0)
            g = vtree_draw(s, code);
        break;
    case WHAT_BREAKS:
        if (vsel_frame(s, o->id, 0, &code, &err) == 0)
            g = vbreaks_draw(s, code);
        break;
    case WHAT_LIST:
        break;
    }
    if (g == NULL)
        die(EXIT_USAGE, "%s", err.s);
    vs_free(&err);
    return g;
}

static void write_list(DrSnapshot *s, const char *path)
{
    FILE *out = path && strcmp(path, "-") != 0 ? fopen(path, "w") : stdout;
    if (out == NULL)
        die(EXIT_RENDER, "cannot write %s: %s", path, strerror(errno));
    if (vlist_print(out, s) != 0 || (out != stdout && fclose(out) != 0))
        die(EXIT_RENDER, "cannot write %s: %s", out == stdout ? "stdout" : path, strerror(errno));
}

int main(int argc, char **argv)
{
    Options o = parse_args(argc, argv);
    DrStatus st;
    VStr formats;
    if (o.what != WHAT_LIST && !vgv_format_ok(o.format, &formats))
        die(EXIT_USAGE, "Graphviz cannot render format '%s'; formats: %s", o.format, formats.s);
    if (o.what != WHAT_LIST)
        vs_free(&formats);
    DrReader *r = o.file ? dr_open_file(o.file, &st) : dr_open_pid(parse_pid(o.pid_text), 0, &st);
    if (r == NULL)
        die_reader(&st);
    DrSnapshot *s = dr_snapshot(r, &st);
    if (s == NULL)
        die_reader(&st);
    if (o.what == WHAT_LIST) {
        write_list(s, o.output);
    } else {
        Agraph_t *g = draw(s, &o);
        VStr err;
        vs_init(&err);
        if (vgv_render(g, o.format, o.output, &err) != 0)
            die(EXIT_RENDER, "%s", err.s);
        vs_free(&err);
        agclose(g);
    }
    dr_snapshot_free(s);
    dr_close(r);
    return 0;
}
