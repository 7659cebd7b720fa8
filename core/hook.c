/* core/hook.c — the PEP 523 eval-frame hook and the shadow frames it runs.
 *
 * Owns: everything that reads or builds a _PyInterpreterFrame.  This is the
 * only file of the extension compiled against CPython internals
 * (Py_BUILD_CORE, through core/pyversion.h, which holds every version
 * difference: CPython 3.11 to 3.13).  For each fresh
 * function frame while the thread mode is not OFF it looks the code up in
 * its cache (core/cache.c), evaluates its guard tree (guards/tree.c), calls the
 * Python callback on a miss in COMPILE mode, and runs the chosen code in a
 * shadow frame, or, for an entry with a direct-call plan, calls its graph
 * without that frame.  Frames that guard checks run are never looked up.
 * It must never crash or corrupt the interpreter: an internal
 * failure is reported with PyErr_WriteUnraisable and the frame runs
 * normally.  It must not keep per-frame state outside the C stack.
 */
/* _PyInterpreterFrame and its per-version spellings (dyn_frame_*). */
#define DYN_FRAME_INTERNALS 1
#include "pyversion.h"

#include <string.h>     /* memcpy */
#include <time.h>       /* clock_gettime: compile time, for the break probes */

#include "hook.h"
#include "cache.h"      /* CodeCache, CacheEntry */
#include "callable.h"   /* thread mode and callback */
#include "tree.h"       /* gtree_lookup */
#include "telemetry.h"  /* counters of the shared telemetry region */
#include "breakprobe.h" /* bprobe_compile_ns: compiles inside a timed eager region */

#define LIKELY(x) __builtin_expect(!!(x), 1)
#define UNLIKELY(x) __builtin_expect(!!(x), 0)

/* A lookup hook_vectorcall made for the frame it is about to create
 * through the normal call path (a miss, or an internal error it already
 * reported).  Nothing runs between setting it and the hook seeing that
 * frame; the hook consumes it, hook_vectorcall clears it in any case. */
typedef struct {
    PyCodeObject *code;         /* borrowed: the code looked up, or NULL */
    int internal;               /* the lookup failed (reported): run normally */
    PyObject *failures;         /* strong: the miss's failures list, or NULL */
} Pending;

static _Thread_local Pending pending;

static void
pending_clear(void)
{
    PyObject *failures = pending.failures;
    pending.code = NULL;
    pending.internal = 0;
    pending.failures = NULL;
    Py_XDECREF(failures);
}

/* What the interpreter ran before the hook (NULL: the default evaluator);
 * frames the hook does not handle go there. */
static _PyFrameEvalFunction previous_eval;

/* Torch callables for the guards (module state, borrowed). */
static GirRuntime *runtime;

/* The _thread.RLock every compile holds (module state, borrowed; NULL:
 * compiles are not serialized). */
static PyObject *compile_lock;


static PyObject *hook_eval_frame(PyThreadState *, _PyInterpreterFrame *, int);

void
hook_install(void)
{
    PyInterpreterState *interp = PyInterpreterState_Get();
    _PyFrameEvalFunction current = _PyInterpreterState_GetEvalFrameFunc(interp);
    if (current == hook_eval_frame)
        return;
    previous_eval = current == _PyEval_EvalFrameDefault ? NULL : current;
    _PyInterpreterState_SetEvalFrameFunc(interp, hook_eval_frame);
}

void
hook_uninstall(void)
{
    PyInterpreterState *interp = PyInterpreterState_Get();
    if (_PyInterpreterState_GetEvalFrameFunc(interp) != hook_eval_frame)
        return;                                 /* replaced since: not ours to undo */
    _PyInterpreterState_SetEvalFrameFunc(interp, previous_eval != NULL ? previous_eval
                                                                       : _PyEval_EvalFrameDefault);
}

int
hook_installed(void)
{
    return _PyInterpreterState_GetEvalFrameFunc(PyInterpreterState_Get()) == hook_eval_frame;
}

void
hook_set_runtime(GirRuntime *rt)
{
    runtime = rt;
}

void
hook_set_compile_lock(PyObject *lock)
{
    compile_lock = lock;
}

static PyObject *
eval_normally(PyThreadState *tstate, _PyInterpreterFrame *frame, int throwflag)
{
    if (previous_eval != NULL)
        return previous_eval(tstate, frame, throwflag);
    return _PyEval_EvalFrameDefault(tstate, frame, throwflag);
}

/* A frame of a SKIP_RECURSIVE code (torch.compiler.disable's wrapper):
 * evaluated with the thread mode OFF, so the frames it calls are neither
 * compiled nor looked up; the mode is back when it returns or raises. */
