/* SPDX-License-Identifier: MIT */
/*
 * core/server/server_internal.h: the server's state, shared by the server's own
 * files (server.c, server_base.c, server_stream.c, server_memory.c, server_gc.c, ...).
 * Not installed.
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

/* One stream slot: its driver stream and its memory (server_base.c makes
 * it on first use). */
typedef struct server_slot_t {
  struct cubert_server_t *server;
  uint32_t index;
  cubert_driver_stream_t *stream;
  cubert_memory_manager_t *manager;
  server_storage_t storage;
  /* sync_collective: the communication stream's errors up to this event
   * belong to this slot's next drain once it completed (server_comm.c). */
  cubert_driver_event_t *comm_event;
  /* 1 while a sharded reserve runs on this slot (cubert__server_reserve_sharded):
   * its storage leaves a lost device to the caller (server_note reads every slot) */
  uint32_t sharded;
} server_slot_t;

/* A pinned binding reference held by the release ring: the memory id and the
 * slot of the stream the binding belongs to (for the race checker). */
typedef struct server_pin_t {
  cubert_memory_id_t memory;
  uint32_t slot;
} server_pin_t;

/* An entry of the release ring (server_gc.c): what to release once `event`
 * (a driver event recorded after the last use) completed: host bytes, and/or
 * pins[pin_first .. pin_first + pin_count) of the pin ring (contiguous);
 * `race` is the race checker's token of the same point when the pins are a
 * command's (cross-stream bindings), else none. */
typedef struct server_retire_t {
  cubert_driver_event_t *event;
  cubert_race_event_t race;
  cubert_bytes_t bytes;
  uint32_t pin_first, pin_count;
  uint32_t pin_span; /* pin ring entries this entry holds (its pins + skipped tail) */
} server_retire_t;

/* A command being ordered on its stream (server_stream.c): the multi-stream's
 * plan and the slot it runs on. */
typedef struct server_order_t {
  cubert_stream_plan_t plan;
  server_slot_t *slot;
  /* test fault drop_gc_wait: the release point recorded before the command */
  cubert_driver_event_t *early_event;
  cubert_race_event_t early_race;
} server_order_t;

typedef struct server_comm_joined_t {
  uint64_t id;
  uint32_t size;
  cubert_driver_comm_t *comm;
} server_comm_joined_t;

/* Collectives whose bindings are held together (server_comm.c): their pins
 * go to the release ring behind one event recorded after the last of them,
 * when this many are held, or at sync_collective or any drain of the ring. */
#define SERVER_COMM_HELD 16u

typedef struct server_comm_t {
  cubert_driver_stream_t *stream; /* the communication stream */
  uint32_t enqueued;              /* a collective ran or is pending there */
  uint32_t joined_count;
  server_comm_joined_t joined[CUBERT_SERVER_MAX_COMMUNICATORS];
  /* pins of the collectives enqueued since the last release point */
  uint32_t held_count, held_collectives;
  cubert_memory_id_t held[2u * SERVER_COMM_HELD];
} server_comm_t;



/* Memory adopted from another library (server_external.c): the id the
 * server owns for it (null: the entry is free), where it is, the slot whose
 * stream it was imported on, and who gets it back (bytes.release, called
 * once after the last reference went and that stream's work completed). */
typedef struct server_external_t {
  cubert_memory_id_t memory;
  cubert_device_ptr_t address;
  uint64_t size;
  uint32_t slot;
  cubert_bytes_t owner;
} server_external_t;

/* The location pool of an adopted id (never a pool of the memory manager:
 * 0..253 are dynamic pools, 255 the persistent pool). */
