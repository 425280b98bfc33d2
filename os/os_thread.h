/* SPDX-License-Identifier: MIT */
/*
 * os/os_thread.h: thin wrappers over POSIX threads for the hosted
 * layer (mutex, condition variable, thread create/join, monotonic clock,
 * online CPU count, yield/relax/sleep). The only place <pthread.h> details
 * are spelled out; the rest of backend-cpu uses these names.
 *
 * All objects live in caller storage (initialize/deinitialize) and never
 * allocate. A failed initialize leaves nothing to clean up. Lock, unlock,
 * wait and signal on a correctly initialized object cannot fail on POSIX
 * (the error returns pthreads documents are for misuse), so they return
 * void; misuse is undefined, as with pthreads.
 */
#ifndef CUBERT_OS_THREAD_H
#define CUBERT_OS_THREAD_H

#include <pthread.h>

#include "cubert/cubert.h"

/* A plain (non-recursive) mutex. */
typedef struct cubert_os_mutex_t {
  pthread_mutex_t mutex;
} cubert_os_mutex_t;

/* A condition variable whose timed waits use the monotonic clock. */
typedef struct cubert_os_cond_t {
  pthread_cond_t cond;
} cubert_os_cond_t;

/* The function a thread runs. */
typedef void (*cubert_os_thread_fn_t)(void *arg);

/* A joinable thread. The struct must stay at the same address from create
 * until join returns (the new thread reads fn/arg from it). */
typedef struct cubert_os_thread_t {
  pthread_t thread;
  cubert_os_thread_fn_t fn;
  void *arg;
} cubert_os_thread_t;

/* Initialize a mutex. RESOURCE_EXHAUSTED (ENOMEM/EAGAIN) or INTERNAL on
 * failure; nothing to deinitialize then. Not thread-safe on one object. */
cubert_status_t cubert__os_mutex_initialize(cubert_os_mutex_t *mutex);
/* Destroy an unlocked mutex nobody waits on. */
void cubert__os_mutex_deinitialize(cubert_os_mutex_t *mutex);
/* Lock (blocks) / unlock. Not recursive: locking twice from one thread
 * deadlocks. */
void cubert__os_mutex_lock(cubert_os_mutex_t *mutex);
void cubert__os_mutex_unlock(cubert_os_mutex_t *mutex);

/* Initialize a condition variable on the monotonic clock.
 * RESOURCE_EXHAUSTED or INTERNAL on failure (nothing to clean up). */
cubert_status_t cubert__os_cond_initialize(cubert_os_cond_t *cond);
/* Destroy a condition variable nobody waits on. */
void cubert__os_cond_deinitialize(cubert_os_cond_t *cond);
/* Atomically release `mutex` (held by the caller) and wait; re-locks before
 * returning. Spurious wake-ups happen: re-check the predicate. Blocks. */
void cubert__os_cond_wait(cubert_os_cond_t *cond, cubert_os_mutex_t *mutex);
/* As cond_wait, for at most timeout_ns nanoseconds (UINT64_MAX: no limit).
 * OK when woken (possibly spuriously), DEADLINE_EXCEEDED when the time
 * passed. The mutex is held again on return in both cases. Blocks. */
cubert_status_t cubert__os_cond_timed_wait(cubert_os_cond_t *cond, cubert_os_mutex_t *mutex,
                                           uint64_t timeout_ns);
/* Wake one / every waiter. Thread-safe; callable with or without the mutex. */
void cubert__os_cond_signal(cubert_os_cond_t *cond);
void cubert__os_cond_broadcast(cubert_os_cond_t *cond);

/* Start a thread running fn(arg). stack_bytes: 0 for the platform default,
 * else at least that much stack (rounded up to PTHREAD_STACK_MIN and the
 * page size). `thread` is caller storage that must not move until join.
 * RESOURCE_EXHAUSTED when the system lacks resources (EAGAIN/ENOMEM: too
 * many threads, stack cannot be mapped), INVALID_ARGUMENT for NULL thread or
 * fn or an unusable stack size, INTERNAL otherwise. On failure no thread
 * exists. Thread-safe. */
cubert_status_t cubert__os_thread_create(cubert_os_thread_t *thread, cubert_os_thread_fn_t fn,
                                         void *arg, size_t stack_bytes);
/* Wait for the thread to end (blocks). Exactly once per created thread; never
 * from the thread itself. */
void cubert__os_thread_join(cubert_os_thread_t *thread);

/* Test hook (fault injection): make the nth cubert__os_thread_create call
 * from now on (1-based, counted process-wide) fail with RESOURCE_EXHAUSTED,
 * once. 0 disarms. Thread-safe. */
void cubert__os_thread_inject_failure(uint32_t nth);

/* Monotonic clock in nanoseconds (CLOCK_MONOTONIC). Thread-safe, no system
 * call on Linux (vDSO). */
