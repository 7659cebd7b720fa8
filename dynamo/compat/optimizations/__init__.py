"""TorchDynamo-compatible home of the backend registry.

`dynamo.optimizations.BACKENDS` is the registry dynamo.optimize() resolves
names in (the same dict object as dynamo.backends', so a backend added
through either is visible to both); `dynamo.optimizations.backends` exposes
each registered backend as a module attribute (backends.eager, backends.nnc,
...). No backends of its own live here: they are in dynamo.backends.
"""
from ...backends import _BACKENDS as BACKENDS  # noqa: F401
from . import backends  # noqa: F401
