/* SPDX-License-Identifier: MIT */
/* The client and the server over the fake driver of tests/support
 * (fake_driver.h; core only: this file is part of the unit tests that also
 * run as 32-bit code): a device whose
 * memory is not host-addressable, with no pinned memory, no clock and no
 * collectives (the server's fallbacks and UNSUPPORTED answers), pitched 2-D
 * copies, a driver that reports the device lost (the server turns sticky), a
 * device handle that refuses every call, and incomplete driver tables. */
#include "test.h"
#include "counting_allocator.h"
#include "fake_driver.h"
#include "cubert/driver/server.h"
#include "cubert/cube.h"
#include "cubert/kernel.h"
#include "cubert/driver/device.h"
#include "memory/memory.h"

/* ---- helpers ---- */


typedef struct sink_t {
  char text[1024];
  int calls;
} sink_t;

static void sink_fn(void *self, const char *text, size_t length) {
  sink_t *s = (sink_t *)self;
  s->calls++;
  if (length < sizeof s->text) memcpy(s->text, text, length + 1);
}

static cubert_status_t count_fn(void *user, cubert_error_t *err) {
  (void)err;
  (*(int *)user)++;
  return CUBERT_STATUS_OK;
}

static void fake_kernel_entry(const cubert_kernel_args_t *args, cubert_kernel_cube_t *cube) {
  (void)args;
  (void)cube;
}
static const cubert_kernel_t k_fake = {"fake_kernel", fake_kernel_entry, NULL, NULL, 0, 0,
                                       {1, 1, 1}, 0, 0, 0, {0}};

static cubert_status_t launch_once(cubert_client_t *client, cubert_error_t *err) {
  cubert_launch_arguments_t args;
  cubert_cube_count_t count = cubert_cube_count_new_single();
  cubert_launch_arguments_initialize(&args);
  return cubert_client_launch(client, &k_fake, &count, &args, err);
}

static void fake_options(cubert_server_options_t *o, uint32_t index) {
  fake_server_options(o, 77, index);
  o->max_handles = 64;
}

/* ---- tests ---- */

