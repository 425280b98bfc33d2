# SPDX-License-Identifier: MIT
# cubert: the CubeCL runtime in C99. This file is the build (library, tests, examples, tools,
# install); `make help` lists every target. The rest is in included makefiles:
#   mk/checks.mk      check, check-* (freestanding, headers, 32-bit, Cortex-M, install, symbols,
#                     minimal, matrix, ...), size, coverage   (tests/build/*.sh do the work)
#   mk/reliability.mk asan, tsan, oom, stress, valgrind
#   mk/fuzz.mk        fuzz, fuzz-replay (fuzz/README.md)
#   mk/bench.mk       bench, benches, sim (docs/benchmarks.md)
#   mk/cuda.mk        CUDA=1: the CUDA driver's kernel images, fake libcuda/libnccl, GPU programs
#   mk/install.mk     install, uninstall (cubert.pc, the CMake package, cubert-info)
#   mk/quiet.mk       V=1 / the short lines of a quiet build
#   mk/help.mk        make help
#   tests/embedded/embedded.mk   test-cortex-m, test-bigendian, check-cortex-m0, ...

# ---- user-overridable -------------------------------------------------------
CC ?= cc
CXX ?= c++
AR ?= ar
OBJCOPY ?= objcopy
NM ?= nm
# CFLAGS, CPPFLAGS and LDFLAGS are the user's: they add to the project's flags
# (CUBERT_* below) and never replace them; what the code needs comes after them.
CFLAGS ?= -O2 -g
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
bindir ?= $(PREFIX)/bin
cmakedir ?= $(libdir)/cmake/cubert
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
CLANG ?= clang
CLANGXX ?= clang++
# Extra flags for a whole build variant (sanitizers); kept apart from CFLAGS.
VARIANT_FLAGS ?=
# Compile-time switches of cubert/config.h, e.g. CONFIG_FLAGS=-DCUBERT_CONFIG_PROFILING=0.
CONFIG_FLAGS ?=
# V=1 prints every command in full; the default one short line per step (mk/quiet.mk).
V ?= 0
include mk/quiet.mk

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
CORE_FREESTANDING := -ffreestanding -nostdinc -isystem $(shell $(CC) -print-file-name=include)
# $(BUILD)/flags records the compiler and flags this BUILD was made with; it is rewritten
# only when they change, and objects and programs depend on it (end of this file): after
# `make`, a `make CFLAGS=-O0` or `make WERROR=1` rebuilds instead of keeping stale objects.
FLAGS_FILE = $(BUILD)/flags
BUILD_FLAGS = $(CC) | $(CUBERT_CFLAGS) | $(CPPFLAGS) | $(CFLAGS) | $(CUBERT_REQUIRED) | $(LDFLAGS) | $(BENCH_OPT)
HOST_DEFS := -D_POSIX_C_SOURCE=200809L -D_DEFAULT_SOURCE
HOST_LIBS := -lpthread -ldl -lm

# core/ is split into layers (docs/architecture.md): base, memory, stream, check, device, server, client.
CORE_SRC := $(sort $(wildcard core/*/*.c))
# backend-cpu/: host/ (the OS layer), cpu/ (the CPU driver), and the freestanding parts
# built with the core's flags: kernel/ (running CPU kernels) and inline/ (the inline driver).
FREESTANDING_CPU_SRC := $(sort $(wildcard backend-cpu/kernel/*.c backend-cpu/inline/*.c))
HOST_SRC := $(sort $(wildcard os/*.c backend-cpu/cpu/*.c)) $(FREESTANDING_CPU_SRC)
CUDA_SRC :=
# Objects linked into the test binary, examples, tools and benches of a CUDA=1 build
# (the embedded kernel images); the CUDA section below fills it.
CUDA_LINK_OBJ :=
CUDA_TEST_DEPS :=
HAVE_NVCC :=
ifeq ($(CUDA),1)
CUDA_SRC := $(sort $(filter-out backend-cuda/fake/%,$(wildcard backend-cuda/*/*.c)))
CUBERT_CFLAGS += -DCUBERT_HAVE_BACKEND_CUDA=1
HAVE_NVCC := $(shell command -v $(NVCC) 2>/dev/null)
# The single-source kernel files whose CUDA images every program of the build
# carries (one kernel library; nvcc needed, else the images are left out and the
# GPU tests say so).
KERNEL_SOURCES := examples/kernels/cubert_kernels.h tests/cts/cts_kernels.h tests/cts/cts_kernels_launch.h \
  tests/cts/cts_dialect_kernels.h tests/cuda/cuda_test_kernels.h examples/transformer/transformer_kernels.h
