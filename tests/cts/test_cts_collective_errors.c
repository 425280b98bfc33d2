/* SPDX-License-Identifier: MIT */
/* Conformance: send / recv and the error paths of collectives:
 * refused at the call (nothing enqueued), refused at the rendezvous (queued
 * on every member), peers that never come (no hang), communicator limits
 * and allocation failures. Skipped on a device without collectives. */
#include "cts_multi.h"

/* ---- send / recv ---- */

TEST(cts_send_recv_moves_bytes) {
  mdev_t m;
  double v[10], out[10];
  cubert_handle_t src, dst;
  cubert_copy_descriptor_t d;
  uint32_t k;
  mdev_setup_comm(&m, 2, 0, 0);
  for (k = 0; k < 10; k++) v[k] = 1.5 * k - 4;
  CHECK_OK(cubert_client_create_from_slice(m.env[0].client, v, sizeof v, &src, NULL));
  memset(&d, 0, sizeof d);
  d.binding = src;
  d.rank = 1;
  d.shape[0] = 10;
  d.strides[0] = 1;
  d.elem_size = 8;
  CHECK_OK(cubert_client_recv(m.env[1].client, sizeof v, CUBERT_COMM_DTYPE_F64, m.ids[0], &dst,
                              NULL));
  CHECK_EQ_U64(dst.device, m.ids[1].index_id);
  CHECK_EQ_U64(cubert_handle_size_in_used(&dst), sizeof v);
  CHECK_OK(cubert_client_send(m.env[0].client, &d, CUBERT_COMM_DTYPE_F64, m.ids[1], NULL));
  CHECK_OK(cubert_client_sync_collective(m.env[1].client, NULL));
  CHECK_OK(cubert_client_read_one(m.env[1].client, &dst, out, sizeof out, NULL));
  for (k = 0; k < 10; k++) CHECK(out[k] == v[k]);
  /* the sender's data is untouched and the sender's streams are healthy */
  mdev_sync_all(&m);
  CHECK_OK(cubert_client_handle_release(m.env[0].client, &src, NULL));
  CHECK_OK(cubert_client_handle_release(m.env[1].client, &dst, NULL));
  mdev_teardown(&m);
}

