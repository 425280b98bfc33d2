# SPDX-License-Identifier: MIT
# tests/embedded/embedded.mk: the embedded targets (docs/embedding.md), included by the Makefile.
#
#   make test-cortex-m    the core's unit tests and the conformance suite on the inline driver
#                         on Cortex-M4F, run under qemu-system-arm -M mps2-an386
#   make test-bigendian   the same unit tests, and the conformance suite on the three drivers
#                         (cpu, deterministic, inline), built for s390x (big-endian) with clang
#                         and Debian's s390x sysroot, run under qemu-s390x
#   make check-cortex-m0  the core for Cortex-M0 (no atomic RMW instructions) through the
#                         critical-section hook, linked; plus the host unit tests through that hook
#   make check-cxx-host   examples/embedded/cxx_host.cpp with g++ and clang++ -std=c++11 -Werror
#   make check-embedded-demo  examples/embedded/arena_demo.c on the build machine;
#                         make cortex-m-demo: bare metal on the Cortex-M4F (QEMU, 12 KiB stack),
#                         run first by test-cortex-m
#
# Missing Debian packages are installed by tests/embedded/need_packages.sh (apt-get, as root or
# through sudo -n; EMBEDDED_NO_APT=1 only reports them).

ARM_AR ?= arm-none-eabi-ar
QEMU_ARM ?= qemu-system-arm
QEMU_BE ?= qemu-s390x
# Debian's s390x-linux-gnu-gcc conflicts with gcc-multilib (check-32bit), so the big-endian
# build uses clang as the cross compiler over the same Debian cross sysroot and binutils.
BE_TRIPLE ?= s390x-linux-gnu
BE_CC ?= $(CLANG) --target=$(BE_TRIPLE)
BE_SYSROOT ?= /usr/$(BE_TRIPLE)
BE_LIBGCC ?= /usr/lib/gcc-cross/$(BE_TRIPLE)/12/libgcc.a
# Wall-clock bound of the whole Cortex-M run (the runner has no per-test timeout).
CORTEX_M_TIMEOUT ?= 300
NEED_PACKAGES = sh tests/embedded/need_packages.sh

.PHONY: test-cortex-m test-bigendian check-cortex-m0 check-cxx-host

# ---- Cortex-M4F: the unit tests and the conformance suite under QEMU ------------------------
CM4_BUILD := $(BUILD)/cortex-m4
CM4_ARCH := -mcpu=cortex-m4 -mthumb -mfloat-abi=hard -mfpu=fpv4-sp-d16
CM4_OPT ?= -Os -g
CM4_COMMON = $(CUBERT_WARN) $(CUBERT_WERROR) -Iinclude $(CM4_ARCH) $(CM4_OPT) -ffunction-sections -fdata-sections $(DEPFLAGS)
# The library objects: the core's freestanding flags (only the compiler's headers). The
# library is the core plus the freestanding parts of backend-cpu: the inline driver and
# the CPU kernel runner (FREESTANDING_CPU_SRC).
CM4_CORE_FLAGS = $(CM4_COMMON) -Icore -Ibackend-cpu -ffreestanding -nostdinc -isystem $(shell $(ARM_CC) -print-file-name=include 2>/dev/null)
# The harness (tests, support, runner, start-up) is hosted by newlib; CUBERT_TEST_EMBEDDED=1
# lets a test that needs processes, threads or a large memory say "skipped: ...".
# The conformance suite (tests/cts) is built for the inline driver alone (CUBERT_CTS_INLINE_ONLY:
# there is no environment to choose a driver with, and no OS layer).
CM4_TEST_FLAGS = $(CM4_COMMON) $(HOST_DEFS) -DCUBERT_TEST_EMBEDDED=1 -DCUBERT_CTS_INLINE_ONLY=1 \
  -Itests/embedded/include -Itests/embedded/cortex-m -Itests/support -Icore -Ibackend-cpu $(KERNELS_INC)
