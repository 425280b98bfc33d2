/* SPDX-License-Identifier: MIT */
/* os/os_thread.c: POSIX implementation of host_thread.h. */
#include <errno.h>
#include <limits.h>
#include <sched.h>
#include <time.h>
#include <unistd.h>

#include "os/os_thread.h"

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#endif

static cubert_status_t status_from_errno(int err) {
  if (err == ENOMEM || err == EAGAIN) return CUBERT_STATUS_RESOURCE_EXHAUSTED;
  if (err == EINVAL) return CUBERT_STATUS_INVALID_ARGUMENT;
  return CUBERT_STATUS_INTERNAL;
}

cubert_status_t cubert__os_mutex_initialize(cubert_os_mutex_t *mutex) {
  int err;
  if (!mutex) return CUBERT_STATUS_INVALID_ARGUMENT;
  err = pthread_mutex_init(&mutex->mutex, NULL);
  return err ? status_from_errno(err) : CUBERT_STATUS_OK;
}

void cubert__os_mutex_deinitialize(cubert_os_mutex_t *mutex) {
  (void)pthread_mutex_destroy(&mutex->mutex);
}

void cubert__os_mutex_lock(cubert_os_mutex_t *mutex) { (void)pthread_mutex_lock(&mutex->mutex); }

void cubert__os_mutex_unlock(cubert_os_mutex_t *mutex) {
  (void)pthread_mutex_unlock(&mutex->mutex);
}

cubert_status_t cubert__os_cond_initialize(cubert_os_cond_t *cond) {
  pthread_condattr_t attr;
  int err;
  if (!cond) return CUBERT_STATUS_INVALID_ARGUMENT;
  err = pthread_condattr_init(&attr);
  if (err) return status_from_errno(err);
  err = pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
  if (!err) err = pthread_cond_init(&cond->cond, &attr);
  (void)pthread_condattr_destroy(&attr);
  return err ? status_from_errno(err) : CUBERT_STATUS_OK;
}

void cubert__os_cond_deinitialize(cubert_os_cond_t *cond) {
  (void)pthread_cond_destroy(&cond->cond);
}

void cubert__os_cond_wait(cubert_os_cond_t *cond, cubert_os_mutex_t *mutex) {
  (void)pthread_cond_wait(&cond->cond, &mutex->mutex);
}

cubert_status_t cubert__os_cond_timed_wait(cubert_os_cond_t *cond, cubert_os_mutex_t *mutex,
                                           uint64_t timeout_ns) {
  struct timespec now, deadline;
  uint64_t sec, nsec;
  int err;
  if (timeout_ns == UINT64_MAX) {
    cubert__os_cond_wait(cond, mutex);
    return CUBERT_STATUS_OK;
  }
  (void)clock_gettime(CLOCK_MONOTONIC, &now);
  sec = timeout_ns / 1000000000u;
  nsec = (uint64_t)now.tv_nsec + timeout_ns % 1000000000u;
  if (nsec >= 1000000000u) {
    nsec -= 1000000000u;
    sec++;
  }
  /* time_t is at least 32 bits; clamp far deadlines instead of wrapping. */
  if (sec > (uint64_t)INT32_MAX) sec = (uint64_t)INT32_MAX;
  deadline.tv_sec = now.tv_sec + (time_t)sec;
  deadline.tv_nsec = (long)nsec;
  err = pthread_cond_timedwait(&cond->cond, &mutex->mutex, &deadline);
  return err == ETIMEDOUT ? CUBERT_STATUS_DEADLINE_EXCEEDED : CUBERT_STATUS_OK;
}

void cubert__os_cond_signal(cubert_os_cond_t *cond) { (void)pthread_cond_signal(&cond->cond); }

void cubert__os_cond_broadcast(cubert_os_cond_t *cond) {
  (void)pthread_cond_broadcast(&cond->cond);
}

/* Fault injection: calls left before the injected failure (0 = disarmed). */
static uint32_t g_thread_fail_countdown;

void cubert__os_thread_inject_failure(uint32_t nth) {
  __atomic_store_n(&g_thread_fail_countdown, nth, __ATOMIC_SEQ_CST);
}

static int thread_injected_failure(void) {
  uint32_t left = __atomic_load_n(&g_thread_fail_countdown, __ATOMIC_SEQ_CST);
  while (left != 0) {
    if (__atomic_compare_exchange_n(&g_thread_fail_countdown, &left, left - 1, false,
                                    __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST))
      return left == 1;
  }
  return 0;
}

static void *thread_trampoline(void *arg) {
  cubert_os_thread_t *thread = (cubert_os_thread_t *)arg;
  thread->fn(thread->arg);
  return NULL;
}

