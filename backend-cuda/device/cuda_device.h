/* SPDX-License-Identifier: MIT */
/*
 * backend-cuda/device/cuda_device.h: the CUDA device layer, the primitives the
 * CUDA driver of the server is made of, over the Driver API
 * (docs/cuda.md):
 *
 *   device      open / close (primary context), properties, lost flag
 *   memory      device alloc (cuMemAllocAsync, else cuMemAlloc; 512-aligned)
 *               and stream-ordered free; pinned host alloc / free
 *   copies      H2D / D2H / D2D on a stream, 1-D and pitched 2-D
 *   launch      cuLaunchKernel with the fixed-size argument block, limits
 *               checked first; dynamic cube counts
 *   streams     non-blocking CUstreams with a queue of asynchronous errors
 *   events      pooled, reused: record, wait on a stream, query,
 *               synchronize, release (timing disabled; timed ones apart)
 *   modules     kernel descriptor -> CUfunction cache (cuda_module.c)
 *   staging     pooled pinned chunks, double-buffered uploads (cuda_staging.c)
 *
 * Conventions of this layer:
 *  - Every function that touches the driver first "enters" the device: a
 *    lost device returns its DEVICE_LOST record at once (no driver call, so
 *    nothing hangs), else the device's primary context is made current on
 *    the calling thread (cuCtxSetCurrent, skipped when this thread already
 *    has it current through this layer).
 *  - A driver failure is mapped by cuda_error.h; a context-poisoning code
 *    marks the device lost (sticky, for every later call on the device;
 *    other devices keep working).
 *  - A call that fails has no side effect, unless the device was lost.
 *  - Threads: a device, its streams and functions are used by one thread at
 *    a time (the server is an actor), except where a function says
 *    "thread-safe": the lost flag, the event pool, the staging pool and the
 *    stream error queues take their own locks, so a GC thread or a client
 *    thread dropping a staging buffer may call them concurrently.
 *  - Host memory for the layer's own objects comes from the device's
 *    allocator; none is taken on the launch / copy / record hot paths once
 *    the caches are warm.
 */
#ifndef CUBERT_BACKEND_CUDA_DEVICE_CUDA_DEVICE_H
#define CUBERT_BACKEND_CUDA_DEVICE_CUDA_DEVICE_H

#include <pthread.h>

#include "cubert/allocator.h"
#include "cubert/cuda.h"
#include "cubert/kernel.h"
#include "cubert/layout.h"
#include "device/cuda_error.h"
#include "device/cuda_loader.h"

/* Device memory alignment the layer guarantees (the pitched policy's). */
#define CUBERT_CUDA_MEMORY_ALIGNMENT 512u
/* JIT log buffers kept per device (bytes each). */
#define CUBERT_CUDA_JIT_LOG_SIZE 4096u
/* Staging: chunk classes are powers of two from 2^MIN_CLASS bytes. */
#define CUBERT_CUDA_STAGING_MIN_CLASS 12u
#define CUBERT_CUDA_STAGING_CLASSES 36u
/* Default piece size of a double-buffered upload from pageable memory, and
 * the size up to which an upload goes straight from pageable memory. */
#define CUBERT_CUDA_STAGING_UPLOAD_CHUNK (8u << 20)
#define CUBERT_CUDA_STAGING_DIRECT_MAX (64u << 10)

typedef struct cubert_cuda_device_t cubert_cuda_device_t;

/* ---- events ------------------------------------------------------------------ */

/* A pooled event. Owned by whoever recorded it until released; a holder
 * may share it (cubert__cuda_event_retain: one more release before it goes
 * back to the pool). `owner`, `seq` and `mark` are the recorder's (the CUDA
 * driver notes the stream, how many staged reads and how much work preceded
 * the record); the pool clears them when the last holder released it. */
typedef struct cubert_cuda_event_t {
  CUevent handle;
  struct cubert_cuda_event_t *next; /* free-list link while pooled */
  uint32_t timed;                   /* 1: created without CU_EVENT_DISABLE_TIMING */
  uint32_t refs;                    /* holders (atomic): 1 when handed out by a record */
  void *owner;
  uint64_t seq;
  uint64_t mark;
  uint64_t epoch; /* the driver stream's work epoch at the record (cuda_driver.h) */
} cubert_cuda_event_t;

typedef struct cubert_cuda_event_pool_t {
  pthread_mutex_t mutex;
  cubert_cuda_event_t *free_plain;
  cubert_cuda_event_t *free_timed;
  uint64_t created; /* cuEventCreate calls that succeeded */
  uint64_t reused;  /* records served from the free lists */
  uint64_t live;    /* events handed out, not yet released */
} cubert_cuda_event_pool_t;

