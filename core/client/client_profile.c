/* SPDX-License-Identifier: MIT */
/* core/client/client_profile.c: profiling tokens through the client and
 * logger-driven kernel profiling: the profiling level, per-launch
 * log lines and the per-kernel summary written to a sink at each sync.
 * Freestanding: text is built with core/base/fmt.h, memory comes from the
 * device's allocator, and the sink is the only way out. */
#include "client/client_internal.h"
#include "base/fmt.h"

#if CUBERT_CONFIG_PROFILING /* else core/client/profile_off.c: the public entry points */

/* ---- the device's spin lock (short, non-blocking sections only) ------------- */

static void ext_lock(device_state_t *s) {
  uint32_t expected;
  do {
    expected = 0;
  } while (!cubert__atomic_cas_u32(&s->ext_lock, &expected, 1));
}

static void ext_unlock(device_state_t *s) { cubert__atomic_store_u32(&s->ext_lock, 0); }

/* ---- tokens ------------------------------------------------------------------- */

typedef struct token_task_t {
  client_task_t head;
  int end;
  uint64_t stream;
  cubert_profiling_token_t token;
  cubert_profile_duration_t duration;
} token_task_t;

static void token_run(void *context, void *payload) {
  cubert_server_t *server = (cubert_server_t *)context;
  token_task_t *t = (token_task_t *)payload;
  if (t->end)
    t->head.status = cubert__server_profile_end(server, t->stream, t->token, &t->duration, t->head.error);
  else
    t->head.status = cubert__server_profile_start(server, t->stream, &t->token, t->head.error);
}

cubert_status_t cubert_client_profile_start(cubert_client_t *client,
                                            cubert_profiling_token_t *out_token,
                                            cubert_error_t *out_error) {
  token_task_t t;
  if (!client || !out_token)
    return cubert_error_set(out_error, CUBERT_ERROR_INVALID_ARGUMENT, NULL, 0,
                            "profile_start: NULL argument");
  cubert_memset(&t, 0, sizeof t);
  t.stream = cubert_client_stream(client);
  CUBERT_RETURN_IF_ERROR(client_submit(client, token_run, &t.head, out_error));
  *out_token = t.token;
  return CUBERT_STATUS_OK;
}

cubert_status_t cubert_client_profile_end(cubert_client_t *client, cubert_profiling_token_t token,
                                          cubert_profile_duration_t *out_duration,
                                          cubert_error_t *out_error) {
  token_task_t t;
  if (!client || !out_duration)
    return cubert_error_set(out_error, CUBERT_ERROR_INVALID_ARGUMENT, NULL, 0,
                            "profile_end: NULL argument");
  cubert_memset(&t, 0, sizeof t);
  t.end = 1;
  t.token = token;
  t.stream = cubert_client_stream(client);
  CUBERT_RETURN_IF_ERROR(client_submit(client, token_run, &t.head, out_error));
  *out_duration = t.duration;
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
  cubert__atomic_store_u32(&s->profile_level, (uint32_t)level);
  ext_unlock(s);
  cubert_profile_summary_destroy(old);
  return CUBERT_STATUS_OK;
}

cubert_profile_level_t cubert_client_profiling_level(const cubert_client_t *client) {
  if (!client) return CUBERT_PROFILE_LEVEL_OFF;
  return (cubert_profile_level_t)cubert__atomic_load_u32(&client->state->profile_level);
}

static void emit_summary(device_state_t *s);

