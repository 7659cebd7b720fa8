"""Live telemetry: compile records serialized into the process's shared region.

Owns the Python half of the telemetry writer: the DtValue encoding of a
CompileRecord (graphs with fx nodes and tensor metadata, guards, break
reasons with user stacks, both bytecode listings; inspect/layout.h,
"RECORD"), the events of a compile, `refresh` and `save_snapshot`.  The
record's schemas, statuses and event kinds are declared once, in C
(inspect/record.h), and read from _C: records are built by field name. The
region, the counters, the snapshot format, the published guard trees
("TREE", encoded from the built tree in C: core/teletext.c) and the texts of
values and redaction (the same C functions) are C (core/telemetry.c).
`publish` never raises: a telemetry failure must never break compiling.

Guard constants are user data: a `str` argument a guard specializes on
(its expected value, the actual value of a failing call) is copied into
the region and snapshots as text.  With DYNAMO_TELEMETRY_REDACT=1 (read
once by the C writer at import; `REDACT` here) every string literal in
guard texts, tree tests, recompile reasons, break reasons and the
expected/actual of failures is replaced by a placeholder before it reaches
the region.  Bytecode listings and fx args keep the code's own constants.

Nothing here runs on a cache hit: guard-tree node counters reach the region
only when `refresh` copies them (at each publish, at save_snapshot, or when
the application calls it).
"""
import logging
import os
import struct

from . import _C, config

log = logging.getLogger("dynamo")

# DtEvent kinds (inspect/record.h DT_EVENT_KINDS).
EV_COMPILE = _C.EVENT_KINDS["COMPILE"]
EV_BREAK = _C.EVENT_KINDS["BREAK"]
EV_RECOMPILE = _C.EVENT_KINDS["RECOMPILE"]
EV_LIMIT = _C.EVENT_KINDS["LIMIT"]
EV_ERROR = _C.EVENT_KINDS["ERROR"]

# The record's statuses (inspect/record.h DT_REC_STATUSES).
_OK, _LIMIT = _C.RECORD_STATUSES["OK"], _C.RECORD_STATUSES["LIMIT"]
_FAILED = (_C.RECORD_STATUSES["ERROR"], _C.RECORD_STATUSES["UNSUPPORTED"])

_TEXT_MAX = 2000          # args text per fx node, bytes
failures = 0              # publishes that failed (tests, diagnostics)
REDACT = bool(_C._telemetry_info().get("redact"))   # DYNAMO_TELEMETRY_REDACT=1


def _log_init_warning():
    """The writer could not use /dev/shm (no space, a file it did not
    create at its name): one line on the "dynamo" logger; telemetry goes on
    in anonymous memory.  Never raises: importing dynamo must not fail for
    telemetry."""
    try:
        text = _C._telemetry_info().get("warning")
        if text:
            log.warning("dynamo telemetry: %s", text)
    except Exception:  # noqa: BLE001 - a logging failure must not break the import
        pass


_log_init_warning()


def redact_text(text):
    """text with every quoted string literal replaced (when REDACT); a
    subscript key, `local '...'`, `global '...'` and `device(type='...')`
    are kept (names from the code).  core/teletext.c does it."""
    if not REDACT or not text:
        return text
    return _C._telemetry_redact(text)


def enabled():
    """True when this process publishes telemetry (DYNAMO_TELEMETRY != 0)."""
    return _C._telemetry_enabled()


def info():
    """Region facts: enabled, path ('' if anonymous), pid, sizes, counts."""
    return _C._telemetry_info()


def refresh():
    """Copy the current guard-tree node counters (walks, no-match counts) of
    every live code into the region, so that tools reading the process see
    them; returns how many codes. Cost: one walk of each tree, under the
    GIL. Runs at save_snapshot (no longer at each publish: a 3.13 segfault
    inside it, seen twice in the fresh-clone CI during the in-process fuzz
    sample and not reproduced since, is open); call it from a loop of the
    application for fresher live counters. 0 when telemetry is off."""
    return _C._telemetry_refresh() if _C._telemetry_enabled() else 0


def save_snapshot(path):
    """Write this process's telemetry to `path` (mode 0600) in the snapshot
    format `dynamo-inspect --file` and `dynamo-top --file` read. Guard-tree
    node counters are refreshed first. Raises RuntimeError when telemetry
    is off."""
    if not _C._telemetry_enabled():
        raise RuntimeError("dynamo telemetry is off in this process (DYNAMO_TELEMETRY=0)")
    _C._telemetry_refresh()
    _C._telemetry_save(os.fspath(path))


