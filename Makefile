# dynamo — build, test, demo, bench.
# `make demo` and `make test` do all set-up on a fresh machine (deps, venv, build).

# The interpreter to build and test for: `make test PYTHON=python3.12`.
# CPython 3.11, 3.12 and 3.13 are supported.  Each version gets its own
# venv (.venv for the default python3, .venv-3.12 for PYTHON=python3.12, or
# VENV=...; VENV=none uses $(PYTHON) itself, with its own torch, e.g. a
# machine without network), its own extension (the EXT_SUFFIX names the
# version) and its own build/py<version>/ objects.
PYTHON   ?= python3
PYVER    := $(shell $(PYTHON) -c "import sys;print('%d.%d' % sys.version_info[:2])")
VENV     ?= $(if $(filter python3,$(PYTHON)),.venv,.venv-$(PYVER))
ifeq ($(VENV),none)
VPY      := $(PYTHON)
STAMP    :=
else
VPY      := $(VENV)/bin/python
STAMP    := $(VENV)/.stamp
endif
EXT_SUFFIX := $(shell $(PYTHON) -c "import sysconfig;print(sysconfig.get_config_var('EXT_SUFFIX'))")
PY_INC    := $(shell $(PYTHON) -c "import sysconfig;print(sysconfig.get_paths()['include'])")
EXT       = dynamo/_C$(EXT_SUFFIX)
TMETA_OBJ := build/py$(PYVER)/tmeta.o

