/* SPDX-License-Identifier: MIT */
/* tests/unit/test_memory_edges.c: core/memory paths the main memory tests leave out, at
 * the manager and configuration level: argument refusals of every entry point (nothing
 * changes), a layout with no dynamic pool, layouts that fail to build, the Auto and
 * Persistent mode edges, reports into short arrays, configurations whose sizes overflow
 * once rounded to the alignment, the ExclusivePages ladder at the top of the u64 range,
 * and the shared formatting and bookkeeping helpers at their limits. */
#include <string.h>

#include "test_memory_fixture.h"
#include "memory/handle_table.h"
#include "memory/memory.h"

/* ---- manager creation ------------------------------------------------------------- */

TEST(memory_manager_create_refuses_each_missing_storage_function) {
  mm_fixture_t f;
  cubert_memory_configuration_t c = cubert_memory_configuration_default(false);
  cubert_storage_vtable_t vt;
  cubert_storage_t st;
  cubert_memory_manager_t *mm = NULL;
  cubert_allocator_t no_fn;
  uint64_t calls;
  int k;
  mmf_base(&f, 128 * MIB, 32);
  calls = f.counting.calls;
  for (k = 0; k < 5; k++) {
    vt = *f.storage.storage.vtable;
    switch (k) {
      case 0: vt.alignment = NULL; break;
      case 1: vt.alloc = NULL; break;
      case 2: vt.get = NULL; break;
      case 3: vt.dealloc = NULL; break;
      default: vt.flush = NULL; break;
    }
    st.self = f.storage.storage.self;
    st.vtable = &vt;
    CHECK_STATUS(cubert__memory_manager_create(f.allocator, st, f.table, f.props, &c, NULL, &mm, NULL),
                 CUBERT_STATUS_INVALID_ARGUMENT);
  }
  st.vtable = NULL;
  CHECK_STATUS(cubert__memory_manager_create(f.allocator, st, f.table, f.props, &c, NULL, &mm, NULL),
               CUBERT_STATUS_INVALID_ARGUMENT);
  no_fn.self = NULL;
  no_fn.fn = NULL;
  CHECK_STATUS(cubert__memory_manager_create(no_fn, f.storage.storage, f.table, f.props, &c, NULL,
                                             &mm, NULL),
               CUBERT_STATUS_INVALID_ARGUMENT);
  CHECK_STATUS(cubert__memory_manager_create(f.allocator, f.storage.storage, f.table, f.props, NULL,
                                             NULL, &mm, NULL),
               CUBERT_STATUS_INVALID_ARGUMENT);
  CHECK(mm == NULL);
  CHECK_EQ_U64(f.counting.calls, calls); /* refused before any allocation */
  mmf_done(&f);
}

TEST(memory_manager_layout_without_dynamic_pools) {
  TEST_REQUIRE_FEATURE(CUBERT_FEATURE_PAGED_POOLS | CUBERT_FEATURE_PERSISTENT_MEMORY);
  mm_fixture_t f;
  cubert_memory_pool_report_t persistent;
  cubert_memory_id_t id;
  cubert_error_t err;
  uint32_t n = 99;
  mmf_init(&f, 128 * MIB, 32, mmf_custom(NULL, 0));
  CHECK_EQ_U64(cubert__memory_manager_pool_count(f.mm), 0);
  /* Auto requests find no pool */
  CHECK_STATUS(cubert__memory_manager_reserve(f.mm, 64, &id, &err), CUBERT_STATUS_BUFFER_TOO_BIG);
  /* a report into no array is complete */
  CHECK_OK(cubert__memory_manager_report(f.mm, NULL, 0, &n, &persistent));
  CHECK_EQ_U64(n, 0);
  /* persistent requests still work */
  cubert__memory_manager_set_mode(f.mm, CUBERT_MEMORY_ALLOCATION_MODE_PERSISTENT);
  id = mmf_reserve(&f, 64);
  mmf_drop(&f, id);
  cubert__memory_manager_set_mode(f.mm, CUBERT_MEMORY_ALLOCATION_MODE_AUTO);
  mmf_done(&f);
}

