/* SPDX-License-Identifier: MIT */
/* tests/support/fake_driver.c: the one fake driver of the tests (fake_driver.h). */
#include "fake_driver.h"

#include "test.h"

static cubert_status_t fake_fault(fake_device_t *d, cubert_error_t *err, const char *what) {
  if (d->fail_only && !strstr(what, d->fail_only)) return CUBERT_STATUS_OK;
  d->calls++;
  if (d->fail_at == 0 || d->calls != d->fail_at) return CUBERT_STATUS_OK;
  d->failed++;
  if (d->fail_kind == CUBERT_ERROR_DEVICE_LOST) d->lost = 1;
  if (d->fail_no_record) return cubert_error_set(NULL, d->fail_kind, NULL, 0, what);
  return cubert_error_set(err, d->fail_kind, NULL, 0, what);
}

static fake_device_t *fake_of(void *self) { return (fake_device_t *)self; }

static void fake_destroy(void *self) { fake_of(self)->destroyed++; }

static void fake_properties(void *self, cubert_device_properties_t *out) {
  fake_device_t *d = fake_of(self);
  const char *name = d->name ? d->name : "fake";
  memset(out, 0, sizeof(*out));
  strncpy(out->name, name, sizeof out->name - 1);
  out->memory.alignment = 16;
  out->memory.max_page_size = d->max_page_size ? d->max_page_size : (uint64_t)1 << 20;
  out->hardware.max_cube_count.x = out->hardware.max_cube_count.y = 1024;
  out->hardware.max_cube_count.z = 64;
  out->hardware.max_cube_dim.x = out->hardware.max_cube_dim.y = 1024;
  out->hardware.max_cube_dim.z = 64;
  out->hardware.max_units_per_cube = 1024;
  out->hardware.max_shared_memory_size = 1024;
}

static void fake_properties_full(void *self, cubert_device_properties_t *out) {
  fake_properties(self, out);
  out->features = CUBERT_FEATURE_COLLECTIVES | CUBERT_FEATURE_STAGING | CUBERT_FEATURE_DYNAMIC_CUBE_COUNT;
}

static cubert_status_t fake_alloc(void *self, uint64_t size, cubert_driver_stream_t *stream,
                                  cubert_device_ptr_t *out, cubert_error_t *err) {
  fake_device_t *d = fake_of(self);
  void *p = NULL;
  (void)stream;
  CUBERT_RETURN_IF_ERROR(fake_fault(d, err, "fake: memory_alloc failed"));
  if (size > ((uint64_t)1 << 28) ||
      cubert_allocator_malloc(d->allocator, (size_t)size, 16, &p, NULL) != CUBERT_STATUS_OK)
    return cubert_error_set(err, CUBERT_ERROR_IO_OUT_OF_MEMORY, &size, 1, "fake memory");
  d->live_blocks++;
  *out = (cubert_device_ptr_t)(uintptr_t)p;
  return CUBERT_STATUS_OK;
}

static void fake_free(void *self, cubert_device_ptr_t address, uint64_t size,
                      cubert_driver_stream_t *stream) {
  fake_device_t *d = fake_of(self);
  (void)stream; /* the work already ran */
  d->live_blocks--;
  cubert_allocator_free(d->allocator, (void *)(uintptr_t)address, (size_t)size, 16);
}

static cubert_status_t fake_host_alloc(void *self, uint64_t size, void **out, cubert_error_t *err) {
  fake_device_t *d = fake_of(self);
  CUBERT_RETURN_IF_ERROR(fake_fault(d, err, "fake: host_alloc failed"));
  if (size > ((uint64_t)1 << 28) ||
      cubert_allocator_malloc(d->allocator, (size_t)size, 16, out, NULL) != CUBERT_STATUS_OK)
    return cubert_error_set(err, CUBERT_ERROR_HOST_OUT_OF_MEMORY, &size, 1, "fake pinned");
  d->live_host++;
  d->host_allocs++;
  return CUBERT_STATUS_OK;
}

static void fake_host_free(void *self, void *ptr, uint64_t size) {
  fake_device_t *d = fake_of(self);
  d->live_host--;
  d->host_frees++;
  cubert_allocator_free(d->allocator, ptr, (size_t)size, 16);
}

