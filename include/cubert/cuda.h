/* SPDX-License-Identifier: MIT */
/*
 * cubert/cuda.h: what the CUDA backend offers users directly: whether CUDA
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
#include "cubert/error.h"
#include "cubert/properties.h"

CUBERT_EXTERN_C_BEGIN

/* ---- kernel images -------------------------------------------------------
 * A kernel image is one nvcc output for one kernel source file: PTX text
 * (JIT-compiled by the driver for any GPU) and, where the build made one, a
 * cubin for one architecture (loaded as is on a GPU of exactly that compute
 * capability). `entries` names the extern "C" __global__ functions it holds,
 * i.e. the names given to CUBERT_KERNEL. Images are plain constant data,
 * generated as C by tools/cubert-embed-image.sh (make rule: docs/kernels.md).
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
 * "CUDA unavailable: <reason>" (backend_code: the CUresult when a driver call
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

CUBERT_EXTERN_C_END

#endif /* CUBERT_CUDA_H */
