"""Random small Python programs for the differential fuzzer (tests/fuzz).

Contract: `generate(seed, features)` returns a Program, a pure function of
(seed, features): the same pair always gives the same program text and the
same call plan. A Program is

  - a fixed prelude (imports, globals G0/G1/GL/GD, a user class A with a
    method, a property and a counter, a global instance `a`, a closure
    factory `mk` and a closure CL) that never changes,
  - the body of `f(x, y, n, fl, lst)` as a tree of Stmt nodes over a fixed
    pool of locals (t0 t1 tensors, i0 int, f0 float, b0 bool, l0 list,
    d0 dict) that the fixed header initializes, so removing any node leaves
    a valid program (what the minimizer does),
  - a call plan: per call, the inputs (shape, dtype, strides, requires_grad,
    grad mode, n, fl, lst) and the Python statements run in the module
    between calls (global/instance/class mutation).

Features (FEATURES) switch statement and mutation kinds on and off; the ones
in KNOWN_OPEN hit bug classes that are known and being fixed elsewhere
(issue 12 items); the fixed-seed sample in `make test` runs without them,
`make fuzz` runs everything unless told otherwise.
"""
import random

# Every generator feature. Statement kinds and mutation kinds are tagged
# with the feature that produces them (Stmt.kind / Mutation.kind).
FEATURES = (
    "ew", "reduce", "matmul", "view", "index", "cat", "inplace", "input_inplace",
    "int", "float", "bool", "pybranch", "tbranch", "for_range", "for_list", "while",
    "list", "tuple", "dict", "closure", "numpy", "print", "nograd", "method",
    "global", "grad", "shape", "dtype", "stride", "raise", "early_return",
    "item", "try", "list_break", "helper", "module", "builtins", "view_inplace",
    "raise_partial", "iter_tensor", "alias_ret", "kwargs", "rng", "pyrandom", "mask", "numpy_view",
    "grad_call", "del_var", "pyextra", "nonlocal_break", "objects", "layers",
    # between-call changes
    "mut_global", "mut_instance", "mut_class", "mut_closure", "mut_module",
    "in_shape", "in_dtype", "in_stride", "in_requires_grad", "grad_mode",
    "in_negzero", "in_int_dtype", "in_types", "in_alias", "in_special", "mut_types",
    "mut_layers",
)

# Bug classes open elsewhere (issue 12 / the helpers' lists): programs using
# these are kept out of the fixed-seed sample until the fixes land.
KNOWN_OPEN = {}

DEFAULT_FEATURES = frozenset(FEATURES)
SAFE_FEATURES = frozenset(f for f in FEATURES if f not in KNOWN_OPEN)

PRELUDE = '''\
import math
import random
import torch
import numpy as np

G0 = 3
G1 = 1.5
GL = [1, 2]
GD = {"a": 1}


class A:
    def __init__(self, k):
        self.k = k
        self.cnt = 0

    def m(self, t):
        return t * self.k

    @property
    def p(self):
        return self.k + 1

    def bump(self):
        self.cnt += 1
        return self.cnt


a = A(2.0)


def mk(c):
    def inner(t):
        return t * c + G0
    return inner


CL = mk(0.5)


def hb(t, k=2, *rest, scale=1.0):
    # a helper with a data-dependent branch (a graph break inside an inlined call)
    if t.sum() > 0:
        return t * k * scale + len(rest)
    return t - k


def hp(t, tag="h"):
    print(tag, tuple(t.shape))
    return t + 1


def hg():
    global G0
    G0 = G0 + 1
    return G0


@torch.no_grad()
def hn(t):
    return t * 3


class M(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.w = torch.nn.Parameter(torch.tensor(0.5))
        self.register_buffer("scale", torch.tensor(2.0))
        self.flag = True

    def forward(self, t):
        t = t * self.w + self.scale
        if self.training:
            t = t * 2
        if self.flag:
            t = t - 1
        return t


mod = M()


class Ly(torch.nn.Module):
    # several instances of one class, each called with a graph break inside
    # (generic module frames: one entry for every instance)
    def __init__(self, k):
        super().__init__()
        self.w = torch.nn.Parameter(torch.tensor(0.25 * (k + 1)))
        self.register_buffer("b", torch.tensor(float(k)))
        self.k = k
        self.act = torch.nn.Identity() if k % 2 else torch.nn.ReLU()

    def forward(self, t):
        t = self.act(t * self.w) + self.b
        t = hb(t)
        return t + self.k


layers = [Ly(0), Ly(1), Ly(2)]


def gen(k):
    for i in range(k):
        yield i * 2


import collections
NT = collections.namedtuple("NT", ["u", "v"])


def deco(fn):
    def wrapper(*args, **kw):
        return fn(*args, **kw) + 1
    return wrapper


@deco
def hd(t):
    return t * 2
'''

HEADER = '''\
def f(x, y, n, fl, lst):
    global G0, G1, a
    t0 = x
    t1 = y
    i0 = n
    f0 = fl
    b0 = n > 2
    l0 = lst
    d0 = {"k": 1}
'''

