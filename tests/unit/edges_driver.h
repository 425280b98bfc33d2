/* SPDX-License-Identifier: MIT */
/*
 * tests/unit/edges_driver.h: a fake driver for the edge tests of the client and
 * the server (test_client_edges.c, test_kit_edges.c). Core only (the unit
 * tests also run as 32-bit code and on the embedded harness): work runs at once,
 * device memory comes from the allocator (not host-addressable unless a test
 * sets the flag in its copy of the table), events are complete unless `busy`.
 *
 * Faults: every fallible primitive (memory_alloc, host_alloc, copy, launch,
 * stream_create, stream_synchronize, event_record, event_wait,
 * event_synchronize, comm_create, comm_query, collective) counts a call; the
 * call numbered `fail_at` fails with an error of kind `fail_kind` (DEVICE_LOST:
 * the device is lost from then on: stream_errors and event_query report it).
 * `async_errors`: the next stream_errors calls hand that many asynchronous
 * errors to the server.
 */
#ifndef CUBERT_TESTS_EDGES_DRIVER_H
#define CUBERT_TESTS_EDGES_DRIVER_H

#include "test.h"
#include "counting_allocator.h"
#include "cubert/driver/driver.h"
#include "cubert/driver/server.h"
#include "cubert/cube.h"
#include "cubert/kernel.h"

#define ED_UNUSED __attribute__((unused))

typedef struct ed_device_t {
  cubert_allocator_t allocator;
  int calls;    /* fallible calls so far */
  int fail_at;  /* 1-based fallible call that fails; 0: none */
  cubert_error_kind_t fail_kind;
  int failed;   /* calls failed so far */
  int lost;     /* the device is lost */
  int lost_silent; /* lost, but stream_errors has no record of it */
  int async_errors; /* stream_errors hands this many errors (one per call) */
  int busy;     /* event_query answers BUSY */
  const char *fail_only; /* non-NULL: only primitives whose message holds it count as calls */
  int fail_no_record;    /* the failing call leaves its record empty (a careless driver) */
  int launches, copies, collectives, destroyed;
  int live_blocks, live_streams, live_events, live_host, live_comms;
  unsigned char stream_token, event_token, comm_token;
} ed_device_t;

static cubert_status_t ed_fault(ed_device_t *d, cubert_error_t *err, const char *what) {
  if (d->fail_only && !strstr(what, d->fail_only)) return CUBERT_STATUS_OK;
  d->calls++;
  if (d->fail_at == 0 || d->calls != d->fail_at) return CUBERT_STATUS_OK;
  d->failed++;
  if (d->fail_kind == CUBERT_ERROR_DEVICE_LOST) d->lost = 1;
  if (d->fail_no_record) return cubert_error_set(NULL, d->fail_kind, NULL, 0, what);
  return cubert_error_set(err, d->fail_kind, NULL, 0, what);
}

static ed_device_t *ed_of(void *self) { return (ed_device_t *)self; }

static void ed_destroy(void *self) { ed_of(self)->destroyed++; }

static void ed_properties(void *self, cubert_device_properties_t *out) {
  (void)self;
  memset(out, 0, sizeof(*out));
  strcpy(out->name, "edges");
  out->memory.alignment = 16;
  out->memory.max_page_size = 1 << 16;
  out->hardware.max_cube_count.x = out->hardware.max_cube_count.y = 1024;
  out->hardware.max_cube_count.z = 64;
  out->hardware.max_cube_dim.x = out->hardware.max_cube_dim.y = 1024;
  out->hardware.max_cube_dim.z = 64;
  out->hardware.max_units_per_cube = 1024;
  out->hardware.max_shared_memory_size = 1024;
}

static void ed_properties_full(void *self, cubert_device_properties_t *out) {
  ed_properties(self, out);
  out->features = CUBERT_FEATURE_COLLECTIVES | CUBERT_FEATURE_STAGING | CUBERT_FEATURE_DYNAMIC_CUBE_COUNT;
}

