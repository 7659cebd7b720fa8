/* core/module.c — the dynamo._C module: init and the Python-level API.
 *
 * Owns: module state (the guard runtime with the cached torch callables),
 * argument checking of Contract 1 functions, and the wiring of the other
 * core/ and guards/ units.  It must not touch frames (core/hook.c does).
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include "cache.h"      /* per-code cache, skip marks, reset */
#include "modcall.h"    /* ModuleCall_Type */
#include "pyversion.h"  /* dyn_check_positional, dyn_long_as_int */
#include "callable.h"   /* thread mode, OptimizedCallable */
#include "hook.h"       /* hook_install */
#include "ir.h"         /* gir_compile */
#include "tree.h"       /* guard trees: lookup, info, stats */
#include "telemetry.h"  /* the telemetry region and _telemetry_* */
#include "breakprobe.h" /* BreakProbe, _set_break_sampling */

/* guards/tmeta_py.c: the tmeta test hooks (_tensor_meta, _dtype_code, ...). */
int tmeta_add_test_functions(PyObject *module);

typedef struct {
    GirRuntime runtime;     /* torch callables for the guards */
    PyObject *compile_lock; /* strong: the _thread.RLock serializing compiles */
} ModuleState;

static struct PyModuleDef module_def;

/* A new _thread.RLock (strong), or NULL with an exception.  Reentrant: a
 * compile may run frames that compile (a backend calling an optimized
 * function) on the same thread. */
static PyObject *
new_rlock(void)
{
    PyObject *thread = PyImport_ImportModule("_thread");
    if (thread == NULL)
        return NULL;
    PyObject *lock = PyObject_CallMethod(thread, "RLock", NULL);
    Py_DECREF(thread);
    return lock;
}

static int
require_code(PyObject *code)
{
    if (PyCode_Check(code))
        return 0;
    PyErr_Format(PyExc_TypeError, "expected a code object, got %.100s", Py_TYPE(code)->tp_name);
    return -1;
}

PyDoc_STRVAR(set_mode_doc,
"set_mode(mode, callback) -> (prev_mode, prev_callback)\n\n"
"Set this thread's mode (0 OFF, 1 COMPILE, 2 RUN) and compile callback\n"
"(its backend key, callback.backend_key, is read here).");

static PyObject *
set_mode(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    if (!dyn_check_positional("set_mode", nargs, 2, 2))
        return NULL;
    int mode = dyn_long_as_int(args[0]);
    if (mode == -1 && PyErr_Occurred())
        return NULL;
    if (mode < MODE_OFF || mode > MODE_LAST) {
        PyErr_Format(PyExc_ValueError, "set_mode: mode must be 0, 1 or 2, not %d", mode);
        return NULL;
    }
    if (callable_forced_off())                  /* the force_eager stance */
        mode = MODE_OFF;
    if (mode != MODE_OFF)
        hook_install();
    int64_t backend = callable_backend_key(args[1]);
    CallableSaved prev;
    callable_swap(mode, args[1], backend, &prev);
    return Py_BuildValue("(iN)", prev.mode, prev.callback ? prev.callback : Py_NewRef(Py_None));
}

PyDoc_STRVAR(set_forced_off_doc,
"_set_forced_off(on) -> bool: the force_eager stance (dynamo.set_stance): while on,\n"
"OptimizedCallable and set_mode set mode OFF instead of any other; the previous value.");

static PyObject *
set_forced_off(PyObject *module, PyObject *on)
{
    int flag = PyObject_IsTrue(on);
    if (flag < 0)
        return NULL;
    int prev = callable_forced_off();
    callable_set_forced_off(flag);
    return PyBool_FromLong(prev);
}

PyDoc_STRVAR(get_mode_doc, "get_mode() -> (mode, callback) of this thread.");

static PyObject *
get_mode(PyObject *module, PyObject *unused)
{
    PyObject *cb = callable_callback();
    return Py_BuildValue("(iO)", callable_mode(), cb ? cb : Py_None);
}

PyDoc_STRVAR(set_skip_doc,
"set_skip(code, recursive=False): frames of code always run the default evaluator;\n"
"recursive: with the thread mode OFF, so the frames they call are neither\n"
"compiled nor looked up (what torch.compiler.disable's wrapper asks).");

