/* SPDX-License-Identifier: MIT */
/* Profiling (docs/cubecl-mapping.md, "Profiling"): the timestamp profiler
 * and the profiling levels. The text helpers and the per-kernel summary
 * table: test_profile_summary.c. */
#include "test.h"
#include "counting_allocator.h"
#include "cubert/config.h"
#include "cubert/profile.h"
#include "profile/profiler.h"
#include "cubert/driver/error.h"

#if CUBERT_CONFIG_PROFILING /* the profiler's own functions: not built without it */

/* ---- a fake clock ------------------------------------------------------------ */

typedef struct fake_clock_t {
  uint64_t now;   /* value the next call returns */
  uint64_t step;  /* added after each call */
  uint64_t calls; /* number of calls */
} fake_clock_t;

static uint64_t fake_now(void *self) {
  fake_clock_t *c = (fake_clock_t *)self;
  uint64_t t = c->now;
  c->now += c->step;
  c->calls++;
  return t;
}

static cubert_profile_clock_t fake_clock(fake_clock_t *c, uint64_t start, uint64_t step) {
  cubert_profile_clock_t clock;
  c->now = start;
  c->step = step;
  c->calls = 0;
  clock.self = c;
  clock.now_ns = fake_now;
  return clock;
}

static cubert_profiler_t *profiler_new(cubert_allocator_t a, cubert_profile_clock_t clock,
                                       uint32_t capacity) {
  cubert_profiler_t *p = NULL;
  CHECK_OK(cubert__profiler_create(a, clock, capacity, &p, NULL));
  CHECK(p != NULL);
  return p;
}

static cubert_profiling_token_t start_at(cubert_profiler_t *p, fake_clock_t *clock, uint64_t t) {
  cubert_profiling_token_t token;
  clock->now = t;
  CHECK_OK(cubert__profiler_start(p, &token, NULL));
  return token;
}

static cubert_profile_duration_t stop_at(cubert_profiler_t *p, fake_clock_t *clock,
                                         cubert_profiling_token_t token, uint64_t t) {
  cubert_profile_duration_t d;
  clock->now = t;
  CHECK_OK(cubert__profiler_stop(p, token, &d, NULL));
  return d;
}

static void check_not_registered(cubert_profiler_t *p, cubert_profiling_token_t token) {
  cubert_profile_duration_t d = {777, 888};
  cubert_error_t e;
  char text[128];
  uint32_t active = cubert__profiler_active_count(p);
  CHECK_STATUS(cubert__profiler_stop(p, token, &d, &e), CUBERT_STATUS_PROFILE_FAILED);
  CHECK_EQ_I64(cubert_error_kind(&e), CUBERT_ERROR_PROFILE_NOT_REGISTERED);
  CHECK_EQ_U64(e.depth, 1);
  cubert_error_format(&e, text, sizeof text);
  CHECK_EQ_STR(text, "No profiling registered"); /* CubeCL's Display */
  CHECK_EQ_U64(d.start_ns, 777);                 /* untouched */
  CHECK_EQ_U64(d.end_ns, 888);
  CHECK_EQ_U64(cubert__profiler_active_count(p), active);
}

/* ---- timestamp profiler: creation ---------------------------------------------- */

TEST(profile_profiler_create_invalid_arguments) {
  TEST_REQUIRE_FEATURE(CUBERT_FEATURE_PROFILING);
  counting_allocator_t c;
  cubert_allocator_t a = counting_allocator_initialize(&c);
  fake_clock_t fc;
  cubert_profile_clock_t clock = fake_clock(&fc, 0, 1);
  cubert_profile_clock_t no_clock = clock;
  cubert_allocator_t no_alloc = a;
  cubert_profiler_t *p = (cubert_profiler_t *)&fc; /* sentinel: must stay untouched */
  cubert_error_t e;
  no_clock.now_ns = NULL;
  no_alloc.fn = NULL;
  CHECK_STATUS(cubert__profiler_create(a, clock, 4, NULL, &e), CUBERT_STATUS_INVALID_ARGUMENT);
  CHECK_EQ_I64(cubert_error_kind(&e), CUBERT_ERROR_INVALID_ARGUMENT);
  CHECK_STATUS(cubert__profiler_create(no_alloc, clock, 4, &p, &e), CUBERT_STATUS_INVALID_ARGUMENT);
  CHECK_STATUS(cubert__profiler_create(a, no_clock, 4, &p, &e), CUBERT_STATUS_INVALID_ARGUMENT);
  CHECK_STATUS(cubert__profiler_create(a, clock, 0, &p, &e), CUBERT_STATUS_INVALID_ARGUMENT);
  CHECK_STATUS(cubert__profiler_create(a, clock, CUBERT_PROFILER_MAX_CAPACITY + 1, &p, NULL),
               CUBERT_STATUS_INVALID_ARGUMENT);
  CHECK(p == (cubert_profiler_t *)&fc);
  CHECK_EQ_I64(c.live_blocks, 0);
  CHECK_EQ_U64(fc.calls, 0);
  counting_allocator_destroy(&c);
}