TEST(memory_manager_create_with_a_bad_layout_fails_cleanly) {
  TEST_REQUIRE_FEATURE(CUBERT_FEATURE_PAGED_POOLS | CUBERT_FEATURE_PERSISTENT_MEMORY);
  mm_fixture_t f;
  cubert_memory_configuration_t c;
  cubert_memory_manager_t *mm = NULL;
  cubert_memory_pool_options_t pools[1];
  cubert_error_t err;
  int64_t blocks;
  mmf_base(&f, 128 * MIB, 32);
  blocks = f.counting.live_blocks;
  c = cubert_memory_configuration_default(false);
  c.kind = (cubert_memory_configuration_kind_t)42;
  CHECK_STATUS(cubert__memory_manager_create(f.allocator, f.storage.storage, f.table, f.props, &c,
                                             NULL, &mm, &err),
               CUBERT_STATUS_INVALID_ARGUMENT);
  /* a sliced entry without a page: the layout is refused, nothing stays allocated */
  pools[0] = cubert_memory_pool_sliced(0, CUBERT_MEMORY_NONE, CUBERT_MEMORY_NONE);
  c = mmf_custom(pools, 1);
  CHECK_STATUS(cubert__memory_manager_create(f.allocator, f.storage.storage, f.table, f.props, &c,
                                             NULL, &mm, &err),
               CUBERT_STATUS_CONFIG_INVALID);
  CHECK(mm == NULL);
  CHECK(cubert_error_kind(&err) == CUBERT_ERROR_CONFIG_ZERO_SIZE);
  CHECK_EQ_I64(f.counting.live_blocks, blocks);
  mmf_done(&f);
}

/* ---- manager entry points with bad arguments ---------------------------------------- */

TEST(memory_manager_entry_points_refuse_null_arguments) {
  mm_fixture_t f;
  cubert_memory_id_t id, fresh;
  cubert_storage_resource_t res;
  cubert_error_t err;
  cubert_memory_usage_t u;
  cubert_memory_configuration_t c = cubert_memory_configuration_default(false);
  mmf_init(&f, 128 * MIB, 32, cubert_memory_configuration_default(false));
  id = mmf_reserve(&f, 100);
  fresh = mmf_new_id(&f);
  CHECK_STATUS(cubert__memory_manager_reserve(NULL, 8, &id, &err), CUBERT_STATUS_INVALID_ARGUMENT);
  CHECK_STATUS(cubert__memory_manager_reserve(f.mm, 8, NULL, &err), CUBERT_STATUS_INVALID_ARGUMENT);
  CHECK_STATUS(cubert__memory_manager_bind(NULL, id, fresh, 0, &err), CUBERT_STATUS_INVALID_ARGUMENT);
  CHECK_STATUS(cubert__memory_manager_get_cursor(f.mm, id, NULL, &err), CUBERT_STATUS_INVALID_ARGUMENT);
  CHECK_STATUS(cubert__memory_manager_get_storage(f.mm, id, NULL, &err), CUBERT_STATUS_INVALID_ARGUMENT);
  CHECK_STATUS(cubert__memory_manager_get_resource(NULL, id, 0, 0, &res, &err),
               CUBERT_STATUS_INVALID_ARGUMENT);
  CHECK_STATUS(cubert__memory_manager_get_resource(f.mm, id, 0, 0, NULL, &err),
               CUBERT_STATUS_INVALID_ARGUMENT);
  /* a resource of an id that was never bound */
  CHECK_STATUS(cubert__memory_manager_get_resource(f.mm, fresh, 0, 0, &res, &err),
               CUBERT_STATUS_NOT_FOUND);
  CHECK_STATUS(cubert__memory_manager_install_pools(f.mm, NULL, f.props, &err),
               CUBERT_STATUS_INVALID_ARGUMENT);
  CHECK_STATUS(cubert__memory_manager_install_pools(NULL, &c, f.props, &err),
               CUBERT_STATUS_INVALID_ARGUMENT);
  CHECK_STATUS(cubert__memory_manager_release_pools(NULL, &u), CUBERT_STATUS_INVALID_ARGUMENT);
  CHECK_STATUS(cubert__memory_manager_report(f.mm, NULL, 1, NULL, NULL), CUBERT_STATUS_INVALID_ARGUMENT);
  /* queries on NULL */
  u = cubert__memory_manager_memory_usage(NULL);
  CHECK_EQ_U64(u.bytes_reserved, 0);
  CHECK_EQ_U64(cubert__memory_manager_alloc_reserve_count(NULL), 0);
  CHECK_EQ_U64(cubert__memory_manager_pool_count(NULL), 0);
  CHECK(cubert__memory_manager_mode(NULL) == CUBERT_MEMORY_ALLOCATION_MODE_AUTO);
  CHECK(cubert__memory_manager_pool(NULL, 0) == NULL);
  CHECK(cubert__memory_manager_pool(f.mm, 1000) == NULL);
  CHECK(cubert__memory_manager_persistent(NULL) == NULL);
  cubert__memory_manager_cleanup(NULL, true);
  cubert__memory_manager_set_mode(NULL, CUBERT_MEMORY_ALLOCATION_MODE_PERSISTENT);
  /* the reserved id is intact after all that */
  CHECK_EQ_U64(mmf_storage(&f, id).size, 100);
  mmf_drop(&f, fresh);
  mmf_drop(&f, id);
  mmf_done(&f);
}

