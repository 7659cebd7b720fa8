"""Soak: T threads x N calls of compiled functions, with recompiles and
resets from finalizers, weakref callbacks and compiled frames (issue 29's
"8 threads x 1,000,000 calls, no crash, no hang, no stale hit").

    python tests/workloads/soak.py [--threads 8] [--calls 1000000]
                                   [--reset-every 100000] [--deadline-s D]
                                   [--summary FILE.json] [--progress-s 30]

Owns nothing of dynamo; a tool (not collected by pytest). Each thread
calls, in turn:
- shared functions (one code object for all threads), whose result depends
  on their arguments only: `arith(x, k)` (a branch on the int k and
  shapes that change: recompiles, automatic dynamic), `breaking(x, k)` (a
  graph break: resume functions);
- its own functions, exec'd in a globals dict of its own, whose result
  depends on a global the thread rewrites every few hundred calls
  (`scaled(x)`: a recompile per value, then hits on the older entries) and
  its own module whose attribute flips (`Flip.forward`).
Every result is compared with what the function returns eagerly (the same
function object called outside dynamo): a difference is a stale hit (or a
wrong compile) and is counted and reported. Every `--reset-every` calls a
thread arms one reset, made in turn by a finalizer of cyclic garbage (run
by the cycle collector in whichever thread), a weakref callback, or a
compiled frame (reset() inside a compiled function, after a graph break);
the finalizer and the callback also call a compiled function (checked
too, unless the cycle collector ran the finalizer inside a compile, where
the tracer's FakeTensorMode is active: counted apart).

A hang is caught by faulthandler (every thread's stack on stderr, exit status 1) at
--deadline-s + 120 s (or 3 h without a deadline). With --deadline-s the
threads stop starting calls at D seconds and the summary says how many
calls ran. Exit status 0 when every thread ran all its calls with no
mismatch and no exception; 1 otherwise. The last stdout line is the JSON
summary (also written to --summary).
"""
import argparse
import faulthandler
import gc
import json
import os
import platform
import sys
import threading
import time
import weakref

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)

import torch  # noqa: E402
from torch._subclasses.fake_tensor import FakeTensor  # noqa: E402
from torch.utils._python_dispatch import _get_current_dispatch_mode  # noqa: E402

import dynamo  # noqa: E402
from dynamo import _C  # noqa: E402

SIZES = (2, 3, 5, 8)


def _brk():
    print("", end="")           # a graph break (print is not traced)


def arith(x, k):
    y = x * (k + 1)
    if k % 2:
        y = y - 1
    return y.sum() + x.shape[0]


def breaking(x, k):
    y = x + k
    _brk()
    return y * 2


_RESET_NOW = [0]                # resets armed for breaking_reset's next call


def breaking_reset(x, k):
    y = x - k
    _brk()
    if _RESET_NOW[0] > 0:
        _RESET_NOW[0] -= 1
        dynamo.reset()          # reset() inside a compiled frame
    return y * 3


_OWN_SRC = '''
def scaled(x):
    return x * SCALE + OFFSET
'''


