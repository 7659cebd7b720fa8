"""Plain-Python reference of the C guard tree's decision (guards/tree.c).

Evaluates the guard IR tuples of ARCHITECTURE.md contract 1 directly over a
list of entries (newest first), one entry at a time: no tree.  Tests only:
tests/test_guard_tree.py requires the C tree to agree with `lookup` on
every input.  It must not import dynamo._C (it is the independent side:
its kind numbers are its own, and tests/test_layering.py checks they are
the C module's).

Each guard decomposes into tests (source, property, expected) in this order:
TYPE_MATCH -> type; ID/FUNCTION_MATCH -> id; EQUALS_MATCH -> type, value;
LENGTH -> type, len; TENSOR_MATCH -> type, dtype, device, requires_grad,
dispatch_keys, ndim, size()[i] (static dims), stride()[i]; GRAD_MODE ->
grad_mode; GLOBAL_STATE -> global_state; DICT_KEYS -> type, keys;
NONE_MATCH -> is_none; SAME_OBJECT -> same_object, STORAGE_MATCH ->
same_storage (their expected field here is (other source, same); the report
gives `same`; same_storage exists only when both are tensors with a
storage); BACKEND_MATCH -> backend (the frame's backend key: the expected
key passes, and key 0, RUN mode, passes every entry); SHAPE_GUARD -> shape (expected here
(text, program); the report gives the text, and the actual leaf values as a
tuple: `shape_eval` runs the postfix program with Python's integer
semantics, a missing leaf or a zero divisor failing the guard).  Source kind 6
(STATIC_ATTR) is guards.static_lookup, kind 7 (GENERIC_ATTR)
object.__getattribute__; VALUE compares floats bit for bit
(guards.same_constant).
"""
from collections import OrderedDict
from typing import Any, List, Optional, Sequence, Tuple

import torch

from dynamo.guards import (_NOT_FOUND, KIND_NAMES, Guard, SourceError, _dims, dispatch_keys,
                           global_state_diff, global_state_word, same_constant, static_lookup,
                           storage_key)

LOCAL, GLOBAL, CLOSURE, ATTR, ITEM, NONE, STATIC_ATTR, GENERIC_ATTR = range(8)
(TYPE_MATCH, ID_MATCH, EQUALS_MATCH, LENGTH, TENSOR_MATCH, GRAD_MODE, DICT_KEYS,
 FUNCTION_MATCH, NONE_MATCH, SAME_OBJECT, GLOBAL_STATE, STORAGE_MATCH, BACKEND_MATCH,
 SHAPE_GUARD) = range(14)
# SHAPE_GUARD program steps (guards/ir.h GirShapeOp)
(SH_SIZE, SH_STRIDE, SH_CONST, SH_ADD, SH_SUB, SH_MUL, SH_FLOORDIV, SH_MOD, SH_EQ, SH_NE, SH_LT,
 SH_LE, SH_AND, SH_OR, SH_MIN, SH_MAX, SH_NOT, SH_NEG, SH_INT) = range(19)
SH_LEAVES = (SH_SIZE, SH_STRIDE, SH_INT)
SHAPE_OPS = dict(SIZE=SH_SIZE, STRIDE=SH_STRIDE, CONST=SH_CONST, ADD=SH_ADD, SUB=SH_SUB,
                 MUL=SH_MUL, FLOORDIV=SH_FLOORDIV, MOD=SH_MOD, EQ=SH_EQ, NE=SH_NE, LT=SH_LT,
                 LE=SH_LE, AND=SH_AND, OR=SH_OR, MIN=SH_MIN, MAX=SH_MAX, NOT=SH_NOT, NEG=SH_NEG,
                 INT=SH_INT)
_BINARY = {SH_ADD: lambda a, b: a + b, SH_SUB: lambda a, b: a - b, SH_MUL: lambda a, b: a * b,
           SH_FLOORDIV: lambda a, b: a // b, SH_MOD: lambda a, b: a % b,
           SH_EQ: lambda a, b: int(a == b), SH_NE: lambda a, b: int(a != b),
           SH_LT: lambda a, b: int(a < b), SH_LE: lambda a, b: int(a <= b),
           SH_AND: lambda a, b: int(bool(a) and bool(b)), SH_OR: lambda a, b: int(bool(a) or bool(b)),
           SH_MIN: min, SH_MAX: max}
