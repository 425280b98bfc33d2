/* SPDX-License-Identifier: MIT */
/*
 * tests/os/device_handle_fixture.h: the device-handle tests' fixture
 * (test_device_handle.c, test_device_handle_runner.c): either handle
 * implementation behind one interface, a device state with counting tasks,
 * and a gate that holds a task until opened.
 */
#ifndef CUBERT_TESTS_DEVICE_HANDLE_FIXTURE_H
#define CUBERT_TESTS_DEVICE_HANDLE_FIXTURE_H

#include <pthread.h>

#include "test.h"
#include "counting_allocator.h"
#include "cubert/os.h"
#include "cubert/driver/device.h"
#include "os/os_thread.h"

/* ---- fixture --------------------------------------------------------------- */

typedef enum dh_impl_e { DH_DIRECT, DH_RUNNER } dh_impl_t;

/* The direct handle needs a recursive lock: a pthread recursive mutex. */
typedef struct dh_rlock_t {
  pthread_mutex_t mutex;
} dh_rlock_t;

static inline void dh_rlock_lock(void *self) { (void)pthread_mutex_lock(&((dh_rlock_t *)self)->mutex); }
static inline void dh_rlock_unlock(void *self) {
  (void)pthread_mutex_unlock(&((dh_rlock_t *)self)->mutex);
}

static inline void dh_rlock_initialize(dh_rlock_t *l) {
  pthread_mutexattr_t attr;
  CHECK(pthread_mutexattr_init(&attr) == 0);
  CHECK(pthread_mutexattr_settype(&attr, PTHREAD_MUTEX_RECURSIVE) == 0);
  CHECK(pthread_mutex_init(&l->mutex, &attr) == 0);
  (void)pthread_mutexattr_destroy(&attr);
}

typedef struct dh_fixture_t {
  dh_impl_t impl;
  counting_allocator_t counting;
  cubert_allocator_t allocator;
  dh_rlock_t rlock;
  cubert_device_handle_t handle;
} dh_fixture_t;

static inline void dh_fixture_initialize(dh_fixture_t *f, dh_impl_t impl) {
  f->impl = impl;
  f->allocator = counting_allocator_initialize(&f->counting);
  dh_rlock_initialize(&f->rlock);
  f->handle.vtable = NULL;
  f->handle.self = NULL;
}

/* Create a handle of the fixture's kind over `context`. queue_capacity is
 * used by the runner only. */
static inline cubert_status_t dh_create(dh_fixture_t *f, void *context, uint32_t queue_capacity,
                                 cubert_device_handle_t *out_handle) {
  if (f->impl == DH_DIRECT) {
    cubert_lock_t lock;
    lock.self = &f->rlock;
    lock.lock = dh_rlock_lock;
    lock.unlock = dh_rlock_unlock;
    return cubert_device_handle_direct_create(f->allocator, context, lock, out_handle);
  }
  return cubert_device_handle_runner_create(f->allocator, context, queue_capacity, out_handle,
                                            NULL);
}

static inline void dh_open(dh_fixture_t *f, void *context, uint32_t queue_capacity) {
  CHECK_OK(dh_create(f, context, queue_capacity, &f->handle));
}

static inline void dh_close(dh_fixture_t *f) {
  f->handle.vtable->destroy(f->handle.self);
  f->handle.vtable = NULL;
  f->handle.self = NULL;
}

/* Checks that nothing leaked and releases the fixture. */
static inline void dh_fixture_finish(dh_fixture_t *f) {
  CHECK_EQ_I64(f->counting.live_blocks, 0);
  CHECK_EQ_U64(f->counting.bad_frees, 0);
  (void)pthread_mutex_destroy(&f->rlock.mutex);
  counting_allocator_destroy(&f->counting);
}

