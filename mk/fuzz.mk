# SPDX-License-Identifier: MIT
# mk/fuzz.mk (included by the Makefile): libFuzzer targets and the corpus replay (fuzz/README.md).

# libFuzzer needs clang; FUZZ_SECONDS per target (make fuzz).
FUZZ_CC ?= $(CLANG)
FUZZ_SECONDS ?= 30
# FUZZ_TARGETS: the targets `make fuzz` runs (names without fuzz_; default every one).
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
	$(QUIET_LINK)$(CC) $(VARIANT_FLAGS) $(FUZZ_LDFLAGS) $(CFLAGS) $(LDFLAGS) -o $@ $< $(FUZZ_MAIN_OBJ) $(INTERNAL_LIB) $(HOST_LIBS)

fuzz-targets: $(FUZZ_BIN)
.PRECIOUS: $(BUILD)/obj/fuzz/%.o

# Replay: the regular CC, every target fed its seed corpus (and the empty input).
# With VARIANT_FLAGS (sanitizers) it runs like the sanitizer suites (ASLR off).
FUZZ_REPLAY_WRAPPER = $(if $(VARIANT_FLAGS),$(SAN_WRAPPER))
fuzz-replay: $(FUZZ_BIN)
	@sh tests/build/fuzz_run.sh replay $(BUILD) '$(FUZZ_REPLAY_WRAPPER)' $(FUZZ_NAMES)

# libFuzzer builds (clang, ASan + UBSan, coverage on the library too) in $(BUILD)/libfuzzer.
fuzz-build:
	@command -v $(FUZZ_CC) >/dev/null || { echo "fuzz: $(FUZZ_CC) not found (Debian: apt-get install clang)"; exit 1; }
	@$(MAKE) --no-print-directory WERROR=$(WERROR) CC=$(FUZZ_CC) BUILD=$(BUILD)/libfuzzer CFLAGS="-O1 -g -fno-omit-frame-pointer" \
	  VARIANT_FLAGS="-fsanitize=fuzzer-no-link $(FUZZ_SAN)" FUZZ_MAIN_OBJ= FUZZ_LDFLAGS=-fsanitize=fuzzer \
	  fuzz-targets

# Runs each target FUZZ_SECONDS; new inputs go to $(BUILD)/libfuzzer/corpus/NAME,
# crashes to $(BUILD)/libfuzzer/artifacts/. FUZZ_ARGS adds libFuzzer flags.
FUZZ_TARGETS ?= $(FUZZ_NAMES)
fuzz: fuzz-build
	@sh tests/build/fuzz_run.sh fuzz $(BUILD) '$(SAN_WRAPPER)' $(FUZZ_SECONDS) '$(FUZZ_ARGS)' $(FUZZ_TARGETS)

