/* SPDX-License-Identifier: MIT */
/* tests/unit/test_stream_edges.c: core/stream paths the main multi-stream tests leave
 * out: completions, the stream slot pool on its own, every NULL and incomplete-vtable
 * refusal, drivers that misbehave within their contract's words (a stream that is
 * NULL, an error record whose status is OK), the analysis with repeated origins, the
 * pin buffer growing, pin counts at their limit, and queries on empty slots. */
#include "test.h"
#include "counting_allocator.h"
#include "fake_event_backend.h"
#include "cubert/driver/server.h"
#include "stream/stream.h"
#include "memory/handle_table.h"
#include "memory/handle_internal.h"
#include "stream/stream_internal.h"
#include "cubert/driver/error.h"

typedef struct edge_fixture_t {
  counting_allocator_t c;
  cubert_allocator_t a;
  fake_event_backend_t fb;
  cubert_event_backend_vtable_t vt; /* the fake's vtable, some entries replaced */
  cubert_event_backend_t driver;
  cubert_handle_table_t *table;
  cubert_multi_stream_t *ms;
} edge_fixture_t;

/* A multi-stream over the fake; `patch` may replace vtable entries first. */
static void ef_init(edge_fixture_t *f, uint32_t max_streams, uint32_t gc_capacity,
                    void (*patch)(cubert_event_backend_vtable_t *vt)) {
  cubert_multi_stream_options_t o;
  cubert_event_backend_t fake;
  memset(f, 0, sizeof(*f));
  f->a = counting_allocator_initialize(&f->c);
  fake = fake_event_backend_initialize(&f->fb, 0);
  f->vt = *fake.vtable;
  if (patch) patch(&f->vt);
  f->driver.vtable = &f->vt;
  f->driver.self = fake.self;
  CHECK_OK(cubert__handle_table_create(f->a, 1024, 7, &f->table));
  cubert__multi_stream_options_initialize(&o);
  o.max_streams = max_streams;
  o.gc_capacity = gc_capacity;
  CHECK_OK(cubert__multi_stream_create(f->a, &f->driver, f->table, &o, &f->ms, NULL));
}

