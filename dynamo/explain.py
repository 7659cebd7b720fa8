"""dynamo.explain(): what the compiler did with one call, and why.

Runs the function once under the hook with a backend that keeps the graphs,
then summarises the compile records of that run: graphs, ops per graph, graph
breaks with their reasons and user frames, guards, recompile triggers,
compile failures and compile times, the breaks ranked by what their eager
code costs (the time between the end of a graph and the call of the resume
function, measured by the break's probe: live, so a later look at the same
output counts the calls made since), and for a graph captured under
DistributedDataParallel its cut at DDP's gradient buckets (which parameters
each piece's bucket holds), and the guards the call's cache lookup spends
most time in (guard_cost.py). Like the reference implementation it
starts from a reset cache, so every frame the call reaches is compiled afresh.
"""
import dataclasses
from typing import Any, List

from . import records, skipfiles
from .debug import guard_line
from .eval_frame import optimize, reset
from .guard_cost import guard_costs

GUARD_COST_LOOKUPS = 16     # timed lookups of the call's guards
GUARD_COSTS_SHOWN = 5


def _op_targets(gm):
    return [n.target for n in gm.graph.nodes if n.op.startswith("call_")]


def _ddp_pieces(gm):
    """The DDP bucket cut of a graph (backends/ddp.py): per piece, first
    first, (parameter names its bucket holds, ops in it); [] when the
    graph was not cut."""
    names = gm.meta.get("ddp_buckets") or []
    if len(names) <= 1:
        return []
    ops = [0] * len(names)
    for n in gm.graph.nodes:
        if n.op.startswith("call_") and n.meta.get("ddp_bucket") is not None:
            ops[n.meta["ddp_bucket"]] += 1
    return [(list(params), count) for params, count in zip(names, ops)]


def _format_pieces(i, pieces):
    lines = [f"  Graph {i}: {len(pieces)} pieces"]
    for k, (params, ops) in enumerate(pieces, 1):
        lines.append(f"    Bucket {k}: {ops} ops, {len(params)} params: {', '.join(params)}")
    return lines


def _format_reason(i, br):
    from .logs import reason_text
    lines = [f"  Break Reason {i}:", f"    Reason: {reason_text(br)}"]
    if br.hint:
        lines.append(f"    Hint: {br.hint}")
    lines.append("    User Stack:")
    for fs in br.user_stack or []:
        lines.append(f'      File "{fs.filename}", line {fs.lineno}, in {fs.name}')
        if fs.line:
            lines.append(f"        {fs.line}")
    if not br.user_stack:
        lines.append(f'      File "{br.filename}", line {br.lineno}')
    return lines


def _ns_text(ns):
    if ns >= 1e9:
        return f"{ns / 1e9:.2f} s"
    if ns >= 1e6:
        return f"{ns / 1e6:.2f} ms"
    if ns >= 1e3:
        return f"{ns / 1e3:.1f} us"
    return f"{ns:.0f} ns"


def ranked_breaks(break_reasons):
    """The breaks costliest first: [(position in break_reasons, 1-based;
    BreakReason; its cost())], by the estimated total time of the eager
    region (mean of the timed runs x runs), then by the time per run;
    breaks never timed (no probe, no sample) last, in their order."""
    costs = [(i, br, br.cost()) for i, br in enumerate(break_reasons, 1)]
    timed = [c for c in costs if c[2] is not None and c[2]["samples"]]
    rest = [c for c in costs if c not in timed]
    timed.sort(key=lambda c: (-c[2]["total_ns"], -c[2]["ns_per_call"], c[0]))
    return timed + rest


def _format_costs(break_reasons):
    from .logs import reason_text
    lines = []
    for i, br, cost in ranked_breaks(break_reasons):
        where = f"{br.filename}:{br.lineno}" if br.filename else "?"
        if cost is None or not cost["samples"]:
            what = "not timed" if cost is None else f"{cost['calls']} runs, none timed"
        else:
            what = (f"{_ns_text(cost['total_ns'])} total, {_ns_text(cost['ns_per_call'])}/run x "
                    f"{cost['calls']} runs ({cost['samples']} timed, max {_ns_text(cost['max_ns'])})")
        lines.append(f"  Break {i} at {where}: {what}")
        lines.append(f"    {reason_text(br)}")
    return lines


