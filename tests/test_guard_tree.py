"""Tests of the guard decision tree (guards/tree.c) against its Python twin
(tests/guard_ref.py), plus targeted tests through the real hook: global
fast path, dead guarded objects, nn.Module attributes, many entries.

The randomized part builds entry sets from random "base inputs" (each
entry's guards pass on its base input), then asks the tree and the
reference about exact base inputs, near misses and fresh inputs; every
decision (hit index, or the closest entry's failing test) must agree.
"""
import collections
import gc
import os
import random
import sys
import warnings

import pytest
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from test_c_core import C, Recorder, clean_state  # noqa: E402,F401

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)
import guard_ref  # noqa: E402  (tests/guard_ref.py)
from dynamo.guards import tensor_expected  # noqa: E402

LOCAL, GLOBAL, CLOSURE, ATTR, ITEM, NONE, STATIC_ATTR, GENERIC_ATTR = range(8)
(TYPE_MATCH, ID_MATCH, EQUALS_MATCH, LENGTH, TENSOR_MATCH, GRAD_MODE, DICT_KEYS,
 FUNCTION_MATCH, NONE_MATCH, SAME_OBJECT) = range(10)
BUILTINS = __builtins__ if isinstance(__builtins__, dict) else __builtins__.__dict__


class Thing:
    def __init__(self, **kw):
        self.__dict__.update(kw)


class Renamed(Thing):
    """Reads `x` as `y` (a Python __getattribute__): ATTR and GENERIC_ATTR
    of `x` differ."""

    def __getattribute__(self, name):
        return super().__getattribute__("y" if name == "x" else name)


def f1(): pass          # noqa: E704
def f2(): pass          # noqa: E704
def f3(): pass          # noqa: E704


FUNCS = [f1, f2, f3]
NAN = float("nan")          # one NaN object: EQUALS compares floats bit for bit
OBJS = [Thing(), Thing()]
TENSORS = {}


def tensor(rng):
    """A random tensor from a small pool (so shapes and dtypes repeat)."""
    dtype = rng.choice([torch.float32, torch.float64, torch.int64, torch.bool])
    shape = tuple(rng.choice([1, 2, 3]) for _ in range(rng.randint(0, 3)))
    rg = dtype in (torch.float32, torch.float64) and rng.random() < 0.3
    t = torch.zeros(shape, dtype=dtype, requires_grad=rg)
    if len(shape) >= 2 and rng.random() < 0.3:
        t = t.detach().transpose(0, 1).requires_grad_(rg)
    return t


def value(rng, depth=0):
    r = rng.random()
    if r < 0.25:
        return tensor(rng)
    if r < 0.40:
        return rng.randint(0, 4)
    if r < 0.47:
        return rng.choice(["a", "b", "cc"])
    if r < 0.52:
        return None
    if r < 0.56:
        return rng.choice([0.5, 1.0, True, False, 0.0, -0.0, NAN])
    if r < 0.62:
        return rng.choice(FUNCS)
    if r < 0.66:
        return rng.choice(OBJS)
    if depth > 0:
        return rng.randint(0, 2)
    if r < 0.74:
        return [value(rng, 1) for _ in range(rng.randint(0, 3))]
    if r < 0.82:
        return tuple(value(rng, 1) for _ in range(rng.randint(0, 3)))
    if r < 0.90:
        d = {k: value(rng, 1) for k in rng.sample("abc", rng.randint(0, 3))}
        return collections.OrderedDict(d) if rng.random() < 0.3 else d
    return (Thing if r < 0.95 else Renamed)(x=value(rng, 1), y=value(rng, 1))


def simple(v):
    return v is None or type(v) in (int, float, str, bool) or (
        type(v) is tuple and all(simple(x) for x in v))


