/* SPDX-License-Identifier: MIT */
/*
 * CubeCL's pool-layout tests (tests/memory_pools_config.rs, props
 * 128 MiB / 32), its direct-pool vectors, install_pools
 * and the persistent_memory options.
 *
 * Not ported (cubert has no dry run / lazy backing):
 * a_measurement_maps_only_what_it_resolves,
 * dry_run_reservations_stay_unmapped_until_resolved,
 * dry_run_persistent_reservations_stay_unmapped,
 * a_warm_second_pass_measures_the_workload_alone (its scratch pass is an
 * autotune measurement under a dry run).
 */
#include "test_memory_fixture.h"
#include "memory/memory.h"

#define PAGE128 (128 * MIB)

static cubert_memory_configuration_t explicit_layout(const cubert_memory_pool_options_t *entries,
                                                     uint32_t count,
                                                     cubert_memory_pool_options_t *buf) {
  cubert_memory_configuration_t out, choice = cubert_memory_configuration_default(false);
  cubert_memory_pools_config_t pools;
  pools.kind = CUBERT_MEMORY_POOLS_EXPLICIT;
  pools.entries = entries;
  pools.count = count;
  CHECK_OK(cubert_memory_configuration_resolve(&choice, &pools, mmf_props(PAGE128, 32), false, buf,
                                               count, &out, NULL));
  return out;
}

static void layout(mm_fixture_t *f, const cubert_memory_pool_options_t *entries, uint32_t count) {
  static cubert_memory_pool_options_t buf[8];
  mmf_init(f, PAGE128, 32, explicit_layout(entries, count, buf));
}

TEST(memory_layout_programmatic_pools_override_runtime_default) {
  TEST_REQUIRE_FEATURE(CUBERT_FEATURE_PAGED_POOLS);
  mm_fixture_t f;
  cubert_memory_pool_options_t e = cubert_memory_pool_sliced(MIB, CUBERT_MEMORY_NONE, 2 * MIB);
  cubert_memory_id_t a, b, c, d, x;
  layout(&f, &e, 1);
  a = mmf_reserve(&f, 4 * KIB);
  b = mmf_reserve(&f, 512 * KIB);
  CHECK_EQ_U64(mmf_usage(&f).bytes_reserved, MIB);
  c = mmf_reserve(&f, MIB);
  d = mmf_reserve(&f, 500 * KIB);
  CHECK(cubert__memory_manager_reserve(f.mm, MIB, &x, NULL) != CUBERT_STATUS_OK);
  CHECK_EQ_U64(mmf_usage(&f).bytes_reserved, 2 * MIB);
  mmf_drop(&f, a);
  mmf_drop(&f, b);
  mmf_drop(&f, c);
  mmf_drop(&f, d);
  mmf_done(&f);
}

TEST(memory_layout_capped_pool_respects_max_slice_size) {
  TEST_REQUIRE_FEATURE(CUBERT_FEATURE_PAGED_POOLS);
  mm_fixture_t f;
  cubert_memory_pool_options_t e[2];
  cubert_memory_id_t ids[4], small;
  uint32_t i;
  e[0] = cubert_memory_pool_sliced(MIB, 64 * KIB, 2 * MIB);
  e[1] = cubert_memory_pool_sliced(16 * MIB, CUBERT_MEMORY_NONE, 32 * MIB);
  layout(&f, e, 2);
  for (i = 0; i < 4; i++) ids[i] = mmf_reserve(&f, MIB); /* no near-page strays in a capped pool */
  CHECK_EQ_U64(mmf_usage(&f).bytes_reserved, 16 * MIB);
  CHECK_EQ_U64(mmf_pool_report(&f, 0).pages, 0);
  small = mmf_reserve(&f, 4 * KIB);
  CHECK_EQ_U64(mmf_usage(&f).bytes_reserved, 17 * MIB);
  for (i = 0; i < 4; i++) mmf_drop(&f, ids[i]);
  mmf_drop(&f, small);
  mmf_done(&f);
}

