"""Run one generated program eagerly and compiled, compare, minimize.

Contract: `run_program(prog, timeout)` executes prog's source twice into two
fresh modules (one run as plain Python, one whose `f` goes through
dynamo.optimize(prog.backend) with a counting wrapper), makes the same calls
on both (same inputs from a per-(seed, call) torch generator, same
between-call mutations), and returns a Outcome: `mismatch` is None or a
Mismatch(kind, call index, detail). Kinds: result, exception, stdout,
inputs, globals, grad, timeout. Compared per call: the returned value
(Python types exactly, tensors by dtype/shape/strides/requires_grad/values,
bit-exact for the eager backend and tight tolerance for aot_eager; which
input a returned tensor is, or shares storage with), the exception type,
captured stdout, the inputs after the call (mutated in place), the module's
globals G0 G1 GL GD CL and `a`'s attributes, and, when the result needs
grad, the inputs' .grad after a backward on the result.

State isolation: dynamo.reset() after every program; grad mode and default
dtype restored. A program runs under signal.alarm(timeout).

`minimize(prog, kind)` removes calls, mutations, statements (and hoists
compound statements' bodies) while a mismatch of the same kind persists.
"""
import contextlib
import io
import linecache
import math
import re
import signal
import types

import torch

import dynamo
from dynamo import backends as _backends

from fuzzgen import Program, Stmt


class FuzzTimeout(BaseException):   # not Exception: dynamo must not swallow it
    pass


class Mismatch:
    def __init__(self, kind, call, detail):
        self.kind = kind
        self.call = call
        self.detail = detail

    def __repr__(self):
        return f"Mismatch({self.kind}, call {self.call}: {self.detail})"


class Outcome:
    def __init__(self):
        self.mismatch = None
        self.calls = 0
        self.compiles = 0
        self.eager_exceptions = 0
        self.backend_warnings = 0
        self.phase = None
        self.tracer_errors = []  # internal tracer failures (frame then runs eagerly)
        self.skipped = None     # why the program was not compared (eager hung)


_DTYPES = {"float32": torch.float32, "float64": torch.float64, "int64": torch.int64,
           "float16": torch.float16, "bfloat16": torch.bfloat16}


def make_inputs(prog, i):
    spec = prog.calls[i]
    g = torch.Generator().manual_seed(prog.seed * 1000 + i)
    dt = _DTYPES[spec.dtype]
    ts = []
    for _ in range(2):
        shape = spec.shape[::-1] if spec.noncontig else spec.shape
        if dt.is_floating_point:
            t = torch.randn(shape, generator=g, dtype=torch.float64).to(dt)
        else:
            t = torch.randint(-3, 4, shape, generator=g, dtype=dt)
        if spec.noncontig:
            t = t.t()
        if spec.requires_grad and dt.is_floating_point:
            t.requires_grad_(True)
        ts.append(t)
    alias = getattr(spec, "alias", None)
    x, y = ts
    if alias == "same":
        y = x
    elif alias == "view":
        y = x.view_as(x)
    elif alias == "row" and x.shape[0] > 0:
        y = x[:1].expand_as(x)
    elif alias in ("halves", "overlap") and x.dim() == 2 and x.shape[0] > 0:
        x, y = _views_of_one_storage(x, y, alias == "overlap")
    lst = spec.lst if isinstance(spec.lst, tuple) else list(spec.lst)
    return x, y, spec.n, spec.fl, lst


def _views_of_one_storage(x, y, overlap):
    """x and y with their values (y's first row becomes x's second when
    `overlap`), as two views of one buffer: disjoint halves, or y starting
    one row after x. Strides and requires_grad as x had them (views of a
    computed tensor, so in-place ops on them are allowed)."""
    n, rg = x.shape[0], x.requires_grad
    t = x.stride(0) < x.stride(1)               # transposed (noncontig) inputs
    parts = [x.detach(), y.detach()]
    base = torch.cat([p.t() for p in parts], 1) if t else torch.cat(parts, 0)
    if rg:
        base = base.requires_grad_(True) * 1
    lo, hi = (1, n + 1) if overlap else (n, 2 * n)
    if t:
        return base[:, :n].t(), base[:, lo:hi].t()
    return base[:n], base[lo:hi]


