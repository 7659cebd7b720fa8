/* inspect/trace.c — the record of a whole run (see trace.h): the recorder
 * (snapshots -> trace events), the JSON-lines writer and the loader.
 *
 * Owns the one implementation of the format: field names and types come
 * from trace.h's X-macro lists through the FIELDS tables below, for writing
 * and parsing alike.  The parser knows only flat objects of strings and
 * integers (all the format has); it is bounded by the input and reports
 * the first defect as "FILE:LINE: what".  Must not print (the tools do).
 */
#include "trace.h"

#include <errno.h>      /* errno */
#include <stddef.h>     /* offsetof */
#include <stdlib.h>     /* free */
#include <string.h>     /* strcmp, memset */
#include <sys/stat.h>   /* stat: regular files only */

#include "strutil.h"    /* xmalloc & co., StrBuf, sb_add_escaped */

/* ---- the field tables ---------------------------------------------------------- */

typedef struct {
    const char *name;
    char type;          /* 'I' int64_t, 'S' char * */
    size_t off;         /* in DrTraceHeader / DrTraceEvent */
} Field;

#define TYPE_I 'I'
#define TYPE_S 'S'
#define HEAD_ROW(name, type) {#name, TYPE_##type, offsetof(DrTraceHeader, name)},
#define EVENT_ROW(name, type) {#name, TYPE_##type, offsetof(DrTraceEvent, name)},
static const Field HEAD_FIELDS[] = {DT_TRACE_HEADER_FIELDS(HEAD_ROW)};
static const Field EVENT_FIELDS[] = {DT_TRACE_EVENT_FIELDS(EVENT_ROW)};
#define N_HEAD (sizeof HEAD_FIELDS / sizeof HEAD_FIELDS[0])
#define N_EVENT (sizeof EVENT_FIELDS / sizeof EVENT_FIELDS[0])

static int64_t *int_at(void *obj, const Field *f) { return (int64_t *)((char *)obj + f->off); }
static char **str_at(void *obj, const Field *f) { return (char **)((char *)obj + f->off); }

/* Every field of obj set to -1 / a new "". */
static void fields_init(void *obj, const Field *fields, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        if (fields[i].type == 'I')
            *int_at(obj, &fields[i]) = -1;
        else
            *str_at(obj, &fields[i]) = xstrdup("");
    }
}

static void fields_free(void *obj, const Field *fields, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (fields[i].type == 'S') {
            free(*str_at(obj, &fields[i]));
            *str_at(obj, &fields[i]) = NULL;
        }
}

static void set_str(char **dst, const char *s)
{
    free(*dst);
    *dst = xstrdup(s);
}

/* ---- the trace in memory ---------------------------------------------------------- */

void dr_trace_init(DrTrace *t)
{
    memset(t, 0, sizeof *t);
    fields_init(&t->head, HEAD_FIELDS, N_HEAD);
    t->end = xstrdup("");
    t->end_ns = -1;
}

void dr_trace_drop_events(DrTrace *t)
{
    for (size_t i = 0; i < t->n; i++)
        fields_free(&t->ev[i], EVENT_FIELDS, N_EVENT);
    t->n = 0;
}

void dr_trace_free(DrTrace *t)
{
    dr_trace_drop_events(t);
    free(t->ev);
    fields_free(&t->head, HEAD_FIELDS, N_HEAD);
    free(t->end);
    free(t->fails);
    memset(t, 0, sizeof *t);
}

/* A new event at the end of t, its fields empty. */
static DrTraceEvent *push(DrTrace *t)
{
    if (t->n == t->cap) {
        t->cap = t->cap ? 2 * t->cap : 64;
        t->ev = xrealloc(t->ev, t->cap * sizeof *t->ev);
    }
    DrTraceEvent *e = &t->ev[t->n++];
    memset(e, 0, sizeof *e);
    fields_init(e, EVENT_FIELDS, N_EVENT);
    return e;
}

/* ---- the recorder ---------------------------------------------------------------- */

