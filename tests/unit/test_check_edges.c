/* SPDX-License-Identifier: MIT */
/* tests/unit/test_check_edges.c: core/check paths the main race and simulation tests
 * leave out: the race checker's shadow table deleting across its end (chains that
 * wrap), clock queries on bad timelines; the simulation chooser's
 * argument refusals, PCT without step identities, an explorer whose replayed path sees
 * another arity, a chooser with a corrupt source, and the shrinker's edge cases. */
#include "test.h"
#include "counting_allocator.h"
#include "cubert/race.h"
#include "cubert/sim.h"
#include "check/race.h"
#include "cubert/driver/sim.h"

/* ---- race checker -------------------------------------------------------------------- */

#if CUBERT_CONFIG_RACE_CHECKER /* calls internals that are not built without it */
/* White box: the checker's shadow table is open addressing over race_mix(buffer) (the
 * murmur3 finalizer, copied here) with 16 buckets while it holds at most 7 buffers.
 * Buffers are chosen by their home bucket so that deletions meet chains that wrap
 * past the table's end; every buffer left must still be found afterwards. */
static uint64_t shadow_mix(uint64_t key) {
  key ^= key >> 33;
  key *= 0xFF51AFD7ED558CCDull;
  key ^= key >> 33;
  key *= 0xC4CEB9FE1A85EC53ull;
  key ^= key >> 33;
  return key;
}

/* The n-th (0-based) buffer id whose home bucket in a 16-bucket table is `home`. */
static uint64_t buffer_with_home(uint32_t home, int n) {
  uint64_t key;
  for (key = 1;; key++)
    if ((shadow_mix(key) & 15u) == home && n-- == 0) return key;
}

static void write_on(cubert_race_checker_t *c, uint32_t stream, const uint64_t *buffers, int n) {
  uint64_t op = 0;
  int i;
  CHECK_OK(cubert__race_op_begin(c, stream, "w", &op));
  for (i = 0; i < n; i++) CHECK_OK(cubert__race_access(c, buffers[i], stream, op, CUBERT_RACE_WRITE, 0, 8));
}

static uint64_t buffers_tracked(const cubert_race_checker_t *c) {
  cubert_race_counters_t k;
  cubert__race_counters(c, &k);
  return k.buffers;
}

static uint64_t reports_so_far(const cubert_race_checker_t *c) {
  cubert_race_counters_t k;
  cubert__race_counters(c, &k);
  return k.reports;
}

TEST(race_shadow_deletion_across_the_table_end_keeps_chains) {
  TEST_REQUIRE_FEATURE(CUBERT_FEATURE_RACE_CHECKER);
  counting_allocator_t ca;
  cubert_race_checker_t *c = NULL;
  cubert_race_options_t o;
  uint64_t b[3];
  cubert__race_options_initialize(&o);
  o.flags = CUBERT_RACE_FLAG_REPORT_ALL;
  CHECK_OK(cubert__race_checker_create(counting_allocator_initialize(&ca), &o, &c, NULL));
  /* three buffers at home 15: buckets 15, 0, 1. Forgetting the first moves both back
   * across the end (the second from bucket 0 to 15, the third from 1 to 0). */
  b[0] = buffer_with_home(15, 0);
  b[1] = buffer_with_home(15, 1);
  b[2] = buffer_with_home(15, 2);
  write_on(c, 0, b, 3);
  CHECK_EQ_U64(buffers_tracked(c), 3);
  CHECK_OK(cubert__race_forget(c, b[0]));
  CHECK_EQ_U64(buffers_tracked(c), 2);
  write_on(c, 1, &b[1], 2); /* unsynchronized with stream 0: both still conflict */
  CHECK_EQ_U64(reports_so_far(c), 2);
  CHECK_OK(cubert__race_forget(c, b[1]));
  CHECK_OK(cubert__race_forget(c, b[2]));
  CHECK_EQ_U64(buffers_tracked(c), 0); /* both were found */
  /* homes 14, 15, 15: buckets 14, 15, 0. Forgetting the first moves nothing: both
   * others sit at or after their home, seen from the hole (one of them past the end). */
  cubert__race_checker_reset(c);
  b[0] = buffer_with_home(14, 0);
  b[1] = buffer_with_home(15, 0);
  b[2] = buffer_with_home(15, 1);
  write_on(c, 0, b, 3);
  CHECK_OK(cubert__race_forget(c, b[0]));
  CHECK_EQ_U64(buffers_tracked(c), 2);
  write_on(c, 1, &b[1], 2);
  CHECK_EQ_U64(reports_so_far(c), 2);
  CHECK_OK(cubert__race_forget(c, b[2]));
  CHECK_OK(cubert__race_forget(c, b[1]));
  CHECK_EQ_U64(buffers_tracked(c), 0);
  cubert__race_checker_destroy(c);
  CHECK_EQ_I64(ca.live_blocks, 0);
  counting_allocator_destroy(&ca);
}

