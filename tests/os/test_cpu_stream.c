/* SPDX-License-Identifier: MIT */
/* The CPU server's simulated stream (backend-cpu/cpu/cpu_stream.h) on its own:
 * batched publication of committed ops, the idle worker's look at the
 * unpublished tail, waking a sleeping worker, waits from other threads, a
 * full ring, teardown. Ops count their runs in an atomic counter; the tests
 * read `completed` directly where a wait would publish (and so hide the
 * path under test). */
#include <pthread.h>
#include <time.h>

#include "test.h"
#include "counting_allocator.h"
#include "cpu/cpu_stream.h"
#include "cpu_stream_fixture.h"

static uint64_t g_runs; /* atomic */

static cubert_status_t count_run(cpu_stream_t *stream, void *payload, cubert_error_t *error) {
  (void)stream;
  (void)payload;
  (void)error;
  __atomic_add_fetch(&g_runs, 1u, __ATOMIC_SEQ_CST);
  return CUBERT_STATUS_OK;
}

static uint64_t runs(void) { return __atomic_load_n(&g_runs, __ATOMIC_SEQ_CST); }

static uint64_t commit_counting_op(cpu_stream_t *s) {
  cpu_op_t *op = cpu_stream_reserve(s);
  op->run = count_run;
  return cpu_stream_commit(s);
}

static void stream_start(cpu_stream_t *s, counting_allocator_t *ca) {
  cubert_allocator_t a = counting_allocator_initialize(ca);
  g_runs = 0;
  CHECK_OK(cpu_stream_initialize(s, a, 0, NULL, 0));
}

static void stream_stop(cpu_stream_t *s, counting_allocator_t *ca) {
  cpu_stream_deinitialize(s);
  CHECK_EQ_U64(ca->live_blocks, 0);
  CHECK_EQ_U64(ca->bad_frees, 0);
  counting_allocator_destroy(ca);
}

/* Fewer ops than a batch are not published (unless the worker slept and
 * the commit woke it), yet a spinning worker finds them (its periodic look
 * at the tail): work nobody flushes still runs. */
TEST(cpu_stream_unpublished_ops_run_without_a_flush) {
  static cpu_stream_t s;
  counting_allocator_t ca;
  uint64_t seq = 0;
  int i;
  stream_start(&s, &ca);
  for (i = 0; i < 3; i++) seq = commit_counting_op(&s);
  CHECK_EQ_U64(seq, 3);
  CHECK(completed_within(&s, 3));
  CHECK_EQ_U64(runs(), 3);
  stream_stop(&s, &ca);
}

/* The worker ran ops it pulled past `published`: it must not take the lag
 * for work (it once ran slots nobody had committed). */
TEST(cpu_stream_pulled_ops_are_not_run_twice_or_past_the_tail) {
  static cpu_stream_t s;
  counting_allocator_t ca;
  int i;
  stream_start(&s, &ca);
  for (i = 1; i <= 5; i++) {
    commit_counting_op(&s);
    CHECK(completed_within(&s, (uint64_t)i));
  }
  sleep_ms(20); /* the worker spins, pulls and sleeps with published < head */
  CHECK_EQ_U64(completed(&s), 5);
  CHECK_EQ_U64(runs(), 5);
  commit_counting_op(&s);
  CHECK(completed_within(&s, 6));
  sleep_ms(5);
  CHECK_EQ_U64(completed(&s), 6);
  CHECK_EQ_U64(runs(), 6);
  stream_stop(&s, &ca);
}

/* An idle worker sleeps after its spin; one commit (no flush) wakes it. */
TEST(cpu_stream_commit_wakes_a_sleeping_worker) {
  static cpu_stream_t s;
  counting_allocator_t ca;
  stream_start(&s, &ca);
  CHECK(asleep_within(&s));
  commit_counting_op(&s);
  CHECK(completed_within(&s, 1));
  CHECK_EQ_U64(runs(), 1);
  stream_stop(&s, &ca);
}

/* A full batch is published at once (fewer than CPU_STREAM_BATCH committed
 * ops are ever unpublished, wherever the batches start: a commit that finds
 * the worker asleep publishes early); a wait that leaves the ops to the
 * worker (one with a timeout) publishes the rest. */
