/* strutil.c — checked allocation, the growable StrBuf and the escaping of
 * text from a watched process, for the tools and the reader library.
 *
 * Owns only the out-of-memory handler.  Must not know about curses,
 * Graphviz or the reader: dynamo-top, dynamo-dot and dynamo-inspect build
 * on it.  The escaping (sb_add_escaped and its wrappers) is the only place
 * that decides which characters of hostile text may reach an output.
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

/* ---- escaping ---- */

/* Where escaped text goes: a StrBuf, a FILE, or a fixed buffer (no
 * allocation; output stops at the last whole piece that fits). */
typedef struct {
    StrBuf *sb;
    FILE *f;
    char *buf;
    size_t cap, len;            /* buf: bytes available (NUL included), used */
    int full;                   /* buf: a piece did not fit, the rest is dropped */
} Sink;

static void put(Sink *k, const char *p, size_t n)
{
    if (k->sb)
        sb_addn(k->sb, p, n);
    else if (k->f)
        fwrite(p, 1, n, k->f);
    else if (!k->full && k->len + n < k->cap) {
        memcpy(k->buf + k->len, p, n);
        k->len += n;
    }
    else
        k->full = 1;
}

static void puts_(Sink *k, const char *s)
{
    put(k, s, strlen(s));
}

/* The code point of the valid UTF-8 sequence at s in *cp and its length
 * (1..4); 0 when s does not start one: a stray continuation byte, a
 * truncated sequence, an overlong form, a surrogate, or more than U+10FFFF. */
static size_t utf8_decode(const unsigned char *s, uint32_t *cp)
{
    size_t n;
    uint32_t c = s[0], min;
    if (c < 0x80) {
        *cp = c;
        return 1;
    }
    if ((c & 0xE0) == 0xC0)
        n = 2, c &= 0x1F, min = 0x80;
    else if ((c & 0xF0) == 0xE0)
        n = 3, c &= 0x0F, min = 0x800;
    else if ((c & 0xF8) == 0xF0)
        n = 4, c &= 0x07, min = 0x10000;
    else
        return 0;
    for (size_t i = 1; i < n; i++) {
        if ((s[i] & 0xC0) != 0x80)      /* also stops at the NUL */
            return 0;
        c = (c << 6) | (s[i] & 0x3F);
    }
    if (c < min || c > 0x10FFFF || (c >= 0xD800 && c <= 0xDFFF))
        return 0;
    *cp = c;
    return n;
}

/* May a terminal act on code point c (control, or bidirectional formatting
 * that reorders the text shown)? */
static int unsafe(uint32_t c)
{
    return c < 0x20 || (c >= 0x7F && c <= 0x9F) || c == 0x061C || c == 0x200E || c == 0x200F
        || (c >= 0x202A && c <= 0x202E) || (c >= 0x2066 && c <= 0x2069);
}

/* One character that must not go out as itself: c is the code point, or
 * UINT32_MAX for an invalid byte. */
static void put_replaced(Sink *k, uint32_t c, StrEscape mode)
{
    char esc[16];
    switch (mode) {
    case STR_JSON:
        if (c == '\n' || c == '\t' || c == '\r')
            puts_(k, c == '\n' ? "\\n" : c == '\t' ? "\\t" : "\\r");
        else {
            snprintf(esc, sizeof esc, "\\u%04x", c == UINT32_MAX ? 0xFFFDu : (unsigned)c);
            puts_(k, esc);
        }
        return;
    case STR_HTML_BR:
        if (c == '\n') {
            puts_(k, "<BR ALIGN=\"LEFT\"/>");
            return;
        }
        break;
    case STR_DOT:
        if (c == '\n') {
            puts_(k, "\\n");
            return;
        }
        break;
    case STR_TEXT:
        if (c == '\n') {
            put(k, "\n", 1);
            return;
        }
        break;
    case STR_LINE:
    case STR_HTML:
        break;
    }
    put(k, c == '\t' || c == '\n' ? " " : "?", 1);
}

/* The characters the format itself needs escaped: the replacement, or NULL. */
static const char *syntax(char c, StrEscape mode)
{
    switch (mode) {
    case STR_JSON:
        return c == '"' ? "\\\"" : c == '\\' ? "\\\\" : NULL;
    case STR_HTML:
    case STR_HTML_BR:
        return c == '&' ? "&amp;" : c == '<' ? "&lt;" : c == '>' ? "&gt;" : c == '"' ? "&quot;"
             : c == '\'' ? "&#39;" : NULL;
    case STR_DOT:
        return c == '\\' ? "\\\\" : NULL;
    case STR_TEXT:
    case STR_LINE:
        break;
    }
    return NULL;
}

static void escape(Sink *k, const char *s, StrEscape mode, size_t max)
{
    size_t chars = 0;
    for (const unsigned char *p = (const unsigned char *)(s ? s : ""); *p && !k->full; chars++) {
        if (max && chars == max) {          /* too long? */
            puts_(k, "\xe2\x80\xa6");       /* U+2026 HORIZONTAL ELLIPSIS */
            return;
        }
        uint32_t c = 0;
        size_t n = utf8_decode(p, &c);
        const char *rep = n == 1 ? syntax((char)c, mode) : NULL;
        if (n == 0) {                       /* invalid byte? replace it alone */
            put_replaced(k, UINT32_MAX, mode);
            n = 1;
        }
        else if (unsafe(c))
            put_replaced(k, c, mode);
        else if (rep)
            puts_(k, rep);
        else
            put(k, (const char *)p, n);
        p += n;
    }
}

void sb_add_escaped(StrBuf *sb, const char *s, StrEscape mode, size_t max)
{
    Sink k = {.sb = sb};
    escape(&k, s, mode, max);
    if (!sb->s)
        sb_addn(sb, "", 0);
}

char *xstrdup_clean(const char *s)
{
    StrBuf sb;
    sb_init(&sb);
    sb_add_escaped(&sb, s, STR_TEXT, 0);
    return sb_steal(&sb);
}

void fput_escaped(FILE *out, const char *s, StrEscape mode)
{
    Sink k = {.f = out};
    escape(&k, s, mode, 0);
}

char *str_clean(char *dst, size_t cap, const char *s)
{
    Sink k = {.buf = dst, .cap = cap};
    escape(&k, s, STR_LINE, 0);
    dst[k.len] = '\0';
    return dst;
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
