/* SPDX-License-Identifier: MIT */
/*
 * tests/unit/test_handle_lanes.c: the acquire lanes of the handle table
 * (core/memory/handle.c, "Lanes"; issue 27): lanes take their ids from
 * distinct chunks, keep reusing late, refuse stale ids, share a chunk when
 * the table cannot give one (capacity, a failed growth) and grow the table
 * by at most one chunk per lane. The threaded side is in
 * tests/os/test_handle_threads.c (handle_threads_*_lanes).
 */
#include "test_handle_fixture.h"

static uint32_t chunk_of(cubert_memory_id_t id) { return ((id.index & 0xFFFFFFu) - 1u) >> 8; }

static cubert_memory_id_t acquire_lane_ok(cubert_handle_table_t *t, uint32_t lane) {
  cubert_memory_id_t id = {0, 0};
  CHECK_OK(cubert__memory_id_acquire_lane(t, lane, &id));
  return id;
}

/* Eight lanes acquiring in turn: each lane's ids come from one chunk, no two
 * lanes share one, and the table grew exactly one chunk per lane. Lane 0 is
 * the plain acquire's. */
TEST(handle_lanes_take_distinct_chunks) {
  enum { LANES_USED = 8, PER_LANE = 20 };
  counting_allocator_t c;
  cubert_handle_table_t *t = table_new(&c, 1u << 16, 0x11);
  cubert_memory_id_t ids[LANES_USED][PER_LANE], extra;
  uint32_t home[LANES_USED];
  int l, k, m;
  for (k = 0; k < PER_LANE; k++)
    for (l = 0; l < LANES_USED; l++)
      ids[l][k] = k % 2 == 0 || l != 0 ? acquire_lane_ok(t, (uint32_t)l) : acquire_ok(t);
  for (l = 0; l < LANES_USED; l++) {
    home[l] = chunk_of(ids[l][0]);
    for (k = 1; k < PER_LANE; k++) CHECK_EQ_U64(chunk_of(ids[l][k]), home[l]);
    for (m = 0; m < l; m++) CHECK(home[m] != home[l]);
  }
  CHECK_EQ_U64(home[0], 0);
  CHECK_EQ_I64(c.live_blocks - 2, LANES_USED); /* header, chunk pointers, one chunk per lane */
  /* a lane number is taken modulo the lanes: lane 32 is lane 0 */
  extra = acquire_lane_ok(t, CUBERT_HANDLE_TABLE_LANES);
  CHECK_EQ_U64(chunk_of(extra), 0);
  check_consistent(t, LANES_USED * PER_LANE + 1, 0);
  CHECK_OK(cubert__memory_id_release_handle(t, extra));
  for (l = 0; l < LANES_USED; l++)
    for (k = 0; k < PER_LANE; k++) CHECK_OK(cubert__memory_id_release_handle(t, ids[l][k]));
  table_done(t, &c);
}

/* acquire_owned_lane: the id is owned with its location, in the lane's
 * chunk; the owner's disown frees it; bad arguments are refused. */
TEST(handle_lanes_acquire_owned) {
  counting_allocator_t c;
  cubert_handle_table_t *t = table_new(&c, 4096, 0x12);
  cubert_memory_location_t loc = {3, 1, 7, 9}, got;
  cubert_memory_id_t a, b, untouched = {0xDEAD, 0xBEEF};
  a = acquire_ok(t);
  CHECK_OK(cubert__memory_id_acquire_owned_lane(t, 5, loc, &b));
  CHECK(chunk_of(b) != chunk_of(a));
  CHECK_OK(cubert__memory_id_location(t, b, &got));
  CHECK_EQ_U64(got.pool, 3);
  CHECK_EQ_U64(got.slice, 9);
  check_consistent(t, 2, 0);
  CHECK_OK(cubert__memory_id_release_handle(t, b));
  check_consistent(t, 1, 1); /* dead, still owned */
  CHECK_OK(cubert__memory_id_disown(t, b));
  CHECK_OK(cubert__memory_id_release_handle(t, a));
  check_consistent(t, 0, 0);
  CHECK_STATUS(cubert__memory_id_acquire_lane(NULL, 1, &a), CUBERT_STATUS_INVALID_ARGUMENT);
  CHECK_STATUS(cubert__memory_id_acquire_lane(t, 1, NULL), CUBERT_STATUS_INVALID_ARGUMENT);
  CHECK_STATUS(cubert__memory_id_acquire_owned_lane(NULL, 1, loc, &untouched),
               CUBERT_STATUS_INVALID_ARGUMENT);
  CHECK_STATUS(cubert__memory_id_acquire_owned_lane(t, 1, loc, NULL), CUBERT_STATUS_INVALID_ARGUMENT);
  CHECK_EQ_U64(untouched.index, 0xDEAD);
  check_consistent(t, 0, 0);
  table_done(t, &c);
}

