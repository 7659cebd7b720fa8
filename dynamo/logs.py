"""Logs a user switches on without touching the program: DYNAMO_LOGS and
dynamo.set_logs (torch's TORCH_LOGS / torch._logging.set_logs).

Owns the artifact loggers ("dynamo.<artifact>", each with its own stderr
handler: nothing to set up) and the texts of the two a user reads most:
a recompile (entry, failing guard, expected and actual) and a graph break
(the reason in user words, the user's file:line and source line, a hint:
the words are dynamo.break_hints', carried by the BreakReason).
The compile callback calls `on_compile(record, entries, limit)` once per
compile; nothing here runs on a cache hit, and an artifact that
is off costs one attribute read.

The two channels of decisions and costs (their texts are here too):
- dynamic: a dimension that becomes dynamic after a size change
  (automatic dynamic shapes), each symbol a compile creates for a size,
  and the shape guards a compile adds;
- perf_hints: a graph break inside a loop (one graph per iteration), a
  frame that reached the cache limit (calls no entry matches run
  eagerly) and a recompile storm (a frame that keeps recompiling).

    DYNAMO_LOGS=graph_breaks,recompiles python script.py
    DYNAMO_LOGS=+dynamo         (the "dynamo" logger at DEBUG; "dynamo": INFO)
    dynamo.set_logs(graph_breaks=True, recompiles=True, dynamo=logging.INFO)
"""
import linecache
import logging
import os

ARTIFACTS = ("graph_breaks", "recompiles", "guards", "bytecode", "graph", "graph_code",
             "dynamic", "perf_hints")

_on = set()                 # artifacts switched on
_handlers = {}              # logger name -> the stderr handler this module added


def artifact(name):
    """The logger of artifact `name` ("dynamo.<name>")."""
    return logging.getLogger(f"dynamo.{name}")


def enabled(name):
    return name in _on


def _attach(logger):
    """Give `logger` a stderr handler of its own (once), so it prints with
    no logging setup; it does not propagate (no double lines when the
    application configured the root logger)."""
    from .config import StderrHandler
    if logger.name not in _handlers and not any(isinstance(h, StderrHandler)
                                                for h in logger.handlers):
        handler = StderrHandler()
        logger.addHandler(handler)
        _handlers[logger.name] = handler
    logger.propagate = False


def set_logs(dynamo=None, **artifacts):
    """Switch artifacts on (True) or off (False): graph_breaks, recompiles,
    guards, bytecode, graph, graph_code, dynamic, perf_hints.  `dynamo`: a
    logging level for the "dynamo" logger (printed to stderr).  Unknown
    names raise ValueError listing the known ones."""
    unknown = sorted(set(artifacts) - set(ARTIFACTS))
    if unknown:
        raise ValueError(f"unknown log artifact(s) {', '.join(unknown)}; known: "
                         f"{', '.join(ARTIFACTS)}, and dynamo=<level>")
    for name, on in artifacts.items():
        logger = artifact(name)
        if on:
            _on.add(name)
            _attach(logger)
            logger.setLevel(logging.INFO)
        else:
            _on.discard(name)
            logger.setLevel(logging.CRITICAL + 1)
    if dynamo is not None:
        from . import config
        config.log_level = dynamo
        _attach(logging.getLogger("dynamo"))


def parse(spec):
    """set_logs' arguments of a DYNAMO_LOGS value: comma-separated
    artifacts, "dynamo" (INFO) or "+dynamo" (DEBUG)."""
    kwargs = {}
    for item in (s.strip() for s in spec.split(",")):
        if not item:
            continue
        if item in ("dynamo", "+dynamo"):
            kwargs["dynamo"] = logging.DEBUG if item.startswith("+") else logging.INFO
        elif item.lstrip("+") in ARTIFACTS:
            kwargs[item.lstrip("+")] = True
        else:
            raise ValueError(f"DYNAMO_LOGS: unknown item {item!r}; known: "
                             f"{', '.join(ARTIFACTS)}, dynamo, +dynamo")
    return kwargs


