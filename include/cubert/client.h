/* SPDX-License-Identifier: MIT */
/*
 * cubert/client.h: the compute client (CubeCL's ComputeClient).
 *
 * A client talks to one device's server through the device handle. Client
 * objects are cheap: several may share one device (cubert_client_clone), each
 * with its own pinned stream (cubert_client_set_stream). Without a pinned
 * stream every call uses the calling thread's current stream, as given by the
 * stream source of the device's configuration (per-thread ids in the hosted
 * layer, 0 in a freestanding build).
 *
 * Handles are created on the client before their memory exists:
 * create/empty calls return at once with a handle; the server reserves and
 * fills the memory in stream order. Failures of that later work (e.g. out of
 * memory) are queued on the stream and returned as SERVER_UNHEALTHY by the
 * next flush / sync / read on that stream.
 *
 * Thread-safety: every function may be called from several threads at once
 * on the same device; one client object must not be pinned (set_stream) while
 * another thread uses it. Blocking: noted per function; "blocks" means it
 * waits for the device (and for stream work where said).
 */
#ifndef CUBERT_CLIENT_H
#define CUBERT_CLIENT_H

#include "cubert/comm.h"
#include "cubert/device.h"
#include "cubert/handle.h"
#include "cubert/layout.h"
#include "cubert/memory.h"
#include "cubert/properties.h"
#include "cubert/profile.h"
#include "cubert/race.h"

CUBERT_EXTERN_C_BEGIN

struct cubert_cube_count_t;
struct cubert_kernel_t;

typedef struct cubert_client_t cubert_client_t;

/* Returns the calling thread's current stream id value. */
typedef uint64_t (*cubert_stream_source_fn_t)(void *self);

/* Compilation check mode (CubeCL BoundsCheckMode): how launch_unchecked runs. */
typedef enum cubert_bounds_check_mode_e {
  CUBERT_BOUNDS_CHECK_AUTO = 0,    /* launch_unchecked runs Unchecked */
  CUBERT_BOUNDS_CHECK_ENFORCE = 1, /* launch_unchecked runs Checked */
  CUBERT_BOUNDS_CHECK_VALIDATE = 2, /* launch_unchecked runs Validate */
  /* Every launch (launch and launch_unchecked) runs RACECHECK: Validate plus
   * the kernel race checker on the CPU drivers (cubert/kernel_race.h; CUDA:
   * Validate). A test setting, not for speed. */
  CUBERT_BOUNDS_CHECK_RACECHECK = 3,
  CUBERT_BOUNDS_CHECK_MODE_FORCE_32BIT_ = 0x7FFFFFFF /* 4 bytes everywhere */
} cubert_bounds_check_mode_t;

/* ---- values that cross the client API ---------------------------------------- */

/* CopyDescriptor: a binding plus the shape/strides (in elements)
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
  CUBERT_ALLOCATION_OTHER = 3,
  CUBERT_ALLOCATION_PROPERTY_FORCE_32BIT_ = 0x7FFFFFFF /* 4 bytes everywhere */
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

/* A handle's memory as the device sees it: a host pointer (CPU drivers;
 * NULL when the device memory is not host-addressable), the device address,
 * and the size in use. */
typedef struct cubert_resource_t {
  void *ptr;
  uint64_t address;
  uint64_t size;
} cubert_resource_t;

/* ---- launch arguments ---------------------------------------------------------
 * What cubert_client_launch takes: the buffers (by handle), the scalars (by
 * type) and, optionally, the launch-time shape. This is the client-side
 * struct; cubert_kernel_args_t (cubert/kernel.h) is what a kernel receives
 * and is a different type: passing it to cubert_client_launch does not
 * compile (tests/build/check_launch_arguments.sh).
 *
 * Build it with the functions below:
 *
 *   cubert_launch_arguments_t args;
 *   cubert_launch_arguments_initialize(&args);           // empty, default shape
 *   cubert_launch_arguments_set_buffer(&args, 0, &a);    // slot 0: handle a
 *   cubert_launch_arguments_set_buffer(&args, 1, &out);
 *   cubert_launch_arguments_set_f32(&args, 0, 2.5f);     // scalar slot 0
 *   cubert_launch_arguments_set_cube_dim(&args, 96, 1, 1);   // optional
 *   cubert_client_launch(client, &kernel, &count, &args, &err);
 *
 * Initialize first: a struct that was not (or was zeroed with memset) is
 * refused by the setters and the launch (INVALID_ARGUMENT). Every slot below
 * buffer_count / scalar_count must have been set (a gap is refused at
 * launch: INVALID_ARGUMENT). A setter given a bad slot or a NULL
 * handle returns INVALID_ARGUMENT, leaves the struct's slots unchanged and
 * marks it failed: a launch with it is refused with the setter's reason, so
 * a chain of setters may be checked once, at the launch.
 *
 * Fields (read them; write them only through the functions, except the
 * low-level form below):
 *   buffers, buffer_count, scalars, scalar_count
 *       the slots. With the builder `buffers` and `scalars` stay NULL and the
 *       slots live in the struct itself (buffer_slots / scalar_slots), so a
 *       built struct may be copied by assignment. The low-level form: after
 *       initialize, point `buffers` at the caller's array of bindings and
 *       `scalars` at 8-byte slots (cubert_kernel_args_t's layout) and set the
 *       counts; the arrays are then borrowed for the call.
 *   cube_dim     units per cube of this launch; {0, 0, 0}: the descriptor's
 *                (cubert_kernel_t.cube_dim). Up to the device's limits.
 *   shared_memory_bytes / has_shared_memory_bytes
 *                dynamic shared memory per cube of this launch; without it,
 *                the descriptor's shared_memory_bytes.
 * Plain data, no allocation; buffers are borrowed for the launch call (the
 * device retains what it keeps). Not thread-safe on one struct. */
typedef enum cubert_scalar_type_e {
  CUBERT_SCALAR_NONE = 0, /* slot not set */
  CUBERT_SCALAR_U32 = 1,
  CUBERT_SCALAR_I32 = 2,
  CUBERT_SCALAR_U64 = 3,
  CUBERT_SCALAR_I64 = 4,
  CUBERT_SCALAR_F32 = 5,
  CUBERT_SCALAR_F64 = 6,
  CUBERT_SCALAR_TYPE_FORCE_32BIT_ = 0x7FFFFFFF /* 4 bytes everywhere */
} cubert_scalar_type_t;