TEST(profile_profiler_create_largest_capacity) {
  TEST_REQUIRE_FEATURE(CUBERT_FEATURE_PROFILING);
  counting_allocator_t c;
  cubert_allocator_t a;
  fake_clock_t fc;
  cubert_profile_clock_t clock = fake_clock(&fc, 0, 1);
  cubert_profiler_t *p = NULL;
  TEST_SKIP_IF_EMBEDDED("65536 profiler slots (an error record each) outgrow the 16 MiB harness heap");
  a = counting_allocator_initialize(&c);
  CHECK_OK(cubert__profiler_create(a, clock, CUBERT_PROFILER_MAX_CAPACITY, &p, NULL));
  CHECK_EQ_U64(cubert__profiler_capacity(p), CUBERT_PROFILER_MAX_CAPACITY);
  cubert__profiler_destroy(p);
  CHECK_EQ_I64(c.live_blocks, 0);
  CHECK_EQ_U64(c.bad_frees, 0);
  counting_allocator_destroy(&c);
}

TEST(profile_profiler_create_allocation_failure_loop) {
  TEST_REQUIRE_FEATURE(CUBERT_FEATURE_PROFILING);
  uint64_t k;
  int persist;
  for (persist = 0; persist <= 1; persist++) {
    for (k = 1;; k++) {
      counting_allocator_t c;
      cubert_allocator_t a = counting_allocator_initialize(&c);
      fake_clock_t fc;
      cubert_profiler_t *p = NULL;
      cubert_error_t e;
      cubert_status_t st;
      counting_allocator_fail_at(&c, k, persist);
      st = cubert__profiler_create(a, fake_clock(&fc, 5, 1), 8, &p, &e);
      if (st == CUBERT_STATUS_OK) {
        cubert_profiling_token_t t;
        cubert_profile_duration_t d;
        CHECK(k > 1); /* the first allocation was made to fail */
        CHECK_OK(cubert__profiler_start(p, &t, NULL));
        CHECK_OK(cubert__profiler_stop(p, t, &d, NULL));
        cubert__profiler_destroy(p);
        CHECK_EQ_I64(c.live_blocks, 0);
        CHECK_EQ_U64(c.bad_frees, 0);
        counting_allocator_destroy(&c);
        break;
      }
      CHECK_EQ_I64(st, CUBERT_STATUS_RESOURCE_EXHAUSTED);
      CHECK_EQ_I64(cubert_error_kind(&e), CUBERT_ERROR_HOST_OUT_OF_MEMORY);
      CHECK(p == NULL);
      CHECK_EQ_I64(c.live_blocks, 0);
      CHECK_EQ_U64(c.bad_frees, 0);
      counting_allocator_destroy(&c);
      CHECK(k < 16);
    }
  }
}

