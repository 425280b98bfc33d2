/* SPDX-License-Identifier: MIT */
/*
 * core/kit/kit_internal.h: the server kit's state, shared by the kit's own
 * files (kit.c, kit_events.c, kit_memory.c, kit_gc.c, ...). Not installed.
 *
 * Threading: every function here runs with the device held (the device
 * handle's lock or runner), except where noted (completion waits call the
 * driver's event_synchronize without it).
 */
#ifndef CUBERT_CORE_KIT_INTERNAL_H
#define CUBERT_CORE_KIT_INTERNAL_H

#include "base/fmt.h"
#include "kit/kit.h"
#include "cubert/backend/handle_table.h"
#include "cubert/backend/memory.h"
#include "cubert/backend/device.h"
#include "cubert/backend/race.h"
#include "cubert/backend/profiler.h"

/* Bindings of one launch: the buffers and a dynamic cube count. */
#define KIT_MAX_BINDINGS (CUBERT_KERNEL_MAX_BUFFERS + 1)

/* The per-slot storage: device allocations from the driver, by id. */
typedef struct kit_block_t {
  uint64_t id;
  uint64_t size;
  cubert_device_ptr_t address;
} kit_block_t;

typedef struct kit_storage_t {
  struct cubert_kit_t *kit;
  struct kit_slot_t *slot;
  kit_block_t *blocks; /* sorted by id (ids only grow) */
  size_t count, capacity;
  uint64_t next_id;
} kit_storage_t;

/* One stream slot (the multi-stream's backend stream): regular slots
 * 0..max_streams-1 own a memory manager; slot max_streams is the GC
 * stream. */
typedef struct kit_slot_t {
  struct cubert_kit_t *kit;
  uint32_t index;
  cubert_driver_stream_t *stream;
  cubert_memory_manager_t *manager; /* NULL for the GC stream */
  kit_storage_t storage;
  /* sync_collective: the communication stream's errors up to this event
   * belong to this slot's next drain once it completed (kit_comm.c). */
  cubert_driver_event_t *comm_event;
} kit_slot_t;

/* A multi-stream event: the driver's event and the race checker's token of
 * the same point. Recycled through a free list. */
typedef struct kit_event_t {
  struct kit_event_t *next;
  cubert_driver_event_t *event;
  cubert_race_event_t race;
} kit_event_t;

/* A GC entry: either a multi-stream task (pinned bindings; its event is a
 * kit_event_t), or host bytes / a collective's pinned memory ids held until
 * `event` (a driver event) completed. */
typedef struct kit_retire_t {
  cubert_stream_gc_task_t task; /* task.event_ != NULL: pins */
  cubert_driver_event_t *event; /* the others: the event after their last use */
  cubert_bytes_t bytes;
  cubert_memory_id_t pins[2];   /* a collective's bindings (descriptor references) */
  uint32_t pin_count;
} kit_retire_t;

typedef struct kit_comm_joined_t {
  uint64_t id;
  uint32_t size;
  cubert_driver_comm_t *comm;
} kit_comm_joined_t;

typedef struct kit_comm_t {
  cubert_driver_stream_t *stream; /* the communication stream */
  uint32_t enqueued;              /* a collective ran or is pending there */
  uint32_t joined_count;
  kit_comm_joined_t joined[CUBERT_KIT_MAX_COMMUNICATORS];
} kit_comm_t;



