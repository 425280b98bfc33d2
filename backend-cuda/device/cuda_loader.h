/* SPDX-License-Identifier: MIT */
/*
 * backend-cuda/device/cuda_loader.h: libcuda opened at run time.
 *
 * The library is never linked: cubert__cuda_loader_open dlopens
 * libcuda.so.1, checks the driver version (cuDriverGetVersion), runs cuInit
 * (both through dlsym: the Driver API wants cuInit before any other call),
 * resolves every entry point the CUDA server uses through
 * cuGetProcAddress_v2 with an explicit ABI version each (the version of the
 * PFN_<name>_v<version> typedef of cudaTypedefs.h whose signature the call
 * sites use), then counts devices.
 * Any failure leaves a single status and an error record
 * "CUDA unavailable: <reason>" (kind SERVICE_CREATION, status
 * FAILED_PRECONDITION, driver_code the CUresult when a driver call failed),
 * never a crash:
 *   no library          "cannot load <path>: <dlerror text>"
 *   symbol missing      "<path> has no <symbol>" (dlsym) or
 *                       "entry point <name> (ABI <version>) not found: ..."
 *   old driver          "driver version 11.8 (11080) is older than the
 *                       required 12.0 (12000)"
 *   cuInit failed       "cuInit failed: CUDA_ERROR_NO_DEVICE (...)"
 *   no device           "no CUDA device (cuDeviceGetCount reports 0)"
 *
 * Calls go through the table: `cu->cuMemAlloc(&p, size)`. cuda.h maps some
 * names to versioned ones (cuMemAlloc -> cuMemAlloc_v2); the field names
 * are mapped the same way, so call sites read like the Driver API.
 *
 * Hosted code (dlopen, getenv). cuda.h is included for types only.
 */
#ifndef CUBERT_BACKEND_CUDA_DEVICE_CUDA_LOADER_H
#define CUBERT_BACKEND_CUDA_DEVICE_CUDA_LOADER_H

#include <cuda.h>
#include <cudaTypedefs.h>

#include "cubert/error.h"

/* The oldest driver accepted: 12.0 (cuGetProcAddress_v2, cuMemAllocAsync). */
#define CUBERT_CUDA_DRIVER_VERSION_MIN 12000

/* Library opened when no path is given and CUBERT_LIBCUDA is not set. */
#define CUBERT_CUDA_LIBRARY_DEFAULT "libcuda.so.1"

/* X(name, ABI version): every entry point the server calls. The version
 * selects the ABI (cuMemAlloc at 3020 is cuMemAlloc_v2) and names the
 * PFN_ typedef the field gets. */
#define CUBERT_CUDA_ENTRY_POINTS(X)     \
  X(cuInit, 2000)                       \
  X(cuDriverGetVersion, 2020)           \
  X(cuGetErrorName, 6000)               \
  X(cuGetErrorString, 6000)             \
  X(cuDeviceGet, 2000)                  \
  X(cuDeviceGetCount, 2000)             \
  X(cuDeviceGetName, 2000)              \
  X(cuDeviceGetAttribute, 2000)         \
  X(cuDeviceTotalMem, 3020)             \
  X(cuDeviceGetPCIBusId, 4010)          \
  X(cuDevicePrimaryCtxRetain, 7000)     \
  X(cuDevicePrimaryCtxRelease, 11000)   \
  X(cuDevicePrimaryCtxGetState, 7000)   \
  X(cuDevicePrimaryCtxSetFlags, 11000)  \
  X(cuCtxSetCurrent, 4000)              \
  X(cuCtxGetCurrent, 4000)              \
  X(cuMemGetInfo, 3020)                 \
  X(cuStreamCreate, 2000)               \
  X(cuStreamDestroy, 4000)              \
  X(cuStreamSynchronize, 2000)          \
  X(cuStreamQuery, 2000)                \
  X(cuStreamWaitEvent, 3020)            \
  X(cuEventCreate, 2000)                \
  X(cuEventRecord, 2000)                \
  X(cuEventQuery, 2000)                 \
  X(cuEventSynchronize, 2000)           \
  X(cuEventDestroy, 4000)               \
  X(cuEventElapsedTime, 2000)           \
  X(cuMemAlloc, 3020)                   \
  X(cuMemFree, 3020)                    \
  X(cuMemAllocAsync, 11020)             \
  X(cuMemFreeAsync, 11020)              \
  X(cuMemHostAlloc, 2020)               \
  X(cuMemFreeHost, 2000)                \
  X(cuMemHostRegister, 6050)            \
  X(cuMemHostUnregister, 4000)          \
  X(cuMemcpyHtoDAsync, 3020)            \
  X(cuMemcpyDtoHAsync, 3020)            \
  X(cuMemcpyDtoDAsync, 3020)            \
  X(cuMemcpy2DAsync, 3020)              \
  X(cuMemsetD8Async, 3020)              \
  X(cuModuleLoadDataEx, 2010)           \
  X(cuModuleUnload, 2000)               \
  X(cuModuleGetFunction, 2000)          \
  X(cuFuncGetAttribute, 2020)           \
  X(cuFuncSetAttribute, 9000)           \
  X(cuLaunchKernel, 4000)                \
  X(cuStreamWaitValue32, 11070)         \
  X(cuStreamWriteValue32, 11070)        \
  X(cuMemcpyPeerAsync, 4000)            \
  X(cuDeviceCanAccessPeer, 4000)        \
  X(cuCtxEnablePeerAccess, 4000)        \
  X(cuGraphCreate, 10000)               \
  X(cuGraphAddKernelNode, 12000)        \
  X(cuGraphInstantiateWithFlags, 11040) \
  X(cuGraphExecKernelNodeSetParams, 12000) \
  X(cuGraphLaunch, 10000)               \
  X(cuGraphExecDestroy, 10000)          \
  X(cuGraphDestroy, 10000)

