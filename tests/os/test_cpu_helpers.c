/* SPDX-License-Identifier: MIT */
/* The CPU device's stream helpers (backend-cpu/cpu/cpu_helpers.h) over bare
 * streams: a helper runs the ops of a cold stream whose worker sleeps, and
 * the commits wake nobody; it never blocks on a cross-stream wait and leaves
 * long ops to the worker, staying free for other streams; a hot stream's
 * worker is woken by its producer; collective (worker_only) streams are
 * never served; streams leave the helpers at teardown with ops in flight;
 * a helper thread that cannot start fails the create and leaves nothing;
 * the client's option and variable. */
#include <pthread.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "test.h"
#include "counting_allocator.h"
#include "cpu/cpu_helpers.h"
#include "cpu/cpu_stream.h"
#include "cpu_stream_fixture.h"
#include "cpu/cpu_executor.h"
#include "cpu/cpu_driver.h"
#include "cubert/cpu.h"
#include "os/os_thread.h"

static uint64_t g_runs;    /* atomic */
static uint32_t g_gate;    /* atomic: gated ops spin while 0 */
static uint32_t g_in_gate; /* atomic: gated ops waiting at the gate */

static cubert_status_t count_run(cpu_stream_t *stream, void *payload, cubert_error_t *error) {
  (void)stream;
  (void)payload;
  (void)error;
  __atomic_add_fetch(&g_runs, 1u, __ATOMIC_SEQ_CST);
  return CUBERT_STATUS_OK;
}

/* An op that runs until the test opens the gate (a long kernel). */
static cubert_status_t gated_run(cpu_stream_t *stream, void *payload, cubert_error_t *error) {
  __atomic_add_fetch(&g_in_gate, 1u, __ATOMIC_SEQ_CST);
  while (!__atomic_load_n(&g_gate, __ATOMIC_SEQ_CST)) cubert__os_sleep_ns(100000);
  __atomic_sub_fetch(&g_in_gate, 1u, __ATOMIC_SEQ_CST);
  return count_run(stream, payload, error);
}

static uint64_t runs(void) { return __atomic_load_n(&g_runs, __ATOMIC_SEQ_CST); }
static uint64_t helper_ops(cpu_stream_t *s) { return __atomic_load_n(&s->helper_ops, __ATOMIC_SEQ_CST); }
static uint64_t wakes(cpu_stream_t *s) { return __atomic_load_n(&s->publish_wakes, __ATOMIC_SEQ_CST); }

static uint64_t commit_op(cpu_stream_t *s, cpu_op_fn_t run) {
  cpu_op_t *op = cpu_stream_reserve(s);
  op->run = run;
  return cpu_stream_commit(s);
}

static uint64_t commit_wait(cpu_stream_t *s, cpu_stream_t *on, uint64_t seq) {
  cpu_op_t *op = cpu_stream_reserve(s);
  op->wait_stream = on;
  op->wait_seq = seq;
  return cpu_stream_commit(s);
}

/* Asleep past its first, bounded (1 ms) sleep: only a wake-up or a helper
 * runs its ops now. */
static int deep_asleep_within(cpu_stream_t *s) {
  if (!asleep_within(s)) return 0;
  sleep_ms(3);
  return __atomic_load_n(&s->sleeping, __ATOMIC_SEQ_CST) != 0;
}

static int in_gate_within(uint32_t n) {
  int i;
  for (i = 0; i < 10000 && __atomic_load_n(&g_in_gate, __ATOMIC_SEQ_CST) < n; i++) sleep_ms(1);
  return __atomic_load_n(&g_in_gate, __ATOMIC_SEQ_CST) >= n;
}

static void reset(void) {
  g_runs = 0;
  g_gate = 0;
  g_in_gate = 0;
}

/* A cold stream: its producer's last commit found the worker asleep (one op
 * now and then), so the next commit that finds it asleep leaves the stream
 * to the helpers instead of waking the worker (a hot stream's). */
static void cold(cpu_stream_t *s) { s->producer_saw_asleep = 1; }

static void start(cpu_stream_t *s, cubert_allocator_t a, uint32_t slot, cpu_helpers_t *h) {
  CHECK_OK(cpu_stream_initialize(s, a, slot, NULL, 0));
  if (h) cpu_helpers_register(h, s);
}

