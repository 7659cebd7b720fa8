# tui/tui.mk — dynamo-top, the ncurses view of a running dynamo process.
# Included by the top-level Makefile after inspect/inspect.mk (reader library).
#
#   build/bin/dynamo-top         normal build, warnings are errors
#   build/asan/bin/dynamo-top    AddressSanitizer + UBSan build (make tui-asan),
#                                with the reader sources compiled in under ASan too

TUI_SRC    := $(wildcard tui/*.c)
TUI_HDR    := $(wildcard tui/*.h)
TUI_BIN    := build/bin/dynamo-top
TUI_ASAN   := build/asan/bin/dynamo-top
TUI_WFLAGS := -Wall -Wextra -Werror -Wshadow -std=c11 -D_GNU_SOURCE
TUI_CURSES_CFLAGS := $(shell pkg-config --cflags ncursesw 2>/dev/null)
TUI_CURSES_LIBS   := $(or $(shell pkg-config --libs ncursesw 2>/dev/null),-lncursesw)

TOOLS        += $(TUI_BIN)
INSTALL_BINS += $(TUI_BIN)

.PHONY: tui-asan

$(TUI_BIN): $(TUI_SRC) $(TUI_HDR) $(INSPECT_LIB) inspect/reader.h inspect/snapshot.h inspect/record.h inspect/strutil.h
	@mkdir -p build/bin
	$(CC) $(CFLAGS) $(TUI_WFLAGS) $(TUI_CURSES_CFLAGS) -Iinspect $(TUI_SRC) \
	    $(INSPECT_LIB) $(TUI_CURSES_LIBS) -lelf -o $@

tui-asan: $(TUI_ASAN)
$(TUI_ASAN): $(TUI_SRC) $(TUI_HDR) $(INSPECT_SRC) $(INSPECT_HDR)
	@mkdir -p build/asan/bin
	$(CC) $(ASAN_FLAGS) $(TUI_WFLAGS) $(TUI_CURSES_CFLAGS) -Iinspect $(TUI_SRC) $(INSPECT_SRC) \
	    $(TUI_CURSES_LIBS) -lelf -o $@

# `make asan` builds the sanitizer variant of dynamo-top too.
asan: $(TUI_ASAN)