static PyObject *
eval_off(PyThreadState *tstate, _PyInterpreterFrame *frame)
{
    CallableSaved prev;
    callable_swap(MODE_OFF, NULL, 0, &prev);
    PyObject *result = eval_normally(tstate, frame, 0);
    callable_restore(&prev);
    return result;
}

/* cache_get without the call: the co_extra slot read in place. */
static inline CodeCache *
frame_cache(PyCodeObject *code)
{
    const DynCodeExtra *extra = code->co_extra;
    Py_ssize_t i = cache_extra_index;
    return extra != NULL && i < extra->ce_size ? extra->ce_extras[i] : NULL;
}

/* Slots holding arguments: positional, keyword-only, *args, **kwargs. */
static inline int
arg_count(PyCodeObject *code)
{
    return code->co_argcount + code->co_kwonlyargcount
           + !!(code->co_flags & CO_VARARGS) + !!(code->co_flags & CO_VARKEYWORDS);
}

/* A function frame about to run its first instruction? */
static inline int
is_fresh_function_frame(_PyInterpreterFrame *frame)
{
    if (frame->owner != FRAME_OWNED_BY_THREAD || !dyn_frame_has_code(frame)
            || dyn_frame_func(frame) == NULL)
        return 0;
    PyCodeObject *code = dyn_frame_code(frame);
    return (code->co_flags & CO_OPTIMIZED)
           && !(code->co_flags & (CO_GENERATOR | CO_COROUTINE | CO_ASYNC_GENERATOR))
           && dyn_frame_is_fresh(frame);
}

/* ---- lookup --------------------------------------------------------------- */

/* Guard cost sampling is on: is this lookup of cache's code the one of
 * every N to time?  Counted per code: one process-wide count aliased with
 * the call pattern (two models called in turn, N even: only one of them
 * was ever timed). */
static int
timing_due(CodeCache *cache)
{
    if (++cache->timing_tick < telemetry_timing_period())
        return 0;
    cache->timing_tick = 0;
    return 1;
}

/* Evaluate the cache's guard tree.  On a hit *hit is a referenced entry
 * (drop it with cache_entry_decref); on a miss *hit is NULL and, when
 * failures is not NULL, *failures is the new list for the callback (empty
 * when Python code run by a check dropped entries).  0, or -1 with an
 * exception from a guard or the tree build. */
static int
lookup(CallableState *st, CodeCache *cache, GevalFrame *gf, CacheEntry **hit, PyObject **failures)
{
    *hit = NULL;
    GTree *tree = cache_tree(cache, runtime);
    if (tree == NULL)
        return PyErr_Occurred() ? -1 : 0;
    gf->generation = &cache_generation;
    gf->generation0 = cache_generation;
    gf->backend = st->backend;                  /* BACKEND_MATCH: the callback's key */
    st->guard_depth++;                          /* Python code run by checks: not ours */
    Py_ssize_t r;
    uint64_t ns = 0;
    int timed = UNLIKELY(telemetry_timing_period() != 0) && timing_due(cache);
    if (LIKELY(!timed))
        r = gtree_lookup(tree, gf, failures);
    else
        r = gtree_lookup_timed(tree, gf, failures, &ns);
    st->guard_depth--;
    if (r >= 0 && cache_generation == gf->generation0) {   /* tags still valid? */
        *hit = cache_entry_incref(gtree_tag(tree, r));
        (*hit)->hits++;
    }
    if (UNLIKELY(timed) && cache->tele != NULL)             /* telemetry on for this code? */
        telemetry_count_timing(cache->tele, *hit != NULL ? (*hit)->tele : NULL, ns);
    else if (r == GTREE_ABORTED && failures != NULL)
        *failures = PyList_New(0);
    gtree_decref(tree);
    if (r == GTREE_ERROR || (failures != NULL && r < 0 && *failures == NULL))
        return -1;
    return 0;
}

/* ---- shadow frames -------------------------------------------------------- */

/* Give the frame data to a frame object that outlives the call (held by a
 * traceback or sys._getframe()), as CPython's frame.c does for its own
 * frames: copy the live part into the object, link f_back, GC-track it. */
static void
hand_over(PyFrameObject *f, _PyInterpreterFrame *sf)
{
    PyCodeObject *code = dyn_frame_code(sf);
    if (_PyFrame_IsIncomplete(sf))              /* died before RESUME ran? */
        dyn_frame_mark_complete(sf);

    PyObject *exc_type, *exc_value, *exc_tb;
    PyErr_Fetch(&exc_type, &exc_value, &exc_tb);
    PyFrameObject *back = PyFrame_GetBack(f);   /* while sf->previous is valid */
    if (back == NULL && PyErr_Occurred())
        PyErr_WriteUnraisable((PyObject *)code);
    PyErr_Restore(exc_type, exc_value, exc_tb);

    size_t live = (char *)&sf->localsplus[sf->stacktop] - (char *)sf;
    _PyInterpreterFrame *kept = (_PyInterpreterFrame *)f->_f_frame_data;
    memcpy(kept, sf, live);
    f->f_frame = kept;
    kept->owner = FRAME_OWNED_BY_FRAME_OBJECT;
    kept->previous = NULL;
    if (f->f_back == NULL)
        f->f_back = back;                       /* steals the reference */
    else
        Py_XDECREF(back);
    if (!PyObject_GC_IsTracked((PyObject *)f))
        PyObject_GC_Track((PyObject *)f);
}

