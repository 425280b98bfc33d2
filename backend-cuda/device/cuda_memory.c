/* SPDX-License-Identifier: MIT */
/*
 * backend-cuda/device/cuda_memory.c: device memory (stream-ordered through
 * cuMemAllocAsync / cuMemFreeAsync, cuMemAlloc / cuMemFree on devices
 * without memory pools), memset, memory info, pinned host memory.
 */
#include "device/cuda_device.h"
#include "cubert/driver/arith.h"

#include <stdio.h>

static cubert_status_t memory_stream_check(cubert_cuda_stream_t *stream, const char *fn,
                                           cubert_error_t *out_error) {
  if (!stream || !stream->handle) {
    char reason[96];
    cubert__cuda_format(reason, sizeof reason, "%s: no stream", fn);
    return cubert_error_set(out_error, CUBERT_ERROR_INVALID_ARGUMENT, NULL, 0, reason);
  }
  return cubert__cuda_device_enter(stream->device, out_error);
}

cubert_status_t cubert__cuda_memory_alloc(cubert_cuda_stream_t *stream, uint64_t size,
                                          CUdeviceptr *out_ptr, cubert_error_t *out_error) {
  cubert_cuda_device_t *device;
  const cubert_cuda_loader_t *cu;
  CUdeviceptr ptr = 0;
  uint64_t rounded;
  CUresult r;
  cubert_status_t st = memory_stream_check(stream, "cubert__cuda_memory_alloc", out_error);
  if (st != CUBERT_STATUS_OK) return st;
  if (!out_ptr || size == 0)
    return cubert_error_set(out_error, CUBERT_ERROR_INVALID_ARGUMENT, NULL, 0,
                            "cubert__cuda_memory_alloc: size 0 or NULL out_ptr");
  if (cubert_u64_round_up(size, CUBERT_CUDA_MEMORY_ALIGNMENT, &rounded) != CUBERT_STATUS_OK ||
      rounded > (uint64_t)SIZE_MAX) {
    uint64_t f = size;
    return cubert_error_set(out_error, CUBERT_ERROR_IO_BUFFER_TOO_BIG, &f, 1,
                            "allocation size does not fit the address space");
  }
  device = stream->device;
  cu = device->cu;
  if (device->async_alloc) r = cu->cuMemAllocAsync(&ptr, (size_t)rounded, stream->handle);
  else r = cu->cuMemAlloc(&ptr, (size_t)rounded);
  if (r != CUDA_SUCCESS)
    return cubert__cuda_device_fail(device, r, CUBERT_CUDA_OP_MEMORY,
                                    device->async_alloc ? "cuMemAllocAsync" : "cuMemAlloc", size,
                                    out_error);
  if (ptr % CUBERT_CUDA_MEMORY_ALIGNMENT != 0) {
    if (device->async_alloc) (void)cu->cuMemFreeAsync(ptr, stream->handle);
    else (void)cu->cuMemFree(ptr);
    return cubert_error_set(out_error, CUBERT_ERROR_IO_UNKNOWN, NULL, 0,
                            "the driver returned device memory not aligned to 512 bytes");
  }
  *out_ptr = ptr;
  return CUBERT_STATUS_OK;
}

cubert_status_t cubert__cuda_memory_alloc_retry(cubert_cuda_stream_t *stream, uint64_t size,
                                                void (*reclaim)(void *user), void *user,
                                                CUdeviceptr *out_ptr, cubert_error_t *out_error) {
  cubert_status_t st = cubert__cuda_memory_alloc(stream, size, out_ptr, out_error);
  if (st != CUBERT_STATUS_OUT_OF_MEMORY || !reclaim) return st;
  reclaim(user);
  return cubert__cuda_memory_alloc(stream, size, out_ptr, out_error);
}

