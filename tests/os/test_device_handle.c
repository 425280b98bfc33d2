/* SPDX-License-Identifier: MIT */
/*
 * tests/os/test_device_handle.c: device-handle conformance tests, run
 * against both implementations of cubert_device_handle_vtable_t:
 *  - direct: cubert_device_handle_direct_create (core) over a recursive
 *    pthread mutex (the adapter below);
 *  - runner: cubert_device_handle_runner_create (os/os_runner.c).
 * Ports the cubecl-common device-handle tests and the ordering
 * / shutdown guarantees of cubert/driver/device.h. Each shared test is defined once
 * (DH_TEST_BOTH) and registered as device_handle_direct_X and
 * device_handle_runner_X; runner-only tests (device_handle_runner_X):
 * test_device_handle_runner.c.
 */
#include "device_handle_fixture.h"
#include "cubert/driver/device.h"

/* ---- shared tests ----------------------------------------------- */

typedef struct dh_thread_arg_t {
  cubert_device_handle_t *handle;
  dh_state_t *state;
  int index;
  int count;
  uint32_t failures;
} dh_thread_arg_t;

static void *thread_add_one(void *arg) {
  dh_thread_arg_t *a = (dh_thread_arg_t *)arg;
  int64_t one = 1;
  if (dh_submit(a->handle, task_add, &one, sizeof one) != CUBERT_STATUS_OK) a->failures++;
  return NULL;
}

/* test_concurrent_increment: 10 threads submit +1; a blocking read returns 10. */
DH_TEST_BOTH(concurrent_increment) {
  dh_fixture_t f;
  dh_state_t s;
  pthread_t threads[10];
  dh_thread_arg_t args[10];
  int i;
  dh_fixture_initialize(&f, impl);
  dh_state_initialize(&s);
  dh_open(&f, &s, 0);
  for (i = 0; i < 10; i++) {
    args[i].handle = &f.handle;
    args[i].failures = 0;
    CHECK(pthread_create(&threads[i], NULL, thread_add_one, &args[i]) == 0);
  }
  for (i = 0; i < 10; i++) {
    CHECK(pthread_join(threads[i], NULL) == 0);
    CHECK_EQ_U64(args[i].failures, 0);
  }
  CHECK_EQ_I64(dh_read(&f.handle), 10);
  dh_close(&f);
  dh_fixture_finish(&f);
}

/* A task that calls back into its own device: every kind of call runs
 * inline (re-entrancy) and is visible before the call returns. */
static cubert_status_t exclusive_add_inline(void *user) {
  dh_state_t *s = (dh_state_t *)user;
  int64_t before = dh_peek(s), one = 1;
  if (dh_submit(s->handle, task_add, &one, sizeof one) != CUBERT_STATUS_OK)
    return CUBERT_STATUS_INTERNAL;
  return dh_peek(s) == before + 1 ? CUBERT_STATUS_OK : CUBERT_STATUS_INTERNAL;
}

static void task_recursive(void *context, void *payload) {
  dh_state_t *s = (dh_state_t *)context;
  int64_t before = dh_peek(s), v = -1, one = 1;
  (void)payload;
  if (dh_submit(s->handle, task_add, &one, sizeof one) != CUBERT_STATUS_OK) return;
  if (dh_peek(s) != before + 1) return;
  if (dh_blocking(s->handle, task_read, &v) != CUBERT_STATUS_OK || v != before + 1) return;
  if (dh_exclusive(s->handle, exclusive_add_inline, s) != CUBERT_STATUS_OK) return;
  if (s->handle->vtable->flush_queue(s->handle->self) != CUBERT_STATUS_OK) return;
  s->inline_seen = dh_peek(s);
}

/* An exclusive section that submits to its device: runs inline too. */
static cubert_status_t exclusive_recursive(void *user) {
  dh_state_t *s = (dh_state_t *)user;
  return dh_blocking(s->handle, task_recursive, NULL);
}

