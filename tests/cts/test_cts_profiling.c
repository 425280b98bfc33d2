/* SPDX-License-Identifier: MIT */
/* Conformance: profiling through the client: tokens (nested,
 * overlapping, misuse), durations between two stream syncs, an error during a
 * profile invalidating every active token, and the kernel-profiling level
 * with its per-kernel summary written to a log sink at sync. */
#define TEST_REQUIRES (CUBERT_FEATURE_PROFILING)
#include "cts.h"

#include <pthread.h>
#if !CUBERT_CTS_INLINE_ONLY
#include <unistd.h>

#include "cubert/cpu.h"
#include "cubert/os.h"
#endif
#include "cubert/cube.h"
#include "cubert/profile.h"
#include "profile/profiler.h"
#include "cubert_kernels.h"
#include "cts_kernels.h"

#define SLEEP_MS CTS_SLEEP_MS

/* cts_sleep_u32 (cts_kernels.h): unit 0 of cube 0 sleeps SLEEP_MS, then buf[0] += 1. */
CUBERT_KERNEL_DESCRIPTOR(cts_sleep_kernel, cts_sleep_u32, 1, 0, 0, 1, 1, 1);

static cubert_launch_arguments_t one_buffer(const cubert_handle_t *h, const uint64_t *scalar) {
  cubert_launch_arguments_t a;
  cubert_launch_arguments_initialize(&a);
  a.buffers = h;
  a.buffer_count = 1;
  a.scalars = scalar;
  a.scalar_count = scalar ? 1 : 0;
  return a;
}

static uint64_t ns_of(const cubert_profile_duration_t *d) { return d->end_ns - d->start_ns; }

/* A profile's duration is host time between two stream syncs: it covers the
 * kernel launched (non-blocking) inside it. Overlapping tokens end in any
 * order and each measures its own interval. */
TEST(cts_profile_tokens_overlap_and_measure_between_syncs) {
  cts_env_t env;
  uint32_t data[1] = {0}, out[1];
  cubert_handle_t h;
  cubert_profiling_token_t a, b;
  cubert_profile_duration_t da, db;
  cubert_launch_arguments_t args;
  cubert_cube_count_t count = cubert_cube_count_new_single();
  cts_setup(&env, 0);
  CHECK_OK(cubert_client_create_from_slice(env.client, data, sizeof data, &h, NULL));
  args = one_buffer(&h, NULL);
  CHECK_OK(cubert_client_profile_start(env.client, &a, NULL));
  CHECK_OK(cubert_client_profile_start(env.client, &b, NULL));
  CHECK(a.id != b.id);
  CHECK_OK(cubert_client_launch(env.client, &cts_sleep_kernel, &count, &args, NULL));
  CHECK_OK(cubert_client_profile_end(env.client, a, &da, NULL)); /* a ends first: overlap */
  CHECK_OK(cubert_client_profile_end(env.client, b, &db, NULL));
  CHECK_MSG(ns_of(&da) >= SLEEP_MS * 1000000ull, "profile a lasted %llu ns",
            (unsigned long long)ns_of(&da));
  CHECK(db.start_ns >= da.start_ns);
  CHECK(db.end_ns >= da.end_ns);
  CHECK_OK(cubert_client_read_one(env.client, &h, out, sizeof out, NULL));
  CHECK_EQ_U64(out[0], 1);
  CHECK_OK(cubert_client_handle_release(env.client, &h, NULL));
  cts_teardown(&env);
}

typedef struct nest_t {
  cubert_client_t *client;
  cubert_handle_t handle;
  cubert_profile_duration_t inner;
  cubert_status_t inner_status;
  const cubert_kernel_t *kernel;
} nest_t;

static cubert_status_t inner_launch(void *user, cubert_error_t *err) {
  nest_t *n = (nest_t *)user;
  cubert_launch_arguments_t args = one_buffer(&n->handle, NULL);
  cubert_cube_count_t count = cubert_cube_count_new_single();
  return cubert_client_launch(n->client, n->kernel, &count, &args, err);
}

/* The outer fn runs a nested profile and ignores its result. */
static cubert_status_t outer_fn(void *user, cubert_error_t *err) {
  nest_t *n = (nest_t *)user;
  cubert_error_t inner_err;
  (void)err;
  n->inner_status =
      cubert_client_profile(n->client, inner_launch, n, "inner", &n->inner, &inner_err);
  return CUBERT_STATUS_OK;
}

