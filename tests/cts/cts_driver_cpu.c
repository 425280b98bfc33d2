/* SPDX-License-Identifier: MIT */
/* tests/cts/cts_driver_cpu.c: the CPU driver's conformance runs (cts.h): "cpu"
 * (threaded) and "deterministic" (seed CUBERT_CTS_SEED, default 1; a failing
 * test prints its seed and choice log at exit). Not in a CUBERT_CTS_INLINE_ONLY
 * build (no threads, no OS layer there). */
#include "cts.h"

#if !CUBERT_CTS_INLINE_ONLY
#include "cubert/cpu.h"

static cubert_status_t cpu_create(cubert_allocator_t a, const cts_options_t *options, uint32_t mode,
                                  cubert_client_t **out, cubert_error_t *err) {
  cubert_cpu_options_t o;
  cubert_cpu_options_initialize(&o);
  o.device = cts_device_options(options);
  o.workers = options->workers ? options->workers : 2;
  o.collective_timeout_ms = options->collective_timeout_ms;
  if (options->memory_config) o.memory_config = *options->memory_config;
  if (mode == CUBERT_CPU_MODE_DETERMINISTIC) {
    const char *seed = getenv("CUBERT_CTS_SEED");
    o.mode = CUBERT_CPU_MODE_DETERMINISTIC;
    o.seed = seed && *seed ? strtoull(seed, NULL, 0) : 1u;
  }
  return cubert_cpu_client_create(a, &o, out, err);
}

static cubert_status_t threaded_create(cubert_allocator_t a, const cts_options_t *options,
                                       cubert_client_t **out, cubert_error_t *err) {
  return cpu_create(a, options, CUBERT_CPU_MODE_THREADED, out, err);
}

static cubert_status_t deterministic_create(cubert_allocator_t a, const cts_options_t *options,
                                            cubert_client_t **out, cubert_error_t *err) {
  return cpu_create(a, options, CUBERT_CPU_MODE_DETERMINISTIC, out, err);
}

/* The CPU driver refuses collectives in deterministic mode. */
static int cpu_has_collectives(cubert_client_t *client) {
  cubert_cpu_sim_info_t info;
  return cubert_cpu_sim_info(client, &info, NULL) != CUBERT_STATUS_OK || !info.deterministic;
}

/* Deterministic runs: a failing test prints its seed and choice log at exit. */
static cubert_client_t *g_sim_client;

static void print_sim_run(void) {
  cubert_cpu_sim_info_t info;
  size_t i;
  if (!g_sim_client || cubert_cpu_sim_info(g_sim_client, &info, NULL) != CUBERT_STATUS_OK) return;
  fprintf(stderr, "deterministic run: seed %llu trace 0x%016llx steps %llu log [",
          (unsigned long long)info.seed, (unsigned long long)info.trace_hash,
          (unsigned long long)info.steps);
  for (i = 0; i < info.log_len; i++) fprintf(stderr, "%s%u", i ? "," : "", info.log[i]);
  fprintf(stderr, "]%s\n", info.log_truncated ? " (truncated)" : "");
}

static void sim_after_setup(cts_env_t *env) {
  static int registered;
  g_sim_client = env->client;
  if (!registered) registered = atexit(print_sim_run) == 0;
}

static void sim_before_teardown(cts_env_t *env) {
  if (g_sim_client == env->client) g_sim_client = NULL;
}

static const cts_driver_t g_cts_cpu = {
    "cpu", "the CPU driver, threaded (a worker thread per stream, a kernel worker pool)",
    CTS_DRIVER_THREADED, CUBERT_CPU_DEVICE_TYPE, {CUBERT_LAYOUT_POLICY_CONTIGUOUS, 8},
    threaded_create, cpu_has_collectives, NULL, NULL, NULL, NULL, NULL, NULL};

static const cts_driver_t g_cts_deterministic = {
    "deterministic",
    "the CPU driver in deterministic mode (no thread; seed CUBERT_CTS_SEED, default 1)",
    CTS_DRIVER_DETERMINISTIC, CUBERT_CPU_DEVICE_TYPE, {CUBERT_LAYOUT_POLICY_CONTIGUOUS, 8},
    deterministic_create, cpu_has_collectives, NULL, NULL, sim_after_setup,
    sim_before_teardown, NULL, NULL};

CTS_DRIVER_REGISTER(g_cts_cpu)
CTS_DRIVER_REGISTER(g_cts_deterministic)
#else
typedef int cts_driver_cpu_empty_t; /* ISO C: a translation unit is not empty */
#endif
