"""dynamo.bytecode: decode/assemble round trips, hand-built code, liveness."""
import ast
import collections
import dataclasses
import dis
import importlib
import inspect
import json
import sys
import traceback
import types
import typing

import pytest

from dynamo.bytecode import (COND_JUMP, FOR_ITER_EXIT, PY312, line_start, ExnTabEntry, RawExnEntry, assemble,
                             binary_op_arg, code_with_new_body,
                             create_call, create_call_function, create_call_kw,
                             create_load_method,
                             create_instruction, create_jump,
                             create_load_const, create_load_global,
                             create_rot_n, decode, drop_unreachable,
                             exntable_decode, exntable_encode, live_locals,
                             max_stack_depth, prologue, reachable,
                             stack_depths, strip_prologue)


ROUND_TRIP_MODULES = ["inspect", "json", "json.decoder", "json.encoder",
                      "collections", "dataclasses", "typing", "ast",
                      "functools", "enum", "re._parser", "asyncio.tasks"]


def all_codes(code):
    yield code
    for k in code.co_consts:
        if isinstance(k, types.CodeType):
            yield from all_codes(k)


def module_codes(name):
    mod = importlib.import_module(name)
    return list(all_codes(mod.__loader__.get_code(name)))


def listing(code):
    """What dis shows, with positions (cache contents are not listed)."""
    return [(i.opname, i.arg, i.argrepr, i.offset, i.starts_line,
             i.is_jump_target, i.positions)
            for i in dis.get_instructions(code)]


def clone_function(fn, code):
    new = types.FunctionType(code, fn.__globals__, fn.__name__,
                             fn.__defaults__, fn.__closure__)
    new.__kwdefaults__ = fn.__kwdefaults__
    return new


def tmpl():
    """Code template for hand-built code: replace() sets the signature."""


def build(insts, argnames=(), **replace):
    """Assemble `insts` (prologue added) into a plain function."""
    code = assemble(prologue(argnames, (), (), firstlineno=100) + insts,
                    tmpl.__code__, co_argcount=len(argnames),
                    co_varnames=tuple(argnames), co_flags=0x3,
                    co_firstlineno=100, co_name="built", co_qualname="built",
                    co_posonlyargcount=0, co_kwonlyargcount=0,
                    co_cellvars=(), co_freevars=(), **replace)
    return types.FunctionType(code, globals())


I = create_instruction


# ------------------------------------------------------------ round trip

@pytest.mark.parametrize("modname", ROUND_TRIP_MODULES)
def test_round_trip_stdlib_modules(modname):
    codes = module_codes(modname)
    assert len(codes) >= 5
    for code in codes:
        new = assemble(decode(code), code)
        assert listing(new) == listing(code), code.co_qualname
        assert dis.Bytecode(new).dis() == dis.Bytecode(code).dis()
        # stronger than dis: the encodings are byte-identical
        assert new.co_code == code.co_code
        assert new.co_exceptiontable == code.co_exceptiontable
        assert new.co_linetable == code.co_linetable
        assert new.co_stacksize == code.co_stacksize, code.co_qualname
        assert new.co_consts == code.co_consts
        assert new.co_names == code.co_names
        assert new.co_varnames == code.co_varnames


def _stdlib_sources():
    import os
    import sysconfig
    root = sysconfig.get_paths()["stdlib"]
    skip = {"site-packages", "test", "tests", "idle_test", "__pycache__", "lib2to3"}
    for here, dirs, files in os.walk(root):
        dirs[:] = sorted(d for d in dirs if d not in skip)
        for fn in sorted(files):
            if fn.endswith(".py"):
                yield os.path.join(here, fn)
    pkg = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    for here, dirs, files in os.walk(os.path.join(pkg, "dynamo")):
        dirs[:] = sorted(d for d in dirs if d != "__pycache__")
        for fn in sorted(files):
            if fn.endswith(".py"):
                yield os.path.join(here, fn)


