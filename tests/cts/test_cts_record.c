/* SPDX-License-Identifier: MIT */
/* Conformance: recorded launch sequences (cubert/record.h): record, replay,
 * argument updates, the refusals (operations that cannot be recorded, a
 * sequence that no longer fits), errors of replayed work, the race checker,
 * and the device reference a recording holds. */
#include "cts.h"

#include "cubert/cube.h"
#include "cubert/record.h"
#include "cubert_kernels.h"
#include "cts_kernels_launch.h"

/* 2 buffers, 16 bytes of dynamic shared memory and 4 units by default */
CUBERT_KERNEL_DESCRIPTOR(k_record_shape_probe, cts_shape_probe, 2, 0, 16, 4, 1, 1);

#define N 256 /* u32 elements per buffer: 4 cubes of CK_SMALL_BLOCK */

/* The record's reason holds `text` (a build without the reason texts,
 * CUBERT_CONFIG_ERROR_REASONS=0, checks the kinds and fields only). */
#define CHECK_REASON(err, text)                                                      \
  CHECK_MSG(!(cubert_config_features() & CUBERT_FEATURE_ERROR_REASONS) ||            \
                strstr((err).reason, (text)) != NULL,                                \
            "reason: %s", (err).reason)

static cubert_cube_count_t count_n(void) { return cubert_cube_count_new_1d(N / CK_SMALL_BLOCK); }

/* buf += delta (u32 scalar), recorded or run. */
static cubert_status_t add(cubert_client_t *c, const cubert_handle_t *h, uint32_t delta,
                           cubert_error_t *err) {
  cubert_launch_arguments_t a;
  cubert_cube_count_t count = count_n();
  cubert_launch_arguments_initialize(&a);
  cubert_launch_arguments_set_buffer(&a, 0, h);
  cubert_launch_arguments_set_u32(&a, 0, delta);
  return cubert_client_launch(c, &ck_add_scalar_u32_kernel, &count, &a, err);
}

/* dst = src * 2 */
static cubert_status_t twice(cubert_client_t *c, const cubert_handle_t *src, const cubert_handle_t *dst,
                             cubert_error_t *err) {
  cubert_launch_arguments_t a;
  cubert_cube_count_t count = count_n();
  cubert_launch_arguments_initialize(&a);
  cubert_launch_arguments_set_buffer(&a, 0, src);
  cubert_launch_arguments_set_buffer(&a, 1, dst);
  return cubert_client_launch(c, &ck_double_u32_kernel, &count, &a, err);
}

static void fill(uint32_t *v, uint32_t base) {
  uint32_t i;
  for (i = 0; i < N; i++) v[i] = base + i;
}

static void create(cubert_client_t *c, uint32_t base, cubert_handle_t *out) {
  uint32_t v[N];
  fill(v, base);
  CHECK_OK(cubert_client_create_from_slice(c, v, sizeof v, out, NULL));
}

/* every element i of h is base + i */
static void expect(cubert_client_t *c, const cubert_handle_t *h, uint32_t base) {
  uint32_t v[N], i;
  CHECK_OK(cubert_client_read_one(c, h, v, sizeof v, NULL));
  for (i = 0; i < N; i++)
    if (v[i] != base + i) {
      CHECK_MSG(0, "element %u is %u, expected %u", (unsigned)i, (unsigned)v[i],
                (unsigned)(base + i));
      return;
    }
}

