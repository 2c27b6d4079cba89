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

# runtime/ is folders by concern (runtime/README.md); objects mirror them.
RUNTIME_SRC := $(filter-out runtime/cli/main.c,$(shell find runtime -name '*.c' | LC_ALL=C sort))
RUNTIME_OBJ := $(RUNTIME_SRC:runtime/%.c=build/obj/%.o)
TEST_SRC := $(wildcard tests/test_*.c)
TEST_BIN := $(TEST_SRC:tests/%.c=build/%)
TEST_OBJ := $(TEST_SRC:tests/%.c=build/obj/tests/%.o)

# A CUDA driver and an NVRTC double (tests/fake_cuda): the cuda backend's host
# code runs in make test on machines without a GPU.
FAKE_CUDA := build/fake_cuda/libcuda.so.1 build/fake_cuda/libnvrtc.so

all: build/mkc $(TEST_BIN) $(FAKE_CUDA) build/bench_constrain build/bench_cands build/bench_sample_more
# Named, so make keeps them (not intermediates) and their .d files count.
.SECONDARY: $(TEST_OBJ)

build/obj/%.o: runtime/%.c
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(DEP_CFLAGS) -Iruntime -Itemplates -c $< -o $@

build/mkc: build/obj/cli/main.o $(RUNTIME_OBJ)
	$(CC) $(CFLAGS) -o $@ $^ $(LDLIBS)

# Compiled apart from the link, so the object's .d names every header the
# test includes (tests/*.h too) and an edited header rebuilds the test.
build/obj/tests/%.o: tests/%.c
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(DEP_CFLAGS) -Iruntime -Itemplates -Itests -c $< -o $@

build/test_%: build/obj/tests/test_%.o $(RUNTIME_OBJ)
	@mkdir -p build
	$(CC) $(CFLAGS) -o $@ $^ $(LDLIBS)

# Hidden visibility: only the API entry points leave the library, so the host
# program's own symbols never interpose on the doubles' internals.
FAKE_CFLAGS = $(CFLAGS) -fPIC -shared -fvisibility=hidden
build/fake_cuda/libcuda.so.1: $(wildcard tests/fake_cuda/driver*.[ch]) tests/fake_cuda/fake.c tests/fake_cuda/fake.h
	@mkdir -p $(dir $@)
	$(CC) $(FAKE_CFLAGS) -o $@ $(filter %.c,$^) -ldl

build/fake_cuda/libnvrtc.so: tests/fake_cuda/nvrtc.c tests/fake_cuda/fake.c tests/fake_cuda/fake.h
	@mkdir -p $(dir $@)
	$(CC) $(FAKE_CFLAGS) -o $@ $(filter %.c,$^)

# The parser tests also run under ASan/UBSan (build/sanitize/test_*).
SANITIZE_NAMES := gguf safetensors tokenizer chat_template http tools constrain gbnf sample_chain
# Builds on every core (a sub-make: make 4.3 ignores a -j set in the makefile), then tests.
NPROC := $(shell nproc 2>/dev/null || echo 1)
test:
	@$(MAKE) --no-print-directory -j$(NPROC) all $(SANITIZE_TESTS) $(FUZZ_REPLAY)
	@bash tests/run.sh

# What constrained JSON output costs on the host (docs/PERF.md): not a test.
build/bench_constrain: build/obj/tests/bench_constrain.o $(RUNTIME_OBJ)
	$(CC) $(CFLAGS) -o $@ $^ $(LDLIBS)

# How much of the vocabulary the sampler's block reads (docs/DECISIONS.md): not a test.
build/bench_cands: build/obj/tests/bench_cands.o $(RUNTIME_OBJ)
	$(CC) $(CFLAGS) -o $@ $^ $(LDLIBS)

build/bench_sample_more: build/obj/tests/bench_sample_more.o $(RUNTIME_OBJ)
	$(CC) $(CFLAGS) -o $@ $^ $(LDLIBS)

# Fills a kernel cache for a GPU session ahead of it (tests/gpu/prime.sh).
build/prime_kcache: build/obj/tests/gpu/prime_kcache.o $(RUNTIME_OBJ)
	$(CC) $(CFLAGS) -o $@ $^ $(LDLIBS)

build/obj/tests/gpu/%.o: tests/gpu/%.c
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(DEP_CFLAGS) -Iruntime -Itemplates -Itests -c $< -o $@

# The GPU suite: says "skipped: no GPU" where there is none.
test-gpu: all
	@bash tests/gpu/run.sh

# The flow-protocol probe a GPU run starts with (tests/gpu/probe_flow.cu): nvcc, not NVRTC,
# since it is a whole program; not in all (CI has no need of nvcc).
build/probe_flow: tests/gpu/probe_flow.cu
	@mkdir -p build
	nvcc -O3 -arch=sm_90 -std=c++17 -o $@ $<

# Installs the dependencies if missing, builds, and runs the demo.
demo:
	@bash .ci/install-deps
	@$(MAKE) --no-print-directory build/mkc
	@bash examples/demo.sh

