/* SPDX-License-Identifier: MIT */
/* The CUBERT_* environment variables of docs/configuration.md and the
 * OS layer's log (cubert/os.h): values fill the CPU options left at
 * their defaults, options set in code win, invalid values fail the create
 * with a reason naming the variable and the accepted values, the log
 * writes its levels to CUBERT_LOG_FILE. Each test runs in its own process,
 * so the environment and the log (started once per process) are fresh. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "counting_allocator.h"
#include "test.h"
#include "cubert/cpu.h"
#include "cubert/cube.h"
#include "cubert/os.h"
#include "cubert_kernels.h"

/* A fresh file name for this test process; removed first. */
static void temp_path(char *buf, size_t size, const char *what) {
  snprintf(buf, size, "/tmp/cubert-test-%s-%ld.txt", what, (long)getpid());
  (void)remove(buf);
}

/* The whole file ("" when missing); malloc'd. */
static char *slurp(const char *path) {
  FILE *f = fopen(path, "rb");
  char *text;
  long n;
  if (!f) {
    text = (char *)calloc(1, 1);
    return text;
  }
  fseek(f, 0, SEEK_END);
  n = ftell(f);
  fseek(f, 0, SEEK_SET);
  text = (char *)calloc(1, (size_t)n + 1);
  if (n > 0 && fread(text, 1, (size_t)n, f) != (size_t)n) text[0] = '\0';
  fclose(f);
  return text;
}

static cubert_status_t create(cubert_allocator_t a, cubert_cpu_options_t *o,
                              cubert_client_t **out, cubert_error_t *err) {
  cubert_error_clear(err);
  return cubert_cpu_client_create(a, o, out, err);
}

/* The environment fills the defaults: mode, seed (cubert_cpu_sim_info),
 * workers and the memory preset (the info line of the log). */
TEST(hostenv_fills_defaults) {
  TEST_REQUIRE_FEATURE(CUBERT_FEATURE_SIMULATION);
  counting_allocator_t c;
  cubert_allocator_t a = counting_allocator_initialize(&c);
  cubert_cpu_options_t o;
  cubert_client_t *client = NULL;
  cubert_cpu_sim_info_t info;
  cubert_error_t err;
  char path[128];
  char *text;
  temp_path(path, sizeof path, "env-defaults");
  CHECK(setenv("CUBERT_LOG", "info", 1) == 0);
  CHECK(setenv("CUBERT_LOG_FILE", path, 1) == 0);
  CHECK(setenv("CUBERT_CPU_MODE", "deterministic", 1) == 0);
  CHECK(setenv("CUBERT_CPU_SEED", "0x2a", 1) == 0);
  CHECK(setenv("CUBERT_MEMORY", "exclusive-pages", 1) == 0);
  cubert_cpu_options_initialize(&o);
  o.device.index = 40;
  CHECK_OK_E(create(a, &o, &client, &err), err);
  CHECK_OK_E(cubert_cpu_sim_info(client, &info, &err), err);
  CHECK_EQ_U64(info.deterministic, 1);
  CHECK_EQ_U64(info.seed, 42);
  cubert_client_release(client);
  /* threaded, 3 workers from the environment */
  CHECK(unsetenv("CUBERT_CPU_MODE") == 0);
  CHECK(setenv("CUBERT_CPU_WORKERS", "3", 1) == 0);
  CHECK_OK_E(create(a, &o, &client, &err), err);
  CHECK_OK_E(cubert_cpu_sim_info(client, &info, &err), err);
  CHECK_EQ_U64(info.deterministic, 0);
  cubert_client_release(client);
  CHECK_EQ_I64(c.live_blocks, 0);
  text = slurp(path);
  CHECK_MSG(strstr(text, "cpu device 40 created: deterministic") != NULL, "log: %s", text);
  CHECK_MSG(strstr(text, "deterministic seed 42") != NULL, "log: %s", text);
  CHECK_MSG(strstr(text, "threaded, 3 kernel workers") != NULL, "log: %s", text);
  CHECK_MSG(strstr(text, "memory exclusive-pages") != NULL, "log: %s", text);
  CHECK_MSG(strstr(text, "cpu device 40 released") != NULL, "log: %s", text);
  CHECK_MSG(strstr(text, "cores") == NULL, "a debug line at info: %s", text);
  free(text);
  (void)remove(path);
  counting_allocator_destroy(&c);
}

/* Options set in code win over the environment; ignore_environment reads
 * nothing (not even an invalid value). */