/* Release a shadow frame after evaluation (CPython's _PyFrame_Clear). */
static void
clear_shadow(_PyInterpreterFrame *sf)
{
    PyFrameObject *f = sf->frame_obj;
    if (f != NULL) {
        sf->frame_obj = NULL;
        if (Py_REFCNT(f) > 1) {                 /* still referenced elsewhere? */
            hand_over(f, sf);
            Py_DECREF(f);
            return;
        }
        Py_DECREF(f);
    }
    for (int i = 0; i < sf->stacktop; i++)
        Py_XDECREF(sf->localsplus[i]);
    Py_XDECREF(sf->f_locals);
    dyn_frame_drop_specials(sf);
}

/* The frame the interpreter handed the hook, which the hook answered
 * without evaluating it (a shadow frame or a direct call ran instead, or
 * the callback raised).  3.12+ hands the evaluator the job of clearing and
 * popping it; 3.11's caller does that itself. */
static void
release_unevaluated(PyThreadState *tstate, _PyInterpreterFrame *frame)
{
    if (!DYN_EVAL_POPS_FRAME)
        return;
    clear_shadow(frame);
    dyn_frame_pop(tstate, frame);
}

/* Run `code` in a new frame of func (globals, builtins: the frame's) whose
 * argument slots are argv[0 .. arg_count(code)) (borrowed; NULL items
 * allowed).  Returns the result, NULL with the code's exception, or NULL
 * with *internal set when no frame could be allocated (nothing ran). */
static PyObject *
run_shadow(PyThreadState *tstate, PyFunctionObject *func, PyObject *globals, PyObject *builtins,
           PyObject *const *argv, PyCodeObject *code, int *internal)
{
    int heap;
    _PyInterpreterFrame *sf = dyn_frame_alloc(tstate, dyn_frame_words(code), &heap);
    if (sf == NULL) {
        *internal = 1;
        return NULL;
    }
    dyn_frame_init(sf, func, code, globals, builtins);
    int nargs = arg_count(code);
    for (int i = 0; i < nargs; i++)
        sf->localsplus[i] = Py_XNewRef(argv[i]);

    PyObject *result = _PyEval_EvalFrameDefault(tstate, sf, 0);

    if (!DYN_EVAL_POPS_FRAME) {                 /* 3.11: the caller clears and pops */
        clear_shadow(sf);
        if (heap)
            PyMem_Free(sf);
        else
            tstate->datastack_top = (PyObject **)sf;
    }
    return result;
}

/* Can fn(*args) bind its arguments by position alone, so that args are the
 * frame's argument slots?  (No defaults to fill, no keywords, no *args or
 * **kwargs, no keyword-only parameters; a plain function frame.) */
static inline int
binds_by_position(PyObject *fn, Py_ssize_t nargs, PyObject *kwnames)
{
    if (!PyFunction_Check(fn) || (kwnames != NULL && PyTuple_GET_SIZE(kwnames) != 0))
        return 0;
    PyCodeObject *code = (PyCodeObject *)((PyFunctionObject *)fn)->func_code;
    return nargs == code->co_argcount && code->co_kwonlyargcount == 0
           && (code->co_flags & CO_OPTIMIZED)
           && !(code->co_flags & (CO_VARARGS | CO_VARKEYWORDS | CO_GENERATOR | CO_COROUTINE
                                  | CO_ASYNC_GENERATOR));
}

/* ---- direct calls ----------------------------------------------------------- */

/* Can hit e skip its frame?  Not while a tracer or profiler is set: they
 * must see the function's frame as they would without dynamo. */
static inline int
runs_direct(const CacheEntry *e, PyThreadState *tstate)
{
    return e->direct != NULL && !dyn_tracing(tstate);
}

/* The frame of a compiled graph that is a plain Python function the hook
 * would pass by anyway (skip-marked code, e.g. an fx forward), taking the
 * nargs given by position: run in a frame built here, like a shadow
 * frame, rather than through the call machinery and the hook. */
static inline int
runs_own_frame(PyObject *func, int nargs)
{
    if (!binds_by_position(func, nargs, NULL))
        return 0;
    CodeCache *cache = frame_cache((PyCodeObject *)((PyFunctionObject *)func)->func_code);
    return cache != NULL && cache->skip == SKIP_FRAME;
}

