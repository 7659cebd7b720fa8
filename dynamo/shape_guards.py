"""Shape guards: what a ShapeEnv learnt about the symbolic sizes of one
trace, as SHAPE_GUARD guards (docs/ARCHITECTURE.md, "Guard IR").

Owns: the translation of sympy relations over the symbols made for dynamic
dimensions of graph inputs (each stands for a (Source, dim) size leaf) into
postfix programs of `guards.SHAPE_OPS` steps and their texts, and the list
of facts a compile must guard: each symbol's replacement (a specialization
`s0 == 4`, an equality `s1 == s0`), its value range (`2 <= s0`, the 0/1
specialization) and every guard the ShapeEnv recorded (`s0 <= 16` from a
branch on a size).  It evaluates nothing (the C tree does, per call) and
never produces Python source.
"""
import sympy
from torch.utils._sympy import functions as symfn

from .exc import Unsupported
from .guards import SHAPE_GUARD, SHAPE_OPS, Guard

_OP = SHAPE_OPS
# sympy relation class -> (step, operands swapped, infix text)
_RELATIONS = {
    sympy.Eq: ("EQ", False, "=="), sympy.Ne: ("NE", False, "!="),
    sympy.Lt: ("LT", False, "<"), sympy.Le: ("LE", False, "<="),
    sympy.Gt: ("LT", True, "<"), sympy.Ge: ("LE", True, "<="),
}
_FUNCTIONS = {symfn.FloorDiv: ("FLOORDIV", "//"), symfn.CleanDiv: ("FLOORDIV", "//"),
              symfn.PythonMod: ("MOD", "%"), symfn.Mod: ("MOD", "%")}


class Leaf:
    """A size or stride of a graph input, `source.size()[dim]`, or (dim None)
    an int argument traced as a symbolic int, `source` itself."""

    __slots__ = ("source", "dim", "stride")

    def __init__(self, source, dim, stride=False):
        self.source, self.dim, self.stride = source, dim, stride

    def text(self):
        if self.dim is None:
            return self.source.name()
        return f"{self.source.name()}.{'stride' if self.stride else 'size'}()[{self.dim}]"

    def step(self):
        if self.dim is None:
            return (_OP["INT"], self.source, 0)
        return (_OP["STRIDE" if self.stride else "SIZE"], self.source, self.dim)


def lower(expr, leaves):
    """(program, text) of sympy expression `expr` whose free symbols are
    keys of `leaves` ({symbol: Leaf}).  Unsupported for anything else (a
    symbol the graph computes, a non-integer constant)."""
    program = []
    text = _lower(expr, leaves, program)
    if len(program) > 4096:
        raise Unsupported(f"shape guard too long: {text[:80]}")
    return tuple(program), text


def _lower(e, leaves, out):
    """Append e's steps to `out`; return its infix text (parenthesised
    when compound)."""
    if e is sympy.true or e is sympy.false:
        out.append((_OP["CONST"], int(e is sympy.true)))
        return str(e is sympy.true)
    if isinstance(e, sympy.Integer) or isinstance(e, int):
        out.append((_OP["CONST"], int(e)))
        return str(int(e))
    if isinstance(e, sympy.Symbol):
        leaf = leaves.get(e)
        if leaf is None:
            raise Unsupported(f"shape guard on {e}, a size no graph input has")
        out.append(leaf.step())
        return leaf.text()
    cls = type(e)
    if cls in _RELATIONS:
        step, swap, sign = _RELATIONS[cls]
        a, b = (e.rhs, e.lhs) if swap else (e.lhs, e.rhs)
        ta, tb = _lower(a, leaves, out), _lower(b, leaves, out)
        out.append((_OP[step],))
        return f"{ta} {sign} {tb}"
    if cls in (sympy.Add, sympy.Mul, sympy.And, sympy.Or) or cls in (symfn.Max, symfn.Min):
        step, sign = {sympy.Add: ("ADD", " + "), sympy.Mul: ("MUL", "*"), sympy.And: ("AND", " and "),
                      sympy.Or: ("OR", " or "), symfn.Max: ("MAX", ", "),
                      symfn.Min: ("MIN", ", ")}[cls]
        args = _ordered(e.args)
        texts = [_lower(args[0], leaves, out)]
        for a in args[1:]:
            texts.append(_lower(a, leaves, out))
            out.append((_OP[step],))
        if cls in (symfn.Max, symfn.Min):
            return f"{cls.__name__.lower()}({sign.join(texts)})"
        return "(" + sign.join(texts) + ")"
    if cls is sympy.Not:
        t = _lower(e.args[0], leaves, out)
        out.append((_OP["NOT"],))
        return f"not {t}"
    if cls is sympy.Pow and isinstance(e.exp, sympy.Integer) and 1 <= int(e.exp) <= 8:
        t = _lower(e.base, leaves, out)
        for _ in range(int(e.exp) - 1):
            _lower(e.base, leaves, out)
            out.append((_OP["MUL"],))
        return f"{t}**{int(e.exp)}"
    if cls in _FUNCTIONS:
        step, sign = _FUNCTIONS[cls]
        ta, tb = _lower(e.args[0], leaves, out), _lower(e.args[1], leaves, out)
        out.append((_OP[step],))
        return f"({ta} {sign} {tb})"
    raise Unsupported(f"shape guard {e} ({cls.__name__}) has no SHAPE_GUARD form")