TEST(client_kit_driver_without_staging_profiling_collectives) {
  TEST_REQUIRE_FEATURE(CUBERT_FEATURE_PROFILING | CUBERT_FEATURE_STAGING_BUFFERS |
                       CUBERT_FEATURE_COLLECTIVE_OPS | CUBERT_FEATURE_ERROR_REASONS |
                       CUBERT_FEATURE_PERSISTENT_MEMORY);
  counting_allocator_t c;
  cubert_allocator_t a = counting_allocator_initialize(&c);
  fake_device_t d;
  cubert_server_options_t o;
  cubert_client_t *client;
  cubert_bytes_t b;
  cubert_profiling_token_t t;
  cubert_profile_duration_t dur;
  cubert_resource_t res;
  cubert_error_t err;
  cubert_handle_t h;
  cubert_device_id_t self;
  uint64_t size = 8;
  uint8_t data[8] = {1, 2, 3, 4, 5, 6, 7, 8}, out[8];
  static sink_t sink;
  int runs = 0;
  fake_options(&o, 40);
  client = fake_client(a, &d, &o, &fake_driver);
  /* staging: neither pinned memory nor host-addressable memory -> plain host buffers */
  CHECK_OK(cubert_client_reserve_staging(client, &size, 1, &b, NULL));
  CHECK_EQ_U64(b.property, CUBERT_ALLOCATION_NATIVE);
  CHECK_EQ_U64(b.size, 8);
  {
    void *before = b.data;
    CHECK_OK(cubert_client_staging(client, &b, 1, false, NULL));
    CHECK(b.data == before);
  }
  b.release(b.owner, b.data, b.size);
  /* the pinned create variant falls back to host buffers and still uploads */
  CHECK_OK(cubert_client_create_from_slice_pinned(client, data, sizeof data, &h, NULL));
  CHECK_EQ_I64(d.copies, 1);
  CHECK_OK(cubert_client_read_one(client, &h, out, sizeof out, NULL));
  CHECK(memcmp(out, data, sizeof data) == 0);
  /* the resource: an address, no host pointer */
  CHECK_OK(cubert_client_get_resource(client, &h, &res, NULL));
  CHECK(res.ptr == NULL && res.address != 0 && res.size == 8);
  CHECK_OK(cubert_client_handle_release(client, &h, NULL));
  /* profiling tokens: no clock */
  CHECK_STATUS(cubert_client_profile_start(client, &t, &err), CUBERT_STATUS_UNSUPPORTED);
  CHECK_EQ_U64(cubert_error_kind(&err), CUBERT_ERROR_IO_UNSUPPORTED_IO_OPERATION);
  CHECK(strstr(err.reason, "fake driver") != NULL);
  t.id = 0;
  CHECK_STATUS(cubert_client_profile_end(client, t, &dur, &err), CUBERT_STATUS_UNSUPPORTED);
  /* timed kernel profiling needs tokens: the launch fails, nothing runs */
  CHECK_OK(cubert_client_set_profiling(client, CUBERT_PROFILE_LEVEL_BASIC, sink_fn, &sink, NULL));
  CHECK_STATUS(launch_once(client, &err), CUBERT_STATUS_UNSUPPORTED);
  CHECK_EQ_I64(d.launches, 0);
  /* execution-only needs no tokens */
  CHECK_OK(cubert_client_set_profiling(client, CUBERT_PROFILE_LEVEL_EXECUTION_ONLY, sink_fn, &sink,
                                       NULL));
  CHECK_OK(launch_once(client, NULL));
  CHECK_EQ_I64(d.launches, 1);
  CHECK_EQ_I64(sink.calls, 1);
  CHECK_EQ_STR(sink.text, "Executing fake_kernel\n");
  /* windows switch the allocation mode and run f */
  CHECK_OK(cubert_client_memory_persistent_allocation(client, count_fn, &runs, NULL));
  CHECK_EQ_I64(runs, 1);
  /* no collectives: UNSUPPORTED with a message, nothing enqueued */
  self = cubert_client_device(client);
  CHECK_STATUS(cubert_client_ensure_init_collective(client, &self, 1, &err),
               CUBERT_STATUS_UNSUPPORTED);
  CHECK(strstr(err.reason, "fake driver has no collectives") != NULL);
  CHECK_OK(cubert_client_sync_collective(client, NULL)); /* nothing to wait for */
  CHECK_OK(cubert_client_sync(client, NULL));
  fake_release(client, &d, &c);
}

