/* SPDX-License-Identifier: MIT */
/* backend-cpu/cpu/cpu_client.c: the CPU device's public functions
 * (cubert/cpu.h): cubert_cpu_client_create, a CPU driver (cpu_driver.c)
 * under the server with the OS layer's hooks (a recursive device
 * lock, the monotonic clock, per-thread stream ids: cubert/os.h), and the
 * simulation and race-checker controls of a CPU device. */
#if defined(__linux__) && !defined(_GNU_SOURCE)
#define _GNU_SOURCE /* sched_getaffinity, CPU_COUNT: cpu_usable_cpus */
#endif
#include "cpu/cpu_driver.h"

#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "server/server_faults.h"
#include "cubert/driver/server.h"
#include "stream/stream.h"
#include "cubert/os.h"
#include "os/os_obs.h"
#include "os/os_thread.h"

void cubert_cpu_options_initialize(cubert_cpu_options_t *options) {
  if (!options) return;
  memset(options, 0, sizeof(*options));
  options->device.max_streams = 16;
  options->device.memory_size = 1ull << 30;
  options->device.bounds_check = CUBERT_BOUNDS_CHECK_AUTO;
}

void cpu_fill_properties(const cubert_cpu_options_t *o, cubert_device_properties_t *p) {
  long cpus = sysconf(_SC_NPROCESSORS_ONLN);
  uint32_t cores = cpus > 0 ? (uint32_t)cpus : 1u;
  memset(p, 0, sizeof(*p));
  strcpy(p->name, "cubert cpu");
  p->features = CUBERT_FEATURE_DYNAMIC_CUBE_COUNT | CUBERT_FEATURE_SHARED_MEMORY |
                CUBERT_FEATURE_CHECKED_EXECUTION | CUBERT_FEATURE_UNALIGNED_IO |
                CUBERT_FEATURE_STAGING | CUBERT_FEATURE_PLANE;
  p->hardware.load_width = 512;
  p->hardware.plane_size_min = o->plane_dim ? o->plane_dim : CPU_KERNEL_PLANE_DIM;
  p->hardware.plane_size_max = p->hardware.plane_size_min;
  p->hardware.max_bindings = CUBERT_KERNEL_MAX_BUFFERS + 1;
  p->hardware.max_shared_memory_size = 64 * 1024;
  /* the same limits as CUDA so tests stay portable (docs/cuda.md: the CUDA limits) */
  p->hardware.max_cube_count.x = 0x7FFFFFFFu;
  p->hardware.max_cube_count.y = 65535;
  p->hardware.max_cube_count.z = 65535;
  p->hardware.max_units_per_cube = 1024;
  p->hardware.max_cube_dim.x = 1024;
  p->hardware.max_cube_dim.y = 1024;
  p->hardware.max_cube_dim.z = 64;
  p->hardware.num_cpu_cores = cores;
  p->hardware.max_vector_size = UINT64_MAX;
  p->memory.max_page_size = o->device.memory_size;
  p->memory.alignment = 16; /* a 16-byte line (cubert/kernel_line.h) of any buffer is aligned */
  p->timing_method = CUBERT_TIMING_SYSTEM;
}

cubert_status_t cpu_device_of(cubert_client_t *client, cpu_device_t **out_device) {
  const cubert_driver_t *driver = NULL;
  void *self = NULL;
  if (!client) return CUBERT_STATUS_INVALID_ARGUMENT;
  CUBERT_RETURN_IF_ERROR(cubert_server_driver_of(client, &driver, &self));
  if (driver != &cpu_driver) return CUBERT_STATUS_NOT_FOUND;
  *out_device = (cpu_device_t *)self;
  return CUBERT_STATUS_OK;
}

/* ---- options ---- */

uint32_t cpu_usable_cpus(void) {
  long cpus;
#if defined(__linux__) && defined(CPU_COUNT)
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof set, &set) == 0 && CPU_COUNT(&set) > 0)
    return (uint32_t)CPU_COUNT(&set);
