/* SPDX-License-Identifier: MIT */
/*
 * cubert/error.h: the error record, carrying CubeCL's full error taxonomy.
 *
 * A status code says what class of failure happened; the record says exactly
 * which one, with CubeCL's numeric fields and reason text. Records are
 * fixed-size, caller- or object-owned, and never allocate. Where CubeCL
 * nests errors (ServerError::Launch(LaunchError::IoError(IoError::...))) the
 * record keeps the chain of kinds, outermost first, and the fields of the
 * innermost one.
 *
 * Field meaning per kind (field[0..3], field2[0..2]; unlisted kinds use none):
 *   RESOURCE_SHARED_MEMORY         requested, max
 *   RESOURCE_UNITS                 requested, max; field[2] 0 (units per cube), or
 *                                  1..3: a static cube count above max_cube_count on
 *                                  the x..z axis (printed as cubes on that axis)
 *   RESOURCE_CUBE_DIM              requested x,y,z in field[0..2], max x,y,z in field2[0..2]
 *   RESOURCE_MAX_UNIT_PER_CUBE     requested, max
 *   IO_BUFFER_TOO_BIG              size
 *   IO_OUT_OF_MEMORY               size
 *   IO_POOL_CAPACITY_EXCEEDED      size, capacity, in_use
 *   IO_STORAGE_MAPPING_FAILED      size (field[0] when innermost; when it wraps
 *                                  its source IoError, the size is field2[0],
 *                                  see cubert_error_wrap_storage_mapping_failed)
 *   CONFIG_SLICE_LARGER_THAN_PAGE  page_size, max_slice_size
 *   CONFIG_CAP_SMALLER_THAN_PAGE   page_size, max_pool_size
 *   CONFIG_TOO_MANY_PAGES          pages
 *   CONFIG_TOO_MANY_POOLS          count
 *   INSTALL_POOLS_IN_USE           bytes_in_use
 *   CALL_ERROR                     payload (cubert_call_error_payload_t); the
 *                                  panic message, if any, in reason
 *   STRIDE_UNSUPPORTED_RANK        rank
 *   OUT_OF_RANGE                   value, limit (the core's reasons name them, e.g.
 *                                  "destination 40 bytes, data 400 bytes"; printed as
 *                                  "(value A, limit B)" only when there is no reason)
 *   HOST_OUT_OF_MEMORY             size (printed when non-zero)
 *   DEADLINE_EXCEEDED              timeout in nanoseconds
 *   DEVICE_MISMATCH                the handle's device index and device_key,
 *                                  then this device's index and key
 *   COMPILED_OUT                   none; the feature and its CUBERT_CONFIG_ switch in reason
 *   SERVER_UNHEALTHY               see "Aggregates" below
 * Kinds whose CubeCL variant carries a `reason`/`message`/`description` string
 * (or a string field such as ZeroSize's `field`, PresetUnavailable's `preset`,
 * a StrideError's record) keep it in `reason` (truncated, always
 * NUL-terminated). driver_code (CUresult, errno, ...) is 0 when there is none.
 *
 * Aggregates (ServerError::ServerUnhealthy): cubert_error_aggregate
 * collects the errors drained from a stream's queue into one record whose
 * chain starts with SERVER_UNHEALTHY followed by the FIRST aggregated error's
 * chain, so cubert_error_kind / cubert_error_has_kind still see the first
 * error. In a record whose chain holds a SERVER_UNHEALTHY entry (also one
 * wrapped later, e.g. in PROFILE_SERVER) the fields are shifted by one:
 *   field[0]      number of aggregated errors (exact, saturating at UINT64_MAX)
 *   field[1..3]   the first error's field[0..2] (its field[3] is dropped)
 *   field2[0..2]  the first error's field2
 *   driver_code  the first error's driver_code
 *   reason        every aggregated message (cubert_error_format of each),
 *                 joined by '\n', truncated to the buffer
 *   status        CUBERT_STATUS_SERVER_UNHEALTHY
 * cubert_error_unhealthy_first rebuilds the first error as a plain record.
 */