CUDA_LINK_OBJ := $(if $(HAVE_NVCC),$(KERNEL_SOURCES:%.h=$(BUILD)/kernels/%.o))
FAKE_LIBNCCL_VARIANTS := cuda-fake-nccl cuda-fake-nccl-old cuda-fake-nccl-nosend
CUDA_TEST_DEPS := $(BUILD)/cuda-fake/libcuda.so.1 $(BUILD)/cuda-fake-nogpa/libcuda.so.1 \
  $(BUILD)/libcubert-fakecuda.so \
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
CTS_SRC := $(sort $(wildcard tests/cts/*.c tests/os/*.c tests/sim/*.c))
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
        check-headers check-32bit check-cortex-m check-clang check-install check-symbols check-stack check-hygiene check-minimal check-tools asan tsan examples \
        tools fuzz fuzz-build fuzz-replay fuzz-targets valgrind help check-matrix coverage
.DEFAULT_GOAL := all

all: $(STATIC_LIB) $(SHARED_LIB) $(PC_FILE) $(if $(filter 1,$(CUDA)),$(BUILD)/libcubert-fakecuda.so)

# ---- objects -------------------------------------------------------------------
# Header dependencies are tracked by the compiler (-MMD -MP): touching a header
# rebuilds exactly the objects that include it (the .d files beside the objects).
DEPFLAGS = -MMD -MP
# core/ is compiled freestanding in every build: only the compiler's headers.
$(BUILD)/obj/core/%.o: core/%.c
	@mkdir -p $(dir $@)
	$(QUIET_CC)$(CC) $(CUBERT_CFLAGS) -Icore $(DEPFLAGS) $(CPPFLAGS) $(CFLAGS) $(CUBERT_REQUIRED) $(CORE_FREESTANDING) -c $< -o $@

# The OS layer (os/) and the CPU driver are hosted code.
$(BUILD)/obj/os/%.o: os/%.c
	@mkdir -p $(dir $@)
	$(QUIET_CC)$(CC) $(CUBERT_CFLAGS) $(HOST_DEFS) -I. -Icore -Ibackend-cpu $(DEPFLAGS) $(CPPFLAGS) $(CFLAGS) $(CUBERT_REQUIRED) -c $< -o $@

$(BUILD)/obj/backend-cpu/%.o: backend-cpu/%.c
	@mkdir -p $(dir $@)
	$(QUIET_CC)$(CC) $(CUBERT_CFLAGS) $(HOST_DEFS) -I. -Icore -Ibackend-cpu $(DEPFLAGS) $(CPPFLAGS) $(CFLAGS) $(CUBERT_REQUIRED) -c $< -o $@

# The freestanding parts of backend-cpu follow the core's rules (check-freestanding).
$(BUILD)/obj/backend-cpu/kernel/%.o: backend-cpu/kernel/%.c
	@mkdir -p $(dir $@)
	$(QUIET_CC)$(CC) $(CUBERT_CFLAGS) $(CORE_FREESTANDING) -Icore -I. -Ibackend-cpu $(DEPFLAGS) $(CPPFLAGS) $(CFLAGS) $(CUBERT_REQUIRED) -c $< -o $@

$(BUILD)/obj/backend-cpu/inline/%.o: backend-cpu/inline/%.c
	@mkdir -p $(dir $@)
	$(QUIET_CC)$(CC) $(CUBERT_CFLAGS) $(CORE_FREESTANDING) -Icore -I. -Ibackend-cpu $(DEPFLAGS) $(CPPFLAGS) $(CFLAGS) $(CUBERT_REQUIRED) -c $< -o $@

# cuda.h is a system header here (-isystem): it uses anonymous unions, which C99 lacks.
$(BUILD)/obj/backend-cuda/%.o: backend-cuda/%.c | cuda-headers
	@mkdir -p $(dir $@)
	$(QUIET_CC)$(CC) $(CUBERT_CFLAGS) $(HOST_DEFS) -I. -Icore -Ibackend-cpu -Ibackend-cuda -isystem $(CUDA_INCLUDE) $(DEPFLAGS) $(CPPFLAGS) $(CFLAGS) $(CUBERT_REQUIRED) -c $< -o $@

# The kernel library every example, test, tool, bench and fuzz target uses
# (examples/kernels/cubert_kernels.h, docs/kernels.md).
KERNELS_INC := -Iexamples/kernels -Iexamples/transformer

# Tests, examples, benches and tools are hosted code (they may use libc).
$(BUILD)/obj/tests/%.o: tests/%.c
	@mkdir -p $(dir $@)
	$(QUIET_CC)$(CC) $(CUBERT_CFLAGS) $(HOST_DEFS) -Itests/support -Icore -I. -Ibackend-cpu $(KERNELS_INC) $(DEPFLAGS) $(CPPFLAGS) $(CFLAGS) $(CUBERT_REQUIRED) -c $< -o $@

# Fuzz targets and the standalone replay main are hosted code too.
$(BUILD)/obj/fuzz/%.o: fuzz/%.c
	@mkdir -p $(dir $@)
	$(QUIET_CC)$(CC) $(CUBERT_CFLAGS) $(HOST_DEFS) -Ifuzz -I. -Icore -Ibackend-cpu $(KERNELS_INC) $(DEPFLAGS) $(CPPFLAGS) $(CFLAGS) $(CUBERT_REQUIRED) -c $< -o $@

$(BUILD)/examples $(BUILD)/bench $(BUILD)/tools $(BUILD)/freestanding $(BUILD)/headers $(BUILD)/cortex-m \
$(BUILD)/fuzz $(BUILD)/valgrind:
	mkdir -p $@

-include $(wildcard $(BUILD)/obj/*/*.d $(BUILD)/obj/*/*/*.d $(BUILD)/obj/*/*/*/*.d)

# ---- libraries -------------------------------------------------------------------
# libcubert.a is one relocatable object whose hidden symbols (all but the
# CUBERT_API ones) are made local, so it exports what the .so exports.
$(LIB_RELOC): $(LIB_OBJ)
	$(QUIET_LINK)$(CC) $(VARIANT_FLAGS) -r -nostdlib -o $@ $^
	$(QUIET_OBJCOPY)$(OBJCOPY) --localize-hidden $@

$(STATIC_LIB): $(LIB_RELOC)
	@rm -f $@
	$(QUIET_AR)$(AR) rcs $@ $<

$(INTERNAL_LIB): $(LIB_OBJ)
	@rm -f $@
	$(QUIET_AR)$(AR) rcs $@ $^

$(SHARED_LIB): $(LIB_OBJ)
	$(QUIET_LINK)$(CC) -shared -Wl,-soname,$(SONAME) $(if $(VARIANT_FLAGS),,-Wl,-z,defs) $(VARIANT_FLAGS) $(CFLAGS) $(LDFLAGS) -o $@ $^ $(HOST_LIBS)
	@ln -sf libcubert.so.$(VERSION) $(BUILD)/$(SONAME)
	@ln -sf $(SONAME) $(BUILD)/libcubert.so

$(PC_FILE): cubert.pc.in include/cubert/base.h
	$(QUIET_GEN)sed $(INSTALL_SUBST) $< > $@

# ---- tests ---------------------------------------------------------------------------
$(TEST_BIN): $(TEST_OBJ) $(CUDA_LINK_OBJ) $(INTERNAL_LIB) $(CUDA_TEST_DEPS)
	$(QUIET_LINK)$(CC) $(VARIANT_FLAGS) $(CFLAGS) $(LDFLAGS) -o $@ $(TEST_OBJ) $(CUDA_LINK_OBJ) $(INTERNAL_LIB) $(HOST_LIBS)

# TEST_WRAPPER runs the suite under a command (the sanitizer targets use setarch -R).
# `make test`: the suite, then the conformance suite on the other two drivers
# (tests/build/run_suite.sh); TESTS="prefix ..." runs only those tests. The full suite
# (no TESTS) also replays every fuzz target's committed corpus first (fuzz-replay).
TEST_WRAPPER ?=
# A CUDA=1 build also runs the conformance suite on the CUDA driver over the fake libcuda,
# and (full suite) check-fakecuda: examples/cuda_fake over the installed fake (mk/cuda.mk).
test: $(TEST_BIN) $(if $(filter 1,$(CUDA)),$(BUILD)/cuda-smoke) $(if $(TESTS),,fuzz-replay \
  $(if $(filter 1,$(CUDA)),check-fakecuda))
	@$(if $(filter 1,$(CUDA)),CUBERT_FAKE_LIBCUDA=$(abspath $(BUILD))/cuda-fake/libcuda.so.1 \
	  CUBERT_FAKE_LIBNCCL=$(abspath $(BUILD))/cuda-fake-nccl/libnccl.so.2 \
	  CUBERT_FAKECUDA_LIB=$(abspath $(BUILD))/libcubert-fakecuda.so) \
	  sh tests/build/run_suite.sh '$(TEST_WRAPPER)' $(TEST_BIN) $(TESTS)

# The conformance suite on one driver: make cts DRIVER=name, a driver registered by its
# own file (tests/cts/cts.h): cpu, deterministic, inline, cuda (a CUDA=1 build: the GPU
# through libcuda.so.1, or CUBERT_LIBCUDA=... ; without one every test prints "skipped: CUDA
# unavailable: <reason>"), probe (test only); an unknown name lists the registered ones.
# SERVER= is the old name of DRIVER=, still accepted.
DRIVER ?= $(or $(SERVER),cpu)
.PHONY: cts
cts: $(TEST_BIN)
	CUBERT_CTS_DRIVER=$(DRIVER) $(TEST_WRAPPER) $(TEST_BIN) cts_

# ---- examples and tools ----------------------------------------------------------------
$(BUILD)/examples/%: examples/%.c $(CUDA_LINK_OBJ) $(STATIC_LIB) | $(BUILD)/examples
	$(QUIET_LINK)$(CC) $(CUBERT_CFLAGS) $(HOST_DEFS) $(KERNELS_INC) $(DEPFLAGS) $(CPPFLAGS) $(CFLAGS) $(CUBERT_REQUIRED) $(LDFLAGS) -o $@ $< $(CUDA_LINK_OBJ) $(STATIC_LIB) $(HOST_LIBS)
$(BUILD)/tools/%: tools/%.c $(CUDA_LINK_OBJ) $(STATIC_LIB) | $(BUILD)/tools
	$(QUIET_LINK)$(CC) $(CUBERT_CFLAGS) $(HOST_DEFS) $(KERNELS_INC) $(DEPFLAGS) $(CPPFLAGS) $(CFLAGS) $(CUBERT_REQUIRED) $(LDFLAGS) -o $@ $< $(CUDA_LINK_OBJ) $(STATIC_LIB) $(HOST_LIBS)
-include $(wildcard $(BUILD)/examples/*.d $(BUILD)/bench/*.d $(BUILD)/tools/*.d)

# examples/transformer/: the forward layers of a GPT-2 block in the kernel dialect, each
# checked against the plain C reference and timed (`make transformer`; TRANSFORMER_ARGS, e.g.
# --small, --head, --runs N). Built with BENCH_OPT (-O3, the host's vector width) after
# CFLAGS: the kernels' phases are loops the compiler vectorizes from -O3 on (docs/kernels.md).
TRANSFORMER_BIN := $(BUILD)/examples/transformer
EXAMPLE_BIN += $(TRANSFORMER_BIN)
$(TRANSFORMER_BIN): examples/transformer/transformer.c $(CUDA_LINK_OBJ) $(STATIC_LIB) | $(BUILD)/examples
	$(QUIET_LINK)$(CC) $(CUBERT_CFLAGS) $(HOST_DEFS) $(KERNELS_INC) $(DEPFLAGS) $(CPPFLAGS) $(CFLAGS) $(BENCH_OPT) $(CUBERT_REQUIRED) $(LDFLAGS) -o $@ $< $(CUDA_LINK_OBJ) $(STATIC_LIB) $(HOST_LIBS)
.PHONY: transformer
transformer: $(TRANSFORMER_BIN)
	$(TRANSFORMER_BIN) $(TRANSFORMER_ARGS)

examples: $(EXAMPLE_BIN)
tools: $(TOOL_BIN)
run: $(EXAMPLE_BIN)
	$(BUILD)/examples/demo

clean:
	rm -rf $(BUILD)


include mk/install.mk mk/checks.mk mk/reliability.mk mk/fuzz.mk mk/bench.mk mk/cuda.mk mk/help.mk

# ---- rebuild on changed flags (see FLAGS_FILE) ---------------------------------------------
ifeq ($(filter clean help uninstall,$(MAKECMDGOALS)),)
$(shell mkdir -p '$(BUILD)' && printf '%s\n' '$(subst ','\'',$(BUILD_FLAGS))' | cmp -s - '$(FLAGS_FILE)' || \
  printf '%s\n' '$(subst ','\'',$(BUILD_FLAGS))' > '$(FLAGS_FILE)')
endif
$(FLAGS_FILE): ;
$(LIB_OBJ) $(TEST_OBJ) $(UNIT_ONLY_OBJ) $(OOM_OBJ) $(OOM_BIN) $(STRESS_BIN) $(FUZZ_SRC:%.c=$(BUILD)/obj/%.o) $(BUILD)/obj/fuzz/standalone_main.o \
$(TEST_BIN) $(EXAMPLE_BIN) $(BENCH_BIN) $(TOOL_BIN) $(FUZZ_BIN): $(FLAGS_FILE)
