/* SPDX-License-Identifier: MIT */
/*
 * CubeCL's memory_manage.rs tests (41), ported against the host
 * storage. DUMMY props = 128 MiB / 32. "drop" = release the user handle.
 *
 * Not ported (cubert has no graph capture; it is out of this
 * component's scope): capture_pins_reused_persistent_slice,
 * capture_pins_preexisting_slice_freed_and_reused_midwindow,
 * capture_does_not_retain_untouched_free_slices, capture_survives_explicit_cleanup,
 * capture_begin_is_reentrant, capture_leaves_preexisting_buffers_alone,
 * capture_priming_leaves_the_working_set_not_the_peak,
 * capture_priming_holds_dropped_slices_until_priming_ends,
 * capture_end_releases_primed_slices_when_priming_never_ended (9 tests).
 */
#include "test_memory_fixture.h"
#include "memory/handle_table.h"
#include "memory/memory.h"

#define DUMMY_PAGE (128 * MIB)
#define DUMMY_ALIGN 32

static void one_pool(mm_fixture_t *f, cubert_memory_pool_options_t pool, uint64_t align) {
  static cubert_memory_pool_options_t pools[1];
  pools[0] = pool;
  mmf_init(f, DUMMY_PAGE, align, mmf_custom(pools, 1));
}

static void handle_mutability(cubert_memory_configuration_kind_t kind) {
  mm_fixture_t f;
  cubert_memory_id_t h;
  mmf_init(&f, DUMMY_PAGE, DUMMY_ALIGN, mmf_kind(kind));
  h = mmf_reserve(&f, 10);
  CHECK(cubert__memory_id_can_mut(f.table, h));
  CHECK_OK(cubert__memory_id_retain_handle(f.table, h)); /* a clone */
  CHECK(!cubert__memory_id_can_mut(f.table, h));
  mmf_drop(&f, h);
  CHECK(cubert__memory_id_can_mut(f.table, h));
  mmf_drop(&f, h);
  mmf_done(&f);
}

TEST(memory_manage_test_handle_mutability) { handle_mutability(CUBERT_MEMORY_CONFIGURATION_SUB_SLICES); }
TEST(memory_manage_noslice_test_handle_mutability) {
  handle_mutability(CUBERT_MEMORY_CONFIGURATION_EXCLUSIVE_PAGES);
}

TEST(memory_manage_test_memory_usage) {
  TEST_REQUIRE_FEATURE(CUBERT_FEATURE_PAGED_POOLS);
  mm_fixture_t f;
  cubert_memory_id_t h;
  cubert_memory_usage_t u1, u2;
  one_pool(&f, cubert_memory_pool_exclusive(512, CUBERT_MEMORY_NONE), DUMMY_ALIGN);
  h = mmf_reserve(&f, 100);
  u1 = mmf_usage(&f);
  CHECK_EQ_U64(u1.bytes_in_use, 100);
  CHECK(u1.bytes_reserved >= 100 && u1.bytes_reserved <= 512);
  mmf_drop(&f, h);
  h = mmf_reserve(&f, 100);
  u2 = mmf_usage(&f);
  CHECK_EQ_U64(u2.number_allocs, u1.number_allocs);
  CHECK_EQ_U64(u2.bytes_in_use, u1.bytes_in_use);
  CHECK_EQ_U64(u2.bytes_padding, u1.bytes_padding);
  CHECK_EQ_U64(u2.bytes_reserved, u1.bytes_reserved);
  mmf_drop(&f, h);
  mmf_done(&f);
}

TEST(memory_manage_find_uninit_binding_returns_not_found) {
  TEST_REQUIRE_FEATURE(CUBERT_FEATURE_PAGED_POOLS | CUBERT_FEATURE_ERROR_REASONS);
  mm_fixture_t f;
  cubert_memory_id_t live, fresh;
  cubert_error_t err;
  uint64_t cursor;
  one_pool(&f, cubert_memory_pool_sliced(2048, CUBERT_MEMORY_NONE, CUBERT_MEMORY_NONE), DUMMY_ALIGN);
  live = mmf_reserve(&f, 512);
  fresh = mmf_new_id(&f);
  CHECK_STATUS(cubert__memory_manager_get_cursor(f.mm, fresh, &cursor, &err), CUBERT_STATUS_NOT_FOUND);
  CHECK_EQ_STR(err.reason, "Memory location was never initialized");
  mmf_drop(&f, fresh);
  mmf_drop(&f, live);
  mmf_done(&f);
}

TEST(memory_manage_find_stale_descriptor_returns_not_found) {
  TEST_REQUIRE_FEATURE(CUBERT_FEATURE_PAGED_POOLS | CUBERT_FEATURE_ERROR_REASONS);
  mm_fixture_t f;
  cubert_memory_id_t reserved, assigned;
  cubert_error_t err;
  uint64_t cursor = 99;
  one_pool(&f, cubert_memory_pool_sliced(2048, CUBERT_MEMORY_NONE, CUBERT_MEMORY_NONE), DUMMY_ALIGN);
  reserved = mmf_reserve(&f, 512);
  assigned = mmf_new_id(&f);
  CHECK_OK(cubert__memory_manager_bind(f.mm, reserved, assigned, 0, &err));
  CHECK_STATUS(cubert__memory_manager_get_cursor(f.mm, reserved, &cursor, &err), CUBERT_STATUS_NOT_FOUND);
  CHECK_EQ_STR(err.reason, "Memory location points to a different allocation");
  CHECK_OK(cubert__memory_manager_get_cursor(f.mm, assigned, &cursor, &err));
  CHECK_EQ_U64(cursor, 0);
  mmf_drop(&f, reserved);
  /* the slice stays with `assigned` */
  CHECK_EQ_U64(mmf_usage(&f).number_allocs, 1);
  mmf_drop(&f, assigned);
  CHECK_EQ_U64(mmf_usage(&f).number_allocs, 0);
  mmf_done(&f);
}

