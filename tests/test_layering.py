"""The layout shows the architecture (issues 11 and 28): no #include cycle
between the C folders, no include-or-call cycle between C files outside the
listed one, no #include up a floor; no import cycle between the Python rooms of dynamo/
(its packages and top-level modules), nor between its modules outside the
cycles listed below; no import that runs up a floor.  Counted on the edges
themselves (tests/layering.py prints the picture)."""
import os
import re

import pytest

import layering


def test_c_folders_have_no_include_cycle():
    edges = layering.c_edges()
    assert layering.cycles(edges) == [], layering.picture(edges)
    # The runtime sits on the guards and on the region's layout, never on the
    # reader: the telemetry writer lives in core/, the tools read through inspect/.
    assert ("inspect", "core") not in edges
    assert not any(dst == "inspect/reader.h" for src, dst in edges.get(("core", "inspect"), []))
    assert ("core", "inspect") in edges and ("tui", "inspect") in edges


def test_extension_does_not_include_the_reader():
    """_C's sources (core/, guards/, inspect/image.c) reach no reader header."""
    edges = layering.c_edges()
    reached = {dst for (src, _), pairs in edges.items() if src in ("core", "guards")
               for _, dst in pairs}
    assert reached & {"inspect/reader.h", "inspect/value.h", "inspect/strutil.h"} == set()
    assert "inspect/layout.h" in reached


def test_cycle_finder_sees_a_cycle():
    """The checker itself: a two-folder loop is reported, a chain is not."""
    assert layering.cycles({("a", "b"): [], ("b", "a"): [], ("b", "c"): []}) == [["a", "b"]]
    assert layering.cycles({("a", "b"): [], ("b", "c"): []}) == []


def test_python_rooms_have_no_import_cycle():
    """Every import statement (function-level ones too) between the rooms of
    dynamo/ (a package, or a top-level module) goes one way: the compile
    path reads downwards, public API -> hook callback -> tracer -> fx graph
    -> guards/exc/config, and nothing below imports the API back."""
    edges = layering.py_edges()
    assert layering.cycles(edges) == [], layering.picture(edges)
    # the rooms of the compile path, in that order
    down = [("dynamo/eval_frame", "dynamo/convert_frame"), ("dynamo/convert_frame", "dynamo/tracer"),
            ("dynamo/tracer", "dynamo/output_graph"), ("dynamo/tracer", "dynamo/codegen"),
            ("dynamo/output_graph", "dynamo/guards"), ("dynamo/tracer", "dynamo/guards")]
    assert all(e in edges for e in down), layering.picture(edges)
    # output_graph.py handles fx nodes only; codegen emits instructions only
    assert not [e for e in edges if e[0] in ("dynamo/output_graph", "dynamo/codegen")
                and e[1] in ("dynamo/tracer", "dynamo/eval_frame", "dynamo/convert_frame")]
    # nothing below the API imports it back (disable() is modes.hook_off down there)
    assert not [e for e in edges if e[1] == "dynamo/eval_frame" and e[0] in
                ("dynamo/tracer", "dynamo/backends", "dynamo/output_graph", "dynamo/convert_frame")]


def test_room_checker_resolves_imports_to_modules():
    """`from . import config` is an edge to dynamo/config, not to the
    package (which would put every module in one cycle); a function-level
    import is an edge like any other."""
    edges = layering.py_edges()
    assert ("dynamo/telemetry", "dynamo/config") in edges
    assert ("dynamo/guards", "dynamo/_C") in edges
    assert ("dynamo/telemetry", "dynamo") not in edges
    assert ("dynamo/modes", "dynamo/mutation_guard") in edges     # inside a function
    modules = layering.py_module_edges()
    assert ("dynamo.modes", "dynamo.mutation_guard") in modules
    assert ("dynamo.backends", "dynamo.backends.registry") in modules   # `from .registry import ...`
    assert ("dynamo.compat.variables", "dynamo.tracer.variables") in modules  # a package's names


