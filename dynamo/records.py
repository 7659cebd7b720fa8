"""Compile records: one per compile, kept in an in-process registry.

Owns the registry of CompileRecord objects and the frame/compile id counters
([F/C]). explain(), the debug printouts and (later) telemetry read from here;
nothing here touches the C hook.

No lock: each access to the registry is one list or dict operation (or
next() of a counter), atomic under the GIL. A lock held here could be held
while a Python frame starts (a finalizer of a freed record, a GC pass at an
allocation) and that frame may compile, coming back here (issue 29).
"""
import dataclasses
import dis
import itertools
import time
import types
from typing import Any, List, Optional

from . import _C

# A record's statuses ({"OK": "ok", "SKIPPED": ..., "ERROR", "LIMIT",
# "UNSUPPORTED"}) and its resume functions' kinds ({"BRANCH": "branch",
# "FALLTHROUGH", "AFTER"}): declared once, in inspect/record.h, read from _C.
STATUS = _C.RECORD_STATUSES
RESUME_KIND = _C.RESUME_KINDS
_records: List["CompileRecord"] = []
_frame_ids = {}          # code object -> frame id; strong keys, cleared by reset()
_next_frame_id = itertools.count()
_compile_counts = {}     # frame id -> itertools.count of its compiles


@dataclasses.dataclass(frozen=True)
class ResumeInfo:
    """A resume function of a compile: `name` (`__resume_at_<offset>_<n>`),
    the bytecode `offset` it resumes at in the function the break was cut
    from, and `kind`: "branch" (the jump target of a conditional jump on a
    tensor), "fallthrough" (the not-taken side of that jump) or "after"
    (after the instruction the break runs eagerly, usually a call)."""
    name: str
    offset: int
    kind: str


def _listing(code):
    from .debug import bytecode_listing
    return bytecode_listing(code)


@dataclasses.dataclass
class CompileRecord:
    """What one compile of one frame produced (or why it produced nothing).

    status: "ok" (entry installed), "skipped" (nothing to compile),
    "error" (tracing failed; runs eagerly), "limit" (cache_size_limit hit),
    "unsupported" (nopython raised).
    """
    frame_id: int
    compile_id: int
    code: types.CodeType
    name: str
    filename: str
    firstlineno: int
    status: str = STATUS["OK"]
    graphs: list = dataclasses.field(default_factory=list)          # GraphInfo
    guards: list = dataclasses.field(default_factory=list)          # dynamo.guards.Guard
    break_reasons: list = dataclasses.field(default_factory=list)   # BreakReason
    # dis listings of `code` and `new_code` ("" unless status is "ok"), made
    # at the first read (telemetry, debug printouts): a compile pays nothing
    # for them when nobody looks (see the properties below)
    _original_bytecode: Optional[str] = dataclasses.field(default=None, repr=False, compare=False)
    _modified_bytecode: Optional[str] = dataclasses.field(default=None, repr=False, compare=False)
    new_code: Optional[types.CodeType] = None
    resume_codes: list = dataclasses.field(default_factory=list)
    recompile_reason: Optional[str] = None   # failing guard of the closest entry
    # who the frame runs for when its own name says little: the function a
    # decorator's wrapper wraps, the nn.Module class of `self`
    # ("GPT2Model.forward"); "" otherwise (convert_frame.frame_context)
    context: str = ""
    error: Optional[str] = None
    backend: str = ""
    start_time: float = dataclasses.field(default_factory=time.time)
    compile_ns: int = 0
    backend_ns: int = 0
    _resumes: Optional[tuple] = dataclasses.field(default=None, repr=False, compare=False)

    @property
    def original_bytecode(self):
        if self._original_bytecode is None:
            self._original_bytecode = _listing(self.code) if self.status == STATUS["OK"] else ""
        return self._original_bytecode

    @original_bytecode.setter
    def original_bytecode(self, text):
        self._original_bytecode = text

    @property
    def modified_bytecode(self):
        if self._modified_bytecode is None:
            self._modified_bytecode = _listing(self.new_code) if self.status == STATUS["OK"] else ""
        return self._modified_bytecode

    @modified_bytecode.setter
    def modified_bytecode(self, text):
        self._modified_bytecode = text

    @property
    def id(self):
        return f"[{self.frame_id}/{self.compile_id}]"

    @property
    def op_count(self):
        return sum(g.op_count for g in self.graphs)

    @property
    def resumes(self):
        """ResumeInfo of each of `resume_codes`, in creation order; worked
        out at the first use (telemetry publishes right after the compile,
        while dynamo.resume still knows where each code was cut from)."""
        codes = tuple(self.resume_codes)
        if self._resumes is None or self._resumes[0] != codes:
            self._resumes = (codes, resume_infos(codes))
        return list(self._resumes[1])