def publish(record):
    """Publish one CompileRecord (any status). Never raises."""
    global failures
    if not _C._telemetry_enabled():
        return
    try:
        ok = record.status == _OK
        _C._telemetry_publish(record.code, record.frame_id, record.compile_id, record.status,
                              int(record.compile_ns), len(record.guards) if ok else 0,
                              encode_record(record), _events(record),
                              max(0, min(int(config.cache_size_limit), 2**32 - 1)))
    except Exception:  # noqa: BLE001 - telemetry must never break compiling
        failures += 1
        log.debug("dynamo telemetry: publishing %s failed", getattr(record, "id", "?"),
                  exc_info=True)


def _events(record):
    where = f"{record.filename}:{record.firstlineno}"
    status = record.status
    if status == _LIMIT:
        return [(EV_LIMIT, redact_text(record.recompile_reason or ""), where)]
    events = [(EV_COMPILE, f"{status}: {record.name}", where)]
    if status == _OK and record.recompile_reason:
        events.append((EV_RECOMPILE, redact_text(record.recompile_reason), where))
    for br in record.break_reasons:
        events.append((EV_BREAK, redact_text(str(br.reason)), f"{br.filename}:{br.lineno}"))
    if status in _FAILED:
        events.append((EV_ERROR, record.error or "", where))
    return events


# ---------------------------------------------------------------- DtValue

def encode(value):
    """DtValue bytes of ints, strs and (nested) lists/tuples (None as "",
    any other value as its str()): _C._telemetry_encode, a tenth of a
    capture's time when it was done here (a record of 850 guards and 290
    nodes is 170,000 values); encode_py is its twin, tested against it."""
    return _C._telemetry_encode(value)


def encode_py(value):
    """encode(value) in Python: the reference the C encoder is tested against."""
    out = []
    _encode(value, out)
    return b"".join(out)


def _encode(value, out):
    if isinstance(value, bool) or isinstance(value, int):
        out.append(b"i" + struct.pack("<q", max(min(int(value), 2**63 - 1), -2**63)))
    elif isinstance(value, str):
        data = value.encode("utf-8", "replace")
        out.append(b"s" + struct.pack("<I", len(data)) + data)
    elif isinstance(value, (list, tuple)):
        out.append(b"l" + struct.pack("<I", len(value)))
        for item in value:          # depth bounded by the schemas (<= 5)
            _encode(item, out)
    else:
        _encode("" if value is None else str(value), out)


def _short(value, limit=120):
    """The short text of a guard value, as the published guard trees write
    it (core/teletext.c)."""
    return _C._telemetry_value_text(value, limit)


# ---------------------------------------------------------------- records

def encode_record(r):
    """The DT_BLOB_RECORD payload of CompileRecord r (schema in layout.h)."""
    return encode(record_value(r))


_SCHEMAS = _C.RECORD_SCHEMAS       # {"RECORD": field names in payload order, "GRAPH": ...}


def _fields(schema, **values):
    """The positional list of `schema` (inspect/record.h: DT_RECORD_FIELDS,
    ...) from its fields given by name.  A field declared there and not
    given here, or given here and not declared, raises: the two cannot drift."""
    names = _SCHEMAS[schema]
    if len(values) != len(names):
        missing = set(names) ^ set(values)
        raise KeyError(f"telemetry {schema} fields out of step with inspect/record.h: {sorted(missing)}")
    return [values[n] for n in names]


def record_value(r):
    """The value encode_record encodes: nested lists of ints and strs."""
    return _fields(
        "RECORD",
        frame_id=r.frame_id, compile_id=r.compile_id, status=r.status, backend=r.backend or "",
        name=r.name, filename=r.filename, firstlineno=r.firstlineno,
        start_ns=int(r.start_time * 1e9), compile_ns=int(r.compile_ns),
        backend_ns=int(r.backend_ns), recompile_reason=redact_text(r.recompile_reason or ""),
        error=r.error or "", original_bytecode=r.original_bytecode or "",
        modified_bytecode=r.modified_bytecode or "",
        graphs=[_graph(g) for g in r.graphs], guards=[_guard(g) for g in r.guards],
        breaks=[_break(b) for b in r.break_reasons], op_count=r.op_count,
        resumes=[_fields("RESUME", name=res.name, offset=res.offset, kind=res.kind)
                 for res in r.resumes],
        context=r.context or "",
    )


