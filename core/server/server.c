/* SPDX-License-Identifier: MIT */
/*
 * core/server/server.c: the server's lifecycle (docs/architecture.md): the
 * driver table's check, creation of the server's parts, teardown in dependency
 * order, and the accessors the client uses. The server's other files never
 * call this one.
 */
#include "server/server_internal.h"
#include "memory/handle_table.h"
#include "cubert/driver/device.h"
#include "profile/profiler.h"
#include "memory/memory.h"

/* ---- the driver table ------------------------------------------------------------------- */

/* What observe_on points at without an observer (read-only). */
static const uint32_t server_observe_never = 0;

static cubert_status_t driver_incomplete(cubert_error_t *out_error, const char *what) {
  return cubert_error_set(out_error, CUBERT_ERROR_INVALID_ARGUMENT, NULL, 0, what);
}

cubert_status_t cubert__server_check_driver(const cubert_driver_t *d, cubert_error_t *out_error) {
  int pinned, comm, plan;
  if (!d) return driver_incomplete(out_error, "server: NULL driver");
  if (d->abi_version != CUBERT_DRIVER_ABI_VERSION) {
    uint64_t f[2];
    f[0] = d->abi_version;
    f[1] = CUBERT_DRIVER_ABI_VERSION;
    return cubert_error_set(out_error, CUBERT_ERROR_INVALID_ARGUMENT, f, 2,
                            "server: the driver was built for another table version");
  }
  if (!d->destroy || !d->properties || !d->memory_alloc || !d->memory_free || !d->copy ||
      !d->launch || !d->stream_create || !d->stream_destroy || !d->stream_synchronize ||
      !d->stream_errors ||
      !d->event_record || !d->event_wait || !d->event_query || !d->event_synchronize ||
      !d->event_destroy)
    return driver_incomplete(out_error, "server: the driver lacks a required primitive");
  pinned = (d->host_alloc != NULL) + (d->host_free != NULL);
  comm = (d->comm_create != NULL) + (d->comm_query != NULL) + (d->comm_destroy != NULL) +
         (d->collective != NULL);
  if (pinned == 1) return driver_incomplete(out_error, "server: host_alloc without host_free");
  if ((d->memory_device != NULL) != (d->memory_import != NULL))
    return driver_incomplete(out_error, "server: memory_device and memory_import come both or neither");
  if (comm != 0 && comm != 4)
    return driver_incomplete(out_error, "server: the collective primitives come all four or none");
  plan = (d->plan_create != NULL) + (d->plan_update != NULL) + (d->plan_launch != NULL) +
         (d->plan_destroy != NULL);
  if (plan != 0 && plan != 4)
    return driver_incomplete(out_error, "server: the plan primitives come all four or none");
  return CUBERT_STATUS_OK;
}

/* ---- lifecycle ------------------------------------------------------------------------ */

void cubert_server_options_initialize(cubert_server_options_t *options) {
  if (!options) return;
  cubert_memset(options, 0, sizeof(*options));
  options->max_streams = CUBERT_SERVER_DEFAULT_MAX_STREAMS;
  options->gc_capacity = CUBERT_SERVER_DEFAULT_GC_CAPACITY;
}

void cubert_server_options_from_device(cubert_server_options_t *options, uint16_t type_id,
                                       const cubert_device_options_t *device) {
  if (!options || !device) return;
  options->device.type_id = type_id;
  options->device.index_id = device->index;
  if (device->max_streams) options->max_streams = device->max_streams;
  options->max_handles = device->max_handles;
  options->bounds_check = device->bounds_check;
  options->race_check = device->race_check;
  options->race_sink = device->race_sink;
  options->faults = device->faults;
}

static cubert_status_t server_oom(cubert_error_t *out_error, const char *what) {
  return cubert_error_set(out_error, CUBERT_ERROR_HOST_OUT_OF_MEMORY, NULL, 0, what);
}

/* Before any stream is destroyed, every stream has run what it was given:
 * a queued wait names another stream's event, and the driver may read that
 * stream until the wait ran (the CPU driver's waiting worker does). One pass
 * suffices: at teardown nothing enqueues any more. Not after a lost device
 * (nothing may block then). */
