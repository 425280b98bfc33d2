/* SPDX-License-Identifier: MIT */
/*
 * backend-cuda/driver/cuda_driver.c: the CUDA driver's table (cubert/driver/
 * driver.h) over the CUDA device layer (cuda_device.h): device memory
 * (cuMemAllocAsync, stream-ordered frees, reclaim and retry on
 * OUT_OF_MEMORY), launches (the function cache, limits, dynamic cube
 * counts, VALIDATE reports), streams (one non-blocking CUstream per server
 * stream: the slots, the GC stream, the communication stream) and pooled
 * events. Copies and pinned memory: cuda_transfer.c. docs/cuda.md.
 *
 * Every primitive goes through the layer, which makes the device's primary
 * context current on the calling thread and answers a lost device at once
 * with its DEVICE_LOST record (UNAVAILABLE: the server becomes sticky).
 */
#include "driver/cuda_driver.h"

#include <string.h>

#include "comm/cuda_comm.h"

static cubert_cuda_event_t *event_of(cubert_driver_event_t *e) {
  return (cubert_cuda_event_t *)(void *)e;
}

/* ---- device memory ------------------------------------------------------------------- */

/* Reclaim before one more try: every stream of the device synchronized, so
 * memory freed on any of them (cuMemFreeAsync) is back in the pool. */
static void reclaim(void *user) {
  cuda_drv_t *d = (cuda_drv_t *)user;
  uint32_t i;
  for (i = 0; i < d->stream_count; i++)
    if (d->streams[i]) (void)cubert__cuda_stream_synchronize(&d->streams[i]->s, NULL);
  /* atomic: a sharded pool reserve (concurrent_launch) may allocate on two streams at once */
  __atomic_add_fetch(&d->stats.alloc_retries, 1, __ATOMIC_RELAXED);
}

static cubert_status_t drv_memory_alloc(void *self, uint64_t size, cubert_driver_stream_t *stream,
                                        cubert_device_ptr_t *out_address,
                                        cubert_error_t *out_error) {
  cuda_drv_t *d = cuda_drv_of(self);
  CUdeviceptr p = 0;
  cubert_status_t st;
  cuda_drv_settle(cuda_drv_stream_of(stream));
  cuda_drv_stream_of(stream)->ops++; /* stream-ordered (cuMemAllocAsync) */
  st = cubert__cuda_memory_alloc_retry(&cuda_drv_stream_of(stream)->s, size, reclaim, d, &p,
                                       out_error);
  if (st != CUBERT_STATUS_OK) return st;
  *out_address = (cubert_device_ptr_t)p;
  return CUBERT_STATUS_OK;
}

static void drv_memory_free(void *self, cubert_device_ptr_t address, uint64_t size,
                            cubert_driver_stream_t *stream) {
  cuda_drv_t *d = cuda_drv_of(self);
  (void)size;
  if (!stream) {
    cubert__cuda_memory_free_now(d->dev, (CUdeviceptr)address);
    return;
  }
  /* a lost device: nothing is called (the context's memory goes with it) */
  cuda_drv_settle(cuda_drv_stream_of(stream));
  cuda_drv_stream_of(stream)->ops++; /* stream-ordered (cuMemFreeAsync) */
  (void)cubert__cuda_memory_free(&cuda_drv_stream_of(stream)->s, (CUdeviceptr)address, NULL);
}

/* ---- launches --------------------------------------------------------------------------- */

static cubert_status_t no_entry(const cubert_kernel_t *k, cubert_error_t *out_error) {
  char reason[CUBERT_ERROR_REASON_SIZE];
  cubert__cuda_format(reason, sizeof reason, "kernel %s has no CUDA entry point",
                      k->name ? k->name : "(unnamed)");
  cubert_error_set(out_error, CUBERT_ERROR_COMPILATION_UNSUPPORTED_INSTRUCTION, NULL, 0, reason);
  cubert_error_wrap(out_error, CUBERT_ERROR_LAUNCH_COMPILATION);
  cubert_error_wrap(out_error, CUBERT_ERROR_SERVER_LAUNCH);
  return CUBERT_STATUS_COMPILATION_FAILED; /* out_error may be NULL */
}