/* Pitched layouts make the server issue 2-D copies (rows `pitch` apart). */
TEST(client_kit_pitched_tensors_use_2d_copies) {
  counting_allocator_t c;
  cubert_allocator_t a = counting_allocator_initialize(&c);
  fake_device_t d;
  cubert_server_options_t o;
  cubert_client_t *client;
  cubert_memory_layout_t layout;
  cubert_copy_descriptor_t desc;
  uint64_t shape[2] = {3, 5}, dst_size = sizeof(uint32_t) * 15;
  uint32_t values[15], back[15];
  void *dsts[1];
  uint32_t i;
  fake_options(&o, 42);
  o.layout_policy.kind = CUBERT_LAYOUT_POLICY_PITCHED;
  o.layout_policy.mem_alignment = 64;
  client = fake_client(a, &d, &o, &fake_driver);
  for (i = 0; i < 15; i++) values[i] = 100 + i;
  CHECK_OK(cubert_client_create_tensor_from_slice(client, values, 2, shape, 4, &layout, NULL));
  CHECK(layout.strides[0] > 5); /* rows padded */
  CHECK_EQ_U64(layout.strides[1], 1);
  CHECK_EQ_U64(d.last_height, 3);
  CHECK_EQ_U64(d.last_src_pitch, 20);
  CHECK_EQ_U64(d.last_dst_pitch, layout.strides[0] * 4);
  memset(&desc, 0, sizeof desc);
  desc.binding = layout.memory;
  desc.rank = 2;
  desc.shape[0] = 3;
  desc.shape[1] = 5;
  desc.strides[0] = layout.strides[0];
  desc.strides[1] = layout.strides[1];
  desc.elem_size = 4;
  dsts[0] = back;
  memset(back, 0, sizeof back);
  CHECK_OK(cubert_client_read_tensor(client, &desc, 1, dsts, &dst_size, NULL));
  CHECK_EQ_U64(d.last_height, 3);
  CHECK_EQ_U64(d.last_src_pitch, layout.strides[0] * 4);
  CHECK(memcmp(back, values, sizeof values) == 0);
  /* strides that are neither contiguous nor pitched */
  desc.strides[0] = 1;
  desc.strides[1] = 3;
  CHECK_STATUS(cubert_client_read_tensor(client, &desc, 1, dsts, &dst_size, NULL),
               CUBERT_STATUS_UNSUPPORTED);
  CHECK_OK(cubert_client_handle_release(client, &layout.memory, NULL));
  fake_release(client, &d, &c);
}

/* A driver status UNAVAILABLE: the device is lost; every later call returns
 * that error at once without calling the driver. */
TEST(client_kit_device_lost_is_sticky) {
  counting_allocator_t c;
  cubert_allocator_t a = counting_allocator_initialize(&c);
  fake_device_t d;
  cubert_server_options_t o;
  cubert_client_t *client;
  cubert_error_t err;
  cubert_handle_t h;
  cubert_memory_usage_t usage;
  uint8_t data[4] = {1, 2, 3, 4};
  int calls;
  fake_options(&o, 43);
  client = fake_client(a, &d, &o, &fake_driver);
  CHECK_OK(cubert_client_create_from_slice(client, data, sizeof data, &h, NULL));
  d.lose_at_launch = 1;
  CHECK_STATUS(launch_once(client, &err), CUBERT_STATUS_UNAVAILABLE);
  CHECK(strstr(err.reason, "fell off") != NULL);
  calls = d.calls;
  CHECK_STATUS(launch_once(client, &err), CUBERT_STATUS_UNAVAILABLE);
  CHECK_EQ_U64(cubert_error_kind(&err), CUBERT_ERROR_DEVICE_LOST);
  CHECK_STATUS(cubert_client_flush(client, &err), CUBERT_STATUS_UNAVAILABLE);
  CHECK_STATUS(cubert_client_sync(client, &err), CUBERT_STATUS_UNAVAILABLE);
  CHECK_STATUS(cubert_client_read_one(client, &h, data, sizeof data, &err),
               CUBERT_STATUS_UNAVAILABLE);
  CHECK_STATUS(cubert_client_write(client, &h, data, sizeof data, &err), CUBERT_STATUS_UNAVAILABLE);
  CHECK_STATUS(cubert_client_memory_usage(client, &usage, &err), CUBERT_STATUS_UNAVAILABLE);
  CHECK_EQ_I64(d.calls, calls); /* nothing reached the driver */
  CHECK_OK(cubert_client_handle_release(client, &h, NULL));
  fake_release(client, &d, &c);
}

/* A device handle that refuses every call (a device shutting down). */
static cubert_status_t refuse_submit(void *self, cubert_device_task_fn_t fn, const void *p,
                                     size_t n) {
  (void)self;
  (void)fn;
  (void)p;
  (void)n;
  return CUBERT_STATUS_UNAVAILABLE;
}
static cubert_status_t refuse_blocking(void *self, cubert_device_task_fn_t fn, void *p) {
  (void)self;
  (void)fn;
  (void)p;
  return CUBERT_STATUS_UNAVAILABLE;
}
static cubert_status_t refuse_exclusive(void *self, cubert_device_exclusive_fn_t fn, void *u) {
  (void)self;
  (void)fn;
  (void)u;
  return CUBERT_STATUS_UNAVAILABLE;
}
static cubert_status_t refuse_flush(void *self) {
  (void)self;
  return CUBERT_STATUS_UNAVAILABLE;
}
static bool refuse_is_blocking(const void *self) {
  (void)self;
  return true;
}
static void refuse_destroy(void *self) { (void)self; }