#ifndef CUBERT_ERROR_H
#define CUBERT_ERROR_H

#include "cubert/base.h"
#include "cubert/status.h"
#include "cubert/properties.h"

CUBERT_EXTERN_C_BEGIN

/* X(name, status, CubeCL name). `status` is the code a function returns when it
 * fails with this kind at the innermost position. */
#define CUBERT_ERROR_KIND_LIST(X)                                                      \
  X(NONE, OK, "None")                                                                  \
  /* ServerError */                                                                    \
  X(SERVER_VALIDATION, INVALID_ARGUMENT, "ServerError::Validation")                    \
  X(SERVER_GENERIC, INTERNAL, "ServerError::Generic")                                  \
  X(SERVER_LAUNCH, LAUNCH_FAILED, "ServerError::Launch")                               \
  X(SERVER_PROFILE, PROFILE_FAILED, "ServerError::Profile")                            \
  X(SERVER_IO, IO_FAILED, "ServerError::Io")                                           \
  X(SERVER_UNHEALTHY, SERVER_UNHEALTHY, "ServerError::ServerUnhealthy")                \
  /* LaunchError */                                                                    \
  X(LAUNCH_COMPILATION, COMPILATION_FAILED, "LaunchError::CompilationError")           \
  X(LAUNCH_OUT_OF_MEMORY, OUT_OF_MEMORY, "LaunchError::OutOfMemory")                   \
  X(LAUNCH_TOO_MANY_RESOURCES, LIMIT_EXCEEDED, "LaunchError::TooManyResources")        \
  X(LAUNCH_UNKNOWN, LAUNCH_FAILED, "LaunchError::Unknown")                             \
  X(LAUNCH_IO, IO_FAILED, "LaunchError::IoError")                                      \
  /* ResourceLimitError */                                                             \
  X(RESOURCE_SHARED_MEMORY, LIMIT_EXCEEDED, "ResourceLimitError::SharedMemory")        \
  X(RESOURCE_UNITS, LIMIT_EXCEEDED, "ResourceLimitError::Units")                       \
  X(RESOURCE_CUBE_DIM, LIMIT_EXCEEDED, "ResourceLimitError::CubeDim")                  \
  X(RESOURCE_MAX_UNIT_PER_CUBE, LIMIT_EXCEEDED, "ResourceLimitError::MaxUnitPerCube")  \
  /* ProfileError */                                                                   \
  X(PROFILE_UNKNOWN, PROFILE_FAILED, "ProfileError::Unknown")                          \
  X(PROFILE_NOT_REGISTERED, PROFILE_FAILED, "ProfileError::NotRegistered")             \
  X(PROFILE_LAUNCH, LAUNCH_FAILED, "ProfileError::Launch")                             \
  X(PROFILE_SERVER, PROFILE_FAILED, "ProfileError::Server")                            \
  /* IoError */                                                                        \
  X(IO_BUFFER_TOO_BIG, BUFFER_TOO_BIG, "IoError::BufferTooBig")                        \
  X(IO_OUT_OF_MEMORY, OUT_OF_MEMORY, "IoError::OutOfMemory")                           \
  X(IO_POOL_CAPACITY_EXCEEDED, POOL_CAPACITY_EXCEEDED, "IoError::PoolCapacityExceeded") \
  X(IO_UNSUPPORTED_STRIDES, UNSUPPORTED, "IoError::UnsupportedStrides")                \
  X(IO_NOT_FOUND, NOT_FOUND, "IoError::NotFound")                                      \
  X(IO_STORAGE_HANDLE_NOT_FOUND, NOT_FOUND, "IoError::StorageHandleNotFound")          \
  X(IO_STORAGE_MAPPING_FAILED, OUT_OF_MEMORY, "IoError::StorageMappingFailed")         \
  X(IO_FREE_ERROR, BUSY, "IoError::FreeError")                                         \
  X(IO_UNKNOWN, IO_FAILED, "IoError::Unknown")                                         \
  X(IO_UNSUPPORTED_IO_OPERATION, UNSUPPORTED, "IoError::UnsupportedIoOperation")       \
  X(IO_EXECUTION, IO_FAILED, "IoError::Execution")                                     \
  /* CompilationError */                                                               \
  X(COMPILATION_UNSUPPORTED_INSTRUCTION, COMPILATION_FAILED,                           \
    "CompilationError::UnsupportedInstruction")                                        \
  X(COMPILATION_GENERIC, COMPILATION_FAILED, "CompilationError::Generic")              \
  X(COMPILATION_VALIDATION, COMPILATION_FAILED, "CompilationError::Validation")        \
  /* PoolConfigError */                                                                \
  X(CONFIG_EMPTY_POOL_LIST, CONFIG_INVALID, "PoolConfigError::EmptyPoolList")          \
  X(CONFIG_ZERO_SIZE, CONFIG_INVALID, "PoolConfigError::ZeroSize")                     \
  X(CONFIG_SLICE_LARGER_THAN_PAGE, CONFIG_INVALID, "PoolConfigError::SliceLargerThanPage") \
  X(CONFIG_CAP_SMALLER_THAN_PAGE, CONFIG_INVALID, "PoolConfigError::CapSmallerThanPage") \
  X(CONFIG_TOO_MANY_PAGES, CONFIG_INVALID, "PoolConfigError::TooManyPages")            \
  X(CONFIG_TOO_MANY_POOLS, CONFIG_INVALID, "PoolConfigError::TooManyPools")            \
  X(CONFIG_PRESET_UNAVAILABLE, CONFIG_INVALID, "PoolConfigError::PresetUnavailable")   \
  X(CONFIG_SLICED_POOLS_UNAVAILABLE, CONFIG_INVALID, "PoolConfigError::SlicedPoolsUnavailable") \
  /* InstallMemoryPoolsError */                                                        \
  X(INSTALL_POOLS_IN_USE, FAILED_PRECONDITION, "InstallMemoryPoolsError::PoolsInUse")  \
  X(INSTALL_STREAM_UNAVAILABLE, UNAVAILABLE, "InstallMemoryPoolsError::StreamUnavailable") \
  X(INSTALL_UNSUPPORTED, UNSUPPORTED, "InstallMemoryPoolsError::Unsupported")          \
  /* Infrastructure */                                                                 \
  X(CALL_ERROR, INTERNAL, "CallError")                                                 \
  X(SERVICE_CREATION, FAILED_PRECONDITION, "ServiceCreationError")                     \
  X(STRIDE_MALFORMED_RANKS, INVALID_ARGUMENT, "StrideError::MalformedRanks")           \
  X(STRIDE_UNSUPPORTED_RANK, INVALID_ARGUMENT, "StrideError::UnsupportedRank")         \
  X(STRIDE_INVALID, INVALID_ARGUMENT, "StrideError::Invalid")                          \
  /* cubert argument/handle errors (CubeCL panics instead) */                          \
  X(INVALID_ARGUMENT, INVALID_ARGUMENT, "InvalidArgument")                             \
  X(OUT_OF_RANGE, OUT_OF_RANGE, "OutOfRange")                                          \
  X(OVERFLOW, OVERFLOW, "Overflow")                                                    \
  X(INVALID_HANDLE, INVALID_HANDLE, "InvalidHandle")                                   \
  X(HOST_OUT_OF_MEMORY, RESOURCE_EXHAUSTED, "HostOutOfMemory")                         \
  X(DEVICE_MISMATCH, DEVICE_MISMATCH, "DeviceMismatch")                                \
  X(DEADLINE_EXCEEDED, DEADLINE_EXCEEDED, "DeadlineExceeded")                          \
  X(DEVICE_LOST, UNAVAILABLE, "DeviceLost")                                            \
  X(COMPILED_OUT, UNSUPPORTED, "CompiledOut") /* a feature left out (cubert/config.h) */ \
  X(FAILED_PRECONDITION, FAILED_PRECONDITION, "FailedPrecondition") /* wrong state/mode */