TEST(hostenv_explicit_options_win) {
  TEST_REQUIRE_FEATURE(CUBERT_FEATURE_SIMULATION | CUBERT_FEATURE_PROFILING);
  counting_allocator_t c;
  cubert_allocator_t a = counting_allocator_initialize(&c);
  cubert_cpu_options_t o;
  cubert_client_t *client = NULL;
  cubert_cpu_sim_info_t info;
  cubert_error_t err;
  char path[128];
  char *text;
  temp_path(path, sizeof path, "env-explicit");
  CHECK(setenv("CUBERT_LOG", "info", 1) == 0);
  CHECK(setenv("CUBERT_LOG_FILE", path, 1) == 0);
  CHECK(setenv("CUBERT_CPU_SEED", "42", 1) == 0);
  CHECK(setenv("CUBERT_CPU_WORKERS", "3", 1) == 0);
  CHECK(setenv("CUBERT_PROFILE_LEVEL", "basic", 1) == 0);
  cubert_cpu_options_initialize(&o);
  o.device.index = 41;
  o.mode = CUBERT_CPU_MODE_DETERMINISTIC;
  o.seed = 7;
  o.profile_level = CUBERT_PROFILE_LEVEL_EXECUTION_ONLY;
  CHECK_OK_E(create(a, &o, &client, &err), err);
  CHECK_OK_E(cubert_cpu_sim_info(client, &info, &err), err);
  CHECK_EQ_U64(info.seed, 7);
  CHECK_EQ_U64(cubert_client_profiling_level(client), CUBERT_PROFILE_LEVEL_EXECUTION_ONLY);
  cubert_client_release(client);
  o.mode = CUBERT_CPU_MODE_THREADED;
  o.workers = 2;
  CHECK_OK_E(create(a, &o, &client, &err), err);
  cubert_client_release(client);
  /* ignore_environment: every variable is left alone, even an invalid one */
  CHECK(setenv("CUBERT_CPU_MODE", "warp-speed", 1) == 0);
  o.workers = 0;
  o.profile_level = CUBERT_PROFILE_LEVEL_OFF;
  o.ignore_environment = 1;
  CHECK_OK_E(create(a, &o, &client, &err), err);
  CHECK_EQ_U64(cubert_client_profiling_level(client), CUBERT_PROFILE_LEVEL_OFF);
  cubert_client_release(client);
  CHECK_EQ_I64(c.live_blocks, 0);
  text = slurp(path);
  CHECK_MSG(strstr(text, "threaded, 2 kernel workers") != NULL, "log: %s", text);
  CHECK_MSG(strstr(text, "3 kernel workers") == NULL, "log: %s", text);
  free(text);
  (void)remove(path);
  counting_allocator_destroy(&c);
}

typedef struct bad_value_t {
  const char *name, *value, *accepted;
} bad_value_t;

/* Each invalid value fails the create (INVALID_ARGUMENT, kind
 * INVALID_ARGUMENT) with the variable, the value and the accepted values in
 * the reason; nothing is left behind; the same create then succeeds. */
TEST(hostenv_invalid_values_fail_the_create) {
  static const bad_value_t bad[] = {
      {"CUBERT_LOG", "loud", "off, error, warn, info, debug or trace"},
      {"CUBERT_PROFILE_LEVEL", "max", "off, execution-only, basic, medium or full"},
      {"CUBERT_PROFILE_SUMMARY", "yes", "0 or 1"},
      {"CUBERT_CPU_WORKERS", "0", "1 to 1024"},
      {"CUBERT_CPU_WORKERS", "1025", "1 to 1024"},
      {"CUBERT_CPU_WORKERS", "2000", "1 to 1024"},
      {"CUBERT_CPU_WORKERS", "2x", "1 to 1024"},
      {"CUBERT_CPU_WORKERS", "-1", "1 to 1024"},
      {"CUBERT_CPU_MODE", "fast", "threaded or deterministic"},
      {"CUBERT_CPU_SEED", "seed", "unsigned 64-bit"},
      {"CUBERT_CPU_SEED", "18446744073709551616", "unsigned 64-bit"},
      {"CUBERT_MEMORY", "huge", "sub-slices or exclusive-pages"},
      {"CUBERT_TRACE_BUFFER", "8", "16 to 16777216"},
      {"CUBERT_CPU_STREAM_HELPERS", "65", "0 (none) to 64"},
      {"CUBERT_CPU_STREAM_HELPERS", "two", "0 (none) to 64"},
  };
  counting_allocator_t c;
  cubert_allocator_t a = counting_allocator_initialize(&c);
  cubert_cpu_options_t o;
  cubert_client_t *client = NULL;
  cubert_error_t err;
  size_t i;
  cubert_cpu_options_initialize(&o);
  o.device.index = 42;
  o.workers = 1;
  for (i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    CHECK(setenv(bad[i].name, bad[i].value, 1) == 0);
    client = NULL;
    CHECK_STATUS(create(a, &o, &client, &err), CUBERT_STATUS_INVALID_ARGUMENT);
    CHECK(client == NULL);
    CHECK_EQ_U64(err.chain[0], CUBERT_ERROR_INVALID_ARGUMENT);
    CHECK_MSG(strstr(err.reason, bad[i].name) != NULL && strstr(err.reason, bad[i].value) &&
              strstr(err.reason, bad[i].accepted) != NULL,
              "%s=%s: %s", bad[i].name, bad[i].value, err.reason);
    CHECK_EQ_I64(c.live_blocks, 0);
    CHECK(unsetenv(bad[i].name) == 0);
  }
  /* an empty value is "not set" */
  CHECK(setenv("CUBERT_CPU_MODE", "", 1) == 0);
  CHECK_OK_E(create(a, &o, &client, &err), err);
  cubert_client_release(client);
  CHECK_EQ_I64(c.live_blocks, 0);
  counting_allocator_destroy(&c);
}