TEST(memory_layout_configure_rebuilds_pools_in_place) {
  TEST_REQUIRE_FEATURE(CUBERT_FEATURE_PAGED_POOLS);
  mm_fixture_t f;
  cubert_memory_pool_options_t first = cubert_memory_pool_sliced(MIB, CUBERT_MEMORY_NONE, CUBERT_MEMORY_NONE);
  cubert_memory_pool_options_t second = cubert_memory_pool_sliced(4 * MIB, CUBERT_MEMORY_NONE, 8 * MIB);
  cubert_memory_pool_options_t buf[1];
  cubert_memory_configuration_t next;
  cubert_memory_id_t live, x;
  cubert_error_t err;
  layout(&f, &first, 1);
  live = mmf_reserve(&f, MIB);
  next = explicit_layout(&second, 1, buf);
  CHECK_STATUS(cubert__memory_manager_install_pools(f.mm, &next, f.props, &err),
               CUBERT_STATUS_FAILED_PRECONDITION);
  CHECK(cubert_error_kind(&err) == CUBERT_ERROR_INSTALL_POOLS_IN_USE);
  CHECK(err.field[0] > 0);
  CHECK_EQ_U64(err.field[0], MIB);
  CHECK(cubert__memory_manager_reserve(f.mm, 2 * MIB, &x, NULL) != CUBERT_STATUS_OK);
  CHECK_EQ_U64(mmf_storage(&f, live).size, MIB); /* old layout kept, live memory intact */
  mmf_drop(&f, live);
  CHECK_OK(cubert__memory_manager_install_pools(f.mm, &next, f.props, &err));
  CHECK_EQ_U64(f.storage.live_allocs, 0); /* the old page went at the cleanup */
  x = mmf_reserve(&f, 2 * MIB);
  CHECK_EQ_U64(mmf_pool_report(&f, 0).page_size, 4 * MIB);
  mmf_drop(&f, x);
  mmf_done(&f);
}

/* The workload of measured_plan_cycle: a, b 600 KiB; drop a; c 900 KiB; drop b, c. */
static void plan_workload(mm_fixture_t *f) {
  cubert_memory_id_t a, b, c;
  a = mmf_reserve(f, 600 * KIB);
  b = mmf_reserve(f, 600 * KIB);
  mmf_drop(f, a);
  c = mmf_reserve(f, 900 * KIB);
  mmf_drop(f, b);
  mmf_drop(f, c);
}

TEST(memory_layout_measured_plan_cycle) {
  TEST_REQUIRE_FEATURE(CUBERT_FEATURE_PAGED_POOLS);
  mm_fixture_t f;
  cubert_memory_pool_options_t grow = cubert_memory_pool_sliced(MIB, CUBERT_MEMORY_NONE, CUBERT_MEMORY_NONE);
  cubert_memory_pool_options_t capped, buf[1];
  cubert_memory_pool_report_t r;
  cubert_memory_configuration_t plan;
  layout(&f, &grow, 1);
  plan_workload(&f);
  r = mmf_pool_report(&f, 0);
  CHECK_EQ_U64(r.largest_alloc, 900 * KIB);
  CHECK_EQ_U64(r.pages_peak, 2);
  /* the plan: cap the arena at the measured peak */
  capped = cubert_memory_pool_sliced(MIB, CUBERT_MEMORY_NONE, r.pages_peak * MIB);
  plan = explicit_layout(&capped, 1, buf);
  cubert__memory_manager_cleanup(f.mm, true);
  CHECK_OK(cubert__memory_manager_install_pools(f.mm, &plan, f.props, NULL));
  CHECK_EQ_U64(mmf_pool_report(&f, 0).pages_peak, 0); /* high-water marks reset */
  plan_workload(&f);
  r = mmf_pool_report(&f, 0);
  CHECK_EQ_U64(r.pages_peak, 2);
  CHECK(!r.capacity_exceeded);
  mmf_done(&f);
}

