/* SPDX-License-Identifier: MIT */
/* tests/unit/test_memory_pool_edges.c: the four pool kinds driven directly (their
 * interface in core/memory/memory_internal.h), on the paths the manager never takes:
 * alignment 0, requests whose padded size wraps, an owner id that died before its
 * location could be written (refused, the storage given back, nothing kept), lookups
 * at locations that hold nothing, and trims while memory is live. */
#include <string.h>

#include "test_memory_fixture.h"
#include "memory/handle_internal.h"
#include "memory/handle_table.h"
#include "memory/memory.h"
#include "cubert/layout.h"

typedef struct pool_fx_t {
  mm_fixture_t f;
  cubert_memory_env_t env;
} pool_fx_t;

static void pfx_init(pool_fx_t *p) {
  mmf_base(&p->f, 128 * MIB, 32);
  p->env.allocator = p->f.allocator;
  p->env.storage = p->f.storage.storage;
  p->env.table = p->f.table;
  p->env.flush_pending = false;
}

static void pfx_done(pool_fx_t *p) {
  CHECK_EQ_U64(cubert__handle_table_live(p->f.table), 0);
  mmf_done(&p->f);
}

/* An id as the manager makes them: owned from the start, one user handle. */
static cubert_memory_id_t owner_new(pool_fx_t *p) {
  cubert_memory_location_t unset;
  cubert_memory_id_t id;
  memset(&unset, 0, sizeof unset);
  CHECK_OK(cubert__memory_id_acquire_owned(p->f.table, unset, &id));
  return id;
}

/* An id that was alive once and is free now: no location can be written for it. */
static cubert_memory_id_t owner_dead(pool_fx_t *p) {
  cubert_memory_id_t id;
  CHECK_OK(cubert__memory_id_acquire(p->f.table, &id));
  CHECK_OK(cubert__memory_id_release_handle(p->f.table, id));
  return id;
}

static cubert_memory_location_t loc_at(uint8_t pool, uint16_t page, uint32_t slice) {
  cubert_memory_location_t l;
  l.pool = pool;
  l.init = 1;
  l.page = page;
  l.slice = slice;
  return l;
}

/* ---- direct ------------------------------------------------------------------------------ */

TEST(memory_pool_direct_edges) {
  pool_fx_t p;
  cubert_direct_pool_t pool;
  cubert_memory_pool_options_t o = cubert_memory_pool_direct(CUBERT_MEMORY_NONE);
  cubert_memory_slice_view_t view;
  cubert_memory_id_t a;
  cubert_error_t err;
  bool found = true;
  pfx_init(&p);
  cubert__direct_pool_initialize(&pool, &p.env, 0, &o, 0);
  CHECK_EQ_U64(pool.alignment, 1); /* alignment 0 counts as 1 */
  cubert__direct_pool_deinitialize(&pool);
  cubert__direct_pool_initialize(&pool, &p.env, 0, &o, 32);
  /* a padded size that wraps: nothing to reuse, too big to allocate */
  CHECK_OK(cubert__direct_pool_try_reserve(&pool, UINT64_MAX - 3, owner_dead(&p), &found, &err));
  CHECK(!found);
  CHECK_STATUS(cubert__direct_pool_alloc(&pool, UINT64_MAX - 3, owner_dead(&p), &err),
               CUBERT_STATUS_BUFFER_TOO_BIG);
  /* an owner that died: refused, the storage given back */
  CHECK_STATUS(cubert__direct_pool_alloc(&pool, 100, owner_dead(&p), &err), CUBERT_STATUS_INVALID_HANDLE);
  CHECK_EQ_U64(p.f.storage.live_allocs, 0);
  CHECK_EQ_U64(pool.slices.live, 0);
  /* a free slice of the right size, offered to a dead owner: refused, the slice stays free */
  a = owner_new(&p);
  CHECK_OK(cubert__direct_pool_alloc(&pool, 100, a, &err));
  cubert__direct_pool_trim(&pool); /* memory is live: nothing trimmed */
  CHECK_EQ_U64(pool.slices.count, 1);
  CHECK_OK(cubert__memory_id_release_handle(p.f.table, a));
  CHECK_STATUS(cubert__direct_pool_try_reserve(&pool, 100, owner_dead(&p), &found, &err),
               CUBERT_STATUS_INVALID_HANDLE);
  CHECK(!found);
  CHECK_EQ_U64(pool.slices.live, 1);
  /* lookups where nothing is: past the slots, and at the free slice */
  CHECK_STATUS(cubert__direct_pool_find(&pool, loc_at(0, 0, 5), a, &view, &err), CUBERT_STATUS_NOT_FOUND);
  CHECK_STATUS(cubert__direct_pool_find(&pool, loc_at(0, 0, 0), a, &view, &err), CUBERT_STATUS_NOT_FOUND);
  cubert__direct_pool_deinitialize(&pool);
  CHECK_EQ_U64(p.f.storage.live_allocs, 0);
  pfx_done(&p);
}

/* ---- exclusive ------------------------------------------------------------------------------ */

