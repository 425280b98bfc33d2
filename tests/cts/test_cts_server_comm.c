/* SPDX-License-Identifier: MIT */
/* The server's collectives called directly (inside an exclusive section, so the
 * device is held): the checks the client cannot reach because it validates
 * first. */
#include "cts_multi.h"

#include "client/client_internal.h"
#include "memory/handle_table.h"

typedef struct server_case_t {
  mdev_t *m;
  cubert_handle_t own, foreign;
} server_case_t;

static cubert_server_t *server_of(cubert_client_t *client) { return client->state->server; }

static cubert_server_collective_t op_of(uint32_t kind, const cubert_binding_t *src,
                                        const cubert_binding_t *dst, uint32_t peer,
                                        const uint32_t *devices, size_t count) {
  cubert_server_collective_t op;
  memset(&op, 0, sizeof op);
  op.kind = kind;
  op.dtype = CUBERT_COMM_DTYPE_U8;
  op.op = CUBERT_REDUCE_OPERATION_SUM;
  op.peer = peer;
  op.src = src;
  op.dst = dst;
  op.devices = devices;
  op.device_count = count;
  return op;
}

static cubert_status_t before_comm_init(void *user, cubert_error_t *out_error) {
  server_case_t *t = (server_case_t *)user;
  cubert_server_t *server = server_of(t->m->env[0].client);
  uint32_t pair[2] = {0, 1};
  cubert_server_collective_t op;
  cubert_error_t err;
  (void)out_error;
  /* no communicator joined yet */
  op = op_of(CUBERT_COLLECTIVE_ALL_REDUCE, &t->own, &t->own, 0, pair, 2);
  CHECK_STATUS(cubert__server_collective(server, &op, &err), CUBERT_STATUS_FAILED_PRECONDITION);
  CHECK(cubert_error_kind(&err) == CUBERT_ERROR_SERVICE_CREATION);
  op = op_of(CUBERT_COLLECTIVE_SEND, &t->own, NULL, 1, pair, 2);
  CHECK_STATUS(cubert__server_collective(server, &op, &err), CUBERT_STATUS_FAILED_PRECONDITION);
  op = op_of(CUBERT_COLLECTIVE_RECV, NULL, &t->own, 1, pair, 2);
  CHECK_STATUS(cubert__server_collective(server, &op, &err), CUBERT_STATUS_FAILED_PRECONDITION);
  CHECK_OK(cubert__server_sync_collective(server, 0, &err)); /* nothing to wait for */
  /* comm_init's own checks */
  CHECK_STATUS(cubert__server_comm_init(server, pair, 0, &err), CUBERT_STATUS_INVALID_ARGUMENT);
  CHECK_STATUS(cubert__server_comm_init(server, NULL, 2, &err), CUBERT_STATUS_INVALID_ARGUMENT);
  CHECK_STATUS(cubert__server_comm_init(server, pair + 1, 1, &err), CUBERT_STATUS_DEVICE_MISMATCH);
  CHECK_STATUS(cubert__server_comm_init(server, pair, CUBERT_COMMUNICATION_MAX_DEVICES + 1, &err),
               CUBERT_STATUS_OUT_OF_RANGE);
  CHECK_EQ_U64(mdev_live_communicators(), 0);
  return CUBERT_STATUS_OK;
}

