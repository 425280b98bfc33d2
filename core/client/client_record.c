/* SPDX-License-Identifier: MIT */
/* core/client/client_record.c: recorded launch sequences (cubert/record.h).
 * Each call is a device task running one server function of
 * core/server/server_record.c with the device held; the recording object
 * holds a reference on its device (as a client does). */
#include "client/client_internal.h"
#include "cubert/record.h"

struct cubert_recording_t {
  device_state_t *state;
  cubert_server_recording_t *recording;
};

typedef struct record_task_t {
  client_task_t head;
  uint64_t stream;
  cubert_server_recording_t *recording;
  uint32_t index;
  const cubert_handle_t *handle;
  const cubert_launch_arguments_t *args;
} record_task_t;

/* Run fn with the device of `state` held (client_submit without a client). */
static cubert_status_t state_submit(device_state_t *s, cubert_device_task_fn_t fn, record_task_t *task,
                                    cubert_error_t *out_error) {
  task->head.status = CUBERT_STATUS_INTERNAL;
  task->head.error = out_error;
  if (s->handle.vtable->submit_blocking(s->handle.self, fn, task) != CUBERT_STATUS_OK)
    return cubert_error_set(out_error, CUBERT_ERROR_DEVICE_LOST, NULL, 0,
                            "the device handle refused the call");
  return task->head.status;
}

static void begin_run(void *context, void *payload) {
  record_task_t *t = (record_task_t *)payload;
  t->head.status = cubert__server_record_begin((cubert_server_t *)context, t->stream, t->head.error);
}

static void end_run(void *context, void *payload) {
  record_task_t *t = (record_task_t *)payload;
  t->head.status =
      cubert__server_record_end((cubert_server_t *)context, t->stream, &t->recording, t->head.error);
}

static void replay_run(void *context, void *payload) {
  record_task_t *t = (record_task_t *)payload;
  t->head.status = cubert__server_replay((cubert_server_t *)context, t->stream, t->recording, t->head.error);
}

static void set_buffer_run(void *context, void *payload) {
  record_task_t *t = (record_task_t *)payload;
  t->head.status = cubert__server_recording_set_buffer((cubert_server_t *)context, t->recording, t->index,
                                                       t->handle, t->head.error);
}

static void set_scalars_run(void *context, void *payload) {
  record_task_t *t = (record_task_t *)payload;
  (void)context;
  t->head.status = cubert__server_recording_set_scalars(t->recording, t->index, t->args, t->head.error);
}

static void find_run(void *context, void *payload) {
  record_task_t *t = (record_task_t *)payload;
  (void)context;
  t->head.status = cubert__server_recording_find_buffer(t->recording, t->handle, &t->index, t->head.error);
}

static void destroy_run(void *context, void *payload) {
  record_task_t *t = (record_task_t *)payload;
  cubert__server_recording_destroy((cubert_server_t *)context, t->recording);
  t->head.status = CUBERT_STATUS_OK;
}

cubert_status_t cubert_client_record_begin(cubert_client_t *client, cubert_error_t *out_error) {
  record_task_t t;
  CLIENT_CHECK(client, "record_begin: NULL client");
  t.stream = cubert_client_stream(client);
  return client_submit(client, begin_run, &t.head, out_error);
}

cubert_status_t cubert_client_record_end(cubert_client_t *client, cubert_recording_t **out_recording,
                                         cubert_error_t *out_error) {
  record_task_t t;
  cubert_recording_t *r = NULL;
  CLIENT_CHECK(client && out_recording, "record_end: NULL argument");
  /* the handle first: the end below cannot be undone */
  if (cubert_allocator_malloc(client->state->allocator, sizeof(*r), 0, (void **)&r, NULL) !=
      CUBERT_STATUS_OK) {
    cubert_error_t ignored;
    t.stream = cubert_client_stream(client);
    t.recording = NULL;
    /* documented: the recording is dropped and the stream no longer records */
    if (client_submit(client, end_run, &t.head, &ignored) == CUBERT_STATUS_OK)
      (void)state_submit(client->state, destroy_run, &t, &ignored);
    return cubert_error_set(out_error, CUBERT_ERROR_HOST_OUT_OF_MEMORY, NULL, 0,
                            "record_end: no memory for the recording");
  }
  t.stream = cubert_client_stream(client);
  t.recording = NULL;
  if (client_submit(client, end_run, &t.head, out_error) != CUBERT_STATUS_OK) {
    cubert_allocator_free(client->state->allocator, r, sizeof(*r), 0);
    return t.head.status == CUBERT_STATUS_OK ? CUBERT_STATUS_INTERNAL : t.head.status;
  }
  /* the caller holds a client, so refs >= 1 (no 0 -> 1) */
  cubert__atomic_fetch_add_u32(&client->state->refs, 1);
  r->state = client->state;
  r->recording = t.recording;
  *out_recording = r;
  return CUBERT_STATUS_OK;
}