CC       ?= gcc
CFLAGS   ?= -O2 -g
WFLAGS   := -Wall -Wextra -Werror -Wno-unused-parameter -Wno-missing-field-initializers
EXT_SRC  := $(wildcard core/*.c guards/*.c)
EXT_HDR  := $(wildcard cpython/*.h core/*.h guards/*.h)
PREFIX   ?= /usr/local
export PYTHONPATH := $(CURDIR)$(if $(PYTHONPATH),:$(PYTHONPATH))
DEBIAN_PKGS := libncurses-dev libelf-dev libgraphviz-dev graphviz tmux

.PHONY: all ext deps venv test test-matrix demo bench bench-models bench-generate bench-zoo bench-gpu clean install asan fuzz leak-figures

# Per-layer fragments (inspect/, tui/, viz/, readerfuzz/) add to EXT_SRC, EXT_HDR, TOOLS,
# INSTALL_BINS and define their own rules.
TOOLS :=
INSTALL_BINS :=
-include inspect/inspect.mk tui/tui.mk viz/viz.mk readerfuzz/readerfuzz.mk

all: $(STAMP) $(EXT) $(TOOLS)

# The extension alone (no tools, no Debian packages).
ext: $(STAMP) $(EXT)

# Debian packages; idempotent: installs only what is missing.
deps:
	@missing=""; for p in $(DEBIAN_PKGS); do dpkg -s $$p >/dev/null 2>&1 || missing="$$missing $$p"; done; \
	if [ -n "$$missing" ]; then \
	  echo "installing:$$missing"; \
	  SUDO=$$( [ "$$(id -u)" = 0 ] || echo sudo ); \
	  $$SUDO apt-get update -qq && $$SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$missing; \
	fi

# pip with retries: a download cut mid-stream (the CUDA torch wheel of 3.12
# and 3.13 is ~0.5 GB) is tried again, three times in all, before failing.
PIP_INSTALL = for try in 1 2 3; do $(VPY) -m pip install -q --retries 10 $(1) && break; \
	[ $$try = 3 ] && exit 1; echo "pip install failed (try $$try of 3); again in 15 s"; sleep 15; done

venv: $(STAMP)
$(STAMP): requirements.txt
	@$(PYTHON) -c "import sys; sys.exit(0 if (3,11) <= sys.version_info[:2] <= (3,13) else 'dynamo needs CPython 3.11, 3.12 or 3.13, found %s' % sys.version.split()[0])"
	test -x $(VPY) || $(PYTHON) -m venv $(VENV)
	$(call PIP_INSTALL,-r requirements.txt)
	touch $(STAMP)

# The model suite's dependency (transformers, pinned with what it needs).
MODELS_STAMP := $(if $(STAMP),$(VENV)/.stamp-models)
$(MODELS_STAMP): requirements-models.txt $(STAMP)
	$(call PIP_INSTALL,-r requirements-models.txt)
	touch $(MODELS_STAMP)

$(EXT): $(EXT_SRC) $(EXT_HDR) $(TMETA_OBJ) $(STAMP)
	$(CC) $(CFLAGS) $(WFLAGS) -std=c11 -fPIC -shared -fvisibility=hidden -I$(PY_INC) -Icpython -Icore -Iguards \
	    $(EXT_SRC) $(TMETA_OBJ) -o $@ $(TORCH_LDFLAGS)

# guards/tmeta.cpp, the one C++ unit, reads tensor metadata through libtorch.
# Torch lives in the venv, which may not exist yet when make parses this
# file: TORCH_DIR/TORCH_ABI expand (once, then cached) only inside recipes,
# i.e. after $(STAMP) is up to date.  Its own object, so that editing a .c
# file does not recompile it (~13 s: the torch-python headers are heavy).
CXXFLAGS ?= -O2 -g
TORCH_DIR = $(eval TORCH_DIR := $$(shell $(VPY) -c "import importlib.util as u, os; print(os.path.dirname(u.find_spec('torch').origin))"))$(TORCH_DIR)
TORCH_ABI = $(eval TORCH_ABI := $$(shell $(VPY) -c "import torch; print(int(torch.compiled_with_cxx11_abi()))"))$(TORCH_ABI)
TORCH_CXXFLAGS = -std=c++20 -D_GLIBCXX_USE_CXX11_ABI=$(TORCH_ABI) -fPIC -fvisibility=hidden \
    -isystem $(TORCH_DIR)/include -isystem $(TORCH_DIR)/include/torch/csrc/api/include -isystem $(PY_INC)
TORCH_LDFLAGS = -L$(TORCH_DIR)/lib -Wl,-rpath,$(TORCH_DIR)/lib -ltorch_python -ltorch_cpu -lc10 -lstdc++
$(TMETA_OBJ): guards/tmeta.cpp guards/tmeta.h $(STAMP)
	mkdir -p $(dir $@)
	$(CXX) $(CXXFLAGS) $(WFLAGS) $(TORCH_CXXFLAGS) -Iguards -c guards/tmeta.cpp -o $@

# AddressSanitizer build of the extension (build/asan/); tests load it with
# LD_PRELOAD=$$(gcc -print-file-name=libasan.so) DYNAMO_C_PATH=build/asan/_C$(EXT_SUFFIX).
ASAN_EXT  = build/asan/_C$(EXT_SUFFIX)

ASAN_FLAGS := -O1 -g -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined
ASAN_TMETA_OBJ := build/asan/py$(PYVER)/tmeta.o

asan: $(ASAN_EXT)
$(ASAN_EXT): $(EXT_SRC) $(EXT_HDR) $(ASAN_TMETA_OBJ) $(STAMP)
	mkdir -p build/asan
	$(CC) $(ASAN_FLAGS) \
	    $(WFLAGS) -std=c11 -fPIC -shared -fvisibility=hidden \
	    -I$(PY_INC) -Icpython -Icore -Iguards $(EXT_SRC) $(ASAN_TMETA_OBJ) -o $@ $(TORCH_LDFLAGS)

$(ASAN_TMETA_OBJ): guards/tmeta.cpp guards/tmeta.h $(STAMP)
	mkdir -p $(dir $@)
	$(CXX) $(ASAN_FLAGS) $(WFLAGS) $(TORCH_CXXFLAGS) -Iguards -c guards/tmeta.cpp -o $@

test: deps all asan $(MODELS_STAMP)
	$(VPY) -m pytest -q tests

# The suite once per CPython of the CI matrix (3.11, 3.12, 3.13), each with its
# own venv and extension; .ci/run finds the interpreters.
test-matrix:
	.ci/run

# Differential fuzzer (tests/fuzz/fuzz.py): N random programs from seed SEED,
# eager vs compiled; minimized reproducers in build/fuzz-failures/.
N ?= 1000
SEED ?= 0
FUZZ_ARGS ?=
fuzz: all
	$(VPY) tests/fuzz/fuzz.py -n $(N) --start $(SEED) $(FUZZ_ARGS)

# Issue 12's leak figures: RSS, heap in use and live objects over 10,000
# compile/reset cycles and 1,000,000 hits, telemetry on and off (four
# processes at nice 19: cycles and hits of each setting; ~6 min of CPU for
# each cycles run).  JSON, Markdown and logs in build/leak-figures/.
leak-figures: all
	$(VPY) tests/workloads/leak_figures.py --nice 19

demo: deps all
	$(VPY) examples/demo.py

bench: deps all
	$(VPY) bench/run.py $(BENCH_ARGS)

bench-models: deps all $(MODELS_STAMP)
	$(VPY) bench/models.py $(BENCH_ARGS)

# HF generate() with the forward compiled, DynamicCache and StaticCache, tiny
# Llama / GPT-2 / Mixtral, ours vs torch.compile in one run (bench/generate.py)
bench-generate: deps all $(MODELS_STAMP)
	$(VPY) bench/generate.py $(BENCH_ARGS)

# the zoo (issue 31): every transformers AutoModel type (shrunk configs), every
# timm family and torchvision model that imports, ours vs torch.compile, one
# subprocess per model (bench/zoo.py; ZOO_ARGS e.g. "-j 16 --shard 0/4")
bench-zoo: deps all $(MODELS_STAMP)
	$(VPY) bench/zoo.py $(ZOO_ARGS)

# on a CUDA machine: models on cuda, backends eager/aot_eager/inductor/cudagraphs
# against eager and torch.compile (bench/gpu.py)
bench-gpu: ext
	$(VPY) bench/gpu.py $(BENCH_ARGS)

install: all
	$(VPY) -m pip install -q -e .
	$(if $(INSTALL_BINS),install -d $(DESTDIR)$(PREFIX)/bin && install -m 0755 $(INSTALL_BINS) $(DESTDIR)$(PREFIX)/bin/)

clean:
	rm -rf build dynamo/_C.*.so dynamo/__pycache__ dynamo/*/__pycache__ tests/__pycache__
