/* core/hook.h — the PEP 523 eval-frame hook.
 *
 * Owns: installation of the hook and everything that touches
 * _PyInterpreterFrame (core/hook.c is the only file built with
 * Py_BUILD_CORE).  Callers only need to make sure it is installed.
 */
#ifndef DYNAMO_CORE_HOOK_H
#define DYNAMO_CORE_HOOK_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>     /* PyObject */
#include "ir.h"         /* GirRuntime */
#include "callable.h"   /* CallableState */

/* Install the hook on the current interpreter unless it is already the
 * active eval-frame function; whatever was installed before (other than the
 * default) becomes the evaluator of frames the hook does not handle. */
void hook_install(void);

/* Restore the evaluator the hook replaced, unless something else replaced
 * the hook since (core/callable.c calls it when no thread is in a mode
 * other than OFF). */
void hook_uninstall(void);

/* Call fn(*args) in the calling thread's current mode, as
 * PyObject_Vectorcall would with the hook installed, for OptimizedCallable.
 * When fn is a function whose arguments bind by position alone and whose
 * code has cache entries, the guards are evaluated on args directly and a
 * hit runs the entry's code in a shadow frame without building the
 * original frame first; anything else takes the normal call path. */
PyObject *hook_vectorcall(CallableState *st /* the calling thread's */, PyObject *fn,
                          PyObject *const *args, size_t nargsf, PyObject *kwnames);

/* 1 when the hook is the interpreter's eval-frame function. */
int hook_installed(void);

/* The guard runtime shared by the hook and the module (module state). */
void hook_set_runtime(GirRuntime *rt /* borrowed, lives as long as the module */);

/* The lock every compile holds (module state): a miss in COMPILE mode
 * takes it, waiting with the GIL released, looks the code up again and asks
 * the callback only on a second miss, so one code is compiled by one
 * thread at a time and a thread that waited uses the entry the other made.
 * NULL (at module teardown) turns serialization off. */
void hook_set_compile_lock(PyObject *lock /* borrowed, lives as long as the module */);

#endif /* DYNAMO_CORE_HOOK_H */
