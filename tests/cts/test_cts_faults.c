/* SPDX-License-Identifier: MIT */
/*
 * Conformance: faults in the middle of a stream (docs/errors.md, "Errors from
 * a running stream"). The test-only fault hook (core/server/server_faults.h:
 * fail_launch, fail_kernel, fail_copy) makes a launch or a copy fail WHILE IT
 * RUNS; the failure is returned by the next flush / sync / read on its
 * stream and on every stream that waited on it, with the kernel's name and
 * the stream in the record, once; unrelated streams keep working; nothing
 * hangs or leaks. A VALIDATE out-of-bounds report travels the same way.
 *
 * The CPU drivers (threaded, deterministic) and the inline driver honour the
 * hook; on CUDA every test here skips (the CUDA driver's conformance run lists
 * them as unsupported: it does not inject run-time faults).
 */
#include "cts.h"

#include "server/server_faults.h"
#include "cubert/config.h"
#include "cubert/cube.h"
#include "cubert_kernels.h"
#if !CUBERT_CTS_INLINE_ONLY
#include "cubert/cpu.h"
#endif

/* ---- a device of the driver under test, with faults ---- */

/* Set by a test that makes the allocator fail: the race checker, short of
 * memory, misses synchronization and reports races that are not there. */
static int g_race_off;

/* The device under test (cts_setup's options: 8 streams, 2 workers) with
 * `faults` (given in its options, as every driver takes them) and `bounds`.
 * A driver that does not inject run-time faults lists these tests as
 * unsupported (its conformance run, cts.h): they skip with its reason. */
static void fault_setup(cts_env_t *env, const cubert_server_faults_t *faults,
                        cubert_bounds_check_mode_t bounds) {
  cts_options_t o;
  memset(&o, 0, sizeof o);
  o.device_index = 60;
  o.bounds_check = bounds;
  o.race_off = g_race_off;
  o.faults = faults;
  cts_setup_with(env, &o);
}

static void faults_none(cubert_server_faults_t *f) { memset(f, 0, sizeof(*f)); }

/* A clone of env's client pinned to `stream`. */
static cubert_client_t *on_stream(cts_env_t *env, uint64_t stream) {
  cubert_client_t *c = NULL;
  CHECK_OK(cubert_client_clone(env->client, &c, NULL));
  cubert_client_set_stream(c, stream);
  return c;
}

static cubert_launch_arguments_t args_of(const cubert_binding_t *b, uint32_t nb, const uint64_t *s,
                                         uint32_t ns) {
  cubert_launch_arguments_t a;
  cubert_launch_arguments_initialize(&a);
  a.buffers = b;
  a.buffer_count = nb;
  a.scalars = s;
  a.scalar_count = ns;
  return a;
}

#define N 256 /* u32 elements per buffer: 4 cubes of CK_SMALL_BLOCK */

/* buf[i] += delta on `c`'s stream. */
static cubert_status_t add(cubert_client_t *c, const cubert_handle_t *h, uint64_t delta) {
  cubert_launch_arguments_t args = args_of(h, 1, &delta, 1);
  cubert_cube_count_t count = cubert_cube_count_new_1d(N / CK_SMALL_BLOCK);
  return cubert_client_launch(c, &ck_add_scalar_u32_kernel, &count, &args, NULL);
}

/* dst[i] = 2 * src[i] on `c`'s stream (src only read). */
static cubert_status_t twice(cubert_client_t *c, const cubert_handle_t *src,
                             const cubert_handle_t *dst) {
  cubert_binding_t pair[2];
  cubert_launch_arguments_t args;
  cubert_cube_count_t count = cubert_cube_count_new_1d(N / CK_SMALL_BLOCK);
  pair[0] = *src;
  pair[1] = *dst;
  args = args_of(pair, 2, NULL, 0);
  return cubert_client_launch(c, &ck_double_u32_kernel, &count, &args, NULL);
}

static void fill(uint32_t *v, uint32_t base) {
  int i;
  for (i = 0; i < N; i++) v[i] = base + (uint32_t)i;
}

