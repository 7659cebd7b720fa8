"""Assembler: list of Instructions + a template code object -> CodeType.

Owns index assignment (consts, names, varnames, localsplus for deref ops),
jump encoding with EXTENDED_ARG layout, CACHE insertion, the exception and
location tables, co_stacksize, and the 3.11 prologue / resume-code helpers.
It never mutates the Instructions it is given.
"""
import dataclasses
import dis
import opcode
import types
from typing import Any, Dict, List, Optional, Sequence

from .analysis import max_stack_depth
from .exntable import RawExnEntry, exntable_encode
from .instruction import (PAIRED_LOCAL_OPS, BACKWARD_JUMPS, ExnTabEntry, CONST_OPS, FREE_OPS,
                          HAVE_ARGUMENT, JUMP_OPS, JUMP_TWIN, LOCAL_OPS,
                          LINETABLE_MERGES, NAME_FLAG_BITS, NAME_OPS, Instruction,
                          binary_op_arg, cache_entries, compare_op_arg,
                          create_instruction, opcode_of, takes_arg)
from .linetable import NO_LOCATION, linetable_encode

_EXTENDED_ARG = opcode.opmap["EXTENDED_ARG"]
_CO_VARARGS = 0x04
_CO_VARKEYWORDS = 0x08
_CO_GENERATOR_LIKE = 0x20 | 0x80 | 0x200   # generator, coroutine, async gen
_MAX_LAYOUT_ROUNDS = 16
# jump offsets are relative to the end of the jump with its inline caches
# (3.12's FOR_ITER and SEND carry one)


# ---------------------------------------------------------------- tables

_VALUE_KEYED = (type(None), type(Ellipsis), bool, int, str, bytes)


def _const_key(value: Any):
    """A dict key equal only for interchangeable constants: 1, 1.0 and True
    differ, -0.0 and 0.0 differ, and anything that is not a plain literal
    (lists, tensors, functions, code objects) is keyed by identity so its
    __eq__ is never called."""
    t = type(value)
    if t in _VALUE_KEYED:
        return (t, value)
    if t in (float, complex):
        return (t, repr(value))
    if t in (tuple, frozenset):
        items = value if t is tuple else sorted(value, key=repr)
        return (t, tuple(_const_key(v) for v in items))
    return ("id", id(value))


class _Table:
    """An append-only name/const table seeded from the template."""

    def __init__(self, seed: Sequence, key=lambda v: v):
        self.items: List = []
        self.index: Dict = {}
        self.key = key
        for v in seed:
            self.items.append(v)
            self.index.setdefault(key(v), len(self.items) - 1)

    def get(self, value) -> int:
        k = self.key(value)
        i = self.index.get(k)
        if i is None:
            i = self.index[k] = len(self.items)
            self.items.append(value)
        return i


def arg_slot_count(code: types.CodeType) -> int:
    """Leading localsplus slots holding arguments: positional, keyword-only,
    *args, **kwargs (the hook's arg_count)."""
    return (code.co_argcount + code.co_kwonlyargcount
            + bool(code.co_flags & _CO_VARARGS) + bool(code.co_flags & _CO_VARKEYWORDS))


def localsplus_names(varnames: Sequence[str], cellvars: Sequence[str],
                     freevars: Sequence[str]) -> List[str]:
    """The 3.11 "fast locals plus" layout deref opargs index into: varnames,
    then cellvars that are not also varnames, then freevars."""
    vs = set(varnames)
    cells_only = [c for c in cellvars if c not in vs]
    return list(varnames) + cells_only + list(freevars)


# ---------------------------------------------------------------- args

def _plain_arg(inst: Instruction, consts, names, varnames,
               localsplus: Dict[str, int]) -> int:
    """Oparg of a non-jump instruction (0 if it takes none)."""
    op = inst.opname
    if op in CONST_OPS:
        return consts.get(inst.argval)
    if op in NAME_FLAG_BITS:             # name index << bits | flags
        bits = NAME_FLAG_BITS[op]
        return (names.get(inst.argval) << bits) | ((inst.arg or 0) & ((1 << bits) - 1))
    if op in NAME_OPS:
        return names.get(inst.argval)
    if op in LOCAL_OPS:
        if isinstance(inst.argval, tuple):   # 3.13's LOAD_FAST_LOAD_FAST & co: two 4-bit indexes
            first, second = (localsplus[n] for n in inst.argval)
            return first << 4 | second
        return localsplus[inst.argval]
    if op in FREE_OPS:
        if inst.argval not in localsplus:
            raise ValueError(f"{op} {inst.argval!r}: not a cell or free var")
        return localsplus[inst.argval]
    if op == "COMPARE_OP" and isinstance(inst.argval, str):
        return compare_op_arg(inst.argval, inst.arg)
    if op == "BINARY_OP" and inst.arg is None:
        return binary_op_arg(inst.argval)
    if not takes_arg(inst.opcode):
        return 0
    if inst.arg is None:
        if isinstance(inst.argval, int):
            return inst.argval
        raise ValueError(f"{inst!r} needs an arg")
    return inst.arg