TEST(memory_manager_bind_refuses_dead_or_same_ids) {
  mm_fixture_t f;
  cubert_memory_id_t id, fresh, dead;
  cubert_error_t err;
  mmf_init(&f, 128 * MIB, 32, cubert_memory_configuration_default(false));
  id = mmf_reserve(&f, 100);
  fresh = mmf_new_id(&f);
  dead = mmf_new_id(&f);
  mmf_drop(&f, dead);
  CHECK_STATUS(cubert__memory_manager_bind(f.mm, id, dead, 0, &err), CUBERT_STATUS_INVALID_HANDLE);
  CHECK_STATUS(cubert__memory_manager_bind(f.mm, dead, fresh, 0, &err), CUBERT_STATUS_INVALID_HANDLE);
  /* bound: the reserved id gives way to the assigned one */
  CHECK_OK(cubert__memory_manager_bind(f.mm, id, fresh, 7, &err));
  {
    uint64_t cursor = 0;
    CHECK_OK(cubert__memory_manager_get_cursor(f.mm, fresh, &cursor, &err));
    CHECK_EQ_U64(cursor, 7);
  }
  mmf_drop(&f, fresh);
  mmf_drop(&f, id);
  mmf_done(&f);
}

/* ---- configurations ------------------------------------------------------------------- */

