/* SPDX-License-Identifier: MIT */
/*
 * CubeCL's memory_pool tests and pool vectors (docs/cubecl-mapping.md,
 * "Memory pools"): page
 * carving and coalescing, the persistent pool, the exclusive pool's moving
 * average and free-count ageing, and a randomized consistency check of the
 * sliced pool (no two live slices overlap, every live id resolves).
 */
#include "test_memory_fixture.h"
#include "memory/handle_table.h"
#include "memory/memory.h"

#if CUBERT_CONFIG_PAGED_POOLS && CUBERT_CONFIG_PERSISTENT_MEMORY /* for the persistent-pool tests below */
/* An id owned by the pool, as the manager makes them for reserve(). */
static cubert_memory_id_t owner_new(mm_fixture_t *f) {
  cubert_memory_id_t id = mmf_new_id(f);
  CHECK_OK(cubert__memory_id_set_owned(f->table, id, true));
  return id;
}

/* An owner id the pool did not take (a try_reserve that found nothing). */
static void owner_discard(mm_fixture_t *f, cubert_memory_id_t id) {
  CHECK_OK(cubert__memory_id_set_owned(f->table, id, false));
  mmf_drop(f, id);
}
#endif /* CUBERT_CONFIG_PAGED_POOLS && CUBERT_CONFIG_PERSISTENT_MEMORY */

/* ---- handle::*: locations through the handle table ------------------------------ */

TEST(memory_pool_handle_test_memory_id_mutability) {
  mm_fixture_t f;
  cubert_memory_id_t a, b;
  cubert_memory_location_t loc;
  mmf_base(&f, 128 * MIB, 32);
  a = mmf_new_id(&f);
  b = mmf_new_id(&f);
  CHECK_OK(cubert__memory_id_location(f.table, a, &loc));
  loc.slice = 4;
  loc.init = 1;
  CHECK_OK(cubert__memory_id_set_location(f.table, a, loc));
  CHECK_OK(cubert__memory_id_location(f.table, a, &loc));
  CHECK_EQ_U64(loc.slice, 4);
  CHECK_OK(cubert__memory_id_set_location(f.table, b, loc)); /* copy to another descriptor */
  memset(&loc, 0, sizeof loc);
  CHECK_OK(cubert__memory_id_location(f.table, b, &loc));
  CHECK_EQ_U64(loc.slice, 4);
  mmf_drop(&f, a);
  mmf_drop(&f, b);
  cubert__handle_table_destroy(f.table);
  CHECK_EQ_I64(f.counting.live_blocks, 0);
  CHECK_EQ_U64(host_storage_destroy(&f.storage), 0);
  counting_allocator_destroy(&f.counting);
}

TEST(memory_pool_handle_test_location_visible_through_shared_arc) {
  mm_fixture_t f;
  cubert_memory_id_t a;
  cubert_memory_location_t loc;
  mmf_base(&f, 128 * MIB, 32);
  a = mmf_new_id(&f);
  CHECK_OK(cubert__memory_id_retain_handle(f.table, a)); /* a clone */
  loc.pool = 1;
  loc.page = 2;
  loc.slice = 3;
  loc.init = 1;
  CHECK_OK(cubert__memory_id_set_location(f.table, a, loc));
  memset(&loc, 0, sizeof loc);
  CHECK_OK(cubert__memory_id_location(f.table, a, &loc)); /* through the clone: same id */
  CHECK_EQ_U64(loc.pool, 1);
  CHECK_EQ_U64(loc.page, 2);
  CHECK_EQ_U64(loc.slice, 3);
  CHECK_EQ_U64(loc.init, 1);
  loc.slice = 42;
  CHECK_OK(cubert__memory_id_set_location(f.table, a, loc));
  CHECK_OK(cubert__memory_id_location(f.table, a, &loc));
  CHECK_EQ_U64(loc.slice, 42);
  mmf_drop(&f, a);
  mmf_drop(&f, a);
  cubert__handle_table_destroy(f.table);
  CHECK_EQ_I64(f.counting.live_blocks, 0);
  CHECK_EQ_U64(host_storage_destroy(&f.storage), 0);
  counting_allocator_destroy(&f.counting);
}

/* ---- memory_page::*: one 32 MiB page, alignment 4 -------------------------------- */

static cubert_sliced_pool_t *one_page_pool(mm_fixture_t *f) {
  static cubert_memory_pool_options_t pools[1];
  cubert_sliced_pool_t *pool;
  pools[0] = cubert_memory_pool_sliced(32 * MIB, CUBERT_MEMORY_NONE, 32 * MIB);
  mmf_init(f, 128 * MIB, 4, mmf_custom(pools, 1));
  pool = &cubert__memory_manager_pool(f->mm, 0)->u.sliced;
  pool->merge = false; /* the page-level API: merging only by coalesce() */
  return pool;
}