/* A lane reuses late too: 200 acquire/release rounds on a lane give 200
 * distinct slots; when the lane's sweep comes back to a slot, the stale id
 * of its earlier occupant is refused everywhere and does not touch the new
 * one. */
TEST(handle_lanes_reuse_late_and_refuse_stale_ids) {
  counting_allocator_t c;
  cubert_handle_table_t *t = table_new(&c, 1024, 0x13);
  unsigned char seen[1025];
  cubert_memory_id_t first, id, other;
  int i;
  memset(seen, 0, sizeof seen);
  other = acquire_lane_ok(t, 2); /* lane 2 holds a chunk: lane 7 sweeps only its own */
  first = acquire_lane_ok(t, 7);
  seen[first.index & 0xFFFFFFu] = 1;
  CHECK_OK(cubert__memory_id_release_handle(t, first));
  for (i = 0; i < 200; i++) {
    id = acquire_lane_ok(t, 7);
    CHECK(!seen[id.index & 0xFFFFFFu]);
    CHECK_EQ_U64(chunk_of(id), chunk_of(first));
    seen[id.index & 0xFFFFFFu] = 1;
    CHECK_OK(cubert__memory_id_release_handle(t, id));
  }
  /* on until the lane meets the first slot again (its chunk: 256 slots) */
  for (i = 0; i < 256; i++) {
    id = acquire_lane_ok(t, 7);
    if (id.index == first.index) break;
    CHECK_OK(cubert__memory_id_release_handle(t, id));
  }
  CHECK_EQ_U64(id.index, first.index);
  CHECK(id.generation != first.generation);
  check_rejected(t, first);
  check_counts(t, id, 1, 1);
  CHECK_OK(cubert__memory_id_release_handle(t, id));
  CHECK_OK(cubert__memory_id_release_handle(t, other));
  check_consistent(t, 0, 0);
  table_done(t, &c);
}

/* A table that cannot give every lane a chunk: 3 chunks (4 lanes); lanes
 * 0..2 take one each, lane 3 shares, and the table still fills to exactly
 * its capacity through any lane, with distinct ids; then every lane gets
 * OUT_OF_RANGE. */
TEST(handle_lanes_share_when_the_table_is_small) {
  enum { SLOTS = 768 };
  counting_allocator_t c;
  cubert_handle_table_t *t = table_new(&c, SLOTS, 0x14);
  static cubert_memory_id_t ids[SLOTS];
  static unsigned char seen[SLOTS + 1];
  cubert_memory_id_t extra;
  uint32_t l, i;
  memset(seen, 0, sizeof seen);
  for (l = 0; l < 3; l++) ids[l] = acquire_lane_ok(t, l);
  CHECK(chunk_of(ids[0]) != chunk_of(ids[1]) && chunk_of(ids[1]) != chunk_of(ids[2]) &&
        chunk_of(ids[0]) != chunk_of(ids[2]));
  ids[3] = acquire_lane_ok(t, 3); /* all held, none to grow: shares */
  CHECK(chunk_of(ids[3]) < 3);
  for (i = 4; i < SLOTS; i++) ids[i] = acquire_lane_ok(t, i % 5);
  for (i = 0; i < SLOTS; i++) {
    CHECK(!seen[ids[i].index & 0xFFFFFFu]);
    seen[ids[i].index & 0xFFFFFFu] = 1;
  }
  for (l = 0; l < 5; l++)
    CHECK_STATUS(cubert__memory_id_acquire_lane(t, l, &extra), CUBERT_STATUS_OUT_OF_RANGE);
  CHECK_EQ_I64(c.live_blocks - 2, 3);
  check_consistent(t, SLOTS, 0);
  for (i = 0; i < SLOTS; i++) CHECK_OK(cubert__memory_id_release_handle(t, ids[i]));
  check_consistent(t, 0, 0);
  table_done(t, &c);
}

/* A lane whose chunk growth fails shares a chunk instead (the acquire
 * succeeds, nothing leaks); when that chunk is full too the acquire fails
 * with RESOURCE_EXHAUSTED and changes nothing; once the allocator works
 * again the lane gets a chunk of its own. */
