/* SPDX-License-Identifier: MIT */
/*
 * backend-cuda/comm/cuda_comm_direct.c: collectives of a communicator that has
 * one rank in this process: a single-member communicator (a one-rank NCCL
 * communicator, ncclCommInitAll of the device's GPU) and a rank of a
 * process communicator (cuda_comm_world.c). No other thread of this process
 * takes part, so NCCL is called on the communication stream S at once, by
 * the device's thread: the call order on S is the server's.
 *
 * Failures of an NCCL call become errors of S (SERVER_UNHEALTHY at the
 * next flush / sync / read after sync_collective), as the gated path's do;
 * one that leaves the communicator unusable (anything but
 * ncclInvalidArgument / ncclInvalidUsage) aborts it. The process
 * communicator is non-blocking: a call answered ncclInProgress (NCCL still
 * connecting to its peers) is polled with ncclCommGetAsyncError until it is
 * enqueued, for at most the collective timeout (then it is aborted).
 */
#include "comm/cuda_comm.h"

#include <string.h>
#include <time.h>

cubert_status_t cuda_comm_single_nccl(cuda_group_t *g, cuda_member_t *m,
                                      cubert_error_t *out_error) {
  cubert_nccl_comm_t comm = NULL;
  CUcontext saved;
  int dev = (int)m->ordinal, res;
  if (g->nccl_state == CUDA_NCCL_READY) return CUBERT_STATUS_OK;
  if (g->nccl_state == CUDA_NCCL_FAILED) {
    if (out_error) *out_error = g->nccl_error;
    return g->nccl_error.status;
  }
  CUBERT_RETURN_IF_ERROR(cuda_comm_nccl(&g->nl, out_error));
  saved = cuda_comm_ctx_enter(m->cu, m->drv->dev->context);
  cuda_comm_nccl_lock(m->ordinal);
  res = (int)g->nl->ncclCommInitAll(&comm, 1, &dev);
  cuda_comm_nccl_unlock(m->ordinal);
  cuda_comm_ctx_restore(m->cu, saved);
  if (res != CUBERT_NCCL_SUCCESS) return cubert__nccl_error_set(out_error, g->nl, res, "ncclCommInitAll");
  g->nccl[0] = comm;
  g->nccl_state = CUDA_NCCL_READY;
  return CUBERT_STATUS_OK;
}

/* Wait until a non-blocking communicator's call was enqueued. */
static int wait_enqueued(const cubert_nccl_loader_t *nl, cubert_nccl_comm_t comm,
                         uint32_t ordinal, uint64_t timeout_ns) {
  uint64_t start = cuda_comm_now_ns();
  cubert__nccl_result_t state = CUBERT_NCCL_IN_PROGRESS;
  for (;;) {
    int r;
    cuda_comm_nccl_lock(ordinal);
    r = (int)nl->ncclCommGetAsyncError(comm, &state);
    cuda_comm_nccl_unlock(ordinal);
    if (r != CUBERT_NCCL_SUCCESS) return CUBERT_NCCL_INTERNAL_ERROR;
    if (state != CUBERT_NCCL_IN_PROGRESS) return (int)state;
    if (cuda_comm_now_ns() - start > timeout_ns) return -1;
    {
      struct timespec ts;
      ts.tv_sec = 0;
      ts.tv_nsec = 20000;
      (void)nanosleep(&ts, NULL);
    }
  }
}

/* The NCCL call itself; its ncclResult_t (-1: still in progress after the
 * timeout). */
static int direct_call(cuda_group_t *g, cubert_nccl_comm_t comm, const cubert_driver_collective_t *c,
                       cuda_drv_stream_t *s, uint32_t ordinal, uint64_t timeout_ns) {
  const cubert_nccl_loader_t *nl = g->nl;
  struct CUstream_st *stream = (struct CUstream_st *)s->s.handle;
  uint32_t peer = 0, i;
  int res;
  for (i = 0; i < g->size; i++)
    if (g->devices[i] == c->peer) peer = i;
  cuda_comm_nccl_lock(ordinal);
  switch (c->kind) {
    case CUBERT_COLLECTIVE_ALL_REDUCE:
      res = (int)nl->ncclAllReduce((const void *)(uintptr_t)c->src, (void *)(uintptr_t)c->dst,
                                   c->bytes / cubert_comm_dtype_size(c->dtype),
                                   (cubert_nccl_data_type_t)cuda_comm_nccl_type(c->dtype),
                                   CUBERT_NCCL_SUM, comm, stream);
      break;
    case CUBERT_COLLECTIVE_SEND: /* bytes of any dtype */
      res = (int)nl->ncclSend((const void *)(uintptr_t)c->src, c->bytes, CUBERT_NCCL_UINT8,
                              (int)peer, comm, stream);
      break;
    default:
      res = (int)nl->ncclRecv((void *)(uintptr_t)c->dst, c->bytes, CUBERT_NCCL_UINT8, (int)peer,
                              comm, stream);
      break;
  }
  cuda_comm_nccl_unlock(ordinal);
  if (res == CUBERT_NCCL_IN_PROGRESS && g->kind == CUDA_GROUP_WORLD)
    res = wait_enqueued(nl, comm, ordinal, timeout_ns);
  return res;
}