void client_profile_destroy(device_state_t *state) {
  /* what was recorded since the last sync is printed now: the summary does
   * not depend on an explicit sync (a program may read and release) */
  emit_summary(state);
  cubert_profile_summary_destroy(state->summary);
  state->summary = NULL;
  cubert__atomic_store_u32(&state->profile_level, (uint32_t)CUBERT_PROFILE_LEVEL_OFF);
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
  cubert__fmt_initialize_append(&f, buf, size);
  cubert__fmt_append_str(&f, ": ");
  cubert__fmt_append_str(&f, kernel->name ? kernel->name : "(unnamed)");
  if (count->kind == CUBERT_CUBE_COUNT_STATIC) {
    cubert__fmt_append_str(&f, " CubeCount (");
    cubert__fmt_append_u64(&f, count->count.x);
    cubert__fmt_append_str(&f, ", ");
    cubert__fmt_append_u64(&f, count->count.y);
    cubert__fmt_append_str(&f, ", ");
    cubert__fmt_append_u64(&f, count->count.z);
    cubert__fmt_append_str(&f, ")");
  } else {
    cubert__fmt_append_str(&f, " CubeCount (dynamic)");
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
  cubert_server_launch_t op;
  cubert_profiling_token_t token;
  cubert_profile_duration_t d;
  cubert_status_t status;
  op.stream = cubert_client_stream(x->client);
  op.kernel = x->kernel;
  op.count = x->count;
  op.args = x->args;
  op.execution = x->mode;
  if (!cubert__server_has_clock(server))
    return cubert_error_set(x->error, CUBERT_ERROR_IO_UNSUPPORTED_IO_OPERATION, NULL, 0,
                            "kernel profiling needs a device with a clock");
  CUBERT_RETURN_IF_ERROR(cubert__server_profile_start(server, op.stream, &token, x->error));
  status = cubert__server_launch(server, &op, x->error);
  if (status != CUBERT_STATUS_OK) {
    cubert_error_t ignored;
    (void)cubert__server_profile_end(server, op.stream, token, &d, &ignored);
    return status;
  }
  CUBERT_RETURN_IF_ERROR(cubert__server_profile_end(server, op.stream, token, &d, x->error));
  x->duration_ns = d.end_ns >= d.start_ns ? d.end_ns - d.start_ns : 0;
  return CUBERT_STATUS_OK;
}

cubert_status_t client_profiled_launch(cubert_client_t *client, const struct cubert_kernel_t *kernel,
                                       const struct cubert_cube_count_t *count,
                                       const cubert_launch_arguments_t *args,
                                       cubert_execution_mode_t mode, cubert_error_t *out_error) {
  device_state_t *s = client->state;
  cubert_profile_level_t level = (cubert_profile_level_t)cubert__atomic_load_u32(&s->profile_level);
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
    status = client_launch_task(client, kernel, count, args, mode, x.error);
  }
  if (status != CUBERT_STATUS_OK) return status;
  launch_name(level, kernel, count, name, sizeof name);
  n = cubert_profile_format_launch(level, name, x.duration_ns, line, sizeof line - 1);
  if (n > sizeof line - 2) n = sizeof line - 2;
  ext_lock(s);
  if (s->summary) (void)cubert_profile_summary_record(s->summary, name, x.duration_ns, NULL);
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


void client_profile_emit_summary(cubert_client_t *client) { emit_summary(client->state); }

/* The summary table of the launches recorded since the last one, to the sink. */
static void emit_summary(device_state_t *s) {
  char *text = NULL;
  size_t need, len = 0;
  cubert_log_sink_fn_t sink = NULL;
  void *sink_self = NULL;
  if (cubert__atomic_load_u32(&s->profile_level) == (uint32_t)CUBERT_PROFILE_LEVEL_OFF) return;
  /* size the text, allocate outside the lock, then format + reset under it */
  ext_lock(s);
  need = s->summary && !cubert_profile_summary_is_empty(s->summary)
             ? cubert_profile_summary_format(s->summary, NULL, 0)
             : 0;
  ext_unlock(s);
  if (need == 0 || need >= SIZE_MAX - 1024) return;
  need += 1024; /* launches recorded meanwhile may widen the table */
  if (cubert_allocator_malloc(s->allocator, need, 0, (void **)&text, NULL) != CUBERT_STATUS_OK)
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

#endif /* CUBERT_CONFIG_PROFILING */
