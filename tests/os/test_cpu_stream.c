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

static uint64_t g_runs; /* atomic */

static cubert_status_t count_run(cpu_stream_t *stream, void *payload, cubert_error_t *error) {
  (void)stream;
  (void)payload;
  (void)error;
  __atomic_add_fetch(&g_runs, 1u, __ATOMIC_SEQ_CST);
  return CUBERT_STATUS_OK;
}

static uint64_t runs(void) { return __atomic_load_n(&g_runs, __ATOMIC_SEQ_CST); }
static uint64_t completed(cpu_stream_t *s) { return __atomic_load_n(&s->completed, __ATOMIC_SEQ_CST); }

static uint64_t commit_counting_op(cpu_stream_t *s) {
  cpu_op_t *op = cpu_stream_reserve(s);
  op->run = count_run;
  return cpu_stream_commit(s);
}

static void sleep_ms(long ms) {
  struct timespec ts;
  ts.tv_sec = ms / 1000;
  ts.tv_nsec = (ms % 1000) * 1000000L;
  nanosleep(&ts, NULL);
}

/* Poll (without publishing) until `completed` reaches seq; false after 10 s. */
static int completed_within(cpu_stream_t *s, uint64_t seq) {
  int i;
  for (i = 0; i < 10000; i++) {
    if (completed(s) >= seq) return 1;
    sleep_ms(1);
  }
  return 0;
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
  int i;
  stream_start(&s, &ca);
  for (i = 0; i < 5000 && !__atomic_load_n(&s.sleeping, __ATOMIC_SEQ_CST); i++) sleep_ms(1);
  CHECK(__atomic_load_n(&s.sleeping, __ATOMIC_SEQ_CST));
  commit_counting_op(&s);
  CHECK(completed_within(&s, 1));
  CHECK_EQ_U64(runs(), 1);
  stream_stop(&s, &ca);
}

/* A full batch is published at once (fewer than CPU_STREAM_BATCH committed
 * ops are ever unpublished, wherever the batches start: a commit that finds
 * the worker asleep publishes early); a wait publishes the rest. */
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
  CHECK_OK(cpu_stream_wait_point(&s, seq, UINT64_MAX));
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