/* What cubert_launch_arguments_initialize writes in `initialized`: a struct
 * without it (never initialized, or zeroed with memset) is refused by the
 * setters and the launch (INVALID_ARGUMENT), never read as garbage. */
#define CUBERT_LAUNCH_ARGUMENTS_INITIALIZED 0x4C41524Eu
#define CUBERT_LAUNCH_MAX_BUFFERS 16 /* = CUBERT_KERNEL_MAX_BUFFERS */
#define CUBERT_LAUNCH_MAX_SCALARS 16 /* = CUBERT_KERNEL_MAX_SCALARS */

typedef struct cubert_launch_arguments_t {
  const cubert_binding_t *buffers; /* NULL: buffer_slots */
  uint32_t buffer_count;
  uint32_t scalar_count;
  const uint64_t *scalars;         /* NULL: scalar_slots */
  cubert_dim3_t cube_dim;          /* {0,0,0}: the descriptor's */
  uint32_t has_shared_memory_bytes;
  uint64_t shared_memory_bytes;
  uint32_t buffer_set_mask;        /* bit i: buffer slot i was set */
  uint32_t scalar_set_mask;        /* bit j: scalar slot j was set */
  uint32_t initialized;            /* CUBERT_LAUNCH_ARGUMENTS_INITIALIZED after initialize */
  uint32_t failed;                 /* a setter failed: the launch is refused */
  uint32_t failed_slot;            /* its slot */
  const char *failed_reason;       /* its reason (static text) */
  uint8_t scalar_types[CUBERT_LAUNCH_MAX_SCALARS]; /* cubert_scalar_type_t */
  cubert_binding_t buffer_slots[CUBERT_LAUNCH_MAX_BUFFERS];
  uint64_t scalar_slots[CUBERT_LAUNCH_MAX_SCALARS];
  /* Names this struct for the type check of cubert_client_launch (a
   * cubert_kernel_args_t has no such member). Never read. */
  uint32_t cubert_launch_arguments_tag_;
} cubert_launch_arguments_t;

/* Empty arguments, the descriptor's shape. NULL: nothing. Pure. */
CUBERT_API void cubert_launch_arguments_initialize(cubert_launch_arguments_t *args);
/* Buffer slot `slot` (< CUBERT_LAUNCH_MAX_BUFFERS) is `handle` (copied, not
 * retained: keep it alive until the launch call returned); buffer_count grows
 * to cover it. INVALID_ARGUMENT: NULL args or handle, args not initialized
 * (nothing written), slot out of range, or the struct uses the low-level form
 * (`buffers` set). Pure. */
CUBERT_API cubert_status_t cubert_launch_arguments_set_buffer(cubert_launch_arguments_t *args,
                                                              uint32_t slot,
                                                              const cubert_handle_t *handle);
/* Scalar slot `slot` (< CUBERT_LAUNCH_MAX_SCALARS) holds `value`, read in the
 * kernel by the CUBERT_SCALAR_<TYPE> of the same type (u32/i32/f32 in the low
 * 32 bits, f32/f64 as their IEEE bits); scalar_count grows to cover it.
 * INVALID_ARGUMENT: NULL args, slot out of range, low-level form (`scalars`
 * set). Pure. */
CUBERT_API cubert_status_t cubert_launch_arguments_set_u32(cubert_launch_arguments_t *args,
                                                           uint32_t slot, uint32_t value);
CUBERT_API cubert_status_t cubert_launch_arguments_set_i32(cubert_launch_arguments_t *args,
                                                           uint32_t slot, int32_t value);
CUBERT_API cubert_status_t cubert_launch_arguments_set_u64(cubert_launch_arguments_t *args,
                                                           uint32_t slot, uint64_t value);
CUBERT_API cubert_status_t cubert_launch_arguments_set_i64(cubert_launch_arguments_t *args,
                                                           uint32_t slot, int64_t value);
CUBERT_API cubert_status_t cubert_launch_arguments_set_f32(cubert_launch_arguments_t *args,
                                                           uint32_t slot, float value);
CUBERT_API cubert_status_t cubert_launch_arguments_set_f64(cubert_launch_arguments_t *args,
                                                           uint32_t slot, double value);
/* Launch-time cube size (CubeCL's CubeDim given at launch): x*y*z units per
 * cube instead of the descriptor's. The launch checks it against the
 * device's limits (max_cube_dim per axis, max_units_per_cube; the CPU
 * drivers allow CUBERT_KERNEL_MAX_UNITS): a larger one is queued on the
 * stream as LAUNCH_TOO_MANY_RESOURCES (RESOURCE_CUBE_DIM / RESOURCE_UNITS),
 * as a descriptor's would be. INVALID_ARGUMENT: NULL, or a zero component.
 * Pure. */
CUBERT_API cubert_status_t cubert_launch_arguments_set_cube_dim(cubert_launch_arguments_t *args,
                                                                uint32_t x, uint32_t y,
                                                                uint32_t z);
/* Launch-time dynamic shared memory per cube (CUBERT_SHARED_DYNAMIC),
 * instead of the descriptor's shared_memory_bytes; 0 is allowed. Checked at
 * launch against max_shared_memory_size (RESOURCE_SHARED_MEMORY, queued).
 * INVALID_ARGUMENT: NULL, or above 2^32 - 1. Pure. */
CUBERT_API cubert_status_t cubert_launch_arguments_set_shared_memory_bytes(
    cubert_launch_arguments_t *args, uint64_t bytes);

/* ---- completions ------------------------------------------------------------
 * An asynchronous operation (read_async, sync_async) fills a caller-owned
 * completion. The device sets it up; the caller waits on it once, then the
 * completion is finished (its status and error record are final).
 * A completion that is still pending when the call returns (vtable not NULL)
 * keeps its device alive: waiting on it after the device's last client was
 * released is allowed and works (the reads land, the stream's errors are
 * returned); the device stays registered until that wait, and the last such
 * wait tears it down (it then blocks for the teardown). A pending completion
 * must therefore be waited on until it returns something other than
 * DEADLINE_EXCEEDED: one never waited on keeps its device (a leak). A
 * finished completion refers to nothing and may be waited on again. */