def _ext_count(arg: int) -> int:
    if not 0 <= arg < 1 << 32:
        raise ValueError(f"oparg {arg} out of range")
    return (arg > 0xFF) + (arg > 0xFFFF) + (arg > 0xFFFFFF)


# ---------------------------------------------------------------- layout

def _jump_opname(inst: Instruction, i: int, t: int) -> str:
    """Opname pointing the right way for a jump at index i to index t."""
    backward = t <= i
    if (inst.opname in BACKWARD_JUMPS) == backward:
        return inst.opname
    twin = JUMP_TWIN.get(inst.opname)
    if twin is None:
        raise ValueError(f"{inst.opname} cannot jump "
                         f"{'backward' if backward else 'forward'}")
    return twin


def _layout(insts, args, opnames, targets):
    """Fixpoint over EXTENDED_ARG counts. Returns (starts, args) where
    starts[i] is the offset of instruction i's first code unit (its first
    EXTENDED_ARG, if any) and starts[n] the code length."""
    n = len(insts)
    ext = [_ext_count(a) if t is None else 0 for a, t in zip(args, targets)]
    caches = [cache_entries(op) for op in opnames]
    for rounds in range(_MAX_LAYOUT_ROUNDS + 1):
        starts, pos = [], 0
        for i in range(n):
            starts.append(pos)
            pos += 2 * (ext[i] + 1 + caches[i])
        starts.append(pos)
        new_ext = list(ext)
        for i, t in enumerate(targets):
            if t is None:
                continue
            after = starts[i] + 2 * (ext[i] + 1 + caches[i])    # the jump's own end
            delta = starts[t] - after if t > i else after - starts[t]
            args[i] = delta // 2
            new_ext[i] = _ext_count(args[i])
            if rounds >= _MAX_LAYOUT_ROUNDS // 2:     # force convergence
                new_ext[i] = max(new_ext[i], ext[i])
        if new_ext == ext:
            return starts, args
        ext = new_ext
    raise AssertionError("EXTENDED_ARG layout did not converge")


def _emit(opnames, args, starts) -> bytes:
    out = bytearray()
    for i, (op, arg) in enumerate(zip(opnames, args)):
        size = (starts[i + 1] - starts[i]) // 2
        n_ext = size - 1 - cache_entries(op)
        for k in range(n_ext, 0, -1):
            out += bytes((_EXTENDED_ARG, (arg >> (8 * k)) & 0xFF))
        out += bytes((opcode_of(op), arg & 0xFF))
        out += bytes(2 * cache_entries(op))
    return bytes(out)


# ---------------------------------------------------------------- tables

def _locations(insts):
    """Location per instruction: positions, else starts_line without
    columns, else the previous instruction's location."""
    out, prev = [], NO_LOCATION
    for inst in insts:
        if inst.positions is not None:
            loc = tuple(inst.positions)
            if loc[0] is None and inst.starts_line is not None:
                loc = (inst.starts_line, inst.starts_line, None, None)
        elif inst.starts_line is not None:
            loc = (inst.starts_line, inst.starts_line, None, None)
        else:
            loc = prev
        out.append(loc)
        prev = loc
    return out


def _exception_rows(insts, starts, index) -> List[RawExnEntry]:
    """Maximal runs of consecutive instructions with the same handler,
    depth and lasti."""
    rows: List[RawExnEntry] = []
    run_key, run_start = None, 0
    for i, inst in enumerate(insts + [None]):
        e = inst.exn_tab_entry if inst is not None else None
        key = None
        if e is not None:
            t = index.get(id(e.target))
            if t is None:
                raise ValueError(f"handler of {inst!r} is not in the list")
            key = (t, e.depth, bool(e.lasti))
        if key == run_key:
            continue
        if run_key is not None:
            t, depth, lasti = run_key
            rows.append(RawExnEntry(starts[run_start], starts[i], starts[t],
                                    depth, lasti))
        run_key, run_start = key, i
    return rows


# ---------------------------------------------------------------- wide pairs

