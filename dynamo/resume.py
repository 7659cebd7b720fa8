"""__resume_at_<offset>_<n>: the functions that continue a frame after a
graph break.

A resume code is the original code object with a new head: its arguments
are the values left on the stack at the break (`___stack0`, ...) followed by
the live locals — except that for a method using zero-argument `super()`
(a `__class__` free variable) the original first argument comes first, in
slot 0, where super() looks for it (see `lead_local`); its prologue
pushes the stack values back (NULLs where the stack had NULLs) and jumps to `offset` inside an unchanged copy of the
original instructions (exception table included). Same filename and
co_firstlineno as the original. Codes are cached per (code, offset, stack
shape, locals) so repeated compiles reuse the same code object and the
hook's cache entries for it. Nothing here traces or compiles graphs.

No lock guards the caches: each access is one dict operation, atomic under
the GIL (the keys hash in C). A lock held here would deadlock: any Python
frame started while it is held (a finalizer or weakref callback run by
freeing a cleared code, a GC pass at an allocation) may be a compiled
frame, and the hook's callback comes back here (issue 29).
"""
import inspect
import itertools
import types

from .bytecode.instruction import PAIRED_LOCAL_OPS
from .bytecode import (code_with_new_body, create_call, create_instruction, create_load_method,
                       decode, strip_prologue)

_cache = {}                      # key -> (code, name)
_origin = {}                     # resume code -> (original code, {its offset: original offset})
_counter = itertools.count()


# code -> its copy that is never traced (run_original), made on the first
# re-run (a plain dict: its lookups start no Python frame)
_eager_copies = {}


def run_original(code, f_globals, closure, grad_mode, rng_state, args):
    """Run `code` (a frame's original code, or a resume code) eagerly from
    its start with the argument slot values `args`, the closure cells
    `closure` (a tuple or None) and the globals of its frame: what the
    rewritten code does when a graph that a user handler covers raises at
    run time (a "deopt": the graph had no effect the caller can see, so
    the handlers, finally blocks and side effects happen as in eager).
    `grad_mode` and `rng_state` (rng.save()'s; None: the graph draws no random numbers)
    are put back first: the graph may have stopped between an op that set
    them and the one restoring them. The code runs as an uncompiled copy
    (skip-marked: the hook does not trace it; the functions it calls are
    compiled as usual). Returns what the code returns; raises what it
    raises."""
    import torch
    from . import _C
    from .utils import counters
    copy = _eager_copies.get(code)
    if copy is None:
        copy = _eager_copies.setdefault(code, code.replace())
    _C.set_skip(copy)            # again each time: dynamo.reset() drops the mark
    torch._C._set_grad_enabled(grad_mode)
    if rng_state is not None:
        from . import rng
        rng.restore(rng_state)
    counters["frames"]["graph_raised_rerun_eagerly"] += 1
    fn = types.FunctionType(copy, f_globals, code.co_name, None, closure)
    fn.__qualname__ = code.co_qualname
    n, k = code.co_argcount, code.co_kwonlyargcount
    pos, kw = tuple(args[:n]), dict(zip(code.co_varnames[n:n + k], args[n:n + k]))
    i = n + k
    if code.co_flags & inspect.CO_VARARGS:
        pos += tuple(args[i])
        i += 1
    if code.co_flags & inspect.CO_VARKEYWORDS:
        kw.update(args[i])
    return fn(*pos, **kw)


ITER = "iter"      # null_mask entry: the argument is a tuple standing for an iterator
LIST_ITER = "list_iter"   # null_mask entry: the argument is (list, position) of a list iterator
REVERSED_LIST_ITER = "reversed_list_iter"   # the same for reversed(list)


def lead_local(code):
    """Name of the local a resume function of `code` must take as its first
    argument, or None. Zero-argument super() reads the `__class__` cell and
    the frame's first local (slot 0, dereferenced when it is a cell), so a
    resume function of such a method must keep the method's first argument
    in slot 0 and the `__class__` free variable (resume codes keep every
    free variable of the original). `code` is the original function's code
    (resume codes map back to it through `origin`)."""
    if "__class__" in code.co_freevars and code.co_argcount > 0:
        return code.co_varnames[0]
    return None


