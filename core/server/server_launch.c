/* SPDX-License-Identifier: MIT */
/*
 * core/server/server_launch.c: kernel launches. What any device checks is checked
 * here, before the driver sees the launch:
 *  - argument counts against the kernel descriptor and the dialect's limits,
 *    a zero cube dim (errors returned, nothing enqueued);
 *  - the device's resource limits (cube dim, units, shared memory, static
 *    cube count): queued on the stream as Launch(TooManyResources(...))
 *    and surfaced at the next flush / sync / read;
 *  - every binding resolved to a device address (released, never bound,
 *    another device's: errors returned), a dynamic count's 12 bytes.
 * Then the stream is ordered over the bindings (server_stream.c: the
 * MultiStream's plan of cross-stream waits and pins), the driver enqueues the
 * launch, and the race checker hears the accesses (buffers the kernel only
 * reads as reads).
 */
#include "server/server_internal.h"

static cubert_status_t limit_error(cubert_error_t *e, cubert_error_kind_t kind, uint64_t requested,
                                   uint64_t max, const char *what) {
  uint64_t f[2];
  f[0] = requested;
  f[1] = max;
  cubert_error_set(e, kind, f, 2, what);
  cubert_error_wrap(e, CUBERT_ERROR_LAUNCH_TOO_MANY_RESOURCES);
  return cubert_error_wrap(e, CUBERT_ERROR_SERVER_LAUNCH);
}

/* The shape of a launch: the launch arguments' cube dim and dynamic shared
 * bytes where given, else the descriptor's. */
static cubert_dim3_t launch_dim(const cubert_server_launch_t *op) {
  const cubert_dim3_t d = op->args->cube_dim;
  return (d.x | d.y | d.z) ? d : op->kernel->cube_dim;
}

static uint64_t launch_shared(const cubert_server_launch_t *op) {
  return op->args->has_shared_memory_bytes ? op->args->shared_memory_bytes
                                           : (uint64_t)op->kernel->shared_memory_bytes;
}

/* Resource limits: cube dim, then units, then shared memory, then
 * a static count. */
static cubert_status_t check_limits(const cubert_server_t *server, const cubert_server_launch_t *op,
                                    cubert_error_t *e) {
  const cubert_hardware_properties_t *hw = &server->properties.hardware;
  const cubert_cube_count_t *count = op->count;
  const cubert_dim3_t dim = launch_dim(op);
  const uint64_t shared = launch_shared(op);
  uint64_t units = (uint64_t)dim.x * dim.y * dim.z;
  if (dim.x > hw->max_cube_dim.x || dim.y > hw->max_cube_dim.y || dim.z > hw->max_cube_dim.z) {
    cubert_error_set(e, CUBERT_ERROR_RESOURCE_CUBE_DIM, NULL, 0, "cube dim above the device's");
    e->field[0] = dim.x;
    e->field[1] = dim.y;
    e->field[2] = dim.z;
    e->field2[0] = hw->max_cube_dim.x;
    e->field2[1] = hw->max_cube_dim.y;
    e->field2[2] = hw->max_cube_dim.z;
    cubert_error_wrap(e, CUBERT_ERROR_LAUNCH_TOO_MANY_RESOURCES);
    return cubert_error_wrap(e, CUBERT_ERROR_SERVER_LAUNCH);
  }
  if (units > hw->max_units_per_cube)
    return limit_error(e, CUBERT_ERROR_RESOURCE_UNITS, units, hw->max_units_per_cube,
                       "units per cube above the device's");
  if (shared > hw->max_shared_memory_size)
    return limit_error(e, CUBERT_ERROR_RESOURCE_SHARED_MEMORY, shared,
                       hw->max_shared_memory_size, "shared memory above the device's");
  if (count->kind == CUBERT_CUBE_COUNT_STATIC) {
    const uint32_t got[3] = {count->count.x, count->count.y, count->count.z};
    const uint32_t max[3] = {hw->max_cube_count.x, hw->max_cube_count.y, hw->max_cube_count.z};
    unsigned axis;
    for (axis = 0; axis < 3; axis++) {
      if (got[axis] > max[axis]) {
        /* field[2]: the axis (1..3), so the text speaks of cubes, not units */
        uint64_t f[3];
        f[0] = got[axis];
        f[1] = max[axis];
        f[2] = axis + 1u;
        cubert_error_set(e, CUBERT_ERROR_RESOURCE_UNITS, f, 3,
                         "cube count above the device's maximum on an axis");
        cubert_error_wrap(e, CUBERT_ERROR_LAUNCH_TOO_MANY_RESOURCES);
        return cubert_error_wrap(e, CUBERT_ERROR_SERVER_LAUNCH);
      }
    }
  }
  return CUBERT_STATUS_OK;
}