TEST(cts_profile_nested_profiles_contain_each_other) {
  cts_env_t env;
  uint32_t data[1] = {0};
  nest_t n;
  cubert_profile_duration_t outer;
  cts_setup(&env, 0);
  memset(&n, 0, sizeof n);
  n.client = env.client;
  n.kernel = &cts_sleep_kernel;
  CHECK_OK(cubert_client_create_from_slice(env.client, data, sizeof data, &n.handle, NULL));
  CHECK_OK(cubert_client_profile(env.client, outer_fn, &n, "outer", &outer, NULL));
  CHECK_OK(n.inner_status);
  CHECK(ns_of(&n.inner) >= SLEEP_MS * 1000000ull);
  CHECK(outer.start_ns <= n.inner.start_ns);
  CHECK(n.inner.end_ns <= outer.end_ns);
  CHECK_OK(cubert_client_handle_release(env.client, &n.handle, NULL));
  cts_teardown(&env);
}

/* Too many units per cube (1024 x 2): the limit error is queued on the stream. */
CUBERT_KERNEL_DESCRIPTOR(cts_huge_sleep_kernel, cts_sleep_u32, 1, 0, 0, 1024, 2, 1);

/* A launch failure inside a nested profile surfaces at the inner profile's
 * sync; it invalidates the outer (still active) token too, so the outer
 * profile fails although its own fn succeeded. Later profiles work. */
TEST(cts_profile_error_invalidates_nested_outer_profile) {
  cts_env_t env;
  uint32_t data[4] = {0};
  nest_t n;
  cubert_profile_duration_t outer, d;
  cubert_error_t err;
  char msg[512];
  cts_setup(&env, 0);
  memset(&n, 0, sizeof n);
  n.client = env.client;
  n.kernel = &cts_huge_sleep_kernel;
  CHECK_OK(cubert_client_create_from_slice(env.client, data, sizeof data, &n.handle, NULL));
  outer.start_ns = outer.end_ns = 12345;
  CHECK_STATUS(cubert_client_profile(env.client, outer_fn, &n, "outer", &outer, &err),
               CUBERT_STATUS_SERVER_UNHEALTHY);
  CHECK_STATUS(n.inner_status, CUBERT_STATUS_SERVER_UNHEALTHY);
  CHECK(cubert_error_has_kind(&err, CUBERT_ERROR_PROFILE_SERVER));
  CHECK(cubert_error_has_kind(&err, CUBERT_ERROR_RESOURCE_UNITS));
  cubert_error_format(&err, msg, sizeof msg);
  CHECK_MSG(strstr(msg, "2048") != NULL, "message: %s", msg);
  CHECK_EQ_U64(outer.start_ns, 12345); /* untouched on failure */
  /* the device and the profiler stay usable */
  n.kernel = &cts_sleep_kernel;
  CHECK_OK(cubert_client_profile(env.client, inner_launch, &n, "after", &d, NULL));
  CHECK_OK(cubert_client_handle_release(env.client, &n.handle, NULL));
  cts_teardown(&env);
}

/* Overlapping tokens: an error seen while both are active invalidates both;
 * a token started afterwards is not affected. */
TEST(cts_profile_error_invalidates_every_active_token) {
  cts_env_t env;
  uint32_t data[4] = {0};
  cubert_handle_t h;
  cubert_profiling_token_t a, b, c;
  cubert_profile_duration_t d;
  cubert_error_t err;
  cubert_launch_arguments_t args;
  cubert_cube_count_t count = cubert_cube_count_new_single();
  cts_setup(&env, 0);
  CHECK_OK(cubert_client_create_from_slice(env.client, data, sizeof data, &h, NULL));
  args = one_buffer(&h, NULL);
  CHECK_OK(cubert_client_profile_start(env.client, &a, NULL));
  CHECK_OK(cubert_client_profile_start(env.client, &b, NULL));
  CHECK_OK(cubert_client_launch(env.client, &cts_huge_sleep_kernel, &count, &args, NULL));
  CHECK_STATUS(cubert_client_profile_end(env.client, b, &d, &err), CUBERT_STATUS_SERVER_UNHEALTHY);
  CHECK(cubert_error_has_kind(&err, CUBERT_ERROR_PROFILE_SERVER));
  CHECK(cubert_error_has_kind(&err, CUBERT_ERROR_LAUNCH_TOO_MANY_RESOURCES));
  CHECK_OK(cubert_client_profile_start(env.client, &c, NULL)); /* the stream is healthy again */
  /* a's interval saw the error too, although its own end sync is clean */
  cubert_error_clear(&err);
  CHECK_STATUS(cubert_client_profile_end(env.client, a, &d, &err), CUBERT_STATUS_SERVER_UNHEALTHY);
  CHECK(cubert_error_has_kind(&err, CUBERT_ERROR_RESOURCE_UNITS));
  CHECK_OK(cubert_client_profile_end(env.client, c, &d, NULL));
  CHECK(d.end_ns >= d.start_ns);
  CHECK_OK(cubert_client_handle_release(env.client, &h, NULL));
  cts_teardown(&env);
}