/* Ten launches recorded run nowhere until replayed; each replay runs them all in order. */
TEST(cts_record_replay_runs_the_sequence) {
  cts_env_t env;
  cubert_handle_t h, d;
  cubert_recording_t *rec = NULL;
  uint32_t launches = 99, writes = 99, buffers = 99, i;
  cts_setup(&env, 0);
  create(env.client, 0, &h);
  CHECK_OK(cubert_client_empty(env.client, N * 4, &d, NULL));
  CHECK_OK(cubert_client_record_begin(env.client, NULL));
  for (i = 0; i < 9; i++) CHECK_OK(add(env.client, &h, 1, NULL));
  CHECK_OK(twice(env.client, &h, &d, NULL));
  CHECK_OK(cubert_client_record_end(env.client, &rec, NULL));
  cubert_recording_counts(rec, &launches, &writes, &buffers);
  CHECK_EQ_U64(launches, 10);
  CHECK_EQ_U64(writes, 0);
  CHECK_EQ_U64(buffers, 2);
  expect(env.client, &h, 0); /* nothing ran */
  for (i = 1; i <= 3; i++) {
    CHECK_OK(cubert_client_replay(env.client, rec, NULL));
    expect(env.client, &h, 9 * i);
  }
  {
    uint32_t v[N];
    CHECK_OK(cubert_client_read_one(env.client, &d, v, sizeof v, NULL));
    CHECK_EQ_U64(v[5], 2u * (27u + 5u));
  }
  /* an ordinary launch after the recording runs at once */
  CHECK_OK(add(env.client, &h, 100, NULL));
  expect(env.client, &h, 127);
  cubert_recording_destroy(rec);
  CHECK_OK(cubert_client_handle_release(env.client, &h, NULL));
  CHECK_OK(cubert_client_handle_release(env.client, &d, NULL));
  cts_teardown(&env);
}

/* New scalars per launch, new buffers per slot: the next replay uses them. */
TEST(cts_record_updates_scalars_and_buffers) {
  cts_env_t env;
  cubert_handle_t a, b, other;
  cubert_recording_t *rec = NULL;
  cubert_launch_arguments_t s;
  uint32_t slot = 99;
  cts_setup(&env, 0);
  create(env.client, 0, &a);
  create(env.client, 1000, &b);
  create(env.client, 5000, &other);
  CHECK_OK(cubert_client_record_begin(env.client, NULL));
  CHECK_OK(add(env.client, &a, 1, NULL));
  CHECK_OK(add(env.client, &b, 2, NULL));
  CHECK_OK(cubert_client_record_end(env.client, &rec, NULL));
  CHECK_OK(cubert_recording_find_buffer(rec, &b, &slot, NULL));
  CHECK_EQ_U64(slot, 1);
  CHECK_OK(cubert_client_replay(env.client, rec, NULL));
  expect(env.client, &a, 1);
  expect(env.client, &b, 1002);
  /* launch 1 now adds 10 */
  cubert_launch_arguments_initialize(&s);
  CHECK_OK(cubert_launch_arguments_set_u32(&s, 0, 10));
  CHECK_OK(cubert_recording_set_scalars(rec, 1, &s, NULL));
  /* slot 1 is now `other` */
  CHECK_OK(cubert_recording_set_buffer(rec, 1, &other, NULL));
  CHECK_OK(cubert_client_replay(env.client, rec, NULL));
  expect(env.client, &a, 2);
  expect(env.client, &b, 1002); /* untouched */
  expect(env.client, &other, 5010);
  cubert_recording_destroy(rec);
  CHECK_OK(cubert_client_handle_release(env.client, &a, NULL));
  CHECK_OK(cubert_client_handle_release(env.client, &b, NULL));
  CHECK_OK(cubert_client_handle_release(env.client, &other, NULL));
  cts_teardown(&env);
}