def _ordered(args):
    """Constants first, then by text: one text per relation, whatever
    order sympy kept the terms in."""
    return sorted(args, key=lambda a: (not a.is_number, str(a)))


def produce(shape_env, leaves, stride_facts=(), input_origins=None):
    """The SHAPE_GUARD guards of one trace: for each symbol of `leaves`
    ({symbol: Leaf}) its replacement and value range, then every guard
    the ShapeEnv recorded, simplified; `stride_facts` ((Leaf, sympy expr)
    pairs): strides the example values hold as expressions of sizes.
    Guards already implied (simplified to True) are dropped, and each
    relation appears once.  Provenance (Guard.origin): a recorded guard's
    is the line traced when the ShapeEnv recorded it (`shape_env.guards`
    may be an `OriginList`), a symbol's own facts point to the line that
    read its input (`input_origins`: source name -> Origin)."""
    input_origins = input_origins or {}
    recorded = getattr(shape_env.guards, "origins", {})
    # a symbol's replacement and range were narrowed by the last recorded
    # guard on it (a branch on the size); untouched, they are the input's
    by_symbol = {}
    for g in shape_env.guards:
        for sym in g.expr.free_symbols:
            if recorded.get(id(g)) is not None:
                by_symbol[sym] = recorded[id(g)]
    facts = []                          # (sympy relation, Origin or None)
    for sym, leaf in leaves.items():
        origin = by_symbol.get(sym) or input_origins.get(leaf.source.name())
        replaced = shape_env.replace(sym)
        if replaced != sym:
            facts.append((sympy.Eq(sym, replaced, evaluate=False), origin))
            continue
        vr = shape_env.var_to_range.get(sym)
        if vr is not None:
            if isinstance(vr.lower, sympy.Integer) and int(vr.lower) > 0:
                facts.append((sympy.Le(int(vr.lower), sym, evaluate=False), origin))
            if isinstance(vr.upper, sympy.Integer):
                facts.append((sympy.Le(sym, int(vr.upper), evaluate=False), origin))
    for g in shape_env.guards:
        e = shape_env.simplify(g.expr)
        if e is sympy.true:
            continue
        if e is sympy.false:
            raise Unsupported(f"shape guard {g.expr} is false on this trace's own sizes")
        facts.append((e, recorded.get(id(g))))
    all_leaves = dict(leaves)
    for leaf, expr in stride_facts:
        sym = sympy.Symbol(f"stride_{len(all_leaves)}", integer=True)
        all_leaves[sym] = leaf
        facts.append((sympy.Eq(sym, shape_env.replace(expr), evaluate=False),
                      input_origins.get(leaf.source.name())))
    out, seen = [], set()
    for fact, origin in facts:
        program, text = lower(fact, all_leaves)
        if text in seen:
            continue
        seen.add(text)
        first = next(s[1] for s in program if s[0] in (_OP["SIZE"], _OP["STRIDE"], _OP["INT"]))
        out.append(Guard(first, SHAPE_GUARD, (text, program), origin))
    return out


class OriginList(list):
    """A ShapeEnv's `guards` list that remembers, per guard appended, the
    user line being traced (`origins`: id(guard) -> Origin; the list keeps
    the guards alive, so the ids stay theirs).  `where` is a callable
    returning the current Origin (OutputGraph.origin)."""

    def __init__(self, where):
        super().__init__()
        self.where, self.origins = where, {}

    def append(self, guard):
        self.origins[id(guard)] = self.where()
        super().append(guard)


def release_shape_env_caches():
    """Empty the ShapeEnv methods' memo caches (`replace`, `simplify`, ...:
    class-wide caches keyed by the ShapeEnv, cleared by torch only when a
    call sees another version count; every new ShapeEnv starts at the same
    count, so each compile's ShapeEnv, its symbols and fake-tensor cache
    stayed alive in them: compile/reset cycles grew).  Called when a
    compile's ShapeEnv is made and when its guards are produced."""
    from torch.fx.experimental.symbolic_shapes import ShapeEnv
    for name in _CACHED_METHODS:
        method = getattr(ShapeEnv, name, None)
        clear = getattr(method, "cache_clear", None)
        if clear is not None:
            clear()


# the ShapeEnv methods torch memoizes class-wide (its _lru_cache)
_CACHED_METHODS = ("get_axioms", "_maybe_evaluate_static", "replace", "_update_divisible",
                   "simplify", "_find", "_simplify_floor_div")