/* Token misuse: unknown / twice-ended tokens, NULL arguments, capacity. */
TEST(cts_profile_token_misuse) {
  cts_env_t env;
  cubert_profiling_token_t t, unknown, tokens[CUBERT_PROFILER_DEFAULT_CAPACITY];
  cubert_profile_duration_t d;
  cubert_error_t err;
  uint32_t i;
  cts_setup(&env, 0);
  unknown.id = 987654321ull;
  CHECK_STATUS(cubert_client_profile_end(env.client, unknown, &d, &err),
               CUBERT_STATUS_PROFILE_FAILED);
  CHECK_EQ_U64(cubert_error_kind(&err), CUBERT_ERROR_PROFILE_NOT_REGISTERED);
  CHECK_OK(cubert_client_profile_start(env.client, &t, NULL));
  CHECK_OK(cubert_client_profile_end(env.client, t, &d, NULL));
  CHECK_STATUS(cubert_client_profile_end(env.client, t, &d, &err), CUBERT_STATUS_PROFILE_FAILED);
  CHECK_EQ_U64(cubert_error_kind(&err), CUBERT_ERROR_PROFILE_NOT_REGISTERED);
  CHECK_STATUS(cubert_client_profile_start(env.client, NULL, &err), CUBERT_STATUS_INVALID_ARGUMENT);
  CHECK_STATUS(cubert_client_profile_start(NULL, &t, &err), CUBERT_STATUS_INVALID_ARGUMENT);
  CHECK_STATUS(cubert_client_profile_end(env.client, t, NULL, &err), CUBERT_STATUS_INVALID_ARGUMENT);
  CHECK_STATUS(cubert_client_profile(env.client, NULL, NULL, "x", NULL, &err),
               CUBERT_STATUS_INVALID_ARGUMENT);
  /* the server holds CUBERT_PROFILER_DEFAULT_CAPACITY active tokens */
  for (i = 0; i < CUBERT_PROFILER_DEFAULT_CAPACITY; i++)
    CHECK_OK(cubert_client_profile_start(env.client, &tokens[i], NULL));
  CHECK_STATUS(cubert_client_profile_start(env.client, &t, &err), CUBERT_STATUS_PROFILE_FAILED);
  CHECK_EQ_U64(cubert_error_kind(&err), CUBERT_ERROR_PROFILE_UNKNOWN);
  for (i = 0; i < CUBERT_PROFILER_DEFAULT_CAPACITY; i++)
    CHECK_OK(cubert_client_profile_end(env.client, tokens[i], &d, NULL));
  CHECK_OK(cubert_client_profile_start(env.client, &t, NULL));
  CHECK_OK(cubert_client_profile_end(env.client, t, &d, NULL));
  cts_teardown(&env);
}

/* ---- kernel-profiling level ---------------------------------------------------- */

typedef struct capture_t {
  char text[16384];
  size_t len;
  int calls;
} capture_t;

static void capture_sink(void *self, const char *text, size_t length) {
  capture_t *c = (capture_t *)self;
  c->calls++;
  CHECK(text[length] == '\0');
  if (c->len + length < sizeof c->text) {
    memcpy(c->text + c->len, text, length);
    c->len += length;
    c->text[c->len] = '\0';
  }
}

static void capture_reset(capture_t *c) {
  c->len = 0;
  c->calls = 0;
  c->text[0] = '\0';
}