def test_round_trip_every_installed_module_byte_for_byte():
    """Every code object of the standard library and of dynamo, compiled by
    this interpreter, decodes and re-assembles to identical bytes (code,
    exception table, line table, stack size) on this CPython version."""
    files = codes = 0
    bad = []
    for path in _stdlib_sources():
        with open(path, "rb") as f:
            src = f.read()
        try:
            top = compile(src, path, "exec", dont_inherit=True)
        except (SyntaxError, ValueError):
            continue                      # e.g. a template file that is not Python
        files += 1
        for code in all_codes(top):
            codes += 1
            new = assemble(decode(code), code)
            for field in ("co_code", "co_exceptiontable", "co_linetable", "co_stacksize",
                          "co_consts", "co_names", "co_varnames"):
                if getattr(new, field) != getattr(code, field):
                    bad.append(f"{path}:{code.co_qualname}: {field}")
    assert files > 500 and codes > 15000, (files, codes)
    assert not bad, bad[:10]


def test_312_opargs_with_flag_bits_round_trip():
    """LOAD_ATTR's method bit, LOAD_SUPER_ATTR's two bits and COMPARE_OP's
    mask bits (3.12) are kept, and new ones are computed as the compiler
    would."""
    class A:
        def m(self):
            return 1

    class B(A):
        def m(self, other=None):
            return super().m() + (self.m2() if other is not None and other < 3 else 0)

        def m2(self):
            return 10

    code = B.m.__code__
    insts = decode(code)
    assert assemble(insts, code).co_code == code.co_code
    b = B()
    assert clone_function(B.m, assemble(insts, code))(b) == 1
    # the zero-argument super() needs the __class__ cell of the original
    assert clone_function(B.m, assemble(insts, code))(b, 2) == 11
    cmp = next(i for i in insts if i.opname == "COMPARE_OP")
    fresh = I("COMPARE_OP", argval="<")
    # 3.13: bit 16 (result to bool) is set where a jump tests the result;
    # a fresh compare yields the plain value (a tensor's `<` stays a tensor)
    to_bool = 16 if sys.version_info >= (3, 13) else 0
    assert fresh.argval == "<" and fresh.arg == cmp.arg & ~to_bool
    assert cmp.arg & to_bool == to_bool
    if PY312:
        meth = next(i for i in insts if i.opname == "LOAD_ATTR" and i.argval == "m2")
        assert meth.arg & 1 and create_load_method("m2").opname == "LOAD_ATTR"
        sup = next(i for i in insts if i.opname == "LOAD_SUPER_ATTR")
        assert sup.arg & 3 == 1              # method form, zero-argument super()
        assert [i.opname for i in create_call(2)] == ["CALL"]
    else:
        assert create_load_method("m2").opname == "LOAD_METHOD"
        assert [i.opname for i in create_call(2)] == ["PRECALL", "CALL"]
    # a method call built from the helpers runs on every version
    fn = build([I("LOAD_FAST", argval="o"), create_load_method("m2"), *create_call(0),
                I("RETURN_VALUE")], ("o",))
    assert fn(b) == 10


def test_round_trip_functions_still_run():
    @dataclasses.dataclass
    class P:
        x: int
        y: list

    cases = [
        (json.dumps, ({"a": [1, 2.5, None]},), {"sort_keys": True}),
        (json.loads, ('{"a": [1, 2.5, null]}',), {}),
        (ast.literal_eval, ("[1, (2, 'x'), {3: 4}]",), {}),
        (dataclasses.asdict, (P(1, [P(2, [])]),), {}),
        (inspect.getfullargspec, (json.dumps,), {}),
        (collections.namedtuple, ("Pt", "x y"), {"defaults": (0,)}),
        (typing.get_type_hints, (clone_function,), {}),
    ]
    for fn, args, kwargs in cases:
        fresh = clone_function(fn, assemble(decode(fn.__code__), fn.__code__))
        got, want = fresh(*args, **kwargs), fn(*args, **kwargs)
        if fn is collections.namedtuple:
            got, want = got(1)._asdict(), want(1)._asdict()
        assert got == want, fn.__name__


def test_decode_resolves_targets_and_handlers():
    def f(x):
        try:
            return 1 / x
        except ZeroDivisionError:
            return None

    insts = decode(f.__code__)
    assert not [i for i in insts if i.opname in ("CACHE", "EXTENDED_ARG")]
    for inst in insts:
        if inst.target is not None:
            assert inst.target in insts and inst.target.is_jump_target
    covered = [i for i in insts if i.exn_tab_entry is not None]
    assert covered
    entries = {id(i.exn_tab_entry): i.exn_tab_entry for i in covered}
    for e in entries.values():
        assert e.target in insts and e.start in insts and e.end in insts
    glob = [i for i in insts if i.opname == "LOAD_GLOBAL"]
    assert glob[0].argval == "ZeroDivisionError" and glob[0].arg & 1 == 0


