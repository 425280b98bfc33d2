/* SPDX-License-Identifier: MIT */
/* Conformance: the messages a user reads say what happened (issue 26): the
 * status, the kinds and the numbers of each refusal, and its formatted text,
 * on every driver. */
#include "cts.h"

#include "cubert_kernels.h"

/* A kernel whose cube dim is above every device's (2048 units on x). */
CUBERT_KERNEL_DESCRIPTOR(msg_wide_kernel, ck_add_f32, 3, 0, 0, 2048, 1, 1);

static const char *format_of(const cubert_error_t *e) {
  static char text[2048];
  cubert_error_format(e, text, sizeof text);
  return text;
}

static int have_reasons(void) {
  return (cubert_config_features() & CUBERT_FEATURE_ERROR_REASONS) != 0;
}

static void check_contains(const char *text, const char *needle) {
  CHECK_MSG(strstr(text, needle) != NULL, "\"%s\" not found in \"%s\"", needle, text);
}

static void check_lacks(const char *text, const char *needle) {
  CHECK_MSG(strstr(text, needle) == NULL, "\"%s\" found in \"%s\"", needle, text);
}

static cubert_launch_arguments_t three_buffers(const cubert_handle_t *h) {
  cubert_launch_arguments_t args;
  cubert_launch_arguments_initialize(&args);
  args.buffers = h;
  args.buffer_count = 3;
  return args;
}

/* A cube dim of 2048 is a launch refusal; nothing was profiled. */
TEST(cts_message_cube_dim_names_no_profiling) {
  TEST_REQUIRE_FEATURE(CUBERT_FEATURE_ERROR_TEXT);
  cts_env_t env;
  cubert_handle_t h[3];
  cubert_launch_arguments_t args;
  cubert_cube_count_t one = cubert_cube_count_new_single();
  cubert_device_properties_t p;
  cubert_error_t err, first;
  char want[320];
  float data[4] = {0};
  int i;
  cts_setup(&env, 0);
  cubert_client_properties(env.client, &p);
  for (i = 0; i < 3; i++)
    CHECK_OK(cubert_client_create_from_slice(env.client, data, sizeof data, &h[i], NULL));
  args = three_buffers(h);
  CHECK_OK(cubert_client_launch(env.client, &msg_wide_kernel, &one, &args, NULL));
  CHECK_STATUS(cubert_client_sync(env.client, &err), CUBERT_STATUS_SERVER_UNHEALTHY);
  CHECK_OK(cubert_error_unhealthy_first(&err, &first));
  CHECK_STATUS(first.status, CUBERT_STATUS_LIMIT_EXCEEDED);
  CHECK_EQ_U64(first.chain[0], CUBERT_ERROR_SERVER_LAUNCH);
  CHECK_EQ_U64(cubert_error_kind(&first), CUBERT_ERROR_RESOURCE_CUBE_DIM);
  snprintf(want, sizeof want,
           "A launch error happened\nCaused by:\n  Too many resources were requested during "
           "launch\nCube dim exceeds maximum bounds.\nRequested (2048, 1, 1), max is (%u, %u, %u).",
           (unsigned)p.hardware.max_cube_dim.x, (unsigned)p.hardware.max_cube_dim.y,
           (unsigned)p.hardware.max_cube_dim.z);
  CHECK_EQ_STR(format_of(&first), want);
  check_lacks(format_of(&err), "profiling");
  for (i = 0; i < 3; i++) CHECK_OK(cubert_client_handle_release(env.client, &h[i], NULL));
  cts_teardown(&env);
}

/* 2^32-1 cubes on x: a cube count, reported as cubes on the x axis. */
TEST(cts_message_cube_count_names_the_axis) {
  TEST_REQUIRE_FEATURE(CUBERT_FEATURE_ERROR_TEXT);
  cts_env_t env;
  cubert_handle_t h[3];
  cubert_launch_arguments_t args;
  cubert_cube_count_t many = cubert_cube_count_new_3d(4294967295u, 1, 1);
  cubert_device_properties_t p;
  cubert_error_t err, first;
  char want[320];
  float data[4] = {0};
  int i;
  cts_setup(&env, 0);
  cubert_client_properties(env.client, &p);
  if (p.hardware.max_cube_count.x == 4294967295u) {
    cts_teardown(&env);
    TEST_SKIP("the device accepts 2^32-1 cubes on x");
  }
  for (i = 0; i < 3; i++)
    CHECK_OK(cubert_client_create_from_slice(env.client, data, sizeof data, &h[i], NULL));
  args = three_buffers(h);
  CHECK_OK(cubert_client_launch(env.client, &ck_add_f32_kernel, &many, &args, NULL));
  CHECK_STATUS(cubert_client_sync(env.client, &err), CUBERT_STATUS_SERVER_UNHEALTHY);
  CHECK_OK(cubert_error_unhealthy_first(&err, &first));
  CHECK_STATUS(first.status, CUBERT_STATUS_LIMIT_EXCEEDED);
  CHECK_EQ_U64(first.field[0], 4294967295u);
  CHECK_EQ_U64(first.field[1], p.hardware.max_cube_count.x);
  CHECK_EQ_U64(first.field[2], 1); /* the x axis */
  snprintf(want, sizeof want,
           "Too many resources were requested during launch\nCube count exceeds maximum on the x "
           "axis.\nRequested 4294967295 cubes, max is %u.",
           (unsigned)p.hardware.max_cube_count.x);
  check_contains(format_of(&first), want);
  check_lacks(format_of(&first), "units");
  for (i = 0; i < 3; i++) CHECK_OK(cubert_client_handle_release(env.client, &h[i], NULL));
  cts_teardown(&env);
}

