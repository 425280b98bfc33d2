/* SPDX-License-Identifier: MIT */
/* core/client/client_launch.c: launch, flush, sync, exclusive
 * sections and profile(f). */
#include "client/client_internal.h"

/* ---- launch ------------------------------------------------------------------------ */

static cubert_status_t launch_with(cubert_client_t *client, const struct cubert_kernel_t *kernel,
                                   const struct cubert_cube_count_t *count,
                                   const cubert_launch_arguments_t *args,
                                   cubert_execution_mode_t mode, cubert_error_t *out_error) {
  uint32_t i;
  CLIENT_CHECK(client && kernel && count && args, "launch: NULL argument");
  CLIENT_CHECK(args->buffer_count == 0 || args->buffers, "launch: NULL buffer list");
  CLIENT_CHECK(args->scalar_count == 0 || args->scalars, "launch: NULL scalars");
  if (cubert_cube_count_is_empty(count)) return CUBERT_STATUS_OK; /* dropped */
  for (i = 0; i < args->buffer_count; i++)
    CUBERT_RETURN_IF_ERROR(client_check_device(client, &args->buffers[i], out_error));
  if (cubert_atomic_load_u32(&client->state->profile_level) != CUBERT_PROFILE_LEVEL_OFF)
    return client_profiled_launch(client, kernel, count, args, mode, out_error); /* client_profile.c */
  return client_launch_task(client, kernel, count, args, mode, out_error);
}

cubert_status_t cubert_client_launch(cubert_client_t *client, const struct cubert_kernel_t *kernel,
                                     const struct cubert_cube_count_t *count,
                                     const cubert_launch_arguments_t *args,
                                     cubert_error_t *out_error) {
  CLIENT_CHECK(client, "launch: NULL client");
  return launch_with(client, kernel, count, args,
                     client->state->bounds_check == CUBERT_BOUNDS_CHECK_RACECHECK
                         ? CUBERT_EXECUTION_RACECHECK
                         : CUBERT_EXECUTION_CHECKED,
                     out_error);
}

cubert_status_t cubert_client_launch_unchecked(cubert_client_t *client,
                                               const struct cubert_kernel_t *kernel,
                                               const struct cubert_cube_count_t *count,
                                               const cubert_launch_arguments_t *args,
                                               cubert_error_t *out_error) {
  cubert_execution_mode_t mode = CUBERT_EXECUTION_UNCHECKED;
  CLIENT_CHECK(client, "launch_unchecked: NULL client");
  switch (client->state->bounds_check) {
    case CUBERT_BOUNDS_CHECK_ENFORCE:
      mode = CUBERT_EXECUTION_CHECKED;
      break;
    case CUBERT_BOUNDS_CHECK_VALIDATE:
      mode = CUBERT_EXECUTION_VALIDATE;
      break;
    case CUBERT_BOUNDS_CHECK_RACECHECK:
      mode = CUBERT_EXECUTION_RACECHECK;
      break;
    case CUBERT_BOUNDS_CHECK_AUTO:
    default:
      mode = CUBERT_EXECUTION_UNCHECKED;
      break;
  }
  return launch_with(client, kernel, count, args, mode, out_error);
}

/* ---- flush and sync ------------------------------------------------------------------- */

typedef struct stream_task_t {
  client_task_t head;
  uint64_t stream;
  cubert_completion_t *completion;
} stream_task_t;

static void flush_run(void *context, void *payload) {
  stream_task_t *t = (stream_task_t *)payload;
  t->head.status = cubert_kit_flush((cubert_kit_t *)context, t->stream, t->head.error);
}

static void sync_run(void *context, void *payload) {
  stream_task_t *t = (stream_task_t *)payload;
  t->head.status = cubert_kit_sync((cubert_kit_t *)context, t->stream, t->completion, t->head.error);
}