/* Updates that do not fit are refused with the record filled, the recording unchanged. */
TEST(cts_record_refuses_updates_that_do_not_fit) {
  cts_env_t env;
  cubert_handle_t a, small, view;
  cubert_recording_t *rec = NULL;
  cubert_launch_arguments_t s;
  cubert_error_t err;
  uint32_t slot;
  cts_setup(&env, 0);
  create(env.client, 0, &a);
  CHECK_OK(cubert_client_empty(env.client, N * 2, &small, NULL));
  CHECK_OK(cubert_client_record_begin(env.client, NULL));
  CHECK_OK(add(env.client, &a, 1, NULL));
  CHECK_OK(cubert_client_record_end(env.client, &rec, NULL));
  /* scalars: another type, another count, buffers given, no such launch */
  cubert_launch_arguments_initialize(&s);
  CHECK_OK(cubert_launch_arguments_set_f32(&s, 0, 1.0f));
  CHECK_STATUS(cubert_recording_set_scalars(rec, 0, &s, &err), CUBERT_STATUS_INVALID_ARGUMENT);
  CHECK(cubert_error_has_kind(&err, CUBERT_ERROR_SERVER_VALIDATION));
  CHECK_REASON(err, "type");
  cubert_launch_arguments_initialize(&s);
  CHECK_OK(cubert_launch_arguments_set_u32(&s, 0, 1));
  CHECK_OK(cubert_launch_arguments_set_u32(&s, 1, 1));
  CHECK_STATUS(cubert_recording_set_scalars(rec, 0, &s, &err), CUBERT_STATUS_INVALID_ARGUMENT);
  CHECK_REASON(err, "2 scalars");
  cubert_launch_arguments_initialize(&s);
  CHECK_OK(cubert_launch_arguments_set_u32(&s, 0, 1));
  CHECK_STATUS(cubert_recording_set_scalars(rec, 1, &s, &err), CUBERT_STATUS_OUT_OF_RANGE);
  CHECK_OK(cubert_launch_arguments_set_buffer(&s, 0, &a));
  CHECK_STATUS(cubert_recording_set_scalars(rec, 0, &s, &err), CUBERT_STATUS_INVALID_ARGUMENT);
  cubert_launch_arguments_initialize(&s);
  CHECK_STATUS(cubert_launch_arguments_set_u32(&s, 99, 1), CUBERT_STATUS_INVALID_ARGUMENT);
  CHECK_STATUS(cubert_recording_set_scalars(rec, 0, &s, &err), CUBERT_STATUS_INVALID_ARGUMENT);
  CHECK_STATUS((cubert_recording_set_scalars)(rec, 0, NULL, &err), CUBERT_STATUS_INVALID_ARGUMENT);
  /* buffers: another size, no such slot, a misaligned view, a released handle */
  CHECK_STATUS(cubert_recording_set_buffer(rec, 0, &small, &err), CUBERT_STATUS_INVALID_ARGUMENT);
  CHECK(cubert_error_has_kind(&err, CUBERT_ERROR_SERVER_VALIDATION));
  CHECK_EQ_U64(err.field[1], N * 2);
  CHECK_EQ_U64(err.field[2], N * 4);
  CHECK_STATUS(cubert_recording_set_buffer(rec, 1, &a, &err), CUBERT_STATUS_OUT_OF_RANGE);
  CHECK_STATUS(cubert_recording_find_buffer(rec, &small, &slot, &err), CUBERT_STATUS_NOT_FOUND);
  {
    cubert_handle_t big;
    CHECK_OK(cubert_client_empty(env.client, N * 4 + 2, &big, NULL));
    CHECK_OK(cubert_client_handle_offset(env.client, &big, 2, 0, &view, NULL));
    CHECK_STATUS(cubert_recording_set_buffer(rec, 0, &view, &err), CUBERT_STATUS_INVALID_ARGUMENT);
    CHECK_REASON(err, "buffer_align");
    CHECK_OK(cubert_client_handle_release(env.client, &view, NULL));
    CHECK_OK(cubert_client_handle_release(env.client, &big, NULL));
    CHECK_STATUS(cubert_recording_set_buffer(rec, 0, &big, &err), CUBERT_STATUS_INVALID_HANDLE);
  }
  /* still the recording it was: adds 1 to a */
  CHECK_OK(cubert_client_replay(env.client, rec, NULL));
  expect(env.client, &a, 1);
  cubert_recording_destroy(rec);
  CHECK_OK(cubert_client_handle_release(env.client, &a, NULL));
  CHECK_OK(cubert_client_handle_release(env.client, &small, NULL));
  cts_teardown(&env);
}

/* A released buffer: the replay is refused, nothing runs; a live one in its slot mends it. */
TEST(cts_record_replay_refuses_a_released_buffer) {
  cts_env_t env;
  cubert_handle_t a, b, c;
  cubert_recording_t *rec = NULL;
  cubert_error_t err;
  cts_setup(&env, 0);
  create(env.client, 0, &a);
  create(env.client, 100, &b);
  create(env.client, 200, &c);
  CHECK_OK(cubert_client_record_begin(env.client, NULL));
  CHECK_OK(add(env.client, &a, 1, NULL));
  CHECK_OK(add(env.client, &b, 1, NULL));
  CHECK_OK(cubert_client_record_end(env.client, &rec, NULL));
  CHECK_OK(cubert_client_handle_release(env.client, &b, NULL));
  CHECK_STATUS(cubert_client_replay(env.client, rec, &err), CUBERT_STATUS_INVALID_HANDLE);
  CHECK_EQ_U64(err.field[0], 1);
  CHECK_REASON(err, "slot 1 was released");
  expect(env.client, &a, 0); /* launch 0 was not enqueued either */
  CHECK_OK(cubert_recording_set_buffer(rec, 1, &c, NULL));
  CHECK_OK(cubert_client_replay(env.client, rec, NULL));
  expect(env.client, &a, 1);
  expect(env.client, &c, 201);
  cubert_recording_destroy(rec);
  CHECK_OK(cubert_client_handle_release(env.client, &a, NULL));
  CHECK_OK(cubert_client_handle_release(env.client, &c, NULL));
  cts_teardown(&env);
}