/* Every element of `h` (read on `c`) is base + i (times `scale`). */
static void expect_values(cubert_client_t *c, const cubert_handle_t *h, uint32_t base,
                          uint32_t scale) {
  uint32_t out[N];
  int i;
  CHECK_OK(cubert_client_read_one(c, h, out, sizeof out, NULL));
  for (i = 0; i < N; i++)
    CHECK_MSG(out[i] == scale * (base + (uint32_t)i), "element %d: %lu, want %lu", i,
              (unsigned long)out[i], (unsigned long)(scale * (base + (uint32_t)i)));
}

/* The reason texts are checked where the build keeps them. */
static int texts_kept(void) {
  unsigned want = CUBERT_FEATURE_ERROR_TEXT | CUBERT_FEATURE_ERROR_REASONS;
  return (cubert_config_features() & want) == want;
}

/* `err` is the SERVER_UNHEALTHY aggregate of `count` errors, the first of
 * kind `kind` (inside `outer`), and its text holds `text`. */
static void expect_unhealthy(const cubert_error_t *err, uint64_t count, cubert_error_kind_t outer,
                             cubert_error_kind_t kind, const char *text) {
  CHECK_EQ_U64(err->status, CUBERT_STATUS_SERVER_UNHEALTHY);
  CHECK(cubert_error_has_kind(err, CUBERT_ERROR_SERVER_UNHEALTHY));
  CHECK_EQ_U64(cubert_error_aggregate_count(err), count);
  CHECK(cubert_error_has_kind(err, outer));
  CHECK_MSG(cubert_error_kind(err) == kind, "kind %s, want %s",
            cubert_error_kind_name(cubert_error_kind(err)), cubert_error_kind_name(kind));
  if (texts_kept() && text)
    CHECK_MSG(strstr(err->reason, text) != NULL, "\"%s\" lacks \"%s\"", err->reason, text);
}

/* ---- a kernel that fails while it runs ---- */

/* The launch is accepted; the sync on its stream reports the failure once,
 * naming the kernel and the stream; the failed launch changed nothing; the
 * stream then works as before (docs/errors.md: what later calls return). */
TEST(cts_fault_kernel_sync_reports_name_and_stream_once) {
  cts_env_t env;
  cubert_server_faults_t f;
  cubert_client_t *a;
  cubert_handle_t h;
  cubert_error_t err;
  uint32_t data[N];
  faults_none(&f);
  f.fail_launch = 2; /* the 2nd launch of ck_add_scalar_u32 */
  f.fail_kernel = "ck_add_scalar_u32";
  fault_setup(&env, &f, CUBERT_BOUNDS_CHECK_AUTO);
  a = on_stream(&env, 1);
  fill(data, 0);
  CHECK_OK(cubert_client_create_from_slice(a, data, sizeof data, &h, NULL));
  CHECK_OK(add(a, &h, 1));
  CHECK_OK(add(a, &h, 10)); /* accepted: it fails as it runs */
  CHECK_OK(add(a, &h, 100));
  CHECK_STATUS(cubert_client_sync(a, &err), CUBERT_STATUS_SERVER_UNHEALTHY);
  expect_unhealthy(&err, 1, CUBERT_ERROR_SERVER_LAUNCH, CUBERT_ERROR_LAUNCH_UNKNOWN,
                   "kernel ck_add_scalar_u32 failed on stream 1: injected fault");
  CHECK_OK(cubert_client_sync(a, NULL)); /* reported once */
  CHECK_OK(cubert_client_flush(a, NULL));
  expect_values(a, &h, 101, 1); /* the failed launch did nothing */
  CHECK_OK(add(a, &h, 1000));   /* later work runs: the device is not lost */
  expect_values(a, &h, 1101, 1);
  CHECK_OK(cubert_client_handle_release(a, &h, NULL));
  cubert_client_release(a);
  cts_teardown(&env);
}

/* A read on the failing stream returns the failure (its bytes are still
 * copied: the read itself ran); the next read is clean. */
