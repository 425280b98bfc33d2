/* core/base/error.c: the error record (kinds, chain, fields, reason), its Display
 * text and the ServerUnhealthy aggregate.
 *
 * Message sources, quoted next to each string below:
 *   [seed]     the `#[error("...")]` attribute in seeds/001 (server/base.rs),
 *              without its "\nBacktrace..." part (cubert captures none);
 *   [upstream] the same crate's newer Display text for variants the seed does
 *              not have (IoError::OutOfMemory, PoolCapacityExceeded,
 *              StorageHandleNotFound, StorageMappingFailed, Unknown with its
 *              description; ServerError::Validation; CompilationError;
 *              PoolConfigError; InstallMemoryPoolsError; CallError's Debug;
 *              StrideError), as the spec (section 9) lists them;
 *   [cubert]   kinds without a CubeCL message: written here, with every field.
 */
#include "base/internal.h"
#include "base/fmt.h"

typedef struct kind_info_t {
  const char *name;
  cubert_status_t status;
} kind_info_t;

static const kind_info_t g_kinds[CUBERT_ERROR_KIND_COUNT_] = {
#define CUBERT_ERROR_KIND_INFO_(kname, kstatus, seed) {seed, CUBERT_STATUS_##kstatus},
    CUBERT_ERROR_KIND_LIST(CUBERT_ERROR_KIND_INFO_)
#undef CUBERT_ERROR_KIND_INFO_
};

/* [seed] Reason's Display for ReasonInner::NotProvided. */
static const char k_no_reason[] = "No reason provided for the error";
static const char k_caused_by[] = "\nCaused by:\n  ";

/* Everything but the reason's tail (it is NUL-terminated at [0]): this runs
 * on every enqueue and every stream op, and the record is ~300 bytes. */
void cubert_error_clear(cubert_error_t *error) {
  if (!error) return;
  cubert_memset(error, 0, offsetof(cubert_error_t, reason) + 1u);
}

const char *cubert_error_kind_name(cubert_error_kind_t kind) {
  if ((unsigned)kind >= (unsigned)CUBERT_ERROR_KIND_COUNT_) return "Unknown";
  return g_kinds[kind].name;
}

cubert_status_t cubert_error_kind_status(cubert_error_kind_t kind) {
  if ((unsigned)kind >= (unsigned)CUBERT_ERROR_KIND_COUNT_) return CUBERT_STATUS_INTERNAL;
  return g_kinds[kind].status;
}

cubert_status_t cubert_error_set(cubert_error_t *error, cubert_error_kind_t kind,
                                 const uint64_t *fields, size_t count, const char *reason) {
  cubert_status_t status = cubert_error_kind_status(kind);
  size_t i;
  if (!error) return status;
  cubert_error_clear(error);
  error->status = status;
  if (kind != CUBERT_ERROR_NONE) {
    error->depth = 1;
    error->chain[0] = (uint16_t)kind;
  }
  if (count > CUBERT_ARRAY_SIZE(error->field)) count = CUBERT_ARRAY_SIZE(error->field);
  for (i = 0; fields && i < count; i++) error->field[i] = fields[i];
  if (reason) cubert_strlcpy(error->reason, reason, sizeof(error->reason));
  return status;
}

cubert_status_t cubert_error_wrap(cubert_error_t *error, cubert_error_kind_t outer) {
  size_t i;
  if (!error) return CUBERT_STATUS_OK;
  if (error->depth == 0) return error->status;
  if (error->depth > CUBERT_ERROR_MAX_DEPTH) error->depth = CUBERT_ERROR_MAX_DEPTH;
  if (error->depth < CUBERT_ERROR_MAX_DEPTH) {
    for (i = error->depth; i > 0; i--) error->chain[i] = error->chain[i - 1];
    error->depth++;
  } else {
    /* Full: keep the innermost entry, drop the one just outside it. */
    for (i = CUBERT_ERROR_MAX_DEPTH - 2; i > 0; i--) error->chain[i] = error->chain[i - 1];
  }
  error->chain[0] = (uint16_t)outer;
  return error->status;
}

cubert_error_kind_t cubert_error_kind(const cubert_error_t *error) {
  size_t depth;
  if (!error || error->depth == 0) return CUBERT_ERROR_NONE;
  depth = CUBERT_MIN((size_t)error->depth, (size_t)CUBERT_ERROR_MAX_DEPTH);
  return (cubert_error_kind_t)error->chain[depth - 1];
}

