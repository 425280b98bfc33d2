/* SPDX-License-Identifier: MIT */
/*
 * backend-cuda/driver/cuda_transfer.c: the CUDA driver's copies and its pinned
 * staging buffers.
 *
 * A copy takes the fastest path its host side allows:
 *  - host side inside a staging buffer this driver handed out (host_alloc:
 *    reserve_staging, the pinned create variants): one DMA, asynchronous;
 *  - device to device, or at most CUDA_DRV_DIRECT_MAX bytes from pageable
 *    memory: straight through the CUDA driver (it stages small uploads);
 *  - an upload whose source is borrowed for the call only (the client's
 *    create / write of more than CUBERT_DRIVER_BORROW_MIN bytes, read in
 *    place): through the ring below whatever the source, so it is read
 *    before the call returns;
 *  - an upload from pageable memory: pieces of up to CUDA_DRV_PIECE bytes
 *    through a ring of CUDA_DRV_PIECES pinned chunks from the device's pool;
 *    the worker threads fill a piece while the DMA engine moves the one
 *    before. Returns once the last piece is enqueued; it waits for the
 *    device only when the ring comes round to a chunk whose DMA has not run
 *    yet (an upload above PIECES * PIECE bytes, or a stream far behind);
 *  - a read into pageable memory up to CUDA_DRV_READ_STAGED_MAX bytes: one
 *    DMA into a pinned chunk, asynchronous; the chunk is copied to the
 *    destination when an event recorded after it is found complete (the
 *    server's completion waits for one before the caller sees the data), or
 *    when the stream is synchronized;
 *  - a larger read: pieces through the ring, each copied out as its DMA
 *    completes; returns once the data is on the host (it waits for the
 *    stream's earlier work).
 */
#include <string.h>

#include "driver/cuda_driver.h"
#include "cubert/driver/arith.h"

/* ---- worker threads ---------------------------------------------------------------- */

/* The driver's worker threads, made at the first large transfer (any
 * thread: copy-outs run on waiting threads). NULL: the caller copies alone
 * (one thread configured, or they could not be made). */
static cuda_workers_t *workers_of(cuda_drv_t *d) {
  cuda_workers_t *w;
  if (d->upload_threads <= 1) return NULL;
  (void)pthread_mutex_lock(&d->pinned_mutex);
  if (!d->workers && !d->workers_failed &&
      cuda_workers_create(d->allocator, d->upload_threads, &d->workers) != CUBERT_STATUS_OK)
    d->workers_failed = true;
  w = d->workers;
  (void)pthread_mutex_unlock(&d->pinned_mutex);
  return w;
}

/* ---- staging buffers (host_alloc / host_free) ------------------------------------------ */

cubert_status_t cuda_drv_host_alloc(void *self, uint64_t size, void **out_ptr,
                                    cubert_error_t *out_error) {
  cuda_drv_t *d = cuda_drv_of(self);
  cubert_cuda_staging_chunk_t *c = NULL;
  cubert_status_t st = cubert__cuda_staging_acquire(d->dev, size, &c, out_error);
  if (st != CUBERT_STATUS_OK) return st;
  cuda_workers_copy(size >= CUDA_DRV_PIECE ? workers_of(d) : NULL, c->ptr, NULL, (size_t)size);
  (void)pthread_mutex_lock(&d->pinned_mutex);
  c->prev = NULL;
  c->next = d->pinned;
  if (d->pinned) d->pinned->prev = c;
  d->pinned = c;
  d->pinned_count++;
  (void)pthread_mutex_unlock(&d->pinned_mutex);
  *out_ptr = c->ptr;
  return CUBERT_STATUS_OK;
}

static void pinned_unlink(cuda_drv_t *d, cubert_cuda_staging_chunk_t *c) {
  if (c->prev) c->prev->next = c->next;
  else d->pinned = c->next;
  if (c->next) c->next->prev = c->prev;
  c->next = c->prev = NULL;
  d->pinned_count--;
}

void cuda_drv_host_free(void *self, void *ptr, uint64_t size) {
  cuda_drv_t *d = cuda_drv_of(self);
  cubert_cuda_staging_chunk_t *c = cubert__cuda_staging_chunk_of(ptr);
  (void)size;
  if (!c) return;
  (void)pthread_mutex_lock(&d->pinned_mutex);
  pinned_unlink(d, c);
  (void)pthread_mutex_unlock(&d->pinned_mutex);
  cubert__cuda_staging_release(d->dev, c, NULL); /* the server freed it after its last use */
}