TEST(memory_config_entries_that_overflow_once_aligned) {
  TEST_REQUIRE_FEATURE(CUBERT_FEATURE_PAGED_POOLS | CUBERT_FEATURE_PERSISTENT_MEMORY);
  cubert_memory_pool_options_t e, out, buf[1];
  cubert_memory_configuration_t c;
  cubert_error_t err;
  uint32_t n = 0;
  /* a sliced page, a slice size, an exclusive max: each rounded up past 2^64 */
  e = cubert_memory_pool_sliced(UINT64_MAX - 3, CUBERT_MEMORY_NONE, CUBERT_MEMORY_NONE);
  CHECK_STATUS(cubert__memory_pool_entry_resolve(&e, 32, false, &out, &err), CUBERT_STATUS_OVERFLOW);
  e = cubert_memory_pool_sliced(64, UINT64_MAX - 3, CUBERT_MEMORY_NONE);
  CHECK_STATUS(cubert__memory_pool_entry_resolve(&e, 32, false, &out, &err), CUBERT_STATUS_OVERFLOW);
  e = cubert_memory_pool_exclusive(UINT64_MAX - 3, CUBERT_MEMORY_NONE);
  CHECK_STATUS(cubert__memory_pool_entry_resolve(&e, 32, false, &out, &err), CUBERT_STATUS_OVERFLOW);
  c = mmf_custom(&e, 1);
  CHECK_STATUS(cubert_memory_configuration_pools(&c, mmf_props(128 * MIB, 32), buf, 1, &n, &err),
               CUBERT_STATUS_OVERFLOW);
  /* alignment 0 counts as 1; an unknown type is refused */
  e = cubert_memory_pool_exclusive(1000, CUBERT_MEMORY_NONE);
  CHECK_OK(cubert__memory_pool_entry_resolve(&e, 0, false, &out, &err));
  CHECK_EQ_U64(out.max_alloc_size, 1000);
  e.type = (cubert_memory_pool_type_t)9;
  CHECK_STATUS(cubert__memory_pool_entry_resolve(&e, 32, false, &out, &err),
               CUBERT_STATUS_INVALID_ARGUMENT);
}

TEST(memory_config_pools_argument_refusals) {
  cubert_memory_configuration_t c = cubert_memory_configuration_default(false), out;
  cubert_memory_pools_config_t pools;
  cubert_memory_pool_options_t buf[2], entry = cubert_memory_pool_direct(CUBERT_MEMORY_NONE);
  uint32_t n = 0;
  CHECK_STATUS(cubert_memory_configuration_pools(NULL, mmf_props(128 * MIB, 32), buf, 2, &n, NULL),
               CUBERT_STATUS_INVALID_ARGUMENT);
  CHECK_STATUS(cubert_memory_configuration_pools(&c, mmf_props(128 * MIB, 32), buf, 2, NULL, NULL),
               CUBERT_STATUS_INVALID_ARGUMENT);
  CHECK_STATUS(cubert_memory_configuration_pools(&c, mmf_props(128 * MIB, 32), NULL, 2, &n, NULL),
               CUBERT_STATUS_INVALID_ARGUMENT);
  c = mmf_custom(NULL, 2); /* a count without entries */
  CHECK_STATUS(cubert_memory_configuration_pools(&c, mmf_props(128 * MIB, 32), buf, 2, &n, NULL),
               CUBERT_STATUS_INVALID_ARGUMENT);
  /* resolve */
  c = cubert_memory_configuration_default(false);
  pools.kind = CUBERT_MEMORY_POOLS_EXPLICIT;
  pools.entries = &entry;
  pools.count = 1;
  CHECK_STATUS(cubert_memory_configuration_resolve(&c, &pools, mmf_props(128 * MIB, 32), false, buf,
                                                   2, NULL, NULL),
               CUBERT_STATUS_INVALID_ARGUMENT);
  CHECK_STATUS(cubert_memory_configuration_resolve(&c, &pools, mmf_props(128 * MIB, 32), false, NULL,
                                                   2, &out, NULL),
               CUBERT_STATUS_INVALID_ARGUMENT);
  pools.entries = NULL;
  CHECK_STATUS(cubert_memory_configuration_resolve(&c, &pools, mmf_props(128 * MIB, 32), false, buf,
                                                   2, &out, NULL),
               CUBERT_STATUS_INVALID_ARGUMENT);
}