TEST(cts_fault_kernel_read_reports_it) {
  cts_env_t env;
  cubert_server_faults_t f;
  cubert_client_t *a;
  cubert_handle_t h;
  cubert_error_t err;
  uint32_t data[N], out[N];
  faults_none(&f);
  f.fail_launch = 1; /* the first launch, of any kernel */
  fault_setup(&env, &f, CUBERT_BOUNDS_CHECK_AUTO);
  a = on_stream(&env, 2);
  fill(data, 5);
  CHECK_OK(cubert_client_create_from_slice(a, data, sizeof data, &h, NULL));
  CHECK_OK(add(a, &h, 1));
  CHECK_STATUS(cubert_client_read_one(a, &h, out, sizeof out, &err),
               CUBERT_STATUS_SERVER_UNHEALTHY);
  expect_unhealthy(&err, 1, CUBERT_ERROR_SERVER_LAUNCH, CUBERT_ERROR_LAUNCH_UNKNOWN,
                   "kernel ck_add_scalar_u32 failed on stream 2");
  CHECK_EQ_U64(out[0], 5);
  CHECK_EQ_U64(out[N - 1], 5 + N - 1);
  expect_values(a, &h, 5, 1);
  CHECK_OK(cubert_client_handle_release(a, &h, NULL));
  cubert_client_release(a);
  cts_teardown(&env);
}

/* A flush does not wait: it returns the failure once the failed launch ran
 * (the inline driver: at once; deterministic: after the steps ran). */
TEST(cts_fault_kernel_flush_reports_it_once_it_ran) {
  cts_env_t env;
  cubert_server_faults_t f;
  cubert_client_t *a;
  cubert_handle_t h;
  cubert_error_t err;
  cubert_status_t status = CUBERT_STATUS_OK;
  uint32_t data[N];
  int i;
  faults_none(&f);
  f.fail_launch = 1;
  fault_setup(&env, &f, CUBERT_BOUNDS_CHECK_AUTO);
  a = on_stream(&env, 3);
  fill(data, 0);
  CHECK_OK(cubert_client_create_from_slice(a, data, sizeof data, &h, NULL));
  CHECK_OK(add(a, &h, 1));
#if !CUBERT_CTS_INLINE_ONLY
  if (env.deterministic) CHECK_OK(cubert_cpu_sim_drain(env.client, NULL)); /* virtual time */
#endif
  /* bounded: the threaded worker runs the launch within microseconds */
  for (i = 0; i < 20000 && status == CUBERT_STATUS_OK; i++) {
    status = cubert_client_flush(a, &err);
    if (status == CUBERT_STATUS_OK) cts_sleep_ms(1);
  }
  CHECK_STATUS(status, CUBERT_STATUS_SERVER_UNHEALTHY);
  expect_unhealthy(&err, 1, CUBERT_ERROR_SERVER_LAUNCH, CUBERT_ERROR_LAUNCH_UNKNOWN,
                   "kernel ck_add_scalar_u32 failed on stream 3");
  CHECK_OK(cubert_client_sync(a, NULL));
  CHECK_OK(cubert_client_handle_release(a, &h, NULL));
  cubert_client_release(a);
  cts_teardown(&env);
}

/* ---- across streams ---- */

/* Stream 2 uses what stream 1 wrote after its kernel failed: it waited on
 * stream 1, so it inherits the failure (the origin's kernel and stream in
 * the record), once; stream 1 reports it too; stream 4, which shares
 * nothing, keeps working. */
