/* SPDX-License-Identifier: MIT */
/*
 * tests/cuda/test_cuda_comm.c: the CUDA driver's collectives (cuda_comm.h)
 * through the client API: which path each takes (NCCL on the communication
 * stream for one rank; gates and a group call for several members; peer
 * copies or device copies for send / recv), what reaches the next sync
 * (NCCL's errors, synchronous and asynchronous), what refuses at once
 * (NCCL unavailable, devices sharing a GPU, too many pending collectives),
 * the watchdog. cuda_comm_* run over the fake libcuda and the fake
 * libnccl; cuda_gpu_comm_* run the same bodies on the machine's GPUs with
 * libnccl.so.2 ("skipped: <reason>" without, or with too few GPUs).
 */
#include "cuda_comm_test.h"

#include <time.h>

static const float k_v[8] = {1, 2, 3, 4, 5, 6, 7, 8};

/* ---- one rank: NCCL on the communication stream ---------------------------------------- */

static void single_rank_body(int gpu) {
  comm_env_t e;
  cubert_handle_t src, dst;
  float out[8];
  int op, k;
  comm_use(gpu, 1);
  comm_open(&e, 1, 0);
  src = comm_f32(e.c[0], k_v, 8);
  for (op = 0; op < 2; op++) {
    CHECK_OK(cubert_client_empty(e.c[0], sizeof k_v, &dst, NULL));
    CHECK_OK(cubert_client_all_reduce(e.c[0], &src, &dst, CUBERT_COMM_DTYPE_F32, e.ids, 1,
                                      (cubert_reduce_operation_t)op, NULL));
    CHECK_OK(cubert_client_sync_collective(e.c[0], NULL));
    comm_read_f32(e.c[0], &dst, out, 8);
    for (k = 0; k < 8; k++) CHECK(out[k] == k_v[k]); /* Sum and Mean of one */
    CHECK_OK(cubert_client_handle_release(e.c[0], &dst, NULL));
  }
  /* in place, many: a pipeline on the communication stream */
  for (k = 0; k < 50; k++)
    CHECK_OK(cubert_client_all_reduce(e.c[0], &src, &src, CUBERT_COMM_DTYPE_F32, e.ids, 1,
                                      CUBERT_REDUCE_OPERATION_SUM, NULL));
  CHECK_OK(cubert_client_sync_collective(e.c[0], NULL));
  comm_read_f32(e.c[0], &src, out, 8);
  CHECK(out[7] == 8.0f);
  if (!gpu) {
    fake_nccl_stats_t n = comm_nccl_stats();
    CHECK_EQ_U64(n.init_all, 1);
    CHECK_EQ_U64(n.all_reduces, 52);
    CHECK_EQ_U64(n.group_ends, 0);                  /* called on its own */
    CHECK_EQ_U64(comm_cuda_stats().stream_waits, 0); /* no gate */
  }
  CHECK_OK(cubert_client_handle_release(e.c[0], &src, NULL));
  comm_close(&e);
}

TEST(cuda_comm_single_rank_all_reduce_goes_to_nccl) { single_rank_body(0); }
TEST(cuda_gpu_comm_single_rank_all_reduce) { single_rank_body(1); }

/* ---- several members: gates and one group call ------------------------------------------- */

static void two_gpus_body(int gpu) {
  comm_env_t e;
  cubert_handle_t h[2];
  float v[8], out[8];
  uint32_t i, k;
  int op;
  comm_use(gpu, 2);
  comm_open(&e, 2, 0);
  for (op = 0; op < 2; op++) {
    for (i = 0; i < 2; i++) {
      for (k = 0; k < 8; k++) v[k] = (float)(i * 10 + k);
      h[i] = comm_f32(e.c[i], v, 8);
    }
    /* device 1 first: its post enqueues nothing until device 0's completes the round */
    for (i = 2; i-- > 0;)
      CHECK_OK(cubert_client_all_reduce(e.c[i], &h[i], &h[i], CUBERT_COMM_DTYPE_F32, e.ids, 2,
                                        (cubert_reduce_operation_t)op, NULL));
    for (i = 0; i < 2; i++) {
      CHECK_OK(cubert_client_sync_collective(e.c[i], NULL));
      comm_read_f32(e.c[i], &h[i], out, 8);
      for (k = 0; k < 8; k++)
        CHECK_MSG(out[k] == (op ? 5.0f + (float)k : 10.0f + 2.0f * (float)k), "op %d [%u] %g",
                  op, (unsigned)k, (double)out[k]);
      CHECK_OK(cubert_client_handle_release(e.c[i], &h[i], NULL));
    }
  }
  if (!gpu) {
    fake_cuda_stats_t c = comm_cuda_stats();
    fake_nccl_stats_t n = comm_nccl_stats();
    CHECK_EQ_U64(n.init_all, 1);  /* ncclCommInitAll over both GPUs, once */
    CHECK_EQ_U64(n.group_ends, 2 + 2); /* one group call per round, two before the first gate */
    /* device 0 posts last (a direct post), device 1's post was lazy and nothing came to
     * its stream before the round: both parts run on their own streams, no gate */
    CHECK_EQ_U64(c.stream_waits, 0);
    CHECK_EQ_U64(c.stream_writes, 0);
  }
  comm_close(&e);
}

