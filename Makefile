# mkc: graph -> one CUDA megakernel -> NVRTC / CPU SIMT emulator.
CC ?= cc
CFLAGS ?= -O2 -g
CFLAGS += -std=c11 -D_GNU_SOURCE -Wall -Wextra -Wno-unused-parameter -MMD -MP
CFLAGS += -DMKC_SOURCE_DIR=\"$(CURDIR)\"
LUA_CFLAGS := $(shell pkg-config --cflags lua5.4 2>/dev/null || echo -I/usr/include/lua5.4)
LUA_LIBS := $(shell pkg-config --libs lua5.4 2>/dev/null || echo -llua5.4)
# -rdynamic: kernels compiled for the CPU backend call the SIMT emulator in the host binary.
LDLIBS := $(LUA_LIBS) -lm -ldl -lpthread -rdynamic

RUNTIME_SRC := $(filter-out runtime/main.c,$(wildcard runtime/*.c))
RUNTIME_OBJ := $(RUNTIME_SRC:runtime/%.c=build/obj/%.o)
TEST_SRC := $(wildcard tests/test_*.c)
TEST_BIN := $(TEST_SRC:tests/%.c=build/%)

all: build/mkc $(TEST_BIN)

build/obj/%.o: runtime/%.c
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(LUA_CFLAGS) -Iruntime -Itemplates -c $< -o $@

build/mkc: build/obj/main.o $(RUNTIME_OBJ)
	$(CC) $(CFLAGS) -o $@ $^ $(LDLIBS)

build/test_%: tests/test_%.c $(RUNTIME_OBJ)
	@mkdir -p build
	$(CC) $(CFLAGS) $(LUA_CFLAGS) -Iruntime -Itemplates -Itests -o $@ $^ $(LDLIBS)

test: all
	@bash tests/run.sh

# Installs the dependencies if missing, builds, and runs the demo.
demo:
	@bash .ci/install-deps
	@$(MAKE) --no-print-directory build/mkc
	@bash examples/demo.sh

# Rewrites the committed golden kernels: only when a change to them is meant.
golden: build/mkc
	for p in tiny odd llama-3.2-1b; do build/mkc gen graphs/llama.lua --preset $$p --draft-max 4 -o tests/golden/llama.$$p.cu; done

format:
	clang-format -i runtime/*.c runtime/*.h tests/*.c tests/*.h templates/*.h templates/*.cuh

clean:
	rm -rf build

.PHONY: all test demo golden format clean
-include $(wildcard build/obj/*.d build/*.d)