/* The frame facts of an event: from its code, and its record's context. */
static void set_frame(DrTraceEvent *e, const DrCode *code, const DrRecord *rec)
{
    if (code != NULL) {
        set_str(&e->name, code->name);
        set_str(&e->file, code->filename);
        e->line = code->firstlineno;
        if (e->frame < 0 && code->frame_id != UINT32_MAX)
            e->frame = code->frame_id;
    }
    if (rec != NULL)
        set_str(&e->context, rec->context);
}

static void add_ring_event(DrTrace *t, DrSnapshot *s, const DrEvent *ev)
{
    DrTraceEvent *e = push(t);
    e->seq = (int64_t)ev->seq;
    e->t_ns = (int64_t)ev->time_ns;
    e->kind_id = ev->kind;
    set_str(&e->kind, ev->kind_name);
    e->frame = ev->frame_id;
    e->compile = ev->compile_id;
    set_str(&e->text, ev->text);
    set_str(&e->where, ev->where);
    set_str(&e->property, ev->property);
    set_str(&e->expected, ev->expected);
    set_str(&e->actual, ev->actual);
    DrEntry *entry = ev->entry;
    if (entry == NULL && ev->frame_id >= 0 && ev->compile_id >= 0)
        entry = dr_find_entry(s, (uint32_t)ev->frame_id, (uint32_t)ev->compile_id);
    const DrRecord *rec = entry != NULL ? entry->record : NULL;
    set_frame(e, ev->code != NULL ? ev->code : entry != NULL ? entry->code : NULL, rec);
    if (rec != NULL && (ev->kind == DT_EV_COMPILE || ev->kind == DT_EV_LIMIT)) {
        set_str(&e->status, rec->status_name);
        e->compile_ns = (int64_t)rec->compile_ns;
    }
    if (rec != NULL && ev->guard_index >= 0 && (size_t)ev->guard_index < rec->n_guards)
        set_str(&e->guard, rec->guards[ev->guard_index].text);
}

static void add_guard_fail(DrTrace *t, const DrEntry *entry, uint64_t count)
{
    DrTraceEvent *e = push(t);
    e->seq = 0;
    e->t_ns = (int64_t)(entry->last_fail_ns ? entry->last_fail_ns : entry->created_ns);
    e->kind_id = DT_EV_GUARD_FAIL;
    set_str(&e->kind, dt_event_kind_name(DT_EV_GUARD_FAIL));
    e->frame = entry->frame_id;
    e->compile = entry->compile_id;
    set_frame(e, entry->code, entry->record);
    e->count = (int64_t)count;
    const DrRecord *rec = entry->record;
    if (entry->last_fail_guard >= 0 && (size_t)entry->last_fail_guard < rec->n_guards) {
        set_str(&e->guard, rec->guards[entry->last_fail_guard].text);
        set_str(&e->text, rec->guards[entry->last_fail_guard].text);
    }
    set_str(&e->property, entry->last_fail_property);
    set_str(&e->expected, entry->last_fail_expected);
    set_str(&e->actual, entry->last_fail_actual);
}

static void start(DrTrace *t, const DrSnapshot *s, const char *source)
{
    const DrProcess *p = &s->process;
    t->head.pid = p->pid;
    set_str(&t->head.argv, p->argv);
    set_str(&t->head.python, p->python_version);
    set_str(&t->head.torch, p->torch_version);
    t->head.start_ns = (int64_t)p->start_ns;
    set_str(&t->head.source, source ? source : "");
    t->started = 1;
}

