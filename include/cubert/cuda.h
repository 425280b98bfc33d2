/* SPDX-License-Identifier: MIT */
/*
 * cubert/cuda.h: the CUDA device (backend-cuda: the CUDA driver under the
 * server) and what the CUDA driver offers users directly: whether CUDA
 * can be used in this process, the CUDA devices and their properties, and
 * the registry of kernel images (PTX / cubin that nvcc built from the
 * single-source kernels). docs/cuda.md is the guide.
 *
 * Defined only in a CUDA=1 build of the library (CUBERT_HAVE_BACKEND_CUDA);
 * the header itself compiles everywhere. libcuda.so.1 is opened at run time
 * (never linked): without a driver or a GPU every function below still
 * works and reports "CUDA unavailable: <reason>".
 *
 * Thread-safety: every function is thread-safe. The first call that needs
 * the driver loads it (dlopen, cuGetProcAddress, cuInit), once per process;
 * that call blocks for as long as the driver takes (tens of milliseconds).
 */
#ifndef CUBERT_CUDA_H
#define CUBERT_CUDA_H

#include "cubert/base.h"
#include "cubert/client.h"
#include "cubert/error.h"
#include "cubert/profile.h"
#include "cubert/properties.h"
#include "cubert/race.h"

CUBERT_EXTERN_C_BEGIN

/* ---- kernel images -------------------------------------------------------
 * A kernel image is one nvcc output for one kernel source file: PTX text
 * (JIT-compiled by the driver for any GPU) and, where the build made one, a
 * cubin for one architecture (loaded as is on a GPU of exactly that compute
 * capability). `entries` names the extern "C" __global__ functions it holds,
 * i.e. the names given to CUBERT_KERNEL. Images are plain constant data,
 * generated as C by tools/cubert-kernel-image.sh (make rule: docs/kernels.md).
 *
 * The CUDA server finds a kernel's code this way: the descriptor's
 * cuda_image / cuda_image_size when set (raw PTX text or cubin bytes), else
 * the registered image that lists the descriptor's cuda_entry_name. */
typedef struct cubert_cuda_image_t {
  const char *name;           /* e.g. "cts_kernels" (for errors and logs) */
  const char *ptx;            /* NUL-terminated PTX text, or NULL */
  size_t ptx_size;            /* bytes including the NUL (0 when no PTX) */
  const void *cubin;          /* ELF cubin, or NULL */
  size_t cubin_size;
  uint32_t cubin_arch;        /* 10 * major + minor of the cubin's target (90: sm_90) */
  const char *const *entries; /* the kernels' entry names */
  uint32_t entry_count;
} cubert_cuda_image_t;

/* Images the registry holds at most. */
#define CUBERT_CUDA_IMAGE_REGISTRY_MAX 128

/* Add `image` (borrowed: it must stay valid for the process's life, as
 * generated images do) to the process-wide registry. Registering the same
 * image twice is a no-op (OK). An entry name already listed by another
 * image is allowed; the first registered image wins at lookup.
 * Returns OK; INVALID_ARGUMENT (kind INVALID_ARGUMENT) when image is NULL,
 * has neither PTX nor cubin, or lists no entry (or a NULL one);
 * RESOURCE_EXHAUSTED (kind HOST_OUT_OF_MEMORY) when
 * CUBERT_CUDA_IMAGE_REGISTRY_MAX images are registered already. Nothing
 * changes on failure. Thread-safe (a mutex); generated image files call it
 * from a constructor before main. */
CUBERT_API cubert_status_t cubert_cuda_image_register(const cubert_cuda_image_t *image,
                                                      cubert_error_t *out_error);

/* The first registered image listing `entry_name`, or NULL (also for a NULL
 * name). Thread-safe, non-blocking apart from the registry's mutex. */
CUBERT_API const cubert_cuda_image_t *cubert_cuda_image_find(const char *entry_name);

/* Number of registered images. Thread-safe. */
CUBERT_API size_t cubert_cuda_image_count(void);

/* ---- availability and devices ------------------------------------------- */

