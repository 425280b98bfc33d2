/* SPDX-License-Identifier: MIT */
/* Conformance: kernel launches, streams, cross-stream bindings, the error
 * queue. */
#include "cts.h"

#include <pthread.h>

#include "cubert/cube.h"
#include "cubert_kernels.h"
#include "cubert/cpu.h"

static cubert_launch_arguments_t args_of(const cubert_binding_t *b, uint32_t nb,
                                         const uint64_t *s, uint32_t ns) {
  cubert_launch_arguments_t a;
  cubert_launch_arguments_initialize(&a);
  a.buffers = b;
  a.buffer_count = nb;
  a.scalars = s;
  a.scalar_count = ns;
  return a;
}

TEST(cts_execute_elementwise_addition) {
  cts_env_t env;
  const uint8_t lhs[3] = {0, 1, 2}, rhs[3] = {4, 4, 4};
  uint8_t out[3];
  cubert_handle_t h[3];
  cubert_launch_arguments_t args;
  cubert_cube_count_t count = cubert_cube_count_new_single();
  cts_setup(&env, 0);
  CHECK_OK(cubert_client_create_from_slice(env.client, lhs, 3, &h[0], NULL));
  CHECK_OK(cubert_client_create_from_slice(env.client, rhs, 3, &h[1], NULL));
  CHECK_OK(cubert_client_empty(env.client, 3, &h[2], NULL));
  args = args_of(h, 3, NULL, 0);
  CHECK_OK(cubert_client_launch(env.client, &ck_add_u8_kernel, &count, &args, NULL));
  CHECK_OK(cubert_client_read_one(env.client, &h[2], out, 3, NULL));
  CHECK_EQ_U64(out[0], 4);
  CHECK_EQ_U64(out[1], 5);
  CHECK_EQ_U64(out[2], 6);
  CHECK_OK(cubert_client_handle_release(env.client, &h[0], NULL));
  CHECK_OK(cubert_client_handle_release(env.client, &h[1], NULL));
  CHECK_OK(cubert_client_handle_release(env.client, &h[2], NULL));
  cts_teardown(&env);
}

TEST(cts_zero_cube_count_leaves_data_untouched) {
  cts_env_t env;
  uint32_t data[2] = {7, 8}, out[2];
  uint64_t delta = 100;
  cubert_handle_t h;
  cubert_launch_arguments_t args;
  cubert_cube_count_t zero = cubert_cube_count_new_3d(0, 1, 1);
  cts_setup(&env, 0);
  CHECK_OK(cubert_client_create_from_slice(env.client, data, sizeof data, &h, NULL));
  args = args_of(&h, 1, &delta, 1);
  CHECK_OK(cubert_client_launch(env.client, &ck_add_scalar_u32_kernel, &zero, &args, NULL));
  CHECK_OK(cubert_client_read_one(env.client, &h, out, sizeof out, NULL));
  CHECK_EQ_U64(out[0], 7);
  CHECK_EQ_U64(out[1], 8);
  CHECK_OK(cubert_client_handle_release(env.client, &h, NULL));
  cts_teardown(&env);
}

TEST(cts_dynamic_cube_count) {
  cts_env_t env;
  uint32_t data[128], out[128], dims[3] = {2, 1, 1}, zero[3] = {0, 0, 0};
  uint64_t delta = 1;
  cubert_handle_t h, hc, hz;
  cubert_launch_arguments_t args;
  cubert_cube_count_t count;
  int i;
  cts_setup(&env, 0);
  for (i = 0; i < 128; i++) data[i] = (uint32_t)i;
  CHECK_OK(cubert_client_create_from_slice(env.client, data, sizeof data, &h, NULL));
  CHECK_OK(cubert_client_create_from_slice(env.client, dims, sizeof dims, &hc, NULL));
  CHECK_OK(cubert_client_create_from_slice(env.client, zero, sizeof zero, &hz, NULL));
  args = args_of(&h, 1, &delta, 1);
  count = cubert_cube_count_new_dynamic(&hc);
  CHECK_OK(cubert_client_launch(env.client, &ck_add_scalar_u32_kernel, &count, &args, NULL));
  count = cubert_cube_count_new_dynamic(&hz); /* (0,0,0): nothing runs */
  CHECK_OK(cubert_client_launch(env.client, &ck_add_scalar_u32_kernel, &count, &args, NULL));
  CHECK_OK(cubert_client_read_one(env.client, &h, out, sizeof out, NULL));
  for (i = 0; i < 128; i++) CHECK_EQ_U64(out[i], (uint32_t)i + 1);
  CHECK_OK(cubert_client_handle_release(env.client, &h, NULL));
  CHECK_OK(cubert_client_handle_release(env.client, &hc, NULL));
  CHECK_OK(cubert_client_handle_release(env.client, &hz, NULL));
  cts_teardown(&env);
}

