/* crt.h — the terminal of dynamo-top.  The ONLY module that calls curses.
 *
 * Owns the curses session, the color pairs, the signal handlers that put
 * the terminal back, and fatal exits.  Everything else draws through the
 * functions below and reads keys as Key values, never as curses codes.
 */
#ifndef TUI_CRT_H
#define TUI_CRT_H

#include <signal.h>  /* sig_atomic_t */
#include <stddef.h>

#include "util.h"   /* Color */

/* Keys, decoupled from curses key codes.  Printable characters are their
 * own code (< 256); the rest live above 256.  An int, not the enum, so that
 * a switch can mix 'q' with K_F10. */
typedef int Key;
enum {
    K_NONE = -1,        /* timeout: no key within the refresh interval */
    K_ENTER = '\n',
    K_ESC = 27,
    K_TAB = '\t',
    K_BACKSPACE = 0x7f,
    K_UP = 0x100, K_DOWN, K_LEFT, K_RIGHT, K_PGUP, K_PGDN, K_HOME, K_END,
    K_F1, K_F2, K_F3, K_F4, K_F5, K_F6, K_F7, K_F8, K_F9, K_F10,
    K_BTAB,             /* shift-tab */
    K_RESIZE,
    K_SIGNAL            /* SIGINT/SIGTERM arrived: quit */
};

/* Enters curses mode (alternate screen, no echo, keypad, colors) and
 * installs the signal handlers.  Returns 0, or -1 with a message on stderr
 * when stdout is not a terminal. */
int crt_init(void);

/* Leaves curses mode.  Idempotent; safe to call when crt_init never ran. */
void crt_done(void);

/* Restores the terminal when needed, prints "dynamo-top: <message>" to
 * stderr and exits with `status`. */
void crt_fatal(int status, const char *fmt, ...) __attribute__((format(printf, 2, 3), noreturn));

/* Out-of-memory handler for strutil_set_oom: ends through crt_fatal(). */
void crt_oom(size_t bytes) __attribute__((noreturn));

/* Installs the SIGINT/SIGTERM/SIGHUP and SIGSEGV/SIGBUS/SIGFPE/SIGABRT
 * handlers.  crt_init calls it; the plain-text modes call it too so a fatal
 * signal never leaves a half-written line without a message. */
void crt_install_signals(void);

/* Nonzero once SIGINT/SIGTERM/SIGHUP arrived. */
int crt_interrupted(void);

/* The flag behind crt_interrupted, for dr_set_interrupt (the reader's loops
 * stop when it is set). */
const volatile sig_atomic_t *crt_interrupt_flag(void);

int crt_rows(void);
int crt_cols(void);
/* Nonzero when the terminal shows UTF-8 (the arrow in "LIMIT → eager"). */
int crt_utf8(void);

void crt_erase(void);
void crt_flush(void);
/* Draws `text` at (y, x) clipped to `width` columns and padded with spaces
 * to exactly `width` columns in `color`. */
void crt_text(int y, int x, int width, Color color, const char *text);
/* Places the visible cursor (for prompts); x < 0 hides it. */
void crt_cursor(int y, int x);

/* Waits at most `timeout_ms` (negative: forever) for a key. */
Key crt_read_key(int timeout_ms);

#endif