TEST(cuda_comm_two_gpus_all_reduce_without_gates) { two_gpus_body(0); }
TEST(cuda_gpu_comm_two_gpus_all_reduce) { two_gpus_body(1); }

/* ---- send / recv: copies ------------------------------------------------------------------- */

static void send_recv(comm_env_t *e, uint32_t rounds) {
  double v[6], out[6];
  cubert_handle_t src, dst;
  cubert_copy_descriptor_t d;
  cubert_error_t err;
  uint32_t r, k;
  for (r = 0; r < rounds; r++) {
    for (k = 0; k < 6; k++) v[k] = 1.5 * k + r;
    CHECK_OK(cubert_client_create_from_slice(e->c[0], v, sizeof v, &src, NULL));
    memset(&d, 0, sizeof d);
    d.binding = src;
    CHECK_OK_E(cubert_client_send(e->c[0], &d, CUBERT_COMM_DTYPE_F64, e->ids[1], &err), err);
    CHECK_OK_E(cubert_client_recv(e->c[1], sizeof v, CUBERT_COMM_DTYPE_F64, e->ids[0], &dst, &err),
               err);
    CHECK_OK_E(cubert_client_sync_collective(e->c[1], &err), err);
    CHECK_OK_E(cubert_client_read_one(e->c[1], &dst, out, sizeof out, &err), err);
    CHECK(memcmp(out, v, sizeof v) == 0);
    CHECK_OK(cubert_client_handle_release(e->c[0], &src, NULL));
    CHECK_OK(cubert_client_handle_release(e->c[1], &dst, NULL));
  }
  CHECK_OK(cubert_client_sync_collective(e->c[0], NULL));
  CHECK_OK(cubert_client_sync(e->c[0], NULL));
}

static void peer_copy_body(int gpu) {
  comm_env_t e;
  comm_use(gpu, 2);
  comm_open(&e, 2, 0);
  send_recv(&e, 3);
  if (!gpu) {
    fake_cuda_stats_t c = comm_cuda_stats();
    CHECK_EQ_U64(c.copies_peer, 3);
    CHECK_EQ_U64(c.peer_enables, 1); /* once per GPU pair and direction */
    CHECK_EQ_U64(comm_nccl_stats().sends, 0); /* within the process: no NCCL */
  }
  comm_close(&e);
}

TEST(cuda_comm_send_recv_between_gpus_is_a_peer_copy) { peer_copy_body(0); }
TEST(cuda_gpu_comm_send_recv_between_gpus) { peer_copy_body(1); }

TEST(cuda_comm_send_recv_without_peer_access_is_staged_by_the_driver) {
  comm_env_t e;
  fake_knob("CUBERT_FAKE_CUDA_NO_PEER", "1");
  comm_use(0, 2);
  comm_open(&e, 2, 0);
  send_recv(&e, 2);
  CHECK_EQ_U64(comm_cuda_stats().copies_peer, 2); /* cuMemcpyPeerAsync stages it itself */
  CHECK_EQ_U64(comm_cuda_stats().peer_enables, 0);
  comm_close(&e);
}

/* Two devices on one GPU: send / recv and to_client are device copies; an
 * all_reduce is refused at once (NCCL takes one rank per GPU). */