_INT64 = (-2 ** 63, 2 ** 63 - 1)


class _Missing:
    def __repr__(self):
        return "<missing>"


MISSING = _Missing()        # `actual` of a source that cannot be fetched


def decompose(guard: tuple) -> List[Tuple[tuple, str, Any]]:
    """The (source, property, expected) tests of one guard tuple."""
    kind, src = guard[0], guard[1]
    if kind == TYPE_MATCH:
        return [(src, "type", guard[2])]
    if kind in (ID_MATCH, FUNCTION_MATCH):
        return [(src, "id", guard[2])]
    if kind == EQUALS_MATCH:
        return [(src, "type", type(guard[2])), (src, "value", guard[2])]
    if kind == LENGTH:
        return [(src, "type", guard[2]), (src, "len", guard[3])]
    if kind == GRAD_MODE:
        return [(src, "grad_mode", bool(guard[2]))]
    if kind == GLOBAL_STATE:
        return [(src, "global_state", guard[2])]
    if kind == BACKEND_MATCH:
        return [(src, "backend", guard[2])]
    if kind == DICT_KEYS:
        return [(src, "type", type(guard[2]) if type(guard[2]) is OrderedDict else dict),
                (src, "keys", tuple(guard[2]))]
    if kind == NONE_MATCH:
        return [(src, "is_none", bool(guard[2]))]
    if kind == SAME_OBJECT:
        return [(src, "same_object", (guard[2], bool(guard[3])))]
    if kind == STORAGE_MATCH:
        return [(src, "same_storage", (guard[2], bool(guard[3])))]
    if kind == SHAPE_GUARD:
        return [(src, "shape", (guard[2], guard[3]))]
    if kind == TENSOR_MATCH:
        cls, dtype, device, rg, keys, ndim, sizes, strides = guard[2:]
        tests = [(src, "type", cls), (src, "dtype", dtype), (src, "device", device),
                 (src, "requires_grad", bool(rg)), (src, "dispatch_keys", keys),
                 (src, "ndim", ndim)]
        for name, dims in (("size()", sizes), ("stride()", strides)):
            for i, d in enumerate(dims or ()):
                if d is not None:
                    tests.append((src, f"{name}[{i}]", d))
        return tests
    raise ValueError(f"unknown guard kind {kind}")


class Frame:
    """The values the guards see: f_locals (slot i = i-th value), globals
    with the builtins fallback, closure cells; `backend`: the caller's
    backend key (0: any)."""

    def __init__(self, f_locals, f_globals, f_builtins, closure=None, backend=0):
        self.backend = backend
        self.slots = list(f_locals.values())
        self.f_globals, self.f_builtins, self.closure = f_globals, f_builtins, closure
        self.memo = {}

    def fetch(self, src: tuple):
        if src not in self.memo:
            self.memo[src] = self._fetch(src)
        return self.memo[src]

    def _fetch(self, src):
        kind = src[0]
        if kind == LOCAL:
            return self.slots[src[1]] if src[1] < len(self.slots) else MISSING
        if kind == GLOBAL:
            for ns in (self.f_globals, self.f_builtins):
                if src[1] in ns:
                    return ns[src[1]]
            return MISSING
        if kind == CLOSURE:
            try:
                return self.closure[src[1]].cell_contents
            except (IndexError, TypeError, ValueError):
                return MISSING
        if kind == NONE:
            return None
        base = self.fetch(src[1])
        if base is MISSING:
            return MISSING
        if kind == ATTR:
            try:
                return getattr(base, src[2])
            except AttributeError:
                return MISSING
        if kind == STATIC_ATTR:
            found = static_lookup(base, src[2])
            return MISSING if found is _NOT_FOUND else found
        if kind == GENERIC_ATTR:
            try:
                return object.__getattribute__(base, src[2])
            except AttributeError:
                return MISSING
        key = src[2]
        if type(base) in (list, tuple) and type(key) is int:
            return base[key] if -len(base) <= key < len(base) else MISSING
        try:
            return base[key]
        except (KeyError, IndexError, TypeError):
            return MISSING