/* Each op committed on a cold stream while the worker sleeps is run by a
 * helper; no commit wakes the worker (its first sleep alone is bounded, at
 * 1 ms, which the helper beats by far: most of the ops, and at least one,
 * are the helper's). */
TEST(cpu_helpers_run_the_ops_of_a_stream_whose_worker_sleeps) {
  static cpu_stream_t s;
  counting_allocator_t ca;
  cubert_allocator_t a = counting_allocator_initialize(&ca);
  cpu_helpers_t *h = NULL;
  uint64_t seq = 0;
  int i;
  reset();
  CHECK_OK(cpu_helpers_create(a, 1, 4, &h));
  CHECK_EQ_U64(cpu_helpers_count(h), 1);
  start(&s, a, 2, h);
  CHECK(s.helpers == h);
  for (i = 0; i < 10; i++) {
    CHECK(asleep_within(&s));
    cold(&s);
    seq = commit_op(&s, count_run);
    CHECK(completed_within(&s, seq));
  }
  CHECK_EQ_U64(runs(), 10);
  CHECK_EQ_U64(wakes(&s), 0); /* no commit woke the worker */
  CHECK(helper_ops(&s) >= 1);
  CHECK(cpu_helpers_served(h) >= 1);
  CHECK_EQ_U64(__atomic_load_n(&s.consumer, __ATOMIC_SEQ_CST), 0);
  cpu_stream_deinitialize(&s);
  CHECK(s.helpers == NULL);
  cpu_helpers_destroy(h);
  CHECK_EQ_U64(ca.live_blocks, 0);
  CHECK_EQ_U64(ca.bad_frees, 0);
  counting_allocator_destroy(&ca);
}

/* A helper stops before a wait op whose point is not done and hands the
 * stream to its worker (which blocks in the wait); the helper stays free for
 * other streams, and the ops after the wait run once the point completes,
 * in order. */
TEST(cpu_helpers_hand_a_blocked_wait_to_the_worker) {
  static cpu_stream_t a_s, b_s, c_s;
  counting_allocator_t ca;
  cubert_allocator_t a = counting_allocator_initialize(&ca);
  cpu_helpers_t *h = NULL;
  uint64_t b_seq, a_seq, c_seq;
  reset();
  CHECK_OK(cpu_helpers_create(a, 1, 4, &h));
  start(&a_s, a, 0, h);
  start(&b_s, a, 1, NULL); /* not the helpers': its gated op holds its own worker */
  start(&c_s, a, 2, h);
  b_seq = commit_op(&b_s, gated_run);
  cpu_stream_publish(&b_s);
  CHECK(in_gate_within(1));
  CHECK(asleep_within(&a_s));
  cold(&a_s);
  (void)commit_wait(&a_s, &b_s, b_seq);
  a_seq = commit_op(&a_s, count_run);
  sleep_ms(20);
  CHECK_EQ_U64(completed(&a_s), 0); /* waits for b */
  CHECK_EQ_U64(helper_ops(&a_s), 0); /* the helper did not run the wait */
  CHECK(asleep_within(&c_s));
  cold(&c_s);
  c_seq = commit_op(&c_s, count_run); /* the helper is not stuck in a's wait */
  CHECK(completed_within(&c_s, c_seq));
  CHECK_EQ_U64(completed(&a_s), 0);
  __atomic_store_n(&g_gate, 1u, __ATOMIC_SEQ_CST);
  CHECK(completed_within(&a_s, a_seq));
  CHECK_EQ_U64(runs(), 3);
  cpu_stream_deinitialize(&c_s);
  cpu_stream_deinitialize(&b_s);
  cpu_stream_deinitialize(&a_s);
  cpu_helpers_destroy(h);
  CHECK_EQ_U64(ca.live_blocks, 0);
  counting_allocator_destroy(&ca);
}

static int not_small_if_gated(const cpu_op_t *op) { return op->run != gated_run; }

/* A long op (one the driver does not call small) is handed to the stream's
 * worker; the only helper stays free and runs another stream's op while the
 * long one still runs. */
