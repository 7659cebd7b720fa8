"""Old import path `dynamo.variables` (TorchDynamo 1.13's `torchdynamo.variables`):
an alias of dynamo/compat/variables.py, the same module object under both names."""
import sys

from .compat import variables

sys.modules[__name__] = variables
