/* SPDX-License-Identifier: MIT */
/*
 * core/server/server.h: the server as the client calls it (not installed).
 *
 * One function per client operation, each taking a small typed record.
 * The client runs each as a device task (core/client), so every function
 * here is called with the device held, on one thread at a time; they never
 * wait for device work except where noted ("blocks"). Every function returns
 * OK or a status with out_error filled (may be NULL); a call that fails
 * enqueues nothing that changes data (cross-stream waits it issued only add
 * ordering). Once the driver reported the device lost, every call returns
 * that error at once.
 *
 * Stream ids are the client's stream id values (slot = value mod
 * max_streams).
 */
#ifndef CUBERT_CORE_SERVER_H
#define CUBERT_CORE_SERVER_H

#include "base/internal.h"
#include "cubert/driver/server.h"
#include "stream/stream.h"
#include "server/server_faults.h"
#include "cubert/cube.h"
#include "cubert/kernel.h"
#include "cubert/memory.h"
#include "memory/handle_table.h"
#include "cubert/driver/device.h"

typedef struct cubert_server_t cubert_server_t;

/* ---- lifecycle (core/client's device creation) ---- */

/* The server over a driver the caller checked (server_check_driver); `table` is
 * borrowed. On failure nothing is left (the driver is not destroyed). */
cubert_status_t cubert__server_create(cubert_allocator_t allocator, const cubert_server_options_t *options,
                                      const cubert_driver_t *driver, void *driver_self,
                                      cubert_handle_table_t *table, cubert_server_t **out_kit,
                                      cubert_error_t *out_error);
/* INVALID_ARGUMENT unless every required primitive is set, optional groups
 * are whole and abi_version matches. */
cubert_status_t cubert__server_check_driver(const cubert_driver_t *driver, cubert_error_t *out_error);
/* The handle completions use to take the device for their drain. */
void cubert__server_set_handle(cubert_server_t *server, cubert_device_handle_t handle);
/* The key of the device's handles (cubert_handle_t.device_key): bindings
 * whose index or key differ are refused with DEVICE_MISMATCH. */
void cubert__server_set_device_key(cubert_server_t *server, uint32_t device_key);
/* Synchronize and destroy everything, the driver last (unless
 * destroy_driver is false: a creation that failed after the server). Blocks. */
void cubert__server_destroy(cubert_server_t *server, bool destroy_driver);
const cubert_device_properties_t *cubert__server_properties(const cubert_server_t *server);
const cubert_driver_t *cubert__server_driver(const cubert_server_t *server, void **out_self);
/* GC polling (cubert_server_collect) and the race checker's state. */
uint32_t cubert__server_gc_collect(cubert_server_t *server);
#if CUBERT_CONFIG_RACE_CHECKER
void cubert__server_race_state(const cubert_server_t *server, cubert_race_counters_t *out_counters,
                               cubert_race_report_t *out_last, bool *out_has_last);
void cubert__server_set_race_seed(cubert_server_t *server, uint64_t seed);
#else /* compiled out: no checker (counters 0, no last report, a seed changes nothing) */
#define cubert__server_race_state(server, out_counters, out_last, out_has_last)                    \
  ((out_counters) ? (void)cubert_memset((out_counters), 0, sizeof *(out_counters)) : (void)0,      \
   (out_last) ? (void)(*(out_has_last) = false) : (void)0)
#define cubert__server_set_race_seed(server, seed) ((void)0)
#endif

/* ---- memory and transfers ---- */

/* create: reserve `size` bytes on `stream` and bind them to `memory` (a new
 * client handle, not yet backed), then enqueue count writes (as write). The
 * bytes move to the server: released after their copy, or at once on failure. */
typedef struct cubert_server_create_t {
  uint64_t stream;
  const cubert_handle_t *memory;
  uint64_t size;
  const cubert_copy_descriptor_t *descriptors;
  cubert_bytes_t *bytes;
  size_t count;
} cubert_server_create_t;
cubert_status_t cubert__server_create_memory(cubert_server_t *server, const cubert_server_create_t *op,
                                             cubert_error_t *out_error);

/* reserve: `size` bytes on `stream`'s pools under a new memory id that
 * holds one handle reference (the caller's) and is owned by the pools: one
 * allocation without a second id to bind (create of one buffer, empty).
 * OK with *out_memory; the memory manager's codes; the lost record. */
cubert_status_t cubert__server_reserve_memory(cubert_server_t *server, uint64_t stream, uint64_t size,
                                              cubert_memory_id_t *out_memory,
                                              cubert_error_t *out_error);