/* The table line of `name` (NULL if absent), copied into line. */
static const char *row_of(const char *text, const char *name, char *line, size_t size) {
  const char *p = strstr(text, name), *start, *end;
  size_t n;
  if (!p) return NULL;
  start = p;
  while (start > text && start[-1] != '\n') start--;
  end = strchr(p, '\n');
  n = end ? (size_t)(end - start) : strlen(start);
  if (n >= size) n = size - 1;
  memcpy(line, start, n);
  line[n] = '\0';
  return line;
}

/* Launch add_scalar `adds` times and double once; returns buf[0]. */
static uint32_t run_program(cubert_client_t *client, int adds) {
  uint32_t data[4] = {1, 2, 3, 4}, out[4];
  uint64_t delta = 10;
  cubert_handle_t h[2];
  cubert_launch_arguments_t args;
  cubert_cube_count_t count = cubert_cube_count_new_1d(2);
  int i;
  CHECK_OK(cubert_client_create_from_slice(client, data, sizeof data, &h[0], NULL));
  CHECK_OK(cubert_client_empty(client, sizeof data, &h[1], NULL));
  args = one_buffer(&h[0], &delta);
  for (i = 0; i < adds; i++)
    CHECK_OK(cubert_client_launch(client, &ck_add_scalar_u32_kernel, &count, &args, NULL));
  cubert_launch_arguments_initialize(&args);
  args.buffers = h;
  args.buffer_count = 2;
  args.scalar_count = 0;
  CHECK_OK(cubert_client_launch(client, &ck_double_u32_kernel, &count, &args, NULL));
  CHECK_OK(cubert_client_read_one(client, &h[1], out, sizeof out, NULL));
  CHECK_OK(cubert_client_handle_release(client, &h[0], NULL));
  CHECK_OK(cubert_client_handle_release(client, &h[1], NULL));
  return out[0];
}

TEST(cts_kernel_profiling_basic_prints_summary_at_sync) {
  cts_env_t env;
  static capture_t cap;
  char line[512];
  cts_setup(&env, 0);
  capture_reset(&cap);
  CHECK_EQ_U64(cubert_client_profiling_level(env.client), CUBERT_PROFILE_LEVEL_OFF);
  CHECK_OK(cubert_client_set_profiling(env.client, CUBERT_PROFILE_LEVEL_BASIC, capture_sink, &cap,
                                       NULL));
  CHECK_EQ_U64(cubert_client_profiling_level(env.client), CUBERT_PROFILE_LEVEL_BASIC);
  CHECK_EQ_U64(run_program(env.client, 3), 2 * (1 + 30)); /* the kernels really ran */
  CHECK_EQ_I64(cap.calls, 0);                              /* BASIC logs nothing per launch */
  CHECK_OK(cubert_client_sync(env.client, NULL));
  CHECK_EQ_I64(cap.calls, 1);
  CHECK_MSG(strstr(cap.text, "| Name") && strstr(cap.text, "Duration") &&
            strstr(cap.text, "Num Computed") && strstr(cap.text, "Ratio"),
            "table: %s", cap.text);
  CHECK_MSG(row_of(cap.text, "ck_add_scalar_u32", line, sizeof line) != NULL, "table: %s",
            cap.text);
  CHECK_MSG(strstr(line, "| 3 ") != NULL, "add row: %s", line);
  CHECK_MSG(row_of(cap.text, "ck_double_u32", line, sizeof line) != NULL, "table: %s", cap.text);
  CHECK_MSG(strstr(line, "| 1 ") != NULL, "double row: %s", line);
  CHECK_MSG(row_of(cap.text, "| Total", line, sizeof line) != NULL, "table: %s", cap.text);
  CHECK_MSG(strstr(line, "| 4 ") != NULL && strstr(line, "100 %") != NULL, "total: %s", line);
  /* reset at sync: the next sync prints nothing */
  capture_reset(&cap);
  CHECK_OK(cubert_client_sync(env.client, NULL));
  CHECK_EQ_I64(cap.calls, 0);
  /* off: nothing recorded, nothing printed */
  CHECK_OK(cubert_client_set_profiling(env.client, CUBERT_PROFILE_LEVEL_OFF, NULL, NULL, NULL));
  CHECK_EQ_U64(run_program(env.client, 1), 22);
  CHECK_OK(cubert_client_sync(env.client, NULL));
  CHECK_EQ_I64(cap.calls, 0);
  cts_teardown(&env);
}