struct cubert_kit_t {
  cubert_allocator_t allocator;
  const cubert_driver_t *driver;
  void *self; /* the driver's */
  cubert_device_properties_t properties;
  cubert_handle_table_t *table; /* borrowed from the client */
  uint32_t device_index;
  uint32_t device_key; /* cubert_handle_t.device_key of this device's handles */
  uint16_t device_type;
  uint32_t max_streams;
  cubert_device_handle_t handle; /* for completion drains (set after creation) */
  cubert_multi_stream_t *multi;
  kit_slot_t **slots; /* max_streams + 1, NULL until created */
  kit_event_t *free_events;
  /* GC ring (kit_gc.c) */
  kit_retire_t *ring;
  uint32_t ring_capacity, ring_head, ring_len;
  /* device lost: every later call returns this at once */
  cubert_error_t lost;
  /* profiling tokens (NULL: no clock) */
  cubert_profiler_t *profiler;
  /* race checker (NULL: off) and the count of checker calls that failed */
  cubert_race_checker_t *race;
  uint64_t race_errors;
  /* test-only faults */
  uint32_t fault_drop_wait, waits_seen, fault_drop_gc_wait, gc_waits_seen;
  /* the host's observer (cubert_kit_observer_t): observe_on points at a
   * zero when there is none, so a point costs one load and one branch */
  const uint32_t *observe_on;
  void (*observe)(void *self, cubert_kit_observe_t point, uint64_t a, uint64_t b);
  void *observe_self;
  kit_comm_t *comm;
  /* every slot's memory configuration; a CUSTOM list points at the kit's
   * own copy (memory_pools, memory_config.pool_count entries) */
  cubert_memory_configuration_t memory_config;
  cubert_memory_pool_options_t *memory_pools;
};

/* An observation point (cubert_kit_observer_t): a relaxed load of the
 * host's word (the host writes it with atomics; a plain volatile read where
 * the build has no atomic builtins: single-threaded and critical-section
 * builds), then one branch. */
#if defined(__GNUC__) && !(defined(CUBERT_SINGLE_THREADED) && CUBERT_SINGLE_THREADED) && \
    !(defined(CUBERT_ATOMIC_CRITICAL_SECTION) && CUBERT_ATOMIC_CRITICAL_SECTION)
#define KIT_OBSERVE_ON(kit) __atomic_load_n((kit)->observe_on, __ATOMIC_RELAXED)
#else
#define KIT_OBSERVE_ON(kit) (*(const volatile uint32_t *)(kit)->observe_on)
#endif
#define KIT_OBSERVE(kit, point, a, b)                                        \
  do {                                                                       \
    if (KIT_OBSERVE_ON(kit)) (kit)->observe((kit)->observe_self, (point), (a), (b)); \
  } while (0)

/* ---- kit_base.c ---- */
/* The sticky device-lost error: OK while the device works. */
cubert_status_t kit_lost(const cubert_kit_t *kit, cubert_error_t *out_error);
/* Note a driver status: UNAVAILABLE makes the kit sticky. Returns status. */
cubert_status_t kit_note(cubert_kit_t *kit, cubert_status_t status, const cubert_error_t *error);
/* The slot of stream_id, created (driver stream, memory) if needed. */
cubert_status_t kit_slot(cubert_kit_t *kit, uint64_t stream_id, kit_slot_t **out_slot,
                         cubert_error_t *out_error);
/* The slot of stream_id or NULL when it was never created. */
kit_slot_t *kit_slot_existing(const cubert_kit_t *kit, uint64_t stream_id);
/* Queue an asynchronous failure on stream_id's slot (after the driver's
 * errors that happened before it). */
void kit_push_error(cubert_kit_t *kit, uint64_t stream_id, const cubert_error_t *error);
/* Drain stream_id's queued errors: the kit's, the driver's, and the
 * communication stream's when a sync_collective is due. OK or
 * SERVER_UNHEALTHY with their aggregate. */
cubert_status_t kit_drain(cubert_kit_t *kit, uint64_t stream_id, cubert_error_t *out_error);
/* UNSUPPORTED (IO_UNSUPPORTED_IO_OPERATION) naming the missing primitive. */
cubert_status_t kit_unsupported(const cubert_kit_t *kit, const char *what,
                                cubert_error_t *out_error);

