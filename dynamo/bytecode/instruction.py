"""The mutable instruction model (CPython 3.11 and 3.12) and the constructors codegen uses.

Owns `Instruction`, `ExnTabEntry` and the `create_*` helpers, plus the
opcode classification tables the other bytecode modules share. It must not
compute offsets, indexes or encodings: that is the assembler's job, so an
Instruction built here carries names and values (`argval`) and the
assembler turns them into indexes.

Conventions (the assembler relies on them):
- name/const/local/free ops: `argval` is authoritative, `arg` is recomputed.
  LOAD_GLOBAL keeps one bit of `arg`: `arg & 1` is "push NULL first".
- jumps: `target` (an Instruction) is authoritative, `arg`/`argval` are
  recomputed.
- `positions is None` means "inherit the location of the previous
  instruction"; a Positions of four Nones means "no location".
"""
import dataclasses
import dis
import opcode
import sys
from typing import Any, List, Optional

# ---------------------------------------------------------------- versions
# Every bytecode difference between the CPython versions is a table or a
# flag here; the other bytecode modules test none of sys.version_info.

PY_VERSION = tuple(sys.version_info[:2])
PY312 = PY_VERSION >= (3, 12)
PY313 = PY_VERSION >= (3, 13)
# the compiler merges equal neighbouring locations in co_linetable
LINETABLE_MERGES = PY312
# dis.Instruction.starts_line is a bool, the number is line_number (3.13)
DIS_STARTS_LINE_IS_BOOL = PY313
# opnames the model keeps although this version encodes them as another
# opcode: 3.13's compiler turns LOAD_CLOSURE (push a cell, to build a
# closure) into a LOAD_FAST of the cell's slot; decode() names such a
# LOAD_FAST LOAD_CLOSURE again and the assembler writes LOAD_FAST
PSEUDO_OPS = {"LOAD_CLOSURE": "LOAD_FAST"} if PY313 else {}
# the NULL|self slot of a call is above the callable (3.13: [callable,
# NULL|self, args]), not below it (3.11/3.12: [NULL|method, callable|self, args])
NULL_ABOVE_CALLABLE = PY313
# keyword names of a call: a KW_NAMES before it (3.11/3.12), or a tuple
# pushed last for CALL_KW (3.13)
HAS_CALL_KW = "CALL_KW" in opcode.opmap
# the instructions at a FOR_ITER target that the exhausted loop skips
FOR_ITER_EXIT = ("END_FOR", "POP_TOP") if PY313 else ("END_FOR",) if PY312 else ()
# MAKE_FUNCTION takes no flags: SET_FUNCTION_ATTRIBUTE sets each (3.13)
HAS_SET_FUNCTION_ATTRIBUTE = "SET_FUNCTION_ATTRIBUTE" in opcode.opmap
# 3.13's two-local instructions and the one-local pair each stands for
# (an index above 15 does not fit their 4-bit halves: the assembler splits)
PAIRED_LOCAL_OPS = {"LOAD_FAST_LOAD_FAST": ("LOAD_FAST", "LOAD_FAST"),
                    "STORE_FAST_LOAD_FAST": ("STORE_FAST", "LOAD_FAST"),
                    "STORE_FAST_STORE_FAST": ("STORE_FAST", "STORE_FAST")}
# CALL needs PRECALL before it (3.11 only)
HAS_PRECALL = "PRECALL" in opcode.opmap
# low bits of the oparg that are flags, not the name index
NAME_FLAG_BITS = {"LOAD_GLOBAL": 1}
if PY312:
    NAME_FLAG_BITS.update(LOAD_ATTR=1, LOAD_SUPER_ATTR=2)
# COMPARE_OP oparg: cmp_op index << shift | mask bits (3.12 adds the
# comparison mask the specializer reads: unordered 1, < 2, > 4, == 8;
# 3.13 a "result to bool" bit 16 above it)
COMPARE_SHIFT = 5 if PY313 else 4 if PY312 else 0
_CMP_MASK = {"<": 2, "<=": 10, "==": 8, "!=": 7, ">": 4, ">=": 12}


def compare_op_arg(op: str, arg: Optional[int] = None) -> int:
    """COMPARE_OP oparg for operator string `op`; the flag bits of `arg`
    (a decoded oparg) are kept, else the compiler's are computed."""
    idx = dis.cmp_op.index(op) << COMPARE_SHIFT
    if not COMPARE_SHIFT:
        return idx
    low = (1 << COMPARE_SHIFT) - 1
    return idx | ((arg & low) if arg is not None else _CMP_MASK[op])


