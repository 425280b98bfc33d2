/* SPDX-License-Identifier: MIT */
/* tests/sim/test_sim_races.c: the race checker wired into the CPU server.
 *
 * The seeded-bug suite: 21 small programs, each missing exactly one
 * synchronization (a host sync the program forgot, or, with the test-only
 * fault_drop_wait knob, one cross-stream wait the runtime would have
 * inserted). Each must give exactly one report naming the right buffer and
 * kind; its synchronized twin must give none. Both run in deterministic mode
 * (several seeds: the report never depends on the schedule) and in threaded
 * mode (not under TSan: the bugs are real data races there). */
#include "sim_support.h"
#include "check/race.h"

typedef struct sink_state_t {
  uint64_t count;
  cubert_race_report_t last;
} sink_state_t;

static void sink_report(void *self, const cubert_race_report_t *r) {
  sink_state_t *s = (sink_state_t *)self;
  s->count++;
  s->last = *r;
}
static const cubert_race_sink_vtable_t g_sink_vtable = {sink_report};

/* A (stream 1), B, C, D: the env's clones */
#define A (e->s[0])
#define B (e->s[1])
#define C (e->s[2])
#define D (e->s[3])

typedef struct prog_t {
  const char *name;
  void (*run)(sim_env_t *e, int bug, cubert_handle_t *expect);
  uint32_t drop_wait; /* the bug: drop this wait (0: the bug is in the program) */
  uint32_t kind;      /* cubert_race_kind_t of the report */
} prog_t;

static void finish(sim_env_t *e, cubert_handle_t *h, int n) {
  int i;
  for (i = 0; i < SIM_STREAMS; i++) sim_sync(e->s[i]);
  for (i = 0; i < n; i++) sim_release(e->client, &h[i]);
}

/* B reads x (x on A), A then rewrites x: the host must sync B first. */
static void p_war_kernel(sim_env_t *e, int bug, cubert_handle_t *expect) {
  cubert_handle_t h[2];
  h[0] = sim_create(A, 1);
  h[1] = sim_empty(B);
  sim_copy(B, &h[0], &h[1]);
  if (!bug) sim_sync(B);
  sim_add(A, &h[0], 5);
  *expect = h[0];
  finish(e, h, 2);
}

static void p_waw_kernel(sim_env_t *e, int bug, cubert_handle_t *expect) {
  cubert_handle_t h[1];
  h[0] = sim_create(A, 1);
  sim_add(B, &h[0], 2);
  if (!bug) sim_sync(B);
  sim_add(A, &h[0], 3);
  *expect = h[0];
  finish(e, h, 1);
}

static void p_waw_upload(sim_env_t *e, int bug, cubert_handle_t *expect) {
  cubert_handle_t h[1];
  h[0] = sim_create(A, 1);
  sim_add(B, &h[0], 2);
  if (!bug) sim_sync(B);
  sim_write(A, &h[0], 9);
  *expect = h[0];
  finish(e, h, 1);
}

static void p_war_upload(sim_env_t *e, int bug, cubert_handle_t *expect) {
  cubert_handle_t h[2];
  h[0] = sim_create(A, 1);
  h[1] = sim_empty(B);
  sim_copy(B, &h[0], &h[1]);
  if (!bug) sim_sync(B);
  sim_write(A, &h[0], 9);
  *expect = h[0];
  finish(e, h, 2);
}

static void p_raw_read_on_origin(sim_env_t *e, int bug, cubert_handle_t *expect) {
  cubert_handle_t h[1];
  uint32_t out[SIM_N];
  h[0] = sim_create(A, 1);
  sim_add(B, &h[0], 2);
  if (!bug) sim_sync(B);
  sim_read(A, &h[0], out);
  *expect = h[0];
  finish(e, h, 1);
}

static void p_raw_kernel_dropped_wait(sim_env_t *e, int bug, cubert_handle_t *expect) {
  cubert_handle_t h[2];
  (void)bug;
  h[0] = sim_create(A, 1);
  h[1] = sim_empty(B);
  sim_copy(B, &h[0], &h[1]);
  *expect = h[0];
  finish(e, h, 2);
}

static void p_raw_read_dropped_wait(sim_env_t *e, int bug, cubert_handle_t *expect) {
  cubert_handle_t h[1];
  uint32_t out[SIM_N];
  (void)bug;
  h[0] = sim_create(A, 1);
  sim_add(A, &h[0], 1);
  sim_read(B, &h[0], out);
  *expect = h[0];
  finish(e, h, 1);
}