TEST(cts_launches_on_one_stream_run_in_order) {
  cts_env_t env;
  uint32_t data[1000], out[1000];
  uint64_t delta = 3;
  cubert_handle_t h;
  cubert_launch_arguments_t args;
  cubert_cube_count_t count = cubert_cube_count_new_1d((1000 + CK_SMALL_BLOCK - 1) / CK_SMALL_BLOCK);
  int i;
  cts_setup(&env, 0);
  memset(data, 0, sizeof data);
  CHECK_OK(cubert_client_create_from_slice(env.client, data, sizeof data, &h, NULL));
  args = args_of(&h, 1, &delta, 1);
  for (i = 0; i < 300; i++)
    CHECK_OK(cubert_client_launch(env.client, &ck_add_scalar_u32_kernel, &count, &args, NULL));
  CHECK_OK(cubert_client_read_one(env.client, &h, out, sizeof out, NULL));
  for (i = 0; i < 1000; i++) CHECK_EQ_U64(out[i], 900);
  CHECK_OK(cubert_client_handle_release(env.client, &h, NULL));
  cts_teardown(&env);
}

/* CubeCL's test_stream: 300 launches on stream 10000, read from 10001. */
TEST(cts_cross_stream_read_waits_for_the_producer) {
  cts_env_t env;
  cubert_client_t *producer = NULL, *consumer = NULL;
  uint32_t data[4096], out[4096];
  uint64_t delta = 1;
  cubert_handle_t h;
  cubert_launch_arguments_t args;
  cubert_cube_count_t count = cubert_cube_count_new_1d(4096 / CK_SMALL_BLOCK);
  int i;
  cts_setup(&env, 0);
  CHECK_OK(cubert_client_clone(env.client, &producer, NULL));
  CHECK_OK(cubert_client_clone(env.client, &consumer, NULL));
  cubert_client_set_stream(producer, 10000);
  cubert_client_set_stream(consumer, 10001);
  memset(data, 0, sizeof data);
  CHECK_OK(cubert_client_create_from_slice(producer, data, sizeof data, &h, NULL));
  args = args_of(&h, 1, &delta, 1);
  for (i = 0; i < 300; i++)
    CHECK_OK(cubert_client_launch(producer, &ck_add_scalar_u32_kernel, &count, &args, NULL));
  CHECK_OK(cubert_client_read_one(consumer, &h, out, sizeof out, NULL));
  for (i = 0; i < 4096; i++) CHECK_EQ_U64(out[i], 300);
  CHECK_OK(cubert_client_handle_release(env.client, &h, NULL));
  cubert_client_release(producer);
  cubert_client_release(consumer);
  cts_teardown(&env);
}