static cubert_status_t fake_copy(void *self, const cubert_driver_copy_t *c,
                                 cubert_driver_stream_t *stream, cubert_error_t *err) {
  fake_device_t *d = fake_of(self);
  const unsigned char *src = c->kind == CUBERT_COPY_HOST_TO_DEVICE
                                 ? (const unsigned char *)c->src_host
                                 : (const unsigned char *)(uintptr_t)c->src_device;
  unsigned char *dst = c->kind == CUBERT_COPY_DEVICE_TO_HOST ? (unsigned char *)c->dst_host
                                                             : (unsigned char *)(uintptr_t)c->dst_device;
  uint64_t r;
  (void)stream;
  CUBERT_RETURN_IF_ERROR(fake_fault(d, err, "fake: copy failed"));
  if (d->fail_copy)
    return cubert_error_set(err, CUBERT_ERROR_INVALID_ARGUMENT, NULL, 0, "fake: copy refused");
  d->copies++;
  d->last_height = c->height;
  d->last_src_pitch = c->src_pitch;
  d->last_dst_pitch = c->dst_pitch;
  d->last_flags = c->flags;
  for (r = 0; r < c->height; r++)
    memcpy(dst + r * (c->height > 1 ? c->dst_pitch : 0),
           src + r * (c->height > 1 ? c->src_pitch : 0), (size_t)c->width);
  return CUBERT_STATUS_OK;
}

static cubert_status_t fake_launch(void *self, const cubert_driver_launch_t *l,
                                   cubert_driver_stream_t *stream, cubert_error_t *err) {
  fake_device_t *d = fake_of(self);
  (void)l;
  (void)stream;
  CUBERT_RETURN_IF_ERROR(fake_fault(d, err, "fake: launch failed"));
  if (d->lose_at_launch) {
    d->lose_at_launch = 0;
    return cubert_error_set(err, CUBERT_ERROR_DEVICE_LOST, NULL, 0, "fake: the device fell off");
  }
  d->launches++;
  return CUBERT_STATUS_OK;
}

static cubert_status_t fake_stream_create(void *self, uint32_t index, cubert_driver_stream_t **out,
                                          cubert_error_t *err) {
  fake_device_t *d = fake_of(self);
  (void)index;
  CUBERT_RETURN_IF_ERROR(fake_fault(d, err, "fake: stream_create failed"));
  d->live_streams++;
  *out = (cubert_driver_stream_t *)(void *)&d->stream_token;
  return CUBERT_STATUS_OK;
}

static void fake_stream_destroy(void *self, cubert_driver_stream_t *s) {
  (void)s;
  fake_of(self)->live_streams--;
}

static cubert_status_t fake_stream_sync(void *self, cubert_driver_stream_t *s, cubert_error_t *e) {
  fake_device_t *d = fake_of(self);
  (void)s;
  d->syncs++;
  return fake_fault(d, e, "fake: stream_synchronize failed");
}

static cubert_status_t fake_stream_errors(void *self, cubert_driver_stream_t *s, cubert_error_t *e) {
  fake_device_t *d = fake_of(self);
  (void)s;
  if (d->lost && !d->lost_silent)
    return cubert_error_set(e, CUBERT_ERROR_DEVICE_LOST, NULL, 0, "fake: the device is gone");
  if (d->async_errors > 0) {
    d->async_errors--;
    return cubert_error_set(e, CUBERT_ERROR_SERVER_GENERIC, NULL, 0, "fake: async failure");
  }
  return CUBERT_STATUS_OK;
}

static cubert_status_t fake_event_record(void *self, cubert_driver_stream_t *s,
                                         cubert_driver_event_t **out, cubert_error_t *err) {
  fake_device_t *d = fake_of(self);
  (void)s;
  CUBERT_RETURN_IF_ERROR(fake_fault(d, err, "fake: event_record failed"));
  d->live_events++;
  *out = (cubert_driver_event_t *)(void *)&d->event_token;
  return CUBERT_STATUS_OK;
}

static cubert_status_t fake_event_wait(void *self, cubert_driver_stream_t *s,
                                       cubert_driver_event_t *e, cubert_error_t *err) {
  (void)s;
  (void)e;
  return fake_fault(fake_of(self), err, "fake: event_wait failed");
}

static cubert_status_t fake_event_query(void *self, cubert_driver_event_t *e) {
  fake_device_t *d = fake_of(self);
  (void)e;
  d->queries++;
  if (d->lost) return CUBERT_STATUS_UNAVAILABLE;
  return d->busy ? CUBERT_STATUS_BUSY : CUBERT_STATUS_OK;
}

static cubert_status_t fake_event_sync(void *self, cubert_driver_event_t *e, uint64_t timeout,
                                       cubert_error_t *err) {
  fake_device_t *d = fake_of(self);
  (void)e;
  (void)timeout;
  d->syncs++;
  return fake_fault(d, err, "fake: event_synchronize failed");
}

static void fake_event_destroy(void *self, cubert_driver_event_t *e) {
  (void)e;
  fake_of(self)->live_events--;
}

static cubert_status_t fake_comm_create(void *self, const uint32_t *devices, uint32_t count,
                                        uint32_t rank, cubert_driver_comm_t **out,
                                        cubert_error_t *err) {
  fake_device_t *d = fake_of(self);
  (void)devices;
  (void)count;
  (void)rank;
  CUBERT_RETURN_IF_ERROR(fake_fault(d, err, "fake: comm_create failed"));
  d->live_comms++;
  *out = (cubert_driver_comm_t *)(void *)&d->comm_token;
  return CUBERT_STATUS_OK;
}