typedef struct block_t {
  uint64_t size_mib;
  bool is_free;
} block_t;

#if CUBERT_CONFIG_PAGED_POOLS /* calls internals that are not built without it */
static void check_blocks(cubert_sliced_pool_t *pool, const block_t *want, uint32_t n) {
  cubert_sliced_block_t got[16];
  uint32_t count = cubert__sliced_pool_page_blocks(pool, 0, got, 16), i;
  uint64_t offset = 0;
  CHECK_EQ_U64(count, n);
  for (i = 0; i < n; i++) {
    CHECK_EQ_U64(got[i].offset, offset);
    CHECK_MSG(got[i].size == want[i].size_mib * MIB, "block %u: %llu bytes, want %llu MiB", (unsigned)i,
              (unsigned long long)got[i].size, (unsigned long long)want[i].size_mib);
    CHECK_MSG(got[i].is_free == want[i].is_free, "block %u: free %d", (unsigned)i, (int)got[i].is_free);
    offset += got[i].size;
  }
}

TEST(memory_pool_page_test_memory_page) {
  TEST_REQUIRE_FEATURE(CUBERT_FEATURE_PAGED_POOLS);
  mm_fixture_t f;
  cubert_sliced_pool_t *pool = one_page_pool(&f);
  cubert_memory_id_t h = mmf_reserve(&f, 16 * MIB);
  cubert_storage_handle_t s;
  static const block_t before[2] = {{16, true}, {16, true}};
  static const block_t after[1] = {{32, true}};
  CHECK(!cubert__memory_id_is_free(f.table, h));
  CHECK(cubert__memory_id_can_mut(f.table, h));
  s = mmf_storage(&f, h);
  CHECK_EQ_U64(s.offset, 0);
  CHECK_EQ_U64(s.size, 16 * MIB);
  mmf_drop(&f, h); /* the lookup consumed the handle: the slice is free again */
  check_blocks(pool, before, 2); /* free 32 MiB in 2 slices, full 0, total 32 MiB */
  cubert__sliced_pool_coalesce(pool);
  check_blocks(pool, after, 1);
  CHECK_EQ_U64(mmf_usage(&f).bytes_reserved, 32 * MIB);
  mmf_done(&f);
}

TEST(memory_pool_page_test_memory_job) {
  TEST_REQUIRE_FEATURE(CUBERT_FEATURE_PAGED_POOLS);
  mm_fixture_t f;
  cubert_sliced_pool_t *pool = one_page_pool(&f);
  cubert_memory_id_t h = mmf_reserve(&f, 16 * MIB);
  static const block_t before[2] = {{16, true}, {16, true}};
  static const block_t after[1] = {{32, true}};
  mmf_drop(&f, h);
  /* one merge task: start 0, count 2, size 32 MiB */
  check_blocks(pool, before, 2);
  cubert__sliced_pool_coalesce(pool);
  check_blocks(pool, after, 1);
  mmf_done(&f);
}

TEST(memory_pool_page_test_scenario) {
  TEST_REQUIRE_FEATURE(CUBERT_FEATURE_PAGED_POOLS);
  mm_fixture_t f;
  cubert_sliced_pool_t *pool = one_page_pool(&f);
  cubert_memory_id_t s1, s2, s3, s4, s5, s6, x;
  static const block_t b1[5] = {{4, false}, {15, false}, {8, false}, {4, false}, {1, true}};
  static const block_t b2[5] = {{4, false}, {9, false}, {14, true}, {4, false}, {1, true}};
  static const block_t b3[4] = {{4, true}, {9, false}, {9, false}, {10, true}};
  s1 = mmf_reserve(&f, 4 * MIB);
  s2 = mmf_reserve(&f, 15 * MIB);
  s3 = mmf_reserve(&f, 8 * MIB);
  s4 = mmf_reserve(&f, 4 * MIB);
  check_blocks(pool, b1, 5);
  CHECK(cubert__memory_manager_reserve(f.mm, 8 * MIB, &x, NULL) != CUBERT_STATUS_OK);
  mmf_drop(&f, s2);
  s5 = mmf_reserve(&f, 9 * MIB); /* splits 15 -> 9 + 6 free */
  CHECK_EQ_U64(mmf_storage(&f, s5).offset, 4 * MIB);
  CHECK(cubert__memory_manager_reserve(f.mm, 9 * MIB, &x, NULL) != CUBERT_STATUS_OK);
  mmf_drop(&f, s3);
  /* the page does not coalesce by itself: 6 + 8 free, 9 does not fit */
  CHECK(cubert__memory_manager_reserve(f.mm, 9 * MIB, &x, NULL) != CUBERT_STATUS_OK);
  cubert__sliced_pool_coalesce(pool);
  check_blocks(pool, b2, 5);
  CHECK_EQ_U64(mmf_storage(&f, s4).offset, 27 * MIB);
  s6 = mmf_reserve(&f, 9 * MIB);
  mmf_drop(&f, s1);
  mmf_drop(&f, s4);
  cubert__sliced_pool_coalesce(pool);
  check_blocks(pool, b3, 4);
  CHECK_EQ_U64(mmf_storage(&f, s6).offset, 13 * MIB);
  mmf_drop(&f, s5);
  mmf_drop(&f, s6);
  mmf_done(&f);
}
#endif /* CUBERT_CONFIG_PAGED_POOLS */