/* A program that reads and releases without a sync still gets its summary:
 * the last release prints what was recorded since the last sync. */
TEST(cts_kernel_profiling_basic_prints_summary_at_release) {
  cts_env_t env;
  static capture_t cap;
  char line[512];
  cts_setup(&env, 0);
  capture_reset(&cap);
  CHECK_OK(cubert_client_set_profiling(env.client, CUBERT_PROFILE_LEVEL_BASIC, capture_sink, &cap,
                                       NULL));
  CHECK_EQ_U64(run_program(env.client, 2), 2 * (1 + 20));
  CHECK_EQ_I64(cap.calls, 0); /* no sync yet: nothing printed */
  cts_teardown(&env);          /* the last release */
  CHECK_EQ_I64(cap.calls, 1);
  CHECK_MSG(row_of(cap.text, "ck_add_scalar_u32", line, sizeof line) != NULL, "table: %s",
            cap.text);
  CHECK_MSG(strstr(line, "| 2 ") != NULL, "add row: %s", line);
  CHECK_MSG(row_of(cap.text, "| Total", line, sizeof line) != NULL, "table: %s", cap.text);
  CHECK_MSG(strstr(line, "| 3 ") != NULL, "total: %s", line);
}

TEST(cts_kernel_profiling_execution_only_medium_full) {
  cts_env_t env;
  static capture_t cap;
  char line[512];
  cts_setup(&env, 0);
  /* execution only: "Executing <name>" per launch, counts without durations */
  capture_reset(&cap);
  CHECK_OK(cubert_client_set_profiling(env.client, CUBERT_PROFILE_LEVEL_EXECUTION_ONLY,
                                       capture_sink, &cap, NULL));
  CHECK_EQ_U64(run_program(env.client, 2), 2 * 21);
  CHECK_EQ_I64(cap.calls, 3);
  CHECK_MSG(strstr(cap.text, "Executing ck_add_scalar_u32\n") != NULL, "log: %s", cap.text);
  CHECK_MSG(strstr(cap.text, "Executing ck_double_u32\n") != NULL, "log: %s", cap.text);
  capture_reset(&cap);
  CHECK_OK(cubert_client_sync(env.client, NULL));
  CHECK_MSG(strstr(cap.text, "Num Computed") != NULL && strstr(cap.text, "Duration") == NULL,
            "table: %s", cap.text);
  CHECK(row_of(cap.text, "ck_add_scalar_u32", line, sizeof line) != NULL);
  CHECK_MSG(strstr(line, "| 2 ") != NULL && strstr(line, "66 %") != NULL, "row: %s", line);
  /* medium: one "| <duration> | <name>" line per launch */
  capture_reset(&cap);
  CHECK_OK(cubert_client_set_profiling(env.client, CUBERT_PROFILE_LEVEL_MEDIUM, capture_sink,
                                       &cap, NULL));
  CHECK_EQ_U64(run_program(env.client, 1), 22);
  CHECK_EQ_I64(cap.calls, 2);
  CHECK_MSG(row_of(cap.text, "ck_add_scalar_u32", line, sizeof line) != NULL && line[0] == '|' &&
            strstr(line, "s") != NULL,
            "log: %s", cap.text);
  /* full: the name carries the kernel id and the cube count */
  capture_reset(&cap);
  CHECK_OK(cubert_client_set_profiling(env.client, CUBERT_PROFILE_LEVEL_FULL, capture_sink, &cap,
                                       NULL));
  CHECK_EQ_U64(run_program(env.client, 1), 22);
  CHECK_MSG(strstr(cap.text, "ck_add_scalar_u32: ck_add_scalar_u32 CubeCount (2, 1, 1)") != NULL,
            "log: %s", cap.text);
  capture_reset(&cap);
  CHECK_OK(cubert_client_sync(env.client, NULL));
  CHECK_MSG(strstr(cap.text, "CubeCount (2, 1, 1)") != NULL && strstr(cap.text, "Total") != NULL,
            "table: %s", cap.text);
  cts_teardown(&env);
}

