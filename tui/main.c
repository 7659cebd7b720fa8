/* main.c — dynamo-top: command line, modes and error reporting.
 *
 * Modes: list the processes with dynamo (no pid), one plain-text report
 * (--once), save a snapshot (--save), post-mortem view of a snapshot
 * (--file), and the interactive view (app.c).  Owns the mapping of reader
 * errors to messages and exit statuses: usage 2, and dr_exit_code() for
 * reader failures (no process 3, no dynamo 4, permission 5, version 6,
 * corrupt 7, foreign shm file 8, other 1).
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "app.h"
#include "crt.h"
#include "recorder.h"
#include "report.h"
#include "source.h"

#define EXIT_USAGE 2

static void usage(FILE *out)
{
    fputs("usage: dynamo-top [PID | -p PID | --file FILE] [options]\n"
          "\n"
          "Shows what dynamo (the PyTorch JIT) is doing inside a running Python process:\n"
          "compiled frames, cache entries, graphs, guards, graph breaks, recompiles.\n"
          "Without a pid or file, lists the live processes that have dynamo loaded.\n"
          "\n"
          "  -p, --pid PID        attach to process PID (or give PID as the argument)\n"
          "  -f, --file FILE      post-mortem view of a snapshot file (dynamo.save_snapshot,\n"
          "                       --save, or the s key)\n"
          "      --once           print one plain-text report and exit\n"
          "      --summary        with --once: only the top frames by compile time, cache\n"
          "                       misses, graph breaks and recompiles, and each frame's last\n"
          "                       recompile trigger (implies --once)\n"
          "      --top N          rows per --summary table (default 10)\n"
          "      --frame PATTERN  report only the frames whose name, file or label contains\n"
          "                       PATTERN (case-insensitive), with their events\n"
          "      --tab NAME       report only this tab per frame: graph, bytecode, guards,\n"
          "                       breaks, recompiles, events\n"
          "      --guard-timing N time 1 of every N guard lookups in process PID from now on\n"
          "                       (0: off; the g key flips it), then show it as asked\n"
          "  -n, --iterations N   stop after N refreshes (with --once: N reports)\n"
          "  -d, --delay SECS     refresh interval (default 1)\n"
          "  -s, --save FILE      save a snapshot of PID to FILE and exit (with --once:\n"
          "                       also print the report)\n"
          "      --save-dir DIR   where the s key writes snapshots (default .)\n"
          "  -r, --record FILE    write the record of the run to FILE (\"-\": stdout): every\n"
          "                       compile, recompile, graph break, cache-limit hit and guard\n"
          "                       failure with its time, one JSON line each (format in\n"
          "                       inspect/trace.h), polled every --delay until the process\n"
          "                       exits or Ctrl-C; with --file, what the snapshot holds.\n"
          "                       Draw it with dynamo-dot --timeline FILE\n"
          "  -w, --width N        report width in columns (default 160)\n"
          "  -h, --help           this help\n"
          "\n"
          "Keys: F1/? help, F3 or / search, F4 or \\ filter, F5 or t tree, F6 or < > sort,\n"
          "Tab or 1-6 tabs, Enter/Esc drill in/out, Space pause, s save, r reset counters,\n"
          "g guard cost sampling on/off (in the process: 1 of every 64 lookups timed),\n"
          "+ - refresh interval, q quit.\n"
          "\n"
          "Exit status: 0 ok, 1 other error, 2 usage, 3 no such process, 4 no dynamo in\n"
          "the process, 5 permission denied, 6 layout version mismatch, 7 corrupt snapshot,\n"
          "8 the pid's /dev/shm file is not that process's (planted or stale): refused.\n",
          out);
}

/* Prints the reader's message (and a hint for permissions); returns the
 * exit status for it. */
static int fail(const DrStatus *st)
{
    fprintf(stderr, "dynamo-top: %s\n", *st->msg ? st->msg : dr_strerror(st->code));
    if (st->code == DR_EPERM && !strstr(st->msg, "root"))   /* the reader usually says how */
        fprintf(stderr, "dynamo-top: to grant access, run dynamo-top as the user that owns the "
                        "process or as root (sudo dynamo-top -p PID); reading process memory also "
                        "needs ptrace permission (CAP_SYS_PTRACE, or "
                        "/proc/sys/kernel/yama/ptrace_scope = 0)\n");
    return dr_exit_code(st->code);
}

static int parse_pid(const char *s, pid_t *pid)
{
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno || *end || end == s || v <= 0 || v > 0x3fffffffL)
        return -1;
    *pid = (pid_t)v;
    return 0;
}

/* ---- listing ---- */

/* The processes dr_list finds, one line each, after removing the files
 * the caller's dead processes left (dr_remove_stale). */
