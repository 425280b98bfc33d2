/* SPDX-License-Identifier: MIT */
/* tests/unit/test_sim.c: the simulation chooser of core/check/sim.c (cubert/sim.h):
 * sources, trace hash, exhaustive explorer, PCT, shrinker, bad arguments. */
#include "test.h"

#include "cubert/config.h"
#include "cubert/sim.h"
#include "cubert/driver/sim.h"

/* An abstract scenario: `streams` streams of `ops` steps each; every step of
 * a stream with steps left is runnable. Returns the trace hash. */
static uint64_t run_abstract(cubert_sim_chooser_t *c, uint32_t streams, uint32_t ops) {
  uint32_t left[8], ids[8], seq[8], i;
  for (i = 0; i < streams; i++) {
    left[i] = ops;
    seq[i] = 0;
  }
  for (;;) {
    uint32_t n = 0, k;
    for (i = 0; i < streams; i++)
      if (left[i]) ids[n++] = i;
    if (n == 0) break;
    k = cubert_sim_choose(c, n, ids);
    CHECK(k < n);
    left[ids[k]]--;
    cubert_sim_trace(c, 1, ids[k], ++seq[ids[k]]);
  }
  return c->trace_hash;
}

static int cmp_u64(const void *a, const void *b) {
  uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
  return x < y ? -1 : x > y;
}

/* Exhaustive enumeration: every interleaving exactly once. */
static void explore_count(uint32_t streams, uint32_t ops, uint64_t expect) {
  static uint64_t hashes[40000];
  uint32_t choice[64], arity[64];
  cubert_sim_explorer_t e;
  cubert_sim_chooser_t c;
  uint64_t n = 0, i;
  TEST_REQUIRE_FEATURE(CUBERT_FEATURE_SIMULATION);
  CHECK_OK(cubert_sim_explorer_initialize(&e, choice, arity, 64, NULL));
  do {
    CHECK_OK(cubert_sim_chooser_initialize_explore(&c, &e, NULL, 0, NULL));
    CHECK(n < 40000);
    hashes[n++] = run_abstract(&c, streams, ops);
  } while (cubert_sim_explorer_next(&e));
  CHECK(!e.overflow && !e.mismatch);
  CHECK_EQ_U64(n, expect);
  CHECK_EQ_U64(e.runs, expect);
  qsort(hashes, (size_t)n, sizeof hashes[0], cmp_u64);
  for (i = 1; i < n; i++) CHECK_MSG(hashes[i] != hashes[i - 1], "two schedules share a trace hash");
}

TEST(sim_explore_2_streams_8_ops_is_12870_schedules) { explore_count(2, 8, 12870); }
TEST(sim_explore_3_streams_4_ops_is_34650_schedules) { explore_count(3, 4, 34650); }

TEST(sim_splitmix64_matches_the_reference) {
  /* splitmix64 from seed 0 (Vigna's reference implementation) */
  uint64_t state = 0;
  CHECK_EQ_U64(cubert_sim_splitmix64(&state), 0xe220a8397b1dcdafull);
  CHECK_EQ_U64(cubert_sim_splitmix64(&state), 0x6e789e6aa1b965f4ull);
}

TEST(sim_seed_is_reproducible_and_seeds_differ) {
  TEST_REQUIRE_FEATURE(CUBERT_FEATURE_SIMULATION);
  cubert_sim_chooser_t a, b;
  uint32_t la[64], lb[64];
  uint64_t h1, h2, distinct = 0, prev = 0, s;
  CHECK_OK(cubert_sim_chooser_initialize_seed(&a, 42, la, 64, NULL));
  CHECK_OK(cubert_sim_chooser_initialize_seed(&b, 42, lb, 64, NULL));
  h1 = run_abstract(&a, 3, 6);
  h2 = run_abstract(&b, 3, 6);
  CHECK_EQ_U64(h1, h2);
  CHECK_EQ_U64(a.log_len, b.log_len);
  CHECK(memcmp(la, lb, a.log_len * sizeof la[0]) == 0);
  CHECK(a.choices >= 12); /* 3 x 6 steps, at least the first 12 are real choices */
  for (s = 0; s < 50; s++) {
    CHECK_OK(cubert_sim_chooser_initialize_seed(&a, s, NULL, 0, NULL));
    h1 = run_abstract(&a, 3, 6);
    if (s == 0 || h1 != prev) distinct++;
    prev = h1;
  }
  CHECK(distinct > 25);
}