TEST(memory_manage_held_binding_survives_explicit_cleanup_renumber) {
  TEST_REQUIRE_FEATURE(CUBERT_FEATURE_PAGED_POOLS);
  mm_fixture_t f;
  cubert_memory_id_t a, b, c;
  cubert_storage_handle_t before, after;
  uint64_t cursor;
  one_pool(&f, cubert_memory_pool_exclusive(1024, CUBERT_MEMORY_NONE), DUMMY_ALIGN);
  a = mmf_reserve(&f, 1024);
  b = mmf_reserve(&f, 1024);
  c = mmf_reserve(&f, 1024);
  before = mmf_storage(&f, b);
  CHECK_OK(cubert__memory_id_retain_binding(f.table, b)); /* keep b's binding */
  mmf_drop(&f, b);
  mmf_drop(&f, a);
  mmf_drop(&f, c);
  cubert__memory_manager_cleanup(f.mm, true);
  CHECK_OK(cubert__memory_manager_get_cursor(f.mm, b, &cursor, NULL));
  after = mmf_storage(&f, b);
  CHECK_EQ_U64(after.id, before.id);
  CHECK_EQ_U64(after.size, 1024);
  CHECK_EQ_U64(mmf_usage(&f).bytes_reserved, 1024);
  CHECK_OK(cubert__memory_id_release_binding(f.table, b));
  mmf_done(&f);
}

TEST(memory_manage_capped_sliced_pool_errors_instead_of_growing) {
  TEST_REQUIRE_FEATURE(CUBERT_FEATURE_PAGED_POOLS);
  mm_fixture_t f;
  cubert_memory_id_t a, b, c;
  cubert_error_t err;
  one_pool(&f, cubert_memory_pool_sliced(1024, CUBERT_MEMORY_NONE, 2048), DUMMY_ALIGN);
  a = mmf_reserve(&f, 1024);
  b = mmf_reserve(&f, 1024);
  CHECK_STATUS(cubert__memory_manager_reserve(f.mm, 1024, &c, &err),
               CUBERT_STATUS_POOL_CAPACITY_EXCEEDED);
  CHECK(cubert_error_kind(&err) == CUBERT_ERROR_IO_POOL_CAPACITY_EXCEEDED);
  CHECK_EQ_U64(err.field[0], 1024);
  CHECK_EQ_U64(err.field[1], 2048);
  CHECK_EQ_U64(err.field[2], 2048);
  CHECK_EQ_U64(mmf_usage(&f).bytes_reserved, 2048);
  CHECK(mmf_pool_report(&f, 0).capacity_exceeded);
  mmf_drop(&f, a);
  mmf_drop(&f, b);
  mmf_done(&f);
}

TEST(memory_manage_capped_sliced_pool_reuses_freed_memory) {
  TEST_REQUIRE_FEATURE(CUBERT_FEATURE_PAGED_POOLS);
  mm_fixture_t f;
  cubert_memory_id_t a, b, c;
  one_pool(&f, cubert_memory_pool_sliced(1024, CUBERT_MEMORY_NONE, 2048), DUMMY_ALIGN);
  a = mmf_reserve(&f, 1024);
  b = mmf_reserve(&f, 1024);
  mmf_drop(&f, a);
  c = mmf_reserve(&f, 1024);
  CHECK_EQ_U64(mmf_usage(&f).bytes_reserved, 2048);
  mmf_drop(&f, b);
  mmf_drop(&f, c);
  mmf_done(&f);
}

TEST(memory_manage_capped_lazy_pool_cleanup_still_frees) {
  TEST_REQUIRE_FEATURE(CUBERT_FEATURE_PAGED_POOLS);
  mm_fixture_t f;
  cubert_memory_id_t a, b, c;
  one_pool(&f, cubert_memory_pool_sliced(1024, CUBERT_MEMORY_NONE, 2048), DUMMY_ALIGN);
  a = mmf_reserve(&f, 1024);
  b = mmf_reserve(&f, 1024);
  mmf_drop(&f, a);
  mmf_drop(&f, b);
  cubert__memory_manager_cleanup(f.mm, true);
  CHECK_EQ_U64(mmf_usage(&f).bytes_reserved, 0);
  CHECK_EQ_U64(f.storage.live_allocs, 0);
  a = mmf_reserve(&f, 1024);
  b = mmf_reserve(&f, 1024);
  CHECK_STATUS(cubert__memory_manager_reserve(f.mm, 1024, &c, NULL),
               CUBERT_STATUS_POOL_CAPACITY_EXCEEDED);
  mmf_drop(&f, a);
  mmf_drop(&f, b);
  mmf_done(&f);
}

