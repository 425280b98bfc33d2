/* SPDX-License-Identifier: MIT */
/*
 * backend-cuda/device/cuda_stream.c: non-blocking CUstreams and their queues of
 * asynchronous errors (ServerUnhealthy at the next flush / sync / read).
 */
#include "device/cuda_device.h"

#include <string.h>

cubert_status_t cubert__cuda_stream_initialize(cubert_cuda_device_t *device,
                                               cubert_cuda_stream_t *out_stream,
                                               cubert_error_t *out_error) {
  CUstream handle = NULL;
  CUresult r;
  cubert_status_t st;
  if (!device || !out_stream)
    return cubert_error_set(out_error, CUBERT_ERROR_INVALID_ARGUMENT, NULL, 0,
                            "cubert__cuda_stream_initialize: NULL argument");
  memset(out_stream, 0, sizeof *out_stream);
  st = cubert__cuda_device_enter(device, out_error);
  if (st != CUBERT_STATUS_OK) return st;
  if (pthread_mutex_init(&out_stream->mutex, NULL) != 0)
    return cubert_error_set(out_error, CUBERT_ERROR_HOST_OUT_OF_MEMORY, NULL, 0,
                            "cannot create a mutex");
  r = device->cu->cuStreamCreate(&handle, CU_STREAM_NON_BLOCKING);
  if (r != CUDA_SUCCESS) {
    (void)pthread_mutex_destroy(&out_stream->mutex);
    return cubert__cuda_device_fail(device, r, CUBERT_CUDA_OP_GENERIC, "cuStreamCreate", 0,
                                    out_error);
  }
  out_stream->device = device;
  out_stream->handle = handle;
  cubert_error_clear(&out_stream->queued);
  return CUBERT_STATUS_OK;
}

void cubert__cuda_stream_deinitialize(cubert_cuda_stream_t *stream) {
  if (!stream || !stream->handle) return;
  /* Also on a lost device (the call returns at once): the handle is freed. */
  (void)cubert__cuda_device_enter(stream->device, NULL);
  (void)stream->device->cu->cuStreamDestroy(stream->handle);
  (void)pthread_mutex_destroy(&stream->mutex);
  stream->handle = NULL;
  stream->device = NULL;
}

cubert_status_t cubert__cuda_stream_synchronize(cubert_cuda_stream_t *stream,
                                                cubert_error_t *out_error) {
  CUresult r;
  cubert_status_t st;
  if (!stream || !stream->handle)
    return cubert_error_set(out_error, CUBERT_ERROR_INVALID_ARGUMENT, NULL, 0,
                            "cubert__cuda_stream_synchronize: no stream");
  st = cubert__cuda_device_enter(stream->device, out_error);
  if (st != CUBERT_STATUS_OK) return st;
  r = stream->device->cu->cuStreamSynchronize(stream->handle);
  if (r != CUDA_SUCCESS)
    return cubert__cuda_device_fail(stream->device, r, CUBERT_CUDA_OP_GENERIC,
                                    "cuStreamSynchronize", 0, out_error);
  return CUBERT_STATUS_OK;
}

void cubert__cuda_stream_queue_error(cubert_cuda_stream_t *stream, const cubert_error_t *error) {
  if (!stream || !error || error->depth == 0) return;
  (void)pthread_mutex_lock(&stream->mutex);
  (void)cubert_error_aggregate(&stream->queued, error);
  (void)pthread_mutex_unlock(&stream->mutex);
}

cubert_status_t cubert__cuda_stream_drain_errors(cubert_cuda_stream_t *stream,
                                                 cubert_error_t *out_error) {
  cubert_cuda_device_t *device;
  if (!stream || !stream->handle)
    return cubert_error_set(out_error, CUBERT_ERROR_INVALID_ARGUMENT, NULL, 0,
                            "cubert__cuda_stream_drain_errors: no stream");
  device = stream->device;
  if (cubert__cuda_device_enter(device, NULL) == CUBERT_STATUS_OK) {
    CUresult r = device->cu->cuStreamQuery(stream->handle);
    if (r != CUDA_SUCCESS && r != CUDA_ERROR_NOT_READY) {
      cubert_error_t e;
      (void)cubert__cuda_device_fail(device, r, CUBERT_CUDA_OP_GENERIC,
                                     "work on the stream (cuStreamQuery)", 0, &e);
      cubert__cuda_stream_queue_error(stream, &e);
    }
  }
  return cubert__cuda_stream_drain_queued(stream, out_error);
}

cubert_status_t cubert__cuda_stream_drain_queued(cubert_cuda_stream_t *stream,
                                                 cubert_error_t *out_error) {
  cubert_cuda_device_t *device;
  cubert_status_t st = CUBERT_STATUS_OK;
  if (!stream || !stream->handle)
    return cubert_error_set(out_error, CUBERT_ERROR_INVALID_ARGUMENT, NULL, 0,
                            "cubert__cuda_stream_drain_queued: no stream");
  device = stream->device;
  (void)pthread_mutex_lock(&stream->mutex);
  if (cubert__cuda_device_is_lost(device)) {
    st = cubert__cuda_device_lost_error(device, out_error);
  } else if (stream->queued.depth) {
    if (out_error) *out_error = stream->queued;
    st = CUBERT_STATUS_SERVER_UNHEALTHY;
  }
  cubert_error_clear(&stream->queued);
  (void)pthread_mutex_unlock(&stream->mutex);
  return st;
}