static const cubert_device_handle_vtable_t g_refusing = {refuse_submit,   refuse_blocking,
                                                         refuse_exclusive, refuse_flush,
                                                         refuse_is_blocking, refuse_destroy};

static cubert_status_t refusing_factory(void *self, cubert_allocator_t allocator, void *context,
                                        cubert_device_handle_t *out) {
  (void)self;
  (void)allocator;
  (void)context;
  out->vtable = &g_refusing;
  out->self = NULL;
  return CUBERT_STATUS_OK;
}

TEST(client_device_refusing_calls) {
  TEST_REQUIRE_FEATURE(CUBERT_FEATURE_PROFILING | CUBERT_FEATURE_PERSISTENT_MEMORY);
  counting_allocator_t c;
  cubert_allocator_t a = counting_allocator_initialize(&c);
  fake_device_t d;
  cubert_server_options_t o;
  cubert_client_t *client;
  cubert_bytes_t b;
  cubert_profiling_token_t t;
  cubert_profile_duration_t dur;
  cubert_error_t err;
  uint64_t size = 16;
  static sink_t sink;
  int runs = 0;
  fake_options(&o, 41);
  o.handle_factory = refusing_factory;
  client = fake_client(a, &d, &o, &fake_driver);
  CHECK_STATUS(cubert_client_profile_start(client, &t, &err), CUBERT_STATUS_UNAVAILABLE);
  CHECK_EQ_U64(cubert_error_kind(&err), CUBERT_ERROR_DEVICE_LOST);
  t.id = 0;
  CHECK_STATUS(cubert_client_profile_end(client, t, &dur, &err), CUBERT_STATUS_UNAVAILABLE);
  /* reserve_staging still gives host buffers */
  CHECK_OK(cubert_client_reserve_staging(client, &size, 1, &b, NULL));
  CHECK_EQ_U64(b.property, CUBERT_ALLOCATION_NATIVE);
  b.release(b.owner, b.data, b.size);
  /* persistent window: the mode switch is refused, f does not run */
  CHECK_STATUS(cubert_client_memory_persistent_allocation(client, count_fn, &runs, &err),
               CUBERT_STATUS_UNAVAILABLE);
  CHECK_EQ_U64(cubert_error_kind(&err), CUBERT_ERROR_DEVICE_LOST);
  CHECK_EQ_I64(runs, 0);
  /* profiled launches report the refusal */
  CHECK_OK(cubert_client_set_profiling(client, CUBERT_PROFILE_LEVEL_BASIC, sink_fn, &sink, NULL));
  CHECK_STATUS(launch_once(client, &err), CUBERT_STATUS_UNAVAILABLE);
  CHECK_EQ_U64(cubert_error_kind(&err), CUBERT_ERROR_DEVICE_LOST);
  CHECK_OK(cubert_client_set_profiling(client, CUBERT_PROFILE_LEVEL_EXECUTION_ONLY, sink_fn, &sink,
                                       NULL));
  CHECK_STATUS(launch_once(client, &err), CUBERT_STATUS_UNAVAILABLE);
  CHECK_EQ_I64(d.launches, 0);
  CHECK_EQ_I64(sink.calls, 0);
  CHECK_EQ_U64(cubert_server_collect(client), 0);
  fake_release(client, &d, &c);
}

/* The GC: host bytes wait for their copy's event. With events that never
 * complete by themselves, the ring of 4 entries blocks on its oldest entry
 * (event_synchronize) before it takes a fifth; sync and memory_usage drain
 * it; nothing leaks. */
