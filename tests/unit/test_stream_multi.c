/* SPDX-License-Identifier: MIT */
/* The multi-stream's plans (core/stream/stream.h): waits, pins, release
 * points, cursors, error queues. The multi-stream calls no driver, so no fake
 * is needed: the tests check the plans; the server acting on them (events,
 * the release ring) is tested in test_server_release.c and the CTS. */
#include "test.h"
#include "counting_allocator.h"
#include "stream/stream.h"
#include "memory/handle_table.h"

#define MAX_STREAMS 4u /* the seed tests' MAX_STREAMS */

typedef struct fixture_t {
  counting_allocator_t c;
  cubert_allocator_t a;
  cubert_handle_table_t *table;
  cubert_multi_stream_t *ms;
} fixture_t;

static void fx_init_ex(fixture_t *f, uint32_t max_streams, uint32_t wait_on_origin_cursor) {
  cubert_multi_stream_options_t o;
  memset(f, 0, sizeof(*f));
  f->a = counting_allocator_initialize(&f->c);
  CHECK_OK(cubert__handle_table_create(f->a, 1024, 7, &f->table));
  cubert__multi_stream_options_initialize(&o);
  o.max_streams = max_streams;
  o.wait_on_origin_cursor = wait_on_origin_cursor;
  CHECK_OK(cubert__multi_stream_create(f->a, &o, &f->ms, NULL));
}

static void fx_init(fixture_t *f, uint32_t max_streams) { fx_init_ex(f, max_streams, 0); }

/* Tear down and check: nothing leaked (host memory, ids). */
static void fx_fini(fixture_t *f) {
  cubert__multi_stream_destroy(f->ms);
  f->ms = NULL;
  CHECK_EQ_U64(cubert__handle_table_live(f->table), 0);
  cubert__handle_table_destroy(f->table);
  CHECK_EQ_I64(f->c.live_blocks, 0);
  CHECK_EQ_U64(f->c.bad_frees, 0);
  counting_allocator_destroy(&f->c);
}

/* The seed's `binding(stream)`: a fresh 10-byte handle on `stream` at
 * `cursor`, and a binding of it. Caller releases both. */
static cubert_binding_t fx_binding(fixture_t *f, uint64_t stream, uint64_t cursor,
                                   cubert_handle_t *out_handle) {
  cubert_binding_t b;
  CHECK_OK(cubert__handle_create(f->table, 0, stream, cursor, 10, out_handle));
  CHECK_OK(cubert__handle_binding(f->table, out_handle, &b));
  return b;
}

static void fx_drop(fixture_t *f, cubert_handle_t *h, cubert_binding_t *b) {
  CHECK_OK(cubert__binding_release(f->table, b));
  CHECK_OK(cubert__handle_release(f->table, h));
}

/* plan + commit one command; returns the plan (its waits copied out). */
static cubert_stream_plan_t fx_command_waits(fixture_t *f, uint64_t stream,
                                             const cubert_binding_t *b, size_t n,
                                             cubert_stream_wait_t *waits) {
  cubert_stream_plan_t p;
  uint32_t k;
  CHECK_OK(cubert__multi_stream_plan(f->ms, stream, b, n, true, &p, NULL));
  CHECK(p.wait_count == 0 || p.waits != NULL);
  for (k = 0; waits && k < p.wait_count; k++) waits[k] = p.waits[k];
  CHECK_OK(cubert__multi_stream_commit(f->ms, &p));
  CHECK_EQ_U64(cubert__multi_stream_cursor(f->ms, stream), p.cursor);
  return p;
}

static cubert_stream_plan_t fx_command(fixture_t *f, uint64_t stream, const cubert_binding_t *b,
                                       size_t n) {
  return fx_command_waits(f, stream, b, n, NULL);
}

/* ---- CubeCL's four MultiStream tests ------------------------------------- */

TEST(stream_analysis_shared_bindings_1) {
  fixture_t f;
  cubert_handle_t h1, h2;
  cubert_binding_t b[2];
  uint32_t origin[2];
  fx_init(&f, MAX_STREAMS);
  b[0] = fx_binding(&f, 1, 0, &h1);
  b[1] = fx_binding(&f, 2, 0, &h2);
  fx_command(&f, 1, NULL, 0);
  fx_command(&f, 2, NULL, 0);
  /* expected: only binding_2 is shared, under stream_index(stream 2) = 2 */
  CHECK_EQ_U64(cubert__multi_stream_analyze(f.ms, 1, b, 2, origin), 1);
  CHECK_EQ_U64(origin[0], CUBERT_STREAM_NOT_SHARED);
  CHECK_EQ_U64(origin[1], 2);
  fx_drop(&f, &h1, &b[0]);
  fx_drop(&f, &h2, &b[1]);
  fx_fini(&f);
}