TEST(memory_manage_max_pool_size_smaller_than_page_shrinks_page) {
  TEST_REQUIRE_FEATURE(CUBERT_FEATURE_PAGED_POOLS);
  mm_fixture_t f;
  cubert_memory_id_t a, b;
  one_pool(&f, cubert_memory_pool_sliced(2048, CUBERT_MEMORY_NONE, 512), DUMMY_ALIGN);
  a = mmf_reserve(&f, 256);
  CHECK(mmf_usage(&f).bytes_reserved <= 512);
  CHECK(cubert__memory_manager_reserve(f.mm, 1024, &b, NULL) != CUBERT_STATUS_OK);
  CHECK(mmf_usage(&f).bytes_reserved <= 512);
  CHECK_EQ_U64(mmf_pool_report(&f, 0).page_size, 512);
  mmf_drop(&f, a);
  mmf_done(&f);
}

TEST(memory_manage_max_pool_size_below_alignment_never_overshoots) {
  TEST_REQUIRE_FEATURE(CUBERT_FEATURE_PAGED_POOLS);
  mm_fixture_t f;
  cubert_memory_id_t a;
  one_pool(&f, cubert_memory_pool_sliced(1024, CUBERT_MEMORY_NONE, 16), DUMMY_ALIGN);
  CHECK_STATUS(cubert__memory_manager_reserve(f.mm, 8, &a, NULL), CUBERT_STATUS_POOL_CAPACITY_EXCEEDED);
  CHECK_EQ_U64(mmf_usage(&f).bytes_reserved, 0);
  CHECK_EQ_U64(f.storage.alloc_calls, 0);
  mmf_done(&f);
}

TEST(memory_manage_persistent_windows_nest) {
  TEST_REQUIRE_FEATURE(CUBERT_FEATURE_PAGED_POOLS | CUBERT_FEATURE_PERSISTENT_MEMORY);
  mm_fixture_t f;
  cubert_memory_id_t a, b;
  one_pool(&f, cubert_memory_pool_sliced(4096, CUBERT_MEMORY_NONE, CUBERT_MEMORY_NONE), DUMMY_ALIGN);
  cubert__memory_manager_set_mode(f.mm, CUBERT_MEMORY_ALLOCATION_MODE_PERSISTENT);
  cubert__memory_manager_set_mode(f.mm, CUBERT_MEMORY_ALLOCATION_MODE_PERSISTENT);
  cubert__memory_manager_set_mode(f.mm, CUBERT_MEMORY_ALLOCATION_MODE_AUTO);
  CHECK(cubert__memory_manager_mode(f.mm) == CUBERT_MEMORY_ALLOCATION_MODE_PERSISTENT);
  a = mmf_reserve(&f, 1024);
  CHECK_EQ_U64(mmf_persistent_report(&f).usage.bytes_in_use, 1024);
  CHECK_EQ_U64(mmf_pool_report(&f, 0).pages_peak, 0);
  cubert__memory_manager_set_mode(f.mm, CUBERT_MEMORY_ALLOCATION_MODE_AUTO);
  CHECK(cubert__memory_manager_mode(f.mm) == CUBERT_MEMORY_ALLOCATION_MODE_AUTO);
  b = mmf_reserve(&f, 1024);
  CHECK_EQ_U64(mmf_pool_report(&f, 0).pages_peak, 1);
  /* saturating: another Auto changes nothing */
  cubert__memory_manager_set_mode(f.mm, CUBERT_MEMORY_ALLOCATION_MODE_AUTO);
  CHECK(cubert__memory_manager_mode(f.mm) == CUBERT_MEMORY_ALLOCATION_MODE_AUTO);
  mmf_drop(&f, a);
  mmf_drop(&f, b);
  mmf_done(&f);
}

TEST(memory_manage_capacity_overflow_falls_through_to_later_accepting_pool) {
  TEST_REQUIRE_FEATURE(CUBERT_FEATURE_PAGED_POOLS);
  mm_fixture_t f;
  cubert_memory_id_t a, b;
  static cubert_memory_pool_options_t pools[2];
  pools[0] = cubert_memory_pool_sliced(1024, CUBERT_MEMORY_NONE, 1024);
  pools[1] = cubert_memory_pool_sliced(1024, CUBERT_MEMORY_NONE, CUBERT_MEMORY_NONE);
  mmf_init(&f, DUMMY_PAGE, DUMMY_ALIGN, mmf_custom(pools, 2));
  a = mmf_reserve(&f, 1024);
  b = mmf_reserve(&f, 1024);
  CHECK_EQ_U64(mmf_usage(&f).bytes_reserved, 2048);
  CHECK_EQ_U64(mmf_pool_report(&f, 0).pages_peak, 1);
  CHECK_EQ_U64(mmf_pool_report(&f, 1).pages_peak, 1);
  CHECK(mmf_pool_report(&f, 0).capacity_exceeded);
  CHECK(!mmf_pool_report(&f, 1).capacity_exceeded);
  mmf_drop(&f, a);
  mmf_drop(&f, b);
  mmf_done(&f);
}

