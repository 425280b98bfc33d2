# tests/embedded/embedded.mk: the embedded targets (docs/embedding.md), included by the Makefile.
#
#   make test-cortex-m    the core's unit tests on Cortex-M4F, run under qemu-system-arm -M mps2-an386
#   make test-bigendian   the same unit tests built for s390x (big-endian), run under qemu-s390x
#
# Missing Debian packages are installed by tests/embedded/need_packages.sh (apt-get, as root or
# through sudo -n; EMBEDDED_NO_APT=1 only reports them).

ARM_AR ?= arm-none-eabi-ar
QEMU_ARM ?= qemu-system-arm
QEMU_BE ?= qemu-s390x
BE_CROSS ?= s390x-linux-gnu-
BE_SYSROOT ?= /usr/s390x-linux-gnu
# Wall-clock bound of the whole Cortex-M run (the runner has no per-test timeout).
CORTEX_M_TIMEOUT ?= 300
NEED_PACKAGES = sh tests/embedded/need_packages.sh

.PHONY: test-cortex-m test-bigendian

# ---- Cortex-M4F: the unit tests under QEMU ---------------------------------------------
CM4_BUILD := $(BUILD)/cortex-m4
CM4_ARCH := -mcpu=cortex-m4 -mthumb -mfloat-abi=hard -mfpu=fpv4-sp-d16
CM4_OPT ?= -Os -g
CM4_COMMON = $(CUBERT_WARN) -Iinclude $(CM4_ARCH) $(CM4_OPT) -ffunction-sections -fdata-sections $(DEPFLAGS)
# The library objects: the core's freestanding flags (only the compiler's headers).
CM4_CORE_FLAGS = $(CM4_COMMON) -Icore -ffreestanding -nostdinc -isystem $(shell $(ARM_CC) -print-file-name=include 2>/dev/null)
# The harness (tests, support, runner, start-up) is hosted by newlib; CUBERT_TEST_EMBEDDED=1
# lets a test that needs processes, threads or a large memory say "skipped: ...".
CM4_TEST_FLAGS = $(CM4_COMMON) $(HOST_DEFS) -DCUBERT_TEST_EMBEDDED=1 -Itests/embedded/include \
  -Itests/embedded/cortex-m -Itests/support -Icore
CM4_HARNESS_SRC := tests/embedded/runner.c tests/embedded/cortex-m/startup.c \
  tests/embedded/cortex-m/newlib_extra.c
CM4_TEST_SRC := $(filter-out tests/support/runner.c,$(SUPPORT_SRC)) $(UNIT_SRC) $(CM4_HARNESS_SRC)
CM4_CORE_OBJ := $(CORE_SRC:%.c=$(CM4_BUILD)/obj/%.o)
CM4_TEST_OBJ := $(CM4_TEST_SRC:%.c=$(CM4_BUILD)/obj/%.o)
CM4_BIN := $(CM4_BUILD)/cubert-cortex-m-test.elf
CM4_LD := tests/embedded/cortex-m/an386.ld

$(CM4_BUILD)/obj/core/%.o: core/%.c
	@mkdir -p $(dir $@)
	$(ARM_CC) $(CM4_CORE_FLAGS) -c $< -o $@

$(CM4_BUILD)/obj/tests/%.o: tests/%.c
	@mkdir -p $(dir $@)
	$(ARM_CC) $(CM4_TEST_FLAGS) -c $< -o $@

-include $(wildcard $(CM4_BUILD)/obj/*/*.d $(CM4_BUILD)/obj/*/*/*.d $(CM4_BUILD)/obj/*/*/*/*.d)

# libcubert-core.a for the target, then the harness linked against it and newlib (librdimon:
# stdio and malloc over semihosting). The core's own undefined symbols are checked first:
# memcpy/memset/memmove and the compiler's runtime only.
$(CM4_BUILD)/libcubert-core.a: $(CM4_CORE_OBJ)
	@undef=$$($(ARM_CC) $(CM4_ARCH) -r -nostdlib -o $(CM4_BUILD)/core-relocatable.o $^ && \
	  $(ARM_NM) -u $(CM4_BUILD)/core-relocatable.o | awk '{print $$NF}' | \
	  grep -Ev '^($(FREESTANDING_ALLOW_RE))$$' || true); \
	  [ -z "$$undef" ] || { echo "test-cortex-m: the core needs symbols beyond memcpy/memset/memmove:" $$undef; exit 1; }
	rm -f $@
	$(ARM_AR) rcs $@ $^

$(CM4_BIN): $(CM4_TEST_OBJ) $(CM4_BUILD)/libcubert-core.a $(CM4_LD)
	$(ARM_CC) $(CM4_ARCH) -nostartfiles -T $(CM4_LD) -Wl,--gc-sections -Wl,-Map,$(CM4_BUILD)/cubert-cortex-m-test.map \
	  -o $@ $(CM4_TEST_OBJ) $(CM4_BUILD)/libcubert-core.a -Wl,--start-group -lc -lrdimon -lgcc -Wl,--end-group

test-cortex-m:
	@$(NEED_PACKAGES) test-cortex-m $(ARM_CC):gcc-arm-none-eabi $(QEMU_ARM):qemu-system-arm \
	  newlib:libnewlib-arm-none-eabi
	@$(MAKE) --no-print-directory $(CM4_BIN)
	@$(ARM_SIZE) $(CM4_BIN) | sed 's/^/test-cortex-m: /'
	@echo "$(QEMU_ARM) -M mps2-an386 -semihosting ... -kernel $(CM4_BIN) $(TESTS)"
	@rc=0; timeout $(CORTEX_M_TIMEOUT) $(QEMU_ARM) -M mps2-an386 -nographic -monitor none -serial null \
	    -semihosting-config enable=on,target=native -kernel $(CM4_BIN) -append "$(TESTS)" || rc=$$?; \
	  if [ $$rc = 124 ]; then echo "test-cortex-m: timed out after $(CORTEX_M_TIMEOUT) s (CORTEX_M_TIMEOUT)"; \
	  elif [ $$rc != 0 ]; then echo "test-cortex-m: exit status $$rc"; fi; exit $$rc

# ---- big-endian: the unit tests on s390x under qemu-user ---------------------------------
BE_BUILD := $(BUILD)/s390x
test-bigendian:
	@$(NEED_PACKAGES) test-bigendian $(BE_CROSS)gcc:gcc-s390x-linux-gnu $(QEMU_BE):qemu-user
	@$(MAKE) --no-print-directory BUILD=$(BE_BUILD) CC=$(BE_CROSS)gcc AR=$(BE_CROSS)ar \
	  $(BE_BUILD)/cubert-unit-test
	@printf 'int main(void){union{unsigned u;unsigned char c[4];}x;x.u=1;return x.c[0];}\n' | \
	  $(BE_CROSS)gcc -x c - -o $(BE_BUILD)/endian-probe && \
	  QEMU_LD_PREFIX=$(BE_SYSROOT) $(QEMU_BE) $(BE_BUILD)/endian-probe || \
	  { echo "test-bigendian: $(BE_CROSS)gcc does not target a big-endian machine"; exit 1; }
	@echo "QEMU_LD_PREFIX=$(BE_SYSROOT) $(QEMU_BE) $(BE_BUILD)/cubert-unit-test $(TESTS)"
	@QEMU_LD_PREFIX=$(BE_SYSROOT) $(QEMU_BE) $(BE_BUILD)/cubert-unit-test $(TESTS)