# ---------------------------------------------------------------- floors and file-level cycles

# The rooms of dynamo/ from the top floor down.  An import goes to a room of
# its own floor or of one below, never up (an import up a floor would tie
# what is below to what uses it).  A new module or package of dynamo/ takes
# its place here.
FLOORS = [
    ("the public API and the old import paths",
     {"dynamo", "dynamo/explain", "dynamo/explain_miss", "dynamo/guard_cost", "dynamo/export", "dynamo/viz", "dynamo/compat",
      "dynamo/variables", "dynamo/optimizations", "dynamo/bytecode_transformation",
      "dynamo/debug_utils"}),
    ("the wrappers users get: optimize, run, disable", {"dynamo/eval_frame"}),
    ("the hook's callback: whether and how a frame compiles", {"dynamo/convert_frame"}),
    ("the symbolic interpreter and its variables", {"dynamo/tracer"}),
    ("what a trace hands on: the fx graph, rewritten code, resume functions, backends, records",
     {"dynamo/output_graph", "dynamo/input_writes", "dynamo/codegen", "dynamo/resume", "dynamo/backends", "dynamo/records",
      "dynamo/telemetry", "dynamo/logs"}),
    ("the services the pipeline calls", {"dynamo/modes", "dynamo/decorators", "dynamo/skipfiles",
                                         "dynamo/distributed",
                                         "dynamo/debug", "dynamo/utils", "dynamo/testing", "dynamo/rng",
                                         "dynamo/mutation_guard", "dynamo/guards", "dynamo/bytecode",
                                         "dynamo/stance", "dynamo/dynamic_shapes", "dynamo/shape_guards",
                                         "dynamo/break_hints", "dynamo/recompiles",
                                         "dynamo/run_record"}),
    ("the base", {"dynamo/config", "dynamo/exc", "dynamo/_C"}),
]

# Import cycles between modules that are allowed, by the package that holds
# them all (a cycle is allowed when every module in it is that package or
# inside it), and why.  None: the variable kinds that make one another
# reach the modules above them through tracer/variables/kinds.py, a late
# lookup bound once by the package's __init__ (test_variables_reach_up_only_through_kinds).
ALLOWED_MODULE_CYCLES = {}


def _allowed(cycle):
    return any(all(m == pkg or m.startswith(pkg + ".") for m in cycle) for pkg in ALLOWED_MODULE_CYCLES)


def test_python_modules_have_no_import_cycle_outside_the_allowed():
    """Between the modules of dynamo/ (every import statement, function-level
    ones too) the only cycles are those of ALLOWED_MODULE_CYCLES."""
    edges = layering.py_module_edges()
    found = [c for c in layering.cycles(edges) if not _allowed(c)]
    assert found == [], "import cycles: " + "; ".join(" <-> ".join(c) for c in found)


def test_no_module_imports_its_own_package():
    """A package's __init__.py only gathers the names of its modules: it is
    its package's top floor, and no module inside imports it (that would
    be a cycle through the half-loaded package)."""
    ups = [(a, b) for (a, b) in layering.py_module_edges()
           if a.startswith(b + ".") and not _allowed([a, b])]
    assert ups == []


def _kinds_lookups():
    """{(module, line): [name, ...]} of the `from .kinds import ...`
    statements in dynamo/tracer/variables/."""
    import ast
    found = {}
    for path, module, _ in layering._py_modules():
        if not module.startswith("dynamo.tracer.variables."):
            continue
        with open(path, encoding="utf-8") as fh:
            tree = ast.parse(fh.read(), path)
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.level == 1 and node.module == "kinds":
                found[(module, node.lineno)] = [a.name for a in node.names]
    return found


def _reaches(edges, src, dst):
    """Is there a path of import edges from module src to module dst?"""
    graph = {}
    for a, b in edges:
        graph.setdefault(a, set()).add(b)
    seen, todo = {src}, [src]
    while todo:
        for b in graph.get(todo.pop(), ()):
            if b == dst:
                return True
            if b not in seen:
                seen.add(b)
                todo.append(b)
    return False


