/* SPDX-License-Identifier: MIT */
/*
 * Memory configurations (docs/cubecl-mapping.md, "Memory configuration"):
 * the SubSlices ladders and the ExclusivePages buckets (the exact numbers,
 * derived from CubeCL's algorithm, are the tests), custom layouts; usage
 * formatting.
 */
#include "test_memory_fixture.h"
#include "memory/memory.h"

typedef struct ladder_t {
  uint64_t page, slice;
} ladder_t;

static void check_ladder(uint64_t max_page, uint64_t align, const ladder_t *sliced, uint32_t nsliced,
                         uint64_t tail, uint64_t period) {
  cubert_memory_configuration_t c = mmf_kind(CUBERT_MEMORY_CONFIGURATION_SUB_SLICES);
  cubert_memory_pool_options_t pools[32];
  uint32_t n = 0, i;
  CHECK_OK(cubert_memory_configuration_pools(&c, mmf_props(max_page, align), pools, 32, &n, NULL));
  CHECK_EQ_U64(n, nsliced + 2);
  CHECK(pools[0].type == CUBERT_MEMORY_POOL_EXCLUSIVE);
  CHECK_EQ_U64(pools[0].max_alloc_size, 0);
  CHECK_EQ_U64(pools[0].dealloc_period, CUBERT_MEMORY_NONE);
  for (i = 0; i < nsliced; i++) {
    CHECK(pools[1 + i].type == CUBERT_MEMORY_POOL_SLICED);
    CHECK_EQ_U64(pools[1 + i].page_size, sliced[i].page);
    CHECK_EQ_U64(pools[1 + i].max_slice_size, sliced[i].slice);
    CHECK_EQ_U64(pools[1 + i].max_pool_size, CUBERT_MEMORY_NONE);
    CHECK_EQ_U64(pools[1 + i].dealloc_period, CUBERT_MEMORY_NONE);
  }
  CHECK(pools[n - 1].type == CUBERT_MEMORY_POOL_EXCLUSIVE);
  CHECK_EQ_U64(pools[n - 1].max_alloc_size, tail);
  CHECK_EQ_U64(pools[n - 1].dealloc_period, period);
}

/* ladders derived from CubeCL's SubSlices algorithm */
TEST(memory_config_sub_slices_ladder_128mib) {
  TEST_REQUIRE_FEATURE(CUBERT_FEATURE_PAGED_POOLS);
  static const ladder_t l[] = {{8 * MIB, 2 * MIB}, {32 * MIB, 16 * MIB}};
  check_ladder(128 * MIB, 32, l, 2, 128 * MIB, 5000);
}

TEST(memory_config_sub_slices_ladder_512mib) {
  TEST_REQUIRE_FEATURE(CUBERT_FEATURE_PAGED_POOLS);
  static const ladder_t l[] = {{8 * MIB, MIB}, {32 * MIB, 8 * MIB}, {128 * MIB, 64 * MIB}};
  check_ladder(512 * MIB, 32, l, 3, 512 * MIB, 10000);
}

TEST(memory_config_sub_slices_ladder_cuda_24gib) {
  TEST_REQUIRE_FEATURE(CUBERT_FEATURE_PAGED_POOLS);
  static const ladder_t l[] = {{24 * MIB, 3 * MIB / 2}, {96 * MIB, 12 * MIB},
                               {384 * MIB, 96 * MIB}, {3 * GIB / 2, 768 * MIB}};
  check_ladder(6 * GIB, 512, l, 4, 6 * GIB, 35000);
}

TEST(memory_config_sub_slices_ladder_cuda_80gib) {
  TEST_REQUIRE_FEATURE(CUBERT_FEATURE_PAGED_POOLS);
  static const ladder_t l[] = {{20 * MIB, 640 * KIB}, {80 * MIB, 5 * MIB}, {320 * MIB, 40 * MIB},
                               {5 * GIB / 4, 320 * MIB}, {5 * GIB, 5 * GIB / 2}};
  check_ladder(20 * GIB, 512, l, 5, 20 * GIB, 105000);
}

TEST(memory_config_sub_slices_ladder_cpu_64gib) {
  TEST_REQUIRE_FEATURE(CUBERT_FEATURE_PAGED_POOLS);
  static const ladder_t l[] = {{16 * MIB, 256 * KIB}, {64 * MIB, 2 * MIB}, {256 * MIB, 16 * MIB},
                               {GIB, 128 * MIB},       {4 * GIB, GIB},      {16 * GIB, 8 * GIB}};
  check_ladder(64 * GIB, 8, l, 6, 64 * GIB, 325000);
}

