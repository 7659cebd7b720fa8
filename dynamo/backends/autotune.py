"""The "autotune" backend: every graph compiled by each candidate backend,
checked against eager, timed, and the fastest kept; the choice stored on
disk so that a later process compiles only the chosen backend.

Contract:
  * Candidates (`CANDIDATES`; `config.autotune_candidates` narrows them, a
    comma-separated list): on a graph that touches a CUDA tensor "inductor",
    "max-autotune" (Inductor's max-autotune-no-cudagraphs), "reduce-overhead"
    (Inductor replayed as CUDA graphs), "cudagraphs" (AOT eager kernels in
    a CUDA graph) and "eager"; on a CPU graph "inductor" and "eager". Any
    registered backend name may be listed too (e.g. "aot_eager").
    "eager" (the captured graph as it is) is always a candidate and is the
    reference, so the choice is never slower than eager on the example.
  * Checking: each candidate's results on the example inputs must equal
    eager's: within rtol/atol 1e-3 element-wise, or an error norm within
    1e-3 of the result's norm (a GPU's TF32 convolutions and another
    reduction order differ by more than 1e-4 per element); a graph whose eager results
    change with the random seed (dropout) is checked on shapes and dtypes
    only. A candidate that fails to compile, raises or differs is dropped,
    with its reason kept for the report.
  * Timing: `config.autotune_runs` calls after 3 warm-up calls (CUDA graphs
    record during those), median wall time per call with the device
    synchronized: host overhead counts, as it does for the user.
  * What the trials must not change: the caller's random-number streams,
    the parameters and buffers the graph reads or updates (an optimizer
    step, BatchNorm's running statistics) and the example inputs are put
    back as they were after the trials.
  * Store: one JSON file per key under `store_dir()` (config.autotune_dir,
    else $DYNAMO_AUTOTUNE_DIR, else ~/.cache/dynamo/autotune). The key
    hashes the graph's code, the sizes/strides/dtypes/devices of its inputs
    and of the tensors it reads, the candidate list, the torch version and
    the device name. A stored choice is compiled with no trial; if it fails
    to compile now, the graph is tuned again. An unreadable file is
    ignored (a warning) and rewritten.
  * Report: `gm.meta["backend_choice"]` holds one line (the choice and the
    timings behind it); `stats` counts tuned and reused graphs and timed
    calls, for tests and benchmarks.

It must not keep the example inputs or the losing candidates alive after
the compile.
"""
import copy
import hashlib
import json
import os
import statistics
import time
import warnings

import torch
import torch.fx

from .. import config, testing
from ..modes import hook_off
from .compile_options import with_options
from .registry import list_backends, lookup, register_backend

STORE_VERSION = 1
WARMUP_CALLS = 3
TOLERANCE = 1e-3

stats = {"tuned": 0, "reused": 0, "timed_calls": 0}


def reset_stats():
    for k in stats:
        stats[k] = 0


def _candidate(name):
    """The backend callable of candidate `name`."""
    if name == "max-autotune":
        return with_options("inductor", lookup("inductor")[1], mode="max-autotune-no-cudagraphs")
    if name == "reduce-overhead":
        return with_options("inductor", lookup("inductor")[1], mode="reduce-overhead")
    return lookup(name)[1]


CANDIDATES = {
    "cuda": ("inductor", "max-autotune", "reduce-overhead", "cudagraphs", "eager"),
    "cpu": ("inductor", "eager"),
}


def candidates(gm, example_inputs):
    """The candidate names for this graph (config.autotune_candidates, or by
    device), "eager" always among them. ValueError for an unknown name."""
    known = (set(CANDIDATES["cuda"]) | set(CANDIDATES["cpu"]) | set(list_backends())) - {"autotune"}
    if config.autotune_candidates:
        names = [n.strip() for n in config.autotune_candidates.split(",") if n.strip()]
        unknown = [n for n in names if n not in known]
        if unknown:
            raise ValueError(f"dynamo.config.autotune_candidates: unknown candidate(s) "
                             f"{', '.join(unknown)}; known: {', '.join(sorted(known))}")
    else:
        names = list(CANDIDATES["cuda" if _on_cuda(gm, example_inputs) else "cpu"])
    return tuple(dict.fromkeys(names + ["eager"]))


def _on_cuda(gm, example_inputs):
    tensors = [x for x in example_inputs if isinstance(x, torch.Tensor)]
    tensors += list(_state_tensors(gm))
    return any(t.device.type == "cuda" for t in tensors)


def _state_tensors(gm):
    """The parameters and buffers the graph reads (shared with the model)."""
    seen = set()
    for t in list(gm.parameters()) + list(gm.buffers()):
        if id(t) not in seen:
            seen.add(id(t))
            yield t