TEST(cts_kernel_profiling_errors) {
  cts_env_t env;
  static capture_t cap;
  uint32_t data[4] = {0};
  cubert_handle_t h, dead;
  cubert_launch_arguments_t args;
  cubert_cube_count_t count = cubert_cube_count_new_single();
  cubert_error_t err;
  cts_setup(&env, 0);
  capture_reset(&cap);
  /* bad settings change nothing */
  CHECK_STATUS(cubert_client_set_profiling(env.client, (cubert_profile_level_t)9, capture_sink,
                                           &cap, &err),
               CUBERT_STATUS_INVALID_ARGUMENT);
  CHECK_STATUS(cubert_client_set_profiling(env.client, CUBERT_PROFILE_LEVEL_BASIC, NULL, NULL,
                                           &err),
               CUBERT_STATUS_INVALID_ARGUMENT);
  CHECK_STATUS(cubert_client_set_profiling(NULL, CUBERT_PROFILE_LEVEL_OFF, NULL, NULL, &err),
               CUBERT_STATUS_INVALID_ARGUMENT);
  CHECK_EQ_U64(cubert_client_profiling_level(env.client), CUBERT_PROFILE_LEVEL_OFF);
  CHECK_EQ_U64(cubert_client_profiling_level(NULL), CUBERT_PROFILE_LEVEL_OFF);
  /* the summary cannot be allocated: the previous setting stays */
  CHECK_OK(cubert_client_set_profiling(env.client, CUBERT_PROFILE_LEVEL_EXECUTION_ONLY,
                                       capture_sink, &cap, NULL));
  counting_allocator_fail_at(&env.counting, 1, 0);
  CHECK_STATUS(cubert_client_set_profiling(env.client, CUBERT_PROFILE_LEVEL_BASIC, capture_sink,
                                           &cap, &err),
               CUBERT_STATUS_RESOURCE_EXHAUSTED);
  CHECK_EQ_U64(cubert_client_profiling_level(env.client), CUBERT_PROFILE_LEVEL_EXECUTION_ONLY);
  CHECK_OK(cubert_client_set_profiling(env.client, CUBERT_PROFILE_LEVEL_BASIC, capture_sink, &cap,
                                       NULL));
  /* a failing timed launch is returned by the launch and not recorded */
  CHECK_OK(cubert_client_create_from_slice(env.client, data, sizeof data, &h, NULL));
  args = one_buffer(&h, NULL);
  CHECK_STATUS(cubert_client_launch(env.client, &cts_huge_sleep_kernel, &count, &args, &err),
               CUBERT_STATUS_SERVER_UNHEALTHY);
  CHECK(cubert_error_has_kind(&err, CUBERT_ERROR_RESOURCE_UNITS));
  CHECK_OK(cubert_client_create_from_slice(env.client, data, sizeof data, &dead, NULL));
  CHECK_OK(cubert_client_handle_release(env.client, &dead, NULL));
  args = one_buffer(&dead, NULL);
  CHECK_STATUS(cubert_client_launch(env.client, &cts_sleep_kernel, &count, &args, &err),
               CUBERT_STATUS_INVALID_HANDLE);
  args = one_buffer(&h, NULL); /* missing scalar: refused by the server at launch */
  CHECK(cubert_client_launch(env.client, &ck_add_scalar_u32_kernel, &count, &args, &err) !=
        CUBERT_STATUS_OK);
  CHECK_OK(cubert_client_sync(env.client, NULL));
  CHECK_EQ_I64(cap.calls, 0); /* nothing was recorded */
  /* the summary text cannot be allocated at sync: kept for the next sync */
  CHECK_OK(cubert_client_launch(env.client, &cts_sleep_kernel, &count, &args, NULL));
  counting_allocator_fail_at(&env.counting, 1, 0);
  CHECK_OK(cubert_client_sync(env.client, NULL));
  CHECK_EQ_I64(cap.calls, 0);
  CHECK_OK(cubert_client_sync(env.client, NULL));
  CHECK_EQ_I64(cap.calls, 1);
  CHECK_MSG(strstr(cap.text, "cts_sleep_u32") != NULL, "table: %s", cap.text);
  CHECK_OK(cubert_client_handle_release(env.client, &h, NULL));
  cts_teardown(&env);
}

/* The hosted default sink writes the text to stderr: used as the sink of
 * a BASIC profile, the summary table appears on (a captured) stderr. */
