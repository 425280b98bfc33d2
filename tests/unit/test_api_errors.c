/* SPDX-License-Identifier: MIT */
/* The error records of the user-facing calls that gained out_error: the allocator and
 * arena, CommunicationId, cube counts and dims, io_optimized_vector_sizes, the
 * simulation's choosers and explorer, profile summaries. Each failing call leaves its
 * kind and a reason naming the argument in the record, and its outputs untouched. */
#include "test.h"
#include "counting_allocator.h"
#include "cubert/cubert.h"
#include "cubert/sim.h"

static cubert_error_t fresh(void) {
  cubert_error_t e;
  cubert_error_clear(&e);
  return e;
}

TEST(api_errors_allocator_records) {
  counting_allocator_t c;
  cubert_allocator_t a = counting_allocator_initialize(&c);
  cubert_allocator_t none = {NULL, NULL};
  cubert_error_t e = fresh();
  void *p = NULL;
  CHECK_STATUS(cubert_allocator_malloc(a, 16, 0, NULL, &e), CUBERT_STATUS_INVALID_ARGUMENT);
  CHECK_RECORD(e, CUBERT_ERROR_INVALID_ARGUMENT, "out_ptr is NULL");
  CHECK_STATUS(cubert_allocator_malloc(a, 0, 0, &p, &e), CUBERT_STATUS_INVALID_ARGUMENT);
  CHECK_RECORD(e, CUBERT_ERROR_INVALID_ARGUMENT, "size is 0");
  CHECK_STATUS(cubert_allocator_malloc(none, 16, 0, &p, &e), CUBERT_STATUS_INVALID_ARGUMENT);
  CHECK_RECORD(e, CUBERT_ERROR_INVALID_ARGUMENT, "no function");
  CHECK_STATUS(cubert_allocator_malloc(a, 16, 3, &p, &e), CUBERT_STATUS_INVALID_ARGUMENT);
  CHECK_RECORD(e, CUBERT_ERROR_INVALID_ARGUMENT, "align is not a power of two");
  CHECK_STATUS(cubert_allocator_malloc(cubert_allocator_null(), 40, 0, &p, &e),
               CUBERT_STATUS_RESOURCE_EXHAUSTED);
  CHECK_RECORD(e, CUBERT_ERROR_HOST_OUT_OF_MEMORY, "the allocator failed");
  CHECK_EQ_U64(e.field[0], 40);
  CHECK_STATUS(cubert_allocator_malloc_array(a, SIZE_MAX / 2 + 1, 2, 0, &p, &e),
               CUBERT_STATUS_OVERFLOW);
  CHECK_RECORD(e, CUBERT_ERROR_OVERFLOW, "count * size overflows");
  CHECK(p == NULL); /* untouched */
  CHECK_OK(cubert_allocator_malloc(a, 16, 0, &p, &e));
  counting_allocator_fail_at(&c, 1, 0);
  {
    void *q = p;
    CHECK_STATUS(cubert_allocator_realloc(a, p, 16, 64, 0, &q, &e),
                 CUBERT_STATUS_RESOURCE_EXHAUSTED);
    CHECK_RECORD(e, CUBERT_ERROR_HOST_OUT_OF_MEMORY, "failed to resize");
    CHECK_EQ_U64(e.field[0], 64);
    CHECK(q == p); /* the old block stays the caller's */
  }
  CHECK_STATUS(cubert_allocator_realloc(a, p, 16, 0, 0, &p, &e), CUBERT_STATUS_INVALID_ARGUMENT);
  CHECK_RECORD(e, CUBERT_ERROR_INVALID_ARGUMENT, "size is 0");
  cubert_allocator_free(a, p, 16, 0);
  CHECK_EQ_I64(c.live_blocks, 0);
  counting_allocator_destroy(&c);
}

