/* SPDX-License-Identifier: MIT */
/*
 * tests/os/test_os_thread.c: the hosted threading wrappers
 * (os/os_thread.h).
 */
#include "test.h"
#include "os/os_thread.h"

typedef struct counter_t {
  cubert_os_mutex_t mutex;
  cubert_os_cond_t cond;
  uint64_t value;
  uint32_t started;
} counter_t;

static void counter_main(void *arg) {
  counter_t *c = (counter_t *)arg;
  int i;
  cubert__os_mutex_lock(&c->mutex);
  c->started++;
  cubert__os_cond_broadcast(&c->cond);
  cubert__os_mutex_unlock(&c->mutex);
  for (i = 0; i < 10000; i++) {
    cubert__os_mutex_lock(&c->mutex);
    c->value++;
    cubert__os_mutex_unlock(&c->mutex);
  }
}

TEST(host_thread_create_join_mutex) {
  counter_t c;
  cubert_os_thread_t t[4];
  int i;
  c.value = 0;
  c.started = 0;
  CHECK_OK(cubert__os_mutex_initialize(&c.mutex));
  CHECK_OK(cubert__os_cond_initialize(&c.cond));
  for (i = 0; i < 4; i++)
    CHECK_OK(cubert__os_thread_create(&t[i], counter_main, &c, i == 0 ? 0 : (size_t)1 << 20));
  /* wait (cond) until all four have started */
  cubert__os_mutex_lock(&c.mutex);
  while (c.started < 4) cubert__os_cond_wait(&c.cond, &c.mutex);
  cubert__os_mutex_unlock(&c.mutex);
  for (i = 0; i < 4; i++) cubert__os_thread_join(&t[i]);
  CHECK_EQ_U64(c.value, 40000);
  cubert__os_cond_deinitialize(&c.cond);
  cubert__os_mutex_deinitialize(&c.mutex);
}

TEST(host_thread_timed_wait_deadline) {
  cubert_os_mutex_t m;
  cubert_os_cond_t cv;
  uint64_t t0, t1;
  CHECK_OK(cubert__os_mutex_initialize(&m));
  CHECK_OK(cubert__os_cond_initialize(&cv));
  cubert__os_mutex_lock(&m);
  t0 = cubert__os_clock_ns();
  /* spurious wake-ups may return OK early: loop until the deadline reports */
  while (cubert__os_cond_timed_wait(&cv, &m, 5000000u) != CUBERT_STATUS_DEADLINE_EXCEEDED) {
  }
  t1 = cubert__os_clock_ns();
  CHECK(t1 - t0 >= 5000000u);
  CHECK_STATUS(cubert__os_cond_timed_wait(&cv, &m, 0), CUBERT_STATUS_DEADLINE_EXCEEDED);
  cubert__os_mutex_unlock(&m);
  cubert__os_cond_deinitialize(&cv);
  cubert__os_mutex_deinitialize(&m);
}

typedef struct signal_arg_t {
  cubert_os_mutex_t mutex;
  cubert_os_cond_t cond;
  int flag;
} signal_arg_t;

static void signal_main(void *p) {
  signal_arg_t *a = (signal_arg_t *)p;
  cubert__os_sleep_ns(1000000);
  cubert__os_mutex_lock(&a->mutex);
  a->flag = 1;
  cubert__os_cond_signal(&a->cond);
  cubert__os_mutex_unlock(&a->mutex);
}

TEST(host_thread_timed_wait_woken) {
  signal_arg_t a;
  cubert_os_thread_t t;
  cubert_status_t s = CUBERT_STATUS_OK;
  a.flag = 0;
  CHECK_OK(cubert__os_mutex_initialize(&a.mutex));
  CHECK_OK(cubert__os_cond_initialize(&a.cond));
  CHECK_OK(cubert__os_thread_create(&t, signal_main, &a, 0));
  cubert__os_mutex_lock(&a.mutex);
  while (!a.flag && s == CUBERT_STATUS_OK)
    s = cubert__os_cond_timed_wait(&a.cond, &a.mutex, 30000000000ull);
  CHECK_OK(s);
  CHECK(a.flag == 1);
  cubert__os_mutex_unlock(&a.mutex);
  cubert__os_thread_join(&t);
  /* "no limit" */
  cubert__os_cond_deinitialize(&a.cond);
  cubert__os_mutex_deinitialize(&a.mutex);
}

TEST(host_thread_clock_cpu_count_sleep) {
  uint64_t a = cubert__os_clock_ns(), b;
  cubert__os_sleep_ns(2000000);
  b = cubert__os_clock_ns();
  CHECK(b >= a + 2000000u);
  CHECK(cubert__os_cpu_count() >= 1);
  cubert__os_thread_yield();
  cubert__os_cpu_relax();
}

static void nothing_main(void *arg) { (void)arg; }

TEST(host_thread_create_errors_and_injection) {
  cubert_os_thread_t t, u;
  CHECK_STATUS(cubert__os_thread_create(NULL, nothing_main, NULL, 0),
               CUBERT_STATUS_INVALID_ARGUMENT);
  CHECK_STATUS(cubert__os_thread_create(&t, NULL, NULL, 0), CUBERT_STATUS_INVALID_ARGUMENT);
  CHECK_STATUS(cubert__os_thread_create(&t, nothing_main, NULL, SIZE_MAX),
               CUBERT_STATUS_INVALID_ARGUMENT);
  /* the 2nd create from now fails, once */
  cubert__os_thread_inject_failure(2);
  CHECK_OK(cubert__os_thread_create(&t, nothing_main, NULL, 0));
  CHECK_STATUS(cubert__os_thread_create(&u, nothing_main, NULL, 0),
               CUBERT_STATUS_RESOURCE_EXHAUSTED);
  cubert__os_thread_join(&t);
  CHECK_OK(cubert__os_thread_create(&u, nothing_main, NULL, 0));
  cubert__os_thread_join(&u);
  CHECK_STATUS(cubert__os_mutex_initialize(NULL), CUBERT_STATUS_INVALID_ARGUMENT);
  CHECK_STATUS(cubert__os_cond_initialize(NULL), CUBERT_STATUS_INVALID_ARGUMENT);
}
