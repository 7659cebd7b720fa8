"""Skip rules: which code dynamo never compiles or inlines, and why.

Named by what is not to be traced, never by a directory that merely
contains it:
- the standard library: files under sysconfig's stdlib/platstdlib
  directories *except* anything under a site directory (site-packages,
  dist-packages, purelib/platlib, the user site): in a venv platstdlib is
  `.venv/lib/python3.X`, which holds site-packages, and a system Python
  keeps its site-packages inside its stdlib directory;
- the packages in SKIP_PACKAGES, located through their import spec: a
  package by its own directory, a single-file module (typing_extensions)
  by its file — never the directory the file sits in;
- dynamo itself;
- the code Inductor generates, in its cache directory (its compiled
  forward and backward are plain Python modules there: the backward, called
  by autograd after the graph returned, would be traced as user code).
A user's `dynamo.disable` is the hook's OFF mode, not a rule here.

One narrow exception, for inlining only: the optimizers of torch.optim,
the foreach helpers they call and torch.distributions (INLINED_TORCH_CODE)
are followed when traced code calls them (torch.compile inlines them too),
so an optimizer step lands in the graph; `is_inlined_torch_code(code)`
answers it (`is_inlined_torch_class(cls)` for their classes).  Their frames
stay skipped: the hook never compiles a frame of them on its own.

Paths are compared after os.path.realpath (the venv may be a symlink).
`is_skipped_file(filename)` answers for the frame hook's callback and
`skip_reason(filename)` says why; `note(code, reason)` logs a frame the
callback skipped so `explain` can list it (cleared by dynamo.reset()).
"""
import functools
import importlib.util
import os
import site
import sys
import sysconfig

# Packages whose code is never traced: torch's own internals, numerical
# libraries the tracer cannot follow, test runners and their helpers.
SKIP_PACKAGES = ("torch", "torchgen", "functorch", "numpy", "scipy", "sympy", "_pytest",
                 "pytest", "pluggy", "tabulate", "typing_extensions", "pygments", "jinja2",
                 "mpmath", "networkx", "filelock", "fsspec")


def _real_dir(path):
    return os.path.join(os.path.realpath(path), "")


def _site_dirs():
    dirs = set()
    try:
        dirs.update(site.getsitepackages())
    except AttributeError:          # old virtualenv's site module
        pass
    try:
        dirs.add(site.getusersitepackages())
    except AttributeError:
        pass
    paths = sysconfig.get_paths()
    dirs.update(paths[k] for k in ("purelib", "platlib") if k in paths)
    dirs.update(p for p in sys.path if os.path.basename(os.path.normpath(p)) in
                ("site-packages", "dist-packages"))
    return tuple(sorted({_real_dir(d) for d in dirs if d}))


def _stdlib_dirs():
    paths = sysconfig.get_paths()
    return tuple(sorted({_real_dir(paths[k]) for k in ("stdlib", "platstdlib") if k in paths}))


def _locations(name):
    """Where the package or module `name` is installed: its directories
    (each ending in os.sep) or its single file; [] when it is not installed
    (or its parent package fails to import)."""
    try:
        spec = importlib.util.find_spec(name)
    except (ImportError, ValueError):
        return []
    if spec is None:
        return []
    if spec.submodule_search_locations:
        return [_real_dir(d) for d in spec.submodule_search_locations]
    if spec.origin and os.path.isfile(spec.origin):
        return [os.path.realpath(spec.origin)]
    return []


def _package_locations():
    """(location, package) for each skipped package that is installed: a
    directory (ending in os.sep) or a single file."""
    out = [(_real_dir(os.path.dirname(os.path.abspath(__file__))), "dynamo")]
    for name in SKIP_PACKAGES:
        out += [(location, name) for location in _locations(name)]
    return tuple(out)