#if CUBERT_CONFIG_PAGED_POOLS && CUBERT_CONFIG_PERSISTENT_MEMORY /* calls internals that are not built without it */
TEST(memory_pool_exclusive_edges) {
  TEST_REQUIRE_FEATURE(CUBERT_FEATURE_PAGED_POOLS | CUBERT_FEATURE_PERSISTENT_MEMORY);
  pool_fx_t p;
  cubert_exclusive_pool_t pool;
  cubert_memory_pool_options_t o = cubert_memory_pool_exclusive(4096, CUBERT_MEMORY_NONE);
  cubert_memory_slice_view_t view;
  cubert_memory_id_t a, b;
  cubert_error_t err;
  bool found = true;
  pfx_init(&p);
  CHECK_OK(cubert__exclusive_pool_initialize(&pool, &p.env, 0, &o, 0, &err));
  CHECK_EQ_U64(pool.alignment, 1);
  cubert__exclusive_pool_deinitialize(&pool);
  o.max_alloc_size = UINT64_MAX; /* every size accepted: the rounding itself overflows */
  CHECK_OK(cubert__exclusive_pool_initialize(&pool, &p.env, 0, &o, 32, &err));
  CHECK_STATUS(cubert__exclusive_pool_alloc(&pool, UINT64_MAX - 3, owner_dead(&p), &err),
               CUBERT_STATUS_BUFFER_TOO_BIG);
  cubert__exclusive_pool_deinitialize(&pool);
  o.max_alloc_size = 4096;
  CHECK_OK(cubert__exclusive_pool_initialize(&pool, &p.env, 0, &o, 32, &err));
  CHECK_STATUS(cubert__exclusive_pool_alloc(&pool, 5000, owner_dead(&p), &err),
               CUBERT_STATUS_BUFFER_TOO_BIG); /* above the pool's max */
  CHECK_STATUS(cubert__exclusive_pool_alloc(&pool, 100, owner_dead(&p), &err),
               CUBERT_STATUS_INVALID_HANDLE);
  CHECK_EQ_U64(p.f.storage.live_allocs, 0);
  /* two pages; page 0 freed and aged, page 1 freed: reuse prefers the least aged */
  a = owner_new(&p);
  b = owner_new(&p);
  CHECK_OK(cubert__exclusive_pool_alloc(&pool, 100, a, &err));
  CHECK_OK(cubert__exclusive_pool_alloc(&pool, 100, b, &err));
  CHECK_OK(cubert__memory_id_release_handle(p.f.table, a));
  cubert__exclusive_pool_cleanup(&pool, 1, false); /* no period: a periodic check does nothing */
  CHECK_EQ_U64(pool.pages.live, 2);
  CHECK_OK(cubert__memory_id_release_handle(p.f.table, b));
  pool.pages.items[0].aux = 3;
  pool.pages.items[1].aux = 1;
  CHECK_STATUS(cubert__exclusive_pool_try_reserve(&pool, 100, owner_dead(&p), &found, &err),
               CUBERT_STATUS_INVALID_HANDLE); /* the best page found, the owner dead: refused */
  CHECK(!found);
  pool.pages.items[1].aux = 3; /* the refusal changed nothing; now page 0 is the best */
  pool.pages.items[0].aux = 1;
  a = owner_new(&p);
  CHECK_OK(cubert__exclusive_pool_try_reserve(&pool, 100, a, &found, &err));
  CHECK(found);
  CHECK(cubert__memory_id_equal(pool.pages.items[0].owner, a)); /* free_count 1 < 3 */
  /* lookups where nothing is: past the pages, a slice other than 0, a free page */
  CHECK_STATUS(cubert__exclusive_pool_find(&pool, loc_at(0, 9, 0), a, &view, &err), CUBERT_STATUS_NOT_FOUND);
  CHECK_STATUS(cubert__exclusive_pool_find(&pool, loc_at(0, 0, 1), a, &view, &err), CUBERT_STATUS_NOT_FOUND);
  CHECK_STATUS(cubert__exclusive_pool_find(&pool, loc_at(0, 1, 0), b, &view, &err), CUBERT_STATUS_NOT_FOUND);
  CHECK_OK(cubert__exclusive_pool_find(&pool, loc_at(0, 0, 0), a, &view, &err));
  /* an explicit cleanup frees the free page at once */
  cubert__exclusive_pool_cleanup(&pool, 2, true);
  CHECK_EQ_U64(pool.pages.live, 1);
  CHECK_EQ_U64(pool.pages.count, 1); /* the vacant last slot is dropped */
  b = owner_new(&p);
  CHECK_OK(cubert__exclusive_pool_alloc(&pool, 100, b, &err));
  CHECK_EQ_U64(pool.pages.count, 2);
  CHECK_OK(cubert__memory_id_release_handle(p.f.table, a));
  CHECK_OK(cubert__memory_id_release_handle(p.f.table, b));
  cubert__exclusive_pool_deinitialize(&pool);
  CHECK_EQ_U64(p.f.storage.live_allocs, 0);
  pfx_done(&p);
}
#endif /* CUBERT_CONFIG_PAGED_POOLS && CUBERT_CONFIG_PERSISTENT_MEMORY */

/* ---- persistent ------------------------------------------------------------------------------- */

#if CUBERT_CONFIG_PAGED_POOLS && CUBERT_CONFIG_PERSISTENT_MEMORY /* calls internals that are not built without it */
TEST(memory_pool_persistent_edges) {
  TEST_REQUIRE_FEATURE(CUBERT_FEATURE_PAGED_POOLS | CUBERT_FEATURE_PERSISTENT_MEMORY);
  pool_fx_t p;
  cubert_persistent_pool_t pool;
  cubert_memory_slice_view_t view;
  cubert_memory_id_t a;
  cubert_error_t err;
  bool found = true;
  pfx_init(&p);
  cubert__persistent_pool_initialize(&pool, &p.env, 0, 128 * MIB);
  CHECK_EQ_U64(pool.alignment, 1);
  cubert__persistent_pool_deinitialize(&pool);
  cubert__persistent_pool_initialize(&pool, &p.env, 32, 128 * MIB);
  CHECK(!cubert__persistent_pool_has_size(&pool, UINT64_MAX - 3));
  CHECK_OK(cubert__persistent_pool_try_reserve(&pool, UINT64_MAX - 3, owner_dead(&p), &found, &err));
  CHECK(!found);
  CHECK_STATUS(cubert__persistent_pool_alloc(&pool, UINT64_MAX - 3, owner_dead(&p), &err),
               CUBERT_STATUS_BUFFER_TOO_BIG);
  CHECK_STATUS(cubert__persistent_pool_alloc(&pool, 100, owner_dead(&p), &err),
               CUBERT_STATUS_INVALID_HANDLE);
  CHECK_EQ_U64(p.f.storage.live_allocs, 0);
  a = owner_new(&p);
  CHECK_OK(cubert__persistent_pool_alloc(&pool, 100, a, &err));
  cubert__persistent_pool_trim(&pool); /* live memory: kept */
  CHECK_EQ_U64(pool.slices.count, 1);
  CHECK_OK(cubert__memory_id_release_handle(p.f.table, a));
  cubert__persistent_pool_cleanup(&pool, false); /* only an explicit cleanup releases */
  CHECK_EQ_U64(pool.slices.live, 1);
  CHECK_STATUS(cubert__persistent_pool_try_reserve(&pool, 100, owner_dead(&p), &found, &err),
               CUBERT_STATUS_INVALID_HANDLE);
  CHECK(!found);
  CHECK_STATUS(cubert__persistent_pool_find(&pool, loc_at(255, 0, 4), a, &view, &err), CUBERT_STATUS_NOT_FOUND);
  CHECK_STATUS(cubert__persistent_pool_find(&pool, loc_at(255, 0, 0), a, &view, &err), CUBERT_STATUS_NOT_FOUND);
  /* a vacant slot is reused by the next allocation */
  cubert__persistent_pool_cleanup(&pool, true);
  CHECK_EQ_U64(pool.slices.live, 0);
  a = owner_new(&p);
  CHECK_OK(cubert__persistent_pool_alloc(&pool, 64, a, &err));
  CHECK_OK(cubert__memory_id_release_handle(p.f.table, a));
  cubert__persistent_pool_deinitialize(&pool);
  CHECK_EQ_U64(p.f.storage.live_allocs, 0);
  pfx_done(&p);
}
#endif /* CUBERT_CONFIG_PAGED_POOLS && CUBERT_CONFIG_PERSISTENT_MEMORY */

