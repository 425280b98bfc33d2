/* SPDX-License-Identifier: MIT */
/* the server at its edges, over the fake driver of edges_driver.h: a table
 * missing each required primitive in turn, a driver without a name or optional
 * primitives (UNSUPPORTED naming what is missing), launches refused by their
 * arguments or queued for their limits (x, y and z each), tensor copies of every
 * shape the server copies or refuses (rank 0, contiguous, pitched, unsupported
 * strides, too small a destination), a device lost without a record (noticed by
 * an event query), asynchronous driver errors queued before the server's own, and
 * a device whose memory alignment is 0. */
#include "edges_driver.h"
#include "cubert/cubert.h"

TEST(server_edges_driver_missing_each_required_primitive) {
  counting_allocator_t c;
  cubert_allocator_t a = counting_allocator_initialize(&c);
  fake_device_t d;
  cubert_server_options_t o;
  cubert_client_t *client = NULL;
  cubert_error_t e;
  int i;
  ed_options(&o, 10);
  memset(&d, 0, sizeof d);
  d.allocator = a;
  for (i = 0; i < 15; i++) {
    cubert_driver_t t = fake_driver;
    switch (i) {
      case 0: t.destroy = NULL; break;
      case 1: t.properties = NULL; break;
      case 2: t.memory_alloc = NULL; break;
      case 3: t.memory_free = NULL; break;
      case 4: t.copy = NULL; break;
      case 5: t.launch = NULL; break;
      case 6: t.stream_create = NULL; break;
      case 7: t.stream_destroy = NULL; break;
      case 8: t.stream_synchronize = NULL; break;
      case 9: t.stream_errors = NULL; break;
      case 10: t.event_record = NULL; break;
      case 11: t.event_wait = NULL; break;
      case 12: t.event_query = NULL; break;
      case 13: t.event_synchronize = NULL; break;
      default: t.event_destroy = NULL; break;
    }
    cubert_error_clear(&e);
    CHECK_STATUS(cubert_server_client_create(a, &o, &t, &d, &client, &e), CUBERT_STATUS_INVALID_ARGUMENT);
    CHECK_EQ_U64(cubert_error_kind(&e), CUBERT_ERROR_INVALID_ARGUMENT);
    CHECK(client == NULL);
  }
  CHECK_EQ_I64(d.calls, 0);
  CHECK_EQ_I64(d.destroyed, 0);
  CHECK_EQ_I64(c.live_blocks, 0);
  cubert_server_options_initialize(NULL); /* a no-op */
  counting_allocator_destroy(&c);
}

/* Options left at 0 take the defaults; a driver without a name is "(unnamed)". */
TEST(server_edges_unnamed_driver_and_default_options) {
  TEST_REQUIRE_FEATURE(CUBERT_FEATURE_COLLECTIVE_OPS | CUBERT_FEATURE_ERROR_REASONS);
  counting_allocator_t c;
  cubert_allocator_t a = counting_allocator_initialize(&c);
  fake_device_t d;
  cubert_server_options_t o;
  cubert_driver_t t = fake_driver;
  cubert_client_t *client;
  cubert_error_t e;
  cubert_device_id_t self;
  cubert_handle_t h;
  uint8_t data[8] = {1};
  t.name = NULL;
  ed_options(&o, 11);
  o.max_streams = 0;
  o.gc_capacity = 0;
  client = ed_client(a, &d, &o, &t);
  self = cubert_client_device(client);
  CHECK_STATUS(cubert_client_ensure_init_collective(client, &self, 1, &e), CUBERT_STATUS_UNSUPPORTED);
  CHECK_EQ_U64(cubert_error_kind(&e), CUBERT_ERROR_IO_UNSUPPORTED_IO_OPERATION);
  CHECK_MSG(strstr(e.reason, "(unnamed) driver has no collectives") != NULL, "reason: %s", e.reason);
  /* stream 20 lands in slot 20 mod 16 (the default slot count) */
  cubert_client_set_stream(client, 20);
  CHECK_OK(cubert_client_create_from_slice(client, data, sizeof data, &h, NULL));
  CHECK_EQ_U64(h.stream, 20);
  CHECK_OK(cubert_client_handle_release(client, &h, NULL));
  fake_release(client, &d, &c);
}