def _load(prog, tag):
    src = prog.source()
    # not "<...>": dynamo skips code from files named like that
    filename = f"fuzz_prog_{prog.seed}_{tag}.py"
    linecache.cache[filename] = (len(src), None, src.splitlines(True), filename)
    mod = types.ModuleType(f"fuzz_prog_{prog.seed}_{tag}")
    mod.__file__ = filename
    exec(compile(src, filename, "exec"), mod.__dict__)
    return mod


def _state(mod):
    a = mod.__dict__.get("a")
    return {"G0": mod.G0, "G1": mod.G1, "GL": list(mod.GL), "GD": dict(mod.GD),
            "a": (type(a).__name__, dict(vars(a)) if hasattr(a, "__dict__") else a),
            "mod": _mod_state(mod.__dict__.get("mod"))}


def _mod_state(m):
    if m is None:
        return None
    return {"training": m.training, "flag": getattr(m, "flag", None),
            "params": {k: v.detach().clone() for k, v in m.named_parameters()},
            "grads": {k: v.grad for k, v in m.named_parameters()},
            "buffers": {k: v.clone() for k, v in m.named_buffers()}}


def _run_call(fn, mod, prog, i):
    """Run mutations then fn(inputs); returns a record dict."""
    rec = {"mut_exc": []}
    for _, line in prog.calls[i].muts:
        try:
            exec(line, mod.__dict__)
            rec["mut_exc"].append(None)
        except Exception as e:  # noqa: BLE001 - compared between the runs
            rec["mut_exc"].append(type(e).__name__)
    x, y, n, fl, lst = make_inputs(prog, i)
    import random
    random.seed(i)          # same Python/torch RNG state in both runs
    torch.manual_seed(i)
    buf = io.StringIO()
    res = exc = None
    with torch.set_grad_enabled(prog.calls[i].grad_mode), contextlib.redirect_stdout(buf):
        try:
            res = fn(x, y, n, fl, lst)
        except FuzzTimeout:
            raise
        except Exception as e:  # noqa: BLE001 - compared between the runs
            exc = e
    rec.update(res=res, exc=exc, stdout=buf.getvalue(), x=x, y=y, lst=lst, state=_state(mod))
    grads = None
    if exc is None:
        leaves = [t for t in _leaves(res) if isinstance(t, torch.Tensor) and t.requires_grad
                  and t.is_floating_point()]
        if leaves:
            try:
                loss = sum(t.double().sum() for t in leaves)
                loss.backward()
                grads = (x.grad, y.grad)
            except FuzzTimeout:
                raise
            except Exception as e:  # noqa: BLE001
                grads = type(e).__name__
    rec["grads"] = grads
    return rec


def _leaves(v):
    if isinstance(v, (list, tuple)):
        for e in v:
            yield from _leaves(e)
    elif isinstance(v, dict):
        for e in v.values():
            yield from _leaves(e)
    else:
        yield v


def _cmp(a, b, tol, path, inputs_a=None, inputs_b=None, rtol=0.0, grad=False):
    """None if equal, else a string naming the first difference. `rtol`:
    a floor for the relative tolerance of float tensors (with tol > 0).
    `grad`: the values are gradients (see _teq)."""
    if type(a) is not type(b):
        return f"{path}: type {type(a).__name__} vs {type(b).__name__} ({_short(a)} vs {_short(b)})"
    if isinstance(a, (list, tuple)):
        if len(a) != len(b):
            return f"{path}: len {len(a)} vs {len(b)}"
        for k, (u, v) in enumerate(zip(a, b)):
            d = _cmp(u, v, tol, f"{path}[{k}]", inputs_a, inputs_b, rtol, grad)
            if d:
                return d
        return None
    if isinstance(a, dict):
        if list(a) != list(b):
            return f"{path}: keys {list(a)} vs {list(b)}"
        for k in a:
            d = _cmp(a[k], b[k], tol, f"{path}[{k!r}]", inputs_a, inputs_b, rtol, grad)
            if d:
                return d
        return None
    if isinstance(a, torch.Tensor):
        for attr in ("dtype", "shape", "requires_grad", "device"):
            if getattr(a, attr) != getattr(b, attr):
                return f"{path}: {attr} {getattr(a, attr)} vs {getattr(b, attr)}"
        if tol == 0 and a.stride() != b.stride():
            return f"{path}: stride {a.stride()} vs {b.stride()}"
        if inputs_a is not None:
            ia = [k for k, t in enumerate(inputs_a) if t is a]
            ib = [k for k, t in enumerate(inputs_b) if t is b]
            if ia != ib:
                return f"{path}: is-input {ia} vs {ib}"
            sa = [k for k, t in enumerate(inputs_a) if _shares(t, a)]
            sb = [k for k, t in enumerate(inputs_b) if _shares(t, b)]
            if sa != sb:
                return f"{path}: shares storage with input {sa} vs {sb}"
        if not _teq(a.detach(), b.detach(), tol, rtol, grad):
            return f"{path}: values differ\n  eager   {a.detach().flatten()[:8].tolist()}\n  compiled {b.detach().flatten()[:8].tolist()}"
        return None
    if isinstance(a, float):
        if math.isnan(a) and math.isnan(b):
            return None
        if tol == 0:
            if a != b or math.copysign(1, a) != math.copysign(1, b):
                return f"{path}: {a!r} vs {b!r}"
        elif not math.isclose(a, b, rel_tol=tol, abs_tol=tol):
            return f"{path}: {a!r} vs {b!r}"
        return None
    if isinstance(a, (int, bool, str, type(None))):
        return None if a == b else f"{path}: {a!r} vs {b!r}"
    if isinstance(a, torch.dtype) or isinstance(a, torch.Size):
        return None if a == b else f"{path}: {a!r} vs {b!r}"
    return None   # functions, objects: not compared by value


