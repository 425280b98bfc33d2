/* SPDX-License-Identifier: MIT */
/* The handle table under bad input (core/memory/handle.c): null, forged,
 * foreign, stale and double-released ids, saturation, a full table,
 * allocation failures. */
#include "test_handle_fixture.h"
#include "memory/handle_table.h"

/* ---- bad inputs ------------------------------------------------------------------- */

/* Row 1: the null id. */
TEST(handle_null_id_rejected) {
  counting_allocator_t c;
  cubert_handle_table_t *t = table_new(&c, 16, 0);
  cubert_memory_id_t null_id = {0, 0}, odd = {0, 1}, live = acquire_ok(t);
  check_rejected(t, null_id);
  check_rejected(t, odd);
  check_counts(t, live, 1, 1);
  CHECK_OK(cubert__memory_id_release_handle(t, live));
  table_done(t, &c);
}

static uint64_t rng_next(uint64_t *s) {
  uint64_t x = *s;
  x ^= x << 13;
  x ^= x >> 7;
  x ^= x << 17;
  *s = x;
  return x;
}

/* Row 3: forged ids (random bits, an index beyond max_slots, an index in a
 * chunk never grown, wrong generations) never touch the table. */
TEST(handle_forged_ids_rejected) {
  counting_allocator_t c;
  cubert_handle_table_t *t = table_new(&c, 1000, 9);
  cubert_memory_id_t live[3], f;
  uint64_t seed = 0x9E3779B97F4A7C15ull;
  int i, k;
  for (i = 0; i < 3; i++) live[i] = acquire_ok(t);
  for (i = 0; i < 20000; i++) {
    uint64_t r = rng_next(&seed);
    f.index = (uint32_t)r;
    f.generation = (uint32_t)(r >> 32);
    if (i & 1) f.index = (f.index & 0xFFFFFFu) | (9u << 24); /* right tag */
    if (i % 4 == 1) f.generation &= 7u;                     /* small generations */
    for (k = 0; k < 3; k++)
      if (id_eq(f, live[k])) break;
    if (k < 3) continue;
    check_rejected(t, f);
  }
  f.index = (9u << 24) | 1001u; /* beyond max_slots */
  f.generation = 1;
  check_rejected(t, f);
  f.index = (9u << 24) | 0xFFFFFFu;
  check_rejected(t, f);
  f.index = (9u << 24) | 700u; /* chunk 2, never grown */
  check_rejected(t, f);
  for (k = 0; k < 3; k++) {
    f = live[k];
    f.generation += 1u; /* even */
    check_rejected(t, f);
    f.generation += 1u; /* a future generation */
    check_rejected(t, f);
    f.generation = live[k].generation - 1u; /* 0 */
    check_rejected(t, f);
    check_counts(t, live[k], 1, 1);
    CHECK_OK(cubert__memory_id_release_handle(t, live[k]));
  }
  check_consistent(t, 0, 0);
  table_done(t, &c);
}

/* Row 9: an id of another table (another tag) is rejected. */
TEST(handle_foreign_table_id_rejected) {
  counting_allocator_t c1, c2;
  cubert_handle_table_t *t1 = table_new(&c1, 16, 1), *t2 = table_new(&c2, 16, 2);
  cubert_memory_id_t a = acquire_ok(t1), b = acquire_ok(t2);
  CHECK_EQ_U64(a.index & 0xFFFFFFu, b.index & 0xFFFFFFu); /* same slot, other tag */
  CHECK_EQ_U64(a.generation, b.generation);
  check_rejected(t2, a);
  check_rejected(t1, b);
  check_counts(t1, a, 1, 1);
  check_counts(t2, b, 1, 1);
  CHECK_OK(cubert__memory_id_release_handle(t1, a));
  CHECK_OK(cubert__memory_id_release_handle(t2, b));
  table_done(t1, &c1);
  table_done(t2, &c2);
}

/* Row 4: a stale id whose slot was recycled by a new occupant is rejected and
 * never touches the new occupant (counts, ownership, location). */
