/* SPDX-License-Identifier: MIT */
/* core/client/client_staging.c: staging buffers and the pinned create variants:
 * the server's staging buffers (cubert__server_staging), or plain
 * host buffers from the client's allocator when the device has none. */
#include "client/client_internal.h"

#define STAGING_MAX_BATCH 64 /* buffers per staging / create_tensors call */
#define HEAP_HEADER 64       /* keeps the data 64-byte aligned */

/* ---- fallback buffers: the client's allocator, with the allocator in a header
 * so a buffer may outlive the device ---- */

typedef struct heap_header_t {
  cubert_allocator_t allocator;
  uint64_t size;
} heap_header_t;

typedef char heap_header_fits_[sizeof(heap_header_t) <= HEAP_HEADER ? 1 : -1];

static void heap_release(void *owner, void *data, uint64_t size) {
  heap_header_t *h = (heap_header_t *)owner;
  cubert_allocator_t allocator = h->allocator;
  (void)data;
  (void)size;
  cubert_allocator_free(allocator, h, (size_t)(HEAP_HEADER + h->size), 64);
}

static void release_bytes(cubert_bytes_t *bytes, size_t count) {
  size_t i;
  for (i = 0; i < count; i++) {
    if (bytes[i].release) bytes[i].release(bytes[i].owner, bytes[i].data, bytes[i].size);
    bytes[i].release = NULL;
  }
}

static cubert_status_t heap_bytes(cubert_allocator_t allocator, uint64_t size,
                                  cubert_bytes_t *out) {
  void *block = NULL;
  heap_header_t *h;
  cubert_memset(out, 0, sizeof(*out));
  out->property = CUBERT_ALLOCATION_NATIVE;
  if (size == 0) return CUBERT_STATUS_OK;
  if (size > (uint64_t)SIZE_MAX - HEAP_HEADER) return CUBERT_STATUS_RESOURCE_EXHAUSTED;
  CUBERT_RETURN_IF_ERROR(cubert_allocator_malloc(allocator, (size_t)(HEAP_HEADER + size), 64, &block, NULL));
  h = (heap_header_t *)block;
  h->allocator = allocator;
  h->size = size;
  out->data = (unsigned char *)block + HEAP_HEADER;
  out->size = size;
  out->owner = h;
  out->release = heap_release;
  return CUBERT_STATUS_OK;
}

#if CUBERT_CONFIG_STAGING
/* ---- the server's staging, as a device task ---- */

typedef struct staging_task_t {
  client_task_t head;
  const uint64_t *sizes;
  size_t count;
  cubert_bytes_t *out;
} staging_task_t;

static void staging_run(void *context, void *payload) {
  staging_task_t *t = (staging_task_t *)payload;
  t->head.status = cubert__server_staging((cubert_server_t *)context, t->sizes, t->count, t->out,
                                          t->head.error);
}

static cubert_status_t server_staging(cubert_client_t *client, const uint64_t *sizes, size_t count,
                                      cubert_bytes_t *out, cubert_error_t *error) {
  staging_task_t t;
  t.sizes = sizes;
  t.count = count;
  t.out = out;
  return client_submit(client, staging_run, &t.head, error);
}

cubert_status_t cubert_client_reserve_staging(cubert_client_t *client, const uint64_t *sizes,
                                              size_t count, cubert_bytes_t *out_bytes,
                                              cubert_error_t *out_error) {
  cubert_error_t ignored;
  size_t i;
  if (!client || (count && (!sizes || !out_bytes)))
    return cubert_error_set(out_error, CUBERT_ERROR_INVALID_ARGUMENT, NULL, 0,
                            "reserve_staging: NULL argument");
  if (count == 0) return CUBERT_STATUS_OK;
  cubert_error_clear(&ignored);
  if (server_staging(client, sizes, count, out_bytes, &ignored) == CUBERT_STATUS_OK)
    return CUBERT_STATUS_OK;
  /* the device refused: plain host buffers of the requested sizes */
  for (i = 0; i < count; i++) {
    if (heap_bytes(client->state->allocator, sizes[i], &out_bytes[i]) != CUBERT_STATUS_OK) {
      uint64_t size = sizes[i];
      release_bytes(out_bytes, i);
      return cubert_error_set(out_error, CUBERT_ERROR_HOST_OUT_OF_MEMORY, &size, 1,
                              "staging fallback buffer");
    }
  }
  return CUBERT_STATUS_OK;
}