def resume_code(code, offset, null_mask, local_names, iter_locals=()):
    """(code object, name) of the resume function of `code` at `offset`
    for a stack of len(null_mask) values and `local_names`. A mask entry is
    True for a NULL, False for a value passed as is, ITER for an iterator
    passed as the tuple of its remaining items: the prologue turns it back
    into an iterator (GET_ITER), so when the resume function is traced the
    tuple's items are known and guarded, and a `for` loop that broke keeps
    compiling in it. LIST_ITER: a list iterator passed as (list, position);
    the prologue makes a real iterator over that list at that position;
    REVERSED_LIST_ITER the same for reversed(list) (the position counts down).
    Locals named in `iter_locals` are iterators passed the same way as ITER
    (the tuple of their remaining items; the prologue rebinds each to
    iter(tuple)), so a loop or next() over one continues in the trace.
    When `lead_local(code)` is among `local_names` it is the first
    argument, before the stack values; the others follow in the order
    given."""
    key = (code, offset, tuple(null_mask), tuple(local_names), tuple(iter_locals))
    lead = lead_local(code)
    lead = [lead] if lead in local_names else []
    hit = _cache.get(key)
    if hit is not None:
        return hit
    name = f"__resume_at_{offset}_{next(_counter)}"
    body = strip_prologue(decode(code))
    target = next((inst for inst in body if inst.offset == offset), None)
    if target is None:
        raise ValueError(f"{code.co_name}: no instruction at offset {offset}")
    head, argnames, k = [], [], 0
    for local in iter_locals:
        head += [create_instruction("LOAD_FAST", argval=local), create_instruction("GET_ITER"),
                 create_instruction("STORE_FAST", argval=local)]
    for is_null in null_mask:
        if is_null is True:
            head.append(create_instruction("PUSH_NULL"))
        else:
            argnames.append(f"___stack{k}")
            head.append(create_instruction("LOAD_FAST", argval=argnames[-1]))
            if is_null == ITER:
                head.append(create_instruction("GET_ITER"))
            elif is_null in (LIST_ITER, REVERSED_LIST_ITER):
                head += _list_iter_at(is_null == REVERSED_LIST_ITER)
            k += 1
    head.append(create_instruction("JUMP_FORWARD", target=target))
    rest = [n for n in local_names if n not in lead]
    new = code_with_new_body(code, head + body, argnames=lead + argnames + rest, name=name)
    copied = strip_prologue(decode(new))[len(head):]
    offsets, j = {}, 0
    for b in body:
        offsets[copied[j].offset] = b.offset
        if b.opname in PAIRED_LOCAL_OPS and copied[j].opname != b.opname:
            j += 1          # 3.13: split in two by the assembler (slots above 15)
        j += 1
    # the origin first: a code found in _cache always has one
    _origin.setdefault(new, (code, offsets))
    hit = _cache.setdefault(key, (new, name))
    if hit[0] is not new:           # another thread made the same one first
        _origin.pop(new, None)
    return hit


def _list_iter_at(reverse):
    """(lst, i) -> iter(lst) positioned at i (list_iterator.__setstate__),
    or reversed(lst) (lst.__reversed__(), list_reverseiterator's) with
    `reverse`: the loop continues over the live list, seeing its writes."""
    make = [("LOAD_METHOD", "__reversed__"), ("CALL", 0)] if reverse else [("GET_ITER", None)]
    ops = [("UNPACK_SEQUENCE", 2)] + make + [                     # i, it
           ("COPY", 1), ("LOAD_METHOD", "__setstate__"),         # i, it, meth, it
           ("COPY", 4), ("CALL", 1), ("POP_TOP", None),
           ("SWAP", 2), ("POP_TOP", None)]                       # it
    out = []
    for name, arg in ops:
        if name == "LOAD_METHOD":
            out.append(create_load_method(arg))
        elif name == "CALL":
            out += create_call(arg)
        elif arg is None:
            out.append(create_instruction(name))
        else:
            out.append(create_instruction(name, arg=arg))
    return out


def origin(code, offset):
    """(original code, offset) of instruction `offset` of `code`: a resume
    code maps back to the function it was cut from, so a break inside a
    resume function resumes through a function of the original (a loop that
    breaks on every iteration reuses one resume code instead of nesting a
    new one per iteration)."""
    hit = _origin.get(code)
    if hit is None or offset not in hit[1]:
        return code, offset
    return hit[0], hit[1][offset]


def base_code(code):
    """The original function's code a resume code was cut from (`code`
    itself for any other code)."""
    hit = _origin.get(code)
    return code if hit is None else hit[0]


def make_function(code, f_globals, name):
    """The function object installed as global `name` for a resume code of
    a function without free variables."""
    return types.FunctionType(code, f_globals, name)


def restart_names():
    """Number `__resume_at_<offset>_<n>` from 0 again (convert_frame.restart_names)."""
    global _counter
    _counter = itertools.count()


def clear():
    """Forget cached resume codes (dynamo.reset()). _origin first (its
    values free no code: _cache still holds them); dict.clear() empties the
    dict before it drops the items, so a frame that freeing the codes
    starts (see the module note) finds empty caches and fills both."""
    _origin.clear()
    _cache.clear()