# torch code the tracer inlines although torch is skipped: (package or
# module name, why).  A package by its directory, a module by its file.
INLINED_TORCH_CODE = (
    ("torch.optim", "the optimizers' step and functional updates (torch.compile inlines them)"),
    ("torch.utils._foreach_utils", "the device/dtype checks an optimizer step makes"),
    ("torch.distributions", "probability distributions: plain Python over tensors, made and "
                            "queried by model code (Gemma 3n's Normal(0, 1).icdf); torch.compile "
                            "inlines them too"),
)


def _inlined_locations():
    return tuple(location for name, _why in INLINED_TORCH_CODE for location in _locations(name))


_SITE_DIRS = _site_dirs()
_STDLIB_DIRS = _stdlib_dirs()
_PACKAGES = _package_locations()
_INLINED = _inlined_locations()


def _inductor_cache_dir():
    """Inductor's cache directory as Inductor names it (TORCHINDUCTOR_CACHE_DIR,
    else its per-user default), once Inductor is loaded; None before."""
    mod = sys.modules.get("torch._inductor.runtime.cache_dir_utils")
    if mod is None:
        return None
    try:
        return _real_dir(os.environ.get("TORCHINDUCTOR_CACHE_DIR") or mod.default_cache_dir())
    except Exception:  # noqa: BLE001 - a renamed helper in another torch: no rule
        return None


@functools.lru_cache(maxsize=4096)
def skip_reason(filename):
    """Why code from `filename` is never compiled, or None when it may be."""
    if not filename:
        return None
    if filename.startswith("<"):   # generated code (fx, dataclasses, exec) unless typed in
        if filename == "<stdin>" or filename.startswith("<ipython"):
            return None
        return "generated code"
    path = os.path.realpath(filename)
    inductor = _inductor_cache_dir()
    if inductor is not None and path.startswith(inductor):
        return "generated by Inductor"
    for location, name in _PACKAGES:
        if path == location or (location.endswith(os.sep) and path.startswith(location)):
            return "dynamo itself" if name == "dynamo" else f"in package {name}"
    for stdlib in _STDLIB_DIRS:
        if path.startswith(stdlib) and not path.startswith(_SITE_DIRS):
            top = path[len(stdlib):].split(os.sep, 1)[0]
            if top not in ("site-packages", "dist-packages"):
                return "in the standard library"
    return None


@functools.lru_cache(maxsize=4096)
def _inlined_file(filename):
    path = os.path.realpath(filename)
    return any(path == loc or (loc.endswith(os.sep) and path.startswith(loc)) for loc in _INLINED)


def is_inlined_torch_class(cls):
    """True for a class defined in a module of INLINED_TORCH_CODE."""
    module = sys.modules.get(getattr(cls, "__module__", None) or "")
    filename = getattr(module, "__file__", None)
    return bool(filename) and _inlined_file(filename)


def is_inlined_torch_code(code):
    """True for a code object of INLINED_TORCH_CODE: the tracer follows a
    call to it from traced code (its frames are still skipped)."""
    filename = getattr(code, "co_filename", None)
    return bool(filename) and _inlined_file(filename)


def is_skipped_file(filename):
    """True for code dynamo never compiles (see the module docstring)."""
    return skip_reason(filename) is not None


def is_stdlib_file(filename):
    """True for a file of the standard library (not a site directory)."""
    return skip_reason(filename) == "in the standard library"


# ---------------------------------------------------------------- log

# No lock: each access is one list or dict operation, atomic under the GIL.
# A lock held here could be held while a Python frame starts (a finalizer
# run by freeing a code, a GC pass) that compiles and comes back (issue 29).
_log = []           # (code, reason) of frames the callback skipped, in order
_logged = {}        # code -> its item of _log


def note(code, reason):
    """Record that the hook's callback skipped `code` for `reason`."""
    item = (code, reason)
    if _logged.setdefault(code, item) is item:      # the first note of `code`
        _log.append(item)


def mark():
    return len(_log)


def since(position):
    """[(code, reason)] noted since `mark()` returned `position`."""
    return _log[position:]


def clear():
    _logged.clear()
    _log.clear()