void cuda_drv_pinned_free_all(cuda_drv_t *d) {
  (void)pthread_mutex_lock(&d->pinned_mutex);
  while (d->pinned) {
    cubert_cuda_staging_chunk_t *c = d->pinned;
    pinned_unlink(d, c);
    cubert__cuda_staging_release(d->dev, c, NULL);
  }
  (void)pthread_mutex_unlock(&d->pinned_mutex);
}

/* Whether [p, p + n) lies in a staging buffer handed out (pinned memory). */
static bool pinned_holds(cuda_drv_t *d, const void *p, uint64_t n) {
  uintptr_t b = (uintptr_t)p;
  cubert_cuda_staging_chunk_t *c;
  bool found = false;
  (void)pthread_mutex_lock(&d->pinned_mutex);
  for (c = d->pinned; c && !found; c = c->next) {
    uintptr_t start = (uintptr_t)c->ptr;
    found = b >= start && (uint64_t)(b - start) <= c->capacity &&
            n <= c->capacity - (uint64_t)(b - start);
  }
  (void)pthread_mutex_unlock(&d->pinned_mutex);
  return found;
}

/* ---- one copy of a piece ------------------------------------------------------------------ */

/* `rows` rows of `width` bytes: the host side at `host` (rows `host_pitch`
 * apart), the device side at `dev` (rows `dev_pitch` apart). */
typedef struct span_t {
  unsigned char *host;
  CUdeviceptr dev;
  uint64_t width, rows, host_pitch, dev_pitch;
} span_t;

static cubert_status_t enqueue_span(cubert_cuda_stream_t *s, const span_t *x, bool to_device,
                                    cubert_error_t *out_error) {
  cubert_cuda_copy_2d_t c;
  if (x->rows == 1)
    return to_device ? cubert__cuda_copy_h2d(s, x->dev, x->host, x->width, out_error)
                     : cubert__cuda_copy_d2h(s, x->host, x->dev, x->width, out_error);
  memset(&c, 0, sizeof c);
  c.kind = to_device ? CUBERT_CUDA_COPY_H2D : CUBERT_CUDA_COPY_D2H;
  c.width_bytes = x->width;
  c.height = x->rows;
  if (to_device) {
    c.src_host = x->host;
    c.src_pitch = x->host_pitch;
    c.dst_device = x->dev;
    c.dst_pitch = x->dev_pitch;
  } else {
    c.src_device = x->dev;
    c.src_pitch = x->dev_pitch;
    c.dst_host = x->host;
    c.dst_pitch = x->host_pitch;
  }
  return cubert__cuda_copy_2d(s, &c, out_error);
}

/* Rows between a packed chunk and the (pitched) host side; into a chunk
 * with non-temporal stores when `streaming` (only the DMA engine reads the
 * chunk next). */
static void pack_rows(cuda_workers_t *w, unsigned char *chunk, const span_t *x, bool into_chunk,
                      bool streaming) {
  uint64_t r;
  if (x->rows == 1 || x->host_pitch == x->width) {
    if (into_chunk) cuda_workers_copy_mode(w, chunk, x->host, (size_t)(x->width * x->rows), streaming);
    else cuda_workers_copy(w, x->host, chunk, (size_t)(x->width * x->rows));
    return;
  }
  for (r = 0; r < x->rows; r++) {
    if (into_chunk && streaming)
      cuda_workers_copy_streaming(chunk + r * x->width, x->host + r * x->host_pitch, (size_t)x->width);
    else if (into_chunk)
      memcpy(chunk + r * x->width, x->host + r * x->host_pitch, (size_t)x->width);
    else memcpy(x->host + r * x->host_pitch, chunk + r * x->width, (size_t)x->width);
  }
}

/* The whole copy as one span (host pitch / device pitch by direction). */
static span_t span_of(const cubert_driver_copy_t *c) {
  span_t x;
  bool up = c->kind == CUBERT_COPY_HOST_TO_DEVICE;
  x.host = up ? (unsigned char *)(uintptr_t)c->src_host : (unsigned char *)c->dst_host;
  x.dev = (CUdeviceptr)(up ? c->dst_device : c->src_device);
  x.width = c->width;
  x.rows = c->height;
  x.host_pitch = c->height > 1 ? (up ? c->src_pitch : c->dst_pitch) : c->width;
  x.dev_pitch = c->height > 1 ? (up ? c->dst_pitch : c->src_pitch) : c->width;
  return x;
}