/* OK when libcuda.so.1 (or the file named by the environment variable
 * CUBERT_LIBCUDA) loads, is at least CUDA 12.0, exposes every entry point the
 * server uses, initializes (cuInit) and reports at least one device.
 * Otherwise FAILED_PRECONDITION, kind SERVICE_CREATION, reason
 * "CUDA unavailable: <reason>" (driver_code: the CUresult when a driver call
 * failed). The answer is computed once per process and then only copied.
 * out_error may be NULL. Thread-safe; the first call blocks while loading. */
CUBERT_API cubert_status_t cubert_cuda_available(cubert_error_t *out_error);

/* Number of CUDA devices (as cuDeviceGetCount). The codes of
 * cubert_cuda_available; INVALID_ARGUMENT for a NULL out_count. */
CUBERT_API cubert_status_t cubert_cuda_device_count(uint32_t *out_count, cubert_error_t *out_error);

/* One CUDA device as cubert-info prints it. */
typedef struct cubert_cuda_device_info_t {
  uint32_t ordinal;                      /* CUdevice ordinal */
  uint32_t compute_major, compute_minor; /* compute capability */
  uint64_t total_memory;                 /* bytes (cuDeviceTotalMem) */
  uint32_t clock_khz;                    /* SM clock */
  uint32_t memory_clock_khz;
  uint32_t memory_bus_width;             /* bits */
  uint32_t l2_cache_bytes;
  uint32_t async_alloc;                  /* 1: cuMemAllocAsync (memory pools) supported */
  uint32_t max_shared_memory_per_block;  /* default limit; properties carry the opt-in one */
  uint32_t registers_per_block;
  int driver_version;                    /* e.g. 13000 */
  char pci_bus_id[32];                   /* "0000:3b:00.0" ("" when unknown) */
  cubert_device_properties_t properties; /* as the CUDA server reports them */
} cubert_cuda_device_info_t;

/* Fill *out with device `ordinal`'s attributes (no context is created).
 * Returns OK; the codes of cubert_cuda_available; INVALID_ARGUMENT for a NULL
 * out; OUT_OF_RANGE (kind OUT_OF_RANGE, fields ordinal, count) for an
 * ordinal >= the device count; the mapped CUresult when a query fails.
 * *out is untouched on failure. Thread-safe. */
CUBERT_API cubert_status_t cubert_cuda_device_info(uint32_t ordinal,
                                                   cubert_cuda_device_info_t *out,
                                                   cubert_error_t *out_error);

/* ---- the CUDA device --------------------------------------------------------
 * A CUDA device is one GPU under the server, used through the client API
 * like any other device: the GPU's primary context (retained once per
 * process and kept: creating and releasing clients does not re-create it;
 * made current on every thread that enters the device), one non-blocking
 * CUstream per stream slot plus one for the GC and one for collectives
 * (all_reduce through NCCL, send / recv and to_client as peer copies within
 * the process; docs/collectives.md), pooled events,
 * memory through the server's pools over cuMemAllocAsync (512-byte alignment;
 * the PITCHED layout policy: optimized tensors get 512-byte aligned rows),
 * pinned staging buffers from a reused pool, kernels found by name in the
 * registered images (or the descriptor's own image). Errors of work that ran
 * on the GPU surface at the next flush / sync / read of its stream
 * (SERVER_UNHEALTHY); a context-poisoning error (an illegal address, ...)
 * loses the device: every later call on it returns UNAVAILABLE (kind
 * DEVICE_LOST) at once, other devices keep working. */

/* Type id of CUDA devices in the device registry. */
#define CUBERT_CUDA_DEVICE_TYPE 2

/* How a host thread waits for the GPU in a sync, a read or any completion
 * (cubert_completion_wait without a deadline). Spinning answers within a
 * fraction of a microsecond of the GPU finishing but keeps a CPU core busy
 * meanwhile; blocking frees the core and pays the wake-up (several
 * microseconds, more in a virtual machine). */