/* ---- sliced ------------------------------------------------------------------------------------ */

#if CUBERT_CONFIG_PAGED_POOLS && CUBERT_CONFIG_PERSISTENT_MEMORY /* calls internals that are not built without it */
TEST(memory_pool_sliced_edges) {
  TEST_REQUIRE_FEATURE(CUBERT_FEATURE_PAGED_POOLS | CUBERT_FEATURE_PERSISTENT_MEMORY);
  pool_fx_t p;
  cubert_sliced_pool_t pool;
  cubert_memory_pool_options_t o = cubert_memory_pool_sliced(4096, CUBERT_MEMORY_NONE, CUBERT_MEMORY_NONE);
  cubert_memory_slice_view_t view;
  cubert_memory_id_t a;
  cubert_error_t err;
  bool found = true;
  pfx_init(&p);
  o.page_size = 0;
  CHECK_STATUS(cubert__sliced_pool_initialize(&pool, &p.env, 0, &o, 32, 0, &err),
               CUBERT_STATUS_CONFIG_INVALID);
  CHECK(cubert_error_kind(&err) == CUBERT_ERROR_CONFIG_ZERO_SIZE);
  o.page_size = 4096;
  CHECK_OK(cubert__sliced_pool_initialize(&pool, &p.env, 0, &o, 0, 0, &err));
  CHECK_EQ_U64(pool.alignment, 1);
  cubert__sliced_pool_deinitialize(&pool);
  /* a cap of 2^64 - 1 bytes with a 4 KiB page: the page count is limited to the maximum */
  o.max_pool_size = UINT64_MAX - 1;
  CHECK_OK(cubert__sliced_pool_initialize(&pool, &p.env, 0, &o, 32, 0, &err));
  CHECK_EQ_U64(pool.max_pages, CUBERT_MEMORY_MAX_PAGES);
  cubert__sliced_pool_deinitialize(&pool);
  o.max_pool_size = CUBERT_MEMORY_NONE;
  CHECK_OK(cubert__sliced_pool_initialize(&pool, &p.env, 0, &o, 32, 0, &err));
  CHECK_OK(cubert__sliced_pool_try_reserve(&pool, UINT64_MAX - 3, owner_dead(&p), &found, &err));
  CHECK(!found);
  CHECK_STATUS(cubert__sliced_pool_alloc(&pool, UINT64_MAX - 3, owner_dead(&p), &err),
               CUBERT_STATUS_BUFFER_TOO_BIG);
  CHECK_STATUS(cubert__sliced_pool_alloc(&pool, 100, owner_dead(&p), &err), CUBERT_STATUS_INVALID_HANDLE);
  CHECK_EQ_U64(p.f.storage.live_allocs, 0);
  CHECK_EQ_U64(pool.pages_live, 0);
  a = owner_new(&p);
  CHECK_OK(cubert__sliced_pool_alloc(&pool, 100, a, &err));
  /* a free slice that fits, offered to a dead owner: refused */
  CHECK_STATUS(cubert__sliced_pool_try_reserve(&pool, 100, owner_dead(&p), &found, &err),
               CUBERT_STATUS_INVALID_HANDLE);
  CHECK(!found);
  /* lookups where nothing is: past the pages, past the nodes, a node of another page */
  CHECK_STATUS(cubert__sliced_pool_find(&pool, loc_at(0, 3, 0), a, &view, &err), CUBERT_STATUS_NOT_FOUND);
  CHECK_STATUS(cubert__sliced_pool_find(&pool, loc_at(0, 0, 999), a, &view, &err), CUBERT_STATUS_NOT_FOUND);
  pool.nodes[0].page = 1; /* a node claimed by page 1 is not page 0's */
  CHECK_STATUS(cubert__sliced_pool_find(&pool, loc_at(0, 0, 0), a, &view, &err), CUBERT_STATUS_NOT_FOUND);
  pool.nodes[0].page = 0;
  CHECK_OK(cubert__memory_id_release_handle(p.f.table, a));
  cubert__sliced_pool_deinitialize(&pool);
  CHECK_EQ_U64(p.f.storage.live_allocs, 0);
  pfx_done(&p);
}

