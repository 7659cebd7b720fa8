/* select.h — from the ids a user types to objects of a DrSnapshot.
 *
 * Graph ids: "F/C" or "[F/C]" (the graph of compile C of frame F),
 * "F/C:i" (its i-th graph when a compile made several), or the graph's
 * name "__compiled_fn_N".  Frame ids: "F", "[F]", or a function name.
 * dynamo.reset() restarts the ids while the telemetry region keeps the old
 * records, so every lookup takes the newest match.  Every lookup that fails
 * fills a message listing the valid ids, so the tool can print it as is.
 */
#ifndef VIZ_SELECT_H
#define VIZ_SELECT_H

#include <stddef.h>     /* size_t */

#include "reader.h"     /* DrSnapshot, DrCode, DrRecord, DrGraph */
#include "vstr.h"

/* Find the graph `id`.  0 with *rec and *graph set (borrowed from s), or
 * -1 with a message in *err ("no graph '7/0' ...; valid graph ids: ..."). */
int vsel_graph(DrSnapshot *s, const char *id, DrRecord **rec, DrGraph **graph, StrBuf *err);

/* Find the code of frame `id`.  `need_tree` set: only frames with a
 * published guard tree are valid (--guards).  0 with *code (borrowed), or
 * -1 with a message in *err listing the valid frames. */
int vsel_frame(DrSnapshot *s, const char *id, int need_tree, DrCode **code, StrBuf *err);

/* "F/C" of a record's graph number `index` ("F/C" alone for index 0 of a
 * single-graph compile, "F/C:i" otherwise) into buf; returns buf. */
char *vsel_graph_id(const DrRecord *rec, size_t index, char *buf, size_t len);

#endif /* VIZ_SELECT_H */