TEST(cts_log_sink_stderr_prints_the_summary) {
#if CUBERT_CTS_INLINE_ONLY
  CTS_REQUIRE_HOST("cubert_log_sink_stderr and file descriptors");
#else
  cts_env_t env;
  FILE *tmp = tmpfile();
  int saved;
  char text[8192];
  size_t n;
  CHECK(tmp != NULL);
  fflush(stderr);
  saved = dup(2);
  CHECK(saved >= 0);
  CHECK(dup2(fileno(tmp), 2) >= 0);
  cubert_log_sink_stderr(NULL, "cts-sink-check\n", 15);
  cubert_log_sink_stderr(NULL, NULL, 0);
  cts_setup(&env, 0);
  CHECK_OK(cubert_client_set_profiling(env.client, CUBERT_PROFILE_LEVEL_BASIC,
                                       cubert_log_sink_stderr, NULL, NULL));
  CHECK_EQ_U64(run_program(env.client, 2), 2 * 21);
  CHECK_OK(cubert_client_sync(env.client, NULL));
  fflush(stderr);
  CHECK(dup2(saved, 2) >= 0);
  close(saved);
  rewind(tmp);
  n = fread(text, 1, sizeof text - 1, tmp);
  text[n] = '\0';
  fclose(tmp);
  CHECK_MSG(strncmp(text, "cts-sink-check\n", 15) == 0, "stderr: %s", text);
  CHECK_MSG(strstr(text, "ck_add_scalar_u32") != NULL && strstr(text, "| Total") != NULL,
            "stderr: %s", text);
  cts_teardown(&env);
#endif
}

/* cubert_cpu_client_create takes the level from CUBERT_PROFILE_LEVEL when
 * the options leave it OFF (docs/configuration.md; the options' initialize
 * reads nothing); an invalid value fails the create with a reason naming
 * the variable. A device created with a level has it (the log's sink); an
 * invalid level fails the create and leaves nothing behind. */
TEST(cts_cpu_options_profile_level) {
#if CUBERT_CTS_INLINE_ONLY
  CTS_REQUIRE_HOST("the CPU driver's options and the environment");
#else
  cubert_cpu_options_t o;
  counting_allocator_t c;
  cubert_allocator_t a = counting_allocator_initialize(&c);
  cubert_client_t *client = NULL;
  cubert_error_t err;
  CHECK(setenv("CUBERT_PROFILE_LEVEL", "execution-only", 1) == 0);
  cubert_cpu_options_initialize(&o);
  CHECK_EQ_U64(o.profile_level, CUBERT_PROFILE_LEVEL_OFF);
  o.device.index = 30;
  o.workers = 1;
  CHECK_OK(cubert_cpu_client_create(a, &o, &client, NULL));
  CHECK_EQ_U64(cubert_client_profiling_level(client), CUBERT_PROFILE_LEVEL_EXECUTION_ONLY);
  cubert_client_release(client);
  client = NULL;
  CHECK(setenv("CUBERT_PROFILE_LEVEL", "bogus", 1) == 0);
  CHECK_STATUS(cubert_cpu_client_create(a, &o, &client, &err), CUBERT_STATUS_INVALID_ARGUMENT);
  CHECK(client == NULL);
  CHECK_MSG(strstr(err.reason, "CUBERT_PROFILE_LEVEL") != NULL, "%s", err.reason);
  CHECK(unsetenv("CUBERT_PROFILE_LEVEL") == 0);
  CHECK_EQ_I64(c.live_blocks, 0);
  o.device.index = 30;
  o.workers = 1;
  o.profile_level = CUBERT_PROFILE_LEVEL_FULL;
  CHECK_OK(cubert_cpu_client_create(a, &o, &client, NULL));
  CHECK_EQ_U64(cubert_client_profiling_level(client), CUBERT_PROFILE_LEVEL_FULL);
  cubert_client_release(client);
  CHECK_EQ_I64(c.live_blocks, 0);
  client = NULL;
  o.profile_level = (cubert_profile_level_t)42;
  CHECK_STATUS(cubert_cpu_client_create(a, &o, &client, &err), CUBERT_STATUS_INVALID_ARGUMENT);
  CHECK(client == NULL);
  CHECK_EQ_I64(c.live_blocks, 0);
  o.profile_level = CUBERT_PROFILE_LEVEL_OFF; /* the index is free again */
  CHECK_OK(cubert_cpu_client_create(a, &o, &client, NULL));
  CHECK_EQ_U64(cubert_client_profiling_level(client), CUBERT_PROFILE_LEVEL_OFF);
  cubert_client_release(client);
  CHECK_EQ_I64(c.live_blocks, 0);
  counting_allocator_destroy(&c);
#endif
}