TEST(cts_fault_waiting_stream_inherits_it_unrelated_stream_works) {
  cts_env_t env;
  cubert_server_faults_t f;
  cubert_client_t *a, *b, *u;
  cubert_handle_t hs, hd, hu;
  cubert_error_t err;
  uint32_t data[N];
  faults_none(&f);
  f.fail_launch = 1;
  f.fail_kernel = "ck_add_scalar_u32";
  fault_setup(&env, &f, CUBERT_BOUNDS_CHECK_AUTO);
  a = on_stream(&env, 1);
  b = on_stream(&env, 2);
  u = on_stream(&env, 4);
  fill(data, 0);
  CHECK_OK(cubert_client_create_from_slice(a, data, sizeof data, &hs, NULL));
  CHECK_OK(cubert_client_empty(b, sizeof data, &hd, NULL));
  CHECK_OK(cubert_client_create_from_slice(u, data, sizeof data, &hu, NULL));
  CHECK_OK(add(a, &hs, 7)); /* fails as it runs */
  CHECK_OK(twice(b, &hs, &hd)); /* stream 2 waits on stream 1 */
  CHECK_OK(add(u, &hu, 3));     /* stream 4: nothing shared */
  CHECK_STATUS(cubert_client_sync(b, &err), CUBERT_STATUS_SERVER_UNHEALTHY);
  expect_unhealthy(&err, 1, CUBERT_ERROR_SERVER_LAUNCH, CUBERT_ERROR_LAUNCH_UNKNOWN,
                   "kernel ck_add_scalar_u32 failed on stream 1");
  CHECK_OK(cubert_client_sync(u, NULL));
  expect_values(u, &hu, 3, 1);
  CHECK_STATUS(cubert_client_sync(a, &err), CUBERT_STATUS_SERVER_UNHEALTHY);
  expect_unhealthy(&err, 1, CUBERT_ERROR_SERVER_LAUNCH, CUBERT_ERROR_LAUNCH_UNKNOWN,
                   "kernel ck_add_scalar_u32 failed on stream 1");
  CHECK_OK(cubert_client_sync(b, NULL)); /* once */
  expect_values(b, &hd, 0, 2);           /* the input as it was: the launch did nothing */
  /* waiting on stream 1 again carries nothing new */
  CHECK_OK(twice(b, &hs, &hd));
  CHECK_OK(cubert_client_sync(b, NULL));
  CHECK_OK(cubert_client_handle_release(a, &hs, NULL));
  CHECK_OK(cubert_client_handle_release(b, &hd, NULL));
  CHECK_OK(cubert_client_handle_release(u, &hu, NULL));
  cubert_client_release(a);
  cubert_client_release(b);
  cubert_client_release(u);
  cts_teardown(&env);
}

/* A read on another stream waits for the producer: it returns the failure. */
TEST(cts_fault_cross_stream_read_inherits_it) {
  cts_env_t env;
  cubert_server_faults_t f;
  cubert_client_t *a, *b;
  cubert_handle_t h;
  cubert_error_t err;
  uint32_t data[N], out[N];
  faults_none(&f);
  f.fail_launch = 1;
  fault_setup(&env, &f, CUBERT_BOUNDS_CHECK_AUTO);
  a = on_stream(&env, 5);
  b = on_stream(&env, 6);
  fill(data, 9);
  CHECK_OK(cubert_client_create_from_slice(a, data, sizeof data, &h, NULL));
  CHECK_OK(add(a, &h, 1));
  CHECK_STATUS(cubert_client_read_one(b, &h, out, sizeof out, &err),
               CUBERT_STATUS_SERVER_UNHEALTHY);
  expect_unhealthy(&err, 1, CUBERT_ERROR_SERVER_LAUNCH, CUBERT_ERROR_LAUNCH_UNKNOWN,
                   "kernel ck_add_scalar_u32 failed on stream 5");
  CHECK_EQ_U64(out[3], 12);
  expect_values(b, &h, 9, 1); /* once */
  CHECK_STATUS(cubert_client_sync(a, &err), CUBERT_STATUS_SERVER_UNHEALTHY);
  CHECK_OK(cubert_client_handle_release(a, &h, NULL));
  cubert_client_release(a);
  cubert_client_release(b);
  cts_teardown(&env);
}

/* Waits chain: stream 3 waits on stream 2, which had waited on stream 1
 * after its failure: stream 3 inherits it too. A stream that waits on both
 * takes it once; the stream where it happened does not take it back. */
