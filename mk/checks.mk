# SPDX-License-Identifier: MIT
# mk/checks.mk (included by the Makefile): make check and its parts, size, coverage.
# The work is done by the scripts in tests/build/; each target says which.

ARM_CC ?= arm-none-eabi-gcc
ARM_SIZE ?= arm-none-eabi-size
ARM_NM ?= arm-none-eabi-nm
QEMU_I386 ?= qemu-i386
SIZE ?= size
READELF ?= readelf
# Every switch of cubert/config.h off: the minimal core (make size, make check-minimal).
MINIMAL_CONFIG := -DCUBERT_CONFIG_RACE_CHECKER=0 -DCUBERT_CONFIG_SIMULATION=0 \
  -DCUBERT_CONFIG_PROFILING=0 -DCUBERT_CONFIG_ERROR_TEXT=0 -DCUBERT_CONFIG_COLLECTIVES=0 \
  -DCUBERT_CONFIG_STAGING=0 -DCUBERT_CONFIG_PAGED_POOLS=0 -DCUBERT_CONFIG_PERSISTENT_MEMORY=0 \
  -DCUBERT_CONFIG_DEVICE_REGISTRY_CAPACITY=8 -DCUBERT_CONFIG_ERROR_REASONS=0

HAVE_CLANG := $(shell command -v $(CLANG) 2>/dev/null)
check: test check-freestanding check-headers check-kernel-warnings check-32bit check-cortex-m check-install check-symbols \
       fuzz-replay check-tools check-cortex-m0 check-cxx-host check-embedded-demo check-stack check-hygiene check-docs \
       check-launch-arguments check-line-ptx check-unit-done check-dlpack-numpy $(if $(HAVE_CLANG),check-clang)
	@echo "check: ok$(if $(HAVE_CLANG),, (check-clang skipped: $(CLANG) not found; Debian: apt-get install clang))"

# DLPack (docs/interop.md): the C example (examples/dlpack.c), then, with NumPy, the ctypes
# helper library over the static library and examples/python/dlpack_numpy.py round-trips tensors with NumPy on the CPU driver (the
# same addresses both ways, a cubert kernel writing NumPy's memory, every dtype). The first
# python3 that imports numpy runs it (PYTHON, then /usr/bin/python3: Debian's python3-numpy);
# without one it prints "skipped: <reason>".
DLPACK_PY_LIB := $(BUILD)/examples/python/libcubert_dlpack.so
PYTHON ?= python3
.PHONY: dlpack-python check-dlpack-numpy
dlpack-python: $(DLPACK_PY_LIB)
$(DLPACK_PY_LIB): examples/python/cubert_dlpack.c $(CUDA_LINK_OBJ) $(STATIC_LIB) $(FLAGS_FILE)
	@mkdir -p $(@D)
	$(QUIET_LINK)$(CC) $(CUBERT_CFLAGS) $(HOST_DEFS) $(KERNELS_INC) $(CPPFLAGS) $(CFLAGS) $(CUBERT_REQUIRED) \
	  $(LDFLAGS) -shared -o $@ $< $(CUDA_LINK_OBJ) $(STATIC_LIB) $(HOST_LIBS)
check-dlpack-numpy: $(DLPACK_PY_LIB) $(BUILD)/examples/dlpack
	@$(BUILD)/examples/dlpack > $(BUILD)/examples/dlpack.out || { cat $(BUILD)/examples/dlpack.out; \
	  echo "check-dlpack-numpy: examples/dlpack failed"; exit 1; }
	@py=; for p in $(PYTHON) /usr/bin/python3; do \
	  if command -v $$p >/dev/null 2>&1 && $$p -c 'import numpy' >/dev/null 2>&1; then py=$$p; break; fi; \
	done; \
	if [ -z "$$py" ]; then \
	  echo "check-dlpack-numpy: skipped: no python3 with NumPy (Debian: apt-get install python3-numpy)"; \
	else $$py examples/python/dlpack_numpy.py $(DLPACK_PY_LIB); fi

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
	  --cflags '$(CUBERT_WARN) $(CUBERT_WERROR) -Iinclude -Icore -I. -Ibackend-cpu -O2 -fno-pic -fno-stack-protector $(CORE_FREESTANDING)' \
	  $(CORE_SRC) $(FREESTANDING_CPU_SRC)

