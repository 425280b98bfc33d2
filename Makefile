# cubert: the CubeCL runtime in C99.  `make help` lists every target.
#
#   make            libcubert.a, libcubert.so.MAJOR (+ symlinks), cubert.pc
#   make run        the main demo (CPU server)
#   make test       build and run the test suite (closing line "N passed, N failed")
#   make check      test + check-freestanding + check-headers + check-32bit + check-cortex-m
#                   + check-install + fuzz-replay + check-tools (+ check-clang when clang is installed)
#   make bench      benchmarks (ratios to peers measured in the same run; docs/benchmarks.md)
#   make asan|tsan  the test suite under sanitizers
#   make fuzz       libFuzzer targets (clang), FUZZ_SECONDS each; fuzz-replay replays the corpus
#   make size       core code size, host and Cortex-M4
#   make install / uninstall   (PREFIX, DESTDIR, libdir, includedir, pkgconfigdir)
#   make CUDA=1 ... also build the CUDA server (libcuda loaded at run time)

# ---- user-overridable -------------------------------------------------------
CC ?= cc
CXX ?= c++
AR ?= ar
CFLAGS ?= -O2 -g
LDFLAGS ?=
PREFIX ?= /usr/local
DESTDIR ?=
libdir ?= $(PREFIX)/lib
includedir ?= $(PREFIX)/include
pkgconfigdir ?= $(libdir)/pkgconfig
BUILD ?= build
CUDA ?= 0
CUDA_INCLUDE ?= /usr/local/cuda/include
ARM_CC ?= arm-none-eabi-gcc
ARM_SIZE ?= arm-none-eabi-size
ARM_NM ?= arm-none-eabi-nm
NM ?= nm
QEMU_I386 ?= qemu-i386
SIZE ?= size
READELF ?= readelf
CLANG ?= clang
CLANGXX ?= clang++
# Fuzzing: libFuzzer needs clang; FUZZ_SECONDS per target (make fuzz).
FUZZ_CC ?= $(CLANG)
FUZZ_SECONDS ?= 30
# Extra flags for a whole build variant (sanitizers); kept apart from CFLAGS.
VARIANT_FLAGS ?=

# ---- project-owned (never overwritten by the user's CFLAGS) ------------------
MAJOR := $(shell sed -n 's/^\#define CUBERT_VERSION_MAJOR \([0-9]*\).*/\1/p' include/cubert/base.h)
MINOR := $(shell sed -n 's/^\#define CUBERT_VERSION_MINOR \([0-9]*\).*/\1/p' include/cubert/base.h)
PATCH := $(shell sed -n 's/^\#define CUBERT_VERSION_PATCH \([0-9]*\).*/\1/p' include/cubert/base.h)
VERSION := $(MAJOR).$(MINOR).$(PATCH)

CUBERT_WARN := -std=c99 -pedantic -Wall -Wextra -Werror -Wshadow -Wundef -Wstrict-prototypes \
  -Wmissing-prototypes -Wold-style-definition -Wwrite-strings -Wcast-align -Wvla \
  -Wpointer-arith -Wdeclaration-after-statement -Wmissing-declarations
CUBERT_CFLAGS := $(CUBERT_WARN) -Iinclude -fvisibility=hidden -fPIC $(VARIANT_FLAGS)
CORE_FREESTANDING := -ffreestanding -nostdinc -isystem $(shell $(CC) -print-file-name=include)
HOST_DEFS := -D_POSIX_C_SOURCE=200809L -D_DEFAULT_SOURCE
HOST_LIBS := -lpthread -ldl -lm