/* test_recursive_execution_*: no deadlock, inner calls run inline. */
DH_TEST_BOTH(recursive_execution) {
  dh_fixture_t f;
  dh_state_t s;
  dh_fixture_initialize(&f, impl);
  dh_state_initialize(&s);
  dh_open(&f, &s, 0);
  s.handle = &f.handle;
  CHECK_OK(dh_submit(&f.handle, task_recursive, NULL, 0)); /* queued (runner) */
  CHECK_EQ_I64(dh_read(&f.handle), 2);
  CHECK_EQ_I64(s.inline_seen, 2);
  CHECK_OK(dh_blocking(&f.handle, task_recursive, NULL));
  CHECK_EQ_I64(s.inline_seen, 4);
  CHECK_OK(dh_exclusive(&f.handle, exclusive_recursive, &s));
  CHECK_EQ_I64(s.inline_seen, 6);
  CHECK_EQ_I64(dh_read(&f.handle), 6);
  dh_close(&f);
  dh_fixture_finish(&f);
}

/* test_basic_execution_and_state_persistence: 1 then 2. */
DH_TEST_BOTH(basic_execution_and_state_persistence) {
  dh_fixture_t f;
  dh_state_t s;
  dh_fixture_initialize(&f, impl);
  dh_state_initialize(&s);
  dh_open(&f, &s, 0);
  CHECK(f.handle.vtable->is_blocking(f.handle.self) == (impl == DH_DIRECT));
  dh_add(&f.handle, 1);
  CHECK_EQ_I64(dh_read(&f.handle), 1);
  dh_add(&f.handle, 1);
  CHECK_EQ_I64(dh_read(&f.handle), 2);
  dh_close(&f);
  dh_fixture_finish(&f);
}

/* test_scoped_tasks_and_lifetimes: exclusive returns what it computed (50)
 * and reads a value borrowed from the caller's stack (42); its status comes
 * back; the device stays usable after a failing section. */
typedef struct dh_scoped_t {
  const int64_t *borrowed;
  int64_t seen;
  int64_t result;
} dh_scoped_t;

static cubert_status_t exclusive_scoped(void *user) {
  dh_scoped_t *sc = (dh_scoped_t *)user;
  sc->seen = *sc->borrowed;
  sc->result = 5 * 10;
  return CUBERT_STATUS_OK;
}

DH_TEST_BOTH(scoped_tasks_and_lifetimes) {
  dh_fixture_t f;
  dh_state_t s;
  int64_t borrowed = 42;
  dh_scoped_t sc;
  dh_fixture_initialize(&f, impl);
  dh_state_initialize(&s);
  dh_open(&f, &s, 0);
  sc.borrowed = &borrowed;
  sc.seen = 0;
  sc.result = 0;
  CHECK_OK(dh_exclusive(&f.handle, exclusive_scoped, &sc));
  CHECK_EQ_I64(sc.result, 50);
  CHECK_EQ_I64(sc.seen, 42);
  CHECK_STATUS(dh_exclusive(&f.handle, exclusive_fails, NULL), CUBERT_STATUS_OUT_OF_RANGE);
  dh_add(&f.handle, 3);
  CHECK_EQ_I64(dh_read(&f.handle), 3);
  dh_close(&f);
  dh_fixture_finish(&f);
}

/* test_buffer_flushing_at_limit: exactly 32 submits (CubeCL's batch size)
 * all run. The runner gets a 32-task queue. */
DH_TEST_BOTH(buffer_flushing_at_limit) {
  dh_fixture_t f;
  dh_state_t s;
  int i;
  dh_fixture_initialize(&f, impl);
  dh_state_initialize(&s);
  dh_open(&f, &s, 32);
  for (i = 0; i < 32; i++) dh_add(&f.handle, 1);
  CHECK_EQ_I64(dh_read(&f.handle), 32);
  dh_close(&f);
  dh_fixture_finish(&f);
}

/* test_manual_flush_for_partial_buffer: one submit runs after flush_queue,
 * within 1 s, without any blocking call. */