/* Run hit e's direct plan on the argument slots argv (borrowed; the
 * caller keeps them and e alive): what e->code's shadow frame would
 * return, without the frame.  NULL with the graph's exception, to which a
 * traceback entry for e->code (file, name, line of the call) is added, so
 * the traceback reads as through the shadow frame. */
static PyObject *
run_direct(PyThreadState *tstate, const CacheEntry *e, PyObject *const *argv)
{
    PyCodeObject *code = (PyCodeObject *)e->code;
    const DirectCall *d = e->direct;
    PyObject *args[1 + DIRECT_MAX_ARGS];        /* [0]: self, if any */
    for (int i = 0; i < d->nargs; i++)
        args[1 + i] = argv[d->slots[i]];
    PyObject *const *call_args = args + 1;
    int n = d->nargs;
    if (d->self != NULL) {
        args[0] = d->self;
        call_args = args;
        n++;
    }
    PyObject *out = NULL;
    int ran = 0;
    if (runs_own_frame(d->func, n)) {
        PyFunctionObject *f = (PyFunctionObject *)d->func;
        int internal = 0;
        out = run_shadow(tstate, f, f->func_globals, f->func_builtins, call_args,
                         (PyCodeObject *)f->func_code, &internal);
        ran = !internal;
        if (internal)                           /* no frame: nothing ran */
            PyErr_Clear();
    }
    if (!ran)
        out = PyObject_Vectorcall(d->func, call_args,
                                  (size_t)n | (call_args == args ? 0 : PY_VECTORCALL_ARGUMENTS_OFFSET),
                                  NULL);
    PyObject *result = NULL;
    if (out != NULL) {
        if (PyTuple_CheckExact(out) && d->index < PyTuple_GET_SIZE(out))
            result = Py_NewRef(PyTuple_GET_ITEM(out, d->index));
        else if (PyList_CheckExact(out) && d->index < PyList_GET_SIZE(out))
            result = Py_NewRef(PyList_GET_ITEM(out, d->index));
        else {                                  /* as BINARY_SUBSCR would */
            PyObject *key = PyLong_FromSsize_t(d->index);
            if (key != NULL)
                result = PyObject_GetItem(out, key);
            Py_XDECREF(key);
        }
        Py_DECREF(out);
    }
    if (result == NULL) {
        PyObject *type, *value, *tb;
        PyErr_Fetch(&type, &value, &tb);
        const char *name = PyUnicode_AsUTF8(code->co_name);
        const char *file = name != NULL ? PyUnicode_AsUTF8(code->co_filename) : NULL;
        PyErr_Clear();                          /* a name that is not UTF-8: no entry */
        PyErr_Restore(type, value, tb);
        if (file != NULL)
            _PyTraceback_Add(name, file, d->line);
    }
    return result;
}

/* ---- miss: the Python callback -------------------------------------------- */

/* New dict of the frame's arguments by name. */
static PyObject *
arguments_dict(_PyInterpreterFrame *frame)
{
    PyCodeObject *code = dyn_frame_code(frame);
    PyObject *d = PyDict_New();
    if (d == NULL)
        return NULL;
    int nargs = arg_count(code);
    for (int i = 0; i < nargs; i++) {
        PyObject *v = frame->localsplus[i];
        if (v != NULL
                && PyDict_SetItem(d, PyTuple_GET_ITEM(code->co_localsplusnames, i), v) < 0) {
            Py_DECREF(d);
            return NULL;
        }
    }
    return d;
}

static int
bad_code(const char *why)
{
    PyErr_Format(PyExc_ValueError, "dynamo: callback returned an unusable new_code: %s", why);
    return -1;
}

/* new_code must be callable in place of the frame's code (ARCHITECTURE.md,
 * "Shadow frames"); anything else could read past the frame or closure. */
static int
check_new_code(_PyInterpreterFrame *frame, PyObject *obj)
{
    PyCodeObject *orig = dyn_frame_code(frame);
    const int sig = CO_VARARGS | CO_VARKEYWORDS;
    if (!PyCode_Check(obj))
        return bad_code("not a code object");
    PyCodeObject *nc = (PyCodeObject *)obj;
    if (nc->co_argcount != orig->co_argcount
            || nc->co_posonlyargcount != orig->co_posonlyargcount
            || nc->co_kwonlyargcount != orig->co_kwonlyargcount
            || (nc->co_flags & sig) != (orig->co_flags & sig))
        return bad_code("signature differs from the original code");
    if (!(nc->co_flags & CO_OPTIMIZED)
            || (nc->co_flags & (CO_GENERATOR | CO_COROUTINE | CO_ASYNC_GENERATOR)))
        return bad_code("must be an optimized, non-generator function code");
    PyObject *closure = dyn_frame_func(frame)->func_closure;
    if (nc->co_nfreevars != (closure != NULL ? PyTuple_GET_SIZE(closure) : 0))
        return bad_code("co_freevars must match the function's closure");
    int nargs = arg_count(orig);
    for (int i = 0; i < nargs; i++) {
        int eq = PyObject_RichCompareBool(PyTuple_GET_ITEM(nc->co_localsplusnames, i),
                                          PyTuple_GET_ITEM(orig->co_localsplusnames, i), Py_EQ);
        if (eq < 0)
            return -1;
        if (!eq)
            return bad_code("argument names differ from the original code");
    }
    return 0;
}

