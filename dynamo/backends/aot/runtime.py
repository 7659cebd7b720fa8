"""The callable the AOT backends return (`_AotRuntime`): AOT autograd's
compiled function, called so that the user sees eager's effects, errors,
gradients and autograd metadata (backends/aot/__init__.py lists how).

Owns, per call, the saved-tensor hooks it pushes (`_SavedTensors`, popped
before it returns) and the hooks it registers on the compiled function's
autograd node, which hold the call's tensors by weak references only.
"""
import weakref

import torch

from ... import rng as _rng
from ...modes import hook_off
from .graph import _share_storage


def _compiled_node(outs):
    """(node, {output_nr: position}) of aot's autograd node among the
    outputs `outs`; (None, None) when no output has one."""
    node, index = None, {}
    for j, o in enumerate(outs):
        if isinstance(o, torch.Tensor) and o.grad_fn is not None:
            if node is None:
                node = o.grad_fn
            if o.grad_fn is node:
                index[o.output_nr] = j
    if node is None or type(node).__name__ != "CompiledFunctionBackward":
        return None, None
    return node, index


def _restore_creation_meta(outs, metas):
    """Give the aot outputs listed in `metas` (_output_creation_meta)
    eager's CreationMeta where it differs; returns the outputs."""
    get, put = torch._C._autograd._get_creation_meta, torch._C._autograd._set_creation_meta
    for j, meta in metas:
        o = outs[j]
        if isinstance(o, torch.Tensor) and not o._is_view() and o.requires_grad and \
                meta == torch._C._autograd.CreationMeta.MULTI_OUTPUT_NODE:
            # one of several views (unbind, split) of an intermediate: aot
            # returns a plain tensor, on which an in-place op ran where
            # eager's refuses it. A view of it carries eager's mode.
            if not isinstance(outs, list):
                outs = list(outs)
            o = outs[j] = o.view_as(o)
        if isinstance(o, torch.Tensor) and o._is_view():
            try:
                if get(o) != meta:
                    put(o, meta)
            except RuntimeError:    # no autograd view metadata (an inference tensor): left as it is
                pass
    return outs


class _SavedTensors:
    """The tensors aot's node saves in one call, held through saved-tensor
    hooks (pushed around the compiled call when grad is on and no hooks of
    the program's own are active, whose semantics then stand).

    aot's node computes every output's gradient in one backward, reading
    all it saved, where eager's autograd reads only what the reached
    outputs' own nodes saved. A program that writes an input or output in
    place after the call (a no_grad `x.sub_(1)`, an `x[0].add_(1)` in the
    next graph) makes aot's version check fail where eager's backward,
    which reaches no node that saved that memory, runs. So:
      - a saved tensor on the memory of an input or output of the call
        that eager saves for only some of the node's outputs (or none:
        _saved_inputs) is copied when the call returns; after a write, a
        backward reading it gets the copy: the value eager's own nodes
        would have computed with (where a reached output's eager backward
        reads that memory, _watch_saved raises eager's error first);
      - a backward that reaches no output of the node (every gradient
        None: its results are dropped, _AotRuntime._gate) reads the
        tensors as they are;
      - otherwise a written tensor raises autograd's version error, as
        without the hooks."""

    __slots__ = ("held", "reached")

    def __init__(self):
        self.held = []          # [tensor, version at the save, copy or None]
        self.reached = None     # output positions the current backward reaches (None: not known)

    @classmethod
    def push(cls):
        A = torch._C._autograd
        if A._top_saved_tensors_default_hooks(True) is not None or not A._saved_tensors_hooks_is_enabled():
            return None
        kept = cls()
        A._push_saved_tensors_default_hooks(kept.pack, kept.unpack)
        return kept

    def pack(self, t):
        h = [t, t._version, None]
        self.held.append(h)
        return h

    def unpack(self, h):
        t, version, copy = h
        if t._version == version or self.reached == set():
            return t
        if copy is not None:
            return copy
        raise RuntimeError(
            "one of the variables needed for gradient computation has been modified by an inplace "
            f"operation: [{t.type()} {list(t.shape)}] is at version {t._version}; expected version "
            f"{version} instead")

    def settle(self, args, outs, node, index, saved):
        """After the call: copy what a later write could make eager's and
        aot's backward disagree on, and record each backward's reach."""
        readers = {}            # storage -> output positions whose eager backward reads it
        for where, k, js in saved:
            t = args[k] if where == "arg" else outs[k]
            if isinstance(t, torch.Tensor):
                key = _storage_key(t)
                readers[key] = readers.get(key, frozenset()) | js
        exposed = {_storage_key(t) for t in (*args, *outs) if isinstance(t, torch.Tensor)}
        every = frozenset(index.values())
        for h in self.held:
            t, version, _ = h
            key = _storage_key(t)
            if key is not None and key in exposed and t._version == version and \
                    not every <= readers.get(key, frozenset()):
                h[2] = t.detach().clone()

        def reach(grad_outputs):
            self.reached = {index.get(f) for f, g in enumerate(grad_outputs) if g is not None}
        node.register_prehook(reach)


