/* SPDX-License-Identifier: MIT */
/*
 * cubert/driver/server.h: the server, for driver authors
 * (docs/writing-a-driver.md, docs/architecture.md).
 *
 * A driver supplies a driver (cubert/driver/driver.h) and creates its
 * devices with cubert_server_client_create: the server is the server behind the
 * client API. It owns, for every driver alike:
 *  - the stream slots (stream id mod max_streams), their cursors, the
 *    cross-stream waits and pins of the MultiStream (core/stream/stream.h);
 *  - per-slot memory: a memory manager over the pools of core/memory, whose
 *    storage calls the driver's memory_alloc / stream-ordered memory_free;
 *  - the GC: pinned bindings, the host bytes of writes and staging buffers
 *    retire once an event recorded after their last use completed (polled
 *    with event_query at each call, bounded by a blocking
 *    event_synchronize when too many are pending);
 *  - the error queues (SERVER_UNHEALTHY at flush / sync / read), the sticky
 *    device-lost state, profiling tokens, staging and the bookkeeping of
 *    collectives, and the race checker (core/check/race.h) when asked for.
 *
 * The server is freestanding (core/server): what needs an OS comes in as hooks
 * (the device lock, a clock, the stream-id source), given by the OS layer
 * (cubert/os.h) or by an embedded host.
 *
 * Errors in the driver headers: the calls of this header and the driver
 * table take `cubert_error_t *out_error` last, as the user API does; the
 * hot-path primitives below the server (the handle table and memory ids in
 * handle_table.h, the multi-stream in stream.h, the race checker's program
 * events in race.h, checked arithmetic in arith.h) return a status only, and
 * their caller writes the record (include/cubert/cubert.h states the rule).
 * So do a few lookups whose only failures are a NULL argument or a miss: the
 * device registry and cubert_device_handle_direct_create (device.h),
 * cubert_server_driver_of, cubert__memory_manager_report / _release_pools
 * (memory.h), cubert__profiler_error (profiler.h),
 * cubert__multi_stream_error_push.
 */
#ifndef CUBERT_DRIVER_SERVER_H
#define CUBERT_DRIVER_SERVER_H

#include "cubert/driver/device.h"
#include "cubert/driver/driver.h"
#include "cubert/client.h"
#include "cubert/profile.h"

CUBERT_EXTERN_C_BEGIN

/* Pending GC entries (pinned bindings, host bytes) kept per device when
 * options.gc_capacity is 0; one more entry first waits for the oldest. */
#define CUBERT_SERVER_DEFAULT_GC_CAPACITY 256u
/* Stream slots when options.max_streams is 0. */
#define CUBERT_SERVER_DEFAULT_MAX_STREAMS 16u
/* Communicators one device may join. */
#define CUBERT_SERVER_MAX_COMMUNICATORS 16u

struct cubert_server_faults_t; /* core/server/server_faults.h (tests only) */

/* Makes the device handle of a new device (e.g. the runner-thread handle of
 * cubert/os.h) over `context`, which every task receives. */
typedef cubert_status_t (*cubert_server_handle_factory_fn_t)(void *self, cubert_allocator_t allocator,
                                                             void *context,
                                                             cubert_device_handle_t *out_handle);

/* Observation points of the server, for the host's log and timeline trace
 * (os/os_obs.h). */
typedef enum cubert_server_observe_e {
  /* a GC poll released entries: a = released, b = still pending */
  CUBERT_SERVER_OBSERVE_GC_RELEASE = 1,
  /* the GC waited for its oldest event (ring full, drain): a = pending */
  CUBERT_SERVER_OBSERVE_GC_WAIT = 2,
  CUBERT_SERVER_OBSERVE_FORCE_32BIT_ = 0x7FFFFFFF /* 4 bytes everywhere */
} cubert_server_observe_t;

/* The host's observer: at each point the server reads *enabled (a plain load
 * and one branch) and calls event(self, point, a, b) when it is non-zero,
 * on the thread that holds the device, with the device held (event must not
 * call the client). enabled or event NULL: never called. Copied at create;
 * *enabled and self must outlive the device. */
typedef struct cubert_server_observer_t {
  const uint32_t *enabled;
  void (*event)(void *self, cubert_server_observe_t point, uint64_t a, uint64_t b);
  void *self;
} cubert_server_observer_t;