TEST(api_errors_arena_records) {
  cubert_arena_t arena;
  cubert_allocator_t a = {NULL, NULL};
  unsigned char buffer[64];
  cubert_error_t e = fresh();
  CHECK_STATUS(cubert_arena_initialize(NULL, buffer, sizeof buffer, &a, &e),
               CUBERT_STATUS_INVALID_ARGUMENT);
  CHECK_RECORD(e, CUBERT_ERROR_INVALID_ARGUMENT, "arena is NULL");
  CHECK_STATUS(cubert_arena_initialize(&arena, buffer, sizeof buffer, NULL, &e),
               CUBERT_STATUS_INVALID_ARGUMENT);
  CHECK_RECORD(e, CUBERT_ERROR_INVALID_ARGUMENT, "out_allocator is NULL");
  CHECK_STATUS(cubert_arena_initialize(&arena, NULL, 8, &a, &e), CUBERT_STATUS_INVALID_ARGUMENT);
  CHECK_RECORD(e, CUBERT_ERROR_INVALID_ARGUMENT, "buffer is NULL");
  CHECK(a.fn == NULL); /* untouched */
  CHECK_OK(cubert_arena_initialize(&arena, NULL, 0, &a, &e));
}

TEST(api_errors_communication_id_records) {
  cubert_device_id_t devices[CUBERT_COMMUNICATION_MAX_DEVICES + 1];
  uint64_t id = 7;
  cubert_error_t e = fresh();
  memset(devices, 0, sizeof devices);
  CHECK_STATUS(cubert_communication_id(devices, 2, NULL, &e), CUBERT_STATUS_INVALID_ARGUMENT);
  CHECK_RECORD(e, CUBERT_ERROR_INVALID_ARGUMENT, "out_id is NULL");
  CHECK_STATUS(cubert_communication_id(NULL, 2, &id, &e), CUBERT_STATUS_INVALID_ARGUMENT);
  CHECK_RECORD(e, CUBERT_ERROR_INVALID_ARGUMENT, "devices is NULL");
  CHECK_STATUS(cubert_communication_id(devices, CUBERT_COMMUNICATION_MAX_DEVICES + 1, &id, &e),
               CUBERT_STATUS_OUT_OF_RANGE);
  CHECK_RECORD(e, CUBERT_ERROR_OUT_OF_RANGE, "more devices than");
  CHECK_EQ_U64(e.field[0], CUBERT_COMMUNICATION_MAX_DEVICES + 1);
  CHECK_EQ_U64(e.field[1], CUBERT_COMMUNICATION_MAX_DEVICES);
  CHECK_EQ_U64(id, 7); /* untouched */
}

TEST(api_errors_cube_count_records) {
  cubert_cube_count_t count = cubert_cube_count_new_3d(100, 2, 3);
  cubert_cube_count_selection_t selection;
  cubert_dim3_t out = {9, 9, 9}, max = {4, 4, 4}, zero_x = {0, 4, 4};
  char text[4];
  size_t len = 0;
  cubert_error_t e = fresh();
  CHECK_STATUS(cubert_cube_count_format(NULL, text, sizeof text, &len, &e),
               CUBERT_STATUS_INVALID_ARGUMENT);
  CHECK_RECORD(e, CUBERT_ERROR_INVALID_ARGUMENT, "count is NULL");
  CHECK_STATUS(cubert_cube_count_format(&count, NULL, 8, &len, &e),
               CUBERT_STATUS_INVALID_ARGUMENT);
  CHECK_RECORD(e, CUBERT_ERROR_INVALID_ARGUMENT, "buffer is NULL");
  CHECK_STATUS(cubert_cube_count_format(&count, text, sizeof text, &len, &e),
               CUBERT_STATUS_OUT_OF_RANGE);
  CHECK_RECORD(e, CUBERT_ERROR_OUT_OF_RANGE, "buffer too small");
  CHECK_EQ_U64(e.field[0], 12); /* "(100, 2, 3)" + NUL */
  CHECK_EQ_U64(e.field[1], sizeof text);
  count.kind = (cubert_cube_count_kind_t)7;
  CHECK_STATUS(cubert_cube_count_format(&count, text, sizeof text, &len, &e),
               CUBERT_STATUS_INVALID_ARGUMENT);
  CHECK_RECORD(e, CUBERT_ERROR_INVALID_ARGUMENT, "unknown count kind");
  CHECK_EQ_U64(len, 0);
  CHECK_STATUS(cubert_cube_count_spread(max, 10, NULL, &e), CUBERT_STATUS_INVALID_ARGUMENT);
  CHECK_RECORD(e, CUBERT_ERROR_INVALID_ARGUMENT, "out_counts is NULL");
  CHECK_STATUS(cubert_cube_count_spread(zero_x, 10, &out, &e), CUBERT_STATUS_INVALID_ARGUMENT);
  CHECK_RECORD(e, CUBERT_ERROR_INVALID_ARGUMENT, "max x is 0");
  max.x = 1;
  CHECK_STATUS(cubert_cube_count_spread(max, 0x80000001u, &out, &e), CUBERT_STATUS_OVERFLOW);
  CHECK_RECORD(e, CUBERT_ERROR_OVERFLOW, "exceeds UINT32_MAX");
  CHECK_EQ_U64(out.x, 9); /* untouched */
  CHECK_STATUS(cubert_cube_count_selection_new(max, 10, NULL, &e), CUBERT_STATUS_INVALID_ARGUMENT);
  CHECK_RECORD(e, CUBERT_ERROR_INVALID_ARGUMENT, "out_selection is NULL");
  CHECK_STATUS(cubert_cube_count_selection_new(zero_x, 10, &selection, &e),
               CUBERT_STATUS_INVALID_ARGUMENT);
  CHECK_RECORD(e, CUBERT_ERROR_INVALID_ARGUMENT, "max x is 0"); /* the spread's record */
}

