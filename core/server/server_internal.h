/* SPDX-License-Identifier: MIT */
/*
 * core/server/server_internal.h: the server's state, shared by the server's own
 * files (server.c, server_events.c, server_memory.c, server_gc.c, ...). Not installed.
 *
 * Threading: every function here runs with the device held (the device
 * handle's lock or runner), except where noted (completion waits call the
 * driver's event_synchronize without it).
 */
#ifndef CUBERT_CORE_SERVER_INTERNAL_H
#define CUBERT_CORE_SERVER_INTERNAL_H

#include "base/fmt.h"
#include "server/server.h"
#include "memory/handle_table.h"
#include "memory/memory.h"
#include "cubert/driver/device.h"
#include "check/race.h"
#include "profile/profiler.h"

/* Bindings of one launch: the buffers and a dynamic cube count. */
#define SERVER_MAX_BINDINGS (CUBERT_KERNEL_MAX_BUFFERS + 1)

/* The per-slot storage: device allocations from the driver, by id. */
typedef struct server_block_t {
  uint64_t id;
  uint64_t size;
  cubert_device_ptr_t address;
} server_block_t;

typedef struct server_storage_t {
  struct cubert_server_t *server;
  struct server_slot_t *slot;
  server_block_t *blocks; /* sorted by id (ids only grow) */
  size_t count, capacity;
  uint64_t next_id;
} server_storage_t;

/* One stream slot (the multi-stream's driver stream): regular slots
 * 0..max_streams-1 own a memory manager; slot max_streams is the GC
 * stream. */
typedef struct server_slot_t {
  struct cubert_server_t *server;
  uint32_t index;
  cubert_driver_stream_t *stream;
  cubert_memory_manager_t *manager; /* NULL for the GC stream */
  server_storage_t storage;
  /* sync_collective: the communication stream's errors up to this event
   * belong to this slot's next drain once it completed (server_comm.c). */
  cubert_driver_event_t *comm_event;
} server_slot_t;

/* A multi-stream event: the driver's event and the race checker's token of
 * the same point. Recycled through a free list. */
typedef struct server_event_t {
  struct server_event_t *next;
  cubert_driver_event_t *event;
  cubert_race_event_t race;
} server_event_t;

/* A GC entry: either a multi-stream task (pinned bindings; its event is a
 * server_event_t), or host bytes / a collective's pinned memory ids held until
 * `event` (a driver event) completed. */
typedef struct server_retire_t {
  cubert_stream_gc_task_t task; /* task.event_ != NULL: pins */
  cubert_driver_event_t *event; /* the others: the event after their last use */
  cubert_bytes_t bytes;
  cubert_memory_id_t pins[2];   /* a collective's bindings (descriptor references) */
  uint32_t pin_count;
} server_retire_t;

typedef struct server_comm_joined_t {
  uint64_t id;
  uint32_t size;
  cubert_driver_comm_t *comm;
} server_comm_joined_t;

typedef struct server_comm_t {
  cubert_driver_stream_t *stream; /* the communication stream */
  uint32_t enqueued;              /* a collective ran or is pending there */
  uint32_t joined_count;
  server_comm_joined_t joined[CUBERT_SERVER_MAX_COMMUNICATORS];
} server_comm_t;



struct cubert_server_t {
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
  server_slot_t **slots; /* max_streams + 1, NULL until created */
  server_event_t *free_events;
  /* GC ring (server_gc.c) */
  server_retire_t *ring;
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
  /* the host's observer (cubert_server_observer_t): observe_on points at a
   * zero when there is none, so a point costs one load and one branch */
  const uint32_t *observe_on;
  void (*observe)(void *self, cubert_server_observe_t point, uint64_t a, uint64_t b);
  void *observe_self;
  server_comm_t *comm;
  /* every slot's memory configuration; a CUSTOM list points at the server's
   * own copy (memory_pools, memory_config.pool_count entries) */
  cubert_memory_configuration_t memory_config;
  cubert_memory_pool_options_t *memory_pools;
};

