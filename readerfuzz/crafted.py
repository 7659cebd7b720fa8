"""Crafted snapshot inputs for the reader: hostile headers, loops, huge
counts and long strings (inspect/layout.h).  Used by make_seeds.py (seed
corpus of make fuzz-reader) and tests/test_reader_fuzz.py (replayed under
ASan in make test).  `inputs(base)` yields (name, bytes); `build(...)`
makes a snapshot from scratch.
"""
import os
import random
import re
import struct

HEADER = 4096
with open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "inspect", "layout.h")) as _f:
    _LAYOUT = _f.read()
VERSION = int(re.search(r"#define DT_VERSION\s+(\d+)u", _LAYOUT).group(1))  # DT_VERSION
NODE_COUNTERS = int(re.search(r"#define DT_TREE_NODE_COUNTERS\s+(\d+)u", _LAYOUT).group(1))
CODE, ENTRY, EVENT = (int(re.search(r"sizeof\(%s\) == (\d+)" % t, _LAYOUT).group(1))
                      for t in ("DtCode", "DtEntry", "DtEvent"))
BLOB_MAGIC = 0x31425444
TEXT, RECORD, TREE, COUNTERS = 1, 2, 3, 4

# DtHeader field offsets (layout.h)
OFF = dict(version=8, header_size=12, region_size=16, seq=24, pid=32, flags=64, codes_off=72,
           entries_off=80, events_off=88, blob_off=96, codes_cap=104, entries_cap=108,
           events_cap=112, blob_cap=116, n_codes=120, n_entries=124, n_events=128,
           blob_used=136, proc_start=840)
FMT = dict(version="<I", header_size="<I", region_size="<Q", seq="<Q", pid="<Q", flags="<I",
           codes_off="<Q", entries_off="<Q", events_off="<Q", blob_off="<Q", codes_cap="<I",
           entries_cap="<I", events_cap="<I", blob_cap="<I", n_codes="<I", n_entries="<I",
           n_events="<Q", blob_used="<I", proc_start="<Q")


def proc_start(pid):
    """DtHeader.proc_start of a live process: field 22 of /proc/PID/stat
    (inspect/procid.c), which a planted file must carry to pass for it."""
    with open(f"/proc/{pid}/stat") as f:
        return int(f.read().rsplit(")", 1)[1].split()[19])


def get(data, field):
    return struct.unpack_from(FMT[field], data, OFF[field])[0]


def patch(data, **fields):
    out = bytearray(data)
    for k, v in fields.items():
        struct.pack_into(FMT[k], out, OFF[k], v)
    return bytes(out)


def value(v):
    """DtValue encoding (layout.h)."""
    if isinstance(v, int):
        return b"i" + struct.pack("<q", v)
    if isinstance(v, str):
        b = v.encode()
        return b"s" + struct.pack("<I", len(b)) + b
    return b"l" + struct.pack("<I", len(v)) + b"".join(value(x) for x in v)


class Blobs:
    def __init__(self):
        self.data = bytearray()

    def add(self, kind, payload):
        off = len(self.data)
        self.data += struct.pack("<IHHII", BLOB_MAGIC, kind, 1, len(payload), 0) + payload
        while len(self.data) % 8:
            self.data += b"\0"
        return (off, 16 + len(payload))

    def text(self, s):
        return self.add(TEXT, s.encode())


def code(name=(0, 0), filename=(0, 0), tree=(0, 0), tree_counters=(0, 0), frame_id=0, flags=0):
    c = struct.pack("<II", frame_id, flags) + struct.pack("<7Q", 1, 0, 1, 0, 1, 0, 0)
    c += struct.pack("<II", *name) + struct.pack("<II", *filename) + struct.pack("<II", 1, 1)
    c += struct.pack("<II", *tree) + struct.pack("<II", 0, 4) + struct.pack("<II", *tree_counters)
    c += struct.pack("<Q", 0)
    return c.ljust(CODE, b"\0")


def entry(record=(0, 0), frame_id=0, compile_id=0, code_slot=0, flags=0, n_guards=0,
          fail_counts=(0, 0), last_fail_guard=0xFFFFFFFF):
    e = struct.pack("<IIII", frame_id, compile_id, code_slot, flags) + struct.pack("<4Q", 0, 0, 0, 0)
    e += struct.pack("<II", *record) + struct.pack("<II", *fail_counts)
    e += struct.pack("<II", n_guards, last_fail_guard) + struct.pack("<Q", 0)
    return e.ljust(ENTRY, b"\0")


def event(seq, kind=1, text=(0, 0), code_slot=0, entry_slot=0):
    ev = struct.pack("<QQ", seq, 0) + struct.pack("<6I", kind, 0, 0, code_slot, entry_slot, 0xFFFFFFFF)
    ev += struct.pack("<II", *text)
    return ev.ljust(EVENT, b"\0")