TEST(profile_profiler_null_arguments) {
  TEST_REQUIRE_FEATURE(CUBERT_FEATURE_PROFILING);
  counting_allocator_t c;
  cubert_allocator_t a = counting_allocator_initialize(&c);
  fake_clock_t fc;
  cubert_profiler_t *p = profiler_new(a, fake_clock(&fc, 0, 1), 4);
  cubert_profiling_token_t t = {0};
  cubert_profile_duration_t d;
  CHECK_STATUS(cubert__profiler_start(NULL, &t, NULL), CUBERT_STATUS_INVALID_ARGUMENT);
  CHECK_STATUS(cubert__profiler_start(p, NULL, NULL), CUBERT_STATUS_INVALID_ARGUMENT);
  CHECK_EQ_U64(cubert__profiler_active_count(p), 0);
  CHECK_OK(cubert__profiler_start(p, &t, NULL));
  CHECK_STATUS(cubert__profiler_stop(NULL, t, &d, NULL), CUBERT_STATUS_INVALID_ARGUMENT);
  CHECK_STATUS(cubert__profiler_stop(p, t, NULL, NULL), CUBERT_STATUS_INVALID_ARGUMENT);
  CHECK_EQ_U64(cubert__profiler_active_count(p), 1); /* a failed stop keeps the token */
  CHECK_OK(cubert__profiler_stop(p, t, &d, NULL));
  CHECK_EQ_U64(cubert__profiler_active_count(NULL), 0);
  CHECK_EQ_U64(cubert__profiler_capacity(NULL), 0);
  cubert__profiler_destroy(NULL);
  cubert__profiler_destroy(p);
  CHECK_EQ_I64(c.live_blocks, 0);
  counting_allocator_destroy(&c);
}

/* ---- timestamp profiler: tokens --------------------------------------------------- */

TEST(profile_profiler_single_token) {
  TEST_REQUIRE_FEATURE(CUBERT_FEATURE_PROFILING);
  counting_allocator_t c;
  cubert_allocator_t a = counting_allocator_initialize(&c);
  fake_clock_t fc;
  cubert_profiler_t *p = profiler_new(a, fake_clock(&fc, 0, 0), 4);
  cubert_profiling_token_t t = start_at(p, &fc, 100);
  cubert_profile_duration_t d;
  CHECK_EQ_U64(t.id, 0);
  CHECK_EQ_U64(cubert__profiler_active_count(p), 1);
  d = stop_at(p, &fc, t, 250);
  CHECK_EQ_U64(d.start_ns, 100);
  CHECK_EQ_U64(d.end_ns, 250);
  CHECK_EQ_U64(fc.calls, 2); /* one clock read per start and per stop */
  CHECK_EQ_U64(cubert__profiler_active_count(p), 0);
  /* ids come from a counter */
  t = start_at(p, &fc, 300);
  CHECK_EQ_U64(t.id, 1);
  d = stop_at(p, &fc, t, 300);
  CHECK_EQ_U64(d.start_ns, 300);
  CHECK_EQ_U64(d.end_ns, 300);
  cubert__profiler_destroy(p);
  CHECK_EQ_I64(c.live_blocks, 0);
  counting_allocator_destroy(&c);
}

TEST(profile_profiler_nested_tokens) {
  TEST_REQUIRE_FEATURE(CUBERT_FEATURE_PROFILING);
  counting_allocator_t c;
  cubert_allocator_t a = counting_allocator_initialize(&c);
  fake_clock_t fc;
  cubert_profiler_t *p = profiler_new(a, fake_clock(&fc, 0, 0), 4);
  cubert_profiling_token_t outer = start_at(p, &fc, 10);
  cubert_profiling_token_t inner = start_at(p, &fc, 20);
  cubert_profiling_token_t innermost = start_at(p, &fc, 25);
  cubert_profile_duration_t d;
  CHECK(outer.id != inner.id && inner.id != innermost.id && outer.id != innermost.id);
  CHECK_EQ_U64(cubert__profiler_active_count(p), 3);
  d = stop_at(p, &fc, innermost, 27);
  CHECK_EQ_U64(d.start_ns, 25);
  CHECK_EQ_U64(d.end_ns, 27);
  d = stop_at(p, &fc, inner, 30);
  CHECK_EQ_U64(d.start_ns, 20);
  CHECK_EQ_U64(d.end_ns, 30);
  d = stop_at(p, &fc, outer, 40);
  CHECK_EQ_U64(d.start_ns, 10);
  CHECK_EQ_U64(d.end_ns, 40);
  CHECK_EQ_U64(cubert__profiler_active_count(p), 0);
  cubert__profiler_destroy(p);
  CHECK_EQ_I64(c.live_blocks, 0);
  counting_allocator_destroy(&c);
}

