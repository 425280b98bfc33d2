/* SPDX-License-Identifier: MIT */
/*
 * backend-cuda/fake/fake_libcuda_gates.c: the fake driver's stream memory
 * operations (cuStreamWaitValue32 / cuStreamWriteValue32) and peer copies,
 * for the CUDA driver's collectives (backend-cuda/comm/cuda_comm.h, "Gates").
 *
 * The fake runs work at once, so a wait that cannot be satisfied yet is kept
 * as a "gate" {address, value} on the stream instead: an event recorded
 * there carries the stream's open gates, a stream that waits for such an
 * event takes them over, cuStreamQuery / cuEventQuery answer NOT_READY while
 * one is closed, and work on a gated stream (copies, launches, frees,
 * synchronizes, writes) blocks the calling thread until every gate opened
 * (another thread's cuStreamWriteValue32), at most
 * CUBERT_FAKE_CUDA_GATE_TIMEOUT_MS (default 30000), then fails with
 * CUDA_ERROR_TIMEOUT. A real GPU blocks nothing: its stream waits. A test
 * that drives every device from one thread must therefore not need a gated
 * stream's work before the round that opens it was issued (the CUDA driver
 * never does: it only waits for gates when asked to synchronize).
 *
 * Peer copies: cuDeviceCanAccessPeer answers 1 between different devices
 * unless CUBERT_FAKE_CUDA_NO_PEER=1; cuCtxEnablePeerAccess counts the pairs
 * enabled; cuMemcpyPeerAsync copies (counted in copies_peer).
 */
#include <string.h>
#include <time.h>

#include "fake_libcuda_internal.h"

static int gate_open(const fake_gate_t *g) {
  uint32_t now = __atomic_load_n(g->addr, __ATOMIC_ACQUIRE);
  return (int32_t)(now - g->value) >= 0;
}

void fake_gates_prune(fake_gates_t *gates) {
  uint32_t i = 0;
  while (i < gates->n) {
    if (gate_open(&gates->g[i])) gates->g[i] = gates->g[--gates->n];
    else i++;
  }
}

/* Add {addr, value} (the larger value wins for one address). 0, or -1 when
 * full (caller holds fake_mutex). */
static int gates_add(fake_gates_t *gates, const uint32_t *addr, uint32_t value) {
  uint32_t i;
  for (i = 0; i < gates->n; i++)
    if (gates->g[i].addr == addr) {
      if ((int32_t)(value - gates->g[i].value) > 0) gates->g[i].value = value;
      return 0;
    }
  if (gates->n == FAKE_GATES) return -1;
  gates->g[gates->n].addr = addr;
  gates->g[gates->n].value = value;
  gates->n++;
  return 0;
}

int fake_gates_merge(fake_gates_t *dst, const fake_gates_t *src) {
  uint32_t i;
  for (i = 0; i < src->n; i++)
    if (!gate_open(&src->g[i]) && gates_add(dst, src->g[i].addr, src->g[i].value) != 0) return -1;
  return 0;
}

/* Block until every gate of `gates` (under fake_mutex, re-read each time)
 * opened. Called without fake_mutex. */
static CUresult gates_settle(fake_gates_t *gates) {
  long long limit_ms = fake_knob("CUBERT_FAKE_CUDA_GATE_TIMEOUT_MS", 30000);
  struct timespec start, now;
  (void)clock_gettime(CLOCK_MONOTONIC, &start);
  for (;;) {
    uint32_t n;
    if (fake_process_poisoned() != CUDA_SUCCESS) return fake_process_poisoned(); /* at once */
    pthread_mutex_lock(&fake_mutex);
    fake_gates_prune(gates);
    n = gates->n;
    pthread_mutex_unlock(&fake_mutex);
    if (n == 0) return CUDA_SUCCESS;
    (void)clock_gettime(CLOCK_MONOTONIC, &now);
    if ((now.tv_sec - start.tv_sec) * 1000ll + (now.tv_nsec - start.tv_nsec) / 1000000 > limit_ms)
      return CUDA_ERROR_TIMEOUT;
    {
      struct timespec ts;
      ts.tv_sec = 0;
      ts.tv_nsec = 50000;
      (void)nanosleep(&ts, NULL);
    }
  }
}

