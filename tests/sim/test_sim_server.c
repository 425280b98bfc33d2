/* SPDX-License-Identifier: MIT */
/* tests/sim/test_sim_server.c: the deterministic mode of the CPU server:
 * no threads, same seed => same trace and results, replay, exhaustive
 * enumeration on the real server (12,870 and 34,650 schedules), PCT and
 * random walks finding an ordering bug, replay + shrink of the failing log,
 * bad options, deadlock detection, allocation failures. */
#include "sim_support.h"

#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cubert/os.h"
#include "cpu/cpu_driver.h"

static double now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static int thread_count(void) {
  FILE *f = fopen("/proc/self/status", "r");
  char line[256];
  int n = -1;
  if (!f) return -1;
  while (fgets(line, sizeof line, f))
    if (strncmp(line, "Threads:", 8) == 0) n = atoi(line + 8);
  fclose(f);
  return n;
}

/* ---- a race-free program over four streams; results checked on the host ---- */

typedef struct prog_result_t {
  uint32_t x[SIM_N], w[SIM_N], y[SIM_N], u[SIM_N];
} prog_result_t;

static void program(sim_env_t *e, prog_result_t *r) {
  cubert_handle_t x, w, v, y, z, u;
  x = sim_create(e->s[0], 1);
  w = sim_create(e->s[3], 7);
  v = sim_create(e->s[0], 5);
  y = sim_empty(e->s[1]);
  z = sim_empty(e->s[2]);
  u = sim_empty(e->s[2]);
  sim_add(e->s[0], &x, 1);
  sim_add(e->s[3], &w, 3);
  sim_copy(e->s[1], &x, &y);
  sim_copy(e->s[2], &w, &z);
  sim_add(e->s[0], &v, 2);
  sim_add(e->s[0], &v, 3);
  sim_mix(e->s[1], &v, &y);
  sim_sum(e->s[2], &y, &z, &u);
  sim_read(e->s[2], &u, r->u);
  sim_read(e->s[1], &y, r->y);
  sim_read(e->s[0], &x, r->x);
  sim_read(e->s[3], &w, r->w);
  sim_release(e->client, &x);
  sim_release(e->client, &w);
  sim_release(e->client, &v);
  sim_release(e->client, &y);
  sim_release(e->client, &z);
  sim_release(e->client, &u);
}

static bool result_ok(const prog_result_t *r) {
  uint32_t i;
  for (i = 0; i < SIM_N; i++) {
    uint32_t x = 1 + i + 1, w = 7 + i + 3, v = 5 + i + 5, y = x * 3 + v;
    if (r->x[i] != x || r->w[i] != w || r->y[i] != y || r->u[i] != y + w) return false;
  }
  return true;
}

static void check_result(const prog_result_t *r, uint64_t seed) {
  CHECK_MSG(result_ok(r), "seed %llu: wrong result", (unsigned long long)seed);
}

typedef struct run_t {
  uint64_t trace;
  uint64_t steps, choices;
  size_t log_len;
  uint32_t log[4096];
  prog_result_t result;
} run_t;

static void run_seed(uint64_t seed, uint32_t race, run_t *out) {
  sim_env_t env;
  sim_config_t cfg;
  cubert_cpu_sim_info_t info;
  memset(&cfg, 0, sizeof cfg);
  cfg.mode = CUBERT_CPU_MODE_DETERMINISTIC;
  cfg.seed = seed;
  cfg.race = race;
  sim_env_open(&env, &cfg);
  program(&env, &out->result);
  CHECK_OK(cubert_cpu_sim_drain(env.client, NULL));
  info = sim_env_info(&env);
  CHECK(info.deterministic == 1 && info.source == CUBERT_SIM_SOURCE_SEED && info.seed == seed);
  CHECK(!info.log_truncated && info.deadlocks == 0);
  out->trace = info.trace_hash;
  out->steps = info.steps;
  out->choices = info.choices;
  out->log_len = info.log_len;
  memcpy(out->log, info.log, info.log_len * sizeof(uint32_t));
  if (!result_ok(&out->result)) {
    sim_print_run(&env, "wrong result");
    check_result(&out->result, seed);
  }
  if (race && sim_env_reports(&env) != 0) {
    sim_print_run(&env, "race-free program");
    CHECK_EQ_U64(sim_env_reports(&env), 0);
  }
  sim_env_close(&env);
}

