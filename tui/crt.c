/* crt.c — curses session, colors, keys and signal safety for dynamo-top.
 *
 * All curses calls of the tool live here (htop's CRT.c model).  Must not
 * know about models, panels or the reader.  Every path that ends the
 * program while curses is active goes through crt_done() first.
 */
#include "crt.h"

#include <curses.h>
#include <langinfo.h>
#include <locale.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static volatile sig_atomic_t curses_active;   /* between initscr and endwin */
static volatile sig_atomic_t interrupted;     /* SIGINT/SIGTERM/SIGHUP seen */
static int utf8_terminal;

void crt_done(void)
{
    if (curses_active) {
        curses_active = 0;
        curs_set(1);
        endwin();
    }
}

void crt_fatal(int status, const char *fmt, ...)
{
    va_list ap;
    crt_done();
    fputs("dynamo-top: ", stderr);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    exit(status);
}

void crt_oom(size_t bytes)
{
    crt_fatal(1, "out of memory (%zu bytes)", bytes);
}

/* A quit request: the key loop sees K_SIGNAL and leaves through the normal
 * path, which restores the terminal and frees everything. */
static void on_quit_signal(int sig)
{
    (void)sig;
    interrupted = 1;
}

/* A crash: put the terminal back first, say what happened, then die of the
 * same signal so the exit status and core dump stay honest.  endwin() is
 * not async-signal-safe; like htop we accept that because the alternative
 * is a terminal left in raw mode. */
static void on_fatal_signal(int sig)
{
    static const char msg[] = "\ndynamo-top: fatal signal, terminal restored\n";
    if (curses_active) {
        curses_active = 0;
        endwin();
    }
    ssize_t ignored = write(STDERR_FILENO, msg, sizeof msg - 1);
    (void)ignored;
    signal(sig, SIG_DFL);
    raise(sig);
}

void crt_install_signals(void)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sigemptyset(&sa.sa_mask);
    sa.sa_handler = on_quit_signal;     /* no SA_RESTART: wake up getch */
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGHUP, &sa, NULL);
    sa.sa_handler = on_fatal_signal;
    sa.sa_flags = SA_RESETHAND;
    sigaction(SIGSEGV, &sa, NULL);
    sigaction(SIGBUS, &sa, NULL);
    sigaction(SIGFPE, &sa, NULL);
    sigaction(SIGILL, &sa, NULL);
    sigaction(SIGABRT, &sa, NULL);
}

int crt_interrupted(void)
{
    return interrupted;
}

const volatile sig_atomic_t *crt_interrupt_flag(void)
{
    return &interrupted;
}

static const struct { short fg, bg; } palette[C_COUNT] = {
    [C_DEFAULT] = {-1, -1},
    [C_HEADER] = {COLOR_CYAN, -1},
    [C_VALUE] = {-1, -1},
    [C_TITLE] = {COLOR_BLACK, COLOR_GREEN},
    [C_SELECTED] = {COLOR_BLACK, COLOR_CYAN},
    [C_OK] = {COLOR_GREEN, -1},
    [C_BREAK] = {COLOR_YELLOW, -1},
    [C_LIMIT] = {COLOR_MAGENTA, -1},
    [C_ERROR] = {COLOR_RED, -1},
    [C_DIM] = {COLOR_BLUE, -1},
    [C_KEY] = {-1, -1},
    [C_KEYTEXT] = {COLOR_BLACK, COLOR_CYAN},
    [C_LIVE] = {COLOR_BLACK, COLOR_GREEN},
    [C_PAUSED] = {COLOR_BLACK, COLOR_YELLOW},
    [C_EXITED] = {COLOR_WHITE, COLOR_RED},
    [C_TAB] = {-1, -1},
    [C_TAB_ACTIVE] = {COLOR_BLACK, COLOR_CYAN},
    [C_SECTION] = {COLOR_CYAN, -1},
};

static chtype attr_of(Color c)
{
    chtype a = has_colors() ? COLOR_PAIR((int)c) : 0;
    switch (c) {
    case C_TITLE: case C_SELECTED: case C_KEYTEXT: case C_TAB_ACTIVE:
        return has_colors() ? a : a | A_REVERSE;
    case C_HEADER: case C_SECTION: case C_LIVE: case C_PAUSED: case C_EXITED: case C_KEY:
        return a | A_BOLD;
    default:
        return a;
    }
}

int crt_init(void)
{
    if (!isatty(STDOUT_FILENO) || !isatty(STDIN_FILENO)) {
        fprintf(stderr, "dynamo-top: the interactive view needs a terminal; "
                        "use --once for a plain-text report\n");
        return -1;
    }
    setlocale(LC_ALL, "");
    utf8_terminal = strcmp(nl_langinfo(CODESET), "UTF-8") == 0;
    crt_install_signals();
    if (!initscr()) {
        fprintf(stderr, "dynamo-top: cannot initialize the terminal (TERM=%s)\n",
                getenv("TERM") ? getenv("TERM") : "");
        return -1;
    }
    curses_active = 1;
    cbreak();
    noecho();
    nonl();
    intrflush(stdscr, FALSE);
    keypad(stdscr, TRUE);
    set_escdelay(25);
    curs_set(0);
    if (has_colors()) {
        start_color();
        use_default_colors();
        for (int i = 1; i < C_COUNT; i++)
            init_pair((short)i, palette[i].fg, palette[i].bg);
    }
    return 0;
}

int crt_rows(void) { return LINES; }
int crt_cols(void) { return COLS; }
int crt_utf8(void) { return utf8_terminal; }

void crt_erase(void) { erase(); }
void crt_flush(void) { refresh(); }

void crt_text(int y, int x, int width, Color color, const char *text)
{
    if (width <= 0 || y < 0 || y >= LINES || x >= COLS)
        return;
    if (x + width > COLS)
        width = COLS - x;
    size_t n = utf8_prefix(text, (size_t)width);
    int used = (int)utf8_width(text) < width ? (int)utf8_width(text) : width;
    attrset(attr_of(color));
    mvaddnstr(y, x, text, (int)n);
    for (int i = used; i < width; i++)
        addch(' ');
    attrset(A_NORMAL);
}

void crt_cursor(int y, int x)
{
    if (x < 0) {
        curs_set(0);
        return;
    }
    move(y, x);
    curs_set(1);
}

Key crt_read_key(int timeout_ms)
{
    if (interrupted)
        return K_SIGNAL;
    timeout(timeout_ms);
    int ch = getch();
    if (interrupted)
        return K_SIGNAL;
    switch (ch) {
    case ERR: return K_NONE;
    case KEY_UP: return K_UP;
    case KEY_DOWN: return K_DOWN;
    case KEY_LEFT: return K_LEFT;
    case KEY_RIGHT: return K_RIGHT;
    case KEY_PPAGE: return K_PGUP;
    case KEY_NPAGE: return K_PGDN;
    case KEY_HOME: return K_HOME;
    case KEY_END: return K_END;
    case KEY_BTAB: return K_BTAB;
    case KEY_RESIZE: return K_RESIZE;
    case KEY_ENTER: case '\r': case '\n': return K_ENTER;
    case KEY_BACKSPACE: case 8: case 0x7f: return K_BACKSPACE;
    default:
        if (ch >= KEY_F(1) && ch <= KEY_F(10))
            return (Key)(K_F1 + (ch - KEY_F(1)));
        if (ch >= 0 && ch < 256)
            return (Key)ch;
        return K_NONE;
    }
}