static int list_processes(void)
{
    pid_t *pids;
    size_t n, removed;
    DrStatus st;
    if (dr_remove_stale(&removed, &st) != 0 || dr_list(&pids, &n, &st) != 0)
        return fail(&st);
    if (removed)
        printf("removed %zu telemetry file%s of your exited processes from /dev/shm\n", removed,
               removed == 1 ? "" : "s");
    int found = 0;
    for (size_t i = 0; i < n; i++) {
        pid_t pid = pids[i];
        if (crt_interrupted()) {
            free(pids);
            return 130;
        }
        if (!found++)
            printf("%-8s %-8s %-12s %6s %8s %10s  %s\n", "PID", "PYTHON", "TORCH", "FRAMES",
                   "COMPILES", "UPTIME", "COMMAND");
        Source *src = source_open_pid(pid, &st);
        int exited = 0;
        Model *m = src ? source_read(src, &exited, &st) : NULL;
        if (m) {
            char up[32];
            fmt_duration(up, sizeof up, m->uptime_s);
            printf("%-8d %-8s %-12s %6zu %8llu %10s  %s\n", (int)pid, m->python, m->torch,
                   m->n_frames, (unsigned long long)m->compiles, up, exited ? "(exited)" : "");
            model_delete(m);
        } else {
            printf("%-8d (%s)\n", (int)pid, st.msg);
        }
        source_delete(src);
    }
    free(pids);
    if (!found)
        printf("no running process has dynamo loaded "
               "(dynamo creates /dev/shm/dynamo-<pid> when it is imported)\n");
    else
        printf("\nattach with: dynamo-top PID    (or dynamo-top --once PID for a report)\n");
    return 0;
}

/* ---- modes ---- */

typedef struct Args {
    pid_t pid;
    const char *file;
    const char *save;
    const char *save_dir;
    const char *record;
    int once;
    int summary;
    int top;
    const char *frame;
    Tab tab;
    long iterations;
    double delay;
    int width;
    long guard_timing;          /* --guard-timing N, -1 not given */
} Args;

static void sleep_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR && !crt_interrupted())
        ;
}

static int run_once(Source *src, const Args *a)
{
    long n = a->iterations > 0 ? a->iterations : 1;
    for (long i = 0; i < n; i++) {
        if (i) {
            sleep_ms((long)(a->delay * 1000));
            if (crt_interrupted())
                return 130;
            fputs("\n\f\n", stdout);
        }
        int exited = 0;
        DrStatus st;
        Model *m = source_read(src, &exited, &st);
        if (!m)
            return fail(&st);
        ProcState ps = source_is_file(src) ? PS_SNAPSHOT : exited ? PS_EXITED : PS_LIVE;
        ReportOpts ro = {.width = a->width, .frame = a->frame, .tab = a->tab,
                         .summary = a->summary, .top = a->top};
        int rc = report_write(stdout, m, ps, &ro);
        model_delete(m);
        if (rc != 0) {
            fprintf(stderr, "dynamo-top: writing the report failed: %s\n", strerror(errno));
            return 1;
        }
        if (exited)
            break;
    }
    return 0;
}

