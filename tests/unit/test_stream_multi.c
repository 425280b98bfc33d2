/* SPDX-License-Identifier: MIT */
/* MultiStream over an event driver (core/stream/stream.h),
 * against the deterministic fake event driver. */
#include "test.h"
#include "counting_allocator.h"
#include "fake_event_backend.h"
#include "stream/stream.h"
#include "memory/handle_table.h"

#define MAX_STREAMS 4u /* the seed tests' MAX_STREAMS */

typedef struct fixture_t {
  counting_allocator_t c;
  cubert_allocator_t a;
  fake_event_backend_t fb;
  cubert_event_backend_t driver;
  cubert_handle_table_t *table;
  cubert_multi_stream_t *ms;
} fixture_t;

static void fx_init_ex(fixture_t *f, uint32_t max_streams, uint32_t gc_capacity,
                       int with_cursor) {
  cubert_multi_stream_options_t o;
  memset(f, 0, sizeof(*f));
  f->a = counting_allocator_initialize(&f->c);
  f->driver = fake_event_backend_initialize(&f->fb, with_cursor);
  CHECK_OK(cubert__handle_table_create(f->a, 1024, 7, &f->table));
  cubert__multi_stream_options_initialize(&o);
  o.max_streams = max_streams;
  o.gc_capacity = gc_capacity;
  CHECK_OK(cubert__multi_stream_create(f->a, &f->driver, f->table, &o, &f->ms, NULL));
}

static void fx_init(fixture_t *f, uint32_t max_streams) { fx_init_ex(f, max_streams, 8, 0); }

