"""Decoder: a 3.11 code object -> list of mutable Instructions.

Owns the offset-to-object resolution: CACHE and EXTENDED_ARG entries are
dropped (an EXTENDED_ARG's line start and jump-target mark move to the
instruction it prefixes), jump `target`s and exception-table entries point
at Instruction objects. It must not change any instruction's meaning.
"""
import bisect
import dis
import types
import weakref
from typing import Dict, List

from .exntable import exntable_decode
from .instruction import JUMP_OPS, PSEUDO_OPS, ExnTabEntry, Instruction, line_start


def decode(code: types.CodeType) -> List[Instruction]:
    """Instructions of `code` in order, with `offset` (of the instruction
    itself, not of its EXTENDED_ARG prefix), `starts_line`, `positions`,
    `is_jump_target`, `target` (jumps) and `exn_tab_entry` (covered
    instructions; one shared ExnTabEntry object per table row). `arg` is the
    full oparg (LOAD_GLOBAL keeps its push-NULL low bit); KW_NAMES's
    `argval` is the tuple of names. Raises ValueError
    on a jump or handler offset that is not an instruction."""
    insts: List[Instruction] = []
    by_offset: Dict[int, Instruction] = {}   # also maps EXTENDED_ARG offsets
    pending = []                               # EXTENDED_ARG offsets waiting
    carry_line, carry_target = None, False
    cells = frozenset(code.co_cellvars) | frozenset(code.co_freevars)
    for d in dis.get_instructions(code):
        if d.opname == "EXTENDED_ARG":
            pending.append(d.offset)
            carry_line = carry_line if line_start(d) is None else line_start(d)
            carry_target = carry_target or d.is_jump_target
            continue
        argval = d.argval
        if d.opname == "KW_NAMES" and not isinstance(argval, tuple):   # 3.11's dis: UNKNOWN
            argval = code.co_consts[d.arg]
        opname = d.opname
        if opname == "LOAD_FAST" and "LOAD_CLOSURE" in PSEUDO_OPS and argval in cells:
            opname = "LOAD_CLOSURE"              # 3.13: a cell pushed for a closure
        inst = Instruction(d.opcode, opname, d.arg, argval, d.offset,
                           line_start(d) if carry_line is None else carry_line,
                           d.positions, d.is_jump_target or carry_target)
        for off in pending + [d.offset]:
            by_offset[off] = inst
        pending, carry_line, carry_target = [], None, False
        insts.append(inst)
    for inst in insts:
        if inst.opname in JUMP_OPS:
            inst.target = _at(by_offset, inst.argval, inst)
    _attach_exception_table(code, insts, by_offset)
    return insts


# id(code) -> (weak reference to code, instructions, index by id). Keyed
# by identity: a WeakKeyDictionary compares keys with ==, and two code
# objects are == when their bytecode, names and constants match, even in
# different files (a nested function's code then came from the other file).
_SHARED = {}


def decode_shared(code: types.CodeType) -> List[Instruction]:
    """decode(code), made once per code object and shared by every caller:
    the list and its Instructions must be treated as read-only (the tracer
    decodes a function each time it traces or inlines it, once per layer
    for an inlined forward; code that edits instructions calls decode() for
    its own copy). Kept across dynamo.reset(): a decoding is a function of
    the immutable code object alone, and the table holds codes weakly (the
    resume functions of forgotten compiles leave it with their code)."""
    return _shared(code)[1]


def _shared(code):
    key = id(code)
    hit = _SHARED.get(key)
    if hit is None or hit[0]() is not code:
        insts = decode(code)

        def forget(ref, key=key):
            if _SHARED.get(key, (None,))[0] is ref:     # not a newer code at the same address
                del _SHARED[key]
        hit = _SHARED[key] = (weakref.ref(code, forget), insts,
                              {id(inst): i for i, inst in enumerate(insts)})
    return hit


def clear_shared() -> None:
    """Forget every shared decoding (tests; dynamo.reset() keeps them)."""
    _SHARED.clear()


def shared_index(code: types.CodeType) -> Dict[int, int]:
    """id(instruction) -> position, for the list decode_shared(code) returns."""
    return _shared(code)[2]


def _at(by_offset, offset, who):
    inst = by_offset.get(offset)
    if inst is None:
        raise ValueError(f"{who!r}: offset {offset} is not an instruction")
    return inst


def _attach_exception_table(code, insts, by_offset) -> None:
    offsets = [i.offset for i in insts]
    for raw in exntable_decode(code.co_exceptiontable):
        lo = bisect.bisect_left(offsets, raw.start)
        covered = insts[lo:bisect.bisect_left(offsets, raw.end)]
        if not covered:
            continue        # covers only EXTENDED_ARG/CACHE units: nothing
        entry = ExnTabEntry(covered[0], covered[-1],
                            _at(by_offset, raw.target, "handler"),
                            raw.depth, raw.lasti)
        for inst in covered:
            inst.exn_tab_entry = entry
