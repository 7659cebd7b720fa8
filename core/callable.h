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

/* Thread modes (ARCHITECTURE.md, Contract 1). */
enum { MODE_OFF = 0, MODE_COMPILE = 1, MODE_RUN = 2, MODE_LAST = MODE_RUN };

extern PyTypeObject OptimizedCallable_Type;

/* The per-thread state (one C11 thread-local block). */
typedef struct {
    int mode;               /* MODE_* of this thread */
    PyObject *callback;     /* strong, or NULL */
    int guard_depth;        /* > 0 while this thread evaluates guards (core/hook.c's
                               to change): frames that guard checks run (a
                               __getattribute__, an __eq__) run normally */
} CallableState;

/* The calling thread's state (mode and callback read-only for callers:
 * change them with callable_swap / callable_restore, which keep the hook
 * in step). */
CallableState *callable_state(void);

/* The calling thread's mode. */
int callable_mode(void);

/* Number of threads whose mode is not OFF (the hook is installed while it
 * is above 0; a thread that exits with a mode set keeps counting). */
long callable_active_threads(void);

/* The calling thread's callback (borrowed), or NULL. */
PyObject *callable_callback(void);

/* Set the calling thread's state; switching the first thread on installs
 * the hook, switching the last one OFF uninstalls it.  callback is borrowed (a new reference is
 * taken; NULL or None means none).  The previous state is returned through
 * prev_mode / prev_callback; *prev_callback is a strong reference (or NULL)
 * the caller must give back with callable_restore or release. */
void callable_swap(int mode, PyObject *callback /* borrowed */,
                   int *prev_mode, PyObject **prev_callback /* strong out */);

/* Put back a state returned by callable_swap; consumes callback. */
void callable_restore(int mode, PyObject *callback /* strong, consumed */);

#endif /* DYNAMO_CORE_CALLABLE_H */
