"""bench-only: torchvision importable where its C extension is not loadable.

Owns one thing: on a machine whose torch is the CPU build but whose
torchvision wheel is PyPI's (linked against torch's CUDA libraries; the CPU
index is not reachable from here), torchvision's `_C` fails to load and its
`_meta_registrations` then dies registering fakes for `torchvision::nms` and
`::qnms`, ops that do not exist. `install()` defines that op with a plain-torch CPU
kernel (greedy NMS, same contract as torchvision's) and lets `ops.nms` call
it; `roi_align` falls back to Python when the extension is missing (its
fallback, which torchvision wraps in a lazy torch.compile, is run plain).
The other C ops (deform_conv, ps_roi_*, roi_pool) stay missing: models that
need them fail eagerly and are counted as "eager did not run".

Must not: be imported by the project or its tests; do anything when the
extension loads (then torchvision's own kernels are used).
"""
import importlib.util
import os


def _extension_loads():
    spec = importlib.util.find_spec("torchvision")
    if spec is None:
        return True                                # nothing to do without torchvision
    import torch
    folder = os.path.dirname(spec.origin)
    for f in os.listdir(folder):
        if f.startswith("_C.") and f.endswith(".so"):
            try:
                torch.ops.load_library(os.path.join(folder, f))
                return True
            except (OSError, RuntimeError):
                return False
    return False


def _nms_cpu(dets, scores, iou_threshold):
    import torch
    order = scores.argsort(descending=True)
    x1, y1, x2, y2 = dets.unbind(1)
    area = (x2 - x1) * (y2 - y1)
    keep = []
    suppressed = torch.zeros(dets.shape[0], dtype=torch.bool)
    for i in order.tolist():
        if suppressed[i]:
            continue
        keep.append(i)
        w = (torch.minimum(x2[i], x2) - torch.maximum(x1[i], x1)).clamp(min=0)
        h = (torch.minimum(y2[i], y2) - torch.maximum(y1[i], y1)).clamp(min=0)
        inter = w * h
        suppressed |= inter / (area[i] + area - inter) > iou_threshold
    return torch.tensor(keep, dtype=torch.long)


def install():
    """Make `import torchvision` work without its extension (idempotent)."""
    if getattr(install, "lib", None) is not None or _extension_loads():
        return False
    import torch
    lib = torch.library.Library("torchvision", "DEF")
    lib.define("nms(Tensor dets, Tensor scores, float iou_threshold) -> Tensor")
    lib.impl("nms", _nms_cpu, "CPU")
    lib.define("qnms(Tensor dets, Tensor scores, float iou_threshold) -> Tensor")  # schema only
    install.lib = lib                              # the Library lives as long as the process
    import torchvision.ops.boxes as boxes
    import sys
    roi_align = sys.modules["torchvision.ops.roi_align"]   # the name is the function's
    boxes._assert_has_ops = lambda: None           # only nms reaches it on these models
    # the Python roi_align is wrapped in a lazy torch.compile (inductor, in eager):
    # run it plain, so eager is eager and each compiler sees the same Python code
    roi_align._roi_align = roi_align._roi_align.__wrapped__
    return True
