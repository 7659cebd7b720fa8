"""Late lookup of the variable kinds that make one another: the one place
where a module of this package reaches a module above it.

The modules of dynamo/tracer/variables/ import one another downwards only
(base at the bottom; containers, functions, tensor, misc, ...; builtin,
torch, optimizer; builder at the top: tests/test_layering.py checks that
there is no import cycle, function-level imports included).  Some kinds
must still make a kind of a module above them at trace time: a class
called builds an instance of any kind (base.ClassVariable.call), a
container's method is a functions.BoundMethodVariable, a failed attribute
read raises builtin's ObservedAttributeError.  Such a function reads the name from here when it runs,
`from .kinds import ListVariable`, instead of importing the module above.

LATE lists those names by the module that defines them.  This module
imports nothing of the package: the package's __init__, which loads every
module, binds the names once (`bind`), before any trace runs.  A new
upward reference adds its name to LATE (test_layering checks that every
`from .kinds import` names one of them).
"""

LATE = {
    "autograd_function": ("AutogradFunctionApplyVariable", "AutogradFunctionVariable",
                          "is_autograd_function"),
    "builder": ("is_skipped_function", "wrap_torch_attr"),
    "builtin": ("BuiltinVariable", "ObservedAttributeError", "binary_op", "call_builtin_class", "sym_operands"),
    "compare": ("contains", "element_matches"),
    "containers": ("DictFromKeysVariable", "ListVariable", "NamedTupleVariable"),
    "functions": ("BoundMethodVariable", "ConstantMethodVariable", "PartialVariable"),
    "higher_order": ("getitem_to_index_block",),
    "misc": ("GenericAttrOpVariable", "NewObjectVariable", "NoopInitVariable", "SkippedFunctionVariable",
             "UserDefinedObjectVariable", "is_plain_user_class", "is_state_module_class"),
    "model_output": ("ModelOutputVariable", "is_model_output_class"),
    "nn_module": ("NNModuleVariable",),
    "torch": ("_construct_stateless_module", "autocast_block", "is_function_module_class", "autocast_noop", "profiler_noop"),
}


def bind(package):
    """Bind every name of LATE to its definition, read from the loaded
    `package` (dynamo.tracer.variables, every module of LATE imported).
    Called once, by the package's __init__; AttributeError names a module or
    name of LATE that does not exist."""
    for module, names in LATE.items():
        for name in names:
            globals()[name] = getattr(getattr(package, module), name)