@register_backend("autotune")
def autotune(gm, example_inputs):
    """Compile `gm` with the fastest correct candidate (see module doc)."""
    names = candidates(gm, example_inputs)
    key, key_text = _key(gm, example_inputs, names)
    stored = _load(key)
    if stored is not None and stored.get("choice") in names:
        try:
            compiled = _candidate(stored["choice"])(_graph_copy(gm), example_inputs)
        except Exception:  # noqa: BLE001 - a stored choice that no longer compiles: tune again
            compiled = None
        if compiled is not None:
            stats["reused"] += 1
            gm.meta["backend_choice"] = _describe(stored, reused=True)
            return compiled
    result, compiled = _tune(gm, example_inputs, names)
    result["key"] = key_text
    _save(key, result)
    stats["tuned"] += 1
    gm.meta["backend_choice"] = _describe(result, reused=False)
    return compiled


def _tune(gm, example_inputs, names):
    """Compile, check and time each candidate; return (result dict, the
    chosen compiled callable)."""
    real = _real_inputs(example_inputs)
    saved = _Saved(gm, real)
    timings, errors, compiled_by = {}, {}, {}
    try:
        reference, random = _reference(gm, real, saved)
        for name in names:
            try:
                fn = gm.forward if name == "eager" else _candidate(name)(_graph_copy(gm), example_inputs)
                got = _run_seeded(fn, saved.fresh_inputs())
                saved.restore_state()
                if not _matches(reference, got, shapes_only=random):
                    raise RuntimeError("results differ from eager's on the example inputs")
                timings[name] = _time(fn, saved)
                compiled_by[name] = fn
            except Exception as e:  # noqa: BLE001 - a failing candidate is dropped, with its reason
                errors[name] = f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}"[:200]
            finally:
                saved.restore_state()
    finally:
        saved.restore_all()
    choice = min(timings, key=timings.get) if timings else "eager"
    compiled = compiled_by.get(choice, gm.forward)
    result = {"version": STORE_VERSION, "choice": choice,
              "timings_ms": {n: round(t * 1e3, 4) for n, t in timings.items()},
              "errors": errors}
    return result, compiled


def _graph_copy(gm):
    """A GraphModule sharing gm's parameters and submodules with its own
    graph: a candidate that rewrites the graph leaves the others' alone,
    and the chosen one reads the model's own tensors."""
    new = torch.fx.GraphModule(gm, copy.deepcopy(gm.graph))
    new.meta = dict(getattr(gm, "meta", {}))
    return new


class _Saved:
    """The state the trials may change, saved once and put back: the
    example inputs (each trial gets fresh copies), the parameters and
    buffers the graph reads, and the random-number generators."""

    def __init__(self, gm, inputs):
        self.inputs = inputs
        self.state = [(t, t.detach().clone()) for t in _state_tensors(gm)]
        self.cpu_rng = torch.random.get_rng_state()
        self.cuda_rng = torch.cuda.get_rng_state_all() if torch.cuda.is_initialized() else None

    def fresh_inputs(self):
        return [_fresh(x) for x in self.inputs]

    def restore_state(self):
        with torch.no_grad():
            for t, copy_ in self.state:
                t.copy_(copy_)

    def restore_all(self):
        self.restore_state()
        torch.random.set_rng_state(self.cpu_rng)
        if self.cuda_rng is not None:
            torch.cuda.set_rng_state_all(self.cuda_rng)
        self.state = self.inputs = None


def _fresh(x):
    if isinstance(x, torch.Tensor):
        return x.detach().clone().requires_grad_(x.requires_grad)
    return x


def _real_inputs(example_inputs):
    """Real tensors for the trials: the example inputs as they are, or for
    fake ones (a graph with symbolic sizes) new tensors of their hinted
    sizes (random floats, zero integers) on their device."""
    from torch._subclasses.fake_tensor import FakeTensor
    out = []
    for x in example_inputs:
        if isinstance(x, FakeTensor):
            size = [_hint(s) for s in x.shape]
            if x.dtype.is_floating_point or x.dtype.is_complex:
                t = torch.randn(size, dtype=x.dtype, device=x.device)
            else:
                t = torch.zeros(size, dtype=x.dtype, device=x.device)
            out.append(t.requires_grad_(x.requires_grad))
        elif isinstance(x, torch.SymInt):
            out.append(_hint(x))
        else:
            out.append(x)
    return out


def _hint(s):
    if isinstance(s, torch.SymInt):
        return s.node.hint if s.node.hint is not None else 8
    return int(s)


def _reference(gm, inputs, saved):
    """Eager's results under seed 0, and whether the graph is random (its
    results under another seed differ)."""
    first = _run_seeded(gm.forward, saved.fresh_inputs(), seed=0)
    saved.restore_state()
    second = _run_seeded(gm.forward, saved.fresh_inputs(), seed=1)
    saved.restore_state()
    return first, not testing.same(first, second)


def _run_seeded(fn, inputs, seed=0):
    torch.manual_seed(seed)
    with hook_off():
        out = fn(*inputs)
    return _detached(out)


def _detached(out):
    if isinstance(out, torch.Tensor):
        return out.detach().clone()
    if isinstance(out, (list, tuple)):
        return type(out)(_detached(x) for x in out) if isinstance(out, tuple) \
            else [_detached(x) for x in out]
    return out


