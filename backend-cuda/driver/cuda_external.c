/* SPDX-License-Identifier: MIT */
/*
 * backend-cuda/driver/cuda_external.c: stream order with CUDA code outside
 * cubert (cubert/cuda.h: cubert_cuda_export_event, cubert_cuda_export_to_stream,
 * cubert_cuda_import_event, cubert_cuda_import_stream).
 *
 * Each call runs in an exclusive section (the device held), on the driver
 * stream of the client's stream (made if the stream had no work yet), with
 * the device's primary context current: one or two Driver API calls
 * (cuEventCreate + cuEventRecord, cuStreamWaitEvent), never a host wait.
 */
#include <string.h>

#include "client/client_internal.h"
#include "cubert/cuda.h"
#include "cubert/driver/error.h"
#include "driver/cuda_driver.h"

typedef enum ext_op_e { EXT_EXPORT_EVENT, EXT_EXPORT_STREAM, EXT_IMPORT_EVENT, EXT_IMPORT_STREAM } ext_op_t;

typedef struct ext_task_t {
  cubert_client_t *client;
  uint64_t stream; /* the caller's stream id (taken on the caller's thread) */
  ext_op_t op;
  CUevent event;   /* in (import) or out (export) */
  CUstream other;  /* the caller's stream */
} ext_task_t;

static const char *const k_names[] = {"cubert_cuda_export_event", "cubert_cuda_export_to_stream",
                                      "cubert_cuda_import_event", "cubert_cuda_import_stream"};

static cubert_status_t ext_fail(cubert_cuda_device_t *dev, CUresult r, const char *call,
                                const ext_task_t *t, cubert_error_t *out_error) {
  char what[96];
  cubert__cuda_format(what, sizeof what, "%s: %s", k_names[t->op], call);
  return cubert__cuda_device_fail(dev, r, CUBERT_CUDA_OP_GENERIC, what, 0, out_error);
}

/* A fresh event recorded on `on` (no timing: the cheapest kind). */
static cubert_status_t event_made(cubert_cuda_device_t *dev, CUstream on, const ext_task_t *t,
                                  CUevent *out, cubert_error_t *out_error) {
  const cubert_cuda_loader_t *cu = dev->cu;
  CUevent e = NULL;
  CUresult r = cu->cuEventCreate(&e, CU_EVENT_DISABLE_TIMING);
  if (r != CUDA_SUCCESS) return ext_fail(dev, r, "cuEventCreate", t, out_error);
  r = cu->cuEventRecord(e, on);
  if (r != CUDA_SUCCESS) {
    (void)cu->cuEventDestroy(e);
    return ext_fail(dev, r, "cuEventRecord", t, out_error);
  }
  *out = e;
  return CUBERT_STATUS_OK;
}

static cubert_status_t ext_calls(ext_task_t *t, cuda_drv_stream_t *s, cubert_error_t *out_error);

/* The device layer trusts its per-thread note of the current context; the
 * caller of these functions works beside other CUDA code, which may have made
 * another context current on this thread (cudaSetDevice): the device's
 * context is made current for the calls, and the caller's restored after. */
static cubert_status_t ext_run(void *user, cubert_error_t *out_error) {
  ext_task_t *t = (ext_task_t *)user;
  cubert_driver_stream_t *ds = NULL;
  cuda_drv_stream_t *s;
  const cubert_cuda_loader_t *cu;
  CUcontext before = NULL;
  cubert_status_t st;
  CUBERT_RETURN_IF_ERROR(cubert__client_driver_stream(t->client, t->stream, &ds, out_error));
  s = cuda_drv_stream_of(ds);
  cuda_drv_settle(s);
  CUBERT_RETURN_IF_ERROR(cubert__cuda_device_enter(s->s.device, out_error));
  cu = s->s.device->cu;
  if (cu->cuCtxGetCurrent(&before) != CUDA_SUCCESS) before = s->s.device->context;
  if (before != s->s.device->context && cu->cuCtxSetCurrent(s->s.device->context) != CUDA_SUCCESS)
    return ext_fail(s->s.device, CUDA_ERROR_INVALID_CONTEXT, "cuCtxSetCurrent", t, out_error);
  st = ext_calls(t, s, out_error);
  if (before != s->s.device->context) (void)cu->cuCtxSetCurrent(before);
  return st;
}