TEST(cpu_stream_batches_publish_and_waits_publish_the_rest) {
  static cpu_stream_t s;
  counting_allocator_t ca;
  uint64_t seq = 0;
  int i;
  stream_start(&s, &ca);
  for (i = 0; i < 2 * CPU_STREAM_BATCH; i++) {
    seq = commit_counting_op(&s);
    CHECK(__atomic_load_n(&s.published, __ATOMIC_SEQ_CST) + CPU_STREAM_BATCH > seq);
  }
  CHECK(__atomic_load_n(&s.published, __ATOMIC_SEQ_CST) > CPU_STREAM_BATCH);
  seq = commit_counting_op(&s);
  CHECK_OK(cpu_stream_wait_point(&s, seq, 10ull * 1000000000ull));
  CHECK_EQ_U64(__atomic_load_n(&s.published, __ATOMIC_SEQ_CST), seq);
  CHECK_EQ_U64(runs(), 2 * CPU_STREAM_BATCH + 1);
  stream_stop(&s, &ca);
}

typedef struct waiter_t {
  cpu_stream_t *s;
  uint64_t seq;
  cubert_status_t status;
} waiter_t;

static void *wait_from_other_thread(void *arg) {
  waiter_t *w = (waiter_t *)arg;
  w->status = cpu_stream_wait_point(w->s, w->seq, 10ull * 1000000000ull);
  return NULL;
}

/* Another thread waiting on an unpublished point publishes it. */
TEST(cpu_stream_wait_from_another_thread_publishes) {
  static cpu_stream_t s;
  counting_allocator_t ca;
  waiter_t w;
  pthread_t t;
  stream_start(&s, &ca);
  w.s = &s;
  w.seq = commit_counting_op(&s);
  w.status = CUBERT_STATUS_INTERNAL;
  CHECK(pthread_create(&t, NULL, wait_from_other_thread, &w) == 0);
  CHECK(pthread_join(t, NULL) == 0);
  CHECK_OK(w.status);
  CHECK(cpu_stream_point_completed(&s, w.seq));
  stream_stop(&s, &ca);
}

/* More ops than the ring holds: the producer publishes before it waits for
 * room, so a full ring never waits on ops the worker cannot see. */
TEST(cpu_stream_full_ring_of_unpublished_ops_drains) {
  static cpu_stream_t s;
  counting_allocator_t ca;
  uint64_t seq = 0, i, n = CPU_STREAM_RING * 3 + 7;
  stream_start(&s, &ca);
  for (i = 0; i < n; i++) seq = commit_counting_op(&s);
  CHECK_OK(cpu_stream_wait_point(&s, seq, UINT64_MAX));
  CHECK_EQ_U64(runs(), n);
  stream_stop(&s, &ca);
}

/* Teardown runs every committed op, published or not. */
TEST(cpu_stream_teardown_runs_unpublished_ops) {
  static cpu_stream_t s;
  counting_allocator_t ca;
  int i;
  stream_start(&s, &ca);
  for (i = 0; i < 3; i++) commit_counting_op(&s);
  stream_stop(&s, &ca);
  CHECK_EQ_U64(runs(), 3);
}

/* The teardown's last commit (a page's stream-ordered free) lands just as
 * the idle worker looks at `running` and pulls: the hook commits an op and
 * stops the stream right between the two, once. Whether the worker was
 * spinning (the look every STREAM_PULL_SPINS) or asleep (woken by the
 * stop), the op runs before it exits. */
static uint32_t g_hook_calls; /* atomic */

static void commit_and_stop(cpu_stream_t *s) {
  if (__atomic_fetch_add(&g_hook_calls, 1u, __ATOMIC_SEQ_CST) != 0) return;
  commit_counting_op(s); /* the producer side: the test thread commits nothing meanwhile */
  __atomic_store_n(&s->running, 0, __ATOMIC_SEQ_CST);
}

TEST(cpu_stream_teardown_runs_an_op_committed_at_the_stop) {
  static cpu_stream_t s;
  counting_allocator_t ca;
  int round;
  for (round = 0; round < 2; round++) {
    stream_start(&s, &ca);
    __atomic_store_n(&g_hook_calls, 0u, __ATOMIC_SEQ_CST);
    if (round == 0) { /* the worker spinning: let it reach its look */
      commit_counting_op(&s);
      CHECK(completed_within(&s, 1));
      g_runs = 0;
    } else { /* asleep: the stop's broadcast wakes it */
      sleep_ms(5);
    }
    __atomic_store_n(&s.test_before_pull, commit_and_stop, __ATOMIC_RELEASE);
    while (round == 0 && __atomic_load_n(&g_hook_calls, __ATOMIC_SEQ_CST) == 0 &&
           __atomic_load_n(&s.sleeping, __ATOMIC_SEQ_CST) == 0)
      sleep_ms(1);
    stream_stop(&s, &ca);
    CHECK(__atomic_load_n(&g_hook_calls, __ATOMIC_SEQ_CST) >= 1u);
    CHECK_EQ_U64(runs(), 1);
  }
}