def _shares(t, r):
    try:
        return t.untyped_storage().data_ptr() == r.untyped_storage().data_ptr() and t.numel() > 0
    except Exception:  # noqa: BLE001
        return False


def _teq(a, b, tol, rtol=0.0, grad=False):
    if a.numel() == 0:
        return True
    if tol == 0:
        if a.is_floating_point():
            same = (a == b) | (a.isnan() & b.isnan())
            # zeros' signs matter (1/x), NaNs' signs do not
            return bool(same.all()) and bool(((a.signbit() == b.signbit()) | a.isnan()).all())
        return torch.equal(a, b)
    if a.is_floating_point():
        # half precision: torch.testing's default rtol for the dtype (one
        # rounding step; a backend may round a matmul differently), and an
        # atol of that rtol times the tensor's largest finite magnitude:
        # the rounding of a half-precision sum scales with its terms, not
        # its result, so an element that cancels (a gradient summed from
        # terms of both signs) is compared at the tensor's scale. aot's
        # matmul gradients in float16 differ from eager's in 99 of 100
        # random cases, are the bits torch.compile's aot_eager gives in
        # 100 of 100, and are as close to a float64 reference as eager's
        # (repro aot_float16_matmul_grad_cancellation).
        #
        # A half-precision gradient is a sum of terms that the program's
        # ops make (a constant factor 4, 2x, 2: 2x - 2 near x = 1), each
        # rounded, in an order aot's backward chooses: its error scales
        # with the largest term, which the gradient does not show. Such
        # gradients are compared at 16 steps of the dtype, at a scale of
        # at least 1 (repro aot_float16_grad_sum_of_terms_cancelling: ours
        # equal torch.compile's aot_eager bits in 200 of 200, differ from
        # eager's in 62, relatively by up to 4.4 %, and are about as close
        # to a float64 reference: mean error 0.00073 vs eager's 0.00067).
        half = (_HALF_GRAD_RTOL if grad else _HALF_RTOL).get(a.dtype, 0.0)
        rtol = max(tol, rtol, half)
        atol = tol
        if rtol > tol:
            finite = a[a.isfinite()]
            scale = float(finite.abs().max()) if finite.numel() else 0.0
            atol = max(tol, rtol * (max(scale, 1.0) if grad and half else scale))
        return torch.allclose(a, b, rtol=rtol, atol=atol, equal_nan=True)
    return torch.equal(a, b)


_HALF_RTOL = {torch.float16: 1e-3, torch.bfloat16: 1.6e-2}
_HALF_GRAD_RTOL = {torch.float16: 1.6e-2, torch.bfloat16: 6.4e-2}      # 16 steps (see _teq)


def _short(v):
    s = repr(v)
    return s if len(s) < 60 else s[:57] + "..."