/* ---- the function cache (cuda_module.c) ---------------------------------------- */

/* A kernel ready to launch: its CUfunction and the attributes the launch
 * checks use. Owned by the device's cache (valid until device close). */
typedef struct cubert_cuda_function_t {
  const cubert_kernel_t *kernel;
  /* What the descriptor said when the function was made: a descriptor
   * pointer reused for another kernel (a copy on the stack, say) misses the
   * cache instead of launching the old function. */
  const char *entry_name;
  const void *image;
  uint32_t shared_memory_bytes;
  uint32_t dynamic_limit; /* MAX_DYNAMIC_SHARED_SIZE_BYTES raised by a launch-time size (0: not) */
  CUfunction handle;
  uint32_t max_threads;   /* CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK */
  uint32_t static_shared; /* CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES */
  uint32_t registers;     /* CU_FUNC_ATTRIBUTE_NUM_REGS */
  /* 1: the image marks the entry as waiting for the kernels before it
   * (NAME_cubert_grid_wait_, include/cubert/kernel.h): a graph node of it
   * may depend on the node before programmatically (cuda_plan.c) */
  uint32_t grid_wait;
  /* A record replaced in the table (its descriptor address reused for
   * another kernel) is kept here until the cache is deinitialized: a
   * stream's memo may still point at it (cubert_cuda_function_memo_t). */
  struct cubert_cuda_function_t *retired_next;
} cubert_cuda_function_t;

/* A stream's memo of the functions it launched (cubert__cuda_function_get_memo):
 * direct-mapped by kernel pointer, with the descriptor's fields as they
 * were when the entry was made, so a hit reads neither the shared table nor
 * its mutex. Owned by one stream and used only by the thread that holds it
 * (the server gives a stream to one launch at a time); zero it before use.
 * Records are never freed or changed in their key fields before the
 * device's module cache is deinitialized, so an entry never dangles. */
#define CUBERT_CUDA_FUNCTION_MEMO 8u
typedef struct cubert_cuda_function_memo_t {
  struct {
    const cubert_kernel_t *kernel;
    const char *entry_name;
    const void *image;
    uint32_t shared_memory_bytes;
    const cubert_cuda_function_t *function;
  } entries[CUBERT_CUDA_FUNCTION_MEMO];
} cubert_cuda_function_memo_t;

typedef struct cubert_cuda_module_slot_t {
  const void *key; /* the registered image, or the descriptor's raw image */
  CUmodule module;
} cubert_cuda_module_slot_t;

typedef struct cubert_cuda_module_cache_t {
  cubert_cuda_function_t **functions; /* open addressing by kernel pointer; records stay put */
  uint32_t function_capacity;        /* power of two (0: none yet) */
  uint32_t function_count;
  cubert_cuda_module_slot_t *modules;
  uint32_t module_capacity;
  uint32_t module_count;
  uint64_t loads;                    /* cuModuleLoadDataEx calls that succeeded */
  cubert_cuda_function_t *retired;   /* replaced records (retired_next), freed at deinit */
  char info_log[CUBERT_CUDA_JIT_LOG_SIZE];  /* the last load's JIT info log */
  char error_log[CUBERT_CUDA_JIT_LOG_SIZE]; /* the last failed load's JIT error log */
  /* lookups, loads and a function's dynamic limit: launches on different
   * streams run at once (the server's concurrent_launch, issue 27) */
  pthread_mutex_t mutex;
} cubert_cuda_module_cache_t;

/* ---- the pinned staging pool (cuda_staging.c) ------------------------------------ */

/* A pinned host chunk. `ptr` holds `capacity` bytes (a power of two). The
 * record itself lives in the first CUBERT_CUDA_STAGING_HEADER bytes of the
 * same pinned allocation (ptr = record + header), so a chunk costs no host
 * allocation and the record of a pointer from the pool is found in O(1)
 * (cubert__cuda_staging_chunk_of). While handed out it belongs to the
 * caller, who may use `link`, `user` and the out_* fields; released with an
 * event it is reused only once that event completed. */
typedef struct cubert_cuda_staging_chunk_t {
  void *ptr;
  uint64_t capacity;
  uint32_t size_class;
  uint32_t magic;             /* CUBERT_CUDA_STAGING_MAGIC while the chunk exists */
  cubert_cuda_event_t *event; /* pending use (pool-owned), or NULL */
  struct cubert_cuda_staging_chunk_t *next; /* pool list; the holder's while handed out */
  struct cubert_cuda_staging_chunk_t *prev; /* the holder's while handed out */
  void *out_dst;              /* the holder's: a staged read's destination */
  uint64_t out_bytes;         /* the holder's: its size */
  uint64_t out_seq;           /* the holder's: its sequence number */
} cubert_cuda_staging_chunk_t;