static cubert_status_t count_limit(cubert_error_t *e, uint64_t requested, uint64_t max) {
  uint64_t f[2];
  f[0] = requested;
  f[1] = max;
  cubert_error_set(e, CUBERT_ERROR_RESOURCE_UNITS, f, 2,
                   "dynamic cube count above the device's maximum");
  cubert_error_wrap(e, CUBERT_ERROR_LAUNCH_TOO_MANY_RESOURCES);
  return cubert_error_wrap(e, CUBERT_ERROR_SERVER_LAUNCH);
}

/* A dynamic count (CubeCount::Dynamic): its 12 bytes copied back through
 * the device's pinned words and the stream synchronized, as CubeCL does
 * (this blocks until the stream's earlier work finished). A count above the
 * device's limits is a stream error (*out_queued set). */
static cubert_status_t read_dynamic_count(cuda_drv_t *d, cuda_drv_stream_t *s,
                                          cubert_device_ptr_t at, cubert_dim3_t *out_count,
                                          cubert_error_t *queued, cubert_error_t *out_error) {
  const cubert_hardware_properties_t *hw = &d->properties.hardware;
  uint32_t *words = d->dev->count_scratch;
  cubert_dim3_t c;
  cubert_status_t st = cubert__cuda_copy_d2h(&s->s, words, (CUdeviceptr)at, 12, out_error);
  if (st == CUBERT_STATUS_OK) st = cubert__cuda_stream_synchronize(&s->s, out_error);
  if (st != CUBERT_STATUS_OK) return st;
  d->stats.dynamic_reads++;
  c.x = words[0];
  c.y = words[1];
  c.z = words[2];
  if (c.x > hw->max_cube_count.x) (void)count_limit(queued, c.x, hw->max_cube_count.x);
  else if (c.y > hw->max_cube_count.y) (void)count_limit(queued, c.y, hw->max_cube_count.y);
  else if (c.z > hw->max_cube_count.z) (void)count_limit(queued, c.z, hw->max_cube_count.z);
  *out_count = c;
  return CUBERT_STATUS_OK;
}

/* What a failure of `st` means for a launch: returned at once (the launch
 * is refused, or the device is lost) or queued on the stream. */
static bool launch_refused(cubert_status_t st) {
  return st == CUBERT_STATUS_COMPILATION_FAILED || st == CUBERT_STATUS_UNAVAILABLE ||
         st == CUBERT_STATUS_RESOURCE_EXHAUSTED || st == CUBERT_STATUS_INVALID_ARGUMENT ||
         st == CUBERT_STATUS_UNSUPPORTED;
}

/* The launch's argument block, in the stream's (passed by value: the layout
 * is the same on the GPU). Slots past the counts stay zero. */
static const cubert_kernel_args_t *launch_args(cuda_drv_stream_t *s, const cubert_driver_launch_t *l) {
  cubert_kernel_args_t *a = &s->args;
  uint32_t i;
  for (i = 0; i < l->buffer_count; i++) {
    a->buffers[i].ptr = (void *)(uintptr_t)l->buffers[i].address;
    a->buffers[i].size_bytes = l->buffers[i].size;
  }
  for (; i < a->buffer_count; i++) {
    a->buffers[i].ptr = NULL;
    a->buffers[i].size_bytes = 0;
  }
  if (l->scalar_count) memcpy(a->scalars, l->scalars, l->scalar_count * sizeof(uint64_t));
  for (i = l->scalar_count; i < a->scalar_count; i++) a->scalars[i] = 0;
  a->buffer_count = l->buffer_count;
  a->scalar_count = l->scalar_count;
  return a;
}