static void ed_kernel2(const cubert_kernel_args_t *args, cubert_kernel_cube_t *cube) {
  (void)args;
  (void)cube;
}

/* Launches: refused at once by their arguments (nothing reaches the driver), or
 * queued for a limit of the device (returned at the next sync). */
TEST(server_edges_launch_arguments_and_limits) {
  counting_allocator_t c;
  cubert_allocator_t a = counting_allocator_initialize(&c);
  fake_device_t d;
  cubert_server_options_t o;
  cubert_client_t *client;
  cubert_error_t e;
  cubert_handle_t h, small;
  cubert_launch_arguments_t args;
  cubert_kernel_t k = {"ed_limits", ed_kernel2, NULL, NULL, 0, 0, {1, 1, 1}, 1, 1, 0, {0}};
  cubert_cube_count_t one = cubert_cube_count_new_single(), count;
  uint64_t scalars[CUBERT_KERNEL_MAX_SCALARS + 1] = {0};
  cubert_binding_t buffers[CUBERT_KERNEL_MAX_BUFFERS + 1];
  uint8_t data[16] = {0};
  int i;
  ed_options(&o, 12);
  client = ed_client(a, &d, &o, &fake_driver);
  CHECK_OK(cubert_client_create_from_slice(client, data, sizeof data, &h, NULL));
  CHECK_OK(cubert_client_create_from_slice(client, data, 8, &small, NULL));
  for (i = 0; i <= CUBERT_KERNEL_MAX_BUFFERS; i++) buffers[i] = h;
  cubert_launch_arguments_initialize(&args);
  args.buffers = buffers;
  args.buffer_count = 1;
  args.scalars = scalars;
  args.scalar_count = 1;
  CHECK_OK(cubert_client_launch(client, &k, &one, &args, NULL));
  CHECK_EQ_I64(d.launches, 1);
  /* argument refusals */
  for (i = 0; i < 3; i++) {
    cubert_kernel_t z = k;
    if (i == 0) z.cube_dim.x = 0;
    if (i == 1) z.cube_dim.y = 0;
    if (i == 2) z.cube_dim.z = 0;
    CHECK_STATUS(cubert_client_launch(client, &z, &one, &args, &e), CUBERT_STATUS_INVALID_ARGUMENT);
  }
  args.buffer_count = 0;
  CHECK(cubert_client_launch(client, &k, &one, &args, &e) != CUBERT_STATUS_OK);
  CHECK(cubert_error_has_kind(&e, CUBERT_ERROR_SERVER_VALIDATION));
  CHECK_EQ_U64(e.field[0], 0);
  CHECK_EQ_U64(e.field[1], 1);
  args.buffer_count = CUBERT_KERNEL_MAX_BUFFERS + 1;
  CHECK(cubert_client_launch(client, &k, &one, &args, &e) != CUBERT_STATUS_OK);
  CHECK(cubert_error_has_kind(&e, CUBERT_ERROR_SERVER_VALIDATION));
  args.buffer_count = 1;
  args.scalar_count = 0;
  CHECK(cubert_client_launch(client, &k, &one, &args, &e) != CUBERT_STATUS_OK);
  CHECK(cubert_error_has_kind(&e, CUBERT_ERROR_SERVER_VALIDATION));
  args.scalar_count = CUBERT_KERNEL_MAX_SCALARS + 1;
  CHECK(cubert_client_launch(client, &k, &one, &args, &e) != CUBERT_STATUS_OK);
  CHECK(cubert_error_has_kind(&e, CUBERT_ERROR_SERVER_VALIDATION));
  args.scalar_count = 1;
  /* a dynamic count needs 12 bytes */
  count = cubert_cube_count_new_dynamic(&small);
  CHECK_STATUS(cubert_client_launch(client, &k, &count, &args, &e), CUBERT_STATUS_OUT_OF_RANGE);
  CHECK_EQ_U64(e.field[0], 8);
  /* released handles: as a buffer and as a dynamic count */
  {
    cubert_handle_t dead;
    CHECK_OK(cubert_client_create_from_slice(client, data, sizeof data, &dead, NULL));
    CHECK_OK(cubert_client_handle_release(client, &dead, NULL));
    count = cubert_cube_count_new_dynamic(&dead);
    CHECK(cubert_client_launch(client, &k, &count, &args, &e) != CUBERT_STATUS_OK);
    CHECK(e.depth > 0);
    buffers[0] = dead;
    CHECK(cubert_client_launch(client, &k, &one, &args, &e) != CUBERT_STATUS_OK);
    CHECK(e.depth > 0);
    buffers[0] = h;
  }
  CHECK_EQ_I64(d.launches, 1);
  /* limits: each axis of the cube dim, of the static count; units; shared memory */
  for (i = 0; i < 8; i++) {
    cubert_kernel_t z = k;
    count = one;
    if (i == 0) z.cube_dim.x = 2000;
    if (i == 1) z.cube_dim.y = 2000;
    if (i == 2) z.cube_dim.z = 100;
    if (i == 3) z.cube_dim.x = z.cube_dim.y = 64; /* 4096 units > 1024 */
    if (i == 4) z.shared_memory_bytes = 4096;
    if (i == 5) count = cubert_cube_count_new_3d(2000, 1, 1);
    if (i == 6) count = cubert_cube_count_new_3d(1, 2000, 1);
    if (i == 7) count = cubert_cube_count_new_3d(1, 1, 100);
    CHECK_OK(cubert_client_launch(client, &z, &count, &args, NULL)); /* queued */
    CHECK_STATUS(cubert_client_sync(client, &e), CUBERT_STATUS_SERVER_UNHEALTHY);
    CHECK(cubert_error_has_kind(&e, CUBERT_ERROR_LAUNCH_TOO_MANY_RESOURCES));
    CHECK(cubert_error_has_kind(&e, i < 3    ? CUBERT_ERROR_RESOURCE_CUBE_DIM
                                : i == 4 ? CUBERT_ERROR_RESOURCE_SHARED_MEMORY
                                             : CUBERT_ERROR_RESOURCE_UNITS));
  }
  CHECK_EQ_I64(d.launches, 1);
  /* the driver's asynchronous errors come before the server's own */
  d.async_errors = 1;
  k.cube_dim.x = 2000;
  CHECK_OK(cubert_client_launch(client, &k, &one, &args, NULL));
  CHECK_STATUS(cubert_client_sync(client, &e), CUBERT_STATUS_SERVER_UNHEALTHY);
  CHECK(cubert_error_has_kind(&e, CUBERT_ERROR_SERVER_GENERIC)); /* the first */
  CHECK_EQ_U64(e.field[0], 2);                                    /* of two */
  CHECK_EQ_I64(d.async_errors, 0);
  CHECK_OK(cubert_client_sync(client, NULL));
  CHECK_OK(cubert_client_handle_release(client, &h, NULL));
  CHECK_OK(cubert_client_handle_release(client, &small, NULL));
  fake_release(client, &d, &c);
}