#endif
  cpus = sysconf(_SC_NPROCESSORS_ONLN);
  return cpus > 0 ? (uint32_t)cpus : 1u;
}

uint32_t cpu_stream_helpers_default(uint32_t usable_cpus) {
  return usable_cpus >= CPU_STREAM_HELPERS_AUTO_CPUS ? 1u : CUBERT_CPU_STREAM_HELPERS_NONE;
}

/* The environment fills the fields left at their defaults (cubert/cpu.h,
 * docs/configuration.md); every variable is checked. */
static cubert_status_t apply_environment(cubert_cpu_options_t *o, cubert_os_config_t *c,
                                         cubert_error_t *out_error) {
  CUBERT_RETURN_IF_ERROR(cubert__os_config_read(c, out_error));
  if (o->profile_level == CUBERT_PROFILE_LEVEL_OFF && (c->set & HOST_CONFIG_PROFILE_LEVEL))
    o->profile_level = c->profile_level;
  if (!o->profile_summary && (c->set & HOST_CONFIG_PROFILE_SUMMARY))
    o->profile_summary = c->profile_summary;
  if (!o->workers && (c->set & HOST_CONFIG_CPU_WORKERS)) o->workers = c->cpu_workers;
  if (o->mode == CUBERT_CPU_MODE_THREADED && (c->set & HOST_CONFIG_CPU_MODE)) o->mode = c->cpu_mode;
  if (!o->seed && (c->set & HOST_CONFIG_CPU_SEED)) o->seed = c->cpu_seed;
  if (!o->plane_dim && (c->set & HOST_CONFIG_CPU_PLANE_DIM)) o->plane_dim = c->cpu_plane_dim;
  if (!o->stream_helpers && (c->set & HOST_CONFIG_CPU_STREAM_HELPERS))
    o->stream_helpers = c->cpu_stream_helpers ? c->cpu_stream_helpers : CUBERT_CPU_STREAM_HELPERS_NONE;
  if (o->memory_config.kind == CUBERT_MEMORY_CONFIGURATION_SUB_SLICES && !o->memory_config.pools &&
      !o->memory_config.pool_count && (c->set & HOST_CONFIG_MEMORY))
    o->memory_config.kind = c->memory;
  return CUBERT_STATUS_OK;
}

