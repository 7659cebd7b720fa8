"""dynamo.export(): one whole-program graph for a call, or an error.

Runs `fn(*args, **kwargs)` once under the hook in nopython mode with a
backend that keeps the graph, then rewrites the captured graph so that it
takes the call's flattened arguments in order (`gm(*args)`), returns what the
function returned, and holds tensors the function read from elsewhere
(globals, attributes) as buffers of the graph module.
"""
import torch
import torch.fx

from . import _C, records
from .eval_frame import optimize
from .exc import Unsupported


def _top_code(fn):
    if isinstance(fn, torch.nn.Module):
        fn = type(fn).forward
    fn = getattr(fn, "__func__", fn)
    return getattr(fn, "__code__", None)


def _flat_args(args, kwargs):
    flat, _ = torch.utils._pytree.tree_flatten((args, kwargs))
    return flat


def _rebuild(gm, example_inputs, flat_args, result, graph_outputs):
    """A GraphModule taking `flat_args` positionally and returning `result`'s
    structure, built from the captured `gm` whose placeholders received
    `example_inputs` and whose run returned `graph_outputs`. Each tensor of
    the result is found by identity: a graph output, an argument (returned
    as is) or a tensor read from elsewhere (kept with the graph); a number
    that is a captured Tensor.item() output is that output; other values of
    the result are constants of the output."""
    new = torch.fx.Graph()
    arg_nodes = [new.placeholder(f"arg{i}") for i in range(len(flat_args))]
    root = torch.nn.Module()
    for name, mod in gm.named_children():
        root.add_module(name, mod)
    for name, p in gm.named_parameters(recurse=False):
        root.register_parameter(name, p)
    for name, b in gm.named_buffers(recurse=False):
        root.register_buffer(name, b)
    env = {}
    inputs = iter(example_inputs)
    lifted = {}                      # id(tensor) -> get_attr node

    def lift(value):
        if id(value) not in lifted:
            name = f"_lifted_input_{len(lifted)}"
            root.register_buffer(name, value)
            lifted[id(value)] = new.get_attr(name)
        return lifted[id(value)]

    def arg_index(value):
        return next((i for i, a in enumerate(flat_args) if a is value), None)

    out_nodes = None
    for node in gm.graph.nodes:
        if node.op == "placeholder":
            value = next(inputs)
            idx = arg_index(value)
            env[node] = arg_nodes[idx] if idx is not None else lift(value)
        elif node.op == "get_attr":
            _copy_attr(gm, root, node.target)
            env[node] = new.node_copy(node, lambda n: env[n])
        elif node.op == "output":
            outs = node.args[0]
            out_nodes = list(outs) if isinstance(outs, (tuple, list)) else [outs]
        else:
            env[node] = new.node_copy(node, lambda n: env[n])
    out_nodes = out_nodes or []
    leaves, spec = torch.utils._pytree.tree_flatten(result)
    mapped = []
    # numbers of Tensor.item() nodes (config.capture_scalar_outputs) and of
    # arithmetic on them come out of the graph: a returned number that *is*
    # one of them is that
    # output (a small int constant equal to it is taken for it too: ints
    # below 257 are shared objects)
    scalar_pos = [i for i, o in enumerate(out_nodes)
                  if isinstance(o, torch.fx.Node) and o.meta.get("scalar_output")]
    for leaf in leaves:
        if not isinstance(leaf, torch.Tensor):
            pos = next((i for i in scalar_pos if i < len(graph_outputs)
                        and graph_outputs[i] is leaf), None)
            mapped.append(env[out_nodes[pos]] if pos is not None else leaf)
            continue
        pos = next((i for i, o in enumerate(graph_outputs) if o is leaf), None)
        if pos is not None and pos < len(out_nodes):
            o = out_nodes[pos]
            mapped.append(env[o] if isinstance(o, torch.fx.Node) else o)
            continue
        idx = arg_index(leaf)
        if idx is not None:
            mapped.append(arg_nodes[idx])
            continue
        ex = next((e for e in example_inputs if e is leaf), None)
        if ex is not None:
            mapped.append(lift(leaf))
            continue
        raise Unsupported("export: the function returns a tensor that is neither an output of "
                          "its graph nor one of its inputs")
    new.output(torch.utils._pytree.tree_unflatten(mapped, spec))
    return torch.fx.GraphModule(root, new, class_name="ExportedGraph")