/* What cannot be recorded is refused while recording, and the misuse of the calls. */
TEST(cts_record_refuses_what_cannot_be_recorded) {
  cts_env_t env;
  cubert_handle_t a;
  cubert_recording_t *rec = NULL, *none = NULL;
  cubert_completion_t completion;
  cubert_error_t err;
  uint32_t v[N];
  cts_setup(&env, 0);
  create(env.client, 0, &a);
  CHECK_STATUS(cubert_client_record_end(env.client, &rec, &err), CUBERT_STATUS_FAILED_PRECONDITION);
  CHECK(rec == NULL);
  CHECK_STATUS(cubert_client_record_begin(NULL, &err), CUBERT_STATUS_INVALID_ARGUMENT);
  CHECK_STATUS(cubert_client_record_end(env.client, NULL, &err), CUBERT_STATUS_INVALID_ARGUMENT);
  CHECK_OK(cubert_client_record_begin(env.client, NULL));
  CHECK_STATUS(cubert_client_record_begin(env.client, &err), CUBERT_STATUS_FAILED_PRECONDITION);
  CHECK_OK(add(env.client, &a, 1, NULL));
  CHECK_STATUS(cubert_client_sync(env.client, &err), CUBERT_STATUS_FAILED_PRECONDITION);
  CHECK(cubert_error_has_kind(&err, CUBERT_ERROR_FAILED_PRECONDITION));
  CHECK_REASON(err, "sync refused");
  CHECK_STATUS(cubert_client_sync_async(env.client, &completion, &err), CUBERT_STATUS_FAILED_PRECONDITION);
  CHECK_STATUS(cubert_client_flush(env.client, &err), CUBERT_STATUS_FAILED_PRECONDITION);
  CHECK_STATUS(cubert_client_read_one(env.client, &a, v, sizeof v, &err), CUBERT_STATUS_FAILED_PRECONDITION);
  CHECK_REASON(err, "read refused");
  {
    cubert_resource_t r;
    CHECK_STATUS(cubert_client_get_resource(env.client, &a, &r, &err), CUBERT_STATUS_FAILED_PRECONDITION);
  }
  /* a launch over the device's limits is refused now, not queued */
  {
    cubert_launch_arguments_t args;
    cubert_cube_count_t count = count_n();
    cubert_launch_arguments_initialize(&args);
    cubert_launch_arguments_set_buffer(&args, 0, &a);
    cubert_launch_arguments_set_u32(&args, 0, 1);
    cubert_launch_arguments_set_cube_dim(&args, 1u << 20, 1, 1);
    CHECK_STATUS(cubert_client_launch(env.client, &ck_add_scalar_u32_kernel, &count, &args, &err),
                 CUBERT_STATUS_LIMIT_EXCEEDED);
  }
  /* an ill-formed launch is refused and not recorded; the recording goes on */
  {
    cubert_launch_arguments_t args;
    cubert_cube_count_t count = count_n();
    cubert_launch_arguments_initialize(&args);
    cubert_launch_arguments_set_buffer(&args, 0, &a);
    CHECK_STATUS(cubert_client_launch(env.client, &ck_add_scalar_u32_kernel, &count, &args, &err),
                 CUBERT_STATUS_INVALID_ARGUMENT);
  }
  /* a replay on the recording stream */
  CHECK_OK(cubert_client_record_end(env.client, &rec, NULL));
  CHECK_OK(cubert_client_record_begin(env.client, NULL));
  CHECK_STATUS(cubert_client_replay(env.client, rec, &err), CUBERT_STATUS_FAILED_PRECONDITION);
  CHECK_OK(cubert_client_record_end(env.client, &none, NULL));
  cubert_recording_counts(none, NULL, NULL, NULL);
  {
    uint32_t launches = 9;
    cubert_recording_counts(none, &launches, NULL, NULL);
    CHECK_EQ_U64(launches, 0);
    cubert_recording_counts(rec, &launches, NULL, NULL);
    CHECK_EQ_U64(launches, 1);
  }
  CHECK_OK(cubert_client_replay(env.client, none, NULL)); /* empty: nothing */
  CHECK_STATUS(cubert_client_replay(env.client, NULL, &err), CUBERT_STATUS_INVALID_ARGUMENT);
  /* the stream works again */
  CHECK_OK(cubert_client_sync(env.client, NULL));
  expect(env.client, &a, 0);
  CHECK_OK(cubert_client_replay(env.client, rec, NULL));
  expect(env.client, &a, 1);
  cubert_recording_destroy(none);
  cubert_recording_destroy(rec);
  cubert_recording_destroy(NULL);
  CHECK_OK(cubert_client_handle_release(env.client, &a, NULL));
  cts_teardown(&env);
}