static cubert_status_t ed_alloc(void *self, uint64_t size, cubert_driver_stream_t *stream,
                                cubert_device_ptr_t *out, cubert_error_t *err) {
  ed_device_t *d = ed_of(self);
  void *p = NULL;
  (void)stream;
  CUBERT_RETURN_IF_ERROR(ed_fault(d, err, "edges: memory_alloc failed"));
  if (size > ((uint64_t)1 << 28) ||
      cubert_allocator_malloc(d->allocator, (size_t)size, 16, &p, NULL) != CUBERT_STATUS_OK)
    return cubert_error_set(err, CUBERT_ERROR_IO_OUT_OF_MEMORY, &size, 1, "edges memory");
  d->live_blocks++;
  *out = (cubert_device_ptr_t)(uintptr_t)p;
  return CUBERT_STATUS_OK;
}

static void ed_free(void *self, cubert_device_ptr_t address, uint64_t size,
                    cubert_driver_stream_t *stream) {
  ed_device_t *d = ed_of(self);
  (void)stream;
  d->live_blocks--;
  cubert_allocator_free(d->allocator, (void *)(uintptr_t)address, (size_t)size, 16);
}

static cubert_status_t ed_host_alloc(void *self, uint64_t size, void **out, cubert_error_t *err) {
  ed_device_t *d = ed_of(self);
  CUBERT_RETURN_IF_ERROR(ed_fault(d, err, "edges: host_alloc failed"));
  if (size > ((uint64_t)1 << 28) ||
      cubert_allocator_malloc(d->allocator, (size_t)size, 16, out, NULL) != CUBERT_STATUS_OK)
    return cubert_error_set(err, CUBERT_ERROR_HOST_OUT_OF_MEMORY, &size, 1, "edges pinned");
  d->live_host++;
  return CUBERT_STATUS_OK;
}

static void ed_host_free(void *self, void *ptr, uint64_t size) {
  ed_device_t *d = ed_of(self);
  d->live_host--;
  cubert_allocator_free(d->allocator, ptr, (size_t)size, 16);
}

static cubert_status_t ed_copy(void *self, const cubert_driver_copy_t *c,
                               cubert_driver_stream_t *stream, cubert_error_t *err) {
  ed_device_t *d = ed_of(self);
  const unsigned char *src = c->kind == CUBERT_COPY_HOST_TO_DEVICE
                                 ? (const unsigned char *)c->src_host
                                 : (const unsigned char *)(uintptr_t)c->src_device;
  unsigned char *dst = c->kind == CUBERT_COPY_DEVICE_TO_HOST ? (unsigned char *)c->dst_host
                                                             : (unsigned char *)(uintptr_t)c->dst_device;
  uint64_t r;
  (void)stream;
  CUBERT_RETURN_IF_ERROR(ed_fault(d, err, "edges: copy failed"));
  d->copies++;
  for (r = 0; r < c->height; r++)
    memcpy(dst + r * (c->height > 1 ? c->dst_pitch : 0),
           src + r * (c->height > 1 ? c->src_pitch : 0), (size_t)c->width);
  return CUBERT_STATUS_OK;
}

static cubert_status_t ed_launch(void *self, const cubert_driver_launch_t *l,
                                 cubert_driver_stream_t *stream, cubert_error_t *err) {
  ed_device_t *d = ed_of(self);
  (void)l;
  (void)stream;
  CUBERT_RETURN_IF_ERROR(ed_fault(d, err, "edges: launch failed"));
  d->launches++;
  return CUBERT_STATUS_OK;
}

static cubert_status_t ed_stream_create(void *self, uint32_t index, cubert_driver_stream_t **out,
                                        cubert_error_t *err) {
  ed_device_t *d = ed_of(self);
  (void)index;
  CUBERT_RETURN_IF_ERROR(ed_fault(d, err, "edges: stream_create failed"));
  d->live_streams++;
  *out = (cubert_driver_stream_t *)(void *)&d->stream_token;
  return CUBERT_STATUS_OK;
}

static void ed_stream_destroy(void *self, cubert_driver_stream_t *s) {
  (void)s;
  ed_of(self)->live_streams--;
}

static cubert_status_t ed_stream_sync(void *self, cubert_driver_stream_t *s, cubert_error_t *e) {
  (void)s;
  return ed_fault(ed_of(self), e, "edges: stream_synchronize failed");
}

