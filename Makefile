# cubert: the CubeCL runtime in C99.
#
#   make            libcubert.a, libcubert.so.MAJOR (+ symlinks), cubert.pc
#   make run        the main demo (CPU server)
#   make test       build and run the test suite (closing line "N passed, N failed")
#   make check      test + check-freestanding + check-headers + check-32bit + check-cortex-m
#   make bench      benchmarks (ratios to peers measured in the same run)
#   make asan|tsan  the test suite under sanitizers
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
SIZE ?= size
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
CTS_SRC := $(sort $(wildcard tests/cts/*.c tests/host/*.c))
TEST_OBJ := $(SUPPORT_SRC:%.c=$(BUILD)/obj/%.o) $(UNIT_SRC:%.c=$(BUILD)/obj/%.o) \
            $(CTS_SRC:%.c=$(BUILD)/obj/%.o)
TEST_BIN := $(BUILD)/cubert-test

EXAMPLE_SRC := $(sort $(wildcard examples/*.c))
EXAMPLE_BIN := $(EXAMPLE_SRC:examples/%.c=$(BUILD)/examples/%)
BENCH_SRC := $(sort $(wildcard bench/*.c))
BENCH_BIN := $(BENCH_SRC:bench/%.c=$(BUILD)/bench/%)
TOOL_SRC := $(sort $(wildcard tools/*.c))
TOOL_BIN := $(TOOL_SRC:tools/%.c=$(BUILD)/tools/%)

.PHONY: all test check run bench size install uninstall clean check-freestanding \
        check-headers check-32bit check-cortex-m asan tsan examples tools
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
$(BUILD)/obj/tests/%.o: tests/%.c $(wildcard include/cubert/*.h tests/support/*.h tests/cts/*.h) | $(BUILD)/obj/tests/support $(BUILD)/obj/tests/unit $(BUILD)/obj/tests/cts $(BUILD)/obj/tests/host
	$(CC) $(CUBERT_CFLAGS) $(HOST_DEFS) -Itests/support -Icore -Ibackend-cpu $(CFLAGS) -c $< -o $@

$(BUILD)/obj/core $(BUILD)/obj/backend-cpu $(BUILD)/obj/backend-cuda $(BUILD)/obj/tests/support \
$(BUILD)/obj/tests/unit $(BUILD)/obj/tests/cts $(BUILD)/obj/tests/host $(BUILD)/examples \
$(BUILD)/bench $(BUILD)/tools $(BUILD)/freestanding $(BUILD)/headers $(BUILD)/cortex-m:
	mkdir -p $@

# ---- libraries -------------------------------------------------------------------
$(STATIC_LIB): $(LIB_OBJ)
	rm -f $@
	$(AR) rcs $@ $^

$(SHARED_LIB): $(LIB_OBJ)
	$(CC) -shared -Wl,-soname,$(SONAME) $(VARIANT_FLAGS) $(LDFLAGS) -o $@ $^ $(HOST_LIBS)
	ln -sf libcubert.so.$(VERSION) $(BUILD)/$(SONAME)
	ln -sf $(SONAME) $(BUILD)/libcubert.so

$(PC_FILE): cubert.pc.in include/cubert/base.h
	sed -e 's|@PREFIX@|$(PREFIX)|' -e 's|@LIBDIR@|$(libdir)|' -e 's|@INCLUDEDIR@|$(includedir)|' \
	    -e 's|@VERSION@|$(VERSION)|' $< > $@

# ---- tests ---------------------------------------------------------------------------
$(TEST_BIN): $(TEST_OBJ) $(STATIC_LIB)
	$(CC) $(VARIANT_FLAGS) $(CFLAGS) $(LDFLAGS) -o $@ $(TEST_OBJ) $(STATIC_LIB) $(HOST_LIBS)

test: $(TEST_BIN)
	$(TEST_BIN) $(TESTS)

# ---- examples, benches, tools --------------------------------------------------------
$(BUILD)/examples/%: examples/%.c $(wildcard examples/*.h) $(STATIC_LIB) | $(BUILD)/examples
	$(CC) $(CUBERT_CFLAGS) $(HOST_DEFS) $(CFLAGS) $(LDFLAGS) -o $@ $< $(STATIC_LIB) $(HOST_LIBS)

$(BUILD)/bench/%: bench/%.c $(wildcard bench/*.h) $(STATIC_LIB) | $(BUILD)/bench
	$(CC) $(CUBERT_CFLAGS) $(HOST_DEFS) -Icore -Ibackend-cpu -Itests/support $(CFLAGS) $(LDFLAGS) -o $@ $< $(filter-out $(BUILD)/obj/tests/support/runner.o,$(SUPPORT_SRC:%.c=$(BUILD)/obj/%.o)) $(STATIC_LIB) $(HOST_LIBS)

$(BUILD)/tools/%: tools/%.c $(STATIC_LIB) | $(BUILD)/tools
	$(CC) $(CUBERT_CFLAGS) $(HOST_DEFS) $(CFLAGS) $(LDFLAGS) -o $@ $< $(STATIC_LIB) $(HOST_LIBS)

examples: $(EXAMPLE_BIN)
tools: $(TOOL_BIN)

run: $(EXAMPLE_BIN)
	$(BUILD)/examples/demo

bench: $(BENCH_BIN) $(filter-out $(BUILD)/obj/tests/support/runner.o,$(SUPPORT_SRC:%.c=$(BUILD)/obj/%.o))
	@set -e; for b in $(BENCH_BIN); do echo "== $$b"; $$b; done

# ---- checks ---------------------------------------------------------------------------
check: test check-freestanding check-headers check-32bit check-cortex-m

FREESTANDING_ALLOW := memcpy memset memmove
check-freestanding: | $(BUILD)/freestanding
	@set -e; for f in $(CORE_SRC); do \
	  $(CC) $(CUBERT_WARN) -Iinclude -O2 $(CORE_FREESTANDING) -c $$f -o $(BUILD)/freestanding/$$(basename $$f .c).o; \
	done; \
	$(NM) --defined-only $(BUILD)/freestanding/*.o | awk 'NF==3 {print $$3}' | sort -u > $(BUILD)/freestanding/defined.txt; \
	bad=$$($(NM) -u $(BUILD)/freestanding/*.o | awk 'NF==2 {print $$2}' | sort -u | grep -vxFf $(BUILD)/freestanding/defined.txt | grep -vxE '$(subst $() ,|,$(FREESTANDING_ALLOW))' || true); \
	if [ -n "$$bad" ]; then echo "check-freestanding: core/ uses symbols outside the allowlist: $$bad"; exit 1; fi; \
	echo "check-freestanding: ok ($(words $(CORE_SRC)) files; undefined symbols within {$(FREESTANDING_ALLOW)})"

check-headers: | $(BUILD)/headers
	@set -e; for h in include/cubert/*.h; do \
	  n=$$(basename $$h .h); \
	  printf '#include "cubert/%s.h"\n' $$n > $(BUILD)/headers/$$n.c; \
	  $(CC) $(CUBERT_WARN) -Iinclude -c $(BUILD)/headers/$$n.c -o $(BUILD)/headers/$$n.o; \
	  cp $(BUILD)/headers/$$n.c $(BUILD)/headers/$$n.cpp; \
	  $(CXX) -std=c++11 -pedantic -Wall -Wextra -Werror -Iinclude -c $(BUILD)/headers/$$n.cpp -o $(BUILD)/headers/$$n.cpp.o; \
	done; echo "check-headers: ok ($$(ls include/cubert/*.h | wc -l) headers, C99 and C++11)"

# The core's unit tests, built and run as 32-bit code (size_t is 32 bits).
check-32bit:
	@$(MAKE) --no-print-directory BUILD=$(BUILD)/m32 VARIANT_FLAGS=-m32 $(BUILD)/m32/cubert-unit-test
	$(BUILD)/m32/cubert-unit-test $(TESTS)

UNIT_ONLY_OBJ := $(SUPPORT_SRC:%.c=$(BUILD)/obj/%.o) $(UNIT_SRC:%.c=$(BUILD)/obj/%.o)
$(BUILD)/cubert-unit-test: $(UNIT_ONLY_OBJ) $(CORE_OBJ)
	$(CC) $(VARIANT_FLAGS) $(CFLAGS) $(LDFLAGS) -o $@ $^ $(HOST_LIBS)

CORTEX_FLAGS := -mcpu=cortex-m4 -mthumb -Os -ffreestanding -nostdinc \
  -isystem $(shell $(ARM_CC) -print-file-name=include 2>/dev/null) -ffunction-sections -fdata-sections
check-cortex-m: | $(BUILD)/cortex-m
	@command -v $(ARM_CC) >/dev/null || { echo "check-cortex-m: $(ARM_CC) not found (Debian: apt-get install gcc-arm-none-eabi)"; exit 1; }
	@set -e; for f in $(CORE_SRC); do \
	  $(ARM_CC) $(CUBERT_WARN) -Iinclude $(CORTEX_FLAGS) -c $$f -o $(BUILD)/cortex-m/$$(basename $$f .c).o; \
	done; \
	$(ARM_NM) --defined-only $(BUILD)/cortex-m/*.o | awk 'NF==3 {print $$3}' | sort -u > $(BUILD)/cortex-m/defined.txt; \
	bad=$$($(ARM_NM) -u $(BUILD)/cortex-m/*.o | awk 'NF==2 {print $$2}' | sort -u | grep -vxFf $(BUILD)/cortex-m/defined.txt | grep -vxE '$(subst $() ,|,$(FREESTANDING_ALLOW))' || true); \
	if [ -n "$$bad" ]; then echo "check-cortex-m: core/ uses symbols outside the allowlist: $$bad"; exit 1; fi; \
	echo "check-cortex-m: ok (cortex-m4 thumb, undefined symbols within {$(FREESTANDING_ALLOW)})"

size: $(CORE_OBJ) check-cortex-m
	@echo "== core, host ($(CC) $(CFLAGS))"; $(SIZE) -t $(CORE_OBJ) | tail -n 1
	@echo "== core, Cortex-M4 (-Os -mthumb)"; $(ARM_SIZE) -t $(BUILD)/cortex-m/*.o | tail -n 1

# ---- sanitizers -------------------------------------------------------------------------
asan:
	$(MAKE) BUILD=$(BUILD)/asan CFLAGS="-O1 -g -fno-omit-frame-pointer" \
	  VARIANT_FLAGS="-fsanitize=address,undefined -fno-sanitize-recover=undefined" test
tsan:
	$(MAKE) BUILD=$(BUILD)/tsan CFLAGS="-O1 -g" VARIANT_FLAGS="-fsanitize=thread" test

# ---- install ------------------------------------------------------------------------------
install: all
	install -d $(DESTDIR)$(libdir) $(DESTDIR)$(includedir)/cubert $(DESTDIR)$(pkgconfigdir)
	install -m 644 include/cubert/*.h $(DESTDIR)$(includedir)/cubert/
	install -m 644 $(STATIC_LIB) $(DESTDIR)$(libdir)/
	install -m 755 $(SHARED_LIB) $(DESTDIR)$(libdir)/
	ln -sf libcubert.so.$(VERSION) $(DESTDIR)$(libdir)/$(SONAME)
	ln -sf $(SONAME) $(DESTDIR)$(libdir)/libcubert.so
	install -m 644 $(PC_FILE) $(DESTDIR)$(pkgconfigdir)/cubert.pc

uninstall:
	rm -f $(DESTDIR)$(libdir)/libcubert.a $(DESTDIR)$(libdir)/libcubert.so \
	  $(DESTDIR)$(libdir)/$(SONAME) $(DESTDIR)$(libdir)/libcubert.so.$(VERSION) \
	  $(DESTDIR)$(pkgconfigdir)/cubert.pc
	rm -rf $(DESTDIR)$(includedir)/cubert

clean:
	rm -rf $(BUILD)
