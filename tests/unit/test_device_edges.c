/* SPDX-License-Identifier: MIT */
/* tests/unit/test_device_edges.c: core/device paths the main tests leave out: a cube
 * dimension of 2^32 or more units, the direct handle's refusals, registry removal and
 * enumeration edges, the profiler keeping or wrapping every kind of error, an error
 * record whose status is OK, type names trimmed of every ASCII space, and summary names
 * whose hashes collide (they must stay apart). */
#include "test.h"
#include "counting_allocator.h"
#include "cubert/cube.h"
#include "cubert/device.h"
#include "cubert/profile.h"
#include "cubert/driver/device.h"
#include "device/device_registry.h"
#include "profile/profiler.h"

/* ---- cube counts -------------------------------------------------------------------- */

TEST(cube_elemwise_with_a_cube_of_2_pow_32_units) {
  cubert_dim3_t max = {65535, 65535, 65535}, dim = {65536, 65536, 1};
  cubert_cube_count_t count;
  /* fewer elements than one cube holds: one cube */
  CHECK_OK(cubert_calculate_cube_count_elemwise(max, 1000, dim, &count, NULL));
  CHECK_EQ_U64(count.count.x * (uint64_t)count.count.y * count.count.z, 1);
  /* 2^33 + 1 elements: three cubes */
  CHECK_OK(cubert_calculate_cube_count_elemwise(max, ((uint64_t)1 << 33) + 1, dim, &count, NULL));
  CHECK_EQ_U64(count.count.x * (uint64_t)count.count.y * count.count.z, 3);
}

/* ---- the direct device handle --------------------------------------------------------- */

static void lock_noop(void *self) { (void)self; }

TEST(device_direct_handle_refusals) {
  counting_allocator_t c;
  cubert_allocator_t a = counting_allocator_initialize(&c);
  cubert_device_handle_t h;
  cubert_lock_t lock;
  lock.self = NULL;
  lock.lock = lock_noop;
  lock.unlock = NULL;
  h.vtable = NULL;
  CHECK_STATUS(cubert_device_handle_direct_create(a, NULL, lock, &h), CUBERT_STATUS_INVALID_ARGUMENT);
  lock.unlock = lock_noop;
  lock.lock = NULL;
  CHECK_STATUS(cubert_device_handle_direct_create(a, NULL, lock, &h), CUBERT_STATUS_INVALID_ARGUMENT);
  lock.lock = lock_noop;
  CHECK_STATUS(cubert_device_handle_direct_create(a, NULL, lock, NULL), CUBERT_STATUS_INVALID_ARGUMENT);
  CHECK(h.vtable == NULL);
  CHECK_EQ_U64(c.calls, 0);
  CHECK_OK(cubert_device_handle_direct_create(a, NULL, lock, &h));
  h.vtable->destroy(NULL); /* a no-op */
  CHECK_EQ_I64(c.live_blocks, 1);
  h.vtable->destroy(h.self);
  CHECK_EQ_I64(c.live_blocks, 0);
  counting_allocator_destroy(&c);
}

/* ---- the registry ------------------------------------------------------------------------ */

TEST(device_registry_remove_unknown_and_enumerate_into_a_short_array) {
  cubert_device_id_t d[3], ids[1];
  int clients[3];
  int i;
  for (i = 0; i < 3; i++) {
    d[i].type_id = 41;
    d[i].index_id = (uint32_t)i;
    CHECK_OK(cubert__device_registry_insert(d[i], &clients[i]));
  }
  d[0].index_id = 99;
  CHECK_STATUS(cubert__device_registry_remove(d[0], &clients[0]), CUBERT_STATUS_NOT_FOUND);
  d[0].index_id = 0;
  /* three devices of type 41, room for one: the count of all, the first written */
  ids[0].type_id = 0;
  CHECK_EQ_U64(cubert__device_registry_enumerate(41, ids, 1), 3);
  CHECK_EQ_U64(ids[0].type_id, 41);
  for (i = 0; i < 3; i++) CHECK_OK(cubert__device_registry_remove(d[i], &clients[i]));
  CHECK_EQ_U64(cubert__device_registry_enumerate(41, NULL, 0), 0);
}