TEST(cts_send_recv_argument_errors) {
  mdev_t m;
  uint32_t v[4] = {1, 2, 3, 4};
  cubert_handle_t src, dst, other, dead;
  cubert_copy_descriptor_t d;
  cubert_device_id_t alien;
  cubert_error_t err;
  mdev_setup_comm(&m, 2, 0, 0);
  CHECK_OK(cubert_client_create_from_slice(m.env[0].client, v, sizeof v, &src, NULL));
  CHECK_OK(cubert_client_create_from_slice(m.env[1].client, v, sizeof v, &other, NULL));
  CHECK_OK(cubert_client_create_from_slice(m.env[0].client, v, sizeof v, &dead, NULL));
  CHECK_OK(cubert_client_handle_release(m.env[0].client, &dead, NULL));
  memset(&d, 0, sizeof d);
  d.binding = src;
  d.rank = 1;
  d.shape[0] = 4;
  d.strides[0] = 1;
  d.elem_size = 4;
  alien.type_id = 77;
  alien.index_id = 1;
  /* send to itself */
  CHECK_STATUS(cubert_client_send(m.env[0].client, &d, CUBERT_COMM_DTYPE_U32, m.ids[0], &err),
               CUBERT_STATUS_INVALID_ARGUMENT);
  CHECK(cubert_error_kind(&err) == CUBERT_ERROR_INVALID_ARGUMENT);
  /* recv from itself */
  CHECK_STATUS(cubert_client_recv(m.env[1].client, 16, CUBERT_COMM_DTYPE_U32, m.ids[1], &dst, &err),
               CUBERT_STATUS_INVALID_ARGUMENT);
  /* peer of another driver type */
  CHECK_STATUS(cubert_client_send(m.env[0].client, &d, CUBERT_COMM_DTYPE_U32, alien, &err),
               CUBERT_STATUS_DEVICE_MISMATCH);
  CHECK_STATUS(cubert_client_recv(m.env[1].client, 16, CUBERT_COMM_DTYPE_U32, alien, &dst, &err),
               CUBERT_STATUS_DEVICE_MISMATCH);
  /* unknown dtype */
  CHECK_STATUS(cubert_client_send(m.env[0].client, &d, 99, m.ids[1], &err),
               CUBERT_STATUS_INVALID_ARGUMENT);
  CHECK_STATUS(cubert_client_recv(m.env[1].client, 16, 99, m.ids[0], &dst, &err),
               CUBERT_STATUS_INVALID_ARGUMENT);
  /* size not a multiple of the dtype width */
  CHECK_STATUS(cubert_client_recv(m.env[1].client, 6, CUBERT_COMM_DTYPE_U32, m.ids[0], &dst, &err),
               CUBERT_STATUS_INVALID_ARGUMENT);
  CHECK_STATUS(cubert_client_send(m.env[0].client, &d, 99, m.ids[1], &err),
               CUBERT_STATUS_INVALID_ARGUMENT);
  /* source binding of another device / released */
  d.binding = other;
  CHECK_STATUS(cubert_client_send(m.env[0].client, &d, CUBERT_COMM_DTYPE_U32, m.ids[1], &err),
               CUBERT_STATUS_DEVICE_MISMATCH);
  d.binding = dead;
  CHECK_STATUS(cubert_client_send(m.env[0].client, &d, CUBERT_COMM_DTYPE_U32, m.ids[1], &err),
               CUBERT_STATUS_INVALID_HANDLE);
  CHECK_STATUS(cubert_client_send(m.env[0].client, NULL, CUBERT_COMM_DTYPE_U32, m.ids[1], &err),
               CUBERT_STATUS_INVALID_ARGUMENT);
  CHECK_STATUS(cubert_client_recv(m.env[1].client, 16, CUBERT_COMM_DTYPE_U32, m.ids[0], NULL, &err),
               CUBERT_STATUS_INVALID_ARGUMENT);
  /* nothing was enqueued: a valid pair still matches */
  d.binding = src;
  CHECK_OK(cubert_client_send(m.env[0].client, &d, CUBERT_COMM_DTYPE_U32, m.ids[1], NULL));
  CHECK_OK(cubert_client_recv(m.env[1].client, 16, CUBERT_COMM_DTYPE_U32, m.ids[0], &dst, NULL));
  mdev_sync_all(&m);
  {
    uint32_t out[4];
    CHECK_OK(cubert_client_read_one(m.env[1].client, &dst, out, sizeof out, NULL));
    CHECK(memcmp(out, v, sizeof v) == 0);
  }
  CHECK_OK(cubert_client_handle_release(m.env[0].client, &src, NULL));
  CHECK_OK(cubert_client_handle_release(m.env[1].client, &other, NULL));
  CHECK_OK(cubert_client_handle_release(m.env[1].client, &dst, NULL));
  mdev_teardown(&m);
}