/* Bytes before a chunk's data (the record, padded to keep the data 128-byte
 * aligned), and the record's tag. */
#define CUBERT_CUDA_STAGING_HEADER 128u
#define CUBERT_CUDA_STAGING_MAGIC 0x53544731u

typedef struct cubert_cuda_staging_stats_t {
  uint64_t host_allocs;   /* cuMemHostAlloc calls */
  uint64_t host_frees;    /* cuMemFreeHost calls */
  uint64_t reuses;        /* acquisitions served from the pool */
  uint64_t bytes_pinned;  /* pinned bytes the pool holds (idle + handed out) */
  uint64_t handed_out;    /* chunks currently with a caller */
} cubert_cuda_staging_stats_t;

typedef struct cubert_cuda_staging_pool_t {
  pthread_mutex_t mutex;
  cubert_cuda_staging_chunk_t *idle[CUBERT_CUDA_STAGING_CLASSES];
  cubert_cuda_staging_stats_t stats;
  uint64_t upload_chunk_bytes; /* piece size of cubert__cuda_staging_upload */
} cubert_cuda_staging_pool_t;

/* ---- the device ------------------------------------------------------------------- */

struct cubert_cuda_device_t {
  const cubert_cuda_loader_t *cu; /* borrowed function table */
  cubert_allocator_t allocator;
  uint32_t ordinal;
  CUdevice device;
  CUcontext context;              /* the retained primary context */
  cubert_cuda_device_info_t info; /* attributes and properties */
  bool async_alloc;               /* cuMemAllocAsync in use */
  uint32_t lost;                  /* atomic: 1 once a poisoning error was seen */
  pthread_mutex_t lost_mutex;
  cubert_error_t lost_error;      /* written once, before `lost` is set */
  cubert_cuda_event_pool_t events;
  cubert_cuda_module_cache_t modules;
  cubert_cuda_staging_pool_t staging;
  uint32_t *count_scratch;        /* pinned, 4 words: dynamic cube counts */
  /* Words of stream memory operations given back, each freed once its event
   * passed (cubert_cuda_word_*; under events.mutex). */
  struct cubert_cuda_retired_word_t *retired_words;
};

/* Fill *out_info with device `ordinal`'s attributes and the properties the
 * server reports (no context needed). OUT_OF_RANGE for an ordinal past the
 * loader's device count; the mapped error of a failed query. */
cubert_status_t cubert__cuda_device_query(const cubert_cuda_loader_t *cu, uint32_t ordinal,
                                          cubert_cuda_device_info_t *out_info,
                                          cubert_error_t *out_error);

/* Open device `ordinal`: retain its primary context, make it current, read
 * its attributes, set up the event pool, function cache and staging pool.
 * `cu` is borrowed (must outlive the device). The device keeps `allocator`.
 * Returns OK; INVALID_ARGUMENT (NULL cu / out_device); OUT_OF_RANGE (bad
 * ordinal); RESOURCE_EXHAUSTED (host allocation, mutex); the mapped driver
 * error. On failure nothing is left behind. */
cubert_status_t cubert__cuda_device_open(const cubert_cuda_loader_t *cu, uint32_t ordinal,
                                         cubert_allocator_t allocator,
                                         cubert_cuda_device_t **out_device,
                                         cubert_error_t *out_error);

/* Free everything the device holds (modules, pooled events, staging chunks
 * after their pending copies, the scratch) and release the primary context.
 * Works on a lost device (driver errors are ignored; nothing waits on it).
 * Streams must be deinitialized first. NULL: no-op. */
void cubert__cuda_device_close(cubert_cuda_device_t *device);

/* Lost check + primary context current on this thread. OK or the lost
 * record (UNAVAILABLE) / the mapped cuCtxSetCurrent error. */
cubert_status_t cubert__cuda_device_enter(cubert_cuda_device_t *device, cubert_error_t *out_error);

/* Map a failed driver result (cubert__cuda_error_set) and, for a
 * context-poisoning code, mark the device lost with that record. Returns the
 * status (UNAVAILABLE for a lost device). Thread-safe. */
cubert_status_t cubert__cuda_device_fail(cubert_cuda_device_t *device, CUresult result,
                                         cubert_cuda_op_t op, const char *what, uint64_t size,
                                         cubert_error_t *out_error);

/* True once a context-poisoning error was seen on any device of the
 * process (then every CUDA device of the process is lost: the driver fails
 * every context's calls); *out_cause (may be NULL) gets the first cause:
 * kind DEVICE_LOST, that error's code, "CUDA device N lost first, ...".
 * Devices reached by it report it at their next call; opening a device
 * fails with UNAVAILABLE "CUDA device M cannot be opened: <first cause>".
 * Thread-safe, lock-free. */