TEST(stream_analysis_shared_bindings_2) {
  fixture_t f;
  cubert_handle_t h[3];
  cubert_binding_t b[3];
  uint32_t origin[3];
  int i;
  fx_init(&f, MAX_STREAMS);
  b[0] = fx_binding(&f, 1, 0, &h[0]);
  b[1] = fx_binding(&f, 2, 0, &h[1]);
  b[2] = fx_binding(&f, 1, 0, &h[2]);
  fx_command(&f, 1, NULL, 0);
  fx_command(&f, 2, NULL, 0);
  /* the extra stream-1 binding changes nothing */
  CHECK_EQ_U64(cubert__multi_stream_analyze(f.ms, 1, b, 3, origin), 1);
  CHECK_EQ_U64(origin[0], CUBERT_STREAM_NOT_SHARED);
  CHECK_EQ_U64(origin[1], 2);
  CHECK_EQ_U64(origin[2], CUBERT_STREAM_NOT_SHARED);
  for (i = 0; i < 3; i++) fx_drop(&f, &h[i], &b[i]);
  fx_fini(&f);
}

TEST(stream_analysis_no_shared) {
  fixture_t f;
  cubert_handle_t h[3];
  cubert_binding_t b[3];
  uint32_t origin[3];
  int i;
  fx_init(&f, MAX_STREAMS);
  for (i = 0; i < 3; i++) b[i] = fx_binding(&f, 1, 0, &h[i]);
  fx_command(&f, 1, NULL, 0);
  fx_command(&f, 2, NULL, 0);
  CHECK_EQ_U64(cubert__multi_stream_analyze(f.ms, 1, b, 3, origin), 0);
  for (i = 0; i < 3; i++) CHECK_EQ_U64(origin[i], CUBERT_STREAM_NOT_SHARED);
  /* analysis has no side effect */
  CHECK_EQ_U64(cubert__multi_stream_synced_count(f.ms, 1), 0);
  CHECK_EQ_U64(cubert__multi_stream_cursor(f.ms, 1), 1);
  for (i = 0; i < 3; i++) fx_drop(&f, &h[i], &b[i]);
  fx_fini(&f);
}

TEST(stream_state) {
  /* CubeCL's vector: max 4, streams 1 and 2 resolved once, then stream 1
   * with bindings from 1, 2, 1. */
  fixture_t f;
  cubert_handle_t h[3];
  cubert_binding_t b[3];
  uint64_t synced = 0;
  int i;
  fx_init(&f, MAX_STREAMS);
  b[0] = fx_binding(&f, 1, 0, &h[0]);
  b[1] = fx_binding(&f, 2, 0, &h[1]);
  b[2] = fx_binding(&f, 1, 0, &h[2]);
  fx_command(&f, 1, NULL, 0);
  fx_command(&f, 2, NULL, 0);
  fx_command(&f, 1, b, 3);
  CHECK(cubert__multi_stream_last_synced(f.ms, 1, 2 % MAX_STREAMS, &synced));
  CHECK_EQ_U64(synced, 1);
  CHECK_EQ_U64(cubert__multi_stream_synced_count(f.ms, 1), 1);
  CHECK_EQ_U64(cubert__multi_stream_cursor(f.ms, 1), 2);
  CHECK_EQ_U64(cubert__multi_stream_synced_count(f.ms, 2), 0);
  CHECK(!cubert__multi_stream_last_synced(f.ms, 2, 1, &synced));
  CHECK_EQ_U64(cubert__multi_stream_cursor(f.ms, 2), 1);
  for (i = 0; i < 3; i++) fx_drop(&f, &h[i], &b[i]);
  fx_fini(&f);
}

/* ---- pins and the release point ----------------------------------------------- */

TEST(stream_plan_pins_cross_stream_bindings_until_the_commands_point) {
  fixture_t f;
  cubert_handle_t h[3];
  cubert_binding_t b[3];
  cubert_stream_plan_t p;
  int i;
  fx_init(&f, MAX_STREAMS);
  b[0] = fx_binding(&f, 1, 0, &h[0]);
  b[1] = fx_binding(&f, 2, 0, &h[1]);
  b[2] = fx_binding(&f, 6, 0, &h[2]); /* slot 2, another stream id: cross-stream too */
  fx_command(&f, 2, NULL, 0);
  p = fx_command(&f, 2, b, 3);
  CHECK_EQ_U64(p.pin_count, 2);
  CHECK(cubert__stream_plan_pins(&p, &b[0]));
  CHECK(!cubert__stream_plan_pins(&p, &b[1]));
  CHECK(cubert__stream_plan_pins(&p, &b[2]));
  /* the release point: the command's own point on its slot */
  CHECK_EQ_U64(p.slot, 2);
  CHECK_EQ_U64(p.cursor, 2);
  CHECK_EQ_U64(p.stream_id, 2);
  /* planning pins nothing: the caller (the server) retains them */
  for (i = 0; i < 3; i++) CHECK_EQ_U64(cubert__memory_id_descriptor_count(f.table, h[i].memory), 2);
  for (i = 0; i < 3; i++) fx_drop(&f, &h[i], &b[i]);
  fx_fini(&f);
}

