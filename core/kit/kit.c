/*
 * core/kit/kit.c: the server kit's lifecycle, its stream slots and its error
 * queues (docs/architecture.md).
 *
 * The kit drives one device through its driver table. A stream id maps to a
 * slot (value mod max_streams) that the MultiStream (core/stream) creates on
 * first use through the kit's event backend (kit_events.c): the slot gets a
 * driver stream and a memory manager (kit_memory.c). Errors of asynchronous
 * work live in two places, merged at every drain (flush / sync / read): the
 * MultiStream's per-slot queue (what the kit itself finds while enqueueing,
 * e.g. a launch above the device's limits) and the driver's per-stream
 * errors (what failed while it ran). A driver status UNAVAILABLE means the
 * device was lost: the kit keeps that error and returns it from every later
 * call at once (kit_lost).
 */
#include "kit/kit_internal.h"

/* ---- errors ---------------------------------------------------------------------- */

cubert_status_t kit_lost(const cubert_kit_t *kit, cubert_error_t *out_error) {
  if (kit->lost.status == CUBERT_STATUS_OK) return CUBERT_STATUS_OK;
  if (out_error) *out_error = kit->lost;
  return kit->lost.status;
}

cubert_status_t kit_note(cubert_kit_t *kit, cubert_status_t status, const cubert_error_t *error) {
  if (status != CUBERT_STATUS_UNAVAILABLE || kit->lost.status != CUBERT_STATUS_OK) return status;
  if (error && error->depth > 0) {
    kit->lost = *error;
    kit->lost.status = CUBERT_STATUS_UNAVAILABLE;
  } else {
    cubert_error_set(&kit->lost, CUBERT_ERROR_DEVICE_LOST, NULL, 0, "the device was lost");
  }
  return status;
}

cubert_status_t kit_unsupported(const cubert_kit_t *kit, const char *what,
                                cubert_error_t *out_error) {
  char text[CUBERT_ERROR_REASON_SIZE];
  cubert_fmt_t f;
  cubert_fmt_init(&f, text, sizeof text);
  cubert_fmt_append_str(&f, "the ");
  cubert_fmt_append_str(&f, kit->driver->name ? kit->driver->name : "(unnamed)");
  cubert_fmt_append_str(&f, " driver has no ");
  cubert_fmt_append_str(&f, what);
  return cubert_error_set(out_error, CUBERT_ERROR_IO_UNSUPPORTED_IO_OPERATION, NULL, 0, text);
}

/* ---- slots --------------------------------------------------------------------------- */

cubert_status_t kit_slot(cubert_kit_t *kit, uint64_t stream_id, kit_slot_t **out_slot,
                         cubert_error_t *out_error) {
  void *stream = NULL;
  kit_slot_t *slot = kit->slots[stream_id % kit->max_streams];
  if (slot) {
    *out_slot = slot;
    return CUBERT_STATUS_OK;
  }
  CUBERT_RETURN_IF_ERROR(cubert_multi_stream_stream(kit->multi, stream_id, &stream, out_error));
  *out_slot = (kit_slot_t *)stream;
  return CUBERT_STATUS_OK;
}

kit_slot_t *kit_slot_existing(const cubert_kit_t *kit, uint64_t stream_id) {
  return kit->slots[stream_id % kit->max_streams];
}

/* Move the driver's errors of `slot` so far onto the slot's queue (keeps the
 * order in which they happened relative to what the kit pushes next). */
static void pull_driver_errors(cubert_kit_t *kit, kit_slot_t *slot) {
  cubert_error_t e;
  cubert_error_clear(&e);
  if (kit->driver->stream_errors(kit->self, slot->stream, &e) != CUBERT_STATUS_OK && e.depth > 0)
    (void)cubert_multi_stream_error_push(kit->multi, slot->index, &e);
}

void kit_push_error(cubert_kit_t *kit, uint64_t stream_id, const cubert_error_t *error) {
  kit_slot_t *slot = NULL;
  if (kit_slot(kit, stream_id, &slot, NULL) != CUBERT_STATUS_OK) return;
  pull_driver_errors(kit, slot);
  (void)cubert_multi_stream_error_push(kit->multi, stream_id, error);
}