def _resume_point(code):
    """(function the resume code was cut from, offset it resumes at there).
    The head of a resume code ends with a JUMP_FORWARD to the resume point;
    dynamo.resume.origin maps it back (a resume code forgotten by reset()
    maps to itself: the offset is then the one in its name)."""
    from . import resume
    for inst in dis.get_instructions(code):
        if inst.opname == "JUMP_FORWARD":
            base, offset = resume.origin(code, inst.argval)
            if base is not code:
                return base, offset
            break
    tail = code.co_name.rsplit("_", 2)
    return code, int(tail[1]) if len(tail) == 3 and tail[1].isdigit() else -1


def resume_infos(codes):
    """ResumeInfo of resume codes made by one compile.  A break at a
    conditional jump makes two for one jump of the function they were cut
    from: the fall-through first, then the jump target (the order of
    InstructionTranslator.tensor_jump), checked against that function's
    jumps; the other order is taken only when no jump fits the first (a loop
    has a jump each way between the same two offsets).  Any other break
    makes one, which continues after the instruction run eagerly.  Kind ""
    when unknown (a pair whose origin dynamo.reset() forgot)."""
    points = [_resume_point(c) for c in codes]
    kinds = [RESUME_KIND["AFTER"]] if len(codes) == 1 else [""] * len(codes)
    if len(points) == 2 and points[0][0] is points[1][0]:
        insts = list(dis.get_instructions(points[0][0]))
        jumps = {(following.offset, inst.argval) for inst, following in zip(insts, insts[1:])
                 if "JUMP" in inst.opname and "IF" in inst.opname}     # (fall-through, target)
        if (points[0][1], points[1][1]) in jumps:
            kinds = [RESUME_KIND["FALLTHROUGH"], RESUME_KIND["BRANCH"]]
        elif (points[1][1], points[0][1]) in jumps:
            kinds = [RESUME_KIND["BRANCH"], RESUME_KIND["FALLTHROUGH"]]
    return [ResumeInfo(c.co_name, max(off, 0), kind)
            for c, (_base, off), kind in zip(codes, points, kinds)]


def new_record(code):
    """Allocate the next [F/C] id for `code` and return an empty record.
    (Two threads racing on a new code may leave a frame id unused.)"""
    fid = _frame_ids.get(code)
    if fid is None:
        fid = _frame_ids.setdefault(code, next(_next_frame_id))
    counter = _compile_counts.get(fid)
    if counter is None:
        counter = _compile_counts.setdefault(fid, itertools.count())
    cid = next(counter)
    return CompileRecord(frame_id=fid, compile_id=cid, code=code, name=code.co_name,
                         filename=code.co_filename, firstlineno=code.co_firstlineno)


def add(record):
    _records.append(record)


def all_records():
    """A snapshot list of every record so far, oldest first."""
    return list(_records)


def mark():
    """An opaque position; records_since(mark) returns what came after it."""
    return len(_records)


def records_since(position):
    return _records[position:]


def clear():
    """Forget every record and id (dynamo.reset()). The ids first, the
    records last: freeing them may run finalizers that compile, and those
    compiles number from 0 in the new registry. list.clear() empties the
    list before it drops the items."""
    global _next_frame_id
    _frame_ids.clear()
    _compile_counts.clear()
    _next_frame_id = itertools.count()
    _records.clear()