TEST(stream_already_synced_cross_stream_binding_still_pinned) {
  fixture_t f;
  cubert_handle_t h1, h2;
  cubert_binding_t b1, b2;
  cubert_stream_plan_t p;
  fx_init(&f, MAX_STREAMS);
  fx_command(&f, 1, NULL, 0);
  b1 = fx_binding(&f, 1, 1, &h1);
  p = fx_command(&f, 2, &b1, 1);
  CHECK_EQ_U64(p.wait_count, 1);
  /* a second stream-1 buffer from before the synced point: no wait, still a pin */
  b2 = fx_binding(&f, 1, 1, &h2);
  p = fx_command(&f, 2, &b2, 1);
  CHECK_EQ_U64(p.wait_count, 0);
  CHECK_EQ_U64(p.pin_count, 1);
  fx_drop(&f, &h2, &b2);
  fx_drop(&f, &h1, &b1);
  fx_fini(&f);
}

/* ---- cursors and waits --------------------------------------------------------- */

TEST(stream_cursor_advances_per_commit_only) {
  fixture_t f;
  cubert_stream_plan_t p, q;
  uint64_t i;
  fx_init(&f, MAX_STREAMS);
  CHECK_EQ_U64(cubert__multi_stream_cursor(f.ms, 7), 0);
  for (i = 1; i <= 5; i++) CHECK_EQ_U64(fx_command(&f, 7, NULL, 0).cursor, i);
  CHECK_EQ_U64(cubert__multi_stream_cursor(f.ms, 7), 5);
  CHECK_EQ_U64(cubert__multi_stream_cursor(f.ms, 6), 0);
  /* a plan never committed changes nothing */
  CHECK_OK(cubert__multi_stream_plan(f.ms, 7, NULL, 0, true, &p, NULL));
  CHECK_EQ_U64(p.cursor, 6);
  CHECK_EQ_U64(cubert__multi_stream_cursor(f.ms, 7), 5);
  /* only the latest plan commits, once */
  CHECK_OK(cubert__multi_stream_plan(f.ms, 7, NULL, 0, true, &q, NULL));
  CHECK_STATUS(cubert__multi_stream_commit(f.ms, &p), CUBERT_STATUS_FAILED_PRECONDITION);
  CHECK_OK(cubert__multi_stream_commit(f.ms, &q));
  CHECK_STATUS(cubert__multi_stream_commit(f.ms, &q), CUBERT_STATUS_FAILED_PRECONDITION);
  CHECK_EQ_U64(cubert__multi_stream_cursor(f.ms, 7), 6);
  CHECK_STATUS(cubert__multi_stream_commit(NULL, &q), CUBERT_STATUS_INVALID_ARGUMENT);
  CHECK_STATUS(cubert__multi_stream_commit(f.ms, NULL), CUBERT_STATUS_INVALID_ARGUMENT);
  p.serial = 0;
  CHECK_STATUS(cubert__multi_stream_commit(f.ms, &p), CUBERT_STATUS_FAILED_PRECONDITION);
  fx_fini(&f);
}

TEST(stream_same_stream_binding_needs_no_wait_nor_pin) {
  fixture_t f;
  cubert_handle_t h;
  cubert_binding_t b[2];
  cubert_stream_plan_t p;
  fx_init(&f, MAX_STREAMS);
  b[0] = fx_binding(&f, 1, 0, &h);
  b[1] = b[0];
  p = fx_command(&f, 1, b, 2);
  CHECK_EQ_U64(p.wait_count, 0);
  CHECK_EQ_U64(p.pin_count, 0);
  CHECK_OK(cubert__binding_release(f.table, &b[0]));
  CHECK_OK(cubert__handle_release(f.table, &h));
  fx_fini(&f);
}

TEST(stream_bindings_from_two_other_streams_cause_two_waits) {
  fixture_t f;
  cubert_handle_t h[4];
  cubert_binding_t b[4];
  cubert_stream_plan_t p;
  cubert_stream_wait_t w[4];
  int i;
  fx_init(&f, MAX_STREAMS);
  fx_command(&f, 1, NULL, 0);
  fx_command(&f, 2, NULL, 0);
  fx_command(&f, 3, NULL, 0);
  fx_command(&f, 3, NULL, 0);
  b[0] = fx_binding(&f, 2, 1, &h[0]);
  b[1] = fx_binding(&f, 3, 1, &h[1]);
  b[2] = fx_binding(&f, 2, 1, &h[2]);
  b[3] = fx_binding(&f, 1, 1, &h[3]);
  p = fx_command_waits(&f, 1, b, 4, w);
  CHECK_EQ_U64(p.wait_count, 2);
  CHECK_EQ_U64(p.pin_count, 3);
  /* first-use order, each origin once, waiting for the origin's current end */
  CHECK_EQ_U64(w[0].origin_slot, 2);
  CHECK_EQ_U64(w[0].origin_cursor, 1);
  CHECK_EQ_U64(w[1].origin_slot, 3);
  CHECK_EQ_U64(w[1].origin_cursor, 2);
  CHECK_EQ_U64(cubert__multi_stream_synced_count(f.ms, 1), 2);
  for (i = 0; i < 4; i++) fx_drop(&f, &h[i], &b[i]);
  fx_fini(&f);
}