TEST(handle_stale_id_never_touches_new_occupant) {
  counting_allocator_t c;
  cubert_handle_table_t *t = table_new(&c, 1, 7); /* one slot: reuse is certain */
  cubert_memory_id_t x = acquire_ok(t), y;
  cubert_memory_location_t loc = {5, 1, 6, 8}, got;
  CHECK_OK(cubert__memory_id_retain_binding(t, x));
  CHECK_OK(cubert__memory_id_release_binding(t, x));
  CHECK_OK(cubert__memory_id_release_handle(t, x));
  y = acquire_ok(t);
  CHECK_EQ_U64(y.index, x.index);
  CHECK(y.generation != x.generation);
  CHECK_OK(cubert__memory_id_set_location(t, y, loc));
  CHECK_OK(cubert__memory_id_retain_binding(t, y));
  check_rejected(t, x);
  check_counts(t, y, 1, 2);
  CHECK_OK(cubert__memory_id_location(t, y, &got));
  CHECK_EQ_U64(got.slice, 8);
  CHECK_EQ_U64(got.page, 6);
  /* the new occupant owned: a stale drop must not clear it */
  CHECK_OK(cubert__memory_id_set_owned(t, y, true));
  CHECK_STATUS(cubert__memory_id_set_owned(t, x, false), CUBERT_STATUS_INVALID_HANDLE);
  CHECK_STATUS(cubert__memory_id_set_owned(t, y, true), CUBERT_STATUS_INVALID_HANDLE); /* still owned */
  CHECK_OK(cubert__memory_id_release_handle(t, y));
  CHECK_OK(cubert__memory_id_release_binding(t, y));
  check_consistent(t, 0, 1);
  check_rejected(t, x);
  CHECK_OK(cubert__memory_id_set_owned(t, y, false));
  check_consistent(t, 0, 0);
  table_done(t, &c);
}

/* Row 5: a double release is INVALID_HANDLE, counts never go negative and
 * the slot is freed once. */
TEST(handle_double_release) {
  counting_allocator_t c;
  cubert_handle_table_t *t = table_new(&c, 16, 0);
  cubert_memory_id_t id = acquire_ok(t), other;
  CHECK_OK(cubert__memory_id_release_handle(t, id));
  CHECK_STATUS(cubert__memory_id_release_handle(t, id), CUBERT_STATUS_INVALID_HANDLE);
  CHECK_STATUS(cubert__memory_id_release_binding(t, id), CUBERT_STATUS_INVALID_HANDLE);
  check_consistent(t, 0, 0);
  /* a handle released twice while a binding keeps the id alive */
  id = acquire_ok(t);
  CHECK_OK(cubert__memory_id_retain_binding(t, id));
  CHECK_OK(cubert__memory_id_release_handle(t, id));
  CHECK_STATUS(cubert__memory_id_release_handle(t, id), CUBERT_STATUS_INVALID_HANDLE);
  check_counts(t, id, 0, 1);
  CHECK(cubert__memory_id_is_alive(t, id));
  CHECK_OK(cubert__memory_id_release_binding(t, id));
  CHECK_STATUS(cubert__memory_id_release_binding(t, id), CUBERT_STATUS_INVALID_HANDLE);
  check_consistent(t, 0, 0);
  /* a binding release without a binding cannot eat a handle's reference */
  id = acquire_ok(t);
  CHECK_OK(cubert__memory_id_retain_handle(t, id));
  CHECK_STATUS(cubert__memory_id_release_binding(t, id), CUBERT_STATUS_INVALID_HANDLE);
  check_counts(t, id, 2, 2);
  CHECK_OK(cubert__memory_id_release_handle(t, id));
  CHECK_OK(cubert__memory_id_release_handle(t, id));
  CHECK_STATUS(cubert__memory_id_release_handle(t, id), CUBERT_STATUS_INVALID_HANDLE);
  /* the slot was returned exactly once: the table can still fill up exactly */
  check_consistent(t, 0, 0);
  {
    cubert_memory_id_t all[16];
    int i;
    for (i = 0; i < 16; i++) all[i] = acquire_ok(t);
    CHECK_STATUS(cubert__memory_id_acquire(t, &other), CUBERT_STATUS_OUT_OF_RANGE);
    for (i = 0; i < 16; i++) CHECK_OK(cubert__memory_id_release_handle(t, all[i]));
  }
  check_consistent(t, 0, 0);
  table_done(t, &c);
}

