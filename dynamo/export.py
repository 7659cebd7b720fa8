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


def _rebuild(gm, example_inputs, flat_args, result):
    """A GraphModule taking `flat_args` positionally and returning `result`'s
    structure, built from the captured `gm` whose placeholders received
    `example_inputs`."""
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
    lifted = 0
    for node in gm.graph.nodes:
        if node.op == "placeholder":
            value = next(inputs)
            idx = next((i for i, a in enumerate(flat_args) if a is value), None)
            if idx is not None:
                env[node] = arg_nodes[idx]
            else:   # a tensor from a global or an attribute: keep it with the graph
                name = f"_lifted_input_{lifted}"
                lifted += 1
                root.register_buffer(name, value)
                env[node] = new.get_attr(name)
        elif node.op == "get_attr":
            _copy_attr(gm, root, node.target)
            env[node] = new.node_copy(node, lambda n: env[n])
        elif node.op == "output":
            outs = node.args[0]
            outs = list(outs) if isinstance(outs, (tuple, list)) else [outs]
            new.output(_match_result(outs, result, env))
        else:
            env[node] = new.node_copy(node, lambda n: env[n])
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


def _match_result(outs, result, env):
    mapped = [env[o] if isinstance(o, torch.fx.Node) else o for o in outs]
    if isinstance(result, torch.Tensor):
        if len(mapped) != 1:
            raise Unsupported(f"export: the function returns one tensor but its graph has "
                              f"{len(mapped)} outputs")
        return mapped[0]
    if isinstance(result, (tuple, list)) and len(result) == len(mapped):
        return type(result)(mapped) if isinstance(result, tuple) else mapped
    raise Unsupported(f"export: cannot express a return value of type "
                      f"{type(result).__name__} as the graph's output")


def export(fn, *args, **kwargs):
    """Capture `fn(*args, **kwargs)` as one fx graph.

    Returns (graph_module, guards): `graph_module(*flat_args)` computes what
    `fn` returned; `guards` are the conditions under which the graph is valid.
    Raises dynamo.exc.Unsupported on any graph break.
    """
    if not callable(fn):
        raise TypeError(f"dynamo.export expects a callable or nn.Module, got {type(fn).__name__}")
    captured = []

    def capture(gm, example_inputs):
        captured.append((gm, list(example_inputs)))
        return gm.forward

    code = _top_code(fn)
    if code is not None:
        _C.clear_cache(code)
    start = records.mark()
    result = optimize(capture, nopython=True)(fn)(*args, **kwargs)
    recs = [r for r in records.records_since(start) if r.code is code or code is None]
    if len(captured) != 1:
        raise Unsupported(f"export expects exactly one graph for the call, got {len(captured)}")
    gm, example_inputs = captured[0]
    exported = _rebuild(gm, example_inputs, _flat_args(args, kwargs), result)
    guards = [g for r in recs for g in r.guards]
    return exported, guards
