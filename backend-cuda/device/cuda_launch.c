/* SPDX-License-Identifier: MIT */
/*
 * backend-cuda/device/cuda_launch.c: launch limits and cuLaunchKernel.
 *
 * A kernel built from the dialect takes (args by value, mode, report), so a
 * launch passes three parameter pointers: the caller's fixed-size argument
 * block (the driver copies it at launch), the mode word and the report
 * address. Nothing is allocated per launch.
 */
#include "device/cuda_device.h"
#include "cubert/driver/error.h"

static cubert_status_t launch_limit(cubert_error_t *out_error, cubert_error_kind_t kind,
                                    uint64_t requested, uint64_t max, const char *what) {
  uint64_t f[2];
  f[0] = requested;
  f[1] = max;
  cubert_error_set(out_error, kind, f, 2, what);
  cubert_error_wrap(out_error, CUBERT_ERROR_LAUNCH_TOO_MANY_RESOURCES);
  return cubert_error_wrap(out_error, CUBERT_ERROR_SERVER_LAUNCH);
}

cubert_status_t cubert__cuda_launch_check(const cubert_cuda_device_t *device,
                                          const cubert_cuda_function_t *function,
                                          cubert_dim3_t count, cubert_error_t *out_error) {
  const cubert_kernel_t *k = function->kernel;
  return cubert__cuda_launch_check_shaped(device, function, count, k->cube_dim,
                                          k->shared_memory_bytes, out_error);
}

cubert_status_t cubert__cuda_launch_check_shaped(const cubert_cuda_device_t *device,
                                                 const cubert_cuda_function_t *function,
                                                 cubert_dim3_t count, cubert_dim3_t dim,
                                                 uint32_t shared_bytes, cubert_error_t *out_error) {
  const cubert_hardware_properties_t *hw = &device->info.properties.hardware;
  uint64_t units = (uint64_t)dim.x * dim.y * dim.z;
  uint64_t shared = (uint64_t)shared_bytes + function->static_shared;
  if (dim.x == 0 || dim.y == 0 || dim.z == 0 || dim.x > hw->max_cube_dim.x ||
      dim.y > hw->max_cube_dim.y || dim.z > hw->max_cube_dim.z) {
    cubert_error_set_resource_cube_dim(out_error, dim, hw->max_cube_dim);
    cubert_error_wrap(out_error, CUBERT_ERROR_LAUNCH_TOO_MANY_RESOURCES);
    return cubert_error_wrap(out_error, CUBERT_ERROR_SERVER_LAUNCH);
  }
  if (units > hw->max_units_per_cube)
    return launch_limit(out_error, CUBERT_ERROR_RESOURCE_UNITS, units, hw->max_units_per_cube,
                        "units per cube above the device's");
  if (function->max_threads && units > function->max_threads)
    return launch_limit(out_error, CUBERT_ERROR_RESOURCE_MAX_UNIT_PER_CUBE, units,
                        function->max_threads,
                        "units per cube above what the compiled kernel allows");
  if (shared > hw->max_shared_memory_size)
    return launch_limit(out_error, CUBERT_ERROR_RESOURCE_SHARED_MEMORY, shared,
                        hw->max_shared_memory_size, "shared memory above the device's");
  if (count.x > hw->max_cube_count.x)
    return launch_limit(out_error, CUBERT_ERROR_RESOURCE_UNITS, count.x, hw->max_cube_count.x,
                        "cube count x above the device's maximum");
  if (count.y > hw->max_cube_count.y)
    return launch_limit(out_error, CUBERT_ERROR_RESOURCE_UNITS, count.y, hw->max_cube_count.y,
                        "cube count y above the device's maximum");
  if (count.z > hw->max_cube_count.z)
    return launch_limit(out_error, CUBERT_ERROR_RESOURCE_UNITS, count.z, hw->max_cube_count.z,
                        "cube count z above the device's maximum");
  return CUBERT_STATUS_OK;
}

cubert_status_t cubert__cuda_launch(cubert_cuda_stream_t *stream,
                                    const cubert_cuda_function_t *function, cubert_dim3_t count,
                                    const cubert_kernel_args_t *args, uint32_t mode,
                                    CUdeviceptr report, cubert_error_t *out_error) {
  if (!function)
    return cubert_error_set(out_error, CUBERT_ERROR_INVALID_ARGUMENT, NULL, 0,
                            "cubert__cuda_launch: NULL argument");
  return cubert__cuda_launch_shaped(stream, function, count, function->kernel->cube_dim,
                                    function->kernel->shared_memory_bytes, args, mode, report,
                                    out_error);
}

/* Dynamic shared memory above 48 KiB needs the function's opt-in attribute;
 * raised (never lowered) to what a launch asks. The function record is the
 * device's cache entry, used under the device's launch path. */
