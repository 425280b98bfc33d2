/* SPDX-License-Identifier: MIT */
/*
 * core/kit/kit_launch.c: kernel launches. What any device checks is checked
 * here, before the driver sees the launch:
 *  - argument counts against the kernel descriptor and the dialect's limits,
 *    a zero cube dim (errors returned, nothing enqueued);
 *  - the device's resource limits (cube dim, units, shared memory, static
 *    cube count): queued on the stream as Launch(TooManyResources(...))
 *    and surfaced at the next flush / sync / read;
 *  - every binding resolved to a device address (released, never bound,
 *    another device's: errors returned), a dynamic count's 12 bytes.
 * Then the MultiStream resolves the stream over the bindings (cross-stream
 * waits and pins), the driver enqueues the launch, and the race checker
 * hears the accesses (buffers the kernel only reads as reads).
 */
#include "kit/kit_internal.h"

static cubert_status_t limit_error(cubert_error_t *e, cubert_error_kind_t kind, uint64_t requested,
                                   uint64_t max, const char *what) {
  uint64_t f[2];
  f[0] = requested;
  f[1] = max;
  cubert_error_set(e, kind, f, 2, what);
  cubert_error_wrap(e, CUBERT_ERROR_LAUNCH_TOO_MANY_RESOURCES);
  return cubert_error_wrap(e, CUBERT_ERROR_SERVER_LAUNCH);
}

/* Resource limits: cube dim, then units, then shared memory, then
 * a static count. */
static cubert_status_t check_limits(const cubert_kit_t *kit, const cubert_kernel_t *k,
                                    const cubert_cube_count_t *count, cubert_error_t *e) {
  const cubert_hardware_properties_t *hw = &kit->properties.hardware;
  uint64_t units = (uint64_t)k->cube_dim.x * k->cube_dim.y * k->cube_dim.z;
  if (k->cube_dim.x > hw->max_cube_dim.x || k->cube_dim.y > hw->max_cube_dim.y ||
      k->cube_dim.z > hw->max_cube_dim.z) {
    cubert_error_set(e, CUBERT_ERROR_RESOURCE_CUBE_DIM, NULL, 0, "cube dim above the device's");
    e->field[0] = k->cube_dim.x;
    e->field[1] = k->cube_dim.y;
    e->field[2] = k->cube_dim.z;
    e->field2[0] = hw->max_cube_dim.x;
    e->field2[1] = hw->max_cube_dim.y;
    e->field2[2] = hw->max_cube_dim.z;
    cubert_error_wrap(e, CUBERT_ERROR_LAUNCH_TOO_MANY_RESOURCES);
    return cubert_error_wrap(e, CUBERT_ERROR_SERVER_LAUNCH);
  }
  if (units > hw->max_units_per_cube)
    return limit_error(e, CUBERT_ERROR_RESOURCE_UNITS, units, hw->max_units_per_cube,
                       "units per cube above the device's");
  if (k->shared_memory_bytes > hw->max_shared_memory_size)
    return limit_error(e, CUBERT_ERROR_RESOURCE_SHARED_MEMORY, k->shared_memory_bytes,
                       hw->max_shared_memory_size, "shared memory above the device's");
  if (count->kind == CUBERT_CUBE_COUNT_STATIC &&
      (count->count.x > hw->max_cube_count.x || count->count.y > hw->max_cube_count.y ||
       count->count.z > hw->max_cube_count.z)) {
    uint64_t requested = count->count.x > hw->max_cube_count.x   ? count->count.x
                         : count->count.y > hw->max_cube_count.y ? count->count.y
                                                                 : count->count.z;
    uint64_t max = count->count.x > hw->max_cube_count.x   ? hw->max_cube_count.x
                   : count->count.y > hw->max_cube_count.y ? hw->max_cube_count.y
                                                           : hw->max_cube_count.z;
    return limit_error(e, CUBERT_ERROR_RESOURCE_UNITS, requested, max,
                       "cube count above the device's maximum on an axis");
  }
  return CUBERT_STATUS_OK;
}

static cubert_status_t check_arguments(const cubert_kernel_t *k, const cubert_cube_count_t *count,
                                       const cubert_launch_arguments_t *args,
                                       cubert_execution_mode_t execution,
                                       cubert_error_t *out_error) {
  /* unreachable: NULLs (the client's launch_with, the only caller, refuses them first) */
  if (!k || !count || !args || (args->buffer_count && !args->buffers) ||
      (args->scalar_count && !args->scalars))
    return cubert_error_set(out_error, CUBERT_ERROR_INVALID_ARGUMENT, NULL, 0,
                            "NULL launch argument");
  /* unreachable: a mode beyond RACECHECK (the client passes only its own constants) */
  if ((unsigned)execution > (unsigned)CUBERT_EXECUTION_RACECHECK)
    return cubert_error_set(out_error, CUBERT_ERROR_INVALID_ARGUMENT, NULL, 0,
                            "unknown execution mode");
  if (k->cube_dim.x == 0 || k->cube_dim.y == 0 || k->cube_dim.z == 0)
    return cubert_error_set(out_error, CUBERT_ERROR_INVALID_ARGUMENT, NULL, 0,
                            "cube dim has a zero component");
  if (args->buffer_count > CUBERT_KERNEL_MAX_BUFFERS || args->buffer_count < k->buffer_count) {
    uint64_t f[2];
    f[0] = args->buffer_count;
    f[1] = k->buffer_count;
    return cubert_error_set(out_error, CUBERT_ERROR_SERVER_VALIDATION, f, 2,
                            "wrong number of buffers for this kernel");
  }
  if (args->scalar_count > CUBERT_KERNEL_MAX_SCALARS || args->scalar_count < k->scalar_count) {
    uint64_t f[2];
    f[0] = args->scalar_count;
    f[1] = k->scalar_count;
    return cubert_error_set(out_error, CUBERT_ERROR_SERVER_VALIDATION, f, 2,
                            "wrong number of scalars for this kernel");
  }
  return CUBERT_STATUS_OK;
}

