"""What the AOT runtime must know about a captured graph to give eager's
results (backends/aot/__init__.py lists why): the inputs each output is
differentiable in, the memory eager's autograd saved on, the creation mode
of view outputs, the outputs that are a detach of another, the parameters
the graph reads.

Reads the graph and its example values; `_hoist_output_detach` builds a new
GraphModule and leaves the given one as it is.
"""
import torch
import torch.fx
from torch.multiprocessing.reductions import StorageWeakRef

from .graph import _example_storage, _inplace_operators, _is_inplace, _saved_values


def _grad_deps(gm):
    """(per graph output, {i: ...} per placeholder i written in place):
    the inputs each value is differentiable in, keys ("arg", i) for the
    i-th placeholder, ("attr", target) for a parameter. aot's node has an
    output for each written input too (its new value, copied back into
    the input after the call), so those count as outputs. A path is
    followed only through values whose example requires grad (a
    comparison or a detach cuts it); a node without an example depends on
    all its inputs. None when the outputs that require grad all depend on
    the same inputs (no output can reach fewer inputs than another)."""
    deps, nargs = {}, 0
    out = None
    inplace = _inplace_operators()
    storages = {}           # example storage -> the nodes seen on it (views and bases)
    unknown = []            # tensor nodes whose storage cannot be told
    placeholders, written = [], set()
    for n in gm.graph.nodes:
        ex = n.meta.get("example_value")
        grad = not isinstance(ex, torch.Tensor) or ex.requires_grad
        if isinstance(ex, torch.Tensor):
            key = _example_storage(n)
            (unknown if key is None else storages.setdefault(key, [])).append(n)
        if n.op == "placeholder":
            deps[n] = frozenset([("arg", nargs)]) if grad else frozenset()
            placeholders.append(n)
            nargs += 1
        elif n.op == "get_attr":
            deps[n] = frozenset([("attr", n.target)]) if grad else frozenset()
        elif n.op == "output":
            out = n.args[0]
        elif not grad:
            deps[n] = frozenset()
        else:
            acc = set()
            torch.fx.node.map_arg((n.args, n.kwargs), lambda a: acc.update(deps.get(a, ())))
            if n.op == "call_module":       # its parameters are inputs too
                acc.update(("attr", f"{n.target}.{k}") for k, p in
                           gm.get_submodule(n.target).named_parameters() if p.requires_grad)
            deps[n] = frozenset(acc)
            # an in-place op writes its first argument: a value it brings in
            # (y in `t.add_(y)`, `t[i] = y`) reaches t and every view of t
            # or base t is a view of: each value seen so far on the same
            # storage (the examples'; a tensor whose storage cannot be
            # told: any) takes it in. A target without a tensor example: no gating.
            target = n.args[0] if n.args and isinstance(n.args[0], torch.fx.Node) else None
            if target is not None and _is_inplace(n, inplace):
                key = _example_storage(target)
                if key is not None:
                    written.add(key)
                if acc <= deps.get(target, frozenset()):
                    continue
                if key is None:
                    return None
                for m in storages.get(key, []) + unknown:
                    if m in deps:
                        deps[m] = deps[m] | acc
    if not isinstance(out, (tuple, list)):
        return None
    per_out = [deps.get(o, frozenset()) if isinstance(o, torch.fx.Node) else frozenset() for o in out]
    per_mut = {i: deps[p] for i, p in enumerate(placeholders) if _example_storage(p) in written}
    # every input that needs grad (an input only written in place, under
    # no_grad, is one too): aot's node returns a gradient for each
    every = frozenset().union(*(d for n, d in deps.items() if n.op in ("placeholder", "get_attr")))
    for d in per_out:
        every |= {k for k in d if k[0] == "attr"}
    if all(d == every for d in (*per_out, *per_mut.values())):
        return None
    return per_out, per_mut


def _saved_inputs(gm):
    """((where, k, outputs), ...): eager's autograd saves, for the backward
    of the graph outputs at positions `outputs`, a value on the memory of
    graph input k (where "arg") or of graph output k (where "out"): the
    value itself or a view of it. Found on the capture's fake autograd
    graph. aot saves values of its own choosing (std's backward: its own
    copy of x, where eager keeps x; mm's: its own, where eager keeps the
    output view it multiplied), so an in-place op on that memory after the
    call (`t = x + x.std(0)`, then `y += t` with y a view of x's storage;
    an output `t1` of the graph that mm read, then `t1 += t0`) makes
    eager's backward raise and aot's run. The runtime checks the version
    in the backward (_AotRuntime._watch_saved). Empty with grad off or
    when nothing saved is on an input's or output's memory."""
    if not torch.is_grad_enabled():
        return ()
    out = next((n for n in reversed(gm.graph.nodes) if n.op == "output"), None)
    values = out.args[0] if out is not None and out.args else None
    if not isinstance(values, (tuple, list)):
        return ()
    memory, stop = {}, set()
    for i, n in enumerate(n for n in gm.graph.nodes if n.op == "placeholder"):
        key = _example_storage(n)
        if key is not None:
            memory.setdefault(key, []).append(("arg", i))
            fn = n.meta["example_value"].grad_fn
            if fn is not None:
                stop.add(fn)
    for j, v in enumerate(values):
        key = _example_storage(v) if isinstance(v, torch.fx.Node) else None
        if key is not None:
            memory.setdefault(key, []).append(("out", j))
    if not memory:
        return ()
    saved = {}
    for j, v in enumerate(values):
        if not isinstance(v, torch.fx.Node):
            continue
        for fn, name, value in _saved_values([v], stop):
            if isinstance(value, torch.Tensor):
                try:
                    key = StorageWeakRef(value.untyped_storage())
                except Exception:  # noqa: BLE001 - no storage: not on an input's or output's memory
                    continue
                for at in memory.get(key, ()):
                    saved.setdefault(at, set()).add(j)
    return tuple((where, k, frozenset(js)) for (where, k), js in sorted(saved.items()))