cubert_status_t kit_drain(cubert_kit_t *kit, uint64_t stream_id, cubert_error_t *out_error) {
  kit_slot_t *slot = kit_slot_existing(kit, stream_id);
  cubert_error_t aggregate, e;
  CUBERT_RETURN_IF_ERROR(kit_lost(kit, out_error));
  if (!slot) return CUBERT_STATUS_OK;
  cubert_error_clear(&aggregate);
  cubert_error_clear(&e);
  if (cubert_multi_stream_error_drain(kit->multi, stream_id, &e) != CUBERT_STATUS_OK)
    (void)cubert_error_aggregate(&aggregate, &e);
  cubert_error_clear(&e);
  if (kit->driver->stream_errors(kit->self, slot->stream, &e) != CUBERT_STATUS_OK)
    (void)cubert_error_aggregate(&aggregate, &e);
  if (slot->comm_event) kit_comm_collect(kit, slot, &aggregate);
  if (aggregate.depth == 0) return CUBERT_STATUS_OK;
  if (out_error) *out_error = aggregate;
  return CUBERT_STATUS_SERVER_UNHEALTHY;
}

/* ---- the driver table ------------------------------------------------------------------- */

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
  cubert_allocator_free(a, kit, sizeof(*kit), 0);
}

static cubert_status_t kit_parts_create(cubert_kit_t *kit, const cubert_kit_options_t *o,
                                        cubert_error_t *out_error) {
  cubert_event_backend_t backend;
  cubert_multi_stream_options_t mo;
  if (cubert_allocator_malloc_array(kit->allocator, (size_t)kit->max_streams + 1u,
                                    sizeof(kit_slot_t *), 0, (void **)&kit->slots) !=
      CUBERT_STATUS_OK)
    return kit_oom(out_error, "kit: stream slots");
  CUBERT_RETURN_IF_ERROR(kit_gc_create(kit, o->gc_capacity ? o->gc_capacity
                                                           : CUBERT_KIT_DEFAULT_GC_CAPACITY,
                                       out_error));
  CUBERT_RETURN_IF_ERROR(kit_race_create(kit, o, out_error));
  if (o->clock.now_ns)
    CUBERT_RETURN_IF_ERROR(cubert_profiler_create(kit->allocator, o->clock,
                                                  CUBERT_PROFILER_DEFAULT_CAPACITY,
                                                  &kit->profiler, out_error));
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
  if (cubert_allocator_malloc(allocator, sizeof(*kit), 0, (void **)&kit) != CUBERT_STATUS_OK)
    return kit_oom(out_error, "kit");
  kit->allocator = allocator;
  kit->driver = driver;
  kit->self = driver_self;
  kit->table = table;
  kit->device_index = o->device.index_id;
  kit->device_type = o->device.type_id;
  kit->max_streams = max_streams;
  if (o->faults) {
    kit->fault_drop_wait = o->faults->drop_wait;
    kit->fault_drop_gc_wait = o->faults->drop_gc_wait;
  }
  driver->properties(driver_self, &kit->properties);
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

/* Teardown: collectives first (they wait on compute streams), then the GC
 * (every pinned binding's consumer completed), then the slots: the
 * MultiStream synchronizes and destroys every stream, each slot's memory
 * going back to the driver on its own stream just before. The driver last. */
void cubert_kit_destroy(cubert_kit_t *kit, bool destroy_driver) {
  const cubert_driver_t *driver;
  void *self;
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
  if (out_self) *out_self = kit->self;
  return kit->driver;
}

uint32_t cubert_kit_gc_collect(cubert_kit_t *kit) { return kit_gc_poll(kit); }

/* ---- flush ------------------------------------------------------------------------ */

cubert_status_t cubert_kit_flush(cubert_kit_t *kit, uint64_t stream, cubert_error_t *out_error) {
  kit_gc_poll_if_pending(kit);
  return kit_drain(kit, stream, out_error);
}