/* write: each bytes[i] (contiguous, bytes[i].size <= the destination) into
 * descriptors[i] (contiguous or pitched), in stream order. Validates every
 * item first; ownership of the bytes moves to the server (also on failure).
 * `borrowed`: the bytes are the caller's for this call only (release NULL;
 * a driver with CUBERT_DRIVER_BORROWS_UPLOADS reads them before its copy
 * returns: cubert__server_can_borrow says when). */
typedef struct cubert_server_write_t {
  uint64_t stream;
  const cubert_copy_descriptor_t *descriptors;
  cubert_bytes_t *bytes;
  size_t count;
  bool borrowed;
  bool upload; /* the upload of a create: enqueued at once, also on a recording stream */
} cubert_server_write_t;

/* Whether an upload of `size` bytes may read the caller's memory in place:
 * the driver finishes its copies before returning (SYNCHRONOUS), or reads
 * borrowed sources of that size at once (BORROWS_UPLOADS). Pure. */
bool cubert__server_can_borrow(const cubert_server_t *server, uint64_t size);
cubert_status_t cubert__server_write(cubert_server_t *server, const cubert_server_write_t *op,
                                     cubert_error_t *out_error);

/* read: copy each item into dsts[i] and arm `completion` (waited on without
 * the device). Items are handles (their bytes in use) or descriptors
 * (contiguous or pitched tensors, unpadded result); exactly one is set. */
typedef struct cubert_server_read_t {
  uint64_t stream;
  const cubert_handle_t *handles;
  const cubert_copy_descriptor_t *descriptors;
  size_t count;
  void *const *dsts;
  const uint64_t *dst_sizes;
  cubert_completion_t *completion;
} cubert_server_read_t;
cubert_status_t cubert__server_read(cubert_server_t *server, const cubert_server_read_t *op,
                                    cubert_error_t *out_error);

/* The resource of a handle, both streams synchronized first (blocks). */
cubert_status_t cubert__server_get_resource(cubert_server_t *server, uint64_t stream,
                                            const cubert_binding_t *binding,
                                            cubert_resource_t *out_resource, cubert_error_t *out_error);

/* The driver stream of `stream`'s slot (made if it was not yet), for a
 * driver's calls that order work with code outside cubert; the device must be
 * held (an exclusive section). The lost record when the server is lost. */
cubert_status_t cubert__server_driver_stream(cubert_server_t *server, uint64_t stream,
                                             cubert_driver_stream_t **out_stream,
                                             cubert_error_t *out_error);

/* ---- memory shared with other libraries (server_external.c, docs/interop.md) ---- */

/* How work of another party is ordered against this device's. */
typedef enum cubert_server_order_e {
  CUBERT_SERVER_ORDER_HOST = 0,   /* the host: share blocks until the pending writes ran */
  CUBERT_SERVER_ORDER_NONE = 1,   /* nothing: the other party orders itself */
  CUBERT_SERVER_ORDER_STREAM = 2, /* a stream id of this device (`value`) */
  CUBERT_SERVER_ORDER_NATIVE = 3, /* another library's stream (`value`: the driver's
                                     stream_order_native; UNSUPPORTED without it) */
  CUBERT_SERVER_ORDER_COMPLETION = 4, /* share: a completion armed after the writes */
  CUBERT_SERVER_ORDER_FORCE_32BIT_ = 0x7FFFFFFF
} cubert_server_order_t;

/* import: adopt `size` bytes at `pointer` (another library's memory on this
 * device) as a new memory id the caller holds one handle reference of,
 * located on `stream`'s slot; `owner.release` is called once, after the id's
 * last reference went and the slot's work completed (or at teardown).
 * `order` / `value`: the producer's work this stream's later work waits for
 * (HOST / NONE: nothing; STREAM: a stream id; NATIVE: a native stream). On
 * failure nothing is adopted and owner is untouched (the caller still owns
 * the memory). UNSUPPORTED (the driver has no memory_import / no
 * stream_order_native), the driver's codes, RESOURCE_EXHAUSTED. */
typedef struct cubert_server_import_t {
  uint64_t stream;
  uint64_t pointer;
  uint64_t size;
  uint32_t order; /* cubert_server_order_t, not COMPLETION */
  uint64_t value;
  cubert_bytes_t owner;
} cubert_server_import_t;
cubert_status_t cubert__server_import_memory(cubert_server_t *server, const cubert_server_import_t *op,
                                             cubert_memory_id_t *out_memory, cubert_error_t *out_error);

/* share: the resource of `binding` with its pending writes (on its stream
 * and on `stream`) ordered before the consumer `order` names: HOST (blocks:
 * both streams synchronized), STREAM (a stream id of this device waits),
 * NATIVE (another library's stream waits), COMPLETION (`completion` armed
 * after them; the caller waits on it), NONE. */
