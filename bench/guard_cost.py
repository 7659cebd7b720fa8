"""Instructions per call of an optimized `add(a, b)` hit, static and dynamic
(callgrind): the guard cost of symbolic sizes (issue 24).

    python bench/guard_cost.py [--calls N] [--out FILE.json]

Each case runs in its own process under `valgrind --tool=callgrind`,
collecting only inside CPython's `starmap_next` (`--toggle-collect`): the
timed loop is `deque(starmap(fn, repeat((a, b), N)), maxlen=0)`, so the
count covers exactly the N calls (compile and warm-up calls happen before,
uncollected; instrumentation starts just before the loop, through a
client request in a helper library built with the system compiler, so
torch's import runs at valgrind's uninstrumented speed). Cases:

  * eager:   plain `add(a, b)`;
  * static:  `dynamo.optimize("eager")(add)`, sizes guarded by TENSOR_MATCH;
  * dynamic: the same with dimension 0 of `a` and `b` marked dynamic
    (`dynamo.mark_dynamic`): TENSOR_MATCH leaves the size unchecked and the
    relations (`2 <= s0`, `s1 == s0`) are SHAPE_GUARDs evaluated in C;
  * timed (`--modes static,timed`): static with guard cost sampling timing
    every lookup (`dynamo.config.guard_timing = 1`): the cost of the timed
    walk (clock reads per node and per test).
  * module cases (`--modes layer_eager,layer_static,layer_generic`): a
    function `run(block, x)` calling a block (Linear 8x8 and LayerNorm 8: 4
    parameters) plain; optimized with `config.generic_module_frames` off
    (the block ID_MATCHed, its parameters graph constants); and optimized
    after a second instance of the class came through (a generic entry:
    TYPE_MATCH on the block and its submodules, each parameter a graph
    input checked by TENSOR_MATCH). The cost of a generic module entry's
    hit against an identity entry's.

`--root DIR` measures another checkout's build (a "before" figure).

Prints instructions per call, the overhead over eager, and the ratio of the
dynamic overhead to the static one (issue 24's target: within 1.5x).
Needs valgrind and its headers (`apt-get install -y valgrind`) and a C
compiler; only bench/ measures speed.
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

_HELPER = r"""
#include <valgrind/callgrind.h>
void start_instrumentation(void) { CALLGRIND_START_INSTRUMENTATION; }
"""

_CHILD = r"""
import sys, collections, ctypes, itertools, torch
import dynamo
mode, n, helper = sys.argv[1], int(sys.argv[2]), ctypes.CDLL(sys.argv[3])
torch.set_num_threads(1)
def add(a, b):
    return a + b