TEST(profile_profiler_overlapping_tokens) {
  TEST_REQUIRE_FEATURE(CUBERT_FEATURE_PROFILING);
  counting_allocator_t c;
  cubert_allocator_t a = counting_allocator_initialize(&c);
  fake_clock_t fc;
  cubert_profiler_t *p = profiler_new(a, fake_clock(&fc, 0, 0), 4);
  cubert_profiling_token_t ta = start_at(p, &fc, 1000);
  cubert_profiling_token_t tb = start_at(p, &fc, 1500);
  cubert_profile_duration_t d;
  d = stop_at(p, &fc, ta, 2000); /* a ends while b runs */
  CHECK_EQ_U64(d.start_ns, 1000);
  CHECK_EQ_U64(d.end_ns, 2000);
  CHECK_EQ_U64(cubert__profiler_active_count(p), 1);
  {
    cubert_profiling_token_t tc = start_at(p, &fc, 2100); /* c starts after a ended */
    d = stop_at(p, &fc, tb, 2500);
    CHECK_EQ_U64(d.start_ns, 1500);
    CHECK_EQ_U64(d.end_ns, 2500);
    d = stop_at(p, &fc, tc, 2600);
    CHECK_EQ_U64(d.start_ns, 2100);
    CHECK_EQ_U64(d.end_ns, 2600);
    CHECK_EQ_U64(tc.id, 2);
  }
  cubert__profiler_destroy(p);
  CHECK_EQ_I64(c.live_blocks, 0);
  counting_allocator_destroy(&c);
}

/* Many active tokens stopped in a scrambled order: each keeps its own start. */
TEST(profile_profiler_many_tokens_any_order) {
  TEST_REQUIRE_FEATURE(CUBERT_FEATURE_PROFILING);
  counting_allocator_t c;
  cubert_allocator_t a = counting_allocator_initialize(&c);
  fake_clock_t fc;
  cubert_profiler_t *p = profiler_new(a, fake_clock(&fc, 0, 0), CUBERT_PROFILER_DEFAULT_CAPACITY);
  cubert_profiling_token_t tokens[CUBERT_PROFILER_DEFAULT_CAPACITY];
  uint32_t i, n = CUBERT_PROFILER_DEFAULT_CAPACITY;
  uint64_t calls_before;
  for (i = 0; i < n; i++) tokens[i] = start_at(p, &fc, 1000 + 10 * (uint64_t)i);
  CHECK_EQ_U64(cubert__profiler_active_count(p), n);
  calls_before = c.calls;
  for (i = 0; i < n; i++) {
    uint32_t k = (i * 37u + 11u) % n; /* 37 is coprime with 64: a permutation */
    cubert_profile_duration_t d = stop_at(p, &fc, tokens[k], 5000 + i);
    CHECK_EQ_U64(d.start_ns, 1000 + 10 * (uint64_t)k);
    CHECK_EQ_U64(d.end_ns, 5000 + i);
    CHECK_EQ_U64(tokens[k].id, k);
    check_not_registered(p, tokens[k]);
  }
  CHECK_EQ_U64(c.calls, calls_before); /* start/stop never allocate */
  CHECK_EQ_U64(cubert__profiler_active_count(p), 0);
  cubert__profiler_destroy(p);
  CHECK_EQ_I64(c.live_blocks, 0);
  counting_allocator_destroy(&c);
}

TEST(profile_profiler_stop_twice) {
  TEST_REQUIRE_FEATURE(CUBERT_FEATURE_PROFILING);
  counting_allocator_t c;
  cubert_allocator_t a = counting_allocator_initialize(&c);
  fake_clock_t fc;
  cubert_profiler_t *p = profiler_new(a, fake_clock(&fc, 0, 0), 4);
  cubert_profiling_token_t t = start_at(p, &fc, 5);
  cubert_profiling_token_t other = start_at(p, &fc, 6);
  (void)stop_at(p, &fc, t, 9);
  check_not_registered(p, t);
  check_not_registered(p, t);
  /* the other token is unaffected */
  CHECK_EQ_U64(stop_at(p, &fc, other, 10).start_ns, 6);
  cubert__profiler_destroy(p);
  CHECK_EQ_I64(c.live_blocks, 0);
  counting_allocator_destroy(&c);
}