def from_environment():
    """Apply DYNAMO_LOGS, if set (at import of dynamo).  A bad value is a
    warning, not an import failure."""
    spec = os.environ.get("DYNAMO_LOGS")
    if not spec:
        return
    try:
        set_logs(**parse(spec))
    except ValueError as e:
        import warnings
        warnings.warn(str(e), RuntimeWarning)


# ---------------------------------------------------------------- texts

def break_text(code, br):
    """The graph_breaks text of one BreakReason of a compile of `code`
    (its words: dynamo.break_hints, through the BreakReason)."""
    lines = [f"Graph break in {code.co_name} at {br.filename}:{br.lineno}",
             f"  Reason: {reason_text(br)}"]
    stack = list(br.user_stack or ())
    if stack:
        lines.append("  User code traceback:")
        for fs in stack:
            lines.append(f"    File \"{fs.filename}\", line {fs.lineno}, in {fs.name}")
            text = (fs.line or linecache.getline(fs.filename, fs.lineno or 0)).strip()
            if text:
                lines.append(f"      {text}")
    elif br.filename and br.lineno:
        text = linecache.getline(br.filename, br.lineno).strip()
        if text:
            lines.append(f"    {text}")
    lines.append(f"  Hint: {br.hint}")
    return "\n".join(lines)


def reason_text(br):
    """A BreakReason's reason as users read it: the user words, then the
    tracer's own text in parentheses when they differ."""
    meaning = br.meaning or br.reason
    return meaning if meaning == br.reason else f"{meaning} ({br.reason})"


def _function_text(record):
    """`toy`, or `toy (resume function __resume_at_112_1)` for the code
    that continues a function after a graph break."""
    from . import resume
    base = resume.base_code(record.code)
    if base is not None and base is not record.code:
        return f"{base.co_name} (resume function {record.name})"
    return record.name


def recompile_text(record, reason, n_entries, limit):
    """The recompiles text: which function, which entry's guard failed,
    expected and actual (`reason`: convert_frame.describe_failure's)."""
    return (f"Recompiling {_function_text(record)} ({record.filename}:{record.firstlineno}), "
            f"entry {n_entries + 1} of at most {limit}\n"
            f"  triggered by the guard failure: {reason}")


def _where(code):
    """`f (file:line)`, or `f (resume function __resume_at_..) (file:line)`
    for the code that continues f after a graph break."""
    from . import resume
    base = resume.base_code(code)
    name = code.co_name if base is None or base is code else \
        f"{base.co_name} (resume function {code.co_name})"
    return f"{name} ({code.co_filename}:{code.co_firstlineno})"


def on_size_change(code, source_name, dim, was, now):
    """dynamic: automatic dynamic shapes made dimension `dim` of
    `source_name` dynamic for later compiles of `code`."""
    if "dynamic" in _on:
        artifact("dynamic").info(
            "automatic dynamic: %s.size()[%d] of %s changed (%s -> %s): traced as a symbolic "
            "size from this compile on (dynamo.mark_static(t, %d) keeps it static)",
            source_name, dim, _where(code), was, now, dim)


def on_generic_module(code, source_name, cls):
    """recompiles: `source_name`, an nn.Module argument of `code`, came as
    another instance of `cls`: later compiles trace any instance."""
    if "recompiles" in _on:
        artifact("recompiles").info(
            "generic module: %s of %s is another %s instance: traced as any instance of its class "
            "from this compile on (config.generic_module_frames)", source_name, _where(code),
            cls.__qualname__)


def on_symbol(code, symbol, size_text, hint):
    """dynamic: a compile of `code` traces `size_text` as `symbol` (its
    size in this call: `hint`)."""
    if "dynamic" in _on:
        artifact("dynamic").info("create_symbol %s = %s for %s in %s", symbol, hint, size_text,
                                 _where(code))