static inline cubert_status_t dh_submit(cubert_device_handle_t *h, cubert_device_task_fn_t fn,
                                 const void *payload, size_t size) {
  return h->vtable->submit(h->self, fn, payload, size);
}
static inline cubert_status_t dh_blocking(cubert_device_handle_t *h, cubert_device_task_fn_t fn,
                                   void *payload) {
  return h->vtable->submit_blocking(h->self, fn, payload);
}
static inline cubert_status_t dh_exclusive(cubert_device_handle_t *h, cubert_device_exclusive_fn_t fn,
                                    void *user) {
  return h->vtable->exclusive(h->self, fn, user);
}

/* One test body, registered for both implementations. */
#define DH_TEST_BOTH(name)                                                      \
  static void dh_body_##name(dh_impl_t impl);                                   \
  TEST(device_handle_direct_##name) { dh_body_##name(DH_DIRECT); }              \
  TEST(device_handle_runner_##name) { dh_body_##name(DH_RUNNER); }              \
  static void dh_body_##name(dh_impl_t impl)

/* ---- device state and tasks ------------------------------------------------ */

#define DH_PRODUCERS 4

/* The "service state" the tasks work on (the handle's context). */
typedef struct dh_state_t {
  int64_t counter;                   /* atomic: tests may peek from outside */
  cubert_device_handle_t *handle;    /* for tasks that call back into the device */
  int64_t last_seq[DH_PRODUCERS];    /* FIFO check (touched by tasks only) */
  uint32_t fifo_violations;
  uint32_t observe_failures;
  uint32_t checksum;
  int64_t inline_seen;               /* counter seen right after an inline call */
  pthread_t task_thread;
  uint32_t task_threads_differ;
  uint32_t task_thread_set;
  uint64_t stream_seen;
} dh_state_t;

static inline void dh_state_initialize(dh_state_t *s) {
  memset(s, 0, sizeof *s);
}

static inline int64_t dh_peek(dh_state_t *s) { return __atomic_load_n(&s->counter, __ATOMIC_ACQUIRE); }

static inline void task_add(void *context, void *payload) {
  int64_t delta;
  memcpy(&delta, payload, sizeof delta);
  __atomic_fetch_add(&((dh_state_t *)context)->counter, delta, __ATOMIC_ACQ_REL);
}

static inline void task_read(void *context, void *payload) {
  *(int64_t *)payload = dh_peek((dh_state_t *)context);
}

static inline void task_noop(void *context, void *payload) {
  (void)context;
  (void)payload;
}

static inline void dh_add(cubert_device_handle_t *h, int64_t delta) {
  CHECK_OK(dh_submit(h, task_add, &delta, sizeof delta));
}

static inline int64_t dh_read(cubert_device_handle_t *h) {
  int64_t v = -1;
  CHECK_OK(dh_blocking(h, task_read, &v));
  return v;
}

/* A task that holds the device until the test opens the gate. */
typedef struct dh_gate_t {
  uint32_t entered; /* atomic */
  uint32_t open;    /* atomic */
} dh_gate_t;

static inline void task_gate(void *context, void *payload) {
  dh_gate_t *gate;
  (void)context;
  memcpy(&gate, payload, sizeof gate);
  __atomic_store_n(&gate->entered, 1u, __ATOMIC_RELEASE);
  while (!__atomic_load_n(&gate->open, __ATOMIC_ACQUIRE)) cubert__os_sleep_ns(200000u);
}

static inline void dh_gate_submit(cubert_device_handle_t *h, dh_gate_t *gate) {
  gate->entered = 0;
  gate->open = 0;
  CHECK_OK(dh_submit(h, task_gate, &gate, sizeof gate));
}

static inline void dh_gate_wait_entered(dh_gate_t *gate) {
  while (!__atomic_load_n(&gate->entered, __ATOMIC_ACQUIRE)) cubert__os_sleep_ns(100000u);
}

static inline void dh_gate_open(dh_gate_t *gate) { __atomic_store_n(&gate->open, 1u, __ATOMIC_RELEASE); }

/* An exclusive section that fails (OUT_OF_RANGE). */
static inline cubert_status_t exclusive_fails(void *user) {
  (void)user;
  return CUBERT_STATUS_OUT_OF_RANGE;
}

#endif