/* Tear down and check: nothing leaked (host memory, streams, events, ids). */
static void fx_fini(fixture_t *f) {
  cubert__multi_stream_destroy(f->ms);
  f->ms = NULL;
  CHECK_EQ_I64(f->fb.live_streams, 0);
  CHECK_EQ_I64(f->fb.live_events, 0);
  CHECK_EQ_U64(cubert__handle_table_live(f->table), 0);
  cubert__handle_table_destroy(f->table);
  fake_event_backend_destroy(&f->fb);
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

/* resolve + enqueue one op + resolve_end; returns the resolution. */
static cubert_resolved_streams_t fx_command(fixture_t *f, uint64_t stream,
                                            const cubert_binding_t *b, size_t n) {
  cubert_resolved_streams_t r;
  cubert_resolved_streams_t copy;
  CHECK_OK(cubert__multi_stream_resolve(f->ms, stream, b, n, true, &r, NULL));
  CHECK(r.stream != NULL);
  fake_event_backend_enqueue(&f->fb, r.stream, stream);
  copy = r;
  cubert__multi_stream_resolve_end(f->ms, &r);
  CHECK(r.stream == NULL); /* cleared */
  return copy;
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

/* ---- GC pinning (the guard drop) ------------------------------------ */

TEST(stream_cross_stream_binding_pinned_until_gc_event) {
  fixture_t f;
  cubert_handle_t h;
  cubert_binding_t b;
  cubert_memory_id_t id;
  cubert_resolved_streams_t r;
  fx_init(&f, MAX_STREAMS);
  b = fx_binding(&f, 1, 0, &h);
  id = h.memory;
  fx_command(&f, 1, NULL, 0);
  r = fx_command(&f, 2, &b, 1);
  CHECK_EQ_U64(r.pinned, 1);
  CHECK_EQ_U64(cubert__multi_stream_gc_pending(f.ms), 1);
  /* every user reference dropped: the pin alone keeps it non-free */
  fx_drop(&f, &h, &b);
  CHECK(!cubert__memory_id_is_free(f.table, id));
  CHECK_EQ_U64(cubert__multi_stream_gc_collect(f.ms), 0);
  CHECK(!cubert__memory_id_is_free(f.table, id));
  /* open the gate: the device runs everything */
  CHECK(fake_event_backend_run_all(&f.fb) > 0);
  CHECK_EQ_U64(cubert__multi_stream_gc_collect(f.ms), 1);
  CHECK(cubert__memory_id_is_free(f.table, id));
  CHECK_EQ_U64(cubert__multi_stream_gc_pending(f.ms), 0);
  fx_fini(&f);
}

TEST(stream_already_synced_cross_stream_binding_still_pinned) {
  fixture_t f;
  cubert_handle_t h1, h2;
  cubert_binding_t b1, b2;
  cubert_resolved_streams_t r;
  cubert_memory_id_t id;
  fx_init(&f, MAX_STREAMS);
  fx_command(&f, 1, NULL, 0);
  b1 = fx_binding(&f, 1, 1, &h1);
  r = fx_command(&f, 2, &b1, 1);
  CHECK_EQ_U64(r.waits, 1);
  CHECK(fake_event_backend_run_all(&f.fb) > 0);
  CHECK_EQ_U64(cubert__multi_stream_gc_collect(f.ms), 1);
  /* a second stream-1 buffer from before the synced point: no wait needed */
  b2 = fx_binding(&f, 1, 1, &h2);
  id = h2.memory;
  r = fx_command(&f, 2, &b2, 1);
  CHECK_EQ_U64(r.waits, 0);
  CHECK_EQ_U64(r.pinned, 1);
  fx_drop(&f, &h2, &b2);
  CHECK(!cubert__memory_id_is_free(f.table, id));
  CHECK_EQ_U64(cubert__multi_stream_gc_collect(f.ms), 0);
  CHECK(!cubert__memory_id_is_free(f.table, id));
  fake_event_backend_run_all(&f.fb);
  CHECK_EQ_U64(cubert__multi_stream_gc_collect(f.ms), 1);
  CHECK(cubert__memory_id_is_free(f.table, id));
  fx_drop(&f, &h1, &b1);
  fx_fini(&f);
}

TEST(stream_gc_never_before_event_and_exactly_once_after) {
  fixture_t f;
  cubert_handle_t h;
  cubert_binding_t b;
  cubert_resolved_streams_t r;
  uint32_t cur_slot = 2, gc_slot = MAX_STREAMS;
  fx_init(&f, MAX_STREAMS);
  b = fx_binding(&f, 1, 0, &h);
  r = fx_command(&f, 2, &b, 1);
  CHECK_EQ_U64(r.slot, cur_slot);
  CHECK(cubert__multi_stream_slot_exists(f.ms, gc_slot));
  /* the GC stream waits on the consumer's flush: it cannot pass it first */
  CHECK_EQ_U64(fake_event_backend_count_waits(&f.fb, gc_slot, cur_slot), 1);
  fake_event_backend_run(&f.fb, gc_slot, 100);
  CHECK_EQ_U64(cubert__multi_stream_gc_collect(f.ms), 0);
  CHECK_EQ_U64(cubert__memory_id_descriptor_count(f.table, h.memory), 3); /* h, b, pin */
  /* the consumer waits on stream 1's event: run stream 1 first, then it */
  fake_event_backend_run(&f.fb, 1, 100);
  fake_event_backend_run(&f.fb, cur_slot, 100);
  CHECK_EQ_U64(cubert__multi_stream_gc_collect(f.ms), 0); /* GC stream not run since */
  fake_event_backend_run(&f.fb, gc_slot, 100);
  CHECK_EQ_U64(cubert__multi_stream_gc_collect(f.ms), 1);
  CHECK_EQ_U64(cubert__memory_id_descriptor_count(f.table, h.memory), 2);
  CHECK_EQ_U64(cubert__multi_stream_gc_collect(f.ms), 0);
  CHECK_EQ_U64(cubert__memory_id_descriptor_count(f.table, h.memory), 2);
  fx_drop(&f, &h, &b);
  fx_fini(&f);
}

/* ---- cursors and waits --------------------------------------------------------- */

TEST(stream_cursor_advances_per_enqueue) {
  fixture_t f;
  uint64_t i;
  fx_init(&f, MAX_STREAMS);
  CHECK_EQ_U64(cubert__multi_stream_cursor(f.ms, 7), 0);
  for (i = 1; i <= 5; i++) CHECK_EQ_U64(fx_command(&f, 7, NULL, 0).cursor, i);
  CHECK_EQ_U64(cubert__multi_stream_cursor(f.ms, 7), 5);
  CHECK_EQ_U64(cubert__multi_stream_cursor(f.ms, 6), 0);
  CHECK_EQ_U64(f.fb.flushes, 0); /* nothing shared: no event at all */
  fx_fini(&f);
}

TEST(stream_same_stream_binding_needs_no_wait) {
  fixture_t f;
  cubert_handle_t h;
  cubert_binding_t b[2];
  cubert_resolved_streams_t r;
  fx_init(&f, MAX_STREAMS);
  b[0] = fx_binding(&f, 1, 0, &h);
  b[1] = b[0];
  r = fx_command(&f, 1, b, 2);
  CHECK_EQ_U64(r.waits, 0);
  CHECK_EQ_U64(r.pinned, 0);
  CHECK_EQ_U64(f.fb.waits, 0);
  CHECK_EQ_U64(f.fb.flushes, 0);
  CHECK_EQ_U64(cubert__multi_stream_gc_pending(f.ms), 0);
  CHECK(!cubert__multi_stream_slot_exists(f.ms, MAX_STREAMS)); /* no GC stream needed */
  CHECK_EQ_U64(cubert__memory_id_descriptor_count(f.table, h.memory), 2);
  CHECK_OK(cubert__binding_release(f.table, &b[0]));
  CHECK_OK(cubert__handle_release(f.table, &h));
  fx_fini(&f);
}

TEST(stream_bindings_from_two_other_streams_cause_two_waits) {
  fixture_t f;
  cubert_handle_t h[4];
  cubert_binding_t b[4];
  cubert_resolved_streams_t r;
  uint64_t flushes;
  int i;
  fx_init(&f, MAX_STREAMS);
  fx_command(&f, 1, NULL, 0);
  fx_command(&f, 2, NULL, 0);
  fx_command(&f, 3, NULL, 0);
  b[0] = fx_binding(&f, 2, 1, &h[0]);
  b[1] = fx_binding(&f, 3, 1, &h[1]);
  b[2] = fx_binding(&f, 2, 1, &h[2]);
  b[3] = fx_binding(&f, 1, 1, &h[3]);
  flushes = f.fb.flushes;
  r = fx_command(&f, 1, b, 4);
  CHECK_EQ_U64(r.waits, 2);
  CHECK_EQ_U64(r.pinned, 3);
  CHECK_EQ_U64(fake_event_backend_count_waits(&f.fb, 1, 2), 1);
  CHECK_EQ_U64(fake_event_backend_count_waits(&f.fb, 1, 3), 1);
  CHECK_EQ_U64(fake_event_backend_count_waits(&f.fb, 1, 1), 0);
  /* one flush per origin + consumer flush + GC flush */
  CHECK_EQ_U64(f.fb.flushes - flushes, 4);
  CHECK_EQ_U64(cubert__multi_stream_synced_count(f.ms, 1), 2);
  for (i = 0; i < 4; i++) fx_drop(&f, &h[i], &b[i]);
  fx_fini(&f);
}

TEST(stream_repeated_resolve_after_sync_needs_no_new_wait) {
  fixture_t f;
  cubert_handle_t h, h2;
  cubert_binding_t b, b2;
  uint64_t synced = 0;
  fx_init(&f, MAX_STREAMS);
  b = fx_binding(&f, 2, fx_command(&f, 2, NULL, 0).cursor, &h); /* written at cursor 1 */
  CHECK_EQ_U64(fx_command(&f, 1, &b, 1).waits, 1);
  CHECK_EQ_U64(fx_command(&f, 1, &b, 1).waits, 0);
  CHECK_EQ_U64(fx_command(&f, 1, &b, 1).waits, 0);
  CHECK_EQ_U64(fake_event_backend_count_waits(&f.fb, 1, 2), 1);
  CHECK_EQ_U64(fake_event_backend_count_waits(&f.fb, MAX_STREAMS, 1), 3); /* GC after each */
  /* stream 2 moves on and writes a new buffer: one new wait */
  b2 = fx_binding(&f, 2, fx_command(&f, 2, NULL, 0).cursor, &h2); /* cursor 2 */
  CHECK_EQ_U64(fx_command(&f, 1, &b2, 1).waits, 1);
  CHECK(cubert__multi_stream_last_synced(f.ms, 1, 2, &synced));
  CHECK_EQ_U64(synced, 2);
  CHECK_EQ_U64(fx_command(&f, 1, &b2, 1).waits, 0);
  CHECK_EQ_U64(fake_event_backend_count_waits(&f.fb, 1, 2), 2);
  fx_drop(&f, &h, &b);
  fx_drop(&f, &h2, &b2);
  fx_fini(&f);
}

TEST(stream_handle_cursor_from_backend) {
  fixture_t f;
  cubert_handle_t h;
  cubert_binding_t b;
  fx_init_ex(&f, MAX_STREAMS, 8, 1);
  fx_command(&f, 2, NULL, 0);
  b = fx_binding(&f, 2, 0, &h);
  CHECK_EQ_U64(fx_command(&f, 1, &b, 1).waits, 1); /* never synced: no lookup needed */
  CHECK_EQ_U64(f.fb.cursor_queries, 0);
  CHECK_EQ_U64(fx_command(&f, 1, &b, 1).waits, 0); /* synced at 1 >= looked-up 0 */
  CHECK_EQ_U64(f.fb.cursor_queries, 1);
  f.fb.cursor_override = 1;
  f.fb.cursor_value = UINT64_MAX; /* lookup failed: forces a wait */
  CHECK_EQ_U64(fx_command(&f, 1, &b, 1).waits, 1);
  CHECK_EQ_U64(fx_command(&f, 1, &b, 1).waits, 1);
  CHECK_EQ_U64(f.fb.cursor_queries, 3);
  fx_drop(&f, &h, &b);
  fx_fini(&f);
}

TEST(stream_slot_mapping_id_mod_max_streams) {
  fixture_t f;
  cubert_handle_t h;
  cubert_binding_t b;
  uint64_t synced = 0;
  cubert_resolved_streams_t r;
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
  CHECK(fake_event_backend_stream(&f.fb, 2) == NULL);
  /* distinct ids of one slot are still cross-stream: the slot waits on itself */
  b = fx_binding(&f, 1, 0, &h);
  r = fx_command(&f, 5, &b, 1);
  CHECK_EQ_U64(r.waits, 1);
  CHECK_EQ_U64(r.pinned, 1);
  CHECK_EQ_U64(fake_event_backend_count_waits(&f.fb, 1, 1), 1);
  CHECK(cubert__multi_stream_last_synced(f.ms, 5, 1, &synced));
  CHECK_EQ_U64(synced, 2);
  fx_drop(&f, &h, &b);
  fx_fini(&f);
}

TEST(stream_get_and_sync) {
  fixture_t f;
  void *s = NULL, *s2 = NULL;
  cubert_error_t err;
  fx_init(&f, MAX_STREAMS);
  CHECK_OK(cubert__multi_stream_sync(f.ms, 3, NULL)); /* never created: nothing to wait */
  CHECK_EQ_U64(f.fb.syncs, 0);
  CHECK_OK(cubert__multi_stream_stream(f.ms, 3, &s, NULL));
  CHECK_OK(cubert__multi_stream_stream(f.ms, 7, &s2, NULL));
  CHECK(s == s2 && s == (void *)fake_event_backend_stream(&f.fb, 3));
  CHECK_EQ_U64(f.fb.creates, 1);
  fake_event_backend_enqueue(&f.fb, s, 1);
  CHECK_OK(cubert__multi_stream_sync(f.ms, 3, NULL));
  CHECK_EQ_U64(f.fb.syncs, 1);
  CHECK_EQ_U64(fake_event_backend_stream(&f.fb, 3)->done, 2); /* op + record */
  f.fb.fail_sync_at = 1;
  CHECK_STATUS(cubert__multi_stream_sync(f.ms, 3, &err), CUBERT_STATUS_UNAVAILABLE);
  CHECK_EQ_U64(cubert_error_kind(&err), CUBERT_ERROR_DEVICE_LOST);
  f.fb.fail_flush_at = 1;
  CHECK_STATUS(cubert__multi_stream_sync(f.ms, 3, NULL), CUBERT_STATUS_UNAVAILABLE);
  CHECK_EQ_I64(f.fb.live_events, 0);
  CHECK_STATUS(cubert__multi_stream_stream(f.ms, 3, NULL, NULL), CUBERT_STATUS_INVALID_ARGUMENT);
  CHECK_STATUS(cubert__multi_stream_sync(NULL, 3, NULL), CUBERT_STATUS_INVALID_ARGUMENT);
  fx_fini(&f);
}

/* ---- per-stream error queue -------------------------------------------- */

TEST(stream_error_queue_drain_and_aggregate) {
  fixture_t f;
  cubert_error_t e1, e2, out;
  cubert_resolved_streams_t r;
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
  CHECK_STATUS(cubert__multi_stream_resolve(f.ms, 1, NULL, 0, true, &r, &out),
               CUBERT_STATUS_SERVER_UNHEALTHY);
  CHECK(cubert_error_has_kind(&out, CUBERT_ERROR_SERVER_UNHEALTHY));
  CHECK_EQ_U64(cubert__multi_stream_cursor(f.ms, 1), 1);
  /* ignore mode (fire-and-forget work) still resolves */
  CHECK_OK(cubert__multi_stream_resolve(f.ms, 1, NULL, 0, false, &r, NULL));
  cubert__multi_stream_resolve_end(f.ms, &r);
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

/* ---- GC back-pressure, GC thread path, registered tasks ------------------------------- */

TEST(stream_gc_full_queue_waits_for_oldest) {
  fixture_t f;
  cubert_handle_t h;
  cubert_binding_t b;
  fx_init_ex(&f, MAX_STREAMS, 2, 0);
  b = fx_binding(&f, 1, 0, &h);
  fx_command(&f, 2, &b, 1);
  fx_command(&f, 3, &b, 1);
  CHECK_EQ_U64(cubert__multi_stream_gc_pending(f.ms), 2);
  CHECK_EQ_U64(f.fb.syncs, 0);
  CHECK_EQ_U64(cubert__memory_id_descriptor_count(f.table, h.memory), 4);
  fx_command(&f, 2, &b, 1); /* full: blocks on the oldest, releases it */
  CHECK_EQ_U64(f.fb.syncs, 1);
  CHECK_EQ_U64(cubert__multi_stream_gc_pending(f.ms), 2);
  CHECK_EQ_U64(cubert__memory_id_descriptor_count(f.table, h.memory), 4);
  /* when one completed already, room is made without blocking */
  fake_event_backend_run_all(&f.fb);
  fx_command(&f, 3, &b, 1);
  CHECK_EQ_U64(f.fb.syncs, 1);
  CHECK_EQ_U64(cubert__multi_stream_gc_pending(f.ms), 1);
  CHECK_EQ_U64(cubert__memory_id_descriptor_count(f.table, h.memory), 3);
  fake_event_backend_run_all(&f.fb);
  CHECK_EQ_U64(cubert__multi_stream_gc_collect(f.ms), 1);
  CHECK_EQ_U64(cubert__memory_id_descriptor_count(f.table, h.memory), 2);
  fx_drop(&f, &h, &b);
  fx_fini(&f);
}

TEST(stream_gc_full_queue_failed_wait_is_queued) {
  fixture_t f;
  cubert_handle_t h;
  cubert_binding_t b;
  cubert_error_t out;
  fx_init_ex(&f, MAX_STREAMS, 1, 0);
  b = fx_binding(&f, 1, 0, &h);
  fx_command(&f, 2, &b, 1);
  f.fb.fail_sync_at = 1;
  fx_command(&f, 3, &b, 1);
  CHECK_EQ_U64(cubert__multi_stream_gc_pending(f.ms), 1);
  CHECK_EQ_U64(cubert__memory_id_descriptor_count(f.table, h.memory), 3);
  CHECK_EQ_U64(cubert__multi_stream_error_count(f.ms, 3), 1);
  CHECK_STATUS(cubert__multi_stream_error_drain(f.ms, 3, &out), CUBERT_STATUS_SERVER_UNHEALTHY);
  CHECK(cubert_error_has_kind(&out, CUBERT_ERROR_DEVICE_LOST));
  fx_drop(&f, &h, &b);
  fx_fini(&f);
}

TEST(stream_gc_take_for_gc_thread) {
  fixture_t f;
  cubert_handle_t h;
  cubert_binding_t b;
  cubert_stream_gc_task_t task, task2;
  fx_init(&f, MAX_STREAMS);
  CHECK(!cubert__multi_stream_gc_take(f.ms, &task));
  b = fx_binding(&f, 1, 0, &h);
  fx_command(&f, 2, &b, 1);
  fx_command(&f, 3, &b, 1);
  CHECK(cubert__multi_stream_gc_take(f.ms, &task));
  CHECK_EQ_U64(cubert__multi_stream_gc_pending(f.ms), 1);
  /* the server keeps going while the task is out */
  fx_command(&f, 2, &b, 1);
  CHECK_EQ_U64(cubert__memory_id_descriptor_count(f.table, h.memory), 5);
  f.fb.fail_sync_at = 1;
  CHECK_STATUS(cubert__stream_gc_task_wait(&task, NULL), CUBERT_STATUS_UNAVAILABLE);
  CHECK_EQ_U64(cubert__memory_id_descriptor_count(f.table, h.memory), 5); /* unchanged */
  CHECK_OK(cubert__stream_gc_task_wait(&task, NULL));
  cubert__stream_gc_task_release(&task);
  cubert__stream_gc_task_release(&task); /* cleared: no-op */
  CHECK_STATUS(cubert__stream_gc_task_wait(&task, NULL), CUBERT_STATUS_INVALID_ARGUMENT);
  CHECK_EQ_U64(cubert__memory_id_descriptor_count(f.table, h.memory), 4);
  /* an un-waited taken task can still be released (teardown) */
  CHECK(cubert__multi_stream_gc_take(f.ms, &task2));
  cubert__stream_gc_task_release(&task2);
  CHECK_EQ_U64(cubert__memory_id_descriptor_count(f.table, h.memory), 3);
  fx_drop(&f, &h, &b);
  fx_fini(&f);
}

static void count_drop(void *user) { ++*(int *)user; }

TEST(stream_gc_register_drops_after_event) {
  fixture_t f;
  void *s = NULL, *event = NULL;
  int dropped = 0;
  fx_init(&f, MAX_STREAMS);
  CHECK_OK(cubert__multi_stream_stream(f.ms, 1, &s, NULL));
  fake_event_backend_enqueue(&f.fb, s, 42);
  CHECK_OK(f.driver.vtable->flush(f.driver.self, s, &event, NULL));
  CHECK_STATUS(cubert__multi_stream_gc_register(f.ms, 1, NULL, count_drop, &dropped, NULL),
               CUBERT_STATUS_INVALID_ARGUMENT);
  CHECK_STATUS(cubert__multi_stream_gc_register(f.ms, 1, event, NULL, &dropped, NULL),
               CUBERT_STATUS_INVALID_ARGUMENT);
  CHECK_OK(cubert__multi_stream_gc_register(f.ms, 1, event, count_drop, &dropped, NULL));
  CHECK_EQ_U64(cubert__multi_stream_gc_collect(f.ms), 0);
  CHECK_EQ_I64(dropped, 0);
  fake_event_backend_run(&f.fb, 1, 1); /* the op, not yet the record */
  CHECK_EQ_U64(cubert__multi_stream_gc_collect(f.ms), 0);
  fake_event_backend_run(&f.fb, 1, 1);
  CHECK_EQ_U64(cubert__multi_stream_gc_collect(f.ms), 1);
  CHECK_EQ_I64(dropped, 1);
  CHECK_EQ_U64(cubert__multi_stream_gc_collect(f.ms), 0);
  CHECK_EQ_I64(dropped, 1);
  fx_fini(&f);
}

TEST(stream_gc_collect_out_of_order_completion) {
  fixture_t f;
  void *s1 = NULL, *s2 = NULL, *e1 = NULL, *e2 = NULL;
  int d1 = 0, d2 = 0;
  fx_init(&f, MAX_STREAMS);
  CHECK_OK(cubert__multi_stream_stream(f.ms, 1, &s1, NULL));
  CHECK_OK(cubert__multi_stream_stream(f.ms, 2, &s2, NULL));
  CHECK_OK(f.driver.vtable->flush(f.driver.self, s1, &e1, NULL));
  CHECK_OK(f.driver.vtable->flush(f.driver.self, s2, &e2, NULL));
  CHECK_OK(cubert__multi_stream_gc_register(f.ms, 1, e1, count_drop, &d1, NULL));
  CHECK_OK(cubert__multi_stream_gc_register(f.ms, 2, e2, count_drop, &d2, NULL));
  fake_event_backend_run(&f.fb, 2, 10);
  CHECK_EQ_U64(cubert__multi_stream_gc_collect(f.ms), 1);
  CHECK_EQ_I64(d1, 0);
  CHECK_EQ_I64(d2, 1);
  CHECK_EQ_U64(cubert__multi_stream_gc_pending(f.ms), 1);
  fake_event_backend_run(&f.fb, 1, 10);
  CHECK_EQ_U64(cubert__multi_stream_gc_collect(f.ms), 1);
  CHECK_EQ_I64(d1, 1);
  CHECK_EQ_I64(d2, 1);
  fx_fini(&f);
}

TEST(stream_destroy_releases_pending_and_open_resolution) {
  fixture_t f;
  cubert_handle_t h;
  cubert_binding_t b;
  cubert_resolved_streams_t r;
  cubert_memory_id_t id;
  fx_init(&f, MAX_STREAMS);
  b = fx_binding(&f, 1, 0, &h);
  id = h.memory;
  fx_command(&f, 2, &b, 1);
  CHECK_OK(cubert__multi_stream_resolve(f.ms, 3, &b, 1, true, &r, NULL)); /* left open */
  fx_drop(&f, &h, &b);
  CHECK(!cubert__memory_id_is_free(f.table, id));
  cubert__multi_stream_destroy(f.ms);
  f.ms = NULL;
  CHECK(cubert__memory_id_is_free(f.table, id));
  CHECK_EQ_U64(f.fb.syncs, 1); /* waited for the pending task's event */
  fx_fini(&f);
}

/* ---- failures: arguments, driver, allocation ---------------------------------------- */

TEST(stream_invalid_arguments) {
  fixture_t f;
  counting_allocator_t c;
  cubert_allocator_t a = counting_allocator_initialize(&c);
  cubert_multi_stream_t *ms = NULL;
  cubert_multi_stream_options_t o;
  cubert_event_backend_vtable_t vt;
  cubert_event_backend_t bad;
  cubert_resolved_streams_t r, r2;
  cubert_error_t err;
  cubert_handle_t h;
  cubert_binding_t b;
  fx_init(&f, MAX_STREAMS);
  /* create */
  CHECK_STATUS(cubert__multi_stream_create(a, NULL, f.table, NULL, &ms, NULL),
               CUBERT_STATUS_INVALID_ARGUMENT);
  CHECK_STATUS(cubert__multi_stream_create(a, &f.driver, NULL, NULL, &ms, NULL),
               CUBERT_STATUS_INVALID_ARGUMENT);
  CHECK_STATUS(cubert__multi_stream_create(a, &f.driver, f.table, NULL, NULL, NULL),
               CUBERT_STATUS_INVALID_ARGUMENT);
  vt = *f.driver.vtable;
  vt.event_completed = NULL;
  bad.vtable = &vt;
  bad.self = &f.fb;
  CHECK_STATUS(cubert__multi_stream_create(a, &bad, f.table, NULL, &ms, &err),
               CUBERT_STATUS_INVALID_ARGUMENT);
  CHECK_EQ_U64(cubert_error_kind(&err), CUBERT_ERROR_INVALID_ARGUMENT);
  cubert__multi_stream_options_initialize(&o);
  CHECK_EQ_U64(o.max_streams, 128);
  CHECK_EQ_U64(o.gc_capacity, 8);
  o.max_streams = 0;
  CHECK_STATUS(cubert__multi_stream_create(a, &f.driver, f.table, &o, &ms, NULL),
               CUBERT_STATUS_INVALID_ARGUMENT);
  o.max_streams = 256;
  CHECK_STATUS(cubert__multi_stream_create(a, &f.driver, f.table, &o, &ms, NULL),
               CUBERT_STATUS_INVALID_ARGUMENT);
  o.max_streams = 255;
  o.gc_capacity = 0;
  CHECK_STATUS(cubert__multi_stream_create(a, &f.driver, f.table, &o, &ms, NULL),
               CUBERT_STATUS_INVALID_ARGUMENT);
  CHECK(ms == NULL);
  o.gc_capacity = 1;
  CHECK_OK(cubert__multi_stream_create(a, &f.driver, f.table, &o, &ms, NULL));
  CHECK_EQ_U64(cubert__multi_stream_max_streams(ms), 255);
  cubert__multi_stream_destroy(ms);
  cubert__multi_stream_destroy(NULL);
  CHECK_EQ_I64(c.live_blocks, 0);
  counting_allocator_destroy(&c);
  /* resolve */
  CHECK_STATUS(cubert__multi_stream_resolve(NULL, 1, NULL, 0, true, &r, NULL),
               CUBERT_STATUS_INVALID_ARGUMENT);
  CHECK_STATUS(cubert__multi_stream_resolve(f.ms, 1, NULL, 0, true, NULL, NULL),
               CUBERT_STATUS_INVALID_ARGUMENT);
  CHECK_STATUS(cubert__multi_stream_resolve(f.ms, 1, NULL, 2, true, &r, NULL),
               CUBERT_STATUS_INVALID_ARGUMENT);
  CHECK(!cubert__multi_stream_slot_exists(f.ms, 1));
  CHECK_OK(cubert__multi_stream_resolve(f.ms, 1, NULL, 0, true, &r, NULL));
  CHECK_STATUS(cubert__multi_stream_resolve(f.ms, 2, NULL, 0, true, &r2, &err),
               CUBERT_STATUS_FAILED_PRECONDITION);
  CHECK_EQ_I64(err.status, CUBERT_STATUS_FAILED_PRECONDITION);
  /* a foreign resolution does not end the open one */
  r2 = r;
  r2.current = 9;
  cubert__multi_stream_resolve_end(f.ms, &r2);
  CHECK_STATUS(cubert__multi_stream_resolve(f.ms, 2, NULL, 0, true, &r2, NULL),
               CUBERT_STATUS_FAILED_PRECONDITION);
  cubert__multi_stream_resolve_end(f.ms, &r);
  cubert__multi_stream_resolve_end(f.ms, &r); /* nothing open: no-op */
  cubert__multi_stream_resolve_end(NULL, &r);
  /* a dead binding cannot be pinned: refused, nothing changed */
  b = fx_binding(&f, 2, 0, &h);
  fx_drop(&f, &h, &b);
  CHECK_STATUS(cubert__multi_stream_resolve(f.ms, 1, &b, 1, true, &r, &err),
               CUBERT_STATUS_INVALID_HANDLE);
  CHECK(!cubert__multi_stream_slot_exists(f.ms, 2));
  CHECK(!cubert__multi_stream_slot_exists(f.ms, MAX_STREAMS));
  CHECK_EQ_U64(cubert__multi_stream_cursor(f.ms, 1), 1);
  /* queries on NULL */
  CHECK_EQ_U64(cubert__multi_stream_cursor(NULL, 1), 0);
  CHECK_EQ_U64(cubert__multi_stream_analyze(NULL, 1, NULL, 0, NULL), 0);
  CHECK_EQ_U64(cubert__multi_stream_gc_collect(NULL), 0);
  CHECK_EQ_U64(cubert__multi_stream_gc_pending(NULL), 0);
  CHECK(!cubert__multi_stream_last_synced(f.ms, 1, 200, NULL));
  fx_fini(&f);
}

/* Snapshot of what a failed resolve must leave unchanged. */
typedef struct snapshot_t {
  uint64_t cursor[MAX_STREAMS];
  uint32_t synced[MAX_STREAMS];
  int exists[MAX_STREAMS + 1];
  int64_t live_streams, live_events;
  uint32_t pending;
} snapshot_t;

static void take_snapshot(fixture_t *f, snapshot_t *s) {
  uint32_t i;
  memset(s, 0, sizeof(*s));
  for (i = 0; i < MAX_STREAMS; i++) {
    s->cursor[i] = cubert__multi_stream_cursor(f->ms, i);
    s->synced[i] = cubert__multi_stream_synced_count(f->ms, i);
  }
  for (i = 0; i <= MAX_STREAMS; i++) s->exists[i] = cubert__multi_stream_slot_exists(f->ms, i);
  s->live_streams = f->fb.live_streams;
  s->live_events = f->fb.live_events;
  s->pending = cubert__multi_stream_gc_pending(f->ms);
}

static void check_snapshot(fixture_t *f, const snapshot_t *s) {
  snapshot_t now;
  take_snapshot(f, &now);
  CHECK(memcmp(&now, s, sizeof now) == 0);
}

TEST(stream_backend_failures_change_nothing) {
  /* fail each driver call a resolve makes: create (current, origin, GC),
   * flush (each origin), wait (each origin). */
  static const struct {
    int which; /* 0 create, 1 flush, 2 wait */
    uint32_t at;
  } cases[] = {{0, 1}, {0, 2}, {0, 3}, {1, 1}, {1, 2}, {2, 1}, {2, 2}};
  size_t k;
  for (k = 0; k < sizeof cases / sizeof cases[0]; k++) {
    fixture_t f;
    cubert_handle_t h[3];
    cubert_binding_t b[3];
    cubert_resolved_streams_t r;
    cubert_error_t err;
    snapshot_t s;
    int i;
    fx_init(&f, MAX_STREAMS);
    fx_command(&f, 2, NULL, 0); /* slot 2 exists, 3 and 1 and GC do not */
    b[0] = fx_binding(&f, 2, 1, &h[0]);
    b[1] = fx_binding(&f, 3, 0, &h[1]);
    b[2] = fx_binding(&f, 1, 0, &h[2]);
    take_snapshot(&f, &s);
    if (cases[k].which == 0) f.fb.fail_create_at = cases[k].at;
    if (cases[k].which == 1) f.fb.fail_flush_at = cases[k].at;
    if (cases[k].which == 2) f.fb.fail_wait_at = cases[k].at;
    CHECK_STATUS(cubert__multi_stream_resolve(f.ms, 1, b, 3, true, &r, &err),
                 CUBERT_STATUS_UNAVAILABLE);
    CHECK_EQ_U64(cubert_error_kind(&err), CUBERT_ERROR_DEVICE_LOST);
    check_snapshot(&f, &s);
    for (i = 0; i < 3; i++)
      CHECK_EQ_U64(cubert__memory_id_descriptor_count(f.table, h[i].memory), 2);
    /* and it works afterwards */
    r = fx_command(&f, 1, b, 3);
    CHECK_EQ_U64(r.waits, 2);
    CHECK_EQ_U64(r.pinned, 2);
    for (i = 0; i < 3; i++) fx_drop(&f, &h[i], &b[i]);
    fx_fini(&f);
  }
}

TEST(stream_resolve_end_failure_queues_error_and_unpins) {
  int which;
  for (which = 0; which < 4; which++) {
    fixture_t f;
    cubert_handle_t h;
    cubert_binding_t b;
    cubert_resolved_streams_t r;
    cubert_error_t out;
    fx_init(&f, MAX_STREAMS);
    b = fx_binding(&f, 1, 0, &h);
    CHECK_OK(cubert__multi_stream_resolve(f.ms, 2, &b, 1, true, &r, NULL));
    CHECK_EQ_U64(cubert__memory_id_descriptor_count(f.table, h.memory), 3);
    if (which == 0) f.fb.fail_flush_at = 1; /* consumer flush */
    if (which == 1) f.fb.fail_wait_at = 1;  /* GC stream wait */
    if (which == 2) f.fb.fail_flush_at = 2; /* GC flush */
    if (which == 3) {                       /* a driver that fills no record */
      f.fb.fail_flush_at = 1;
      f.fb.fail_without_record = 1;
    }
    cubert__multi_stream_resolve_end(f.ms, &r);
    CHECK_EQ_U64(cubert__multi_stream_gc_pending(f.ms), 0);
    CHECK_EQ_U64(cubert__memory_id_descriptor_count(f.table, h.memory), 2);
    CHECK_EQ_U64(cubert__multi_stream_error_count(f.ms, 2), 1);
    CHECK_STATUS(cubert__multi_stream_error_drain(f.ms, 2, &out), CUBERT_STATUS_SERVER_UNHEALTHY);
    CHECK(cubert_error_has_kind(&out, which == 3 ? CUBERT_ERROR_SERVER_GENERIC
                                                 : CUBERT_ERROR_DEVICE_LOST));
    CHECK_EQ_I64(f.fb.live_events, 0);
    fx_drop(&f, &h, &b);
    fx_fini(&f);
  }
}

/* Allocation-failure loop : fail the 1st, 2nd, ... allocating
 * call of a resolve that must create the current, two origin slots and the
 * GC stream and grow the pin buffer. Each run returns OK or
 * RESOURCE_EXHAUSTED with nothing changed, and nothing leaks. */
TEST(stream_resolve_allocation_failure_loop) {
  uint64_t n;
  int succeeded = 0;
  for (n = 1; n < 100 && !succeeded; n++) {
    fixture_t f;
    cubert_handle_t h[3];
    cubert_binding_t b[3];
    cubert_resolved_streams_t r;
    cubert_status_t st;
    snapshot_t s;
    int i;
    fx_init(&f, MAX_STREAMS);
    b[0] = fx_binding(&f, 1, 0, &h[0]);
    b[1] = fx_binding(&f, 2, 0, &h[1]);
    b[2] = fx_binding(&f, 3, 0, &h[2]);
    take_snapshot(&f, &s);
    counting_allocator_fail_at(&f.c, n, 0);
    st = cubert__multi_stream_resolve(f.ms, 3, b, 3, true, &r, NULL);
    if (st == CUBERT_STATUS_OK) {
      CHECK_EQ_U64(f.c.failures, 0);
      succeeded = 1;
      CHECK_EQ_U64(r.waits, 2);
      CHECK_EQ_U64(r.pinned, 2);
      cubert__multi_stream_resolve_end(f.ms, &r);
    } else {
      CHECK_STATUS(st, CUBERT_STATUS_RESOURCE_EXHAUSTED);
      CHECK_EQ_U64(f.c.failures, 1);
      check_snapshot(&f, &s);
      CHECK_EQ_U64(f.fb.flushes, 0);
      for (i = 0; i < 3; i++)
        CHECK_EQ_U64(cubert__memory_id_descriptor_count(f.table, h[i].memory), 2);
    }
    counting_allocator_fail_at(&f.c, 0, 0);
    for (i = 0; i < 3; i++) fx_drop(&f, &h[i], &b[i]);
    fx_fini(&f);
  }
  CHECK(succeeded);
  CHECK(n > 5); /* the loop really exercised several failure points */
}

TEST(stream_create_and_slot_allocation_failure_loop) {
  uint64_t n;
  int succeeded = 0;
  for (n = 1; n < 100 && !succeeded; n++) {
    counting_allocator_t c;
    cubert_allocator_t a = counting_allocator_initialize(&c);
    fake_event_backend_t fb;
    cubert_event_backend_t be = fake_event_backend_initialize(&fb, 0);
    cubert_handle_table_t *table = NULL;
    cubert_multi_stream_t *ms = NULL;
    cubert_error_t e;
    cubert_status_t st;
    CHECK_OK(cubert__handle_table_create(a, 16, 1, &table));
    counting_allocator_fail_at(&c, n, 0);
    st = cubert__multi_stream_create(a, &be, table, NULL, &ms, NULL);
    if (st == CUBERT_STATUS_OK) {
      if (c.failures == 0) {
        /* creation consumed no failure: fail the lazy slot creation next */
        cubert_error_set(&e, CUBERT_ERROR_LAUNCH_UNKNOWN, NULL, 0, "x");
        counting_allocator_fail_at(&c, 1, 0);
        CHECK_STATUS(cubert__multi_stream_error_push(ms, 1, &e), CUBERT_STATUS_RESOURCE_EXHAUSTED);
        CHECK(!cubert__multi_stream_slot_exists(ms, 1));
        CHECK_EQ_I64(fb.live_streams, 0);
        CHECK_OK(cubert__multi_stream_error_push(ms, 1, &e));
        CHECK_EQ_U64(cubert__multi_stream_error_count(ms, 1), 1);
        succeeded = 1;
      }
      cubert__multi_stream_destroy(ms);
    } else {
      CHECK_STATUS(st, CUBERT_STATUS_RESOURCE_EXHAUSTED);
      CHECK(ms == NULL);
    }
    CHECK_EQ_I64(fb.live_streams, 0);
    counting_allocator_fail_at(&c, 0, 0);
    cubert__handle_table_destroy(table);
    fake_event_backend_destroy(&fb);
    CHECK_EQ_I64(c.live_blocks, 0);
    CHECK_EQ_U64(c.bad_frees, 0);
    counting_allocator_destroy(&c);
  }
  CHECK(succeeded);
  CHECK(n > 5);
}

/* Persistent allocation failure after warm-up: steady-state resolves with
 * cross-stream bindings allocate nothing (pin buffers are reused). */
TEST(stream_steady_state_resolve_does_not_allocate) {
  fixture_t f;
  cubert_handle_t h[2];
  cubert_binding_t b[2];
  int i;
  fx_init_ex(&f, MAX_STREAMS, 2, 0);
  b[0] = fx_binding(&f, 1, 0, &h[0]);
  b[1] = fx_binding(&f, 2, 0, &h[1]);
  /* warm-up: fill the GC queue so every entry owns a pin buffer */
  for (i = 0; i < 4; i++) fx_command(&f, 3, b, 2);
  fake_event_backend_run_all(&f.fb);
  cubert__multi_stream_gc_collect(f.ms);
  counting_allocator_fail_at(&f.c, 1, 1);
  for (i = 0; i < 50; i++) {
    fx_command(&f, 3, b, 2);
    fx_command(&f, 1, b, 2);
    if (i % 3 == 0) {
      fake_event_backend_run_all(&f.fb);
      cubert__multi_stream_gc_collect(f.ms);
    }
  }
  CHECK_EQ_U64(f.c.failures, 0);
  counting_allocator_fail_at(&f.c, 0, 0);
  for (i = 0; i < 2; i++) fx_drop(&f, &h[i], &b[i]);
  fx_fini(&f);
}