/* A recorded write's bytes are copied when recorded and written at each replay. */
TEST(cts_record_write_is_replayed) {
  cts_env_t env;
  cubert_handle_t a, d;
  cubert_recording_t *rec = NULL;
  uint32_t v[N];
  cts_setup(&env, 0);
  create(env.client, 0, &a);
  CHECK_OK(cubert_client_empty(env.client, N * 4, &d, NULL));
  CHECK_OK(cubert_client_record_begin(env.client, NULL));
  fill(v, 40);
  CHECK_OK(cubert_client_write(env.client, &a, v, sizeof v, NULL));
  memset(v, 0xEE, sizeof v); /* the recording has its own copy */
  CHECK_OK(add(env.client, &a, 2, NULL));
  CHECK_OK(twice(env.client, &a, &d, NULL));
  CHECK_OK(cubert_client_record_end(env.client, &rec, NULL));
  expect(env.client, &a, 0);
  CHECK_OK(cubert_client_replay(env.client, rec, NULL));
  CHECK_OK(cubert_client_replay(env.client, rec, NULL));
  expect(env.client, &a, 42); /* written again before the add: not 44 */
  CHECK_OK(cubert_client_read_one(env.client, &d, v, sizeof v, NULL));
  CHECK_EQ_U64(v[3], 2u * 45u);
  {
    uint32_t writes = 0;
    cubert_recording_counts(rec, NULL, &writes, NULL);
    CHECK_EQ_U64(writes, 1);
  }
  /* destroyed right after a replay that is still pending: it waits for its writes */
  CHECK_OK(cubert_client_replay(env.client, rec, NULL));
  cubert_recording_destroy(rec);
  expect(env.client, &a, 42);
  CHECK_OK(cubert_client_handle_release(env.client, &a, NULL));
  CHECK_OK(cubert_client_handle_release(env.client, &d, NULL));
  cts_teardown(&env);
}