typedef struct cubert_completion_t cubert_completion_t;

typedef struct cubert_completion_vtable_t {
  /* Block until done or until timeout_ns elapsed (UINT64_MAX: forever).
   * DEADLINE_EXCEEDED on timeout (the completion stays pending and may be
   * waited on again). */
  cubert_status_t (*wait)(cubert_completion_t *completion, uint64_t timeout_ns);
} cubert_completion_vtable_t;

struct cubert_completion_t {
  const cubert_completion_vtable_t *vtable; /* NULL: completed synchronously */
  void *impl[4];                            /* the device's bookkeeping */
  cubert_status_t status;                   /* final once done */
  cubert_error_t error;                     /* details of a failure */
};

/* Wait for a completion and return its status (copying its error record into
 * out_error when not OK). A completion prepared synchronously returns at once.
 * INVALID_ARGUMENT for NULL (the record filled). DEADLINE_EXCEEDED when
 * timeout_ns passes first. Valid after the device's last client was released
 * (the completion kept the device: see above).
 * Blocks (the device's event wait; a deterministic CPU device runs its queued
 * work here). Not thread-safe on one completion. */
CUBERT_API cubert_status_t cubert_completion_wait(cubert_completion_t *completion,
                                                  uint64_t timeout_ns, cubert_error_t *out_error);

/* A tensor's memory and strides (CubeCL MemoryLayout). The handle must be
 * released with cubert_client_handle_release. */
typedef struct cubert_memory_layout_t {
  cubert_handle_t memory;
  uint32_t rank;
  uint64_t strides[CUBERT_MAX_RANK];
} cubert_memory_layout_t;

/* ---- lifecycle ------------------------------------------------------------- */

/* Devices are created by their driver: cubert_cpu_client_create
 * (cubert/cpu.h), cubert_inline_client_create (cubert/inline.h), or
 * cubert_server_client_create (cubert/driver/server.h) for a new driver. */

/* A new client of a registered device (CubeCL's ComputeClient::load).
 * NOT_FOUND (kind IO_NOT_FOUND) when no device is registered under `device`;
 * UNAVAILABLE (kind DEVICE_LOST) when its last client is being released;
 * INVALID_ARGUMENT for a NULL out_client; RESOURCE_EXHAUSTED. Thread-safe,
 * non-blocking. */
CUBERT_API cubert_status_t cubert_client_load(cubert_device_id_t device,
                                              cubert_client_t **out_client,
                                              cubert_error_t *out_error);
/* Another client of the same device, with the same pinned stream (CubeCL's
 * Clone). The codes of cubert_client_load. Thread-safe, non-blocking. */
CUBERT_API cubert_status_t cubert_client_clone(const cubert_client_t *client,
                                               cubert_client_t **out_client,
                                               cubert_error_t *out_error);
/* Release a client. The last client of a device deregisters it, waits for its
 * streams, and destroys server, device handle and handle table; a pending
 * completion (read_async, sync_async) delays that to its wait. NULL: no-op.
 * The client object must not be in use by another thread (cubert/cubert.h:
 * each thread gets its own clone). Blocks when it tears the device down. */
CUBERT_API void cubert_client_release(cubert_client_t *client);

/* Pin this client to a stream (CubeCL's set_stream); `cubert_client_unpin`
 * returns to the thread's current stream. Not thread-safe on one client. */
CUBERT_API void cubert_client_set_stream(cubert_client_t *client, uint64_t stream);
CUBERT_API void cubert_client_unpin(cubert_client_t *client);
/* The stream this client uses now (pinned, or the calling thread's). */
CUBERT_API uint64_t cubert_client_stream(const cubert_client_t *client);
CUBERT_API cubert_device_id_t cubert_client_device(const cubert_client_t *client);
/* The device's properties (copied). Pure, thread-safe. */
CUBERT_API void cubert_client_properties(const cubert_client_t *client,
                                         cubert_device_properties_t *out_properties);
/* The device's feature mask (CUBERT_FEATURE_*, cubert/properties.h). Pure. */
CUBERT_API uint64_t cubert_client_features(const cubert_client_t *client);

/* ---- handles ---------------------------------------------------------------- */

/* Release / clone / offset a handle of this client's device (the semantics
 * of cubert_handle_* in core/memory/handle_table.h: clone retains another
 * reference, offset makes a sub-handle trimmed by offset_start / offset_end
 * more bytes, each result is released once). Records: INVALID_ARGUMENT (a
 * NULL argument), DEVICE_MISMATCH (a handle of another device),
 * INVALID_HANDLE (a dead handle: released already, or stale), OUT_OF_RANGE
 * (offset: the offsets exceed the size; fields total start, size), OVERFLOW.
 * Nothing changes on failure. Thread-safe, non-blocking. */
CUBERT_API cubert_status_t cubert_client_handle_release(cubert_client_t *client,
                                                        const cubert_handle_t *handle,
                                                        cubert_error_t *out_error);
CUBERT_API cubert_status_t cubert_client_handle_clone(cubert_client_t *client,
                                                      const cubert_handle_t *handle,
                                                      cubert_handle_t *out_handle,
                                                      cubert_error_t *out_error);
CUBERT_API cubert_status_t cubert_client_handle_offset(cubert_client_t *client,
                                                       const cubert_handle_t *handle,
                                                       uint64_t offset_start, uint64_t offset_end,
                                                       cubert_handle_t *out_handle,
                                                       cubert_error_t *out_error);

/* ---- allocation / upload ----------------------------------------
 * All return at once (non-blocking at the stream level). The data is copied
 * (the `_bytes` form takes ownership instead) before the call returns. */

/* create / create_from_slice: contiguous, shape [size], elem 1. */
CUBERT_API cubert_status_t cubert_client_create_from_slice(cubert_client_t *client,
                                                           const void *data, uint64_t size,
                                                           cubert_handle_t *out_handle,
                                                           cubert_error_t *out_error);