TEST(api_errors_elemwise_and_cube_dim_records) {
  cubert_dim3_t max = {65535, 65535, 65535};
  cubert_cube_dim_t dim = cubert_cube_dim_new_1d(256), no_units = cubert_cube_dim_new_3d(0, 1, 1);
  cubert_cube_dim_t huge = cubert_cube_dim_new_3d(UINT32_MAX, UINT32_MAX, UINT32_MAX);
  cubert_cube_count_t count = cubert_cube_count_new_single();
  cubert_hardware_properties_t hw;
  uint64_t n = 5;
  cubert_error_t e = fresh();
  CHECK_STATUS(cubert_calculate_cube_count_elemwise(max, 10, dim, NULL, &e),
               CUBERT_STATUS_INVALID_ARGUMENT);
  CHECK_RECORD(e, CUBERT_ERROR_INVALID_ARGUMENT, "out_count is NULL");
  CHECK_STATUS(cubert_calculate_cube_count_elemwise(max, 10, no_units, &count, &e),
               CUBERT_STATUS_INVALID_ARGUMENT);
  CHECK_RECORD(e, CUBERT_ERROR_INVALID_ARGUMENT, "0 units");
  CHECK_STATUS(cubert_calculate_cube_count_elemwise(max, UINT64_MAX, cubert_cube_dim_new_single(),
                                                    &count, &e),
               CUBERT_STATUS_OVERFLOW);
  CHECK_RECORD(e, CUBERT_ERROR_OVERFLOW, "more than UINT32_MAX cubes");
  CHECK_STATUS(cubert_calculate_cube_count_elemwise(max, 10, huge, &count, &e),
               CUBERT_STATUS_OVERFLOW);
  CHECK_RECORD(e, CUBERT_ERROR_OVERFLOW, "overflows 64 bits");
  CHECK_EQ_U64(count.count.x, 1); /* untouched */
  CHECK_STATUS(cubert_cube_dim_num_elems(dim, NULL, &e), CUBERT_STATUS_INVALID_ARGUMENT);
  CHECK_RECORD(e, CUBERT_ERROR_INVALID_ARGUMENT, "out_num_elems is NULL");
  CHECK_STATUS(cubert_cube_dim_num_elems(huge, &n, &e), CUBERT_STATUS_OVERFLOW);
  CHECK_EQ_U64(n, 5);
  memset(&hw, 0, sizeof hw);
  CHECK_STATUS(cubert_cube_dim_new(NULL, 64, &dim, &e), CUBERT_STATUS_INVALID_ARGUMENT);
  CHECK_RECORD(e, CUBERT_ERROR_INVALID_ARGUMENT, "hardware is NULL");
  CHECK_STATUS(cubert_cube_dim_new(&hw, 64, NULL, &e), CUBERT_STATUS_INVALID_ARGUMENT);
  CHECK_RECORD(e, CUBERT_ERROR_INVALID_ARGUMENT, "out_dim is NULL");
  CHECK_STATUS(cubert_cube_dim_new(&hw, 64, &dim, &e), CUBERT_STATUS_INVALID_ARGUMENT);
  CHECK_RECORD(e, CUBERT_ERROR_INVALID_ARGUMENT, "plane_size_max is 0");
}

