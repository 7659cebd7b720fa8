# inspect/inspect.mk — telemetry: the layout and image code dynamo._C compiles in
# (its writer is core/telemetry.c), the reader
# library build/libdynamo_inspect.a and the test/diagnostic CLI
# build/bin/dynamo-inspect.
#
# Tools link the reader with:  $(INSPECT_LIB) $(INSPECT_LDLIBS)
# and compile with:            $(INSPECT_CFLAGS)   (for "reader.h", "strutil.h")
# The library also carries strutil.c: checked allocation, StrBuf, fmt_ns and
# the escaping of text read from a process, shared by the three tools.
# procid.c (a process's start time and uids) is compiled into both _C and
# the reader.
# They may depend on $(INSPECT_LIB) in their rules (it is a file target).

EXT_SRC += inspect/image.c inspect/procid.c
EXT_HDR += inspect/layout.h inspect/image.h inspect/errors.h inspect/procid.h

INSPECT_LIB    := build/libdynamo_inspect.a
INSPECT_CFLAGS := -Iinspect
INSPECT_LDLIBS := -lelf
INSPECT_WFLAGS := -Wall -Wextra -Werror -Wshadow -std=c11 -D_GNU_SOURCE
INSPECT_SRC    := inspect/reader.c inspect/image.c inspect/procid.c inspect/value.c inspect/strutil.c
INSPECT_HDR    := inspect/layout.h inspect/errors.h inspect/reader.h inspect/image.h inspect/procid.h \
                  inspect/value.h inspect/strutil.h
INSPECT_OBJ    := $(patsubst inspect/%.c,build/inspect/%.o,$(INSPECT_SRC))
INSPECT_CLI    := build/bin/dynamo-inspect

TOOLS        += $(INSPECT_LIB) $(INSPECT_CLI)
INSTALL_BINS += $(INSPECT_CLI)

.PHONY: inspect-asan
asan: inspect-asan

build/inspect/%.o: inspect/%.c $(INSPECT_HDR)
	@mkdir -p build/inspect
	$(CC) $(CFLAGS) $(INSPECT_WFLAGS) -c $< -o $@

$(INSPECT_LIB): $(INSPECT_OBJ)
	@mkdir -p build
	rm -f $@ && ar rcs $@ $^

$(INSPECT_CLI): inspect/cli.c $(INSPECT_LIB) $(INSPECT_HDR)
	@mkdir -p build/bin
	$(CC) $(CFLAGS) $(INSPECT_WFLAGS) $(INSPECT_CFLAGS) inspect/cli.c $(INSPECT_LIB) $(INSPECT_LDLIBS) -o $@

# The reader and the CLI under AddressSanitizer/UBSan (tests/test_telemetry.py);
# part of `make asan`, with build/asan/bin/dynamo-top and build/asan/dynamo-dot.
INSPECT_ASAN_CLI := build/asan/dynamo-inspect
inspect-asan: $(INSPECT_ASAN_CLI)
$(INSPECT_ASAN_CLI): inspect/cli.c $(INSPECT_SRC) $(INSPECT_HDR)
	@mkdir -p build/asan
	$(CC) $(ASAN_FLAGS) $(INSPECT_WFLAGS) $(INSPECT_CFLAGS) inspect/cli.c $(INSPECT_SRC) $(INSPECT_LDLIBS) -o $@

# ---- fuzzing the reader (inspect/fuzz/) ---------------------------------------
# make fuzz-reader   libFuzzer target under clang (installed here, only for this
#                    target), seeded from real snapshots (build/fuzz/seeds), run
#                    for FUZZ_SECONDS (default 60; 0: build and seed only);
#                    findings go to build/fuzz/findings.
# make fuzz-replay   the same harness built by gcc under ASan/UBSan with a main()
#                    that reads the files named on its command line
#                    (tests/test_reader_fuzz.py; part of `make asan`).
FUZZ_HARNESS := inspect/fuzz/reader_fuzz.c
FUZZ_TOOL_SRC = tui/source.c tui/model.c tui/report.c tui/render.c tui/util.c tui/crt.c \
                tui/panel.c viz/list.c viz/select.c viz/vstr.c
FUZZ_BIN     := build/fuzz/reader_fuzz
FUZZ_REPLAY  := build/asan/fuzz-reader-replay
FUZZ_SEEDS   := build/fuzz/seeds
FUZZ_SECONDS ?= 60
FUZZ_CLANG   ?= clang
FUZZ_CFLAGS   = -std=c11 -D_GNU_SOURCE -Iinspect -Itui -Iviz $(TUI_CURSES_CFLAGS)

.PHONY: fuzz-reader fuzz-replay fuzz-deps
asan: $(FUZZ_REPLAY)
fuzz-replay: $(FUZZ_REPLAY)

fuzz-deps:
	@command -v $(FUZZ_CLANG) >/dev/null 2>&1 || { \
	  SUDO=$$( [ "$$(id -u)" = 0 ] || echo sudo ); \
	  $$SUDO apt-get update -qq && $$SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq clang; }

$(FUZZ_REPLAY): $(FUZZ_HARNESS) $(INSPECT_SRC) $(INSPECT_HDR) $(FUZZ_TOOL_SRC)
	@mkdir -p build/asan
	$(CC) $(ASAN_FLAGS) -DREPLAY_MAIN $(FUZZ_CFLAGS) $(FUZZ_HARNESS) $(INSPECT_SRC) $(FUZZ_TOOL_SRC) \
	    $(TUI_CURSES_LIBS) -lelf -o $@

$(FUZZ_BIN): $(FUZZ_HARNESS) $(INSPECT_SRC) $(INSPECT_HDR) $(FUZZ_TOOL_SRC)
	@mkdir -p build/fuzz
	$(FUZZ_CLANG) -g -O1 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined \
	    $(FUZZ_CFLAGS) $(FUZZ_HARNESS) $(INSPECT_SRC) $(FUZZ_TOOL_SRC) $(TUI_CURSES_LIBS) -lelf -o $@

$(FUZZ_SEEDS)/.stamp: inspect/fuzz/make_seeds.py $(EXT)
	$(VPY) inspect/fuzz/make_seeds.py $(FUZZ_SEEDS)
	touch $@

fuzz-reader: fuzz-deps all $(FUZZ_BIN) $(FUZZ_SEEDS)/.stamp
	@mkdir -p build/fuzz/corpus build/fuzz/findings
	@if [ "$(FUZZ_SECONDS)" != 0 ]; then \
	  $(FUZZ_BIN) -max_total_time=$(FUZZ_SECONDS) -timeout=10 -rss_limit_mb=4096 \
	      -max_len=1048576 -artifact_prefix=build/fuzz/findings/ -print_final_stats=1 \
	      build/fuzz/corpus $(FUZZ_SEEDS); \
	fi