/* An observation point (cubert_server_observer_t): a relaxed load of the
 * host's word (the host writes it with atomics; a plain volatile read where
 * the build has no atomic builtins: single-threaded and critical-section
 * builds), then one branch. */
#if defined(__GNUC__) && !(defined(CUBERT_SINGLE_THREADED) && CUBERT_SINGLE_THREADED) && \
    !(defined(CUBERT_ATOMIC_CRITICAL_SECTION) && CUBERT_ATOMIC_CRITICAL_SECTION)
#define SERVER_OBSERVE_ON(server) __atomic_load_n((server)->observe_on, __ATOMIC_RELAXED)
#else
#define SERVER_OBSERVE_ON(server) (*(const volatile uint32_t *)(server)->observe_on)
#endif
#define SERVER_OBSERVE(server, point, a, b)                                        \
  do {                                                                       \
    if (SERVER_OBSERVE_ON(server)) (server)->observe((server)->observe_self, (point), (a), (b)); \
  } while (0)

/* ---- server_base.c ---- */
/* The sticky device-lost error: OK while the device works. */
cubert_status_t server_lost(const cubert_server_t *server, cubert_error_t *out_error);
/* Note a driver status: UNAVAILABLE makes the server sticky. Returns status. */
cubert_status_t server_note(cubert_server_t *server, cubert_status_t status, const cubert_error_t *error);
/* The slot of stream_id, created (driver stream, memory) if needed. */
cubert_status_t server_slot(cubert_server_t *server, uint64_t stream_id, server_slot_t **out_slot,
                            cubert_error_t *out_error);
/* The slot of stream_id or NULL when it was never created. */
server_slot_t *server_slot_existing(const cubert_server_t *server, uint64_t stream_id);
/* Queue an asynchronous failure on stream_id's slot (after the driver's
 * errors that happened before it). */
void server_push_error(cubert_server_t *server, uint64_t stream_id, const cubert_error_t *error);
/* Drain stream_id's queued errors: the server's, the driver's, and the
 * communication stream's when a sync_collective is due. OK or
 * SERVER_UNHEALTHY with their aggregate. */
cubert_status_t server_drain(cubert_server_t *server, uint64_t stream_id, cubert_error_t *out_error);
/* UNSUPPORTED (IO_UNSUPPORTED_IO_OPERATION) naming the missing primitive. */
cubert_status_t server_unsupported(const cubert_server_t *server, const char *what,
                                   cubert_error_t *out_error);

/* ---- server_events.c: the multi-stream's event driver over the driver ---- */
extern const cubert_event_backend_vtable_t server_event_backend_vtable;
void server_events_free_all(cubert_server_t *server);
/* The driver event of a multi-stream event. */
static inline cubert_driver_event_t *server_event_driver(void *event) {
  return ((server_event_t *)event)->event;
}
/* Take the race token out of a multi-stream event (release then leaves it). */
static inline cubert_race_event_t server_event_race_take(void *event) {
  server_event_t *ev = (server_event_t *)event;
  cubert_race_event_t token = ev->race;
  ev->race.index = 0;
  ev->race.generation = 0;
  return token;
}

/* ---- server_memory.c ---- */
cubert_status_t server_memory_create(cubert_server_t *server, server_slot_t *slot, cubert_error_t *out_error);
void server_memory_destroy(server_slot_t *slot);
/* The device address and size in use of a live, bound binding. */
cubert_status_t server_resolve(cubert_server_t *server, const cubert_binding_t *binding,
                               cubert_device_ptr_t *out_address, uint64_t *out_size,
                               cubert_error_t *out_error);

/* ---- server_gc.c ---- */
cubert_status_t server_gc_create(cubert_server_t *server, uint32_t capacity, cubert_error_t *out_error);
void server_gc_destroy(cubert_server_t *server);
/* After a resolve_end that pinned: move the multi-stream's tasks here. */
void server_gc_take_tasks(cubert_server_t *server);
/* Hold `bytes` until an event recorded now on `slot` completed. On failure
 * (no event) the bytes are released at once after synchronizing the slot. */