TEST(memory_layout_full_capped_pool_spills_to_tail) {
  TEST_REQUIRE_FEATURE(CUBERT_FEATURE_PAGED_POOLS);
  mm_fixture_t f;
  cubert_memory_pool_options_t e[2];
  cubert_memory_id_t a, b;
  e[0] = cubert_memory_pool_sliced(MIB, CUBERT_MEMORY_NONE, MIB);
  e[1] = cubert_memory_pool_sliced(4 * MIB, CUBERT_MEMORY_NONE, CUBERT_MEMORY_NONE);
  layout(&f, e, 2);
  a = mmf_reserve(&f, MIB);
  b = mmf_reserve(&f, MIB);
  CHECK_EQ_U64(mmf_pool_report(&f, 0).pages_peak, 1);
  CHECK_EQ_U64(mmf_pool_report(&f, 1).pages_peak, 1);
  mmf_drop(&f, a);
  mmf_drop(&f, b);
  mmf_done(&f);
}

/* ---- direct pools ------------------------------------------------------------------ */

TEST(memory_layout_direct_pool_pads_only_to_alignment) {
  mm_fixture_t f;
  cubert_memory_pool_options_t e = cubert_memory_pool_direct(CUBERT_MEMORY_NONE);
  cubert_memory_id_t a;
  layout(&f, &e, 1);
  a = mmf_reserve(&f, 700 * 1024 + 17);
  CHECK_EQ_U64(mmf_usage(&f).bytes_reserved, 716832);
  CHECK_EQ_U64(mmf_usage(&f).bytes_padding, 716832 - (700 * 1024 + 17));
  CHECK_EQ_U64(mmf_storage(&f, a).size, 700 * 1024 + 17);
  CHECK(mmf_pool_report(&f, 0).kind == CUBERT_MEMORY_POOL_KIND_DIRECT);
  mmf_drop(&f, a);
  mmf_done(&f);
}

TEST(memory_layout_direct_pool_reuses_below_the_ceiling) {
  mm_fixture_t f;
  cubert_memory_pool_options_t e = cubert_memory_pool_direct(8 * MIB);
  cubert_memory_id_t a;
  uint32_t i;
  layout(&f, &e, 1);
  for (i = 0; i < 4; i++) {
    a = mmf_reserve(&f, 300 * KIB);
    mmf_drop(&f, a);
  }
  CHECK_EQ_U64(mmf_pool_report(&f, 0).pages_peak, 1);
  CHECK_EQ_U64(f.storage.alloc_calls, 1);
  mmf_done(&f);
}

TEST(memory_layout_direct_pool_reclaims_at_the_ceiling) {
  mm_fixture_t f;
  cubert_memory_pool_options_t e = cubert_memory_pool_direct(7 * MIB);
  cubert_memory_id_t a;
  cubert_memory_pool_report_t r;
  uint32_t i;
  layout(&f, &e, 1);
  for (i = 1; i <= 3; i++) {
    a = mmf_reserve(&f, i * MIB);
    mmf_drop(&f, a);
  }
  r = mmf_pool_report(&f, 0);
  CHECK_EQ_U64(r.pages, 3);
  CHECK_EQ_U64(r.usage.bytes_reserved, 6 * MIB);
  a = mmf_reserve(&f, 4 * MIB); /* releases the 1 and 2 MiB slices only */
  r = mmf_pool_report(&f, 0);
  CHECK_EQ_U64(r.pages, 2);
  CHECK_EQ_U64(r.usage.bytes_reserved, 7 * MIB);
  CHECK_EQ_U64(r.largest_free, 3 * MIB);
  mmf_drop(&f, a);
  mmf_done(&f);
}

TEST(memory_layout_direct_pool_ceiling_is_a_watermark) {
  /* nothing free to release: the allocation proceeds above reclaim_at */
  mm_fixture_t f;
  cubert_memory_pool_options_t e = cubert_memory_pool_direct(MIB);
  cubert_memory_id_t a, b;
  layout(&f, &e, 1);
  a = mmf_reserve(&f, MIB);
  b = mmf_reserve(&f, MIB);
  CHECK_EQ_U64(mmf_usage(&f).bytes_reserved, 2 * MIB);
  mmf_drop(&f, a);
  mmf_drop(&f, b);
  mmf_done(&f);
}