def compare(e, c, tol, half_rtol=0.0, grads=True):
    """(kind, detail) of the first difference between eager's record `e`
    and the compiled one `c`, or None. `half_rtol`: the half-precision
    rtol of the calls so far (0 when none ran in float16/bfloat16): float
    tensors of the module state and the gradients, float32 values that
    half-precision ops fed (a parameter's accumulated .grad), are compared
    with it; aot's decomposed backward rounds a bfloat16 sum one step
    differently from eager's autograd (torch.compile's aot_eager gives
    the same bits as ours: repro aot_bfloat16_grad_into_float32_param).
    `grads` False: the gradients, of the inputs and of the module's
    parameters, are not compared (writes_behind_autograd)."""
    if e["mut_exc"] != c["mut_exc"]:
        return "exception", f"mutation exceptions {e['mut_exc']} vs {c['mut_exc']}"
    ee, ce = e["exc"], c["exc"]
    if (ee is None) != (ce is None) or (ee is not None and type(ee) is not type(ce)):
        return "exception", (f"eager {type(ee).__name__ if ee else 'returned'}: {str(ee)[:200] if ee else ''} | "
                             f"compiled {type(ce).__name__ if ce else 'returned'}: {str(ce)[:200] if ce else ''}")
    if e["stdout"] != c["stdout"] and not (tol and _same_text(e["stdout"], c["stdout"])):
        return "stdout", f"eager {e['stdout']!r} vs compiled {c['stdout']!r}"
    if ee is None:
        d = _cmp(e["res"], c["res"], tol, "result", (e["x"], e["y"]), (c["x"], c["y"]))
        if d:
            return "result", d
    for name in ("x", "y", "lst"):
        d = _cmp(e[name], c[name], tol, f"input {name}")
        if d:
            return "inputs", d
    d = _cmp(e["state"] if grads else _no_grads(e["state"]), c["state"] if grads else _no_grads(c["state"]),
             tol, "globals", rtol=half_rtol)
    if d:
        return "globals", d
    ge, gc = e["grads"], c["grads"]
    if not grads:
        return None
    if isinstance(ge, str) or isinstance(gc, str):
        if ge != gc:
            return "grad", f"backward {ge!r} vs {gc!r}"
    else:
        d = _cmp(ge, gc, tol or 1e-6, "grads", rtol=half_rtol if tol else 0.0, grad=bool(tol))
        if d:
            return "grad", d
    return None


_NUMPY_WRITE = re.compile(r"^\s*arr_ = [xy]\.detach\(\)\.numpy\(\)\s*$(?:.|\n)*?^\s*arr_\[[^\]]*\] = ", re.M)


def _no_grads(state):
    """The globals record without the module parameters' gradients."""
    if not state.get("mod"):
        return state
    return {**state, "mod": {k: v for k, v in state["mod"].items() if k != "grads"}}


def writes_behind_autograd(prog):
    """Does the program write an input's memory through numpy
    (`arr_ = x.detach().numpy(); arr_[0] = 7`)? Autograd does not see such
    a write (no version bump), so a backward that reads a value it saved
    from that memory computes with whatever is there now: eager's
    gradients are undefined (NaN from amax's mask in seed 8211472), and
    aot's, which saved values of its own choosing, differ. The results,
    inputs and globals of such programs are compared; their gradients
    (the inputs' and the module parameters': seed 9201461) are not."""
    return _NUMPY_WRITE.search(prog.source()) is not None


_NUM = re.compile(r"-?\d+\.\d*(?:e[-+]?\d+)?")


def _same_text(a, b):
    """Printed text equal up to printed floats within 1e-3 (aot_eager's
    numerics may differ in the last bits, and printing rounds)."""
    if _NUM.split(a) != _NUM.split(b):
        return False
    na, nb = _NUM.findall(a), _NUM.findall(b)
    return len(na) == len(nb) and all(math.isclose(float(u), float(v), rel_tol=1e-3, abs_tol=1.5e-3)
                                      for u, v in zip(na, nb))


def _alarm(signum, frame):
    raise FuzzTimeout()


def run_program(prog, timeout=30, eager_only=False):
    """Run prog's calls, eagerly and compiled in turn, and compare them.
    eager_only: run only the plain-Python calls (the driver's check of a
    worker that crashed: did plain Python crash too?)."""
    out = Outcome()
    old = signal.signal(signal.SIGALRM, _alarm)
    signal.alarm(timeout)
    default_dtype = torch.get_default_dtype()
    import random
    random.seed(0)
    torch.manual_seed(0)
    try:
        _run(prog, out, eager_only)
    except FuzzTimeout:
        if out.phase == "eager":
            out.skipped = f"plain Python did not finish in {timeout} s"   # the program's own loop
        else:
            out.mismatch = Mismatch("timeout", out.calls, f"compiled run did not finish in {timeout} s")
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)
        dynamo.reset()
        torch.set_grad_enabled(True)
        torch.set_default_dtype(default_dtype)
        for tag in ("e", "c"):
            linecache.cache.pop(f"fuzz_prog_{prog.seed}_{tag}.py", None)
    return out