FOOTER = "    return (t0, t1, i0, f0, b0, l0, d0)\n"


class Stmt:
    """One statement of f's body: `lines` (its own text, without indent; a
    compound statement's header), `blocks` (child bodies, each a list of
    Stmt, printed after the matching entry of `block_heads`)."""

    def __init__(self, kind, lines, blocks=(), block_heads=()):
        self.kind = kind
        self.lines = list(lines)
        self.blocks = [list(b) for b in blocks]
        self.block_heads = list(block_heads)

    def render(self, indent):
        pad = "    " * indent
        out = [pad + ln for ln in self.lines]
        for i, body in enumerate(self.blocks):
            if i > 0 or self.block_heads:
                head = self.block_heads[i] if i < len(self.block_heads) else None
                if head:
                    out.append(pad + head)
            if not body:
                out.append(pad + "    pass")
            for s in body:
                out.extend(s.render(indent + 1))
        return out

    def copy(self):
        return Stmt(self.kind, self.lines, [[s.copy() for s in b] for b in self.blocks],
                    self.block_heads)


class CallSpec:
    """One call of f: inputs and the module-level statements run before it."""

    def __init__(self, shape, dtype, noncontig, requires_grad, grad_mode, n, fl, lst, muts):
        self.shape = shape
        self.dtype = dtype
        self.noncontig = noncontig
        self.requires_grad = requires_grad
        self.grad_mode = grad_mode
        self.n = n
        self.fl = fl
        self.lst = lst
        self.muts = list(muts)   # list of (kind, source line)
        # y is: None (own tensor), "same" (x), "view" (x.view_as), "row" (x[0]
        # expanded); or x and y are two views of one storage: "halves"
        # (disjoint), "overlap" (y starts one row after x)
        self.alias = None

    def describe(self):
        return (f"shape={self.shape} dtype={self.dtype} noncontig={self.noncontig} "
                f"requires_grad={self.requires_grad} grad_mode={self.grad_mode} "
                f"n={self.n!r} fl={self.fl!r} lst={self.lst!r}" + (f" y-alias={self.alias}" if self.alias else ""))


class Program:
    def __init__(self, seed, body, calls, backend):
        self.seed = seed
        self.body = body
        self.calls = calls
        self.backend = backend

    def source(self):
        lines = [PRELUDE, "", HEADER.rstrip("\n")]
        for s in self.body:
            lines.extend(s.render(1))
        lines.append(FOOTER.rstrip("\n"))
        return "\n".join(lines) + "\n"

    def kinds(self):
        out = set()

        def walk(body):
            for s in body:
                out.add(s.kind)
                for b in s.blocks:
                    walk(b)
        walk(self.body)
        for c in self.calls:
            for k, _ in c.muts:
                out.add(k)
        return out


T = ("t0", "t1")