def compare_op_name(arg: int) -> str:
    return dis.cmp_op[arg >> COMPARE_SHIFT]




def opcode_of(opname: str) -> int:
    """The opcode number `opname` is encoded as (see PSEUDO_OPS)."""
    return opcode.opmap[PSEUDO_OPS.get(opname, opname)]


def line_start(d: dis.Instruction) -> Optional[int]:
    """The line a dis.Instruction starts, or None (3.13's dis gives a bool
    `starts_line` and the number in `line_number`)."""
    if DIS_STARTS_LINE_IS_BOOL:
        return d.line_number if d.starts_line else None
    return d.starts_line


# ---------------------------------------------------------------- tables

HAVE_ARGUMENT = opcode.HAVE_ARGUMENT
# opcodes that take an oparg (3.13 numbers some below HAVE_ARGUMENT)
_HAS_ARG = frozenset(getattr(opcode, "hasarg", range(HAVE_ARGUMENT, 256)))


def takes_arg(op: int) -> bool:
    """Does opcode number `op` use its oparg?"""
    return op in _HAS_ARG
CONST_OPS = frozenset(opcode.opname[o] for o in opcode.hasconst)
NAME_OPS = frozenset(opcode.opname[o] for o in opcode.hasname)
LOCAL_OPS = frozenset(opcode.opname[o] for o in opcode.haslocal)
FREE_OPS = frozenset(opcode.opname[o] for o in opcode.hasfree) | frozenset(PSEUDO_OPS)
JUMP_OPS = frozenset(opcode.opname[o] for o in opcode.hasjrel + opcode.hasjabs)
BACKWARD_JUMPS = frozenset(n for n in JUMP_OPS if "BACKWARD" in n)
# no fall-through after these
UNCONDITIONAL_JUMPS = frozenset(
    {"JUMP_FORWARD", "JUMP_BACKWARD", "JUMP_BACKWARD_NO_INTERRUPT"})
TERMINATORS = frozenset({"RETURN_VALUE", "RAISE_VARARGS", "RERAISE"}
                        | ({"RETURN_CONST"} if PY312 else set()))
# a jump whose target ends up on the other side swaps to its twin
JUMP_TWIN = {
    "JUMP_FORWARD": "JUMP_BACKWARD",
    "JUMP_BACKWARD": "JUMP_FORWARD",
    "JUMP_BACKWARD_NO_INTERRUPT": "JUMP_FORWARD",
}
for _cond in ("FALSE", "TRUE", "NONE", "NOT_NONE"):   # 3.11 only
    if f"POP_JUMP_FORWARD_IF_{_cond}" in opcode.opmap:
        JUMP_TWIN[f"POP_JUMP_FORWARD_IF_{_cond}"] = f"POP_JUMP_BACKWARD_IF_{_cond}"
        JUMP_TWIN[f"POP_JUMP_BACKWARD_IF_{_cond}"] = f"POP_JUMP_FORWARD_IF_{_cond}"
# the conditional jump on TOS truth / None-ness, by condition
if PY312:
    COND_JUMP = {c: f"POP_JUMP_IF_{c}" for c in ("FALSE", "TRUE", "NONE", "NOT_NONE")}
else:
    COND_JUMP = {c: f"POP_JUMP_FORWARD_IF_{c}" for c in ("FALSE", "TRUE", "NONE", "NOT_NONE")}

_NB_BY_SYMBOL = {sym: i for i, (_, sym) in enumerate(opcode._nb_ops)}
_NB_BY_NAME = {name: i for i, (name, _) in enumerate(opcode._nb_ops)}


def cache_entries(opname: str) -> int:
    """Number of inline CACHE code units that follow `opname`."""
    table = opcode._inline_cache_entries
    if isinstance(table, dict):                  # 3.13: by name
        return table.get(opname, 0)
    op = opcode.opmap[opname]
    return table[op] if op < len(table) else 0


def binary_op_arg(op) -> int:
    """BINARY_OP oparg for `op`: an int (returned as is), a symbol such as
    "+" or "+=", or an NB_* name such as "NB_ADD". KeyError if unknown."""
    if isinstance(op, int):
        return op
    return _NB_BY_SYMBOL[op] if op in _NB_BY_SYMBOL else _NB_BY_NAME[op]