/* A consumer launch on another stream reads what the producer stream wrote. */
TEST(cts_cross_stream_launch_binding) {
  cts_env_t env;
  cubert_client_t *a = NULL, *b = NULL;
  uint32_t src[2048], out[2048];
  uint64_t delta = 5;
  cubert_handle_t hs, hd;
  cubert_binding_t pair[2];
  cubert_launch_arguments_t args;
  cubert_cube_count_t count = cubert_cube_count_new_1d(2048 / CK_SMALL_BLOCK);
  int round, i;
  cts_setup(&env, 0);
  CHECK_OK(cubert_client_clone(env.client, &a, NULL));
  CHECK_OK(cubert_client_clone(env.client, &b, NULL));
  cubert_client_set_stream(a, 1);
  cubert_client_set_stream(b, 2);
  for (i = 0; i < 2048; i++) src[i] = (uint32_t)i;
  CHECK_OK(cubert_client_create_from_slice(a, src, sizeof src, &hs, NULL));
  CHECK_OK(cubert_client_empty(b, sizeof out, &hd, NULL));
  for (round = 0; round < 20; round++) {
    args = args_of(&hs, 1, &delta, 1);
    CHECK_OK(cubert_client_launch(a, &ck_add_scalar_u32_kernel, &count, &args, NULL));
    pair[0] = hs;
    pair[1] = hd;
    args = args_of(pair, 2, NULL, 0);
    CHECK_OK(cubert_client_launch(b, &ck_double_u32_kernel, &count, &args, NULL));
    CHECK_OK(cubert_client_read_one(b, &hd, out, sizeof out, NULL));
    for (i = 0; i < 2048; i++) CHECK_EQ_U64(out[i], 2u * ((uint32_t)i + 5u * (uint32_t)(round + 1)));
  }
  CHECK_OK(cubert_client_handle_release(env.client, &hs, NULL));
  CHECK_OK(cubert_client_handle_release(env.client, &hd, NULL));
  cubert_client_release(a);
  cubert_client_release(b);
  cts_teardown(&env);
}

typedef struct worker_ctx_t {
  cubert_client_t *client;
  int id;
  int ok;
} worker_ctx_t;

static void *thread_program(void *arg) {
  worker_ctx_t *w = (worker_ctx_t *)arg;
  uint32_t data[512], out[512];
  uint64_t delta = (uint64_t)w->id + 1;
  cubert_handle_t h;
  cubert_launch_arguments_t args;
  cubert_cube_count_t count = cubert_cube_count_new_1d(512 / CK_SMALL_BLOCK);
  int i, round;
  w->ok = 1;
  for (round = 0; round < 10; round++) {
    for (i = 0; i < 512; i++) data[i] = (uint32_t)(i * round);
    if (cubert_client_create_from_slice(w->client, data, sizeof data, &h,
                                        NULL) != CUBERT_STATUS_OK) {
      w->ok = 0;
      return NULL;
    }
    args = args_of(&h, 1, &delta, 1);
    if (cubert_client_launch(w->client, &ck_add_scalar_u32_kernel, &count, &args, NULL) ||
        cubert_client_read_one(w->client, &h, out, sizeof out, NULL))
      w->ok = 0;
    for (i = 0; i < 512; i++)
      if (out[i] != (uint32_t)(i * round) + (uint32_t)delta) w->ok = 0;
    cubert_client_handle_release(w->client, &h, NULL);
  }
  return NULL;
}

TEST(cts_many_threads_many_streams) {
  cts_env_t env;
  pthread_t t[6];
  worker_ctx_t w[6];
  int i;
  CTS_REQUIRE_THREADS();
  cts_setup(&env, 0);
  for (i = 0; i < 6; i++) {
    w[i].client = env.client; /* unpinned: each thread uses its own stream id */
    w[i].id = i;
    pthread_create(&t[i], NULL, thread_program, &w[i]);
  }
  for (i = 0; i < 6; i++) {
    pthread_join(t[i], NULL);
    CHECK_MSG(w[i].ok, "thread %d saw a wrong result", i);
  }
  cts_teardown(&env);
}

/* a limit violation surfaces at flush() as ServerUnhealthy whose
 * first error is Launch(TooManyResources(...)) with requested and max. */
