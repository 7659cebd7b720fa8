/* core/teletext.c — the texts the telemetry writer publishes (teletext.h).
 *
 * Value texts, the redaction of string literals, source texts and the
 * published form of a guard tree, encoded in C from the built tree: no
 * Python function of dynamo is called, nothing is built.  Everything here
 * runs at publish time (a compile, a refresh), never on a cache hit.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <stdint.h>     /* int64_t, uint32_t */
#include <string.h>     /* memcpy */

#include "teletext.h"
#include "ir.h"         /* GIR_SRC_*: the lowered source kinds */
#include "tmeta.h"      /* tensors: described by class and shape, not repr */

static int redact;                  /* DYNAMO_TELEMETRY_REDACT=1 */
static PyObject *module_type;       /* strong, or NULL: described by class, not repr */
static PyObject *backend_texts;     /* strong dict {key: name}, or NULL: keys as numbers */

void
teletext_configure(int on, PyObject *mtype, PyObject *btexts)
{
    redact = on;
    Py_XSETREF(module_type, Py_XNewRef(mtype));
    Py_XSETREF(backend_texts, Py_XNewRef(btexts));
}

/* ---- redaction ------------------------------------------------------------------ */

typedef struct {
    Py_UCS4 *buf;           /* owned (PyMem) */
    Py_ssize_t len, cap;
} Ucs4Buf;

static int
ucs_put(Ucs4Buf *b, const Py_UCS4 *s, Py_ssize_t n)
{
    if (b->len + n > b->cap) {
        Py_ssize_t cap = (b->len + n) * 2 + 16;
        Py_UCS4 *buf = PyMem_Realloc(b->buf, (size_t)cap * sizeof(Py_UCS4));
        if (buf == NULL) {
            PyErr_NoMemory();
            return -1;
        }
        b->buf = buf;
        b->cap = cap;
    }
    memcpy(b->buf + b->len, s, (size_t)n * sizeof(Py_UCS4));
    b->len += n;
    return 0;
}

static int
ucs_put_ascii(Ucs4Buf *b, const char *s)
{
    for (; *s != '\0'; s++) {
        Py_UCS4 c = (unsigned char)*s;
        if (ucs_put(b, &c, 1) < 0)
            return -1;
    }
    return 0;
}

static int
is_word(Py_UCS4 c)
{
    return c == '_' || Py_UNICODE_ISALNUM(c);
}

/* Does the ASCII word w stand at s[i]? */
static int
starts(const Py_UCS4 *s, Py_ssize_t n, Py_ssize_t i, const char *w)
{
    for (; *w != '\0'; w++, i++)
        if (i >= n || s[i] != (Py_UCS4)(unsigned char)*w)
            return 0;
    return 1;
}

/* End (one past the closing quote) of a quoted literal starting at s[i],
 * or -1: with escapes (a backslash and any character but a newline) when
 * escapes, else with no backslash inside. */
static Py_ssize_t
literal_end(const Py_UCS4 *s, Py_ssize_t n, Py_ssize_t i, int escapes)
{
    if (i >= n || (s[i] != '\'' && s[i] != '"'))
        return -1;
    Py_UCS4 q = s[i];
    for (Py_ssize_t j = i + 1; j < n; j++) {
        if (s[j] == q)
            return j + 1;
        if (s[j] == '\\') {
            if (!escapes || j + 1 >= n || s[j + 1] == '\n')
                return -1;
            j++;
        }
    }
    return -1;
}

/* A kept literal (a name from the code) at s[i]: its end, or -1. */
static Py_ssize_t
kept_end(const Py_UCS4 *s, Py_ssize_t n, Py_ssize_t i)
{
    int boundary = i == 0 || !is_word(s[i - 1]);
    static const char *const prefixes[] = {"[", "local ", "global ", "device(type="};
    for (int p = 0; p < 4; p++) {
        if (p > 0 && p < 3 && !boundary)
            continue;
        if (starts(s, n, i, prefixes[p]))
            return literal_end(s, n, i + (Py_ssize_t)strlen(prefixes[p]), 0);
    }
    return -1;
}