a, b = torch.randn(8), torch.randn(8)
fn = add
if mode.startswith("layer"):
    class Block(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = torch.nn.Linear(8, 8)
            self.norm = torch.nn.LayerNorm(8)
        def forward(self, x):
            return self.norm(self.lin(x))
    def add(block, x):      # the measured function keeps its name: its code's entries are read
        return block(x)
    a, b, other = Block(), torch.randn(2, 8), Block()
    fn = add
    if mode != "layer_eager":
        dynamo.config.generic_module_frames = mode == "layer_generic"
        # a backend whose compiled graph does nothing: what is left is the
        # hook, the guards and the gathering of the graph's inputs
        def nothing(gm, example_inputs):
            out = gm(*example_inputs)
            return lambda *args: out
        fn = dynamo.optimize(nothing)(add)
        if mode == "layer_generic":
            fn(other, b)     # a second instance of the class makes the entry generic
if mode == "timed":
    dynamo.config.guard_timing = 1
if mode != "eager" and not mode.startswith("layer"):
    if mode == "dynamic":
        dynamo.mark_dynamic(a, 0)
        dynamo.mark_dynamic(b, 0)
    fn = dynamo.optimize("eager")(add)
with torch.no_grad():
    for _ in range(200):
        fn(a, b)
    if mode not in ("eager", "layer_eager"):
        from dynamo import _C
        entries = _C.cache_entries(add.__code__)
        # layer_generic: the first instance's identity entry, and the generic one
        assert len(entries) == (2 if mode == "layer_generic" else 1), entries
        kinds = [g.kind for g in entries[0].guards]
        shape = kinds.count(dynamo.guards.SHAPE_GUARD)
        assert (shape > 0) == (mode == "dynamic"), kinds
        print("SHAPE_GUARDS", shape, flush=True)
        print("GUARDS", len(kinds), sorted(set(kinds)), flush=True)
    helper.start_instrumentation()
    collections.deque(itertools.starmap(fn, itertools.repeat((a, b), n)), maxlen=0)
"""


def run_cases(modes, calls, tmp, root=ROOT):
    """{mode: (instructions per call collected inside starmap_next over
    `calls` calls, SHAPE_GUARDs of its entry)}; the cases run in parallel
    processes (torch's import under callgrind takes minutes)."""
    env = {**os.environ, "PYTHONPATH": root, "OMP_NUM_THREADS": "1"}
    helper = os.path.join(tmp, "vghelper.so")
    with open(helper + ".c", "w") as f:
        f.write(_HELPER)
    subprocess.run(["cc", "-O1", "-shared", "-fPIC", helper + ".c", "-o", helper], check=True)
    procs = {}
    for mode in modes:
        out = os.path.join(tmp, f"callgrind.{mode}")
        cmd = ["valgrind", "--tool=callgrind", "--instr-atstart=no", "--collect-atstart=no",
               "--toggle-collect=starmap_next", f"--callgrind-out-file={out}",
               sys.executable, "-c", _CHILD, mode, str(calls), helper]
        procs[mode] = (subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                        text=True, env=env, cwd=root), out)  # "-c": cwd first on sys.path
    result = {}
    for mode, (proc, out) in procs.items():
        stdout, stderr = proc.communicate()
        if proc.returncode != 0:
            raise RuntimeError(f"{mode}: exit {proc.returncode}\n{stderr[-3000:]}")
        shape = re.search(r"SHAPE_GUARDS (\d+)", stdout)
        guards = re.search(r"^GUARDS (.*)$", stdout, re.M)
        if guards:
            print(mode, "guards of the entry hit:", guards.group(1))
        with open(out) as f:
            m = re.search(r"^(?:summary|totals): (\d+)", f.read(), re.M)
        result[mode] = (int(m.group(1)) / calls, int(shape.group(1)) if shape else 0)
    return result


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--calls", type=int, default=5000)
    ap.add_argument("--out", default=None, help="write the figures as JSON")
    ap.add_argument("--modes", default="eager,static,dynamic",
                    help="cases to run, of eager, static, dynamic, timed")
    ap.add_argument("--root", default=ROOT, help="the checkout whose build is measured")
    args = ap.parse_args()
    modes = tuple(args.modes.split(","))
    with tempfile.TemporaryDirectory() as tmp:
        found = run_cases(modes, args.calls, tmp, os.path.abspath(args.root))
    if set(modes) != {"eager", "static", "dynamic"}:
        for mode, (ir, _) in found.items():
            print(f"{mode:10} {ir:10.0f} instructions per call ({args.calls} calls, {args.root})")
        return
    rows = {mode: {"instructions_per_call": ir, "shape_guards": shape}
            for mode, (ir, shape) in found.items()}
    eager = rows["eager"]["instructions_per_call"]
    for mode in ("static", "dynamic"):
        rows[mode]["overhead"] = rows[mode]["instructions_per_call"] - eager
    ratio = rows["dynamic"]["overhead"] / rows["static"]["overhead"]
    print(f"add(a, b) hit, instructions per call (callgrind, {args.calls} calls)")
    print(f"{'case':10} {'per call':>10} {'over eager':>11} {'SHAPE_GUARDs':>13}")
    for mode, r in rows.items():
        over = f"{r['overhead']:.0f}" if "overhead" in r else "-"
        print(f"{mode:10} {r['instructions_per_call']:10.0f} {over:>11} {r['shape_guards']:13}")
    print(f"dynamic / static overhead: {ratio:.2f}x; dynamic / static per call: "
          f"{rows['dynamic']['instructions_per_call'] / rows['static']['instructions_per_call']:.2f}x")
    if args.out:
        with open(args.out, "w") as f:
            json.dump({"calls": args.calls, "cases": rows, "overhead_ratio": ratio}, f, indent=2)


if __name__ == "__main__":
    main()
