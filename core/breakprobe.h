/* core/breakprobe.h — the timer of a graph break's eager region.
 *
 * Owns: BreakProbe, one per graph break of a compile.  The rewritten code
 * calls its bound `start` right after the graph call (before the
 * instructions the break runs eagerly) and its `stop` right before each
 * call of a resume function, so a probe counts every run of the region and
 * times one run in `bprobe_period` (monotonic clock; the time this thread
 * spent compiling inside the region is left out).  Its counters live in the
 * probe until the cache entry whose code holds it gets a telemetry slot
 * (cache_push: bprobe_bind_code), then in that slot's DtEntry.break_time,
 * where the tools read them live, and back in the probe when the entry
 * dies.  It must not allocate or run Python code on start/stop.
 */
#ifndef DYNAMO_CORE_BREAKPROBE_H
#define DYNAMO_CORE_BREAKPROBE_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>     /* PyObject, PyTypeObject */
#include <stdint.h>     /* uint64_t */

#include "../inspect/layout.h"  /* DT_BT_*: the counters' order */

/* Time one run of an eager region in this many (0: count runs, time none). */
extern uint32_t bprobe_period;

/* Nanoseconds this thread spent in compiles (the hook's callback), cumulative;
 * a sample subtracts what accrued while it ran. */
extern _Thread_local uint64_t bprobe_compile_ns;

/* Once at module init: PyType_Ready, the type and _set_break_sampling added
 * to module (borrowed).  0 or -1. */
int bprobe_add_to_module(PyObject *module);

/* Point every probe whose bound start/stop is a constant of code (borrowed,
 * a code object) at counters (DT_BT_N u64, borrowed, outliving the binding),
 * carrying its counts over; counters NULL moves them back into the probes.
 * No error, no Python code. */
void bprobe_bind_code(PyObject *code, uint64_t *counters);

#endif /* DYNAMO_CORE_BREAKPROBE_H */