TEST(stream_repeated_plan_after_sync_needs_no_new_wait) {
  fixture_t f;
  cubert_handle_t h, h2;
  cubert_binding_t b, b2;
  uint64_t synced = 0;
  fx_init(&f, MAX_STREAMS);
  b = fx_binding(&f, 2, fx_command(&f, 2, NULL, 0).cursor, &h); /* written at cursor 1 */
  CHECK_EQ_U64(fx_command(&f, 1, &b, 1).wait_count, 1);
  CHECK_EQ_U64(fx_command(&f, 1, &b, 1).wait_count, 0);
  CHECK_EQ_U64(fx_command(&f, 1, &b, 1).wait_count, 0);
  /* stream 2 moves on and writes a new buffer: one new wait */
  b2 = fx_binding(&f, 2, fx_command(&f, 2, NULL, 0).cursor, &h2); /* cursor 2 */
  CHECK_EQ_U64(fx_command(&f, 1, &b2, 1).wait_count, 1);
  CHECK(cubert__multi_stream_last_synced(f.ms, 1, 2, &synced));
  CHECK_EQ_U64(synced, 2);
  CHECK_EQ_U64(fx_command(&f, 1, &b2, 1).wait_count, 0);
  fx_drop(&f, &h, &b);
  fx_drop(&f, &h2, &b2);
  fx_fini(&f);
}

/* The server's choice: a binding's point is its origin's latest command, so
 * a later write on the origin (cursor of the binding unchanged) is waited for. */
TEST(stream_wait_on_origin_cursor) {
  fixture_t f;
  cubert_handle_t h;
  cubert_binding_t b;
  fx_init_ex(&f, MAX_STREAMS, 1);
  fx_command(&f, 2, NULL, 0);
  b = fx_binding(&f, 2, 1, &h);
  CHECK_EQ_U64(fx_command(&f, 1, &b, 1).wait_count, 1);
  CHECK_EQ_U64(fx_command(&f, 1, &b, 1).wait_count, 0); /* the origin did nothing since */
  fx_command(&f, 2, NULL, 0);                          /* e.g. a kernel writing b on stream 2 */
  CHECK_EQ_U64(fx_command(&f, 1, &b, 1).wait_count, 1);
  CHECK_EQ_U64(fx_command(&f, 1, &b, 1).wait_count, 0);
  fx_drop(&f, &h, &b);
  fx_fini(&f);
  /* CubeCL's rule (the default) misses that write */
  fx_init(&f, MAX_STREAMS);
  fx_command(&f, 2, NULL, 0);
  b = fx_binding(&f, 2, 1, &h);
  CHECK_EQ_U64(fx_command(&f, 1, &b, 1).wait_count, 1);
  fx_command(&f, 2, NULL, 0);
  CHECK_EQ_U64(fx_command(&f, 1, &b, 1).wait_count, 0);
  fx_drop(&f, &h, &b);
  fx_fini(&f);
}

TEST(stream_slot_mapping_id_mod_max_streams) {
  fixture_t f;
  cubert_handle_t h;
  cubert_binding_t b;
  uint64_t synced = 0;
  cubert_stream_plan_t r;
  fx_init(&f, MAX_STREAMS);
  CHECK_EQ_U64(cubert__multi_stream_max_streams(f.ms), MAX_STREAMS);
  CHECK_EQ_U64(fx_command(&f, 1, NULL, 0).slot, 1);
  r = fx_command(&f, 5, NULL, 0);
  CHECK_EQ_U64(r.slot, 1);
  CHECK_EQ_U64(r.cursor, 2); /* same slot, same cursor */
  CHECK_EQ_U64(cubert__multi_stream_cursor(f.ms, 9), 2);
  CHECK_EQ_U64(fx_command(&f, 4, NULL, 0).slot, 0);
  CHECK_EQ_U64(fx_command(&f, UINT64_MAX, NULL, 0).slot, UINT64_MAX % MAX_STREAMS);
  CHECK(cubert__multi_stream_slot_exists(f.ms, 0));
  CHECK(cubert__multi_stream_slot_exists(f.ms, 1));
  CHECK(!cubert__multi_stream_slot_exists(f.ms, 2));
  CHECK(cubert__multi_stream_slot_exists(f.ms, 3));
  CHECK(!cubert__multi_stream_slot_exists(f.ms, 99));
  /* distinct ids of one slot are still cross-stream: the slot waits on itself */
  b = fx_binding(&f, 1, 0, &h);
  r = fx_command(&f, 5, &b, 1);
  CHECK_EQ_U64(r.wait_count, 1);
  CHECK_EQ_U64(r.pin_count, 1);
  CHECK(cubert__multi_stream_last_synced(f.ms, 5, 1, &synced));
  CHECK_EQ_U64(synced, 2);
  fx_drop(&f, &h, &b);
  fx_fini(&f);
}

