/* SPDX-License-Identifier: MIT */
/*
 * tests/unit/test_handle_fixture.h: what the handle table tests share
 * (test_handle.c, test_handle_bad_input.c, test_handle_api.c): a table over a
 * counting allocator and checks of counts and of the table's invariants.
 */
#ifndef CUBERT_TEST_HANDLE_FIXTURE_H
#define CUBERT_TEST_HANDLE_FIXTURE_H

#include "test.h"
#include "counting_allocator.h"
#include "cubert/handle.h"
#include "memory/handle_table.h"
#include "memory/handle_internal.h"

static inline cubert_handle_table_t *table_new(counting_allocator_t *c, uint32_t max_slots, uint8_t tag) {
  cubert_handle_table_t *t = NULL;
  CHECK_OK(cubert__handle_table_create(counting_allocator_initialize(c), max_slots, tag, &t));
  CHECK(t != NULL);
  return t;
}

static inline void table_done(cubert_handle_table_t *t, counting_allocator_t *c) {
  cubert__handle_table_destroy(t);
  CHECK_EQ_I64(c->live_blocks, 0);
  CHECK_EQ_U64(c->bad_frees, 0);
  counting_allocator_destroy(c);
}

static inline cubert_memory_id_t acquire_ok(cubert_handle_table_t *t) {
  cubert_memory_id_t id = {0, 0};
  CHECK_OK(cubert__memory_id_acquire(t, &id));
  return id;
}

static inline void check_consistent(const cubert_handle_table_t *t, uint32_t alive, uint32_t dead_owned) {
  uint32_t a = 0xFFFFFFFFu, d = 0xFFFFFFFFu;
  CHECK_OK(cubert__handle_table_debug_check(t, &a, &d));
  CHECK_EQ_U64(a, alive);
  CHECK_EQ_U64(d, dead_owned);
  CHECK_EQ_U64(cubert__handle_table_live(t), alive + dead_owned);
}

static inline void check_counts(const cubert_handle_table_t *t, cubert_memory_id_t id, uint32_t handles,
                         uint32_t descriptors) {
  CHECK_EQ_U64(cubert__memory_id_handle_count(t, id), handles);
  CHECK_EQ_U64(cubert__memory_id_descriptor_count(t, id), descriptors);
}

/* Every id-level call on a dead/forged id: INVALID_HANDLE, queries say dead. */
static inline void check_rejected(cubert_handle_table_t *t, cubert_memory_id_t id) {
  cubert_memory_location_t loc = {9, 9, 9, 9};
  cubert_memory_location_t set = {1, 1, 1, 1};
  CHECK_STATUS(cubert__memory_id_retain_handle(t, id), CUBERT_STATUS_INVALID_HANDLE);
  CHECK_STATUS(cubert__memory_id_release_handle(t, id), CUBERT_STATUS_INVALID_HANDLE);
  CHECK_STATUS(cubert__memory_id_retain_binding(t, id), CUBERT_STATUS_INVALID_HANDLE);
  CHECK_STATUS(cubert__memory_id_release_binding(t, id), CUBERT_STATUS_INVALID_HANDLE);
  CHECK_STATUS(cubert__memory_id_set_owned(t, id, true), CUBERT_STATUS_INVALID_HANDLE);
  CHECK_STATUS(cubert__memory_id_set_owned(t, id, false), CUBERT_STATUS_INVALID_HANDLE);
  CHECK_STATUS(cubert__memory_id_location(t, id, &loc), CUBERT_STATUS_INVALID_HANDLE);
  CHECK_EQ_U64(loc.pool, 9); /* out untouched */
  CHECK_STATUS(cubert__memory_id_set_location(t, id, set), CUBERT_STATUS_INVALID_HANDLE);
  CHECK_STATUS(cubert__memory_id_set_location_owned(t, id, set), CUBERT_STATUS_INVALID_HANDLE);
  CHECK_STATUS(cubert__memory_id_disown(t, id), CUBERT_STATUS_INVALID_HANDLE);
  CHECK(!cubert__memory_id_is_alive(t, id));
  CHECK(cubert__memory_id_is_free(t, id));
  CHECK(!cubert__memory_id_can_mut(t, id));
  check_counts(t, id, 0, 0);
}