/* create(Bytes): ownership of `bytes` moves to the runtime on success AND on
 * failure (its release function is called). A property outside
 * cubert_allocation_property_t: INVALID_ARGUMENT (field[0]: the value). */
CUBERT_API cubert_status_t cubert_client_create_from_bytes(cubert_client_t *client,
                                                           cubert_bytes_t bytes,
                                                           cubert_handle_t *out_handle,
                                                           cubert_error_t *out_error);
/* create_tensor(_from_slice): Optimized strategy (pitched on pitched devices).
 * `data` holds product(shape)*elem_size contiguous bytes. NULL data, one rule
 * for every create (as create_from_slice(NULL, 0)): allowed exactly when the
 * tensor has no bytes (a zero dimension or elem_size 0), else INVALID_ARGUMENT;
 * for create_tensors, per entry of `data` (the array itself is required). */
CUBERT_API cubert_status_t cubert_client_create_tensor_from_slice(
    cubert_client_t *client, const void *data, uint32_t rank, const uint64_t *shape,
    uint64_t elem_size, cubert_memory_layout_t *out_layout, cubert_error_t *out_error);
/* create_tensors(_from_slices): every tensor in ONE allocation. */
CUBERT_API cubert_status_t cubert_client_create_tensors_from_slices(
    cubert_client_t *client, const cubert_layout_descriptor_t *descriptors,
    const void *const *data, size_t count, cubert_memory_layout_t *out_layouts,
    cubert_error_t *out_error);
/* empty / empty_tensor / empty_tensors: as above without data. Contents of
 * fresh memory are zero on the CPU server; reused memory is not cleared. */
CUBERT_API cubert_status_t cubert_client_empty(cubert_client_t *client, uint64_t size,
                                               cubert_handle_t *out_handle,
                                               cubert_error_t *out_error);
CUBERT_API cubert_status_t cubert_client_empty_tensor(cubert_client_t *client, uint32_t rank,
                                                      const uint64_t *shape, uint64_t elem_size,
                                                      cubert_memory_layout_t *out_layout,
                                                      cubert_error_t *out_error);
CUBERT_API cubert_status_t cubert_client_empty_tensors(cubert_client_t *client,
                                                       const cubert_layout_descriptor_t *descriptors,
                                                       size_t count,
                                                       cubert_memory_layout_t *out_layouts,
                                                       cubert_error_t *out_error);
/* write: overwrite an existing allocation in place (shape [size], elem 1). */
CUBERT_API cubert_status_t cubert_client_write(cubert_client_t *client,
                                               const cubert_handle_t *handle, const void *data,
                                               uint64_t size, cubert_error_t *out_error);

/* ---- staging ------------------------------------------------------
 * Host buffers are cubert_bytes_t (above): data, size, allocation
 * property (NATIVE, PINNED, FILE, OTHER) and an owner-supplied release
 * function; whoever owns a buffer last calls release(owner, data, size) once
 * (NULL release: nothing to do). */

/* reserve_staging(sizes): `count` host buffers of the given sizes, ready to
 * be filled and passed to create_bytes / write. The server's staging buffers
 * (PINNED; the CPU server's are "simulated pinned" host memory from the
 * injected allocator) when it has them; when the server refuses (no staging,
 * exhausted), plain NATIVE buffers from the client's allocator instead, so
 * the caller always gets buffers of the requested sizes. Contents are zero.
 * A size of 0 gives {NULL, 0} with no release. The caller owns the buffers
 * (release each). count 0: OK, nothing written. INVALID_ARGUMENT for NULL
 * pointers (count > 0); RESOURCE_EXHAUSTED (HOST_OUT_OF_MEMORY) when even the
 * fallback fails (nothing is left allocated). Blocks (device round trip). */
CUBERT_API cubert_status_t cubert_client_reserve_staging(cubert_client_t *client,
                                                         const uint64_t *sizes, size_t count,
                                                         cubert_bytes_t *out_bytes,
                                                         cubert_error_t *out_error);

/* staging(bytes, file_only): marks buffers as staging buffers. Selects
 * FILE buffers always, NATIVE and OTHER ones only when file_only is false,
 * PINNED ones never; asks the server (blocking) for staging buffers of the
 * same sizes, copies each selected buffer into its staging buffer, releases
 * the original and replaces it in bytes[i]. When the server refuses, nothing
 * changes and OK is returned (CubeCL ignores the error). Returns OK;
 * INVALID_ARGUMENT for a NULL client, a NULL bytes with count > 0, a buffer
 * with a size and NULL data, or more than 64 buffers (nothing changes).
 * Blocks. */
CUBERT_API cubert_status_t cubert_client_staging(cubert_client_t *client, cubert_bytes_t *bytes,
                                                 size_t count, bool file_only,
                                                 cubert_error_t *out_error);

/* create_from_slice_pinned: as cubert_client_create_from_slice, copying `data` straight
 * into a staging buffer (reserve_staging) that is then moved to the server
 * (one host copy instead of two). Same handle and errors as create. */
CUBERT_API cubert_status_t cubert_client_create_from_slice_pinned(cubert_client_t *client,
                                                                  const void *data, uint64_t size,
                                                                  cubert_handle_t *out_handle,
                                                                  cubert_error_t *out_error);

/* create_tensors_from_slices_pinned: as cubert_client_create_tensors_from_slices (one
 * shared allocation), each data[i] (product(shape)*elem_size bytes) copied
 * into a staging buffer first. Same results and errors as create_tensors. */
CUBERT_API cubert_status_t cubert_client_create_tensors_from_slices_pinned(
    cubert_client_t *client, const cubert_layout_descriptor_t *descriptors,
    const void *const *data, size_t count, cubert_memory_layout_t *out_layouts,
    cubert_error_t *out_error);

/* ---- reads ---------------------------------------------------------
 * A read copies each handle's size_in_used bytes into dsts[i]
 * (dst_sizes[i] must be at least that: OUT_OF_RANGE otherwise, nothing read).
 * `_async` returns once the read is issued; the destinations must stay valid
 * until the completion is waited on. The others block until the data is on
 * the host. Errors queued on the stream are returned (SERVER_UNHEALTHY). */