def test_load_global_push_null_bit_preserved():
    def f():
        return len("ab")

    insts = decode(f.__code__)
    (glob,) = [i for i in insts if i.opname == "LOAD_GLOBAL"]
    assert glob.arg & 1 == 1
    assert clone_function(f, assemble(insts, f.__code__))() == 2


# ------------------------------------------------------------ hand-built

def test_hand_built_loop_and_direction_switch():
    end = I("LOAD_FAST", argval="total")
    body_start = I("STORE_FAST", argval="i")
    end_for = [I(op) for op in FOR_ITER_EXIT]     # 3.12+: FOR_ITER's target, skipped at run time
    loop = I("FOR_ITER", target=(end_for or [end])[0])
    insts = [
        create_load_const(0), I("STORE_FAST", argval="total"),
        create_load_global("range", push_null=True), I("LOAD_FAST", argval="n"),
        *create_call_function(1, False), I("GET_ITER"),
        loop, body_start,
        I("LOAD_FAST", argval="total"), I("LOAD_FAST", argval="i"),
        I("BINARY_OP", argval="+="), I("STORE_FAST", argval="total"),
        # a "forward" jump that must go backward: switched to JUMP_BACKWARD
        create_jump("JUMP_FORWARD", loop),
        *end_for, end, I("RETURN_VALUE"),
    ]
    fn = build(insts, ("n",))
    assert fn(10) == 45
    ops = [i.opname for i in dis.get_instructions(fn)]
    assert "JUMP_BACKWARD" in ops and "JUMP_FORWARD" not in ops
    assert fn.__code__.co_varnames == ("n", "total", "i")
    assert fn.__code__.co_nlocals == 3
    assert fn.__code__.co_stacksize == max_stack_depth(insts) == 3


def test_hand_built_try_except():
    # try: return 1 / x  except ZeroDivisionError: return "caught"
    handler = I("PUSH_EXC_INFO")
    cleanup = I("COPY", arg=3)
    reraise = I("RERAISE", arg=0)
    body = [I("NOP"), create_load_const(1), I("LOAD_FAST", argval="x"),
            I("BINARY_OP", argval="/"), I("RETURN_VALUE")]
    outer = ExnTabEntry(body[0], body[-1], handler, depth=0, lasti=False)
    for inst in body:
        inst.exn_tab_entry = outer
    check = [handler, create_load_global("ZeroDivisionError"),
             I("CHECK_EXC_MATCH"),
             create_jump(COND_JUMP["FALSE"], reraise),
             I("POP_TOP"), I("POP_EXCEPT"), create_load_const("caught"),
             I("RETURN_VALUE"), reraise]
    inner = ExnTabEntry(handler, reraise, cleanup, depth=1, lasti=True)
    for inst in check:
        inst.exn_tab_entry = inner
    tail = [cleanup, I("POP_EXCEPT"), I("RERAISE", arg=1)]
    fn = build(body + check + tail, ("x",))
    assert fn(4) == 0.25
    assert fn(0) == "caught"
    with pytest.raises(TypeError):
        fn("s")
    rows = exntable_decode(fn.__code__.co_exceptiontable)
    assert [(r.depth, r.lasti) for r in rows] == [(0, False), (1, True)]
    # handler: depth 1 + lasti + exception, then COPY
    assert fn.__code__.co_stacksize == 4
    assert "ExceptionTable" in dis.Bytecode(fn).dis()


