/* SPDX-License-Identifier: MIT */
/*
 * backend-cuda/device/cuda_event.c: the event pool. Events are created once
 * (CU_EVENT_DISABLE_TIMING, or with timing for profiling), handed out on
 * record and come back on release, so steady-state records create nothing.
 */
#include "device/cuda_device.h"

cubert_status_t cubert__cuda_event_pool_initialize(cubert_cuda_event_pool_t *pool) {
  pool->free_plain = NULL;
  pool->free_timed = NULL;
  pool->created = pool->reused = pool->live = 0;
  return pthread_mutex_init(&pool->mutex, NULL) == 0 ? CUBERT_STATUS_OK
                                                     : CUBERT_STATUS_RESOURCE_EXHAUSTED;
}

static void event_destroy_list(cubert_cuda_device_t *device, cubert_cuda_event_t *e) {
  while (e) {
    cubert_cuda_event_t *next = e->next;
    (void)device->cu->cuEventDestroy(e->handle);
    cubert_allocator_free(device->allocator, e, sizeof *e, 0);
    e = next;
  }
}

void cubert__cuda_event_pool_deinitialize(cubert_cuda_device_t *device) {
  cubert_cuda_event_pool_t *pool = &device->events;
  /* also on a lost device: destroying returns at once, and frees the host side */
  event_destroy_list(device, pool->free_plain);
  event_destroy_list(device, pool->free_timed);
  pool->free_plain = pool->free_timed = NULL;
}

/* A pooled event of the kind, or a new one. */
static cubert_status_t event_take(cubert_cuda_device_t *device, bool timed,
                                  cubert_cuda_event_t **out_event, cubert_error_t *out_error) {
  cubert_cuda_event_pool_t *pool = &device->events;
  cubert_cuda_event_t **list = timed ? &pool->free_timed : &pool->free_plain;
  cubert_cuda_event_t *e;
  CUresult r;
  (void)pthread_mutex_lock(&pool->mutex);
  e = *list;
  if (e) {
    *list = e->next;
    pool->reused++;
    pool->live++;
  }
  (void)pthread_mutex_unlock(&pool->mutex);
  if (e) {
    e->next = NULL;
    e->refs = 1;
    *out_event = e;
    return CUBERT_STATUS_OK;
  }
  if (cubert_allocator_malloc(device->allocator, sizeof *e, 0, (void **)&e,
                              NULL) != CUBERT_STATUS_OK)
    return cubert_error_set(out_error, CUBERT_ERROR_HOST_OUT_OF_MEMORY, NULL, 0,
                            "cannot allocate an event");
  r = device->cu->cuEventCreate(&e->handle, timed ? CU_EVENT_DEFAULT : CU_EVENT_DISABLE_TIMING);
  if (r != CUDA_SUCCESS) {
    cubert_allocator_free(device->allocator, e, sizeof *e, 0);
    return cubert__cuda_device_fail(device, r, CUBERT_CUDA_OP_GENERIC, "cuEventCreate", 0,
                                    out_error);
  }
  e->timed = timed ? 1u : 0u;
  e->refs = 1;
  e->next = NULL;
  e->owner = NULL;
  e->seq = e->mark = e->epoch = 0;
  (void)pthread_mutex_lock(&pool->mutex);
  pool->created++;
  pool->live++;
  (void)pthread_mutex_unlock(&pool->mutex);
  *out_event = e;
  return CUBERT_STATUS_OK;
}

void cubert__cuda_event_release(cubert_cuda_device_t *device, cubert_cuda_event_t *event) {
  cubert_cuda_event_pool_t *pool;
  if (!device || !event) return;
  if (__atomic_sub_fetch(&event->refs, 1u, __ATOMIC_ACQ_REL) != 0) return; /* shared: still held */
  event->owner = NULL; /* the recorder's notes go with the last holder */
  event->seq = event->mark = event->epoch = 0;
  pool = &device->events;
  (void)pthread_mutex_lock(&pool->mutex);
  if (event->timed) {
    event->next = pool->free_timed;
    pool->free_timed = event;
  } else {
    event->next = pool->free_plain;
    pool->free_plain = event;
  }
  pool->live--;
  (void)pthread_mutex_unlock(&pool->mutex);
}

void cubert__cuda_event_retain(cubert_cuda_event_t *event) {
  if (event) (void)__atomic_add_fetch(&event->refs, 1u, __ATOMIC_RELAXED);
}

cubert_status_t cubert__cuda_event_record(cubert_cuda_stream_t *stream, bool timed,
                                          cubert_cuda_event_t **out_event,
                                          cubert_error_t *out_error) {
  cubert_cuda_device_t *device;
  cubert_cuda_event_t *e = NULL;
  CUresult r;
  cubert_status_t st;
  if (!stream || !stream->handle || !out_event)
    return cubert_error_set(out_error, CUBERT_ERROR_INVALID_ARGUMENT, NULL, 0,
                            "cubert__cuda_event_record: NULL argument");
  device = stream->device;
  st = cubert__cuda_device_enter(device, out_error);
  if (st != CUBERT_STATUS_OK) return st;
  st = event_take(device, timed, &e, out_error);
  if (st != CUBERT_STATUS_OK) return st;
  r = device->cu->cuEventRecord(e->handle, stream->handle);
  if (r != CUDA_SUCCESS) {
    cubert__cuda_event_release(device, e);
    return cubert__cuda_device_fail(device, r, CUBERT_CUDA_OP_GENERIC, "cuEventRecord", 0,
                                    out_error);
  }
  *out_event = e;
  return CUBERT_STATUS_OK;
}