typedef enum cubert_cuda_sync_mode_e {
  /* Poll the completion's event (cuEventQuery) for up to sync_spin_us, then
   * cuEventSynchronize (which waits as the context's scheduling says). */
  CUBERT_CUDA_SYNC_AUTO = 0,
  /* Poll until the event completed, however long that takes. */
  CUBERT_CUDA_SYNC_SPIN = 1,
  /* Poll, giving the CPU away (sched_yield) between polls. */
  CUBERT_CUDA_SYNC_YIELD = 2,
  /* cuEventSynchronize at once (the thread sleeps if the context's
   * scheduling is BLOCKING_SYNC; CUDA's default spins or yields). */
  CUBERT_CUDA_SYNC_BLOCKING = 3,
  CUBERT_CUDA_SYNC_MODE_FORCE_32BIT_ = 0x7FFFFFFF /* 4 bytes everywhere */
} cubert_cuda_sync_mode_t;

/* The scheduling flags of the GPU's primary context (CU_CTX_SCHED_*): how
 * CUDA itself waits in cuEventSynchronize / cuStreamSynchronize. The primary
 * context is shared by everything in the process that uses the GPU (the CUDA
 * runtime included), so DEFAULT leaves it alone; another value is set with
 * cuDevicePrimaryCtxSetFlags when the device is created (before the context
 * is first made where possible) and applies to the whole process. */
typedef enum cubert_cuda_schedule_e {
  CUBERT_CUDA_SCHEDULE_DEFAULT = 0, /* as found (CUDA: AUTO, spin unless contexts > cores) */
  CUBERT_CUDA_SCHEDULE_SPIN = 1,    /* CU_CTX_SCHED_SPIN */
  CUBERT_CUDA_SCHEDULE_YIELD = 2,   /* CU_CTX_SCHED_YIELD */
  CUBERT_CUDA_SCHEDULE_BLOCKING = 3, /* CU_CTX_SCHED_BLOCKING_SYNC: the thread sleeps */
  CUBERT_CUDA_SCHEDULE_FORCE_32BIT_ = 0x7FFFFFFF /* 4 bytes everywhere */
} cubert_cuda_schedule_t;

/* Default of cubert_cuda_options_t.sync_spin_us: long enough for the
 * short kernels of an eager workload (a 16M-float add takes ~0.1 ms on an
 * H100); CUDA's own default spins without a limit when a process has fewer
 * contexts than cores. */
#define CUBERT_CUDA_SYNC_SPIN_US_DEFAULT 1000u

/* How large uploads copy pageable bytes into pinned chunks. */
typedef enum cubert_cuda_upload_copy_e {
  CUBERT_CUDA_UPLOAD_COPY_AUTO = 0,      /* STREAMING where the CPU has it, else CACHED */
  CUBERT_CUDA_UPLOAD_COPY_CACHED = 1,    /* memcpy */
  CUBERT_CUDA_UPLOAD_COPY_STREAMING = 2, /* non-temporal stores (x86-64): the chunk's lines
                                            are not read first nor kept in the caches */
  CUBERT_CUDA_UPLOAD_COPY_FORCE_32BIT_ = 0x7FFFFFFF /* 4 bytes everywhere */
} cubert_cuda_upload_copy_t;

typedef struct cubert_cuda_options_t {
  /* What every device has (cubert/client.h): registered as
   * {CUBERT_CUDA_DEVICE_TYPE, device.index}, usually equal to ordinal; several
   * devices may share one GPU (each with its own streams, pools and caches on
   * the GPU's primary context); memory_size 0: a quarter of the GPU's memory;
   * device.faults: the server's (dropped waits) only, the CUDA driver injects
   * no run-time fault. */
  cubert_device_options_t device;
  /* The GPU: the CUdevice ordinal, below cubert_cuda_device_count. */
  uint32_t ordinal;
  /* Kernel profiling of the new device with the stderr sink (as on the
   * CPU device); cubert_cuda_options_initialize reads CUBERT_PROFILE_LEVEL. */
  cubert_profile_level_t profile_level;
  /* Host threads (the calling one included) that copy large uploads from
   * pageable memory into pinned chunks, and large reads out of them; 0: the
   * default (the online CPUs, at most 16); 1: the calling thread alone. */
  uint32_t upload_threads;
  /* How waits for the GPU wait (AUTO: spin up to sync_spin_us, then block). */
  cubert_cuda_sync_mode_t sync_mode;
  /* AUTO's polling time in microseconds; 0: CUBERT_CUDA_SYNC_SPIN_US_DEFAULT. */
  uint32_t sync_spin_us;
  /* The primary context's scheduling flags (process-wide; DEFAULT: untouched). */
  cubert_cuda_schedule_t schedule;
  /* How large uploads fill their pinned chunks. */
  cubert_cuda_upload_copy_t upload_copy;
  /* How long a collective waits for its peers before its communicator is
   * aborted (docs/collectives.md); 0: 60000 ms. */
  uint32_t collective_timeout_ms;
  uint32_t reserved_;
} cubert_cuda_options_t;