TEST(cpu_helpers_leave_long_ops_to_the_worker) {
  static cpu_stream_t a_s, c_s;
  counting_allocator_t ca;
  cubert_allocator_t a = counting_allocator_initialize(&ca);
  cpu_helpers_t *h = NULL;
  uint64_t a_seq, c_seq;
  reset();
  CHECK_OK(cpu_helpers_create(a, 1, 4, &h));
  start(&a_s, a, 0, h);
  start(&c_s, a, 3, h);
  a_s.op_small = not_small_if_gated;
  CHECK(deep_asleep_within(&a_s));
  cold(&a_s);
  a_seq = commit_op(&a_s, gated_run);
  CHECK(in_gate_within(1)); /* the worker runs it (woken by the helper) */
  CHECK_EQ_U64(helper_ops(&a_s), 0);
  CHECK(cpu_helpers_handed_back(h) >= 1);
  CHECK_EQ_U64(wakes(&a_s), 0);
  CHECK(deep_asleep_within(&c_s));
  cold(&c_s);
  c_seq = commit_op(&c_s, count_run);
  CHECK(completed_within(&c_s, c_seq)); /* while a's op still runs */
  CHECK_EQ_U64(completed(&a_s), a_seq - 1u);
  CHECK_EQ_U64(wakes(&c_s), 0);
  __atomic_store_n(&g_gate, 1u, __ATOMIC_SEQ_CST);
  CHECK(completed_within(&a_s, a_seq));
  CHECK_EQ_U64(runs(), 2);
  cpu_stream_deinitialize(&c_s);
  cpu_stream_deinitialize(&a_s);
  cpu_helpers_destroy(h);
  CHECK_EQ_U64(ca.live_blocks, 0);
  counting_allocator_destroy(&ca);
}

/* A hot stream (its producer's last commit found the worker awake: it fell
 * asleep between bursts): the commit wakes its worker, as without helpers.
 * The worker is past its first, bounded sleep (deep_asleep_within): inside
 * that one it may wake by itself just before the commit, which then finds
 * it awake (seen under TSan). */
TEST(cpu_helpers_leave_a_hot_stream_to_its_worker) {
  static cpu_stream_t s;
  counting_allocator_t ca;
  cubert_allocator_t a = counting_allocator_initialize(&ca);
  cpu_helpers_t *h = NULL;
  uint64_t seq;
  reset();
  CHECK_OK(cpu_helpers_create(a, 2, 4, &h));
  start(&s, a, 0, h);
  CHECK(deep_asleep_within(&s));
  s.producer_saw_asleep = 0; /* the last commit found it awake */
  seq = commit_op(&s, count_run);
  CHECK(s.producer_saw_asleep); /* this one found it asleep */
  CHECK_EQ_U64(wakes(&s), 1);   /* and woke it */
  CHECK(completed_within(&s, seq));
  CHECK_EQ_U64(runs(), 1);
  cpu_stream_deinitialize(&s);
  cpu_helpers_destroy(h);
  CHECK_EQ_U64(ca.live_blocks, 0);
  counting_allocator_destroy(&ca);
}

/* A collective stream (worker_only) is never served: its worker runs it. */
TEST(cpu_helpers_never_take_a_worker_only_stream) {
  static cpu_stream_t s;
  counting_allocator_t ca;
  cubert_allocator_t a = counting_allocator_initialize(&ca);
  cpu_helpers_t *h = NULL;
  uint64_t seq = 0;
  int i;
  reset();
  CHECK_OK(cpu_helpers_create(a, 2, 4, &h));
  start(&s, a, 1, h);
  cpu_stream_set_worker_only(&s);
  for (i = 0; i < 3; i++) {
    CHECK(asleep_within(&s));
    cold(&s);
    seq = commit_op(&s, count_run);
    CHECK(completed_within(&s, seq));
  }
  CHECK_EQ_U64(runs(), 3);
  CHECK_EQ_U64(helper_ops(&s), 0);
  CHECK_EQ_U64(cpu_helpers_served(h), 0);
  cpu_stream_deinitialize(&s);
  cpu_helpers_destroy(h);
  CHECK_EQ_U64(ca.live_blocks, 0);
  counting_allocator_destroy(&ca);
}

/* Streams torn down with ops in flight while the helpers run them: every op
 * runs once, nothing leaks (the unregister waits for a helper using the
 * stream; under TSan this also checks the hand-over). */