typedef enum cubert_error_kind_e {
#define CUBERT_ERROR_KIND_ENUM_(name, status, seed) CUBERT_ERROR_##name,
  CUBERT_ERROR_KIND_LIST(CUBERT_ERROR_KIND_ENUM_)
#undef CUBERT_ERROR_KIND_ENUM_
  CUBERT_ERROR_KIND_COUNT_,
  CUBERT_ERROR_KIND_FORCE_32BIT_ = 0x7FFFFFFF /* 4 bytes everywhere */
} cubert_error_kind_t;

#define CUBERT_ERROR_MAX_DEPTH 6
#define CUBERT_ERROR_REASON_SIZE 192

/* The error record. Plain data: copy it by assignment. */
typedef struct cubert_error_t {
  cubert_status_t status;                         /* what the failing call returned */
  uint8_t depth;                                  /* number of valid entries in chain */
  uint16_t chain[CUBERT_ERROR_MAX_DEPTH];         /* kinds, outermost first */
  uint64_t field[4];                              /* numeric fields of the innermost kind */
  uint64_t field2[3];                             /* second triple (CubeDim max) */
  int64_t driver_code;                           /* CUresult, errno, ... (0 if none) */
  char reason[CUBERT_ERROR_REASON_SIZE];          /* NUL-terminated, possibly truncated */
} cubert_error_t;