TEST(profile_profiler_unknown_token) {
  TEST_REQUIRE_FEATURE(CUBERT_FEATURE_PROFILING);
  counting_allocator_t c;
  cubert_allocator_t a = counting_allocator_initialize(&c);
  fake_clock_t fc;
  cubert_profiler_t *p = profiler_new(a, fake_clock(&fc, 0, 0), 4);
  cubert_profiling_token_t never = {42};
  cubert_profiling_token_t live;
  uint64_t calls;
  check_not_registered(p, never); /* nothing active at all */
  live = start_at(p, &fc, 3);
  calls = fc.calls;
  check_not_registered(p, never);
  never.id = live.id + 1; /* the id the next start would issue */
  check_not_registered(p, never);
  never.id = UINT64_MAX;
  check_not_registered(p, never);
  CHECK_EQ_U64(fc.calls, calls); /* a failed stop does not read the clock */
  CHECK_EQ_U64(stop_at(p, &fc, live, 4).start_ns, 3);
  live = start_at(p, &fc, 8);
  CHECK_EQ_U64(live.id, 1); /* failed stops consumed no id */
  cubert__profiler_destroy(p);
  CHECK_EQ_I64(c.live_blocks, 0);
  counting_allocator_destroy(&c);
}

TEST(profile_profiler_clock_going_back_is_clamped) {
  TEST_REQUIRE_FEATURE(CUBERT_FEATURE_PROFILING);
  counting_allocator_t c;
  cubert_allocator_t a = counting_allocator_initialize(&c);
  fake_clock_t fc;
  cubert_profiler_t *p = profiler_new(a, fake_clock(&fc, 0, 0), 2);
  cubert_profiling_token_t t = start_at(p, &fc, 500);
  cubert_profile_duration_t d = stop_at(p, &fc, t, 100);
  CHECK_EQ_U64(d.start_ns, 500);
  CHECK_EQ_U64(d.end_ns, 500);
  cubert__profiler_destroy(p);
  CHECK_EQ_I64(c.live_blocks, 0);
  counting_allocator_destroy(&c);
}

TEST(profile_profiler_capacity_full) {
  TEST_REQUIRE_FEATURE(CUBERT_FEATURE_PROFILING | CUBERT_FEATURE_ERROR_REASONS);
  counting_allocator_t c;
  cubert_allocator_t a = counting_allocator_initialize(&c);
  fake_clock_t fc;
  cubert_profiler_t *p = profiler_new(a, fake_clock(&fc, 0, 0), 3);
  cubert_profiling_token_t t[3], extra = {99};
  cubert_error_t e;
  char text[256];
  uint64_t calls;
  t[0] = start_at(p, &fc, 1);
  t[1] = start_at(p, &fc, 2);
  t[2] = start_at(p, &fc, 3);
  calls = fc.calls;
  CHECK_STATUS(cubert__profiler_start(p, &extra, &e), CUBERT_STATUS_PROFILE_FAILED);
  CHECK_EQ_I64(cubert_error_kind(&e), CUBERT_ERROR_PROFILE_UNKNOWN);
  CHECK_EQ_STR(e.reason, "too many active profiles: capacity 3 reached");
  cubert_error_format(&e, text, sizeof text);
  CHECK_EQ_STR(text, "An unknown error happened during profiling\nCaused by:\n  "
                     "too many active profiles: capacity 3 reached");
  CHECK_STATUS(cubert__profiler_start(p, &extra, NULL), CUBERT_STATUS_PROFILE_FAILED);
  CHECK_EQ_U64(extra.id, 99);     /* untouched */
  CHECK_EQ_U64(fc.calls, calls);  /* clock not read */
  CHECK_EQ_U64(cubert__profiler_active_count(p), 3);
  /* the active tokens still work; a freed slot is usable again, and the
   * refused starts consumed no id */
  CHECK_EQ_U64(stop_at(p, &fc, t[1], 10).start_ns, 2);
  extra = start_at(p, &fc, 11);
  CHECK_EQ_U64(extra.id, 3);
  CHECK_EQ_U64(stop_at(p, &fc, t[0], 12).start_ns, 1);
  CHECK_EQ_U64(stop_at(p, &fc, t[2], 12).start_ns, 3);
  CHECK_EQ_U64(stop_at(p, &fc, extra, 12).start_ns, 11);
  cubert__profiler_destroy(p);
  CHECK_EQ_I64(c.live_blocks, 0);
  counting_allocator_destroy(&c);
}

