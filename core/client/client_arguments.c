/* SPDX-License-Identifier: MIT */
/* core/client/client_arguments.c: the launch-argument builder
 * (cubert_launch_arguments_*, cubert/client.h) and the check a launch makes
 * of a built struct (client_arguments_view). */
#include "client/client_internal.h"

typedef char launch_limits_match_[(CUBERT_LAUNCH_MAX_BUFFERS == CUBERT_KERNEL_MAX_BUFFERS &&
                                   CUBERT_LAUNCH_MAX_SCALARS == CUBERT_KERNEL_MAX_SCALARS &&
                                   CUBERT_LAUNCH_MAX_BUFFERS <= 32 &&
                                   CUBERT_LAUNCH_MAX_SCALARS <= 32)
                                      ? 1
                                      : -1];

void cubert_launch_arguments_initialize(cubert_launch_arguments_t *args) {
  if (!args) return;
  __builtin_memset(args, 0, sizeof(*args));
  args->initialized = CUBERT_LAUNCH_ARGUMENTS_INITIALIZED;
  args->buffers = NULL;
  args->scalars = NULL;
  args->failed_reason = NULL;
}

/* A setter's failure: marks the struct (the launch is refused with it). */
static cubert_status_t set_failed(cubert_launch_arguments_t *args, uint32_t slot,
                                  const char *reason) {
  if (!args->failed) {
    args->failed = 1;
    args->failed_slot = slot;
    args->failed_reason = reason;
  }
  return CUBERT_STATUS_INVALID_ARGUMENT;
}

cubert_status_t cubert_launch_arguments_set_buffer(cubert_launch_arguments_t *args, uint32_t slot,
                                                   const cubert_handle_t *handle) {
  if (!args || args->initialized != CUBERT_LAUNCH_ARGUMENTS_INITIALIZED)
    return CUBERT_STATUS_INVALID_ARGUMENT;
  if (slot >= CUBERT_LAUNCH_MAX_BUFFERS)
    return set_failed(args, slot, "launch arguments: buffer slot beyond CUBERT_LAUNCH_MAX_BUFFERS");
  if (!handle) return set_failed(args, slot, "launch arguments: NULL buffer handle");
  if (args->buffers)
    return set_failed(args, slot, "launch arguments: set_buffer on a struct whose buffers are the "
                                  "caller's array");
  args->buffer_slots[slot] = *handle;
  args->buffer_set_mask |= 1u << slot;
  if (args->buffer_count < slot + 1) args->buffer_count = slot + 1;
  return CUBERT_STATUS_OK;
}

static cubert_status_t set_scalar(cubert_launch_arguments_t *args, uint32_t slot, uint64_t bits,
                                  cubert_scalar_type_t type) {
  if (!args || args->initialized != CUBERT_LAUNCH_ARGUMENTS_INITIALIZED)
    return CUBERT_STATUS_INVALID_ARGUMENT;
  if (slot >= CUBERT_LAUNCH_MAX_SCALARS)
    return set_failed(args, slot, "launch arguments: scalar slot beyond CUBERT_LAUNCH_MAX_SCALARS");
  if (args->scalars)
    return set_failed(args, slot, "launch arguments: set_<scalar> on a struct whose scalars are "
                                  "the caller's array");
  args->scalar_slots[slot] = bits;
  args->scalar_types[slot] = (uint8_t)type;
  args->scalar_set_mask |= 1u << slot;
  if (args->scalar_count < slot + 1) args->scalar_count = slot + 1;
  return CUBERT_STATUS_OK;
}

cubert_status_t cubert_launch_arguments_set_u32(cubert_launch_arguments_t *args, uint32_t slot,
                                                uint32_t value) {
  return set_scalar(args, slot, (uint64_t)value, CUBERT_SCALAR_U32);
}

cubert_status_t cubert_launch_arguments_set_i32(cubert_launch_arguments_t *args, uint32_t slot,
                                                int32_t value) {
  return set_scalar(args, slot, (uint64_t)(uint32_t)value, CUBERT_SCALAR_I32);
}

cubert_status_t cubert_launch_arguments_set_u64(cubert_launch_arguments_t *args, uint32_t slot,
                                                uint64_t value) {
  return set_scalar(args, slot, value, CUBERT_SCALAR_U64);
}

cubert_status_t cubert_launch_arguments_set_i64(cubert_launch_arguments_t *args, uint32_t slot,
                                                int64_t value) {
  return set_scalar(args, slot, (uint64_t)value, CUBERT_SCALAR_I64);
}

cubert_status_t cubert_launch_arguments_set_f32(cubert_launch_arguments_t *args, uint32_t slot,
                                                float value) {
  return set_scalar(args, slot, cubert_kernel_f32_bits(value), CUBERT_SCALAR_F32);
}

cubert_status_t cubert_launch_arguments_set_f64(cubert_launch_arguments_t *args, uint32_t slot,
                                                double value) {
  return set_scalar(args, slot, cubert_kernel_f64_bits(value), CUBERT_SCALAR_F64);
}

