/* inspect/value.c — DtValue decoding and the snapshot arena.
 *
 * Owns what value.h declares.  Input is untrusted: every read is checked
 * against the end of the buffer; recursion is bounded by
 * DT_VALUE_MAX_DEPTH, and a list count may not exceed the bytes left.
 */
#include <stdlib.h>     /* malloc, free */
#include <string.h>     /* memcpy, memset */

#include "layout.h"     /* DT_VALUE_MAX_DEPTH */
#include "value.h"

struct DvChunk {
    DvChunk *next;      /* owned */
    size_t used, cap;   /* bytes */
    _Alignas(16) unsigned char data[];
};

#define CHUNK_MIN (64u << 10)

void *
dv_alloc(DvArena *a, size_t size)
{
    size = (size + 15) & ~(size_t)15;
    DvChunk *c = a->head;
    if (c == NULL || c->cap - c->used < size) {
        size_t cap = size > CHUNK_MIN ? size : CHUNK_MIN;
        c = malloc(sizeof(DvChunk) + cap);
        if (c == NULL) {
            a->failed = 1;
            return NULL;
        }
        c->used = 0;
        c->cap = cap;
        c->next = a->head;
        a->head = c;
    }
    void *p = c->data + c->used;
    c->used += size;
    memset(p, 0, size);
    return p;
}

const char *
dv_strndup(DvArena *a, const char *s, size_t len)
{
    char *p = dv_alloc(a, len + 1);
    if (p == NULL)
        return "";
    if (len > 0)
        memcpy(p, s, len);
    p[len] = '\0';
    return p;
}

void
dv_arena_free(DvArena *a)
{
    DvChunk *c = a->head;
    while (c != NULL) {
        DvChunk *next = c->next;
        free(c);
        c = next;
    }
    a->head = NULL;
}

static uint32_t
rd32(const uint8_t *p)
{
    uint32_t v;
    memcpy(&v, p, 4);
    return v;
}

/* Parse at *pos; advances it.  0 or -1. */
static int
parse(DvArena *a, const uint8_t *p, size_t len, size_t *pos, DvVal *out, int depth)
{
    if (depth > DT_VALUE_MAX_DEPTH || *pos >= len)
        return -1;
    size_t at = *pos + 1;
    switch (p[*pos]) {
    case 'i':
        if (len - at < 8)
            return -1;
        out->type = 'i';
        memcpy(&out->i, p + at, 8);
        *pos = at + 8;
        return 0;
    case 's':
        if (len - at < 4 || rd32(p + at) > len - at - 4)
            return -1;
        out->type = 's';
        out->n = rd32(p + at);
        out->s = (const char *)p + at + 4;
        *pos = at + 4 + out->n;
        return 0;
    case 'l': {
        if (len - at < 4)
            return -1;
        uint32_t n = rd32(p + at);
        at += 4;
        if (n > (len - at) / 5)         /* every item takes >= 5 bytes */
            return -1;
        DvVal *items = n ? dv_alloc(a, n * sizeof(DvVal)) : NULL;
        if (n && items == NULL)
            return -1;
        *pos = at;
        for (uint32_t k = 0; k < n; k++)
            if (parse(a, p, len, pos, &items[k], depth + 1) < 0)
                return -1;
        out->type = 'l';
        out->n = n;
        out->items = items;
        return 0;
    }
    default:
        return -1;
    }
}

int
dv_parse(DvArena *a, const uint8_t *p, size_t len, DvVal *out)
{
    size_t pos = 0;
    memset(out, 0, sizeof *out);
    if (parse(a, p, len, &pos, out, 0) < 0 || pos != len) {
        memset(out, 0, sizeof *out);
        return -1;
    }
    return 0;
}

static const DvVal absent;

const DvVal *
dv_item(const DvVal *v, size_t i)
{
    return v != NULL && v->type == 'l' && i < v->n ? &v->items[i] : &absent;
}

const char *
dv_str(DvArena *a, const DvVal *v)
{
    return v != NULL && v->type == 's' ? dv_strndup(a, v->s, v->n) : "";
}

int64_t
dv_int(const DvVal *v)
{
    return v != NULL && v->type == 'i' ? v->i : 0;
}

size_t
dv_len(const DvVal *v)
{
    return v != NULL && v->type == 'l' ? v->n : 0;
}