TEST(memory_config_presets_at_odd_device_sizes) {
  TEST_REQUIRE_FEATURE(CUBERT_FEATURE_PAGED_POOLS | CUBERT_FEATURE_PERSISTENT_MEMORY);
  cubert_memory_configuration_t c;
  cubert_memory_pool_options_t buf[64];
  cubert_error_t err;
  uint32_t n = 0;
  /* alignment 0 counts as 1: the SubSlices tail is the whole page */
  c = cubert_memory_configuration_default(false);
  CHECK_OK(cubert_memory_configuration_pools(&c, mmf_props(100 * MIB + 3, 0), buf, 64, &n, NULL));
  CHECK_EQ_U64(buf[n - 1].max_alloc_size, 100 * MIB + 3);
  /* ExclusivePages over 3 GiB (ln of a mantissa above sqrt 2): buckets up to the page */
  c = cubert_memory_configuration_default(true);
  CHECK_OK(cubert_memory_configuration_pools(&c, mmf_props(3 * GIB, 32), buf, 64, &n, NULL));
  CHECK(n > 1 && n <= 24);
  CHECK_EQ_U64(buf[0].max_alloc_size, 32768);
  CHECK(buf[n - 1].max_alloc_size >= 3 * GIB - 64 && buf[n - 1].max_alloc_size <= 3 * GIB + 64);
  /* at the top of the u64 range the last bucket is 2^64 - 26624 (exp(ln x) within a few
   * ulps); aligned to 64 KiB it would pass 2^64: refused */
  CHECK_OK(cubert_memory_configuration_pools(&c, mmf_props(UINT64_MAX, 1), buf, 64, &n, NULL));
  CHECK(buf[n - 1].max_alloc_size > UINT64_MAX - 65536);
  CHECK_STATUS(cubert_memory_configuration_pools(&c, mmf_props(UINT64_MAX, 65536), buf, 64, &n, &err),
               CUBERT_STATUS_OVERFLOW);
  CHECK(cubert_error_kind(&err) == CUBERT_ERROR_OVERFLOW);
}

/* ---- shared helpers ---------------------------------------------------------------------- */

TEST(memory_helpers_at_their_limits) {
  TEST_REQUIRE_FEATURE(CUBERT_FEATURE_ERROR_REASONS);
  counting_allocator_t ca;
  cubert_allocator_t a = counting_allocator_initialize(&ca);
  void *array = NULL;
  uint32_t cap = 0x80000001u;
  uint64_t out = 5;
  cubert_error_t err;
  char long_prefix[120];
  /* size + padding wraps */
  CHECK_STATUS(cubert__memory_effective_size(UINT64_MAX - 3, 32, &out), CUBERT_STATUS_OVERFLOW);
  CHECK_EQ_U64(out, 5);
  /* a capacity past half the u32 range jumps to the need; the byte size overflows */
  CHECK_STATUS(cubert__memory_array_reserve(a, &array, &cap, UINT32_MAX, SIZE_MAX / 2, 4),
               CUBERT_STATUS_OVERFLOW);
  CHECK(array == NULL);
  CHECK_EQ_U64(cap, 0x80000001u);
  /* growing an existing array fails: the array and its capacity stay */
  cap = 0;
  CHECK_OK(cubert__memory_array_reserve(a, &array, &cap, 3, 8, 4));
  CHECK_EQ_U64(cap, 4);
  ((uint64_t *)array)[3] = 77;
  counting_allocator_fail_at(&ca, 1, 0);
  CHECK_STATUS(cubert__memory_array_reserve(a, &array, &cap, 9, 8, 4), CUBERT_STATUS_RESOURCE_EXHAUSTED);
  CHECK_EQ_U64(cap, 4);
  CHECK_EQ_U64(((uint64_t *)array)[3], 77);
  cubert__memory_array_free(a, &array, &cap, 8);
  CHECK_EQ_I64(ca.live_blocks, 0);
  counting_allocator_destroy(&ca);
  /* a NOT_FOUND reason longer than its buffer is cut, never overrun */
  memset(long_prefix, 'p', sizeof long_prefix - 1);
  long_prefix[sizeof long_prefix - 1] = 0;
  CHECK_STATUS(cubert__memory_not_found(&err, long_prefix, 12345, "!"), CUBERT_STATUS_NOT_FOUND);
  CHECK(strlen(err.reason) < sizeof err.reason);
  CHECK(strstr(err.reason, "12345") == NULL);
  long_prefix[80] = 0; /* the digits are cut: no room for the suffix */
  CHECK_STATUS(cubert__memory_not_found(&err, long_prefix, 1234567890123456789ull, " suffix"),
               CUBERT_STATUS_NOT_FOUND);
  CHECK(strstr(err.reason, "123456789012345") != NULL);
  CHECK(strstr(err.reason, "suffix") == NULL);
  long_prefix[70] = 0; /* the digits fit, the suffix is cut */
  CHECK_STATUS(cubert__memory_not_found(&err, long_prefix, 1234567890123456789ull, " suffix"),
               CUBERT_STATUS_NOT_FOUND);
  CHECK(strstr(err.reason, "1234567890123456789 suff") != NULL);
  CHECK_EQ_U64(strlen(err.reason), 95); /* the 96-byte buffer, NUL included */
}

