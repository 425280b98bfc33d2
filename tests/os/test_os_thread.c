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

/* ---- adaptive waiting (cubert__os_backoff_wait) ------------------------------------ */

typedef struct look_t {
  uint32_t calls;
  uint32_t ready_at;    /* ready from this call on (0: never) */
  const uint32_t *flag; /* or: ready once *flag (atomic) */
} look_t;

static int look_ready(void *arg) {
  look_t *l = (look_t *)arg;
  l->calls++;
  if (l->flag) return __atomic_load_n(l->flag, __ATOMIC_ACQUIRE) != 0;
  return l->ready_at && l->calls >= l->ready_at;
}

static look_t look_at(uint32_t ready_at) {
  look_t l;
  l.calls = 0;
  l.ready_at = ready_at;
  l.flag = NULL;
  return l;
}

/* A condition already true: 1 after one look, nothing else done. */
TEST(host_backoff_ready_at_once) {
  cubert_os_backoff_t b;
  look_t l = look_at(1);
  cubert__os_backoff_initialize(&b);
  CHECK_EQ_U64(cubert__os_backoff_spin_ns(&b), CUBERT_OS_BACKOFF_SPIN_MAX_NS);
  CHECK_EQ_I64(cubert__os_backoff_wait(&b, look_ready, &l, UINT64_MAX), 1);
  CHECK_EQ_U64(l.calls, 1);
  CHECK_EQ_U64(cubert__os_backoff_spin_ns(&b), CUBERT_OS_BACKOFF_SPIN_MAX_NS);
}

/* A condition that never holds: 0 (the caller blocks) after spinning for
 * the budget (or less, when the spinner was descheduled: it then sleeps at
 * once and the budget halved). */
TEST(host_backoff_gives_up_after_the_spin) {
  cubert_os_backoff_t b;
  look_t l = look_at(0);
  uint64_t t0, t1;
  cubert__os_backoff_initialize(&b);
  t0 = cubert__os_clock_ns();
  CHECK_EQ_I64(cubert__os_backoff_wait(&b, look_ready, &l, UINT64_MAX), 0);
  t1 = cubert__os_clock_ns();
  CHECK(l.calls > 64);
  if (__atomic_load_n(&b.preempted, __ATOMIC_RELAXED) == 0) {
    CHECK(t1 - t0 >= CUBERT_OS_BACKOFF_SPIN_MAX_NS);
    CHECK_EQ_U64(cubert__os_backoff_spin_ns(&b), CUBERT_OS_BACKOFF_SPIN_MAX_NS);
  } else {
    CHECK_EQ_U64(cubert__os_backoff_spin_ns(&b), CUBERT_OS_BACKOFF_SPIN_MAX_NS / 2);
  }
}

/* A deadline in the past ends the wait at the first look at the clock. */
TEST(host_backoff_deadline_ends_the_wait) {
  cubert_os_backoff_t b;
  look_t l = look_at(0);
  cubert__os_backoff_initialize(&b);
  CHECK_EQ_I64(cubert__os_backoff_wait(&b, look_ready, &l, cubert__os_clock_ns()), 0);
  CHECK(l.calls <= 65); /* the first look, then 64 spins to the first clock read */
}

/* A condition met during the spin without a gap grows a shrunk budget back
 * (up to the maximum); a budget out of range (a zeroed backoff) counts as
 * the maximum. Growth needs a spin that was not descheduled: on a loaded
 * machine a few tries. */
TEST(host_backoff_grows_back_when_spins_succeed) {
  cubert_os_backoff_t b;
  int i, grew = 0;
  b.preempted = 0;
  for (i = 0; i < 200 && !grew; i++) {
    look_t l = look_at(10);
    __atomic_store_n(&b.spin_ns, CUBERT_OS_BACKOFF_SPIN_MIN_NS, __ATOMIC_RELAXED);
    CHECK_EQ_I64(cubert__os_backoff_wait(&b, look_ready, &l, UINT64_MAX), 1);
    grew = cubert__os_backoff_spin_ns(&b) == 2 * CUBERT_OS_BACKOFF_SPIN_MIN_NS;
  }
  CHECK(grew);
  for (i = 0; i < 200; i++) {
    look_t l = look_at(0);
    uint64_t t0;
    b.spin_ns = 0;
    b.preempted = 0;
    t0 = cubert__os_clock_ns();
    CHECK_EQ_I64(cubert__os_backoff_wait(&b, look_ready, &l, UINT64_MAX), 0);
    if (b.preempted) continue; /* descheduled: try again */
    CHECK(cubert__os_clock_ns() - t0 >= CUBERT_OS_BACKOFF_SPIN_MAX_NS); /* spun the maximum */
    break;
  }
  CHECK(i < 200);
}

static uint32_t g_hog_stop; /* atomic */

static void hog_main(void *arg) {
  volatile uint64_t x = 0;
  (void)arg;
  while (!__atomic_load_n(&g_hog_stop, __ATOMIC_RELAXED)) x++;
}

/* Oversubscribed: 2 threads per CPU that never yield. A spinner is then
 * descheduled during its spin now and then (the scheduler's time slices
 * are shorter than the waits below), which halves the budget each time:
 * it shrinks, down to the minimum, and a spin still sees a condition that
 * another thread set. */
TEST_EX(host_backoff_shrinks_when_the_machine_is_oversubscribed, 120) {
  cubert_os_backoff_t b;
  cubert_os_thread_t hogs[64];
  uint32_t n = 2 * cubert__os_cpu_count(), i;
  uint64_t t0 = cubert__os_clock_ns();
  if (n > 64) n = 64;
  cubert__os_backoff_initialize(&b);
  g_hog_stop = 0;
  for (i = 0; i < n; i++) CHECK_OK(cubert__os_thread_create(&hogs[i], hog_main, NULL, 0));
  /* waits that never succeed, until the budget is at its minimum (30 s at most) */
  while (cubert__os_backoff_spin_ns(&b) > CUBERT_OS_BACKOFF_SPIN_MIN_NS &&
         cubert__os_clock_ns() - t0 < 30000000000ull) {
    look_t l = look_at(0);
    CHECK_EQ_I64(cubert__os_backoff_wait(&b, look_ready, &l, UINT64_MAX), 0);
  }
  CHECK_MSG(cubert__os_backoff_spin_ns(&b) == CUBERT_OS_BACKOFF_SPIN_MIN_NS,
            "spin budget %u ns among %u spinning threads (%u preempted spins)",
            (unsigned)cubert__os_backoff_spin_ns(&b), (unsigned)n,
            (unsigned)__atomic_load_n(&b.preempted, __ATOMIC_RELAXED));
  CHECK(__atomic_load_n(&b.preempted, __ATOMIC_RELAXED) >= 5); /* 50 us -> 1 us: 6 halvings */
  {
    look_t l = look_at(0);
    uint32_t flag = 1;
    l.flag = &flag;
    CHECK_EQ_I64(cubert__os_backoff_wait(&b, look_ready, &l, UINT64_MAX), 1);
  }
  __atomic_store_n(&g_hog_stop, 1u, __ATOMIC_RELAXED);
  for (i = 0; i < n; i++) cubert__os_thread_join(&hogs[i]);
}
