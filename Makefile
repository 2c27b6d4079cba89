# mkc: graph -> one CUDA megakernel -> NVRTC / CPU SIMT emulator.
CC ?= cc
CFLAGS ?= -O2 -g
CFLAGS += -std=c11 -D_GNU_SOURCE -Wall -Wextra -Wno-unused-parameter -MMD -MP
CFLAGS += -DMKC_SOURCE_DIR=\"$(CURDIR)\"
# Lua 5.4 (codegen) and cJSON (manifests, configs), from Debian.
DEP_CFLAGS := $(shell pkg-config --cflags lua5.4 2>/dev/null || echo -I/usr/include/lua5.4)
DEP_LIBS := $(shell pkg-config --libs lua5.4 2>/dev/null || echo -llua5.4)
DEP_CFLAGS += $(shell pkg-config --cflags libcjson 2>/dev/null || echo -I/usr/include/cjson)
DEP_LIBS += $(shell pkg-config --libs libcjson 2>/dev/null || echo -lcjson)
# -rdynamic: kernels compiled for the CPU backend call the SIMT emulator in the host binary.
LDLIBS := $(DEP_LIBS) -lm -ldl -lpthread -rdynamic

RUNTIME_SRC := $(filter-out runtime/main.c,$(wildcard runtime/*.c))
RUNTIME_OBJ := $(RUNTIME_SRC:runtime/%.c=build/obj/%.o)
TEST_SRC := $(wildcard tests/test_*.c)
TEST_BIN := $(TEST_SRC:tests/%.c=build/%)

all: build/mkc $(TEST_BIN)

build/obj/%.o: runtime/%.c
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(DEP_CFLAGS) -Iruntime -Itemplates -c $< -o $@

build/mkc: build/obj/main.o $(RUNTIME_OBJ)
	$(CC) $(CFLAGS) -o $@ $^ $(LDLIBS)

build/test_%: tests/test_%.c $(RUNTIME_OBJ)
	@mkdir -p build
	$(CC) $(CFLAGS) $(DEP_CFLAGS) -Iruntime -Itemplates -Itests -o $@ $^ $(LDLIBS)

# The parser tests also run under ASan/UBSan (build/sanitize/test_*).
test: all build/sanitize/test_gguf
	@bash tests/run.sh

# The GPU suite: says "skipped: no GPU" where there is none.
test-gpu: all
	@bash tests/gpu/run.sh

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

.PHONY: all test test-gpu demo golden format clean
-include $(wildcard build/obj/*.d build/*.d)

# Fuzzing the GGUF reader (libFuzzer, clang): `make fuzz` runs FUZZ_SECONDS
# on the seeds in fuzz/corpus/gguf; new inputs go to build/fuzz/corpus.
FUZZ_CC ?= $(shell command -v clang-19 || command -v clang)
FUZZ_SECONDS ?= 60
FUZZ_SRC := fuzz/gguf_fuzz.c runtime/gguf.c runtime/dequant.c runtime/weights.c runtime/hash.c
SANITIZE := -fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer

build/fuzz/gguf_fuzz: $(FUZZ_SRC) runtime/gguf.h runtime/dequant.h
	@if [ -z "$(FUZZ_CC)" ]; then echo "make fuzz: clang not found (apt-get install -y clang-19)"; exit 1; fi
	@mkdir -p $(dir $@)
	$(FUZZ_CC) -g -O1 -std=c11 -D_GNU_SOURCE -Wall -Wextra -fsanitize=fuzzer $(SANITIZE) \
	  -Iruntime -o $@ $(FUZZ_SRC) -lm

fuzz: build/fuzz/gguf_fuzz
	@mkdir -p build/fuzz/corpus
	build/fuzz/gguf_fuzz -max_total_time=$(FUZZ_SECONDS) -close_fd_mask=2 -print_final_stats=1 \
	  build/fuzz/corpus fuzz/corpus/gguf

# The GGUF test under AddressSanitizer and UBSan.
build/sanitize/test_gguf: tests/test_gguf.c $(RUNTIME_SRC)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(SANITIZE) $(DEP_CFLAGS) -Iruntime -Itemplates -Itests -o $@ $^ $(LDLIBS)

test-sanitize: build/sanitize/test_gguf
	build/sanitize/test_gguf

.PHONY: fuzz test-sanitize
-include $(wildcard build/sanitize/*.d)