static cubert_status_t check_options(cubert_cpu_options_t *o, const cubert_cpu_options_t *given,
                                     cubert_os_config_t *config, cubert_error_t *out_error) {
  long cpus = sysconf(_SC_NPROCESSORS_ONLN);
  cubert_cpu_options_initialize(o);
  memset(config, 0, sizeof(*config));
  if (given) {
    *o = *given;
    if (!o->device.max_streams) o->device.max_streams = 16;
    if (!o->device.memory_size) o->device.memory_size = 1ull << 30;
  }
  if (!o->ignore_environment) CUBERT_RETURN_IF_ERROR(apply_environment(o, config, out_error));
  if (o->device.max_streams > CUBERT_STREAM_MAX_STREAMS_LIMIT) {
    uint64_t f[2];
    f[0] = o->device.max_streams;
    f[1] = CUBERT_STREAM_MAX_STREAMS_LIMIT;
    return cubert_error_set(out_error, CUBERT_ERROR_INVALID_ARGUMENT, f, 2,
                            "max_streams above the limit");
  }
  if (o->mode != CUBERT_CPU_MODE_THREADED && o->mode != CUBERT_CPU_MODE_DETERMINISTIC)
    return cubert_error_set(out_error, CUBERT_ERROR_INVALID_ARGUMENT, NULL, 0, "unknown mode");
  if ((!o->replay && o->replay_count) || (!o->choice_bytes && o->choice_bytes_count) ||
      ((o->replay || o->replay_count) && (o->choice_bytes || o->choice_bytes_count)))
    return cubert_error_set(out_error, CUBERT_ERROR_INVALID_ARGUMENT, NULL, 0,
                            "bad replay log or choice bytes");
  if (o->mode != CUBERT_CPU_MODE_DETERMINISTIC &&
      (o->replay || o->replay_count || o->choice_bytes || o->choice_bytes_count))
    return cubert_error_set(out_error, CUBERT_ERROR_INVALID_ARGUMENT, NULL, 0,
                            "replay and choice bytes need the deterministic mode");
  if (!cubert_profile_level_is_valid(o->profile_level))
    return cubert_error_set(out_error, CUBERT_ERROR_INVALID_ARGUMENT, NULL, 0,
                            "unknown profile level");
  if (!o->plane_dim) o->plane_dim = CPU_KERNEL_PLANE_DIM;
  if (!CPU_KERNEL_PLANE_DIM_VALID(o->plane_dim)) {
    uint64_t f[1];
    f[0] = o->plane_dim;
    return cubert_error_set(out_error, CUBERT_ERROR_INVALID_ARGUMENT, f, 1,
                            "plane_dim is not a power of two from 1 to 64");
  }
  if (!o->workers) o->workers = cpus > 1 ? (uint32_t)(cpus - 1) : 1u;
  if (o->stream_helpers > CUBERT_CPU_STREAM_HELPERS_MAX &&
      o->stream_helpers != CUBERT_CPU_STREAM_HELPERS_NONE) {
    uint64_t f[2];
    f[0] = o->stream_helpers;
    f[1] = CUBERT_CPU_STREAM_HELPERS_MAX;
    return cubert_error_set(out_error, CUBERT_ERROR_INVALID_ARGUMENT, f, 2,
                            "stream_helpers above the limit");
  }
  if (!o->stream_helpers) o->stream_helpers = cpu_stream_helpers_default(cpu_usable_cpus());
  return CUBERT_STATUS_OK;
}

/* ---- the device ---- */

static void device_free(cpu_device_t *d) { cpu_driver.destroy(d); }

static cubert_status_t device_create(cubert_allocator_t allocator, const cubert_cpu_options_t *o,
                                     cpu_device_t **out_device, cubert_error_t *out_error) {
  cpu_device_t *d = NULL;
  cubert_status_t status;
  if (cubert_allocator_malloc(allocator, sizeof(*d), 0, (void **)&d, NULL) != CUBERT_STATUS_OK)
    return cubert_error_set(out_error, CUBERT_ERROR_HOST_OUT_OF_MEMORY, NULL, 0, "cpu device");
  d->allocator = allocator;
  d->device_index = o->device.index;
  d->stream_count = o->device.max_streams + 2u;
  d->collective_timeout_ns =
      (uint64_t)(o->collective_timeout_ms ? o->collective_timeout_ms : 60000u) * 1000000ull;
  pthread_mutex_init(&d->events_mutex, NULL);
  cpu_fill_properties(o, &d->properties);
  status = cpu_sim_create(d, o, out_error);
  if (status == CUBERT_STATUS_OK &&
      cubert_allocator_malloc_array(allocator, d->stream_count, sizeof(cpu_stream_t *), 0,
                                    (void **)&d->streams, NULL) != CUBERT_STATUS_OK)
    status = cubert_error_set(out_error, CUBERT_ERROR_HOST_OUT_OF_MEMORY, NULL, 0, "streams");
  if (status == CUBERT_STATUS_OK && !d->deterministic &&
      cubert_allocator_malloc_array(allocator, d->stream_count, sizeof(cpu_solo_context_t), 64,
                                    (void **)&d->solo, NULL) != CUBERT_STATUS_OK)
    status = cubert_error_set(out_error, CUBERT_ERROR_HOST_OUT_OF_MEMORY, NULL, 0,
                              "stream kernel contexts");
  if (status == CUBERT_STATUS_OK)
    status = cubert__cpu_executor_create(allocator, d->deterministic ? 0 : o->workers,
                                         &d->executor, out_error);
  if (status == CUBERT_STATUS_OK && !d->deterministic &&
      o->stream_helpers != CUBERT_CPU_STREAM_HELPERS_NONE) {
    status = cpu_helpers_create(allocator, o->stream_helpers, d->stream_count, &d->helpers);
    if (status != CUBERT_STATUS_OK)
      status = cubert_error_set(out_error, CUBERT_ERROR_HOST_OUT_OF_MEMORY, NULL, 0,
                                "cannot start the stream helpers");
  }
  pthread_mutex_init(&d->summary_mutex, NULL);
  if (status == CUBERT_STATUS_OK && o->profile_summary)
    status = cubert_profile_summary_create(allocator, CUBERT_PROFILE_LEVEL_BASIC, 256, 16384,
                                           &d->summary, out_error);
  if (status != CUBERT_STATUS_OK) {
    device_free(d);
    return status;
  }
  cubert__cpu_executor_set_trace_device(d->executor, d->device_index);
  cubert__cpu_executor_set_plane_dim(d->executor, o->plane_dim);
  if (CPU_KERNEL_PLANE_DIM_VALID(o->plane_dim)) d->plane_dim = o->plane_dim;
  *out_device = d;
  return CUBERT_STATUS_OK;
}