def test_with_statement_with_inserted_code():
    class CM:
        log = []

        def __enter__(self):
            self.log.append("enter")
            return 7

        def __exit__(self, *exc):
            self.log.append(("exit", exc[0]))
            return exc[0] is KeyError     # swallow KeyError only

    def f(cm, fail):
        with cm as v:
            if fail == 1:
                raise KeyError
            if fail == 2:
                raise ValueError
            out = v * 2
        return "swallowed" if fail else out

    insts = decode(f.__code__)
    # pad every instruction with NOPs inside the protected ranges: offsets,
    # jump args and exception rows all move
    padded = []
    for inst in insts:
        if inst.opname not in ("RESUME", "MAKE_CELL", "COPY_FREE_VARS"):
            nop = I("NOP")
            nop.exn_tab_entry = inst.exn_tab_entry
            nop.positions = inst.positions
            padded.append(nop)
        padded.append(inst)
    fn = clone_function(f, assemble(padded, f.__code__))
    assert fn(CM(), 0) == 14
    assert fn(CM(), 1) == "swallowed"
    with pytest.raises(ValueError):
        fn(CM(), 2)
    assert CM.log == ["enter", ("exit", None), "enter", ("exit", KeyError),
                      "enter", ("exit", ValueError)]
    assert fn.__code__.co_code != f.__code__.co_code


def test_closures_round_trip_and_rebuild():
    def outer(a):
        b = a + 1

        def inner(c):
            return a + b + c
        return inner

    fn = clone_function(outer, assemble(decode(outer.__code__), outer.__code__))
    inner = fn(1)
    assert inner(10) == 13
    inner2 = clone_function(inner, assemble(decode(inner.__code__),
                                            inner.__code__))
    assert inner2(100) == 103
    # a new local added before the cells shifts every deref index
    insts = decode(outer.__code__)
    i = next(k for k, x in enumerate(insts) if x.opname == "RESUME") + 1
    insts[i:i] = [create_load_const(5), I("STORE_FAST", argval="extra")]
    code = assemble(insts, outer.__code__)
    assert code.co_varnames[-1] == "extra"
    assert clone_function(outer, code)(1)(10) == 13


def test_many_consts_and_long_jumps_need_extended_arg():
    n = 300
    skip_to = create_load_const("end")
    after = I("LOAD_FAST", argval="last")
    top = I("LOAD_FAST", argval="x")
    body = []
    for k in range(n):
        body += [create_load_const(f"c{k}"), I("STORE_FAST", argval="last")]
    insts = [
        create_load_const(0), I("STORE_FAST", argval="count"),
        top, create_jump(COND_JUMP["FALSE"], skip_to),
        *body,
        I("LOAD_FAST", argval="count"), create_load_const(1),
        I("BINARY_OP", argval="+"), I("STORE_FAST", argval="count"),
        I("LOAD_FAST", argval="count"), create_load_const(3),
        I("COMPARE_OP", argval="<"),
        # long backward jump, written with the "wrong" forward opcode
        # (3.12 has no backward conditional jump: skip over a JUMP_BACKWARD)
        *([create_jump(COND_JUMP["FALSE"], after), create_jump("JUMP_FORWARD", top)] if PY312
          else [create_jump(COND_JUMP["TRUE"], top)]),
        after, I("LOAD_FAST", argval="count"),
        I("BUILD_TUPLE", arg=2), I("RETURN_VALUE"),
        skip_to, I("RETURN_VALUE"),
    ]
    fn = build(insts, ("x",))
    assert len(fn.__code__.co_consts) > 256
    assert fn(True) == (f"c{n - 1}", 3)
    assert fn(False) == "end"
    ops = [i.opname for i in dis.get_instructions(fn)]
    assert ops.count("EXTENDED_ARG") > 40
    assert ("JUMP_BACKWARD" if PY312 else "POP_JUMP_BACKWARD_IF_TRUE") in ops
    text = dis.Bytecode(fn).dis()
    assert "EXTENDED_ARG" in text and "'c299'" in text
    # and what we produced decodes and re-assembles to the same bytes
    again = assemble(decode(fn.__code__), fn.__code__)
    assert again.co_code == fn.__code__.co_code


def test_const_table_distinguishes_equal_values():
    values = [1, 1.0, True, 0.0, -0.0, (1,), (1.0,), (True,), None, "1"]
    insts = []
    for v in values:
        insts.append(create_load_const(v))
    insts += [I("BUILD_TUPLE", arg=len(values)), I("RETURN_VALUE")]
    got = build(insts)()
    assert [(type(v), repr(v)) for v in got] == \
        [(type(v), repr(v)) for v in values]
    lst = [1, 2]
    fn = build([create_load_const(lst), create_load_const([1, 2]),
                I("BUILD_TUPLE", arg=2), I("RETURN_VALUE")])
    a, b = fn()
    assert a is lst and b is not lst and b == lst