/* Row 7: retain on an id whose count hit 0 is refused (no resurrection). */
TEST(handle_retain_dead_id_no_resurrection) {
  counting_allocator_t c;
  cubert_handle_table_t *t = table_new(&c, 16, 0);
  cubert_memory_id_t id = acquire_ok(t);
  CHECK_OK(cubert__memory_id_set_owned(t, id, true)); /* keep the slot occupied */
  CHECK_OK(cubert__memory_id_release_handle(t, id));
  CHECK_STATUS(cubert__memory_id_retain_handle(t, id), CUBERT_STATUS_INVALID_HANDLE);
  CHECK_STATUS(cubert__memory_id_retain_binding(t, id), CUBERT_STATUS_INVALID_HANDLE);
  CHECK(!cubert__memory_id_is_alive(t, id));
  check_consistent(t, 0, 1);
  CHECK_OK(cubert__memory_id_set_owned(t, id, false));
  CHECK_STATUS(cubert__memory_id_retain_handle(t, id), CUBERT_STATUS_INVALID_HANDLE);
  check_consistent(t, 0, 0);
  table_done(t, &c);
}

/* Row 8: counts saturate at CUBERT_HANDLE_MAX_COUNT: OVERFLOW, unchanged. */
TEST(handle_count_saturation) {
  counting_allocator_t c;
  cubert_handle_table_t *t = table_new(&c, 16, 0);
  cubert_handle_t h, out, before;
  cubert_binding_t b;
  const uint32_t max = CUBERT_HANDLE_MAX_COUNT;
  CHECK_OK(cubert__handle_create(t, 0, 0, 0, 100, &h));
  CHECK_OK(cubert__memory_id_set_owned(t, h.memory, true));
  CHECK_OK(cubert__handle_table_debug_set_counts(t, h.memory, max - 1u, 0));
  CHECK_OK(cubert__memory_id_retain_handle(t, h.memory));
  check_counts(t, h.memory, max, max);
  CHECK_STATUS(cubert__memory_id_retain_handle(t, h.memory), CUBERT_STATUS_OVERFLOW);
  CHECK_STATUS(cubert__memory_id_retain_binding(t, h.memory), CUBERT_STATUS_OVERFLOW);
  memset(&out, 0xAB, sizeof out);
  before = out;
  CHECK_STATUS(cubert__handle_clone(t, &h, &out), CUBERT_STATUS_OVERFLOW);
  CHECK_STATUS(cubert__handle_offset(t, &h, 1, 1, &out), CUBERT_STATUS_OVERFLOW);
  CHECK_STATUS(cubert__handle_binding(t, &h, &out), CUBERT_STATUS_OVERFLOW);
  CHECK(memcmp(&out, &before, sizeof out) == 0);
  check_counts(t, h.memory, max, max);
  CHECK_OK(cubert__memory_id_release_handle(t, h.memory));
  check_counts(t, h.memory, max - 1u, max - 1u);
  /* saturation through bindings: the descriptor count is the bound */
  CHECK_OK(cubert__handle_table_debug_set_counts(t, h.memory, 1, max - 1u));
  CHECK_STATUS(cubert__handle_binding(t, &h, &b), CUBERT_STATUS_OVERFLOW);
  CHECK_STATUS(cubert__handle_clone(t, &h, &out), CUBERT_STATUS_OVERFLOW);
  check_counts(t, h.memory, 1, max);
  CHECK_OK(cubert__memory_id_release_binding(t, h.memory));
  CHECK_OK(cubert__handle_binding(t, &h, &b));
  check_consistent(t, 1, 0); /* owned flag kept by the hook */
  CHECK_OK(cubert__handle_table_debug_set_counts(t, h.memory, 1, 0));
  CHECK_OK(cubert__handle_release(t, &h));
  check_consistent(t, 0, 1);
  CHECK_OK(cubert__memory_id_set_owned(t, h.memory, false));
  check_consistent(t, 0, 0);
  table_done(t, &c);
}

