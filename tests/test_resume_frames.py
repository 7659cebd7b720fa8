"""Graph breaks in every frame shape a resume function must continue:
methods using zero-argument super() (which reads the `__class__` cell and
the frame's first local), nn.Module forwards, cells and free variables,
*args/**kwargs, keyword-only and default arguments, breaks in loops.
Each test compares with eager and counts frames, graphs and breaks."""
import warnings

import torch

import dynamo
from dynamo import records
from dynamo.testing import CompileCounter, same


def run(fn, *args, frames, graphs, breaks, calls=2, **kwargs):
    """Eager vs optimized (twice: the second call must hit), counts."""
    dynamo.reset()
    expected = fn(*args, **kwargs)
    cnt = CompileCounter()
    opt = dynamo.optimize(cnt)(fn)
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)   # no "could not compile"
        for _ in range(calls):
            got = opt(*args, **kwargs)
            assert same(expected, got), (expected, got)
    assert cnt.frame_count == frames, cnt.frame_count
    dynamo.reset()
    e = dynamo.explain(fn)(*args, **kwargs)
    assert (e.graph_count, e.graph_break_count) == (graphs, breaks), str(e)
    return got


X = torch.randn(2, 3)


# ------------------------------------------------ super() after a break

class Base:
    def __repr__(self):
        return "Base!"

    def scale(self, x):
        return x * 3

    @classmethod
    def make(cls, x):
        return x - 1


class WithGetattribute(Base):
    def __getattribute__(self, k):
        return object.__getattribute__(self, k)


class Child(WithGetattribute):
    def get(self, k):
        print("", end="")      # a graph break
        return super().__getattribute__(k)

    def rep(self):
        print("", end="")      # a graph break
        return super().__repr__()

    def scaled(self, x):
        x = x + 1
        print("", end="")      # a graph break
        return super().scale(x) + 1

    @classmethod
    def cmake(cls, x):
        x = x * 2
        print("", end="")      # a graph break
        return super().make(x)


def test_super_getattribute_after_break_reads_the_instance():
    c = Child()
    c.z = 3
    # print breaks; the resume function traces super().__getattribute__
    # (WithGetattribute's, inlined: object.__getattribute__ is the generic
    # read of the instance). No tensor work: 0 graphs
    got = run(c.get, "z", frames=0, graphs=0, breaks=1)
    assert got == 3


def test_super_repr_after_break_is_the_parent_method():
    got = run(Child().rep, frames=0, graphs=0, breaks=1)
    assert got == "Base!"


def test_resume_function_keeps_first_argument_in_slot_0():
    dynamo.reset()
    cnt = CompileCounter()
    dynamo.optimize(cnt)(Child().scaled)(X)
    resumes = [c for r in records.all_records() for c in r.resume_codes]
    assert resumes
    for code in resumes:
        assert code.co_varnames[0] == "self" and "__class__" in code.co_freevars


def test_super_method_after_break_traced_in_resume_graph():
    # one graph before the break, one in the resume function (super() traced)
    run(Child().scaled, X, frames=2, graphs=2, breaks=1)


def test_super_in_classmethod_after_break():
    run(Child.cmake, X, frames=2, graphs=2, breaks=1)


def test_super_explicit_two_argument_form_after_break():
    class E(Base):
        def f(self, x):
            x = x + 1
            print("", end="")      # a graph break
            return super(E, self).scale(x)
    run(E().f, X, frames=2, graphs=2, breaks=1)


def test_first_argument_rebound_before_break():
    class R(WithGetattribute):
        def f(self, k):
            self = other            # super() uses the rebound first local
            print("", end="")      # a graph break
            return super().__getattribute__(k)
    other = R()
    other.z = 7
    assert run(R().f, "z", frames=0, graphs=0, breaks=1) == 7   # as above


def test_super_with_self_in_a_cell():
    class Cl(Base):
        def f(self, x):
            g = lambda: self           # self is a cell variable   # noqa: E731
            x = x + 1 if g() is self else x
            print("", end="")      # a graph break
            return super().scale(x) + 2
    run(Cl().f, X, frames=2, graphs=2, breaks=1)


