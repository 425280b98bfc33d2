# SPDX-License-Identifier: MIT
# mk/reliability.mk (included by the Makefile): the suite under sanitizers, allocation failure
# everywhere (make oom), threads under stress (make stress), memcheck (make valgrind);
# docs/robustness.md.

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


# ---- allocation failure everywhere, threads under stress (tests/oom, tests/stress) ------------
# make oom: every conformance test again with the injected allocator failing its 1st, 2nd, ...
# call, transient and persistent, on OOM_DRIVERS (cpu deterministic inline); tests/oom/oom_main.c
# (OOM_TESTS="prefix ...", OOM_JOBS, OOM_MAX_POINTS, OOM_TIMEOUT, OOM_VERBOSE=1).
OOM_BIN := $(BUILD)/cubert-oom
OOM_WRAP := counting_allocator_initialize counting_allocator_destroy cubert_cpu_client_create \
  cubert_client_exclusive cubert_client_profile cubert_client_reserve_staging cubert_client_staging \
  cubert_client_create_from_bytes \
  cubert_inline_client_create cubert_client_load cubert_client_clone cubert_client_release \
  cubert_client_record_end cubert_recording_destroy \
  cubert_client_dlpack_export cubert_client_dlpack_export_unversioned cubert_client_dlpack_import \
  cubert_client_dlpack_import_unversioned
# The CTS objects, copied with their pthread_create renamed (the driver tracks the tests' threads).
OOM_CTS_OBJ := $(patsubst tests/cts/%.c,$(BUILD)/oom/%.o,$(sort $(wildcard tests/cts/*.c)))
OOM_OBJ := $(BUILD)/obj/tests/oom/oom_main.o $(OOM_CTS_OBJ) \
  $(filter-out $(BUILD)/obj/tests/support/runner.o,$(SUPPORT_SRC:%.c=$(BUILD)/obj/%.o))
$(BUILD)/oom/%.o: $(BUILD)/obj/tests/cts/%.o
	@mkdir -p $(@D)
	$(QUIET_OBJCOPY)$(OBJCOPY) --redefine-sym pthread_create=oom_pthread_create $< $@
$(BUILD)/obj/tests/oom/oom_main.o: CPPFLAGS += -Itests/cts
$(OOM_BIN): $(OOM_OBJ) $(INTERNAL_LIB)
	$(QUIET_LINK)$(CC) $(VARIANT_FLAGS) $(CFLAGS) $(LDFLAGS) $(OOM_WRAP:%=-Wl,--wrap=%) -o $@ $(OOM_OBJ) $(INTERNAL_LIB) $(HOST_LIBS)
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
	$(QUIET_LINK)$(CC) $(VARIANT_FLAGS) $(CFLAGS) $(LDFLAGS) -o $@ $(filter %.o,$^) $(INTERNAL_LIB) $(HOST_LIBS)
stress: $(STRESS_BIN)
	STRESS_OPS=$(STRESS_OPS) STRESS_BUSY=$(STRESS_BUSY) $(TEST_WRAPPER) $(STRESS_BIN)
# The stress test under TSan (BUILD/tsan, as make tsan), 20,000 operations unless STRESS_OPS says.
.PHONY: stress-tsan
stress-tsan:
	$(MAKE) WERROR=$(WERROR) BUILD=$(BUILD)/tsan CFLAGS="-O1 -g" VARIANT_FLAGS="-fsanitize=thread" \
	  TEST_WRAPPER="$(SAN_WRAPPER)" STRESS_OPS=$(if $(filter command line,$(origin STRESS_OPS)),$(STRESS_OPS),20000) stress


# ---- valgrind ---------------------------------------------------------------------------------
# memcheck over the test suites VALGRIND_SUITES (tests/SUITE/*.c, one program each), every test in
# its own forked process as usual (valgrind follows forks; timeouts scaled by 30). Each process
# logs to $(BUILD)/valgrind/SUITE.PID.log; a process with a memcheck error or a block definitely
# lost exits 99 (a FAIL line of the runner). The totals are printed; any error or lost byte
# fails the target. TESTS="prefix ..." narrows every suite; VALGRIND_SUITES=sim adds the simulation
# suite (long under valgrind). About a minute for the default suites on 2 cores.
VALGRIND ?= valgrind
VALGRIND_SUITES ?= unit os cts
VALGRIND_JOBS ?= 2
VALGRIND_FLAGS ?= --tool=memcheck --error-exitcode=99 --leak-check=full --show-leak-kinds=definite \
  --errors-for-leak-kinds=definite --num-callers=30

# The OS-layer suite's kernel-dialect tests share the conformance suite's plane helpers
# (tests/cts/test_cts_dialect.c and the suite's driver records): they link in with it.
VALGRIND_EXTRA_os = $(patsubst %.c,$(BUILD)/obj/%.o,$(wildcard tests/cts/cts*.c) tests/cts/test_cts_dialect.c)
define VALGRIND_SUITE_RULE
$(BUILD)/valgrind/cubert-$(1)-test: $(SUPPORT_SRC:%.c=$(BUILD)/obj/%.o) $(VALGRIND_EXTRA_$(1)) \
    $(patsubst %.c,$(BUILD)/obj/%.o,$(wildcard tests/$(1)/*.c)) $(INTERNAL_LIB) | $(BUILD)/valgrind
	$(QUIET_LINK)$(CC) $(VARIANT_FLAGS) $(CFLAGS) $(LDFLAGS) -o $$@ $$(filter %.o,$$^) $(INTERNAL_LIB) $(HOST_LIBS)
endef
$(foreach s,unit os cts sim,$(eval $(call VALGRIND_SUITE_RULE,$(s))))

valgrind: $(VALGRIND_SUITES:%=$(BUILD)/valgrind/cubert-%-test)
	@sh tests/build/valgrind.sh '$(VALGRIND)' '$(VALGRIND_FLAGS)' $(BUILD)/valgrind $(VALGRIND_JOBS) '$(VALGRIND_SUITES)' $(TESTS)

