/* SPDX-License-Identifier: MIT */
/*
 * tests/cuda/test_cuda_comm_lazy.c: the lazy posts of an in-process
 * all_reduce (backend-cuda/comm/cuda_comm.h, "Lazy posts"). A member's post
 * enqueues nothing; the round runs on each member's own communication
 * stream when nothing else came there before the last post issued it
 * (test_cuda_comm_costs.c counts that path). Here the slow paths: work that
 * reaches the stream first (the member's next collective, its
 * sync_collective, a collective of another communicator) closes the post's
 * gate, so the stream keeps the call order; a gate that cannot be closed
 * aborts the communicator (every member gets the error, nothing hangs);
 * members driven by threads of their own.
 */
#include "cuda_comm_test.h"

#include <pthread.h>
#include <string.h>

static void set_f32(comm_env_t *e, cubert_handle_t *h, uint32_t n, float base) {
  float v[8];
  uint32_t i, k;
  for (i = 0; i < n; i++) {
    for (k = 0; k < 8; k++) v[k] = base * (float)(i + 1) + (float)k;
    h[i] = comm_f32(e->c[i], v, 8);
  }
}

static void all_reduce(comm_env_t *e, uint32_t i, cubert_handle_t *h, uint32_t n) {
  CHECK_OK(cubert_client_all_reduce(e->c[i], &h[i], &h[i], CUBERT_COMM_DTYPE_F32, e->ids, n,
                                    CUBERT_REDUCE_OPERATION_SUM, NULL));
}

/* Every member's buffer holds `want(k)` after sync_collective. */
static void expect_f32(comm_env_t *e, cubert_handle_t *h, uint32_t n, float scale, float base) {
  float out[8];
  uint32_t i, k;
  for (i = 0; i < n; i++) {
    CHECK_OK(cubert_client_sync_collective(e->c[i], NULL));
    CHECK_OK(cubert_client_sync(e->c[i], NULL));
    comm_read_f32(e->c[i], &h[i], out, 8);
    for (k = 0; k < 8; k++)
      CHECK_MSG(out[k] == scale * (base + (float)k), "device %u [%u] = %g, want %g", (unsigned)i,
                (unsigned)k, (double)out[k], (double)(scale * (base + (float)k)));
  }
}

/* Device 1 posts rounds 1 and 2 before device 0 posts round 1: its second
 * post finds round 1 not issued and closes round 1's gate first (one gate
 * wait, F), round 1 then runs on its stream N behind F and writes the gate,
 * and round 2 runs on the communication stream behind that gate. In place,
 * so round 2 reads round 1's result. */
TEST(cuda_comm_lazy_post_gated_by_the_members_next_collective) {
  comm_env_t e;
  cubert_handle_t h[2];
  fake_cuda_stats_t c0, c1;
  uint32_t i;
  comm_use(0, 2);
  comm_open(&e, 2, 0);
  set_f32(&e, h, 2, 10.0f); /* device i: 10 (i + 1) + k */
  all_reduce(&e, 0, h, 2);  /* the communicators made and used (round 0) */
  all_reduce(&e, 1, h, 2);
  c0 = comm_cuda_stats();
  all_reduce(&e, 1, h, 2); /* round 1: lazy */
  CHECK_EQ_U64(comm_cuda_stats().stream_waits, c0.stream_waits); /* nothing enqueued */
  all_reduce(&e, 1, h, 2); /* round 2: round 1's gate closes first */
  c1 = comm_cuda_stats();
  CHECK_EQ_U64(c1.stream_waits - c0.stream_waits, 1);
  CHECK_EQ_U64(c1.stream_writes - c0.stream_writes, 0); /* not issued yet */
  all_reduce(&e, 0, h, 2); /* issues round 1: device 1's part on N, its gate written */
  c1 = comm_cuda_stats();
  CHECK_EQ_U64(c1.stream_writes - c0.stream_writes, 1);
  all_reduce(&e, 0, h, 2); /* issues round 2 on both communication streams */
  c1 = comm_cuda_stats();
  CHECK_EQ_U64(c1.stream_waits - c0.stream_waits, 1);
  CHECK_EQ_U64(c1.stream_writes - c0.stream_writes, 1);
  /* three rounds of x0 + x1 (30 + 2k), doubling it twice more */
  expect_f32(&e, h, 2, 8.0f, 15.0f);
  for (i = 0; i < 2; i++) CHECK_OK(cubert_client_handle_release(e.c[i], &h[i], NULL));
  comm_close(&e);
}

/* Device 1 posts, then waits for its collectives (sync_collective: the held
 * pins' event and the caller's wait on the communication stream): the gate
 * closes before them, so the wait covers the round once device 0 posts. */