bool cubert__cuda_process_lost(cubert_error_t *out_cause);

/* True once the device is lost. Thread-safe, lock-free. */
bool cubert__cuda_device_is_lost(const cubert_cuda_device_t *device);

/* What cubert__cuda_device_enter answers for a lost device (a loss of the
 * process reaching this one included), without making its context current:
 * for a caller that makes no CUDA call. OK, or UNAVAILABLE with the lost
 * record. Thread-safe. */
cubert_status_t cubert__cuda_device_check(cubert_cuda_device_t *device, cubert_error_t *out_error);

/* Copy the lost record into out_error (may be NULL) and return UNAVAILABLE;
 * OK (nothing written) when the device is not lost. Thread-safe. */
cubert_status_t cubert__cuda_device_lost_error(cubert_cuda_device_t *device,
                                               cubert_error_t *out_error);

/* Mark the device lost with `cause` (its text and driver code are kept
 * under kind DEVICE_LOST). The first cause wins. Thread-safe. */
void cubert__cuda_device_mark_lost(cubert_cuda_device_t *device, const cubert_error_t *cause);

/* The properties the server reports (copy of device->info.properties). */
void cubert__cuda_device_properties(const cubert_cuda_device_t *device,
                                    cubert_device_properties_t *out_properties);

/* ---- streams (cuda_stream.c) ------------------------------------------------------ */

/* A non-blocking CUstream and its queue of asynchronous errors. Caller
 * storage; the server keeps one per stream slot plus one for GC. */
typedef struct cubert_cuda_stream_t {
  cubert_cuda_device_t *device;
  CUstream handle;
  pthread_mutex_t mutex;
  cubert_error_t queued; /* aggregate (SERVER_UNHEALTHY) of queued errors; depth 0: none */
} cubert_cuda_stream_t;

/* Create a CU_STREAM_NON_BLOCKING stream on `device` into *out_stream.
 * Returns OK, INVALID_ARGUMENT, RESOURCE_EXHAUSTED (mutex), the lost record
 * or the mapped cuStreamCreate error; on failure *out_stream is unusable
 * (handle NULL) and nothing is left behind. */
cubert_status_t cubert__cuda_stream_initialize(cubert_cuda_device_t *device,
                                               cubert_cuda_stream_t *out_stream,
                                               cubert_error_t *out_error);

/* Destroy the CUstream (work already queued still completes, as
 * cuStreamDestroy does) and drop its queued errors. A stream whose handle is
 * NULL is a no-op. */
void cubert__cuda_stream_deinitialize(cubert_cuda_stream_t *stream);

/* Block until the stream's work finished (cuStreamSynchronize). Returns OK,
 * the lost record, or the mapped error (a poisoning one marks the device
 * lost). Queued errors are not drained here. */
cubert_status_t cubert__cuda_stream_synchronize(cubert_cuda_stream_t *stream,
                                                cubert_error_t *out_error);

/* Queue an error discovered after its operation was enqueued (NULL or an
 * empty record: nothing). Thread-safe. */
void cubert__cuda_stream_queue_error(cubert_cuda_stream_t *stream, const cubert_error_t *error);

/* Return and clear what went wrong asynchronously on the stream: first the
 * stream is polled (cuStreamQuery, never blocks) and a failure found there is
 * queued (a poisoning one marks the device lost). Then:
 *   device lost  -> UNAVAILABLE with the lost record (queue cleared);
 *   errors queued -> SERVER_UNHEALTHY with their aggregate (queue cleared);
 *   otherwise    -> OK.
 * Thread-safe. */
cubert_status_t cubert__cuda_stream_drain_errors(cubert_cuda_stream_t *stream,
                                                 cubert_error_t *out_error);

/* The same without polling the stream: for a caller that knows nothing ran
 * on it since an event was found complete without an error. Thread-safe. */
cubert_status_t cubert__cuda_stream_drain_queued(cubert_cuda_stream_t *stream,
                                                 cubert_error_t *out_error);

/* ---- events (cuda_event.c) ---------------------------------------------------------- */

/* Record a pooled event on the stream (created once, reused after release).
 * `timed` selects an event with timing enabled (profiling); others have
 * CU_EVENT_DISABLE_TIMING. The event belongs to the caller until
 * cubert__cuda_event_release. Returns OK, INVALID_ARGUMENT, RESOURCE_EXHAUSTED,
 * the lost record or the mapped error (nothing handed out then). */
cubert_status_t cubert__cuda_event_record(cubert_cuda_stream_t *stream, bool timed,
                                          cubert_cuda_event_t **out_event,
                                          cubert_error_t *out_error);