/* ---- the profiler ------------------------------------------------------------------------ */

#if CUBERT_CONFIG_PROFILING /* calls internals that are not built without it */
static uint64_t clock_zero(void *self) {
  (void)self;
  return 0;
}

static cubert_profiler_t *new_profiler(cubert_allocator_t a) {
  cubert_profiler_t *p = NULL;
  cubert_profile_clock_t clock;
  clock.self = NULL;
  clock.now_ns = clock_zero;
  CHECK_OK(cubert__profiler_create(a, clock, 4, &p, NULL));
  return p;
}

/* Start a token, fail the profiler with `in`, stop: the error the token gives back. */
static cubert_status_t fail_one(cubert_profiler_t *p, const cubert_error_t *in, cubert_error_t *out) {
  cubert_profiling_token_t t;
  cubert_profile_duration_t d;
  CHECK_OK(cubert__profiler_start(p, &t, NULL));
  CHECK_OK(cubert__profiler_error(p, in));
  return cubert__profiler_stop(p, t, &d, out);
}

TEST(profile_profiler_error_kinds_kept_or_wrapped) {
  TEST_REQUIRE_FEATURE(CUBERT_FEATURE_PROFILING);
  static const cubert_error_kind_t kept[] = {CUBERT_ERROR_PROFILE_NOT_REGISTERED,
                                             CUBERT_ERROR_PROFILE_LAUNCH,
                                             CUBERT_ERROR_PROFILE_SERVER};
  static const cubert_error_kind_t launch[] = {CUBERT_ERROR_LAUNCH_COMPILATION,
                                               CUBERT_ERROR_LAUNCH_TOO_MANY_RESOURCES,
                                               CUBERT_ERROR_LAUNCH_IO};
  counting_allocator_t c;
  cubert_profiler_t *p = new_profiler(counting_allocator_initialize(&c));
  cubert_error_t in, out;
  size_t i;
  for (i = 0; i < sizeof kept / sizeof kept[0]; i++) {
    cubert_error_set(&in, kept[i], NULL, 0, "kept");
    (void)fail_one(p, &in, &out);
    CHECK_EQ_U64(out.depth, 1); /* a profile error is stored as is */
    CHECK_EQ_I64(out.chain[0], kept[i]);
  }
  for (i = 0; i < sizeof launch / sizeof launch[0]; i++) {
    cubert_error_set(&in, launch[i], NULL, 0, "launch");
    (void)fail_one(p, &in, &out);
    CHECK_EQ_U64(out.depth, 2); /* a launch error becomes ProfileError::Launch */
    CHECK_EQ_I64(out.chain[0], CUBERT_ERROR_PROFILE_LAUNCH);
    CHECK_EQ_I64(out.chain[1], launch[i]);
  }
  CHECK_EQ_U64(cubert__profiler_active_count(p), 0);
  cubert__profiler_destroy(p);
  CHECK_EQ_I64(c.live_blocks, 0);
  counting_allocator_destroy(&c);
}

TEST(profile_profiler_error_with_status_ok_never_reads_ok) {
  TEST_REQUIRE_FEATURE(CUBERT_FEATURE_PROFILING);
  counting_allocator_t c;
  cubert_profiler_t *p = new_profiler(counting_allocator_initialize(&c));
  cubert_error_t in, out;
  cubert_error_set(&in, CUBERT_ERROR_PROFILE_UNKNOWN, NULL, 0, "odd");
  in.status = CUBERT_STATUS_OK; /* a record with a kind but status OK */
  CHECK_STATUS(fail_one(p, &in, &out), CUBERT_STATUS_PROFILE_FAILED);
  CHECK_STATUS(out.status, CUBERT_STATUS_PROFILE_FAILED);
  CHECK_EQ_I64(cubert_error_kind(&out), CUBERT_ERROR_PROFILE_UNKNOWN);
  cubert__profiler_destroy(p);
  CHECK_EQ_I64(c.live_blocks, 0);
  counting_allocator_destroy(&c);
}
#endif /* CUBERT_CONFIG_PROFILING */

