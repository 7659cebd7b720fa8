/* util.c — padding, line lists and number formatting for dynamo-top, on
 * top of the shared allocation, StrBuf and text cleaning (inspect/strutil.c).
 * Knows nothing about curses or the reader; out-of-memory goes through
 * crt_oom (installed by main), which restores the terminal first. */
#include "util.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void sb_pad(StrBuf *sb, size_t columns)
{
    size_t w = sb->s ? utf8_width(sb->s) : 0;
    while (w++ < columns)
        sb_addn(sb, " ", 1);
}

/* ---- Lines ---- */

void lines_init(Lines *ls)
{
    ls->v = NULL;
    ls->n = ls->cap = 0;
}

void lines_clear(Lines *ls)
{
    for (size_t i = 0; i < ls->n; i++)
        free(ls->v[i].text);
    ls->n = 0;
}

void lines_free(Lines *ls)
{
    lines_clear(ls);
    free(ls->v);
    lines_init(ls);
}

static void add_one(Lines *ls, Color color, int64_t fid, int64_t cid, const char *s, size_t n)
{
    if (ls->n == ls->cap) {
        ls->cap = ls->cap ? ls->cap * 2 : 32;
        ls->v = xrealloc(ls->v, ls->cap * sizeof *ls->v);
    }
    Line *l = &ls->v[ls->n++];
    l->text = xstrndup(s, n);
    /* tabs would break column arithmetic: show them as one space */
    for (char *p = l->text; *p; p++)
        if (*p == '\t' || *p == '\r')
            *p = ' ';
    l->color = color;
    l->frame_id = fid;
    l->compile_id = cid;
}

void lines_add(Lines *ls, Color color, int64_t frame_id, int64_t compile_id, const char *text)
{
    const char *p = text ? text : "";
    for (;;) {
        const char *nl = strchr(p, '\n');
        if (!nl) {
            add_one(ls, color, frame_id, compile_id, p, strlen(p));
            return;
        }
        add_one(ls, color, frame_id, compile_id, p, (size_t)(nl - p));
        p = nl + 1;
        if (!*p)    /* a trailing newline ends the text, not a new empty line */
            return;
    }
}

void lines_addf(Lines *ls, Color color, const char *fmt, ...)
{
    StrBuf sb;
    va_list ap;
    sb_init(&sb);
    va_start(ap, fmt);
    sb_vaddf(&sb, fmt, ap);
    va_end(ap);
    lines_add(ls, color, -1, -1, sb.s ? sb.s : "");
    sb_free(&sb);
}

/* ---- UTF-8 ---- */

size_t utf8_width(const char *s)
{
    size_t w = 0;
    for (; *s; s++)
        if (((unsigned char)*s & 0xC0) != 0x80)    /* not a continuation byte? */
            w++;
    return w;
}

size_t utf8_prefix(const char *s, size_t columns)
{
    size_t i = 0, w = 0;
    while (s[i]) {
        if (((unsigned char)s[i] & 0xC0) != 0x80) {
            if (w == columns)
                break;
            w++;
        }
        i++;
    }
    return i;
}

/* ---- numbers ---- */

char *fmt_duration(char *buf, size_t len, uint64_t secs)
{
    uint64_t d = secs / 86400, h = secs / 3600 % 24, m = secs / 60 % 60, s = secs % 60;
    if (d)
        snprintf(buf, len, "%llud %02llu:%02llu:%02llu", (unsigned long long)d,
                 (unsigned long long)h, (unsigned long long)m, (unsigned long long)s);
    else
        snprintf(buf, len, "%02llu:%02llu:%02llu", (unsigned long long)h,
                 (unsigned long long)m, (unsigned long long)s);
    return buf;
}

char *fmt_percent(char *buf, size_t len, uint64_t part, uint64_t whole)
{
    if (!whole)
        snprintf(buf, len, "-");
    else
        snprintf(buf, len, "%.1f%%", 100.0 * (double)part / (double)whole);
    return buf;
}

char *fmt_count(char *buf, size_t len, uint64_t n)
{
    if (n >= 10000000ull)
        snprintf(buf, len, "%.1fM", (double)n / 1e6);
    else if (n >= 100000ull)
        snprintf(buf, len, "%.1fk", (double)n / 1e3);
    else
        snprintf(buf, len, "%llu", (unsigned long long)n);
    return buf;
}

int str_contains_ci(const char *hay, const char *needle)
{
    if (!needle || !*needle)
        return 1;
    if (!hay)
        return 0;
    size_t n = strlen(needle);
    for (; *hay; hay++) {
        size_t i = 0;
        while (i < n && hay[i] &&
               tolower((unsigned char)hay[i]) == tolower((unsigned char)needle[i]))
            i++;
        if (i == n)
            return 1;
    }
    return 0;
}