TEST(cpu_helpers_streams_leave_with_ops_in_flight) {
  static cpu_stream_t s[6];
  counting_allocator_t ca;
  cubert_allocator_t a = counting_allocator_initialize(&ca);
  cpu_helpers_t *h = NULL;
  uint64_t total = 0;
  int round, i, k;
  reset();
  CHECK_OK(cpu_helpers_create(a, 2, 8, &h));
  for (round = 0; round < 6; round++) {
    for (k = 0; k < 6; k++) start(&s[k], a, (uint32_t)k, h);
    for (i = 0; i < 300; i++) {
      commit_op(&s[i % 6], count_run);
      total++;
      if (i % 50 == 49) sleep_ms(1); /* let workers fall asleep: the helpers' turn */
    }
    for (k = 0; k < 6; k++) cpu_stream_deinitialize(&s[(k + round) % 6]);
    CHECK_EQ_U64(runs(), total);
  }
  cpu_helpers_destroy(h);
  CHECK_EQ_U64(ca.live_blocks, 0);
  CHECK_EQ_U64(ca.bad_frees, 0);
  counting_allocator_destroy(&ca);
}

/* Bad arguments and a helper thread that cannot start: the create fails,
 * nothing runs and nothing is left allocated. */
TEST(cpu_helpers_create_failures_leave_nothing) {
  counting_allocator_t ca;
  cubert_allocator_t a = counting_allocator_initialize(&ca);
  cpu_helpers_t *h = (cpu_helpers_t *)&ca;
  CHECK_STATUS(cpu_helpers_create(a, 0, 4, &h), CUBERT_STATUS_INVALID_ARGUMENT);
  CHECK(h == NULL);
  CHECK_STATUS(cpu_helpers_create(a, CPU_HELPERS_MAX + 1u, 4, &h), CUBERT_STATUS_INVALID_ARGUMENT);
  CHECK_STATUS(cpu_helpers_create(a, 1, 0, &h), CUBERT_STATUS_INVALID_ARGUMENT);
  CHECK_STATUS(cpu_helpers_create(a, 1, CPU_STREAM_MAX_INDEX + 1u, &h),
               CUBERT_STATUS_INVALID_ARGUMENT);
  cubert__os_thread_inject_failure(3); /* the third of four threads */
  CHECK_STATUS(cpu_helpers_create(a, 4, 4, &h), CUBERT_STATUS_RESOURCE_EXHAUSTED);
  CHECK(h == NULL);
  cubert__os_thread_inject_failure(0);
  counting_allocator_fail_at(&ca, 2, 0); /* the helpers' array */
  CHECK_STATUS(cpu_helpers_create(a, 2, 4, &h), CUBERT_STATUS_RESOURCE_EXHAUSTED);
  counting_allocator_fail_at(&ca, 3, 0); /* the streams' array */
  CHECK_STATUS(cpu_helpers_create(a, 2, 4, &h), CUBERT_STATUS_RESOURCE_EXHAUSTED);
  CHECK(h == NULL);
  CHECK_EQ_U64(ca.live_blocks, 0);
  counting_allocator_destroy(&ca);
}

/* The default: one helper from CPU_STREAM_HELPERS_AUTO_CPUS usable CPUs on,
 * none below; a device made with the option at 0 (and no variable) follows
 * the CPUs this process may use. */
TEST(cpu_helpers_default_follows_the_usable_cpus) {
  counting_allocator_t ca;
  cubert_allocator_t a = counting_allocator_initialize(&ca);
  cubert_cpu_options_t o;
  cubert_client_t *c = NULL;
  cpu_device_t *d = NULL;
  uint32_t usable = cpu_usable_cpus();
  long online = sysconf(_SC_NPROCESSORS_ONLN);
  CHECK(usable >= 1);
  CHECK(online < 1 || usable <= (uint32_t)online);
  CHECK_EQ_U64(cpu_stream_helpers_default(1), CUBERT_CPU_STREAM_HELPERS_NONE);
  CHECK_EQ_U64(cpu_stream_helpers_default(2), CUBERT_CPU_STREAM_HELPERS_NONE);
  CHECK_EQ_U64(cpu_stream_helpers_default(CPU_STREAM_HELPERS_AUTO_CPUS - 1u),
               CUBERT_CPU_STREAM_HELPERS_NONE);
  CHECK_EQ_U64(cpu_stream_helpers_default(CPU_STREAM_HELPERS_AUTO_CPUS), 1);
  CHECK_EQ_U64(cpu_stream_helpers_default(256), 1);
  cubert_cpu_options_initialize(&o);
  o.ignore_environment = 1;
  CHECK_OK(cubert_cpu_client_create(a, &o, &c, NULL));
  CHECK_OK(cpu_device_of(c, &d));
  if (usable >= CPU_STREAM_HELPERS_AUTO_CPUS)
    CHECK(d->helpers != NULL && cpu_helpers_count(d->helpers) == 1);
  else
    CHECK(d->helpers == NULL);
  cubert_client_release(c);
  CHECK_EQ_U64(ca.live_blocks, 0);
  counting_allocator_destroy(&ca);
}