static inline bool id_eq(cubert_memory_id_t a, cubert_memory_id_t b) {
  return a.index == b.index && a.generation == b.generation;
}

/* The OOM loop (reliability row 39): fail the allocator's 1st, 2nd, ...
 * call (once, then persistently) while creating a table and acquiring ids
 * across several chunk growths; `lanes` 0: cubert__memory_id_acquire, else
 * lanes 0..lanes-1 in turn (aliased past the table's). Every call is OK or
 * RESOURCE_EXHAUSTED; a failed call changes nothing; nothing leaks. */
static inline cubert_status_t handle_oom_acquire(cubert_handle_table_t *t, uint32_t lanes, int i,
                                                 cubert_memory_id_t *out_id) {
  return lanes ? cubert__memory_id_acquire_lane(t, (uint32_t)i % lanes, out_id)
               : cubert__memory_id_acquire(t, out_id);
}

static inline void handle_oom_loop(uint32_t lanes) {
  enum { MAX_SLOTS = 2000, WANT = 1500 };
  static cubert_memory_id_t ids[WANT];
  int persist;
  for (persist = 0; persist <= 1; persist++) {
    uint64_t k;
    int done = 0;
    for (k = 1; !done; k++) {
      counting_allocator_t c;
      cubert_allocator_t a = counting_allocator_initialize(&c);
      cubert_handle_table_t *t = NULL;
      cubert_status_t st;
      int n = 0, i, failures = 0;
      CHECK(k < 1000);
      counting_allocator_fail_at(&c, k, persist);
      st = cubert__handle_table_create(a, MAX_SLOTS, 3, &t);
      if (st != CUBERT_STATUS_OK) {
        CHECK_STATUS(st, CUBERT_STATUS_RESOURCE_EXHAUSTED);
        CHECK(t == NULL);
        CHECK_EQ_I64(c.live_blocks, 0);
        counting_allocator_destroy(&c);
        continue;
      }
      for (i = 0; i < WANT; i++) {
        uint32_t live_before = cubert__handle_table_live(t);
        cubert_memory_id_t id = {0xDEAD, 0xBEEF};
        st = handle_oom_acquire(t, lanes, i, &id);
        if (st == CUBERT_STATUS_OK) {
          ids[n++] = id;
          continue;
        }
        CHECK_STATUS(st, CUBERT_STATUS_RESOURCE_EXHAUSTED);
        failures++;
        CHECK_EQ_U64(id.index, 0xDEAD);
        CHECK_EQ_U64(id.generation, 0xBEEF);
        CHECK_EQ_U64(cubert__handle_table_live(t), live_before);
        check_consistent(t, (uint32_t)n, 0);
        if (!persist) { /* the next valid call succeeds */
          CHECK_OK(handle_oom_acquire(t, lanes, i, &ids[n]));
          n++;
        }
      }
      CHECK(persist || n == WANT);
      check_consistent(t, (uint32_t)n, 0);
      for (i = 0; i < n; i++) {
        check_counts(t, ids[i], 1, 1);
        CHECK_OK(cubert__memory_id_release_handle(t, ids[i]));
      }
      check_consistent(t, 0, 0);
      cubert__handle_table_destroy(t);
      CHECK_EQ_I64(c.live_blocks, 0);
      CHECK_EQ_U64(c.bad_frees, 0);
      if (c.failures == 0) done = 1;
      if (persist && failures > 0) CHECK(n < WANT); /* growth stopped for good */
      counting_allocator_destroy(&c);
    }
    CHECK(k > 5); /* create (2 blocks) and several chunk growths were failed */
  }
}

#endif /* CUBERT_TEST_HANDLE_FIXTURE_H */