size_t dr_trace_poll(DrTrace *t, DrSnapshot *s, const char *source)
{
    size_t before = t->n;
    if (!t->started)
        start(t, s, source);
    for (size_t i = 0; i < s->n_events; i++) {
        const DrEvent *ev = &s->events[i];
        if (ev->seq <= t->last_seq)                 /* seen at an earlier poll? */
            continue;
        if (ev->seq > t->last_seq + 1)              /* overwritten before we saw them */
            t->lost += ev->seq - t->last_seq - 1;
        t->last_seq = ev->seq;
        add_ring_event(t, s, ev);
        if (ev->kind == DT_EV_RESET)                /* slots start over */
            memset(t->fails, 0, t->n_fails * sizeof *t->fails);
    }
    if (t->n_fails < s->n_entries) {
        t->fails = xrealloc(t->fails, s->n_entries * sizeof *t->fails);
        memset(t->fails + t->n_fails, 0, (s->n_entries - t->n_fails) * sizeof *t->fails);
        t->n_fails = s->n_entries;
    }
    for (size_t i = 0; i < s->n_entries; i++) {
        const DrEntry *entry = &s->entries[i];
        uint64_t was = t->fails[i], now = entry->guard_failures;
        if (now != was)
            add_guard_fail(t, entry, now > was ? now - was : now);
        t->fails[i] = now;
    }
    return t->n - before;
}

/* ---- writing ------------------------------------------------------------------- */

/* The fields of obj that are set, each after a comma unless `first`. */
static void add_fields(StrBuf *b, const void *obj, const Field *fields, size_t n, int first)
{
    for (size_t i = 0; i < n; i++) {
        const Field *f = &fields[i];
        const char *sep = first ? "" : ",";
        if (f->type == 'I') {
            int64_t v = *int_at((void *)obj, f);
            if (v != -1)                            /* absent: left out */
                sb_addf(b, "%s\"%s\":%lld", sep, f->name, (long long)v), first = 0;
        } else {
            const char *v = *str_at((void *)obj, f);
            if (v != NULL && *v) {
                sb_addf(b, "%s\"%s\":\"", sep, f->name), first = 0;
                sb_add_escaped(b, v, STR_JSON, 0);
                sb_add(b, "\"");
            }
        }
    }
}

static int put_line(FILE *out, StrBuf *b)
{
    sb_add(b, "}\n");
    int rc = fwrite(b->s, 1, b->len, out) == b->len ? 0 : -1;
    sb_free(b);
    return rc;
}

int dr_trace_write_header(FILE *out, const DrTrace *t)
{
    StrBuf b;
    sb_init(&b);
    sb_addf(&b, "{\"format\":\"%s\",\"version\":%d", DT_TRACE_FORMAT, DT_TRACE_VERSION);
    add_fields(&b, &t->head, HEAD_FIELDS, N_HEAD, 0);
    return put_line(out, &b);
}

int dr_trace_write_events(FILE *out, const DrTrace *t, size_t from)
{
    for (size_t i = from; i < t->n; i++) {
        StrBuf b;
        sb_init(&b);
        sb_add(&b, "{");
        add_fields(&b, &t->ev[i], EVENT_FIELDS, N_EVENT, 1);
        if (put_line(out, &b) != 0)
            return -1;
    }
    return fflush(out) == 0 ? 0 : -1;
}

int dr_trace_write_end(FILE *out, const DrTrace *t, const char *why, int64_t t_ns)
{
    StrBuf b;
    sb_init(&b);
    sb_add(&b, "{\"end\":\"");
    sb_add_escaped(&b, why, STR_JSON, 0);
    sb_addf(&b, "\",\"t_ns\":%lld,\"lost\":%llu", (long long)t_ns, (unsigned long long)t->lost);
    if (put_line(out, &b) != 0)
        return -1;
    return fflush(out) == 0 ? 0 : -1;
}

/* ---- reading -------------------------------------------------------------------- */

/* One line being parsed. */
typedef struct {
    const char *p, *end;
    const char *err;        /* static: the first defect, NULL none */
} Cursor;

static void skip_ws(Cursor *c)
{
    while (c->p < c->end && (*c->p == ' ' || *c->p == '\t' || *c->p == '\r'))
        c->p++;
}

static int expect(Cursor *c, char ch, const char *err)
{
    skip_ws(c);
    if (c->p < c->end && *c->p == ch) {
        c->p++;
        return 0;
    }
    c->err = c->p >= c->end ? "truncated line (the record ends inside an object)" : err;
    return -1;
}