static PyObject *
set_skip(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    if (!dyn_check_positional("set_skip", nargs, 1, 2))
        return NULL;
    int recursive = nargs > 1 ? PyObject_IsTrue(args[1]) : 0;
    if (recursive < 0 || require_code(args[0]) < 0)
        return NULL;
    CodeCache *c = cache_ensure(args[0]);
    if (c == NULL)
        return NULL;
    c->skip = recursive ? SKIP_RECURSIVE : SKIP_FRAME;
    Py_RETURN_NONE;
}

PyDoc_STRVAR(remember_eager_doc,
"remember_eager(code, types, closure) -> bool: a later miss of a function of code\n"
"whose __closure__ is this very object (None: no closure) and whose argument\n"
"slots have exactly these types (a tuple, one per slot) runs the default\n"
"evaluator without calling back.  False when known already or when the code\n"
"has as many signatures as it keeps; dynamo.reset() forgets them.");

static PyObject *
remember_eager(PyObject *module, PyObject *args)
{
    PyObject *code, *sig, *closure;
    if (!PyArg_ParseTuple(args, "OO!O:remember_eager", &code, &PyTuple_Type, &sig, &closure)
            || require_code(code) < 0)
        return NULL;
    if (closure != Py_None && !PyTuple_Check(closure)) {
        PyErr_SetString(PyExc_TypeError, "remember_eager: closure must be a tuple or None");
        return NULL;
    }
    Py_ssize_t n = PyTuple_GET_SIZE(sig);
    for (Py_ssize_t i = 0; i < n; i++) {
        if (!PyType_Check(PyTuple_GET_ITEM(sig, i))) {
            PyErr_Format(PyExc_TypeError, "remember_eager: item %zd of the signature is not a type", i);
            return NULL;
        }
    }
    int r = cache_remember_eager(code, sig, closure == Py_None ? NULL : closure);
    return r < 0 ? NULL : PyBool_FromLong(r);
}

PyDoc_STRVAR(is_skip_doc, "is_skip(code) -> bool");

static PyObject *
is_skip(PyObject *module, PyObject *code)
{
    if (require_code(code) < 0)
        return NULL;
    CodeCache *c = cache_get(code);
    return PyBool_FromLong(c != NULL && c->skip);
}

PyDoc_STRVAR(cache_direct_doc,
"cache_direct(code) -> per live entry, newest first: its direct-call plan\n"
"(fn, slots, index, line), or None when a hit runs the entry's code in a frame.");

static PyObject *
cache_direct(PyObject *module, PyObject *code)
{
    if (require_code(code) < 0)
        return NULL;
    return cache_directs(code);
}

PyDoc_STRVAR(cache_entries_doc, "cache_entries(code) -> list of payloads, newest first.");

static PyObject *
cache_entries(PyObject *module, PyObject *code)
{
    if (require_code(code) < 0)
        return NULL;
    return cache_payloads(code);
}

PyDoc_STRVAR(clear_cache_doc, "clear_cache(code): drop every cache entry of code.");

static PyObject *
clear_cache(PyObject *module, PyObject *code)
{
    if (require_code(code) < 0)
        return NULL;
    cache_clear(code);
    Py_RETURN_NONE;
}

PyDoc_STRVAR(drop_unused_doc,
"drop_unused(code) -> list of payloads: drop the entries of code that no lookup\n"
"has picked since they were added (the call that compiled one is not a pick),\n"
"newest first.");

static PyObject *
drop_unused(PyObject *module, PyObject *code)
{
    if (require_code(code) < 0)
        return NULL;
    return cache_drop_unused(code);
}

PyDoc_STRVAR(reset_doc, "reset(): drop every cache entry and skip mark ever set.");

static PyObject *
reset(PyObject *module, PyObject *unused)
{
    cache_reset_all();
    telemetry_reset_event();
    Py_RETURN_NONE;
}

PyDoc_STRVAR(reset_count_doc,
"reset_count() -> int: how many reset() calls so far; a compile that sees it\n"
"change while it runs was made for what reset() dropped.");