def _output_creation_meta(gm):
    """((j, meta), ...) for the graph outputs j whose value is a view:
    meta is the CreationMeta eager gives it (its example's: the capture ran
    the ops in the call's grad mode). aot returns a view of an intermediate
    made while its forward runs with grad off: a no_grad view, which an
    in-place op with grad on refuses where eager's view allows it (or the
    reverse). Empty when no output is a view."""
    out = next((n for n in reversed(gm.graph.nodes) if n.op == "output"), None)
    values = out.args[0] if out is not None and out.args else None
    if not isinstance(values, (tuple, list)):
        return ()
    metas = []
    for j, v in enumerate(values):
        ex = v.meta.get("example_value") if isinstance(v, torch.fx.Node) else None
        if isinstance(ex, torch.Tensor) and ex._is_view():
            try:
                metas.append((j, torch._C._autograd._get_creation_meta(ex)))
            except Exception:  # noqa: BLE001 - a view without autograd view metadata: nothing to restore
                pass
    return tuple(metas)


def _is_detach(n):
    return isinstance(n, torch.fx.Node) and len(n.args) == 1 and not n.kwargs and isinstance(n.args[0], torch.fx.Node) and (
        (n.op == "call_method" and n.target == "detach") or
        (n.op == "call_function" and n.target in (torch.detach, torch.Tensor.detach, torch.ops.aten.detach.default)))


def _hoist_output_detach(gm):
    """(graph module for aot, ((j, i), ...)): where output j is
    `detach(v)` of a value v that is output i too, a copy of `gm` whose
    output j is v itself (the runtime detaches output i after the call:
    see backends/aot/__init__.py); `gm` and () when no output is such. The copy shares gm's
    parameters and buffers."""
    out = next((n for n in reversed(gm.graph.nodes) if n.op == "output"), None)
    values = out.args[0] if out is not None and out.args else None
    if not isinstance(values, (tuple, list)):
        return gm, ()
    first = {}
    for i, v in enumerate(values):
        if isinstance(v, torch.fx.Node):
            first.setdefault(v, i)
    hoist = tuple((j, first[v.args[0]]) for j, v in enumerate(values)
                  if _is_detach(v) and v.args[0] in first)
    if not hoist:
        return gm, ()
    graph, env = torch.fx.Graph(), {}
    for n in gm.graph.nodes:
        if n is out:
            moved = list(values)
            for j, _ in hoist:
                moved[j] = values[j].args[0]
            graph.output(torch.fx.node.map_arg(type(values)(moved), env.__getitem__))
        else:
            env[n] = graph.node_copy(n, env.__getitem__)
    return torch.fx.GraphModule(gm, graph), hoist


def _no_grad_outputs(gm):
    """Positions of the graph's outputs whose example does not require
    grad (the capture ran each op as eager does, under the guarded grad
    mode and input requires_grad). aot marks an output differentiable from
    its own trace, which can differ: with an int input, an output computed
    from an input before the graph wrote a grad-requiring value into that
    input came back requiring grad (fuzz seed 83,144,144)."""
    out = next((n for n in reversed(gm.graph.nodes) if n.op == "output"), None)
    values = out.args[0] if out is not None and out.args else None
    if not isinstance(values, (tuple, list)):
        return ()
    return tuple(j for j, v in enumerate(values) if isinstance(v, torch.fx.Node)
                 and isinstance(v.meta.get("example_value"), torch.Tensor)
                 and not v.meta["example_value"].requires_grad)


def _attr_keys(gm):
    """id(tensor) -> {("attr", target)} for the graph's get_attr tensors and
    the parameters of the modules it calls."""
    keys = {}
    for n in gm.graph.nodes:
        if n.op == "get_attr":
            obj = gm
            for part in n.target.split("."):
                obj = getattr(obj, part, None)
            if obj is not None:
                keys[id(obj)] = frozenset([("attr", n.target)])
        elif n.op == "call_module":
            for k, p in gm.get_submodule(n.target).named_parameters():
                keys[id(p)] = keys.get(id(p), frozenset()) | {("attr", f"{n.target}.{k}")}
    return keys