TEST(client_kit_gc_back_pressure_and_drain) {
  counting_allocator_t c;
  cubert_allocator_t a = counting_allocator_initialize(&c);
  fake_device_t d;
  cubert_server_options_t o;
  cubert_client_t *client;
  cubert_handle_t h[10];
  cubert_memory_usage_t usage;
  uint8_t data[16] = {9};
  int64_t blocks;
  uint32_t i;
  fake_options(&o, 45);
  o.gc_capacity = 4;
  client = fake_client(a, &d, &o, &fake_driver);
  d.busy = 1;
  blocks = c.live_blocks;
  for (i = 0; i < 10; i++) CHECK_OK(cubert_client_create_from_slice(client, data, sizeof data, &h[i], NULL));
  CHECK_EQ_I64(d.syncs, 6);     /* entries 1..6 waited for, 7..10 pending */
  CHECK(d.live_events == 4);    /* the pending entries' events */
  CHECK(c.live_blocks > blocks); /* their bytes too */
  CHECK_OK(cubert_client_memory_usage(client, &usage, NULL)); /* drains */
  CHECK_EQ_I64(d.live_events, 0);
  CHECK_EQ_U64(usage.number_allocs, 10);
  d.busy = 0;
  for (i = 0; i < 10; i++) CHECK_OK(cubert_client_handle_release(client, &h[i], NULL));
  fake_release(client, &d, &c);
}

/* Pinned host memory from the driver: staging buffers are PINNED and go
 * back through host_free. */
TEST(client_kit_staging_from_the_driver) {
  TEST_REQUIRE_FEATURE(CUBERT_FEATURE_STAGING_BUFFERS);
  counting_allocator_t c;
  cubert_allocator_t a = counting_allocator_initialize(&c);
  fake_device_t d;
  cubert_server_options_t o;
  cubert_driver_t pinned = fake_driver;
  cubert_client_t *client = NULL;
  cubert_bytes_t b[2];
  uint64_t sizes[2] = {24, 0};
  uint64_t huge = UINT64_MAX;
  cubert_error_t err;
  cubert_handle_t h;
  pinned.host_alloc = fake_driver_full.host_alloc;
  pinned.host_free = fake_driver_full.host_free;
  fake_options(&o, 46);
  fake_device_initialize(&d, a);
  CHECK_OK(cubert_server_client_create(a, &o, &pinned, &d, &client, NULL));
  CHECK_OK(cubert_client_reserve_staging(client, sizes, 2, b, NULL));
  CHECK_EQ_U64(b[0].property, CUBERT_ALLOCATION_PINNED);
  CHECK_EQ_U64(b[1].property, CUBERT_ALLOCATION_PINNED);
  CHECK(b[1].data == NULL && b[1].release == NULL);
  CHECK_EQ_I64(d.host_allocs, 1);
  memset(b[0].data, 3, 24);
  CHECK_OK(cubert_client_create_from_bytes(client, b[0], &h,
                                           NULL)); /* moved: released after its copy */
  CHECK_OK(cubert_client_sync(client, NULL));
  CHECK_EQ_I64(d.host_frees, 1);
  /* the driver refuses (and so does the fallback): nothing is left */
  CHECK_STATUS(cubert_client_reserve_staging(client, &huge, 1, b, &err),
               CUBERT_STATUS_RESOURCE_EXHAUSTED);
  CHECK_EQ_I64(d.host_allocs, 1);
  CHECK_OK(cubert_client_handle_release(client, &h, NULL));
  fake_release(client, &d, &c);
}

/* Halves of optional groups (never called: the table is refused). */
static void fd_comm_destroy(void *self, cubert_driver_comm_t *comm) {
  (void)self;
  (void)comm;
}
static void fd_host_free(void *self, void *ptr, uint64_t size) {
  (void)self;
  (void)ptr;
  (void)size;
}

