/* SPDX-License-Identifier: MIT */
/*
 * backend-cuda/driver/cuda_client.c: the CUDA device's public functions
 * (cubert/cuda.h): cubert_cuda_client_create, a CUDA driver (cuda_driver.c)
 * under the server with the OS layer's hooks (a recursive device
 * lock, the monotonic clock, per-thread stream ids: cubert/os.h), and the
 * device's counters and JIT logs.
 *
 * The primary context of each GPU is retained once more by the first
 * device made on it and kept for the process's life (as the CUDA runtime
 * does): without that, releasing the last client would destroy the context
 * and the next client would pay for a new one (100 ms and more on an H100).
 * A context lost to a poisoning error stays lost for the process.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cubert/driver/server.h"
#include "stream/stream.h"
#include "cubert/os.h"
#include "os/os_thread.h"
#include "comm/cuda_comm.h"
#include "driver/cuda_driver.h"

/* ---- options ---------------------------------------------------------------------------- */

static cubert_profile_level_t profile_level_from_env(void) {
  const char *v = getenv("CUBERT_PROFILE_LEVEL");
  int l;
  if (!v) return CUBERT_PROFILE_LEVEL_OFF;
  for (l = CUBERT_PROFILE_LEVEL_OFF; l <= CUBERT_PROFILE_LEVEL_FULL; l++)
    if (strcmp(v, cubert_profile_level_name((cubert_profile_level_t)l)) == 0)
      return (cubert_profile_level_t)l;
  return CUBERT_PROFILE_LEVEL_OFF;
}

void cubert_cuda_options_initialize(cubert_cuda_options_t *options) {
  if (!options) return;
  memset(options, 0, sizeof *options);
  options->device.max_streams = CUBERT_SERVER_DEFAULT_MAX_STREAMS;
  options->device.bounds_check = CUBERT_BOUNDS_CHECK_AUTO;
  options->profile_level = profile_level_from_env();
  options->sync_mode = CUBERT_CUDA_SYNC_AUTO;
  options->sync_spin_us = CUBERT_CUDA_SYNC_SPIN_US_DEFAULT;
  options->schedule = CUBERT_CUDA_SCHEDULE_DEFAULT;
  options->upload_copy = CUBERT_CUDA_UPLOAD_COPY_AUTO;
}

/* Every online CPU, at most 16: a copy thread fills pinned memory at a
 * sixth of what the DMA engine takes from it (docs/cuda.md, "Uploads"). */
static uint32_t default_upload_threads(void) {
  long cpus = sysconf(_SC_NPROCESSORS_ONLN);
  if (cpus < 1) cpus = 1;
  if (cpus > 16) cpus = 16;
  return (uint32_t)cpus;
}

static cubert_status_t check_options(cubert_cuda_options_t *o, const cubert_cuda_options_t *given,
                                     cubert_error_t *out_error) {
  cubert_cuda_options_initialize(o);
  if (given) *o = *given;
  if (!o->device.max_streams) o->device.max_streams = CUBERT_SERVER_DEFAULT_MAX_STREAMS;
  if (o->device.max_streams > CUBERT_STREAM_MAX_STREAMS_LIMIT) {
    uint64_t f[2];
    f[0] = o->device.max_streams;
    f[1] = CUBERT_STREAM_MAX_STREAMS_LIMIT;
    return cubert_error_set(out_error, CUBERT_ERROR_INVALID_ARGUMENT, f, 2,
                            "max_streams above the limit");
  }
  if (!cubert_profile_level_is_valid(o->profile_level))
    return cubert_error_set(out_error, CUBERT_ERROR_INVALID_ARGUMENT, NULL, 0,
                            "unknown profile level");
  if ((unsigned)o->sync_mode > (unsigned)CUBERT_CUDA_SYNC_BLOCKING)
    return cubert_error_set(out_error, CUBERT_ERROR_INVALID_ARGUMENT, NULL, 0, "unknown sync mode");
  if ((unsigned)o->schedule > (unsigned)CUBERT_CUDA_SCHEDULE_BLOCKING)
    return cubert_error_set(out_error, CUBERT_ERROR_INVALID_ARGUMENT, NULL, 0, "unknown schedule");
  if ((unsigned)o->upload_copy > (unsigned)CUBERT_CUDA_UPLOAD_COPY_STREAMING)
    return cubert_error_set(out_error, CUBERT_ERROR_INVALID_ARGUMENT, NULL, 0,
                            "unknown upload copy");
  if (!o->upload_threads) o->upload_threads = default_upload_threads();
  if (!o->sync_spin_us) o->sync_spin_us = CUBERT_CUDA_SYNC_SPIN_US_DEFAULT;
  return CUBERT_STATUS_OK;
}

/* Non-temporal stores where this build has them (cuda_workers.c). */
static uint32_t upload_streaming(cubert_cuda_upload_copy_t c) {
  if (c == CUBERT_CUDA_UPLOAD_COPY_CACHED || !cuda_workers_streaming_available()) return 0;
  return 1;
}

/* ---- the kept primary contexts ------------------------------------------------------------ */