TEST(cts_resource_limit_surfaces_at_flush) {
  cts_env_t env;
  uint32_t data[4] = {0, 0, 0, 0};
  uint64_t delta = 1;
  cubert_handle_t h;
  cubert_launch_arguments_t args;
  cubert_cube_count_t count = cubert_cube_count_new_single();
  cubert_error_t err;
  char msg[512];
  cts_setup(&env, 0);
  CHECK_OK(cubert_client_create_from_slice(env.client, data, sizeof data, &h, NULL));
  args = args_of(&h, 1, &delta, 1);
  CHECK_OK(cubert_client_launch(env.client, &ck_add_scalar_u32_huge_cube_kernel, &count, &args, NULL));
  CHECK_STATUS(cubert_client_flush(env.client, &err), CUBERT_STATUS_SERVER_UNHEALTHY);
  CHECK(cubert_error_has_kind(&err, CUBERT_ERROR_LAUNCH_TOO_MANY_RESOURCES));
  CHECK(cubert_error_has_kind(&err, CUBERT_ERROR_RESOURCE_UNITS));
  cubert_error_format(&err, msg, sizeof msg);
  CHECK_MSG(strstr(msg, "2048") != NULL, "message lacks the requested units: %s", msg);
  /* drained: the next flush is healthy and the stream still works */
  CHECK_OK(cubert_client_flush(env.client, NULL));
  count = cubert_cube_count_new_single();
  CHECK_OK(cubert_client_read_one(env.client, &h, data, sizeof data, NULL));
  CHECK_OK(cubert_client_handle_release(env.client, &h, NULL));
  cts_teardown(&env);
}

TEST(cts_validate_mode_queues_the_violation) {
  cts_env_t env;
  uint32_t data[8] = {0};
  cubert_handle_t h;
  cubert_launch_arguments_t args;
  cubert_cube_count_t count = cubert_cube_count_new_single();
  cubert_error_t err;
  cts_options_t o;
  cubert_client_t *client = NULL;
  counting_allocator_t c;
  cubert_allocator_t a = counting_allocator_initialize(&c);
  memset(&o, 0, sizeof o);
  o.device_index = 5;
  o.bounds_check = CUBERT_BOUNDS_CHECK_VALIDATE;
  o.workers = 1;
  (void)env;
  CHECK_OK(cts_client_create(a, &o, &client, NULL));
  CHECK_OK(cubert_client_create_from_slice(client, data, sizeof data, &h, NULL));
  args = args_of(&h, 1, NULL, 0);
  CHECK_OK(cubert_client_launch_unchecked(client, &ck_oob_write_u32_kernel, &count, &args, NULL));
  CHECK_STATUS(cubert_client_sync(client, &err), CUBERT_STATUS_SERVER_UNHEALTHY);
  CHECK(cubert_error_has_kind(&err, CUBERT_ERROR_SERVER_VALIDATION));
  CHECK_EQ_U64(err.field[0], 1); /* one error aggregated */
  CHECK_EQ_U64(err.field[2], 8); /* the element index written (aggregate shifts fields by one) */
  /* checked mode (launch): the write is dropped, nothing queued */
  CHECK_OK(cubert_client_launch(client, &ck_oob_write_u32_kernel, &count, &args, NULL));
  CHECK_OK(cubert_client_sync(client, NULL));
  CHECK_OK(cubert_client_handle_release(client, &h, NULL));
  cubert_client_release(client);
  CHECK_EQ_I64(c.live_blocks, 0);
  counting_allocator_destroy(&c);
}

