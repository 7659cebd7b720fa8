"""Skip rules (dynamo/skipfiles.py): code of pip-installed libraries is compiled,
while the standard library, torch's internals, test runners and dynamo
itself are not. The first test builds a fresh venv (not
--system-site-packages), installs a small package into it with pip and
checks, in that venv's interpreter, that the package's functions, its
nn.Module's forward and the resume functions of its frames are compiled."""
import json
import os
import subprocess
import sys
import textwrap

import pytest
import torch

import dynamo
from dynamo import skipfiles as skip
from dynamo.testing import CompileCounter

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

_PKG = '''
import torch


def helper(x):
    return x.sin() * 2


def f(x):
    y = helper(x) + 1
    print("", end="")           # a graph break: the rest is a resume function
    return helper(y).cos()


class Block(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(4, 4)

    def forward(self, x):
        return torch.relu(self.lin(x)) * 2
'''

_CHECK = '''
import json, os, sys, sysconfig, json as stdlib_json
import torch, dynamo, typing_extensions
from dynamo import skipfiles as skip
from dynamo.testing import CompileCounter
import mylib

x = torch.randn(2, 4)
out = {"platstdlib": sysconfig.get_paths()["platstdlib"], "mylib": mylib.__file__}
cnt = CompileCounter()
got = dynamo.optimize(cnt)(mylib.f)(x)
out["f"] = [cnt.frame_count, cnt.op_count, bool(torch.allclose(got, mylib.f(x)))]
block = mylib.Block()
cnt = CompileCounter()
got = dynamo.optimize(cnt)(block)(x)
out["block"] = [cnt.frame_count, cnt.op_count, bool(torch.allclose(got, block(x)))]
# a function of the package reached from a user frame (not the entry)
def user(x):
    return mylib.helper(x) - 1
cnt = CompileCounter()
dynamo.optimize(cnt)(user)(x)
out["user"] = [cnt.frame_count, cnt.op_count]
out["reasons"] = {
    "mylib": skip.skip_reason(mylib.__file__),
    "beside_typing_extensions": skip.skip_reason(
        os.path.join(os.path.dirname(typing_extensions.__file__), "anything.py")),
    "typing_extensions": skip.skip_reason(typing_extensions.__file__),
    "torch": skip.skip_reason(torch.nn.functional.__file__),
    "stdlib": skip.skip_reason(stdlib_json.__file__),
    "dynamo": skip.skip_reason(dynamo.__file__),
}
print("RESULT " + json.dumps(out))
'''