/* Tensor reads of every shape: rank 0 (the whole binding), pitched rows (2-D
 * and 3-D), and refusals: strides the server cannot copy, a tensor larger than
 * its memory, a destination too small. */
TEST(server_edges_tensor_read_shapes) {
  counting_allocator_t c;
  cubert_allocator_t a = counting_allocator_initialize(&c);
  fake_device_t d;
  cubert_server_options_t o;
  cubert_client_t *client;
  cubert_error_t e;
  cubert_handle_t h;
  cubert_copy_descriptor_t cd;
  uint8_t data[256], out[256];
  void *dsts[1];
  uint64_t dst_size = sizeof out;
  int i;
  for (i = 0; i < 256; i++) data[i] = (uint8_t)i;
  ed_options(&o, 13);
  client = ed_client(a, &d, &o, &fake_driver);
  CHECK_OK(cubert_client_create_from_slice(client, data, sizeof data, &h, NULL));
  dsts[0] = out;
  memset(&cd, 0, sizeof cd);
  cd.binding = h;
  /* rank 0: the binding's bytes */
  memset(out, 0, sizeof out);
  CHECK_OK(cubert_client_read_tensor(client, &cd, 1, dsts, &dst_size, NULL));
  CHECK(memcmp(out, data, sizeof data) == 0);
  /* 3-D pitched: 2 x 2 rows of 4 u32, rows 32 bytes apart */
  cd.rank = 3;
  cd.elem_size = 4;
  cd.shape[0] = 2;
  cd.shape[1] = 2;
  cd.shape[2] = 4;
  cd.strides[0] = 16;
  cd.strides[1] = 8;
  cd.strides[2] = 1;
  memset(out, 0, sizeof out);
  CHECK_OK(cubert_client_read_tensor(client, &cd, 1, dsts, &dst_size, NULL));
  for (i = 0; i < 4; i++) CHECK(memcmp(out + 16 * i, data + 32 * i, 16) == 0);
  /* unsupported: outer stride not over whole rows */
  cd.strides[0] = 100;
  CHECK_STATUS(cubert_client_read_tensor(client, &cd, 1, dsts, &dst_size, &e),
               CUBERT_STATUS_UNSUPPORTED);
  CHECK_EQ_U64(cubert_error_kind(&e), CUBERT_ERROR_IO_UNSUPPORTED_STRIDES);
  /* 2-D: the last stride is not 1 */
  cd.rank = 2;
  cd.shape[0] = 2;
  cd.shape[1] = 4;
  cd.strides[0] = 8;
  cd.strides[1] = 2;
  CHECK_STATUS(cubert_client_read_tensor(client, &cd, 1, dsts, &dst_size, &e),
               CUBERT_STATUS_UNSUPPORTED);
  /* 2-D: rows closer than their width */
  cd.strides[0] = 2;
  cd.strides[1] = 1;
  CHECK_STATUS(cubert_client_read_tensor(client, &cd, 1, dsts, &dst_size, &e),
               CUBERT_STATUS_UNSUPPORTED);
  /* rows beyond the memory: 2 rows 1000 elements apart */
  cd.strides[0] = 1000;
  CHECK_STATUS(cubert_client_read_tensor(client, &cd, 1, dsts, &dst_size, &e),
               CUBERT_STATUS_OUT_OF_RANGE);
  CHECK_EQ_U64(e.field[1], 256);
  /* a destination smaller than the tensor */
  cd.strides[0] = 16;
  {
    uint64_t tiny = 8;
    CHECK_STATUS(cubert_client_read_tensor(client, &cd, 1, dsts, &tiny, &e),
                 CUBERT_STATUS_OUT_OF_RANGE);
  }
  /* element size 0: the client's size check sees 0 bytes, the server sees the shape overflow */
  cd.elem_size = 0;
  cd.shape[0] = cd.shape[1] = (uint64_t)1 << 40;
  CHECK_STATUS(cubert_client_read_tensor(client, &cd, 1, dsts, &dst_size, &e), CUBERT_STATUS_OVERFLOW);
  /* an empty tensor whose last dimension's bytes overflow */
  cd.elem_size = (uint64_t)1 << 30;
  cd.shape[0] = 0;
  cd.strides[0] = (uint64_t)1 << 40;
  CHECK_STATUS(cubert_client_read_tensor(client, &cd, 1, dsts, &dst_size, &e), CUBERT_STATUS_OVERFLOW);
  /* a zero-width row: nothing to copy, whatever the strides */
  cd.elem_size = 4;
  cd.shape[0] = 2;
  cd.shape[1] = 0;
  cd.strides[0] = 5;
  CHECK_OK(cubert_client_read_tensor(client, &cd, 1, dsts, &dst_size, NULL));
  /* a row pitch that overflows, rows whose span overflows */
  cd.shape[1] = 4;
  cd.strides[0] = (uint64_t)1 << 62;
  CHECK_STATUS(cubert_client_read_tensor(client, &cd, 1, dsts, &dst_size, &e), CUBERT_STATUS_OVERFLOW);
  cd.shape[0] = 3;
  cd.strides[0] = (uint64_t)1 << 61; /* pitch 2^63: two of them overflow */
  CHECK_STATUS(cubert_client_read_tensor(client, &cd, 1, dsts, &dst_size, &e), CUBERT_STATUS_OUT_OF_RANGE);
  CHECK_EQ_U64(e.field[0], UINT64_MAX);
  cd.shape[0] = 2;
  /* a size-1 outer dimension is one row (contiguous) whatever its stride */
  cd.shape[0] = 1;
  cd.strides[0] = 12345;
  memset(out, 0, sizeof out);
  CHECK_OK(cubert_client_read_tensor(client, &cd, 1, dsts, &dst_size, NULL));
  CHECK(memcmp(out, data, 16) == 0);
  /* a write larger than its handle; calls on a released handle */
  {
    static uint8_t big[300];
    cubert_resource_t res;
    CHECK_STATUS(cubert_client_write(client, &h, big, sizeof big, &e), CUBERT_STATUS_OUT_OF_RANGE);
    CHECK_OK(cubert_client_handle_release(client, &h, NULL));
    CHECK(cubert_client_get_resource(client, &h, &res, &e) != CUBERT_STATUS_OK);
    CHECK(e.depth > 0);
    CHECK(cubert_client_read_one(client, &h, out, 256, &e) != CUBERT_STATUS_OK);
    CHECK(e.depth > 0);
    CHECK(cubert_client_write(client, &h, data, 16, &e) != CUBERT_STATUS_OK);
    CHECK(e.depth > 0);
  }
  fake_release(client, &d, &c);
}