TEST(cts_launch_bad_arguments_enqueue_nothing) {
  cts_env_t env;
  uint32_t data[4] = {1, 2, 3, 4}, out[4];
  uint64_t delta = 1;
  cubert_handle_t h, dead, zeroed;
  cubert_launch_arguments_t args;
  cubert_cube_count_t count = cubert_cube_count_new_single();
  cubert_kernel_t no_entry = ck_add_scalar_u32_kernel;
  cts_setup(&env, 0);
  CHECK_OK(cubert_client_create_from_slice(env.client, data, sizeof data, &h, NULL));
  CHECK_OK(cubert_client_create_from_slice(env.client, data, sizeof data, &dead, NULL));
  CHECK_OK(cubert_client_handle_release(env.client, &dead, NULL));
  args = args_of(&dead, 1, &delta, 1);
  CHECK_STATUS(cubert_client_launch(env.client, &ck_add_scalar_u32_kernel, &count, &args, NULL),
               CUBERT_STATUS_INVALID_HANDLE);
  args = args_of(&h, 1, &delta, 0); /* the kernel needs one scalar */
  CHECK_STATUS(cubert_client_launch(env.client, &ck_add_scalar_u32_kernel, &count, &args, NULL),
               CUBERT_STATUS_INVALID_ARGUMENT);
  memset(&zeroed, 0, sizeof zeroed); /* a handle never created */
  args = args_of(&zeroed, 1, &delta, 1);
  CHECK_STATUS(cubert_client_launch(env.client, &ck_add_scalar_u32_kernel, &count, &args, NULL),
               CUBERT_STATUS_INVALID_HANDLE);
  CHECK_STATUS(cubert_client_launch_unchecked(env.client, &ck_add_scalar_u32_kernel, &count, &args,
                                              NULL),
               CUBERT_STATUS_INVALID_HANDLE);
  cubert_launch_arguments_initialize(&args); /* the same through the builder */
  CHECK_OK(cubert_launch_arguments_set_buffer(&args, 0, &zeroed));
  CHECK_OK(cubert_launch_arguments_set_u32(&args, 0, 1u));
  CHECK_STATUS(cubert_client_launch(env.client, &ck_add_scalar_u32_kernel, &count, &args, NULL),
               CUBERT_STATUS_INVALID_HANDLE);
  no_entry.cpu_entry = NULL; /* no entry point for any device */
  no_entry.cuda_entry_name = NULL;
  args = args_of(&h, 1, &delta, 1);
  CHECK_STATUS(cubert_client_launch(env.client, &no_entry, &count, &args, NULL),
               CUBERT_STATUS_COMPILATION_FAILED);
  CHECK_STATUS(cubert_client_launch(env.client, NULL, &count, &args, NULL),
               CUBERT_STATUS_INVALID_ARGUMENT);
  CHECK_OK(cubert_client_read_one(env.client, &h, out, sizeof out, NULL));
  CHECK_EQ_U64(out[0], 1); /* nothing ran */
  CHECK_OK(cubert_client_flush(env.client, NULL));
  CHECK_OK(cubert_client_handle_release(env.client, &h, NULL));
  cts_teardown(&env);
}

/* a read surfaces (and drains) the stream's queued errors. */
TEST(cts_read_returns_queued_errors) {
  cts_env_t env;
  uint32_t data[4] = {0, 0, 0, 0}, out[4];
  uint64_t delta = 1;
  cubert_handle_t h;
  cubert_launch_arguments_t args;
  cubert_cube_count_t count = cubert_cube_count_new_single();
  cubert_error_t err;
  cts_setup(&env, 0);
  CHECK(cubert_client_features(env.client) & CUBERT_FEATURE_DYNAMIC_CUBE_COUNT);
  CHECK_OK(cubert_client_create_from_slice(env.client, data, sizeof data, &h, NULL));
  args = args_of(&h, 1, &delta, 1);
  CHECK_OK(cubert_client_launch(env.client, &ck_add_scalar_u32_huge_cube_kernel, &count, &args, NULL));
  CHECK_OK(cubert_client_launch(env.client, &ck_add_scalar_u32_huge_cube_kernel, &count, &args, NULL));
  CHECK_STATUS(cubert_client_read_one(env.client, &h, out, sizeof out, &err),
               CUBERT_STATUS_SERVER_UNHEALTHY);
  CHECK_EQ_U64(err.field[0], 2); /* both queued errors, aggregated */
  CHECK_OK(cubert_client_read_one(env.client, &h, out, sizeof out, NULL)); /* drained */
  CHECK_OK(cubert_client_handle_release(env.client, &h, NULL));
  cts_teardown(&env);
}
