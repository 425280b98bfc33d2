/* SPDX-License-Identifier: MIT */
/*
 * core/kit/kit.c: the server kit's lifecycle (docs/architecture.md): the
 * driver table's check, creation of the kit's parts, teardown in dependency
 * order, and the accessors the client uses. The kit's other files never
 * call this one.
 */
#include "kit/kit_internal.h"
#include "cubert/backend/handle_table.h"
#include "cubert/backend/device.h"
#include "cubert/backend/profiler.h"
#include "cubert/backend/memory.h"

/* ---- the driver table ------------------------------------------------------------------- */

/* What observe_on points at without an observer (read-only). */
static const uint32_t kit_observe_never = 0;

static cubert_status_t driver_incomplete(cubert_error_t *out_error, const char *what) {
  return cubert_error_set(out_error, CUBERT_ERROR_INVALID_ARGUMENT, NULL, 0, what);
}

cubert_status_t cubert_kit_check_driver(const cubert_driver_t *d, cubert_error_t *out_error) {
  int pinned, comm;
  if (!d) return driver_incomplete(out_error, "kit: NULL driver");
  if (d->abi_version != CUBERT_DRIVER_ABI_VERSION) {
    uint64_t f[2];
    f[0] = d->abi_version;
    f[1] = CUBERT_DRIVER_ABI_VERSION;
    return cubert_error_set(out_error, CUBERT_ERROR_INVALID_ARGUMENT, f, 2,
                            "kit: the driver was built for another table version");
  }
  if (!d->destroy || !d->properties || !d->memory_alloc || !d->memory_free || !d->copy ||
      !d->launch || !d->stream_create || !d->stream_destroy || !d->stream_synchronize ||
      !d->stream_errors ||
      !d->event_record || !d->event_wait || !d->event_query || !d->event_synchronize ||
      !d->event_destroy)
    return driver_incomplete(out_error, "kit: the driver lacks a required primitive");
  pinned = (d->host_alloc != NULL) + (d->host_free != NULL);
  comm = (d->comm_create != NULL) + (d->comm_query != NULL) + (d->comm_destroy != NULL) +
         (d->collective != NULL);
  if (pinned == 1) return driver_incomplete(out_error, "kit: host_alloc without host_free");
  if (comm != 0 && comm != 4)
    return driver_incomplete(out_error, "kit: the collective primitives come all four or none");
  return CUBERT_STATUS_OK;
}

/* ---- lifecycle ------------------------------------------------------------------------ */

void cubert_kit_options_initialize(cubert_kit_options_t *options) {
  if (!options) return;
  cubert_memset(options, 0, sizeof(*options));
  options->max_streams = CUBERT_KIT_DEFAULT_MAX_STREAMS;
  options->gc_capacity = CUBERT_KIT_DEFAULT_GC_CAPACITY;
}

static cubert_status_t kit_oom(cubert_error_t *out_error, const char *what) {
  return cubert_error_set(out_error, CUBERT_ERROR_HOST_OUT_OF_MEMORY, NULL, 0, what);
}

static void kit_free(cubert_kit_t *kit) {
  cubert_allocator_t a = kit->allocator;
  kit_comm_destroy(kit);
  kit_events_free_all(kit);
  kit_gc_destroy(kit);
  cubert_profiler_destroy(kit->profiler);
  kit_race_destroy(kit);
  if (kit->slots)
    cubert_allocator_free(a, kit->slots, (size_t)(kit->max_streams + 1u) * sizeof(kit_slot_t *), 0);
  if (kit->memory_pools)
    cubert_allocator_free(a, kit->memory_pools,
                          (size_t)kit->memory_config.pool_count * sizeof(*kit->memory_pools), 0);
  cubert_allocator_free(a, kit, sizeof(*kit), 0);
}

/* The slots' memory configuration: checked now (a slot's manager is made on
 * first use), a CUSTOM list copied. */
static cubert_status_t kit_memory_config(cubert_kit_t *kit, const cubert_memory_configuration_t *c,
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
      cubert_memory_configuration_pools(c, kit->properties.memory, NULL, 0, &count, NULL);
  if (status != CUBERT_STATUS_OK && status != CUBERT_STATUS_OUT_OF_RANGE)
    return cubert_memory_configuration_pools(c, kit->properties.memory, NULL, 0, &count,
                                             out_error);
  kit->memory_config = *c;
  if (c->kind != CUBERT_MEMORY_CONFIGURATION_CUSTOM || c->pool_count == 0) {
    kit->memory_config.pools = NULL;
    kit->memory_config.pool_count = 0;
    return CUBERT_STATUS_OK;
  }
  if (cubert_allocator_malloc_array(kit->allocator, c->pool_count, sizeof(*kit->memory_pools), 0,
                                    (void **)&kit->memory_pools, NULL) != CUBERT_STATUS_OK) {
    kit->memory_config.pool_count = 0;
    return kit_oom(out_error, "kit: memory configuration");
  }
  cubert_memcpy(kit->memory_pools, c->pools, (size_t)c->pool_count * sizeof(*kit->memory_pools));
  kit->memory_config.pools = kit->memory_pools;
  return CUBERT_STATUS_OK;
}