void server_gc_retire_bytes(cubert_server_t *server, server_slot_t *slot, cubert_bytes_t *bytes,
                            size_t count);
/* Hold the descriptor references `pins` (already retained) until an event
 * recorded now on `stream` completed (a collective's bindings). */
void server_gc_retire_pins(cubert_server_t *server, cubert_driver_stream_t *stream,
                           const cubert_memory_id_t *pins, uint32_t count);
/* Release every entry whose event completed (non-blocking). */
uint32_t server_gc_poll(cubert_server_t *server);
/* Release every entry (blocks on each event). */
void server_gc_drain(cubert_server_t *server);
static inline void server_gc_poll_if_pending(cubert_server_t *server) {
  if (server->ring_len) (void)server_gc_poll(server);
}

/* ---- server_race.c: one branch each when the checker is off ---- */
#if CUBERT_CONFIG_RACE_CHECKER
cubert_status_t server_race_create(cubert_server_t *server, const cubert_server_options_t *options,
                                   cubert_error_t *out_error);
void server_race_destroy(cubert_server_t *server);
void server_race_op(cubert_server_t *server, uint32_t slot, const char *name, const cubert_binding_t *b,
                    const uint8_t *modes, uint32_t count);
void server_race_host_op(cubert_server_t *server, const char *name, const cubert_binding_t *b);
cubert_race_event_t server_race_record(cubert_server_t *server, uint32_t slot);
void server_race_stream_wait(cubert_server_t *server, uint32_t slot, cubert_race_event_t event);
void server_race_release(cubert_server_t *server, cubert_race_event_t event);
void server_race_host_sync(cubert_server_t *server, uint32_t slot);
/* A GC task is about to be released: its pinned buffers that die with it
 * are checked against the task's event; then the task is released. */
void server_race_release_task(cubert_server_t *server, cubert_stream_gc_task_t *task);
#else
/* Compiled out (CUBERT_CONFIG_RACE_CHECKER 0): server_race.c is not built and
 * each hook call becomes a no-op where it stands (its arguments are only cast
 * to void); asking for the checker answers UNSUPPORTED with a COMPILED_OUT
 * record. */
#define server_race_create(server, o, out_error)                                        \
  ((o)->race_check ? cubert_error_set((out_error), CUBERT_ERROR_COMPILED_OUT, NULL, 0,  \
                                      "the race checker (CUBERT_CONFIG_RACE_CHECKER=0)") \
                   : CUBERT_STATUS_OK)
#define server_race_destroy(server) ((void)(server))
#define server_race_op(server, slot, name, b, modes, count) \
  ((void)(server), (void)(slot), (void)(name), (void)(b), (void)(modes), (void)(count))
#define server_race_host_op(server, name, b) ((void)(server), (void)(name), (void)(b))
#define server_race_record(server, slot) ((void)(server), (void)(slot), (cubert_race_event_t){0, 0})
#define server_race_stream_wait(server, slot, event) ((void)(server), (void)(slot), (void)(event))
#define server_race_release(server, event) ((void)(server), (void)(event))
#define server_race_host_sync(server, slot) ((void)(server), (void)(slot))
#define server_race_release_task(server, task) ((void)(server), cubert__stream_gc_task_release(task))
#endif

/* ---- server_comm.c ---- */
void server_comm_shutdown(cubert_server_t *server);
void server_comm_destroy(cubert_server_t *server);

/* ---- copies (server_ops.c) ---- */
/* The 2-D shape of a contiguous or pitched descriptor: rows of `width` bytes
 * `pitch` apart. UNSUPPORTED (IO_UNSUPPORTED_STRIDES) for other strides. */
cubert_status_t server_copy_shape(const cubert_copy_descriptor_t *d, uint64_t *out_width,
                                  uint64_t *out_height, uint64_t *out_pitch,
                                  cubert_error_t *out_error);

#endif /* CUBERT_CORE_SERVER_INTERNAL_H */