/* The callback's direct-call plan `(fn, slots, index, line)` for a frame
 * of orig, or NULL for None.  NULL with an exception when it is malformed
 * (*bad set). */
static DirectCall *
direct_plan(PyCodeObject *orig, PyObject *plan, int *bad)
{
    *bad = 0;
    if (plan == Py_None)
        return NULL;
    *bad = 1;
    PyObject *slots;
    if (!PyTuple_Check(plan) || PyTuple_GET_SIZE(plan) != 4
            || !PyCallable_Check(PyTuple_GET_ITEM(plan, 0))
            || !PyTuple_Check(slots = PyTuple_GET_ITEM(plan, 1))
            || PyTuple_GET_SIZE(slots) > DIRECT_MAX_ARGS
            || !PyLong_Check(PyTuple_GET_ITEM(plan, 2)) || !PyLong_Check(PyTuple_GET_ITEM(plan, 3))) {
        bad_code("direct plan must be (callable, tuple of <= 32 slots, index, line)");
        return NULL;
    }
    DirectCall *d = PyMem_Calloc(1, sizeof(DirectCall));
    if (d == NULL) {
        PyErr_NoMemory();
        return NULL;
    }
    d->nargs = (int)PyTuple_GET_SIZE(slots);
    int nargs = arg_count(orig);
    for (int i = 0; i < d->nargs; i++) {
        long s = PyLong_AsLong(PyTuple_GET_ITEM(slots, i));
        if (s < 0 || s >= nargs) {
            if (!PyErr_Occurred())
                bad_code("direct plan slots must be argument slots");
            PyMem_Free(d);
            return NULL;
        }
        d->slots[i] = (int)s;
    }
    d->index = PyLong_AsSsize_t(PyTuple_GET_ITEM(plan, 2));
    long line = PyLong_AsLong(PyTuple_GET_ITEM(plan, 3));
    if (d->index < 0 || line < 0 || line > INT_MAX) {
        if (!PyErr_Occurred())
            bad_code("direct plan index and line must be >= 0");
        PyMem_Free(d);
        return NULL;
    }
    d->line = (int)line;
    d->fn = Py_NewRef(PyTuple_GET_ITEM(plan, 0));
    if (PyMethod_Check(d->fn)) {
        d->func = Py_NewRef(PyMethod_GET_FUNCTION(d->fn));
        d->self = Py_NewRef(PyMethod_GET_SELF(d->fn));
    }
    else
        d->func = Py_NewRef(d->fn);
    *bad = 0;
    return d;
}

/* Turn the callback's (new_code, guards, payload[, direct plan]) into a
 * cache entry, unless reset() ran since cache_resets was `resets` (in the
 * callback, or in a finalizer run by the guards' compile): that compile's
 * globals are gone, and its entry would run into a NameError.  Returns
 * new_code (strong), Py_None (strong) when reset() ran, or NULL with an
 * exception (internal error). */
static PyObject *
add_entry(_PyInterpreterFrame *frame, PyObject *result, uint64_t resets)
{
    Py_ssize_t n = PyTuple_Check(result) ? PyTuple_GET_SIZE(result) : 0;
    if (n != 3 && n != 4) {
        PyErr_SetString(PyExc_TypeError,
                        "dynamo: callback must return None or (new_code, guards, payload[, direct])");
        return NULL;
    }
    PyObject *new_code = PyTuple_GET_ITEM(result, 0);
    if (check_new_code(frame, new_code) < 0)
        return NULL;
    int bad = 0;
    DirectCall *direct = n == 4 ? direct_plan(dyn_frame_code(frame), PyTuple_GET_ITEM(result, 3), &bad)
                                : NULL;
    if (bad)
        return NULL;
    GirSet *guards = gir_compile(PyTuple_GET_ITEM(result, 1), runtime);
    if (guards == NULL) {
        cache_direct_free(direct);
        return NULL;
    }
    CodeCache *cache = cache_ensure((PyObject *)dyn_frame_code(frame));
    if (cache == NULL) {
        gir_free(guards);
        cache_direct_free(direct);
        return NULL;
    }
    if (cache_resets != resets) {               /* no Python code runs from here to the push */
        gir_free(guards);
        cache_direct_free(direct);
        Py_RETURN_NONE;
    }
    if (cache_push(cache, new_code, guards, PyTuple_GET_ITEM(result, 2), direct) < 0)
        return NULL;
    return Py_NewRef(new_code);
}

