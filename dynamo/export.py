"""dynamo.export(): one whole-program graph for a call, or an error.

Placeholder: replaced once the pipeline exposes graph-input sources.
"""


def export(fn, *args, **kwargs):
    raise NotImplementedError("export is not implemented yet")