PyObject *
teletext_redact(PyObject *text)
{
    if (!PyUnicode_Check(text))
        return PyErr_Format(PyExc_TypeError, "redact: str expected, not %.80s",
                            Py_TYPE(text)->tp_name);
    if (!redact || (PyUnicode_FindChar(text, '\'', 0, PY_SSIZE_T_MAX, 1) == -1
                    && PyUnicode_FindChar(text, '"', 0, PY_SSIZE_T_MAX, 1) == -1))
        return Py_NewRef(text);
    Py_UCS4 *s = PyUnicode_AsUCS4Copy(text);
    if (s == NULL)
        return NULL;
    Py_ssize_t n = PyUnicode_GET_LENGTH(text);
    Ucs4Buf out = {0};
    int rc = 0;
    for (Py_ssize_t i = 0; i < n && rc == 0;) {
        Py_ssize_t end = kept_end(s, n, i);
        if (end > 0) {
            rc = ucs_put(&out, s + i, end - i);
            i = end;
            continue;
        }
        end = literal_end(s, n, (s[i] == 'b' || s[i] == 'B') ? i + 1 : i, 1);
        if (end < 0) {
            rc = ucs_put(&out, s + i, 1);
            i++;
            continue;
        }
        char note[64];
        snprintf(note, sizeof note, "<redacted str, %zd chars>", end - i - 2);
        rc = ucs_put_ascii(&out, note);
        i = end;
    }
    PyObject *result = rc == 0 ? PyUnicode_FromKindAndData(PyUnicode_4BYTE_KIND, out.buf, out.len)
                               : NULL;
    PyMem_Free(out.buf);
    PyMem_Free(s);
    return result;
}

/* ---- values and sources ------------------------------------------------------------ */

/* "<Parameter [768, 768] at 0x...>": a tensor's class and sizes (tmeta;
 * "[?]" for one whose sizes it cannot read), never its values. */
static PyObject *
tensor_text(PyObject *v)
{
    char dims[96] = "?";
    TmetaView tv;
    if (tmeta_read(v, &tv) == 0) {
        size_t n = 0;
        int32_t i = 0;
        dims[0] = '\0';
        for (; i < tv.ndim && n < sizeof dims - 24; i++)
            n += (size_t)snprintf(dims + n, sizeof dims - n, "%s%lld", i ? ", " : "",
                                  (long long)tv.sizes[i]);
        if (i < tv.ndim)
            snprintf(dims + n, sizeof dims - n, ", ...");
    }
    PyObject *name = PyType_GetQualName(Py_TYPE(v));
    if (name == NULL)
        return NULL;
    PyObject *text = PyUnicode_FromFormat("<%U [%s] at %p>", name, dims, (void *)v);
    Py_DECREF(name);
    return text;
}

PyObject *
teletext_value(PyObject *v, Py_ssize_t limit)
{
    if (v == gtree_missing())
        return PyUnicode_FromString("<missing>");
    if (PyType_Check(v))
        return PyType_GetQualName((PyTypeObject *)v);
    if (redact && (PyUnicode_Check(v) || PyBytes_Check(v))) {
        Py_ssize_t len = PyObject_Length(v);
        PyObject *name = len < 0 ? NULL : PyType_GetName(Py_TYPE(v));
        PyObject *text = name ? PyUnicode_FromFormat("<redacted %U, %zd chars>", name, len) : NULL;
        Py_XDECREF(name);
        return text;
    }
    if (module_type != NULL) {
        int is_module = PyObject_IsInstance(v, module_type);
        if (is_module < 0)
            return NULL;
        if (is_module) {        /* its repr walks every submodule: the class says enough */
            PyObject *name = PyType_GetQualName(Py_TYPE(v));
            PyObject *text = name ? PyUnicode_FromFormat("<%U module at %p>", name, (void *)v)
                                  : NULL;
            Py_XDECREF(name);
            return text;
        }
    }
    if (tmeta_is_tensor(v))     /* its repr formats every element (ms for a weight) */
        return tensor_text(v);
    PyObject *r = PyObject_Repr(v);
    if (r == NULL)
        return NULL;
    PyObject *text = teletext_redact(r);
    Py_DECREF(r);
    if (text == NULL || PyUnicode_GET_LENGTH(text) <= limit)
        return text;
    PyObject *head = PyUnicode_Substring(text, 0, limit > 3 ? limit - 3 : 0);
    Py_DECREF(text);
    if (head == NULL)
        return NULL;
    PyObject *cut = PyUnicode_FromFormat("%U...", head);
    Py_DECREF(head);
    return cut;
}

