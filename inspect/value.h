/* inspect/value.h — decoding of DtValue payloads (layout.h) and the arena
 * that owns everything a DrSnapshot points to.
 *
 * Owns: bounds-checked parsing of untrusted DtValue bytes into DvVal trees
 * (depth <= DT_VALUE_MAX_DEPTH, counts checked against the bytes left), and
 * a bump allocator freed in one call.  Reader library only.
 */
#ifndef DYNAMO_INSPECT_VALUE_H
#define DYNAMO_INSPECT_VALUE_H

#include <stddef.h>     /* size_t */
#include <stdint.h>     /* int64_t */

/* Chunked bump allocator; all memory freed by dv_arena_free. */
typedef struct DvChunk DvChunk;
typedef struct {
    DvChunk *head;      /* owned chunk list */
    int failed;         /* an allocation failed */
} DvArena;

/* Zeroed memory from the arena, or NULL (and a->failed set). */
void *dv_alloc(DvArena *a, size_t size);
/* NUL-terminated copy of [s, s+len) (never NULL: "" on failure). */
const char *dv_strndup(DvArena *a, const char *s, size_t len);
void dv_arena_free(DvArena *a);

typedef struct DvVal {
    char type;                  /* 'i', 's', 'l', or 0 (absent / wrong type) */
    uint32_t n;                 /* 's': bytes, 'l': items */
    int64_t i;                  /* 'i' */
    const char *s;              /* 's': points into the parsed buffer (not NUL-terminated) */
    const struct DvVal *items;  /* 'l': arena array of n */
} DvVal;

/* Parse one value from [p, p+len).  0, or -1 (corrupt: out of bounds, bad
 * type byte, too deep, trailing garbage, or out of memory). */
int dv_parse(DvArena *a, const uint8_t *p, size_t len, DvVal *out);

/* Item i of a list, or an absent value. */
const DvVal *dv_item(const DvVal *v, size_t i);
/* Typed views: "" / 0 / 0 items for absent or mistyped values. */
const char *dv_str(DvArena *a, const DvVal *v);
int64_t dv_int(const DvVal *v);
size_t dv_len(const DvVal *v);   /* items of a list */

#endif /* DYNAMO_INSPECT_VALUE_H */
