"""Old import paths `dynamo.optimizations` and `dynamo.optimizations.backends`
(TorchDynamo 1.13's `torchdynamo.optimizations`): aliases of
dynamo/compat/optimizations/, the same module objects under both names."""
import sys

from .compat import optimizations

sys.modules[__name__] = optimizations
sys.modules[__name__ + ".backends"] = optimizations.backends