static void shared_gpu_body(int gpu) {
  comm_env_t e;
  cubert_handle_t h[2], moved;
  cubert_error_t err;
  float out[8];
  uint64_t d2d;
  uint32_t i, k;
  comm_use(gpu, 1);
  comm_open_on(&e, 2, 0, 1); /* both on GPU 0, however many the machine has */
  d2d = gpu ? 0 : comm_cuda_stats().copies_d2d;
  send_recv(&e, 2);
  h[0] = comm_f32(e.c[0], k_v, 8);
  CHECK_OK(cubert_client_to_client(e.c[0], &h[0], e.c[1], CUBERT_COMM_DTYPE_F32, &moved, NULL));
  comm_read_f32(e.c[1], &moved, out, 8); /* reads on the destination wait for the copy */
  CHECK(memcmp(out, k_v, sizeof k_v) == 0);
  CHECK_OK(cubert_client_handle_release(e.c[1], &moved, NULL));
  if (!gpu) {
    CHECK(comm_cuda_stats().copies_d2d >= d2d + 3);
    CHECK_EQ_U64(comm_cuda_stats().copies_peer, 0);
  }
  h[1] = comm_f32(e.c[1], k_v, 8);
  CHECK_OK(cubert_client_ensure_init_collective(e.c[1], e.ids, 2, NULL));
  CHECK_STATUS(cubert_client_all_reduce(e.c[0], &h[0], &h[0], CUBERT_COMM_DTYPE_F32, e.ids, 2,
                                        CUBERT_REDUCE_OPERATION_SUM, &err),
               CUBERT_STATUS_UNSUPPORTED);
  CHECK_REASON_HAS(err, "share GPU 0");
  CHECK_REASON_HAS(err, "Duplicate GPU detected");
  for (i = 0; i < 2; i++) { /* nothing was enqueued */
    CHECK_OK(cubert_client_sync_collective(e.c[i], NULL));
    CHECK_OK(cubert_client_sync(e.c[i], NULL));
    comm_read_f32(e.c[i], &h[i], out, 8);
    for (k = 0; k < 8; k++) CHECK(out[k] == k_v[k]);
    CHECK_OK(cubert_client_handle_release(e.c[i], &h[i], NULL));
  }
  comm_close(&e);
}

TEST(cuda_comm_devices_sharing_a_gpu_copy_and_refuse_all_reduce) { shared_gpu_body(0); }
TEST(cuda_gpu_comm_devices_sharing_a_gpu) { shared_gpu_body(1); }

/* ---- NCCL unavailable -------------------------------------------------------------------------- */

static void unavailable_body(const char *library, const char *reason) {
  comm_env_t e;
  cubert_handle_t h[2];
  cubert_error_t err;
  float out[8];
  uint32_t i;
  fake_knob("CUBERT_LIBNCCL", library);
  comm_use(0, 2);
  comm_open(&e, 2, 0);
  for (i = 0; i < 2; i++) h[i] = comm_f32(e.c[i], k_v, 8);
  CHECK_STATUS(cubert_client_all_reduce(e.c[0], &h[0], &h[0], CUBERT_COMM_DTYPE_F32, e.ids, 1,
                                        CUBERT_REDUCE_OPERATION_SUM, &err),
               CUBERT_STATUS_UNSUPPORTED);
  CHECK_REASON_HAS(err, "NCCL unavailable: ");
  CHECK_REASON_HAS(err, reason);
  CHECK_STATUS(cubert_client_all_reduce(e.c[0], &h[0], &h[0], CUBERT_COMM_DTYPE_F32, e.ids, 2,
                                        CUBERT_REDUCE_OPERATION_SUM, &err),
               CUBERT_STATUS_UNSUPPORTED);
  CHECK_REASON_HAS(err, "NCCL unavailable: ");
  /* the devices work on: single-device work, and send / recv (no NCCL needed) */
  CHECK_OK(cubert_client_write(e.c[0], &h[0], k_v, sizeof k_v, NULL));
  comm_read_f32(e.c[0], &h[0], out, 8);
  CHECK(memcmp(out, k_v, sizeof k_v) == 0);
  send_recv(&e, 1);
  for (i = 0; i < 2; i++) CHECK_OK(cubert_client_handle_release(e.c[i], &h[i], NULL));
  comm_close(&e);
}

TEST(cuda_comm_nccl_missing_refuses_all_reduce_only) {
  unavailable_body(CUBERT_TEST_BUILD_DIR "/no-such-dir/libnccl.so.2", "cannot load");
}