def guards_for(rng, src, v, out, depth=0):
    """Random guards on v at src (v passes all of them)."""
    if isinstance(v, torch.Tensor):
        exp = list(tensor_expected(v, dynamic=rng.random() < 0.15))
        if exp[6] is not None and rng.random() < 0.2:          # one dynamic dim
            sizes = list(exp[6])
            if sizes:
                sizes[rng.randrange(len(sizes))] = None
            exp[6] = tuple(sizes)
        out.append((TENSOR_MATCH, src, *exp))
        return
    options = [lambda: out.append((TYPE_MATCH, src, type(v))),
               lambda: out.append((NONE_MATCH, src, v is None))]
    if simple(v):
        options += [lambda: out.append((EQUALS_MATCH, src, v))] * 3
    if callable(v) or isinstance(v, Thing) or v is None:
        options += [lambda: out.append((ID_MATCH if not callable(v) else FUNCTION_MATCH, src, v))] * 2
    if type(v) in (list, tuple, dict):
        options.append(lambda: out.append((LENGTH, src, type(v), len(v))))
    if type(v) is dict:
        options.append(lambda: out.append((DICT_KEYS, src, tuple(v))))
    if type(v) is collections.OrderedDict:
        options.append(lambda: out.append((DICT_KEYS, src, collections.OrderedDict.fromkeys(v))))
    for pick in rng.sample(options, rng.randint(1, min(2, len(options)))):
        pick()
    if depth == 0 and type(v) in (list, tuple) and v and rng.random() < 0.6:
        guards_for(rng, (ITEM, src, 0), v[0], out, depth + 1)
    if depth == 0 and type(v) in (dict, collections.OrderedDict) and v and rng.random() < 0.6:
        k = rng.choice(list(v))
        guards_for(rng, (ITEM, src, k), v[k], out, depth + 1)
    if depth == 0 and hasattr(v, "x") and rng.random() < 0.7:
        guards_for(rng, (ATTR, src, "x"), v.x, out, depth + 1)
    if depth == 0 and isinstance(v, Thing) and "x" in vars(v) and rng.random() < 0.4:
        guards_for(rng, (GENERIC_ATTR, src, "x"), object.__getattribute__(v, "x"), out, depth + 1)
    if depth == 0 and isinstance(v, Thing) and rng.random() < 0.3:   # class-level lookup
        name = rng.choice(["x", "__init__"])
        out.append((ID_MATCH, (STATIC_ATTR, src, name), guard_ref.static_lookup(v, name)))


NLOCALS = 3
GLOBAL_NAMES = ["G0", "G1", "len"]


def alias_some(rng, values, p):
    """With probability p, make one value the same object as another, or
    for a tensor, often a view of it (one storage, two objects)."""
    if p and rng.random() < p:
        names = list(values)
        a, b = rng.sample(names, 2)
        v = values[a]
        values[b] = v.view(v.shape) if isinstance(v, torch.Tensor) and rng.random() < 0.5 else v


def random_input(rng, alias=0.0):
    f_locals = {f"a{i}": value(rng) for i in range(NLOCALS)}
    alias_some(rng, f_locals, alias)
    f_globals = {n: value(rng) for n in GLOBAL_NAMES[:2] if rng.random() < 0.8}
    grad = rng.random() < 0.8
    return f_locals, f_globals, grad


def mutate(rng, inp, alias=0.0):
    f_locals, f_globals, grad = dict(inp[0]), dict(inp[1]), inp[2]
    r = rng.random()
    if alias and r < alias:
        alias_some(rng, f_locals, 1.0)
    elif r < 0.6:
        k = rng.choice(list(f_locals))
        f_locals[k] = value(rng)
    elif r < 0.8:
        if f_globals and rng.random() < 0.5:
            del f_globals[rng.choice(list(f_globals))]
        else:
            f_globals[rng.choice(GLOBAL_NAMES)] = value(rng)
    else:
        grad = not grad
    return f_locals, f_globals, grad


def random_guards(rng, inp, alias=0.0, shape=0.0):
    f_locals, f_globals, grad = inp
    guards = []
    for i, (k, v) in enumerate(f_locals.items()):
        if rng.random() < 0.75:
            guards_for(rng, (LOCAL, i), v, guards)
    values = list(f_locals.values())
    for i in range(len(values)):
        for j in range(len(values)):
            if i != j and alias and rng.random() < alias:       # (v_i is v_j) == same
                other = (LOCAL, j) if rng.random() < 0.8 else (GLOBAL, "G0")
                v = values[j] if other[0] == LOCAL else f_globals.get("G0", guard_ref.MISSING)
                if other[0] == LOCAL or v is not guard_ref.MISSING:
                    guards.append((SAME_OBJECT, (LOCAL, i), other, values[i] is v))
                shared = guard_ref._same_storage(values[i], v)
                if shared is not None and rng.random() < 0.6:   # (one storage) == same
                    guards.append((guard_ref.STORAGE_MATCH, (LOCAL, i), other, shared))
    for n in GLOBAL_NAMES:
        if rng.random() < 0.3:
            v = f_globals.get(n, BUILTINS.get(n))
            if v is not None or n in f_globals:
                guards_for(rng, (GLOBAL, n), v, guards)
    if rng.random() < 0.3:
        guards.append((GRAD_MODE, (NONE,), grad))
    if rng.random() < 0.5:                  # the wrapper's backend (key > 0)
        guards.append((guard_ref.BACKEND_MATCH, (NONE,), rng.choice(BACKEND_KEYS[1:])))
    if shape and rng.random() < shape:
        guards += shape_guards(rng, inp)
    rng.shuffle(guards)
    return guards