def test_variables_reach_up_only_through_kinds():
    """The variable kinds import one another downwards; a kind that makes a
    kind of a module above it reads the name from kinds.py, which imports
    nothing of dynamo and is bound once by the package's __init__.  Every
    name read from there is in kinds.LATE and bound to its module's object,
    no LATE name is unused, and each lookup is needed: the module defining
    the name imports (directly or not) the module reading it, so a plain
    import would close a cycle."""
    from dynamo.tracer import variables
    from dynamo.tracer.variables import kinds
    edges = layering.py_module_edges()
    assert [b for (a, b) in edges if a == "dynamo.tracer.variables.kinds"] == []
    home = {name: module for module, names in kinds.LATE.items() for name in names}
    assert len(home) == sum(len(names) for names in kinds.LATE.values()), "a name twice in LATE"
    for name, module in home.items():
        assert getattr(kinds, name) is getattr(getattr(variables, module), name)
    lookups = _kinds_lookups()
    used = {name for names in lookups.values() for name in names}
    assert used - set(home) == set(), "read from kinds but not in kinds.LATE"
    assert set(home) - used == set(), "in kinds.LATE but read nowhere"
    direct = [f"{module}:{line} {name} (import it from .{home[name]})"
              for (module, line), names in sorted(lookups.items()) for name in names
              if not _reaches(edges, f"dynamo.tracer.variables.{home[name]}", module)]
    assert direct == [], "late lookups with no cycle to break:\n" + "\n".join(direct)


def _imports_up(edges):
    """The room edges of `edges` that go to a floor above their own."""
    floor = {room: i for i, (_, rooms) in enumerate(FLOORS) for room in rooms}
    return [f"{a} ({FLOORS[floor[a]][0]}) -> {b} ({FLOORS[floor[b]][0]}): {why[0][0]} -> {why[0][1]}"
            for (a, b), why in sorted(edges.items()) if floor[b] < floor[a]]


def test_python_rooms_stay_on_their_floors():
    """Every room of dynamo/ is on a floor of FLOORS, and every import
    between rooms goes to the same floor or one below."""
    placed = {room for _, rooms in FLOORS for room in rooms}
    rooms = {layering._py_room_of(m) for _, m, _ in layering._py_modules()} | {"dynamo/_C"}
    assert rooms - placed == set(), "rooms without a floor: add them to FLOORS"
    assert placed - rooms == set(), "FLOORS names rooms that are gone"
    up = _imports_up(layering.py_edges())
    assert up == [], "imports up a floor:\n" + "\n".join(up)


def test_checkers_see_a_cycle_and_an_import_up():
    """The checks themselves: a loop of modules is reported (none is
    allowed), a path of imports is followed; an import of the API from
    below is up a floor, one the other way is not."""
    assert not _allowed(["dynamo.guards", "dynamo.output_graph"])
    assert not _allowed(["dynamo.tracer.variables", "dynamo.tracer.variables.base"])
    assert _reaches({("a", "b"): [], ("b", "c"): []}, "a", "c")
    assert not _reaches({("a", "b"): [], ("b", "c"): []}, "c", "a")
    edges = layering.py_module_edges()
    assert _reaches(edges, "dynamo.tracer.variables.builder", "dynamo.tracer.variables.base")
    assert ("dynamo.tracer.variables.base", "dynamo.tracer.variables.kinds") in edges
    edge = [("dynamo.guards", "dynamo.eval_frame")]
    assert len(_imports_up({("dynamo/guards", "dynamo/eval_frame"): edge})) == 1
    assert _imports_up({("dynamo/eval_frame", "dynamo/guards"): edge}) == []


