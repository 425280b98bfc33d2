/* SPDX-License-Identifier: MIT */
/*
 * backend-cuda/device/cuda_staging.c: pinned staging chunks, pooled.
 *
 * Pinning host memory is slow (cuMemHostAlloc of 64 MiB takes tens of
 * milliseconds), so chunks are allocated once per power-of-two size class
 * and reused: a released chunk carries the event of its last use and is
 * handed out again only once that event completed. Uploads from pageable
 * memory go through two chunks alternately: while the DMA engine copies one
 * to the device, the host fills the other.
 */
#include "device/cuda_device.h"

#include <string.h>

typedef char staging_record_fits_[sizeof(cubert_cuda_staging_chunk_t) <= CUBERT_CUDA_STAGING_HEADER
                                      ? 1
                                      : -1];

/* Chunks of a class with a pending use examined per acquisition. */
#define STAGING_SCAN_LIMIT 8u

static uint32_t staging_class(uint64_t size) {
  uint32_t c = CUBERT_CUDA_STAGING_MIN_CLASS;
  while (c < 63 && ((uint64_t)1 << c) < size) c++;
  return c - CUBERT_CUDA_STAGING_MIN_CLASS;
}

cubert_status_t cubert__cuda_staging_pool_initialize(cubert_cuda_staging_pool_t *pool) {
  memset(pool->idle, 0, sizeof pool->idle);
  memset(&pool->stats, 0, sizeof pool->stats);
  pool->upload_chunk_bytes = CUBERT_CUDA_STAGING_UPLOAD_CHUNK;
  return pthread_mutex_init(&pool->mutex, NULL) == 0 ? CUBERT_STATUS_OK
                                                     : CUBERT_STATUS_RESOURCE_EXHAUSTED;
}

/* Whether a chunk's last use completed (no event, or the event is done; a
 * failed query counts as done: the device is gone or the use failed, and
 * nothing will touch the chunk any more). */
static bool staging_chunk_ready(cubert_cuda_device_t *d, cubert_cuda_staging_chunk_t *c) {
  bool done = false;
  if (!c->event) return true;
  if (cubert__cuda_event_query(d, c->event, &done, NULL) != CUBERT_STATUS_OK) return true;
  return done;
}

static void staging_chunk_free(cubert_cuda_device_t *d, cubert_cuda_staging_chunk_t *c) {
  cubert__cuda_event_release(d, c->event);
  c->magic = 0;
  cubert__cuda_host_free(d, c); /* the record is the allocation's start */
}

cubert_cuda_staging_chunk_t *cubert__cuda_staging_chunk_of(void *ptr) {
  cubert_cuda_staging_chunk_t *c;
  if (!ptr || (uintptr_t)ptr % 64u != 0) return NULL;
  c = (cubert_cuda_staging_chunk_t *)(void *)((unsigned char *)ptr - CUBERT_CUDA_STAGING_HEADER);
  return c->magic == CUBERT_CUDA_STAGING_MAGIC && c->ptr == ptr ? c : NULL;
}

/* Take a ready idle chunk of class `cls` off the pool, or NULL. Caller holds
 * the mutex. */
static cubert_cuda_staging_chunk_t *staging_take_ready(cubert_cuda_device_t *d, uint32_t cls) {
  cubert_cuda_staging_pool_t *pool = &d->staging;
  cubert_cuda_staging_chunk_t **link = &pool->idle[cls];
  uint32_t scanned = 0;
  while (*link && scanned < STAGING_SCAN_LIMIT) {
    cubert_cuda_staging_chunk_t *c = *link;
    if (staging_chunk_ready(d, c)) {
      *link = c->next;
      c->next = NULL;
      cubert__cuda_event_release(d, c->event);
      c->event = NULL;
      return c;
    }
    link = &c->next;
    scanned++;
  }
  return NULL;
}

uint64_t cubert__cuda_staging_trim(cubert_cuda_device_t *device) {
  cubert_cuda_staging_pool_t *pool = &device->staging;
  uint64_t freed = 0;
  uint32_t cls;
  (void)pthread_mutex_lock(&pool->mutex);
  for (cls = 0; cls < CUBERT_CUDA_STAGING_CLASSES; cls++) {
    cubert_cuda_staging_chunk_t **link = &pool->idle[cls];
    while (*link) {
      cubert_cuda_staging_chunk_t *c = *link;
      if (!staging_chunk_ready(device, c)) {
        link = &c->next;
        continue;
      }
      *link = c->next;
      freed += c->capacity;
      pool->stats.bytes_pinned -= c->capacity;
      pool->stats.host_frees++;
      staging_chunk_free(device, c);
    }
  }
  (void)pthread_mutex_unlock(&pool->mutex);
  return freed;
}

/* Take the oldest pending chunk of class `cls` (the first one: pending
 * chunks are appended), or NULL. Caller holds the mutex. */