/* A loss that an event query notices has no record of its own: the server takes
 * the driver's (from a stream's errors), else a plain DEVICE_LOST. */
static void lost_by_query(int silent) {
  counting_allocator_t c;
  cubert_allocator_t a = counting_allocator_initialize(&c);
  fake_device_t d;
  cubert_server_options_t o;
  cubert_client_t *client;
  cubert_error_t e;
  cubert_handle_t h, h2;
  uint8_t data[32] = {3};
  memset(&h2, 0, sizeof h2);
  ed_options(&o, (uint32_t)(14 + silent));
  o.gc_capacity = 1; /* the second entry makes the server poll the first one's event */
  client = ed_client(a, &d, &o, &fake_driver);
  CHECK_OK(cubert_client_create_from_slice(client, data, sizeof data, &h, NULL));
  d.lost = 1;
  d.lost_silent = silent;
  /* its copy ran; the GC's poll noticed the loss, the call reports it */
  CHECK_STATUS(cubert_client_create_from_slice(client, data, sizeof data, &h2, &e),
               CUBERT_STATUS_UNAVAILABLE);
  CHECK_STATUS(cubert_client_flush(client, NULL), CUBERT_STATUS_UNAVAILABLE);
  CHECK_STATUS(cubert_client_sync(client, &e), CUBERT_STATUS_UNAVAILABLE);
  CHECK_EQ_U64(cubert_error_kind(&e), CUBERT_ERROR_DEVICE_LOST);
  if (cubert_client_features(client) & CUBERT_FEATURE_ERROR_REASONS)
    CHECK_MSG(strstr(e.reason, silent ? "the device was lost" : "fake: the device is gone") != NULL,
              "reason: %s", e.reason);
  CHECK_OK(cubert_client_handle_release(client, &h, NULL));
  fake_release(client, &d, &c);
}