/* Defaults: GPU 0, index 0, 16 streams, collective timeout 60 s, profile level from the
 * CUBERT_PROFILE_LEVEL environment variable (getenv), sync AUTO with
 * CUBERT_CUDA_SYNC_SPIN_US_DEFAULT, schedule DEFAULT, upload copy AUTO.
 * NULL: no-op. */
CUBERT_API void cubert_cuda_options_initialize(cubert_cuda_options_t *options);

/* Create a CUDA device over GPU options->ordinal and its first client
 * (registered in the device registry; cubert_client_load finds it).
 * options NULL: the defaults. Loads the driver on first use (see
 * cubert_cuda_available). Returns OK; FAILED_PRECONDITION ("CUDA
 * unavailable: <reason>": no driver, no GPU, an old driver) or OUT_OF_RANGE
 * (an ordinal past the device count), with nothing created;
 * ALREADY_EXISTS (kind SERVICE_CREATION) when the index is taken; INVALID_ARGUMENT (NULL
 * out_client, max_streams above 255, an unknown profile level, sync mode,
 * schedule or upload copy);
 * RESOURCE_EXHAUSTED; the mapped CUresult of a failed driver call. Nothing
 * is left behind on failure. Thread-safe; blocks while the driver loads and
 * the context is made (the first device of a GPU: tens to hundreds of
 * milliseconds). */
CUBERT_API cubert_status_t cubert_cuda_client_create(cubert_allocator_t allocator,
                                                     const cubert_cuda_options_t *options,
                                                     cubert_client_t **out_client,
                                                     cubert_error_t *out_error);

/* Counters of a CUDA device's transfers and launches (tests, benchmarks). */
typedef struct cubert_cuda_client_stats_t {
  uint64_t copies_direct;  /* through the CUDA driver as given (small, device to device) */
  uint64_t copies_pinned;  /* the host side was a staging buffer: DMA only */
  uint64_t uploads_staged; /* uploads from pageable memory through pinned pieces */
  uint64_t reads_staged;   /* reads through a pinned chunk, copied out when waited for */
  uint64_t reads_pieced;   /* large reads through the piece ring */
  uint64_t copy_outs;      /* staged reads copied to their destination */
  uint64_t alloc_retries;  /* allocations retried after reclaiming */
  uint64_t dynamic_reads;  /* dynamic cube counts read back */
  uint64_t reports_read;   /* VALIDATE reports read back */
  uint64_t pinned_bytes;   /* pinned bytes the device's staging pool holds */
  uint64_t events_created; /* events made (the rest were reused) */
  uint64_t module_loads;   /* cuModuleLoadDataEx calls that succeeded */
  uint32_t upload_threads; /* host threads of large transfers */
  uint32_t upload_streaming; /* 1: large uploads fill chunks with non-temporal stores */
  uint64_t uploads_borrowed; /* of uploads_staged: read in place from the caller's bytes
                                (create / write above CUBERT_DRIVER_BORROW_MIN: no client copy) */
  uint64_t sync_spins;     /* waits that ended while polling */
  uint64_t sync_blocks;    /* waits that ended in cuEventSynchronize */
  uint64_t stream_queries_skipped; /* error drains that knew the stream idle (no cuStreamQuery) */
  uint32_t context_flags;  /* the primary context's flags (cuDevicePrimaryCtxGetState) */
  uint32_t reserved_;
} cubert_cuda_client_stats_t;

/* The counters of `client`'s CUDA device. INVALID_ARGUMENT for NULL;
 * NOT_FOUND when the client is not on a CUDA device. Takes the device
 * briefly. */