TEST(race_clock_of_bad_timelines_is_zero) {
  TEST_REQUIRE_FEATURE(CUBERT_FEATURE_RACE_CHECKER);
  counting_allocator_t ca;
  cubert_race_checker_t *c = NULL;
  uint64_t op = 0;
  CHECK_OK(cubert__race_checker_create(counting_allocator_initialize(&ca), NULL, &c, NULL));
  CHECK_OK(cubert__race_op_begin(c, 0, "k", &op));
  CHECK_EQ_U64(cubert__race_clock(c, 0, 0), 1);
  CHECK_EQ_U64(cubert__race_clock(c, 0, 100000), 0); /* the second timeline is out of range */
  CHECK_EQ_U64(cubert__race_clock(c, 100000, 0), 0);
  CHECK_EQ_U64(cubert__race_clock(NULL, 0, 0), 0);
  cubert__race_checker_destroy(c);
  CHECK_EQ_I64(ca.live_blocks, 0);
  counting_allocator_destroy(&ca);
}
#endif /* CUBERT_CONFIG_RACE_CHECKER */

/* ---- simulation chooser ----------------------------------------------------------------- */

TEST(sim_chooser_init_refusals_leave_it_untouched) {
  TEST_REQUIRE_FEATURE(CUBERT_FEATURE_SIMULATION);
  cubert_sim_chooser_t c;
  cubert_sim_explorer_t e;
  uint32_t log[4], choice[4], arity[4];
  const uint32_t replay[2] = {1, 0};
  const uint8_t bytes[2] = {1, 0};
  memset(&c, 0x5a, sizeof c);
  CHECK_STATUS(cubert_sim_chooser_initialize_seed(NULL, 1, log, 4,
                                                  NULL), CUBERT_STATUS_INVALID_ARGUMENT);
  CHECK_STATUS(cubert_sim_chooser_initialize_seed(&c, 1, NULL, 4,
                                                  NULL), CUBERT_STATUS_INVALID_ARGUMENT);
  CHECK_STATUS(cubert_sim_chooser_initialize_replay(NULL, replay, 2, log, 4,
                                                    NULL), CUBERT_STATUS_INVALID_ARGUMENT);
  CHECK_STATUS(cubert_sim_chooser_initialize_replay(&c, replay, 2, NULL, 4,
                                                    NULL), CUBERT_STATUS_INVALID_ARGUMENT);
  CHECK_STATUS(cubert_sim_chooser_initialize_replay(&c, NULL, 2, log, 4,
                                                    NULL), CUBERT_STATUS_INVALID_ARGUMENT);
  CHECK_STATUS(cubert_sim_chooser_initialize_bytes(NULL, bytes, 2, log, 4,
                                                   NULL), CUBERT_STATUS_INVALID_ARGUMENT);
  CHECK_STATUS(cubert_sim_chooser_initialize_bytes(&c, bytes, 2, NULL, 4,
                                                   NULL), CUBERT_STATUS_INVALID_ARGUMENT);
  CHECK_STATUS(cubert_sim_chooser_initialize_bytes(&c, NULL, 2, log, 4,
                                                   NULL), CUBERT_STATUS_INVALID_ARGUMENT);
  CHECK_STATUS(cubert_sim_chooser_initialize_pct(NULL, 1, 2, 10, log, 4,
                                                 NULL), CUBERT_STATUS_INVALID_ARGUMENT);
  CHECK_STATUS(cubert_sim_chooser_initialize_pct(&c, 1, 2, 10, NULL, 4,
                                                 NULL), CUBERT_STATUS_INVALID_ARGUMENT);
  CHECK_STATUS(cubert_sim_chooser_initialize_pct(&c, 1, 2, 0, log, 4,
                                                 NULL), CUBERT_STATUS_INVALID_ARGUMENT);
  CHECK_OK(cubert_sim_explorer_initialize(&e, choice, arity, 4, NULL));
  CHECK_STATUS(cubert_sim_chooser_initialize_explore(NULL, &e, log, 4,
                                                     NULL), CUBERT_STATUS_INVALID_ARGUMENT);
  CHECK_STATUS(cubert_sim_chooser_initialize_explore(&c, &e, NULL, 4,
                                                     NULL), CUBERT_STATUS_INVALID_ARGUMENT);
  CHECK_STATUS(cubert_sim_chooser_initialize_explore(&c, NULL, log, 4,
                                                     NULL), CUBERT_STATUS_INVALID_ARGUMENT);
  CHECK_STATUS(cubert_sim_explorer_initialize(NULL, choice, arity, 4,
                                              NULL), CUBERT_STATUS_INVALID_ARGUMENT);
  CHECK_STATUS(cubert_sim_explorer_initialize(&e, choice, arity, 0,
                                              NULL), CUBERT_STATUS_INVALID_ARGUMENT);
  CHECK_STATUS(cubert_sim_explorer_initialize(&e, NULL, arity, 4,
                                              NULL), CUBERT_STATUS_INVALID_ARGUMENT);
  CHECK_STATUS(cubert_sim_explorer_initialize(&e, choice, NULL, 4,
                                              NULL), CUBERT_STATUS_INVALID_ARGUMENT);
  CHECK_EQ_U64(c.source, 0x5a5a5a5au); /* untouched by every refusal */
  /* no log and no capacity is fine: nothing is logged, the hash still moves */
  CHECK_OK(cubert_sim_chooser_initialize_replay(&c, NULL, 0, NULL, 0, NULL));
  CHECK_EQ_U64(cubert_sim_choose(&c, 3, NULL), 0); /* past the (empty) log: 0 */
  CHECK(c.log_truncated);
  CHECK_OK(cubert_sim_chooser_initialize_bytes(&c, NULL, 0, NULL, 0, NULL));
  CHECK_EQ_U64(cubert_sim_choose(&c, 3, NULL), 0);
}