/* Work of a replay that fails while it runs reaches the stream as a launch's would. */
TEST(cts_record_replay_errors_reach_the_stream) {
  cts_env_t env;
  cts_options_t o;
  cubert_handle_t a;
  cubert_recording_t *rec = NULL;
  cubert_launch_arguments_t args;
  cubert_launch_arguments_t args2;
  cubert_cube_count_t one = cubert_cube_count_new_single();
  cubert_error_t err, first;
  memset(&o, 0, sizeof o);
  o.bounds_check = CUBERT_BOUNDS_CHECK_VALIDATE;
  cts_setup_with(&env, &o);
  create(env.client, 0, &a);
  CHECK_OK(cubert_client_record_begin(env.client, NULL));
  cubert_launch_arguments_initialize(&args);
  cubert_launch_arguments_set_buffer(&args, 0, &a);
  cubert_launch_arguments_initialize(&args2);
  cubert_launch_arguments_set_buffer(&args2, 0, &a);
  cubert_launch_arguments_set_u32(&args2, 0, 1);
  CHECK_OK(cubert_client_launch_unchecked(env.client, &ck_oob_write_u32_kernel, &one, &args, NULL));
  CHECK_OK(cubert_client_launch(env.client, &ck_add_scalar_u32_kernel, &one, &args2, NULL));
  CHECK_OK(cubert_client_launch_unchecked(env.client, &ck_oob_write_u32_kernel, &one, &args, NULL));
  CHECK_OK(cubert_client_launch_unchecked(env.client, &ck_oob_write_u32_kernel, &one, &args, NULL));
  CHECK_OK(cubert_client_record_end(env.client, &rec, NULL));
  CHECK_OK(cubert_client_sync(env.client, NULL)); /* nothing ran */
  CHECK_OK(cubert_client_replay(env.client, rec, NULL));
  CHECK_STATUS(cubert_client_sync(env.client, &err), CUBERT_STATUS_SERVER_UNHEALTHY);
  CHECK(cubert_error_has_kind(&err, CUBERT_ERROR_SERVER_VALIDATION));
  CHECK_EQ_U64(cubert_error_aggregate_count(&err), 3); /* every failing launch, as one by one */
  CHECK_OK(cubert_error_unhealthy_first(&err, &first));
  CHECK_EQ_U64(first.field[0], 0); /* buffer slot */
  CHECK_EQ_U64(first.field[1], N); /* the index written: one past the end */
  CHECK_OK(cubert_client_sync(env.client, NULL)); /* drained */
  cubert_recording_destroy(rec);
  CHECK_OK(cubert_client_handle_release(env.client, &a, NULL));
  cts_teardown(&env);
}

/* Under the race checker (RACECHECK launches): replays on two streams, ordered by their
 * bindings and a host sync, report nothing (teardown checks 0 reports); a replay that
 * races with another stream's is reported as launches would be. */
TEST(cts_record_replay_under_the_race_checker) {
  cts_env_t env;
  cts_options_t o;
  cubert_client_t *other = NULL;
  cubert_handle_t a, d;
  cubert_recording_t *rec = NULL;
  int i;
  memset(&o, 0, sizeof o);
  o.bounds_check = CUBERT_BOUNDS_CHECK_RACECHECK;
  cts_setup_with(&env, &o);
  CHECK_OK(cubert_client_clone(env.client, &other, NULL));
  cubert_client_set_stream(env.client, 1);
  cubert_client_set_stream(other, 2);
  create(env.client, 0, &a);
  CHECK_OK(cubert_client_empty(env.client, N * 4, &d, NULL));
  CHECK_OK(cubert_client_record_begin(env.client, NULL));
  CHECK_OK(add(env.client, &a, 1, NULL));
  CHECK_OK(twice(env.client, &a, &d, NULL));
  CHECK_OK(cubert_client_record_end(env.client, &rec, NULL));
  for (i = 0; i < 4; i++) {
    CHECK_OK(cubert_client_replay(env.client, rec, NULL));
    CHECK_OK(cubert_client_replay(other, rec, NULL)); /* ordered after by the bindings */
    CHECK_OK(cubert_client_sync(other, NULL)); /* the next replay on stream 1 writes what it read */
  }
  expect(other, &a, 8);
  cubert_recording_destroy(rec);
  cubert_client_release(other);
  CHECK_OK(cubert_client_handle_release(env.client, &a, NULL));
  CHECK_OK(cubert_client_handle_release(env.client, &d, NULL));
  cts_teardown(&env);
}

/* A recording keeps its device: the client released first, the device goes with the
 * recording, and every block comes back. */
TEST(cts_record_outlives_its_client) {
  cts_env_t env;
  cubert_handle_t a;
  cubert_recording_t *rec = NULL;
  cubert_client_t *second = NULL;
  cts_setup(&env, 0);
  create(env.client, 0, &a);
  CHECK_OK(cubert_client_record_begin(env.client, NULL));
  CHECK_OK(add(env.client, &a, 1, NULL));
  CHECK_OK(cubert_client_record_end(env.client, &rec, NULL));
  CHECK_OK(cubert_client_clone(env.client, &second, NULL));
  CHECK_OK(cubert_client_replay(second, rec, NULL));
  CHECK_OK(cubert_client_handle_release(env.client, &a, NULL));
  cubert_client_release(second);
  second = env.client;
  cts_forget_client(&env);
  cubert_client_release(second);
  CHECK(env.counting.live_blocks > 0); /* the recording holds the device */
  cubert_recording_destroy(rec);
  CHECK_MSG(env.counting.live_blocks == 0, "leaked %lld blocks", (long long)env.counting.live_blocks);
  counting_allocator_destroy(&env.counting);
}