cubert_status_t cubert__cuda_memory_free(cubert_cuda_stream_t *stream, CUdeviceptr ptr,
                                         cubert_error_t *out_error) {
  cubert_cuda_device_t *device;
  CUresult r;
  cubert_status_t st;
  if (ptr == 0) return CUBERT_STATUS_OK;
  st = memory_stream_check(stream, "cubert__cuda_memory_free", out_error);
  if (st != CUBERT_STATUS_OK) return st;
  device = stream->device;
  if (device->async_alloc) r = device->cu->cuMemFreeAsync(ptr, stream->handle);
  else r = device->cu->cuMemFree(ptr);
  if (r != CUDA_SUCCESS)
    return cubert__cuda_device_fail(device, r, CUBERT_CUDA_OP_MEMORY,
                                    device->async_alloc ? "cuMemFreeAsync" : "cuMemFree", 0,
                                    out_error);
  return CUBERT_STATUS_OK;
}

void cubert__cuda_memory_free_now(cubert_cuda_device_t *device, CUdeviceptr ptr) {
  if (!device || ptr == 0 || cubert__cuda_device_enter(device, NULL) != CUBERT_STATUS_OK) return;
  (void)device->cu->cuMemFree(ptr);
}

/* ---- words of stream memory operations ---------------------------------------- */

typedef struct cubert_cuda_retired_word_t {
  struct cubert_cuda_retired_word_t *next;
  CUdeviceptr word;
  cubert_cuda_event_t *passed; /* recorded after the last use */
} cubert_cuda_retired_word_t;

/* Free retired words whose event passed (all: wait for each). */
static void word_reap(cubert_cuda_device_t *device, bool all) {
  cubert_cuda_retired_word_t *done = NULL, **link, *w;
  (void)pthread_mutex_lock(&device->events.mutex);
  link = &device->retired_words;
  while ((w = *link) != NULL) {
    bool passed = all;
    if (!passed && cubert__cuda_event_query(device, w->passed, &passed, NULL) != CUBERT_STATUS_OK)
      passed = true; /* a lost device: its memory goes with the context */
    if (passed) {
      *link = w->next;
      w->next = done;
      done = w;
    } else {
      link = &w->next;
    }
  }
  (void)pthread_mutex_unlock(&device->events.mutex);
  while ((w = done) != NULL) {
    done = w->next;
    if (all) (void)cubert__cuda_event_synchronize(device, w->passed, NULL);
    cubert__cuda_event_release(device, w->passed);
    cubert__cuda_memory_free_now(device, w->word);
    cubert_allocator_free(device->allocator, w, sizeof *w, 0);
  }
}

cubert_status_t cubert__cuda_word_alloc(cubert_cuda_stream_t *stream, CUdeviceptr *out_word,
                                        cubert_error_t *out_error) {
  CUdeviceptr ptr = 0;
  CUresult r;
  cubert_status_t st = memory_stream_check(stream, "cubert__cuda_word_alloc", out_error);
  if (st != CUBERT_STATUS_OK) return st;
  if (!out_word)
    return cubert_error_set(out_error, CUBERT_ERROR_INVALID_ARGUMENT, NULL, 0,
                            "cubert__cuda_word_alloc: NULL out_word");
  if (stream->device->retired_words) word_reap(stream->device, false);
  r = stream->device->cu->cuMemAlloc(&ptr, 4);
  if (r != CUDA_SUCCESS)
    return cubert__cuda_device_fail(stream->device, r, CUBERT_CUDA_OP_MEMORY, "cuMemAlloc", 4,
                                    out_error);
  r = stream->device->cu->cuMemsetD8Async(ptr, 0, 4, stream->handle);
  if (r != CUDA_SUCCESS) {
    (void)stream->device->cu->cuMemFree(ptr);
    return cubert__cuda_device_fail(stream->device, r, CUBERT_CUDA_OP_GENERIC, "cuMemsetD8Async",
                                    0, out_error);
  }
  *out_word = ptr;
  return CUBERT_STATUS_OK;
}

void cubert__cuda_word_retire(cubert_cuda_stream_t *stream, CUdeviceptr word) {
  cubert_cuda_device_t *device;
  cubert_cuda_retired_word_t *w = NULL;
  cubert_cuda_event_t *passed = NULL;
  if (!word || !stream || !stream->device) return;
  device = stream->device;
  if (cubert_allocator_malloc(device->allocator, sizeof *w, 0, (void **)&w, NULL) !=
      CUBERT_STATUS_OK ||
      cubert__cuda_event_record(stream, false, &passed, NULL) != CUBERT_STATUS_OK) {
    if (w) cubert_allocator_free(device->allocator, w, sizeof *w, 0);
    (void)cubert__cuda_stream_synchronize(stream, NULL);
    cubert__cuda_memory_free_now(device, word);
    return;
  }
  w->word = word;
  w->passed = passed;
  (void)pthread_mutex_lock(&device->events.mutex);
  w->next = device->retired_words;
  device->retired_words = w;
  (void)pthread_mutex_unlock(&device->events.mutex);
}

