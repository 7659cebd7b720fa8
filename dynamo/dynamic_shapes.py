"""Which tensor dimensions a compile traces as symbolic sizes (issue 24).

Owns: the user's marks on tensors (`mark_dynamic`, `maybe_mark_dynamic`,
`mark_static`: the attributes torch's own functions leave on tensors too,
`_dynamo_dynamic_indices`, `_dynamo_weak_dynamic_indices`,
`_dynamo_static_indices`), the automatic-dynamic memory (per code object,
the (source, dim) pairs whose size changed between compiles, and the int
arguments whose value did), and the decisions `dynamic_dims` and
`dynamic_int` that combine them with the config:

- `config.dynamic_shapes` (alias of torch.compile's dynamic=True): every
  dimension of every tensor input is dynamic from the first compile;
- else a dimension marked static is static; one marked dynamic (strongly
  or weakly) is dynamic; one the automatic memory holds is dynamic when
  `config.automatic_dynamic_shapes`; the rest are static when
  `config.assume_static_by_default`, else dynamic.

An int argument of the frame (`int_source`) whose value changed between
compiles is traced as a symbolic int from the next compile on
(torch.compile's automatic dynamic shapes for ints), when
`config.automatic_dynamic_shapes` and not `config.specialize_int`.

An nn.Module argument is traced as any instance of its class
(`generic_module`, config.generic_module_frames) once it recompiled for
another instance of that class, or from the first compile in a frame
reached from a compiled one (convert_frame._generic_modules_first).

Sizes 0 and 1 are always specialized (the caller's job: a dynamic size
below 2 is traced as a constant, as torch does).  It must not trace or
guard; it is read by the tracer (tracer/variables/builder.py) and written
by the callback on a recompile (convert_frame.py).
"""
import threading

from . import config

_lock = threading.Lock()
# code -> {source name: set of dims}: sizes that changed between compiles
# (the dim None: the value of an int argument; "module": the instance of
# an nn.Module argument)
_automatic = {}


def mark_dynamic(t, index):
    """Trace dimension `index` (an int or a list of ints) of tensor `t` as a
    symbolic size from the first compile that sees `t` on (torch's
    private mark_dynamic: the same attribute)."""
    _mark(t, "_dynamo_dynamic_indices", index)


def maybe_mark_dynamic(t, index):
    """Like mark_dynamic, as a hint: the compile may still specialize it."""
    _mark(t, "_dynamo_weak_dynamic_indices", index)


def mark_static(t, index=None):
    """Keep dimension `index` (all of them when None) of `t` static, even
    under automatic dynamic shapes or config.dynamic_shapes."""
    if index is None:
        index = list(range(t.dim()))
    _mark(t, "_dynamo_static_indices", index)


def _mark(t, attr, index):
    dims = [index] if isinstance(index, int) else list(index)
    for d in dims:
        if not isinstance(d, int) or not -t.dim() <= d < t.dim():
            raise IndexError(f"dimension {d} out of range for a tensor of {t.dim()} dims")
    marks = set(getattr(t, attr, ()))
    marks.update(d % t.dim() for d in dims)
    setattr(t, attr, marks)


def note_size_change(code, source_name, dim):
    """A recompile of `code` was caused by the size of `source_name` in
    dimension `dim`: with config.automatic_dynamic_shapes, later compiles
    of `code` trace that dimension as a symbolic size.  True when that is
    new."""
    if not config.automatic_dynamic_shapes or config.dynamic_shapes is False:
        return False
    with _lock:
        dims = _automatic.setdefault(code, {}).setdefault(source_name, set())
        new = dim not in dims
        dims.add(dim)
    return new


def note_int_change(code, source_name):
    """A recompile of `code` was caused by the value of int argument
    `source_name`: with config.automatic_dynamic_shapes, later compiles of
    `code` trace it as a symbolic int.  True when that is new."""
    return note_size_change(code, source_name, None)


def int_source(source):
    """Can the int read at `source` become a symbolic int by automatic
    dynamic shapes? An argument of the frame. Not an item of a list or
    tuple argument: a resume function's stack holds the interpreter's own
    state there (an iterator's position, a reversed list's index), which
    must stay a constant of the trace; nor an attribute (a module's
    constant)."""
    from .guards import LocalSource
    return isinstance(source, LocalSource)


def note_module_change(code, source_name):
    """A recompile of `code` was caused by the identity of the nn.Module
    argument `source_name`, another instance of the same class: with
    config.generic_module_frames, later compiles of `code` trace it as any
    instance of its class.  True when that is new."""
    if not config.generic_module_frames:
        return False
    with _lock:
        dims = _automatic.setdefault(code, {}).setdefault(source_name, set())
        new = "module" not in dims
        dims.add("module")
    return new


def generic_module(code, source_name):
    """Trace the nn.Module argument read at `source_name` by a frame of
    `code` as any instance of its class?"""
    if not config.generic_module_frames:
        return False
    with _lock:
        return "module" in _automatic.get(code, {}).get(source_name, ())


def dynamic_int(code, source_name):
    """Trace the int argument read at `source_name` by a frame of `code` as
    a symbolic int?"""
    if not config.automatic_dynamic_shapes or config.dynamic_shapes is False or \
            config.specialize_int:
        return False
    with _lock:
        return None in _automatic.get(code, {}).get(source_name, ())


def dynamic_dims(code, source_name, t):
    """The dimensions of tensor `t` (read at `source_name` by a frame of
    `code`) to trace as symbolic sizes: a frozenset."""
    ndim = t.dim()
    static = set(getattr(t, "_dynamo_static_indices", ()))
    if config.dynamic_shapes:
        return frozenset(d for d in range(ndim) if d not in static)
    dims = set(getattr(t, "_dynamo_dynamic_indices", ())) | \
        set(getattr(t, "_dynamo_weak_dynamic_indices", ()))
    if config.automatic_dynamic_shapes and config.dynamic_shapes is not False:
        with _lock:
            dims |= _automatic.get(code, {}).get(source_name, set())
    if not config.assume_static_by_default:
        dims = set(range(ndim))
    return frozenset(d for d in dims if type(d) is int and d not in static and 0 <= d < ndim)


def clear():
    """Forget the automatic-dynamic memory (dynamo.reset())."""
    with _lock:
        _automatic.clear()