/* Entry points the server uses when the driver has them (NULL otherwise):
 * programmatic graph edges (CUDA 12.3: cuda_plan.c) and the image's
 * markers (cuModuleGetGlobal: cuda_module.c). */
#define CUBERT_CUDA_OPTIONAL_ENTRY_POINTS(X) \
  X(cuGraphAddDependencies, 12030)           \
  X(cuModuleGetGlobal, 3020)

/* The function table and what loading found. Plain data once open; read it
 * from any thread. */
typedef struct cubert_cuda_loader_t {
  void *library;       /* dlopen handle (NULL when closed) */
  int driver_version;  /* cuDriverGetVersion, e.g. 13000 */
  int device_count;    /* cuDeviceGetCount after cuInit */
  int fake;            /* 1: cubert's fake libcuda (libcubert-fakecuda.so): launches
                          run their kernel's CPU body (cuda_fake_host.c) */
  char path[256];      /* the file opened */
#define CUBERT_CUDA_LOADER_FIELD_(name, version) PFN_##name##_v##version name;
  CUBERT_CUDA_ENTRY_POINTS(CUBERT_CUDA_LOADER_FIELD_)
  CUBERT_CUDA_OPTIONAL_ENTRY_POINTS(CUBERT_CUDA_LOADER_FIELD_)
#undef CUBERT_CUDA_LOADER_FIELD_
} cubert_cuda_loader_t;

/* Open the driver library `path` (NULL: $CUBERT_LIBCUDA, else
 * CUBERT_CUDA_LIBRARY_DEFAULT) into caller storage *out_loader and
 * initialize it (steps and failures above). On failure *out_loader is left
 * closed (library NULL) and nothing stays loaded. Returns OK,
 * INVALID_ARGUMENT (NULL out_loader, a path longer than 255 bytes) or
 * FAILED_PRECONDITION ("CUDA unavailable: ..."). Blocks while the driver
 * initializes. Thread-safe on distinct loaders. */
cubert_status_t cubert__cuda_loader_open(const char *path, cubert_cuda_loader_t *out_loader,
                                         cubert_error_t *out_error);

/* The fake libcuda's host runner (cuda_fake_host.c): the loader installs it
 * in a library that exports cubert_fake_cuda_set_kernel_host. Runs the CPU
 * body of the kernel cubert__cuda_fake_launching named on this thread, when
 * its entry name is `entry`; CUDA_ERROR_NOT_FOUND otherwise. */
int cubert__cuda_fake_host_run(const char *entry, const unsigned grid[3], const unsigned block[3],
                               unsigned shared_bytes, void **params);
/* The fake's asynchronous mode: copy a launch of the kernel named on this
 * thread (NULL when it is not `entry` or has no CPU body), run a copy, free it. */
void *cubert__cuda_fake_capture(const char *entry, void **params);
int cubert__cuda_fake_run_captured(void *token, const unsigned grid[3], const unsigned block[3],
                                   unsigned shared_bytes);
void cubert__cuda_fake_release(void *token);
/* Name the kernel of the calling thread's next cuLaunchKernel (NULL after it). */
struct cubert_kernel_t;
void cubert__cuda_fake_launching(const struct cubert_kernel_t *kernel);
/* Name a kernel a graph node launches (the fake runs graph nodes inside
 * cuGraphLaunch, with no launch naming them): kept by entry name for the
 * process; a kernel without a CUDA entry name or CPU body is ignored. */
void cubert__cuda_fake_known(const struct cubert_kernel_t *kernel);

/* dlclose the library (never call it on the shared loader, nor while objects
 * made through the loader live). NULL or a closed loader: no-op. */
void cubert__cuda_loader_close(cubert_cuda_loader_t *loader);

/* The address of `symbol` in the loaded library (dlsym), NULL when absent or
 * closed. Tests use it to reach the fake driver's statistics. */
void *cubert__cuda_loader_symbol(const cubert_cuda_loader_t *loader, const char *symbol);

/* The process-wide loader, opened once (pthread_once) with path NULL; never
 * closed. Returns its open status and copies the failure record into
 * out_error (may be NULL) every time; *out_loader is set only on OK.
 * Thread-safe; the first call blocks while the driver loads. */
cubert_status_t cubert__cuda_loader_shared(const cubert_cuda_loader_t **out_loader,
                                           cubert_error_t *out_error);

/* Set the "CUDA unavailable: <reason>" record (reason printf-formatted,
 * truncated to the record) with driver code `code` (0: none); returns
 * FAILED_PRECONDITION. */
cubert_status_t cubert__cuda_unavailable(cubert_error_t *out_error, int64_t code, const char *fmt,
                                         ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;

#endif /* CUBERT_BACKEND_CUDA_DEVICE_CUDA_LOADER_H */
