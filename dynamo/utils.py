"""TorchDynamo-compatible utilities: `counters`, `same`, `disable_cache_limit`.

Owns `counters`, a process-wide tally of what the compiler did, kept as
`counters[group][key] -> int` (a defaultdict of collections.Counter, so
unknown keys read as 0). The hook callback (convert_frame._add_record) feeds
it from each compile record via `count_record`; nothing here runs on a
cache hit. Groups:
  frames:        total (compile attempts), ok (an entry was installed)
  stats:         unique_graphs (graphs handed to a backend),
                 calls_captured (call_* nodes in them)
  graph_break:   break reason -> count
  unimplemented: reason a frame could not be compiled -> count
`counters.clear()` (or dynamo.utils.counters.clear()) resets it; dynamo.reset()
does not (it forgets compiled code, not history).
"""
import collections
import contextlib
import sys

from . import _C, config
from .testing import same  # noqa: F401  (re-exported: code written for TorchDynamo takes it from here)

counters = collections.defaultdict(collections.Counter)


def find_tool(name, env_var):
    """The path of one of the project's executables (`name`, e.g.
    "dynamo-dot"): $env_var when set, else build/bin/ of this checkout when
    built, else one on $PATH; None when none is found."""
    import os
    import shutil
    env = os.environ.get(env_var)
    if env:
        return env
    here = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                        "build", "bin", name)
    if os.access(here, os.X_OK):
        return here
    return shutil.which(name)


def count_record(record):
    """Add one compile record (dynamo.records.CompileRecord) to `counters`."""
    if record.status == _C.RECORD_STATUSES["LIMIT"]:     # inspect/record.h
        counters["frames"]["cache_limit"] += 1
        return
    counters["frames"]["total"] += 1
    if record.status == _C.RECORD_STATUSES["OK"]:
        counters["frames"]["ok"] += 1
        counters["stats"]["unique_graphs"] += len(record.graphs)
        counters["stats"]["calls_captured"] += record.op_count
    elif record.error:
        counters["unimplemented"][record.error.splitlines()[0]] += 1
    for br in record.break_reasons:
        counters["graph_break"][br.reason.splitlines()[0]] += 1


class disable_cache_limit(contextlib.ContextDecorator):
    """`with disable_cache_limit():` or `@disable_cache_limit()`: no limit on
    compiled entries per code object inside (config.cache_size_limit is set
    to sys.maxsize and restored afterwards)."""

    def __enter__(self):
        self._saved = config.cache_size_limit
        config.cache_size_limit = sys.maxsize
        return self

    def __exit__(self, *exc):
        config.cache_size_limit = self._saved
        return False
