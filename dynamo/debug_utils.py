"""Old import path `dynamo.debug_utils` (TorchDynamo 1.13's `torchdynamo.debug_utils`):
an alias of dynamo/compat/debug_utils.py, the same module object under both names."""
import sys

from .compat import debug_utils

sys.modules[__name__] = debug_utils
