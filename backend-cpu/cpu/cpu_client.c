/* backend-cpu/cpu/cpu_client.c: cubert_cpu_client_create: a CPU server behind a
 * direct device handle (a recursive lock), per-thread stream ids. */
#include "cpu/cpu_server.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cubert/host.h"


/* The device's recursive lock: a plain mutex plus the owning thread and a
 * depth (a re-entry is a compare, not a second lock). Every launch takes it,
 * and glibc's recursive mutex cost about twice as many instructions. */
typedef struct cpu_lock_t {
  pthread_mutex_t mutex;
  uintptr_t owner; /* atomic: the owning thread's token, 0 when free */
  uint32_t depth;  /* owner only */
  cubert_allocator_t allocator;
} cpu_lock_t;

/* A thread's token: the address of its thread-local byte (never 0). A
 * thread reads `owner` racing only with other threads' stores of their own
 * tokens or 0, so it sees its own token exactly when it holds the lock. */
static __thread char t_lock_token;

static void lock_fn(void *self) {
  cpu_lock_t *l = (cpu_lock_t *)self;
  uintptr_t me = (uintptr_t)&t_lock_token;
  if (__atomic_load_n(&l->owner, __ATOMIC_RELAXED) == me) {
    l->depth++;
    return;
  }
  pthread_mutex_lock(&l->mutex);
  __atomic_store_n(&l->owner, me, __ATOMIC_RELAXED);
  l->depth = 1;
}

static void unlock_fn(void *self) {
  cpu_lock_t *l = (cpu_lock_t *)self;
  if (--l->depth) return;
  __atomic_store_n(&l->owner, (uintptr_t)0, __ATOMIC_RELAXED);
  pthread_mutex_unlock(&l->mutex);
}

static uint64_t stream_source(void *self) {
  (void)self;
  return cubert_stream_id_current().value;
}

/* CUBERT_PROFILE_LEVEL: a cubert_profile_level_name, else off. */
static cubert_profile_level_t profile_level_from_env(void) {
  const char *v = getenv("CUBERT_PROFILE_LEVEL");
  int l;
  if (!v) return CUBERT_PROFILE_LEVEL_OFF;
  for (l = CUBERT_PROFILE_LEVEL_OFF; l <= CUBERT_PROFILE_LEVEL_FULL; l++)
    if (strcmp(v, cubert_profile_level_name((cubert_profile_level_t)l)) == 0)
      return (cubert_profile_level_t)l;
  return CUBERT_PROFILE_LEVEL_OFF;
}

void cubert_cpu_options_initialize(cubert_cpu_options_t *options) {
  if (!options) return;
  memset(options, 0, sizeof(*options));
  options->max_streams = 16;
  options->memory_size = 1ull << 30;
  options->bounds_check = CUBERT_BOUNDS_CHECK_AUTO;
  options->profile_level = profile_level_from_env();
}

void cpu_fill_properties(const cubert_cpu_options_t *o, cubert_device_properties_t *p) {
  long cpus = sysconf(_SC_NPROCESSORS_ONLN);
  uint32_t cores = cpus > 0 ? (uint32_t)cpus : 1u;
  memset(p, 0, sizeof(*p));
  strcpy(p->name, "cubert cpu");
  p->features = CUBERT_FEATURE_DYNAMIC_CUBE_COUNT | CUBERT_FEATURE_SHARED_MEMORY |
                CUBERT_FEATURE_CHECKED_EXECUTION | CUBERT_FEATURE_UNALIGNED_IO |
                CUBERT_FEATURE_STAGING;
  p->hardware.load_width = 512;
  p->hardware.plane_size_min = 1;
  p->hardware.plane_size_max = 1;
  p->hardware.max_bindings = CPU_MAX_BINDINGS;
  p->hardware.max_shared_memory_size = 64 * 1024;
  /* the same limits as CUDA so tests stay portable (reliability.md #28) */
  p->hardware.max_cube_count.x = 0x7FFFFFFFu;
  p->hardware.max_cube_count.y = 65535;
  p->hardware.max_cube_count.z = 65535;
  p->hardware.max_units_per_cube = 1024;
  p->hardware.max_cube_dim.x = 1024;
  p->hardware.max_cube_dim.y = 1024;
  p->hardware.max_cube_dim.z = 64;
  p->hardware.num_cpu_cores = cores;
  p->hardware.max_vector_size = UINT64_MAX;
  p->memory.max_page_size = o->memory_size;
  p->memory.alignment = 8;
  p->timing_method = CUBERT_TIMING_SYSTEM;
}

