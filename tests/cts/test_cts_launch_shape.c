/* SPDX-License-Identifier: MIT */
/*
 * tests/cts/test_cts_launch_shape.c: launch arguments built with the typed
 * builder (cubert_launch_arguments_*), their checks, and the launch-time
 * shape (cube dim and dynamic shared bytes given at launch), on every
 * driver: odd and non-power-of-two cube sizes, the device's limit exactly,
 * and beyond it (refused, queued on the stream with requested and max).
 */
#include <stdlib.h>
#include <string.h>

#include "cts.h"
#include "cubert/cubert.h"
#include "cts_kernels_launch.h"

CUBERT_KERNEL_DESCRIPTOR(cts_scalars_typed_kernel, cts_scalars_typed, 1, 6, 0, 1, 1, 1);
/* descriptor default: 4 units, 16 bytes of dynamic shared memory */
CUBERT_KERNEL_DESCRIPTOR(cts_shape_probe_kernel, cts_shape_probe, 2, 0, 16, 4, 1, 1);

TEST(cts_launch_arguments_typed_scalars) {
  cts_env_t env;
  uint64_t zero[6] = {0}, out[6];
  cubert_handle_t h;
  cubert_launch_arguments_t args;
  cubert_cube_count_t one = cubert_cube_count_new_single();
  cts_setup(&env, 0);
  CHECK_OK(cubert_client_create_from_slice(env.client, zero, sizeof zero, &h, NULL));
  cubert_launch_arguments_initialize(&args);
  CHECK_OK(cubert_launch_arguments_set_buffer(&args, 0, &h));
  /* set out of order: the counts cover the highest slot */
  CHECK_OK(cubert_launch_arguments_set_i64(&args, 5, -5));
  CHECK_OK(cubert_launch_arguments_set_u32(&args, 0, 0xFFFFFFF0u));
  CHECK_OK(cubert_launch_arguments_set_i32(&args, 1, -7));
  CHECK_OK(cubert_launch_arguments_set_f32(&args, 2, 2.5f));
  CHECK_OK(cubert_launch_arguments_set_f64(&args, 3, 0.375));
  CHECK_OK(cubert_launch_arguments_set_u64(&args, 4, 0x123456789ABCDEFull));
  CHECK_EQ_U64(args.buffer_count, 1);
  CHECK_EQ_U64(args.scalar_count, 6);
  CHECK_EQ_U64(args.scalar_types[2], CUBERT_SCALAR_F32);
  CHECK(args.buffers == NULL && args.scalars == NULL); /* the builder's own slots */
  {
    cubert_launch_arguments_t copy = args; /* a built struct copies by assignment */
    CHECK_OK(cubert_client_launch(env.client, &cts_scalars_typed_kernel, &one, &copy, NULL));
  }
  CHECK_OK(cubert_client_read_one(env.client, &h, out, sizeof out, NULL));
  CHECK_EQ_U64(out[0], 0xFFFFFFF0u);
  CHECK_EQ_I64((int64_t)out[1], -7);
  CHECK_EQ_U64(out[2], 10);
  CHECK_EQ_U64(out[3], 3);
  CHECK_EQ_U64(out[4], 0x123456789ABCDEFull);
  CHECK_EQ_I64((int64_t)out[5], -5);
  CHECK_OK(cubert_client_handle_release(env.client, &h, NULL));
  cts_teardown(&env);
}

/* A refused launch: status, kind, reason, and the buffer untouched. */
static void refused(cts_env_t *env, const cubert_handle_t *h, const cubert_launch_arguments_t *args,
                    cubert_status_t status, const char *text) {
  cubert_error_t err;
  uint64_t out[6];
  cubert_cube_count_t one = cubert_cube_count_new_single();
  cubert_error_clear(&err);
  CHECK_STATUS(cubert_client_launch(env->client, &cts_scalars_typed_kernel, &one, args, &err),
               status);
  if (cubert_config_features() & CUBERT_FEATURE_ERROR_REASONS) /* else built without the texts */
    CHECK_MSG(strstr(err.reason, text) != NULL, "reason \"%s\", want \"%s\"", err.reason, text);
  else
    CHECK_EQ_U64(err.status, status);
  CHECK_OK(cubert_client_read_one(env->client, h, out, sizeof out, NULL));
  CHECK_EQ_U64(out[0], 0);
}