bool cubert_error_has_kind(const cubert_error_t *error, cubert_error_kind_t kind) {
  size_t i, depth;
  if (!error) return false;
  depth = CUBERT_MIN((size_t)error->depth, (size_t)CUBERT_ERROR_MAX_DEPTH);
  for (i = 0; i < depth; i++)
    if (error->chain[i] == (uint16_t)kind) return true;
  return false;
}

/* ---- formatting -------------------------------------------------------------- */

static size_t reason_length(const cubert_error_t *e) {
  size_t n = 0;
  while (n < sizeof(e->reason) && e->reason[n] != '\0') n++;
  return n;
}

/* The reason text, or the seed's "not provided" text when it is empty. */
static void put_reason(cubert_fmt_t *f, const cubert_error_t *e) {
  if (reason_length(e) == 0)
    cubert_fmt_append_str(f, k_no_reason);
  else
    cubert_fmt_append_strn(f, e->reason, sizeof(e->reason));
}

/* ": reason" for cubert's own kinds, nothing when the reason is empty. */
static void put_colon_reason(cubert_fmt_t *f, const cubert_error_t *e) {
  if (reason_length(e) == 0) return;
  cubert_fmt_append_str(f, ": ");
  cubert_fmt_append_strn(f, e->reason, sizeof(e->reason));
}

static void put_u64(cubert_fmt_t *f, const char *before, uint64_t value, const char *after) {
  cubert_fmt_append_str(f, before);
  cubert_fmt_append_u64(f, value);
  cubert_fmt_append_str(f, after);
}

/* Rust's Debug of a (u32, u32, u32) tuple: "(1, 2, 3)". */
static void put_tuple3(cubert_fmt_t *f, uint64_t x, uint64_t y, uint64_t z) {
  put_u64(f, "(", x, ", ");
  put_u64(f, "", y, ", ");
  put_u64(f, "", z, ")");
}

/* Kinds whose seed variant wraps another error ({0} / source). Writes the
 * text that goes before the inner message and returns true; `innermost`
 * says there is no inner entry (the reason stands in for it). */
static bool put_wrapper_prefix(cubert_fmt_t *f, cubert_error_kind_t kind, const cubert_error_t *e,
                               bool innermost) {
  switch (kind) {
    case CUBERT_ERROR_SERVER_LAUNCH:
      /* [seed] ServerError::Launch: "A launch error happened during profiling\nCaused by:\n  {0}" */
      cubert_fmt_append_str(f, "A launch error happened during profiling");
      cubert_fmt_append_str(f, k_caused_by);
      return true;
    case CUBERT_ERROR_SERVER_PROFILE:
    case CUBERT_ERROR_SERVER_IO:
    case CUBERT_ERROR_PROFILE_SERVER:
      /* [seed] ServerError::Profile, ServerError::Io and ProfileError::Server:
       * "An execution error happened during profiling\nCaused by:\n  {0}" */
      cubert_fmt_append_str(f, "An execution error happened during profiling");
      cubert_fmt_append_str(f, k_caused_by);
      return true;
    case CUBERT_ERROR_LAUNCH_COMPILATION:
      /* [seed] "A compilation error happened during launch\nCaused by:\n  {0}" */
      cubert_fmt_append_str(f, "A compilation error happened during launch");
      cubert_fmt_append_str(f, k_caused_by);
      return true;
    case CUBERT_ERROR_LAUNCH_TOO_MANY_RESOURCES:
      /* [seed] "Too many resources were requested during launch\n{0}" */
      cubert_fmt_append_str(f, "Too many resources were requested during launch\n");
      return true;
    case CUBERT_ERROR_LAUNCH_IO:
      /* [seed] "An io error happened during launch\nCaused by:\n  {0}" */
      cubert_fmt_append_str(f, "An io error happened during launch");
      cubert_fmt_append_str(f, k_caused_by);
      return true;
    case CUBERT_ERROR_PROFILE_LAUNCH:
      /* [seed] ProfileError::Launch: "A launch error happened during profiling\nCaused by:\n  {0}" */
      cubert_fmt_append_str(f, "A launch error happened during profiling");
      cubert_fmt_append_str(f, k_caused_by);
      return true;
    case CUBERT_ERROR_IO_EXECUTION:
      /* [seed] "Can't perform the IO operation because of a runtime error: {0}" */
      cubert_fmt_append_str(f, "Can't perform the IO operation because of a runtime error: ");
      return true;
    case CUBERT_ERROR_IO_STORAGE_MAPPING_FAILED:
      /* [upstream] "couldn't map storage for a deferred allocation of {size}
       * bytes\nCaused by:\n  {source}" */
      put_u64(f, "couldn't map storage for a deferred allocation of ",
              innermost ? e->field[0] : e->field2[0], " bytes");
      cubert_fmt_append_str(f, k_caused_by);
      return true;
    default:
      return false;
  }
}