def _storage_key(t):
    """The identity of tensor t's storage (None: it has none)."""
    try:
        return t.untyped_storage()._cdata
    except Exception:  # noqa: BLE001 - no storage (a subclass, meta)
        return None


class _AotRuntime:
    """The callable the aot backends return (backends/aot/__init__.py lists
    what it restores of eager's semantics)."""

    def __init__(self, compiled, eager_forward, seeded, deps, attr_keys):
        self.compiled = compiled
        self.eager_forward = eager_forward
        self.seeded = seeded
        self.deps = deps
        self.attr_keys = attr_keys

    mutates = True
    fw_failed = None        # [bool] cell the forward graph sets when it raises
    views = ()              # _output_creation_meta: outputs given eager's CreationMeta
    saved = ()              # _saved_inputs: ((where, k, outputs), ...) memory eager's backward reads
    detached = ()           # _hoist_output_detach: ((j, i), ...) output j is output i detached
    no_grad = ()            # _no_grad_outputs: outputs eager returns not requiring grad

    def __call__(self, *args):
        tensors = [a for a in args if isinstance(a, torch.Tensor)]
        if self.mutates and len(tensors) > 1 and _share_storage(tensors):
            # mutated inputs that alias each other: aot's synthetic-base path
            # (which has failed after writing its mutations back); the
            # captured graph's ops run eagerly instead
            return self.eager_forward(*args)
        rng = _rng.save() if self.seeded else None
        versions = [t._version for t in tensors]
        if self.fw_failed is not None:
            self.fw_failed[0] = False
        grad = torch.is_grad_enabled()
        # the autograd edges of the inputs as the node records them: an
        # input the graph writes has a new grad_fn after the call
        edges = [(a.grad_fn, a.output_nr) if isinstance(a, torch.Tensor) else None for a in args] \
            if grad and self.mutates and self.deps is not None else None
        kept = _SavedTensors.push() if grad else None
        try:
            try:
                outs = self.compiled(*args)
            finally:
                if kept is not None:
                    torch._C._autograd._pop_saved_tensors_default_hooks()
        except Exception:  # noqa: BLE001 - replayed op by op: eager's effects, eager's error
            torch._C._set_grad_enabled(grad)    # the graph may have failed inside a no_grad region
            in_graph = self.fw_failed is not None and self.fw_failed[0]
            if not in_graph and versions != [t._version for t in tensors]:
                raise           # it failed after writing to an input: a replay would write twice
            if rng is not None:
                _rng.restore(rng)
            return self.eager_forward(*args)
        if self.detached:
            outs = list(outs)
            for j, i in self.detached:
                outs[j] = outs[i].detach()
        if any(outs[j].requires_grad for j in self.no_grad):
            outs = list(outs)
            for j in self.no_grad:
                outs[j] = outs[j].detach()
        if torch.is_grad_enabled():
            node, index = _compiled_node(outs)
            if node is not None:
                self._gate(args, node, index, edges)
                if kept is not None:
                    kept.settle(args, outs, node, index, self.saved)
                if self.saved:
                    self._watch_saved(args, outs, node, index)
        if self.views:              # after the gate: it reads aot's own outputs' grad_fn
            outs = _restore_creation_meta(outs, self.views)
        return outs

    def _watch_saved(self, args, outs, node, index):
        """Make the node's backward raise eager's error when memory of an
        input or output that eager's autograd saved a value on
        (self.saved: _saved_inputs) was written in place after the call,
        and the backward reaches an output whose eager backward reads it.
        Each tensor is held as a detached alias, which shares its version
        counter: a write counts even where the program dropped the tensor
        after it (`t1 += t0; t1 = t1 * 3`), as eager's saved value keeps
        it. The alias keeps the memory eager's saved value keeps, until the
        node is freed; it has no grad_fn, so it makes no cycle with the
        node that holds this hook."""
        held = []
        for where, k, outputs in self.saved:
            t = args[k] if where == "arg" else outs[k]
            if isinstance(t, torch.Tensor):
                held.append((t.detach(), t._version, outputs))

        def check(grad_outputs):
            reached = {index.get(f) for f, g in enumerate(grad_outputs) if g is not None}
            for t, version, outputs in held:
                if t._version != version and (None in reached or reached & outputs):
                    raise RuntimeError(
                        "one of the variables needed for gradient computation has been modified by an "
                        f"inplace operation: [{t.type()} {list(t.shape)}] is at version {t._version}; "
                        f"expected version {version} instead (a compiled graph's input or output, saved for "
                        "its backward, was written in place after the call)")
        node.register_prehook(check)

    def _gate(self, args, node, index, edges=None):
        leaf, inner = dict(self.attr_keys), {}
        for i, a in enumerate(args):
            if isinstance(a, torch.Tensor) and a.requires_grad:
                fn, nr = edges[i] if edges is not None else (a.grad_fn, a.output_nr)
                if fn is None:
                    leaf[id(a)] = leaf.get(id(a), frozenset()) | {("arg", i)}
                else:
                    key = (fn, nr)
                    inner[key] = inner.get(key, frozenset()) | {("arg", i)}
        deps, mut_deps = self.deps or (None, None)
        mut_index = {}          # node output -> input i: its new value (copied back into the input)
        for i in mut_deps or ():
            a = args[i] if i < len(args) else None
            fn = getattr(a, "grad_fn", None)
            for nf, nr in (fn.next_functions if fn is not None else ()):
                if nf is node:
                    mut_index[nr] = i
        # with two outputs or more on the node, eager's gradients can be
        # recomputed (see _eager_grads); not when the graph mutates its
        # inputs (they would be written again) or draws random numbers
        redo = self._eager_grads(args, node, index) \
            if len(index) > 1 and not self.mutates and not self.seeded else None

        def drop_unreached(grad_inputs, grad_outputs):
            if all(g is None for g in grad_outputs):
                # no output reached (only an input's path from a later
                # graph whose gate dropped it): eager's inputs get no grad
                return tuple(None for _ in grad_inputs)
            new = list(grad_inputs)
            reached = set()
            for f, g in enumerate(grad_outputs):
                if g is None:
                    continue
                j = index.get(f)
                if deps is not None and j is None and f in mut_index:
                    reached |= mut_deps[mut_index[f]]
                    continue
                if j is None or deps is None:   # an output we cannot attribute: keep every gradient
                    reached = None
                    break
                reached |= deps[j]
            if reached is not None:
                for k, (fn, nr) in enumerate(node.next_functions):
                    if fn is None or new[k] is None:
                        continue
                    var = getattr(fn, "variable", None)
                    keys = leaf.get(id(var)) if var is not None else inner.get((fn, nr))
                    if keys and not (keys & reached):
                        new[k] = None
            # an output the loss does not reach still gets a gradient, zeros,
            # through aot's backward: where that path meets an inf or NaN
            # (the std of one row, an exp that overflowed) 0 * inf made NaN
            # in a gradient eager's autograd, which never runs that path,
            # computes finite. Then eager's gradients are recomputed.
            if redo is not None and any(g is None for g in grad_outputs) and not _finite(new):
                eager = redo(grad_outputs)
                if eager is not None:
                    new = eager
            return tuple(new)
        node.register_hook(drop_unreached)

    def _eager_grads(self, args, node, index):
        """A function of the node's grad_outputs giving eager's gradients
        for its inputs (one per next function, None where eager's autograd
        does not reach): the captured graph run again op by op on the
        call's inputs (detached: its own leaves), differentiated for the
        outputs reached. None from it, and aot's gradients are kept, when
        an input has gone or changed (its version) since the call, or the
        inputs cannot be matched to the node's edges. The inputs are held
        by weak references: the gate keeps nothing alive."""
        held = [(weakref.ref(a), a._version) if isinstance(a, torch.Tensor) else (None, a) for a in args]
        attr_ids = self.attr_keys
        eager_forward = self.eager_forward

        def redo(grad_outputs):
            if torch.is_grad_enabled():
                # a backward with create_graph: the gradients recomputed here
                # would hang off the detached copies, not the inputs (aot's
                # own refuses the double backward)
                return None
            live = []
            for ref, v in held:
                if ref is None:
                    live.append(v)
                    continue
                a = ref()
                if a is None or a._version != v:
                    return None
                live.append(a)
            subs, inputs, owners, claimed = list(live), [], [], set()
            for fn, nr in node.next_functions:
                if fn is None:
                    owners.append(())
                    continue
                var = getattr(fn, "variable", None)
                pos = [i for i, a in enumerate(live) if isinstance(a, torch.Tensor) and a.requires_grad and
                       ((a.grad_fn is None and a is var) or (a.grad_fn is fn and a.output_nr == nr))]
                if not pos:
                    if var is None:
                        return None
                    subs_of = [var]             # a parameter the graph reads itself
                elif claimed.intersection(pos) or (var is not None and id(var) in attr_ids):
                    return None
                else:
                    claimed.update(pos)
                    for i in pos:
                        subs[i] = live[i].detach().requires_grad_(True)
                    subs_of = [subs[i] for i in pos]
                owners.append(tuple(range(len(inputs), len(inputs) + len(subs_of))))
                inputs.extend(subs_of)
            try:
                with torch.enable_grad(), hook_off():
                    outs = eager_forward(*subs)
                targets, tangents = [], []
                for f, g in enumerate(grad_outputs):
                    if g is None:
                        continue
                    j = index.get(f)
                    o = outs[j] if j is not None else None
                    if not isinstance(o, torch.Tensor) or not o.requires_grad:
                        return None
                    targets.append(o)
                    tangents.append(g)
                got = torch.autograd.grad(targets, inputs, tangents, allow_unused=True)
            except Exception:  # noqa: BLE001 - the recomputation failed: aot's gradients stand
                return None
            result = []
            for owner in owners:
                gs = [got[i] for i in owner if got[i] is not None]
                result.append(sum(gs[1:], gs[0]) if gs else None)
            return result
        return redo


def _finite(tensors):
    """Are all the tensors (None skipped) free of inf and NaN?"""
    return all(t is None or not (t.is_floating_point() or t.is_complex()) or bool(torch.isfinite(t).all())
               for t in tensors)