/* Incomplete tables are refused with INVALID_ARGUMENT; nothing is left. */
TEST(client_kit_refuses_incomplete_drivers) {
  TEST_REQUIRE_FEATURE(CUBERT_FEATURE_ERROR_REASONS);
  counting_allocator_t c;
  cubert_allocator_t a = counting_allocator_initialize(&c);
  fake_device_t d;
  cubert_server_options_t o;
  cubert_driver_t bad;
  cubert_client_t *client = NULL;
  cubert_error_t err;
  memset(&d, 0, sizeof d);
  d.allocator = a;
  fake_options(&o, 44);
  bad = fake_driver;
  bad.event_query = NULL;
  CHECK_STATUS(cubert_server_client_create(a, &o, &bad, &d, &client, &err),
               CUBERT_STATUS_INVALID_ARGUMENT);
  CHECK(strstr(err.reason, "required primitive") != NULL);
  bad = fake_driver;
  bad.comm_destroy = fd_comm_destroy;
  CHECK_STATUS(cubert_server_client_create(a, &o, &bad, &d, &client, &err),
               CUBERT_STATUS_INVALID_ARGUMENT);
  CHECK(strstr(err.reason, "all four or none") != NULL);
  bad = fake_driver_full;
  bad.plan_update = NULL;
  CHECK_STATUS(cubert_server_client_create(a, &o, &bad, &d, &client, &err),
               CUBERT_STATUS_INVALID_ARGUMENT);
  CHECK(strstr(err.reason, "plan primitives come all four or none") != NULL);
  bad = fake_driver;
  bad.host_free = fd_host_free;
  CHECK_STATUS(cubert_server_client_create(a, &o, &bad, &d, &client, &err),
               CUBERT_STATUS_INVALID_ARGUMENT);
  CHECK(strstr(err.reason, "host_alloc without host_free") != NULL);
  bad = fake_driver;
  bad.abi_version = CUBERT_DRIVER_ABI_VERSION + 1;
  CHECK_STATUS(cubert_server_client_create(a, &o, &bad, &d, &client, &err),
               CUBERT_STATUS_INVALID_ARGUMENT);
  CHECK_STATUS(cubert_server_client_create(a, &o, NULL, &d, &client, &err),
               CUBERT_STATUS_INVALID_ARGUMENT);
  o.lock.lock = NULL;
  CHECK_STATUS(cubert_server_client_create(a, &o, &fake_driver, &d, &client, &err),
               CUBERT_STATUS_INVALID_ARGUMENT);
  o.lock.lock = fake_no_lock;
  o.max_streams = 300;
  CHECK_STATUS(cubert_server_client_create(a, &o, &fake_driver, &d, &client, &err),
               CUBERT_STATUS_INVALID_ARGUMENT);
  CHECK(client == NULL);
  CHECK_EQ_I64(d.destroyed, 0); /* the caller keeps its driver on failure */
  CHECK_EQ_I64(c.live_blocks, 0);
  /* the same device id twice: the second is refused, the first keeps working */
  o.max_streams = 4;
  client = fake_client(a, &d, &o, &fake_driver);
  {
    fake_device_t d2;
    cubert_client_t *second = NULL;
    memset(&d2, 0, sizeof d2);
    d2.allocator = a;
    CHECK_STATUS(cubert_server_client_create(a, &o, &fake_driver, &d2, &second, &err),
                 CUBERT_STATUS_ALREADY_EXISTS);
    CHECK(cubert_error_kind(&err) == CUBERT_ERROR_SERVICE_CREATION);
    CHECK_EQ_I64(d2.destroyed, 0);
    CHECK_EQ_I64(d2.live_streams, 0);
  }
  CHECK_OK(launch_once(client, NULL));
  fake_release(client, &d, &c);
}