TEST(server_edges_lost_noticed_by_a_query_takes_the_drivers_record) { lost_by_query(0); }
TEST(server_edges_lost_noticed_by_a_query_without_any_record) { lost_by_query(1); }

static void ed_properties_align0(void *self, cubert_device_properties_t *out) {
  fake_driver.properties(self, out);
  out->memory.alignment = 0;
}

/* A device that states no alignment: the server aligns to 8; many blocks in one
 * slot grow its block table past its first 16 entries. */
TEST(server_edges_alignment_zero_and_many_blocks) {
  counting_allocator_t c;
  cubert_allocator_t a = counting_allocator_initialize(&c);
  fake_device_t d;
  cubert_server_options_t o;
  cubert_driver_t t = fake_driver;
  cubert_memory_pool_options_t direct = cubert_memory_pool_direct(0);
  cubert_client_t *client;
  cubert_handle_t h[40];
  cubert_memory_usage_t usage;
  uint8_t data[24], out[24];
  int i;
  t.properties = ed_properties_align0;
  ed_options(&o, 16);
  o.memory_config.kind = CUBERT_MEMORY_CONFIGURATION_CUSTOM;
  o.memory_config.pools = &direct;
  o.memory_config.pool_count = 1;
  client = ed_client(a, &d, &o, &t);
  for (i = 0; i < 40; i++) {
    memset(data, i, sizeof data);
    CHECK_OK(cubert_client_create_from_slice(client, data, (uint64_t)(i % 20 + 1), &h[i], NULL));
  }
  CHECK_EQ_I64(d.live_blocks, 40);
  CHECK_OK(cubert_client_memory_usage(client, &usage, NULL));
  CHECK_EQ_U64(usage.number_allocs, 40);
  CHECK_EQ_U64(usage.bytes_reserved % 8, 0); /* each block padded to 8 */
  for (i = 0; i < 40; i++) {
    CHECK_OK(cubert_client_read_one(client, &h[i], out, (uint64_t)(i % 20 + 1), NULL));
    CHECK_EQ_U64(out[0], (uint8_t)i);
  }
  for (i = 0; i < 40; i++) CHECK_OK(cubert_client_handle_release(client, &h[i], NULL));
  CHECK_OK(cubert_client_memory_cleanup(client, NULL));
  fake_release(client, &d, &c);
}

