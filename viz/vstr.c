/* vstr.c — allocation, growable strings and label escaping for dynamo-dot.
 *
 * Owns nothing beyond the buffers it hands out.  Must not know about the
 * reader or Graphviz: the drawing modules build their labels with it.
 */
#include "vstr.h"

#include <stdio.h>      /* vsnprintf, fprintf */
#include <stdlib.h>     /* malloc, exit */
#include <string.h>     /* memcpy, strlen */

static void vs_oom(void)
{
    fputs("dynamo-dot: out of memory\n", stderr);
    exit(1);
}

void *vs_xmalloc(size_t n)
{
    void *p = malloc(n ? n : 1);
    if (p == NULL)
        vs_oom();
    return p;
}

void *vs_xcalloc(size_t count, size_t size)
{
    void *p = calloc(count ? count : 1, size ? size : 1);
    if (p == NULL)
        vs_oom();
    return p;
}

void *vs_xrealloc(void *p, size_t n)
{
    void *q = realloc(p, n ? n : 1);
    if (q == NULL)
        vs_oom();
    return q;
}

char *vs_xstrdup(const char *s)
{
    if (s == NULL)
        s = "";
    size_t n = strlen(s) + 1;
    char *p = vs_xmalloc(n);
    memcpy(p, s, n);
    return p;
}

void vs_init(VStr *b)
{
    b->cap = 64;
    b->len = 0;
    b->s = vs_xmalloc(b->cap);
    b->s[0] = '\0';
}

void vs_free(VStr *b)
{
    free(b->s);
    b->s = NULL;
    b->len = b->cap = 0;
}

void vs_clear(VStr *b)
{
    b->len = 0;
    b->s[0] = '\0';
}

/* Makes room for `extra` more bytes plus the NUL. */
static void reserve(VStr *b, size_t extra)
{
    if (b->len + extra + 1 <= b->cap)
        return;
    size_t cap = b->cap ? b->cap : 64;
    while (cap < b->len + extra + 1)
        cap *= 2;
    b->s = vs_xrealloc(b->s, cap);
    b->cap = cap;
}

void vs_addn(VStr *b, const char *s, size_t n)
{
    reserve(b, n);
    memcpy(b->s + b->len, s, n);
    b->len += n;
    b->s[b->len] = '\0';
}

void vs_add(VStr *b, const char *s)
{
    vs_addn(b, s, strlen(s));
}

void vs_vaddf(VStr *b, const char *fmt, va_list ap)
{
    va_list again;
    va_copy(again, ap);
    int n = vsnprintf(NULL, 0, fmt, ap);
    if (n > 0) {
        reserve(b, (size_t)n);
        vsnprintf(b->s + b->len, (size_t)n + 1, fmt, again);
        b->len += (size_t)n;
    }
    va_end(again);
}

void vs_addf(VStr *b, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vs_vaddf(b, fmt, ap);
    va_end(ap);
}

char *vs_steal(VStr *b)
{
    char *s = b->s;
    b->s = NULL;
    b->len = b->cap = 0;
    return s;
}

/* Bytes of the UTF-8 sequence starting with `c` (1 for stray bytes). */
static size_t utf8_len(unsigned char c)
{
    if (c >= 0xf0 && c < 0xf8)
        return 4;
    if (c >= 0xe0)
        return c < 0xf0 ? 3 : 1;
    if (c >= 0xc0)
        return 2;
    return 1;
}

/* Shared walker: copies `s` character by character, escaping for HTML when
 * `html` is set; stops after `max` characters (0: no limit). */
static void add_escaped(VStr *b, const char *s, size_t max, int html, int br)
{
    size_t chars = 0;
    for (const char *p = s; *p; chars++) {
        if (max && chars == max) {          /* too long? */
            vs_add(b, "\xe2\x80\xa6");      /* U+2026 HORIZONTAL ELLIPSIS */
            return;
        }
        unsigned char c = (unsigned char)*p;
        size_t n = utf8_len(c);
        for (size_t k = 1; k < n; k++)      /* truncated sequence? copy the lead byte only */
            if (p[k] == '\0' || ((unsigned char)p[k] & 0xc0) != 0x80)
                n = 1;
        if (c == '\n' && html)
            vs_add(b, br ? "<BR ALIGN=\"LEFT\"/>" : " ");
        else if (c == '\n')
            vs_add(b, "\\n");             /* escString line break */
        else if (!html && c == '\\')
            vs_add(b, "\\\\");          /* escString: keep a literal backslash */
        else if (c < 0x20 || c == 0x7f)
            vs_add(b, " ");
        else if (html && c == '&')
            vs_add(b, "&amp;");
        else if (html && c == '<')
            vs_add(b, "&lt;");
        else if (html && c == '>')
            vs_add(b, "&gt;");
        else if (html && c == '"')
            vs_add(b, "&quot;");
        else if (html && c == '\'')
            vs_add(b, "&#39;");
        else if (n == 1 && c >= 0x80)       /* invalid UTF-8 byte */
            vs_add(b, "?");
        else
            vs_addn(b, p, n);
        p += n;
    }
}

void vs_add_html(VStr *b, const char *s, size_t max, int br)
{
    add_escaped(b, s, max, 1, br);
}

void vs_add_cut(VStr *b, const char *s, size_t max)
{
    add_escaped(b, s, max, 0, 0);
}

char *vs_fmt_ns(char *buf, size_t len, uint64_t ns)
{
    if (ns >= 1000000000ull)
        snprintf(buf, len, "%.2f s", (double)ns / 1e9);
    else if (ns >= 1000000ull)
        snprintf(buf, len, "%.1f ms", (double)ns / 1e6);
    else if (ns >= 1000ull)
        snprintf(buf, len, "%.0f us", (double)ns / 1e3);
    else
        snprintf(buf, len, "%llu ns", (unsigned long long)ns);
    return buf;
}

const char *vs_basename(const char *path)
{
    const char *slash = strrchr(path, '/');
    return slash ? slash + 1 : path;
}