/* A recording in progress when the device goes is freed with it. */
TEST(cts_record_in_progress_at_teardown) {
  cts_env_t env;
  cubert_handle_t a;
  cts_setup(&env, 0);
  create(env.client, 0, &a);
  CHECK_OK(cubert_client_record_begin(env.client, NULL));
  CHECK_OK(add(env.client, &a, 1, NULL));
  CHECK_OK(cubert_client_handle_release(env.client, &a, NULL));
  cts_teardown(&env);
}

/* A recording of another device is refused. */
TEST(cts_record_replay_on_another_device) {
  cts_env_t env, env2;
  cubert_handle_t a;
  cubert_recording_t *rec = NULL;
  cubert_error_t err;
  cts_setup(&env, 0);
  cts_setup(&env2, 1);
  create(env.client, 0, &a);
  CHECK_OK(cubert_client_record_begin(env.client, NULL));
  CHECK_OK(add(env.client, &a, 1, NULL));
  CHECK_OK(cubert_client_record_end(env.client, &rec, NULL));
  CHECK_STATUS(cubert_client_replay(env2.client, rec, &err), CUBERT_STATUS_DEVICE_MISMATCH);
  {
    cubert_handle_t b;
    create(env2.client, 0, &b);
    CHECK_STATUS(cubert_recording_set_buffer(rec, 0, &b, &err), CUBERT_STATUS_DEVICE_MISMATCH);
    CHECK_OK(cubert_client_handle_release(env2.client, &b, NULL));
  }
  cubert_recording_destroy(rec);
  CHECK_OK(cubert_client_handle_release(env.client, &a, NULL));
  cts_teardown(&env2);
  cts_teardown(&env);
}

/* Creates while recording run at once (not recorded); more distinct buffers than a
 * recording holds (64) are refused, the recording goes on. */
TEST(cts_record_creates_run_at_once_and_slots_are_bounded) {
  cts_env_t env;
  cubert_handle_t a, made, many[65];
  cubert_recording_t *rec = NULL;
  cubert_error_t err;
  uint32_t launches = 0, buffers = 0, i;
  cts_setup(&env, 0);
  create(env.client, 0, &a);
  CHECK_OK(cubert_client_record_begin(env.client, NULL));
  create(env.client, 7, &made); /* uploaded now */
  CHECK_OK(add(env.client, &made, 1, NULL));
  for (i = 0; i < 65; i++) CHECK_OK(cubert_client_empty(env.client, 64, &many[i], NULL));
  for (i = 0; i < 63; i++) {
    cubert_launch_arguments_t args;
    cubert_cube_count_t one = cubert_cube_count_new_single();
    cubert_launch_arguments_initialize(&args);
    cubert_launch_arguments_set_buffer(&args, 0, &many[i]);
    cubert_launch_arguments_set_u32(&args, 0, 1);
    CHECK_OK(cubert_client_launch(env.client, &ck_add_scalar_u32_kernel, &one, &args, NULL));
  }
  {
    cubert_launch_arguments_t args;
    cubert_cube_count_t one = cubert_cube_count_new_single();
    cubert_launch_arguments_initialize(&args);
    cubert_launch_arguments_set_buffer(&args, 0, &many[63]);
    cubert_launch_arguments_set_u32(&args, 0, 1);
    CHECK_STATUS(cubert_client_launch(env.client, &ck_add_scalar_u32_kernel, &one, &args, &err),
                 CUBERT_STATUS_OUT_OF_RANGE);
    CHECK_REASON(err, "64");
  }
  CHECK_OK(cubert_client_record_end(env.client, &rec, NULL));
  cubert_recording_counts(rec, &launches, NULL, &buffers);
  CHECK_EQ_U64(launches, 64);
  CHECK_EQ_U64(buffers, 64);
  expect(env.client, &made, 7); /* the create ran, the launch did not */
  CHECK_OK(cubert_client_replay(env.client, rec, NULL));
  expect(env.client, &made, 8);
  cubert_recording_destroy(rec);
  for (i = 0; i < 65; i++) CHECK_OK(cubert_client_handle_release(env.client, &many[i], NULL));
  CHECK_OK(cubert_client_handle_release(env.client, &made, NULL));
  CHECK_OK(cubert_client_handle_release(env.client, &a, NULL));
  cts_teardown(&env);
}