TEST(memory_pool_sliced_merges_when_enabled) {
  TEST_REQUIRE_FEATURE(CUBERT_FEATURE_PAGED_POOLS);
  /* the pool (not the page API) coalesces before searching: after freeing the
   * 8 MiB slice the 9 MiB request fits in 6 + 8 */
  mm_fixture_t f;
  cubert_sliced_pool_t *pool = one_page_pool(&f);
  cubert_memory_id_t s[4], s5, s6;
  pool->merge = true;
  s[0] = mmf_reserve(&f, 4 * MIB);
  s[1] = mmf_reserve(&f, 15 * MIB);
  s[2] = mmf_reserve(&f, 8 * MIB);
  s[3] = mmf_reserve(&f, 4 * MIB);
  mmf_drop(&f, s[1]);
  s5 = mmf_reserve(&f, 9 * MIB);
  mmf_drop(&f, s[2]);
  s6 = mmf_reserve(&f, 9 * MIB);
  CHECK_EQ_U64(mmf_storage(&f, s6).offset, 13 * MIB);
  CHECK_EQ_U64(mmf_pool_report(&f, 0).largest_free, 5 * MIB);
  mmf_drop(&f, s[0]);
  mmf_drop(&f, s[3]);
  mmf_drop(&f, s5);
  mmf_drop(&f, s6);
  mmf_done(&f);
}

/* ---- persistent_pool::* ------------------------------------------------------------ */

#if CUBERT_CONFIG_PAGED_POOLS && CUBERT_CONFIG_PERSISTENT_MEMORY /* calls internals that are not built without it */
TEST(memory_pool_persistent_pool_try_reserve_reuses_slice_with_padding) {
  TEST_REQUIRE_FEATURE(CUBERT_FEATURE_PAGED_POOLS | CUBERT_FEATURE_PERSISTENT_MEMORY);
  mm_fixture_t f;
  cubert_persistent_pool_t *pool;
  cubert_memory_id_t a, b;
  bool found = true;
  mmf_init(&f, MIB, 4, mmf_kind(CUBERT_MEMORY_CONFIGURATION_SUB_SLICES));
  pool = cubert__memory_manager_persistent(f.mm);
  a = owner_new(&f);
  CHECK_OK(cubert__persistent_pool_alloc(pool, 1025, a, NULL));
  b = owner_new(&f);
  CHECK_OK(cubert__persistent_pool_try_reserve(pool, 1025, b, &found, NULL));
  CHECK(!found); /* held */
  mmf_drop(&f, a);
  CHECK_OK(cubert__persistent_pool_try_reserve(pool, 1025, b, &found, NULL));
  CHECK(found); /* keyed by the padded size (#1224) */
  CHECK(cubert__persistent_pool_has_size(pool, 1025));
  CHECK(cubert__persistent_pool_has_size(pool, 1028));
  CHECK(!cubert__persistent_pool_has_size(pool, 1029));
  mmf_drop(&f, b);
  mmf_done(&f);
}

