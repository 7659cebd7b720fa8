"""VariableTracker kinds: what the tracer knows about each value.

base (constants, NULL, cells, classes), tensor, containers, functions,
builtin (builtins and the shared operator helpers), compare (`is`, the
comparisons, `in`), torch (torch modules,
functions, grad mode), nn_module, misc (Python modules, user objects,
skipped callables), autograd_function (autograd.Function.apply),
higher_order (torch.vmap, associative_scan, TransformGetItemToIndex), optimizer
(torch.optim optimizers: the step traced), builder (wrap real values with
guards); kinds (the names a module reads from a module above it at trace
time, bound here once every module has loaded).
"""
import sys
from .base import (CellVariable, ClassVariable, ConstantVariable, NullVariable, OpaqueVariable,
                   VariableTracker)
from .builder import wrap, wrap_const
from .builtin import BuiltinVariable, ObservedAttributeError
from .containers import (DictVariable, GeneratorVariable, LazyIteratorVariable, ListIteratorVariable, ListVariable, SizeVariable,
                         TupleVariable)
from .functions import (BoundMethodVariable, NestedFunctionVariable, UserFunctionVariable,
                        UserMethodVariable)
from .misc import PassthroughVariable, PythonModuleVariable, UserDefinedObjectVariable
from .nn_module import NNModuleVariable
from .optimizer import OptimizerVariable
from .tensor import TensorVariable
from .torch import GradModeVariable, TorchFunctionVariable, WithExitVariable

# the one place the upward references are bound (kinds.py says why)
from . import autograd_function, compare, higher_order, kinds, model_output  # noqa: E402,F401
kinds.bind(sys.modules[__name__])
