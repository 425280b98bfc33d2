/* SPDX-License-Identifier: MIT */
/*
 * cubert/backend/device.h: the device handle (CubeCL's
 * DeviceHandle: submit / submit_blocking / exclusive / flush_queue) and the
 * device registry, for servers. Device ids and the lock type: cubert/device.h.
 *
 * A device handle serializes access to one server. Two implementations:
 *  - direct (core): every call takes an injected recursive lock and runs the
 *    task on the calling thread. Blocking by construction.
 *  - runner thread (hosted layer, declared below, defined in backend-cpu/host):
 *    one thread per device runs
 *    tasks from a bounded queue; submit copies the task and returns at once.
 * Ordering guarantees, for both: tasks from one thread run in the
 * order they were submitted; a blocking call observes every earlier
 * submission from the same thread; a call made from inside a task on the
 * device (the runner thread, or the lock owner) runs inline. No allocation
 * per submit.
 */
#ifndef CUBERT_BACKEND_DEVICE_H
#define CUBERT_BACKEND_DEVICE_H

#include "cubert/allocator.h"
#include "cubert/config.h"
#include "cubert/device.h"
#include "cubert/error.h"

CUBERT_EXTERN_C_BEGIN

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
/* A device instance number for a device being created: 1..65535, a new one
 * at each call (wrapping after 65,535 calls). Handles carry it
 * (cubert_handle_t.device_key) so that a device refuses handles of an
 * earlier device created under the same id. Thread-safe, lock-free. */
CUBERT_API uint32_t cubert_device_registry_next_instance(void);
/* Number of registered devices with this type id (all types when type_id is
 * UINT16_MAX), and their ids in registration order (up to capacity). */
CUBERT_API size_t cubert_device_registry_enumerate(uint16_t type_id, cubert_device_id_t *out_ids,
                                                   size_t capacity);

/* ---- runner-thread device handle (CubeCL's channel handle; hosted layer) --
 *
 * A cubert_device_handle_t whose tasks run on one
 * dedicated thread per handle, from a bounded queue of fixed-size records:
 *  - submit copies fn + payload (<= CUBERT_DEVICE_TASK_PAYLOAD bytes) into the
 *    queue and returns; it does not allocate. When the queue is full it
 *    waits (spins briefly, then blocks) until the runner frees a slot.
 *  - submit_blocking / exclusive enqueue a record that lives on the caller's
 *    stack (payload / user used in place) and block until it ran; exclusive
 *    returns fn's status. fn runs on the runner thread with the device held.
 *  - Re-entrancy: submit, submit_blocking and exclusive called from the
 *    runner thread itself (inside a task) run inline at once.
 *  - Tasks run as soon as they are queued; flush_queue only makes sure the
 *    runner is awake (a queued task runs by the next flush_queue or
 *    blocking call at the latest). is_blocking returns false.
 *  - Ordering: one FIFO; each thread's tasks run in submission order, and a
 *    blocking call observes every earlier submission of the same thread.
 *  - Each task runs under a stream override (cubert_stream_id_executes) set
 *    to the submitter's cubert_stream_id_current() at submit time, so server
 *    code on the runner sees the submitter's stream.
 *  - Once destroy began (from any thread), submit / submit_blocking /
 *    exclusive from other threads return UNAVAILABLE; flush_queue returns
 *    OK. destroy runs every task accepted before (a task the last client
 *    left queued still runs), then joins the thread and frees the handle.
 *    Calls from inside a task still run inline during that drain. destroy
 *    called from inside one of the handle's own tasks returns at once; the
 *    runner then drains the queue and frees the handle itself. Calling
 *    destroy twice, or any call after destroy returned, is undefined.
 * All vtable calls are thread-safe.
 */

/* Queue capacity used when 0 is requested, and the largest accepted. */
#define CUBERT_DEVICE_RUNNER_QUEUE_DEFAULT 64u
#define CUBERT_DEVICE_RUNNER_QUEUE_MAX 65536u

/* Create a runner-thread handle over `context` (borrowed: it must outlive
 * the handle; every task receives it). queue_capacity: tasks the queue
 * holds (0: the default; rounded up to a power of two, at least 2). Starts
 * the runner thread and waits until it runs (blocks briefly). The handle
 * keeps `allocator` and frees itself with it on destroy.
 * INVALID_ARGUMENT (kind INVALID_ARGUMENT, the reason names the argument)
 * for NULL out_handle or queue_capacity > CUBERT_DEVICE_RUNNER_QUEUE_MAX;
 * RESOURCE_EXHAUSTED (kind
 * HOST_OUT_OF_MEMORY) when an allocation, a mutex / condition variable or
 * the thread cannot be created; INTERNAL (kind SERVER_GENERIC) for other
 * thread-creation errors. On failure nothing is left behind and out_error
 * (may be NULL) holds the record.
 * Thread-safe. */
CUBERT_API cubert_status_t cubert_device_handle_runner_create(cubert_allocator_t allocator,
                                                              void *context,
                                                              uint32_t queue_capacity,
                                                              cubert_device_handle_t *out_handle,
                                                              cubert_error_t *out_error);

CUBERT_EXTERN_C_END

#endif /* CUBERT_BACKEND_DEVICE_H */