static void check_usage(mm_fixture_t *f, uint64_t allocs, uint64_t in_use, uint64_t reserved) {
  cubert_memory_usage_t u = mmf_usage(f);
  CHECK_EQ_U64(u.number_allocs, allocs);
  CHECK_EQ_U64(u.bytes_in_use, in_use);
  CHECK_EQ_U64(u.bytes_reserved, reserved);
}

TEST(memory_manage_alloc_two_chunks_on_one_page) {
  TEST_REQUIRE_FEATURE(CUBERT_FEATURE_PAGED_POOLS);
  mm_fixture_t f;
  cubert_memory_id_t a, b;
  one_pool(&f, cubert_memory_pool_sliced(2048, CUBERT_MEMORY_NONE, CUBERT_MEMORY_NONE), DUMMY_ALIGN);
  a = mmf_reserve(&f, 512);
  b = mmf_reserve(&f, 512);
  check_usage(&f, 2, 1024, 2048);
  mmf_drop(&f, a);
  mmf_drop(&f, b);
  mmf_done(&f);
}

TEST(memory_manage_alloc_reuses_storage) {
  TEST_REQUIRE_FEATURE(CUBERT_FEATURE_PAGED_POOLS);
  mm_fixture_t f;
  cubert_memory_id_t a;
  one_pool(&f, cubert_memory_pool_sliced(512, CUBERT_MEMORY_NONE, CUBERT_MEMORY_NONE), DUMMY_ALIGN);
  a = mmf_reserve(&f, 512);
  mmf_drop(&f, a);
  a = mmf_reserve(&f, 512);
  check_usage(&f, 1, 512, 512);
  mmf_drop(&f, a);
  mmf_done(&f);
}

TEST(memory_manage_alloc_allocs_new_storage) {
  TEST_REQUIRE_FEATURE(CUBERT_FEATURE_PAGED_POOLS);
  mm_fixture_t f;
  cubert_memory_id_t a, b;
  one_pool(&f, cubert_memory_pool_sliced(1024, CUBERT_MEMORY_NONE, CUBERT_MEMORY_NONE), DUMMY_ALIGN);
  a = mmf_reserve(&f, 768);
  b = mmf_reserve(&f, 768);
  check_usage(&f, 2, 1536, 2048);
  mmf_drop(&f, a);
  mmf_drop(&f, b);
  mmf_done(&f);
}

TEST(memory_manage_alloc_respects_alignment_size) {
  TEST_REQUIRE_FEATURE(CUBERT_FEATURE_PAGED_POOLS);
  mm_fixture_t f;
  cubert_memory_id_t a, b;
  one_pool(&f, cubert_memory_pool_sliced(500, CUBERT_MEMORY_NONE, CUBERT_MEMORY_NONE), 50);
  a = mmf_reserve(&f, 40);
  b = mmf_reserve(&f, 40);
  CHECK_EQ_U64(mmf_usage(&f).bytes_padding, 20);
  CHECK_EQ_U64(mmf_storage(&f, b).offset, 50);
  mmf_drop(&f, a);
  mmf_drop(&f, b);
  mmf_done(&f);
}

static void allocs_on_correct_page(void) {
  mm_fixture_t f;
  cubert_memory_id_t ids[4];
  static cubert_memory_pool_options_t pools[4];
  uint32_t i;
  for (i = 0; i < 4; i++)
    pools[i] = cubert_memory_pool_sliced(100 * (i + 1), CUBERT_MEMORY_NONE, CUBERT_MEMORY_NONE);
  mmf_init(&f, DUMMY_PAGE, 10, mmf_custom(pools, 4));
  for (i = 0; i < 4; i++) ids[i] = mmf_reserve(&f, 50 + 100 * i);
  CHECK_EQ_U64(mmf_usage(&f).bytes_in_use, 800);
  CHECK(mmf_usage(&f).bytes_reserved >= 1000);
  for (i = 0; i < 4; i++) CHECK_EQ_U64(mmf_pool_report(&f, i).pages, 1);
  for (i = 0; i < 4; i++) mmf_drop(&f, ids[i]);
  mmf_done(&f);
}

TEST(memory_manage_allocs_on_correct_page) {
  TEST_REQUIRE_FEATURE(CUBERT_FEATURE_PAGED_POOLS);
  allocs_on_correct_page();
}
TEST(memory_manage_noslice_allocs_on_correct_page) {
  TEST_REQUIRE_FEATURE(CUBERT_FEATURE_PAGED_POOLS);
  allocs_on_correct_page();
}

/* ---- resolution ----------------------------------------------------------------- */

TEST(memory_manage_resolve_absent_pools_config_keeps_runtime_choice) {
  cubert_memory_configuration_t out, choice;
  choice = cubert_memory_configuration_default(false);
  CHECK_OK(cubert_memory_configuration_resolve(&choice, NULL, mmf_props(DUMMY_PAGE, 32), false,
                                               NULL, 0, &out, NULL));
  CHECK(out.kind == CUBERT_MEMORY_CONFIGURATION_SUB_SLICES);
  choice = cubert_memory_configuration_default(true);
  CHECK_OK(cubert_memory_configuration_resolve(&choice, NULL, mmf_props(DUMMY_PAGE, 32), false,
                                               NULL, 0, &out, NULL));
  CHECK(out.kind == CUBERT_MEMORY_CONFIGURATION_EXCLUSIVE_PAGES);
}

