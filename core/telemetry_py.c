/* core/telemetry_py.c — the telemetry writer's Python functions
 * (_telemetry_* of dynamo._C; dynamo/telemetry.py calls them).
 *
 * Owns: argument parsing, the Python objects they return and their
 * exceptions.  The region itself is core/telemetry.c's: this file reaches
 * it through telemetry_int.h only, and never writes to it directly.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <errno.h>      /* errno: _telemetry_save's OSError */
#include <stdlib.h>     /* free */
#include <unistd.h>     /* getpid */

#include "telemetry.h"
#include "telemetry_int.h"  /* tele_*: the region, publish, capture */
#include "../inspect/image.h"  /* image_save */
#include "cache.h"          /* cache_ensure, cache_get, CacheEntry */
#include "teletext.h"       /* teletext_configure, _redact, _value, _encode, _source */

/* ---- Python-facing --------------------------------------------------------------------------- */

PyDoc_STRVAR(t_enabled_doc, "_telemetry_enabled() -> bool: this process publishes telemetry.");

static PyObject *
t_enabled(PyObject *module, PyObject *unused)
{
    return PyBool_FromLong(tele_header() != NULL);
}

PyDoc_STRVAR(t_info_doc,
"_telemetry_info() -> dict: enabled, path ('' when anonymous), pid, region_size,\n"
"blob_used, blob_cap, n_codes, n_entries, n_events, events_cap, codes_cap, init_errno,\n"
"redact (DYNAMO_TELEMETRY_REDACT: string values are left out of the region), warning\n"
"(why the region is not a /dev/shm file, one line; '' when it is or was asked to be).");

static PyObject *
t_info(PyObject *module, PyObject *unused)
{
    DtHeader empty = {0};
    const DtHeader *region = tele_header();
    const DtHeader *h = region != NULL ? region : &empty;
    return Py_BuildValue("{s:O,s:s,s:i,s:K,s:I,s:K,s:I,s:I,s:K,s:I,s:I,s:O,s:s,s:I}",
                         "enabled", region != NULL ? Py_True : Py_False,
                         "path", h->shm_path, "pid", (int)getpid(),
                         "region_size", (unsigned long long)tele_region_len(),
                         "blob_used", h->blob_used, "blob_cap", (unsigned long long)h->blob_cap,
                         "n_codes", h->n_codes,
                         "n_entries", h->n_entries, "n_events", (unsigned long long)h->n_events,
                         "events_cap", h->events_cap,
                         "init_errno", tele_init_errno(),
                         "redact", tele_redact() ? Py_True : Py_False,
                         "warning", tele_init_warning(), "codes_cap", h->codes_cap);
}

PyDoc_STRVAR(t_set_info_doc,
"_telemetry_set_info(torch_version, dynamo_version, module_type=None, backend_texts=None)\n\n"
"Identity strings for the header; module_type: the class whose instances\n"
"published texts describe by class and address, not by repr\n"
"(torch.nn.Module: its repr walks every submodule); backend_texts: the dict\n"
"{BACKEND_MATCH key: backend name} published guard trees name backends by\n"
"(kept, read at each publish).");

static PyObject *
t_set_info(PyObject *module, PyObject *args)
{
    const char *torch_version, *dynamo_version;
    PyObject *mtype = Py_None, *btexts = Py_None;
    if (!PyArg_ParseTuple(args, "ss|OO:_telemetry_set_info", &torch_version, &dynamo_version,
                          &mtype, &btexts))
        return NULL;
    if (mtype != Py_None && !PyType_Check(mtype)) {
        PyErr_SetString(PyExc_TypeError, "_telemetry_set_info: module_type must be a class or None");
        return NULL;
    }
    if (btexts != Py_None && !PyDict_Check(btexts)) {
        PyErr_SetString(PyExc_TypeError, "_telemetry_set_info: backend_texts must be a dict or None");
        return NULL;
    }
    teletext_configure(tele_redact(), mtype == Py_None ? NULL : mtype,
                       btexts == Py_None ? NULL : btexts);
    tele_set_identity(torch_version, dynamo_version);
    Py_RETURN_NONE;
}

