"""The layout shows the architecture (issue 11): no #include cycle between
the C folders and no import cycle between the Python rooms of dynamo/ (its
packages and top-level modules), counted on the edges themselves
(tests/layering.py prints the picture)."""
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
    assert ("dynamo/backends", "dynamo/modes") in edges       # inside a function


# ---------------------------------------------------------------- one guard-IR vocabulary

def test_guard_vocabulary_is_the_c_modules():
    """Source kinds, guard kinds, tree properties and the node counter order
    are written once, in C (guards/ir.c, guards/tree*.c), and imported."""
    from dynamo import _C, guards, telemetry

    import guard_ref
    assert guards.KIND_NAMES == {v: k for k, v in _C.GUARD_KINDS.items()}
    assert len(_C.GUARD_KINDS) == 13 and len(_C.SOURCE_KINDS) == 7
    for name, number in _C.GUARD_KINDS.items():
        assert getattr(guards, name) == number == getattr(guard_ref, name)
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
    assert _C.TREE_NODE_COUNTERS == ("evaluations", "failures")


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
    first = struct.unpack_from("<QQ", _C._telemetry_tree(f.__code__)[1])
    assert first == tuple(root[c] for c in _C.TREE_NODE_COUNTERS)
    assert first[0] >= 1                    # the second call walked the root


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
    from dynamo.eval_frame import describe_failure

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
