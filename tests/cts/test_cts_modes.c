/* SPDX-License-Identifier: MIT */
/* Conformance: execution modes on the CPU server through the client
 * (Checked, Validate, Unchecked; the BoundsCheckMode mapping of
 * launch_unchecked) and the resource limits checked before a launch
 *. */
#include "cts.h"

#include "cubert/cpu.h"
#include "cubert/cube.h"
#include "cubert/kernel.h"
#include "cts_kernels.h"

/* cts_oob_rw_u32 (cts_kernels.h): out[0] = buf[len], buf[len] = 77, out[1] = 1. */
CUBERT_KERNEL_DESCRIPTOR(cts_oob_rw_kernel, cts_oob_rw_u32, 2, 0, 0, 4, 1, 1);

typedef struct mode_env_t {
  counting_allocator_t counting;
  cubert_client_t *client;
  cubert_handle_t parent, view, out;
} mode_env_t;

/* A client with `mode`; parent = {10..17}, view = its first 4 elements. */
static void mode_setup(mode_env_t *m, uint32_t index, cubert_bounds_check_mode_t mode) {
  cts_options_t o;
  uint32_t data[8] = {10, 11, 12, 13, 14, 15, 16, 17}, zero[2] = {5, 5};
  cubert_allocator_t a = counting_allocator_initialize(&m->counting);
  memset(&o, 0, sizeof o);
  o.device_index = index;
  o.bounds_check = mode;
  o.workers = 2;
  o.max_streams = 4;
  CHECK_OK(cts_client_create(a, &o, &m->client, NULL));
  CHECK_OK(cubert_client_create_from_slice(m->client, data, sizeof data, &m->parent, NULL));
  CHECK_OK(cubert_client_handle_offset(m->client, &m->parent, 0, 16, &m->view, NULL));
  CHECK_EQ_U64(cubert_handle_size_in_used(&m->view), 16);
  CHECK_OK(cubert_client_create_from_slice(m->client, zero, sizeof zero, &m->out, NULL));
}

static void mode_teardown(mode_env_t *m) {
  CHECK_OK(cubert_client_handle_release(m->client, &m->parent, NULL));
  CHECK_OK(cubert_client_handle_release(m->client, &m->view, NULL));
  CHECK_OK(cubert_client_handle_release(m->client, &m->out, NULL));
  cubert_client_release(m->client);
  CHECK_EQ_I64(m->counting.live_blocks, 0);
  counting_allocator_destroy(&m->counting);
}

static cubert_status_t mode_launch(mode_env_t *m, int unchecked, cubert_error_t *err) {
  cubert_binding_t b[2];
  cubert_launch_arguments_t args;
  cubert_cube_count_t count = cubert_cube_count_new_single();
  b[0] = m->view;
  b[1] = m->out;
  cubert_launch_arguments_initialize(&args);
  args.buffers = b;
  args.buffer_count = 2;
  args.scalars = NULL;
  args.scalar_count = 0;
  return unchecked ? cubert_client_launch_unchecked(m->client, &cts_oob_rw_kernel, &count, &args, err)
                   : cubert_client_launch(m->client, &cts_oob_rw_kernel, &count, &args, err);
}

static void read_results(mode_env_t *m, uint32_t parent[8], uint32_t out[2]) {
  CHECK_OK(cubert_client_read_one(m->client, &m->parent, parent, 8 * sizeof(uint32_t), NULL));
  CHECK_OK(cubert_client_read_one(m->client, &m->out, out, 2 * sizeof(uint32_t), NULL));
}

/* Checked: the OOB read gives 0 and the OOB write is dropped; no error. */
TEST(cts_mode_checked_reads_zero_and_drops_writes) {
  mode_env_t m;
  uint32_t parent[8], out[2];
  mode_setup(&m, 20, CUBERT_BOUNDS_CHECK_AUTO);
  CHECK_OK(mode_launch(&m, 0, NULL)); /* launch always runs Checked */
  CHECK_OK(cubert_client_sync(m.client, NULL));
  read_results(&m, parent, out);
  CHECK_EQ_U64(out[1], 1);
  CHECK_EQ_U64(out[0], 0);
  CHECK_EQ_U64(parent[4], 14);
  mode_teardown(&m);
}

/* Unchecked (launch_unchecked under Auto): raw accesses reach past the view
 * into the parent allocation. */