static void six_scalars(cubert_launch_arguments_t *args) {
  uint32_t i;
  for (i = 0; i < 6; i++) CHECK_OK(cubert_launch_arguments_set_u32(args, i, 1));
}

TEST(cts_launch_arguments_refused_with_the_reason) {
  cts_env_t env;
  uint64_t zero[6] = {0};
  uint64_t raw[6] = {0};
  cubert_handle_t h;
  cubert_launch_arguments_t args;
  cts_setup(&env, 0);
  CHECK_OK(cubert_client_create_from_slice(env.client, zero, sizeof zero, &h, NULL));
  /* a buffer slot beyond the limit: the setter fails, the struct is marked */
  cubert_launch_arguments_initialize(&args);
  CHECK_STATUS(cubert_launch_arguments_set_buffer(&args, CUBERT_LAUNCH_MAX_BUFFERS, &h),
               CUBERT_STATUS_INVALID_ARGUMENT);
  CHECK_EQ_U64(args.buffer_count, 0); /* slots unchanged */
  CHECK_OK(cubert_launch_arguments_set_buffer(&args, 0, &h));
  six_scalars(&args);
  refused(&env, &h, &args, CUBERT_STATUS_INVALID_ARGUMENT, "buffer slot beyond");
  /* a scalar slot beyond the limit */
  cubert_launch_arguments_initialize(&args);
  CHECK_OK(cubert_launch_arguments_set_buffer(&args, 0, &h));
  six_scalars(&args);
  CHECK_STATUS(cubert_launch_arguments_set_f32(&args, 99, 1.0f), CUBERT_STATUS_INVALID_ARGUMENT);
  CHECK_EQ_U64(args.scalar_count, 6);
  refused(&env, &h, &args, CUBERT_STATUS_INVALID_ARGUMENT, "scalar slot beyond");
  /* a NULL handle */
  cubert_launch_arguments_initialize(&args);
  CHECK_STATUS(cubert_launch_arguments_set_buffer(&args, 0, NULL), CUBERT_STATUS_INVALID_ARGUMENT);
  refused(&env, &h, &args, CUBERT_STATUS_INVALID_ARGUMENT, "NULL buffer handle");
  /* a gap: slot 1 set, slot 0 never */
  cubert_launch_arguments_initialize(&args);
  CHECK_OK(cubert_launch_arguments_set_buffer(&args, 1, &h));
  six_scalars(&args);
  refused(&env, &h, &args, CUBERT_STATUS_INVALID_ARGUMENT, "buffer slot below buffer_count");
  cubert_launch_arguments_initialize(&args);
  CHECK_OK(cubert_launch_arguments_set_buffer(&args, 0, &h));
  CHECK_OK(cubert_launch_arguments_set_u32(&args, 5, 1));
  refused(&env, &h, &args, CUBERT_STATUS_INVALID_ARGUMENT, "scalar slot below scalar_count");
  /* fewer scalars than the kernel reads */
  cubert_launch_arguments_initialize(&args);
  CHECK_OK(cubert_launch_arguments_set_buffer(&args, 0, &h));
  CHECK_OK(cubert_launch_arguments_set_u32(&args, 0, 1));
  refused(&env, &h, &args, CUBERT_STATUS_INVALID_ARGUMENT, "1 scalars given, the kernel takes 6");
  /* mixing the low-level form with the setters */
  cubert_launch_arguments_initialize(&args);
  args.scalars = raw;
  args.scalar_count = 6;
  CHECK_STATUS(cubert_launch_arguments_set_u32(&args, 0, 1), CUBERT_STATUS_INVALID_ARGUMENT);
  CHECK_OK(cubert_launch_arguments_set_buffer(&args, 0, &h));
  refused(&env, &h, &args, CUBERT_STATUS_INVALID_ARGUMENT, "caller's array");
  /* a zero cube dim component, shared bytes above 2^32 - 1 */
  cubert_launch_arguments_initialize(&args);
  CHECK_OK(cubert_launch_arguments_set_buffer(&args, 0, &h));
  six_scalars(&args);
  CHECK_STATUS(cubert_launch_arguments_set_cube_dim(&args, 4, 0, 1), CUBERT_STATUS_INVALID_ARGUMENT);
  CHECK_EQ_U64(args.cube_dim.x, 0);
  refused(&env, &h, &args, CUBERT_STATUS_INVALID_ARGUMENT, "zero component");
  cubert_launch_arguments_initialize(&args);
  CHECK_OK(cubert_launch_arguments_set_buffer(&args, 0, &h));
  six_scalars(&args);
  CHECK_STATUS(cubert_launch_arguments_set_shared_memory_bytes(&args, (uint64_t)1 << 32),
               CUBERT_STATUS_INVALID_ARGUMENT);
  refused(&env, &h, &args, CUBERT_STATUS_INVALID_ARGUMENT, "above 2^32 - 1");
  /* the same shapes written into the fields directly */
  cubert_launch_arguments_initialize(&args);
  CHECK_OK(cubert_launch_arguments_set_buffer(&args, 0, &h));
  six_scalars(&args);
  args.cube_dim.x = 3;
  refused(&env, &h, &args, CUBERT_STATUS_INVALID_ARGUMENT, "zero component");
  args.cube_dim.x = 0;
  args.has_shared_memory_bytes = 1;
  args.shared_memory_bytes = (uint64_t)1 << 33;
  refused(&env, &h, &args, CUBERT_STATUS_INVALID_ARGUMENT, "above 2^32 - 1");
  /* a struct never initialized (here: zeroed) is refused by the setters and the launch */
  memset(&args, 0, sizeof args);
  CHECK_STATUS(cubert_launch_arguments_set_buffer(&args, 0, &h), CUBERT_STATUS_INVALID_ARGUMENT);
  CHECK_STATUS(cubert_launch_arguments_set_u32(&args, 0, 1), CUBERT_STATUS_INVALID_ARGUMENT);
  CHECK_STATUS(cubert_launch_arguments_set_cube_dim(&args, 1, 1, 1), CUBERT_STATUS_INVALID_ARGUMENT);
  CHECK_STATUS(cubert_launch_arguments_set_shared_memory_bytes(&args, 1),
               CUBERT_STATUS_INVALID_ARGUMENT);
  CHECK_EQ_U64(args.buffer_count, 0); /* nothing written */
  refused(&env, &h, &args, CUBERT_STATUS_INVALID_ARGUMENT, "not initialized");
  /* NULL struct: the setters refuse without touching anything */
  cubert_launch_arguments_initialize(NULL);
  CHECK_STATUS(cubert_launch_arguments_set_buffer(NULL, 0, &h), CUBERT_STATUS_INVALID_ARGUMENT);
  CHECK_STATUS(cubert_launch_arguments_set_u64(NULL, 0, 1), CUBERT_STATUS_INVALID_ARGUMENT);
  CHECK_STATUS(cubert_launch_arguments_set_cube_dim(NULL, 1, 1, 1), CUBERT_STATUS_INVALID_ARGUMENT);
  CHECK_STATUS(cubert_launch_arguments_set_shared_memory_bytes(NULL, 1),
               CUBERT_STATUS_INVALID_ARGUMENT);
  CHECK_OK(cubert_client_handle_release(env.client, &h, NULL));
  cts_teardown(&env);
}