/* ---- per-stream error queue -------------------------------------------- */

TEST(stream_error_queue_drain_and_aggregate) {
  fixture_t f;
  cubert_error_t e1, e2, out;
  cubert_stream_plan_t r;
  uint64_t size = 4096;
  fx_init(&f, MAX_STREAMS);
  fx_command(&f, 1, NULL, 0);
  CHECK_EQ_U64(cubert__multi_stream_error_count(f.ms, 1), 0);
  CHECK_OK(cubert__multi_stream_error_drain(f.ms, 1, &out)); /* nothing queued */
  cubert_error_set(&e1, CUBERT_ERROR_COMPILATION_GENERIC, NULL, 0, "bad kernel");
  cubert_error_set(&e2, CUBERT_ERROR_IO_OUT_OF_MEMORY, &size, 1, "no memory");
  CHECK_OK(cubert__multi_stream_error_push(f.ms, 1, &e1));
  CHECK_OK(cubert__multi_stream_error_push(f.ms, 5, &e2)); /* same slot as 1 */
  CHECK_EQ_U64(cubert__multi_stream_error_count(f.ms, 1), 2);
  CHECK_EQ_U64(cubert__multi_stream_error_count(f.ms, 2), 0);
  /* peek: a copy, nothing drained */
  CHECK_STATUS(cubert__multi_stream_error_peek(f.ms, 1, &out), CUBERT_STATUS_SERVER_UNHEALTHY);
  CHECK_EQ_U64(cubert__multi_stream_error_count(f.ms, 1), 2);
  /* enforce_healthy: refused, nothing changed (cursor, queue) */
  CHECK_STATUS(cubert__multi_stream_plan(f.ms, 1, NULL, 0, true, &r, &out),
               CUBERT_STATUS_SERVER_UNHEALTHY);
  CHECK(cubert_error_has_kind(&out, CUBERT_ERROR_SERVER_UNHEALTHY));
  CHECK_EQ_U64(cubert__multi_stream_cursor(f.ms, 1), 1);
  /* ignore mode (fire-and-forget work) still plans */
  CHECK_OK(cubert__multi_stream_plan(f.ms, 1, NULL, 0, false, &r, NULL));
  CHECK_OK(cubert__multi_stream_commit(f.ms, &r));
  CHECK_EQ_U64(cubert__multi_stream_cursor(f.ms, 1), 2);
  /* other streams stay healthy */
  fx_command(&f, 2, NULL, 0);
  /* drain: the aggregate, once */
  CHECK_STATUS(cubert__multi_stream_error_drain(f.ms, 1, &out), CUBERT_STATUS_SERVER_UNHEALTHY);
  CHECK_EQ_I64(out.status, CUBERT_STATUS_SERVER_UNHEALTHY);
  CHECK_EQ_U64(out.chain[0], CUBERT_ERROR_SERVER_UNHEALTHY);
  CHECK_EQ_U64(cubert_error_aggregate_count(&out), 2);
  CHECK_EQ_U64(cubert_error_kind(&out), CUBERT_ERROR_COMPILATION_GENERIC); /* the first */
  CHECK(cubert_error_has_kind(&out, CUBERT_ERROR_COMPILATION_GENERIC));
  { /* the messages, in push order, joined by a newline */
    char m1[256], m2[256], joined[512];
    cubert_error_format(&e1, m1, sizeof m1);
    cubert_error_format(&e2, m2, sizeof m2);
    snprintf(joined, sizeof joined, "%s\n%s", m1, m2);
    CHECK(strlen(joined) < sizeof(out.reason));
    CHECK_EQ_STR(out.reason, joined);
    CHECK(strstr(out.reason, "bad kernel") != NULL);
  }
  CHECK_EQ_U64(cubert__multi_stream_error_count(f.ms, 1), 0);
  CHECK_OK(cubert__multi_stream_error_drain(f.ms, 1, &out));
  CHECK_OK(cubert__multi_stream_error_peek(f.ms, 1, &out));
  fx_command(&f, 1, NULL, 0); /* healthy again */
  /* bad pushes */
  cubert_error_clear(&e1);
  CHECK_STATUS(cubert__multi_stream_error_push(f.ms, 1, &e1), CUBERT_STATUS_INVALID_ARGUMENT);
  e1.status = CUBERT_STATUS_INTERNAL; /* a status but no kind */
  CHECK_STATUS(cubert__multi_stream_error_push(f.ms, 1, &e1), CUBERT_STATUS_INVALID_ARGUMENT);
  CHECK_STATUS(cubert__multi_stream_error_push(f.ms, 1, NULL), CUBERT_STATUS_INVALID_ARGUMENT);
  CHECK_STATUS(cubert__multi_stream_error_push(NULL, 1, &e2), CUBERT_STATUS_INVALID_ARGUMENT);
  CHECK_EQ_U64(cubert__multi_stream_error_count(f.ms, 1), 0);
  fx_fini(&f);
}