@dataclasses.dataclass
class ExplainOutput:
    """Result of `dynamo.explain(fn)(*args)`."""
    graphs: List[Any]
    graph_count: int
    graph_break_count: int
    break_reasons: List[Any]
    op_count: int
    ops_per_graph: List[List[Any]]
    out_guards: List[Any]
    compile_times: str
    recompile_reasons: List[str] = dataclasses.field(default_factory=list)
    failures: List[str] = dataclasses.field(default_factory=list)
    # frames the skip rules kept from compiling: "name (file:line): reason"
    skipped: List[str] = dataclasses.field(default_factory=list)
    # per graph, its cut at DistributedDataParallel's gradient buckets: per
    # piece (parameter names, ops); [] for a graph not cut
    ddp_pieces: List[List[Any]] = dataclasses.field(default_factory=list)
    # the costliest tests of the call's cache lookup (guard_cost.guard_costs:
    # the frame's entries looked up GUARD_COST_LOOKUPS times on the call's
    # arguments, timed), costliest first; [] when not measurable
    guard_costs: List[Any] = dataclasses.field(default_factory=list)

    def summary(self):
        breaks = "graph break" if self.graph_break_count == 1 else "graph breaks"
        graphs = "graph" if self.graph_count == 1 else "graphs"
        text = (f"Dynamo produced {self.graph_count} {graphs} with "
                f"{self.graph_break_count} {breaks} and {self.op_count} ops")
        if self.break_reasons:
            text += "\n Break reasons:\n\n" + "\n".join(
                line for i, br in enumerate(self.break_reasons, 1) for line in _format_reason(i, br))
        if self.failures:
            text += "\n Frames that could not be compiled (ran eagerly):\n" + "\n".join(
                f"  {f}" for f in self.failures)
        if self.break_reasons:
            text += ("\n Break cost (eager code between two graphs, costliest first):\n"
                     + "\n".join(_format_costs(self.break_reasons)))
        cut = [(i, len(p)) for i, p in enumerate(self.ddp_pieces, 1) if p]
        if cut:
            text += "\n Graphs cut at DDP's gradient buckets: " + ", ".join(
                f"graph {i} into {n} pieces" for i, n in cut)
        return text

    def __str__(self):
        out = [f"Graph Count: {self.graph_count}",
               f"Graph Break Count: {self.graph_break_count}",
               f"Op Count: {self.op_count}", "Break Reasons:"]
        for i, br in enumerate(self.break_reasons, 1):
            out += _format_reason(i, br)
        if self.break_reasons:
            out.append("Break Cost (eager code between two graphs, costliest first):")
            out += _format_costs(self.break_reasons)
        out.append("Ops per Graph:")
        for i, ops in enumerate(self.ops_per_graph, 1):
            out.append(f"  Ops {i}:")
            out += [f"    {op}" for op in ops]
        if any(self.ddp_pieces):
            out.append("DDP Bucket Pieces:")
            for i, pieces in enumerate(self.ddp_pieces, 1):
                if pieces:
                    out += _format_pieces(i, pieces)
        out.append("Out Guards:")
        out += [f"  {guard_line(g).strip()}" for g in self.out_guards]
        if self.recompile_reasons:
            out.append("Recompile Reasons:")
            out += [f"  {r}" for r in self.recompile_reasons]
        if self.failures:
            out.append("Compile Failures:")
            out += [f"  {f}" for f in self.failures]
        if self.skipped:
            out.append("Skipped Frames:")
            out += [f"  {f}" for f in self.skipped]
        if self.guard_costs:
            out.append(f"Guard Cost (this call's cache lookup timed {GUARD_COST_LOOKUPS} times; "
                       f"costliest guard tests, each with its source's fetch):")
            out += [f"  {c}" for c in self.guard_costs]
        out.append(f"Compile Times: {self.compile_times}")
        return "\n".join(out)


def _collect(fn, args, kwargs):
    reset()
    start, skip_start = records.mark(), skipfiles.mark()
    ctx = optimize("eager")
    ctx.callback.report_no_graph = False      # the explanation says it
    ctx(fn)(*args, **kwargs)
    recs = records.records_since(start)
    try:
        costs = guard_costs(fn, *args, repeat=GUARD_COST_LOOKUPS, **kwargs)[:GUARD_COSTS_SHOWN]
    except Exception:  # noqa: BLE001 - unbindable arguments, or a guard's Python code
        costs = []     # raising in a timed lookup: the explanation goes without the figure
    graphs = [g.gm for r in recs for g in r.graphs]
    reasons = [br for r in recs for br in r.break_reasons]
    ops = [_op_targets(gm) for gm in graphs]
    times = "\n".join(f"{r.id} {r.name}: {r.compile_ns / 1e6:.3f} ms "
                      f"(backend {r.backend_ns / 1e6:.3f} ms)" for r in recs)
    return ExplainOutput(
        graphs=graphs, graph_count=len(graphs), graph_break_count=len(reasons),
        break_reasons=reasons, op_count=sum(len(o) for o in ops), ops_per_graph=ops,
        out_guards=[g for r in recs for g in r.guards], compile_times=times,
        recompile_reasons=[f"{r.id} {r.name}: {r.recompile_reason}" for r in recs
                           if r.recompile_reason],
        failures=[f"{r.id} {r.name} ({r.filename}:{r.firstlineno}): {r.error}" for r in recs
                  if r.status in (records.STATUS["ERROR"], records.STATUS["UNSUPPORTED"])],
        skipped=[f"{c.co_name} ({c.co_filename}:{c.co_firstlineno}): {why}"
                 for c, why in skipfiles.since(skip_start)],
        ddp_pieces=[_ddp_pieces(gm) for gm in graphs], guard_costs=costs)


def explain(fn, *args, **kwargs):
    """Explain how dynamo compiles `fn`.

    `explain(fn)(*args, **kwargs)` returns an ExplainOutput;
    `explain(fn, *args, **kwargs)` returns the tuple
    (explanation, out_guards, graphs, ops_per_graph, break_reasons,
    explanation_verbose).
    """
    if not callable(fn):
        raise TypeError(f"dynamo.explain expects a callable, got {type(fn).__name__}")
    if not args and not kwargs:
        return lambda *a, **kw: _collect(fn, a, kw)
    result = _collect(fn, args, kwargs)
    verbose = result.summary() + "\n\n" + str(result)
    return (result.summary(), result.out_guards, result.graphs, result.ops_per_graph,
            result.break_reasons, verbose)