static void ef_fini(edge_fixture_t *f) {
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

static cubert_binding_t ef_binding(edge_fixture_t *f, uint64_t stream, cubert_handle_t *h) {
  cubert_binding_t b;
  CHECK_OK(cubert__handle_create(f->table, 0, stream, 0, 10, h));
  CHECK_OK(cubert__handle_binding(f->table, h, &b));
  return b;
}

static void ef_drop(edge_fixture_t *f, cubert_handle_t *h, cubert_binding_t *b) {
  CHECK_OK(cubert__binding_release(f->table, b));
  CHECK_OK(cubert__handle_release(f->table, h));
}

static void ef_command(edge_fixture_t *f, uint64_t stream, const cubert_binding_t *b, size_t n) {
  cubert_resolved_streams_t r;
  CHECK_OK(cubert__multi_stream_resolve(f->ms, stream, b, n, true, &r, NULL));
  fake_event_backend_enqueue(&f->fb, r.stream, stream);
  cubert__multi_stream_resolve_end(f->ms, &r);
}

/* ---- completions --------------------------------------------------------------------- */

static cubert_status_t g_wait_result;
static cubert_status_t completion_wait_fn(cubert_completion_t *completion, uint64_t timeout_ns) {
  (void)completion;
  (void)timeout_ns;
  return g_wait_result;
}
static const cubert_completion_vtable_t k_completion_vt = {completion_wait_fn};
static const cubert_completion_vtable_t k_completion_no_wait_vt = {NULL};

TEST(stream_completion_set_done_and_wait) {
  TEST_REQUIRE_FEATURE(CUBERT_FEATURE_ERROR_REASONS);
  cubert_completion_t c;
  cubert_error_t err, out;
  cubert__completion_set_done(NULL, CUBERT_STATUS_OK, NULL); /* a no-op */
  CHECK_STATUS(cubert_completion_wait(NULL, 0, NULL), CUBERT_STATUS_INVALID_ARGUMENT);
  /* done with OK and no record */
  cubert__completion_set_done(&c, CUBERT_STATUS_OK, NULL);
  CHECK(c.vtable == NULL);
  CHECK_OK(cubert_completion_wait(&c, 0, &out));
  /* done with a failure and no record: the record carries the status */
  cubert__completion_set_done(&c, CUBERT_STATUS_OUT_OF_MEMORY, NULL);
  cubert_error_clear(&out);
  CHECK_STATUS(cubert_completion_wait(&c, 0, &out), CUBERT_STATUS_OUT_OF_MEMORY);
  CHECK_STATUS(out.status, CUBERT_STATUS_OUT_OF_MEMORY);
  CHECK_STATUS(cubert_completion_wait(&c, 0, NULL), CUBERT_STATUS_OUT_OF_MEMORY);
  /* done with a record: copied out */
  cubert_error_set_not_found(&err, "gone");
  cubert__completion_set_done(&c, CUBERT_STATUS_NOT_FOUND, &err);
  CHECK_STATUS(cubert_completion_wait(&c, 0, &out), CUBERT_STATUS_NOT_FOUND);
  CHECK(cubert_error_kind(&out) == CUBERT_ERROR_IO_NOT_FOUND);
  CHECK_EQ_STR(out.reason, "gone");
}

TEST(stream_completion_wait_through_the_vtable) {
  cubert_completion_t c;
  cubert_error_t out;
  cubert__completion_set_done(&c, CUBERT_STATUS_OK, NULL);
  c.vtable = &k_completion_vt;
  g_wait_result = CUBERT_STATUS_DEADLINE_EXCEEDED;
  CHECK_STATUS(cubert_completion_wait(&c, 5, &out), CUBERT_STATUS_DEADLINE_EXCEEDED);
  CHECK(cubert_error_kind(&out) == CUBERT_ERROR_DEADLINE_EXCEEDED);
  CHECK_EQ_U64(out.field[0], 5); /* the timeout */
  g_wait_result = CUBERT_STATUS_UNAVAILABLE; /* the wait itself failed */
  CHECK_STATUS(cubert_completion_wait(&c, 5, NULL), CUBERT_STATUS_UNAVAILABLE);
  g_wait_result = CUBERT_STATUS_OK; /* waited: the completion's own status */
  c.status = CUBERT_STATUS_NOT_FOUND;
  CHECK_STATUS(cubert_completion_wait(&c, 5, NULL), CUBERT_STATUS_NOT_FOUND);
  c.vtable = &k_completion_no_wait_vt; /* a vtable without wait: done already */
  c.status = CUBERT_STATUS_OK;
  CHECK_OK(cubert_completion_wait(&c, 5, NULL));
}

/* ---- the stream slot pool ----------------------------------------------------------- */

typedef struct pool_log_t {
  int created, destroyed;
  int fail;
  int cell[8];
} pool_log_t;

static cubert_status_t pool_create(void *context, uint32_t index, void **out_entry,
                                   cubert_error_t *out_error) {
  pool_log_t *log = (pool_log_t *)context;
  if (log->fail) return cubert_error_set(out_error, CUBERT_ERROR_DEVICE_LOST, NULL, 0, "no");
  log->created++;
  *out_entry = &log->cell[index];
  return CUBERT_STATUS_OK;
}

static void pool_destroy(void *context, uint32_t index, void *entry) {
  pool_log_t *log = (pool_log_t *)context;
  CHECK(entry == &log->cell[index]);
  log->destroyed++;
}

TEST(stream_pool_arguments_bounds_and_count) {
  counting_allocator_t c;
  cubert_allocator_t a = counting_allocator_initialize(&c);
  cubert_stream_pool_t pool;
  pool_log_t log;
  void *entry = NULL;
  bool created = true;
  cubert_error_t err;
  memset(&log, 0, sizeof log);
  CHECK_STATUS(cubert__stream_pool_initialize(NULL, a, 4, 1, pool_create, pool_destroy, &log),
               CUBERT_STATUS_INVALID_ARGUMENT);
  CHECK_STATUS(cubert__stream_pool_initialize(&pool, a, 4, 1, NULL, pool_destroy, &log),
               CUBERT_STATUS_INVALID_ARGUMENT);
  CHECK_STATUS(cubert__stream_pool_initialize(&pool, a, 4, 1, pool_create, NULL, &log),
               CUBERT_STATUS_INVALID_ARGUMENT);
  CHECK_STATUS(cubert__stream_pool_initialize(&pool, a, 0, 1, pool_create, pool_destroy, &log),
               CUBERT_STATUS_INVALID_ARGUMENT);
  CHECK_STATUS(cubert__stream_pool_initialize(&pool, a, UINT32_MAX, 1, pool_create, pool_destroy,
                                              &log),
               CUBERT_STATUS_INVALID_ARGUMENT); /* the total wraps */
  CHECK_EQ_U64(c.calls, 0);
  /* a pool left zeroed by a failed initialize: every call is harmless */
  CHECK(pool.entries == NULL);
  CHECK_EQ_U64(cubert__stream_pool_index(&pool, 9), 0);
  CHECK(cubert__stream_pool_get(&pool, 0) == NULL);
  CHECK_STATUS(cubert__stream_pool_get_or_create(&pool, 0, &entry, &created, &err),
               CUBERT_STATUS_OUT_OF_RANGE);
  CHECK(!created);
  cubert__stream_pool_remove(&pool, 0);
  CHECK_EQ_U64(cubert__stream_pool_count(&pool), 0);
  cubert__stream_pool_deinitialize(&pool);
  cubert__stream_pool_deinitialize(NULL);

  CHECK_OK(cubert__stream_pool_initialize(&pool, a, 4, 2, pool_create, pool_destroy, &log));
  CHECK_EQ_U64(cubert__stream_pool_size(&pool), 6);
  CHECK_EQ_U64(cubert__stream_pool_index(&pool, 9), 1);
  CHECK(cubert__stream_pool_get(&pool, 6) == NULL); /* out of range */
  CHECK_STATUS(cubert__stream_pool_get_or_create(&pool, 6, &entry, NULL, &err),
               CUBERT_STATUS_OUT_OF_RANGE);
  CHECK(cubert_error_kind(&err) == CUBERT_ERROR_OUT_OF_RANGE);
  cubert__stream_pool_remove(&pool, 6); /* out of range: nothing */
  cubert__stream_pool_remove(&pool, 2); /* empty slot: nothing */
  CHECK_EQ_I64(log.destroyed, 0);
  log.fail = 1;
  CHECK_STATUS(cubert__stream_pool_get_or_create(&pool, 1, &entry, &created, &err),
               CUBERT_STATUS_UNAVAILABLE);
  CHECK(!created);
  CHECK(cubert__stream_pool_get(&pool, 1) == NULL);
  log.fail = 0;
  CHECK_OK(cubert__stream_pool_get_or_create(&pool, 1, &entry, &created, NULL));
  CHECK(created);
  CHECK_OK(cubert__stream_pool_get_or_create(&pool, 3, &entry, NULL, NULL));
  CHECK_OK(cubert__stream_pool_get_or_create(&pool, cubert__stream_pool_special_index(&pool, 1),
                                             &entry, NULL, NULL));
  CHECK_EQ_U64(cubert__stream_pool_count(&pool), 2); /* regular slots only */
  cubert__stream_pool_remove(&pool, 1);
  CHECK_EQ_U64(cubert__stream_pool_count(&pool), 1);
  CHECK_EQ_I64(log.destroyed, 1);
  cubert__stream_pool_deinitialize(&pool);
  CHECK_EQ_I64(log.destroyed, 3);
  CHECK_EQ_I64(c.live_blocks, 0);
  counting_allocator_destroy(&c);
}

/* ---- creation refusals ------------------------------------------------------------------ */

TEST(stream_create_refuses_each_missing_vtable_entry) {
  edge_fixture_t f;
  cubert_multi_stream_t *ms = NULL;
  cubert_multi_stream_options_t o;
  cubert_event_backend_t bad;
  cubert_event_backend_vtable_t vt;
  cubert_error_t err;
  int k;
  ef_init(&f, 4, 8, NULL);
  bad.self = f.driver.self;
  bad.vtable = NULL;
  CHECK_STATUS(cubert__multi_stream_create(f.a, &bad, f.table, NULL, &ms, &err),
               CUBERT_STATUS_INVALID_ARGUMENT);
  for (k = 0; k < 7; k++) {
    vt = f.vt;
    switch (k) {
      case 0: vt.create_stream = NULL; break;
      case 1: vt.destroy_stream = NULL; break;
      case 2: vt.flush = NULL; break;
      case 3: vt.wait_event = NULL; break;
      case 4: vt.wait_event_sync = NULL; break;
      case 5: vt.event_completed = NULL; break;
      default: vt.release_event = NULL; break;
    }
    bad.vtable = &vt;
    cubert_error_clear(&err);
    CHECK_STATUS(cubert__multi_stream_create(f.a, &bad, f.table, NULL, &ms, &err),
                 CUBERT_STATUS_INVALID_ARGUMENT);
    CHECK(cubert_error_kind(&err) == CUBERT_ERROR_INVALID_ARGUMENT);
    CHECK(ms == NULL);
  }
  cubert__multi_stream_options_initialize(NULL); /* a no-op */
  cubert__multi_stream_options_initialize(&o);
  o.gc_capacity = 0x10000;
  CHECK_STATUS(cubert__multi_stream_create(f.a, &f.driver, f.table, &o, &ms, &err),
               CUBERT_STATUS_INVALID_ARGUMENT);
  CHECK_EQ_U64(err.field[1], 0x10000);
  CHECK(ms == NULL);
  /* no options: the defaults */
  CHECK_OK(cubert__multi_stream_create(f.a, &f.driver, f.table, NULL, &ms, NULL));
  CHECK_EQ_U64(cubert__multi_stream_max_streams(ms), CUBERT_STREAM_DEFAULT_MAX_STREAMS);
  cubert__multi_stream_destroy(ms);
  CHECK_EQ_U64(cubert__multi_stream_max_streams(NULL), 0);
  ef_fini(&f);
}

/* ---- drivers that return odd results ---------------------------------------------------- */

static cubert_status_t create_null_stream(void *self, uint32_t slot, void **out_stream,
                                          cubert_error_t *out_error) {
  (void)self;
  (void)slot;
  (void)out_error;
  *out_stream = NULL;
  return CUBERT_STATUS_OK;
}
static void patch_null_stream(cubert_event_backend_vtable_t *vt) { vt->create_stream = create_null_stream; }

TEST(stream_backend_returning_no_stream_is_an_internal_error) {
  edge_fixture_t f;
  void *s = (void *)&f;
  cubert_error_t err;
  int64_t blocks;
  ef_init(&f, 4, 8, patch_null_stream);
  blocks = f.c.live_blocks;
  CHECK_STATUS(cubert__multi_stream_stream(f.ms, 1, &s, &err), CUBERT_STATUS_INTERNAL);
  CHECK_STATUS(err.status, CUBERT_STATUS_INTERNAL);
  CHECK(s == (void *)&f); /* untouched */
  CHECK(!cubert__multi_stream_slot_exists(f.ms, 1));
  CHECK_EQ_I64(f.c.live_blocks, blocks); /* the slot's block was freed */
  ef_fini(&f);
}

/* A flush that fails with a record of depth 1 but status OK (a careless driver). */
static cubert_status_t (*g_real_flush)(void *, void *, void **, cubert_error_t *);
static int g_flush_fail_at;
static cubert_status_t flush_record_status_ok(void *self, void *stream, void **out_event,
                                              cubert_error_t *out_error) {
  if (g_flush_fail_at > 0 && --g_flush_fail_at == 0) {
    cubert_error_set(out_error, CUBERT_ERROR_DEVICE_LOST, NULL, 0, "flush lost");
    if (out_error) out_error->status = CUBERT_STATUS_OK;
    return CUBERT_STATUS_UNAVAILABLE;
  }
  return g_real_flush(self, stream, out_event, out_error);
}
static void patch_flush(cubert_event_backend_vtable_t *vt) {
  g_real_flush = vt->flush;
  vt->flush = flush_record_status_ok;
}

TEST(stream_resolve_end_failure_with_status_ok_record_is_queued) {
  edge_fixture_t f;
  cubert_handle_t h;
  cubert_binding_t b;
  cubert_resolved_streams_t r;
  cubert_error_t err;
  ef_init(&f, 4, 8, patch_flush);
  b = ef_binding(&f, 1, &h);
  ef_command(&f, 1, NULL, 0);
  CHECK_OK(cubert__multi_stream_resolve(f.ms, 2, &b, 1, true, &r, NULL));
  CHECK_EQ_U64(cubert__memory_id_descriptor_count(f.table, h.memory), 3); /* pinned */
  g_flush_fail_at = 1; /* resolve_end's first flush */
  cubert__multi_stream_resolve_end(f.ms, &r);
  CHECK_EQ_U64(cubert__memory_id_descriptor_count(f.table, h.memory), 2); /* unpinned at once */
  CHECK_EQ_U64(cubert__multi_stream_gc_pending(f.ms), 0);
  CHECK_EQ_U64(cubert__multi_stream_error_count(f.ms, 2), 1);
  CHECK_STATUS(cubert__multi_stream_error_peek(f.ms, 2, &err), CUBERT_STATUS_SERVER_UNHEALTHY);
  CHECK(cubert_error_has_kind(&err, CUBERT_ERROR_DEVICE_LOST));
  /* the next resolve on that stream is refused, without copying when out_error is NULL */
  CHECK_STATUS(cubert__multi_stream_resolve(f.ms, 2, NULL, 0, true, &r, NULL),
               CUBERT_STATUS_SERVER_UNHEALTHY);
  CHECK_STATUS(cubert__multi_stream_error_peek(f.ms, 2, NULL), CUBERT_STATUS_SERVER_UNHEALTHY);
  CHECK_STATUS(cubert__multi_stream_error_drain(f.ms, 2, NULL), CUBERT_STATUS_SERVER_UNHEALTHY);
  CHECK_EQ_U64(cubert__multi_stream_error_count(f.ms, 2), 0);
  ef_drop(&f, &h, &b);
  ef_fini(&f);
}

TEST(stream_error_count_saturates_at_u32_max) {
  edge_fixture_t f;
  cubert_error_t agg, one;
  ef_init(&f, 4, 8, NULL);
  cubert_error_clear(&agg);
  cubert_error_set_not_found(&one, "x");
  CHECK_STATUS(cubert_error_aggregate(&agg, &one), CUBERT_STATUS_SERVER_UNHEALTHY);
  agg.field[0] = (uint64_t)UINT32_MAX + 10u; /* an aggregate of more errors than a u32 counts */
  CHECK_OK(cubert__multi_stream_error_push(f.ms, 1, &agg));
  CHECK_EQ_U64(cubert__multi_stream_error_count(f.ms, 1), UINT32_MAX);
  CHECK_EQ_U64(cubert__multi_stream_error_count(NULL, 1), 0);
  CHECK_EQ_U64(cubert__multi_stream_error_count(f.ms, 2), 0); /* no slot */
  CHECK_STATUS(cubert__multi_stream_error_peek(NULL, 1, NULL), CUBERT_STATUS_INVALID_ARGUMENT);
  CHECK_OK(cubert__multi_stream_error_peek(f.ms, 2, NULL));
  ef_fini(&f);
}

/* ---- GC ------------------------------------------------------------------------------------ */

static void drop_count(void *user) { ++*(int *)user; }

TEST(stream_gc_collect_keeps_order_of_pending_entries) {
  edge_fixture_t f;
  void *s[3], *e[3];
  int dropped[3] = {0, 0, 0};
  cubert_stream_gc_task_t task;
  int i;
  ef_init(&f, 4, 8, NULL);
  for (i = 0; i < 3; i++) {
    CHECK_OK(cubert__multi_stream_stream(f.ms, (uint64_t)i + 1, &s[i], NULL));
    fake_event_backend_enqueue(&f.fb, s[i], 1);
    CHECK_OK(f.vt.flush(f.driver.self, s[i], &e[i], NULL));
    CHECK_OK(cubert__multi_stream_gc_register(f.ms, (uint64_t)i + 1, e[i], drop_count, &dropped[i],
                                              NULL));
  }
  fake_event_backend_run(&f.fb, 2, 10); /* only the middle entry completes */
  CHECK_EQ_U64(cubert__multi_stream_gc_collect(f.ms), 1);
  CHECK_EQ_I64(dropped[1], 1);
  CHECK_EQ_U64(cubert__multi_stream_gc_pending(f.ms), 2);
  /* the oldest is still first: taking it gives stream 1's event */
  CHECK(cubert__multi_stream_gc_take(f.ms, &task));
  CHECK(task.event_ == e[0]);
  CHECK_STATUS(cubert__stream_gc_task_wait(&task, NULL), CUBERT_STATUS_OK);
  cubert__stream_gc_task_release(&task);
  CHECK_EQ_I64(dropped[0], 1);
  CHECK(cubert__multi_stream_gc_take(f.ms, &task));
  CHECK(task.event_ == e[2]);
  cubert__stream_gc_task_release(&task);
  CHECK_EQ_I64(dropped[2], 1);
  ef_fini(&f);
}

TEST(stream_gc_register_and_task_arguments) {
  edge_fixture_t f;
  cubert_stream_gc_task_t task;
  void *s = NULL, *event = NULL;
  int dropped = 0;
  cubert_error_t err;
  ef_init(&f, 4, 8, NULL);
  CHECK_STATUS(cubert__multi_stream_gc_register(NULL, 1, &dropped, drop_count, &dropped, NULL),
               CUBERT_STATUS_INVALID_ARGUMENT);
  CHECK(!cubert__multi_stream_gc_take(NULL, &task));
  CHECK(!cubert__multi_stream_gc_take(f.ms, NULL));
  CHECK_STATUS(cubert__stream_gc_task_wait(NULL, NULL), CUBERT_STATUS_INVALID_ARGUMENT);
  memset(&task, 0, sizeof task);
  task.event_ = &dropped; /* an event but no driver */
  CHECK_STATUS(cubert__stream_gc_task_wait(&task, NULL), CUBERT_STATUS_INVALID_ARGUMENT);
  cubert__stream_gc_task_release(&task); /* no driver: nothing to do */
  cubert__stream_gc_task_release(NULL);
  CHECK_EQ_I64(dropped, 0);
  /* registering on a stream whose slot cannot be created: refused, the event not taken */
  CHECK_OK(cubert__multi_stream_stream(f.ms, 1, &s, NULL));
  CHECK_OK(f.vt.flush(f.driver.self, s, &event, NULL));
  f.fb.fail_create_at = 1;
  CHECK_STATUS(cubert__multi_stream_gc_register(f.ms, 3, event, drop_count, &dropped, &err),
               CUBERT_STATUS_UNAVAILABLE);
  CHECK_EQ_U64(cubert__multi_stream_gc_pending(f.ms), 0);
  CHECK(!cubert__multi_stream_slot_exists(f.ms, 3));
  f.vt.release_event(f.driver.self, event);
  CHECK_EQ_I64(dropped, 0);
  ef_fini(&f);
}

/* ---- analysis ------------------------------------------------------------------------------- */

TEST(stream_analyze_repeated_origins_and_unknown_stream) {
  edge_fixture_t f;
  cubert_handle_t h[4];
  cubert_binding_t b[4];
  uint32_t origin[4];
  int i;
  ef_init(&f, 4, 8, NULL);
  b[0] = ef_binding(&f, 2, &h[0]);
  b[1] = ef_binding(&f, 1, &h[1]); /* the current stream's own */
  b[2] = ef_binding(&f, 2, &h[2]); /* the same origin again */
  b[3] = ef_binding(&f, 3, &h[3]);
  ef_command(&f, 2, NULL, 0);
  ef_command(&f, 3, NULL, 0);
  /* stream 1 has no slot yet: every cross binding needs a sync, origins counted once */
  CHECK_EQ_U64(cubert__multi_stream_analyze(f.ms, 1, b, 4, origin), 2);
  CHECK_EQ_U64(origin[0], 2);
  CHECK_EQ_U64(origin[1], CUBERT_STREAM_NOT_SHARED);
  CHECK_EQ_U64(origin[2], 2);
  CHECK_EQ_U64(origin[3], 3);
  CHECK_EQ_U64(cubert__multi_stream_analyze(f.ms, 1, b, 4, NULL), 2); /* no out array */
  CHECK_EQ_U64(cubert__multi_stream_analyze(f.ms, 1, NULL, 0, NULL), 0);
  CHECK_EQ_U64(cubert__multi_stream_analyze(f.ms, 1, NULL, 3, origin), 0); /* refused */
  CHECK(!cubert__multi_stream_slot_exists(f.ms, 1)); /* analysis created nothing */
  CHECK(!cubert__multi_stream_slot_exists(NULL, 1));
  for (i = 0; i < 4; i++) ef_drop(&f, &h[i], &b[i]);
  ef_fini(&f);
}

/* ---- resolve: the pin buffer, pin limits, huge counts, ends ------------------------------------ */

TEST(stream_resolve_pin_buffer_grows_by_need_then_doubling) {
  edge_fixture_t f;
  cubert_handle_t h[7];
  cubert_binding_t b[7];
  cubert_resolved_streams_t r;
  size_t n;
  int i;
  /* one GC entry: each resolve_end hands the pin buffer to it and takes back the one it held */
  ef_init(&f, 4, 1, NULL);
  for (i = 0; i < 7; i++) b[i] = ef_binding(&f, 2, &h[i]);
  ef_command(&f, 2, NULL, 0);
  /* 5 pins: a new buffer of 5 (the need, above the minimum of 4); 6 pins: a new buffer of 6
   * (the first went to the GC entry); 7 pins: the first buffer back, doubled to 10 */
  for (n = 5; n <= 7; n++) {
    CHECK_OK(cubert__multi_stream_resolve(f.ms, 1, b, n, true, &r, NULL));
    CHECK_EQ_U64(r.pinned, n);
    CHECK_EQ_U64(r.waits, n == 5 ? 1 : 0); /* synced with stream 2 once */
    cubert__multi_stream_resolve_end(f.ms, &r);
    CHECK_EQ_U64(cubert__multi_stream_gc_pending(f.ms), 1);
  }
  CHECK_EQ_U64(cubert__memory_id_descriptor_count(f.table, h[6].memory), 3); /* still pinned */
  fake_event_backend_run_all(&f.fb);
  CHECK_EQ_U64(cubert__multi_stream_gc_collect(f.ms), 1);
  for (i = 0; i < 7; i++) CHECK_EQ_U64(cubert__memory_id_descriptor_count(f.table, h[i].memory), 2);
  for (i = 0; i < 7; i++) ef_drop(&f, &h[i], &b[i]);
  ef_fini(&f);
}

TEST(stream_resolve_pin_at_the_count_limit_is_an_overflow) {
  edge_fixture_t f;
  cubert_handle_t h;
  cubert_binding_t b;
  cubert_resolved_streams_t r;
  cubert_error_t err;
  ef_init(&f, 4, 8, NULL);
  b = ef_binding(&f, 2, &h);
  CHECK_OK(cubert__handle_table_debug_set_counts(f.table, h.memory, 1,
                                                 CUBERT_HANDLE_MAX_COUNT - 1));
  CHECK_STATUS(cubert__multi_stream_resolve(f.ms, 1, &b, 1, true, &r, &err),
               CUBERT_STATUS_OVERFLOW);
  CHECK(cubert_error_kind(&err) == CUBERT_ERROR_OVERFLOW);
  CHECK(!cubert__multi_stream_slot_exists(f.ms, 1)); /* rolled back */
  CHECK(!cubert__multi_stream_slot_exists(f.ms, 2));
  CHECK_EQ_U64(cubert__multi_stream_cursor(f.ms, 1), 0);
  CHECK_OK(cubert__handle_table_debug_set_counts(f.table, h.memory, 1, 1));
  ef_drop(&f, &h, &b);
  ef_fini(&f);
}

TEST(stream_resolve_more_bindings_than_u32_is_refused) {
  edge_fixture_t f;
  cubert_binding_t one;
  cubert_resolved_streams_t r;
  cubert_error_t err;
  size_t huge = (size_t)UINT32_MAX;
  huge += 1u; /* 2^32, or 0 where size_t has 32 bits */
  if (huge == 0) TEST_SKIP("size_t has 32 bits: no count above UINT32_MAX exists");
  ef_init(&f, 4, 8, NULL);
  memset(&one, 0, sizeof one);
  /* refused before a single binding is read */
  CHECK_STATUS(cubert__multi_stream_resolve(f.ms, 1, &one, huge, true, &r, &err),
               CUBERT_STATUS_OVERFLOW);
  CHECK(cubert_error_kind(&err) == CUBERT_ERROR_OVERFLOW);
  CHECK(!cubert__multi_stream_slot_exists(f.ms, 1));
  ef_fini(&f);
}

TEST(stream_resolve_end_ignores_foreign_or_missing_resolutions) {
  edge_fixture_t f;
  cubert_resolved_streams_t r, other;
  void *s = NULL;
  uint64_t cursor = 99;
  ef_init(&f, 4, 8, NULL);
  CHECK_OK(cubert__multi_stream_resolve(f.ms, 1, NULL, 0, true, &r, NULL));
  cubert__multi_stream_resolve_end(f.ms, NULL);
  other = r;
  other.slot = 3; /* same stream id, another slot */
  cubert__multi_stream_resolve_end(f.ms, &other);
  CHECK_STATUS(cubert__multi_stream_resolve(f.ms, 1, NULL, 0, true, &other, NULL),
               CUBERT_STATUS_FAILED_PRECONDITION); /* still open */
  cubert__multi_stream_resolve_end(f.ms, &r);
  /* queries */
  CHECK_STATUS(cubert__multi_stream_stream(f.ms, 1, NULL, NULL), CUBERT_STATUS_INVALID_ARGUMENT);
  CHECK_STATUS(cubert__multi_stream_stream(NULL, 1, &s, NULL), CUBERT_STATUS_INVALID_ARGUMENT);
  CHECK(!cubert__multi_stream_last_synced(NULL, 1, 0, &cursor));
  CHECK(!cubert__multi_stream_last_synced(f.ms, 3, 0, &cursor)); /* no slot */
  CHECK_EQ_U64(cursor, 99);
  CHECK_EQ_U64(cubert__multi_stream_synced_count(NULL, 1), 0);
  CHECK_EQ_U64(cubert__multi_stream_synced_count(f.ms, 3), 0);
  ef_fini(&f);
}

TEST(stream_last_synced_without_out_cursor) {
  edge_fixture_t f;
  cubert_handle_t h;
  cubert_binding_t b;
  uint64_t cursor = 0;
  ef_init(&f, 4, 8, NULL);
  b = ef_binding(&f, 2, &h);
  ef_command(&f, 2, NULL, 0);
  ef_command(&f, 1, &b, 1);
  CHECK(cubert__multi_stream_last_synced(f.ms, 1, 2, NULL));
  CHECK(cubert__multi_stream_last_synced(f.ms, 1, 2, &cursor));
  CHECK_EQ_U64(cursor, 1);
  fake_event_backend_run_all(&f.fb);
  ef_drop(&f, &h, &b);
  ef_fini(&f);
}