CUBERT_API cubert_status_t cubert_client_read(cubert_client_t *client,
                                              const cubert_handle_t *handles, size_t count,
                                              void *const *dsts, const uint64_t *dst_sizes,
                                              cubert_error_t *out_error);
CUBERT_API cubert_status_t cubert_client_read_async(cubert_client_t *client,
                                                    const cubert_handle_t *handles, size_t count,
                                                    void *const *dsts, const uint64_t *dst_sizes,
                                                    cubert_completion_t *out_completion,
                                                    cubert_error_t *out_error);
CUBERT_API cubert_status_t cubert_client_read_one(cubert_client_t *client,
                                                  const cubert_handle_t *handle, void *dst,
                                                  uint64_t dst_size, cubert_error_t *out_error);
/* Tensor reads: the result is the unpadded contiguous product(shape)*elem_size
 * bytes; strides must be contiguous or pitched (UNSUPPORTED otherwise). */
CUBERT_API cubert_status_t cubert_client_read_tensor(cubert_client_t *client,
                                                     const cubert_copy_descriptor_t *descriptors,
                                                     size_t count, void *const *dsts,
                                                     const uint64_t *dst_sizes,
                                                     cubert_error_t *out_error);
CUBERT_API cubert_status_t cubert_client_read_tensor_async(
    cubert_client_t *client, const cubert_copy_descriptor_t *descriptors, size_t count,
    void *const *dsts, const uint64_t *dst_sizes, cubert_completion_t *out_completion,
    cubert_error_t *out_error);
CUBERT_API cubert_status_t cubert_client_read_one_tensor_async(
    cubert_client_t *client, const cubert_copy_descriptor_t *descriptor, void *dst,
    uint64_t dst_size, cubert_completion_t *out_completion, cubert_error_t *out_error);
/* The driver resource of a handle (blocks). */
CUBERT_API cubert_status_t cubert_client_get_resource(cubert_client_t *client,
                                                      const cubert_handle_t *handle,
                                                      cubert_resource_t *out_resource,
                                                      cubert_error_t *out_error);

/* ---- launch, flush, sync ------------------------------------------ */

/* Launch in Checked mode (CHECKED: an out-of-bounds load gives 0, a store
 * is dropped; full in-bounds cubes run unchecked, docs/kernels.md). A static
 * count with a zero component returns OK at once with nothing submitted. Bad
 * arguments (NULL kernel, a buffer of another device, a dead handle, a slot
 * below the counts never set, a failed setter, fewer slots than the kernel
 * reads) return an error with nothing submitted; failures while running
 * (resource limits of the shape, faults) are queued on the stream.
 * Non-blocking. `args` must be a cubert_launch_arguments_t: the macro below
 * makes any other struct (cubert_kernel_args_t) a compile error; a literal
 * NULL needs the function's name in parentheses.
 * Ownership: `count` and `args` (the arrays, the scalars' values) are read
 * before the call returns; `kernel` is borrowed until the launch ran (the
 * drivers keep the pointer: a descriptor is normally `static const`; one on
 * the stack must outlive a sync of the stream). Checked before anything is
 * read or submitted, with the record filled (kind in parentheses):
 *   - buffer_count above CUBERT_KERNEL_MAX_BUFFERS or scalar_count above
 *     CUBERT_KERNEL_MAX_SCALARS: INVALID_ARGUMENT (SERVER_VALIDATION), checked
 *     before either array is read;
 *   - a cube count kind other than STATIC / DYNAMIC: INVALID_ARGUMENT;
 *   - a buffer of another device: DEVICE_MISMATCH; a released one, or one
 *     never issued (a zeroed handle: device_key 0): INVALID_HANDLE;
 *   - a buffer whose byte offset (handle offset_start) is not a multiple of
 *     the slot's kernel->buffer_align (0: CUBERT_KERNEL_DEFAULT_BUFFER_ALIGN),
 *     or a buffer_align that is not a power of two up to 64: INVALID_ARGUMENT
 *     (SERVER_VALIDATION; fields: slot, offset, alignment). docs/kernels.md,
 *     "Alignment". */
CUBERT_API cubert_status_t(cubert_client_launch)(cubert_client_t *client,
                                                 const struct cubert_kernel_t *kernel,
                                                 const struct cubert_cube_count_t *count,
                                                 const cubert_launch_arguments_t *args,
                                                 cubert_error_t *out_error);
/* Launch with the execution mode the bounds-check mode maps to (Auto:
 * Unchecked, Enforce: Checked, Validate: Validate). */
CUBERT_API cubert_status_t(cubert_client_launch_unchecked)(cubert_client_t *client,
                                                           const struct cubert_kernel_t *kernel,
                                                           const struct cubert_cube_count_t *count,
                                                           const cubert_launch_arguments_t *args,
                                                           cubert_error_t *out_error);
/* The type check: `args` must point at a struct with the tag member only
 * cubert_launch_arguments_t has (not evaluated; `args` is evaluated once). */
#define CUBERT_LAUNCH_ARGUMENTS_CHECK_(args)                                                 \
  ((void)sizeof((args)->cubert_launch_arguments_tag_), (args))
#define cubert_client_launch(client, kernel, count, args, out_error)                         \
  (cubert_client_launch)((client), (kernel), (count), CUBERT_LAUNCH_ARGUMENTS_CHECK_(args),   \
                         (out_error))
#define cubert_client_launch_unchecked(client, kernel, count, args, out_error)               \
  (cubert_client_launch_unchecked)((client), (kernel), (count),                              \
                                   CUBERT_LAUNCH_ARGUMENTS_CHECK_(args), (out_error))
/* Submit outstanding work; returns the stream's queued errors. Blocks briefly. */
CUBERT_API cubert_status_t cubert_client_flush(cubert_client_t *client, cubert_error_t *out_error);
/* Wait for every operation submitted to this client's stream. Blocks. */
CUBERT_API cubert_status_t cubert_client_sync(cubert_client_t *client, cubert_error_t *out_error);
CUBERT_API cubert_status_t cubert_client_sync_async(cubert_client_t *client,
                                                    cubert_completion_t *out_completion,
                                                    cubert_error_t *out_error);

/* ---- exclusive sections and profiling ----------------------------- */

