"""Process-wide settings of dynamo. Unknown names raise AttributeError.

Reading and writing is plain attribute access: `dynamo.config.debug = True`.
"""
import logging
import sys
import types

_DEFAULTS = {
    # print graphs, original/modified bytecode and guards per compile
    "debug": False,
    # keep full user stacks in break reasons and print them in explain()
    "verbose": False,
    # compiled entries per code object before the frame runs eagerly
    "cache_size_limit": 8,
    # do not specialize on tensor sizes and strides (TENSOR_MATCH without them)
    "dynamic_shapes": False,
    # logging level of the "dynamo" logger
    "log_level": logging.WARNING,
    # log the generated code of every compile at INFO level
    "output_code": False,
    # raise BackendCompilerFailed instead of warning and running eagerly
    "raise_on_backend_error": False,
    # --- TorchDynamo-compatible names (docs/USER_GUIDE.md, "TorchDynamo-compatible API")
    # entering `with dynamo.optimize(...)` raises RuntimeError (use it as a decorator)
    "raise_on_ctx_manager_usage": False,
    # run each compiled graph once against the captured graph on its example
    # inputs and raise BackendCompilerFailed when the results differ
    "verify_correctness": False,
    # accepted, no effect (always so in this design; see USER_GUIDE):
    # tensor subclasses are graph inputs like tensors whatever this holds,
    "traceable_tensor_subclasses": set(),
    # example values are always fake tensors,
    "fake_tensor_propagation": True,
    # ints/floats read from the frame are always constants guarded by value,
    "specialize_int_float": True,
    # Tensor.item()/tolist() always break the graph,
    "capture_scalar_outputs": False,
    # there is no record/replay of failing frames.
    "replay_record_enabled": False,
}


class _Config(types.ModuleType):
    def __getattr__(self, name):
        if name.startswith("__"):
            raise AttributeError(name)
        raise AttributeError(f"dynamo.config has no setting {name!r}; "
                             f"known: {', '.join(sorted(_DEFAULTS))}")

    def __setattr__(self, name, value):
        if name not in _DEFAULTS and not name.startswith("_"):
            raise AttributeError(f"dynamo.config has no setting {name!r}; "
                                 f"known: {', '.join(sorted(_DEFAULTS))}")
        if name == "log_level":
            logging.getLogger("dynamo").setLevel(value)
        super().__setattr__(name, value)

    def defaults(self):
        """Return a copy of the default settings."""
        return dict(_DEFAULTS)


_self = sys.modules[__name__]
_cfg = _Config(__name__, __doc__)
for _k, _v in _DEFAULTS.items():
    _cfg.__dict__[_k] = _v
_cfg.__dict__["__file__"] = __file__
sys.modules[__name__] = _cfg