class Flip(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.flag = False

    def forward(self, x):
        if self.flag:
            return x * 2
        return x - 1


class Stats:
    def __init__(self, threads):
        self.calls = [0] * threads
        self.mismatches = []
        self.mismatch_count = 0
        self.errors = []
        self.resets_armed = {"finalizer": 0, "weakref": 0, "frame": 0}
        self.finalizer_calls = 0
        self.side_calls_checked = 0
        self.side_calls_under_fake_mode = 0
        # reentrant: a finalizer run by the cycle collector while this
        # thread holds it (inside a `with`) takes it again (a plain Lock
        # deadlocked the soak: issue 29's reset() pattern, in the harness)
        self.lock = threading.RLock()

    def mismatch(self, what):
        with self.lock:
            self.mismatch_count += 1
            if len(self.mismatches) < 20:
                self.mismatches.append(what)


def _same(a, b):
    return type(a) is type(b) and a.shape == b.shape and a.dtype == b.dtype and torch.equal(a, b)


class Soak:
    def __init__(self, args):
        self.args = args
        self.stats = Stats(args.threads)
        self.backend = "eager"
        self.opt_arith = dynamo.optimize(self.backend)(arith)
        self.opt_breaking = dynamo.optimize(self.backend)(breaking)
        self.opt_breaking_reset = dynamo.optimize(self.backend)(breaking_reset)
        self.stop_at = None if args.deadline_s is None else time.monotonic() + args.deadline_s
        self.fin_count = [0]

    # ---- resets from a finalizer and a weakref callback ---------------------

    def _side_call(self, n, where):
        """A compiled call made by a finalizer or weakref callback, checked."""
        x = torch.full((SIZES[n % len(SIZES)],), float(n % 7))
        k = n % 5
        got = self.opt_arith(x, k)
        want = arith(x, k)
        if (isinstance(got, FakeTensor) or isinstance(want, FakeTensor) or got.is_meta
                or want.is_meta or _get_current_dispatch_mode() is not None
                or torch._C._get_dispatch_mode(torch._C._TorchDispatchModeKey.FAKE) is not None):
            # run by the cycle collector inside a compile: the tracer's
            # FakeTensorMode is active on this thread (as under torch.compile)
            with self.stats.lock:
                self.stats.side_calls_under_fake_mode += 1
            return
        try:
            same = _same(got, want)
        except NotImplementedError:     # torch.equal dispatched to the tracer's fake mode
            with self.stats.lock:
                self.stats.side_calls_under_fake_mode += 1
            return
        with self.stats.lock:
            self.stats.side_calls_checked += 1
        if not same:
            self.stats.mismatch(f"{where}: arith(size {x.shape[0]}, k={k}) = {got}, eager {want}")

    def make_cycle(self, n):
        soak = self

        class Cycle:
            def __init__(self):
                self.me = self

            def __del__(self):
                soak.stats.finalizer_calls += 1
                dynamo.reset()
                soak._side_call(n, "finalizer")
        Cycle()                         # garbage at once: the cycle collector runs __del__

    def weakref_reset(self, n):
        class Target:
            pass
        t = Target()
        soak = self

        def on_dead(_ref):
            dynamo.reset()
            soak._side_call(n, "weakref callback")
        r = weakref.ref(t, on_dead)
        del t                           # the callback runs here
        return r

    # ---- one thread ------------------------------------------------------------

    def worker(self, i):
        args, st = self.args, self.stats
        ns = {"SCALE": 1.0, "OFFSET": float(i), "__name__": f"soak_thread_{i}"}
        exec(compile(_OWN_SRC, f"<soak thread {i}>", "exec"), ns)
        scaled = ns["scaled"]
        opt_scaled = dynamo.optimize(self.backend)(scaled)
        flip = Flip()
        opt_flip = dynamo.optimize(self.backend)(flip)
        xs = [torch.arange(float(n)) + i for n in SIZES]
        kinds = ("finalizer", "weakref", "frame")
        next_reset = args.reset_every * (i + 1) // args.threads    # threads armed at different times
        armed = 0
        try:
            for it in range(args.calls):
                if self.stop_at is not None and time.monotonic() > self.stop_at:
                    break
                x = xs[(it // 7 + i) % len(xs)]
                k = it % 5
                which = it % 5
                if which == 0:
                    got, want = self.opt_arith(x, k), arith(x, k)
                elif which == 1:
                    got, want = self.opt_breaking(x, k), breaking(x, k)
                elif which == 2:
                    if (it // 5) % 300 == 0:
                        ns["SCALE"] = float(1 + (it // 1500) % 3)   # a new value: a recompile or an older entry
                    got, want = opt_scaled(x), scaled(x)
                elif which == 3:
                    if (it // 5) % 400 == 0:
                        flip.flag = not flip.flag
                    got, want = opt_flip(x), flip(x)
                else:
                    got, want = self.opt_breaking_reset(x, k), breaking_reset(x, k)
                if not _same(got, want):
                    st.mismatch(f"thread {i} call {it} (kind {which}, size {x.shape[0]}, k={k}): "
                                f"{got.tolist()} != eager {want.tolist()}")
                st.calls[i] = it + 1
                if it == next_reset:
                    next_reset += args.reset_every
                    kind = kinds[(armed + i) % 3]
                    armed += 1
                    with st.lock:
                        st.resets_armed[kind] += 1
                    if kind == "finalizer":
                        self.make_cycle(it)
                    elif kind == "weakref":
                        self.weakref_reset(it)
                    else:
                        _RESET_NOW[0] += 1
        except BaseException as e:  # noqa: BLE001 - reported in the summary
            import traceback
            st.errors.append(f"thread {i}: {''.join(traceback.format_exception(e))[-3000:]}")

    def run(self):
        args = self.args
        threads = [threading.Thread(target=self.worker, args=(i,), daemon=True)
                   for i in range(args.threads)]
        t0 = time.monotonic()
        cpu0 = time.process_time()
        for t in threads:
            t.start()
        last = t0
        while any(t.is_alive() for t in threads):
            for t in threads:
                t.join(1.0)
            if time.monotonic() - last >= args.progress_s:
                last = time.monotonic()
                print(f"soak: {last - t0:.0f} s, {sum(self.stats.calls):,} calls, "
                      f"{_C.reset_count():,} resets, {self.stats.mismatch_count} mismatches",
                      file=sys.stderr, flush=True)
        gc.collect()
        wall = time.monotonic() - t0
        st = self.stats
        total = sum(st.calls)
        summary = {
            "threads": args.threads, "calls_per_thread": args.calls,
            "calls_done": st.calls, "calls_total": total,
            "complete": total == args.threads * args.calls,
            "resets": _C.reset_count(), "resets_armed": st.resets_armed,
            "finalizer_runs": st.finalizer_calls,
            "side_calls_checked": st.side_calls_checked,
            "side_calls_under_fake_mode": st.side_calls_under_fake_mode,
            "mismatches": st.mismatch_count, "mismatch_examples": st.mismatches,
            "errors": st.errors,
            "wall_s": round(wall, 1), "cpu_s": round(time.process_time() - cpu0, 1),
            "calls_per_s": round(total / wall) if wall else None,
            "python": platform.python_version(), "torch": torch.__version__,
        }
        return summary


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--threads", type=int, default=8)
    ap.add_argument("--calls", type=int, default=1_000_000, help="calls per thread")
    ap.add_argument("--reset-every", type=int, default=100_000,
                    help="calls of a thread between two resets it arms")
    ap.add_argument("--deadline-s", type=float, default=None,
                    help="start no call after this many seconds (the summary counts what ran)")
    ap.add_argument("--progress-s", type=float, default=30.0)
    ap.add_argument("--summary", default=None)
    args = ap.parse_args()
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    torch.set_num_threads(1)
    hang_s = (args.deadline_s + 120) if args.deadline_s is not None else 3 * 3600
    faulthandler.dump_traceback_later(hang_s, exit=True)
    import warnings
    warnings.simplefilter("ignore")
    summary = Soak(args).run()
    faulthandler.cancel_dump_traceback_later()
    line = json.dumps(summary)
    if args.summary:
        with open(args.summary, "w") as f:
            f.write(line + "\n")
    print(line, flush=True)
    ok = summary["complete"] and summary["mismatches"] == 0 and not summary["errors"]
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
