/* core/client/client_profile.c: profiling tokens through the client and
 * logger-driven kernel profiling (spec 7): the profiling level, per-launch
 * log lines and the per-kernel summary written to a sink at each sync.
 * Freestanding: text is built with core/base/fmt.h, memory comes from the
 * device's allocator, and the sink is the only way out. */
#include "client/client_internal.h"
#include "base/fmt.h"

/* ---- the device's spin lock (short, non-blocking sections only) ------------- */

static void ext_lock(device_state_t *s) {
  uint32_t expected;
  do {
    expected = 0;
  } while (!cubert_atomic_cas_u32(&s->ext_lock, &expected, 1));
}

static void ext_unlock(device_state_t *s) { cubert_atomic_store_u32(&s->ext_lock, 0); }

/* ---- tokens ------------------------------------------------------------------- */

typedef struct token_call_t {
  int end;
  uint64_t stream;
  cubert_profiling_token_t token;
  cubert_profile_duration_t duration;
  cubert_status_t status;
  cubert_error_t *error;
} token_call_t;

static void token_task(void *context, void *payload) {
  cubert_server_t *server = (cubert_server_t *)context;
  token_call_t *call = (token_call_t *)payload;
  const cubert_server_vtable_t *v = server->vtable;
  if (!v->start_profile || !v->end_profile) {
    call->status = cubert_error_set(call->error, CUBERT_ERROR_IO_UNSUPPORTED_IO_OPERATION, NULL, 0,
                                    "this server has no profiling");
    return;
  }
  if (call->end)
    call->status = v->end_profile(server, call->stream, call->token, &call->duration, call->error);
  else
    call->status = v->start_profile(server, call->stream, &call->token, call->error);
}

static cubert_status_t token_call(cubert_client_t *client, token_call_t *call) {
  cubert_status_t status;
  call->stream = cubert_client_stream(client);
  call->status = CUBERT_STATUS_INTERNAL;
  status = client->state->handle.vtable->submit_blocking(client->state->handle.self, token_task,
                                                         call);
  if (status != CUBERT_STATUS_OK)
    return cubert_error_set(call->error, CUBERT_ERROR_DEVICE_LOST, NULL, 0,
                            "the device handle refused the call");
  return call->status;
}

cubert_status_t cubert_client_profile_start(cubert_client_t *client,
                                            cubert_profiling_token_t *out_token,
                                            cubert_error_t *out_error) {
  token_call_t call;
  if (!client || !out_token)
    return cubert_error_set(out_error, CUBERT_ERROR_INVALID_ARGUMENT, NULL, 0,
                            "profile_start: NULL argument");
  cubert_memset(&call, 0, sizeof call);
  call.error = out_error;
  CUBERT_RETURN_IF_ERROR(token_call(client, &call));
  *out_token = call.token;
  return CUBERT_STATUS_OK;
}

cubert_status_t cubert_client_profile_end(cubert_client_t *client, cubert_profiling_token_t token,
                                          cubert_profile_duration_t *out_duration,
                                          cubert_error_t *out_error) {
  token_call_t call;
  if (!client || !out_duration)
    return cubert_error_set(out_error, CUBERT_ERROR_INVALID_ARGUMENT, NULL, 0,
                            "profile_end: NULL argument");
  cubert_memset(&call, 0, sizeof call);
  call.end = 1;
  call.token = token;
  call.error = out_error;
  CUBERT_RETURN_IF_ERROR(token_call(client, &call));
  *out_duration = call.duration;
  return CUBERT_STATUS_OK;
}

/* ---- the profiling level ---------------------------------------------------------- */

#define SUMMARY_MAX_NAMES 256u
#define SUMMARY_NAME_BYTES 16384u

cubert_status_t cubert_client_set_profiling(cubert_client_t *client, cubert_profile_level_t level,
                                            cubert_log_sink_fn_t sink, void *sink_self,
                                            cubert_error_t *out_error) {
  device_state_t *s;
  cubert_profile_summary_t *fresh = NULL, *old;
  if (!client || !cubert_profile_level_is_valid(level) ||
      (level != CUBERT_PROFILE_LEVEL_OFF && !sink))
    return cubert_error_set(out_error, CUBERT_ERROR_INVALID_ARGUMENT, NULL, 0,
                            "set_profiling: NULL client, invalid level or NULL sink");
  s = client->state;
  if (level != CUBERT_PROFILE_LEVEL_OFF)
    CUBERT_RETURN_IF_ERROR(cubert_profile_summary_create(s->allocator, level, SUMMARY_MAX_NAMES,
                                                         SUMMARY_NAME_BYTES, &fresh, out_error));
  ext_lock(s);
  old = s->summary;
  s->summary = fresh;
  s->sink = sink;
  s->sink_self = sink_self;
  cubert_atomic_store_u32(&s->profile_level, (uint32_t)level);
  ext_unlock(s);
  cubert_profile_summary_destroy(old);
  return CUBERT_STATUS_OK;
}