/* Launches from several threads at once: every launch is counted once in
 * the summary (execution-only records concurrently; basic serializes). */
typedef struct locked_sink_t {
  pthread_mutex_t mutex;
  capture_t cap;
  int lines;
} locked_sink_t;

static void locked_sink(void *self, const char *text, size_t length) {
  locked_sink_t *s = (locked_sink_t *)self;
  pthread_mutex_lock(&s->mutex);
  if (strncmp(text, "Executing ", 10) == 0)
    s->lines++;
  else
    capture_sink(&s->cap, text, length);
  pthread_mutex_unlock(&s->mutex);
}

#define PT_THREADS 4
#define PT_LAUNCHES 25

typedef struct pt_arg_t {
  cubert_client_t *client;
  uint32_t out;
  cubert_status_t status;
} pt_arg_t;

static void *pt_thread(void *arg) {
  pt_arg_t *p = (pt_arg_t *)arg;
  uint32_t data[4] = {0, 0, 0, 0};
  uint64_t delta = 1;
  cubert_handle_t h;
  cubert_launch_arguments_t args;
  cubert_cube_count_t count = cubert_cube_count_new_single();
  int i;
  p->status = cubert_client_create_from_slice(p->client, data, sizeof data, &h, NULL);
  if (p->status != CUBERT_STATUS_OK) return NULL;
  args = one_buffer(&h, &delta);
  for (i = 0; i < PT_LAUNCHES && p->status == CUBERT_STATUS_OK; i++)
    p->status = cubert_client_launch(p->client, &ck_add_scalar_u32_kernel, &count, &args, NULL);
  if (p->status == CUBERT_STATUS_OK)
    p->status = cubert_client_read_one(p->client, &h, data, sizeof data, NULL);
  p->out = data[0];
  (void)cubert_client_handle_release(p->client, &h, NULL);
  return NULL;
}

TEST(cts_kernel_profiling_concurrent_launches_counted_once) {
  cts_env_t env;
  static locked_sink_t sink;
  pthread_t threads[PT_THREADS];
  pt_arg_t args[PT_THREADS];
  cubert_profile_level_t levels[2] = {CUBERT_PROFILE_LEVEL_EXECUTION_ONLY,
                                      CUBERT_PROFILE_LEVEL_BASIC};
  char line[512], want[32];
  int l, i;
  CTS_REQUIRE_THREADS();
  cts_setup(&env, 0);
  pthread_mutex_init(&sink.mutex, NULL);
  for (l = 0; l < 2; l++) {
    capture_reset(&sink.cap);
    sink.lines = 0;
    CHECK_OK(cubert_client_set_profiling(env.client, levels[l], locked_sink, &sink, NULL));
    for (i = 0; i < PT_THREADS; i++) {
      CHECK_OK(cubert_client_clone(env.client, &args[i].client, NULL));
      CHECK(pthread_create(&threads[i], NULL, pt_thread, &args[i]) == 0);
    }
    for (i = 0; i < PT_THREADS; i++) {
      CHECK(pthread_join(threads[i], NULL) == 0);
      CHECK_OK(args[i].status);
      CHECK_EQ_U64(args[i].out, PT_LAUNCHES);
      cubert_client_release(args[i].client);
    }
    CHECK_OK(cubert_client_sync(env.client, NULL));
    CHECK_EQ_I64(sink.lines, l == 0 ? PT_THREADS * PT_LAUNCHES : 0);
    CHECK_MSG(row_of(sink.cap.text, "ck_add_scalar_u32", line, sizeof line) != NULL, "table: %s",
              sink.cap.text);
    snprintf(want, sizeof want, "| %d ", PT_THREADS * PT_LAUNCHES);
    CHECK_MSG(strstr(line, want) != NULL, "row: %s", line);
  }
  pthread_mutex_destroy(&sink.mutex);
  cts_teardown(&env);
}
