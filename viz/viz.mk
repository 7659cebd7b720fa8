# viz/viz.mk — dynamo-dot: Graphviz pictures of captured graphs, guard trees
# and graph-break maps, read through the inspect reader library.
#
#   make build/bin/dynamo-dot     the tool (part of `make all`, installed by `make install`)
#   make viz-asan                 build/asan/dynamo-dot under ASan/UBSan (also part of `make asan`)

VIZ_SRC    := $(wildcard viz/*.c)
VIZ_HDR    := $(wildcard viz/*.h)
VIZ_OBJ    := $(patsubst viz/%.c,build/viz/%.o,$(VIZ_SRC))
VIZ_BIN    := build/bin/dynamo-dot
VIZ_ASAN   := build/asan/dynamo-dot
VIZ_CFLAGS := -Wall -Wextra -Werror -Wshadow -std=c11 -D_GNU_SOURCE -Iinspect
VIZ_LDLIBS := -lgvc -lcgraph -lcdt -lelf

TOOLS        += $(VIZ_BIN)
INSTALL_BINS += $(VIZ_BIN)

.PHONY: viz-asan
asan: viz-asan
viz-asan: $(VIZ_ASAN)

build/viz/%.o: viz/%.c $(VIZ_HDR) inspect/reader.h inspect/snapshot.h inspect/record.h inspect/strutil.h inspect/trace.h
	@mkdir -p build/viz
	$(CC) $(CFLAGS) $(VIZ_CFLAGS) -c $< -o $@

$(VIZ_BIN): $(VIZ_OBJ) build/libdynamo_inspect.a
	@mkdir -p build/bin
	$(CC) $(CFLAGS) $(VIZ_OBJ) build/libdynamo_inspect.a $(VIZ_LDLIBS) -o $@

# The reader is compiled in from source so that it runs under the sanitizers too.
$(VIZ_ASAN): $(VIZ_SRC) $(VIZ_HDR) $(INSPECT_SRC) $(INSPECT_HDR)
	@mkdir -p build/asan
	$(CC) $(ASAN_FLAGS) $(VIZ_CFLAGS) $(VIZ_SRC) $(INSPECT_SRC) $(VIZ_LDLIBS) -o $@