static PyObject *
reset_count(PyObject *module, PyObject *unused)
{
    return PyLong_FromUnsignedLongLong(cache_resets);
}

/* A dict's values in insertion order, as a new tuple (the LOCAL slots). */
static PyObject *
dict_values_tuple(PyObject *d)
{
    if (!PyDict_Check(d)) {
        PyErr_SetString(PyExc_TypeError, "eval_guards: f_locals must be a dict");
        return NULL;
    }
    PyObject *values = PyDict_Values(d);
    if (values == NULL)
        return NULL;
    PyObject *t = PyList_AsTuple(values);
    Py_DECREF(values);
    return t;
}

/* A module's namespace, or the dict itself. */
static PyObject *
as_namespace(PyObject *o /* borrowed */, const char *what)
{
    if (PyModule_Check(o))
        o = PyModule_GetDict(o);
    if (o == NULL || !PyDict_Check(o)) {
        PyErr_Format(PyExc_TypeError, "eval_guards: %s must be a dict or a module", what);
        return NULL;
    }
    return o;
}

/* Fills *fr from (f_locals, f_globals, f_builtins, closure) = args[0..3] of
 * the test function `fname`.  *locals receives a new tuple of f_locals'
 * values that fr->locals points into: the caller releases it, also on error.
 * 0, or -1 with an exception set. */
static int
frame_from_args(const char *fname, PyObject *const *args /* borrowed */, GevalFrame *fr,
                PyObject **locals /* strong, out */)
{
    fr->closure = args[3] == Py_None ? NULL : args[3];
    if (fr->closure != NULL && !PyTuple_Check(fr->closure)) {
        PyErr_Format(PyExc_TypeError, "%s: closure must be a tuple of cells or None", fname);
        return -1;
    }
    if ((*locals = dict_values_tuple(args[0])) == NULL
            || (fr->globals = as_namespace(args[1], "f_globals")) == NULL
            || (fr->builtins = as_namespace(args[2], "f_builtins")) == NULL)
        return -1;
    fr->locals = &PyTuple_GET_ITEM(*locals, 0);
    fr->nlocals = PyTuple_GET_SIZE(*locals);
    return 0;
}

/* The optional backend key argument of the test functions into fr.
 * 0, or -1 with an exception. */
static int
backend_arg(PyObject *arg /* borrowed */, GevalFrame *fr)
{
    long long v = PyLong_AsLongLong(arg);
    if (v == -1 && PyErr_Occurred())
        return -1;
    fr->backend = v;
    return 0;
}

PyDoc_STRVAR(eval_guards_doc,
"eval_guards(guards, f_locals, f_globals, f_builtins, closure, backend=0) -> int\n\n"
"Compile and evaluate a guard list once (tests).  LOCAL slot i is the i-th\n"
"value of f_locals; backend: the caller's backend key (BACKEND_MATCH; 0 any).\n"
"-1 if every guard passes, else the first failing index.");

static PyObject *
eval_guards(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    if (!dyn_check_positional("eval_guards", nargs, 5, 6))
        return NULL;
    PyObject *result = NULL, *locals = NULL;
    GirSet *gs = NULL;
    GTree *tree = NULL;
    GevalFrame fr = {0};
    if (frame_from_args("eval_guards", args + 1, &fr, &locals) < 0
            || (nargs > 5 && backend_arg(args[5], &fr) < 0))
        goto error;
    ModuleState *st = PyModule_GetState(module);
    if ((gs = gir_compile(args[0], &st->runtime)) == NULL)
        goto error;
    GtreeInput in = {.guards = gs, .payload = Py_None};
    if ((tree = gtree_build(&in, 1, &st->runtime)) == NULL)
        goto error;
    Py_ssize_t failed = gtree_first_failure(tree, 0, &fr);
    if (failed != -2)
        result = PyLong_FromSsize_t(failed);
error:
    gtree_decref(tree);
    gir_free(gs);
    Py_XDECREF(locals);
    return result;
}

/* ---- guard trees ------------------------------------------------------------ */

static const char tree_capsule_name[] = "dynamo._C.GuardTree";