/* The client's option (its default: the test above): NONE and the
 * variable's 0 have no helpers, a count is honoured,
 * deterministic mode has none, and a count above the limit fails the
 * create with a record (the device untouched: another create with the same
 * index works). */
TEST(cpu_helpers_client_option_and_variable) {
  counting_allocator_t ca;
  cubert_allocator_t a = counting_allocator_initialize(&ca);
  cubert_cpu_options_t o;
  cubert_client_t *c = NULL;
  cpu_device_t *d = NULL;
  cubert_error_t err;
  cubert_cpu_options_initialize(&o);
  o.ignore_environment = 1;
  o.device.index = 71;
  o.stream_helpers = 3;
  CHECK_OK(cubert_cpu_client_create(a, &o, &c, NULL));
  CHECK_OK(cpu_device_of(c, &d));
  CHECK_EQ_U64(cpu_helpers_count(d->helpers), 3);
  cubert_client_release(c);
  o.stream_helpers = CUBERT_CPU_STREAM_HELPERS_NONE;
  CHECK_OK(cubert_cpu_client_create(a, &o, &c, NULL));
  CHECK_OK(cpu_device_of(c, &d));
  CHECK(d->helpers == NULL);
  cubert_client_release(c);
  o.stream_helpers = CUBERT_CPU_STREAM_HELPERS_MAX + 1u;
  c = NULL;
  CHECK_STATUS(cubert_cpu_client_create(a, &o, &c, &err), CUBERT_STATUS_INVALID_ARGUMENT);
  CHECK(c == NULL);
  CHECK(cubert_error_kind(&err) == CUBERT_ERROR_INVALID_ARGUMENT);
  CHECK_EQ_U64(err.field[0], CUBERT_CPU_STREAM_HELPERS_MAX + 1u);
  o.stream_helpers = 0;
  o.mode = CUBERT_CPU_MODE_DETERMINISTIC;
  CHECK_OK(cubert_cpu_client_create(a, &o, &c, NULL));
  CHECK_OK(cpu_device_of(c, &d));
  CHECK(d->helpers == NULL);
  cubert_client_release(c);
  /* the variable: 0 is none, 2 is two (the option left at 0) */
  o.mode = CUBERT_CPU_MODE_THREADED;
  o.ignore_environment = 0;
  CHECK(setenv("CUBERT_CPU_STREAM_HELPERS", "0", 1) == 0);
  CHECK_OK(cubert_cpu_client_create(a, &o, &c, NULL));
  CHECK_OK(cpu_device_of(c, &d));
  CHECK(d->helpers == NULL);
  cubert_client_release(c);
  CHECK(setenv("CUBERT_CPU_STREAM_HELPERS", "2", 1) == 0);
  CHECK_OK(cubert_cpu_client_create(a, &o, &c, NULL));
  CHECK_OK(cpu_device_of(c, &d));
  CHECK_EQ_U64(cpu_helpers_count(d->helpers), 2);
  cubert_client_release(c);
  CHECK(setenv("CUBERT_CPU_STREAM_HELPERS", "65", 1) == 0);
  c = NULL;
  CHECK_STATUS(cubert_cpu_client_create(a, &o, &c, &err), CUBERT_STATUS_INVALID_ARGUMENT);
  CHECK(c == NULL);
  CHECK(unsetenv("CUBERT_CPU_STREAM_HELPERS") == 0);
  CHECK_EQ_U64(ca.live_blocks, 0);
  counting_allocator_destroy(&ca);
}