TEST(simdet_starts_no_thread) {
  int before = thread_count();
  sim_env_t env;
  sim_config_t cfg;
  prog_result_t r;
  memset(&cfg, 0, sizeof cfg);
  cfg.mode = CUBERT_CPU_MODE_DETERMINISTIC;
  cfg.race = 1;
  CHECK(before >= 1);
  sim_env_open(&env, &cfg);
  program(&env, &r);
  CHECK_EQ_U64(thread_count(), before);
  check_result(&r, 0);
  sim_env_close(&env);
}

/* The determinism self-check: every seed twice, byte-identical everything. */
TEST_EX(simdet_self_check_1000_seeds_twice, 240) {
  static run_t a, b;
  uint64_t seed, n = SIM_SANITIZED ? 300 : 1000, mismatches = 0, distinct = 0, prev = 0;
  double t0 = now_ms();
  for (seed = 1; seed <= n; seed++) {
    run_seed(seed, 1, &a);
    run_seed(seed, 1, &b);
    check_result(&a.result, seed);
    if (a.trace != b.trace || a.log_len != b.log_len ||
        memcmp(a.log, b.log, a.log_len * sizeof(uint32_t)) != 0 ||
        memcmp(&a.result, &b.result, sizeof a.result) != 0) {
      fprintf(stderr, "seed %llu: trace 0x%016llx vs 0x%016llx\n", (unsigned long long)seed,
              (unsigned long long)a.trace, (unsigned long long)b.trace);
      mismatches++;
    }
    if (seed == 1 || a.trace != prev) distinct++;
    prev = a.trace;
  }
  printf("determinism self-check: %llu seeds x 2 runs, %llu trace mismatches, %llu schedule "
         "changes between consecutive seeds, %.0f runs/s\n",
         (unsigned long long)n, (unsigned long long)mismatches, (unsigned long long)distinct,
         2.0 * (double)n / ((now_ms() - t0) / 1e3));
  CHECK_EQ_U64(mismatches, 0);
  CHECK(distinct > n / 2); /* seeds really choose different schedules */
  /* 9 for the last seed since the GC stream went (its waits and records were
   * steps too; the release ring in the server polls instead) */
  CHECK(a.choices > 5);
}

/* make test's bounded seed sweep: >= 10,000 seeds, results and 0 reports each. */
TEST_EX(simdet_10000_seeds, 240) {
  static run_t a;
  uint64_t seed, n = SIM_SANITIZED ? 1000 : 10000, slowest = 0;
  double t0 = now_ms(), worst = 0;
  for (seed = 1; seed <= n; seed++) {
    double t = now_ms();
    run_seed(seed * 0x9E3779B97F4A7C15ull, 1, &a);
    check_result(&a.result, seed);
    t = now_ms() - t;
    if (t > worst) {
      worst = t;
      slowest = seed;
    }
  }
  printf("seeds run: %llu%s, violations: 0, slowest seed: #%llu (%.2f ms), %.0f seeds/s\n",
         (unsigned long long)n, SIM_SANITIZED ? " (sanitizer build: reduced from 10000)" : "",
         (unsigned long long)slowest, worst, (double)n / ((now_ms() - t0) / 1e3));
}

TEST(simdet_replay_reproduces_the_trace) {
  static run_t a, b;
  sim_env_t env;
  sim_config_t cfg;
  cubert_cpu_sim_info_t info;
  run_seed(4242, 0, &a);
  memset(&cfg, 0, sizeof cfg);
  cfg.mode = CUBERT_CPU_MODE_DETERMINISTIC;
  cfg.replay = a.log;
  cfg.replay_count = a.log_len;
  sim_env_open(&env, &cfg);
  program(&env, &b.result);
  CHECK_OK(cubert_cpu_sim_drain(env.client, NULL));
  info = sim_env_info(&env);
  CHECK_EQ_U64(info.source, CUBERT_SIM_SOURCE_REPLAY);
  CHECK_EQ_U64(info.trace_hash, a.trace);
  CHECK_EQ_U64(info.log_len, a.log_len);
  CHECK(!info.diverged);
  CHECK(memcmp(&a.result, &b.result, sizeof a.result) == 0);
  sim_env_close(&env);
}