/* A user function run with the device held. It returns a status and may fill
 * out_error (never NULL when called). */
typedef cubert_status_t (*cubert_client_fn_t)(void *user, cubert_error_t *out_error);

/* exclusive(f): run fn(user) with exclusive access to the device; device calls
 * made inside fn (through any client of this device) run inline, in order.
 * Returns fn's status and error; the device stays usable after a failing fn
 * (CubeCL's exclusive_stays_recoverable_on_task_panic). INVALID_ARGUMENT for
 * NULL client/fn. Blocks. */
CUBERT_API cubert_status_t cubert_client_exclusive(cubert_client_t *client, cubert_client_fn_t fn,
                                                   void *user, cubert_error_t *out_error);

/* profile(f, name): one exclusive section that syncs the stream, starts a
 * token, runs fn(user), syncs again and stops the token (host time between
 * two stream syncs). fn's failure is returned as is (CubeCL re-raises
 * the panic); a failing sync returns its error (SERVER_UNHEALTHY, ...).
 * out_duration (may be NULL) receives the measured interval on success.
 * `name` is borrowed for the call. Blocks. */
CUBERT_API cubert_status_t cubert_client_profile(cubert_client_t *client, cubert_client_fn_t fn,
                                                 void *user, const char *name,
                                                 cubert_profile_duration_t *out_duration,
                                                 cubert_error_t *out_error);

/* Profiling tokens (the server's start_profile / end_profile), for
 * profiles that overlap instead of nesting. profile_start syncs the client's
 * stream (its queued errors are returned: SERVER_UNHEALTHY) and issues a
 * token; profile_end syncs again and stops the token. Any error seen by a
 * sync while tokens are active (e.g. a failed launch queued on the stream)
 * invalidates EVERY active token of the device: each later profile_end of
 * those tokens returns that error, wrapped as PROFILE_SERVER (status of the
 * original error). profile_end of an unknown or already ended token:
 * PROFILE_FAILED, kind PROFILE_NOT_REGISTERED. Too many active tokens
 * (CUBERT_PROFILER_DEFAULT_CAPACITY on the CPU server): PROFILE_FAILED, kind
 * PROFILE_UNKNOWN. INVALID_ARGUMENT for NULL pointers. A server without
 * profiling returns UNSUPPORTED. Blocks (device round trip plus the syncs).
 * Thread-safe; tokens are per device, not per client. */
CUBERT_API cubert_status_t cubert_client_profile_start(cubert_client_t *client,
                                                       cubert_profiling_token_t *out_token,
                                                       cubert_error_t *out_error);
CUBERT_API cubert_status_t cubert_client_profile_end(cubert_client_t *client,
                                                     cubert_profiling_token_t token,
                                                     cubert_profile_duration_t *out_duration,
                                                     cubert_error_t *out_error);

/* A log sink: receives `length` bytes of UTF-8 text (NUL-terminated too;
 * one or more '\n'-terminated lines). Called on the thread that launches or
 * syncs, never with a runtime lock held; it must not call back into the
 * client. The OS layer provides cubert_log_sink_stderr (cubert/os.h). */
typedef void (*cubert_log_sink_fn_t)(void *self, const char *text, size_t length);

/* Kernel profiling (CubeCL's logger-driven kernel profiling; docs/profiling.md), per device:
 *  OFF            nothing (the default);
 *  EXECUTION_ONLY each launch logs "Executing <name>" and is counted;
 *  BASIC          each launch is wrapped in a profile (blocking: the launch
 *                 call waits for the kernel) and its duration recorded;
 *  MEDIUM         as BASIC, plus a "| <duration> | <name>" line per launch;
 *  FULL           as MEDIUM, the name being
 *                 "<name>: <kernel id> CubeCount (x, y, z)".
 * Names are the kernel's name in CubeCL's Balanced format. At every
 * cubert_client_sync / sync_async of a client of this device, the per-kernel
 * summary table (Name, Duration, Num Computed, Ratio; cubert/profile.h
 * cubert_profile_summary_format) is written to the sink and reset; nothing
 * is written when no launch was recorded. The release of the device's last
 * client writes what was recorded since the last sync, so the summary does
 * not depend on an explicit sync. At the timed levels a launch's
 * failures are returned by the launch call itself (the profile's sync takes
 * them off the stream) and the launch is not recorded.
 * Setting a level replaces the summary (recorded launches are dropped).
 * A launch or sync already running when the setting changes may still use
 * the previous sink once. sink may be NULL only for OFF. INVALID_ARGUMENT
 * for a NULL client, an
 * invalid level or a NULL sink; RESOURCE_EXHAUSTED (HOST_OUT_OF_MEMORY) when
 * the summary cannot be allocated (the previous setting stays). Thread-safe;
 * non-blocking. */
CUBERT_API cubert_status_t cubert_client_set_profiling(cubert_client_t *client,
                                                       cubert_profile_level_t level,
                                                       cubert_log_sink_fn_t sink, void *sink_self,
                                                       cubert_error_t *out_error);
/* The device's kernel-profiling level (OFF for NULL). Thread-safe. */
CUBERT_API cubert_profile_level_t cubert_client_profiling_level(const cubert_client_t *client);

/* ---- memory --------------------------------------------------------- */

CUBERT_API cubert_status_t cubert_client_memory_usage(cubert_client_t *client,
                                                      cubert_memory_usage_t *out_usage,
                                                      cubert_error_t *out_error);
CUBERT_API cubert_status_t cubert_client_memory_cleanup(cubert_client_t *client,
                                                        cubert_error_t *out_error);
CUBERT_API cubert_status_t cubert_client_allocation_mode(cubert_client_t *client,
                                                         cubert_memory_allocation_mode_t mode,
                                                         cubert_error_t *out_error);

/* Streams that may have a persistent window open at once, per device. */
#define CUBERT_CLIENT_MAX_PERSISTENT_STREAMS 16u