def _tensor_prop(v, prop):
    """(available, value) of a tensor property of v (sizes/strides a tensor
    does not have, like a sparse tensor's strides, are unavailable)."""
    if not isinstance(v, torch.Tensor):
        return False, None
    if prop == "dtype":
        return True, v.dtype
    if prop == "device":
        return True, v.device
    if prop == "requires_grad":
        return True, v.requires_grad
    if prop == "dispatch_keys":
        return True, dispatch_keys(v)
    if prop == "ndim":
        return True, v.dim()
    name, i = prop.split("[")
    i = int(i[:-1])
    if i >= v.dim():
        return False, None
    try:
        return True, (v.size(i) if name == "size()" else v.stride(i))
    except RuntimeError:
        return False, None


def _same_storage(v, other):
    """Do tensors v and other view one storage? None when that cannot be
    said (not both tensors with a storage, or other missing)."""
    if other is MISSING or not isinstance(v, torch.Tensor) or not isinstance(other, torch.Tensor):
        return None
    a, b = storage_key(v), storage_key(other)
    return None if a is None or b is None else a == b


def _shape_leaf(step, frame):
    """size()[dim] / stride()[dim] of a SHAPE_GUARD leaf, or the value of an
    INT leaf (an exact int within int64); None when absent."""
    v = frame.fetch(step[1])
    if v is MISSING:
        return None
    if step[0] == SH_INT:
        return v if type(v) is int and _INT64[0] <= v <= _INT64[1] else None
    ok, value = _tensor_prop(v, f"{'size()' if step[0] == SH_SIZE else 'stride()'}[{step[2]}]")
    return value if ok else None


def shape_eval(program, frame: Frame) -> bool:
    """Does the SHAPE_GUARD program yield non-zero?  Int64 arithmetic as the
    C walk does it: an overflow, a zero divisor or a missing leaf fails."""
    stack = []
    for step in program:
        op = step[0]
        if op in SH_LEAVES:
            value = _shape_leaf(step, frame)
            if value is None:
                return False
            stack.append(value)
            continue
        if op == SH_CONST:
            stack.append(step[1])
            continue
        if op == SH_NOT:
            stack[-1] = int(stack[-1] == 0)
            continue
        if op == SH_NEG:
            stack[-1] = -stack[-1]
        else:
            b = stack.pop()
            if op in (SH_FLOORDIV, SH_MOD) and b == 0:
                return False
            stack[-1] = _BINARY[op](stack[-1], b)
        if not _INT64[0] <= stack[-1] <= _INT64[1]:
            return False
    return stack[0] != 0


def actual(test, frame: Frame):
    """The property's value in this frame (None when it does not exist)."""
    src, prop, _ = test
    if prop == "shape":
        return tuple(_shape_leaf(step, frame) for step in test[2][1]
                     if step[0] in SH_LEAVES)
    v = frame.fetch(src)
    if v is MISSING:
        return MISSING
    if prop == "type":
        return type(v)
    if prop in ("id", "value"):
        return v
    if prop == "is_none":
        return v is None
    if prop == "grad_mode":
        return torch.is_grad_enabled()
    if prop == "global_state":
        return global_state_word()
    if prop == "backend":
        return frame.backend
    if prop == "same_object":
        other = frame.fetch(test[2][0])
        return None if other is MISSING else v is other
    if prop == "same_storage":
        return _same_storage(v, frame.fetch(test[2][0]))
    if prop == "len":
        return len(v)
    if prop == "keys":
        return tuple(v) if type(v) in (dict, OrderedDict) else v
    return _tensor_prop(v, prop)[1]


def value_equal(v, e) -> bool:
    """EQUALS_MATCH's value test: same type, floats bit for bit, and for
    exact tuples the same rule item by item (stricter than ==: (1.0,) does
    not match (1,), -0.0 does not match 0.0)."""
    return same_constant(v, e)