/* Reset a record to "no error" (status OK, depth 0). NULL is a no-op. */
CUBERT_API void cubert_error_clear(cubert_error_t *error);

/* Fill `error` (may be NULL: then nothing is written) with a single-kind
 * error, its fields (count values from `fields`, at most 4) and an optional
 * reason (NULL for none; truncated). Returns the kind's status code, so a
 * caller writes `return cubert_error_set(...)`. A kind outside the list
 * (>= CUBERT_ERROR_KIND_COUNT_) records INVALID_ARGUMENT instead (field[0]:
 * the value) and returns INVALID_ARGUMENT. Thread-safe on distinct records. */
CUBERT_API cubert_status_t cubert_error_set(cubert_error_t *error, cubert_error_kind_t kind,
                                            const uint64_t *fields, size_t count,
                                            const char *reason);

/* Wrap the current content in an outer kind (e.g. IO_OUT_OF_MEMORY inside
 * LAUNCH_IO inside SERVER_LAUNCH). The status stays the innermost kind's. If
 * the chain is full, the outermost entries win and the innermost one is kept
 * (the record stays consistent). NULL is a no-op; returns error->status. */
CUBERT_API cubert_status_t cubert_error_wrap(cubert_error_t *error, cubert_error_kind_t outer);

/* Innermost kind, CUBERT_ERROR_NONE when depth is 0. NULL gives NONE. For an
 * aggregate this is the first aggregated error's innermost kind. */
CUBERT_API cubert_error_kind_t cubert_error_kind(const cubert_error_t *error);

/* True if `kind` is anywhere in the chain. */
CUBERT_API bool cubert_error_has_kind(const cubert_error_t *error, cubert_error_kind_t kind);

/* CubeCL's variant name ("IoError::OutOfMemory"); "Unknown" when out of
 * range. Without CUBERT_CONFIG_ERROR_TEXT (cubert/config.h):
 * "(error text compiled out)". */
CUBERT_API const char *cubert_error_kind_name(cubert_error_kind_t kind);

/* The status code a kind maps to. */
CUBERT_API cubert_status_t cubert_error_kind_status(cubert_error_kind_t kind);