static void
tree_capsule_free(PyObject *capsule)
{
    gtree_decref(PyCapsule_GetPointer(capsule, tree_capsule_name));
}

PyDoc_STRVAR(tree_new_doc,
"_tree_new(entries) -> tree\n\n"
"Build a guard tree (tests) from a list of (guards, payload), newest first.");

static PyObject *
tree_new(PyObject *module, PyObject *entries)
{
    ModuleState *st = PyModule_GetState(module);
    PyObject *seq = PySequence_Fast(entries, "_tree_new: entries must be a list");
    if (seq == NULL)
        return NULL;
    Py_ssize_t n = PySequence_Fast_GET_SIZE(seq), compiled = 0;
    PyObject *result = NULL;
    GtreeInput *in = PyMem_Calloc(n ? n : 1, sizeof(GtreeInput));
    if (in == NULL) {
        PyErr_NoMemory();
        goto error;
    }
    for (; compiled < n; compiled++) {
        PyObject *item = PySequence_Fast_GET_ITEM(seq, compiled);
        if (!PyTuple_Check(item) || PyTuple_GET_SIZE(item) != 2) {
            PyErr_SetString(PyExc_TypeError, "_tree_new: entries are (guards, payload)");
            goto error;
        }
        in[compiled].payload = PyTuple_GET_ITEM(item, 1);
        if ((in[compiled].guards = gir_compile(PyTuple_GET_ITEM(item, 0), &st->runtime)) == NULL)
            goto error;
    }
    GTree *tree = gtree_build(in, n, &st->runtime);
    if (tree != NULL && (result = PyCapsule_New(tree, tree_capsule_name, tree_capsule_free)) == NULL)
        gtree_decref(tree);
error:
    for (Py_ssize_t i = 0; in != NULL && i < compiled; i++)
        gir_free(in[i].guards);
    PyMem_Free(in);
    Py_DECREF(seq);
    return result;
}

PyDoc_STRVAR(tree_lookup_doc,
"_tree_lookup(tree, f_locals, f_globals, f_builtins, closure, backend=0, timed=False)\n"
"-> (hit, failures)\n\n"
"hit: index of the chosen entry or -1; failures: the callback's list on a miss;\n"
"backend: the caller's backend key (BACKEND_MATCH; 0 any); timed: the hook's\n"
"timed walk (gtree_lookup_timed: node and test slot counters, _tree_info).");

static PyObject *
tree_lookup(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    if (!dyn_check_positional("_tree_lookup", nargs, 5, 7))
        return NULL;
    int timed = nargs > 6 ? PyObject_IsTrue(args[6]) : 0;
    if (timed < 0)
        return NULL;
    GTree *tree = PyCapsule_GetPointer(args[0], tree_capsule_name);
    if (tree == NULL)
        return NULL;
    PyObject *locals = NULL, *failures = NULL, *result = NULL;
    GevalFrame fr = {0};
    if (frame_from_args("_tree_lookup", args + 1, &fr, &locals) < 0
            || (nargs > 5 && backend_arg(args[5], &fr) < 0))
        goto error;
    gtree_incref(tree);
    uint64_t ns;
    Py_ssize_t hit = timed ? gtree_lookup_timed(tree, &fr, &failures, &ns)
                           : gtree_lookup(tree, &fr, &failures);
    gtree_decref(tree);
    if (hit == GTREE_ERROR)
        goto error;
    result = Py_BuildValue("(nO)", hit >= 0 ? hit : -1, failures ? failures : Py_None);
error:
    Py_XDECREF(failures);
    Py_XDECREF(locals);
    return result;
}

PyDoc_STRVAR(tree_view_doc,
"_tree_info(tree) -> dict; _tree_stats(tree) -> dict (see tree_info / tree_stats).");

static PyObject *
tree_view(PyObject *module, PyObject *args)
{
    PyObject *capsule;
    int stats = 0;
    if (!PyArg_ParseTuple(args, "O|p", &capsule, &stats))
        return NULL;
    GTree *tree = PyCapsule_GetPointer(capsule, tree_capsule_name);
    if (tree == NULL)
        return NULL;
    return stats ? gtree_stats(tree) : gtree_info(tree);
}

