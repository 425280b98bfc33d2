# SPDX-License-Identifier: MIT
# mk/bench.mk (included by the Makefile): the benchmarks (docs/benchmarks.md) and the
# deterministic-simulation sweep.

# Added after CFLAGS to the bench programs only (cubert's kernels and the OpenMP
# peer share a translation unit there, so both get it): gcc vectorizes loops whose
# trip count is a run-time value (a cube's unit loop) from -O3 on, and
# -march=native (when $(CC) takes it) gives both the host's vector width, as
# PoCL compiles its kernels for the host CPU. `make bench BENCH_OPT=-O3`: portable.
BENCH_NATIVE = $(eval BENCH_NATIVE := $(shell $(CC) -march=native -x c -c /dev/null -o /dev/null 2>/dev/null && echo -march=native))$(BENCH_NATIVE)
BENCH_OPT ?= -O3 $(BENCH_NATIVE)
BENCH_SUPPORT_OBJ := $(filter-out $(BUILD)/obj/tests/support/runner.o $(BUILD)/obj/tests/support/test_features.o $(BUILD)/obj/tests/support/fake_driver.o,$(SUPPORT_SRC:%.c=$(BUILD)/obj/%.o))

$(BUILD)/bench/%: bench/%.c $(BENCH_SUPPORT_OBJ) $(INTERNAL_LIB) | $(BUILD)/bench
	$(QUIET_LINK)$(CC) $(CUBERT_CFLAGS) $(HOST_DEFS) -Icore -I. -Ibackend-cpu -Itests/support $(KERNELS_INC) $(BENCH_EXTRA_CFLAGS) $(DEPFLAGS) $(CPPFLAGS) $(CFLAGS) $(BENCH_OPT) $(CUBERT_REQUIRED) $(LDFLAGS) -o $@ $< $(BENCH_SUPPORT_OBJ) $(INTERNAL_LIB) $(BENCH_EXTRA_LIBS) $(HOST_LIBS)

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
# bench/bench_transformer.c: the OpenMP flavour of the transformer's C reference (the same probe).
$(BUILD)/bench/bench_transformer: $(BUILD)/bench/peers.flags
$(BUILD)/bench/bench_transformer: BENCH_EXTRA_CFLAGS = $(BENCH_PEER_CFLAGS)
.PHONY: FORCE
FORCE:

benches: $(BENCH_BIN)

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
	@sh tools/bench_run.sh $(BENCH_CSV) '$(BENCH_EXTRA_CSV)' $(BENCH_SVG) '$(BENCH_ARGS)' $(BENCH_BIN)

# Deterministic simulation sweep (tools/cubert_sim.c, docs/simulation.md): SEEDS seeds, each twice.
SEEDS ?= 100000
.PHONY: sim
sim: $(BUILD)/tools/cubert_sim
	$(BUILD)/tools/cubert_sim $(SEEDS)

