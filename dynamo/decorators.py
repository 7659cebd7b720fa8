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
"""
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