/* The message of a kind that is the innermost entry and wraps nothing. */
static void put_leaf(cubert_fmt_t *f, cubert_error_kind_t kind, const cubert_error_t *e) {
  const uint64_t *v = e->field;
  /* unreachable: default (wrapping kinds and SERVER_UNHEALTHY are written by the caller) */
  switch (kind) {
    case CUBERT_ERROR_NONE:
      cubert_fmt_append_str(f, "No error"); /* [cubert] */
      break;
    /* ServerError (spec 9.1) */
    case CUBERT_ERROR_SERVER_VALIDATION:
      /* [upstream] "A validation error happened during execution\nCaused by:\n  {message}" */
      cubert_fmt_append_str(f, "A validation error happened during execution");
      cubert_fmt_append_str(f, k_caused_by);
      put_reason(f, e);
      break;
    case CUBERT_ERROR_SERVER_GENERIC:
      /* [seed] "An error happened during execution\nCaused by:\n  {reason}" */
      cubert_fmt_append_str(f, "An error happened during execution");
      cubert_fmt_append_str(f, k_caused_by);
      put_reason(f, e);
      break;
    /* LaunchError (9.2) */
    case CUBERT_ERROR_LAUNCH_OUT_OF_MEMORY:
      /* [seed] "An out-of-memory error happened during launch\nCaused by:\n  {reason}" */
      cubert_fmt_append_str(f, "An out-of-memory error happened during launch");
      cubert_fmt_append_str(f, k_caused_by);
      put_reason(f, e);
      break;
    case CUBERT_ERROR_LAUNCH_UNKNOWN:
      /* [seed] "An unknown error happened during launch\nCaused by:\n  {reason}" */
      cubert_fmt_append_str(f, "An unknown error happened during launch");
      cubert_fmt_append_str(f, k_caused_by);
      put_reason(f, e);
      break;
    /* ResourceLimitError (9.3) */
    case CUBERT_ERROR_RESOURCE_SHARED_MEMORY:
      /* [seed] "Too much shared memory requested.\nRequested {requested} bytes,
       * maximum {max} bytes available." */
      put_u64(f, "Too much shared memory requested.\nRequested ", v[0], " bytes, maximum ");
      put_u64(f, "", v[1], " bytes available.");
      break;
    case CUBERT_ERROR_RESOURCE_UNITS:
      /* [seed] "Total unit count exceeds maximum.\nRequested {requested} units,
       * max units is {max}." */
      put_u64(f, "Total unit count exceeds maximum.\nRequested ", v[0], " units, max units is ");
      put_u64(f, "", v[1], ".");
      break;
    case CUBERT_ERROR_RESOURCE_CUBE_DIM:
      /* [seed] "Cube dim exceeds maximum bounds.\nRequested {requested:?}, max is {max:?}." */
      cubert_fmt_append_str(f, "Cube dim exceeds maximum bounds.\nRequested ");
      put_tuple3(f, v[0], v[1], v[2]);
      cubert_fmt_append_str(f, ", max is ");
      put_tuple3(f, e->field2[0], e->field2[1], e->field2[2]);
      cubert_fmt_append_char(f, '.');
      break;
    case CUBERT_ERROR_RESOURCE_MAX_UNIT_PER_CUBE:
      /* [cubert] the seed has no MaxUnitPerCube; worded like Units. */
      put_u64(f, "Units per cube exceed maximum.\nRequested ", v[0], " units per cube, max is ");
      put_u64(f, "", v[1], ".");
      break;
    /* ProfileError (9.4) */
    case CUBERT_ERROR_PROFILE_UNKNOWN:
      /* [seed] "An unknown error happened during profiling\nCaused by:\n  {reason}" */
      cubert_fmt_append_str(f, "An unknown error happened during profiling");
      cubert_fmt_append_str(f, k_caused_by);
      put_reason(f, e);
      break;
    case CUBERT_ERROR_PROFILE_NOT_REGISTERED:
      /* [seed] "No profiling registered" */
      cubert_fmt_append_str(f, "No profiling registered");
      break;
    /* IoError (9.5) */
    case CUBERT_ERROR_IO_BUFFER_TOO_BIG:
      /* [seed] "can't allocate buffer of size: {size}" */
      put_u64(f, "can't allocate buffer of size: ", v[0], "");
      break;
    case CUBERT_ERROR_IO_OUT_OF_MEMORY:
      /* [upstream] "out of device memory allocating {size} bytes" */
      put_u64(f, "out of device memory allocating ", v[0], " bytes");
      break;
    case CUBERT_ERROR_IO_POOL_CAPACITY_EXCEEDED:
      /* [upstream] "memory pool capacity exceeded: failed to reserve {size} bytes,
       * pool is capped at {capacity} bytes ({in_use} bytes in use)" */
      put_u64(f, "memory pool capacity exceeded: failed to reserve ", v[0], " bytes, ");
      put_u64(f, "pool is capped at ", v[1], " bytes (");
      put_u64(f, "", v[2], " bytes in use)");
      break;
    case CUBERT_ERROR_IO_UNSUPPORTED_STRIDES:
      /* [seed] "the provided strides are not supported for this operation" */
      cubert_fmt_append_str(f, "the provided strides are not supported for this operation");
      break;
    case CUBERT_ERROR_IO_NOT_FOUND:
      /* [seed] "couldn't find resource for that handle: {reason}" */
      cubert_fmt_append_str(f, "couldn't find resource for that handle: ");
      put_reason(f, e);
      break;
    case CUBERT_ERROR_IO_STORAGE_HANDLE_NOT_FOUND:
      /* [upstream] "the storage holds no allocation for that handle: {reason}" */
      cubert_fmt_append_str(f, "the storage holds no allocation for that handle: ");
      put_reason(f, e);
      break;
    case CUBERT_ERROR_IO_FREE_ERROR:
      /* [seed] "couldn't free the handle, since it is currently in used. " (sic,
       * trailing space included) */
      cubert_fmt_append_str(f, "couldn't free the handle, since it is currently in used. ");
      break;
    case CUBERT_ERROR_IO_UNKNOWN:
      /* [seed] "Unknown error happened during execution" (the seed drops the
       * description); [upstream] adds ": {description}", used when there is one. */
      cubert_fmt_append_str(f, "Unknown error happened during execution");
      put_colon_reason(f, e);
      break;
    case CUBERT_ERROR_IO_UNSUPPORTED_IO_OPERATION:
      /* [seed] "The current IO operation is not supported" */
      cubert_fmt_append_str(f, "The current IO operation is not supported");
      break;
    /* CompilationError (9.6) */
    case CUBERT_ERROR_COMPILATION_UNSUPPORTED_INSTRUCTION:
      /* [upstream] "An unsupported instruction caused the compilation to fail\nCaused by:\n  {reason}" */
      cubert_fmt_append_str(f, "An unsupported instruction caused the compilation to fail");
      cubert_fmt_append_str(f, k_caused_by);
      put_reason(f, e);
      break;
    case CUBERT_ERROR_COMPILATION_GENERIC:
      /* [upstream] "An error caused the compilation to fail\nCaused by:\n  {reason}" */
      cubert_fmt_append_str(f, "An error caused the compilation to fail");
      cubert_fmt_append_str(f, k_caused_by);
      put_reason(f, e);
      break;
    case CUBERT_ERROR_COMPILATION_VALIDATION:
      /* [upstream] "A validation error caused the compilation to fail\nCaused by:\n  {reason}" */
      cubert_fmt_append_str(f, "A validation error caused the compilation to fail");
      cubert_fmt_append_str(f, k_caused_by);
      put_reason(f, e);
      break;
    /* PoolConfigError (9.7) */
    case CUBERT_ERROR_CONFIG_EMPTY_POOL_LIST:
      /* [upstream] "the pool list is empty" */
      cubert_fmt_append_str(f, "the pool list is empty");
      break;
    case CUBERT_ERROR_CONFIG_ZERO_SIZE:
      /* [upstream] "`{field}` must be non-zero" (field name in reason) */
      cubert_fmt_append_char(f, '`');
      put_reason(f, e);
      cubert_fmt_append_str(f, "` must be non-zero");
      break;
    case CUBERT_ERROR_CONFIG_SLICE_LARGER_THAN_PAGE:
      /* [upstream] "`max_slice_size` ({max_slice_size}) exceeds `page_size`
       * ({page_size}); a slice can never span pages" */
      put_u64(f, "`max_slice_size` (", v[1], ") exceeds ");
      put_u64(f, "`page_size` (", v[0], "); a slice can never span pages");
      break;
    case CUBERT_ERROR_CONFIG_CAP_SMALLER_THAN_PAGE:
      /* [upstream] "`max_pool_size` ({max_pool_size}) is smaller than `page_size`
       * ({page_size}); the cap can't fit a single page" */
      put_u64(f, "`max_pool_size` (", v[1], ") is smaller than ");
      put_u64(f, "`page_size` (", v[0], "); the cap can't fit a single page");
      break;
    case CUBERT_ERROR_CONFIG_TOO_MANY_PAGES:
      /* [upstream] "`max_pool_size` spans {pages} pages of `page_size`, exceeding
       * the maximum of 65535; increase `page_size` or lower the cap" */
      put_u64(f, "`max_pool_size` spans ", v[0], " pages of `page_size`, exceeding the ");
      cubert_fmt_append_str(f, "maximum of 65535; increase `page_size` or lower the cap");
      break;
    case CUBERT_ERROR_CONFIG_TOO_MANY_POOLS:
      /* [upstream] "the pool list has {count} entries, exceeding the maximum of
       * 254 dynamic pools" */
      put_u64(f, "the pool list has ", v[0], " entries, exceeding the maximum of 254 dynamic pools");
      break;
    case CUBERT_ERROR_CONFIG_PRESET_UNAVAILABLE:
      /* [upstream] "the `{preset}` preset is not available in this build" */
      cubert_fmt_append_str(f, "the `");
      put_reason(f, e);
      cubert_fmt_append_str(f, "` preset is not available in this build");
      break;
    case CUBERT_ERROR_CONFIG_SLICED_POOLS_UNAVAILABLE:
      /* [upstream] "sliced pools are not available in this build (exclusive memory only)" */
      cubert_fmt_append_str(f, "sliced pools are not available in this build (exclusive memory only)");
      break;
    /* InstallMemoryPoolsError (9.7) */
    case CUBERT_ERROR_INSTALL_POOLS_IN_USE:
      /* [upstream] "{bytes_in_use} B still live in the pools" */
      put_u64(f, "", v[0], " B still live in the pools");
      break;
    case CUBERT_ERROR_INSTALL_STREAM_UNAVAILABLE:
      /* [upstream] "the calling stream is in an error state" */
      cubert_fmt_append_str(f, "the calling stream is in an error state");
      break;
    case CUBERT_ERROR_INSTALL_UNSUPPORTED:
      /* [upstream] "this backend has no configurable memory pools" */
      cubert_fmt_append_str(f, "this backend has no configurable memory pools");
      break;
    /* Infrastructure (9.8) */
    case CUBERT_ERROR_CALL_ERROR:
      /* [upstream] CallError's Debug (spec 3.5). */
      if (v[0] == (uint64_t)CUBERT_CALL_ERROR_PANIC_MESSAGE) {
        cubert_fmt_append_str(f, "CallError(task panicked on device runner thread: ");
        put_reason(f, e);
        cubert_fmt_append_char(f, ')');
      } else if (v[0] == (uint64_t)CUBERT_CALL_ERROR_PANIC_NON_STRING) {
        cubert_fmt_append_str(
            f, "CallError(task panicked on device runner thread with a non-string payload)");
      } else {
        cubert_fmt_append_str(
            f, "CallError(device runner channel disconnected before producing a result)");
      }
      break;
    case CUBERT_ERROR_SERVICE_CREATION:
      /* [upstream] derived Debug: ServiceCreationError { reason: "..." } */
      cubert_fmt_append_str(f, "ServiceCreationError { reason: \"");
      put_reason(f, e);
      cubert_fmt_append_str(f, "\" }");
      break;
    case CUBERT_ERROR_STRIDE_MALFORMED_RANKS:
      /* [upstream] "Malformed strides: {record:?}" (record text in reason) */
      cubert_fmt_append_str(f, "Malformed strides: ");
      put_reason(f, e);
      break;
    case CUBERT_ERROR_STRIDE_UNSUPPORTED_RANK:
      /* [upstream] "Unsupported rank {rank}: {record:?}" */
      put_u64(f, "Unsupported rank ", v[0], ": ");
      put_reason(f, e);
      break;
    case CUBERT_ERROR_STRIDE_INVALID:
      /* [upstream] "Invalid strides: {message}: {record:?}" (both in reason) */
      cubert_fmt_append_str(f, "Invalid strides: ");
      put_reason(f, e);
      break;
    /* cubert's own kinds (no seed equivalent: CubeCL panics) */
    case CUBERT_ERROR_INVALID_ARGUMENT:
      cubert_fmt_append_str(f, "Invalid argument");
      put_colon_reason(f, e);
      break;
    case CUBERT_ERROR_OUT_OF_RANGE:
      cubert_fmt_append_str(f, "Out of range");
      put_colon_reason(f, e);
      if (v[0] != 0 || v[1] != 0) {
        put_u64(f, " (index ", v[0], ", ");
        put_u64(f, "bound ", v[1], ")");
      }
      break;
    case CUBERT_ERROR_OVERFLOW:
      cubert_fmt_append_str(f, "Arithmetic overflow");
      put_colon_reason(f, e);
      break;
    case CUBERT_ERROR_INVALID_HANDLE:
      cubert_fmt_append_str(f, "Invalid handle");
      put_colon_reason(f, e);
      break;
    case CUBERT_ERROR_HOST_OUT_OF_MEMORY:
      cubert_fmt_append_str(f, "Host memory exhausted");
      if (v[0] != 0) put_u64(f, " allocating ", v[0], " bytes");
      put_colon_reason(f, e);
      break;
    case CUBERT_ERROR_DEVICE_MISMATCH:
      cubert_fmt_append_str(f, "Device mismatch");
      put_colon_reason(f, e);
      break;
    case CUBERT_ERROR_DEADLINE_EXCEEDED:
      put_u64(f, "Deadline exceeded after ", v[0], " ns");
      put_colon_reason(f, e);
      break;
    case CUBERT_ERROR_DEVICE_LOST:
      cubert_fmt_append_str(f, "Device lost");
      put_colon_reason(f, e);
      break;
    default:
      /* Wrapping kinds are handled by put_wrapper_prefix, SERVER_UNHEALTHY by
       * the caller; anything else is out of range. */
      put_u64(f, "Unknown error kind ", (uint64_t)kind, "");
      break;
  }
}