def passes(test, frame: Frame) -> bool:
    src, prop, expected = test
    v = frame.fetch(src)
    if v is MISSING:
        return False
    if prop == "shape":
        return shape_eval(expected[1], frame)
    if prop == "type":
        return type(v) is expected
    if prop == "id":
        return v is expected
    if prop == "value":
        return value_equal(v, expected)
    if prop == "is_none":
        return (v is None) == expected
    if prop == "grad_mode":
        return torch.is_grad_enabled() == expected
    if prop == "global_state":
        return global_state_word() == expected
    if prop == "backend":
        return frame.backend in (expected, 0)
    if prop == "same_object":
        other = frame.fetch(expected[0])
        return other is not MISSING and (v is other) == expected[1]
    if prop == "same_storage":
        same = _same_storage(v, frame.fetch(expected[0]))
        return same is not None and same == expected[1]
    if prop == "len":
        return len(v) == expected
    if prop == "keys":
        return type(v) in (dict, OrderedDict) and tuple(v) == expected   # the type: the "type" test
    ok, value = _tensor_prop(v, prop)
    if not ok:
        return False
    if prop == "dtype":
        return value is expected
    return value == expected


def entry_tests(guards: Sequence[tuple]):
    """[(guard_index, test)] of one entry, in guard order."""
    return [(g, t) for g, guard in enumerate(guards) for t in decompose(guard)]


def first_failure(tests, frame: Frame) -> int:
    """Position of the first failing test, len(tests) when all pass."""
    for j, (_, t) in enumerate(tests):
        if not passes(t, frame):
            return j
    return len(tests)


def lookup(entries: Sequence[Tuple[Sequence[tuple], Any]], f_locals, f_globals, f_builtins,
           closure=None, backend=0) -> Tuple[int, Optional[list]]:
    """(hit, failures) as the C side defines them: hit = index of the newest
    entry whose guards all pass, else -1 with failures = the closest entry
    (longest passing prefix of its tests; ties: newest) as (payload,
    guard_index, property, expected, actual), then (payload, guard_index) of
    every other entry, newest first."""
    frame = Frame(f_locals, f_globals, f_builtins, closure, backend)
    per_entry = [entry_tests(guards) for guards, _ in entries]
    fails = []
    for i, tests in enumerate(per_entry):
        j = first_failure(tests, frame)
        if j == len(tests):
            return i, None
        fails.append(j)
    if not entries:
        return -1, []
    closest = max(range(len(entries)), key=lambda i: (fails[i], -i))
    out = []
    for i in [closest] + [i for i in range(len(entries)) if i != closest]:
        g, test = per_entry[i][fails[i]]
        payload = entries[i][1]
        if i == closest:
            expected = test[2][1] if test[1] in ("same_object", "same_storage") else \
                test[2][0] if test[1] == "shape" else test[2]
            out.append((payload, g, test[1], expected, actual(test, frame)))
        else:
            out.append((payload, g))
    return -1, out


# ---------------------------------------------------------------- over Guard objects

# The explanation of one recorded Guard's failure, and the evaluation of a
# guard list, in plain Python: what dynamo.guards held as check / evaluate /
# explain_failure while the recompile reasons still came from here (they
# come from the C miss report alone now).  Tests only.

