/* vstr.c — label escaping and formatting for dynamo-dot, on the shared
 * StrBuf, checked allocation and escaping (sb_add_escaped) of
 * inspect/strutil.c.
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

void vs_add_html(StrBuf *b, const char *s, size_t max, int br)
{
    sb_add_escaped(b, s, br ? STR_HTML_BR : STR_HTML, max);
}

void vs_add_cut(StrBuf *b, const char *s, size_t max)
{
    sb_add_escaped(b, s, STR_DOT, max);
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