static void format_record(cubert_fmt_t *f, const cubert_error_t *e) {
  size_t depth, i;
  if (!e || e->depth == 0) {
    cubert_fmt_append_str(f, "No error");
    return;
  }
  depth = CUBERT_MIN((size_t)e->depth, (size_t)CUBERT_ERROR_MAX_DEPTH);
  for (i = 0; i < depth; i++) {
    cubert_error_kind_t kind = (cubert_error_kind_t)e->chain[i];
    bool innermost = (i + 1 == depth);
    if (kind == CUBERT_ERROR_SERVER_UNHEALTHY) {
      /* [seed] "The server is in an invalid state\nCaused by:\n  {errors:?}";
       * the errors are the aggregate's joined messages (spec 6.6: joined by
       * newline). What follows in the chain is the first of them, already in
       * the text; the backend code too. */
      cubert_fmt_append_str(f, "The server is in an invalid state");
      cubert_fmt_append_str(f, k_caused_by);
      put_reason(f, e);
      return;
    }
    if ((unsigned)kind >= (unsigned)CUBERT_ERROR_KIND_COUNT_) {
      put_u64(f, "Unknown error kind ", (uint64_t)e->chain[i], "");
      if (!innermost) cubert_fmt_append_str(f, k_caused_by);
      continue;
    }
    if (put_wrapper_prefix(f, kind, e, innermost)) {
      if (innermost) put_reason(f, e);
      continue;
    }
    if (innermost) {
      put_leaf(f, kind, e);
    } else {
      /* A kind that does not wrap in the seed, used as an outer kind. */
      cubert_fmt_append_str(f, g_kinds[kind].name);
      cubert_fmt_append_str(f, k_caused_by);
    }
  }
  if (e->backend_code != 0) {
    cubert_fmt_append_str(f, "\nBackend code: ");
    cubert_fmt_append_i64(f, e->backend_code);
  }
}