TEST(simdet_bad_replay_log_diverges_but_runs) {
  uint32_t bad[64];
  sim_env_t env;
  sim_config_t cfg;
  prog_result_t r;
  size_t i;
  for (i = 0; i < 64; i++) bad[i] = 1000u + (uint32_t)i;
  memset(&cfg, 0, sizeof cfg);
  cfg.mode = CUBERT_CPU_MODE_DETERMINISTIC;
  cfg.replay = bad;
  cfg.replay_count = 64;
  sim_env_open(&env, &cfg);
  program(&env, &r);
  check_result(&r, 0); /* any order of a race-free program gives the same result */
  CHECK_EQ_U64(sim_env_info(&env).diverged, 1);
  sim_env_close(&env);
}

TEST(simdet_choice_bytes_source) {
  static const uint8_t bytes[] = {3, 1, 4, 1, 5, 9, 2, 6, 5, 3, 5, 8, 9, 7, 9, 3, 2, 3, 8, 4};
  uint64_t trace[2];
  int k;
  for (k = 0; k < 2; k++) {
    counting_allocator_t c;
    cubert_cpu_options_t o;
    cubert_client_t *client;
    cubert_cpu_sim_info_t info;
    sim_env_t env;
    prog_result_t r;
    int i;
    cubert_allocator_t a = counting_allocator_initialize(&c);
    cubert_cpu_options_initialize(&o);
    o.mode = CUBERT_CPU_MODE_DETERMINISTIC;
    o.choice_bytes = bytes;
    o.choice_bytes_count = sizeof bytes;
    o.device.memory_size = 1u << 16;
    CHECK_OK(cubert_cpu_client_create(a, &o, &client, NULL));
    memset(&env, 0, sizeof env);
    env.client = client;
    for (i = 0; i < SIM_STREAMS; i++) {
      CHECK_OK(cubert_client_clone(client, &env.s[i], NULL));
      cubert_client_set_stream(env.s[i], (uint64_t)i + 1);
    }
    program(&env, &r);
    check_result(&r, 0);
    CHECK_OK(cubert_cpu_sim_info(client, &info, NULL));
    CHECK_EQ_U64(info.source, CUBERT_SIM_SOURCE_BYTES);
    trace[k] = info.trace_hash;
    for (i = 0; i < SIM_STREAMS; i++) cubert_client_release(env.s[i]);
    cubert_client_release(client);
    CHECK_EQ_U64(c.live_blocks, 0);
    counting_allocator_destroy(&c);
  }
  CHECK_EQ_U64(trace[0], trace[1]);
}

/* ---- exhaustive enumeration on the real server ---- */