# Rewrites the committed golden kernels: only when a change to them is meant.
golden: build/mkc
	for p in tiny odd llama-3.2-1b; do build/mkc gen graphs/llama.lua --preset $$p --draft-max 4 -o tests/golden/llama.$$p.cu; done

format:
	clang-format -i $$(find runtime -name '*.[ch]') tests/*.c tests/*.h tests/fake_cuda/*.c tests/fake_cuda/*.h fuzz/*.c \
	  templates/*.h templates/*.cuh

clean:
	rm -rf build

.PHONY: all test test-gpu demo golden format clean
-include $(shell find build/obj -name '*.d' 2>/dev/null) $(wildcard build/*.d)

# Fuzzing the parsers of outside data (libFuzzer, clang): `make fuzz` runs
# each target FUZZ_SECONDS on its seeds in fuzz/corpus/NAME; new inputs go to
# build/fuzz/corpus/NAME, and what crashed or ran slow to build/fuzz/found/NAME-*
# (not the current folder). A target is fuzz/NAME_fuzz.c linked with the runtime.
FUZZ_CC ?= $(shell command -v clang-19 || command -v clang)
FUZZ_SECONDS ?= 60
FUZZ_NAMES := $(patsubst fuzz/%_fuzz.c,%,$(wildcard fuzz/*_fuzz.c))
SANITIZE := -fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer
FUZZ_RUNTIME := $(RUNTIME_SRC)

build/fuzz/%_fuzz: fuzz/%_fuzz.c $(FUZZ_RUNTIME)
	@if [ -z "$(FUZZ_CC)" ]; then echo "make fuzz: clang not found (apt-get install -y clang-19)"; exit 1; fi
	@mkdir -p $(dir $@)
	$(FUZZ_CC) -g -O1 -std=c11 -D_GNU_SOURCE -Wall -Wextra -Wno-unused-parameter -fsanitize=fuzzer \
	  $(SANITIZE) $(DEP_CFLAGS) -Iruntime -Itemplates -o $@ $^ $(DEP_LIBS) -lm -ldl -lpthread

fuzz: $(FUZZ_NAMES:%=build/fuzz/%_fuzz)
	@for n in $(FUZZ_NAMES); do \
	  mkdir -p build/fuzz/corpus/$$n build/fuzz/found; \
	  build/fuzz/$${n}_fuzz -max_total_time=$(FUZZ_SECONDS) -close_fd_mask=2 -print_final_stats=1 \
	    -artifact_prefix=build/fuzz/found/$$n- \
	    build/fuzz/corpus/$$n fuzz/corpus/$$n || exit 1; \
	done

# The parser tests under AddressSanitizer and UBSan (run by `make test`).
# The runtime is compiled once for all of them (build/sanitize/obj), not once per test.
SANITIZE_TESTS := $(SANITIZE_NAMES:%=build/sanitize/test_%)
SANITIZE_OBJ := $(RUNTIME_SRC:runtime/%.c=build/sanitize/obj/%.o)
# Kept, so a second make test does not compile the runtime with ASan again.
.SECONDARY: $(SANITIZE_NAMES:%=build/sanitize/obj/tests/test_%.o) $(SANITIZE_OBJ)

build/sanitize/obj/tests/%.o: tests/%.c
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(SANITIZE) $(DEP_CFLAGS) -Iruntime -Itemplates -Itests -c $< -o $@

build/sanitize/obj/%.o: runtime/%.c
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(SANITIZE) $(DEP_CFLAGS) -Iruntime -Itemplates -c $< -o $@

build/sanitize/test_%: build/sanitize/obj/tests/test_%.o $(SANITIZE_OBJ)
	$(CC) $(CFLAGS) $(SANITIZE) -o $@ $^ $(LDLIBS)

# The fuzz targets with fuzz/replay.c for a main, under the same sanitizers:
# tests/test_fuzz_replay.sh runs each on its seeds and fixed mutants of them.
FUZZ_REPLAY := $(FUZZ_NAMES:%=build/sanitize/fuzz_%)
.SECONDARY: $(FUZZ_NAMES:%=build/sanitize/obj/fuzz/%_fuzz.o) build/sanitize/obj/fuzz/replay.o

build/sanitize/obj/fuzz/%.o: fuzz/%.c
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(SANITIZE) $(DEP_CFLAGS) -Iruntime -Itemplates -c $< -o $@

build/sanitize/fuzz_%: build/sanitize/obj/fuzz/%_fuzz.o build/sanitize/obj/fuzz/replay.o $(SANITIZE_OBJ)
	$(CC) $(CFLAGS) $(SANITIZE) -o $@ $^ $(LDLIBS)

test-sanitize: $(SANITIZE_TESTS)
	@for t in $(SANITIZE_TESTS); do $$t || exit 1; done

.PHONY: fuzz test-sanitize
-include $(shell find build/sanitize -name '*.d' 2>/dev/null)