class _Gen:
    def __init__(self, rng, features):
        self.r = rng
        self.feat = features
        self.depth = 0
        self.loopvar = 0
        self.has_break = False

    def pick_t(self):
        return self.r.choice(T)

    # ------------------------------------------------------------ statements
    def stmt(self):
        kinds = [k for k in STMT_KINDS if k in self.feat]
        if self.depth >= 2:
            kinds = [k for k in kinds if k not in COMPOUND]
        if not kinds:
            return Stmt("int", ["i0 = i0 + 1"])
        kind = self.r.choice(kinds)
        return getattr(self, "s_" + kind)()

    def body(self, lo=1, hi=3):
        self.depth += 1
        out = [self.stmt() for _ in range(self.r.randint(lo, hi))]
        self.depth -= 1
        return out

    def s_ew(self):
        d, s, o = self.pick_t(), self.pick_t(), self.pick_t()
        e = self.r.choice([
            f"{s} * 2 + {o}", f"{s}.sin() - {o}.cos()", f"torch.relu({s}) * 0.5",
            f"torch.where({s} > 0, {s}, {o})", f"{s}.abs().sqrt()", f"torch.tanh({s} + {o})",
            f"{s} / ({o}.abs() + 1)", f"{s}.exp().clamp(max=10.0)", f"-{s}",
            f"{s} * {o}", f"torch.maximum({s}, {o})", f"{s}.sigmoid() + i0",
        ])
        return Stmt("ew", [f"{d} = {e}"])

    def s_reduce(self):
        d, s = self.pick_t(), self.pick_t()
        e = self.r.choice([
            f"{d} - {s}.mean(dim=0, keepdim=True)", f"{d} + {s}.sum()", f"{d} * {s}.amax(dim=1, keepdim=True)",
            f"{d} + {s}.std(dim=0)", f"{d} - {s}.logsumexp(dim=1, keepdim=True)",
            f"{d} + {s}.cumsum(dim=1)", f"{d}.softmax(dim=-1)",
        ])
        return Stmt("reduce", [f"{d} = {e}"])

    def s_matmul(self):
        d, s, o = self.pick_t(), self.pick_t(), self.pick_t()
        e = self.r.choice([f"({s} @ {o}.t()) @ {d} * 0.1", f"torch.mm({s}.t(), {o}).sum() + {d}",
                           f"torch.matmul({s}, {o}.transpose(0, 1)).diagonal().unsqueeze(1) + {d}"])
        return Stmt("matmul", [f"{d} = {e}"])

    def s_view(self):
        d, s = self.pick_t(), self.pick_t()
        e = self.r.choice([
            f"{s}.reshape(-1).view({s}.shape)", f"{s}.t().contiguous().t()", f"{s}.transpose(0, 1).transpose(0, 1)",
            f"{s}.flatten().reshape({s}.shape[0], -1)", f"{s}.unsqueeze(0).squeeze(0)",
            f"{s}.permute(1, 0).permute(1, 0) + 0", f"{s}.view(-1)[: {s}.numel()].view_as({s})",
        ])
        return Stmt("view", [f"{d} = {e}"])

    def s_index(self):
        d, s = self.pick_t(), self.pick_t()
        e = self.r.choice([
            f"{d} * {s}[0]", f"{d} + {s}[:, -1:]", f"{d} + {s}[1:].sum()", f"{d} + {s}[..., ::2].sum(dim=1, keepdim=True)",
            f"{d} + {s}[{s} > 0].sum()", f"{d}.index_select(1, torch.tensor([0])) + {d}",
            f"{d} + {s}[i0 % {s}.shape[0]]", f"{d} + {s}[0, 0].item()",
        ])
        return Stmt("index", [f"{d} = {e}"])

    def s_cat(self):
        d, s, o = self.pick_t(), self.pick_t(), self.pick_t()
        e = self.r.choice([
            f"torch.cat([{s}, {o}], dim=0)[: {o}.shape[0]]", f"torch.stack([{s}, {o}]).sum(0)",
            f"torch.cat([{s}, {o}], 1).narrow(1, 0, {o}.shape[1])", f"torch.stack([{s}, {o}], dim=2).mean(dim=2)",
            f"torch.cat(torch.chunk({s}, 2, dim=0), dim=0)",
        ])
        return Stmt("cat", [f"{d} = {e}"])

    def s_inplace(self):
        d, s = self.pick_t(), self.pick_t()
        ln = self.r.choice([
            [f"{d} = {d}.clone()", f"{d}.add_({s})"], [f"{d} = {d} * 1", f"{d}.mul_(0.5)"],
            [f"{d} = {d}.clone()", f"{d}[0] = 0.5"], [f"{d} = {d} + 0", f"{d}.clamp_(-1.0, 1.0)"],
            [f"{d} = {d}.clone()", f"{d}.relu_()"], [f"{d} = {d}.clone()", f"{d}[:, 0].fill_(i0)"],
        ])
        return Stmt("inplace", ln)

    def s_input_inplace(self):
        ln = self.r.choice([["x.add_(1)"], ["y.mul_(2)"], ["x[0] = i0"], ["y.zero_()"],
                            ["x.copy_(t1.to(x.dtype))"], ["lst.append(i0)"]])
        return Stmt("input_inplace", ln)

    def s_int(self):
        e = self.r.choice(["i0 + 1", "(i0 * 3) % 5", "t0.shape[0] + i0", "len(l0)", "i0 // 2 - 1",
                           "max(i0, 2)", "abs(i0 - 4)", "t1.dim() * i0", "i0 ** 2 % 7"])
        return Stmt("int", [f"i0 = {e}"])

    def s_float(self):
        ln = self.r.choice(["f0 = f0 * 1.5 + i0", "f0 = -f0", "t0 = t0 * f0", "f0 = math.sqrt(abs(f0)) + 0.5",
                            "t1 = t1 + f0", "f0 = float(i0) / 3", "t0 = torch.full_like(t0, f0) + t0"])
        return Stmt("float", [ln])

    def s_bool(self):
        ln = self.r.choice(["b0 = i0 % 2 == 0", "b0 = not b0", "b0 = f0 > 1.0", "b0 = b0 and i0 > 1",
                            "b0 = len(l0) > 2", "t0 = t0 * b0"])
        return Stmt("bool", [ln])

    def s_pybranch(self):
        cond = self.r.choice(["b0", "i0 > 2", "f0 < 0", "len(l0) > 1", "not b0", "G0 > 3", "a.k > 2"])
        blocks = [self.body()]
        heads = [None]
        if self.r.random() < 0.6:
            blocks.append(self.body())
            heads.append("else:")
        return Stmt("pybranch", [f"if {cond}:"], blocks, heads)

    def s_tbranch(self):
        self.has_break = True
        s = self.pick_t()
        cond = self.r.choice([f"{s}.sum() > 0", f"{s}.max() > 1", f"bool(({s} < 0).any())", f"{s}[0, 0] > 0"])
        blocks = [self.body()]
        heads = [None]
        if self.r.random() < 0.6:
            blocks.append(self.body())
            heads.append("else:")
        return Stmt("tbranch", [f"if {cond}:"], blocks, heads)

    def s_for_range(self):
        v = f"j{self.depth}"
        b = self.body()
        b.append(Stmt("for_range", [f"t0 = t0 + {v}"]))
        bound = self.r.choice(["i0 % 3 + 1", "3", "len(l0)", "t0.shape[0]"])
        return Stmt("for_range", [f"for {v} in range({bound}):"], [b])

    def s_for_list(self):
        v = f"v{self.depth}"
        b = self.body()
        b.append(Stmt("for_list", [f"t1 = t1 * 0.9 + {v}"]))
        it = self.r.choice(["l0[:4]", "list(l0)", "GL", "[1, 2.5]", "(i0, f0)"])
        return Stmt("for_list", [f"for {v} in {it}:"], [b])

    def s_while(self):
        v = f"w{self.depth}"
        b = [Stmt("while", [f"{v} += 1"])] + self.body()
        return Stmt("while", [f"{v} = 0", f"while {v} < i0 % 3 + 1:"], [b])

    def s_list(self):
        ln = self.r.choice(["l0.append(i0)", "l0 = l0 + [i0]", "l0 = [v * 2 for v in l0]", "l0 = sorted(l0)",
                            "l0 = l0[1:]", "l0.insert(0, len(l0))", "t0 = t0 + sum(l0)",
                            "l0 = l0 + [t0.shape[1]]", "l0.extend([1, 2])"])
        return Stmt("list", [ln])

    def s_list_break(self):
        # a list mutated around a graph break
        self.has_break = True
        return Stmt("list_break", [self.r.choice(["l0.append(i0)", "lst.append(1)", "l0.pop() if l0 else None"]),
                                   "print('lb', len(l0))", "t0 = t0 + len(l0)"])

    def s_tuple(self):
        ln = self.r.choice([["tp = (t0, i0)", "t1 = tp[0] * tp[1]"], ["p, q = t1, t0", "t0, t1 = p, q"],
                            ["tp = (i0, f0, b0)", "i0 = tp[0] + len(tp)"], ["t0, *rest = (t0, t1, i0)", "i0 = i0 + len(rest)"]])
        return Stmt("tuple", ln)

    def s_dict(self):
        ln = self.r.choice([["d0['k'] = d0.get('k', 0) + i0"], ["d0['t'] = t0 * 2"], ["t0 = t0 + d0['k']"],
                            ["for kk, vv in d0.items():", "    i0 = i0 + len(kk)"], ["d0 = {**d0, 'z': f0}"],
                            ["t1 = t1 + GD['a']"], ["d0.update({'k': len(d0)})"]])
        return Stmt("dict", ln)

    def s_closure(self):
        ln = self.r.choice([["t0 = CL(t0)"], ["def h(t):", "    return t * f0 + i0", "t0 = h(t0)"],
                            ["def inc():", "    nonlocal i0", "    i0 += 1", "inc()"],
                            ["g = lambda t: t + i0", "t1 = g(t1)"], ["t1 = mk(i0)(t1)"],
                            ["def acc(t, *args, scale=2, **kw):", "    return t * scale + len(args) + len(kw)",
                             "t0 = acc(t0, 1, 2, scale=f0, z=1)"]])
        return Stmt("closure", ln)

    def s_numpy(self):
        self.has_break = True
        ln = self.r.choice([["t0 = torch.from_numpy(np.tanh(t0.detach().numpy()))"],
                            ["i0 = int(np.sum(l0)) % 7"], ["f0 = float(np.float64(f0) * 2)"],
                            ["t1 = t1 + torch.as_tensor(np.arange(t1.shape[1]), dtype=t1.dtype)"]])
        return Stmt("numpy", ln)

    def s_print(self):
        self.has_break = True
        ln = self.r.choice(["print('p', i0, b0, len(l0))", "print(tuple(t0.shape), t1.dtype)",
                            "print(f'{f0:.3f}')", "print(G0, a.k, a.cnt)", "print(t0.requires_grad, t0.is_contiguous())"])
        return Stmt("print", [ln])

    def s_nograd(self):
        return Stmt("nograd", [self.r.choice(["with torch.no_grad():", "with torch.enable_grad():"])], [self.body()])

    def s_method(self):
        ln = self.r.choice(["t0 = a.m(t0)", "t1 = t1 + a.p", "a.k = a.k * 0.5 + 1", "i0 = i0 + a.bump()",
                            "t0 = A.m(a, t0)", "t0 = A(f0).m(t0)", "t1 = t1 * getattr(a, 'k')"])
        return Stmt("method", [ln])

    def s_global(self):
        ln = self.r.choice(["G0 = G0 + 1", "t0 = t0 * G1", "GL.append(i0)", "t0 = t0 + len(GL)",
                            "G1 = G1 * 0.5", "i0 = i0 + G0", "GD['a'] = GD['a'] + 1"])
        return Stmt("global", [ln])

    def s_grad(self):
        ln = self.r.choice([["if t0.requires_grad:", "    i0 = i0 + 10"], ["t0 = t0.detach()"],
                            ["if torch.is_grad_enabled():", "    f0 = f0 + 1"], ["b0 = t1.requires_grad"],
                            ["t1 = t1.detach().requires_grad_(b0)"]])
        return Stmt("grad", ln)

    def s_shape(self):
        ln = self.r.choice([["if t0.shape[0] > 2:", "    t0 = t0 * 2"], ["t0 = t0 * t0.shape[1]"],
                            ["t0 = t0 / t0.numel()"], ["i0 = i0 + t1.size(0) * t1.size(-1)"],
                            ["if t0.ndim == 2:", "    i0 = i0 + 1"]])
        return Stmt("shape", ln)

    def s_dtype(self):
        ln = self.r.choice([["t0 = t0.to(torch.float64)"], ["t1 = t1.double().float()"],
                            ["if t0.dtype == torch.float64:", "    t0 = t0.float()"], ["t0 = t0 + t1.to(t0.dtype)"],
                            ["b0 = t0.is_floating_point()"]])
        return Stmt("dtype", ln)

    def s_stride(self):
        ln = self.r.choice([["if t0.is_contiguous():", "    i0 = i0 + 1", "else:", "    i0 = i0 - 1"],
                            ["t0 = t0.contiguous()"], ["i0 = i0 + t0.stride(0)"], ["t1 = t1.t().t()"],
                            # strides of size-1 dims of views (of computed tensors, of factories)
                            ["i0 = i0 + sum(t0.unsqueeze(1).stride())"],
                            ["i0 = i0 + t1.reshape(1, -1).stride(0)"],
                            ["i0 = i0 + t0.new_ones(2, 1, 3).transpose(0, 1).reshape(1, 6).stride(0)"],
                            ["t0 = t0.unsqueeze(0).as_strided((1, t0.numel()), (t0.numel() + 1, 1)).sum(0)"],
                            ["i0 = i0 + sum(t1.unsqueeze(-1).type_as(t0).transpose(0, -1).stride())"],
                            ["i0 = i0 + sum(t0.unsqueeze(0).masked_fill(t0 > 0, 1.0).transpose(0, 1)"
                             ".reshape(-1, 1).stride())"]])
        return Stmt("stride", ln)

    def s_raise(self):
        ln = self.r.choice([["if i0 > 12:", "    raise ValueError(i0)"], ["i0 = l0[i0 % 4]"],
                            ["i0 = 10 // (i0 % 3)"], ["t0 = t0 + d0['missing'] if i0 > 9 else t0"]])
        return Stmt("raise", ln)

    def s_early_return(self):
        return Stmt("early_return", [self.r.choice(["if b0 and i0 > 4:", "if i0 == 0:"]),
                                     "    return (t0, i0)"])

    def s_item(self):
        self.has_break = True
        ln = self.r.choice(["f0 = f0 + t0.sum().item()", "i0 = i0 + int(t1.argmax())",
                            "b0 = bool(t0.mean() > 0)", "i0 = i0 + t0.numel() + int(t0.abs().max().item() > 1)"])
        return Stmt("item", [ln])

    def s_try(self):
        b = self.body()
        if self.r.random() < 0.6:
            b.append(Stmt("try", [self.r.choice(["i0 = l0[i0]", "i0 = 10 // (i0 - i0)", "t0 = d0['zz']",
                                                 "raise ValueError('v')", "t0 = t0 @ t0"])]))
        hb = [Stmt("try", [self.r.choice(["t0 = t0 * 0", "i0 = -1", "f0 = 0.5"])])]
        exc = self.r.choice(["Exception", "(IndexError, ZeroDivisionError, KeyError)", "RuntimeError",
                             "ValueError"])
        blocks = [b, hb]
        heads = [None, f"except {exc}:"]
        if self.r.random() < 0.3:
            blocks.append([Stmt("try", ["i0 = i0 + 100"])])
            heads.append("finally:")
        return Stmt("try", ["try:"], blocks, heads)

    def s_helper(self):
        self.has_break = True
        d, s_ = self.pick_t(), self.pick_t()
        ln = self.r.choice([f"{d} = hb({s_})", f"{d} = hb({s_}, i0, 1, 2, scale=f0)", f"{d} = hp({s_}, tag='q')",
                            "i0 = i0 + hg()", f"{d} = hn({s_})", f"{d} = hb(hp({s_}), k=f0)"])
        return Stmt("helper", [ln])

    def s_module(self):
        d, s_ = self.pick_t(), self.pick_t()
        ln = self.r.choice([[f"{d} = mod({s_})"], [f"{d} = mod.forward({s_}) + mod.scale"],
                            ["f0 = f0 + float(mod.w)"], [f"{d} = {s_} * sum(p.sum() for p in mod.parameters())"],
                            ["if mod.training:", "    i0 = i0 + 1"], ["mod.flag = not mod.flag"]])
        return Stmt("module", ln)

    def s_layers(self):
        self.has_break = True
        d, s_ = self.pick_t(), self.pick_t()
        ln = self.r.choice([[f"{d} = {s_}", "for m_ in layers:", f"    {d} = m_({d})"],
                            [f"{d} = layers[i0 % len(layers)]({s_})"],
                            [f"{d} = layers[0]({s_}) + layers[-1]({s_})"],
                            [f"{d} = {s_} * sum(float(m_.k) for m_ in layers)"]])
        return Stmt("layers", ln)

    def s_builtins(self):
        ln = self.r.choice([["for k_, v_ in enumerate(l0[:3]):", "    t0 = t0 + k_ * v_"],
                            ["for p_, q_ in zip([t0, t1], [1, 2]):", "    t1 = t1 + p_ * q_"],
                            ["t0 = t0 + sum(t.sum() for t in (t0, t1))"], ["b0 = any(v > 1 for v in l0)"],
                            ["i0 = min(l0 + [i0]) + max(l0 + [0])"], ["l0 = list(reversed(l0))"],
                            ["i0 = i0 + sum(range(0, 6, 2))"], ["t0 = t0 + isinstance(t1, torch.Tensor)"],
                            ["d0['n'] = str(i0) + 'x'", "i0 = i0 + len(d0['n'])"], ["i0 = (i0 := i0 + 1) * 2"],
                            ["b0 = 0 < i0 <= 3"], ["t1 = t1 if b0 else -t1"], ["l0 = [v for v in l0 if v % 2]"],
                            ["t0 = t0 + len(t0)"], ["l0 = l0 + t0[0].tolist()[:2]"]])
        return Stmt("builtins", ln)

    def s_view_inplace(self):
        ln = self.r.choice([["x[0].add_(1)"], ["x.t().mul_(2)"], ["y.view(-1)[0] = 5"], ["t0 = x[:, 0]", "t0.mul_(3)"],
                            ["t1 = y.transpose(0, 1)", "t1.add_(t1)"], ["x.unsqueeze(0).sub_(1)"],
                            ["t0 = t0[1:]", "t0 += 1"], ["t1 += t0"], ["t1 *= 2"]])
        return Stmt("view_inplace", ln)

    def s_raise_partial(self):
        ln = self.r.choice([["G0 = G0 + 1", "if i0 > 3:", "    raise KeyError(i0)"],
                            ["GL.append(9)", "if t0.shape[0] == 4:", "    raise RuntimeError('four')"],
                            ["a.cnt += 1", "x.add_(1)", "if b0:", "    raise ValueError('b')"],
                            ["lst.append(7)", "i0 = [1, 2][i0]"]])
        return Stmt("raise_partial", ln)

    def s_iter_tensor(self):
        v = f"r{self.depth}"
        return Stmt("iter_tensor", [self.r.choice([f"for {v} in t0:", f"for {v} in t1.unbind(1):"]),
                                    f"    t1 = t1 + {v}.sum()"])

    def s_alias_ret(self):
        return Stmt("alias_ret", [self.r.choice(["if i0 == 1:", "if b0:"]),
                                  self.r.choice(["    return (t0, t0, x)", "    return [x, y.t(), x[0]]",
                                                 "    return {'a': t1, 'b': t1.view(-1)}", "    return x"])])

    def s_kwargs(self):
        ln = self.r.choice([["def kf(t, *, s=1, **kw):", "    return t * s + sum(kw.values())",
                             "t0 = kf(t0, s=i0, u=1, v=f0)"],
                            ["args_ = (t0, 2)", "t1 = hb(*args_)"], ["kw_ = {'k': i0, 'scale': 0.5}", "t1 = hb(t1, **kw_)"],
                            ["t0 = torch.add(t0, t1, alpha=2)"], ["t0 = torch.sum(t0, dim=1, keepdim=True) + t0"]])
        return Stmt("kwargs", ln)

    def s_rng(self):
        d = self.pick_t()
        ln = self.r.choice([[f"torch.manual_seed(i0)", f"{d} = {d} + torch.randn({d}.shape)"],
                            [f"{d} = {d} + torch.rand_like({d})"],
                            [f"g_ = torch.Generator().manual_seed(3)", f"{d} = {d} * torch.rand({d}.shape, generator=g_)"],
                            [f"{d} = torch.nn.functional.dropout({d}, p=0.5, training=b0)"]])
        return Stmt("rng", ln)

    def s_pyrandom(self):
        ln = self.r.choice([["random.seed(i0)", "f0 = f0 + random.random()"], ["i0 = i0 + random.randint(0, 3)"],
                            ["l0 = l0 + [random.choice([1, 2, 3])]"]])
        return Stmt("pyrandom", ln)

    def s_mask(self):
        d, s_ = self.pick_t(), self.pick_t()
        ln = self.r.choice([[f"{d} = {d}.clone()", f"{d}[{d} > 0] = 0"], [f"{d} = {d}.masked_fill({s_} < 0, f0)"],
                            [f"{d} = {d}.clone()", f"{d}[:, 0] = {s_}[:, -1]"], [f"{d} = {d}.clone()", f"{d}[i0 % {d}.shape[0]] += 1"]])
        return Stmt("mask", ln)

    def s_numpy_view(self):
        self.has_break = True
        ln = self.r.choice([["arr_ = x.detach().numpy()", "arr_[0] = 7"], ["arr_ = t0.detach().numpy()", "t1 = t1 + float(arr_.sum())"],
                            ["t0 = torch.from_numpy(y.detach().numpy()) * 2"]])
        return Stmt("numpy_view", ln)

    def s_grad_call(self):
        ln = self.r.choice([["prev_ = torch.is_grad_enabled()", "torch.set_grad_enabled(False)", "t0 = t0 * 2",
                             "torch.set_grad_enabled(prev_)"], ["with torch.set_grad_enabled(b0):", "    t1 = t1 * 3"],
                            ["with torch.inference_mode():", "    t0 = t0 + 1", "t0 = t0.clone()"]])
        return Stmt("grad_call", ln)

    def s_del_var(self):
        ln = self.r.choice([["tmp_ = t0 * 2", "del t0", "t0 = tmp_"], ["del d0['k']", "d0['k'] = 2"], ["del l0[:1]"]])
        return Stmt("del_var", ln)

    def s_pyextra(self):
        ln = self.r.choice([
            ["t0 = t0 + sum(gen(i0 % 4))"], ["nt_ = NT(t0, i0)", "t1 = t1 + nt_.u * nt_.v"], ["t0 = hd(t0)"],
            ["q_, r_ = divmod(i0 + 7, 3)", "i0 = q_ * 10 + r_"], ["f0 = round(f0, 2) + math.floor(f0)"],
            ["i0 = int(t0.shape[0] / 2) + pow(3, i0 % 4, 5)"], ["b0 = bool(l0) and 2 in l0"], ["b0 = 'k' in d0 and d0['k'] is not None"],
            ["s_ = {v % 3 for v in l0}", "i0 = i0 + len(s_)"], ["dd_ = {str(v): v for v in l0}", "i0 = i0 + len(dd_)"],
            ["l0 = sorted(l0, key=lambda v: -v)"], ["l0 = list(map(lambda v: v + 1, filter(lambda v: v > 0, l0)))"],
            ["assert i0 < 50, 'big'"], ["fs_ = [lambda t, k=k: t + k for k in range(2)]", "t0 = fs_[1](t0)"],
            ["msg_ = '%d-%s' % (i0, b0)", "i0 = i0 + len(msg_)"], ["for k_, v_ in enumerate(l0[:2], start=1):", "    i0 = i0 + k_ * v_"],
            ["b0 = [1, 2] < [1, 3] and (i0, 1) != (1, i0)"], ["i0 = i0 + (3 if b0 else 1) + (b0 or 0)"],
        ])
        return Stmt("pyextra", ln)

    def s_nonlocal_break(self):
        self.has_break = True
        ln = self.r.choice([
            ["def nb_(t):", "    nonlocal i0", "    i0 += 1", "    print('nb', i0)", "    return t + i0", "t0 = nb_(t0)"],
            ["def nc_(t):", "    nonlocal t1", "    if t.sum() > 0:", "        t1 = t1 * 2", "    return t - 1", "t0 = nc_(t0)"],
            ["acc_ = []", "def nd_(t):", "    acc_.append(t.sum())", "    print(len(acc_))", "    return t * 2", "t0 = nd_(nd_(t0))",
             "t1 = t1 + acc_[0]"],
        ])
        return Stmt("nonlocal_break", ln)

    def s_objects(self):
        ln = self.r.choice([
            ["o_ = A(f0)", "o_.k = 5", "t0 = o_.m(t0)"], ["o_ = A(i0)", "setattr(o_, 'z', t1)", "t0 = t0 + getattr(o_, 'z', 0)"],
            ["b0 = hasattr(a, 'k') and not hasattr(a, 'zz')"], ["class L_:", "    c = 2", "    def g(self, t):", "        return t * self.c",
                                                               "t0 = L_().g(t0)"],
            ["o_ = A(1.0)", "o_.bump()", "o_.bump()", "i0 = i0 + o_.cnt"], ["t0 = t0 * type(a).__name__.count('A')"],
        ])
        return Stmt("objects", ln)

    # ------------------------------------------------------------ call plan
    def calls(self):
        r = self.r
        n_calls = r.randint(2, 6)
        base_shape = r.choice([(2, 3), (3, 3), (4, 2), (3, 5)])
        out = []
        shape, dtype = base_shape, "float32"
        noncontig = rg = False
        grad_mode = True
        alias = None
        n, fl = r.randint(0, 5), r.choice([0.5, 1.0, 2.0, -1.5])
        lst = [r.randint(0, 3) for _ in range(r.randint(0, 3))]
        for i in range(n_calls):
            muts = []
            if i > 0:
                if r.random() < 0.5:
                    n = r.randint(0, 5) if r.random() < 0.5 else n
                    fl = r.choice([0.5, 1.0, 2.0, -1.5, fl])
                    if r.random() < 0.3:
                        lst = [r.randint(0, 3) for _ in range(r.randint(0, 3))]
                if "in_shape" in self.feat and r.random() < 0.3:
                    shape = r.choice([(2, 3), (3, 3), (4, 2), (3, 5), (1, 4), base_shape])
                if "in_dtype" in self.feat and r.random() < 0.2:
                    dtype = r.choice(["float32", "float64"] + (["int64"] if "in_int_dtype" in self.feat else []))
                if "in_stride" in self.feat and r.random() < 0.25:
                    noncontig = not noncontig
                if "in_requires_grad" in self.feat and r.random() < 0.2:
                    rg = not rg
                if "grad_mode" in self.feat and r.random() < 0.15:
                    grad_mode = not grad_mode
                if "in_negzero" in self.feat and r.random() < 0.2:
                    fl = r.choice([0.0, -0.0])
                if "in_types" in self.feat and r.random() < 0.15:
                    n = r.choice([True, 2.0, 3, -1])
                    fl = r.choice([1, 2.5, True, 1.0])
                    lst = r.choice([tuple(lst), list(lst)])
                if "in_alias" in self.feat and r.random() < 0.15:
                    alias = r.choice([None, "same", "view", "row", "halves", "overlap"])
                if "in_special" in self.feat and r.random() < 0.15:
                    shape = r.choice([(0, 3), (1, 1), (2, 0), shape])
                    dtype = r.choice(["float16", "bfloat16", dtype])
                for _ in range(r.randint(0, 2)):
                    mk = [k for k in MUT_KINDS if k in self.feat]
                    if mk:
                        k = r.choice(mk)
                        muts.append((k, r.choice(MUTATIONS[k])))
            elif "in_negzero" in self.feat and r.random() < 0.2:
                fl = r.choice([0.0, -0.0])
            spec = CallSpec(shape, dtype, noncontig, rg, grad_mode, n, fl,
                            lst if isinstance(lst, tuple) else list(lst), muts)
            spec.alias = alias
            out.append(spec)
        return out