/* A helper's look at one stream (cpu_stream_helpers_work): an op committed
 * but not published is found only by a read of the tail, which
 * CPU_STREAM_HELPERS_NO_PULL forbids, a due time does once per
 * CPU_STREAM_HELPERS_PULL_NS (and says so), and 0 does at once. The stream
 * is the helpers' but not registered: no helper thread looks at it. */
TEST(cpu_helpers_look_reads_the_tail_only_when_due) {
  static cpu_stream_t s;
  counting_allocator_t ca;
  cubert_allocator_t a = counting_allocator_initialize(&ca);
  cpu_helpers_t *h = NULL;
  cpu_op_t *op;
  uint64_t due, seq;
  int pulled = 7;
  reset();
  CHECK_OK(cpu_helpers_create(a, 1, 4, &h));
  start(&s, a, 1, NULL);
  s.helpers = h; /* the helpers' stream, unknown to the helper threads */
  CHECK(deep_asleep_within(&s));
  op = cpu_stream_reserve(&s);
  op->run = count_run;
  seq = s.tail + 1;
  __atomic_store_n(&s.tail, seq, __ATOMIC_SEQ_CST); /* committed, not published: no wake */
  CHECK(!cpu_stream_helpers_work(&s, CPU_STREAM_HELPERS_NO_PULL, &pulled));
  CHECK_EQ_I64(pulled, 0);
  due = __atomic_load_n(&s.helpers_pulled_ns, __ATOMIC_SEQ_CST) + CPU_STREAM_HELPERS_PULL_NS;
  CHECK(!cpu_stream_helpers_work(&s, due - 1u, &pulled)); /* not due yet */
  CHECK_EQ_I64(pulled, 0);
  CHECK(cpu_stream_helpers_work(&s, due, &pulled));
  CHECK_EQ_I64(pulled, 1);
  CHECK(!cpu_stream_helpers_work(&s, due, &pulled)); /* read at `due`: the next is later */
  CHECK_EQ_I64(pulled, 0);
  CHECK(cpu_stream_helpers_work(&s, 0, NULL)); /* 0: read it now */
  CHECK_EQ_U64(runs(), 0);
  cpu_stream_publish(&s); /* wakes the worker, which runs it */
  CHECK(completed_within(&s, seq));
  CHECK_EQ_U64(runs(), 1);
  cpu_stream_deinitialize(&s);
  cpu_helpers_destroy(h);
  CHECK_EQ_U64(ca.live_blocks, 0);
  counting_allocator_destroy(&ca);
}

/* Many cold streams, one op each while their workers sleep: the helper's
 * paced tail reads (one stream per HELPERS_PULL_GAP_NS, cpu_helpers.c)
 * reach every stream, and every op runs. */
#define MANY_STREAMS 24
TEST(cpu_helpers_paced_pulls_reach_every_cold_stream) {
  static cpu_stream_t s[MANY_STREAMS];
  counting_allocator_t ca;
  cubert_allocator_t a = counting_allocator_initialize(&ca);
  cpu_helpers_t *h = NULL;
  uint64_t seq[MANY_STREAMS], ops = 0;
  int i, round;
  reset();
  CHECK_OK(cpu_helpers_create(a, 1, MANY_STREAMS, &h));
  for (i = 0; i < MANY_STREAMS; i++) start(&s[i], a, (uint32_t)i, h);
  for (round = 0; round < 3; round++) {
    for (i = 0; i < MANY_STREAMS; i++) CHECK(asleep_within(&s[i]));
    for (i = 0; i < MANY_STREAMS; i++) {
      cold(&s[i]);
      seq[i] = commit_op(&s[i], count_run);
    }
    for (i = 0; i < MANY_STREAMS; i++) CHECK(completed_within(&s[i], seq[i]));
  }
  CHECK_EQ_U64(runs(), 3u * MANY_STREAMS);
  for (i = 0; i < MANY_STREAMS; i++) ops += helper_ops(&s[i]);
  CHECK(ops >= 1); /* the helper ran some (the workers' first sleeps end at 1 ms) */
  for (i = 0; i < MANY_STREAMS; i++) cpu_stream_deinitialize(&s[i]);
  cpu_helpers_destroy(h);
  CHECK_EQ_U64(ca.live_blocks, 0);
  counting_allocator_destroy(&ca);
}
