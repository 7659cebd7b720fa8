"""Compile records: one per compile, kept in an in-process registry.

Owns the registry of CompileRecord objects and the frame/compile id counters
([F/C]). explain(), the debug printouts and (later) telemetry read from here;
nothing here touches the C hook.
"""
import dataclasses
import threading
import time
import types
from typing import Any, List, Optional

_lock = threading.Lock()
_records: List["CompileRecord"] = []
_frame_ids = {}          # code object -> frame id; strong keys, cleared by reset()
_compile_counts = {}     # frame id -> compiles so far


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
    status: str = "ok"
    graphs: list = dataclasses.field(default_factory=list)          # GraphInfo
    guards: list = dataclasses.field(default_factory=list)          # dynamo.guards.Guard
    break_reasons: list = dataclasses.field(default_factory=list)   # BreakReason
    original_bytecode: str = ""
    modified_bytecode: str = ""
    new_code: Optional[types.CodeType] = None
    resume_codes: list = dataclasses.field(default_factory=list)
    recompile_reason: Optional[str] = None   # failing guard of the closest entry
    error: Optional[str] = None
    backend: str = ""
    start_time: float = dataclasses.field(default_factory=time.time)
    compile_ns: int = 0
    backend_ns: int = 0

    @property
    def id(self):
        return f"[{self.frame_id}/{self.compile_id}]"

    @property
    def op_count(self):
        return sum(g.op_count for g in self.graphs)


def new_record(code):
    """Allocate the next [F/C] id for `code` and return an empty record."""
    with _lock:
        fid = _frame_ids.get(code)
        if fid is None:
            fid = _frame_ids[code] = len(_frame_ids)
        cid = _compile_counts.get(fid, 0)
        _compile_counts[fid] = cid + 1
    return CompileRecord(frame_id=fid, compile_id=cid, code=code, name=code.co_name,
                         filename=code.co_filename, firstlineno=code.co_firstlineno)


def add(record):
    with _lock:
        _records.append(record)


def all_records():
    """A snapshot list of every record so far, oldest first."""
    with _lock:
        return list(_records)


def mark():
    """An opaque position; records_since(mark) returns what came after it."""
    with _lock:
        return len(_records)


def records_since(position):
    with _lock:
        return list(_records[position:])


def clear():
    with _lock:
        _records.clear()
        _frame_ids.clear()
        _compile_counts.clear()