/* Launch cts_shape_probe over `cubes` cubes of (x, y, z) units with `shared`
 * bytes (x == 0: the descriptor's shape) and check what it saw and wrote. */
static void probe(cts_env_t *env, uint32_t x, uint32_t y, uint32_t z, uint32_t shared,
                  uint32_t cubes) {
  const uint32_t units = x ? x * y * z : 4u;
  const uint64_t n = (uint64_t)units * cubes - (units > 2 ? 2u : 0u); /* a partial last cube */
  uint32_t *out = (uint32_t *)calloc((size_t)n, sizeof(uint32_t));
  uint64_t info[5] = {0};
  cubert_handle_t h[2];
  cubert_launch_arguments_t args;
  cubert_cube_count_t count = cubert_cube_count_new_1d(cubes);
  uint64_t i;
  CHECK(out != NULL);
  if (!out) return;
  CHECK_OK(cubert_client_create_from_slice(env->client, out, n * sizeof(uint32_t), &h[0], NULL));
  CHECK_OK(cubert_client_create_from_slice(env->client, info, sizeof info, &h[1], NULL));
  cubert_launch_arguments_initialize(&args);
  CHECK_OK(cubert_launch_arguments_set_buffer(&args, 0, &h[0]));
  CHECK_OK(cubert_launch_arguments_set_buffer(&args, 1, &h[1]));
  if (x) {
    CHECK_OK(cubert_launch_arguments_set_cube_dim(&args, x, y, z));
    CHECK_OK(cubert_launch_arguments_set_shared_memory_bytes(&args, shared));
  }
  CHECK_OK(cubert_client_launch(env->client, &cts_shape_probe_kernel, &count, &args, NULL));
  CHECK_OK(cubert_client_read_one(env->client, &h[1], info, sizeof info, NULL));
  CHECK_OK(cubert_client_read_one(env->client, &h[0], out, n * sizeof(uint32_t), NULL));
  CHECK_EQ_U64(info[0], x ? x : 4u);
  CHECK_EQ_U64(info[1], x ? y : 1u);
  CHECK_EQ_U64(info[2], x ? z : 1u);
  CHECK_EQ_U64(info[3], units);
  CHECK_EQ_U64(info[4], x ? shared : 16u);
  for (i = 0; i < n; i++) {
    uint32_t want = units - (uint32_t)(i % units) + 1000u * (uint32_t)(i / units);
    if (out[i] != want) {
      CHECK_MSG(0, "dim (%u,%u,%u): out[%llu] = %u, want %u", (unsigned)x, (unsigned)y, (unsigned)z,
                (unsigned long long)i, (unsigned)out[i], (unsigned)want);
      break;
    }
  }
  CHECK_OK(cubert_client_handle_release(env->client, &h[0], NULL));
  CHECK_OK(cubert_client_handle_release(env->client, &h[1], NULL));
  free(out);
}

