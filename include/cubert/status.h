/* SPDX-License-Identifier: MIT */
/*
 * cubert/status.h: the status code every fallible function returns.
 *
 * Codes are coarse, for control flow; the fine-grained CubeCL taxonomy
 * (ServerError, LaunchError, IoError, ...) lives in the error record of
 * cubert/error.h. Thread-safe, non-blocking, no allocation.
 */
#ifndef CUBERT_STATUS_H
#define CUBERT_STATUS_H

#include "cubert/base.h"

CUBERT_EXTERN_C_BEGIN

/* X(name, value, description). Values are stable ABI. */
#define CUBERT_STATUS_LIST(X)                                                              \
  X(OK, 0, "ok")                                                                            \
  X(INVALID_ARGUMENT, 1, "invalid argument")      /* NULL out-param, bad value */          \
  X(OUT_OF_RANGE, 2, "out of range")              /* index/extent beyond a bound */        \
  X(OVERFLOW, 3, "arithmetic overflow")           /* size or count overflows */            \
  X(INVALID_HANDLE, 4, "invalid handle")          /* stale, forged, double-released */     \
  X(RESOURCE_EXHAUSTED, 5, "host memory exhausted") /* injected allocator failed */        \
  X(OUT_OF_MEMORY, 6, "device out of memory")     /* IoError::OutOfMemory */               \
  X(BUFFER_TOO_BIG, 7, "buffer too big")          /* IoError::BufferTooBig */              \
  X(POOL_CAPACITY_EXCEEDED, 8, "pool capacity exceeded")                                    \
  X(NOT_FOUND, 9, "not found")                                                              \
  X(ALREADY_EXISTS, 10, "already exists")                                                   \
  X(FAILED_PRECONDITION, 11, "failed precondition") /* e.g. PoolsInUse */                  \
  X(UNSUPPORTED, 12, "unsupported")               /* UnsupportedStrides, ... */            \
  X(LIMIT_EXCEEDED, 13, "resource limit exceeded") /* ResourceLimitError */                \
  X(DEVICE_MISMATCH, 14, "device mismatch")                                                 \
  X(DEADLINE_EXCEEDED, 15, "deadline exceeded")                                             \
  X(UNAVAILABLE, 16, "unavailable")               /* device lost / shutting down */        \
  X(SERVER_UNHEALTHY, 17, "server unhealthy")     /* queued async errors */                \
  X(LAUNCH_FAILED, 18, "launch failed")                                                     \
  X(COMPILATION_FAILED, 19, "compilation failed")                                           \
  X(PROFILE_FAILED, 20, "profile error")                                                    \
  X(IO_FAILED, 21, "i/o error")                                                             \
  X(CONFIG_INVALID, 22, "invalid configuration")  /* PoolConfigError */                    \
  X(BUSY, 23, "busy")                                                                       \
  X(INTERNAL, 24, "internal error")

typedef enum cubert_status_e {
#define CUBERT_STATUS_ENUM_(name, value, text) CUBERT_STATUS_##name = value,
  CUBERT_STATUS_LIST(CUBERT_STATUS_ENUM_)
#undef CUBERT_STATUS_ENUM_
  CUBERT_STATUS_COUNT_,
  CUBERT_STATUS_FORCE_32BIT_ = 0x7FFFFFFF /* 4 bytes everywhere */
} cubert_status_t;

/* Short stable name of a code ("INVALID_ARGUMENT"); "UNKNOWN" for a value
 * outside the list. Never NULL. Thread-safe, non-blocking. */
CUBERT_API const char *cubert_status_name(cubert_status_t status);

/* Human description of a code ("invalid argument"). Never NULL. Without
 * CUBERT_CONFIG_ERROR_TEXT (cubert/config.h): "(error text compiled out)". */
CUBERT_API const char *cubert_status_description(cubert_status_t status);

/* Evaluate an expression yielding a status; return it from the caller when it
 * is not OK. The only control-flow macro of the code base. */
#define CUBERT_RETURN_IF_ERROR(expr)                                            \
  do {                                                                          \
    cubert_status_t cubert_status_tmp_ = (expr);                                \
    if (cubert_status_tmp_ != CUBERT_STATUS_OK) return cubert_status_tmp_;      \
  } while (0)

CUBERT_EXTERN_C_END

#endif /* CUBERT_STATUS_H */