#define SERVER_EXTERNAL_POOL 254u

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
  /* options.concurrent_launch: launches on their own stream's buffers may run
   * with only their shard entered (cubert__server_launch_sharded) */
  uint32_t concurrent_launch;
  cubert_device_handle_t handle; /* for completion drains (set after creation) */
  cubert_multi_stream_t *multi;
  server_slot_t **slots; /* max_streams, NULL until created */
  /* the release ring (server_gc.c) and its pins */
  server_retire_t *ring;
  uint32_t ring_capacity, ring_head, ring_len;
  server_pin_t *pins;
  uint32_t pin_capacity, pin_tail, pin_used;
  /* device lost: every later call returns this at once */
  cubert_error_t lost;
  /* profiling tokens (NULL: no clock) */
  cubert_profiler_t *profiler;
  /* race checker (NULL: off) and the count of checker calls that failed */
  cubert_race_checker_t *race;
  uint64_t race_errors;
  /* test-only faults */
  uint32_t fault_drop_wait, waits_seen, fault_drop_gc_wait, fences_seen;
  /* the host's observer (cubert_server_observer_t): observe_on points at a
   * zero when there is none, so a point costs one load and one branch */
  const uint32_t *observe_on;
  void (*observe)(void *self, cubert_server_observe_t point, uint64_t a, uint64_t b);
  void *observe_self;
  server_comm_t *comm;
  /* recordings in progress (server_record.c): a list, and its length (0:
   * the launch path costs one load and one branch) */
  struct cubert_server_recording_t *recordings;
  uint32_t recording_count;
  /* every slot's memory configuration; a CUSTOM list points at the server's
   * own copy (memory_pools, memory_config.pool_count entries) */
  cubert_memory_configuration_t memory_config;
  cubert_memory_pool_options_t *memory_pools;
  /* adopted memory (server_external.c); external_live 0: none, and
   * server_resolve never looks */
  server_external_t *externals;
  uint32_t external_capacity, external_live;
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
/* The slot of stream_id, created (driver stream, memory) if needed. RESOURCE_EXHAUSTED and
 * the driver's stream_create codes. */
cubert_status_t server_slot(cubert_server_t *server, uint64_t stream_id, server_slot_t **out_slot,
                            cubert_error_t *out_error);
/* The slot of stream_id or NULL when it was never created. */
server_slot_t *server_slot_existing(const cubert_server_t *server, uint64_t stream_id);
/* Destroy every slot (teardown), highest first: its memory goes back on its
 * own stream, then the stream. */
void server_slots_destroy(cubert_server_t *server);

/* ---- server_stream.c: ordering a command on its stream ---- */
/* Before a command on stream_id over bindings[0..count): the multi-stream's
 * plan, the slot (created if needed), the plan's cross-stream waits issued on
 * the driver (and told to the race checker), the plan committed. On failure
 * nothing was enqueued but waits (they only add synchronization). */
cubert_status_t server_order_begin(cubert_server_t *server, uint64_t stream_id,
                                   const cubert_binding_t *bindings, uint32_t count,
                                   server_order_t *out_order, cubert_error_t *out_error);
/* After the command was enqueued on order->slot (and told to the race
 * checker): the plan's pins (retained now) go to the release ring until an
 * event recorded after the command completed. Never fails. */
void server_order_end(cubert_server_t *server, server_order_t *order,
                      const cubert_binding_t *bindings, uint32_t count);
/* Host sync of stream_id's slot (record, event_synchronize: BLOCKS). A slot
 * never created: OK. The driver's codes. */
cubert_status_t server_stream_sync(cubert_server_t *server, uint64_t stream_id,
                                   cubert_error_t *out_error);
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

/* ---- server_record.c ---- */
/* The recording of `stream_id` in progress, or NULL. */
struct cubert_server_recording_t *server_recording_of(const cubert_server_t *server, uint64_t stream_id);
/* Append a checked launch (limits passed) to `recording`. */
cubert_status_t server_record_launch(cubert_server_t *server, struct cubert_server_recording_t *recording,
                                     const cubert_server_launch_t *op, cubert_dim3_t cube_dim,
                                     uint32_t shared_memory_bytes, cubert_error_t *out_error);
/* Append a contiguous write (bytes copied; the caller still owns them). */
cubert_status_t server_record_write(cubert_server_t *server, struct cubert_server_recording_t *recording,
                                    const cubert_copy_descriptor_t *descriptor,
                                    const cubert_bytes_t *bytes, cubert_error_t *out_error);