TEST(stream_error_queue_many_errors_truncate_safely) {
  fixture_t f;
  cubert_error_t e, out;
  int i;
  fx_init(&f, MAX_STREAMS);
  cubert_error_set(&e, CUBERT_ERROR_LAUNCH_UNKNOWN, NULL, 0,
                   "a fairly long reason text that fills the aggregate quickly");
  for (i = 0; i < 100; i++) CHECK_OK(cubert__multi_stream_error_push(f.ms, 3, &e));
  CHECK_EQ_U64(cubert__multi_stream_error_count(f.ms, 3), 100);
  CHECK_STATUS(cubert__multi_stream_error_drain(f.ms, 3, &out), CUBERT_STATUS_SERVER_UNHEALTHY);
  CHECK_EQ_U64(cubert_error_aggregate_count(&out), 100); /* exact although the text is cut */
  CHECK(strlen(out.reason) < sizeof(out.reason));
  CHECK_EQ_U64(cubert__multi_stream_error_count(f.ms, 3), 0);
  fx_fini(&f);
}

/* ---- failures: arguments, allocation ---------------------------------------- */

TEST(stream_invalid_arguments) {
  fixture_t f;
  counting_allocator_t c;
  cubert_allocator_t a = counting_allocator_initialize(&c);
  cubert_multi_stream_t *ms = NULL;
  cubert_multi_stream_options_t o;
  cubert_stream_plan_t r;
  cubert_error_t err;
  cubert_handle_t h;
  cubert_binding_t b;
  fx_init(&f, MAX_STREAMS);
  /* create */
  CHECK_STATUS(cubert__multi_stream_create(a, NULL, NULL, &err), CUBERT_STATUS_INVALID_ARGUMENT);
  CHECK_EQ_U64(cubert_error_kind(&err), CUBERT_ERROR_INVALID_ARGUMENT);
  cubert__multi_stream_options_initialize(NULL); /* a no-op */
  cubert__multi_stream_options_initialize(&o);
  CHECK_EQ_U64(o.max_streams, 128);
  CHECK_EQ_U64(o.wait_on_origin_cursor, 0);
  o.max_streams = 0;
  CHECK_STATUS(cubert__multi_stream_create(a, &o, &ms, NULL), CUBERT_STATUS_INVALID_ARGUMENT);
  o.max_streams = 256;
  CHECK_STATUS(cubert__multi_stream_create(a, &o, &ms, &err), CUBERT_STATUS_INVALID_ARGUMENT);
  CHECK_EQ_U64(err.field[0], 256);
  CHECK(ms == NULL);
  o.max_streams = 255;
  CHECK_OK(cubert__multi_stream_create(a, &o, &ms, NULL));
  CHECK_EQ_U64(cubert__multi_stream_max_streams(ms), 255);
  cubert__multi_stream_destroy(ms);
  CHECK_OK(cubert__multi_stream_create(a, NULL, &ms, NULL)); /* the defaults */
  CHECK_EQ_U64(cubert__multi_stream_max_streams(ms), CUBERT_STREAM_DEFAULT_MAX_STREAMS);
  cubert__multi_stream_destroy(ms);
  cubert__multi_stream_destroy(NULL);
  CHECK_EQ_U64(cubert__multi_stream_max_streams(NULL), 0);
  CHECK_EQ_I64(c.live_blocks, 0);
  counting_allocator_destroy(&c);
  /* plan */
  CHECK_STATUS(cubert__multi_stream_plan(NULL, 1, NULL, 0, true, &r, NULL),
               CUBERT_STATUS_INVALID_ARGUMENT);
  CHECK_STATUS(cubert__multi_stream_plan(f.ms, 1, NULL, 0, true, NULL, NULL),
               CUBERT_STATUS_INVALID_ARGUMENT);
  CHECK_STATUS(cubert__multi_stream_plan(f.ms, 1, NULL, 2, true, &r, NULL),
               CUBERT_STATUS_INVALID_ARGUMENT);
  CHECK(!cubert__multi_stream_slot_exists(f.ms, 1));
  /* a plan refers to no binding reference: a dead binding plans like a live one
   * (the server checks bindings before it plans) */
  b = fx_binding(&f, 2, 0, &h);
  fx_drop(&f, &h, &b);
  CHECK_OK(cubert__multi_stream_plan(f.ms, 1, &b, 1, true, &r, NULL));
  CHECK_EQ_U64(r.pin_count, 1);
  CHECK(!cubert__multi_stream_slot_exists(f.ms, 2)); /* nothing made for the origin */
  /* queries on NULL */
  CHECK_EQ_U64(cubert__multi_stream_cursor(NULL, 1), 0);
  CHECK_EQ_U64(cubert__multi_stream_analyze(NULL, 1, NULL, 0, NULL), 0);
  CHECK(!cubert__multi_stream_last_synced(f.ms, 1, 200, NULL));
  fx_fini(&f);
}