/* ---- profiling text ------------------------------------------------------------------------ */

TEST(profile_format_type_name_trims_every_ascii_space) {
  TEST_REQUIRE_FEATURE(CUBERT_FEATURE_PROFILING);
  char buf[64];
  CHECK_EQ_U64(cubert_profile_format_type_name(" \t\n\v\f\rkernel\r\f\v\n\t ", buf, sizeof buf), 6);
  CHECK_EQ_STR(buf, "kernel");
  cubert_profile_format_type_name("a::\tb\v<\fc>", buf, sizeof buf);
  CHECK_EQ_STR(buf, "b | c");
}

/* ---- the summary table --------------------------------------------------------------------- */

static cubert_profile_summary_t *new_summary(cubert_allocator_t a, size_t name_bytes) {
  cubert_profile_summary_t *s = NULL;
  CHECK_OK(cubert_profile_summary_create(a, CUBERT_PROFILE_LEVEL_BASIC, 8, name_bytes, &s, NULL));
  return s;
}

TEST(profile_summary_names_with_equal_hashes_stay_apart) {
  TEST_REQUIRE_FEATURE(CUBERT_FEATURE_PROFILING);
  /* FNV-1a (32 bits) gives "glbvs" and "yacxa" one hash, and "nkohz" and "aaaaga" one
   * hash (different lengths): each name still gets its own row. */
  counting_allocator_t c;
  cubert_profile_summary_t *s = new_summary(counting_allocator_initialize(&c), 64);
  uint64_t dur = 0, count = 0;
  CHECK_OK(cubert_profile_summary_record(s, "glbvs", 1, NULL));
  CHECK_OK(cubert_profile_summary_record(s, "yacxa", 2, NULL));
  CHECK_OK(cubert_profile_summary_record(s, "nkohz", 4, NULL));
  CHECK_OK(cubert_profile_summary_record(s, "aaaaga", 8, NULL));
  CHECK_OK(cubert_profile_summary_record(s, "yacxa", 16, NULL));
  CHECK_EQ_U64(cubert_profile_summary_name_count(s), 4);
  CHECK_OK(cubert_profile_summary_lookup(s, "glbvs", &dur, &count, NULL));
  CHECK_EQ_U64(dur, 1);
  CHECK_EQ_U64(count, 1);
  CHECK_OK(cubert_profile_summary_lookup(s, "yacxa", &dur, &count, NULL));
  CHECK_EQ_U64(dur, 18);
  CHECK_EQ_U64(count, 2);
  CHECK_OK(cubert_profile_summary_lookup(s, "aaaaga", &dur, &count, NULL));
  CHECK_EQ_U64(dur, 8);
  cubert_profile_summary_destroy(s);
  CHECK_EQ_I64(c.live_blocks, 0);
  counting_allocator_destroy(&c);
}

TEST(profile_summary_with_only_the_other_row_is_not_empty) {
  TEST_REQUIRE_FEATURE(CUBERT_FEATURE_PROFILING);
  counting_allocator_t c;
  cubert_profile_summary_t *s = new_summary(counting_allocator_initialize(&c), 2);
  uint64_t dur = 0, count = 0;
  CHECK(cubert_profile_summary_is_empty(s));
  CHECK_OK(cubert_profile_summary_record(s, "too_long", 5, NULL)); /* no room for the name */
  CHECK_EQ_U64(cubert_profile_summary_name_count(s), 0);
  cubert_profile_summary_other(s, &dur, &count);
  CHECK_EQ_U64(count, 1);
  CHECK(!cubert_profile_summary_is_empty(s));
  cubert_profile_summary_destroy(s);
  CHECK_EQ_I64(c.live_blocks, 0);
  counting_allocator_destroy(&c);
}