/* Run the hit entry `hit` (a reference, consumed) for a call of func whose
 * argument slots are argv (borrowed): its direct call when it has one and
 * no tracer is active, else its code in a shadow frame with func's globals
 * and builtins.  The one hit path of both hook entries (hook_eval_frame and
 * hook_vectorcall).  Returns as run_shadow: the result, NULL with the
 * code's exception, or NULL with *internal set when nothing ran. */
static PyObject *
run_hit(PyThreadState *tstate, CacheEntry *hit, PyFunctionObject *func, PyObject *globals,
        PyObject *builtins, PyObject *const *argv, int *internal)
{
    *internal = 0;
    if (runs_direct(hit, tstate)) {
        PyObject *result = run_direct(tstate, hit, argv);
        cache_entry_decref(hit);
        return result;
    }
    PyObject *todo = Py_NewRef(hit->code);
    cache_entry_decref(hit);
    PyObject *result = run_shadow(tstate, func, globals, builtins, argv, (PyCodeObject *)todo,
                                  internal);
    Py_DECREF(todo);
    return result;
}

/* An entry was pushed to cache: where telemetry publishes the code, build
 * the new guard tree now (the next lookup would build it), while the
 * thread mode is still OFF, and publish it.  Reports its own errors. */
static void
publish_new_tree(CodeCache *cache)
{
    if (cache == NULL || cache->tele == NULL)
        return;
    GTree *tree = cache_tree(cache, runtime);
    if (tree == NULL && PyErr_Occurred()) {
        PyErr_WriteUnraisable(cache->code);     /* the next lookup builds it again */
        return;
    }
    gtree_decref(tree);
    telemetry_entry_added(cache);
}

/* COMPILE-mode miss: call the callback with the thread mode OFF.
 * Returns the code to run (strong), Py_None (strong) to run the frame
 * normally, or NULL with the callback's exception; internal errors are
 * reported here and give Py_None. */
static PyObject *
ask_callback(_PyInterpreterFrame *frame, PyObject *failures /* borrowed */)
{
    struct timespec t0, t1;                     /* a timed eager region leaves compiles out */
    clock_gettime(CLOCK_MONOTONIC, &t0);
    PyObject *callback = Py_NewRef(callable_callback());
    CallableSaved prev;
    callable_swap(MODE_OFF, NULL, 0, &prev);
    PyObject *todo = NULL, *result = NULL;
    int internal = 0;
    uint64_t resets = cache_resets;
    PyObject *f_locals = arguments_dict(frame);
    if (f_locals == NULL) {
        internal = 1;
        goto done;
    }
    PyObject *args[6] = {
        (PyObject *)dyn_frame_code(frame), f_locals, frame->f_globals, frame->f_builtins,
        (PyObject *)dyn_frame_func(frame), failures,
    };
    result = PyObject_Vectorcall(callback, args, 6, NULL);
    if (result == NULL)                         /* deliberate: propagates */
        goto done;
    if (result == Py_None)
        todo = Py_NewRef(Py_None);
    else if ((todo = add_entry(frame, result, resets)) == NULL)    /* guards compile while OFF */
        internal = 1;
    else if (todo != Py_None) {
        publish_new_tree(cache_get((PyObject *)dyn_frame_code(frame)));   /* runs Python (repr) */
        if (cache_resets != resets)             /* reset() there: the entry and its globals are gone */
            Py_SETREF(todo, Py_NewRef(Py_None));
    }
done:
    if (internal) {                             /* reported while still OFF */
        PyErr_WriteUnraisable((PyObject *)dyn_frame_code(frame));
        todo = Py_NewRef(Py_None);
    }
    Py_XDECREF(result);
    Py_XDECREF(f_locals);
    Py_DECREF(callback);
    callable_restore(&prev);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    bprobe_compile_ns += (uint64_t)((t1.tv_sec - t0.tv_sec) * 1000000000LL + (t1.tv_nsec - t0.tv_nsec));
    return todo;
}

/* Call compile_lock.acquire() or .release(); 0, or -1 with an exception.
 * acquire waits with the GIL released (RLock.acquire does), so the thread
 * compiling keeps running. */
static int
compile_lock_call(const char *method)
{
    PyObject *r = PyObject_CallMethod(compile_lock, method, NULL);
    Py_XDECREF(r);
    return r == NULL ? -1 : 0;
}

/* What a miss saw of its code's cache, to tell whether it changed while
 * the thread waited for the compile lock. */
typedef struct {
    CodeCache *cache;           /* borrowed: the code's cache, or NULL */
    CacheEntry *head;           /* borrowed, compared only: its newest entry */
    uint64_t generation;        /* cache_generation */
} MissSeen;