static void p_waw_dropped_wait(sim_env_t *e, int bug, cubert_handle_t *expect) {
  cubert_handle_t h[1];
  (void)bug;
  h[0] = sim_create(A, 1);
  sim_add(B, &h[0], 4);
  *expect = h[0];
  finish(e, h, 1);
}

/* x on A -> B copies into y -> C copies y into z: waits #1 (B on A), #2 (C on B). */
static void chain(sim_env_t *e, cubert_handle_t *expect, int which) {
  cubert_handle_t h[3];
  h[0] = sim_create(A, 1);
  h[1] = sim_empty(B);
  h[2] = sim_empty(C);
  sim_copy(B, &h[0], &h[1]);
  sim_copy(C, &h[1], &h[2]);
  *expect = h[which];
  finish(e, h, 3);
}
static void p_chain_second_link(sim_env_t *e, int bug, cubert_handle_t *expect) {
  (void)bug;
  chain(e, expect, 1);
}
static void p_chain_first_link(sim_env_t *e, int bug, cubert_handle_t *expect) {
  (void)bug;
  chain(e, expect, 0);
}

/* C sums x (on A) and y (on B): waits #1 (C on A), #2 (C on B). */
static void fan_in(sim_env_t *e, cubert_handle_t *expect, int which) {
  cubert_handle_t h[3];
  h[0] = sim_create(A, 1);
  h[1] = sim_create(B, 100);
  h[2] = sim_empty(C);
  sim_sum(C, &h[0], &h[1], &h[2]);
  *expect = h[which];
  finish(e, h, 3);
}
static void p_fan_in_second(sim_env_t *e, int bug, cubert_handle_t *expect) {
  (void)bug;
  fan_in(e, expect, 1);
}
static void p_fan_in_first(sim_env_t *e, int bug, cubert_handle_t *expect) {
  (void)bug;
  fan_in(e, expect, 0);
}

/* two readers, the host syncs only one before A rewrites x */
static void p_war_two_readers(sim_env_t *e, int bug, cubert_handle_t *expect) {
  cubert_handle_t h[3];
  h[0] = sim_create(A, 1);
  h[1] = sim_empty(B);
  h[2] = sim_empty(C);
  sim_copy(B, &h[0], &h[1]);
  sim_copy(C, &h[0], &h[2]);
  sim_sync(B);
  if (!bug) sim_sync(C);
  sim_add(A, &h[0], 1);
  *expect = h[0];
  finish(e, h, 3);
}

static void p_war_wrong_stream_synced(sim_env_t *e, int bug, cubert_handle_t *expect) {
  cubert_handle_t h[2];
  h[0] = sim_create(A, 1);
  h[1] = sim_empty(B);
  sim_copy(B, &h[0], &h[1]);
  sim_sync(bug ? C : B);
  sim_add(A, &h[0], 1);
  *expect = h[0];
  finish(e, h, 2);
}

static void p_war_sync_too_early(sim_env_t *e, int bug, cubert_handle_t *expect) {
  cubert_handle_t h[2];
  h[0] = sim_create(A, 1);
  h[1] = sim_empty(B);
  if (bug) sim_sync(B);
  sim_copy(B, &h[0], &h[1]);
  if (!bug) sim_sync(B);
  sim_add(A, &h[0], 1);
  *expect = h[0];
  finish(e, h, 2);
}

/* three rounds producer A / consumer B; the bug forgets the sync of round 2 */
static void p_rounds_one_missing(sim_env_t *e, int bug, cubert_handle_t *expect) {
  cubert_handle_t h[2];
  int r;
  h[0] = sim_create(A, 1);
  h[1] = sim_empty(B);
  for (r = 0; r < 3; r++) {
    sim_add(A, &h[0], 1);
    sim_copy(B, &h[0], &h[1]);
    if (!(bug && r == 1)) sim_sync(B);
  }
  *expect = h[0];
  finish(e, h, 2);
}

/* B writes the dynamic cube count of a launch on A */
static void p_raw_dynamic_count(sim_env_t *e, int bug, cubert_handle_t *expect) {
  cubert_handle_t h[2];
  uint32_t dims[3] = {1, 1, 1};
  uint64_t delta = 1;
  cubert_launch_arguments_t a;
  cubert_cube_count_t count;
  CHECK_OK(cubert_client_create_from_slice(A, dims, sizeof dims, &h[0], NULL));
  h[1] = sim_create(A, 1);
  {
    cubert_handle_t v;
    CHECK_OK(cubert_client_handle_offset(e->client, &h[0], 0, 0, &v, NULL));
    sim_add(B, &v, 0); /* B rewrites the count (same values) */
    sim_release(e->client, &v);
  }
  if (!bug) sim_sync(B);
  count = cubert_cube_count_new_dynamic(&h[0]);
  cubert_launch_arguments_initialize(&a);
  a.buffers = &h[1];
  a.buffer_count = 1;
  a.scalars = &delta;
  a.scalar_count = 1;
  CHECK_OK(cubert_client_launch(A, sim_add_kernel_ptr(), &count, &a, NULL));
  *expect = h[0];
  finish(e, h, 2);
}

