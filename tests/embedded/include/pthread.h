/* SPDX-License-Identifier: MIT */
/*
 * tests/embedded/include/pthread.h: the few pthread mutex calls the test support code
 * (tests/support/counting_allocator.c) makes, for bare-metal targets with one thread
 * and no pthread library. newlib's <sys/types.h> declares the types (pthread_mutex_t is
 * an integer there) but no library implements the calls. A lock taken twice would
 * deadlock on a real system: here it traps, so the run fails loudly. There is no other
 * thread to start: pthread_create fails (EAGAIN) and pthread_join finds none (ESRCH); the
 * tests that need threads skip before they call them (CTS_REQUIRE_THREADS, tests/cts/cts.h).
 */
#ifndef CUBERT_EMBEDDED_PTHREAD_H
#define CUBERT_EMBEDDED_PTHREAD_H

#include <errno.h>
#include <sys/types.h>

#undef PTHREAD_MUTEX_INITIALIZER /* newlib's is "locked" for the stubs below */
#define PTHREAD_MUTEX_INITIALIZER 0

static inline int pthread_mutex_init(pthread_mutex_t *m, const pthread_mutexattr_t *attr) {
  (void)attr;
  *m = 0;
  return 0;
}
static inline int pthread_mutex_destroy(pthread_mutex_t *m) {
  if (*m) __builtin_trap();
  return 0;
}
static inline int pthread_mutex_lock(pthread_mutex_t *m) {
  if (*m) __builtin_trap();
  *m = 1;
  return 0;
}
static inline int pthread_mutex_unlock(pthread_mutex_t *m) {
  if (!*m) __builtin_trap();
  *m = 0;
  return 0;
}

static inline int pthread_create(pthread_t *thread, const pthread_attr_t *attr,
                                 void *(*start)(void *), void *arg) {
  (void)thread;
  (void)attr;
  (void)start;
  (void)arg;
  return EAGAIN;
}
static inline int pthread_join(pthread_t thread, void **result) {
  (void)thread;
  (void)result;
  return ESRCH;
}

#endif