static cubert_cuda_staging_chunk_t *staging_take_oldest(cubert_cuda_staging_pool_t *pool,
                                                        uint32_t cls) {
  cubert_cuda_staging_chunk_t *c = pool->idle[cls];
  if (c) {
    pool->idle[cls] = c->next;
    c->next = NULL;
  }
  return c;
}

/* Acquire; `wait`: when the class holds chunks but none is ready, wait for
 * the oldest one's use to complete instead of pinning a new chunk. */
static cubert_status_t staging_acquire(cubert_cuda_device_t *device, uint64_t size, bool wait,
                                       cubert_cuda_staging_chunk_t **out_chunk,
                                       cubert_error_t *out_error) {
  cubert_cuda_staging_pool_t *pool;
  cubert_cuda_staging_chunk_t *c;
  uint64_t capacity;
  uint32_t cls;
  void *ptr = NULL;
  cubert_status_t st;
  if (!device || !out_chunk || size == 0)
    return cubert_error_set(out_error, CUBERT_ERROR_INVALID_ARGUMENT, NULL, 0,
                            "cubert__cuda_staging_acquire: size 0 or NULL argument");
  cls = staging_class(size);
  if (cls >= CUBERT_CUDA_STAGING_CLASSES) {
    uint64_t f = size;
    return cubert_error_set(out_error, CUBERT_ERROR_IO_BUFFER_TOO_BIG, &f, 1,
                            "staging buffer above the largest pinned chunk class");
  }
  if (cubert__cuda_device_is_lost(device)) return cubert__cuda_device_lost_error(device, out_error);
  pool = &device->staging;
  (void)pthread_mutex_lock(&pool->mutex);
  c = staging_take_ready(device, cls);
  if (!c && wait) c = staging_take_oldest(pool, cls);
  if (c) {
    pool->stats.reuses++;
    pool->stats.handed_out++;
  }
  (void)pthread_mutex_unlock(&pool->mutex);
  if (c && c->event) { /* the oldest pending chunk: its copy finishes first */
    st = cubert__cuda_event_synchronize(device, c->event, out_error);
    cubert__cuda_event_release(device, c->event);
    c->event = NULL;
    if (st != CUBERT_STATUS_OK) {
      cubert__cuda_staging_release(device, c, NULL);
      return st;
    }
  }
  if (c) {
    c->prev = NULL;
    c->out_dst = NULL;
    c->out_bytes = c->out_seq = 0;
    *out_chunk = c;
    return CUBERT_STATUS_OK;
  }
  capacity = (uint64_t)1 << (cls + CUBERT_CUDA_STAGING_MIN_CLASS);
  st = cubert__cuda_host_alloc(device, capacity + CUBERT_CUDA_STAGING_HEADER, &ptr, out_error);
  if (st == CUBERT_STATUS_RESOURCE_EXHAUSTED && cubert__cuda_staging_trim(device) > 0)
    st = cubert__cuda_host_alloc(device, capacity + CUBERT_CUDA_STAGING_HEADER, &ptr, out_error);
  if (st != CUBERT_STATUS_OK) return st;
  c = (cubert_cuda_staging_chunk_t *)ptr;
  memset(c, 0, sizeof *c);
  c->ptr = (unsigned char *)ptr + CUBERT_CUDA_STAGING_HEADER;
  c->capacity = capacity;
  c->size_class = cls;
  c->magic = CUBERT_CUDA_STAGING_MAGIC;
  (void)pthread_mutex_lock(&pool->mutex);
  pool->stats.host_allocs++;
  pool->stats.bytes_pinned += capacity;
  pool->stats.handed_out++;
  (void)pthread_mutex_unlock(&pool->mutex);
  *out_chunk = c;
  return CUBERT_STATUS_OK;
}

cubert_status_t cubert__cuda_staging_acquire(cubert_cuda_device_t *device, uint64_t size,
                                             cubert_cuda_staging_chunk_t **out_chunk,
                                             cubert_error_t *out_error) {
  return staging_acquire(device, size, false, out_chunk, out_error);
}

cubert_status_t cubert__cuda_staging_acquire_wait(cubert_cuda_device_t *device, uint64_t size,
                                                  cubert_cuda_staging_chunk_t **out_chunk,
                                                  cubert_error_t *out_error) {
  return staging_acquire(device, size, true, out_chunk, out_error);
}

void cubert__cuda_staging_release(cubert_cuda_device_t *device,
                                  cubert_cuda_staging_chunk_t *chunk, cubert_cuda_event_t *event) {
  cubert_cuda_staging_pool_t *pool;
  cubert_cuda_staging_chunk_t **link;
  if (!device || !chunk) {
    if (device) cubert__cuda_event_release(device, event);
    return;
  }
  pool = &device->staging;
  (void)pthread_mutex_lock(&pool->mutex);
  chunk->event = event;
  /* Ready chunks first, pending ones after them: a chunk without a pending
   * use goes to the front, one with an event to the back of its class. */
  link = &pool->idle[chunk->size_class];
  if (event)
    while (*link) link = &(*link)->next;
  chunk->next = *link;
  *link = chunk;
  pool->stats.handed_out--;
  (void)pthread_mutex_unlock(&pool->mutex);
}