cubert_status_t cubert__os_thread_create(cubert_os_thread_t *thread, cubert_os_thread_fn_t fn,
                                         void *arg, size_t stack_bytes) {
  pthread_attr_t attr;
  int err;
  if (!thread || !fn) return CUBERT_STATUS_INVALID_ARGUMENT;
  if (thread_injected_failure()) return CUBERT_STATUS_RESOURCE_EXHAUSTED;
  thread->fn = fn;
  thread->arg = arg;
  err = pthread_attr_init(&attr);
  if (err) return status_from_errno(err);
  if (stack_bytes) {
    long page = sysconf(_SC_PAGESIZE);
    size_t p = page > 0 ? (size_t)page : 4096u;
    if (stack_bytes < (size_t)PTHREAD_STACK_MIN) stack_bytes = (size_t)PTHREAD_STACK_MIN;
    if (stack_bytes > SIZE_MAX - p) {
      (void)pthread_attr_destroy(&attr);
      return CUBERT_STATUS_INVALID_ARGUMENT;
    }
    stack_bytes = (stack_bytes + p - 1) / p * p;
    err = pthread_attr_setstacksize(&attr, stack_bytes);
  }
  if (!err) err = pthread_create(&thread->thread, &attr, thread_trampoline, thread);
  (void)pthread_attr_destroy(&attr);
  return err ? status_from_errno(err) : CUBERT_STATUS_OK;
}

void cubert__os_thread_join(cubert_os_thread_t *thread) {
  (void)pthread_join(thread->thread, NULL);
}

uint64_t cubert__os_clock_ns(void) {
  struct timespec ts;
  (void)clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

uint32_t cubert__os_cpu_count(void) {
  long n = sysconf(_SC_NPROCESSORS_ONLN);
  if (n < 1) return 1;
  if (n > (long)UINT32_MAX) return UINT32_MAX;
  return (uint32_t)n;
}

void cubert__os_thread_yield(void) { (void)sched_yield(); }

void cubert__os_sleep_ns(uint64_t ns) {
  struct timespec req, rem;
  req.tv_sec = (time_t)(ns / 1000000000u);
  req.tv_nsec = (long)(ns % 1000000000u);
  while (nanosleep(&req, &rem) != 0 && errno == EINTR) req = rem;
}

int cubert__os_cpu_has_prefetch_write(void) {
#if defined(__x86_64__) || defined(__i386__)
  unsigned a = 0, b = 0, c = 0, d = 0;
  if (!__get_cpuid(0x80000001u, &a, &b, &c, &d)) return 0;
  return (c >> 8) & 1u; /* PRFCHW (3DNowPrefetch) */
#else
  return 1;
#endif
}

/* ---- adaptive waiting (see os_thread.h) ---------------------------------------- */

void cubert__os_backoff_initialize(cubert_os_backoff_t *b) {
  __atomic_store_n(&b->spin_ns, CUBERT_OS_BACKOFF_SPIN_MAX_NS, __ATOMIC_RELAXED);
  __atomic_store_n(&b->preempted, 0u, __ATOMIC_RELAXED);
}

uint32_t cubert__os_backoff_spin_ns(const cubert_os_backoff_t *b) {
  return __atomic_load_n(&b->spin_ns, __ATOMIC_RELAXED);
}

int cubert__os_backoff_wait(cubert_os_backoff_t *b, cubert_os_ready_fn_t ready, void *arg,
                            uint64_t deadline_ns) {
  uint32_t budget = __atomic_load_n(&b->spin_ns, __ATOMIC_RELAXED), i;
  uint64_t start, last, now;
  if (ready(arg)) return 1;
  if (budget < CUBERT_OS_BACKOFF_SPIN_MIN_NS || budget > CUBERT_OS_BACKOFF_SPIN_MAX_NS)
    budget = CUBERT_OS_BACKOFF_SPIN_MAX_NS;
  start = last = cubert__os_clock_ns();
  for (i = 1;; i++) {
    cubert__os_cpu_relax();
    if (ready(arg)) {
      if (budget < CUBERT_OS_BACKOFF_SPIN_MAX_NS)
        __atomic_store_n(&b->spin_ns,
                         budget >= CUBERT_OS_BACKOFF_SPIN_MAX_NS / 2 ? CUBERT_OS_BACKOFF_SPIN_MAX_NS
                                                                     : budget * 2u,
                         __ATOMIC_RELAXED);
      return 1;
    }
    if ((i & 63u) == 0) {
      now = cubert__os_clock_ns();
      if (now - last >= CUBERT_OS_BACKOFF_GAP_NS) { /* descheduled while spinning */
        __atomic_store_n(&b->spin_ns,
                         budget / 2u < CUBERT_OS_BACKOFF_SPIN_MIN_NS ? CUBERT_OS_BACKOFF_SPIN_MIN_NS
                                                                     : budget / 2u,
                         __ATOMIC_RELAXED);
        __atomic_add_fetch(&b->preempted, 1u, __ATOMIC_RELAXED);
        return 0;
      }
      last = now;
      if (now >= deadline_ns || now - start >= budget) return 0;
    }
  }
}