size_t cubert_error_format(const cubert_error_t *error, char *buf, size_t size) {
  cubert_fmt_t f;
  cubert_fmt_init(&f, buf, size);
  format_record(&f, error);
  return cubert_fmt_length(&f);
}

/* ---- aggregation --------------------------------------------------------------- */

static bool is_aggregate(const cubert_error_t *e) {
  return e->depth > 0 && e->chain[0] == (uint16_t)CUBERT_ERROR_SERVER_UNHEALTHY;
}

static uint64_t aggregate_count_of(const cubert_error_t *e) {
  return e->field[0] != 0 ? e->field[0] : 1u;
}

static uint64_t add_saturating(uint64_t a, uint64_t b) {
  return a > UINT64_MAX - b ? UINT64_MAX : a + b;
}

/* Turn `into` (empty) into an aggregate holding exactly `first` (a plain,
 * non-empty error). */
static void aggregate_start(cubert_error_t *into, const cubert_error_t *first) {
  cubert_fmt_t f;
  *into = *first;
  if (into->depth > CUBERT_ERROR_MAX_DEPTH) into->depth = CUBERT_ERROR_MAX_DEPTH;
  cubert_error_wrap(into, CUBERT_ERROR_SERVER_UNHEALTHY);
  into->field[0] = 1;
  into->field[1] = first->field[0];
  into->field[2] = first->field[1];
  into->field[3] = first->field[2];
  into->status = CUBERT_STATUS_SERVER_UNHEALTHY;
  cubert_fmt_init(&f, into->reason, sizeof(into->reason));
  format_record(&f, first);
}