typedef struct cubert_server_share_t {
  uint64_t stream;
  const cubert_binding_t *binding;
  uint32_t order; /* cubert_server_order_t */
  uint64_t value;
  cubert_completion_t *completion;
} cubert_server_share_t;
cubert_status_t cubert__server_share(cubert_server_t *server, const cubert_server_share_t *op,
                                     cubert_resource_t *out_resource, cubert_error_t *out_error);
/* The driver's memory_device ({0, 0} without it). Pure. */
void cubert__server_memory_device(const cubert_server_t *server, int32_t *out_device_type,
                                  int32_t *out_device_id);

/* ---- launch, flush, sync ---- */

typedef struct cubert_server_launch_t {
  uint64_t stream;
  const cubert_kernel_t *kernel;
  const cubert_cube_count_t *count;
  const cubert_launch_arguments_t *args;
  cubert_execution_mode_t execution;
} cubert_server_launch_t;
cubert_status_t cubert__server_launch(cubert_server_t *server, const cubert_server_launch_t *op,
                                      cubert_error_t *out_error);
/* The sharded launch (issue 27, core/device/device_shards.h): run with only
 * the shard of cubert__server_shard_of(op->stream) entered, concurrently
 * with the same call on other shards (never with anything else). Takes the
 * launches whose whole path is the stream's own: the server was made with
 * concurrent_launch, the stream's slot exists, no recording, no race checker,
 * no adopted memory, a static count, an UNCHECKED or CHECKED execution, every
 * buffer bound on op->stream, the arguments and limits pass. false: declined,
 * nothing happened (the caller runs cubert__server_launch with the device
 * held, which answers those cases). true: *out_status is the launch's (as
 * cubert__server_launch's); an UNAVAILABLE one must then be passed to
 * cubert__server_note_lost with the device held. */
bool cubert__server_launch_sharded(cubert_server_t *server, const cubert_server_launch_t *op,
                                   cubert_status_t *out_status, cubert_error_t *out_error);
/* A reserve (cubert__server_reserve_memory) with only the shard of `stream`
 * entered, as the sharded launch: false (nothing happened) without
 * concurrent_launch, on a lost device or a slot never made; true:
 * *out_status is the reserve's (UNAVAILABLE: pass the error to
 * cubert__server_note_lost with the device held). The release ring is not
 * polled here (the next call with the device held does). */
bool cubert__server_reserve_sharded(cubert_server_t *server, uint64_t stream, uint64_t size,
                                    cubert_memory_id_t *out_memory, cubert_status_t *out_status,
                                    cubert_error_t *out_error);
/* The shard of `stream` (its slot index); UINT32_MAX: the server was made
 * without concurrent_launch (no sharded launch). */
uint32_t cubert__server_shard_of(const cubert_server_t *server, uint64_t stream);
/* A sharded launch's UNAVAILABLE: the device is lost from now on (the device held). */
void cubert__server_note_lost(cubert_server_t *server, const cubert_error_t *error);

/* ---- recorded launch sequences (server_record.c, cubert/record.h) ----
 * While a stream records, cubert__server_launch and cubert__server_write on it
 * append to the recording instead of enqueuing; sync, read, flush,
 * get_resource, profile_start and collectives on it are refused
 * (FAILED_PRECONDITION). */
typedef struct cubert_server_recording_t cubert_server_recording_t;
cubert_status_t cubert__server_record_begin(cubert_server_t *server, uint64_t stream,
                                            cubert_error_t *out_error);
cubert_status_t cubert__server_record_end(cubert_server_t *server, uint64_t stream,
                                          cubert_server_recording_t **out_recording,
                                          cubert_error_t *out_error);
cubert_status_t cubert__server_replay(cubert_server_t *server, uint64_t stream,
                                      cubert_server_recording_t *recording, cubert_error_t *out_error);
cubert_status_t cubert__server_recording_set_buffer(cubert_server_t *server,
                                                    cubert_server_recording_t *recording,
                                                    uint32_t slot, const cubert_handle_t *handle,
                                                    cubert_error_t *out_error);
/* `args`: a checked view (client_arguments_view), buffer_count 0. */
cubert_status_t cubert__server_recording_set_scalars(cubert_server_recording_t *recording,
                                                     uint32_t launch,
                                                     const cubert_launch_arguments_t *args,
                                                     cubert_error_t *out_error);
cubert_status_t cubert__server_recording_find_buffer(const cubert_server_recording_t *recording,
                                                     const cubert_handle_t *handle,
                                                     uint32_t *out_slot, cubert_error_t *out_error);
void cubert__server_recording_counts(const cubert_server_recording_t *recording,
                                     uint32_t *out_launches, uint32_t *out_copies,
                                     uint32_t *out_buffers);