cubert_status_t cubert_client_flush(cubert_client_t *client, cubert_error_t *out_error) {
  stream_task_t t;
  CLIENT_CHECK(client, "flush: NULL client");
  t.stream = cubert_client_stream(client);
  t.completion = NULL;
  return client_submit(client, flush_run, &t.head, out_error);
}

cubert_status_t cubert_client_sync_async(cubert_client_t *client,
                                         cubert_completion_t *out_completion,
                                         cubert_error_t *out_error) {
  stream_task_t t;
  CLIENT_CHECK(client && out_completion, "sync: NULL argument");
  t.stream = cubert_client_stream(client);
  t.completion = out_completion;
  CUBERT_RETURN_IF_ERROR(client_submit(client, sync_run, &t.head, out_error));
  client_profile_emit_summary(client); /* the summary is printed at each sync */
  return CUBERT_STATUS_OK;
}

cubert_status_t cubert_client_sync(cubert_client_t *client, cubert_error_t *out_error) {
  cubert_completion_t completion;
  CUBERT_RETURN_IF_ERROR(cubert_client_sync_async(client, &completion, out_error));
  return cubert_completion_wait(&completion, UINT64_MAX, out_error);
}

/* ---- exclusive sections and profile(f) ------------------------------------------------- */

typedef struct exclusive_call_t {
  cubert_client_t *client;
  cubert_client_fn_t fn;
  void *user;
  cubert_profile_duration_t *duration;
  cubert_error_t *error;
  cubert_error_t local;
} exclusive_call_t;

static cubert_status_t run_exclusive(void *user) {
  exclusive_call_t *x = (exclusive_call_t *)user;
  return x->fn(x->user, x->error);
}

static void exclusive_init(exclusive_call_t *x, cubert_client_t *client, cubert_client_fn_t fn,
                           void *user, cubert_error_t *out_error) {
  x->client = client;
  x->fn = fn;
  x->user = user;
  x->duration = NULL;
  x->error = out_error ? out_error : &x->local;
  cubert_error_clear(x->error);
}

cubert_status_t cubert_client_exclusive(cubert_client_t *client, cubert_client_fn_t fn, void *user,
                                        cubert_error_t *out_error) {
  exclusive_call_t x;
  cubert_status_t status;
  CLIENT_CHECK(client && fn, "exclusive: NULL argument");
  exclusive_init(&x, client, fn, user, out_error);
  status = client->state->handle.vtable->exclusive(client->state->handle.self, run_exclusive, &x);
  if (status != CUBERT_STATUS_OK && x.error->status == CUBERT_STATUS_OK) x.error->status = status;
  return status;
}

/* Runs inside the exclusive section: the kit is called directly (the device
 * is held by this thread). */
static cubert_status_t run_profile(void *user) {
  exclusive_call_t *x = (exclusive_call_t *)user;
  cubert_kit_t *kit = x->client->state->kit;
  uint64_t stream = cubert_client_stream(x->client);
  cubert_profiling_token_t token;
  cubert_profile_duration_t duration;
  cubert_status_t status;
  status = cubert_kit_profile_start(kit, stream, &token, x->error);
  if (status != CUBERT_STATUS_OK) return status;
  status = x->fn(x->user, x->error);
  if (status != CUBERT_STATUS_OK) {
    cubert_error_t ignored;
    (void)cubert_kit_profile_end(kit, stream, token, &duration, &ignored);
    return status;
  }
  status = cubert_kit_profile_end(kit, stream, token, &duration, x->error);
  if (status == CUBERT_STATUS_OK && x->duration) *x->duration = duration;
  return status;
}

cubert_status_t cubert_client_profile(cubert_client_t *client, cubert_client_fn_t fn, void *user,
                                      const char *name, cubert_profile_duration_t *out_duration,
                                      cubert_error_t *out_error) {
  exclusive_call_t x;
  CLIENT_CHECK(client && fn, "profile: NULL argument");
  (void)name;
  exclusive_init(&x, client, fn, user, out_error);
  x.duration = out_duration;
  return client->state->handle.vtable->exclusive(client->state->handle.self, run_profile, &x);
}