/* Make `stream` wait for `event` (cuStreamWaitEvent; does not block the host). */
cubert_status_t cubert__cuda_event_wait(cubert_cuda_stream_t *stream,
                                        const cubert_cuda_event_t *event,
                                        cubert_error_t *out_error);

/* *out_done = whether the work before the event finished (cuEventQuery;
 * never blocks). A failure found by the query is returned (and a poisoning
 * one marks the device lost). */
cubert_status_t cubert__cuda_event_query(cubert_cuda_device_t *device,
                                         const cubert_cuda_event_t *event, bool *out_done,
                                         cubert_error_t *out_error);

/* Block until the event completed (cuEventSynchronize). A lost device
 * returns at once. */
cubert_status_t cubert__cuda_event_synchronize(cubert_cuda_device_t *device,
                                               const cubert_cuda_event_t *event,
                                               cubert_error_t *out_error);

/* Nanoseconds between two completed timed events (cuEventElapsedTime,
 * about 0.5 us resolution). INVALID_ARGUMENT when either is not timed. */
cubert_status_t cubert__cuda_event_elapsed(cubert_cuda_device_t *device,
                                           const cubert_cuda_event_t *start,
                                           const cubert_cuda_event_t *end, uint64_t *out_ns,
                                           cubert_error_t *out_error);

/* Give the event back to the pool once every holder released it (it may be
 * re-recorded at once: an event in flight is fine, CUDA re-records it).
 * NULL: no-op. Thread-safe. */
void cubert__cuda_event_release(cubert_cuda_device_t *device, cubert_cuda_event_t *event);

/* One more holder of a handed-out event (it stays out of the pool until
 * that holder released it too). Thread-safe. */
void cubert__cuda_event_retain(cubert_cuda_event_t *event);

/* Pool counters (created, reused, live). Thread-safe. */
void cubert__cuda_event_pool_counts(cubert_cuda_device_t *device, uint64_t *out_created,
                                    uint64_t *out_reused, uint64_t *out_live);

/* Internal: pool setup / teardown (device open / close). */
cubert_status_t cubert__cuda_event_pool_initialize(cubert_cuda_event_pool_t *pool);
void cubert__cuda_event_pool_deinitialize(cubert_cuda_device_t *device);

/* ---- memory (cuda_memory.c) ----------------------------------------------------------- */

/* `size` bytes of device memory, ordered on `stream` (cuMemAllocAsync; a
 * device without memory pools uses cuMemAlloc), the size rounded up to
 * CUBERT_CUDA_MEMORY_ALIGNMENT and the address aligned to it. size 0:
 * INVALID_ARGUMENT. OUT_OF_MEMORY (kind IO_OUT_OF_MEMORY {size}) leaves
 * nothing allocated, so the caller may reclaim and retry. */
cubert_status_t cubert__cuda_memory_alloc(cubert_cuda_stream_t *stream, uint64_t size,
                                          CUdeviceptr *out_ptr, cubert_error_t *out_error);

/* cubert__cuda_memory_alloc, and on OUT_OF_MEMORY: reclaim(user) (the caller
 * frees what it can; NULL: none) then one more try. */
cubert_status_t cubert__cuda_memory_alloc_retry(cubert_cuda_stream_t *stream, uint64_t size,
                                                void (*reclaim)(void *user), void *user,
                                                CUdeviceptr *out_ptr, cubert_error_t *out_error);

/* Free `ptr` (from cubert__cuda_memory_alloc) ordered on `stream`: work
 * queued before on the stream may still use it (cuMemFreeAsync; cuMemFree
 * without memory pools). 0: no-op. On a lost device nothing is called. */
cubert_status_t cubert__cuda_memory_free(cubert_cuda_stream_t *stream, CUdeviceptr ptr,
                                         cubert_error_t *out_error);

/* Free `ptr` (from cubert__cuda_memory_alloc) now, when no stream can use it
 * any more (cuMemFree: it waits for the device). 0 or a lost device: no-op
 * (the context's memory goes with it). */
void cubert__cuda_memory_free_now(cubert_cuda_device_t *device, CUdeviceptr ptr);

/* A zeroed 32-bit word of device memory for stream memory operations
 * (cuStreamWaitValue32 / cuStreamWriteValue32), made on `stream`. Always
 * from cuMemAlloc: the driver refuses those operations on memory of
 * cuMemAllocAsync's pools (CUDA_ERROR_INVALID_VALUE, seen on an H100 with
 * driver 580). Words retired earlier whose streams passed them are freed
 * first. Returns OK, OUT_OF_MEMORY or the driver's error (nothing made). */