static cubert_status_t check_arguments(const cubert_server_launch_t *op, cubert_error_t *out_error) {
  const cubert_kernel_t *k = op->kernel;
  const cubert_cube_count_t *count = op->count;
  const cubert_launch_arguments_t *args = op->args;
  const cubert_execution_mode_t execution = op->execution;
  cubert_dim3_t dim;
  /* unreachable: NULLs (the client's launch_with, the only caller, refuses them first) */
  if (!k || !count || !args || (args->buffer_count && !args->buffers) ||
      (args->scalar_count && !args->scalars))
    return cubert_error_set(out_error, CUBERT_ERROR_INVALID_ARGUMENT, NULL, 0,
                            "NULL launch argument");
  /* unreachable: a mode beyond RACECHECK (the client passes only its own constants) */
  if ((unsigned)execution > (unsigned)CUBERT_EXECUTION_RACECHECK)
    return cubert_error_set(out_error, CUBERT_ERROR_INVALID_ARGUMENT, NULL, 0,
                            "unknown execution mode");
  dim = launch_dim(op);
  if (dim.x == 0 || dim.y == 0 || dim.z == 0)
    return cubert_error_set(out_error, CUBERT_ERROR_INVALID_ARGUMENT, NULL, 0,
                            "cube dim has a zero component");
  if (args->buffer_count > CUBERT_KERNEL_MAX_BUFFERS || args->buffer_count < k->buffer_count) {
    uint64_t f[3];
    f[0] = args->buffer_count;
    f[1] = k->buffer_count;
    f[2] = CUBERT_KERNEL_MAX_BUFFERS;
    return cubert__error_set_text(out_error, CUBERT_ERROR_SERVER_VALIDATION, f, 3, k->name,
                                  "launch of kernel '\005' refused: \001 buffers given, the "
                                  "kernel takes \002 (at most \003)");
  }
  if (args->scalar_count > CUBERT_KERNEL_MAX_SCALARS || args->scalar_count < k->scalar_count) {
    uint64_t f[3];
    f[0] = args->scalar_count;
    f[1] = k->scalar_count;
    f[2] = CUBERT_KERNEL_MAX_SCALARS;
    return cubert__error_set_text(out_error, CUBERT_ERROR_SERVER_VALIDATION, f, 3, k->name,
                                  "launch of kernel '\005' refused: \001 scalars given, the "
                                  "kernel takes \002 (at most \003)");
  }
  return CUBERT_STATUS_OK;
}

/* Resolve the buffers (and a dynamic count) into `buffers` / `bindings`. */
static cubert_status_t resolve_arguments(cubert_server_t *server, const cubert_server_launch_t *op,
                                         cubert_driver_launch_t *launch,
                                         cubert_driver_buffer_t *buffers,
                                         cubert_binding_t *bindings, uint32_t *out_count,
                                         cubert_error_t *out_error) {
  const cubert_launch_arguments_t *args = op->args;
  uint32_t i, n = args->buffer_count;
  for (i = 0; i < n; i++) {
    bindings[i] = args->buffers[i];
    CUBERT_RETURN_IF_ERROR(
        server_resolve(server, &args->buffers[i], &buffers[i].address, &buffers[i].size, out_error));
  }
  if (op->count->kind == CUBERT_CUBE_COUNT_DYNAMIC) {
    uint64_t size;
    bindings[n++] = op->count->binding;
    CUBERT_RETURN_IF_ERROR(
        server_resolve(server, &op->count->binding, &launch->dynamic_count, &size, out_error));
    if (size < 12)
      return cubert_error_set(out_error, CUBERT_ERROR_OUT_OF_RANGE, &size, 1,
                              "a dynamic cube count needs 12 bytes");
    launch->dynamic = 1;
  }
  *out_count = n;
  return CUBERT_STATUS_OK;
}

/* Read-only buffers and the dynamic count are reads, the rest writes. */
static void report_accesses(cubert_server_t *server, uint32_t slot, const cubert_server_launch_t *op,
                            const cubert_binding_t *bindings, uint32_t nbind) {
  uint8_t modes[SERVER_MAX_BINDINGS];
  uint32_t i, nb = op->args->buffer_count;
  /* unreachable: check_arguments bounds buffer_count (a bound gcc sees) */
  if (nbind > SERVER_MAX_BINDINGS) nbind = SERVER_MAX_BINDINGS;
  for (i = 0; i < nbind; i++)
    /* unreachable: i >= 32 (i < buffer_count <= CUBERT_KERNEL_MAX_BUFFERS, 16) */
    modes[i] = (i < nb && i < 32 && !(op->kernel->read_only_mask & (1u << i)))
                   ? CUBERT_RACE_WRITE
                   : CUBERT_RACE_READ;
  server_race_op(server, slot, op->kernel->name, bindings, modes, nbind);
}