DH_TEST_BOTH(manual_flush_for_partial_buffer) {
  dh_fixture_t f;
  dh_state_t s;
  uint64_t start;
  dh_fixture_initialize(&f, impl);
  dh_state_initialize(&s);
  dh_open(&f, &s, 0);
  dh_add(&f.handle, 1);
  CHECK_OK(f.handle.vtable->flush_queue(f.handle.self));
  start = cubert__os_clock_ns();
  while (dh_peek(&s) != 1 && cubert__os_clock_ns() - start < 1000000000u)
    cubert__os_sleep_ns(100000u);
  CHECK_EQ_I64(dh_peek(&s), 1);
  dh_close(&f);
  dh_fixture_finish(&f);
}

/* test_shutdown_drains_a_task_the_last_client_left_queued. For the runner the
 * device is held by a gate task, so the +1 is still queued when destroy
 * starts; a helper opens the gate while destroy waits. */
static void *thread_open_gate_later(void *arg) {
  cubert__os_sleep_ns(20000000u);
  dh_gate_open((dh_gate_t *)arg);
  return NULL;
}

DH_TEST_BOTH(shutdown_drains_queued_task) {
  dh_fixture_t f;
  dh_state_t s;
  dh_gate_t gate;
  pthread_t opener;
  dh_fixture_initialize(&f, impl);
  dh_state_initialize(&s);
  dh_open(&f, &s, 0);
  if (impl == DH_RUNNER) {
    dh_gate_submit(&f.handle, &gate);
    dh_gate_wait_entered(&gate);
    dh_add(&f.handle, 1);
    CHECK_EQ_I64(dh_peek(&s), 0); /* held behind the gate */
    CHECK(pthread_create(&opener, NULL, thread_open_gate_later, &gate) == 0);
  } else {
    dh_add(&f.handle, 1);
  }
  dh_close(&f);
  CHECK_EQ_I64(dh_peek(&s), 1);
  if (impl == DH_RUNNER) CHECK(pthread_join(opener, NULL) == 0);
  dh_fixture_finish(&f);
}

/* test_handle_created_after_shutdown_gets_a_fresh_runner: after destroy, a
 * new handle (same allocator) over fresh state starts at 0 and works; the
 * old state is untouched by it. */
DH_TEST_BOTH(fresh_after_destroy) {
  dh_fixture_t f;
  dh_state_t first, second;
  dh_fixture_initialize(&f, impl);
  dh_state_initialize(&first);
  dh_state_initialize(&second);
  dh_open(&f, &first, 0);
  dh_add(&f.handle, 5);
  CHECK_EQ_I64(dh_read(&f.handle), 5);
  dh_close(&f);
  CHECK_EQ_I64(f.counting.live_blocks, 0);
  dh_open(&f, &second, 0);
  CHECK_EQ_I64(dh_read(&f.handle), 0);
  dh_add(&f.handle, 1);
  CHECK_EQ_I64(dh_read(&f.handle), 1);
  CHECK_EQ_I64(dh_peek(&first), 5);
  dh_close(&f);
  dh_fixture_finish(&f);
}

/* Ordering: FIFO per submitting thread under 4 producers, and a
 * blocking call observes every earlier submission of its thread. The runner
 * gets an 8-task queue so producers also wait on a full queue. */
typedef struct dh_seq_t {
  int32_t producer;
  int32_t pad;
  int64_t seq;
} dh_seq_t;

static void task_sequence(void *context, void *payload) {
  dh_state_t *s = (dh_state_t *)context;
  dh_seq_t q;
  memcpy(&q, payload, sizeof q);
  if (s->last_seq[q.producer] + 1 != q.seq) s->fifo_violations++;
  s->last_seq[q.producer] = q.seq;
}

static void task_observe(void *context, void *payload) {
  dh_state_t *s = (dh_state_t *)context;
  const dh_seq_t *q = (const dh_seq_t *)payload;
  if (s->last_seq[q->producer] != q->seq) s->observe_failures++;
}

#define DH_FIFO_COUNT 4000