static void explore_server(uint32_t streams, uint32_t ops, uint64_t expect) {
  sim_env_t env;
  sim_config_t cfg;
  cubert_handle_t h[3];
  static uint32_t choice[256], arity[256];
  cubert_sim_explorer_t e;
  cubert_sim_chooser_t c;
  uint32_t s, k, out[SIM_N];
  uint64_t runs = 0, steps_per_run = 0;
  double t0 = now_ms();
  memset(&cfg, 0, sizeof cfg);
  cfg.mode = CUBERT_CPU_MODE_DETERMINISTIC;
  sim_env_open(&env, &cfg);
  for (s = 0; s < streams; s++) h[s] = sim_create(env.s[s], 0);
  CHECK_OK(cubert_cpu_sim_drain(env.client, NULL));
  CHECK_OK(cubert_sim_explorer_initialize(&e, choice, arity, 256, NULL));
  do {
    CHECK_OK(cubert_sim_chooser_initialize_explore(&c, &e, NULL, 0, NULL));
    for (s = 0; s < streams; s++)
      for (k = 0; k < ops; k++) sim_add(env.s[s], &h[s], 1);
    CHECK_OK(cubert_cpu_sim_attach(env.client, &c, NULL)); /* the enqueues above ran nothing */
    CHECK_OK(cubert_cpu_sim_drain(env.client, NULL));
    CHECK_OK(cubert_cpu_sim_attach(env.client, NULL, NULL));
    CHECK_EQ_U64(c.steps, (uint64_t)streams * ops);
    steps_per_run = c.steps;
    runs++;
  } while (cubert_sim_explorer_next(&e));
  CHECK(!e.overflow && !e.mismatch);
  CHECK_EQ_U64(runs, expect);
  for (s = 0; s < streams; s++) {
    uint32_t i;
    sim_read(env.s[s], &h[s], out);
    for (i = 0; i < SIM_N; i++) CHECK_EQ_U64(out[i], i + runs * ops);
    sim_release(env.client, &h[s]);
  }
  printf("exhaustive %u streams x %u ops: %llu schedules (%llu steps each), %.0f schedules/s\n",
         streams, ops, (unsigned long long)runs, (unsigned long long)steps_per_run,
         (double)runs / ((now_ms() - t0) / 1e3));
  sim_env_close(&env);
}

TEST_EX(simdet_exhaustive_2_streams_8_ops, 240) { explore_server(2, 8, 12870); }
TEST_EX(simdet_exhaustive_3_streams_4_ops, 240) { explore_server(3, 4, 34650); }

/* ---- finding an ordering bug: random walk and PCT, replay, shrink ---- */

/* B copies x (made on A) into y, then A adds to x WITHOUT the host syncing B:
 * y is right only when B's copy runs before A's add. Returns whether y is
 * wrong. Race reports (predictive) are returned in *reports. */
static int buggy_run(sim_env_t *env, uint64_t *reports, uint64_t *trace) {
  cubert_handle_t x, y, pad;
  uint32_t out[SIM_N], i;
  int wrong = 0;
  x = sim_create(env->s[0], 10);
  y = sim_empty(env->s[1]);
  pad = sim_create(env->s[1], 0);
  sim_add(env->s[1], &pad, 1); /* B has work before the copy */
  sim_add(env->s[1], &pad, 1);
  sim_copy(env->s[1], &x, &y);
  sim_add(env->s[0], &x, 1000); /* the missing sync is right before this */
  sim_read(env->s[1], &y, out);
  for (i = 0; i < SIM_N; i++) wrong |= out[i] != 10 + i;
  sim_sync(env->s[0]);
  sim_release(env->client, &x);
  sim_release(env->client, &y);
  sim_release(env->client, &pad);
  CHECK_OK(cubert_cpu_sim_drain(env->client, NULL));
  *reports = sim_env_reports(env);
  *trace = sim_env_info(env).trace_hash;
  return wrong;
}

typedef struct replay_ctx_t {
  uint64_t calls;
} replay_ctx_t;

static bool replay_fails(void *user, const uint32_t *choices, size_t count) {
  sim_env_t env;
  sim_config_t cfg;
  uint64_t reports, trace;
  int wrong;
  ((replay_ctx_t *)user)->calls++;
  memset(&cfg, 0, sizeof cfg);
  cfg.mode = CUBERT_CPU_MODE_DETERMINISTIC;
  cfg.replay = choices;
  cfg.replay_count = count;
  sim_env_open(&env, &cfg);
  wrong = buggy_run(&env, &reports, &trace);
  sim_env_close(&env);
  return wrong != 0;
}