TEST(cts_mode_unchecked_is_raw) {
  mode_env_t m;
  uint32_t parent[8], out[2];
  mode_setup(&m, 21, CUBERT_BOUNDS_CHECK_AUTO);
  CHECK_OK(mode_launch(&m, 1, NULL));
  CHECK_OK(cubert_client_sync(m.client, NULL));
  read_results(&m, parent, out);
  CHECK_EQ_U64(out[1], 1);
  CHECK_EQ_U64(out[0], 14); /* the parent's element 4 */
  CHECK_EQ_U64(parent[4], 77);
  CHECK_EQ_U64(parent[3], 13);
  CHECK_EQ_U64(parent[5], 15);
  mode_teardown(&m);
}

/* Enforce: launch_unchecked runs Checked. */
TEST(cts_mode_enforce_maps_unchecked_to_checked) {
  mode_env_t m;
  uint32_t parent[8], out[2];
  mode_setup(&m, 22, CUBERT_BOUNDS_CHECK_ENFORCE);
  CHECK_OK(mode_launch(&m, 1, NULL));
  CHECK_OK(cubert_client_sync(m.client, NULL));
  read_results(&m, parent, out);
  CHECK_EQ_U64(out[1], 1);
  CHECK_EQ_U64(out[0], 0);
  CHECK_EQ_U64(parent[4], 14);
  mode_teardown(&m);
}

/* Validate: as Checked, and an error naming the kernel, the buffer and the
 * index is queued on the stream (the first violation: the read of buf[4]). */
TEST(cts_mode_validate_queues_error_naming_kernel_buffer_index) {
  mode_env_t m;
  uint32_t parent[8], out[2];
  cubert_error_t err, first;
  char msg[512];
  mode_setup(&m, 23, CUBERT_BOUNDS_CHECK_VALIDATE);
  CHECK_OK(mode_launch(&m, 1, NULL));
  CHECK_STATUS(cubert_client_sync(m.client, &err), CUBERT_STATUS_SERVER_UNHEALTHY);
  CHECK(cubert_error_has_kind(&err, CUBERT_ERROR_SERVER_VALIDATION));
  CHECK_EQ_U64(cubert_error_aggregate_count(&err), 1);
  CHECK_OK(cubert_error_unhealthy_first(&err, &first));
  CHECK_EQ_U64(first.field[0], 0); /* buffer slot */
  CHECK_EQ_U64(first.field[1], 4); /* element index */
  CHECK_EQ_U64(first.field[2], 4); /* the buffer's length */
  cubert_error_format(&err, msg, sizeof msg);
  CHECK_MSG(strstr(msg, "cts_oob_rw_u32") != NULL, "message lacks the kernel: %s", msg);
  read_results(&m, parent, out);
  CHECK_EQ_U64(out[1], 1);
  CHECK_EQ_U64(out[0], 0);
  CHECK_EQ_U64(parent[4], 14);
  /* launch (not unchecked) under Validate runs Checked: nothing queued */
  CHECK_OK(mode_launch(&m, 0, NULL));
  CHECK_OK(cubert_client_sync(m.client, NULL));
  mode_teardown(&m);
}

/* ---- resource limits: requested and max in the error ---- */

CUBERT_KERNEL_DESCRIPTOR(cts_nop_kernel, cts_nop, 1, 0, 0, 1, 1, 1);
CUBERT_KERNEL_DESCRIPTOR(cts_wide_dim_kernel, cts_nop, 1, 0, 0, 2048, 1, 1);
CUBERT_KERNEL_DESCRIPTOR(cts_deep_dim_kernel, cts_nop, 1, 0, 0, 1, 1, 65);
CUBERT_KERNEL_DESCRIPTOR(cts_units_kernel, cts_nop, 1, 0, 0, 64, 32, 1);
CUBERT_KERNEL_DESCRIPTOR(cts_shared_kernel, cts_nop, 1, 0, 0, 1, 1, 1); /* shared set per device */