/* B writes the first half of x (a view), A then writes all of x */
static void p_waw_view(sim_env_t *e, int bug, cubert_handle_t *expect) {
  cubert_handle_t h[1], v;
  h[0] = sim_create(A, 1);
  CHECK_OK(cubert_client_handle_offset(e->client, &h[0], 0, SIM_N * 2, &v, NULL));
  sim_add(B, &v, 7);
  if (!bug) sim_sync(B);
  sim_add(A, &h[0], 1);
  sim_release(e->client, &v);
  *expect = h[0];
  finish(e, h, 1);
}

static void p_waw_write_dropped_wait(sim_env_t *e, int bug, cubert_handle_t *expect) {
  cubert_handle_t h[1];
  (void)bug;
  h[0] = sim_create(A, 1);
  sim_write(B, &h[0], 3);
  *expect = h[0];
  finish(e, h, 1);
}

/* one dropped wait covers two buffers: one report */
static void p_two_buffers_one_wait(sim_env_t *e, int bug, cubert_handle_t *expect) {
  cubert_handle_t h[3];
  (void)bug;
  h[0] = sim_create(A, 1);
  h[1] = sim_create(A, 50);
  h[2] = sim_empty(B);
  sim_sum(B, &h[0], &h[1], &h[2]);
  *expect = h[0];
  finish(e, h, 3);
}

static void p_raw_wrong_stream_synced(sim_env_t *e, int bug, cubert_handle_t *expect) {
  cubert_handle_t h[1];
  uint32_t out[SIM_N];
  h[0] = sim_create(A, 1);
  sim_add(B, &h[0], 2);
  sim_sync(bug ? D : B);
  sim_read(A, &h[0], out);
  *expect = h[0];
  finish(e, h, 1);
}

static const prog_t g_progs[] = {
    {"war_kernel", p_war_kernel, 0, CUBERT_RACE_KIND_WRITE_AFTER_READ},
    {"waw_kernel", p_waw_kernel, 0, CUBERT_RACE_KIND_WRITE_AFTER_WRITE},
    {"waw_upload", p_waw_upload, 0, CUBERT_RACE_KIND_WRITE_AFTER_WRITE},
    {"war_upload", p_war_upload, 0, CUBERT_RACE_KIND_WRITE_AFTER_READ},
    {"raw_read_on_origin", p_raw_read_on_origin, 0, CUBERT_RACE_KIND_READ_AFTER_WRITE},
    {"raw_kernel_dropped_wait", p_raw_kernel_dropped_wait, 1, CUBERT_RACE_KIND_READ_AFTER_WRITE},
    {"raw_read_dropped_wait", p_raw_read_dropped_wait, 1, CUBERT_RACE_KIND_READ_AFTER_WRITE},
    {"waw_dropped_wait", p_waw_dropped_wait, 1, CUBERT_RACE_KIND_WRITE_AFTER_WRITE},
    {"chain_second_link", p_chain_second_link, 2, CUBERT_RACE_KIND_READ_AFTER_WRITE},
    {"chain_first_link", p_chain_first_link, 1, CUBERT_RACE_KIND_READ_AFTER_WRITE},
    {"fan_in_second", p_fan_in_second, 2, CUBERT_RACE_KIND_READ_AFTER_WRITE},
    {"fan_in_first", p_fan_in_first, 1, CUBERT_RACE_KIND_READ_AFTER_WRITE},
    {"war_two_readers", p_war_two_readers, 0, CUBERT_RACE_KIND_WRITE_AFTER_READ},
    {"war_wrong_stream_synced", p_war_wrong_stream_synced, 0, CUBERT_RACE_KIND_WRITE_AFTER_READ},
    {"war_sync_too_early", p_war_sync_too_early, 0, CUBERT_RACE_KIND_WRITE_AFTER_READ},
    {"rounds_one_missing", p_rounds_one_missing, 0, CUBERT_RACE_KIND_WRITE_AFTER_READ},
    {"raw_dynamic_count", p_raw_dynamic_count, 0, CUBERT_RACE_KIND_READ_AFTER_WRITE},
    {"waw_view", p_waw_view, 0, CUBERT_RACE_KIND_WRITE_AFTER_WRITE},
    {"waw_write_dropped_wait", p_waw_write_dropped_wait, 1, CUBERT_RACE_KIND_WRITE_AFTER_WRITE},
    {"two_buffers_one_wait", p_two_buffers_one_wait, 1, CUBERT_RACE_KIND_READ_AFTER_WRITE},
    {"raw_wrong_stream_synced", p_raw_wrong_stream_synced, 0, CUBERT_RACE_KIND_READ_AFTER_WRITE},
};
#define NPROGS (sizeof g_progs / sizeof g_progs[0])