TEST(cts_fault_travels_along_waits_once_and_never_back) {
  cts_env_t env;
  cubert_server_faults_t f;
  cubert_client_t *a, *b, *c, *d;
  cubert_handle_t h1, h2, h3, h4;
  cubert_binding_t both[3];
  cubert_launch_arguments_t args;
  cubert_cube_count_t count = cubert_cube_count_new_1d(N / CK_SMALL_BLOCK);
  cubert_error_t err;
  uint32_t data[N];
  faults_none(&f);
  f.fail_launch = 1;
  f.fail_kernel = "ck_add_scalar_u32";
  fault_setup(&env, &f, CUBERT_BOUNDS_CHECK_AUTO);
  a = on_stream(&env, 1);
  b = on_stream(&env, 2);
  c = on_stream(&env, 3);
  d = on_stream(&env, 4);
  fill(data, 1);
  CHECK_OK(cubert_client_create_from_slice(a, data, sizeof data, &h1, NULL));
  CHECK_OK(cubert_client_empty(b, sizeof data, &h2, NULL));
  CHECK_OK(cubert_client_empty(c, sizeof data, &h3, NULL));
  CHECK_OK(cubert_client_empty(d, sizeof data, &h4, NULL));
  CHECK_OK(add(a, &h1, 1));       /* fails on stream 1 */
  CHECK_OK(twice(b, &h1, &h2));   /* 2 waits on 1 */
  CHECK_OK(twice(c, &h2, &h3));   /* 3 waits on 2 */
  both[0] = h1;                   /* 4 waits on 1 and on 2: h4 = h1 + h2 */
  both[1] = h2;
  both[2] = h4;
  args = args_of(both, 3, NULL, 0);
  CHECK_OK(cubert_client_launch(d, &ck_sum_u32_kernel, &count, &args, NULL));
  CHECK_STATUS(cubert_client_sync(c, &err), CUBERT_STATUS_SERVER_UNHEALTHY);
  expect_unhealthy(&err, 1, CUBERT_ERROR_SERVER_LAUNCH, CUBERT_ERROR_LAUNCH_UNKNOWN,
                   "kernel ck_add_scalar_u32 failed on stream 1");
  CHECK_STATUS(cubert_client_sync(d, &err), CUBERT_STATUS_SERVER_UNHEALTHY);
  expect_unhealthy(&err, 1, CUBERT_ERROR_SERVER_LAUNCH, CUBERT_ERROR_LAUNCH_UNKNOWN,
                   "kernel ck_add_scalar_u32 failed on stream 1");
  CHECK_STATUS(cubert_client_sync(b, &err), CUBERT_STATUS_SERVER_UNHEALTHY);
  CHECK_EQ_U64(cubert_error_aggregate_count(&err), 1);
  CHECK_STATUS(cubert_client_sync(a, &err), CUBERT_STATUS_SERVER_UNHEALTHY);
  CHECK_EQ_U64(cubert_error_aggregate_count(&err), 1);
  /* stream 1 now waits on stream 2 (which logged the inherited failure):
   * it does not take its own failure back */
  CHECK_OK(twice(a, &h2, &h1));
  CHECK_OK(cubert_client_sync(a, NULL));
  expect_values(a, &h1, 1, 4); /* 2 * 2 * (1 + i): the add never ran */
  CHECK_OK(cubert_client_handle_release(a, &h1, NULL));
  CHECK_OK(cubert_client_handle_release(b, &h2, NULL));
  CHECK_OK(cubert_client_handle_release(c, &h3, NULL));
  CHECK_OK(cubert_client_handle_release(d, &h4, NULL));
  cubert_client_release(a);
  cubert_client_release(b);
  cubert_client_release(c);
  cubert_client_release(d);
  cts_teardown(&env);
}

/* fail_kernel with fail_launch 0: every launch of that kernel fails, the
 * others run; each failure is counted. */
TEST(cts_fault_every_launch_of_a_kernel) {
  cts_env_t env;
  cubert_server_faults_t f;
  cubert_client_t *a;
  cubert_handle_t hs, hd;
  cubert_error_t err;
  uint32_t data[N];
  int i;
  faults_none(&f);
  f.fail_kernel = "ck_double_u32";
  fault_setup(&env, &f, CUBERT_BOUNDS_CHECK_AUTO);
  a = on_stream(&env, 0);
  fill(data, 2);
  CHECK_OK(cubert_client_create_from_slice(a, data, sizeof data, &hs, NULL));
  CHECK_OK(cubert_client_create_from_slice(a, data, sizeof data, &hd, NULL));
  for (i = 0; i < 3; i++) {
    CHECK_OK(twice(a, &hs, &hd));
    CHECK_OK(add(a, &hs, 1));
  }
  CHECK_STATUS(cubert_client_sync(a, &err), CUBERT_STATUS_SERVER_UNHEALTHY);
  expect_unhealthy(&err, 3, CUBERT_ERROR_SERVER_LAUNCH, CUBERT_ERROR_LAUNCH_UNKNOWN,
                   "kernel ck_double_u32 failed on stream 0");
  expect_values(a, &hs, 5, 1); /* every add ran */
  expect_values(a, &hd, 2, 1); /* no double did */
  CHECK_OK(cubert_client_handle_release(a, &hs, NULL));
  CHECK_OK(cubert_client_handle_release(a, &hd, NULL));
  cubert_client_release(a);
  cts_teardown(&env);
}