cubert_status_t cubert_client_replay(cubert_client_t *client, cubert_recording_t *recording,
                                     cubert_error_t *out_error) {
  record_task_t t;
  CLIENT_CHECK(client && recording, "replay: NULL argument");
  if (recording->state != client->state)
    return cubert_error_set(out_error, CUBERT_ERROR_DEVICE_MISMATCH, NULL, 0,
                            "replay: the recording was made on another device");
  t.stream = cubert_client_stream(client);
  t.recording = recording->recording;
  return client_submit(client, replay_run, &t.head, out_error);
}

cubert_status_t cubert_recording_set_buffer(cubert_recording_t *recording, uint32_t slot,
                                            const cubert_handle_t *handle, cubert_error_t *out_error) {
  record_task_t t;
  CLIENT_CHECK(recording && handle, "recording set_buffer: NULL argument");
  CUBERT_RETURN_IF_ERROR(client_check_owner(recording->state, handle, "recording set_buffer", out_error));
  t.recording = recording->recording;
  t.index = slot;
  t.handle = handle;
  return state_submit(recording->state, set_buffer_run, &t, out_error);
}

cubert_status_t cubert_recording_set_scalars(cubert_recording_t *recording, uint32_t launch,
                                             const cubert_launch_arguments_t *args,
                                             cubert_error_t *out_error) {
  record_task_t t;
  cubert_launch_arguments_t view;
  CLIENT_CHECK(recording && args, "recording set_scalars: NULL argument");
  CUBERT_RETURN_IF_ERROR(client_arguments_view(args, &view, out_error));
  CLIENT_CHECK(view.scalar_count == 0 || view.scalars, "recording set_scalars: NULL scalars");
  t.recording = recording->recording;
  t.index = launch;
  t.args = &view;
  return state_submit(recording->state, set_scalars_run, &t, out_error);
}

cubert_status_t cubert_recording_find_buffer(cubert_recording_t *recording,
                                             const cubert_handle_t *handle, uint32_t *out_slot,
                                             cubert_error_t *out_error) {
  record_task_t t;
  CLIENT_CHECK(recording && handle && out_slot, "recording find_buffer: NULL argument");
  t.recording = recording->recording;
  t.handle = handle;
  t.index = 0;
  CUBERT_RETURN_IF_ERROR(state_submit(recording->state, find_run, &t, out_error));
  *out_slot = t.index;
  return CUBERT_STATUS_OK;
}

void cubert_recording_counts(cubert_recording_t *recording, uint32_t *out_launches,
                             uint32_t *out_writes, uint32_t *out_buffers) {
  if (out_launches) *out_launches = 0;
  if (out_writes) *out_writes = 0;
  if (out_buffers) *out_buffers = 0;
  if (!recording) return;
  /* fixed once recorded: read without the device */
  cubert__server_recording_counts(recording->recording, out_launches, out_writes, out_buffers);
}

void cubert_recording_destroy(cubert_recording_t *recording) {
  record_task_t t;
  cubert_error_t ignored;
  device_state_t *state;
  if (!recording) return;
  state = recording->state;
  t.recording = recording->recording;
  if (state_submit(state, destroy_run, &t, &ignored) != CUBERT_STATUS_OK) {
    /* the device handle refused (shut down): nothing can be enqueued any more */
    cubert__server_recording_destroy(state->server, recording->recording);
  }
  cubert_allocator_free(state->allocator, recording, sizeof(*recording), 0);
  client_state_release(state);
}