static void limit_case(cubert_client_t *client, const cubert_handle_t *h,
                       const cubert_kernel_t *kernel, cubert_cube_count_t count,
                       cubert_error_kind_t kind, cubert_error_t *first) {
  cubert_launch_arguments_t args;
  cubert_error_t err;
  uint32_t out[1];
  cubert_launch_arguments_initialize(&args);
  args.buffers = h;
  args.buffer_count = 1;
  args.scalars = NULL;
  args.scalar_count = 0;
  CHECK_OK(cubert_client_launch(client, kernel, &count, &args, NULL));
  CHECK_STATUS(cubert_client_flush(client, &err), CUBERT_STATUS_SERVER_UNHEALTHY);
  CHECK(cubert_error_has_kind(&err, CUBERT_ERROR_LAUNCH_TOO_MANY_RESOURCES));
  CHECK_MSG(cubert_error_has_kind(&err, kind), "kind %s missing",
            cubert_error_kind_name(kind));
  CHECK_OK(cubert_error_unhealthy_first(&err, first));
  CHECK_EQ_U64(first->status, CUBERT_STATUS_LIMIT_EXCEEDED);
  /* the kernel did not run */
  CHECK_OK(cubert_client_read_one(client, h, out, sizeof out, NULL));
  CHECK_EQ_U64(out[0], 0);
}

TEST(cts_resource_limits_each_reported_with_requested_and_max) {
  cts_env_t env;
  uint32_t data[1] = {0}, out[1];
  cubert_handle_t h;
  cubert_error_t first;
  cubert_device_properties_t p;
  cubert_launch_arguments_t args;
  cubert_kernel_t shared;
  cubert_cube_count_t one = cubert_cube_count_new_single();
  cts_setup(&env, 0);
  cubert_client_properties(env.client, &p);
  CHECK_OK(cubert_client_create_from_slice(env.client, data, sizeof data, &h, NULL));
  /* CubeDim x above max_cube_dim.x */
  limit_case(env.client, &h, &cts_wide_dim_kernel, one, CUBERT_ERROR_RESOURCE_CUBE_DIM, &first);
  CHECK_EQ_U64(first.field[0], 2048);
  CHECK_EQ_U64(first.field2[0], p.hardware.max_cube_dim.x);
  CHECK_EQ_U64(first.field2[2], p.hardware.max_cube_dim.z);
  /* CubeDim z above max_cube_dim.z (64) */
  limit_case(env.client, &h, &cts_deep_dim_kernel, one, CUBERT_ERROR_RESOURCE_CUBE_DIM, &first);
  CHECK_EQ_U64(first.field[2], 65);
  CHECK_EQ_U64(first.field2[2], 64);
  /* units per cube: 64 x 32 = 2048 > 1024 (every axis within its max) */
  limit_case(env.client, &h, &cts_units_kernel, one, CUBERT_ERROR_RESOURCE_UNITS, &first);
  CHECK_EQ_U64(first.field[0], 2048);
  CHECK_EQ_U64(first.field[1], p.hardware.max_units_per_cube);
  /* shared memory per cube: 1 KiB above the device's */
  shared = cts_shared_kernel;
  shared.shared_memory_bytes = (uint32_t)p.hardware.max_shared_memory_size + 1024u;
  limit_case(env.client, &h, &shared, one, CUBERT_ERROR_RESOURCE_SHARED_MEMORY, &first);
  CHECK_EQ_U64(first.field[0], p.hardware.max_shared_memory_size + 1024u);
  CHECK_EQ_U64(first.field[1], p.hardware.max_shared_memory_size);
  /* cube count above the maximum on the y axis */
  limit_case(env.client, &h, &cts_nop_kernel, cubert_cube_count_new_2d(1, 70000),
             CUBERT_ERROR_RESOURCE_UNITS, &first);
  CHECK_EQ_U64(first.field[0], 70000);
  CHECK_EQ_U64(first.field[1], p.hardware.max_cube_count.y);
  /* at the limits exactly: runs */
  cubert_launch_arguments_initialize(&args);
  args.buffers = &h;
  args.buffer_count = 1;
  args.scalars = NULL;
  args.scalar_count = 0;
  one = cubert_cube_count_new_2d(1, p.hardware.max_cube_count.y);
  CHECK_OK(cubert_client_launch(env.client, &cts_nop_kernel, &one, &args, NULL));
  CHECK_OK(cubert_client_read_one(env.client, &h, out, sizeof out, NULL));
  CHECK_EQ_U64(out[0], 1);
  CHECK_OK(cubert_client_handle_release(env.client, &h, NULL));
  cts_teardown(&env);
}