def build(codes=(), entries=(), events=(), blobs=None, n_events=None):
    """A snapshot (compact layout) of the given slots and blob area."""
    blob = bytes(blobs.data) if blobs else b""
    codes_off = HEADER
    entries_off = codes_off + CODE * len(codes)
    events_off = entries_off + ENTRY * len(entries)
    blob_off = events_off + EVENT * len(events)
    size = blob_off + len(blob)
    h = bytearray(HEADER)
    h[0:8] = b"DYNTELEM"
    out = patch(bytes(h), version=VERSION, header_size=HEADER, region_size=size, pid=1, flags=2,
                codes_off=codes_off, entries_off=entries_off, events_off=events_off,
                blob_off=blob_off, codes_cap=len(codes), entries_cap=len(entries),
                events_cap=len(events), blob_cap=len(blob), n_codes=len(codes),
                n_entries=len(entries), n_events=len(events) if n_events is None else n_events,
                blob_used=len(blob))
    return out + b"".join(codes) + b"".join(entries) + b"".join(events) + blob


def record(name="f", breaks=(), resumes=(), guards=(), graphs=()):
    return value([0, 0, "ok", "eager", name, "file.py", 1, 0, 0, 0, "", "", "", "",
                  list(graphs), list(guards), list(breaks), 0, list(resumes)])


def tree_cycles():
    """A guard tree whose parent indexes point at themselves, forward, and
    past the end; depths and counts that lie."""
    b = Blobs()
    nodes = [[0, 0, 0, "", ["t"], "", [], 1, 0, 0],         # root is its own parent
             [1, 2, 99, "= 1", [], "s", ["[0/0]"], 1, 0, 0],  # parent ahead
             [2, 1, 2**31, "= 2", [], "", ["[0/0]"], 1, 0, 0],  # 1 <-> 2 cycle
             [3, 2**40, 3, "", [], "", [], 1, 0, 0],         # past the end
             [4, -7, 0, "", [], "", [], 0, 0, 0]]
    tree = b.add(TREE, value([0, nodes]))
    counters = b.add(COUNTERS, b"\xff" * 8 * NODE_COUNTERS * 5)
    rec = b.add(RECORD, record())
    name = b.text("f")
    return build(codes=[code(name=name, tree=tree, tree_counters=counters)],
                 entries=[entry(record=rec)], events=[event(1)], blobs=b)


def many(n_breaks=60000, n_resumes=60000, n_codes=3000):
    """Counts that make quadratic code hang: many distinct breaks and resume
    names in one record, many codes to match the names against."""
    b = Blobs()
    breaks = [[f"reason {i}", f"file{i}.py", i, []] for i in range(n_breaks)]
    resumes = [[f"__resume_at_{i}_0", i, "after"] for i in range(n_resumes)]
    rec = b.add(RECORD, record(breaks=breaks, resumes=resumes))
    names = [b.text(f"__resume_at_{i}_1") for i in range(n_codes)]
    return build(codes=[code(name=nm, frame_id=i) for i, nm in enumerate(names)],
                 entries=[entry(record=rec)], blobs=b)


def long_strings(n=1 << 20):
    """One code with a 1 MiB name and file name (column fitting in the
    report must not be quadratic)."""
    b = Blobs()
    name = b.text("n" * n)
    filename = b.text("/" + "d/" * (n // 2))
    rec = b.add(RECORD, record(name="n" * 1000))
    return build(codes=[code(name=name, filename=filename)], entries=[entry(record=rec)],
                 events=[event(1, text=name)], blobs=b)


def deep_values():
    """DtValues nested past DT_VALUE_MAX_DEPTH, list counts beyond the payload."""
    b = Blobs()
    deep = b"l\x01\x00\x00\x00" * 40 + value(1)
    rec1 = b.add(RECORD, deep)
    rec2 = b.add(RECORD, b"l\xff\xff\xff\xff" + value(1))
    tree = b.add(TREE, b"l\x02\x00\x00\x00" + value(0) + b"l\xff\xff\xff\x7f")
    return build(codes=[code(tree=tree)], entries=[entry(record=rec1), entry(record=rec2)],
                 blobs=b)


def bad_refs():
    """Refs overlapping the header of another blob, slots out of range,
    events whose slots point nowhere."""
    b = Blobs()
    t = b.text("x")
    rec = b.add(RECORD, record())
    return build(codes=[code(name=(t[0] + 8, 16), filename=(0, 0xFFFFFFFF), tree=rec)],
                 entries=[entry(record=t, code_slot=7, n_guards=2**31, fail_counts=rec,
                                last_fail_guard=5)],
                 events=[event(5, code_slot=99, entry_slot=2**31), event(1, kind=99)], blobs=b)


def inputs(base):
    """(name, bytes) of every crafted input; `base` is a real snapshot."""
    yield "n-events-max", patch(base, n_events=2**64 - 1)
    yield "n-events-max-no-ring", patch(base, n_events=2**64 - 1, events_cap=0)
    yield "region-huge", patch(base, region_size=2**63)
    yield "caps-huge", patch(base, events_cap=2**32 - 1, blob_cap=2**32 - 1)
    yield "seq-odd", patch(base, seq=1)
    yield "tree-cycles", tree_cycles()
    yield "many", many()
    yield "long-strings", long_strings()
    yield "deep-values", deep_values()
    yield "bad-refs", bad_refs()
    yield "empty", build()
    yield "events-only", build(events=[event(2**64 - 1), event(2**64 - 2)], n_events=2**64 - 1)
    rng = random.Random(14)
    for i in range(60):
        c = bytearray(base)
        lo = 0 if i % 4 == 0 else HEADER
        for _ in range(rng.randint(1, 30)):
            c[rng.randrange(lo, len(c))] = rng.randrange(256)
        yield f"mutant-{i}", bytes(c)
