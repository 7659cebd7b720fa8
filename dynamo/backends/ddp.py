"""ddp_split: a graph captured under DistributedDataParallel cut at DDP's
gradient-bucket boundaries, each piece compiled by the backend on its own.

Why: one compiled graph has one backward, which hands every parameter its
gradient at its end, so DDP's reducer starts every bucket's all-reduce
after the whole backward.  Cut where DDP's buckets end (parameters counted
from the graph's end, as DDP fills buckets in reverse order of use: the
first bucket `first_bucket_bytes`, the others `bucket_bytes`), each piece's
backward finishes its parameters' gradients while earlier pieces' backward
still runs, and the all-reduce of a bucket overlaps them, as in eager DDP.
torch.compile's DDPOptimizer does the same.

`ddp_split(backend)` wraps any backend; the sizes come from the arguments,
else from the DDP module whose forward is running at compile time
(dynamo.distributed) while `config.optimize_ddp` is on; with neither the
graph is handed on whole.  Every optimize() wraps its backend so (the
hook's callback, convert_frame._Callback).  A graph with one bucket's worth of parameters is handed on
whole.  The cut is recorded on the captured graph: `gm.meta["ddp_buckets"]`,
the qualified parameter names of each piece, first piece first, and, when it is cut,
on each node but placeholders and the output `node.meta["ddp_bucket"]`,
the index of its piece (explain(), telemetry and the tools show them).  Each
piece is compiled at its first call, with that call's inputs.
"""
import torch

from .. import config, distributed
from .registry import lookup

# DDP's defaults (torch.distributed's): the first bucket small so that its
# all-reduce starts early in the backward
FIRST_BUCKET_BYTES = 1024 * 1024
BUCKET_BYTES = 25 * 1024 * 1024


def _node_params(gm, node):
    """(name, parameter) pairs node `node` reads: a get_attr of a
    parameter, or the parameters of a call_module's module."""
    if node.op == "get_attr":
        obj = gm
        for part in node.target.split("."):
            obj = getattr(obj, part, None)
        return [(node.target, obj)] if isinstance(obj, torch.nn.Parameter) else []
    if node.op == "call_module":
        mod = gm.get_submodule(node.target)
        return [(f"{node.target}.{n}", p) for n, p in mod.named_parameters()]
    return []


def bucket_pieces(gm, bucket_bytes, first_bucket_bytes):
    """{node: piece index} for the nodes of `gm` (placeholders and output
    excluded) and the parameter names of each piece, first piece first:
    walking from the graph's end, a piece closes once the parameters that
    require grad it reads reach the bucket size (the first bucket's, then
    the others')."""
    nodes = [n for n in gm.graph.nodes if n.op not in ("placeholder", "output")]
    seen, buckets = set(), []                     # (nodes, parameter names), last piece first
    piece_nodes, piece_names, size = [], [], 0
    for node in reversed(nodes):
        cap = first_bucket_bytes if not buckets else bucket_bytes
        if size >= cap and piece_names:          # bucket full: a new piece begins here
            buckets.append((piece_nodes, piece_names))
            piece_nodes, piece_names, size = [], [], 0
        piece_nodes.append(node)
        for name, p in _node_params(gm, node):
            if p.requires_grad and id(p) not in seen:
                seen.add(id(p))
                size += p.numel() * p.element_size()
                piece_names.append(name)
    buckets.append((piece_nodes, piece_names))
    buckets.reverse()
    pieces = {node: i for i, (members, _) in enumerate(buckets) for node in members}
    return pieces, [list(reversed(names)) for _, names in buckets]


class _LazyPiece(torch.nn.Module):
    """One piece of a split graph, compiled by `compiler` at its first call."""

    def __init__(self, gm, compiler):
        super().__init__()
        # backends take graphs returning a tuple (AOT autograd insists);
        # split_module returns a piece's only value bare
        out = next(n for n in reversed(gm.graph.nodes) if n.op == "output")
        self.single = not isinstance(out.args[0], (tuple, list))
        if self.single:
            out.args = ((out.args[0],),)
            gm.recompile()
        self.gm = gm
        self.compiler = compiler
        self.compiled = None

    def forward(self, *args):
        if self.compiled is None:
            self.compiled = self.compiler(self.gm, list(args))
        out = self.compiled(*args)
        return out[0] if self.single else out


class DDPSplit:
    """The backend `ddp_split(backend)` returns (see the module docstring)."""

    def __init__(self, backend, bucket_bytes=None, first_bucket_bytes=None):
        self.name, self.compiler = lookup(backend)
        self.bucket_bytes = bucket_bytes
        self.first_bucket_bytes = first_bucket_bytes
        self.__name__ = f"ddp_split({self.name})"

    def sizes(self):
        """(bucket bytes, first bucket bytes), or None without a running
        DDP forward and without sizes given."""
        ddp = distributed.active_ddp_module() if config.optimize_ddp else None
        cap = self.bucket_bytes or getattr(ddp, "bucket_bytes_cap", None)
        if cap is None:
            return None
        return cap, self.first_bucket_bytes or min(FIRST_BUCKET_BYTES, cap)

    def __call__(self, gm, example_inputs):
        sizes = self.sizes()
        if sizes is None:
            return self.compiler(gm, example_inputs)
        pieces, names = bucket_pieces(gm, *sizes)
        gm.meta["ddp_buckets"] = names
        if len(names) <= 1:
            return self.compiler(gm, example_inputs)
        for node, piece in pieces.items():
            node.meta["ddp_bucket"] = piece
        from torch.fx.passes.split_module import split_module
        split = split_module(gm, gm, lambda node: pieces[node], keep_original_order=True)
        for name, child in list(split.named_children()):
            if name.startswith("submod_"):
                setattr(split, name, _LazyPiece(child, self.compiler))
        return split


def ddp_split(backend="inductor", bucket_bytes=None, first_bucket_bytes=None):
    """A backend that cuts each graph at DDP's bucket boundaries and
    compiles the pieces with `backend` (a name or a callable)."""
    return DDPSplit(backend, bucket_bytes, first_bucket_bytes)
