/*
 * cubert/device.h: device ids, the device handle (CubeCL's DeviceHandle:
 * submit / submit_blocking / exclusive / flush_queue) and the device registry.
 *
 * A device handle serializes access to one server. Two implementations:
 *  - direct (core): every call takes an injected recursive lock and runs the
 *    task on the calling thread. Blocking by construction.
 *  - runner thread (hosted layer, cubert/host.h): one thread per device runs
 *    tasks from a bounded queue; submit copies the task and returns at once.
 * Ordering guarantees, for both: tasks from one thread run in the
 * order they were submitted; a blocking call observes every earlier
 * submission from the same thread; a call made from inside a task on the
 * device (the runner thread, or the lock owner) runs inline. No allocation
 * per submit.
 */
#ifndef CUBERT_DEVICE_H
#define CUBERT_DEVICE_H

#include "cubert/allocator.h"
#include "cubert/config.h"
#include "cubert/error.h"

CUBERT_EXTERN_C_BEGIN

/* CubeCL's DeviceId: a backend type id and an index. */
typedef struct cubert_device_id_t {
  uint16_t type_id;
  uint32_t index_id;
} cubert_device_id_t;

/* Bytes a non-blocking task may carry inline (copied at submit). */
#define CUBERT_DEVICE_TASK_PAYLOAD 192

/* A task: runs with the handle's context (usually the server) and its payload. */
typedef void (*cubert_device_task_fn_t)(void *context, void *payload);
/* An exclusive section: runs with the device held; returns a status. */
typedef cubert_status_t (*cubert_device_exclusive_fn_t)(void *user);

typedef struct cubert_device_handle_vtable_t {
  /* Queue fn(context, copy of payload[0..size)). size <= CUBERT_DEVICE_TASK_PAYLOAD
   * else INVALID_ARGUMENT. May run later (at the next blocking call or
   * flush_queue) or at once. UNAVAILABLE after shutdown. Thread-safe. */
  cubert_status_t (*submit)(void *self, cubert_device_task_fn_t fn, const void *payload,
                            size_t size);
  /* Run fn(context, payload) and return once it ran; payload is used in place
   * (it may live on the caller's stack). Thread-safe; blocks. */
  cubert_status_t (*submit_blocking)(void *self, cubert_device_task_fn_t fn, void *payload);
  /* Run fn(user) with exclusive access to the device; device calls made from
   * inside fn run inline. Returns fn's status. Thread-safe; blocks. */
  cubert_status_t (*exclusive)(void *self, cubert_device_exclusive_fn_t fn, void *user);
  /* Make every queued task runnable now (no-op for direct handles). */
  cubert_status_t (*flush_queue)(void *self);
  /* True for handles that run tasks on the caller's thread (direct). */
  bool (*is_blocking)(const void *self);
  /* Drain queued tasks, stop, free. */
  void (*destroy)(void *self);
} cubert_device_handle_vtable_t;

typedef struct cubert_device_handle_t {
  const cubert_device_handle_vtable_t *vtable;
  void *self;
} cubert_device_handle_t;

/* An injected recursive lock (the hosted layer provides a pthread one; a
 * single-threaded host may pass lock/unlock functions that do nothing). */
typedef struct cubert_lock_t {
  void *self;
  void (*lock)(void *self);
  void (*unlock)(void *self);
} cubert_lock_t;

/* Create a direct handle over `context` (borrowed; it must outlive the
 * handle) guarded by `lock` (borrowed; must be recursive). INVALID_ARGUMENT
 * for NULL out/lock functions; RESOURCE_EXHAUSTED. */
CUBERT_API cubert_status_t cubert_device_handle_direct_create(cubert_allocator_t allocator,
                                                              void *context, cubert_lock_t lock,
                                                              cubert_device_handle_t *out_handle);

/* ---- device registry (process-global, fixed size, lock-free) ------------- */

/* Entries of the registry: CUBERT_CONFIG_DEVICE_REGISTRY_CAPACITY (cubert/config.h; 64
 * unless the library is built with another value: a program must be compiled with the
 * library's value). */
#define CUBERT_DEVICE_REGISTRY_CAPACITY CUBERT_CONFIG_DEVICE_REGISTRY_CAPACITY

/* Register `client` (opaque pointer) for `device`. ALREADY_EXISTS if one is
 * registered; OUT_OF_RANGE when the registry is full. Thread-safe. */
CUBERT_API cubert_status_t cubert_device_registry_insert(cubert_device_id_t device, void *client);
/* The registered pointer, or NOT_FOUND. Thread-safe. */
CUBERT_API cubert_status_t cubert_device_registry_lookup(cubert_device_id_t device, void **out_client);
/* Remove the entry if it is `client`. NOT_FOUND otherwise. Thread-safe. */
CUBERT_API cubert_status_t cubert_device_registry_remove(cubert_device_id_t device, void *client);
/* Number of registered devices with this type id (all types when type_id is
 * UINT16_MAX), and their ids in registration order (up to capacity). */
CUBERT_API size_t cubert_device_registry_enumerate(uint16_t type_id, cubert_device_id_t *out_ids,
                                                   size_t capacity);

CUBERT_EXTERN_C_END

#endif /* CUBERT_DEVICE_H */