TEST(api_errors_io_vector_sizes_records) {
  uint32_t sizes[2] = {0, 0};
  size_t count = 99;
  cubert_error_t e = fresh();
  CHECK_STATUS(cubert_io_optimized_vector_sizes_from_limits(8, 128, 4, sizes, 2, NULL, &e),
               CUBERT_STATUS_INVALID_ARGUMENT);
  CHECK_RECORD(e, CUBERT_ERROR_INVALID_ARGUMENT, "out_count is NULL");
  CHECK_STATUS(cubert_io_optimized_vector_sizes_from_limits(8, 128, 0, sizes, 2, &count, &e),
               CUBERT_STATUS_INVALID_ARGUMENT);
  CHECK_RECORD(e, CUBERT_ERROR_INVALID_ARGUMENT, "elem_size is 0");
  CHECK_STATUS(cubert_io_optimized_vector_sizes_from_limits(8, 128, 4, NULL, 2, &count, &e),
               CUBERT_STATUS_INVALID_ARGUMENT);
  CHECK_RECORD(e, CUBERT_ERROR_INVALID_ARGUMENT, "out_sizes is NULL");
  /* 128 bits of 1-byte elements, max 16: sizes 16, 8, 4, 2, 1 do not fit 2 entries */
  CHECK_STATUS(cubert_io_optimized_vector_sizes_from_limits(64, 128, 1, sizes, 2, &count, &e),
               CUBERT_STATUS_OUT_OF_RANGE);
  CHECK_RECORD(e, CUBERT_ERROR_OUT_OF_RANGE, "capacity is below the count");
  CHECK_EQ_U64(e.field[0], 5);
  CHECK_EQ_U64(e.field[1], 2);
  CHECK_EQ_U64(count, 99); /* untouched */
  CHECK_STATUS(cubert_io_optimized_vector_sizes(NULL, 4, sizes, 2, &count, &e),
               CUBERT_STATUS_INVALID_ARGUMENT);
  CHECK_RECORD(e, CUBERT_ERROR_INVALID_ARGUMENT, "hardware is NULL");
}

TEST(api_errors_sim_chooser_records) {
  cubert_sim_chooser_t chooser;
  cubert_sim_explorer_t explorer;
  uint32_t choice[4], arity[4];
  cubert_error_t e = fresh();
  if (!(cubert_config_features() & CUBERT_FEATURE_SIMULATION)) {
    CHECK_STATUS(cubert_sim_chooser_initialize_seed(&chooser, 1, NULL, 0, &e),
                 CUBERT_STATUS_UNSUPPORTED);
    CHECK_RECORD(e, CUBERT_ERROR_COMPILED_OUT, "CUBERT_CONFIG_SIMULATION");
    return;
  }
  CHECK_STATUS(cubert_sim_chooser_initialize_seed(NULL, 1, NULL, 0, &e),
               CUBERT_STATUS_INVALID_ARGUMENT);
  CHECK_RECORD(e, CUBERT_ERROR_INVALID_ARGUMENT, "chooser is NULL");
  CHECK_STATUS(cubert_sim_chooser_initialize_seed(&chooser, 1, NULL, 4, &e),
               CUBERT_STATUS_INVALID_ARGUMENT);
  CHECK_RECORD(e, CUBERT_ERROR_INVALID_ARGUMENT, "log is NULL");
  CHECK_STATUS(cubert_sim_chooser_initialize_replay(&chooser, NULL, 3, NULL, 0, &e),
               CUBERT_STATUS_INVALID_ARGUMENT);
  CHECK_RECORD(e, CUBERT_ERROR_INVALID_ARGUMENT, "choices is NULL");
  CHECK_STATUS(cubert_sim_chooser_initialize_bytes(&chooser, NULL, 3, NULL, 0, &e),
               CUBERT_STATUS_INVALID_ARGUMENT);
  CHECK_RECORD(e, CUBERT_ERROR_INVALID_ARGUMENT, "bytes is NULL");
  CHECK_STATUS(cubert_sim_chooser_initialize_pct(&chooser, 1, 0, 10, NULL, 0, &e),
               CUBERT_STATUS_INVALID_ARGUMENT);
  CHECK_RECORD(e, CUBERT_ERROR_INVALID_ARGUMENT, "PCT depth");
  CHECK_STATUS(cubert_sim_chooser_initialize_pct(&chooser, 1, 2, 0, NULL, 0, &e),
               CUBERT_STATUS_INVALID_ARGUMENT);
  CHECK_RECORD(e, CUBERT_ERROR_INVALID_ARGUMENT, "steps_hint is 0");
  CHECK_STATUS(cubert_sim_chooser_initialize_explore(&chooser, NULL, NULL, 0, &e),
               CUBERT_STATUS_INVALID_ARGUMENT);
  CHECK_RECORD(e, CUBERT_ERROR_INVALID_ARGUMENT, "explorer is NULL");
  CHECK_STATUS(cubert_sim_explorer_initialize(NULL, choice, arity, 4, &e),
               CUBERT_STATUS_INVALID_ARGUMENT);
  CHECK_RECORD(e, CUBERT_ERROR_INVALID_ARGUMENT, "explorer is NULL");
  CHECK_STATUS(cubert_sim_explorer_initialize(&explorer, NULL, arity, 4, &e),
               CUBERT_STATUS_INVALID_ARGUMENT);
  CHECK_RECORD(e, CUBERT_ERROR_INVALID_ARGUMENT, "choice or arity is NULL");
  CHECK_STATUS(cubert_sim_explorer_initialize(&explorer, choice, arity, 0, &e),
               CUBERT_STATUS_INVALID_ARGUMENT);
  CHECK_RECORD(e, CUBERT_ERROR_INVALID_ARGUMENT, "capacity is 0");
}