TEST(memory_config_sub_slices_small_device_has_no_sliced_pool) {
  TEST_REQUIRE_FEATURE(CUBERT_FEATURE_PAGED_POOLS);
  check_ladder(16 * MIB, 32, NULL, 0, 16 * MIB, 5000);
  check_ladder(1000, 32, NULL, 0, 992, 5000); /* floor(max/align)*align */
}

TEST(memory_config_exclusive_pages_buckets_128mib) {
  TEST_REQUIRE_FEATURE(CUBERT_FEATURE_PAGED_POOLS);
  static const uint64_t expected[24] = {
      32768,    47072,    67552,    96992,    139232,   199872,   286976,   411968,
      591456,   849152,   1219136,  1750272,  2512832,  3607616,  5179392,  7435968,
      10675712, 15326944, 22004640, 31591744, 45355776, 65116608, 93486912, 134217728};
  cubert_memory_configuration_t c = mmf_kind(CUBERT_MEMORY_CONFIGURATION_EXCLUSIVE_PAGES);
  cubert_memory_pool_options_t pools[32];
  uint32_t n = 0, i;
  CHECK_OK(cubert_memory_configuration_pools(&c, mmf_props(128 * MIB, 32), pools, 32, &n, NULL));
  CHECK_EQ_U64(n, 24);
  for (i = 0; i < 24; i++) {
    CHECK(pools[i].type == CUBERT_MEMORY_POOL_EXCLUSIVE);
    CHECK_EQ_U64(pools[i].max_alloc_size, expected[i]);
    CHECK_EQ_U64(pools[i].dealloc_period, 5000);
  }
}

TEST(memory_config_exclusive_pages_dedup_and_periods) {
  TEST_REQUIRE_FEATURE(CUBERT_FEATURE_PAGED_POOLS);
  cubert_memory_configuration_t c = mmf_kind(CUBERT_MEMORY_CONFIGURATION_EXCLUSIVE_PAGES);
  cubert_memory_pool_options_t pools[32];
  uint32_t n = 0, i;
  /* a huge alignment makes consecutive buckets equal: they are removed */
  CHECK_OK(cubert_memory_configuration_pools(&c, mmf_props(128 * MIB, 16 * MIB), pools, 32, &n, NULL));
  CHECK(n < 24);
  for (i = 1; i < n; i++) CHECK(pools[i].max_alloc_size > pools[i - 1].max_alloc_size);
  CHECK_EQ_U64(pools[n - 1].max_alloc_size, 128 * MIB);
  /* 20 GiB: the last bucket's period is 5000 * 21 */
  CHECK_OK(cubert_memory_configuration_pools(&c, mmf_props(20 * GIB, 512), pools, 32, &n, NULL));
  CHECK_EQ_U64(n, 24);
  CHECK_EQ_U64(pools[23].max_alloc_size, 20 * GIB);
  CHECK_EQ_U64(pools[23].dealloc_period, 105000);
  CHECK_EQ_U64(pools[0].max_alloc_size, 32768);
  /* a zero max page size has no buckets */
  CHECK_STATUS(cubert_memory_configuration_pools(&c, mmf_props(0, 32), pools, 32, &n, NULL),
               CUBERT_STATUS_CONFIG_INVALID);
}

TEST(memory_config_dealloc_period_rounds_half_away) {
  CHECK_EQ_U64(cubert__memory_dealloc_period(0), 5000);
  CHECK_EQ_U64(cubert__memory_dealloc_period(GIB / 2 - 1), 5000);
  CHECK_EQ_U64(cubert__memory_dealloc_period(GIB / 2), 10000); /* 1.5 rounds away from 0 */
  CHECK_EQ_U64(cubert__memory_dealloc_period(6 * GIB), 35000);
  CHECK_EQ_U64(cubert__memory_dealloc_period(64 * GIB), 325000);
}

TEST(memory_config_pools_capacity_and_arguments) {
  TEST_REQUIRE_FEATURE(CUBERT_FEATURE_PAGED_POOLS);
  cubert_memory_configuration_t c = mmf_kind(CUBERT_MEMORY_CONFIGURATION_SUB_SLICES);
  cubert_memory_pool_options_t pools[2];
  uint32_t n = 0;
  CHECK_STATUS(cubert_memory_configuration_pools(&c, mmf_props(128 * MIB, 32), pools, 2, &n, NULL),
               CUBERT_STATUS_OUT_OF_RANGE);
  CHECK_EQ_U64(n, 4); /* the needed count */
  CHECK_STATUS(cubert_memory_configuration_pools(&c, mmf_props(128 * MIB, 32), NULL, 0, &n, NULL),
               CUBERT_STATUS_OUT_OF_RANGE);
  CHECK_STATUS(cubert_memory_configuration_pools(NULL, mmf_props(128 * MIB, 32), pools, 2, &n, NULL),
               CUBERT_STATUS_INVALID_ARGUMENT);
  c.kind = (cubert_memory_configuration_kind_t)9;
  CHECK_STATUS(cubert_memory_configuration_pools(&c, mmf_props(128 * MIB, 32), pools, 2, &n, NULL),
               CUBERT_STATUS_INVALID_ARGUMENT);
}