CM4_HARNESS_SRC := tests/embedded/runner.c tests/embedded/cortex-m/startup.c tests/embedded/cortex-m/atomic8.c \
  tests/embedded/cortex-m/newlib_extra.c
CM4_CTS_SRC := $(sort $(wildcard tests/cts/*.c))
CM4_TEST_SRC := $(filter-out tests/support/runner.c,$(SUPPORT_SRC)) $(UNIT_SRC) $(CM4_CTS_SRC) $(CM4_HARNESS_SRC)
CM4_CORE_OBJ := $(CORE_SRC:%.c=$(CM4_BUILD)/obj/%.o) $(FREESTANDING_CPU_SRC:%.c=$(CM4_BUILD)/obj/%.o)
CM4_TEST_OBJ := $(CM4_TEST_SRC:%.c=$(CM4_BUILD)/obj/%.o)
CM4_BIN := $(CM4_BUILD)/cubert-cortex-m-test.elf
CM4_LD := tests/embedded/cortex-m/an386.ld

$(CM4_BUILD)/obj/core/%.o: core/%.c
	@mkdir -p $(dir $@)
	$(ARM_CC) $(CM4_CORE_FLAGS) -c $< -o $@

$(CM4_BUILD)/obj/backend-cpu/%.o: backend-cpu/%.c
	@mkdir -p $(dir $@)
	$(ARM_CC) $(CM4_CORE_FLAGS) -c $< -o $@

$(CM4_BUILD)/obj/tests/%.o: tests/%.c
	@mkdir -p $(dir $@)
	$(ARM_CC) $(CM4_TEST_FLAGS) -c $< -o $@

-include $(wildcard $(CM4_BUILD)/obj/*/*.d $(CM4_BUILD)/obj/*/*/*.d $(CM4_BUILD)/obj/*/*/*/*.d)

# libcubert-core.a for the target (the core, the inline driver, the kernel runner), then the
# harness linked against it and newlib (librdimon: stdio and malloc over semihosting). The
# library's own undefined symbols are checked first: memcpy/memset/memmove and the compiler's
# runtime only.
$(CM4_BUILD)/libcubert-core.a: $(CM4_CORE_OBJ)
	@undef=$$($(ARM_CC) $(CM4_ARCH) -r -nostdlib -o $(CM4_BUILD)/core-relocatable.o $^ && \
	  $(ARM_NM) -u $(CM4_BUILD)/core-relocatable.o | awk '{print $$NF}' | \
	  grep -Ev '^($(FREESTANDING_ALLOW_RE))$$' || true); \
	  [ -z "$$undef" ] || { echo "test-cortex-m: the library needs symbols beyond memcpy/memset/memmove:" $$undef; exit 1; }
	rm -f $@
	$(ARM_AR) rcs $@ $^

$(CM4_BIN): $(CM4_TEST_OBJ) $(CM4_BUILD)/libcubert-core.a $(CM4_LD)
	$(ARM_CC) $(CM4_ARCH) -nostartfiles -T $(CM4_LD) -Wl,--gc-sections -Wl,-Map,$(CM4_BUILD)/cubert-cortex-m-test.map \
	  -o $@ $(CM4_TEST_OBJ) $(CM4_BUILD)/libcubert-core.a -Wl,--start-group -lc -lm -lrdimon -lgcc -Wl,--end-group

# ---- the static-arena demo (examples/embedded/arena_demo.c) ------------------------------------
# On the target: bare metal with a 12 KiB stack (painted), no newlib beyond memcpy/memset/memmove
# (start-up built with EMBEDDED_NEWLIB=0: no stdio, no heap), output over semihosting. The link
# map must show no other libc member. On the build machine: against libcubert.a.
DEMO_STACK ?= 12288
CM4_DEMO_ELF := $(CM4_BUILD)/arena-demo.elf
CM4_DEMO_OBJ := $(CM4_BUILD)/obj/examples/embedded/arena_demo.o $(CM4_BUILD)/obj/demo-startup.o
DEMO_LIBC_ALLOW := mem(cpy|set|move)
HOST_DEMO := $(BUILD)/examples/arena_demo

$(CM4_BUILD)/obj/examples/embedded/arena_demo.o: examples/embedded/arena_demo.c
	@mkdir -p $(dir $@)
	$(ARM_CC) $(CM4_COMMON) -DCUBERT_DEMO_BARE_METAL=1 -Itests/embedded/cortex-m $(KERNELS_INC) -c $< -o $@

$(CM4_BUILD)/obj/demo-startup.o: tests/embedded/cortex-m/startup.c
	@mkdir -p $(dir $@)
	$(ARM_CC) $(CM4_COMMON) -DEMBEDDED_NEWLIB=0 -Itests/embedded/cortex-m -c $< -o $@

$(CM4_DEMO_ELF): $(CM4_DEMO_OBJ) $(CM4_BUILD)/libcubert-core.a $(CM4_LD)
	$(ARM_CC) $(CM4_ARCH) -nostartfiles -T $(CM4_LD) -Wl,--defsym=STACK_SIZE=$(DEMO_STACK) -Wl,--gc-sections \
	  -Wl,-Map,$(CM4_BUILD)/arena-demo.map -o $@ $(CM4_DEMO_OBJ) $(CM4_BUILD)/libcubert-core.a -lc -lgcc

$(HOST_DEMO): examples/embedded/arena_demo.c $(STATIC_LIB) | $(BUILD)/examples
	$(CC) $(CUBERT_CFLAGS) $(KERNELS_INC) $(DEPFLAGS) $(CPPFLAGS) $(CFLAGS) $(CUBERT_REQUIRED) $(LDFLAGS) -o $@ $< $(STATIC_LIB) $(HOST_LIBS)

.PHONY: check-embedded-demo cortex-m-demo
# The demo on the build machine (part of make check); cortex-m-demo runs it on the
# Cortex-M4F (QEMU), first thing in test-cortex-m.
check-embedded-demo: $(HOST_DEMO)
	@echo "$(HOST_DEMO)"; $(HOST_DEMO)

cortex-m-demo:
	@$(NEED_PACKAGES) test-cortex-m $(ARM_CC):gcc-arm-none-eabi $(QEMU_ARM):qemu-system-arm \
	  newlib:libnewlib-arm-none-eabi
	@$(MAKE) --no-print-directory $(CM4_DEMO_ELF)
	@libc=$$(sed -n 's/^[^ ]*libc\.a(\([^)]*\)).*/\1/p' $(CM4_BUILD)/arena-demo.map | sort -u | \
	    grep -Ev '$(DEMO_LIBC_ALLOW)' || true); \
	  [ -z "$$libc" ] || { echo "cortex-m-demo: libc members beyond memcpy/memset/memmove linked:" $$libc; exit 1; }; \
	  echo "cortex-m-demo: libc members linked: $$(sed -n 's/^[^ ]*libc\.a(\([^)]*\)).*/\1/p' \
	    $(CM4_BUILD)/arena-demo.map | sort -u | tr '\n' ' ')(no malloc, no stdio)"
	@$(ARM_SIZE) $(CM4_DEMO_ELF) | sed 's/^/cortex-m-demo: /'
	@echo "$(QEMU_ARM) -M mps2-an386 -semihosting ... -kernel $(CM4_DEMO_ELF)  (stack $(DEMO_STACK) bytes)"
	@timeout $(CORTEX_M_TIMEOUT) $(QEMU_ARM) -M mps2-an386 -nographic -monitor none -serial null \
	    -semihosting-config enable=on,target=native -kernel $(CM4_DEMO_ELF)

test-cortex-m:
	@$(NEED_PACKAGES) test-cortex-m $(ARM_CC):gcc-arm-none-eabi $(QEMU_ARM):qemu-system-arm \
	  newlib:libnewlib-arm-none-eabi
	@$(MAKE) --no-print-directory cortex-m-demo
	@$(MAKE) --no-print-directory $(CM4_BIN)
	@$(ARM_SIZE) $(CM4_BIN) | sed 's/^/test-cortex-m: /'
	@echo "$(QEMU_ARM) -M mps2-an386 -semihosting ... -kernel $(CM4_BIN) $(TESTS)"
	@rc=0; timeout $(CORTEX_M_TIMEOUT) $(QEMU_ARM) -M mps2-an386 -nographic -monitor none -serial null \
	    -semihosting-config enable=on,target=native -kernel $(CM4_BIN) -append "$(TESTS)" || rc=$$?; \
	  if [ $$rc = 124 ]; then echo "test-cortex-m: timed out after $(CORTEX_M_TIMEOUT) s (CORTEX_M_TIMEOUT)"; \
	  elif [ $$rc != 0 ]; then echo "test-cortex-m: exit status $$rc"; fi; exit $$rc

# ---- big-endian: the unit tests and the conformance suite on s390x under qemu-user -----------
BE_BUILD := $(BUILD)/s390x
test-bigendian:
	@$(NEED_PACKAGES) test-bigendian $(CLANG):clang $(BE_TRIPLE)-ld:binutils-$(BE_TRIPLE) \
	  $(BE_SYSROOT)/include/stdio.h:libc6-dev-$(subst _,-,$(firstword $(subst -, ,$(BE_TRIPLE))))-cross \
	  $(BE_LIBGCC):libgcc-12-dev-$(firstword $(subst -, ,$(BE_TRIPLE)))-cross $(QEMU_BE):qemu-user
	@$(MAKE) --no-print-directory BUILD=$(BE_BUILD) CC="$(BE_CC)" AR=$(BE_TRIPLE)-ar \
	  $(BE_BUILD)/cubert-unit-test $(BE_BUILD)/cubert-test
	@printf 'int main(void){union{unsigned u;unsigned char c[4];}x;x.u=1;return x.c[0];}\n' | \
	  $(BE_CC) -x c - -o $(BE_BUILD)/endian-probe && \
	  QEMU_LD_PREFIX=$(BE_SYSROOT) $(QEMU_BE) $(BE_BUILD)/endian-probe || \
	  { echo "test-bigendian: $(BE_CC) does not build big-endian programs that $(QEMU_BE) runs"; exit 1; }
	@if [ -n "$(TESTS)" ]; then \
	  echo "QEMU_LD_PREFIX=$(BE_SYSROOT) $(QEMU_BE) $(BE_BUILD)/cubert-unit-test $(TESTS)"; \
	  QEMU_LD_PREFIX=$(BE_SYSROOT) $(QEMU_BE) $(BE_BUILD)/cubert-unit-test $(TESTS); exit $$?; fi; \
	sum=$(BE_BUILD)/summaries; rm -f $$sum; status=0; \
	echo "== unit tests: QEMU_LD_PREFIX=$(BE_SYSROOT) $(QEMU_BE) $(BE_BUILD)/cubert-unit-test"; \
	QEMU_LD_PREFIX=$(BE_SYSROOT) $(QEMU_BE) $(BE_BUILD)/cubert-unit-test > $(BE_BUILD)/unit.log 2>&1 || status=1; \
	grep -v '^ok ' $(BE_BUILD)/unit.log; tail -n 1 $(BE_BUILD)/unit.log >> $$sum; \
	for server in cpu deterministic inline; do \
	  echo "== conformance suite on the $$server driver: CUBERT_CTS_DRIVER=$$server ... cubert-test cts_"; \
	  CUBERT_CTS_DRIVER=$$server QEMU_LD_PREFIX=$(BE_SYSROOT) $(QEMU_BE) $(BE_BUILD)/cubert-test cts_ \
	    > $(BE_BUILD)/cts-$$server.log 2>&1 || status=1; \
	  grep -v '^ok ' $(BE_BUILD)/cts-$$server.log; tail -n 1 $(BE_BUILD)/cts-$$server.log >> $$sum; \
	done; \
	echo "== total (logs in $(BE_BUILD)/*.log)"; \
	awk '{ for (i = 1; i < NF; i++) { if ($$(i + 1) ~ /^passed/) p += $$i; \
	         if ($$(i + 1) ~ /^failed/) f += $$i; if ($$(i + 1) ~ /^skipped/) s += $$i } } \
	     END { if (s) printf "%d passed, %d failed, %d skipped\n", p, f, s; \
	           else printf "%d passed, %d failed\n", p, f }' $$sum; exit $$status

# ---- Cortex-M0: the core through the critical-section hook --------------------------------
# ARMv6-M has no LDREX/STREX: without the hook, GCC turns every atomic read-modify-write into
# a __atomic_*_4 library call that no bare-metal library provides. With
# CUBERT_ATOMIC_CRITICAL_SECTION=1 the core calls the host's cubert_critical_enter/exit
# (cubert/critical_section.h) instead. The check compiles the core so, links it with the
# PRIMASK hooks of tests/embedded/cortex-m0/critical_section.c, requires no __atomic_* /
# __sync_* symbol (and, as a control, that one file built without the hook does need them),
# then runs the host unit tests with the core built the same way (a pthread-mutex hook).
CM0_BUILD := $(BUILD)/cortex-m0
CM0_ARCH := -mcpu=cortex-m0 -mthumb
CM0_BASE_FLAGS = $(CUBERT_WARN) $(CUBERT_WERROR) -Iinclude -Icore $(CM0_ARCH) -Os -ffunction-sections -fdata-sections \
  -ffreestanding -nostdinc -isystem $(shell $(ARM_CC) -print-file-name=include 2>/dev/null)
CM0_FLAGS = $(CM0_BASE_FLAGS) -DCUBERT_ATOMIC_CRITICAL_SECTION=1
CM0_CORE_OBJ := $(CORE_SRC:%.c=$(CM0_BUILD)/obj/%.o)
CM0_ATOMIC_RE := __(atomic|sync)_[A-Za-z0-9_]+
# libgcc's Thumb-1 switch-table helpers, on top of the core's allowlist.
CM0_RT_ALLOW := __gnu_thumb1_case_[a-z0-9]+

$(CM0_BUILD)/obj/core/%.o: core/%.c
	@mkdir -p $(dir $@)
	$(ARM_CC) $(CM0_FLAGS) $(DEPFLAGS) -c $< -o $@

$(CM0_BUILD)/obj/critical_section.o: tests/embedded/cortex-m0/critical_section.c
	@mkdir -p $(dir $@)
	$(ARM_CC) $(CUBERT_WARN) -Iinclude $(CM0_ARCH) -Os $(DEPFLAGS) -c $< -o $@

-include $(wildcard $(CM0_BUILD)/obj/*.d $(CM0_BUILD)/obj/*/*/*.d)

$(CM0_BUILD)/cubert-core-m0.elf: $(CM0_CORE_OBJ) $(CM0_BUILD)/obj/critical_section.o
	$(ARM_CC) $(CM0_ARCH) -nostartfiles -Wl,--entry=cubert_critical_enter -o $@ $^ -lc -lgcc

# The host unit tests with the core built through the hook (inside BUILD=$(BUILD)/critical-section).
CS_EXTRA_OBJ := $(BUILD)/obj/tests/embedded/critical_section_host.o $(BUILD)/obj/tests/embedded/test_critical_section.o
$(BUILD)/cubert-unit-test-cs: $(UNIT_ONLY_OBJ) $(CS_EXTRA_OBJ) $(CORE_OBJ)
	$(CC) $(VARIANT_FLAGS) $(CFLAGS) $(LDFLAGS) -o $@ $^ $(HOST_LIBS)

check-cortex-m0:
	@command -v $(ARM_CC) >/dev/null || { echo "check-cortex-m0: $(ARM_CC) not found (Debian: apt-get install gcc-arm-none-eabi)"; exit 1; }
	@$(MAKE) --no-print-directory $(CM0_BUILD)/cubert-core-m0.elf
	@$(ARM_CC) $(CM0_ARCH) -r -nostdlib -o $(CM0_BUILD)/core-relocatable.o $(CM0_CORE_OBJ); \
	  undef=$$($(ARM_NM) -u $(CM0_BUILD)/core-relocatable.o | awk '{print $$NF}' | \
	    grep -Ev '^($(FREESTANDING_ALLOW_RE)|$(CM0_RT_ALLOW)|cubert_critical_enter|cubert_critical_exit)$$' || true); \
	  [ -z "$$undef" ] || { echo "check-cortex-m0: the core needs" $$undef; exit 1; }; \
	  atomics=$$($(ARM_NM) -u $(CM0_BUILD)/core-relocatable.o | grep -E ' $(CM0_ATOMIC_RE)$$' || true); \
	  [ -z "$$atomics" ] || { echo "check-cortex-m0: atomic library calls remain:" $$atomics; exit 1; }; \
	  $(ARM_CC) $(CM0_BASE_FLAGS) -c core/memory/handle.c -o $(CM0_BUILD)/handle-without-hook.o; \
	  control=$$($(ARM_NM) -u $(CM0_BUILD)/handle-without-hook.o | grep -cE ' $(CM0_ATOMIC_RE)$$' || true); \
	  [ "$$control" -gt 0 ] || { echo "check-cortex-m0: control failed: core/memory/handle.c without the hook made no atomic call, so the check above proves nothing"; exit 1; }; \
	  hooks=$$($(ARM_NM) -u $(CM0_BUILD)/core-relocatable.o | grep -c ' cubert_critical_e' || true); \
	  echo "check-cortex-m0: ok (core linked for cortex-m0 with the PRIMASK hooks: no __atomic_*/__sync_* call;" \
	    "$$hooks hook symbols used; without the hook core/memory/handle.c alone needs $$control atomic library functions)"; \
	  $(ARM_SIZE) -t $(CM0_CORE_OBJ) | tail -n 1 | awk '{print "check-cortex-m0: core for cortex-m0 -Os: text " $$1 ", data " $$2 ", bss " $$3 " (objects, unlinked)"}'
	@$(MAKE) --no-print-directory BUILD=$(BUILD)/critical-section VARIANT_FLAGS=-DCUBERT_ATOMIC_CRITICAL_SECTION=1 \
	  $(BUILD)/critical-section/cubert-unit-test-cs
	@echo "$(BUILD)/critical-section/cubert-unit-test-cs $(TESTS)"; $(BUILD)/critical-section/cubert-unit-test-cs $(TESTS)

# ---- a C++11 host ---------------------------------------------------------------------------
# examples/embedded/cxx_host.cpp (the inline driver) against the public headers and libcubert.a, with $(CXX) and,
# when installed, $(CLANGXX); each binary runs (it checks its results and that it leaks nothing).
CXX_HOST_FLAGS := -std=c++11 -pedantic -Wall -Wextra -Werror -Iinclude
HAVE_CLANGXX = $(shell command -v $(CLANGXX) 2>/dev/null)
check-cxx-host: $(STATIC_LIB) | $(BUILD)/examples
	@set -e; for cxx in $(CXX) $(if $(HAVE_CLANGXX),$(CLANGXX)); do \
	  out=$(BUILD)/examples/cxx_host-$$(basename $$cxx); \
	  echo "$$cxx $(CXX_HOST_FLAGS) examples/embedded/cxx_host.cpp -o $$out"; \
	  $$cxx $(CXX_HOST_FLAGS) examples/embedded/cxx_host.cpp -o $$out $(STATIC_LIB) $(HOST_LIBS); \
	  $$out; \
	done; echo "check-cxx-host: ok ($(CXX)$(if $(HAVE_CLANGXX), and $(CLANGXX),; $(CLANGXX) not found))"