TEST(memory_manage_resolve_preset_overrides_runtime_choice) {
  cubert_memory_configuration_t out, choice = cubert_memory_configuration_default(false);
  cubert_memory_pools_config_t pools;
  pools.kind = CUBERT_MEMORY_POOLS_PRESET_EXCLUSIVE_PAGES;
  pools.entries = NULL;
  pools.count = 0;
  CHECK_OK(cubert_memory_configuration_resolve(&choice, &pools, mmf_props(DUMMY_PAGE, 32), false,
                                               NULL, 0, &out, NULL));
  CHECK(out.kind == CUBERT_MEMORY_CONFIGURATION_EXCLUSIVE_PAGES);
  pools.kind = CUBERT_MEMORY_POOLS_PRESET_SUB_SLICES;
  choice = cubert_memory_configuration_default(true);
  CHECK_OK(cubert_memory_configuration_resolve(&choice, &pools, mmf_props(DUMMY_PAGE, 32), false,
                                               NULL, 0, &out, NULL));
  CHECK(out.kind == CUBERT_MEMORY_CONFIGURATION_SUB_SLICES);
}

TEST(memory_manage_resolve_rejects_sliced_pools_when_exclusive_only) {
  TEST_REQUIRE_FEATURE(CUBERT_FEATURE_PAGED_POOLS | CUBERT_FEATURE_ERROR_REASONS);
  cubert_memory_configuration_t out, choice = cubert_memory_configuration_default(true);
  cubert_memory_pools_config_t pools;
  cubert_memory_pool_options_t entry = cubert_memory_pool_sliced(1024, CUBERT_MEMORY_NONE, CUBERT_MEMORY_NONE);
  cubert_memory_pool_options_t buf[1];
  cubert_error_t err;
  pools.kind = CUBERT_MEMORY_POOLS_EXPLICIT;
  pools.entries = &entry;
  pools.count = 1;
  CHECK_STATUS(cubert_memory_configuration_resolve(&choice, &pools, mmf_props(DUMMY_PAGE, 32), true,
                                                   buf, 1, &out, &err),
               CUBERT_STATUS_CONFIG_INVALID);
  CHECK(cubert_error_kind(&err) == CUBERT_ERROR_CONFIG_SLICED_POOLS_UNAVAILABLE);
  pools.kind = CUBERT_MEMORY_POOLS_PRESET_SUB_SLICES;
  CHECK_STATUS(cubert_memory_configuration_resolve(&choice, &pools, mmf_props(DUMMY_PAGE, 32), true,
                                                   buf, 1, &out, &err),
               CUBERT_STATUS_CONFIG_INVALID);
  CHECK(cubert_error_kind(&err) == CUBERT_ERROR_CONFIG_PRESET_UNAVAILABLE);
  CHECK_EQ_STR(err.reason, "SubSlices");
}

TEST(memory_manage_resolve_explicit_list_aligns_and_defaults) {
  TEST_REQUIRE_FEATURE(CUBERT_FEATURE_PAGED_POOLS);
  cubert_memory_configuration_t out, choice = cubert_memory_configuration_default(false);
  cubert_memory_pools_config_t pools;
  cubert_memory_pool_options_t entries[2], buf[2];
  entries[0] = cubert_memory_pool_exclusive(8192, 10000);
  entries[1] = cubert_memory_pool_sliced(1000, CUBERT_MEMORY_NONE, 4096);
  pools.kind = CUBERT_MEMORY_POOLS_EXPLICIT;
  pools.entries = entries;
  pools.count = 2;
  CHECK_OK(cubert_memory_configuration_resolve(&choice, &pools, mmf_props(DUMMY_PAGE, 32), false,
                                               buf, 2, &out, NULL));
  CHECK(out.kind == CUBERT_MEMORY_CONFIGURATION_CUSTOM);
  CHECK_EQ_U64(out.pool_count, 2);
  CHECK(out.pools[0].type == CUBERT_MEMORY_POOL_EXCLUSIVE);
  CHECK_EQ_U64(out.pools[0].max_alloc_size, 8192);
  CHECK_EQ_U64(out.pools[0].dealloc_period, 10000);
  CHECK(out.pools[1].type == CUBERT_MEMORY_POOL_SLICED);
  CHECK_EQ_U64(out.pools[1].page_size, 1024);
  CHECK_EQ_U64(out.pools[1].max_slice_size, 1024);
  CHECK_EQ_U64(out.pools[1].max_pool_size, 4096);
}

static cubert_status_t resolve_list(const cubert_memory_pool_options_t *entries, uint32_t count,
                                    cubert_error_t *err) {
  cubert_memory_configuration_t out, choice = cubert_memory_configuration_default(false);
  cubert_memory_pools_config_t pools;
  static cubert_memory_pool_options_t buf[300];
  pools.kind = CUBERT_MEMORY_POOLS_EXPLICIT;
  pools.entries = entries;
  pools.count = count;
  return cubert_memory_configuration_resolve(&choice, &pools, mmf_props(DUMMY_PAGE, 32), false, buf,
                                             300, &out, err);
}

