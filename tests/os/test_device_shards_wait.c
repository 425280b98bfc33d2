/* SPDX-License-Identifier: MIT */
/* The device lock's shards with real threads (core/device/device_shards.h):
 * a patient enter waits in the device lock while another thread holds it
 * longer than the bounded looks, and then enters its shard (the work runs
 * beside the lock, not under it); an impatient one gives up. */
#include <pthread.h>
#include <stdint.h>

#include "test.h"
#include "counting_allocator.h"
#include "device/device_shards.h"
#include "os/os_thread.h"

typedef struct rlock_t {
  pthread_mutex_t mutex;
} rlock_t;

static void rl_lock(void *self) { pthread_mutex_lock(&((rlock_t *)self)->mutex); }
static void rl_unlock(void *self) { pthread_mutex_unlock(&((rlock_t *)self)->mutex); }

typedef struct holder_t {
  cubert_lock_t lock;
  uint32_t held;     /* atomic: the holder has the device lock */
  uint32_t release;  /* atomic: the main thread lets it go */
} holder_t;

static void *hold_device(void *arg) {
  holder_t *h = (holder_t *)arg;
  h->lock.lock(h->lock.self);
  __atomic_store_n(&h->held, 1u, __ATOMIC_SEQ_CST);
  while (!__atomic_load_n(&h->release, __ATOMIC_SEQ_CST)) cubert__os_sleep_ns(100000);
  cubert__os_sleep_ns(20000000); /* 20 ms more: longer than any bounded look */
  h->lock.unlock(h->lock.self);
  return NULL;
}

static void *try_lock(void *arg) {
  rlock_t *rl = (rlock_t *)arg;
  int r = pthread_mutex_trylock(&rl->mutex);
  if (r == 0) pthread_mutex_unlock(&rl->mutex);
  return (void *)(intptr_t)r;
}

TEST(shards_patient_wait_enters_after_a_long_hold) {
  counting_allocator_t c;
  cubert_allocator_t a = counting_allocator_initialize(&c);
  pthread_mutexattr_t attr;
  rlock_t rl;
  cubert_lock_t inner;
  cubert_device_shards_t *s = NULL;
  holder_t h;
  pthread_t t;
  uint64_t t0, waited;
  pthread_mutexattr_init(&attr);
  pthread_mutexattr_settype(&attr, PTHREAD_MUTEX_RECURSIVE);
  pthread_mutex_init(&rl.mutex, &attr);
  pthread_mutexattr_destroy(&attr);
  inner.lock = rl_lock;
  inner.unlock = rl_unlock;
  inner.self = &rl;
  CHECK_OK(cubert__device_shards_create(a, inner, cubert__os_thread_yield, &s));
  if (!cubert__device_shards_enter(s, 3)) {
    cubert__device_shards_destroy(s);
    pthread_mutex_destroy(&rl.mutex);
    counting_allocator_destroy(&c);
    TEST_SKIP("no shards in this build (no sequentially consistent atomics)");
  }
  cubert__device_shards_leave(s, 3);
  h.lock = cubert__device_shards_lock(s);
  h.held = 0;
  h.release = 0;
  CHECK(pthread_create(&t, NULL, hold_device, &h) == 0);
  while (!__atomic_load_n(&h.held, __ATOMIC_SEQ_CST)) cubert__os_sleep_ns(100000);
  /* impatient: the bounded looks, then "take the device lock" */
  CHECK(!cubert__device_shards_enter_wait(s, 3, false));
  /* patient: blocks in the lock until the holder leaves, then enters */
  __atomic_store_n(&h.release, 1u, __ATOMIC_SEQ_CST);
  t0 = cubert__os_clock_ns();
  CHECK(cubert__device_shards_enter_wait(s, 3, true));
  waited = cubert__os_clock_ns() - t0;
  CHECK_MSG(waited >= 10000000u, "entered after %llu ns, before the holder left",
            (unsigned long long)waited);
  /* it holds its shard, not the device lock: another thread's lock waits
   * for the shard (the holder has gone), and the lock itself is free */
  CHECK(pthread_join(t, NULL) == 0);
  {
    pthread_t other;
    void *r = NULL;
    CHECK(pthread_create(&other, NULL, try_lock, &rl) == 0);
    CHECK(pthread_join(other, &r) == 0);
    CHECK_MSG(r == NULL, "the device lock is still held after the patient enter");
  }
  cubert__device_shards_leave(s, 3);
  cubert__device_shards_destroy(s);
  pthread_mutex_destroy(&rl.mutex);
  CHECK_EQ_I64(c.live_blocks, 0);
  counting_allocator_destroy(&c);
}
