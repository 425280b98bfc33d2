/* SPDX-License-Identifier: MIT */
/* tests/unit/test_stream_edges.c: core/stream paths the main multi-stream tests leave
 * out: completions, the stream slot pool on its own, the analysis with repeated
 * origins, error counts at their limit, and queries on empty slots. */
#include "test.h"
#include "counting_allocator.h"
#include "cubert/driver/server.h"
#include "stream/stream.h"
#include "memory/handle_table.h"
#include "stream/stream_internal.h"
#include "cubert/driver/error.h"

typedef struct edge_fixture_t {
  counting_allocator_t c;
  cubert_allocator_t a;
  cubert_handle_table_t *table;
  cubert_multi_stream_t *ms;
} edge_fixture_t;

static void ef_init(edge_fixture_t *f, uint32_t max_streams) {
  cubert_multi_stream_options_t o;
  memset(f, 0, sizeof(*f));
  f->a = counting_allocator_initialize(&f->c);
  CHECK_OK(cubert__handle_table_create(f->a, 1024, 7, &f->table));
  cubert__multi_stream_options_initialize(&o);
  o.max_streams = max_streams;
  CHECK_OK(cubert__multi_stream_create(f->a, &o, &f->ms, NULL));
}

static void ef_fini(edge_fixture_t *f) {
  cubert__multi_stream_destroy(f->ms);
  f->ms = NULL;
  CHECK_EQ_U64(cubert__handle_table_live(f->table), 0);
  cubert__handle_table_destroy(f->table);
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
  cubert_stream_plan_t p;
  CHECK_OK(cubert__multi_stream_plan(f->ms, stream, b, n, true, &p, NULL));
  CHECK_OK(cubert__multi_stream_commit(f->ms, &p));
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

TEST(stream_error_count_saturates_at_u32_max) {
  edge_fixture_t f;
  cubert_error_t agg, one;
  ef_init(&f, 4);
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

/* ---- analysis ------------------------------------------------------------------------------- */

TEST(stream_analyze_repeated_origins_and_unknown_stream) {
  edge_fixture_t f;
  cubert_handle_t h[4];
  cubert_binding_t b[4];
  uint32_t origin[4];
  int i;
  ef_init(&f, 4);
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

TEST(stream_last_synced_without_out_cursor) {
  edge_fixture_t f;
  cubert_handle_t h;
  cubert_binding_t b;
  uint64_t cursor = 0;
  ef_init(&f, 4);
  b = ef_binding(&f, 2, &h);
  ef_command(&f, 2, NULL, 0);
  ef_command(&f, 1, &b, 1);
  CHECK(cubert__multi_stream_last_synced(f.ms, 1, 2, NULL));
  CHECK(cubert__multi_stream_last_synced(f.ms, 1, 2, &cursor));
  CHECK_EQ_U64(cursor, 1);
  ef_drop(&f, &h, &b);
  ef_fini(&f);
}

TEST(stream_queries_on_missing_slots) {
  edge_fixture_t f;
  uint64_t cursor = 99;
  ef_init(&f, 4);
  ef_command(&f, 1, NULL, 0);
  CHECK(!cubert__multi_stream_last_synced(NULL, 1, 0, &cursor));
  CHECK(!cubert__multi_stream_last_synced(f.ms, 3, 0, &cursor)); /* no slot */
  CHECK(!cubert__multi_stream_last_synced(f.ms, 1, 0, &cursor)); /* never synced */
  CHECK_EQ_U64(cursor, 99);
  CHECK_EQ_U64(cubert__multi_stream_synced_count(NULL, 1), 0);
  CHECK_EQ_U64(cubert__multi_stream_synced_count(f.ms, 3), 0);
  CHECK(!cubert__multi_stream_slot_exists(NULL, 1));
  ef_fini(&f);
}
