/* app.c — the interactive loop of dynamo-top (htop's ScreenManager role).
 *
 * Owns: the Model on screen (replaced on each refresh unless paused or the
 * process exited), the reset baseline, the panels, the prompt state.  Key
 * handling is table-free switch code on purpose: every key is listed once
 * here and once in the help text below, and nowhere else.
 */
#include "app.h"

#include <errno.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "crt.h"
#include "panel.h"
#include "render.h"

typedef enum Mode { MODE_NORMAL, MODE_SEARCH, MODE_FILTER, MODE_HELP } Mode;

typedef struct App {
    Source *src;            /* borrowed */
    Model *model;           /* owned: what is on screen */
    ProcState state;
    int exited;             /* the process went away (sticky) */
    Baseline base;          /* owned */
    Panel *table;           /* owned: frame table or tree */
    Panel *detail;          /* owned: the current tab */
    Tab tab;
    int tree;               /* table shows the tree */
    int focus_detail;       /* Enter drilled into the detail panel */
    int64_t detail_frame;   /* frame shown below (-1 none) */
    int64_t detail_entry;   /* its entry from the tree, -1 all */
    TableOpts opts;
    Mode mode;
    char filter[128];       /* active filter (opts.filter points here) */
    char search[128];       /* last search text */
    char input[128];        /* prompt being typed */
    char message[512];      /* one-line feedback under the header */
    int interval_ms;
    long iterations, refreshes;
    const char *save_dir;
    int saves;
    int quit;
    int status;             /* exit status */
} App;

static const int intervals[] = {100, 250, 500, 1000, 2000, 5000, 10000};
#define N_INTERVALS (sizeof intervals / sizeof *intervals)

static uint64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