/* Piece k of a span: whole rows (a 2-D copy) or up to `piece` bytes (1-D). */
static bool span_piece(const span_t *x, uint64_t piece, uint64_t k, span_t *out) {
  *out = *x;
  if (x->rows == 1) {
    uint64_t off = k * piece;
    if (off >= x->width) return false;
    out->host = x->host + off;
    out->dev = x->dev + off;
    out->width = x->width - off < piece ? x->width - off : piece;
    return true;
  } else {
    uint64_t per = piece / x->width, r0 = k * per; /* per >= 1: checked by the caller */
    if (r0 >= x->rows) return false;
    out->host = x->host + r0 * x->host_pitch;
    out->dev = x->dev + r0 * x->dev_pitch;
    out->rows = x->rows - r0 < per ? x->rows - r0 : per;
    return true;
  }
}

/* ---- the piece ring ---------------------------------------------------------------------- */

typedef struct ring_t {
  cubert_cuda_staging_chunk_t *chunk[CUDA_DRV_PIECES];
  cubert_cuda_event_t *event[CUDA_DRV_PIECES];
  span_t pending[CUDA_DRV_PIECES]; /* reads: the piece each chunk holds */
  bool holds[CUDA_DRV_PIECES];
} ring_t;

/* Give the ring's chunks back: with their events after a success (the pool
 * reuses a chunk once its DMA ran), else after the stream was synchronized. */
static void ring_release(cuda_drv_stream_t *s, ring_t *r, bool ok) {
  cubert_cuda_device_t *dev = s->drv->dev;
  uint32_t i;
  if (!ok) (void)cubert__cuda_stream_synchronize(&s->s, NULL);
  for (i = 0; i < CUDA_DRV_PIECES; i++) {
    if (!r->chunk[i]) {
      cubert__cuda_event_release(dev, r->event[i]);
      continue;
    }
    if (!ok) {
      cubert__cuda_event_release(dev, r->event[i]);
      r->event[i] = NULL;
    }
    cubert__cuda_staging_release(dev, r->chunk[i], r->event[i]);
  }
}

/* Make slot i of the ring usable: its chunk acquired, its last DMA done
 * (and, for a read, that piece copied out). */
static cubert_status_t ring_slot(cuda_drv_stream_t *s, ring_t *r, uint32_t i, uint64_t piece,
                                 cuda_workers_t *w, cubert_error_t *out_error) {
  cubert_cuda_device_t *dev = s->drv->dev;
  if (!r->chunk[i]) return cubert__cuda_staging_acquire_wait(dev, piece, &r->chunk[i], out_error);
  if (r->event[i]) {
    CUBERT_RETURN_IF_ERROR(cubert__cuda_event_synchronize(dev, r->event[i], out_error));
    cubert__cuda_event_release(dev, r->event[i]);
    r->event[i] = NULL;
  }
  if (r->holds[i]) {
    pack_rows(w, (unsigned char *)r->chunk[i]->ptr, &r->pending[i], false, false);
    r->holds[i] = false;
  }
  return CUBERT_STATUS_OK;
}

/* A transfer through the ring: an upload (fill, DMA) or a read (DMA, copy
 * out when the slot comes round and at the end). */
static cubert_status_t ring_transfer(cuda_drv_stream_t *s, const span_t *x, bool to_device,
                                     cubert_error_t *out_error) {
  cuda_drv_t *d = s->drv;
  cuda_workers_t *w = workers_of(d);
  uint64_t total = x->width * x->rows, piece = total < CUDA_DRV_PIECE ? total : CUDA_DRV_PIECE;
  span_t p;
  ring_t r;
  uint64_t k;
  uint32_t i;
  cubert_status_t st = CUBERT_STATUS_OK;
  memset(&r, 0, sizeof r);
  for (k = 0; st == CUBERT_STATUS_OK && span_piece(x, piece, k, &p); k++) {
    span_t dma = p;
    i = (uint32_t)(k % CUDA_DRV_PIECES);
    st = ring_slot(s, &r, i, piece, w, out_error);
    if (st != CUBERT_STATUS_OK) break;
    dma.host = (unsigned char *)r.chunk[i]->ptr;
    dma.host_pitch = p.width;
    if (to_device) pack_rows(w, dma.host, &p, true, d->upload_streaming != 0);
    st = enqueue_span(&s->s, &dma, to_device, out_error);
    if (st == CUBERT_STATUS_OK) st = cubert__cuda_event_record(&s->s, false, &r.event[i], out_error);
    if (st == CUBERT_STATUS_OK && !to_device) {
      r.pending[i] = p;
      r.holds[i] = true;
    }
  }
  /* a read: the pieces still in the ring (each to its own place) */
  for (i = 0; st == CUBERT_STATUS_OK && !to_device && i < CUDA_DRV_PIECES; i++)
    if (r.holds[i]) st = ring_slot(s, &r, i, piece, w, out_error);
  ring_release(s, &r, st == CUBERT_STATUS_OK);
  return st;
}