static void *thread_sequence(void *arg) {
  dh_thread_arg_t *a = (dh_thread_arg_t *)arg;
  dh_seq_t q;
  int i;
  q.producer = a->index;
  q.pad = 0;
  for (i = 0; i < a->count; i++) {
    q.seq = i;
    if (dh_submit(a->handle, task_sequence, &q, sizeof q) != CUBERT_STATUS_OK) a->failures++;
    if (i % 500 == 499 && dh_blocking(a->handle, task_observe, &q) != CUBERT_STATUS_OK)
      a->failures++;
  }
  return NULL;
}

DH_TEST_BOTH(fifo_per_thread) {
  dh_fixture_t f;
  dh_state_t s;
  pthread_t threads[DH_PRODUCERS];
  dh_thread_arg_t args[DH_PRODUCERS];
  int i;
  dh_fixture_initialize(&f, impl);
  dh_state_initialize(&s);
  for (i = 0; i < DH_PRODUCERS; i++) s.last_seq[i] = -1;
  dh_open(&f, &s, 8);
  for (i = 0; i < DH_PRODUCERS; i++) {
    args[i].handle = &f.handle;
    args[i].index = i;
    args[i].count = DH_FIFO_COUNT;
    args[i].failures = 0;
    CHECK(pthread_create(&threads[i], NULL, thread_sequence, &args[i]) == 0);
  }
  for (i = 0; i < DH_PRODUCERS; i++) {
    CHECK(pthread_join(threads[i], NULL) == 0);
    CHECK_EQ_U64(args[i].failures, 0);
  }
  CHECK_OK(dh_blocking(&f.handle, task_noop, NULL));
  CHECK_EQ_U64(s.fifo_violations, 0);
  CHECK_EQ_U64(s.observe_failures, 0);
  for (i = 0; i < DH_PRODUCERS; i++) CHECK_EQ_I64(s.last_seq[i], DH_FIFO_COUNT - 1);
  dh_close(&f);
  dh_fixture_finish(&f);
}

/* Bad input: payload over CUBERT_DEVICE_TASK_PAYLOAD, NULL task, NULL
 * payload with a size. Nothing runs. A payload of exactly the limit is
 * copied at submit (the caller may reuse its buffer at once). */
static void task_checksum(void *context, void *payload) {
  dh_state_t *s = (dh_state_t *)context;
  const unsigned char *p = (const unsigned char *)payload;
  uint32_t sum = 0;
  size_t i;
  for (i = 0; i < CUBERT_DEVICE_TASK_PAYLOAD; i++) sum = sum * 31u + p[i];
  s->checksum = sum;
}

DH_TEST_BOTH(bad_input) {
  dh_fixture_t f;
  dh_state_t s;
  unsigned char big[CUBERT_DEVICE_TASK_PAYLOAD + 1];
  uint32_t expected = 0;
  size_t i;
  int64_t one = 1;
  dh_fixture_initialize(&f, impl);
  dh_state_initialize(&s);
  dh_open(&f, &s, 0);
  for (i = 0; i < sizeof big; i++) big[i] = (unsigned char)(i * 7u + 1u);
  for (i = 0; i < CUBERT_DEVICE_TASK_PAYLOAD; i++) expected = expected * 31u + big[i];
  CHECK_STATUS(dh_submit(&f.handle, task_add, big, sizeof big), CUBERT_STATUS_INVALID_ARGUMENT);
  CHECK_STATUS(dh_submit(&f.handle, NULL, &one, sizeof one), CUBERT_STATUS_INVALID_ARGUMENT);
  CHECK_STATUS(dh_submit(&f.handle, task_add, NULL, sizeof one), CUBERT_STATUS_INVALID_ARGUMENT);
  CHECK_STATUS(dh_blocking(&f.handle, NULL, &one), CUBERT_STATUS_INVALID_ARGUMENT);
  CHECK_STATUS(dh_exclusive(&f.handle, NULL, NULL), CUBERT_STATUS_INVALID_ARGUMENT);
  CHECK_EQ_I64(dh_read(&f.handle), 0);
  CHECK_OK(dh_submit(&f.handle, task_checksum, big, CUBERT_DEVICE_TASK_PAYLOAD));
  memset(big, 0, sizeof big); /* the task must see the copy */
  CHECK_OK(dh_blocking(&f.handle, task_noop, NULL));
  CHECK_EQ_U64(s.checksum, expected);
  CHECK_OK(dh_submit(&f.handle, task_noop, NULL, 0));
  dh_close(&f);
  dh_fixture_finish(&f);
}