TEST(handle_debug_hook_rejects_bad_input) {
  counting_allocator_t c;
  cubert_handle_table_t *t = table_new(&c, 16, 0);
  cubert_memory_id_t id = acquire_ok(t), dead = acquire_ok(t);
  CHECK_OK(cubert__memory_id_release_handle(t, dead));
  CHECK_STATUS(cubert__handle_table_debug_set_counts(NULL, id, 1, 0), CUBERT_STATUS_INVALID_ARGUMENT);
  CHECK_STATUS(cubert__handle_table_debug_set_counts(t, id, 0, 0), CUBERT_STATUS_INVALID_ARGUMENT);
  CHECK_STATUS(cubert__handle_table_debug_set_counts(t, id, CUBERT_HANDLE_MAX_COUNT, 1),
               CUBERT_STATUS_INVALID_ARGUMENT);
  CHECK_STATUS(cubert__handle_table_debug_set_counts(t, id, 0xFFFFFFFFu, 0),
               CUBERT_STATUS_INVALID_ARGUMENT);
  CHECK_STATUS(cubert__handle_table_debug_set_counts(t, dead, 1, 0), CUBERT_STATUS_INVALID_HANDLE);
  check_counts(t, id, 1, 1);
  CHECK_OK(cubert__memory_id_release_handle(t, id));
  check_consistent(t, 0, 0);
  table_done(t, &c);
}

/* Table full: OUT_OF_RANGE, out untouched; a dead but owned slot still
 * counts as in use; a freed slot is usable again. */
TEST(handle_table_full_out_of_range) {
  counting_allocator_t c;
  cubert_handle_table_t *t = table_new(&c, 3, 0);
  cubert_memory_id_t ids[3], extra = {77, 77};
  int i;
  for (i = 0; i < 3; i++) ids[i] = acquire_ok(t);
  CHECK_STATUS(cubert__memory_id_acquire(t, &extra), CUBERT_STATUS_OUT_OF_RANGE);
  CHECK_EQ_U64(extra.index, 77);
  CHECK_OK(cubert__memory_id_set_owned(t, ids[1], true));
  CHECK_OK(cubert__memory_id_release_handle(t, ids[1]));
  CHECK_STATUS(cubert__memory_id_acquire(t, &extra), CUBERT_STATUS_OUT_OF_RANGE);
  check_consistent(t, 2, 1);
  CHECK_OK(cubert__memory_id_set_owned(t, ids[1], false));
  extra = acquire_ok(t);
  CHECK_EQ_U64(extra.index, ids[1].index);
  CHECK_OK(cubert__memory_id_release_handle(t, extra));
  CHECK_OK(cubert__memory_id_release_handle(t, ids[0]));
  CHECK_OK(cubert__memory_id_release_handle(t, ids[2]));
  check_consistent(t, 0, 0);
  table_done(t, &c);
}

/* A table whose size is not a multiple of the chunk: exactly max_slots ids,
 * all distinct. */
