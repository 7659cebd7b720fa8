"""Helpers more than one backend family uses (aot, inductor): fake example inputs."""
import torch
from torch._subclasses.fake_tensor import FakeTensor, FakeTensorMode
from torch.fx.experimental.symbolic_shapes import ShapeEnv


def _fake_inputs(example_inputs):
    """Fakes of the tensor inputs (same sizes, strides, dtype, device;
    static shapes) from one fake mode with a shape env; other inputs as
    they are. The capture's own fakes (symbolic sizes: dynamic shapes) are
    kept as they are."""
    if any(isinstance(x, FakeTensor) for x in example_inputs):
        return example_inputs
    mode = FakeTensorMode(shape_env=ShapeEnv(allow_scalar_outputs=False))
    return [mode.from_tensor(x, static_shapes=True) if isinstance(x, torch.Tensor) else x
            for x in example_inputs]
