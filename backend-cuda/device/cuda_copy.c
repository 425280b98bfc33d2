/* SPDX-License-Identifier: MIT */
/*
 * backend-cuda/device/cuda_copy.c: asynchronous copies on a stream, 1-D
 * (cuMemcpy{HtoD,DtoH,DtoD}Async) and pitched 2-D (cuMemcpy2DAsync), and
 * tensor transfers by their copy plan (pitched device rows, packed host
 * rows).
 */
#include "device/cuda_device.h"
#include "cubert/driver/arith.h"

#include <string.h>

static cubert_status_t copy_enter(cubert_cuda_stream_t *stream, cubert_error_t *out_error) {
  if (!stream || !stream->handle)
    return cubert_error_set(out_error, CUBERT_ERROR_INVALID_ARGUMENT, NULL, 0,
                            "CUDA copy: no stream");
  return cubert__cuda_device_enter(stream->device, out_error);
}

static cubert_status_t copy_bad(cubert_error_t *out_error, const char *what) {
  return cubert_error_set(out_error, CUBERT_ERROR_INVALID_ARGUMENT, NULL, 0, what);
}

cubert_status_t cubert__cuda_copy_h2d(cubert_cuda_stream_t *stream, CUdeviceptr dst,
                                      const void *src, uint64_t size, cubert_error_t *out_error) {
  CUresult r;
  cubert_status_t st = copy_enter(stream, out_error);
  if (st != CUBERT_STATUS_OK || size == 0) return st;
  if (!dst || !src || size > (uint64_t)SIZE_MAX)
    return copy_bad(out_error, "cubert__cuda_copy_h2d: NULL pointer or size too big");
  r = stream->device->cu->cuMemcpyHtoDAsync(dst, src, (size_t)size, stream->handle);
  if (r != CUDA_SUCCESS)
    return cubert__cuda_device_fail(stream->device, r, CUBERT_CUDA_OP_COPY, "cuMemcpyHtoDAsync",
                                    size, out_error);
  return CUBERT_STATUS_OK;
}

cubert_status_t cubert__cuda_copy_d2h(cubert_cuda_stream_t *stream, void *dst, CUdeviceptr src,
                                      uint64_t size, cubert_error_t *out_error) {
  CUresult r;
  cubert_status_t st = copy_enter(stream, out_error);
  if (st != CUBERT_STATUS_OK || size == 0) return st;
  if (!dst || !src || size > (uint64_t)SIZE_MAX)
    return copy_bad(out_error, "cubert__cuda_copy_d2h: NULL pointer or size too big");
  r = stream->device->cu->cuMemcpyDtoHAsync(dst, src, (size_t)size, stream->handle);
  if (r != CUDA_SUCCESS)
    return cubert__cuda_device_fail(stream->device, r, CUBERT_CUDA_OP_COPY, "cuMemcpyDtoHAsync",
                                    size, out_error);
  return CUBERT_STATUS_OK;
}

cubert_status_t cubert__cuda_copy_d2d(cubert_cuda_stream_t *stream, CUdeviceptr dst,
                                      CUdeviceptr src, uint64_t size, cubert_error_t *out_error) {
  CUresult r;
  cubert_status_t st = copy_enter(stream, out_error);
  if (st != CUBERT_STATUS_OK || size == 0) return st;
  if (!dst || !src || size > (uint64_t)SIZE_MAX)
    return copy_bad(out_error, "cubert__cuda_copy_d2d: NULL address or size too big");
  r = stream->device->cu->cuMemcpyDtoDAsync(dst, src, (size_t)size, stream->handle);
  if (r != CUDA_SUCCESS)
    return cubert__cuda_device_fail(stream->device, r, CUBERT_CUDA_OP_COPY, "cuMemcpyDtoDAsync",
                                    size, out_error);
  return CUBERT_STATUS_OK;
}

