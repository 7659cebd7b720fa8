"""Seed corpus for the reader fuzz target (make fuzz-reader): real snapshots.

Usage: make_seeds.py DIR.  Runs small dynamo workloads (graph breaks,
recompiles, the cache limit, an nn.Module, a guard tree with a switch),
each saving snapshots with dynamo.save_snapshot at a few points, and adds
the crafted inputs of crafted.py (bad headers, loops, huge counts).
"""
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)

WORKLOAD = r'''
import sys, warnings
import torch, dynamo
warnings.simplefilter("ignore")
out = sys.argv[1]
dynamo.config.cache_size_limit = 4

def toy(a, b):
    x = a / (torch.abs(a) + 1)
    if b.sum() < 0:
        b = b * -1
    return x * b

def add(a, b, k):
    return a + b * k

f = dynamo.optimize("eager")(toy)
f(torch.ones(4), torch.ones(4))
dynamo.save_snapshot(f"{out}/seed-break.dyn")
f(torch.ones(4), -torch.ones(4))
g = dynamo.optimize("eager")(add)
for n in range(2, 8):
    g(torch.randn(n), torch.randn(n), n)
dynamo.save_snapshot(f"{out}/seed-limit.dyn")
m = dynamo.optimize("eager")(torch.nn.Sequential(torch.nn.Linear(4, 3), torch.nn.ReLU()))
m(torch.randn(2, 4))
h = dynamo.optimize("eager")(lambda x, s: x + len(s))
for s in ("a", "bb", "ccc"):
    h(torch.ones(2), s)
dynamo.save_snapshot(f"{out}/seed-all.dyn")
dynamo.reset()
dynamo.save_snapshot(f"{out}/seed-reset.dyn")
'''


def main(out):
    out = os.path.abspath(out)
    os.makedirs(out, exist_ok=True)
    env = dict(os.environ)
    env["PYTHONPATH"] = ROOT + os.pathsep + env.get("PYTHONPATH", "")
    env.pop("DYNAMO_TELEMETRY", None)
    subprocess.run([sys.executable, "-c", WORKLOAD, out], check=True, env=env, cwd=out)
    sys.path.insert(0, HERE)
    import crafted
    base = open(os.path.join(out, "seed-all.dyn"), "rb").read()
    for name, data in crafted.inputs(base):
        with open(os.path.join(out, f"crafted-{name}.dyn"), "wb") as f:
            f.write(data)
    print(f"seeds in {out}: {len(os.listdir(out))} files")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "build/fuzz/seeds")
