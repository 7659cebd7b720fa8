/* strutil.h — checked allocation, a growable string, fmt_ns and the one
 * escaping of text read from a watched process, shared by the tools
 * (dynamo-top, dynamo-dot, dynamo-inspect) and the reader library through
 * build/libdynamo_inspect.a.
 *
 * Owns no state but the out-of-memory handler.  An allocation failure never
 * returns: it calls the handler set with strutil_set_oom() (dynamo-top
 * restores the terminal there), or by default prints "<tool>: out of memory"
 * and exits with status 1, so callers never check the x* functions for NULL.
 * Must not know about curses, Graphviz or the reader.
 */
#ifndef INSPECT_STRUTIL_H
#define INSPECT_STRUTIL_H

#include <stdarg.h>     /* va_list */
#include <stddef.h>     /* size_t */
#include <stdint.h>     /* uint64_t */
#include <stdio.h>      /* FILE: fput_escaped */

/* Called with the size that could not be allocated; must not return. */
typedef void StrutilOomHandler(size_t bytes);

/* Replaces the out-of-memory handler (NULL: back to the default). */
void strutil_set_oom(StrutilOomHandler *handler);

void *xmalloc(size_t n);
void *xcalloc(size_t count, size_t size);
void *xrealloc(void *p, size_t n);
char *xstrdup(const char *s);          /* NULL -> "" copy */
char *xstrndup(const char *s, size_t n);
char *xasprintf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* A growable NUL-terminated string.  Owns `s`, which stays NULL until
 * something is added (sb_addn(sb, "", 0) makes it an empty string). */
typedef struct StrBuf {
    char *s;        /* owned; always NUL-terminated once anything was added */
    size_t len;     /* bytes before the NUL */
    size_t cap;     /* bytes allocated */
} StrBuf;

void sb_init(StrBuf *sb);
void sb_free(StrBuf *sb);                   /* frees s and resets sb */
void sb_clear(StrBuf *sb);                  /* empties, keeps the buffer */
void sb_add(StrBuf *sb, const char *s);     /* NULL adds nothing */
void sb_addn(StrBuf *sb, const char *s, size_t n);
void sb_addf(StrBuf *sb, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void sb_vaddf(StrBuf *sb, const char *fmt, va_list ap) __attribute__((nonnull(2), format(printf, 2, 0)));
char *sb_steal(StrBuf *sb);                 /* the owned string (never NULL); sb is reset */

/* ---- text from a watched process ----------------------------------------
 * Every string read from a region or a snapshot (command line, co_name,
 * co_filename, reasons, guard texts, ...) is written by another process,
 * possibly another user's: it may hold terminal controls (ESC/CSI/OSC
 * sequences, C1 controls raw or UTF-8 encoded), invalid UTF-8, or the
 * bidirectional formatting characters that reorder what a terminal shows.
 * Every tool passes such a string through this one walker before it
 * reaches a terminal or an output file; the mode adds what the output
 * format needs.  Replaced: C0 controls, DEL, U+0080..U+009F, U+061C,
 * U+200E/U+200F, U+202A..U+202E, U+2066..U+2069, and every byte that does
 * not start a valid UTF-8 sequence (overlong forms and surrogates
 * included), one '?' (or escape) each. */
typedef enum StrEscape {
    STR_TEXT,       /* terminal text: newline kept, tab -> ' ', the rest -> '?' */
    STR_LINE,       /* one line of terminal text: newline and tab -> ' ' too */
    STR_JSON,       /* inside a JSON string: " and \ escaped, \n \t \r, other
                       controls \uXXXX, invalid UTF-8 \ufffd */
    STR_HTML,       /* Graphviz HTML-like label: & < > " ' as entities, newline -> ' ' */
    STR_HTML_BR,    /* the same, newline -> <BR ALIGN="LEFT"/> */
    STR_DOT,        /* Graphviz escString: backslash doubled, newline -> the escape \n */
} StrEscape;

/* Appends `s` (NULL: nothing) escaped for `mode`, cut after `max` characters
 * with "…" (U+2026) when longer; max 0: no limit. */
void sb_add_escaped(StrBuf *sb, const char *s, StrEscape mode, size_t max);

/* A new STR_TEXT copy of `s` (NULL -> ""): safe to print (dynamo-top). */
char *xstrdup_clean(const char *s);

/* Writes `s` (NULL: nothing) escaped for `mode` to `out`. */
void fput_escaped(FILE *out, const char *s, StrEscape mode);

/* `s` as STR_LINE into dst (cap > 0 bytes, NUL-terminated, cut at a
 * character boundary); allocates nothing (the reader library's messages).
 * Returns dst. */
char *str_clean(char *dst, size_t cap, const char *s);

/* "1.23 s", "45.6 ms", "789 us", "12 ns", and "0" for zero, into buf;
 * returns buf. */
char *fmt_ns(char *buf, size_t len, uint64_t ns);

#endif /* INSPECT_STRUTIL_H */
