"""TorchDynamo-compatible names for the tracer's VariableTracker kinds.

The kinds themselves live in dynamo.tracer.variables; this module only gives
them the names code written for TorchDynamo imports. ConstDictVariable takes
TorchDynamo's argument order, `(items, user_cls)`.
"""
from ..tracer.variables import *  # noqa: F401,F403
from ..tracer.variables import (CellVariable, ClassVariable, ConstantVariable,  # noqa: F401
                               DictVariable, ListVariable, NNModuleVariable, TensorVariable,
                               TupleVariable, UserDefinedObjectVariable, UserFunctionVariable,
                               UserMethodVariable, VariableTracker)


class ConstDictVariable(DictVariable):
    """A dict with constant keys; `user_cls` (dict, OrderedDict, ...) is what
    python_type() reports."""

    def __init__(self, items, user_cls=dict, source=None):
        super().__init__(items, source=source, user_cls=user_cls)
