/* SPDX-License-Identifier: MIT */
/*
 * core/server/server_staging.c: staging buffers: the driver's pinned
 * host memory (host_alloc) when it has some; else, on a driver whose device
 * memory is host memory (CUBERT_DRIVER_HOST_ADDRESSABLE), "simulated
 * pinned" buffers from the server's allocator, each carrying the allocator in
 * a header so it may outlive the device; else UNSUPPORTED (the client then
 * falls back to ordinary host buffers). Buffers from host_alloc must be
 * released before the device.
 */
#include "server/server_internal.h"

#if CUBERT_CONFIG_STAGING

#define STAGING_HEADER 64 /* keeps the data 64-byte aligned */

typedef struct staging_header_t {
  cubert_allocator_t allocator;
  uint64_t size;
  const cubert_driver_t *driver; /* host_alloc buffers: the driver that frees them */
  void *self;
} staging_header_t;

typedef char staging_header_fits_[sizeof(staging_header_t) <= STAGING_HEADER ? 1 : -1];

static void staging_release(void *owner, void *data, uint64_t size) {
  staging_header_t *h = (staging_header_t *)owner;
  cubert_allocator_t allocator = h->allocator;
  (void)data;
  (void)size;
  cubert_allocator_free(allocator, h, (size_t)(STAGING_HEADER + h->size), 64);
}

/* host_alloc buffers: the header is a separate small block (the driver's
 * memory cannot carry one). */
static void pinned_release(void *owner, void *data, uint64_t size) {
  staging_header_t *h = (staging_header_t *)owner;
  cubert_allocator_t allocator = h->allocator;
  h->driver->host_free(h->self, data, size);
  cubert_allocator_free(allocator, h, sizeof(*h), 0);
}

static void release_staged(cubert_bytes_t *bytes, size_t count) {
  size_t i;
  for (i = 0; i < count; i++)
    if (bytes[i].release) bytes[i].release(bytes[i].owner, bytes[i].data, bytes[i].size);
}

/* One buffer of `size` (> 0) bytes into *out. */
static cubert_status_t staging_one(cubert_server_t *server, uint64_t size, cubert_bytes_t *out,
                                   cubert_error_t *out_error) {
  staging_header_t *h = NULL;
  void *block = NULL;
  if (server->driver->host_alloc) {
    if (cubert_allocator_malloc(server->allocator, sizeof(*h), 0, (void **)&h,
                                NULL) != CUBERT_STATUS_OK)
      return cubert_error_set(out_error, CUBERT_ERROR_HOST_OUT_OF_MEMORY, &size, 1,
                              "staging buffer header");
    if (server->driver->host_alloc(server->self, size, &block, out_error) != CUBERT_STATUS_OK) {
      cubert_allocator_free(server->allocator, h, sizeof(*h), 0);
      return cubert_error_set(out_error, CUBERT_ERROR_IO_UNKNOWN, &size, 1,
                              "Unable to reserve pinned memory");
    }
    h->allocator = server->allocator;
    h->size = size;
    h->driver = server->driver;
    h->self = server->self;
    out->data = block;
    out->release = pinned_release;
  } else {
    if (size > (uint64_t)SIZE_MAX - STAGING_HEADER ||
        cubert_allocator_malloc(server->allocator, (size_t)(STAGING_HEADER + size), 64, &block,
                                NULL) !=
        CUBERT_STATUS_OK)
      return cubert_error_set(out_error, CUBERT_ERROR_IO_UNKNOWN, &size, 1,
                              "Unable to reserve pinned memory");
    h = (staging_header_t *)block;
    h->allocator = server->allocator;
    h->size = size;
    out->data = (unsigned char *)block + STAGING_HEADER;
    out->release = staging_release;
  }
  out->size = size;
  out->owner = h;
  return CUBERT_STATUS_OK;
}

cubert_status_t cubert__server_staging(cubert_server_t *server, const uint64_t *sizes, size_t count,
                                       cubert_bytes_t *out_bytes, cubert_error_t *out_error) {
  size_t i;
  CUBERT_RETURN_IF_ERROR(server_lost(server, out_error));
  if (!server->driver->host_alloc && !(server->driver->flags & CUBERT_DRIVER_HOST_ADDRESSABLE))
    return server_unsupported(server, "pinned host memory (staging)", out_error);
  if (count && (!sizes || !out_bytes))
    return cubert_error_set(out_error, CUBERT_ERROR_INVALID_ARGUMENT, NULL, 0,
                            "staging: NULL sizes or output");
  for (i = 0; i < count; i++) {
    cubert_status_t status;
    cubert_memset(&out_bytes[i], 0, sizeof(out_bytes[i]));
    out_bytes[i].property = CUBERT_ALLOCATION_PINNED;
    if (sizes[i] == 0) continue;
    status = staging_one(server, sizes[i], &out_bytes[i], out_error);
    if (status != CUBERT_STATUS_OK) {
      release_staged(out_bytes, i);
      return status;
    }
  }
  return CUBERT_STATUS_OK;
}

#else /* !CUBERT_CONFIG_STAGING: no staging buffers (the client falls back to its own) */

cubert_status_t cubert__server_staging(cubert_server_t *server, const uint64_t *sizes, size_t count,
                                       cubert_bytes_t *out_bytes, cubert_error_t *out_error) {
  (void)server;
  (void)sizes;
  (void)count;
  (void)out_bytes;
  return cubert_error_set(out_error, CUBERT_ERROR_COMPILED_OUT, NULL, 0,
                          "staging buffers (CUBERT_CONFIG_STAGING=0)");
}

#endif /* CUBERT_CONFIG_STAGING */