TEST(memory_format_without_buffer_and_huge_ratios) {
  cubert_memory_usage_t u;
  char buf[256];
  CHECK_EQ_U64(cubert_memory_bytes_format(1234567, NULL, 0), 7); /* "1.23 MB", counted only */
  memset(&u, 0, sizeof u);
  u.number_allocs = 1;
  u.bytes_in_use = UINT64_MAX;
  u.bytes_reserved = 1; /* more in use than reserved: the ratio's numerator is halved first */
  CHECK(cubert_memory_usage_format(&u, NULL, 0) > 0);
  CHECK(cubert_memory_usage_format(&u, buf, sizeof buf) < sizeof buf);
  CHECK(strstr(buf, "%") != NULL);
  CHECK_EQ_U64(cubert_memory_usage_format(NULL, buf, sizeof buf), 0);
  CHECK_EQ_STR(buf, "");
}

/* ---- routing, reports, the handle table ----------------------------------------------------- */

TEST(memory_manager_more_refusals_and_a_full_handle_table) {
  mm_fixture_t f;
  cubert_memory_manager_t *mm = NULL;
  cubert_handle_table_t *tiny = NULL;
  cubert_memory_configuration_t c = cubert_memory_configuration_default(false);
  cubert_memory_id_t id, first;
  cubert_storage_handle_t h;
  uint64_t cursor;
  cubert_error_t err;
  mmf_init(&f, 128 * MIB, 32, cubert_memory_configuration_default(false));
  id = mmf_reserve(&f, 64);
  CHECK_STATUS(cubert__memory_manager_create(f.allocator, f.storage.storage, f.table, f.props, &c,
                                             NULL, NULL, &err),
               CUBERT_STATUS_INVALID_ARGUMENT);
  CHECK_STATUS(cubert__memory_manager_report(NULL, NULL, 0, NULL, NULL), CUBERT_STATUS_INVALID_ARGUMENT);
  CHECK_STATUS(cubert__memory_manager_get_cursor(NULL, id, &cursor, &err), CUBERT_STATUS_INVALID_ARGUMENT);
  CHECK_STATUS(cubert__memory_manager_get_storage(NULL, id, &h, &err), CUBERT_STATUS_INVALID_ARGUMENT);
  mmf_drop(&f, id);
  /* a manager over a handle table of one slot: the second reservation finds no id */
  CHECK_OK(cubert__handle_table_create(f.allocator, 1, 9, &tiny));
  CHECK_OK(cubert__memory_manager_create(f.allocator, f.storage.storage, tiny, f.props, &c, NULL, &mm,
                                         &err));
  CHECK_OK(cubert__memory_manager_reserve(mm, 64, &first, &err));
  CHECK_STATUS(cubert__memory_manager_reserve(mm, 64, &id, &err), CUBERT_STATUS_OUT_OF_RANGE);
  CHECK(cubert_error_kind(&err) == CUBERT_ERROR_OUT_OF_RANGE);
  CHECK_OK(cubert__memory_id_release_handle(tiny, first));
  cubert__memory_manager_destroy(mm);
  cubert__handle_table_destroy(tiny);
  mmf_done(&f);
}