TEST(cuda_comm_nccl_too_old_refuses_all_reduce_only) {
  unavailable_body(FAKE_LIBNCCL_OLD, "is older than the required 2.7.0");
}

TEST(cuda_comm_nccl_without_a_symbol_refuses_all_reduce_only) {
  unavailable_body(FAKE_LIBNCCL_NO_SEND, "has no ncclSend");
}

/* ---- NCCL's errors ------------------------------------------------------------------------------ */

/* A failing ncclCommInitAll: the round fails on both members (queued); the
 * next all_reduce fails the same way; send / recv still work. One rank: the
 * call itself is refused. */
TEST(cuda_comm_nccl_init_failure) {
  comm_env_t e;
  cubert_handle_t h[2];
  cubert_error_t err;
  uint32_t i, round;
  fake_knob("CUBERT_FAKE_NCCL_INIT_RESULT", "2");
  comm_use(0, 2);
  comm_open(&e, 2, 0);
  for (i = 0; i < 2; i++) h[i] = comm_f32(e.c[i], k_v, 8);
  for (round = 0; round < 2; round++) {
    for (i = 0; i < 2; i++)
      CHECK_OK(cubert_client_all_reduce(e.c[i], &h[i], &h[i], CUBERT_COMM_DTYPE_F32, e.ids, 2,
                                        CUBERT_REDUCE_OPERATION_SUM, NULL));
    for (i = 0; i < 2; i++)
      comm_expect_queued(e.c[i], CUBERT_ERROR_SERVER_GENERIC, "ncclCommInitAll failed: ncclSystemError");
  }
  send_recv(&e, 1);
  CHECK_STATUS(cubert_client_all_reduce(e.c[0], &h[0], &h[0], CUBERT_COMM_DTYPE_F32, e.ids, 1,
                                        CUBERT_REDUCE_OPERATION_SUM, &err),
               CUBERT_STATUS_INTERNAL);
  CHECK_REASON_HAS(err, "ncclCommInitAll failed");
  for (i = 0; i < 2; i++) CHECK_OK(cubert_client_handle_release(e.c[i], &h[i], NULL));
  comm_close(&e);
}

/* ncclAllReduce fails (ncclInternalError): a stream error at the next sync
 * after sync_collective, and the communicator is aborted; an
 * ncclInvalidArgument only fails the call. One rank, then two members. */
static void call_error_body(uint32_t n) {
  comm_env_t e;
  cubert_handle_t h[2];
  cubert_error_t err;
  uint32_t i;
  comm_use(0, 2);
  comm_open(&e, n, 0);
  for (i = 0; i < n; i++) h[i] = comm_f32(e.c[i], k_v, 8);
  /* one round that works first: the communicators are made (cuda_comm_setup.c) */
  for (i = 0; i < n; i++)
    CHECK_OK(cubert_client_all_reduce(e.c[i], &h[i], &h[i], CUBERT_COMM_DTYPE_F32, e.ids, n,
                                      CUBERT_REDUCE_OPERATION_SUM, NULL));
  fake_knob("CUBERT_FAKE_NCCL_RESULT", "4");
  for (i = 0; i < n; i++)
    CHECK_OK(cubert_client_all_reduce(e.c[i], &h[i], &h[i], CUBERT_COMM_DTYPE_F32, e.ids, n,
                                      CUBERT_REDUCE_OPERATION_SUM, NULL));
  for (i = 0; i < n; i++)
    comm_expect_queued(e.c[i], CUBERT_ERROR_INVALID_ARGUMENT, "failed: ncclInvalidArgument");
  unsetenv("CUBERT_FAKE_NCCL_RESULT"); /* usable after an argument error */
  for (i = 0; i < n; i++)
    CHECK_OK(cubert_client_all_reduce(e.c[i], &h[i], &h[i], CUBERT_COMM_DTYPE_F32, e.ids, n,
                                      CUBERT_REDUCE_OPERATION_SUM, NULL));
  for (i = 0; i < n; i++) {
    float out[8];
    CHECK_OK(cubert_client_sync_collective(e.c[i], NULL));
    CHECK_OK(cubert_client_sync(e.c[i], NULL));
    comm_read_f32(e.c[i], &h[i], out, 8);
    CHECK(out[1] == 2.0f * (float)(n * n)); /* two rounds, the failed one wrote nothing */
  }
  fake_knob("CUBERT_FAKE_NCCL_RESULT", "3");
  for (i = 0; i < n; i++)
    CHECK_OK(cubert_client_all_reduce(e.c[i], &h[i], &h[i], CUBERT_COMM_DTYPE_F32, e.ids, n,
                                      CUBERT_REDUCE_OPERATION_SUM, NULL));
  for (i = 0; i < n; i++)
    comm_expect_queued(e.c[i], CUBERT_ERROR_SERVER_GENERIC, "failed: ncclInternalError");
  unsetenv("CUBERT_FAKE_NCCL_RESULT");
  CHECK_STATUS(cubert_client_all_reduce(e.c[0], &h[0], &h[0], CUBERT_COMM_DTYPE_F32, e.ids, n,
                                        CUBERT_REDUCE_OPERATION_SUM, &err),
               CUBERT_STATUS_FAILED_PRECONDITION);
  CHECK_REASON_HAS(err, "aborted");
  CHECK(comm_nccl_stats().aborts >= 1);
  for (i = 0; i < n; i++) CHECK_OK(cubert_client_handle_release(e.c[i], &h[i], NULL));
  comm_close(&e);
}