static void say(App *a, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void say(App *a, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(a->message, sizeof a->message, fmt, ap);
    va_end(ap);
}

/* ---- data ---- */

/* Replaces the model with a fresh reading unless paused/exited/a file. */
static void refresh(App *a)
{
    if (a->state != PS_LIVE)
        return;
    int exited = 0;
    DrStatus st;
    Model *m = source_read(a->src, &exited, &st);
    if (!m) {
        /* keep the last state on screen; it is final only if the process is gone */
        if (kill(a->model->pid, 0) == -1 && errno == ESRCH) {
            a->exited = 1;
            a->state = PS_EXITED;
            say(a, "process %d exited: showing its last state", a->model->pid);
        } else {
            say(a, "reading failed, retrying: %s", st.msg);
        }
        return;
    }
    baseline_apply(&a->base, m);
    model_delete(a->model);
    a->model = m;
    a->refreshes++;
    if (exited) {
        a->exited = 1;
        a->state = PS_EXITED;
        say(a, "process %d exited: showing its last state (s saves it)", m->pid);
    }
}

/* ---- layout ---- */

static int table_height(void)
{
    int free_rows = crt_rows() - 5;     /* header 2, message, tabs, function bar */
    int h = free_rows * 2 / 5;
    return h < 4 ? 4 : h;
}

static void rebuild(App *a)
{
    Lines ls;
    lines_init(&ls);
    a->opts.width = crt_cols();
    a->opts.filter = a->filter;
    a->opts.utf8 = crt_utf8();
    if (a->tree)
        render_tree(&ls, a->model, &a->opts);
    else
        render_frames(&ls, a->model, &a->opts);
    char *title = render_table_title(&a->opts);
    panel_set_lines(a->table, &ls, title);
    free(title);

    const Line *cur = panel_current(a->table);
    if (!a->focus_detail) {     /* the detail follows the cursor until drilled in */
        a->detail_frame = cur ? cur->frame_id : -1;
        a->detail_entry = cur && a->tree ? cur->compile_id : -1;
    }
    const MFrame *f = model_find_frame(a->model, a->detail_frame);
    if (f || a->tab == TAB_EVENTS)
        tab_classes[a->tab].render(&ls, a->model, f, a->detail_entry, crt_cols());
    else
        lines_add(&ls, C_DIM, -1, -1, "no frame selected");
    panel_set_lines(a->detail, &ls, "");
    lines_free(&ls);
}

/* ---- drawing ---- */

static Color state_color(ProcState s)
{
    return s == PS_LIVE ? C_LIVE : s == PS_PAUSED ? C_PAUSED : s == PS_EXITED ? C_EXITED : C_PAUSED;
}

static void draw_header(App *a)
{
    Lines ls;
    lines_init(&ls);
    render_header(&ls, a->model, a->state, 0);
    int cols = crt_cols();
    crt_text(0, 0, cols, C_HEADER, ls.v[0].text);
    char badge[32];
    snprintf(badge, sizeof badge, " %s ", proc_state_label(a->state));
    int bw = (int)strlen(badge);
    crt_text(0, cols - bw, bw, state_color(a->state), badge);
    char extra[256];
    snprintf(extra, sizeof extra, "%s   refresh %.2gs  sort %s%s%s%s", ls.v[1].text,
             a->interval_ms / 1000.0, sort_key_name(a->opts.sort), a->opts.ascending ? " asc" : "",
             *a->filter ? "  filter: " : "", a->filter);
    crt_text(1, 0, cols, C_VALUE, extra);
    crt_text(2, 0, cols, a->exited ? C_ERROR : C_DIM, a->message);
    lines_free(&ls);
}

static void draw_tabs(App *a, int y)
{
    int x = 0;
    for (int t = 0; t < TAB_COUNT; t++) {
        char label[48];
        snprintf(label, sizeof label, " %d %s ", t + 1, tab_classes[t].name);
        int w = (int)strlen(label);
        crt_text(y, x, w, t == (int)a->tab ? C_TAB_ACTIVE : C_TAB, label);
        x += w + 1;
    }
    char where[160] = "";
    const MFrame *f = model_find_frame(a->model, a->detail_frame);
    if (f && a->detail_entry >= 0)
        snprintf(where, sizeof where, "  %s [%lld/%lld]%s", f->name, (long long)f->id,
                 (long long)a->detail_entry, a->focus_detail ? "  (Esc: back)" : "");
    else if (f)
        snprintf(where, sizeof where, "  %s [%lld]%s", f->name, (long long)f->id,
                 a->focus_detail ? "  (Esc: back)" : "");
    crt_text(y, x, crt_cols() - x, C_DIM, where);
}

static void draw_function_bar(App *a, int y)
{
    int cols = crt_cols();
    if (a->mode == MODE_SEARCH || a->mode == MODE_FILTER) {
        char prompt[200];
        snprintf(prompt, sizeof prompt, "%s: %s", a->mode == MODE_SEARCH ? "Search" : "Filter", a->input);
        crt_text(y, 0, cols, C_DEFAULT, "");
        crt_text(y, 0, 8, C_KEYTEXT, a->mode == MODE_SEARCH ? "Search: " : "Filter: ");
        crt_text(y, 8, cols - 8, C_DEFAULT, a->input);
        (void)prompt;
        crt_cursor(y, 8 + (int)utf8_width(a->input));
        return;
    }
    crt_cursor(0, -1);
    static const char *const keys[][2] = {
        {"F1", "Help"}, {"F3", "Search"}, {"F4", "Filter"}, {"F5", "Tree"}, {"F6", "SortBy"},
        {"Tab", "Tabs"}, {"Spc", "Pause"}, {"s", "Save"}, {"r", "Reset"}, {"+-", "Delay"},
        {"F10", "Quit"},
    };
    int x = 0;
    for (size_t i = 0; i < sizeof keys / sizeof *keys && x < cols; i++) {
        int kw = (int)strlen(keys[i][0]), tw = (int)strlen(keys[i][1]) + 1;
        crt_text(y, x, kw, C_KEY, keys[i][0]);
        crt_text(y, x + kw, tw, C_KEYTEXT, keys[i][1]);
        x += kw + tw;
    }
    if (x < cols)
        crt_text(y, x, cols - x, C_KEYTEXT, "");
}

static const char *const help_text[] = {
    "dynamo-top keys",
    "",
    "  F1 ?        this help (any key closes it)",
    "  F3 /        search in the focused panel; F3 or n: next match; Enter keeps, Esc cancels",
    "  F4 \\        filter frames by function or file; Esc in the table clears it",
    "  F5 t        tree: frames -> cache entries [F/C] -> graphs and resume functions",
    "  F6 > .      sort by the next column;  < ,  previous column;  I  invert order",
    "  Tab 1-6     detail tabs: 1 Graph  2 Bytecode  3 Guards  4 Breaks  5 Recompiles  6 Events",
    "  Enter       drill into the detail panel (in the tree: for the entry under the cursor)",
    "  Esc         back to the frame table",
    "  Up Down PgUp PgDn Home End j k   move / scroll;  Left Right  scroll sideways",
    "  Space       pause (the view stays scrollable) / resume",
    "  s           save a snapshot of the process (open it with dynamo-top --file FILE)",
    "  r           reset counters: show deltas from now on (the process is not touched)",
    "  g           guard cost sampling on (1 of every 64 lookups timed) / off, in the process",
    "  + -         refresh interval",
    "  q F10       quit",
    "",
    "Status: ok | break (graph break) | LIMIT -> eager (cache_size_limit hit) | error",
    "Header state: LIVE | PAUSED | EXITED (process gone, last state kept) | SNAPSHOT (--file)",
};

static void draw_help(void)
{
    int cols = crt_cols(), rows = crt_rows();
    size_t n = sizeof help_text / sizeof *help_text;
    for (int y = 0; y < rows; y++)
        crt_text(y, 0, cols, y == 0 ? C_HEADER : C_DEFAULT,
                 (size_t)y < n ? help_text[y] : "");
}

static void draw(App *a)
{
    crt_erase();
    if (a->mode == MODE_HELP) {
        draw_help();
        crt_flush();
        return;
    }
    int rows = crt_rows(), cols = crt_cols();
    draw_header(a);
    int th = table_height();
    panel_draw(a->table, 3, 0, th + 1, cols, !a->focus_detail);
    int ty = 3 + th + 1;
    draw_tabs(a, ty);
    panel_draw(a->detail, ty + 1, 0, rows - ty - 2, cols, a->focus_detail);
    draw_function_bar(a, rows - 1);
    crt_flush();
}

/* ---- actions ---- */

static Panel *focused(App *a)
{
    return a->focus_detail ? a->detail : a->table;
}

static void toggle_pause(App *a)
{
    if (a->state == PS_LIVE) {
        a->state = PS_PAUSED;
        say(a, "paused: the view is frozen (still scrollable); Space resumes");
    } else if (a->state == PS_PAUSED) {
        a->state = PS_LIVE;
        say(a, "resumed");
    } else {
        say(a, "%s", a->exited ? "the process exited: nothing to resume"
                               : "a snapshot file does not change");
    }
}

static void save(App *a)
{
    char path[4096];
    DrStatus st;
    a->saves++;
    snprintf(path, sizeof path, "%s/dynamo-%d-%ld-%d.snap", a->save_dir, a->model->pid,
             (long)time(NULL), a->saves);
    if (source_save(a->src, path, &st) == 0)
        say(a, "saved snapshot to %s", path);
    else
        say(a, "save failed: %s", st.msg);
}

static void reset_counters(App *a)
{
    /* the model on screen already has the old baseline applied: taking it
     * moves the zero to "now", applying it again zeroes the screen */
    baseline_take(&a->base, a->model);
    baseline_apply(&a->base, a->model);
    say(a, "counters reset: showing deltas since now (the process is not touched)");
}

/* Flip the process's guard cost sampling (the one write dynamo-top makes). */
static void toggle_guard_timing(App *a)
{
    if (source_is_file(a->src)) {
        say(a, "guard timing: a snapshot file cannot be changed");
        return;
    }
    uint32_t period = a->model && a->model->guard_timing ? 0 : dr_guard_timing_default();
    DrStatus st;
    if (source_set_guard_timing(a->src, period, &st) == 0) {
        if (a->model)
            a->model->guard_timing = period;
        if (period)
            say(a, "guard timing on: 1 of every %u lookups timed (Guards tab: ns per lookup)", period);
        else
            say(a, "guard timing off");
    } else
        say(a, "guard timing: %s", st.msg);
}

static void set_sort(App *a, int delta)
{
    a->opts.sort = (SortKey)(((int)a->opts.sort + delta + SORT_COUNT) % SORT_COUNT);
    /* names read best A..Z, numbers largest first */
    a->opts.ascending = a->opts.sort == SORT_FUNCTION || a->opts.sort == SORT_FILE;
    say(a, "sorted by %s", sort_key_name(a->opts.sort));
}

static void change_interval(App *a, int delta)
{
    size_t i = 0;
    while (i + 1 < N_INTERVALS && intervals[i] < a->interval_ms)
        i++;
    if (delta > 0 && i + 1 < N_INTERVALS)
        i++;
    else if (delta < 0 && i > 0)
        i--;
    a->interval_ms = intervals[i];
    say(a, "refresh interval %.2g s", a->interval_ms / 1000.0);
}

static void do_search(App *a, int skip)
{
    if (!*a->search)
        return;
    if (panel_find(focused(a), a->search, skip))
        say(a, "search: %s", a->search);
    else
        say(a, "search: \"%s\" not found", a->search);
}

/* Keys while typing a search or filter. */
static void on_prompt_key(App *a, Key k)
{
    size_t n = strlen(a->input);
    switch (k) {
    case K_ENTER:
        if (a->mode == MODE_SEARCH) {
            snprintf(a->search, sizeof a->search, "%s", a->input);
            do_search(a, 0);
        } else {
            snprintf(a->filter, sizeof a->filter, "%s", a->input);
            say(a, *a->filter ? "filter: %s" : "filter cleared%s", a->filter);
        }
        a->mode = MODE_NORMAL;
        return;
    case K_ESC:
        if (a->mode == MODE_FILTER)
            a->filter[0] = '\0';
        a->mode = MODE_NORMAL;
        say(a, "%s", "");
        return;
    case K_F3:
        if (a->mode == MODE_SEARCH) {
            snprintf(a->search, sizeof a->search, "%s", a->input);
            do_search(a, 1);
        }
        return;
    case K_BACKSPACE:
        if (n)
            a->input[n - 1] = '\0';
        break;
    default:
        if (k >= 32 && k < 256 && k != 127 && n + 1 < sizeof a->input) {
            a->input[n] = (char)k;
            a->input[n + 1] = '\0';
        } else {
            return;
        }
    }
    if (a->mode == MODE_SEARCH) {       /* incremental, like htop */
        snprintf(a->search, sizeof a->search, "%s", a->input);
        do_search(a, 0);
    } else {
        snprintf(a->filter, sizeof a->filter, "%s", a->input);
    }
}

static void start_prompt(App *a, Mode mode)
{
    a->mode = mode;
    snprintf(a->input, sizeof a->input, "%s", mode == MODE_FILTER ? a->filter : "");
}

static void drill(App *a, int in)
{
    if (in) {
        const Line *cur = panel_current(a->table);
        if (!cur)
            return;
        a->detail_frame = cur->frame_id;
        a->detail_entry = a->tree ? cur->compile_id : -1;
        a->focus_detail = 1;
        a->detail->scroll = 0;
    } else if (a->focus_detail) {
        a->focus_detail = 0;
    } else if (*a->filter) {
        a->filter[0] = '\0';
        say(a, "filter cleared");
    }
}

static void on_key(App *a, Key k)
{
    if (a->mode == MODE_HELP) {
        a->mode = MODE_NORMAL;
        return;
    }
    if (a->mode != MODE_NORMAL) {
        on_prompt_key(a, k);
        return;
    }
    switch (k) {
    case 'q': case 'Q': case K_F10: a->quit = 1; break;
    case K_F1: case '?': case 'h': a->mode = MODE_HELP; break;
    case K_F3: case '/': start_prompt(a, MODE_SEARCH); break;
    case 'n': do_search(a, 1); break;
    case K_F4: case '\\': start_prompt(a, MODE_FILTER); break;
    case K_F5: case 't':
        a->tree = !a->tree;
        say(a, a->tree ? "tree view" : "table view");
        break;
    case K_F6: case '>': case '.': set_sort(a, +1); break;
    case '<': case ',': set_sort(a, -1); break;
    case 'I':
        a->opts.ascending = !a->opts.ascending;
        say(a, "sort order inverted");
        break;
    case K_TAB: a->tab = (Tab)((a->tab + 1) % TAB_COUNT); a->detail->scroll = 0; break;
    case K_BTAB: a->tab = (Tab)((a->tab + TAB_COUNT - 1) % TAB_COUNT); a->detail->scroll = 0; break;
    case '1': case '2': case '3': case '4': case '5': case '6':
        a->tab = (Tab)(k - '1');
        a->detail->scroll = 0;
        break;
    case K_ENTER: drill(a, 1); break;
    case K_ESC: drill(a, 0); break;
    case ' ': toggle_pause(a); break;
    case 's': case 'S': save(a); break;
    case 'r': case 'R': reset_counters(a); break;
    case 'g': case 'G': toggle_guard_timing(a); break;
    case '+': case '=': change_interval(a, +1); break;
    case '-': case '_': change_interval(a, -1); break;
    case K_RESIZE: break;
    default: panel_on_key(focused(a), k); break;
    }
}

int app_run(Source *src, Model *first, const AppOptions *opts)
{
    App a;
    memset(&a, 0, sizeof a);
    a.src = src;
    a.model = first;
    a.state = source_is_file(src) ? PS_SNAPSHOT : PS_LIVE;
    a.table = panel_new(&panel_class_table);
    a.detail = panel_new(&panel_class_text);
    a.opts.sort = SORT_FUNCTION;
    a.opts.ascending = 1;
    a.interval_ms = opts->interval_ms;
    a.iterations = opts->iterations;
    a.save_dir = opts->save_dir ? opts->save_dir : ".";
    a.detail_frame = a.detail_entry = -1;
    a.refreshes = 1;
    if (opts->exited && a.state == PS_LIVE) {
        a.exited = 1;
        a.state = PS_EXITED;
    }
    say(&a, "%s  (F1 or ? for help)", source_describe(src));

    if (crt_init() != 0) {
        model_delete(a.model);
        panel_delete(a.table);
        panel_delete(a.detail);
        return 1;
    }
    uint64_t next = now_ms() + (uint64_t)a.interval_ms;
    while (!a.quit) {
        rebuild(&a);
        draw(&a);
        if (a.iterations && a.refreshes >= a.iterations)
            break;
        uint64_t t = now_ms();
        Key k = crt_read_key(t >= next ? 0 : (int)(next - t));
        if (k == K_SIGNAL) {
            a.status = 0;
            break;
        }
        if (k != K_NONE)
            on_key(&a, k);
        if (now_ms() >= next) {
            refresh(&a);
            next = now_ms() + (uint64_t)a.interval_ms;
        }
    }
    crt_done();
    model_delete(a.model);
    baseline_free(&a.base);
    panel_delete(a.table);
    panel_delete(a.detail);
    return a.status;
}
