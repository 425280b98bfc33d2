/* SPDX-License-Identifier: MIT */
/* Stream ids: values and slots (core), per-thread resolution, overrides and
 * policy (OS layer). Each test runs in a fresh process, so the
 * global counter starts at 0 and the policy at PER_THREAD in every test. */
#include <errno.h>
#include <pthread.h>

#include "test.h"
#include "cubert/os.h"
#include "cubert/stream_id.h"

static cubert_stream_id_t sid(uint64_t v) { return cubert_stream_id_from_value(v); }

/* ---- core value functions --------------------------------------------------------- */

TEST(stream_id_values) {
  CHECK_EQ_U64(cubert_stream_id_default().value, 0);
  CHECK_EQ_U64(sid(42).value, 42);
  CHECK(cubert_stream_id_equal(sid(5), sid(5)));
  CHECK(!cubert_stream_id_equal(sid(5), sid(6)));
  CHECK(cubert_stream_policy_is_valid(CUBERT_STREAM_POLICY_PER_THREAD));
  CHECK(cubert_stream_policy_is_valid(CUBERT_STREAM_POLICY_PER_TASK));
  CHECK(cubert_stream_policy_is_valid(CUBERT_STREAM_POLICY_SINGLE));
  CHECK(!cubert_stream_policy_is_valid((cubert_stream_policy_t)3));
}

/* slots are value mod max_streams (default 128). */
TEST(stream_id_slot) {
  static const uint64_t values[] = {0,   1,          127,        128,        129,
                                    255, 1000,       0xFFFFFFFFull, 1ull << 32, (1ull << 40) + 3,
                                    0x8000000000000001ull, UINT64_MAX - 1, UINT64_MAX};
  static const uint32_t maxes[] = {1, 2, 3, 7, 128, 255, 1000003, 0x80000000u, UINT32_MAX};
  size_t i, j;
  CHECK_EQ_U64(cubert_stream_id_slot(sid(129), 128), 1);
  CHECK_EQ_U64(cubert_stream_id_slot(sid(127), 128), 127);
  CHECK_EQ_U64(cubert_stream_id_slot(sid(UINT64_MAX), 128), 127);
  for (i = 0; i < sizeof values / sizeof values[0]; i++)
    for (j = 0; j < sizeof maxes / sizeof maxes[0]; j++)
      CHECK_MSG(cubert_stream_id_slot(sid(values[i]), maxes[j]) == values[i] % maxes[j],
                "%llu mod %u", (unsigned long long)values[i], maxes[j]);
  /* Defined: no slots configured -> slot 0. */
  CHECK_EQ_U64(cubert_stream_id_slot(sid(12345), 0), 0);
  CHECK_EQ_U64(cubert_stream_id_slot(sid(UINT64_MAX), 0), 0);
}

/* ---- per-thread ids ------------------------------------------------------------------ */

typedef struct thread_ids_t {
  cubert_stream_id_t first, second;
} thread_ids_t;

static void *thread_query_twice(void *arg) {
  thread_ids_t *ids = (thread_ids_t *)arg;
  ids->first = cubert_stream_id_current();
  ids->second = cubert_stream_id_current();
  return NULL;
}

static thread_ids_t run_query_thread(void) {
  pthread_t t;
  thread_ids_t ids;
  memset(&ids, 0xff, sizeof ids);
  CHECK(pthread_create(&t, NULL, thread_query_twice, &ids) == 0);
  CHECK(pthread_join(t, NULL) == 0);
  return ids;
}

/* allocated lazily from a global counter starting at 0. */
TEST(stream_id_counter_starts_at_zero) {
  thread_ids_t other;
  CHECK_EQ_U64(cubert_stream_id_current().value, 0);
  other = run_query_thread();
  CHECK_EQ_U64(other.first.value, 1);
  CHECK_EQ_U64(cubert_stream_id_allocate().value, 2);
  CHECK_EQ_U64(cubert_stream_id_allocate().value, 3);
  other = run_query_thread();
  CHECK_EQ_U64(other.first.value, 4);
  CHECK_EQ_U64(cubert_stream_id_current().value, 0);
}

