"""A graph's in-place writes to its inputs, deferred to the graph's end.

A graph with operations a user handler covers (a `try`, also in an inlined
function: OutputGraph.deopt) is re-run eagerly from the frame's start when
it raises (tracer/frame.py, emit_guarded_graph_call). That re-run must find
the inputs as the call found them, so such a graph may not write to them
while it can still raise. defer_input_writes() rewrites a finished graph so
that it does not: every written input P is cloned at the graph's start,
every operation (views, in-place writes, reads) uses the clone, and
`P.copy_(clone)` ends the graph, after every operation that could raise (a
copy between tensors of one size, dtype and device raises on no data).
An output that is P, or a view of it, is made again from P after the copy,
as eager returns it. StaticCache's `index_copy_` inside transformers'
`try` is the case in point: traced whole instead of broken at the write.

Owns only that rewrite of the fx graph. It must not decide which writes can
be deferred: the tracer does (builder.note_input_writes, OutputGraph.
input_written: the written storage belongs to exactly one graph input, a
placeholder that requires no grad and keeps its sizes and strides); a
write that cannot be deferred inside a `try` is a break, as before.
"""
import operator

import torch
import torch.fx

from .guards import storage_key


def defer_input_writes(graph, written):
    """Rewrite `graph` (finished: its output node made) so that its writes to
    the placeholders in `written` happen at its end, as described above.
    `written`: placeholder nodes whose example values' storages the trace
    wrote, each the only input of its storage. Returns the number of
    inputs deferred. Raises nothing for a graph the tracer accepted."""
    output = next(n for n in reversed(graph.nodes) if n.op == "output")
    placeholders = [n for n in graph.nodes if n.op == "placeholder"]
    if not written or not placeholders:
        return 0
    clones = {}
    with graph.inserting_after(placeholders[-1]):
        for p in reversed(written):
            clone = graph.call_method("clone", (p,))
            clone.meta["example_value"] = p.meta.get("example_value")
            clones[p] = clone
    for p, clone in clones.items():      # every use but the clone's own and the output's
        keep = (clone, output)
        p.replace_all_uses_with(clone, delete_user_cb=lambda user: user not in keep)
    with graph.inserting_before(output):
        for p in written:
            graph.call_method("copy_", (p, clones[p]))
    _rebase_outputs(graph, output, written)
    return len(written)


def _rebase_outputs(graph, output, written):
    """Outputs that are a written input (an in-place op's result) become the
    input itself; outputs sharing its storage (views) are made again from
    it after the copies, so that they alias the input as in eager."""
    examples = {id(p.meta.get("example_value")): p for p in written}
    keys = {storage_key(p.meta.get("example_value")) for p in written}
    memo = {}

    def aliases(value):
        if isinstance(value, torch.Tensor):
            return storage_key(value) in keys
        if isinstance(value, (tuple, list)):
            return any(aliases(v) for v in value)
        return False

    def rebase(node):
        if not isinstance(node, torch.fx.Node):
            return node
        if node in memo:
            return memo[node]
        example = node.meta.get("example_value")
        written_input = examples.get(id(example))
        if written_input is not None and example is written_input.meta.get("example_value"):
            memo[node] = written_input
        elif not aliases(example) or node.op not in _OPS:
            memo[node] = node        # an op's own tensor: kept as it is
        elif any(a.meta.get("example_value") is example for a in node.all_input_nodes):
            # x.add_(1), x += 1 return x: the argument written, made again
            memo[node] = rebase(next(a for a in node.all_input_nodes
                                     if a.meta.get("example_value") is example))
        elif _writes(node):
            memo[node] = node        # a write that made a new tensor: its values are right
        else:
            with graph.inserting_before(output):
                new = graph.create_node(node.op, node.target,
                                        torch.fx.node.map_arg(node.args, rebase),
                                        torch.fx.node.map_arg(node.kwargs, rebase))
            new.meta.update(node.meta)
            memo[node] = new
        return memo[node]

    output.args = torch.fx.node.map_arg(output.args, rebase)


_OPS = ("call_function", "call_method", "call_module")


_INPLACE_OPERATORS = {operator.setitem, operator.iadd, operator.isub, operator.imul,
                      operator.itruediv, operator.ifloordiv, operator.imod, operator.ipow,
                      operator.imatmul, operator.iand, operator.ior, operator.ixor,
                      operator.ilshift, operator.irshift}


def _writes(node):
    """Does `node` write to an argument (an in-place method or function,
    by torch's trailing-underscore naming, an augmented assignment or an
    item assignment)? Such a node is never made twice."""
    if node.target in _INPLACE_OPERATORS:
        return True
    name = node.target if isinstance(node.target, str) else getattr(node.target, "__name__", "")
    return name.endswith("_") and not name.endswith("__")