static void release_lock(void *self) {
  cubert_lock_t *lock = (cubert_lock_t *)self;
  cubert_allocator_t allocator = *(cubert_allocator_t *)(void *)(lock + 1);
  cubert_os_lock_destroy(*lock);
  cubert_allocator_free(allocator, lock, sizeof(cubert_lock_t) + sizeof(cubert_allocator_t), 0);
}

/* The lock lives in a small block with its allocator behind it, freed by
 * the server's host_release once the device is gone. */
static cubert_status_t make_lock(cubert_allocator_t allocator, cubert_lock_t **out_lock) {
  cubert_lock_t *lock = NULL;
  if (cubert_allocator_malloc(allocator, sizeof(cubert_lock_t) + sizeof(cubert_allocator_t), 0,
                              (void **)&lock, NULL) != CUBERT_STATUS_OK)
    return CUBERT_STATUS_RESOURCE_EXHAUSTED;
  if (cubert_os_lock_create(allocator, lock, NULL) != CUBERT_STATUS_OK) {
    cubert_allocator_free(allocator, lock, sizeof(cubert_lock_t) + sizeof(cubert_allocator_t), 0);
    return CUBERT_STATUS_RESOURCE_EXHAUSTED;
  }
  *(cubert_allocator_t *)(void *)(lock + 1) = allocator;
  *out_lock = lock;
  return CUBERT_STATUS_OK;
}

static void server_options(const cubert_cpu_options_t *o, cpu_device_t *d, cubert_lock_t *lock,
                           cubert_server_options_t *k) {
  cubert_server_options_initialize(k);
  cubert_server_options_from_device(k, CUBERT_CPU_DEVICE_TYPE, &o->device);
  k->layout_policy.kind = CUBERT_LAYOUT_POLICY_CONTIGUOUS;
  k->layout_policy.mem_alignment = 8;
  if (d->deterministic && d->sim->source == CUBERT_SIM_SOURCE_SEED) k->race_seed = d->sim->seed;
  k->lock = *lock;
  /* launches on different streams enqueue without the device lock (each
   * stream's ring has one producer at a time: the shard's holder); not in
   * deterministic mode (its step loop is the device's) nor with test faults
   * that count launches */
  k->concurrent_launch = !d->deterministic && !(d->faults.fail_launch | d->faults.has_kernel);
  k->yield = cubert__os_thread_yield;
  k->clock = cubert_os_clock();
  k->stream_source = cubert_os_stream_source;
  k->host_release = release_lock;
  k->host_release_self = lock;
  k->memory_config = o->memory_config;
}

/* ---- observability ---- */

