"""Backends: the compilers a captured fx graph is handed to.

One file per backend family, each registering its names in registry.py:
registry.py (names, lookup, the error policy `wrap`, verify), debugging.py
("eager", "aot_inductor_debug"), aot/ ("aot_eager": AOT autograd with
eager semantics), inductor.py, torchscript.py ("ts", "nnc"),
cudagraphs.py, autotune.py ("autotune": the fastest correct candidate
per graph, stored on disk), ddp.py (`ddp_split(backend)`: a graph cut at DDP's
bucket boundaries); common.py holds what several families share. This file
only gathers the names others import from `dynamo.backends`; importing
the family modules registers their backends.
"""
from .registry import _BACKENDS, list_backends, lookup, register_backend, wrap  # noqa: F401
from .debugging import aot_inductor_debug, eager  # noqa: F401
from .aot import (_AotRuntime, _aot_inputs, _grad_deps, _mutates, _share_storage,  # noqa: F401
                  _size1_stride_hazard, aot_eager)
from .inductor import inductor  # noqa: F401
from .torchscript import nnc, ts  # noqa: F401
from . import cudagraphs  # noqa: F401
from .ddp import ddp_split  # noqa: F401
from . import autotune  # noqa: F401
