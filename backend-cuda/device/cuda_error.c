/* SPDX-License-Identifier: MIT */
/*
 * backend-cuda/device/cuda_error.c: CUresult names, the context-poisoning codes and
 * the mapping to cubert's taxonomy (table in cuda_error.h).
 *
 * Codes are listed by value, not by cuda.h's enumerator names, so the file
 * builds against older cuda.h versions that lack the newest codes.
 */
#include "device/cuda_error.h"

#include <stdarg.h>
#include <stdio.h>

#include "device/cuda_loader.h"
#include "cubert/driver/error.h"

void cubert__cuda_format(char *buf, size_t size, const char *fmt, ...) {
  va_list ap;
  if (!buf || size == 0) return;
  va_start(ap, fmt);
  (void)vsnprintf(buf, size, fmt, ap);
  va_end(ap);
}

typedef struct result_name_t {
  int code;
  const char *name;
} result_name_t;

/* Every CUresult of cuda.h 13.0, by value. */
static const result_name_t k_names[] = {
    {0, "CUDA_SUCCESS"},
    {1, "CUDA_ERROR_INVALID_VALUE"},
    {2, "CUDA_ERROR_OUT_OF_MEMORY"},
    {3, "CUDA_ERROR_NOT_INITIALIZED"},
    {4, "CUDA_ERROR_DEINITIALIZED"},
    {5, "CUDA_ERROR_PROFILER_DISABLED"},
    {6, "CUDA_ERROR_PROFILER_NOT_INITIALIZED"},
    {7, "CUDA_ERROR_PROFILER_ALREADY_STARTED"},
    {8, "CUDA_ERROR_PROFILER_ALREADY_STOPPED"},
    {34, "CUDA_ERROR_STUB_LIBRARY"},
    {36, "CUDA_ERROR_CALL_REQUIRES_NEWER_DRIVER"},
    {46, "CUDA_ERROR_DEVICE_UNAVAILABLE"},
    {100, "CUDA_ERROR_NO_DEVICE"},
    {101, "CUDA_ERROR_INVALID_DEVICE"},
    {102, "CUDA_ERROR_DEVICE_NOT_LICENSED"},
    {200, "CUDA_ERROR_INVALID_IMAGE"},
    {201, "CUDA_ERROR_INVALID_CONTEXT"},
    {202, "CUDA_ERROR_CONTEXT_ALREADY_CURRENT"},
    {205, "CUDA_ERROR_MAP_FAILED"},
    {206, "CUDA_ERROR_UNMAP_FAILED"},
    {207, "CUDA_ERROR_ARRAY_IS_MAPPED"},
    {208, "CUDA_ERROR_ALREADY_MAPPED"},
    {209, "CUDA_ERROR_NO_BINARY_FOR_GPU"},
    {210, "CUDA_ERROR_ALREADY_ACQUIRED"},
    {211, "CUDA_ERROR_NOT_MAPPED"},
    {212, "CUDA_ERROR_NOT_MAPPED_AS_ARRAY"},
    {213, "CUDA_ERROR_NOT_MAPPED_AS_POINTER"},
    {214, "CUDA_ERROR_ECC_UNCORRECTABLE"},
    {215, "CUDA_ERROR_UNSUPPORTED_LIMIT"},
    {216, "CUDA_ERROR_CONTEXT_ALREADY_IN_USE"},
    {217, "CUDA_ERROR_PEER_ACCESS_UNSUPPORTED"},
    {218, "CUDA_ERROR_INVALID_PTX"},
    {219, "CUDA_ERROR_INVALID_GRAPHICS_CONTEXT"},
    {220, "CUDA_ERROR_NVLINK_UNCORRECTABLE"},
    {221, "CUDA_ERROR_JIT_COMPILER_NOT_FOUND"},
    {222, "CUDA_ERROR_UNSUPPORTED_PTX_VERSION"},
    {223, "CUDA_ERROR_JIT_COMPILATION_DISABLED"},
    {224, "CUDA_ERROR_UNSUPPORTED_EXEC_AFFINITY"},
    {225, "CUDA_ERROR_UNSUPPORTED_DEVSIDE_SYNC"},
    {226, "CUDA_ERROR_CONTAINED"},
    {300, "CUDA_ERROR_INVALID_SOURCE"},
    {301, "CUDA_ERROR_FILE_NOT_FOUND"},
    {302, "CUDA_ERROR_SHARED_OBJECT_SYMBOL_NOT_FOUND"},
    {303, "CUDA_ERROR_SHARED_OBJECT_INIT_FAILED"},
    {304, "CUDA_ERROR_OPERATING_SYSTEM"},
    {400, "CUDA_ERROR_INVALID_HANDLE"},
    {401, "CUDA_ERROR_ILLEGAL_STATE"},
    {402, "CUDA_ERROR_LOSSY_QUERY"},
    {500, "CUDA_ERROR_NOT_FOUND"},
    {600, "CUDA_ERROR_NOT_READY"},
    {700, "CUDA_ERROR_ILLEGAL_ADDRESS"},
    {701, "CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES"},
    {702, "CUDA_ERROR_LAUNCH_TIMEOUT"},
    {703, "CUDA_ERROR_LAUNCH_INCOMPATIBLE_TEXTURING"},
    {704, "CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED"},
    {705, "CUDA_ERROR_PEER_ACCESS_NOT_ENABLED"},
    {708, "CUDA_ERROR_PRIMARY_CONTEXT_ACTIVE"},
    {709, "CUDA_ERROR_CONTEXT_IS_DESTROYED"},
    {710, "CUDA_ERROR_ASSERT"},
    {711, "CUDA_ERROR_TOO_MANY_PEERS"},
    {712, "CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED"},
    {713, "CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED"},
    {714, "CUDA_ERROR_HARDWARE_STACK_ERROR"},
    {715, "CUDA_ERROR_ILLEGAL_INSTRUCTION"},
    {716, "CUDA_ERROR_MISALIGNED_ADDRESS"},
    {717, "CUDA_ERROR_INVALID_ADDRESS_SPACE"},
    {718, "CUDA_ERROR_INVALID_PC"},
    {719, "CUDA_ERROR_LAUNCH_FAILED"},
    {720, "CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE"},
    {721, "CUDA_ERROR_TENSOR_MEMORY_LEAK"},
    {800, "CUDA_ERROR_NOT_PERMITTED"},
    {801, "CUDA_ERROR_NOT_SUPPORTED"},
    {802, "CUDA_ERROR_SYSTEM_NOT_READY"},
    {803, "CUDA_ERROR_SYSTEM_DRIVER_MISMATCH"},
    {804, "CUDA_ERROR_COMPAT_NOT_SUPPORTED_ON_DEVICE"},
    {805, "CUDA_ERROR_MPS_CONNECTION_FAILED"},
    {806, "CUDA_ERROR_MPS_RPC_FAILURE"},
    {807, "CUDA_ERROR_MPS_SERVER_NOT_READY"},
    {808, "CUDA_ERROR_MPS_MAX_CLIENTS_REACHED"},
    {809, "CUDA_ERROR_MPS_MAX_CONNECTIONS_REACHED"},
    {810, "CUDA_ERROR_MPS_CLIENT_TERMINATED"},
    {811, "CUDA_ERROR_CDP_NOT_SUPPORTED"},
    {812, "CUDA_ERROR_CDP_VERSION_MISMATCH"},
    {900, "CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED"},
    {901, "CUDA_ERROR_STREAM_CAPTURE_INVALIDATED"},
    {902, "CUDA_ERROR_STREAM_CAPTURE_MERGE"},
    {903, "CUDA_ERROR_STREAM_CAPTURE_UNMATCHED"},
    {904, "CUDA_ERROR_STREAM_CAPTURE_UNJOINED"},
    {905, "CUDA_ERROR_STREAM_CAPTURE_ISOLATION"},
    {906, "CUDA_ERROR_STREAM_CAPTURE_IMPLICIT"},
    {907, "CUDA_ERROR_CAPTURED_EVENT"},
    {908, "CUDA_ERROR_STREAM_CAPTURE_WRONG_THREAD"},
    {909, "CUDA_ERROR_TIMEOUT"},
    {910, "CUDA_ERROR_GRAPH_EXEC_UPDATE_FAILURE"},
    {911, "CUDA_ERROR_EXTERNAL_DEVICE"},
    {912, "CUDA_ERROR_INVALID_CLUSTER_SIZE"},
    {913, "CUDA_ERROR_FUNCTION_NOT_LOADED"},
    {914, "CUDA_ERROR_INVALID_RESOURCE_TYPE"},
    {915, "CUDA_ERROR_INVALID_RESOURCE_CONFIGURATION"},
    {916, "CUDA_ERROR_KEY_ROTATION"},
    {999, "CUDA_ERROR_UNKNOWN"},
};

