/* vstr.h — small helpers of dynamo-dot: escaping for Graphviz HTML-like
 * labels, number formatting.  Checked allocation and the growable StrBuf are
 * the shared ones of inspect/strutil.h.
 *
 * Owns no global state.  dynamo-dot is a short-lived tool: an allocation
 * failure ends it with "dynamo-dot: out of memory" and exit status 1 (the
 * strutil default), so callers never check the x* functions for NULL.
 */
#ifndef VIZ_VSTR_H
#define VIZ_VSTR_H

#include <stdarg.h>     /* va_list */
#include <stddef.h>     /* size_t */
#include <stdint.h>     /* uint64_t */

#include "strutil.h"    /* xmalloc & co., StrBuf (shared with dynamo-top) */

/* sb_init, then an empty string: b->s is never NULL afterwards, so labels
 * can be passed to Graphviz before anything was added.  Free with sb_free. */
void vs_init(StrBuf *b);

/* Appends `s` escaped for an HTML-like label (& < > " ' as entities, and
 * what sb_add_escaped replaces in any text from a process), cut after `max`
 * display characters with "…" when longer (max 0: no limit).  Newlines
 * become <BR ALIGN="LEFT"/> when `br` is set, else spaces. */
void vs_add_html(StrBuf *b, const char *s, size_t max, int br);

/* Appends `s` for a plain (non-HTML) escString attribute (label, tooltip),
 * cut like vs_add_html: backslashes doubled, newlines as the escape "\n",
 * controls replaced (sb_add_escaped, STR_DOT); cgraph adds the quotes and
 * escapes '"' when writing. */
void vs_add_cut(StrBuf *b, const char *s, size_t max);

/* "1.23 s", "45.6 ms", "789 us", "12 ns", "0 ns" into buf; returns buf. */
char *vs_fmt_ns(char *buf, size_t len, uint64_t ns);

/* Last path component of a file name (borrowed, inside `path`). */
const char *vs_basename(const char *path);

#endif /* VIZ_VSTR_H */
