"""Kernel-time tile choice for the Triton kernels Inductor generates for our
graphs (config.inductor_kernel_timing = "device").

The problem: Inductor picks each generated Triton kernel's tile size
(XBLOCK, YBLOCK, warps) at the kernel's first launch. It times every
candidate with CUDA events around one launch from Python. The GPU then
waits for Python between the events, so a kernel of a few microseconds
measures as the host's launch latency. On an H200 with torch 2.11, all six
tiles of one BERT transpose kernel measured 50-56 us; in the graph the
kernel runs for 2.5 us. The pick is noise, and a bad draw (XBLOCK=1,
YBLOCK=1024) makes the kernel 5x slower for the life of the process.

What this module does: each candidate is launched N times back to back
inside a CUDA graph, and graph replays are timed, so only the GPU's time
per launch counts. A kernel that writes one of its inputs runs on a clone
of that input, as under Inductor's timing: inside the graph, each launch
is preceded by a copy of the original into the clone (and by the zeroing
of arguments Inductor resets to zero), so every launch sees the same
inputs and the caller's tensors keep their values. The time of those
copies alone, measured once per kernel by the same method, is subtracted:
the same amount for every candidate. Clones are made only where they fit
(_clones_fit). Inductor's own timing still runs where they do not, for
user-written Triton kernels, on devices other than CUDA, during a
CUDA-graph capture, and when anything here fails: a failure costs the
better choice, never the call.

Scope: `instrument_new_modules(start)` patches the autotuners (instance
attribute `bench`) of the modules Inductor's code cache loaded after
`start`, the modules of the graph just compiled. torch.compile's kernels
in the same process keep Inductor's timing, unless both compilers
generated the very same module. The two then share one kernel object,
which changes the timing method of that kernel alone, not its results.

Owns nothing after the patch: the patched method lives on the autotuner,
which Inductor owns. Imports torch._inductor only when called (by
backends/inductor.py, inside a compile).
"""
import logging

log = logging.getLogger(__name__)

LAUNCHES = 20       # launches of the candidate per captured graph
REPLAYS = 5         # timed replays; the fastest counts


def module_count():
    """How many modules Inductor's code cache has loaded (the `start` of
    instrument_new_modules), or None when torch has no such cache."""
    try:
        from torch._inductor.codecache import PyCodeCache
        return len(PyCodeCache.modules)
    except Exception:  # noqa: BLE001 - another torch: no instrumenting
        return None


def instrument_new_modules(start):
    """Patch the Triton autotuners found in the modules loaded after
    `start` (module_count()'s value before a compile). Returns how many
    were patched."""
    if start is None:
        return 0
    try:
        from torch._inductor.codecache import PyCodeCache
        from torch._inductor.runtime.triton_heuristics import CachingAutotuner
    except Exception:  # noqa: BLE001 - no Triton / another torch
        return 0
    patched = 0
    for mod in list(PyCodeCache.modules[start:]):
        for value in list(vars(mod).values()):
            if isinstance(value, CachingAutotuner) and "bench" not in vars(value):
                value.bench = _DeviceTimeBench(value)
                patched += 1
    return patched


class _DeviceTimeBench:
    """autotuner.bench (Inductor's: launcher, *args, **kwargs -> ms per
    launch), timed by CUDA-graph replays where that is the same launch.

    A class, not a closure: Inductor pickles autotuners (its FX graph cache,
    its compile workers) with their instance dict, where this patch lives.
    It pickles as a fresh patch of the unpickled autotuner; the baselines,
    keyed by device addresses, are not carried."""
    __slots__ = ("autotuner", "baseline")

    def __init__(self, autotuner):
        self.autotuner = autotuner
        self.baseline = {}                      # key of the args -> ms of the copies alone

    def __reduce__(self):
        return (_DeviceTimeBench, (self.autotuner,))

    def __call__(self, launcher, *args, with_profiler=False, **kwargs):
        autotuner = self.autotuner
        inductor_bench = type(autotuner).bench.__get__(autotuner)
        try:
            plain = not with_profiler and _plain_launch(autotuner, launcher)
        except Exception:  # noqa: BLE001 - an autotuner of another shape
            plain = False
        if not plain:
            return inductor_bench(launcher, *args, with_profiler=with_profiler, **kwargs)
        try:
            return _time_candidate(autotuner, launcher, args, kwargs, self.baseline)
        except Exception as e:  # noqa: BLE001 - Inductor's timing instead
            log.debug("kernel timing: %s; Inductor's timing used", e)
            return inductor_bench(launcher, *args, **kwargs)