# ---------------------------------------------------------------- model

@dataclasses.dataclass(eq=False)
class ExnTabEntry:
    """One exception-table range as decoded: `start`..`end` are the first and
    last covered Instructions (inclusive), `target` the handler. Every
    covered instruction points at the same ExnTabEntry via `exn_tab_entry`;
    the assembler re-derives ranges from those pointers, not from start/end,
    so codegen may insert or drop instructions inside a range freely."""
    start: "Instruction"
    end: "Instruction"
    target: "Instruction"
    depth: int                   # stack depth to unwind to
    lasti: bool                  # push the offset of the raising instruction

    def __repr__(self):
        return (f"ExnTabEntry({self.start.opname}@{self.start.offset}.."
                f"{self.end.opname}@{self.end.offset} -> "
                f"{self.target.opname}@{self.target.offset}, "
                f"depth={self.depth}, lasti={self.lasti})")


@dataclasses.dataclass(eq=False)
class Instruction:
    """A 3.11 instruction without CACHE/EXTENDED_ARG; identity equality so
    instructions can be jump targets and dict keys."""
    opcode: int
    opname: str
    arg: Optional[int]
    argval: Any
    offset: Optional[int] = None          # of the decoded code; None if new
    starts_line: Optional[int] = None      # set on the first inst of a line
    positions: Optional[dis.Positions] = None   # None: inherit (see module)
    is_jump_target: bool = False
    target: Optional["Instruction"] = None     # jumps only
    exn_tab_entry: Optional[ExnTabEntry] = None

    def __repr__(self):
        tgt = ""
        if self.target is not None:
            tgt = f" -> {self.target.opname}@{self.target.offset}"
        return f"Instruction({self.opname} {self.argval!r}{tgt})"

    def short(self) -> str:
        """One line for debug listings: `offset OPNAME argval`."""
        off = "" if self.offset is None else self.offset
        val = repr(self.argval)
        if self.arg is None and self.argval is None:
            val = ""
        if self.target is not None:
            val = f"to {self.target.opname}@{self.target.offset}"
        return f"{off:>6} {self.opname:<28} {val}"


def format_instructions(instructions: List[Instruction]) -> str:
    """Debug listing, one `Instruction.short()` per line."""
    return "\n".join(inst.short() for inst in instructions)


# ---------------------------------------------------------------- creation

def create_instruction(opname: str, *, arg: Optional[int] = None,
                       argval: Any = dataclasses.MISSING,
                       target: Optional[Instruction] = None,
                       push_null: bool = False) -> Instruction:
    """A new Instruction with no offset and inherited location.

    - name/const/local/free ops: give `argval` (the name or the constant);
      the assembler assigns the index. KW_NAMES takes the tuple of str.
    - LOAD_GLOBAL: `push_null=True` requests the NULL push (arg low bit).
    - COMPARE_OP: argval is the operator string ("<", "==", ...).
    - BINARY_OP: argval may be "+", "+=", "NB_ADD" or the int oparg.
    - jumps: give `target`; arg is computed at assembly.
    - others: `arg` (or an int `argval`) is the oparg.
    ValueError on an unknown opname, a jump without target, or a name op
    whose argval is not a str.
    """
    if opname not in opcode.opmap or opcode_of(opname) > 255:
        raise ValueError(f"unknown opcode {opname!r}")
    if opname in JUMP_OPS:
        if target is None:
            raise ValueError(f"{opname} needs a target instruction")
        return Instruction(opcode_of(opname), opname, None, None,
                           target=target)
    if argval is dataclasses.MISSING:
        argval = arg
    if (opname in NAME_OPS or opname in LOCAL_OPS or opname in FREE_OPS) \
            and not isinstance(argval, str):
        raise ValueError(f"{opname} needs the name as argval, got {argval!r}")
    if opname == "LOAD_GLOBAL":
        arg = int(push_null) if arg is None else (arg | int(push_null))
    elif push_null:
        raise ValueError("push_null only applies to LOAD_GLOBAL")
    elif opname == "BINARY_OP":
        arg = binary_op_arg(argval if arg is None else arg)
        argval = arg
    elif opname == "COMPARE_OP":
        if arg is None:
            arg = compare_op_arg(argval)
        argval = compare_op_name(arg)
    elif arg is None and isinstance(argval, int) and not (
            opname in CONST_OPS or opname in NAME_OPS
            or opname in LOCAL_OPS or opname in FREE_OPS):
        arg = argval
    if not takes_arg(opcode_of(opname)):
        arg, argval = None, None
    return Instruction(opcode_of(opname), opname, arg, argval)