TEST(memory_pool_sliced_vacant_pages_sizes_and_bookkeeping_failures) {
  TEST_REQUIRE_FEATURE(CUBERT_FEATURE_PAGED_POOLS | CUBERT_FEATURE_PERSISTENT_MEMORY);
  pool_fx_t p;
  cubert_sliced_pool_t pool;
  cubert_memory_pool_options_t o = cubert_memory_pool_sliced(4096, CUBERT_MEMORY_NONE, CUBERT_MEMORY_NONE);
  cubert_memory_slice_view_t view;
  cubert_sliced_block_t blocks[1];
  cubert_memory_id_t a, b, c;
  cubert_error_t err;
  bool found = true;
  pfx_init(&p);
  /* a page of nearly 2^64 bytes: accepting a size above the slice limit would need
   * 5 * waste, which does not fit: refused */
  o.page_size = UINT64_MAX - 63;
  o.max_slice_size = 64;
  CHECK_OK(cubert__sliced_pool_initialize(&pool, &p.env, 0, &o, 32, 0, &err));
  CHECK(!cubert__sliced_pool_accept(&pool, 128));
  cubert__sliced_pool_deinitialize(&pool);
  o = cubert_memory_pool_sliced(4096, CUBERT_MEMORY_NONE, CUBERT_MEMORY_NONE);
  CHECK_OK(cubert__sliced_pool_initialize(&pool, &p.env, 0, &o, 32, 1, &err));
  /* more than a page */
  CHECK_OK(cubert__sliced_pool_try_reserve(&pool, 5000, owner_dead(&p), &found, &err));
  CHECK(!found);
  CHECK_STATUS(cubert__sliced_pool_alloc(&pool, 5000, owner_dead(&p), &err), CUBERT_STATUS_BUFFER_TOO_BIG);
  /* the bookkeeping cannot grow: nothing allocated, nothing changed */
  counting_allocator_fail_at(&p.f.counting, 1, 0);
  CHECK_STATUS(cubert__sliced_pool_alloc(&pool, 100, owner_dead(&p), &err),
               CUBERT_STATUS_RESOURCE_EXHAUSTED);
  counting_allocator_fail_at(&p.f.counting, 2, 0);
  CHECK_STATUS(cubert__sliced_pool_alloc(&pool, 100, owner_dead(&p), &err),
               CUBERT_STATUS_RESOURCE_EXHAUSTED);
  CHECK_EQ_U64(p.f.storage.live_allocs, 0);
  CHECK_EQ_U64(pool.pages_live, 0);
  /* three slices on page 0 (a fills it), one on page 1 */
  a = owner_new(&p);
  CHECK_OK(cubert__sliced_pool_alloc(&pool, 4096, a, &err));
  b = owner_new(&p);
  CHECK_OK(cubert__sliced_pool_alloc(&pool, 1024, b, &err));
  CHECK_EQ_U64(pool.pages_live, 2);
  /* a page's blocks into a short array: the count of all, the first written */
  c = owner_new(&p);
  CHECK_OK(cubert__sliced_pool_try_reserve(&pool, 1024, c, &found, &err));
  CHECK(found);
  CHECK_EQ_U64(cubert__sliced_pool_page_blocks(&pool, 1, blocks, 1), 3);
  CHECK_EQ_U64(blocks[0].offset, 0);
  CHECK_EQ_U64(cubert__sliced_pool_page_blocks(&pool, 7, blocks, 1), 0); /* no such page */
  /* page 0 released by an explicit cleanup: its slot is vacant */
  CHECK_OK(cubert__memory_id_release_handle(p.f.table, a));
  cubert__sliced_pool_cleanup(&pool, false); /* only explicit cleanups release pages */
  CHECK_EQ_U64(pool.pages_live, 2);
  cubert__sliced_pool_cleanup(&pool, true);
  CHECK_EQ_U64(pool.pages_live, 1);
  CHECK_EQ_U64(cubert__sliced_pool_page_blocks(&pool, 0, blocks, 1), 0);
  CHECK_STATUS(cubert__sliced_pool_find(&pool, loc_at(0, 0, 0), a, &view, &err), CUBERT_STATUS_NOT_FOUND);
  cubert__sliced_pool_coalesce(&pool); /* skips the vacant slot */
  CHECK_EQ_U64(cubert__sliced_pool_page_blocks(&pool, 1, blocks, 1), 3);
  /* with one poll per reserve, two released oldest slices: one is detected per call */
  CHECK_OK(cubert__memory_id_release_handle(p.f.table, b));
  CHECK_OK(cubert__memory_id_release_handle(p.f.table, c));
  a = owner_new(&p);
  CHECK_OK(cubert__sliced_pool_try_reserve(&pool, 64, a, &found, &err));
  CHECK(found);
  CHECK_OK(cubert__memory_id_release_handle(p.f.table, a));
  cubert__sliced_pool_deinitialize(&pool);
  CHECK_EQ_U64(p.f.storage.live_allocs, 0);
  pfx_done(&p);
}
#endif /* CUBERT_CONFIG_PAGED_POOLS && CUBERT_CONFIG_PERSISTENT_MEMORY */

/* ---- the handle table ------------------------------------------------------------------------ */

TEST(handle_table_forged_ids_full_table_and_dead_owned_ids) {
  counting_allocator_t ca;
  cubert_handle_table_t *t = NULL;
  cubert_memory_id_t ids[4], forged, extra;
  cubert_memory_location_t unset, loc;
  uint32_t alive = 99, dead_owned = 99;
  int i;
  memset(&unset, 0, sizeof unset);
  CHECK_OK(cubert__handle_table_create(counting_allocator_initialize(&ca), 4, 7, &t));
  CHECK_STATUS(cubert__memory_id_acquire(t, NULL), CUBERT_STATUS_INVALID_ARGUMENT);
  CHECK_STATUS(cubert__memory_id_acquire_owned(t, unset, NULL), CUBERT_STATUS_INVALID_ARGUMENT);
  for (i = 0; i < 4; i++) CHECK_OK(cubert__memory_id_acquire(t, &ids[i]));
  CHECK_STATUS(cubert__memory_id_acquire(t, &extra), CUBERT_STATUS_OUT_OF_RANGE); /* full */
  /* an index beyond max_slots with the table's tag: never alive */
  forged = ids[0];
  forged.index += 100;
  CHECK(!cubert__memory_id_is_alive(t, forged));
  CHECK(cubert__memory_id_is_free(t, forged));
  CHECK(!cubert__memory_id_is_alive(NULL, ids[0]));
  CHECK(!cubert__memory_id_is_free(NULL, ids[0]));
  CHECK_STATUS(cubert__memory_id_location(t, ids[0], NULL), CUBERT_STATUS_INVALID_ARGUMENT);
  CHECK_STATUS(cubert__memory_id_location(NULL, ids[0], &loc), CUBERT_STATUS_INVALID_ARGUMENT);
  /* a dead id still owned (a pool holds it) cannot be owned again */
  CHECK_OK(cubert__memory_id_release_handle(t, ids[3]));
  CHECK_OK(cubert__memory_id_acquire_owned(t, unset, &ids[3]));
  CHECK_OK(cubert__memory_id_release_handle(t, ids[3]));
  CHECK_STATUS(cubert__memory_id_set_owned(t, ids[3], true), CUBERT_STATUS_INVALID_HANDLE);
  CHECK_OK(cubert__handle_table_debug_check(t, NULL, NULL)); /* outs are optional */
  CHECK_OK(cubert__handle_table_debug_check(t, &alive, &dead_owned));
  CHECK_EQ_U64(alive, 3);
  CHECK_EQ_U64(dead_owned, 1);
  CHECK_OK(cubert__memory_id_disown(t, ids[3]));
  for (i = 0; i < 3; i++) CHECK_OK(cubert__memory_id_release_handle(t, ids[i]));
  CHECK_EQ_U64(cubert__handle_table_live(t), 0);
  cubert__handle_table_destroy(t);
  CHECK_EQ_I64(ca.live_blocks, 0);
  counting_allocator_destroy(&ca);
}

