"""Work the compiler must not do on the way to a graph (tests count records).

* A guard failure's text for the live telemetry reprs the guarded object;
  a module's repr calls every submodule's extra_repr, which must not be
  compiled as frames of their own (it once compiled ~500 extra_repr frames
  on Mixtral and cost seconds); recompile reasons name modules by class and
  address instead of their whole-tree repr.
* Probing an op on fake tensors silences torch's fake-tensor loggers
  without Logger.setLevel (which clears every logger's cache).
* A code object's bytecode is decoded once, however often it is inlined.
"""
import torch

import dynamo
from dynamo import records, telemetry


class _Block(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(4, 4)

    def forward(self, x):
        return self.lin(x).relu()

    def extra_repr(self):
        return "block in a user file"


def _call(m, x):
    return m(x) + 1


def test_guard_failure_text_compiles_no_repr_frames():
    assert telemetry.enabled()
    dynamo.reset()
    a, b = _Block(), _Block()
    x = torch.randn(2, 4)
    start = records.mark()
    fn = dynamo.optimize("eager")(_call)
    with torch.no_grad():
        torch.testing.assert_close(fn(a, x), a(x) + 1)
        torch.testing.assert_close(fn(b, x), b(x) + 1)      # guard on `m` fails: recompile
    recs = records.records_since(start)
    names = [r.name for r in recs]
    assert names.count("_call") == 2, names
    assert "extra_repr" not in names, names
    assert sum(len(r.graphs) for r in recs) == 2
    # the recompile reason names the modules by class and address, without
    # their (whole-tree) repr
    assert recs[1].recompile_reason.startswith(
        f"id(L['m']): expected <_Block module at {id(a):#x}>, actual <_Block module at {id(b):#x}>")


def _matmul_mismatch(x):
    return (x + 1) @ torch.ones(3)      # fails on the example values: a break


def test_probing_ops_never_touches_logger_levels(monkeypatch):
    """Each op's fake run silences torch's fake-tensor loggers without
    setLevel (which clears every logger's cache: ~0.5 s per model); what
    the failing probe logs still reaches no handler."""
    import logging
    calls = []
    real = logging.Logger.setLevel
    monkeypatch.setattr(logging.Logger, "setLevel",
                        lambda self, level: (calls.append(self.name), real(self, level)))
    seen = []

    class Keep(logging.Handler):
        def emit(self, record):
            seen.append(record)
    lg = logging.getLogger("torch._subclasses.fake_tensor")
    handler = Keep(level=logging.DEBUG)
    lg.addHandler(handler)
    dynamo.reset()
    start = records.mark()
    try:
        fn = dynamo.optimize("eager")(lambda x: _matmul_mismatch(x.sin()))
        try:
            fn(torch.ones(4))
        except RuntimeError:
            pass
    finally:
        lg.removeHandler(handler)
    recs = records.records_since(start)
    assert sum(len(r.break_reasons) for r in recs) >= 1
    assert calls == [] and seen == []


class _Layer(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(4, 4)

    def forward(self, x):
        return torch.relu(self.lin(x)) + x


class _Stack(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.layers = torch.nn.ModuleList(_Layer() for _ in range(4))

    def forward(self, x):
        for layer in self.layers:
            x = layer(x)
        return x


def test_each_code_is_decoded_once_per_process(monkeypatch):
    """Four layers inline one forward: its bytecode is decoded once (and
    kept across compiles and dynamo.reset()), not once per inlined call."""
    import importlib
    decode_mod = importlib.import_module("dynamo.bytecode.decode")   # the module, not the function
    decoded = []
    real = decode_mod.decode
    monkeypatch.setattr(decode_mod, "decode", lambda code: (decoded.append(code.co_name), real(code))[1])
    monkeypatch.setattr(decode_mod, "_SHARED", {})
    m, x = _Stack(), torch.randn(2, 4)
    dynamo.reset()
    start = records.mark()
    opt = dynamo.optimize("eager")(m)
    with torch.no_grad():
        torch.testing.assert_close(opt(x), m(x))
        y = torch.randn(3, 4)                   # a new size: a recompile decodes nothing
        torch.testing.assert_close(opt(y), m(y))
    recs = records.records_since(start)
    assert [len(r.graphs) for r in recs] == [1, 1]
    assert sorted(decoded) == ["forward", "forward"], decoded     # _Stack's and _Layer's
    dynamo.reset()                                                  # a new compile: nothing decoded again
    with torch.no_grad():
        torch.testing.assert_close(dynamo.optimize("eager")(m)(x), m(x))
    assert sorted(decoded) == ["forward", "forward"], decoded