/* "L['x']" for slot i of the code's names attribute `names` ("L[3]" past them). */
static PyObject *
slot_text(PyObject *code, const char *names, const char *letter, PyObject *index)
{
    PyObject *tuple = PyObject_GetAttrString(code, names);
    if (tuple == NULL)
        return NULL;
    Py_ssize_t i = PyLong_AsSsize_t(index);
    PyObject *text = NULL;
    if (i == -1 && PyErr_Occurred())
        ;
    else if (PyTuple_Check(tuple) && i >= 0 && i < PyTuple_GET_SIZE(tuple))
        text = PyUnicode_FromFormat("%s[%R]", letter, PyTuple_GET_ITEM(tuple, i));
    else
        text = PyUnicode_FromFormat("%s[%S]", letter, index);
    Py_DECREF(tuple);
    return text;
}

#define SOURCE_DEPTH_MAX 64     /* nested ATTR/ITEM sources written out in full */

static PyObject *
source_text(PyObject *code, PyObject *spec, int depth)
{
    if (!PyTuple_Check(spec) || PyTuple_GET_SIZE(spec) < 1)
        return PyErr_Format(PyExc_TypeError, "a guard source must be a tuple (kind, ...)");
    long kind = PyLong_AsLong(PyTuple_GET_ITEM(spec, 0));
    if (kind == -1 && PyErr_Occurred())
        return NULL;
    Py_ssize_t n = PyTuple_GET_SIZE(spec);
    if (kind == GIR_SRC_NONE || n < 2)
        return PyUnicode_FromString("global state");
    PyObject *a = PyTuple_GET_ITEM(spec, 1);
    switch (kind) {
    case GIR_SRC_LOCAL:
        return slot_text(code, "co_varnames", "L", a);
    case GIR_SRC_CLOSURE:
        return slot_text(code, "co_freevars", "C", a);
    case GIR_SRC_GLOBAL:
        return PyUnicode_FromFormat("G[%R]", a);
    default:
        break;
    }
    if (n < 3 || (kind != GIR_SRC_ATTR && kind != GIR_SRC_ITEM && kind != GIR_SRC_STATIC_ATTR
                  && kind != GIR_SRC_GENERIC_ATTR))
        return PyUnicode_FromString("global state");
    PyObject *base = depth < SOURCE_DEPTH_MAX ? source_text(code, a, depth + 1)
                                              : PyUnicode_FromString("...");
    if (base == NULL)
        return NULL;
    PyObject *b = PyTuple_GET_ITEM(spec, 2), *text;
    if (kind == GIR_SRC_ATTR)
        text = PyUnicode_FromFormat("%U.%S", base, b);
    else if (kind == GIR_SRC_ITEM)
        text = PyUnicode_FromFormat("%U[%R]", base, b);
    else if (kind == GIR_SRC_GENERIC_ATTR)
        text = PyUnicode_FromFormat("object.__getattribute__(%U, %R)", base, b);
    else
        text = PyUnicode_FromFormat("getattr_static(%U, %R)", base, b);
    Py_DECREF(base);
    return text;
}

PyObject *
teletext_source(PyObject *code, PyObject *spec)
{
    return source_text(code, spec, 0);
}

/* property_text(source text, prop) of a (source, property) pair. */
static PyObject *
property_of(PyObject *code, PyObject *pair)
{
    PyObject *src = source_text(code, PyTuple_GET_ITEM(pair, 0), 0);
    if (src == NULL)
        return NULL;
    PyObject *text = gtree_property_text(src, PyTuple_GET_ITEM(pair, 1));
    Py_DECREF(src);
    return text;
}

PyObject *
teletext_backend_name(PyObject *key)
{
    if (backend_texts == NULL)
        return NULL;
    PyObject *name = PyDict_GetItemWithError(backend_texts, key);     /* borrowed */
    if (name == NULL || !PyUnicode_Check(name))
        return NULL;
    return teletext_redact(name);
}

/* The expected value's text of a tree test: a compile backend's key as the
 * backend's name ("'eager'"; the key when it has none), else its value text. */
static PyObject *
expected_text(PyObject *test)
{
    PyObject *value = PyTuple_GET_ITEM(test, 2);
    PyObject *prop = PyTuple_GET_ITEM(test, 1);
    if (PyUnicode_Check(prop) && PyUnicode_CompareWithASCIIString(prop, "backend") == 0) {
        PyObject *name = teletext_backend_name(value);
        if (name != NULL || PyErr_Occurred())
            return name;
    }
    return teletext_value(value, 60);
}