/* ---- strides and copy plans ----------------------------------------------------------------------- */

/* A rank-2 row-major view: shape {rows, cols}, row stride `pitch` (in elements). */
static void view2(uint64_t *shape, uint64_t *strides, uint64_t rows, uint64_t cols, uint64_t pitch) {
  shape[0] = rows;
  shape[1] = cols;
  strides[0] = pitch;
  strides[1] = 1;
}

TEST(layout_copy_plan_byte_counts_that_overflow) {
  cubert_copy_plan_t plan;
  cubert_error_t err;
  uint64_t shape[2], strides[2];
  view2(shape, strides, 2, 4, 4);
  CHECK(!cubert_strides_is_contiguous_row_major(2, shape, NULL));
  CHECK(!cubert_strides_is_pitched_row_major(2, shape, NULL));
  memset(&plan, 0x5a, sizeof plan);
  /* pitched rows: the row width in bytes overflows */
  view2(shape, strides, 2, (uint64_t)1 << 62, ((uint64_t)1 << 62) + 8);
  CHECK_STATUS(cubert_copy_plan(2, shape, strides, 8, &plan, &err), CUBERT_STATUS_OVERFLOW);
  /* pitched rows: the pitch in bytes overflows */
  view2(shape, strides, 2, 4, (uint64_t)1 << 62);
  CHECK_STATUS(cubert_copy_plan(2, shape, strides, 8, &plan, &err), CUBERT_STATUS_OVERFLOW);
  /* pitched rows: the span (rows - 1) * pitch overflows */
  view2(shape, strides, 5, 4, (uint64_t)1 << 61);
  CHECK_STATUS(cubert_copy_plan(2, shape, strides, 2, &plan, &err), CUBERT_STATUS_OVERFLOW);
  /* pitched rows: the bytes copied (width * rows) overflow */
  view2(shape, strides, (uint64_t)1 << 31, (uint64_t)1 << 30, ((uint64_t)1 << 30) + 1);
  CHECK_STATUS(cubert_copy_plan(2, shape, strides, 8, &plan, &err), CUBERT_STATUS_OVERFLOW);
  /* pitched rows: the span (one pitch + the last row's width) passes 2^64 */
  view2(shape, strides, 2, (uint64_t)1 << 59, (uint64_t)3 << 59);
  CHECK_STATUS(cubert_copy_plan(2, shape, strides, 8, &plan, &err), CUBERT_STATUS_OVERFLOW);
  /* contiguous: the element count, then the bytes, overflow */
  view2(shape, strides, (uint64_t)1 << 40, (uint64_t)1 << 40, (uint64_t)1 << 40);
  CHECK_STATUS(cubert_copy_plan(2, shape, strides, 1, &plan, &err), CUBERT_STATUS_OVERFLOW);
  view2(shape, strides, (uint64_t)1 << 30, (uint64_t)1 << 30, (uint64_t)1 << 30);
  CHECK_STATUS(cubert_copy_plan(2, shape, strides, (uint64_t)1 << 8, &plan, &err),
               CUBERT_STATUS_OVERFLOW);
  CHECK(cubert_error_kind(&err) == CUBERT_ERROR_OVERFLOW);
  CHECK_EQ_U64(plan.height, 0x5a5a5a5a5a5a5a5aull); /* untouched by every failure */
}

/* ---- vacant slots in the middle ----------------------------------------------------------------- */

TEST(memory_pool_direct_vacant_slot_skipped_and_reused) {
  pool_fx_t p;
  cubert_direct_pool_t pool;
  cubert_memory_pool_options_t o = cubert_memory_pool_direct(300);
  cubert_memory_id_t a, b, c, d;
  cubert_error_t err;
  bool found = true;
  pfx_init(&p);
  cubert__direct_pool_initialize(&pool, &p.env, 0, &o, 32);
  a = owner_new(&p);
  b = owner_new(&p);
  c = owner_new(&p);
  CHECK_OK(cubert__direct_pool_alloc(&pool, 96, a, &err));
  CHECK_OK(cubert__direct_pool_alloc(&pool, 64, b, &err));
  CHECK_OK(cubert__direct_pool_alloc(&pool, 96, c, &err)); /* 256 reserved */
  CHECK_OK(cubert__memory_id_release_handle(p.f.table, b));
  cubert__direct_pool_cleanup(&pool, true); /* slot 1 vacant, slot 2 still live */
  CHECK_EQ_U64(pool.slices.count, 3);
  cubert__direct_pool_cleanup(&pool, true); /* a second pass skips the vacant slot */
  CHECK_EQ_U64(pool.slices.live, 2);
  CHECK_OK(cubert__direct_pool_try_reserve(&pool, 64, owner_dead(&p), &found, &err)); /* skips it */
  CHECK(!found);
  /* a is free: going over reclaim_at (192 + 128 > 300) releases it (the vacant slot is passed
   * over), and the new slice takes the first vacant slot */
  CHECK_OK(cubert__memory_id_release_handle(p.f.table, a));
  d = owner_new(&p);
  CHECK_OK(cubert__direct_pool_alloc(&pool, 128, d, &err));
  CHECK_EQ_U64(pool.slices.count, 3);
  CHECK_EQ_U64(pool.slices.live, 2);
  CHECK(cubert__memory_id_equal(pool.slices.items[0].owner, d));
  CHECK_OK(cubert__memory_id_release_handle(p.f.table, c));
  CHECK_OK(cubert__memory_id_release_handle(p.f.table, d));
  cubert__direct_pool_deinitialize(&pool);
  CHECK_EQ_U64(p.f.storage.live_allocs, 0);
  pfx_done(&p);
}