/* COMPILE-mode miss: serialize it with every other compile.  Under the
 * compile lock, when the code's cache changed since the miss (another
 * thread compiled it, marked it skipped or dropped entries while this one
 * waited), the code is looked up again and the callback is asked only on
 * a second miss, with that lookup's failures; otherwise with the miss's
 * own `failures` (strong or NULL, consumed).  The guard tree is walked
 * once per miss when nothing changed, so its counters count each failure
 * once.  Returns as ask_callback: the code to run (strong), Py_None
 * (strong), or NULL with an exception (the callback's, or one raised while
 * waiting for the lock, a KeyboardInterrupt say); internal errors are
 * reported here. */
static PyObject *
compile_miss(CallableState *st, _PyInterpreterFrame *frame, GevalFrame *gf,
             PyObject *failures, const MissSeen *seen)
{
    PyCodeObject *code = dyn_frame_code(frame);
    if (compile_lock != NULL && compile_lock_call("acquire") < 0) {
        Py_XDECREF(failures);
        return NULL;
    }
    PyObject *todo = NULL;
    CacheEntry *hit = NULL;
    CodeCache *cache = frame_cache(code);
    int changed = cache != seen->cache || cache_generation != seen->generation
                  || (cache != NULL && cache->entries != seen->head);
    if (changed)
        Py_CLEAR(failures);
    if (cache != NULL && cache->skip)           /* given up on while we waited? */
        todo = Py_NewRef(Py_None);
    else if (changed && cache != NULL && cache->entries != NULL
             && lookup(st, cache, gf, &hit, &failures) < 0) {
        PyErr_WriteUnraisable((PyObject *)code);
        todo = Py_NewRef(Py_None);
    }
    else if (hit != NULL) {                     /* compiled while we waited */
        todo = Py_NewRef(hit->code);
        cache_entry_decref(hit);
    }
    else if (failures == NULL && (failures = PyList_New(0)) == NULL) {
        PyErr_WriteUnraisable((PyObject *)code);
        todo = Py_NewRef(Py_None);
    }
    else {
        if (cache != NULL && cache->tele != NULL) {
            /* the failure's text calls repr() on guarded objects (a module's
             * repr runs its submodules' extra_repr): with the mode OFF, so
             * those frames are not compiled */
            CallableSaved prev;
            callable_swap(MODE_OFF, NULL, 0, &prev);
            uint64_t generation = cache_generation;
            telemetry_note_failure(cache, failures);
            callable_restore(&prev);
            /* Python code run by repr() dropped entries (a reset() in a
             * finalizer, say): the failures are of entries gone, as when a
             * check's Python code drops them (an empty list, see lookup) */
            if (cache_generation != generation)
                Py_SETREF(failures, PyList_New(0));
        }
        if (failures == NULL) {                 /* no memory for the new list */
            PyErr_WriteUnraisable((PyObject *)code);
            todo = Py_NewRef(Py_None);
        }
        else
            todo = ask_callback(frame, failures);
    }
    Py_XDECREF(failures);
    if (compile_lock != NULL) {
        PyObject *exc_type, *exc_value, *exc_tb;
        PyErr_Fetch(&exc_type, &exc_value, &exc_tb);    /* the callback's, kept */
        if (compile_lock_call("release") < 0)
            PyErr_WriteUnraisable(compile_lock);
        PyErr_Restore(exc_type, exc_value, exc_tb);
    }
    return todo;
}

/* ---- the hook -------------------------------------------------------------- */