static void server_streams_synchronize(cubert_server_t *server) {
  uint32_t i;
  if (server_lost(server, NULL) != CUBERT_STATUS_OK) return;
  for (i = 0; server->slots && i < server->max_streams; i++)
    if (server->slots[i])
      (void)server->driver->stream_synchronize(server->self, server->slots[i]->stream, NULL);
  if (server->comm) (void)server->driver->stream_synchronize(server->self, server->comm->stream, NULL);
}

static void server_free(cubert_server_t *server) {
  cubert_allocator_t a = server->allocator;
  server_streams_synchronize(server);
  server_slots_destroy(server);
  server_comm_destroy(server); /* after the slots: their streams wait on its events */
  cubert__multi_stream_destroy(server->multi);
  server_gc_destroy(server);
#if CUBERT_CONFIG_PROFILING
  cubert__profiler_destroy(server->profiler);
#endif
  server_race_destroy(server);
  if (server->slots)
    cubert_allocator_free(a, server->slots, (size_t)server->max_streams * sizeof(server_slot_t *), 0);
  if (server->memory_pools)
    cubert_allocator_free(a, server->memory_pools,
                          (size_t)server->memory_config.pool_count * sizeof(*server->memory_pools), 0);
  cubert_allocator_free(a, server, sizeof(*server), 0);
}

/* The slots' memory configuration: checked now (a slot's manager is made on
 * first use), a CUSTOM list copied. */
static cubert_status_t server_memory_config(cubert_server_t *server, const cubert_memory_configuration_t *c,
                                            cubert_error_t *out_error) {
  uint32_t count = 0;
  cubert_status_t status;
  /* A device with no pool could allocate nothing (every create would fail
   * with BUFFER_TOO_BIG): refused here, at create. */
  if (c->kind == CUBERT_MEMORY_CONFIGURATION_CUSTOM && c->pool_count == 0)
    return cubert_error_set(out_error, CUBERT_ERROR_CONFIG_EMPTY_POOL_LIST, NULL, 0,
                            "a CUSTOM memory configuration needs at least one pool");
  /* capacity 0: OUT_OF_RANGE means the list is good (it only counts) */
  status =
      cubert_memory_configuration_pools(c, server->properties.memory, NULL, 0, &count, NULL);
  if (status != CUBERT_STATUS_OK && status != CUBERT_STATUS_OUT_OF_RANGE)
    return cubert_memory_configuration_pools(c, server->properties.memory, NULL, 0, &count,
                                             out_error);
  server->memory_config = *c;
  if (c->kind != CUBERT_MEMORY_CONFIGURATION_CUSTOM || c->pool_count == 0) {
    server->memory_config.pools = NULL;
    server->memory_config.pool_count = 0;
    return CUBERT_STATUS_OK;
  }
  if (cubert_allocator_malloc_array(server->allocator, c->pool_count, sizeof(*server->memory_pools), 0,
                                    (void **)&server->memory_pools, NULL) != CUBERT_STATUS_OK) {
    server->memory_config.pool_count = 0;
    return server_oom(out_error, "server: memory configuration");
  }
  cubert_memcpy(server->memory_pools, c->pools, (size_t)c->pool_count * sizeof(*server->memory_pools));
  server->memory_config.pools = server->memory_pools;
  return CUBERT_STATUS_OK;
}

static cubert_status_t server_parts_create(cubert_server_t *server, const cubert_server_options_t *o,
                                           cubert_error_t *out_error) {
  cubert_multi_stream_options_t mo;
  CUBERT_RETURN_IF_ERROR(server_memory_config(server, &o->memory_config, out_error));
  if (cubert_allocator_malloc_array(server->allocator, server->max_streams, sizeof(server_slot_t *), 0,
                                    (void **)&server->slots, NULL) != CUBERT_STATUS_OK)
    return server_oom(out_error, "server: stream slots");
  CUBERT_RETURN_IF_ERROR(server_gc_create(server, o->gc_capacity ? o->gc_capacity
                                                           : CUBERT_SERVER_DEFAULT_GC_CAPACITY,
                                          out_error));
  CUBERT_RETURN_IF_ERROR(server_race_create(server, o, out_error));
#if CUBERT_CONFIG_PROFILING /* compiled out: a clock is ignored, tokens are UNSUPPORTED */
  if (o->clock.now_ns)
    CUBERT_RETURN_IF_ERROR(cubert__profiler_create(server->allocator, o->clock,
                                                   CUBERT_PROFILER_DEFAULT_CAPACITY,
                                                   &server->profiler, out_error));
#endif
  cubert__multi_stream_options_initialize(&mo);
  mo.max_streams = server->max_streams;
  /* the server does not track writes per buffer: a binding's point on its
   * origin is the origin's latest command (cts_cross_stream_launch_binding) */
  mo.wait_on_origin_cursor = 1;
  return cubert__multi_stream_create(server->allocator, &mo, &server->multi, out_error);
}