def test_kw_names_and_rot_n():
    def target(a, b=0, *, c=0):
        return (a, b, c)

    insts = [create_load_global("target", push_null=True),
             create_load_const(1), create_load_const(2), create_load_const(3),
             *create_call_kw(3, ("b", "c")), I("RETURN_VALUE")]
    g = {"target": target}
    code = assemble(prologue((), (), ()) + insts, tmpl.__code__,
                    co_argcount=0, co_varnames=())
    assert types.FunctionType(code, g)() == (1, 2, 3)
    # [callable, arg] with NULL pushed afterwards and rotated under it
    insts = [create_load_global("target"), create_load_const(9),
             *create_call_function(1, push_null=True), I("RETURN_VALUE")]
    code = assemble(prologue((), (), ()) + insts, tmpl.__code__,
                    co_argcount=0, co_varnames=())
    assert types.FunctionType(code, g)() == (9, 0, 0)
    assert [i.arg for i in create_rot_n(3)] == [3, 2]
    assert binary_op_arg("+") == 0 and binary_op_arg("+=") == 13
    assert binary_op_arg("NB_MULTIPLY") == 5


def test_traceback_and_dis_line_numbers():
    insts = [create_load_const(1), I("STORE_FAST", argval="a")]
    insts[0].starts_line = 101
    raising = [I("LOAD_FAST", argval="a"), create_load_const(0),
               I("BINARY_OP", argval="/")]
    raising[0].starts_line = 105
    # codegen'd instructions without a location inherit the previous one
    insts += raising + [I("RETURN_VALUE")]
    fn = build(insts)
    with pytest.raises(ZeroDivisionError) as info:
        fn()
    frames = traceback.extract_tb(info.tb)
    assert frames[-1].name == "built" and frames[-1].lineno == 105
    starts = {line_start(i) for i in dis.get_instructions(fn) if line_start(i)}
    assert starts == {100, 101, 105}
    lines = [i.positions.lineno for i in dis.get_instructions(fn)]
    assert lines[-1] == 105


def test_columns_survive_and_none_means_no_location():
    insts = [create_load_const(None), I("RETURN_VALUE")]
    insts[0].positions = dis.Positions(3000, 3002, 4, 300)  # long form
    insts[1].positions = dis.Positions(None, None, None, None)
    fn = build(insts)
    pos = [i.positions for i in dis.get_instructions(fn)]
    assert pos[-2] == dis.Positions(3000, 3002, 4, 300)
    assert pos[-1] == dis.Positions(None, None, None, None)


# ------------------------------------------------------------ helpers

def test_prologue_matches_compiler():
    def outer():
        y = 2

        def gen(a):
            b = a
            yield a + y

            def h():
                return b
        return gen

    gen = outer()
    code = gen.__code__
    mine = prologue(code.co_varnames, code.co_cellvars, code.co_freevars,
                    generator=True)
    theirs = decode(code)[:len(mine)]
    assert [(i.opname, i.argval) for i in mine] == \
        [(i.opname, i.argval) for i in theirs]
    body = strip_prologue(decode(code))
    assert body[0].opname == "LOAD_FAST"
    rebuilt = clone_function(gen, assemble(mine + body, code))
    assert list(rebuilt(5)) == [7]


def test_code_with_new_body_resume_function():
    def f(x, *rest, **kw):
        """doc"""
        y = x * 2
        z = y + 1      # resume here with `y` computed elsewhere
        return z, x

    insts = decode(f.__code__)
    at = next(i for i, inst in enumerate(insts)
              if inst.opname == "LOAD_FAST" and inst.argval == "y")
    assert live_locals(insts, at) == {"x", "y"}
    # resume with one stack value (y) and live local x
    body = [I("LOAD_FAST", argval="___stack0"),
            create_jump("JUMP_FORWARD", insts[at + 1])] + insts[at + 1:]
    code = code_with_new_body(f.__code__, body,
                              argnames=["___stack0", "x"],
                              name="__resume_at_10_1")
    assert code.co_argcount == 2 and code.co_varnames[:2] == ("___stack0", "x")
    assert not code.co_flags & (0x04 | 0x08)
    assert code.co_qualname == "__resume_at_10_1"
    fn = types.FunctionType(code, f.__globals__)
    assert fn.__doc__ is None
    assert fn(20, 3) == (21, 3)
    assert "__resume_at_10_1" in repr(code)


