/* SPDX-License-Identifier: MIT */
/* core/client/client_task.c: what every client operation shares: the
 * client's current stream, the device check of a handle, and running a
 * typed task through the device handle (the base of core/client: it calls
 * no other client file). */
#include "client/client_internal.h"
#include "memory/handle_table.h"
#include "cubert/driver/device.h"
#include "device/device_shards.h"

cubert_status_t client_submit(cubert_client_t *client, cubert_device_task_fn_t fn,
                              client_task_t *task, cubert_error_t *out_error) {
  device_state_t *s = client->state;
  task->status = CUBERT_STATUS_INTERNAL;
  task->error = out_error;
  if (s->handle.vtable->submit_blocking(s->handle.self, fn, task) != CUBERT_STATUS_OK)
    return cubert_error_set(out_error, CUBERT_ERROR_DEVICE_LOST, NULL, 0,
                            "the device handle refused the call");
  return task->status;
}

uint64_t cubert_client_stream(const cubert_client_t *client) {
  const device_state_t *s;
  if (!client) return 0;
  if (client->pinned) return client->stream;
  s = client->state;
  return s->stream_source ? s->stream_source(s->stream_source_self) : 0;
}

/* The launch task: client_launch.c and the profiled launches of
 * client_profile.c run it. */
typedef struct launch_task_t {
  client_task_t head;
  cubert_server_launch_t op;
} launch_task_t;

static void launch_run(void *context, void *payload) {
  launch_task_t *t = (launch_task_t *)payload;
  t->head.status = cubert__server_launch((cubert_server_t *)context, &t->op, t->head.error);
}

typedef struct lost_task_t {
  client_task_t head;
  cubert_error_t lost;
} lost_task_t;

static void lost_run(void *context, void *payload) {
  lost_task_t *t = (lost_task_t *)payload;
  cubert__server_note_lost((cubert_server_t *)context, &t->lost);
  t->head.status = CUBERT_STATUS_UNAVAILABLE;
  if (t->head.error) *t->head.error = t->lost;
}

void client_sharded_done(device_state_t *s, cubert_status_t status, const cubert_error_t *error,
                         cubert_error_t *out_error) {
  lost_task_t lost;
  if (status == CUBERT_STATUS_OK) return;
  lost.lost = *error;
  if (status == CUBERT_STATUS_UNAVAILABLE) { /* the device is lost: made sticky, held */
    lost.head.status = CUBERT_STATUS_INTERNAL;
    lost.head.error = out_error;
    if (s->handle.vtable->submit_blocking(s->handle.self, lost_run, &lost) == CUBERT_STATUS_OK) return;
  }
  if (out_error) *out_error = lost.lost;
}

/* The launch through its stream's shard (core/device/device_shards.h), when
 * the device lock is not held or wanted and the server takes it
 * (cubert__server_launch_sharded); false: run it with the device held. */
static bool launch_sharded(device_state_t *s, const cubert_server_launch_t *op,
                           cubert_status_t *out_status, cubert_error_t *out_error) {
  uint32_t shard = cubert__server_shard_of(s->server, op->stream);
  cubert_error_t e;
  bool taken;
  if (!cubert__device_shards_enter_wait(s->shards, shard, client_patient(s))) return false;
  cubert_error_clear(&e);
  taken = cubert__server_launch_sharded(s->server, op, out_status, &e);
  cubert__device_shards_leave(s->shards, shard);
  if (taken) client_sharded_done(s, *out_status, &e, out_error);
  return taken;
}

cubert_status_t client_launch_task(cubert_client_t *client, const cubert_kernel_t *kernel,
                                   const cubert_cube_count_t *count,
                                   const cubert_launch_arguments_t *args,
                                   cubert_execution_mode_t mode, cubert_error_t *out_error) {
  launch_task_t t;
  cubert_status_t status;
  t.op.stream = cubert_client_stream(client);
  t.op.kernel = kernel;
  t.op.count = count;
  t.op.args = args;
  t.op.execution = mode;
  if (client->state->shards && launch_sharded(client->state, &t.op, &status, out_error))
    return status;
  return client_submit(client, launch_run, &t.head, out_error);
}

cubert_status_t client_check_device(const cubert_client_t *client, const cubert_handle_t *handle,
                                    cubert_error_t *out_error) {
  if (!handle) return cubert_error_set(out_error, CUBERT_ERROR_INVALID_ARGUMENT, NULL, 0, "NULL handle");
  CUBERT_RETURN_IF_ERROR(client_check_owner(client->state, handle, "handle", out_error));
  /* Client calls take handles: the user must still hold a handle reference.
   * (The memory may stay alive a little longer, pinned by queued work.) */
  if (cubert__memory_id_handle_count(client->state->table, handle->memory) == 0)
    return cubert_error_set(out_error, CUBERT_ERROR_INVALID_HANDLE, NULL, 0,
                            "handle was released or never issued");
  return CUBERT_STATUS_OK;
}