TEST(memory_manage_resolve_invalid_pool_configs_fail) {
  TEST_REQUIRE_FEATURE(CUBERT_FEATURE_PAGED_POOLS | CUBERT_FEATURE_ERROR_REASONS);
  cubert_error_t err;
  cubert_memory_pool_options_t e;
  static cubert_memory_pool_options_t many[255];
  uint32_t i;
  e = cubert_memory_pool_direct(CUBERT_MEMORY_NONE);
  CHECK_STATUS(resolve_list(&e, 0, &err), CUBERT_STATUS_CONFIG_INVALID);
  CHECK(cubert_error_kind(&err) == CUBERT_ERROR_CONFIG_EMPTY_POOL_LIST);
  e = cubert_memory_pool_sliced(0, CUBERT_MEMORY_NONE, CUBERT_MEMORY_NONE);
  CHECK_STATUS(resolve_list(&e, 1, &err), CUBERT_STATUS_CONFIG_INVALID);
  CHECK(cubert_error_kind(&err) == CUBERT_ERROR_CONFIG_ZERO_SIZE);
  CHECK_EQ_STR(err.reason, "page_size");
  e = cubert_memory_pool_sliced(1024, 2048, CUBERT_MEMORY_NONE);
  CHECK_STATUS(resolve_list(&e, 1, &err), CUBERT_STATUS_CONFIG_INVALID);
  CHECK(cubert_error_kind(&err) == CUBERT_ERROR_CONFIG_SLICE_LARGER_THAN_PAGE);
  CHECK_EQ_U64(err.field[0], 1024);
  CHECK_EQ_U64(err.field[1], 2048);
  e = cubert_memory_pool_sliced(2048, CUBERT_MEMORY_NONE, 1024);
  CHECK_STATUS(resolve_list(&e, 1, &err), CUBERT_STATUS_CONFIG_INVALID);
  CHECK(cubert_error_kind(&err) == CUBERT_ERROR_CONFIG_CAP_SMALLER_THAN_PAGE);
  CHECK_EQ_U64(err.field[0], 2048);
  CHECK_EQ_U64(err.field[1], 1024);
  e = cubert_memory_pool_sliced(KIB, CUBERT_MEMORY_NONE, 64 * GIB);
  CHECK_STATUS(resolve_list(&e, 1, &err), CUBERT_STATUS_CONFIG_INVALID);
  CHECK(cubert_error_kind(&err) == CUBERT_ERROR_CONFIG_TOO_MANY_PAGES);
  CHECK_EQ_U64(err.field[0], 67108864);
  for (i = 0; i < 255; i++) many[i] = cubert_memory_pool_exclusive(1024, CUBERT_MEMORY_NONE);
  CHECK_STATUS(resolve_list(many, 255, &err), CUBERT_STATUS_CONFIG_INVALID);
  CHECK(cubert_error_kind(&err) == CUBERT_ERROR_CONFIG_TOO_MANY_POOLS);
  CHECK_EQ_U64(err.field[0], 255);
  CHECK_OK(resolve_list(many, 254, &err)); /* the limit itself is fine */
  /* the other ZeroSize fields */
  e = cubert_memory_pool_sliced(1024, 0, CUBERT_MEMORY_NONE);
  CHECK_STATUS(resolve_list(&e, 1, &err), CUBERT_STATUS_CONFIG_INVALID);
  CHECK_EQ_STR(err.reason, "max_slice_size");
  e = cubert_memory_pool_sliced(1024, CUBERT_MEMORY_NONE, 0);
  CHECK_STATUS(resolve_list(&e, 1, &err), CUBERT_STATUS_CONFIG_INVALID);
  CHECK_EQ_STR(err.reason, "max_pool_size");
  e = cubert_memory_pool_exclusive(UINT64_MAX - 3, CUBERT_MEMORY_NONE);
  CHECK_STATUS(resolve_list(&e, 1, &err), CUBERT_STATUS_OVERFLOW);
}

TEST(memory_manage_resolved_single_arena_reuses_across_sizes) {
  TEST_REQUIRE_FEATURE(CUBERT_FEATURE_PAGED_POOLS);
  mm_fixture_t f;
  cubert_memory_configuration_t out, choice = cubert_memory_configuration_default(false);
  cubert_memory_pools_config_t pools;
  static cubert_memory_pool_options_t entry, buf[1];
  cubert_memory_id_t a;
  entry = cubert_memory_pool_sliced(MIB, CUBERT_MEMORY_NONE, CUBERT_MEMORY_NONE);
  pools.kind = CUBERT_MEMORY_POOLS_EXPLICIT;
  pools.entries = &entry;
  pools.count = 1;
  CHECK_OK(cubert_memory_configuration_resolve(&choice, &pools, mmf_props(DUMMY_PAGE, 32), false,
                                               buf, 1, &out, NULL));
  mmf_init(&f, DUMMY_PAGE, DUMMY_ALIGN, out);
  a = mmf_reserve(&f, 4 * KIB);
  mmf_drop(&f, a);
  a = mmf_reserve(&f, 512 * KIB);
  CHECK_EQ_U64(mmf_usage(&f).bytes_reserved, MIB);
  CHECK_EQ_U64(mmf_usage(&f).number_allocs, 1);
  CHECK_EQ_U64(f.storage.alloc_calls, 1);
  mmf_drop(&f, a);
  mmf_done(&f);
}