def create_jump(opname: str, target: Instruction) -> Instruction:
    """A jump to `target`; the direction is fixed up by the assembler."""
    return create_instruction(opname, target=target)


def create_load_const(value: Any) -> Instruction:
    """LOAD_CONST of `value` (identity-aware const table at assembly)."""
    return create_instruction("LOAD_CONST", argval=value)


def create_load_global(name: str, push_null: bool = False) -> Instruction:
    """LOAD_GLOBAL `name`, pushing NULL first when `push_null`."""
    return create_instruction("LOAD_GLOBAL", argval=name, push_null=push_null)


def create_rot_n(n: int) -> List[Instruction]:
    """Move TOS down to position n (n >= 1; n == 1 is a no-op) using SWAPs:
    [a, b, ..., X] -> [X, a, b, ...]."""
    return [create_instruction("SWAP", arg=i) for i in range(n, 1, -1)]


def create_dup_top() -> Instruction:
    """Duplicate TOS (COPY 1)."""
    return create_instruction("COPY", arg=1)


def create_call(nargs: int) -> List[Instruction]:
    """The call instructions for `nargs` arguments with the stack
    [NULL|self, callable-ish, args] laid out: PRECALL n; CALL n on 3.11,
    CALL n after."""
    pre = [create_instruction("PRECALL", arg=nargs)] if HAS_PRECALL else []
    return pre + [create_instruction("CALL", arg=nargs)]


def create_load_method(name: str) -> Instruction:
    """Push [method, self] or [NULL, attribute] for obj.name(...): LOAD_METHOD
    on 3.11, LOAD_ATTR with its method bit after."""
    if PY312:
        return create_instruction("LOAD_ATTR", argval=name, arg=1)
    return create_instruction("LOAD_METHOD", argval=name)


def create_call_function(nargs: int, push_null: bool) -> List[Instruction]:
    """Call with stack [callable, arg1..argN] (push_null=True: a NULL is
    pushed and rotated into the NULL|self slot: below the callable, 3.13
    above it) or the call's layout already there (push_null=False).
    Emits [PRECALL n;] CALL n."""
    out = []
    if push_null:
        out.append(create_instruction("PUSH_NULL"))
        out.extend(create_rot_n(nargs + 1 if NULL_ABOVE_CALLABLE else nargs + 2))
    return out + create_call(nargs)


def create_make_function(flags: int) -> List[Instruction]:
    """MAKE_FUNCTION with the flag-selected values (defaults 0x01,
    kwdefaults 0x02, annotations 0x04, closure 0x08) under the code object
    on the stack, in the order MAKE_FUNCTION takes them; 3.13 builds
    the function, then one SET_FUNCTION_ATTRIBUTE per flag, highest
    first."""
    if not HAS_SET_FUNCTION_ATTRIBUTE:
        return [create_instruction("MAKE_FUNCTION", arg=flags)]
    out = [create_instruction("MAKE_FUNCTION")]
    for bit in (0x08, 0x04, 0x02, 0x01):
        if flags & bit:
            out.append(create_instruction("SET_FUNCTION_ATTRIBUTE", arg=bit))
    return out


def create_call_method(nargs: int) -> List[Instruction]:
    """Call after create_load_method (stack [meth|NULL, self|meth, args])."""
    return create_call(nargs)


def create_call_kw(nargs: int, kw_names: tuple) -> List[Instruction]:
    """Call with keyword arguments: the last len(kw_names) of the `nargs`
    arguments are passed by those names (KW_NAMES; [PRECALL;] CALL). The
    NULL/self slot must already be in place. 3.13: the names tuple is
    pushed for CALL_KW."""
    if HAS_CALL_KW:
        return [create_load_const(tuple(kw_names)), create_instruction("CALL_KW", arg=nargs)]
    return [create_instruction("KW_NAMES", argval=tuple(kw_names))] + create_call(nargs)