/* CubeCL's test: stable per thread; two threads get different ids. */
TEST(stream_id_stable_per_thread_distinct_across_threads) {
  thread_ids_t a, b;
  cubert_stream_id_t mine = cubert_stream_id_current();
  CHECK_EQ_U64(cubert_stream_id_current().value, mine.value);
  a = run_query_thread();
  b = run_query_thread();
  CHECK_EQ_U64(a.first.value, a.second.value);
  CHECK_EQ_U64(b.first.value, b.second.value);
  CHECK(a.first.value != b.first.value);
  CHECK(a.first.value != mine.value);
  CHECK(b.first.value != mine.value);
  CHECK_EQ_U64(cubert_stream_id_current().value, mine.value);
}

#define STREAM_ID_THREADS 16

typedef struct concurrent_arg_t {
  pthread_barrier_t *barrier;
  cubert_stream_id_t id;
  int stable;
} concurrent_arg_t;

static void *thread_concurrent(void *p) {
  concurrent_arg_t *a = (concurrent_arg_t *)p;
  int k;
  pthread_barrier_wait(a->barrier);
  a->id = cubert_stream_id_current();
  a->stable = 1;
  for (k = 0; k < 100; k++)
    if (cubert_stream_id_current().value != a->id.value) a->stable = 0;
  return NULL;
}

/* Threads racing for their first id all get distinct, stable ids. */
TEST(stream_id_concurrent_first_queries_distinct) {
  pthread_t t[STREAM_ID_THREADS];
  concurrent_arg_t args[STREAM_ID_THREADS];
  pthread_barrier_t barrier;
  int i, j;
  CHECK(pthread_barrier_init(&barrier, NULL, STREAM_ID_THREADS) == 0);
  for (i = 0; i < STREAM_ID_THREADS; i++) {
    args[i].barrier = &barrier;
    CHECK(pthread_create(&t[i], NULL, thread_concurrent, &args[i]) == 0);
  }
  for (i = 0; i < STREAM_ID_THREADS; i++) CHECK(pthread_join(t[i], NULL) == 0);
  pthread_barrier_destroy(&barrier);
  for (i = 0; i < STREAM_ID_THREADS; i++) {
    CHECK(args[i].stable);
    CHECK(args[i].id.value < STREAM_ID_THREADS);
    for (j = i + 1; j < STREAM_ID_THREADS; j++) CHECK(args[i].id.value != args[j].id.value);
  }
}

/* ---- overrides (StreamId::executes) ------------------------------------------------ */

/* CubeCL's tests: nested overrides restore the previous override, the
 * outermost restores "no override". */
TEST(stream_id_override_nesting) {
  cubert_stream_id_token_t outer, inner;
  cubert_stream_id_t base = cubert_stream_id_current();
  CHECK_OK(cubert_stream_id_executes_begin(sid(500), &outer, NULL));
  CHECK_EQ_U64(outer.id.value, 500);
  CHECK_EQ_U64(cubert_stream_id_current().value, 500);
  CHECK_OK(cubert_stream_id_executes_begin(sid(700), &inner, NULL));
  CHECK_EQ_U64(cubert_stream_id_current().value, 700);
  CHECK_OK(cubert_stream_id_executes_end(&inner, NULL));
  CHECK_EQ_U64(cubert_stream_id_current().value, 500);
  CHECK_OK(cubert_stream_id_executes_end(&outer, NULL));
  CHECK_EQ_U64(cubert_stream_id_current().value, base.value);
  /* The thread's own id was not consumed or changed by the overrides. */
  CHECK_EQ_U64(cubert_stream_id_current().value, base.value);
}

/* An override installed before the thread's first query does not allocate:
 * the thread's own id is allocated only once the override is gone. */
TEST(stream_id_override_before_first_query) {
  cubert_stream_id_token_t tok;
  CHECK_OK(cubert_stream_id_executes_begin(sid(9), &tok, NULL));
  CHECK_EQ_U64(cubert_stream_id_current().value, 9);
  CHECK_OK(cubert_stream_id_executes_end(&tok, NULL));
  CHECK_EQ_U64(cubert_stream_id_current().value, 0);
}