/* ---- who runs the ops: the worker, or a waiter that helps ------------------------- */

/* Ops that check they run once each, in order, and note the thread. */
#define RECORDED 64
static pthread_t g_ran_on[RECORDED];
static uint64_t g_out_of_order; /* atomic */

static cubert_status_t record_run(cpu_stream_t *stream, void *payload, cubert_error_t *error) {
  uint64_t seq = *(const uint64_t *)payload;
  uint64_t n = __atomic_add_fetch(&g_runs, 1u, __ATOMIC_SEQ_CST);
  (void)stream;
  (void)error;
  if (n != seq) __atomic_add_fetch(&g_out_of_order, 1u, __ATOMIC_SEQ_CST);
  if (n <= RECORDED) g_ran_on[n - 1] = pthread_self();
  return CUBERT_STATUS_OK;
}

static uint64_t commit_recording_op(cpu_stream_t *s) {
  cpu_op_t *op = cpu_stream_reserve(s);
  op->run = record_run;
  *(uint64_t *)cpu_op_payload(op) = s->tail + 1; /* the op's sequence number */
  return cpu_stream_commit(s);
}

static void hold_worker(cpu_stream_t *s, uint32_t hold) {
  __atomic_store_n(&s->test_hold_worker, hold, __ATOMIC_SEQ_CST);
}

/* A worker that is not scheduled (held): a waiter without a timeout runs the
 * ops up to its point itself, in order, on its own thread; the ops after
 * its point stay queued. */
TEST(cpu_stream_waiter_runs_the_ops_while_the_worker_is_not_scheduled) {
  static cpu_stream_t s;
  counting_allocator_t ca;
  uint64_t seq = 0;
  int i;
  stream_start(&s, &ca);
  g_out_of_order = 0;
  hold_worker(&s, 1);
  for (i = 0; i < 3; i++) seq = commit_recording_op(&s);
  (void)commit_recording_op(&s); /* after the point */
  CHECK_OK(cpu_stream_wait_point(&s, seq, UINT64_MAX));
  CHECK_EQ_U64(runs(), 3);
  CHECK_EQ_U64(completed(&s), 3);
  CHECK_EQ_U64(__atomic_load_n(&s.helped, __ATOMIC_SEQ_CST), 3);
  for (i = 0; i < 3; i++) CHECK(pthread_equal(g_ran_on[i], pthread_self()));
  CHECK_EQ_U64(__atomic_load_n(&s.consumer, __ATOMIC_SEQ_CST), 0); /* the role is given back */
  sleep_ms(5);
  CHECK_EQ_U64(runs(), 3); /* the 4th waits for the worker */
  hold_worker(&s, 0);
  cpu_stream_publish(&s);
  CHECK(completed_within(&s, 4));
  CHECK(!pthread_equal(g_ran_on[3], pthread_self()));
  CHECK_EQ_U64(g_out_of_order, 0);
  stream_stop(&s, &ca);
}

/* A wait with a timeout never runs ops (one could outlast the timeout): with
 * the worker held it times out and the op is still queued. */
TEST(cpu_stream_wait_with_a_timeout_leaves_the_ops_to_the_worker) {
  static cpu_stream_t s;
  counting_allocator_t ca;
  uint64_t seq;
  stream_start(&s, &ca);
  hold_worker(&s, 1);
  seq = commit_recording_op(&s);
  CHECK_STATUS(cpu_stream_wait_point(&s, seq, 20ull * 1000000ull), CUBERT_STATUS_DEADLINE_EXCEEDED);
  CHECK_EQ_U64(runs(), 0);
  CHECK_EQ_U64(__atomic_load_n(&s.helped, __ATOMIC_SEQ_CST), 0);
  CHECK_STATUS(cpu_stream_wait_point(&s, seq, 0), CUBERT_STATUS_DEADLINE_EXCEEDED);
  hold_worker(&s, 0);
  CHECK_OK(cpu_stream_wait_point(&s, seq, 10ull * 1000000000ull)); /* publishes, wakes the worker */
  CHECK_EQ_U64(runs(), 1);
  CHECK(!pthread_equal(g_ran_on[0], pthread_self()));
  stream_stop(&s, &ca);
}

static void *wait_forever(void *arg) {
  waiter_t *w = (waiter_t *)arg;
  w->status = cpu_stream_wait_point(w->s, w->seq, UINT64_MAX);
  return NULL;
}

/* A worker_only stream (collectives): a waiter never runs its ops, it waits
 * for the worker. */