def _function_level_imports_of_dynamo(path):
    """Line numbers of the import statements inside functions of the file
    at `path` that import a module of dynamo (relative or absolute)."""
    import ast
    with open(path, encoding="utf-8") as fh:
        tree = ast.parse(fh.read(), path)
    lines = []
    for fn in ast.walk(tree):
        if not isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        for node in ast.walk(fn):
            if isinstance(node, ast.ImportFrom):
                names = [node.module or ""] if not node.level else ["dynamo"]
            elif isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            else:
                continue
            if any(n == "dynamo" or n.startswith("dynamo.") for n in names):
                lines.append(node.lineno)
    return sorted(set(lines))


def test_backends_import_dynamo_at_module_level():
    """The backends' imports of dynamo's own modules stand at the top of
    their files (there is no cycle to break): a function-level import
    there is only of torch's subsystems that load slowly (Inductor, AOT
    autograd)."""
    inner = {module: lines for path, module, _ in layering._py_modules()
             if module.startswith("dynamo.backends")
             for lines in [_function_level_imports_of_dynamo(path)] if lines}
    assert inner == {}


# ---------------------------------------------------------------- C: floors and file-level cycles

# The C folders from the top floor down: an #include goes to a folder of its
# own floor or of one below, never up.  A new C folder takes its place here.
C_FLOORS = [
    ("the reader fuzz harness (reader + both tools' code)", {"readerfuzz"}),
    ("the tools", {"tui", "viz"}),
    ("the runtime: hook, caches, telemetry writer", {"core"}),
    ("the guards", {"guards"}),
    ("the floor: CPython's internals, the region's layout and its reader", {"cpython", "inspect"}),
]

# File-level cycles between C modules (a .c file with its headers) that are
# allowed, and why.
ALLOWED_C_FILE_CYCLES = {
    frozenset({"core/callable", "core/hook"}):
        "one mechanism in two files: OptimizedCallable (callable.c) sets the calling thread's "
        "mode, installs the frame hook while some thread needs it (hook_install/uninstall) and "
        "enters it (hook_vectorcall); the hook reads and swaps that mode around a compile "
        "(callable_state, callable_swap/restore).  Splitting the thread-mode state into a file of "
        "its own would still leave it installing the hook; left as is while the BACKEND_MATCH "
        "work changes callable.c",
}


def test_c_files_have_no_cycle_outside_the_allowed():
    """Between C modules (includes, and calls of a function another .c
    defines) the only cycles are those of ALLOWED_C_FILE_CYCLES."""
    edges = layering.c_file_edges()
    found = [c for c in layering.cycles(edges) if frozenset(c) not in ALLOWED_C_FILE_CYCLES]
    assert found == [], "C file cycles: " + "; ".join(" <-> ".join(c) for c in found)
    assert all(sorted(c) in layering.cycles(edges) for c in ALLOWED_C_FILE_CYCLES), \
        "an allowed cycle is gone: drop it from ALLOWED_C_FILE_CYCLES"


def test_c_file_checker_sees_includes_and_calls():
    """The file-level checker: calls count (hook.c calls the telemetry
    writer, which reads caches), cache.c tells telemetry only through the
    CacheWatcher it is given, and a loop of modules is reported."""
    edges = layering.c_file_edges()
    assert "calls telemetry_note_failure()" in edges[("core/hook", "core/telemetry")]
    assert "calls cache_get()" in edges[("core/telemetry_py", "core/cache")]
    assert ("core/cache", "core/telemetry") not in edges
    assert ("tui/util", "tui/crt") not in edges and ("tui/crt", "tui/util") in edges
    assert ("inspect/reader", "inspect/snapshot") in edges
    assert ("inspect/snapshot", "inspect/reader") not in edges
    assert "cache_set_watcher" in layering.c_definitions(layering.os.path.join(
        layering.ROOT, "core", "cache.c"))
    assert "entry_dead" not in layering.c_definitions(layering.os.path.join(
        layering.ROOT, "core", "telemetry.c"))          # static: no edge to it


