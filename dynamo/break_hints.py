"""The graph-break vocabulary: what a break reason means to a user and what
they can do about it, declared once.

Owns BREAK_KINDS (kind, the words of a reason that name it, the reason in
user words, the hint) and `describe(reason)`.  Every place that shows a
break to a user words it from here: the graph_breaks log (logs.py),
explain() (explain.py) and the published BREAK record (telemetry.py: its
`kind`, `meaning` and `hint` fields, which dynamo-top's Breaks tab and
dynamo-dot --breaks / --list show as they are; the C tools hold no copy).
The hints name dynamo's API (dynamo.allow_in_graph, dynamo.disable,
dynamo.config...), with torch's spelling where a library uses it.

The reason texts themselves are the tracer's (Unsupported(reason) where it
meets the construct); a row's words are fragments of those texts, tried in
order, the first row that matches wins.  Must not import anything of
dynamo: a service the compile path and the API both read.
"""
import collections

BreakKind = collections.namedtuple("BreakKind", "kind words meaning hint")

BREAK_KINDS = (
    BreakKind(
        "dynamic_output_shape",
        ("nonzero()", "unique()", "masked_select()", "shape depends on its data",
         "repeat_interleave()"),
        "an op whose output size depends on the tensor's values (nonzero, unique, "
        "masked_select, boolean-mask indexing) is read as a Python value",
        "keep the result a tensor (use its size only through tensor ops), or use a "
        "fixed-size form: torch.where(mask, a, b) instead of a[mask]"),
    BreakKind(
        "data_dependent_branch",
        ("generic_jump", "branch on", "jump on a tensor", "bool() of a tensor",
         "`in` on a tensor"),
        "Python branches on a tensor's value (data-dependent control flow)",
        "compute both sides and pick one with torch.where(cond, a, b), or use "
        "torch.cond(pred, true_fn, false_fn); a condition on shapes or settings "
        "(x.shape[0] > 1, self.training) does not break"),
    BreakKind(
        "tensor_value_read",
        (".item()", ".tolist()", "needs the tensor's data", "needs its data",
         "captured Tensor.item()"),
        "a tensor's value is read back into Python (Tensor.item(), .tolist(), int(t), "
        "float(t))",
        "set dynamo.config.capture_scalar_outputs = True to keep .item() in the graph, "
        "or keep the value a tensor (x * t instead of x * t.item())"),
    BreakKind(
        "print",
        ("builtins.print",),
        "print() in the compiled code",
        "remove it, or print after the compiled call returns; if it must stay, move it "
        "into a small helper marked dynamo.disable (one clean break, the rest compiles)"),
    BreakKind(
        "warn_or_log",
        ("warnings.warn", "_warnings.warn", "logging."),
        "warnings.warn() or logging of computed values in the compiled code",
        "log constant messages only (they are replayed after the graph), move the call "
        "out of the compiled function, or into a helper marked dynamo.disable"),
    BreakKind(
        "marked_eager",
        ("marked torch.compiler.disable", "marked dynamo.disable", "marked dynamo.skip",
         "dynamo.disallow_in_graph", "dynamo.skip / disallow_in_graph"),
        "a call of a function marked to run eagerly",
        "the break is what the mark asks for; to compile through the function remove "
        "the mark, or, if it is safe as one graph node (tensors in, tensors out, no side "
        "effects), mark it dynamo.allow_in_graph(fn) instead"),
    BreakKind(
        "untraceable_call",
        ("call to ", "not traceable", "is not a Python function"),
        "a call dynamo does not trace into (a C function, numpy, or a library "
        "left to Python)",
        "if it takes and returns tensors with no side effects, dynamo.allow_in_graph(fn) "
        "(torch.compiler.allow_in_graph) records it as one graph node; if it must run "
        "eagerly, mark it dynamo.disable; for numpy, use the torch function"),
    BreakKind(
        "unsupported_construct",
        ("opcode ", "is not supported"),
        "a Python construct the tracer does not support yet",
        "move it into a helper marked dynamo.disable (it runs eagerly, the rest "
        "compiles), or rewrite it with plain calls and loops"),
)

# A reason no row names: shown as it is, with this hint.
OTHER = BreakKind(
    "other", (), None,
    "the reason names what the tracer met; dynamo.explain(fn)(*args) lists every break "
    "of a call, docs/FROM_TORCH_COMPILE.md (\"Graph breaks\") the common ones")


def describe(reason):
    """(kind, meaning, hint) of a break reason text: the first BREAK_KINDS
    row whose words appear in it; else ("other", reason, OTHER's hint).
    `meaning` is the reason in user words; never raises for a str."""
    for row in BREAK_KINDS:
        if any(w in reason for w in row.words):
            return row.kind, row.meaning, row.hint
    return OTHER.kind, reason, OTHER.hint
