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
    # torch.compile's `dynamic`: None (default) the policy below (static
    # first, automatic dynamic on a size change; docs/USER_GUIDE.md,
    # "Dynamic shapes"); True every dimension of every tensor input is a
    # symbolic size from the first compile (sizes 0 and 1 stay
    # specialized); False every size static, no automatic dynamic
    # (TorchDynamo 1.13's meaning of False; marks still count)
    "dynamic_shapes": None,
    # a recompile caused by the size of an input dimension makes that
    # dimension a symbolic size in the frame's later compiles (one graph
    # for every size instead of one per size); one caused by the value of
    # an int argument makes that argument a symbolic int
    "automatic_dynamic_shapes": True,
    # a frame whose `self` (any nn.Module argument) recompiles because
    # another instance of the same class came (layer 2 of a model after
    # layer 1) traces that argument as any instance of its class from the
    # next compile on: TYPE_MATCH, its parameters and buffers graph inputs
    # (TENSOR_MATCH), submodules by type, leaf modules inlined; the layers
    # then share one cache entry. False: one entry per instance
    "generic_module_frames": True,
    # torch.compile's name: True keeps every int argument a constant guarded
    # by value (one entry per value), even under automatic dynamic shapes
    "specialize_int": False,
    # a graph break's eager region (the code run between its graph and
    # the resume function) is counted and timed by a probe in the rewritten
    # code (two C calls per run; read at compile time: False emits none)
    "break_timing": True,
    # time one run of a break's eager region in this many (the first run
    # too); 0 counts runs only (no clock read). Takes effect at once
    "break_sample_period": 8,
    # dimensions neither marked (dynamo.mark_dynamic) nor seen changing are
    # traced as constants; False: every dimension is symbolic
    "assume_static_by_default": True,
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
    # a graph break inside a loop of the frame (a jump at or after the
    # break, before the first return, goes back to or before it) runs the
    # whole frame eagerly, as torch.compile does ("graph break in loop:
    # frame skipped"); the functions it calls compile as frames of their
    # own, once for all iterations. False: the frame is cut at the break
    # on each iteration, each resume function compiled for the items the
    # loop has left (one compile and one break per iteration)
    "skip_frame_on_loop_break": True,
    # raise BackendCompilerFailed instead of warning and running eagerly
    "raise_on_backend_error": False,
    # guard cost sampling: time 1 of every N guard lookups (per frame, per
    # entry, per guard-tree node; dynamo-top shows ns per call), 0 off.
    # Live: the value is the telemetry region's, which dynamo-top's `g`
    # flips too; DYNAMO_GUARD_TIMING=N sets it at start
    "guard_timing": 0,
    # --- torch.compile's names (docs/FROM_TORCH_COMPILE.md; aliases below)
    # compiled entries per code object, all backends together; the lower of
    # this and cache_size_limit applies (torch counts cache_size_limit per
    # guarded object and this one per code: one count here)
    "accumulated_recompile_limit": 256,
    # raise RuntimeError (instead of warning and running eagerly) when a
    # frame reaches the cache limit
    "fail_on_recompile_limit_hit": False,
    # raise RuntimeError on every recompile (a miss of a code that has entries)
    "error_on_recompile": False,
    # --- TorchDynamo-compatible names (docs/USER_GUIDE.md, "TorchDynamo-compatible API")
    # Tensor.item() is a graph node whose number is a graph output (the graph
    # breaks where code needs the number itself) instead of a graph break;
    # an integer one is an unbacked SymInt (a size, a slice bound)
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
    # the "autotune" backend (backends/autotune.py): the candidates tried
    # for each graph, comma-separated ("" = by device: inductor,
    # max-autotune, reduce-overhead, cudagraphs and eager on CUDA;
    # inductor and eager on CPU); timed calls per candidate; where the
    # choices are stored ("" = $DYNAMO_AUTOTUNE_DIR or ~/.cache/dynamo/autotune)
    "autotune_candidates": "",
    # how Inductor's generated Triton kernels of our graphs pick their tile
    # sizes at their first launch: "device" (each candidate timed by
    # CUDA-graph replays: the GPU's time only; backends/kernel_timing.py)
    # or "inductor" (Inductor's own timing of one launch, which on a fast
    # GPU measures Python's launch latency for a kernel of a few
    # microseconds, so its pick is noise)
    "inductor_kernel_timing": "device",
    "autotune_runs": 10,
    "autotune_dir": "",
    # accepted, no effect (always so in this design; see USER_GUIDE):
    # tensor subclasses are graph inputs like tensors whatever this holds,
    "traceable_tensor_subclasses": set(),
    # example values are always fake tensors,
    "fake_tensor_propagation": True,
    # ints/floats read from the frame are constants guarded by value (an int
    # argument whose value changes is a symbolic int from its second compile
    # on when automatic_dynamic_shapes, whatever this holds),
    "specialize_int_float": True,
    # there is no record/replay of failing frames.
    "replay_record_enabled": False,
}