/* ---- a copy that fails while it runs ---- */

/* The 2nd copy is the read's (the upload was the 1st): the read returns
 * the failure and its destination is untouched; the next read is clean. */
TEST(cts_fault_copy_read_reports_it_destination_untouched) {
  cts_env_t env;
  cubert_server_faults_t f;
  cubert_client_t *a;
  cubert_handle_t h;
  cubert_error_t err;
  uint32_t data[N], out[N];
  int i;
  faults_none(&f);
  f.fail_copy = 2;
  fault_setup(&env, &f, CUBERT_BOUNDS_CHECK_AUTO);
  a = on_stream(&env, 1);
  fill(data, 40);
  CHECK_OK(cubert_client_create_from_slice(a, data, sizeof data, &h, NULL)); /* copy 1 */
  memset(out, 0xAB, sizeof out);
  CHECK_STATUS(cubert_client_read_one(a, &h, out, sizeof out, &err), /* copy 2 */
               CUBERT_STATUS_SERVER_UNHEALTHY);
  expect_unhealthy(&err, 1, CUBERT_ERROR_SERVER_IO, CUBERT_ERROR_IO_UNKNOWN,
                   "copy failed on stream 1: injected fault");
  for (i = 0; i < N; i++) CHECK_EQ_U64(out[i], 0xABABABABu);
  expect_values(a, &h, 40, 1);
  CHECK_OK(cubert_client_handle_release(a, &h, NULL));
  cubert_client_release(a);
  cts_teardown(&env);
}

/* A failed upload on stream 1: stream 2, reading that buffer, inherits it. */
TEST(cts_fault_copy_upload_inherited_by_a_reader) {
  cts_env_t env;
  cubert_server_faults_t f;
  cubert_client_t *a, *b;
  cubert_handle_t h;
  cubert_error_t err;
  uint32_t data[N], out[N];
  faults_none(&f);
  f.fail_copy = 1;
  fault_setup(&env, &f, CUBERT_BOUNDS_CHECK_AUTO);
  a = on_stream(&env, 1);
  b = on_stream(&env, 2);
  fill(data, 1);
  CHECK_OK(cubert_client_create_from_slice(a, data, sizeof data, &h, NULL)); /* fails */
  CHECK_STATUS(cubert_client_read_one(b, &h, out, sizeof out, &err),
               CUBERT_STATUS_SERVER_UNHEALTHY);
  expect_unhealthy(&err, 1, CUBERT_ERROR_SERVER_IO, CUBERT_ERROR_IO_UNKNOWN,
                   "copy failed on stream 1");
  CHECK_STATUS(cubert_client_sync(a, &err), CUBERT_STATUS_SERVER_UNHEALTHY);
  CHECK_OK(cubert_client_write(a, &h, data, sizeof data, NULL)); /* copy 3: works */
  expect_values(b, &h, 1, 1);
  CHECK_OK(cubert_client_handle_release(a, &h, NULL));
  cubert_client_release(a);
  cubert_client_release(b);
  cts_teardown(&env);
}

/* ---- VALIDATE out-of-bounds reports travel the same way ---- */

