/* SPDX-License-Identifier: MIT */
/*
 * cubert/driver/error.h: building error records, for drivers and the server (the driver
 * interface; a user reads records with cubert/error.h and never builds these).
 */
#ifndef CUBERT_DRIVER_ERROR_H
#define CUBERT_DRIVER_ERROR_H

#include "cubert/error.h"

CUBERT_EXTERN_C_BEGIN

/* ---- constructors for drivers and the server (each returns the kind's status) --
 * Like cubert_error_set, every constructor accepts a NULL `error` (then it
 * only returns the status), overwrites the whole record otherwise, never
 * allocates, and is thread-safe on distinct records. */

/* ResourceLimitError::CubeDim { requested, max } -> LIMIT_EXCEEDED. */
CUBERT_API cubert_status_t cubert_error_set_resource_cube_dim(cubert_error_t *error,
                                                              cubert_dim3_t requested,
                                                              cubert_dim3_t max);

/* A two-field kind { requested, max } (RESOURCE_SHARED_MEMORY, RESOURCE_UNITS,
 * RESOURCE_MAX_UNIT_PER_CUBE, CONFIG_SLICE_LARGER_THAN_PAGE as {page_size,
 * max_slice_size}, ...): shorthand for cubert_error_set with 2 fields. */
CUBERT_API cubert_status_t cubert_error_set2(cubert_error_t *error, cubert_error_kind_t kind,
                                             uint64_t field0, uint64_t field1);

/* IoError::PoolCapacityExceeded { size, capacity, in_use } ->
 * POOL_CAPACITY_EXCEEDED. */
CUBERT_API cubert_status_t cubert_error_set_pool_capacity(cubert_error_t *error, uint64_t size,
                                                          uint64_t capacity, uint64_t in_use);

/* IoError::NotFound { reason } -> NOT_FOUND. A NULL or empty reason prints
 * CubeCL's "No reason provided for the error". */
CUBERT_API cubert_status_t cubert_error_set_not_found(cubert_error_t *error, const char *reason);

/* Any kind with a driver code: cubert_error_set(kind, no fields, reason) plus
 * driver_code (e.g. SERVER_GENERIC "cuMemcpyDtoH failed: ..." with the
 * CUresult). */
CUBERT_API cubert_status_t cubert_error_set_driver(cubert_error_t *error,
                                                   cubert_error_kind_t kind,
                                                   int64_t driver_code, const char *reason);

/* CallError: what the device runner handed back. */
typedef enum cubert_call_error_payload_e {
  CUBERT_CALL_ERROR_DISCONNECTED = 0, /* runner gone before producing a result */
  CUBERT_CALL_ERROR_PANIC_MESSAGE = 1, /* task failed with a message (reason) */
  CUBERT_CALL_ERROR_PANIC_NON_STRING = 2, /* task failed without a message */
  CUBERT_CALL_ERROR_PAYLOAD_FORCE_32BIT_ = 0x7FFFFFFF /* 4 bytes everywhere */
} cubert_call_error_payload_t;

/* CallError -> INTERNAL. `message` is used with PANIC_MESSAGE (NULL prints
 * CubeCL's "No reason provided for the error"); ignored otherwise. */
CUBERT_API cubert_status_t cubert_error_set_call(cubert_error_t *error,
                                                 cubert_call_error_payload_t payload,
                                                 const char *message);

/* Wrap the current content (the source IoError, e.g. IO_OUT_OF_MEMORY) in
 * IoError::StorageMappingFailed { size, source }: cubert_error_wrap plus the
 * size in field2[0]. The status stays the source's. NULL is a no-op; an empty
 * record stays empty. Returns error->status (OK for NULL). */
CUBERT_API cubert_status_t cubert_error_wrap_storage_mapping_failed(cubert_error_t *error,
                                                                    uint64_t size);

CUBERT_EXTERN_C_END

#endif /* CUBERT_DRIVER_ERROR_H */
