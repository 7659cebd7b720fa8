/* strutil.h — checked allocation, a growable string and fmt_ns, shared by
 * the tools (dynamo-top, dynamo-dot) through build/libdynamo_inspect.a.
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

/* "1.23 s", "45.6 ms", "789 us", "12 ns", and "0" for zero, into buf;
 * returns buf. */
char *fmt_ns(char *buf, size_t len, uint64_t ns);

#endif /* INSPECT_STRUTIL_H */