/* ---- timestamp profiler: errors (error(e) invalidates every active token) ---------- */

static void stop_expect_error(cubert_profiler_t *p, cubert_profiling_token_t t,
                              cubert_status_t status, cubert_error_t *out) {
  cubert_profile_duration_t d = {1, 2};
  CHECK_STATUS(cubert__profiler_stop(p, t, &d, out), status);
  CHECK_EQ_U64(d.start_ns, 1); /* untouched */
  CHECK_EQ_U64(d.end_ns, 2);
  CHECK_EQ_U64(out->status, status);
}

TEST(profile_profiler_error_invalidates_all_active) {
  TEST_REQUIRE_FEATURE(CUBERT_FEATURE_PROFILING);
  counting_allocator_t c;
  cubert_allocator_t a = counting_allocator_initialize(&c);
  fake_clock_t fc;
  cubert_profiler_t *p = profiler_new(a, fake_clock(&fc, 0, 0), 8);
  cubert_profiling_token_t ta = start_at(p, &fc, 10);
  cubert_profiling_token_t tb = start_at(p, &fc, 20);
  cubert_profiling_token_t tc;
  cubert_error_t server_error, e;
  char text[512];
  cubert_error_set(&server_error, CUBERT_ERROR_SERVER_GENERIC, NULL, 0, "sync failed");
  CHECK_OK(cubert__profiler_error(p, &server_error));
  CHECK_EQ_U64(cubert__profiler_active_count(p), 2); /* invalidated tokens stay registered */
  tc = start_at(p, &fc, 30);                         /* started after the error */

  stop_expect_error(p, tb, CUBERT_STATUS_INTERNAL, &e);
  CHECK_EQ_U64(e.depth, 2);
  CHECK_EQ_I64(e.chain[0], CUBERT_ERROR_PROFILE_SERVER); /* ProfileError::Server(ServerError) */
  CHECK_EQ_I64(e.chain[1], CUBERT_ERROR_SERVER_GENERIC);
  CHECK_EQ_STR(e.reason, "sync failed");
  cubert_error_format(&e, text, sizeof text);
  CHECK_EQ_STR(text, "An execution error happened during profiling\nCaused by:\n  "
                     "An error happened during execution\nCaused by:\n  sync failed");

  stop_expect_error(p, ta, CUBERT_STATUS_INTERNAL, &e);
  CHECK_EQ_I64(e.chain[0], CUBERT_ERROR_PROFILE_SERVER);
  CHECK_EQ_STR(e.reason, "sync failed");
  /* an invalidated token is forgotten once its error was returned */
  check_not_registered(p, ta);
  check_not_registered(p, tb);
  /* the later token is fine */
  {
    cubert_profile_duration_t d = stop_at(p, &fc, tc, 35);
    CHECK_EQ_U64(d.start_ns, 30);
    CHECK_EQ_U64(d.end_ns, 35);
  }
  /* the error does not stick to the profiler */
  tc = start_at(p, &fc, 40);
  CHECK_EQ_U64(stop_at(p, &fc, tc, 41).end_ns, 41);
  /* a NULL out_error still gets the status */
  ta = start_at(p, &fc, 50);
  CHECK_OK(cubert__profiler_error(p, &server_error));
  {
    cubert_profile_duration_t d;
    CHECK_STATUS(cubert__profiler_stop(p, ta, &d, NULL), CUBERT_STATUS_INTERNAL);
  }
  CHECK_EQ_U64(cubert__profiler_active_count(p), 0);
  cubert__profiler_destroy(p);
  CHECK_EQ_I64(c.live_blocks, 0);
  counting_allocator_destroy(&c);
}

