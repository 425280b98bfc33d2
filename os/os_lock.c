/* SPDX-License-Identifier: MIT */
/*
 * os/os_lock.c: the hooks the OS layer gives the server
 * server (cubert/os.h): the recursive device lock, the monotonic clock and
 * the per-thread stream source.
 *
 * The lock is a plain mutex plus the owning thread and a depth: a re-entry
 * (a device call made from inside a task or an exclusive section) is a
 * compare, not a second lock. Every launch takes it, and glibc's recursive
 * mutex cost about twice as many instructions.
 */
#include "cubert/os.h"

#include <pthread.h>

#include "os/os_thread.h"

typedef struct os_lock_t {
  pthread_mutex_t mutex;
  uintptr_t owner; /* atomic: the owning thread's token, 0 when free */
  uint32_t depth;  /* owner only */
  cubert_allocator_t allocator;
} os_lock_t;

/* A thread's token: the address of its thread-local byte (never 0). A
 * thread reads `owner` racing only with other threads' stores of their own
 * tokens or 0, so it sees its own token exactly when it holds the lock. */
static __thread char t_lock_token;

static void os_lock_lock(void *self) {
  os_lock_t *l = (os_lock_t *)self;
  uintptr_t me = (uintptr_t)&t_lock_token;
  if (__atomic_load_n(&l->owner, __ATOMIC_RELAXED) == me) {
    l->depth++;
    return;
  }
  pthread_mutex_lock(&l->mutex);
  __atomic_store_n(&l->owner, me, __ATOMIC_RELAXED);
  l->depth = 1;
}

static void os_lock_unlock(void *self) {
  os_lock_t *l = (os_lock_t *)self;
  if (--l->depth) return;
  __atomic_store_n(&l->owner, (uintptr_t)0, __ATOMIC_RELAXED);
  pthread_mutex_unlock(&l->mutex);
}

cubert_status_t cubert_os_lock_create(cubert_allocator_t allocator, cubert_lock_t *out_lock,
                                      cubert_error_t *out_error) {
  os_lock_t *l = NULL;
  if (!out_lock)
    return cubert_error_set(out_error, CUBERT_ERROR_INVALID_ARGUMENT, NULL, 0,
                            "cubert_os_lock_create: out_lock is NULL");
  CUBERT_RETURN_IF_ERROR(cubert_allocator_malloc(allocator, sizeof(*l), 0, (void **)&l, out_error));
  if (pthread_mutex_init(&l->mutex, NULL) != 0) {
    cubert_allocator_free(allocator, l, sizeof(*l), 0);
    return cubert_error_set(out_error, CUBERT_ERROR_HOST_OUT_OF_MEMORY, NULL, 0,
                            "cubert_os_lock_create: pthread_mutex_init failed");
  }
  l->allocator = allocator;
  out_lock->self = l;
  out_lock->lock = os_lock_lock;
  out_lock->unlock = os_lock_unlock;
  return CUBERT_STATUS_OK;
}

void cubert_os_lock_destroy(cubert_lock_t lock) {
  os_lock_t *l = (os_lock_t *)lock.self;
  if (!l || lock.lock != os_lock_lock) return;
  pthread_mutex_destroy(&l->mutex);
  cubert_allocator_free(l->allocator, l, sizeof(*l), 0);
}

static uint64_t host_clock_now(void *self) {
  (void)self;
  return cubert__os_clock_ns();
}

cubert_profile_clock_t cubert_os_clock(void) {
  cubert_profile_clock_t clock;
  clock.self = NULL;
  clock.now_ns = host_clock_now;
  return clock;
}

uint64_t cubert_os_stream_source(void *self) {
  (void)self;
  return cubert_stream_id_current().value;
}