/* A write larger than its buffer is refused while recording, and not recorded. */
TEST(cts_record_refuses_writes_it_cannot_replay) {
  cts_env_t env;
  cubert_handle_t a;
  cubert_recording_t *rec = NULL;
  cubert_error_t err;
  uint32_t big[N + 1], writes = 9;
  cts_setup(&env, 0);
  create(env.client, 0, &a);
  memset(big, 0, sizeof big);
  CHECK_OK(cubert_client_record_begin(env.client, NULL));
  CHECK_STATUS(cubert_client_write(env.client, &a, big, sizeof big, &err), CUBERT_STATUS_OUT_OF_RANGE);
  CHECK_OK(cubert_client_record_end(env.client, &rec, NULL));
  cubert_recording_counts(rec, NULL, &writes, NULL);
  CHECK_EQ_U64(writes, 0);
  cubert_recording_destroy(rec);
  CHECK_OK(cubert_client_handle_release(env.client, &a, NULL));
  cts_teardown(&env);
}

/* A replayed one-cube launch runs with the shape it was recorded with: its
 * cube dim (4 x 2 x 2) and its dynamic shared bytes (the CPU driver checks a
 * planned one-cube launch's grid once, when it is recorded:
 * backend-cpu/cpu/cpu_driver.c, "plans"), replay after replay. */
TEST(cts_record_replay_keeps_the_launch_shape) {
  cts_env_t env;
  cubert_handle_t h[2];
  cubert_recording_t *rec = NULL;
  cubert_launch_arguments_t args;
  cubert_cube_count_t one = cubert_cube_count_new_single();
  uint32_t out[16];
  uint64_t info[5];
  int replay, i;
  cts_setup(&env, 0);
  memset(out, 0, sizeof out);
  memset(info, 0, sizeof info);
  CHECK_OK(cubert_client_create_from_slice(env.client, out, sizeof out, &h[0], NULL));
  CHECK_OK(cubert_client_create_from_slice(env.client, info, sizeof info, &h[1], NULL));
  cubert_launch_arguments_initialize(&args);
  CHECK_OK(cubert_launch_arguments_set_buffer(&args, 0, &h[0]));
  CHECK_OK(cubert_launch_arguments_set_buffer(&args, 1, &h[1]));
  CHECK_OK(cubert_launch_arguments_set_cube_dim(&args, 4, 2, 2));
  CHECK_OK(cubert_launch_arguments_set_shared_memory_bytes(&args, 96));
  CHECK_OK(cubert_client_record_begin(env.client, NULL));
  CHECK_OK(cubert_client_launch(env.client, &k_record_shape_probe, &one, &args, NULL));
  CHECK_OK(cubert_client_record_end(env.client, &rec, NULL));
  for (replay = 0; replay < 3; replay++) {
    CHECK_OK(cubert_client_replay(env.client, rec, NULL));
    CHECK_OK(cubert_client_read_one(env.client, &h[1], info, sizeof info, NULL));
    CHECK_OK(cubert_client_read_one(env.client, &h[0], out, sizeof out, NULL));
    CHECK_EQ_U64(info[0], 4);
    CHECK_EQ_U64(info[1], 2);
    CHECK_EQ_U64(info[2], 2);
    CHECK_EQ_U64(info[3], 16);
    CHECK_EQ_U64(info[4], 96);
    for (i = 0; i < 16; i++) CHECK_EQ_U64(out[i], 16u - (uint32_t)i); /* the units reversed */
    memset(info, 0, sizeof info);
    CHECK_OK(cubert_client_write(env.client, &h[1], info, sizeof info, NULL));
  }
  cubert_recording_destroy(rec);
  CHECK_OK(cubert_client_handle_release(env.client, &h[0], NULL));
  CHECK_OK(cubert_client_handle_release(env.client, &h[1], NULL));
  cts_teardown(&env);
}