/* "<property text> == <expected>" of a tree test (source, property, expected). */
static PyObject *
test_text(PyObject *code, PyObject *test)
{
    PyObject *prop = property_of(code, test);
    PyObject *expected = prop ? expected_text(test) : NULL;
    PyObject *text = expected ? PyUnicode_FromFormat("%U == %U", prop, expected) : NULL;
    Py_XDECREF(prop);
    Py_XDECREF(expected);
    return text;
}

/* ---- DtValue encoding (inspect/layout.h) ----------------------------------------------- */

typedef struct {
    char *buf;              /* owned (PyMem) */
    size_t len, cap;
} Enc;

static int
enc_put(Enc *e, const void *data, size_t n)
{
    if (e->len + n > e->cap) {
        size_t cap = (e->len + n) * 2 + 256;
        char *buf = PyMem_Realloc(e->buf, cap);
        if (buf == NULL) {
            PyErr_NoMemory();
            return -1;
        }
        e->buf = buf;
        e->cap = cap;
    }
    memcpy(e->buf + e->len, data, n);
    e->len += n;
    return 0;
}

static void
le_bytes(uint8_t *out, uint64_t v, int n)
{
    for (int i = 0; i < n; i++)
        out[i] = (uint8_t)(v >> (8 * i));
}

/* tag + u32 (list count, string length) */
static int
enc_head(Enc *e, char tag, uint32_t n)
{
    uint8_t b[5] = {(uint8_t)tag};
    le_bytes(b + 1, n, 4);
    return enc_put(e, b, 5);
}

static int
enc_int(Enc *e, int64_t v)
{
    uint8_t b[9] = {'i'};
    le_bytes(b + 1, (uint64_t)v, 8);
    return enc_put(e, b, 9);
}

static int
enc_u64(Enc *e, uint64_t v)
{
    return enc_int(e, v > INT64_MAX ? INT64_MAX : (int64_t)v);
}

/* A str (UTF-8, lone surrogates replaced); steals text (NULL: failed). */
static int
enc_text(Enc *e, PyObject *text)
{
    if (text == NULL)
        return -1;
    PyObject *bytes = PyUnicode_AsEncodedString(text, "utf-8", "replace");
    Py_DECREF(text);
    if (bytes == NULL)
        return -1;
    Py_ssize_t n = PyBytes_GET_SIZE(bytes);
    int rc = (uint64_t)n > UINT32_MAX ? -1 : enc_head(e, 's', (uint32_t)n);
    if (rc == 0)
        rc = enc_put(e, PyBytes_AS_STRING(bytes), (size_t)n);
    else if (!PyErr_Occurred())
        PyErr_SetString(PyExc_OverflowError, "telemetry text too long");
    Py_DECREF(bytes);
    return rc;
}

/* [test text, ...] of a tree test list. */
static int
enc_tests(Enc *e, PyObject *code, PyObject *tests)
{
    Py_ssize_t n = PyList_GET_SIZE(tests);
    if (enc_head(e, 'l', (uint32_t)n) < 0)
        return -1;
    for (Py_ssize_t i = 0; i < n; i++)
        if (enc_text(e, test_text(code, PyList_GET_ITEM(tests, i))) < 0)
            return -1;
    return 0;
}

typedef struct {
    const GTree *t;         /* borrowed */
    PyObject *code;         /* borrowed */
    TeletextEntryName entry_name;
    Enc tree, counters;
    Enc slot_counters;      /* the test slots' counters, put after the nodes' */
    uint32_t nodes;
} TreeEnc;

/* "<entry id> <test> <test> ..." of a leaf item (payload, entry, tests). */
static PyObject *
leaf_text(const TreeEnc *te, PyObject *item)
{
    PyObject *payload = PyTuple_GET_ITEM(item, 0), *tests = PyTuple_GET_ITEM(item, 2);
    PyObject *code = te->code;
    Py_ssize_t entry = PyLong_AsSsize_t(PyTuple_GET_ITEM(item, 1));
    PyObject *id = entry >= 0 && te->entry_name ? te->entry_name(te->t, entry) : NULL;
    if (id == NULL && !PyErr_Occurred())
        id = PyObject_GetAttrString(payload, "id");
    if (id == NULL && PyErr_ExceptionMatches(PyExc_AttributeError)) {
        PyErr_Clear();
        id = PyUnicode_FromString("?");
    }
    PyObject *parts = id ? PyList_New(1) : NULL;
    if (parts == NULL) {
        Py_XDECREF(id);
        return NULL;
    }
    PyObject *first = PyObject_Str(id);
    Py_DECREF(id);
    if (first == NULL) {
        Py_DECREF(parts);
        return NULL;
    }
    PyList_SET_ITEM(parts, 0, first);
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(tests); i++) {
        PyObject *t = test_text(code, PyList_GET_ITEM(tests, i));
        if (t == NULL || PyList_Append(parts, t) < 0) {
            Py_XDECREF(t);
            Py_DECREF(parts);
            return NULL;
        }
        Py_DECREF(t);
    }
    PyObject *sep = PyUnicode_FromString(" ");
    PyObject *text = sep ? PyUnicode_Join(sep, parts) : NULL;
    Py_XDECREF(sep);
    Py_DECREF(parts);
    return text;
}