uint64_t cubert__os_clock_ns(void);
/* Online logical CPUs (sysconf), at least 1. Thread-safe. */
uint32_t cubert__os_cpu_count(void);
/* Give up the CPU to another runnable thread (sched_yield). */
void cubert__os_thread_yield(void);
/* Sleep for at least ns nanoseconds (nanosleep, restarted on EINTR). */
void cubert__os_sleep_ns(uint64_t ns);

/* ---- adaptive waiting ----------------------------------------------------------
 * A thread that waits for another thread's store (a stream's worker, a host
 * waiter, a kernel worker) first spins, then blocks on its own condition
 * variable. cubert__os_backoff_wait is the spin, and adapts it to the
 * machine:
 *   - it pause-spins for up to `spin_ns` (CUBERT_OS_BACKOFF_SPIN_MIN_NS ..
 *     CUBERT_OS_BACKOFF_SPIN_MAX_NS), looking at the clock every 64 spins;
 *   - a gap of CUBERT_OS_BACKOFF_GAP_NS or more between two looks at the
 *     clock means the spinner was descheduled: the machine has more runnable
 *     threads than cores, where a spin burns a time slice the thread it waits
 *     for may need. The spin ends at once (the caller blocks) and the budget
 *     halves, down to the minimum;
 *   - a spin that saw its condition without a gap doubles the budget back,
 *     up to the maximum.
 * It does not yield: under Linux's EEVDF (and CFS) scheduler a thread that
 * calls sched_yield among threads that never yield waits for their whole
 * time slices, while a thread woken from a futex runs at once; measured in
 * docs/benchmarks.md ("Oversubscribed"). The budget is a hint shared by the
 * threads that use one backoff (relaxed atomics: a lost update delays the
 * adaptation by one wait). The caller blocks when it returns 0, after
 * publishing that it sleeps (the Dekker pattern of its own protocol): the
 * backoff never decides that a wake-up is not needed, so it cannot lose one. */
#define CUBERT_OS_BACKOFF_SPIN_MAX_NS 50000u
#define CUBERT_OS_BACKOFF_SPIN_MIN_NS 1000u
#define CUBERT_OS_BACKOFF_GAP_NS 20000u

typedef struct cubert_os_backoff_t {
  uint32_t spin_ns;     /* atomic (relaxed): the current spin budget */
  uint32_t preempted;   /* atomic (relaxed): spins that ended on a gap (statistics) */
} cubert_os_backoff_t;

/* The condition a waiter waits for; called on every spin (keep it cheap). */
typedef int (*cubert_os_ready_fn_t)(void *arg);

/* Start at the full spin budget. */
void cubert__os_backoff_initialize(cubert_os_backoff_t *backoff);
/* Spin until ready(arg) returns non-zero (returns 1), or the budget ran out,
 * the spinner was descheduled, or the clock reached deadline_ns
 * (cubert__os_clock_ns; UINT64_MAX: none) (returns 0: the caller blocks).
 * ready is called at least once. Thread-safe (the budget is shared); never
 * blocks. */
int cubert__os_backoff_wait(cubert_os_backoff_t *backoff, cubert_os_ready_fn_t ready, void *arg,
                            uint64_t deadline_ns);
/* The current spin budget (tests, statistics). */
uint32_t cubert__os_backoff_spin_ns(const cubert_os_backoff_t *backoff);

/* 1 when cubert__os_prefetch_write can ask for ownership of a line on this
 * CPU (x86: the PRFCHW cpuid bit; other targets: their write prefetch). */
int cubert__os_cpu_has_prefetch_write(void);

/* Ask for the cache line at p in exclusive state ahead of a write, so that
 * the write does not stall a later fence on the line's transfer from
 * another core. `supported`: cubert__os_cpu_has_prefetch_write(). A hint:
 * no effect on the program's meaning. */
static inline void cubert__os_prefetch_write(const void *p, int supported) {
#if defined(__x86_64__) || defined(__i386__)
  /* without -mprfchw the compiler's write prefetch is a read prefetch */
  if (supported) __asm__ __volatile__("prefetchw %0" : : "m"(*(const char *)p));
#else
  (void)supported;
  __builtin_prefetch(p, 1, 3);
#endif
}

/* Hint to the CPU that the caller is spinning (x86 pause, Arm yield). */
static inline void cubert__os_cpu_relax(void) {
#if defined(__x86_64__) || defined(__i386__)
  __asm__ __volatile__("pause" ::: "memory");
#elif defined(__aarch64__) || (defined(__arm__) && defined(__ARM_ARCH) && __ARM_ARCH >= 7)
  __asm__ __volatile__("yield" ::: "memory");
#else
  __asm__ __volatile__("" ::: "memory");
#endif
}

#endif /* CUBERT_OS_THREAD_H */
