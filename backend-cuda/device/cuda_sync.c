/* SPDX-License-Identifier: MIT */
/*
 * backend-cuda/device/cuda_sync.c: how a host thread waits for the GPU (the
 * driver's event_synchronize), and the primary context's scheduling flags.
 *
 * cuEventSynchronize waits the way the context's scheduling says: CUDA's
 * default (CU_CTX_SCHED_AUTO) spins while a process has fewer contexts than
 * cores, and yields or sleeps otherwise; a sleeping thread is woken by an
 * interrupt, several microseconds after the GPU finished (more in a virtual
 * machine). Runtimes that must answer fast poll the event instead, for a
 * bounded time, then block. The modes (cubert_cuda_sync_mode_t):
 *
 *   AUTO      cuEventQuery in a loop for up to sync_spin_ns, then
 *             cuEventSynchronize;
 *   SPIN      cuEventQuery until it completes;
 *   YIELD     cuEventQuery, sched_yield between polls;
 *   BLOCKING  cuEventSynchronize at once.
 *
 * A wait with a deadline (cubert_completion_wait with a timeout) polls: it
 * spins a little, then sleeps 50 us at a time, and returns
 * DEADLINE_EXCEEDED when the deadline passes.
 */
#include <sched.h>
#include <time.h>

#include "driver/cuda_driver.h"

static uint64_t now_ns(void) {
  struct timespec ts;
  (void)clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* A short pause between two polls: the poll itself reads the GPU's
 * semaphore through the driver; the pause keeps a spinning thread from
 * hammering the driver's locks that a launching thread needs. */
static void relax(void) {
  int i;
  for (i = 0; i < 8; i++) {
#if defined(__x86_64__) || defined(__i386__)
    __asm__ __volatile__("pause" ::: "memory");
#elif defined(__aarch64__)
    __asm__ __volatile__("yield" ::: "memory");
#else
    __asm__ __volatile__("" ::: "memory");
#endif
  }
}

static void count(uint64_t *counter) { (void)__atomic_fetch_add(counter, 1u, __ATOMIC_RELAXED); }

/* Poll `e` until it completed (*out_done) or `budget_ns` passed (UINT64_MAX:
 * no limit); `yield`: sched_yield between polls. */
static cubert_status_t poll(cuda_drv_t *d, const cubert_cuda_event_t *e, uint64_t budget_ns,
                            bool yield, bool *out_done, cubert_error_t *out_error) {
  uint64_t start = budget_ns == UINT64_MAX ? 0 : now_ns();
  cubert_status_t st;
  for (;;) {
    st = cubert__cuda_event_query(d->dev, e, out_done, out_error);
    if (st != CUBERT_STATUS_OK || *out_done) return st;
    if (budget_ns != UINT64_MAX && now_ns() - start >= budget_ns) return CUBERT_STATUS_OK;
    if (yield) (void)sched_yield();
    else relax();
  }
}

/* A deadline: spin a little, then sleep 50 us between polls. */
static cubert_status_t wait_deadline(cuda_drv_t *d, const cubert_cuda_event_t *e,
                                     uint64_t timeout_ns, cubert_error_t *out_error) {
  uint64_t start = now_ns(), spins = 0;
  bool done = false;
  cubert_status_t st;
  for (;;) {
    st = cubert__cuda_event_query(d->dev, e, &done, out_error);
    if (st != CUBERT_STATUS_OK || done) return st;
    if (now_ns() - start >= timeout_ns)
      return cubert_error_set(out_error, CUBERT_ERROR_DEADLINE_EXCEEDED, NULL, 0,
                              "the event did not complete before the deadline");
    if (++spins > 64) {
      struct timespec ts;
      ts.tv_sec = 0;
      ts.tv_nsec = 50000;
      (void)nanosleep(&ts, NULL);
    }
  }
}

cubert_status_t cuda_sync_wait(cuda_drv_t *d, const cubert_cuda_event_t *e, uint64_t timeout_ns,
                               cubert_error_t *out_error) {
  bool done = false;
  cubert_status_t st;
  if (timeout_ns != UINT64_MAX) return wait_deadline(d, e, timeout_ns, out_error);
  switch (d->sync_mode) {
    case CUBERT_CUDA_SYNC_BLOCKING:
      break;
    case CUBERT_CUDA_SYNC_SPIN:
    case CUBERT_CUDA_SYNC_YIELD:
      st = poll(d, e, UINT64_MAX, d->sync_mode == CUBERT_CUDA_SYNC_YIELD, &done, out_error);
      if (st == CUBERT_STATUS_OK) count(&d->stats.sync_spins);
      return st;
    case CUBERT_CUDA_SYNC_AUTO:
    default:
      st = poll(d, e, d->sync_spin_ns, false, &done, out_error);
      if (st != CUBERT_STATUS_OK) return st;
      if (done) {
        count(&d->stats.sync_spins);
        return CUBERT_STATUS_OK;
      }
      break;
  }
  st = cubert__cuda_event_synchronize(d->dev, e, out_error);
  if (st == CUBERT_STATUS_OK) count(&d->stats.sync_blocks);
  return st;
}

/* ---- the primary context's scheduling ---------------------------------------------------- */

static unsigned sched_flag(cubert_cuda_schedule_t s) {
  switch (s) {
    case CUBERT_CUDA_SCHEDULE_SPIN: return CU_CTX_SCHED_SPIN;
    case CUBERT_CUDA_SCHEDULE_YIELD: return CU_CTX_SCHED_YIELD;
    case CUBERT_CUDA_SCHEDULE_BLOCKING: return CU_CTX_SCHED_BLOCKING_SYNC;
    default: return CU_CTX_SCHED_AUTO;
  }
}

cubert_status_t cuda_sync_schedule(const cubert_cuda_loader_t *cu, uint32_t ordinal,
                                   cubert_cuda_schedule_t schedule, uint32_t *out_flags,
                                   cubert_error_t *out_error) {
  CUdevice dev = 0;
  unsigned flags = 0;
  int active = 0;
  CUresult r = cu->cuDeviceGet(&dev, (int)ordinal);
  if (r == CUDA_SUCCESS) r = cu->cuDevicePrimaryCtxGetState(dev, &flags, &active);
  if (r != CUDA_SUCCESS)
    return cubert__cuda_error_set(out_error, cu, r, CUBERT_CUDA_OP_GENERIC,
                                  "cuDevicePrimaryCtxGetState", 0);
  if (schedule != CUBERT_CUDA_SCHEDULE_DEFAULT &&
      (flags & CU_CTX_SCHED_MASK) != sched_flag(schedule)) {
    /* Since CUDA 11 the flags may be set while the context is active too;
     * they then apply to waits from now on. */
    unsigned want = (flags & ~(unsigned)CU_CTX_SCHED_MASK) | sched_flag(schedule);
    r = cu->cuDevicePrimaryCtxSetFlags(dev, want);
    if (r != CUDA_SUCCESS)
      return cubert__cuda_error_set(out_error, cu, r, CUBERT_CUDA_OP_GENERIC,
                                    "cuDevicePrimaryCtxSetFlags", 0);
    flags = want;
  }
  *out_flags = flags;
  return CUBERT_STATUS_OK;
}
