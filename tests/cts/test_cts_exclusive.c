/* SPDX-License-Identifier: MIT */
/* Conformance: exclusive sections and profile. */
#include "cts.h"

#include "cubert/cube.h"
#include "cubert_kernels.h"

static cubert_status_t returns_42(void *user, cubert_error_t *err) {
  (void)err;
  *(int *)user = 42;
  return CUBERT_STATUS_OK;
}

static cubert_status_t exclusive_boom(void *user, cubert_error_t *err) {
  (void)user;
  return cubert_error_set(err, CUBERT_ERROR_SERVER_GENERIC, NULL, 0, "exclusive boom");
}

/* CubeCL's exclusive_stays_recoverable_on_task_panic */
TEST(cts_exclusive_stays_recoverable_on_failure) {
  cts_env_t env;
  cubert_error_t err;
  int value = 0;
  char msg[256];
  cts_setup(&env, 0);
  CHECK_STATUS(cubert_client_exclusive(env.client, exclusive_boom, NULL, &err),
               CUBERT_STATUS_INTERNAL);
  CHECK_EQ_U64(cubert_error_kind(&err), CUBERT_ERROR_SERVER_GENERIC);
  cubert_error_format(&err, msg, sizeof msg);
  CHECK_MSG(strstr(msg, "exclusive boom") != NULL, "message: %s", msg);
  CHECK_OK(cubert_client_exclusive(env.client, returns_42, &value, NULL));
  CHECK_EQ_I64(value, 42);
  CHECK_STATUS(cubert_client_exclusive(env.client, NULL, NULL, NULL), CUBERT_STATUS_INVALID_ARGUMENT);
  cts_teardown(&env);
}

typedef struct inner_t {
  cubert_client_t *client;
  cubert_handle_t handle;
  uint32_t out[4];
  cubert_status_t status;
} inner_t;

/* Device calls made inside an exclusive section run inline (no deadlock). */
static cubert_status_t device_calls_inside(void *user, cubert_error_t *err) {
  inner_t *in = (inner_t *)user;
  uint64_t delta = 10;
  cubert_launch_arguments_t args;
  cubert_cube_count_t count = cubert_cube_count_new_single();
  cubert_launch_arguments_initialize(&args);
  args.buffers = &in->handle;
  args.buffer_count = 1;
  args.scalars = &delta;
  args.scalar_count = 1;
  CUBERT_RETURN_IF_ERROR(cubert_client_launch(in->client, &ck_add_scalar_u32_kernel, &count, &args, err));
  return cubert_client_read_one(in->client, &in->handle, in->out, sizeof in->out, err);
}

TEST(cts_exclusive_device_calls_run_inline) {
  cts_env_t env;
  inner_t in;
  uint32_t data[4] = {1, 2, 3, 4};
  cts_setup(&env, 0);
  in.client = env.client;
  CHECK_OK(cubert_client_create_from_slice(env.client, data, sizeof data, &in.handle, NULL));
  CHECK_OK(cubert_client_exclusive(env.client, device_calls_inside, &in, NULL));
  CHECK_EQ_U64(in.out[0], 11);
  CHECK_EQ_U64(in.out[3], 14);
  CHECK_OK(cubert_client_handle_release(env.client, &in.handle, NULL));
  cts_teardown(&env);
}

static cubert_status_t kernel_boom(void *user, cubert_error_t *err) {
  (void)user;
  return cubert_error_set(err, CUBERT_ERROR_LAUNCH_UNKNOWN, NULL, 0, "kernel boom");
}

/* CubeCL's profile_returns_ok_on_success and profile_reraises_panic */
TEST(cts_profile_returns_value_and_failure) {
  TEST_REQUIRE_FEATURE(CUBERT_FEATURE_PROFILING);
  cts_env_t env;
  cubert_profile_duration_t d;
  cubert_error_t err;
  int value = 0;
  char msg[256];
  cts_setup(&env, 0);
  CHECK_OK(cubert_client_profile(env.client, returns_42, &value, "answer", &d, NULL));
  CHECK_EQ_I64(value, 42);
  CHECK(d.end_ns >= d.start_ns);
  CHECK_STATUS(cubert_client_profile(env.client, kernel_boom, NULL, "boom", &d, &err),
               CUBERT_STATUS_LAUNCH_FAILED);
  cubert_error_format(&err, msg, sizeof msg);
  CHECK_MSG(strstr(msg, "kernel boom") != NULL, "message: %s", msg);
  /* the device stays usable */
  CHECK_OK(cubert_client_profile(env.client, returns_42, &value, "again", NULL, NULL));
  cts_teardown(&env);
}