/* The server's memory configuration (cubert_server_options_t.memory_config): a bad
 * list fails the creation with the configuration's error and leaves nothing;
 * a CUSTOM list is copied (the caller's array may change afterwards); with
 * one direct pool a buffer reserves its padded size only (the default preset
 * would reserve a page); a failed copy of the list leaves nothing either. */
TEST(client_kit_memory_configuration) {
  TEST_REQUIRE_FEATURE(CUBERT_FEATURE_PAGED_POOLS);
  counting_allocator_t c;
  cubert_allocator_t a = counting_allocator_initialize(&c);
  fake_device_t d;
  cubert_server_options_t o;
  cubert_memory_pool_options_t pools[1];
  cubert_client_t *client = NULL;
  cubert_error_t err;
  cubert_memory_usage_t usage;
  cubert_handle_t h;
  uint8_t bytes[100] = {0};
  uint64_t n;
  memset(&d, 0, sizeof d);
  d.allocator = a;
  fake_options(&o, 45);
  pools[0] = cubert_memory_pool_sliced(0, CUBERT_MEMORY_NONE, CUBERT_MEMORY_NONE);
  o.memory_config.kind = CUBERT_MEMORY_CONFIGURATION_CUSTOM;
  o.memory_config.pools = pools;
  o.memory_config.pool_count = 1;
  CHECK_STATUS(cubert_server_client_create(a, &o, &fake_driver, &d, &client, &err),
               CUBERT_STATUS_CONFIG_INVALID);
  CHECK(cubert_error_has_kind(&err, CUBERT_ERROR_CONFIG_ZERO_SIZE));
  o.memory_config.kind = (cubert_memory_configuration_kind_t)9;
  CHECK_STATUS(cubert_server_client_create(a, &o, &fake_driver, &d, &client, &err),
               CUBERT_STATUS_INVALID_ARGUMENT);
  CHECK(client == NULL);
  CHECK_EQ_I64(d.destroyed, 0);
  CHECK_EQ_I64(c.live_blocks, 0);
  /* every allocation of the creation fails in turn: nothing is left */
  o.memory_config.kind = CUBERT_MEMORY_CONFIGURATION_CUSTOM;
  pools[0] = cubert_memory_pool_direct(0);
  for (n = 1;; n++) {
    counting_allocator_fail_at(&c, c.calls + n, 0);
    if (cubert_server_client_create(a, &o, &fake_driver, &d, &client, NULL) == CUBERT_STATUS_OK)
      break;
    CHECK(client == NULL);
    CHECK_EQ_I64(c.live_blocks, 0);
  }
  counting_allocator_fail_at(&c, 0, 0);
  cubert_client_release(client);
  CHECK_EQ_I64(c.live_blocks, 0);
  client = fake_client(a, &d, &o, &fake_driver);
  pools[0] = cubert_memory_pool_sliced(0, CUBERT_MEMORY_NONE, CUBERT_MEMORY_NONE); /* copied */
  CHECK_OK(cubert_client_create_from_slice(client, bytes, sizeof bytes, &h, NULL));
  CHECK_OK(cubert_client_memory_usage(client, &usage, NULL));
  CHECK_EQ_U64(usage.number_allocs, 1);
  CHECK_EQ_U64(usage.bytes_reserved, 112); /* 100 rounded up to the 16-byte alignment */
  CHECK_OK(cubert_client_handle_release(client, &h, NULL));
  fake_release(client, &d, &c);
}

/* A synchronous driver's uploads read the caller's bytes in place: create
 * and write of 64 KiB allocate the device's 64 KiB and no host copy; a driver
 * that runs later gets a copy (the control). The data arrives either way. */