TEST(memory_pool_persistent_pool) {
  TEST_REQUIRE_FEATURE(CUBERT_FEATURE_PAGED_POOLS | CUBERT_FEATURE_PERSISTENT_MEMORY);
  mm_fixture_t f;
  cubert_persistent_pool_t *pool;
  cubert_memory_pool_report_t r;
  cubert_memory_id_t h1, h2, h3, h4, spare;
  bool found = true;
  mmf_init(&f, MIB, 4, mmf_kind(CUBERT_MEMORY_CONFIGURATION_SUB_SLICES));
  pool = cubert__memory_manager_persistent(f.mm);
  spare = owner_new(&f);
  CHECK_OK(cubert__persistent_pool_try_reserve(pool, 1024, spare, &found, NULL));
  CHECK(!found);
  h1 = owner_new(&f);
  CHECK_OK(cubert__persistent_pool_alloc(pool, 1024, h1, NULL));
  CHECK_OK(cubert__persistent_pool_try_reserve(pool, 1024, spare, &found, NULL));
  CHECK(!found);
  mmf_drop(&f, h1);
  h2 = owner_new(&f);
  CHECK_OK(cubert__persistent_pool_try_reserve(pool, 1024, h2, &found, NULL));
  CHECK(found);
  mmf_drop(&f, h2);
  CHECK_OK(cubert__persistent_pool_try_reserve(pool, 1025, spare, &found, NULL));
  CHECK(!found); /* a different size */
  h3 = owner_new(&f);
  CHECK_OK(cubert__persistent_pool_alloc(pool, 1024, h3, NULL));
  cubert__persistent_pool_report(pool, &r);
  CHECK_EQ_U64(r.usage.bytes_in_use, 1024);
  CHECK_EQ_U64(r.usage.bytes_reserved, 2048);
  h4 = owner_new(&f);
  CHECK_OK(cubert__persistent_pool_try_reserve(pool, 1024, h4, &found, NULL));
  CHECK(found);
  cubert__persistent_pool_report(pool, &r);
  CHECK_EQ_U64(r.usage.bytes_in_use, 2048);
  CHECK_EQ_U64(r.usage.bytes_reserved, 2048);
  CHECK(r.kind == CUBERT_MEMORY_POOL_KIND_PERSISTENT);
  CHECK_EQ_U64(r.pages, 2);
  mmf_drop(&f, h3);
  mmf_drop(&f, h4);
  cubert__persistent_pool_report(pool, &r);
  CHECK_EQ_U64(r.usage.bytes_in_use, 0);
  CHECK_EQ_U64(r.usage.bytes_reserved, 2048);
  owner_discard(&f, spare);
  /* explicit cleanup releases every free slice and forgets the buckets */
  cubert__memory_manager_cleanup(f.mm, true);
  cubert__persistent_pool_report(pool, &r);
  CHECK_EQ_U64(r.usage.bytes_reserved, 0);
  CHECK(!cubert__persistent_pool_has_size(pool, 1024));
  mmf_done(&f);
}

TEST(memory_pool_persistent_many_sizes_grow_the_index) {
  TEST_REQUIRE_FEATURE(CUBERT_FEATURE_PAGED_POOLS | CUBERT_FEATURE_PERSISTENT_MEMORY);
  mm_fixture_t f;
  cubert_memory_id_t ids[100];
  uint32_t i;
  mmf_init(&f, MIB, 4, mmf_kind(CUBERT_MEMORY_CONFIGURATION_SUB_SLICES));
  cubert__memory_manager_set_mode(f.mm, CUBERT_MEMORY_ALLOCATION_MODE_PERSISTENT);
  for (i = 0; i < 100; i++) ids[i] = mmf_reserve(&f, 16 * (i + 1));
  for (i = 0; i < 100; i++) CHECK_EQ_U64(mmf_storage(&f, ids[i]).size, 16 * (i + 1));
  for (i = 0; i < 100; i += 2) mmf_drop(&f, ids[i]);
  cubert__memory_manager_cleanup(f.mm, true);
  CHECK_EQ_U64(mmf_persistent_report(&f).pages, 50);
  for (i = 1; i < 100; i += 2) {
    CHECK_EQ_U64(mmf_storage(&f, ids[i]).size, 16 * (i + 1));
    CHECK(cubert__persistent_pool_has_size(cubert__memory_manager_persistent(f.mm), 16 * (i + 1)));
    CHECK(!cubert__persistent_pool_has_size(cubert__memory_manager_persistent(f.mm), 16 * i));
    mmf_drop(&f, ids[i]);
  }
  mmf_done(&f);
}
#endif /* CUBERT_CONFIG_PAGED_POOLS && CUBERT_CONFIG_PERSISTENT_MEMORY */

/* ---- exclusive pool ----------------------------------------------------------------- */

#if CUBERT_CONFIG_PAGED_POOLS /* calls internals that are not built without it */
TEST(memory_pool_exclusive_first_page_follows_the_average) {
  TEST_REQUIRE_FEATURE(CUBERT_FEATURE_PAGED_POOLS);
  /* the first 100-byte reservation in a pool with max 512, alignment 32
   * allocates 256 bytes (average 256 -> 254.44; max(254, 100) rounded up) */
  static cubert_memory_pool_options_t pools[1];
  mm_fixture_t f;
  cubert_memory_id_t a;
  pools[0] = cubert_memory_pool_exclusive(512, CUBERT_MEMORY_NONE);
  mmf_init(&f, 128 * MIB, 32, mmf_custom(pools, 1));
  CHECK_EQ_U64(cubert__exclusive_pool_average(&cubert__memory_manager_pool(f.mm, 0)->u.exclusive), 256);
  a = mmf_reserve(&f, 100);
  CHECK_EQ_U64(cubert__exclusive_pool_average(&cubert__memory_manager_pool(f.mm, 0)->u.exclusive), 254);
  CHECK_EQ_U64(f.storage.live_bytes, 256);
  CHECK_EQ_U64(mmf_usage(&f).bytes_reserved, 256);
  CHECK_EQ_U64(mmf_usage(&f).bytes_padding, 28);
  mmf_drop(&f, a);
  mmf_done(&f);
}