static cubert_status_t drv_launch(void *self, const cubert_driver_launch_t *l,
                                  cubert_driver_stream_t *stream, cubert_error_t *out_error) {
  cuda_drv_t *d = cuda_drv_of(self);
  cuda_drv_stream_t *s = cuda_drv_stream_of(stream);
  const cubert_cuda_function_t *f = NULL;
  const cubert_kernel_args_t *args;
  cubert_dim3_t count = l->count;
  CUdeviceptr report = 0;
  cubert_error_t e;
  cubert_status_t st;
  if (!l->kernel->cuda_entry_name) return no_entry(l->kernel, out_error);
  cuda_drv_settle(s);
  st = cubert__cuda_function_get_memo(d->dev, &s->functions, l->kernel, &f, &e); /* e: on failure */
  if (st != CUBERT_STATUS_OK) {
    if (launch_refused(st)) {
      if (out_error) *out_error = e;
      return st;
    }
    cubert__cuda_stream_queue_error(&s->s, &e); /* e.g. shared memory above the device's */
    return CUBERT_STATUS_OK;
  }
  args = launch_args(s, l);
  if (l->dynamic) {
    cubert_error_clear(&e);
    st = read_dynamic_count(d, s, l->dynamic_count, &count, &e, out_error);
    if (st != CUBERT_STATUS_OK) return st;
    if (e.depth) {
      cubert__cuda_stream_queue_error(&s->s, &e);
      return CUBERT_STATUS_OK;
    }
    if (count.x == 0 || count.y == 0 || count.z == 0) return CUBERT_STATUS_OK; /* runs nothing */
  }
  /* RACECHECK has no GPU side: it runs as VALIDATE (the CPU drivers check races) */
  if (l->execution == CUBERT_EXECUTION_VALIDATE || l->execution == CUBERT_EXECUTION_RACECHECK) {
    st = cuda_reports_prepare(s, &report, out_error);
    if (st != CUBERT_STATUS_OK) return st;
  }
  st = cubert__cuda_launch_shaped(&s->s, f, count, l->cube_dim, l->shared_memory_bytes, args,
                                  l->execution == CUBERT_EXECUTION_RACECHECK
                                      ? CUBERT_KERNEL_MODE_VALIDATE
                                      : (uint32_t)l->execution,
                                  report, &e);
  s->ops++;
  if (st == CUBERT_STATUS_OK) {
    if (report) cuda_reports_launched(s, l->kernel);
    return CUBERT_STATUS_OK;
  }
  if (st == CUBERT_STATUS_UNAVAILABLE || st == CUBERT_STATUS_INVALID_ARGUMENT) {
    if (out_error) *out_error = e;
    return st;
  }
  /* limits of the compiled function, a refusal of cuLaunchKernel: the
   * stream's error, surfaced at the next flush / sync / read */
  cubert__cuda_stream_queue_error(&s->s, &e);
  return CUBERT_STATUS_OK;
}

/* ---- streams -------------------------------------------------------------------------------- */

static cubert_status_t drv_stream_create(void *self, uint32_t index,
                                         cubert_driver_stream_t **out_stream,
                                         cubert_error_t *out_error) {
  cuda_drv_t *d = cuda_drv_of(self);
  cuda_drv_stream_t *s = NULL;
  cubert_status_t st;
  if (index >= d->stream_count || d->streams[index])
    return cubert_error_set(out_error, CUBERT_ERROR_OUT_OF_RANGE, NULL, 0, "no such stream");
  if (cubert_allocator_malloc(d->allocator, sizeof *s, 0, (void **)&s, NULL) != CUBERT_STATUS_OK)
    return cubert_error_set(out_error, CUBERT_ERROR_HOST_OUT_OF_MEMORY, NULL, 0, "stream");
  memset(s, 0, sizeof *s);
  if (pthread_mutex_init(&s->outs_mutex, NULL) != 0) {
    cubert_allocator_free(d->allocator, s, sizeof *s, 0);
    return cubert_error_set(out_error, CUBERT_ERROR_HOST_OUT_OF_MEMORY, NULL, 0, "stream mutex");
  }
  st = cubert__cuda_stream_initialize(d->dev, &s->s, out_error);
  if (st != CUBERT_STATUS_OK) {
    (void)pthread_mutex_destroy(&s->outs_mutex);
    cubert_allocator_free(d->allocator, s, sizeof *s, 0);
    return st;
  }
  s->drv = d;
  s->index = index;
  d->streams[index] = s;
  *out_stream = (cubert_driver_stream_t *)(void *)s;
  return CUBERT_STATUS_OK;
}