cubert_status_t cubert__cuda_word_alloc(cubert_cuda_stream_t *stream, CUdeviceptr *out_word,
                                        cubert_error_t *out_error);

/* Give `word` back once the work queued on `stream` so far has passed it:
 * freed at a later cubert__cuda_word_alloc or at device close, never
 * blocking here (when no event can be recorded: the stream is synchronized
 * and the word freed now). 0: no-op. */
void cubert__cuda_word_retire(cubert_cuda_stream_t *stream, CUdeviceptr word);

/* At device close: wait for every retired word's event and free them. */
void cubert__cuda_word_retire_all(cubert_cuda_device_t *device);

/* Set `size` bytes at `ptr` to `value` on the stream (cuMemsetD8Async). */
cubert_status_t cubert__cuda_memory_set(cubert_cuda_stream_t *stream, CUdeviceptr ptr,
                                        uint8_t value, uint64_t size, cubert_error_t *out_error);

/* Free and total device memory (cuMemGetInfo). */
cubert_status_t cubert__cuda_memory_info(cubert_cuda_device_t *device, uint64_t *out_free,
                                         uint64_t *out_total, cubert_error_t *out_error);

/* Pinned (page-locked, portable) host memory: cuMemHostAlloc. size 0:
 * INVALID_ARGUMENT; failure: RESOURCE_EXHAUSTED (kind HOST_OUT_OF_MEMORY
 * {size}) or the mapped error. Use the staging pool rather than calling
 * this per upload: pinning costs milliseconds per 64 MiB. */
cubert_status_t cubert__cuda_host_alloc(cubert_cuda_device_t *device, uint64_t size,
                                        void **out_ptr, cubert_error_t *out_error);

/* cuMemFreeHost (errors ignored; on a lost device too: host memory stays
 * freeable). NULL: no-op. */
void cubert__cuda_host_free(cubert_cuda_device_t *device, void *ptr);

/* ---- copies (cuda_copy.c) ------------------------------------------------------------- */

typedef enum cubert_cuda_copy_kind_e {
  CUBERT_CUDA_COPY_H2D = 0,
  CUBERT_CUDA_COPY_D2H = 1,
  CUBERT_CUDA_COPY_D2D = 2
} cubert_cuda_copy_kind_t;

/* Asynchronous 1-D copies on the stream. Host memory must stay valid (and,
 * for H2D, unchanged) until the stream reaches the copy; pinned host memory
 * makes them truly asynchronous. size 0: no-op (OK). */
cubert_status_t cubert__cuda_copy_h2d(cubert_cuda_stream_t *stream, CUdeviceptr dst,
                                      const void *src, uint64_t size, cubert_error_t *out_error);
cubert_status_t cubert__cuda_copy_d2h(cubert_cuda_stream_t *stream, void *dst, CUdeviceptr src,
                                      uint64_t size, cubert_error_t *out_error);
cubert_status_t cubert__cuda_copy_d2d(cubert_cuda_stream_t *stream, CUdeviceptr dst,
                                      CUdeviceptr src, uint64_t size, cubert_error_t *out_error);

/* A pitched 2-D copy: `height` rows of `width_bytes`; rows `src_pitch` /
 * `dst_pitch` bytes apart. Host sides use src_host / dst_host, device sides
 * src_device / dst_device (by `kind`). */
typedef struct cubert_cuda_copy_2d_t {
  cubert_cuda_copy_kind_t kind;
  const void *src_host;
  CUdeviceptr src_device;
  uint64_t src_pitch;
  void *dst_host;
  CUdeviceptr dst_device;
  uint64_t dst_pitch;
  uint64_t width_bytes;
  uint64_t height;
} cubert_cuda_copy_2d_t;

/* cuMemcpy2DAsync. INVALID_ARGUMENT when a pitch is below width_bytes, a
 * pointer of the used sides is NULL/0, or the kind is unknown; OVERFLOW when
 * a span does not fit 64 bits. width or height 0: no-op. */
cubert_status_t cubert__cuda_copy_2d(cubert_cuda_stream_t *stream,
                                     const cubert_cuda_copy_2d_t *copy, cubert_error_t *out_error);

/* A tensor transfer by its plan (cubert_copy_plan: the device side
 * pitched by plan->src_pitch_bytes, the host side packed): 2-D when
 * plan->pitched, else one linear copy of plan->total_bytes. `to_device`:
 * host -> device (a write), else device -> host (a read). */
cubert_status_t cubert__cuda_copy_planned(cubert_cuda_stream_t *stream,
                                          const cubert_copy_plan_t *plan, bool to_device,
                                          void *host, CUdeviceptr device_ptr,
                                          cubert_error_t *out_error);

