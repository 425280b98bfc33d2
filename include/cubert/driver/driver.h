/* SPDX-License-Identifier: MIT */
/*
 * cubert/driver/driver.h: the driver table, the device primitives a driver
 * supplies to the server (docs/writing-a-driver.md walks through it).
 *
 * the server (core/server, created with cubert/driver/server.h) is the server:
 * it owns the stream slots and their cursors, cross-stream waits and pins
 * (the MultiStream), per-slot memory over the memory pools, the GC of pinned
 * bindings and host bytes, the error queues, profiling tokens, staging and
 * collective bookkeeping, and the race checker. A driver only says how its
 * device allocates, copies, launches and signals. The primitives are shaped
 * like the CUDA Driver API (each maps to one or two calls of it):
 *
 *   properties           cuDeviceGetAttribute ...          (once, at creation)
 *   memory_alloc / free  cuMemAllocAsync / cuMemFreeAsync  (free is stream-ordered)
 *   host_alloc / free    cuMemHostAlloc / cuMemFreeHost    (optional: pinned staging)
 *   copy                 cuMemcpy2DAsync (H2D, D2H, D2D; 1-D when height is 1)
 *   launch               cuLaunchKernel
 *   stream_create / destroy / synchronize
 *                        cuStreamCreate / cuStreamDestroy / cuStreamSynchronize
 *   event_record / wait / query / synchronize / destroy
 *                        cuEventCreate+cuEventRecord / cuStreamWaitEvent /
 *                        cuEventQuery / cuEventSynchronize / cuEventDestroy
 *   stream_errors        the asynchronous errors raised by work on a stream
 *   comm_create / query / destroy, collective
 *                        ncclCommInitRank / ncclCommGetAsyncError /
 *                        ncclCommAbort / ncclAllReduce, ncclSend, ncclRecv (optional)
 *   plan_create / update / launch / destroy
 *                        cuGraphAddKernelNode + cuGraphInstantiate /
 *                        cuGraphExecKernelNodeSetParams / cuGraphLaunch /
 *                        cuGraphExecDestroy (optional: recorded sequences)
 *   memory_device / memory_import, stream_order_native
 *                        cuDeviceGet ordinal / a CUdeviceptr taken as is,
 *                        cuEventRecord + cuStreamWaitEvent across another
 *                        library's CUstream (optional: DLPack, docs/interop.md)
 *
 * A driver is a `static const cubert_driver_t` with designated initializers
 * plus the `self` pointer of one device; backend-cpu/inline/inline_driver.c
 * is the smallest complete example.
 *
 * CONTRACT, for every primitive unless its comment says otherwise:
 *  - Threads. The server calls the driver with the device held (the device
 *    lock, one thread at a time). Exceptions: event_query and
 *    event_synchronize may also be called by a thread that waits for a
 *    completion without the device held, concurrently with any other
 *    primitive (not with event_destroy of the same event); host_free may be
 *    called from any thread at any time before destroy. With the server
 *    option concurrent_launch (cubert/driver/server.h), launch, memory_alloc
 *    and memory_free may run on several threads at once, each on a different
 *    stream (one thread per stream at a time), never beside another
 *    primitive. The driver's own threads (stream workers, ...) are its
 *    business.
 *  - Blocking. Only event_synchronize, stream_synchronize, stream_destroy and
 *    destroy may block
 *    the calling thread until device work finished. Every other primitive
 *    returns without waiting for device work (it may wait briefly for room
 *    in a queue).
 *  - Streams. Work enqueued on one stream runs in enqueue order. Work on
 *    different streams is unordered unless an event_wait orders it.
 *  - Errors. A primitive returns OK or a status with out_error filled (kind
 *    from cubert/error.h, the driver's own code in driver_code; out_error
 *    may be NULL). A call that fails enqueues nothing and changes nothing
 *    (exception: a lost device). Failures of work that already ran
 *    asynchronously are kept per stream and handed to the server by
 *    stream_errors (the server surfaces them as SERVER_UNHEALTHY at the next
 *    flush / sync / read of the stream).
 *  - Device lost. A primitive that returns CUBERT_STATUS_UNAVAILABLE (kind
 *    DEVICE_LOST) declares the device lost: the server becomes sticky and
 *    returns that error from every later call at once, without calling the
 *    driver again except stream_destroy, memory_free, host_free,
 *    event_destroy and destroy at teardown (which must then not block).
 *  - Optional primitives are NULL pointers: the server then answers UNSUPPORTED
 *    (kind IO_UNSUPPORTED_IO_OPERATION) with a message naming what is
 *    missing, never crashes. Required: everything not marked "optional".
 *  - Memory. The driver allocates its own objects (streams, events) as it
 *    likes; freestanding drivers take them from the allocator they were
 *    created with. Device memory is addressed by cubert_device_ptr_t values;
 *    with CUBERT_DRIVER_HOST_ADDRESSABLE they are host pointers.
 */