static cubert_status_t after_comm_init(void *user, cubert_error_t *out_error) {
  server_case_t *t = (server_case_t *)user;
  cubert_server_t *server = server_of(t->m->env[0].client);
  uint32_t pair[2] = {1, 0}, self_twice[2] = {0, 0}, other_pair[2] = {0, 5};
  cubert_server_collective_t op;
  cubert_handle_t dead;
  cubert_error_t err;
  (void)out_error;
  CHECK_OK(cubert__server_comm_init(server, pair, 2, &err));
  CHECK_OK(cubert__server_comm_init(server, pair, 2, &err)); /* idempotent */
  op = op_of(CUBERT_COLLECTIVE_ALL_REDUCE, NULL, &t->own, 0, pair, 2);
  CHECK_STATUS(cubert__server_collective(server, &op, &err), CUBERT_STATUS_INVALID_ARGUMENT);
  op = op_of(CUBERT_COLLECTIVE_ALL_REDUCE, &t->own, &t->own, 0, pair, 2);
  op.op = 9;
  CHECK_STATUS(cubert__server_collective(server, &op, &err), CUBERT_STATUS_INVALID_ARGUMENT);
  op.op = CUBERT_REDUCE_OPERATION_SUM;
  op.dtype = 1000;
  CHECK_STATUS(cubert__server_collective(server, &op, &err), CUBERT_STATUS_INVALID_ARGUMENT);
  op.kind = 99;
  CHECK_STATUS(cubert__server_collective(server, &op, &err), CUBERT_STATUS_INVALID_ARGUMENT);
  /* bindings of another device */
  op = op_of(CUBERT_COLLECTIVE_ALL_REDUCE, &t->foreign, &t->foreign, 0, pair, 2);
  CHECK_STATUS(cubert__server_collective(server, &op, &err), CUBERT_STATUS_DEVICE_MISMATCH);
  op = op_of(CUBERT_COLLECTIVE_SEND, &t->foreign, NULL, 1, pair, 2);
  CHECK_STATUS(cubert__server_collective(server, &op, &err), CUBERT_STATUS_DEVICE_MISMATCH);
  op = op_of(CUBERT_COLLECTIVE_RECV, NULL, &t->foreign, 1, pair, 2);
  CHECK_STATUS(cubert__server_collective(server, &op, &err), CUBERT_STATUS_DEVICE_MISMATCH);
  /* a released binding */
  CHECK_OK(cubert_client_create_from_slice(t->m->env[0].client, "x", 1, &dead, NULL));
  CHECK_OK(cubert_client_sync(t->m->env[0].client, NULL));
  CHECK_OK(cubert_client_handle_release(t->m->env[0].client, &dead, NULL));
  CHECK(!cubert__memory_id_is_alive(cubert__client_handle_table(t->m->env[0].client), dead.memory));
  op = op_of(CUBERT_COLLECTIVE_ALL_REDUCE, &dead, &dead, 0, pair, 2);
  CHECK_STATUS(cubert__server_collective(server, &op, &err), CUBERT_STATUS_INVALID_HANDLE);
  /* NULL bindings, self as peer, bad sizes / dtypes */
  op = op_of(CUBERT_COLLECTIVE_SEND, NULL, NULL, 1, pair, 2);
  CHECK_STATUS(cubert__server_collective(server, &op, &err), CUBERT_STATUS_INVALID_ARGUMENT);
  op = op_of(CUBERT_COLLECTIVE_RECV, NULL, NULL, 1, pair, 2);
  CHECK_STATUS(cubert__server_collective(server, &op, &err), CUBERT_STATUS_INVALID_ARGUMENT);
  op = op_of(CUBERT_COLLECTIVE_SEND, &t->own, NULL, 0, self_twice, 2);
  CHECK_STATUS(cubert__server_collective(server, &op, &err), CUBERT_STATUS_INVALID_ARGUMENT);
  op = op_of(CUBERT_COLLECTIVE_SEND, &t->own, NULL, 1, pair, 2);
  op.dtype = CUBERT_COMM_DTYPE_U64; /* 3 bytes are not a multiple of 8 */
  CHECK_STATUS(cubert__server_collective(server, &op, &err), CUBERT_STATUS_INVALID_ARGUMENT);
  op = op_of(CUBERT_COLLECTIVE_RECV, NULL, &t->own, 1, pair, 2);
  op.dtype = 1000;
  CHECK_STATUS(cubert__server_collective(server, &op, &err), CUBERT_STATUS_INVALID_ARGUMENT);
  /* a pair that was never initialized */
  op = op_of(CUBERT_COLLECTIVE_SEND, &t->own, NULL, 5, other_pair, 2);
  CHECK_STATUS(cubert__server_collective(server, &op, &err), CUBERT_STATUS_FAILED_PRECONDITION);
  return CUBERT_STATUS_OK;
}

TEST(cts_kit_comm_checks) {
  mdev_t m;
  server_case_t t;
  uint8_t bytes[3] = {1, 2, 3};
  mdev_setup(&m, 2, 0, 200);
  if (!mdev_collectives(&m.env[0])) {
    mdev_teardown(&m);
    TEST_SKIP("the device under test has no collectives");
  }
  t.m = &m;
  CHECK_OK(cubert_client_create_from_slice(m.env[0].client, bytes, 3, &t.own, NULL));
  CHECK_OK(cubert_client_create_from_slice(m.env[1].client, bytes, 3, &t.foreign, NULL));
  CHECK_OK(cubert_client_exclusive(m.env[0].client, before_comm_init, &t, NULL));
  CHECK_OK(cubert_client_exclusive(m.env[0].client, after_comm_init, &t, NULL));
  /* nothing was enqueued: device 0's streams are healthy */
  CHECK_OK(cubert_client_sync_collective(m.env[0].client, NULL));
  CHECK_OK(cubert_client_sync(m.env[0].client, NULL));
  CHECK_OK(cubert_client_handle_release(m.env[0].client, &t.own, NULL));
  CHECK_OK(cubert_client_handle_release(m.env[1].client, &t.foreign, NULL));
  mdev_teardown(&m);
}