TEST_EX(simdet_random_walk_finds_replays_and_shrinks_an_ordering_bug, 120) {
  static uint32_t log[4096], scratch[4096];
  sim_env_t env;
  sim_config_t cfg;
  uint64_t seed, found = 0, correct_runs_reported = 0, reports, trace, trace2, found_trace = 0;
  size_t len = 0, shrunk;
  replay_ctx_t ctx = {0};
  cubert_cpu_sim_info_t info;
  for (seed = 1; seed <= 200 && (!found || !correct_runs_reported); seed++) {
    memset(&cfg, 0, sizeof cfg);
    cfg.mode = CUBERT_CPU_MODE_DETERMINISTIC;
    cfg.seed = seed;
    cfg.race = 1;
    sim_env_open(&env, &cfg);
    if (buggy_run(&env, &reports, &trace)) {
      if (found) {
        CHECK_EQ_U64(reports, 1);
        sim_env_close(&env);
        continue;
      }
      found = seed;
      found_trace = trace;
      info = sim_env_info(&env);
      len = info.log_len;
      memcpy(log, info.log, len * sizeof log[0]);
      sim_print_run(&env, "ordering bug found (expected by this test)");
    } else if (reports == 1) {
      correct_runs_reported++; /* the checker saw the bug in a run that happened to be safe */
    }
    CHECK_EQ_U64(reports, 1);
    sim_env_close(&env);
  }
  CHECK_MSG(found, "200 random walks never ran A's add before B's copy");
  CHECK_MSG(correct_runs_reported > 0, "the checker should report safe runs too (predictive)");
  /* replay: identical trace hash and the same failure */
  memset(&cfg, 0, sizeof cfg);
  cfg.mode = CUBERT_CPU_MODE_DETERMINISTIC;
  cfg.replay = log;
  cfg.replay_count = len;
  sim_env_open(&env, &cfg);
  CHECK(buggy_run(&env, &reports, &trace2));
  CHECK_EQ_U64(trace2, found_trace);
  sim_env_close(&env);
  /* shrink */
  shrunk = cubert_sim_shrink(log, len, scratch, replay_fails, &ctx);
  CHECK(shrunk <= len);
  CHECK(replay_fails(&ctx, log, shrunk));
  printf("ordering bug: seed %llu, log of %zu choices shrunk to %zu (%llu replays)\n",
         (unsigned long long)found, len, shrunk, (unsigned long long)ctx.calls);
}

TEST_EX(simdet_pct_finds_the_ordering_bug, 120) {
  uint64_t seed, found = 0, reports, trace;
  for (seed = 1; seed <= 200 && !found; seed++) {
    sim_env_t env;
    sim_config_t cfg;
    cubert_sim_chooser_t pct;
    uint32_t log[512];
    memset(&cfg, 0, sizeof cfg);
    cfg.mode = CUBERT_CPU_MODE_DETERMINISTIC;
    sim_env_open(&env, &cfg);
    CHECK_OK(cubert_sim_chooser_initialize_pct(&pct, seed, 3, 12, log, 512, NULL));
    CHECK_OK(cubert_cpu_sim_attach(env.client, &pct, NULL));
    if (buggy_run(&env, &reports, &trace)) found = seed;
    CHECK_EQ_U64(sim_env_info(&env).source, CUBERT_SIM_SOURCE_PCT);
    CHECK_OK(cubert_cpu_sim_attach(env.client, NULL, NULL));
    sim_env_close(&env);
  }
  CHECK_MSG(found, "PCT (depth 3) never found the ordering bug in 200 seeds");
  printf("PCT depth 3 found the ordering bug at seed %llu\n", (unsigned long long)found);
}

/* ---- the CTS in deterministic mode (subprocess: the same binary) ---- */

static int run_cts_child(const char *seed) {
  pid_t pid = fork();
  int status = 0;
  if (pid == 0) {
    char *argv[3];
    setenv("CUBERT_CTS_DRIVER", "deterministic", 1);
    setenv("CUBERT_CTS_SEED", seed, 1);
    setenv("CUBERT_CTS_RACE", "1", 1);
    argv[0] = (char *)"cubert-test";
    argv[1] = (char *)"cts_";
    argv[2] = NULL;
    execv("/proc/self/exe", argv);
    _exit(127);
  }
  CHECK(pid > 0);
  CHECK(waitpid(pid, &status, 0) == pid);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128;
}

/* `make test` runs the conformance suite in deterministic mode with seed 1
 * (make cts DRIVER=deterministic); this is another seed. */