TEST(cuda_comm_lazy_post_gated_by_sync_collective) {
  comm_env_t e;
  cubert_handle_t h[2];
  fake_cuda_stats_t c0, c1;
  uint32_t i;
  comm_use(0, 2);
  comm_open(&e, 2, 0);
  set_f32(&e, h, 2, 10.0f);
  c0 = comm_cuda_stats();
  all_reduce(&e, 1, h, 2);
  CHECK_OK(cubert_client_sync_collective(e.c[1], NULL)); /* closes the gate */
  c1 = comm_cuda_stats();
  CHECK_EQ_U64(c1.stream_waits - c0.stream_waits, 1);
  all_reduce(&e, 0, h, 2);
  c1 = comm_cuda_stats();
  CHECK_EQ_U64(c1.stream_writes - c0.stream_writes, 1);
  expect_f32(&e, h, 2, 2.0f, 15.0f);
  for (i = 0; i < 2; i++) CHECK_OK(cubert_client_handle_release(e.c[i], &h[i], NULL));
  comm_close(&e);
}

/* Device 1 belongs to two communicators, {0, 1} and {1, 2}, on one
 * communication stream: its post to the second closes the gate of its
 * pending post to the first, so the second's round runs behind the first's
 * (the fake runs a collective at once: the rounds are issued in stream
 * order here, a GPU's stream would wait for the gate instead). */
TEST(cuda_comm_lazy_post_gated_by_another_communicator) {
  comm_env_t e;
  cubert_handle_t a[3], b[3];
  cubert_device_id_t first[2], second[2];
  fake_cuda_stats_t c0, c1;
  float out[8];
  uint32_t i, k;
  comm_use(0, 3);
  comm_open(&e, 3, 0);
  first[0] = e.ids[0];
  first[1] = e.ids[1];
  second[0] = e.ids[1];
  second[1] = e.ids[2];
  set_f32(&e, a, 3, 10.0f);
  set_f32(&e, b, 3, 100.0f);
  c0 = comm_cuda_stats();
  CHECK_OK(cubert_client_all_reduce(e.c[1], &a[1], &a[1], CUBERT_COMM_DTYPE_F32, first, 2,
                                    CUBERT_REDUCE_OPERATION_SUM, NULL));
  CHECK_OK(cubert_client_all_reduce(e.c[1], &b[1], &b[1], CUBERT_COMM_DTYPE_F32, second, 2,
                                    CUBERT_REDUCE_OPERATION_SUM, NULL));
  c1 = comm_cuda_stats();
  CHECK_EQ_U64(c1.stream_waits - c0.stream_waits, 1); /* the first post's gate */
  CHECK_OK(cubert_client_all_reduce(e.c[0], &a[0], &a[0], CUBERT_COMM_DTYPE_F32, first, 2,
                                    CUBERT_REDUCE_OPERATION_SUM, NULL));
  c1 = comm_cuda_stats();
  CHECK_EQ_U64(c1.stream_writes - c0.stream_writes, 1); /* the first's round opened it */
  CHECK_OK(cubert_client_all_reduce(e.c[2], &b[2], &b[2], CUBERT_COMM_DTYPE_F32, second, 2,
                                    CUBERT_REDUCE_OPERATION_SUM, NULL));
  c1 = comm_cuda_stats();
  CHECK_EQ_U64(c1.stream_waits - c0.stream_waits, 1); /* the second's ran on the streams */
  for (i = 0; i < 3; i++) {
    cubert_error_t err;
    CHECK_OK(cubert_client_sync_collective(e.c[i], NULL));
    CHECK_OK_E(cubert_client_sync(e.c[i], &err), err);
  }
  /* a: devices 0 and 1 (10 + k, 20 + k); b: devices 1 and 2 (200 + k, 300 + k) */
  for (i = 0; i < 2; i++) {
    comm_read_f32(e.c[i], &a[i], out, 8);
    for (k = 0; k < 8; k++) CHECK(out[k] == 30.0f + 2.0f * (float)k);
  }
  for (i = 1; i < 3; i++) {
    comm_read_f32(e.c[i], &b[i], out, 8);
    for (k = 0; k < 8; k++) CHECK(out[k] == 500.0f + 2.0f * (float)k);
  }
  for (i = 0; i < 3; i++) {
    CHECK_OK(cubert_client_handle_release(e.c[i], &a[i], NULL));
    CHECK_OK(cubert_client_handle_release(e.c[i], &b[i], NULL));
  }
  comm_close(&e);
}

/* The gate of a lazy post cannot be closed (cuStreamWaitValue32 fails when
 * the member's sync_collective comes): the stream's order cannot be kept,
 * so the communicator is aborted: both members (each with a collective
 * before) get the error at their next sync, a later all_reduce is refused at
 * once, nothing hangs or leaks. */