/* Free the recordings still in progress (server teardown). */
void server_record_destroy_all(cubert_server_t *server);

/* ---- server_memory.c ---- */
cubert_status_t server_memory_create(cubert_server_t *server, server_slot_t *slot, cubert_error_t *out_error);
void server_memory_destroy(server_slot_t *slot);
/* The device address and size in use of a live, bound binding. */
cubert_status_t server_resolve(cubert_server_t *server, const cubert_binding_t *binding,
                               cubert_device_ptr_t *out_address, uint64_t *out_size,
                               cubert_error_t *out_error);

/* ---- server_external.c: memory adopted from another library ---- */
/* The adopted memory of `b` (its location's pool is SERVER_EXTERNAL_POOL):
 * true with *out_address / *out_size (offsets applied; OUT_OF_RANGE in
 * *out_status when they exceed it); false when b is not adopted memory. */
bool server_external_resolve(cubert_server_t *server, const cubert_binding_t *b,
                             cubert_device_ptr_t *out_address, uint64_t *out_size,
                             cubert_status_t *out_status, cubert_error_t *out_error);
/* Give back every adopted memory whose last reference went (all: every one,
 * at teardown): its owner's release goes to the release ring after an event
 * recorded now on its slot's stream. Non-blocking. */
void server_external_poll(cubert_server_t *server, bool all);
/* Free the table (teardown, after the ring was drained). */
void server_external_destroy(cubert_server_t *server);

/* ---- server_gc.c: the one release ring ---- */
cubert_status_t server_gc_create(cubert_server_t *server, uint32_t capacity, cubert_error_t *out_error);
void server_gc_destroy(cubert_server_t *server);
/* Hold the plan's pins of `bindings` (retained here) until `event` (recorded
 * after the command on the plan's slot; owned from now on; NULL: none could be
 * recorded) completed; `race` is the checker's token of that point. Without
 * an event, or when a pin cannot be taken, the server waits for the command
 * first (no allocation). */
void server_gc_retire_command(cubert_server_t *server, const server_order_t *order,
                              cubert_driver_event_t *event, cubert_race_event_t race,
                              const cubert_binding_t *bindings, uint32_t count);
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
void server_race_release(cubert_server_t *server, cubert_race_event_t event);
void server_race_host_sync(cubert_server_t *server, uint32_t slot);
/* `slot` waits for everything enqueued on `origin` so far (a plan's wait). */
void server_race_stream_wait_stream(cubert_server_t *server, uint32_t slot, uint32_t origin);
/* THE release hook: the ring released pins[0..count) held until the point
 * `race` (then released): every pinned buffer that died with this release is
 * checked against that point ("the GC never reclaims memory a stream may still
 * touch"). */
void server_race_released(cubert_server_t *server, cubert_race_event_t race,
                          const server_pin_t *pins, uint32_t count);
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
#define server_race_stream_wait_stream(server, slot, origin) ((void)(server), (void)(slot), (void)(origin))
#define server_race_released(server, race, pins, count) \
  ((void)(server), (void)(race), (void)(pins), (void)(count))
#endif

/* ---- server_comm.c ---- */
/* The held pins of the collectives enqueued so far go to the release ring
 * behind one event recorded on the communication stream now (none held:
 * nothing). Never fails (server_gc_retire_pins). */
void server_comm_release_held(cubert_server_t *server);
void server_comm_shutdown(cubert_server_t *server);
void server_comm_destroy(cubert_server_t *server);

/* ---- copies (server_ops.c) ---- */
/* The 2-D shape of a contiguous or pitched descriptor: rows of `width` bytes
 * `pitch` apart. UNSUPPORTED (IO_UNSUPPORTED_STRIDES) for other strides. */
cubert_status_t server_copy_shape(const cubert_copy_descriptor_t *d, uint64_t *out_width,
                                  uint64_t *out_height, uint64_t *out_pitch,
                                  cubert_error_t *out_error);

#endif /* CUBERT_CORE_SERVER_INTERNAL_H */