TEST(cpu_stream_worker_only_stream_is_left_to_its_worker) {
  static cpu_stream_t s;
  counting_allocator_t ca;
  waiter_t w;
  pthread_t t;
  stream_start(&s, &ca);
  cpu_stream_set_worker_only(&s);
  hold_worker(&s, 1);
  w.s = &s;
  w.seq = commit_recording_op(&s);
  w.status = CUBERT_STATUS_INTERNAL;
  CHECK(pthread_create(&t, NULL, wait_forever, &w) == 0);
  sleep_ms(20);
  CHECK_EQ_U64(runs(), 0);
  hold_worker(&s, 0);
  cpu_stream_publish(&s); /* clearing the hold wakes nothing */
  CHECK(pthread_join(t, NULL) == 0);
  CHECK_OK(w.status);
  CHECK_EQ_U64(runs(), 1);
  CHECK(!pthread_equal(g_ran_on[0], t));
  CHECK_EQ_U64(__atomic_load_n(&s.helped, __ATOMIC_SEQ_CST), 0);
  stream_stop(&s, &ca);
}

static cubert_status_t slow_run(cpu_stream_t *stream, void *payload, cubert_error_t *error) {
  sleep_ms(30);
  return record_run(stream, payload, error);
}

/* The worker went to sleep while a helping waiter held the role (it cannot
 * claim then, so it sleeps even with work queued; commits that find it
 * asleep wake it, it finds the role held and sleeps again); the helper,
 * done with its point, gives the role back with an op left after it and
 * must wake the worker: nothing else will (nobody publishes, nobody waits). */
TEST(cpu_stream_helper_wakes_the_sleeping_worker_for_the_ops_after_its_point) {
  static cpu_stream_t s;
  counting_allocator_t ca;
  waiter_t w;
  pthread_t t;
  cpu_op_t *op;
  int i;
  stream_start(&s, &ca);
  g_out_of_order = 0;
  hold_worker(&s, 1);
  CHECK(asleep_within(&s));
  op = cpu_stream_reserve(&s);
  op->run = slow_run;
  *(uint64_t *)cpu_op_payload(op) = 1;
  w.s = &s;
  w.seq = cpu_stream_commit(&s);
  w.status = CUBERT_STATUS_INTERNAL;
  CHECK(pthread_create(&t, NULL, wait_forever, &w) == 0);
  for (i = 0; i < 5000 && !__atomic_load_n(&s.consumer, __ATOMIC_SEQ_CST); i++) sleep_ms(1);
  CHECK(__atomic_load_n(&s.consumer, __ATOMIC_SEQ_CST)); /* the waiter runs the slow op */
  (void)commit_recording_op(&s);                         /* op 2: after the waiter's point */
  sleep_ms(2);             /* the worker, woken by the commit, finds the role held */
  hold_worker(&s, 0);      /* wakes nothing */
  CHECK(pthread_join(t, NULL) == 0);
  CHECK_OK(w.status);
  CHECK(pthread_equal(g_ran_on[0], t));
  CHECK(completed_within(&s, 2)); /* the helper's role_release woke the worker */
  CHECK(!pthread_equal(g_ran_on[1], t));
  CHECK_EQ_U64(g_out_of_order, 0);
  stream_stop(&s, &ca);
}

/* A producer facing a full ring while the worker is not scheduled (held):
 * it runs a quarter of the ring itself instead of waiting for the worker. */
TEST(cpu_stream_full_ring_producer_runs_ops_while_the_worker_is_not_scheduled) {
  static cpu_stream_t s;
  counting_allocator_t ca;
  uint64_t seq = 0, i, n = CPU_STREAM_RING * 3;
  stream_start(&s, &ca);
  g_out_of_order = 0;
  hold_worker(&s, 1);
  for (i = 0; i < n; i++) seq = commit_recording_op(&s);
  CHECK_EQ_U64(seq, n);
  /* the ring holds at most CPU_STREAM_RING unrun ops: the producer ran the rest */
  CHECK(runs() >= n - CPU_STREAM_RING);
  CHECK_EQ_U64(__atomic_load_n(&s.helped, __ATOMIC_SEQ_CST), runs());
  CHECK(pthread_equal(g_ran_on[0], pthread_self()));
  CHECK_EQ_U64(__atomic_load_n(&s.consumer, __ATOMIC_SEQ_CST), 0);
  hold_worker(&s, 0);
  CHECK_OK(cpu_stream_wait_point(&s, seq, UINT64_MAX));
  CHECK_EQ_U64(runs(), n);
  CHECK_EQ_U64(g_out_of_order, 0);
  stream_stop(&s, &ca);
}