TEST(profile_profiler_error_wrapping_by_kind) {
  TEST_REQUIRE_FEATURE(CUBERT_FEATURE_PROFILING);
  counting_allocator_t c;
  cubert_allocator_t a = counting_allocator_initialize(&c);
  fake_clock_t fc;
  cubert_profiler_t *p = profiler_new(a, fake_clock(&fc, 0, 0), 8);
  cubert_profiling_token_t t;
  cubert_error_t in, e, first;
  /* a LaunchError becomes ProfileError::Launch */
  t = start_at(p, &fc, 1);
  cubert_error_set(&in, CUBERT_ERROR_LAUNCH_UNKNOWN, NULL, 0, "bad launch");
  CHECK_OK(cubert__profiler_error(p, &in));
  stop_expect_error(p, t, CUBERT_STATUS_LAUNCH_FAILED, &e);
  CHECK_EQ_U64(e.depth, 2);
  CHECK_EQ_I64(e.chain[0], CUBERT_ERROR_PROFILE_LAUNCH);
  CHECK_EQ_I64(e.chain[1], CUBERT_ERROR_LAUNCH_UNKNOWN);
  /* a ProfileError is stored as is */
  t = start_at(p, &fc, 2);
  cubert_error_set(&in, CUBERT_ERROR_PROFILE_UNKNOWN, NULL, 0, "already a profile error");
  CHECK_OK(cubert__profiler_error(p, &in));
  stop_expect_error(p, t, CUBERT_STATUS_PROFILE_FAILED, &e);
  CHECK_EQ_U64(e.depth, 1);
  CHECK_EQ_I64(e.chain[0], CUBERT_ERROR_PROFILE_UNKNOWN);
  CHECK_EQ_STR(e.reason, "already a profile error");
  /* a wrapped chain (ServerError::Launch(LaunchError::...)) is a ServerError */
  t = start_at(p, &fc, 3);
  cubert_error_set2(&in, CUBERT_ERROR_RESOURCE_UNITS, 2048, 1024);
  cubert_error_wrap(&in, CUBERT_ERROR_LAUNCH_TOO_MANY_RESOURCES);
  cubert_error_wrap(&in, CUBERT_ERROR_SERVER_LAUNCH);
  CHECK_OK(cubert__profiler_error(p, &in));
  stop_expect_error(p, t, CUBERT_STATUS_LIMIT_EXCEEDED, &e);
  CHECK_EQ_U64(e.depth, 4);
  CHECK_EQ_I64(e.chain[0], CUBERT_ERROR_PROFILE_SERVER);
  CHECK_EQ_I64(e.chain[1], CUBERT_ERROR_SERVER_LAUNCH);
  CHECK_EQ_I64(cubert_error_kind(&e), CUBERT_ERROR_RESOURCE_UNITS);
  CHECK_EQ_U64(e.field[0], 2048);
  CHECK_EQ_U64(e.field[1], 1024);
  /* a stream's ServerUnhealthy aggregate keeps its count */
  t = start_at(p, &fc, 4);
  cubert_error_clear(&in);
  cubert_error_set(&first, CUBERT_ERROR_SERVER_GENERIC, NULL, 0, "first");
  cubert_error_aggregate(&in, &first);
  cubert_error_set(&first, CUBERT_ERROR_SERVER_GENERIC, NULL, 0, "second");
  cubert_error_aggregate(&in, &first);
  CHECK_OK(cubert__profiler_error(p, &in));
  stop_expect_error(p, t, CUBERT_STATUS_SERVER_UNHEALTHY, &e);
  CHECK_EQ_I64(e.chain[0], CUBERT_ERROR_PROFILE_SERVER);
  CHECK_EQ_I64(e.chain[1], CUBERT_ERROR_SERVER_UNHEALTHY);
  CHECK(cubert_error_has_kind(&e, CUBERT_ERROR_SERVER_UNHEALTHY));
  CHECK_EQ_U64(e.field[0], 2);
  /* error(e) twice: the newest error wins */
  t = start_at(p, &fc, 5);
  cubert_error_set(&in, CUBERT_ERROR_SERVER_GENERIC, NULL, 0, "old");
  CHECK_OK(cubert__profiler_error(p, &in));
  cubert_error_set(&in, CUBERT_ERROR_LAUNCH_OUT_OF_MEMORY, NULL, 0, "new");
  CHECK_OK(cubert__profiler_error(p, &in));
  stop_expect_error(p, t, CUBERT_STATUS_OUT_OF_MEMORY, &e);
  CHECK_EQ_I64(e.chain[0], CUBERT_ERROR_PROFILE_LAUNCH);
  CHECK_EQ_STR(e.reason, "new");
  cubert__profiler_destroy(p);
  CHECK_EQ_I64(c.live_blocks, 0);
  counting_allocator_destroy(&c);
}