def test_c_includes_stay_on_their_floors():
    """Every C folder is on a floor of C_FLOORS, and no #include runs up a
    floor (guards/ reaches CPython's internals through cpython/, not core/;
    the fuzz harness, which includes tui/ and viz/, is above them)."""
    floor = {folder: i for i, (_, folders) in enumerate(C_FLOORS) for folder in folders}
    assert set(floor) == set(layering.C_FOLDERS)
    edges = layering.c_edges()
    up = [f"{a} -> {b}: {why[0]}" for (a, b), why in sorted(edges.items()) if floor[b] < floor[a]]
    assert up == [], "includes up a floor:\n" + "\n".join(up)
    assert ("guards", "cpython") in edges and ("guards", "core") not in edges


# ---------------------------------------------------------------- one guard-IR vocabulary

def test_guard_vocabulary_is_the_c_modules():
    """Source kinds, guard kinds, tree properties and the node counter order
    are written once, in C (guards/ir.c, guards/tree*.c), and imported."""
    from dynamo import _C, guards, telemetry

    import guard_ref
    assert guards.KIND_NAMES == {v: k for k, v in _C.GUARD_KINDS.items()}
    assert len(_C.GUARD_KINDS) == 14 and len(_C.SOURCE_KINDS) == 8
    for name, number in _C.GUARD_KINDS.items():
        assert getattr(guards, name) == number == getattr(guard_ref, name)
    # SHAPE_GUARD's program steps (guards/ir.h GirShapeOp)
    assert guards.SHAPE_OPS == _C.SHAPE_OPS == guard_ref.SHAPE_OPS and len(_C.SHAPE_OPS) == 19
    for name, number in _C.SOURCE_KINDS.items():
        assert getattr(guards, "SRC_" + name) == number == getattr(guard_ref, name)
    # the lowered tuples start with the C numbers
    local = guards.LocalSource("x", 0)
    assert local.lower()[0] == _C.SOURCE_KINDS["LOCAL"]
    assert guards.AttrSource(local, "w").lower()[0] == _C.SOURCE_KINDS["ATTR"]
    assert guards.ItemSource(local, 1).lower()[0] == _C.SOURCE_KINDS["ITEM"]
    assert guards.GlobalSource("g").lower()[0] == _C.SOURCE_KINDS["GLOBAL"]
    assert guards.NoSource().lower() == (_C.SOURCE_KINDS["NONE"],)
    # every property the tree reports has its user text, and no other
    assert set(guards.PROPERTY_FORMS) == set(_C.TREE_PROPERTIES)
    assert guards.property_text("L['a']", "size()[1]") == "L['a'].size()[1]"
    # telemetry names sources by the same numbers
    code = (lambda x: x).__code__
    src = guards.StaticAttrSource(guards.LocalSource("x", 0), "f").lower()
    assert _C._telemetry_source_text(code, src) == "getattr_static(L['x'], 'f')"
    src = guards.GenericAttrSource(guards.LocalSource("x", 0), "f")
    assert _C._telemetry_source_text(code, src.lower()) == src.name() \
        == "object.__getattribute__(L['x'], 'f')"
    assert _C.TREE_NODE_COUNTERS == ("evaluations", "failures", "timed", "timed_ns")
    # the region carries as many per node (inspect/layout.h; core/telemetry.c pins it in C)
    layout = open(os.path.join(layering.ROOT, "inspect", "layout.h")).read()
    assert int(re.search(r"#define DT_TREE_NODE_COUNTERS\s+(\d+)u", layout).group(1)) \
        == len(_C.TREE_NODE_COUNTERS)
    # and per test slot, after the nodes' (issue 30: the costliest guard)
    assert _C.TREE_SLOT_COUNTERS == ("timed", "timed_ns", "max_ns")
    assert int(re.search(r"#define DT_TREE_SLOT_COUNTERS\s+(\d+)u", layout).group(1)) \
        == len(_C.TREE_SLOT_COUNTERS)


