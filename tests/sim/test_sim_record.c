/* SPDX-License-Identifier: MIT */
/* tests/sim/test_sim_record.c: recorded sequences under the race checker and
 * the deterministic mode. A replay is checked as the launches it replays:
 * a replay on stream B that writes what stream A then writes again without
 * a host sync between is a write-after-write report naming the replayed
 * kernel (predictive: reported whatever the schedule); with the sync, none.
 * And the same seed gives the same trace with replays as with launches. */
#include "sim_support.h"
#include "cubert/record.h"

#define A (env.s[0])
#define B (env.s[1])

/* A records an add over h; B replays it; A adds again (synced first unless `bug`). */
static uint64_t race_run(int bug, cubert_race_counters_t *out_counters, cubert_race_report_t *out_last) {
  sim_env_t env;
  sim_config_t cfg;
  cubert_handle_t h;
  cubert_recording_t *rec = NULL;
  uint32_t out[SIM_N];
  uint64_t reports;
  int i;
  memset(&cfg, 0, sizeof cfg);
  cfg.mode = CUBERT_CPU_MODE_DETERMINISTIC;
  cfg.seed = 7;
  cfg.race = 1;
  sim_env_open(&env, &cfg);
  h = sim_create(A, 1);
  CHECK_OK(cubert_client_record_begin(A, NULL));
  sim_add(A, &h, 2);
  CHECK_OK(cubert_client_record_end(A, &rec, NULL));
  sim_sync(A);
  CHECK_OK(cubert_client_replay(B, rec, NULL));
  if (!bug) sim_sync(B);
  sim_add(A, &h, 3);
  sim_sync(A);
  sim_sync(B);
  sim_read(A, &h, out);
  for (i = 0; i < (int)SIM_N; i++) CHECK_EQ_U64(out[i], 1u + (uint32_t)i + 5u);
  CHECK_OK(cubert_cpu_race_counters(env.client, out_counters, NULL));
  reports = out_counters->reports;
  if (reports) CHECK_OK(cubert_cpu_race_last_report(env.client, out_last, NULL));
  cubert_recording_destroy(rec);
  sim_release(env.client, &h);
  sim_env_close(&env);
  return reports;
}

TEST(simrecord_replay_race_is_reported) {
  cubert_race_counters_t c;
  cubert_race_report_t r;
  CHECK_EQ_U64(race_run(1, &c, &r), 1);
  CHECK_EQ_U64(c.write_after_write, 1);
  CHECK_EQ_STR(r.current.name, "ck_add_scalar_u32");
  CHECK_EQ_U64(r.current.stream, 1);  /* A's add */
  CHECK_EQ_U64(r.previous.stream, 2); /* B's replay */
}

TEST(simrecord_replay_ordered_by_a_sync_is_clean) {
  cubert_race_counters_t c;
  cubert_race_report_t r;
  CHECK_EQ_U64(race_run(0, &c, &r), 0);
  CHECK(c.ops >= 3);
}