/* CUBERT_LOG=debug: the device's properties and the GC at debug, in the
 * file; cubert_log_level reports it; cubert_log_set_level wins afterwards. */
TEST(hostenv_log_levels_and_file) {
  counting_allocator_t c;
  cubert_allocator_t a = counting_allocator_initialize(&c);
  cubert_cpu_options_t o;
  cubert_client_t *client = NULL;
  cubert_error_t err;
  char path[128];
  char *text;
  const char *p;
  temp_path(path, sizeof path, "log-debug");
  CHECK(setenv("CUBERT_LOG", "debug", 1) == 0);
  CHECK(setenv("CUBERT_LOG_FILE", path, 1) == 0);
  CHECK_EQ_U64(cubert_log_level(), CUBERT_LOG_LEVEL_DEBUG);
  CHECK(strcmp(cubert_log_level_name(CUBERT_LOG_LEVEL_TRACE), "trace") == 0);
  CHECK(strcmp(cubert_log_level_name((cubert_log_level_t)9), "unknown") == 0);
  cubert_cpu_options_initialize(&o);
  o.device.index = 43;
  o.workers = 1;
  CHECK_OK_E(create(a, &o, &client, &err), err);
  cubert_client_release(client);
  text = slurp(path);
  CHECK_MSG(strstr(text, "cubert[info +") != NULL, "log: %s", text);
  CHECK_MSG(strstr(text, "cpu device 43 created") != NULL, "log: %s", text);
  CHECK_MSG(strstr(text, "cubert[debug +") != NULL && strstr(text, "cores") != NULL, "log: %s",
            text);
  CHECK_MSG(strstr(text, "allocated") == NULL, "a trace line at debug: %s", text);
  CHECK_MSG(strstr(text, "cpu device 43 released") != NULL, "log: %s", text);
  free(text);
  /* the API wins over CUBERT_LOG: warn writes no info line */
  CHECK_OK(cubert_log_set_level(CUBERT_LOG_LEVEL_WARN, NULL));
  CHECK_EQ_U64(cubert_log_level(), CUBERT_LOG_LEVEL_WARN);
  CHECK_STATUS(cubert_log_set_level((cubert_log_level_t)6, &err), CUBERT_STATUS_INVALID_ARGUMENT);
  CHECK_EQ_U64(cubert_log_level(), CUBERT_LOG_LEVEL_WARN);
  o.device.index = 44;
  CHECK_OK_E(create(a, &o, &client, &err), err);
  cubert_client_release(client);
  text = slurp(path);
  CHECK_MSG(strstr(text, "device 44") == NULL, "log: %s", text);
  free(text);
  /* trace: every allocation */
  CHECK_OK(cubert_log_set_level(CUBERT_LOG_LEVEL_TRACE, NULL));
  o.device.index = 45;
  CHECK_OK_E(create(a, &o, &client, &err), err);
  {
    cubert_handle_t h;
    static const float bytes[1024];
    float back[1024];
    CHECK_OK_E(cubert_client_empty(client, 4096, &h, &err), err);
    CHECK_OK(cubert_client_handle_release(client, &h, NULL));
    /* an upload: the GC releases the bytes it held once its event completed */
    CHECK_OK_E(cubert_client_create_from_slice(client, bytes, sizeof bytes, &h, &err), err);
    CHECK_OK_E(cubert_client_read_one(client, &h, back, sizeof back, &err), err);
    CHECK_OK(cubert_client_handle_release(client, &h, NULL));
  }
  cubert_client_release(client);
  text = slurp(path);
  p = strstr(text, "cpu device 45: allocated");
  CHECK_MSG(p != NULL, "log: %s", text);
  CHECK_MSG(strstr(p, "cpu device 45: gc released") != NULL, "log: %s", text);
  free(text);
  CHECK_EQ_I64(c.live_blocks, 0);
  (void)remove(path);
  counting_allocator_destroy(&c);
}