/* A second client on a registered index: ALREADY_EXISTS, as the headers say. */
TEST(cts_message_second_create_already_exists) {
  cts_env_t env;
  cts_options_t o;
  cubert_client_t *second = NULL;
  cubert_error_t err;
  cts_setup(&env, 2);
  memset(&o, 0, sizeof o);
  o.device_index = 2;
  o.workers = 1;
  CHECK_STATUS(cts_client_create(env.allocator, &o, &second, &err), CUBERT_STATUS_ALREADY_EXISTS);
  CHECK_STATUS(err.status, CUBERT_STATUS_ALREADY_EXISTS);
  CHECK_EQ_U64(cubert_error_kind(&err), CUBERT_ERROR_SERVICE_CREATION);
  CHECK(second == NULL);
  cts_teardown(&env);
}

/* Sizes are named as sizes: a read into 40 bytes of 400, a write of 400 into 40. */
TEST(cts_message_read_write_sizes) {
  cts_env_t env;
  cubert_handle_t big, small;
  cubert_error_t err;
  static uint8_t data[400], out[40];
  cts_setup(&env, 0);
  CHECK_OK(cubert_client_create_from_slice(env.client, data, sizeof data, &big, NULL));
  CHECK_OK(cubert_client_create_from_slice(env.client, data, 40, &small, NULL));
  CHECK_STATUS(cubert_client_read_one(env.client, &big, out, sizeof out, &err),
               CUBERT_STATUS_OUT_OF_RANGE);
  CHECK_EQ_U64(cubert_error_kind(&err), CUBERT_ERROR_OUT_OF_RANGE);
  CHECK_EQ_U64(err.field[0], 40);
  CHECK_EQ_U64(err.field[1], 400);
  if (have_reasons()) CHECK_EQ_STR(err.reason,
               "read destination smaller than the data (destination 40 bytes, data 400 bytes)");
  if (have_reasons() && (cubert_config_features() & CUBERT_FEATURE_ERROR_TEXT))
    CHECK_EQ_STR(format_of(&err), "Out of range: read destination smaller than the data "
                                  "(destination 40 bytes, data 400 bytes)");
  CHECK_STATUS(cubert_client_write(env.client, &small, data, sizeof data, &err),
               CUBERT_STATUS_OUT_OF_RANGE);
  CHECK_EQ_U64(err.field[0], 400);
  CHECK_EQ_U64(err.field[1], 40);
  if (have_reasons()) CHECK_EQ_STR(err.reason, "write larger than the handle (data 400 bytes, handle 40 bytes)");
  if (cubert_config_features() & CUBERT_FEATURE_ERROR_TEXT)
    check_lacks(format_of(&err), "index");
  CHECK_OK(cubert_client_handle_release(env.client, &big, NULL));
  CHECK_OK(cubert_client_handle_release(env.client, &small, NULL));
  cts_teardown(&env);
}

/* Too few scalars or buffers: refused at submit, naming the kernel and the counts. */
TEST(cts_message_launch_counts_name_kernel) {
  cts_env_t env;
  cubert_handle_t h[3];
  cubert_launch_arguments_t args;
  cubert_cube_count_t one = cubert_cube_count_new_single();
  cubert_error_t err;
  float data[4] = {0};
  int i;
  cts_setup(&env, 0);
  for (i = 0; i < 3; i++)
    CHECK_OK(cubert_client_create_from_slice(env.client, data, sizeof data, &h[i], NULL));
  args = three_buffers(h); /* axpy takes one scalar: none given */
  CHECK_STATUS(cubert_client_launch(env.client, &ck_axpy_f32_kernel, &one, &args, &err),
               CUBERT_STATUS_INVALID_ARGUMENT);
  CHECK_EQ_U64(cubert_error_kind(&err), CUBERT_ERROR_SERVER_VALIDATION);
  CHECK_EQ_U64(err.field[0], 0);
  CHECK_EQ_U64(err.field[1], 1);
  if (have_reasons()) CHECK_EQ_STR(err.reason,
               "launch of kernel 'ck_axpy_f32' refused: 0 scalars given, the kernel takes 1 "
               "(at most 16)");
  if (have_reasons() && (cubert_config_features() & CUBERT_FEATURE_ERROR_TEXT)) {
    CHECK_EQ_STR(format_of(&err), "A validation error happened\nCaused by:\n  launch of kernel "
                                  "'ck_axpy_f32' refused: 0 scalars given, the kernel takes 1 "
                                  "(at most 16)");
    check_lacks(format_of(&err), "during execution");
  }
  args.buffer_count = 2;
  CHECK_STATUS(cubert_client_launch(env.client, &ck_add_f32_kernel, &one, &args, &err),
               CUBERT_STATUS_INVALID_ARGUMENT);
  if (have_reasons()) CHECK_EQ_STR(err.reason,
               "launch of kernel 'ck_add_f32' refused: 2 buffers given, the kernel takes 3 "
               "(at most 16)");
  CHECK_OK(cubert_client_sync(env.client, NULL)); /* nothing was queued */
  for (i = 0; i < 3; i++) CHECK_OK(cubert_client_handle_release(env.client, &h[i], NULL));
  cts_teardown(&env);
}