TEST(cts_launch_shape_cube_dim_and_shared_bytes_at_launch) {
  cts_env_t env;
  cubert_device_properties_t p;
  uint32_t max_x;
  cts_setup(&env, 0);
  cubert_client_properties(env.client, &p);
  max_x = p.hardware.max_cube_dim.x < p.hardware.max_units_per_cube ? p.hardware.max_cube_dim.x
                                                                    : (uint32_t)p.hardware.max_units_per_cube;
  probe(&env, 0, 0, 0, 0, 3);            /* the descriptor's: 4 units, 16 bytes */
  probe(&env, 1, 1, 1, 4, 5);            /* one unit */
  probe(&env, 3, 1, 1, 12, 4);           /* odd */
  probe(&env, 7, 3, 1, 84 + 36, 3);      /* 21 units, more shared than needed */
  probe(&env, 5, 2, 3, 120, 2);          /* 3-D, 30 units */
  probe(&env, 96, 1, 1, 384, 3);         /* three warps */
  probe(&env, 100, 10, 1, 4000, 2);      /* 1000 units */
  probe(&env, max_x, 1, 1, max_x * 4u, 2); /* the device's limit exactly */
  if (p.hardware.max_shared_memory_size >= 50000)
    probe(&env, 33, 1, 1, 50000, 2);     /* above 48 KiB: CUDA's opt-in attribute */
  cts_teardown(&env);
}

/* A shape beyond the device's limits: queued on the stream as
 * LAUNCH_TOO_MANY_RESOURCES with the requested and the maximum value; the
 * kernel does not run. */