def test_tree_counter_order_is_the_c_trees():
    """tree_info names a node's counters as TREE_NODE_COUNTERS, and the
    counters blob telemetry publishes (core/teletext.c) follows that order
    (one walk counted)."""
    import struct

    import torch

    import dynamo
    from dynamo import _C

    def f(x):
        return x + 1

    opt = dynamo.optimize("eager")(f)
    opt(torch.ones(2))
    opt(torch.ones(2))
    root = _C.tree_info(f.__code__)["root"]
    assert set(_C.TREE_NODE_COUNTERS) <= set(root)
    first = struct.unpack_from("<%dQ" % len(_C.TREE_NODE_COUNTERS), _C._telemetry_tree(f.__code__)[1])
    assert first == tuple(root[c] for c in _C.TREE_NODE_COUNTERS)
    assert first[0] >= 1                    # the second call walked the root
    # the test slots' counters follow the nodes', in tree_info's slot order
    info = _C.tree_info(f.__code__)
    blob = _C._telemetry_tree(f.__code__)[1]
    per_node, per_slot = len(_C.TREE_NODE_COUNTERS), len(_C.TREE_SLOT_COUNTERS)
    words = struct.unpack("<%dQ" % (len(blob) // 8), blob)
    assert len(words) == per_node * info["nodes"] + per_slot * len(info["slots"])
    slots = words[per_node * info["nodes"]:]
    assert slots == tuple(v for s in info["slots"] for v in s[4:7])


def test_reference_evaluator_lives_in_tests():
    """The plain-Python guard evaluator is a test oracle, not part of dynamo."""
    import importlib.util

    import dynamo.guards
    assert importlib.util.find_spec("dynamo.guard_ref") is None
    for name in ("check", "evaluate", "explain_failure"):
        assert not hasattr(dynamo.guards, name)


def test_failure_text_comes_from_the_c_report_alone():
    """describe_failure reads the miss report's items; it never evaluates a
    guard in Python (a source whose fetch would run is never fetched)."""
    from dynamo import guards
    from dynamo.convert_frame import describe_failure

    fetches = []

    class CountingSource(guards.LocalSource):
        def get(self, *frame):
            fetches.append(frame)
            raise AssertionError("a guard was evaluated in Python")

    guard = guards.Guard(CountingSource("x", 0), guards.TYPE_MATCH, (int,))

    class Record:
        id = "[0/1]"
        guards = [guard]

    frame = ({"x": 1.5}, {}, {}, None)
    text = describe_failure((Record(), 0, "type", int, float), *frame)
    assert text == "type(L['x']): expected int, actual float (TYPE_MATCH of entry [0/1])"
    # the entry passes again: said so, not the last guard "explained"
    assert "passes again" in describe_failure((Record(), -1), *frame)
    assert describe_failure((Record(), 0), *frame) == \
        "L['x']: guard #0 fails (TYPE_MATCH of entry [0/1])"
    assert fetches == []


# ---------------------------------------------------------------- one record vocabulary

def _x_list(text, macro):
    """The X(...) argument tuples of `#define macro(X) ...` in a C header."""
    import re
    body = re.search(r"#define %s\(X\)((?:.*\\\n)*.*)" % macro, text).group(1)
    body = re.sub(r"/\*.*?\*/", "", body)
    return [tuple(a.strip().strip('"') for a in args.split(","))
            for args in re.findall(r"X\(([^)]*)\)", body)]


def _record_h():
    import os
    with open(os.path.join(layering.ROOT, "inspect", "record.h"), encoding="utf-8") as fh:
        return fh.read()


def test_record_vocabulary_is_record_h():
    """The compile record's schemas, statuses, resume kinds and event kinds
    are written once (inspect/record.h's X-lists); _C exports them, and
    dynamo/telemetry.py and records.py take theirs from _C."""
    from dynamo import _C, records, telemetry
    text = _record_h()
    schemas = {"RECORD": "DT_RECORD_FIELDS", "GRAPH": "DT_GRAPH_FIELDS", "NODE": "DT_NODE_FIELDS",
               "GUARD": "DT_GUARD_FIELDS", "BREAK": "DT_BREAK_FIELDS", "FRAME": "DT_FRAME_FIELDS",
               "RESUME": "DT_RESUME_FIELDS"}
    assert set(_C.RECORD_SCHEMAS) == set(schemas)
    for schema, macro in schemas.items():
        fields = _x_list(text, macro)
        assert all(upper == lower.upper() for upper, lower in fields)
        assert _C.RECORD_SCHEMAS[schema] == tuple(lower for _, lower in fields)
    assert _C.RECORD_STATUSES == dict(_x_list(text, "DT_REC_STATUSES"))
    assert _C.RESUME_KINDS == {n: t for n, t, _label in _x_list(text, "DT_RESUME_KINDS")}
    assert _C.EVENT_KINDS == {n: int(v) for n, v, _text in _x_list(text, "DT_EVENT_KINDS")}
    assert (telemetry.EV_COMPILE, telemetry.EV_BREAK, telemetry.EV_RECOMPILE, telemetry.EV_LIMIT,
            telemetry.EV_ERROR) == tuple(_C.EVENT_KINDS[k] for k in
                                         ("COMPILE", "BREAK", "RECOMPILE", "LIMIT", "ERROR"))
    assert records.STATUS is _C.RECORD_STATUSES and records.RESUME_KIND is _C.RESUME_KINDS
    assert telemetry._SCHEMAS is _C.RECORD_SCHEMAS


def test_record_fields_are_filled_by_name():
    """telemetry builds each schema by field name: a field declared in
    record.h and not filled (or filled and not declared) is an error, not a
    silent shift of every later field."""
    from dynamo import telemetry
    names = telemetry._SCHEMAS["RESUME"]
    assert telemetry._fields("RESUME", **{n: i for i, n in enumerate(names)}) == list(range(len(names)))
    with pytest.raises(KeyError, match="record.h"):
        telemetry._fields("RESUME", **{n: 0 for n in names[:-1]})
    with pytest.raises(KeyError, match="record.h"):
        telemetry._fields("RESUME", extra=1, **{n: 0 for n in names})


def test_no_hand_copied_record_vocabulary():
    """No other file spells the record's numbers or compares its texts: the
    tools switch on the reader's enums (DtRecStatus, DtResumeKind,
    DtEventKind), the reader decodes by DT_REC_* indices, and Python has no
    EV_* number or positional record list of its own."""
    import os
    import re
    texts = {}
    for folder in ("core", "inspect", "tui", "viz", "readerfuzz"):
        for name in os.listdir(os.path.join(layering.ROOT, folder)):
            if name.endswith((".c", ".h")) and name != "record.h":
                with open(os.path.join(layering.ROOT, folder, name), encoding="utf-8") as fh:
                    texts[f"{folder}/{name}"] = fh.read()
    words = [t for _, t in _x_list(_record_h(), "DT_REC_STATUSES")]
    words += [t for _, t, _ in _x_list(_record_h(), "DT_RESUME_KINDS")]
    words += [t for _, _, t in _x_list(_record_h(), "DT_EVENT_KINDS")]
    compare = re.compile(r'str(?:n)?cmp\([^;]*"(%s)"' % "|".join(words))
    assert {f: compare.findall(t) for f, t in texts.items() if compare.search(t)} == {}
    assert not re.search(r"#define\s+DT_EV_", texts["inspect/layout.h"])
    assert "dv_item(&v, 2)" not in texts["inspect/snapshot.c"]
    with open(os.path.join(layering.ROOT, "dynamo", "telemetry.py"), encoding="utf-8") as fh:
        py = fh.read()
    assert not re.search(r"^EV_\w+\s*=\s*\d", py, re.M)
    assert not re.search(r"EV_\w+(, EV_\w+)+\s*=", py)
