"""TorchDynamo 1.13's import paths, kept for code written against them.

The modules here give old names to what the pipeline owns elsewhere:
variables.py (the tracer's VariableTracker kinds as `torchdynamo.variables`
names them), optimizations/ (the backend registry as BACKENDS and
`optimizations.backends.<name>`), bytecode_transformation.py (`assemble`
of laid-out dis instructions), debug_utils.py (same_two_models). Nothing in
the pipeline imports them. The old paths themselves (`dynamo.variables`,
`dynamo.optimizations`, `dynamo.optimizations.backends`,
`dynamo.bytecode_transformation`, `dynamo.debug_utils`) are one-line
aliases in dynamo/ that make those names this folder's modules
(`dynamo.variables is dynamo.compat.variables`).
"""
