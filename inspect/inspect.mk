# inspect/inspect.mk — telemetry: the writer (part of dynamo._C), the reader
# library build/libdynamo_inspect.a and the test/diagnostic CLI
# build/bin/dynamo-inspect.
#
# Tools link the reader with:  $(INSPECT_LIB) $(INSPECT_LDLIBS)
# and compile with:            $(INSPECT_CFLAGS)   (for "reader.h", "strutil.h")
# The library also carries strutil.c: checked allocation, StrBuf and fmt_ns,
# shared by dynamo-top and dynamo-dot.
# They may depend on $(INSPECT_LIB) in their rules (it is a file target).

EXT_SRC += inspect/telemetry.c inspect/image.c
EXT_HDR += inspect/layout.h inspect/telemetry.h inspect/image.h inspect/reader.h

INSPECT_LIB    := build/libdynamo_inspect.a
INSPECT_CFLAGS := -Iinspect
INSPECT_LDLIBS := -lelf
INSPECT_WFLAGS := -Wall -Wextra -Werror -Wshadow -std=c11 -D_GNU_SOURCE
INSPECT_SRC    := inspect/reader.c inspect/image.c inspect/value.c inspect/strutil.c
INSPECT_HDR    := inspect/layout.h inspect/reader.h inspect/image.h inspect/value.h inspect/strutil.h
INSPECT_OBJ    := $(patsubst inspect/%.c,build/inspect/%.o,$(INSPECT_SRC))
INSPECT_CLI    := build/bin/dynamo-inspect

TOOLS        += $(INSPECT_LIB) $(INSPECT_CLI)
INSTALL_BINS += $(INSPECT_CLI)

.PHONY: inspect-asan

build/inspect/%.o: inspect/%.c $(INSPECT_HDR)
	@mkdir -p build/inspect
	$(CC) $(CFLAGS) $(INSPECT_WFLAGS) -c $< -o $@

$(INSPECT_LIB): $(INSPECT_OBJ)
	@mkdir -p build
	rm -f $@ && ar rcs $@ $^

$(INSPECT_CLI): inspect/cli.c $(INSPECT_LIB) $(INSPECT_HDR)
	@mkdir -p build/bin
	$(CC) $(CFLAGS) $(INSPECT_WFLAGS) $(INSPECT_CFLAGS) inspect/cli.c $(INSPECT_LIB) $(INSPECT_LDLIBS) -o $@

# The reader and the CLI under AddressSanitizer/UBSan (tests/test_telemetry.py).
INSPECT_ASAN_CLI := build/asan/dynamo-inspect
inspect-asan: $(INSPECT_ASAN_CLI)
$(INSPECT_ASAN_CLI): inspect/cli.c $(INSPECT_SRC) $(INSPECT_HDR)
	@mkdir -p build/asan
	$(CC) $(ASAN_FLAGS) $(INSPECT_WFLAGS) $(INSPECT_CFLAGS) inspect/cli.c $(INSPECT_SRC) $(INSPECT_LDLIBS) -o $@
