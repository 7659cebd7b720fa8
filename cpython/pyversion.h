/* cpython/pyversion.h — every CPython version difference the extension sees.
 *
 * A floor of its own, below core/ and guards/ (both include it, it
 * includes neither): the one header with CPython internals (STYLE.md
 * rule 6).
 *
 * Owns: the list of supported CPython versions (3.11, 3.12, 3.13; a
 * free-threaded build is refused) and, per version, the few private
 * spellings the extension uses.  No other file tests PY_VERSION_HEX.
 *
 * Two parts:
 *  - the portable part (any file): private C-API calls that were renamed or
 *    moved (dyn_long_as_int, dyn_check_positional, dyn_lookup_attr,
 *    dyn_dict_version);
 *  - the frame part, compiled only where DYN_FRAME_INTERNALS is defined
 *    before including this header (core/hook.c, the one file built with
 *    Py_BUILD_CORE): the _PyInterpreterFrame fields, how a frame is pushed
 *    on the thread's data stack, whether the evaluator pops it, the co_extra
 *    block, and "is a tracer/profiler/monitor watching".
 * Contract: each helper below means the same thing on every version; the
 * callers never see a field name that differs between versions.
 */
#ifndef DYNAMO_CORE_PYVERSION_H
#define DYNAMO_CORE_PYVERSION_H

#define PY_SSIZE_T_CLEAN
#ifdef DYN_FRAME_INTERNALS
#define Py_BUILD_CORE 1         /* before Python.h: 3.12's internal headers need it */
#endif
#include <Python.h>

#if PY_VERSION_HEX < 0x030B0000 || PY_VERSION_HEX >= 0x030E0000
#error "dynamo's extension supports CPython 3.11, 3.12 and 3.13 only"
#endif
#ifdef Py_GIL_DISABLED
#error "dynamo does not support the free-threaded CPython build (Py_GIL_DISABLED)"
#endif

#define DYN_PY312 (PY_VERSION_HEX >= 0x030C0000)
#define DYN_PY313 (PY_VERSION_HEX >= 0x030D0000)

/* ---- portable part -------------------------------------------------------- */

/* int from a Python int; -1 with an exception on overflow or a non-int. */
static inline int
dyn_long_as_int(PyObject *o)
{
#if DYN_PY313
    return PyLong_AsInt(o);
#else
    return _PyLong_AsInt(o);
#endif
}

/* Check a vectorcall's positional count; 1 if fine, 0 with TypeError. */
static inline int
dyn_check_positional(const char *name, Py_ssize_t nargs, Py_ssize_t min, Py_ssize_t max)
{
    if (nargs >= min && nargs <= max)
        return 1;
    PyErr_Format(PyExc_TypeError, "%s expected %s%zd argument%s, got %zd", name,
                 min == max ? "" : nargs < min ? "at least " : "at most ",
                 nargs < min ? min : max, (nargs < min ? min : max) == 1 ? "" : "s", nargs);
    return 0;
}

/* getattr without AttributeError: 1 found (*out strong), 0 absent
 * (*out NULL, no exception), -1 error. */
static inline int
dyn_lookup_attr(PyObject *o, PyObject *name, PyObject **out)
{
#if DYN_PY313
    return PyObject_GetOptionalAttr(o, name, out);
#else
    return _PyObject_LookupAttr(o, name, out);
#endif
}

/* The dict's version tag: changes on every mutation (3.12 and 3.13 keep
 * it, deprecated, with watcher bits in the low byte that also only change
 * on a mutation or a watch). */
static inline uint64_t
dyn_dict_version(PyDictObject *d)
{
#if DYN_PY312
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
    return d->ma_version_tag;
#pragma GCC diagnostic pop
#else
    return d->ma_version_tag;
#endif
}

/* co_extra slots (PyUnstable_* since 3.12, same behaviour). */
static inline Py_ssize_t
dyn_request_code_extra_index(freefunc free)
{
#if DYN_PY312
    return PyUnstable_Eval_RequestCodeExtraIndex(free);
#else
    return _PyEval_RequestCodeExtraIndex(free);
#endif
}

static inline int
dyn_code_get_extra(PyObject *code, Py_ssize_t index, void **extra)
{
#if DYN_PY312
    return PyUnstable_Code_GetExtra(code, index, extra);
#else
    return _PyCode_GetExtra(code, index, extra);
#endif
}