/* ---- staged reads ------------------------------------------------------------------------- */

/* A read into pageable memory through one pinned chunk, copied out later. */
static cubert_status_t read_staged(cuda_drv_stream_t *s, const span_t *x,
                                   cubert_error_t *out_error) {
  cuda_drv_t *d = s->drv;
  uint64_t bytes = x->width * x->rows;
  cubert_cuda_staging_chunk_t *c = NULL;
  span_t dma = *x;
  cubert_status_t st = cubert__cuda_staging_acquire(d->dev, bytes, &c, out_error);
  if (st != CUBERT_STATUS_OK) return st;
  dma.host = (unsigned char *)c->ptr;
  dma.host_pitch = x->width;
  st = enqueue_span(&s->s, &dma, false, out_error);
  if (st != CUBERT_STATUS_OK) {
    cubert__cuda_staging_release(d->dev, c, NULL); /* nothing was enqueued */
    return st;
  }
  c->out_dst = x->host;
  c->out_bytes = bytes;
  c->next = NULL;
  (void)pthread_mutex_lock(&s->outs_mutex);
  c->out_seq = ++s->outs_enqueued;
  if (s->outs_tail) s->outs_tail->next = c;
  else s->outs_head = c;
  s->outs_tail = c;
  (void)pthread_mutex_unlock(&s->outs_mutex);
  d->stats.reads_staged++;
  return CUBERT_STATUS_OK;
}

void cuda_drv_copy_outs(cuda_drv_stream_t *s, uint64_t upto) {
  cuda_drv_t *d = s->drv;
  cuda_workers_t *w = NULL;
  (void)pthread_mutex_lock(&s->outs_mutex);
  while (s->outs_head && s->outs_head->out_seq <= upto) {
    cubert_cuda_staging_chunk_t *c = s->outs_head;
    s->outs_head = c->next;
    if (!s->outs_head) s->outs_tail = NULL;
    if (!w && c->out_bytes >= CUDA_DRV_PIECE) w = workers_of(d);
    cuda_workers_copy(w, c->out_dst, c->ptr, (size_t)c->out_bytes);
    c->next = NULL;
    __atomic_fetch_add(&d->stats.copy_outs, 1u, __ATOMIC_RELAXED);
    cubert__cuda_staging_release(d->dev, c, NULL);
  }
  (void)pthread_mutex_unlock(&s->outs_mutex);
}

void cuda_drv_copy_outs_drop(cuda_drv_stream_t *s) {
  (void)pthread_mutex_lock(&s->outs_mutex);
  while (s->outs_head) {
    cubert_cuda_staging_chunk_t *c = s->outs_head;
    s->outs_head = c->next;
    c->next = NULL;
    cubert__cuda_staging_release(s->drv->dev, c, NULL);
  }
  s->outs_tail = NULL;
  (void)pthread_mutex_unlock(&s->outs_mutex);
}

/* ---- the copy primitive --------------------------------------------------------------------- */

static cubert_status_t copy_direct(cuda_drv_stream_t *s, const cubert_driver_copy_t *c,
                                   cubert_error_t *out_error) {
  cubert_cuda_copy_2d_t m;
  if (c->height == 1) {
    switch (c->kind) {
      case CUBERT_COPY_HOST_TO_DEVICE:
        return cubert__cuda_copy_h2d(&s->s, (CUdeviceptr)c->dst_device, c->src_host, c->width,
                                     out_error);
      case CUBERT_COPY_DEVICE_TO_HOST:
        return cubert__cuda_copy_d2h(&s->s, c->dst_host, (CUdeviceptr)c->src_device, c->width,
                                     out_error);
      default:
        return cubert__cuda_copy_d2d(&s->s, (CUdeviceptr)c->dst_device,
                                     (CUdeviceptr)c->src_device, c->width, out_error);
    }
  }
  memset(&m, 0, sizeof m);
  m.kind = c->kind == CUBERT_COPY_HOST_TO_DEVICE   ? CUBERT_CUDA_COPY_H2D
           : c->kind == CUBERT_COPY_DEVICE_TO_HOST ? CUBERT_CUDA_COPY_D2H
                                                   : CUBERT_CUDA_COPY_D2D;
  m.src_host = c->src_host;
  m.src_device = (CUdeviceptr)c->src_device;
  m.src_pitch = c->src_pitch;
  m.dst_host = c->dst_host;
  m.dst_device = (CUdeviceptr)c->dst_device;
  m.dst_pitch = c->dst_pitch;
  m.width_bytes = c->width;
  m.height = c->height;
  return cubert__cuda_copy_2d(&s->s, &m, out_error);
}