TEST(cts_fault_validate_report_reaches_waiters) {
  cts_env_t env;
  cubert_server_faults_t f;
  cubert_client_t *a, *b;
  cubert_handle_t h, hd;
  cubert_launch_arguments_t args;
  cubert_cube_count_t one = cubert_cube_count_new_single();
  cubert_error_t err, first;
  uint32_t data[N];
  faults_none(&f);
  fault_setup(&env, &f, CUBERT_BOUNDS_CHECK_VALIDATE);
  a = on_stream(&env, 1);
  b = on_stream(&env, 2);
  fill(data, 0);
  CHECK_OK(cubert_client_create_from_slice(a, data, sizeof data, &h, NULL));
  CHECK_OK(cubert_client_empty(b, sizeof data, &hd, NULL));
  args = args_of(&h, 1, NULL, 0);
  /* launch_unchecked runs Validate: the store past the end is dropped and reported */
  CHECK_OK(cubert_client_launch_unchecked(a, &ck_oob_write_u32_kernel, &one, &args, NULL));
  CHECK_OK(twice(b, &h, &hd));
  CHECK_STATUS(cubert_client_sync(b, &err), CUBERT_STATUS_SERVER_UNHEALTHY);
  expect_unhealthy(&err, 1, CUBERT_ERROR_SERVER_VALIDATION, CUBERT_ERROR_SERVER_VALIDATION,
                   "kernel ck_oob_write_u32 failed on stream 1: out-of-bounds write");
  CHECK_OK(cubert_error_unhealthy_first(&err, &first));
  CHECK_EQ_U64(first.field[0], 0); /* buffer slot */
  CHECK_EQ_U64(first.field[1], N); /* the index written */
  CHECK_EQ_U64(first.field[2], N); /* the buffer's length */
  /* (an aggregate drops the first error's field[3], is_write: the text says "write") */
  CHECK_STATUS(cubert_client_sync(a, &err), CUBERT_STATUS_SERVER_UNHEALTHY);
  expect_unhealthy(&err, 1, CUBERT_ERROR_SERVER_VALIDATION, CUBERT_ERROR_SERVER_VALIDATION,
                   "kernel ck_oob_write_u32 failed on stream 1");
  expect_values(b, &hd, 0, 2);
  CHECK_OK(cubert_client_handle_release(a, &h, NULL));
  CHECK_OK(cubert_client_handle_release(b, &hd, NULL));
  cubert_client_release(a);
  cubert_client_release(b);
  cts_teardown(&env);
}

/* ---- teardown with failures never drained ---- */

/* Failures left queued (on the failing stream and on a waiter), then the
 * device released: no hang, no leak (cts_teardown counts the blocks). */
TEST(cts_fault_left_undrained_at_teardown_leaks_nothing) {
  cts_env_t env;
  cubert_server_faults_t f;
  cubert_client_t *a, *b;
  cubert_handle_t hs, hd;
  uint32_t data[N];
  int i;
  faults_none(&f);
  f.fail_kernel = "ck_add_scalar_u32"; /* every one */
  f.fail_copy = 3;
  fault_setup(&env, &f, CUBERT_BOUNDS_CHECK_AUTO);
  a = on_stream(&env, 1);
  b = on_stream(&env, 2);
  fill(data, 0);
  CHECK_OK(cubert_client_create_from_slice(a, data, sizeof data, &hs, NULL));
  CHECK_OK(cubert_client_empty(b, sizeof data, &hd, NULL));
  for (i = 0; i < 40; i++) CHECK_OK(add(a, &hs, 1)); /* more than a stream logs */
  CHECK_OK(twice(b, &hs, &hd)); /* inherits what stream 1 still logs */
  CHECK_OK(cubert_client_write(b, &hd, data, sizeof data, NULL)); /* copy 3: fails */
  CHECK_OK(cubert_client_handle_release(a, &hs, NULL));
  CHECK_OK(cubert_client_handle_release(b, &hd, NULL));
  cubert_client_release(a);
  cubert_client_release(b);
  cts_teardown(&env);
}

/* The inline driver gives an event of its own to a stream that failed (the
 * point its waiters inherit up to): when the allocator refuses it (or
 * anything else the read needs), the read fails with a documented code;
 * once memory is back the same read works and carries the failure over. */