static void drv_stream_destroy(void *self, cubert_driver_stream_t *stream) {
  cuda_drv_t *d = cuda_drv_of(self);
  cuda_drv_stream_t *s = cuda_drv_stream_of(stream);
  cuda_drv_settle(s); /* (the communicators left first: nothing is lazy any more) */
  /* what is still enqueued runs (a lost device: returns at once) */
  if (cubert__cuda_stream_synchronize(&s->s, NULL) == CUBERT_STATUS_OK)
    cuda_drv_copy_outs(s, s->outs_enqueued);
  cuda_drv_copy_outs_drop(s);
  cuda_reports_free(s);
  cubert__cuda_event_release(d->dev, s->last);
  s->last = NULL;
  cubert__cuda_stream_deinitialize(&s->s);
  (void)pthread_mutex_destroy(&s->outs_mutex);
  d->streams[s->index] = NULL;
  cubert_allocator_free(d->allocator, s, sizeof *s, 0);
}

static cubert_status_t drv_stream_synchronize(void *self, cubert_driver_stream_t *stream,
                                              cubert_error_t *out_error) {
  cuda_drv_stream_t *s = cuda_drv_stream_of(stream);
  cubert_status_t st;
  (void)self;
  cuda_drv_settle(s);
  st = cubert__cuda_stream_synchronize(&s->s, out_error);
  if (st == CUBERT_STATUS_OK) {
    cuda_drv_copy_outs(s, s->outs_enqueued);
    __atomic_store_n(&s->clean_ops, s->ops, __ATOMIC_RELEASE);
  }
  return st;
}

cubert_status_t cuda_drv_stream_errors(void *self, cubert_driver_stream_t *stream,
                                       cubert_error_t *out_error) {
  cuda_drv_t *d = cuda_drv_of(self);
  cuda_drv_stream_t *s = cuda_drv_stream_of(stream);
  if (s->reports.count) cuda_reports_collect(s);
  if (__atomic_load_n(&s->clean_ops, __ATOMIC_ACQUIRE) == s->ops) {
    d->stats.queries_skipped++; /* an event after all of it completed cleanly */
    return cubert__cuda_stream_drain_queued(&s->s, out_error);
  }
  return cubert__cuda_stream_drain_errors(&s->s, out_error);
}

/* ---- events ---------------------------------------------------------------------------------- */

/* Work epochs (cuda_driver.h): process-wide, so that a stream made at a
 * freed one's address never matches its epochs. */
static uint64_t g_work_epoch;

