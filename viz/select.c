/* select.c — id parsing and lookups in a DrSnapshot for dynamo-dot.
 *
 * Owns nothing: every object it returns is borrowed from the snapshot.
 * Must not print: failures come back as messages for the caller.
 */
#include "select.h"

#include <stdint.h>     /* UINT32_MAX */
#include <stdio.h>      /* snprintf */
#include <string.h>     /* strcmp */

/* Parses a decimal number at *p (at most UINT32_MAX), advancing *p. */
static int parse_u32(const char **p, uint32_t *out)
{
    const char *s = *p;
    uint64_t v = 0;
    if (*s < '0' || *s > '9')
        return -1;
    while (*s >= '0' && *s <= '9') {
        v = v * 10 + (uint64_t)(*s++ - '0');
        if (v >= UINT32_MAX)            /* too big to be an id? */
            return -1;
    }
    *out = (uint32_t)v;
    *p = s;
    return 0;
}

/* "F/C", "[F/C]", "F/C:i" -> numbers; index 0 when absent. */
static int parse_graph_id(const char *id, uint32_t *f, uint32_t *c, uint32_t *index)
{
    const char *p = id;
    int bracket = *p == '[';
    p += bracket;
    *index = 0;
    if (parse_u32(&p, f) < 0 || *p++ != '/' || parse_u32(&p, c) < 0)
        return -1;
    if (bracket && *p++ != ']')
        return -1;
    if (*p == ':') {
        p++;
        if (parse_u32(&p, index) < 0)
            return -1;
    }
    return *p == '\0' ? 0 : -1;
}

char *vsel_graph_id(const DrRecord *rec, size_t index, char *buf, size_t len)
{
    if (rec->n_graphs == 1 && index == 0)
        snprintf(buf, len, "%u/%u", rec->frame_id, rec->compile_id);
    else
        snprintf(buf, len, "%u/%u:%zu", rec->frame_id, rec->compile_id, index);
    return buf;
}

/* Appends "; valid graph ids: 0/0 (__compiled_fn_0 in toy_example), ...". */
static void list_graphs(DrSnapshot *s, StrBuf *err)
{
    size_t shown = 0;
    char id[48];
    for (size_t r = 0; r < s->n_records; r++) {
        const DrRecord *rec = &s->records[r];
        for (size_t i = 0; i < rec->n_graphs; i++) {
            sb_addf(err, "%s%s (", shown++ ? ", " : "; valid graph ids: ",
                    vsel_graph_id(rec, i, id, sizeof id));
            sb_add_escaped(err, rec->graphs[i].name, STR_LINE, 0);
            sb_add(err, " in ");
            sb_add_escaped(err, rec->name, STR_LINE, 0);
            sb_add(err, ")");
        }
    }
    if (shown == 0)
        sb_add(err, "; the process has no captured graphs yet");
}

int vsel_graph(DrSnapshot *s, const char *id, DrRecord **rec, DrGraph **graph, StrBuf *err)
{
    uint32_t f, c, index;
    if (parse_graph_id(id, &f, &c, &index) == 0) {
        /* newest first: dynamo.reset() restarts the ids, the region keeps old records */
        for (size_t r = s->n_records; r-- > 0;) {
            DrRecord *cand = &s->records[r];
            if (cand->frame_id == f && cand->compile_id == c && index < cand->n_graphs) {
                *rec = cand;
                *graph = &cand->graphs[index];
                return 0;
            }
        }
    } else {
        for (size_t r = s->n_records; r-- > 0;)        /* a graph name? newest first */
            for (size_t i = 0; i < s->records[r].n_graphs; i++)
                if (strcmp(s->records[r].graphs[i].name, id) == 0) {
                    *rec = &s->records[r];
                    *graph = &s->records[r].graphs[i];
                    return 0;
                }
    }
    sb_add(err, "no graph '");
    sb_add_escaped(err, id, STR_LINE, 0);
    sb_add(err, "' in this process");
    list_graphs(s, err);
    return -1;
}

/* Appends "; valid frames: 0 (toy_example), ...". */
static void list_frames(DrSnapshot *s, int need_tree, StrBuf *err)
{
    size_t shown = 0;
    for (size_t i = 0; i < s->n_codes; i++) {
        const DrCode *code = &s->codes[i];
        if (code->frame_id == UINT32_MAX || (need_tree && code->tree.n_nodes == 0))
            continue;
        sb_addf(err, "%s%u (", shown++ ? ", " : "; valid frames: ", code->frame_id);
        sb_add_escaped(err, code->name, STR_LINE, 0);
        sb_add(err, ")");
    }
    if (shown == 0)
        sb_add(err, need_tree ? "; no frame has a guard tree yet" : "; no frame was compiled yet");
}

int vsel_frame(DrSnapshot *s, const char *id, int need_tree, DrCode **code, StrBuf *err)
{
    const char *p = id + (*id == '[');
    uint32_t f;
    DrCode *found = NULL;
    if (parse_u32(&p, &f) == 0 && (*p == '\0' || (*id == '[' && strcmp(p, "]") == 0))) {
        for (size_t i = s->n_codes; i-- > 0 && found == NULL;)  /* newest: ids restart on reset */
            if (s->codes[i].frame_id == f && (!need_tree || s->codes[i].tree.n_nodes > 0))
                found = &s->codes[i];
        if (found == NULL)
            found = dr_find_code(s, f);
    } else {
        for (size_t i = s->n_codes; i-- > 0 && found == NULL;)  /* a function name? newest */
            if (s->codes[i].frame_id != UINT32_MAX && strcmp(s->codes[i].name, id) == 0
                && (!need_tree || s->codes[i].tree.n_nodes > 0))
                found = &s->codes[i];
    }
    if (found != NULL && need_tree && found->tree.n_nodes == 0) {
        sb_addf(err, "frame %u (", found->frame_id);
        sb_add_escaped(err, found->name, STR_LINE, 0);
        sb_add(err, ") has no guard tree (no cache entry was published for it)");
        list_frames(s, need_tree, err);
        return -1;
    }
    if (found == NULL) {
        sb_add(err, "no frame '");
        sb_add_escaped(err, id, STR_LINE, 0);
        sb_add(err, "' in this process");
        list_frames(s, need_tree, err);
        return -1;
    }
    *code = found;
    return 0;
}

