/* SPDX-License-Identifier: MIT */
/* core/client/client_launch.c: launch, flush, sync, exclusive
 * sections and profile(f). */
#include "client/client_internal.h"

/* ---- launch ------------------------------------------------------------------------ */

static cubert_status_t misaligned(uint32_t slot, uint64_t offset, uint32_t align,
                                  const char *reason, cubert_error_t *out_error) {
  uint64_t f[3];
  f[0] = slot;
  f[1] = offset;
  f[2] = align;
  return cubert_error_set(out_error, CUBERT_ERROR_SERVER_VALIDATION, f, 3, reason);
}

/* A view needs its element's alignment: the handle's byte offset in its
 * allocation (which the device aligns to properties.memory.alignment) must be
 * a multiple of the slot's buffer_align (0: CUBERT_KERNEL_DEFAULT_BUFFER_ALIGN).
 * A declared alignment that is not a power of two up to 64 is refused too. */
static cubert_status_t check_alignment(const cubert_kernel_t *kernel, uint32_t slot,
                                       const cubert_handle_t *handle, cubert_error_t *out_error) {
  uint32_t align = kernel->buffer_align[slot];
  if (align == 0) align = CUBERT_KERNEL_DEFAULT_BUFFER_ALIGN;
  if (align > CUBERT_KERNEL_MAX_ELEMENT_BYTES || (align & (align - 1u)) != 0)
    return misaligned(slot, handle->offset_start, align,
                      "launch: the kernel's buffer_align is not a power of two up to 64",
                      out_error);
  if (handle->offset_start % align != 0)
    return misaligned(slot, handle->offset_start, align,
                      "launch: a buffer's byte offset is not a multiple of its view's alignment "
                      "(kernel buffer_align)",
                      out_error);
  return CUBERT_STATUS_OK;
}

static cubert_status_t launch_with(cubert_client_t *client, const struct cubert_kernel_t *kernel,
                                   const struct cubert_cube_count_t *count,
                                   const cubert_launch_arguments_t *args,
                                   cubert_execution_mode_t mode, cubert_error_t *out_error) {
  uint32_t i;
  uint64_t f[2];
  cubert_launch_arguments_t view; /* the slots to use: the caller's arrays or the builder's */
  CLIENT_CHECK(client && kernel && count && args, "launch: NULL argument");
  /* the counts are checked before either array is read */
  if (args->buffer_count > CUBERT_KERNEL_MAX_BUFFERS || args->scalar_count > CUBERT_KERNEL_MAX_SCALARS) {
    bool buffers = args->buffer_count > CUBERT_KERNEL_MAX_BUFFERS;
    f[0] = buffers ? args->buffer_count : args->scalar_count;
    f[1] = buffers ? CUBERT_KERNEL_MAX_BUFFERS : CUBERT_KERNEL_MAX_SCALARS;
    return cubert_error_set(out_error, CUBERT_ERROR_SERVER_VALIDATION, f, 2,
                            buffers ? "launch: buffer_count above CUBERT_KERNEL_MAX_BUFFERS (16)"
                                    : "launch: scalar_count above CUBERT_KERNEL_MAX_SCALARS (16)");
  }
  CUBERT_RETURN_IF_ERROR(client_arguments_view(args, &view, out_error)); /* client_arguments.c */
  args = &view;
  CLIENT_CHECK(args->buffer_count == 0 || args->buffers, "launch: NULL buffer list");
  CLIENT_CHECK(args->scalar_count == 0 || args->scalars, "launch: NULL scalars");
  if ((uint32_t)count->kind > (uint32_t)CUBERT_CUBE_COUNT_DYNAMIC) {
    f[0] = (uint32_t)count->kind;
    f[1] = CUBERT_CUBE_COUNT_DYNAMIC;
    return cubert_error_set(out_error, CUBERT_ERROR_INVALID_ARGUMENT, f, 2,
                            "launch: unknown cube count kind (STATIC or DYNAMIC)");
  }
  if (cubert_cube_count_is_empty(count)) return CUBERT_STATUS_OK; /* dropped */
  for (i = 0; i < args->buffer_count; i++) {
    CUBERT_RETURN_IF_ERROR(client_check_device(client, &args->buffers[i], out_error));
    CUBERT_RETURN_IF_ERROR(check_alignment(kernel, i, &args->buffers[i], out_error));
  }
  if (count->kind == CUBERT_CUBE_COUNT_DYNAMIC && count->binding.offset_start % 4u != 0)
    return misaligned(CUBERT_KERNEL_MAX_BUFFERS, count->binding.offset_start, 4,
                      "launch: a dynamic cube count's binding is not at a multiple of 4 bytes",
                      out_error);
  if (cubert__atomic_load_u32(&client->state->profile_level) != CUBERT_PROFILE_LEVEL_OFF)
    return client_profiled_launch(client, kernel, count, args, mode, out_error); /* client_profile.c */
  return client_launch_task(client, kernel, count, args, mode, out_error);
}