TEST(memory_manager_usage_counts_the_persistent_pools_free_block) {
  TEST_REQUIRE_FEATURE(CUBERT_FEATURE_PAGED_POOLS | CUBERT_FEATURE_PERSISTENT_MEMORY);
  mm_fixture_t f;
  cubert_memory_id_t id;
  cubert_memory_usage_t u;
  cubert_memory_pool_report_t r;
  mmf_init(&f, 128 * MIB, 32, cubert_memory_configuration_default(false));
  cubert__memory_manager_set_mode(f.mm, CUBERT_MEMORY_ALLOCATION_MODE_PERSISTENT);
  id = mmf_reserve(&f, 1 * MIB);
  cubert__memory_manager_set_mode(f.mm, CUBERT_MEMORY_ALLOCATION_MODE_AUTO);
  mmf_drop(&f, id);
  u = mmf_usage(&f); /* the persistent slice is free now, and the largest free block */
  CHECK_EQ_U64(u.bytes_reserved, 1 * MIB);
  CHECK_EQ_U64(u.bytes_in_use, 0);
  r = mmf_persistent_report(&f);
  CHECK_EQ_U64(r.largest_free, 1 * MIB);
  mmf_done(&f);
}

TEST(memory_manager_failure_after_a_full_pool_reports_the_full_pool) {
  TEST_REQUIRE_FEATURE(CUBERT_FEATURE_PAGED_POOLS | CUBERT_FEATURE_PERSISTENT_MEMORY);
  /* pool 0: capped sliced (one page), full -> capacity exceeded, spill; pool 1: direct,
   * its storage fails -> routing stops there (pool 2 is not tried) and the error is the
   * capacity one (CubeCL reports the pool that was full) */
  mm_fixture_t f;
  cubert_memory_pool_options_t pools[3];
  cubert_memory_id_t a, b;
  cubert_error_t err;
  uint64_t calls;
  pools[0] = cubert_memory_pool_sliced(1024, CUBERT_MEMORY_NONE, 1024);
  pools[1] = cubert_memory_pool_direct(CUBERT_MEMORY_NONE);
  pools[2] = cubert_memory_pool_direct(CUBERT_MEMORY_NONE);
  mmf_init(&f, 128 * MIB, 32, mmf_custom(pools, 3));
  a = mmf_reserve(&f, 1024); /* fills pool 0 */
  f.storage.fail_status = CUBERT_STATUS_UNAVAILABLE;
  host_storage_fail_at(&f.storage, 1, 0);
  calls = f.storage.alloc_calls;
  CHECK_STATUS(cubert__memory_manager_reserve(f.mm, 1000, &b, &err),
               CUBERT_STATUS_POOL_CAPACITY_EXCEEDED);
  CHECK(cubert_error_kind(&err) == CUBERT_ERROR_IO_POOL_CAPACITY_EXCEEDED);
  CHECK_EQ_U64(f.storage.alloc_calls, calls + 1); /* pool 1's call only */
  CHECK_EQ_U64(cubert__memory_manager_memory_usage(f.mm).number_allocs, 1);
  b = mmf_reserve(&f, 1000); /* storage back: pool 1 serves it */
  mmf_drop(&f, a);
  mmf_drop(&f, b);
  mmf_done(&f);
}

