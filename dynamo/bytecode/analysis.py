"""Flow analyses over Instruction lists: successors, stack depth, liveness,
reachability.

Owns the control-flow view of a list (normal edges: fall-through and jump
targets; exceptional edges: from each instruction with an `exn_tab_entry` to
its handler). Works on list indexes; must not mutate instructions.
"""
import dis
from typing import Dict, FrozenSet, List, Optional, Set

from .instruction import (JUMP_OPS, TERMINATORS, takes_arg,
                          UNCONDITIONAL_JUMPS, Instruction)

READ_OPS = frozenset({"LOAD_FAST", "DELETE_FAST",   # DELETE needs it bound
                      "LOAD_FAST_CHECK", "LOAD_FAST_AND_CLEAR"})   # 3.12
WRITE_OPS = frozenset({"STORE_FAST", "DELETE_FAST"})
# 3.13's two-local instructions (argval a pair of names): is each half a
# read (True) or a write (False)?  The first half runs first.
PAIRED_OPS = {"LOAD_FAST_LOAD_FAST": (True, True), "STORE_FAST_LOAD_FAST": (False, True),
              "STORE_FAST_STORE_FAST": (False, False)}
CELL_READ_OPS = frozenset({"LOAD_DEREF", "LOAD_CLOSURE", "LOAD_CLASSDEREF",
                           "DELETE_DEREF"})
CELL_WRITE_OPS = frozenset({"STORE_DEREF", "DELETE_DEREF"})


def _index_map(instructions: List[Instruction]) -> Dict[int, int]:
    return {id(inst): i for i, inst in enumerate(instructions)}


def _index_of(index: Dict[int, int], inst: Instruction, why: str) -> int:
    i = index.get(id(inst))
    if i is None:
        raise ValueError(f"{why} {inst!r} is not in the instruction list")
    return i


def _edges(instructions, i, index):
    """(successor index, taken_as_jump) pairs of instruction `i`."""
    inst = instructions[i]
    out = []
    falls_through = inst.opname not in TERMINATORS \
        and inst.opname not in UNCONDITIONAL_JUMPS
    if falls_through and i + 1 < len(instructions):
        out.append((i + 1, False))
    if inst.opname in JUMP_OPS:
        out.append((_index_of(index, inst.target, "jump target"), True))
    return out


def successors(instructions: List[Instruction], i: int,
               index: Optional[Dict[int, int]] = None) -> List[int]:
    """Normal (non-exceptional) successor indexes of instruction `i`.
    ValueError if a jump target is not in the list."""
    index = index if index is not None else _index_map(instructions)
    return [j for j, _ in _edges(instructions, i, index)]


def handler_index(instructions, i, index) -> Optional[int]:
    """Index of the exception handler covering instruction `i`, or None."""
    entry = instructions[i].exn_tab_entry
    if entry is None:
        return None
    return _index_of(index, entry.target, "exception handler")


def _effect(inst: Instruction, jump: bool) -> int:
    if inst.opname == "RETURN_GENERATOR":
        # dis says 0, but the resumed frame finds the sent value (None) on
        # the stack, which the POP_TOP that follows drops
        return 1
    if not takes_arg(inst.opcode):
        return dis.stack_effect(inst.opcode, None)
    arg = inst.arg if inst.arg is not None else 0
    return dis.stack_effect(inst.opcode, arg, jump=jump)


def stack_depths(instructions: List[Instruction]) -> List[Optional[int]]:
    """Stack depth on entry to each instruction (None if unreachable), from
    depth 0 at index 0. ValueError if two paths disagree or the stack
    underflows (the list is malformed)."""
    index = _index_map(instructions)
    depth: List[Optional[int]] = [None] * len(instructions)

    def reach(j, d, frm):
        if d < 0:
            raise ValueError(f"stack underflow after {instructions[frm]!r}")
        if depth[j] is None:
            depth[j] = d
            work.append(j)
        elif depth[j] != d:
            raise ValueError(
                f"inconsistent stack depth at {instructions[j]!r}: "
                f"{depth[j]} vs {d} (from {instructions[frm]!r})")

    work: List[int] = []
    if instructions:
        depth[0] = 0
        work.append(0)
    while work:
        i = work.pop()
        inst, d = instructions[i], depth[i]
        h = handler_index(instructions, i, index)
        if h is not None:
            entry = inst.exn_tab_entry
            reach(h, entry.depth + int(entry.lasti) + 1, i)
        for j, is_jump in _edges(instructions, i, index):
            reach(j, d + _effect(inst, is_jump), i)
    return depth


