/* SPDX-License-Identifier: MIT */
/*
 * backend-cuda/driver/cuda_info.c: the public availability and device queries of
 * cubert/cuda.h, over the process-wide loader.
 */
#include "device/cuda_device.h"

cubert_status_t cubert_cuda_available(cubert_error_t *out_error) {
  return cubert__cuda_loader_shared(NULL, out_error);
}

cubert_status_t cubert_cuda_device_count(uint32_t *out_count, cubert_error_t *out_error) {
  const cubert_cuda_loader_t *cu = NULL;
  cubert_status_t st;
  if (!out_count)
    return cubert_error_set(out_error, CUBERT_ERROR_INVALID_ARGUMENT, NULL, 0,
                            "cubert_cuda_device_count: NULL out_count");
  st = cubert__cuda_loader_shared(&cu, out_error);
  if (st != CUBERT_STATUS_OK) return st;
  *out_count = (uint32_t)cu->device_count;
  return CUBERT_STATUS_OK;
}

cubert_status_t cubert_cuda_device_info(uint32_t ordinal, cubert_cuda_device_info_t *out,
                                        cubert_error_t *out_error) {
  const cubert_cuda_loader_t *cu = NULL;
  cubert_status_t st;
  if (!out)
    return cubert_error_set(out_error, CUBERT_ERROR_INVALID_ARGUMENT, NULL, 0,
                            "cubert_cuda_device_info: NULL out");
  st = cubert__cuda_loader_shared(&cu, out_error);
  if (st != CUBERT_STATUS_OK) return st;
  return cubert__cuda_device_query(cu, ordinal, out, out_error);
}