def test_resume_inside_loop_with_whole_body():
    """The recommended resume pattern: prefix + the whole original body, so
    backward jumps and handlers stay in the list."""
    def f(n):
        total = 0
        for i in range(n):
            total += i
        return total

    insts = strip_prologue(decode(f.__code__))
    at = next(k for k, x in enumerate(insts)           # 3.13: one LOAD_FAST_LOAD_FAST
              if (x.opname == "LOAD_FAST" and x.argval == "total" and insts[k + 1].argval == "i")
              or (x.opname == "LOAD_FAST_LOAD_FAST" and x.argval == ("total", "i")))
    assert stack_depths(insts)[at] == 1                    # the iterator
    assert live_locals(insts, at) == {"total", "i"}
    prefix = [I("LOAD_FAST", argval="___stack0"),
              create_jump("JUMP_FORWARD", insts[at])]
    for body in (prefix + insts, drop_unreachable(prefix + insts)):
        code = code_with_new_body(f.__code__, body,
                                  argnames=["___stack0", "total", "i"],
                                  name="__resume_at_30_2")
        fn = types.FunctionType(code, f.__globals__)
        # f(5) stopped after i=1: total=0+1, i=2 next to add, 3 and 4 left
        assert fn(iter(range(3, 5)), 1, 2) == f(5)
    assert len(drop_unreachable(prefix + insts)) < len(prefix + insts)


def test_code_with_new_body_keeps_cells_and_free_vars():
    def outer():
        k = 10

        def f(a):
            b = a + k

            def g():
                return b
            return g() + 1
        return f

    f = outer()
    insts = strip_prologue(decode(f.__code__))
    code = code_with_new_body(f.__code__, insts, argnames=["a"])
    fn = types.FunctionType(code, f.__globals__, "f", None, f.__closure__)
    assert fn(1) == 12
    assert code.co_cellvars == ("b",) and code.co_freevars == ("k",)


# ------------------------------------------------------------ analysis

def test_live_locals_examples():
    def f(a, b, c):
        d = a + 1
        if b:
            e = d
        else:
            e = c
        del a
        return e

    insts = decode(f.__code__)
    first = next(i for i, x in enumerate(insts) if x.opname == "LOAD_FAST")
    assert live_locals(insts, first) == {"a", "b", "c"}
    store_d = next(i for i, x in enumerate(insts)
                   if x.opname == "STORE_FAST" and x.argval == "d")
    assert live_locals(insts, store_d + 1) == {"a", "b", "c", "d"}
    ret = next(i for i, x in enumerate(insts) if x.opname == "RETURN_VALUE")
    assert live_locals(insts, ret - 1) == {"e"}

    def loop(n):
        total = 0
        for i in range(n):
            total += i
        return total

    insts = decode(loop.__code__)
    (fi,) = [i for i, x in enumerate(insts) if x.opname == "FOR_ITER"]
    assert live_locals(insts, fi) == {"total"}

    def handler(x):
        y = 1
        try:
            x = 1 / x
        except ZeroDivisionError:
            return y
        return x

    insts = decode(handler.__code__)
    div = next(i for i, x in enumerate(insts) if x.opname == "BINARY_OP")
    assert live_locals(insts, div) == {"y"}    # x read already; y via except


def test_live_locals_cells_opt_in():
    def f(a):
        b = a

        def g():
            return b
        return g

    insts = decode(f.__code__)
    i = next(i for i, x in enumerate(insts) if x.opname == "LOAD_CLOSURE")
    assert live_locals(insts, i) == set()
    assert live_locals(insts, i, include_cells=True) == {"b"}


def test_stack_depths_and_reachability():
    def f(x):
        return [x, x + 1]

    insts = decode(f.__code__)
    depths = stack_depths(insts)
    build_list = next(i for i, x in enumerate(insts)
                      if x.opname == "BUILD_LIST")
    assert depths[build_list] == 2
    dead = I("NOP")
    insts2 = insts + [dead]
    assert len(insts2) - 1 not in reachable(insts2)
    assert reachable(insts) == set(range(len(insts)))