cubert_profile_level_t cubert_client_profiling_level(const cubert_client_t *client) {
  if (!client) return CUBERT_PROFILE_LEVEL_OFF;
  return (cubert_profile_level_t)cubert_atomic_load_u32(&client->state->profile_level);
}

void client_profile_destroy(device_state_t *state) {
  cubert_profile_summary_destroy(state->summary);
  state->summary = NULL;
  cubert_atomic_store_u32(&state->profile_level, (uint32_t)CUBERT_PROFILE_LEVEL_OFF);
}

/* ---- profiled launches -------------------------------------------------------------- */

#define LAUNCH_NAME_BYTES 256
#define LAUNCH_LINE_BYTES 320

/* The name a launch is recorded under: the kernel's name in Balanced format;
 * FULL adds "<name>: <kernel id> CubeCount (x, y, z)" (the kernel id being
 * the kernel's raw name, the count "dynamic" for a dynamic count). */
static void launch_name(cubert_profile_level_t level, const cubert_kernel_t *kernel,
                        const cubert_cube_count_t *count, char *buf, size_t size) {
  cubert_fmt_t f;
  (void)cubert_profile_format_type_name(kernel->name ? kernel->name : "(unnamed)", buf, size);
  if (level != CUBERT_PROFILE_LEVEL_FULL) return;
  cubert_fmt_init_append(&f, buf, size);
  cubert_fmt_append_str(&f, ": ");
  cubert_fmt_append_str(&f, kernel->name ? kernel->name : "(unnamed)");
  if (count->kind == CUBERT_CUBE_COUNT_STATIC) {
    cubert_fmt_append_str(&f, " CubeCount (");
    cubert_fmt_append_u64(&f, count->count.x);
    cubert_fmt_append_str(&f, ", ");
    cubert_fmt_append_u64(&f, count->count.y);
    cubert_fmt_append_str(&f, ", ");
    cubert_fmt_append_u64(&f, count->count.z);
    cubert_fmt_append_str(&f, ")");
  } else {
    cubert_fmt_append_str(&f, " CubeCount (dynamic)");
  }
}

typedef struct profiled_launch_t {
  cubert_client_t *client;
  const cubert_kernel_t *kernel;
  const cubert_cube_count_t *count;
  const cubert_launch_arguments_t *args;
  cubert_execution_mode_t mode;
  cubert_error_t *error;
  uint64_t duration_ns;
} profiled_launch_t;

/* Inside an exclusive section: start a token (syncs), launch, end it (syncs). */
static cubert_status_t run_profiled_launch(void *user) {
  profiled_launch_t *x = (profiled_launch_t *)user;
  cubert_server_t *server = x->client->state->server;
  const cubert_server_vtable_t *v = server->vtable;
  uint64_t stream = cubert_client_stream(x->client);
  cubert_profiling_token_t token;
  cubert_profile_duration_t d;
  cubert_status_t status;
  if (!v->start_profile || !v->end_profile)
    return cubert_error_set(x->error, CUBERT_ERROR_IO_UNSUPPORTED_IO_OPERATION, NULL, 0,
                            "kernel profiling needs a server with profiling");
  CUBERT_RETURN_IF_ERROR(v->start_profile(server, stream, &token, x->error));
  status = v->launch(server, x->kernel, x->count, x->args, x->mode, CUBERT_LAUNCH_EXECUTE, stream,
                     x->error);
  if (status != CUBERT_STATUS_OK) {
    cubert_error_t ignored;
    (void)v->end_profile(server, stream, token, &d, &ignored);
    return status;
  }
  CUBERT_RETURN_IF_ERROR(v->end_profile(server, stream, token, &d, x->error));
  x->duration_ns = d.end_ns >= d.start_ns ? d.end_ns - d.start_ns : 0;
  return CUBERT_STATUS_OK;
}

typedef struct plain_launch_t {
  profiled_launch_t *x;
  uint64_t stream;
  cubert_status_t status;
} plain_launch_t;