void cubert__cuda_word_retire_all(cubert_cuda_device_t *device) {
  if (device && device->retired_words) word_reap(device, true);
}

cubert_status_t cubert__cuda_memory_set(cubert_cuda_stream_t *stream, CUdeviceptr ptr,
                                        uint8_t value, uint64_t size, cubert_error_t *out_error) {
  CUresult r;
  cubert_status_t st = memory_stream_check(stream, "cubert__cuda_memory_set", out_error);
  if (st != CUBERT_STATUS_OK) return st;
  if (size == 0) return CUBERT_STATUS_OK;
  if (ptr == 0 || size > (uint64_t)SIZE_MAX)
    return cubert_error_set(out_error, CUBERT_ERROR_INVALID_ARGUMENT, NULL, 0,
                            "cubert__cuda_memory_set: NULL address or size too big");
  r = stream->device->cu->cuMemsetD8Async(ptr, value, (size_t)size, stream->handle);
  if (r != CUDA_SUCCESS)
    return cubert__cuda_device_fail(stream->device, r, CUBERT_CUDA_OP_COPY, "cuMemsetD8Async", 0,
                                    out_error);
  return CUBERT_STATUS_OK;
}

cubert_status_t cubert__cuda_memory_info(cubert_cuda_device_t *device, uint64_t *out_free,
                                         uint64_t *out_total, cubert_error_t *out_error) {
  size_t free_bytes = 0, total = 0;
  CUresult r;
  cubert_status_t st;
  if (!device || !out_free || !out_total)
    return cubert_error_set(out_error, CUBERT_ERROR_INVALID_ARGUMENT, NULL, 0,
                            "cubert__cuda_memory_info: NULL argument");
  st = cubert__cuda_device_enter(device, out_error);
  if (st != CUBERT_STATUS_OK) return st;
  r = device->cu->cuMemGetInfo(&free_bytes, &total);
  if (r != CUDA_SUCCESS)
    return cubert__cuda_device_fail(device, r, CUBERT_CUDA_OP_MEMORY, "cuMemGetInfo", 0, out_error);
  *out_free = (uint64_t)free_bytes;
  *out_total = (uint64_t)total;
  return CUBERT_STATUS_OK;
}

cubert_status_t cubert__cuda_host_alloc(cubert_cuda_device_t *device, uint64_t size,
                                        void **out_ptr, cubert_error_t *out_error) {
  void *ptr = NULL;
  CUresult r;
  cubert_status_t st;
  if (!device || !out_ptr || size == 0)
    return cubert_error_set(out_error, CUBERT_ERROR_INVALID_ARGUMENT, NULL, 0,
                            "cubert__cuda_host_alloc: size 0 or NULL argument");
  if (size > (uint64_t)SIZE_MAX) {
    uint64_t f = size;
    return cubert_error_set(out_error, CUBERT_ERROR_HOST_OUT_OF_MEMORY, &f, 1,
                            "pinned size does not fit the address space");
  }
  st = cubert__cuda_device_enter(device, out_error);
  if (st != CUBERT_STATUS_OK) return st;
  r = device->cu->cuMemHostAlloc(&ptr, (size_t)size, CU_MEMHOSTALLOC_PORTABLE);
  if (r != CUDA_SUCCESS)
    return cubert__cuda_device_fail(device, r, CUBERT_CUDA_OP_HOST, "cuMemHostAlloc", size,
                                    out_error);
  *out_ptr = ptr;
  return CUBERT_STATUS_OK;
}

void cubert__cuda_host_free(cubert_cuda_device_t *device, void *ptr) {
  if (!device || !ptr) return;
  (void)cubert__cuda_device_enter(device, NULL);
  (void)device->cu->cuMemFreeHost(ptr);
}