CUresult fake_context_drain(int device) {
  long long limit_ms = fake_knob("CUBERT_FAKE_CUDA_GATE_TIMEOUT_MS", 30000);
  struct timespec start, now;
  int waited = 0;
  fake_async_run_all();
  (void)clock_gettime(CLOCK_MONOTONIC, &start);
  for (;;) {
    struct CUstream_st *s;
    int closed = 0;
    if (fake_process_poisoned() != CUDA_SUCCESS) return fake_process_poisoned();
    pthread_mutex_lock(&fake_mutex);
    for (s = fake_live_streams; s; s = s->live_next) {
      if (!s->ctx || s->ctx->device != device) continue;
      fake_gates_prune(&s->gates);
      if (s->gates.n) closed = 1;
    }
    if (!waited) {
      fake_stats_.context_drains++;
      if (closed) fake_stats_.context_drains_waited++;
    }
    pthread_mutex_unlock(&fake_mutex);
    if (!closed) return CUDA_SUCCESS;
    waited = 1;
    (void)clock_gettime(CLOCK_MONOTONIC, &now);
    if ((now.tv_sec - start.tv_sec) * 1000ll + (now.tv_nsec - start.tv_nsec) / 1000000 > limit_ms)
      return CUDA_ERROR_TIMEOUT;
    {
      struct timespec ts;
      ts.tv_sec = 0;
      ts.tv_nsec = 50000;
      (void)nanosleep(&ts, NULL);
    }
  }
}

/* Exported: the fake libnccl's kernel loading and set-up drain as NCCL's do
 * on a real driver (found with dlsym in this library). */
CUresult cubert_fake_cuda_context_drain(int device) { return fake_context_drain(device); }

CUresult fake_stream_settle(CUstream s) {
  s = fake_stream_special(s);
  return s ? gates_settle(&s->gates) : CUDA_SUCCESS;
}

CUresult fake_event_settle(CUevent e) { return e ? gates_settle(&e->gates) : CUDA_SUCCESS; }

CUresult fake_stream_ready(CUstream s) {
  CUresult r = fake_stream_check(s);
  if (r != CUDA_SUCCESS) return r;
  return fake_stream_settle(s);
}

/* Exported: the fake libnccl settles a stream before it runs a collective
 * there (found with dlsym in this library). */
CUresult cubert_fake_cuda_stream_settle(CUstream s) {
  CUresult r = fake_stream_settle(s);
  if (r == CUDA_SUCCESS) fake_async_run(fake_stream_special(s), UINT64_MAX);
  return r;
}

CUresult fake_cuStreamWaitValue32(CUstream s_arg, CUdeviceptr addr, cuuint32_t value,
                                  unsigned int flags) {
  CUstream s = fake_stream_special(s_arg);
  CUresult r = fake_stream_check(s);
  fake_gate_t g;
  if (r != CUDA_SUCCESS) return r;
  if (!s || !addr) return CUDA_ERROR_INVALID_VALUE;
  r = (CUresult)fake_knob("CUBERT_FAKE_CUDA_WAIT_VALUE_RESULT", 0);
  if (r != CUDA_SUCCESS) return r;
  if ((flags & 0xf) != CU_STREAM_WAIT_VALUE_GEQ) return CUDA_ERROR_NOT_SUPPORTED;
  g.addr = (const uint32_t *)(uintptr_t)addr;
  g.value = value;
  pthread_mutex_lock(&fake_mutex);
  if (fake_pooled_address(addr)) {
    pthread_mutex_unlock(&fake_mutex);
    return CUDA_ERROR_INVALID_VALUE;
  }
  fake_stats_.stream_waits++;
  if (!gate_open(&g) && gates_add(&s->gates, g.addr, g.value) != 0) r = CUDA_ERROR_NOT_SUPPORTED;
  pthread_mutex_unlock(&fake_mutex);
  return r;
}