def _run(prog, out, eager_only=False):
    import warnings
    name, real = _backends.lookup(prog.backend)
    counter = {"n": 0}

    def backend(gm, example_inputs):
        counter["n"] += 1
        return real(gm, example_inputs)

    me = _load(prog, "e")
    mc = _load(prog, "c")
    fc = dynamo.optimize(backend)(mc.f)
    tol = 0 if prog.backend == "eager" else 1e-5
    half_rtol = 0.0
    grads = not writes_behind_autograd(prog)
    for i in range(len(prog.calls)):
        if tol:
            half_rtol = max(half_rtol, _HALF_RTOL.get(_DTYPES[prog.calls[i].dtype], 0.0))
        out.phase = "eager"
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            e = _run_call(me.f, me, prog, i)
        if eager_only:
            continue
        out.phase = "compiled"
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            c = _run_call(fc, mc, prog, i)
        out.backend_warnings += sum(1 for x in w if "backend" in str(x.message))
        for x in w:
            msg = str(x.message)
            if "could not compile" in msg:
                # "dynamo: could not compile f (file:line); running it eagerly: Error: detail"
                out.tracer_errors.append(re.sub(r"\d+", "N", msg.split("running it eagerly: ", 1)[-1])[:160])
        out.calls += 1
        if e["exc"] is not None:
            out.eager_exceptions += 1
        d = compare(e, c, tol, half_rtol, grads)
        if d:
            out.mismatch = Mismatch(d[0], i, d[1])
            break
    out.compiles = counter["n"]


# ------------------------------------------------------------ minimizing

def _clone(prog, body=None, calls=None):
    import copy
    return Program(prog.seed, [s.copy() for s in (body if body is not None else prog.body)],
                   copy.deepcopy(calls if calls is not None else prog.calls), prog.backend)


def _nodes(body, path=()):
    """Paths of every Stmt in the tree: tuples (idx, block, idx, block, idx...)."""
    for i, s in enumerate(body):
        yield path + (i,)
        for b, blk in enumerate(s.blocks):
            yield from _nodes(blk, path + (i, b))


def _edit(body, path, fn):
    """Copy of body with fn(list, index) applied at path."""
    body = [s.copy() for s in body]
    lst = body
    for k in range(0, len(path) - 1, 2):
        lst = lst[path[k]].blocks[path[k + 1]]
    fn(lst, path[-1])
    return body


def minimize(prog, kind, timeout=30, budget=300, stop_at=None):
    """Smaller program with a mismatch of the same kind (greedy, to fixpoint;
    at most `budget` runs, none started after time.time() `stop_at`)."""
    import time
    runs = [0]

    def fails(p):
        if runs[0] >= budget or (stop_at is not None and time.time() >= stop_at):
            return False
        runs[0] += 1
        m = run_program(p, timeout).mismatch
        return m is not None and m.kind == kind

    cur = prog
    changed = True
    while changed and runs[0] < budget:
        changed = False
        # calls: drop later calls first, then earlier ones
        for i in reversed(range(len(cur.calls))):
            if len(cur.calls) > 1 and i < len(cur.calls):
                cand = _clone(cur, calls=cur.calls[:i] + cur.calls[i + 1:])
                if fails(cand):
                    cur, changed = cand, True
        # mutations
        for i in range(len(cur.calls)):
            j = 0
            while j < len(cur.calls[i].muts):
                calls = _clone(cur).calls
                del calls[i].muts[j]
                cand = _clone(cur, calls=calls)
                if fails(cand):
                    cur, changed = cand, True
                else:
                    j += 1
        # statements: remove, or replace a compound one by one of its bodies
        paths = list(_nodes(cur.body))
        for path in reversed(paths):
            try:
                cand = _clone(cur, body=_edit(cur.body, path, lambda l, i: l.pop(i)))
            except (IndexError, TypeError):
                continue
            if fails(cand):
                cur, changed = cand, True
                continue
            try:
                node = _edit(cur.body, path, lambda l, i: None)
                lst = node
                for k in range(0, len(path) - 1, 2):
                    lst = lst[path[k]].blocks[path[k + 1]]
                target = lst[path[-1]]
            except (IndexError, TypeError):
                continue
            for blk in target.blocks:
                def hoist(l, i, blk=blk):
                    l[i:i + 1] = [s.copy() for s in blk]
                cand = _clone(cur, body=_edit(cur.body, path, hoist))
                if fails(cand):
                    cur, changed = cand, True
                    break
        # simplify inputs
        for attr, val in (("noncontig", False), ("requires_grad", False), ("grad_mode", True),
                          ("dtype", "float32"), ("lst", []), ("alias", None)):
            for i in range(len(cur.calls)):
                if getattr(cur.calls[i], attr, None) != val:
                    calls = _clone(cur).calls
                    setattr(calls[i], attr, val)
                    cand = _clone(cur, calls=calls)
                    if fails(cand):
                        cur, changed = cand, True
    return cur, runs[0]