static cubert_status_t ext_calls(ext_task_t *t, cuda_drv_stream_t *s, cubert_error_t *out_error) {
  cubert_cuda_device_t *dev = s->s.device;
  const cubert_cuda_loader_t *cu = dev->cu;
  CUevent e = NULL;
  CUresult r;
  switch (t->op) {
    case EXT_EXPORT_EVENT:
      return event_made(dev, s->s.handle, t, &t->event, out_error);
    case EXT_EXPORT_STREAM:
      CUBERT_RETURN_IF_ERROR(event_made(dev, s->s.handle, t, &e, out_error));
      r = cu->cuStreamWaitEvent(t->other, e, 0);
      (void)cu->cuEventDestroy(e); /* the wait keeps the point it captured */
      return r == CUDA_SUCCESS ? CUBERT_STATUS_OK : ext_fail(dev, r, "cuStreamWaitEvent", t, out_error);
    case EXT_IMPORT_EVENT:
      r = cu->cuStreamWaitEvent(s->s.handle, t->event, 0);
      if (r != CUDA_SUCCESS) return ext_fail(dev, r, "cuStreamWaitEvent", t, out_error);
      s->ops++; /* the stream's later work has a new dependency (cuda_driver.h) */
      return CUBERT_STATUS_OK;
    case EXT_IMPORT_STREAM:
    default:
      CUBERT_RETURN_IF_ERROR(event_made(dev, t->other, t, &e, out_error));
      r = cu->cuStreamWaitEvent(s->s.handle, e, 0);
      (void)cu->cuEventDestroy(e);
      if (r != CUDA_SUCCESS) return ext_fail(dev, r, "cuStreamWaitEvent", t, out_error);
      s->ops++;
      return CUBERT_STATUS_OK;
  }
}

static cubert_status_t ext_call(cubert_client_t *client, ext_task_t *t, cubert_error_t *out_error) {
  const cubert_driver_t *driver = NULL;
  void *self = NULL;
  if (!client)
    return cubert_error_set(out_error, CUBERT_ERROR_INVALID_ARGUMENT, NULL, 0,
                            "cubert_cuda_export / import: NULL client");
  (void)cubert_server_driver_of(client, &driver, &self);
  if (driver != &cuda_driver) {
    char reason[CUBERT_ERROR_REASON_SIZE];
    cubert__cuda_format(reason, sizeof reason,
                        "%s: the client's device is not a CUDA device (no CUDA stream to order)",
                        k_names[t->op]);
    return cubert_error_set(out_error, CUBERT_ERROR_IO_UNSUPPORTED_IO_OPERATION, NULL, 0, reason);
  }
  t->client = client;
  t->stream = cubert_client_stream(client);
  return cubert_client_exclusive(client, ext_run, t, out_error);
}

cubert_status_t cubert_cuda_export_event(cubert_client_t *client, struct CUevent_st **out_event,
                                         cubert_error_t *out_error) {
  ext_task_t t;
  cubert_status_t st;
  memset(&t, 0, sizeof t);
  t.op = EXT_EXPORT_EVENT;
  if (!out_event)
    return cubert_error_set(out_error, CUBERT_ERROR_INVALID_ARGUMENT, NULL, 0,
                            "cubert_cuda_export_event: NULL out_event");
  st = ext_call(client, &t, out_error);
  if (st == CUBERT_STATUS_OK) *out_event = t.event;
  return st;
}

cubert_status_t cubert_cuda_export_to_stream(cubert_client_t *client, struct CUstream_st *stream,
                                             cubert_error_t *out_error) {
  ext_task_t t;
  memset(&t, 0, sizeof t);
  t.op = EXT_EXPORT_STREAM;
  t.other = stream;
  return ext_call(client, &t, out_error);
}

cubert_status_t cubert_cuda_import_event(cubert_client_t *client, struct CUevent_st *event,
                                         cubert_error_t *out_error) {
  ext_task_t t;
  memset(&t, 0, sizeof t);
  t.op = EXT_IMPORT_EVENT;
  t.event = event;
  if (!event)
    return cubert_error_set(out_error, CUBERT_ERROR_INVALID_ARGUMENT, NULL, 0,
                            "cubert_cuda_import_event: NULL event");
  return ext_call(client, &t, out_error);
}

cubert_status_t cubert_cuda_import_stream(cubert_client_t *client, struct CUstream_st *stream,
                                          cubert_error_t *out_error) {
  ext_task_t t;
  memset(&t, 0, sizeof t);
  t.op = EXT_IMPORT_STREAM;
  t.other = stream;
  return ext_call(client, &t, out_error);
}