/* ---- stress: waiters, helpers and the worker under spinning threads --------------- */

static int g_busy_stop; /* atomic */

static void *busy_spin(void *arg) {
  volatile unsigned long x = 0;
  (void)arg;
  while (!__atomic_load_n(&g_busy_stop, __ATOMIC_RELAXED)) x++;
  return NULL;
}

typedef struct stress_waiter_t {
  cpu_stream_t *s;
  uint64_t last;
  uint64_t waits;
  uint64_t seed;
  int stop; /* atomic */
  cubert_status_t status;
} stress_waiter_t;

/* Waits on committed points (read from tail) until told to stop; some
 * without a timeout (they help), some with one (they only wait). */
static void *stress_wait(void *arg) {
  stress_waiter_t *w = (stress_waiter_t *)arg;
  w->status = CUBERT_STATUS_OK;
  while (!__atomic_load_n(&w->stop, __ATOMIC_SEQ_CST)) {
    uint64_t seq = __atomic_load_n(&w->s->tail, __ATOMIC_ACQUIRE);
    cubert_status_t st;
    w->seed = w->seed * 6364136223846793005ull + 1442695040888963407ull;
    if (seq == 0) continue;
    st = cpu_stream_wait_point(w->s, seq, (w->seed >> 60) < 4 ? 30ull * 1000000000ull : UINT64_MAX);
    if (st != CUBERT_STATUS_OK) {
      w->status = st;
      return NULL;
    }
    w->last = seq;
    w->waits++;
  }
  return NULL;
}

/* One producer committing 20,000 ops (each checks it runs once, in order),
 * itself waiting now and then (then never: full rings, which it helps
 * drain), three more threads waiting on the tail, and
 * 2 x CPUs threads spinning without ever yielding: every op runs once, in
 * order, every wait returns (a lost wake-up hangs a waiter: the test's
 * timeout), the role ends free. */
TEST_EX(cpu_stream_adaptive_waits_lose_no_wake_up_under_busy_threads, 120) {
  static cpu_stream_t s;
  counting_allocator_t ca;
  pthread_t busy[32], th[3];
  stress_waiter_t w[3];
  uint32_t nbusy = 2 * cubert__os_cpu_count(), i;
  uint64_t n = 20000, k, seq = 0, helped;
  if (nbusy > 32) nbusy = 32;
  stream_start(&s, &ca);
  g_out_of_order = 0;
  g_busy_stop = 0;
  for (i = 0; i < nbusy; i++) CHECK(pthread_create(&busy[i], NULL, busy_spin, NULL) == 0);
  for (i = 0; i < 3; i++) {
    w[i].s = &s;
    w[i].last = w[i].waits = 0;
    w[i].seed = i + 1;
    w[i].stop = 0;
    w[i].status = CUBERT_STATUS_INTERNAL;
    CHECK(pthread_create(&th[i], NULL, stress_wait, &w[i]) == 0);
  }
  for (k = 1; k <= n; k++) {
    cpu_op_t *op = cpu_stream_reserve(&s);
    op->run = record_run;
    *(uint64_t *)cpu_op_payload(op) = k;
    seq = cpu_stream_commit(&s);
    /* the first half waits now and then; the second fills the ring */
    if (k % 7 == 0 && k < n / 2) CHECK_OK(cpu_stream_wait_point(&s, seq, UINT64_MAX));
    if (k % 1000 == 0) sleep_ms(1); /* let the worker fall asleep now and then */
  }
  CHECK_OK(cpu_stream_wait_point(&s, seq, UINT64_MAX));
  for (i = 0; i < 3; i++) __atomic_store_n(&w[i].stop, 1, __ATOMIC_SEQ_CST);
  for (i = 0; i < 3; i++) {
    CHECK(pthread_join(th[i], NULL) == 0);
    CHECK_OK(w[i].status);
    CHECK(w[i].waits > 0);
  }
  __atomic_store_n(&g_busy_stop, 1, __ATOMIC_SEQ_CST);
  for (i = 0; i < nbusy; i++) CHECK(pthread_join(busy[i], NULL) == 0);
  CHECK_EQ_U64(runs(), n);
  CHECK_EQ_U64(completed(&s), n);
  CHECK_EQ_U64(g_out_of_order, 0);
  CHECK_EQ_U64(__atomic_load_n(&s.consumer, __ATOMIC_SEQ_CST), 0);
  helped = __atomic_load_n(&s.helped, __ATOMIC_SEQ_CST);
  CHECK(helped <= n);
  stream_stop(&s, &ca);
}
