/* core/teletext.h — the texts the telemetry writer publishes.
 *
 * Owns: the short text of a guard value (a type's qualified name, a
 * module's class, a repr cut to a length), the redaction of quoted string
 * literals (DYNAMO_TELEMETRY_REDACT=1), the text of a guard source
 * ("L['x'].weight"), and the published form of a code's guard tree: the
 * DT_BLOB_TREE payload (DtValue, inspect/layout.h) and its node counters,
 * encoded here in C from the built tree (guards/tree.h, gtree_visit), and
 * the DtValue bytes of a compile record's nested lists (teletext_encode).  It
 * never builds a tree, never writes the region (core/telemetry.c does) and
 * calls no Python function of dynamo: only repr() and attribute reads of
 * the values it describes.  dynamo/telemetry.py uses the same functions
 * (through _C._telemetry_*) for the texts of compile records.
 */
#ifndef DYNAMO_CORE_TELETEXT_H
#define DYNAMO_CORE_TELETEXT_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>     /* PyObject */
#include "tree.h"       /* GTree, gtree_visit */

/* Set once by the writer: redact string literals; the class whose
 * instances are described by class and address, not repr (torch.nn.Module:
 * its repr walks every submodule); the dict {BACKEND_MATCH key: the
 * backend's name} (dynamo.guards' _backend_texts, which Python keeps
 * filling: a published tree test of the compile backend reads as that
 * name, not its number).  Both borrowed and kept by a strong reference;
 * NULL: none. */
void teletext_configure(int redact, PyObject *module_type, PyObject *backend_texts);

/* text with every quoted string literal replaced by "<redacted str, N
 * chars>" when redacting (subscript keys, `local '...'`, `global '...'`
 * and `device(type='...')` kept: names from the code); else text itself.
 * New reference, or NULL with an exception. */
PyObject *teletext_redact(PyObject *text);

/* Short text of value v, at most limit characters (a longer repr is cut
 * with "..."): "<missing>", a type's __qualname__, "<redacted str, N
 * chars>", "<Linear module at 0x...>", "<Parameter [768, 768] at 0x...>"
 * (a tensor by class and sizes: its repr formats every element), else the
 * (redacted) repr.  New reference, or NULL with an exception. */
PyObject *teletext_value(PyObject *v, Py_ssize_t limit);

/* The name of the compile backend whose BACKEND_MATCH key is `key`
 * ("'eager'", "b1, mode='max-autotune'"; redacted as guard texts are) as a
 * new str; NULL without an exception when the key has no name (0: run
 * mode, or no dict configured), NULL with one on failure. */
PyObject *teletext_backend_name(PyObject *key);

/* Text of the lowered guard source spec (guards/ir.h) of code:
 * "L['x']", "G['g']", "C['c']", "L['m'].weight", "L['d']['k']",
 * "getattr_static(L['m'], 'f')", "global state".  New reference, or NULL
 * with an exception. */
PyObject *teletext_source(PyObject *code, PyObject *spec);

/* "[F/C]" of entry i of tree t as a new str, or NULL without an
 * exception when the caller does not know it (the text is then the
 * payload's `id`). */
typedef PyObject *(*TeletextEntryName)(const GTree *t, Py_ssize_t i);

/* The DT_BLOB_TREE payload of tree t of code and its DT_BLOB_COUNTERS
 * payload (GTREE_NODE_COUNTERS u64 per node: evaluations, failures, timed,
 * timed_ns, in the TREE's depth-first order, then GTREE_SLOT_COUNTERS u64
 * per test slot: timed, timed_ns, max_ns, in the TREE's tests order), as new bytes
 * in *tree and *counters; entry_name names the leaf entries and the
 * tests' entries.  0, or -1 with an exception (both NULL). */
int teletext_tree(const GTree *t, PyObject *code, TeletextEntryName entry_name,
                  PyObject **tree, PyObject **counters);

/* The DtValue bytes of value (inspect/layout.h): ints (bools included)
 * clamped to int64, strs (UTF-8, lone surrogates replaced), lists and
 * tuples of values, None as "", any other value as its str().  What
 * dynamo/telemetry.py's encode() (the reference twin) makes, byte for byte.
 * New bytes, or NULL with an exception (ValueError past 16 levels). */
PyObject *teletext_encode(PyObject *value);

#endif /* DYNAMO_CORE_TELETEXT_H */