#ifndef CUBERT_DRIVER_DRIVER_H
#define CUBERT_DRIVER_DRIVER_H

#include "cubert/allocator.h"
#include "cubert/error.h"
#include "cubert/properties.h"

CUBERT_EXTERN_C_BEGIN

struct cubert_kernel_t; /* cubert/kernel.h */

/* Version of this table's layout; a driver sets `abi_version` to it (2: the
 * plan primitives were added at the end; 3: then the external-memory ones). */
#define CUBERT_DRIVER_ABI_VERSION 3u

/* ---- driver objects ----------------------------------------------------------
 * Opaque to the server: each driver defines the structs behind them. */
typedef struct cubert_driver_stream_t cubert_driver_stream_t; /* CUstream */
typedef struct cubert_driver_event_t cubert_driver_event_t;   /* CUevent */
typedef struct cubert_driver_comm_t cubert_driver_comm_t;     /* ncclComm_t */
typedef struct cubert_driver_plan_t cubert_driver_plan_t;     /* CUgraphExec */

/* A device address (CUdeviceptr). 0 is never a valid allocation. */
typedef uint64_t cubert_device_ptr_t;

/* ---- flags (cubert_driver_t.flags) -------------------------------------------- */

/* Device addresses are host pointers: the server hands them to the host
 * (get_resource's ptr) and may serve staging buffers from its own allocator
 * when host_alloc is absent ("simulated pinned" memory). CPU and inline. */
#define CUBERT_DRIVER_HOST_ADDRESSABLE (1u << 0)
/* Every primitive finishes its device work before it returns: events are
 * complete when recorded (the inline driver). A hint: the server then releases
 * what waits for an event at once. */
#define CUBERT_DRIVER_SYNCHRONOUS (1u << 1)
/* copy() reads the host source of a host-to-device copy flagged
 * CUBERT_COPY_SOURCE_BORROWED before it returns when the copy moves more
 * than CUBERT_DRIVER_BORROW_MIN bytes (e.g. through pinned chunks that the
 * driver fills before it returns). The client then uploads such bytes from
 * the caller's memory in place instead of copying them first (create and
 * write still let the caller reuse its buffer as soon as they return). The
 * CUDA driver. */
#define CUBERT_DRIVER_BORROWS_UPLOADS (1u << 2)
#define CUBERT_DRIVER_BORROW_MIN (64u << 10)

/* ---- copies ------------------------------------------------------------------- */

typedef enum cubert_copy_kind_e {
  CUBERT_COPY_HOST_TO_DEVICE = 0,
  CUBERT_COPY_DEVICE_TO_HOST = 1,
  CUBERT_COPY_DEVICE_TO_DEVICE = 2,
  CUBERT_COPY_KIND_FORCE_32BIT_ = 0x7FFFFFFF /* 4 bytes everywhere */
} cubert_copy_kind_t;