TEST(memory_layout_direct_pool_cleanup_releases_everything_free) {
  mm_fixture_t f;
  cubert_memory_pool_options_t e = cubert_memory_pool_direct(CUBERT_MEMORY_NONE);
  cubert_memory_id_t live, freed;
  layout(&f, &e, 1);
  live = mmf_reserve(&f, MIB);
  freed = mmf_reserve(&f, 2 * MIB);
  mmf_drop(&f, freed);
  cubert__memory_manager_cleanup(f.mm, false); /* periodic: nothing */
  CHECK_EQ_U64(mmf_pool_report(&f, 0).pages, 2);
  cubert__memory_manager_cleanup(f.mm, true);
  CHECK_EQ_U64(mmf_pool_report(&f, 0).pages, 1);
  CHECK_EQ_U64(mmf_storage(&f, live).size, MIB);
  mmf_drop(&f, live);
  mmf_done(&f);
}

/* ---- install_pools -------------------------------------------------------------------- */

TEST(memory_layout_install_keeps_persistent_pool_and_rejects_bad_layouts) {
  TEST_REQUIRE_FEATURE(CUBERT_FEATURE_PAGED_POOLS | CUBERT_FEATURE_PERSISTENT_MEMORY);
  mm_fixture_t f;
  cubert_memory_pool_options_t bad = cubert_memory_pool_sliced(0, CUBERT_MEMORY_NONE, CUBERT_MEMORY_NONE);
  cubert_memory_configuration_t c = mmf_custom(&bad, 1);
  cubert_memory_id_t p;
  cubert_error_t err;
  mmf_init(&f, PAGE128, 32, mmf_kind(CUBERT_MEMORY_CONFIGURATION_SUB_SLICES));
  cubert__memory_manager_set_mode(f.mm, CUBERT_MEMORY_ALLOCATION_MODE_PERSISTENT);
  p = mmf_reserve(&f, 4096); /* persistent: does not block install */
  cubert__memory_manager_set_mode(f.mm, CUBERT_MEMORY_ALLOCATION_MODE_AUTO);
  CHECK_STATUS(cubert__memory_manager_install_pools(f.mm, &c, f.props, &err), CUBERT_STATUS_CONFIG_INVALID);
  CHECK_EQ_U64(cubert__memory_manager_pool_count(f.mm), 4); /* old layout kept */
  c = mmf_kind(CUBERT_MEMORY_CONFIGURATION_EXCLUSIVE_PAGES);
  CHECK_OK(cubert__memory_manager_install_pools(f.mm, &c, f.props, &err));
  CHECK_EQ_U64(cubert__memory_manager_pool_count(f.mm), 24);
  CHECK_EQ_U64(mmf_storage(&f, p).size, 4096);
  CHECK_EQ_U64(mmf_persistent_report(&f).usage.bytes_in_use, 4096);
  CHECK_STATUS(cubert__memory_manager_install_pools(f.mm, NULL, f.props, &err), CUBERT_STATUS_INVALID_ARGUMENT);
  mmf_drop(&f, p);
  mmf_done(&f);
}

TEST(memory_layout_install_out_of_host_memory_keeps_layout) {
  TEST_REQUIRE_FEATURE(CUBERT_FEATURE_PAGED_POOLS);
  mm_fixture_t f;
  cubert_memory_configuration_t c = mmf_kind(CUBERT_MEMORY_CONFIGURATION_EXCLUSIVE_PAGES);
  cubert_memory_id_t a;
  mmf_init(&f, PAGE128, 32, mmf_kind(CUBERT_MEMORY_CONFIGURATION_SUB_SLICES));
  counting_allocator_fail_at(&f.counting, 1, 1);
  CHECK_STATUS(cubert__memory_manager_install_pools(f.mm, &c, f.props, NULL),
               CUBERT_STATUS_RESOURCE_EXHAUSTED);
  counting_allocator_fail_at(&f.counting, 0, 0);
  CHECK_EQ_U64(cubert__memory_manager_pool_count(f.mm), 4);
  a = mmf_reserve(&f, 1000);
  mmf_drop(&f, a);
  mmf_done(&f);
}

/* ---- persistent_memory options --------------------------------------------------------- */

static void init_pm(mm_fixture_t *f, cubert_persistent_memory_t pm) {
  cubert_memory_manager_options_t o;
  cubert__memory_manager_options_initialize(&o);
  o.persistent_memory = pm;
  mmf_init_opts(f, PAGE128, 32, mmf_kind(CUBERT_MEMORY_CONFIGURATION_SUB_SLICES), &o);
}