#if CUBERT_CONFIG_PAGED_POOLS && CUBERT_CONFIG_PERSISTENT_MEMORY /* calls internals that are not built without it */
TEST(memory_pool_exclusive_vacant_slot_aging_and_small_pages) {
  TEST_REQUIRE_FEATURE(CUBERT_FEATURE_PAGED_POOLS | CUBERT_FEATURE_PERSISTENT_MEMORY);
  pool_fx_t p;
  cubert_exclusive_pool_t pool;
  cubert_memory_pool_options_t o = cubert_memory_pool_exclusive(4096, 5);
  cubert_memory_slice_view_t view;
  cubert_memory_id_t a, b, c;
  cubert_error_t err;
  bool found = true;
  pfx_init(&p);
  CHECK_OK(cubert__exclusive_pool_initialize(&pool, &p.env, 0, &o, 32, &err));
  a = owner_new(&p);
  b = owner_new(&p);
  CHECK_OK(cubert__exclusive_pool_alloc(&pool, 100, a, &err)); /* pages sized to the average, 2048 */
  CHECK_OK(cubert__exclusive_pool_alloc(&pool, 100, b, &err));
  CHECK_EQ_U64(pool.pages.items[0].storage.size, 2048);
  CHECK_OK(cubert__memory_id_release_handle(p.f.table, a));
  /* a free page smaller than the request is passed over */
  c = owner_new(&p);
  CHECK_OK(cubert__exclusive_pool_try_reserve(&pool, 3000, c, &found, &err));
  CHECK(!found);
  /* page 0 released: its slot is vacant while page 1 lives */
  cubert__exclusive_pool_cleanup(&pool, 10, true);
  CHECK_EQ_U64(pool.pages.count, 2);
  CHECK_EQ_U64(pool.pages.live, 1);
  CHECK_STATUS(cubert__exclusive_pool_find(&pool, loc_at(0, 0, 0), a, &view, &err), CUBERT_STATUS_NOT_FOUND);
  cubert__exclusive_pool_cleanup(&pool, 3, false); /* an earlier count than the last check: nothing */
  cubert__exclusive_pool_cleanup(&pool, 11, true); /* passes over the vacant slot */
  CHECK_EQ_U64(pool.pages.live, 1);
  /* the vacant slot is reused */
  CHECK_OK(cubert__exclusive_pool_alloc(&pool, 100, c, &err));
  CHECK_EQ_U64(pool.pages.count, 2);
  CHECK(cubert__memory_id_equal(pool.pages.items[0].owner, c));
  /* a free page whose age counter is saturated is released at the next due check */
  CHECK_OK(cubert__memory_id_release_handle(p.f.table, b));
  CHECK(cubert__memory_id_is_free(p.f.table, b));
  (void)cubert__exclusive_pool_try_reserve(&pool, 4000, owner_dead(&p), &found, &err); /* marks page 1 free */
  pool.pages.items[1].aux = UINT32_MAX;
  cubert__exclusive_pool_cleanup(&pool, 20, false);
  CHECK_EQ_U64(pool.pages.live, 1);
  CHECK_OK(cubert__memory_id_release_handle(p.f.table, c));
  cubert__exclusive_pool_deinitialize(&pool);
  CHECK_EQ_U64(p.f.storage.live_allocs, 0);
  pfx_done(&p);
}

TEST(memory_pool_persistent_vacant_slot_and_bucket_failure) {
  TEST_REQUIRE_FEATURE(CUBERT_FEATURE_PAGED_POOLS | CUBERT_FEATURE_PERSISTENT_MEMORY);
  pool_fx_t p;
  cubert_persistent_pool_t pool;
  cubert_memory_id_t a, b, c, d, e;
  cubert_error_t err;
  pfx_init(&p);
  cubert__persistent_pool_initialize(&pool, &p.env, 32, 128 * MIB);
  a = owner_new(&p);
  b = owner_new(&p);
  c = owner_new(&p);
  e = owner_new(&p);
  CHECK_OK(cubert__persistent_pool_alloc(&pool, 64, a, &err));
  CHECK_OK(cubert__persistent_pool_alloc(&pool, 128, b, &err));
  CHECK_OK(cubert__persistent_pool_alloc(&pool, 192, c, &err));
  CHECK_OK(cubert__persistent_pool_alloc(&pool, 256, e, &err)); /* 4 sizes: the index is half full */
  /* a fifth size needs a bigger index: its allocation fails, nothing changes */
  d = owner_new(&p);
  counting_allocator_fail_at(&p.f.counting, 1, 0);
  CHECK_STATUS(cubert__persistent_pool_alloc(&pool, 4096, d, &err), CUBERT_STATUS_RESOURCE_EXHAUSTED);
  CHECK_EQ_U64(pool.slices.live, 4);
  CHECK(!cubert__persistent_pool_has_size(&pool, 4096));
  CHECK_OK(cubert__memory_id_release_handle(p.f.table, b));
  cubert__persistent_pool_cleanup(&pool, true); /* slot 1 vacant */
  CHECK_EQ_U64(pool.slices.count, 4);
  CHECK_EQ_U64(pool.slices.live, 3);
  cubert__persistent_pool_cleanup(&pool, true); /* passes over it */
  CHECK(!cubert__persistent_pool_has_size(&pool, 128));
  /* the vacant slot is reused */
  CHECK_OK(cubert__persistent_pool_alloc(&pool, 128, d, &err));
  CHECK_EQ_U64(pool.slices.count, 4);
  CHECK(cubert__memory_id_equal(pool.slices.items[1].owner, d));
  CHECK_OK(cubert__memory_id_release_handle(p.f.table, a));
  CHECK_OK(cubert__memory_id_release_handle(p.f.table, c));
  CHECK_OK(cubert__memory_id_release_handle(p.f.table, d));
  CHECK_OK(cubert__memory_id_release_handle(p.f.table, e));
  cubert__persistent_pool_deinitialize(&pool);
  CHECK_EQ_U64(p.f.storage.live_allocs, 0);
  pfx_done(&p);
}
#endif /* CUBERT_CONFIG_PAGED_POOLS && CUBERT_CONFIG_PERSISTENT_MEMORY */

/* ---- more limits ---------------------------------------------------------------------------------- */