/* CubeCL's has_staging: File always; Native/Other unless file_only; Pinned never. */
static bool needs_staging(const cubert_bytes_t *b, bool file_only) {
  switch (b->property) {
    case CUBERT_ALLOCATION_PINNED: return false;
    case CUBERT_ALLOCATION_FILE: return true;
    case CUBERT_ALLOCATION_NATIVE:
    case CUBERT_ALLOCATION_OTHER:
    default: return !file_only;
  }
}

/* Scratch of one staging call: sizes, positions and the new buffers of the
 * selected entries (heap: 64 of them would need 3.5 KB of stack). */
typedef struct staging_scratch_t {
  uint64_t sizes[STAGING_MAX_BATCH];
  size_t which[STAGING_MAX_BATCH];
  cubert_bytes_t staged[STAGING_MAX_BATCH];
} staging_scratch_t;

cubert_status_t cubert_client_staging(cubert_client_t *client, cubert_bytes_t *bytes, size_t count,
                                      bool file_only, cubert_error_t *out_error) {
  staging_scratch_t *x = NULL;
  cubert_error_t ignored;
  cubert_status_t status;
  size_t i, n = 0;
  if (!client || (count && !bytes) || count > STAGING_MAX_BATCH)
    return cubert_error_set(out_error, CUBERT_ERROR_INVALID_ARGUMENT, NULL, 0,
                            "staging: NULL argument or more than 64 buffers");
  for (i = 0; i < count; i++)
    if (!bytes[i].data && bytes[i].size)
      return cubert_error_set(out_error, CUBERT_ERROR_INVALID_ARGUMENT, NULL, 0,
                              "staging: a buffer with a size and no data");
  for (i = 0; i < count; i++)
    if (needs_staging(&bytes[i], file_only)) n++;
  if (n == 0) return CUBERT_STATUS_OK;
  /* no scratch: as if the device refused (nothing changes) */
  if (cubert_allocator_malloc(client->state->allocator, sizeof(*x), 0, (void **)&x, NULL) !=
      CUBERT_STATUS_OK)
    return CUBERT_STATUS_OK;
  for (i = 0, n = 0; i < count; i++) {
    if (!needs_staging(&bytes[i], file_only)) continue;
    x->sizes[n] = bytes[i].size;
    x->which[n] = i;
    n++;
  }
  cubert_error_clear(&ignored);
  status = server_staging(client, x->sizes, n, x->staged, &ignored);
  /* CubeCL: the device's error is ignored, nothing changes */
  for (i = 0; status == CUBERT_STATUS_OK && i < n; i++) {
    cubert_bytes_t *b = &bytes[x->which[i]];
    if (b->size) cubert_memcpy(x->staged[i].data, b->data, (size_t)b->size);
    if (b->release) b->release(b->owner, b->data, b->size);
    *b = x->staged[i];
  }
  cubert_allocator_free(client->state->allocator, x, sizeof(*x), 0);
  return CUBERT_STATUS_OK;
}

#else /* !CUBERT_CONFIG_STAGING: every buffer from the client's allocator */

cubert_status_t cubert_client_reserve_staging(cubert_client_t *client, const uint64_t *sizes,
                                              size_t count, cubert_bytes_t *out_bytes,
                                              cubert_error_t *out_error) {
  size_t i;
  if (!client || (count && (!sizes || !out_bytes)))
    return cubert_error_set(out_error, CUBERT_ERROR_INVALID_ARGUMENT, NULL, 0,
                            "reserve_staging: NULL argument");
  for (i = 0; i < count; i++) {
    if (heap_bytes(client->state->allocator, sizes[i], &out_bytes[i]) != CUBERT_STATUS_OK) {
      uint64_t size = sizes[i];
      release_bytes(out_bytes, i);
      return cubert_error_set(out_error, CUBERT_ERROR_HOST_OUT_OF_MEMORY, &size, 1,
                              "staging fallback buffer");
    }
  }
  return CUBERT_STATUS_OK;
}

/* As when the server refuses: nothing changes. */
cubert_status_t cubert_client_staging(cubert_client_t *client, cubert_bytes_t *bytes, size_t count,
                                      bool file_only, cubert_error_t *out_error) {
  size_t i;
  (void)file_only;
  if (!client || (count && !bytes) || count > STAGING_MAX_BATCH)
    return cubert_error_set(out_error, CUBERT_ERROR_INVALID_ARGUMENT, NULL, 0,
                            "staging: NULL argument or more than 64 buffers");
  for (i = 0; i < count; i++)
    if (!bytes[i].data && bytes[i].size)
      return cubert_error_set(out_error, CUBERT_ERROR_INVALID_ARGUMENT, NULL, 0,
                              "staging: a buffer with a size and no data");
  return CUBERT_STATUS_OK;
}

