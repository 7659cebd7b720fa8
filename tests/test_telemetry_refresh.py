"""Encoding a guard tree for telemetry never reads freed memory (issue 12:
the 3.13 segfault inside _C._telemetry_refresh, called at every publish).

refresh() republishes every cache whose tree was rebuilt since its last
publish, encoding the tree in C (core/teletext.c).  Two ways it read freed
memory, each shown by a workload below, run with the normal build (which
counts what was published) and with the ASan build (`make asan`: no
report):

- DEAD: an ID/FUNCTION_MATCH test holds its object weakly (borrowed from
  the entry's GirSet).  When the object dies, its entry is only pruned at
  the next lookup of that code; a code not called since still has the test
  in its tree, and the encoding took repr() of the freed object.  Now the
  tree reports the <dead> marker for it.
- DROP: the encoding runs Python code (repr() of guarded values) that may
  drop cache entries (drop_unused unlinks them from the middle of the
  chain, which frees them): the encoder then read the freed entries' slots
  (and _telemetry_tree did not even hold the tree).  Now the encoding holds
  the code, the tree and every entry the tree names.
"""
import json
import os
import subprocess
import sys

import pytest

from asan_util import sanitizer_libs, skip_unless_fresh, ASAN_SO

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

DEAD = r'''
import gc, json, re, torch, dynamo
from dynamo import _C, telemetry

def f(x, fn):
    return fn(x)

opt = dynamo.optimize("eager")(f)
x = torch.ones(2)
fns = [eval(f"lambda a: a + {k}") for k in range(3)]
for fn in fns:
    opt(x, fn)
entries = len(_C.cache_entries(f.__code__))
del fn, fns[0]
gc.collect()
opt(x, fns[0])                  # prunes the dead entry: a tree rebuilt, not published
fns.clear()
gc.collect()                    # both left die: their sets are dead, f is not called again
junk = [eval(f"lambda a: a - {k}") for k in range(500)]   # reuses the freed memory
n = telemetry.refresh()         # republishes f's tree (it was not live)
tree, _ = _C._telemetry_tree(f.__code__)
opt(x, junk[0])                 # the next lookup prunes the two dead entries
print(json.dumps([entries, n, tree.count(b"= <dead>"), tree.count(b"<function"),
                  len(set(re.findall(rb"\[0/\d+\]", tree))),   # the entries named (leaves, tests)
                  len(_C.cache_entries(f.__code__)), telemetry.failures]))
'''

DROP = r'''
import gc, json, types, torch, dynamo
from dynamo import _C, telemetry

class M(types.ModuleType):
    armed = False
    dropped = []
    def __repr__(self):         # armed: drop f's entries that served no call, mid-encoding
        if M.armed:
            M.armed = False
            M.dropped.append(len(_C.drop_unused(f.__code__)))
        return f"<M {self.__name__}>"

def f(x, m):
    return x + m.k

opt = dynamo.optimize("eager")(f)
x = torch.ones(2)

def fill(n):
    ms = [M(f"m{i}") for i in range(n)]
    for i, m in enumerate(ms):
        m.k = i
        opt(x, m)
    return ms

ms = fill(2)
M.armed = True
tree, _ = _C._telemetry_tree(f.__code__)        # encodes both entries, then drops them
names = [int(b"[0/%d]" % i in tree) for i in range(2)]     # named (leaves, tests)
left1 = len(_C.cache_entries(f.__code__))
dynamo.reset()
ms = fill(4)
del ms[3]
gc.collect()
opt(x, ms[0])                   # prunes m3's entry (a tree not published); m0's: a hit
M.armed = True
n = telemetry.refresh()         # its repr drops m1's and m2's entries
left2 = len(_C.cache_entries(f.__code__))
print(json.dumps([M.dropped, names, left1, n, left2, telemetry.failures]))
'''


def run(script, asan=False):
    env = dict(os.environ)
    env["PYTHONPATH"] = ROOT + os.pathsep + env.get("PYTHONPATH", "")
    env.pop("DYNAMO_TELEMETRY", None)
    if asan:
        skip_unless_fresh(ASAN_SO)
        env.update(LD_PRELOAD=":".join(sanitizer_libs()), DYNAMO_C_PATH=ASAN_SO,
                   ASAN_OPTIONS="detect_leaks=0", PYTHONMALLOC="malloc")
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                         env=env, cwd=ROOT, timeout=600)
    assert "ERROR: AddressSanitizer" not in out.stderr, out.stderr[-4000:]
    assert out.returncode == 0, out.stderr[-4000:]
    return json.loads(out.stdout.splitlines()[-1])


@pytest.mark.parametrize("asan", [False, True], ids=["build", "asan"])
def test_refresh_reports_dead_guarded_objects_as_dead(asan):
    entries, refreshed, dead, functions, tree_entries, after, failures = run(DEAD, asan)
    assert entries == 3 and refreshed == 1 and failures == 0
    # the tree encoded still had both dead entries (refresh builds nothing) ...
    assert tree_entries == 2    # entries named [0/1], [0/2] (leaves, and their tests)
    # ... and shows their switch values (each lambda and its __code__, both
    # guarded by identity) as the marker, not as a repr of freed memory
    assert dead >= 4 and functions == 0     # switch values; the tree's test list repeats some
    assert after == 1           # the next lookup pruned them and compiled junk[0]


@pytest.mark.parametrize("asan", [False, True], ids=["build", "asan"])
def test_tree_encoding_holds_entries_dropped_by_repr(asan):
    dropped, names, left1, refreshed, left2, failures = run(DROP, asan)
    # _telemetry_tree: both entries dropped mid-encoding, both still named
    assert dropped[0] == 2 and left1 == 0 and names == [1, 1]
    # refresh(): the two unused entries dropped mid-encoding, the used one kept
    assert refreshed == 1 and dropped[1] == 2 and left2 == 1
    assert failures == 0