cubert_status_t cubert_error_aggregate(cubert_error_t *aggregate, const cubert_error_t *next) {
  cubert_error_t added;
  cubert_error_t first;
  cubert_fmt_t f;
  uint64_t count;
  if (!next || next->depth == 0) {
    if (!aggregate || aggregate->depth == 0) return CUBERT_STATUS_OK;
    return aggregate->status;
  }
  if (!aggregate) return CUBERT_STATUS_SERVER_UNHEALTHY;
  added = *next; /* `next` may alias `aggregate` */
  if (aggregate->depth == 0) {
    if (is_aggregate(&added)) {
      *aggregate = added; /* copied as is, made consistent */
      if (aggregate->depth > CUBERT_ERROR_MAX_DEPTH) aggregate->depth = CUBERT_ERROR_MAX_DEPTH;
      aggregate->reason[sizeof(aggregate->reason) - 1] = '\0';
      aggregate->field[0] = aggregate_count_of(&added);
      aggregate->status = CUBERT_STATUS_SERVER_UNHEALTHY;
    } else {
      aggregate_start(aggregate, &added);
    }
    return CUBERT_STATUS_SERVER_UNHEALTHY;
  }
  if (!is_aggregate(aggregate)) {
    first = *aggregate;
    aggregate_start(aggregate, &first);
  }
  if (is_aggregate(&added)) {
    count = aggregate_count_of(&added);
  } else {
    count = 1;
  }
  aggregate->field[0] = add_saturating(aggregate_count_of(aggregate), count);
  aggregate->status = CUBERT_STATUS_SERVER_UNHEALTHY;
  /* Append "\n<message>" while at least one byte of the message fits; a
   * full buffer (a cut message included) takes nothing more. */
  cubert_fmt_init_append(&f, aggregate->reason, sizeof(aggregate->reason));
  if (f.len + 2 < f.size) {
    if (f.len > 0) cubert_fmt_append_char(&f, '\n');
    if (is_aggregate(&added))
      cubert_fmt_append_strn(&f, added.reason, sizeof(added.reason));
    else
      format_record(&f, &added);
  }
  return CUBERT_STATUS_SERVER_UNHEALTHY;
}

