"""Instructions per call of a function with one graph break, with and
without the break's probe (core/breakprobe.c), under callgrind: what
measuring a break's eager region costs (issue 30, item 4).

    python bench/break_cost.py [--calls N] [--out FILE.json]

The function is `x = x + 1; cheap(x); return x * 2` with `cheap` marked
torch.compiler.disable: two graphs, one break, one resume call per call.
Cases, each in its own process under `valgrind --tool=callgrind`,
collecting only inside `starmap_next` over the N timed calls (the
instrumentation starts just before the loop, as in bench/guard_cost.py):

  * no probes:  config.break_timing False at compile time (no probe emitted);
  * period 0:   probes emitted, counting runs only (no clock read);
  * period 8:   the default, one run in 8 timed (two clock_gettime calls);
  * period 1:   every run timed.

Needs valgrind and its headers and a C compiler; only bench/ measures speed.
"""
import argparse
import json
import os
import re
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)

from guard_cost import _HELPER  # noqa: E402  (the callgrind start request)

_CHILD = r"""
import sys, collections, ctypes, itertools, torch
import dynamo
case, n, helper = sys.argv[1], int(sys.argv[2]), ctypes.CDLL(sys.argv[3])
torch.set_num_threads(1)

@torch.compiler.disable
def cheap(x):
    return 1

def f(x):
    x = x + 1
    cheap(x)
    return x * 2

x = torch.randn(8)
dynamo.config.break_timing = case != "no probes"
dynamo.config.break_sample_period = {"no probes": 0, "period 0": 0, "period 8": 8, "period 1": 1}[case]
fn = dynamo.optimize("eager")(f)
with torch.no_grad():
    for _ in range(200):
        fn(x)
    helper.start_instrumentation()
    collections.deque(itertools.starmap(fn, itertools.repeat((x,), n)), maxlen=0)
"""

CASES = ("no probes", "period 0", "period 8", "period 1")


def run_cases(calls, tmp, jobs):
    env = {**os.environ, "PYTHONPATH": ROOT, "OMP_NUM_THREADS": "1"}
    helper = os.path.join(tmp, "vghelper.so")
    with open(helper + ".c", "w") as f:
        f.write(_HELPER)
    subprocess.run(["cc", "-O1", "-shared", "-fPIC", helper + ".c", "-o", helper], check=True)
    result, todo = {}, list(CASES)
    while todo:
        batch, todo = todo[:jobs], todo[jobs:]
        procs = {}
        for case in batch:
            out = os.path.join(tmp, "callgrind." + case.replace(" ", "_"))
            cmd = ["valgrind", "--tool=callgrind", "--instr-atstart=no", "--collect-atstart=no",
                   "--toggle-collect=starmap_next", f"--callgrind-out-file={out}",
                   sys.executable, "-c", _CHILD, case, str(calls), helper]
            procs[case] = (subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                            text=True, env=env), out)
        for case, (proc, out) in procs.items():
            _, stderr = proc.communicate()
            if proc.returncode != 0:
                raise RuntimeError(f"{case}: exit {proc.returncode}\n{stderr[-3000:]}")
            with open(out) as f:
                m = re.search(r"^(?:summary|totals): (\d+)", f.read(), re.M)
            result[case] = int(m.group(1)) / calls
    return result


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--calls", type=int, default=2000)
    ap.add_argument("--jobs", type=int, default=2, help="callgrind processes at a time")
    ap.add_argument("--out", default=None, help="write the figures as JSON")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        found = run_cases(args.calls, tmp, args.jobs)
    base = found["no probes"]
    print(f"one graph break per call, instructions per call (callgrind, {args.calls} calls)")
    print(f"{'case':10} {'per call':>10} {'over no probes':>15} {'%':>7}")
    for case in CASES:
        print(f"{case:10} {found[case]:10.0f} {found[case] - base:15.0f} "
              f"{100 * (found[case] - base) / base:6.2f}%")
    if args.out:
        with open(args.out, "w") as f:
            json.dump({"calls": args.calls, "instructions_per_call": found}, f, indent=2)


if __name__ == "__main__":
    main()