TEST(memory_pool_direct_reclaim_passes_a_vacant_slot_and_owner_mismatch) {
  pool_fx_t p;
  cubert_direct_pool_t pool;
  cubert_memory_pool_options_t o = cubert_memory_pool_direct(200);
  cubert_memory_slice_view_t view;
  cubert_memory_id_t a, b, c, d, other;
  cubert_error_t err;
  pfx_init(&p);
  cubert__direct_pool_initialize(&pool, &p.env, 0, &o, 32);
  a = owner_new(&p);
  b = owner_new(&p);
  c = owner_new(&p);
  CHECK_OK(cubert__direct_pool_alloc(&pool, 96, a, &err));
  CHECK_OK(cubert__direct_pool_alloc(&pool, 64, b, &err));
  CHECK_OK(cubert__direct_pool_alloc(&pool, 96, c, &err));
  /* the same slot index with another generation is another allocation */
  other = b;
  other.generation += 2;
  CHECK_STATUS(cubert__direct_pool_find(&pool, loc_at(0, 0, 1), other, &view, &err), CUBERT_STATUS_NOT_FOUND);
  CHECK_OK(cubert__direct_pool_find(&pool, loc_at(0, 0, 1), b, &view, &err));
  CHECK_OK(cubert__memory_id_release_handle(p.f.table, a));
  cubert__direct_pool_cleanup(&pool, true); /* slot 0 vacant; 160 bytes reserved */
  CHECK_OK(cubert__memory_id_release_handle(p.f.table, c));
  /* 160 + 128 > 200: the reclaim walks past the vacant slot 0 and live b, releases c */
  d = owner_new(&p);
  CHECK_OK(cubert__direct_pool_alloc(&pool, 128, d, &err));
  CHECK_EQ_U64(pool.slices.bytes_reserved, 64 + 128);
  CHECK(cubert__memory_id_equal(pool.slices.items[0].owner, d)); /* the first vacant slot */
  CHECK_OK(cubert__memory_id_release_handle(p.f.table, b));
  CHECK_OK(cubert__memory_id_release_handle(p.f.table, d));
  cubert__direct_pool_deinitialize(&pool);
  CHECK_EQ_U64(p.f.storage.live_allocs, 0);
  pfx_done(&p);
}

#if CUBERT_CONFIG_PAGED_POOLS && CUBERT_CONFIG_PERSISTENT_MEMORY /* calls internals that are not built without it */
TEST(memory_pool_sliced_request_in_the_largest_bin) {
  TEST_REQUIRE_FEATURE(CUBERT_FEATURE_PAGED_POOLS | CUBERT_FEATURE_PERSISTENT_MEMORY);
  pool_fx_t p;
  cubert_sliced_pool_t pool;
  cubert_memory_pool_options_t o = cubert_memory_pool_sliced(UINT64_MAX - 63, CUBERT_MEMORY_NONE,
                                                             CUBERT_MEMORY_NONE);
  cubert_error_t err;
  bool found = true;
  pfx_init(&p);
  CHECK_OK(cubert__sliced_pool_initialize(&pool, &p.env, 0, &o, 32, 0, &err));
  /* a request of 15/16 of 2^64 bytes: the last size bin, nothing above it to search */
  CHECK_OK(cubert__sliced_pool_try_reserve(&pool, 0xF000000000000000ull, owner_dead(&p), &found, &err));
  CHECK(!found);
  CHECK_EQ_U64(p.f.storage.alloc_calls, 0);
  cubert__sliced_pool_deinitialize(&pool);
  pfx_done(&p);
}

TEST(memory_pool_persistent_slot_array_growth_failure) {
  TEST_REQUIRE_FEATURE(CUBERT_FEATURE_PAGED_POOLS | CUBERT_FEATURE_PERSISTENT_MEMORY);
  pool_fx_t p;
  cubert_persistent_pool_t pool;
  cubert_memory_id_t ids[9];
  cubert_error_t err;
  int i;
  pfx_init(&p);
  cubert__persistent_pool_initialize(&pool, &p.env, 32, 128 * MIB);
  for (i = 0; i < 9; i++) ids[i] = owner_new(&p);
  for (i = 0; i < 8; i++) CHECK_OK(cubert__persistent_pool_alloc(&pool, 64, ids[i], &err));
  counting_allocator_fail_at(&p.f.counting, 1, 0); /* the ninth slot needs a bigger array */
  CHECK_STATUS(cubert__persistent_pool_alloc(&pool, 64, ids[8], &err), CUBERT_STATUS_RESOURCE_EXHAUSTED);
  CHECK_EQ_U64(pool.slices.live, 8);
  CHECK_OK(cubert__persistent_pool_alloc(&pool, 64, ids[8], &err));
  for (i = 0; i < 9; i++) CHECK_OK(cubert__memory_id_release_handle(p.f.table, ids[i]));
  cubert__persistent_pool_deinitialize(&pool);
  CHECK_EQ_U64(p.f.storage.live_allocs, 0);
  pfx_done(&p);
}
#endif /* CUBERT_CONFIG_PAGED_POOLS && CUBERT_CONFIG_PERSISTENT_MEMORY */

TEST(handle_table_growth_failure_while_crowded_keeps_the_id) {
  counting_allocator_t ca;
  cubert_handle_table_t *t = NULL;
  cubert_memory_id_t ids[260];
  uint32_t i;
  CHECK_OK(cubert__handle_table_create(counting_allocator_initialize(&ca), 1024, 7, &t));
  for (i = 0; i < 250; i++) CHECK_OK(cubert__memory_id_acquire(t, &ids[i]));
  for (i = 0; i < 5; i++) CHECK_OK(cubert__memory_id_release_handle(t, ids[i]));
  for (i = 250; i < 256; i++) CHECK_OK(cubert__memory_id_acquire(t, &ids[i])); /* the first chunk's end */
  /* the cursor wraps with the chunk 7/8 full: a second chunk would be added, the allocation
   * fails, the id is served from the first chunk anyway */
  counting_allocator_fail_at(&ca, 1, 0);
  CHECK_OK(cubert__memory_id_acquire(t, &ids[0]));
  CHECK_EQ_U64(ca.failures, 1);
  CHECK_EQ_U64(cubert__handle_table_live(t), 252);
  for (i = 0; i < 256; i++)
    if (i == 0 || i >= 5) CHECK_OK(cubert__memory_id_release_handle(t, ids[i]));
  CHECK_EQ_U64(cubert__handle_table_live(t), 0);
  cubert__handle_table_destroy(t);
  CHECK_EQ_I64(ca.live_blocks, 0);
  counting_allocator_destroy(&ca);
}

TEST(layout_strides_null_shape_and_pitched_height_overflow) {
  cubert_copy_plan_t plan;
  cubert_error_t err;
  uint64_t shape[3], strides[3];
  view2(shape, strides, 2, 4, 4);
  CHECK(!cubert_strides_is_pitched_row_major(2, NULL, strides));
  CHECK(!cubert_strides_is_contiguous_row_major(2, NULL, strides));
  /* rank 3, rows padded to 8: the row count 2^40 * 2^40 overflows */
  shape[0] = (uint64_t)1 << 40;
  shape[1] = (uint64_t)1 << 40;
  shape[2] = 4;
  strides[2] = 1;
  strides[1] = 8;
  strides[0] = (uint64_t)1 << 43;
  CHECK(cubert_strides_is_pitched_row_major(3, shape, strides));
  CHECK_STATUS(cubert_copy_plan(3, shape, strides, 4, &plan, &err), CUBERT_STATUS_OVERFLOW);
}

