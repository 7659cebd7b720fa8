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
EXT_HDR += inspect/layout.h inspect/record.h inspect/image.h inspect/errors.h inspect/procid.h

INSPECT_LIB    := build/libdynamo_inspect.a
INSPECT_CFLAGS := -Iinspect
INSPECT_LDLIBS := -lelf
INSPECT_WFLAGS := -Wall -Wextra -Werror -Wshadow -std=c11 -D_GNU_SOURCE
INSPECT_SRC    := inspect/reader.c inspect/snapshot.c inspect/image.c inspect/procid.c inspect/value.c inspect/strutil.c inspect/trace.c
INSPECT_HDR    := inspect/layout.h inspect/record.h inspect/errors.h inspect/reader.h inspect/snapshot.h inspect/snapshot_int.h inspect/image.h inspect/procid.h \
                  inspect/value.h inspect/strutil.h inspect/trace.h
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