static void beyond(cts_env_t *env, const cubert_handle_t *h, uint32_t x, uint32_t y, uint32_t z,
                   uint64_t shared, cubert_error_kind_t kind, cubert_error_t *first) {
  cubert_launch_arguments_t args;
  cubert_error_t err;
  uint64_t info[5];
  cubert_cube_count_t one = cubert_cube_count_new_single();
  cubert_launch_arguments_initialize(&args);
  CHECK_OK(cubert_launch_arguments_set_buffer(&args, 0, &h[0]));
  CHECK_OK(cubert_launch_arguments_set_buffer(&args, 1, &h[1]));
  CHECK_OK(cubert_launch_arguments_set_cube_dim(&args, x, y, z));
  CHECK_OK(cubert_launch_arguments_set_shared_memory_bytes(&args, shared));
  CHECK_OK(cubert_client_launch(env->client, &cts_shape_probe_kernel, &one, &args, NULL));
  CHECK_STATUS(cubert_client_flush(env->client, &err), CUBERT_STATUS_SERVER_UNHEALTHY);
  CHECK(cubert_error_has_kind(&err, CUBERT_ERROR_LAUNCH_TOO_MANY_RESOURCES));
  CHECK_MSG(cubert_error_has_kind(&err, kind), "kind %s missing", cubert_error_kind_name(kind));
  CHECK_OK(cubert_error_unhealthy_first(&err, first));
  CHECK_EQ_U64(first->status, CUBERT_STATUS_LIMIT_EXCEEDED);
  CHECK_OK(cubert_client_read_one(env->client, &h[1], info, sizeof info, NULL));
  CHECK_EQ_U64(info[3], 0); /* did not run */
}

TEST(cts_launch_shape_beyond_the_device_limits_is_refused) {
  cts_env_t env;
  cubert_device_properties_t p;
  uint32_t zero[8] = {0};
  uint64_t info[5] = {0};
  cubert_handle_t h[2];
  cubert_error_t first;
  cts_setup(&env, 0);
  cubert_client_properties(env.client, &p);
  CHECK_OK(cubert_client_create_from_slice(env.client, zero, sizeof zero, &h[0], NULL));
  CHECK_OK(cubert_client_create_from_slice(env.client, info, sizeof info, &h[1], NULL));
  /* x one above max_cube_dim.x */
  beyond(&env, h, p.hardware.max_cube_dim.x + 1u, 1, 1, 4096, CUBERT_ERROR_RESOURCE_CUBE_DIM,
         &first);
  CHECK_EQ_U64(first.field[0], p.hardware.max_cube_dim.x + 1u);
  CHECK_EQ_U64(first.field2[0], p.hardware.max_cube_dim.x);
  /* z one above max_cube_dim.z */
  beyond(&env, h, 1, 1, p.hardware.max_cube_dim.z + 1u, 0, CUBERT_ERROR_RESOURCE_CUBE_DIM, &first);
  CHECK_EQ_U64(first.field[2], p.hardware.max_cube_dim.z + 1u);
  /* every axis within its max, the product above max_units_per_cube */
  beyond(&env, h, 64, 32, 1, 8192, CUBERT_ERROR_RESOURCE_UNITS, &first);
  CHECK_EQ_U64(first.field[0], 2048);
  CHECK_EQ_U64(first.field[1], p.hardware.max_units_per_cube);
  /* dynamic shared memory one byte above the device's */
  beyond(&env, h, 4, 1, 1, p.hardware.max_shared_memory_size + 1u,
         CUBERT_ERROR_RESOURCE_SHARED_MEMORY, &first);
  CHECK_EQ_U64(first.field[0], p.hardware.max_shared_memory_size + 1u);
  CHECK_EQ_U64(first.field[1], p.hardware.max_shared_memory_size);
  CHECK_OK(cubert_client_handle_release(env.client, &h[0], NULL));
  CHECK_OK(cubert_client_handle_release(env.client, &h[1], NULL));
  cts_teardown(&env);
}