/* An invalid CUBERT_LOG logs at warn with a line naming the accepted
 * values; an unset CUBERT_LOG writes nothing (no file is made). */
TEST(hostenv_log_invalid_and_off) {
  char path[128];
  char *text;
  temp_path(path, sizeof path, "log-invalid");
  CHECK(setenv("CUBERT_LOG", "loud", 1) == 0);
  CHECK(setenv("CUBERT_LOG_FILE", path, 1) == 0);
  CHECK_EQ_U64(cubert_log_level(), CUBERT_LOG_LEVEL_WARN);
  text = slurp(path);
  CHECK_MSG(strstr(text, "CUBERT_LOG=\"loud\" is invalid: expected off, error, warn, info, debug "
                         "or trace") != NULL,
            "log: %s", text);
  free(text);
  (void)remove(path);
}

TEST(hostenv_log_off_writes_nothing) {
  counting_allocator_t c;
  cubert_allocator_t a = counting_allocator_initialize(&c);
  cubert_cpu_options_t o;
  cubert_client_t *client = NULL;
  cubert_error_t err;
  char path[128];
  temp_path(path, sizeof path, "log-off");
  CHECK(unsetenv("CUBERT_LOG") == 0);
  CHECK(setenv("CUBERT_LOG_FILE", path, 1) == 0);
  cubert_cpu_options_initialize(&o);
  o.device.index = 46;
  o.workers = 1;
  CHECK_OK_E(create(a, &o, &client, &err), err);
  cubert_client_release(client);
  CHECK_EQ_U64(cubert_log_level(), CUBERT_LOG_LEVEL_OFF);
  CHECK_MSG(access(path, F_OK) != 0, "%s exists", path);
  CHECK_EQ_I64(c.live_blocks, 0);
  counting_allocator_destroy(&c);
}

/* CUBERT_PROFILE_SUMMARY=1: the per-kernel table of executions is written
 * to the log's destination when the device is released (launches are not
 * profiled one by one: the level stays off). */
TEST(hostenv_profile_summary_at_release) {
  TEST_REQUIRE_FEATURE(CUBERT_FEATURE_PROFILING);
  counting_allocator_t c;
  cubert_allocator_t a = counting_allocator_initialize(&c);
  cubert_cpu_options_t o;
  cubert_client_t *client = NULL;
  cubert_error_t err;
  cubert_handle_t h[3];
  cubert_binding_t b[3];
  cubert_launch_arguments_t args;
  cubert_cube_count_t count = cubert_cube_count_new_1d(4);
  float data[4 * CK_BLOCK];
  char path[128];
  char *text;
  int i;
  temp_path(path, sizeof path, "summary");
  CHECK(setenv("CUBERT_PROFILE_SUMMARY", "1", 1) == 0);
  CHECK(setenv("CUBERT_LOG_FILE", path, 1) == 0);
  for (i = 0; i < 4 * CK_BLOCK; i++) data[i] = (float)i;
  cubert_cpu_options_initialize(&o);
  o.device.index = 47;
  o.workers = 1;
  CHECK_OK_E(create(a, &o, &client, &err), err);
  CHECK_EQ_U64(cubert_client_profiling_level(client), CUBERT_PROFILE_LEVEL_OFF);
  for (i = 0; i < 3; i++) {
    CHECK_OK_E(cubert_client_create_from_slice(client, data, sizeof data, &h[i], &err), err);
    b[i] = h[i];
  }
  cubert_launch_arguments_initialize(&args);
  args.buffers = b;
  args.buffer_count = 3;
  for (i = 0; i < 5; i++)
    CHECK_OK_E(cubert_client_launch(client, &ck_add_f32_kernel, &count, &args, &err), err);
  CHECK_OK_E(cubert_client_sync(client, &err), err);
  for (i = 0; i < 3; i++) CHECK_OK(cubert_client_handle_release(client, &h[i], NULL));
  text = slurp(path);
  CHECK_MSG(text[0] == '\0', "written before the release: %s", text);
  free(text);
  cubert_client_release(client);
  CHECK_EQ_I64(c.live_blocks, 0);
  text = slurp(path);
  CHECK_MSG(strstr(text, "cpu device 47: kernel executions (CUBERT_PROFILE_SUMMARY)") != NULL,
            "log: %s", text);
  CHECK_MSG(strstr(text, ck_add_f32_kernel.name) != NULL && strstr(text, "| 5 ") != NULL &&
            strstr(text, "| Total") != NULL,
            "log: %s", text);
  free(text);
  (void)remove(path);
  counting_allocator_destroy(&c);
}