def _split_wide_pairs(insts, localsplus):
    """`insts` with each 3.13 two-local instruction whose slots do not both
    fit 4 bits (a resume code numbers the locals anew) replaced by its two
    one-local instructions.  When there is one, every instruction is
    copied (the input is not mutated) and jumps and handlers that pointed
    at a split instruction point at its first half."""
    wide = {id(i) for i in insts if i.opname in PAIRED_LOCAL_OPS
            and isinstance(i.argval, tuple) and any(localsplus.get(n, 0) > 15 for n in i.argval)}
    if not wide:
        return insts
    new_of, out = {}, []
    for inst in insts:
        if id(inst) in wide:
            halves = [dataclasses.replace(inst, opcode=opcode_of(op), opname=op, arg=None, argval=name,
                                          starts_line=inst.starts_line if k == 0 else None)
                      for k, (op, name) in enumerate(zip(PAIRED_LOCAL_OPS[inst.opname], inst.argval))]
            out += halves
        else:
            halves = [dataclasses.replace(inst)]
            out += halves
        new_of[id(inst)] = halves[0]
    entries = {}
    for c in out:
        if c.target is not None:
            c.target = new_of.get(id(c.target), c.target)   # not in the list: reported later
        e = c.exn_tab_entry
        if e is not None:
            if id(e) not in entries:
                entries[id(e)] = ExnTabEntry(new_of.get(id(e.start), e.start),
                                             new_of.get(id(e.end), e.end),
                                             new_of.get(id(e.target), e.target), e.depth, e.lasti)
            c.exn_tab_entry = entries[id(e)]
    return out


# ---------------------------------------------------------------- assemble

