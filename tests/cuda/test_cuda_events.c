/* SPDX-License-Identifier: MIT */
/*
 * tests/cuda/test_cuda_events.c: the event pool (created once, reused) and
 * the event primitives, over the fake driver.
 */
#include "cuda_test.h"

TEST(cuda_event_pool_reuses_events) {
  fake_env_t env;
  cubert_error_t err;
  cubert_cuda_event_t *a = NULL, *b = NULL, *c = NULL;
  uint64_t created, reused, live;
  int i;
  fake_env_open(&env);
  CHECK_OK(cubert__cuda_event_record(&env.stream, false, &a, &err));
  CHECK_OK(cubert__cuda_event_record(&env.stream, false, &b, &err));
  CHECK(a != b);
  cubert__cuda_event_pool_counts(env.device, &created, &reused, &live);
  CHECK_EQ_U64(created, 2);
  CHECK_EQ_U64(live, 2);
  cubert__cuda_event_release(env.device, a);
  cubert__cuda_event_release(env.device, b);
  /* steady state: records come from the pool, no cuEventCreate */
  for (i = 0; i < 100; i++) {
    CHECK_OK(cubert__cuda_event_record(&env.stream, false, &c, &err));
    cubert__cuda_event_release(env.device, c);
  }
  cubert__cuda_event_pool_counts(env.device, &created, &reused, &live);
  CHECK_EQ_U64(created, 2);
  CHECK_EQ_U64(reused, 100);
  CHECK_EQ_U64(live, 0);
  CHECK_EQ_U64(fake_stats(&env.cu).events_created, 2);
  CHECK_EQ_U64(fake_stats(&env.cu).event_records, 102);
  cubert__cuda_event_release(env.device, NULL);
  fake_env_close(&env);
}

TEST(cuda_event_timed_events_apart) {
  fake_env_t env;
  cubert_error_t err;
  cubert_cuda_event_t *plain = NULL, *t0 = NULL, *t1 = NULL;
  uint64_t ns = 0, created;
  fake_env_open(&env);
  CHECK_OK(cubert__cuda_event_record(&env.stream, false, &plain, &err));
  CHECK_OK(cubert__cuda_event_record(&env.stream, true, &t0, &err));
  CHECK_OK(cubert__cuda_event_record(&env.stream, true, &t1, &err));
  CHECK_EQ_U64(plain->timed, 0);
  CHECK_EQ_U64(t0->timed, 1);
  CHECK_OK(cubert__cuda_event_synchronize(env.device, t1, &err));
  CHECK_OK(cubert__cuda_event_elapsed(env.device, t0, t1, &ns, &err));
  CHECK_EQ_U64(ns, 500000); /* the fake's 0.5 ms */
  CHECK_STATUS(cubert__cuda_event_elapsed(env.device, plain, t1, &ns, &err),
               CUBERT_STATUS_INVALID_ARGUMENT);
  CHECK_STATUS(cubert__cuda_event_elapsed(env.device, t0, t1, NULL, &err),
               CUBERT_STATUS_INVALID_ARGUMENT);
  /* a released timed event is not handed out as a plain one, nor the reverse */
  cubert__cuda_event_release(env.device, t0);
  cubert__cuda_event_release(env.device, t1);
  cubert__cuda_event_release(env.device, plain);
  CHECK_OK(cubert__cuda_event_record(&env.stream, true, &t0, &err));
  CHECK_EQ_U64(t0->timed, 1);
  CHECK_OK(cubert__cuda_event_record(&env.stream, false, &plain, &err));
  CHECK_EQ_U64(plain->timed, 0);
  CHECK_OK(cubert__cuda_event_record(&env.stream, false, &t1, &err));
  CHECK_EQ_U64(t1->timed, 0);
  cubert__cuda_event_pool_counts(env.device, &created, NULL, NULL);
  CHECK_EQ_U64(created, 4); /* the second plain one is new */
  cubert__cuda_event_release(env.device, t0);
  cubert__cuda_event_release(env.device, t1);
  cubert__cuda_event_release(env.device, plain);
  fake_env_close(&env);
}

TEST(cuda_event_query_wait_synchronize) {
  fake_env_t env;
  cubert_cuda_stream_t other;
  cubert_error_t err;
  cubert_cuda_event_t *e = NULL;
  bool done = true;
  fake_knob("CUBERT_FAKE_CUDA_EVENT_DELAY", "2");
  fake_env_open(&env);
  CHECK_OK(cubert__cuda_stream_initialize(env.device, &other, &err));
  CHECK_OK(cubert__cuda_event_record(&env.stream, false, &e, &err));
  CHECK_OK(cubert__cuda_event_query(env.device, e, &done, &err));
  CHECK(!done);
  CHECK_OK(cubert__cuda_event_wait(&other, e, &err));
  CHECK_OK(cubert__cuda_event_query(env.device, e, &done, &err));
  CHECK(!done);
  CHECK_OK(cubert__cuda_event_query(env.device, e, &done, &err));
  CHECK(done);
  cubert__cuda_event_release(env.device, e);
  CHECK_OK(cubert__cuda_event_record(&env.stream, false, &e, &err)); /* the pooled one again */
  CHECK_OK(cubert__cuda_event_synchronize(env.device, e, &err));
  CHECK_OK(cubert__cuda_event_query(env.device, e, &done, &err));
  CHECK(done);
  /* bad input */
  CHECK_STATUS(cubert__cuda_event_record(&env.stream, false, NULL, &err),
               CUBERT_STATUS_INVALID_ARGUMENT);
  CHECK_STATUS(cubert__cuda_event_wait(&other, NULL, &err), CUBERT_STATUS_INVALID_ARGUMENT);
  CHECK_STATUS(cubert__cuda_event_query(env.device, e, NULL, &err), CUBERT_STATUS_INVALID_ARGUMENT);
  CHECK_STATUS(cubert__cuda_event_synchronize(env.device, NULL, &err),
               CUBERT_STATUS_INVALID_ARGUMENT);
  cubert__cuda_event_release(env.device, e);
  cubert__cuda_stream_deinitialize(&other);
  fake_env_close(&env);
}

TEST(cuda_event_create_failure_hands_out_nothing) {
  fake_env_t env;
  cubert_error_t err;
  cubert_cuda_event_t *e = NULL;
  uint64_t live;
  fake_env_open(&env);
  counting_allocator_fail_at(&env.counting, 1, 0);
  CHECK_STATUS(cubert__cuda_event_record(&env.stream, false, &e, &err),
               CUBERT_STATUS_RESOURCE_EXHAUSTED);
  CHECK(e == NULL);
  cubert__cuda_event_pool_counts(env.device, NULL, NULL, &live);
  CHECK_EQ_U64(live, 0);
  fake_env_close(&env);
}