TEST(cts_send_recv_size_or_dtype_mismatch_is_queued_on_both) {
  mdev_t m;
  uint32_t v[4] = {1, 2, 3, 4}, out[8];
  cubert_handle_t src, dst;
  cubert_copy_descriptor_t d;
  mdev_setup_comm(&m, 2, 0, 0);
  CHECK_OK(cubert_client_create_from_slice(m.env[0].client, v, sizeof v, &src, NULL));
  memset(&d, 0, sizeof d);
  d.binding = src;
  /* size mismatch: 16 bytes sent, 32 expected */
  CHECK_OK(cubert_client_send(m.env[0].client, &d, CUBERT_COMM_DTYPE_U32, m.ids[1], NULL));
  CHECK_OK(cubert_client_recv(m.env[1].client, 32, CUBERT_COMM_DTYPE_U32, m.ids[0], &dst, NULL));
  mdev_expect_queued(m.env[0].client, CUBERT_ERROR_SERVER_VALIDATION);
  mdev_expect_queued(m.env[1].client, CUBERT_ERROR_SERVER_VALIDATION);
  CHECK_OK(cubert_client_handle_release(m.env[1].client, &dst, NULL));
  /* dtype mismatch (same size) */
  CHECK_OK(cubert_client_send(m.env[0].client, &d, CUBERT_COMM_DTYPE_U32, m.ids[1], NULL));
  CHECK_OK(cubert_client_recv(m.env[1].client, 16, CUBERT_COMM_DTYPE_F32, m.ids[0], &dst, NULL));
  mdev_expect_queued(m.env[0].client, CUBERT_ERROR_SERVER_VALIDATION);
  mdev_expect_queued(m.env[1].client, CUBERT_ERROR_SERVER_VALIDATION);
  CHECK_OK(cubert_client_handle_release(m.env[1].client, &dst, NULL));
  /* the communicator is still usable */
  CHECK_OK(cubert_client_send(m.env[0].client, &d, CUBERT_COMM_DTYPE_U32, m.ids[1], NULL));
  CHECK_OK(cubert_client_recv(m.env[1].client, 16, CUBERT_COMM_DTYPE_U32, m.ids[0], &dst, NULL));
  mdev_sync_all(&m);
  CHECK_OK(cubert_client_read_one(m.env[1].client, &dst, out, sizeof out, NULL));
  CHECK(memcmp(out, v, sizeof v) == 0);
  CHECK_OK(cubert_client_handle_release(m.env[0].client, &src, NULL));
  CHECK_OK(cubert_client_handle_release(m.env[1].client, &dst, NULL));
  mdev_teardown(&m);
}

/* ---- all_reduce errors found before anything is enqueued ---- */