const char *cubert__cuda_result_name(CUresult result) {
  size_t lo = 0, hi = sizeof k_names / sizeof k_names[0];
  int code = (int)result;
  while (lo < hi) { /* the table is sorted by code */
    size_t mid = lo + (hi - lo) / 2;
    if (k_names[mid].code == code) return k_names[mid].name;
    if (k_names[mid].code < code) lo = mid + 1;
    else hi = mid;
  }
  return "CUDA_ERROR_UNRECOGNIZED";
}

bool cubert__cuda_result_is_fatal(CUresult result) {
  switch ((int)result) {
    case 214: /* ECC_UNCORRECTABLE */
    case 220: /* NVLINK_UNCORRECTABLE */
    case 226: /* CONTAINED */
    case 700: /* ILLEGAL_ADDRESS */
    case 702: /* LAUNCH_TIMEOUT */
    case 710: /* ASSERT */
    case 714: /* HARDWARE_STACK_ERROR */
    case 715: /* ILLEGAL_INSTRUCTION */
    case 716: /* MISALIGNED_ADDRESS */
    case 717: /* INVALID_ADDRESS_SPACE */
    case 718: /* INVALID_PC */
    case 719: /* LAUNCH_FAILED */
    case 721: /* TENSOR_MEMORY_LEAK */
    case 911: /* EXTERNAL_DEVICE */
      return true;
    default:
      return false;
  }
}

