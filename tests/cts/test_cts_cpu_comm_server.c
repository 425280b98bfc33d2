/* The CPU server's ServerCommunication called directly (inside an exclusive
 * section, so the device is held): the checks the client cannot reach
 * because it validates first. */
#include "cts_multi.h"

#include "client/client_internal.h"

typedef struct server_case_t {
  mdev_t *m;
  cubert_handle_t own, foreign;
} server_case_t;

static cubert_server_t *server_of(cubert_client_t *client) { return client->state->server; }

static cubert_status_t before_comm_init(void *user, cubert_error_t *out_error) {
  server_case_t *t = (server_case_t *)user;
  cubert_server_t *s = server_of(t->m->env[0].client);
  const cubert_server_vtable_t *v = s->vtable;
  uint32_t pair[2] = {0, 1};
  cubert_copy_descriptor_t d;
  cubert_error_t err;
  (void)out_error;
  memset(&d, 0, sizeof d);
  d.binding = t->own;
  /* no communicator joined yet */
  CHECK_STATUS(v->all_reduce(s, &t->own, &t->own, CUBERT_COMM_DTYPE_U8, 0,
                             CUBERT_REDUCE_OPERATION_SUM, pair, 2, &err),
               CUBERT_STATUS_FAILED_PRECONDITION);
  CHECK(cubert_error_kind(&err) == CUBERT_ERROR_SERVICE_CREATION);
  CHECK_STATUS(v->send(s, &d, CUBERT_COMM_DTYPE_U8, 0, 1, &err), CUBERT_STATUS_FAILED_PRECONDITION);
  CHECK_STATUS(v->recv(s, &t->own, CUBERT_COMM_DTYPE_U8, 0, 1, &err),
               CUBERT_STATUS_FAILED_PRECONDITION);
  CHECK_OK(v->sync_collective(s, 0, &err)); /* nothing to wait for */
  /* comm_init's own checks */
  CHECK_STATUS(v->comm_init(s, pair, 0, &err), CUBERT_STATUS_INVALID_ARGUMENT);
  CHECK_STATUS(v->comm_init(s, NULL, 2, &err), CUBERT_STATUS_INVALID_ARGUMENT);
  CHECK_STATUS(v->comm_init(s, pair + 1, 1, &err), CUBERT_STATUS_DEVICE_MISMATCH);
  CHECK_STATUS(v->comm_init(s, pair, CUBERT_COMMUNICATION_MAX_DEVICES + 1, &err),
               CUBERT_STATUS_OUT_OF_RANGE);
  CHECK_EQ_U64(mdev_live_communicators(), 0);
  return CUBERT_STATUS_OK;
}

