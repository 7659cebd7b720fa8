/* vstr.h — small helpers of dynamo-dot: checked allocation, a growable
 * string, escaping for Graphviz HTML-like labels, number formatting.
 *
 * Owns no global state.  dynamo-dot is a short-lived tool: an allocation
 * failure ends it with a message and exit status 1 (vs_oom), so callers never
 * check the x* functions for NULL.
 */
#ifndef VIZ_VSTR_H
#define VIZ_VSTR_H

#include <stdarg.h>     /* va_list */
#include <stddef.h>     /* size_t */
#include <stdint.h>     /* uint64_t */

void *vs_xmalloc(size_t n);
void *vs_xcalloc(size_t count, size_t size);
void *vs_xrealloc(void *p, size_t n);
char *vs_xstrdup(const char *s);            /* NULL -> "" copy */

/* A growable NUL-terminated string.  Owns `s`; `s` is never NULL after
 * vs_init (an empty string until something is added). */
typedef struct VStr {
    char *s;        /* owned */
    size_t len;     /* bytes before the NUL */
    size_t cap;     /* bytes allocated */
} VStr;

void vs_init(VStr *b);
void vs_free(VStr *b);                      /* frees s; b may be reused after vs_init */
void vs_clear(VStr *b);                     /* empties, keeps the buffer */
void vs_add(VStr *b, const char *s);
void vs_addn(VStr *b, const char *s, size_t n);
void vs_addf(VStr *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void vs_vaddf(VStr *b, const char *fmt, va_list ap);
char *vs_steal(VStr *b);                    /* the owned string; vs_init b before reuse */

/* Appends `s` escaped for an HTML-like label (& < > " ' and control
 * characters), cut after `max` display characters with "…" when longer
 * (max 0: no limit).  Newlines become <BR ALIGN="LEFT"/> when `br` is set,
 * else spaces. */
void vs_add_html(VStr *b, const char *s, size_t max, int br);

/* Appends `s` for a plain (non-HTML) escString attribute (label, tooltip),
 * cut like vs_add_html: backslashes doubled, newlines as the escape "\n";
 * cgraph adds the quotes when writing. */
void vs_add_cut(VStr *b, const char *s, size_t max);

/* "1.23 s", "45.6 ms", "789 us", "12 ns" into buf; returns buf. */
char *vs_fmt_ns(char *buf, size_t len, uint64_t ns);

/* Last path component of a file name (borrowed, inside `path`). */
const char *vs_basename(const char *path);

#endif /* VIZ_VSTR_H */
