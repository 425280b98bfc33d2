/* SPDX-License-Identifier: MIT */
/* core/base/error.c: the error record (kinds, chain, fields, reason), its
 * constructors and the ServerUnhealthy aggregate. The Display text is in
 * error_format.c.
 */
#include "base/internal.h"
#include "base/fmt.h"
#include "base/error_internal.h"

/* The status of each kind (every status value fits a byte). The kinds'
 * names are text: error_format.c. */
static const uint8_t g_kind_status[CUBERT_ERROR_KIND_COUNT_] = {
#define CUBERT_ERROR_KIND_STATUS_(kname, kstatus, seed) (uint8_t)CUBERT_STATUS_##kstatus,
    CUBERT_ERROR_KIND_LIST(CUBERT_ERROR_KIND_STATUS_)
#undef CUBERT_ERROR_KIND_STATUS_
};

/* Everything but the reason's tail (it is NUL-terminated at [0]): this runs
 * on every enqueue and every stream op, and the record is ~300 bytes. Field
 * by field: a memset of the 89-byte head compiled to `rep stos` (about 30
 * cycles to start; 7% of a replayed kernel's time on its stream's thread,
 * docs/benchmarks.md "Recorded sequences"), these are a few plain stores. */
void cubert_error_clear(cubert_error_t *error) {
  unsigned i;
  if (!error) return;
  error->status = CUBERT_STATUS_OK;
  error->depth = 0;
  for (i = 0; i < CUBERT_ERROR_MAX_DEPTH; i++) error->chain[i] = 0;
  for (i = 0; i < sizeof error->field / sizeof error->field[0]; i++) error->field[i] = 0;
  for (i = 0; i < sizeof error->field2 / sizeof error->field2[0]; i++) error->field2[i] = 0;
  error->driver_code = 0;
  error->reason[0] = 0;
}

cubert_status_t cubert_error_kind_status(cubert_error_kind_t kind) {
  if ((unsigned)kind >= (unsigned)CUBERT_ERROR_KIND_COUNT_) return CUBERT_STATUS_INTERNAL;
  return (cubert_status_t)g_kind_status[kind];
}

/* (the name in parentheses: not the reason-dropping macro of base/internal.h) */
cubert_status_t(cubert_error_set)(cubert_error_t *error, cubert_error_kind_t kind,
                                  const uint64_t *fields, size_t count, const char *reason) {
  cubert_status_t status = cubert_error_kind_status(kind);
  size_t i;
  if ((unsigned)kind >= (unsigned)CUBERT_ERROR_KIND_COUNT_) { /* not a kind: said so */
    uint64_t f = (uint32_t)kind;
    return (cubert_error_set)(error, CUBERT_ERROR_INVALID_ARGUMENT, &f, 1,
                              "cubert_error_set: unknown error kind");
  }
  if (!error) return status;
  cubert_error_clear(error);
  error->status = status;
  if (kind != CUBERT_ERROR_NONE) {
    error->depth = 1;
    error->chain[0] = (uint16_t)kind;
  }
  if (count > CUBERT_ARRAY_SIZE(error->field)) count = CUBERT_ARRAY_SIZE(error->field);
  for (i = 0; fields && i < count; i++) error->field[i] = fields[i];
  if (reason) cubert__strlcpy(error->reason, reason, sizeof(error->reason));
  return status;
}

cubert_status_t cubert__error_from_status(cubert_error_t *error, cubert_status_t status,
                                          const char *reason) {
  cubert_error_kind_t kind;
  switch (status) {
    case CUBERT_STATUS_OK: return CUBERT_STATUS_OK;
    case CUBERT_STATUS_INVALID_ARGUMENT: kind = CUBERT_ERROR_INVALID_ARGUMENT; break;
    case CUBERT_STATUS_OUT_OF_RANGE: kind = CUBERT_ERROR_OUT_OF_RANGE; break;
    case CUBERT_STATUS_OVERFLOW: kind = CUBERT_ERROR_OVERFLOW; break;
    case CUBERT_STATUS_INVALID_HANDLE: kind = CUBERT_ERROR_INVALID_HANDLE; break;
    case CUBERT_STATUS_RESOURCE_EXHAUSTED: kind = CUBERT_ERROR_HOST_OUT_OF_MEMORY; break;
    case CUBERT_STATUS_DEVICE_MISMATCH: kind = CUBERT_ERROR_DEVICE_MISMATCH; break;
    case CUBERT_STATUS_DEADLINE_EXCEEDED: kind = CUBERT_ERROR_DEADLINE_EXCEEDED; break;
    case CUBERT_STATUS_UNAVAILABLE: kind = CUBERT_ERROR_DEVICE_LOST; break;
    case CUBERT_STATUS_NOT_FOUND: kind = CUBERT_ERROR_IO_NOT_FOUND; break;
    default: kind = CUBERT_ERROR_SERVER_GENERIC; break;
  }
  (void)cubert_error_set(error, kind, NULL, 0, reason);
  if (error) error->status = status;
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
  cubert__fmt_initialize(&f, into->reason, sizeof(into->reason));
  cubert__error_format_record_(&f, first);
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
  cubert__fmt_initialize_append(&f, aggregate->reason, sizeof(aggregate->reason));
  if (f.len + 2 < f.size) {
    if (f.len > 0) cubert__fmt_append_char(&f, '\n');
    if (is_aggregate(&added))
      cubert__fmt_append_strn(&f, added.reason, sizeof(added.reason));
    else
      cubert__error_format_record_(&f, &added);
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
  first.driver_code = aggregate->driver_code;
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

cubert_status_t cubert_error_set_driver(cubert_error_t *error, cubert_error_kind_t kind,
                                        int64_t driver_code, const char *reason) {
  cubert_status_t status = cubert_error_set(error, kind, NULL, 0, reason);
  if (error) error->driver_code = driver_code;
  return status;
}

cubert_status_t cubert_error_set_call(cubert_error_t *error, cubert_call_error_payload_t payload,
                                      const char *message) {
  uint64_t field = (uint64_t)payload;
  if ((uint32_t)payload > (uint32_t)CUBERT_CALL_ERROR_PANIC_NON_STRING)
    return (cubert_error_set)(error, CUBERT_ERROR_INVALID_ARGUMENT, &field, 1,
                              "cubert_error_set_call: unknown payload");
  return cubert_error_set(error, CUBERT_ERROR_CALL_ERROR, &field, 1,
                          payload == CUBERT_CALL_ERROR_PANIC_MESSAGE ? message : NULL);
}

cubert_status_t cubert_error_wrap_storage_mapping_failed(cubert_error_t *error, uint64_t size) {
  if (!error) return CUBERT_STATUS_OK;
  if (error->depth == 0) return error->status;
  error->field2[0] = size;
  return cubert_error_wrap(error, CUBERT_ERROR_IO_STORAGE_MAPPING_FAILED);
}