static void plain_launch_task(void *context, void *payload) {
  cubert_server_t *server = (cubert_server_t *)context;
  plain_launch_t *p = (plain_launch_t *)payload;
  p->status = server->vtable->launch(server, p->x->kernel, p->x->count, p->x->args, p->x->mode,
                                     CUBERT_LAUNCH_EXECUTE, p->stream, p->x->error);
}

cubert_status_t client_profiled_launch(cubert_client_t *client, const struct cubert_kernel_t *kernel,
                                       const struct cubert_cube_count_t *count,
                                       const cubert_launch_arguments_t *args,
                                       cubert_execution_mode_t mode, cubert_error_t *out_error) {
  device_state_t *s = client->state;
  cubert_profile_level_t level = (cubert_profile_level_t)cubert_atomic_load_u32(&s->profile_level);
  profiled_launch_t x;
  cubert_error_t local;
  cubert_status_t status;
  char name[LAUNCH_NAME_BYTES], line[LAUNCH_LINE_BYTES];
  size_t n;
  cubert_log_sink_fn_t sink = NULL;
  void *sink_self = NULL;
  cubert_memset(&x, 0, sizeof x);
  x.client = client;
  x.kernel = kernel;
  x.count = count;
  x.args = args;
  x.mode = mode;
  x.error = out_error ? out_error : &local;
  cubert_error_clear(x.error);
  if (cubert_profile_level_is_timed(level)) {
    status = s->handle.vtable->exclusive(s->handle.self, run_profiled_launch, &x);
    if (status != CUBERT_STATUS_OK && x.error->status == CUBERT_STATUS_OK)
      cubert_error_set(x.error, CUBERT_ERROR_DEVICE_LOST, NULL, 0, "the device refused the call");
  } else {
    plain_launch_t p;
    p.x = &x;
    p.stream = cubert_client_stream(client);
    p.status = CUBERT_STATUS_INTERNAL;
    status = s->handle.vtable->submit_blocking(s->handle.self, plain_launch_task, &p);
    if (status != CUBERT_STATUS_OK)
      status = cubert_error_set(x.error, CUBERT_ERROR_DEVICE_LOST, NULL, 0,
                                "the device handle refused the call");
    else
      status = p.status;
  }
  if (status != CUBERT_STATUS_OK) return status;
  launch_name(level, kernel, count, name, sizeof name);
  n = cubert_profile_format_launch(level, name, x.duration_ns, line, sizeof line - 1);
  if (n > sizeof line - 2) n = sizeof line - 2;
  ext_lock(s);
  if (s->summary) (void)cubert_profile_summary_record(s->summary, name, x.duration_ns);
  sink = s->sink;
  sink_self = s->sink_self;
  ext_unlock(s);
  if (n > 0 && sink) {
    line[n] = '\n';
    line[n + 1] = '\0';
    sink(sink_self, line, n + 1);
  }
  return CUBERT_STATUS_OK;
}

/* ---- the summary at sync ------------------------------------------------------------ */

void client_profile_emit_summary(cubert_client_t *client) {
  device_state_t *s = client->state;
  char *text = NULL;
  size_t need, len = 0;
  cubert_log_sink_fn_t sink = NULL;
  void *sink_self = NULL;
  if (cubert_atomic_load_u32(&s->profile_level) == (uint32_t)CUBERT_PROFILE_LEVEL_OFF) return;
  /* size the text, allocate outside the lock, then format + reset under it */
  ext_lock(s);
  need = s->summary && !cubert_profile_summary_is_empty(s->summary)
             ? cubert_profile_summary_format(s->summary, NULL, 0)
             : 0;
  ext_unlock(s);
  if (need == 0 || need >= SIZE_MAX - 1024) return;
  need += 1024; /* launches recorded meanwhile may widen the table */
  if (cubert_allocator_malloc(s->allocator, need, 0, (void **)&text) != CUBERT_STATUS_OK)
    return; /* kept: printed at a later sync */
  ext_lock(s);
  if (s->summary && !cubert_profile_summary_is_empty(s->summary) &&
      cubert_profile_summary_format(s->summary, NULL, 0) < need) {
    len = cubert_profile_summary_flush(s->summary, text, need);
    sink = s->sink;
    sink_self = s->sink_self;
  }
  ext_unlock(s);
  if (len > 0 && sink) sink(sink_self, text, len);
  cubert_allocator_free(s->allocator, text, need, 0);
}