TEST(memory_pool_exclusive_average_decays) {
  TEST_REQUIRE_FEATURE(CUBERT_FEATURE_PAGED_POOLS);
  static cubert_memory_pool_options_t pools[1];
  mm_fixture_t f;
  cubert_exclusive_pool_t *pool;
  cubert_memory_id_t a;
  uint32_t i;
  pools[0] = cubert_memory_pool_exclusive(1 << 20, CUBERT_MEMORY_NONE);
  mmf_init(&f, 128 * MIB, 32, mmf_custom(pools, 1));
  pool = &cubert__memory_manager_pool(f.mm, 0)->u.exclusive;
  /* 1000 requests of 1024: avg = 1024 + (524288 - 1024) * 0.99^1000 = 1046.6 */
  for (i = 0; i < 1000; i++) {
    a = mmf_reserve(&f, 1024);
    mmf_drop(&f, a);
  }
  CHECK_EQ_U64(cubert__exclusive_pool_average(pool), 1046);
  CHECK_EQ_U64(mmf_pool_report(&f, 0).pages_peak, 1); /* always reused */
  mmf_done(&f);
}
#endif /* CUBERT_CONFIG_PAGED_POOLS */

/* Advance the reservation count without allocating (a request no pool takes). */
static void tick(mm_fixture_t *f) {
  cubert_memory_id_t x;
  CHECK_STATUS(cubert__memory_manager_reserve(f->mm, 1 << 30, &x, NULL), CUBERT_STATUS_BUFFER_TOO_BIG);
}

TEST(memory_pool_exclusive_free_count_ageing) {
  TEST_REQUIRE_FEATURE(CUBERT_FEATURE_PAGED_POOLS);
  /* dealloc_period 50: a check every 10 reservations; a new page starts at
   * free_count 4, every reuse lowers it, every check seeing it free raises
   * it; released at 5 */
  static cubert_memory_pool_options_t pools[1];
  mm_fixture_t f;
  cubert_memory_id_t a;
  pools[0] = cubert_memory_pool_exclusive(1024, 50);
  mmf_init(&f, 128 * MIB, 32, mmf_custom(pools, 1));
  a = mmf_reserve(&f, 512); /* reservation 1: new page, free_count 4 */
  mmf_drop(&f, a);
  a = mmf_reserve(&f, 512); /* 2: reuse -> 3 */
  mmf_drop(&f, a);
  a = mmf_reserve(&f, 512); /* 3: reuse -> 2 */
  mmf_drop(&f, a);
  CHECK_EQ_U64(f.storage.alloc_calls, 1);
  while (cubert__memory_manager_alloc_reserve_count(f.mm) < 29) tick(&f); /* checks at 10, 20 */
  CHECK_EQ_U64(f.storage.live_allocs, 1);
  tick(&f); /* check at 30: free_count 5 -> released */
  CHECK_EQ_U64(f.storage.live_allocs, 0);
  CHECK_EQ_U64(mmf_usage(&f).bytes_reserved, 0);
  mmf_done(&f);
}

TEST(memory_pool_exclusive_new_free_page_goes_at_first_check) {
  TEST_REQUIRE_FEATURE(CUBERT_FEATURE_PAGED_POOLS);
  static cubert_memory_pool_options_t pools[1];
  mm_fixture_t f;
  cubert_memory_id_t a;
  pools[0] = cubert_memory_pool_exclusive(1024, 10); /* check every 2 */
  mmf_init(&f, 128 * MIB, 32, mmf_custom(pools, 1));
  a = mmf_reserve(&f, 512);
  tick(&f); /* 2: check, page in use */
  CHECK_EQ_U64(f.storage.live_allocs, 1);
  mmf_drop(&f, a);
  tick(&f); /* 3: no check */
  CHECK_EQ_U64(f.storage.live_allocs, 1);
  tick(&f); /* 4: check, free_count 4 -> 5: released */
  CHECK_EQ_U64(f.storage.live_allocs, 0);
  mmf_done(&f);
}

