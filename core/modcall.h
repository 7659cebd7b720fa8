/* core/modcall.h — ModuleCall, the __call__ descriptor of OptimizedModule.
 *
 * Owns: the type (core/modcall.c).  See there for what a lookup returns.
 */
#ifndef DYNAMO_CORE_MODCALL_H
#define DYNAMO_CORE_MODCALL_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>     /* PyTypeObject */

extern PyTypeObject ModuleCall_Type;

/* Once at module init: interned names and PyType_Ready.  0 or -1. */
int modcall_init(void);

#endif /* DYNAMO_CORE_MODCALL_H */