def check(guard: Guard, value) -> Optional[str]:
    """None if `value` passes `guard`, else "expected X, actual Y" text."""
    k, exp = guard.kind, guard.expected
    if k == TYPE_MATCH:
        return None if type(value) is exp[0] else f"expected type {exp[0].__name__}, actual {type(value).__name__}"
    if k in (ID_MATCH, FUNCTION_MATCH):
        return None if value is exp[0] else f"expected {exp[0]!r:.60}, actual {value!r:.60}"
    if k == SAME_OBJECT:          # value: (this value, the other source's value)
        same = value[0] is value[1]
        return None if same == exp[1] else \
            f"expected {'the same object as' if exp[1] else 'another object than'} {exp[0].name()}"
    if k == STORAGE_MATCH:        # value: (this value, the other source's value)
        same = _same_storage(*value)
        return None if same == exp[1] else \
            f"expected {'a storage shared with' if exp[1] else 'no storage shared with'} {exp[0].name()}"
    if k == EQUALS_MATCH:
        ok = same_constant(value, exp[0])
        return None if ok else f"expected {exp[0]!r}, actual {value!r}"
    if k == LENGTH:
        if type(value) is not exp[0]:
            return f"expected type {exp[0].__name__}, actual {type(value).__name__}"
        return None if len(value) == exp[1] else f"expected length {exp[1]}, actual {len(value)}"
    if k == DICT_KEYS:                          # keys given as an OrderedDict: one
        want = OrderedDict if type(exp[0]) is OrderedDict else dict
        if type(value) is not want:
            return f"expected {want.__name__}, actual {type(value).__name__}"
        keys = tuple(exp[0])
        return None if tuple(value) == keys else f"expected keys {keys}, actual {tuple(value)}"
    if k == NONE_MATCH:
        return None if (value is None) == exp[0] else f"expected {'None' if exp[0] else 'not None'}, actual {value!r:.60}"
    if k == GRAD_MODE:
        now = torch.is_grad_enabled()
        return None if now == exp[0] else f"expected grad mode {exp[0]}, actual {now}"
    if k == GLOBAL_STATE:
        now = global_state_word()
        return None if now == exp[0] else global_state_diff(exp[0], now)
    if k == TENSOR_MATCH:
        return _check_tensor(exp, value)
    return f"unknown guard kind {k}"


_TENSOR_FIELDS = ("type", "dtype", "device", "requires_grad", "dispatch_keys",
                  "ndim", "size()", "stride()")


def _check_tensor(exp, value) -> Optional[str]:
    cls, dtype, device, requires_grad, keys, ndim, sizes, strides = exp
    if type(value) is not cls:
        return f"type: expected {cls.__name__}, actual {type(value).__name__}"
    actual = (cls, value.dtype, value.device, value.requires_grad,
              dispatch_keys(value), value.dim())
    for field, e, a in zip(_TENSOR_FIELDS[1:6], exp[1:6], actual[1:]):
        if e != a:
            return f"{field}: expected {e}, actual {a}"
    for field, seq, method in (("size()", sizes, value.size), ("stride()", strides, value.stride)):
        if seq is None:
            continue
        got = _dims(method)
        if got is None:
            return f"{field}: expected {seq}, actual None"
        for i, (e, a) in enumerate(zip(seq, got)):
            if e != a:
                return f"{field}[{i}]: expected {e}, actual {a}"
    return None


def _fetch(guard, f_locals, f_globals, f_builtins, closure):
    value = guard.source.get(f_locals, f_globals, f_builtins, closure)
    if guard.kind in (SAME_OBJECT, STORAGE_MATCH):
        return value, guard.expected[0].get(f_locals, f_globals, f_builtins, closure)
    return value


def evaluate(guards: List[Guard], f_locals, f_globals, f_builtins, closure) -> int:
    """Index of the first failing guard, or -1 if all pass. A source that
    cannot be fetched fails its guard."""
    for i, g in enumerate(guards):
        try:
            value = _fetch(g, f_locals, f_globals, f_builtins, closure)
        except SourceError:
            return i
        if check(g, value) is not None:
            return i
    return -1


def explain_failure(guard: Guard, *frame) -> str:
    """Why `guard` fails, as "L['x'].size()[0]: expected 4, actual 8".

    Call as explain_failure(guard, value) or explain_failure(guard, f_locals,
    f_globals, f_builtins, closure)."""
    if len(frame) == 1:
        value = frame[0]
    else:
        try:
            value = _fetch(guard, *frame)
        except SourceError:
            return f"{guard.source.name()}: missing"
    why = check(guard, value)
    if why is None:
        return f"{guard.source.name()}: {KIND_NAMES[guard.kind]} passes"
    if guard.kind == TENSOR_MATCH and ":" in why:
        field, rest = why.split(":", 1)
        if field == "type":
            return f"type({guard.source.name()}):{rest}"
        return f"{guard.source.name()}.{field}:{rest}"
    return f"{guard.source.name()} ({KIND_NAMES[guard.kind]}): {why}"