TEST(memory_pool_exclusive_no_period_never_periodic) {
  TEST_REQUIRE_FEATURE(CUBERT_FEATURE_PAGED_POOLS);
  static cubert_memory_pool_options_t pools[1];
  mm_fixture_t f;
  cubert_memory_id_t a;
  uint32_t i;
  pools[0] = cubert_memory_pool_exclusive(1024, CUBERT_MEMORY_NONE);
  mmf_init(&f, 128 * MIB, 32, mmf_custom(pools, 1));
  a = mmf_reserve(&f, 512);
  mmf_drop(&f, a);
  for (i = 0; i < 100; i++) tick(&f);
  CHECK_EQ_U64(f.storage.live_allocs, 1);
  cubert__memory_manager_cleanup(f.mm, true); /* explicit: released at once */
  CHECK_EQ_U64(f.storage.live_allocs, 0);
  mmf_done(&f);
}

TEST(memory_pool_exclusive_zero_pool_serves_size_zero) {
  mm_fixture_t f;
  cubert_memory_id_t a;
  mmf_init(&f, 128 * MIB, 32, mmf_kind(CUBERT_MEMORY_CONFIGURATION_SUB_SLICES));
  a = mmf_reserve(&f, 0);
  CHECK_EQ_U64(mmf_storage(&f, a).size, 0);
  CHECK_EQ_U64(mmf_pool_report(&f, 0).pages, 1); /* excl(0) */
  CHECK_EQ_U64(mmf_usage(&f).bytes_reserved, 0);
  mmf_drop(&f, a);
  mmf_done(&f);
}

/* ---- the sliced pool under load ------------------------------------------------------ */

static uint64_t rng_next(uint64_t *s) {
  *s ^= *s << 13;
  *s ^= *s >> 7;
  *s ^= *s << 17;
  return *s;
}

typedef struct live_t {
  cubert_memory_id_t id;
  uint64_t size;
} live_t;

static void check_no_overlap(mm_fixture_t *f, const live_t *live, uint32_t n) {
  static cubert_storage_handle_t h[512];
  uint32_t i, j;
  for (i = 0; i < n; i++) {
    h[i] = mmf_storage(f, live[i].id);
    CHECK_EQ_U64(h[i].size, live[i].size);
  }
  for (i = 0; i < n; i++)
    for (j = i + 1; j < n; j++)
      if (h[i].id == h[j].id)
        CHECK_MSG(h[i].offset + h[i].size <= h[j].offset || h[j].offset + h[j].size <= h[i].offset,
                  "slices %u and %u overlap", (unsigned)i, (unsigned)j);
}

TEST(memory_pool_sliced_random_consistency) {
  mm_fixture_t f;
  static live_t live[512];
  uint32_t n = 0, step, i;
  uint64_t seed = 0x9E3779B97F4A7C15ull;
  cubert_memory_usage_t u;
  mmf_init(&f, 64 * MIB, 32, mmf_kind(CUBERT_MEMORY_CONFIGURATION_SUB_SLICES));
  for (step = 0; step < 6000; step++) {
    uint64_t r = rng_next(&seed);
    if (n < 400 && (n == 0 || (r & 3) != 0)) {
      live[n].size = 1 + (rng_next(&seed) % (512 * KIB)) / (1 + (r >> 60));
      live[n].id = mmf_reserve(&f, live[n].size);
      n++;
    } else {
      i = (uint32_t)(rng_next(&seed) % n); /* random release order */
      mmf_drop(&f, live[i].id);
      live[i] = live[--n];
    }
    if (step % 500 == 0) {
      check_no_overlap(&f, live, n);
      u = mmf_usage(&f);
      CHECK_EQ_U64(u.number_allocs, n);
    }
    if (step % 1500 == 0) cubert__memory_manager_cleanup(f.mm, true);
  }
  check_no_overlap(&f, live, n);
  for (i = 0; i < n; i++) mmf_drop(&f, live[i].id);
  cubert__memory_manager_cleanup(f.mm, true);
  u = mmf_usage(&f);
  CHECK_EQ_U64(u.number_allocs, 0);
  CHECK_EQ_U64(u.bytes_reserved, 0);
  mmf_done(&f);
}

TEST(memory_pool_sliced_finds_every_released_slice) {
  TEST_REQUIRE_FEATURE(CUBERT_FEATURE_PAGED_POOLS);
  /* 4 pages of 16 x 64 KiB; release 16 slices spread over the pages in a
   * random order; 16 new 64 KiB reservations must not add a page */
  static cubert_memory_pool_options_t pools[1];
  mm_fixture_t f;
  cubert_memory_id_t ids[64];
  uint64_t seed = 12345;
  uint32_t i, released = 0;
  pools[0] = cubert_memory_pool_sliced(MIB, CUBERT_MEMORY_NONE, CUBERT_MEMORY_NONE);
  mmf_init(&f, 128 * MIB, 32, mmf_custom(pools, 1));
  for (i = 0; i < 64; i++) ids[i] = mmf_reserve(&f, 64 * KIB);
  CHECK_EQ_U64(mmf_pool_report(&f, 0).pages, 4);
  while (released < 16) {
    i = (uint32_t)(rng_next(&seed) % 64);
    if (cubert__memory_id_is_null(ids[i])) continue;
    mmf_drop(&f, ids[i]);
    ids[i].index = ids[i].generation = 0;
    released++;
  }
  for (i = 0; i < 64; i++)
    if (cubert__memory_id_is_null(ids[i])) ids[i] = mmf_reserve(&f, 64 * KIB);
  CHECK_EQ_U64(mmf_pool_report(&f, 0).pages, 4);
  CHECK_EQ_U64(f.storage.alloc_calls, 4);
  for (i = 0; i < 64; i++) mmf_drop(&f, ids[i]);
  mmf_done(&f);
}