def test_malformed_input_errors():
    with pytest.raises(ValueError, match="needs the name"):
        I("LOAD_FAST", arg=0)
    with pytest.raises(ValueError, match="unknown opcode"):
        I("NOT_AN_OP")
    with pytest.raises(ValueError, match="needs a target"):
        I("JUMP_FORWARD")
    top = I("NOP")
    with pytest.raises(ValueError, match="cannot jump backward"):
        build([top, create_load_const(()), I("GET_ITER"),
               I("FOR_ITER", target=top), I("RETURN_VALUE")])
    stray = I("NOP")
    with pytest.raises(ValueError, match="not in the list"):
        build([create_jump("JUMP_FORWARD", stray)])
    with pytest.raises(ValueError, match="stack underflow"):
        build([I("POP_TOP"), create_load_const(None), I("RETURN_VALUE")])
    with pytest.raises(ValueError, match="not a cell or free var"):
        build([I("LOAD_DEREF", argval="nope"), I("RETURN_VALUE")])


def test_exntable_codec_round_trip():
    rows = [RawExnEntry(0, 10, 100, 0, False),
            RawExnEntry(10, 5000, 20000, 3, True),
            RawExnEntry(6000, 6002, 2, 70, False)]
    assert exntable_decode(exntable_encode(rows)) == rows
    with pytest.raises(ValueError):
        exntable_encode([RawExnEntry(4, 10, 0, 0, False),
                         RawExnEntry(8, 12, 0, 0, False)])



@pytest.mark.skipif(sys.version_info < (3, 13), reason="3.13 opcodes")
def test_313_paired_locals_closures_call_kw_and_function_attributes():
    """3.13: STORE_FAST_LOAD_FAST / STORE_FAST_STORE_FAST write and read two
    locals (liveness sees both halves, in order), the cell pushed for a
    closure is a LOAD_FAST that decodes as LOAD_CLOSURE, keyword calls are
    CALL_KW with the names pushed, MAKE_FUNCTION's flags are
    SET_FUNCTION_ATTRIBUTEs; each round-trips byte for byte."""
    from dynamo.bytecode import create_make_function

    def f(a, b):
        a, b = b, a                         # STORE_FAST_STORE_FAST
        c = a; d = c                        # noqa: E702  STORE_FAST_LOAD_FAST
        e = b

        def g(k=1):
            return e + k
        return g(k=a + d), f"{c!r:>{d}}"

    code = f.__code__
    insts = decode(code)
    ops = [i.opname for i in insts]
    for op in ("STORE_FAST_STORE_FAST", "STORE_FAST_LOAD_FAST", "LOAD_CLOSURE", "CALL_KW",
               "SET_FUNCTION_ATTRIBUTE", "CONVERT_VALUE", "FORMAT_WITH_SPEC"):
        assert op in ops, op
    assert "LOAD_CLOSURE" not in [i.opname for i in dis.get_instructions(code)]
    assert assemble(insts, code).co_code == code.co_code
    assert clone_function(f, assemble(insts, code))(3, 4) == f(3, 4)
    sfsf = ops.index("STORE_FAST_STORE_FAST")
    assert "a" not in live_locals(insts, sfsf)         # both written, a read later
    sfl = ops.index("STORE_FAST_LOAD_FAST")
    assert insts[sfl].argval == ("c", "c")
    assert "c" not in live_locals(insts, sfl)          # written before it is read

    def target(x, *, y):
        return x - y
    body = [create_load_global("target", push_null=True), create_load_const(10),
            create_load_const(3), *create_call_kw(2, ("y",)), I("RETURN_VALUE")]
    fn = build(body, ())
    assert types.FunctionType(fn.__code__, {"target": target})() == 7
    mk = create_make_function(0x09)
    assert [i.opname for i in mk] == ["MAKE_FUNCTION", "SET_FUNCTION_ATTRIBUTE",
                                      "SET_FUNCTION_ATTRIBUTE"]
    assert [i.arg for i in mk[1:]] == [8, 1]