CUresult fake_cuStreamWriteValue32(CUstream s_arg, CUdeviceptr addr, cuuint32_t value,
                                   unsigned int flags) {
  CUstream s = fake_stream_special(s_arg);
  CUresult r = fake_stream_ready(s);
  (void)flags;
  if (r != CUDA_SUCCESS) return r;
  if (!addr) return CUDA_ERROR_INVALID_VALUE;
  fake_async_run(s, UINT64_MAX); /* the write comes after the stream's work */
  pthread_mutex_lock(&fake_mutex);
  r = fake_pooled_address(addr) ? CUDA_ERROR_INVALID_VALUE : CUDA_SUCCESS;
  pthread_mutex_unlock(&fake_mutex);
  if (r != CUDA_SUCCESS) return r;
  cubert_fake_cuda_gate_store((uint32_t *)(uintptr_t)addr, value);
  pthread_mutex_lock(&fake_mutex);
  fake_stats_.stream_writes++;
  pthread_mutex_unlock(&fake_mutex);
  return CUDA_SUCCESS;
}

/* Exported: open gates on `addr` (under fake_mutex, so that what the writer
 * did before is seen by whoever then finds the gate open, also by a race
 * checker). The fake libnccl completes its collectives with it. */
void cubert_fake_cuda_gate_store(uint32_t *addr, uint32_t value) {
  pthread_mutex_lock(&fake_mutex);
  __atomic_store_n(addr, value, __ATOMIC_RELEASE);
  pthread_mutex_unlock(&fake_mutex);
}

CUresult fake_cuDeviceCanAccessPeer(int *can, CUdevice a, CUdevice b) {
  if (!can) return CUDA_ERROR_INVALID_VALUE;
  if (!fake_initialized) return CUDA_ERROR_NOT_INITIALIZED;
  *can = a != b && !fake_knob("CUBERT_FAKE_CUDA_NO_PEER", 0);
  return CUDA_SUCCESS;
}

CUresult fake_cuCtxEnablePeerAccess(CUcontext peer, unsigned int flags) {
  static unsigned char enabled[FAKE_MAX_DEVICES][FAKE_MAX_DEVICES];
  CUresult r = fake_ctx_check();
  if (r != CUDA_SUCCESS) return r;
  if (!peer || flags || peer == fake_current) return CUDA_ERROR_INVALID_VALUE;
  pthread_mutex_lock(&fake_mutex);
  if (enabled[fake_current->device][peer->device]) {
    r = CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED;
  } else {
    enabled[fake_current->device][peer->device] = 1;
    fake_stats_.peer_enables++;
  }
  pthread_mutex_unlock(&fake_mutex);
  return r;
}

CUresult fake_cuMemcpyPeerAsync(CUdeviceptr dst, CUcontext dst_ctx, CUdeviceptr src,
                                CUcontext src_ctx, size_t n, CUstream s_arg) {
  CUstream s = fake_stream_special(s_arg);
  CUresult r = fake_stream_ready(s);
  if (r != CUDA_SUCCESS) return r;
  if (!dst || !src || !dst_ctx || !src_ctx) return CUDA_ERROR_INVALID_VALUE;
  fake_async_run(s, UINT64_MAX);
  memmove((void *)(uintptr_t)dst, (const void *)(uintptr_t)src, n);
  pthread_mutex_lock(&fake_mutex);
  fake_stats_.copies_peer++;
  pthread_mutex_unlock(&fake_mutex);
  return CUDA_SUCCESS;
}

/* Exported for the fake libnccl (dlsym): work on `s` from now on stands
 * behind "*addr >= value", as if a kernel still ran there. */
CUresult cubert_fake_cuda_stream_gate(CUstream s, const uint32_t *addr, uint32_t value) {
  CUresult r = CUDA_SUCCESS;
  fake_gate_t g;
  if (!s || !addr) return CUDA_ERROR_INVALID_VALUE;
  g.addr = addr;
  g.value = value;
  pthread_mutex_lock(&fake_mutex);
  if (!gate_open(&g) && gates_add(&s->gates, addr, value) != 0) r = CUDA_ERROR_NOT_SUPPORTED;
  pthread_mutex_unlock(&fake_mutex);
  return r;
}