CORE_SRC := $(sort $(wildcard core/*.c))
HOST_SRC := $(sort $(wildcard backend-cpu/*.c))
CUDA_SRC :=
ifeq ($(CUDA),1)
CUDA_SRC := $(sort $(wildcard backend-cuda/*.c))
CUBERT_CFLAGS += -DCUBERT_HAVE_BACKEND_CUDA=1
endif

CORE_OBJ := $(CORE_SRC:%.c=$(BUILD)/obj/%.o)
HOST_OBJ := $(HOST_SRC:%.c=$(BUILD)/obj/%.o)
CUDA_OBJ := $(CUDA_SRC:%.c=$(BUILD)/obj/%.o)
LIB_OBJ := $(CORE_OBJ) $(HOST_OBJ) $(CUDA_OBJ)

STATIC_LIB := $(BUILD)/libcubert.a
SHARED_LIB := $(BUILD)/libcubert.so.$(VERSION)
SONAME := libcubert.so.$(MAJOR)
PC_FILE := $(BUILD)/cubert.pc

SUPPORT_SRC := $(sort $(wildcard tests/support/*.c))
UNIT_SRC := $(sort $(wildcard tests/unit/*.c))
CTS_SRC := $(sort $(wildcard tests/cts/*.c tests/host/*.c tests/sim/*.c))
TEST_OBJ := $(SUPPORT_SRC:%.c=$(BUILD)/obj/%.o) $(UNIT_SRC:%.c=$(BUILD)/obj/%.o) \
            $(CTS_SRC:%.c=$(BUILD)/obj/%.o)
TEST_BIN := $(BUILD)/cubert-test

EXAMPLE_SRC := $(sort $(wildcard examples/*.c))
EXAMPLE_BIN := $(EXAMPLE_SRC:examples/%.c=$(BUILD)/examples/%)
BENCH_SRC := $(sort $(wildcard bench/*.c))
BENCH_BIN := $(BENCH_SRC:bench/%.c=$(BUILD)/bench/%)
TOOL_SRC := $(sort $(wildcard tools/*.c))
TOOL_BIN := $(TOOL_SRC:tools/%.c=$(BUILD)/tools/%)

.PHONY: all test check run bench benches size install uninstall clean check-freestanding \
        check-headers check-32bit check-cortex-m check-clang check-install check-tools asan tsan examples \
        tools fuzz fuzz-build fuzz-replay fuzz-targets help
.DEFAULT_GOAL := all

all: $(STATIC_LIB) $(SHARED_LIB) $(PC_FILE)

# ---- objects -------------------------------------------------------------------
# core/ is compiled freestanding in every build: only the compiler's headers.
$(BUILD)/obj/core/%.o: core/%.c $(wildcard include/cubert/*.h core/*.h) | $(BUILD)/obj/core
	$(CC) $(CUBERT_CFLAGS) $(CORE_FREESTANDING) $(CFLAGS) -c $< -o $@

$(BUILD)/obj/backend-cpu/%.o: backend-cpu/%.c $(wildcard include/cubert/*.h core/*.h backend-cpu/*.h) | $(BUILD)/obj/backend-cpu
	$(CC) $(CUBERT_CFLAGS) $(HOST_DEFS) $(CFLAGS) -c $< -o $@

$(BUILD)/obj/backend-cuda/%.o: backend-cuda/%.c $(wildcard include/cubert/*.h core/*.h backend-cuda/*.h) | $(BUILD)/obj/backend-cuda
	$(CC) $(CUBERT_CFLAGS) $(HOST_DEFS) -I$(CUDA_INCLUDE) $(CFLAGS) -c $< -o $@

# Tests, examples, benches and tools are hosted code (they may use libc).
$(BUILD)/obj/tests/%.o: tests/%.c $(wildcard include/cubert/*.h core/*.h backend-cpu/*.h tests/support/*.h tests/cts/*.h tests/sim/*.h) | $(BUILD)/obj/tests/support $(BUILD)/obj/tests/unit $(BUILD)/obj/tests/cts $(BUILD)/obj/tests/host $(BUILD)/obj/tests/sim
	$(CC) $(CUBERT_CFLAGS) $(HOST_DEFS) -Itests/support -Icore -Ibackend-cpu $(CFLAGS) -c $< -o $@

# Fuzz targets and the standalone replay main are hosted code too.
$(BUILD)/obj/fuzz/%.o: fuzz/%.c $(wildcard include/cubert/*.h fuzz/*.h tests/cts/cts_kernels.h) | $(BUILD)/obj/fuzz
	$(CC) $(CUBERT_CFLAGS) $(HOST_DEFS) -Ifuzz -Icore $(CFLAGS) -c $< -o $@

$(BUILD)/obj/core $(BUILD)/obj/backend-cpu $(BUILD)/obj/backend-cuda $(BUILD)/obj/tests/support \
$(BUILD)/obj/tests/unit $(BUILD)/obj/tests/cts $(BUILD)/obj/tests/host $(BUILD)/obj/tests/sim $(BUILD)/examples \
$(BUILD)/bench $(BUILD)/tools $(BUILD)/freestanding $(BUILD)/headers $(BUILD)/cortex-m \
$(BUILD)/obj/fuzz $(BUILD)/fuzz:
	mkdir -p $@

# ---- libraries -------------------------------------------------------------------
$(STATIC_LIB): $(LIB_OBJ)
	rm -f $@
	$(AR) rcs $@ $^

$(SHARED_LIB): $(LIB_OBJ)
	$(CC) -shared -Wl,-soname,$(SONAME) $(if $(VARIANT_FLAGS),,-Wl,-z,defs) $(VARIANT_FLAGS) $(LDFLAGS) -o $@ $^ $(HOST_LIBS)
	ln -sf libcubert.so.$(VERSION) $(BUILD)/$(SONAME)
	ln -sf $(SONAME) $(BUILD)/libcubert.so

$(PC_FILE): cubert.pc.in include/cubert/base.h
	sed -e 's|@PREFIX@|$(PREFIX)|' -e 's|@LIBDIR@|$(libdir)|' -e 's|@INCLUDEDIR@|$(includedir)|' \
	    -e 's|@VERSION@|$(VERSION)|' $< > $@

# ---- tests ---------------------------------------------------------------------------
$(TEST_BIN): $(TEST_OBJ) $(STATIC_LIB)
	$(CC) $(VARIANT_FLAGS) $(CFLAGS) $(LDFLAGS) -o $@ $(TEST_OBJ) $(STATIC_LIB) $(HOST_LIBS)

# TEST_WRAPPER runs the suite under a command (the sanitizer targets use setarch -R).
TEST_WRAPPER ?=
test: $(TEST_BIN)
	$(TEST_WRAPPER) $(TEST_BIN) $(TESTS)

# ---- examples, benches, tools --------------------------------------------------------
BENCH_SUPPORT_OBJ := $(filter-out $(BUILD)/obj/tests/support/runner.o,$(SUPPORT_SRC:%.c=$(BUILD)/obj/%.o))

$(BUILD)/examples/%: examples/%.c $(wildcard examples/*.h) $(STATIC_LIB) | $(BUILD)/examples
	$(CC) $(CUBERT_CFLAGS) $(HOST_DEFS) $(CFLAGS) $(LDFLAGS) -o $@ $< $(STATIC_LIB) $(HOST_LIBS)

$(BUILD)/bench/%: bench/%.c $(wildcard bench/*.h core/*.h backend-cpu/*.h) $(BENCH_SUPPORT_OBJ) $(STATIC_LIB) | $(BUILD)/bench
	$(CC) $(CUBERT_CFLAGS) $(HOST_DEFS) -Icore -Ibackend-cpu -Itests/support $(BENCH_EXTRA_CFLAGS) $(CFLAGS) $(LDFLAGS) -o $@ $< $(BENCH_SUPPORT_OBJ) $(STATIC_LIB) $(BENCH_EXTRA_LIBS) $(HOST_LIBS)

# bench/bench_peers.c's optional peers, probed with $(CC) once per make run (the
# rows of a peer found neither here nor at run time print "skipped: <reason>"):
# OpenCL (CL/cl.h + libOpenCL: PoCL through the ICD loader) and OpenMP (-fopenmp).
# $(BUILD)/bench/peers.flags changes only when a probe's answer does, and then
# bench_peers is rebuilt. `make BENCH_HAVE_OPENCL=0 BENCH_HAVE_OPENMP=0 benches`
# builds without them.
BENCH_PROBE = $(shell printf '$(1)' | $(CC) -x c - -o /dev/null $(2) 2>/dev/null && echo 1 || echo 0)
BENCH_OPENCL_SRC := \#define CL_TARGET_OPENCL_VERSION 120\n\#include <CL/cl.h>\nint main(void) { return (int)clGetPlatformIDs(0, 0, 0); }\n
BENCH_OPENMP_SRC := \#include <omp.h>\nint main(void) { return omp_get_max_threads() < 1; }\n
BENCH_HAVE_OPENCL = $(eval BENCH_HAVE_OPENCL := $(call BENCH_PROBE,$(BENCH_OPENCL_SRC),-lOpenCL))$(BENCH_HAVE_OPENCL)
BENCH_HAVE_OPENMP = $(eval BENCH_HAVE_OPENMP := $(call BENCH_PROBE,$(BENCH_OPENMP_SRC),-fopenmp))$(BENCH_HAVE_OPENMP)
BENCH_PEER_CFLAGS = -DBENCH_HAVE_OPENCL=$(BENCH_HAVE_OPENCL) -DBENCH_HAVE_OPENMP=$(BENCH_HAVE_OPENMP) \
  $(if $(filter 1,$(BENCH_HAVE_OPENMP)),-fopenmp)
BENCH_PEER_LIBS = $(if $(filter 1,$(BENCH_HAVE_OPENCL)),-lOpenCL)
$(BUILD)/bench/peers.flags: FORCE | $(BUILD)/bench
	@printf '%s\n' '$(strip $(BENCH_PEER_CFLAGS) $(BENCH_PEER_LIBS))' | cmp -s - $@ || \
	  printf '%s\n' '$(strip $(BENCH_PEER_CFLAGS) $(BENCH_PEER_LIBS))' > $@
$(BUILD)/bench/bench_peers: $(BUILD)/bench/peers.flags
$(BUILD)/bench/bench_peers: BENCH_EXTRA_CFLAGS = $(BENCH_PEER_CFLAGS)
$(BUILD)/bench/bench_peers: BENCH_EXTRA_LIBS = $(BENCH_PEER_LIBS)
.PHONY: FORCE
FORCE:

$(BUILD)/tools/%: tools/%.c tests/cts/cts_kernels.h $(STATIC_LIB) | $(BUILD)/tools
	$(CC) $(CUBERT_CFLAGS) $(HOST_DEFS) $(CFLAGS) $(LDFLAGS) -o $@ $< $(STATIC_LIB) $(HOST_LIBS)

examples: $(EXAMPLE_BIN)
tools: $(TOOL_BIN)
benches: $(BENCH_BIN)

run: $(EXAMPLE_BIN)
	$(BUILD)/examples/demo

# Installs the peers' Debian packages when missing (root + apt-get; tools/bench_peers.sh),
# builds every bench/*.c in a sub-make (so the peer probes see the fresh packages), runs
# each in turn (BENCH_ARGS are passed to each) with its rows appended to BENCH_CSV, then
# prints the combined table and writes the plot (tools/bench_report.py: BENCH_SVG).
# BENCH_EXTRA_CSV: more result files with the same columns to join the table and the
# plot (e.g. GPU rows, a run on another machine).
BENCH_CSV ?= $(BUILD)/bench/results.csv
BENCH_EXTRA_CSV ?=
BENCH_SVG ?= $(BUILD)/bench/bench.svg
bench:
	@CC='$(CC)' sh tools/bench_peers.sh
	@$(MAKE) --no-print-directory benches
	@rm -f $(BENCH_CSV)
	@set -e; for b in $(BENCH_BIN); do echo "== $$b $(BENCH_ARGS)"; \
	  CUBERT_BENCH_CSV=$(BENCH_CSV) $$b $(BENCH_ARGS); echo; done
	@if command -v python3 >/dev/null; then python3 tools/bench_report.py $(BENCH_CSV) $(BENCH_EXTRA_CSV) --svg $(BENCH_SVG); \
	else echo "skipped: combined table and plot (python3 not found; Debian: python3)"; fi

# Deterministic simulation sweep (tools/cubert_sim.c, docs/simulation.md): SEEDS seeds, each twice.
SEEDS ?= 100000
.PHONY: sim
sim: $(BUILD)/tools/cubert_sim
	$(BUILD)/tools/cubert_sim $(SEEDS)

# ---- checks ---------------------------------------------------------------------------
HAVE_CLANG := $(shell command -v $(CLANG) 2>/dev/null)
check: test check-freestanding check-headers check-32bit check-cortex-m check-install fuzz-replay \
       check-tools $(if $(HAVE_CLANG),check-clang)
	@echo "check: ok$(if $(HAVE_CLANG),, (check-clang skipped: $(CLANG) not found; Debian: apt-get install clang))"

# memcpy/memset/memmove (emitted for the builtins) and the compiler's own runtime
# (libgcc / compiler-rt: 64-bit division on 32-bit targets, __aeabi_* on ARM).
FREESTANDING_ALLOW := memcpy memset memmove
COMPILER_RT_ALLOW := __aeabi_[A-Za-z0-9_]+|__u?(div|mod|divmod|cmp)[sdt]i[0-9]|__(mul|ash[lr]|lshr|neg|clz|ctz|popcount|ffs|parity|bswap)[sdt]i[0-9]|_GLOBAL_OFFSET_TABLE_
FREESTANDING_ALLOW_RE := $(subst $() ,|,$(FREESTANDING_ALLOW))|$(COMPILER_RT_ALLOW)
# The only core files allowed to hold mutable static data (DESIGN.md: the device registry).
FREESTANDING_STATE_ALLOW := device_registry
CHECK_FREESTANDING := sh tests/build/check_freestanding.sh \
  --allow-undef '$(FREESTANDING_ALLOW_RE)' --allow-desc '$(FREESTANDING_ALLOW) + compiler runtime' \
  --allow-state '$(FREESTANDING_STATE_ALLOW)'

# Scans core/ (and the public headers it includes) for forbidden includes and
# calls, then compiles every core file freestanding (-nostdinc, no PIC so const
# tables land in .rodata) and checks its undefined symbols and mutable data.
check-freestanding: | $(BUILD)/freestanding
	@$(CHECK_FREESTANDING) --sources --label check-freestanding --cc '$(CC)' --nm '$(NM)' \
	  --out $(BUILD)/freestanding \
	  --cflags '$(CUBERT_WARN) -Iinclude -O2 -fno-pic -fno-stack-protector $(CORE_FREESTANDING)' \
	  $(CORE_SRC)

check-headers: | $(BUILD)/headers
	@set -e; for h in include/cubert/*.h; do \
	  n=$$(basename $$h .h); \
	  printf '#include "cubert/%s.h"\n' $$n > $(BUILD)/headers/$$n.c; \
	  $(CC) $(CUBERT_WARN) -Iinclude -c $(BUILD)/headers/$$n.c -o $(BUILD)/headers/$$n.o; \
	  cp $(BUILD)/headers/$$n.c $(BUILD)/headers/$$n.cpp; \
	  $(CXX) -std=c++11 -pedantic -Wall -Wextra -Werror -Iinclude -c $(BUILD)/headers/$$n.cpp -o $(BUILD)/headers/$$n.cpp.o; \
	done; echo "check-headers: ok ($$(ls include/cubert/*.h | wc -l) headers, C99 and C++11)"

# tools/cubert-info lists every device it creates and refuses a bad option (exit 2).
check-tools: $(TOOL_BIN)
	@out=$$($(BUILD)/tools/cubert-info -n 2) || { echo "check-tools: cubert-info -n 2 failed"; exit 1; }; \
	  n=$$(printf '%s\n' "$$out" | grep -c '^Device '); \
	  [ "$$n" = 2 ] || { echo "check-tools: cubert-info -n 2 listed $$n devices, expected 2"; exit 1; }; \
	  printf '%s\n' "$$out" | grep -q 'Memory pools' || { echo "check-tools: no memory pool layout printed"; exit 1; }; \
	  rc=0; $(BUILD)/tools/cubert-info --no-such-option >/dev/null 2>&1 || rc=$$?; \
	  [ "$$rc" = 2 ] || { echo "check-tools: a bad option exited $$rc, expected 2"; exit 1; }; \
	  echo "check-tools: ok (cubert-info: 2 devices listed with their pool layout; a bad option exits 2)"

# The core's unit tests, built and run as 32-bit code (size_t is 32 bits).
check-32bit:
	@printf 'int main(void) { return 0; }\n' | $(CC) -m32 -x c - -o /dev/null 2>/dev/null || \
	  { echo "check-32bit: $(CC) -m32 cannot link (Debian: apt-get install gcc-multilib)"; exit 1; }
	@$(MAKE) --no-print-directory BUILD=$(BUILD)/m32 VARIANT_FLAGS=-m32 $(BUILD)/m32/cubert-unit-test
	@$(READELF) -h $(BUILD)/m32/cubert-unit-test | grep -q 'Class: *ELF32' || \
	  { echo "check-32bit: $(BUILD)/m32/cubert-unit-test is not a 32-bit program"; exit 1; }
	@# A kernel without IA-32 emulation cannot exec the program: run it under qemu-i386 then.
	@if printf 'int main(void) { return 0; }\n' | $(CC) -m32 -x c - -o $(BUILD)/m32/probe 2>/dev/null && \
	    $(BUILD)/m32/probe 2>/dev/null; then \
	  echo "$(BUILD)/m32/cubert-unit-test $(TESTS)"; $(BUILD)/m32/cubert-unit-test $(TESTS); \
	elif command -v $(QEMU_I386) >/dev/null 2>&1; then \
	  echo "check-32bit: this kernel cannot run 32-bit programs; running under $(QEMU_I386)"; \
	  $(QEMU_I386) $(BUILD)/m32/cubert-unit-test $(TESTS); \
	else \
	  echo "check-32bit: this kernel cannot run 32-bit programs and $(QEMU_I386) is not installed (Debian: apt-get install qemu-user)"; exit 1; \
	fi

UNIT_ONLY_OBJ := $(SUPPORT_SRC:%.c=$(BUILD)/obj/%.o) $(UNIT_SRC:%.c=$(BUILD)/obj/%.o)
$(BUILD)/cubert-unit-test: $(UNIT_ONLY_OBJ) $(CORE_OBJ)
	$(CC) $(VARIANT_FLAGS) $(CFLAGS) $(LDFLAGS) -o $@ $^ $(HOST_LIBS)

CORTEX_FLAGS = -mcpu=cortex-m4 -mthumb -Os -ffreestanding -nostdinc \
  -isystem $(shell $(ARM_CC) -print-file-name=include 2>/dev/null) -ffunction-sections -fdata-sections
check-cortex-m: | $(BUILD)/cortex-m
	@command -v $(ARM_CC) >/dev/null || { echo "check-cortex-m: $(ARM_CC) not found (Debian: apt-get install gcc-arm-none-eabi)"; exit 1; }
	@$(CHECK_FREESTANDING) --label check-cortex-m --cc '$(ARM_CC)' --nm '$(ARM_NM)' \
	  --out $(BUILD)/cortex-m --cflags '$(CUBERT_WARN) -Iinclude $(CORTEX_FLAGS)' $(CORE_SRC)

# The whole library, tests, examples, tools and benches with clang (own BUILD dir),
# plus the freestanding and header checks with clang/clang++.
check-clang:
	@command -v $(CLANG) >/dev/null || { echo "check-clang: $(CLANG) not found (Debian: apt-get install clang)"; exit 1; }
	@$(MAKE) --no-print-directory CC=$(CLANG) CXX=$(CLANGXX) BUILD=$(BUILD)/clang \
	  all examples tools benches fuzz-targets check-freestanding check-headers
	@$(MAKE) --no-print-directory CC=$(CLANG) CXX=$(CLANGXX) BUILD=$(BUILD)/clang test

# Installs into a temporary DESTDIR, checks the tree (headers, .a, .so symlink
# chain, soname, cubert.pc, exported symbols), builds and runs a consumer
# through pkg-config (static and shared), then uninstalls.
check-install: all
	@CC='$(CC)' MAKE='$(MAKE)' BUILD='$(BUILD)' NM='$(NM)' READELF='$(READELF)' \
	  sh tests/build/test_install.sh

size: $(CORE_OBJ) check-cortex-m
	@echo "== core, host ($(CC) $(CFLAGS))"; $(SIZE) -t $(CORE_OBJ) | sed -n '1p;$$p'
	@echo "== core, Cortex-M4 ($(ARM_CC) -mcpu=cortex-m4 -mthumb -Os)"; \
	  $(ARM_SIZE) -t $(BUILD)/cortex-m/*.o | sed -n '1p;$$p'

# ---- sanitizers -------------------------------------------------------------------------
# Sanitizer runtimes of this toolchain generation can fail on kernels with 32 bits of
# mmap randomization ("unexpected memory mapping"); the suite runs with ASLR off when
# setarch can do that here.
SAN_WRAPPER = $(shell setarch $$(uname -m) -R true >/dev/null 2>&1 && echo setarch $$(uname -m) -R)
asan:
	$(MAKE) BUILD=$(BUILD)/asan CFLAGS="-O1 -g -fno-omit-frame-pointer" \
	  VARIANT_FLAGS="-fsanitize=address,undefined -fno-sanitize-recover=undefined" \
	  TEST_WRAPPER="$(SAN_WRAPPER)" test
tsan:
	$(MAKE) BUILD=$(BUILD)/tsan CFLAGS="-O1 -g" VARIANT_FLAGS="-fsanitize=thread" \
	  TEST_WRAPPER="$(SAN_WRAPPER)" test

# ---- fuzzing ------------------------------------------------------------------------------
# Every fuzz/fuzz_NAME.c defines LLVMFuzzerTestOneInput (declared in fuzz/fuzz.h);
# fuzz/corpus/NAME/ holds its seed corpus. See fuzz/README.md.
FUZZ_SRC := $(sort $(wildcard fuzz/fuzz_*.c))
FUZZ_NAMES := $(FUZZ_SRC:fuzz/fuzz_%.c=%)
FUZZ_BIN := $(FUZZ_NAMES:%=$(BUILD)/fuzz/fuzz_%)
# Replay builds link the standalone main; libFuzzer builds set these two empty / -fsanitize=fuzzer.
FUZZ_MAIN_OBJ ?= $(BUILD)/obj/fuzz/standalone_main.o
FUZZ_LDFLAGS ?=
FUZZ_SAN := -fsanitize=address,undefined -fno-sanitize-recover=undefined

$(BUILD)/fuzz/fuzz_%: $(BUILD)/obj/fuzz/fuzz_%.o $(FUZZ_MAIN_OBJ) $(STATIC_LIB) | $(BUILD)/fuzz
	$(CC) $(VARIANT_FLAGS) $(FUZZ_LDFLAGS) $(CFLAGS) $(LDFLAGS) -o $@ $< $(FUZZ_MAIN_OBJ) $(STATIC_LIB) $(HOST_LIBS)

fuzz-targets: $(FUZZ_BIN)
.PRECIOUS: $(BUILD)/obj/fuzz/%.o

# Replay: the regular CC, every target fed its seed corpus (and the empty input).
# With VARIANT_FLAGS (sanitizers) it runs like the sanitizer suites (ASLR off).
FUZZ_REPLAY_WRAPPER = $(if $(VARIANT_FLAGS),$(SAN_WRAPPER))
fuzz-replay: $(FUZZ_BIN)
	@set -e; for n in $(FUZZ_NAMES); do \
	  if [ -d fuzz/corpus/$$n ]; then $(FUZZ_REPLAY_WRAPPER) $(BUILD)/fuzz/fuzz_$$n fuzz/corpus/$$n; \
	  else $(FUZZ_REPLAY_WRAPPER) $(BUILD)/fuzz/fuzz_$$n; fi; \
	done; echo "fuzz-replay: ok ($(words $(FUZZ_NAMES)) targets)"

# libFuzzer builds (clang, ASan + UBSan, coverage on the library too) in $(BUILD)/libfuzzer.
fuzz-build:
	@command -v $(FUZZ_CC) >/dev/null || { echo "fuzz: $(FUZZ_CC) not found (Debian: apt-get install clang)"; exit 1; }
	@$(MAKE) --no-print-directory CC=$(FUZZ_CC) BUILD=$(BUILD)/libfuzzer CFLAGS="-O1 -g -fno-omit-frame-pointer" \
	  VARIANT_FLAGS="-fsanitize=fuzzer-no-link $(FUZZ_SAN)" FUZZ_MAIN_OBJ= FUZZ_LDFLAGS=-fsanitize=fuzzer \
	  fuzz-targets

# Runs each target FUZZ_SECONDS; new inputs go to $(BUILD)/libfuzzer/corpus/NAME,
# crashes to $(BUILD)/libfuzzer/artifacts/. FUZZ_ARGS adds libFuzzer flags.
fuzz: fuzz-build
	@set -e; for n in $(FUZZ_NAMES); do \
	  mkdir -p $(BUILD)/libfuzzer/corpus/$$n $(BUILD)/libfuzzer/artifacts; \
	  seeds=; [ -d fuzz/corpus/$$n ] && seeds=fuzz/corpus/$$n; \
	  echo "== fuzz_$$n for $(FUZZ_SECONDS) s"; \
	  log=$(BUILD)/libfuzzer/fuzz_$$n.log; \
	  if $(SAN_WRAPPER) $(BUILD)/libfuzzer/fuzz/fuzz_$$n -max_total_time=$(FUZZ_SECONDS) -timeout=25 -print_final_stats=1 \
	    -artifact_prefix=$(BUILD)/libfuzzer/artifacts/$$n- $(FUZZ_ARGS) \
	    $(BUILD)/libfuzzer/corpus/$$n $$seeds > $$log 2>&1; then tail -n 14 $$log; \
	  else tail -n 80 $$log; echo "fuzz: fuzz_$$n FAILED (log $$log, inputs in $(BUILD)/libfuzzer/artifacts/)"; exit 1; fi; \
	done; echo "fuzz: ok ($(words $(FUZZ_NAMES)) targets, $(FUZZ_SECONDS) s each)"

# ---- install ------------------------------------------------------------------------------
# cubert.pc is written at install time so that PREFIX/libdir given to `make install`
# are the ones recorded, whatever the library was built with.
install: all
	install -d $(DESTDIR)$(libdir) $(DESTDIR)$(includedir)/cubert $(DESTDIR)$(pkgconfigdir)
	install -m 644 include/cubert/*.h $(DESTDIR)$(includedir)/cubert/
	install -m 644 $(STATIC_LIB) $(DESTDIR)$(libdir)/
	install -m 755 $(SHARED_LIB) $(DESTDIR)$(libdir)/
	ln -sf libcubert.so.$(VERSION) $(DESTDIR)$(libdir)/$(SONAME)
	ln -sf $(SONAME) $(DESTDIR)$(libdir)/libcubert.so
	sed -e 's|@PREFIX@|$(PREFIX)|' -e 's|@LIBDIR@|$(libdir)|' -e 's|@INCLUDEDIR@|$(includedir)|' \
	    -e 's|@VERSION@|$(VERSION)|' cubert.pc.in > $(DESTDIR)$(pkgconfigdir)/cubert.pc
	chmod 644 $(DESTDIR)$(pkgconfigdir)/cubert.pc

uninstall:
	rm -f $(DESTDIR)$(libdir)/libcubert.a $(DESTDIR)$(libdir)/libcubert.so \
	  $(DESTDIR)$(libdir)/$(SONAME) $(DESTDIR)$(libdir)/libcubert.so.$(VERSION) \
	  $(DESTDIR)$(pkgconfigdir)/cubert.pc
	rm -rf $(DESTDIR)$(includedir)/cubert

clean:
	rm -rf $(BUILD)

# ---- help ---------------------------------------------------------------------------------
help:
	@echo 'cubert $(VERSION). Targets (BUILD=$(BUILD); every output goes under it):'
	@echo '  all (default)       libcubert.a, libcubert.so.$(VERSION) + symlinks, cubert.pc'
	@echo '  run                 build the examples and run examples/demo'
	@echo '  test                build and run the suite; TESTS="prefix ..." runs a subset'
	@echo '  check               test check-freestanding check-headers check-32bit check-cortex-m'
	@echo '                      check-install fuzz-replay check-tools, and check-clang when $(CLANG) is installed'
	@echo '  check-freestanding  core/: no libc includes/calls, undefined symbols and mutable data allowlisted'
	@echo '  check-headers       every public header compiles alone as C99 and C++11'
	@echo '  check-32bit         core + tests/unit built with -m32 and run (gcc-multilib)'
	@echo '  check-cortex-m      core cross-compiled for Cortex-M4, symbol allowlist (gcc-arm-none-eabi)'
	@echo '  check-clang         all, examples, tools, benches, fuzz targets, tests, checks with $(CLANG) (BUILD/clang)'
	@echo '  check-install       install to a temp DESTDIR, pkg-config consumer (static+shared), uninstall'
	@echo '  check-tools         build/tools/cubert-info lists devices and pool layouts; a bad option exits 2'
	@echo '  asan | tsan         the suite under ASan+UBSan | TSan (BUILD/asan, BUILD/tsan)'
	@echo '  fuzz                libFuzzer targets fuzz/fuzz_*.c with $(FUZZ_CC), FUZZ_SECONDS=$(FUZZ_SECONDS) each'
	@echo '  fuzz-replay         the same targets with CC + fuzz/standalone_main.c over fuzz/corpus/*'
	@echo '  bench | benches     install the peers (root+apt), build and run bench/*.c, one table, CSV + SVG'
	@echo '                      ($(BUILD)/bench/results.csv, bench.svg) | only build (BENCH_ARGS passed to each)'
	@echo '  examples | tools    build examples/*.c | tools/*.c'
	@echo '  sim                 deterministic-simulation seed sweep (SEEDS=$(SEEDS)): seeds run, violations, slowest seed'
	@echo '  size                .text/.data/.bss of the core, host and Cortex-M4'
	@echo '  install | uninstall PREFIX=$(PREFIX) DESTDIR= libdir= includedir= pkgconfigdir='
	@echo '  clean               rm -rf $(BUILD)'
	@echo 'Variables: CC CXX CFLAGS LDFLAGS BUILD TESTS CUDA=1 CLANG FUZZ_CC FUZZ_SECONDS FUZZ_ARGS'
