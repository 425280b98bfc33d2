/* SPDX-License-Identifier: MIT */
/*
 * tests/embedded/include/pthread.h: the few pthread mutex calls the test support code
 * (tests/support/counting_allocator.c) makes, for bare-metal targets with one thread
 * and no pthread library. newlib's <sys/types.h> declares the types (pthread_mutex_t is
 * an integer there) but no library implements the calls. A lock taken twice would
 * deadlock on a real system: here it traps, so the run fails loudly.
 */
#ifndef CUBERT_EMBEDDED_PTHREAD_H
#define CUBERT_EMBEDDED_PTHREAD_H

#include <sys/types.h>

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

#endif