TEST(memory_config_custom_checks) {
  TEST_REQUIRE_FEATURE(CUBERT_FEATURE_PAGED_POOLS);
  cubert_memory_pool_options_t in[2], out[2];
  cubert_memory_configuration_t c;
  cubert_error_t err;
  uint32_t n = 0;
  /* The pools are written before the configuration that points at them is built. */
  in[0] = cubert_memory_pool_exclusive(1000, CUBERT_MEMORY_NONE);
  in[1] = cubert_memory_pool_sliced(2048, CUBERT_MEMORY_NONE, 512); /* cap < page: allowed */
  c = mmf_custom(in, 2);
  CHECK_OK(cubert_memory_configuration_pools(&c, mmf_props(128 * MIB, 32), out, 2, &n, NULL));
  CHECK_EQ_U64(n, 2);
  CHECK_EQ_U64(out[0].max_alloc_size, 1024); /* exclusive max rounded up to the alignment */
  CHECK_EQ_U64(out[1].max_pool_size, 512);
  in[1].page_size = 0;
  CHECK_STATUS(cubert_memory_configuration_pools(&c, mmf_props(128 * MIB, 32), out, 2, &n, &err),
               CUBERT_STATUS_CONFIG_INVALID);
  CHECK(cubert_error_kind(&err) == CUBERT_ERROR_CONFIG_ZERO_SIZE);
  in[1].type = (cubert_memory_pool_type_t)7;
  CHECK_STATUS(cubert_memory_configuration_pools(&c, mmf_props(128 * MIB, 32), out, 2, &n, &err),
               CUBERT_STATUS_INVALID_ARGUMENT);
  c.pool_count = 255;
  CHECK_STATUS(cubert_memory_configuration_pools(&c, mmf_props(128 * MIB, 32), out, 2, &n, &err),
               CUBERT_STATUS_CONFIG_INVALID);
  CHECK(cubert_error_kind(&err) == CUBERT_ERROR_CONFIG_TOO_MANY_POOLS);
}

TEST(memory_config_resolve_arguments) {
  cubert_memory_configuration_t out, choice = cubert_memory_configuration_default(false);
  cubert_memory_pools_config_t pools;
  cubert_memory_pool_options_t entries[2], buf[1];
  entries[0] = cubert_memory_pool_direct(4096);
  entries[1] = cubert_memory_pool_direct(CUBERT_MEMORY_NONE);
  entries[1].dealloc_period = 77;
  pools.kind = CUBERT_MEMORY_POOLS_EXPLICIT;
  pools.entries = entries;
  pools.count = 2;
  out.kind = CUBERT_MEMORY_CONFIGURATION_SUB_SLICES;
  CHECK_STATUS(cubert_memory_configuration_resolve(&choice, &pools, mmf_props(128 * MIB, 32), false,
                                                   buf, 1, &out, NULL),
               CUBERT_STATUS_INVALID_ARGUMENT); /* buffer too small */
  CHECK(out.kind == CUBERT_MEMORY_CONFIGURATION_SUB_SLICES); /* untouched */
  CHECK_STATUS(cubert_memory_configuration_resolve(NULL, &pools, mmf_props(128 * MIB, 32), false,
                                                   buf, 1, &out, NULL),
               CUBERT_STATUS_INVALID_ARGUMENT);
  pools.kind = (cubert_memory_pools_config_kind_t)5;
  CHECK_STATUS(cubert_memory_configuration_resolve(&choice, &pools, mmf_props(128 * MIB, 32), false,
                                                   buf, 1, &out, NULL),
               CUBERT_STATUS_INVALID_ARGUMENT);
  pools.kind = CUBERT_MEMORY_POOLS_EXPLICIT;
  pools.count = 1;
  CHECK_OK(cubert_memory_configuration_resolve(&choice, &pools, mmf_props(128 * MIB, 32), false,
                                               buf, 1, &out, NULL));
  CHECK_EQ_U64(out.pools[0].reclaim_at, 4096);
  pools.entries = &entries[1];
  CHECK_OK(cubert_memory_configuration_resolve(&choice, &pools, mmf_props(128 * MIB, 32), false,
                                               buf, 1, &out, NULL));
  CHECK_EQ_U64(out.pools[0].dealloc_period, CUBERT_MEMORY_NONE); /* dropped for direct pools */
}