#if CUBERT_CONFIG_PAGED_POOLS /* calls internals that are not built without it */
TEST(memory_pool_sliced_near_page_size_rule) {
  TEST_REQUIRE_FEATURE(CUBERT_FEATURE_PAGED_POOLS);
  /* uncapped: a request above max_slice but wasting < 20 % of a page takes a
   * page; capped pools never do */
  static cubert_memory_pool_options_t pools[2];
  cubert_sliced_pool_t *p;
  mm_fixture_t f;
  pools[0] = cubert_memory_pool_sliced(1000, 100, CUBERT_MEMORY_NONE);
  pools[1] = cubert_memory_pool_sliced(1000, 100, 2000);
  mmf_init(&f, 128 * MIB, 1, mmf_custom(pools, 2));
  p = &cubert__memory_manager_pool(f.mm, 0)->u.sliced;
  CHECK(cubert__sliced_pool_accept(p, 100));
  CHECK(!cubert__sliced_pool_accept(p, 101));
  CHECK(!cubert__sliced_pool_accept(p, 800)); /* (1000-800)*5 = 1000, not < 1000 */
  CHECK(cubert__sliced_pool_accept(p, 801));
  CHECK(cubert__sliced_pool_accept(p, 1000));
  CHECK(!cubert__sliced_pool_accept(p, 1001));
  p = &cubert__memory_manager_pool(f.mm, 1)->u.sliced;
  CHECK(cubert__sliced_pool_accept(p, 100));
  CHECK(!cubert__sliced_pool_accept(p, 900));
  mmf_done(&f);
}
#endif /* CUBERT_CONFIG_PAGED_POOLS */

static void sliding_window(uint32_t poll_per_reserve, uint64_t *out_pages) {
  /* CubeCL's benches/dynamic.rs shape: a window of live handles, the oldest
   * released before each reservation */
  static cubert_memory_pool_options_t pools[1];
  static cubert_memory_id_t ring[300];
  cubert_memory_manager_options_t o;
  mm_fixture_t f;
  uint64_t seed = 777;
  uint32_t i, head = 0;
  cubert__memory_manager_options_initialize(&o);
  o.poll_per_reserve = poll_per_reserve;
  pools[0] = cubert_memory_pool_sliced(MIB, CUBERT_MEMORY_NONE, CUBERT_MEMORY_NONE);
  mmf_init_opts(&f, 128 * MIB, 32, mmf_custom(pools, 1), &o);
  for (i = 0; i < 300; i++) ring[i] = mmf_reserve(&f, 1 + rng_next(&seed) % (16 * KIB));
  for (i = 0; i < 20000; i++) {
    mmf_drop(&f, ring[head]);
    ring[head] = mmf_reserve(&f, 1 + rng_next(&seed) % (16 * KIB));
    head = (head + 1) % 300;
  }
  CHECK_EQ_U64(mmf_usage(&f).number_allocs, 300);
  *out_pages = mmf_pool_report(&f, 0).pages_peak;
  CHECK(*out_pages <= 4); /* 300 x 8 KiB average = 2.4 MiB live */
  for (i = 0; i < 300; i++) mmf_drop(&f, ring[i]);
  mmf_done(&f);
}

TEST(memory_pool_sliced_sliding_window_stays_bounded) {
  TEST_REQUIRE_FEATURE(CUBERT_FEATURE_PAGED_POOLS);
  uint64_t lazy, eager;
  sliding_window(0, &lazy);
  sliding_window(4, &eager);
  CHECK(lazy <= 4 && eager <= 4);
}

/* options.poll_newest (the server's stream slots, issue 27): a temporary
 * released before the next reservation is found there, behind an older slice
 * that stays alive (the lazy oldest-first poll stops at it): the pool keeps
 * the live slices plus the newest one, and the handle table as many ids;
 * without it, released slices pile up until a fit fails. A live newest
 * slice stops the poll; once released, it and the ones before it go at the
 * next reservation (up to poll_newest of them). Reports are the same. */
