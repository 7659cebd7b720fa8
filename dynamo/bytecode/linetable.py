"""Location table (PEP 626/657 co_linetable) encoder, CPython 3.11-3.13.

Owns the wire format only. Input is a list of (size_in_code_units,
Location) per laid-out instruction; like CPython 3.11, each instruction gets
its own entries (at most 8 code units each; equal neighbours are not merged,
so co_lines() matches the compiler's), or, with `merge` (what 3.12's
compiler does), runs of neighbours with equal locations share entries. Entry header byte:
0x80 | code << 3 | (units - 1). Codes: 15 none, 14 long, 13 no columns,
10..12 one line (line delta code-10), 0..9 short (same line, col < 80).
Knows nothing about Instructions.
"""
from typing import List, Optional, Tuple

# (lineno, end_lineno, col, end_col); lineno None means "no location"
Location = Tuple[Optional[int], Optional[int], Optional[int], Optional[int]]
NO_LOCATION: Location = (None, None, None, None)


def _varint(out: bytearray, val: int) -> None:
    while val >= 64:                     # little-endian 6-bit groups
        out.append(64 | (val & 63))
        val >>= 6
    out.append(val)


def _svarint(out: bytearray, val: int) -> None:
    _varint(out, (-val << 1) | 1 if val < 0 else val << 1)


def _entry(out: bytearray, units: int, loc: Location, prev_line: int) -> int:
    """Append one entry of `units` (1..8) code units; return the new line."""
    line, end_line, col, end_col = loc
    head = lambda code: out.append(0x80 | (code << 3) | (units - 1))
    if line is None:
        head(15)
        return prev_line
    delta = line - prev_line
    if end_line is None:
        end_line = line
    if col is None or end_col is None:
        if end_line == line:
            head(13)
            _svarint(out, delta)
            return line
    elif end_line == line:
        if delta == 0 and col < 80 and 0 <= end_col - col < 16:
            head(col >> 3)
            out.append(((col & 7) << 4) | (end_col - col))
            return line
        if 0 <= delta < 3 and col < 128 and end_col < 128:
            head(10 + delta)
            out.extend((col, end_col))
            return line
    head(14)
    _svarint(out, delta)
    _varint(out, end_line - line)
    _varint(out, 0 if col is None else col + 1)
    _varint(out, 0 if end_col is None else end_col + 1)
    return line


def linetable_encode(firstlineno: int,
                     spans: List[Tuple[int, Location]], merge: bool = False) -> bytes:
    """co_linetable for instructions laid out back to back; `spans` gives
    each instruction's size in code units (with its EXTENDED_ARG prefixes
    and CACHEs) and its location. Line numbers are relative to
    `firstlineno` (co_firstlineno). `merge`: equal neighbours share entries."""
    if merge:
        merged: List[Tuple[int, Location]] = []
        for units, loc in spans:
            if merged and merged[-1][1] == loc:
                merged[-1] = (merged[-1][0] + units, loc)
            else:
                merged.append((units, loc))
        spans = merged
    out = bytearray()
    line = firstlineno
    for units, loc in spans:
        while units > 0:
            chunk = min(units, 8)
            line = _entry(out, chunk, loc, line)
            units -= chunk
    return bytes(out)
