/* backend-cpu/cpu/cpu_launch.c: validating and running kernels on the CPU server. */
#include "cpu/cpu_launch.h"

#include <string.h>

#include "cpu/cpu_executor.h"

cubert_status_t cpu_launch_executor_create(cpu_server_t *s, uint32_t workers,
                                           cubert_error_t *out_error) {
  cubert_cpu_executor_t *e = NULL;
  CUBERT_RETURN_IF_ERROR(cubert_cpu_executor_create(s->allocator, workers, &e, out_error));
  s->executor = (struct cpu_executor_t *)e;
  return CUBERT_STATUS_OK;
}

void cpu_launch_executor_destroy(cpu_server_t *s) {
  cubert_cpu_executor_destroy((cubert_cpu_executor_t *)s->executor);
  s->executor = NULL;
}

static cubert_status_t limit_error(cubert_error_t *e, cubert_error_kind_t kind, uint64_t requested,
                                   uint64_t max, const char *what) {
  uint64_t f[2];
  f[0] = requested;
  f[1] = max;
  cubert_error_set(e, kind, f, 2, what);
  cubert_error_wrap(e, CUBERT_ERROR_LAUNCH_TOO_MANY_RESOURCES);
  return cubert_error_wrap(e, CUBERT_ERROR_SERVER_LAUNCH);
}

/* Resource limits (spec 9.3): cube dim, then units, then shared memory. */
static cubert_status_t check_limits(const cpu_server_t *s, const cubert_kernel_t *k,
                                    const cubert_cube_count_t *count, cubert_error_t *e) {
  const cubert_hardware_properties_t *hw = &s->properties.hardware;
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

cubert_status_t cpu_launch_validate(cpu_server_t *s, const cubert_kernel_t *k,
                                    const cubert_cube_count_t *count,
                                    const cubert_launch_arguments_t *args, bool *out_queued,
                                    cubert_error_t *out_error) {
  cubert_error_t limit;
  *out_queued = false;
  if (!k || !count || !args)
    return cubert_error_set(out_error, CUBERT_ERROR_INVALID_ARGUMENT, NULL, 0, "NULL launch argument");
  if (!k->cpu_entry) {
    cubert_error_set(out_error, CUBERT_ERROR_COMPILATION_UNSUPPORTED_INSTRUCTION, NULL, 0,
                     "kernel has no CPU entry point");
    cubert_error_wrap(out_error, CUBERT_ERROR_LAUNCH_COMPILATION);
    return cubert_error_wrap(out_error, CUBERT_ERROR_SERVER_LAUNCH);
  }
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
  if (check_limits(s, k, count, &limit) != CUBERT_STATUS_OK) { /* it fills `limit` */
    *out_queued = true;
    if (out_error) *out_error = limit;
  }
  return CUBERT_STATUS_OK;
}

cubert_status_t cpu_launch_execute(cpu_server_t *server, const cpu_launch_op_t *op,
                                   cubert_error_t *error) {
  cubert_kernel_args_t args;
  cubert_kernel_report_t report;
  cubert_dim3_t dims;
  uint32_t i;
  cubert_status_t status;
  if (!op->kernel) return CUBERT_STATUS_OK;
  if (op->count_kind == (uint8_t)CUBERT_CUBE_COUNT_DYNAMIC) {
    cubert_cube_count_t count; /* what check_limits reads: the kind */
    memset(&count, 0, sizeof count);
    count.kind = CUBERT_CUBE_COUNT_DYNAMIC;
    memcpy(&dims.x, op->dynamic_count, 4);
    memcpy(&dims.y, op->dynamic_count + 4, 4);
    memcpy(&dims.z, op->dynamic_count + 8, 4);
    if (check_limits(server, op->kernel, &count, error) != CUBERT_STATUS_OK)
      return error->status;
    if (dims.x > server->properties.hardware.max_cube_count.x ||
        dims.y > server->properties.hardware.max_cube_count.y ||
        dims.z > server->properties.hardware.max_cube_count.z)
      return limit_error(error, CUBERT_ERROR_RESOURCE_UNITS,
                         dims.x > server->properties.hardware.max_cube_count.x ? dims.x : dims.y,
                         server->properties.hardware.max_cube_count.y,
                         "dynamic cube count above the device's maximum");
  } else {
    dims = op->count_dims;
  }
  if (dims.x == 0 || dims.y == 0 || dims.z == 0) return CUBERT_STATUS_OK; /* spec 10.1 */
  /* only the slots below the counts are read (the executor checks the
   * counts against the kernel's): no need to zero the rest */
  for (i = 0; i < op->buffer_count; i++) {
    args.buffers[i].ptr = op->buffers[i].ptr;
    args.buffers[i].size_bytes = op->buffers[i].size;
  }
  args.buffer_count = op->buffer_count;
  for (i = 0; i < op->scalar_count; i++) args.scalars[i] = op->scalars[i];
  args.scalar_count = op->scalar_count;
  status = cubert_cpu_executor_run((cubert_cpu_executor_t *)server->executor, op->kernel, dims,
                                   op->kernel->cube_dim, &args,
                                   (cubert_execution_mode_t)op->execution, &report, error);
  if (status != CUBERT_STATUS_OK) return cubert_error_wrap(error, CUBERT_ERROR_SERVER_LAUNCH);
  if (op->execution == (uint8_t)CUBERT_EXECUTION_VALIDATE && report.has_violation) {
    uint64_t f[4];
    f[0] = report.buffer_index;
    f[1] = report.element_index;
    f[2] = report.buffer_length;
    f[3] = report.is_write;
    cubert_error_set(error, CUBERT_ERROR_SERVER_VALIDATION, f, 4, op->kernel->name);
    return error->status;
  }
  return CUBERT_STATUS_OK;
}