TEST(memory_manager_two_periodic_exclusive_pools_check_at_the_earliest) {
  TEST_REQUIRE_FEATURE(CUBERT_FEATURE_PAGED_POOLS | CUBERT_FEATURE_PERSISTENT_MEMORY);
  mm_fixture_t f;
  cubert_memory_pool_options_t pools[2];
  cubert_memory_id_t id;
  int i;
  pools[0] = cubert_memory_pool_exclusive(1024, 50);   /* checked every 10 reservations */
  pools[1] = cubert_memory_pool_exclusive(1 * MIB, 10); /* every 2 */
  mmf_init(&f, 128 * MIB, 32, mmf_custom(pools, 2));
  for (i = 0; i < 12; i++) {
    id = mmf_reserve(&f, 4096);
    mmf_drop(&f, id);
  }
  CHECK_EQ_U64(cubert__memory_manager_alloc_reserve_count(f.mm), 12);
  /* freed pages age on the small period: pool 1's page was released by now */
  CHECK(mmf_pool_report(&f, 1).pages <= 1);
  mmf_done(&f);
}

TEST(memory_manager_direct_reclaim_flushes_at_the_next_reserve) {
  TEST_REQUIRE_FEATURE(CUBERT_FEATURE_PAGED_POOLS | CUBERT_FEATURE_PERSISTENT_MEMORY);
  /* a direct pool over its watermark releases storage during a reservation: the flush
   * that release needs happens at the next reservation, though no periodic check is due;
   * and of two periodic exclusive pools the earlier check counts */
  mm_fixture_t f;
  cubert_memory_pool_options_t pools[3];
  cubert_memory_id_t a, b, c;
  uint64_t flushes;
  pools[0] = cubert_memory_pool_exclusive(64, 10);        /* checked every 2 */
  pools[1] = cubert_memory_pool_exclusive(128, 1000000); /* every 200000 */
  pools[2] = cubert_memory_pool_direct(300);
  mmf_init(&f, 128 * MIB, 32, mmf_custom(pools, 3));
  a = mmf_reserve(&f, 256);
  mmf_drop(&f, a);
  b = mmf_reserve(&f, 224); /* 256 + 224 > 300: a's storage is released */
  flushes = f.storage.flush_calls;
  c = mmf_reserve(&f, 200);
  CHECK(f.storage.flush_calls > flushes);
  mmf_drop(&f, b);
  mmf_drop(&f, c);
  mmf_done(&f);
}

TEST(memory_manager_pool_of_an_unknown_type_is_skipped_and_left_alone) {
  TEST_REQUIRE_FEATURE(CUBERT_FEATURE_PAGED_POOLS | CUBERT_FEATURE_PERSISTENT_MEMORY);
  /* A corrupt pool type (memory overwritten): routing skips the pool, cleanups and trims
   * leave it alone, its report entry is not written, and tearing down does not touch it.
   * The pool is a sliced pool that holds no memory yet, so nothing leaks. */
  mm_fixture_t f;
  cubert_memory_pool_options_t pools[2];
  cubert_memory_pool_t *pool;
  cubert_memory_pool_report_t reports[2];
  cubert_memory_id_t id;
  uint32_t n = 0;
  pools[0] = cubert_memory_pool_sliced(4096, CUBERT_MEMORY_NONE, CUBERT_MEMORY_NONE);
  pools[1] = cubert_memory_pool_direct(CUBERT_MEMORY_NONE);
  mmf_init(&f, 128 * MIB, 32, mmf_custom(pools, 2));
  pool = cubert__memory_manager_pool(f.mm, 0);
  pool->type = (cubert_memory_pool_type_t)77;
  id = mmf_reserve(&f, 100); /* not the sliced pool: the direct one */
  CHECK_EQ_U64(cubert__memory_manager_pool(f.mm, 1)->u.direct.slices.live, 1);
  cubert__memory_manager_cleanup(f.mm, true);
  CHECK_OK(cubert__memory_manager_release_pools(f.mm, NULL));
  memset(reports, 0x33, sizeof reports);
  CHECK_OK(cubert__memory_manager_report(f.mm, reports, 2, &n, NULL));
  CHECK_EQ_U64(n, 2);
  CHECK_EQ_U64(reports[0].page_size, 0x3333333333333333ull); /* not written */
  CHECK_EQ_U64(reports[1].usage.number_allocs, 1);
  mmf_drop(&f, id);
  mmf_done(&f);
}