def _graph(info):
    nodes = [_node(n) for n in info.gm.graph.nodes]
    note = (getattr(info.gm, "meta", None) or {}).get("backend_choice", "")
    buckets = info.gm.meta.get("ddp_buckets") or []       # backends/ddp.py's cut
    return _fields("GRAPH", name=info.name, op_count=info.op_count, nodes=nodes,
                   backend_note=note,
                   ddp_buckets=[list(b) for b in buckets] if len(buckets) > 1 else [])


def _target_text(node):
    t = node.target
    if isinstance(t, str):
        return t
    mod = getattr(t, "__module__", None) or ""
    name = getattr(t, "__qualname__", None) or getattr(t, "__name__", None) or repr(t)
    if name.startswith("_VariableFunctionsClass."):
        name, mod = t.__name__, "torch"
    mod = {"_operator": "operator", "torch._C._VariableFunctions": "torch",
           "torch._C._nn": "torch.nn.functional"}.get(mod, mod)
    return f"{mod}.{name}" if mod else name


def _tensor_meta(value):
    import torch
    if isinstance(value, torch.Tensor):
        try:
            stride = str(list(value.stride()))
        except RuntimeError:       # sparse and other layouts without strides
            stride = ""
        return str(value.dtype), str(list(value.shape)), stride, str(value.device)
    if isinstance(value, (list, tuple)) and value:
        metas = [_tensor_meta(v) for v in value]
        return tuple("(" + ", ".join(m[k] for m in metas) + ")" for k in range(4))
    return "", "", "", ""


def _node(n):
    args = str(n.args)
    if n.kwargs:
        args += " " + str(n.kwargs)
    if len(args) > _TEXT_MAX:
        args = args[:_TEXT_MAX - 3] + "..."
    dtype, shape, stride, device = _tensor_meta(n.meta.get("example_value", n.meta.get("val")))
    stack = n.meta.get("dynamo_module_stack") or ()     # output_graph.OutputGraph._tag
    module_path, module_class = stack[-1] if stack else ("", "")
    return _fields("NODE", op=n.op, name=n.name, target=_target_text(n), args=args, dtype=dtype,
                   shape=shape, stride=stride, device=device, module_path=module_path,
                   users=[u.name for u in n.users], inputs=[i.name for i in n.all_input_nodes],
                   module_class=module_class, ddp_bucket=_ddp_bucket(n))


def _ddp_bucket(node):
    """1 + the DDP bucket piece of the node (backends/ddp.py), 0 when its
    graph was not cut."""
    piece = node.meta.get("ddp_bucket")
    return 0 if piece is None else piece + 1


def _guard(g):
    from .guards import KIND_NAMES
    try:
        detail = ", ".join(_short(v, 60) for v in g.expected)
    except Exception:  # noqa: BLE001 - a dead weakref or an odd repr: no detail
        detail = ""
    origin = g.origin
    return _fields("GUARD", text=redact_text(g.describe().strip()),
                   kind=KIND_NAMES.get(g.kind, str(g.kind)), source=g.source.name(), detail=detail,
                   origin="" if origin is None else origin.where(),
                   origin_text=redact_text(g.origin_text() if origin is None else origin.line()))


def _break(b):
    stack = [_fields("FRAME", filename=f.filename or "", lineno=f.lineno or 0, name=f.name or "",
                     line=f.line or "")
             for f in (b.user_stack or [])]
    # the user words only where they differ from the reason (an "other" break: the reason)
    meaning = b.meaning if b.meaning and b.meaning != b.reason else ""
    return _fields("BREAK", reason=redact_text(str(b.reason)), filename=b.filename or "",
                   lineno=b.lineno or 0, user_stack=stack, kind=b.kind or "",
                   meaning=meaning, hint=b.hint or "")


def _init():
    import torch
    try:
        from importlib.metadata import version
        dynamo_version = version("dynamo")
    except Exception:  # noqa: BLE001 - not installed as a distribution
        dynamo_version = "0.1.0"
    from .guards import _backend_texts      # the tree's compile-backend tests read as names
    _C._telemetry_set_info(torch.__version__, dynamo_version, torch.nn.Module, _backend_texts)


_init()
