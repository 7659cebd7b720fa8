"""`dynamo.optimizations.backends.<name>`: the registered backends as
attributes (read live from dynamo.backends' registry), plus BACKENDS itself.
An unknown name raises AttributeError listing the registered ones."""
from ...backends import _BACKENDS as BACKENDS, list_backends, register_backend  # noqa: F401


def __getattr__(name):
    if name.startswith("__"):
        raise AttributeError(name)
    try:
        return BACKENDS[name]
    except KeyError:
        raise AttributeError(f"no backend {name!r}; registered: {', '.join(list_backends())}") \
            from None
