/* SPDX-License-Identifier: MIT */
/*
 * Integrity under misuse (issue 25), the core's part (the conformance
 * suite's part: tests/cts/test_cts_misuse.c; the catalogue of hostile
 * inputs: tests/osile-inputs.md): the handle's layout, the rules of
 * cubert_completion_wait(NULL), of enums given to the error functions, and
 * of a SubSlices ladder whose alignment stops shrinking its pages.
 */
#include <stddef.h>
#include <string.h>

#include "test.h"
#include "cubert/client.h"
#include "cubert/error.h"
#include "cubert/handle.h"
#include "cubert/memory.h"
#include "cubert/driver/device.h"
#include "memory/memory.h"
#include "cubert/driver/error.h"
#include "device/device_registry.h"

/* The handle names its device in the word that was reserved: 56 bytes
 * before and after (cubert/handle.h). */
TEST(misuse_handle_layout_unchanged) {
  CHECK_EQ_U64(sizeof(cubert_handle_t), 56);
  CHECK_EQ_U64(offsetof(cubert_handle_t, device), 8);
  CHECK_EQ_U64(offsetof(cubert_handle_t, device_key), 12);
  CHECK_EQ_U64(offsetof(cubert_handle_t, stream), 16);
}

/* Instance numbers: never 0, a new one at each call. */
TEST(misuse_device_instance_numbers) {
  uint32_t a = cubert__device_registry_next_instance();
  uint32_t b = cubert__device_registry_next_instance();
  CHECK(a != 0 && b != 0 && a != b);
  CHECK(a <= 0xFFFFu && b <= 0xFFFFu);
}

/* cubert.h: every failing call fills the record; NULL completion included. */
TEST(misuse_completion_wait_null_fills_the_record) {
  TEST_REQUIRE_FEATURE(CUBERT_FEATURE_ERROR_REASONS);
  cubert_error_t err;
  memset(&err, 0, sizeof err);
  CHECK_STATUS(cubert_completion_wait(NULL, 0, &err), CUBERT_STATUS_INVALID_ARGUMENT);
  CHECK_EQ_U64(err.status, CUBERT_STATUS_INVALID_ARGUMENT);
  CHECK(cubert_error_kind(&err) == CUBERT_ERROR_INVALID_ARGUMENT);
  CHECK(strstr(err.reason, "completion is NULL") != NULL);
  CHECK_STATUS(cubert_completion_wait(NULL, UINT64_MAX, NULL), CUBERT_STATUS_INVALID_ARGUMENT);
}

TEST(misuse_error_functions_refuse_values_outside_their_enums) {
  TEST_REQUIRE_FEATURE(CUBERT_FEATURE_ERROR_REASONS);
  cubert_error_t err;
  CHECK_STATUS(cubert_error_set(&err, (cubert_error_kind_t)CUBERT_ERROR_KIND_COUNT_, NULL, 0, "x"),
               CUBERT_STATUS_INVALID_ARGUMENT);
  CHECK(cubert_error_kind(&err) == CUBERT_ERROR_INVALID_ARGUMENT);
  CHECK_EQ_U64(err.field[0], CUBERT_ERROR_KIND_COUNT_);
  CHECK(strstr(err.reason, "unknown error kind") != NULL);
  CHECK_STATUS(cubert_error_set(NULL, (cubert_error_kind_t)0x7FFFFFFF, NULL, 0, NULL),
               CUBERT_STATUS_INVALID_ARGUMENT);
  CHECK_STATUS(cubert_error_set_call(&err, (cubert_call_error_payload_t)3, "m"),
               CUBERT_STATUS_INVALID_ARGUMENT);
  CHECK_EQ_U64(err.field[0], 3);
  CHECK(strstr(err.reason, "unknown payload") != NULL);
  /* the enum's own values still work */
  CHECK_STATUS(cubert_error_set_call(&err, CUBERT_CALL_ERROR_PANIC_NON_STRING, NULL),
               CUBERT_STATUS_INTERNAL);
  CHECK(cubert_error_kind(&err) == CUBERT_ERROR_CALL_ERROR);
}

/* An alignment of 2^63 rounds every quarter page up to 2^63: the ladder
 * ends after one level (it used to run to the 64-level cap). */
TEST(misuse_sub_slices_with_a_huge_alignment) {
  TEST_REQUIRE_FEATURE(CUBERT_FEATURE_PAGED_POOLS);
  cubert_memory_configuration_t c = cubert_memory_configuration_default(false);
  cubert_memory_device_properties_t p;
  cubert_memory_pool_options_t pools[8];
  uint32_t n = 0;
  p.max_page_size = UINT64_MAX;
  p.alignment = (uint64_t)1 << 63;
  CHECK_OK(cubert_memory_configuration_pools(&c, p, pools, 8, &n, NULL));
  /* exclusive(0), one sliced level of 2^63, the exclusive tail */
  CHECK_EQ_U64(n, 3);
  CHECK(pools[1].type == CUBERT_MEMORY_POOL_SLICED);
  CHECK_EQ_U64(pools[1].page_size, (uint64_t)1 << 63);
  CHECK_EQ_U64(pools[2].max_alloc_size, (uint64_t)1 << 63);
  p.max_page_size = (uint64_t)1 << 30;
  CHECK_OK(cubert_memory_configuration_pools(&c, p, pools, 8, &n, NULL));
  CHECK_EQ_U64(n, 3);
}