def _copy_attr(src, dst, target):
    *path, last = target.split(".")
    s, d = src, dst
    for p in path:
        s = getattr(s, p)
        if not hasattr(d, p):
            d.add_module(p, torch.nn.Module())
        d = getattr(d, p)
    if not hasattr(d, last):
        value = getattr(s, last)
        if isinstance(value, torch.nn.Parameter):
            d.register_parameter(last, value)
        elif isinstance(value, torch.Tensor):
            d.register_buffer(last, value)
        else:
            setattr(d, last, value)


def export(fn, *args, aten_graph=False, decomposition_table=None, tracing_mode="real",
           **kwargs):
    """Capture `fn(*args, **kwargs)` as one fx graph.

    Returns (graph_module, guards): `graph_module(*flat_args)` computes what
    `fn` returned (the same nesting of tuples, lists and dicts; arguments and
    constants returned as is), where flat_args are the tensors and values of
    (args, kwargs) flattened by torch.utils._pytree; `guards` are the
    conditions under which the graph is valid. With `aten_graph=True` the
    graph is retraced to ATen operators by make_fx (`decomposition_table`
    and `tracing_mode` are make_fx's; both require aten_graph). Raises
    dynamo.exc.Unsupported on any graph break.
    """
    if not callable(fn):
        raise TypeError(f"dynamo.export expects a callable or nn.Module, got {type(fn).__name__}")
    if decomposition_table is not None:
        assert aten_graph, "dynamo.export: decomposition_table requires aten_graph=True"
    if tracing_mode != "real":
        assert aten_graph, "dynamo.export: tracing_mode other than 'real' requires aten_graph=True"
    captured = []

    def capture(gm, example_inputs):
        entry = [gm, list(example_inputs), ()]
        captured.append(entry)

        def run(*a):
            out = gm.forward(*a)
            entry[2] = tuple(out) if isinstance(out, (tuple, list)) else (out,)
            return out
        return run

    code = _top_code(fn)
    if code is not None:
        _C.clear_cache(code)
    start = records.mark()
    result = optimize(capture, nopython=True)(fn)(*args, **kwargs)
    recs = [r for r in records.records_since(start) if r.code is code or code is None]
    if len(captured) > 1:
        raise Unsupported(f"export expects exactly one graph for the call, got {len(captured)}")
    flat = _flat_args(args, kwargs)
    if captured:
        gm, example_inputs, outputs = captured[0]
    else:       # nothing to compute: the result is made of inputs and constants
        graph = torch.fx.Graph()
        graph.output(())
        gm, example_inputs, outputs = torch.fx.GraphModule(torch.nn.Module(), graph), [], ()
    exported = _rebuild(gm, example_inputs, flat, result, outputs)
    if aten_graph:
        exported = _to_aten(exported, flat, decomposition_table, tracing_mode)
    guards = [g for r in recs for g in r.guards]
    return exported, guards


def _to_aten(gm, flat_args, decomposition_table, tracing_mode):
    """Retrace `gm` to ATen operators with make_fx, keeping each node's
    stack trace."""
    from torch.fx import traceback as fx_traceback
    from torch.fx.experimental.proxy_tensor import make_fx
    if tracing_mode == "real" and any(n.op == "call_method" and n.target == "item"
                                      for n in gm.graph.nodes):
        from .exc import Unsupported
        raise Unsupported("dynamo.export(aten_graph=True, tracing_mode='real') cannot retrace a "
                          "Tensor.item() captured by config.capture_scalar_outputs (its number "
                          "is data)")

    def run(*a):
        with fx_traceback.preserve_node_meta():
            return torch.fx.Interpreter(gm).run(*a)
    from .eval_frame import disable
    with disable():
        return make_fx(run, decomposition_table=decomposition_table,
                       tracing_mode=tracing_mode)(*flat_args)