/* Allocation-failure loop on create: failing the 1st, 2nd, ... allocation
 * gives RESOURCE_EXHAUSTED with nothing leaked; once no allocation fails the
 * handle works. */
DH_TEST_BOTH(create_allocation_failure_loop) {
  dh_fixture_t f;
  dh_state_t s;
  uint64_t n;
  int failed = 0;
  dh_fixture_initialize(&f, impl);
  dh_state_initialize(&s);
  for (n = 1; n < 100; n++) {
    cubert_status_t status;
    f.counting.failures = 0;
    counting_allocator_fail_at(&f.counting, n, 0);
    status = dh_create(&f, &s, 0, &f.handle);
    CHECK(status == CUBERT_STATUS_OK || status == CUBERT_STATUS_RESOURCE_EXHAUSTED);
    if (status == CUBERT_STATUS_OK) {
      dh_add(&f.handle, 1);
      CHECK_EQ_I64(dh_read(&f.handle), s.counter);
      dh_close(&f);
    } else {
      failed++;
    }
    CHECK_EQ_I64(f.counting.live_blocks, 0);
    if (f.counting.failures == 0) break; /* every allocation point passed */
  }
  CHECK(n < 100);
  CHECK_EQ_I64(failed, (int64_t)n - 1);
  CHECK(failed >= 1);
  counting_allocator_fail_at(&f.counting, 0, 0);
  dh_fixture_finish(&f);
}

/* Stream propagation: a task sees its submitter's stream. */
static void task_stream(void *context, void *payload) {
  (void)payload;
  ((dh_state_t *)context)->stream_seen = cubert_stream_id_current().value;
}

static cubert_status_t exclusive_stream(void *user) {
  ((dh_state_t *)user)->stream_seen = cubert_stream_id_current().value;
  return CUBERT_STATUS_OK;
}

DH_TEST_BOTH(stream_propagation) {
  dh_fixture_t f;
  dh_state_t s;
  cubert_stream_id_token_t token;
  uint64_t mine = cubert_stream_id_current().value;
  dh_fixture_initialize(&f, impl);
  dh_state_initialize(&s);
  dh_open(&f, &s, 0);
  CHECK_OK(dh_submit(&f.handle, task_stream, NULL, 0));
  CHECK_OK(dh_blocking(&f.handle, task_noop, NULL));
  CHECK_EQ_U64(s.stream_seen, mine);
  CHECK_OK(cubert_stream_id_executes_begin(cubert_stream_id_from_value(777), &token, NULL));
  CHECK_OK(dh_submit(&f.handle, task_stream, NULL, 0));
  CHECK_OK(dh_blocking(&f.handle, task_noop, NULL));
  CHECK_EQ_U64(s.stream_seen, 777);
  s.stream_seen = 0;
  CHECK_OK(dh_blocking(&f.handle, task_stream, NULL));
  CHECK_EQ_U64(s.stream_seen, 777);
  s.stream_seen = 0;
  CHECK_OK(dh_exclusive(&f.handle, exclusive_stream, &s));
  CHECK_EQ_U64(s.stream_seen, 777);
  CHECK_OK(cubert_stream_id_executes_end(&token, NULL));
  CHECK_OK(dh_blocking(&f.handle, task_stream, NULL));
  CHECK_EQ_U64(s.stream_seen, mine);
  dh_close(&f);
  dh_fixture_finish(&f);
}

/* exclusive holds the device: a submit from another thread made while the
 * section runs takes effect only after it returns. */
typedef struct dh_excl_t {
  dh_state_t *state;
  cubert_device_handle_t *handle;
  uint32_t submitting; /* atomic */
  int64_t before;
  int64_t after;
} dh_excl_t;