#endif /* CUBERT_CONFIG_STAGING */

cubert_status_t cubert_client_create_from_slice_pinned(cubert_client_t *client, const void *data,
                                                       uint64_t size, cubert_handle_t *out_handle,
                                                       cubert_error_t *out_error) {
  cubert_bytes_t b;
  if (!client || !out_handle || (!data && size))
    return cubert_error_set(out_error, CUBERT_ERROR_INVALID_ARGUMENT, NULL, 0,
                            "create_from_slice_pinned: NULL argument");
  CUBERT_RETURN_IF_ERROR(cubert_client_reserve_staging(client, &size, 1, &b, out_error));
  if (size) cubert_memcpy(b.data, data, (size_t)size);
  return cubert_client_create_from_bytes(client, b, out_handle, out_error); /* takes b */
}

/* The bytes of tensor i: product(shape) * elem_size. */
static cubert_status_t tensor_bytes(const cubert_layout_descriptor_t *d, uint64_t *out,
                                    cubert_error_t *out_error) {
  uint64_t n = d->elem_size;
  uint32_t r;
  if (d->rank > CUBERT_MAX_RANK)
    return cubert_error_set(out_error, CUBERT_ERROR_INVALID_ARGUMENT, NULL, 0,
                            "rank above CUBERT_MAX_RANK");
  for (r = 0; r < d->rank; r++) {
    if (d->shape[r] && n > UINT64_MAX / d->shape[r])
      return cubert_error_set(out_error, CUBERT_ERROR_OUT_OF_RANGE, NULL, 0,
                              "tensor size overflows");
    n *= d->shape[r];
  }
  *out = n;
  return CUBERT_STATUS_OK;
}

typedef struct pinned_scratch_t {
  uint64_t sizes[STAGING_MAX_BATCH];
  cubert_bytes_t bytes[STAGING_MAX_BATCH];
} pinned_scratch_t;

cubert_status_t cubert_client_create_tensors_from_slices_pinned(
    cubert_client_t *client, const cubert_layout_descriptor_t *descriptors,
    const void *const *data, size_t count, cubert_memory_layout_t *out_layouts,
    cubert_error_t *out_error) {
  pinned_scratch_t *x = NULL;
  cubert_allocator_t allocator;
  cubert_status_t status = CUBERT_STATUS_OK;
  size_t i;
  if (!client || !descriptors || !data || !out_layouts || count == 0 || count > STAGING_MAX_BATCH)
    return cubert_error_set(out_error, CUBERT_ERROR_INVALID_ARGUMENT, NULL, 0,
                            "create_tensors_from_slices_pinned: NULL argument or count outside "
                            "1..64");
  allocator = client->state->allocator;
  if (cubert_allocator_malloc(allocator, sizeof(*x), 0, (void **)&x, NULL) != CUBERT_STATUS_OK)
    return cubert_error_set(out_error, CUBERT_ERROR_HOST_OUT_OF_MEMORY, NULL, 0,
                            "create_tensors_from_slices_pinned: scratch");
  for (i = 0; i < count && status == CUBERT_STATUS_OK; i++) {
    status = tensor_bytes(&descriptors[i], &x->sizes[i], out_error);
    if (status == CUBERT_STATUS_OK && x->sizes[i] && !data[i])
      status = cubert_error_set(out_error, CUBERT_ERROR_INVALID_ARGUMENT, NULL, 0,
                                "create_tensors_from_slices_pinned: NULL data entry");
  }
  if (status == CUBERT_STATUS_OK)
    status = cubert_client_reserve_staging(client, x->sizes, count, x->bytes, out_error);
  if (status == CUBERT_STATUS_OK) {
    for (i = 0; i < count; i++)
      if (x->sizes[i]) cubert_memcpy(x->bytes[i].data, data[i], (size_t)x->sizes[i]);
    /* ownership of every buffer moves to the create path (released on failure) */
    status = client_do_create(client, descriptors, count, data, x->bytes, out_layouts, out_error);
  }
  cubert_allocator_free(allocator, x, sizeof(*x), 0);
  return status;
}