# Backend keys a lookup runs with: 0 is RUN mode (every entry's backend passes).
BACKEND_KEYS = (0, 1, 2, 3)
def shape_guards(rng, inp):
    """Random SHAPE_GUARDs over the sizes/strides of the tensor locals of
    `inp`: an arithmetic of one or two leaves and a constant compared with
    a constant or another leaf, true on `inp` most of the time."""
    f_locals, f_globals, _ = inp
    leaves = [(op, (LOCAL, i), d) for i, v in enumerate(f_locals.values())
              if isinstance(v, torch.Tensor) for d in range(v.dim())
              for op in (guard_ref.SH_SIZE, guard_ref.SH_STRIDE)]
    if not leaves:
        return []
    out = []
    for _ in range(rng.randint(1, 2)):
        first = rng.choice(leaves)
        prog = [first]
        if rng.random() < 0.5:
            prog += [rng.choice(leaves), (rng.choice([guard_ref.SH_ADD, guard_ref.SH_MUL,
                                                      guard_ref.SH_MAX, guard_ref.SH_SUB]),)]
        if rng.random() < 0.4:
            prog += [(guard_ref.SH_CONST, rng.choice([1, 2, 3])),
                     (rng.choice([guard_ref.SH_FLOORDIV, guard_ref.SH_MOD, guard_ref.SH_ADD]),)]
        frame = guard_ref.Frame(f_locals, f_globals, BUILTINS)
        value = None
        if guard_ref.shape_eval(tuple(prog) + ((guard_ref.SH_CONST, -10 ** 9), (guard_ref.SH_NE,)),
                                frame):
            stack_prog = tuple(prog) + ((guard_ref.SH_CONST, 0), (guard_ref.SH_ADD,))
            for c in range(-4, 40):
                if guard_ref.shape_eval(stack_prog + ((guard_ref.SH_CONST, c), (guard_ref.SH_EQ,)),
                                        frame):
                    value = c
                    break
        if value is None:
            value = 2
        rel = rng.choice([guard_ref.SH_EQ, guard_ref.SH_LE, guard_ref.SH_LT, guard_ref.SH_NE])
        if rel == guard_ref.SH_LE:
            rhs = value + rng.choice([0, 0, 1, -1])
        elif rel == guard_ref.SH_LT:
            rhs = value + rng.choice([1, 1, 0])
        else:
            rhs = value + rng.choice([0, 0, 0, 1]) * (1 if rel == guard_ref.SH_EQ else -1)
        prog += [(guard_ref.SH_CONST, rhs), (rel,)]
        if rng.random() < 0.2:
            prog.append((guard_ref.SH_NOT,))
        out.append((guard_ref.SHAPE_GUARD, first[1], f"relation {len(out)}", tuple(prog)))
    return out


def same(a, b):
    if a is b:
        return True
    if a is C.MISSING or b is guard_ref.MISSING:
        return a is C.MISSING and b is guard_ref.MISSING
    if isinstance(a, torch.Tensor) or isinstance(b, torch.Tensor):   # fresh views (t[0])
        return (type(a) is type(b) and a.shape == b.shape and a.dtype == b.dtype
                and torch.equal(a, b))
    return type(a) is type(b) and a == b


def same_failures(c, ref):
    if len(c) != len(ref):
        return False
    if not c:
        return True
    head_c, head_r = c[0], ref[0]
    if head_c[:3] != head_r[:3] or not same(head_c[3], head_r[3]) or not same(head_c[4], head_r[4]):
        return False
    return list(c[1:]) == list(ref[1:])


def some_source_raises(entries, f_locals, f_globals):
    frame = guard_ref.Frame(f_locals, f_globals, BUILTINS)
    for guards, _ in entries:
        for g in guards:
            try:
                frame.fetch(g[1])
            except Exception:
                return True
    return False