/* Waits for the replays that read the recording's host bytes (BLOCKS), then frees it. */
void cubert__server_recording_destroy(cubert_server_t *server, cubert_server_recording_t *recording);
/* Refused while `stream` records: FAILED_PRECONDITION naming `what`; OK otherwise. */
cubert_status_t cubert__server_not_recording(const cubert_server_t *server, uint64_t stream,
                                             const char *what, cubert_error_t *out_error);

/* The stream's queued errors (SERVER_UNHEALTHY), drained. */
cubert_status_t cubert__server_flush(cubert_server_t *server, uint64_t stream, cubert_error_t *out_error);
/* The wait of a completion the server armed (its vtable's): DEADLINE_EXCEEDED
 * leaves it pending; otherwise it is finished (vtable NULL). Blocks. */
cubert_status_t cubert__server_completion_wait(cubert_completion_t *completion, uint64_t timeout_ns);
/* Arm `completion`: done when everything enqueued on the stream so far ran;
 * its status holds the stream's errors then. */
cubert_status_t cubert__server_sync(cubert_server_t *server, uint64_t stream,
                                    cubert_completion_t *completion, cubert_error_t *out_error);

/* ---- memory management ---- */
cubert_status_t cubert__server_memory_usage(cubert_server_t *server, cubert_memory_usage_t *out_usage,
                                            cubert_error_t *out_error);
cubert_status_t cubert__server_memory_cleanup(cubert_server_t *server, cubert_error_t *out_error);
cubert_status_t cubert__server_allocation_mode(cubert_server_t *server, uint64_t stream,
                                               cubert_memory_allocation_mode_t mode,
                                               cubert_error_t *out_error);
/* Staging buffers (see cubert_client_reserve_staging). UNSUPPORTED when the
 * driver has none. */
#if CUBERT_CONFIG_STAGING
cubert_status_t cubert__server_staging(cubert_server_t *server, const uint64_t *sizes, size_t count,
                                       cubert_bytes_t *out_bytes, cubert_error_t *out_error);
#else /* compiled out (server_staging.c is not built): the server has none */
#define cubert__server_staging(server, sizes, count, out_bytes, out_error)               \
  ((void)(server), (void)(sizes), (void)(count), (void)(out_bytes),                     \
   cubert_error_set((out_error), CUBERT_ERROR_COMPILED_OUT, NULL, 0,                    \
                    "staging buffers (CUBERT_CONFIG_STAGING=0)"))
#endif

/* ---- profiling tokens (blocks: both sync the stream) ---- */
#if CUBERT_CONFIG_PROFILING
cubert_status_t cubert__server_profile_start(cubert_server_t *server, uint64_t stream,
                                             cubert_profiling_token_t *out_token,
                                             cubert_error_t *out_error);
cubert_status_t cubert__server_profile_end(cubert_server_t *server, uint64_t stream,
                                           cubert_profiling_token_t token,
                                           cubert_profile_duration_t *out_duration,
                                           cubert_error_t *out_error);
bool cubert__server_has_clock(const cubert_server_t *server);
#else /* compiled out (server_profile.c is not built): a token is UNSUPPORTED, COMPILED_OUT */
#define cubert__server_profile_start(server, stream, out_token, out_error)              \
  ((void)(server), (void)(stream), (void)(out_token),                                  \
   cubert_error_set((out_error), CUBERT_ERROR_COMPILED_OUT, NULL, 0,                   \
                    "profiling (CUBERT_CONFIG_PROFILING=0)"))
#define cubert__server_profile_end(server, stream, token, out_duration, out_error) \
  ((void)(token), (void)(out_duration), cubert__server_profile_start(server, stream, NULL, out_error))
#endif

/* ---- collectives (UNSUPPORTED without the driver's primitives) ---- */
cubert_status_t cubert__server_comm_init(cubert_server_t *server, const uint32_t *device_indices,
                                         size_t count, cubert_error_t *out_error);
typedef struct cubert_server_collective_t {
  uint64_t stream;
  uint32_t kind; /* cubert_collective_kind_t */
  uint32_t dtype;
  uint32_t op;   /* ALL_REDUCE */
  uint32_t peer; /* SEND / RECV */
  const cubert_binding_t *src; /* ALL_REDUCE, SEND */
  const cubert_binding_t *dst; /* ALL_REDUCE; RECV: a new handle, reserved and bound first */
  const uint32_t *devices;     /* the communicator's device set */
  size_t device_count;
} cubert_server_collective_t;
cubert_status_t cubert__server_collective(cubert_server_t *server, const cubert_server_collective_t *op,
                                          cubert_error_t *out_error);
cubert_status_t cubert__server_sync_collective(cubert_server_t *server, uint64_t stream,
                                               cubert_error_t *out_error);
bool cubert__server_has_collectives(const cubert_server_t *server);

#endif /* CUBERT_CORE_SERVER_H */