/* Resolve the buffers (and a dynamic count) into `buffers` / `bindings`. */
static cubert_status_t resolve_arguments(cubert_kit_t *kit, const cubert_kit_launch_t *op,
                                         cubert_driver_launch_t *launch,
                                         cubert_driver_buffer_t *buffers,
                                         cubert_binding_t *bindings, uint32_t *out_count,
                                         cubert_error_t *out_error) {
  const cubert_launch_arguments_t *args = op->args;
  uint32_t i, n = args->buffer_count;
  for (i = 0; i < n; i++) {
    bindings[i] = args->buffers[i];
    CUBERT_RETURN_IF_ERROR(
        kit_resolve(kit, &args->buffers[i], &buffers[i].address, &buffers[i].size, out_error));
  }
  if (op->count->kind == CUBERT_CUBE_COUNT_DYNAMIC) {
    uint64_t size;
    bindings[n++] = op->count->binding;
    CUBERT_RETURN_IF_ERROR(
        kit_resolve(kit, &op->count->binding, &launch->dynamic_count, &size, out_error));
    if (size < 12)
      return cubert_error_set(out_error, CUBERT_ERROR_OUT_OF_RANGE, &size, 1,
                              "a dynamic cube count needs 12 bytes");
    launch->dynamic = 1;
  }
  *out_count = n;
  return CUBERT_STATUS_OK;
}

/* Read-only buffers and the dynamic count are reads, the rest writes. */
static void report_accesses(cubert_kit_t *kit, uint32_t slot, const cubert_kit_launch_t *op,
                            const cubert_binding_t *bindings, uint32_t nbind) {
  uint8_t modes[KIT_MAX_BINDINGS];
  uint32_t i, nb = op->args->buffer_count;
  /* unreachable: check_arguments bounds buffer_count (a bound gcc sees) */
  if (nbind > KIT_MAX_BINDINGS) nbind = KIT_MAX_BINDINGS;
  for (i = 0; i < nbind; i++)
    /* unreachable: i >= 32 (i < buffer_count <= CUBERT_KERNEL_MAX_BUFFERS, 16) */
    modes[i] = (i < nb && i < 32 && !(op->kernel->read_only_mask & (1u << i)))
                   ? CUBERT_RACE_WRITE
                   : CUBERT_RACE_READ;
  kit_race_op(kit, slot, op->kernel->name, bindings, modes, nbind);
}

cubert_status_t cubert_kit_launch(cubert_kit_t *kit, const cubert_kit_launch_t *op,
                                  cubert_error_t *out_error) {
  cubert_binding_t bindings[KIT_MAX_BINDINGS];
  cubert_driver_buffer_t buffers[CUBERT_KERNEL_MAX_BUFFERS];
  cubert_driver_launch_t launch;
  cubert_resolved_streams_t resolved;
  cubert_error_t limit;
  uint32_t nbind = 0;
  cubert_status_t status;
  CUBERT_RETURN_IF_ERROR(kit_lost(kit, out_error));
  CUBERT_RETURN_IF_ERROR(check_arguments(op->kernel, op->count, op->args, op->execution, out_error));
  if (check_limits(kit, op->kernel, op->count, &limit) != CUBERT_STATUS_OK) {
    kit_push_error(kit, op->stream, &limit); /* surfaces at the next flush / sync */
    return CUBERT_STATUS_OK;
  }
  /* unreachable: a static count with a zero component (the client drops it first:
   * cubert_cube_count_is_empty in launch_with) */
  if (op->count->kind == CUBERT_CUBE_COUNT_STATIC &&
      (op->count->count.x == 0 || op->count->count.y == 0 || op->count->count.z == 0))
    return CUBERT_STATUS_OK; /* dispatches nothing */
  launch.kernel = op->kernel;
  launch.execution = (uint32_t)op->execution;
  launch.dynamic = 0;
  launch.count = op->count->count;
  launch.dynamic_count = 0;
  launch.buffer_count = op->args->buffer_count;
  launch.scalar_count = op->args->scalar_count;
  launch.buffers = buffers;
  launch.scalars = op->args->scalars;
  CUBERT_RETURN_IF_ERROR(
      resolve_arguments(kit, op, &launch, buffers, bindings, &nbind, out_error));
  CUBERT_RETURN_IF_ERROR(cubert_multi_stream_resolve(kit->multi, op->stream, bindings, nbind,
                                                     false, &resolved, out_error));
  status = kit_note(kit,
                    kit->driver->launch(kit->self, &launch, ((kit_slot_t *)resolved.stream)->stream,
                                        out_error),
                    out_error);
  if (status == CUBERT_STATUS_OK && kit->race)
    report_accesses(kit, resolved.slot, op, bindings, nbind);
  if (resolved.pinned) {
    cubert_multi_stream_resolve_end(kit->multi, &resolved);
    kit_gc_take_tasks(kit);
  } else {
    cubert_multi_stream_resolve_end(kit->multi, &resolved);
  }
  kit_gc_poll_if_pending(kit);
  return status;
}
