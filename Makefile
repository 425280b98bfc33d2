# SPDX-License-Identifier: MIT
# cubert: the CubeCL runtime in C99.  `make help` lists every target.
#
#   make            libcubert.a, libcubert.so.MAJOR (+ symlinks), cubert.pc
#   make run        the main demo (CPU server)
#   make test       build and run the test suite, the conformance suite on the three drivers,
#                   after replaying the fuzz corpora (closing line "N passed, N failed")
#   make cts SERVER=cpu|deterministic|inline|cuda   the conformance suite on one driver
#   make check      test + check-freestanding + check-headers + check-32bit + check-cortex-m
#                   + check-install + check-symbols + fuzz-replay + check-tools + check-cortex-m0
#                   + check-stack + check-hygiene (SPDX lines, no references outside the repo,
#                   include graph: tests/build/check_hygiene.sh, check_includes.sh)
#                   + check-cxx-host + check-embedded-demo (+ check-clang when clang is installed)
#   make test-cortex-m | test-bigendian   unit tests + conformance suite on Cortex-M4 (QEMU, inline
#                   driver; and the static-arena demo) | s390x (qemu-user, three drivers)
#   make bench      benchmarks (ratios to peers measured in the same run; docs/benchmarks.md)
#   make asan|tsan  the test suite under sanitizers
#   make oom        the conformance tests with the allocator failing call 1, 2, ... (tests/oom)
#   make stress     8 client threads, 100,000 checked operations (tests/stress; STRESS_BUSY=4)
#   make valgrind   memcheck over the unit, host and conformance suites (0 errors, 0 bytes lost)
#   make fuzz       libFuzzer targets (clang), FUZZ_SECONDS each; fuzz-replay replays the corpus
#   make size       core code size, full and minimal, x86-64 and Cortex-M4
#   make install / uninstall   (PREFIX, DESTDIR, libdir, includedir, pkgconfigdir)
#   make CUDA=1 ... also build the CUDA backend (libcuda loaded at run time; BUILD=build/cuda;
#                   docs/cuda.md); make CUDA=1 cuda-smoke runs the GPU smoke program
#   make check-matrix   gcc/clang x -O0/-O2/-O3/-Os, -fno-common, -j1/-j8, out-of-tree, user CFLAGS
#   make coverage       the suite built with --coverage; line and branch summary of core/
#   make WERROR=1 ...   warnings are errors (CI always sets it; the default only warns)

# ---- user-overridable -------------------------------------------------------
CC ?= cc
CXX ?= c++
AR ?= ar
OBJCOPY ?= objcopy
# CFLAGS, CPPFLAGS and LDFLAGS are the user's: they add to the project's flags
# (CUBERT_* below) and never replace them; what the code needs comes after them.
CFLAGS ?= -O2 -g
# Added after CFLAGS to the bench programs only (cubert's kernels and the OpenMP
# peer share a translation unit there, so both get it): gcc vectorizes loops whose
# trip count is a run-time value (a cube's unit loop) from -O3 on, and
# -march=native (when $(CC) takes it) gives both the host's vector width, as
# PoCL compiles its kernels for the host CPU. `make bench BENCH_OPT=-O3`: portable.
BENCH_NATIVE = $(eval BENCH_NATIVE := $(shell $(CC) -march=native -x c -c /dev/null -o /dev/null 2>/dev/null && echo -march=native))$(BENCH_NATIVE)
BENCH_OPT ?= -O3 $(BENCH_NATIVE)
CPPFLAGS ?=
LDFLAGS ?=
# WERROR=1 turns every warning into an error (CI sets it everywhere: .ci/run).
# The default keeps every warning on but never fails on one, so that a warning a
# newer compiler adds cannot break a user's build.
WERROR ?= 0
PREFIX ?= /usr/local
DESTDIR ?=
libdir ?= $(PREFIX)/lib
includedir ?= $(PREFIX)/include
pkgconfigdir ?= $(libdir)/pkgconfig
CUDA ?= 0
# A CUDA=1 build keeps its own objects (its flags differ from a plain build's).
ifeq ($(CUDA),1)
BUILD ?= build/cuda
else
BUILD ?= build
endif
CUDA_PATH ?= /usr/local/cuda
CUDA_INCLUDE ?= $(CUDA_PATH)/include
NVCC ?= $(firstword $(wildcard $(CUDA_PATH)/bin/nvcc) nvcc)
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
# Compile-time switches of cubert/config.h, e.g. CONFIG_FLAGS=-DCUBERT_CONFIG_PROFILING=0.
CONFIG_FLAGS ?=

# ---- project-owned (never overwritten by the user's CFLAGS) ------------------
MAJOR := $(shell sed -n 's/^\#define CUBERT_VERSION_MAJOR \([0-9]*\).*/\1/p' include/cubert/base.h)
MINOR := $(shell sed -n 's/^\#define CUBERT_VERSION_MINOR \([0-9]*\).*/\1/p' include/cubert/base.h)
PATCH := $(shell sed -n 's/^\#define CUBERT_VERSION_PATCH \([0-9]*\).*/\1/p' include/cubert/base.h)
VERSION := $(MAJOR).$(MINOR).$(PATCH)

# The project's warning set (always on), and -Werror when WERROR=1.
CUBERT_WARN := -std=c99 -pedantic -Wall -Wextra -Wshadow -Wundef -Wstrict-prototypes \
  -Wmissing-prototypes -Wold-style-definition -Wwrite-strings -Wcast-align -Wvla \
  -Wpointer-arith -Wdeclaration-after-statement -Wmissing-declarations
CUBERT_WERROR := $(if $(filter 1,$(WERROR)),-Werror)
# Before the user's CFLAGS: warnings (a user's -Wno-... still applies), include paths and
# the compile-time switches of cubert/config.h (CONFIG_FLAGS).
CUBERT_CFLAGS := $(CUBERT_WARN) $(CUBERT_WERROR) -Iinclude $(VARIANT_FLAGS) $(CONFIG_FLAGS)
# After the user's CFLAGS, so that no CFLAGS can drop them: the language (C99), position-
# independent code (the same objects go into libcubert.so), hidden symbols (only the
# CUBERT_API functions are exported) and, for core/, freestanding with no libc headers.
CUBERT_REQUIRED := -std=c99 -fPIC -fvisibility=hidden
# Every switch of cubert/config.h off: the minimal core (make size, make check-minimal).
MINIMAL_CONFIG := -DCUBERT_CONFIG_RACE_CHECKER=0 -DCUBERT_CONFIG_SIMULATION=0 \
  -DCUBERT_CONFIG_PROFILING=0 -DCUBERT_CONFIG_ERROR_TEXT=0 -DCUBERT_CONFIG_COLLECTIVES=0 \
  -DCUBERT_CONFIG_STAGING=0 -DCUBERT_CONFIG_PAGED_POOLS=0 -DCUBERT_CONFIG_PERSISTENT_MEMORY=0 \
  -DCUBERT_CONFIG_DEVICE_REGISTRY_CAPACITY=8 -DCUBERT_CONFIG_ERROR_REASONS=0
CORE_FREESTANDING := -ffreestanding -nostdinc -isystem $(shell $(CC) -print-file-name=include)
# $(BUILD)/flags records the compiler and flags this BUILD was made with; it is rewritten
# only when they change, and objects and programs depend on it (end of this file): after
# `make`, a `make CFLAGS=-O0` or `make WERROR=1` rebuilds instead of keeping stale objects.
FLAGS_FILE = $(BUILD)/flags
BUILD_FLAGS = $(CC) | $(CUBERT_CFLAGS) | $(CPPFLAGS) | $(CFLAGS) | $(CUBERT_REQUIRED) | $(LDFLAGS) | $(BENCH_OPT)
HOST_DEFS := -D_POSIX_C_SOURCE=200809L -D_DEFAULT_SOURCE
HOST_LIBS := -lpthread -ldl -lm