/* ---- kernels (cuda_module.c, cuda_launch.c) ------------------------------------------- */

/* The launchable function of `kernel` (cached by descriptor pointer): the
 * first time, the image is found (descriptor image, else the registry by
 * cuda_entry_name), its module loaded once (cuModuleLoadDataEx with the JIT
 * logs kept; a cubin of the device's exact architecture is tried before the
 * PTX), the function looked up by cuda_entry_name, its attributes read, and
 * a dynamic shared size above 48 KiB opted in. Errors: INVALID_ARGUMENT
 * (NULL kernel or entry name), COMPILATION_FAILED (kind
 * COMPILATION_GENERIC inside LAUNCH_COMPILATION inside SERVER_LAUNCH: no
 * image, JIT failure with the start of the error log in the reason, entry
 * not in the image), RESOURCE_EXHAUSTED, LIMIT_EXCEEDED (dynamic shared
 * memory above the device's), the lost record. */
cubert_status_t cubert__cuda_function_get(cubert_cuda_device_t *device,
                                          const cubert_kernel_t *kernel,
                                          const cubert_cuda_function_t **out_function,
                                          cubert_error_t *out_error);
/* The same through a stream's memo: a kernel the memo holds (same
 * descriptor address, entry name, image and shared size) is answered
 * without the module cache's mutex (the launch path of many threads on
 * many streams, issue 27); a miss takes cubert__cuda_function_get and
 * remembers its answer. A lost device answers its lost record either way.
 * Same errors. */
cubert_status_t cubert__cuda_function_get_memo(cubert_cuda_device_t *device,
                                               cubert_cuda_function_memo_t *memo,
                                               const cubert_kernel_t *kernel,
                                               const cubert_cuda_function_t **out_function,
                                               cubert_error_t *out_error);

/* The JIT logs of the last module load (error log of the last failure).
 * Valid until the next load on the device. */
const char *cubert__cuda_module_error_log(const cubert_cuda_device_t *device);
const char *cubert__cuda_module_info_log(const cubert_cuda_device_t *device);

/* Internal: cache teardown (device close). */
void cubert__cuda_module_cache_deinitialize(cubert_cuda_device_t *device);

/* Check a launch of `function` over `count` cubes against the device's and
 * the function's limits, in this order (each LIMIT_EXCEEDED inside
 * LAUNCH_TOO_MANY_RESOURCES inside SERVER_LAUNCH): cube dim per axis
 * (RESOURCE_CUBE_DIM), units per cube vs the device (RESOURCE_UNITS), units
 * vs the compiled function (RESOURCE_MAX_UNIT_PER_CUBE), static + dynamic
 * shared memory (RESOURCE_SHARED_MEMORY), cube count per axis
 * (RESOURCE_UNITS {count, max}). Pure (no driver call). */
cubert_status_t cubert__cuda_launch_check(const cubert_cuda_device_t *device,
                                          const cubert_cuda_function_t *function,
                                          cubert_dim3_t count, cubert_error_t *out_error);

/* cubert__cuda_launch_check for a launch-time shape: `dim` units per cube and
 * `shared_bytes` of dynamic shared memory instead of the descriptor's. */
cubert_status_t cubert__cuda_launch_check_shaped(const cubert_cuda_device_t *device,
                                                 const cubert_cuda_function_t *function,
                                                 cubert_dim3_t count, cubert_dim3_t dim,
                                                 uint32_t shared_bytes, cubert_error_t *out_error);
/* cubert__cuda_launch with a launch-time shape (`dim`, `shared_bytes`); above
 * 48 KiB of dynamic shared memory it raises the function's
 * MAX_DYNAMIC_SHARED_SIZE_BYTES first (cuFuncSetAttribute's error, mapped). */
cubert_status_t cubert__cuda_launch_shaped(cubert_cuda_stream_t *stream,
                                           const cubert_cuda_function_t *function,
                                           cubert_dim3_t count, cubert_dim3_t dim,
                                           uint32_t shared_bytes, const cubert_kernel_args_t *args,
                                           uint32_t mode, CUdeviceptr report,
                                           cubert_error_t *out_error);

/* Launch `function` on the stream over `count` cubes of kernel->cube_dim
 * units with kernel->shared_memory_bytes of dynamic shared memory:
 * kernel(args by value, mode, report) as CUBERT_KERNEL defines it under
 * nvcc. `report` is a device address of a zeroed cubert_kernel_report_t (0:
 * none; needed for CHECKED / VALIDATE counts). A count with a zero axis
 * launches nothing (OK). Errors: INVALID_ARGUMENT (NULL, fewer buffer or
 * scalar slots than the kernel reads, mode unknown), the launch_check codes,
 * the lost record, the mapped cuLaunchKernel error. Failures of the kernel
 * itself surface later, on the stream (cubert__cuda_stream_drain_errors). */