@pytest.mark.skipif(sys.version_info < (3, 13), reason="3.13 two-local opcodes")
def test_313_paired_locals_beyond_slot_15_are_split():
    """A resume code numbers the locals anew: a LOAD_FAST_LOAD_FAST of two
    locals that land above slot 15 no longer fits its 4-bit halves and is
    written as two LOAD_FASTs (fuzz seed 40 crashed CPython when the index
    overflowed into the other half); a jump to it goes to the first."""
    def f(a, b):
        c = a + b
        while c > 100:
            c = a - b
            a = b
        return c

    body = strip_prologue(decode(f.__code__))
    pairs = [i for i in body if i.opname == "LOAD_FAST_LOAD_FAST"]
    assert pairs and pairs[0].argval == ("a", "b")
    pad = [f"p{i}" for i in range(16)]
    code = code_with_new_body(f.__code__, body, argnames=pad + ["a", "b"])
    ops = [(i.opname, i.argval) for i in dis.get_instructions(code)]
    assert ("LOAD_FAST_LOAD_FAST", ("a", "b")) not in ops
    assert ("LOAD_FAST", "a") in ops and ("LOAD_FAST", "b") in ops
    fn = types.FunctionType(code, {})
    assert fn(*range(16), 3, 4) == 7 and fn(*range(16), 300, 4) == f(300, 4) == 0
    # round trip where everything fits: the pair stays one instruction
    assert assemble(decode(f.__code__), f.__code__).co_code == f.__code__.co_code


@pytest.mark.skipif(sys.version_info < (3, 13), reason="3.13 two-local opcodes")
def test_313_resume_offsets_map_back_across_a_split_pair():
    """resume.origin maps a resume code's instructions back to the
    original's: after a two-local instruction the assembler split, the
    instructions still map to their own originals (fuzz seed 22: a second
    break inside a resume function resumed at the wrong offset with the
    wrong stack and CPython crashed)."""
    from dynamo import resume

    def f(a, b):
        c = a + b
        d = c * 2
        return d

    insts = decode(f.__code__)
    start = next(i for i in insts if i.opname == "LOAD_FAST_LOAD_FAST")
    names = tuple(f"p{i}" for i in range(16)) + ("a", "b")
    code, _ = resume.resume_code(f.__code__, start.offset, (), names)
    new = decode(code)
    assert "LOAD_FAST_LOAD_FAST" not in [i.opname for i in new if i.argval == ("a", "b")]
    orig_by_offset = {i.offset: i for i in insts}
    after = [i for i in new if i.opname in ("BINARY_OP", "STORE_FAST", "RETURN_VALUE")
             and i.offset > new[0].offset]
    for inst in after:
        base, off = resume.origin(code, inst.offset)
        assert base is f.__code__
        assert orig_by_offset[off].opname == inst.opname, (inst, orig_by_offset[off])
    fn = types.FunctionType(code, {})
    assert fn(*range(16), 3, 4) == f(3, 4)


def test_shared_decoding_is_per_code_object_not_per_equal_code():
    """Two code objects that compare equal (same bytecode and constants,
    different files) get their own decodings: the nested function's code
    in each is its own (its co_filename), and a dead code leaves the table."""
    import gc
    import importlib
    decode_mod = importlib.import_module("dynamo.bytecode.decode")
    src = "def f(x):\n    def g(y):\n        return y + 1\n    return g(x)\n"
    ns_a, ns_b = {}, {}
    exec(compile(src, "a.py", "exec"), ns_a)
    exec(compile(src, "b.py", "exec"), ns_b)
    code_a, code_b = ns_a["f"].__code__, ns_b["f"].__code__
    assert code_a == code_b and code_a is not code_b

    def nested(code):
        return [i.argval for i in decode_mod.decode_shared(code)
                if i.opname == "LOAD_CONST" and isinstance(i.argval, type(code))][0]
    assert nested(code_a).co_filename == "a.py" and nested(code_b).co_filename == "b.py"
    assert decode_mod.decode_shared(code_a) is decode_mod.decode_shared(code_a)
    gc.collect()            # codes earlier tests left in reference cycles go first
    before = len(decode_mod._SHARED)
    del ns_a, code_a
    gc.collect()
    assert len(decode_mod._SHARED) == before - 1