static cubert_status_t ed_stream_errors(void *self, cubert_driver_stream_t *s, cubert_error_t *e) {
  ed_device_t *d = ed_of(self);
  (void)s;
  if (d->lost && !d->lost_silent)
    return cubert_error_set(e, CUBERT_ERROR_DEVICE_LOST, NULL, 0, "edges: the device is gone");
  if (d->async_errors > 0) {
    d->async_errors--;
    return cubert_error_set(e, CUBERT_ERROR_SERVER_GENERIC, NULL, 0, "edges: async failure");
  }
  return CUBERT_STATUS_OK;
}

static cubert_status_t ed_event_record(void *self, cubert_driver_stream_t *s,
                                       cubert_driver_event_t **out, cubert_error_t *err) {
  ed_device_t *d = ed_of(self);
  (void)s;
  CUBERT_RETURN_IF_ERROR(ed_fault(d, err, "edges: event_record failed"));
  d->live_events++;
  *out = (cubert_driver_event_t *)(void *)&d->event_token;
  return CUBERT_STATUS_OK;
}

static cubert_status_t ed_event_wait(void *self, cubert_driver_stream_t *s,
                                     cubert_driver_event_t *e, cubert_error_t *err) {
  (void)s;
  (void)e;
  return ed_fault(ed_of(self), err, "edges: event_wait failed");
}

static cubert_status_t ed_event_query(void *self, cubert_driver_event_t *e) {
  ed_device_t *d = ed_of(self);
  (void)e;
  if (d->lost) return CUBERT_STATUS_UNAVAILABLE;
  return d->busy ? CUBERT_STATUS_BUSY : CUBERT_STATUS_OK;
}

static cubert_status_t ed_event_sync(void *self, cubert_driver_event_t *e, uint64_t timeout,
                                     cubert_error_t *err) {
  (void)e;
  (void)timeout;
  return ed_fault(ed_of(self), err, "edges: event_synchronize failed");
}

static void ed_event_destroy(void *self, cubert_driver_event_t *e) {
  (void)e;
  ed_of(self)->live_events--;
}

static cubert_status_t ed_comm_create(void *self, const uint32_t *devices, uint32_t count,
                                      uint32_t rank, cubert_driver_comm_t **out,
                                      cubert_error_t *err) {
  ed_device_t *d = ed_of(self);
  (void)devices;
  (void)count;
  (void)rank;
  CUBERT_RETURN_IF_ERROR(ed_fault(d, err, "edges: comm_create failed"));
  d->live_comms++;
  *out = (cubert_driver_comm_t *)(void *)&d->comm_token;
  return CUBERT_STATUS_OK;
}

static cubert_status_t ed_comm_query(void *self, cubert_driver_comm_t *c, cubert_error_t *err) {
  (void)c;
  return ed_fault(ed_of(self), err, "edges: comm_query failed");
}

static void ed_comm_destroy(void *self, cubert_driver_comm_t *c) {
  (void)c;
  ed_of(self)->live_comms--;
}

/* What a SEND left for the next RECV (the devices of one test run on one thread). */
static unsigned char g_ed_mailbox[256];
static uint64_t g_ed_mailbox_bytes;

static cubert_status_t ed_collective(void *self, cubert_driver_comm_t *c,
                                     const cubert_driver_collective_t *op,
                                     cubert_driver_stream_t *s, cubert_error_t *err) {
  ed_device_t *d = ed_of(self);
  (void)c;
  (void)s;
  CUBERT_RETURN_IF_ERROR(ed_fault(d, err, "edges: collective failed"));
  if (op->kind == CUBERT_COLLECTIVE_ALL_REDUCE && op->src != op->dst)
    memcpy((void *)(uintptr_t)op->dst, (const void *)(uintptr_t)op->src, (size_t)op->bytes);
  if (op->kind == CUBERT_COLLECTIVE_SEND && op->bytes <= sizeof g_ed_mailbox) {
    memcpy(g_ed_mailbox, (const void *)(uintptr_t)op->src, (size_t)op->bytes);
    g_ed_mailbox_bytes = op->bytes;
  }
  if (op->kind == CUBERT_COLLECTIVE_RECV && op->bytes == g_ed_mailbox_bytes)
    memcpy((void *)(uintptr_t)op->dst, g_ed_mailbox, (size_t)op->bytes);
  d->collectives++;
  return CUBERT_STATUS_OK;
}