TEST(stream_plan_more_bindings_than_u32_is_refused) {
  fixture_t f;
  cubert_binding_t one;
  cubert_stream_plan_t r;
  cubert_error_t err;
  size_t huge = (size_t)UINT32_MAX;
  huge += 1u; /* 2^32, or 0 where size_t has 32 bits */
  if (huge == 0) TEST_SKIP("size_t has 32 bits: no count above UINT32_MAX exists");
  fx_init(&f, MAX_STREAMS);
  memset(&one, 0, sizeof one);
  /* refused before a single binding is read */
  CHECK_STATUS(cubert__multi_stream_plan(f.ms, 1, &one, huge, true, &r, &err),
               CUBERT_STATUS_OVERFLOW);
  CHECK(cubert_error_kind(&err) == CUBERT_ERROR_OVERFLOW);
  CHECK(!cubert__multi_stream_slot_exists(f.ms, 1));
  fx_fini(&f);
}

/* Allocation-failure loop: fail the 1st, 2nd, ... allocating call of
 * creation, then of a slot's first plan. Each run returns OK or
 * RESOURCE_EXHAUSTED with nothing changed, and nothing leaks. */
TEST(stream_create_and_plan_allocation_failure_loop) {
  uint64_t n;
  int created = 0, planned = 0;
  for (n = 1; n < 100 && !planned; n++) {
    counting_allocator_t c;
    cubert_allocator_t a = counting_allocator_initialize(&c);
    cubert_multi_stream_t *ms = NULL;
    cubert_stream_plan_t p;
    cubert_error_t e;
    cubert_status_t st;
    counting_allocator_fail_at(&c, n, 0);
    st = cubert__multi_stream_create(a, NULL, &ms, NULL);
    if (st == CUBERT_STATUS_OK) {
      created = 1;
      counting_allocator_fail_at(&c, 1, 0);
      CHECK_STATUS(cubert__multi_stream_plan(ms, 1, NULL, 0, true, &p, &e),
                   CUBERT_STATUS_RESOURCE_EXHAUSTED);
      CHECK(!cubert__multi_stream_slot_exists(ms, 1));
      cubert_error_set(&e, CUBERT_ERROR_LAUNCH_UNKNOWN, NULL, 0, "x");
      counting_allocator_fail_at(&c, 1, 0);
      CHECK_STATUS(cubert__multi_stream_error_push(ms, 1, &e), CUBERT_STATUS_RESOURCE_EXHAUSTED);
      CHECK(!cubert__multi_stream_slot_exists(ms, 1));
      counting_allocator_fail_at(&c, 0, 0);
      CHECK_OK(cubert__multi_stream_plan(ms, 1, NULL, 0, true, &p, NULL));
      CHECK_OK(cubert__multi_stream_commit(ms, &p));
      planned = 1;
      cubert__multi_stream_destroy(ms);
    } else {
      CHECK_STATUS(st, CUBERT_STATUS_RESOURCE_EXHAUSTED);
      CHECK(ms == NULL);
    }
    counting_allocator_fail_at(&c, 0, 0);
    CHECK_EQ_I64(c.live_blocks, 0);
    CHECK_EQ_U64(c.bad_frees, 0);
    counting_allocator_destroy(&c);
  }
  CHECK(created && planned);
  CHECK(n > 2); /* the loop really exercised the creation's failure points */
}

/* Persistent allocation failure after warm-up: planning and committing on
 * slots already used allocates nothing, however many bindings. */
TEST(stream_steady_state_plan_does_not_allocate) {
  fixture_t f;
  cubert_handle_t h[2];
  cubert_binding_t b[2];
  int i;
  fx_init(&f, MAX_STREAMS);
  b[0] = fx_binding(&f, 1, 0, &h[0]);
  b[1] = fx_binding(&f, 2, 0, &h[1]);
  fx_command(&f, 1, NULL, 0);
  fx_command(&f, 2, NULL, 0);
  fx_command(&f, 3, b, 2);
  counting_allocator_fail_at(&f.c, 1, 1);
  for (i = 0; i < 50; i++) {
    fx_command(&f, 3, b, 2);
    fx_command(&f, 1, b, 2);
    fx_command(&f, 2, b, 2);
  }
  CHECK_EQ_U64(f.c.failures, 0);
  counting_allocator_fail_at(&f.c, 0, 0);
  for (i = 0; i < 2; i++) fx_drop(&f, &h[i], &b[i]);
  fx_fini(&f);
}

