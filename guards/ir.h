/* guards/ir.h — the compiled guard IR: sources and checks as plain C data.
 *
 * Owns: the translation of the Python tuple IR of ARCHITECTURE.md ("Guard IR")
 * into a GirSet (an array of sources plus an array of checks) and the torch
 * callables the checks need (GirRuntime).  It must not evaluate anything
 * (guards/tree.c does) and must not know about frames or caches.
 *
 * Shape chosen for the later decision tree: sources are deduplicated by
 * structural equality of their tuples inside one set and refer to their base
 * by index (base < own index), and every check is (kind, source, expected)
 * data, so the guards of many entries can be merged and compared.
 */
#ifndef DYNAMO_GUARDS_IR_H
#define DYNAMO_GUARDS_IR_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>     /* PyObject, Py_ssize_t */
#include <stdint.h>     /* uint64_t */

/* Source kinds, numbered as in the Python tuples. */
typedef enum {
    GIR_SRC_LOCAL = 0,      /* (0, slot): an argument slot of the frame */
    GIR_SRC_GLOBAL = 1,     /* (1, name): f_globals[name], else f_builtins[name] */
    GIR_SRC_CLOSURE = 2,    /* (2, index): func.__closure__[index].cell_contents */
    GIR_SRC_ATTR = 3,       /* (3, base, name): getattr(base, name) */
    GIR_SRC_ITEM = 4,       /* (4, base, key): base[key], key int or str */
    GIR_SRC_NONE = 5,       /* (5,): no value (global-state guards) */
    GIR_SRC_STATIC_ATTR = 6,/* (6, base, name): the object attribute lookup on
                               base starts from, no descriptor called: a data
                               descriptor found on type(base)'s MRO, else
                               base.__dict__[name], else the MRO's non-data
                               descriptor or plain class attribute */
    GIR_SRC_GENERIC_ATTR = 7,/* (7, base, name): object.__getattribute__(base,
                               name), CPython's generic lookup in C: never
                               the class's own __getattribute__ nor its
                               __getattr__ (the tracer emits it where the
                               trace proved that class's lookup delegates
                               to object's for the name) */
} GirSourceKind;

/* Check kinds, numbered as in the Python tuples. */
typedef enum {
    GIR_TYPE_MATCH = 0,
    GIR_ID_MATCH = 1,
    GIR_EQUALS_MATCH = 2,
    GIR_LENGTH = 3,
    GIR_TENSOR_MATCH = 4,
    GIR_GRAD_MODE = 5,
    GIR_DICT_KEYS = 6,      /* (6, source, keys): type(v) is dict and tuple(v) == keys;
                               keys given as an OrderedDict: type(v) is OrderedDict */
    GIR_FUNCTION_MATCH = 7,
    GIR_NONE_MATCH = 8,     /* NOT_NONE / IS_NONE */
    GIR_SAME_OBJECT = 9,    /* (9, source, other_source, same): (v is other) == same */
    GIR_GLOBAL_STATE = 10,  /* (10, (5,), word): tmeta_global_state() == word */
    GIR_STORAGE_MATCH = 11, /* (11, source, other_source, same): both are tensors
                               and (they view one storage) == same */
    GIR_BACKEND_MATCH = 12, /* (12, (5,), key): the frame's backend key (the
                               thread's callback's, GevalFrame.backend) is key,
                               or 0 (RUN mode: any entry serves) */
    GIR_SHAPE_GUARD = 13,   /* (13, source, text, program): the postfix program
                               over tensor sizes/strides (GirShapeOp) yields
                               non-zero; source: its first leaf's source */
    GIR_NKINDS
} GirCheckKind;

/* SHAPE_GUARD program steps, numbered as in the Python tuples: one relation
 * between tensor sizes and int arguments (a ShapeEnv guard such as `2 <= s0`, `s0 == s1`,
 * `s0 % 8 == 0`) in postfix order over int64 values. */