/* ---- kit_events.c: the multi-stream's event backend over the driver ---- */
extern const cubert_event_backend_vtable_t kit_event_backend_vtable;
void kit_events_free_all(cubert_kit_t *kit);
/* The driver event of a multi-stream event. */
static inline cubert_driver_event_t *kit_event_driver(void *event) {
  return ((kit_event_t *)event)->event;
}
/* Take the race token out of a multi-stream event (release then leaves it). */
static inline cubert_race_event_t kit_event_race_take(void *event) {
  kit_event_t *ev = (kit_event_t *)event;
  cubert_race_event_t token = ev->race;
  ev->race.index = 0;
  ev->race.generation = 0;
  return token;
}

/* ---- kit_memory.c ---- */
cubert_status_t kit_memory_create(cubert_kit_t *kit, kit_slot_t *slot, cubert_error_t *out_error);
void kit_memory_destroy(kit_slot_t *slot);
/* The device address and size in use of a live, bound binding. */
cubert_status_t kit_resolve(cubert_kit_t *kit, const cubert_binding_t *binding,
                            cubert_device_ptr_t *out_address, uint64_t *out_size,
                            cubert_error_t *out_error);

/* ---- kit_gc.c ---- */
cubert_status_t kit_gc_create(cubert_kit_t *kit, uint32_t capacity, cubert_error_t *out_error);
void kit_gc_destroy(cubert_kit_t *kit);
/* After a resolve_end that pinned: move the multi-stream's tasks here. */
void kit_gc_take_tasks(cubert_kit_t *kit);
/* Hold `bytes` until an event recorded now on `slot` completed. On failure
 * (no event) the bytes are released at once after synchronizing the slot. */
void kit_gc_retire_bytes(cubert_kit_t *kit, kit_slot_t *slot, cubert_bytes_t *bytes,
                         size_t count);
/* Hold the descriptor references `pins` (already retained) until an event
 * recorded now on `stream` completed (a collective's bindings). */
void kit_gc_retire_pins(cubert_kit_t *kit, cubert_driver_stream_t *stream,
                        const cubert_memory_id_t *pins, uint32_t count);
/* Release every entry whose event completed (non-blocking). */
uint32_t kit_gc_poll(cubert_kit_t *kit);
/* Release every entry (blocks on each event). */
void kit_gc_drain(cubert_kit_t *kit);
static inline void kit_gc_poll_if_pending(cubert_kit_t *kit) {
  if (kit->ring_len) (void)kit_gc_poll(kit);
}

/* ---- kit_race.c: one branch each when the checker is off ---- */
cubert_status_t kit_race_create(cubert_kit_t *kit, const cubert_kit_options_t *options,
                                cubert_error_t *out_error);
void kit_race_destroy(cubert_kit_t *kit);
void kit_race_op(cubert_kit_t *kit, uint32_t slot, const char *name, const cubert_binding_t *b,
                 const uint8_t *modes, uint32_t count);
void kit_race_host_op(cubert_kit_t *kit, const char *name, const cubert_binding_t *b);
cubert_race_event_t kit_race_record(cubert_kit_t *kit, uint32_t slot);
void kit_race_stream_wait(cubert_kit_t *kit, uint32_t slot, cubert_race_event_t event);
void kit_race_release(cubert_kit_t *kit, cubert_race_event_t event);
void kit_race_host_sync(cubert_kit_t *kit, uint32_t slot);
/* A GC task is about to be released: its pinned buffers that die with it
 * are checked against the task's event; then the task is released. */
void kit_race_release_task(cubert_kit_t *kit, cubert_stream_gc_task_t *task);

/* ---- kit_comm.c ---- */
void kit_comm_shutdown(cubert_kit_t *kit);
void kit_comm_destroy(cubert_kit_t *kit);

/* ---- copies (kit_ops.c) ---- */
/* The 2-D shape of a contiguous or pitched descriptor: rows of `width` bytes
 * `pitch` apart. UNSUPPORTED (IO_UNSUPPORTED_STRIDES) for other strides. */
cubert_status_t kit_copy_shape(const cubert_copy_descriptor_t *d, uint64_t *out_width,
                               uint64_t *out_height, uint64_t *out_pitch,
                               cubert_error_t *out_error);

#endif /* CUBERT_CORE_KIT_INTERNAL_H */