def _time_candidate(autotuner, launcher, args, kwargs, baseline):
    """ms per launch of one candidate. Arguments the kernel writes are
    cloned once; in the graph each launch is preceded by what Inductor does
    before its timed launch: the clones refilled from the originals, the
    reset arguments zeroed. That preparation's own time (`baseline`, once
    per argument set) is subtracted."""
    mutated = set(autotuner.mutated_arg_names or ())
    reset = set(getattr(autotuner, "reset_to_zero_arg_names", None) or ())
    if not mutated and not reset:
        return graph_time_ms(lambda stream: launcher(*args, **kwargs, stream=stream))
    from torch._inductor.compile_fx import clone_preserve_strides
    names = autotuner.fn.arg_names
    named = list(zip(names, args)) + list(kwargs.items())
    if not _clones_fit(autotuner, [a for n, a in named if n in mutated]):
        raise MemoryError("no room on the device for clones of the written arguments")
    clones = {n: clone_preserve_strides(a) for n, a in named if n in mutated}
    originals = {n: a for n, a in named if n in mutated}
    zeroed = [a for n, a in named if n in reset]
    call_args = [clones.get(n, a) for n, a in zip(names, args)]
    call_kwargs = {n: clones.get(n, a) for n, a in kwargs.items()}

    def prepare():
        for n, c in clones.items():
            c.copy_(originals[n])
        for a in zeroed:
            a.zero_()

    def launch(stream):
        prepare()
        launcher(*call_args, **call_kwargs, stream=stream)

    key = tuple((n, a.data_ptr(), tuple(a.shape)) for n, a in named
                if n in mutated or n in reset)
    if key not in baseline:
        baseline[key] = graph_time_ms(lambda stream: prepare())
    return max(graph_time_ms(launch) - baseline[key], 1e-6)


def _clones_fit(autotuner, tensors):
    """May `tensors` be cloned for the timing? Inductor's own timing clones
    only under the peak of memory allocated so far, and otherwise copies
    the written arguments to the host and back (its optimize_mem). Here a
    clone is also allowed where it takes at most half of the memory still
    free on the device (the caching allocator's unused blocks plus the
    driver's free memory): it raises the peak but cannot bring the run near
    an out-of-memory error. Otherwise Inductor's timing is used."""
    if not getattr(autotuner, "optimize_mem", True):
        return True
    import torch
    need = sum(_span(t) * t.element_size() for t in tensors)
    allocated = torch.cuda.memory_allocated()
    if need <= torch.cuda.max_memory_allocated() - allocated:
        return True
    free, _total = torch.cuda.mem_get_info()
    return need <= (free + torch.cuda.memory_reserved() - allocated) // 2


def _span(t):
    """Elements from a tensor's first to its last, as its strides lay them
    out (what clone_preserve_strides allocates)."""
    if t.numel() == 0:
        return 0
    return 1 + sum((n - 1) * st for n, st in zip(t.shape, t.stride()))


def _plain_launch(autotuner, launcher):
    """Would Inductor's timing launch this candidate on a CUDA device,
    outside a capture, and is the candidate one Inductor times at all (no
    register spills over its threshold), for a kernel Inductor generated?"""
    import torch
    spills = getattr(launcher, "n_spills", None)
    threshold = autotuner.inductor_meta.get("spill_threshold", 16)
    return (getattr(autotuner.device_props, "type", None) == "cuda"
            and not autotuner.custom_kernel
            and not (spills is not None and spills > threshold)
            and not torch.cuda.is_current_stream_capturing())


def graph_time_ms(launch, launches=LAUNCHES, replays=REPLAYS):
    """GPU milliseconds per call of `launch(raw_stream)`: the call is made
    once on a side stream (loading the kernel), then `launches` times inside
    a CUDA graph captured on that stream (other threads' CUDA calls are not
    disturbed: thread-local capture mode); the fastest of `replays` timed
    replays, divided by `launches`."""
    import torch
    stream = torch.cuda.Stream()
    stream.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(stream):
        launch(stream.cuda_stream)
    stream.synchronize()
    # capture_begin/end, not torch.cuda.graph(): that one empties the
    # allocator's cache (and may collect garbage) per capture, once per
    # candidate of every kernel. The launches allocate nothing.
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.stream(stream):
        graph.capture_begin(capture_error_mode="thread_local")
        try:
            for _ in range(launches):
                launch(stream.cuda_stream)
        finally:
            graph.capture_end()
    graph.replay()                              # first replay uploads the graph
    torch.cuda.synchronize()
    best = float("inf")
    for _ in range(replays):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        graph.replay()
        end.record()
        end.synchronize()
        best = min(best, start.elapsed_time(end))
    del graph
    return best / launches