def max_stack_depth(instructions: List[Instruction]) -> int:
    """co_stacksize for `instructions`: the highest depth reached before or
    after any reachable instruction, and at handler entries."""
    depths = stack_depths(instructions)
    best = 0
    for inst, d in zip(instructions, depths):
        if d is None:
            continue
        best = max(best, d, d + _effect(inst, False))
        if inst.opname in JUMP_OPS:
            best = max(best, d + _effect(inst, True))
    return best


def reachable(instructions: List[Instruction]) -> Set[int]:
    """Indexes reachable from index 0 through normal and exception edges."""
    index = _index_map(instructions)
    seen: Set[int] = set()
    work = [0] if instructions else []
    while work:
        i = work.pop()
        if i in seen:
            continue
        seen.add(i)
        work.extend(successors(instructions, i, index))
        h = handler_index(instructions, i, index)
        if h is not None:
            work.append(h)
    return seen


def drop_unreachable(instructions: List[Instruction]) -> List[Instruction]:
    """The reachable instructions, in order (same objects)."""
    keep = reachable(instructions)
    return [inst for i, inst in enumerate(instructions) if i in keep]


def liveness(instructions: List[Instruction], *,
             include_cells: bool = False) -> List[FrozenSet[str]]:
    """Live-in set per instruction: local names that may be read before
    being written on some path starting at that instruction (exception
    edges included: a handler's live set is live anywhere it covers).
    With `include_cells`, deref/closure reads and writes of cell/free
    variables count too (by name)."""
    live, by_bit = _live_bits(instructions, include_cells)
    return [frozenset(nm for k, nm in enumerate(by_bit) if bits >> k & 1)
            for bits in live]


def _live_bits(instructions, include_cells):
    """liveness() as one bit mask per instruction and the names by bit."""
    reads = READ_OPS | (CELL_READ_OPS if include_cells else frozenset())
    writes = WRITE_OPS | (CELL_WRITE_OPS if include_cells else frozenset())
    index = _index_map(instructions)
    names: Dict[str, int] = {}
    n = len(instructions)
    gen, kill = [0] * n, [0] * n
    for i, inst in enumerate(instructions):
        if inst.opname in PAIRED_OPS:              # 3.13: two locals, first then second
            first, second = (1 << names.setdefault(n, len(names)) for n in inst.argval)
            read1, read2 = PAIRED_OPS[inst.opname]
            done = 0                               # written by the first half
            if read1:
                gen[i] |= first
            else:
                kill[i] |= first
                done = first
            if read2:
                gen[i] |= second & ~done
            else:
                kill[i] |= second
        elif inst.opname in reads or inst.opname in writes:
            bit = 1 << names.setdefault(inst.argval, len(names))
            gen[i] = bit if inst.opname in reads else 0
            kill[i] = bit if inst.opname in writes else 0
    succ = [successors(instructions, i, index) for i in range(n)]
    handler = [handler_index(instructions, i, index) for i in range(n)]
    live = [0] * n
    changed = True
    while changed:                       # backward fixpoint, reverse order
        changed = False
        for i in range(n - 1, -1, -1):
            out = 0
            for j in succ[i]:
                out |= live[j]
            new = gen[i] | (out & ~kill[i])
            if handler[i] is not None:
                new |= live[handler[i]]
            if new != live[i]:
                live[i] = new
                changed = True
    return live, sorted(names, key=names.get)


def live_locals(instructions: List[Instruction], index: int, *,
                include_cells: bool = False) -> Set[str]:
    """Locals that may be read before written on some path from
    instructions[index] (the live set on entry to that instruction)."""
    live, by_bit = _live_bits(instructions, include_cells)
    bits = live[index]
    return {nm for k, nm in enumerate(by_bit) if bits >> k & 1}