typedef struct cubert_server_options_t {
  cubert_device_id_t device;  /* registered under this id */
  uint32_t max_streams;       /* stream slots, 1..255; 0: 16 */
  uint32_t max_handles;       /* handle table capacity; 0: 1 << 20 */
  uint32_t gc_capacity;       /* pending GC entries; 0: CUBERT_SERVER_DEFAULT_GC_CAPACITY */
  /* Memory layouts of tensors. kind CONTIGUOUS with mem_alignment 0: the
   * device's memory alignment (a zeroed policy is contiguous). */
  cubert_layout_policy_t layout_policy;
  cubert_bounds_check_mode_t bounds_check;
  /* Non-zero: run the race checker (core/check/race.h); reports go to race_sink
   * (called with the device held, on the thread that issued the action; it
   * must not call the client) and are counted (cubert_client_race_counters). */
  uint32_t race_check;
  cubert_race_sink_t race_sink;
  /* DETERMINISTIC drivers: the seed reported with race reports (0: none). */
  uint64_t race_seed;
  /* ---- host hooks ---- */
  /* The device lock (recursive; borrowed until host_release). Used to make
   * the direct device handle (cubert/driver/device.h) unless handle_factory is set.
   * A single-threaded host may pass functions that do nothing. */
  cubert_lock_t lock;
  cubert_server_handle_factory_fn_t handle_factory; /* NULL: a direct handle over `lock` */
  void *handle_factory_self;
  /* The profiling clock; now_ns NULL: no profiling (the token calls and
   * timed kernel profiling return UNSUPPORTED). */
  cubert_profile_clock_t clock;
  /* The calling thread's stream id (cubert_client_config_t); NULL: 0. */
  cubert_stream_source_fn_t stream_source;
  void *stream_source_self;
  /* Called once when the device is gone, after the driver's destroy (e.g.
   * to free the lock). May be NULL. */
  void (*host_release)(void *self);
  void *host_release_self;
  /* TEST ONLY: fault injection (NULL: none). Borrowed for the call. */
  const struct cubert_server_faults_t *faults;
  /* The pools of every stream slot's memory manager (cubert/memory.h;
   * CubeCL's MemoryConfiguration). Zeroed: the SubSlices preset. A CUSTOM
   * list is copied at creation (borrowed for the call only); checked then
   * with cubert_memory_configuration_pools (its errors fail the creation). */
  cubert_memory_configuration_t memory_config;
  /* The host's observer (log, trace); zeroed: none. */
  cubert_server_observer_t observer;
  /* Non-zero: the driver's launch may be called by several threads at once,
   * each on a different stream (one thread per stream at a time; no other
   * primitive runs meanwhile). The client then enqueues a launch whose
   * buffers were all bound on the launching stream without the device lock
   * (a per-stream shard of it, core/device/device_shards.h), so threads on
   * different streams do not serialize; everything else, and those launches
   * while the race checker or a recording is on, still takes the device
   * lock. Needs the direct device handle (handle_factory NULL). 0: every
   * call takes the device lock. */
  uint32_t concurrent_launch;
  /* With concurrent_launch: called by the thread that holds the device lock
   * while it waits for a launch to leave its stream's shard (e.g.
   * sched_yield); NULL: it spins. */
  void (*yield)(void);
} cubert_server_options_t;

/* Zeros: 16 streams, defaults everywhere, no lock (set one), no clock. NULL
 * is a no-op. */
CUBERT_API void cubert_server_options_initialize(cubert_server_options_t *options);

/* Copy what every device shares (cubert_device_options_t, the first member of
 * each driver's options) into `options`: the device id {type_id, device->index},
 * max_streams (0: left as it is), max_handles, bounds_check, race_check,
 * race_sink and the test-only faults. The other fields are left as they are
 * (call cubert_server_options_initialize first). NULL: no-op. Pure. */
CUBERT_API void cubert_server_options_from_device(cubert_server_options_t *options,
                                                  uint16_t type_id,
                                                  const cubert_device_options_t *device);

/* Create a device: the server over `driver` / `driver_self`, its handle table,
 * its device handle, and a first client; register it under options->device
 * (cubert_client_load finds it). Ownership of driver_self moves to the server
 * on success (driver->destroy runs when the last client is released, then
 * host_release); on failure the caller keeps it and must destroy it.
 * Checks the table: INVALID_ARGUMENT for a NULL or incomplete driver (a
 * required primitive missing, half of an optional group, a wrong
 * abi_version), NULL lock functions without a handle factory, bad options;
 * ALREADY_EXISTS (kind SERVICE_CREATION) when the device id is registered;
 * OUT_OF_RANGE when the registry is full; RESOURCE_EXHAUSTED; the driver's
 * codes. Nothing is left registered or allocated on failure. Thread-safe;
 * blocks briefly. */
CUBERT_API cubert_status_t cubert_server_client_create(cubert_allocator_t allocator,
                                                       const cubert_server_options_t *options,
                                                       const cubert_driver_t *driver, void *driver_self,
                                                       cubert_client_t **out_client,
                                                       cubert_error_t *out_error);

/* The driver of a client's device (for driver-specific calls such as the
 * CPU driver's simulation controls). INVALID_ARGUMENT for NULL. Pure. */
CUBERT_API cubert_status_t cubert_server_driver_of(const cubert_client_t *client,
                                                   const cubert_driver_t **out_driver,
                                                   void **out_self);

/* Release what the GC holds whose event completed (polling, never blocks).
 * Takes the device. Returns the number of entries released; 0 for NULL. */
CUBERT_API uint32_t cubert_server_collect(cubert_client_t *client);

CUBERT_EXTERN_C_END

#endif /* CUBERT_DRIVER_SERVER_H */