def _matches(expected, got, shapes_only):
    flat_e, flat_g = _flatten(expected), _flatten(got)
    if len(flat_e) != len(flat_g):
        return False
    for a, b in zip(flat_e, flat_g):
        if not isinstance(a, torch.Tensor):
            if type(a) is not type(b) or (not shapes_only and a != b):
                return False
        elif not isinstance(b, torch.Tensor) or (a.shape, a.dtype) != (b.shape, b.dtype):
            return False
        elif not shapes_only and not _close(a, b):
            return False
    return True


def _close(a, b):
    """Equal within what another kernel choice changes (see the module doc)."""
    if not (a.is_floating_point() or a.is_complex()):
        return torch.equal(a, b)
    if torch.allclose(a, b, rtol=TOLERANCE, atol=TOLERANCE):
        return True
    a64, b64 = a.double(), b.double()
    if not torch.isfinite(a64).all() or not torch.isfinite(b64).all():
        return bool(torch.equal(a64.isnan(), b64.isnan())) and \
            torch.allclose(a64.nan_to_num(), b64.nan_to_num(), rtol=TOLERANCE, atol=TOLERANCE)
    return float((a64 - b64).norm()) <= TOLERANCE * max(float(a64.norm()), 1.0)


def _flatten(out):
    if isinstance(out, (list, tuple)):
        return [y for x in out for y in _flatten(x)]
    return [out]


def _time(fn, saved):
    """Median seconds per call of fn over config.autotune_runs calls."""
    inputs = saved.fresh_inputs()
    sync = torch.cuda.synchronize if torch.cuda.is_initialized() else (lambda: None)
    times = []
    with hook_off():
        for i in range(WARMUP_CALLS + config.autotune_runs):
            sync()
            t0 = time.perf_counter()
            fn(*inputs)
            sync()
            if i >= WARMUP_CALLS:
                times.append(time.perf_counter() - t0)
    stats["timed_calls"] += len(times)
    return statistics.median(times)


def _describe(result, reused):
    timings = ", ".join(f"{n} {t:.3f} ms" for n, t in sorted(result["timings_ms"].items(),
                                                              key=lambda kv: kv[1]))
    failed = ", ".join(f"{n} failed ({why})" for n, why in result.get("errors", {}).items())
    how = "stored choice" if reused else "tuned"
    parts = [p for p in (timings, failed) if p]
    return f"autotune: {result['choice']} ({how}; {'; '.join(parts)})"


# ---- the store ----------------------------------------------------------

def store_dir():
    return (config.autotune_dir or os.environ.get("DYNAMO_AUTOTUNE_DIR")
            or os.path.join(os.path.expanduser("~"), ".cache", "dynamo", "autotune"))


def _meta(x):
    if isinstance(x, torch.Tensor):
        try:
            stride = tuple(str(s) for s in x.stride())
        except RuntimeError:
            stride = ()
        return ["tensor", [str(s) for s in x.shape], list(stride), str(x.dtype),
                str(x.device), bool(x.requires_grad)]
    return [type(x).__name__, repr(x) if isinstance(x, (int, float, bool, str)) else ""]


def _key(gm, example_inputs, names):
    """(file key, the text it hashes)."""
    devices = sorted({str(t.device) for t in _state_tensors(gm)}
                     | {str(x.device) for x in example_inputs if isinstance(x, torch.Tensor)})
    device_names = [torch.cuda.get_device_name(torch.device(d)) for d in devices
                    if d.startswith("cuda")]
    text = json.dumps({
        "code": gm.code,
        "inputs": [_meta(x) for x in example_inputs],
        "state": [_meta(t) for t in _state_tensors(gm)],
        "candidates": list(names),
        "torch": torch.__version__,
        "devices": device_names or devices,
        "grad": torch.is_grad_enabled(),
    }, sort_keys=True)
    return hashlib.sha256(text.encode()).hexdigest()[:32], text


def _load(key):
    path = os.path.join(store_dir(), key + ".json")
    try:
        with open(path, encoding="utf-8") as f:
            data = json.load(f)
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as e:
        warnings.warn(f"dynamo autotune: ignoring unreadable stored choice {path} "
                      f"({type(e).__name__}: {e}); tuning again", RuntimeWarning, stacklevel=2)
        return None
    if not isinstance(data, dict) or data.get("version") != STORE_VERSION \
            or not isinstance(data.get("timings_ms"), dict):
        warnings.warn(f"dynamo autotune: ignoring stored choice {path} of another "
                      f"format; tuning again", RuntimeWarning, stacklevel=2)
        return None
    return data


def _save(key, result):
    """Write the choice atomically (a temporary file renamed); a store that
    cannot be written is a warning, not an error: the compile stands."""
    directory = store_dir()
    path = os.path.join(directory, key + ".json")
    tmp = f"{path}.{os.getpid()}.tmp"
    try:
        os.makedirs(directory, exist_ok=True)
        with open(tmp, "w", encoding="utf-8") as f:
            json.dump(result, f, indent=1, sort_keys=True)
        os.replace(tmp, path)
    except OSError as e:
        warnings.warn(f"dynamo autotune: could not store the choice in {directory} "
                      f"({e}); the next process tunes again", RuntimeWarning, stacklevel=2)
        try:
            os.unlink(tmp)
        except OSError:
            pass