void cubert__cuda_staging_stats(cubert_cuda_device_t *device, cubert_cuda_staging_stats_t *out) {
  (void)pthread_mutex_lock(&device->staging.mutex);
  *out = device->staging.stats;
  (void)pthread_mutex_unlock(&device->staging.mutex);
}

void cubert__cuda_staging_pool_deinitialize(cubert_cuda_device_t *device) {
  cubert_cuda_staging_pool_t *pool = &device->staging;
  uint32_t cls;
  for (cls = 0; cls < CUBERT_CUDA_STAGING_CLASSES; cls++) {
    while (pool->idle[cls]) {
      cubert_cuda_staging_chunk_t *c = pool->idle[cls];
      pool->idle[cls] = c->next;
      /* a copy may still read the chunk: wait for it (returns at once on
       * a lost device) */
      if (c->event) (void)cubert__cuda_event_synchronize(device, c->event, NULL);
      pool->stats.bytes_pinned -= c->capacity;
      pool->stats.host_frees++;
      staging_chunk_free(device, c);
    }
  }
}

/* The double-buffered loop of an upload; buf[] / ev[] are the caller's, so
 * whatever is in flight is handed back by the caller on every path. */
static cubert_status_t staging_upload_pieces(cubert_cuda_stream_t *stream, CUdeviceptr dst,
                                             const unsigned char *src, uint64_t size,
                                             cubert_cuda_staging_chunk_t *buf[2],
                                             cubert_cuda_event_t *ev[2],
                                             cubert_error_t *out_error) {
  cubert_cuda_device_t *d = stream->device;
  uint64_t piece = d->staging.upload_chunk_bytes, off = 0;
  unsigned i = 0;
  cubert_status_t st;
  while (off < size) {
    uint64_t n = size - off < piece ? size - off : piece;
    if (ev[i]) { /* the copy that last read this chunk must be done */
      st = cubert__cuda_event_synchronize(d, ev[i], out_error);
      if (st != CUBERT_STATUS_OK) return st;
      cubert__cuda_event_release(d, ev[i]);
      ev[i] = NULL;
    }
    memcpy(buf[i]->ptr, src + off, (size_t)n);
    st = cubert__cuda_copy_h2d(stream, dst + off, buf[i]->ptr, n, out_error);
    if (st == CUBERT_STATUS_OK) st = cubert__cuda_event_record(stream, false, &ev[i], out_error);
    if (st != CUBERT_STATUS_OK) return st;
    off += n;
    i ^= 1u;
  }
  return CUBERT_STATUS_OK;
}

cubert_status_t cubert__cuda_staging_upload(cubert_cuda_stream_t *stream, CUdeviceptr dst,
                                            const void *src, uint64_t size,
                                            cubert_error_t *out_error) {
  cubert_cuda_device_t *d;
  cubert_cuda_staging_chunk_t *buf[2] = {NULL, NULL};
  cubert_cuda_event_t *ev[2] = {NULL, NULL};
  uint64_t piece;
  unsigned i;
  cubert_status_t st;
  if (!stream || !stream->handle || (size && (!src || !dst)))
    return cubert_error_set(out_error, CUBERT_ERROR_INVALID_ARGUMENT, NULL, 0,
                            "cubert__cuda_staging_upload: NULL argument");
  d = stream->device;
  st = cubert__cuda_device_enter(d, out_error);
  if (st != CUBERT_STATUS_OK || size == 0) return st;
  /* Small uploads go straight from pageable memory: the driver stages them
   * itself and returns once it has read the source. */
  if (size <= CUBERT_CUDA_STAGING_DIRECT_MAX)
    return cubert__cuda_copy_h2d(stream, dst, src, size, out_error);
  /* Pieces of the upload class only, so every upload reuses the same chunks. */
  piece = d->staging.upload_chunk_bytes;
  st = staging_acquire(d, piece, true, &buf[0], out_error);
  if (st == CUBERT_STATUS_OK && size > piece)
    st = staging_acquire(d, piece, true, &buf[1], out_error);
  if (st == CUBERT_STATUS_OK && !buf[1]) buf[1] = buf[0]; /* one piece: one chunk */
  if (st == CUBERT_STATUS_OK)
    st = staging_upload_pieces(stream, dst, (const unsigned char *)src, size, buf, ev, out_error);
  if (st != CUBERT_STATUS_OK && buf[0])
    /* a piece may be enqueued without its event: wait for the stream before
     * the chunks go back (returns at once on a lost device) */
    (void)cubert__cuda_stream_synchronize(stream, NULL);
  for (i = 0; i < 2; i++) {
    if (!buf[i] || (i == 1 && buf[1] == buf[0])) {
      cubert__cuda_event_release(d, ev[i]);
      continue;
    }
    cubert__cuda_staging_release(d, buf[i], st == CUBERT_STATUS_OK ? ev[i] : NULL);
    if (st != CUBERT_STATUS_OK) cubert__cuda_event_release(d, ev[i]);
  }
  return st;
}
