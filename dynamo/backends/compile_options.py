"""torch.compile's `mode=` and `options=` for a backend (dynamo.compile).

Owns the mode table (what each of torch.compile's modes changes in
Inductor's config, as torch.compile documents it) and `with_options`, the
backend callable one wrapper compiles with: for Inductor, the registered
backend run with Inductor's config patched for that compile only; for any
other backend, the backend called with `mode=` / `options=` keywords, as
torch.compile calls a backend it does not know.  It must not import
torch._inductor before a graph is compiled (importing it loads torch's own
compiler stack): options are checked against Inductor's config then.
"""

# Inductor config changes per torch.compile mode (torch._inductor's
# list_mode_options, as of torch 2.13).  "reduce-overhead" is Inductor with
# CUDA graphs; on a CPU graph Inductor skips the CUDA graphs and the mode
# runs as "default".
MODE_OPTIONS = {
    "default": {},
    "reduce-overhead": {"triton.cudagraphs": True},
    "max-autotune-no-cudagraphs": {"max_autotune": True, "coordinate_descent_tuning": True},
    "max-autotune": {"max_autotune": True, "triton.cudagraphs": True,
                     "coordinate_descent_tuning": True},
}


def check(mode, options):
    """Refuse what torch.compile refuses, at the call that passed it:
    RuntimeError for an unknown mode or for both mode and options, TypeError
    for options that are not a dict."""
    if mode is not None and options is not None:
        raise RuntimeError("Either mode or options can be specified, but both can't be "
                           "specified at the same time.")
    if mode is not None and mode not in MODE_OPTIONS:
        raise RuntimeError(f"Unrecognized mode={mode!r}, should be one of: "
                           f"{', '.join(MODE_OPTIONS)}")
    if options is not None and not isinstance(options, dict):
        raise TypeError(f"options must be a dict of Inductor config settings, "
                        f"got {type(options).__name__}")


def inductor_patches(mode, options):
    """The Inductor config changes of `mode` and `options` (a new dict)."""
    patches = dict(MODE_OPTIONS[mode or "default"])
    patches.update(options or {})
    return patches


def with_options(name, fn, mode=None, options=None):
    """The backend callable for backend `name` (its registered callable
    `fn`) under `mode` and `options`: `fn` itself when neither changes
    anything."""
    if name == "inductor":
        patches = inductor_patches(mode, options)
        if not patches:
            return fn

        def inductor_with_options(gm, example_inputs):
            from torch._inductor import config as inductor_config
            known = inductor_config.get_config_copy()
            unknown = sorted(k for k in patches if k not in known)
            if unknown:
                raise ValueError(f"unexpected Inductor option(s) {', '.join(unknown)} "
                                 f"(dynamo.compile options=; see torch._inductor.config)")
            with inductor_config.patch(patches):
                return fn(gm, example_inputs)
        inductor_with_options.__name__ = getattr(fn, "__name__", "inductor")
        return inductor_with_options
    kwargs = {}
    if mode is not None and mode != "default":
        kwargs["mode"] = mode
    if options:
        kwargs["options"] = options
    if not kwargs:
        return fn

    def backend_with_options(gm, example_inputs):
        return fn(gm, example_inputs, **kwargs)
    backend_with_options.__name__ = getattr(fn, "__name__", type(fn).__name__)
    return backend_with_options
