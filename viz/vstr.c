/* vstr.c — label escaping and formatting for dynamo-dot, on the shared
 * StrBuf and checked allocation of inspect/strutil.c.
 *
 * Owns nothing beyond the buffers it hands out.  Must not know about the
 * reader or Graphviz: the drawing modules build their labels with it.
 */
#include "vstr.h"

#include <stdio.h>      /* snprintf */
#include <string.h>     /* strrchr */

void vs_init(StrBuf *b)
{
    sb_init(b);
    sb_addn(b, "", 0);      /* s is an empty string, never NULL */
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
static void add_escaped(StrBuf *b, const char *s, size_t max, int html, int br)
{
    size_t chars = 0;
    for (const char *p = s; *p; chars++) {
        if (max && chars == max) {          /* too long? */
            sb_add(b, "\xe2\x80\xa6");      /* U+2026 HORIZONTAL ELLIPSIS */
            return;
        }
        unsigned char c = (unsigned char)*p;
        size_t n = utf8_len(c);
        for (size_t k = 1; k < n; k++)      /* truncated sequence? copy the lead byte only */
            if (p[k] == '\0' || ((unsigned char)p[k] & 0xc0) != 0x80)
                n = 1;
        if (c == '\n' && html)
            sb_add(b, br ? "<BR ALIGN=\"LEFT\"/>" : " ");
        else if (c == '\n')
            sb_add(b, "\\n");             /* escString line break */
        else if (!html && c == '\\')
            sb_add(b, "\\\\");          /* escString: keep a literal backslash */
        else if (c < 0x20 || c == 0x7f)
            sb_add(b, " ");
        else if (html && c == '&')
            sb_add(b, "&amp;");
        else if (html && c == '<')
            sb_add(b, "&lt;");
        else if (html && c == '>')
            sb_add(b, "&gt;");
        else if (html && c == '"')
            sb_add(b, "&quot;");
        else if (html && c == '\'')
            sb_add(b, "&#39;");
        else if (n == 1 && c >= 0x80)       /* invalid UTF-8 byte */
            sb_add(b, "?");
        else
            sb_addn(b, p, n);
        p += n;
    }
}

void vs_add_html(StrBuf *b, const char *s, size_t max, int br)
{
    add_escaped(b, s, max, 1, br);
}

void vs_add_cut(StrBuf *b, const char *s, size_t max)
{
    add_escaped(b, s, max, 0, 0);
}

char *vs_fmt_ns(char *buf, size_t len, uint64_t ns)
{
    if (ns == 0) {      /* fmt_ns says "0"; labels keep the unit */
        snprintf(buf, len, "0 ns");
        return buf;
    }
    return fmt_ns(buf, len, ns);
}

const char *vs_basename(const char *path)
{
    const char *slash = strrchr(path, '/');
    return slash ? slash + 1 : path;
}