static void allocate_deallocate_reallocate(cubert_memory_configuration_kind_t kind, bool equal) {
  mm_fixture_t f;
  cubert_memory_id_t ids[5];
  cubert_memory_usage_t before, after;
  uint32_t i;
  mmf_init(&f, DUMMY_PAGE, DUMMY_ALIGN, mmf_kind(kind));
  for (i = 0; i < 5; i++) ids[i] = mmf_reserve(&f, 1000 * (i + 1));
  before = mmf_usage(&f);
  for (i = 0; i < 5; i++) mmf_drop(&f, ids[i]);
  for (i = 0; i < 5; i++) ids[i] = mmf_reserve(&f, 1000 * (i + 1));
  after = mmf_usage(&f);
  CHECK_EQ_U64(after.number_allocs, before.number_allocs);
  CHECK_EQ_U64(after.bytes_in_use, before.bytes_in_use);
  if (equal) CHECK_EQ_U64(after.bytes_reserved, before.bytes_reserved);
  else CHECK(after.bytes_reserved <= before.bytes_reserved);
  for (i = 0; i < 5; i++) mmf_drop(&f, ids[i]);
  mmf_done(&f);
}

TEST(memory_manage_allocate_deallocate_reallocate) {
  allocate_deallocate_reallocate(CUBERT_MEMORY_CONFIGURATION_SUB_SLICES, false);
}
TEST(memory_manage_noslice_allocate_deallocate_reallocate) {
  allocate_deallocate_reallocate(CUBERT_MEMORY_CONFIGURATION_EXCLUSIVE_PAGES, true);
}

TEST(memory_manage_test_fragmentation_resistance) {
  static const uint64_t sizes[7] = {50, 1000, 100, 5000, 200, 10000, 300};
  static const uint64_t more[3] = {50, 1000, 100};
  mm_fixture_t f;
  cubert_memory_id_t ids[7], extra[3];
  uint64_t before, after;
  uint32_t i;
  mmf_init(&f, DUMMY_PAGE, DUMMY_ALIGN, mmf_kind(CUBERT_MEMORY_CONFIGURATION_SUB_SLICES));
  for (i = 0; i < 7; i++) ids[i] = mmf_reserve(&f, sizes[i]);
  before = mmf_usage(&f).bytes_reserved;
  for (i = 0; i < 7; i += 2) { /* drop clones of every other one */
    CHECK_OK(cubert__memory_id_retain_handle(f.table, ids[i]));
    mmf_drop(&f, ids[i]);
  }
  for (i = 0; i < 3; i++) extra[i] = mmf_reserve(&f, more[i]);
  after = mmf_usage(&f).bytes_reserved;
  CHECK(after * 10 <= before * 11);
  for (i = 0; i < 7; i++) mmf_drop(&f, ids[i]);
  for (i = 0; i < 3; i++) mmf_drop(&f, extra[i]);
  mmf_done(&f);
}

TEST(memory_manage_noslice_alloc_two_chunk) {
  TEST_REQUIRE_FEATURE(CUBERT_FEATURE_PAGED_POOLS);
  mm_fixture_t f;
  cubert_memory_id_t a, b;
  one_pool(&f, cubert_memory_pool_exclusive(1024, CUBERT_MEMORY_NONE), DUMMY_ALIGN);
  a = mmf_reserve(&f, 512);
  b = mmf_reserve(&f, 512);
  CHECK_EQ_U64(mmf_usage(&f).number_allocs, 2);
  CHECK_EQ_U64(mmf_usage(&f).bytes_in_use, 1024);
  CHECK(mmf_usage(&f).bytes_reserved >= 1024);
  mmf_drop(&f, a);
  mmf_drop(&f, b);
  mmf_done(&f);
}

TEST(memory_manage_noslice_alloc_reuses_storage) {
  TEST_REQUIRE_FEATURE(CUBERT_FEATURE_PAGED_POOLS);
  mm_fixture_t f;
  cubert_memory_id_t a;
  one_pool(&f, cubert_memory_pool_exclusive(1024, CUBERT_MEMORY_NONE), DUMMY_ALIGN);
  a = mmf_reserve(&f, 512);
  mmf_drop(&f, a);
  a = mmf_reserve(&f, 512);
  CHECK_EQ_U64(mmf_usage(&f).number_allocs, 1);
  CHECK_EQ_U64(mmf_usage(&f).bytes_in_use, 512);
  CHECK(mmf_usage(&f).bytes_reserved >= 512);
  CHECK_EQ_U64(f.storage.alloc_calls, 1);
  mmf_drop(&f, a);
  mmf_done(&f);
}

TEST(memory_manage_noslice_alloc_allocs_new_storage) {
  TEST_REQUIRE_FEATURE(CUBERT_FEATURE_PAGED_POOLS);
  mm_fixture_t f;
  cubert_memory_id_t a, b;
  one_pool(&f, cubert_memory_pool_exclusive(1024, CUBERT_MEMORY_NONE), DUMMY_ALIGN);
  a = mmf_reserve(&f, 768);
  b = mmf_reserve(&f, 768);
  CHECK_EQ_U64(mmf_usage(&f).number_allocs, 2);
  CHECK_EQ_U64(mmf_usage(&f).bytes_in_use, 1536);
  CHECK(mmf_usage(&f).bytes_reserved >= 1536);
  mmf_drop(&f, a);
  mmf_drop(&f, b);
  mmf_done(&f);
}

