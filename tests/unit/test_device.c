/* SPDX-License-Identifier: MIT */
/* Direct device handle and device registry (single-threaded parts). */
#include "test.h"
#include "counting_allocator.h"
#include "cubert/device.h"
#include "cubert/driver/device.h"
#include "device/device_registry.h"

typedef struct fake_lock_t {
  int depth;
  int max_depth;
  int acquisitions;
} fake_lock_t;

static void fake_lock(void *self) {
  fake_lock_t *l = (fake_lock_t *)self;
  l->depth++;
  l->acquisitions++;
  if (l->depth > l->max_depth) l->max_depth = l->depth;
}
static void fake_unlock(void *self) { ((fake_lock_t *)self)->depth--; }

typedef struct counter_ctx_t {
  int value;
  cubert_device_handle_t *handle;
} counter_ctx_t;

static void task_add(void *context, void *payload) {
  int delta;
  memcpy(&delta, payload, sizeof delta);
  ((counter_ctx_t *)context)->value += delta;
}

static void task_read(void *context, void *payload) {
  *(int *)payload = ((counter_ctx_t *)context)->value;
}

/* A task that submits another task to the same device: must run inline. */
static void task_recursive(void *context, void *payload) {
  counter_ctx_t *ctx = (counter_ctx_t *)context;
  int one = 1;
  (void)payload;
  CHECK_OK(ctx->handle->vtable->submit(ctx->handle->self, task_add, &one, sizeof one));
  CHECK_EQ_I64(ctx->value, 101); /* ran inline, before we return */
}

static cubert_status_t exclusive_fn(void *user) {
  counter_ctx_t *ctx = (counter_ctx_t *)user;
  int v = 0;
  CHECK_OK(ctx->handle->vtable->submit_blocking(ctx->handle->self, task_read, &v));
  return v == ctx->value ? CUBERT_STATUS_OK : CUBERT_STATUS_INTERNAL;
}

static cubert_status_t exclusive_fails(void *user) {
  (void)user;
  return CUBERT_STATUS_OUT_OF_RANGE;
}

TEST(device_direct_submit_order_and_reentry) {
  counting_allocator_t c;
  cubert_allocator_t a = counting_allocator_initialize(&c);
  fake_lock_t fl = {0, 0, 0};
  cubert_lock_t lock;
  cubert_device_handle_t h;
  counter_ctx_t ctx = {0, NULL};
  int i, v = 0, big[100];
  lock.self = &fl;
  lock.lock = fake_lock;
  lock.unlock = fake_unlock;
  CHECK_OK(cubert_device_handle_direct_create(a, &ctx, lock, &h));
  ctx.handle = &h;
  CHECK(h.vtable->is_blocking(h.self));
  for (i = 0; i < 100; i++) {
    int one = 1;
    CHECK_OK(h.vtable->submit(h.self, task_add, &one, sizeof one));
  }
  CHECK_OK(h.vtable->submit_blocking(h.self, task_read, &v));
  CHECK_EQ_I64(v, 100);
  CHECK_OK(h.vtable->submit_blocking(h.self, task_recursive, NULL));
  CHECK_EQ_I64(fl.max_depth, 2); /* the inner call re-entered the lock */
  CHECK_OK(h.vtable->exclusive(h.self, exclusive_fn, &ctx));
  CHECK_STATUS(h.vtable->exclusive(h.self, exclusive_fails, &ctx), CUBERT_STATUS_OUT_OF_RANGE);
  /* the device stays usable after a failing exclusive section */
  CHECK_OK(h.vtable->submit_blocking(h.self, task_read, &v));
  CHECK_EQ_I64(v, 101);
  CHECK_OK(h.vtable->flush_queue(h.self));
  CHECK_EQ_I64(fl.depth, 0);
  /* bad input: payload too big, NULL task */
  CHECK_STATUS(h.vtable->submit(h.self, task_add, big, sizeof big), CUBERT_STATUS_INVALID_ARGUMENT);
  CHECK_STATUS(h.vtable->submit(h.self, NULL, NULL, 0), CUBERT_STATUS_INVALID_ARGUMENT);
  CHECK_STATUS(h.vtable->submit_blocking(h.self, NULL, NULL), CUBERT_STATUS_INVALID_ARGUMENT);
  CHECK_STATUS(h.vtable->exclusive(h.self, NULL, NULL), CUBERT_STATUS_INVALID_ARGUMENT);
  h.vtable->destroy(h.self);
  CHECK_EQ_I64(c.live_blocks, 0);
  counting_allocator_destroy(&c);
}