/* ---- plans as data ------------------------------------------------------------- */

/* The waits of a plan point into the multi-stream: the next plan reuses them. */
TEST(stream_plan_waits_valid_until_the_next_plan) {
  fixture_t f;
  cubert_handle_t h1, h2;
  cubert_binding_t b1, b2;
  cubert_stream_plan_t p, q;
  fx_init(&f, MAX_STREAMS);
  b1 = fx_binding(&f, 1, 0, &h1);
  b2 = fx_binding(&f, 2, 0, &h2);
  CHECK_OK(cubert__multi_stream_plan(f.ms, 3, &b1, 1, true, &p, NULL));
  CHECK_EQ_U64(p.wait_count, 1);
  CHECK_EQ_U64(p.waits[0].origin_slot, 1);
  CHECK_OK(cubert__multi_stream_plan(f.ms, 3, &b2, 1, true, &q, NULL));
  CHECK(p.waits == q.waits);
  CHECK_EQ_U64(p.waits[0].origin_slot, 2); /* overwritten: p is stale */
  CHECK_STATUS(cubert__multi_stream_commit(f.ms, &p), CUBERT_STATUS_FAILED_PRECONDITION);
  CHECK_OK(cubert__multi_stream_commit(f.ms, &q));
  CHECK(cubert__multi_stream_last_synced(f.ms, 3, 2, NULL));
  CHECK(!cubert__multi_stream_last_synced(f.ms, 3, 1, NULL));
  fx_drop(&f, &h1, &b1);
  fx_drop(&f, &h2, &b2);
  fx_fini(&f);
}

/* analyze and plan agree on the origins, for every stream of a small program. */
TEST(stream_analyze_agrees_with_plan) {
  fixture_t f;
  cubert_handle_t h[4];
  cubert_binding_t b[4];
  uint64_t s;
  int i, round;
  fx_init(&f, MAX_STREAMS);
  for (i = 0; i < 4; i++) b[i] = fx_binding(&f, (uint64_t)i, 0, &h[i]);
  for (round = 0; round < 3; round++) {
    for (s = 0; s < 6; s++) {
      cubert_stream_plan_t p;
      uint32_t n = cubert__multi_stream_analyze(f.ms, s, b, 4, NULL);
      CHECK_OK(cubert__multi_stream_plan(f.ms, s, b, 4, true, &p, NULL));
      CHECK_EQ_U64(p.wait_count, n);
      CHECK_EQ_U64(p.pin_count, 4u - (s < 4 ? 1u : 0u));
      CHECK_OK(cubert__multi_stream_commit(f.ms, &p));
    }
  }
  for (i = 0; i < 4; i++) fx_drop(&f, &h[i], &b[i]);
  fx_fini(&f);
}

/* A plan on a slot that waits on itself (another stream id of the slot)
 * covers the slot's own earlier commands. */
TEST(stream_plan_wait_on_its_own_slot_covers_its_cursor) {
  fixture_t f;
  cubert_handle_t h;
  cubert_binding_t b;
  cubert_stream_wait_t w[1];
  cubert_stream_plan_t p;
  fx_init(&f, MAX_STREAMS);
  fx_command(&f, 1, NULL, 0);
  fx_command(&f, 1, NULL, 0);
  b = fx_binding(&f, 1, 2, &h);
  p = fx_command_waits(&f, 5, &b, 1, w);
  CHECK_EQ_U64(p.wait_count, 1);
  CHECK_EQ_U64(w[0].origin_slot, 1);
  CHECK_EQ_U64(w[0].origin_cursor, 2);
  CHECK_EQ_U64(p.cursor, 3);
  fx_drop(&f, &h, &b);
  fx_fini(&f);
}

/* Queuing an error on a stream never planned makes its bookkeeping (cursor 0). */
TEST(stream_error_push_makes_the_slot) {
  fixture_t f;
  cubert_error_t e;
  cubert_stream_plan_t p;
  fx_init(&f, MAX_STREAMS);
  cubert_error_set(&e, CUBERT_ERROR_LAUNCH_UNKNOWN, NULL, 0, "x");
  CHECK(!cubert__multi_stream_slot_exists(f.ms, 2));
  CHECK_OK(cubert__multi_stream_error_push(f.ms, 6, &e));
  CHECK(cubert__multi_stream_slot_exists(f.ms, 2));
  CHECK_EQ_U64(cubert__multi_stream_cursor(f.ms, 2), 0);
  CHECK_STATUS(cubert__multi_stream_plan(f.ms, 2, NULL, 0, true, &p, NULL),
               CUBERT_STATUS_SERVER_UNHEALTHY);
  CHECK_OK(cubert__multi_stream_plan(f.ms, 2, NULL, 0, false, &p, NULL));
  CHECK_EQ_U64(p.cursor, 1);
  fx_fini(&f);
}