/* Event specs from the Python list of (kind, text, where); NULL with an
 * exception.  Strings are borrowed from the list (caller keeps it alive). */
static EventSpec *
parse_events(PyObject *events, Py_ssize_t *count)
{
    PyObject *seq = PySequence_Fast(events, "_telemetry_publish: events must be a sequence");
    if (seq == NULL)
        return NULL;
    Py_ssize_t n = PySequence_Fast_GET_SIZE(seq);
    EventSpec *specs = PyMem_Calloc(n ? (size_t)n : 1, sizeof(EventSpec));
    if (specs == NULL) {
        Py_DECREF(seq);
        PyErr_NoMemory();
        return NULL;
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        unsigned int kind;
        PyObject *text, *where;
        if (!PyArg_ParseTuple(PySequence_Fast_GET_ITEM(seq, i), "IUU;event must be (kind, text, where)",
                              &kind, &text, &where)
                || (specs[i].text = PyUnicode_AsUTF8AndSize(text, &specs[i].text_len)) == NULL
                || (specs[i].where = PyUnicode_AsUTF8AndSize(where, &specs[i].where_len)) == NULL) {
            PyMem_Free(specs);
            Py_DECREF(seq);
            return NULL;
        }
        specs[i].kind = kind;
    }
    Py_DECREF(seq);         /* items are the list's own: still alive */
    *count = n;
    return specs;
}

PyDoc_STRVAR(t_publish_doc,
"_telemetry_publish(code, frame_id, compile_id, status, compile_ns, n_guards,\n"
"                   record, events, cache_size_limit) -> int\n\n"
"Publish one compile record: `record` is a DT_BLOB_RECORD payload (bytes),\n"
"`events` a list of (kind, text, where) with DT_EV_* kinds, cache_size_limit\n"
"the configured limit (entries) at this compile.  A status 'ok'\n"
"record becomes the slot of the cache entry pushed next for code.  Returns\n"
"the record's slot, or -1 when telemetry is off or the region is full.");

static PyObject *
t_publish(PyObject *module, PyObject *args)
{
    PyObject *code, *events;
    unsigned int frame_id, compile_id, n_guards, limit;
    const char *status;
    Py_ssize_t status_len;
    unsigned long long compile_ns;
    Py_buffer record;
    if (!PyArg_ParseTuple(args, "O!IIs#KIy*OI:_telemetry_publish", &PyCode_Type, &code, &frame_id,
                          &compile_id, &status, &status_len, &compile_ns, &n_guards, &record,
                          &events, &limit))
        return NULL;
    if (tele_header() == NULL) {
        PyBuffer_Release(&record);
        return PyLong_FromLong(-1);
    }
    Py_ssize_t nev = 0;
    EventSpec *specs = parse_events(events, &nev);
    CodeCache *cache = specs != NULL ? cache_ensure(code) : NULL;
    if (cache == NULL) {
        PyMem_Free(specs);
        PyBuffer_Release(&record);
        return NULL;
    }
    TelePublish p = {
        .frame_id = frame_id, .compile_id = compile_id,
        .status = dt_rec_status_of(status, (size_t)status_len),
        .compile_ns = compile_ns, .n_guards = n_guards, .record = record.buf,
        .record_len = (size_t)record.len, .cache_size_limit = limit,
    };
    long slot = tele_publish(cache, &p, specs, nev);
    PyMem_Free(specs);
    PyBuffer_Release(&record);
    return PyLong_FromLong(slot);
}

PyDoc_STRVAR(t_refresh_doc,
"_telemetry_refresh() -> int: copy the current guard-tree node counters of\n"
"every live code with a cache into the region (in place; a tree whose shape\n"
"changed is republished); returns how many codes.");

static PyObject *
t_refresh(PyObject *module, PyObject *unused)
{
    long n = tele_refresh();
    if (n < 0)
        return NULL;
    return PyLong_FromLong(n);
}

