"""Old import path `dynamo.bytecode_transformation` (TorchDynamo 1.13's
`torchdynamo.bytecode_transformation`): an alias of
dynamo/compat/bytecode_transformation.py, the same module object under both names."""
import sys

from .compat import bytecode_transformation

sys.modules[__name__] = bytecode_transformation