static cubert_error_kind_t kind_by_op(cubert_cuda_op_t op) {
  switch (op) {
    case CUBERT_CUDA_OP_MEMORY:
    case CUBERT_CUDA_OP_HOST:
    case CUBERT_CUDA_OP_COPY: return CUBERT_ERROR_IO_UNKNOWN;
    case CUBERT_CUDA_OP_LAUNCH: return CUBERT_ERROR_LAUNCH_UNKNOWN;
    case CUBERT_CUDA_OP_MODULE: return CUBERT_ERROR_COMPILATION_GENERIC;
    case CUBERT_CUDA_OP_GENERIC:
    default: return CUBERT_ERROR_SERVER_GENERIC;
  }
}

cubert_error_kind_t cubert__cuda_result_kind(CUresult result, cubert_cuda_op_t op) {
  if (cubert__cuda_result_is_fatal(result)) return CUBERT_ERROR_DEVICE_LOST;
  switch ((int)result) {
    case 2: /* OUT_OF_MEMORY */
      if (op == CUBERT_CUDA_OP_HOST) return CUBERT_ERROR_HOST_OUT_OF_MEMORY;
      if (op == CUBERT_CUDA_OP_LAUNCH) return CUBERT_ERROR_LAUNCH_OUT_OF_MEMORY;
      return CUBERT_ERROR_IO_OUT_OF_MEMORY;
    case 701: /* LAUNCH_OUT_OF_RESOURCES */
    case 720: /* COOPERATIVE_LAUNCH_TOO_LARGE */
    case 912: /* INVALID_CLUSTER_SIZE */
      return CUBERT_ERROR_LAUNCH_TOO_MANY_RESOURCES;
    case 200: /* INVALID_IMAGE */
    case 209: /* NO_BINARY_FOR_GPU */
    case 218: /* INVALID_PTX */
    case 221: /* JIT_COMPILER_NOT_FOUND */
    case 222: /* UNSUPPORTED_PTX_VERSION */
    case 223: /* JIT_COMPILATION_DISABLED */
    case 300: /* INVALID_SOURCE */
    case 302: /* SHARED_OBJECT_SYMBOL_NOT_FOUND */
    case 303: /* SHARED_OBJECT_INIT_FAILED */
      return CUBERT_ERROR_COMPILATION_GENERIC;
    case 500: /* NOT_FOUND */
      return op == CUBERT_CUDA_OP_MODULE ? CUBERT_ERROR_COMPILATION_GENERIC
                                         : CUBERT_ERROR_SERVER_GENERIC;
    case 3:   /* NOT_INITIALIZED */
    case 4:   /* DEINITIALIZED */
    case 34:  /* STUB_LIBRARY */
    case 36:  /* CALL_REQUIRES_NEWER_DRIVER */
    case 46:  /* DEVICE_UNAVAILABLE */
    case 100: /* NO_DEVICE */
    case 101: /* INVALID_DEVICE */
    case 102: /* DEVICE_NOT_LICENSED */
    case 802: /* SYSTEM_NOT_READY */
    case 803: /* SYSTEM_DRIVER_MISMATCH */
    case 804: /* COMPAT_NOT_SUPPORTED_ON_DEVICE */
      return CUBERT_ERROR_SERVICE_CREATION;
    case 800: /* NOT_PERMITTED */
    case 801: /* NOT_SUPPORTED */
      return CUBERT_ERROR_IO_UNSUPPORTED_IO_OPERATION;
    case 909: /* TIMEOUT */
      return CUBERT_ERROR_DEADLINE_EXCEEDED;
    case 1:   /* INVALID_VALUE */
    case 201: /* INVALID_CONTEXT */
    case 400: /* INVALID_HANDLE */
      return CUBERT_ERROR_INVALID_ARGUMENT;
    default:
      return kind_by_op(op);
  }
}

