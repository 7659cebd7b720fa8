"""Facts about a captured fx graph that the AOT adapter's analyses share:
which nodes write in place, which example tensors share storage, what
eager's autograd saved on the capture's (fake) autograd graph.

Reads the graph and its nodes' example values (meta["example_value"]);
changes nothing.
"""
import operator

import torch
import torch.fx
from torch.multiprocessing.reductions import StorageWeakRef


def _inplace_operators():
    """operator's in-place functions (`t += u` is captured as operator.iadd)
    and setitem: each writes into its first argument when it is a tensor."""
    return (operator.setitem, operator.iadd, operator.isub, operator.imul, operator.itruediv,
            operator.ifloordiv, operator.imod, operator.ipow, operator.imatmul, operator.iand,
            operator.ior, operator.ixor, operator.ilshift, operator.irshift)


def _mutates(gm):
    """Does the graph hold an in-place op (a method or function named
    `..._`, an augmented assignment (operator.iadd, `__iadd__`), or a
    setitem)? Conservative: it may mutate an input."""
    inplace = _inplace_operators()
    return any(_is_inplace(n, inplace) for n in gm.graph.nodes)


def _is_inplace(n, inplace):
    """Is node `n` an in-place op (it writes its first argument)?"""
    if n.op == "call_method":
        return ((n.target.endswith("_") and not n.target.startswith("_")) or
                n.target == "__setitem__" or
                (n.target.startswith("__i") and n.target.endswith("__") and
                 n.target[2:-2] not in ("init", "index", "int", "invert", "iter")))
    if n.op == "call_function":
        return any(n.target is f for f in inplace) or getattr(n.target, "__name__", "").endswith("_")
    return False


def _example_storage(node):
    """A key equal for fx nodes whose example tensors share storage (a
    view and its base), None when the node has no tensor example."""
    ex = node.meta.get("example_value")
    if not isinstance(ex, torch.Tensor):
        return None
    try:
        return StorageWeakRef(ex.untyped_storage())
    except Exception:  # noqa: BLE001 - no storage (a sparse or nested example): unknown
        return None


def _share_storage(tensors):
    """Do two of `tensors` share a storage or its memory? By the storage
    itself as well as its data pointer: an empty storage has none (x and
    x.detach() of shape (2, 0) share a version counter all the same), and
    two storages may wrap one buffer (torch.from_numpy of one array)."""
    seen = set()
    for t in tensors:
        try:
            storage = t.untyped_storage()
            keys = [("storage", storage._cdata)] + ([("ptr", storage.data_ptr())] if storage.data_ptr() else [])
        except Exception:  # noqa: BLE001 - no storage (a subclass, meta): not compared
            continue
        if any(k in seen for k in keys):
            return True
        seen.update(keys)
    return False


def _saved_values(outputs, stop=()):
    """(grad_fn, name, value) for each value saved for the backward on
    the autograd graph of the example values of the fx nodes in
    `outputs` (value: the exception when reading it raises), not going
    past the grad_fns in `stop`."""
    todo, seen = [], set(stop)
    torch.fx.node.map_arg(outputs, lambda n: todo.append(getattr(n.meta.get("example_value"), "grad_fn", None)))
    while todo and len(seen) < 10000:
        fn = todo.pop()
        if fn is None or fn in seen:
            continue
        seen.add(fn)
        for name in dir(fn):
            if name.startswith("_saved_"):
                try:
                    value = getattr(fn, name)
                except Exception as e:  # noqa: BLE001 - reported to the caller
                    value = e
                yield fn, name, value
        todo.extend(f for f, _ in fn.next_functions)


def _example_requires_grad(gm, node):
    """Does the value of fx node `node` require grad (its example; a
    get_attr: the tensor itself)?"""
    if node.op == "get_attr":
        obj = gm
        for part in node.target.split("."):
            obj = getattr(obj, part, None)
        return isinstance(obj, torch.Tensor) and obj.requires_grad
    ex = node.meta.get("example_value")
    return isinstance(ex, torch.Tensor) and ex.requires_grad


def _contiguous_strides(shape):
    strides, acc = [], 1
    for size in reversed(tuple(shape)):
        strides.append(acc)
        acc *= max(size, 1)
    return tuple(reversed(strides))
