/* SPDX-License-Identifier: MIT */
/*
 * tests/os/test_device_handle_runner.c: the runner-thread device handle's
 * own guarantees (os/os_runner.c): tasks run on the runner
 * thread, submits after destroy began, a full queue, destroy from a task,
 * creation errors. The shared tests: test_device_handle.c.
 */
#include "device_handle_fixture.h"
#include "cubert/driver/device.h"

/* ---- runner-only tests ------------------------------------------------------- */

static void task_thread_id(void *context, void *payload) {
  dh_state_t *s = (dh_state_t *)context;
  (void)payload;
  if (!s->task_thread_set) {
    s->task_thread = pthread_self();
    s->task_thread_set = 1;
  } else if (!pthread_equal(s->task_thread, pthread_self())) {
    s->task_threads_differ++;
  }
}

/* Tasks of every kind run on one thread that is not the caller's. */
static cubert_status_t exclusive_thread_id(void *user) {
  task_thread_id(user, NULL);
  return CUBERT_STATUS_OK;
}

TEST(device_handle_runner_tasks_run_on_runner_thread) {
  dh_fixture_t f;
  dh_state_t s;
  dh_fixture_initialize(&f, DH_RUNNER);
  dh_state_initialize(&s);
  dh_open(&f, &s, 0);
  CHECK_OK(dh_submit(&f.handle, task_thread_id, NULL, 0));
  CHECK_OK(dh_blocking(&f.handle, task_thread_id, NULL));
  CHECK_OK(dh_exclusive(&f.handle, exclusive_thread_id, &s));
  CHECK(s.task_thread_set);
  CHECK_EQ_U64(s.task_threads_differ, 0);
  CHECK(!pthread_equal(s.task_thread, pthread_self()));
  dh_close(&f);
  dh_fixture_finish(&f);
}

/* After destroy began (another thread is inside destroy, the runner is held
 * by a gate task), submit / submit_blocking / exclusive return UNAVAILABLE;
 * every task accepted before still runs. */
static void *thread_destroy(void *arg) {
  dh_close((dh_fixture_t *)arg);
  return NULL;
}

TEST(device_handle_runner_submit_after_destroy_began) {
  dh_fixture_t f;
  dh_state_t s;
  dh_gate_t gate;
  pthread_t destroyer;
  cubert_device_handle_t h;
  cubert_status_t status = CUBERT_STATUS_OK;
  int64_t accepted = 0, one = 1;
  uint64_t start;
  dh_fixture_initialize(&f, DH_RUNNER);
  dh_state_initialize(&s);
  dh_open(&f, &s, 0);
  h = f.handle; /* the destroyer clears f.handle */
  dh_gate_submit(&h, &gate);
  dh_gate_wait_entered(&gate);
  CHECK(pthread_create(&destroyer, NULL, thread_destroy, &f) == 0);
  start = cubert__os_clock_ns();
  while (cubert__os_clock_ns() - start < 5000000000u) {
    status = dh_submit(&h, task_add, &one, sizeof one);
    if (status != CUBERT_STATUS_OK) break;
    accepted++;
    cubert__os_sleep_ns(100000u);
  }
  CHECK_STATUS(status, CUBERT_STATUS_UNAVAILABLE);
  CHECK_STATUS(dh_blocking(&h, task_noop, NULL), CUBERT_STATUS_UNAVAILABLE);
  CHECK_STATUS(dh_exclusive(&h, exclusive_fails, NULL), CUBERT_STATUS_UNAVAILABLE);
  CHECK_OK(h.vtable->flush_queue(h.self));
  CHECK_EQ_I64(dh_peek(&s), 0);
  dh_gate_open(&gate);
  CHECK(pthread_join(destroyer, NULL) == 0);
  CHECK_EQ_I64(dh_peek(&s), accepted);
  dh_fixture_finish(&f);
}

/* A full queue makes the producer wait (here: 2 cells, the gate task holds
 * one), and it resumes once the runner frees cells. */
typedef struct dh_progress_t {
  cubert_device_handle_t *handle;
  uint32_t done; /* atomic: submits returned */
  uint32_t failures;
} dh_progress_t;

static void *thread_submit_twenty(void *arg) {
  dh_progress_t *p = (dh_progress_t *)arg;
  int64_t one = 1;
  int i;
  for (i = 0; i < 20; i++) {
    if (dh_submit(p->handle, task_add, &one, sizeof one) != CUBERT_STATUS_OK) p->failures++;
    __atomic_fetch_add(&p->done, 1u, __ATOMIC_ACQ_REL);
  }
  return NULL;
}