/* Write the error's message, in CubeCL's Display form, into buf[0..size).
 * The chain is printed outermost first, each wrapping kind followed by the
 * message of the kind it wraps, as CubeCL's `#[error("...{0}")]` strings
 * nest: ServerError::Launch(LaunchError::TooManyResources(
 * ResourceLimitError::Units { requested: 2048, max: 1024 })) prints
 *   "A launch error happened during profiling\nCaused by:\n  Too many resources
 *    were requested during launch\nTotal unit count exceeds maximum.\nRequested
 *    2048 units, max units is 1024."
 * Differences from CubeCL, all deliberate: no "Backtrace" part (cubert
 * captures none); an empty reason prints "No reason provided for the error"
 * (CubeCL's Reason default); a non-zero driver_code appends
 * "\nDriver code: N"; SERVER_UNHEALTHY prints the joined messages of the
 * aggregate; a kind of cubert's own prints a short message with its fields.
 * A NULL or empty record prints "No error". The record is only read, and
 * out-of-range content (depth, kinds, an unterminated reason) is printed
 * safely, never trusted.
 * Always NUL-terminates when size > 0; truncates safely; never allocates, no
 * libc. Returns the length the full message would have (snprintf-like), so a
 * return >= size means it was truncated. buf may be NULL when size is 0.
 * Without CUBERT_CONFIG_ERROR_TEXT (cubert/config.h) the record is written in
 * numbers: "error 3 > 20 (status 7) fields 1024 0 0 0: reason driver N
 * [text compiled out]" (kinds outermost first, the reason and driver code
 * only when present); aggregates join such lines.
 * Thread-safe (reads only), non-blocking. */
CUBERT_API size_t cubert_error_format(const cubert_error_t *error, char *buf, size_t size);

/* ---- aggregation (ServerError::ServerUnhealthy) ---------------------------- */

/* Add `next` to the aggregate (layout: see "Aggregates" at the top).
 * - `aggregate` empty (depth 0): it becomes SERVER_UNHEALTHY holding a copy
 *   of next's chain (behind the SERVER_UNHEALTHY entry; when the chain is full
 *   the innermost entries win, as in cubert_error_wrap) and shifted fields,
 *   count 1, reason = next's formatted message.
 * - `aggregate` holding a plain (non-aggregate) error: that error is made the
 *   first of an aggregate, then `next` is added.
 * - otherwise: count += 1 and "\n" + next's formatted message is appended to
 *   reason, as far as it fits (the count stays exact when the text is cut).
 * An aggregate `next` is flattened: its count is added and its joined text
 * appended. A NULL or empty `next` (depth 0) adds nothing. `next` may alias
 * `aggregate`. Borrows both; never allocates.
 * Returns CUBERT_STATUS_SERVER_UNHEALTHY once the aggregate holds an error
 * (also when `aggregate` is NULL and `next` is an error), else
 * CUBERT_STATUS_OK. Not thread-safe on the same aggregate; non-blocking. */
CUBERT_API cubert_status_t cubert_error_aggregate(cubert_error_t *aggregate,
                                                  const cubert_error_t *next);

/* Number of errors an aggregate holds (field[0] of a record whose chain
 * starts with SERVER_UNHEALTHY; at least 1), 0 for NULL or any other record.
 * Thread-safe (reads only). */
CUBERT_API uint64_t cubert_error_aggregate_count(const cubert_error_t *aggregate);

/* Rebuild the first aggregated error as a plain record in *out_first: its
 * chain, fields, field2, driver_code and status (the innermost kind's).
 * Its reason text is not kept by the aggregate (the aggregate's reason holds
 * its formatted message instead), so out_first->reason is empty.
 * Returns OK; INVALID_ARGUMENT when an argument is NULL; NOT_FOUND when
 * `aggregate` does not start with SERVER_UNHEALTHY followed by a first error
 * (*out_first is then left unchanged). Thread-safe (reads only). */
CUBERT_API cubert_status_t cubert_error_unhealthy_first(const cubert_error_t *aggregate,
                                                        cubert_error_t *out_first);

CUBERT_EXTERN_C_END

#endif /* CUBERT_ERROR_H */