TEST(cts_all_reduce_argument_errors_enqueue_nothing) {
  mdev_t m;
  float v[4] = {1, 2, 3, 4}, out[4];
  cubert_handle_t h[2], small, other_stream, foreign, dead, odd;
  cubert_client_t *pinned;
  cubert_device_id_t ids[CUBERT_COMMUNICATION_MAX_DEVICES + 1], dup[2], alien[2], without_self[1];
  cubert_error_t err;
  cubert_client_t *c0;
  uint32_t i;
  mdev_setup_comm(&m, 2, 0, 0);
  c0 = m.env[0].client;
  for (i = 0; i < 2; i++) h[i] = mdev_make_f32(m.env[i].client, v, 4);
  small = mdev_make_f32(c0, v, 2);
  CHECK_OK(cubert_client_create_from_slice(c0, v, 6, &odd, NULL));
  foreign = mdev_make_f32(m.env[1].client, v, 4);
  dead = mdev_make_f32(c0, v, 4);
  CHECK_OK(cubert_client_handle_release(c0, &dead, NULL));
  CHECK_OK(cubert_client_clone(c0, &pinned, NULL));
  cubert_client_set_stream(pinned, 4242);
  other_stream = mdev_make_f32(pinned, v, 4);
  for (i = 0; i <= CUBERT_COMMUNICATION_MAX_DEVICES; i++) {
    ids[i].type_id = m.ids[0].type_id;
    ids[i].index_id = i;
  }
  dup[0] = m.ids[0];
  dup[1] = m.ids[0];
  alien[0] = m.ids[0];
  alien[1].type_id = 77;
  alien[1].index_id = 1;
  without_self[0] = m.ids[1];

#define AR(src, dst, dtype, devs, n, op, want)                                            \
  do {                                                                                  \
    cubert_error_clear(&err);                                                           \
    CHECK_STATUS(cubert_client_all_reduce(c0, (src), (dst), (dtype), (devs), (n), (op), &err), \
                 (want));                                                               \
    CHECK(err.status == (want));                                                        \
  } while (0)
  AR(&h[0], &h[0], 99, m.ids, 2, CUBERT_REDUCE_OPERATION_SUM, CUBERT_STATUS_INVALID_ARGUMENT);
  AR(&h[0], &h[0], CUBERT_COMM_DTYPE_F32, m.ids, 2, (cubert_reduce_operation_t)7,
     CUBERT_STATUS_INVALID_ARGUMENT);
  AR(&h[0], &h[0], CUBERT_COMM_DTYPE_F16, m.ids, 2, CUBERT_REDUCE_OPERATION_SUM,
     CUBERT_STATUS_UNSUPPORTED);
  AR(&odd, &odd, CUBERT_COMM_DTYPE_F32, m.ids, 2, CUBERT_REDUCE_OPERATION_SUM,
     CUBERT_STATUS_INVALID_ARGUMENT);
  AR(&h[0], &small, CUBERT_COMM_DTYPE_F32, m.ids, 2, CUBERT_REDUCE_OPERATION_SUM,
     CUBERT_STATUS_OUT_OF_RANGE);
  AR(&h[0], &other_stream, CUBERT_COMM_DTYPE_F32, m.ids, 2, CUBERT_REDUCE_OPERATION_SUM,
     CUBERT_STATUS_INVALID_ARGUMENT);
  CHECK(cubert_error_kind(&err) == CUBERT_ERROR_SERVER_VALIDATION);
  AR(&foreign, &foreign, CUBERT_COMM_DTYPE_F32, m.ids, 2, CUBERT_REDUCE_OPERATION_SUM,
     CUBERT_STATUS_DEVICE_MISMATCH);
  AR(&dead, &dead, CUBERT_COMM_DTYPE_F32, m.ids, 2, CUBERT_REDUCE_OPERATION_SUM,
     CUBERT_STATUS_INVALID_HANDLE);
  AR(NULL, &h[0], CUBERT_COMM_DTYPE_F32, m.ids, 2, CUBERT_REDUCE_OPERATION_SUM,
     CUBERT_STATUS_INVALID_ARGUMENT);
  AR(&h[0], &h[0], CUBERT_COMM_DTYPE_F32, NULL, 2, CUBERT_REDUCE_OPERATION_SUM,
     CUBERT_STATUS_INVALID_ARGUMENT);
  AR(&h[0], &h[0], CUBERT_COMM_DTYPE_F32, m.ids, 0, CUBERT_REDUCE_OPERATION_SUM,
     CUBERT_STATUS_INVALID_ARGUMENT);
  AR(&h[0], &h[0], CUBERT_COMM_DTYPE_F32, dup, 2, CUBERT_REDUCE_OPERATION_SUM,
     CUBERT_STATUS_INVALID_ARGUMENT);
  AR(&h[0], &h[0], CUBERT_COMM_DTYPE_F32, alien, 2, CUBERT_REDUCE_OPERATION_SUM,
     CUBERT_STATUS_DEVICE_MISMATCH);
  AR(&h[0], &h[0], CUBERT_COMM_DTYPE_F32, without_self, 1, CUBERT_REDUCE_OPERATION_SUM,
     CUBERT_STATUS_DEVICE_MISMATCH);
  AR(&h[0], &h[0], CUBERT_COMM_DTYPE_F32, ids, CUBERT_COMMUNICATION_MAX_DEVICES + 1,
     CUBERT_REDUCE_OPERATION_SUM, CUBERT_STATUS_OUT_OF_RANGE);
#undef AR
  /* nothing was enqueued: the streams are healthy and a valid round matches */
  mdev_sync_all(&m);
  for (i = 0; i < 2; i++)
    CHECK_OK(cubert_client_all_reduce(m.env[i].client, &h[i], &h[i], CUBERT_COMM_DTYPE_F32, m.ids,
                                      2, CUBERT_REDUCE_OPERATION_MEAN, NULL));
  for (i = 0; i < 2; i++) {
    CHECK_OK(cubert_client_sync_collective(m.env[i].client, NULL));
    mdev_read_f32(m.env[i].client, &h[i], out, 4);
    CHECK(memcmp(out, v, sizeof v) == 0); /* mean of two equal inputs */
    CHECK_OK(cubert_client_sync(m.env[i].client, NULL));
  }
  CHECK_OK(cubert_client_handle_release(c0, &small, NULL));
  CHECK_OK(cubert_client_handle_release(c0, &odd, NULL));
  CHECK_OK(cubert_client_handle_release(m.env[1].client, &foreign, NULL));
  CHECK_OK(cubert_client_handle_release(pinned, &other_stream, NULL));
  cubert_client_release(pinned);
  for (i = 0; i < 2; i++) CHECK_OK(cubert_client_handle_release(m.env[i].client, &h[i], NULL));
  mdev_teardown(&m);
}

