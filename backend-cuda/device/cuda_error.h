/* SPDX-License-Identifier: MIT */
/*
 * backend-cuda/device/cuda_error.h: CUresult -> cubert's error taxonomy.
 *
 * Every record made here keeps the raw CUresult in driver_code and its name
 * (CUDA_ERROR_ILLEGAL_ADDRESS, ...) in the reason:
 *   "<operation> failed: <NAME> (<driver description>)".
 * The kind depends on the code and on what kind of operation failed:
 *
 *   code                                    kind (status)
 *   context-poisoning (see below)           DEVICE_LOST (UNAVAILABLE)
 *   OUT_OF_MEMORY, device memory            IO_OUT_OF_MEMORY {size} (OUT_OF_MEMORY)
 *   OUT_OF_MEMORY, pinned host memory       HOST_OUT_OF_MEMORY {size} (RESOURCE_EXHAUSTED)
 *   OUT_OF_MEMORY, launch                   LAUNCH_OUT_OF_MEMORY (OUT_OF_MEMORY)
 *   LAUNCH_OUT_OF_RESOURCES,                LAUNCH_TOO_MANY_RESOURCES (LIMIT_EXCEEDED)
 *     COOPERATIVE_LAUNCH_TOO_LARGE,
 *     INVALID_CLUSTER_SIZE
 *   INVALID_IMAGE, INVALID_PTX,             COMPILATION_GENERIC (COMPILATION_FAILED)
 *     UNSUPPORTED_PTX_VERSION, NO_BINARY_FOR_GPU, JIT_COMPILER_NOT_FOUND,
 *     JIT_COMPILATION_DISABLED, INVALID_SOURCE, SHARED_OBJECT_*,
 *     NOT_FOUND while loading a module
 *   NO_DEVICE, INVALID_DEVICE,              SERVICE_CREATION (FAILED_PRECONDITION)
 *     NOT_INITIALIZED, DEINITIALIZED, STUB_LIBRARY, DEVICE_UNAVAILABLE,
 *     DEVICE_NOT_LICENSED, SYSTEM_NOT_READY, SYSTEM_DRIVER_MISMATCH,
 *     COMPAT_NOT_SUPPORTED_ON_DEVICE, CALL_REQUIRES_NEWER_DRIVER
 *   NOT_SUPPORTED, NOT_PERMITTED            IO_UNSUPPORTED_IO_OPERATION (UNSUPPORTED)
 *   TIMEOUT                                 DEADLINE_EXCEEDED
 *   INVALID_VALUE, INVALID_HANDLE,          INVALID_ARGUMENT
 *     INVALID_CONTEXT
 *   anything else                           by operation: memory and copies
 *                                           IO_UNKNOWN (IO_FAILED), launches
 *                                           LAUNCH_UNKNOWN (LAUNCH_FAILED),
 *                                           modules COMPILATION_GENERIC,
 *                                           the rest SERVER_GENERIC (INTERNAL)
 *
 * Context-poisoning codes: after one of these "any further CUDA work will
 * return the same error" (cuda.h), so the device is lost for this process:
 * ECC_UNCORRECTABLE (214), NVLINK_UNCORRECTABLE (220), CONTAINED (226),
 * ILLEGAL_ADDRESS (700), LAUNCH_TIMEOUT (702), ASSERT (710),
 * HARDWARE_STACK_ERROR (714), ILLEGAL_INSTRUCTION (715),
 * MISALIGNED_ADDRESS (716), INVALID_ADDRESS_SPACE (717), INVALID_PC (718),
 * LAUNCH_FAILED (719), TENSOR_MEMORY_LEAK (721), EXTERNAL_DEVICE (911).
 * (LAUNCH_OUT_OF_RESOURCES, 701, is a plain launch refusal, not one of them.)
 *
 * Pure functions; thread-safe.
 */
#ifndef CUBERT_BACKEND_CUDA_DEVICE_CUDA_ERROR_H
#define CUBERT_BACKEND_CUDA_DEVICE_CUDA_ERROR_H

#include <cuda.h>

#include "cubert/error.h"

struct cubert_cuda_loader_t;

/* What kind of operation failed (picks the kind of codes without a fixed one). */
typedef enum cubert_cuda_op_e {
  CUBERT_CUDA_OP_GENERIC = 0, /* context, streams, events, queries */
  CUBERT_CUDA_OP_MEMORY = 1,  /* device memory alloc / free */
  CUBERT_CUDA_OP_HOST = 2,    /* pinned host memory */
  CUBERT_CUDA_OP_COPY = 3,    /* memcpy / memset */
  CUBERT_CUDA_OP_LAUNCH = 4,  /* cuLaunchKernel, function attributes */
  CUBERT_CUDA_OP_MODULE = 5   /* module load, function lookup */
} cubert_cuda_op_t;

/* "CUDA_ERROR_ILLEGAL_ADDRESS"; "CUDA_SUCCESS" for 0; "CUDA_ERROR_UNRECOGNIZED"
 * for a code cuda.h does not list. Never NULL; needs no driver. */
const char *cubert__cuda_result_name(CUresult result);

/* True for the context-poisoning codes listed above. */
bool cubert__cuda_result_is_fatal(CUresult result);

/* The kind a failure with `result` during `op` maps to (table above). */
cubert_error_kind_t cubert__cuda_result_kind(CUresult result, cubert_cuda_op_t op);

/* Fill out_error (may be NULL) for a failed driver call: kind from
 * cubert__cuda_result_kind, field[0] = size for the OUT_OF_MEMORY kinds,
 * driver_code = result, reason "<what> failed: <NAME> (<description>)" with
 * the description from cuGetErrorString when `cu` is not NULL. A launch
 * failure is wrapped in SERVER_LAUNCH (and a compilation one in
 * LAUNCH_COMPILATION first, as the seed nests them). Returns the status. */
cubert_status_t cubert__cuda_error_set(cubert_error_t *out_error,
                                       const struct cubert_cuda_loader_t *cu, CUresult result,
                                       cubert_cuda_op_t op, const char *what, uint64_t size);

/* snprintf into buf[0..size) that may truncate (always NUL-terminated when
 * size > 0): the layer's messages are cut to the error record on purpose. */
void cubert__cuda_format(char *buf, size_t size, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;

#endif /* CUBERT_BACKEND_CUDA_DEVICE_CUDA_ERROR_H */
