/* SPDX-License-Identifier: MIT */
/*
 * core/base/error_format.c: the Display text of an error record
 * (cubert_error_format, cubert/error.h), also used to build the messages of
 * a ServerUnhealthy aggregate (error.c).
 *
 * Every kind has a message template below. The texts are CubeCL's: the
 * `#[error("...")]` attribute of the variant in cubecl-runtime (without the
 * "\nBacktrace..." part: cubert captures none), newer cubecl-runtime texts for
 * the variants added since (marked "newer"), and cubert's own wording for
 * kinds CubeCL does not have (marked "cubert"); docs/errors.md lists them.
 *
 * A template is text with one-byte codes for the record's values (T_* below).
 * A template that starts with T_WRAP belongs to a kind that wraps an inner
 * error (CubeCL's {0} / source): it is the text before the inner message, and
 * the reason stands in for that message when the kind is innermost.
 */
#include "base/internal.h"
#include "base/fmt.h"
#include "base/error_internal.h"

#if CUBERT_CONFIG_ERROR_TEXT

#define T_F0 "\001"    /* field[0] */
#define T_F1 "\002"    /* field[1] */
#define T_F2 "\003"    /* field[2] */
#define T_R "\004"     /* the reason, or "No reason provided for the error" */
#define T_CR "\005"    /* ": reason", nothing when the reason is empty */
#define T_CB "\006"    /* "\nCaused by:\n  " */
#define T_DIM "\007"   /* (x, y, z) of field[0..2] */
#define T_MAX "\010"   /* (x, y, z) of field2[0..2] */
#define T_IDX "\016"   /* " (value field[0], limit field[1])" when either is non-zero and
                          there is no reason (the core's reasons name their numbers) */
#define T_SIZE "\017"  /* " allocating field[0] bytes" when it is non-zero */
#define T_MAP "\020"   /* the mapping size: field[0] innermost, field2[0] when wrapping */
#define T_WRAP "\021"  /* first byte: the kind wraps an inner error */

#define C_F0 1
#define C_F1 2
#define C_F2 3
#define C_R 4
#define C_CR 5
#define C_CB 6
#define C_DIM 7
#define C_MAX 8
#define C_IDX 14
#define C_SIZE 15
#define C_MAP 16
#define C_WRAP 17

/* ReasonInner::NotProvided's text. */
static const char k_no_reason[] = "No reason provided for the error";
static const char k_caused_by[] = "\nCaused by:\n  ";

#define K(kind) [CUBERT_ERROR_##kind]
static const char *const k_text[CUBERT_ERROR_KIND_COUNT_] = {
    K(NONE) = "No error", /* cubert */
    /* ServerError */
    /* cubert: CubeCL says "during execution" also for a refusal at submit time */
    K(SERVER_VALIDATION) = "A validation error happened" T_CB T_R,
    K(SERVER_GENERIC) = "An error happened during execution" T_CB T_R,
    /* cubert: CubeCL's Launch and Io variants reuse the text "... during
     * profiling" of ProfileError, though nothing was profiled */
    K(SERVER_LAUNCH) = T_WRAP "A launch error happened" T_CB,
    K(SERVER_PROFILE) = T_WRAP "A profiling error happened" T_CB,
    K(SERVER_IO) = T_WRAP "An io error happened" T_CB,
    /* SERVER_UNHEALTHY: format_record */
    /* LaunchError */
    K(LAUNCH_COMPILATION) = T_WRAP "A compilation error happened during launch" T_CB,
    K(LAUNCH_OUT_OF_MEMORY) = "An out-of-memory error happened during launch" T_CB T_R,
    K(LAUNCH_TOO_MANY_RESOURCES) = T_WRAP "Too many resources were requested during launch\n",
    K(LAUNCH_UNKNOWN) = "An unknown error happened during launch" T_CB T_R,
    K(LAUNCH_IO) = T_WRAP "An io error happened during launch" T_CB,
    /* ResourceLimitError */
    K(RESOURCE_SHARED_MEMORY) = "Too much shared memory requested.\nRequested " T_F0
                                " bytes, maximum " T_F1 " bytes available.",
    K(RESOURCE_UNITS) = "Total unit count exceeds maximum.\nRequested " T_F0
                        " units, max units is " T_F1 ".",
    K(RESOURCE_CUBE_DIM) = "Cube dim exceeds maximum bounds.\nRequested " T_DIM
                           ", max is " T_MAX ".",
    /* cubert: CubeCL has no MaxUnitPerCube; worded like Units */
    K(RESOURCE_MAX_UNIT_PER_CUBE) = "Units per cube exceed maximum.\nRequested " T_F0
                                    " units per cube, max is " T_F1 ".",
    /* ProfileError */
    K(PROFILE_UNKNOWN) = "An unknown error happened during profiling" T_CB T_R,
    K(PROFILE_NOT_REGISTERED) = "No profiling registered",
    K(PROFILE_LAUNCH) = T_WRAP "A launch error happened during profiling" T_CB,
    K(PROFILE_SERVER) = T_WRAP "An execution error happened during profiling" T_CB,
    /* IoError */
    K(IO_BUFFER_TOO_BIG) = "can't allocate buffer of size: " T_F0,
    K(IO_OUT_OF_MEMORY) = "out of device memory allocating " T_F0 " bytes", /* newer */
    K(IO_POOL_CAPACITY_EXCEEDED) = "memory pool capacity exceeded: failed to reserve " T_F0
                                   " bytes, pool is capped at " T_F1 " bytes (" T_F2
                                   " bytes in use)", /* newer */
    K(IO_UNSUPPORTED_STRIDES) = "the provided strides are not supported for this operation",
    K(IO_NOT_FOUND) = "couldn't find resource for that handle: " T_R,
    K(IO_STORAGE_HANDLE_NOT_FOUND) = "the storage holds no allocation for that handle: " T_R,
    K(IO_STORAGE_MAPPING_FAILED) = T_WRAP "couldn't map storage for a deferred allocation of " T_MAP
                                   " bytes" T_CB, /* newer */
    /* sic, trailing space included */
    K(IO_FREE_ERROR) = "couldn't free the handle, since it is currently in used. ",
    /* CubeCL drops the description; newer texts add ": {description}" */
    K(IO_UNKNOWN) = "Unknown error happened during execution" T_CR,
    K(IO_UNSUPPORTED_IO_OPERATION) = "The current IO operation is not supported",
    K(IO_EXECUTION) = T_WRAP "Can't perform the IO operation because of a runtime error: ",
    /* CompilationError (newer) */
    K(COMPILATION_UNSUPPORTED_INSTRUCTION) =
        "An unsupported instruction caused the compilation to fail" T_CB T_R,
    K(COMPILATION_GENERIC) = "An error caused the compilation to fail" T_CB T_R,
    K(COMPILATION_VALIDATION) = "A validation error caused the compilation to fail" T_CB T_R,
    /* PoolConfigError (newer; the field or preset name in the reason) */
    K(CONFIG_EMPTY_POOL_LIST) = "the pool list is empty",
    K(CONFIG_ZERO_SIZE) = "`" T_R "` must be non-zero",
    K(CONFIG_SLICE_LARGER_THAN_PAGE) = "`max_slice_size` (" T_F1 ") exceeds `page_size` (" T_F0
                                       "); a slice can never span pages",
    K(CONFIG_CAP_SMALLER_THAN_PAGE) = "`max_pool_size` (" T_F1 ") is smaller than `page_size` ("
                                      T_F0 "); the cap can't fit a single page",
    K(CONFIG_TOO_MANY_PAGES) = "`max_pool_size` spans " T_F0 " pages of `page_size`, exceeding the "
                               "maximum of 65535; increase `page_size` or lower the cap",
    K(CONFIG_TOO_MANY_POOLS) = "the pool list has " T_F0
                               " entries, exceeding the maximum of 254 dynamic pools",
    K(CONFIG_PRESET_UNAVAILABLE) = "the `" T_R "` preset is not available in this build",
    K(CONFIG_SLICED_POOLS_UNAVAILABLE) =
        "sliced pools are not available in this build (exclusive memory only)",
    /* InstallMemoryPoolsError (newer) */
    K(INSTALL_POOLS_IN_USE) = T_F0 " B still live in the pools",
    K(INSTALL_STREAM_UNAVAILABLE) = "the calling stream is in an error state",
    K(INSTALL_UNSUPPORTED) = "this driver has no configurable memory pools",
    /* Infrastructure (newer; CALL_ERROR: put_call_error) */
    K(SERVICE_CREATION) = "ServiceCreationError { reason: \"" T_R "\" }", /* derived Debug */
    K(STRIDE_MALFORMED_RANKS) = "Malformed strides: " T_R,
    K(STRIDE_UNSUPPORTED_RANK) = "Unsupported rank " T_F0 ": " T_R,
    K(STRIDE_INVALID) = "Invalid strides: " T_R,
    /* cubert's own kinds (CubeCL panics instead) */
    K(INVALID_ARGUMENT) = "Invalid argument" T_CR,
    K(OUT_OF_RANGE) = "Out of range" T_CR T_IDX,
    K(OVERFLOW) = "Arithmetic overflow" T_CR,
    K(INVALID_HANDLE) = "Invalid handle" T_CR,
    K(HOST_OUT_OF_MEMORY) = "Host memory exhausted" T_SIZE T_CR,
    K(DEVICE_MISMATCH) = "Device mismatch" T_CR,
    K(DEADLINE_EXCEEDED) = "Deadline exceeded after " T_F0 " ns" T_CR,
    K(DEVICE_LOST) = "Device lost" T_CR,
    K(COMPILED_OUT) = "Compiled out of this build" T_CR,
    K(FAILED_PRECONDITION) = "Failed precondition" T_CR,
};
#undef K

/* CubeCL's variant names ("IoError::BufferTooBig"), cubert's for its own kinds. */
static const char *const k_names[CUBERT_ERROR_KIND_COUNT_] = {
#define CUBERT_ERROR_KIND_NAME_(kname, kstatus, seed) seed,
    CUBERT_ERROR_KIND_LIST(CUBERT_ERROR_KIND_NAME_)
#undef CUBERT_ERROR_KIND_NAME_
};

const char *cubert_error_kind_name(cubert_error_kind_t kind) {
  if ((unsigned)kind >= (unsigned)CUBERT_ERROR_KIND_COUNT_) return "Unknown";
  return k_names[kind];
}

static size_t reason_length(const cubert_error_t *e) {
  size_t n = 0;
  while (n < sizeof(e->reason) && e->reason[n] != '\0') n++;
  return n;
}

/* The reason text, or CubeCL's "not provided" text when it is empty. */
static void put_reason(cubert_fmt_t *f, const cubert_error_t *e) {
  if (reason_length(e) == 0)
    cubert__fmt_append_str(f, k_no_reason);
  else
    cubert__fmt_append_strn(f, e->reason, sizeof(e->reason));
}

static void put_u64(cubert_fmt_t *f, const char *before, uint64_t value, const char *after) {
  cubert__fmt_append_str(f, before);
  cubert__fmt_append_u64(f, value);
  cubert__fmt_append_str(f, after);
}

/* Rust's Debug of a (u32, u32, u32) tuple: "(1, 2, 3)". */
static void put_tuple3(cubert_fmt_t *f, const uint64_t *v) {
  put_u64(f, "(", v[0], ", ");
  put_u64(f, "", v[1], ", ");
  put_u64(f, "", v[2], ")");
}

/* Expand a template (its T_WRAP mark skipped) for the record e. */
static void put_template(cubert_fmt_t *f, const char *t, const cubert_error_t *e, bool innermost) {
  const uint64_t *v = e->field;
  for (; *t; t++) {
    switch (*t) {
      case C_F0: cubert__fmt_append_u64(f, v[0]); break;
      case C_F1: cubert__fmt_append_u64(f, v[1]); break;
      case C_F2: cubert__fmt_append_u64(f, v[2]); break;
      case C_R: put_reason(f, e); break;
      case C_CR:
        if (reason_length(e) == 0) break;
        cubert__fmt_append_str(f, ": ");
        cubert__fmt_append_strn(f, e->reason, sizeof(e->reason));
        break;
      case C_CB: cubert__fmt_append_str(f, k_caused_by); break;
      case C_DIM: put_tuple3(f, v); break;
      case C_MAX: put_tuple3(f, e->field2); break;
      case C_IDX:
        if ((v[0] == 0 && v[1] == 0) || reason_length(e) != 0) break;
        put_u64(f, " (value ", v[0], ", ");
        put_u64(f, "limit ", v[1], ")");
        break;
      case C_SIZE:
        if (v[0] != 0) put_u64(f, " allocating ", v[0], " bytes");
        break;
      case C_MAP: cubert__fmt_append_u64(f, innermost ? v[0] : e->field2[0]); break;
      case C_WRAP: break;
      default: cubert__fmt_append_char(f, *t); break;
    }
  }
}

/* CallError's Debug (newer texts), by payload. */
static void put_call_error(cubert_fmt_t *f, const cubert_error_t *e) {
  if (e->field[0] == (uint64_t)CUBERT_CALL_ERROR_PANIC_MESSAGE) {
    cubert__fmt_append_str(f, "CallError(task panicked on device runner thread: ");
    put_reason(f, e);
    cubert__fmt_append_char(f, ')');
  } else if (e->field[0] == (uint64_t)CUBERT_CALL_ERROR_PANIC_NON_STRING) {
    cubert__fmt_append_str(
        f, "CallError(task panicked on device runner thread with a non-string payload)");
  } else {
    cubert__fmt_append_str(
        f, "CallError(device runner channel disconnected before producing a result)");
  }
}

/* One entry of the chain: i of depth. */
static void put_entry(cubert_fmt_t *f, const cubert_error_t *e, cubert_error_kind_t kind,
                      bool innermost) {
  const char *t = k_text[kind];
  if (t && t[0] == C_WRAP) {
    put_template(f, t, e, innermost);
    if (innermost) put_reason(f, e);
  } else if (!innermost) {
    /* A kind that does not wrap in CubeCL, used as an outer kind. */
    cubert__fmt_append_str(f, cubert_error_kind_name(kind));
    cubert__fmt_append_str(f, k_caused_by);
  } else if (kind == CUBERT_ERROR_CALL_ERROR) {
    put_call_error(f, e);
  } else if (kind == CUBERT_ERROR_RESOURCE_UNITS && e->field[2] >= 1 && e->field[2] <= 3) {
    /* cubert: a static cube count above max_cube_count on one axis (field[2]
     * 1..3 = x..z; CubeCL leaves it to the driver) */
    cubert__fmt_append_str(f, "Cube count exceeds maximum on the ");
    cubert__fmt_append_char(f, (char)('x' + (int)e->field[2] - 1));
    put_u64(f, " axis.\nRequested ", e->field[0], " cubes, max is ");
    put_u64(f, "", e->field[1], ".");
  } else if (t) {
    put_template(f, t, e, true);
  } else {
    put_u64(f, "Unknown error kind ", (uint64_t)kind, "");
  }
}

void cubert__error_format_record_(cubert_fmt_t *f, const cubert_error_t *e) {
  size_t depth, i;
  if (!e || e->depth == 0) {
    cubert__fmt_append_str(f, "No error");
    return;
  }
  depth = CUBERT_MIN((size_t)e->depth, (size_t)CUBERT_ERROR_MAX_DEPTH);
  for (i = 0; i < depth; i++) {
    cubert_error_kind_t kind = (cubert_error_kind_t)e->chain[i];
    bool innermost = (i + 1 == depth);
    if (kind == CUBERT_ERROR_SERVER_UNHEALTHY) {
      /* "The server is in an invalid state\nCaused by:\n  {errors:?}"; the
       * errors are the aggregate's joined messages (joined by newline:
       * docs/errors.md). What follows in the chain is the first of them,
       * already in the text; the driver code too. */
      cubert__fmt_append_str(f, "The server is in an invalid state");
      cubert__fmt_append_str(f, k_caused_by);
      put_reason(f, e);
      return;
    }
    if ((unsigned)kind >= (unsigned)CUBERT_ERROR_KIND_COUNT_) {
      put_u64(f, "Unknown error kind ", (uint64_t)e->chain[i], "");
      if (!innermost) cubert__fmt_append_str(f, k_caused_by);
      continue;
    }
    put_entry(f, e, kind, innermost);
  }
  if (e->driver_code != 0) {
    cubert__fmt_append_str(f, "\nDriver code: ");
    cubert__fmt_append_i64(f, e->driver_code);
  }
}

#else /* !CUBERT_CONFIG_ERROR_TEXT */

/* Compiled out: no names (the kind's number is in every formatted record). */
const char *cubert_error_kind_name(cubert_error_kind_t kind) {
  (void)kind;
  return "(error text compiled out)";
}

/* Compiled out (include/cubert/config.h): the record in numbers, e.g.
 * "error 3 > 21 (status 7) fields 1024 0 0 0: reason [text compiled out]". */
void cubert__error_format_record_(cubert_fmt_t *f, const cubert_error_t *e) {
  size_t depth, i;
  if (!e || e->depth == 0) {
    cubert__fmt_append_str(f, "No error");
    return;
  }
  depth = CUBERT_MIN((size_t)e->depth, (size_t)CUBERT_ERROR_MAX_DEPTH);
  cubert__fmt_append_str(f, "error ");
  for (i = 0; i < depth; i++) {
    if (i > 0) cubert__fmt_append_str(f, " > ");
    cubert__fmt_append_u64(f, e->chain[i]);
  }
  cubert__fmt_append_str(f, " (status ");
  cubert__fmt_append_u64(f, (uint64_t)e->status);
  cubert__fmt_append_str(f, ") fields");
  for (i = 0; i < CUBERT_ARRAY_SIZE(e->field); i++) {
    cubert__fmt_append_char(f, ' ');
    cubert__fmt_append_u64(f, e->field[i]);
  }
  if (e->reason[0] != '\0') {
    cubert__fmt_append_str(f, ": ");
    cubert__fmt_append_strn(f, e->reason, sizeof(e->reason));
  }
  if (e->driver_code != 0) {
    cubert__fmt_append_str(f, " driver ");
    cubert__fmt_append_i64(f, e->driver_code);
  }
  cubert__fmt_append_str(f, " [text compiled out]");
}

#endif /* CUBERT_CONFIG_ERROR_TEXT */

size_t cubert_error_format(const cubert_error_t *error, char *buf, size_t size) {
  cubert_fmt_t f;
  cubert__fmt_initialize(&f, buf, size);
  cubert__error_format_record_(&f, error);
  return cubert__fmt_length(&f);
}

/* cubert__error_set_text (base/internal.h): the reason expanded from a
 * template whose bytes \001..\004 stand for the fields and \005 for `name`. */
cubert_status_t cubert__error_set_text(cubert_error_t *error, cubert_error_kind_t kind,
                                       const uint64_t *fields, size_t count, const char *name,
                                       const char *text) {
  cubert_status_t status = (cubert_error_set)(error, kind, fields, count, NULL);
#if CUBERT_CONFIG_ERROR_REASONS
  if (error && text) {
    cubert_fmt_t f;
    cubert__fmt_initialize(&f, error->reason, sizeof(error->reason));
    for (; *text; text++) {
      unsigned c = (unsigned char)*text;
      if (c >= 1 && c <= 4)
        cubert__fmt_append_u64(&f, error->field[c - 1]);
      else if (c == 5)
        cubert__fmt_append_str(&f, name ? name : "(unnamed)");
      else
        cubert__fmt_append_char(&f, *text);
    }
  }
#else
  (void)name;
  (void)text;
#endif
  return status;
}
