"""Never silent: a function or module handed to optimize() whose first call
compiles no graph at all says so once, on the "dynamo" logger, with the
reason (frames skipped by the skip rules, frames that could not be compiled,
frames that traced no tensor operation); explain() lists skipped frames
with their reason. Counts compiles and graphs."""
import functools
import logging

import torch

import dynamo
from dynamo import records


def _warnings(caplog):
    return [r.getMessage() for r in caplog.records
            if r.name == "dynamo" and "compiled no graph" in r.getMessage()]


def _no_tensor_ops(n):
    return n * 2 + 1


def _tensor_ops(x):
    return (x + 1).sin()


def test_no_tensor_op_warns_once_naming_the_frame(caplog, monkeypatch):
    monkeypatch.setattr(dynamo.config, "specialize_int", True)   # ints constant: one entry per value
    dynamo.reset()
    start = records.mark()
    fn = dynamo.optimize("eager")(_no_tensor_ops)
    with caplog.at_level(logging.WARNING, logger="dynamo"):
        assert fn(3) == 7 and fn(4) == 9 and fn(5) == 11
    recs = records.records_since(start)
    assert [len(r.graphs) for r in recs] == [0, 0, 0]   # ints are guarded: 3 compiles, no graph
    (msg,) = _warnings(caplog)                           # once, not per call
    assert "_no_tensor_ops" in msg and "traced no tensor operation" in msg


def test_int_only_frame_stays_graphless_after_its_ints_become_symbolic(caplog):
    """Default policy: the int becomes symbolic on its first recompile. A
    frame doing only int arithmetic then got a graph of SymInt ops (a
    graph call where the bytecode takes nanoseconds); now that compile
    gives up and the frame runs eagerly, results equal, no graph."""
    assert not dynamo.config.specialize_int
    dynamo.reset()
    start = records.mark()
    fn = dynamo.optimize("eager")(_no_tensor_ops)
    with caplog.at_level(logging.WARNING, logger="dynamo"):
        assert [fn(n) for n in (3, 4, 5, 6)] == [7, 9, 11, 13]
    recs = records.records_since(start)
    assert sum(len(r.graphs) for r in recs) == 0
    assert len(recs) == 2                       # n == 3, then the symbolic try that gave up
    assert recs[1].status == records.STATUS["UNSUPPORTED"] and "ints only" in recs[1].error, recs[1]


def test_every_frame_skipped_warns_with_the_skip_reason(caplog):
    # a partial has no code of its own: the frame it runs is torch's relu,
    # which the skip rules keep from compiling
    dynamo.reset()
    start = records.mark()
    fn = dynamo.optimize("eager")(functools.partial(torch.nn.functional.relu, inplace=False))
    x = torch.randn(5)
    with caplog.at_level(logging.WARNING, logger="dynamo"):
        torch.testing.assert_close(fn(x), x.relu())
        fn(x)
    assert records.records_since(start) == []            # nothing compiled
    (msg,) = _warnings(caplog)
    assert "relu" in msg and "skipped (in package torch)" in msg
    e = dynamo.explain(functools.partial(torch.nn.functional.relu, inplace=False))(x)
    assert e.graph_count == 0
    assert any(s.startswith("relu (") and s.endswith(": in package torch") for s in e.skipped), e.skipped
    assert "Skipped Frames:" in str(e)


def test_a_graph_anywhere_means_no_warning(caplog):
    dynamo.reset()
    start = records.mark()
    with caplog.at_level(logging.WARNING, logger="dynamo"):
        fn = dynamo.optimize("eager")(_tensor_ops)
        fn(torch.ones(3))
        # a break first, the graph in the resume function: still a graph
        brk = dynamo.optimize("eager")(
            lambda x: _tensor_ops(dynamo.eval_frame.unsupported(1, x)))
        brk(torch.ones(3))
        assert [len(r.graphs) for r in records.records_since(start)] == [1, 0, 1]
        # explain reports in its own way: no warning for it either
        e = dynamo.explain(_no_tensor_ops)(2)
    assert e.graph_count == 0
    assert _warnings(caplog) == []


def test_first_call_of_already_compiled_code_reports_nothing(caplog):
    dynamo.reset()
    dynamo.optimize("eager")(_no_tensor_ops)(1)          # compiles: warns
    caplog.clear()
    start = records.mark()
    with caplog.at_level(logging.WARNING, logger="dynamo"):
        assert dynamo.optimize("eager")(_no_tensor_ops)(1) == 3      # cache hit: no miss
    assert records.records_since(start) == []
    assert _warnings(caplog) == []
