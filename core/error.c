/* core/error.c: the error record (kinds, chain, fields, reason). */
#include "internal.h"

typedef struct kind_info_t {
  const char *name;
  cubert_status_t status;
} kind_info_t;

static const kind_info_t g_kinds[CUBERT_ERROR_KIND_COUNT_] = {
#define CUBERT_ERROR_KIND_INFO_(kname, kstatus, seed) {seed, CUBERT_STATUS_##kstatus},
    CUBERT_ERROR_KIND_LIST(CUBERT_ERROR_KIND_INFO_)
#undef CUBERT_ERROR_KIND_INFO_
};

void cubert_error_clear(cubert_error_t *error) {
  if (!error) return;
  cubert_memset(error, 0, sizeof(*error));
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
  if (!error || error->depth == 0) return CUBERT_ERROR_NONE;
  return (cubert_error_kind_t)error->chain[error->depth - 1];
}

bool cubert_error_has_kind(const cubert_error_t *error, cubert_error_kind_t kind) {
  size_t i;
  if (!error) return false;
  for (i = 0; i < error->depth; i++)
    if (error->chain[i] == (uint16_t)kind) return true;
  return false;
}
