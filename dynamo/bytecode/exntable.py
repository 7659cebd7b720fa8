"""3.11 exception table (co_exceptiontable) codec on byte offsets.

Owns the wire format only: a sequence of entries, each four varints
(start, length, target in code units; depth << 1 | lasti), the first byte of
an entry flagged with 0x80, varints big-endian in 6-bit groups with 0x40 as
"more follows". It knows nothing about Instructions (see decode/assemble).
"""
import dataclasses
from typing import Iterator, List


@dataclasses.dataclass(frozen=True)
class RawExnEntry:
    """A table row in byte offsets: [start, end) is protected, end exclusive."""
    start: int
    end: int
    target: int
    depth: int
    lasti: bool


def _read_varint(it: Iterator[int]) -> int:
    b = next(it)
    val = b & 63
    while b & 64:             # more groups follow?
        b = next(it)
        val = (val << 6) | (b & 63)
    return val


def exntable_decode(table: bytes) -> List[RawExnEntry]:
    """Parse co_exceptiontable into RawExnEntry rows (in table order).
    ValueError on a truncated table."""
    it = iter(table)
    out = []
    while True:
        try:
            start = _read_varint(it)
        except StopIteration:
            return out
        try:
            length = _read_varint(it)
            target = _read_varint(it)
            dl = _read_varint(it)
        except StopIteration:
            raise ValueError("truncated exception table") from None
        out.append(RawExnEntry(start * 2, (start + length) * 2, target * 2,
                               dl >> 1, bool(dl & 1)))


def _write_varint(out: bytearray, val: int, first: bool) -> None:
    groups = [val & 63]
    val >>= 6
    while val:
        groups.append(val & 63)
        val >>= 6
    groups.reverse()
    for i, g in enumerate(groups):
        if i + 1 < len(groups):
            g |= 64
        if first and i == 0:
            g |= 128
        out.append(g)


def exntable_encode(entries: List[RawExnEntry]) -> bytes:
    """Encode rows (byte offsets, even, end > start) into co_exceptiontable.
    Rows must be sorted by start and must not overlap (CPython searches the
    table in order). ValueError otherwise."""
    out = bytearray()
    prev_end = 0
    for e in entries:
        if e.start % 2 or e.end % 2 or e.target % 2 or e.end <= e.start:
            raise ValueError(f"bad exception table row {e}")
        if e.start < prev_end:
            raise ValueError(f"overlapping exception table rows at {e.start}")
        prev_end = e.end
        _write_varint(out, e.start // 2, True)
        _write_varint(out, (e.end - e.start) // 2, False)
        _write_varint(out, e.target // 2, False)
        _write_varint(out, (e.depth << 1) | int(e.lasti), False)
    return bytes(out)