TEST(memory_layout_persistent_memory_size_match) {
  TEST_REQUIRE_FEATURE(CUBERT_FEATURE_PAGED_POOLS | CUBERT_FEATURE_PERSISTENT_MEMORY);
  mm_fixture_t f;
  cubert_memory_id_t a, b, c, d;
  init_pm(&f, CUBERT_PERSISTENT_MEMORY_SIZE_MATCH);
  a = mmf_reserve(&f, 1024); /* no bucket: dynamic */
  CHECK_EQ_U64(mmf_persistent_report(&f).pages, 0);
  cubert__memory_manager_set_mode(f.mm, CUBERT_MEMORY_ALLOCATION_MODE_PERSISTENT);
  b = mmf_reserve(&f, 2048);
  cubert__memory_manager_set_mode(f.mm, CUBERT_MEMORY_ALLOCATION_MODE_AUTO);
  mmf_drop(&f, b);
  b = mmf_reserve(&f, 2040); /* Auto, padded size matches the bucket: reused */
  CHECK_EQ_U64(mmf_persistent_report(&f).pages, 1);
  CHECK_EQ_U64(mmf_persistent_report(&f).usage.bytes_in_use, 2040);
  c = mmf_reserve(&f, 2048); /* bucket exists, none free: a new persistent slice */
  CHECK_EQ_U64(mmf_persistent_report(&f).pages, 2);
  d = mmf_reserve(&f, 4096); /* no bucket: dynamic */
  CHECK_EQ_U64(mmf_persistent_report(&f).pages, 2);
  mmf_drop(&f, a);
  mmf_drop(&f, b);
  mmf_drop(&f, c);
  mmf_drop(&f, d);
  mmf_done(&f);
}

TEST(memory_layout_persistent_memory_enforced_and_disabled) {
  TEST_REQUIRE_FEATURE(CUBERT_FEATURE_PAGED_POOLS | CUBERT_FEATURE_PERSISTENT_MEMORY);
  mm_fixture_t f;
  cubert_memory_id_t a;
  cubert_memory_manager_options_t o;
  init_pm(&f, CUBERT_PERSISTENT_MEMORY_ENFORCED);
  CHECK(cubert__memory_manager_mode(f.mm) == CUBERT_MEMORY_ALLOCATION_MODE_PERSISTENT);
  cubert__memory_manager_set_mode(f.mm, CUBERT_MEMORY_ALLOCATION_MODE_AUTO); /* ignored */
  CHECK(cubert__memory_manager_mode(f.mm) == CUBERT_MEMORY_ALLOCATION_MODE_PERSISTENT);
  a = mmf_reserve(&f, 1000);
  CHECK_EQ_U64(mmf_persistent_report(&f).usage.number_allocs, 1);
  mmf_drop(&f, a);
  mmf_done(&f);

  init_pm(&f, CUBERT_PERSISTENT_MEMORY_DISABLED);
  cubert__memory_manager_set_mode(f.mm, CUBERT_MEMORY_ALLOCATION_MODE_PERSISTENT); /* ignored */
  CHECK(cubert__memory_manager_mode(f.mm) == CUBERT_MEMORY_ALLOCATION_MODE_AUTO);
  a = mmf_reserve(&f, 1000);
  CHECK_EQ_U64(mmf_persistent_report(&f).usage.number_allocs, 0);
  mmf_drop(&f, a);
  mmf_done(&f);

  /* an explicit initial mode wins over the option (CUDA's pinned manager) */
  cubert__memory_manager_options_initialize(&o);
  o.persistent_memory = CUBERT_PERSISTENT_MEMORY_ENFORCED;
  o.has_initial_mode = true;
  o.initial_mode = CUBERT_MEMORY_ALLOCATION_MODE_AUTO;
  mmf_init_opts(&f, PAGE128, 32, mmf_kind(CUBERT_MEMORY_CONFIGURATION_SUB_SLICES), &o);
  CHECK(cubert__memory_manager_mode(f.mm) == CUBERT_MEMORY_ALLOCATION_MODE_AUTO);
  mmf_done(&f);
}