/* cubert_driver_copy_t.flags: the host source (H2D) is valid only until
 * copy() returns, not until the copy completed; set only for drivers with
 * CUBERT_DRIVER_BORROWS_UPLOADS and copies above CUBERT_DRIVER_BORROW_MIN. */
#define CUBERT_COPY_SOURCE_BORROWED (1u << 0)

/* One copy of `height` rows of `width` bytes (CUDA_MEMCPY2D). Row r starts at
 * src + r * src_pitch and goes to dst + r * dst_pitch; with height 1 the
 * pitches are ignored (a 1-D copy). Sources and destinations are host
 * pointers or device addresses by `kind`; the unused pair is 0 / NULL.
 * Host memory is borrowed: a host source (H2D) must stay unchanged and a
 * host destination (D2H) valid until the copy completed on its stream (the
 * server keeps them until an event recorded after the copy completed), except
 * a source flagged CUBERT_COPY_SOURCE_BORROWED (valid during the call). */
typedef struct cubert_driver_copy_t {
  uint32_t kind;  /* cubert_copy_kind_t */
  uint32_t flags; /* CUBERT_COPY_* */
  const void *src_host;           /* H2D */
  void *dst_host;                 /* D2H */
  cubert_device_ptr_t src_device; /* D2H, D2D */
  cubert_device_ptr_t dst_device; /* H2D, D2D */
  uint64_t src_pitch;             /* >= width when height > 1 */
  uint64_t dst_pitch;             /* >= width when height > 1 */
  uint64_t width;                 /* bytes per row; 0: nothing to copy */
  uint64_t height;                /* rows; 0: nothing to copy */
} cubert_driver_copy_t;

/* ---- launches ------------------------------------------------------------------ */

/* One buffer argument, resolved by the server: its first byte and its size. */
typedef struct cubert_driver_buffer_t {
  cubert_device_ptr_t address;
  uint64_t size;
} cubert_driver_buffer_t;

/* One kernel launch. Borrowed for the call: the driver copies what it keeps.
 * The server has checked, before calling: buffer_count / scalar_count against
 * the kernel's and the CUBERT_KERNEL_MAX_* limits, a static count's and the
 * cube dim's limits against the device properties (a static count with a
 * zero component never reaches the driver), and that a dynamic count's
 * buffer holds 12 bytes. */
typedef struct cubert_driver_launch_t {
  const struct cubert_kernel_t *kernel; /* the descriptor (plain constant data) */
  uint32_t execution;                   /* cubert_execution_mode_t (cubert/kernel.h) */
  uint32_t dynamic;                     /* 1: the count is read from dynamic_count */
  cubert_dim3_t count;                  /* the static cube count (dynamic == 0) */
  uint32_t buffer_count;                /* <= CUBERT_KERNEL_MAX_BUFFERS */
  uint32_t scalar_count;                /* <= CUBERT_KERNEL_MAX_SCALARS */
  /* dynamic == 1: three u32 (x, y, z) at this device address, read when the
   * launch runs; a count above the device's limits is then a stream error
   * (LAUNCH_TOO_MANY_RESOURCES), a zero component runs nothing. */
  cubert_device_ptr_t dynamic_count;
  const cubert_driver_buffer_t *buffers; /* buffer_count entries */
  const uint64_t *scalars;               /* scalar_count 8-byte slots */
  /* The shape of this launch: the kernel descriptor's cube_dim and
   * shared_memory_bytes, or what the launch arguments gave instead
   * (cubert_launch_arguments_set_cube_dim / _set_shared_memory_bytes). Use
   * these, not the descriptor's; the server has checked them against the
   * device's limits. */
  cubert_dim3_t cube_dim;
  uint32_t shared_memory_bytes;
} cubert_driver_launch_t;

/* ---- collectives (optional) ------------------------------------------------------ */