/* Completions: a wait whose deadline passes (DEADLINE_EXCEEDED, the completion
 * still pending: a second wait finishes it), and a failed wait that the driver
 * left without a record (the server writes one). */
TEST(server_edges_completion_deadline_and_recordless_failure) {
  counting_allocator_t c;
  cubert_allocator_t a = counting_allocator_initialize(&c);
  fake_device_t d;
  cubert_server_options_t o;
  cubert_client_t *client;
  cubert_error_t e;
  cubert_handle_t h;
  cubert_completion_t comp;
  uint8_t data[32], out[32];
  void *dsts[1];
  uint64_t size = sizeof out;
  int i;
  for (i = 0; i < 32; i++) data[i] = (uint8_t)(100 + i);
  ed_options(&o, 17);
  client = ed_client(a, &d, &o, &fake_driver);
  CHECK_OK(cubert_client_create_from_slice(client, data, sizeof data, &h, NULL));
  dsts[0] = out;
  d.fail_only = "event_synchronize";
  d.fail_kind = CUBERT_ERROR_DEADLINE_EXCEEDED;
  d.fail_at = d.calls + 1;
  memset(out, 0, sizeof out);
  CHECK_OK(cubert_client_read_async(client, &h, 1, dsts, &size, &comp, NULL));
  CHECK_STATUS(cubert_completion_wait(&comp, 1000, &e), CUBERT_STATUS_DEADLINE_EXCEEDED);
  CHECK_EQ_U64(cubert_error_kind(&e), CUBERT_ERROR_DEADLINE_EXCEEDED);
  CHECK_EQ_U64(e.field[0], 1000);
  CHECK_OK(cubert_completion_wait(&comp, UINT64_MAX, NULL));
  CHECK(memcmp(out, data, sizeof data) == 0);
  CHECK_OK(cubert_completion_wait(&comp, UINT64_MAX, NULL)); /* finished: at once */
  /* a failure without a record */
  d.fail_kind = CUBERT_ERROR_SERVER_GENERIC;
  d.fail_no_record = 1;
  d.fail_at = d.calls + 1;
  CHECK_OK(cubert_client_read_async(client, &h, 1, dsts, &size, &comp, NULL));
  CHECK_STATUS(cubert_completion_wait(&comp, UINT64_MAX, &e), CUBERT_STATUS_INTERNAL);
  CHECK_EQ_U64(cubert_error_kind(&e), CUBERT_ERROR_SERVER_GENERIC);
  CHECK_EQ_I64(d.failed, 2);
  d.fail_only = NULL;
  d.fail_at = 0;
  CHECK_OK(cubert_client_sync(client, NULL)); /* still usable */
  CHECK_OK(cubert_client_handle_release(client, &h, NULL));
  fake_release(client, &d, &c);
}