static inline int
dyn_code_set_extra(PyObject *code, Py_ssize_t index, void *extra)
{
#if DYN_PY312
    return PyUnstable_Code_SetExtra(code, index, extra);
#else
    return _PyCode_SetExtra(code, index, extra);
#endif
}

/* ---- frame part (core/hook.c only) ------------------------------------------ */
#ifdef DYN_FRAME_INTERNALS

#include "internal/pycore_frame.h"      /* _PyInterpreterFrame, PyFrameObject */
#if DYN_PY312
#include "internal/pycore_interp.h"     /* interp->monitors (PEP 669) */
#endif
#if DYN_PY313
#include "internal/pycore_traceback.h"  /* _PyTraceback_Add */
#endif
#undef Py_BUILD_CORE

/* Objects/codeobject.c keeps this block private; same layout 3.11-3.13. */
typedef struct {
    Py_ssize_t ce_size;
    void *ce_extras[1];
} DynCodeExtra;

static inline PyCodeObject *
dyn_frame_code(_PyInterpreterFrame *f)
{
#if DYN_PY313
    return (PyCodeObject *)f->f_executable;
#else
    return f->f_code;
#endif
}

/* The frame's function; NULL for a frame without one (3.11: class bodies
 * and module code have one too, the check is the caller's). */
static inline PyFunctionObject *
dyn_frame_func(_PyInterpreterFrame *f)
{
#if DYN_PY312
    return (PyFunctionObject *)f->f_funcobj;
#else
    return f->f_func;
#endif
}

/* A frame of a code object (3.13 also evaluates frames of other things). */
static inline int
dyn_frame_has_code(_PyInterpreterFrame *f)
{
#if DYN_PY313
    return PyCode_Check(f->f_executable);
#else
    (void)f;
    return 1;
#endif
}

/* About to run its first instruction? */
static inline int
dyn_frame_is_fresh(_PyInterpreterFrame *f)
{
#if DYN_PY313
    return f->instr_ptr == _PyCode_CODE(dyn_frame_code(f));
#else
    return f->prev_instr == _PyCode_CODE(f->f_code) - 1;
#endif
}

/* Make an incomplete frame (died before RESUME) look complete. */
static inline void
dyn_frame_mark_complete(_PyInterpreterFrame *f)
{
    PyCodeObject *code = dyn_frame_code(f);
#if DYN_PY313
    f->instr_ptr = _PyCode_CODE(code) + code->_co_firsttraceable + 1;
#else
    f->prev_instr = _PyCode_CODE(code) + code->_co_firsttraceable;
#endif
}

/* Does _PyEval_EvalFrameDefault clear and pop the frame it was given
 * (3.12+), or is that the caller's job (3.11)? */
#define DYN_EVAL_POPS_FRAME DYN_PY312

/* Frame size in PyObject* words, as the interpreter sizes it. */
static inline size_t
dyn_frame_words(PyCodeObject *code)
{
    return FRAME_SPECIALS_SIZE + code->co_nlocalsplus + code->co_stacksize;
}

#if DYN_PY312
/* A new data-stack chunk holding `size` words, as CPython's push_chunk
 * makes it (same allocator, so the evaluator's pop frees it); NULL with
 * MemoryError. */
static inline _PyInterpreterFrame *
dyn_push_chunk(PyThreadState *tstate, size_t size)
{
    size_t bytes = 16 * 1024;                   /* DATA_STACK_CHUNK_SIZE */
    while (bytes < sizeof(PyObject *) * (size + 1000))     /* + MINIMUM_OVERHEAD */
        bytes *= 2;
    PyObjectArenaAllocator arena;
    PyObject_GetArenaAllocator(&arena);
    _PyStackChunk *chunk = arena.alloc(arena.ctx, bytes);
    if (chunk == NULL) {
        PyErr_NoMemory();
        return NULL;
    }
    chunk->previous = tstate->datastack_chunk;
    chunk->size = bytes;
    chunk->top = 0;
    if (tstate->datastack_chunk != NULL)
        tstate->datastack_chunk->top = tstate->datastack_top - &tstate->datastack_chunk->data[0];
    tstate->datastack_chunk = chunk;
    tstate->datastack_limit = (PyObject **)((char *)chunk + bytes);
    PyObject **res = &chunk->data[chunk->previous == NULL];  /* the root chunk is never popped */
    tstate->datastack_top = res + size;
    return (_PyInterpreterFrame *)res;
}
#endif