static PyObject *
hook_eval_frame(PyThreadState *tstate, _PyInterpreterFrame *frame, int throwflag)
{
    CallableState *st = callable_state();
    int mode = st->mode;
    if (mode == MODE_OFF || st->guard_depth || throwflag || !is_fresh_function_frame(frame))
        return eval_normally(tstate, frame, throwflag);
    PyCodeObject *code = dyn_frame_code(frame);
    CodeCache *cache = frame_cache(code);
    if (cache != NULL && cache->skip)           /* skip-marked? recursively? */
        return cache->skip == SKIP_RECURSIVE ? eval_off(tstate, frame) : eval_normally(tstate, frame, 0);

    CacheEntry *hit = NULL;
    GevalFrame gf = {
        .locals = frame->localsplus, .nlocals = arg_count(code),
        .globals = frame->f_globals, .builtins = frame->f_builtins,
        .closure = dyn_frame_func(frame)->func_closure,
    };
    int asks = mode == MODE_COMPILE && st->callback != NULL;
    PyObject *failures = NULL;
    int looked_up = 0;                          /* hook_vectorcall missed already */
    if (UNLIKELY(pending.code != NULL)) {       /* hook_vectorcall looked it up already? */
        looked_up = pending.code == code;
        if (looked_up && pending.internal) {    /* reported there */
            pending_clear();
            return eval_normally(tstate, frame, 0);
        }
        if (looked_up) {                        /* a miss: take its failures */
            failures = pending.failures;
            pending.failures = NULL;
        }
        pending_clear();
    }
    if (!looked_up && cache != NULL && cache->entries != NULL
            && lookup(st, cache, &gf, &hit, asks ? &failures : NULL) < 0)
        goto internal;
    if (cache != NULL && cache->tele != NULL)   /* telemetry on for this code? */
        telemetry_count_lookup(cache->tele, hit != NULL ? hit->tele : NULL, hit != NULL);

    int internal = 0;
    if (hit != NULL) {
        PyObject *result = run_hit(tstate, hit, dyn_frame_func(frame), frame->f_globals,
                                   frame->f_builtins, frame->localsplus, &internal);
        if (internal)
            goto internal;
        release_unevaluated(tstate, frame);
        return result;
    }
    PyObject *todo;                             /* code to run, or None */
    if (asks && cache != NULL && cache->eager_sigs[0].types != NULL
            && cache_eager_match(cache, frame->localsplus, arg_count(code),
                                 dyn_frame_func(frame)->func_closure)) {
        Py_XDECREF(failures);                   /* a call known to need no compile */
        return eval_normally(tstate, frame, 0);
    }
    if (asks) {
        MissSeen seen = {.cache = cache, .head = cache != NULL ? cache->entries : NULL,
                         .generation = cache_generation};
        todo = compile_miss(st, frame, &gf, failures, &seen);
        if (todo == NULL) {                     /* the callback raised */
            release_unevaluated(tstate, frame);
            return NULL;
        }
    }
    else
        todo = Py_NewRef(Py_None);
    if (todo == Py_None) {
        Py_DECREF(todo);
        cache = frame_cache(code);              /* the callback may have marked it */
        if (cache != NULL && cache->skip == SKIP_RECURSIVE)
            return eval_off(tstate, frame);
        return eval_normally(tstate, frame, 0);
    }
    PyObject *result = run_shadow(tstate, dyn_frame_func(frame), frame->f_globals, frame->f_builtins,
                                  frame->localsplus, (PyCodeObject *)todo, &internal);
    Py_DECREF(todo);
    if (!internal) {
        release_unevaluated(tstate, frame);
        return result;
    }

internal:
    PyErr_WriteUnraisable((PyObject *)code);
    return eval_normally(tstate, frame, 0);
}

/* ---- OptimizedCallable's direct path --------------------------------------- */

PyObject *
hook_vectorcall(CallableState *st, PyObject *fn, PyObject *const *args, size_t nargsf,
                PyObject *kwnames)
{
    Py_ssize_t nargs = PyVectorcall_NARGS(nargsf);
    if (st->mode == MODE_OFF || !binds_by_position(fn, nargs, kwnames))
        return PyObject_Vectorcall(fn, args, nargsf, kwnames);
    PyFunctionObject *func = (PyFunctionObject *)fn;
    PyCodeObject *code = (PyCodeObject *)func->func_code;
    CodeCache *cache = frame_cache(code);
    if (cache == NULL || cache->skip || cache->entries == NULL)    /* nothing to look up */
        return PyObject_Vectorcall(fn, args, nargsf, kwnames);

    /* The frame the call would build has exactly these slots and specials
     * (3.11's _PyFrame_InitializeSpecials takes them from func). */
    GevalFrame gf = {
        .locals = args, .nlocals = nargs,
        .globals = func->func_globals, .builtins = func->func_builtins,
        .closure = func->func_closure,
    };
    int asks = st->mode == MODE_COMPILE && st->callback != NULL;
    CacheEntry *hit = NULL;
    PyObject *failures = NULL;
    if (UNLIKELY(lookup(st, cache, &gf, &hit, asks ? &failures : NULL) < 0)) {
        PyErr_WriteUnraisable((PyObject *)code);
        pending.internal = 1;
    }
    else if (hit != NULL) {
        if (cache->tele != NULL)                /* telemetry on for this code? */
            telemetry_count_lookup(cache->tele, hit->tele, 1);
        int internal;
        PyObject *result = run_hit(PyThreadState_Get(), hit, func, func->func_globals,
                                   func->func_builtins, args, &internal);
        if (LIKELY(!internal))
            return result;
        /* No frame for the shadow: the normal path runs the original
         * (counted as a hit already, as the hook would have). */
        PyErr_WriteUnraisable((PyObject *)code);
        pending.internal = 1;
    }
    else
        pending.failures = failures;            /* the hook takes the miss from here */
    pending.code = code;
    PyObject *result = PyObject_Vectorcall(fn, args, nargsf, kwnames);
    if (pending.code != NULL)                   /* not consumed (the hook was replaced) */
        pending_clear();
    return result;
}