/* Run one program; returns the number of reports (sink) and checks the report. */
static uint64_t run_prog(const prog_t *p, uint32_t mode, uint64_t seed, int bug) {
  sim_env_t env;
  sim_config_t cfg;
  sink_state_t sink;
  cubert_handle_t expect;
  char line[512];
  memset(&sink, 0, sizeof sink);
  memset(&cfg, 0, sizeof cfg);
  cfg.mode = mode;
  cfg.seed = seed;
  cfg.race = 1;
  cfg.drop_wait = bug ? p->drop_wait : 0;
  cfg.sink.vtable = &g_sink_vtable;
  cfg.sink.self = &sink;
  sim_env_open(&env, &cfg);
  p->run(&env, bug, &expect);
  if (bug && sink.count != 1) sim_print_run(&env, p->name);
  sim_env_close(&env);
  if (sink.count) cubert_race_report_format(&sink.last, line, sizeof line);
  CHECK_MSG(sink.count == (bug ? 1u : 0u), "%s (%s, seed %llu, %s): %llu reports%s%s", p->name,
            mode ? "deterministic" : "threaded", (unsigned long long)seed,
            bug ? "missing sync" : "synchronized", (unsigned long long)sink.count,
            sink.count ? ", last: " : "", sink.count ? line : "");
  if (bug) {
    CHECK_MSG(sink.last.buffer == cubert__race_buffer_id(expect.memory),
              "%s: report names the wrong buffer: %s", p->name, line);
    CHECK_MSG(sink.last.kind == p->kind, "%s: kind %s, expected %s: %s", p->name,
              cubert_race_kind_name(sink.last.kind), cubert_race_kind_name(p->kind), line);
    CHECK(sink.last.current.stream != sink.last.previous.stream);
    CHECK(sink.last.current.index >= 1 && sink.last.previous.index >= 1);
    CHECK(sink.last.current.name != NULL && sink.last.previous.name != NULL);
    CHECK_EQ_U64(sink.last.has_seed, mode == CUBERT_CPU_MODE_DETERMINISTIC);
    if (mode == CUBERT_CPU_MODE_DETERMINISTIC) CHECK_EQ_U64(sink.last.seed, seed);
  }
  return sink.count;
}

TEST_EX(simrace_seeded_bugs_all_reported_deterministic, 120) {
  size_t i, found = 0;
  uint64_t seed;
  CHECK(NPROGS >= 20);
  for (i = 0; i < NPROGS; i++) {
    uint64_t hits = 0;
    for (seed = 1; seed <= 4; seed++) hits += run_prog(&g_progs[i], CUBERT_CPU_MODE_DETERMINISTIC, seed, 1) == 1;
    found += hits == 4;
  }
  printf("seeded bugs reported (deterministic, 4 seeds each): %zu/%zu\n", found, (size_t)NPROGS);
  CHECK_EQ_U64(found, NPROGS);
}

TEST_EX(simrace_synchronized_twins_no_report_deterministic, 120) {
  size_t i;
  uint64_t seed;
  for (i = 0; i < NPROGS; i++)
    for (seed = 1; seed <= 4; seed++)
      CHECK_EQ_U64(run_prog(&g_progs[i], CUBERT_CPU_MODE_DETERMINISTIC, seed, 0), 0);
}

TEST_EX(simrace_seeded_bugs_and_twins_threaded, 120) {
  size_t i, found = 0;
  for (i = 0; i < NPROGS; i++) {
    CHECK_EQ_U64(run_prog(&g_progs[i], CUBERT_CPU_MODE_THREADED, 0, 0), 0);
    if (!SIM_TSAN) found += run_prog(&g_progs[i], CUBERT_CPU_MODE_THREADED, 0, 1) == 1;
  }
  if (SIM_TSAN) {
    printf("threaded: %zu twins clean; the missing-sync programs are real data races, run only "
           "without TSan (deterministic mode covers them here)\n", (size_t)NPROGS);
  } else {
    printf("seeded bugs reported (threaded): %zu/%zu\n", found, (size_t)NPROGS);
    CHECK_EQ_U64(found, NPROGS);
  }
}