@pytest.fixture(scope="module")
def fresh_venv(tmp_path_factory):
    """A venv made with `python -m venv` (own site-packages, no system
    site-packages) where torch and dynamo are reachable through a .pth file
    as a user's installed copies would be, and `mylib` is installed by pip."""
    root = tmp_path_factory.mktemp("skiprules")
    pkg = root / "src"
    (pkg / "mylib").mkdir(parents=True)
    (pkg / "mylib" / "__init__.py").write_text(_PKG)
    (pkg / "pyproject.toml").write_text(textwrap.dedent('''
        [build-system]
        requires = ["setuptools"]
        build-backend = "setuptools.build_meta"
        [project]
        name = "mylib"
        version = "0.1"
        [tool.setuptools]
        packages = ["mylib"]
    '''))
    venv = root / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    py = str(venv / "bin" / "python")
    site_dir = subprocess.run([py, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                              check=True, capture_output=True, text=True).stdout.strip()
    torch_site = os.path.dirname(os.path.dirname(os.path.abspath(torch.__file__)))
    with open(os.path.join(site_dir, "deps.pth"), "w") as fh:
        fh.write(torch_site + "\n" + REPO + "\n")
    env = dict(os.environ, PIP_NO_INDEX="1", PIP_DISABLE_PIP_VERSION_CHECK="1")
    env.pop("PYTHONPATH", None)
    subprocess.run([py, "-m", "pip", "install", "-q", "--no-deps", "--no-build-isolation",
                    str(pkg)], check=True, env=env, capture_output=True)
    return py, site_dir, env


def test_pip_installed_package_in_fresh_venv_is_compiled(fresh_venv):
    py, site_dir, env = fresh_venv
    proc = subprocess.run([py, "-c", _CHECK], capture_output=True, text=True, env=env,
                          cwd=os.path.dirname(py), timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    line = [ln for ln in proc.stdout.splitlines() if ln.startswith("RESULT ")][-1]
    out = json.loads(line[len("RESULT "):])
    # the fresh venv reproduces the layout that used to skip everything:
    # platstdlib contains site-packages, where pip put mylib
    assert os.path.realpath(out["mylib"]).startswith(os.path.realpath(out["platstdlib"]))
    assert os.path.realpath(out["mylib"]).startswith(os.path.realpath(site_dir))
    # f: a graph before the break (sin, mul, add) and one in its resume
    # function (sin, mul, cos), both in site-packages code
    assert out["f"] == [2, 6, True]
    assert out["block"] == [1, 3, True]          # linear, relu, mul
    assert out["user"] == [1, 3]                 # helper inlined: sin, mul, sub
    r = out["reasons"]
    assert r["mylib"] is None
    assert r["beside_typing_extensions"] is None  # a single-file module skips only itself
    assert r["typing_extensions"] == "in package typing_extensions"
    assert r["torch"] == "in package torch"
    assert r["stdlib"] == "in the standard library"
    assert r["dynamo"] == "dynamo itself"


def test_torch_and_stdlib_frames_stay_skipped_and_explain_lists_them():
    import json as stdlib_json

    def f(x):
        stdlib_json.dumps([1])             # a stdlib frame: a break, run eagerly
        return torch.nn.functional.gelu(x) + 1

    e = dynamo.explain(f)(torch.randn(3))
    assert (e.graph_count, e.graph_break_count) == (1, 1)
    skipped = "\n".join(e.skipped)
    assert "dumps" in skipped and "in the standard library" in skipped
    assert "Skipped Frames:" in str(e)
    assert all("mylib" not in s for s in e.skipped)


def test_site_packages_inside_stdlib_dir_is_not_stdlib():
    # a system Python keeps site-packages inside its stdlib directory
    import sysconfig
    stdlib = sysconfig.get_paths()["stdlib"]
    assert skip.skip_reason(os.path.join(stdlib, "site-packages", "somelib", "m.py")) is None
    assert skip.skip_reason(os.path.join(stdlib, "dist-packages", "somelib", "m.py")) is None
    assert skip.skip_reason(os.path.join(stdlib, "json", "decoder.py")) == "in the standard library"
    assert skip.skip_reason("<string>") == "generated code"
    assert skip.skip_reason("<stdin>") is None


class _Talk(torch.nn.Module):
    def forward(self, x):
        print("", end="")                   # a graph break inside Sequential.forward
        return x


def test_resume_functions_of_an_optimized_torch_forward_are_compiled(monkeypatch):
    # nn.Sequential.forward lives in torch but was handed to optimize(): it
    # is compiled, and so are its resume functions (same file). Its break
    # is in its loop: cut there (config.skip_frame_on_loop_break off)
    monkeypatch.setattr(dynamo.config, "skip_frame_on_loop_break", False)
    seq = torch.nn.Sequential(torch.nn.Linear(3, 3), _Talk(), torch.nn.Linear(3, 3), torch.nn.ReLU())
    x = torch.randn(2, 3)
    cnt = CompileCounter()
    got = dynamo.optimize(cnt)(seq)(x)
    assert torch.allclose(got, seq(x))
    # the resume functions (torch's file) are compiled: the graph of the
    # last resume holds the second Linear and the ReLU. (The first Linear
    # runs eagerly: the break is placed at the loop's call instruction on
    # its first iteration — a tracer matter, not a skip rule.)
    assert (cnt.frame_count, cnt.op_count) == (1, 2)
    dynamo.reset()
    e = dynamo.explain(seq)(x)
    assert not any("__resume_at" in s for s in e.skipped), e.skipped


def test_entry_function_that_cannot_compile_is_reported_once(caplog):
    def f(x):
        s = {x}                             # a set of tensors is not traced, and
        print("", end="")                   # the frame cannot be cut before it
        return x + len(s)
    cnt = CompileCounter()
    opt = dynamo.optimize(cnt)(f)
    with caplog.at_level("WARNING", logger="dynamo"):
        for _ in range(3):
            assert torch.equal(opt(torch.ones(2)), f(torch.ones(2)))
    msgs = [r.getMessage() for r in caplog.records if "compiles no graph" in r.getMessage()]
    assert cnt.frame_count == 0
    assert len(msgs) == 1 and "f (" in msgs[0] and "not a Python constant" in msgs[0], msgs


def test_generated_and_backend_runtime_code_is_skipped():
    """Issue 27, item 2: what a backend generates or runs around a graph is
    never user code: fx's generated modules (AOT's forward and backward
    graphs), AOT autograd's runtime wrappers, dynamo's own runtimes (its
    AOT runtime, the CUDA-graph replays)."""
    import importlib.util
    import inspect
    from dynamo.backends import cudagraphs
    from dynamo.backends.aot import runtime
    gm = torch.fx.symbolic_trace(torch.nn.Linear(2, 2))
    assert skip.skip_reason(gm.forward.__code__.co_filename) == "generated code"
    aot_wrappers = importlib.util.find_spec("torch._functorch._aot_autograd.runtime_wrappers")
    assert skip.skip_reason(aot_wrappers.origin) == "in package torch"
    assert skip.skip_reason(inspect.getfile(runtime)) == "dynamo itself"
    assert skip.skip_reason(inspect.getfile(cudagraphs)) == "dynamo itself"


def test_torch_optim_is_inlined_but_its_frames_stay_skipped():
    import inspect
    import torch.optim.adam as adam
    path = inspect.getfile(adam)
    assert skip.is_inlined_torch_code(adam.adam.__code__)
    assert skip.skip_reason(path) == "in package torch"         # the hook never compiles it
    assert not skip.is_inlined_torch_code(torch.nn.functional.gelu.__code__
                                          if hasattr(torch.nn.functional.gelu, "__code__")
                                          else torch.nn.functional.dropout.__code__)