PyDoc_STRVAR(t_save_doc,
"_telemetry_save(path): write this process's telemetry as a snapshot file\n"
"(mode 0600; the format dynamo-inspect --file and dynamo-top --file read).");

static PyObject *
t_save(PyObject *module, PyObject *arg)
{
    PyObject *path = NULL;
    if (!PyUnicode_FSConverter(arg, &path))
        return NULL;
    uint8_t *image = NULL;
    size_t len = 0;
    char msg[256];
    if (tele_header() == NULL) {
        PyErr_SetString(PyExc_RuntimeError,
                        "dynamo telemetry is off in this process (DYNAMO_TELEMETRY=0 or "
                        "the region could not be created)");
        goto error;
    }
    if (tele_capture(&image, &len, msg, sizeof msg) != DR_OK) {
        PyErr_Format(PyExc_RuntimeError, "dynamo: cannot capture telemetry: %s", msg);
        goto error;
    }
    if (image_save(image, len, PyBytes_AS_STRING(path), tele_now_ns(), msg, sizeof msg) < 0) {
        PyObject *exc = PyObject_CallFunction(PyExc_OSError, "isO", errno, msg, arg);
        if (exc != NULL) {
            PyErr_SetObject((PyObject *)Py_TYPE(exc), exc);
            Py_DECREF(exc);
        }
        goto error;
    }
    free(image);
    Py_DECREF(path);
    Py_RETURN_NONE;
error:
    free(image);
    Py_XDECREF(path);
    return NULL;
}

PyDoc_STRVAR(t_counters_doc,
"_telemetry_counters(code) -> dict or None: the counters of code's slot\n"
"(calls, hits, misses, guard_failures, compiles, compile_ns, frame_id) and\n"
"'entries': [(slot, hits, guard_failures, fail_counts)] newest first.");

static PyObject *
t_counters(PyObject *module, PyObject *code)
{
    if (!PyCode_Check(code)) {
        PyErr_SetString(PyExc_TypeError, "_telemetry_counters: expected a code object");
        return NULL;
    }
    CodeCache *c = cache_get(code);
    if (tele_header() == NULL || c == NULL || c->tele == NULL)
        Py_RETURN_NONE;
    DtCode *d = c->tele;
    PyObject *entries = PyList_New(0);
    for (CacheEntry *e = c->entries; entries != NULL && e != NULL; e = e->next) {
        if (e->tele == NULL)
            continue;
        const uint64_t *counts = tele_fail_counts(e->tele);
        PyObject *fails = PyList_New(0);
        for (uint32_t g = 0; fails != NULL && counts != NULL && g < e->tele->n_guards; g++) {
            PyObject *v = PyLong_FromUnsignedLongLong(counts[g]);
            if (v == NULL || PyList_Append(fails, v) < 0)
                Py_CLEAR(fails);
            Py_XDECREF(v);
        }
        PyObject *item = fails ? Py_BuildValue("(IKKN)", tele_entry_index(e->tele),
                                               (unsigned long long)e->tele->hits,
                                               (unsigned long long)e->tele->guard_failures, fails)
                               : NULL;
        if (item == NULL || PyList_Append(entries, item) < 0)
            Py_CLEAR(entries);
        Py_XDECREF(item);
    }
    if (entries == NULL)
        return NULL;
    return Py_BuildValue("{s:K,s:K,s:K,s:K,s:K,s:K,s:I,s:N,s:K,s:K}",
                         "calls", (unsigned long long)d->calls, "hits", (unsigned long long)d->hits,
                         "misses", (unsigned long long)d->misses,
                         "guard_failures", (unsigned long long)d->guard_failures,
                         "compiles", (unsigned long long)d->compiles,
                         "compile_ns", (unsigned long long)d->compile_ns,
                         "frame_id", d->frame_id, "entries", entries,
                         "lookup_timed", (unsigned long long)d->lookup_timed,
                         "lookup_ns", (unsigned long long)d->lookup_ns);
}