/* An error queued on a stream (a dynamic cube count above the device's
 * limits, found when the launch runs) is logged at warn when it happens;
 * the sync returns it as usual. */
TEST(hostenv_log_stream_error_at_warn) {
  counting_allocator_t c;
  cubert_allocator_t a = counting_allocator_initialize(&c);
  cubert_cpu_options_t o;
  cubert_client_t *client = NULL;
  cubert_error_t err;
  cubert_handle_t h[4];
  cubert_binding_t b[3];
  cubert_launch_arguments_t args;
  cubert_cube_count_t count;
  static const uint32_t huge[3] = {0xFFFFFFFFu, 1, 1};
  float data[CK_BLOCK];
  char path[128];
  char *text;
  int i;
  temp_path(path, sizeof path, "log-stream-error");
  CHECK(setenv("CUBERT_LOG", "warn", 1) == 0);
  CHECK(setenv("CUBERT_LOG_FILE", path, 1) == 0);
  memset(data, 0, sizeof data);
  cubert_cpu_options_initialize(&o);
  o.device.index = 48;
  o.workers = 1;
  CHECK_OK_E(create(a, &o, &client, &err), err);
  for (i = 0; i < 3; i++) {
    CHECK_OK_E(cubert_client_create_from_slice(client, data, sizeof data, &h[i], &err), err);
    b[i] = h[i];
  }
  CHECK_OK_E(cubert_client_create_from_slice(client, huge, sizeof huge, &h[3], &err), err);
  count = cubert_cube_count_new_dynamic(&h[3]);
  cubert_launch_arguments_initialize(&args);
  args.buffers = b;
  args.buffer_count = 3;
  CHECK_OK_E(cubert_client_launch(client, &ck_add_f32_kernel, &count, &args, &err), err);
  CHECK_STATUS(cubert_client_sync(client, &err), CUBERT_STATUS_SERVER_UNHEALTHY);
  for (i = 0; i < 4; i++) CHECK_OK(cubert_client_handle_release(client, &h[i], NULL));
  cubert_client_release(client);
  CHECK_EQ_I64(c.live_blocks, 0);
  text = slurp(path);
  CHECK_MSG(strstr(text, "cubert[warn +") != NULL &&
            strstr(text, "cpu device 48 stream") != NULL &&
            strstr(text, "error queued") != NULL,
            "log: %s", text);
  CHECK_MSG(strstr(text, "created") == NULL, "an info line at warn: %s", text);
  free(text);
  (void)remove(path);
  counting_allocator_destroy(&c);
}

/* A create that fails is logged at error with its record. */
TEST(hostenv_log_failed_create_at_error) {
  counting_allocator_t c;
  cubert_allocator_t a = counting_allocator_initialize(&c);
  cubert_cpu_options_t o;
  cubert_client_t *client = NULL;
  cubert_error_t err;
  char path[128];
  char *text;
  temp_path(path, sizeof path, "log-create-error");
  CHECK(setenv("CUBERT_LOG", "error", 1) == 0);
  CHECK(setenv("CUBERT_LOG_FILE", path, 1) == 0);
  CHECK(setenv("CUBERT_CPU_MODE", "fast", 1) == 0);
  cubert_cpu_options_initialize(&o);
  o.device.index = 49;
  CHECK_STATUS(create(a, &o, &client, &err), CUBERT_STATUS_INVALID_ARGUMENT);
  CHECK(unsetenv("CUBERT_CPU_MODE") == 0);
  o.device.max_streams = 100000; /* above the limit: the options' own error */
  CHECK_STATUS(create(a, &o, &client, &err), CUBERT_STATUS_INVALID_ARGUMENT);
  CHECK_EQ_I64(c.live_blocks, 0);
  text = slurp(path);
  CHECK_MSG(strstr(text, "cubert[error +") != NULL &&
            strstr(text, "cubert_cpu_client_create (device 49) failed") != NULL &&
            strstr(text, "CUBERT_CPU_MODE") != NULL && strstr(text, "max_streams") != NULL,
            "log: %s", text);
  CHECK_MSG(strstr(text, "[warn") == NULL, "a warn line at error: %s", text);
  free(text);
  (void)remove(path);
  counting_allocator_destroy(&c);
}