TEST(stream_id_override_end_errors_change_nothing) {
  cubert_stream_id_token_t outer, inner, forged;
  cubert_stream_id_t base = cubert_stream_id_current();
  CHECK_OK(cubert_stream_id_executes_begin(sid(1), &outer, NULL));
  CHECK_OK(cubert_stream_id_executes_begin(sid(2), &inner, NULL));
  /* Out of order: the outer one is not innermost. */
  CHECK_STATUS(cubert_stream_id_executes_end(&outer, NULL), CUBERT_STATUS_INVALID_ARGUMENT);
  CHECK_EQ_U64(cubert_stream_id_current().value, 2);
  /* A token never begun. */
  memset(&forged, 0, sizeof forged);
  CHECK_STATUS(cubert_stream_id_executes_end(&forged, NULL), CUBERT_STATUS_INVALID_ARGUMENT);
  /* A copy of the active token is not the token. */
  forged = inner;
  CHECK_STATUS(cubert_stream_id_executes_end(&forged, NULL), CUBERT_STATUS_INVALID_ARGUMENT);
  CHECK_EQ_U64(cubert_stream_id_current().value, 2);
  CHECK_STATUS(cubert_stream_id_executes_end(NULL, NULL), CUBERT_STATUS_INVALID_ARGUMENT);
  CHECK_OK(cubert_stream_id_executes_end(&inner, NULL));
  /* Twice. */
  CHECK_STATUS(cubert_stream_id_executes_end(&inner, NULL), CUBERT_STATUS_INVALID_ARGUMENT);
  CHECK_EQ_U64(cubert_stream_id_current().value, 1);
  CHECK_OK(cubert_stream_id_executes_end(&outer, NULL));
  CHECK_EQ_U64(cubert_stream_id_current().value, base.value);
  CHECK_STATUS(cubert_stream_id_executes_begin(sid(3), NULL, NULL), CUBERT_STATUS_INVALID_ARGUMENT);
  CHECK_EQ_U64(cubert_stream_id_current().value, base.value);
}

typedef struct cross_thread_t {
  cubert_stream_id_token_t *token;
  int end_status;
  cubert_stream_id_t seen;
} cross_thread_t;

static void *thread_end_foreign_token(void *p) {
  cross_thread_t *c = (cross_thread_t *)p;
  c->seen = cubert_stream_id_current();
  c->end_status = (int)cubert_stream_id_executes_end(c->token, NULL);
  return NULL;
}

/* An override is per thread: another thread neither sees it nor may end it. */
TEST(stream_id_override_is_per_thread) {
  cubert_stream_id_token_t tok;
  cross_thread_t c;
  pthread_t t;
  CHECK_OK(cubert_stream_id_executes_begin(sid(77), &tok, NULL));
  c.token = &tok;
  c.end_status = -1;
  CHECK(pthread_create(&t, NULL, thread_end_foreign_token, &c) == 0);
  CHECK(pthread_join(t, NULL) == 0);
  CHECK(c.seen.value != 77);
  CHECK_EQ_I64(c.end_status, CUBERT_STATUS_INVALID_ARGUMENT);
  CHECK_EQ_U64(cubert_stream_id_current().value, 77);
  CHECK_OK(cubert_stream_id_executes_end(&tok, NULL));
}

typedef struct executes_ctx_t {
  cubert_stream_id_t seen_outer, seen_inner;
} executes_ctx_t;

static void record_inner(void *user) {
  ((executes_ctx_t *)user)->seen_inner = cubert_stream_id_current();
}

static void record_and_nest(void *user) {
  executes_ctx_t *ctx = (executes_ctx_t *)user;
  ctx->seen_outer = cubert_stream_id_current();
  CHECK_OK(cubert_stream_id_executes(sid(22), record_inner, ctx, NULL));
  CHECK_EQ_U64(cubert_stream_id_current().value, 11);
}

TEST(stream_id_executes_callback) {
  executes_ctx_t ctx;
  cubert_stream_id_t base = cubert_stream_id_current();
  CHECK_OK(cubert_stream_id_executes(sid(11), record_and_nest, &ctx, NULL));
  CHECK_EQ_U64(ctx.seen_outer.value, 11);
  CHECK_EQ_U64(ctx.seen_inner.value, 22);
  CHECK_EQ_U64(cubert_stream_id_current().value, base.value);
  CHECK_STATUS(cubert_stream_id_executes(sid(11), NULL, &ctx,
                                         NULL), CUBERT_STATUS_INVALID_ARGUMENT);
}

/* ---- policy -------------------------------------------------------------------------------- */

