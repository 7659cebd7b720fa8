"""Running a test file again in a subprocess against the ASan/UBSan build of
dynamo._C (`make asan`, build/asan/_C*.so).

One helper for every test file that has an "under ASan" test: it skips when
there is no usable sanitizer build (absent, older than its sources, no
libasan/libubsan to preload) and otherwise runs pytest on the given files
with the sanitizer runtimes preloaded and DYNAMO_C_PATH naming the build.
"""
import importlib.machinery
import importlib.util
import os
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ASAN_SO = os.path.join(ROOT, "build", "asan", "_C" + importlib.machinery.EXTENSION_SUFFIXES[0])
SOURCE_DIRS = ("core", "guards")
SOURCE_SUFFIXES = (".c", ".cpp", ".h")


def sanitizer_libs():
    """Absolute paths of libasan and libubsan for LD_PRELOAD; skips the test
    when gcc does not know them."""
    libs = []
    for name in ("libasan.so", "libubsan.so"):
        path = subprocess.run(["gcc", f"-print-file-name={name}"], capture_output=True,
                              text=True).stdout.strip()
        if not os.path.isabs(path):
            pytest.skip(f"{name} not found")
        libs.append(path)
    return libs


def skip_unless_fresh(so_path, suffixes=SOURCE_SUFFIXES):
    """Skips the test unless `so_path` exists, is newer than every source of
    the extension, and we are not already running against another build."""
    if os.environ.get("DYNAMO_C_PATH"):
        pytest.skip("already running against another build")
    if not os.path.exists(so_path):
        pytest.skip("no ASan build: run `make asan`")
    sources = [os.path.join(ROOT, d, f) for d in SOURCE_DIRS
               for f in os.listdir(os.path.join(ROOT, d)) if f.endswith(suffixes)]
    if max(map(os.path.getmtime, sources)) > os.path.getmtime(so_path):
        pytest.skip("ASan build is older than the sources: run `make asan`")


def run_pytest_under_asan(test_files, so_path=ASAN_SO, extra_env=None, pytest_args=(),
                          source_suffixes=SOURCE_SUFFIXES):
    """Runs `pytest -q <pytest_args> <test_files>` in a subprocess against the
    ASan build `so_path`; asserts that it passed and that AddressSanitizer
    reported nothing.  Returns the CompletedProcess (text output) for further
    checks.  Skips (see skip_unless_fresh, sanitizer_libs) when it cannot run."""
    skip_unless_fresh(so_path, source_suffixes)
    env = {**os.environ, "LD_PRELOAD": ":".join(sanitizer_libs()), "DYNAMO_C_PATH": so_path,
           "ASAN_OPTIONS": "detect_leaks=0", "PYTHONMALLOC": "malloc", **(extra_env or {})}
    out = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                          *pytest_args, *map(os.path.abspath, test_files)],
                         capture_output=True, text=True, timeout=900, env=env, cwd=ROOT)
    assert out.returncode == 0, out.stdout[-4000:] + out.stderr[-4000:]
    assert "ERROR: AddressSanitizer" not in out.stderr
    return out


def load_c():
    """dynamo._C, for the test files that test it without the tracer (the one
    loader of tests/): straight from its file when DYNAMO_C_PATH is set (ASan
    build) or when the Python package does not import yet."""
    if "dynamo._C" in sys.modules:
        return sys.modules["dynamo._C"]
    if ROOT not in sys.path:
        sys.path.insert(0, ROOT)
    if not os.environ.get("DYNAMO_C_PATH"):
        try:
            from dynamo import _C
            return _C
        except ImportError as exc:
            if "loaded twice" in str(exc):
                raise
    suffix = importlib.machinery.EXTENSION_SUFFIXES[0]
    path = os.environ.get("DYNAMO_C_PATH") or os.path.join(ROOT, "dynamo", "_C" + suffix)
    loader = importlib.machinery.ExtensionFileLoader("dynamo._C", path)
    spec = importlib.util.spec_from_file_location("dynamo._C", path, loader=loader)
    mod = importlib.util.module_from_spec(spec)
    loader.exec_module(mod)
    sys.modules["dynamo._C"] = mod
    return mod