/* memory_persistent_allocation(f): run fn(user) on the calling
 * thread with the client's stream in Persistent allocation mode, then return
 * the stream to Auto. Windows nest: only the outermost window of a stream
 * switches the mode (an inner window's end leaves the stream Persistent until
 * the outer one ends). (CubeCL uses the thread's stream even for a pinned
 * client; cubert uses the client's stream, where its allocations go.)
 * Returns fn's status and error; the mode is restored also when fn fails.
 * INVALID_ARGUMENT for a NULL client / fn; OUT_OF_RANGE (kind OUT_OF_RANGE)
 * when CUBERT_CLIENT_MAX_PERSISTENT_STREAMS other streams of the device have
 * a window open (fn does not run). A failing mode switch is
 * returned (fn does not run / the error of the switch back is returned when
 * fn succeeded). Blocks (two device round trips around fn). Thread-safe. */
CUBERT_API cubert_status_t cubert_client_memory_persistent_allocation(cubert_client_t *client,
                                                                      cubert_client_fn_t fn,
                                                                      void *user,
                                                                      cubert_error_t *out_error);

/* ---- devices and misc ------------------------------------------- */

CUBERT_API size_t cubert_client_enumerate_devices(uint16_t type_id, cubert_device_id_t *out_ids,
                                                  size_t capacity);
CUBERT_API size_t cubert_client_device_count(uint16_t type_id);
CUBERT_API size_t cubert_client_device_count_total(void);
/* io_optimized_vector_sizes for this device's hardware properties, largest
 * first: cubert_io_optimized_vector_sizes (cubert/cube.h) and its codes;
 * INVALID_ARGUMENT also for a NULL client or an elem_size beyond size_t.
 * Pure, thread-safe. */
CUBERT_API cubert_status_t cubert_client_io_optimized_vector_sizes(const cubert_client_t *client,
                                                                   uint64_t elem_size,
                                                                   uint32_t *out_sizes,
                                                                   size_t capacity,
                                                                   size_t *out_count,
                                                                   cubert_error_t *out_error);

/* ---- multi-device and collectives -----------------------------------
 * Several devices of one driver type live in one process (CPU: one
 * cubert_cpu_client_create per device index). Collectives run among devices
 * that share a communicator, named by the CommunicationId of the device set
 * (cubert/comm.h). Each device orders its collectives on its own
 * communication stream: a collective starts after the work enqueued before
 * it on the calling client's stream, and its result is visible to a stream
 * only after cubert_client_sync_collective on that stream.
 *
 * Every function below validates its arguments and those of the server call
 * before anything is enqueued: on failure nothing was enqueued (except where
 * noted) and out_error holds the reason. The rendezvous with the peers happens
 * later, on the communication streams; what fails there (members disagreeing
 * on dtype/op/size, a peer that never arrives within the driver's timeout,
 * a peer device released meanwhile) is queued on the communication stream
 * and returned by the flush / sync / read that follows a sync_collective
 * (SERVER_UNHEALTHY). A communicator whose rendezvous timed out or lost a
 * member is aborted: later collectives on it fail until every member
 * device was released.
 *
 * Thread-safety: as every client call. Blocking: the calls block only while
 * the device runs the (non-blocking) server call, except
 * change_client_sync / to_client on servers without comm support, which
 * block for the read of the source. Dtypes are cubert_comm_dtype_t values.
 */

/* ensure_init_collective: make this device a member of the communicator of
 * `devices` (count 1..CUBERT_COMMUNICATION_MAX_DEVICES, borrowed; order does
 * not matter). Idempotent; never waits for the other members (they join with
 * their own call). INVALID_ARGUMENT (NULL/empty list, a device listed twice),
 * DEVICE_MISMATCH (a device of another type, or this device not in the list),
 * OUT_OF_RANGE (too many devices, or this device joined too many
 * communicators), RESOURCE_EXHAUSTED (no communicator slot left),
 * FAILED_PRECONDITION (the communicator was aborted); a server without
 * collectives returns its own error. */
CUBERT_API cubert_status_t cubert_client_ensure_init_collective(cubert_client_t *client,
                                                                const cubert_device_id_t *devices,
                                                                size_t count,
                                                                cubert_error_t *out_error);

/* all_reduce: reduce `src` of every member of `devices` into each member's
 * `dst` (Sum or Mean; integer Mean: see cubert/comm.h). src and dst are
 * handles of this device on the same stream with the same size in use (a
 * multiple of the dtype's width); they may be the same handle (in place).
 * Ensures the communicator first. Every member must call all_reduce with the
 * same device set, dtype, op and size as its next collective on that
 * communicator. Non-blocking. Codes: INVALID_ARGUMENT (NULL, unknown dtype or
 * op, src/dst on different streams, size not a multiple of the width),
 * DEVICE_MISMATCH / INVALID_HANDLE (a handle of another device or released),
 * OUT_OF_RANGE (sizes differ), UNSUPPORTED (a dtype all_reduce does not
 * compute on), and the codes of ensure_init_collective. */
CUBERT_API cubert_status_t cubert_client_all_reduce(cubert_client_t *client,
                                                    const cubert_handle_t *src,
                                                    const cubert_handle_t *dst, uint32_t dtype,
                                                    const cubert_device_id_t *devices,
                                                    size_t count, cubert_reduce_operation_t op,
                                                    cubert_error_t *out_error);

/* sync_collective: make this client's stream wait for every collective this
 * device enqueued so far, and move the communication stream's queued errors
 * onto it. Non-blocking (the wait is on the stream; a following sync / read
 * blocks). OK when no collective was ever enqueued. */
CUBERT_API cubert_status_t cubert_client_sync_collective(cubert_client_t *client,
                                                         cubert_error_t *out_error);

/* send: point-to-point send of the descriptor's binding (its bytes in use,
 * not its shape) to `dst_device`, which must post a matching recv (same
 * dtype and size) as its next collective on the pair's communicator.
 * Ensures this device's membership of the pair's communicator. Non-blocking.
 * INVALID_ARGUMENT (NULL, unknown dtype, size not a multiple of its width,
 * dst_device is this device), DEVICE_MISMATCH (binding of another device,
 * peer of another type), INVALID_HANDLE. */
CUBERT_API cubert_status_t cubert_client_send(cubert_client_t *client,
                                              const cubert_copy_descriptor_t *descriptor,
                                              uint32_t dtype, cubert_device_id_t dst_device,
                                              cubert_error_t *out_error);