static void many_entry(const cubert_kernel_args_t *args, cubert_kernel_cube_t *cube) {
  (void)args;
  (void)cube;
}

/* With the race checker on: its seed set and cleared (and ignored when it is
 * off), and a launch on one stream over 12 buffers written on another (more
 * pins than the checker takes in one batch). */
TEST(server_edges_race_seed_and_many_cross_stream_pins) {
  TEST_REQUIRE_FEATURE(CUBERT_FEATURE_RACE_CHECKER);
  counting_allocator_t c;
  cubert_allocator_t a = counting_allocator_initialize(&c);
  fake_device_t d;
  cubert_server_options_t o;
  cubert_client_t *client;
  cubert_handle_t h[12];
  cubert_launch_arguments_t args;
  cubert_cube_count_t one = cubert_cube_count_new_single();
  cubert_kernel_t k = {"ed_many", many_entry, NULL, NULL, 0, 0, {1, 1, 1}, 12, 0, 0, {0}};
  cubert_race_counters_t counters;
  uint8_t data[16] = {1};
  int i;
  ed_options(&o, 18);
  client = ed_client(a, &d, &o, &fake_driver);
  CHECK_OK(cubert_client_race_seed(client, 7, NULL)); /* the checker is off: nothing to seed */
  fake_release(client, &d, &c);
  a = counting_allocator_initialize(&c);
  o.race_check = 1;
  client = ed_client(a, &d, &o, &fake_driver);
  CHECK_OK(cubert_client_race_seed(client, 7, NULL));
  CHECK_OK(cubert_client_race_seed(client, 0, NULL));
  cubert_client_set_stream(client, 1);
  for (i = 0; i < 12; i++) CHECK_OK(cubert_client_create_from_slice(client, data, sizeof data, &h[i], NULL));
  cubert_client_set_stream(client, 2);
  cubert_launch_arguments_initialize(&args);
  args.buffers = h;
  args.buffer_count = 12;
  CHECK_OK(cubert_client_launch(client, &k, &one, &args, NULL));
  CHECK_OK(cubert_client_sync(client, NULL));
  cubert_client_set_stream(client, 1);
  CHECK_OK(cubert_client_sync(client, NULL));
  for (i = 0; i < 12; i++) CHECK_OK(cubert_client_handle_release(client, &h[i], NULL));
  CHECK_OK(cubert_client_memory_cleanup(client, NULL));
  CHECK_OK(cubert_client_race_counters(client, &counters, NULL));
  CHECK_EQ_U64(counters.reports, 0); /* the waits were there: no race */
  CHECK_EQ_I64(d.launches, 1);
  fake_release(client, &d, &c);
}

/* Handles still alive when the device goes: the server frees their memory; a
 * slot that never ran anything is skipped by usage and cleanup. */
TEST(server_edges_teardown_with_live_handles) {
  counting_allocator_t c;
  cubert_allocator_t a = counting_allocator_initialize(&c);
  fake_device_t d;
  cubert_server_options_t o;
  cubert_client_t *client;
  cubert_handle_t h0, h2;
  cubert_memory_usage_t usage;
  uint8_t data[16] = {1};
  ed_options(&o, 19);
  client = ed_client(a, &d, &o, &fake_driver);
  CHECK_OK(cubert_client_create_from_slice(client, data, sizeof data, &h0, NULL));
  cubert_client_set_stream(client, 2); /* slot 1 stays empty */
  CHECK_OK(cubert_client_create_from_slice(client, data, sizeof data, &h2, NULL));
  CHECK_OK(cubert_client_memory_usage(client, &usage, NULL));
  CHECK_EQ_U64(usage.number_allocs, 2);
  CHECK_OK(cubert_client_memory_cleanup(client, NULL));
  CHECK_EQ_I64(d.live_blocks, 2);
  fake_release(client, &d, &c); /* frees both */
}