TEST(cuda_comm_lazy_post_whose_gate_fails_aborts) {
  comm_env_t e;
  cubert_handle_t h[2];
  cubert_error_t err;
  uint32_t i;
  comm_use(0, 2);
  comm_open(&e, 2, 0);
  set_f32(&e, h, 2, 10.0f);
  all_reduce(&e, 0, h, 2);
  all_reduce(&e, 1, h, 2);
  all_reduce(&e, 1, h, 2);
  fake_knob("CUBERT_FAKE_CUDA_WAIT_VALUE_RESULT", "1"); /* CUDA_ERROR_INVALID_VALUE */
  comm_expect_queued(e.c[1], CUBERT_ERROR_INVALID_ARGUMENT, "cuStreamWaitValue32");
  unsetenv("CUBERT_FAKE_CUDA_WAIT_VALUE_RESULT");
  comm_expect_queued(e.c[0], CUBERT_ERROR_INVALID_ARGUMENT, "cuStreamWaitValue32");
  CHECK_STATUS(cubert_client_all_reduce(e.c[0], &h[0], &h[0], CUBERT_COMM_DTYPE_F32, e.ids, 2,
                                        CUBERT_REDUCE_OPERATION_SUM, &err),
               CUBERT_STATUS_FAILED_PRECONDITION);
  CHECK_REASON_HAS(err, "aborted");
  for (i = 0; i < 2; i++) CHECK_OK(cubert_client_handle_release(e.c[i], &h[i], NULL));
  comm_close(&e);
}

/* ---- members on threads of their own ------------------------------------------------------- */

#define LAZY_ROUNDS 100u

typedef struct lazy_thread_t {
  comm_env_t *e;
  cubert_handle_t *h;
  uint32_t i, n;
  cubert_status_t status;
} lazy_thread_t;

static void *lazy_thread(void *arg) {
  lazy_thread_t *t = (lazy_thread_t *)arg;
  uint32_t r;
  t->status = CUBERT_STATUS_OK;
  for (r = 0; r < LAZY_ROUNDS && t->status == CUBERT_STATUS_OK; r++) {
    t->status = cubert_client_all_reduce(t->e->c[t->i], &t->h[t->i], &t->h[t->i],
                                         CUBERT_COMM_DTYPE_F32, t->e->ids, t->n,
                                         r % 2u ? CUBERT_REDUCE_OPERATION_MEAN
                                                : CUBERT_REDUCE_OPERATION_SUM,
                                         NULL);
    if (t->status == CUBERT_STATUS_OK && r % 30u == 29u) /* now and then: the slow path */
      t->status = cubert_client_sync_collective(t->e->c[t->i], NULL);
  }
  return NULL;
}

/* Each member posts its rounds from its own thread (the issuer is whichever
 * posts last; it enqueues the others' parts on their streams, the Mean's
 * kernel too, while their threads go on): Sum and Mean in turn, in place,
 * so every value is (k + 1) n^(rounds / 2) once every round ran once, each
 * on the previous one's result. */
static void threads_body(uint32_t n) {
  comm_env_t e;
  cubert_handle_t h[4];
  lazy_thread_t t[4];
  pthread_t th[4];
  float v[8], out[8], scale = 1.0f;
  uint32_t i, k;
  comm_use(0, n);
  for (k = 0; k < LAZY_ROUNDS / 2u; k++) scale *= (float)n;
  comm_open(&e, n, 0);
  for (k = 0; k < 8; k++) v[k] = (float)(k + 1);
  for (i = 0; i < n; i++) h[i] = comm_f32(e.c[i], v, 8);
  for (i = 0; i < n; i++) {
    t[i].e = &e;
    t[i].h = h;
    t[i].i = i;
    t[i].n = n;
    CHECK(pthread_create(&th[i], NULL, lazy_thread, &t[i]) == 0);
  }
  for (i = 0; i < n; i++) CHECK(pthread_join(th[i], NULL) == 0);
  for (i = 0; i < n; i++) {
    CHECK_OK(t[i].status);
    CHECK_OK(cubert_client_sync_collective(e.c[i], NULL));
    CHECK_OK(cubert_client_sync(e.c[i], NULL));
    comm_read_f32(e.c[i], &h[i], out, 8);
    for (k = 0; k < 8; k++)
      CHECK_MSG(out[k] == scale * (float)(k + 1), "device %u [%u] = %g", (unsigned)i,
                (unsigned)k, (double)out[k]);
  }
  CHECK_EQ_U64(comm_nccl_stats().group_ends, LAZY_ROUNDS + 2u); /* and the two first ones */
  for (i = 0; i < n; i++) CHECK_OK(cubert_client_handle_release(e.c[i], &h[i], NULL));
  comm_close(&e);
}

TEST(cuda_comm_lazy_posts_two_threads) { threads_body(2); }
TEST(cuda_comm_lazy_posts_four_threads) { threads_body(4); }