TEST(sim_pct_without_ids_uses_positions) {
  TEST_REQUIRE_FEATURE(CUBERT_FEATURE_SIMULATION);
  cubert_sim_chooser_t a, b;
  uint32_t ids[3] = {0, 1, 2};
  int i;
  CHECK_OK(cubert_sim_chooser_initialize_pct(&a, 42, 3, 20, NULL, 0, NULL));
  CHECK_OK(cubert_sim_chooser_initialize_pct(&b, 42, 3, 20, NULL, 0, NULL));
  /* with no identities a step is known by its position: the same run as ids 0..n-1 */
  for (i = 0; i < 20; i++) CHECK_EQ_U64(cubert_sim_choose(&a, 3, NULL), cubert_sim_choose(&b, 3, ids));
  CHECK_EQ_U64(a.trace_hash, b.trace_hash);
}

TEST(sim_corrupt_source_chooses_zero_and_still_logs) {
  TEST_REQUIRE_FEATURE(CUBERT_FEATURE_SIMULATION);
  cubert_sim_chooser_t c;
  uint32_t log[2];
  uint64_t hash;
  CHECK_OK(cubert_sim_chooser_initialize_seed(&c, 7, log, 2, NULL));
  c.source = 99; /* not a source */
  hash = c.trace_hash;
  CHECK_EQ_U64(cubert_sim_choose(&c, 5, NULL), 0);
  CHECK_EQ_U64(c.log_len, 1);
  CHECK_EQ_U64(log[0], 0);
  CHECK(c.trace_hash != hash);
}