/* Pop frame f, the top of the thread's data stack, as CPython's
 * _PyThreadState_PopFrame does (a chunk it starts is freed).  3.12+ only:
 * 3.11 frames are popped by their owner's own code. */
static inline void
dyn_frame_pop(PyThreadState *tstate, _PyInterpreterFrame *f)
{
#if DYN_PY312
    PyObject **base = (PyObject **)f;
    _PyStackChunk *chunk = tstate->datastack_chunk;
    if (base == &chunk->data[0]) {              /* first frame of its chunk */
        _PyStackChunk *previous = chunk->previous;
        PyObjectArenaAllocator arena;
        PyObject_GetArenaAllocator(&arena);
        tstate->datastack_top = &previous->data[previous->top];
        tstate->datastack_chunk = previous;
        tstate->datastack_limit = (PyObject **)((char *)previous + previous->size);
        arena.free(arena.ctx, chunk, chunk->size);
    }
    else
        tstate->datastack_top = base;
#else
    (void)tstate;
    (void)f;
#endif
}

/* Room for a frame of `size` words.  3.11: on the data stack when it fits,
 * else malloc'd (*heap set; the caller frees).  3.12+: always on the data
 * stack (the evaluator pops it), in a new chunk when needed.  NULL with
 * MemoryError. */
static inline _PyInterpreterFrame *
dyn_frame_alloc(PyThreadState *tstate, size_t size, int *heap)
{
    *heap = 0;
    if (tstate->datastack_top != NULL
            && size < (size_t)(tstate->datastack_limit - tstate->datastack_top)) {
        _PyInterpreterFrame *f = (_PyInterpreterFrame *)tstate->datastack_top;
        tstate->datastack_top += size;
        return f;
    }
#if DYN_PY312
    return dyn_push_chunk(tstate, size);
#else
    _PyInterpreterFrame *f = PyMem_Malloc(size * sizeof(PyObject *));
    if (f == NULL)
        PyErr_NoMemory();
    *heap = 1;
    return f;
#endif
}

/* Fill the specials of a fresh function frame (func, code: new references
 * taken; globals, builtins: borrowed) with every local slot NULL. */
static inline void
dyn_frame_init(_PyInterpreterFrame *f, PyFunctionObject *func, PyCodeObject *code,
               PyObject *globals, PyObject *builtins)
{
#if DYN_PY313
    f->f_executable = Py_NewRef((PyObject *)code);
    f->f_funcobj = Py_NewRef((PyObject *)func);
    f->instr_ptr = _PyCode_CODE(code);
    f->return_offset = 0;
#elif DYN_PY312
    f->f_code = (PyCodeObject *)Py_NewRef(code);
    f->f_funcobj = Py_NewRef((PyObject *)func);
    f->prev_instr = _PyCode_CODE(code) - 1;
    f->return_offset = 0;
#else
    f->f_code = (PyCodeObject *)Py_NewRef(code);
    f->f_func = (PyFunctionObject *)Py_NewRef(func);
    f->prev_instr = _PyCode_CODE(code) - 1;
    f->is_entry = false;
#endif
    f->f_globals = globals;
    f->f_builtins = builtins;
    f->f_locals = NULL;
    f->frame_obj = NULL;
    f->previous = NULL;                         /* linked by the evaluator */
    f->stacktop = code->co_nlocalsplus;
    f->owner = FRAME_OWNED_BY_THREAD;
    for (int i = 0; i < code->co_nlocalsplus; i++)
        f->localsplus[i] = NULL;
}

/* Drop the specials' references (3.11's caller-side clear). */
static inline void
dyn_frame_drop_specials(_PyInterpreterFrame *f)
{
    Py_DECREF((PyObject *)dyn_frame_func(f));
    Py_DECREF((PyObject *)dyn_frame_code(f));
}

/* Is a tracer or profiler set, or (3.12+) a sys.monitoring tool watching
 * function starts or returns?  Then frames must not be skipped. */
static inline int
dyn_tracing(PyThreadState *tstate)
{
#if DYN_PY312
    const _Py_GlobalMonitors *m = &tstate->interp->monitors;
    return tstate->c_tracefunc != NULL || tstate->c_profilefunc != NULL
           || m->tools[PY_MONITORING_EVENT_PY_START] != 0
           || m->tools[PY_MONITORING_EVENT_PY_RETURN] != 0;
#else
    return tstate->cframe->use_tracing;
#endif
}

#endif /* DYN_FRAME_INTERNALS */
#endif /* DYNAMO_CORE_PYVERSION_H */
