"""What stays per compile outside dynamo: the same kinds of work a
compile/reset cycle does, without importing dynamo.

(a) compile() of a tiny source under a new file name each time (torch.fx
    compiles every GraphModule's forward as "<eval_with_key>.<n>");
(b) torch.fx.symbolic_trace of a small module, the GraphModule then dropped;
(c) the same, then its generated source dropped from fx's eval cache and
    linecache, as dynamo.reset() does for the graphs it made.
Prints, per iteration after a warm-up, the growth in live gc objects and in
bytes traced by tracemalloc (Python's allocators), and the RSS growth after
malloc_trim without tracemalloc.  Whatever (a) and (b) keep is CPython's or
torch's, not dynamo's.
"""
import ctypes
import gc
import json
import os
import sys
import tracemalloc

import torch
import torch.fx

trim = ctypes.CDLL("libc.so.6").malloc_trim


def rss():
    gc.collect()
    trim(0)
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def by_compile(i):
    code = compile("def forward(self, x):\n    return x + 1\n", f"<eval_with_key>.{i}", "exec")
    ns = {}
    exec(code, ns)
    del ns, code


class M(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(4, 4)

    def forward(self, x):
        return self.lin(x).relu() + 1


X = torch.ones(2, 4)


def by_fx(i):
    gm = torch.fx.symbolic_trace(M())
    gm(X)
    del gm


def by_fx_forgotten(i):
    import linecache
    from torch.fx import graph_module
    loader = graph_module._loader
    first = loader.next_id
    by_fx(i)
    for key in list(loader.eval_cache):
        digits = key[len("<eval_with_key>."):].split(" ", 1)[0]
        if key.startswith("<eval_with_key>.") and digits.isdigit() and int(digits) >= first:
            loader.eval_cache.pop(key, None)
            linecache.cache.pop(key, None)


def measure(fn, warmup, n):
    for i in range(warmup):
        fn(i)
    r0 = rss()
    for i in range(warmup, warmup + n):
        fn(i)
    r1 = rss()
    tracemalloc.start()
    gc.collect()
    o0, t0 = len(gc.get_objects()), tracemalloc.get_traced_memory()[0]
    for i in range(warmup + n, warmup + 2 * n):
        fn(i)
    gc.collect()
    o1, t1 = len(gc.get_objects()), tracemalloc.get_traced_memory()[0]
    tracemalloc.stop()
    return {"objects": (o1 - o0) / n, "traced_bytes": (t1 - t0) / n,
            "rss_trim_bytes": (r1 - r0) / n}


if __name__ == "__main__":
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 2000
    print(json.dumps({"compile_new_filename": measure(by_compile, 200, n * 5),
                      "fx_symbolic_trace": measure(by_fx, 200, n),
                      "fx_symbolic_trace_source_dropped": measure(by_fx_forgotten, 200, n)}))