def on_cache_limit(code, text):
    """perf_hints: `code` reached the cache limit (`text`: the warning)."""
    if "perf_hints" in _on:
        artifact("perf_hints").info("eager fallback at the cache limit (each call no entry "
                                    "matches pays a guard check, then runs in plain Python): %s",
                                    text)


_STORM_AT = 3               # the entry of one code whose compile tells the storm (once)


def _loop_lines(code):
    """The source lines inside a loop of `code`: those of the instructions
    from a backward jump's target to the jump (bytecode.decode_shared: one
    decoding for every CPython version)."""
    from .bytecode import decode_shared
    insts = decode_shared(code)
    lines, line = [], None
    for inst in insts:
        line = inst.starts_line if inst.starts_line is not None else line
        lines.append(line)
    inside = set()
    for i, inst in enumerate(insts):
        target = inst.target
        if target is not None and target.offset is not None and inst.offset is not None \
                and target.offset <= inst.offset:
            inside.update(lines[j] for j in range(i + 1)
                          if insts[j].offset >= target.offset and lines[j] is not None)
    return inside


def _perf_hints(record, entries, limit):
    code = record.code
    frame_breaks = [br for br in record.break_reasons or ()
                    if br.user_stack and br.user_stack[0].filename == code.co_filename]
    loops = _loop_lines(code) if frame_breaks else set()
    for br in frame_breaks:
        if br.user_stack[0].lineno in loops:
            artifact("perf_hints").info(
                "graph break inside a loop of %s at line %d: every iteration ends a graph and "
                "starts another (plus a Python round trip); make the loop body traceable "
                "(Hint: %s) or move the break out of the loop", _where(code),
                br.user_stack[0].lineno, br.hint)
    if record.recompile_reason and entries + 1 == _STORM_AT:
        artifact("perf_hints").info(
            "recompile storm: %s has compiled %d entries (limit %d); the guard failing now: %s. "
            "Each recompile is a full compile: for a size that keeps changing, "
            "dynamo.mark_dynamic(t, dim); for a Python number or string that changes per call, "
            "pass it as a tensor", _where(code), entries + 1, limit, record.recompile_reason)


def on_compile(record, entries=0, limit=0):
    """Emit the artifacts that are on for one compile record (`entries`:
    the code's live entries before it, `limit`: the cache limit)."""
    if not _on:
        return
    from . import debug
    code = record.code
    if "recompiles" in _on and record.recompile_reason:
        artifact("recompiles").info("%s", recompile_text(record, record.recompile_reason,
                                                         entries, limit))
    if "graph_breaks" in _on:
        for br in record.break_reasons or ():
            artifact("graph_breaks").info("%s", break_text(code, br))
    if "dynamic" in _on:
        from .guards import SHAPE_GUARD
        for g in record.guards or ():
            if g.kind == SHAPE_GUARD:
                artifact("dynamic").info("shape guard of %s (%s): %s", record.name, record.id,
                                         g.describe().strip())
    if "perf_hints" in _on:
        _perf_hints(record, entries, limit)
    if "guards" in _on and record.guards:
        artifact("guards").info("GUARDS of %s (%s):\n%s", record.name, record.id,
                                "\n".join(g.describe() for g in record.guards))
    if "bytecode" in _on and getattr(record, "new_code", None) is not None:
        where = f"{record.name} {record.filename} {record.firstlineno}"
        artifact("bytecode").info("ORIGINAL BYTECODE %s\n%s\nMODIFIED BYTECODE %s\n%s", where,
                                  record.original_bytecode.rstrip(), where,
                                  record.modified_bytecode.rstrip())
    for info in record.graphs or ():
        if "graph" in _on:
            artifact("graph").info("%s\n%s", debug.graph_header(info), debug.graph_table(info.gm))
        if "graph_code" in _on:
            artifact("graph_code").info("%s\n%s", info.name, info.gm.code)