TEST(cuda_comm_nccl_call_errors_one_rank) { call_error_body(1); }
TEST(cuda_comm_nccl_call_errors_two_members) { call_error_body(2); }

/* An asynchronous error (ncclCommGetAsyncError): one rank, found when the
 * communication stream's errors are drained; two members, found by the
 * watchdog. Either way the next sync reports it and the communicator is
 * aborted (a later all_reduce: FAILED_PRECONDITION). */
static void async_error_body(uint32_t n) {
  comm_env_t e;
  cubert_handle_t h[2];
  cubert_error_t err;
  uint32_t i;
  comm_use(0, 2);
  comm_open(&e, n, 0);
  for (i = 0; i < n; i++) h[i] = comm_f32(e.c[i], k_v, 8);
  for (i = 0; i < n; i++)
    CHECK_OK(cubert_client_all_reduce(e.c[i], &h[i], &h[i], CUBERT_COMM_DTYPE_F32, e.ids, n,
                                      CUBERT_REDUCE_OPERATION_SUM, NULL));
  comm_nccl_async_error(CUBERT_NCCL_REMOTE_ERROR);
  if (n > 1) { /* the watchdog looks every 2 ms: the communicator is aborted soon */
    uint32_t ms = 0;
    while (cubert_client_ensure_init_collective(e.c[0], e.ids, n, NULL) == CUBERT_STATUS_OK &&
           ms < 5000) {
      struct timespec ts = {0, 1000000};
      nanosleep(&ts, NULL);
      ms++;
    }
    CHECK_MSG(ms < 5000, "the watchdog did not abort the communicator in 5 s");
  }
  for (i = 0; i < n; i++)
    comm_expect_queued(e.c[i], CUBERT_ERROR_DEVICE_LOST, "ncclCommGetAsyncError");
  comm_nccl_async_error(0);
  CHECK_STATUS(cubert_client_all_reduce(e.c[0], &h[0], &h[0], CUBERT_COMM_DTYPE_F32, e.ids, n,
                                        CUBERT_REDUCE_OPERATION_SUM, &err),
               CUBERT_STATUS_FAILED_PRECONDITION);
  for (i = 0; i < n; i++) CHECK_OK(cubert_client_handle_release(e.c[i], &h[i], NULL));
  comm_close(&e);
}

TEST(cuda_comm_async_error_one_rank_at_the_drain) { async_error_body(1); }
TEST(cuda_comm_async_error_two_members_by_the_watchdog) { async_error_body(2); }

/* ---- limits -------------------------------------------------------------------------------- */

/* A device posts CUDA_COMM_RING collectives its peer has not matched: the
 * next one is refused at once; the peer then catches up. */