static void *thread_submit_once(void *arg) {
  dh_excl_t *e = (dh_excl_t *)arg;
  int64_t one = 1;
  __atomic_store_n(&e->submitting, 1u, __ATOMIC_RELEASE);
  (void)dh_submit(e->handle, task_add, &one, sizeof one);
  return NULL;
}

static cubert_status_t exclusive_hold(void *user) {
  dh_excl_t *e = (dh_excl_t *)user;
  pthread_t t;
  if (pthread_create(&t, NULL, thread_submit_once, e) != 0) return CUBERT_STATUS_INTERNAL;
  while (!__atomic_load_n(&e->submitting, __ATOMIC_ACQUIRE)) cubert__os_sleep_ns(100000u);
  e->before = dh_peek(e->state);
  cubert__os_sleep_ns(30000000u);
  e->after = dh_peek(e->state);
  (void)pthread_detach(t);
  return CUBERT_STATUS_OK;
}

DH_TEST_BOTH(exclusive_holds_device) {
  dh_fixture_t f;
  dh_state_t s;
  dh_excl_t e;
  uint64_t start;
  dh_fixture_initialize(&f, impl);
  dh_state_initialize(&s);
  dh_open(&f, &s, 0);
  e.state = &s;
  e.handle = &f.handle;
  e.submitting = 0;
  CHECK_OK(dh_exclusive(&f.handle, exclusive_hold, &e));
  CHECK_EQ_I64(e.before, 0);
  CHECK_EQ_I64(e.after, 0);
  start = cubert__os_clock_ns();
  while (dh_peek(&s) != 1 && cubert__os_clock_ns() - start < 5000000000u) {
    CHECK_OK(f.handle.vtable->flush_queue(f.handle.self));
    cubert__os_sleep_ns(100000u);
  }
  CHECK_EQ_I64(dh_read(&f.handle), 1);
  dh_close(&f);
  dh_fixture_finish(&f);
}

/* Sleep/wake stress: 4 threads alternate submits, pauses long enough for
 * the runner to go to sleep, slow tasks that make blocking callers park,
 * and blocking reads. Every task runs once; nothing hangs. */
static void task_slow_add(void *context, void *payload) {
  cubert__os_sleep_ns(300000u);
  task_add(context, payload);
}

typedef struct dh_stress_t {
  cubert_device_handle_t *handle;
  int index;
  uint32_t failures;
} dh_stress_t;

#define DH_STRESS_ROUNDS 150

static void *thread_stress(void *arg) {
  dh_stress_t *a = (dh_stress_t *)arg;
  int64_t one = 1, v;
  int i;
  for (i = 0; i < DH_STRESS_ROUNDS; i++) {
    cubert_device_task_fn_t fn = (i + a->index) % 16 == 0 ? task_slow_add : task_add;
    if (dh_submit(a->handle, fn, &one, sizeof one) != CUBERT_STATUS_OK) a->failures++;
    if (i % 3 == 0)
      cubert__os_sleep_ns(50000u + (uint64_t)((i * 37 + a->index * 11) % 5) * 100000u);
    if (i % 5 == 0) {
      v = -1;
      if (dh_blocking(a->handle, task_read, &v) != CUBERT_STATUS_OK || v < i + 1) a->failures++;
    }
  }
  return NULL;
}

DH_TEST_BOTH(sleep_wake_stress) {
  dh_fixture_t f;
  dh_state_t s;
  pthread_t threads[4];
  dh_stress_t args[4];
  int i;
  dh_fixture_initialize(&f, impl);
  dh_state_initialize(&s);
  dh_open(&f, &s, 4);
  for (i = 0; i < 4; i++) {
    args[i].handle = &f.handle;
    args[i].index = i;
    args[i].failures = 0;
    CHECK(pthread_create(&threads[i], NULL, thread_stress, &args[i]) == 0);
  }
  for (i = 0; i < 4; i++) {
    CHECK(pthread_join(threads[i], NULL) == 0);
    CHECK_EQ_U64(args[i].failures, 0);
  }
  CHECK_EQ_I64(dh_read(&f.handle), 4 * DH_STRESS_ROUNDS);
  dh_close(&f);
  dh_fixture_finish(&f);
}