TEST(handle_table_fills_exactly_and_ids_distinct) {
  counting_allocator_t c;
  const uint32_t max = 1300;
  cubert_handle_table_t *t = table_new(&c, max, 0x11);
  cubert_memory_id_t *ids = (cubert_memory_id_t *)calloc(max, sizeof *ids), extra;
  unsigned char *seen = (unsigned char *)calloc(max + 1u, 1);
  uint32_t i;
  CHECK(ids && seen);
  for (i = 0; i < max; i++) {
    uint32_t low;
    ids[i] = acquire_ok(t);
    low = ids[i].index & 0xFFFFFFu;
    CHECK(low >= 1 && low <= max);
    CHECK(!seen[low]);
    seen[low] = 1;
  }
  CHECK_STATUS(cubert__memory_id_acquire(t, &extra), CUBERT_STATUS_OUT_OF_RANGE);
  check_consistent(t, max, 0);
  for (i = 0; i < max; i += 2) CHECK_OK(cubert__memory_id_release_handle(t, ids[i]));
  check_consistent(t, max / 2u, 0);
  for (i = 0; i < max; i += 2) {
    ids[i] = acquire_ok(t);
    CHECK(cubert__memory_id_is_alive(t, ids[i]));
  }
  CHECK_STATUS(cubert__memory_id_acquire(t, &extra), CUBERT_STATUS_OUT_OF_RANGE);
  for (i = 0; i < max; i++) CHECK_OK(cubert__memory_id_release_handle(t, ids[i]));
  check_consistent(t, 0, 0);
  free(ids);
  free(seen);
  table_done(t, &c);
}

/* Released slots are reused late (next-fit), so a stale id meets a reused
 * slot as rarely as possible: 200 acquire/release rounds in a 256-slot table
 * give 200 distinct slots. */
TEST(handle_released_slots_reused_late) {
  counting_allocator_t c;
  cubert_handle_table_t *t = table_new(&c, 256, 0);
  unsigned char seen[257];
  int i;
  memset(seen, 0, sizeof seen);
  for (i = 0; i < 200; i++) {
    cubert_memory_id_t id = acquire_ok(t);
    CHECK(!seen[id.index & 0xFFFFFFu]);
    seen[id.index & 0xFFFFFFu] = 1;
    CHECK_OK(cubert__memory_id_release_handle(t, id));
  }
  check_consistent(t, 0, 0);
  table_done(t, &c);
}

/* Growth without a live counter: a sliding window of 1000 ids in a table of
 * up to 8192 slots. The table grows when full and, once per sweep of the
 * cursor, until less than 7/8 of it is live; it must neither run out nor
 * keep growing, live() must stay exact, and a released slot is not reused
 * by the next acquires (next-fit). */
TEST(handle_table_growth_bounded_under_sliding_window) {
  enum { WINDOW = 1000, OPS = 40000 };
  static cubert_memory_id_t ring[WINDOW];
  counting_allocator_t c;
  cubert_handle_table_t *t = table_new(&c, 8192, 0x21);
  int64_t chunks;
  int i, head = 0;
  for (i = 0; i < WINDOW; i++) ring[i] = acquire_ok(t);
  CHECK_EQ_U64(cubert__handle_table_live(t), WINDOW);
  for (i = 0; i < OPS; i++) {
    cubert_memory_id_t old = ring[head];
    CHECK_OK(cubert__memory_id_release_handle(t, old));
    ring[head] = acquire_ok(t);
    CHECK(ring[head].index != old.index); /* reused late, not at once */
    head = (head + 1) % WINDOW;
    if (i % 5000 == 0) check_consistent(t, WINDOW, 0);
  }
  check_consistent(t, WINDOW, 0);
  chunks = c.live_blocks - 2; /* the table header and its chunk pointer array */
  CHECK(chunks * 256 >= WINDOW + WINDOW / 7); /* grew past 7/8 live */
  CHECK(chunks <= 6);                          /* and stopped there */
  for (i = 0; i < WINDOW; i++) CHECK_OK(cubert__memory_id_release_handle(t, ring[i]));
  check_consistent(t, 0, 0);
  table_done(t, &c);
}

/* Row 39-style OOM loop: fail the allocator's 1st, 2nd, ... call (once, then
 * persistently) while creating a table and acquiring ids across several
 * chunk growths. Every call is OK or RESOURCE_EXHAUSTED; a failed call
 * changes nothing; nothing leaks. */
TEST(handle_allocation_failure_loop) { handle_oom_loop(0); }