cubert_status_t cubert__server_create(cubert_allocator_t allocator, const cubert_server_options_t *o,
                                      const cubert_driver_t *driver, void *driver_self,
                                      cubert_handle_table_t *table, cubert_server_t **out_kit,
                                      cubert_error_t *out_error) {
  cubert_server_t *server = NULL;
  cubert_status_t status;
  uint32_t max_streams = o->max_streams ? o->max_streams : CUBERT_SERVER_DEFAULT_MAX_STREAMS;
  if (max_streams > CUBERT_STREAM_MAX_STREAMS_LIMIT) {
    uint64_t f[2];
    f[0] = max_streams;
    f[1] = CUBERT_STREAM_MAX_STREAMS_LIMIT;
    return cubert_error_set(out_error, CUBERT_ERROR_INVALID_ARGUMENT, f, 2,
                            "max_streams above the limit");
  }
  if (cubert_allocator_malloc(allocator, sizeof(*server), 0, (void **)&server, NULL) != CUBERT_STATUS_OK)
    return server_oom(out_error, "server");
  server->allocator = allocator;
  server->driver = driver;
  server->self = driver_self;
  server->table = table;
  server->device_index = o->device.index_id;
  server->device_type = o->device.type_id;
  server->max_streams = max_streams;
  server->concurrent_launch = o->concurrent_launch ? 1u : 0u;
  server->observe_on = &server_observe_never;
  if (o->observer.enabled && o->observer.event) {
    server->observe_on = o->observer.enabled;
    server->observe = o->observer.event;
    server->observe_self = o->observer.self;
  }
  if (o->faults) {
    server->fault_drop_wait = o->faults->drop_wait;
    server->fault_drop_gc_wait = o->faults->drop_gc_wait;
  }
  driver->properties(driver_self, &server->properties);
#if !CUBERT_CONFIG_STAGING
  server->properties.features &= ~(uint64_t)CUBERT_FEATURE_STAGING; /* compiled out */
#endif
#if !CUBERT_CONFIG_COLLECTIVES
  server->properties.features &= ~(uint64_t)CUBERT_FEATURE_COLLECTIVES;
#endif
  status = server_parts_create(server, o, out_error);
  if (status != CUBERT_STATUS_OK) {
    server_free(server);
    return status;
  }
  *out_kit = server;
  return CUBERT_STATUS_OK;
}

void cubert__server_set_handle(cubert_server_t *server, cubert_device_handle_t handle) {
  server->handle = handle;
}

void cubert__server_set_device_key(cubert_server_t *server, uint32_t device_key) {
  server->device_key = device_key;
}

/* Teardown: collectives first (they wait on compute streams), then the
 * release ring (every pinned binding's consumer completed), then the slots:
 * each slot's memory goes back to the driver on its own stream, then the
 * stream is destroyed. The driver last. */
void cubert__server_destroy(cubert_server_t *server, bool destroy_driver) {
  const cubert_driver_t *driver;
  void *self;
  /* unreachable: NULL (both callers, in client.c, pass the server they created) */
  if (!server) return;
  driver = server->driver;
  self = server->self;
  server_comm_shutdown(server);
  server_external_poll(server, true); /* every owner gets its memory back... */
  server_gc_drain(server);            /* ...once the work that used it ran */
  server_record_destroy_all(server);
  server_external_destroy(server);
  server_free(server);
  if (destroy_driver) driver->destroy(self);
}

const cubert_device_properties_t *cubert__server_properties(const cubert_server_t *server) {
  return &server->properties;
}

const cubert_driver_t *cubert__server_driver(const cubert_server_t *server, void **out_self) {
  /* unreachable: out_self NULL (its one caller, cubert_server_driver_of, refuses it first) */
  if (out_self) *out_self = server->self;
  return server->driver;
}

uint32_t cubert__server_gc_collect(cubert_server_t *server) { return server_gc_poll(server); }