static void lock_destroy_on_release(cpu_lock_t *lock) {
  pthread_mutex_destroy(&lock->mutex);
  cubert_allocator_free(lock->allocator, lock, sizeof(*lock), 0);
}

/* The device handle owns the lock: wrap its destroy. */
typedef struct owned_handle_t {
  cubert_device_handle_t inner;
  cpu_lock_t *lock;
  cubert_allocator_t allocator;
} owned_handle_t;

static cubert_status_t oh_submit(void *self, cubert_device_task_fn_t fn, const void *p, size_t n) {
  owned_handle_t *h = (owned_handle_t *)self;
  return h->inner.vtable->submit(h->inner.self, fn, p, n);
}
static cubert_status_t oh_submit_blocking(void *self, cubert_device_task_fn_t fn, void *p) {
  owned_handle_t *h = (owned_handle_t *)self;
  return h->inner.vtable->submit_blocking(h->inner.self, fn, p);
}
static cubert_status_t oh_exclusive(void *self, cubert_device_exclusive_fn_t fn, void *user) {
  owned_handle_t *h = (owned_handle_t *)self;
  return h->inner.vtable->exclusive(h->inner.self, fn, user);
}
static cubert_status_t oh_flush_queue(void *self) {
  owned_handle_t *h = (owned_handle_t *)self;
  return h->inner.vtable->flush_queue(h->inner.self);
}
static bool oh_is_blocking(const void *self) {
  const owned_handle_t *h = (const owned_handle_t *)self;
  return h->inner.vtable->is_blocking(h->inner.self);
}
static void oh_destroy(void *self) {
  owned_handle_t *h = (owned_handle_t *)self;
  h->inner.vtable->destroy(h->inner.self);
  lock_destroy_on_release(h->lock);
  cubert_allocator_free(h->allocator, h, sizeof(*h), 0);
}
static const cubert_device_handle_vtable_t g_owned_vtable = {
    oh_submit, oh_submit_blocking, oh_exclusive, oh_flush_queue, oh_is_blocking, oh_destroy,
};