/* An upload whose source is the caller's only during the call
 * (CUBERT_COPY_SOURCE_BORROWED): always through pinned chunks that are
 * filled before this returns, whatever the size and wherever the source
 * lies (a source the CUDA driver sees as pinned would otherwise be read by
 * an asynchronous DMA after the call); rows wider than a piece one by one. */
static cubert_status_t upload_borrowed(cuda_drv_stream_t *s, const span_t *x,
                                       cubert_error_t *out_error) {
  span_t row;
  uint64_t r;
  s->drv->stats.uploads_borrowed++;
  s->drv->stats.uploads_staged++;
  if (x->rows == 1 || x->width <= CUDA_DRV_PIECE) return ring_transfer(s, x, true, out_error);
  for (r = 0; r < x->rows; r++) {
    row = *x;
    row.host = x->host + r * x->host_pitch;
    row.dev = x->dev + r * x->dev_pitch;
    row.rows = 1;
    row.host_pitch = row.dev_pitch = x->width;
    CUBERT_RETURN_IF_ERROR(ring_transfer(s, &row, true, out_error));
  }
  return CUBERT_STATUS_OK;
}

cubert_status_t cuda_drv_copy(void *self, const cubert_driver_copy_t *c,
                              cubert_driver_stream_t *stream, cubert_error_t *out_error) {
  cuda_drv_t *d = cuda_drv_of(self);
  cuda_drv_stream_t *s = cuda_drv_stream_of(stream);
  uint64_t bytes, host_span;
  span_t x;
  if (c->kind > CUBERT_COPY_DEVICE_TO_DEVICE)
    return cubert_error_set(out_error, CUBERT_ERROR_INVALID_ARGUMENT, NULL, 0, "unknown copy kind");
  if (c->width == 0 || c->height == 0) return CUBERT_STATUS_OK;
  cuda_drv_settle(s);
  s->ops++; /* (also when it fails: the errors are then polled for) */
  if ((c->height > 1 && (c->src_pitch < c->width || c->dst_pitch < c->width)) ||
      cubert_u64_mul(c->width, c->height, &bytes) != CUBERT_STATUS_OK)
    return cubert_error_set(out_error, CUBERT_ERROR_INVALID_ARGUMENT, NULL, 0,
                            "copy: a pitch below the row width, or a size overflow");
  if (c->kind == CUBERT_COPY_DEVICE_TO_DEVICE) return copy_direct(s, c, out_error);
  x = span_of(c);
  if (c->kind == CUBERT_COPY_HOST_TO_DEVICE && (c->flags & CUBERT_COPY_SOURCE_BORROWED))
    return upload_borrowed(s, &x, out_error);
  host_span = (x.rows - 1) * x.host_pitch + x.width; /* the server checked it fits */
  if (pinned_holds(d, x.host, host_span)) {
    d->stats.copies_pinned++;
    return copy_direct(s, c, out_error);
  }
  if (c->kind == CUBERT_COPY_HOST_TO_DEVICE) {
    /* small, or rows wider than a piece: the CUDA driver stages them */
    if (bytes <= CUDA_DRV_DIRECT_MAX || (x.rows > 1 && x.width > CUDA_DRV_PIECE)) {
      d->stats.copies_direct++;
      return copy_direct(s, c, out_error);
    }
    d->stats.uploads_staged++;
    return ring_transfer(s, &x, true, out_error);
  }
  if (bytes <= CUDA_DRV_READ_STAGED_MAX && (x.rows == 1 || x.host_pitch == x.width))
    return read_staged(s, &x, out_error);
  if (x.rows > 1 && x.width > CUDA_DRV_PIECE) {
    d->stats.copies_direct++;
    return copy_direct(s, c, out_error);
  }
  d->stats.reads_pieced++;
  return ring_transfer(s, &x, false, out_error);
}