/* ---- usage formatting ------------------------------------------------------------- */

TEST(memory_config_bytes_format) {
  char buf[32];
  CHECK_EQ_U64(cubert_memory_bytes_format(999, buf, sizeof buf), 5);
  CHECK_EQ_STR(buf, "999 B");
  cubert_memory_bytes_format(1023, buf, sizeof buf);
  CHECK_EQ_STR(buf, "1023 B");
  cubert_memory_bytes_format(1024, buf, sizeof buf);
  CHECK_EQ_STR(buf, "1.00 KiB");
  cubert_memory_bytes_format(65536, buf, sizeof buf);
  CHECK_EQ_STR(buf, "64.00 KiB"); /* was "65.54 KB" */
  cubert_memory_bytes_format(1234567, buf, sizeof buf);
  CHECK_EQ_STR(buf, "1.18 MiB");
  cubert_memory_bytes_format(1048575, buf, sizeof buf);
  CHECK_EQ_STR(buf, "1024.00 KiB"); /* 1023.999 rounded */
  cubert_memory_bytes_format(32 * MIB, buf, sizeof buf);
  CHECK_EQ_STR(buf, "32.00 MiB");
  cubert_memory_bytes_format((uint64_t)1 << 30, buf, sizeof buf);
  CHECK_EQ_STR(buf, "1.00 GiB"); /* was "1.07 GB" */
  cubert_memory_bytes_format(((uint64_t)3 << 39), buf, sizeof buf);
  CHECK_EQ_STR(buf, "1.50 TiB");
  cubert_memory_bytes_format(UINT64_MAX, buf, sizeof buf);
  CHECK_EQ_STR(buf, "16.00 EiB");
  CHECK_EQ_U64(cubert_memory_bytes_format(1234567, buf, 3), 8); /* truncated, full length */
  CHECK_EQ_STR(buf, "1.");
  CHECK_EQ_U64(cubert_memory_bytes_format(5, NULL, 0), 3);
}

TEST(memory_config_usage_format) {
  cubert_memory_usage_t u;
  char buf[512];
  u.number_allocs = 2;
  u.bytes_in_use = 1500;
  u.bytes_padding = 20;
  u.bytes_reserved = 2048;
  cubert_memory_usage_format(&u, buf, sizeof buf);
  CHECK_EQ_STR(buf,
               "Memory Usage Report:\n"
               "  Number of allocations: 2\n"
               "  Bytes in use: 1.46 KiB\n"
               "  Bytes used for padding: 20 B\n"
               "  Total bytes reserved: 2.00 KiB\n"
               "  Usage efficiency: 73.24%\n"
               "  Padding overhead: 1.33%\n");
  memset(&u, 0, sizeof u);
  cubert_memory_usage_format(&u, buf, sizeof buf);
  CHECK(strstr(buf, "Usage efficiency: n/a\n") != NULL);
  CHECK(strstr(buf, "Padding overhead: n/a\n") != NULL);
  CHECK(strstr(buf, "NaN") == NULL);
  u.bytes_in_use = 5;
  cubert_memory_usage_format(&u, buf, sizeof buf);
  CHECK(strstr(buf, "Usage efficiency: n/a\n") != NULL);
  CHECK(strstr(buf, "Padding overhead: 0.00%\n") != NULL);
  CHECK(strstr(buf, "inf") == NULL);
  u.bytes_in_use = UINT64_MAX;
  u.bytes_reserved = UINT64_MAX;
  cubert_memory_usage_format(&u, buf, sizeof buf);
  CHECK(strstr(buf, "Usage efficiency: 100.00%") != NULL);
  CHECK_EQ_U64(cubert_memory_usage_format(NULL, buf, sizeof buf), 0);
}

TEST(memory_config_usage_combine_saturates) {
  cubert_memory_usage_t a, b, c;
  a.number_allocs = 1;
  a.bytes_in_use = 2;
  a.bytes_padding = 3;
  a.bytes_reserved = UINT64_MAX - 1;
  b = a;
  c = cubert_memory_usage_combine(a, b);
  CHECK_EQ_U64(c.number_allocs, 2);
  CHECK_EQ_U64(c.bytes_in_use, 4);
  CHECK_EQ_U64(c.bytes_padding, 6);
  CHECK_EQ_U64(c.bytes_reserved, UINT64_MAX);
}