static cubert_status_t drv_event_record(void *self, cubert_driver_stream_t *stream,
                                        cubert_driver_event_t **out_event,
                                        cubert_error_t *out_error) {
  cuda_drv_t *d = cuda_drv_of(self);
  cuda_drv_stream_t *s = cuda_drv_stream_of(stream);
  cubert_cuda_event_t *e = NULL;
  cubert_status_t st;
  cuda_drv_settle(s);
  if (s->last && s->ops == s->rec_ops) {
    /* nothing enqueued since the last record: the same point (cuda_driver.h) */
    CUBERT_RETURN_IF_ERROR(cubert__cuda_device_check(d->dev, out_error));
    cubert__cuda_event_retain(s->last);
    d->stats.records_reused++;
    *out_event = (cubert_driver_event_t *)(void *)s->last;
    return CUBERT_STATUS_OK;
  }
  st = cubert__cuda_event_record(&s->s, false, &e, out_error);
  if (st != CUBERT_STATUS_OK) return st;
  if (s->ops != s->rec_ops || !s->epoch)
    s->epoch = __atomic_add_fetch(&g_work_epoch, 1, __ATOMIC_RELAXED);
  e->owner = s;
  e->seq = s->outs_enqueued; /* the staged reads this event covers */
  e->mark = ++s->ops;        /* and the work */
  e->epoch = s->epoch;
  s->rec_ops = s->ops;
  cubert__cuda_event_retain(e); /* the stream's reference */
  cubert__cuda_event_release(d->dev, s->last);
  s->last = e;
  *out_event = (cubert_driver_event_t *)(void *)e;
  return CUBERT_STATUS_OK;
}

static cubert_status_t drv_event_wait(void *self, cubert_driver_stream_t *stream,
                                      cubert_driver_event_t *event, cubert_error_t *out_error) {
  cuda_drv_stream_t *s = cuda_drv_stream_of(stream);
  cubert_cuda_event_t *e = event_of(event);
  cubert_status_t st;
  (void)self;
  if (e->owner && e->owner == s->waited && e->epoch == s->waited_epoch)
    return CUBERT_STATUS_OK; /* already waits for that point (cuda_driver.h) */
  cuda_drv_settle(s);
  s->ops++;
  st = cubert__cuda_event_wait(&s->s, e, out_error);
  if (st == CUBERT_STATUS_OK && e->owner) {
    s->waited = e->owner;
    s->waited_epoch = e->epoch;
  }
  return st;
}

/* The event completed without an error: the staged reads before it are
 * copied out, and the stream is clean up to its mark. */
static void event_done(cubert_cuda_event_t *e) {
  cuda_drv_stream_t *s = (cuda_drv_stream_t *)e->owner;
  uint64_t seen;
  if (!s) return;
  if (e->seq) cuda_drv_copy_outs(s, e->seq);
  seen = __atomic_load_n(&s->clean_ops, __ATOMIC_RELAXED);
  while (seen < e->mark && !__atomic_compare_exchange_n(&s->clean_ops, &seen, e->mark, true,
                                                        __ATOMIC_RELEASE, __ATOMIC_RELAXED)) {
  }
}

static cubert_status_t drv_event_query(void *self, cubert_driver_event_t *event) {
  cuda_drv_t *d = cuda_drv_of(self);
  bool done = false;
  cubert_status_t st = cubert__cuda_event_query(d->dev, event_of(event), &done, NULL);
  if (st != CUBERT_STATUS_OK) return st;
  if (!done) return CUBERT_STATUS_BUSY;
  event_done(event_of(event));
  return CUBERT_STATUS_OK;
}

/* Spin, then block, as the sync mode says (cuda_sync.c). */
static cubert_status_t drv_event_synchronize(void *self, cubert_driver_event_t *event,
                                             uint64_t timeout_ns, cubert_error_t *out_error) {
  cubert_cuda_event_t *e = event_of(event);
  cubert_status_t st = cuda_sync_wait(cuda_drv_of(self), e, timeout_ns, out_error);
  if (st == CUBERT_STATUS_OK) event_done(e);
  return st;
}

static void drv_event_destroy(void *self, cubert_driver_event_t *event) {
  /* (the pool clears the recorder's notes once the stream let go of it too) */
  cubert__cuda_event_release(cuda_drv_of(self)->dev, event_of(event));
}

/* ---- the device ---------------------------------------------------------------------------- */

static void drv_properties(void *self, cubert_device_properties_t *out) {
  *out = cuda_drv_of(self)->properties;
}