typedef enum {
    GIR_SH_SIZE = 0,        /* (0, source, dim): push source.size()[dim] */
    GIR_SH_STRIDE = 1,      /* (1, source, dim): push source.stride()[dim] */
    GIR_SH_CONST = 2,       /* (2, value): push an int64 constant */
    GIR_SH_ADD = 3,         /* binary steps pop b, then a, push a OP b */
    GIR_SH_SUB = 4,
    GIR_SH_MUL = 5,
    GIR_SH_FLOORDIV = 6,    /* Python's //; a zero divisor fails the guard */
    GIR_SH_MOD = 7,         /* Python's %; a zero divisor fails the guard */
    GIR_SH_EQ = 8,          /* comparisons push 0 / 1 */
    GIR_SH_NE = 9,
    GIR_SH_LT = 10,
    GIR_SH_LE = 11,
    GIR_SH_AND = 12,
    GIR_SH_OR = 13,
    GIR_SH_MIN = 14,
    GIR_SH_MAX = 15,
    GIR_SH_NOT = 16,        /* unary steps pop a, push OP a */
    GIR_SH_NEG = 17,
    GIR_SH_INT = 18,        /* (18, source, 0): push the source's value, an
                               exact int (a frame's int argument traced as a
                               symbolic int); anything else fails the guard */
    GIR_SH_NOPS
} GirShapeOp;

/* Is step op a leaf (a value read from a source: SIZE, STRIDE, INT)? */
static inline int
gir_shape_is_leaf(int op)
{
    return op == GIR_SH_SIZE || op == GIR_SH_STRIDE || op == GIR_SH_INT;
}

/* Deepest value stack of a SHAPE_GUARD program (checked at compile: the walk
 * evaluates on a fixed array, no allocation). */
#define GIR_SHAPE_MAX_STACK 32

typedef struct {
    int op;                 /* GirShapeOp */
    int source;             /* leaves: index into GirSet.sources, else -1 */
    int dim;                /* SIZE/STRIDE: the dimension, else 0 */
    int64_t value;          /* CONST: the value, else 0 */
} GirShapeStep;

typedef struct {
    int n;                  /* steps */
    GirShapeStep *steps;    /* owned */
    PyObject *spec;         /* strong: the program tuple it was compiled from */
} GirShape;

/* Deepest ATTR/ITEM chain accepted; keeps the fetch recursion bounded. */
#define GIR_MAX_DEPTH 32

typedef struct {
    int kind;               /* GirSourceKind */
    int base;               /* index of the base source (ATTR, ITEM), else -1 */
    Py_ssize_t index;       /* LOCAL slot, CLOSURE index, ITEM int key; else 0 */
    PyObject *name;         /* strong: GLOBAL/ATTR name, ITEM key; else NULL */
    PyObject *spec;         /* strong: the source tuple it was compiled from */
} GirSource;

typedef struct {
    PyObject *cls;          /* strong: exact Python class of the tensor */
    PyObject *dtype;        /* strong: torch.dtype, compared by identity */
    PyObject *device;       /* strong: torch.device, compared with == */
    int requires_grad;      /* 0 / 1 */
    uint64_t dispatch_keys; /* (keys | tls_include) - tls_exclude, raw repr */
    Py_ssize_t ndim;        /* t.dim() */
    Py_ssize_t *sizes;      /* owned, ndim entries, -1 = any; NULL = unchecked */
    Py_ssize_t *strides;    /* owned, ndim entries, -1 = any; NULL = unchecked */
    int32_t dtype_code;     /* c10::ScalarType of dtype (tmeta) */
    int32_t device_type;    /* c10::DeviceType of device (tmeta) */
    int32_t device_index;   /* -1 when the device has no index */
} GirTensor;