TEST(stream_id_policy_single_and_back) {
  thread_ids_t other;
  cubert_stream_id_t mine;
  cubert_stream_id_token_t tok;
  CHECK_EQ_U64(cubert_stream_id_policy(), CUBERT_STREAM_POLICY_PER_THREAD);
  (void)cubert_stream_id_allocate(); /* so the thread's own id is not 0 */
  mine = cubert_stream_id_current();
  CHECK(mine.value != 0);
  CHECK_OK(cubert_stream_id_set_policy(CUBERT_STREAM_POLICY_SINGLE, NULL));
  CHECK_EQ_U64(cubert_stream_id_policy(), CUBERT_STREAM_POLICY_SINGLE);
  CHECK_EQ_U64(cubert_stream_id_current().value, 0);
  other = run_query_thread();
  CHECK_EQ_U64(other.first.value, 0);
  CHECK_EQ_U64(other.second.value, 0);
  /* The override still wins over the policy (resolution order). */
  CHECK_OK(cubert_stream_id_executes_begin(sid(5), &tok, NULL));
  CHECK_EQ_U64(cubert_stream_id_current().value, 5);
  CHECK_OK(cubert_stream_id_executes_end(&tok, NULL));
  CHECK_EQ_U64(cubert_stream_id_current().value, 0);
  /* Back to per-thread: the thread keeps its id. */
  CHECK_OK(cubert_stream_id_set_policy(CUBERT_STREAM_POLICY_PER_THREAD, NULL));
  CHECK_EQ_U64(cubert_stream_id_current().value, mine.value);
  other = run_query_thread();
  CHECK(other.first.value != 0 && other.first.value != mine.value);
}

/* PER_TASK has no task runtime here: it behaves per thread. */
TEST(stream_id_policy_per_task_is_per_thread) {
  thread_ids_t a, b;
  cubert_stream_id_t mine;
  CHECK_OK(cubert_stream_id_set_policy(CUBERT_STREAM_POLICY_PER_TASK, NULL));
  mine = cubert_stream_id_current();
  CHECK_EQ_U64(cubert_stream_id_current().value, mine.value);
  a = run_query_thread();
  b = run_query_thread();
  CHECK_EQ_U64(a.first.value, a.second.value);
  CHECK(a.first.value != b.first.value);
  CHECK(a.first.value != mine.value);
}

TEST(stream_id_policy_invalid_unchanged) {
  CHECK_OK(cubert_stream_id_set_policy(CUBERT_STREAM_POLICY_SINGLE, NULL));
  CHECK_STATUS(cubert_stream_id_set_policy((cubert_stream_policy_t)3, NULL),
               CUBERT_STATUS_INVALID_ARGUMENT);
  CHECK_STATUS(cubert_stream_id_set_policy((cubert_stream_policy_t)-1, NULL),
               CUBERT_STATUS_INVALID_ARGUMENT);
  CHECK_EQ_U64(cubert_stream_id_policy(), CUBERT_STREAM_POLICY_SINGLE);
}

/* ---- degraded mode -------------------------------------------------------------------- */

/* Per-thread state is thread-local storage, not pthread keys: a process
 * that exhausted PTHREAD_KEYS_MAX before the first query still gets per-thread
 * ids and working overrides. (Needs a fresh process: the runner forks one per
 * test; under --no-fork keep this test last.) */
TEST(stream_id_needs_no_pthread_keys) {
  static pthread_key_t keys[4096];
  size_t n = 0, i;
  int rc = 0;
  cubert_stream_id_token_t tok, forged;
  cubert_stream_id_t mine;
  thread_ids_t other;
  while (n < sizeof keys / sizeof keys[0] && (rc = pthread_key_create(&keys[n], NULL)) == 0) n++;
  if (rc != EAGAIN) TEST_SKIP("could not exhaust pthread keys");
  mine = cubert_stream_id_current();
  CHECK_EQ_U64(cubert_stream_id_current().value, mine.value); /* stable */
  other = run_query_thread();
  CHECK(other.first.value != mine.value); /* the other thread got its own */
  CHECK_EQ_U64(other.first.value, other.second.value);
  CHECK_OK(cubert_stream_id_executes_begin(sid(3), &tok, NULL));
  CHECK_EQ_U64(cubert_stream_id_current().value, 3);
  /* A forged "active" token that is not the innermost cannot be ended. */
  memset(&forged, 0, sizeof forged);
  forged.state_ = 0x53544944u;
  CHECK_STATUS(cubert_stream_id_executes_end(&forged, NULL), CUBERT_STATUS_INVALID_ARGUMENT);
  CHECK_OK(cubert_stream_id_executes_end(&tok, NULL));
  CHECK_EQ_U64(cubert_stream_id_current().value, mine.value);
  for (i = 0; i < n; i++) pthread_key_delete(keys[i]);
}