cubert_status_t cubert_cpu_client_create(cubert_allocator_t allocator,
                                         const cubert_cpu_options_t *options,
                                         cubert_client_t **out_client, cubert_error_t *out_error) {
  cubert_cpu_options_t o;
  cpu_server_t *server = NULL;
  cpu_lock_t *lock = NULL;
  owned_handle_t *owned = NULL;
  cubert_handle_table_t *table = NULL;
  cubert_lock_t l;
  cubert_client_config_t config;
  cubert_device_handle_t handle;
  cubert_status_t status;
  long cpus;
  if (!out_client)
    return cubert_error_set(out_error, CUBERT_ERROR_INVALID_ARGUMENT, NULL, 0, "NULL out_client");
  cubert_cpu_options_initialize(&o);
  if (options) {
    o = *options;
    if (!o.max_streams) o.max_streams = 16;
    if (!o.memory_size) o.memory_size = 1ull << 30;
  }
  if (o.max_streams > CUBERT_STREAM_MAX_STREAMS_LIMIT) {
    uint64_t f[2];
    f[0] = o.max_streams;
    f[1] = CUBERT_STREAM_MAX_STREAMS_LIMIT;
    return cubert_error_set(out_error, CUBERT_ERROR_INVALID_ARGUMENT, f, 2,
                            "max_streams above the limit");
  }
  if (o.mode != CUBERT_CPU_MODE_THREADED && o.mode != CUBERT_CPU_MODE_DETERMINISTIC)
    return cubert_error_set(out_error, CUBERT_ERROR_INVALID_ARGUMENT, NULL, 0, "unknown mode");
  if ((!o.replay && o.replay_count) || (!o.choice_bytes && o.choice_bytes_count) ||
      ((o.replay || o.replay_count) && (o.choice_bytes || o.choice_bytes_count)))
    return cubert_error_set(out_error, CUBERT_ERROR_INVALID_ARGUMENT, NULL, 0,
                            "bad replay log or choice bytes");
  if (o.mode != CUBERT_CPU_MODE_DETERMINISTIC &&
      (o.replay || o.replay_count || o.choice_bytes || o.choice_bytes_count))
    return cubert_error_set(out_error, CUBERT_ERROR_INVALID_ARGUMENT, NULL, 0,
                            "replay and choice bytes need the deterministic mode");
  cpus = sysconf(_SC_NPROCESSORS_ONLN);
  if (!o.workers) o.workers = cpus > 1 ? (uint32_t)(cpus - 1) : 1u;
  status = cubert_handle_table_create(allocator, o.max_handles ? o.max_handles : (1u << 20),
                                      (uint8_t)(o.device_index & 0xFFu), &table);
  if (status != CUBERT_STATUS_OK)
    return cubert_error_set(out_error, status == CUBERT_STATUS_RESOURCE_EXHAUSTED
                                           ? CUBERT_ERROR_HOST_OUT_OF_MEMORY
                                           : CUBERT_ERROR_INVALID_ARGUMENT,
                            NULL, 0, "handle table");
  status = cpu_server_create(allocator, &o, table, &server, out_error);
  if (status != CUBERT_STATUS_OK) goto fail;
  status = cubert_allocator_malloc(allocator, sizeof(*lock), 0, (void **)&lock);
  if (status != CUBERT_STATUS_OK) goto fail_oom;
  lock->allocator = allocator;
  pthread_mutex_init(&lock->mutex, NULL);
  lock->owner = 0;
  lock->depth = 0;
  status = cubert_allocator_malloc(allocator, sizeof(*owned), 0, (void **)&owned);
  if (status != CUBERT_STATUS_OK) goto fail_oom;
  l.self = lock;
  l.lock = lock_fn;
  l.unlock = unlock_fn;
  status = cubert_device_handle_direct_create(allocator, server, l, &owned->inner);
  if (status != CUBERT_STATUS_OK) goto fail_oom;
  owned->lock = lock;
  owned->allocator = allocator;
  handle.vtable = &g_owned_vtable;
  handle.self = owned;
  memset(&config, 0, sizeof config);
  config.device.type_id = CUBERT_CPU_DEVICE_TYPE;
  config.device.index_id = o.device_index;
  config.layout_policy.kind = CUBERT_LAYOUT_POLICY_CONTIGUOUS;
  config.layout_policy.mem_alignment = 8;
  config.table = table;
  config.stream_source = stream_source;
  config.stream_source_self = NULL;
  config.bounds_check = o.bounds_check;
  status = cubert_client_init(allocator, &config, &server->base, handle, out_client, out_error);
  if (status == CUBERT_STATUS_OK) {
    if (o.profile_level == CUBERT_PROFILE_LEVEL_OFF) return CUBERT_STATUS_OK;
    status = cubert_client_set_profiling(*out_client, o.profile_level, cubert_log_sink_stderr,
                                         NULL, out_error);
    if (status == CUBERT_STATUS_OK) return CUBERT_STATUS_OK;
    cubert_client_release(*out_client); /* destroys server, handle and table */
    *out_client = NULL;
    return status;
  }
  handle.vtable->destroy(handle.self); /* frees owned + lock */
  owned = NULL;
  lock = NULL;
  goto fail;
fail_oom:
  status = cubert_error_set(out_error, CUBERT_ERROR_HOST_OUT_OF_MEMORY, NULL, 0, "cpu device");
fail:
  if (owned) cubert_allocator_free(allocator, owned, sizeof(*owned), 0);
  if (lock) lock_destroy_on_release(lock);
  if (server) server->base.vtable->destroy(&server->base);
  cubert_handle_table_destroy(table);
  return status;
}
