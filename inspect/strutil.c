/* strutil.c — checked allocation and the growable StrBuf for the tools.
 *
 * Owns only the out-of-memory handler.  Must not know about curses,
 * Graphviz or the reader: dynamo-top and dynamo-dot build on it.
 */
#include "strutil.h"

#include <errno.h>      /* program_invocation_short_name */
#include <stdio.h>      /* vsnprintf, fprintf */
#include <stdlib.h>     /* malloc, exit */
#include <string.h>     /* memcpy, strlen */

static StrutilOomHandler *oom_handler;     /* NULL: default_oom */

static void default_oom(size_t bytes)
{
    (void)bytes;
    fprintf(stderr, "%s: out of memory\n", program_invocation_short_name);
    exit(1);
}

static void oom(size_t bytes)
{
    (oom_handler ? oom_handler : default_oom)(bytes);
    exit(1);    /* a handler that returns still must not let the caller go on */
}

void strutil_set_oom(StrutilOomHandler *handler)
{
    oom_handler = handler;
}

void *xmalloc(size_t n)
{
    void *p = malloc(n ? n : 1);
    if (!p)
        oom(n);
    return p;
}

void *xcalloc(size_t count, size_t size)
{
    void *p = calloc(count ? count : 1, size ? size : 1);
    if (!p)
        oom(count * size);
    return p;
}

void *xrealloc(void *p, size_t n)
{
    void *q = realloc(p, n ? n : 1);
    if (!q)
        oom(n);
    return q;
}

char *xstrdup(const char *s)
{
    return xstrndup(s ? s : "", s ? strlen(s) : 0);
}

char *xstrndup(const char *s, size_t n)
{
    char *d = xmalloc(n + 1);
    memcpy(d, s, n);
    d[n] = '\0';
    return d;
}

char *xasprintf(const char *fmt, ...)
{
    StrBuf sb;
    va_list ap;
    sb_init(&sb);
    va_start(ap, fmt);
    sb_vaddf(&sb, fmt, ap);
    va_end(ap);
    return sb_steal(&sb);
}

/* ---- StrBuf ---- */

void sb_init(StrBuf *sb)
{
    sb->s = NULL;
    sb->len = sb->cap = 0;
}

void sb_free(StrBuf *sb)
{
    free(sb->s);
    sb_init(sb);
}

void sb_clear(StrBuf *sb)
{
    sb->len = 0;
    if (sb->s)
        sb->s[0] = '\0';
}

/* Makes room for `extra` more bytes plus the NUL. */
static void reserve(StrBuf *sb, size_t extra)
{
    if (sb->len + extra + 1 <= sb->cap)
        return;
    size_t cap = sb->cap ? sb->cap : 64;
    while (cap < sb->len + extra + 1)
        cap *= 2;
    sb->s = xrealloc(sb->s, cap);
    sb->cap = cap;
}

void sb_addn(StrBuf *sb, const char *s, size_t n)
{
    reserve(sb, n);
    memcpy(sb->s + sb->len, s, n);
    sb->len += n;
    sb->s[sb->len] = '\0';
}

void sb_add(StrBuf *sb, const char *s)
{
    sb_addn(sb, s ? s : "", s ? strlen(s) : 0);
}

void sb_vaddf(StrBuf *sb, const char *fmt, va_list ap)
{
    va_list again;
    va_copy(again, ap);
    int n = vsnprintf(NULL, 0, fmt, again);     /* length only */
    va_end(again);
    if (n < 0)      /* encoding error? add nothing */
        return;
    reserve(sb, (size_t)n);
    vsnprintf(sb->s + sb->len, (size_t)n + 1, fmt, ap);
    sb->len += (size_t)n;
}

void sb_addf(StrBuf *sb, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    sb_vaddf(sb, fmt, ap);
    va_end(ap);
}

char *sb_steal(StrBuf *sb)
{
    char *s = sb->s ? sb->s : xstrdup("");
    sb_init(sb);
    return s;
}

/* ---- numbers ---- */

char *fmt_ns(char *buf, size_t len, uint64_t ns)
{
    if (ns >= 1000000000ull)
        snprintf(buf, len, "%.2f s", (double)ns / 1e9);
    else if (ns >= 1000000ull)
        snprintf(buf, len, "%.1f ms", (double)ns / 1e6);
    else if (ns >= 1000ull)
        snprintf(buf, len, "%.0f us", (double)ns / 1e3);
    else if (ns)
        snprintf(buf, len, "%llu ns", (unsigned long long)ns);
    else
        snprintf(buf, len, "0");
    return buf;
}