TEST_EX(simdet_conformance_suite_in_deterministic_mode, 600) {
  CHECK_EQ_U64(run_cts_child("977"), 0);
  printf("the conformance suite passed in deterministic mode (seed 977), race checker on, "
         "0 reports\n");
}

/* ---- errors ---- */

TEST(simdet_bad_options_change_nothing) {
  counting_allocator_t c;
  cubert_allocator_t a = counting_allocator_initialize(&c);
  cubert_cpu_options_t o;
  cubert_client_t *client = NULL;
  cubert_error_t err;
  uint32_t log[2] = {0, 1};
  uint8_t bytes[2] = {1, 2};
  cubert_cpu_sim_info_t info;
  cubert_sim_chooser_t ch;
  cubert_cpu_options_initialize(&o);
  o.mode = 7;
  CHECK_STATUS(cubert_cpu_client_create(a, &o, &client, &err), CUBERT_STATUS_INVALID_ARGUMENT);
  cubert_cpu_options_initialize(&o);
  o.mode = CUBERT_CPU_MODE_DETERMINISTIC;
  o.replay_count = 3; /* NULL log */
  CHECK_STATUS(cubert_cpu_client_create(a, &o, &client, &err), CUBERT_STATUS_INVALID_ARGUMENT);
  o.replay_count = 0;
  o.choice_bytes_count = 2; /* NULL bytes */
  CHECK_STATUS(cubert_cpu_client_create(a, &o, &client, &err), CUBERT_STATUS_INVALID_ARGUMENT);
  o.replay = log;
  o.replay_count = 2;
  o.choice_bytes = bytes; /* both */
  CHECK_STATUS(cubert_cpu_client_create(a, &o, &client, &err), CUBERT_STATUS_INVALID_ARGUMENT);
  o.choice_bytes = NULL;
  o.choice_bytes_count = 0;
  o.mode = CUBERT_CPU_MODE_THREADED; /* replay needs the deterministic mode */
  CHECK_STATUS(cubert_cpu_client_create(a, &o, &client, &err), CUBERT_STATUS_INVALID_ARGUMENT);
  CHECK(client == NULL);
  CHECK_EQ_U64(c.live_blocks, 0);
  /* deterministic-only calls on a threaded server */
  cubert_cpu_options_initialize(&o);
  o.workers = 1;
  o.device.memory_size = 1u << 16;
  CHECK_OK(cubert_cpu_client_create(a, &o, &client, &err));
  CHECK_OK(cubert_sim_chooser_initialize_seed(&ch, 1, NULL, 0, NULL));
  CHECK_STATUS(cubert_cpu_sim_attach(client, &ch, NULL), CUBERT_STATUS_FAILED_PRECONDITION);
  CHECK_STATUS(cubert_cpu_sim_drain(client, NULL), CUBERT_STATUS_FAILED_PRECONDITION);
  CHECK_STATUS(cubert_cpu_sim_attach(client, NULL, NULL), CUBERT_STATUS_FAILED_PRECONDITION);
  CHECK_OK(cubert_cpu_sim_info(client, &info, NULL));
  CHECK_EQ_U64(info.deterministic, 0);
  CHECK_STATUS(cubert_cpu_sim_info(client, NULL, NULL), CUBERT_STATUS_INVALID_ARGUMENT);
  CHECK_STATUS(cubert_cpu_sim_info(NULL, &info, NULL), CUBERT_STATUS_INVALID_ARGUMENT);
  CHECK_STATUS(cubert_cpu_sim_drain(NULL, NULL), CUBERT_STATUS_INVALID_ARGUMENT);
  cubert_client_release(client);
  CHECK_EQ_U64(c.live_blocks, 0);
  counting_allocator_destroy(&c);
}