TEST(client_kit_synchronous_driver_uploads_in_place) {
  static uint8_t data[65536], out[65536];
  cubert_driver_t drivers[2];
  int k;
  memset(data, 7, sizeof data);
  drivers[0] = fake_driver;
  drivers[0].flags = CUBERT_DRIVER_SYNCHRONOUS;
  drivers[1] = fake_driver;
  for (k = 0; k < 2; k++) {
    counting_allocator_t c;
    cubert_allocator_t a = counting_allocator_initialize(&c);
    cubert_memory_pool_options_t direct = cubert_memory_pool_direct(0);
    fake_device_t d;
    cubert_server_options_t o;
    cubert_client_t *client = NULL;
    cubert_handle_t h;
    int64_t before;
    fake_options(&o, 46);
    o.memory_config.kind = CUBERT_MEMORY_CONFIGURATION_CUSTOM;
    o.memory_config.pools = &direct;
    o.memory_config.pool_count = 1;
    memset(&d, 0, sizeof d);
    d.allocator = a;
    CHECK_OK(cubert_server_client_create(a, &o, &drivers[k], &d, &client, NULL));
    CHECK_OK(launch_once(client, NULL)); /* the stream slot and its memory exist */
    before = c.live_bytes;
    c.peak_bytes = before;
    CHECK_OK(cubert_client_create_from_slice(client, data, sizeof data, &h, NULL));
    data[5] = 9;
    CHECK_OK(cubert_client_write(client, &h, data, sizeof data, NULL));
    if (k == 0)
      CHECK_MSG(c.peak_bytes - before < 65536 + 4096, "peak grew %lld bytes",
                (long long)(c.peak_bytes - before));
    else
      CHECK_MSG(c.peak_bytes - before >= 2 * 65536, "peak grew %lld bytes",
                (long long)(c.peak_bytes - before));
    CHECK_OK(cubert_client_read_one(client, &h, out, sizeof out, NULL));
    CHECK(memcmp(out, data, sizeof out) == 0);
    data[5] = 7;
    CHECK_OK(cubert_client_handle_release(client, &h, NULL));
    fake_release(client, &d, &c);
  }
}

/* Enums of the server options are checked where they enter, before anything is
 * made (issue 25): a bounds_check mode or layout policy kind outside its
 * enum is refused with its record; nothing is registered or allocated. */
TEST(client_kit_refuses_option_enums_out_of_range) {
  TEST_REQUIRE_FEATURE(CUBERT_FEATURE_ERROR_REASONS);
  counting_allocator_t c;
  cubert_allocator_t a = counting_allocator_initialize(&c);
  fake_device_t d;
  cubert_server_options_t o;
  cubert_client_t *client = NULL;
  cubert_error_t err;
  memset(&d, 0, sizeof d);
  d.allocator = a;
  fake_options(&o, 45);
  o.bounds_check = (cubert_bounds_check_mode_t)9;
  CHECK_STATUS(cubert_server_client_create(a, &o, &fake_driver, &d, &client, &err),
               CUBERT_STATUS_INVALID_ARGUMENT);
  CHECK_EQ_U64(err.field[0], 9);
  CHECK(strstr(err.reason, "unknown bounds_check mode") != NULL);
  o.bounds_check = CUBERT_BOUNDS_CHECK_VALIDATE;
  o.layout_policy.kind = (cubert_layout_policy_kind_t)2;
  CHECK_STATUS(cubert_server_client_create(a, &o, &fake_driver, &d, &client, &err),
               CUBERT_STATUS_INVALID_ARGUMENT);
  CHECK_EQ_U64(err.field[0], 2);
  CHECK(strstr(err.reason, "unknown layout policy kind") != NULL);
  CHECK(client == NULL);
  CHECK_EQ_I64(d.destroyed, 0);
  CHECK_EQ_U64(cubert_client_device_count(77), 0);
  CHECK_EQ_I64(c.live_blocks, 0);
  /* the last valid values are accepted */
  o.layout_policy.kind = CUBERT_LAYOUT_POLICY_PITCHED;
  o.layout_policy.mem_alignment = 64;
  client = fake_client(a, &d, &o, &fake_driver);
  fake_release(client, &d, &c);
}