static cubert_status_t create_failed(const cubert_cpu_options_t *o, cubert_status_t status,
                                     const cubert_error_t *error) {
  if (OS_LOG_ON(CUBERT_LOG_LEVEL_ERROR)) {
    char what[64];
    (void)snprintf(what, sizeof what, "cubert_cpu_client_create (device %u) failed",
                   (unsigned)o->device.index);
    if (error)
      cubert__os_log_error(CUBERT_LOG_LEVEL_ERROR, what, error);
    else
      cubert__os_log_write(CUBERT_LOG_LEVEL_ERROR, "%s: %s", what, cubert_status_name(status));
  }
  return status;
}

/* The server's observer (cubert_server_observer_t): GC points to the log and
 * the trace. */
static void observe_event(void *self, cubert_server_observe_t point, uint64_t a, uint64_t b) {
  cpu_device_t *d = (cpu_device_t *)self;
  uint64_t now = OS_TRACE_ON() ? cubert__os_trace_now() : 0;
  if (point == CUBERT_SERVER_OBSERVE_GC_RELEASE) {
    OS_LOG(CUBERT_LOG_LEVEL_DEBUG, "cpu device %u: gc released %llu (%llu pending)",
           (unsigned)d->device_index, (unsigned long long)a, (unsigned long long)b);
    if (now)
      cubert__os_trace_record(d->device_index, cubert__os_trace_thread_tid(),
                              OS_TRACE_CAT_GC, "gc release", now, now, 1, OS_TRACE_FLOW_NONE,
                              0, "released", a);
  } else if (point == CUBERT_SERVER_OBSERVE_GC_WAIT) {
    OS_LOG(CUBERT_LOG_LEVEL_DEBUG, "cpu device %u: gc waits for its oldest event (%llu pending)",
           (unsigned)d->device_index, (unsigned long long)a);
    if (now)
      cubert__os_trace_record(d->device_index, cubert__os_trace_thread_tid(),
                              OS_TRACE_CAT_GC, "gc wait", now, now, 1, OS_TRACE_FLOW_NONE, 0,
                              "pending", a);
  }
}

static void observer_options(cpu_device_t *d, cubert_server_options_t *k) {
  (void)cubert_log_level(); /* starts the log (CUBERT_LOG): cubert_os_obs_on_ is then set */
  k->observer.enabled = &cubert_os_obs_on_;
  k->observer.event = observe_event;
  k->observer.self = d;
}

static void log_created(const cubert_cpu_options_t *o, const cpu_device_t *d) {
  if (!OS_LOG_ON(CUBERT_LOG_LEVEL_INFO)) return;
  cubert__os_log_write(
      CUBERT_LOG_LEVEL_INFO,
      "cpu device %u created: %s, %u kernel workers, %u streams, %u stream helpers, memory %s, "
      "profiling %s%s",
      (unsigned)o->device.index, d->deterministic ? "deterministic" : "threaded",
      (unsigned)cubert__cpu_executor_worker_count(d->executor), (unsigned)o->device.max_streams,
      d->helpers ? (unsigned)cpu_helpers_count(d->helpers) : 0u,
      o->memory_config.kind == CUBERT_MEMORY_CONFIGURATION_EXCLUSIVE_PAGES ? "exclusive-pages"
      : o->memory_config.kind == CUBERT_MEMORY_CONFIGURATION_CUSTOM        ? "custom"
                                                                           : "sub-slices",
      cubert_profile_level_name(o->profile_level), d->summary ? " + summary at release" : "");
  if (d->deterministic)
    OS_LOG(CUBERT_LOG_LEVEL_INFO, "cpu device %u: deterministic seed %llu",
           (unsigned)o->device.index, (unsigned long long)o->seed);
  OS_LOG(CUBERT_LOG_LEVEL_DEBUG,
         "cpu device %u: \"%s\", %u cores, max page %llu bytes, alignment %llu, shared "
         "memory %u bytes, bounds check %u, race check %u",
         (unsigned)o->device.index, d->properties.name,
         (unsigned)d->properties.hardware.num_cpu_cores,
         (unsigned long long)d->properties.memory.max_page_size,
         (unsigned long long)d->properties.memory.alignment,
         (unsigned)d->properties.hardware.max_shared_memory_size, (unsigned)o->device.bounds_check,
         (unsigned)o->device.race_check);
}