cubert_status_t cubert_launch_arguments_set_cube_dim(cubert_launch_arguments_t *args, uint32_t x,
                                                     uint32_t y, uint32_t z) {
  if (!args || args->initialized != CUBERT_LAUNCH_ARGUMENTS_INITIALIZED)
    return CUBERT_STATUS_INVALID_ARGUMENT;
  if (x == 0 || y == 0 || z == 0)
    return set_failed(args, 0, "launch arguments: cube dim has a zero component");
  args->cube_dim.x = x;
  args->cube_dim.y = y;
  args->cube_dim.z = z;
  return CUBERT_STATUS_OK;
}

cubert_status_t cubert_launch_arguments_set_shared_memory_bytes(cubert_launch_arguments_t *args,
                                                                uint64_t bytes) {
  if (!args || args->initialized != CUBERT_LAUNCH_ARGUMENTS_INITIALIZED)
    return CUBERT_STATUS_INVALID_ARGUMENT;
  if (bytes > UINT32_MAX)
    return set_failed(args, 0, "launch arguments: shared memory bytes above 2^32 - 1");
  args->shared_memory_bytes = bytes;
  args->has_shared_memory_bytes = 1;
  return CUBERT_STATUS_OK;
}

cubert_status_t client_arguments_view(const cubert_launch_arguments_t *args,
                                      cubert_launch_arguments_t *view, cubert_error_t *out_error) {
  uint32_t i;
  if (args->initialized != CUBERT_LAUNCH_ARGUMENTS_INITIALIZED)
    return cubert_error_set(out_error, CUBERT_ERROR_INVALID_ARGUMENT, NULL, 0,
                            "launch arguments: not initialized "
                            "(cubert_launch_arguments_initialize)");
  if (args->failed) {
    uint64_t f = args->failed_slot;
    return cubert_error_set(out_error, CUBERT_ERROR_INVALID_ARGUMENT, &f, 1,
                            args->failed_reason ? args->failed_reason
                                                : "launch arguments: a setter failed");
  }
  if (args->buffer_count > CUBERT_LAUNCH_MAX_BUFFERS || args->scalar_count > CUBERT_LAUNCH_MAX_SCALARS) {
    uint64_t f[2];
    f[0] = args->buffer_count;
    f[1] = args->scalar_count;
    return cubert_error_set(out_error, CUBERT_ERROR_SERVER_VALIDATION, f, 2,
                            "launch arguments: more slots than CUBERT_LAUNCH_MAX_BUFFERS / "
                            "CUBERT_LAUNCH_MAX_SCALARS");
  }
  if ((args->cube_dim.x | args->cube_dim.y | args->cube_dim.z) != 0 &&
      (args->cube_dim.x == 0 || args->cube_dim.y == 0 || args->cube_dim.z == 0))
    return cubert_error_set(out_error, CUBERT_ERROR_INVALID_ARGUMENT, NULL, 0,
                            "launch arguments: cube dim has a zero component");
  if (args->has_shared_memory_bytes && args->shared_memory_bytes > UINT32_MAX) {
    uint64_t f = args->shared_memory_bytes;
    return cubert_error_set(out_error, CUBERT_ERROR_INVALID_ARGUMENT, &f, 1,
                            "launch arguments: shared memory bytes above 2^32 - 1");
  }
  view->buffers = args->buffers;
  view->scalars = args->scalars;
  if (!args->buffers) {
    for (i = 0; i < args->buffer_count; i++)
      if (!(args->buffer_set_mask & (1u << i))) {
        uint64_t f = i;
        return cubert_error_set(out_error, CUBERT_ERROR_INVALID_ARGUMENT, &f, 1,
                                "launch arguments: a buffer slot below buffer_count was not set");
      }
    view->buffers = args->buffer_slots;
  }
  if (!args->scalars) {
    for (i = 0; i < args->scalar_count; i++)
      if (!(args->scalar_set_mask & (1u << i))) {
        uint64_t f = i;
        return cubert_error_set(out_error, CUBERT_ERROR_INVALID_ARGUMENT, &f, 1,
                                "launch arguments: a scalar slot below scalar_count was not set");
      }
    view->scalars = args->scalar_slots;
  }
  /* the types of builder-set scalars (recordings check them); none for the low-level form */
  if (!args->scalars)
    cubert_memcpy(view->scalar_types, args->scalar_types, sizeof view->scalar_types);
  else
    cubert_memset(view->scalar_types, 0, sizeof view->scalar_types);
  view->buffer_count = args->buffer_count;
  view->scalar_count = args->scalar_count;
  view->cube_dim = args->cube_dim;
  view->has_shared_memory_bytes = args->has_shared_memory_bytes;
  view->shared_memory_bytes = args->shared_memory_bytes;
  return CUBERT_STATUS_OK;
}