TEST(memory_manage_noslice_alloc_respects_alignment_size) {
  TEST_REQUIRE_FEATURE(CUBERT_FEATURE_PAGED_POOLS);
  mm_fixture_t f;
  cubert_memory_id_t a, b;
  one_pool(&f, cubert_memory_pool_exclusive(1000, CUBERT_MEMORY_NONE), 50);
  a = mmf_reserve(&f, 40);
  b = mmf_reserve(&f, 40);
  CHECK_EQ_U64(mmf_usage(&f).bytes_padding, 20);
  mmf_drop(&f, a);
  mmf_drop(&f, b);
  mmf_done(&f);
}

/* options.padded (a server's stream slots, issue 27): the manager and its
 * pools are blocks of whole CUBERT_FALSE_SHARING_BYTES spans on a span
 * boundary, so two streams' managers and pools, written at every
 * reservation by two threads, never share a line or a prefetched line pair
 * with anything; without it nothing is padded. An allocator over the
 * counting one sees the requests; a failed allocation of any block of a
 * padded manager leaves nothing behind. */
typedef struct span_watch_t {
  cubert_allocator_t inner;
  int spans;      /* allocations asked with the span's alignment */
  int bad_spans;  /* ... of a size that is not whole spans */
} span_watch_t;

static void *span_watch_fn(void *self, void *ptr, size_t old_size, size_t new_size, size_t align) {
  span_watch_t *w = (span_watch_t *)self;
  if (new_size && align >= CUBERT_FALSE_SHARING_BYTES) {
    w->spans++;
    if (new_size % CUBERT_FALSE_SHARING_BYTES) w->bad_spans++;
  }
  return w->inner.fn(w->inner.self, ptr, old_size, new_size, align);
}

/* A manager over *w (which must outlive it: the manager keeps its allocator). */
static int padded_spans(mm_fixture_t *f, span_watch_t *w, bool padded,
                        cubert_memory_manager_t **out) {
  cubert_memory_manager_options_t o;
  cubert_memory_configuration_t config = mmf_kind(CUBERT_MEMORY_CONFIGURATION_SUB_SLICES);
  cubert_allocator_t a;
  cubert_error_t err;
  cubert_memory_id_t id;
  uintptr_t span = CUBERT_FALSE_SHARING_BYTES;
  w->inner = f->allocator;
  w->spans = w->bad_spans = 0;
  a.self = w;
  a.fn = span_watch_fn;
  cubert__memory_manager_options_initialize(&o);
  CHECK(!o.padded);
  o.padded = padded;
  CHECK_OK(cubert__memory_manager_create(a, f->storage.storage, f->table, f->props, &config, &o,
                                         out, &err));
  CHECK(cubert__memory_manager_pool_count(*out) > 0);
  if (padded) {
    CHECK_EQ_U64((uintptr_t)*out % span, 0);
    CHECK_EQ_U64((uintptr_t)cubert__memory_manager_pool(*out, 0) % span, 0);
  }
  CHECK_OK(cubert__memory_manager_reserve(*out, 1000, &id, &err)); /* works as before */
  CHECK_OK(cubert__memory_id_release_handle(f->table, id));
  CHECK_EQ_I64(w->bad_spans, 0);
  return w->spans;
}

TEST(memory_manage_padded_managers_do_not_share_lines) {
  cubert_memory_manager_options_t o;
  cubert_memory_manager_t *mm[3] = {NULL, NULL, NULL};
  cubert_memory_configuration_t config = mmf_kind(CUBERT_MEMORY_CONFIGURATION_SUB_SLICES);
  cubert_error_t err;
  span_watch_t w[3];
  mm_fixture_t f;
  int i, fail;
  mmf_base(&f, 64 * MIB, 32);
  CHECK_EQ_I64(padded_spans(&f, &w[0], true, &mm[0]), 2); /* the manager, its pools */
  CHECK_EQ_I64(padded_spans(&f, &w[1], true, &mm[1]), 2);
  CHECK_EQ_I64(padded_spans(&f, &w[2], false, &mm[2]), 0);
  CHECK((uintptr_t)mm[0] / CUBERT_FALSE_SHARING_BYTES != (uintptr_t)mm[1] / CUBERT_FALSE_SHARING_BYTES);
  for (i = 0; i < 3; i++) cubert__memory_manager_destroy(mm[i]);
  cubert__memory_manager_options_initialize(&o);
  o.padded = true;
  for (fail = 1; fail <= 3; fail++) { /* the manager's block, the pool options, the pools' */
    cubert_memory_manager_t *none = NULL;
    int64_t live = f.counting.live_blocks;
    counting_allocator_fail_at(&f.counting, (uint64_t)fail, 0);
    CHECK_STATUS(cubert__memory_manager_create(f.allocator, f.storage.storage, f.table, f.props,
                                               &config, &o, &none, &err),
                 CUBERT_STATUS_RESOURCE_EXHAUSTED);
    CHECK(none == NULL);
    CHECK_EQ_I64(f.counting.live_blocks, live);
    counting_allocator_fail_at(&f.counting, 0, 0);
  }
  mmf_done(&f);
}
