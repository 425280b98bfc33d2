/*
 * cubert/server.h: the server contract (CubeCL's ComputeServer and
 * ServerCommunication, spec 2.2-2.3) and the value types that cross it.
 *
 * A server is a single-threaded actor: the device handle (cubert/device.h)
 * serializes every call, so an implementation needs no lock of its own for
 * the calls below (its own worker threads are its business). Calls that
 * enqueue work (initialize_memory, write, launch, ...) validate what they can
 * at once and return an error for bad input with no side effect; failures
 * that happen later, while the work runs, are queued on the stream and
 * returned together as SERVER_UNHEALTHY at the next flush / sync / read
 * (spec 6.6).
 *
 * Streams are 64-bit stream id values; a server maps them to slots
 * (value mod max_streams).
 */
#ifndef CUBERT_SERVER_H
#define CUBERT_SERVER_H

#include "cubert/allocator.h"
#include "cubert/error.h"
#include "cubert/handle.h"
#include "cubert/memory.h"
#include "cubert/properties.h"

CUBERT_EXTERN_C_BEGIN

struct cubert_kernel_t;       /* cubert/kernel.h */
struct cubert_cube_count_t;   /* cubert/cube.h */

/* CopyDescriptor (spec 2.1): a binding plus the shape/strides (in elements)
 * and element size of the tensor it holds. */
typedef struct cubert_copy_descriptor_t {
  cubert_binding_t binding;
  uint32_t rank;
  uint64_t shape[CUBERT_MAX_RANK];
  uint64_t strides[CUBERT_MAX_RANK];
  uint64_t elem_size;
} cubert_copy_descriptor_t;

/* Where host bytes live (CubeCL's AllocationProperty). */
typedef enum cubert_allocation_property_e {
  CUBERT_ALLOCATION_NATIVE = 0, /* ordinary host memory */
  CUBERT_ALLOCATION_PINNED = 1, /* page-locked staging memory */
  CUBERT_ALLOCATION_FILE = 2,   /* memory-mapped file */
  CUBERT_ALLOCATION_OTHER = 3
} cubert_allocation_property_t;

/* Host bytes whose ownership can move: `release(owner, data, size)` is called
 * exactly once by whoever owns them last (NULL release: borrowed, nothing to
 * do). */
typedef struct cubert_bytes_t {
  void *data;
  uint64_t size;
  cubert_allocation_property_t property;
  void *owner;
  void (*release)(void *owner, void *data, uint64_t size);
} cubert_bytes_t;

/* A storage resource: host pointer (CPU) or device address (CUDA). */
typedef struct cubert_resource_t {
  void *ptr;
  uint64_t address;
  uint64_t size;
} cubert_resource_t;

/* How kernel accessors treat out-of-bounds indices (CubeCL ExecutionMode). */
typedef enum cubert_execution_mode_e {
  CUBERT_EXECUTION_CHECKED = 0,   /* OOB reads give 0, OOB writes are dropped */
  CUBERT_EXECUTION_VALIDATE = 1,  /* as checked, and an error is queued */
  CUBERT_EXECUTION_UNCHECKED = 2  /* raw accesses */
} cubert_execution_mode_t;

/* LaunchMode: Skip compiles and validates but touches no buffer. */
typedef enum cubert_launch_mode_e {
  CUBERT_LAUNCH_EXECUTE = 0,
  CUBERT_LAUNCH_SKIP = 1
} cubert_launch_mode_t;

/* Kernel arguments as the client passes them: buffer bindings (borrowed for
 * the call; the server retains what it keeps) and scalar slots of 8 bytes
 * each (the layout of cubert_kernel_args_t.scalars in cubert/kernel.h). */
typedef struct cubert_launch_arguments_t {
  const cubert_binding_t *buffers;
  uint32_t buffer_count;
  uint32_t scalar_count;
  const uint64_t *scalars;
} cubert_launch_arguments_t;

/* ProfilingToken (spec 7). */
typedef struct cubert_profiling_token_t {
  uint64_t id;
} cubert_profiling_token_t;

/* A completed profile: host nanoseconds between two stream syncs. */
typedef struct cubert_profile_duration_t {
  uint64_t start_ns;
  uint64_t end_ns;
} cubert_profile_duration_t;

/* ---- completions ------------------------------------------------------------
 * An asynchronous operation (read_async, sync) fills a caller-owned
 * completion. The server sets it up; the caller waits on it once, then the
 * completion is finished (its status and error record are final). */
typedef struct cubert_completion_t cubert_completion_t;

typedef struct cubert_completion_vtable_t {
  /* Block until done or until timeout_ns elapsed (UINT64_MAX: forever).
   * DEADLINE_EXCEEDED on timeout (the completion stays pending and may be
   * waited on again). */
  cubert_status_t (*wait)(cubert_completion_t *completion, uint64_t timeout_ns);
} cubert_completion_vtable_t;

struct cubert_completion_t {
  const cubert_completion_vtable_t *vtable; /* NULL: completed synchronously */
  void *impl[4];                            /* the server's bookkeeping */
  cubert_status_t status;                   /* final once done */
  cubert_error_t error;                     /* details of a failure */
};

/* Wait for a completion and return its status (copying its error record into
 * out_error when not OK). A completion prepared synchronously returns at once.
 * INVALID_ARGUMENT for NULL. DEADLINE_EXCEEDED when timeout_ns passes first.
 * Blocks (in the hosted layer). Not thread-safe on one completion. */
CUBERT_API cubert_status_t cubert_completion_wait(cubert_completion_t *completion,
                                                  uint64_t timeout_ns, cubert_error_t *out_error);

/* Mark a completion as already finished with `status` / `error` (NULL: none). */
CUBERT_API void cubert_completion_set_done(cubert_completion_t *completion, cubert_status_t status,
                                           const cubert_error_t *error);