static cubert_status_t after_comm_init(void *user, cubert_error_t *out_error) {
  server_case_t *t = (server_case_t *)user;
  cubert_server_t *s = server_of(t->m->env[0].client);
  const cubert_server_vtable_t *v = s->vtable;
  uint32_t pair[2] = {1, 0};
  cubert_copy_descriptor_t d;
  cubert_handle_t dead;
  cubert_error_t err;
  (void)out_error;
  CHECK_OK(v->comm_init(s, pair, 2, &err));
  CHECK_OK(v->comm_init(s, pair, 2, &err)); /* idempotent */
  memset(&d, 0, sizeof d);
  d.binding = t->foreign;
  CHECK_STATUS(v->all_reduce(s, NULL, &t->own, CUBERT_COMM_DTYPE_U8, 0,
                             CUBERT_REDUCE_OPERATION_SUM, pair, 2, &err),
               CUBERT_STATUS_INVALID_ARGUMENT);
  CHECK_STATUS(v->all_reduce(s, &t->own, &t->own, CUBERT_COMM_DTYPE_U8, 0, 9, pair, 2, &err),
               CUBERT_STATUS_INVALID_ARGUMENT);
  CHECK_STATUS(v->all_reduce(s, &t->own, &t->own, 1000, 0, CUBERT_REDUCE_OPERATION_SUM, pair, 2,
                             &err),
               CUBERT_STATUS_INVALID_ARGUMENT);
  /* bindings of another device */
  CHECK_STATUS(v->all_reduce(s, &t->foreign, &t->foreign, CUBERT_COMM_DTYPE_U8, 0,
                             CUBERT_REDUCE_OPERATION_SUM, pair, 2, &err),
               CUBERT_STATUS_DEVICE_MISMATCH);
  CHECK_STATUS(v->send(s, &d, CUBERT_COMM_DTYPE_U8, 0, 1, &err), CUBERT_STATUS_DEVICE_MISMATCH);
  CHECK_STATUS(v->recv(s, &t->foreign, CUBERT_COMM_DTYPE_U8, 0, 1, &err),
               CUBERT_STATUS_DEVICE_MISMATCH);
  /* a released binding */
  CHECK_OK(cubert_client_create(t->m->env[0].client, "x", 1, &dead, NULL));
  CHECK_OK(cubert_client_sync(t->m->env[0].client, NULL)); /* the upload no longer pins it */
  CHECK_OK(cubert_client_handle_release(t->m->env[0].client, &dead));
  CHECK(!cubert_memory_id_is_alive(cubert_client_handle_table(t->m->env[0].client), dead.memory));
  CHECK_STATUS(v->all_reduce(s, &dead, &dead, CUBERT_COMM_DTYPE_U8, 0,
                             CUBERT_REDUCE_OPERATION_SUM, pair, 2, &err),
               CUBERT_STATUS_INVALID_HANDLE);
  /* NULL descriptor / handle, self as peer, bad size */
  CHECK_STATUS(v->send(s, NULL, CUBERT_COMM_DTYPE_U8, 0, 1, &err), CUBERT_STATUS_INVALID_ARGUMENT);
  CHECK_STATUS(v->recv(s, NULL, CUBERT_COMM_DTYPE_U8, 0, 1, &err), CUBERT_STATUS_INVALID_ARGUMENT);
  d.binding = t->own;
  CHECK_STATUS(v->send(s, &d, CUBERT_COMM_DTYPE_U8, 0, 0, &err), CUBERT_STATUS_INVALID_ARGUMENT);
  CHECK_STATUS(v->recv(s, &t->own, CUBERT_COMM_DTYPE_U8, 0, 0, &err),
               CUBERT_STATUS_INVALID_ARGUMENT);
  CHECK_STATUS(v->send(s, &d, CUBERT_COMM_DTYPE_U64, 0, 1, &err), CUBERT_STATUS_INVALID_ARGUMENT);
  CHECK_STATUS(v->recv(s, &t->own, 1000, 0, 1, &err), CUBERT_STATUS_INVALID_ARGUMENT);
  /* a pair that was never initialized */
  CHECK_STATUS(v->send(s, &d, CUBERT_COMM_DTYPE_U8, 0, 5, &err),
               CUBERT_STATUS_FAILED_PRECONDITION);
  return CUBERT_STATUS_OK;
}

TEST(cts_cpu_comm_server_checks) {
  mdev_t m;
  server_case_t t;
  uint8_t bytes[3] = {1, 2, 3};
  mdev_setup(&m, 2, 0, 200);
  t.m = &m;
  CHECK_OK(cubert_client_create(m.env[0].client, bytes, 3, &t.own, NULL));
  CHECK_OK(cubert_client_create(m.env[1].client, bytes, 3, &t.foreign, NULL));
  CHECK_OK(cubert_client_exclusive(m.env[0].client, before_comm_init, &t, NULL));
  CHECK_OK(cubert_client_exclusive(m.env[0].client, after_comm_init, &t, NULL));
  /* nothing was enqueued: device 0's streams are healthy */
  CHECK_OK(cubert_client_sync_collective(m.env[0].client, NULL));
  CHECK_OK(cubert_client_sync(m.env[0].client, NULL));
  CHECK_OK(cubert_client_handle_release(m.env[0].client, &t.own));
  CHECK_OK(cubert_client_handle_release(m.env[1].client, &t.foreign));
  mdev_teardown(&m);
}