TEST(simrace_checker_off_counts_nothing) {
  sim_env_t env;
  sim_config_t cfg;
  cubert_handle_t expect;
  cubert_race_report_t r;
  memset(&cfg, 0, sizeof cfg);
  cfg.mode = CUBERT_CPU_MODE_DETERMINISTIC;
  sim_env_open(&env, &cfg);
  p_war_kernel(&env, 1, &expect);
  CHECK_EQ_U64(sim_env_reports(&env), 0);
  CHECK_STATUS(cubert_cpu_race_last_report(env.client, &r, NULL), CUBERT_STATUS_NOT_FOUND);
  sim_env_close(&env);
}

TEST(simrace_last_report_and_counters) {
  sim_env_t env;
  sim_config_t cfg;
  cubert_handle_t expect;
  cubert_race_report_t r;
  cubert_race_counters_t c;
  memset(&cfg, 0, sizeof cfg);
  cfg.mode = CUBERT_CPU_MODE_DETERMINISTIC;
  cfg.seed = 99;
  cfg.race = 1;
  sim_env_open(&env, &cfg);
  p_waw_kernel(&env, 1, &expect);
  CHECK_OK(cubert_cpu_race_counters(env.client, &c, NULL));
  CHECK_EQ_U64(c.reports, 1);
  CHECK_EQ_U64(c.write_after_write, 1);
  CHECK(c.ops >= 3 && c.accesses >= 3);
  CHECK_OK(cubert_cpu_race_last_report(env.client, &r, NULL));
  CHECK_EQ_U64(r.seed, 99);
  CHECK_EQ_STR(r.current.name, "ck_add_scalar_u32");
  CHECK_EQ_U64(r.current.stream, 1); /* A: stream id 1 -> slot 1 */
  CHECK_EQ_U64(r.previous.stream, 2);
  CHECK_STATUS(cubert_cpu_race_counters(env.client, NULL, NULL), CUBERT_STATUS_INVALID_ARGUMENT);
  CHECK_STATUS(cubert_cpu_race_last_report(NULL, &r, NULL), CUBERT_STATUS_INVALID_ARGUMENT);
  sim_env_close(&env);
}

/* GC reclamation: with the GC stream's wait on the consumer dropped, the
 * pinned buffer can die at a GC release that is not ordered after the
 * consumer's read: a RECLAIM report. Whether it dies there depends on the
 * schedule (the consumer's own op pin may be the last), so seeds are
 * searched; with the wait in place no seed reports. */
static uint64_t gc_prog(uint64_t seed, uint32_t drop_gc, cubert_race_report_t *last) {
  sim_env_t env;
  sim_config_t cfg;
  sink_state_t sink;
  cubert_handle_t x, y;
  memset(&sink, 0, sizeof sink);
  memset(&cfg, 0, sizeof cfg);
  cfg.mode = CUBERT_CPU_MODE_DETERMINISTIC;
  cfg.seed = seed;
  cfg.race = 1;
  cfg.drop_gc_wait = drop_gc;
  cfg.sink.vtable = &g_sink_vtable;
  cfg.sink.self = &sink;
  sim_env_open(&env, &cfg);
  x = sim_create(env.s[0], 1);
  y = sim_empty(env.s[1]);
  sim_copy(env.s[1], &x, &y);
  sim_release(env.client, &x); /* the host is done with x: its memory may be reused */
  CHECK_OK(cubert_cpu_sim_drain(env.client, NULL));
  sim_release(env.client, &y);
  sim_env_close(&env);
  *last = sink.last;
  return sink.count;
}

TEST(simrace_gc_reclaim_without_the_fence_is_reported) {
  uint64_t seed, reported = 0, first = 0;
  cubert_race_report_t r;
  for (seed = 1; seed <= 40; seed++) {
    CHECK_EQ_U64(gc_prog(seed, 0, &r), 0);
    if (gc_prog(seed, 1, &r)) {
      reported++;
      if (!first) first = seed;
      CHECK_EQ_U64(r.kind, CUBERT_RACE_KIND_RECLAIM);
      CHECK_EQ_U64(r.previous.stream, 2); /* B's read */
      CHECK_EQ_U64(r.previous.access, CUBERT_RACE_READ);
      CHECK_EQ_U64(r.seed, seed);
    }
  }
  printf("GC fence dropped: reclaim reported in %llu/40 seeds (first: seed %llu); with the fence: "
         "0/40\n", (unsigned long long)reported, (unsigned long long)first);
  CHECK(reported > 0);
}