typedef enum cubert_collective_kind_e {
  CUBERT_COLLECTIVE_ALL_REDUCE = 1, /* src -> dst, reduced over every member */
  CUBERT_COLLECTIVE_SEND = 2,       /* src -> peer */
  CUBERT_COLLECTIVE_RECV = 3,       /* peer -> dst */
  CUBERT_COLLECTIVE_KIND_FORCE_32BIT_ = 0x7FFFFFFF /* 4 bytes everywhere */
} cubert_collective_kind_t;

/* One collective of this member. Borrowed for the call. The server has checked
 * dtype, op and that bytes is a multiple of the dtype's width. */
typedef struct cubert_driver_collective_t {
  uint32_t kind;  /* cubert_collective_kind_t */
  uint32_t dtype; /* cubert_comm_dtype_t (cubert/comm.h) */
  uint32_t op;    /* cubert_reduce_operation_t (ALL_REDUCE) */
  uint32_t peer;  /* SEND: destination, RECV: source (device index id) */
  cubert_device_ptr_t src; /* ALL_REDUCE, SEND */
  cubert_device_ptr_t dst; /* ALL_REDUCE, RECV */
  uint64_t bytes;
} cubert_driver_collective_t;

/* ---- the table -------------------------------------------------------------------- */

typedef struct cubert_driver_t {
  const char *name;      /* "cpu", "inline", "cuda": in errors and reports */
  uint32_t abi_version;  /* CUBERT_DRIVER_ABI_VERSION */
  uint32_t flags;        /* CUBERT_DRIVER_* */

  /* Free the device and everything the driver still holds. Called once,
   * last, after every stream and event was destroyed and every device
   * allocation freed. May block (joins the driver's threads). */
  void (*destroy)(void *self);

  /* The device's properties (copied). Called once at server creation. Never
   * fails. */
  void (*properties)(void *self, cubert_device_properties_t *out_properties);

  /* ---- device memory ---- */

  /* Allocate `size` (> 0) bytes of device memory, aligned to
   * properties.memory.alignment, usable by work enqueued on `stream` from
   * now on (cuMemAllocAsync; a driver may also allocate at once). Fresh
   * memory need not be zeroed (the CPU drivers zero it). OK with
   * *out_address set, or OUT_OF_MEMORY (kind IO_OUT_OF_MEMORY, field 0 =
   * size), BUFFER_TOO_BIG, UNAVAILABLE. */
  cubert_status_t (*memory_alloc)(void *self, uint64_t size, cubert_driver_stream_t *stream,
                                  cubert_device_ptr_t *out_address, cubert_error_t *out_error);
  /* Free an allocation, STREAM-ORDERED (cuMemFreeAsync): the device may reuse
   * the memory only after the work enqueued on `stream` before this call
   * completed. stream NULL: nothing can touch the memory any more (teardown,
   * all streams synchronized): free now. The server guarantees that work on
   * other streams that used the memory completed before it calls this.
   * Never fails. */
  void (*memory_free)(void *self, cubert_device_ptr_t address, uint64_t size,
                      cubert_driver_stream_t *stream);

  /* ---- pinned host memory (optional: both or neither) ---- */

  /* `size` (> 0) bytes of page-locked host memory for staging buffers, at
   * least 16-byte aligned, zeroed. OK or RESOURCE_EXHAUSTED (kind
   * HOST_OUT_OF_MEMORY). Without it the server serves staging from its
   * allocator when the driver is HOST_ADDRESSABLE, else the client falls
   * back to ordinary host memory. */
  cubert_status_t (*host_alloc)(void *self, uint64_t size, void **out_ptr,
                                cubert_error_t *out_error);
  /* Free memory from host_alloc. Any thread, before destroy. */
  void (*host_free)(void *self, void *ptr, uint64_t size);

  /* ---- work on a stream ---- */

  /* Enqueue one copy (see cubert_driver_copy_t). OK, INVALID_ARGUMENT,
   * UNAVAILABLE; the server has bounds-checked device addresses. */
  cubert_status_t (*copy)(void *self, const cubert_driver_copy_t *copy,
                          cubert_driver_stream_t *stream, cubert_error_t *out_error);
  /* Enqueue one launch (see cubert_driver_launch_t). Refuse at once, with
   * nothing enqueued, a kernel this driver cannot run: COMPILATION_FAILED
   * (kind COMPILATION_UNSUPPORTED_INSTRUCTION wrapped in LAUNCH_COMPILATION
   * and SERVER_LAUNCH; e.g. no CPU entry point, no PTX), or an execution
   * mode it does not support (UNSUPPORTED). Failures while the kernel runs
   * (a VALIDATE out-of-bounds report: kind SERVER_VALIDATION with fields
   * {buffer slot, element index, buffer length, is_write} and the kernel's
   * name as reason) go to the stream's errors. */
  cubert_status_t (*launch)(void *self, const cubert_driver_launch_t *launch,
                            cubert_driver_stream_t *stream, cubert_error_t *out_error);

  /* ---- streams ---- */

  /* Create stream number `index` (0 .. max_streams - 1: the regular slots;
   * max_streams + 1: the server's communication stream; max_streams is not
   * used). The index is stable and unique per device: deterministic
   * drivers may order work by it. OK with *out_stream set (not NULL),
   * RESOURCE_EXHAUSTED, INTERNAL (a worker cannot start), UNAVAILABLE. */
  cubert_status_t (*stream_create)(void *self, uint32_t index, cubert_driver_stream_t **out_stream,
                                   cubert_error_t *out_error);
  /* Run what is still enqueued on the stream, then destroy it. The server
   * synchronized every stream of the device first (unless the device is
   * lost), so no stream still waits on one of this stream's events, and it
   * destroyed this stream's events. May block. */
  void (*stream_destroy)(void *self, cubert_driver_stream_t *stream);
  /* Block until everything enqueued on the stream so far completed
   * (cuStreamSynchronize). Must not allocate: the server uses it when it cannot
   * get an event (host memory exhausted) and must still know when host
   * memory a copy reads or writes is free. OK or UNAVAILABLE. */
  cubert_status_t (*stream_synchronize)(void *self, cubert_driver_stream_t *stream,
                                        cubert_error_t *out_error);
  /* Drain the errors raised by work on the stream so far: OK when none,
   * else SERVER_UNHEALTHY with their aggregate (cubert_error_aggregate:
   * count, first error's kinds and fields, messages joined) copied into
   * *out_error (may be NULL) and the queue emptied. Thread-safe against the
   * driver's own workers. Must not block. */
  cubert_status_t (*stream_errors)(void *self, cubert_driver_stream_t *stream,
                                   cubert_error_t *out_error);

  /* ---- events ---- */

  /* Create an event at the current end of `stream` (cuEventCreate +
   * cuEventRecord; drivers keep a free list): it completes once everything
   * enqueued on the stream so far completed. The server owns it until
   * event_destroy. OK, RESOURCE_EXHAUSTED, UNAVAILABLE. */
  cubert_status_t (*event_record)(void *self, cubert_driver_stream_t *stream,
                                  cubert_driver_event_t **out_event, cubert_error_t *out_error);
  /* Make work enqueued on `stream` from now on wait until `event` completed
   * (cuStreamWaitEvent). Borrows the event (it may be destroyed right
   * after). Must not block the host. OK, RESOURCE_EXHAUSTED, UNAVAILABLE. */
  cubert_status_t (*event_wait)(void *self, cubert_driver_stream_t *stream,
                                cubert_driver_event_t *event, cubert_error_t *out_error);
  /* Non-blocking (cuEventQuery): OK when the event completed, BUSY when not
   * yet, UNAVAILABLE when the device was lost. Also callable without the
   * device held (see the contract). */
  cubert_status_t (*event_query)(void *self, cubert_driver_event_t *event);
  /* Block the calling thread until the event completed or timeout_ns passed
   * (UINT64_MAX: no limit): OK, DEADLINE_EXCEEDED (the event is still
   * valid), UNAVAILABLE. Also called without the device held. A
   * deterministic driver runs its queued work here (no thread does). */
  cubert_status_t (*event_synchronize)(void *self, cubert_driver_event_t *event,
                                       uint64_t timeout_ns, cubert_error_t *out_error);
  /* Destroy an event from event_record (it may still be pending). Never
   * fails. */
  void (*event_destroy)(void *self, cubert_driver_event_t *event);

  /* ---- collectives (optional: all four or none) ---- */

  /* Join the communicator of `devices` (count 1 .. CUBERT_COMMUNICATION_MAX_
   * DEVICES index ids of this driver's type, sorted ascending, distinct;
   * this device is devices[rank]). Must not wait for the other members (they
   * join with their own call). OK with *out_comm, RESOURCE_EXHAUSTED (no
   * communicator left), FAILED_PRECONDITION (kind SERVICE_CREATION: the
   * communicator was aborted and not every member left yet), UNSUPPORTED
   * (e.g. a mode without collectives), UNAVAILABLE. */
  cubert_status_t (*comm_create)(void *self, const uint32_t *devices, uint32_t count,
                                 uint32_t rank, cubert_driver_comm_t **out_comm,
                                 cubert_error_t *out_error);
  /* OK while the communicator works; FAILED_PRECONDITION (kind
   * SERVICE_CREATION) once it was aborted (a peer timed out or left).
   * Non-blocking. */
  cubert_status_t (*comm_query)(void *self, cubert_driver_comm_t *comm, cubert_error_t *out_error);
  /* Leave the communicator. Called at teardown BEFORE the server synchronizes
   * the stream its collectives were enqueued on: the driver must make
   * those that wait for peers give up within a bounded time (an abort), and
   * keep what they use until they ran. Never fails. */
  void (*comm_destroy)(void *self, cubert_driver_comm_t *comm);
  /* Enqueue one collective on `stream` (the server's communication stream,
   * already ordered after the work that produced its inputs). Returns
   * without waiting for the peers. A failure of the rendezvous (members
   * disagree, a peer never comes: DEADLINE_EXCEEDED, the communicator
   * aborted: UNAVAILABLE) is a stream error of `stream`. Refuses at once a
   * communicator that was aborted (FAILED_PRECONDITION) or a dtype it cannot
   * reduce (UNSUPPORTED). */
  cubert_status_t (*collective)(void *self, cubert_driver_comm_t *comm,
                                const cubert_driver_collective_t *collective,
                                cubert_driver_stream_t *stream, cubert_error_t *out_error);

  /* ---- recorded sequences (optional: all four or none; docs/recording.md) ----
   * A plan is a fixed sequence of launches that a replay enqueues at once
   * (a CUDA graph: instantiated once, its nodes' parameters updated in
   * place). Without these the server replays a recording by calling launch
   * once per recorded launch. The server has checked every launch as it
   * checks one for `launch` (counts, limits, resolved buffers). */

  /* Build a plan of `count` (>= 1) launches run in order on the stream a
   * plan_launch names (cuGraphCreate, one kernel node each depending on
   * the previous, cuGraphInstantiate). Borrows `launches` for the call: the
   * driver copies what it keeps (kernel pointers stay borrowed, as for
   * launch). OK with *out_plan; RESOURCE_EXHAUSTED; COMPILATION_FAILED or
   * UNSUPPORTED for a launch it cannot run (as launch refuses it: the
   * server then replays that recording launch by launch); UNAVAILABLE. */
  cubert_status_t (*plan_create)(void *self, const cubert_driver_launch_t *launches, uint32_t count,
                                 cubert_driver_plan_t **out_plan, cubert_error_t *out_error);
  /* Give launch `index` of the plan new buffers and scalars (the same
   * kernel, execution mode, counts and shape as it was created with:
   * cuGraphExecKernelNodeSetParams). Only plan_launch calls made after it
   * see them; launches of the plan already enqueued keep the values they
   * were enqueued with. Must not block. OK; RESOURCE_EXHAUSTED (the plan is
   * unchanged); UNAVAILABLE. */
  cubert_status_t (*plan_update)(void *self, cubert_driver_plan_t *plan, uint32_t index,
                                 const cubert_driver_launch_t *launch, cubert_error_t *out_error);
  /* Enqueue the plan's launches on `stream` (cuGraphLaunch), in order, as
   * that many launch calls would; failures while they run are the stream's
   * errors. Must not allocate in steady state. OK, RESOURCE_EXHAUSTED,
   * UNAVAILABLE. */
  cubert_status_t (*plan_launch)(void *self, cubert_driver_plan_t *plan,
                                 cubert_driver_stream_t *stream, cubert_error_t *out_error);
  /* Free the plan. The server synchronized every stream the plan was
   * launched on first (unless the device is lost). Never fails. */
  void (*plan_destroy)(void *self, cubert_driver_plan_t *plan);

  /* ---- external memory (optional: memory_device and memory_import both or
   * neither; DLPack, docs/interop.md) ---- */

  /* Where this device's memory lives, in DLPack's terms: *out_device_type a
   * DLDeviceType (1 kDLCPU: host memory, the CPU and inline drivers; 2
   * kDLCUDA) and *out_device_id its ordinal (0 for host memory). Without
   * it the server exports no tensor and imports none (UNSUPPORTED). Never
   * fails; pure. */
  void (*memory_device)(void *self, int32_t *out_device_type, int32_t *out_device_id);
  /* Adopt `size` bytes at `pointer`: memory another library allocated on
   * this device (the memory_device above) and still owns. *out_address: the
   * device address kernels and copies of this device use for it (host-
   * addressable drivers: the pointer itself; CUDA: the CUdeviceptr as is).
   * The driver never frees it (memory_free is never called for it; the
   * server hands it back to its owner once its last use completed). size 0
   * is allowed (pointer may then be 0). OK, INVALID_ARGUMENT (the device
   * cannot use that memory), UNAVAILABLE. Non-blocking. */
  cubert_status_t (*memory_import)(void *self, uint64_t pointer, uint64_t size,
                                   cubert_device_ptr_t *out_address, cubert_error_t *out_error);
  /* Order `stream` against `native`, a stream of another library on this
   * device (CUDA: a CUstream; DLPack's stream numbers 1 and 2 are the
   * CU_STREAM_LEGACY and CU_STREAM_PER_THREAD handles): direction
   * CUBERT_NATIVE_WAITS: work enqueued on `native` from now on waits for
   * what was enqueued on `stream` so far; CUBERT_STREAM_WAITS: work
   * enqueued on `stream` from now on waits for what was enqueued on
   * `native` so far. Non-blocking (an event recorded on one, waited on by
   * the other). OK, INVALID_ARGUMENT, RESOURCE_EXHAUSTED, UNAVAILABLE.
   * Optional on its own (NULL: a native stream is UNSUPPORTED). */
  cubert_status_t (*stream_order_native)(void *self, cubert_driver_stream_t *stream,
                                         uint64_t native, uint32_t direction,
                                         cubert_error_t *out_error);
} cubert_driver_t;

/* stream_order_native's direction. */
#define CUBERT_NATIVE_WAITS 0u /* the other library's stream waits for ours */
#define CUBERT_STREAM_WAITS 1u /* our stream waits for the other library's */

CUBERT_EXTERN_C_END

#endif /* CUBERT_DRIVER_DRIVER_H */