/* ---- errors found at the rendezvous: queued on every member ---- */

TEST(cts_all_reduce_member_mismatch_is_queued_and_leaves_data) {
  mdev_t m;
  float v[4] = {1, 2, 3, 4}, out[4];
  cubert_handle_t h[2], big;
  cubert_copy_descriptor_t d;
  uint32_t i;
  mdev_setup_comm(&m, 2, 0, 0);
  for (i = 0; i < 2; i++) h[i] = mdev_make_f32(m.env[i].client, v, 4);
  /* dtype mismatch: F32 against I32 (same size) */
  CHECK_OK(cubert_client_all_reduce(m.env[0].client, &h[0], &h[0], CUBERT_COMM_DTYPE_F32, m.ids, 2,
                                    CUBERT_REDUCE_OPERATION_SUM, NULL));
  CHECK_OK(cubert_client_all_reduce(m.env[1].client, &h[1], &h[1], CUBERT_COMM_DTYPE_I32, m.ids, 2,
                                    CUBERT_REDUCE_OPERATION_SUM, NULL));
  for (i = 0; i < 2; i++) mdev_expect_queued(m.env[i].client, CUBERT_ERROR_SERVER_VALIDATION);
  /* op mismatch */
  CHECK_OK(cubert_client_all_reduce(m.env[0].client, &h[0], &h[0], CUBERT_COMM_DTYPE_F32, m.ids, 2,
                                    CUBERT_REDUCE_OPERATION_SUM, NULL));
  CHECK_OK(cubert_client_all_reduce(m.env[1].client, &h[1], &h[1], CUBERT_COMM_DTYPE_F32, m.ids, 2,
                                    CUBERT_REDUCE_OPERATION_MEAN, NULL));
  for (i = 0; i < 2; i++) mdev_expect_queued(m.env[i].client, CUBERT_ERROR_SERVER_VALIDATION);
  /* size mismatch */
  big = mdev_make_f32(m.env[1].client, v, 2);
  CHECK_OK(cubert_client_all_reduce(m.env[0].client, &h[0], &h[0], CUBERT_COMM_DTYPE_F32, m.ids, 2,
                                    CUBERT_REDUCE_OPERATION_SUM, NULL));
  CHECK_OK(cubert_client_all_reduce(m.env[1].client, &big, &big, CUBERT_COMM_DTYPE_F32, m.ids, 2,
                                    CUBERT_REDUCE_OPERATION_SUM, NULL));
  for (i = 0; i < 2; i++) mdev_expect_queued(m.env[i].client, CUBERT_ERROR_SERVER_VALIDATION);
  /* operation mismatch: all_reduce against send on the pair's communicator */
  memset(&d, 0, sizeof d);
  d.binding = h[1];
  CHECK_OK(cubert_client_all_reduce(m.env[0].client, &h[0], &h[0], CUBERT_COMM_DTYPE_F32, m.ids, 2,
                                    CUBERT_REDUCE_OPERATION_SUM, NULL));
  CHECK_OK(cubert_client_send(m.env[1].client, &d, CUBERT_COMM_DTYPE_F32, m.ids[0], NULL));
  for (i = 0; i < 2; i++) mdev_expect_queued(m.env[i].client, CUBERT_ERROR_SERVER_VALIDATION);
  /* no destination was written; the communicator still works */
  for (i = 0; i < 2; i++) {
    mdev_read_f32(m.env[i].client, &h[i], out, 4);
    CHECK(memcmp(out, v, sizeof v) == 0);
    CHECK_OK(cubert_client_all_reduce(m.env[i].client, &h[i], &h[i], CUBERT_COMM_DTYPE_F32, m.ids,
                                      2, CUBERT_REDUCE_OPERATION_SUM, NULL));
  }
  for (i = 0; i < 2; i++) {
    CHECK_OK(cubert_client_sync_collective(m.env[i].client, NULL));
    mdev_read_f32(m.env[i].client, &h[i], out, 4);
    CHECK(out[0] == 2 && out[3] == 8);
    CHECK_OK(cubert_client_handle_release(m.env[i].client, &h[i], NULL));
  }
  CHECK_OK(cubert_client_handle_release(m.env[1].client, &big, NULL));
  mdev_teardown(&m);
}