/* Required primitives only. */
static const cubert_driver_t g_ed_driver ED_UNUSED = {
    .name = "edges",
    .abi_version = CUBERT_DRIVER_ABI_VERSION,
    .destroy = ed_destroy,
    .properties = ed_properties,
    .memory_alloc = ed_alloc,
    .memory_free = ed_free,
    .copy = ed_copy,
    .launch = ed_launch,
    .stream_create = ed_stream_create,
    .stream_destroy = ed_stream_destroy,
    .stream_synchronize = ed_stream_sync,
    .stream_errors = ed_stream_errors,
    .event_record = ed_event_record,
    .event_wait = ed_event_wait,
    .event_query = ed_event_query,
    .event_synchronize = ed_event_sync,
    .event_destroy = ed_event_destroy,
};

/* Every primitive, optional ones included. */
static const cubert_driver_t g_ed_driver_full ED_UNUSED = {
    .name = "edges-full",
    .abi_version = CUBERT_DRIVER_ABI_VERSION,
    .flags = CUBERT_DRIVER_HOST_ADDRESSABLE,
    .destroy = ed_destroy,
    .properties = ed_properties_full,
    .memory_alloc = ed_alloc,
    .memory_free = ed_free,
    .host_alloc = ed_host_alloc,
    .host_free = ed_host_free,
    .copy = ed_copy,
    .launch = ed_launch,
    .stream_create = ed_stream_create,
    .stream_destroy = ed_stream_destroy,
    .stream_synchronize = ed_stream_sync,
    .stream_errors = ed_stream_errors,
    .event_record = ed_event_record,
    .event_wait = ed_event_wait,
    .event_query = ed_event_query,
    .event_synchronize = ed_event_sync,
    .event_destroy = ed_event_destroy,
    .comm_create = ed_comm_create,
    .comm_query = ed_comm_query,
    .comm_destroy = ed_comm_destroy,
    .collective = ed_collective,
};

static void ed_no_lock(void *self) { (void)self; }

static void ED_UNUSED ed_options(cubert_server_options_t *o, uint32_t index) {
  cubert_server_options_initialize(o);
  o->device.type_id = 91;
  o->device.index_id = index;
  o->max_handles = 256;
  o->max_streams = 4;
  o->lock.lock = ed_no_lock;
  o->lock.unlock = ed_no_lock;
}

/* A client over `driver`; the device zeroed first. */
static cubert_client_t * ED_UNUSED ed_client(cubert_allocator_t a, ed_device_t *d,
                                             const cubert_server_options_t *o,
                                             const cubert_driver_t *driver) {
  cubert_client_t *client = NULL;
  memset(d, 0, sizeof(*d));
  d->allocator = a;
  d->fail_kind = CUBERT_ERROR_SERVER_GENERIC;
  CHECK_OK(cubert_server_client_create(a, o, driver, d, &client, NULL));
  return client;
}

/* Release the client; nothing of the device or the allocator is left. */
static void ED_UNUSED ed_release(cubert_client_t *client, ed_device_t *d,
                                 counting_allocator_t *c) {
  cubert_client_release(client);
  CHECK_EQ_I64(d->destroyed, 1);
  CHECK_EQ_I64(d->live_blocks, 0);
  CHECK_EQ_I64(d->live_streams, 0);
  CHECK_EQ_I64(d->live_events, 0);
  CHECK_EQ_I64(d->live_host, 0);
  CHECK_EQ_I64(d->live_comms, 0);
  CHECK_EQ_I64(c->live_blocks, 0);
  counting_allocator_destroy(c);
}

static void ed_kernel_entry(const cubert_kernel_args_t *args, cubert_kernel_cube_t *cube) {
  (void)args;
  (void)cube;
}

/* A kernel of one buffer (written) and no scalars. */
static const cubert_kernel_t g_ed_kernel ED_UNUSED = {"ed_kernel", ed_kernel_entry, NULL, NULL, 0, 0,
                                                      {1, 1, 1}, 1, 0, 0, {0}};

/* A kernel of no buffer. */
static const cubert_kernel_t g_ed_kernel_none ED_UNUSED = {"ed_kernel_none", ed_kernel_entry, NULL, NULL,
                                                           0, 0, {1, 1, 1}, 0, 0, 0, {0}};

#endif