TEST(sim_explorer_arity_mismatch_and_early_stop) {
  TEST_REQUIRE_FEATURE(CUBERT_FEATURE_SIMULATION);
  cubert_sim_explorer_t e;
  cubert_sim_chooser_t c;
  uint32_t choice[8], arity[8];
  CHECK_OK(cubert_sim_explorer_initialize(&e, choice, arity, 8, NULL));
  /* run 1: three choice points of arity 2 */
  CHECK_OK(cubert_sim_chooser_initialize_explore(&c, &e, NULL, 0, NULL));
  cubert_sim_choose(&c, 2, NULL);
  cubert_sim_choose(&c, 2, NULL);
  cubert_sim_choose(&c, 2, NULL);
  CHECK(cubert_sim_explorer_next(&e)); /* path 0,0,1 */
  /* run 2 stops after one choice: the deeper entries are dropped, path 1 next */
  CHECK_OK(cubert_sim_chooser_initialize_explore(&c, &e, NULL, 0, NULL));
  CHECK_EQ_U64(cubert_sim_choose(&c, 2, NULL), 0);
  CHECK(cubert_sim_explorer_next(&e));
  CHECK_EQ_U64(e.depth, 1);
  CHECK_EQ_U64(e.choice[0], 1);
  /* run 3 sees arity 3 where the path recorded 2: a mismatch, the choice kept when it fits */
  CHECK_OK(cubert_sim_chooser_initialize_explore(&c, &e, NULL, 0, NULL));
  CHECK_EQ_U64(cubert_sim_choose(&c, 3, NULL), 1);
  CHECK(e.mismatch);
  CHECK(!cubert_sim_explorer_next(&e)); /* a mismatch ends the exploration */
  /* a recorded choice that does not fit the new arity reads 0 */
  CHECK_OK(cubert_sim_explorer_initialize(&e, choice, arity, 8, NULL));
  CHECK_OK(cubert_sim_chooser_initialize_explore(&c, &e, NULL, 0, NULL));
  cubert_sim_choose(&c, 3, NULL);
  CHECK(cubert_sim_explorer_next(&e)); /* path 1 */
  CHECK_OK(cubert_sim_chooser_initialize_explore(&c, &e, NULL, 0, NULL));
  CHECK_EQ_U64(cubert_sim_choose(&c, 3, NULL), 1);
  CHECK(cubert_sim_explorer_next(&e)); /* path 2 */
  CHECK_EQ_U64(e.choice[0], 2);
  CHECK_OK(cubert_sim_chooser_initialize_explore(&c, &e, NULL, 0, NULL));
  CHECK_EQ_U64(cubert_sim_choose(&c, 2, NULL), 0);
  CHECK(e.mismatch);
}

/* ---- shrinking ---------------------------------------------------------------------------- */

/* Fails while the log holds a 3 somewhere (the rest does not matter). */
static bool fails_with_a_three(void *user, const uint32_t *choices, size_t count) {
  size_t i;
  ++*(int *)user;
  for (i = 0; i < count; i++)
    if (choices[i] == 3) return true;
  return false;
}

/* Fails while the log holds a 3 and is 3 long or starts with 0: removing the last 0 of
 * [5, 3, 0] passes, but after lowering the 5 to 0 it fails again, so the trailing 0 goes. */
/* Fails while the log is at least 3 long with a non-zero choice at index 1. */
static bool fails_with_index_1_set(void *user, const uint32_t *choices, size_t count) {
  ++*(int *)user;
  return count >= 3 && choices[1] != 0;
}

static bool fails_three_and_shape(void *user, const uint32_t *choices, size_t count) {
  size_t i;
  bool three = false;
  ++*(int *)user;
  for (i = 0; i < count; i++) three = three || choices[i] == 3;
  return three && (count == 3 || (count > 0 && choices[0] == 0));
}

TEST(sim_shrink_edges) {
  TEST_REQUIRE_FEATURE(CUBERT_FEATURE_SIMULATION);
  uint32_t log[6], scratch[6];
  int calls = 0;
  /* refusals: the count comes back unchanged and nothing is called */
  CHECK_EQ_U64(cubert_sim_shrink(NULL, 3, scratch, fails_with_a_three, &calls), 3);
  CHECK_EQ_U64(cubert_sim_shrink(log, 3, NULL, fails_with_a_three, &calls), 3);
  CHECK_EQ_U64(cubert_sim_shrink(log, 3, scratch, NULL, &calls), 3);
  CHECK_EQ_U64(cubert_sim_shrink(log, 0, scratch, fails_with_a_three, &calls), 0);
  CHECK_EQ_I64(calls, 0);
  /* one choice: no chunk to remove; it is the failing one, kept */
  log[0] = 3;
  CHECK_EQ_U64(cubert_sim_shrink(log, 1, scratch, fails_with_a_three, &calls), 1);
  CHECK_EQ_U64(log[0], 3);
  /* lowering skips zeros and restores a needed choice; then a trailing 0 goes */
  log[0] = 5;
  log[1] = 3;
  log[2] = 0;
  calls = 0;
  CHECK_EQ_U64(cubert_sim_shrink(log, 3, scratch, fails_three_and_shape, &calls), 2);
  CHECK_EQ_U64(log[0], 0);
  CHECK_EQ_U64(log[1], 3);
  /* a trailing 0 that the failure needs stays */
  log[0] = 0;
  log[1] = 2;
  log[2] = 0;
  CHECK_EQ_U64(cubert_sim_shrink(log, 3, scratch, fails_with_index_1_set, &calls), 3);
  CHECK_EQ_U64(log[1], 2);
  CHECK_EQ_U64(log[2], 0);
  CHECK(calls > 0);
}