/* ---- no hang: peers that never arrive ---- */

TEST(cts_all_reduce_missing_peer_times_out_and_aborts) {
  mdev_t m;
  float v[4] = {1, 2, 3, 4}, out[4];
  cubert_handle_t h;
  cubert_error_t err;
  uint64_t t0;
  mdev_setup_comm(&m, 2, 0, 200);
  h = mdev_make_f32(m.env[0].client, v, 4);
  CHECK_OK(cubert_client_ensure_init_collective(m.env[1].client, m.ids, 2, NULL));
  t0 = mdev_now_ms();
  CHECK_OK(cubert_client_all_reduce(m.env[0].client, &h, &h, CUBERT_COMM_DTYPE_F32, m.ids, 2,
                                    CUBERT_REDUCE_OPERATION_SUM, NULL));
  mdev_expect_queued(m.env[0].client, CUBERT_ERROR_DEADLINE_EXCEEDED);
  CHECK_MSG(mdev_now_ms() - t0 < 10000, "took %llu ms", (unsigned long long)(mdev_now_ms() - t0));
  mdev_read_f32(m.env[0].client, &h, out, 4);
  CHECK(memcmp(out, v, sizeof v) == 0);
  /* aborted: the late peer cannot join a new round */
  CHECK_STATUS(cubert_client_all_reduce(m.env[0].client, &h, &h, CUBERT_COMM_DTYPE_F32, m.ids, 2,
                                        CUBERT_REDUCE_OPERATION_SUM, &err),
               CUBERT_STATUS_FAILED_PRECONDITION);
  CHECK_OK(cubert_client_handle_release(m.env[0].client, &h, NULL));
  mdev_teardown(&m);
  /* once every member left, the same device set starts afresh (a timeout no
   * loaded machine reaches: this round must complete) */
  mdev_setup_comm(&m, 2, 0, 60000);
  {
    cubert_handle_t g[2];
    uint32_t i;
    for (i = 0; i < 2; i++) g[i] = mdev_make_f32(m.env[i].client, v, 4);
    for (i = 0; i < 2; i++)
      CHECK_OK(cubert_client_all_reduce(m.env[i].client, &g[i], &g[i], CUBERT_COMM_DTYPE_F32,
                                        m.ids, 2, CUBERT_REDUCE_OPERATION_SUM, NULL));
    for (i = 0; i < 2; i++) {
      CHECK_OK(cubert_client_sync_collective(m.env[i].client, NULL));
      mdev_read_f32(m.env[i].client, &g[i], out, 4);
      CHECK(out[1] == 4);
      CHECK_OK(cubert_client_handle_release(m.env[i].client, &g[i], NULL));
    }
  }
  mdev_teardown(&m);
}

/* Members that disagree on the device set meet in different communicators:
 * each side times out instead of hanging. */
TEST(cts_all_reduce_different_device_sets_time_out) {
  mdev_t m;
  float v[4] = {1, 2, 3, 4}, out[4];
  cubert_handle_t h[2];
  uint32_t i;
  mdev_setup_comm(&m, 3, 0, 200);
  for (i = 0; i < 2; i++) h[i] = mdev_make_f32(m.env[i].client, v, 4);
  CHECK_OK(cubert_client_all_reduce(m.env[0].client, &h[0], &h[0], CUBERT_COMM_DTYPE_F32, m.ids, 2,
                                    CUBERT_REDUCE_OPERATION_SUM, NULL));
  CHECK_OK(cubert_client_all_reduce(m.env[1].client, &h[1], &h[1], CUBERT_COMM_DTYPE_F32, m.ids, 3,
                                    CUBERT_REDUCE_OPERATION_SUM, NULL));
  for (i = 0; i < 2; i++) {
    mdev_expect_queued(m.env[i].client, CUBERT_ERROR_DEADLINE_EXCEEDED);
    mdev_read_f32(m.env[i].client, &h[i], out, 4);
    CHECK(memcmp(out, v, sizeof v) == 0);
    CHECK_OK(cubert_client_handle_release(m.env[i].client, &h[i], NULL));
  }
  mdev_teardown(&m);
}