STMT_KINDS = ("ew", "reduce", "matmul", "view", "index", "cat", "inplace", "input_inplace", "int", "float",
              "bool", "pybranch", "tbranch", "for_range", "for_list", "while", "list", "tuple", "dict",
              "closure", "numpy", "print", "nograd", "method", "global", "grad", "shape", "dtype", "stride",
              "raise", "early_return", "item", "try", "list_break", "helper", "module", "builtins",
              "view_inplace", "raise_partial", "iter_tensor", "alias_ret", "kwargs", "rng", "pyrandom",
              "mask", "numpy_view", "grad_call", "del_var", "pyextra", "nonlocal_break", "objects",
              "layers")
COMPOUND = {"pybranch", "tbranch", "for_range", "for_list", "while", "nograd", "try"}

MUTATIONS = {
    "mut_global": ["G0 = G0 + 1", "G1 = -G1", "GL.append(3)", "GL.clear()", "GD['a'] = 5", "G0 = 0",
                   "GD = {'a': 2}", "GL = [4, 5, 6]"],
    "mut_instance": ["a.k = 3.0", "a.k = -1.0", "a = A(0.25)", "a.cnt = 10", "a.k = 2"],
    "mut_class": ["A.m = lambda self, t: t - 1", "A.p = property(lambda self: 1000.0)",
                  "a.m = lambda t: t + 5", "A.k = 7.0"],
    "mut_types": ["G0 = 2.5", "G0 = True", "G1 = 2", "GL = (1, 2)", "GD = {'a': 1.5, 'b': 0}", "a = 3",
                  "CL = torch.relu", "GD['a'] = torch.tensor(2.0)"],
    "mut_module": ["mod.train(False)", "mod.train(True)", "mod.scale.fill_(3.0)", "mod.scale = torch.tensor(5.0)",
                   "mod.flag = False", "mod.w.data.mul_(2)", "mod.w = torch.nn.Parameter(torch.tensor(-1.0))"],
    "mut_closure": ["CL = mk(3.0)", "mk.__defaults__ = None", "CL = lambda t: t - G0"],
    "mut_layers": ["layers[1].w.data.mul_(2)", "layers[0].k = 5", "layers.append(Ly(3))",
                   "layers[2].act = torch.nn.Tanh()", "layers[1].train(False)", "layers.reverse()",
                   "layers[0].w = torch.nn.Parameter(torch.tensor(-0.5))", "layers[2].b = torch.tensor(7.0)"],
}
MUT_KINDS = tuple(MUTATIONS)


def generate(seed, features=DEFAULT_FEATURES):
    rng = random.Random(seed)
    g = _Gen(rng, frozenset(features))
    body = [g.stmt() for _ in range(rng.randint(3, 9))]
    calls = g.calls()
    backend = rng.choice(["eager", "eager", "eager", "aot_eager"])
    return Program(seed, body, calls, backend)


if __name__ == "__main__":
    import sys
    p = generate(int(sys.argv[1]) if len(sys.argv) > 1 else 0)
    print(p.source())
    for c in p.calls:
        print("#", c.describe(), c.muts)