TEST(sim_replay_reproduces_a_seeded_run) {
  TEST_REQUIRE_FEATURE(CUBERT_FEATURE_SIMULATION);
  cubert_sim_chooser_t a, r;
  uint32_t la[64], lr[64];
  uint64_t h;
  CHECK_OK(cubert_sim_chooser_initialize_seed(&a, 7, la, 64, NULL));
  h = run_abstract(&a, 2, 10);
  CHECK_OK(cubert_sim_chooser_initialize_replay(&r, la, a.log_len, lr, 64, NULL));
  CHECK_EQ_U64(run_abstract(&r, 2, 10), h);
  CHECK(!r.diverged);
  CHECK_EQ_U64(r.position, a.log_len);
  CHECK(memcmp(la, lr, a.log_len * sizeof la[0]) == 0);
}

TEST(sim_replay_out_of_range_diverges_and_end_takes_zero) {
  TEST_REQUIRE_FEATURE(CUBERT_FEATURE_SIMULATION);
  cubert_sim_chooser_t r;
  uint32_t bad[2] = {5, 1};
  CHECK_OK(cubert_sim_chooser_initialize_replay(&r, bad, 2, NULL, 0, NULL));
  CHECK_EQ_U64(cubert_sim_choose(&r, 2, NULL), 1); /* 5 mod 2 */
  CHECK(r.diverged);
  CHECK_EQ_U64(cubert_sim_choose(&r, 3, NULL), 1);
  CHECK_EQ_U64(cubert_sim_choose(&r, 3, NULL), 0); /* after the end */
  CHECK_EQ_U64(cubert_sim_choose(&r, 1, NULL), 0); /* no choice: not counted */
  CHECK_EQ_U64(r.choices, 3);
}

TEST(sim_bytes_source_and_log_truncation) {
  TEST_REQUIRE_FEATURE(CUBERT_FEATURE_SIMULATION);
  cubert_sim_chooser_t c;
  const uint8_t bytes[3] = {7, 2, 255};
  uint32_t log[2];
  CHECK_OK(cubert_sim_chooser_initialize_bytes(&c, bytes, 3, log, 2, NULL));
  CHECK_EQ_U64(cubert_sim_choose(&c, 4, NULL), 3);
  CHECK_EQ_U64(cubert_sim_choose(&c, 2, NULL), 0);
  CHECK_EQ_U64(cubert_sim_choose(&c, 10, NULL), 5);
  CHECK_EQ_U64(cubert_sim_choose(&c, 10, NULL), 0); /* exhausted */
  CHECK_EQ_U64(c.log_len, 2);
  CHECK(c.log_truncated);
  CHECK_EQ_U64(log[0], 3);
  CHECK_EQ_U64(log[1], 0);
}

TEST(sim_pct_depth_1_runs_one_stream_to_the_end) {
  TEST_REQUIRE_FEATURE(CUBERT_FEATURE_SIMULATION);
  /* depth 1: no change point, the highest priority runnable id always runs */
  cubert_sim_chooser_t c;
  uint32_t ids[2] = {4, 9}, first, i;
  CHECK_OK(cubert_sim_chooser_initialize_pct(&c, 3, 1, 10, NULL, 0, NULL));
  first = cubert_sim_choose(&c, 2, ids);
  for (i = 0; i < 20; i++) CHECK_EQ_U64(cubert_sim_choose(&c, 2, ids), first);
}

TEST(sim_pct_change_points_switch_streams) {
  TEST_REQUIRE_FEATURE(CUBERT_FEATURE_SIMULATION);
  /* depth 2 with a change point within 4 steps: the first stream loses
   * priority there, so both streams run within the first 8 steps for every seed */
  uint64_t seed;
  for (seed = 0; seed < 100; seed++) {
    cubert_sim_chooser_t c;
    uint32_t ids[2] = {0, 1}, seen = 0, i;
    CHECK_OK(cubert_sim_chooser_initialize_pct(&c, seed, 2, 4, NULL, 0, NULL));
    for (i = 0; i < 8; i++) seen |= 1u << cubert_sim_choose(&c, 2, ids);
    CHECK_EQ_U64(seen, 3);
  }
}

typedef struct shrink_ctx_t {
  uint64_t calls;
} shrink_ctx_t;

/* fails when the log has at least two non-zero choices */
static bool two_nonzero(void *user, const uint32_t *choices, size_t n) {
  size_t i, k = 0;
  ((shrink_ctx_t *)user)->calls++;
  for (i = 0; i < n; i++) k += choices[i] != 0;
  return k >= 2;
}