TEST(cts_release_with_pending_collective_does_not_hang) {
  mdev_t m;
  float v[4] = {1, 2, 3, 4};
  cubert_handle_t h;
  cubert_error_t err;
  uint64_t t0;
  mdev_setup_comm(&m, 2, 0, 0); /* default timeout: 60 s, longer than this test's budget */
  h = mdev_make_f32(m.env[0].client, v, 4);
  CHECK_OK(cubert_client_ensure_init_collective(m.env[1].client, m.ids, 2, NULL));
  CHECK_OK(cubert_client_all_reduce(m.env[0].client, &h, &h, CUBERT_COMM_DTYPE_F32, m.ids, 2,
                                    CUBERT_REDUCE_OPERATION_SUM, NULL));
  CHECK_OK(cubert_client_handle_release(m.env[0].client, &h, NULL));
  t0 = mdev_now_ms();
  cts_teardown(&m.env[0]); /* the pending collective is cancelled after the grace period */
  m.env[0].client = NULL;
  CHECK_MSG(mdev_now_ms() - t0 < 10000, "teardown took %llu ms",
            (unsigned long long)(mdev_now_ms() - t0));
  /* the communicator was aborted: the survivor gets an error, not a hang */
  CHECK_STATUS(cubert_client_ensure_init_collective(m.env[1].client, m.ids, 2, &err),
               CUBERT_STATUS_FAILED_PRECONDITION);
  mdev_teardown(&m);
}

TEST(cts_released_peer_aborts_waiting_collective) {
  mdev_t m;
  float v[4] = {1, 2, 3, 4};
  cubert_handle_t h;
  uint64_t t0;
  mdev_setup_comm(&m, 2, 0, 0); /* default timeout: 60 s */
  h = mdev_make_f32(m.env[0].client, v, 4);
  CHECK_OK(cubert_client_ensure_init_collective(m.env[0].client, m.ids, 2, NULL));
  CHECK_OK(cubert_client_ensure_init_collective(m.env[1].client, m.ids, 2, NULL));
  /* device 1 leaves without ever taking part */
  cts_teardown(&m.env[1]);
  m.env[1].client = NULL;
  t0 = mdev_now_ms();
  CHECK_OK(cubert_client_all_reduce(m.env[0].client, &h, &h, CUBERT_COMM_DTYPE_F32, m.ids, 2,
                                    CUBERT_REDUCE_OPERATION_SUM, NULL));
  mdev_expect_queued(m.env[0].client, CUBERT_ERROR_DEVICE_LOST);
  CHECK_MSG(mdev_now_ms() - t0 < 10000, "took %llu ms", (unsigned long long)(mdev_now_ms() - t0));
  CHECK_OK(cubert_client_handle_release(m.env[0].client, &h, NULL));
  mdev_teardown(&m);
}

/* ---- ensure_init_collective and sync_collective ---- */

TEST(cts_ensure_init_collective_is_idempotent_and_order_free) {
  mdev_t m;
  cubert_device_id_t rev[3];
  mdev_setup_comm(&m, 3, 0, 0);
  rev[0] = m.ids[2];
  rev[1] = m.ids[0];
  rev[2] = m.ids[1];
  CHECK_EQ_U64(mdev_live_communicators(), 0);
  CHECK_OK(cubert_client_ensure_init_collective(m.env[0].client, m.ids, 3, NULL));
  CHECK_OK(cubert_client_ensure_init_collective(m.env[0].client, m.ids, 3, NULL));
  CHECK_OK(cubert_client_ensure_init_collective(m.env[1].client, rev, 3, NULL));
  CHECK_EQ_U64(mdev_live_communicators(), 1); /* one communicator for the set */
  CHECK_OK(cubert_client_ensure_init_collective(m.env[0].client, m.ids, 2, NULL));
  CHECK_EQ_U64(mdev_live_communicators(), 2);
  mdev_teardown(&m);
}