cubert_status_t cubert_cpu_client_create(cubert_allocator_t allocator,
                                         const cubert_cpu_options_t *options,
                                         cubert_client_t **out_client, cubert_error_t *out_error) {
  cubert_cpu_options_t o;
  cubert_server_options_t k;
  cubert_os_config_t config;
  cpu_device_t *d = NULL;
  cubert_lock_t *lock = NULL;
  cubert_status_t status;
  if (!out_client)
    return cubert_error_set(out_error, CUBERT_ERROR_INVALID_ARGUMENT, NULL, 0, "NULL out_client");
  status = check_options(&o, options, &config, out_error);
  /* CUBERT_TRACE: from the first create on, this device's creation included */
  if (status == CUBERT_STATUS_OK && (config.set & OS_CONFIG_TRACE))
    cubert__os_trace_from_env(&config);
  if (status == CUBERT_STATUS_OK) status = device_create(allocator, &o, &d, out_error);
  if (status != CUBERT_STATUS_OK) return create_failed(&o, status, out_error);
  cpu_fault_plan_initialize(&d->faults, o.device.faults);
  if (make_lock(allocator, &lock) != CUBERT_STATUS_OK) {
    device_free(d);
    status = cubert_error_set(out_error, CUBERT_ERROR_HOST_OUT_OF_MEMORY, NULL, 0, "device lock");
    return create_failed(&o, status, out_error);
  }
  server_options(&o, d, lock, &k);
  observer_options(d, &k);
  status = cubert_server_client_create(allocator, &k, &cpu_driver, d, out_client, out_error);
  if (status != CUBERT_STATUS_OK) {
    release_lock(lock);
    device_free(d);
    return create_failed(&o, status, out_error);
  }
  if (o.profile_level != CUBERT_PROFILE_LEVEL_OFF) {
    status = cubert_client_set_profiling(*out_client, o.profile_level, cubert_log_sink_default,
                                         NULL, out_error);
    if (status != CUBERT_STATUS_OK) {
      cubert_client_release(*out_client); /* destroys the server, the driver and the lock */
      *out_client = NULL;
      return create_failed(&o, status, out_error);
    }
  }
  log_created(&o, d);
  return CUBERT_STATUS_OK;
}

/* ---- deterministic simulation and race checker (cubert/cpu.h) ---- */

/* The CPU device of `client`, with the records of cubert/cpu.h: INVALID_ARGUMENT
 * for NULL, NOT_FOUND when the client is not on a CPU device, and (when
 * `deterministic_only`) FAILED_PRECONDITION on a THREADED device. */
static cubert_status_t cpu_device_for(cubert_client_t *client, const char *fn,
                                      bool deterministic_only, cpu_device_t **out_device,
                                      cubert_error_t *out_error) {
  char reason[96];
  if (!client) {
    snprintf(reason, sizeof reason, "%s: client is NULL", fn);
    return cubert_error_set(out_error, CUBERT_ERROR_INVALID_ARGUMENT, NULL, 0, reason);
  }
  if (cpu_device_of(client, out_device) != CUBERT_STATUS_OK) {
    snprintf(reason, sizeof reason, "%s: the client is not on a CPU device", fn);
    return cubert_error_set(out_error, CUBERT_ERROR_IO_NOT_FOUND, NULL, 0, reason);
  }
  if (deterministic_only && !(*out_device)->deterministic) {
    snprintf(reason, sizeof reason, "%s: the CPU device is not in DETERMINISTIC mode", fn);
    return cubert_error_set(out_error, CUBERT_ERROR_FAILED_PRECONDITION, NULL, 0, reason);
  }
  return CUBERT_STATUS_OK;
}