static int hex4(const char *p, unsigned *v)
{
    *v = 0;
    for (int i = 0; i < 4; i++) {
        char h = p[i];
        unsigned d = h >= '0' && h <= '9' ? (unsigned)(h - '0')
                   : h >= 'a' && h <= 'f' ? (unsigned)(h - 'a' + 10)
                   : h >= 'A' && h <= 'F' ? (unsigned)(h - 'A' + 10) : 16u;
        if (d == 16)
            return -1;
        *v = *v * 16 + d;
    }
    return 0;
}

static void add_utf8(StrBuf *b, unsigned cp)
{
    char u[4];
    size_t n;
    if (cp < 0x80) { u[0] = (char)cp; n = 1; }
    else if (cp < 0x800) { u[0] = (char)(0xc0 | cp >> 6); u[1] = (char)(0x80 | (cp & 0x3f)); n = 2; }
    else if (cp < 0x10000) {
        u[0] = (char)(0xe0 | cp >> 12); u[1] = (char)(0x80 | ((cp >> 6) & 0x3f));
        u[2] = (char)(0x80 | (cp & 0x3f)); n = 3;
    } else {
        u[0] = (char)(0xf0 | cp >> 18); u[1] = (char)(0x80 | ((cp >> 12) & 0x3f));
        u[2] = (char)(0x80 | ((cp >> 6) & 0x3f)); u[3] = (char)(0x80 | (cp & 0x3f)); n = 4;
    }
    sb_addn(b, u, n);
}

/* A JSON string into a new StrBuf (caller frees); -1 with c->err. */
static int parse_string(Cursor *c, StrBuf *out)
{
    sb_init(out);
    sb_addn(out, "", 0);
    if (expect(c, '"', "expected a string") != 0)
        return -1;
    while (c->p < c->end && *c->p != '"') {
        unsigned char ch = (unsigned char)*c->p;
        if (ch < 0x20) {
            c->err = "control character inside a string";
            return -1;
        }
        if (ch != '\\') {
            sb_addn(out, c->p++, 1);
            continue;
        }
        if (c->end - c->p < 2)
            break;
        char esc = c->p[1];
        c->p += 2;
        const char *simple = strchr("\"\\/bfnrt", esc);
        if (simple != NULL && esc != '\0') {
            static const char TO[] = "\"\\/\b\f\n\r\t";
            sb_addn(out, &TO[simple - "\"\\/bfnrt"], 1);
            continue;
        }
        unsigned cp;
        if (esc != 'u' || c->end - c->p < 4 || hex4(c->p, &cp) != 0) {
            c->err = "bad escape in a string";
            return -1;
        }
        c->p += 4;
        if (cp >= 0xd800 && cp < 0xdc00 && c->end - c->p >= 6 && c->p[0] == '\\'
            && c->p[1] == 'u') {                    /* a surrogate pair? */
            unsigned lo;
            if (hex4(c->p + 2, &lo) == 0 && lo >= 0xdc00 && lo < 0xe000) {
                cp = 0x10000 + ((cp - 0xd800) << 10) + (lo - 0xdc00);
                c->p += 6;
            }
        }
        if (cp == 0 || (cp >= 0xd800 && cp < 0xe000))
            cp = 0xfffd;
        add_utf8(out, cp);
    }
    if (c->p >= c->end) {
        c->err = "truncated line (a string is not closed)";
        return -1;
    }
    c->p++;
    return 0;
}

static int parse_int(Cursor *c, int64_t *v)
{
    skip_ws(c);
    int neg = c->p < c->end && *c->p == '-';
    const char *q = c->p + neg;
    uint64_t acc = 0;
    if (q >= c->end || *q < '0' || *q > '9') {
        c->err = "expected a string or an integer";
        return -1;
    }
    while (q < c->end && *q >= '0' && *q <= '9') {
        if (acc > (UINT64_C(1) << 62)) {
            c->err = "integer out of range";
            return -1;
        }
        acc = acc * 10 + (uint64_t)(*q++ - '0');
    }
    if (q < c->end && (*q == '.' || *q == 'e' || *q == 'E')) {
        c->err = "expected an integer, not a fraction";
        return -1;
    }
    c->p = q;
    *v = neg ? -(int64_t)acc : (int64_t)acc;
    return 0;
}