static uint32_t temporaries(uint32_t poll_newest, uint32_t *out_max_live_ids) {
  static cubert_memory_pool_options_t pools[1];
  cubert_memory_manager_options_t o;
  cubert_sliced_pool_t *p;
  cubert_memory_id_t kept, a, b, c;
  mm_fixture_t f;
  uint64_t seed = 99;
  uint32_t i, max_used = 0;
  cubert__memory_manager_options_initialize(&o);
  CHECK_EQ_U64(o.poll_newest, 0);
  o.poll_newest = poll_newest;
  pools[0] = cubert_memory_pool_sliced(MIB, CUBERT_MEMORY_NONE, CUBERT_MEMORY_NONE);
  mmf_init_opts(&f, 128 * MIB, 32, mmf_custom(pools, 1), &o);
  p = &cubert__memory_manager_pool(f.mm, 0)->u.sliced;
  kept = mmf_reserve(&f, 64); /* the oldest slice, alive throughout */
  *out_max_live_ids = 0;
  for (i = 0; i < 2000; i++) {
    cubert_memory_id_t t = mmf_reserve(&f, 1 + rng_next(&seed) % (16 * KIB));
    if (p->used_count > max_used) max_used = p->used_count;
    if (cubert__handle_table_live(f.table) > *out_max_live_ids)
      *out_max_live_ids = cubert__handle_table_live(f.table);
    mmf_drop(&f, t);
  }
  CHECK_EQ_U64(mmf_usage(&f).number_allocs, 1); /* reports poll everything, either way */
  CHECK_EQ_U64(mmf_pool_report(&f, 0).pages_peak, 1);
  if (poll_newest) { /* a live newest slice stops the poll */
    a = mmf_reserve(&f, 100);
    b = mmf_reserve(&f, 100);
    mmf_drop(&f, a);
    c = mmf_reserve(&f, 100); /* newest b alive: a stays undetected */
    CHECK_EQ_U64(p->used_count, 4);
    mmf_drop(&f, c);
    mmf_drop(&f, b);
    c = mmf_reserve(&f, 100); /* c, b, then a (poll_newest >= 3), not kept */
    CHECK_EQ_U64(p->used_count, 2);
    mmf_drop(&f, c);
  }
  mmf_drop(&f, kept);
  mmf_done(&f);
  return max_used;
}

TEST(memory_pool_sliced_poll_newest_finds_temporaries) {
  uint32_t ids_eager, ids_lazy;
  TEST_REQUIRE_FEATURE(CUBERT_FEATURE_PAGED_POOLS);
  CHECK_EQ_U64(temporaries(4, &ids_eager), 2); /* the kept slice and the newest */
  CHECK(ids_eager <= 2);
  CHECK(temporaries(0, &ids_lazy) > 50); /* released slices wait for a failed fit */
  CHECK(ids_lazy > 50);
}

TEST(memory_pool_sliced_large_pool_random_releases) {
  TEST_REQUIRE_FEATURE(CUBERT_FEATURE_PAGED_POOLS);
  /* above SCAN_ALWAYS slices, full scans are amortized: memory stays within
   * a small margin of the live set, and every slice stays consistent */
  static cubert_memory_pool_options_t pools[1];
  static live_t live[3000];
  mm_fixture_t f;
  uint64_t seed = 4242;
  uint32_t i, round, n = 0;
  pools[0] = cubert_memory_pool_sliced(MIB, CUBERT_MEMORY_NONE, CUBERT_MEMORY_NONE);
  mmf_init(&f, 128 * MIB, 32, mmf_custom(pools, 1));
  for (; n < 3000; n++) {
    live[n].size = 4 * KIB;
    live[n].id = mmf_reserve(&f, live[n].size);
  }
  CHECK_EQ_U64(mmf_pool_report(&f, 0).pages, 12);
  for (round = 0; round < 50; round++) {
    for (i = 0; i < 100; i++) { /* release 100 at random */
      uint32_t k = (uint32_t)(rng_next(&seed) % n);
      mmf_drop(&f, live[k].id);
      live[k] = live[--n];
    }
    for (i = 0; i < 100; i++) {
      live[n].size = 4 * KIB;
      live[n].id = mmf_reserve(&f, live[n].size);
      n++;
    }
  }
  CHECK_EQ_U64(mmf_usage(&f).number_allocs, 3000);
  CHECK(mmf_pool_report(&f, 0).pages <= 14); /* 11.7 MiB live in 1 MiB pages */
  for (i = 0; i < n; i += 512) check_no_overlap(&f, &live[i], n - i < 512 ? n - i : 512);
  for (i = 0; i < n; i++) mmf_drop(&f, live[i].id);
  mmf_done(&f);
}