static cubert_status_t fake_comm_query(void *self, cubert_driver_comm_t *c, cubert_error_t *err) {
  (void)c;
  return fake_fault(fake_of(self), err, "fake: comm_query failed");
}

static void fake_comm_destroy(void *self, cubert_driver_comm_t *c) {
  (void)c;
  fake_of(self)->live_comms--;
}

/* What a SEND left for the next RECV (the devices of one test run on one thread). */
static unsigned char g_fake_mailbox[256];
static uint64_t g_fake_mailbox_bytes;

static cubert_status_t fake_collective(void *self, cubert_driver_comm_t *c,
                                       const cubert_driver_collective_t *op,
                                       cubert_driver_stream_t *s, cubert_error_t *err) {
  fake_device_t *d = fake_of(self);
  (void)c;
  (void)s;
  CUBERT_RETURN_IF_ERROR(fake_fault(d, err, "fake: collective failed"));
  if (op->kind == CUBERT_COLLECTIVE_ALL_REDUCE && op->src != op->dst)
    memcpy((void *)(uintptr_t)op->dst, (const void *)(uintptr_t)op->src, (size_t)op->bytes);
  if (op->kind == CUBERT_COLLECTIVE_SEND && op->bytes <= sizeof g_fake_mailbox) {
    memcpy(g_fake_mailbox, (const void *)(uintptr_t)op->src, (size_t)op->bytes);
    g_fake_mailbox_bytes = op->bytes;
  }
  if (op->kind == CUBERT_COLLECTIVE_RECV && op->bytes == g_fake_mailbox_bytes)
    memcpy((void *)(uintptr_t)op->dst, g_fake_mailbox, (size_t)op->bytes);
  d->collectives++;
  return CUBERT_STATUS_OK;
}

/* A plan: how many launches it runs. */
struct cubert_driver_plan_t {
  uint32_t count;
};

static cubert_status_t fake_plan_create(void *self, const cubert_driver_launch_t *launches,
                                        uint32_t count, cubert_driver_plan_t **out,
                                        cubert_error_t *err) {
  fake_device_t *d = fake_of(self);
  cubert_driver_plan_t *p = NULL;
  (void)launches;
  CUBERT_RETURN_IF_ERROR(fake_fault(d, err, "fake: plan_create failed"));
  if (d->plan_refuse)
    return cubert_error_set(err, CUBERT_ERROR_IO_UNSUPPORTED_IO_OPERATION, NULL, 0,
                            "fake: plan_create refused");
  if (cubert_allocator_malloc(d->allocator, sizeof(*p), 0, (void **)&p, NULL) != CUBERT_STATUS_OK)
    return cubert_error_set(err, CUBERT_ERROR_HOST_OUT_OF_MEMORY, NULL, 0, "fake plan");
  p->count = count;
  d->live_plans++;
  d->plans_created++;
  *out = p;
  return CUBERT_STATUS_OK;
}

static cubert_status_t fake_plan_update(void *self, cubert_driver_plan_t *plan, uint32_t index,
                                        const cubert_driver_launch_t *launch, cubert_error_t *err) {
  fake_device_t *d = fake_of(self);
  (void)launch;
  CUBERT_RETURN_IF_ERROR(fake_fault(d, err, "fake: plan_update failed"));
  if (index >= plan->count)
    return cubert_error_set(err, CUBERT_ERROR_OUT_OF_RANGE, NULL, 0, "fake: no such launch");
  d->plan_updates++;
  return CUBERT_STATUS_OK;
}

static cubert_status_t fake_plan_launch(void *self, cubert_driver_plan_t *plan,
                                        cubert_driver_stream_t *stream, cubert_error_t *err) {
  fake_device_t *d = fake_of(self);
  (void)stream;
  CUBERT_RETURN_IF_ERROR(fake_fault(d, err, "fake: plan_launch failed"));
  d->plan_launches++;
  d->launches += (int)plan->count;
  return CUBERT_STATUS_OK;
}

static void fake_plan_destroy(void *self, cubert_driver_plan_t *plan) {
  fake_device_t *d = fake_of(self);
  d->live_plans--;
  cubert_allocator_free(d->allocator, plan, sizeof(*plan), 0);
}


/* DLPack (fake_driver_full): host memory, kDLCPU 0; a native stream is any
 * non-zero token, ordered at once. */
static void fake_memory_device(void *self, int32_t *out_type, int32_t *out_id) {
  (void)self;
  *out_type = 1;
  *out_id = 0;
}