uint64_t cubert_error_aggregate_count(const cubert_error_t *aggregate) {
  if (!aggregate || !is_aggregate(aggregate)) return 0;
  return aggregate_count_of(aggregate);
}

cubert_status_t cubert_error_unhealthy_first(const cubert_error_t *aggregate,
                                             cubert_error_t *out_first) {
  cubert_error_t first;
  size_t depth, i;
  if (!aggregate || !out_first) return CUBERT_STATUS_INVALID_ARGUMENT;
  depth = CUBERT_MIN((size_t)aggregate->depth, (size_t)CUBERT_ERROR_MAX_DEPTH);
  if (depth < 2 || !is_aggregate(aggregate)) return CUBERT_STATUS_NOT_FOUND;
  cubert_error_clear(&first);
  first.depth = (uint8_t)(depth - 1);
  for (i = 1; i < depth; i++) first.chain[i - 1] = aggregate->chain[i];
  first.field[0] = aggregate->field[1];
  first.field[1] = aggregate->field[2];
  first.field[2] = aggregate->field[3];
  for (i = 0; i < CUBERT_ARRAY_SIZE(first.field2); i++) first.field2[i] = aggregate->field2[i];
  first.backend_code = aggregate->backend_code;
  first.status = cubert_error_kind_status((cubert_error_kind_t)first.chain[first.depth - 1]);
  *out_first = first;
  return CUBERT_STATUS_OK;
}