TEST(device_direct_create_bad_input_and_oom) {
  counting_allocator_t c;
  cubert_allocator_t a = counting_allocator_initialize(&c);
  fake_lock_t fl = {0, 0, 0};
  cubert_lock_t lock;
  cubert_device_handle_t h;
  lock.self = &fl;
  lock.lock = fake_lock;
  lock.unlock = NULL;
  CHECK_STATUS(cubert_device_handle_direct_create(a, NULL, lock, &h), CUBERT_STATUS_INVALID_ARGUMENT);
  lock.unlock = fake_unlock;
  CHECK_STATUS(cubert_device_handle_direct_create(a, NULL, lock, NULL), CUBERT_STATUS_INVALID_ARGUMENT);
  counting_allocator_fail_at(&c, 1, 0);
  CHECK_STATUS(cubert_device_handle_direct_create(a, NULL, lock, &h), CUBERT_STATUS_RESOURCE_EXHAUSTED);
  CHECK_EQ_I64(c.live_blocks, 0);
  counting_allocator_destroy(&c);
}

TEST(device_registry_insert_lookup_remove) {
  cubert_device_id_t d0 = {7, 0}, d1 = {7, 1}, other = {8, 0};
  cubert_device_id_t ids[4];
  int a = 1, b = 2;
  void *p = NULL;
  CHECK_STATUS(cubert__device_registry_lookup(d0, &p), CUBERT_STATUS_NOT_FOUND);
  CHECK_OK(cubert__device_registry_insert(d0, &a));
  CHECK_STATUS(cubert__device_registry_insert(d0, &b), CUBERT_STATUS_ALREADY_EXISTS);
  CHECK_OK(cubert__device_registry_insert(d1, &b));
  CHECK_OK(cubert__device_registry_insert(other, &b));
  CHECK_OK(cubert__device_registry_lookup(d0, &p));
  CHECK(p == &a);
  CHECK_EQ_U64(cubert__device_registry_enumerate(7, ids, 4), 2);
  CHECK_EQ_U64(ids[0].index_id, 0);
  CHECK_EQ_U64(ids[1].index_id, 1);
  CHECK_EQ_U64(cubert__device_registry_enumerate(UINT16_MAX, NULL, 0), 3);
  CHECK_STATUS(cubert__device_registry_remove(d0, &b), CUBERT_STATUS_NOT_FOUND); /* wrong client */
  CHECK_OK(cubert__device_registry_remove(d0, &a));
  CHECK_STATUS(cubert__device_registry_lookup(d0, &p), CUBERT_STATUS_NOT_FOUND);
  CHECK_STATUS(cubert__device_registry_lookup(d0, NULL), CUBERT_STATUS_INVALID_ARGUMENT);
  CHECK_STATUS(cubert__device_registry_insert(d0, NULL), CUBERT_STATUS_INVALID_ARGUMENT);
  CHECK_OK(cubert__device_registry_remove(d1, &b));
  CHECK_OK(cubert__device_registry_remove(other, &b));
}

TEST(device_registry_full) {
  static int clients[CUBERT_DEVICE_REGISTRY_CAPACITY + 1];
  uint32_t i;
  cubert_device_id_t d;
  d.type_id = 3;
  for (i = 0; i < CUBERT_DEVICE_REGISTRY_CAPACITY; i++) {
    d.index_id = i;
    CHECK_OK(cubert__device_registry_insert(d, &clients[i]));
  }
  d.index_id = CUBERT_DEVICE_REGISTRY_CAPACITY;
  CHECK_STATUS(cubert__device_registry_insert(d, &clients[i]), CUBERT_STATUS_OUT_OF_RANGE);
  for (i = 0; i < CUBERT_DEVICE_REGISTRY_CAPACITY; i++) {
    d.index_id = i;
    CHECK_OK(cubert__device_registry_remove(d, &clients[i]));
  }
  CHECK_EQ_U64(cubert__device_registry_enumerate(3, NULL, 0), 0);
}