cubert_status_t cubert__cuda_launch(cubert_cuda_stream_t *stream,
                                    const cubert_cuda_function_t *function, cubert_dim3_t count,
                                    const cubert_kernel_args_t *args, uint32_t mode,
                                    CUdeviceptr report, cubert_error_t *out_error);

/* A launch whose cube count is read at launch time from three u32 [x, y, z]
 * at device address `count_ptr` (CubeCount::Dynamic): the count is copied
 * back through a pinned word buffer and the stream synchronized (this
 * blocks until the stream's earlier work finished), then cubert__cuda_launch.
 * *out_count (may be NULL) receives the count read. */
cubert_status_t cubert__cuda_launch_dynamic(cubert_cuda_stream_t *stream,
                                            const cubert_cuda_function_t *function,
                                            CUdeviceptr count_ptr, const cubert_kernel_args_t *args,
                                            uint32_t mode, CUdeviceptr report,
                                            cubert_dim3_t *out_count, cubert_error_t *out_error);

/* ---- staging (cuda_staging.c) ---------------------------------------------------------- */

/* A pinned chunk of at least `size` bytes: an idle chunk of the size class
 * whose last use completed, else a new one (cuMemHostAlloc of the class plus
 * the record's header; on HOST_OUT_OF_MEMORY the idle chunks are trimmed and
 * it is tried again). No host allocation. size 0: INVALID_ARGUMENT; above
 * 2^47: BUFFER_TOO_BIG. Thread-safe. */
cubert_status_t cubert__cuda_staging_acquire(cubert_cuda_device_t *device, uint64_t size,
                                             cubert_cuda_staging_chunk_t **out_chunk,
                                             cubert_error_t *out_error);

/* The record of the chunk whose data starts at `ptr` (a chunk's ptr), or
 * NULL when `ptr` is not one. Pure (reads the header before ptr: only pass
 * pointers that may be chunk data, i.e. from this pool or NULL). */
cubert_cuda_staging_chunk_t *cubert__cuda_staging_chunk_of(void *ptr);

/* Acquire for an upload ring: when the class holds chunks but none is
 * ready, wait for the oldest one's use (cuEventSynchronize) rather than pin
 * a new one. Otherwise as cubert__cuda_staging_acquire. */
cubert_status_t cubert__cuda_staging_acquire_wait(cubert_cuda_device_t *device, uint64_t size,
                                                  cubert_cuda_staging_chunk_t **out_chunk,
                                                  cubert_error_t *out_error);

/* Hand a chunk back. `event` (may be NULL; ownership moves to the pool)
 * marks a use in flight: the chunk is reused only once it completed.
 * Thread-safe. */
void cubert__cuda_staging_release(cubert_cuda_device_t *device,
                                  cubert_cuda_staging_chunk_t *chunk, cubert_cuda_event_t *event);

/* Upload `size` bytes from pageable host memory `src` to `dst` on the
 * stream. Up to CUBERT_CUDA_STAGING_DIRECT_MAX bytes: one cuMemcpyHtoDAsync
 * from `src` (the driver stages it). Above: through two pinned chunks of
 * upload_chunk_bytes (one when the upload fits one), alternately filled
 * (memcpy) and copied (cuMemcpyHtoDAsync), so filling one overlaps the
 * other's transfer; the chunks come from the pool and go back to it (when
 * the pool's chunks of that size are all still in use by earlier copies,
 * the oldest is waited for rather than a new one pinned). Returns
 * once the last piece is enqueued: `src` may be reused then. On failure the
 * chunks are back in the pool (after the stream was synchronized) and the
 * destination content is unspecified. */
cubert_status_t cubert__cuda_staging_upload(cubert_cuda_stream_t *stream, CUdeviceptr dst,
                                            const void *src, uint64_t size,
                                            cubert_error_t *out_error);

/* Free every idle chunk whose last use completed; returns the bytes freed.
 * Thread-safe. */
uint64_t cubert__cuda_staging_trim(cubert_cuda_device_t *device);

/* Counters. Thread-safe. */
void cubert__cuda_staging_stats(cubert_cuda_device_t *device, cubert_cuda_staging_stats_t *out);

/* Internal: pool setup / teardown (device open / close). */
cubert_status_t cubert__cuda_staging_pool_initialize(cubert_cuda_staging_pool_t *pool);
void cubert__cuda_staging_pool_deinitialize(cubert_cuda_device_t *device);

#endif /* CUBERT_BACKEND_CUDA_DEVICE_CUDA_DEVICE_H */