TEST(profile_profiler_error_arguments_and_no_active) {
  TEST_REQUIRE_FEATURE(CUBERT_FEATURE_PROFILING);
  counting_allocator_t c;
  cubert_allocator_t a = counting_allocator_initialize(&c);
  fake_clock_t fc;
  cubert_profiler_t *p = profiler_new(a, fake_clock(&fc, 0, 0), 4);
  cubert_profiling_token_t t;
  cubert_error_t empty, in;
  cubert_error_clear(&empty);
  cubert_error_set(&in, CUBERT_ERROR_SERVER_GENERIC, NULL, 0, "x");
  /* with nothing active, error(e) does nothing */
  CHECK_OK(cubert__profiler_error(p, &in));
  t = start_at(p, &fc, 7);
  CHECK_STATUS(cubert__profiler_error(NULL, &in), CUBERT_STATUS_INVALID_ARGUMENT);
  CHECK_STATUS(cubert__profiler_error(p, NULL), CUBERT_STATUS_INVALID_ARGUMENT);
  CHECK_STATUS(cubert__profiler_error(p, &empty), CUBERT_STATUS_INVALID_ARGUMENT);
  /* refused errors invalidated nothing */
  CHECK_EQ_U64(stop_at(p, &fc, t, 9).start_ns, 7);
  cubert__profiler_destroy(p);
  CHECK_EQ_I64(c.live_blocks, 0);
  counting_allocator_destroy(&c);
}

#endif /* CUBERT_CONFIG_PROFILING */

/* ---- profiling level ---------------------------------------------------------------- */

TEST(profile_level_names_and_predicates) {
  CHECK(cubert_profile_level_is_valid(CUBERT_PROFILE_LEVEL_OFF));
  CHECK(cubert_profile_level_is_valid(CUBERT_PROFILE_LEVEL_FULL));
  CHECK(!cubert_profile_level_is_valid((cubert_profile_level_t)5));
  CHECK(!cubert_profile_level_is_timed(CUBERT_PROFILE_LEVEL_OFF));
  CHECK(!cubert_profile_level_is_timed(CUBERT_PROFILE_LEVEL_EXECUTION_ONLY));
  CHECK(cubert_profile_level_is_timed(CUBERT_PROFILE_LEVEL_BASIC));
  CHECK(cubert_profile_level_is_timed(CUBERT_PROFILE_LEVEL_MEDIUM));
  CHECK(cubert_profile_level_is_timed(CUBERT_PROFILE_LEVEL_FULL));
  CHECK(!cubert_profile_level_is_timed((cubert_profile_level_t)9));
  CHECK_EQ_STR(cubert_profile_level_name(CUBERT_PROFILE_LEVEL_OFF), "off");
  CHECK_EQ_STR(cubert_profile_level_name(CUBERT_PROFILE_LEVEL_EXECUTION_ONLY), "execution-only");
  CHECK_EQ_STR(cubert_profile_level_name(CUBERT_PROFILE_LEVEL_BASIC), "basic");
  CHECK_EQ_STR(cubert_profile_level_name(CUBERT_PROFILE_LEVEL_MEDIUM), "medium");
  CHECK_EQ_STR(cubert_profile_level_name(CUBERT_PROFILE_LEVEL_FULL), "full");
  CHECK_EQ_STR(cubert_profile_level_name((cubert_profile_level_t)77), "unknown");
}