int main(int argc, char **argv)
{
    static const struct option longopts[] = {
        {"pid", required_argument, NULL, 'p'},
        {"file", required_argument, NULL, 'f'},
        {"once", no_argument, NULL, 'o'},
        {"iterations", required_argument, NULL, 'n'},
        {"delay", required_argument, NULL, 'd'},
        {"save", required_argument, NULL, 's'},
        {"save-dir", required_argument, NULL, 'D'},
        {"width", required_argument, NULL, 'w'},
        {"summary", no_argument, NULL, 'S'},
        {"top", required_argument, NULL, 'T'},
        {"frame", required_argument, NULL, 'F'},
        {"tab", required_argument, NULL, 'B'},
        {"record", required_argument, NULL, 'r'},
        {"guard-timing", required_argument, NULL, 'G'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    Args a = {.delay = 1.0, .width = 160, .top = 10, .tab = TAB_COUNT, .guard_timing = -1};
    int c;
    strutil_set_oom(crt_oom);       /* out of memory restores the terminal first */
    while ((c = getopt_long(argc, argv, "p:f:n:d:s:w:r:h", longopts, NULL)) != -1) {
        char *end;
        switch (c) {
        case 'p':
            if (parse_pid(optarg, &a.pid) != 0) {
                fprintf(stderr, "dynamo-top: not a process id: %s\n", optarg);
                return EXIT_USAGE;
            }
            break;
        case 'f': a.file = optarg; break;
        case 'o': a.once = 1; break;
        case 'S': a.summary = a.once = 1; break;
        case 'T': {
            long top = strtol(optarg, &end, 10);
            if (*end || top <= 0 || top > 100000) {
                fprintf(stderr, "dynamo-top: --top needs a positive number: %s\n", optarg);
                return EXIT_USAGE;
            }
            a.top = (int)top;
            break;
        }
        case 'F': a.frame = optarg; break;
        case 'G': {
            unsigned long n = strtoul(optarg, &end, 10);
            if (*end || !*optarg || *optarg == '-' || n > UINT32_MAX) {
                fprintf(stderr, "dynamo-top: --guard-timing needs 0 (off) or N: %s\n", optarg);
                return EXIT_USAGE;
            }
            a.guard_timing = (long)n;
            break;
        }
        case 'B':
            a.tab = tab_by_name(optarg);
            if (a.tab == TAB_COUNT) {
                fprintf(stderr, "dynamo-top: --tab needs one of graph, bytecode, guards, breaks, "
                                "recompiles, events: %s\n", optarg);
                return EXIT_USAGE;
            }
            break;
        case 'n':
            a.iterations = strtol(optarg, &end, 10);
            if (*end || a.iterations <= 0) {
                fprintf(stderr, "dynamo-top: --iterations needs a positive number: %s\n", optarg);
                return EXIT_USAGE;
            }
            break;
        case 'd':
            a.delay = strtod(optarg, &end);
            if (*end || a.delay < 0.05 || a.delay > 3600) {
                fprintf(stderr, "dynamo-top: --delay needs seconds between 0.05 and 3600: %s\n", optarg);
                return EXIT_USAGE;
            }
            break;
        case 's': a.save = optarg; break;
        case 'D': a.save_dir = optarg; break;
        case 'r': a.record = optarg; break;
        case 'w':
            a.width = (int)strtol(optarg, &end, 10);
            if (*end || a.width < 60 || a.width > 1000) {
                fprintf(stderr, "dynamo-top: --width needs 60..1000 columns: %s\n", optarg);
                return EXIT_USAGE;
            }
            break;
        case 'h': usage(stdout); return 0;
        default: usage(stderr); return EXIT_USAGE;
        }
    }
    if (optind < argc) {
        if (a.pid || optind + 1 < argc || parse_pid(argv[optind], &a.pid) != 0) {
            fprintf(stderr, "dynamo-top: unexpected argument: %s (try --help)\n", argv[optind]);
            return EXIT_USAGE;
        }
    }
    if ((a.frame || a.tab != TAB_COUNT) && !a.once) {
        fprintf(stderr, "dynamo-top: --frame and --tab shape the --once report (in the live view,\n"
                        "F4 filters the frames and 1-6 pick the tab)\n");
        return EXIT_USAGE;
    }
    if (a.summary && a.tab != TAB_COUNT) {
        fprintf(stderr, "dynamo-top: --summary shows no tabs: give --summary or --tab\n");
        return EXIT_USAGE;
    }
    if (a.record && (a.once || a.save || (!a.pid && !a.file))) {
        fprintf(stderr, "dynamo-top: --record needs a pid (-p PID) or --file, and no --once or "
                        "--save\n");
        return EXIT_USAGE;
    }
    if (a.pid && a.file) {
        fprintf(stderr, "dynamo-top: give a pid or --file, not both\n");
        return EXIT_USAGE;
    }
    if (a.guard_timing >= 0 && !a.pid) {
        fprintf(stderr, "dynamo-top: --guard-timing needs a pid (-p PID)\n");
        return EXIT_USAGE;
    }
    if (a.save && !a.pid) {
        fprintf(stderr, "dynamo-top: --save needs a pid (-p PID)\n");
        return EXIT_USAGE;
    }
    /* SIGINT/SIGTERM/SIGHUP set a flag that every loop, the reader's
     * included, checks: the tool ends through its normal path. */
    crt_install_signals();
    dr_set_interrupt(crt_interrupt_flag());
    if (!a.pid && !a.file)
        return list_processes();

    DrStatus st;
    Source *src = a.file ? source_open_file(a.file, &st) : source_open_pid(a.pid, &st);
    if (!src)
        return fail(&st);
    int rc = 0;
    if (a.guard_timing >= 0) {
        if (source_set_guard_timing(src, (uint32_t)a.guard_timing, &st) != 0) {
            rc = fail(&st);
            goto done;
        }
        fprintf(stderr, "guard timing of pid %d: %s\n", (int)a.pid, a.guard_timing ? "on" : "off");
    }
    if (a.save) {
        if (source_save(src, a.save, &st) != 0) {
            rc = fail(&st);
            goto done;
        }
        fprintf(a.once ? stderr : stdout, "saved snapshot of pid %d to %s\n", (int)a.pid, a.save);
        if (!a.once)
            goto done;
    }
    if (a.once) {
        rc = run_once(src, &a);
        goto done;
    }
    if (a.record) {
        RecordOpts ro = {.path = a.record, .interval_ms = (int)(a.delay * 1000),
                         .iterations = a.iterations};
        rc = record_run(src, &ro, &st);
        if (rc < 0)
            rc = fail(&st);
        goto done;
    }
    int exited = 0;
    Model *m = source_read(src, &exited, &st);
    if (!m) {
        rc = fail(&st);
        goto done;
    }
    AppOptions ao = {.interval_ms = (int)(a.delay * 1000), .iterations = a.iterations,
                     .save_dir = a.save_dir, .exited = exited};
    rc = app_run(src, m, &ao);
done:
    source_delete(src);
    return rc;
}