TEST(cuda_comm_too_many_pending_collectives_are_refused) {
  comm_env_t e;
  cubert_handle_t h[2];
  cubert_error_t err;
  float out[8];
  uint32_t i, k;
  comm_use(0, 2);
  comm_open(&e, 2, 0);
  for (i = 0; i < 2; i++) h[i] = comm_f32(e.c[i], k_v, 8);
  for (k = 0; k < CUDA_COMM_RING; k++)
    CHECK_OK(cubert_client_all_reduce(e.c[0], &h[0], &h[0], CUBERT_COMM_DTYPE_F32, e.ids, 2,
                                      CUBERT_REDUCE_OPERATION_MEAN, NULL));
  CHECK_STATUS(cubert_client_all_reduce(e.c[0], &h[0], &h[0], CUBERT_COMM_DTYPE_F32, e.ids, 2,
                                        CUBERT_REDUCE_OPERATION_MEAN, &err),
               CUBERT_STATUS_RESOURCE_EXHAUSTED);
  CHECK_REASON_HAS(err, "wait for their peers");
  for (k = 0; k < CUDA_COMM_RING; k++)
    CHECK_OK(cubert_client_all_reduce(e.c[1], &h[1], &h[1], CUBERT_COMM_DTYPE_F32, e.ids, 2,
                                      CUBERT_REDUCE_OPERATION_MEAN, NULL));
  for (i = 0; i < 2; i++) {
    CHECK_OK(cubert_client_sync_collective(e.c[i], NULL));
    comm_read_f32(e.c[i], &h[i], out, 8);
    CHECK(memcmp(out, k_v, sizeof k_v) == 0); /* the mean of equal inputs */
    CHECK_OK(cubert_client_handle_release(e.c[i], &h[i], NULL));
  }
  CHECK_EQ_U64(comm_nccl_stats().group_ends, CUDA_COMM_RING + 2); /* + the first collectives */
  comm_close(&e);
}

TEST(cuda_comm_watchdog_that_cannot_start_fails_the_join) {
  comm_env_t e;
  cubert_error_t err;
  comm_use(0, 2);
  comm_open(&e, 2, 0);
  cuda_comm_watch_fail_next();
  CHECK_STATUS(cubert_client_ensure_init_collective(e.c[0], e.ids, 2, &err),
               CUBERT_STATUS_INTERNAL);
  CHECK_REASON_HAS(err, "watchdog");
  CHECK_EQ_U64(cuda_comm_live(), 0); /* the join was undone */
  CHECK_OK(cubert_client_ensure_init_collective(e.c[0], e.ids, 2, NULL));
  CHECK_EQ_U64(cuda_comm_live(), 1);
  comm_close(&e);
}

/* ---- the Mean kernels and the dtype table ----------------------------------------------------- */

TEST(cuda_comm_mean_launch_edges) {
  uint32_t d;
  cubert_error_t err;
  for (d = 0; d < 8; d++) {
    CHECK(cuda_comm_mean_kernel(d) != NULL);
    CHECK(cuda_comm_nccl_type(d) >= 0);
  }
  CHECK(cuda_comm_mean_kernel(CUBERT_COMM_DTYPE_F16) == NULL);
  CHECK(cuda_comm_nccl_type(CUBERT_COMM_DTYPE_BF16) < 0);
  CHECK_EQ_I64(cuda_comm_nccl_type(CUBERT_COMM_DTYPE_F32), CUBERT_NCCL_FLOAT32);
  CHECK_EQ_I64(cuda_comm_nccl_type(CUBERT_COMM_DTYPE_I8), CUBERT_NCCL_INT8);
  CHECK_STATUS(cuda_comm_mean_launch(NULL, NULL, CUBERT_COMM_DTYPE_F32, 64, 64, 2, &err),
               CUBERT_STATUS_UNSUPPORTED);
  CHECK_STATUS(cuda_comm_mean_launch(NULL, (const cubert_cuda_function_t *)&err,
                                     CUBERT_COMM_DTYPE_F32, 64, 0, 2, &err),
               CUBERT_STATUS_OK); /* nothing to divide */
  CHECK_STATUS(cuda_comm_mean_launch(NULL, (const cubert_cuda_function_t *)&err,
                                     CUBERT_COMM_DTYPE_F32, 64, 64, 1, &err),
               CUBERT_STATUS_OK); /* one member */
  CHECK_STATUS(cuda_comm_mean_launch(NULL, (const cubert_cuda_function_t *)&err,
                                     CUBERT_COMM_DTYPE_U8, 64, 1ull << 40, 2, &err),
               CUBERT_STATUS_BUFFER_TOO_BIG);
}
