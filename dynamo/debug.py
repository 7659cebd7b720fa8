"""config.debug printouts: graphs, original/modified bytecode and guards.

Formats one CompileRecord the way the seeds show it:

    __compiled_fn_0 <eval_with_key>.1
    opcode ...  (the fx graph as a table)
    ORIGINAL BYTECODE toy_example example.py 9
    <dis listing>
    MODIFIED BYTECODE toy_example example.py 9
    <dis listing>
    GUARDS:
     - local 'a' TENSOR_MATCH

Only formats and prints; never changes a record.
"""
import dis
import io
import logging
import types

log = logging.getLogger("dynamo")


def bytecode_listing(code):
    """`dis` listing of `code` as a string ('' for None). Constants that
    are not literals, code or functions are shown by their short text
    (_C._telemetry_value_text: a module by class, a tensor by sizes, a
    container by type and length): generated code loads the frame's
    globals dict as a constant, whose repr was 140 KB of a listing and a
    tenth of a capture's time."""
    if code is None:
        return ""
    consts = tuple(_ShortConst.of(c) for c in code.co_consts)
    if any(type(c) is _ShortConst for c in consts):
        code = code.replace(co_consts=consts)
    buf = io.StringIO()
    dis.dis(code, file=buf, depth=0)
    return buf.getvalue()


_LITERALS = (str, bytes, int, float, complex, bool, type(None), type(...), types.CodeType,
             types.FunctionType, types.BuiltinFunctionType, type)


def _literal(value):
    """A constant dis may show as it is: a literal, code, a function or class,
    or a tuple/frozenset of those (a compiler's constants, bounded by the
    code's size)."""
    return isinstance(value, _LITERALS) or (type(value) in (tuple, frozenset)
                                            and all(_literal(v) for v in value))


class _ShortConst:
    """A listing's stand-in for a constant: its repr is the short text."""
    __slots__ = ("text",)

    def __init__(self, text):
        self.text = text

    def __repr__(self):
        return self.text

    @classmethod
    def of(cls, value):
        if _literal(value):
            return value
        if isinstance(value, (dict, list, set, frozenset, tuple)):
            return cls(f"<{type(value).__name__}, {len(value)} items>")
        from . import _C
        try:
            return cls(_C._telemetry_value_text(value, 80))
        except Exception:  # noqa: BLE001 - an odd repr: the type is enough
            return cls(f"<{type(value).__qualname__}>")


def graph_table(gm):
    """The fx graph of `gm` as an `opcode name target args kwargs` table."""
    from tabulate import tabulate
    rows = [[n.op, n.name, n.target, n.args, n.kwargs] for n in gm.graph.nodes]
    return tabulate(rows, headers=["opcode", "name", "target", "args", "kwargs"])


def graph_header(info):
    code = getattr(getattr(info.gm, "forward", None), "__code__", None)
    where = f" {code.co_filename}" if code is not None else ""
    return f"{info.name}{where}"


def guard_line(guard):
    """A guard's listing line with its provenance as a trailing comment:
    " - local 'a' TENSOR_MATCH    # toy.py:5: x = a / (torch.abs(a) + 1)"."""
    return f"{guard.describe():<44} # {guard.origin_text()}"


def format_compile(record):
    """Everything config.debug prints for one compile, as one string."""
    out = []
    for info in record.graphs:
        out += [graph_header(info), graph_table(info.gm)]
        note = (getattr(info.gm, "meta", None) or {}).get("backend_choice")
        out += [note, ""] if note else [""]       # autotune's choice and its timings
    where = f"{record.name} {record.filename} {record.firstlineno}"
    out += [f"ORIGINAL BYTECODE {where}", record.original_bytecode.rstrip(), ""]
    out += [f"MODIFIED BYTECODE {where}", record.modified_bytecode.rstrip(), ""]
    if record.recompile_reason:
        out += [f"RECOMPILE {record.id} because {record.recompile_reason}", ""]
    out.append("GUARDS:")
    out += [guard_line(g) for g in record.guards]
    out.append("")
    return "\n".join(out)


def report_compile(record):
    """Print (config.debug) or log at INFO (config.output_code) one compile."""
    from . import config
    text = format_compile(record)
    if config.debug:
        print(text, flush=True)
    if config.output_code:
        log.info("%s", text)