/* ---- the server vtable ------------------------------------------------------
 * Every function returns OK or a status with out_error filled (out_error may
 * be NULL). Functions a backend does not support return UNSUPPORTED with
 * kind IO_UNSUPPORTED_IO_OPERATION (staging) or SERVER_GENERIC. */
typedef struct cubert_server_t cubert_server_t;

typedef struct cubert_server_vtable_t {
  const char *name;
  bool comm_enabled; /* SERVER_COMM_ENABLED */
  void (*destroy)(cubert_server_t *server);
  cubert_status_t (*properties)(cubert_server_t *server, cubert_device_properties_t *out);
  /* Reserve `size` bytes on the stream's memory and bind them to `memory`
   * (created by the client, not yet backed). */
  cubert_status_t (*initialize_memory)(cubert_server_t *server, const cubert_handle_t *memory,
                                       uint64_t size, uint64_t stream, cubert_error_t *out_error);
  /* Host staging buffers of the given sizes (pinned where supported). */
  cubert_status_t (*staging)(cubert_server_t *server, const uint64_t *sizes, size_t count,
                             cubert_bytes_t *out_bytes, uint64_t stream,
                             cubert_error_t *out_error);
  /* Copy each descriptor's bytes (contiguous, unpadded) into dsts[i] of
   * dst_sizes[i] bytes, after the work the data depends on; `completion`
   * finishes when every copy is done. The destinations must stay valid until
   * then. */
  cubert_status_t (*read)(cubert_server_t *server, const cubert_copy_descriptor_t *descriptors,
                          void *const *dsts, const uint64_t *dst_sizes, size_t count,
                          uint64_t stream, cubert_completion_t *completion,
                          cubert_error_t *out_error);
  /* Enqueue host->device copies. Ownership of each data[i] moves to the
   * server (released after the copy, also on failure). */
  cubert_status_t (*write)(cubert_server_t *server, const cubert_copy_descriptor_t *descriptors,
                           cubert_bytes_t *data, size_t count, uint64_t stream,
                           cubert_error_t *out_error);
  /* completion finishes when all work submitted to the stream has finished;
   * its status reports the stream's queued errors (SERVER_UNHEALTHY). */
  cubert_status_t (*sync)(cubert_server_t *server, uint64_t stream,
                          cubert_completion_t *completion, cubert_error_t *out_error);
  cubert_status_t (*get_resource)(cubert_server_t *server, const cubert_binding_t *binding,
                                  uint64_t stream, cubert_resource_t *out_resource,
                                  cubert_error_t *out_error);
  cubert_status_t (*launch)(cubert_server_t *server, const struct cubert_kernel_t *kernel,
                            const struct cubert_cube_count_t *count,
                            const cubert_launch_arguments_t *args,
                            cubert_execution_mode_t execution, cubert_launch_mode_t mode,
                            uint64_t stream, cubert_error_t *out_error);
  /* Submit outstanding work; drain the stream's queued errors. */
  cubert_status_t (*flush)(cubert_server_t *server, uint64_t stream, cubert_error_t *out_error);
  cubert_status_t (*memory_usage)(cubert_server_t *server, uint64_t stream,
                                  cubert_memory_usage_t *out_usage,
                                  cubert_error_t *out_error);
  cubert_status_t (*memory_cleanup)(cubert_server_t *server, uint64_t stream,
                                    cubert_error_t *out_error);
  cubert_status_t (*start_profile)(cubert_server_t *server, uint64_t stream,
                                   cubert_profiling_token_t *out_token,
                                   cubert_error_t *out_error);
  cubert_status_t (*end_profile)(cubert_server_t *server, uint64_t stream,
                                 cubert_profiling_token_t token,
                                 cubert_profile_duration_t *out_duration,
                                 cubert_error_t *out_error);
  cubert_status_t (*allocation_mode)(cubert_server_t *server,
                                     cubert_memory_allocation_mode_t mode,
                                     uint64_t stream, cubert_error_t *out_error);
  /* ServerCommunication (spec 2.3, 8). dtype: cubert_comm_dtype_t, op:
   * cubert_reduce_operation_t (cubert/comm.h); devices by index id (same
   * type as this server's). comm_init joins the communicator of the device
   * set (idempotent). all_reduce / send / recv validate, then enqueue on the
   * server's communication stream after the stream's prior work and return
   * without waiting for the peers (they must not block the device); recv
   * reserves and binds the client-created handle first. sync_collective makes
   * the stream wait for every collective enqueued so far. */
  cubert_status_t (*comm_init)(cubert_server_t *server, const uint32_t *device_indices,
                               size_t count, cubert_error_t *out_error);
  cubert_status_t (*all_reduce)(cubert_server_t *server, const cubert_binding_t *src,
                                const cubert_binding_t *dst, uint32_t dtype, uint64_t stream,
                                uint32_t op, const uint32_t *device_indices, size_t count,
                                cubert_error_t *out_error);
  cubert_status_t (*send)(cubert_server_t *server, const cubert_copy_descriptor_t *descriptor,
                          uint32_t dtype, uint64_t stream, uint32_t dst_device,
                          cubert_error_t *out_error);
  cubert_status_t (*recv)(cubert_server_t *server, const cubert_handle_t *handle, uint32_t dtype,
                          uint64_t stream, uint32_t src_device, cubert_error_t *out_error);
  cubert_status_t (*sync_collective)(cubert_server_t *server, uint64_t stream,
                                     cubert_error_t *out_error);
} cubert_server_vtable_t;

/* Servers embed this header first. */
struct cubert_server_t {
  const cubert_server_vtable_t *vtable;
};

CUBERT_EXTERN_C_END

#endif /* CUBERT_SERVER_H */