cubert_status_t cubert__cuda_error_set(cubert_error_t *out_error,
                                       const struct cubert_cuda_loader_t *cu, CUresult result,
                                       cubert_cuda_op_t op, const char *what, uint64_t size) {
  char reason[CUBERT_ERROR_REASON_SIZE];
  const char *text = NULL;
  cubert_error_kind_t kind = cubert__cuda_result_kind(result, op);
  cubert_status_t st;
  if (cu && cu->cuGetErrorString && (cu->cuGetErrorString(result, &text) != CUDA_SUCCESS || !text))
    text = NULL;
  if (text)
    cubert__cuda_format(reason, sizeof reason, "%s failed: %s (%s)", what ? what : "CUDA call",
                   cubert__cuda_result_name(result), text);
  else
    cubert__cuda_format(reason, sizeof reason, "%s failed: %s", what ? what : "CUDA call",
                   cubert__cuda_result_name(result));
  if (!out_error) return cubert_error_kind_status(kind);
  st = cubert_error_set_driver(out_error, kind, (int64_t)result, reason);
  if (kind == CUBERT_ERROR_IO_OUT_OF_MEMORY || kind == CUBERT_ERROR_HOST_OUT_OF_MEMORY)
    out_error->field[0] = size;
  if (kind == CUBERT_ERROR_DEVICE_LOST) return st;
  if (kind == CUBERT_ERROR_COMPILATION_GENERIC &&
      (op == CUBERT_CUDA_OP_MODULE || op == CUBERT_CUDA_OP_LAUNCH)) {
    cubert_error_wrap(out_error, CUBERT_ERROR_LAUNCH_COMPILATION);
    return cubert_error_wrap(out_error, CUBERT_ERROR_SERVER_LAUNCH);
  }
  if (op == CUBERT_CUDA_OP_LAUNCH &&
      (kind == CUBERT_ERROR_LAUNCH_UNKNOWN || kind == CUBERT_ERROR_LAUNCH_OUT_OF_MEMORY ||
       kind == CUBERT_ERROR_LAUNCH_TOO_MANY_RESOURCES))
    return cubert_error_wrap(out_error, CUBERT_ERROR_SERVER_LAUNCH);
  return st;
}