# torch.compile's names of settings that exist here under another name:
# reading or writing one reads or writes the other.
ALIASES = {
    "recompile_limit": "cache_size_limit",
    "accumulated_cache_size_limit": "accumulated_recompile_limit",
}


def _validate(name, value):
    """Refuse a bad value at assignment, so the user's call never meets
    it: TypeError for the wrong type, ValueError for one out of range.
    A setting's type is its default's (a bool setting takes only True or
    False; an int one, an int that is not a bool); cache_size_limit is
    >= 0 (0: compile nothing new, every miss runs eagerly); log_level is
    a logging level (an int >= 0 or a name such as "DEBUG")."""
    default = _DEFAULTS[name]
    if name == "dynamic_shapes":
        if value is not None and not isinstance(value, bool):
            raise TypeError(f"dynamo.config.dynamic_shapes must be None, True or False, "
                            f"got {type(value).__name__} {value!r}")
        return
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
        if name in ("cache_size_limit", "accumulated_recompile_limit") and value < 0:
            raise ValueError(f"dynamo.config.{name} must be >= 0 (0: compile "
                             f"nothing new), got {value}")
        if name == "break_sample_period" and not 0 <= value < 2 ** 32:
            raise ValueError(f"dynamo.config.break_sample_period must be >= 0 and < 2**32 "
                             f"(0: count runs, time none), got {value}")
        if name == "autotune_runs" and value < 1:
            raise ValueError(f"dynamo.config.autotune_runs must be >= 1, got {value}")
    elif isinstance(default, float):
        if not isinstance(value, (int, float)) or isinstance(value, bool):
            raise TypeError(f"dynamo.config.{name} must be a number, "
                            f"got {type(value).__name__} {value!r}")
    elif isinstance(default, str) and not isinstance(value, str):
        raise TypeError(f"dynamo.config.{name} must be a str, got {type(value).__name__} {value!r}")
    if name == "inductor_kernel_timing" and value not in ("inductor", "device"):
        raise ValueError(f"dynamo.config.inductor_kernel_timing must be \"inductor\" or "
                         f"\"device\", got {value!r}")


# dynamo.compile(dynamic=...) as settings: True traces sizes symbolically
# from the first compile, False specializes every size (no automatic
# dynamic after a recompile), None leaves the settings as they are.  Names
# not (yet) settings here are left out, so the dynamic-shape settings
# (automatic_dynamic_shapes, assume_static_by_default) take effect for a
# wrapper as soon as they exist.
_DYNAMIC = {
    True: {"dynamic_shapes": True, "automatic_dynamic_shapes": True,
           "assume_static_by_default": False},
    False: {"dynamic_shapes": False, "automatic_dynamic_shapes": False,
            "assume_static_by_default": True},
}