static cubert_status_t fake_memory_import(void *self, uint64_t pointer, uint64_t size,
                                          cubert_device_ptr_t *out, cubert_error_t *err) {
  fake_device_t *d = fake_of(self);
  (void)size;
  CUBERT_RETURN_IF_ERROR(fake_fault(d, err, "fake: memory_import failed"));
  d->imports++;
  *out = pointer;
  return CUBERT_STATUS_OK;
}

static cubert_status_t fake_stream_order_native(void *self, cubert_driver_stream_t *s, uint64_t native,
                                                uint32_t direction, cubert_error_t *err) {
  fake_device_t *d = fake_of(self);
  (void)s;
  (void)direction;
  CUBERT_RETURN_IF_ERROR(fake_fault(d, err, "fake: stream_order_native failed"));
  if (native == 0) return cubert_error_set(err, CUBERT_ERROR_INVALID_ARGUMENT, NULL, 0, "fake: native 0");
  d->native_orders++;
  return CUBERT_STATUS_OK;
}

const cubert_driver_t fake_driver = {
    .name = "fake",
    .abi_version = CUBERT_DRIVER_ABI_VERSION,
    .flags = 0, /* device memory is not host memory; no pinned memory, no collectives */
    .destroy = fake_destroy,
    .properties = fake_properties,
    .memory_alloc = fake_alloc,
    .memory_free = fake_free,
    .copy = fake_copy,
    .launch = fake_launch,
    .stream_create = fake_stream_create,
    .stream_destroy = fake_stream_destroy,
    .stream_synchronize = fake_stream_sync,
    .stream_errors = fake_stream_errors,
    .event_record = fake_event_record,
    .event_wait = fake_event_wait,
    .event_query = fake_event_query,
    .event_synchronize = fake_event_sync,
    .event_destroy = fake_event_destroy,
};

const cubert_driver_t fake_driver_full = {
    .name = "fake-full",
    .abi_version = CUBERT_DRIVER_ABI_VERSION,
    .flags = CUBERT_DRIVER_HOST_ADDRESSABLE,
    .destroy = fake_destroy,
    .properties = fake_properties_full,
    .memory_alloc = fake_alloc,
    .memory_free = fake_free,
    .host_alloc = fake_host_alloc,
    .host_free = fake_host_free,
    .copy = fake_copy,
    .launch = fake_launch,
    .stream_create = fake_stream_create,
    .stream_destroy = fake_stream_destroy,
    .stream_synchronize = fake_stream_sync,
    .stream_errors = fake_stream_errors,
    .event_record = fake_event_record,
    .event_wait = fake_event_wait,
    .event_query = fake_event_query,
    .event_synchronize = fake_event_sync,
    .event_destroy = fake_event_destroy,
    .comm_create = fake_comm_create,
    .comm_query = fake_comm_query,
    .comm_destroy = fake_comm_destroy,
    .collective = fake_collective,
    .plan_create = fake_plan_create,
    .plan_update = fake_plan_update,
    .plan_launch = fake_plan_launch,
    .plan_destroy = fake_plan_destroy,
    .memory_device = fake_memory_device,
    .memory_import = fake_memory_import,
    .stream_order_native = fake_stream_order_native,
};

void fake_device_initialize(fake_device_t *d, cubert_allocator_t a) {
  memset(d, 0, sizeof(*d));
  d->allocator = a;
  d->fail_kind = CUBERT_ERROR_SERVER_GENERIC;
}

void fake_no_lock(void *self) { (void)self; }

void fake_server_options(cubert_server_options_t *o, uint16_t type_id, uint32_t index) {
  cubert_server_options_initialize(o);
  o->device.type_id = type_id;
  o->device.index_id = index;
  o->max_handles = 256;
  o->max_streams = 4;
  o->lock.lock = fake_no_lock;
  o->lock.unlock = fake_no_lock;
}

cubert_client_t *fake_client(cubert_allocator_t a, fake_device_t *d,
                             const cubert_server_options_t *o, const cubert_driver_t *driver) {
  cubert_client_t *client = NULL;
  fake_device_initialize(d, a);
  CHECK_OK(cubert_server_client_create(a, o, driver, d, &client, NULL));
  return client;
}

void fake_release(cubert_client_t *client, fake_device_t *d, counting_allocator_t *c) {
  cubert_client_release(client);
  CHECK_EQ_I64(d->destroyed, 1);
  CHECK_EQ_I64(d->live_blocks, 0);
  CHECK_EQ_I64(d->live_streams, 0);
  CHECK_EQ_I64(d->live_events, 0);
  CHECK_EQ_I64(d->live_host, 0);
  CHECK_EQ_I64(d->live_comms, 0);
  CHECK_EQ_I64(d->live_plans, 0);
  CHECK_EQ_I64(c->live_blocks, 0);
  counting_allocator_destroy(c);
}