PyDoc_STRVAR(t_guard_timing_doc,
"_set_guard_timing(period) -> int: time 1 of every `period` guard lookups\n"
"(0: off), as dynamo-top's `g` does; returns the previous period.  The\n"
"period lives in the telemetry region's header while there is one (a reader\n"
"may change it), else in the process.  dynamo.config.guard_timing is this.");

static PyObject *
t_set_guard_timing(PyObject *module, PyObject *arg)
{
    unsigned long n = PyLong_AsUnsignedLong(arg);
    if (n == (unsigned long)-1 && PyErr_Occurred())
        return NULL;
    if (n > UINT32_MAX)
        return PyErr_Format(PyExc_OverflowError, "_set_guard_timing: period above 2**32 - 1");
    return PyLong_FromUnsignedLong(telemetry_set_guard_timing((uint32_t)n));
}

PyDoc_STRVAR(t_get_guard_timing_doc,
"_guard_timing() -> int: the guard lookup sampling period now (0: off).");

static PyObject *
t_get_guard_timing(PyObject *module, PyObject *unused)
{
    return PyLong_FromUnsignedLong(telemetry_timing_period());
}

PyDoc_STRVAR(t_redact_doc,
"_telemetry_redact(text) -> str: text with its quoted string literals\n"
"replaced when DYNAMO_TELEMETRY_REDACT=1 (names from the code kept), else text.");

static PyObject *
t_redact(PyObject *module, PyObject *text)
{
    return teletext_redact(text);
}

PyDoc_STRVAR(t_value_text_doc,
"_telemetry_value_text(value, limit) -> str: the short text telemetry\n"
"publishes for a guard value (types by qualified name, modules by class,\n"
"tensors by class and sizes).");

static PyObject *
t_value_text(PyObject *module, PyObject *args)
{
    PyObject *v;
    Py_ssize_t limit;
    if (!PyArg_ParseTuple(args, "On:_telemetry_value_text", &v, &limit))
        return NULL;
    return teletext_value(v, limit);
}

PyDoc_STRVAR(t_encode_doc,
"_telemetry_encode(value) -> bytes: the DtValue of ints, strs and (nested)\n"
"lists/tuples (None as \"\", other values as str()); dynamo.telemetry.encode_py\n"
"is its Python twin.");

static PyObject *
t_encode(PyObject *module, PyObject *value)
{
    return teletext_encode(value);
}

PyDoc_STRVAR(t_source_text_doc,
"_telemetry_source_text(code, source) -> str: how telemetry writes the\n"
"lowered guard source tuple `source` of code (\"L['x'].weight\").");

static PyObject *
t_source_text(PyObject *module, PyObject *args)
{
    PyObject *code, *spec;
    if (!PyArg_ParseTuple(args, "O!O:_telemetry_source_text", &PyCode_Type, &code, &spec))
        return NULL;
    return teletext_source(code, spec);
}

PyDoc_STRVAR(t_tree_doc,
"_telemetry_tree(code) -> (tree payload, counters payload) or None\n\n"
"What a publish of code's guard tree writes (DT_BLOB_TREE, DT_BLOB_COUNTERS),\n"
"from the tree as built; None when code has no built tree (nothing is built).");

static PyObject *
t_tree(PyObject *module, PyObject *code)
{
    if (!PyCode_Check(code))
        return PyErr_Format(PyExc_TypeError, "_telemetry_tree: a code object expected");
    CodeCache *cache = cache_get(code);
    if (cache == NULL || cache->tree == NULL)
        Py_RETURN_NONE;
    PyObject *tree, *counters;
    if (tele_tree_payload(cache, code, &tree, &counters) < 0)
        return NULL;
    return Py_BuildValue("(NN)", tree, counters);
}