static void drv_destroy(void *self) {
  cuda_drv_t *d = cuda_drv_of(self);
  cuda_comm_device_remove(d);
  cuda_comm_device_gone(d);
  cuda_drv_pinned_free_all(d);
  cuda_workers_destroy(d->workers);
  cubert__cuda_device_close(d->dev);
  (void)pthread_mutex_destroy(&d->pinned_mutex);
  cubert_allocator_free(d->allocator, d->streams, d->stream_count * sizeof(cuda_drv_stream_t *), 0);
  cubert_allocator_free(d->allocator, d, sizeof *d, 0);
}

cubert_status_t cuda_drv_create(cubert_allocator_t allocator, const cubert_cuda_loader_t *cu,
                                uint32_t ordinal, uint32_t max_streams, uint64_t memory_size,
                                uint32_t upload_threads, cuda_drv_t **out_drv,
                                cubert_error_t *out_error) {
  cuda_drv_t *d = NULL;
  cubert_status_t st;
  if (cubert_allocator_malloc(allocator, sizeof *d, 0, (void **)&d, NULL) != CUBERT_STATUS_OK)
    return cubert_error_set(out_error, CUBERT_ERROR_HOST_OUT_OF_MEMORY, NULL, 0, "cuda device");
  memset(d, 0, sizeof *d);
  d->allocator = allocator;
  d->stream_count = max_streams + 2u;
  d->upload_threads = upload_threads;
  if (cubert_allocator_malloc_array(allocator, d->stream_count, sizeof(cuda_drv_stream_t *), 0,
                                    (void **)&d->streams, NULL) != CUBERT_STATUS_OK) {
    cubert_allocator_free(allocator, d, sizeof *d, 0);
    return cubert_error_set(out_error, CUBERT_ERROR_HOST_OUT_OF_MEMORY, NULL, 0, "cuda streams");
  }
  memset(d->streams, 0, d->stream_count * sizeof(cuda_drv_stream_t *));
  if (pthread_mutex_init(&d->pinned_mutex, NULL) != 0) {
    cubert_allocator_free(allocator, d->streams, d->stream_count * sizeof(cuda_drv_stream_t *), 0);
    cubert_allocator_free(allocator, d, sizeof *d, 0);
    return cubert_error_set(out_error, CUBERT_ERROR_HOST_OUT_OF_MEMORY, NULL, 0, "mutex");
  }
  st = cubert__cuda_device_open(cu, ordinal, allocator, &d->dev, out_error);
  if (st != CUBERT_STATUS_OK) {
    (void)pthread_mutex_destroy(&d->pinned_mutex);
    cubert_allocator_free(allocator, d->streams, d->stream_count * sizeof(cuda_drv_stream_t *), 0);
    cubert_allocator_free(allocator, d, sizeof *d, 0);
    return st;
  }
  cubert__cuda_device_properties(d->dev, &d->properties);
  if (memory_size) d->properties.memory.max_page_size = memory_size;
  /* the server's profiling measures host time around stream syncs */
  d->properties.timing_method = CUBERT_TIMING_SYSTEM;
  /* to_client moves data through the collectives: a peer copy (cuda_comm.h) */
  d->properties.features |= CUBERT_FEATURE_COLLECTIVES;
  *out_drv = d;
  return CUBERT_STATUS_OK;
}

/* ---- memory of other libraries (DLPack, docs/interop.md) ----------------------------------- */

static void drv_memory_device(void *self, int32_t *out_device_type, int32_t *out_device_id) {
  cuda_drv_t *d = cuda_drv_of(self);
  *out_device_type = 2; /* kDLCUDA */
  *out_device_id = (int32_t)d->dev->ordinal;
}

/* A CUdeviceptr of this GPU is used as is (the caller says it is this
 * device's: its DLPack device; the driver does not query the pointer). */