# core/ is split into layers (docs/architecture.md): base, memory, stream, check, device, kit, client.
CORE_SRC := $(sort $(wildcard core/*/*.c))
# backend-cpu/: host/ (the OS layer), cpu/ (the CPU driver), and the freestanding parts
# built with the core's flags: kernel/ (running CPU kernels) and inline/ (the inline driver).
FREESTANDING_CPU_SRC := $(sort $(wildcard backend-cpu/kernel/*.c backend-cpu/inline/*.c))
HOST_SRC := $(sort $(wildcard backend-cpu/host/*.c backend-cpu/cpu/*.c)) $(FREESTANDING_CPU_SRC)
CUDA_SRC :=
# Objects linked into the test binary, examples, tools and benches of a CUDA=1 build
# (the embedded kernel images); the CUDA section below fills it.
CUDA_LINK_OBJ :=
CUDA_TEST_DEPS :=
HAVE_NVCC :=
ifeq ($(CUDA),1)
CUDA_SRC := $(sort $(wildcard backend-cuda/*.c))
CUBERT_CFLAGS += -DCUBERT_HAVE_BACKEND_CUDA=1
HAVE_NVCC := $(shell command -v $(NVCC) 2>/dev/null)
# The single-source kernel files whose CUDA images every program of the build
# carries (one kernel library; nvcc needed, else the images are left out and the
# GPU tests say so).
KERNEL_SOURCES := examples/kernels/cubert_kernels.h tests/cts/cts_kernels.h tests/cts/cts_dialect_kernels.h \
  tests/cuda/cuda_test_kernels.h
CUDA_LINK_OBJ := $(if $(HAVE_NVCC),$(KERNEL_SOURCES:%.h=$(BUILD)/kernels/%.o))
FAKE_LIBNCCL_VARIANTS := cuda-fake-nccl cuda-fake-nccl-old cuda-fake-nccl-nosend
CUDA_TEST_DEPS := $(BUILD)/cuda-fake/libcuda.so.1 $(BUILD)/cuda-fake-nogpa/libcuda.so.1 \
  $(FAKE_LIBNCCL_VARIANTS:%=$(BUILD)/%/libnccl.so.2)
endif

CORE_OBJ := $(CORE_SRC:%.c=$(BUILD)/obj/%.o)
HOST_OBJ := $(HOST_SRC:%.c=$(BUILD)/obj/%.o)
CUDA_OBJ := $(CUDA_SRC:%.c=$(BUILD)/obj/%.o)
LIB_OBJ := $(CORE_OBJ) $(HOST_OBJ) $(CUDA_OBJ)

STATIC_LIB := $(BUILD)/libcubert.a
# Tests, benches and fuzz targets test internal units: they link the plain
# objects (this archive); the installed libcubert.a exports only the API.
INTERNAL_LIB := $(BUILD)/libcubert-internal.a
LIB_RELOC := $(BUILD)/obj/libcubert.o
SHARED_LIB := $(BUILD)/libcubert.so.$(VERSION)
SONAME := libcubert.so.$(MAJOR)
PC_FILE := $(BUILD)/cubert.pc

SUPPORT_SRC := $(sort $(wildcard tests/support/*.c))
UNIT_SRC := $(sort $(wildcard tests/unit/*.c))
CTS_SRC := $(sort $(wildcard tests/cts/*.c tests/host/*.c tests/sim/*.c))
CUDA_TEST_SRC := $(if $(filter 1,$(CUDA)),$(sort $(wildcard tests/cuda/test_*.c)))
TEST_OBJ := $(SUPPORT_SRC:%.c=$(BUILD)/obj/%.o) $(UNIT_SRC:%.c=$(BUILD)/obj/%.o) \
            $(CTS_SRC:%.c=$(BUILD)/obj/%.o) $(CUDA_TEST_SRC:%.c=$(BUILD)/obj/%.o)
TEST_BIN := $(BUILD)/cubert-test

EXAMPLE_SRC := $(sort $(wildcard examples/*.c))
EXAMPLE_BIN := $(EXAMPLE_SRC:examples/%.c=$(BUILD)/examples/%)
BENCH_SRC := $(sort $(wildcard bench/*.c))
BENCH_BIN := $(BENCH_SRC:bench/%.c=$(BUILD)/bench/%)
TOOL_SRC := $(sort $(wildcard tools/*.c))
TOOL_BIN := $(TOOL_SRC:tools/%.c=$(BUILD)/tools/%)

.PHONY: all test check run bench benches size install uninstall clean check-freestanding \
        check-headers check-kernel-warnings check-32bit check-cortex-m check-clang check-install check-symbols check-stack check-hygiene check-minimal check-tools asan tsan examples \
        tools fuzz fuzz-build fuzz-replay fuzz-targets valgrind help check-matrix coverage
.DEFAULT_GOAL := all

all: $(STATIC_LIB) $(SHARED_LIB) $(PC_FILE)

# ---- objects -------------------------------------------------------------------
# Header dependencies are tracked by the compiler (-MMD -MP): touching a header
# rebuilds exactly the objects that include it (the .d files beside the objects).
DEPFLAGS = -MMD -MP
# core/ is compiled freestanding in every build: only the compiler's headers.
$(BUILD)/obj/core/%.o: core/%.c
	@mkdir -p $(dir $@)
	$(CC) $(CUBERT_CFLAGS) -Icore $(DEPFLAGS) $(CPPFLAGS) $(CFLAGS) $(CUBERT_REQUIRED) $(CORE_FREESTANDING) -c $< -o $@

$(BUILD)/obj/backend-cpu/%.o: backend-cpu/%.c
	@mkdir -p $(dir $@)
	$(CC) $(CUBERT_CFLAGS) $(HOST_DEFS) -Ibackend-cpu $(DEPFLAGS) $(CPPFLAGS) $(CFLAGS) $(CUBERT_REQUIRED) -c $< -o $@

# The freestanding parts of backend-cpu follow the core's rules (check-freestanding).
$(BUILD)/obj/backend-cpu/kernel/%.o: backend-cpu/kernel/%.c
	@mkdir -p $(dir $@)
	$(CC) $(CUBERT_CFLAGS) $(CORE_FREESTANDING) -Icore -Ibackend-cpu $(DEPFLAGS) $(CPPFLAGS) $(CFLAGS) $(CUBERT_REQUIRED) -c $< -o $@

$(BUILD)/obj/backend-cpu/inline/%.o: backend-cpu/inline/%.c
	@mkdir -p $(dir $@)
	$(CC) $(CUBERT_CFLAGS) $(CORE_FREESTANDING) -Icore -Ibackend-cpu $(DEPFLAGS) $(CPPFLAGS) $(CFLAGS) $(CUBERT_REQUIRED) -c $< -o $@

# cuda.h is a system header here (-isystem): it uses anonymous unions, which C99 lacks.
$(BUILD)/obj/backend-cuda/%.o: backend-cuda/%.c | cuda-headers
	@mkdir -p $(dir $@)
	$(CC) $(CUBERT_CFLAGS) $(HOST_DEFS) -isystem $(CUDA_INCLUDE) $(DEPFLAGS) $(CPPFLAGS) $(CFLAGS) $(CUBERT_REQUIRED) -c $< -o $@

# The kernel library every example, test, tool, bench and fuzz target uses
# (examples/kernels/cubert_kernels.h, docs/kernels.md).
KERNELS_INC := -Iexamples/kernels

# Tests, examples, benches and tools are hosted code (they may use libc).
$(BUILD)/obj/tests/%.o: tests/%.c
	@mkdir -p $(dir $@)
	$(CC) $(CUBERT_CFLAGS) $(HOST_DEFS) -Itests/support -Icore -Ibackend-cpu $(KERNELS_INC) $(DEPFLAGS) $(CPPFLAGS) $(CFLAGS) $(CUBERT_REQUIRED) -c $< -o $@

# Fuzz targets and the standalone replay main are hosted code too.
$(BUILD)/obj/fuzz/%.o: fuzz/%.c
	@mkdir -p $(dir $@)
	$(CC) $(CUBERT_CFLAGS) $(HOST_DEFS) -Ifuzz -Icore $(KERNELS_INC) $(DEPFLAGS) $(CPPFLAGS) $(CFLAGS) $(CUBERT_REQUIRED) -c $< -o $@

$(BUILD)/examples $(BUILD)/bench $(BUILD)/tools $(BUILD)/freestanding $(BUILD)/headers $(BUILD)/cortex-m \
$(BUILD)/fuzz $(BUILD)/valgrind:
	mkdir -p $@

-include $(wildcard $(BUILD)/obj/*/*.d $(BUILD)/obj/*/*/*.d $(BUILD)/obj/*/*/*/*.d)

# ---- libraries -------------------------------------------------------------------
# libcubert.a is one relocatable object whose hidden symbols (all but the
# CUBERT_API ones) are made local, so it exports what the .so exports.
$(LIB_RELOC): $(LIB_OBJ)
	$(CC) $(VARIANT_FLAGS) -r -nostdlib -o $@ $^
	$(OBJCOPY) --localize-hidden $@

$(STATIC_LIB): $(LIB_RELOC)
	rm -f $@
	$(AR) rcs $@ $<

$(INTERNAL_LIB): $(LIB_OBJ)
	rm -f $@
	$(AR) rcs $@ $^

$(SHARED_LIB): $(LIB_OBJ)
	$(CC) -shared -Wl,-soname,$(SONAME) $(if $(VARIANT_FLAGS),,-Wl,-z,defs) $(VARIANT_FLAGS) $(CFLAGS) $(LDFLAGS) -o $@ $^ $(HOST_LIBS)
	ln -sf libcubert.so.$(VERSION) $(BUILD)/$(SONAME)
	ln -sf $(SONAME) $(BUILD)/libcubert.so

$(PC_FILE): cubert.pc.in include/cubert/base.h
	sed -e 's|@PREFIX@|$(PREFIX)|' -e 's|@LIBDIR@|$(libdir)|' -e 's|@INCLUDEDIR@|$(includedir)|' \
	    -e 's|@VERSION@|$(VERSION)|' $< > $@

# ---- tests ---------------------------------------------------------------------------
$(TEST_BIN): $(TEST_OBJ) $(CUDA_LINK_OBJ) $(INTERNAL_LIB) $(CUDA_TEST_DEPS)
	$(CC) $(VARIANT_FLAGS) $(CFLAGS) $(LDFLAGS) -o $@ $(TEST_OBJ) $(CUDA_LINK_OBJ) $(INTERNAL_LIB) $(HOST_LIBS)

# TEST_WRAPPER runs the suite under a command (the sanitizer targets use setarch -R).
# `make test`: the suite, then the conformance suite on the other two drivers
# (tests/build/run_suite.sh); TESTS="prefix ..." runs only those tests. The full suite
# (no TESTS) also replays every fuzz target's committed corpus first (fuzz-replay).
TEST_WRAPPER ?=
# A CUDA=1 build also runs the conformance suite on the CUDA driver over the fake libcuda.
test: $(TEST_BIN) $(if $(filter 1,$(CUDA)),$(BUILD)/cuda-smoke) $(if $(TESTS),,fuzz-replay)
	@$(if $(filter 1,$(CUDA)),CUBERT_FAKE_LIBCUDA=$(abspath $(BUILD))/cuda-fake/libcuda.so.1 \
	  CUBERT_FAKE_LIBNCCL=$(abspath $(BUILD))/cuda-fake-nccl/libnccl.so.2) \
	  sh tests/build/run_suite.sh '$(TEST_WRAPPER)' $(TEST_BIN) $(TESTS)

# The conformance suite on one driver: make cts SERVER=cpu|deterministic|inline|cuda
# (cuda: the GPU through libcuda.so.1, or CUBERT_LIBCUDA=... ; without one every test
# prints "skipped: CUDA unavailable: <reason>").
SERVER ?= cpu
.PHONY: cts
cts: $(TEST_BIN)
	CUBERT_CTS_SERVER=$(SERVER) $(TEST_WRAPPER) $(TEST_BIN) cts_

# ---- examples, benches, tools --------------------------------------------------------
BENCH_SUPPORT_OBJ := $(filter-out $(BUILD)/obj/tests/support/runner.o $(BUILD)/obj/tests/support/test_features.o,$(SUPPORT_SRC:%.c=$(BUILD)/obj/%.o))

$(BUILD)/examples/%: examples/%.c $(CUDA_LINK_OBJ) $(STATIC_LIB) | $(BUILD)/examples
	$(CC) $(CUBERT_CFLAGS) $(HOST_DEFS) $(KERNELS_INC) $(DEPFLAGS) $(CPPFLAGS) $(CFLAGS) $(CUBERT_REQUIRED) $(LDFLAGS) -o $@ $< $(CUDA_LINK_OBJ) $(STATIC_LIB) $(HOST_LIBS)

$(BUILD)/bench/%: bench/%.c $(BENCH_SUPPORT_OBJ) $(INTERNAL_LIB) | $(BUILD)/bench
	$(CC) $(CUBERT_CFLAGS) $(HOST_DEFS) -Icore -Ibackend-cpu -Itests/support $(KERNELS_INC) $(BENCH_EXTRA_CFLAGS) $(DEPFLAGS) $(CPPFLAGS) $(CFLAGS) $(BENCH_OPT) $(CUBERT_REQUIRED) $(LDFLAGS) -o $@ $< $(BENCH_SUPPORT_OBJ) $(INTERNAL_LIB) $(BENCH_EXTRA_LIBS) $(HOST_LIBS)

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

$(BUILD)/tools/%: tools/%.c $(CUDA_LINK_OBJ) $(STATIC_LIB) | $(BUILD)/tools
	$(CC) $(CUBERT_CFLAGS) $(HOST_DEFS) $(KERNELS_INC) $(DEPFLAGS) $(CPPFLAGS) $(CFLAGS) $(CUBERT_REQUIRED) $(LDFLAGS) -o $@ $< $(CUDA_LINK_OBJ) $(STATIC_LIB) $(HOST_LIBS)

-include $(wildcard $(BUILD)/examples/*.d $(BUILD)/bench/*.d $(BUILD)/tools/*.d)

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

# ---- allocation failure everywhere, threads under stress (tests/oom, tests/stress) ------------
# make oom: every conformance test again with the injected allocator failing its 1st, 2nd, ...
# call, transient and persistent, on OOM_SERVERS (cpu deterministic inline); tests/oom/oom_main.c
# (OOM_TESTS="prefix ...", OOM_JOBS, OOM_MAX_POINTS, OOM_TIMEOUT, OOM_VERBOSE=1).
OOM_BIN := $(BUILD)/cubert-oom
OOM_WRAP := counting_allocator_initialize counting_allocator_destroy cubert_cpu_client_create \
  cubert_client_exclusive cubert_client_profile cubert_client_reserve_staging cubert_client_staging \
  cubert_client_create_from_bytes \
  cubert_inline_client_create cubert_client_load cubert_client_clone cubert_client_release \
  cubert_cpu_client_create_with_faults cubert_inline_client_create_with_faults
# The CTS objects, copied with their pthread_create renamed (the driver tracks the tests' threads).
OOM_CTS_OBJ := $(patsubst tests/cts/%.c,$(BUILD)/oom/%.o,$(sort $(wildcard tests/cts/*.c)))
OOM_OBJ := $(BUILD)/obj/tests/oom/oom_main.o $(OOM_CTS_OBJ) \
  $(filter-out $(BUILD)/obj/tests/support/runner.o,$(SUPPORT_SRC:%.c=$(BUILD)/obj/%.o))
$(BUILD)/oom/%.o: $(BUILD)/obj/tests/cts/%.o
	@mkdir -p $(@D)
	$(OBJCOPY) --redefine-sym pthread_create=oom_pthread_create $< $@
$(BUILD)/obj/tests/oom/oom_main.o: CPPFLAGS += -Itests/cts
$(OOM_BIN): $(OOM_OBJ) $(INTERNAL_LIB)
	$(CC) $(VARIANT_FLAGS) $(CFLAGS) $(LDFLAGS) $(OOM_WRAP:%=-Wl,--wrap=%) -o $@ $(OOM_OBJ) $(INTERNAL_LIB) $(HOST_LIBS)
.PHONY: oom stress
OOM_TESTS ?=
oom: $(OOM_BIN)
	OOM_TESTS='$(OOM_TESTS)' $(OOM_BIN)

# make stress: 8 client threads, own and shared buffers across streams, STRESS_OPS operations
# (default 100000), every read checked against a shadow, host memory back to its start;
# STRESS_BUSY=N spinning threads beside it (tests/stress/stress_main.c).
STRESS_BIN := $(BUILD)/cubert-stress
STRESS_OPS ?= 100000
STRESS_BUSY ?= 0
$(STRESS_BIN): $(BUILD)/obj/tests/stress/stress_main.o $(BUILD)/obj/tests/support/counting_allocator.o $(INTERNAL_LIB)
	$(CC) $(VARIANT_FLAGS) $(CFLAGS) $(LDFLAGS) -o $@ $(filter %.o,$^) $(INTERNAL_LIB) $(HOST_LIBS)
stress: $(STRESS_BIN)
	STRESS_OPS=$(STRESS_OPS) STRESS_BUSY=$(STRESS_BUSY) $(TEST_WRAPPER) $(STRESS_BIN)
# The stress test under TSan (BUILD/tsan, as make tsan), 20,000 operations unless STRESS_OPS says.
.PHONY: stress-tsan
stress-tsan:
	$(MAKE) WERROR=$(WERROR) BUILD=$(BUILD)/tsan CFLAGS="-O1 -g" VARIANT_FLAGS="-fsanitize=thread" \
	  TEST_WRAPPER="$(SAN_WRAPPER)" STRESS_OPS=$(if $(filter command line,$(origin STRESS_OPS)),$(STRESS_OPS),20000) stress

# ---- checks ---------------------------------------------------------------------------
HAVE_CLANG := $(shell command -v $(CLANG) 2>/dev/null)
check: test check-freestanding check-headers check-kernel-warnings check-32bit check-cortex-m check-install check-symbols \
       fuzz-replay check-tools check-cortex-m0 check-cxx-host check-embedded-demo check-stack check-hygiene \
       $(if $(HAVE_CLANG),check-clang)
	@echo "check: ok$(if $(HAVE_CLANG),, (check-clang skipped: $(CLANG) not found; Debian: apt-get install clang))"

# memcpy/memset/memmove (emitted for the builtins) and the compiler's own runtime
# (libgcc / compiler-rt: 64-bit division on 32-bit targets, __aeabi_* on ARM).
FREESTANDING_ALLOW := memcpy memset memmove
COMPILER_RT_ALLOW := __aeabi_[A-Za-z0-9_]+|__u?(div|mod|divmod|cmp)[sdt]i[0-9]|__(mul|ash[lr]|lshr|neg|clz|ctz|popcount|ffs|parity|bswap)[sdt]i[0-9]|_GLOBAL_OFFSET_TABLE_
FREESTANDING_ALLOW_RE := $(subst $() ,|,$(FREESTANDING_ALLOW))|$(COMPILER_RT_ALLOW)
# The only core files allowed to hold mutable static data (docs/architecture.md: the device registry).
FREESTANDING_STATE_ALLOW := device_registry
CHECK_FREESTANDING := sh tests/build/check_freestanding.sh \
  --allow-undef '$(FREESTANDING_ALLOW_RE)' --allow-desc '$(FREESTANDING_ALLOW) + compiler runtime' \
  --allow-state '$(FREESTANDING_STATE_ALLOW)'

# Scans core/ and the freestanding parts of backend-cpu (kernel/, inline/), with
# the public headers they include, for forbidden includes and calls, then
# compiles every such file freestanding (-nostdinc, no PIC so const
# tables land in .rodata) and checks its undefined symbols and mutable data.
check-freestanding: | $(BUILD)/freestanding
	@$(CHECK_FREESTANDING) --sources --label check-freestanding --cc '$(CC)' --nm '$(NM)' \
	  --out $(BUILD)/freestanding \
	  --cflags '$(CUBERT_WARN) $(CUBERT_WERROR) -Iinclude -Icore -Ibackend-cpu -O2 -fno-pic -fno-stack-protector $(CORE_FREESTANDING)' \
	  $(CORE_SRC) $(FREESTANDING_CPU_SRC)

# check-headers keeps -Werror whatever WERROR says: a warning in a public header is the
# defect it looks for (it lands in every program that includes the header, and breaks
# those built with -Werror). check-freestanding and check-cortex-m follow WERROR: they
# compile the core the library build compiles, and check includes, symbols and data
# apart from the compiler's diagnostics.
PUBLIC_HEADERS := $(sort $(wildcard include/cubert/*.h include/cubert/backend/*.h))
# Every kernel source of the project in one file (tests/build/kernel_warnings.c),
# gcc and clang at -O3 -Wall -Wextra -Werror: correct kernels give no warning
# (docs/kernels.md; issue 22's -Wmaybe-uninitialized).
KERNEL_WARN_INC := -Iinclude -Iexamples/kernels -Itests/cts -Itests/cuda -Ibackend-cuda
check-kernel-warnings: | $(BUILD)/headers
	@set -e; for cc in $(or $(KERNEL_WARN_CCS),gcc clang); do \
	  if ! command -v $$cc >/dev/null 2>&1; then echo "check-kernel-warnings: $$cc not installed, skipped"; continue; fi; \
	  $$cc -std=c99 -pedantic -Wall -Wextra -Wshadow -Werror -O3 -D_POSIX_C_SOURCE=200809L $(KERNEL_WARN_INC) \
	    -c tests/build/kernel_warnings.c -o $(BUILD)/headers/kernel_warnings_$$cc.o; \
	  echo "check-kernel-warnings: $$cc -O3 -Wall -Wextra: no warning"; \
	done

check-headers: | $(BUILD)/headers
	@set -e; for h in $(PUBLIC_HEADERS); do \
	  p=$${h#include/}; n=$$(printf '%s' "$${p%.h}" | tr / _); \
	  printf '#include "%s"\n' $$p > $(BUILD)/headers/$$n.c; \
	  $(CC) $(CUBERT_WARN) -Werror -Iinclude -c $(BUILD)/headers/$$n.c -o $(BUILD)/headers/$$n.o; \
	  cp $(BUILD)/headers/$$n.c $(BUILD)/headers/$$n.cpp; \
	  $(CXX) -std=c++11 -pedantic -Wall -Wextra -Werror -Iinclude -c $(BUILD)/headers/$$n.cpp -o $(BUILD)/headers/$$n.cpp.o; \
	done; \
	$(CC) $(CUBERT_WARN) -Werror -Iinclude -Itests/support -c tests/build/enum_sizes.c -o $(BUILD)/headers/enum_sizes.o; \
	$(CC) $(CUBERT_WARN) -Werror -fshort-enums -Iinclude -Itests/support -c tests/build/enum_sizes.c \
	  -o $(BUILD)/headers/enum_sizes_short.o; \
	echo "check-headers: ok ($(words $(PUBLIC_HEADERS)) headers, C99 and C++11; every public enum 4 bytes, also with -fshort-enums)"

# tools/cubert-info lists every device it creates and refuses a bad option (exit 2).
check-tools: $(TOOL_BIN)
	@out=$$($(BUILD)/tools/cubert-info -n 2) || { echo "check-tools: cubert-info -n 2 failed"; exit 1; }; \
	  n=$$(printf '%s\n' "$$out" | grep -c '^Device '); \
	  [ "$$n" = 2 ] || { echo "check-tools: cubert-info -n 2 listed $$n devices, expected 2"; exit 1; }; \
	  printf '%s\n' "$$out" | grep -q 'Memory pools' || { echo "check-tools: no memory pool layout printed"; exit 1; }; \
	  $(if $(filter 1,$(CUDA)),printf '%s\n' "$$out" | grep -q '^CUDA: ' || { echo "check-tools: no CUDA line in a CUDA=1 build"; exit 1; };) \
	  rc=0; $(BUILD)/tools/cubert-info --no-such-option >/dev/null 2>&1 || rc=$$?; \
	  [ "$$rc" = 2 ] || { echo "check-tools: a bad option exited $$rc, expected 2"; exit 1; }; \
	  echo "check-tools: ok (cubert-info: 2 devices listed with their pool layout; a bad option exits 2)"

# The timeline trace end to end (docs/profiling.md): examples/trace writes a trace,
# tools/trace-to-svg.py renders it (python3; not part of `make test`).
.PHONY: check-trace-tool
check-trace-tool: $(BUILD)/examples/trace
	@$(BUILD)/examples/trace $(BUILD)/trace.json >/dev/null || { echo "check-trace-tool: examples/trace failed"; exit 1; }; \
	  python3 tools/trace-to-svg.py $(BUILD)/trace.json $(BUILD)/trace.svg || { echo "check-trace-tool: trace-to-svg failed"; exit 1; }; \
	  grep -q '<svg' $(BUILD)/trace.svg && grep -q 'ck_add_f32' $(BUILD)/trace.svg && grep -q 'marker-end' $(BUILD)/trace.svg || \
	  { echo "check-trace-tool: $(BUILD)/trace.svg lacks the kernels or the flows"; exit 1; }; \
	  echo "check-trace-tool: ok ($(BUILD)/trace.json rendered to $(BUILD)/trace.svg)"

# The core's unit tests, built and run as 32-bit code (size_t is 32 bits).
check-32bit:
	@printf 'int main(void) { return 0; }\n' | $(CC) -m32 -x c - -o /dev/null 2>/dev/null || \
	  { echo "check-32bit: $(CC) -m32 cannot link (Debian: apt-get install gcc-multilib)"; exit 1; }
	@$(MAKE) --no-print-directory WERROR=$(WERROR) BUILD=$(BUILD)/m32 VARIANT_FLAGS=-m32 $(BUILD)/m32/cubert-unit-test
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

# The library and the suite built with every feature of cubert/config.h compiled
# out (BUILD/minimal): the unit tests, the client's tests and the conformance
# suite on the inline driver run; the switched-off API says so, the tests of
# those features print "skipped: compiled out (...)".
# MINIMAL_TESTS: the test prefixes run (the CPU driver's own tests, tests/host
# and tests/sim, need the simulation and threads: not run here).
MINIMAL_TESTS ?= allocator comm config cube device error handle layout memory profile race sim_ \
  stream version client_ cts_
check-minimal:
	@$(MAKE) --no-print-directory WERROR=$(WERROR) BUILD=$(BUILD)/minimal CONFIG_FLAGS='$(MINIMAL_CONFIG)' \
	  $(BUILD)/minimal/cubert-test
	@# the config header gives the same library as the flags: the features and the registry size
	@mkdir -p $(BUILD)/minimal/config-file
	@printf '#include <stdio.h>\n#include "cubert/backend/device.h"\nint main(void) { printf("%%lx %%d\\n", (unsigned long)cubert_config_features(), CUBERT_DEVICE_REGISTRY_CAPACITY); return 0; }\n' \
	  > $(BUILD)/minimal/config-file/probe.c
	@for how in "$(MINIMAL_CONFIG)" "-DCUBERT_CONFIG_FILE=\"cubert_config_minimal.h\" -Iexamples/embedded"; do \
	  $(CC) -Iinclude -Icore $$how -o $(BUILD)/minimal/config-file/probe $(BUILD)/minimal/config-file/probe.c \
	    core/base/version.c && $(BUILD)/minimal/config-file/probe; \
	done | uniq | awk 'END { if (NR != 1) { print "check-minimal: examples/embedded/cubert_config_minimal.h and MINIMAL_CONFIG differ"; exit 1 } \
	  print "check-minimal: the config header and MINIMAL_CONFIG give the same library (features and registry: " $$0 ")" }'
	CUBERT_CTS_SERVER=inline $(BUILD)/minimal/cubert-test $(or $(TESTS),$(MINIMAL_TESTS))

UNIT_ONLY_OBJ := $(SUPPORT_SRC:%.c=$(BUILD)/obj/%.o) $(UNIT_SRC:%.c=$(BUILD)/obj/%.o)
$(BUILD)/cubert-unit-test: $(UNIT_ONLY_OBJ) $(CORE_OBJ)
	$(CC) $(VARIANT_FLAGS) $(CFLAGS) $(LDFLAGS) -o $@ $^ $(HOST_LIBS)

CORTEX_FLAGS = -mcpu=cortex-m4 -mthumb -Os -ffreestanding -nostdinc \
  -isystem $(shell $(ARM_CC) -print-file-name=include 2>/dev/null) -ffunction-sections -fdata-sections
check-cortex-m: | $(BUILD)/cortex-m
	@command -v $(ARM_CC) >/dev/null || { echo "check-cortex-m: $(ARM_CC) not found (Debian: apt-get install gcc-arm-none-eabi)"; exit 1; }
	@$(CHECK_FREESTANDING) --label check-cortex-m --cc '$(ARM_CC)' --nm '$(ARM_NM)' \
	  --out $(BUILD)/cortex-m --cflags '$(CUBERT_WARN) $(CUBERT_WERROR) -Iinclude -Icore -Ibackend-cpu $(CORTEX_FLAGS)' \
	  $(CORE_SRC) $(FREESTANDING_CPU_SRC)

# test-cortex-m, test-bigendian, check-cortex-m0, check-cxx-host (docs/embedding.md).
include tests/embedded/embedded.mk

# The whole library, tests, examples, tools and benches with clang (own BUILD dir),
# plus the freestanding and header checks with clang/clang++.
check-clang:
	@command -v $(CLANG) >/dev/null || { echo "check-clang: $(CLANG) not found (Debian: apt-get install clang)"; exit 1; }
	@$(MAKE) --no-print-directory WERROR=$(WERROR) CC=$(CLANG) CXX=$(CLANGXX) BUILD=$(BUILD)/clang \
	  all examples tools benches fuzz-targets check-freestanding check-headers
	@$(MAKE) --no-print-directory WERROR=$(WERROR) CC=$(CLANG) CXX=$(CLANGXX) BUILD=$(BUILD)/clang test

# The builds users try (tests/build/check_matrix.sh): gcc and clang at -O0 -g, -O2,
# -O3 -march=native and -Os (make test at -O0 and -O3), -fno-common, -O0 -g --coverage,
# make -j1 and -j8, an out-of-tree BUILD, CFLAGS/LDFLAGS on the command line; each from
# clean in $(BUILD)/matrix/CELL. WERROR is passed to every cell.
MATRIX_GCC ?= gcc
check-matrix:
	@MAKE='$(MAKE)' GCC='$(MATRIX_GCC)' CLANG='$(CLANG)' NM='$(NM)' WERROR='$(WERROR)' JOBS='$(JOBS)' \
	  MATRIX_DIR='$(BUILD)/matrix' sh tests/build/check_matrix.sh

# Installs into a temporary DESTDIR, checks the tree (headers, .a, .so symlink
# chain, soname, cubert.pc, exported symbols), builds and runs a consumer
# through pkg-config (static and shared), then uninstalls.
check-install: all
	@CC='$(CC)' MAKE='$(MAKE)' BUILD='$(BUILD)' NM='$(NM)' READELF='$(READELF)' \
	  sh tests/build/test_install.sh

# Stack frames of the freestanding code stay <= STACK_LIMIT bytes (gcc -fstack-usage,
# the flags of the core build). STACK_SRC adds other freestanding sources.
STACK_LIMIT ?= 2048
STACK_SRC ?=
# SPDX lines, no comment pointing outside the repository, no include cycle or include up
# the layers of docs/architecture.md (tests/build/check_hygiene.sh; POSIX sh + awk).
check-hygiene:
	@sh tests/build/check_hygiene.sh check

check-stack:
	@sh tests/build/check_stack.sh --cc '$(CC)' --limit $(STACK_LIMIT) --out $(BUILD)/stack \
	  --cflags '$(CUBERT_WARN) -Iinclude -Icore $(CORE_FREESTANDING) $(CFLAGS)' $(CORE_SRC) $(STACK_SRC)

# The installed libraries export only cubert_ symbols (tests/build/check_symbols.sh).
check-symbols: $(STATIC_LIB) $(SHARED_LIB)
	@sh tests/build/check_symbols.sh '$(NM)' $(STATIC_LIB) $(SHARED_LIB)

# .text/.data/.bss of the full and the minimal core (MINIMAL_CONFIG), alone and with the
# inline driver and kernel runner, x86-64 at -O2 and -Os and Cortex-M4 at -Os; then what
# the static-arena demo links of them on Cortex-M4 (tests/build/core_size.sh).
size: | $(BUILD)/freestanding
	@sh tests/build/core_size.sh --out $(BUILD)/size --cc '$(CC)' --size '$(SIZE)' \
	  --cflags '$(CUBERT_WARN) -Iinclude -Icore -Ibackend-cpu -fno-pic -fno-stack-protector $(CORE_FREESTANDING)' \
	  --arm-cc '$(ARM_CC)' --arm-size '$(ARM_SIZE)' --arm-nm '$(ARM_NM)' \
	  --arm-cflags '$(CUBERT_WARN) -Iinclude -Icore -Ibackend-cpu $(CORTEX_FLAGS)' --minimal '$(MINIMAL_CONFIG)' \
	  --driver '$(FREESTANDING_CPU_SRC)' --demo examples/embedded/arena_demo.c \
	  --demo-cflags '-std=c99 -Iinclude -Iexamples/kernels -Itests/embedded/cortex-m -mcpu=cortex-m4 -mthumb -Os -ffunction-sections -fdata-sections' \
	  --startup tests/embedded/cortex-m/startup.c --ld tests/embedded/cortex-m/an386.ld \
	  $(CORE_SRC)

# ---- sanitizers -------------------------------------------------------------------------
# Sanitizer runtimes of this toolchain generation can fail on kernels with 32 bits of
# mmap randomization ("unexpected memory mapping"); the suite runs with ASLR off when
# setarch can do that here.
SAN_WRAPPER = $(shell setarch $$(uname -m) -R true >/dev/null 2>&1 && echo setarch $$(uname -m) -R)
asan:
	$(MAKE) WERROR=$(WERROR) BUILD=$(BUILD)/asan CFLAGS="-O1 -g -fno-omit-frame-pointer" \
	  VARIANT_FLAGS="-fsanitize=address,undefined -fno-sanitize-recover=undefined" \
	  TEST_WRAPPER="$(SAN_WRAPPER)" test
tsan:
	$(MAKE) WERROR=$(WERROR) BUILD=$(BUILD)/tsan CFLAGS="-O1 -g" VARIANT_FLAGS="-fsanitize=thread" \
	  TEST_WRAPPER="$(SAN_WRAPPER)" test

# ---- coverage ------------------------------------------------------------------------------
# The suite built with --coverage at -O0 by COV_CC in $(BUILD)/coverage (counters updated
# atomically: the CPU server's threads run core code concurrently), run once from zero
# counts; then per-file, per-folder and total line and branch-taken figures for every core/
# folder (tests/build/coverage.sh; never-run lines and branches in $(BUILD)/coverage/report).
COV_CC ?= gcc
GCOV ?= gcov
coverage:
	@$(MAKE) --no-print-directory -s WERROR=$(WERROR) CC=$(COV_CC) BUILD=$(BUILD)/coverage CFLAGS="-O0 -g" \
	  VARIANT_FLAGS="--coverage -fprofile-update=atomic" $(BUILD)/coverage/cubert-test
	@find $(BUILD)/coverage -name '*.gcda' -exec rm -f {} +
	@$(BUILD)/coverage/cubert-test $(TESTS) >$(BUILD)/coverage/test.log 2>&1 || \
	  { tail -n 40 $(BUILD)/coverage/test.log; echo "coverage: the suite failed (log $(BUILD)/coverage/test.log)"; exit 1; }
	@echo "coverage: suite run: $$(tail -n 1 $(BUILD)/coverage/test.log)"
	@for s in deterministic inline; do \
	  CUBERT_CTS_SERVER=$$s $(BUILD)/coverage/cubert-test cts_ >$(BUILD)/coverage/cts-$$s.log 2>&1 || \
	    { tail -n 40 $(BUILD)/coverage/cts-$$s.log; echo "coverage: the conformance suite failed on $$s"; exit 1; }; \
	  echo "coverage: conformance suite on $$s: $$(tail -n 1 $(BUILD)/coverage/cts-$$s.log)"; \
	done
	@sh tests/build/coverage.sh --gcov '$(GCOV)' --obj $(BUILD)/coverage/obj --out $(BUILD)/coverage/report \
	  $(CORE_SRC)

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

$(BUILD)/fuzz/fuzz_%: $(BUILD)/obj/fuzz/fuzz_%.o $(FUZZ_MAIN_OBJ) $(INTERNAL_LIB) | $(BUILD)/fuzz
	$(CC) $(VARIANT_FLAGS) $(FUZZ_LDFLAGS) $(CFLAGS) $(LDFLAGS) -o $@ $< $(FUZZ_MAIN_OBJ) $(INTERNAL_LIB) $(HOST_LIBS)

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
	@$(MAKE) --no-print-directory WERROR=$(WERROR) CC=$(FUZZ_CC) BUILD=$(BUILD)/libfuzzer CFLAGS="-O1 -g -fno-omit-frame-pointer" \
	  VARIANT_FLAGS="-fsanitize=fuzzer-no-link $(FUZZ_SAN)" FUZZ_MAIN_OBJ= FUZZ_LDFLAGS=-fsanitize=fuzzer \
	  fuzz-targets

# Runs each target FUZZ_SECONDS; new inputs go to $(BUILD)/libfuzzer/corpus/NAME,
# crashes to $(BUILD)/libfuzzer/artifacts/. FUZZ_ARGS adds libFuzzer flags.
fuzz: fuzz-build
	@set -e; for n in $(FUZZ_NAMES); do \
	  mkdir -p $(BUILD)/libfuzzer/corpus/$$n $(BUILD)/libfuzzer/artifacts; \
	  seeds=; [ -d fuzz/corpus/$$n ] && seeds=fuzz/corpus/$$n; \
	  dict=; [ -f fuzz/dict/$$n.dict ] && dict=-dict=fuzz/dict/$$n.dict; \
	  echo "== fuzz_$$n for $(FUZZ_SECONDS) s"; \
	  log=$(BUILD)/libfuzzer/fuzz_$$n.log; \
	  if $(SAN_WRAPPER) $(BUILD)/libfuzzer/fuzz/fuzz_$$n -max_total_time=$(FUZZ_SECONDS) -timeout=25 -print_final_stats=1 \
	    -artifact_prefix=$(BUILD)/libfuzzer/artifacts/$$n- $$dict $(FUZZ_ARGS) \
	    $(BUILD)/libfuzzer/corpus/$$n $$seeds > $$log 2>&1; then \
	    grep -E '^(Done|stat::average_exec_per_sec|stat::new_units_added)' $$log; \
	  else tail -n 80 $$log; echo "fuzz: fuzz_$$n FAILED (log $$log, inputs in $(BUILD)/libfuzzer/artifacts/)"; exit 1; fi; \
	done; echo "fuzz: ok ($(words $(FUZZ_NAMES)) targets, $(FUZZ_SECONDS) s each)"

# ---- valgrind ---------------------------------------------------------------------------------
# memcheck over the test suites VALGRIND_SUITES (tests/SUITE/*.c, one program each), every test in
# its own forked process as usual (valgrind follows forks; timeouts scaled by 30). Each process
# logs to $(BUILD)/valgrind/SUITE.PID.log; a process with a memcheck error or a block definitely
# lost exits 99 (a FAIL line of the runner). The totals are printed; any error or lost byte
# fails the target. TESTS="prefix ..." narrows every suite; VALGRIND_SUITES=sim adds the simulation
# suite (long under valgrind). About a minute for the default suites on 2 cores.
VALGRIND ?= valgrind
VALGRIND_SUITES ?= unit host cts
VALGRIND_JOBS ?= 2
VALGRIND_FLAGS ?= --tool=memcheck --error-exitcode=99 --leak-check=full --show-leak-kinds=definite \
  --errors-for-leak-kinds=definite --num-callers=30

define VALGRIND_SUITE_RULE
$(BUILD)/valgrind/cubert-$(1)-test: $(SUPPORT_SRC:%.c=$(BUILD)/obj/%.o) \
    $(patsubst %.c,$(BUILD)/obj/%.o,$(wildcard tests/$(1)/*.c)) $(INTERNAL_LIB) | $(BUILD)/valgrind
	$(CC) $(VARIANT_FLAGS) $(CFLAGS) $(LDFLAGS) -o $$@ $$(filter %.o,$$^) $(INTERNAL_LIB) $(HOST_LIBS)
endef
$(foreach s,unit host cts sim,$(eval $(call VALGRIND_SUITE_RULE,$(s))))

valgrind: $(VALGRIND_SUITES:%=$(BUILD)/valgrind/cubert-%-test)
	@command -v $(VALGRIND) >/dev/null || { echo "valgrind: $(VALGRIND) not found (Debian: apt-get install valgrind)"; exit 1; }
	@rm -f $(BUILD)/valgrind/*.log; status=0; \
	for s in $(VALGRIND_SUITES); do \
	  echo "== valgrind memcheck: tests/$$s"; \
	  CUBERT_TEST_TIMEOUT_SCALE=30 $(VALGRIND) $(VALGRIND_FLAGS) --log-file=$(BUILD)/valgrind/$$s.%p.log \
	    $(BUILD)/valgrind/cubert-$$s-test -j $(VALGRIND_JOBS) $(TESTS) > $(BUILD)/valgrind/$$s.out 2>&1 || status=1; \
	  grep -E '^(FAIL|skip)' $(BUILD)/valgrind/$$s.out || true; tail -n 1 $(BUILD)/valgrind/$$s.out; \
	done; \
	logs=$$(ls $(BUILD)/valgrind/*.log | wc -l); \
	errors=$$(sed -n 's/.*ERROR SUMMARY: \([0-9,]*\) errors.*/\1/p' $(BUILD)/valgrind/*.log | tr -d , | awk '{s += $$1} END {print s + 0}'); \
	lost=$$(sed -n 's/.*definitely lost: \([0-9,]*\) bytes.*/\1/p' $(BUILD)/valgrind/*.log | tr -d , | awk '{s += $$1} END {print s + 0}'); \
	echo "valgrind: $$errors errors, $$lost bytes definitely lost ($$logs processes: suites $(VALGRIND_SUITES))"; \
	if [ "$$status" != 0 ] || [ "$$errors" != 0 ] || [ "$$lost" != 0 ]; then \
	  grep -l -E 'ERROR SUMMARY: [1-9]|definitely lost: [1-9]' $(BUILD)/valgrind/*.log | head -n 5 | xargs -r cat; \
	  echo "valgrind: FAILED (logs in $(BUILD)/valgrind/)"; exit 1; fi

# ---- install ------------------------------------------------------------------------------
# cubert.pc is written at install time so that PREFIX/libdir given to `make install`
# are the ones recorded, whatever the library was built with.
install: all
	install -d $(DESTDIR)$(libdir) $(DESTDIR)$(includedir)/cubert/backend $(DESTDIR)$(pkgconfigdir)
	install -m 644 include/cubert/*.h $(DESTDIR)$(includedir)/cubert/
	install -m 644 include/cubert/backend/*.h $(DESTDIR)$(includedir)/cubert/backend/
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

# ---- CUDA (CUDA=1) --------------------------------------------------------------------------
# docs/cuda.md. backend-cuda/ includes cuda.h for its types only and never links -lcuda:
# libcuda.so.1 is opened at run time. Kernel images: nvcc compiles each single-source
# kernel file (-x cu) to PTX for NVCC_PTX_ARCH (every later GPU JIT-compiles it) and,
# when nvcc knows it, a cubin for NVCC_CUBIN_ARCH; tools/cubert-kernel-image.sh embeds both
# as a C file whose image registers itself (docs/kernels.md).
NVCC_FLAGS ?= -std=c++14 -O3
NVCC_PTX_ARCH ?= compute_75
NVCC_CUBIN_ARCH ?= sm_90
CUDA_TEST_CFLAGS = -Itests/support -Itests/cts -Ibackend-cuda -Ibackend-cpu -isystem $(CUDA_INCLUDE) \
  $(KERNELS_INC) -DCUBERT_TEST_BUILD_DIR='"$(abspath $(BUILD))"' -DCUBERT_TEST_HAVE_IMAGES=$(if $(HAVE_NVCC),1,0)

.PHONY: cuda-headers cuda-smoke kernel-image
cuda-headers:
	@test -f $(CUDA_INCLUDE)/cuda.h || { echo "CUDA=1 needs the CUDA headers: $(CUDA_INCLUDE)/cuda.h not found (set CUDA_PATH or CUDA_INCLUDE; no GPU needed)"; exit 1; }

$(BUILD)/kernels/%.c: %.h include/cubert/kernel.h tools/cubert-kernel-image.sh
	@mkdir -p $(@D)
	NVCC='$(NVCC)' NVCC_FLAGS='$(NVCC_FLAGS)' PTX_ARCH='$(NVCC_PTX_ARCH)' CUBIN_ARCH='$(NVCC_CUBIN_ARCH)' \
	  sh tools/cubert-kernel-image.sh -I include -o $@ $<
$(BUILD)/kernels/%.o: $(BUILD)/kernels/%.c include/cubert/cuda.h include/cubert/error.h
	$(CC) $(CUBERT_CFLAGS) $(DEPFLAGS) $(CPPFLAGS) $(CFLAGS) $(CUBERT_REQUIRED) -c $< -o $@
.PRECIOUS: $(BUILD)/kernels/%.c

$(BUILD)/obj/tests/cuda/%.o: tests/cuda/%.c | cuda-headers
	@mkdir -p $(dir $@)
	$(CC) $(CUBERT_CFLAGS) $(HOST_DEFS) $(CUDA_TEST_CFLAGS) $(DEPFLAGS) $(CPPFLAGS) $(CFLAGS) $(CUBERT_REQUIRED) -c $< -o $@

# The fake driver the CUDA tests load instead of libcuda.so.1 (tests/cuda/fake_libcuda.c),
# and a variant without cuGetProcAddress_v2 (a driver library missing a symbol).
FAKE_LIBCUDA_SRC := tests/cuda/fake_libcuda.c tests/cuda/fake_libcuda_exec.c tests/cuda/fake_libcuda_gates.c
FAKE_LIBCUDA_DEPS := $(FAKE_LIBCUDA_SRC) tests/cuda/fake_libcuda.h tests/cuda/fake_libcuda_internal.h
$(BUILD)/cuda-fake/libcuda.so.1: $(FAKE_LIBCUDA_DEPS) | cuda-headers
	@mkdir -p $(@D)
	$(CC) $(CUBERT_WARN) $(HOST_DEFS) -Itests/cuda -isystem $(CUDA_INCLUDE) $(CFLAGS) -fPIC -shared \
	  -Wl,-soname,libcuda.so.1 -o $@ $(FAKE_LIBCUDA_SRC) -lpthread
$(BUILD)/cuda-fake-nogpa/libcuda.so.1: $(FAKE_LIBCUDA_DEPS) | cuda-headers
	@mkdir -p $(@D)
	$(CC) $(CUBERT_WARN) $(HOST_DEFS) -DFAKE_CUDA_NO_GET_PROC_ADDRESS -Itests/cuda -isystem $(CUDA_INCLUDE) \
	  $(CFLAGS) -fPIC -shared -Wl,-soname,libcuda.so.1 -o $@ $(FAKE_LIBCUDA_SRC) -lpthread

# The fake NCCL (tests/cuda/fake_libnccl.c) the collective tests load instead of
# libnccl.so.2, and variants: too old (2.6.4, no ncclCommInitRankConfig), no ncclSend.
FAKE_LIBNCCL_SRC := tests/cuda/fake_libnccl.c tests/cuda/fake_libnccl_shm.c
FAKE_LIBNCCL_DEPS := $(FAKE_LIBNCCL_SRC) tests/cuda/fake_libnccl.h tests/cuda/fake_libnccl_internal.h \
  backend-cuda/cuda_nccl_abi.h
fake_nccl_flags = $(if $(filter %-old,$(1)),-DFAKE_NCCL_OLD,$(if $(filter %-nosend,$(1)),-DFAKE_NCCL_NO_SEND))
$(FAKE_LIBNCCL_VARIANTS:%=$(BUILD)/%/libnccl.so.2): $(FAKE_LIBNCCL_DEPS)
	@mkdir -p $(@D)
	$(CC) $(CUBERT_WARN) $(HOST_DEFS) $(call fake_nccl_flags,$(notdir $(@D))) -Itests/cuda -Ibackend-cuda \
	  $(CFLAGS) -fPIC -shared -Wl,-soname,libnccl.so.2 -o $@ $(FAKE_LIBNCCL_SRC) -ldl -lpthread

# The Mean kernels' embedded PTX (backend-cuda/cuda_comm_mean_ptx.h) from
# backend-cuda/cuda_comm_kernels.h: regenerate it after editing the kernels (needs nvcc).
.PHONY: comm-mean-ptx
comm-mean-ptx:
	NVCC='$(NVCC)' sh tools/cubert-comm-ptx.sh backend-cuda/cuda_comm_mean_ptx.h

# The GPU smoke program (tests/cuda/cuda_smoke.c): run it on a machine with a GPU.
# (it calls the device layer's internal functions: it links the internal archive)
$(BUILD)/cuda-smoke: tests/cuda/cuda_smoke.c $(CUDA_LINK_OBJ) $(INTERNAL_LIB) | cuda-headers
	$(CC) $(CUBERT_CFLAGS) $(HOST_DEFS) -Ibackend-cuda $(KERNELS_INC) \
	  -isystem $(CUDA_INCLUDE) $(DEPFLAGS) $(CPPFLAGS) $(CFLAGS) $(CUBERT_REQUIRED) $(LDFLAGS) -o $@ $< $(CUDA_LINK_OBJ) $(INTERNAL_LIB) $(HOST_LIBS)
ifeq ($(CUDA),1)
cuda-smoke: $(BUILD)/cuda-smoke
	$(BUILD)/cuda-smoke $(SMOKE_ARGS)
else
cuda-smoke:
	@echo "cuda-smoke: needs CUDA=1 (make CUDA=1 cuda-smoke)"; exit 1
endif

# bench/bench_cuda.c: the GPU benchmarks (raw Driver API peers through the loader's table),
# with the kernel images linked in.
ifeq ($(CUDA),1)
$(BUILD)/bench/bench_cuda: bench/bench_cuda.c $(CUDA_LINK_OBJ) $(BENCH_SUPPORT_OBJ) $(INTERNAL_LIB) | $(BUILD)/bench cuda-headers
	$(CC) $(CUBERT_CFLAGS) $(HOST_DEFS) -Icore -Ibackend-cpu -Ibackend-cuda -isystem $(CUDA_INCLUDE) -Itests/support $(KERNELS_INC) $(DEPFLAGS) $(CPPFLAGS) $(CFLAGS) $(CUBERT_REQUIRED) $(LDFLAGS) -o $@ $< $(CUDA_LINK_OBJ) $(BENCH_SUPPORT_OBJ) $(INTERNAL_LIB) $(HOST_LIBS)
# bench/bench_nccl.c: all_reduce through the client next to raw NCCL (the loaders' tables).
$(BUILD)/bench/bench_nccl: bench/bench_nccl.c $(CUDA_LINK_OBJ) $(BENCH_SUPPORT_OBJ) $(INTERNAL_LIB) | $(BUILD)/bench cuda-headers
	$(CC) $(CUBERT_CFLAGS) $(HOST_DEFS) -Icore -Ibackend-cpu -Ibackend-cuda -isystem $(CUDA_INCLUDE) -Itests/support $(KERNELS_INC) $(DEPFLAGS) $(CPPFLAGS) $(CFLAGS) $(CUBERT_REQUIRED) $(LDFLAGS) -o $@ $< $(CUDA_LINK_OBJ) $(BENCH_SUPPORT_OBJ) $(INTERNAL_LIB) $(HOST_LIBS)
endif

# A user's own kernels: make kernel-image KERNELS=path/my_kernels.h [OUT=my_kernels_image.c]
# writes the C file to compile into the program (docs/kernels.md).
kernel-image:
	@test -n "$(KERNELS)" || { echo "usage: make kernel-image KERNELS=path/my_kernels.h [OUT=file.c]"; exit 2; }
	NVCC='$(NVCC)' NVCC_FLAGS='$(NVCC_FLAGS)' PTX_ARCH='$(NVCC_PTX_ARCH)' CUBIN_ARCH='$(NVCC_CUBIN_ARCH)' \
	  sh tools/cubert-kernel-image.sh -I include -o $(or $(OUT),$(basename $(KERNELS))_image.c) $(KERNELS)

# ---- help ---------------------------------------------------------------------------------
help:
	@echo 'cubert $(VERSION). Targets (BUILD=$(BUILD); every output goes under it):'
	@echo '  all (default)       libcubert.a, libcubert.so.$(VERSION) + symlinks, cubert.pc'
	@echo '  run                 build the examples and run examples/demo'
	@echo '  test                build and run the suite, then the conformance suite on all three drivers'
	@echo '                      (after fuzz-replay); TESTS="prefix ..." runs a subset'
	@echo '  cts                 the conformance suite on one driver: SERVER=cpu|deterministic|inline|cuda (CUDA=1)'
	@echo '  check               test check-freestanding check-headers check-32bit check-cortex-m check-install'
	@echo '                      check-symbols fuzz-replay check-tools check-cortex-m0 check-cxx-host check-stack'
	@echo '                      check-hygiene check-embedded-demo, and check-clang'
	@echo '  check-freestanding  core/: no libc includes/calls, undefined symbols and mutable data allowlisted'
	@echo '  check-headers       every public header compiles alone as C99 and C++11'
	@echo '  check-kernel-warnings every kernel source at gcc and clang -O3 -Wall -Wextra -Werror (tests/build/kernel_warnings.c)'
	@echo '  check-32bit         core + tests/unit built with -m32 and run (gcc-multilib)'
	@echo '  check-cortex-m      core cross-compiled for Cortex-M4, symbol allowlist (gcc-arm-none-eabi)'
	@echo '  check-cortex-m0     core for Cortex-M0 through the critical-section hook; unit tests through the hook'
	@echo '  check-cxx-host      examples/embedded/cxx_host.cpp with g++ and clang++ -std=c++11 -Werror, run'
	@echo '  check-embedded-demo examples/embedded/arena_demo.c (static arena, inline driver, OOM sweep) on this machine'
	@echo '  test-cortex-m       the demo, then unit tests + conformance suite (inline driver) on Cortex-M4F under'
	@echo '                      qemu-system-arm -M mps2-an386 (docs/embedding.md); cortex-m-demo: the demo alone'
	@echo '  test-bigendian      unit tests + conformance suite (three drivers) built for s390x, run under qemu-s390x'
	@echo '  check-clang         all, examples, tools, benches, fuzz targets, tests, checks with $(CLANG) (BUILD/clang)'
	@echo '  check-install       install to a temp DESTDIR, pkg-config consumer (static+shared), uninstall'
	@echo '  check-symbols       libcubert.a and libcubert.so export only cubert_ symbols (the same set)'
	@echo '  check-minimal       the suite with every cubert/config.h switch off (BUILD/minimal): unit, client and'
	@echo '                      conformance tests (inline driver)'
	@echo '  check-hygiene       SPDX line in every source file, no reference outside the repository, include graph'
	@echo '                      without cycles or includes up the layers (tests/build/check_hygiene.sh)'
	@echo '  check-stack         no stack frame of core/ (+ STACK_SRC) over STACK_LIMIT=$(STACK_LIMIT) bytes (gcc -fstack-usage)'
	@echo '  check-tools         build/tools/cubert-info lists devices and pool layouts; a bad option exits 2'
	@echo '  check-trace-tool    examples/trace writes a trace, tools/trace-to-svg.py renders it (python3)'
	@echo '  check-matrix        gcc/clang x -O0 -g/-O2/-O3 -march=native/-Os, -fno-common, --coverage, -j1/-j8, out-of-tree BUILD,'
	@echo '                      user CFLAGS/LDFLAGS; each from clean in BUILD/matrix (make test at -O0 and -O3)'
	@echo '  coverage            the suite built with --coverage (gcc -O0): line and branch-taken summary of core/'
	@echo '  asan | tsan         the suite under ASan+UBSan | TSan (BUILD/asan, BUILD/tsan)'
	@echo '  oom                 every conformance test with allocation failures injected, 3 servers (OOM_TESTS=prefix)'
	@echo '  stress              8 client threads, STRESS_OPS=$(STRESS_OPS) ops, shadow-checked (STRESS_BUSY=N spinners)'
	@echo '  stress-tsan         the same under TSan, 20000 ops (BUILD/tsan)'
	@echo '  valgrind            memcheck over the suites tests/{$(VALGRIND_SUITES)} (VALGRIND_SUITES, TESTS): 0 errors, 0 bytes lost'
	@echo '  fuzz                libFuzzer targets fuzz/fuzz_*.c with $(FUZZ_CC), FUZZ_SECONDS=$(FUZZ_SECONDS) each (fuzz/dict/NAME.dict)'
	@echo '  fuzz-replay         the same targets with CC + fuzz/standalone_main.c over fuzz/corpus/*'
	@echo '  bench | benches     install the peers (root+apt), build and run bench/*.c, one table, CSV + SVG'
	@echo '                      ($(BUILD)/bench/results.csv, bench.svg) | only build (BENCH_ARGS passed to each)'
	@echo '  examples | tools    build examples/*.c | tools/*.c'
	@echo '  sim                 deterministic-simulation seed sweep (SEEDS=$(SEEDS)): seeds run, violations, slowest seed'
	@echo '  CUDA=1 ...          also the CUDA backend (BUILD=build/cuda, CUDA_PATH=$(CUDA_PATH)); docs/cuda.md'
	@echo '  cuda-smoke          (CUDA=1) the GPU smoke program; tools/gpu-run.sh runs everything on a GPU machine'
	@echo '  kernel-image        KERNELS=my_kernels.h [OUT=file.c]: embed a kernel file'"'"'s CUDA image (nvcc)'
	@echo '  comm-mean-ptx       (CUDA=1) regenerate the all_reduce Mean kernels'"'"' PTX (nvcc); tools/gpu-run-nccl.sh runs the NCCL collectives on GPUs'
	@echo '  size                flash/RAM of the full and minimal core (+ inline driver), x86-64 and Cortex-M4, and'
	@echo '                      what the static-arena demo links of them on Cortex-M4'
	@echo '  install | uninstall PREFIX=$(PREFIX) DESTDIR= libdir= includedir= pkgconfigdir='
	@echo '  clean               rm -rf $(BUILD)'
	@echo 'Variables: CC CXX CFLAGS CPPFLAGS LDFLAGS (added to the project flags) WERROR=1 (warnings are errors)'
	@echo '           BUILD TESTS CONFIG_FLAGS CUDA=1 CUDA_PATH NVCC CLANG FUZZ_CC FUZZ_SECONDS FUZZ_ARGS COV_CC GCOV MATRIX_GCC'

# ---- rebuild on changed flags (see FLAGS_FILE) ---------------------------------------------
ifeq ($(filter clean help uninstall,$(MAKECMDGOALS)),)
$(shell mkdir -p '$(BUILD)' && printf '%s\n' '$(subst ','\'',$(BUILD_FLAGS))' | cmp -s - '$(FLAGS_FILE)' || \
  printf '%s\n' '$(subst ','\'',$(BUILD_FLAGS))' > '$(FLAGS_FILE)')
endif
$(FLAGS_FILE): ;
$(LIB_OBJ) $(TEST_OBJ) $(UNIT_ONLY_OBJ) $(OOM_OBJ) $(OOM_BIN) $(STRESS_BIN) $(FUZZ_SRC:%.c=$(BUILD)/obj/%.o) $(BUILD)/obj/fuzz/standalone_main.o \
$(TEST_BIN) $(EXAMPLE_BIN) $(BENCH_BIN) $(TOOL_BIN) $(FUZZ_BIN): $(FLAGS_FILE)