TEST(sim_shrink_reduces_a_failing_log) {
  TEST_REQUIRE_FEATURE(CUBERT_FEATURE_SIMULATION);
  uint32_t log[40], scratch[40];
  shrink_ctx_t ctx = {0};
  size_t n, i, nonzero = 0;
  for (i = 0; i < 40; i++) log[i] = (uint32_t)(i % 3);
  CHECK(two_nonzero(&ctx, log, 40));
  n = cubert_sim_shrink(log, 40, scratch, two_nonzero, &ctx);
  CHECK(n <= 2);
  CHECK(two_nonzero(&ctx, log, n));
  for (i = 0; i < n; i++) nonzero += log[i] != 0;
  CHECK_EQ_U64(nonzero, 2);
  CHECK(ctx.calls > 2);
  /* a log that does not fail is returned unchanged */
  log[0] = 1;
  CHECK_EQ_U64(cubert_sim_shrink(log, 1, scratch, two_nonzero, &ctx), 1);
  CHECK_EQ_U64(log[0], 1);
}

TEST(sim_bad_arguments) {
  TEST_REQUIRE_FEATURE(CUBERT_FEATURE_SIMULATION);
  cubert_sim_chooser_t c;
  cubert_sim_explorer_t e;
  uint32_t buf[4];
  memset(&c, 0xAB, sizeof c);
  CHECK_STATUS(cubert_sim_chooser_initialize_seed(NULL, 1, NULL, 0,
                                                  NULL), CUBERT_STATUS_INVALID_ARGUMENT);
  CHECK_STATUS(cubert_sim_chooser_initialize_seed(&c, 1, NULL, 4,
                                                  NULL), CUBERT_STATUS_INVALID_ARGUMENT);
  CHECK_STATUS(cubert_sim_chooser_initialize_replay(&c, NULL, 3, NULL, 0,
                                                    NULL), CUBERT_STATUS_INVALID_ARGUMENT);
  CHECK_STATUS(cubert_sim_chooser_initialize_bytes(&c, NULL, 3, NULL, 0,
                                                   NULL), CUBERT_STATUS_INVALID_ARGUMENT);
  CHECK_STATUS(cubert_sim_chooser_initialize_pct(&c, 1, 0, 5, NULL, 0,
                                                 NULL), CUBERT_STATUS_INVALID_ARGUMENT);
  CHECK_STATUS(cubert_sim_chooser_initialize_pct(&c, 1, CUBERT_SIM_PCT_MAX_DEPTH + 1, 5, NULL, 0,
                                                 NULL),
               CUBERT_STATUS_INVALID_ARGUMENT);
  CHECK_STATUS(cubert_sim_chooser_initialize_pct(&c, 1, 2, 0, NULL, 0,
                                                 NULL), CUBERT_STATUS_INVALID_ARGUMENT);
  CHECK_STATUS(cubert_sim_chooser_initialize_explore(&c, NULL, NULL, 0,
                                                     NULL), CUBERT_STATUS_INVALID_ARGUMENT);
  CHECK_EQ_U64(c.source, 0xABABABABu); /* untouched by every failure */
  CHECK_STATUS(cubert_sim_explorer_initialize(&e, buf, NULL, 4,
                                              NULL), CUBERT_STATUS_INVALID_ARGUMENT);
  CHECK_STATUS(cubert_sim_explorer_initialize(&e, buf, buf, 0,
                                              NULL), CUBERT_STATUS_INVALID_ARGUMENT);
  CHECK_EQ_U64(cubert_sim_choose(NULL, 5, NULL), 0);
  cubert_sim_trace(NULL, 1, 2, 3);
  CHECK(!cubert_sim_explorer_next(NULL));
  CHECK_EQ_U64(cubert_sim_shrink(NULL, 3, buf, two_nonzero, NULL), 3);
}

TEST(sim_explorer_overflow_is_reported) {
  TEST_REQUIRE_FEATURE(CUBERT_FEATURE_SIMULATION);
  uint32_t choice[3], arity[3];
  cubert_sim_explorer_t e;
  cubert_sim_chooser_t c;
  CHECK_OK(cubert_sim_explorer_initialize(&e, choice, arity, 3, NULL));
  CHECK_OK(cubert_sim_chooser_initialize_explore(&c, &e, NULL, 0, NULL));
  (void)run_abstract(&c, 2, 4); /* up to 4 choice points: more than 3 */
  CHECK(e.overflow);
  CHECK(!cubert_sim_explorer_next(&e));
}