/* The current tree of code (built if stale) as a new reference; NULL with
 * an exception, or NULL without one when code has no entries. */
static GTree *
code_tree(PyObject *module, PyObject *code)
{
    if (require_code(code) < 0)
        return NULL;
    CodeCache *c = cache_get(code);
    if (c == NULL || c->entries == NULL)
        return NULL;
    ModuleState *st = PyModule_GetState(module);
    return cache_tree(c, &st->runtime);
}

/* view(tree) of code's current guard tree (a new reference), None when
 * code has no entries, NULL with an exception. */
static PyObject *
code_tree_view(PyObject *module, PyObject *code, PyObject *(*view)(const GTree *))
{
    GTree *tree = code_tree(module, code);
    if (tree == NULL) {
        if (PyErr_Occurred())       /* an error, not just no entries? */
            return NULL;
        Py_RETURN_NONE;
    }
    PyObject *result = view(tree);
    gtree_decref(tree);
    return result;
}

PyDoc_STRVAR(tree_info_doc,
"tree_info(code) -> dict or None\n\n"
"The guard tree of code's cache entries: {'entries': [payload, ...],\n"
"'nodes': n, 'root': node}; a node is {'tests': [(source, property,\n"
"expected)], 'switch': (source, property) or None, 'branches': [(value,\n"
"node)], 'default': node or None, 'leaf': [(payload, entry_index, tests)]\n"
"or None, 'evaluations': n, 'failures': n, 'newest': entry_index}.");

static PyObject *
tree_info(PyObject *module, PyObject *code)
{
    return code_tree_view(module, code, gtree_info);
}

PyDoc_STRVAR(tree_stats_doc,
"tree_stats(code) -> dict or None\n\n"
"{'last_visited': nodes entered by the last lookup, 'visited_total',\n"
"'lookups', 'hits', 'misses', 'nodes', 'entries', 'tests', 'rebuilds'}.");

static PyObject *
tree_stats(PyObject *module, PyObject *code)
{
    PyObject *stats = code_tree_view(module, code, gtree_stats);
    if (stats == NULL || stats == Py_None)     /* error, or no entries? */
        return stats;
    PyObject *rebuilds = PyLong_FromUnsignedLongLong(cache_get(code)->rebuilds);
    if (rebuilds == NULL || PyDict_SetItemString(stats, "rebuilds", rebuilds) < 0)
        Py_CLEAR(stats);
    Py_XDECREF(rebuilds);
    return stats;
}

PyDoc_STRVAR(hook_installed_doc, "_hook_installed() -> bool (tests).");

static PyObject *
hook_installed_py(PyObject *module, PyObject *unused)
{
    return PyBool_FromLong(hook_installed());
}

PyDoc_STRVAR(tree_property_text_doc,
"tree_property_text(src, prop) -> str\n\n"
"How guard-tree property `prop` (one of TREE_PROPERTIES, with \"[dim]\" after\n"
"\"size()\" and \"stride()\") of the source written `src` reads to a user:\n"
"(\"L['a']\", \"size()[0]\") -> \"L['a'].size()[0]\" (TREE_PROPERTY_FORMS).");

static PyObject *
tree_property_text(PyObject *module, PyObject *args)
{
    PyObject *src, *prop;
    if (!PyArg_ParseTuple(args, "UU:tree_property_text", &src, &prop))
        return NULL;
    return gtree_property_text(src, prop);
}

