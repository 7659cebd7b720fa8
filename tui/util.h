/* util.h — small helpers of dynamo-top: padding text, a growable list of
 * lines, number formatting; checked allocation, the growable string and
 * the cleaning of text from the watched process (xstrdup_clean) come from
 * the shared inspect/strutil.h.
 *
 * Owns no global state.  Allocation failures end the tool through
 * crt_fatal() (which restores the terminal first), so callers never check
 * for NULL from the x* functions.
 */
#ifndef TUI_UTIL_H
#define TUI_UTIL_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include "strutil.h"  /* xmalloc & co., StrBuf, xstrdup_clean (shared with dynamo-dot) */

void sb_pad(StrBuf *sb, size_t columns);    /* spaces until sb is `columns` wide */

/* Colors the TUI knows; the report ignores them.  Kept here (not in crt.h)
 * so that rendering code does not depend on the curses module. */
typedef enum Color {
    C_DEFAULT = 0,
    C_HEADER,       /* meter labels in the header */
    C_VALUE,        /* meter values */
    C_TITLE,        /* column header bar */
    C_SELECTED,     /* selected row */
    C_OK,
    C_BREAK,
    C_LIMIT,
    C_ERROR,
    C_DIM,
    C_KEY,          /* key label in the function bar */
    C_KEYTEXT,      /* its description */
    C_LIVE,
    C_PAUSED,
    C_EXITED,
    C_TAB,
    C_TAB_ACTIVE,
    C_SECTION,      /* section titles inside the detail tabs */
    C_COUNT
} Color;

/* One line of rendered text with its color and an optional reference back
 * to what it shows (frame id, compile id); -1 when it refers to nothing. */
typedef struct Line {
    char *text;         /* owned */
    Color color;
    int64_t frame_id;   /* frame the line belongs to, or -1 */
    int64_t compile_id; /* cache entry the line belongs to, or -1 */
} Line;

/* A growable list of lines.  Owns every Line's text. */
typedef struct Lines {
    Line *v;
    size_t n, cap;
} Lines;

void lines_init(Lines *ls);
void lines_free(Lines *ls);
void lines_clear(Lines *ls);
/* Appends a copy of `text`; split at '\n' into several lines. */
void lines_add(Lines *ls, Color color, int64_t frame_id, int64_t compile_id, const char *text);
void lines_addf(Lines *ls, Color color, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* Display width of UTF-8 text (every code point counts as one column). */
size_t utf8_width(const char *s);
/* Byte length of the prefix of `s` that fits in `columns` columns. */
size_t utf8_prefix(const char *s, size_t columns);

/* Formatting into caller buffers; each returns `buf`. */
char *fmt_duration(char *buf, size_t len, uint64_t secs);  /* "01:02:03" or "2d 01:02:03" */
char *fmt_percent(char *buf, size_t len, uint64_t part, uint64_t whole); /* "98.1%" or "-" */
char *fmt_count(char *buf, size_t len, uint64_t n);        /* "123", "12.3k", "4.5M" */

/* Case-insensitive substring test; an empty needle matches everything. */
int str_contains_ci(const char *hay, const char *needle);

#endif