static cubert_status_t raise_dynamic_limit(cubert_cuda_device_t *device,
                                           const cubert_cuda_function_t *function,
                                           uint32_t shared_bytes, cubert_error_t *out_error) {
  cubert_cuda_function_t *f = (cubert_cuda_function_t *)(uintptr_t)function;
  CUresult r = CUDA_SUCCESS;
  if (shared_bytes <= 48u * 1024u || shared_bytes <= f->shared_memory_bytes) return CUBERT_STATUS_OK;
  /* the record is shared by launches on other streams (the module cache's mutex) */
  (void)pthread_mutex_lock(&device->modules.mutex);
  if (shared_bytes > f->dynamic_limit) {
    r = device->cu->cuFuncSetAttribute(f->handle, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                                       (int)shared_bytes);
    if (r == CUDA_SUCCESS) f->dynamic_limit = shared_bytes;
  }
  (void)pthread_mutex_unlock(&device->modules.mutex);
  if (r != CUDA_SUCCESS)
    return cubert__cuda_device_fail(device, r, CUBERT_CUDA_OP_LAUNCH, "cuFuncSetAttribute", 0,
                                    out_error);
  return CUBERT_STATUS_OK;
}

cubert_status_t cubert__cuda_launch_shaped(cubert_cuda_stream_t *stream,
                                           const cubert_cuda_function_t *function,
                                           cubert_dim3_t count, cubert_dim3_t dim,
                                           uint32_t shared_bytes, const cubert_kernel_args_t *args,
                                           uint32_t mode, CUdeviceptr report,
                                           cubert_error_t *out_error) {
  cubert_cuda_device_t *device;
  const cubert_kernel_t *k;
  void *params[3];
  CUresult r;
  cubert_status_t st;
  if (!stream || !stream->handle || !function || !args)
    return cubert_error_set(out_error, CUBERT_ERROR_INVALID_ARGUMENT, NULL, 0,
                            "cubert__cuda_launch: NULL argument");
  k = function->kernel;
  if (args->buffer_count < k->buffer_count || args->scalar_count < k->scalar_count ||
      args->buffer_count > CUBERT_KERNEL_MAX_BUFFERS ||
      args->scalar_count > CUBERT_KERNEL_MAX_SCALARS)
    return cubert_error_set(out_error, CUBERT_ERROR_INVALID_ARGUMENT, NULL, 0,
                            "launch arguments: fewer (or more) slots than the kernel reads");
  if (mode > CUBERT_KERNEL_MODE_UNCHECKED)
    return cubert_error_set(out_error, CUBERT_ERROR_INVALID_ARGUMENT, NULL, 0,
                            "cubert__cuda_launch: unknown execution mode");
  device = stream->device;
  st = cubert__cuda_device_enter(device, out_error);
  if (st != CUBERT_STATUS_OK) return st;
  st = cubert__cuda_launch_check_shaped(device, function, count, dim, shared_bytes, out_error);
  if (st != CUBERT_STATUS_OK) return st;
  if (count.x == 0 || count.y == 0 || count.z == 0) return CUBERT_STATUS_OK;
  st = raise_dynamic_limit(device, function, shared_bytes, out_error);
  if (st != CUBERT_STATUS_OK) return st;
  params[0] = (void *)args;
  params[1] = &mode;
  params[2] = &report;
  if (device->cu->fake) cubert__cuda_fake_launching(k); /* its CPU body runs inside */
  r = device->cu->cuLaunchKernel(function->handle, count.x, count.y, count.z, dim.x, dim.y, dim.z,
                                 shared_bytes, stream->handle, params, NULL);
  if (device->cu->fake) cubert__cuda_fake_launching(NULL);
  if (r != CUDA_SUCCESS)
    return cubert__cuda_device_fail(device, r, CUBERT_CUDA_OP_LAUNCH, "cuLaunchKernel", 0,
                                    out_error);
  return CUBERT_STATUS_OK;
}

cubert_status_t cubert__cuda_launch_dynamic(cubert_cuda_stream_t *stream,
                                            const cubert_cuda_function_t *function,
                                            CUdeviceptr count_ptr, const cubert_kernel_args_t *args,
                                            uint32_t mode, CUdeviceptr report,
                                            cubert_dim3_t *out_count, cubert_error_t *out_error) {
  cubert_dim3_t count;
  uint32_t *words;
  cubert_status_t st;
  if (!stream || !stream->handle || !function || !args || count_ptr == 0)
    return cubert_error_set(out_error, CUBERT_ERROR_INVALID_ARGUMENT, NULL, 0,
                            "cubert__cuda_launch_dynamic: NULL argument");
  words = stream->device->count_scratch;
  st = cubert__cuda_copy_d2h(stream, words, count_ptr, 3 * sizeof(uint32_t), out_error);
  if (st == CUBERT_STATUS_OK) st = cubert__cuda_stream_synchronize(stream, out_error);
  if (st != CUBERT_STATUS_OK) return st;
  count.x = words[0];
  count.y = words[1];
  count.z = words[2];
  if (out_count) *out_count = count;
  return cubert__cuda_launch(stream, function, count, args, mode, report, out_error);
}