#define KEPT_MAX 64
static pthread_mutex_t g_kept_mutex = PTHREAD_MUTEX_INITIALIZER;
static unsigned char g_kept[KEPT_MAX];

/* One more retain of GPU `ordinal`'s primary context, once per process.
 * Best effort: a failure here only costs the context's re-creation later. */
static void keep_primary_context(const cubert_cuda_loader_t *cu, uint32_t ordinal) {
  CUdevice dev = 0;
  CUcontext ctx = NULL;
  if (ordinal >= KEPT_MAX) return;
  (void)pthread_mutex_lock(&g_kept_mutex);
  if (!g_kept[ordinal] && cu->cuDeviceGet(&dev, (int)ordinal) == CUDA_SUCCESS &&
      cu->cuDevicePrimaryCtxRetain(&ctx, dev) == CUDA_SUCCESS)
    g_kept[ordinal] = 1;
  (void)pthread_mutex_unlock(&g_kept_mutex);
}

/* ---- the device lock ------------------------------------------------------------------------- */

typedef struct cuda_host_t {
  cubert_lock_t lock;
  cubert_allocator_t allocator;
} cuda_host_t;

static void host_release(void *self) {
  cuda_host_t *h = (cuda_host_t *)self;
  cubert_allocator_t a = h->allocator;
  cubert_os_lock_destroy(h->lock);
  cubert_allocator_free(a, h, sizeof *h, 0);
}

static cubert_status_t os_make(cubert_allocator_t allocator, cuda_host_t **out) {
  cuda_host_t *h = NULL;
  if (cubert_allocator_malloc(allocator, sizeof *h, 0, (void **)&h, NULL) != CUBERT_STATUS_OK)
    return CUBERT_STATUS_RESOURCE_EXHAUSTED;
  memset(h, 0, sizeof *h);
  h->allocator = allocator;
  if (cubert_os_lock_create(allocator, &h->lock, NULL) != CUBERT_STATUS_OK) {
    cubert_allocator_free(allocator, h, sizeof *h, 0);
    return CUBERT_STATUS_RESOURCE_EXHAUSTED;
  }
  *out = h;
  return CUBERT_STATUS_OK;
}

/* ---- creation -------------------------------------------------------------------------------- */

static void server_options(const cubert_cuda_options_t *o, cuda_host_t *h, cubert_server_options_t *k) {
  cubert_server_options_initialize(k);
  cubert_server_options_from_device(k, CUBERT_CUDA_DEVICE_TYPE, &o->device);
  k->layout_policy.kind = CUBERT_LAYOUT_POLICY_PITCHED;
  k->layout_policy.mem_alignment = CUBERT_CUDA_MEMORY_ALIGNMENT;
  k->lock = h->lock;
  /* cuLaunchKernel on different streams from different threads: the
   * driver's launch path shares only the module cache (its mutex) and the
   * device's lost state (atomic) */
  k->concurrent_launch = 1;
  k->yield = cubert__os_thread_yield;
  k->clock = cubert_os_clock();
  k->stream_source = cubert_os_stream_source;
  k->host_release = host_release;
  k->host_release_self = h;
}

cubert_status_t cubert_cuda_client_create(cubert_allocator_t allocator,
                                          const cubert_cuda_options_t *options,
                                          cubert_client_t **out_client,
                                          cubert_error_t *out_error) {
  const cubert_cuda_loader_t *cu = NULL;
  cubert_cuda_options_t o;
  cubert_server_options_t k;
  cuda_host_t *h = NULL;
  cuda_drv_t *d = NULL;
  uint32_t flags = 0;
  cubert_status_t st;
  if (!out_client)
    return cubert_error_set(out_error, CUBERT_ERROR_INVALID_ARGUMENT, NULL, 0, "NULL out_client");
  CUBERT_RETURN_IF_ERROR(check_options(&o, options, out_error));
  CUBERT_RETURN_IF_ERROR(cubert__cuda_loader_shared(&cu, out_error));
  if (o.ordinal >= (uint32_t)cu->device_count) {
    uint64_t f[2];
    f[0] = o.ordinal;
    f[1] = (uint64_t)cu->device_count;
    return cubert_error_set(out_error, CUBERT_ERROR_OUT_OF_RANGE, f, 2,
                            "CUDA device ordinal past the device count");
  }
  /* the scheduling first: before the context is made, where it is not yet */
  CUBERT_RETURN_IF_ERROR(cuda_sync_schedule(cu, o.ordinal, o.schedule, &flags, out_error));
  keep_primary_context(cu, o.ordinal);
  if (os_make(allocator, &h) != CUBERT_STATUS_OK)
    return cubert_error_set(out_error, CUBERT_ERROR_HOST_OUT_OF_MEMORY, NULL, 0, "device lock");
  st = cuda_drv_create(allocator, cu, o.ordinal, o.device.max_streams, o.device.memory_size, o.upload_threads,
                       &d, out_error);
  if (st != CUBERT_STATUS_OK) {
    host_release(h);
    return st;
  }
  d->sync_mode = (uint32_t)o.sync_mode;
  d->sync_spin_ns = (uint64_t)o.sync_spin_us * 1000u;
  d->upload_streaming = upload_streaming(o.upload_copy);
  d->context_flags = flags;
  d->comm_timeout_ns = (uint64_t)o.collective_timeout_ms * 1000000ull;
  server_options(&o, h, &k);
  st = cubert_server_client_create(allocator, &k, &cuda_driver, d, out_client, out_error);
  if (st != CUBERT_STATUS_OK) {
    host_release(h);
    cuda_driver.destroy(d);
    return st;
  }
  cuda_comm_device_add(d, o.device.index, o.ordinal, d->dev->context);
  if (o.profile_level == CUBERT_PROFILE_LEVEL_OFF) return CUBERT_STATUS_OK;
  st = cubert_client_set_profiling(*out_client, o.profile_level, cubert_log_sink_stderr, NULL,
                                   out_error);
  if (st == CUBERT_STATUS_OK) return CUBERT_STATUS_OK;
  cubert_client_release(*out_client); /* destroys the server, the driver and the lock */
  *out_client = NULL;
  return st;
}

