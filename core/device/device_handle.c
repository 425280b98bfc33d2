/* SPDX-License-Identifier: MIT */
/* core/device/device_handle.c: the direct (locked) device handle. Every call takes
 * the injected recursive lock and runs on the calling thread, so calls made
 * from inside a task or an exclusive section re-enter and run inline. */
#include "base/internal.h"
#include "cubert/device.h"
#include "cubert/driver/device.h"

typedef struct direct_handle_t {
  cubert_allocator_t allocator;
  void *context;
  cubert_lock_t lock;
  bool shut_down;
} direct_handle_t;

static cubert_status_t direct_submit(void *self, cubert_device_task_fn_t fn, const void *payload,
                                     size_t size) {
  direct_handle_t *h = (direct_handle_t *)self;
  /* Run on a private copy so the task may modify its payload freely, like a
   * queued task would. */
  unsigned char copy[CUBERT_DEVICE_TASK_PAYLOAD];
  if (!fn || size > sizeof copy || (size && !payload)) return CUBERT_STATUS_INVALID_ARGUMENT;
  if (size) cubert_memcpy(copy, payload, size);
  h->lock.lock(h->lock.self);
  /* unreachable: shut_down (only destroy sets it, then frees the handle) */
  if (h->shut_down) {
    h->lock.unlock(h->lock.self);
    return CUBERT_STATUS_UNAVAILABLE;
  }
  fn(h->context, copy);
  h->lock.unlock(h->lock.self);
  return CUBERT_STATUS_OK;
}

static cubert_status_t direct_submit_blocking(void *self, cubert_device_task_fn_t fn,
                                              void *payload) {
  direct_handle_t *h = (direct_handle_t *)self;
  if (!fn) return CUBERT_STATUS_INVALID_ARGUMENT;
  h->lock.lock(h->lock.self);
  /* unreachable: shut_down (only destroy sets it, then frees the handle) */
  if (h->shut_down) {
    h->lock.unlock(h->lock.self);
    return CUBERT_STATUS_UNAVAILABLE;
  }
  fn(h->context, payload);
  h->lock.unlock(h->lock.self);
  return CUBERT_STATUS_OK;
}

static cubert_status_t direct_exclusive(void *self, cubert_device_exclusive_fn_t fn, void *user) {
  direct_handle_t *h = (direct_handle_t *)self;
  cubert_status_t status;
  if (!fn) return CUBERT_STATUS_INVALID_ARGUMENT;
  h->lock.lock(h->lock.self);
  /* unreachable: shut_down (only destroy sets it, then frees the handle) */
  if (h->shut_down) {
    h->lock.unlock(h->lock.self);
    return CUBERT_STATUS_UNAVAILABLE;
  }
  status = fn(user);
  h->lock.unlock(h->lock.self);
  return status;
}

static cubert_status_t direct_flush_queue(void *self) {
  (void)self;
  return CUBERT_STATUS_OK;
}

static bool direct_is_blocking(const void *self) {
  (void)self;
  return true;
}

static void direct_destroy(void *self) {
  direct_handle_t *h = (direct_handle_t *)self;
  cubert_allocator_t allocator;
  if (!h) return;
  h->lock.lock(h->lock.self);
  h->shut_down = true;
  h->lock.unlock(h->lock.self);
  allocator = h->allocator;
  cubert_allocator_free(allocator, h, sizeof(*h), 0);
}

static const cubert_device_handle_vtable_t g_direct_vtable = {
    direct_submit, direct_submit_blocking, direct_exclusive,
    direct_flush_queue, direct_is_blocking, direct_destroy,
};

cubert_status_t cubert_device_handle_direct_create(cubert_allocator_t allocator, void *context,
                                                   cubert_lock_t lock,
                                                   cubert_device_handle_t *out_handle) {
  direct_handle_t *h = NULL;
  if (!out_handle || !lock.lock || !lock.unlock) return CUBERT_STATUS_INVALID_ARGUMENT;
  CUBERT_RETURN_IF_ERROR(cubert_allocator_malloc(allocator, sizeof(*h), 0, (void **)&h, NULL));
  h->allocator = allocator;
  h->context = context;
  h->lock = lock;
  h->shut_down = false;
  out_handle->vtable = &g_direct_vtable;
  out_handle->self = h;
  return CUBERT_STATUS_OK;
}