TEST(device_handle_runner_full_queue_waits) {
  dh_fixture_t f;
  dh_state_t s;
  dh_gate_t gate;
  dh_progress_t p;
  pthread_t producer;
  dh_fixture_initialize(&f, DH_RUNNER);
  dh_state_initialize(&s);
  dh_open(&f, &s, 1); /* rounded up to 2 */
  dh_gate_submit(&f.handle, &gate);
  dh_gate_wait_entered(&gate);
  p.handle = &f.handle;
  p.done = 0;
  p.failures = 0;
  CHECK(pthread_create(&producer, NULL, thread_submit_twenty, &p) == 0);
  cubert__os_sleep_ns(50000000u);
  CHECK(__atomic_load_n(&p.done, __ATOMIC_ACQUIRE) <= 1u); /* one free cell */
  CHECK_EQ_I64(dh_peek(&s), 0);
  dh_gate_open(&gate);
  CHECK(pthread_join(producer, NULL) == 0);
  CHECK_EQ_U64(p.failures, 0);
  CHECK_EQ_I64(dh_read(&f.handle), 20);
  dh_close(&f);
  dh_fixture_finish(&f);
}

/* destroy called from inside one of the handle's own tasks: returns at
 * once, the runner drains what was queued and frees the handle. */
static void task_destroy_self(void *context, void *payload) {
  dh_state_t *s = (dh_state_t *)context;
  (void)payload;
  s->handle->vtable->destroy(s->handle->self);
  __atomic_fetch_add(&s->counter, 100, __ATOMIC_ACQ_REL);
}

static int64_t dh_live_blocks(counting_allocator_t *c) {
  int64_t v;
  (void)pthread_mutex_lock(&c->mutex);
  v = c->live_blocks;
  (void)pthread_mutex_unlock(&c->mutex);
  return v;
}

TEST(device_handle_runner_destroy_from_task) {
  dh_fixture_t f;
  dh_state_t s;
  dh_gate_t gate;
  uint64_t start;
  dh_fixture_initialize(&f, DH_RUNNER);
  dh_state_initialize(&s);
  dh_open(&f, &s, 0);
  s.handle = &f.handle;
  dh_gate_submit(&f.handle, &gate);
  CHECK_OK(dh_submit(&f.handle, task_destroy_self, NULL, 0));
  dh_add(&f.handle, 1);
  dh_gate_open(&gate);
  start = cubert__os_clock_ns();
  while (dh_live_blocks(&f.counting) != 0 && cubert__os_clock_ns() - start < 5000000000u)
    cubert__os_sleep_ns(100000u);
  CHECK_EQ_I64(dh_live_blocks(&f.counting), 0);
  CHECK_EQ_I64(dh_peek(&s), 101);
  dh_fixture_finish(&f);
}

/* create: bad arguments, queue bounds, thread-creation failure. */
TEST(device_handle_runner_create_errors) {
  dh_fixture_t f;
  dh_state_t s;
  cubert_device_handle_t h;
  dh_fixture_initialize(&f, DH_RUNNER);
  dh_state_initialize(&s);
  CHECK_STATUS(cubert_device_handle_runner_create(f.allocator, &s, 0, NULL, NULL),
               CUBERT_STATUS_INVALID_ARGUMENT);
  CHECK_STATUS(cubert_device_handle_runner_create(f.allocator, &s,
                                                  CUBERT_DEVICE_RUNNER_QUEUE_MAX + 1u, &h, NULL),
               CUBERT_STATUS_INVALID_ARGUMENT);
  CHECK_STATUS(cubert_device_handle_runner_create(f.allocator, &s, UINT32_MAX, &h, NULL),
               CUBERT_STATUS_INVALID_ARGUMENT);
  CHECK_EQ_I64(f.counting.live_blocks, 0);
  cubert__os_thread_inject_failure(1);
  CHECK_STATUS(cubert_device_handle_runner_create(f.allocator, &s, 0, &h, NULL),
               CUBERT_STATUS_RESOURCE_EXHAUSTED);
  CHECK_EQ_I64(f.counting.live_blocks, 0);
  /* the largest queue works */
  CHECK_OK(cubert_device_handle_runner_create(f.allocator, &s, CUBERT_DEVICE_RUNNER_QUEUE_MAX, &h,
                                              NULL));
  CHECK_OK(h.vtable->submit(h.self, task_add, &(int64_t){7}, sizeof(int64_t)));
  h.vtable->destroy(h.self);
  CHECK_EQ_I64(dh_peek(&s), 7);
  dh_fixture_finish(&f);
}