static const Field *field_named(const Field *fields, size_t n, const char *name)
{
    for (size_t i = 0; i < n; i++)
        if (strcmp(fields[i].name, name) == 0)
            return &fields[i];
    return NULL;
}

/* What one line sets besides the fields of `obj`. */
typedef struct {
    char *format, *end;     /* owned, NULL when absent */
    int64_t version, t_ns, lost;
} Extra;

/* One line `{...}` into obj (fields of `fields`) and x; -1 with c->err. */
static int parse_line(Cursor *c, void *obj, const Field *fields, size_t n, Extra *x)
{
    if (expect(c, '{', "not a JSON object (a record line starts with '{')") != 0)
        return -1;
    skip_ws(c);
    if (c->p < c->end && *c->p == '}') {
        c->p++;
        return 0;
    }
    for (;;) {
        StrBuf key, sval;
        int64_t ival = 0;
        int is_str;
        if (parse_string(c, &key) != 0 || expect(c, ':', "expected ':' after a key") != 0) {
            sb_free(&key);
            return -1;
        }
        skip_ws(c);
        is_str = c->p < c->end && *c->p == '"';
        sb_init(&sval);
        if (is_str ? parse_string(c, &sval) != 0 : parse_int(c, &ival) != 0) {
            sb_free(&key);
            sb_free(&sval);
            return -1;
        }
        const Field *f = field_named(fields, n, key.s);
        int bad = 0;
        if (f != NULL) {
            bad = (f->type == 'S') != is_str;
            if (!bad && is_str)
                set_str(str_at(obj, f), sval.s);
            else if (!bad)
                *int_at(obj, f) = ival;
        } else if (strcmp(key.s, "format") == 0 || strcmp(key.s, "end") == 0) {
            char **dst = key.s[0] == 'f' ? &x->format : &x->end;
            bad = !is_str;
            if (!bad)
                set_str(dst, sval.s);
        } else if (strcmp(key.s, "version") == 0 || strcmp(key.s, "lost") == 0
                   || (strcmp(key.s, "t_ns") == 0 && obj == NULL)) {
            bad = is_str;
            *(key.s[0] == 'v' ? &x->version : key.s[0] == 'l' ? &x->lost : &x->t_ns) = ival;
        }                                           /* else a newer field: ignored */
        sb_free(&key);
        sb_free(&sval);
        if (bad) {
            c->err = "a field has the wrong type (string for integer or back)";
            return -1;
        }
        skip_ws(c);
        if (c->p < c->end && *c->p == ',') {
            c->p++;
            continue;
        }
        if (expect(c, '}', "expected ',' or '}' after a value") != 0)
            return -1;
        skip_ws(c);
        if (c->p != c->end) {
            c->err = "text after the object";
            return -1;
        }
        return 0;
    }
}

/* Sets *st to "PATH:LINE: what" (ECORRUPT). */
static void corrupt(DrStatus *st, const char *path, size_t lineno, const char *what)
{
    char clean[256];
    st->code = DR_ECORRUPT;
    snprintf(st->msg, sizeof st->msg, "%s:%zu: %s", str_clean(clean, sizeof clean, path), lineno,
             what);
}

/* Reads the whole of f; NULL on a read error (errno). */
static char *slurp(FILE *f, size_t *len)
{
    StrBuf b;
    char chunk[65536];
    size_t got;
    sb_init(&b);
    sb_addn(&b, "", 0);
    while ((got = fread(chunk, 1, sizeof chunk, f)) > 0)
        sb_addn(&b, chunk, got);
    if (ferror(f)) {
        int e = errno;
        sb_free(&b);
        errno = e ? e : EIO;
        return NULL;
    }
    *len = b.len;
    return sb_steal(&b);
}