/* One TREE node: [index, parent, depth, via, [tests], switch, [leaf], evaluations,
 * failures, newest] (layout.h), and its counters pair. */
static int
encode_node(void *ctx, const GtreeNodeView *v)
{
    TreeEnc *te = ctx;
    Enc *e = &te->tree;
    PyObject *via = v->parent < 0 ? PyUnicode_FromString("")
                    : v->via_default ? PyUnicode_FromString("default")
                    : NULL;
    if (via == NULL && v->parent >= 0 && !v->via_default) {
        PyObject *value = teletext_value(v->via, 40);
        via = value ? PyUnicode_FromFormat("= %U", value) : NULL;
        Py_XDECREF(value);
    }
    if (enc_head(e, 'l', 10) < 0 || enc_int(e, v->index) < 0 || enc_int(e, v->parent) < 0
            || enc_int(e, v->depth) < 0 || enc_text(e, via) < 0
            || enc_tests(e, te->code, v->tests) < 0
            || enc_text(e, v->switch_on ? property_of(te->code, v->switch_on)
                                        : PyUnicode_FromString("")) < 0)
        return -1;
    Py_ssize_t nleaf = v->leaf ? PyList_GET_SIZE(v->leaf) : 0;
    if (enc_head(e, 'l', (uint32_t)nleaf) < 0)
        return -1;
    for (Py_ssize_t j = 0; j < nleaf; j++)
        if (enc_text(e, leaf_text(te, PyList_GET_ITEM(v->leaf, j))) < 0)
            return -1;
    if (enc_u64(e, v->counters[0]) < 0 || enc_u64(e, v->counters[1]) < 0
            || enc_int(e, v->newest) < 0)
        return -1;
    uint8_t ctrs[8 * GTREE_NODE_COUNTERS];
    for (int c = 0; c < GTREE_NODE_COUNTERS; c++)
        le_bytes(ctrs + 8 * c, v->counters[c], 8);
    te->nodes++;
    return enc_put(&te->counters, ctrs, sizeof ctrs);
}

/* One TTEST of a slot (node, test, entry, guard, timed, timed_ns, max_ns) of
 * gtree_slots, and its counters. */
static int
encode_slot(TreeEnc *te, PyObject *slot)
{
    Enc *e = &te->tree;
    PyObject *test = PyTuple_GET_ITEM(slot, 1);
    Py_ssize_t entry = PyLong_AsSsize_t(PyTuple_GET_ITEM(slot, 2));
    long guard = PyLong_AsLong(PyTuple_GET_ITEM(slot, 3));
    PyObject *text, *id;
    if (PyTuple_GET_SIZE(test) == 2) {              /* a switch */
        PyObject *prop = property_of(te->code, test);
        text = prop ? PyUnicode_FromFormat("switch on %U", prop) : NULL;
        Py_XDECREF(prop);
        id = PyUnicode_FromString("");
    }
    else {
        text = test_text(te->code, test);
        id = entry >= 0 && te->entry_name ? te->entry_name(te->t, entry) : NULL;
        if (id == NULL && !PyErr_Occurred())
            id = PyUnicode_FromString("");
    }
    if (enc_head(e, 'l', 5) < 0
            || enc_int(e, PyLong_AsLong(PyTuple_GET_ITEM(slot, 0))) < 0
            || enc_text(e, text) < 0
            || enc_text(e, source_text(te->code, PyTuple_GET_ITEM(test, 0), 0)) < 0
            || enc_text(e, id) < 0 || enc_int(e, guard) < 0)
        return -1;
    uint8_t ctrs[8 * GTREE_SLOT_COUNTERS];
    for (int c = 0; c < GTREE_SLOT_COUNTERS; c++)
        le_bytes(ctrs + 8 * c, PyLong_AsUnsignedLongLong(PyTuple_GET_ITEM(slot, 4 + c)), 8);
    return PyErr_Occurred() ? -1 : enc_put(&te->slot_counters, ctrs, sizeof ctrs);
}

