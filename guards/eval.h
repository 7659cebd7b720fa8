/* guards/eval.h — the flat guard evaluator.
 *
 * Owns: fetching source values from a frame view and running the checks of
 * one GirSet in order.  It must not compile or change a set, and must not
 * allocate on the common path (a set with at most GEVAL_STACK_SOURCES
 * sources); the Python attribute calls of TENSOR_MATCH are the exception.
 */
#ifndef DYNAMO_GUARDS_EVAL_H
#define DYNAMO_GUARDS_EVAL_H

#include "ir.h"

/* Sources whose fetched values fit in the evaluator's stack buffer. */
#define GEVAL_STACK_SOURCES 64

/* The frame as the guards see it. */
typedef struct {
    PyObject *const *locals;    /* borrowed: argument slots */
    Py_ssize_t nlocals;         /* valid slots in locals */
    PyObject *globals;          /* borrowed: dict */
    PyObject *builtins;         /* borrowed: dict */
    PyObject *closure;          /* borrowed: tuple of cells, or NULL */
} GevalFrame;

/* Evaluate every check of gs in order against fr.
 * Returns -1 when all pass, the index (>= 0) of the first failing check, or
 * -2 with an exception set when a check raised something other than the
 * "value is missing" errors of its source (AttributeError for ATTR,
 * KeyError / IndexError for ITEM), which only fail the guard. */
Py_ssize_t geval_run(const GirSet *gs, const GevalFrame *fr, GirRuntime *rt);

#endif /* DYNAMO_GUARDS_EVAL_H */