cubert_status_t(cubert_client_launch)(cubert_client_t *client, const struct cubert_kernel_t *kernel,
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

cubert_status_t(cubert_client_launch_unchecked)(cubert_client_t *client,
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
  t->head.status = cubert__server_flush((cubert_server_t *)context, t->stream, t->head.error);
}

static void sync_run(void *context, void *payload) {
  stream_task_t *t = (stream_task_t *)payload;
  t->head.status = cubert__server_sync((cubert_server_t *)context, t->stream, t->completion, t->head.error);
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
  client_completion_keep(client, out_completion);
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

/* The section's function, with the device held by this thread. */
static cubert_status_t run_held(exclusive_call_t *x, cubert_status_t (*fn)(exclusive_call_t *)) {
  device_state_t *st = x->client->state;
  cubert_status_t status;
  (void)cubert__atomic_fetch_add_u32(&st->exclusive_depth, 1u);
  status = fn(x);
  (void)cubert__atomic_fetch_sub_u32(&st->exclusive_depth, 1u);
  return status;
}

static cubert_status_t call_fn(exclusive_call_t *x) { return x->fn(x->user, x->error); }

static cubert_status_t run_exclusive(void *user) { return run_held((exclusive_call_t *)user, call_fn); }

static void exclusive_init(exclusive_call_t *x, cubert_client_t *client, cubert_client_fn_t fn,
                           void *user, cubert_error_t *out_error) {
  x->client = client;
  x->fn = fn;
  x->user = user;
  x->duration = NULL;
  /* fn and the section write a local record: the caller's is written only
   * when the call fails (exclusive_finish) */
  (void)out_error;
  x->error = &x->local;
  cubert_error_clear(x->error);
}

/* The call's status; the local record goes to out_error on failure. */
static cubert_status_t exclusive_finish(exclusive_call_t *x, cubert_status_t status,
                                        cubert_error_t *out_error) {
  if (status == CUBERT_STATUS_OK) return status;
  if (x->error->status == CUBERT_STATUS_OK) x->error->status = status;
  if (out_error) *out_error = *x->error;
  return status;
}

cubert_status_t cubert_client_exclusive(cubert_client_t *client, cubert_client_fn_t fn, void *user,
                                        cubert_error_t *out_error) {
  exclusive_call_t x;
  cubert_status_t status;
  CLIENT_CHECK(client && fn, "exclusive: NULL argument");
  exclusive_init(&x, client, fn, user, out_error);
  status = client->state->handle.vtable->exclusive(client->state->handle.self, run_exclusive, &x);
  return exclusive_finish(&x, status, out_error);
}

/* Runs inside the exclusive section: the server is called directly (the device
 * is held by this thread). */
static cubert_status_t profile_fn(exclusive_call_t *x) {
  cubert_server_t *server = x->client->state->server;
  uint64_t stream = cubert_client_stream(x->client);
  cubert_profiling_token_t token;
  cubert_profile_duration_t duration;
  cubert_status_t status;
  cubert_memset(&duration, 0, sizeof duration); /* (compiled out, the end call answers without it) */
  status = cubert__server_profile_start(server, stream, &token, x->error);
  if (status != CUBERT_STATUS_OK) return status;
  status = x->fn(x->user, x->error);
  if (status != CUBERT_STATUS_OK) {
    cubert_error_t ignored;
    (void)cubert__server_profile_end(server, stream, token, &duration, &ignored);
    return status;
  }
  status = cubert__server_profile_end(server, stream, token, &duration, x->error);
  if (status == CUBERT_STATUS_OK && x->duration) *x->duration = duration;
  return status;
}

static cubert_status_t run_profile(void *user) { return run_held((exclusive_call_t *)user, profile_fn); }

cubert_status_t cubert_client_profile(cubert_client_t *client, cubert_client_fn_t fn, void *user,
                                      const char *name, cubert_profile_duration_t *out_duration,
                                      cubert_error_t *out_error) {
  exclusive_call_t x;
  CLIENT_CHECK(client && fn, "profile: NULL argument");
  (void)name;
  exclusive_init(&x, client, fn, user, out_error);
  x.duration = out_duration;
  return exclusive_finish(
      &x, client->state->handle.vtable->exclusive(client->state->handle.self, run_profile, &x),
      out_error);
}
