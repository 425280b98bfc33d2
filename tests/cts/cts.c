/* tests/cts/cts.c: the backend under test for the conformance suite.
 *
 * Environment (read by cts_setup):
 *   CUBERT_CTS_MODE=deterministic  run the CPU server in deterministic mode
 *                                  (seed CUBERT_CTS_SEED, default 1);
 *   CUBERT_CTS_RACE=0              turn the race checker off (it is on by
 *                                  default: cts_teardown checks 0 reports). */
#include "cts.h"

#include "cubert/cpu.h"

/* Deterministic runs: a failing test prints its seed and choice log at exit. */
static cubert_client_t *g_sim_client;

static void print_sim_run(void) {
  cubert_cpu_sim_info_t info;
  size_t i;
  if (!g_sim_client || cubert_cpu_sim_info(g_sim_client, &info) != CUBERT_STATUS_OK) return;
  fprintf(stderr, "deterministic run: seed %llu trace 0x%016llx steps %llu log [",
          (unsigned long long)info.seed, (unsigned long long)info.trace_hash,
          (unsigned long long)info.steps);
  for (i = 0; i < info.log_len; i++) fprintf(stderr, "%s%u", i ? "," : "", info.log[i]);
  fprintf(stderr, "]%s\n", info.log_truncated ? " (truncated)" : "");
}

static uint64_t env_u64(const char *name, uint64_t fallback) {
  const char *v = getenv(name);
  return v && *v ? strtoull(v, NULL, 0) : fallback;
}

void cts_setup(cts_env_t *env, uint32_t device_index) {
  cubert_cpu_options_t options;
  cubert_error_t err;
  char msg[256];
  cubert_status_t status;
  const char *mode = getenv("CUBERT_CTS_MODE");
  memset(env, 0, sizeof(*env));
  env->allocator = counting_allocator_init(&env->counting);
  cubert_cpu_options_initialize(&options);
  options.device_index = device_index;
  options.max_streams = 8;
  options.workers = 2;
  if (mode && strcmp(mode, "deterministic") == 0) {
    options.mode = CUBERT_CPU_MODE_DETERMINISTIC;
    options.seed = env_u64("CUBERT_CTS_SEED", 1);
    env->deterministic = 1;
  }
  options.race_check = env_u64("CUBERT_CTS_RACE", 1) != 0;
  env->race_check = options.race_check;
  status = cubert_cpu_client_create(env->allocator, &options, &env->client, &err);
  if (status != CUBERT_STATUS_OK) {
    cubert_error_format(&err, msg, sizeof msg);
    test_fail(__FILE__, __LINE__, "cts_setup: cannot create the CPU device: %s", msg);
  }
  if (options.mode == CUBERT_CPU_MODE_DETERMINISTIC) {
    static int registered;
    g_sim_client = env->client;
    if (!registered) registered = atexit(print_sim_run) == 0;
  }
}

void cts_teardown(cts_env_t *env) {
  if (env->race_check) {
    cubert_race_counters_t counters;
    cubert_race_report_t report;
    char line[512];
    CHECK_OK(cubert_cpu_race_counters(env->client, &counters));
    if (counters.reports && cubert_cpu_race_last_report(env->client, &report) == CUBERT_STATUS_OK) {
      cubert_race_report_format(&report, line, sizeof line);
      test_fail(__FILE__, __LINE__, "%llu race report(s), last: %s",
                (unsigned long long)counters.reports, line);
    }
  }
  if (g_sim_client == env->client) g_sim_client = NULL;
  cubert_client_release(env->client);
  env->client = NULL;
  CHECK_MSG(env->counting.live_blocks == 0, "leaked %lld blocks (%lld bytes)",
            (long long)env->counting.live_blocks, (long long)env->counting.live_bytes);
  CHECK_EQ_U64(env->counting.bad_frees, 0);
  counting_allocator_destroy(&env->counting);
}