def _dynamic_overrides(dynamic):
    """The settings a dynamo.compile(dynamic=...) wrapper compiles with
    (a dict; empty for None)."""
    if dynamic is None:
        return {}
    if not isinstance(dynamic, bool):
        raise TypeError(f"dynamic must be True, False or None, got {type(dynamic).__name__}")
    return {k: v for k, v in _DYNAMIC[dynamic].items() if k in _DEFAULTS}


class _Overrides:
    """Context manager: settings changed for a block (one compile), the
    previous values back at its end."""

    def __init__(self, cfg, values):
        self.cfg, self.values, self.saved = cfg, values, []

    def __enter__(self):
        self.saved.append({k: getattr(self.cfg, k) for k in self.values})
        for k, v in self.values.items():
            setattr(self.cfg, k, v)
        return self

    def __exit__(self, *exc):
        for k, v in self.saved.pop().items():
            setattr(self.cfg, k, v)
        return False


class StderrHandler(logging.StreamHandler):
    """A handler writing to whatever sys.stderr is when a record is
    emitted (a test's capture, a redirected stream), not the one of the day
    it was made.  dynamo's loggers print through it with no logging setup."""

    def __init__(self):
        super().__init__()
        self.setFormatter(logging.Formatter("[%(name)s] %(message)s"))

    @property
    def stream(self):
        return sys.stderr

    @stream.setter
    def stream(self, value):      # StreamHandler.__init__ sets it: sys.stderr is read per record
        pass


class _Config(types.ModuleType):
    def __getattr__(self, name):
        if name.startswith("__"):
            raise AttributeError(name)
        if name in _LIVE:
            return _LIVE[name][0]()
        if name in ALIASES:
            return getattr(self, ALIASES[name])
        raise AttributeError(f"dynamo.config has no setting {name!r}; "
                             f"known: {', '.join(sorted(_DEFAULTS))}")

    def __setattr__(self, name, value):
        name = ALIASES.get(name, name)
        if name not in _DEFAULTS and not name.startswith("_"):
            raise AttributeError(f"dynamo.config has no setting {name!r}; "
                                 f"known: {', '.join(sorted(_DEFAULTS))}")
        if name in _DEFAULTS:
            _validate(name, value)
        if name in _LIVE:
            if value < 0 or value > 0xFFFFFFFF:
                raise ValueError(f"dynamo.config.{name} must be in [0, 2**32), got {value}")
            _LIVE[name][1](value)
            return
        if name == "break_sample_period":
            from . import _C
            _C._set_break_sampling(value)
        if name == "log_level":
            logger = logging.getLogger("dynamo")
            logger.setLevel(value)
            if not logger.hasHandlers():
                # nobody configured logging: print to stderr, as torch's
                # loggers do (logging's last-resort handler shows WARNING only)
                logger.addHandler(StderrHandler())
        super().__setattr__(name, value)

    def defaults(self):
        """Return a copy of the default settings."""
        return dict(_DEFAULTS)

    def overrides(self, values):
        """`with config.overrides({"name": value}):` the settings changed for
        the block (validated as assignments are); aliases accepted."""
        return _Overrides(self, {ALIASES.get(k, k): v for k, v in values.items()})

    def dynamic_overrides(self, dynamic):
        """The settings dynamo.compile(dynamic=True/False/None) compiles
        with: the one place the dynamic= argument meets the settings."""
        return _dynamic_overrides(dynamic)



def _live_settings():
    """Settings kept in C, where another process may change them (read and
    written through _C each time, never cached here): name -> (get, set)."""
    from . import _C
    return {"guard_timing": (_C._guard_timing, _C._set_guard_timing)}


_LIVE = _live_settings()
_self = sys.modules[__name__]
_cfg = _Config(__name__, __doc__)
for _k, _v in _DEFAULTS.items():
    if _k not in _LIVE:
        _cfg.__dict__[_k] = _v
_cfg.__dict__["__file__"] = __file__
_cfg.__dict__["StderrHandler"] = StderrHandler      # not a setting: for dynamo.logs
sys.modules[__name__] = _cfg