/* recv: create a handle of `size` bytes on this client's stream and receive
 * into it from `src_device` (which must send). The new handle is the
 * caller's to release (also if the transfer later fails). Its data is
 * readable after cubert_client_sync_collective. Non-blocking. Codes as send;
 * RESOURCE_EXHAUSTED / OUT_OF_RANGE when no handle can be created;
 * *out_handle untouched on failure. */
CUBERT_API cubert_status_t cubert_client_recv(cubert_client_t *client, uint64_t size,
                                              uint32_t dtype, cubert_device_id_t src_device,
                                              cubert_handle_t *out_handle,
                                              cubert_error_t *out_error);

/* change_client_sync: copy a tensor from `src`'s device to `dst`'s: a
 * blocking read of the descriptor on src (contiguous or pitched, as
 * read_tensor; rank 0: the binding's bytes in use), then a non-blocking
 * upload to dst into a new CONTIGUOUS layout on dst's current stream
 * (CubeCL uses the source's stream id there). *out_layout receives the new
 * handle (the caller releases it). Codes of read_tensor on src and of
 * create_tensors on dst; OVERFLOW for a size that overflows; nothing is
 * created on dst when the read fails. */
CUBERT_API cubert_status_t cubert_client_change_client_sync(
    cubert_client_t *src, const cubert_copy_descriptor_t *descriptor, cubert_client_t *dst,
    cubert_memory_layout_t *out_layout, cubert_error_t *out_error);

/* to_client_tensor: move the descriptor's bytes in use from src's device to
 * dst's through the pair's communicator: ensures both memberships, creates
 * the destination handle (same size, dst's stream), enqueues recv +
 * sync_collective on dst, then send + sync_collective on src (src's later
 * work, writes to the source included, waits for the transfer; nothing
 * blocks the host). Returns the destination handle
 * at once (the caller releases it); it reads the data once the transfer ran
 * (reads on dst's stream wait for it). Codes of send / recv; the devices
 * must differ (INVALID_ARGUMENT). If the send is refused after the recv was
 * enqueued (only on host memory exhaustion), the handle is released and the
 * queued recv fails on dst's stream when its peer does not arrive. */
CUBERT_API cubert_status_t cubert_client_to_client_tensor(
    cubert_client_t *src, const cubert_copy_descriptor_t *descriptor, cubert_client_t *dst,
    uint32_t dtype, cubert_handle_t *out_handle, cubert_error_t *out_error);

/* to_client: copy a handle's bytes in use to dst's device and return the new
 * handle there (the caller releases it). Between two devices of one type
 * whose features both include CUBERT_FEATURE_COLLECTIVES (the CUDA devices)
 * it uses to_client_tensor; otherwise (the CPU drivers, the same device, two
 * types) change_client_sync (blocking read on src). INVALID_ARGUMENT for NULL or an
 * unknown dtype; otherwise the codes of the path taken. */
CUBERT_API cubert_status_t cubert_client_to_client(cubert_client_t *src,
                                                   const cubert_handle_t *handle,
                                                   cubert_client_t *dst, uint32_t dtype,
                                                   cubert_handle_t *out_handle,
                                                   cubert_error_t *out_error);

/* ---- the race checker (docs/race-checker.md) ----------------------------------
 * The cross-stream race checker of any device (CPU, inline; all zero where it is off).
 * Each fills out_error (may be NULL) on failure. */

/* The checker's counters (all zero when it is off). INVALID_ARGUMENT (kind
 * INVALID_ARGUMENT) for NULL. Takes the device briefly; thread-safe. */
CUBERT_API cubert_status_t cubert_client_race_counters(cubert_client_t *client,
                                                       cubert_race_counters_t *out_counters,
                                                       cubert_error_t *out_error);
/* The most recent race report: OK, NOT_FOUND (kind IO_NOT_FOUND) when there
 * was none (or the checker is off), INVALID_ARGUMENT for NULL. Takes the
 * device briefly. */
CUBERT_API cubert_status_t cubert_client_race_last_report(cubert_client_t *client,
                                                          cubert_race_report_t *out_report,
                                                          cubert_error_t *out_error);
/* Set the seed carried by later race reports (deterministic drivers; 0:
 * none). Takes the device briefly. INVALID_ARGUMENT for NULL. */
CUBERT_API cubert_status_t cubert_client_race_seed(cubert_client_t *client, uint64_t seed,
                                                   cubert_error_t *out_error);

/* ---- the options every device shares ---------------------------------------------
 * Each driver's options struct (cubert_cpu_options_t, cubert_inline_options_t,
 * cubert_cuda_options_t, and a driver's outside this repository) holds one of these
 * as its first member, `device`; the driver hands it to the server
 * (cubert_server_options_from_device, cubert/driver/server.h). Zeros are the
 * defaults. Plain data: no function reads or keeps it after the create it is
 * given to. */
struct cubert_server_faults_t; /* core/server/server_faults.h (tests only) */

typedef struct cubert_device_options_t {
  uint32_t index;        /* registered as {the driver's device type, index} */
  uint32_t max_streams;  /* stream slots (stream id mod max_streams), 1..255; 0: 16 */
  uint32_t max_handles;  /* handle table capacity; 0: 1 << 20 */
  uint32_t reserved_;    /* 0 */
  uint64_t memory_size;  /* max_page_size advertised; 0: the driver's default (CPU and
                            inline: 1 GiB; CUDA: a quarter of the GPU's memory) */
  cubert_bounds_check_mode_t bounds_check;
  /* Non-zero: run the server's race checker (cubert/race.h); reports are
   * counted (cubert_client_race_counters), the last is kept and each goes to
   * race_sink (called with the device held, on the thread that issued the
   * action; it must not call the client). 0: off (one branch per hook). */
  uint32_t race_check;
  cubert_race_sink_t race_sink;
  /* TEST ONLY: fault injection (core/server/server_faults.h), honoured by the
   * server (dropped waits) and by the drivers that inject run-time faults (the
   * CPU and inline drivers); borrowed for the create. NULL: none. */
  const struct cubert_server_faults_t *faults;
} cubert_device_options_t;

CUBERT_EXTERN_C_END

#endif /* CUBERT_CLIENT_H */