def test_super_with_free_variable_of_enclosing_function():
    k = torch.ones(3)

    class Fr(Base):
        def f(self, x):
            x = x + k
            print("", end="")      # a graph break
            return super().scale(x) * k
    run(Fr().f, X, frames=2, graphs=2, breaks=1)


def test_super_varargs_kwargs_kwonly_defaults():
    class V(Base):
        def f(self, x, y=2, *rest, scale=3, **kw):
            x = x * y
            print("", end="")      # a graph break
            return super().scale(x) + sum(rest) + scale + kw["extra"]
    run(V().f, X, 4, 5, 6, scale=7, extra=8, frames=2, graphs=2, breaks=1)
    run(V().f, X, extra=1, frames=2, graphs=2, breaks=1)


def test_super_break_inside_loop(monkeypatch):
    # the loop's resume functions (config.skip_frame_on_loop_break off)
    monkeypatch.setattr(dynamo.config, "skip_frame_on_loop_break", False)
    class Lp(Base):
        def f(self, x):
            for i in range(3):
                x = x + i
                print("", end="")      # a graph break
                x = super().scale(x)
            return x
    # the prefix graph, then one resume per iteration (each with its own graph)
    got = run(Lp().f, X, frames=4, graphs=4, breaks=3)
    assert same(got, Lp().f(X))


def test_super_break_on_tensor_condition():
    class Tc(Base):
        def f(self, x):
            if x.sum() > 0:
                return super().scale(x)
            return super().make(x)
    run(Tc().f, X, frames=2, graphs=2, breaks=1)
    run(Tc().f, -X.abs(), frames=2, graphs=2, breaks=1)


def test_generator_method_using_super_consumed_in_compiled_frame():
    class G(Base):
        def gen(self, x):
            for i in range(2):
                yield super().scale(x) + i

    def f(g, x):
        return sum(g.gen(x))
    run(f, G(), X, frames=1, graphs=1, breaks=0)


# ------------------------------------------------ nn.Module forwards

class Parent(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(3, 3)

    def forward(self, x):
        return self.lin(x).relu()


class ChildModule(Parent):
    def forward(self, x):
        x = x + 1
        print("", end="")      # a graph break
        return super().forward(x) * 2


class LinearPlus(torch.nn.Linear):
    def forward(self, x):
        return super().forward(x) + 1


def test_module_forward_super_after_break():
    m = ChildModule().eval()
    run(m, X, frames=2, graphs=2, breaks=1)


def test_module_super_forward_of_torch_module_inlined_no_break():
    m = LinearPlus(3, 3)
    run(m, X, frames=1, graphs=1, breaks=0)


def test_module_super_forward_nested_under_outer_module():
    class Outer(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.inner = ChildModule()

        def forward(self, x):
            return self.inner(x) - 1
    # the break in the inlined inner forward splits the outer frame at the
    # call; the inner forward then runs as its own frame and breaks again
    run(Outer(), X, frames=3, graphs=3, breaks=2)


def test_super_c_method_after_a_break_acts_on_each_calls_object():
    # a dataclass __init__ (run eagerly: its file is "<string>") calls a
    # __setattr__ that breaks, then super().__setattr__ (object's slot
    # wrapper, run eagerly): the resume function must bind it to this
    # call's object, not to the object of the call that was traced
    import collections
    import dataclasses

    class Base(collections.OrderedDict):
        def __setattr__(self, name, value):
            print("", end="")                        # a break
            super().__setattr__(name, value)

    @dataclasses.dataclass
    class Out(Base):
        a: torch.Tensor = None

    def f(x):
        return Out(a=x + 1)

    cnt = CompileCounter()
    opt = dynamo.optimize(cnt)(f)
    outs = [opt(torch.full((2,), float(i))) for i in range(3)]
    for i, o in enumerate(outs):
        assert o.__dict__ == {"a": o.a} and o.a.tolist() == [i + 1.0, i + 1.0]
    assert cnt.frame_count >= 1