static cubert_status_t kit_parts_create(cubert_kit_t *kit, const cubert_kit_options_t *o,
                                        cubert_error_t *out_error) {
  cubert_event_backend_t backend;
  cubert_multi_stream_options_t mo;
  CUBERT_RETURN_IF_ERROR(kit_memory_config(kit, &o->memory_config, out_error));
  if (cubert_allocator_malloc_array(kit->allocator, (size_t)kit->max_streams + 1u,
                                    sizeof(kit_slot_t *), 0, (void **)&kit->slots, NULL) !=
      CUBERT_STATUS_OK)
    return kit_oom(out_error, "kit: stream slots");
  CUBERT_RETURN_IF_ERROR(kit_gc_create(kit, o->gc_capacity ? o->gc_capacity
                                                           : CUBERT_KIT_DEFAULT_GC_CAPACITY,
                                       out_error));
  CUBERT_RETURN_IF_ERROR(kit_race_create(kit, o, out_error));
#if CUBERT_CONFIG_PROFILING /* compiled out: a clock is ignored, tokens are UNSUPPORTED */
  if (o->clock.now_ns)
    CUBERT_RETURN_IF_ERROR(cubert_profiler_create(kit->allocator, o->clock,
                                                  CUBERT_PROFILER_DEFAULT_CAPACITY,
                                                  &kit->profiler, out_error));
#endif
  backend.vtable = &kit_event_backend_vtable;
  backend.self = kit;
  cubert_multi_stream_options_initialize(&mo);
  mo.max_streams = kit->max_streams;
  return cubert_multi_stream_create(kit->allocator, &backend, kit->table, &mo, &kit->multi,
                                    out_error);
}

cubert_status_t cubert_kit_create(cubert_allocator_t allocator, const cubert_kit_options_t *o,
                                  const cubert_driver_t *driver, void *driver_self,
                                  cubert_handle_table_t *table, cubert_kit_t **out_kit,
                                  cubert_error_t *out_error) {
  cubert_kit_t *kit = NULL;
  cubert_status_t status;
  uint32_t max_streams = o->max_streams ? o->max_streams : CUBERT_KIT_DEFAULT_MAX_STREAMS;
  if (max_streams > CUBERT_STREAM_MAX_STREAMS_LIMIT) {
    uint64_t f[2];
    f[0] = max_streams;
    f[1] = CUBERT_STREAM_MAX_STREAMS_LIMIT;
    return cubert_error_set(out_error, CUBERT_ERROR_INVALID_ARGUMENT, f, 2,
                            "max_streams above the limit");
  }
  if (cubert_allocator_malloc(allocator, sizeof(*kit), 0, (void **)&kit, NULL) != CUBERT_STATUS_OK)
    return kit_oom(out_error, "kit");
  kit->allocator = allocator;
  kit->driver = driver;
  kit->self = driver_self;
  kit->table = table;
  kit->device_index = o->device.index_id;
  kit->device_type = o->device.type_id;
  kit->max_streams = max_streams;
  kit->observe_on = &kit_observe_never;
  if (o->observer.enabled && o->observer.event) {
    kit->observe_on = o->observer.enabled;
    kit->observe = o->observer.event;
    kit->observe_self = o->observer.self;
  }
  if (o->faults) {
    kit->fault_drop_wait = o->faults->drop_wait;
    kit->fault_drop_gc_wait = o->faults->drop_gc_wait;
  }
  driver->properties(driver_self, &kit->properties);
#if !CUBERT_CONFIG_STAGING
  kit->properties.features &= ~(uint64_t)CUBERT_FEATURE_STAGING; /* compiled out */
#endif
#if !CUBERT_CONFIG_COLLECTIVES
  kit->properties.features &= ~(uint64_t)CUBERT_FEATURE_COLLECTIVES;
#endif
  status = kit_parts_create(kit, o, out_error);
  if (status != CUBERT_STATUS_OK) {
    cubert_multi_stream_destroy(kit->multi);
    kit_free(kit);
    return status;
  }
  *out_kit = kit;
  return CUBERT_STATUS_OK;
}

void cubert_kit_set_handle(cubert_kit_t *kit, cubert_device_handle_t handle) {
  kit->handle = handle;
}

void cubert_kit_set_device_key(cubert_kit_t *kit, uint32_t device_key) {
  kit->device_key = device_key;
}

/* Teardown: collectives first (they wait on compute streams), then the GC
 * (every pinned binding's consumer completed), then the slots: the
 * MultiStream synchronizes and destroys every stream, each slot's memory
 * going back to the driver on its own stream just before. The driver last. */
void cubert_kit_destroy(cubert_kit_t *kit, bool destroy_driver) {
  const cubert_driver_t *driver;
  void *self;
  /* unreachable: NULL (both callers, in client.c, pass the kit they created) */
  if (!kit) return;
  driver = kit->driver;
  self = kit->self;
  kit_comm_shutdown(kit);
  kit_gc_drain(kit);
  cubert_multi_stream_destroy(kit->multi);
  kit->multi = NULL;
  kit_free(kit);
  if (destroy_driver) driver->destroy(self);
}

const cubert_device_properties_t *cubert_kit_properties(const cubert_kit_t *kit) {
  return &kit->properties;
}

const cubert_driver_t *cubert_kit_driver(const cubert_kit_t *kit, void **out_self) {
  /* unreachable: out_self NULL (its one caller, cubert_kit_driver_of, refuses it first) */
  if (out_self) *out_self = kit->self;
  return kit->driver;
}

uint32_t cubert_kit_gc_collect(cubert_kit_t *kit) { return kit_gc_poll(kit); }