def render_repro(prog, mismatch):
    """Text of a reproducer: the body of f, the calls, the mismatch."""
    lines = [f"# fuzz seed {prog.seed}  backend {prog.backend}  kinds {sorted(prog.kinds())}",
             f"# mismatch: {mismatch.kind} at call {mismatch.call}: {mismatch.detail}"]
    src = prog.source()
    body = src[src.index("def f("):]
    lines.append(body.rstrip("\n"))
    lines.append("# calls (before each: module-level mutations):")
    for i, c in enumerate(prog.calls):
        lines.append(f"#  {i}: {c.describe()}" + (f"  muts {[m for _, m in c.muts]}" if c.muts else ""))
    return "\n".join(lines) + "\n"


# ------------------------------------------------------------ repro files
# A repro file (tests/fuzz/repros/*.py) is plain Python with constants:
#   REASON (str), BACKEND ("eager"/"aot_eager"), BODY (f's body after the
#   fixed header, unindented), CALLS (list of dicts: shape, dtype, noncontig,
#   requires_grad, grad_mode, n, fl, lst, muts: list of module-level lines),
#   SEED (optional, default 0: the seed the call inputs are drawn from; a
#   minimized program can need the values of its fuzz seed's inputs).

_CALL_DEFAULTS = dict(shape=(2, 3), dtype="float32", noncontig=False, requires_grad=False,
                      grad_mode=True, n=1, fl=1.0, lst=[], muts=[], alias=None)


def load_repro(path, seed=0):
    from fuzzgen import CallSpec
    ns = {}
    with open(path) as fh:
        exec(compile(fh.read(), path, "exec"), ns)
    body = [Stmt("repro", [ln for ln in ns["BODY"].strip("\n").splitlines()])]
    calls = []
    for c in ns["CALLS"]:
        d = dict(_CALL_DEFAULTS, **c)
        calls.append(CallSpec(tuple(d["shape"]), d["dtype"], d["noncontig"], d["requires_grad"],
                              d["grad_mode"], d["n"], d["fl"],
                              d["lst"] if isinstance(d["lst"], tuple) else list(d["lst"]),
                              [("repro", m) for m in d["muts"]]))
        calls[-1].alias = d["alias"]
    return Program(ns.get("SEED", seed), body, calls, ns.get("BACKEND", "eager")), ns["REASON"]


def render_repro_py(prog, mismatch):
    """The repro in the tests/fuzz/repros/ file format."""
    src = prog.source()
    body = src[src.index("    d0 = {\"k\": 1}\n") + len("    d0 = {\"k\": 1}\n"):src.rindex("    return (t0, t1")]
    body = "\n".join(ln[4:] for ln in body.splitlines())
    calls = []
    for c in prog.calls:
        d = {"shape": c.shape, "dtype": c.dtype, "noncontig": c.noncontig, "requires_grad": c.requires_grad,
             "grad_mode": c.grad_mode, "n": c.n, "fl": c.fl, "lst": c.lst, "muts": [m for _, m in c.muts],
             "alias": getattr(c, "alias", None)}
        calls.append("    " + repr({k: v for k, v in d.items() if _CALL_DEFAULTS[k] != v}) + ",")
    detail = mismatch.detail.replace('"""', "'''")
    return (f'"""fuzz seed {prog.seed}: {mismatch.kind} at call {mismatch.call}\n{detail}\n"""\n'
            f'REASON = "TODO: name the bug class"\nBACKEND = {prog.backend!r}\nSEED = {prog.seed!r}\n'
            f'BODY = """\n{body}\n"""\nCALLS = [\n' + "\n".join(calls) + "\n]\n")