cubert_status_t cubert__cuda_event_wait(cubert_cuda_stream_t *stream,
                                        const cubert_cuda_event_t *event,
                                        cubert_error_t *out_error) {
  CUresult r;
  cubert_status_t st;
  if (!stream || !stream->handle || !event)
    return cubert_error_set(out_error, CUBERT_ERROR_INVALID_ARGUMENT, NULL, 0,
                            "cubert__cuda_event_wait: NULL argument");
  st = cubert__cuda_device_enter(stream->device, out_error);
  if (st != CUBERT_STATUS_OK) return st;
  r = stream->device->cu->cuStreamWaitEvent(stream->handle, event->handle, 0);
  if (r != CUDA_SUCCESS)
    return cubert__cuda_device_fail(stream->device, r, CUBERT_CUDA_OP_GENERIC, "cuStreamWaitEvent",
                                    0, out_error);
  return CUBERT_STATUS_OK;
}

cubert_status_t cubert__cuda_event_query(cubert_cuda_device_t *device,
                                         const cubert_cuda_event_t *event, bool *out_done,
                                         cubert_error_t *out_error) {
  CUresult r;
  cubert_status_t st;
  if (!device || !event || !out_done)
    return cubert_error_set(out_error, CUBERT_ERROR_INVALID_ARGUMENT, NULL, 0,
                            "cubert__cuda_event_query: NULL argument");
  st = cubert__cuda_device_enter(device, out_error);
  if (st != CUBERT_STATUS_OK) return st;
  r = device->cu->cuEventQuery(event->handle);
  if (r == CUDA_SUCCESS || r == CUDA_ERROR_NOT_READY) {
    *out_done = r == CUDA_SUCCESS;
    return CUBERT_STATUS_OK;
  }
  return cubert__cuda_device_fail(device, r, CUBERT_CUDA_OP_GENERIC, "cuEventQuery", 0, out_error);
}

cubert_status_t cubert__cuda_event_synchronize(cubert_cuda_device_t *device,
                                               const cubert_cuda_event_t *event,
                                               cubert_error_t *out_error) {
  CUresult r;
  cubert_status_t st;
  if (!device || !event)
    return cubert_error_set(out_error, CUBERT_ERROR_INVALID_ARGUMENT, NULL, 0,
                            "cubert__cuda_event_synchronize: NULL argument");
  st = cubert__cuda_device_enter(device, out_error);
  if (st != CUBERT_STATUS_OK) return st;
  r = device->cu->cuEventSynchronize(event->handle);
  if (r != CUDA_SUCCESS)
    return cubert__cuda_device_fail(device, r, CUBERT_CUDA_OP_GENERIC, "cuEventSynchronize", 0,
                                    out_error);
  return CUBERT_STATUS_OK;
}

cubert_status_t cubert__cuda_event_elapsed(cubert_cuda_device_t *device,
                                           const cubert_cuda_event_t *start,
                                           const cubert_cuda_event_t *end, uint64_t *out_ns,
                                           cubert_error_t *out_error) {
  float ms = 0.0f;
  CUresult r;
  cubert_status_t st;
  if (!device || !start || !end || !out_ns)
    return cubert_error_set(out_error, CUBERT_ERROR_INVALID_ARGUMENT, NULL, 0,
                            "cubert__cuda_event_elapsed: NULL argument");
  if (!start->timed || !end->timed)
    return cubert_error_set(out_error, CUBERT_ERROR_INVALID_ARGUMENT, NULL, 0,
                            "cubert__cuda_event_elapsed: an event without timing");
  st = cubert__cuda_device_enter(device, out_error);
  if (st != CUBERT_STATUS_OK) return st;
  r = device->cu->cuEventElapsedTime(&ms, start->handle, end->handle);
  if (r != CUDA_SUCCESS)
    return cubert__cuda_device_fail(device, r, CUBERT_CUDA_OP_GENERIC, "cuEventElapsedTime", 0,
                                    out_error);
  *out_ns = ms <= 0.0f ? 0u : (uint64_t)((double)ms * 1e6 + 0.5);
  return CUBERT_STATUS_OK;
}

void cubert__cuda_event_pool_counts(cubert_cuda_device_t *device, uint64_t *out_created,
                                    uint64_t *out_reused, uint64_t *out_live) {
  cubert_cuda_event_pool_t *pool = &device->events;
  (void)pthread_mutex_lock(&pool->mutex);
  if (out_created) *out_created = pool->created;
  if (out_reused) *out_reused = pool->reused;
  if (out_live) *out_live = pool->live;
  (void)pthread_mutex_unlock(&pool->mutex);
}