/* ---- constructors ------------------------------------------------------------------ */

cubert_status_t cubert_error_set_resource_cube_dim(cubert_error_t *error, cubert_dim3_t requested,
                                                   cubert_dim3_t max) {
  uint64_t fields[3];
  cubert_status_t status;
  fields[0] = requested.x;
  fields[1] = requested.y;
  fields[2] = requested.z;
  status = cubert_error_set(error, CUBERT_ERROR_RESOURCE_CUBE_DIM, fields, 3, NULL);
  if (error) {
    error->field2[0] = max.x;
    error->field2[1] = max.y;
    error->field2[2] = max.z;
  }
  return status;
}

cubert_status_t cubert_error_set2(cubert_error_t *error, cubert_error_kind_t kind,
                                  uint64_t field0, uint64_t field1) {
  uint64_t fields[2];
  fields[0] = field0;
  fields[1] = field1;
  return cubert_error_set(error, kind, fields, 2, NULL);
}

cubert_status_t cubert_error_set_pool_capacity(cubert_error_t *error, uint64_t size,
                                               uint64_t capacity, uint64_t in_use) {
  uint64_t fields[3];
  fields[0] = size;
  fields[1] = capacity;
  fields[2] = in_use;
  return cubert_error_set(error, CUBERT_ERROR_IO_POOL_CAPACITY_EXCEEDED, fields, 3, NULL);
}

cubert_status_t cubert_error_set_not_found(cubert_error_t *error, const char *reason) {
  return cubert_error_set(error, CUBERT_ERROR_IO_NOT_FOUND, NULL, 0, reason);
}

cubert_status_t cubert_error_set_backend(cubert_error_t *error, cubert_error_kind_t kind,
                                         int64_t backend_code, const char *reason) {
  cubert_status_t status = cubert_error_set(error, kind, NULL, 0, reason);
  if (error) error->backend_code = backend_code;
  return status;
}

cubert_status_t cubert_error_set_call(cubert_error_t *error, cubert_call_error_payload_t payload,
                                      const char *message) {
  uint64_t field = (uint64_t)payload;
  return cubert_error_set(error, CUBERT_ERROR_CALL_ERROR, &field, 1,
                          payload == CUBERT_CALL_ERROR_PANIC_MESSAGE ? message : NULL);
}

cubert_status_t cubert_error_wrap_storage_mapping_failed(cubert_error_t *error, uint64_t size) {
  if (!error) return CUBERT_STATUS_OK;
  if (error->depth == 0) return error->status;
  error->field2[0] = size;
  return cubert_error_wrap(error, CUBERT_ERROR_IO_STORAGE_MAPPING_FAILED);
}