/* Validate a 2-D copy: pitches, pointers of the sides in use, spans. */
static cubert_status_t copy_2d_check(const cubert_cuda_copy_2d_t *c, cubert_error_t *out_error) {
  uint64_t span;
  bool src_dev = c->kind == CUBERT_CUDA_COPY_D2H || c->kind == CUBERT_CUDA_COPY_D2D;
  bool dst_dev = c->kind == CUBERT_CUDA_COPY_H2D || c->kind == CUBERT_CUDA_COPY_D2D;
  if (c->kind != CUBERT_CUDA_COPY_H2D && c->kind != CUBERT_CUDA_COPY_D2H &&
      c->kind != CUBERT_CUDA_COPY_D2D)
    return copy_bad(out_error, "cubert__cuda_copy_2d: unknown copy kind");
  if (c->src_pitch < c->width_bytes || c->dst_pitch < c->width_bytes)
    return copy_bad(out_error, "cubert__cuda_copy_2d: a pitch is smaller than the row width");
  if ((src_dev ? c->src_device == 0 : c->src_host == NULL) ||
      (dst_dev ? c->dst_device == 0 : c->dst_host == NULL))
    return copy_bad(out_error, "cubert__cuda_copy_2d: NULL source or destination");
  if (cubert_u64_mul(c->height - 1, c->src_pitch > c->dst_pitch ? c->src_pitch : c->dst_pitch,
                     &span) != CUBERT_STATUS_OK ||
      cubert_u64_add(span, c->width_bytes, &span) != CUBERT_STATUS_OK || span > (uint64_t)SIZE_MAX)
    return cubert_error_set(out_error, CUBERT_ERROR_OVERFLOW, NULL, 0,
                            "cubert__cuda_copy_2d: the copy's span overflows");
  return CUBERT_STATUS_OK;
}

cubert_status_t cubert__cuda_copy_2d(cubert_cuda_stream_t *stream,
                                     const cubert_cuda_copy_2d_t *copy, cubert_error_t *out_error) {
  CUDA_MEMCPY2D m;
  CUresult r;
  cubert_status_t st;
  if (!copy) return copy_bad(out_error, "cubert__cuda_copy_2d: NULL copy");
  st = copy_enter(stream, out_error);
  if (st != CUBERT_STATUS_OK) return st;
  if (copy->width_bytes == 0 || copy->height == 0) return CUBERT_STATUS_OK;
  st = copy_2d_check(copy, out_error);
  if (st != CUBERT_STATUS_OK) return st;
  memset(&m, 0, sizeof m);
  if (copy->kind == CUBERT_CUDA_COPY_H2D) {
    m.srcMemoryType = CU_MEMORYTYPE_HOST;
    m.srcHost = copy->src_host;
  } else {
    m.srcMemoryType = CU_MEMORYTYPE_DEVICE;
    m.srcDevice = copy->src_device;
  }
  if (copy->kind == CUBERT_CUDA_COPY_D2H) {
    m.dstMemoryType = CU_MEMORYTYPE_HOST;
    m.dstHost = copy->dst_host;
  } else {
    m.dstMemoryType = CU_MEMORYTYPE_DEVICE;
    m.dstDevice = copy->dst_device;
  }
  m.srcPitch = (size_t)copy->src_pitch;
  m.dstPitch = (size_t)copy->dst_pitch;
  m.WidthInBytes = (size_t)copy->width_bytes;
  m.Height = (size_t)copy->height;
  r = stream->device->cu->cuMemcpy2DAsync(&m, stream->handle);
  if (r != CUDA_SUCCESS)
    return cubert__cuda_device_fail(stream->device, r, CUBERT_CUDA_OP_COPY, "cuMemcpy2DAsync",
                                    copy->width_bytes * copy->height, out_error);
  return CUBERT_STATUS_OK;
}

cubert_status_t cubert__cuda_copy_planned(cubert_cuda_stream_t *stream,
                                          const cubert_copy_plan_t *plan, bool to_device,
                                          void *host, CUdeviceptr device_ptr,
                                          cubert_error_t *out_error) {
  cubert_cuda_copy_2d_t c;
  if (!plan) return copy_bad(out_error, "cubert__cuda_copy_planned: NULL plan");
  if (plan->total_bytes == 0) return copy_enter(stream, out_error);
  if (!plan->pitched)
    return to_device ? cubert__cuda_copy_h2d(stream, device_ptr, host, plan->total_bytes, out_error)
                     : cubert__cuda_copy_d2h(stream, host, device_ptr, plan->total_bytes, out_error);
  memset(&c, 0, sizeof c);
  c.width_bytes = plan->width_bytes;
  c.height = plan->height;
  if (to_device) {
    c.kind = CUBERT_CUDA_COPY_H2D;
    c.src_host = host;
    c.src_pitch = plan->width_bytes;
    c.dst_device = device_ptr;
    c.dst_pitch = plan->src_pitch_bytes;
  } else {
    c.kind = CUBERT_CUDA_COPY_D2H;
    c.src_device = device_ptr;
    c.src_pitch = plan->src_pitch_bytes;
    c.dst_host = host;
    c.dst_pitch = plan->width_bytes;
  }
  return cubert__cuda_copy_2d(stream, &c, out_error);
}