TEST(handle_lanes_growth_failure_shares_a_chunk) {
  enum { SLOTS = 4096 };
  static cubert_memory_id_t ids[256];
  counting_allocator_t c;
  cubert_handle_table_t *t = table_new(&c, SLOTS, 0x15);
  cubert_memory_id_t shared, own, untouched = {0xDEAD, 0xBEEF};
  cubert_memory_location_t loc = {0, 0, 0, 0};
  int i, n = 0;
  ids[n++] = acquire_ok(t); /* lane 0 holds chunk 0 */
  counting_allocator_fail_at(&c, 1, 1);
  shared = acquire_lane_ok(t, 4);
  CHECK_EQ_U64(chunk_of(shared), 0);
  CHECK_EQ_U64(c.failures, 1);
  CHECK_EQ_I64(c.live_blocks - 2, 1);
  while (n < 255) ids[n++] = acquire_ok(t); /* chunk 0 full: 255 + the shared id */
  check_consistent(t, 256, 0);
  CHECK_STATUS(cubert__memory_id_acquire_lane(t, 4, &untouched), CUBERT_STATUS_RESOURCE_EXHAUSTED);
  /* a lane with no chunk yet: its growth fails, and there is no room to share */
  CHECK_STATUS(cubert__memory_id_acquire_owned_lane(t, 9, loc, &untouched),
               CUBERT_STATUS_RESOURCE_EXHAUSTED);
  CHECK_EQ_U64(untouched.index, 0xDEAD);
  CHECK_EQ_U64(untouched.generation, 0xBEEF);
  check_consistent(t, 256, 0);
  counting_allocator_fail_at(&c, 0, 0);
  own = acquire_lane_ok(t, 4);
  CHECK_EQ_U64(chunk_of(own), 1);
  CHECK_EQ_I64(c.live_blocks - 2, 2);
  check_consistent(t, 257, 0);
  for (i = 0; i < n; i++) CHECK_OK(cubert__memory_id_release_handle(t, ids[i]));
  CHECK_OK(cubert__memory_id_release_handle(t, shared));
  CHECK_OK(cubert__memory_id_release_handle(t, own));
  check_consistent(t, 0, 0);
  table_done(t, &c);
}

/* Churn on 8 lanes (a window of 3 live ids each, 20000 rounds): every lane
 * stays in its chunk (its sweep skips the chunks other lanes hold and comes
 * back to its own), so the table keeps 8 chunks; reuse stays late. */
TEST(handle_lanes_churn_keeps_one_chunk_per_lane) {
  enum { LANES_USED = 8, WINDOW = 3, ROUNDS = 20000 };
  counting_allocator_t c;
  cubert_handle_table_t *t = table_new(&c, 1u << 20, 0x16);
  cubert_memory_id_t ring[LANES_USED][WINDOW];
  uint32_t home[LANES_USED];
  int l, k, r;
  for (l = 0; l < LANES_USED; l++) {
    for (k = 0; k < WINDOW; k++) ring[l][k] = acquire_lane_ok(t, (uint32_t)l);
    home[l] = chunk_of(ring[l][0]);
  }
  for (r = 0; r < ROUNDS; r++)
    for (l = 0; l < LANES_USED; l++) {
      cubert_memory_id_t old = ring[l][r % WINDOW];
      CHECK_OK(cubert__memory_id_release_handle(t, old));
      ring[l][r % WINDOW] = acquire_lane_ok(t, (uint32_t)l);
      CHECK(ring[l][r % WINDOW].index != old.index); /* not at once */
      CHECK_EQ_U64(chunk_of(ring[l][r % WINDOW]), home[l]);
    }
  CHECK_EQ_I64(c.live_blocks - 2, LANES_USED);
  check_consistent(t, LANES_USED * WINDOW, 0);
  for (l = 0; l < LANES_USED; l++)
    for (k = 0; k < WINDOW; k++) CHECK_OK(cubert__memory_id_release_handle(t, ring[l][k]));
  check_consistent(t, 0, 0);
  table_done(t, &c);
}

/* The OOM loop over lanes: fail the allocator's 1st, 2nd, ... call (once,
 * then persistently) while 12 lanes (8 of the table's, some aliased) acquire
 * across several chunk growths. Every call is OK or RESOURCE_EXHAUSTED; a
 * failed call changes nothing; nothing leaks. */
TEST(handle_lanes_allocation_failure_loop) { handle_oom_loop(12); }
