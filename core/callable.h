/* core/callable.h — thread-local (mode, callback) and the OptimizedCallable type.
 *
 * Owns: the per-thread state the hook reads, and the C callable that sets it
 * around a call without adding a Python frame.  It must not look at frames
 * or caches.
 */
#ifndef DYNAMO_CORE_CALLABLE_H
#define DYNAMO_CORE_CALLABLE_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>     /* PyObject, PyTypeObject */
#include <stdint.h>     /* int64_t */

/* Thread modes (ARCHITECTURE.md, Contract 1). */
enum { MODE_OFF = 0, MODE_COMPILE = 1, MODE_RUN = 2, MODE_LAST = MODE_RUN };

extern PyTypeObject OptimizedCallable_Type;

/* The per-thread state (one C11 thread-local block). */
typedef struct {
    int mode;               /* MODE_* of this thread */
    PyObject *callback;     /* strong, or NULL */
    int64_t backend;        /* the callback's backend key (callable_backend_key),
                               0 without one: what BACKEND_MATCH guards compare */
    int guard_depth;        /* > 0 while this thread evaluates guards (core/hook.c's
                               to change): frames that guard checks run (a
                               __getattribute__, an __eq__) run normally */
} CallableState;

/* The calling thread's state (mode and callback read-only for callers:
 * change them with callable_swap / callable_restore, which keep the hook
 * in step). */
CallableState *callable_state(void);

/* The "force_eager" stance (dynamo.set_stance): while set, every
 * OptimizedCallable and set_mode that would turn a mode other than OFF on
 * sets OFF instead, so nothing is compiled or looked up (torch's stance
 * disables its callback the same way).  Process-wide; read per call. */
void callable_set_forced_off(int on);
int callable_forced_off(void);

/* The calling thread's mode. */
int callable_mode(void);

/* Number of threads whose mode is not OFF (the hook is installed while it
 * is above 0; a thread that exits with a mode set keeps counting). */
long callable_active_threads(void);

/* The calling thread's callback (borrowed), or NULL. */
PyObject *callable_callback(void);

/* The backend key of a callback: its `backend_key` attribute when that is
 * an int > 0 (dynamo.convert_frame._Callback sets it: one number per
 * (backend, mode, options)), else 0.  Read when a callback is installed
 * (OptimizedCallable's construction, set_mode), never per call.  Clears
 * any error of the lookup (a callback without the attribute has key 0). */
int64_t callable_backend_key(PyObject *callback /* borrowed, or NULL */);

/* A thread state saved by callable_swap. */
typedef struct {
    int mode;
    PyObject *callback;     /* strong, or NULL */
    int64_t backend;
} CallableSaved;

/* Set the calling thread's state; switching the first thread on installs
 * the hook, switching the last one OFF uninstalls it.  callback is borrowed (a new reference is
 * taken; NULL or None means none); backend is its key (callable_backend_key).
 * The previous state is returned through prev; prev->callback is a strong
 * reference (or NULL) the caller must give back with callable_restore. */
void callable_swap(int mode, PyObject *callback /* borrowed */, int64_t backend,
                   CallableSaved *prev /* out */);

/* Put back a state returned by callable_swap; consumes prev->callback. */
void callable_restore(CallableSaved *prev);

#endif /* DYNAMO_CORE_CALLABLE_H */