CUBERT_API cubert_status_t cubert_cuda_client_stats(cubert_client_t *client,
                                                    cubert_cuda_client_stats_t *out_stats);

/* The JIT logs of the last module load of `client`'s CUDA device: the error
 * log of the last failed load (a compilation error's reason carries its
 * start) and the info log, copied and NUL-terminated (truncated to
 * `size`). INVALID_ARGUMENT for NULL or size 0; NOT_FOUND when the client
 * is not on a CUDA device. Takes the device briefly. */
CUBERT_API cubert_status_t cubert_cuda_client_jit_log(cubert_client_t *client, char *out_error_log,
                                                      char *out_info_log, size_t size);

/* ---- stream order with other CUDA code -----------------------------------------
 * Work of cubert and of another library (the CUDA runtime, PyTorch, CuPy, a
 * library of the Driver API) on one GPU, ordered on the GPU without a host
 * wait. The cubert side is `client`'s stream (the calling thread's, or the
 * pinned one: cubert_client_set_stream) on its CUDA device; the other side
 * an event or a stream of the same GPU's primary context (the one the CUDA
 * runtime uses for that device; the driver refuses to record an event on a
 * stream of another context: INVALID_ARGUMENT, while waiting on an event of
 * another context is allowed, as in CUDA). The types are cuda.h's CUevent
 * and CUstream (cudaEvent_t and cudaStream_t are the same handles), spelled
 * `struct CUevent_st *` / `struct CUstream_st *` so that this header does not
 * need cuda.h. A NULL stream is the legacy default stream, as in CUDA;
 * CU_STREAM_LEGACY and CU_STREAM_PER_THREAD are accepted too.
 *
 * Each call covers the work submitted to the cubert stream before it (the
 * server submits every operation to the GPU when it is called), not later
 * work; none waits for the GPU: they return once the event is recorded or
 * the wait enqueued. Thread-safe: each takes the device briefly (as an
 * exclusive section). Codes, for all four: OK; INVALID_ARGUMENT (a NULL
 * client, out_event or event); UNSUPPORTED (kind IO_UNSUPPORTED_IO_OPERATION,
 * "... not a CUDA device") for a client on another driver; the lost record
 * (UNAVAILABLE, DEVICE_LOST) on a lost device; the mapped CUresult of a
 * failed driver call (a stream of another context: INVALID_ARGUMENT,
 * driver_code CUDA_ERROR_INVALID_HANDLE; a destroyed event or stream is
 * undefined behaviour in CUDA, as here). Nothing is enqueued on failure, and
 * no event is left behind. Defined in CUDA=1 builds. */
struct CUevent_st;
struct CUstream_st;

/* Export as an event: record a new event (CU_EVENT_DISABLE_TIMING) after
 * the work submitted so far on the client's stream, into *out_event. The
 * caller owns it: wait on it (cuStreamWaitEvent, cudaStreamWaitEvent,
 * torch.cuda.Event... ) as often as it likes and destroy it with
 * cuEventDestroy (or cudaEventDestroy) once done; cubert never touches it
 * again. *out_event is untouched on failure. */
CUBERT_API cubert_status_t cubert_cuda_export_event(cubert_client_t *client,
                                                    struct CUevent_st **out_event,
                                                    cubert_error_t *out_error);

/* Export into a stream: the caller's `stream`'s later work waits for the
 * work submitted so far on the client's stream (an event recorded there,
 * cuStreamWaitEvent on `stream`, the event released: nothing for the caller
 * to free). */
CUBERT_API cubert_status_t cubert_cuda_export_to_stream(cubert_client_t *client,
                                                        struct CUstream_st *stream,
                                                        cubert_error_t *out_error);

/* Import an event: the client's stream's later work waits for `event`'s
 * last record at the time of the call (cuStreamWaitEvent; an event never
 * recorded is complete: no wait, as in CUDA). The event stays the caller's:
 * it may be recorded again or destroyed right after the call. */
CUBERT_API cubert_status_t cubert_cuda_import_event(cubert_client_t *client,
                                                    struct CUevent_st *event,
                                                    cubert_error_t *out_error);

