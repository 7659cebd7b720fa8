# readerfuzz/readerfuzz.mk — fuzzing the telemetry reader with what the
# tools do to its output (dynamo-top's model and report, dynamo-dot's
# listing): a floor above inspect/, tui/ and viz/, which it links together.
# Included by the top-level Makefile after inspect/, tui/ and viz/.
#
# make fuzz-reader   libFuzzer target under clang (installed here, only for this
#                    target), seeded from real snapshots (build/fuzz/seeds), run
#                    for FUZZ_SECONDS (default 60; 0: build and seed only);
#                    findings go to build/fuzz/findings.
# make fuzz-replay   the same harness built by gcc under ASan/UBSan with a main()
#                    that reads the files named on its command line
#                    (tests/test_reader_fuzz.py; part of `make asan`).
FUZZ_HARNESS := readerfuzz/reader_fuzz.c
FUZZ_TOOL_SRC = tui/source.c tui/model.c tui/report.c tui/render.c tui/util.c tui/crt.c \
                tui/panel.c viz/list.c viz/select.c viz/vstr.c viz/timeline.c
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

$(FUZZ_SEEDS)/.stamp: readerfuzz/make_seeds.py $(EXT)
	$(VPY) readerfuzz/make_seeds.py $(FUZZ_SEEDS)
	touch $@

fuzz-reader: fuzz-deps all $(FUZZ_BIN) $(FUZZ_SEEDS)/.stamp
	@mkdir -p build/fuzz/corpus build/fuzz/findings
	@if [ "$(FUZZ_SECONDS)" != 0 ]; then \
	  $(FUZZ_BIN) -max_total_time=$(FUZZ_SECONDS) -timeout=10 -rss_limit_mb=4096 \
	      -max_len=1048576 -artifact_prefix=build/fuzz/findings/ -print_final_stats=1 \
	      build/fuzz/corpus $(FUZZ_SEEDS); \
	fi
