"""allow_in_graph, disallow_in_graph, skip, assume_constant_result: per-
function directives to the tracer (the TorchDynamo-compatible API).

Owns the directive tables. They are read at trace time only (builder.wrap,
TorchFunctionVariable.call, InstructionTranslator.inline_call) and by the
hook callback on a cache miss (skip); nothing here runs on a cache hit.
Directives survive dynamo.reset(); code already compiled keeps what it was
traced with until it recompiles (call dynamo.reset() after changing them).

- allow_in_graph(fn): a call of fn is recorded as one call_function node
  (fn is run on fake tensors for its output metadata, never inlined);
- disallow_in_graph(fn): a call of fn breaks the graph and runs eagerly,
  even for torch functions that would otherwise be graph nodes;
- skip(fn): fn's own frame is never compiled, and a call of fn from
  compiled code breaks the graph (unlike disable(), the frames fn calls are
  still compiled);
- assume_constant_result(fn): fn is run at trace time on the real values of
  its arguments and its result is put into the graph as a constant.

torch's spellings of the same directives are honoured, read without
touching torch's own dynamo (neither its modules nor its tables):
- torch.compiler.disable and its private twins (disable, skip) set
  attributes on the function they return (`_torchdynamo_disable`,
  `_torchdynamo_disable_recursive`): `torch_disable_kind`;
- torch.compiler.assume_constant_result sets `_dynamo_marked_constant`;
- torch.compiler.allow_in_graph leaves no mark on the function (torch
  keeps an id set of its own): `install_torch_directives()`, run once at
  `import dynamo`, replaces the public `torch.compiler.allow_in_graph`
  with a wrapper that calls torch's and then records the function into
  this module's table (the same one as dynamo.allow_in_graph).
  Limits: a call made before `import dynamo`, or through a reference taken
  before it (`from torch.compiler import allow_in_graph` at a module's top,
  run before dynamo was imported), or through torch's private spelling
  (`allow_in_graph` / `disallow_in_graph` of its private module), is not seen:
  import dynamo first, or repeat the directive with dynamo.allow_in_graph /
  dynamo.disallow_in_graph.  torch's own functions given to it are left to
  dynamo's torch rules.
"""
import functools
import types

_allowed = {}       # id(fn) -> fn
_disallowed = {}    # id(fn) -> fn
_skipped_codes = set()
_CONSTANT_ATTR = "_dynamo_assume_constant_result"


def _key(fn):
    return id(getattr(fn, "__func__", fn))


def _check_callable(fn, what):
    if not callable(fn):
        raise TypeError(f"dynamo.{what} expects a callable, got {type(fn).__name__}")


def allow_in_graph(fn):
    """Put calls of `fn` into the graph as one node. Returns fn."""
    if isinstance(fn, (list, tuple)):
        return [allow_in_graph(f) for f in fn]
    _check_callable(fn, "allow_in_graph")
    _disallowed.pop(_key(fn), None)
    _allowed[_key(fn)] = getattr(fn, "__func__", fn)
    return fn


def disallow_in_graph(fn):
    """Break the graph at every call of `fn`. Returns fn."""
    _check_callable(fn, "disallow_in_graph")
    _allowed.pop(_key(fn), None)
    _disallowed[_key(fn)] = getattr(fn, "__func__", fn)
    return fn


def is_allowed(fn):
    return _allowed.get(_key(fn)) is getattr(fn, "__func__", fn)


def is_disallowed(fn):
    return _disallowed.get(_key(fn)) is getattr(fn, "__func__", fn)


def _note_torch_allowed(fn):
    """Record what torch.compiler.allow_in_graph was given (a callable or a
    list/tuple of them, as torch accepts) into this module's table; torch's
    own functions are left to dynamo's torch rules."""
    for f in (fn if isinstance(fn, (list, tuple)) else (fn,)):
        module = getattr(getattr(f, "__func__", f), "__module__", None) or ""
        if callable(f) and module != "torch" and not module.startswith("torch."):
            _disallowed.pop(_key(f), None)
            _allowed[_key(f)] = getattr(f, "__func__", f)


