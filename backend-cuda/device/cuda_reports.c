/* SPDX-License-Identifier: MIT */
/*
 * backend-cuda/device/cuda_reports.c: bounds-check reports of VALIDATE launches.
 *
 * A kernel built from the dialect records its first out-of-bounds access in
 * a cubert_kernel_report_t whose device address it receives (CHECKED
 * launches get none: an out-of-bounds load still reads 0 and a store is
 * still dropped, nothing is reported). Each stream keeps a ring of
 * CUDA_DRV_REPORTS device reports and their pinned mirror: a VALIDATE
 * launch zeroes its report on the stream, runs, and the report is copied to
 * the mirror behind it with an event. The reports are read back when the
 * server drains the stream's errors (flush, sync, read): those whose event
 * completed, in launch order; a violation becomes a SERVER_VALIDATION error
 * with the CPU server's fields {buffer slot, element index, buffer length,
 * is_write} and the kernel's name as its reason. A drain after a sync sees
 * every report of the work before it; one that finds a report still in
 * flight leaves it for the next drain. No thread and no host callback is
 * involved, and a launch costs two more asynchronous calls (a memset, a
 * copy) and one pooled event.
 */
#include <string.h>

#include "driver/cuda_driver.h"

#define REPORT_BYTES ((uint64_t)sizeof(cubert_kernel_report_t))

static cubert_status_t reports_make(cuda_drv_stream_t *s, cubert_error_t *out_error) {
  cuda_reports_t *r = &s->reports;
  CUdeviceptr p = 0;
  cubert_cuda_staging_chunk_t *m = NULL;
  cubert_status_t st =
      cubert__cuda_memory_alloc(&s->s, CUDA_DRV_REPORTS * REPORT_BYTES, &p, out_error);
  if (st != CUBERT_STATUS_OK) return st;
  st = cubert__cuda_staging_acquire(s->drv->dev, CUDA_DRV_REPORTS * REPORT_BYTES, &m, out_error);
  if (st != CUBERT_STATUS_OK) {
    (void)cubert__cuda_memory_free(&s->s, p, NULL);
    return st;
  }
  r->device = p;
  r->mirror = m;
  r->head = r->count = 0;
  return CUBERT_STATUS_OK;
}

/* The oldest pending report: read it (its event completed or failed). */
static void report_take(cuda_drv_stream_t *s, bool completed) {
  cuda_reports_t *r = &s->reports;
  cuda_report_pending_t *p = &r->pending[r->head];
  if (completed) {
    cubert_kernel_report_t rep;
    memcpy(&rep, (unsigned char *)r->mirror->ptr + p->slot * REPORT_BYTES, sizeof rep);
    s->drv->stats.reports_read++;
    if (rep.has_violation) {
      cubert_error_t e;
      uint64_t f[4];
      f[0] = rep.buffer_index;
      f[1] = rep.element_index;
      f[2] = rep.buffer_length;
      f[3] = rep.is_write;
      cubert_error_clear(&e);
      (void)cubert_error_set(&e, CUBERT_ERROR_SERVER_VALIDATION, f, 4,
                             p->kernel->name ? p->kernel->name : p->kernel->cuda_entry_name);
      cubert__cuda_stream_queue_error(&s->s, &e);
    }
  }
  cubert__cuda_event_release(s->drv->dev, p->event);
  p->event = NULL;
  r->head = (r->head + 1) % CUDA_DRV_REPORTS;
  r->count--;
}

void cuda_reports_collect(cuda_drv_stream_t *s) {
  cuda_reports_t *r = &s->reports;
  while (r->count) {
    bool done = false;
    /* a failed query (a lost device, a failed copy): the report is gone;
     * the stream's own error says why */
    if (cubert__cuda_event_query(s->drv->dev, r->pending[r->head].event, &done, NULL) ==
        CUBERT_STATUS_OK &&
        !done)
      return;
    report_take(s, done);
  }
}

cubert_status_t cuda_reports_prepare(cuda_drv_stream_t *s, CUdeviceptr *out_report,
                                     cubert_error_t *out_error) {
  cuda_reports_t *r = &s->reports;
  CUdeviceptr at;
  if (!r->mirror) CUBERT_RETURN_IF_ERROR(reports_make(s, out_error));
  if (r->count == CUDA_DRV_REPORTS) { /* full: wait for the oldest */
    cubert_status_t st =
        cubert__cuda_event_synchronize(s->drv->dev, r->pending[r->head].event, out_error);
    if (st == CUBERT_STATUS_UNAVAILABLE) return st;
    report_take(s, st == CUBERT_STATUS_OK);
  }
  at = r->device + ((r->head + r->count) % CUDA_DRV_REPORTS) * REPORT_BYTES;
  CUBERT_RETURN_IF_ERROR(cubert__cuda_memory_set(&s->s, at, 0, REPORT_BYTES, out_error));
  *out_report = at;
  return CUBERT_STATUS_OK;
}

void cuda_reports_launched(cuda_drv_stream_t *s, const cubert_kernel_t *kernel) {
  cuda_reports_t *r = &s->reports;
  uint32_t slot = (r->head + r->count) % CUDA_DRV_REPORTS;
  cuda_report_pending_t *p = &r->pending[slot];
  cubert_error_t e;
  cubert_status_t st;
  cubert_error_clear(&e);
  st = cubert__cuda_copy_d2h(&s->s, (unsigned char *)r->mirror->ptr + slot * REPORT_BYTES,
                             r->device + slot * REPORT_BYTES, REPORT_BYTES, &e);
  if (st == CUBERT_STATUS_OK) st = cubert__cuda_event_record(&s->s, false, &p->event, &e);
  if (st != CUBERT_STATUS_OK) {
    /* the kernel ran; only its report cannot come back: say so on the stream */
    if (e.depth) cubert__cuda_stream_queue_error(&s->s, &e);
    return;
  }
  p->kernel = kernel;
  p->slot = slot;
  r->count++;
}

void cuda_reports_free(cuda_drv_stream_t *s) {
  cuda_reports_t *r = &s->reports;
  while (r->count) report_take(s, false);
  if (r->device) (void)cubert__cuda_memory_free(&s->s, r->device, NULL);
  if (r->mirror) cubert__cuda_staging_release(s->drv->dev, r->mirror, NULL);
  r->device = 0;
  r->mirror = NULL;
}