TEST(api_errors_profile_summary_records) {
  counting_allocator_t c;
  cubert_allocator_t a = counting_allocator_initialize(&c);
  cubert_profile_summary_t *summary = NULL;
  uint64_t duration = 3, count = 4;
  cubert_error_t e = fresh();
  if (!(cubert_config_features() & CUBERT_FEATURE_PROFILING)) {
    CHECK_STATUS(cubert_profile_summary_record(NULL, "k", 1, &e), CUBERT_STATUS_UNSUPPORTED);
    CHECK_RECORD(e, CUBERT_ERROR_COMPILED_OUT, "CUBERT_CONFIG_PROFILING");
    counting_allocator_destroy(&c);
    return;
  }
  CHECK_OK(cubert_profile_summary_create(a, CUBERT_PROFILE_LEVEL_BASIC, 4, 64, &summary, &e));
  CHECK_STATUS(cubert_profile_summary_record(NULL, "k", 1, &e), CUBERT_STATUS_INVALID_ARGUMENT);
  CHECK_RECORD(e, CUBERT_ERROR_INVALID_ARGUMENT, "summary is NULL");
  CHECK_STATUS(cubert_profile_summary_record(summary, NULL, 1, &e),
               CUBERT_STATUS_INVALID_ARGUMENT);
  CHECK_RECORD(e, CUBERT_ERROR_INVALID_ARGUMENT, "name is NULL");
  CHECK_OK(cubert_profile_summary_record(summary, "k", 1, &e));
  CHECK_STATUS(cubert_profile_summary_lookup(summary, "other", &duration, &count, &e),
               CUBERT_STATUS_NOT_FOUND);
  CHECK_RECORD(e, CUBERT_ERROR_IO_NOT_FOUND, "no launch of this name");
  CHECK_EQ_U64(duration, 3); /* untouched */
  CHECK_EQ_U64(count, 4);
  CHECK_STATUS(cubert_profile_summary_lookup(NULL, "k", &duration, &count, &e),
               CUBERT_STATUS_INVALID_ARGUMENT);
  CHECK_RECORD(e, CUBERT_ERROR_INVALID_ARGUMENT, "summary is NULL");
  CHECK_OK(cubert_profile_summary_lookup(summary, "k", &duration, &count, &e));
  CHECK_EQ_U64(count, 1);
  cubert_profile_summary_destroy(summary);
  CHECK_EQ_I64(c.live_blocks, 0);
  counting_allocator_destroy(&c);
}