static const char *call_name(uint32_t kind) {
  return kind == CUBERT_COLLECTIVE_ALL_REDUCE ? "ncclAllReduce"
         : kind == CUBERT_COLLECTIVE_SEND     ? "ncclSend"
                                              : "ncclRecv";
}

cubert_status_t cuda_comm_direct(cuda_member_t *m, const cubert_driver_collective_t *c,
                                 cuda_drv_stream_t *s, cubert_error_t *out_error) {
  cuda_group_t *g = m->group;
  cubert_nccl_comm_t comm;
  cubert_error_t e;
  CUcontext saved;
  int res;
  cubert_status_t st = CUBERT_STATUS_OK;
  if (c->kind == CUBERT_COLLECTIVE_ALL_REDUCE && c->op == CUBERT_REDUCE_OPERATION_MEAN &&
      g->size > 1 && !m->mean[c->dtype])
    CUBERT_RETURN_IF_ERROR(cubert__cuda_function_get(m->drv->dev, cuda_comm_mean_kernel(c->dtype),
                                                     &m->mean[c->dtype], out_error));
  CUBERT_RETURN_IF_ERROR(cubert__cuda_device_enter(m->drv->dev, out_error));
  (void)pthread_mutex_lock(g->issue_mutex);
  if (g->kind == CUDA_GROUP_LOCAL) st = cuda_comm_single_nccl(g, m, out_error);
  if (st == CUBERT_STATUS_OK && g->aborted) st = cuda_comm_query(m->drv, (cubert_driver_comm_t *)(void *)m, out_error);
  if (st != CUBERT_STATUS_OK) {
    (void)pthread_mutex_unlock(g->issue_mutex);
    return st;
  }
  comm = g->kind == CUDA_GROUP_WORLD ? cuda_world_comm(g->world) : g->nccl[0];
  saved = cuda_comm_ctx_enter(m->cu, m->drv->dev->context);
  res = direct_call(g, comm, c, s, m->ordinal, m->timeout_ns);
  cuda_comm_ctx_restore(m->cu, saved);
  if (res != CUBERT_NCCL_SUCCESS) {
    if (res < 0) {
      uint64_t t = m->timeout_ns;
      (void)cubert_error_set(&e, CUBERT_ERROR_DEADLINE_EXCEEDED, &t, 1,
                             "NCCL did not enqueue the collective before the collective "
                             "timeout (its peers never connected); the communicator is aborted");
    } else {
      (void)cubert__nccl_error_set(&e, g->nl, res, call_name(c->kind));
    }
    if (res < 0 || (res != CUBERT_NCCL_INVALID_ARGUMENT && res != CUBERT_NCCL_INVALID_USAGE))
      cuda_comm_abort(g, &e, &e, &e); /* queues e on S */
    else
      cubert__cuda_stream_queue_error(&s->s, &e);
    (void)pthread_mutex_unlock(g->issue_mutex);
    return CUBERT_STATUS_OK;
  }
  if (c->kind == CUBERT_COLLECTIVE_ALL_REDUCE && c->op == CUBERT_REDUCE_OPERATION_MEAN &&
      g->size > 1 &&
      cuda_comm_mean_launch(&s->s, m->mean[c->dtype], c->dtype, (CUdeviceptr)c->dst, c->bytes,
                            g->size, &e) != CUBERT_STATUS_OK)
    cubert__cuda_stream_queue_error(&s->s, &e);
  if (g->kind == CUDA_GROUP_WORLD) cuda_world_track(g->world, m);
  (void)pthread_mutex_unlock(g->issue_mutex);
  return CUBERT_STATUS_OK;
}