cubert_status_t cubert__server_launch(cubert_server_t *server, const cubert_server_launch_t *op,
                                      cubert_error_t *out_error) {
  cubert_binding_t bindings[SERVER_MAX_BINDINGS];
  cubert_driver_buffer_t buffers[CUBERT_KERNEL_MAX_BUFFERS];
  cubert_driver_launch_t launch;
  server_order_t order;
  cubert_error_t limit;
  uint32_t nbind = 0;
  cubert_status_t status;
  CUBERT_RETURN_IF_ERROR(server_lost(server, out_error));
  CUBERT_RETURN_IF_ERROR(check_arguments(op, out_error));
  if (server->recording_count) { /* a recording stream: appended, not enqueued */
    struct cubert_server_recording_t *recording = server_recording_of(server, op->stream);
    if (recording) {
      if (check_limits(server, op, &limit) != CUBERT_STATUS_OK) { /* refused, not queued */
        if (out_error) *out_error = limit;
        return limit.status;
      }
      return server_record_launch(server, recording, op, launch_dim(op), (uint32_t)launch_shared(op),
                                  out_error);
    }
  }
  if (check_limits(server, op, &limit) != CUBERT_STATUS_OK) {
    server_push_error(server, op->stream, &limit); /* surfaces at the next flush / sync */
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
  launch.cube_dim = launch_dim(op);
  launch.shared_memory_bytes = (uint32_t)launch_shared(op); /* <= max_shared_memory_size */
  CUBERT_RETURN_IF_ERROR(
      resolve_arguments(server, op, &launch, buffers, bindings, &nbind, out_error));
  CUBERT_RETURN_IF_ERROR(server_order_begin(server, op->stream, bindings, nbind, &order, out_error));
  status = server_note(server, server->driver->launch(server->self, &launch, order.slot->stream, out_error),
                       out_error);
  if (status == CUBERT_STATUS_OK && server->race)
    report_accesses(server, order.slot->index, op, bindings, nbind);
  server_order_end(server, &order, bindings, nbind);
  server_gc_poll_if_pending(server);
  return status;
}

/* ---- the sharded launch (server.h; core/device/device_shards.h) -------------------------
 * What it touches, and why nothing else runs beside it on those: the
 * server's fields it reads (lost, recording_count, race, external_live,
 * properties, slots[]) change only with the device held, which waits for
 * every shard to be left; the slot's multi-stream cursor, its memory
 * manager and storage, and its driver stream belong to its shard; the handle
 * table's words are atomic. A launch that would touch anything else (a
 * binding of another stream: waits, pins, the release ring; a queued limit
 * error; the checker; a recording) is declined before anything changed. */

uint32_t cubert__server_shard_of(const cubert_server_t *server, uint64_t stream) {
  return server->concurrent_launch ? (uint32_t)(stream % server->max_streams) : UINT32_MAX;
}

void cubert__server_note_lost(cubert_server_t *server, const cubert_error_t *error) {
  (void)server_note(server, CUBERT_STATUS_UNAVAILABLE, error);
}

bool cubert__server_launch_sharded(cubert_server_t *server, const cubert_server_launch_t *op,
                                   cubert_status_t *out_status, cubert_error_t *out_error) {
  cubert_driver_buffer_t buffers[CUBERT_KERNEL_MAX_BUFFERS];
  cubert_driver_launch_t launch;
  cubert_error_t scratch;
  const cubert_launch_arguments_t *args = op->args;
  server_slot_t *slot;
  uint32_t i;
  if (!server->concurrent_launch || server->lost.status != CUBERT_STATUS_OK ||
      server->recording_count || server->race || server->external_live ||
      op->count->kind != CUBERT_CUBE_COUNT_STATIC ||
      (op->execution != CUBERT_EXECUTION_UNCHECKED && op->execution != CUBERT_EXECUTION_CHECKED))
    return false;
  slot = server_slot_existing(server, op->stream);
  if (!slot || !slot->manager) return false;
  cubert_error_clear(&scratch);
  if (check_arguments(op, &scratch) != CUBERT_STATUS_OK ||
      check_limits(server, op, &scratch) != CUBERT_STATUS_OK)
    return false;
  if (op->count->count.x == 0 || op->count->count.y == 0 || op->count->count.z == 0) return false;
  for (i = 0; i < args->buffer_count; i++) {
    if (args->buffers[i].stream != op->stream ||
        server_resolve(server, &args->buffers[i], &buffers[i].address, &buffers[i].size, &scratch) !=
            CUBERT_STATUS_OK)
      return false;
  }
  launch.kernel = op->kernel;
  launch.execution = (uint32_t)op->execution;
  launch.dynamic = 0;
  launch.count = op->count->count;
  launch.dynamic_count = 0;
  launch.buffer_count = args->buffer_count;
  launch.scalar_count = args->scalar_count;
  launch.buffers = buffers;
  launch.scalars = args->scalars;
  launch.cube_dim = launch_dim(op);
  launch.shared_memory_bytes = (uint32_t)launch_shared(op);
  /* the plan of a launch over its own stream's buffers: cursor + 1, no wait, no pin */
  (void)cubert__multi_stream_advance(server->multi, op->stream);
  *out_status = server->driver->launch(server->self, &launch, slot->stream, out_error);
  return true;
}