TEST(cts_ensure_init_collective_limits) {
  mdev_t m;
  cubert_device_id_t pair[2];
  cubert_error_t err;
  uint32_t k;
  mdev_setup_comm(&m, 3, 0, 0);
  /* one device joins at most 16 communicators */
  pair[0] = m.ids[0];
  for (k = 1; k <= 16; k++) {
    pair[1].type_id = m.ids[0].type_id;
    pair[1].index_id = 100 + k;
    CHECK_OK(cubert_client_ensure_init_collective(m.env[0].client, pair, 2, NULL));
  }
  pair[1].index_id = 200;
  CHECK_STATUS(cubert_client_ensure_init_collective(m.env[0].client, pair, 2, &err),
               CUBERT_STATUS_OUT_OF_RANGE);
  /* the process holds at most 32 communicators */
  pair[0] = m.ids[1];
  for (k = 1; k <= 16; k++) {
    pair[1].index_id = 300 + k;
    CHECK_OK(cubert_client_ensure_init_collective(m.env[1].client, pair, 2, NULL));
  }
  CHECK_EQ_U64(mdev_live_communicators(), 32);
  pair[0] = m.ids[2];
  pair[1].index_id = 400;
  CHECK_STATUS(cubert_client_ensure_init_collective(m.env[2].client, pair, 2, &err),
               CUBERT_STATUS_RESOURCE_EXHAUSTED);
  /* a released device leaves its communicators: the slots come back */
  cts_teardown(&m.env[0]);
  m.env[0].client = NULL;
  CHECK_EQ_U64(mdev_live_communicators(), 16);
  CHECK_OK(cubert_client_ensure_init_collective(m.env[2].client, pair, 2, NULL));
  CHECK_EQ_U64(mdev_live_communicators(), 17);
  mdev_teardown(&m);
}

TEST(cts_sync_collective_without_collectives_is_a_no_op) {
  cts_env_t env;
  cts_setup(&env, 0);
  CHECK_OK(cubert_client_sync_collective(env.client, NULL));
  CHECK_OK(cubert_client_sync(env.client, NULL));
  CHECK_STATUS(cubert_client_sync_collective(NULL, NULL), CUBERT_STATUS_INVALID_ARGUMENT);
  CHECK_STATUS(cubert_client_ensure_init_collective(NULL, NULL, 0, NULL),
               CUBERT_STATUS_INVALID_ARGUMENT);
  CHECK_STATUS(cubert_client_ensure_init_collective(env.client, NULL, 1, NULL),
               CUBERT_STATUS_INVALID_ARGUMENT);
  cts_teardown(&env);
}

TEST(cts_collective_state_allocation_failure) {
  mdev_t m;
  cubert_error_t err;
  uint64_t n;
  cubert_status_t status = CUBERT_STATUS_RESOURCE_EXHAUSTED;
  mdev_setup_comm(&m, 2, 0, 0);
  /* the first comm_init allocates the driver's communicator, the server's
   * communication state, its stream and the stream's ring: each failure is
   * reported and leaves nothing behind */
  for (n = 1; n <= 16 && status != CUBERT_STATUS_OK; n++) {
    counting_allocator_fail_at(&m.env[0].counting, n, 0);
    status = cubert_client_ensure_init_collective(m.env[0].client, m.ids, 2, &err);
    counting_allocator_fail_at(&m.env[0].counting, 0, 0);
    if (status == CUBERT_STATUS_OK) break;
    CHECK_STATUS(status, CUBERT_STATUS_RESOURCE_EXHAUSTED);
    CHECK(cubert_error_kind(&err) == CUBERT_ERROR_HOST_OUT_OF_MEMORY);
    CHECK_EQ_U64(mdev_live_communicators(), 0);
  }
  CHECK_OK(status);
  CHECK_MSG(n >= 4, "only %llu allocation(s) in the first comm_init", (unsigned long long)n - 1);
  CHECK_EQ_U64(mdev_live_communicators(), 1);
  CHECK_OK(cubert_client_ensure_init_collective(m.env[0].client, m.ids, 2, NULL)); /* idempotent */
  mdev_teardown(&m);
}
