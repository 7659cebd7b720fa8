"""Objects the traced code builds that are nn.Module subclasses holding only
Python state (transformers' DynamicCache): __init__ is traced (nn.Module's
own __init__ runs when the object is rebuilt after the graph), lists of
tensors and counters are tracked, and the object comes back with nn.Module
state plus the traced attributes. str-valued Enum members compare by value
at trace time. Counts graphs and breaks."""
import enum

import torch

import dynamo
from dynamo import records


class _Cache(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.seen = 0
        self.keys = []

    def update(self, k):
        self.seen += k.shape[0]
        self.keys.append(k)
        return torch.cat(self.keys)

    def __len__(self):
        return len(self.keys)


class _Mode(str, enum.Enum):
    FAST = "fast"
    SLOW = "slow"


def _fill(x, mode=_Mode.FAST):
    cache = _Cache()
    for i in range(3):
        out = cache.update(x * i)
    if mode == _Mode.FAST:          # str Enum members: folded
        out = out + 1
    return out, cache, len(cache)


def _run(fn, *args):
    dynamo.reset()
    start = records.mark()
    got = dynamo.optimize("eager")(fn)(*args)
    recs = records.records_since(start)
    return got, sum(len(r.graphs) for r in recs), sum(len(r.break_reasons) for r in recs)


def test_state_module_built_in_the_frame_is_one_graph_and_rebuilt():
    x = torch.randn(2, 3)
    (out, cache, n), graphs, breaks = _run(_fill, x)
    ref_out, ref_cache, ref_n = _fill(x)
    assert (graphs, breaks) == (1, 0)
    torch.testing.assert_close(out, ref_out)
    assert n == ref_n == 3 and type(cache) is _Cache and cache.seen == ref_cache.seen == 6
    assert cache.training and cache._modules == {} and cache._parameters == {}
    assert len(cache.keys) == 3
    for a, b in zip(cache.keys, ref_cache.keys):
        torch.testing.assert_close(a, b)


class _Holder(torch.nn.Module):
    def __init__(self, t):
        super().__init__()
        self.t = t             # a tensor attribute: nn.Module would register nothing,
                               # but it is not plain state for the tracer


def _hold(x):
    return _Holder(x + 1).t * 2


def test_storing_a_tensor_on_it_breaks():
    x = torch.randn(3)
    got, graphs, breaks = _run(_hold, x)
    torch.testing.assert_close(got, _hold(x))
    assert breaks >= 1


class _Built(torch.nn.Module):
    def __init__(self, n):
        self.n = n                 # before nn.Module.__init__: no module state yet
        super().__init__()
        self.lin = torch.nn.Linear(n, n)


def test_module_init_frame_runs_eagerly_without_a_warning(recwarn):
    # a module built under the hook: its __init__ frame is compiled on its own
    # with a half-made `self`; it runs eagerly, recorded as unsupported
    dynamo.reset()
    start = records.mark()
    m = dynamo.optimize("eager")(lambda n: _Built(n))(3)
    assert isinstance(m, _Built) and m.lin.in_features == 3
    recs = [r for r in records.records_since(start) if r.name == "__init__"]
    assert [r.status for r in recs] == ["unsupported"]
    assert not [w for w in recwarn if "could not compile" in str(w.message)]


def _step(x, cache):
    out = cache.update(x)
    return out.sum(0), len(cache)


def test_state_module_passed_in_is_mutated_in_place():
    # the cache of a previous step grows: its counter (attribute store) and
    # its list (an argument's attribute) are written back after the graph
    x = torch.randn(2, 3)
    ours, ref = _Cache(), _Cache()
    for c in (ours, ref):
        c.update(x)
    dynamo.reset()
    start = records.mark()
    got = dynamo.optimize("eager")(_step)(x * 2, ours)
    want = _step(x * 2, ref)
    recs = records.records_since(start)
    assert (sum(len(r.graphs) for r in recs), sum(len(r.break_reasons) for r in recs)) == (1, 0)
    torch.testing.assert_close(got[0], want[0])
    assert got[1] == want[1] == 2 and ours.seen == ref.seen == 4 and len(ours.keys) == 2
    torch.testing.assert_close(ours.keys[1], ref.keys[1])