# Marks our wrapper, so a second install (a reloaded dynamo) does not wrap it again.
_RECORDS_ATTR = "_dynamo_records_directive"


def install_torch_directives():
    """Make torch.compiler.allow_in_graph record into this module's table:
    the public attribute becomes a wrapper that calls torch's function
    (torch.compile keeps seeing the directive) and then records the
    function.  Called once at `import dynamo`; idempotent.  Never raises:
    a torch without the attribute is left as it is."""
    import torch.compiler
    original = getattr(torch.compiler, "allow_in_graph", None)
    if original is None or getattr(original, _RECORDS_ATTR, False):
        return

    @functools.wraps(original)
    def allow_in_graph(fn):
        result = original(fn)
        _note_torch_allowed(fn)
        return result
    setattr(allow_in_graph, _RECORDS_ATTR, True)
    torch.compiler.allow_in_graph = allow_in_graph


def torch_disable_kind(fn):
    """How torch's disable directives marked `fn` (a function a frame runs
    or the tracer meets; a bound method is read through __func__):
    "recursive" for torch.compiler.disable's wrapper (recursive=True: the
    frame and every frame it calls run without dynamo), "frame" for the
    recursive=False wrapper and torch's private skip (this frame only), else
    None.  Reads the function's own __dict__: no user code runs."""
    fn = getattr(fn, "__func__", fn)
    attrs = getattr(fn, "__dict__", None) if isinstance(fn, types.FunctionType) else None
    if type(attrs) is not dict or attrs.get("_torchdynamo_disable") is not True:
        return None
    return "recursive" if attrs.get("_torchdynamo_disable_recursive") is True else "frame"


def is_nonrecursive_disable_wrapper(fn):
    """Is `fn` torch.compiler.disable(recursive=False)'s wrapper (whose
    callee's frame must not be compiled, though the frames it calls are)?"""
    fn = getattr(fn, "__func__", fn)
    attrs = getattr(fn, "__dict__", None) if isinstance(fn, types.FunctionType) else None
    return type(attrs) is dict and attrs.get("_torchdynamo_disable") is True \
        and attrs.get("_torchdynamo_disable_recursive") is False


# Codes of recursive=False wrappers seen (torch has one): a frame called
# from one of them runs eagerly (the caller's frame is read on that miss, as
# torch does).  Compared by identity: a code holding a slice constant
# cannot be hashed.
_nonrecursive_wrapper_codes = []


def note_nonrecursive_wrapper(code):
    if not any(c is code for c in _nonrecursive_wrapper_codes):
        _nonrecursive_wrapper_codes.append(code)


def called_by_nonrecursive_wrapper(frame):
    """Is `frame` (the caller of the frame being compiled) a
    recursive=False disable wrapper's?"""
    if frame is None or not _nonrecursive_wrapper_codes:
        return False
    return any(frame.f_code is c for c in _nonrecursive_wrapper_codes)


def skip(fn=None):
    """Never compile `fn`'s frame; calls of it from compiled code break the
    graph. `@dynamo.skip` or `dynamo.skip(fn)`; returns fn."""
    if fn is None:
        return skip
    code = getattr(getattr(fn, "__func__", fn), "__code__", None)
    if not isinstance(code, types.CodeType):
        raise TypeError(f"dynamo.skip expects a Python function, got {type(fn).__name__}")
    _skipped_codes.add(code)
    return fn


def is_skipped_code(code):
    return code in _skipped_codes


def assume_constant_result(fn):
    """Fold calls of `fn` to their result at trace time (computed on the
    real argument values). Returns fn, marked."""
    _check_callable(fn, "assume_constant_result")
    setattr(getattr(fn, "__func__", fn), _CONSTANT_ATTR, True)
    return fn


# torch's own mark for the same directive (torch._dynamo.assume_constant_result
# sets it); libraries set it without importing torch (transformers 5.x on its
# install probes, is_torch_available and the like)
_TORCH_CONSTANT_ATTR = "_dynamo_marked_constant"


def is_assumed_constant(fn):
    fn = getattr(fn, "__func__", fn)
    return getattr(fn, _CONSTANT_ATTR, False) is True or \
        getattr(fn, _TORCH_CONSTANT_ATTR, False) is True