static cubert_status_t null_out(const char *fn, const char *what, cubert_error_t *out_error) {
  char reason[96];
  snprintf(reason, sizeof reason, "%s: %s is NULL", fn, what);
  return cubert_error_set(out_error, CUBERT_ERROR_INVALID_ARGUMENT, NULL, 0, reason);
}

cubert_status_t cubert_cpu_sim_info(cubert_client_t *client, cubert_cpu_sim_info_t *out,
                                    cubert_error_t *out_error) {
  cpu_device_t *d = NULL;
  CUBERT_RETURN_IF_ERROR(cpu_device_for(client, "cubert_cpu_sim_info", false, &d, out_error));
  if (!out) return null_out("cubert_cpu_sim_info", "out_info", out_error);
  memset(out, 0, sizeof(*out));
  if (!d->deterministic) return CUBERT_STATUS_OK;
  pthread_mutex_lock(&d->sim_mutex);
  out->deterministic = 1;
  out->source = d->sim->source;
  out->seed = d->sim->seed;
  out->trace_hash = d->sim->trace_hash;
  out->steps = d->sim->steps;
  out->choices = d->sim->choices;
  out->log = d->sim->log;
  out->log_len = d->sim->log_len;
  out->log_truncated = d->sim->log_truncated;
  out->diverged = d->sim->diverged;
  out->deadlocks = d->sim_deadlocks;
  pthread_mutex_unlock(&d->sim_mutex);
  return CUBERT_STATUS_OK;
}

cubert_status_t cubert_cpu_sim_attach(cubert_client_t *client, cubert_sim_chooser_t *chooser,
                                      cubert_error_t *out_error) {
  cpu_device_t *d = NULL;
  uint64_t seed = 0;
  CUBERT_RETURN_IF_ERROR(cpu_device_for(client, "cubert_cpu_sim_attach", true, &d, out_error));
  pthread_mutex_lock(&d->sim_mutex);
  d->sim = chooser ? chooser : &d->sim_own;
  if (d->sim->source == CUBERT_SIM_SOURCE_SEED || d->sim->source == CUBERT_SIM_SOURCE_PCT)
    seed = d->sim->seed;
  pthread_mutex_unlock(&d->sim_mutex);
  /* reports carry the seed (0: none) */
  return cubert_client_race_seed(client, seed, out_error);
}

cubert_status_t cubert_cpu_sim_drain(cubert_client_t *client, cubert_error_t *out_error) {
  cpu_device_t *d = NULL;
  cubert_status_t status;
  CUBERT_RETURN_IF_ERROR(cpu_device_for(client, "cubert_cpu_sim_drain", true, &d, out_error));
  status = cpu_sim_run_until(d, NULL, NULL);
  if (status != CUBERT_STATUS_OK) {
    (void)cubert_error_set(out_error, CUBERT_ERROR_SERVER_GENERIC, NULL, 0,
                           "cubert_cpu_sim_drain: the step loop failed");
    if (out_error) out_error->status = status;
    return status;
  }
  (void)cubert_server_collect(client); /* what the GC holds for events that completed */
  return CUBERT_STATUS_OK;
}

cubert_status_t cubert_cpu_race_counters(cubert_client_t *client, cubert_race_counters_t *out,
                                         cubert_error_t *out_error) {
  cpu_device_t *d = NULL;
  CUBERT_RETURN_IF_ERROR(cpu_device_for(client, "cubert_cpu_race_counters", false, &d,
                                        out_error));
  if (!out) return null_out("cubert_cpu_race_counters", "out_counters", out_error);
  return cubert_client_race_counters(client, out, out_error);
}

cubert_status_t cubert_cpu_race_last_report(cubert_client_t *client, cubert_race_report_t *out,
                                            cubert_error_t *out_error) {
  cpu_device_t *d = NULL;
  CUBERT_RETURN_IF_ERROR(cpu_device_for(client, "cubert_cpu_race_last_report", false, &d,
                                        out_error));
  if (!out) return null_out("cubert_cpu_race_last_report", "out_report", out_error);
  return cubert_client_race_last_report(client, out, out_error);
}
