/* SPDX-License-Identifier: MIT */
/* Numbers that must be exact (issue 26), with CubeCL's answers: an empty
 * pitched tensor with a huge height, ExclusivePages buckets whose last size
 * sits at an integer, and the f64 dealloc period of sizes >= 2^53. (The
 * sweep over max_page 1..65536: tests/os/test_memory_buckets.c.) */
#include "test.h"

#include <string.h>

#include "cubert/layout.h"
#include "cubert/memory.h"
#include "memory/memory_internal.h"

static cubert_layout_descriptor_t desc3(uint64_t a, uint64_t b, uint64_t c) {
  cubert_layout_descriptor_t d;
  memset(&d, 0, sizeof d);
  d.strategy = CUBERT_LAYOUT_OPTIMIZED;
  d.rank = 3;
  d.shape[0] = a;
  d.shape[1] = b;
  d.shape[2] = c;
  d.elem_size = 1;
  return d;
}

/* [2^32, 2^32, 0], elem size 1: empty, size 0, pitched as contiguous. */
TEST(layout_pitched_empty_tensor_with_huge_height_is_size_0) {
  static const cubert_layout_policy_kind_t kinds[2] = {CUBERT_LAYOUT_POLICY_PITCHED,
                                                       CUBERT_LAYOUT_POLICY_CONTIGUOUS};
  cubert_layout_descriptor_t d = desc3((uint64_t)1 << 32, (uint64_t)1 << 32, 0);
  int k;
  for (k = 0; k < 2; k++) {
    cubert_layout_policy_t policy;
    cubert_layout_t l;
    uint64_t total = 99;
    cubert_error_t err;
    policy.kind = kinds[k];
    policy.mem_alignment = 512;
    CHECK_OK_E(cubert_layout_policy_apply(&policy, &d, 1, &l, &total, &err), err);
    CHECK_EQ_U64(l.size, 0);
    CHECK_EQ_U64(total, 0);
  }
  /* a non-empty row with the same height still overflows */
  {
    cubert_layout_policy_t policy;
    cubert_layout_t l;
    uint64_t total = 0;
    cubert_error_t err;
    policy.kind = CUBERT_LAYOUT_POLICY_PITCHED;
    policy.mem_alignment = 512;
    d = desc3((uint64_t)1 << 32, (uint64_t)1 << 32, 1);
    CHECK_STATUS(cubert_layout_policy_apply(&policy, &d, 1, &l, &total, &err),
                 CUBERT_STATUS_OVERFLOW);
  }
}

static uint32_t buckets(uint64_t max_page, uint64_t align, cubert_memory_pool_options_t *pools) {
  cubert_memory_configuration_t c = cubert_memory_configuration_default(true);
  cubert_memory_device_properties_t p;
  uint32_t n = 0;
  p.max_page_size = max_page;
  p.alignment = align;
  CHECK_OK(cubert_memory_configuration_pools(&c, p, pools, 32, &n, NULL));
  return n;
}

/* exp(ln(max)) is max when ln and exp are correctly rounded (CubeCL's answers). */
TEST(memory_exclusive_buckets_last_sizes_exact) {
  TEST_REQUIRE_FEATURE(CUBERT_FEATURE_PAGED_POOLS);
  cubert_memory_pool_options_t pools[32];
  uint32_t n;
  n = buckets(11, 1, pools);
  CHECK_EQ_U64(n, 24);
  CHECK_EQ_U64(pools[n - 1].max_alloc_size, 11); /* was 10 */
  CHECK_EQ_U64(pools[n - 2].max_alloc_size, 15);
  n = buckets(32783, 1, pools);
  CHECK_EQ_U64(n, 16);
  CHECK_EQ_U64(pools[n - 2].max_alloc_size, 32781); /* was 32782 */
  CHECK_EQ_U64(pools[n - 1].max_alloc_size, 32782); /* was 32783 */
  CHECK_EQ_U64(pools[0].max_alloc_size, 32767);
  n = buckets(65536, 256, pools);
  CHECK_EQ_U64(pools[n - 1].max_alloc_size, 65536);
}

/* CubeCL: (5000.0 * (1.0 + size as f64 / 2^30).round()) as u64: a size >= 2^53
 * rounds to a double first. */
TEST(memory_dealloc_period_rounds_the_size_as_f64) {
  const uint64_t two53 = (uint64_t)1 << 53, half_gib = (uint64_t)1 << 29;
  cubert_memory_configuration_t c = cubert_memory_configuration_default(false);
  cubert_memory_device_properties_t p;
  cubert_memory_pool_options_t pools[32];
  uint32_t n = 0;
  /* 2^53 + 2^29 - 1 is odd: as f64 it ties to the even 2^53 + 2^29 = (2^23 + 0.5) GiB,
   * which rounds away; exact arithmetic would give 2^23 + 1 */
  CHECK_EQ_U64(cubert__memory_dealloc_period(two53 + half_gib - 1), 5000 * (((uint64_t)1 << 23) + 2));
  CHECK_EQ_U64(cubert__memory_dealloc_period(two53 + half_gib - 2), 5000 * (((uint64_t)1 << 23) + 1));
  CHECK_EQ_U64(cubert__memory_dealloc_period(two53 - 1), 5000 * (((uint64_t)1 << 23) + 1));
  /* 2^64 - 1 as f64 is 2^64: 1 + 2^34 */
  CHECK_EQ_U64(cubert__memory_dealloc_period(UINT64_MAX), 5000 * (((uint64_t)1 << 34) + 1));
  CHECK_EQ_U64(cubert__memory_dealloc_period(((uint64_t)1 << 63) + half_gib - 1),
               5000 * (((uint64_t)1 << 33) + 2));
  CHECK_EQ_U64(cubert__memory_dealloc_period(3 * half_gib - 1), 10000); /* below 2^53: exact */
  /* the SubSlices tail of such a device */
  if (!(cubert_config_features() & CUBERT_FEATURE_PAGED_POOLS)) return;
  p.max_page_size = two53 + half_gib - 1;
  p.alignment = 1;
  CHECK_OK(cubert_memory_configuration_pools(&c, p, pools, 32, &n, NULL));
  CHECK_EQ_U64(pools[n - 1].type, CUBERT_MEMORY_POOL_EXCLUSIVE);
  CHECK_EQ_U64(pools[n - 1].max_alloc_size, two53 + half_gib - 1);
  CHECK_EQ_U64(pools[n - 1].dealloc_period, 5000 * (((uint64_t)1 << 23) + 2));
}