static PyMethodDef telemetry_methods[] = {
    {"_telemetry_enabled", t_enabled, METH_NOARGS, t_enabled_doc},
    {"_telemetry_info", t_info, METH_NOARGS, t_info_doc},
    {"_telemetry_set_info", t_set_info, METH_VARARGS, t_set_info_doc},
    {"_telemetry_publish", t_publish, METH_VARARGS, t_publish_doc},
    {"_telemetry_refresh", t_refresh, METH_NOARGS, t_refresh_doc},
    {"_telemetry_save", t_save, METH_O, t_save_doc},
    {"_telemetry_counters", t_counters, METH_O, t_counters_doc},
    {"_telemetry_redact", t_redact, METH_O, t_redact_doc},
    {"_telemetry_value_text", t_value_text, METH_VARARGS, t_value_text_doc},
    {"_telemetry_source_text", t_source_text, METH_VARARGS, t_source_text_doc},
    {"_telemetry_encode", t_encode, METH_O, t_encode_doc},
    {"_telemetry_tree", t_tree, METH_O, t_tree_doc},
    {"_set_guard_timing", t_set_guard_timing, METH_O, t_guard_timing_doc},
    {"_guard_timing", t_get_guard_timing, METH_NOARGS, t_get_guard_timing_doc},
    {NULL, NULL, 0, NULL},
};

/* ---- the record's vocabulary (inspect/record.h) ------------------------------------------- */

/* Py_BuildValue formats and arguments generated from record.h's X-lists. */
#define FIELD_FMT(upper, lower) "s"
#define FIELD_ARG(upper, lower) #lower,
#define STATUS_FMT(name, text) "s:s"
#define STATUS_ARG(name, text) #name, text,
#define RESUME_FMT(name, text, label) "s:s"
#define RESUME_ARG(name, text, label) #name, text,
#define EVENT_FMT(name, number, text) "s:i"
#define EVENT_ARG(name, number, text) #name, number,

/* {"RECORD": ("frame_id", ...), "GRAPH": ..., ...}: every schema of a RECORD
 * blob, field names in payload order.  New reference, or NULL with an exception. */
static PyObject *
record_schemas(void)
{
    return Py_BuildValue(
        "{s:(" DT_RECORD_FIELDS(FIELD_FMT) "),s:(" DT_GRAPH_FIELDS(FIELD_FMT) "),"
        "s:(" DT_NODE_FIELDS(FIELD_FMT) "),s:(" DT_GUARD_FIELDS(FIELD_FMT) "),"
        "s:(" DT_BREAK_FIELDS(FIELD_FMT) "),s:(" DT_FRAME_FIELDS(FIELD_FMT) "),"
        "s:(" DT_RESUME_FIELDS(FIELD_FMT) ")}",
        "RECORD", DT_RECORD_FIELDS(FIELD_ARG) "GRAPH", DT_GRAPH_FIELDS(FIELD_ARG)
        "NODE", DT_NODE_FIELDS(FIELD_ARG) "GUARD", DT_GUARD_FIELDS(FIELD_ARG)
        "BREAK", DT_BREAK_FIELDS(FIELD_ARG) "FRAME", DT_FRAME_FIELDS(FIELD_ARG)
        "RESUME", DT_RESUME_FIELDS(FIELD_ARG) NULL);
}

int
telemetry_add_functions(PyObject *module)
{
    if (PyModule_AddFunctions(module, telemetry_methods) < 0)
        return -1;
    /* the four names in order; each value a new reference, NULL with an exception */
    const char *names[] = {"RECORD_SCHEMAS", "RECORD_STATUSES", "RESUME_KINDS", "EVENT_KINDS"};
    for (size_t i = 0; i < sizeof names / sizeof *names; i++) {
        PyObject *value =
            i == 0 ? record_schemas()
            : i == 1 ? Py_BuildValue("{" DT_REC_STATUSES(STATUS_FMT) "}", DT_REC_STATUSES(STATUS_ARG) NULL)
            : i == 2 ? Py_BuildValue("{" DT_RESUME_KINDS(RESUME_FMT) "}", DT_RESUME_KINDS(RESUME_ARG) NULL)
            : Py_BuildValue("{" DT_EVENT_KINDS(EVENT_FMT) "}", DT_EVENT_KINDS(EVENT_ARG) NULL);
        int rc = value != NULL ? PyModule_AddObjectRef(module, names[i], value) : -1;
        Py_XDECREF(value);
        if (rc < 0)
            return -1;
    }
    return 0;
}