/* ---- counters and logs ------------------------------------------------------------------------ */

static cubert_status_t drv_of(cubert_client_t *client, cuda_drv_t **out) {
  const cubert_driver_t *driver = NULL;
  void *self = NULL;
  if (!client) return CUBERT_STATUS_INVALID_ARGUMENT;
  CUBERT_RETURN_IF_ERROR(cubert_server_driver_of(client, &driver, &self));
  if (driver != &cuda_driver) return CUBERT_STATUS_NOT_FOUND;
  *out = (cuda_drv_t *)self;
  return CUBERT_STATUS_OK;
}

/* Read under the device (an exclusive section holds it). */
typedef struct stats_task_t {
  cuda_drv_t *drv;
  cubert_cuda_client_stats_t *stats;
  char *error_log, *info_log;
  size_t size;
} stats_task_t;

static cubert_status_t stats_run(void *user, cubert_error_t *out_error) {
  stats_task_t *t = (stats_task_t *)user;
  cuda_drv_t *d = t->drv;
  (void)out_error;
  if (t->stats) {
    cubert_cuda_staging_stats_t ss;
    uint64_t created = 0;
    memset(t->stats, 0, sizeof *t->stats);
    t->stats->copies_direct = d->stats.copies_direct;
    t->stats->copies_pinned = d->stats.copies_pinned;
    t->stats->uploads_staged = d->stats.uploads_staged;
    t->stats->reads_staged = d->stats.reads_staged;
    t->stats->reads_pieced = d->stats.reads_pieced;
    t->stats->copy_outs = __atomic_load_n(&d->stats.copy_outs, __ATOMIC_RELAXED);
    t->stats->alloc_retries = d->stats.alloc_retries;
    t->stats->dynamic_reads = d->stats.dynamic_reads;
    t->stats->reports_read = d->stats.reports_read;
    cubert__cuda_staging_stats(d->dev, &ss);
    t->stats->pinned_bytes = ss.bytes_pinned;
    cubert__cuda_event_pool_counts(d->dev, &created, NULL, NULL);
    t->stats->events_created = created;
    t->stats->module_loads = d->dev->modules.loads;
    t->stats->upload_threads = d->upload_threads;
    t->stats->upload_streaming = d->upload_streaming;
    t->stats->uploads_borrowed = d->stats.uploads_borrowed;
    t->stats->sync_spins = __atomic_load_n(&d->stats.sync_spins, __ATOMIC_RELAXED);
    t->stats->sync_blocks = __atomic_load_n(&d->stats.sync_blocks, __ATOMIC_RELAXED);
    t->stats->stream_queries_skipped = d->stats.queries_skipped;
    t->stats->context_flags = d->context_flags;
  }
  if (t->error_log) cubert__cuda_format(t->error_log, t->size, "%s", cubert__cuda_module_error_log(d->dev));
  if (t->info_log) cubert__cuda_format(t->info_log, t->size, "%s", cubert__cuda_module_info_log(d->dev));
  return CUBERT_STATUS_OK;
}

cubert_status_t cubert_cuda_client_stats(cubert_client_t *client,
                                         cubert_cuda_client_stats_t *out_stats) {
  stats_task_t t;
  if (!out_stats) return CUBERT_STATUS_INVALID_ARGUMENT;
  memset(&t, 0, sizeof t);
  CUBERT_RETURN_IF_ERROR(drv_of(client, &t.drv));
  t.stats = out_stats;
  return cubert_client_exclusive(client, stats_run, &t, NULL);
}

cubert_status_t cubert_cuda_client_jit_log(cubert_client_t *client, char *out_error_log,
                                           char *out_info_log, size_t size) {
  stats_task_t t;
  if ((!out_error_log && !out_info_log) || size == 0) return CUBERT_STATUS_INVALID_ARGUMENT;
  memset(&t, 0, sizeof t);
  CUBERT_RETURN_IF_ERROR(drv_of(client, &t.drv));
  t.error_log = out_error_log;
  t.info_log = out_info_log;
  t.size = size;
  return cubert_client_exclusive(client, stats_run, &t, NULL);
}