# check-headers keeps -Werror whatever WERROR says: a warning in a public header is the
# defect it looks for (it lands in every program that includes the header, and breaks
# those built with -Werror). check-freestanding and check-cortex-m follow WERROR: they
# compile the core the library build compiles, and check includes, symbols and data
# apart from the compiler's diagnostics.
PUBLIC_HEADERS := $(sort $(wildcard include/cubert/*.h include/cubert/driver/*.h))
check-headers:
	@sh tests/build/check_headers.sh '$(CC)' '$(CXX)' '$(CUBERT_WARN)' $(BUILD)/headers $(PUBLIC_HEADERS)

# Every kernel source of the project in one file (tests/build/kernel_warnings.c),
# gcc and clang at -O3 -Wall -Wextra -Werror: correct kernels give no warning
# (docs/kernels.md; issue 22's -Wmaybe-uninitialized).
KERNEL_WARN_INC := -Iinclude -Iexamples/kernels -Iexamples/transformer -Itests/cts -Itests/cuda -Ibackend-cuda
.PHONY: check-kernel-warnings
check-kernel-warnings:
	@set -e; mkdir -p $(BUILD)/headers; for cc in $(or $(KERNEL_WARN_CCS),gcc clang); do \
	  if ! command -v $$cc >/dev/null 2>&1; then echo "check-kernel-warnings: $$cc not installed, skipped"; continue; fi; \
	  $$cc -std=c99 -pedantic -Wall -Wextra -Wshadow -Werror -O3 -D_POSIX_C_SOURCE=200809L $(KERNEL_WARN_INC) \
	    -c tests/build/kernel_warnings.c -o $(BUILD)/headers/kernel_warnings_$$cc.o; \
	  echo "check-kernel-warnings: $$cc -O3 -Wall -Wextra: no warning"; \
	done

# Passing the kernel-side cubert_kernel_args_t (or a handle) to cubert_client_launch
# is a compile error, not a warning (tests/build/check_launch_arguments.sh).
.PHONY: check-launch-arguments
check-launch-arguments:
	@sh tests/build/check_launch_arguments.sh '$(CC)' $(BUILD)/launch-arguments '$(CXX)'

# Line accesses compile to vector loads/stores in nvcc's PTX (needs nvcc, no GPU).
.PHONY: check-line-ptx
check-line-ptx:
	@sh tests/build/check_line_ptx.sh '$(NVCC)' $(BUILD)/line-ptx

# CUBERT_UNIT_DONE inside CUBERT_UNIT_FOR does not compile (gcc, clang, nvcc when
# found); its right uses compile warning-free (tests/build/check_unit_done.sh).
.PHONY: check-unit-done
check-unit-done:
	@sh tests/build/check_unit_done.sh $(BUILD)/unit-done $(or $(KERNEL_WARN_CCS),gcc clang) -- '$(NVCC)'

# tools/cubert-info lists every device it creates and refuses a bad option (exit 2);
# every program answers --help (usage on stdout, exit 0) and an unknown option (exit 2).
check-tools: $(TOOL_BIN) $(EXAMPLE_BIN) $(BENCH_BIN)
	@sh tests/build/check_help.sh $(TOOL_BIN) $(EXAMPLE_BIN) $(BENCH_BIN)
	@sh tests/build/check_tools.sh $(BUILD) $(if $(filter 1,$(CUDA)),1,0)

# The timeline trace end to end (docs/profiling.md): examples/trace writes a trace,
# tools/trace-to-svg.py renders it (python3; not part of `make test`).
.PHONY: check-trace-tool
check-trace-tool: $(BUILD)/examples/trace
	@sh tests/build/check_trace_tool.sh $(BUILD)

# The core's unit tests, built and run as 32-bit code (size_t is 32 bits).
check-32bit:
	@printf 'int main(void) { return 0; }\n' | $(CC) -m32 -x c - -o /dev/null 2>/dev/null || \
	  { echo "check-32bit: $(CC) -m32 cannot link (Debian: apt-get install gcc-multilib)"; exit 1; }
	@$(MAKE) --no-print-directory WERROR=$(WERROR) BUILD=$(BUILD)/m32 VARIANT_FLAGS=-m32 $(BUILD)/m32/cubert-unit-test
	@sh tests/build/check_32bit.sh '$(CC)' '$(READELF)' '$(QEMU_I386)' $(BUILD)/m32/cubert-unit-test $(TESTS)

# The library and the suite built with every feature of cubert/config.h compiled
# out (BUILD/minimal): the unit tests, the client's tests and the conformance
# suite on the inline driver run; the switched-off API says so, the tests of
# those features print "skipped: compiled out (...)".
# MINIMAL_TESTS: the test prefixes run (the CPU driver's own tests, tests/os
# and tests/sim, need the simulation and threads: not run here).
MINIMAL_TESTS ?= allocator comm config cube device error handle layout memory profile race sim_ \
  stream version client_ cts_
check-minimal:
	@$(MAKE) --no-print-directory WERROR=$(WERROR) BUILD=$(BUILD)/minimal CONFIG_FLAGS='$(MINIMAL_CONFIG)' \
	  $(BUILD)/minimal/cubert-test
	@sh tests/build/check_minimal_config.sh '$(CC)' $(BUILD)/minimal/config-file '$(MINIMAL_CONFIG)'
	CUBERT_CTS_DRIVER=inline $(BUILD)/minimal/cubert-test $(or $(TESTS),$(MINIMAL_TESTS))

UNIT_ONLY_OBJ := $(SUPPORT_SRC:%.c=$(BUILD)/obj/%.o) $(UNIT_SRC:%.c=$(BUILD)/obj/%.o)
$(BUILD)/cubert-unit-test: $(UNIT_ONLY_OBJ) $(CORE_OBJ)
	$(QUIET_LINK)$(CC) $(VARIANT_FLAGS) $(CFLAGS) $(LDFLAGS) -o $@ $^ $(HOST_LIBS)

CORTEX_FLAGS = -mcpu=cortex-m4 -mthumb -Os -ffreestanding -nostdinc \
  -isystem $(shell $(ARM_CC) -print-file-name=include 2>/dev/null) -ffunction-sections -fdata-sections
check-cortex-m: | $(BUILD)/cortex-m
	@command -v $(ARM_CC) >/dev/null || { echo "check-cortex-m: $(ARM_CC) not found (Debian: apt-get install gcc-arm-none-eabi)"; exit 1; }
	@$(CHECK_FREESTANDING) --label check-cortex-m --cc '$(ARM_CC)' --nm '$(ARM_NM)' \
	  --out $(BUILD)/cortex-m --cflags '$(CUBERT_WARN) $(CUBERT_WERROR) -Iinclude -Icore -I. -Ibackend-cpu $(CORTEX_FLAGS)' \
	  $(CORE_SRC) $(FREESTANDING_CPU_SRC)

# test-cortex-m, test-bigendian, check-cortex-m0, check-cxx-host (docs/embedding.md).
include tests/embedded/embedded.mk

# The whole library, tests, examples, tools and benches with clang (own BUILD dir),
# plus the freestanding and header checks with clang/clang++.
check-clang:
	@command -v $(CLANG) >/dev/null || { echo "check-clang: $(CLANG) not found (Debian: apt-get install clang)"; exit 1; }
	@$(MAKE) --no-print-directory WERROR=$(WERROR) CC=$(CLANG) CXX=$(CLANGXX) BUILD=$(BUILD)/clang \
	  all examples tools benches fuzz-targets check-freestanding check-headers check-launch-arguments
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

# Every path and every function, type or macro that docs/architecture.md, docs/interop.md and
# docs/writing-a-driver.md name exists where they say (tests/build/check_docs.sh).
.PHONY: check-docs
check-docs:
	@sh tests/build/check_docs.sh

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
	  --cflags '$(CUBERT_WARN) -Iinclude -Icore -I. -Ibackend-cpu -fno-pic -fno-stack-protector $(CORE_FREESTANDING)' \
	  --arm-cc '$(ARM_CC)' --arm-size '$(ARM_SIZE)' --arm-nm '$(ARM_NM)' \
	  --arm-cflags '$(CUBERT_WARN) -Iinclude -Icore -I. -Ibackend-cpu $(CORTEX_FLAGS)' --minimal '$(MINIMAL_CONFIG)' \
	  --driver '$(FREESTANDING_CPU_SRC)' --demo examples/embedded/arena_demo.c \
	  --demo-cflags '-std=c99 -Iinclude -Iexamples/kernels -Itests/embedded/cortex-m -mcpu=cortex-m4 -mthumb -Os -ffunction-sections -fdata-sections' \
	  --startup tests/embedded/cortex-m/startup.c --ld tests/embedded/cortex-m/an386.ld \
	  $(CORE_SRC)

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
	@sh tests/build/coverage_run.sh $(BUILD)/coverage '$(GCOV)' '$(TESTS)' $(CORE_SRC)