static PyMethodDef module_methods[] = {
    {"set_mode", (PyCFunction)(void (*)(void))set_mode, METH_FASTCALL, set_mode_doc},
    {"get_mode", get_mode, METH_NOARGS, get_mode_doc},
    {"_set_forced_off", set_forced_off, METH_O, set_forced_off_doc},
    {"set_skip", (PyCFunction)(void (*)(void))set_skip, METH_FASTCALL, set_skip_doc},
    {"is_skip", is_skip, METH_O, is_skip_doc},
    {"remember_eager", remember_eager, METH_VARARGS, remember_eager_doc},
    {"cache_entries", cache_entries, METH_O, cache_entries_doc},
    {"cache_direct", cache_direct, METH_O, cache_direct_doc},
    {"clear_cache", clear_cache, METH_O, clear_cache_doc},
    {"drop_unused", drop_unused, METH_O, drop_unused_doc},
    {"reset", reset, METH_NOARGS, reset_doc},
    {"reset_count", reset_count, METH_NOARGS, reset_count_doc},
    {"eval_guards", (PyCFunction)(void (*)(void))eval_guards, METH_FASTCALL, eval_guards_doc},
    {"_hook_installed", hook_installed_py, METH_NOARGS, hook_installed_doc},
    {"tree_info", tree_info, METH_O, tree_info_doc},
    {"tree_stats", tree_stats, METH_O, tree_stats_doc},
    {"tree_property_text", tree_property_text, METH_VARARGS, tree_property_text_doc},
    {"_tree_new", tree_new, METH_O, tree_new_doc},
    {"_tree_lookup", (PyCFunction)(void (*)(void))tree_lookup, METH_FASTCALL, tree_lookup_doc},
    {"_tree_info", tree_view, METH_VARARGS, tree_view_doc},
    {NULL, NULL, 0, NULL},
};

static int
module_traverse(PyObject *m, visitproc visit, void *arg)
{
    ModuleState *st = PyModule_GetState(m);
    if (st != NULL) {
        Py_VISIT(st->runtime.dispatch_keys);
        Py_VISIT(st->runtime.tls_include);
        Py_VISIT(st->runtime.tls_exclude);
        Py_VISIT(st->runtime.is_grad_enabled);
        Py_VISIT(st->compile_lock);
    }
    return 0;
}

static void
module_free(void *m)
{
    ModuleState *st = PyModule_GetState((PyObject *)m);
    hook_set_runtime(NULL);
    hook_set_compile_lock(NULL);
    if (st != NULL) {
        gir_runtime_clear(&st->runtime);
        Py_CLEAR(st->compile_lock);
    }
}

PyDoc_STRVAR(module_doc,
"dynamo._C: eval-frame hook, per-code cache, shadow frames, guards.\n"
"See docs/ARCHITECTURE.md, Contract 1.");

static struct PyModuleDef module_def = {
    PyModuleDef_HEAD_INIT,
    .m_name = "dynamo._C",
    .m_doc = module_doc,
    .m_size = sizeof(ModuleState),
    .m_methods = module_methods,
    .m_traverse = module_traverse,
    .m_free = module_free,
};

PyMODINIT_FUNC
PyInit__C(void)
{
    if (PyState_FindModule(&module_def) != NULL) {     /* one instance only */
        PyErr_SetString(PyExc_ImportError, "dynamo._C cannot be loaded twice");
        return NULL;
    }
    if (cache_init() < 0 || PyType_Ready(&OptimizedCallable_Type) < 0 || modcall_init() < 0
            || gtree_module_init() < 0)
        return NULL;
    PyObject *m = PyModule_Create(&module_def);
    if (m == NULL)
        return NULL;
    ModuleState *st = PyModule_GetState(m);
    memset(st, 0, sizeof(*st));
    st->compile_lock = new_rlock();
    if (PyModule_AddType(m, &OptimizedCallable_Type) < 0
            || PyModule_AddType(m, &ModuleCall_Type) < 0
            || PyModule_AddIntConstant(m, "MODE_OFF", MODE_OFF) < 0
            || PyModule_AddIntConstant(m, "MODE_COMPILE", MODE_COMPILE) < 0
            || PyModule_AddIntConstant(m, "MODE_RUN", MODE_RUN) < 0
            || PyModule_AddObjectRef(m, "MISSING", gtree_missing()) < 0
            || st->compile_lock == NULL
            || PyModule_AddObjectRef(m, "compile_lock", st->compile_lock) < 0
            || gir_add_vocabulary(m) < 0
            || gtree_add_vocabulary(m) < 0
            || tmeta_add_test_functions(m) < 0
            || telemetry_add_functions(m) < 0
            || bprobe_add_to_module(m) < 0
            || PyState_AddModule(m, &module_def) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    hook_set_runtime(&st->runtime);
    hook_set_compile_lock(st->compile_lock);
    telemetry_init();
    return m;
}
