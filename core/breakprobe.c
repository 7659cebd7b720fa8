/* core/breakprobe.c — BreakProbe: counts and samples a graph break's eager region.
 *
 * Owns: the probe type, the sampling period and the per-thread compile
 * clock (see breakprobe.h).  A run is timed from `start` (after the graph
 * call) to `stop` (before the resume call) on one thread; a run that never
 * reaches `stop` (an exception, a return inside an eager island) leaves its
 * start behind, which the next `start` replaces; a `stop` of another
 * thread, or of a recursive run that replaced the start, times nothing.  So
 * a sample is never wrong, only sometimes missing.  It must not allocate or
 * run Python code on start/stop (the per-call path of a break), and never
 * touches the region except through the counters it is bound to.
 */
#include "breakprobe.h"

#include <string.h>     /* memcpy */
#include <time.h>       /* clock_gettime */

uint32_t bprobe_period = 8;
_Thread_local uint64_t bprobe_compile_ns;

typedef struct {
    PyObject_HEAD
    uint64_t own[DT_BT_N];      /* the counters while unbound (DT_BT_*) */
    uint64_t *ctr;              /* borrowed: own, or a DtEntry's break_time */
    uint64_t t0;                /* monotonic ns of the open sample's start, 0 = none */
    uint64_t compile0;          /* bprobe_compile_ns at t0 */
    const void *owner;          /* identity only: the PyThreadState that opened it */
} BreakProbe;

static inline uint64_t
now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* start(): one more run; the first run and one in bprobe_period after it open a sample. */
static PyObject *
probe_start(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    (void)args;
    (void)nargs;
    BreakProbe *p = (BreakProbe *)self;
    uint64_t n = ++p->ctr[DT_BT_CALLS];
    if (bprobe_period != 0 && (n - 1) % bprobe_period == 0) {     /* this run sampled? */
        p->owner = PyThreadState_GET();
        p->compile0 = bprobe_compile_ns;
        p->t0 = now_ns();
    }
    Py_RETURN_NONE;
}

/* stop(): closes the sample this thread opened, if any. */
static PyObject *
probe_stop(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    (void)args;
    (void)nargs;
    BreakProbe *p = (BreakProbe *)self;
    if (p->t0 == 0 || p->owner != (const void *)PyThreadState_GET())   /* none open here? */
        Py_RETURN_NONE;
    uint64_t t = now_ns(), compiled = bprobe_compile_ns - p->compile0;
    uint64_t dt = t - p->t0;
    dt = dt > compiled ? dt - compiled : 0;
    p->t0 = 0;
    p->ctr[DT_BT_SAMPLES]++;
    p->ctr[DT_BT_NS] += dt;
    if (dt > p->ctr[DT_BT_MAX_NS])
        p->ctr[DT_BT_MAX_NS] = dt;
    Py_RETURN_NONE;
}

/* stats() -> {"calls", "samples", "ns", "max_ns"}: the counters now. */
static PyObject *
probe_stats(PyObject *self, PyObject *unused)
{
    (void)unused;
    const uint64_t *c = ((BreakProbe *)self)->ctr;
    return Py_BuildValue("{sKsKsKsK}", "calls", (unsigned long long)c[DT_BT_CALLS],
                         "samples", (unsigned long long)c[DT_BT_SAMPLES],
                         "ns", (unsigned long long)c[DT_BT_NS],
                         "max_ns", (unsigned long long)c[DT_BT_MAX_NS]);
}

static PyObject *
probe_new(PyTypeObject *type, PyObject *args, PyObject *kwds)
{
    if (PyTuple_GET_SIZE(args) != 0 || (kwds != NULL && PyDict_GET_SIZE(kwds) != 0)) {
        PyErr_SetString(PyExc_TypeError, "BreakProbe() takes no arguments");
        return NULL;
    }
    BreakProbe *p = (BreakProbe *)type->tp_alloc(type, 0);
    if (p != NULL)
        p->ctr = p->own;
    return (PyObject *)p;
}

static PyMethodDef probe_methods[] = {
    {"start", (PyCFunction)(void (*)(void))probe_start, METH_FASTCALL,
     "start(): the eager region begins (rewritten code, after the graph call)."},
    {"stop", (PyCFunction)(void (*)(void))probe_stop, METH_FASTCALL,
     "stop(): the eager region ends (rewritten code, before the resume call)."},
    {"stats", probe_stats, METH_NOARGS,
     "stats() -> {'calls', 'samples', 'ns', 'max_ns'}: runs, timed runs, their total ns, the longest."},
    {NULL, NULL, 0, NULL},
};

static PyTypeObject BreakProbe_Type = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "dynamo._C.BreakProbe",
    .tp_basicsize = sizeof(BreakProbe),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "The timer of one graph break's eager region (core/breakprobe.h).",
    .tp_new = probe_new,
    .tp_methods = probe_methods,
};

/* The probe a code constant is a bound start/stop of, or NULL. */
static BreakProbe *
probe_of(PyObject *c)
{
    if (!PyCFunction_Check(c))
        return NULL;
    PyObject *self = PyCFunction_GET_SELF(c);
    return self != NULL && Py_IS_TYPE(self, &BreakProbe_Type) ? (BreakProbe *)self : NULL;
}

void
bprobe_bind_code(PyObject *code, uint64_t *counters)
{
    if (code == NULL || !PyCode_Check(code))
        return;
    PyObject *consts = ((PyCodeObject *)code)->co_consts;
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(consts); i++) {
        BreakProbe *p = probe_of(PyTuple_GET_ITEM(consts, i));
        uint64_t *to = counters != NULL ? counters : (p != NULL ? p->own : NULL);
        if (p == NULL || p->ctr == to)      /* not a probe, or bound there already? */
            continue;
        memcpy(to, p->ctr, sizeof(p->own));
        p->ctr = to;
    }
}

/* _set_break_sampling(period) -> previous period; 0 times nothing. */
static PyObject *
set_break_sampling(PyObject *module, PyObject *arg)
{
    (void)module;
    unsigned long v = PyLong_AsUnsignedLong(arg);
    if (v == (unsigned long)-1 && PyErr_Occurred())
        return NULL;
    if (v > UINT32_MAX) {
        PyErr_SetString(PyExc_ValueError, "break sampling period must be below 2**32");
        return NULL;
    }
    uint32_t prev = bprobe_period;
    bprobe_period = (uint32_t)v;
    return PyLong_FromUnsignedLong(prev);
}

static PyMethodDef module_functions[] = {
    {"_set_break_sampling", set_break_sampling, METH_O,
     "_set_break_sampling(period) -> previous: time one run of a break's eager region in period (0: none)."},
    {NULL, NULL, 0, NULL},
};

int
bprobe_add_to_module(PyObject *module)
{
    if (PyType_Ready(&BreakProbe_Type) < 0 || PyModule_AddType(module, &BreakProbe_Type) < 0)
        return -1;
    return PyModule_AddFunctions(module, module_functions);
}