static cubert_status_t drv_memory_import(void *self, uint64_t pointer, uint64_t size,
                                         cubert_device_ptr_t *out_address,
                                         cubert_error_t *out_error) {
  (void)self;
  if (pointer == 0 && size != 0)
    return cubert_error_set(out_error, CUBERT_ERROR_INVALID_ARGUMENT, NULL, 0,
                            "a NULL device pointer with a size");
  *out_address = (cubert_device_ptr_t)pointer;
  return CUBERT_STATUS_OK;
}

/* An event recorded on one stream, waited on by the other (pooled events;
 * the other library's CUstream taken as is: CU_STREAM_LEGACY is 1 and
 * CU_STREAM_PER_THREAD 2, DLPack's stream numbers). */
static cubert_status_t drv_stream_order_native(void *self, cubert_driver_stream_t *stream,
                                               uint64_t native, uint32_t direction,
                                               cubert_error_t *out_error) {
  cuda_drv_t *d = cuda_drv_of(self);
  cuda_drv_stream_t *s = cuda_drv_stream_of(stream);
  cubert_cuda_stream_t other;
  cubert_cuda_event_t *e = NULL;
  cubert_status_t st;
  if (native == 0)
    return cubert_error_set(out_error, CUBERT_ERROR_INVALID_ARGUMENT, NULL, 0,
                            "native stream 0 is ambiguous (DLPack: use 1 for the legacy default stream)");
  memset(&other, 0, sizeof other);
  other.device = d->dev;
  other.handle = (CUstream)(uintptr_t)native;
  cuda_drv_settle(s);
  if (direction == CUBERT_NATIVE_WAITS) {
    st = cubert__cuda_event_record(&s->s, false, &e, out_error);
    if (st == CUBERT_STATUS_OK) st = cubert__cuda_event_wait(&other, e, out_error);
  } else {
    st = cubert__cuda_event_record(&other, false, &e, out_error);
    if (st == CUBERT_STATUS_OK) {
      s->ops++;
      st = cubert__cuda_event_wait(&s->s, e, out_error);
    }
  }
  cubert__cuda_event_release(d->dev, e);
  return st;
}

const cubert_driver_t cuda_driver = {
    .name = "cuda",
    .abi_version = CUBERT_DRIVER_ABI_VERSION,
    /* uploads read their source before copy() returns (cuda_transfer.c) */
    .flags = CUBERT_DRIVER_BORROWS_UPLOADS,
    .destroy = drv_destroy,
    .properties = drv_properties,
    .memory_alloc = drv_memory_alloc,
    .memory_free = drv_memory_free,
    .host_alloc = cuda_drv_host_alloc,
    .host_free = cuda_drv_host_free,
    .copy = cuda_drv_copy,
    .launch = drv_launch,
    .stream_create = drv_stream_create,
    .stream_destroy = drv_stream_destroy,
    .stream_synchronize = drv_stream_synchronize,
    .stream_errors = cuda_comm_stream_errors,
    .event_record = drv_event_record,
    .event_wait = drv_event_wait,
    .event_query = drv_event_query,
    .event_synchronize = drv_event_synchronize,
    .event_destroy = drv_event_destroy,
    /* collectives: NCCL and peer copies (cuda_comm.h, docs/collectives.md) */
    .comm_create = cuda_comm_create,
    .comm_query = cuda_comm_query,
    .comm_destroy = cuda_comm_destroy,
    .collective = cuda_comm_collective,
    /* recorded sequences: CUDA graphs (cuda_plan.c, docs/recording.md) */
    .plan_create = cuda_drv_plan_create,
    .plan_update = cuda_drv_plan_update,
    .plan_launch = cuda_drv_plan_launch,
    .plan_destroy = cuda_drv_plan_destroy,
    /* DLPack: CUdeviceptrs as is, ordering against another library's CUstream */
    .memory_device = drv_memory_device,
    .memory_import = drv_memory_import,
    .stream_order_native = drv_stream_order_native,
};
