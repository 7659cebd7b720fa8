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
    # ops whose output size depends on the data (nonzero, torch.where(mask),
    # boolean indexing) stay in the graph, their sizes symbolic; reading such
    # a size in Python (.shape, len) is a break. False: a break at the op.
    "capture_dynamic_output_shape_ops": True,
    # logging level of the "dynamo" logger
    "log_level": logging.WARNING,
    # log the generated code of every compile at INFO level
    "output_code": False,
    # tensor ops inside try/finally and try/except blocks go into the graph;
    # when such a graph raises at run time the frame re-runs its original
    # code eagerly from the start (handlers see the op's exception as in
    # eager). False: the try block runs eagerly (the graph ends before it)
    "trace_try_regions": True,
    # raise BackendCompilerFailed instead of warning and running eagerly
    "raise_on_backend_error": False,
    # --- TorchDynamo-compatible names (docs/USER_GUIDE.md, "TorchDynamo-compatible API")
    # Tensor.item() is a graph node whose number is a graph output (the graph
    # breaks where code needs the number itself) instead of a graph break
    "capture_scalar_outputs": False,
    # entering `with dynamo.optimize(...)` raises RuntimeError (use it as a decorator)
    "raise_on_ctx_manager_usage": False,
    # run each compiled graph once against the captured graph on its example
    # inputs and raise BackendCompilerFailed when the results differ
    "verify_correctness": False,
    # a graph compiled while a DistributedDataParallel forward runs is cut at
    # DDP's gradient-bucket boundaries, each piece compiled on its own, so
    # all-reduce overlaps the backward (backends/ddp.py; torch.compile's
    # optimize_ddp)
    "optimize_ddp": True,
    # accepted, no effect (always so in this design; see USER_GUIDE):
    # tensor subclasses are graph inputs like tensors whatever this holds,
    "traceable_tensor_subclasses": set(),
    # example values are always fake tensors,
    "fake_tensor_propagation": True,
    # ints/floats read from the frame are always constants guarded by value,
    "specialize_int_float": True,
    # there is no record/replay of failing frames.
    "replay_record_enabled": False,
}


def _validate(name, value):
    """Refuse a bad value at assignment, so the user's call never meets
    it: TypeError for the wrong type, ValueError for one out of range.
    A setting's type is its default's (a bool setting takes only True or
    False; an int one, an int that is not a bool); cache_size_limit is
    >= 0 (0: compile nothing new, every miss runs eagerly); log_level is
    a logging level (an int >= 0 or a name such as "DEBUG")."""
    default = _DEFAULTS[name]
    if name == "log_level":
        if isinstance(value, str) and value in logging.getLevelNamesMapping():
            return
        if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
            return
        raise (TypeError if not isinstance(value, (int, str)) or isinstance(value, bool)
               else ValueError)(
            f"dynamo.config.log_level must be a logging level (an int >= 0 or one of "
            f"{', '.join(sorted(logging.getLevelNamesMapping()))}), got {value!r}")
    if isinstance(default, bool):
        if not isinstance(value, bool):
            raise TypeError(f"dynamo.config.{name} must be True or False, "
                            f"got {type(value).__name__} {value!r}")
    elif isinstance(default, int):
        if not isinstance(value, int) or isinstance(value, bool):
            raise TypeError(f"dynamo.config.{name} must be an int, "
                            f"got {type(value).__name__} {value!r}")
        if name == "cache_size_limit" and value < 0:
            raise ValueError(f"dynamo.config.cache_size_limit must be >= 0 (0: compile "
                             f"nothing new), got {value}")
    elif isinstance(default, float):
        if not isinstance(value, (int, float)) or isinstance(value, bool):
            raise TypeError(f"dynamo.config.{name} must be a number, "
                            f"got {type(value).__name__} {value!r}")
    elif isinstance(default, str) and not isinstance(value, str):
        raise TypeError(f"dynamo.config.{name} must be a str, got {type(value).__name__} {value!r}")


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
        if name in _DEFAULTS:
            _validate(name, value)
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