TEST(cts_fault_inline_event_without_memory) {
  cts_env_t env;
  cubert_server_faults_t f;
  cubert_client_t *a, *b;
  cubert_handle_t h, hb;
  cubert_error_t err;
  cubert_status_t status = CUBERT_STATUS_OK;
  uint32_t data[N], out[N];
  uint64_t n, failures;
  if (!cts_driver_is("inline"))
    TEST_SKIP("tests the inline driver's own events (the other drivers allocate none per event)");
  faults_none(&f);
  f.fail_launch = 1;
  g_race_off = 1;
  fault_setup(&env, &f, CUBERT_BOUNDS_CHECK_AUTO);
  g_race_off = 0;
  a = on_stream(&env, 1);
  b = on_stream(&env, 2);
  fill(data, 3);
  CHECK_OK(cubert_client_create_from_slice(a, data, sizeof data, &h, NULL));
  CHECK_OK(cubert_client_create_from_slice(b, data, sizeof data, &hb, NULL)); /* stream 2 exists */
  CHECK_OK(cubert_client_read_one(b, &hb, out, sizeof out, NULL));
  CHECK_OK(add(a, &h, 1)); /* fails: stream 1's events are objects from now on */
  /* the read's 1st, 2nd, ... allocation fails (the event among them), until
   * a read gets through */
  for (n = 1; n < 200; n++) {
    counting_allocator_fail_at(&env.counting, n, 0);
    status = cubert_client_read_one(b, &h, out, sizeof out, &err);
    failures = env.counting.failures;
    counting_allocator_fail_at(&env.counting, 0, 0);
    if (failures == 0) break;
    if (status != CUBERT_STATUS_OK && status != CUBERT_STATUS_SERVER_UNHEALTHY)
      CHECK_MSG(status == CUBERT_STATUS_RESOURCE_EXHAUSTED || status == CUBERT_STATUS_OUT_OF_MEMORY,
                "read failing allocation %llu: %s: %s", (unsigned long long)n,
                test_status_name(status), err.reason);
    else
      break;
  }
  CHECK(n > 1); /* the first attempt needed memory it did not get */
  if (status == CUBERT_STATUS_OK) /* reported by an attempt that failed later on */
    status = cubert_client_sync(b, &err);
  CHECK_STATUS(status, CUBERT_STATUS_SERVER_UNHEALTHY);
  expect_unhealthy(&err, 1, CUBERT_ERROR_SERVER_LAUNCH, CUBERT_ERROR_LAUNCH_UNKNOWN,
                   "kernel ck_add_scalar_u32 failed on stream 1");
  CHECK_EQ_U64(out[0], 3);
  CHECK_STATUS(cubert_client_sync(a, &err), CUBERT_STATUS_SERVER_UNHEALTHY);
  CHECK_OK(cubert_client_handle_release(a, &h, NULL));
  CHECK_OK(cubert_client_handle_release(b, &hb, NULL));
  cubert_client_release(a);
  cubert_client_release(b);
  cts_teardown(&env);
}

/* A stream keeps its last failures for its waiters (16 on the CPU drivers,
 * 4 on the inline driver: docs/errors.md): a waiter after 20 failures
 * inherits that many, the failing stream reports all 20. */
TEST(cts_fault_waiter_inherits_the_last_logged_failures) {
  cts_env_t env;
  cubert_server_faults_t f;
  cubert_client_t *a, *b;
  cubert_handle_t hs, hd;
  cubert_error_t err;
  uint32_t data[N];
  int i;
  faults_none(&f);
  f.fail_kernel = "ck_add_scalar_u32"; /* every one */
  fault_setup(&env, &f, CUBERT_BOUNDS_CHECK_AUTO);
  a = on_stream(&env, 1);
  b = on_stream(&env, 2);
  fill(data, 0);
  CHECK_OK(cubert_client_create_from_slice(a, data, sizeof data, &hs, NULL));
  CHECK_OK(cubert_client_empty(b, sizeof data, &hd, NULL));
  for (i = 0; i < 20; i++) CHECK_OK(add(a, &hs, 1));
  CHECK_OK(twice(b, &hs, &hd));
  CHECK_STATUS(cubert_client_sync(b, &err), CUBERT_STATUS_SERVER_UNHEALTHY);
  expect_unhealthy(&err, (cts_driver()->flags & CTS_DRIVER_SYNCHRONOUS) ? 4u : 16u, CUBERT_ERROR_SERVER_LAUNCH,
                   CUBERT_ERROR_LAUNCH_UNKNOWN, "kernel ck_add_scalar_u32 failed on stream 1");
  CHECK_STATUS(cubert_client_sync(a, &err), CUBERT_STATUS_SERVER_UNHEALTHY);
  CHECK_EQ_U64(cubert_error_aggregate_count(&err), 20);
  expect_values(b, &hd, 0, 2);
  CHECK_OK(cubert_client_handle_release(a, &hs, NULL));
  CHECK_OK(cubert_client_handle_release(b, &hd, NULL));
  cubert_client_release(a);
  cubert_client_release(b);
  cts_teardown(&env);
}