typedef struct {
    int kind;               /* GirCheckKind */
    int source;             /* index into GirSet.sources */
    PyObject *obj;          /* type / obj / value / keys tuple, SAME_OBJECT's or
                               STORAGE_MATCH's Py_True / Py_False, or NULL: strong,
                               except ID/FUNCTION_MATCH with wref set, where it
                               is borrowed (valid while the set is not dead) */
    PyObject *wref;         /* strong: weakref to obj whose callback marks the
                               set dead; NULL when obj is held strongly */
    Py_ssize_t n;           /* LENGTH n; GRAD_MODE enabled; NONE_MATCH is_none;
                               DICT_KEYS: 1 for an OrderedDict, 0 a dict;
                               SAME_OBJECT / STORAGE_MATCH: index of the
                               other source;
                               GLOBAL_STATE: the expected state word;
                               BACKEND_MATCH: the expected backend key (> 0) */
    GirTensor *tensor;      /* owned, TENSOR_MATCH only, else NULL */
    GirShape *shape;        /* owned, SHAPE_GUARD only, else NULL (obj: its text) */
} GirCheck;

typedef struct {
    Py_ssize_t refs;        /* C references (cache entry, trees) */
    int dead;               /* an ID/FUNCTION_MATCH object died: never passes */
    Py_ssize_t nsources;
    GirSource *sources;     /* owned, bases before their users */
    Py_ssize_t nchecks;
    GirCheck *checks;       /* owned, in the order of the Python list */
    int needs_torch;        /* some check calls into torch */
} GirSet;

/* Torch callables and interned names the checks use; loaded once, on the
 * first compile of a set that needs torch.  Lives in the module state. */
typedef struct {
    int loaded;                 /* torch callables below are set */
    PyObject *dispatch_keys;    /* strong: torch._C._dispatch_keys */
    PyObject *tls_include;      /* strong: torch._C._dispatch_tls_local_include_set */
    PyObject *tls_exclude;      /* strong: torch._C._dispatch_tls_local_exclude_set */
    PyObject *is_grad_enabled;  /* strong: torch._C.is_grad_enabled */
    uint64_t backend_mask;      /* bits DispatchKeySet.__sub__ never removes */
    PyObject *s_dtype;          /* strong: interned attribute / method names */
    PyObject *s_device;
    PyObject *s_requires_grad;
    PyObject *s_dim;
    PyObject *s_size;
    PyObject *s_stride;
    PyObject *s_raw_repr;
    PyObject *s_untyped_storage;/* strong: "untyped_storage" */
    PyObject *s_cdata;          /* strong: "_cdata" */
    PyObject *s_getattr;        /* strong: "__getattr__" */
    PyObject *s_getattribute;   /* strong: "__getattribute__" */
    PyObject *s_module_dicts[3];/* strong: "_parameters", "_buffers", "_modules" */
    PyObject *module_getattr;   /* strong: torch.nn.Module.__getattr__ */
    PyObject *object_getattribute; /* strong: object.__getattribute__ */
} GirRuntime;

/* Bumped by the weakref callbacks each time a guarded object dies (a set
 * became dead): caches compare it to know when to prune and rebuild. */
extern uint64_t gir_dead_epoch;

/* Compile a guard list (list or tuple of tuples) into a new GirSet.
 * guards: borrowed.  rt: the runtime, loaded here if a check needs torch.
 * Returns an owned set (free with gir_free) or NULL with TypeError /
 * ValueError naming the offending guard index (or ImportError from torch). */
GirSet *gir_compile(PyObject *guards /* borrowed */, GirRuntime *rt);

/* Take a C reference on a set. */
static inline GirSet *
gir_incref(GirSet *gs)
{
    gs->refs++;
    return gs;
}

/* Add SOURCE_KINDS, GUARD_KINDS and SHAPE_OPS ({name: number} of the three
 * enums above, the one vocabulary dynamo.guards imports) to the module.  0, or -1 with
 * an exception. */
int gir_add_vocabulary(PyObject *module);

/* Drop a C reference (gir_compile returns one); the last one frees the set
 * and drops every reference it holds.  NULL is accepted. */
void gir_free(GirSet *gs);

/* Import torch and fill rt; idempotent.  0, or -1 with an exception. */
int gir_runtime_load(GirRuntime *rt);

/* Drop every reference of rt (module teardown). */
void gir_runtime_clear(GirRuntime *rt);

#endif /* DYNAMO_GUARDS_IR_H */