/* A host wait with no runnable step returns an error instead of hanging. */
TEST(simdet_deadlock_is_an_error_not_a_hang) {
  counting_allocator_t c;
  cubert_allocator_t a = counting_allocator_initialize(&c);
  cubert_cpu_options_t o;
  cubert_client_t *client = NULL;
  const cubert_driver_t *driver = NULL;
  void *self = NULL;
  cubert_driver_stream_t *stream = NULL;
  cubert_cpu_sim_info_t info;
  cpu_stream_t *cs;
  cubert_cpu_options_initialize(&o);
  o.mode = CUBERT_CPU_MODE_DETERMINISTIC;
  o.device.max_streams = 2;
  o.device.memory_size = 1u << 16;
  o.device.index = 77;
  CHECK_OK(cubert_cpu_client_create(a, &o, &client, NULL));
  CHECK_OK(cubert_server_driver_of(client, &driver, &self));
  /* a stream of the driver the server does not use in this mode (communication) */
  CHECK_OK(driver->stream_create(self, o.device.max_streams + 1, &stream, NULL));
  cs = (cpu_stream_t *)(void *)stream;
  /* point 5 of an empty stream: nothing can ever complete it */
  CHECK_STATUS(cpu_stream_wait_point(cs, 5, UINT64_MAX), CUBERT_STATUS_FAILED_PRECONDITION);
  CHECK_OK(cubert_cpu_sim_info(client, &info, NULL));
  CHECK_EQ_U64(info.deadlocks, 1);
  CHECK_OK(cpu_stream_wait_point(cs, 0, UINT64_MAX)); /* nothing to wait for */
  driver->stream_destroy(self, stream);
  cubert_client_release(client);
  CHECK_EQ_U64(c.live_blocks, 0);
  counting_allocator_destroy(&c);
}

TEST_EX(simdet_allocation_failure_loop, 240) {
  uint64_t n;
  int completed = 0;
  for (n = 1; n < 600 && !completed; n++) {
    counting_allocator_t c;
    cubert_allocator_t a = counting_allocator_initialize(&c);
    cubert_cpu_options_t o;
    cubert_client_t *client = NULL, *other = NULL;
    cubert_handle_t h, y;
    uint32_t data[SIM_N], out[SIM_N];
    cubert_cpu_options_initialize(&o);
    o.mode = CUBERT_CPU_MODE_DETERMINISTIC;
    o.device.race_check = 1;
    o.seed = n;
    o.device.max_streams = 4;
    o.device.max_handles = 64;
    o.device.memory_size = 1u << 16;
    memset(data, 7, sizeof data);
    counting_allocator_fail_at(&c, n, 1);
    if (cubert_cpu_client_create(a, &o, &client, NULL) == CUBERT_STATUS_OK) {
      if (cubert_client_clone(client, &other, NULL) == CUBERT_STATUS_OK) {
        cubert_client_set_stream(other, 2);
        if (cubert_client_create_from_slice(client, data, sizeof data, &h,
                                            NULL) == CUBERT_STATUS_OK) {
          if (cubert_client_empty(other, sizeof out, &y, NULL) == CUBERT_STATUS_OK) {
            cubert_binding_t b[2];
            cubert_launch_arguments_t args;
            cubert_cube_count_t count = cubert_cube_count_new_single();
            cubert_status_t st;
            b[0] = h;
            b[1] = y;
            cubert_launch_arguments_initialize(&args);
            args.buffers = b;
            args.buffer_count = 2;
            args.scalars = NULL;
            args.scalar_count = 0;
            /* a cross-stream copy: waits, pins, a GC task */
            st = cubert_client_launch(other, sim_copy_kernel_ptr(), &count, &args, NULL);
            (void)st;
            st = cubert_client_read_one(other, &y, out, sizeof out, NULL);
            CHECK(st != CUBERT_STATUS_INTERNAL);
            if (st == CUBERT_STATUS_OK && c.failures == 0) completed = 1;
            CHECK_OK(cubert_client_handle_release(client, &y, NULL));
          }
          CHECK_OK(cubert_client_handle_release(client, &h, NULL));
        }
        cubert_client_release(other);
      }
      cubert_client_release(client);
    }
    CHECK_MSG(c.live_blocks == 0, "fail at %llu: %lld blocks leaked", (unsigned long long)n,
              (long long)c.live_blocks);
    counting_allocator_destroy(&c);
  }
  CHECK_MSG(completed, "the program never completed without a failure");
}
