"""dynamo: a Python-level JIT for PyTorch in the TorchDynamo tradition.

A PEP 523 frame hook (C) finds frames, a symbolic bytecode interpreter
records their torch operations into torch.fx graphs, a backend compiles them
and rewritten bytecode calls the result while guards hold.
"""
import sys

# The CPython versions dynamo runs on (3.13: the default build; its
# free-threaded and JIT builds are refused below).
SUPPORTED_PYTHONS = ((3, 11), (3, 12), (3, 13))


def _refuse_unsupported_python():
    """ImportError naming what is wrong with this interpreter, if anything."""
    import sysconfig
    here = f"{sys.implementation.name} {sys.version.split()[0]}"
    if sys.implementation.name != "cpython" or tuple(sys.version_info[:2]) not in SUPPORTED_PYTHONS:
        raise ImportError(
            "dynamo supports CPython " + ", ".join("%d.%d" % v for v in SUPPORTED_PYTHONS)
            + f" only; this is {here}. Create the environment with one of those "
            "(`make PYTHON=python3.12`, see README.md).")
    if sysconfig.get_config_var("Py_GIL_DISABLED"):
        raise ImportError(
            f"dynamo does not support the free-threaded build of CPython ({here}, "
            "Py_GIL_DISABLED): its frame hook and guards rely on the GIL. Use the default build.")
    if "_Py_JIT" in (sysconfig.get_config_var("PY_CORE_CFLAGS") or ""):
        raise ImportError(
            f"dynamo does not support a CPython built with the experimental JIT ({here}, "
            "--enable-experimental-jit): its frame hook builds interpreter frames by hand. "
            "Use a build without it.")


_refuse_unsupported_python()

# torch first: dynamo._C links libtorch_python, whose initialisation must
# follow torch._C's (loading it first crashes torch 2.11's import when numpy
# was imported before: seen on CPython 3.12 + torch 2.11 CUDA).
import torch  # noqa: E402,F401

def _load_extension_override():
    """Tests run the package against another build of the extension (e.g.
    the AddressSanitizer one from `make asan`) named by DYNAMO_C_PATH."""
    import importlib.machinery
    import importlib.util
    import os
    path = os.environ.get("DYNAMO_C_PATH")
    if not path or "dynamo._C" in sys.modules:
        return
    loader = importlib.machinery.ExtensionFileLoader("dynamo._C", path)
    spec = importlib.util.spec_from_file_location("dynamo._C", path, loader=loader)
    module = importlib.util.module_from_spec(spec)
    sys.modules["dynamo._C"] = module
    spec.loader.exec_module(module)


_load_extension_override()

from . import config, exc  # noqa: E402
from .backends import list_backends, register_backend  # noqa: E402
from .eval_frame import (OptimizedModule, compile, disable, optimize,  # noqa: E402
                         optimize_assert, reset, run)
from .explain import ExplainOutput, explain  # noqa: E402
from .explain_miss import MissExplanation, explain_miss  # noqa: E402
from .guard_cost import GuardCost, guard_costs  # noqa: E402
from .export import export  # noqa: E402
from .telemetry import save_snapshot  # noqa: E402
from .decorators import allow_in_graph, assume_constant_result, disallow_in_graph, skip  # noqa: E402
from .stance import set_stance  # noqa: E402
from .logs import set_logs  # noqa: E402
from .dynamic_shapes import mark_dynamic, mark_static, maybe_mark_dynamic  # noqa: E402
from . import utils  # noqa: E402,F401
from . import logs as _logs  # noqa: E402
from . import run_record as _run_record  # noqa: E402
from .decorators import install_torch_directives as _install_torch_directives  # noqa: E402
_logs.from_environment()
_run_record.from_environment()   # DYNAMO_TRACE=dir: a dynamo-top --record child
_install_torch_directives()   # torch.compiler.allow_in_graph records into dynamo's table

__all__ = ["compile", "set_stance", "set_logs", "optimize", "optimize_assert", "run", "disable", "reset", "explain", "explain_miss", "guard_costs", "export",
           "list_backends", "register_backend", "config", "exc", "OptimizedModule",
           "ExplainOutput", "save_snapshot", "allow_in_graph", "disallow_in_graph", "skip",
           "assume_constant_result", "mark_dynamic", "maybe_mark_dynamic", "mark_static"]