/* Import a stream: the client's stream's later work waits for the work
 * submitted to `stream` so far (an event recorded there and waited on,
 * then released). */
CUBERT_API cubert_status_t cubert_cuda_import_stream(cubert_client_t *client,
                                                     struct CUstream_st *stream,
                                                     cubert_error_t *out_error);

/* ---- process communicators (NCCL across processes) ---------------------------
 * Collectives among CUDA devices of one process need nothing more: the
 * device list of all_reduce / send / recv names them (docs/collectives.md).
 * Across processes each process makes its device one rank of an NCCL
 * communicator with cubert_cuda_comm_init_rank; its collectives then name
 * one device per rank, sorted by index, this device at position `rank`
 * (simplest: process r creates its device with device_index r and passes
 * the ids {CUBERT_CUDA_DEVICE_TYPE, 0 .. nranks - 1}).
 * libnccl.so.2 (or the file named by CUBERT_LIBNCCL) is opened at run time,
 * NCCL 2.14 or newer; without it these answer UNSUPPORTED, "NCCL
 * unavailable: <reason>". examples/cuda_multiprocess.c starts N processes. */

/* The 128 bytes every rank of one communicator must get (ncclUniqueId). */
typedef struct cubert_cuda_comm_id_t {
  unsigned char bytes[128];
} cubert_cuda_comm_id_t;

/* A fresh id (ncclGetUniqueId), to hand to every rank by any means. OK;
 * INVALID_ARGUMENT (NULL); UNSUPPORTED ("NCCL unavailable: ..."); the
 * mapped ncclResult_t. Thread-safe; blocks briefly (NCCL binds a socket). */
CUBERT_API cubert_status_t cubert_cuda_comm_unique_id(cubert_cuda_comm_id_t *out_id,
                                                      cubert_error_t *out_error);

typedef struct cubert_cuda_comm_options_t {
  uint32_t rank;   /* this process's rank, < nranks */
  uint32_t nranks; /* processes, 2 .. 64 */
  /* Exactly one of: `id`, the id every rank got from
   * cubert_cuda_comm_unique_id (borrowed for the call); or `id_file`, a path
   * every rank can reach: rank 0 makes the id and writes the file (a
   * temporary file renamed into place), the others wait for it, rank 0
   * removes it once every rank joined. The file must not exist beforehand:
   * use a fresh path per run (e.g. inside a mkdtemp directory). */
  const cubert_cuda_comm_id_t *id;
  const char *id_file;
  /* How long to wait for the id file and for every rank to join, and the
   * collective timeout of the communicator; 0: 60000 ms. */
  uint32_t timeout_ms;
  uint32_t reserved_;
} cubert_cuda_comm_options_t;

/* Zeroes (no id, no file, the default timeout). NULL: no-op. */
CUBERT_API void cubert_cuda_comm_options_initialize(cubert_cuda_comm_options_t *options);

/* Make `client`'s CUDA device rank options->rank of a communicator of
 * options->nranks processes (ncclCommInitRankConfig, non-blocking, polled):
 * blocks until every rank joined or the timeout passed. The communicator
 * lives until the device is destroyed (ncclCommDestroy then). Each process
 * calls it once per device (one rank per process).
 * Returns OK; INVALID_ARGUMENT (NULL, nranks outside 2..64, rank >= nranks,
 * not exactly one of id / id_file, a malformed id file); DEVICE_MISMATCH
 * (not a CUDA device); UNSUPPORTED ("NCCL unavailable: ...", also for NCCL
 * older than 2.14); DEADLINE_EXCEEDED (no id file, or not every rank
 * joined, within the timeout); FAILED_PRECONDITION (the device has a process
 * communicator already); RESOURCE_EXHAUSTED (8 per process); IO_FAILED (the
 * id file cannot be written); the mapped ncclResult_t. Nothing is left
 * behind on failure. Thread-safe; holds the device while NCCL initializes. */
CUBERT_API cubert_status_t cubert_cuda_comm_init_rank(cubert_client_t *client,
                                                      const cubert_cuda_comm_options_t *options,
                                                      cubert_error_t *out_error);

CUBERT_EXTERN_C_END

#endif /* CUBERT_CUDA_H */