def assemble(instructions: List[Instruction], code_template: types.CodeType,
             **replace) -> types.CodeType:
    """Build a code object from `instructions`.

    `replace` takes code.replace() keywords (co_name, co_qualname,
    co_argcount, co_flags, co_firstlineno, ...). co_consts, co_names and
    co_varnames (from `replace`, else the template) seed the tables; values
    used by the instructions but missing are appended (new locals after the
    existing ones). co_cellvars/co_freevars are taken as given: a deref op on
    another name is a ValueError. co_code, co_linetable, co_exceptiontable,
    co_stacksize and co_nlocals are always computed. ValueError on
    malformed input (unknown target, backward FOR_ITER, stack mismatch).
    """
    get = lambda k: replace.get(k, getattr(code_template, k))
    consts = _Table(get("co_consts"), _const_key)
    names = _Table(get("co_names"))
    varnames = _Table(get("co_varnames"))
    cellvars, freevars = get("co_cellvars"), get("co_freevars")
    # a fast-local op may name a cell or free variable (3.13's LOAD_FAST
    # builds closures): its index is the localsplus slot, not a new local
    derefs = set(cellvars) | set(freevars)
    for inst in instructions:                # locals first: they shift cells
        if inst.opname in LOCAL_OPS:
            for name in (inst.argval if isinstance(inst.argval, tuple) else (inst.argval,)):
                if name not in derefs or name in varnames.index:
                    varnames.get(name)
    plus = localsplus_names(varnames.items, cellvars, freevars)
    localsplus = {name: i for i, name in enumerate(plus)}
    instructions = _split_wide_pairs(instructions, localsplus)

    index = {id(inst): i for i, inst in enumerate(instructions)}
    opnames, args, targets = [], [], []
    for i, inst in enumerate(instructions):
        if inst.opname in JUMP_OPS:
            t = index.get(id(inst.target))
            if t is None:
                raise ValueError(f"jump target of {inst!r} is not in the list")
            opnames.append(_jump_opname(inst, i, t))
            args.append(0)
            targets.append(t)
        else:
            opnames.append(inst.opname)
            args.append(_plain_arg(inst, consts, names, varnames, localsplus))
            targets.append(None)
    starts, args = _layout(instructions, args, opnames, targets)

    firstlineno = get("co_firstlineno")
    spans = [((starts[i + 1] - starts[i]) // 2, loc)
             for i, loc in enumerate(_locations(instructions))]
    replace = dict(replace)
    replace.update(
        co_code=_emit(opnames, args, starts),
        co_consts=tuple(consts.items),
        co_names=tuple(names.items),
        co_varnames=tuple(varnames.items),
        co_nlocals=len(varnames.items),
        # jump twins have the same stack effect: analyse the inputs
        co_stacksize=max_stack_depth(instructions),
        co_linetable=linetable_encode(firstlineno, spans, LINETABLE_MERGES),
        co_exceptiontable=exntable_encode(
            _exception_rows(instructions, starts, index)),
    )
    return code_template.replace(**replace)


# ---------------------------------------------------------------- helpers

def prologue(varnames: Sequence[str], cellvars: Sequence[str],
             freevars: Sequence[str], *, firstlineno: Optional[int] = None,
             generator: bool = False) -> List[Instruction]:
    """The 3.11 prefix a code object with these variables needs:
    COPY_FREE_VARS n, MAKE_CELL per cell (in localsplus order),
    RETURN_GENERATOR + POP_TOP for generator-like code, RESUME 0. The
    MAKE_CELL/COPY_FREE_VARS carry no location; the rest `firstlineno`."""
    none = dis.Positions(None, None, None, None)
    here = none if firstlineno is None else dis.Positions(
        firstlineno, firstlineno, None, None)
    out = []
    if freevars:
        out.append(create_instruction("COPY_FREE_VARS", arg=len(freevars)))
    plus = localsplus_names(varnames, cellvars, freevars)
    cells = set(cellvars)
    out += [create_instruction("MAKE_CELL", argval=name)
            for name in plus[:len(plus) - len(freevars)] if name in cells]
    for inst in out:
        inst.positions = none
    tail = []
    if generator:
        tail += [create_instruction("RETURN_GENERATOR"),
                 create_instruction("POP_TOP")]
    tail.append(create_instruction("RESUME", arg=0))
    for inst in tail:
        inst.positions = here
    return out + tail


PROLOGUE_OPS = frozenset({"COPY_FREE_VARS", "MAKE_CELL", "RETURN_GENERATOR",
                          "POP_TOP", "RESUME", "NOP"})


def strip_prologue(instructions: List[Instruction]) -> List[Instruction]:
    """`instructions` without the leading prologue (up to and including the
    first RESUME 0). Returns the list unchanged if there is no RESUME 0."""
    for i, inst in enumerate(instructions):
        if inst.opname == "RESUME" and (inst.arg or 0) == 0:
            return instructions[i + 1:]
        if inst.opname not in PROLOGUE_OPS:
            break
    return list(instructions)


def code_with_new_body(template: types.CodeType, body: List[Instruction], *,
                       argnames: Sequence[str],
                       name: Optional[str] = None,
                       qualname: Optional[str] = None,
                       cellvars: Optional[Sequence[str]] = None,
                       freevars: Optional[Sequence[str]] = None,
                       firstlineno: Optional[int] = None,
                       flags: Optional[int] = None) -> types.CodeType:
    """A plain function code (e.g. a `__resume_at_<offset>_<n>`) running
    `body` after a fresh prologue, with positional-only-style signature
    `argnames` (e.g. ["___stack0", "___stack1", "x", "y"]: stack values then
    live locals; the caller builds `body` to push the ___stack* names and
    jump into the copied original instructions).

    - co_argcount = len(argnames), no posonly/kwonly, no *args/**kwargs;
      further locals are appended after argnames by assemble().
    - cellvars/freevars default to the template's (a cellvar listed in
      argnames is wrapped into a fresh cell by MAKE_CELL; freevars need the
      original function's __closure__ when making the function).
    - co_consts is rebuilt from scratch starting with None (so the new
      function gets no docstring), co_names from scratch.
    - name/firstlineno/flags default to the template's, qualname to `name`
      if given, else the template's (flags lose
      CO_VARARGS/CO_VARKEYWORDS).
    `body` must not contain a prologue (see strip_prologue()).
    """
    cellvars = tuple(template.co_cellvars if cellvars is None else cellvars)
    freevars = tuple(template.co_freevars if freevars is None else freevars)
    if firstlineno is None:
        firstlineno = template.co_firstlineno
    if flags is None:
        flags = template.co_flags & ~(_CO_VARARGS | _CO_VARKEYWORDS)
    if qualname is None:
        qualname = template.co_qualname if name is None else name
    name = template.co_name if name is None else name
    if len(set(argnames)) != len(argnames):
        raise ValueError(f"duplicate argument names in {argnames}")
    insts = prologue(argnames, cellvars, freevars, firstlineno=firstlineno,
                     generator=bool(flags & _CO_GENERATOR_LIKE)) + list(body)
    return assemble(insts, template, co_argcount=len(argnames),
                    co_posonlyargcount=0, co_kwonlyargcount=0,
                    co_varnames=tuple(argnames), co_cellvars=cellvars,
                    co_freevars=freevars, co_consts=(None,), co_names=(),
                    co_flags=flags, co_name=name, co_qualname=qualname,
                    co_firstlineno=firstlineno)