TEST(handle_disown_of_an_id_nobody_owns_is_refused) {
  counting_allocator_t ca;
  cubert_handle_table_t *t = NULL;
  cubert_memory_id_t id;
  CHECK_OK(cubert__handle_table_create(counting_allocator_initialize(&ca), 64, 7, &t));
  CHECK_OK(cubert__memory_id_acquire(t, &id));
  CHECK_STATUS(cubert__memory_id_disown(t, id), CUBERT_STATUS_INVALID_HANDLE);
  CHECK(cubert__memory_id_is_alive(t, id)); /* unchanged */
  CHECK_OK(cubert__memory_id_release_handle(t, id));
  cubert__handle_table_destroy(t);
  CHECK_EQ_I64(ca.live_blocks, 0);
  counting_allocator_destroy(&ca);
}

#if CUBERT_CONFIG_PAGED_POOLS && CUBERT_CONFIG_PERSISTENT_MEMORY /* calls internals that are not built without it */
TEST(memory_pool_sliced_bounded_scan_of_one_bin) {
  TEST_REQUIRE_FEATURE(CUBERT_FEATURE_PAGED_POOLS | CUBERT_FEATURE_PERSISTENT_MEMORY);
  /* a full page of 32 slices of 1 KiB; every other one released: 16 free slices in one
   * size bin and nothing above. A request a little larger than 1 KiB (same bin) scans
   * at most 8 of them before polling, finds none, and takes a new page. */
  pool_fx_t p;
  cubert_sliced_pool_t pool;
  cubert_memory_pool_options_t o = cubert_memory_pool_sliced(32 * KIB, CUBERT_MEMORY_NONE, CUBERT_MEMORY_NONE);
  cubert_memory_id_t ids[33];
  cubert_error_t err;
  bool found = true;
  int i;
  pfx_init(&p);
  CHECK_OK(cubert__sliced_pool_initialize(&pool, &p.env, 0, &o, 32, 0, &err));
  for (i = 0; i < 32; i++) {
    ids[i] = owner_new(&p);
    if (i == 0) CHECK_OK(cubert__sliced_pool_alloc(&pool, 1024, ids[i], &err));
    else {
      CHECK_OK(cubert__sliced_pool_try_reserve(&pool, 1024, ids[i], &found, &err));
      CHECK(found);
    }
  }
  CHECK_EQ_U64(pool.pages_live, 1);
  for (i = 0; i < 32; i += 2) CHECK_OK(cubert__memory_id_release_handle(p.f.table, ids[i]));
  cubert__sliced_pool_poll_all(&pool); /* the 16 released slices detected, each in the bin */
  ids[32] = owner_new(&p);
  CHECK_OK(cubert__sliced_pool_try_reserve(&pool, 1056, ids[32], &found, &err));
  CHECK(!found);
  CHECK_OK(cubert__sliced_pool_alloc(&pool, 1056, ids[32], &err));
  CHECK_EQ_U64(pool.pages_live, 2);
  for (i = 1; i < 33; i += 2) CHECK_OK(cubert__memory_id_release_handle(p.f.table, ids[i]));
  CHECK_OK(cubert__memory_id_release_handle(p.f.table, ids[32]));
  cubert__sliced_pool_deinitialize(&pool);
  CHECK_EQ_U64(p.f.storage.live_allocs, 0);
  pfx_done(&p);
}

TEST(memory_pool_sliced_65536_pages_is_the_most) {
  TEST_REQUIRE_FEATURE(CUBERT_FEATURE_PAGED_POOLS | CUBERT_FEATURE_PERSISTENT_MEMORY);
  /* storage without memory (ids only): 65536 pages of 64 bytes, then one more refused */
  mm_fixture_t f;
  cubert_memory_env_t env;
  cubert_sliced_pool_t pool;
  cubert_memory_pool_options_t o = cubert_memory_pool_sliced(64, CUBERT_MEMORY_NONE, CUBERT_MEMORY_NONE);
  cubert_memory_location_t unset;
  cubert_memory_id_t id;
  cubert_handle_table_t *table = NULL;
  cubert_error_t err;
  uint32_t i;
  TEST_SKIP_IF_EMBEDDED("65536 pages and a 70,000-entry handle table outgrow the 16 MiB harness heap");
  mmf_base(&f, 128 * MIB, 32);
  f.storage.virtual_memory = true;
  CHECK_OK(cubert__handle_table_create(f.allocator, 70000, 3, &table));
  env.allocator = f.allocator;
  env.storage = f.storage.storage;
  env.table = table;
  env.flush_pending = false;
  memset(&unset, 0, sizeof unset);
  CHECK_OK(cubert__sliced_pool_initialize(&pool, &env, 0, &o, 32, 0, &err));
  for (i = 0; i < CUBERT_MEMORY_PAGE_SLOTS; i++) {
    CHECK_OK(cubert__memory_id_acquire_owned(table, unset, &id));
    CHECK_OK(cubert__sliced_pool_alloc(&pool, 64, id, &err));
    CHECK_OK(cubert__memory_id_release_handle(table, id)); /* the pool still owns it */
  }
  CHECK_EQ_U64(pool.pages_live, CUBERT_MEMORY_PAGE_SLOTS);
  CHECK_OK(cubert__memory_id_acquire_owned(table, unset, &id));
  CHECK_STATUS(cubert__sliced_pool_alloc(&pool, 64, id, &err), CUBERT_STATUS_POOL_CAPACITY_EXCEEDED);
  CHECK(cubert_error_kind(&err) == CUBERT_ERROR_IO_POOL_CAPACITY_EXCEEDED);
  CHECK_EQ_U64(err.field[1], (uint64_t)CUBERT_MEMORY_PAGE_SLOTS * 64);
  CHECK_OK(cubert__memory_id_release_handle(table, id));
  CHECK_OK(cubert__memory_id_disown(table, id));
  cubert__sliced_pool_deinitialize(&pool);
  CHECK_EQ_U64(cubert__handle_table_live(table), 0);
  cubert__handle_table_destroy(table);
  mmf_done(&f);
}
#endif /* CUBERT_CONFIG_PAGED_POOLS && CUBERT_CONFIG_PERSISTENT_MEMORY */