/* Parses the text of a record into t; 0, or -1 with *st. */
static int parse_text(const char *path, const char *text, size_t len, DrTrace *t, DrStatus *st)
{
    const char *p = text, *end = text + len;
    size_t lineno = 0;
    int have_header = 0;
    while (p < end) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        const char *stop = nl ? nl : end;
        lineno++;
        Cursor c = {p, stop, NULL};
        Extra x = {NULL, NULL, -1, -1, -1};
        p = nl ? nl + 1 : end;
        skip_ws(&c);
        if (c.p == c.end && nl != NULL)             /* a blank line */
            continue;
        if (!have_header) {
            int rc = parse_line(&c, &t->head, HEAD_FIELDS, N_HEAD, &x);
            int fmt_ok = rc == 0 && x.format && strcmp(x.format, DT_TRACE_FORMAT) == 0;
            free(x.format);
            free(x.end);
            if (!fmt_ok) {
                corrupt(st, path, lineno, rc != 0 ? c.err
                        : "not a dynamo run record (the first line has no \"format\":\""
                          DT_TRACE_FORMAT "\"; record one with dynamo-top --record)");
                return -1;
            }
            if (x.version != DT_TRACE_VERSION) {
                char clean[256];
                st->code = DR_EVERSION;
                snprintf(st->msg, sizeof st->msg, "%s: run record version %lld, this tool reads "
                         "version %d", str_clean(clean, sizeof clean, path), (long long)x.version,
                         DT_TRACE_VERSION);
                return -1;
            }
            have_header = 1;
            continue;
        }
        int is_end = (size_t)(c.end - c.p) > 7 && memcmp(c.p, "{\"end\"", 6) == 0;
        DrTraceEvent *e = is_end ? NULL : push(t);
        int rc = is_end ? parse_line(&c, NULL, NULL, 0, &x)
                        : parse_line(&c, e, EVENT_FIELDS, N_EVENT, &x);
        if (rc == 0 && nl == NULL && !is_end)       /* the last event without its newline */
            rc = -1, c.err = "truncated line (the last line has no newline: the recorder was "
                             "stopped while writing)";
        if (rc == 0 && is_end) {
            set_str(&t->end, x.end ? x.end : "");
            t->end_ns = x.t_ns;
            t->lost = x.lost > 0 ? (uint64_t)x.lost : 0;
        }
        free(x.format);
        free(x.end);
        if (rc != 0) {
            corrupt(st, path, lineno, c.err);
            return -1;
        }
        if (e != NULL) {
            if (!*e->kind) {
                corrupt(st, path, lineno, "an event without a \"kind\"");
                return -1;
            }
            e->kind_id = dt_event_kind_of(e->kind, strlen(e->kind));
        }
    }
    if (!have_header) {
        corrupt(st, path, lineno ? lineno : 1, "empty file: not a dynamo run record");
        return -1;
    }
    return 0;
}

int dr_trace_load(const char *path, DrTrace *t, DrStatus *st)
{
    char clean[256];
    dr_trace_init(t);
    st->code = DR_OK;
    st->msg[0] = '\0';
    struct stat sb;
    if (stat(path, &sb) == 0 && !S_ISREG(sb.st_mode)) {    /* a FIFO would block */
        st->code = DR_EIO;
        snprintf(st->msg, sizeof st->msg, "cannot read run record %s: not a regular file",
                 str_clean(clean, sizeof clean, path));
        return -1;
    }
    FILE *f = fopen(path, "rb");
    size_t len = 0;
    char *text = f ? slurp(f, &len) : NULL;
    if (text == NULL) {
        int e = errno;
        st->code = e == EACCES || e == EPERM ? DR_EPERM : DR_EIO;
        snprintf(st->msg, sizeof st->msg, "cannot read run record %s: %s",
                 str_clean(clean, sizeof clean, path), strerror(e));
        if (f)
            fclose(f);
        return -1;
    }
    fclose(f);
    if (memchr(text, '\0', len) != NULL) {
        free(text);
        corrupt(st, path, 1, "binary data: not a dynamo run record (a snapshot? use --file)");
        return -1;
    }
    int rc = parse_text(path, text, len, t, st);
    free(text);
    if (rc != 0)
        dr_trace_free(t);
    return rc;
}