/* [tests [TTEST]] of t and the slot counters after the node counters. */
static int
encode_slots(TreeEnc *te)
{
    PyObject *slots = gtree_slots(te->t);
    if (slots == NULL)
        return -1;
    Py_ssize_t n = PyList_GET_SIZE(slots);
    int rc = enc_head(&te->tree, 'l', (uint32_t)n);
    for (Py_ssize_t i = 0; rc == 0 && i < n; i++)
        rc = encode_slot(te, PyList_GET_ITEM(slots, i));
    Py_DECREF(slots);
    if (rc == 0 && te->slot_counters.len)
        rc = enc_put(&te->counters, te->slot_counters.buf, te->slot_counters.len);
    return rc;
}

int
teletext_tree(const GTree *t, PyObject *code, TeletextEntryName entry_name,
              PyObject **tree, PyObject **counters)
{
    *tree = *counters = NULL;
    TreeEnc te = {.t = t, .code = code, .entry_name = entry_name};
    /* [0, [node, ...], [test, ...]]: the node count is written once known */
    int rc = enc_head(&te.tree, 'l', 3) < 0 || enc_int(&te.tree, 0) < 0
             || enc_head(&te.tree, 'l', 0) < 0 ? -1 : 0;
    size_t count_at = te.tree.len - 4;
    if (rc == 0 && gtree_visit(t, encode_node, &te) != 0)
        rc = -1;
    if (rc == 0 && encode_slots(&te) < 0)
        rc = -1;
    if (rc == 0) {
        le_bytes((uint8_t *)te.tree.buf + count_at, te.nodes, 4);
        *tree = PyBytes_FromStringAndSize(te.tree.buf, (Py_ssize_t)te.tree.len);
        *counters = *tree ? PyBytes_FromStringAndSize(te.counters.buf ? te.counters.buf : "",
                                                      (Py_ssize_t)te.counters.len) : NULL;
        if (*counters == NULL) {
            Py_CLEAR(*tree);
            rc = -1;
        }
    }
    PyMem_Free(te.tree.buf);
    PyMem_Free(te.counters.buf);
    PyMem_Free(te.slot_counters.buf);
    return rc;
}

/* ---- DtValue of a Python value (compile records) ------------------------------------ */

#define VALUE_MAX_DEPTH 16      /* the record schemas nest 4 deep (layout.h) */

/* v as DtValue: an int (bool included) clamped to int64, a str, a list or
 * tuple of values, None as "", anything else as its str(). */
static int
enc_value(Enc *e, PyObject *v, int depth)
{
    if (depth > VALUE_MAX_DEPTH) {
        PyErr_SetString(PyExc_ValueError, "telemetry value nested too deeply");
        return -1;
    }
    if (PyLong_Check(v)) {
        int overflow;
        long long x = PyLong_AsLongLongAndOverflow(v, &overflow);
        if (x == -1 && PyErr_Occurred())
            return -1;
        if (overflow)               /* out of int64: the nearest end */
            x = overflow > 0 ? INT64_MAX : INT64_MIN;
        return enc_int(e, (int64_t)x);
    }
    if (PyUnicode_Check(v))
        return enc_text(e, Py_NewRef(v));
    if (PyList_Check(v) || PyTuple_Check(v)) {
        /* a tuple snapshot: str() of an item runs Python code that could
         * change a list under the count already written */
        PyObject *items = PySequence_Tuple(v);
        if (items == NULL)
            return -1;
        Py_ssize_t n = PyTuple_GET_SIZE(items);
        int rc = (uint64_t)n > UINT32_MAX ? -1 : enc_head(e, 'l', (uint32_t)n);
        if (rc < 0 && !PyErr_Occurred())
            PyErr_SetString(PyExc_OverflowError, "telemetry list too long");
        for (Py_ssize_t i = 0; rc == 0 && i < n; i++)
            rc = enc_value(e, PyTuple_GET_ITEM(items, i), depth + 1);
        Py_DECREF(items);
        return rc;
    }
    return enc_text(e, v == Py_None ? PyUnicode_FromString("") : PyObject_Str(v));
}

PyObject *
teletext_encode(PyObject *value)
{
    Enc e = {0};
    PyObject *out = NULL;
    if (enc_value(&e, value, 0) == 0)
        out = PyBytes_FromStringAndSize(e.buf, (Py_ssize_t)e.len);
    PyMem_Free(e.buf);
    return out;
}