def check_case(rng, nentries, ninputs, alias=0.0, shape=0.0):
    bases = [random_input(rng, alias) for _ in range(max(1, nentries // 3 + 1))]
    entries, entry_inputs = [], []
    for i in range(nentries):
        inp = rng.choice(bases)
        if rng.random() < 0.5:
            inp = mutate(rng, inp, alias)
        entries.append((random_guards(rng, inp, alias, shape), i))
        entry_inputs.append(inp)
    tree = C._tree_new(entries)
    hits = 0
    for _ in range(ninputs):
        r = rng.random()
        if r < 0.4 and entry_inputs:
            inp = rng.choice(entry_inputs)
        elif r < 0.85 and entry_inputs:
            inp = mutate(rng, rng.choice(entry_inputs), alias)
        else:
            inp = random_input(rng, alias)
        f_locals, f_globals, grad = inp
        backend = rng.choice(BACKEND_KEYS)
        with torch.set_grad_enabled(grad), warnings.catch_warnings():
            warnings.simplefilter("ignore")             # tensor["a"] indexing warnings
            try:
                got = C._tree_lookup(tree, f_locals, f_globals, BUILTINS, None, backend)
            except Exception:
                # The tree may fetch a source the flat order never reaches;
                # an error there is an error: some source must raise.
                assert some_source_raises(entries, f_locals, f_globals)
                continue
            want = guard_ref.lookup(entries, f_locals, f_globals, BUILTINS, None, backend)
        assert got[0] == want[0], (entries, inp, got, want)
        if got[0] < 0:
            assert same_failures(got[1], want[1]), (got[1], want[1])
        else:
            hits += 1
    return hits


# ---- randomized: tree == reference ---------------------------------------------

@pytest.mark.parametrize("seed", range(8))
def test_random_small_sets_match_reference(seed):
    rng = random.Random(seed)
    hits = 0
    for _ in range(40):
        hits += check_case(rng, rng.randint(0, 12), 10)
    assert hits > 0


@pytest.mark.parametrize("seed", range(6))
def test_random_aliasing_matches_reference(seed):
    """SAME_OBJECT (kind 9) and STORAGE_MATCH (kind 11) mixed with the
    other kinds: inputs often pass one object, or a tensor and a view of it,
    in two arguments; the tree may switch on same_object / same_storage."""
    rng = random.Random(500 + seed)
    hits = 0
    for _ in range(40):
        hits += check_case(rng, rng.randint(0, 12), 10, alias=0.4)
    hits += check_case(rng, 150, 100, alias=0.3)
    assert hits > 0


@pytest.mark.parametrize("seed", range(6))
def test_random_shape_guards_match_reference(seed):
    """SHAPE_GUARD (kind 12): postfix relations over the sizes and strides
    of tensor arguments, mixed with the other kinds; missing leaves (a
    non-tensor, a dim the tensor lacks) fail them, as in the reference."""
    rng = random.Random(700 + seed)
    hits = 0
    for _ in range(40):
        hits += check_case(rng, rng.randint(0, 12), 10, shape=0.6)
    hits += check_case(rng, 120, 80, shape=0.5)
    assert hits > 0


def test_shape_guard_is_a_tree_test_and_reports_its_leaves():
    SIZE, CONST, LE, EQ = (C.SHAPE_OPS[k] for k in ("SIZE", "CONST", "LE", "EQ"))
    at_least_2 = (guard_ref.SHAPE_GUARD, (LOCAL, 0), "2 <= L['x'].size()[0]",
                  ((CONST, 2), (SIZE, (LOCAL, 0), 0), (LE,)))
    same_rows = (guard_ref.SHAPE_GUARD, (LOCAL, 0), "L['x'].size()[0] == L['y'].size()[0]",
                 ((SIZE, (LOCAL, 0), 0), (SIZE, (LOCAL, 1), 0), (EQ,)))
    tree = C._tree_new([([at_least_2, same_rows], "p")])
    x, y = torch.zeros(3, 2), torch.zeros(3)
    assert C._tree_lookup(tree, {"x": x, "y": y}, {}, BUILTINS, None) == (0, None)
    got = C._tree_lookup(tree, {"x": x, "y": torch.zeros(4)}, {}, BUILTINS, None)
    assert got == (-1, [("p", 1, "shape", "L['x'].size()[0] == L['y'].size()[0]", (3, 4))])
    got = C._tree_lookup(tree, {"x": torch.zeros(1, 2), "y": torch.zeros(1)}, {}, BUILTINS, None)
    assert got == (-1, [("p", 0, "shape", "2 <= L['x'].size()[0]", (1,))])
    got = C._tree_lookup(tree, {"x": 3, "y": y}, {}, BUILTINS, None)        # not a tensor
    assert got == (-1, [("p", 0, "shape", "2 <= L['x'].size()[0]", (None,))])
    info = C._tree_info(tree)
    tests = info["root"]["tests"] + [t for leaf in (info["root"]["leaf"] or ()) for t in leaf[2]]
    assert [t[1] for t in tests].count("shape") == 2
    with pytest.raises(ValueError, match="first leaf"):
        C.eval_guards([(guard_ref.SHAPE_GUARD, (LOCAL, 1), "t", ((CONST, 2), (SIZE, (LOCAL, 0), 0),
                                                                 (LE,)))], {"x": x, "y": y}, {}, {}, None)
    with pytest.raises(ValueError, match="one value"):
        C.eval_guards([(guard_ref.SHAPE_GUARD, (LOCAL, 0), "t", ((SIZE, (LOCAL, 0), 0),
                                                                 (CONST, 2)))], {"x": x}, {}, {}, None)


def test_shape_guard_int_leaf_reads_an_exact_int():
    """INT steps (an int argument traced as a symbolic int): the value of
    an exact int within int64; a bool, a float, a huge int, a tensor or a
    missing source fails the relation, in C as in the reference."""
    INT, SIZE, CONST, LE, MUL, EQ = (C.SHAPE_OPS[k] for k in ("INT", "SIZE", "CONST", "LE", "MUL", "EQ"))
    guards = [(guard_ref.SHAPE_GUARD, (LOCAL, 0), "2 <= L['n']", ((CONST, 2), (INT, (LOCAL, 0), 0), (LE,))),
              (guard_ref.SHAPE_GUARD, (LOCAL, 0), "L['n']*2 == L['x'].size()[0]",
               ((INT, (LOCAL, 0), 0), (CONST, 2), (MUL,), (SIZE, (LOCAL, 1), 0), (EQ,)))]
    x6 = torch.zeros(6)
    cases = [({"n": 3, "x": x6}, -1), ({"n": 4, "x": x6}, 1), ({"n": 1, "x": torch.zeros(2)}, 0),
             ({"n": True, "x": torch.zeros(2)}, 0), ({"n": 3.0, "x": x6}, 0), ({"n": 2 ** 70, "x": x6}, 0),
             ({"n": torch.tensor(3), "x": x6}, 0), ({"x": x6}, 0)]
    tree = C._tree_new([(guards, "p")])
    for f_locals, want in cases:
        assert C.eval_guards(guards, f_locals, {}, BUILTINS, None) == want, f_locals
        got = C._tree_lookup(tree, f_locals, {}, BUILTINS, None)
        ref = guard_ref.lookup([(guards, "p")], f_locals, {}, BUILTINS, None)
        assert got[0] == ref[0] == (0 if want == -1 else -1), f_locals
        assert got[1] == ref[1] is None or same_failures(got[1], ref[1]), f_locals
    got = C._tree_lookup(tree, {"n": 4, "x": x6}, {}, BUILTINS, None)
    assert got == (-1, [("p", 1, "shape", "L['n']*2 == L['x'].size()[0]", (4, 6))])
    got = C._tree_lookup(tree, {"n": 2.5, "x": x6}, {}, BUILTINS, None)
    assert got == (-1, [("p", 0, "shape", "2 <= L['n']", (None,))])


def test_same_object_guard_and_report():
    a, b = torch.zeros(2), torch.zeros(2)
    same = [(SAME_OBJECT, (LOCAL, 1), (LOCAL, 0), True)]
    differ = [(SAME_OBJECT, (LOCAL, 1), (LOCAL, 0), False)]
    assert C.eval_guards(same, {"x": a, "y": a}, {}, BUILTINS, None) == -1
    assert C.eval_guards(same, {"x": a, "y": b}, {}, BUILTINS, None) == 0
    assert C.eval_guards(differ, {"x": a, "y": b}, {}, BUILTINS, None) == -1
    assert C.eval_guards(differ, {"x": a}, {}, BUILTINS, None) == 0      # other missing
    tree = C._tree_new([(differ, "new"), (same, "old")])
    assert C._tree_lookup(tree, {"x": a, "y": a}, {}, BUILTINS, None)[0] == 1
    assert C._tree_lookup(tree, {"x": a, "y": b}, {}, BUILTINS, None)[0] == 0
    hit, failures = C._tree_lookup(C._tree_new([(same, "e")]), {"x": a, "y": b}, {}, BUILTINS, None)
    assert hit == -1 and failures == [("e", 0, "same_object", True, False)]
    with pytest.raises(ValueError, match="another value source"):
        C.eval_guards([(SAME_OBJECT, (LOCAL, 0), (LOCAL, 0), True)], {"x": a}, {}, BUILTINS, None)


def test_backend_match_keeps_both_entries_and_reports_keys():
    """Two entries with the same guards but for two backends (keys 1 and
    2): each backend hits its own entry, RUN mode (key 0) takes the newest,
    a third backend misses with the closest entry's key as expected and its
    own as actual; the reference agrees on each."""
    BACKEND = guard_ref.BACKEND_MATCH
    guards = [(TYPE_MATCH, (LOCAL, 0), int)]
    entries = [(guards + [(BACKEND, (NONE,), 2)], "b2"), (guards + [(BACKEND, (NONE,), 1)], "b1")]
    tree = C._tree_new(entries)
    for key, want in ((1, 1), (2, 0), (0, 0), (3, -1)):
        got = C._tree_lookup(tree, {"x": 5}, {}, BUILTINS, None, key)
        ref = guard_ref.lookup(entries, {"x": 5}, {}, BUILTINS, None, key)
        assert got[0] == ref[0] == want
        if want < 0:
            assert got[1][0] == ("b2", 1, "backend", 2, 3) and same_failures(got[1], ref[1])
    info = C._tree_info(tree)
    assert info["entries"] == ["b2", "b1"]          # one tree holds both: no thrash
    assert C.eval_guards([(BACKEND, (NONE,), 4)], {}, {}, BUILTINS, None, 5) == 0
    assert C.eval_guards([(BACKEND, (NONE,), 4)], {}, {}, BUILTINS, None, 4) == -1
    assert C.eval_guards([(BACKEND, (NONE,), 4)], {}, {}, BUILTINS, None) == -1
    with pytest.raises(ValueError):
        C.eval_guards([(BACKEND, (NONE,), 0)], {}, {}, BUILTINS, None)
    assert C.tree_property_text("global state", "backend") == "compile backend"


@pytest.mark.parametrize("seed", range(3))
def test_random_large_sets_match_reference(seed):
    rng = random.Random(1000 + seed)
    hits = check_case(rng, rng.choice([100, 200, 300]), 150)
    assert hits > 0


def test_random_same_structure_many_entries():
    """The usual recompile pattern: every entry guards the same sources."""
    rng = random.Random(7)
    entries, inputs = [], []
    for i in range(300):
        t = torch.zeros(rng.randint(1, 20), rng.randint(1, 20))
        n = rng.randint(0, 5)
        inputs.append(({"x": t, "n": n}, {}))
        entries.append(([(TENSOR_MATCH, (LOCAL, 0), *tensor_expected(t, False)),
                         (EQUALS_MATCH, (LOCAL, 1), n)], i))
    tree = C._tree_new(entries)
    for f_locals, f_globals in inputs + [({"x": torch.zeros(21, 1), "n": 0}, {})]:
        got = C._tree_lookup(tree, f_locals, f_globals, BUILTINS, None)
        want = guard_ref.lookup(entries, f_locals, f_globals, BUILTINS)
        assert got[0] == want[0]
        if got[0] < 0:
            assert same_failures(got[1], want[1])
    stats = C._tree_info(tree, True)
    assert stats["last_visited"] <= 8, stats


# ---- targeted ---------------------------------------------------------------------

def test_tree_info_shape_and_counters():
    entries = [([(TYPE_MATCH, (LOCAL, 0), int), (EQUALS_MATCH, (LOCAL, 1), k)], f"e{k}")
               for k in range(4)]
    tree = C._tree_new(entries)
    assert C._tree_lookup(tree, {"a": 1, "b": 2}, {}, BUILTINS, None) == (2, None)
    info = C._tree_info(tree)
    assert info["entries"] == ["e0", "e1", "e2", "e3"]
    root = info["root"]
    assert root["tests"] == [((LOCAL, 0), "type", int), ((LOCAL, 1), "type", int)]
    assert root["switch"] == ((LOCAL, 1), "value")
    assert sorted(v for v, _ in root["branches"]) == [0, 1, 2, 3]
    assert root["evaluations"] == 1 and root["failures"] == 0
    stats = C._tree_info(tree, True)
    assert stats["last_visited"] == 2 and stats["hits"] == 1


def test_default_branch_keeps_newest_first():
    # e0 (newest) does not constrain b; e1 does: an input matching both picks e0.
    entries = [([(TYPE_MATCH, (LOCAL, 0), int)], "e0"),
               ([(EQUALS_MATCH, (LOCAL, 1), 5), (TYPE_MATCH, (LOCAL, 0), int)], "e1"),
               ([(EQUALS_MATCH, (LOCAL, 1), 6)], "e2")]
    tree = C._tree_new(entries)
    assert C._tree_lookup(tree, {"a": 1, "b": 5}, {}, BUILTINS, None)[0] == 0
    assert C._tree_lookup(tree, {"a": 1.0, "b": 5}, {}, BUILTINS, None)[0] == -1
    assert C._tree_lookup(tree, {"a": 1.0, "b": 6}, {}, BUILTINS, None)[0] == 2


def test_equal_values_of_other_types_do_not_match():
    entries = [([(EQUALS_MATCH, (LOCAL, 0), v)], repr(v)) for v in (1, 1.0, True, "1")]
    tree = C._tree_new(entries)
    for i, v in enumerate((1, 1.0, True, "1")):
        assert C._tree_lookup(tree, {"a": v}, {}, BUILTINS, None)[0] == i


def test_closest_entry_reports_size():
    entries = [([(TENSOR_MATCH, (LOCAL, 0), *tensor_expected(torch.zeros(4), False))], "p")]
    tree = C._tree_new(entries)
    hit, failures = C._tree_lookup(tree, {"x": torch.zeros(8)}, {}, BUILTINS, None)
    assert hit == -1 and failures == [("p", 0, "size()[0]", 4, 8)]
    hit, failures = C._tree_lookup(tree, {"x": torch.zeros(4, dtype=torch.float64)}, {},
                                   BUILTINS, None)
    assert failures == [("p", 0, "dtype", torch.float32, torch.float64)]
    hit, failures = C._tree_lookup(tree, {}, {}, BUILTINS, None)
    assert failures == [("p", 0, "type", torch.Tensor, C.MISSING)]


# ---- through the hook: globals fast path ------------------------------------------

def test_global_rebound_deleted_and_shadowed_never_hit_stale():
    ns = {"__builtins__": BUILTINS}
    exec("def f():\n    return g\n", ns)
    fn = ns["f"]
    marker = object()
    ns["g"] = marker
    calls = []

    def answer(code, f_locals, f_globals, f_builtins, func, failures):
        calls.append(failures)
        return (code, [(ID_MATCH, (GLOBAL, "g"), f_globals["g"])], len(calls))
    oc = C.OptimizedCallable(fn, Recorder(answer), C.MODE_COMPILE)
    assert oc() is marker and oc() is marker and len(calls) == 1
    other = object()
    ns["g"] = other                                     # rebound
    assert oc() is other and len(calls) == 2
    assert calls[-1][0][2:] == ("id", marker, other)
    assert oc() is other and len(calls) == 2            # fast path again
    del ns["g"]                                         # deleted
    with pytest.raises(KeyError):                       # the callback's own lookup
        oc()
    assert len(calls) == 3 and calls[-1][0][4] is C.MISSING


def test_builtin_shadowed_by_new_global():
    ns = {"__builtins__": BUILTINS}
    exec("def f(x):\n    return len(x)\n", ns)
    calls = []

    def answer(code, f_locals, f_globals, f_builtins, func, failures):
        calls.append(failures)
        value = f_globals["len"] if "len" in f_globals else f_builtins["len"]
        return (code, [(FUNCTION_MATCH, (GLOBAL, "len"), value)], len(calls))
    oc = C.OptimizedCallable(ns["f"], Recorder(answer, ns["f"].__code__), C.MODE_COMPILE)
    assert oc([1, 2]) == 2 and oc([1]) == 1 and len(calls) == 1
    ns["len"] = lambda x: 42                            # shadows the builtin
    assert oc([1]) == 42 and len(calls) == 2
    assert calls[-1][0][2] == "id" and calls[-1][0][3] is len
    del ns["len"]
    assert oc([1]) == 1 and len(calls) == 2             # the first entry again


# ---- dead guarded objects ----------------------------------------------------------------

def test_dead_guarded_object_never_hits_a_new_object_at_its_address():
    def f(a):
        return a

    class Obj:
        pass
    calls = []

    def answer(code, f_locals, f_globals, f_builtins, func, failures):
        calls.append(failures)
        # the payload keeps only the id, not the object
        return (code, [(ID_MATCH, (LOCAL, 0), f_locals["a"])], id(f_locals["a"]))
    oc = C.OptimizedCallable(f, answer, C.MODE_COMPILE)     # keeps no f_locals
    o = Obj()
    addr = id(o)
    oc(o)
    oc(o)
    assert len(calls) == 1 and C.cache_entries(f.__code__) == [addr]
    del o
    gc.collect()
    assert C.cache_entries(f.__code__) == []            # dead entries are not listed
    keep = []
    for _ in range(100000):                             # reuse the address
        n = Obj()
        if id(n) == addr:
            break
        keep.append(n)
    else:
        pytest.skip("allocator did not reuse the address")
    oc(n)
    assert len(calls) == 2 and calls[-1] == []          # a miss, no stale hit
    assert C.cache_entries(f.__code__) == [addr]


def test_objects_without_weakrefs_stay_strong():
    def f(a):
        return a
    calls = []
    key = (1, 2)                                        # tuples have no weakrefs

    def answer(code, f_locals, f_globals, f_builtins, func, failures):
        calls.append(failures)
        return (code, [(ID_MATCH, (LOCAL, 0), f_locals["a"])], 0)
    oc = C.OptimizedCallable(f, Recorder(answer), C.MODE_COMPILE)
    oc(key)
    oc(key)
    assert len(calls) == 1


# ---- nn.Module attributes in C ------------------------------------------------------

def test_module_attributes_read_without_python():
    lin = torch.nn.Linear(2, 3)
    model = torch.nn.Sequential(lin)
    model.lin = lin
    w = lin.weight
    guards = [(ID_MATCH, (ATTR, (ATTR, (LOCAL, 0), "lin"), "weight"), w),
              (TENSOR_MATCH, (ATTR, (ATTR, (LOCAL, 0), "lin"), "bias"),
               *tensor_expected(lin.bias, False)),
              (EQUALS_MATCH, (ATTR, (LOCAL, 0), "training"), True)]
    tree = C._tree_new([(guards, "m")])
    calls = []

    def tracer(frame, event, arg):
        calls.append(frame.f_code.co_name)
    sys.setprofile(tracer)
    try:
        got = C._tree_lookup(tree, {"self": model}, {}, BUILTINS, None)
    finally:
        sys.setprofile(None)
    assert got == (0, None)
    assert "__getattr__" not in calls, calls
    model.eval()
    assert C._tree_lookup(tree, {"self": model}, {}, BUILTINS, None)[0] == -1
    model.train()
    del model._modules["lin"]
    hit, failures = C._tree_lookup(tree, {"self": model}, {}, BUILTINS, None)
    assert hit == -1 and failures[0][4] is C.MISSING


# ---- many entries through the hook ---------------------------------------------------

def add(a, b):
    return a + b


@pytest.mark.parametrize("n", [1, 8, 64, 256])
def test_round_robin_entries_hit(n):
    def answer(code, f_locals, f_globals, f_builtins, func, failures):
        a = f_locals["a"]
        return (code, [(TENSOR_MATCH, (LOCAL, 0), *tensor_expected(a, False)),
                       (TENSOR_MATCH, (LOCAL, 1), *tensor_expected(f_locals["b"], False))],
                a.shape[0])
    cb = Recorder(answer)
    oc = C.OptimizedCallable(add, cb, C.MODE_COMPILE)
    xs = [torch.ones(i + 1) for i in range(n)]
    for x in xs:
        oc(x, x)
    assert len(cb.calls) == n
    for _ in range(3):
        for x in xs:
            assert torch.equal(oc(x, x), 2 * x)
    assert len(cb.calls) == n                           # every call hit
    stats = C.tree_stats(add.__code__)
    assert stats["entries"] == n and stats["misses"] == 0 or stats["lookups"] >= 3 * n
    assert stats["last_visited"] <= 4, stats
    info = C.tree_info(add.__code__)
    assert info["entries"] == list(range(n, 0, -1))


def test_storage_match_guard_and_report():
    """STORAGE_MATCH (kind 11): two tensors view one storage, or not; read
    in C (tmeta) for plain tensors, through Python for the ones tmeta
    refuses; no storage to compare (a sparse tensor, a non-tensor, a
    missing source) fails either way.  The tree and guard_ref agree."""
    S = guard_ref.STORAGE_MATCH
    a, b = torch.zeros(4, 4), torch.zeros(4, 4)
    share = [(S, (LOCAL, 1), (LOCAL, 0), True)]
    differ = [(S, (LOCAL, 1), (LOCAL, 0), False)]
    cases = [({"x": a, "y": b}, False), ({"x": a, "y": a[0]}, True), ({"x": a, "y": a}, True),
             ({"x": a, "y": a.view(16)}, True), ({"x": a, "y": a.t()[1:]}, True),
             ({"x": a, "y": 3}, None), ({"x": a}, None), ({"x": a.to_sparse(), "y": a}, None)]
    for f_locals, same in cases:
        for guards in (share, differ):
            want = -1 if same is not None and same == guards[0][3] else 0
            assert C.eval_guards(guards, f_locals, {}, BUILTINS, None) == want, (f_locals, guards)
            tree = C._tree_lookup(C._tree_new([(guards, "e")]), f_locals, {}, BUILTINS, None)
            ref = guard_ref.lookup([(guards, "e")], f_locals, {}, BUILTINS, None)
            assert repr(tree) == repr(ref)          # the two <missing> markers print alike
    hit, failures = C._tree_lookup(C._tree_new([(differ, "e")]), {"x": a, "y": a[1]}, {}, BUILTINS, None)
    assert hit == -1 and failures == [("e", 0, "same_storage", False, True)]
    # both relations in one tree: a switch on same_storage picks the entry
    tree = C._tree_new([(differ, "distinct"), (share, "shared")])
    assert C._tree_lookup(tree, {"x": a, "y": a[2]}, {}, BUILTINS, None)[0] == 1
    assert C._tree_lookup(tree, {"x": a, "y": b}, {}, BUILTINS, None)[0] == 0
    with pytest.raises(ValueError, match="another value source"):
        C.eval_guards([(S, (LOCAL, 0), (LOCAL, 0), True)], {"x": a}, {}, BUILTINS, None)
